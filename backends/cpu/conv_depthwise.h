#pragma once
// Depthwise convs (groups = input channels = output channels: one filter per channel plane) of
// any kernel size, stride, padding and dilation, in float32 and float64, plane by plane. The GEMM
// path ran them as one GEMM per group, each a single row of the weights times the plane's column
// matrix, far from memory speed; here the forward and input gradient add each tap's shifted row
// times its weight (an axpy along the row), and the weight gradient is, per channel and tap, a
// dot product of gy's rows with x's rows shifted by the tap; with strides of 1 or 2 and rows of a
// vector or more, the same sums as dense stencils over staged planes (conv_depthwise.cpp says
// when, and how they keep the walk's results). Every output is summed by one task
// in an order fixed by the shapes (taps in order; a weight's products image by image in the lanes
// of one vector, the images' sums added in order in double), without fused multiply-adds: the
// same bits at any thread count and in the AVX2 build or the baseline one.
#include <tapegrad/core/conv_geometry.h>

namespace tg::cpu::depthwise {

bool fits(const ConvGeometry& g);
template <typename T>
void forward(const T* x, const T* w, const T* bias, const ConvGeometry& g, T* y);
template <typename T> void backward_input(const T* gy, const T* w, const ConvGeometry& g, T* gx);
template <typename T> void backward_weight(const T* gy, const T* x, const ConvGeometry& g, T* gw);

}  // namespace tg::cpu::depthwise
