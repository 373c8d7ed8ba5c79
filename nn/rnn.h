#pragma once
// Recurrent layers LSTM and GRU, with PyTorch's parameter names (weight_ih_l0, weight_hh_l0,
// bias_ih_l0, bias_hh_l0, ... per layer), gate order and initialisation (every parameter
// U(-1/sqrt(hidden_size), 1/sqrt(hidden_size))), so state_dicts map one-to-one onto torch.nn.LSTM
// and torch.nn.GRU. The cells are written with public ops: their gradients (and second
// derivatives) are those of the ops, each checked by the op check.
//
//   tg::nn::LSTM lstm(8, 16, {.num_layers = 2, .batch_first = true});
//   auto [out, state] = lstm(x, {});              // x [N, T, 8] -> out [N, T, 16]
//   auto [h_n, c_n] = state;                      // each [2, N, 16]
#include <cstdint>
#include <string>
#include <tuple>
#include <vector>

#include <tapegrad/nn/module.h>

namespace tg::nn {

struct RNNOptions {
  int64_t num_layers = 1;
  bool bias = true;
  bool batch_first = false;  // input and output [N, T, features] instead of [T, N, features]
  double dropout = 0.0;      // on the outputs of every layer but the last, in training mode
  DType dtype = kFloat32;
};

// One LSTM step. x [N, in], h and c [N, hidden]; w_ih [4 hidden, in], w_hh [4 hidden, hidden],
// biases [4 hidden] or undefined. Gates i, f, g, o (in that order along w's rows):
// c' = sigmoid(f) * c + sigmoid(i) * tanh(g), h' = sigmoid(o) * tanh(c'). Returns (h', c').
std::tuple<Tensor, Tensor> lstm_cell(const Tensor& x, const Tensor& h, const Tensor& c,
                                     const Tensor& w_ih, const Tensor& w_hh, const Tensor& b_ih,
                                     const Tensor& b_hh);
// One GRU step, gates r, z, n: r, z = sigmoid(x W_ir,z + b_ir,z + h W_hr,z + b_hr,z),
// n = tanh(x W_in + b_in + r * (h W_hn + b_hn)), h' = (1 - z) * n + z * h.
Tensor gru_cell(const Tensor& x, const Tensor& h, const Tensor& w_ih, const Tensor& w_hh,
                const Tensor& b_ih, const Tensor& b_hh);

// The parameters and the layer loop shared by LSTM and GRU.
class RNNBase : public Module {
 public:
  std::string extra_repr() const override;
  int64_t input_size, hidden_size;
  RNNOptions options;
  // Per layer; the biases are undefined without options.bias.
  std::vector<Tensor> weight_ih, weight_hh, bias_ih, bias_hh;

 protected:
  RNNBase(const char* type, int64_t gates, int64_t input_size, int64_t hidden_size,
          const RNNOptions& options);
  // Runs every layer over input [T, N, in] from the initial states (one [N, hidden] tensor per
  // layer and state kind), returning the last layer's outputs [T, N, hidden] and the final
  // states. step(layer, input projection [N, gates * hidden], states) gives the new states,
  // whose first is the layer's output.
  template <typename Step>
  Tensor run_layers(const Tensor& input, std::vector<std::vector<Tensor>>& states, Step step);
  // Checks and brings input and a state argument to the [T, N, in] / [layers, N, hidden] form;
  // returns whether input was unbatched (2-D).
  bool prepare(Tensor& input, std::vector<Tensor*> states) const;
  // Undoes prepare on an output and the final states.
  void finish(Tensor& output, std::vector<Tensor*> states, bool unbatched) const;
};

class LSTM : public RNNBase {
 public:
  LSTM(int64_t input_size, int64_t hidden_size, const RNNOptions& options = {});
  using State = std::tuple<Tensor, Tensor>;  // (h, c), each [num_layers, N, hidden]
  // input [T, N, input_size] ([N, T, input_size] with batch_first, [T, input_size] unbatched);
  // state (h_0, c_0), either undefined for zeros ([num_layers, hidden_size] each when
  // unbatched). Returns the last layer's h at every step [T, N, hidden_size] and (h_n, c_n).
  std::tuple<Tensor, State> forward(const Tensor& input, const State& state);
  std::tuple<Tensor, State> operator()(const Tensor& input, const State& state) {
    return forward(input, state);
  }
  Tensor forward(const Tensor& input) override;  // the output alone, zero initial state
  using Module::operator();
};

class GRU : public RNNBase {
 public:
  GRU(int64_t input_size, int64_t hidden_size, const RNNOptions& options = {});
  // As LSTM::forward with one state h ([num_layers, N, hidden]; undefined for zeros).
  std::tuple<Tensor, Tensor> forward(const Tensor& input, const Tensor& h0);
  std::tuple<Tensor, Tensor> operator()(const Tensor& input, const Tensor& h0) {
    return forward(input, h0);
  }
  Tensor forward(const Tensor& input) override;
  using Module::operator();
};

}  // namespace tg::nn
