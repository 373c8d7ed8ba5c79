// tapegrad's adapter for the case list of cases.h (bench_libtorch.cpp is libtorch's): the
// factories, grad handling and ops the cases call, each a one-line forward to tapegrad's API.
#include <tapegrad/tapegrad.h>

#include <memory>
#include <utility>

#include "cases.h"

namespace tg_bench {
namespace {

struct Tapegrad {
  using Tensor = tg::Tensor;
  using Shape = tg::IntArrayRef;

  static void seed(uint64_t s) { tg::manual_seed(s); }
  static Tensor rand(Shape shape) { return tg::rand(shape); }
  static Tensor randn(Shape shape) { return tg::randn(shape); }
  static Tensor randint(int64_t high, Shape shape) { return tg::randint(0, high, shape); }
  static Tensor full(Shape shape, double v) { return tg::full(shape, v); }
  static Tensor floats(std::vector<float> v) {
    const auto n = static_cast<int64_t>(v.size());
    return tg::tensor(v, {n});
  }
  static Tensor scalar(double v) { return tg::scalar_tensor(v, tg::kFloat32); }
  static void clear_grad(const Tensor& t) { t.set_grad(Tensor()); }
  static void set_grad(const Tensor& t, const Tensor& g) { t.set_grad(g); }
  template <class F> static void parallel_for(int64_t begin, int64_t end, int64_t grain, F f) {
    tg::parallel_for(begin, end, grain, f);
  }

