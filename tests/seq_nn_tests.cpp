// The sequence modules beyond the PyTorch cross-check: ModuleList, PyTorch's initialisation
// bounds and names, unbatched inputs, argument errors, gradcheck and gradgradcheck of the
// recurrent cells (built from public ops), causality and dropout of TransformerBlock, and the
// edge cases of clip_grad_norm_.
#include <doctest/doctest.h>

#include <cmath>
#include <limits>
#include <string>
#include <vector>

#include <tapegrad/tapegrad.h>

#include "test_helpers.h"

using namespace tg;

namespace {

double max_abs(const Tensor& t) { return amax(abs(t.detach())).item<double>(); }

double max_diff(const Tensor& a, const Tensor& b) {
  REQUIRE(a.shape() == b.shape());
  return max_abs(a.detach().to(kFloat64) - b.detach().to(kFloat64));
}

}  // namespace

TEST_CASE("ModuleList names its modules 0, 1, ... and gives them back by index and type") {
  auto list = std::make_shared<nn::ModuleList>(
      std::initializer_list<std::shared_ptr<nn::Module>>{std::make_shared<nn::Linear>(2, 3),
                                                         std::make_shared<nn::ReLU>()});
  list->push_back(std::make_shared<nn::Linear>(3, 1));
  CHECK(list->size() == 3);
  std::vector<std::string> names;
  for (const auto& [name, _] : list->named_parameters()) names.push_back(name);
  CHECK(names == std::vector<std::string>{"0.weight", "0.bias", "2.weight", "2.bias"});
  CHECK(list->at<nn::Linear>(2)->in_features == 3);
  CHECK(tg_test::error_of<TypeError>([&] { list->at<nn::Linear>(1); }).find("is a ReLU") !=
        std::string::npos);
  CHECK(tg_test::error_of<IndexError>([&] { (*list)[3]; }).find("out of range") !=
        std::string::npos);
  int count = 0;
  for (const auto& m : *list) count += m != nullptr;
  CHECK(count == 3);
}

TEST_CASE("LSTM and GRU: PyTorch's parameter names, shapes and init bound") {
  manual_seed(0);
  nn::LSTM lstm(3, 5, {.num_layers = 2});
  nn::GRU gru(3, 5, {.bias = false});
  std::vector<std::string> names;
  for (const auto& [name, t] : lstm.named_parameters()) names.push_back(name);
  CHECK(names == std::vector<std::string>{"weight_ih_l0", "weight_hh_l0", "bias_ih_l0",
                                          "bias_hh_l0", "weight_ih_l1", "weight_hh_l1",
                                          "bias_ih_l1", "bias_hh_l1"});
  CHECK(lstm.weight_ih[0].shape() == Shape{20, 3});
  CHECK(lstm.weight_ih[1].shape() == Shape{20, 5});
  CHECK(gru.named_parameters().size() == 2);
  CHECK(gru.weight_hh[0].shape() == Shape{15, 5});
  const double bound = 1 / std::sqrt(5.0);
  for (const Tensor& p : lstm.parameters()) CHECK(max_abs(p) <= bound);
  CHECK(max_abs(lstm.weight_hh[1]) > 0.8 * bound);  // uniform over the whole range
  CHECK(lstm.to_string() == "LSTM(3, 5, num_layers=2)");
}

TEST_CASE("LSTM and GRU: an unbatched input gives the batch-of-one result") {
  manual_seed(1);
  nn::LSTM lstm(3, 4, {.num_layers = 2, .batch_first = true, .dtype = kFloat64});
  const Tensor x = randn({6, 3}, kFloat64), h0 = randn({2, 4}, kFloat64),
               c0 = randn({2, 4}, kFloat64);
  auto [out, state] = lstm(x, {h0, c0});
  auto [out_b, state_b] = lstm(x.unsqueeze(0), {h0.unsqueeze(1), c0.unsqueeze(1)});
  CHECK(out.shape() == Shape{6, 4});
  CHECK(max_diff(out, out_b.squeeze(0)) == 0);
  CHECK(max_diff(std::get<1>(state), std::get<1>(state_b).squeeze(1)) == 0);
  nn::GRU gru(3, 4, {.dtype = kFloat64});
  auto [g, h] = gru(x, Tensor());
  CHECK(g.shape() == Shape{6, 4});
  CHECK(h.shape() == Shape{1, 4});
  CHECK(max_diff(g.select(0, 5), h.select(0, 0)) == 0);  // the last output is the final state
  // The single-input forward gives the output alone (for Sequential).
  CHECK(max_diff(gru(x), g) == 0);
}

