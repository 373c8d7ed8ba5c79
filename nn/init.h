#pragma once
// Parameter initialisers (in place, outside autograd), as torch.nn.init. All draw from the global
// generator, so tg::manual_seed makes them reproducible.
#include <cstdint>

#include <tapegrad/generated/tensor.h>

namespace tg::nn::init {

// fan_in and fan_out of a weight: [out, in, ...] -> in * receptive, out * receptive.
int64_t fan_in(const Tensor& weight);
int64_t fan_out(const Tensor& weight);

const Tensor& uniform_(const Tensor& t, double low, double high);
const Tensor& normal_(const Tensor& t, double mean = 0.0, double std = 1.0);
const Tensor& constant_(const Tensor& t, double value);
const Tensor& zeros_(const Tensor& t);
const Tensor& ones_(const Tensor& t);

// gain for leaky_relu with slope a: sqrt(2 / (1 + a^2)); U(-b, b) with b = gain * sqrt(3 / fan_in).
// a = sqrt(5) is PyTorch's default for Linear's weight, giving b = 1 / sqrt(fan_in).
const Tensor& kaiming_uniform_(const Tensor& t, double a = 0.0);
const Tensor& kaiming_normal_(const Tensor& t, double a = 0.0);
// U(-b, b) with b = gain * sqrt(6 / (fan_in + fan_out)).
const Tensor& xavier_uniform_(const Tensor& t, double gain = 1.0);

}  // namespace tg::nn::init
