// View ops and conversions: exact values, shared storage, strides, copies, and gradients through
// chains of views checked against hand-computed values.
#include <doctest/doctest.h>

#include <array>
#include <string>
#include <vector>

#include <tapegrad/tapegrad.h>

#include "test_helpers.h"

using tg::Shape;
using tg::Tensor;
using V = std::vector<double>;

namespace {

// 0, 1, ..., n-1 as float64 in the given shape.
Tensor iota(int64_t n, tg::IntArrayRef shape) {
  V values;
  for (int64_t i = 0; i < n; ++i) values.push_back(static_cast<double>(i));
  return tg::tensor(values, shape);
}

bool shares_storage(const Tensor& a, const Tensor& b) {
  return a.impl()->storage == b.impl()->storage;
}

using tg_test::error_of;

}  // namespace

TEST_CASE("view: new shapes share storage, -1 is inferred") {
  Tensor x = iota(6, {2, 3});
  Tensor v = x.view({3, -1});
  CHECK(v.shape() == Shape{3, 2});
  CHECK(v.strides() == Shape{2, 1});
  CHECK(v.is_view());
  CHECK(shares_storage(v, x));
  CHECK(v.to_vector<double>() == V{0, 1, 2, 3, 4, 5});
  CHECK(tg::view(x, {6}).shape() == Shape{6});
  CHECK(x.view({1, 2, 1, 3}).strides() == Shape{6, 3, 3, 1});

  // Writing through the view changes the base, and a view of a view still shares it.
  v.select(0, 1).fill_(9.0);
  CHECK(x.to_vector<double>() == V{0, 1, 9, 9, 4, 5});
  Tensor w = v.view({6}).narrow(0, 4, 2);
  w.copy_(tg::tensor(V{-1, -2}));
  CHECK(x.to_vector<double>() == V{0, 1, 9, 9, -1, -2});
}

TEST_CASE("view: errors name the shapes") {
  Tensor x = iota(6, {2, 3});
  std::string msg = error_of<tg::ValueError>([&] { x.view({4, 2}); });
  CHECK(msg.find("[view]") == 0);
  CHECK(msg.find("[4, 2] (8 elements)") != std::string::npos);
  CHECK(msg.find("[2, 3] (6 elements)") != std::string::npos);
  CHECK(error_of<tg::ValueError>([&] {
          x.view({-1, -1});
        }).find("only one dimension") != std::string::npos);
  msg = error_of<tg::ValueError>([&] { x.t().view({6}); });
  CHECK(msg.find("view size is not compatible with input tensor's size and stride") !=
        std::string::npos);
  CHECK(msg.find("use reshape") != std::string::npos);
}

TEST_CASE("transpose, t and permute: strides swap, data stays") {
  Tensor x = iota(6, {2, 3});
  Tensor xt = x.transpose(0, 1);
  CHECK(xt.shape() == Shape{3, 2});
  CHECK(xt.strides() == Shape{1, 3});
  CHECK_FALSE(xt.is_contiguous());
  CHECK(x.is_contiguous());
  CHECK(xt.to_vector<double>() == V{0, 3, 1, 4, 2, 5});
  CHECK(x.t().to_vector<double>() == V{0, 3, 1, 4, 2, 5});
  CHECK(x.transpose(-1, -2).strides() == Shape{1, 3});
  CHECK(iota(3, {3}).t().shape() == Shape{3});
  CHECK(error_of<tg::ValueError>([] {
          iota(8, {2, 2, 2}).t();
        }).find("at most 2 dims") != std::string::npos);

  Tensor y = iota(24, {2, 3, 4});
  Tensor p = y.permute({2, 0, -2});
  CHECK(p.shape() == Shape{4, 2, 3});
  CHECK(p.strides() == Shape{1, 12, 4});
  // p[k][i][j] == y[i][j][k]: p[1][0][2] is y[0][2][1] = 9, p[3][1][0] is y[1][0][3] = 15.
  CHECK(p.select(0, 1).select(0, 0).select(0, 2).item<double>() == 9);
  CHECK(p.select(0, 3).select(0, 1).select(0, 0).item<double>() == 15);
  CHECK(error_of<tg::ValueError>([&] {
          y.permute({0, 0, 1});
        }).find("appears more than once") != std::string::npos);
}

