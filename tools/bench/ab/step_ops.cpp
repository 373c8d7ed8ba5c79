// The steps ab_two_builds.cpp times: run_steps(n) runs the op named by STEP_OP n times on
// inputs made once (STEP_THREADS pool threads). Compiled once per library build (ab.sh). The
// ops: tiny cumsum max prod topk sum_dim1 where cat1 logical_not masked_fill bce global_avg_pool
// leaky_relu_fwd_bwd permute group_norm_fwd_bwd one_hot nll_loss_fwd_bwd sum_large conv1d
// conv1d_fwd_bwd conv1d_grad_input conv2d_1xk conv2d_1xk_grad_input conv2d_3x3_fwd_bwd
// depthwise_3x3_fwd_bwd depthwise_causal_fwd_bwd index_select sub_column relu_f64 div_f64
// add_bcast_f64 softmax_f64 cumsum_f64 (float64 [1024, 1024], the row [1024]); the
// conv1d ops take their shape from STEP_CONV="N,C,W,OC,K,PAD" (default 32,64,256,64,5,2), the
// 1 x k conv2d ones theirs from STEP_CONV2D="N,C,H,W,OC,K,PAD" (default 32,64,28,28,128,1,0), the
// 3x3 one (padding 1) from STEP_CONV3X3="N,C,H,W,OC" (default 32,16,28,28,32);
// depthwise_3x3_fwd_bwd runs a depthwise 3x3 (padding 1) on images STEP_DW="N,C,H,W,STRIDE"
// (default 32,64,28,28,1; with stride > 1 the output gradient is ones),
// depthwise_causal_fwd_bwd a causal depthwise conv1d (k = 4, padding 3) on [8, 256, 1024].
#include <tapegrad/tapegrad.h>

#include <cstdlib>
#include <cstring>
#include <string>
#include <vector>

namespace {

struct Inputs {
  tg::Tensor rows = tg::randn({4096, 1024});        // [4096, 1024]: the row ops
  tg::Tensor heads = tg::randn({32, 128, 12, 64});  // attention's [B, T, H, D]
  tg::Tensor a = tg::randn({1 << 22}), b = tg::randn({1 << 22});
  tg::Tensor mask = tg::gt(tg::randn({1 << 22}), tg::zeros({1}));
  tg::Tensor part = tg::randn({512, 1024});         // cat's inputs
  tg::Tensor images = tg::randn({32, 64, 28, 28});  // a CNN's feature maps
  tg::Tensor probs = tg::rand({1 << 22});           // targets in [0, 1)
  tg::Tensor large = tg::randn({1 << 24});          // sum_large: beyond the L3
  tg::Tensor channel = tg::randn({64});             // the images' per-channel weight
  std::vector<int64_t> dw = sizes("STEP_DW", {32, 64, 28, 28, 1});
  tg::Tensor planes_dw = tg::randn({dw[0], dw[1], dw[2], dw[3]});
  tg::Tensor depthwise = tg::randn({dw[1], 1, 3, 3});  // a 3x3 filter per plane
  tg::Tensor sequence = tg::randn({8, 256, 1024}), causal = tg::randn({256, 1, 4});
  tg::Tensor sequence_grad = tg::randn({8, 256, 1027});
  tg::Tensor ids = tg::randint(0, 512, {4096});  // class ids
  tg::Tensor table = tg::randn({1024, 1024}), rows_ids = tg::randint(0, 1024, {4096});
  tg::Tensor column = tg::randn({4096, 1});
  tg::Tensor logp = tg::randn({512, 1000}), target = tg::randint(0, 1000, {512});
  // float64 operands (gradcheck's dtype): [1024, 1024] and a [1024] row
  tg::Tensor rows64 = tg::randn({1024, 1024}, tg::kFloat64),
             other64 = tg::randn({1024, 1024}, tg::kFloat64);
  tg::Tensor row64 = tg::randn({1024}, tg::kFloat64);
  std::vector<int64_t> conv = sizes("STEP_CONV", {32, 64, 256, 64, 5, 2});  // N, C, W, OC, K, PAD
  // N, C, H, W, OC, K, PAD of a conv2d with a 1 x K kernel and padding (0, PAD)
  std::vector<int64_t> conv2 = sizes("STEP_CONV2D", {32, 64, 28, 28, 128, 1, 0});
  tg::Tensor maps = tg::randn({conv2[0], conv2[1], conv2[2], conv2[3]});
  tg::Tensor row_filter = tg::randn({conv2[4], conv2[1], 1, conv2[5]});
  tg::Tensor maps_grad =
      tg::randn({conv2[0], conv2[4], conv2[2], conv2[3] + 2 * conv2[6] - conv2[5] + 1});
  std::vector<int64_t> conv3 = sizes("STEP_CONV3X3", {32, 16, 28, 28, 32});
  tg::Tensor planes = tg::randn({conv3[0], conv3[1], conv3[2], conv3[3]});
  tg::Tensor filter3x3 = tg::randn({conv3[4], conv3[1], 3, 3});
  tg::Tensor planes_grad = tg::randn({conv3[0], conv3[4], conv3[2], conv3[3]});
  tg::Tensor signal = tg::randn({conv[0], conv[1], conv[2]});
  tg::Tensor filter = tg::randn({conv[3], conv[1], conv[4]});
  tg::Tensor signal_grad = tg::randn({conv[0], conv[3], conv[2] + 2 * conv[5] - conv[4] + 1});

