// tg::scatter with ScatterOptions, over index_copy and scatter_reduce; see scatter_slices.h.
#include <tapegrad/core/error.h>
#include <tapegrad/core/shape.h>
#include <tapegrad/generated/functions.h>
#include <tapegrad/ops/scatter_slices.h>

namespace tg {
namespace {

// Paddle's reduce names mapped onto scatter_reduce's.
std::string reduce_name(const std::string& reduce) {
  if (reduce == "add" || reduce == "sum") return "sum";
  if (reduce == "mul" || reduce == "multiply") return "prod";
  if (reduce == "mean" || reduce == "amax" || reduce == "amin") return reduce;
  fail<ValueError>("scatter",
                   "reduce must be one of add, sum, mul, multiply, mean, amax, amin; got '", reduce,
                   "'");
}

struct Prepared {
  int64_t axis;
  Tensor index;    // 1-d
  Tensor updates;  // x's rank, index.numel() at axis
  std::string reduce;
};

// Checks the arguments (before anything is written) and brings a 0-d index to 1-d form.
Prepared prepare(const Tensor& x, const Tensor& index, const Tensor& updates,
                 const ScatterOptions& options) {
  TG_CHECK(x.dim() >= 1, ValueError, "scatter", "x must have at least 1 dim, got a 0-d tensor");
  const int64_t axis = wrap_dim("scatter", options.axis, x.dim());
  TG_CHECK(index.dtype() == kInt32 || index.dtype() == kInt64, TypeError, "scatter",
           "index has dtype ", dtype_name(index.dtype()), ", expected int32 or int64");
  TG_CHECK(index.dim() <= 1, ValueError, "scatter", "index must be 0-d or 1-d, got shape ",
           index.shape());
  const std::string reduce = options.overwrite ? "" : reduce_name(options.reduce);
  // updates: x's shape off axis; at axis at least index.numel() rows (only the first ones are used,
  // as Paddle allows), or no axis at all for a 0-d index
  const Tensor updates_full =
      index.dim() == 0 && updates.dim() == x.dim() - 1 ? unsqueeze(updates, axis) : updates;
  bool fits = updates_full.dim() == x.dim();
  for (int64_t k = 0; fits && k < x.dim(); ++k)
    fits = k == axis ? updates_full.size(k) >= index.numel() : updates_full.size(k) == x.size(k);
  Shape expected = x.shape();
  expected[axis] = index.numel();
  TG_CHECK(fits, ValueError, "scatter", "shape mismatch: updates has shape ", updates.shape(),
           ", expected ", expected, " (or more rows at axis ", axis, ")",
           index.dim() == 0 ? ", or x's shape without axis for a 0-d index" : "");
  const Tensor used = updates_full.size(axis) == index.numel()
                          ? updates_full
                          : narrow(updates_full, axis, 0, index.numel());
  return {axis, index.reshape({-1}), used, reduce};
}

// index along axis, broadcast to updates' shape (scatter_reduce wants index of src's rank).
Tensor expanded(const Tensor& index, const Tensor& updates, int64_t axis) {
  Shape shape(static_cast<size_t>(updates.dim()), 1);
  shape[axis] = index.numel();
  return index.reshape(shape).expand(updates.shape());
}

}  // namespace

Tensor scatter(const Tensor& x, const Tensor& index, const Tensor& updates,
               const ScatterOptions& options) {
  const Prepared p = prepare(x, index, updates, options);
  if (options.overwrite) return index_copy(x, p.axis, p.index, p.updates);
  return scatter_reduce(x, p.axis, expanded(p.index, p.updates, p.axis), p.updates, p.reduce,
                        options.include_self);
}

Tensor scatter_(const Tensor& x, const Tensor& index, const Tensor& updates,
                const ScatterOptions& options) {
  const Prepared p = prepare(x, index, updates, options);
  if (options.overwrite) return index_copy_(x, p.axis, p.index, p.updates);
  return scatter_reduce_(x, p.axis, expanded(p.index, p.updates, p.axis), p.updates, p.reduce,
                         options.include_self);
}

}  // namespace tg
