// nn::Module, the layers, optimizers and schedules (expected values from PyTorch 1.13), and the
// tape pictures.
#include <doctest/doctest.h>

#include <cmath>
#include <sstream>

#include <tapegrad/tapegrad.h>

using namespace tg;

namespace {

void check_close(const Tensor& t, const std::vector<double>& expected, double tol = 1e-9) {
  const auto got = t.to_vector<double>();
  REQUIRE(got.size() == expected.size());
  for (size_t i = 0; i < got.size(); ++i)
    CHECK(got[i] == doctest::Approx(expected[i]).epsilon(tol));
}

struct TwoLayer : nn::Module {
  std::shared_ptr<nn::Linear> fc1, fc2;
  TwoLayer() : Module("TwoLayer") {
    fc1 = register_module("fc1", std::make_shared<nn::Linear>(3, 4));
    fc2 = register_module("fc2", std::make_shared<nn::Linear>(4, 2, false));
  }
  Tensor forward(const Tensor& x) override { return (*fc2)(relu((*fc1)(x))); }
};

// p -> sum(p * p * [1, 2, 3]) + sum(p), three steps, as the PyTorch reference script does.
std::vector<double> train_three_steps(nn::Optimizer& opt, const Tensor& p) {
  const Tensor c = tensor({1.0, 2.0, 3.0});
  for (int s = 0; s < 3; ++s) {
    opt.zero_grad();
    (p * p * c).sum().add(p.sum()).backward();
    opt.step();
  }
  return p.to_vector<double>();
}

Tensor start_param() { return tensor({1.0, -2.0, 0.5}).requires_grad_(); }

}  // namespace

TEST_CASE("Module: names, parameters, state_dict and strict loading") {
  manual_seed(0);
  TwoLayer net;
  const auto named = net.named_parameters();
  REQUIRE(named.size() == 3);
  CHECK(named[0].first == "fc1.weight");
  CHECK(named[1].first == "fc1.bias");
  CHECK(named[2].first == "fc2.weight");
  CHECK(named[0].second.name() == "fc1.weight");  // tensors carry their names for pictures
  CHECK(net.num_parameters() == 3 * 4 + 4 + 4 * 2);
  for (const auto& p : net.parameters()) CHECK((p.is_leaf() && p.requires_grad()));

  StateDict state = net.state_dict();
  CHECK(state.size() == 3);
  TwoLayer other;
  other.load_state_dict(state);
  const Tensor x = randn({5, 3});
  CHECK(net(x).to_vector<float>() == other(x).to_vector<float>());

  // A failed strict load names the problem and changes nothing.
  const auto before = other.fc1->weight.to_vector<float>();
  StateDict bad = state;
  bad["fc1.weight"] = zeros({4, 3});
  bad["fc2.weight"] = zeros({2, 5});
  CHECK_THROWS_WITH_AS(other.load_state_dict(bad),
                       doctest::Contains("'fc2.weight' has shape [2, 5]"), ValueError);
  CHECK(other.fc1->weight.to_vector<float>() == before);
  StateDict missing = state;
  missing.erase("fc1.bias");
  CHECK_THROWS_WITH_AS(other.load_state_dict(missing), doctest::Contains("missing key 'fc1.bias'"),
                       ValueError);
  other.load_state_dict(missing, /*strict=*/false);
  StateDict extra = state;
  extra["fc3.weight"] = zeros({1});
  CHECK_THROWS_WITH_AS(other.load_state_dict(extra),
                       doctest::Contains("unexpected key 'fc3.weight'"), ValueError);
}

TEST_CASE("Module: train/eval reaches submodules - printing") {
  auto mlp = nn::MLP({4, 8, 3}, {.dropout = 0.25});
  CHECK(mlp->is_training());
  mlp->eval();
  CHECK(!mlp->is_training());
  CHECK(!(*mlp)[2].is_training());
  CHECK(mlp->to_string() ==
        "Sequential(\n"
        "  (0): Linear(in_features=4, out_features=8, bias=true)\n"
        "  (1): ReLU()\n"
        "  (2): Dropout(p=0.25)\n"
        "  (3): Linear(in_features=8, out_features=3, bias=true)\n"
        ")");
  CHECK(mlp->named_parameters()[2].first == "3.weight");
  CHECK_THROWS_WITH_AS(nn::MLP({4, 3}, {.activation = "swish"}),
                       doctest::Contains("activation must be one of"), ValueError);
}

