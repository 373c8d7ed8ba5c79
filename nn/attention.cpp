#include <tapegrad/nn/attention.h>

#include <limits>
#include <sstream>

#include <tapegrad/core/error.h>
#include <tapegrad/ops/factories.h>
#include <tapegrad/ops/operators.h>
#include <tapegrad/generated/functions.h>
#include <tapegrad/nn/init.h>

namespace tg::nn {

namespace {

constexpr const char* kMha = "MultiheadAttention";

// A mask in scaled_dot_product_attention's terms (bool: true keeps; float: added), from one in
// MultiheadAttention's (bool: true drops).
Tensor as_keep_mask(const Tensor& mask) { return mask.dtype() == kBool ? logical_not(mask) : mask; }

// Two masks of scaled_dot_product_attention's kind as one: both bool keep where both keep;
// otherwise the bool one becomes 0 / -inf in the float one's dtype and the two are added.
Tensor merge_masks(const Tensor& a, const Tensor& b) {
  if (!a.defined()) return b;
  if (!b.defined()) return a;
  if (a.dtype() == kBool && b.dtype() == kBool) return logical_and(a, b);
  const DType dtype = a.dtype() == kBool ? b.dtype() : a.dtype();
  auto additive = [&](const Tensor& m) {
    if (m.dtype() != kBool) return m;
    return masked_fill_scalar(zeros(m.shape(), dtype, m.device()), logical_not(m),
                              -std::numeric_limits<double>::infinity());
  };
  return additive(a) + additive(b);
}

}  // namespace

// ---- MultiheadAttention ----------------------------------------------------------------------

MultiheadAttention::MultiheadAttention(int64_t embed, int64_t heads,
                                       const MultiheadAttentionOptions& opts)
    : Module(kMha), embed_dim(embed), num_heads(heads), options(opts) {
  TG_CHECK(embed > 0 && heads > 0 && embed % heads == 0, ValueError, kMha,
           "embed_dim must be a positive multiple of num_heads, got embed_dim=", embed,
           ", num_heads=", heads);
  TG_CHECK(opts.dropout >= 0 && opts.dropout <= 1, ValueError, kMha,
           "dropout must be in [0, 1], got ", opts.dropout);
  head_dim = embed / heads;
  // PyTorch's _reset_parameters: xavier-uniform projections, zero biases; out_proj.weight keeps
  // Linear's default initialisation.
  in_proj_weight = register_parameter("in_proj_weight", empty({3 * embed, embed}, opts.dtype));
  init::xavier_uniform_(in_proj_weight);
  if (opts.bias) in_proj_bias = register_parameter("in_proj_bias", zeros({3 * embed}, opts.dtype));
  out_proj =
      register_module("out_proj", std::make_shared<Linear>(embed, embed, opts.bias, opts.dtype));
  if (opts.bias) init::zeros_(out_proj->bias);
}

std::tuple<Tensor, Tensor> MultiheadAttention::forward(const Tensor& query, const Tensor& key,
                                                       const Tensor& value,
                                                       const AttentionCall& call) {
  const int64_t E = embed_dim, H = num_heads;
  TG_CHECK(query.dim() == 2 || query.dim() == 3, ValueError, kMha,
           "expected query of 3 dims, or 2 (unbatched), got shape ", query.shape());
  TG_CHECK(key.dim() == query.dim() && value.dim() == query.dim(), ValueError, kMha,
           "query, key and value must have the same number of dims, got shapes ", query.shape(),
           ", ", key.shape(), " and ", value.shape());
  for (const Tensor* t : {&query, &key, &value})
    TG_CHECK(t->size(-1) == E, ValueError, kMha, "expected inputs with last dim ", E,
             " (embed_dim), got shape ", t->shape());
  const bool unbatched = query.dim() == 2;
  // Work in [N, L, E].
  auto batch_major = [&](const Tensor& t) {
    return unbatched ? t.unsqueeze(0) : options.batch_first ? t : t.transpose(0, 1);
  };
  Tensor q = batch_major(query), k = batch_major(key), v = batch_major(value);
  const int64_t N = q.size(0), L = q.size(1), S = k.size(1);
  TG_CHECK(k.size(0) == N && v.size(0) == N && v.size(1) == S, ValueError, kMha,
           "key and value must have query's batch size and one length, got shapes ", query.shape(),
           ", ", key.shape(), " and ", value.shape());

  // Projections: one product for self-attention, else one per input (rows of in_proj_weight).
  auto part = [&](const Tensor& t, int64_t i) { return t.defined() ? t.narrow(0, i * E, E) : t; };
  if (query.is_same(key) && key.is_same(value)) {
    const Tensor qkv = linear(q, in_proj_weight, in_proj_bias);
    q = qkv.narrow(-1, 0, E);
    k = qkv.narrow(-1, E, E);
    v = qkv.narrow(-1, 2 * E, E);
  } else {
    q = linear(q, part(in_proj_weight, 0), part(in_proj_bias, 0));
    k = linear(k, part(in_proj_weight, 1), part(in_proj_bias, 1));
    v = linear(v, part(in_proj_weight, 2), part(in_proj_bias, 2));
  }
  auto heads = [&](const Tensor& t, int64_t len) {
    return t.reshape({N, len, H, head_dim}).transpose(1, 2);  // [N, H, len, head_dim]
  };

  // Masks, in scaled_dot_product_attention's terms, broadcasting to [N, H, L, S].
  Tensor mask;
  if (call.attn_mask.defined()) {
    const Tensor& m = call.attn_mask;
    const bool ok = (m.dim() == 2 && m.shape() == Shape{L, S}) ||
                    (m.dim() == 3 && m.shape() == Shape{N * H, L, S});
    TG_CHECK(ok, ValueError, kMha, "attn_mask must have shape [", L, ", ", S, "] or [", N * H, ", ",
             L, ", ", S, "] (N * num_heads, L, S), got ", m.shape());
    mask = as_keep_mask(m.dim() == 3 ? m.reshape({N, H, L, S}) : m);
  }
  if (call.key_padding_mask.defined()) {
    const Tensor& m = call.key_padding_mask;
    TG_CHECK(m.shape() == (unbatched ? Shape{S} : Shape{N, S}), ValueError, kMha,
             "key_padding_mask must have shape ", unbatched ? Shape{S} : Shape{N, S}, ", got ",
             m.shape());
    mask = merge_masks(mask, as_keep_mask(m.reshape({N, 1, 1, S})));
  }
  bool causal = call.is_causal;
  if (causal && mask.defined()) {  // the op takes a mask or is_causal, not both
    mask = merge_masks(mask, tril(ones({L, S}, kBool, q.device())));
    causal = false;
  }
  const double p = is_training() ? options.dropout : 0.0;
  auto [out, weights] =
      scaled_dot_product_attention(heads(q, L), heads(k, S), heads(v, S), mask, p, causal);
  out = (*out_proj)(out.transpose(1, 2).reshape({N, L, E}));
  out = unbatched ? out.squeeze(0) : options.batch_first ? out : out.transpose(0, 1);
  if (!call.need_weights) return {out, Tensor()};
  if (call.average_attn_weights) weights = mean(weights, {1});
  return {out, unbatched ? weights.squeeze(0) : weights};
}

Tensor MultiheadAttention::forward(const Tensor& x) {
  return std::get<0>(forward(x, x, x, {.need_weights = false}));
}

std::string MultiheadAttention::extra_repr() const {
  std::ostringstream os;
  os << "embed_dim=" << embed_dim << ", num_heads=" << num_heads;
  if (options.dropout != 0) os << ", dropout=" << options.dropout;
  if (options.batch_first) os << ", batch_first=true";
  return os.str();
}

// ---- TransformerBlock ------------------------------------------------------------------------

TransformerBlock::TransformerBlock(int64_t embed, int64_t heads,
                                   const TransformerBlockOptions& opts)
    : Module("TransformerBlock"), options(opts) {
  TG_CHECK(opts.activation == "gelu" || opts.activation == "relu", ValueError, "TransformerBlock",
           "activation must be gelu or relu, got '", opts.activation, "'");
  if (options.dim_feedforward == 0) options.dim_feedforward = 4 * embed;
  const int64_t ff = options.dim_feedforward;
  self_attn = register_module("self_attn", std::make_shared<MultiheadAttention>(
                                               embed, heads,
                                               MultiheadAttentionOptions{.dropout = opts.dropout,
                                                                         .batch_first = true,
                                                                         .dtype = opts.dtype}));
  linear1 = register_module("linear1", std::make_shared<Linear>(embed, ff, true, opts.dtype));
  dropout = register_module("dropout", std::make_shared<Dropout>(opts.dropout));
  linear2 = register_module("linear2", std::make_shared<Linear>(ff, embed, true, opts.dtype));
  norm1 =
      register_module("norm1", std::make_shared<LayerNorm>(std::vector<int64_t>{embed},
                                                           opts.layer_norm_eps, true, opts.dtype));
  norm2 =
      register_module("norm2", std::make_shared<LayerNorm>(std::vector<int64_t>{embed},
                                                           opts.layer_norm_eps, true, opts.dtype));
  dropout1 = register_module("dropout1", std::make_shared<Dropout>(opts.dropout));
  dropout2 = register_module("dropout2", std::make_shared<Dropout>(opts.dropout));
}

Tensor TransformerBlock::forward(const Tensor& x) { return forward(x, Tensor(), Tensor()); }

Tensor TransformerBlock::forward(const Tensor& x, const Tensor& attn_mask,
                                 const Tensor& key_padding_mask) {
  const Tensor h = (*norm1)(x);
  const Tensor a = std::get<0>(self_attn->forward(h, h, h,
                                                  {.key_padding_mask = key_padding_mask,
                                                   .need_weights = false,
                                                   .attn_mask = attn_mask,
                                                   .is_causal = options.causal}));
  const Tensor y = x + (*dropout1)(a);
  const Tensor hidden = (*linear1)((*norm2)(y));
  const Tensor act = options.activation == "gelu" ? gelu(hidden) : relu(hidden);
  return y + (*dropout2)((*linear2)((*dropout)(act)));
}

std::string TransformerBlock::extra_repr() const {
  std::ostringstream os;
  os << "dim_feedforward=" << options.dim_feedforward << ", activation=" << options.activation;
  if (options.causal) os << ", causal=true";
  return os.str();
}

}  // namespace tg::nn
