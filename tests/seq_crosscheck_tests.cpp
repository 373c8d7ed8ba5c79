// The sequence ops and modules against PyTorch 1.13. tests/data/seq_family_crosscheck.json,
// written by tools/crosscheck/seq_family.py, holds per case the inputs, upstream gradients, and
// PyTorch's outputs and gradients: bmm, baddbmm, scaled_dot_product_attention (1.13's private
// _scaled_dot_product_attention), tril, triu, cumsum, sort, topk, one_hot; LSTM, GRU,
// MultiheadAttention and TransformerEncoderLayer(norm_first) loaded through strict
// load_state_dict from PyTorch's state_dicts; clip_grad_norm_. Each op case is also run with
// create_graph, so the composed formulas that double backward differentiates are compared too.
#include <doctest/doctest.h>
#include <nlohmann/json.hpp>
#include <tapegrad/tapegrad.h>

#include "crosscheck_json.h"

#include <cmath>
#include <map>
#include <string>
#include <vector>

namespace {

using json = nlohmann::json;
using Tensors = std::map<std::string, tg::Tensor>;

const json& cases() {
  static const json data = tg_test::load_test_data("seq_family_crosscheck.json");
  return data;
}

void check_close(const tg::Tensor& got, const json& want, const std::string& what,
                 double tol = 1e-9) {
  INFO(what);
  const tg::Tensor w = tg_test::tensor_from_json(want);
  REQUIRE(got.defined());
  REQUIRE(got.shape() == w.shape());
  CHECK(got.dtype() == w.dtype());
  const std::vector<double> g = got.to_vector<double>(), e = w.to_vector<double>();
  double worst = 0;
  for (size_t i = 0; i < g.size(); ++i)
    worst = std::max(worst, std::abs(g[i] - e[i]) / std::max(1.0, std::abs(e[i])));
  CHECK_MESSAGE(worst <= tol, "largest relative difference ", worst);
}

std::vector<tg::Tensor> run_op(const std::string& op, Tensors& t, const json& a) {
  if (op == "bmm") return {tg::bmm(t["self"], t["mat2"])};
  if (op == "baddbmm")
    return {tg::baddbmm(t["self"], t["batch1"], t["batch2"], a.at("beta").get<double>(),
                        a.at("alpha").get<double>())};
  if (op == "scaled_dot_product_attention") {
    std::optional<tg::Scalar> scale;
    if (a.contains("scale")) scale = a.at("scale").get<double>();
    auto [out, attn] =
        tg::scaled_dot_product_attention(t["query"], t["key"], t["value"],
                                         t.count("attn_mask") ? t["attn_mask"] : tg::Tensor(), 0.0,
                                         a.value("is_causal", false), scale);
    return {out, attn};
  }
  if (op == "tril") return {tg::tril(t["self"], a.at("diagonal"))};
  if (op == "triu") return {tg::triu(t["self"], a.at("diagonal"))};
  if (op == "cumsum") return {tg::cumsum(t["self"], a.at("dim"))};
  if (op == "sort") {
    auto [v, i] = tg::sort(t["self"], a.at("dim"), a.at("descending"), a.at("stable"));
    return {v, i};
  }
  if (op == "topk") {
    auto [v, i] = tg::topk(t["self"], a.at("k"), a.at("dim"), a.at("largest"));
    return {v, i};
  }
  if (op == "one_hot") return {tg::one_hot(t["self"], a.at("num_classes"))};
  FAIL("unknown op ", op);
  return {};
}

}  // namespace

TEST_CASE("sequence ops match PyTorch 1.13 in outputs and gradients (plain and create_graph)") {
  for (const json& c : cases().at("ops")) {
    const std::string op = c.at("op");
    for (bool create_graph : {false, true}) {
      INFO("op ", op, " args ", c.at("args").dump(), create_graph ? " (create_graph)" : "");
      Tensors t;
      std::vector<std::string> diff_names;
      std::vector<tg::Tensor> diff;
      for (const auto& [name, j] : c.at("inputs").items()) {
        t[name] = tg_test::tensor_from_json(j);
        if (c.at("grads").contains(name)) {
          t[name].requires_grad_();
          diff_names.push_back(name);
          diff.push_back(t[name]);
        }
      }
      const std::vector<tg::Tensor> outs = run_op(op, t, c.at("args"));
      REQUIRE(outs.size() == c.at("outputs").size());
      std::vector<tg::Tensor> roots, grads_out;
      for (size_t i = 0; i < outs.size(); ++i) {
        check_close(outs[i], c.at("outputs")[i], op + " output " + std::to_string(i));
        if (!c.at("grad_outputs")[i].is_null()) {
          roots.push_back(outs[i]);
          grads_out.push_back(tg_test::tensor_from_json(c.at("grad_outputs")[i]));
        }
      }
      if (diff.empty()) continue;
      const auto grads = tg::autograd::grad(roots, diff, grads_out, true, create_graph);
      for (size_t i = 0; i < diff.size(); ++i)
        check_close(grads[i], c.at("grads").at(diff_names[i]), op + " grad of " + diff_names[i]);
    }
  }
}