TEST_CASE("reshape: a view when possible, a copy exactly when it must") {
  Tensor x = iota(6, {2, 3});
  Tensor r = x.reshape({3, 2});
  CHECK(shares_storage(r, x));

  Tensor xt = x.t();  // [3, 2], strides [1, 3]
  Tensor flat = xt.reshape({-1});
  CHECK_FALSE(shares_storage(flat, x));
  CHECK(flat.is_contiguous());
  CHECK(flat.to_vector<double>() == V{0, 3, 1, 4, 2, 5});
  flat.fill_(0.0);  // the copy is independent of x
  CHECK(x.to_vector<double>() == V{0, 1, 2, 3, 4, 5});

  // Splitting or adding size-1 dims of a transposed tensor needs no copy.
  Tensor split = xt.reshape({3, 1, 2});
  CHECK(shares_storage(split, x));
  CHECK(split.strides() == Shape{1, 6, 3});

  Tensor f = iota(24, {2, 3, 4}).flatten(1);
  CHECK(f.shape() == Shape{2, 12});
  CHECK(iota(24, {2, 3, 4}).flatten(0, -2).shape() == Shape{6, 4});
  CHECK(tg::full({}, 5.0).flatten().shape() == Shape{1});
}

TEST_CASE("expand and broadcast_to: stride 0 on expanded dims") {
  Tensor x = iota(3, {3, 1});
  Tensor e = x.expand({2, 3, 4});
  CHECK(e.shape() == Shape{2, 3, 4});
  CHECK(e.strides() == Shape{0, 1, 0});
  CHECK(shares_storage(e, x));
  CHECK(e.select(0, 1).select(0, 2).to_vector<double>() == V{2, 2, 2, 2});
  CHECK(x.expand({-1, 2}).to_vector<double>() == V{0, 0, 1, 1, 2, 2});
  CHECK(tg::broadcast_to(iota(2, {2}), {2, 2}).to_vector<double>() == V{0, 1, 0, 1});

  std::string msg = error_of<tg::ValueError>([&] { x.expand({3, 4}).expand({5, 4}); });
  CHECK(msg.find("[expand]") == 0);
  CHECK(msg.find("must match the existing size 3") != std::string::npos);
  CHECK(error_of<tg::ValueError>([&] {
          x.expand({-1, 3, 4});
        }).find("new leading dim 0") != std::string::npos);
  CHECK(error_of<tg::ValueError>([&] { x.expand({3}); }).find("expected at least 2") !=
        std::string::npos);
}

TEST_CASE("squeeze and unsqueeze") {
  Tensor x = iota(6, {2, 1, 3, 1});
  CHECK(x.squeeze().shape() == Shape{2, 3});
  CHECK(x.squeeze(1).shape() == Shape{2, 3, 1});
  CHECK(x.squeeze(-1).shape() == Shape{2, 1, 3});
  CHECK(x.squeeze(0).shape() == Shape{2, 1, 3, 1});  // size 2: unchanged
  Tensor y = iota(6, {2, 3});
  CHECK(y.unsqueeze(0).shape() == Shape{1, 2, 3});
  CHECK(y.unsqueeze(-1).shape() == Shape{2, 3, 1});
  CHECK(y.unsqueeze(-1).strides() == Shape{3, 1, 1});
  CHECK(y.unsqueeze(1).strides() == Shape{3, 3, 1});
  CHECK(y.unsqueeze(1).is_contiguous());
  CHECK(shares_storage(y.unsqueeze(0), y));
  CHECK(error_of<tg::IndexError>([&] { y.unsqueeze(3); }) ==
        "[unsqueeze] dim 3 is out of range for a 2-d tensor (expected a dim in [-3, 2])");
}

TEST_CASE("slice, narrow, select: Python bounds and write-through") {
  Tensor x = iota(10, {10});
  CHECK(x.slice(0, 1, 8, 3).to_vector<double>() == V{1, 4, 7});
  CHECK(x.slice(0, -100, 100, 4).to_vector<double>() == V{0, 4, 8});
  CHECK(x.slice(0, -3).to_vector<double>() == V{7, 8, 9});
  CHECK(x.slice(0, 6, 2).numel() == 0);
  Tensor s = x.slice(0, 1, std::nullopt, 2);
  CHECK(s.storage_offset() == 1);
  CHECK(s.strides() == Shape{2});
  s.fill_(-1.0);
  CHECK(x.to_vector<double>() == V{0, -1, 2, -1, 4, -1, 6, -1, 8, -1});
  CHECK(error_of<tg::ValueError>([&] { x.slice(0, 0, 5, 0); }).find("step must be positive") !=
        std::string::npos);

  Tensor m = iota(12, {4, 3});
  CHECK(m.narrow(0, 1, 2).to_vector<double>() == V{3, 4, 5, 6, 7, 8});
  CHECK(m.narrow(-1, -1, 1).to_vector<double>() == V{2, 5, 8, 11});
  CHECK(m.select(1, -1).to_vector<double>() == V{2, 5, 8, 11});
  CHECK(m.select(0, 2).to_vector<double>() == V{6, 7, 8});
  CHECK(m.select(0, -1).select(0, 0).dim() == 0);

  std::string msg = error_of<tg::IndexError>([&] { m.select(0, 4); });
  CHECK(msg.find("[select] index 4 is out of range for dim 0 of size 4") == 0);
  CHECK(error_of<tg::IndexError>([&] { m.select(1, -4); }).find("index -4") != std::string::npos);
  msg = error_of<tg::IndexError>([&] { m.narrow(0, 3, 2); });
  CHECK(msg.find("[narrow] start (3) + length (2)") == 0);
  CHECK(msg.find("size 4") != std::string::npos);
}

