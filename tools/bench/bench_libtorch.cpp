// libtorch's adapter for the case list of cases.h (bench_tapegrad.cpp is tapegrad's), with the
// same interface, each function a one-line forward to libtorch's API.
#include <torch/torch.h>

#include <limits>
#include <utility>

#include "cases.h"

namespace tg_bench {
namespace {

struct Libtorch {
  using Tensor = torch::Tensor;
  using Shape = torch::IntArrayRef;

  static void seed(uint64_t s) { torch::manual_seed(s); }
  static Tensor rand(Shape shape) { return torch::rand(shape); }
  static Tensor randn(Shape shape) { return torch::randn(shape); }
  static Tensor randint(int64_t high, Shape shape) { return torch::randint(0, high, shape); }
  static Tensor full(Shape shape, double v) { return torch::full(shape, v); }
  static Tensor floats(std::vector<float> v) { return torch::tensor(v); }
  static Tensor scalar(double v) { return torch::scalar_tensor(v, torch::kFloat32); }
  static void clear_grad(const Tensor& t) { t.mutable_grad().reset(); }
  static void set_grad(const Tensor& t, const Tensor& g) { t.mutable_grad() = g; }
  template <class F> static void parallel_for(int64_t begin, int64_t end, int64_t grain, F f) {
    at::parallel_for(begin, end, grain, f);
  }

