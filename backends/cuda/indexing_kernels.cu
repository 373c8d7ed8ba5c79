// Entries, sorting, combining, gathering and mask kernels of the indexing ops (see
// indexing_kernels.h). Scatter backward rules are in scatter_backward_kernels.cu.
#include <type_traits>

#include <thrust/sequence.h>
#include <thrust/sort.h>

#include "algorithms.cuh"
#include "device_errors.h"
#include "indexing_kernels.h"
#include "scatter_rules.cuh"

namespace tg::cuda::detail {
namespace {

struct EntryBody {
  EntryLayout l;
  const int64_t* index;
  int64_t* slots;
  int64_t* src_off;
  ErrorRecord* err;
  int32_t op;
  __host__ __device__ void operator()(int64_t e) const {
    int64_t coord[kMaxDims];
    int64_t rest = e, index_off = 0, src = 0;
    for (int d = l.iter.ndim - 1; d >= 0; --d) {
      coord[d] = rest % l.iter.sizes[d];
      rest /= l.iter.sizes[d];
      index_off += coord[d] * l.iter.strides[0][d];
      src += coord[d] * l.iter.strides[1][d];
    }
    int64_t v = index[index_off];
    const int64_t size = l.dim_size;
    if (l.wrap_negative && v < 0 && v >= -size) v += size;
    if (v < 0 || v >= size) {
      const int32_t code = l.error_code != 0 ? l.error_code
                           : l.wrap_negative ? kFillIndexOutOfRange
                                             : kIndexOutOfRange;
      record_error(err, code, op, index[index_off], size, l.dim);
      slots[e] = -1;
      src_off[e] = src;
      return;
    }
    int64_t slot = 0;
    for (int d = 0; d < l.iter.ndim; ++d) slot += (d == l.dim ? v : coord[d]) * l.target_strides[d];
    slots[e] = slot;
    src_off[e] = src;
  }
};

template <typename T> struct CombineBody {
  ScatterReduce reduce;
  T* out;
  const T* src;
  const int64_t* slots;
  const int64_t* order;
  const int64_t* src_off;
  int64_t n;
  bool include_self;
  T scale;
  __host__ __device__ void operator()(int64_t k) const {
    const int64_t slot = slots[k];
    if (slot < 0 || (k > 0 && slots[k - 1] == slot)) return;  // only a slot's first entry works
    T acc = include_self ? out[slot] : reduce_identity<T>(reduce);
    int64_t count = 0;
    for (int64_t j = k; j < n && slots[j] == slot; ++j, ++count)
      acc = combine(reduce, acc, src[src_off[order[j]]], scale);
    if (reduce == ScatterReduce::Mean) acc = mean_divide(acc, count + (include_self ? 1 : 0));
    out[slot] = acc;
  }
};

template <typename T> struct GatherSlotsBody {
  T* out;
  const T* target;
  const int64_t* slots;
  __host__ __device__ void operator()(int64_t e) const {
    out[e] = slots[e] >= 0 ? target[slots[e]] : T(0);
  }
};

template <typename T> struct FillSlotsBody {
  T* target;
  const T* value;
  const int64_t* slots;
  __host__ __device__ void operator()(int64_t e) const {
    if (slots[e] >= 0) target[slots[e]] = *value;
  }
};

struct CountBody {
  const bool* mask;
  const int64_t* positions;
  int64_t* count;
  int64_t n;
  __host__ __device__ void operator()(int64_t) const {
    count[0] = positions[n - 1] + (mask[n - 1] ? 1 : 0);
  }
};

struct CheckCountBody {
  const int64_t* count;
  int64_t source_numel;
  ErrorRecord* err;
  int32_t op;
  int32_t code;
  __host__ __device__ void operator()(int64_t) const {
    if (count[0] > source_numel) record_error(err, code, op, count[0], source_numel, 0);
  }
};

template <typename T> struct MaskedScatterBody {
  T* out;
  const bool* mask;
  const int64_t* positions;
  const T* source;
  int64_t source_numel;
  __host__ __device__ void operator()(int64_t i) const {
    if (mask[i] && positions[i] < source_numel) out[i] = source[positions[i]];
  }
};

template <typename T> struct CompactBody {
  T* out;
  int64_t out_numel;
  const T* in;
  const bool* mask;
  const int64_t* positions;
  __host__ __device__ void operator()(int64_t i) const {
    if (mask[i] && positions[i] < out_numel) out[positions[i]] = in[i];
  }
};

struct MaskToInt {
  const bool* mask;
  int64_t* out;
  __host__ __device__ void operator()(int64_t i) const { out[i] = mask[i] ? 1 : 0; }
};

}  // namespace

void launch_entries(const char* op, const EntryLayout& layout, const int64_t* index, int64_t n,
                    int64_t* slots, int64_t* src_off) {
  launch_n(op, n, EntryBody{layout, index, slots, src_off, error_record(), op_id(op)});
}

void sort_entries(int64_t* slots, int64_t* order, int64_t n) {
  if (n <= 0) return;
  ThrustAllocator alloc;
  thrust::sequence(thrust_policy(alloc), order, order + n);
  thrust::stable_sort_by_key(thrust_policy(alloc), slots, slots + n, order);
}

void launch_combine(ScatterReduce reduce, DType dtype, void* out, const void* src,
                    const int64_t* slots, const int64_t* order, const int64_t* src_off, int64_t n,
                    bool include_self, const Scalar& scale) {
  visit_dtype("scatter", dtype, [&](auto tag) {
    using T = typename decltype(tag)::type;
    launch_n("scatter", n,
             CombineBody<T>{reduce, static_cast<T*>(out), static_cast<const T*>(src), slots, order,
                            src_off, n, include_self, scale.to<T>()});
  });
}

void launch_gather_slots(DType dtype, void* out, const void* target, const int64_t* slots,
                         int64_t n) {
  visit_dtype("gather", dtype, [&](auto tag) {
    using T = typename decltype(tag)::type;
    launch_n("gather", n,
             GatherSlotsBody<T>{static_cast<T*>(out), static_cast<const T*>(target), slots});
  });
}

void launch_fill_slots(DType dtype, void* target, const void* value, const int64_t* slots,
                       int64_t n) {
  visit_dtype("index_fill", dtype, [&](auto tag) {
    using T = typename decltype(tag)::type;
    launch_n("index_fill", n,
             FillSlotsBody<T>{static_cast<T*>(target), static_cast<const T*>(value), slots});
  });
}

void launch_mask_positions(const bool* mask, int64_t* positions, int64_t* count, int64_t n) {
  if (n <= 0) return;
  DeviceBuffer ones(static_cast<size_t>(n) * sizeof(int64_t));
  int64_t* flags = static_cast<int64_t*>(ones.get());
  launch_n("mask", n, MaskToInt{mask, flags});
  exclusive_scan(flags, positions, n);
  launch_n("mask", 1, CountBody{mask, positions, count, n});
}

void launch_check_count(const char* op, bool shape_error, const int64_t* count,
                        int64_t source_numel) {
  launch_n(op, 1,
           CheckCountBody{count, source_numel, error_record(), op_id(op),
                          shape_error ? kSourceShapeTooSmall : kSourceTooSmall});
}

void launch_masked_scatter(const char* op, bool shape_error, DType dtype, void* out,
                           const bool* mask, const int64_t* positions, const int64_t* count,
                           const void* source, int64_t source_numel, int64_t n) {
  launch_check_count(op, shape_error, count, source_numel);
  visit_dtype(op, dtype, [&](auto tag) {
    using T = typename decltype(tag)::type;
    launch_n(op, n,
             MaskedScatterBody<T>{static_cast<T*>(out), mask, positions,
                                  static_cast<const T*>(source), source_numel});
  });
}

void launch_compact(DType dtype, void* out, int64_t out_numel, const void* in, const bool* mask,
                    const int64_t* positions, int64_t n) {
  visit_dtype("masked_select", dtype, [&](auto tag) {
    using T = typename decltype(tag)::type;
    launch_n("masked_select", n,
             CompactBody<T>{static_cast<T*>(out), out_numel, static_cast<const T*>(in), mask,
                            positions});
  });
}

}  // namespace tg::cuda::detail