TEST_CASE("clone, to_dtype, to_device copy") {
  Tensor x = iota(6, {2, 3});
  Tensor c = x.t().clone();
  CHECK_FALSE(shares_storage(c, x));
  CHECK(c.is_contiguous());
  CHECK(c.to_vector<double>() == V{0, 3, 1, 4, 2, 5});

  Tensor h = tg::tensor(V{1.5, -2.5, 0}).to_dtype(tg::kInt64);
  CHECK(h.dtype() == tg::kInt64);
  CHECK(h.to_vector<int64_t>() == std::vector<int64_t>{1, -2, 0});
  CHECK(tg::tensor(V{1.5, 0}).to_dtype(tg::kBool).to_vector<bool>() ==
        std::vector<bool>{true, false});
  Tensor same = x.to_dtype(tg::kFloat64);  // the op always copies
  CHECK_FALSE(shares_storage(same, x));

  Tensor d = x.t().to_device(tg::Device(tg::kCPU));
  CHECK_FALSE(shares_storage(d, x));
  CHECK(d.to_vector<double>() == V{0, 3, 1, 4, 2, 5});
}

TEST_CASE("gradients through chains of views") {
  // x -> transpose -> reshape (a copy) -> slice with step 2: y = [x10, x11, x12].
  Tensor x = iota(6, {2, 3}).requires_grad_();
  Tensor y = x.transpose(0, 1).reshape({6}).slice(0, 1, 6, 2);
  CHECK(y.to_vector<double>() == V{3, 4, 5});
  y.backward(tg::tensor(V{1, 2, 3}));
  CHECK(x.grad().to_vector<double>() == V{0, 0, 0, 1, 2, 3});

  // narrow with a negative start, then select: y = [a[1][2], a[2][2]].
  Tensor a = iota(12, {4, 3}).requires_grad_();
  Tensor b = a.narrow(0, -3, 2).select(1, -1);
  CHECK(b.to_vector<double>() == V{5, 8});
  b.backward(tg::tensor(V{5, 7}));
  CHECK(a.grad().to_vector<double>() == V{0, 0, 0, 0, 0, 5, 0, 0, 7, 0, 0, 0});

  // permute then unsqueeze/squeeze/view: grad[i][j][k] = g[k][i][j].
  Tensor p = iota(6, {1, 2, 3}).requires_grad_();
  Tensor q = p.permute({2, 0, 1}).unsqueeze(0).squeeze().view({3, 2});
  q.backward(iota(6, {3, 2}));
  // q[k][j] = p[0][j][k], so p.grad[0][j][k] = g[k][j] = 2k + j.
  CHECK(p.grad().to_vector<double>() == V{0, 2, 4, 1, 3, 5});

  // expand sums the gradient over expanded dims; flatten reshapes it back.
  Tensor e = iota(3, {3, 1}).requires_grad_();
  Tensor f = e.expand({2, 3, 4}).flatten();
  f.backward(tg::ones({24}, tg::kFloat64));
  CHECK(e.grad().to_vector<double>() == V{8, 8, 8});

  // to_dtype hands the gradient back in the input's dtype; clone passes it through.
  Tensor g32 = tg::tensor(std::vector<float>{1, 2}).requires_grad_();
  Tensor g64 = g32.clone().to_dtype(tg::kFloat64);
  g64.backward(tg::tensor(V{0.5, 4}));
  CHECK(g32.grad().dtype() == tg::kFloat32);
  CHECK(g32.grad().to_vector<float>() == std::vector<float>{0.5f, 4.f});
}

