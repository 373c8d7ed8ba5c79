// The CUDA backend's device semantics: host synchronisations (counted), data checks recorded on
// the device and raised at the next sync (or at once in checked mode), and backward passes of the
// seed indexing ops that make no host sync. Run wherever tg::cuda::is_available(): in the
// emulation build (TG_CUDA_EMULATION) in CI, and on a GPU.
#include <doctest/doctest.h>

#include <cstdint>
#include <string>
#include <vector>

#include <tapegrad/autograd/engine.h>
#include <tapegrad/core/cuda.h>
#include <tapegrad/tapegrad.h>

namespace {

bool no_device() {
  if (tg::cuda::is_available()) return false;
  MESSAGE("no CUDA device: skipping");
  return true;
}

// Turns checked mode on or off for one scope.
struct SyncChecks {
  bool before = tg::cuda::sync_checks();
  explicit SyncChecks(bool on) { tg::cuda::set_sync_checks(on); }
  ~SyncChecks() { tg::cuda::set_sync_checks(before); }
};

tg::Tensor dev(const tg::Tensor& t) { return t.to(tg::kCUDA); }

}  // namespace

TEST_CASE("cuda: the device names itself, and an emulation says so") {
  if (no_device()) return;
  const std::string name = tg::cuda::device_name();
  CHECK(!name.empty());
#ifdef TG_CUDA_EMULATION
  CHECK(name.find("emulation") != std::string::npos);
#endif
}

TEST_CASE("cuda: reading a value back is a counted host sync, device work is not") {
  if (no_device()) return;
  const tg::Tensor x = dev(tg::tensor(std::vector<double>{1, 2, 3}));
  uint64_t before = tg::cuda::host_sync_count();
  const tg::Tensor y = (x * 2.0).sum();
  CHECK(tg::cuda::host_sync_count() == before);
  CHECK(y.item<double>() == 12.0);
  CHECK(tg::cuda::host_sync_count() == before + 1);
  before = tg::cuda::host_sync_count();
  tg::cuda::synchronize();
  CHECK(tg::cuda::host_sync_count() == before + 1);
  // masked_select's output size is the mask's count: it must read it back (one sync).
  before = tg::cuda::host_sync_count();
  const tg::Tensor m = dev(tg::tensor(std::vector<bool>{true, false, true}));
  const tg::Tensor s = tg::masked_select(x, m);
  CHECK(tg::cuda::host_sync_count() > before);
  CHECK(s.cpu().to_vector<double>() == std::vector<double>{1, 3});
}

TEST_CASE("cuda: an index out of range is raised at the next sync, or at once when checked") {
  if (no_device()) return;
  const tg::Tensor self = dev(tg::tensor(std::vector<double>{1, 2, 3}));
  const tg::Tensor bad = dev(tg::tensor(std::vector<int64_t>{0, 7}));
  {
    SyncChecks off(false);
    const tg::Tensor r = tg::gather(self, 0, bad);  // no sync: the call returns
    CHECK_THROWS_WITH_AS(tg::cuda::synchronize(),
                         doctest::Contains("[gather] index 7 is out of range for dim 0 of size 3"),
                         tg::IndexError);
    tg::cuda::synchronize();  // the record was cleared when raised
  }
  {
    SyncChecks on(true);
    CHECK_THROWS_WITH_AS(tg::gather(self, 0, bad), doctest::Contains("[gather] index 7"),
                         tg::IndexError);
    // In checked mode a rejected in-place call leaves self bit-identical.
    const tg::Tensor target = dev(tg::tensor(std::vector<double>{5, 6, 7}));
    const tg::Tensor src = dev(tg::tensor(std::vector<double>{1, 1}));
    CHECK_THROWS_AS(target.index_add_(0, bad, src), tg::IndexError);
    CHECK(target.cpu().to_vector<double>() == std::vector<double>{5, 6, 7});
    // masked_scatter with too few source elements: a ValueError, self unchanged.
    const tg::Tensor mask = dev(tg::tensor(std::vector<bool>{true, true, true}));
    CHECK_THROWS_WITH_AS(target.masked_scatter_(mask, src),
                         doctest::Contains("[masked_scatter] the mask selects 3 elements"),
                         tg::ValueError);
    CHECK(target.cpu().to_vector<double>() == std::vector<double>{5, 6, 7});
  }
}

