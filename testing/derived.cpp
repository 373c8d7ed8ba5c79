// Edge cases the op check derives from each spec sample, in every dtype the sample runs in (the
// gradient comparisons in float64), unless the sample opts out ("no_derived", with a reason):
//   non-contiguous  every tensor input laid out strided (every other element of a larger
//                   storage), then each input alone: outputs and gradients equal those of the
//                   contiguous inputs, and the in-place variant passes its checks on them
//   expanded        every floating input of two or more rows replaced by its first row broadcast
//                   over dim 0 (stride 0): outputs and gradients equal those of a contiguous copy
//   0-size          self (and every input shaped like it) with 0 rows: the op either rejects it
//                   with a tg::Error (reported as skipped) or runs, forward and backward
//   0-d             every tensor input replaced by a 0-d tensor of its first element: rejected, or
//                   forward, gradcheck and the in-place checks pass
//   inplace-view    the in-place variant into a self that is a window of a larger tensor: the
//                   window gets the out-of-place result, the rest of the larger tensor is
//                   unchanged; under autograd, the larger tensor's gradient is the identity
//                   outside the window and the op's inside (or the op refuses, changing nothing)
#include <algorithm>
#include <cstring>
#include <functional>
#include <exception>
#include <optional>

#include <tapegrad/autograd/engine.h>
#include <tapegrad/core/copy.h>
#include <tapegrad/core/grad_mode.h>
#include <tapegrad/generated/functions.h>
#include <tapegrad/ops/factories.h>
#include <tapegrad/ops/operators.h>
#include <tapegrad/testing/checker.h>

