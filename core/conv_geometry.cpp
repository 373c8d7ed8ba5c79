// Shape arithmetic of the conv and pooling ops (see conv_geometry.h).
#include <tapegrad/core/conv_geometry.h>

namespace tg {

namespace {

// Value d (0-based from the first spatial dim) of a list given with 1 or `spatial` values.
int64_t pick(IntArrayRef list, int d) {
  return list.size() == 1 ? list[0] : list[static_cast<size_t>(d)];
}

// (in + 2 pad - dilation (k - 1) - 1) / stride + 1, the output size along one dim.
int64_t out_size(int64_t in, int64_t k, int64_t s, int64_t p, int64_t d) {
  return (in + 2 * p - d * (k - 1) - 1) / s + 1;
}

int64_t first_or(IntArrayRef list, size_t d) { return list.size() == 1 ? list[0] : list[d]; }

// floor(a / b) for b > 0.
int64_t div_floor(int64_t a, int64_t b) { return a >= 0 ? a / b : -((-a + b - 1) / b); }

}  // namespace

Shape ConvGeometry::input_shape() const {
  Shape s;
  if (batched) s.push_back(n);
  s.push_back(c);
  if (spatial == 2) s.push_back(h);
  s.push_back(w);
  return s;
}

Shape ConvGeometry::output_shape() const {
  Shape s;
  if (batched) s.push_back(n);
  s.push_back(oc);
  if (spatial == 2) s.push_back(oh);
  s.push_back(ow);
  return s;
}

ConvGeometry conv_geometry(int spatial, const Shape& input_shape, const Shape& weight_shape,
                           IntArrayRef stride, IntArrayRef padding, IntArrayRef dilation,
                           int64_t groups) {
  ConvGeometry g;
  g.spatial = spatial;
  g.batched = static_cast<int64_t>(input_shape.size()) == spatial + 2;
  const size_t first = g.batched ? 1 : 0;  // index of the channel dim
  g.n = g.batched ? input_shape[0] : 1;
  g.c = input_shape[first];
  g.w = input_shape.back();
  g.h = spatial == 2 ? input_shape[first + 1] : 1;
  g.oc = weight_shape[0];
  g.groups = groups;
  g.kw = weight_shape.back();
  g.kh = spatial == 2 ? weight_shape[2] : 1;
  const int last = spatial - 1;
  g.sw = pick(stride, last);
  g.pw = pick(padding, last);
  g.dw = pick(dilation, last);
  if (spatial == 2) {
    g.sh = pick(stride, 0);
    g.ph = pick(padding, 0);
    g.dh = pick(dilation, 0);
  }
  g.oh = out_size(g.h, g.kh, g.sh, g.ph, g.dh);
  g.ow = out_size(g.w, g.kw, g.sw, g.pw, g.dw);
  return g;
}

Shape PoolGeometry::output_shape() const {
  return batched ? Shape{n, c, oh, ow} : Shape{c, oh, ow};
}

int64_t pool_output_size(int64_t in, int64_t k, int64_t pad, int64_t stride, int64_t dilation,
                         bool ceil_mode) {
  int64_t out =
      div_floor(in + 2 * pad - dilation * (k - 1) - 1 + (ceil_mode ? stride - 1 : 0), stride) + 1;
  if (ceil_mode && (out - 1) * stride >= in + pad) --out;
  return out;
}

PoolGeometry pool_geometry(const Shape& input_shape, IntArrayRef kernel_size, IntArrayRef stride,
                           IntArrayRef padding, IntArrayRef dilation, bool ceil_mode) {
  PoolGeometry g;
  g.batched = input_shape.size() == 4;
  const size_t c = g.batched ? 1 : 0;
  g.n = g.batched ? input_shape[0] : 1;
  g.c = input_shape[c];
  g.h = input_shape[c + 1];
  g.w = input_shape[c + 2];
  g.kh = first_or(kernel_size, 0);
  g.kw = first_or(kernel_size, 1);
  IntArrayRef s = stride.empty() ? kernel_size : stride;
  g.sh = first_or(s, 0);
  g.sw = first_or(s, 1);
  g.ph = first_or(padding, 0);
  g.pw = first_or(padding, 1);
  g.dh = first_or(dilation, 0);
  g.dw = first_or(dilation, 1);
  g.oh = pool_output_size(g.h, g.kh, g.ph, g.sh, g.dh, ceil_mode);
  g.ow = pool_output_size(g.w, g.kw, g.pw, g.sw, g.dw, ceil_mode);
  return g;
}

}  // namespace tg
