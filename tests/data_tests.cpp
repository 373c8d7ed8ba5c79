// Data utilities: read_csv (iris and small temp files), TensorDataset, DataLoader (batches,
// seeded per-epoch shuffling), train_test_split and Standardizer, with exact expected values.
#include <doctest/doctest.h>

#include <algorithm>
#include <cmath>
#include <filesystem>
#include <fstream>
#include <string>
#include <unistd.h>
#include <vector>

#include <tapegrad/nn/data.h>
#include <tapegrad/tapegrad.h>

#include "test_helpers.h"

using tg::Shape;
using tg::Tensor;
namespace data = tg::data;
using I = std::vector<int64_t>;

namespace {

const std::string kIris = std::string(TG_DATA_DIR) + "/iris.csv";

// A temporary file with the given text, removed at the end of the test.
struct TempFile {
  std::string path;
  explicit TempFile(const std::string& text) {
    static int counter = 0;
    path = (std::filesystem::temp_directory_path() /
            ("tg_data_" + std::to_string(getpid()) + "_" + std::to_string(counter++) + ".csv"))
               .string();
    std::ofstream(path, std::ios::binary) << text;
  }
  ~TempFile() { std::remove(path.c_str()); }
};

using tg_test::error_of;

std::vector<int64_t> rows_of(const Tensor& t) { return t.to_vector<int64_t>(); }

}  // namespace

TEST_CASE("read_csv reads iris: header skipped, [150, 5] float32") {
  Tensor t = data::read_csv(kIris);
  CHECK(t.dtype() == tg::kFloat32);
  REQUIRE(t.shape() == Shape{150, 5});
  CHECK(t.select(0, 0).to_vector<float>() == std::vector<float>{5.1f, 3.5f, 1.4f, 0.2f, 0.0f});
  CHECK(t.select(0, 149).to_vector<float>() == std::vector<float>{5.9f, 3.0f, 5.1f, 1.8f, 2.0f});
  // Column sums (numpy: 876.5 458.6 563.7 179.9 150).
  Tensor t64 = data::read_csv(kIris, {.dtype = tg::kFloat64});
  std::vector<double> sums = tg::sum(t64, {0}).to_vector<double>();
  std::vector<double> expected{876.5, 458.6, 563.7, 179.9, 150.0};
  for (size_t c = 0; c < 5; ++c) CHECK(sums[c] == doctest::Approx(expected[c]).epsilon(1e-12));
}

TEST_CASE("read_csv options: no header, other delimiters, integer and bool dtypes, spacing") {
  TempFile f("1; -2 ;+3\r\n\n  4;5e1;6  \r\n\n");
  Tensor d = data::read_csv(f.path, {.header = false, .delimiter = ';', .dtype = tg::kFloat64});
  CHECK(d.shape() == Shape{2, 3});
  CHECK(d.to_vector<double>() == std::vector<double>{1, -2, 3, 4, 50, 6});
  TempFile ints("a\tb\n9223372036854775807\t-9223372036854775808\n+7\t0\n");
  Tensor i = data::read_csv(ints.path, {.delimiter = '\t', .dtype = tg::kInt64});
  CHECK(i.dtype() == tg::kInt64);
  CHECK(i.to_vector<int64_t>() == I{INT64_MAX, INT64_MIN, 7, 0});
  TempFile bools("1,0\n0,1\n");
  Tensor b = data::read_csv(bools.path, {.header = false, .dtype = tg::kBool});
  CHECK(b.to_vector<bool>() == std::vector<bool>{true, false, false, true});
  TempFile special("x\nnan\ninf\n-inf\n");
  std::vector<double> s = data::read_csv(special.path, {.dtype = tg::kFloat64}).to_vector<double>();
  CHECK(std::isnan(s[0]));
  CHECK(s[1] == INFINITY);
  CHECK(s[2] == -INFINITY);
  // No data rows: the header still gives the number of columns.
  TempFile header_only("a,b,c\n");
  CHECK(data::read_csv(header_only.path).shape() == Shape{0, 3});
  TempFile nothing("");
  CHECK(data::read_csv(nothing.path).shape() == Shape{0, 0});
}

