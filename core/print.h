#pragma once
// Printing a tensor as PyTorch does: "tensor([[1., 2.],\n        [3., 4.]], dtype=float64)".
#include <ostream>
#include <string>

#include <tapegrad/core/tensor_base.h>

namespace tg {

// Writes t's values and PyTorch's notes (size of an empty tensor, device, dtype), then `note`,
// then ")". `note` is autograd's part (", grad_fn=<MulBackward>"): operator<< on Tensor
// (autograd/tensor_methods.cpp) passes it, so that core needs nothing from autograd.
void print_tensor(std::ostream& os, const TensorBase& t, const std::string& note = "");

}  // namespace tg
