#pragma once
// Shape: a small vector of int64 sizes (or strides), stored inline up to kInline dims so that
// creating a tensor does not allocate for its metadata.
#include <algorithm>
#include <cstdint>
#include <initializer_list>
#include <ostream>
#include <string>
#include <vector>

namespace tg {

class Shape {
 public:
  static constexpr size_t kInline = 6;
  Shape() = default;
  Shape(std::initializer_list<int64_t> dims) { assign(dims.begin(), dims.end()); }
  Shape(const std::vector<int64_t>& dims) { assign(dims.begin(), dims.end()); }  // NOLINT
  explicit Shape(size_t n, int64_t fill = 0) { resize(n, fill); }
  template <typename It> Shape(It b, It e) { assign(b, e); }
  Shape(const Shape& o) { assign(o.begin(), o.end()); }
  Shape& operator=(const Shape& o) {
    if (this != &o) assign(o.begin(), o.end());
    return *this;
  }
  // A move takes the heap buffer and copies the inline array whole: a fixed-size copy is a few
  // register moves, cheaper than a loop over size_ (every op moves a few shapes).
  Shape(Shape&& o) noexcept : size_(o.size_), heap_(std::move(o.heap_)) {
    std::copy(o.inline_, o.inline_ + kInline, inline_);
    o.size_ = 0;
  }
  Shape& operator=(Shape&& o) noexcept {
    if (this == &o) return *this;
    size_ = o.size_;
    heap_ = std::move(o.heap_);
    std::copy(o.inline_, o.inline_ + kInline, inline_);
    o.size_ = 0;
    return *this;
  }

  size_t size() const { return size_; }
  bool empty() const { return size_ == 0; }
  int64_t* data() { return heap_.empty() ? inline_ : heap_.data(); }
  const int64_t* data() const { return heap_.empty() ? inline_ : heap_.data(); }
  int64_t& operator[](size_t i) { return data()[i]; }
  int64_t operator[](size_t i) const { return data()[i]; }
  int64_t* begin() { return data(); }
  int64_t* end() { return data() + size_; }
  const int64_t* begin() const { return data(); }
  const int64_t* end() const { return data() + size_; }
  int64_t back() const { return data()[size_ - 1]; }

  void resize(size_t n, int64_t fill = 0) {
    if (n <= kInline && heap_.empty()) {
      for (size_t i = size_; i < n; ++i) inline_[i] = fill;
    } else {
      if (heap_.empty()) heap_.assign(inline_, inline_ + size_);
      heap_.resize(n, fill);
    }
    size_ = n;
  }
  void push_back(int64_t v) {
    resize(size_ + 1);
    data()[size_ - 1] = v;
  }
  void insert(size_t pos, int64_t v) {
    resize(size_ + 1);
    int64_t* d = data();
    for (size_t i = size_ - 1; i > pos; --i) d[i] = d[i - 1];
    d[pos] = v;
  }
  void erase(size_t pos) {
    int64_t* d = data();
    for (size_t i = pos; i + 1 < size_; ++i) d[i] = d[i + 1];
    resize(size_ - 1);
  }
  // Product of the sizes. Tensors are checked when made (core/checked.h), so this only overflows
  // for a raw Shape of untrusted sizes: then it throws ValueError instead of wrapping.
  int64_t numel() const {
    int64_t n = 1;
    bool overflow = false;
    for (int64_t d : *this) {
      if (d == 0) return 0;
      overflow |= __builtin_mul_overflow(n, d, &n);
    }
    if (overflow) [[unlikely]]
      numel_overflow();
    return n;
  }
  std::vector<int64_t> vec() const { return {begin(), end()}; }
  // A plain loop: std::equal becomes a memcmp call, slower for a few dims (every op compares).
  bool operator==(const Shape& o) const {
    if (size_ != o.size_) return false;
    const int64_t *a = data(), *b = o.data();
    for (size_t i = 0; i < size_; ++i)
      if (a[i] != b[i]) return false;
    return true;
  }
  std::string str() const;  // "[2, 3]"

 private:
  [[noreturn]] void numel_overflow() const;
  template <typename It> void assign(It b, It e) {
    size_t n = static_cast<size_t>(std::distance(b, e));
    heap_.clear();
    if (n > kInline) {
      heap_.assign(b, e);
    } else {
      for (size_t i = 0; i < n; ++i, ++b) inline_[i] = *b;  // std::copy would call memmove
    }
    size_ = n;
  }
  int64_t inline_[kInline] = {};
  size_t size_ = 0;
  std::vector<int64_t> heap_;
};

std::ostream& operator<<(std::ostream& os, const Shape& s);

// A non-owning view of int64 values: what ops take for sizes and dims. Binds to a Shape, a
// std::vector<int64_t> or a braced list ({2, 3}) that lives until the end of the call.
class IntArrayRef {
 public:
  IntArrayRef() = default;
#if defined(__GNUC__) && !defined(__clang__)  // a GCC-only warning name
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Winit-list-lifetime"  // the list outlives the call: by design
#endif
  IntArrayRef(std::initializer_list<int64_t> l) : data_(l.begin()), size_(l.size()) {}
#if defined(__GNUC__) && !defined(__clang__)
#pragma GCC diagnostic pop
#endif
  IntArrayRef(const std::vector<int64_t>& v) : data_(v.data()), size_(v.size()) {}  // NOLINT
  IntArrayRef(const Shape& s) : data_(s.data()), size_(s.size()) {}                 // NOLINT
  IntArrayRef(const int64_t* d, size_t n) : data_(d), size_(n) {}
  size_t size() const { return size_; }
  bool empty() const { return size_ == 0; }
  const int64_t* begin() const { return data_; }
  const int64_t* end() const { return data_ + size_; }
  int64_t operator[](size_t i) const { return data_[i]; }
  std::vector<int64_t> vec() const { return {begin(), end()}; }
  operator Shape() const { return Shape(begin(), end()); }  // NOLINT

 private:
  const int64_t* data_ = nullptr;
  size_t size_ = 0;
};
std::ostream& operator<<(std::ostream& os, IntArrayRef s);

// Contiguous (row-major) strides for a shape.
Shape contiguous_strides(const Shape& shape);
// NumPy broadcasting of two shapes; throws ValueError naming `op` when they do not broadcast.
Shape broadcast_shapes(const char* op, const Shape& a, const Shape& b);
// shape with its last `count` dims set to 1: what a keepdim reduction over them leaves
// (layer_norm's saved statistics). count <= shape.size().
Shape with_trailing_ones(const Shape& shape, size_t count);
// Wraps a possibly negative dim into [0, ndim); IndexError naming `op` when out of range.
int64_t wrap_dim(const char* op, int64_t dim, int64_t ndim);

}  // namespace tg