  static std::vector<int64_t> sizes(const char* variable, std::vector<int64_t> v) {
    if (const char* s = std::getenv(variable))
      for (size_t i = 0; i < v.size() && *s; ++i) {
        char* end;
        v[i] = std::strtoll(s, &end, 10);
        s = *end ? end + 1 : end;
      }
    return v;
  }
};

Inputs& inputs() {
  static Inputs* in = [] {
    const char* threads = std::getenv("STEP_THREADS");
    tg::set_num_threads(threads ? std::atoi(threads) : 1);
    tg::manual_seed(0);
    return new Inputs();
  }();
  return *in;
}

// (a * b + a).sum().backward() on fresh 1-element leaves: the per-op overhead.
double tiny_step() {
  tg::Tensor a = tg::full({1}, 1.5), b = tg::full({1}, 2.5);
  a.requires_grad_();
  b.requires_grad_();
  tg::sum(a * b + a).backward();
  return *a.grad().data<float>();
}

double one(const std::string& op) {
  if (op == "tiny") return tiny_step();
  Inputs& in = inputs();
  if (op == "cumsum") return tg::cumsum(in.rows, 1).data<float>()[3];
  if (op == "max") return static_cast<double>(std::get<1>(tg::max(in.rows, 1)).data<int64_t>()[3]);
  if (op == "prod") return tg::prod(in.rows, 1).data<float>()[3];
  if (op == "topk") return std::get<0>(tg::topk(in.rows, 8, 1)).data<float>()[3];
  if (op == "sum_dim1") return tg::sum(in.rows, {1}).data<float>()[3];
  if (op == "where") return tg::where(in.mask, in.a, in.b).data<float>()[3];
  if (op == "cat1") {
    const tg::Tensor& p = in.part;
    return tg::cat({p, p, p, p, p, p, p, p}, 1).data<float>()[3];
  }
  if (op == "logical_not") return tg::logical_not(in.mask).data<bool>()[3];
  if (op == "masked_fill") return tg::masked_fill_scalar(in.a, in.mask, 0.0).data<float>()[3];
  if (op == "bce") return tg::binary_cross_entropy_with_logits(in.a, in.probs).item<float>();
  if (op == "global_avg_pool") return tg::adaptive_avg_pool2d(in.images, {1, 1}).data<float>()[3];
  if (op == "leaky_relu_fwd_bwd") {
    tg::Tensor x = in.a.detach();
    x.requires_grad_();
    tg::leaky_relu(x).backward(in.b);
    return x.grad().data<float>()[3];
  }
  if (op == "group_norm_fwd_bwd") {
    tg::Tensor x = in.images.detach();
    x.requires_grad_();
    tg::group_norm(x, 8, in.channel, in.channel).backward(in.images);
    return x.grad().data<float>()[3];
  }
  if (op == "one_hot") return static_cast<double>(tg::one_hot(in.ids, 512).data<int64_t>()[3]);
  if (op == "nll_loss_fwd_bwd") {
    tg::Tensor x = in.logp.detach();
    x.requires_grad_();
    tg::nll_loss(x, in.target).backward();
    return x.grad().data<float>()[3];
  }
  const int64_t pad = in.conv[5];
  if (op == "conv1d") return tg::conv1d(in.signal, in.filter, {}, {1}, {pad}).data<float>()[3];
  if (op == "conv1d_grad_input")
    return tg::conv_backward_input(in.signal_grad, in.filter, in.signal.shape(), {1}, {pad})
        .data<float>()[3];
  const std::vector<int64_t> pad2 = {0, in.conv2[6]};
  if (op == "conv2d_1xk") return tg::conv2d(in.maps, in.row_filter, {}, {1}, pad2).data<float>()[3];
  if (op == "conv2d_1xk_grad_input")
    return tg::conv_backward_input(in.maps_grad, in.row_filter, in.maps.shape(), {1, 1}, pad2)
        .data<float>()[3];
  if (op == "conv1d_fwd_bwd") {
    tg::Tensor x = in.signal.detach(), w = in.filter.detach();
    x.requires_grad_();
    w.requires_grad_();
    tg::conv1d(x, w, {}, {1}, {pad}).backward(in.signal_grad);
    return x.grad().data<float>()[3] + w.grad().data<float>()[3];
  }
  if (op == "conv2d_3x3_fwd_bwd") {
    tg::Tensor x = in.planes.detach(), w = in.filter3x3.detach();
    x.requires_grad_();
    w.requires_grad_();
    tg::conv2d(x, w, {}, {1}, {1}).backward(in.planes_grad);
    return x.grad().data<float>()[3] + w.grad().data<float>()[3];
  }
  if (op == "depthwise_3x3_fwd_bwd") {
    tg::Tensor x = in.planes_dw.detach(), w = in.depthwise.detach();
    x.requires_grad_();
    w.requires_grad_();
    const tg::Tensor y = tg::conv2d(x, w, {}, {in.dw[4]}, {1}, {1}, in.dw[1]);
    y.backward(in.dw[4] == 1 ? in.planes_dw : tg::ones_like(y));
    return x.grad().data<float>()[3] + w.grad().data<float>()[3];
  }
  if (op == "depthwise_causal_fwd_bwd") {
    tg::Tensor x = in.sequence.detach(), w = in.causal.detach();
    x.requires_grad_();
    w.requires_grad_();
    tg::conv1d(x, w, {}, {1}, {3}, {1}, 256).backward(in.sequence_grad);
    return x.grad().data<float>()[3] + w.grad().data<float>()[3];
  }
  if (op == "sum_large") return tg::sum(in.large).item<float>();
  if (op == "index_select") return tg::index_select(in.table, 0, in.rows_ids).data<float>()[3];
  if (op == "sub_column") return tg::sub(in.rows, in.column).data<float>()[3];
  if (op == "relu_f64") return tg::relu(in.rows64).data<double>()[3];
  if (op == "div_f64") return tg::div(in.rows64, in.other64).data<double>()[3];
  if (op == "add_bcast_f64") return tg::add(in.rows64, in.row64).data<double>()[3];
  if (op == "cumsum_f64") return tg::cumsum(in.rows64, 1).data<double>()[3];
  if (op == "softmax_f64") return tg::softmax(in.rows64, 1).data<double>()[3];
  if (op == "permute") return tg::permute(in.heads, {0, 2, 1, 3}).contiguous().data<float>()[3];
  std::abort();
}

}  // namespace

extern "C" double run_steps(int calls) {
  const char* op = std::getenv("STEP_OP");
  const std::string name = op ? op : "tiny";
  double sum = 0;
  for (int i = 0; i < calls; ++i) sum += one(name);
  return sum;
}
