#pragma once
// The tape's entries. Each recorded op is one Node: its saved values, edges to the nodes of its
// inputs, and apply(), which maps output gradients to input gradients by the op's formulas.
#include <cstdint>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include <tapegrad/core/small_vector.h>
#include <tapegrad/generated/tensor.h>

namespace tg::autograd {

struct Node;

// Where an input's gradient goes: output `input_nr` of node `fn` (null: input needs no grad).
struct Edge {
  std::shared_ptr<Node> fn;
  uint32_t input_nr = 0;
  bool valid() const { return fn != nullptr; }
};

// What a gradient for an input must look like (the engine sums broadcast dims and casts).
struct InputMeta {
  Shape shape;
  DType dtype = kFloat32;
  Device device;
};

// A tensor kept for backward, with the storage version it had when saved.
class SavedTensor {
 public:
  SavedTensor() = default;
  // is_output: the tensor is this node's own result (kept without its history to avoid a cycle).
  SavedTensor(const Tensor& t, bool is_output);
  // The saved tensor; fails if it was modified in place since it was saved, or was freed.
  Tensor unpack(const Node& owner) const;
  void reset() {
    data_ = Tensor();
    released_ = true;
  }
  bool defined() const { return data_.defined(); }

 private:
  Tensor data_;
  uint64_t saved_version_ = 0;
  uint32_t output_nr_ = 0;
  bool is_output_ = false;
  bool requires_grad_ = false;
  bool released_ = false;
};

// Not enable_shared_from_this: its weak self-reference cost an atomic update when each node was
// made and sent every node's last release down the slower path of two more (a step on scalars
// spends about a third of its time on such updates). The engine lends the owning pointer where it
// is needed (RunningNode).
struct Node {
  Node();
  virtual ~Node() = default;
  Node(const Node&) = delete;
  Node& operator=(const Node&) = delete;

  // Gradients of the inputs, one per next edge, from gradients of the outputs.
  virtual std::vector<Tensor> apply(std::vector<Tensor>&& grads) = 0;
  virtual const char* name() const = 0;
  // The backward formula text per input, for pictures and error messages.
  virtual std::vector<std::pair<std::string, std::string>> formulas() const { return {}; }
  // Frees saved values after a backward without retain_graph.
  virtual void release_saved() {}

  bool needs_input_grad(size_t i) const { return i < next_edges.size() && next_edges[i].valid(); }
  bool any_input_needs_grad() const {
    for (const auto& e : next_edges)
      if (e.valid()) return true;
    return false;
  }
  size_t num_outputs() const { return output_meta.size(); }

  SmallVector<Edge, 3> next_edges;        // one per differentiable input
  SmallVector<InputMeta, 3> input_meta;   // same length
  SmallVector<InputMeta, 1> output_meta;  // for materialising missing output grads as zeros
  std::vector<std::pair<uint32_t, GradHook>> pre_hooks;                  // (output_nr, hook)
  std::vector<std::pair<uint32_t, std::weak_ptr<TensorImpl>>> retained;  // retain_grad()
  // Engine scratch during one backward pass: gradients received so far, and whether queued.
  std::vector<Tensor> pending_grads;
  bool queued = false;
  uint64_t sequence_nr;  // recording order: the tape position (0 for leaf accumulators: run last)
};

// While alive, `owner` is the node the engine is running on this thread (set only under
// create_graph, where SavedTensor::unpack gives a saved output that node as its history).
class RunningNode {
 public:
  explicit RunningNode(const std::shared_ptr<Node>& owner);
  ~RunningNode();
  RunningNode(const RunningNode&) = delete;
  RunningNode& operator=(const RunningNode&) = delete;
  static const std::shared_ptr<Node>* current();

 private:
  const std::shared_ptr<Node>* previous_;
};

// The node that accumulates into a leaf's .grad().
struct AccumulateGrad final : Node {
  explicit AccumulateGrad(const std::shared_ptr<TensorImpl>& leaf);
  std::vector<Tensor> apply(std::vector<Tensor>&& grads) override;
  const char* name() const override { return "AccumulateGrad"; }
  std::weak_ptr<TensorImpl> leaf;  // the leaf owns this node, not the other way round
};

// The tape: a thread-local recording counter. A node recorded later always has a higher
// sequence number than the nodes of its inputs, so walking numbers in reverse is a valid
// topological order for backward.
struct Tape {
  static uint64_t next_sequence_nr();
};

// Lists of gradients: the engine gives every node a list of its output gradients and gets a list
// of input gradients back from apply(), for every node of every backward pass. The thread keeps
// emptied lists to reuse their buffers, so that the backward of a small graph allocates none.
// new_grad_list(n): n undefined tensors; recycle_grad_list: drops the tensors, keeps the buffer.
std::vector<Tensor> new_grad_list(size_t n);
void recycle_grad_list(std::vector<Tensor>&& list);

// The edge an input's gradient flows along (its grad_fn, or its leaf accumulator).
Edge gradient_edge(const Tensor& t);
// Collect edges and metadata for a new node from its differentiable inputs.
void collect_inputs(Node& node, std::initializer_list<const Tensor*> inputs);
void collect_inputs(Node& node, const std::vector<Tensor>& inputs);
// Make `node` the history of `outputs` (output i is the node's output i).
void set_history(const std::shared_ptr<Node>& node, std::initializer_list<const Tensor*> outputs);
// Whether any of the tensors requires grad (and grad mode is on).
bool any_requires_grad(std::initializer_list<const Tensor*> tensors);
bool any_requires_grad(const std::vector<Tensor>& tensors);
// Saving a Tensor[] input.
std::vector<SavedTensor> save_list(const std::vector<Tensor>& tensors);
std::vector<Tensor> unpack_list(const std::vector<SavedTensor>& saved, const Node& owner);

}  // namespace tg::autograd
