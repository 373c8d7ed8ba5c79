// tril / triu and cumsum over contiguous tensors.
#include <type_traits>

#include "launch.cuh"
#include "math.cuh"

namespace tg::cuda::detail {
namespace {

// out[i] = in[i] where (col - row) is on the kept side of the diagonal, else 0.
template <typename T> struct TriangleBody {
  T* out;
  const T* in;
  int64_t rows, cols, diagonal;
  bool upper;
  __host__ __device__ void operator()(int64_t i) const {
    const int64_t col = i % cols, row = (i / cols) % rows;
    const bool keep = upper ? col - row >= diagonal : col - row <= diagonal;
    out[i] = keep ? in[i] : T(0);
  }
};

// One column (outer o, inner i) of [outer, size, inner]: running sums along size, accumulated
// in double (floating) or int64 (wrapping), as the CPU kernel does.
template <typename T> struct CumsumBody {
  T* out;
  const T* in;
  int64_t size, inner;
  __host__ __device__ void operator()(int64_t c) const {
    using Acc = std::conditional_t<std::is_floating_point_v<T>, double, uint64_t>;
    const int64_t base = (c / inner) * size * inner + c % inner;
    Acc acc = 0;
    for (int64_t j = 0; j < size; ++j) {
      acc = static_cast<Acc>(acc + static_cast<Acc>(in[base + j * inner]));
      out[base + j * inner] = static_cast<T>(acc);
    }
  }
};

// Dropout: element i kept when uniform_at(seed, i) < keep, then scaled (x * mask * scale).
template <typename T> struct DropoutBody {
  T* out;
  bool* mask;
  const T* in;
  uint64_t seed;
  double keep;
  T scale;
  __host__ __device__ void operator()(int64_t i) const {
    const bool m = uniform_at(seed, static_cast<uint64_t>(i)) < keep;
    mask[i] = m;
    out[i] = in[i] * (m ? scale : T(0));
  }
};

}  // namespace

void launch_dropout(DType dtype, void* out, bool* mask, const void* in, int64_t n, uint64_t seed,
                    double keep) {
  visit_floating("dropout", dtype, [&](auto tag) {
    using T = typename decltype(tag)::type;
    launch_n("dropout", n,
             DropoutBody<T>{static_cast<T*>(out), mask, static_cast<const T*>(in), seed, keep,
                            T(1) / static_cast<T>(keep)});
  });
}

void launch_triangle(bool upper, DType dtype, void* out, const void* in, int64_t n, int64_t rows,
                     int64_t cols, int64_t diagonal) {
  visit_dtype(upper ? "triu" : "tril", dtype, [&](auto tag) {
    using T = typename decltype(tag)::type;
    launch_n("tril", n,
             TriangleBody<T>{static_cast<T*>(out), static_cast<const T*>(in), rows, cols, diagonal,
                             upper});
  });
}

void launch_cumsum(DType dtype, void* out, const void* in, int64_t outer, int64_t size,
                   int64_t inner) {
  visit_dtype("cumsum", dtype, [&](auto tag) {
    using T = typename decltype(tag)::type;
    if constexpr (!std::is_same_v<T, bool>) {
      launch_n("cumsum", outer * inner,
               CumsumBody<T>{static_cast<T*>(out), static_cast<const T*>(in), size, inner});
    }
  });
}

}  // namespace tg::cuda::detail
