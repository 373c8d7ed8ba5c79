// Checks of bmm, baddbmm and scaled_dot_product_attention (kernels: backends/cpu/attention.cpp).
#include <optional>

#include <tapegrad/core/scalar.h>
#include <tapegrad/ops/checks/common.h>

namespace tg::checks {

namespace {

void check_batch_matrix(const char* op, const char* name, const Tensor& t) {
  TG_CHECK(t.dim() == 3, ValueError, op, name,
           " must be a 3-D tensor [batch, rows, cols], got shape ", t.shape());
}

void check_same_dtype(const char* op, const char* name, const Tensor& t, const Tensor& first) {
  TG_CHECK(t.dtype() == first.dtype(), TypeError, op, name, " has dtype ", dtype_name(t.dtype()),
           ", expected ", dtype_name(first.dtype()), " (the dtype of the first argument)");
}

// [b, n, m] @ [b, m, p]: the shape of the product, after checking the operands.
Shape bmm_shape(const char* op, const char* name1, const Tensor& a, const char* name2,
                const Tensor& b) {
  check_batch_matrix(op, name1, a);
  check_batch_matrix(op, name2, b);
  check_same_dtype(op, name2, b, a);
  TG_CHECK(b.size(0) == a.size(0) && b.size(1) == a.size(2), ValueError, op, "expected ", name2,
           " of shape [", a.size(0), ", ", a.size(2), ", *] to multiply ", name1, " of shape ",
           a.shape(), ", got ", b.shape());
  return Shape{a.size(0), a.size(1), b.size(2)};
}

// A scaling factor of an op on dtype t: bool never, a floating one only for floating tensors.
void check_factor(const char* op, const char* name, const Scalar& s, DType t) {
  TG_CHECK(!s.is_bool(), TypeError, op, name, " must be a number, got a bool");
  TG_CHECK(is_floating(t) || !s.is_floating(), TypeError, op, name,
           " must be an integer for tensors of dtype ", dtype_name(t), ", got ", s);
}

}  // namespace

void bmm(const Tensor& self, const Tensor& mat2) { bmm_shape("bmm", "self", self, "mat2", mat2); }

void baddbmm(const Tensor& self, const Tensor& batch1, const Tensor& batch2, const Scalar& beta,
             const Scalar& alpha) {
  constexpr const char* op = "baddbmm";
  const Shape out = bmm_shape(op, "batch1", batch1, "batch2", batch2);
  check_same_dtype(op, "self", self, batch1);
  // self broadcasts to the product's shape (one way: the result never grows beyond it).
  bool fits = self.dim() <= 3;
  for (int64_t d = 1; fits && d <= self.dim(); ++d)
    fits = self.size(-d) == 1 || self.size(-d) == out[3 - d];
  TG_CHECK(fits, ValueError, op, "self of shape ", self.shape(),
           " does not broadcast to the product's shape ", out);
  check_factor(op, "beta", beta, self.dtype());
  check_factor(op, "alpha", alpha, self.dtype());
}

void scaled_dot_product_attention(const Tensor& query, const Tensor& key, const Tensor& value,
                                  const Tensor& attn_mask, double dropout_p, bool is_causal,
                                  const std::optional<Scalar>& scale) {
  constexpr const char* op = "scaled_dot_product_attention";
  for (const auto& [name, t] :
       {std::pair<const char*, const Tensor*>{"query", &query}, {"key", &key}, {"value", &value}})
    TG_CHECK(t->dim() >= 2, ValueError, op, name, " must have at least 2 dims [..., length, ",
             "features], got shape ", t->shape());
  check_same_dtype(op, "key", key, query);
  check_same_dtype(op, "value", value, query);
  TG_CHECK(key.size(-1) == query.size(-1), ValueError, op,
           "query and key must have the same feature size (last dim), got shapes ", query.shape(),
           " and ", key.shape());
  TG_CHECK(value.size(-2) == key.size(-2), ValueError, op,
           "key and value must have the same length (dim -2), got shapes ", key.shape(), " and ",
           value.shape());
  auto batch = [](const Tensor& t) { return Shape(t.shape().begin(), t.shape().end() - 2); };
  Shape attn_shape =
      broadcast_shapes(op, broadcast_shapes(op, batch(query), batch(key)), batch(value));
  attn_shape.push_back(query.size(-2));
  attn_shape.push_back(key.size(-2));
  if (attn_mask.defined()) {
    TG_CHECK(!is_causal, ValueError, op,
             "attn_mask must not be given with is_causal=true (the causal mask replaces it)");
    TG_CHECK(attn_mask.dtype() == kBool || attn_mask.dtype() == query.dtype(), TypeError, op,
             "attn_mask must be bool or have query's dtype ", dtype_name(query.dtype()), ", got ",
             dtype_name(attn_mask.dtype()));
    const int64_t n = static_cast<int64_t>(attn_shape.size());
    bool fits = attn_mask.dim() <= n;
    for (int64_t d = 1; fits && d <= attn_mask.dim(); ++d)
      fits = attn_mask.size(-d) == 1 || attn_mask.size(-d) == attn_shape[n - d];
    TG_CHECK(fits, ValueError, op, "attn_mask of shape ", attn_mask.shape(),
             " does not broadcast to the attention shape ", attn_shape);
  }
  TG_CHECK(dropout_p >= 0 && dropout_p <= 1, ValueError, op, "dropout_p must be in [0, 1], got ",
           dropout_p);
  if (scale) TG_CHECK(!scale->is_bool(), TypeError, op, "scale must be a number, got a bool");
}

}  // namespace tg::checks
