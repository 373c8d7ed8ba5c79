// CPU kernels of the class-index losses: nll_loss and its backward, cross_entropy (log_softmax and
// nll_loss fused into one pass per row) and cross_entropy_backward.
//
// self is [C] (one sample), [N, C] or [N, C, d1, ...]; target holds one class index per sample
// ([], [N] or [N, d1, ...]). With w the class weights (1 without them), eps the label smoothing
// and t the target of a sample, its loss is
//   (1 - eps) * (-w[t] * logp[t]) + (eps / C) * (-sum_c w[c] * logp[c])
// (logp = self for nll_loss, log_softmax(self) for cross_entropy), 0 when t == ignore_index.
// "mean" divides the sum by D = sum of w[t] over the non-ignored samples (PyTorch's rule; nan
// when every target is ignored), "sum" by 1, "none" keeps one loss per sample.
#include <tapegrad/backends/cpu/softmax_rows.h>
#include <tapegrad/generated/kernels.h>
#include <tapegrad/ops/factories.h>

#include <cmath>
#include <string>
#include <vector>

namespace tg::cpu {
namespace {

// The validated inputs of a loss kernel.
struct LossInputs {
  Tensor self;     // contiguous; for cross_entropy, with the class dim moved last
  Tensor target;   // contiguous int64, one entry per sample
  Tensor weight;   // contiguous, self's dtype; undefined without weights
  RowLayout rows;  // one row per sample (r = n * inner + i), along the class dim
};

// Checks the target values (before anything is written; the shapes were checked before dispatch,
// ops/checks/loss.cpp) and lays the inputs out. classes_last: copy an [N, C, d1, ...] self to
// [N, d1, ..., C], so every row is contiguous.
LossInputs loss_inputs(const char* op, const Tensor& self, const Tensor& target,
                       const Tensor& weight, int64_t ignore_index, bool classes_last) {
  const int64_t class_dim = self.dim() >= 2 ? 1 : 0;
  const int64_t classes = self.size(class_dim);
  LossInputs in;
  in.target = target.to(kInt64).contiguous();
  const int64_t* t = in.target.data<int64_t>();
  for (int64_t k = 0; k < in.target.numel(); ++k)
    TG_CHECK(t[k] == ignore_index || (t[k] >= 0 && t[k] < classes), IndexError, op, "target ", t[k],
             " is out of range [0, ", classes, ") (sample ", k, "; ignore_index is ", ignore_index,
             ")");
  if (weight.defined()) in.weight = weight.to(self.dtype()).contiguous();
  if (classes_last && self.dim() > 2) {
    std::vector<int64_t> perm = {0};
    for (int64_t d = 2; d < self.dim(); ++d) perm.push_back(d);
    perm.push_back(1);
    in.self = self.permute(perm).contiguous();
    in.rows = row_layout(in.self.shape(), self.dim() - 1);
  } else {
    in.self = self.contiguous();
    in.rows = row_layout(self.shape(), class_dim);
  }
  return in;
}

// The [N, d1, ..., C] result of a classes_last kernel back in self's [N, C, d1, ...] layout.
Tensor classes_back(const Tensor& out) {
  if (out.dim() <= 2) return out;
  std::vector<int64_t> perm = {0, out.dim() - 1};
  for (int64_t d = 1; d < out.dim() - 1; ++d) perm.push_back(d);
  return out.permute(perm).contiguous();
}

// Class weights as a function of the class (1 without weights), and their sum.
template <typename T> struct ClassWeights {
  const T* w;  // null without weights
  int64_t classes;
  T operator()(int64_t c) const { return w ? w[c] : T(1); }
  double sum() const {
    double s = 0;
    for (int64_t c = 0; c < classes; ++c) s += (*this)(c);
    return s;
  }
};
template <typename T> ClassWeights<T> class_weights(const LossInputs& in) {
  return {in.weight.defined() ? in.weight.data<T>() : nullptr, in.rows.size};
}

// D of the header comment: the sum of w[t] over non-ignored samples for "mean", else 1.
template <typename T> double loss_divisor(const LossInputs& in, const ClassWeights<T>& w,
                                          const std::string& reduction, int64_t ignore_index) {
  if (reduction != "mean") return 1;
  const int64_t* t = in.target.data<int64_t>();
  double total = 0;
  for (int64_t r = 0; r < in.target.numel(); ++r)
    if (t[r] != ignore_index) total += w(t[r]);
  return total;
}

// The loss tensor from per-sample losses: kept ("none") or summed and divided by D.
template <typename T> Tensor reduce_losses(const std::vector<double>& losses, const LossInputs& in,
                                           double divisor, const std::string& reduction) {
  if (reduction == "none") {
    Tensor out = empty(in.target.shape(), in.self.dtype(), in.self.device());
    T* o = out.data<T>();
    for (size_t r = 0; r < losses.size(); ++r) o[r] = static_cast<T>(losses[r]);
    return out;
  }
  double total = 0;  // summed in row order: the same result for any thread count
  for (double l : losses) total += l;
  return full({}, total / divisor, in.self.dtype(), in.self.device());
}

// The loss of one non-ignored sample with target t from its row of logits (the header comment's
// formula): -logp[c] = log_sum - (x[c] - max).
template <typename T> TG_ROW_INLINE double cross_entropy_row(const T* row, int64_t classes,
                                                             int64_t t, const ClassWeights<T>& w,
                                                             double eps, double weight_sum) {
  const RowShift<T> s = row_shift(row, classes);
  double loss = (1 - eps) * w(t) * (s.log_sum - (row[t] - s.max));
  if (eps > 0) {  // -sum_c w[c] logp[c] = sum(w) (log_sum + max) - sum_c w[c] x[c]
    const double wx = row_sum(classes, [&](int64_t c) { return w(c) * row[c]; });
    loss += eps / static_cast<double>(classes) *
            (weight_sum * (static_cast<double>(s.log_sum) + s.max) - wx);
  }
  return loss;
}

// y = p_scale * softmax(x), minus smooth * w with label smoothing, then
// y[t] -= target_part: one sample's gradient row (cross_entropy_backward). The softmax's scaling
// and p_scale's are two roundings, as softmax_row then a second pass would give, in one pass.
template <typename T> TG_ROW_INLINE void cross_entropy_grad_row(const T* x, T* y, int64_t classes,
                                                                int64_t t, const ClassWeights<T>& w,
                                                                T p_scale, bool smoothing, T smooth,
                                                                T target_part) {
  exp_minus(x, row_max(x, classes), y, classes);
  const T inv = static_cast<T>(1.0 / row_sum(classes, [&](int64_t c) { return y[c]; }));
  if (smoothing) {
    for (int64_t c = 0; c < classes; ++c) y[c] = p_scale * (y[c] * inv) - smooth * w(c);
  } else {
    for (int64_t c = 0; c < classes; ++c) y[c] = (y[c] * inv) * p_scale;
  }
  y[t] -= target_part;
}

// The two row functions built for AVX2 too, picked at run time (softmax_rows.h).
#ifdef TG_ROWS_AVX2
template <typename T> TG_ROWS_AVX2 double cross_entropy_row_avx2(const T* row, int64_t classes,
                                                                 int64_t t,
                                                                 const ClassWeights<T>& w,
                                                                 double eps, double weight_sum) {
  return cross_entropy_row(row, classes, t, w, eps, weight_sum);
}
template <typename T>
TG_ROWS_AVX2 void cross_entropy_grad_row_avx2(const T* x, T* y, int64_t classes, int64_t t,
                                              const ClassWeights<T>& w, T p_scale, bool smoothing,
                                              T smooth, T target_part) {
  cross_entropy_grad_row(x, y, classes, t, w, p_scale, smoothing, smooth, target_part);
}
#endif

}  // namespace

Tensor nll_loss(const Tensor& self, const Tensor& target, const Tensor& weight,
                const std::string& reduction, int64_t ignore_index) {
  const LossInputs in = loss_inputs("nll_loss", self, target, weight, ignore_index, false);
  Tensor out;
  visit_floating("nll_loss", in.self.dtype(), [&](auto tag) {
    using T = typename decltype(tag)::type;
    const T* x = in.self.data<T>();
    const int64_t* t = in.target.data<int64_t>();
    const ClassWeights<T> w = class_weights<T>(in);
    // One multiply per sample: not worth a thread.
    std::vector<double> losses(static_cast<size_t>(in.rows.rows()), 0.0);
    for (int64_t r = 0; r < in.rows.rows(); ++r)
      if (t[r] != ignore_index)
        losses[r] = -static_cast<double>(w(t[r])) * x[in.rows.start(r) + t[r] * in.rows.inner];
    out = reduce_losses<T>(losses, in, loss_divisor(in, w, reduction, ignore_index), reduction);
  });
  return out;
}

// Zeros, with -grad * w[t] / D at each non-ignored sample's target.
Tensor nll_loss_backward(const Tensor& grad_output, const Tensor& self, const Tensor& target,
                         const Tensor& weight, const std::string& reduction, int64_t ignore_index) {
  const char* op = "nll_loss_backward";
  const LossInputs in = loss_inputs(op, self, target, weight, ignore_index, false);
  const Tensor go = grad_output.to(self.dtype()).contiguous();
  Tensor out = zeros(self.shape(), self.dtype(), self.device());
  visit_floating(op, self.dtype(), [&](auto tag) {
    using T = typename decltype(tag)::type;
    const T* g = go.data<T>();
    const int64_t* t = in.target.data<int64_t>();
    T* o = out.data<T>();
    const ClassWeights<T> w = class_weights<T>(in);
    const double divisor = loss_divisor(in, w, reduction, ignore_index);
    const bool per_sample = reduction == "none";
    for (int64_t r = 0; r < in.rows.rows(); ++r)
      if (t[r] != ignore_index)
        o[in.rows.start(r) + t[r] * in.rows.inner] =
            static_cast<T>(-static_cast<double>(g[per_sample ? r : 0]) * w(t[r]) / divisor);
  });
  return out;
}

Tensor cross_entropy(const Tensor& self, const Tensor& target, const Tensor& weight,
                     const std::string& reduction, int64_t ignore_index, double label_smoothing) {
  const LossInputs in = loss_inputs("cross_entropy", self, target, weight, ignore_index, true);
  Tensor out;
  visit_floating("cross_entropy", in.self.dtype(), [&](auto tag) {
    using T = typename decltype(tag)::type;
    const T* x = in.self.data<T>();
    const int64_t* t = in.target.data<int64_t>();
    const ClassWeights<T> w = class_weights<T>(in);
    const int64_t classes = in.rows.size;
    const double eps = label_smoothing, weight_sum = w.sum();
    std::vector<double> losses(static_cast<size_t>(in.rows.rows()), 0.0);
    parallel_items(in.rows.rows(), classes, [&](int64_t begin, int64_t end) {
      for (int64_t r = begin; r < end; ++r) {
        if (t[r] == ignore_index) continue;
        const T* row = x + r * classes;
#ifdef TG_ROWS_AVX2
        if (rows_have_avx2()) {
          losses[r] = cross_entropy_row_avx2(row, classes, t[r], w, eps, weight_sum);
          continue;
        }
#endif
        losses[r] = cross_entropy_row(row, classes, t[r], w, eps, weight_sum);
      }
    });
    out = reduce_losses<T>(losses, in, loss_divisor(in, w, reduction, ignore_index), reduction);
  });
  return out;
}

// d loss / d self[c] for a non-ignored sample with target t and grad g:
//   g * ((1 - eps) * w[t] * (p[c] - [c == t]) + (eps / C) * (p[c] * sum(w) - w[c])) / D
// with p = softmax(self row): one softmax pass, then one pass to scale.
Tensor cross_entropy_backward(const Tensor& grad_output, const Tensor& self, const Tensor& target,
                              const Tensor& weight, const std::string& reduction,
                              int64_t ignore_index, double label_smoothing) {
  const char* op = "cross_entropy_backward";
  const LossInputs in = loss_inputs(op, self, target, weight, ignore_index, true);
  const Tensor go = grad_output.to(in.self.dtype()).contiguous();
  Tensor out = empty(in.self.shape(), in.self.dtype(), in.self.device());
  visit_floating(op, in.self.dtype(), [&](auto tag) {
    using T = typename decltype(tag)::type;
    const T* x = in.self.data<T>();
    const T* g = go.data<T>();
    const int64_t* t = in.target.data<int64_t>();
    T* o = out.data<T>();
    const ClassWeights<T> w = class_weights<T>(in);
    const int64_t classes = in.rows.size;
    const double divisor = loss_divisor(in, w, reduction, ignore_index);
    const double eps = label_smoothing, weight_sum = w.sum();
    const bool per_sample = reduction == "none";
    parallel_items(in.rows.rows(), classes, [&](int64_t begin, int64_t end) {
      for (int64_t r = begin; r < end; ++r) {
        T* y = o + r * classes;
        if (t[r] == ignore_index) {
          std::fill(y, y + classes, T(0));
          continue;
        }
        const double scale = static_cast<double>(g[per_sample ? r : 0]) / divisor;
        const double target_part = scale * (1 - eps) * w(t[r]);
        const double smooth_part = scale * eps / static_cast<double>(classes);
        const T p_scale = static_cast<T>(target_part + smooth_part * weight_sum);
        const T smooth = static_cast<T>(smooth_part);
        const T target_t = static_cast<T>(target_part);
#ifdef TG_ROWS_AVX2
        if (rows_have_avx2()) {
          cross_entropy_grad_row_avx2(x + r * classes, y, classes, t[r], w, p_scale, eps > 0,
                                      smooth, target_t);
          continue;
        }
#endif
        cross_entropy_grad_row(x + r * classes, y, classes, t[r], w, p_scale, eps > 0, smooth,
                               target_t);
      }
    });
  });
  return classes_back(out);
}

}  // namespace tg::cpu