TEST_CASE("Linear: exact values, PyTorch's init bounds, gradients") {
  manual_seed(1);
  nn::Linear fc(3, 2, true, kFloat64);
  fc.load_state_dict(
      {{"weight", tensor({{1.0, 2.0, 3.0}, {-1.0, 0.5, 0.0}})}, {"bias", tensor({0.5, -0.5})}});
  const Tensor x = tensor({{1.0, 1.0, 1.0}, {0.0, 2.0, -1.0}});
  check_close(fc(x), {6.5, -1.0, 1.5, 0.5});
  fc(x).sum().backward();
  check_close(fc.weight.grad(), {1, 3, 0, 1, 3, 0});
  check_close(fc.bias.grad(), {2, 2});

  nn::Linear big(100, 50);
  const double bound = 1.0 / std::sqrt(100.0);
  CHECK(amax(abs(big.weight), {}).item<double>() <= bound);
  CHECK(amax(abs(big.weight), {}).item<double>() > 0.9 * bound);
  CHECK(amax(abs(big.bias), {}).item<double>() <= bound);
  CHECK_THROWS_WITH_AS(big(zeros({2, 99})), doctest::Contains("expected input with last dim 100"),
                       ValueError);
}

TEST_CASE("SGD matches torch.optim.SGD") {
  {
    Tensor p = start_param();
    nn::SGD opt({p}, {.lr = 0.1});
    check_close(tensor(train_three_steps(opt, p)), {0.268, -0.628, -0.124});
  }
  {
    Tensor p = start_param();
    nn::SGD opt({p}, {.lr = 0.1, .momentum = 0.9, .dampening = 0.1, .weight_decay = 0.01});
    check_close(tensor(train_three_steps(opt, p)),
                {-0.35525093781, 0.63532120462, -0.729672295405});
  }
  {
    Tensor p = start_param();
    nn::SGD opt({p}, {.lr = 0.1, .momentum = 0.9, .weight_decay = 0.01, .nesterov = true});
    check_close(tensor(train_three_steps(opt, p)),
                {-0.664711340159, 0.509527893418, -0.3681917484295});
  }
  CHECK_THROWS_WITH_AS(nn::SGD({start_param()}, {.lr = 0.1, .nesterov = true}),
                       doctest::Contains("nesterov needs momentum > 0"), ValueError);
  CHECK_THROWS_WITH_AS(nn::SGD({tensor({1.0})}, {}), doctest::Contains("requires grad"),
                       ValueError);
}

TEST_CASE("Adam, AMSGrad and AdamW match torch.optim") {
  {
    Tensor p = start_param();
    nn::Adam opt({p}, {.lr = 0.1, .weight_decay = 0.01});
    check_close(tensor(train_three_steps(opt, p)),
                {0.7009048596003349, -1.700738062129365, 0.2029725231048794});
  }
  {
    Tensor p = start_param();
    nn::Adam opt({p}, {.lr = 0.1, .amsgrad = true});
    check_close(tensor(train_three_steps(opt, p)),
                {0.7009028705180997, -1.7007383998064156, 0.20297049327688482});
  }
  {
    Tensor p = start_param();
    nn::AdamW opt({p}, {.lr = 0.1, .weight_decay = 0.1});
    check_close(tensor(train_three_steps(opt, p)),
                {0.6743071513248575, -1.6445184542474305, 0.19133267490148453});
  }
}

TEST_CASE("Optimizer state_dict resumes training exactly") {
  // Six steps in one go equal three steps, save, restore into a fresh optimizer, three more.
  Tensor a = start_param();
  nn::AdamW straight({a}, {.lr = 0.05, .weight_decay = 0.1, .amsgrad = true});
  train_three_steps(straight, a);
  const StateDict saved = straight.state_dict();
  CHECK(saved.count("param.0.exp_avg"));
  CHECK(saved.at("step").item<int64_t>() == 3);
  train_three_steps(straight, a);

  Tensor b = start_param();
  nn::AdamW first({b}, {.lr = 0.05, .weight_decay = 0.1, .amsgrad = true});
  train_three_steps(first, b);
  nn::AdamW resumed({b}, {.lr = 1.0});  // wrong hyperparameters: the state brings the right ones
  resumed.load_state_dict(saved);
  CHECK(resumed.lr() == 0.05);
  CHECK(resumed.options.weight_decay == 0.1);
  train_three_steps(resumed, b);
  CHECK(a.to_vector<double>() == b.to_vector<double>());

  StateDict bad = saved;
  bad["param.0.exp_avg"] = zeros({4}, kFloat64);
  CHECK_THROWS_WITH_AS(resumed.load_state_dict(bad),
                       doctest::Contains("'param.0.exp_avg' has shape [4]"), ValueError);
  CHECK(resumed.steps() == 6);  // unchanged by the failed load
}

TEST_CASE("StepLR and CosineAnnealingLR match torch.optim.lr_scheduler") {
  Tensor p = start_param();
  nn::SGD opt({p}, {.lr = 1.0});
  nn::StepLR step(opt, 2, 0.5);
  std::vector<double> lrs;
  for (int e = 0; e < 5; ++e) {
    step.step();
    lrs.push_back(opt.lr());
  }
  check_close(tensor(lrs), {1.0, 0.5, 0.5, 0.25, 0.25});

  nn::SGD opt2({p}, {.lr = 1.0});
  nn::CosineAnnealingLR cosine(opt2, 4, 0.1);
  lrs.clear();
  for (int e = 0; e < 5; ++e) {
    cosine.step();
    lrs.push_back(opt2.lr());
  }
  check_close(tensor(lrs),
              {0.8681980515339464, 0.55, 0.23180194846605368, 0.1, 0.2318019484660536});
}

