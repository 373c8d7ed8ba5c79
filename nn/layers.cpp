#include <tapegrad/nn/layers.h>

#include <cmath>
#include <sstream>
#include <tuple>

#include <tapegrad/core/error.h>
#include <tapegrad/core/grad_mode.h>
#include <tapegrad/generated/functions.h>
#include <tapegrad/nn/init.h>
#include <tapegrad/ops/factories.h>
#include <tapegrad/ops/operators.h>

namespace tg::nn {

namespace {
template <typename... Parts> std::string cat(Parts&&... parts) {
  std::ostringstream os;
  (os << ... << parts);
  return os.str();
}
}  // namespace

// ---- Linear ----------------------------------------------------------------------------------

Linear::Linear(int64_t in, int64_t out, bool with_bias, DType dtype)
    : Module("Linear"), in_features(in), out_features(out) {
  TG_CHECK(in >= 0 && out >= 0, ValueError, "Linear", "sizes must be >= 0, got in_features=", in,
           ", out_features=", out);
  weight = register_parameter("weight", empty({out, in}, dtype));
  init::kaiming_uniform_(weight, std::sqrt(5.0));
  if (with_bias) {
    bias = register_parameter("bias", empty({out}, dtype));
    const double bound = in > 0 ? 1.0 / std::sqrt(static_cast<double>(in)) : 0.0;
    init::uniform_(bias, -bound, bound);
  }
}

Tensor Linear::forward(const Tensor& x) {
  TG_CHECK(x.dim() >= 1 && x.size(-1) == in_features, ValueError, "Linear",
           "expected input with last dim ", in_features, ", got shape ", x.shape());
  return linear(x, weight, bias);
}

std::string Linear::extra_repr() const {
  return cat("in_features=", in_features, ", out_features=", out_features,
             ", bias=", bias.defined() ? "true" : "false");
}

// ---- Sequential ------------------------------------------------------------------------------

Sequential::Sequential(std::initializer_list<std::shared_ptr<Module>> modules) : Sequential() {
  for (const auto& m : modules) push_back(m);
}

Sequential& Sequential::push_back(std::shared_ptr<Module> module) {
  add_child(std::to_string(layers_.size()), module);
  layers_.push_back(std::move(module));
  return *this;
}

Tensor Sequential::forward(const Tensor& x) {
  Tensor y = x;
  for (const auto& layer : layers_) y = layer->forward(y);
  return y;
}

// ---- activations -----------------------------------------------------------------------------

Tensor ReLU::forward(const Tensor& x) { return relu(x); }
Tensor Tanh::forward(const Tensor& x) { return tanh(x); }
Tensor Sigmoid::forward(const Tensor& x) { return sigmoid(x); }

GELU::GELU(std::string approx) : Module("GELU"), approximate(std::move(approx)) {}
Tensor GELU::forward(const Tensor& x) { return gelu(x, approximate); }
std::string GELU::extra_repr() const { return cat("approximate='", approximate, "'"); }

LeakyReLU::LeakyReLU(double slope) : Module("LeakyReLU"), negative_slope(slope) {}
Tensor LeakyReLU::forward(const Tensor& x) { return leaky_relu(x, negative_slope); }
std::string LeakyReLU::extra_repr() const { return cat("negative_slope=", negative_slope); }

// ---- Dropout ---------------------------------------------------------------------------------

Dropout::Dropout(double prob) : Module("Dropout"), p(prob) {
  TG_CHECK(p >= 0.0 && p <= 1.0, ValueError, "Dropout", "p must be in [0, 1], got ", p);
}
Tensor Dropout::forward(const Tensor& x) {
  if (!is_training() || p == 0.0) return x;
  return std::get<0>(dropout(x, p, true));
}
std::string Dropout::extra_repr() const { return cat("p=", p); }

// ---- Embedding -------------------------------------------------------------------------------

Embedding::Embedding(int64_t num, int64_t dim, std::optional<int64_t> pad, DType dtype)
    : Module("Embedding"), num_embeddings(num), embedding_dim(dim), padding_idx(pad) {
  TG_CHECK(num >= 0 && dim >= 0, ValueError, "Embedding", "sizes must be >= 0, got ", num, ", ",
           dim);
  if (padding_idx) {
    TG_CHECK(*padding_idx >= -num && *padding_idx < num, IndexError, "Embedding", "padding_idx ",
             *padding_idx, " is out of range for ", num, " embeddings");
    if (*padding_idx < 0) *padding_idx += num;
  }
  weight = register_parameter("weight", empty({num, dim}, dtype));
  init::normal_(weight);
  if (padding_idx) {
    NoGradGuard no_grad;
    weight.select(0, *padding_idx).fill_(0);
  }
}

Tensor Embedding::forward(const Tensor& indices) { return embedding(weight, indices, padding_idx); }

std::string Embedding::extra_repr() const {
  std::string s = cat(num_embeddings, ", ", embedding_dim);
  if (padding_idx) s += cat(", padding_idx=", *padding_idx);
  return s;
}

// ---- LayerNorm -------------------------------------------------------------------------------

LayerNorm::LayerNorm(std::vector<int64_t> shape, double epsilon, bool affine, DType dtype)
    : Module("LayerNorm"), normalized_shape(std::move(shape)), eps(epsilon) {
  if (affine) {
    weight = register_parameter("weight", ones(normalized_shape, dtype));
    bias = register_parameter("bias", zeros(normalized_shape, dtype));
  }
}

Tensor LayerNorm::forward(const Tensor& x) {
  return layer_norm(x, normalized_shape, weight, bias, eps);
}

std::string LayerNorm::extra_repr() const {
  std::string s = "[";
  for (size_t i = 0; i < normalized_shape.size(); ++i) s += cat(i ? ", " : "", normalized_shape[i]);
  return s + cat("], eps=", eps, ", elementwise_affine=", weight.defined() ? "true" : "false");
}

// ---- MLP -------------------------------------------------------------------------------------

std::shared_ptr<Sequential> MLP(const std::vector<int64_t>& sizes, const MLPOptions& options) {
  TG_CHECK(sizes.size() >= 2, ValueError, "MLP", "needs at least an input and an output size, got ",
           sizes.size(), " sizes");
  auto activation = [&]() -> std::shared_ptr<Module> {
    const std::string& a = options.activation;
    if (a == "relu") return std::make_shared<ReLU>();
    if (a == "tanh") return std::make_shared<Tanh>();
    if (a == "sigmoid") return std::make_shared<Sigmoid>();
    if (a == "gelu") return std::make_shared<GELU>();
    fail<ValueError>("MLP", "activation must be one of relu, tanh, sigmoid, gelu; got '", a, "'");
  };
  activation();  // validate the name even for a single layer
  auto net = std::make_shared<Sequential>();
  for (size_t i = 0; i + 1 < sizes.size(); ++i) {
    net->push_back(std::make_shared<Linear>(sizes[i], sizes[i + 1], true, options.dtype));
    if (i + 2 < sizes.size()) {
      net->push_back(activation());
      if (options.dropout > 0) net->push_back(std::make_shared<Dropout>(options.dropout));
    }
  }
  return net;
}

}  // namespace tg::nn
