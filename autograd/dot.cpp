#include <tapegrad/autograd/dot.h>

#include <algorithm>
#include <fstream>
#include <map>
#include <ostream>
#include <sstream>

#include <tapegrad/core/error.h>

namespace tg::autograd {

namespace {

std::string shape_text(const Shape& s) {
  std::ostringstream os;
  os << "[";
  for (size_t i = 0; i < s.size(); ++i) os << (i ? ", " : "") << s[i];
  return os.str() + "]";
}

// The leaf behind an AccumulateGrad node, or null.
std::shared_ptr<TensorImpl> leaf_of(const Node& node) {
  const auto* acc = dynamic_cast<const AccumulateGrad*>(&node);
  return acc ? acc->leaf.lock() : nullptr;
}

std::string leaf_label(const std::shared_ptr<TensorImpl>& impl) {
  if (!impl) return "leaf (freed)";
  const Tensor t(impl);
  return (t.name().empty() ? std::string("leaf") : t.name()) + " " + shape_text(t.shape());
}

// Every recorded node reachable from t's history (AccumulateGrad nodes included).
std::vector<std::shared_ptr<Node>> reachable(const Tensor& t) {
  std::vector<std::shared_ptr<Node>> out, stack;
  std::map<const Node*, bool> seen;
  if (t.defined() && t.grad_fn()) stack.push_back(t.grad_fn());
  while (!stack.empty()) {
    auto node = std::move(stack.back());
    stack.pop_back();
    if (seen[node.get()]) continue;
    seen[node.get()] = true;
    out.push_back(node);
    for (const auto& e : node->next_edges)
      if (e.valid() && !seen[e.fn.get()]) stack.push_back(e.fn);
  }
  return out;
}

// DOT wants labels with quotes and backslashes escaped; "\l" ends a left-aligned line.
std::string escape(const std::string& s) {
  std::string out;
  for (char c : s) {
    if (c == '"' || c == '\\') out += '\\';
    out += c;
  }
  return out;
}

}  // namespace

std::vector<TapeEntry> tape_of(const Tensor& t) {
  std::vector<TapeEntry> entries;
  for (const auto& node : reachable(t)) {
    if (dynamic_cast<const AccumulateGrad*>(node.get())) continue;
    TapeEntry e{node, node->sequence_nr, node->name(), {}, node->formulas(), {}};
    if (node->num_outputs() > 0) e.output_shape = node->output_meta[0].shape;
    for (const auto& edge : node->next_edges) {
      if (!edge.valid())
        e.inputs.push_back("none");
      else if (dynamic_cast<const AccumulateGrad*>(edge.fn.get()))
        e.inputs.push_back("leaf " + leaf_label(leaf_of(*edge.fn)));
      else
        e.inputs.push_back("#" + std::to_string(edge.fn->sequence_nr) + " " + edge.fn->name());
    }
    entries.push_back(std::move(e));
  }
  std::sort(entries.begin(), entries.end(),
            [](const TapeEntry& a, const TapeEntry& b) { return a.sequence_nr < b.sequence_nr; });
  return entries;
}

void print_tape(const Tensor& t, std::ostream& os) {
  for (const auto& e : tape_of(t)) {
    os << "#" << e.sequence_nr << " " << e.name << " -> " << shape_text(e.output_shape) << "\n";
    for (size_t i = 0; i < e.inputs.size(); ++i)
      os << "    input " << i << ": " << e.inputs[i] << "\n";
    // one line per formula: a formula may serve several inputs ("self, src"), and inputs that
    // need no gradient have none
    for (const auto& [inputs, formula] : e.formulas)
      os << "    grad " << inputs << " = " << formula << "\n";
  }
}

std::string to_dot(const Tensor& t) {
  TG_CHECK(t.defined(), ValueError, "to_dot", "tensor is undefined");
  std::ostringstream os;
  os << "digraph tape {\n"
     << "  node [fontname=\"Helvetica\", fontsize=10];\n"
     << "  edge [color=\"#555555\"];\n";
  std::map<const Node*, std::string> ids;
  const auto nodes = reachable(t);
  for (const auto& node : nodes) ids[node.get()] = "n" + std::to_string(ids.size());
  for (const auto& node : nodes) {
    const std::string& id = ids[node.get()];
    if (dynamic_cast<const AccumulateGrad*>(node.get())) {
      os << "  " << id << " [shape=ellipse, style=filled, fillcolor=\"#cfe8ff\", label=\""
         << escape(leaf_label(leaf_of(*node))) << "\"];\n";
      continue;
    }
    std::string label = std::string(node->name()) + " #" + std::to_string(node->sequence_nr);
    if (node->num_outputs() > 0) label += "  -> " + shape_text(node->output_meta[0].shape);
    os << "  " << id << " [shape=box, style=\"rounded,filled\", fillcolor=\"#fff3c4\", label=\""
       << escape(label) << "\\l";
    for (const auto& [input, formula] : node->formulas())
      os << escape("d" + input + " = " + formula) << "\\l";
    os << "\"];\n";
  }
  // Arrows in the forward direction: from each input's producer to the op that consumed it.
  for (const auto& node : nodes)
    for (size_t i = 0; i < node->next_edges.size(); ++i) {
      const auto& e = node->next_edges[i];
      if (e.valid()) os << "  " << ids[e.fn.get()] << " -> " << ids[node.get()] << ";\n";
    }
  // The tensor itself, at the bottom.
  const std::string name = t.name().empty() ? std::string("output") : t.name();
  os << "  out [shape=ellipse, style=filled, fillcolor=\"#d8f5d0\", label=\""
     << escape(name + " " + shape_text(t.shape())) << "\"];\n";
  if (t.grad_fn()) os << "  " << ids[t.grad_fn().get()] << " -> out;\n";
  os << "}\n";
  return os.str();
}

void write_dot(const Tensor& t, const std::string& path) {
  const std::string text = to_dot(t);
  std::ofstream f(path);
  TG_CHECK(f.good(), Error, "write_dot", "cannot open '", path, "' for writing");
  f << text;
  TG_CHECK(f.good(), Error, "write_dot", "failed writing '", path, "'");
}

}  // namespace tg::autograd
