// The CUDA backend against the CPU: copies, add, sum, autograd, the caching allocator.
// Every case needs a GPU and skips with a message when there is none (or when tapegrad was
// built without CUDA, where tg::cuda::is_available() is always false).
#include <doctest/doctest.h>

#include <cstdint>
#include <string>
#include <vector>

#include <tapegrad/core/cuda.h>
#include <tapegrad/tapegrad.h>

namespace {

// True (after saying so) when there is no GPU to run on.
bool no_gpu() {
  if (tg::cuda::is_available()) return false;
  MESSAGE("no CUDA GPU found: skipping CUDA tests");
  return true;
}

// Same dtype, same shape and exactly the same values (compared in the tensors' own dtype).
void check_same(const tg::Tensor& got, const tg::Tensor& expected) {
  REQUIRE(got.dtype() == expected.dtype());
  REQUIRE(got.shape() == expected.shape());
  tg::visit_dtype("check_same", got.dtype(), [&](auto tag) {
    using T = typename decltype(tag)::type;
    CHECK(got.to_vector<T>() == expected.to_vector<T>());
  });
}

// One 2x3 tensor of each implemented dtype, with edge values (extremes, -0.0, tiny, > 2^53).
std::vector<tg::Tensor> one_of_each_dtype() {
  return {
      tg::tensor(std::vector<bool>{true, false, false, true, true, false}, {2, 3}),
      tg::tensor(std::vector<int32_t>{-7, 0, 1, 2147483647, -2147483647 - 1, 42}, {2, 3}),
      tg::tensor(std::vector<int64_t>{-(int64_t{1} << 62), 0, 1, (int64_t{1} << 53) + 1, -5, 9},
                 {2, 3}),
      tg::tensor(std::vector<float>{0.1f, -2.5f, 1e-30f, 3.4e38f, -0.0f, 7.f}, {2, 3}),
      tg::tensor(std::vector<double>{0.1, -2.5, 1e-300, 1.7e308, -0.0, 1.0 / 3}, {2, 3}),
  };
}

}  // namespace

TEST_CASE("cuda: is_available agrees with device_count") {
  CHECK(tg::cuda::is_available() == (tg::cuda::device_count() > 0));
#ifndef TG_WITH_CUDA
  CHECK_THROWS_WITH_AS(tg::cuda::memory_stats(), "[cuda] tapegrad was built without CUDA",
                       tg::Error);
  CHECK_THROWS_WITH_AS(tg::cuda::synchronize(), "[cuda] tapegrad was built without CUDA",
                       tg::Error);
#endif
}

TEST_CASE("cuda: to(kCUDA) and back keeps every value, for each dtype") {
  if (no_gpu()) return;
  for (const tg::Tensor& x : one_of_each_dtype()) {
    INFO("dtype ", tg::dtype_name(x.dtype()));
    const tg::Tensor d = x.to(tg::kCUDA);
    CHECK(d.device().is_cuda());
    CHECK(x.device().is_cpu());
    const tg::Tensor back = d.cpu();
    CHECK(back.device().is_cpu());
    check_same(back, x);
    // A strided copy on the device (transpose, then contiguous).
    check_same(d.transpose(0, 1).contiguous().cpu(), x.transpose(0, 1).contiguous());
  }
}

TEST_CASE("cuda: dtype conversion on the device equals conversion on the CPU") {
  if (no_gpu()) return;
  for (const tg::Tensor& x : one_of_each_dtype()) {
    for (tg::DType to : {tg::kBool, tg::kInt32, tg::kInt64, tg::kFloat32, tg::kFloat64}) {
      // Skip conversions whose result is undefined in C++ (out-of-range floats to integers).
      if (tg::is_floating(x.dtype()) && tg::is_integral(to)) continue;
      INFO(tg::dtype_name(x.dtype()), " -> ", tg::dtype_name(to));
      check_same(x.to(tg::kCUDA).to(to).cpu(), x.to(to));
    }
  }
}

TEST_CASE("cuda: fill and zeros on the device") {
  if (no_gpu()) return;
  check_same(tg::zeros({2, 3}, tg::kInt32, tg::kCUDA).cpu(),
             tg::tensor(std::vector<int32_t>{0, 0, 0, 0, 0, 0}, {2, 3}));
  check_same(tg::full({3}, 2.5, tg::kFloat64, tg::kCUDA).cpu(), tg::tensor({2.5, 2.5, 2.5}));
  // fill_ through a strided view writes only the viewed elements.
  tg::Tensor m = tg::zeros({2, 2}, tg::kFloat32, tg::kCUDA);
  m.transpose(0, 1).slice(0, 0, 1).fill_(7);
  check_same(m.cpu(), tg::tensor({{7.f, 0.f}, {7.f, 0.f}}));
}

