#pragma once
// Whether a tensor holds one value repeated everywhere: it has elements and every stride is 0 (an
// expanded scalar, such as the gradient of a sum). Kernels then read that one value (or build one
// row of it) instead of walking or copying the whole tensor.
#include <algorithm>
#include <cstdint>

#include <tapegrad/generated/tensor.h>

namespace tg::cpu {

inline bool holds_one_value(const Tensor& t) {
  return t.numel() > 0 &&
         std::all_of(t.strides().begin(), t.strides().end(), [](int64_t s) { return s == 0; });
}

}  // namespace tg::cpu