TEST_CASE("read_csv errors name the file, line and column") {
  TempFile bad("a,b\n1,2\n3,x4\n");
  CHECK(error_of([&] { data::read_csv(bad.path); }) ==
        "[read_csv] " + bad.path + ":3, column 2: 'x4' is not a number");
  TempFile ragged("1,2,3\n4,5,6\n\n7,8\n");
  CHECK(error_of([&] { data::read_csv(ragged.path, {.header = false}); }) ==
        "[read_csv] " + ragged.path + ":4: row has 2 fields, expected 3 as on line 1");
  TempFile empty_field("h\n1,,3\n");
  CHECK(error_of([&] { data::read_csv(empty_field.path); }) ==
        "[read_csv] " + empty_field.path + ":2, column 2: empty field, expected a number");
  TempFile trailing_comma("1,2,\n");
  CHECK(error_of([&] { data::read_csv(trailing_comma.path, {.header = false}); }) ==
        "[read_csv] " + trailing_comma.path + ":1, column 3: empty field, expected a number");
  TempFile frac("1.5\n");
  CHECK(error_of([&] { data::read_csv(frac.path, {.header = false, .dtype = tg::kInt32}); }) ==
        "[read_csv] " + frac.path + ":1, column 1: '1.5' is not an integer (dtype int32)");
  TempFile big("3000000000\n");
  CHECK(error_of([&] { data::read_csv(big.path, {.header = false, .dtype = tg::kInt32}); }) ==
        "[read_csv] " + big.path + ":1, column 1: '3000000000' is out of range for int32");
  CHECK(error_of([&] { data::read_csv(big.path, {.header = false, .dtype = tg::kBool}); }) ==
        "[read_csv] " + big.path + ":1, column 1: '3000000000' is not 0 or 1 (dtype bool)");
  TempFile huge("1e39\n1e999\n");
  CHECK(error_of([&] { data::read_csv(huge.path, {.header = false}); }) ==
        "[read_csv] " + huge.path + ":1, column 1: '1e39' is out of range for float32");
  CHECK(error_of([&] { data::read_csv(huge.path, {.header = false, .dtype = tg::kFloat64}); }) ==
        "[read_csv] " + huge.path + ":2, column 1: '1e999' is out of range for float64");
  CHECK(error_of([] { data::read_csv("/nonexistent/x.csv"); }) ==
        "[read_csv] /nonexistent/x.csv: cannot open (No such file or directory)");
  CHECK(error_of([&] { data::read_csv(bad.path, {.dtype = tg::kFloat16}); }) ==
        "[read_csv] dtype must be bool, int32, int64, float32 or float64, got float16");
}

TEST_CASE("TensorDataset: rows by position and by index tensor") {
  Tensor x = tg::tensor(std::vector<double>{0, 1, 2, 3, 4, 5}, {3, 2});
  Tensor y = tg::tensor(std::vector<int64_t>{10, 11, 12});
  data::TensorDataset ds({x, y});
  CHECK(ds.size() == 3);
  std::vector<Tensor> row = ds.get(1);
  CHECK(row[0].to_vector<double>() == std::vector<double>{2, 3});
  CHECK(row[1].dim() == 0);
  CHECK(row[1].item<int64_t>() == 11);
  std::vector<Tensor> batch = ds.get(tg::tensor(std::vector<int64_t>{2, 0}));
  CHECK(batch[0].shape() == Shape{2, 2});
  CHECK(batch[0].to_vector<double>() == std::vector<double>{4, 5, 0, 1});
  CHECK(batch[1].to_vector<int64_t>() == I{12, 10});

  CHECK(error_of([&] { ds.get(3); }) ==
        "[TensorDataset] row 3 is out of range for a dataset of 3 rows");
  CHECK(error_of([&] { ds.get(tg::tensor({0.0})); }) ==
        "[TensorDataset] index must be a 1-D int32 or int64 tensor, got float64 of shape [1]");
  CHECK(error_of([&] {
          data::TensorDataset({x, tg::zeros({2})});
        }) == "[TensorDataset] tensor 1 has 2 rows (shape [2]), tensor 0 has 3 (shape [3, 2])");
  CHECK(error_of([] { data::TensorDataset({tg::scalar_tensor(1.0)}); }) ==
        "[TensorDataset] tensor 0 is 0-d; every tensor needs a first (row) dimension");
  CHECK(error_of([] { data::TensorDataset({}); }) == "[TensorDataset] needs at least one tensor");
}