TEST_CASE("cuda: add on the device equals add on the CPU") {
  if (no_gpu()) return;
  const tg::Tensor a = tg::tensor({{1., 2., 3.}, {4., 5., 6.}});
  const tg::Tensor b = tg::tensor({10., 20., 30.});

  SUBCASE("broadcast with alpha, checked by hand") {
    check_same(tg::add(a.cuda(), b.cuda(), 2).cpu(),
               tg::tensor({{21., 42., 63.}, {24., 45., 66.}}));
  }
  SUBCASE("same as CPU over dtype pairs, broadcasts and alphas") {
    const tg::Tensor i32 = tg::tensor(std::vector<int32_t>{1, -2, 3, 4, 5, -6}, {2, 3});
    const tg::Tensor i64 = tg::tensor(std::vector<int64_t>{100, -200}, {2, 1});
    const tg::Tensor f32 = tg::tensor(std::vector<float>{0.5f, 0.25f, -1.f}, {3});
    const tg::Tensor bl =
        tg::tensor(std::vector<bool>{true, false, true, false, false, true}, {2, 3});
    const tg::Tensor bl_row = tg::tensor(std::vector<bool>{false, false, true}, {3});
    struct Case {
      tg::Tensor x, y;
      tg::Scalar alpha;
    };
    const std::vector<Case> cases = {
        {a, b, 1},
        {a, b, -0.5},
        {a, i32, 3},
        {i32, i64, 1},
        {i32, i64, -2},
        {i32, f32, 1.5},
        {f32, bl, 2.0},
        {bl, bl_row, true},
        {a.transpose(0, 1), i64.transpose(0, 1), 1},  // non-contiguous inputs
    };
    for (const Case& c : cases) {
      INFO(tg::dtype_name(c.x.dtype()), " + ", tg::dtype_name(c.y.dtype()), ", alpha ",
           c.alpha.to_double());
      check_same(tg::add(c.x.cuda(), c.y.cuda(), c.alpha).cpu(), tg::add(c.x, c.y, c.alpha));
    }
  }
  SUBCASE("a number on either side") {
    check_same((a.cuda() + 2.5).cpu(), a + 2.5);
    check_same((2.5 + a.cuda()).cpu(), 2.5 + a);
    const tg::Tensor i32 = tg::tensor(std::vector<int32_t>{1, 2, 3}, {3});
    check_same((i32.cuda() + 2).cpu(), i32 + 2);      // stays int32
    check_same((i32.cuda() + 0.5).cpu(), i32 + 0.5);  // becomes float32
    check_same((i32.cuda() + 0.5).cpu(), tg::tensor({1.5f, 2.5f, 3.5f}));
  }
  SUBCASE("a CPU tensor with more than 0 dims is an error") {
    CHECK_THROWS_WITH_AS(tg::add(a.cuda(), b), doctest::Contains("[add]"), tg::Error);
    CHECK_THROWS_WITH_AS(tg::add(a, b.cuda()), doctest::Contains("[add]"), tg::Error);
  }
}