TEST_CASE("LSTM and GRU reject bad inputs and states with clear errors") {
  nn::LSTM lstm(3, 4);
  auto msg = [&](auto fn) { return tg_test::error_of<ValueError>(fn); };
  CHECK(msg([&] {
          lstm(zeros({5, 2, 2}), {});
        }).find("expected input with last dim 3") != std::string::npos);
  CHECK(msg([&] { lstm(zeros({5}), {}); }).find("expected input of 3 dims") != std::string::npos);
  CHECK(msg([&] {
          lstm(zeros({5, 2, 3}), {zeros({1, 3, 4}), Tensor()});
        }).find("expected an initial state of shape [1, 2, 4], got [1, 3, 4]") !=
        std::string::npos);
  CHECK(tg_test::error_of<TypeError>([&] {
          lstm(zeros({5, 2, 3}, kFloat64), {});
        }).find("input has dtype float64") != std::string::npos);
  CHECK(msg([] { nn::GRU(3, 0); }).find("must be > 0") != std::string::npos);
}

TEST_CASE("the LSTM and GRU cells pass gradcheck and gradgradcheck (public ops throughout)") {
  manual_seed(2);
  auto r = [](Shape s) { return (randn(s, kFloat64) * 0.5).requires_grad_(); };
  const std::vector<Tensor> lstm_in = {r({2, 3}),  r({2, 4}), r({2, 4}), r({16, 3}),
                                       r({16, 4}), r({16}),   r({16})};
  auto lstm_fn = [](const std::vector<Tensor>& t) {
    auto [h, c] = nn::lstm_cell(t[0], t[1], t[2], t[3], t[4], t[5], t[6]);
    return std::vector<Tensor>{h, c};
  };
  CHECK(autograd::gradcheck(lstm_fn, lstm_in).ok);
  CHECK(autograd::gradgradcheck(lstm_fn, lstm_in).ok);
  const std::vector<Tensor> gru_in = {r({2, 3}),  r({2, 4}), r({12, 3}),
                                      r({12, 4}), r({12}),   r({12})};
  auto gru_fn = [](const std::vector<Tensor>& t) {
    return nn::gru_cell(t[0], t[1], t[2], t[3], t[4], t[5]);
  };
  CHECK(autograd::gradcheck(gru_fn, gru_in).ok);
  CHECK(autograd::gradgradcheck(gru_fn, gru_in).ok);
}