  static Tensor add(const Tensor& a, const Tensor& b) { return torch::add(a, b); }
  static Tensor mul(const Tensor& a, const Tensor& b) { return torch::mul(a, b); }
  static void add_(const Tensor& a, const Tensor& b) { a.add_(b); }
  static void mul_(const Tensor& a, const Tensor& b) { a.mul_(b); }
  static Tensor exp(const Tensor& x) { return torch::exp(x); }
  static Tensor log(const Tensor& x) { return torch::log(x); }
  static Tensor tanh(const Tensor& x) { return torch::tanh(x); }
  static Tensor sigmoid(const Tensor& x) { return torch::sigmoid(x); }
  static Tensor gelu(const Tensor& x, const char* approximate) {
    return torch::gelu(x, approximate);
  }
  static Tensor log1p(const Tensor& x) { return torch::log1p(x); }
  static Tensor expm1(const Tensor& x) { return torch::expm1(x); }
  static Tensor erf(const Tensor& x) { return torch::erf(x); }
  static Tensor rsqrt(const Tensor& x) { return torch::rsqrt(x); }
  static Tensor pow(const Tensor& x, const Tensor& y) { return torch::pow(x, y); }
  static Tensor pow(const Tensor& x, double y) { return torch::pow(x, y); }
  static Tensor sum(const Tensor& x) { return torch::sum(x); }
  static Tensor sum(const Tensor& x, int64_t dim) { return torch::sum(x, {dim}); }
  static Tensor mean(const Tensor& x, int64_t dim, bool keepdim) {
    return torch::mean(x, {dim}, keepdim);
  }
  static Tensor amax(const Tensor& x, int64_t dim) { return torch::amax(x, {dim}); }
  static Tensor softmax(const Tensor& x, int64_t dim) { return torch::softmax(x, dim); }
  static Tensor log_softmax(const Tensor& x, int64_t dim) { return torch::log_softmax(x, dim); }
  static Tensor layer_norm(const Tensor& x, Shape shape, const Tensor& w, const Tensor& b) {
    return torch::layer_norm(x, shape, w, b);
  }
  static Tensor cross_entropy(const Tensor& logits, const Tensor& target) {
    return torch::nn::functional::cross_entropy(logits, target);
  }
  static Tensor embedding(const Tensor& w, const Tensor& ids) { return torch::embedding(w, ids); }
  static Tensor matmul(const Tensor& a, const Tensor& b) { return torch::matmul(a, b); }
  static Tensor linear(const Tensor& x, const Tensor& w, const Tensor& b) {
    return torch::linear(x, w, b);
  }
  static Tensor transpose(const Tensor& x, int64_t d0, int64_t d1) {
    return torch::transpose(x, d0, d1);
  }
  static Tensor contiguous(const Tensor& x) { return x.contiguous(); }
  static Tensor permute(const Tensor& x, Shape dims) { return x.permute(dims); }
  static Tensor cumsum(const Tensor& x, int64_t dim) { return torch::cumsum(x, dim); }
  static Tensor max_index(const Tensor& x, int64_t dim) { return std::get<1>(torch::max(x, dim)); }
  static Tensor prod(const Tensor& x, int64_t dim) { return torch::prod(x, dim); }
  static Tensor topk_values(const Tensor& x, int64_t k, int64_t dim) {
    return std::get<0>(torch::topk(x, k, dim));
  }
  static Tensor sort_values(const Tensor& x, int64_t dim) {
    return std::get<0>(torch::sort(x, dim));
  }
  static Tensor gt(const Tensor& a, const Tensor& b) { return torch::gt(a, b); }
  static Tensor where(const Tensor& c, const Tensor& a, const Tensor& b) {
    return torch::where(c, a, b);
  }
  static Tensor conv2d(const Tensor& x, const Tensor& w, const Tensor& b, int64_t stride,
                       int64_t padding, int64_t groups = 1) {
    return torch::conv2d(x, w, b, stride, padding, 1, groups);
  }
  static Tensor cat(const std::vector<Tensor>& ts, int64_t dim) { return torch::cat(ts, dim); }
  static Tensor group_norm(const Tensor& x, int64_t groups, const Tensor& w, const Tensor& b) {
    return torch::group_norm(x, groups, w, b);
  }
  static Tensor batch_norm_train(const Tensor& x, const Tensor& w, const Tensor& b) {
    return torch::batch_norm(x, w, b, {}, {}, true, 0.1, 1e-5, false);
  }
  static Tensor adaptive_avg_pool2d(const Tensor& x, Shape size) {
    return torch::adaptive_avg_pool2d(x, size);
  }
  static Tensor leaky_relu(const Tensor& x) { return torch::leaky_relu(x); }
  static Tensor one_hot(const Tensor& ids, int64_t classes) { return torch::one_hot(ids, classes); }
  static Tensor nll_loss(const Tensor& logp, const Tensor& target) {
    return torch::nll_loss(logp, target);
  }
  static Tensor bce_with_logits(const Tensor& x, const Tensor& target) {
    return torch::binary_cross_entropy_with_logits(x, target);
  }
  static Tensor expand(const Tensor& x, Shape shape) { return x.expand(shape); }
  static Tensor to_int64(const Tensor& x) { return x.to(torch::kInt64); }
  static Tensor to_float64(const Tensor& x) { return x.to(torch::kFloat64); }
  static Tensor relu(const Tensor& x) { return torch::relu(x); }
  static Tensor div(const Tensor& a, const Tensor& b) { return torch::div(a, b); }
  static Tensor baddbmm(const Tensor& c, const Tensor& a, const Tensor& b) {
    return torch::baddbmm(c, a, b);
  }
  static Tensor conv1d(const Tensor& x, const Tensor& w, int64_t padding, int64_t groups = 1,
                       int64_t stride = 1) {
    return torch::conv1d(x, w, {}, stride, padding, 1, groups);
  }
  static Tensor logical_not(const Tensor& mask) { return torch::logical_not(mask); }
  static Tensor masked_fill(const Tensor& a, const Tensor& mask, double v) {
    return torch::masked_fill(a, mask, v);
  }

  static Tensor masked_scatter(const Tensor& self, const Tensor& mask, const Tensor& source) {
    return torch::masked_scatter(self, mask, source);
  }
  static Tensor index_reduce(const Tensor& self, int64_t dim, const Tensor& index,
                             const Tensor& source, const char* reduce, bool include_self) {
    return torch::index_reduce(self, dim, index, source, reduce, include_self);
  }
  static Tensor scatter_reduce(const Tensor& self, int64_t dim, const Tensor& index,
                               const Tensor& src, const char* reduce, bool include_self) {
    return torch::scatter_reduce(self, dim, index, src, reduce, include_self);
  }
  static Tensor index_fill(const Tensor& self, int64_t dim, const Tensor& index,
                           const Tensor& value) {
    return torch::index_fill(self, dim, index, value);
  }
  static Tensor index_add(const Tensor& self, int64_t dim, const Tensor& index,
                          const Tensor& source) {
    return torch::index_add(self, dim, index, source);
  }
  static Tensor gather(const Tensor& self, int64_t dim, const Tensor& index) {
    return torch::gather(self, dim, index);
  }
  static Tensor index_select(const Tensor& self, int64_t dim, const Tensor& index) {
    return torch::index_select(self, dim, index);
  }

