// The backward pass: walk recorded nodes in reverse recording order (highest sequence number
// first), give each node the sum of the gradients sent to its outputs, send its input gradients
// along its edges.
#include <tapegrad/autograd/engine.h>

#include <algorithm>
#include <optional>
#include <span>

#include <tapegrad/autograd/node.h>
#include <tapegrad/core/grad_mode.h>
#include <tapegrad/generated/functions.h>
#include <tapegrad/ops/factories.h>
#include <tapegrad/ops/operators.h>

namespace tg::autograd {

namespace {

// Sums a broadcast gradient back down to `shape` in place (the engine's job, so formulas stay
// simple). A gradient already of that shape is left alone: returning a copy cost two atomic
// reference-count updates per edge, a measurable part of a step on scalars.
void sum_to_shape(Tensor& g, const Shape& shape) {
  if (g.shape() == shape) return;
  const int64_t lead = g.dim() - static_cast<int64_t>(shape.size());
  TG_CHECK(lead >= 0, Error, "backward", "gradient of shape ", g.shape(),
           " does not match input shape ", shape);
  std::vector<int64_t> dims;
  for (int64_t i = 0; i < g.dim(); ++i)
    if (i < lead ||
        (shape[static_cast<size_t>(i - lead)] == 1 && g.shape()[static_cast<size_t>(i)] != 1))
      dims.push_back(i);
  if (!dims.empty()) g = tg::sum(g, dims, /*keepdim=*/true);
  if (g.shape() != shape) g = g.reshape(shape);
}

// A queued node, by the edge pointer that owns it.
using Owner = const std::shared_ptr<Node>*;
struct ByTapePosition {
  bool operator()(Owner a, Owner b) const { return (*a)->sequence_nr < (*b)->sequence_nr; }
};

// The nodes waiting to run, highest tape position first. Clears the nodes' scratch on exit,
// also when a formula or hook throws, so the graph stays usable. A small graph's queue stays in
// inline storage (no allocation per backward). It holds pointers to the owning pointers in the
// edges that reached the nodes, not copies: every queued node is owned by an edge of a node that
// ran before it (or by a root edge the caller holds), and backward changes no edge, so the node
// and that edge outlive its turn; a copy cost two atomic count updates per node.
struct ReadyQueue {
  SmallVector<Owner, 8> heap;
  ~ReadyQueue() {
    for (Owner n : heap) {
      (*n)->queued = false;
      (*n)->pending_grads.clear();
    }
  }
  bool empty() const { return heap.empty(); }
  void push(Owner n) {
    heap.push_back(n);
    std::push_heap(heap.begin(), heap.end(), ByTapePosition{});
  }
  Owner pop() {
    std::pop_heap(heap.begin(), heap.end(), ByTapePosition{});
    Owner n = heap.back();
    heap.pop_back();
    return n;
  }
};

struct Target {  // an input of autograd::grad: its gradient is captured, not accumulated
  Node* node;
  uint32_t output_nr;
};

// Runs the backward pass from `roots` (edge + gradient). With targets, captures the gradient
// reaching each target and runs no leaf accumulators.
std::vector<Tensor> run_backward(std::span<const Edge> roots, std::span<const Tensor> root_grads,
                                 bool retain_graph, bool create_graph,
                                 std::span<const Target> targets) {
  AutoGradMode mode(create_graph);
  ReadyQueue ready;
  std::vector<Tensor> captured(targets.size());
  const bool capturing = !targets.empty();
  uint64_t lowest_target = UINT64_MAX;
  for (const auto& t : targets) lowest_target = std::min(lowest_target, t.node->sequence_nr);

  auto send = [&](const Edge& edge, Tensor g) {
    Node* n = edge.fn.get();
    if (!n->queued) {
      n->queued = true;
      n->pending_grads = new_grad_list(std::max<size_t>(n->num_outputs(), edge.input_nr + 1));
      ready.push(&edge.fn);
    }
    Tensor& slot = n->pending_grads[edge.input_nr];
    slot = slot.defined() ? slot + g : std::move(g);
  };
  for (size_t i = 0; i < roots.size(); ++i)
    if (roots[i].valid()) send(roots[i], root_grads[i]);

  while (!ready.empty()) {
    const std::shared_ptr<Node>& owner = *ready.pop();
    Node* node = owner.get();
    std::vector<Tensor> grads = std::move(node->pending_grads);
    node->pending_grads.clear();
    node->queued = false;

    for (auto& [nr, hook] : node->pre_hooks) {
      Tensor replaced = hook(grads[nr]);
      if (replaced.defined()) grads[nr] = replaced;
    }
    for (auto& [nr, weak] : node->retained)
      if (auto impl = weak.lock()) {
        Tensor owner(impl);
        const Tensor& g = grads[nr];
        if (g.defined())
          owner.set_grad(owner.grad().defined() ? owner.grad() + g
                                                : (create_graph ? g : g.detach()));
      }
    if (capturing) {
      for (size_t i = 0; i < targets.size(); ++i)
        if (targets[i].node == node && targets[i].output_nr < grads.size())
          captured[i] = grads[targets[i].output_nr];
      if (node->sequence_nr == 0 || node->sequence_nr <= lowest_target)
        continue;  // nothing below leads to a target
    }
    for (size_t i = 0; i < grads.size() && i < node->output_meta.size(); ++i)
      if (!grads[i].defined()) {  // an output that received no gradient counts as zeros
        const InputMeta& m = node->output_meta[i];
        grads[i] = zeros(m.shape, m.dtype, m.device);
      }

    std::optional<RunningNode> running;  // only create_graph unpacks need the owner
    if (create_graph) running.emplace(owner);
    std::vector<Tensor> input_grads = node->apply(std::move(grads));
    running.reset();
    recycle_grad_list(std::move(grads));
    if (!retain_graph) {
      node->release_saved();
      // A hook that captured its own tensor (t.register_hook([t] ...)) made a cycle t -> node ->
      // hook -> t; the released graph cannot run again, so dropping the hooks breaks it.
      node->pre_hooks.clear();
    }
    for (size_t i = 0; i < node->next_edges.size() && i < input_grads.size(); ++i) {
      const Edge& edge = node->next_edges[i];
      Tensor& g = input_grads[i];
      if (!edge.valid() || !g.defined()) continue;
      const InputMeta& meta = node->input_meta[i];
      sum_to_shape(g, meta.shape);
      if (g.dtype() != meta.dtype) g = g.to(meta.dtype);
      send(edge, std::move(g));
    }
    recycle_grad_list(std::move(input_grads));
  }
  return captured;
}

// The gradient backward starts from for output i: `grad` when given (undefined: none given).
Tensor initial_grad(const char* op, size_t i, const Tensor& o, const Tensor& grad) {
  TG_CHECK(
      o.defined() && o.requires_grad(), ValueError, op, "output ", i,
      " does not require grad and has no history (did you call requires_grad_() on an input?)");
  if (grad.defined()) {
    TG_CHECK(grad.shape() == o.shape(), ValueError, op, "gradient ", i, " has shape ", grad.shape(),
             " but output ", i, " has shape ", o.shape());
    return grad;
  }
  TG_CHECK(o.numel() == 1, ValueError, op,
           "a gradient can be implicitly created only for outputs with one element; output ", i,
           " has shape ", o.shape(), " (pass a gradient)");
  return ones_like(o);
}

std::vector<Tensor> initial_grads(const char* op, const std::vector<Tensor>& outputs,
                                  const std::vector<Tensor>& grads) {
  TG_CHECK(grads.empty() || grads.size() == outputs.size(), ValueError, op, "got ", outputs.size(),
           " outputs but ", grads.size(), " gradients");
  std::vector<Tensor> out;
  for (size_t i = 0; i < outputs.size(); ++i)
    out.push_back(initial_grad(op, i, outputs[i], grads.empty() ? Tensor() : grads[i]));
  return out;
}

}  // namespace

void backward(const std::vector<Tensor>& outputs, const std::vector<Tensor>& grad_outputs,
              bool retain_graph, bool create_graph) {
  std::vector<Tensor> grads = initial_grads("backward", outputs, grad_outputs);
  std::vector<Edge> roots;
  for (const auto& o : outputs) roots.push_back(gradient_edge(o));
  run_backward(roots, grads, retain_graph || create_graph, create_graph, {});
}

void backward(const Tensor& output, const Tensor& grad_output, bool retain_graph,
              bool create_graph) {
  const Tensor grad = initial_grad("backward", 0, output, grad_output);
  const Edge root = gradient_edge(output);
  run_backward({&root, 1}, {&grad, 1}, retain_graph || create_graph, create_graph, {});
}

std::vector<Tensor> grad(const std::vector<Tensor>& outputs, const std::vector<Tensor>& inputs,
                         const std::vector<Tensor>& grad_outputs, std::optional<bool> retain_graph,
                         bool create_graph) {
  std::vector<Tensor> grads = initial_grads("grad", outputs, grad_outputs);
  std::vector<Target> targets;
  std::vector<std::shared_ptr<Node>> keep;
  for (size_t i = 0; i < inputs.size(); ++i) {
    TG_CHECK(inputs[i].defined() && inputs[i].requires_grad(), ValueError, "grad", "input ", i,
             " does not require grad");
    Edge e = gradient_edge(inputs[i]);
    targets.push_back({e.fn.get(), e.input_nr});
    keep.push_back(e.fn);
  }
  std::vector<Edge> roots;
  for (const auto& o : outputs) roots.push_back(gradient_edge(o));
  return run_backward(roots, grads, retain_graph.value_or(create_graph), create_graph, targets);
}

}  // namespace tg::autograd
