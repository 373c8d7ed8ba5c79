#pragma once
// The shape arithmetic of matmul, shared by the CPU and CUDA kernels: 1-d operands as matrices,
// the batch dims broadcast, the result's shape. Arguments were checked before dispatch
// (checks::matmul).
#include <algorithm>
#include <cstdint>

#include <tapegrad/core/tensor_base.h>
#include <tapegrad/generated/tensor.h>

namespace tg::shared {

// A 1-d operand as a matrix: [1, k] on the left, [k, 1] on the right (a view); others as they are.
inline Tensor as_matrix(const Tensor& t, bool left) {
  if (t.dim() != 1) return t;
  const int64_t k = t.size(0), s = t.strides()[0];
  return left ? make_view(t, {1, k}, {k * s, s}, t.storage_offset())
              : make_view(t, {k, 1}, {s, 1}, t.storage_offset());
}

struct MatmulPlan {
  Tensor a, b;  // self and other as matrices [..., m, k] and [..., k, n]
  Shape batch;  // the batch dims of a and b broadcast, right-aligned
  int64_t m = 0, k = 0, n = 0;
  Shape out_shape;  // batch + [m] (unless self is 1-d) + [n] (unless other is 1-d)
};

inline MatmulPlan matmul_plan(const Tensor& self, const Tensor& other) {
  MatmulPlan p;
  p.a = as_matrix(self, true);
  p.b = as_matrix(other, false);
  const int64_t na = p.a.dim() - 2, nb = p.b.dim() - 2, nbatch = std::max(na, nb);
  p.batch = Shape(static_cast<size_t>(nbatch), 1);
  for (int64_t d = 0; d < nbatch; ++d) {
    const int64_t sa = d - (nbatch - na) >= 0 ? p.a.size(d - (nbatch - na)) : 1;
    const int64_t sb = d - (nbatch - nb) >= 0 ? p.b.size(d - (nbatch - nb)) : 1;
    TG_ASSERT(sa == sb || sa == 1 || sb == 1);
    // not max: a size-0 batch dim broadcast with 1 stays 0
    p.batch[static_cast<size_t>(d)] = sa == 1 ? sb : sa;
  }
  p.m = p.a.size(-2);
  p.k = p.a.size(-1);
  p.n = p.b.size(-1);
  TG_ASSERT(p.k == p.b.size(-2));
  p.out_shape = p.batch;
  if (self.dim() > 1) p.out_shape.push_back(p.m);
  if (other.dim() > 1) p.out_shape.push_back(p.n);
  return p;
}

}  // namespace tg::shared