TEST_CASE("DataLoader without shuffling: rows in order, a short last batch unless drop_last") {
  Tensor x = tg::arange(10, tg::kInt64);
  data::DataLoader loader(data::TensorDataset({x, x * 2}), 4);
  CHECK(loader.size() == 3);
  std::vector<I> seen;
  for (const std::vector<Tensor>& batch : loader) {
    REQUIRE(batch.size() == 2);
    CHECK(rows_of(batch[1]) == rows_of(batch[0] * 2));
    seen.push_back(rows_of(batch[0]));
  }
  CHECK(seen == std::vector<I>{{0, 1, 2, 3}, {4, 5, 6, 7}, {8, 9}});

  data::DataLoader dropping(data::TensorDataset({x}), 4, {.drop_last = true});
  CHECK(dropping.size() == 2);
  int64_t batches = 0;
  for (const auto& batch : dropping) {
    CHECK(batch[0].numel() == 4);
    ++batches;
  }
  CHECK(batches == 2);
  CHECK(data::DataLoader(data::TensorDataset({tg::empty({0}, tg::kInt64)}), 3).size() == 0);
  CHECK(error_of([&] { data::DataLoader(data::TensorDataset({x}), 0); }) ==
        "[DataLoader] batch_size must be >= 1, got 0");
}

TEST_CASE("DataLoader shuffling: a new order each epoch, the same for the same seed and epoch") {
  Tensor x = tg::arange(10, tg::kInt64);
  data::DataLoader loader(data::TensorDataset({x}), 4, {.shuffle = true, .seed = 0});
  auto epoch_rows = [](data::DataLoader& l) {
    I rows;
    for (const auto& batch : l)
      for (int64_t r : rows_of(batch[0])) rows.push_back(r);
    return rows;
  };
  // The orders of seed 0, computed by a Python copy of the generator (SplitMix64 + Fisher-Yates).
  I e0 = epoch_rows(loader), e1 = epoch_rows(loader);
  CHECK(e0 == I{1, 7, 6, 2, 0, 9, 8, 4, 5, 3});
  CHECK(e1 == I{7, 9, 6, 8, 1, 5, 0, 4, 3, 2});
  CHECK(loader.epoch() == 2);
  CHECK(rows_of(data::permutation(10, 42)) == I{6, 1, 8, 5, 2, 7, 4, 3, 9, 0});

  // Epoch k is reproducible: a fresh loader or set_epoch gives the same rows; other seeds differ.
  data::DataLoader again(data::TensorDataset({x}), 3, {.shuffle = true, .seed = 0});
  again.set_epoch(1);
  CHECK(epoch_rows(again) == e1);
  CHECK(rows_of(again.order(0)) == e0);
  data::DataLoader other(data::TensorDataset({x}), 4, {.shuffle = true, .seed = 1});
  CHECK(epoch_rows(other) != e0);
  // The global generator is neither used nor disturbed.
  tg::manual_seed(5);
  double before = tg::rand({1}, tg::kFloat64).item<double>();
  tg::manual_seed(5);
  epoch_rows(loader);
  CHECK(tg::rand({1}, tg::kFloat64).item<double>() == before);
}

TEST_CASE("train_test_split: ceil(fraction * n) test rows, disjoint, seeded") {
  auto [train, test] = data::train_test_split(10, 0.3, 7);
  CHECK(train.dtype() == tg::kInt64);
  CHECK(rows_of(test) == I{2, 0, 5});
  CHECK(rows_of(train) == I{7, 3, 9, 8, 1, 4, 6});

  auto iris = data::train_test_split(150, 0.2, 0);
  CHECK(iris.test.numel() == 30);
  CHECK(iris.train.numel() == 120);
  I all = rows_of(tg::cat({iris.train, iris.test}, 0));
  std::sort(all.begin(), all.end());
  CHECK(all == rows_of(tg::arange(150, tg::kInt64)));
  CHECK(rows_of(data::train_test_split(150, 0.2, 0).test) == rows_of(iris.test));
  CHECK(rows_of(data::train_test_split(150, 0.2, 1).test) != rows_of(iris.test));

  CHECK(data::train_test_split(10, 0.25).test.numel() == 3);  // ceil(2.5)
  CHECK(data::train_test_split(10, 0.7).test.numel() == 7);   // 0.7 * 10 is 7.000000000000001
  CHECK(data::train_test_split(10, 0.0).train.numel() == 10);
  CHECK(data::train_test_split(10, 1.0).test.numel() == 10);
  CHECK(error_of([] { data::train_test_split(10, 1.5); }) ==
        "[train_test_split] test_fraction must be in [0, 1], got 1.5");
  CHECK(error_of([] {
          data::train_test_split(10, NAN);
        }).starts_with("[train_test_split] test_fraction must be in [0, 1]"));
}