TEST_CASE("cuda: sum on the device equals sum on the CPU") {
  if (no_gpu()) return;
  std::vector<double> values(24);
  for (size_t i = 0; i < values.size(); ++i) values[i] = static_cast<double>(i);
  const tg::Tensor x = tg::tensor(values, {2, 3, 4});  // x[i][j][k] = 12i + 4j + k
  const tg::Tensor xd = x.cuda();

  SUBCASE("checked by hand") {
    check_same(tg::sum(xd).cpu(), tg::scalar_tensor(276.0, tg::kFloat64));
    check_same(tg::sum(xd, {0, 2}, false).cpu(), tg::tensor({60., 92., 124.}));
    check_same(tg::sum(xd, {0, 2}, true).cpu(), tg::tensor({60., 92., 124.}).view({1, 3, 1}));
  }
  SUBCASE("same as CPU over dims, keepdim, dtypes and layouts") {
    const std::vector<std::vector<int64_t>> dims = {{},   {0},    {1},    {2},
                                                    {-1}, {0, 1}, {2, 0}, {0, 1, 2}};
    const std::vector<tg::Tensor> inputs = {
        x,
        x.to(tg::kFloat32),
        x.to(tg::kInt32),
        x.to(tg::kInt64),
        x.to(tg::kBool),
        x.transpose(0, 2),  // non-contiguous
    };
    for (const tg::Tensor& in : inputs) {
      for (const auto& dim : dims) {
        for (bool keepdim : {false, true}) {
          INFO(tg::dtype_name(in.dtype()), ", ", dim.size(), " dims, keepdim ", keepdim);
          check_same(tg::sum(in.cuda(), dim, keepdim).cpu(), tg::sum(in, dim, keepdim));
        }
      }
    }
    // int and bool sum to int64; an explicit dtype wins.
    CHECK(tg::sum(x.to(tg::kBool).cuda()).dtype() == tg::kInt64);
    check_same(tg::sum(x.to(tg::kInt32).cuda(), {1}, false, tg::kFloat64).cpu(),
               tg::sum(x.to(tg::kInt32), {1}, false, tg::kFloat64));
  }
  SUBCASE("large sums use many blocks") {
    const tg::Tensor big = tg::arange(100000, tg::kFloat64);  // exact integers in float64
    check_same(tg::sum(big.cuda()).cpu(), tg::scalar_tensor(4999950000.0, tg::kFloat64));
    const tg::Tensor m = big.view({1000, 100});
    check_same(tg::sum(m.cuda(), {1}, false).cpu(), tg::sum(m, {1}, false));
    check_same(tg::sum(m.cuda(), {0}, false).cpu(), tg::sum(m, {0}, false));
  }
  SUBCASE("empty and 0-d inputs") {
    const tg::Tensor e = tg::zeros({2, 0, 3}, tg::kFloat32);
    check_same(tg::sum(e.cuda(), {1}, false).cpu(), tg::zeros({2, 3}, tg::kFloat32));
    check_same(tg::sum(e.cuda(), {0}, false).cpu(), tg::zeros({0, 3}, tg::kFloat32));
    const tg::Tensor s = tg::scalar_tensor(4.5, tg::kFloat64);
    check_same(tg::sum(s.cuda()).cpu(), s);
  }
}

TEST_CASE("cuda: autograd through add and sum gives the CPU gradient") {
  if (no_gpu()) return;
  // loss = sum(sum(x + y, dim 0)): dloss/dx = 1 everywhere; dloss/dy = 2, as y is broadcast over
  // two rows.
  auto grads = [](tg::Device device) {
    tg::Tensor x = tg::tensor({{1., 2., 3.}, {4., 5., 6.}}).to(device);
    tg::Tensor y = tg::tensor({10., 20., 30.}).to(device);
    x.requires_grad_();
    y.requires_grad_();
    tg::Tensor loss = tg::sum(tg::sum(tg::add(x, y), {0}, false));
    loss.backward();
    CHECK(x.grad().device() == device);
    return std::vector<tg::Tensor>{x.grad().cpu(), y.grad().cpu()};
  };
  const auto on_cpu = grads(tg::kCPU);
  const auto on_cuda = grads(tg::kCUDA);
  check_same(on_cuda[0], tg::ones({2, 3}, tg::kFloat64));
  check_same(on_cuda[1], tg::tensor({2., 2., 2.}));
  check_same(on_cuda[0], on_cpu[0]);
  check_same(on_cuda[1], on_cpu[1]);
}

TEST_CASE("cuda: the caching allocator reuses a freed block") {
  if (no_gpu()) return;
  tg::cuda::synchronize();
  const tg::cuda::MemoryStats before = tg::cuda::memory_stats();
  void* first = nullptr;
  size_t reserved_with_block = 0;
  {
    const tg::Tensor t = tg::empty({1024}, tg::kFloat32, tg::kCUDA);  // 4096 bytes
    first = t.data_ptr();
    const tg::cuda::MemoryStats s = tg::cuda::memory_stats();
    CHECK(s.allocated >= before.allocated + 4096);
    CHECK(s.peak >= s.allocated);
    reserved_with_block = s.reserved;
  }
  const tg::cuda::MemoryStats after_free = tg::cuda::memory_stats();
  CHECK(after_free.allocated == before.allocated);
  CHECK(after_free.reserved == reserved_with_block);  // kept in the cache, not cudaFree'd
  {
    const tg::Tensor again = tg::empty({1024}, tg::kFloat32, tg::kCUDA);
    CHECK(again.data_ptr() == first);                                 // the same block
    CHECK(tg::cuda::memory_stats().reserved == reserved_with_block);  // no new cudaMalloc
  }
  tg::cuda::empty_cache();
  const tg::cuda::MemoryStats emptied = tg::cuda::memory_stats();
  CHECK(emptied.reserved == emptied.allocated);  // nothing cached any more
}

TEST_CASE("cuda: an impossible allocation is a clear out-of-memory error") {
  if (no_gpu()) return;
  CHECK_THROWS_WITH_AS(tg::empty({int64_t{1} << 45}, tg::kFloat32, tg::kCUDA),  // 128 TiB
                       doctest::Contains("[cuda] out of memory: tried to allocate"), tg::Error);
}