  // The same MLP as tg::nn::MLP: Linear layers with ReLU between them.
  struct Mlp {
    explicit Mlp(const std::vector<int64_t>& sizes) {
      for (size_t i = 0; i + 1 < sizes.size(); ++i) {
        if (i > 0) module->push_back(torch::nn::ReLU());
        module->push_back(torch::nn::Linear(sizes[i], sizes[i + 1]));
      }
    }
    Tensor forward(const Tensor& x) { return module->forward(x); }
    std::vector<Tensor> parameters() const { return module->parameters(); }
    torch::nn::Sequential module;
  };
  // examples/makemore's model as tapegrad's CharTransformer: pre-norm causal blocks written out
  // (libtorch 1.13's C++ TransformerEncoderLayer is post-norm only, and its MultiheadAttention
  // takes [T, B, E]).
  struct CharTransformer {
    struct Block {
      torch::nn::LayerNorm norm1{torch::nn::LayerNormOptions({64})};
      torch::nn::LayerNorm norm2{torch::nn::LayerNormOptions({64})};
      torch::nn::MultiheadAttention attn{torch::nn::MultiheadAttentionOptions(64, 4)};
      torch::nn::Linear linear1{64, 256}, linear2{256, 64};
    };
    Tensor forward(const Tensor& tokens) {
      Tensor h = token(tokens) + position(torch::arange(tokens.size(1)));
      for (Block& b : blocks) {
        const Tensor a = b.norm1(h).transpose(0, 1);
        const Tensor none;
        h = h + std::get<0>(b.attn->forward(a, a, a, none, /*need_weights=*/false, causal))
                    .transpose(0, 1);
        h = h + b.linear2(torch::relu(b.linear1(b.norm2(h))));
      }
      return head(norm(h)).reshape({-1, 27});
    }
    std::vector<Tensor> parameters() const {
      std::vector<Tensor> all;
      auto add = [&](const torch::nn::Module& m) {
        for (const Tensor& p : m.parameters()) all.push_back(p);
      };
      add(*token);
      add(*position);
      for (const Block& b : blocks) {
        add(*b.norm1);
        add(*b.attn);
        add(*b.norm2);
        add(*b.linear1);
        add(*b.linear2);
      }
      add(*norm);
      add(*head);
      return all;
    }
    torch::nn::Embedding token{27, 64}, position{16, 64};
    std::vector<Block> blocks = std::vector<Block>(2);
    torch::nn::LayerNorm norm{torch::nn::LayerNormOptions({64})};
    torch::nn::Linear head{64, 27};
    Tensor causal = torch::full({16, 16}, -std::numeric_limits<float>::infinity()).triu(1);
  };
  static void clip_grad_norm(const std::vector<Tensor>& params, double max_norm) {
    torch::nn::utils::clip_grad_norm_(params, max_norm);
  }
  // examples/digits_cnn's model, in torch::nn.
  struct DigitsCnn {
    DigitsCnn() {
      namespace nn = torch::nn;
      module->push_back(nn::Conv2d(nn::Conv2dOptions(1, 16, 3).padding(1)));
      module->push_back(nn::BatchNorm2d(16));
      module->push_back(nn::ReLU());
      module->push_back(nn::Conv2d(nn::Conv2dOptions(16, 32, 3).padding(1)));
      module->push_back(nn::BatchNorm2d(32));
      module->push_back(nn::ReLU());
      module->push_back(nn::MaxPool2d(nn::MaxPool2dOptions(2)));
      module->push_back(nn::Flatten());
      module->push_back(nn::Linear(32 * 4 * 4, 10));
    }
    Tensor forward(const Tensor& x) { return module->forward(x); }
    std::vector<Tensor> parameters() const { return module->parameters(); }
    torch::nn::Sequential module;
  };
  static torch::optim::SGD sgd(std::vector<Tensor> params, double lr) {
    return torch::optim::SGD(std::move(params), torch::optim::SGDOptions(lr));
  }
  static torch::optim::AdamW adamw(std::vector<Tensor> params) {
    return torch::optim::AdamW(
        std::move(params),
        torch::optim::AdamWOptions(1e-3).betas({0.9, 0.999}).eps(1e-8).weight_decay(1e-2));
  }
};

}  // namespace

std::vector<Case> libtorch_cases() { return all_cases<Libtorch>(); }

void libtorch_set_num_threads(int n) {
  at::set_num_threads(n);
  at::set_num_interop_threads(n);
}

}  // namespace tg_bench
