#pragma once
// The op check's sample parser: turns a spec's "samples" JSON (ops/specs/README.md, Samples) into
// argument lists for registry::OpInfo::call, with random values that are the same on every run.
#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include <tapegrad/generated/tensor.h>
#include <tapegrad/ops/registry.h>

namespace tg::testing {

// A tensor argument as a sample describes it; its values are drawn by materialize().
struct TensorSpec {
  Shape shape;                      // [] is 0-d; without "shape", [len(values)] or []
  std::optional<DType> dtype;       // "dtype": fixed; otherwise the run's dtype (or the arg's own)
  std::vector<double> values;       // "values": row-major (nested lists are flattened)
  std::optional<double> low, high;  // "low"/"high": uniform range [low, high)
  std::optional<double> fill;       // "fill": every element
  std::optional<double> step;       // "step": floating values rounded to multiples of it
  bool distinct = false;            // "distinct": no two elements equal
  bool requires_grad = true;        // "requires_grad": false keeps it out of gradcheck
  std::optional<std::pair<int64_t, int64_t>> transpose;  // "transpose": stored transposed
};

// One argument of a sample: a tensor, a list of tensors, or a plain value.
struct SampleArg {
  enum class Kind { Tensor, TensorList, Value };
  Kind kind = Kind::Value;
  std::vector<TensorSpec> tensors;  // one for Tensor, any number for TensorList
  registry::Value value;            // Kind::Value (std::monostate for none)
};

struct Sample {
  size_t index = 0;             // position in the spec's samples list
  std::vector<SampleArg> args;  // one per op arg, in the op's order (defaults filled in)
  std::vector<DType> dtypes;    // "dtypes": empty means every dtype the op supports
  bool no_grad = false, no_gradgrad = false;
  std::string reject, error, why;
  // "no_derived": the derived edge cases (derived.h) this sample opts out of, kind -> reason;
  // the text form "reason" opts out of all of them (kind "all").
  std::map<std::string, std::string> no_derived;
};

// The kinds of derived edge case (derived.cpp), as "no_derived" names them.
const std::vector<std::string>& derived_kinds();

// Parses a samples array against op.args; throws tg::ValueError naming the op, the sample and
// the key when something is malformed.
std::vector<Sample> parse_samples(const registry::OpInfo& op, const std::string& samples_json);
// A plain JSON value (text) as the Value alternative arg's spec type needs.
registry::Value parse_value(const registry::ArgInfo& arg, const std::string& json_text);

// The dtypes a sample runs in: the op's dtypes (those tensors can be filled in) intersected with
// the sample's "dtypes"; a reject sample runs in its own "dtypes" as given.
std::vector<DType> sample_dtypes(const registry::OpInfo& op, const Sample& sample);

// Where a tensor sits in an argument list: args[arg], or args[arg][item] for Tensor[] args.
struct TensorSlot {
  size_t arg = 0;
  int64_t item = -1;
  bool grad = false;  // a differentiable arg, floating, and not "requires_grad": false
};

// A sample made concrete for one dtype.
struct Case {
  std::vector<registry::Value> args;
  std::vector<TensorSlot> tensors;  // every defined tensor in args
};

// Random values come from a generator seeded with `seed` alone, so a run is reproducible.
Case materialize(const registry::OpInfo& op, const Sample& sample, DType dtype, uint64_t seed);
// The seed materialize() uses for sample `index` of op `name` (stable across builds).
uint64_t sample_seed(const std::string& op_name, size_t index);

Tensor& tensor_at(std::vector<registry::Value>& args, const TensorSlot& slot);
const Tensor& tensor_at(const std::vector<registry::Value>& args, const TensorSlot& slot);
// A copy with the same shape, strides and values that shares no storage with t.
Tensor clone_tensor(const Tensor& t);
// args with every tensor replaced by clone_tensor of it.
std::vector<registry::Value> clone_args(const std::vector<registry::Value>& args);
// "self=float64[2, 3] dim=1": the arguments, for reports (T marks a non-contiguous tensor).
std::string describe_args(const registry::OpInfo& op, const std::vector<registry::Value>& args);

}  // namespace tg::testing