namespace tg::testing::detail {
namespace {

Tensor contiguous_copy(const Tensor& t) {
  Tensor out = empty(t.shape(), t.dtype(), t.device());
  copy_data(out, t);
  return out;
}

// t's values in every other element of a storage twice as long along its last dim of size > 1:
// same shape and values, not contiguous. Undefined when t has no such dim.
Tensor strided_copy(const Tensor& t) {
  int64_t d = t.dim() - 1;
  while (d >= 0 && t.shape()[static_cast<size_t>(d)] < 2) --d;
  if (d < 0) return {};
  Shape big = t.shape();
  big[static_cast<size_t>(d)] *= 2;
  Tensor view = slice(empty(big, t.dtype(), t.device()), d, std::nullopt, std::nullopt, 2);
  copy_data(view, t);
  return view;
}

// t's first row broadcast over dim 0 with stride 0; undefined when t has fewer than two rows.
Tensor expanded_copy(const Tensor& t) {
  if (t.dim() < 1 || t.shape()[0] < 2) return {};
  return expand(contiguous_copy(narrow(t, 0, 0, 1)), t.shape());
}

// A 0-d tensor holding t's first element; undefined when t is empty or already 0-d.
Tensor scalar_copy(const Tensor& t) {
  if (t.dim() == 0 || t.numel() == 0 || !t.device().is_cpu()) return {};
  const Tensor flat = contiguous_copy(t);
  Tensor out = empty(Shape{}, t.dtype(), t.device());
  std::memcpy(out.data_ptr(), flat.data_ptr(), itemsize(t.dtype()));
  return out;
}

std::string first_line(const std::string& s) { return s.substr(0, s.find('\n')); }

bool tolerant_dtype(DType d) { return is_floating(d); }
double atol_for(DType d) { return d == kFloat64 ? 1e-12 : 1e-5; }
double rtol_for(DType d) { return d == kFloat64 ? 1e-10 : 1e-5; }

}  // namespace

void OpChecker::check_derived(const Sample& s, const Case& c) {
  if (c.tensors.empty()) return;
  const DType dtype = tensor_at(c.args, c.tensors.front()).dtype();
  auto wanted = [&](const std::string& kind) {
    auto it = s.no_derived.find(kind);
    if (it == s.no_derived.end()) it = s.no_derived.find("all");
    if (it == s.no_derived.end()) return true;
    open_case(s, dtype, kind).skipped = "the spec opts out: " + it->second;
    return false;
  };
  NoGradGuard no_grad;  // building the variants records nothing
  // c with each tensor that make() gives a replacement for replaced; none when it gives none.
  auto variant_of = [&](const std::function<Tensor(const Tensor&, const TensorSlot&)>& make) {
    Case out = c;
    bool any = false;
    for (const TensorSlot& slot : c.tensors) {
      Tensor t = make(tensor_at(c.args, slot), slot);
      if (!t.defined()) continue;
      tensor_at(out.args, slot) = t;
      any = true;
    }
    return any ? std::optional<Case>(std::move(out)) : std::nullopt;
  };
  if (wanted("non-contiguous")) {
    if (auto v = variant_of([](const Tensor& t, const TensorSlot&) { return strided_copy(t); }))
      derived_like(s, c, "non-contiguous", *v);
    // One input strided, the others contiguous: a kernel that picks its fast path by one
    // input's layout and reads another's memory as if contiguous fails only here.
    if (c.tensors.size() > 1)
      for (size_t k = 0; k < c.tensors.size(); ++k)
        if (auto v = variant_of([&](const Tensor& t, const TensorSlot& slot) {
              return &slot == &c.tensors[k] ? strided_copy(t) : Tensor();
            }))
          derived_like(s, c, "non-contiguous " + slot_name(c.tensors[k]), *v);
  }
  if (wanted("expanded"))
    if (auto v = variant_of([](const Tensor& t, const TensorSlot&) {
          return is_floating(t.dtype()) ? expanded_copy(t) : Tensor();  // indices keep their rows
        }))
      derived_like(s, c, "expanded", *v);
  // 0-size: self's rows (self: the arg named self, else the first tensor), and every input shaped
  // like self, go to 0.
  const TensorSlot* self = &c.tensors.front();
  for (const TensorSlot& slot : c.tensors)
    if (static_cast<int>(slot.arg) == self_arg_ && slot.item < 0) self = &slot;
  if (tensor_at(c.args, *self).dim() >= 1 && wanted("0-size")) {
    const Shape like = tensor_at(c.args, *self).shape();
    Shape zero = like;
    zero[0] = 0;
    if (auto v = variant_of([&](const Tensor& t, const TensorSlot&) {
          return t.shape() == like ? empty(zero, t.dtype(), t.device()) : Tensor();
        }))
      derived_alone(s, c, "0-size", *v);
  }
  if (wanted("0-d"))
    if (auto v = variant_of([](const Tensor& t, const TensorSlot& slot) {
          return slot.item < 0 ? scalar_copy(t) : Tensor();
        }))
      derived_alone(s, c, "0-d", *v);
  if (op_.call_inplace && self_arg_ >= 0 && wanted("inplace-view")) derived_inplace_view(s, c);
}

// d(differentiable outputs)/d(float64 inputs that take a gradient), for a seeded upstream
// gradient; leaves gets the inputs differentiated (detached copies of args' tensors, same layout).
std::vector<Tensor> OpChecker::gradients(const Sample& s, const Case& c,
                                         const std::vector<Tensor>& outs_unused,
                                         std::vector<Value>& args,
                                         std::vector<Tensor>& leaves) const {
  (void)outs_unused;
  EnableGradGuard grad_on;
  leaves.clear();
  for (const TensorSlot& slot : c.tensors) {
    if (!slot.grad || tensor_at(args, slot).dtype() != kFloat64) continue;
    Tensor leaf = tensor_at(args, slot).detach();
    leaf.requires_grad_(true);
    tensor_at(args, slot) = leaf;
    leaves.push_back(leaf);
  }
  if (leaves.empty()) return {};
  std::vector<Tensor> outs = call_(args), ys, upstream;
  for (size_t i = 0; i < outs.size(); ++i) {
    if (!output_differentiable(i) || !outs[i].defined() || !outs[i].requires_grad()) continue;
    ys.push_back(outs[i]);
    upstream.push_back(random_like(outs[i], sample_seed(op_.name, s.index) + 7 + i));
  }
  if (ys.empty()) return {};
  return autograd::grad(ys, leaves, upstream);
}

void OpChecker::derived_like(const Sample& s, const Case& c, const std::string& kind,
                             const Case& variant) {
  const DType dtype = tensor_at(variant.args, variant.tensors.front()).dtype();
  open_case(s, dtype, kind).args = describe_args(op_, variant.args);
  Case ref = variant;
  for (const TensorSlot& slot : ref.tensors)
    tensor_at(ref.args, slot) = contiguous_copy(tensor_at(variant.args, slot));
  std::vector<Tensor> want, got;
  try {
    want = call_(ref.args);
  } catch (const Error& e) {  // e.g. expanded rows that break a sample's value constraints
    report_.cases.back().skipped =
        "the op rejects the same values contiguous: " + first_line(e.what());
    return;
  }
  ++report_.derived;
  const Snapshot before = snapshot(variant.args, variant.tensors);
  try {
    got = call_(variant.args);
  } catch (const std::exception& e) {
    failure("derived", kind + " inputs threw, contiguous ones did not: " + e.what());
    return;
  }
  const int failures = report_.failures;
  for (size_t i = 0; i < want.size() && i < got.size(); ++i) {
    const DType d = want[i].defined() ? want[i].dtype() : kFloat64;
    const bool tol = tolerant_dtype(d);
    if (std::string diff = difference(got[i], want[i], tol, atol_for(d), rtol_for(d));
        !diff.empty())
      failure("derived",
              "output " + std::to_string(i) + " differs from the contiguous inputs': " + diff);
  }
  if (std::string names = changed(variant.args, variant.tensors, before); !names.empty())
    failure("derived", "modified its input " + names);
  if (op_.differentiable && dtype == kFloat64 && !s.no_grad) {
    try {
      std::vector<Value> ga = variant.args, gr = ref.args;
      std::vector<Tensor> leaves_got, leaves_want;
      const std::vector<Tensor> g = gradients(s, variant, got, ga, leaves_got);
      const std::vector<Tensor> w = gradients(s, ref, want, gr, leaves_want);
      for (size_t k = 0; k < g.size() && k < w.size(); ++k)
        if (std::string diff = difference(g[k], w[k], true, 1e-12, 1e-10); !diff.empty())
          failure("derived", "gradient " + std::to_string(k) +
                                 " differs from the contiguous inputs': " + diff);
    } catch (const std::exception& e) {
      failure("derived", std::string("backward threw: ") + e.what());
    }
  }
  if (kind.rfind("non-contiguous", 0) == 0 && op_.call_inplace && self_arg_ >= 0 && !want.empty())
    check_inplace(s, dtype, variant, want[0]);
  if (report_.failures == failures)
    passed("derived", "outputs and gradients equal the contiguous inputs'");
  (void)c;
}

void OpChecker::derived_alone(const Sample& s, const Case&, const std::string& kind,
                              const Case& variant) {
  const DType dtype = tensor_at(variant.args, variant.tensors.front()).dtype();
  open_case(s, dtype, kind).args = describe_args(op_, variant.args);
  const Snapshot before = snapshot(variant.args, variant.tensors);
  std::vector<Tensor> outs;
  try {
    outs = call_(variant.args);
  } catch (const Error& e) {  // an op may refuse an empty or 0-d input, with a typed error
    report_.cases.back().skipped = "the op rejects it: " + first_line(e.what());
    return;
  } catch (const std::exception& e) {
    failure("derived", std::string("threw a non-tg::Error: ") + e.what());
    return;
  }
  ++report_.derived;
  const int failures = report_.failures;
  if (std::string names = changed(variant.args, variant.tensors, before); !names.empty())
    failure("derived", "modified its input " + names);
  if (op_.differentiable && dtype == kFloat64 && !s.no_grad) {
    if (kind == "0-d") {
      check_gradients(s, variant);  // small: every input has one element
    } else {
      try {
        std::vector<Value> args = variant.args;
        std::vector<Tensor> leaves;
        const std::vector<Tensor> g = gradients(s, variant, outs, args, leaves);
        for (size_t k = 0; k < g.size(); ++k)
          if (g[k].defined() && g[k].shape() != leaves[k].shape())
            failure("derived", "gradient " + std::to_string(k) + " has shape " +
                                   g[k].shape().str() + ", its input " + leaves[k].shape().str());
      } catch (const std::exception& e) {
        failure("derived", std::string("backward threw: ") + e.what());
      }
    }
  }
  if (op_.call_inplace && self_arg_ >= 0 && !outs.empty())
    check_inplace(s, dtype, variant, outs[0]);
  if (report_.failures == failures) passed("derived", "ran forward and backward");
}

void OpChecker::derived_inplace_view(const Sample& s, const Case& c) {
  const size_t pos = static_cast<size_t>(self_arg_);
  const Tensor self = std::get<Tensor>(c.args[pos]);
  std::vector<Tensor> outs;
  try {
    outs = call_(c.args);
  } catch (const std::exception&) {
    return;  // the sample's own forward check has reported it
  }
  if (outs.empty() || outs[0].shape() != self.shape() || !can_cast(outs[0].dtype(), self.dtype()))
    return;  // check_inplace has checked the rejection
  NoGradGuard no_grad;
  // The larger tensor: two more elements along the last dim (a 0-d self: a [3] tensor).
  Shape big = self.dim() == 0 ? Shape{3} : self.shape();
  const int64_t d = self.dim() == 0 ? 0 : self.dim() - 1;
  if (self.dim() > 0) big[static_cast<size_t>(d)] += 2;
  Tensor base = empty(big, self.dtype(), self.device());
  copy_data(base, random_like(base, sample_seed(op_.name, s.index) + 11));
  Tensor window = self.dim() == 0 ? select(base, 0, 1)
                                  : narrow(base, d, 1, self.shape()[static_cast<size_t>(d)]);
  copy_data(window, self);
  const Tensor orig = contiguous_copy(base);
  Tensor want_base = contiguous_copy(base);
  Tensor want_window = self.dim() == 0
                           ? select(want_base, 0, 1)
                           : narrow(want_base, d, 1, self.shape()[static_cast<size_t>(d)]);
  copy_data(want_window, outs[0]);
  std::vector<Value> args = clone_args(c.args);
  args[pos] = window;
  open_case(s, self.dtype(), "inplace-view").args = describe_args(op_, args);
  ++report_.derived;
  try {
    std::vector<Tensor> r = call_inplace_(args);
    if (r.size() != 1 || !r[0].is_same(window)) failure("derived", "in-place did not return self");
  } catch (const std::exception& e) {
    failure("derived", std::string("in-place into a window of a larger tensor threw: ") + e.what());
    return;
  }
  if (std::string diff = difference(base, want_base); !diff.empty())
    failure("derived",
            "in-place into a window of a larger tensor: the larger tensor (the window at offset 1 "
            "of its last dim) is not the out-of-place result inside and unchanged outside: " +
                diff);
  else
    passed("derived", "in-place into a window wrote the window only");
  const bool self_grad = std::any_of(c.tensors.begin(), c.tensors.end(), [&](const TensorSlot& t) {
    return t.arg == pos && t.item < 0 && t.grad;
  });
  if (op_.differentiable && self.dtype() == kFloat64 && self_grad && output_differentiable(0) &&
      !s.no_grad)
    inplace_view_grad(s, c, orig, d);
}

// Under autograd, b = x * 1 and the in-place op into a window of b: d(b)/d(x) is the identity
// outside the window and the op's own gradient inside, as the out-of-place op on the window of x
// gives it.
void OpChecker::inplace_view_grad(const Sample& s, const Case& c, const Tensor& orig, int64_t d) {
  const size_t pos = static_cast<size_t>(self_arg_);
  const Shape shape = std::get<Tensor>(c.args[pos]).shape();
  const bool scalar = shape.empty();
  auto window_of = [&](const Tensor& t) {
    return scalar ? select(t, 0, 1) : narrow(t, d, 1, shape[static_cast<size_t>(d)]);
  };
  EnableGradGuard grad_on;
  try {
    const Tensor g = random_like(orig, sample_seed(op_.name, s.index) + 13);
    Tensor x = contiguous_copy(orig);
    x.requires_grad_(true);
    const Tensor b = x * 1.0;
    std::vector<Value> args = clone_args(c.args);
    args[pos] = window_of(b);
    try {
      call_inplace_(args);
    } catch (const Error& e) {
      // A typed refusal (in-place on a view under autograd is not supported yet) must leave
      // the larger tensor as it was.
      if (std::string diff = difference(b.detach(), orig); !diff.empty())
        failure("derived",
                "the refused in-place call into a window changed the larger tensor: " + diff);
      else
        passed("derived", "gradient not compared, the op refuses: " + first_line(e.what()));
      return;
    }
    const Tensor got = autograd::grad({b}, {x}, {g})[0];
    Tensor x2 = contiguous_copy(orig);
    x2.requires_grad_(true);
    std::vector<Value> args2 = c.args;
    args2[pos] = window_of(x2);
    const Tensor y = call_(args2)[0];
    const Tensor inside = autograd::grad({y}, {x2}, {contiguous_copy(window_of(g))})[0];
    Tensor outside = contiguous_copy(g);
    {
      NoGradGuard no_grad;
      copy_data(window_of(outside), zeros(shape, g.dtype()));
    }
    const Tensor want = inside.defined() ? outside + inside : outside;
    if (std::string diff = difference(got, want, true, 1e-12, 1e-10); !diff.empty())
      failure("derived",
              "in-place into a window of a larger tensor that requires grad: the "
              "gradient w.r.t. the larger tensor differs from the out-of-place op's: " +
                  diff);
  } catch (const std::exception& e) {
    failure("derived",
            std::string("in-place into a window of a tensor that requires grad threw: ") +
                e.what());
  }
}

}  // namespace tg::testing::detail
