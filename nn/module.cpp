#include <tapegrad/nn/module.h>

#include <ostream>
#include <set>
#include <sstream>

#include <tapegrad/core/error.h>
#include <tapegrad/core/grad_mode.h>

namespace tg::nn {

namespace {

std::string join_name(const std::string& prefix, const std::string& name) {
  return prefix.empty() ? name : prefix + "." + name;
}

void check_name(const std::string& name, const NamedTensors& params, const NamedTensors& buffers,
                const std::vector<std::pair<std::string, std::shared_ptr<Module>>>& children) {
  TG_CHECK(!name.empty() && name.find('.') == std::string::npos, ValueError, "Module",
           "a name must be non-empty and contain no '.', got '", name, "'");
  auto taken = [&](const auto& list) {
    for (const auto& [n, _] : list)
      if (n == name) return true;
    return false;
  };
  TG_CHECK(!taken(params) && !taken(buffers) && !taken(children), ValueError, "Module", "name '",
           name, "' is already registered");
}

// Points t's TensorImpl at a copy of its data on device (torch's `param.data = ...`): the
// tensor's shape, dtype, name, requires_grad and gradient slot stay, its storage, strides and
// backend key change. A view loses its base: its new storage is its own.
void move_in_place(const Tensor& t, Device device) {
  if (t.device() == device) return;
  const Tensor moved = t.detach().to(device);
  TensorImpl& impl = *t.impl();
  impl.storage = moved.impl()->storage;
  impl.strides = moved.strides();
  impl.offset = moved.storage_offset();
  impl.view_base = nullptr;
  const bool tracked = impl.keys.has(DispatchKey::Autograd);
  impl.keys = tracked ? moved.key_set().add(DispatchKey::Autograd) : moved.key_set();
}

std::string shape_string(const Shape& s) {
  std::ostringstream os;
  os << "[";
  for (size_t i = 0; i < s.size(); ++i) os << (i ? ", " : "") << s[i];
  os << "]";
  return os.str();
}

}  // namespace

Tensor Module::forward(const Tensor&) {
  fail<Error>(type_name_.c_str(), "this module has no single-input forward()");
}

Tensor Module::register_parameter(const std::string& name, Tensor value) {
  check_name(name, parameters_, buffers_, children_);
  TG_CHECK(value.defined(), ValueError, "Module", "parameter '", name, "' is undefined");
  // A parameter is a leaf of its own: no history from the ops that initialised it.
  if (!value.is_leaf()) value = value.detach();
  value.requires_grad_(true);
  value.set_name(name);
  parameters_.emplace_back(name, value);
  return value;
}

Tensor Module::register_buffer(const std::string& name, Tensor value) {
  check_name(name, parameters_, buffers_, children_);
  TG_CHECK(value.defined(), ValueError, "Module", "buffer '", name, "' is undefined");
  value.set_name(name);
  buffers_.emplace_back(name, value);
  return value;
}

void Module::add_child(const std::string& name, std::shared_ptr<Module> module) {
  check_name(name, parameters_, buffers_, children_);
  TG_CHECK(module != nullptr, ValueError, "Module", "submodule '", name, "' is null");
  module->rename_tensors(name);
  children_.emplace_back(name, std::move(module));
}

void Module::rename_tensors(const std::string& prefix) {
  for (auto& [name, t] : parameters_) t.set_name(join_name(prefix, name));
  for (auto& [name, t] : buffers_) t.set_name(join_name(prefix, name));
  for (auto& [name, child] : children_) child->rename_tensors(join_name(prefix, name));
}

void Module::collect(const std::string& prefix, NamedTensors& out, bool buffers) const {
  for (const auto& [name, t] : buffers ? buffers_ : parameters_)
    out.emplace_back(join_name(prefix, name), t);
  for (const auto& [name, child] : children_) child->collect(join_name(prefix, name), out, buffers);
}

NamedTensors Module::named_parameters() const {
  NamedTensors out;
  collect("", out, false);
  return out;
}

NamedTensors Module::named_buffers() const {
  NamedTensors out;
  collect("", out, true);
  return out;
}

std::vector<Tensor> Module::parameters() const {
  std::vector<Tensor> out;
  for (auto& [_, t] : named_parameters()) out.push_back(t);
  return out;
}

int64_t Module::num_parameters() const {
  int64_t n = 0;
  for (const auto& t : parameters()) n += t.numel();
  return n;
}

StateDict Module::state_dict() const {
  StateDict out;
  for (auto& [name, t] : named_parameters()) out.emplace(name, t.detach());
  for (auto& [name, t] : named_buffers()) out.emplace(name, t.detach());
  return out;
}

void Module::load_state_dict(const StateDict& state, bool strict) {
  NamedTensors own = named_parameters();
  for (auto& entry : named_buffers()) own.push_back(entry);
  // Check everything first, so that a failed load changes nothing.
  std::set<std::string> known;
  for (const auto& [name, t] : own) {
    known.insert(name);
    auto it = state.find(name);
    if (it == state.end()) {
      TG_CHECK(!strict, ValueError, "load_state_dict", "missing key '", name, "'");
      continue;
    }
    TG_CHECK(it->second.defined() && it->second.shape() == t.shape(), ValueError, "load_state_dict",
             "'", name, "' has shape ",
             it->second.defined() ? shape_string(it->second.shape()) : "undefined",
             ", the module expects ", shape_string(t.shape()));
  }
  if (strict)
    for (const auto& [name, _] : state)
      TG_CHECK(known.count(name), ValueError, "load_state_dict", "unexpected key '", name, "'");
  NoGradGuard no_grad;
  for (auto& [name, t] : own) {
    auto it = state.find(name);
    // A state saved from (or loaded onto) another device is copied across: copy_ itself
    // refuses to mix devices.
    if (it != state.end()) t.copy_(it->second.to(t.device()));
  }
}

Module& Module::to(Device device) {
  NoGradGuard no_grad;
  for (auto& [_, t] : named_parameters()) {
    move_in_place(t, device);
    if (t.grad().defined()) t.set_grad(t.grad().to(device));
  }
  for (auto& [_, t] : named_buffers()) move_in_place(t, device);
  return *this;
}

void Module::train(bool on) {
  training_ = on;
  for (auto& [_, child] : children_) child->train(on);
}

void Module::zero_grad() {
  for (auto& t : parameters()) t.set_grad(Tensor());
}

void Module::print(std::ostream& os, int indent) const {
  os << type_name_ << "(" << extra_repr();
  if (children_.empty()) {
    os << ")";
    return;
  }
  os << "\n";
  for (const auto& [name, child] : children_) {
    os << std::string(indent + 2, ' ') << "(" << name << "): ";
    child->print(os, indent + 2);
    os << "\n";
  }
  os << std::string(indent, ' ') << ")";
}

std::string Module::to_string() const {
  std::ostringstream os;
  print(os, 0);
  return os.str();
}

std::ostream& operator<<(std::ostream& os, const Module& m) { return os << m.to_string(); }

}  // namespace tg::nn