TEST_CASE("MultiheadAttention: PyTorch's names and init, need_weights, masks and layouts") {
  manual_seed(3);
  nn::MultiheadAttention mha(8, 2, {.dtype = kFloat64});
  std::vector<std::string> names;
  for (const auto& [name, t] : mha.named_parameters()) names.push_back(name);
  CHECK(names == std::vector<std::string>{"in_proj_weight", "in_proj_bias", "out_proj.weight",
                                          "out_proj.bias"});
  CHECK(max_abs(mha.in_proj_bias) == 0);
  CHECK(max_abs(mha.out_proj->bias) == 0);
  CHECK(max_abs(mha.in_proj_weight) <= std::sqrt(6.0 / (8 + 24)));  // xavier_uniform_
  const Tensor x = randn({5, 3, 8}, kFloat64);                      // [L, N, E]
  auto [y, w] = mha(x, x, x);
  CHECK(y.shape() == Shape{5, 3, 8});
  CHECK(w.shape() == Shape{3, 5, 5});
  CHECK(max_diff(sum(w, {-1}), ones({3, 5}, kFloat64)) < 1e-12);
  auto [y2, w2] = mha(x, x, x, {.need_weights = false});
  CHECK(!w2.defined());
  CHECK(max_diff(y, y2) == 0);
  // batch_first is a layout only: same parameters, transposed inputs, transposed outputs.
  nn::MultiheadAttention bf(8, 2, {.batch_first = true, .dtype = kFloat64});
  bf.load_state_dict(mha.state_dict());
  const Tensor xb = x.transpose(0, 1);
  CHECK(max_diff(std::get<0>(bf(xb, xb, xb)), y.transpose(0, 1)) < 1e-12);
  // A bool attn_mask marks pairs not allowed (MultiheadAttention's convention): a causal one
  // gives what is_causal gives.
  const Tensor upper = triu(ones({5, 5}, kBool), 1);
  auto [yc, wc] = mha(x, x, x, {.attn_mask = upper});
  CHECK(max_diff(yc, std::get<0>(mha(x, x, x, {.is_causal = true}))) < 1e-12);
  CHECK(max_abs(triu(wc, 1)) == 0);
  auto bad = [&](const nn::AttentionCall& call) {
    return tg_test::error_of<ValueError>([&] { mha(x, x, x, call); });
  };
  CHECK(bad({.attn_mask = ones({4, 5}, kBool)})
            .find("attn_mask must have shape [5, 5] or [6, 5, 5]") != std::string::npos);
  CHECK(bad({.key_padding_mask = ones({5, 3}, kBool)})
            .find("key_padding_mask must have shape [3, 5]") != std::string::npos);
  CHECK(tg_test::error_of<ValueError>([] {
          nn::MultiheadAttention(8, 3);
        }).find("multiple of num_heads") != std::string::npos);
}

TEST_CASE("TransformerBlock: causal, dropout only in training, PyTorch's submodule names") {
  manual_seed(4);
  nn::TransformerBlock block(8, 2, {.dropout = 0.3, .causal = true, .dtype = kFloat64});
  const StateDict state = block.state_dict();
  for (const char* name : {"self_attn.in_proj_weight", "self_attn.out_proj.bias", "linear1.weight",
                           "linear2.bias", "norm1.weight", "norm2.bias"})
    CHECK_MESSAGE(state.count(name), name);
  CHECK(block.linear1->weight.shape() == Shape{32, 8});
  const Tensor x = randn({2, 6, 8}, kFloat64).requires_grad_();
  block.eval();
  const Tensor y = block(x);
  CHECK(max_diff(y, block(x)) == 0);  // eval: no dropout
  const Tensor g = autograd::grad({y.select(1, 2).sum()}, {x})[0];
  CHECK(max_abs(g.narrow(1, 3, 3)) == 0);  // position 2 does not see positions 3..5
  CHECK(max_abs(g.narrow(1, 0, 3)) > 0);
  block.train();
  CHECK(max_diff(block(x), y) > 0);  // training: dropout
}

TEST_CASE("clip_grad_norm_: no gradients, non-finite totals, and the norm_type check") {
  CHECK(nn::utils::clip_grad_norm_({zeros({2}).requires_grad_()}, 1.0).item<double>() == 0);
  const Tensor p = zeros({2}, kFloat64).requires_grad_();
  p.set_grad(tensor(std::vector<double>{std::numeric_limits<double>::infinity(), 1}));
  CHECK(tg_test::error_of<ValueError>([&] {
          nn::utils::clip_grad_norm_({p}, 1.0, 2.0, true);
        }).find("is inf, so it cannot be clipped") != std::string::npos);
  CHECK(p.grad().to_vector<double>()[1] == 1);  // unchanged by the failed call
  CHECK(std::isinf(nn::utils::clip_grad_norm_({p}, 1.0).item<double>()));
  CHECK(p.grad().to_vector<double>()[1] == 0);  // scaled by max_norm / inf, as PyTorch
  CHECK(tg_test::error_of<ValueError>([&] {
          nn::utils::clip_grad_norm_({p}, 1.0, 0.0);
        }).find("norm_type must be > 0") != std::string::npos);
}
