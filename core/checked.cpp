#include <tapegrad/core/checked.h>

#include <tapegrad/core/error.h>

namespace tg {

namespace checked {

namespace {
[[noreturn]] void too_large(const char* op, IntArrayRef sizes, const char* what) {
  fail<ValueError>(op, "shape ", sizes, " is too large: its ", what, " overflows int64");
}
void check_non_negative(const char* op, IntArrayRef sizes) {
  for (size_t i = 0; i < sizes.size(); ++i)
    TG_CHECK(sizes[i] >= 0, ValueError, op, "sizes must be non-negative, got ", sizes[i],
             " at dim ", i, " of shape ", sizes);
}
}  // namespace

int64_t mul(const char* op, int64_t a, int64_t b, const char* what) {
  int64_t out = 0;
  TG_CHECK(mul(a, b, out), ValueError, op, what, " overflows int64 (", a, " * ", b, ")");
  return out;
}

int64_t add(const char* op, int64_t a, int64_t b, const char* what) {
  int64_t out = 0;
  TG_CHECK(add(a, b, out), ValueError, op, what, " overflows int64 (", a, " + ", b, ")");
  return out;
}

int64_t numel(const char* op, IntArrayRef sizes, size_t itemsize) {
  check_non_negative(op, sizes);
  int64_t span = static_cast<int64_t>(itemsize), n = 1;
  for (int64_t d : sizes) {
    if (!mul(span, std::max<int64_t>(d, 1), span)) too_large(op, sizes, "byte size");
    n = d == 0 ? 0 : n * d;  // |n| <= span: cannot overflow once span did not
  }
  return n;
}

int64_t view_numel(const char* op, IntArrayRef sizes) {
  check_non_negative(op, sizes);
  int64_t n = 1;
  bool overflow = false;
  for (int64_t d : sizes) {
    if (d == 0) return 0;
    overflow |= !mul(n, d, n);
  }
  if (overflow) too_large(op, sizes, "number of elements");
  return n;
}

int64_t storage_span(const char* op, IntArrayRef sizes, IntArrayRef strides) {
  TG_ASSERT(sizes.size() == strides.size());
  if (view_numel(op, sizes) == 0) return 0;
  int64_t last = 0;  // the largest offset
  for (size_t i = 0; i < sizes.size(); ++i) {
    TG_CHECK(strides[i] >= 0, ValueError, op, "strides must be non-negative, got ", strides,
             " for shape ", sizes);
    int64_t step = 0;
    if (!mul(sizes[i] - 1, strides[i], step) || !add(last, step, last))
      fail<ValueError>(op, "shape ", sizes, " with strides ", strides,
                       " reaches an offset that overflows int64");
  }
  return add(op, last, 1, "the storage size");
}

size_t nbytes(const char* op, int64_t elements, size_t itemsize) {
  int64_t out = 0;
  TG_CHECK(elements >= 0 && mul(elements, static_cast<int64_t>(itemsize), out), ValueError, op,
           elements, " elements of ", itemsize, " bytes overflow int64");
  return static_cast<size_t>(out);
}

void view_bounds(const char* op, IntArrayRef sizes, IntArrayRef strides, int64_t offset,
                 int64_t storage_elements) {
  TG_ASSERT(sizes.size() == strides.size());
  if (view_numel(op, sizes) == 0) {
    TG_CHECK(offset >= 0, ValueError, op, "storage offset ", offset, " is negative");
    return;
  }
  int64_t lo = offset, hi = offset;  // the smallest and the largest offset reached
  for (size_t i = 0; i < sizes.size(); ++i) {
    int64_t step = 0;
    bool ok = mul(sizes[i] - 1, strides[i], step);
    int64_t& bound = step < 0 ? lo : hi;
    if (!ok || !add(bound, step, bound))
      fail<ValueError>(op, "view of shape ", sizes, ", strides ", strides, " at offset ", offset,
                       " reaches an offset that overflows int64");
  }
  TG_CHECK(lo >= 0 && hi < storage_elements, ValueError, op, "view of shape ", sizes, ", strides ",
           strides, " at offset ", offset, " reaches elements [", lo, ", ", hi,
           "], outside its storage of ", storage_elements, " elements");
}

}  // namespace checked

}  // namespace tg
