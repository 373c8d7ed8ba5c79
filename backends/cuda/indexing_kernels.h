#pragma once
// The plain-data interface of the indexing kernels (indexing_kernels.cu, scatter_kernels.cu).
// Every scatter-like op is one plan: for each element e of an iteration shape (the index's shape
// for gather / scatter, the source's for the index_* ops), an index value picks a slot along
// `dim` of a target; the entry's slot offset and its source offset are computed on the device
// (index values checked there, errors recorded without a sync: device_errors.h), entries are
// stably sorted by slot, and each slot combines its entries in index order. That order makes the
// results deterministic and, for sum and prod, bit-identical to the CPU backend.
#include "cuda_utils.h"

namespace tg::cuda::detail {

struct EntryLayout {
  // Over the iteration shape: operand 0 is the index (stride 0 where it does not vary), operand
  // 1 the source.
  StridedLayout<2> iter;
  int64_t target_strides[kMaxDims] = {};  // strides of the tensor the slots address
  int dim = 0;
  int64_t dim_size = 0;        // valid index values are [0, dim_size)
  bool wrap_negative = false;  // index_fill: [-dim_size, dim_size), negatives from the end
  int32_t error_code = 0;      // the ErrorCode a bad value records (0: the default for the form)
};

// slots[e]: element offset in the target of entry e (-1 when its index value is out of range:
// then the error is recorded for op); src_off[e]: its offset in the source. index is int64.
void launch_entries(const char* op, const EntryLayout& layout, const int64_t* index, int64_t n,
                    int64_t* slots, int64_t* src_off);

// order[k] = the entry at sorted position k: entries stably sorted by slot (slots sorted too).
void sort_entries(int64_t* slots, int64_t* order, int64_t n);

// Combines sorted entries into out (contiguous, `dtype`): each slot starts from out (include_self)
// or the reduce's identity, then takes src[src_off[order[k]]] * scale (Sum with scale: index_add)
// in order; Mean divides by the count (+1 with self). Slots with no entries are untouched.
void launch_combine(ScatterReduce reduce, DType dtype, void* out, const void* src,
                    const int64_t* slots, const int64_t* order, const int64_t* src_off, int64_t n,
                    bool include_self, const Scalar& scale);

// launch_combine's atomic form (tg::use_deterministic_algorithms off; scatter_atomic_kernels.cu):
// entries unsorted, each folded into its slot of out (contiguous, out_numel elements) with one
// atomic update. Sum, Prod, Mean, Amax, Amin; int32, int64, float32, float64 (bool and Assign
// take the sorted path: their result is the last entry in index order).
void launch_combine_atomic(ScatterReduce reduce, DType dtype, void* out, int64_t out_numel,
                           const void* src, const int64_t* slots, const int64_t* src_off, int64_t n,
                           bool include_self, const Scalar& scale);

// out[e] = target[slots[e]] (0 where slots[e] < 0), out contiguous, `dtype`.
void launch_gather_slots(DType dtype, void* out, const void* target, const int64_t* slots,
                         int64_t n);

// target[slots[e]] = value for every entry with slots[e] >= 0 (index_fill).
void launch_fill_slots(DType dtype, void* target, const void* value, const int64_t* slots,
                       int64_t n);

// The fused backward of scatter_reduce / index_reduce (the CPU's rules, slot_grads.h there):
// grad, self, result contiguous of self's shape (numel slots); src contiguous. grad_self (may be
// null) gets self's gradient for every slot, grad_src (may be null, zeroed by the caller) src's
// for every entry. Floating dtypes; reduce is Sum, Prod, Mean, Amax or Amin.
void launch_reduce_backward(ScatterReduce reduce, DType dtype, const void* grad, const void* self,
                            const void* result, const void* src, int64_t slots_numel,
                            const int64_t* slots, const int64_t* order, const int64_t* src_off,
                            int64_t n, bool include_self, void* grad_self, void* grad_src);

// Masks: positions[i] = number of true elements before i (exclusive scan, n elements), and
// count[0] = the total, all on the device.
void launch_mask_positions(const bool* mask, int64_t* positions, int64_t* count, int64_t n);
// masked_scatter: out[i] = mask[i] ? source[positions[i]] : out[i] (out holds self), after
// recording kSourceTooSmall (or kSourceShapeTooSmall) for op when count > source_numel.
void launch_masked_scatter(const char* op, bool shape_error, DType dtype, void* out,
                           const bool* mask, const int64_t* positions, const int64_t* count,
                           const void* source, int64_t source_numel, int64_t n);
// The record check alone (before any write, for checked mode).
void launch_check_count(const char* op, bool shape_error, const int64_t* count,
                        int64_t source_numel);
// masked_select / masked_scatter_backward: out[positions[i]] = in[i] where mask[i].
void launch_compact(DType dtype, void* out, int64_t out_numel, const void* in, const bool* mask,
                    const int64_t* positions, int64_t n);

}  // namespace tg::cuda::detail