  static Tensor add(const Tensor& a, const Tensor& b) { return tg::add(a, b); }
  static Tensor mul(const Tensor& a, const Tensor& b) { return tg::mul(a, b); }
  static void add_(const Tensor& a, const Tensor& b) { tg::add_(a, b); }
  static void mul_(const Tensor& a, const Tensor& b) { tg::mul_(a, b); }
  static Tensor exp(const Tensor& x) { return tg::exp(x); }
  static Tensor log(const Tensor& x) { return tg::log(x); }
  static Tensor tanh(const Tensor& x) { return tg::tanh(x); }
  static Tensor sigmoid(const Tensor& x) { return tg::sigmoid(x); }
  static Tensor gelu(const Tensor& x, const char* approximate) { return tg::gelu(x, approximate); }
  static Tensor log1p(const Tensor& x) { return tg::log1p(x); }
  static Tensor expm1(const Tensor& x) { return tg::expm1(x); }
  static Tensor erf(const Tensor& x) { return tg::erf(x); }
  static Tensor rsqrt(const Tensor& x) { return tg::rsqrt(x); }
  static Tensor pow(const Tensor& x, const Tensor& y) { return tg::pow(x, y); }
  static Tensor pow(const Tensor& x, double y) { return tg::pow(x, y); }
  static Tensor sum(const Tensor& x) { return tg::sum(x); }
  static Tensor sum(const Tensor& x, int64_t dim) { return tg::sum(x, {dim}); }
  static Tensor mean(const Tensor& x, int64_t dim, bool keepdim) {
    return tg::mean(x, {dim}, keepdim);
  }
  static Tensor amax(const Tensor& x, int64_t dim) { return tg::amax(x, {dim}); }
  static Tensor softmax(const Tensor& x, int64_t dim) { return tg::softmax(x, dim); }
  static Tensor log_softmax(const Tensor& x, int64_t dim) { return tg::log_softmax(x, dim); }
  static Tensor layer_norm(const Tensor& x, Shape shape, const Tensor& w, const Tensor& b) {
    return tg::layer_norm(x, shape, w, b);
  }
  static Tensor cross_entropy(const Tensor& logits, const Tensor& target) {
    return tg::cross_entropy(logits, target);
  }
  static Tensor embedding(const Tensor& w, const Tensor& ids) { return tg::embedding(w, ids); }
  static Tensor matmul(const Tensor& a, const Tensor& b) { return tg::matmul(a, b); }
  static Tensor linear(const Tensor& x, const Tensor& w, const Tensor& b) {
    return tg::linear(x, w, b);
  }
  static Tensor transpose(const Tensor& x, int64_t d0, int64_t d1) {
    return tg::transpose(x, d0, d1);
  }
  static Tensor contiguous(const Tensor& x) { return x.contiguous(); }
  static Tensor permute(const Tensor& x, Shape dims) { return tg::permute(x, dims); }
  static Tensor cumsum(const Tensor& x, int64_t dim) { return tg::cumsum(x, dim); }
  static Tensor max_index(const Tensor& x, int64_t dim) { return std::get<1>(tg::max(x, dim)); }
  static Tensor prod(const Tensor& x, int64_t dim) { return tg::prod(x, dim); }
  static Tensor topk_values(const Tensor& x, int64_t k, int64_t dim) {
    return std::get<0>(tg::topk(x, k, dim));
  }
  static Tensor sort_values(const Tensor& x, int64_t dim) { return std::get<0>(tg::sort(x, dim)); }
  static Tensor gt(const Tensor& a, const Tensor& b) { return tg::gt(a, b); }
  static Tensor where(const Tensor& c, const Tensor& a, const Tensor& b) {
    return tg::where(c, a, b);
  }
  static Tensor conv2d(const Tensor& x, const Tensor& w, const Tensor& b, int64_t stride,
                       int64_t padding, int64_t groups = 1) {
    return tg::conv2d(x, w, b, {stride}, {padding}, {1}, groups);
  }
  static Tensor cat(const std::vector<Tensor>& ts, int64_t dim) { return tg::cat(ts, dim); }
  static Tensor group_norm(const Tensor& x, int64_t groups, const Tensor& w, const Tensor& b) {
    return tg::group_norm(x, groups, w, b);
  }
  static Tensor batch_norm_train(const Tensor& x, const Tensor& w, const Tensor& b) {
    return tg::batch_norm(x, {}, {}, w, b, true);
  }
  static Tensor adaptive_avg_pool2d(const Tensor& x, Shape size) {
    return tg::adaptive_avg_pool2d(x, size);
  }
  static Tensor leaky_relu(const Tensor& x) { return tg::leaky_relu(x); }
  static Tensor one_hot(const Tensor& ids, int64_t classes) { return tg::one_hot(ids, classes); }
  static Tensor nll_loss(const Tensor& logp, const Tensor& target) {
    return tg::nll_loss(logp, target);
  }
  static Tensor bce_with_logits(const Tensor& x, const Tensor& target) {
    return tg::binary_cross_entropy_with_logits(x, target);
  }
  static Tensor expand(const Tensor& x, Shape shape) { return x.expand(shape); }
  static Tensor to_int64(const Tensor& x) { return x.to(tg::kInt64); }
  static Tensor to_float64(const Tensor& x) { return x.to(tg::kFloat64); }
  static Tensor relu(const Tensor& x) { return tg::relu(x); }
  static Tensor div(const Tensor& a, const Tensor& b) { return tg::div(a, b); }
  static Tensor baddbmm(const Tensor& c, const Tensor& a, const Tensor& b) {
    return tg::baddbmm(c, a, b);
  }
  static Tensor conv1d(const Tensor& x, const Tensor& w, int64_t padding, int64_t groups = 1,
                       int64_t stride = 1) {
    return tg::conv1d(x, w, {}, {stride}, {padding}, {1}, groups);
  }
  static Tensor logical_not(const Tensor& mask) { return tg::logical_not(mask); }
  static Tensor masked_fill(const Tensor& a, const Tensor& mask, double v) {
    return tg::masked_fill_scalar(a, mask, v);
  }

  static Tensor masked_scatter(const Tensor& self, const Tensor& mask, const Tensor& source) {
    return tg::masked_scatter(self, mask, source);
  }
  static Tensor index_reduce(const Tensor& self, int64_t dim, const Tensor& index,
                             const Tensor& source, const char* reduce, bool include_self) {
    return tg::index_reduce(self, dim, index, source, reduce, include_self);
  }
  static Tensor scatter_reduce(const Tensor& self, int64_t dim, const Tensor& index,
                               const Tensor& src, const char* reduce, bool include_self) {
    return tg::scatter_reduce(self, dim, index, src, reduce, include_self);
  }
  static Tensor index_fill(const Tensor& self, int64_t dim, const Tensor& index,
                           const Tensor& value) {
    return tg::index_fill(self, dim, index, value);
  }
  static Tensor index_add(const Tensor& self, int64_t dim, const Tensor& index,
                          const Tensor& source) {
    return tg::index_add(self, dim, index, source);
  }
  static Tensor gather(const Tensor& self, int64_t dim, const Tensor& index) {
    return tg::gather(self, dim, index);
  }
  static Tensor index_select(const Tensor& self, int64_t dim, const Tensor& index) {
    return tg::index_select(self, dim, index);
  }