TEST_CASE("double backward through slice: slice_backward's gradient is a slice") {
  Tensor x = iota(5, {5}).requires_grad_();
  Tensor y = x.slice(0, 1, 5, 2) * x.slice(0, 0, 4, 2);  // [x1*x0, x3*x2]
  auto g = tg::autograd::grad({y}, {x}, {tg::tensor(V{1, 1})}, /*retain_graph=*/true,
                              /*create_graph=*/true);
  // dy/dx summed: [x1, x0, x3, x2, 0] = [1, 0, 3, 2, 0].
  CHECK(g[0].to_vector<double>() == V{1, 0, 3, 2, 0});
  Tensor gg = g[0].slice(0, 0, 2);  // [x1, x0]
  gg.backward(tg::tensor(V{1, 10}));
  CHECK(x.grad().to_vector<double>() == V{10, 1, 0, 0, 0});
}

TEST_CASE("contiguous of a transposed matrix: every item in place, ragged edges, any leading dim") {
  // Sizes around the copy's register blocks (8x8 of 4-byte items, 4x8 of 8-byte ones) and tiles
  // (256 and 128 items), and a source whose rows are longer than the transposed matrix is tall
  // (ld > rows), in 4- and 8-byte dtypes. [1043, 4112]
  // (16.4 MiB of 4-byte items) takes the streaming path: 16x16 blocks in 256-column bands (the
  // last 16 wide) of one AVX-512 register transpose each, or in 16-column bands of four AVX2 8x8
  // ones (on AVX2 CPUs, or with TG_SIMD=avx2, a ctest entry), and 1043 % 16 rows item by item.
  const std::vector<std::pair<int64_t, int64_t>> sizes = {{8, 8},     {9, 17},    {64, 64},
                                                          {300, 517}, {513, 260}, {16, 1030},
                                                          {131, 133}, {7, 1031},  {1043, 4112}};
  for (auto dtype : {tg::kFloat32, tg::kInt32, tg::kFloat64, tg::kInt64}) {
    for (const auto& size : sizes) {
      const int64_t rows = size.first, cols = size.second, ld = rows + 3;
      CAPTURE(rows);
      CAPTURE(cols);
      // base[j, i] = j * ld + i; x = base[:, :rows].T, so x[i, j] = j * ld + i.
      Tensor base = iota(cols * ld, {cols, ld}).to_dtype(dtype);
      Tensor x = base.narrow(1, 0, rows).transpose(0, 1);
      REQUIRE(x.strides() == Shape{1, ld});
      Tensor y = x.contiguous().to_dtype(tg::kFloat64);
      REQUIRE(y.is_contiguous());
      const double* p = y.data<double>();
      int64_t wrong = 0;
      for (int64_t i = 0; i < rows; ++i)
        for (int64_t j = 0; j < cols; ++j)
          wrong += p[i * cols + j] != static_cast<double>(j * ld + i);
      CHECK(wrong == 0);
    }
  }
}

TEST_CASE(
    "contiguous of a batch of transposed matrices: each matrix in place, threads split the batch") {
  // x = base.transpose(1, 2) with base [B, C, ld] narrowed to R columns: x[b, i, j] =
  // b * C * ld + j * ld + i. Matrices of 1024 items and more take the tiled transpose, one per
  // matrix; [40, 4, 300] (1200 items) and [3, 33, 40]; [200, 3, 5] (15 items) the general walk.
  const std::vector<std::array<int64_t, 3>> sizes = {{40, 4, 300}, {3, 33, 40}, {200, 3, 5}};
  for (auto dtype : {tg::kFloat32, tg::kInt64}) {
    for (int threads : {1, 2}) {
      for (const auto& size : sizes) {
        const int64_t batches = size[0], rows = size[1], cols = size[2];
        const int64_t ld = rows + 2;
        CAPTURE(batches);
        CAPTURE(rows);
        CAPTURE(threads);
        const int before = tg::get_num_threads();
        tg::set_num_threads(threads);
        Tensor base = iota(batches * cols * ld, {batches, cols, ld}).to_dtype(dtype);
        Tensor x = base.narrow(2, 0, rows).transpose(1, 2);
        REQUIRE(x.strides() == Shape{cols * ld, 1, ld});
        Tensor y = x.contiguous().to_dtype(tg::kFloat64);
        tg::set_num_threads(before);
        const double* p = y.data<double>();
        int64_t wrong = 0;
        for (int64_t b = 0; b < batches; ++b)
          for (int64_t i = 0; i < rows; ++i)
            for (int64_t j = 0; j < cols; ++j)
              wrong += p[(b * rows + i) * cols + j] != static_cast<double>((b * cols + j) * ld + i);
        CHECK(wrong == 0);
      }
    }
  }
}