namespace {

// Builds the module a case describes and loads PyTorch's state_dict into it, strictly.
std::shared_ptr<tg::nn::Module> build(const json& c) {
  const std::string kind = c.at("module");
  const json& o = c.at("options");
  std::shared_ptr<tg::nn::Module> m;
  if (kind == "LSTM" || kind == "GRU") {
    const tg::nn::RNNOptions opts{.num_layers = o.at("num_layers"),
                                  .bias = o.value("bias", true),
                                  .batch_first = o.value("batch_first", false),
                                  .dtype = tg::kFloat64};
    if (kind == "LSTM")
      m = std::make_shared<tg::nn::LSTM>(o.at("input_size"), o.at("hidden_size"), opts);
    else
      m = std::make_shared<tg::nn::GRU>(o.at("input_size"), o.at("hidden_size"), opts);
  } else if (kind == "MultiheadAttention") {
    m = std::make_shared<tg::nn::MultiheadAttention>(
        o.at("embed_dim"), o.at("num_heads"),
        tg::nn::MultiheadAttentionOptions{.batch_first = o.value("batch_first", false),
                                          .dtype = tg::kFloat64});
  } else {
    m = std::make_shared<tg::nn::TransformerBlock>(
        o.at("embed_dim"), o.at("num_heads"),
        tg::nn::TransformerBlockOptions{.dim_feedforward = o.at("dim_feedforward"),
                                        .activation = o.at("activation"),
                                        .causal = o.at("causal"),
                                        .dtype = tg::kFloat64});
  }
  tg::StateDict state;
  for (const auto& [name, j] : c.at("state_dict").items())
    state[name] = tg_test::tensor_from_json(j);
  m->load_state_dict(state, /*strict=*/true);
  // And the other way: our state_dict has PyTorch's names and shapes.
  const tg::StateDict ours = m->state_dict();
  CHECK(ours.size() == state.size());
  for (const auto& entry : state) CHECK_MESSAGE(ours.count(entry.first), "missing ", entry.first);
  return m;
}

std::vector<tg::Tensor> run_module(tg::nn::Module& m, const json& c, Tensors& t) {
  const std::string kind = c.at("module");
  const json& o = c.at("options");
  if (kind == "LSTM") {
    auto [out, state] = dynamic_cast<tg::nn::LSTM&>(m)(t["input"], {t["h0"], t["c0"]});
    return {out, std::get<0>(state), std::get<1>(state)};
  }
  if (kind == "GRU") {
    auto [out, h] = dynamic_cast<tg::nn::GRU&>(m)(t["input"], t["h0"]);
    return {out, h};
  }
  if (kind == "MultiheadAttention") {
    auto& mha = dynamic_cast<tg::nn::MultiheadAttention&>(m);
    tg::nn::AttentionCall call{.average_attn_weights = o.value("average_attn_weights", true),
                               .is_causal = o.value("is_causal", false)};
    if (o.contains("key_padding_mask"))
      call.key_padding_mask = tg_test::tensor_from_json(o.at("key_padding_mask"));
    if (o.contains("attn_mask")) call.attn_mask = tg_test::tensor_from_json(o.at("attn_mask"));
    const bool self_attention = o.value("self", false);
    const tg::Tensor& q = t["query"];
    auto [out, w] = self_attention ? mha(q, q, q, call) : mha(q, t["key"], t["value"], call);
    return {out, w};
  }
  return {m(t["x"])};
}

}  // namespace

TEST_CASE("LSTM GRU MultiheadAttention TransformerBlock load PyTorch state_dicts and match it") {
  for (const json& c : cases().at("modules")) {
    const std::string kind = c.at("module");
    INFO(kind, " ", c.at("options").dump());
    auto module = build(c);
    Tensors t;
    std::vector<std::string> names;
    std::vector<tg::Tensor> wrt;
    for (const auto& [name, j] : c.at("inputs").items()) {
      t[name] = tg_test::tensor_from_json(j).requires_grad_();
      names.push_back(name);
      wrt.push_back(t[name]);
    }
    for (const auto& [name, p] : module->named_parameters()) {
      names.push_back("param:" + name);
      wrt.push_back(p);
    }
    const std::vector<tg::Tensor> outs = run_module(*module, c, t);
    REQUIRE(outs.size() == c.at("outputs").size());
    std::vector<tg::Tensor> grads_out;
    for (size_t i = 0; i < outs.size(); ++i) {
      check_close(outs[i], c.at("outputs")[i], kind + " output " + std::to_string(i));
      grads_out.push_back(tg_test::tensor_from_json(c.at("grad_outputs")[i]));
    }
    const auto grads = tg::autograd::grad(outs, wrt, grads_out);
    for (size_t i = 0; i < wrt.size(); ++i)
      check_close(grads[i], c.at("grads").at(names[i]), kind + " grad of " + names[i]);
  }
}

TEST_CASE("clip_grad_norm_ matches PyTorch in total norm and clipped gradients") {
  for (const json& c : cases().at("clip_grad_norm")) {
    const double norm_type =
        c.at("norm_type").is_string() ? tg::nn::utils::kInfNorm : c.at("norm_type").get<double>();
    INFO("norm_type ", norm_type, " max_norm ", c.at("max_norm").get<double>());
    std::vector<tg::Tensor> params;
    for (const json& g : c.at("grads")) {
      tg::Tensor grad = tg_test::tensor_from_json(g);
      tg::Tensor p = tg::zeros(grad.shape(), tg::kFloat64).requires_grad_();
      p.set_grad(grad);
      params.push_back(p);
    }
    const tg::Tensor total = tg::nn::utils::clip_grad_norm_(params, c.at("max_norm"), norm_type);
    CHECK(total.item<double>() == doctest::Approx(c.at("total").get<double>()).epsilon(1e-12));
    for (size_t i = 0; i < params.size(); ++i)
      check_close(params[i].grad(), c.at("clipped")[i], "clipped grad " + std::to_string(i));
  }
}
