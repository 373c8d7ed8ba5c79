// Checks of cat and stack (kernels: backends/cpu/join.cpp).
#include <tapegrad/ops/checks/common.h>

namespace tg::checks {

// cat skips 1-D empty tensors whatever the other shapes are (PyTorch's legacy rule).
void cat(const std::vector<Tensor>& tensors, int64_t dim) {
  TG_CHECK(!tensors.empty(), ValueError, "cat", "tensors must be a non-empty list");
  auto skipped = [](const Tensor& t) { return t.dim() == 1 && t.numel() == 0; };
  const Tensor* ref = nullptr;
  size_t ref_index = 0;
  for (size_t i = 0; i < tensors.size(); ++i) {
    TG_CHECK(tensors[i].dim() > 0, ValueError, "cat", "tensors[", i,
             "] is zero-dimensional and cannot be concatenated");
    if (!ref && !skipped(tensors[i])) {
      ref = &tensors[i];
      ref_index = i;
    }
  }
  if (!ref) {  // only [0] tensors
    wrap_dim("cat", dim, 1);
    return;
  }
  const int64_t d = wrap_dim("cat", dim, ref->dim());
  for (size_t i = 0; i < tensors.size(); ++i) {
    const Tensor& t = tensors[i];
    if (skipped(t)) continue;
    bool match = t.dim() == ref->dim();
    for (int64_t k = 0; match && k < t.dim(); ++k) match = k == d || t.size(k) == ref->size(k);
    TG_CHECK(match, ValueError, "cat", "sizes of tensors must match except in dim ", d,
             ": tensors[", ref_index, "] has shape ", ref->shape(), ", tensors[", i, "] has shape ",
             t.shape());
  }
}

void stack(const std::vector<Tensor>& tensors, int64_t dim) {
  TG_CHECK(!tensors.empty(), ValueError, "stack", "tensors must be a non-empty list");
  const Shape& shape = tensors[0].shape();
  wrap_dim("stack", dim, tensors[0].dim() + 1);
  for (size_t i = 1; i < tensors.size(); ++i)
    TG_CHECK(tensors[i].shape() == shape, ValueError, "stack",
             "all tensors must have the same shape: tensors[0] has shape ", shape, ", tensors[", i,
             "] has shape ", tensors[i].shape());
}

}  // namespace tg::checks
