#pragma once
// Errors that only the data can reveal (an index out of range, a mask that selects more elements
// than the source holds), found by kernels without a host synchronisation: the first kernel
// thread to find one records it in a small block of device memory, and the host raises it as the
// op's typed error at the next synchronisation point (a device-to-host copy such as item() or
// .cpu(), or tg::cuda::synchronize()). With tg::cuda::set_sync_checks(true) an op that checks
// data synchronises right after its check kernel, before it writes anything, so a rejected call
// leaves every input unchanged, as on the CPU.
#include <cstdint>

#include <cuda/atomic>

#include "runtime.h"

namespace tg::cuda::detail {

enum ErrorCode : int32_t {
  kNoError = 0,
  kIndexOutOfRange = 1,      // value not in [0, bound) along dim
  kFillIndexOutOfRange = 2,  // value not in [-bound, bound) along dim (index_fill)
  kSourceTooSmall = 3,       // the mask selects value elements, source has bound
  kSourceShapeTooSmall = 4,  // same, for masked_scatter_backward's source_shape
  kEmbeddingIndex = 5,       // value not in [0, bound) rows of embedding's weight
  kTargetOutOfRange = 6,     // a loss target not in [0, bound), sample dim, ignore_index extra
  kClassOutOfRange = 7,      // a one_hot class value not in [0, bound)
};

struct ErrorRecord {
  int32_t code;  // ErrorCode; the first thread to change it from kNoError owns the other fields
  int32_t op;    // op_id() of the op's name
  int64_t value, bound, dim, extra;
};

// The record in device memory (allocated on first use, never freed).
ErrorRecord* error_record();
// A small number naming op (a string literal) in the record; the same op gets the same id.
int32_t op_id(const char* op);

// Records an error unless one is already recorded (first one wins). Safe from any thread.
__host__ __device__ inline void record_error(ErrorRecord* rec, int32_t code, int32_t op,
                                             int64_t value, int64_t bound, int64_t dim,
                                             int64_t extra = 0) {
  ::cuda::atomic_ref<int32_t, ::cuda::thread_scope_device> state(rec->code);
  int32_t expected = kNoError;
  if (state.compare_exchange_strong(expected, -1)) {  // -1: being written
    rec->op = op;
    rec->value = value;
    rec->bound = bound;
    rec->dim = dim;
    rec->extra = extra;
    state.store(code);
  }
}

// Reads the record (a host synchronisation) and throws the recorded op's error, clearing it.
void raise_device_errors();
// raise_device_errors() when sync checks are on (tg::cuda::set_sync_checks): called by an op
// between its data check and its first write.
void checkpoint();

}  // namespace tg::cuda::detail