TEST_CASE("to_dot and tape_of show the recorded ops, their formulas and the leaves") {
  const Tensor x = tensor({1.0, 2.0}).requires_grad_().set_name("x");
  const Tensor w = tensor({3.0, 4.0}).requires_grad_().set_name("w");
  const Tensor loss = (x * w).sum().set_name("loss");
  const auto tape = autograd::tape_of(loss);
  REQUIRE(tape.size() == 2);
  CHECK(tape[0].name == "MulBackward");
  CHECK(tape[1].name == "SumBackward");
  CHECK(tape[0].inputs == std::vector<std::string>{"leaf x [2]", "leaf w [2]"});
  CHECK(tape[0].formulas[0] == std::pair<std::string, std::string>{"self", "grad * other"});
  CHECK(tape[0].sequence_nr < tape[1].sequence_nr);

  const std::string dot = autograd::to_dot(loss);
  CHECK(dot.rfind("digraph tape {", 0) == 0);
  CHECK(dot.find("MulBackward") != std::string::npos);
  CHECK(dot.find("dself = grad * other") != std::string::npos);
  CHECK(dot.find("label=\"x [2]\"") != std::string::npos);
  CHECK(dot.find("label=\"loss []\"") != std::string::npos);
  std::ostringstream printed;
  autograd::print_tape(loss, printed);
  CHECK(printed.str().find("MulBackward -> [2]") != std::string::npos);
  CHECK(printed.str().find("grad other = grad * self") != std::string::npos);
  // a formula that serves two inputs appears once, under its joint key
  const Tensor self = tensor({1.0, 2.0, 3.0}).requires_grad_();
  const Tensor src = tensor({4.0, 5.0}).requires_grad_();
  const Tensor out = scatter_reduce(self, 0, tensor(std::vector<int64_t>{0, 2}), src, "amax");
  std::ostringstream joint;
  autograd::print_tape(out.sum(), joint);
  CHECK(joint.str().find("grad self, src = scatter_reduce_grads(") != std::string::npos);
}

TEST_CASE("Dropout, Embedding, LayerNorm and GELU modules") {
  manual_seed(3);
  nn::Dropout drop(0.5);
  const Tensor x = ones({1000});
  const Tensor y = drop(x);
  const auto v = y.to_vector<float>();
  int64_t kept = 0;
  for (float e : v) {
    CHECK((e == 0.0f || e == 2.0f));  // dropped, or kept and scaled by 1 / (1 - p)
    kept += e != 0.0f;
  }
  CHECK(kept > 400);
  CHECK(kept < 600);
  drop.eval();
  CHECK(drop(x).to_vector<float>() == x.to_vector<float>());

  nn::Embedding emb(5, 3, /*padding_idx=*/-1);
  CHECK(emb.padding_idx == 4);
  CHECK(emb.weight.select(0, 4).to_vector<float>() == std::vector<float>{0, 0, 0});
  const Tensor idx = tensor({{int64_t{1}, int64_t{4}}, {int64_t{1}, int64_t{0}}});
  const Tensor e = emb(idx);
  CHECK(e.shape() == Shape{2, 2, 3});
  CHECK(e.select(0, 0).select(0, 0).to_vector<float>() ==
        emb.weight.select(0, 1).to_vector<float>());
  e.sum().backward();
  // Row 1 is looked up twice, row 0 once, the padding row gets nothing.
  CHECK(emb.weight.grad().to_vector<float>() ==
        std::vector<float>{1, 1, 1, 2, 2, 2, 0, 0, 0, 0, 0, 0, 0, 0, 0});

  nn::LayerNorm norm({4}, 1e-5, true, kFloat64);
  const Tensor z = norm(tensor({{1.0, 2.0, 3.0, 4.0}}));
  // (x - 2.5) / sqrt(1.25 + 1e-5), as torch.nn.LayerNorm(4)
  check_close(z, {-1.341635419968927, -0.4472118066563091, 0.4472118066563089, 1.3416354199689269},
              1e-10);
  CHECK(norm.to_string() == "LayerNorm([4], eps=1e-05, elementwise_affine=true)");

  nn::GELU gelu;
  check_close(gelu(tensor({-1.0, 0.0, 1.0})), {-0.15865525393145707, 0.0, 0.8413447460685429});
  nn::LeakyReLU leaky(0.1);
  check_close(leaky(tensor({-2.0, 3.0})), {-0.2, 3.0});
}
