#pragma once
// Raw data movement used by kernels and the in-place machinery: no autograd, no version bump.
#include <tapegrad/core/tensor_base.h>

namespace tg {

// dst[i] = convert(src[i]) over dst's shape, src broadcast to it; any strides, any dtypes.
// Same device, or host<->device when both are contiguous (then src is converted on the host).
void copy_data(const TensorBase& dst, const TensorBase& src);
// Every element of dst set to value (converted to dst's dtype).
void fill_data(const TensorBase& dst, const Scalar& value);

// Copies n bytes from src to dst (not overlapping) on the host. stream: with non-temporal
// stores, for a result too large to stay cached (streaming_stores_for, core/cpu_features.h); a
// caller that streams calls stream_fence() after its last copy, before another thread reads.
void copy_bytes(char* dst, const char* src, size_t n, bool stream);

// Per-device kernels behind copy_data / fill_data (same device, dst not overlapping src).
using CopyKernel = void (*)(const TensorBase& dst, const TensorBase& src);
using FillKernel = void (*)(const TensorBase& dst, const Scalar& value);
void set_copy_kernel(DeviceType type, CopyKernel fn);
void set_fill_kernel(DeviceType type, FillKernel fn);

// src's strides broadcast to `shape` (0 for broadcast dims); ValueError naming op when it
// does not broadcast.
Shape broadcast_strides(const char* op, const TensorBase& src, const Shape& shape);

}  // namespace tg
