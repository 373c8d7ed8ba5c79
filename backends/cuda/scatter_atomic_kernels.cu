// The atomic form of the scatter-like accumulations (indexing_kernels.h, launch_combine_atomic):
// with tg::use_deterministic_algorithms off, scatter_add, index_add, scatter_reduce and
// index_reduce skip the sort by slot and fold every entry into its slot with one atomic
// read-modify-write (atomics.cuh). Integers, amax and amin come out exactly as in index order;
// floating sums and products in the order the threads ran. Each step below is its own launch,
// so the next sees all of its writes.
#include <type_traits>

#include "atomics.cuh"
#include "indexing_kernels.h"
#include "launch.cuh"
#include "scatter_rules.cuh"

namespace tg::cuda::detail {
namespace {

// Slots that receive an entry start from the reduce's identity (include_self false). Several
// entries of a slot store the same value, so their order does not matter.
template <typename T> struct ResetBody {
  T* out;
  const int64_t* slots;
  T identity;
  __host__ __device__ void operator()(int64_t e) const {
    if (slots[e] >= 0) atomic_store(out + slots[e], identity);
  }
};

// The slot update of one entry, as combine() (scatter_rules.cuh) computes it.
template <typename T> struct CombineOp {
  ScatterReduce reduce;
  __host__ __device__ T operator()(T s, T v) const { return combine(reduce, s, v, T(1)); }
};

template <typename T> struct AtomicCombineBody {
  ScatterReduce reduce;
  T* out;
  const T* src;
  const int64_t* slots;
  const int64_t* src_off;
  T scale;
  int64_t* counts;  // Mean only: entries per slot
  __host__ __device__ void operator()(int64_t e) const {
    const int64_t slot = slots[e];
    if (slot < 0) return;  // a bad index: recorded when the entries were made
    const T v = src[src_off[e]];
    switch (reduce) {
      case ScatterReduce::Sum: atomic_add(out + slot, scale == T(1) ? v : times(v, scale)); break;
      case ScatterReduce::Mean:
        atomic_add(out + slot, v);
        atomic_add(counts + slot, int64_t{1});
        break;
      default: atomic_apply(out + slot, v, CombineOp<T>{reduce});
    }
  }
};

template <typename T> struct MeanDivideBody {
  T* out;
  const int64_t* counts;
  bool include_self;
  __host__ __device__ void operator()(int64_t i) const {
    if (counts[i] > 0) out[i] = mean_divide(out[i], counts[i] + (include_self ? 1 : 0));
  }
};

struct ZeroBody {
  int64_t* p;
  __host__ __device__ void operator()(int64_t i) const { p[i] = 0; }
};

}  // namespace

void launch_combine_atomic(ScatterReduce reduce, DType dtype, void* out, int64_t out_numel,
                           const void* src, const int64_t* slots, const int64_t* src_off, int64_t n,
                           bool include_self, const Scalar& scale) {
  constexpr const char* op = "scatter";
  auto run = [&](auto tag) {
    using T = typename decltype(tag)::type;
    T* o = static_cast<T*>(out);
    if (!include_self) launch_n(op, n, ResetBody<T>{o, slots, reduce_identity<T>(reduce)});
    if (reduce != ScatterReduce::Mean) {
      launch_n(op, n,
               AtomicCombineBody<T>{reduce, o, static_cast<const T*>(src), slots, src_off,
                                    scale.to<T>(), nullptr});
      return;
    }
    DeviceBuffer count_buffer(static_cast<size_t>(out_numel) * sizeof(int64_t));
    int64_t* counts = static_cast<int64_t*>(count_buffer.get());
    launch_n(op, out_numel, ZeroBody{counts});
    launch_n(op, n,
             AtomicCombineBody<T>{reduce, o, static_cast<const T*>(src), slots, src_off,
                                  scale.to<T>(), counts});
    launch_n(op, out_numel, MeanDivideBody<T>{o, counts, include_self});
  };
  // bool has no accumulation (combine assigns): the callers sort for it. Only the dtypes the
  // atomics are instantiated for.
  switch (dtype) {
    case kInt32: run(TypeTag<int32_t>{}); break;
    case kInt64: run(TypeTag<int64_t>{}); break;
    case kFloat32: run(TypeTag<float>{}); break;
    case kFloat64: run(TypeTag<double>{}); break;
    default: throw_unsupported_dtype(op, dtype);
  }
}

}  // namespace tg::cuda::detail
