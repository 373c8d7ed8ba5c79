// Checks of the nn layer and loss ops dropout, embedding, layer_norm, mse_loss,
// binary_cross_entropy_with_logits (kernels: backends/cpu/nn_layers.cpp, nn_loss.cpp).
// embedding's index values are checked by its kernel (they are data).
#include <utility>

#include <tapegrad/ops/checks/common.h>

namespace tg::checks {

void dropout(const Tensor&, double p, bool) {
  TG_CHECK(p >= 0 && p <= 1, ValueError, "dropout", "p must be in [0, 1], got ", p);
}

void embedding(const Tensor& weight, const Tensor&, std::optional<int64_t> padding_idx) {
  constexpr const char* op = "embedding";
  TG_CHECK(weight.dim() == 2, ValueError, op,
           "weight must be 2-D [num_embeddings, embedding_dim], got shape ", weight.shape());
  const int64_t num = weight.size(0);
  if (padding_idx)
    TG_CHECK(*padding_idx >= -num && *padding_idx < num, IndexError, op, "padding_idx ",
             *padding_idx, " is out of range for weight with ", num, " rows (expected ", -num,
             " <= padding_idx < ", num, ")");
}

namespace {

// What layer_norm and layer_norm_backward share (messages name `op`).
void check_layer_norm(const char* op, const Tensor& self, IntArrayRef normalized_shape,
                      const Tensor& weight, const Tensor& bias) {
  TG_CHECK(!normalized_shape.empty(), ValueError, op,
           "normalized_shape must have at least one dim, got []");
  const size_t k = normalized_shape.size(), ndim = static_cast<size_t>(self.dim());
  bool matches = k <= ndim;
  for (size_t d = 0; matches && d < k; ++d)
    matches = self.shape()[ndim - k + d] == normalized_shape[d];
  TG_CHECK(matches, ValueError, op, "normalized_shape ", normalized_shape,
           " must match the trailing dims of self's shape ", self.shape());
  for (const auto& [name, t] :
       {std::pair<const char*, const Tensor*>{"weight", &weight}, {"bias", &bias}}) {
    if (!t->defined()) continue;
    TG_CHECK(t->shape() == Shape(normalized_shape), ValueError, op, name,
             " must have shape normalized_shape ", normalized_shape, ", got ", t->shape());
    dtype_of_self(op, name, *t, self);
  }
}

}  // namespace

void layer_norm(const Tensor& self, IntArrayRef normalized_shape, const Tensor& weight,
                const Tensor& bias, double) {
  check_layer_norm("layer_norm", self, normalized_shape, weight, bias);
}

void layer_norm_backward(const Tensor& grad_output, const Tensor& self,
                         IntArrayRef normalized_shape, const Tensor& weight, double,
                         const Tensor& mean, const Tensor& rstd) {
  constexpr const char* op = "layer_norm_backward";
  check_layer_norm(op, self, normalized_shape, weight, Tensor());
  TG_CHECK(grad_output.shape() == self.shape(), ValueError, op,
           "grad_output must have self's shape ", self.shape(), ", got ", grad_output.shape());
  dtype_of_self(op, "grad_output", grad_output, self);
  TG_CHECK(mean.defined() == rstd.defined(), ValueError, op,
           "mean and rstd must both be given or both be omitted");
  if (!mean.defined()) return;
  const Shape stats = with_trailing_ones(self.shape(), normalized_shape.size());
  for (const auto& [name, t] :
       {std::pair<const char*, const Tensor*>{"mean", &mean}, {"rstd", &rstd}}) {
    TG_CHECK(t->shape() == stats, ValueError, op, name, " must have shape ", stats,
             " (self's with the normalized dims 1), got ", t->shape());
    dtype_of_self(op, name, *t, self);
  }
}

void mse_loss(const Tensor& self, const Tensor& target, const std::string&) {
  broadcastable("mse_loss", self, target);
}

void binary_cross_entropy_with_logits(const Tensor& self, const Tensor& target,
                                      const Tensor& weight, const Tensor& pos_weight,
                                      const std::string&) {
  constexpr const char* op = "binary_cross_entropy_with_logits";
  TG_CHECK(target.shape() == self.shape(), ValueError, op, "target must have self's shape ",
           self.shape(), ", got ", target.shape());
  Shape shape = self.shape();
  if (weight.defined()) shape = broadcast_shapes(op, shape, weight.shape());
  if (pos_weight.defined()) broadcast_shapes(op, shape, pos_weight.shape());
}

}  // namespace tg::checks