  // An MLP of Linear layers with ReLU between them (tg::nn::MLP).
  struct Mlp {
    explicit Mlp(const std::vector<int64_t>& sizes) : module(tg::nn::MLP(sizes)) {}
    Tensor forward(const Tensor& x) { return (*module)(x); }
    std::vector<Tensor> parameters() const { return module->parameters(); }
    std::shared_ptr<tg::nn::Sequential> module;
  };
  // examples/makemore's model: token and position embeddings, 2 causal TransformerBlocks (64
  // dims, 4 heads, feed-forward 256, ReLU), a final LayerNorm and a linear head; logits
  // [B * T, 27].
  struct CharTransformer {
    CharTransformer() {
      for (int i = 0; i < 2; ++i)
        blocks.push_back(std::make_shared<tg::nn::TransformerBlock>(
            64, 4, tg::nn::TransformerBlockOptions{.causal = true}));
    }
    Tensor forward(const Tensor& tokens) {
      Tensor h = token(tokens) + position(tg::arange(tokens.size(1), tg::kInt64));
      for (const auto& block : blocks) h = (*block)(h);
      return head(norm(h)).reshape({-1, 27});
    }
    std::vector<Tensor> parameters() const {
      std::vector<Tensor> all;
      for (const tg::nn::Module* m :
           std::initializer_list<const tg::nn::Module*>{&token, &position, blocks[0].get(),
                                                        blocks[1].get(), &norm, &head})
        for (const Tensor& p : m->parameters()) all.push_back(p);
      return all;
    }
    tg::nn::Embedding token{27, 64}, position{16, 64};
    std::vector<std::shared_ptr<tg::nn::TransformerBlock>> blocks;
    tg::nn::LayerNorm norm{{64}};
    tg::nn::Linear head{64, 27};
  };
  static void clip_grad_norm(const std::vector<Tensor>& params, double max_norm) {
    tg::nn::utils::clip_grad_norm_(params, max_norm);
  }
  // examples/digits_cnn's model.
  struct DigitsCnn {
    DigitsCnn() {
      using namespace tg::nn;
      module = std::make_shared<Sequential>(std::initializer_list<std::shared_ptr<Module>>{
          std::make_shared<Conv2d>(1, 16, 3, ConvOptions{.padding = 1}),
          std::make_shared<BatchNorm2d>(16), std::make_shared<ReLU>(),
          std::make_shared<Conv2d>(16, 32, 3, ConvOptions{.padding = 1}),
          std::make_shared<BatchNorm2d>(32), std::make_shared<ReLU>(),
          std::make_shared<MaxPool2d>(2), std::make_shared<Flatten>(),
          std::make_shared<Linear>(32 * 4 * 4, 10)});
    }
    Tensor forward(const Tensor& x) { return (*module)(x); }
    std::vector<Tensor> parameters() const { return module->parameters(); }
    std::shared_ptr<tg::nn::Sequential> module;
  };
  static tg::nn::SGD sgd(std::vector<Tensor> params, double lr) {
    return tg::nn::SGD(std::move(params), {.lr = lr});
  }
  static tg::nn::AdamW adamw(std::vector<Tensor> params) {
    tg::nn::AdamOptions options;  // lr 1e-3, betas 0.9 / 0.999, eps 1e-8
    options.weight_decay = 1e-2;
    return tg::nn::AdamW(std::move(params), options);
  }
};

}  // namespace

std::vector<Case> tapegrad_cases() { return all_cases<Tapegrad>(); }

}  // namespace tg_bench
