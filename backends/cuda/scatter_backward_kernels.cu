// The fused backward of scatter_reduce and index_reduce on sorted entries (indexing_kernels.h):
// each slot's first entry gathers the slot's statistics in index order and writes the gradients
// of self at the slot and of src at each of its entries. Everything stays on the device: the
// counts, ties and zero statistics are never read by the host.
#include "indexing_kernels.h"
#include "launch.cuh"
#include "scatter_rules.cuh"

namespace tg::cuda::detail {
namespace {

// Self's share of a slot's statistics.
template <typename T> __host__ __device__ SlotStats<T> start_stats(T x, T r, bool include_self) {
  SlotStats<T> st;
  st.ties = include_self && x == r;
  const bool zero = include_self && x == T(0);
  st.zeros = zero;
  st.prod = include_self && !zero ? x : T(1);
  st.zsum = zero ? x : T(0);
  return st;
}

// Slots with no entries: self's gradient from self's share alone.
template <typename T> struct SelfOnlyBody {
  ScatterReduce reduce;
  const T *grad, *self, *result;
  T* grad_self;
  bool include_self;
  __host__ __device__ void operator()(int64_t b) const {
    const SlotStats<T> st = start_stats(self[b], result[b], include_self);
    grad_self[b] = self_grad_at(reduce, st, grad[b], result[b], self[b], include_self);
  }
};

template <typename T> struct SlotBackwardBody {
  ScatterReduce reduce;
  const T *grad, *self, *result, *src;
  const int64_t *slots, *order, *src_off;
  int64_t n;
  bool include_self;
  T *grad_self, *grad_src;
  __host__ __device__ void operator()(int64_t k) const {
    const int64_t b = slots[k];
    if (b < 0 || (k > 0 && slots[k - 1] == b)) return;
    const T r = result[b], g = grad[b];
    SlotStats<T> st = start_stats(self[b], r, include_self);
    int64_t end = k;
    for (; end < n && slots[end] == b; ++end) {
      const T v = src[src_off[order[end]]];
      ++st.count;
      st.ties += v == r;
      const bool zero = v == T(0);
      st.zeros += zero;
      st.prod = static_cast<T>(st.prod * (zero ? T(1) : v));
      st.zsum = static_cast<T>(st.zsum + (zero ? v : T(0)));
    }
    if (grad_self) grad_self[b] = self_grad_at(reduce, st, g, r, self[b], include_self);
    if (grad_src) {
      for (int64_t j = k; j < end; ++j) {
        const int64_t off = src_off[order[j]];
        grad_src[off] = src_grad_at(reduce, st, g, r, src[off], include_self);
      }
    }
  }
};

}  // namespace

void launch_reduce_backward(ScatterReduce reduce, DType dtype, const void* grad, const void* self,
                            const void* result, const void* src, int64_t slots_numel,
                            const int64_t* slots, const int64_t* order, const int64_t* src_off,
                            int64_t n, bool include_self, void* grad_self, void* grad_src) {
  visit_floating("scatter_reduce_backward", dtype, [&](auto tag) {
    using T = typename decltype(tag)::type;
    const T* g = static_cast<const T*>(grad);
    const T* x = static_cast<const T*>(self);
    const T* r = static_cast<const T*>(result);
    T* gs = static_cast<T*>(grad_self);
    if (gs)
      launch_n("scatter_reduce_backward", slots_numel,
               SelfOnlyBody<T>{reduce, g, x, r, gs, include_self});
    launch_n("scatter_reduce_backward", n,
             SlotBackwardBody<T>{reduce, g, x, r, static_cast<const T*>(src), slots, order, src_off,
                                 n, include_self, gs, static_cast<T*>(grad_src)});
  });
}

}  // namespace tg::cuda::detail
