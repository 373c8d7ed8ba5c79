// Data utilities (see data.h): CSV reading, TensorDataset, DataLoader, train_test_split,
// Standardizer.
#include <tapegrad/nn/data.h>

#include <algorithm>
#include <cerrno>
#include <charconv>
#include <cmath>
#include <cstring>
#include <fstream>
#include <limits>
#include <sstream>
#include <utility>

#include <tapegrad/core/error.h>
#include <tapegrad/core/grad_mode.h>
#include <tapegrad/generated/functions.h>
#include <tapegrad/ops/factories.h>
#include <tapegrad/ops/operators.h>

namespace tg::data {
namespace {

// ---- CSV ---------------------------------------------------------------------------------------

// The field without spaces or tabs around it (those that are not the delimiter).
std::string_view trim(std::string_view s, char delimiter) {
  auto blank = [&](char c) { return (c == ' ' || c == '\t') && c != delimiter; };
  while (!s.empty() && blank(s.front())) s.remove_prefix(1);
  while (!s.empty() && blank(s.back())) s.remove_suffix(1);
  return s;
}

bool is_blank(std::string_view line) {
  return std::all_of(line.begin(), line.end(), [](char c) { return c == ' ' || c == '\t'; });
}

std::vector<std::string_view> split(std::string_view line, char delimiter) {
  std::vector<std::string_view> fields;
  size_t start = 0;
  while (true) {
    size_t stop = line.find(delimiter, start);
    fields.push_back(trim(line.substr(start, stop - start), delimiter));
    if (stop == std::string_view::npos) return fields;
    start = stop + 1;
  }
}

// Parses the whole field as T (from_chars rejects a leading '+', so it is skipped here).
template <typename T> bool parse_number(std::string_view field, T& out, bool& out_of_range) {
  if (field.size() > 1 && field[0] == '+' && field[1] != '-') field.remove_prefix(1);
  auto [end, ec] = std::from_chars(field.data(), field.data() + field.size(), out);
  out_of_range = ec == std::errc::result_out_of_range;
  return ec == std::errc() && end == field.data() + field.size();
}

// Where a CSV error is: "iris.csv:3, column 2".
struct CsvPlace {
  const std::string& path;
  int64_t line;
  size_t column;
};
std::ostream& operator<<(std::ostream& os, const CsvPlace& p) {
  return os << p.path << ":" << p.line << ", column " << p.column;
}

// A field for an error message: at most 40 bytes of it (a line may be megabytes long).
std::string_view clip(std::string_view field) { return field.substr(0, 40); }
const char* clipped(std::string_view field) { return field.size() > 40 ? "..." : ""; }

// One field converted for dtype into a double (floating dtypes) or an int64 (the others).
void parse_field(std::string_view field, DType dtype, const CsvPlace& place,
                 std::vector<double>& floats, std::vector<int64_t>& ints) {
  bool out_of_range = false;
  if (field.empty()) fail<ValueError>("read_csv", place, ": empty field, expected a number");
  if (is_floating(dtype)) {
    double v = 0;
    if (!parse_number(field, v, out_of_range) || out_of_range)
      fail<ValueError>("read_csv", place, ": '", clip(field), clipped(field), "' is ",
                       out_of_range ? "out of range for float64" : "not a number");
    if (dtype == kFloat32 && std::isfinite(v) && std::abs(v) > std::numeric_limits<float>::max())
      fail<ValueError>("read_csv", place, ": '", clip(field), clipped(field),
                       "' is out of range for float32");
    floats.push_back(v);
    return;
  }
  int64_t v = 0;
  if (!parse_number(field, v, out_of_range))
    fail<ValueError>("read_csv", place, ": '", clip(field), clipped(field), "' is ",
                     out_of_range ? "out of range for int64" : "not an integer", " (dtype ",
                     dtype_name(dtype), ")");
  if (dtype == kInt32 && (v < INT32_MIN || v > INT32_MAX))
    fail<ValueError>("read_csv", place, ": '", clip(field), clipped(field),
                     "' is out of range for int32");
  if (dtype == kBool && v != 0 && v != 1)
    fail<ValueError>("read_csv", place, ": '", clip(field), clipped(field),
                     "' is not 0 or 1 (dtype bool)");
  ints.push_back(v);
}

// ---- shuffling ---------------------------------------------------------------------------------

// SplitMix64: a small, fast generator whose output is the same on every platform (std::shuffle's
// is not), so a seed means the same order everywhere.
struct SplitMix64 {
  uint64_t state;
  uint64_t next() {
    uint64_t z = (state += 0x9E3779B97F4A7C15ull);
    z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
    z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
    return z ^ (z >> 31);
  }
  // Uniform in [0, bound), without modulo bias (rejects the few values that would skew it).
  uint64_t below(uint64_t bound) {
    uint64_t threshold = (0 - bound) % bound;  // 2^64 mod bound
    while (true) {
      uint64_t r = next();
      if (r >= threshold) return r % bound;
    }
  }
};

}  // namespace

namespace {

Tensor read_csv_stream(std::istream& in, const std::string& path, const CsvOptions& options) {
  DType dtype = options.dtype;
  TG_CHECK(dtype == kBool || dtype == kInt32 || dtype == kInt64 || dtype == kFloat32 ||
               dtype == kFloat64,
           TypeError, "read_csv", "dtype must be bool, int32, int64, float32 or float64, got ",
           dtype_name(dtype));
  TG_CHECK(options.delimiter != '\n' && options.delimiter != '\r', ValueError, "read_csv",
           "the delimiter cannot be a line break");
  std::vector<double> floats;
  std::vector<int64_t> ints;
  int64_t columns = -1, rows = 0, first_row_line = 0, line_no = 0;
  std::string line;
  while (std::getline(in, line)) {
    ++line_no;
    if (!line.empty() && line.back() == '\r') line.pop_back();  // Windows line ends
    if (line_no == 1 && options.header) {
      if (!is_blank(line)) columns = static_cast<int64_t>(split(line, options.delimiter).size());
      continue;
    }
    if (is_blank(line)) continue;
    std::vector<std::string_view> fields = split(line, options.delimiter);
    int64_t n = static_cast<int64_t>(fields.size());
    if (rows == 0) {
      columns = n;
      first_row_line = line_no;
    } else if (n != columns) {
      fail<ValueError>("read_csv", path, ":", line_no, ": row has ", n, " fields, expected ",
                       columns, " as on line ", first_row_line);
    }
    for (size_t c = 0; c < fields.size(); ++c)
      parse_field(fields[c], dtype, CsvPlace{path, line_no, c + 1}, floats, ints);
    ++rows;
  }
  if (in.bad()) fail<Error>("read_csv", path, ": read failed after line ", line_no);
  if (rows == 0) return empty({0, std::max<int64_t>(columns, 0)}, dtype);
  Tensor table =
      is_floating(dtype) ? tensor(floats, {rows, columns}) : tensor(ints, {rows, columns});
  return table.dtype() == dtype ? table : table.to(dtype);
}

}  // namespace

Tensor read_csv(const std::string& path, const CsvOptions& options) {
  std::ifstream in(path);
  if (!in) fail<Error>("read_csv", path, ": cannot open (", std::strerror(errno), ")");
  return read_csv_stream(in, path, options);
}

Tensor read_csv_from_string(std::string_view text, const CsvOptions& options) {
  std::istringstream in{std::string(text)};
  return read_csv_stream(in, "<string>", options);
}

// ---- TensorDataset -----------------------------------------------------------------------------

TensorDataset::TensorDataset(std::vector<Tensor> tensors) : tensors_(std::move(tensors)) {
  TG_CHECK(!tensors_.empty(), ValueError, "TensorDataset", "needs at least one tensor");
  for (size_t i = 0; i < tensors_.size(); ++i) {
    const Tensor& t = tensors_[i];
    TG_CHECK(t.defined(), ValueError, "TensorDataset", "tensor ", i, " is undefined");
    TG_CHECK(t.dim() >= 1, ValueError, "TensorDataset", "tensor ", i,
             " is 0-d; every tensor needs a first (row) dimension");
    TG_CHECK(t.size(0) == tensors_[0].size(0), ValueError, "TensorDataset", "tensor ", i, " has ",
             t.size(0), " rows (shape ", t.shape(), "), tensor 0 has ", tensors_[0].size(0),
             " (shape ", tensors_[0].shape(), ")");
  }
  size_ = tensors_[0].size(0);
}

std::vector<Tensor> TensorDataset::get(int64_t i) const {
  TG_CHECK(i >= 0 && i < size_, IndexError, "TensorDataset", "row ", i,
           " is out of range for a dataset of ", size_, " rows");
  std::vector<Tensor> out;
  for (const Tensor& t : tensors_) out.push_back(t.select(0, i));
  return out;
}

std::vector<Tensor> TensorDataset::get(const Tensor& index) const {
  TG_CHECK(index.defined() && index.dim() == 1 && is_integral(index.dtype()), TypeError,
           "TensorDataset", "index must be a 1-D int32 or int64 tensor, got ",
           index.defined() ? dtype_name(index.dtype()) : "undefined", " of shape ",
           index.defined() ? index.shape() : Shape{});
  std::vector<Tensor> out;
  for (const Tensor& t : tensors_) out.push_back(index_select(t, 0, index));
  return out;
}

// ---- permutation, DataLoader, train_test_split ------------------------------------------------

Tensor permutation(int64_t n, uint64_t seed, uint64_t stream) {
  TG_CHECK(n >= 0, ValueError, "permutation", "n must be >= 0, got ", n);
  // Seed and stream are mixed so that nearby (seed, stream) pairs give unrelated orders.
  SplitMix64 rng{SplitMix64{seed}.next() ^ stream};
  rng.state = rng.next();
  Tensor order = arange(n, kInt64);
  int64_t* p = order.data<int64_t>();
  for (int64_t i = n - 1; i > 0; --i)  // Fisher-Yates
    std::swap(p[i], p[rng.below(static_cast<uint64_t>(i) + 1)]);
  return order;
}

DataLoader::DataLoader(TensorDataset dataset, int64_t batch_size, DataLoaderOptions options)
    : dataset_(std::move(dataset)), batch_size_(batch_size), options_(options) {
  TG_CHECK(batch_size >= 1, ValueError, "DataLoader", "batch_size must be >= 1, got ", batch_size);
}

int64_t DataLoader::size() const {
  int64_t n = dataset_.size();
  return options_.drop_last ? n / batch_size_ : (n + batch_size_ - 1) / batch_size_;
}

void DataLoader::set_epoch(int64_t epoch) {
  TG_CHECK(epoch >= 0, ValueError, "DataLoader", "epoch must be >= 0, got ", epoch);
  epoch_ = epoch;
}

Tensor DataLoader::order(int64_t epoch) const {
  TG_CHECK(epoch >= 0, ValueError, "DataLoader", "epoch must be >= 0, got ", epoch);
  if (!options_.shuffle) return arange(dataset_.size(), kInt64);
  return permutation(dataset_.size(), options_.seed, static_cast<uint64_t>(epoch));
}

DataLoader::Iterator DataLoader::begin() { return Iterator(this, order(epoch_++), 0); }

std::vector<Tensor> DataLoader::Iterator::operator*() const {
  int64_t start = batch_ * loader_->batch_size_;
  int64_t stop = std::min(start + loader_->batch_size_, loader_->dataset_.size());
  return loader_->dataset_.get(order_.slice(0, start, stop));
}

Split train_test_split(int64_t n, double test_fraction, uint64_t seed) {
  TG_CHECK(n >= 0, ValueError, "train_test_split", "n must be >= 0, got ", n);
  TG_CHECK(test_fraction >= 0.0 && test_fraction <= 1.0, ValueError, "train_test_split",
           "test_fraction must be in [0, 1], got ", test_fraction);
  // ceil, forgiving the rounding error of the product (0.7 * 10 is 7.000000000000001).
  auto n_test = static_cast<int64_t>(std::ceil(test_fraction * static_cast<double>(n) - 1e-9));
  n_test = std::clamp<int64_t>(n_test, 0, n);
  Tensor order = permutation(n, seed);
  return {order.slice(0, n_test, n).contiguous(), order.slice(0, 0, n_test).contiguous()};
}

// ---- Standardizer ------------------------------------------------------------------------------

Standardizer& Standardizer::fit(const Tensor& x) {
  TG_CHECK(x.defined() && x.dim() == 2 && is_floating(x.dtype()), TypeError, "Standardizer",
           "fit needs a 2-D float32 or float64 tensor [rows, columns], got ",
           x.defined() ? dtype_name(x.dtype()) : "undefined", " of shape ",
           x.defined() ? x.shape() : Shape{});
  TG_CHECK(x.size(0) >= 1, ValueError, "Standardizer", "fit needs at least one row, got shape ",
           x.shape());
  NoGradGuard no_grad;
  Tensor rows = x.detach();
  Tensor mean = tg::mean(rows, {0});
  Tensor centered = rows - mean;
  Tensor stdev = sqrt(tg::mean(centered * centered, {0}));
  // A column is constant when its max equals its min; its std would be 0 or rounding noise.
  Tensor constant = amax(rows, {0}) == amin(rows, {0});
  mean_ = mean;
  scale_ = where(constant, ones_like(stdev), stdev);
  return *this;
}

void Standardizer::check_columns(const char* op, const Tensor& x) const {
  TG_CHECK(fitted(), ValueError, op, "call fit first");
  TG_CHECK(x.defined() && x.dim() >= 1 && x.size(-1) == mean_.size(0), ValueError, op,
           "expected a tensor whose last dimension has ", mean_.size(0),
           " columns (as the fit), got shape ", x.defined() ? x.shape() : Shape{});
}

Tensor Standardizer::transform(const Tensor& x) const {
  check_columns("Standardizer::transform", x);
  return (x - mean_) / scale_;
}

Tensor Standardizer::inverse_transform(const Tensor& x) const {
  check_columns("Standardizer::inverse_transform", x);
  return x * scale_ + mean_;
}

}  // namespace tg::data
