#pragma once
// MultiheadAttention (torch.nn.MultiheadAttention's parameters, names, initialisation and mask
// conventions) and TransformerBlock, a pre-norm transformer encoder layer laid out as
// torch.nn.TransformerEncoderLayer(norm_first=True, batch_first=True), so both state_dicts map
// one-to-one onto PyTorch's.
//
//   tg::nn::MultiheadAttention mha(64, 4, {.batch_first = true});
//   auto [y, weights] = mha(x, x, x, {.is_causal = true});   // x [N, L, 64]; weights [N, L, L]
#include <cstdint>
#include <memory>
#include <string>
#include <tuple>

#include <tapegrad/nn/layers.h>
#include <tapegrad/nn/module.h>

namespace tg::nn {

struct MultiheadAttentionOptions {
  double dropout = 0.0;      // on the attention weights, in training mode
  bool bias = true;          // in_proj_bias and out_proj.bias
  bool batch_first = false;  // inputs and output [N, L, E] instead of [L, N, E]
  DType dtype = kFloat32;
};

struct AttentionCall {
  // [N, S] (or [S] unbatched): true (bool) marks keys to ignore; a float mask is added.
  Tensor key_padding_mask = {};
  bool need_weights = true;
  // [L, S] or [N * num_heads, L, S]: true (bool) marks pairs NOT allowed to attend (PyTorch's
  // MultiheadAttention convention, the opposite of scaled_dot_product_attention's); float: added.
  Tensor attn_mask = {};
  bool average_attn_weights = true;
  bool is_causal = false;  // each query attends to keys at or before its position only
};

class MultiheadAttention : public Module {
 public:
  MultiheadAttention(int64_t embed_dim, int64_t num_heads,
                     const MultiheadAttentionOptions& options = {});
  // query [L, N, E], key and value [S, N, E] ([N, L, E] with batch_first; [L, E] unbatched).
  // Returns the output (query's layout) and, when need_weights, the attention weights
  // [N, L, S] averaged over heads, or [N, num_heads, L, S] (undefined otherwise).
  std::tuple<Tensor, Tensor> forward(const Tensor& query, const Tensor& key, const Tensor& value,
                                     const AttentionCall& call = {});
  std::tuple<Tensor, Tensor> operator()(const Tensor& query, const Tensor& key, const Tensor& value,
                                        const AttentionCall& call = {}) {
    return forward(query, key, value, call);
  }
  Tensor forward(const Tensor& x) override;  // self-attention, output only
  using Module::operator();
  std::string extra_repr() const override;

  Tensor in_proj_weight, in_proj_bias;  // [3 E, E] (query, key, value rows), [3 E]
  std::shared_ptr<Linear> out_proj;
  int64_t embed_dim, num_heads, head_dim;
  MultiheadAttentionOptions options;
};

struct TransformerBlockOptions {
  int64_t dim_feedforward = 0;  // 0: 4 * embed_dim
  double dropout = 0.0;
  std::string activation = "relu";  // relu (PyTorch's default) | gelu
  bool causal = false;              // each position attends to itself and earlier ones only
  double layer_norm_eps = 1e-5;
  DType dtype = kFloat32;
};

// x + attention(norm1(x)), then x + mlp(norm2(x)) on [N, L, E]: submodules self_attn, linear1,
// dropout, linear2, norm1, norm2, dropout1, dropout2, as in torch.nn.TransformerEncoderLayer.
class TransformerBlock : public Module {
 public:
  TransformerBlock(int64_t embed_dim, int64_t num_heads,
                   const TransformerBlockOptions& options = {});
  Tensor forward(const Tensor& x) override;
  // With masks in MultiheadAttention's conventions (either may be undefined).
  Tensor forward(const Tensor& x, const Tensor& attn_mask, const Tensor& key_padding_mask);
  using Module::operator();
  std::string extra_repr() const override;

  std::shared_ptr<MultiheadAttention> self_attn;
  std::shared_ptr<Linear> linear1, linear2;
  std::shared_ptr<LayerNorm> norm1, norm2;
  std::shared_ptr<Dropout> dropout, dropout1, dropout2;
  TransformerBlockOptions options;
};

}  // namespace tg::nn
