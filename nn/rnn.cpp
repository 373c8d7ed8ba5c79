#include <tapegrad/nn/rnn.h>

#include <cmath>
#include <sstream>

#include <tapegrad/core/error.h>
#include <tapegrad/ops/factories.h>
#include <tapegrad/ops/operators.h>
#include <tapegrad/generated/functions.h>
#include <tapegrad/nn/init.h>

namespace tg::nn {

namespace {

// The LSTM step from the input's projection xw = x W_ih^T + b_ih (computed for every step at once).
std::tuple<Tensor, Tensor> lstm_step(const Tensor& xw, const Tensor& h, const Tensor& c,
                                     const Tensor& w_hh, const Tensor& b_hh) {
  const int64_t H = h.size(-1);
  const Tensor gates = xw + linear(h, w_hh, b_hh);
  // One sigmoid over all four gates (g's is unused) is cheaper than three over slices of them.
  const Tensor s = sigmoid(gates);
  const Tensor c_next =
      s.narrow(-1, H, H) * c + s.narrow(-1, 0, H) * tanh(gates.narrow(-1, 2 * H, H));
  return {s.narrow(-1, 3 * H, H) * tanh(c_next), c_next};
}

// The GRU step from xw = x W_ih^T + b_ih.
Tensor gru_step(const Tensor& xw, const Tensor& h, const Tensor& w_hh, const Tensor& b_hh) {
  const int64_t H = h.size(-1);
  const Tensor hw = linear(h, w_hh, b_hh);
  const Tensor rz = sigmoid(xw.narrow(-1, 0, 2 * H) + hw.narrow(-1, 0, 2 * H));
  const Tensor n = tanh(xw.narrow(-1, 2 * H, H) + rz.narrow(-1, 0, H) * hw.narrow(-1, 2 * H, H));
  return n + rz.narrow(-1, H, H) * (h - n);  // (1 - z) * n + z * h
}

}  // namespace

std::tuple<Tensor, Tensor> lstm_cell(const Tensor& x, const Tensor& h, const Tensor& c,
                                     const Tensor& w_ih, const Tensor& w_hh, const Tensor& b_ih,
                                     const Tensor& b_hh) {
  return lstm_step(linear(x, w_ih, b_ih), h, c, w_hh, b_hh);
}

Tensor gru_cell(const Tensor& x, const Tensor& h, const Tensor& w_ih, const Tensor& w_hh,
                const Tensor& b_ih, const Tensor& b_hh) {
  return gru_step(linear(x, w_ih, b_ih), h, w_hh, b_hh);
}

// ---- RNNBase ---------------------------------------------------------------------------------

RNNBase::RNNBase(const char* type, int64_t gates, int64_t in, int64_t hidden,
                 const RNNOptions& opts)
    : Module(type), input_size(in), hidden_size(hidden), options(opts) {
  TG_CHECK(in > 0 && hidden > 0, ValueError, type, "input_size and hidden_size must be > 0, got ",
           in, " and ", hidden);
  TG_CHECK(opts.num_layers >= 1, ValueError, type, "num_layers must be >= 1, got ",
           opts.num_layers);
  TG_CHECK(opts.dropout >= 0 && opts.dropout <= 1, ValueError, type,
           "dropout must be in [0, 1], got ", opts.dropout);
  // PyTorch's reset_parameters: every parameter U(-1/sqrt(hidden), 1/sqrt(hidden)).
  const double bound = 1 / std::sqrt(static_cast<double>(hidden));
  for (int64_t k = 0; k < opts.num_layers; ++k) {
    const std::string l = "_l" + std::to_string(k);
    auto param = [&](const std::string& name, Shape shape) {
      Tensor t = register_parameter(name + l, empty(shape, opts.dtype));
      init::uniform_(t, -bound, bound);
      return t;
    };
    weight_ih.push_back(param("weight_ih", {gates * hidden, k == 0 ? in : hidden}));
    weight_hh.push_back(param("weight_hh", {gates * hidden, hidden}));
    bias_ih.push_back(opts.bias ? param("bias_ih", {gates * hidden}) : Tensor());
    bias_hh.push_back(opts.bias ? param("bias_hh", {gates * hidden}) : Tensor());
  }
}

std::string RNNBase::extra_repr() const {
  std::ostringstream os;
  os << input_size << ", " << hidden_size;
  if (options.num_layers != 1) os << ", num_layers=" << options.num_layers;
  if (!options.bias) os << ", bias=false";
  if (options.batch_first) os << ", batch_first=true";
  if (options.dropout != 0) os << ", dropout=" << options.dropout;
  return os.str();
}

bool RNNBase::prepare(Tensor& input, std::vector<Tensor*> states) const {
  const char* op = type_name().c_str();
  TG_CHECK(input.dim() == 2 || input.dim() == 3, ValueError, op,
           "expected input of 3 dims ([T, N, features], or [N, T, features] with batch_first) or "
           "2 dims (unbatched [T, features]), got shape ",
           input.shape());
  TG_CHECK(input.size(-1) == input_size, ValueError, op, "expected input with last dim ",
           input_size, " (input_size), got shape ", input.shape());
  TG_CHECK(input.dtype() == weight_ih[0].dtype(), TypeError, op, "input has dtype ",
           dtype_name(input.dtype()), ", the parameters ", dtype_name(weight_ih[0].dtype()));
  const bool unbatched = input.dim() == 2;
  if (unbatched) {
    input = input.unsqueeze(1);
  } else if (options.batch_first) {
    input = input.transpose(0, 1);
  }
  const Shape want{options.num_layers, input.size(1), hidden_size};
  for (Tensor* s : states) {
    if (!s->defined()) {
      *s = zeros(want, input.dtype(), input.device());
      continue;
    }
    const Tensor batched = unbatched && s->dim() == 2 ? s->unsqueeze(1) : *s;
    TG_CHECK(batched.shape() == want && s->dim() == (unbatched ? 2 : 3), ValueError, op,
             "expected an initial state of shape ",
             unbatched ? Shape{options.num_layers, hidden_size} : want, ", got ", s->shape());
    TG_CHECK(s->dtype() == input.dtype(), TypeError, op, "the initial state has dtype ",
             dtype_name(s->dtype()), ", input ", dtype_name(input.dtype()));
    *s = batched;
  }
  return unbatched;
}

void RNNBase::finish(Tensor& output, std::vector<Tensor*> states, bool unbatched) const {
  if (unbatched) {
    output = output.squeeze(1);
    for (Tensor* s : states) *s = s->squeeze(1);
  } else if (options.batch_first) {
    output = output.transpose(0, 1);
  }
}

template <typename Step> Tensor RNNBase::run_layers(const Tensor& input,
                                                    std::vector<std::vector<Tensor>>& states,
                                                    Step step) {
  Tensor x = input;
  const int64_t T = x.size(0);
  for (int64_t k = 0; k < options.num_layers; ++k) {
    // The input projection of every step in one product, before the serial loop.
    const Tensor xw = linear(x, weight_ih[k], bias_ih[k]);
    std::vector<Tensor> outputs;
    outputs.reserve(static_cast<size_t>(T));
    for (int64_t t = 0; t < T; ++t) {
      states[k] = step(k, xw.select(0, t), states[k]);
      outputs.push_back(states[k][0]);
    }
    x = T > 0 ? stack(outputs, 0) : zeros({0, x.size(1), hidden_size}, x.dtype(), x.device());
    if (k + 1 < options.num_layers && options.dropout > 0 && is_training())
      x = std::get<0>(dropout(x, options.dropout, true));
  }
  return x;
}

// ---- LSTM ------------------------------------------------------------------------------------

LSTM::LSTM(int64_t in, int64_t hidden, const RNNOptions& opts)
    : RNNBase("LSTM", 4, in, hidden, opts) {}

std::tuple<Tensor, LSTM::State> LSTM::forward(const Tensor& input, const State& state) {
  Tensor x = input, h0 = std::get<0>(state), c0 = std::get<1>(state);
  const bool unbatched = prepare(x, {&h0, &c0});
  std::vector<std::vector<Tensor>> states;
  for (int64_t k = 0; k < options.num_layers; ++k)
    states.push_back({h0.select(0, k), c0.select(0, k)});
  Tensor out =
      run_layers(x, states, [&](int64_t k, const Tensor& xw, const std::vector<Tensor>& s) {
        auto [h, c] = lstm_step(xw, s[0], s[1], weight_hh[k], bias_hh[k]);
        return std::vector<Tensor>{h, c};
      });
  std::vector<Tensor> hs, cs;
  for (auto& s : states) {
    hs.push_back(s[0]);
    cs.push_back(s[1]);
  }
  Tensor h_n = stack(hs, 0), c_n = stack(cs, 0);
  finish(out, {&h_n, &c_n}, unbatched);
  return {out, {h_n, c_n}};
}

Tensor LSTM::forward(const Tensor& input) { return std::get<0>(forward(input, State{})); }

// ---- GRU -------------------------------------------------------------------------------------

GRU::GRU(int64_t in, int64_t hidden, const RNNOptions& opts)
    : RNNBase("GRU", 3, in, hidden, opts) {}

std::tuple<Tensor, Tensor> GRU::forward(const Tensor& input, const Tensor& initial) {
  Tensor x = input, h0 = initial;
  const bool unbatched = prepare(x, {&h0});
  std::vector<std::vector<Tensor>> states;
  for (int64_t k = 0; k < options.num_layers; ++k) states.push_back({h0.select(0, k)});
  Tensor out =
      run_layers(x, states, [&](int64_t k, const Tensor& xw, const std::vector<Tensor>& s) {
        return std::vector<Tensor>{gru_step(xw, s[0], weight_hh[k], bias_hh[k])};
      });
  std::vector<Tensor> hs;
  for (auto& s : states) hs.push_back(s[0]);
  Tensor h_n = stack(hs, 0);
  finish(out, {&h_n}, unbatched);
  return {out, h_n};
}

Tensor GRU::forward(const Tensor& input) { return std::get<0>(forward(input, Tensor())); }

}  // namespace tg::nn
