#pragma once
// tg::nn::Module: a named tree of parameters, buffers and submodules, as torch.nn.Module.
//
//   struct Net : tg::nn::Module {
//     std::shared_ptr<tg::nn::Linear> fc1, fc2;
//     Net() : Module("Net") {
//       fc1 = register_module("fc1", std::make_shared<tg::nn::Linear>(4, 8));
//       fc2 = register_module("fc2", std::make_shared<tg::nn::Linear>(8, 3));
//     }
//     tg::Tensor forward(const tg::Tensor& x) override { return (*fc2)(tg::relu((*fc1)(x))); }
//   };
//
// Parameters are leaf tensors that require grad; their names ("fc1.weight") are also set on the
// tensors, so graph pictures (tg::autograd::to_dot) show them.
#include <iosfwd>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include <tapegrad/generated/tensor.h>
#include <tapegrad/nn/state_dict.h>

namespace tg::nn {

using NamedTensors = std::vector<std::pair<std::string, Tensor>>;

class Module {
 public:
  explicit Module(std::string type_name) : type_name_(std::move(type_name)) {}
  virtual ~Module() = default;
  Module(const Module&) = delete;
  Module& operator=(const Module&) = delete;

  // The computation. Modules with one input override this; others add their own call operator.
  virtual Tensor forward(const Tensor& input);
  Tensor operator()(const Tensor& input) { return forward(input); }

  // Parameters and buffers of this module and all submodules, depth first, in registration order.
  std::vector<Tensor> parameters() const;
  NamedTensors named_parameters() const;
  NamedTensors named_buffers() const;
  std::vector<std::pair<std::string, std::shared_ptr<Module>>> named_children() const {
    return children_;
  }
  int64_t num_parameters() const;  // total element count

  // Parameters and buffers by full name. load_state_dict copies values into the existing tensors
  // (so references held elsewhere, e.g. by an optimizer, stay valid), from any device; with
  // strict, missing or unexpected names and any shape mismatch are errors, and nothing is
  // changed.
  StateDict state_dict() const;
  void load_state_dict(const StateDict& state, bool strict = true);

  // Training mode (Dropout drops only in training). Applies to all submodules.
  void train(bool on = true);
  void eval() { train(false); }
  bool is_training() const { return training_; }

  void zero_grad();  // drops every parameter's .grad()

  // Moves every parameter and buffer of this module and its submodules (and any parameter's
  // .grad()) to device, in place, as torch's module.to(device): each tensor keeps its identity,
  // so handles held elsewhere (a layer's own members such as Linear::weight, an optimizer's
  // parameter list) see the moved data. Returns *this. Move a model before making its
  // optimizer, or the optimizer moves its buffers at its next step.
  Module& to(Device device);

  const std::string& type_name() const { return type_name_; }
  // One line describing this module's own settings, e.g. "in_features=4, out_features=8".
  virtual std::string extra_repr() const { return {}; }
  // A tree printout like PyTorch's repr.
  std::string to_string() const;

 protected:
  // Registers a parameter (made a leaf that requires grad) and returns it.
  Tensor register_parameter(const std::string& name, Tensor value);
  // Registers a tensor saved in state_dict that is not trained (e.g. running statistics).
  Tensor register_buffer(const std::string& name, Tensor value);
  template <typename M>
  std::shared_ptr<M> register_module(const std::string& name, std::shared_ptr<M> module) {
    add_child(name, module);
    return module;
  }
  void add_child(const std::string& name, std::shared_ptr<Module> module);

 private:
  void collect(const std::string& prefix, NamedTensors& out, bool buffers) const;
  void rename_tensors(const std::string& prefix);  // sets tensor names to full dotted names
  void print(std::ostream& os, int indent) const;

  std::string type_name_;
  NamedTensors parameters_, buffers_;
  std::vector<std::pair<std::string, std::shared_ptr<Module>>> children_;
  bool training_ = true;
};

std::ostream& operator<<(std::ostream& os, const Module& m);

}  // namespace tg::nn
