#pragma once
// The standard layers: Linear, Sequential, activations, Dropout, Embedding, LayerNorm and an MLP
// helper. Initialisation follows PyTorch's defaults.
#include <cstdint>
#include <initializer_list>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include <tapegrad/nn/module.h>

namespace tg::nn {

// y = x W^T + b, W of shape [out, in]. W and b ~ U(-1/sqrt(in), 1/sqrt(in)) (Kaiming-uniform
// with a = sqrt(5), as torch.nn.Linear).
class Linear : public Module {
 public:
  Linear(int64_t in_features, int64_t out_features, bool bias = true, DType dtype = kFloat32);
  Tensor forward(const Tensor& x) override;
  std::string extra_repr() const override;

  Tensor weight, bias;  // bias is undefined when built without one
  int64_t in_features, out_features;
};

// Runs its modules in order; they are named "0", "1", ...
class Sequential : public Module {
 public:
  Sequential() : Module("Sequential") {}
  Sequential(std::initializer_list<std::shared_ptr<Module>> modules);
  Sequential& push_back(std::shared_ptr<Module> module);
  Tensor forward(const Tensor& x) override;
  size_t size() const { return layers_.size(); }
  Module& operator[](size_t i) const { return *layers_.at(i); }

 private:
  std::vector<std::shared_ptr<Module>> layers_;
};

class ReLU : public Module {
 public:
  ReLU() : Module("ReLU") {}
  Tensor forward(const Tensor& x) override;
};

class Tanh : public Module {
 public:
  Tanh() : Module("Tanh") {}
  Tensor forward(const Tensor& x) override;
};

class Sigmoid : public Module {
 public:
  Sigmoid() : Module("Sigmoid") {}
  Tensor forward(const Tensor& x) override;
};

class GELU : public Module {
 public:
  explicit GELU(std::string approximate = "none");
  Tensor forward(const Tensor& x) override;
  std::string extra_repr() const override;
  std::string approximate;
};

class LeakyReLU : public Module {
 public:
  explicit LeakyReLU(double negative_slope = 0.01);
  Tensor forward(const Tensor& x) override;
  std::string extra_repr() const override;
  double negative_slope;
};

// Zeroes each element with probability p in training mode (scaling the rest by 1/(1-p));
// the identity in eval mode.
class Dropout : public Module {
 public:
  explicit Dropout(double p = 0.5);
  Tensor forward(const Tensor& x) override;
  std::string extra_repr() const override;
  double p;
};

// A lookup table: indices of any shape -> their rows of weight [num_embeddings, dim], N(0, 1) init.
// The row padding_idx starts at zero and gets no gradient.
class Embedding : public Module {
 public:
  Embedding(int64_t num_embeddings, int64_t embedding_dim,
            std::optional<int64_t> padding_idx = std::nullopt, DType dtype = kFloat32);
  Tensor forward(const Tensor& indices) override;
  std::string extra_repr() const override;
  Tensor weight;
  int64_t num_embeddings, embedding_dim;
  std::optional<int64_t> padding_idx;
};

// Normalises over the trailing dims given by normalized_shape; weight = 1, bias = 0 at start.
class LayerNorm : public Module {
 public:
  explicit LayerNorm(std::vector<int64_t> normalized_shape, double eps = 1e-5,
                     bool elementwise_affine = true, DType dtype = kFloat32);
  Tensor forward(const Tensor& x) override;
  std::string extra_repr() const override;
  Tensor weight, bias;  // undefined without elementwise_affine
  std::vector<int64_t> normalized_shape;
  double eps;
};

// A multilayer perceptron: Linear layers of the given sizes with an activation (and optional
// dropout) between them, none after the last. MLP({64, 128, 10}) = Linear(64,128), ReLU,
// Linear(128,10).
struct MLPOptions {
  std::string activation = "relu";  // relu | tanh | sigmoid | gelu
  double dropout = 0.0;
  DType dtype = kFloat32;
};
std::shared_ptr<Sequential> MLP(const std::vector<int64_t>& sizes, const MLPOptions& options = {});

}  // namespace tg::nn