TEST_CASE("Standardizer: population mean and std, constant columns centered only") {
  Tensor x = tg::tensor({{1.0, 10.0, 5.0}, {3.0, 10.0, 5.0}, {5.0, 10.0, 8.0}});
  data::Standardizer s;
  CHECK_FALSE(s.fitted());
  Tensor z = s.fit_transform(x);
  CHECK(s.mean().to_vector<double>() == std::vector<double>{3, 10, 6});
  std::vector<double> scale = s.scale().to_vector<double>();
  CHECK(scale[0] == doctest::Approx(1.632993161855452));  // sqrt(8/3)
  CHECK(scale[1] == 1.0);
  CHECK(scale[2] == doctest::Approx(1.4142135623730951));
  // numpy: (x - x.mean(0)) / x.std(0) with the zero std replaced by 1.
  std::vector<double> expected{
      -1.224744871391589, 0, -0.7071067811865475, 0, 0, -0.7071067811865475,
      1.224744871391589,  0, 1.414213562373095};
  std::vector<double> got = z.to_vector<double>();
  for (size_t i = 0; i < got.size(); ++i) CHECK(got[i] == doctest::Approx(expected[i]));
  std::vector<double> row = s.transform(tg::tensor({7.0, 11.0, 6.0})).to_vector<double>();
  CHECK(row[0] == doctest::Approx(2.449489742783178));
  CHECK(row[1] == 1.0);
  CHECK(row[2] == 0.0);
  std::vector<double> back = s.inverse_transform(z).to_vector<double>();
  std::vector<double> orig = x.to_vector<double>();
  for (size_t i = 0; i < back.size(); ++i) CHECK(back[i] == doctest::Approx(orig[i]));

  CHECK(error_of([] {
          data::Standardizer().transform(tg::ones({2, 3}));
        }) == "[Standardizer::transform] call fit first");
  CHECK(error_of([&] {
          s.transform(tg::ones({2, 4}));
        }) ==
        "[Standardizer::transform] expected a tensor whose last dimension has 3 columns (as the "
        "fit), got shape [2, 4]");
  CHECK(error_of([] { data::Standardizer().fit(tg::ones({3}, tg::kFloat32)); }) ==
        "[Standardizer] fit needs a 2-D float32 or float64 tensor [rows, columns], got float32 of "
        "shape [3]");
  CHECK(error_of([] {
          data::Standardizer().fit(tg::ones({3, 2}, tg::kInt64));
        }).starts_with("[Standardizer] fit needs a 2-D float32 or float64 tensor"));
}

TEST_CASE("iris end to end: split, standardize on train rows, batch with shuffling") {
  Tensor table = data::read_csv(kIris);
  Tensor x = table.slice(1, 0, 4), y = table.select(1, 4).to(tg::kInt64);
  auto [train, test] = data::train_test_split(x.size(0), 0.2, 0);
  data::Standardizer scaler;
  scaler.fit(x.index_select(0, train));
  Tensor xt = scaler.transform(x.index_select(0, train));
  std::vector<double> means = tg::mean(xt, {0}).to_vector<double>();
  std::vector<double> vars = tg::mean(xt * xt, {0}).to_vector<double>();
  for (int c = 0; c < 4; ++c) {
    CHECK(std::abs(means[c]) < 1e-5);
    CHECK(vars[c] == doctest::Approx(1.0).epsilon(1e-5));
  }
  data::DataLoader loader(data::TensorDataset({xt, y.index_select(0, train)}), 16,
                          {.shuffle = true, .seed = 3});
  CHECK(loader.size() == 8);  // 120 rows: 7 batches of 16 and one of 8
  int64_t rows = 0;
  I labels;
  for (const auto& batch : loader) {
    CHECK(batch[0].shape()[1] == 4);
    CHECK(batch[0].size(0) == batch[1].size(0));
    rows += batch[0].size(0);
    for (int64_t v : rows_of(batch[1])) labels.push_back(v);
  }
  CHECK(rows == 120);
  I expected = rows_of(y.index_select(0, train));
  std::sort(labels.begin(), labels.end());
  std::sort(expected.begin(), expected.end());
  CHECK(labels == expected);
}