TEST_CASE("cuda: backward of scatter_reduce, index_reduce and masked_scatter makes no host sync") {
  if (no_device()) return;
  SyncChecks off(false);
  auto leaf = [](std::vector<double> v, tg::Shape shape) {
    tg::Tensor t = dev(tg::tensor(v).reshape(shape));
    t.requires_grad_(true);
    return t;
  };
  // Zeros, ties and duplicate indices, so that every rule (prod's zero counts, amax/amin ties,
  // mean counts) runs.
  const tg::Tensor index = dev(tg::tensor(std::vector<int64_t>{0, 1, 0, 0, 2, 1}));
  for (const char* reduce : {"sum", "prod", "mean", "amax", "amin"}) {
    for (bool include_self : {true, false}) {
      INFO(reduce, " include_self=", include_self);
      const tg::Tensor self = leaf({1, 0, 2, 3}, {4});
      const tg::Tensor src = leaf({2, 0, 2, 0, 5, -1}, {6});
      const tg::Tensor y = tg::scatter_reduce(self, 0, index, src, reduce, include_self);
      const tg::Tensor y2 =
          tg::index_reduce(self, 0, index, src, reduce == std::string("sum") ? "prod" : reduce,
                           include_self);
      const tg::Tensor g = dev(tg::tensor(std::vector<double>{1, -2, 3, 0.5}));
      const uint64_t before = tg::cuda::host_sync_count();
      const std::vector<tg::Tensor> grads = tg::autograd::grad({y, y2}, {self, src}, {g, g});
      CHECK(tg::cuda::host_sync_count() == before);
      CHECK(grads[0].device().is_cuda());
    }
  }
  const tg::Tensor self = leaf({1, 2, 3, 4}, {2, 2});
  const tg::Tensor source = leaf({5, 6, 7}, {3});
  const tg::Tensor mask =
      dev(tg::tensor(std::vector<bool>{true, false, true, true}).reshape({2, 2}));
  const uint64_t before = tg::cuda::host_sync_count();
  const tg::Tensor y = tg::masked_scatter(self, mask, source);
  const std::vector<tg::Tensor> grads =
      tg::autograd::grad({y}, {self, source}, {dev(tg::ones({2, 2}, tg::kFloat64))});
  CHECK(tg::cuda::host_sync_count() == before);
  CHECK(grads[1].cpu().to_vector<double>() == std::vector<double>{1, 1, 1});
}

TEST_CASE("cuda: the caching allocator reports what it holds") {
  if (no_device()) return;
  const tg::cuda::MemoryStats start = tg::cuda::memory_stats();
  {
    const tg::Tensor t = tg::empty({1000}, tg::kFloat64, tg::kCUDA);
    const tg::cuda::MemoryStats held = tg::cuda::memory_stats();
    CHECK(held.allocated >= start.allocated + 8000);
    CHECK(held.peak >= held.allocated);
    CHECK(held.reserved >= held.allocated);
  }
  CHECK(tg::cuda::memory_stats().allocated == start.allocated);
}

TEST_CASE("cuda: a small MLP trains on the device as on the CPU") {
  if (no_device()) return;
  // Same data and initial weights on both devices; five SGD steps of cross_entropy(relu MLP),
  // written with ops (tg::nn's optimizers take CPU parameters only, for now).
  auto train = [](tg::Device device) {
    tg::manual_seed(7);
    const tg::Tensor x = tg::randn({16, 5}, tg::kFloat64).to(device);
    const tg::Tensor y = tg::randint(0, 3, {16}, tg::kInt64).to(device);
    std::vector<tg::Tensor> params = {tg::randn({5, 8}, tg::kFloat64).to(device),
                                      tg::zeros({8}, tg::kFloat64).to(device),
                                      tg::randn({8, 3}, tg::kFloat64).to(device)};
    for (tg::Tensor& p : params) p.requires_grad_(true);
    std::vector<double> losses;
    for (int step = 0; step < 5; ++step) {
      const tg::Tensor h = tg::relu(tg::matmul(x, params[0]) + params[1]);
      const tg::Tensor loss = tg::cross_entropy(tg::matmul(h, params[2]), y);
      const std::vector<tg::Tensor> grads = tg::autograd::grad({loss}, params);
      tg::NoGradGuard no_grad;
      for (size_t k = 0; k < params.size(); ++k) params[k].sub_(grads[k], 0.5);
      losses.push_back(loss.item<double>());
    }
    return losses;
  };
  const std::vector<double> cpu = train(tg::kCPU), gpu = train(tg::kCUDA);
  REQUIRE(cpu.size() == gpu.size());
  for (size_t k = 0; k < cpu.size(); ++k) CHECK(gpu[k] == doctest::Approx(cpu[k]).epsilon(1e-9));
  CHECK(cpu.back() < cpu.front());
}
