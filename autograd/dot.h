#pragma once
// Looking at the tape: the graph of recorded ops behind a tensor, as a Graphviz picture or as the
// list of entries in recording order.
//
//   tg::autograd::write_dot(loss, "loss.dot");   // then: dot -Tpng loss.dot -o loss.png
#include <cstdint>
#include <iosfwd>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include <tapegrad/autograd/node.h>
#include <tapegrad/generated/tensor.h>

namespace tg::autograd {

// One recorded op behind a tensor, as backward will meet it.
struct TapeEntry {
  std::shared_ptr<Node> node;
  uint64_t sequence_nr;
  std::string name;                                           // e.g. "MulBackward"
  Shape output_shape;                                         // shape of the op's first output
  std::vector<std::pair<std::string, std::string>> formulas;  // input -> gradient formula text
  std::vector<std::string>
      inputs;  // for each differentiable input: "leaf x [2, 3]", "#4 AddBackward", "none"
};

// The ops that produced `t`, oldest first (the order they were recorded); backward runs them in
// reverse. Leaf accumulators are not entries: they appear as inputs.
std::vector<TapeEntry> tape_of(const Tensor& t);

// Prints the tape one entry per line: "#3 MulBackward -> [2]   self: grad * other ...".
void print_tape(const Tensor& t, std::ostream& os);

// Graphviz DOT: one box per recorded op (name, output shape, backward formulas), one ellipse per
// leaf (its name, or "leaf", and shape), arrows in the forward direction, the tensor at the bottom.
std::string to_dot(const Tensor& t);
// Writes to_dot(t) to a file; throws tg::Error naming the path if it cannot.
void write_dot(const Tensor& t, const std::string& path);

}  // namespace tg::autograd
