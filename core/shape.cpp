#include <tapegrad/core/shape.h>

#include <algorithm>
#include <sstream>
#include <vector>

#include <tapegrad/core/error.h>

namespace tg {

std::string Shape::str() const {
  std::ostringstream os;
  os << *this;
  return os.str();
}

void Shape::numel_overflow() const {
  fail<ValueError>("numel", "shape ", *this, " has more elements than int64 can count");
}

std::ostream& operator<<(std::ostream& os, const Shape& s) {
  os << "[";
  for (size_t i = 0; i < s.size(); ++i) os << (i ? ", " : "") << s[i];
  return os << "]";
}

std::ostream& operator<<(std::ostream& os, IntArrayRef s) { return os << Shape(s); }

Shape contiguous_strides(const Shape& shape) {
  Shape strides(shape.size());
  int64_t stride = 1;
  for (size_t i = shape.size(); i-- > 0;) {
    strides[i] = stride;
    // Shapes of tensors were checked when made; this guards a raw shape of untrusted sizes.
    if (i > 0 && __builtin_mul_overflow(stride, std::max<int64_t>(shape[i], 1), &stride))
      fail<ValueError>("contiguous_strides", "the stride of shape ", shape, " overflows int64");
  }
  return strides;
}

Shape with_trailing_ones(const Shape& shape, size_t count) {
  std::vector<int64_t> dims = shape.vec();
  std::fill(dims.end() - static_cast<std::ptrdiff_t>(count), dims.end(), 1);
  return Shape(dims);
}

Shape broadcast_shapes(const char* op, const Shape& a, const Shape& b) {
  if (a == b) return a;
  size_t n = std::max(a.size(), b.size());
  Shape out(n);
  for (size_t i = 0; i < n; ++i) {
    int64_t da = i < n - a.size() ? 1 : a[i - (n - a.size())];
    int64_t db = i < n - b.size() ? 1 : b[i - (n - b.size())];
    TG_CHECK(da == db || da == 1 || db == 1, ValueError, op, "shapes ", a, " and ", b,
             " cannot broadcast (dim ", i, ": ", da, " vs ", db, ")");
    out[i] = da == 1 ? db : da;
  }
  return out;
}

int64_t wrap_dim(const char* op, int64_t dim, int64_t ndim) {
  int64_t n = std::max<int64_t>(ndim, 1);  // a 0-d tensor accepts dim 0 and -1
  TG_CHECK(dim >= -n && dim < n, IndexError, op, "dim ", dim, " is out of range for a ", ndim,
           "-d tensor (expected a dim in [", -n, ", ", n - 1, "])");
  return dim < 0 ? dim + n : dim;
}

}  // namespace tg
