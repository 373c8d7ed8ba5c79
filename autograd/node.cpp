#include <tapegrad/autograd/node.h>

#include <tapegrad/autograd/meta.h>
#include <tapegrad/core/grad_mode.h>
#include <tapegrad/generated/functions.h>
#include <tapegrad/ops/operators.h>

namespace tg::autograd {

namespace {
__attribute__((tls_model("initial-exec"))) thread_local uint64_t tape_position = 0;
}

uint64_t Tape::next_sequence_nr() { return ++tape_position; }

// ---- gradient lists -----------------------------------------------------------------------------

namespace {
// Empty lists with a buffer; a few are enough (a backward pass holds one per queued node), and
// only short ones (a node with thousands of outputs would otherwise pin its list's memory).
struct SpareGradLists {
  static constexpr size_t kMax = 16, kMaxCapacity = 64;
  std::vector<std::vector<Tensor>> lists;
  ~SpareGradLists();
};
// The thread's spare lists, reached through a plain pointer: a thread_local with a destructor
// has a guard that costs a __tls_get_addr call on every use in a shared library.
__attribute__((tls_model("initial-exec"))) thread_local SpareGradLists* spare = nullptr;
__attribute__((tls_model("initial-exec"))) thread_local bool spare_freed = false;
SpareGradLists::~SpareGradLists() {  // at thread exit
  spare = nullptr;
  spare_freed = true;
}
// Null once the thread's exit freed them: lists are then made and dropped as usual.
SpareGradLists* spare_lists() {
  if (!spare && !spare_freed) [[unlikely]] {
    thread_local SpareGradLists owner;
    spare = &owner;
  }
  return spare;
}
}  // namespace

std::vector<Tensor> new_grad_list(size_t n) {
  SpareGradLists* s = spare_lists();
  if (!s || s->lists.empty()) return std::vector<Tensor>(n);
  std::vector<Tensor> list = std::move(s->lists.back());
  s->lists.pop_back();
  list.resize(n);
  return list;
}

void recycle_grad_list(std::vector<Tensor>&& list) {
  list.clear();
  SpareGradLists* s = spare_lists();
  if (s && list.capacity() > 0 && list.capacity() <= SpareGradLists::kMaxCapacity &&
      s->lists.size() < SpareGradLists::kMax)
    s->lists.push_back(std::move(list));
}

Node::Node() : sequence_nr(Tape::next_sequence_nr()) {}

namespace {
thread_local const std::shared_ptr<Node>* t_running_node = nullptr;
}  // namespace

RunningNode::RunningNode(const std::shared_ptr<Node>& owner) : previous_(t_running_node) {
  t_running_node = &owner;
}
RunningNode::~RunningNode() { t_running_node = previous_; }
const std::shared_ptr<Node>* RunningNode::current() { return t_running_node; }

// ---- saved tensors ----------------------------------------------------------------------------

SavedTensor::SavedTensor(const Tensor& t, bool is_output) : is_output_(is_output) {
  if (!t.defined()) return;
  saved_version_ = t.version();
  if (is_output) {
    data_ = t.detach();  // no history: the node must not own itself through its output
    output_nr_ = t.output_nr();
    requires_grad_ = t.requires_grad();
  } else {
    data_ = t;
  }
}

Tensor SavedTensor::unpack(const Node& owner) const {
  TG_CHECK(
      !released_, Error, owner.name(),
      "trying to backward through the graph a second time: its saved tensors were freed by the "
      "first backward; pass retain_graph=true to the first backward");
  if (!data_.defined()) return {};
  TG_CHECK(data_.version() == saved_version_, Error, owner.name(),
           "a tensor saved for backward was modified in place: it was saved at version ",
           saved_version_, " and is now at version ", data_.version(),
           " (clone it before the in-place op)");
  if (!is_output_ || !requires_grad_ || !GradMode::is_enabled()) return data_;
  // Under create_graph, the output comes back with this node as its history.
  Tensor out = data_.detach();
  AutogradMeta& meta = autograd_meta(*out.impl());
  const std::shared_ptr<Node>* running = RunningNode::current();
  TG_CHECK(running && running->get() == &owner, Error, owner.name(),
           "a saved output can be unpacked under create_graph only by the backward engine");
  meta.grad_fn = *running;
  meta.output_nr = output_nr_;
  out.impl()->keys = out.impl()->keys.add(DispatchKey::Autograd);
  return out;
}

std::vector<SavedTensor> save_list(const std::vector<Tensor>& tensors) {
  std::vector<SavedTensor> saved;
  saved.reserve(tensors.size());
  for (const auto& t : tensors) saved.emplace_back(t, false);
  return saved;
}

std::vector<Tensor> unpack_list(const std::vector<SavedTensor>& saved, const Node& owner) {
  std::vector<Tensor> out;
  out.reserve(saved.size());
  for (const auto& s : saved) out.push_back(s.unpack(owner));
  return out;
}

// ---- leaves -------------------------------------------------------------------------------------

AccumulateGrad::AccumulateGrad(const std::shared_ptr<TensorImpl>& leaf_impl) : leaf(leaf_impl) {
  sequence_nr = 0;  // accumulators run after every recorded op
  output_meta.push_back({leaf_impl->shape, leaf_impl->dtype, leaf_impl->storage->device});
}

std::vector<Tensor> AccumulateGrad::apply(std::vector<Tensor>&& grads) {
  std::shared_ptr<TensorImpl> leaf_impl = leaf.lock();
  if (!leaf_impl) return {};  // the leaf is gone: nobody can read its gradient
  Tensor g = std::move(grads[0]);
  AutogradMeta& meta = autograd_meta(*leaf_impl);
  for (const auto& hook : meta.leaf_hooks) {
    Tensor replaced = hook(g);
    if (replaced.defined()) g = replaced;
  }
  if (!g.defined()) return {};
  if (GradMode::is_enabled()) {  // create_graph: keep the gradient's own history
    meta.grad = meta.grad.defined() ? meta.grad + g : g;
    return {};
  }
  if (!meta.grad.defined()) {
    bool unshared =
        g.impl_ptr().use_count() == 1 && g.impl()->storage.use_count() == 1 && g.is_contiguous();
    if (unshared && !g.impl()->autograd)
      meta.grad = std::move(g);  // steal: nobody else sees it
    else
      meta.grad = unshared ? g.detach() : tg::clone(g);
  } else if (meta.grad.requires_grad()) {
    meta.grad = meta.grad + g;  // a previous create_graph gradient: do not write into its history
  } else {
    meta.grad.add_(g);
  }
  return {};
}

// ---- recording ----------------------------------------------------------------------------------

Edge gradient_edge(const Tensor& t) {
  AutogradMeta* meta = t.defined() ? autograd_meta_if(*t.impl()) : nullptr;
  if (!meta || !(meta->requires_grad || meta->grad_fn)) return {};  // needs no gradient
  if (meta->grad_fn) return {meta->grad_fn, meta->output_nr};
  if (!meta->grad_accumulator) meta->grad_accumulator = make_pooled<AccumulateGrad>(t.impl_ptr());
  return {meta->grad_accumulator, 0};
}

void collect_inputs(Node& node, std::initializer_list<const Tensor*> inputs) {
  node.next_edges.reserve(inputs.size());
  node.input_meta.reserve(inputs.size());
  for (const Tensor* t : inputs) {
    node.next_edges.push_back(gradient_edge(*t));
    if (t->defined()) {
      node.input_meta.push_back({t->shape(), t->dtype(), t->device()});
    } else {
      node.input_meta.emplace_back();
    }
  }
}

void collect_inputs(Node& node, const std::vector<Tensor>& inputs) {
  node.next_edges.reserve(inputs.size());
  node.input_meta.reserve(inputs.size());
  for (const Tensor& t : inputs) {
    node.next_edges.push_back(gradient_edge(t));
    node.input_meta.push_back({t.shape(), t.dtype(), t.device()});
  }
}

void set_history(const std::shared_ptr<Node>& node, std::initializer_list<const Tensor*> outputs) {
  uint32_t nr = 0;
  for (const Tensor* t : outputs) {
    AutogradMeta& meta = autograd_meta(*t->impl());
    meta.grad_fn = node;
    meta.output_nr = nr++;
    t->impl()->keys = t->impl()->keys.add(DispatchKey::Autograd);
    node->output_meta.push_back({t->shape(), t->dtype(), t->device()});
  }
}

bool any_requires_grad(std::initializer_list<const Tensor*> tensors) {
  if (!GradMode::is_enabled()) return false;
  for (const Tensor* t : tensors)
    if (t->defined() && t->requires_grad()) return true;
  return false;
}

bool any_requires_grad(const std::vector<Tensor>& tensors) {
  if (!GradMode::is_enabled()) return false;
  for (const Tensor& t : tensors)
    if (t.defined() && t.requires_grad()) return true;
  return false;
}

}  // namespace tg::autograd
