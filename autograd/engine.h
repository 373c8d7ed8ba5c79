#pragma once
// Backward over the tape, and tg::autograd::grad.
#include <vector>

#include <tapegrad/generated/tensor.h>

namespace tg::autograd {

// Accumulates d(outputs)/d(leaf) into every leaf's .grad(). grad_outputs may be empty for
// scalar outputs (taken as ones).
void backward(const std::vector<Tensor>& outputs, const std::vector<Tensor>& grad_outputs = {},
              bool retain_graph = false, bool create_graph = false);

// The same for one output (Tensor::backward): no lists to build.
void backward(const Tensor& output, const Tensor& grad_output, bool retain_graph,
              bool create_graph);

// Returns d(outputs)/d(inputs) without touching any .grad(). An input that does not influence
// the outputs gets an undefined tensor. retain_graph defaults to create_graph.
std::vector<Tensor> grad(const std::vector<Tensor>& outputs, const std::vector<Tensor>& inputs,
                         const std::vector<Tensor>& grad_outputs = {},
                         std::optional<bool> retain_graph = std::nullopt,
                         bool create_graph = false);

}  // namespace tg::autograd
