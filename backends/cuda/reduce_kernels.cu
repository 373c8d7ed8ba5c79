// Reductions over the rows of a contiguous rows x cols matrix: sum, prod, max, min (through the
// device-wide reduce of algorithms.cuh), and max / min with the index of the extreme.
#include "algorithms.cuh"
#include "math.cuh"

namespace tg::cuda::detail {
namespace {

template <typename T> struct SumOp {
  __host__ __device__ T operator()(T a, T b) const { return wrapping_add(a, b); }
};
template <typename T> struct ProdOp {
  __host__ __device__ T operator()(T a, T b) const { return wrapping_mul(a, b); }
};
// max (Greater) or min; NaN wins, as on the CPU.
template <typename T, bool Greater> struct ExtremeOp {
  __host__ __device__ static bool better(T v, T best) {
    return (Greater ? v > best : v < best) || (is_nan(v) && !is_nan(best));
  }
  __host__ __device__ T operator()(T a, T b) const { return better(b, a) ? b : a; }
};

// values[r], indices[r]: the extreme of row r and the first column where it is.
template <typename T, bool Greater> struct ExtremeIndexBody {
  const T* in;
  T* values;
  int64_t* indices;
  int64_t cols;
  __host__ __device__ void operator()(int64_t r) const {
    const T* row = in + r * cols;
    int64_t best = 0;
    for (int64_t c = 1; c < cols; ++c)
      if (ExtremeOp<T, Greater>::better(row[c], row[best])) best = c;
    values[r] = row[best];
    indices[r] = best;
  }
};

template <typename T> struct DivideBody {
  T* out;
  T count;
  __host__ __device__ void operator()(int64_t r) const { out[r] = out[r] / count; }
};

}  // namespace

void launch_reduce_rows(ReduceKind kind, const void* in, void* out, DType dtype, int64_t rows,
                        int64_t cols) {
  if (kind == ReduceKind::Max || kind == ReduceKind::Min) {  // in the input's own dtype
    visit_dtype(kind == ReduceKind::Max ? "amax" : "amin", dtype, [&](auto tag) {
      using T = typename decltype(tag)::type;
      const T* d_in = static_cast<const T*>(in);
      T* d_out = static_cast<T*>(out);
      if (kind == ReduceKind::Max)
        reduce_rows("amax", d_in, d_out, rows, cols, ExtremeOp<T, true>{}, lowest_value<T>());
      else
        reduce_rows("amin", d_in, d_out, rows, cols, ExtremeOp<T, false>{}, highest_value<T>());
    });
    return;
  }
  // Sums, means and products run in the accumulation dtypes only (reduce.cpp converts first):
  // each CUB reduction is a large instance, so none for dtypes that never come here.
  auto accumulate = [&](auto tag) {
    using T = typename decltype(tag)::type;
    const T* d_in = static_cast<const T*>(in);
    T* d_out = static_cast<T*>(out);
    if (kind == ReduceKind::Prod)
      return reduce_rows("prod", d_in, d_out, rows, cols, ProdOp<T>{}, T(1));
    reduce_rows(kind == ReduceKind::Mean ? "mean" : "sum", d_in, d_out, rows, cols, SumOp<T>{},
                T(0));
    if (kind == ReduceKind::Mean)
      launch_n("mean", rows, DivideBody<T>{d_out, static_cast<T>(cols)});
  };
  switch (dtype) {
    case kFloat64: return accumulate(TypeTag<double>{});
    case kInt64:
      if (kind != ReduceKind::Mean) return accumulate(TypeTag<int64_t>{});
      [[fallthrough]];
    default: throw_unsupported_dtype(kind == ReduceKind::Mean ? "mean" : "reduce", dtype);
  }
}

void launch_extreme_index_rows(bool greater, const void* in, void* values, int64_t* indices,
                               DType dtype, int64_t rows, int64_t cols) {
  visit_dtype(greater ? "max" : "min", dtype, [&](auto tag) {
    using T = typename decltype(tag)::type;
    const T* d_in = static_cast<const T*>(in);
    T* d_values = static_cast<T*>(values);
    if (greater) {
      launch_n("max", rows, ExtremeIndexBody<T, true>{d_in, d_values, indices, cols});
    } else {
      launch_n("min", rows, ExtremeIndexBody<T, false>{d_in, d_values, indices, cols});
    }
  });
}

}  // namespace tg::cuda::detail
