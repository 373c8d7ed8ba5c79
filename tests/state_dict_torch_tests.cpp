// The state_dict round trip with PyTorch 1.13: tests/data/conv_bn_lstm.safetensors is the
// state_dict of a Conv2d + BatchNorm2d + LSTM model that tools/crosscheck/state_dict_torch.py
// built and ran in PyTorch (with its input, the LSTM's input sequence and the output in
// conv_bn_lstm_io.safetensors). The same architecture in tapegrad loads it with strict
// load_state_dict, gives PyTorch's output, and its own state_dict has the same keys, shapes and
// dtypes; the LSTM half is also checked alone, from the sequence PyTorch fed it.
#include <doctest/doctest.h>

#include <cmath>
#include <filesystem>
#include <string>

#include <tapegrad/tapegrad.h>

using namespace tg;

namespace {

std::string data_file(const char* name) {
  return (std::filesystem::path(TG_TEST_DATA_DIR) / name).string();
}

double max_diff(const Tensor& a, const Tensor& b) {
  REQUIRE(a.shape() == b.shape());
  return amax(abs(a.detach().to(kFloat64) - b.detach().to(kFloat64))).item<double>();
}

// The entries of state whose names start with prefix.
StateDict with_prefix(const StateDict& state, const std::string& prefix) {
  StateDict out;
  for (const auto& [name, t] : state)
    if (name.rfind(prefix, 0) == 0) out.emplace(name, t);
  return out;
}

// The model of tools/crosscheck/state_dict_torch.py: conv -> batch norm -> relu over a
// [N, 1, 6, 8] image, read column by column (8 steps of 4 channels x 6 rows) by an LSTM, and a
// linear head on the last step's hidden state.
struct ConvBnLstm : nn::Module {
  std::shared_ptr<nn::Conv2d> conv;
  std::shared_ptr<nn::BatchNorm2d> bn;
  std::shared_ptr<nn::LSTM> lstm;
  std::shared_ptr<nn::Linear> head;
  ConvBnLstm() : Module("ConvBnLstm") {
    conv = register_module("conv",
                           std::make_shared<nn::Conv2d>(1, 4, 3, nn::ConvOptions{.padding = 1}));
    bn = register_module("bn", std::make_shared<nn::BatchNorm2d>(4));
    lstm = register_module("lstm",
                           std::make_shared<nn::LSTM>(24, 5, nn::RNNOptions{.batch_first = true}));
    head = register_module("head", std::make_shared<nn::Linear>(5, 3));
  }
  Tensor sequence(const Tensor& x) {
    const Tensor h = relu((*bn)((*conv)(x)));                    // [N, 4, 6, 8]
    return h.permute({0, 3, 1, 2}).reshape({x.size(0), 8, 24});  // [N, 8 steps, 4 * 6]
  }
  Tensor forward(const Tensor& x) override {
    const Tensor out = (*lstm)(sequence(x));
    return (*head)(out.select(1, out.size(1) - 1));
  }
};

// The recurrent half of the model: the LSTM over the 8 columns and the linear head.
struct LstmHead : nn::Module {
  std::shared_ptr<nn::LSTM> lstm;
  std::shared_ptr<nn::Linear> head;
  LstmHead() : Module("LstmHead") {
    lstm = register_module("lstm",
                           std::make_shared<nn::LSTM>(24, 5, nn::RNNOptions{.batch_first = true}));
    head = register_module("head", std::make_shared<nn::Linear>(5, 3));
  }
  Tensor forward(const Tensor& sequence) override {
    const Tensor out = (*lstm)(sequence);  // [N, 8, 5]
    return (*head)(out.select(1, out.size(1) - 1));
  }
};

// Our state_dict has exactly the file's names, shapes and dtypes.
void check_same_layout(const StateDict& ours, const StateDict& theirs) {
  CHECK(ours.size() == theirs.size());
  for (const auto& entry : theirs) {
    const std::string& name = entry.first;
    const Tensor& t = entry.second;
    INFO(name);
    REQUIRE(ours.count(name));
    CHECK(ours.at(name).shape() == t.shape());
    CHECK(ours.at(name).dtype() == t.dtype());
  }
}

}  // namespace

TEST_CASE("a PyTorch Conv2d+BatchNorm2d+LSTM state_dict loads strictly and gives its output") {
  const StateDict state = load(data_file("conv_bn_lstm.safetensors"));
  const StateDict io = load(data_file("conv_bn_lstm_io.safetensors"));
  ConvBnLstm model;
  model.load_state_dict(state, /*strict=*/true);
  // Our state_dict has PyTorch's 13 entries: running statistics and the int64
  // num_batches_tracked included.
  check_same_layout(model.state_dict(), state);
  CHECK(model.bn->num_batches_tracked.item<int64_t>() == 3);
  model.eval();
  NoGradGuard no_grad;
  CHECK(max_diff(model.sequence(io.at("input")), io.at("lstm_input")) < 1e-5);
  CHECK(max_diff(model(io.at("input")), io.at("output")) < 1e-5);
  // Our saved file reloads into a fresh model with the same output.
  ConvBnLstm copy;
  copy.load_state_dict(load_from_bytes(save_to_bytes(model.state_dict())));
  copy.eval();
  CHECK(max_diff(copy(io.at("input")), io.at("output")) < 1e-5);
  // In training mode the batch statistics are used instead, so the output differs.
  copy.train();
  CHECK(max_diff(copy(io.at("input")), io.at("output")) > 1e-3);
}

TEST_CASE("PyTorch's LSTM and Linear weights load strictly and give PyTorch's output") {
  const StateDict state = load(data_file("conv_bn_lstm.safetensors"));
  const StateDict io = load(data_file("conv_bn_lstm_io.safetensors"));
  LstmHead model;
  const StateDict part = with_prefix(state, "lstm.");
  StateDict both = with_prefix(state, "head.");
  both.insert(part.begin(), part.end());
  model.load_state_dict(both, /*strict=*/true);
  check_same_layout(model.state_dict(), both);
  model.eval();
  NoGradGuard no_grad;
  CHECK(max_diff(model(io.at("lstm_input")), io.at("output")) < 1e-5);
  // And back: what we save loads into a fresh model and gives the same output.
  LstmHead copy;
  copy.load_state_dict(load_from_bytes(save_to_bytes(model.state_dict())));
  CHECK(max_diff(copy(io.at("lstm_input")), io.at("output")) < 1e-5);
}
