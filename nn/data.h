#pragma once
// Small data utilities: numeric CSV files, a dataset of tensors, a batching loader with seeded
// shuffling, a train/test split and a per-column standardizer.
//
//   Tensor table = tg::data::read_csv("data/iris.csv");         // [150, 5] float32
//   Tensor x = table.slice(1, 0, 4), y = table.select(1, 4).to(tg::kInt64);
//   auto [train, test] = tg::data::train_test_split(x.size(0), 0.2, /*seed=*/0);
//   tg::data::Standardizer scaler;
//   scaler.fit(x.index_select(0, train));
//   tg::data::TensorDataset ds({scaler.transform(x.index_select(0, train)),
//                               y.index_select(0, train)});
//   tg::data::DataLoader loader(ds, 16, {.shuffle = true, .seed = 1});
//   for (int epoch = 0; epoch < 10; ++epoch)
//     for (const std::vector<tg::Tensor>& batch : loader) { /* batch[0]: [16, 4], [1]: [16] */ }
#include <cstdint>
#include <iterator>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include <tapegrad/generated/tensor.h>

namespace tg::data {

struct CsvOptions {
  bool header = true;  // the first line is a header and is skipped
  char delimiter = ',';
  DType dtype = kFloat32;  // bool, int32, int64, float32 or float64
};

// Reads a table of numbers into a [rows, columns] tensor. Blank lines are skipped; fields may have
// spaces around them; no quoting. A field that is not a number of the dtype, or a row with a
// different number of fields than the first, is a ValueError naming the file, line and column.
Tensor read_csv(const std::string& path, const CsvOptions& options = {});
// The same from CSV text in memory; errors name the place as "<string>:line".
Tensor read_csv_from_string(std::string_view text, const CsvOptions& options = {});

// A list of tensors that share their first dimension: row i of the dataset is row i of each.
class TensorDataset {
 public:
  explicit TensorDataset(std::vector<Tensor> tensors);
  int64_t size() const { return size_; }
  const std::vector<Tensor>& tensors() const { return tensors_; }
  // Row i (0 <= i < size()) of every tensor, as views.
  std::vector<Tensor> get(int64_t i) const;
  // The rows at index (1-D int32/int64) of every tensor, as fresh tensors (index_select).
  std::vector<Tensor> get(const Tensor& index) const;

 private:
  std::vector<Tensor> tensors_;
  int64_t size_ = 0;
};

// The rows 0..n-1 in a random order that depends only on (seed, stream): int64, 1-D.
Tensor permutation(int64_t n, uint64_t seed, uint64_t stream = 0);

struct DataLoaderOptions {
  bool shuffle = false;  // a new order every epoch: epoch k uses permutation(n, seed, k)
  uint64_t seed = 0;
  bool drop_last = false;  // drop the last batch when it is smaller than batch_size
};

// Batches of a dataset. Each range-for loop over the loader (each begin()) is one epoch:
//   for (const std::vector<Tensor>& batch : loader) { ... }
// Epoch k of a given seed always visits the rows in the same order, whatever ran before.
class DataLoader {
 public:
  DataLoader(TensorDataset dataset, int64_t batch_size, DataLoaderOptions options = {});

  class Iterator {
   public:
    using iterator_category = std::input_iterator_tag;
    using value_type = std::vector<Tensor>;
    using difference_type = std::ptrdiff_t;
    using pointer = void;
    using reference = std::vector<Tensor>;

    Iterator(const DataLoader* loader, Tensor order, int64_t batch)
        : loader_(loader), order_(std::move(order)), batch_(batch) {}
    std::vector<Tensor> operator*() const;  // the batch's rows of every tensor
    Iterator& operator++() {
      ++batch_;
      return *this;
    }
    bool operator==(const Iterator& o) const { return batch_ == o.batch_; }

   private:
    const DataLoader* loader_;
    Tensor order_;  // this epoch's row order
    int64_t batch_;
  };

  Iterator begin();  // starts epoch epoch(), then counts it
  Iterator end() const { return Iterator(this, Tensor(), size()); }

  int64_t size() const;  // batches per epoch
  int64_t batch_size() const { return batch_size_; }
  const TensorDataset& dataset() const { return dataset_; }
  int64_t epoch() const { return epoch_; }  // the epoch the next begin() starts
  void set_epoch(int64_t epoch);
  Tensor order(int64_t epoch) const;  // the row order of an epoch (int64, 1-D)

 private:
  TensorDataset dataset_;
  int64_t batch_size_;
  DataLoaderOptions options_;
  int64_t epoch_ = 0;
};

struct Split {
  Tensor train, test;  // int64 row indices, together a permutation of 0..n-1
};
// Shuffles 0..n-1 with seed and puts the first ceil(test_fraction * n) rows in test (as
// scikit-learn's train_test_split does), the rest in train.
Split train_test_split(int64_t n, double test_fraction, uint64_t seed = 0);

// Per-column standardization: (x - mean) / std, with mean and std (population, ddof = 0) of the
// rows given to fit. Constant columns are centered but not scaled. fit takes a [rows, columns]
// floating tensor; transform takes any tensor whose last dimension has that many columns.
class Standardizer {
 public:
  Standardizer& fit(const Tensor& x);
  Tensor transform(const Tensor& x) const;
  Tensor fit_transform(const Tensor& x) { return fit(x).transform(x); }
  Tensor inverse_transform(const Tensor& x) const;
  bool fitted() const { return mean_.defined(); }
  const Tensor& mean() const { return mean_; }
  const Tensor& scale() const { return scale_; }  // std, or 1 for constant columns

 private:
  void check_columns(const char* op, const Tensor& x) const;
  Tensor mean_, scale_;
};

}  // namespace tg::data
