// The tensor core: factories, metadata, type promotion, printing, errors, dispatch.
#include <doctest/doctest.h>

#include <cmath>
#include <cstdint>
#include <limits>
#include <sstream>

#include <tapegrad/tapegrad.h>

using namespace tg;

TEST_CASE("factories make the right values, shapes and dtypes") {
  CHECK(zeros({2, 3}).to_vector<float>() == std::vector<float>(6, 0.f));
  CHECK(ones({2}, kInt32).dtype() == kInt32);
  CHECK(full({2}, 2.5).dtype() == kFloat32);
  CHECK(full({2}, int64_t{7}).to_vector<int64_t>() == std::vector<int64_t>{7, 7});
  CHECK(arange(4).dtype() == kInt64);
  CHECK(arange(4).to_vector<int64_t>() == std::vector<int64_t>{0, 1, 2, 3});
  CHECK(arange(1.0, 2.0, 0.25).to_vector<double>() == std::vector<double>{1, 1.25, 1.5, 1.75});
  CHECK(linspace(0, 1, 5, kFloat64).to_vector<double>() ==
        std::vector<double>{0, 0.25, 0.5, 0.75, 1});
  CHECK(eye(2, 3, kInt64).to_vector<int64_t>() == std::vector<int64_t>{1, 0, 0, 0, 1, 0});
  CHECK_THROWS_AS(arange(0, 5, 0), ValueError);
}

TEST_CASE("fill writes every element: zero bits by memset, -0.0 and other values as values") {
  // Above and below the copy grain (1 << 18 bytes: one chunk, or split across the pool), on
  // memory that held other values (the allocator reuses blocks), at 1 and 2 threads.
  auto count_not = [](const Tensor& t, double want) {
    int64_t wrong = 0;
    for (const double x : t.to_vector<double>())
      wrong += !(x == want && std::signbit(x) == std::signbit(want));
    return wrong;
  };
  const int before = get_num_threads();
  for (const int threads : {1, 2}) {
    set_num_threads(threads);
    for (const int64_t n : {int64_t{7}, int64_t{1} << 17, (int64_t{1} << 20) + 3}) {
      CAPTURE(n);
      for (const DType dtype : {kFloat32, kFloat64, kInt64, kBool}) {
        const Tensor t = full({n}, 1.0, dtype);
        t.fill_(0.0);
        CHECK(count_not(t, 0.0) == 0);
        CHECK(count_not(zeros({n}, dtype), 0.0) == 0);
      }
      const Tensor f = full({n}, 3.0, kFloat64);
      f.fill_(-0.0);
      CHECK(count_not(f, -0.0) == 0);
      CHECK(count_not(full({n}, -2.5, kFloat32), -2.5) == 0);
    }
  }
  set_num_threads(before);
}

TEST_CASE("tensor() from vectors and nested lists") {
  Tensor a = tensor(std::vector<double>{1, 2, 3, 4}, {2, 2});
  CHECK(a.dtype() == kFloat64);
  CHECK(a.shape() == Shape{2, 2});
  CHECK(a.strides() == Shape{2, 1});
  CHECK(tensor({{1.f, 2.f}, {3.f, 4.f}}).dtype() == kFloat32);
  CHECK(tensor({1, 2, 3}).dtype() == kInt64);
  CHECK(tensor(std::vector<int32_t>{1}).dtype() == kInt32);
  Tensor b = tensor({{{true, false}}});
  CHECK(b.shape() == Shape{1, 1, 2});
  CHECK(b.to_vector<bool>() == std::vector<bool>{true, false});
  CHECK_THROWS_WITH_AS(tensor({{1.0, 2.0}, {3.0}}), doctest::Contains("rectangular"), ValueError);
  CHECK_THROWS_WITH_AS(tensor(std::vector<double>{1, 2, 3}, {2, 2}),
                       doctest::Contains("needs 4 values, got 3"), ValueError);
}

// The nested-list form takes the widest number kind, as torch.tensor infers one dtype for a list.
TEST_CASE("tensor() from nested lists: any depth, widest number kind, 0-d and empty") {
  Tensor mixed = tensor({{1, 2.5}, {3, 4}});
  CHECK(mixed.dtype() == kFloat64);
  CHECK(mixed.to_vector<double>() == std::vector<double>{1, 2.5, 3, 4});
  CHECK(tensor({{1, 2}, {3, 4}}).dtype() == kInt64);
  CHECK(tensor({true, 2}).dtype() == kInt64);
  CHECK(tensor({1.f, 2}).dtype() == kFloat32);
  CHECK(tensor({1.f, 2.}).dtype() == kFloat64);
  CHECK(tensor({{{{1.}}, {{2.}}}}).shape() == Shape{1, 2, 1, 1});
  Tensor scalar = tensor(3.5);
  CHECK(scalar.dim() == 0);
  CHECK(scalar.item<double>() == 3.5);
  Tensor empty_rows = tensor({{}, {}});
  CHECK(empty_rows.shape() == Shape{2, 0});
  CHECK(empty_rows.dtype() == kFloat32);
  CHECK(tensor({}).shape() == Shape{0});
  const int64_t big = int64_t{1} << 62;
  CHECK(tensor({big, -big}).to_vector<int64_t>() == std::vector<int64_t>{big, -big});
  CHECK_THROWS_WITH_AS(tensor({{1.0}, 2.0}), doctest::Contains("[tensor] nested lists"),
                       ValueError);
  CHECK_THROWS_WITH_AS(tensor({{1.0, 2.0}, {{3.0}, {4.0}}}), doctest::Contains("rectangular"),
                       ValueError);
  CHECK_THROWS_WITH_AS(tensor({uint64_t{1} << 63}), doctest::Contains("int64's range"), ValueError);
}

TEST_CASE("item and to_vector convert") {
  CHECK(tensor({2.5}).item<double>() == 2.5);
  CHECK(tensor({3}).item<float>() == 3.f);
  CHECK_THROWS_WITH_AS(tensor({1.0, 2.0}).item<double>(),
                       doctest::Contains("[item] expected a tensor with 1 element"), ValueError);
  CHECK(tensor({1.5, -2.5}).to_vector<int64_t>() == std::vector<int64_t>{1, -2});
}

TEST_CASE("random numbers are seedable") {
  manual_seed(42);
  auto a = rand({5}).to_vector<float>();
  manual_seed(42);
  auto b = rand({5}).to_vector<float>();
  CHECK(a == b);
  for (float v : a) CHECK((v >= 0.f && v < 1.f));
  manual_seed(1);
  Tensor n = randn({10000}, kFloat64);
  double mean = sum(n).item<double>() / 10000.0;
  CHECK(std::abs(mean) < 0.05);
}

namespace {
// The generator state after which the next output is `out`: splitmix64's mix step by step
// undone (xor-shifts and odd multipliers are invertible modulo 2^64).
uint64_t state_before_output(uint64_t out) {
  auto unshift = [](uint64_t y, int s) {
    uint64_t x = y;
    for (int k = 0; k < 64 / s + 1; ++k) x = y ^ (x >> s);
    return x;
  };
  auto inverse = [](uint64_t m) {
    uint64_t x = m;  // Newton's iteration doubles the correct low bits each step
    for (int k = 0; k < 6; ++k) x *= 2 - m * x;
    return x;
  };
  uint64_t z = unshift(out, 31) * inverse(0x94d049bb133111ebULL);
  z = unshift(z, 27) * inverse(0xbf58476d1ce4e5b9ULL);
  return unshift(z, 30) - 0x9e3779b97f4a7c15ULL;
}
}  // namespace

TEST_CASE("rand and randn: values from the generator's stream, the same on any thread count") {
  // randn's value i is Box-Muller's cosine half of the stream's draws 2i and 2i + 1, rand's value
  // i is draw i; each advances the generator by exactly the draws it used. 40000 values split
  // into tasks across the threads.
  const int64_t n = 40000;
  manual_seed(9);
  std::vector<double> u(static_cast<size_t>(2 * n + 1));
  for (double& v : u) v = static_cast<double>(random_u64() >> 11) * 0x1.0p-53;
  const int before = get_num_threads();
  for (int threads : {1, 2}) {
    CAPTURE(threads);
    set_num_threads(threads);
    manual_seed(9);
    const std::vector<double> normal = randn({n}, kFloat64).to_vector<double>();
    CHECK(static_cast<double>(random_u64() >> 11) * 0x1.0p-53 == u[static_cast<size_t>(2 * n)]);
    manual_seed(9);
    const std::vector<float> normal32 = randn({n}).to_vector<float>();
    manual_seed(9);
    const std::vector<double> uniform = rand({n}, kFloat64).to_vector<double>();
    CHECK(static_cast<double>(random_u64() >> 11) * 0x1.0p-53 == u[static_cast<size_t>(n)]);
    manual_seed(9);
    const std::vector<float> uniform32 = rand({n}).to_vector<float>();
    int64_t wrong = 0;
    double worst = 0;  // in units of the value's precision (2^-52 relative)
    for (size_t i = 0; i < static_cast<size_t>(n); ++i) {
      using LD = long double;
      const double angle = 2.0 * M_PI * u[2 * i + 1];  // rounded as the kernel rounds it
      const LD want = std::sqrt(-2 * std::log(1 - LD(u[2 * i]))) * std::cos(LD(angle));
      worst = std::max(worst, static_cast<double>(std::fabs(normal[i] - want) /
                                                  (std::fabs(want) * 0x1.0p-52L)));
      wrong += normal32[i] != static_cast<float>(normal[i]);
      wrong += uniform[i] != u[i];
      wrong += uniform32[i] != static_cast<float>(u[i]);
    }
    CHECK(wrong == 0);
    CHECK(worst < 4);  // log and cos 1 ULP each (SLEEF), the square root and product rounded
  }
  set_num_threads(before);
  // A draw within 2^-25 of 1 rounds up to 1 in float32; rand gives the largest float below 1.
  manual_seed(state_before_output(~uint64_t{0}));
  CHECK(rand({1}, kFloat64).item<double>() == 1 - 0x1.0p-53);
  manual_seed(state_before_output(~uint64_t{0}));
  CHECK(rand({1}).item<float>() == 0x1.fffffep-1f);
}

TEST_CASE("randint: low + the stream's draw % (high - low), without a division, any thread count") {
  // Spans from 1 to past 2^63 (where low + r overflows in signed arithmetic) and ones whose
  // quotient estimate is often short, against the plain remainder of each draw.
  const int64_t n = 70000;  // split into tasks across the threads
  const int64_t kMin = std::numeric_limits<int64_t>::min(),
                kMax = std::numeric_limits<int64_t>::max();
  const std::vector<std::pair<int64_t, int64_t>> ranges = {
      {0, 1},       {-5, 5},   {0, 1000}, {3, 1 << 30}, {0, (int64_t{1} << 62) + 12345},
      {kMin, kMax}, {-7, kMax}};
  manual_seed(21);
  std::vector<uint64_t> raw(static_cast<size_t>(n + 1));
  for (uint64_t& r : raw) r = random_u64();
  const int before = get_num_threads();
  for (int threads : {1, 2}) {
    set_num_threads(threads);
    for (const auto& range : ranges) {
      const int64_t low = range.first, high = range.second;
      CAPTURE(threads);
      CAPTURE(low);
      CAPTURE(high);
      manual_seed(21);
      const std::vector<int64_t> got = randint(low, high, {n}).to_vector<int64_t>();
      CHECK(random_u64() == raw[static_cast<size_t>(n)]);  // n draws used
      const uint64_t span = static_cast<uint64_t>(high) - static_cast<uint64_t>(low);
      int64_t wrong = 0;
      for (size_t i = 0; i < got.size(); ++i)
        wrong += got[i] != static_cast<int64_t>(static_cast<uint64_t>(low) + raw[i] % span);
      CHECK(wrong == 0);
    }
  }
  set_num_threads(before);
}

TEST_CASE("type promotion follows PyTorch") {
  Tensor i32 = ones({2}, kInt32), i64 = ones({2}, kInt64), f32 = ones({2}),
         f64 = ones({2}, kFloat64);
  Tensor b = ones({2}, kBool);
  CHECK(result_type(i32, f64) == kFloat64);
  CHECK(result_type(i32, i64) == kInt64);
  CHECK(result_type(b, i32) == kInt32);
  CHECK(result_type(i32, Scalar(2.5)) == kFloat32);  // a float number gives the default float dtype
  CHECK(result_type(f32, Scalar(2.5)) == kFloat32);
  CHECK(result_type(i32, Scalar(7)) == kInt32);  // an int number does not widen an int tensor
  CHECK(result_type(b, Scalar(7)) == kInt64);
  Tensor zero_d_f64 = full({}, 1.0, kFloat64);
  CHECK(result_type(f32, zero_d_f64) == kFloat32);  // 0-d tensors count only across categories
  CHECK(result_type(i32, zero_d_f64) == kFloat64);
  CHECK(promote_types(kBool, kFloat32) == kFloat32);
  CHECK(can_cast(kInt64, kFloat32));
  CHECK_FALSE(can_cast(kFloat32, kInt64));
}

TEST_CASE("printing looks like PyTorch") {
  CHECK(to_string(tensor({{1.0, 2.0}, {3.0, 4.0}})) ==
        "tensor([[1., 2.],\n        [3., 4.]], dtype=float64)");
  CHECK(to_string(tensor({1.5f, -2.f})) == "tensor([ 1.5000, -2.0000])");
  CHECK(to_string(tensor({1, 20})) == "tensor([ 1, 20])");
  CHECK(to_string(tensor({true, false})) == "tensor([ True, False])");
  CHECK(to_string(full({}, 3.0)) == "tensor(3.)");
  CHECK(to_string(tensor({1.0}).requires_grad_()) ==
        "tensor([1.], dtype=float64, requires_grad=True)");
  CHECK(to_string(Tensor()) == "tensor(undefined)");
}

TEST_CASE("errors carry the op, the argument, expected and got") {
  Tensor a = ones({2, 3}), b = ones({4});
  CHECK_THROWS_WITH_AS(add(a, b), doctest::Contains("[add] shapes [2, 3] and [4] cannot broadcast"),
                       ValueError);
  CHECK_THROWS_WITH_AS(add(a, Tensor()), doctest::Contains("[add] other is an undefined tensor"),
                       ValueError);
  CHECK_THROWS_WITH_AS(a.size(5), doctest::Contains("dim 5 is out of range for a 2-d tensor"),
                       IndexError);
  auto owned = std::make_unique<TypeError>("x");  // subclasses derive from tg::Error and
  Error& base = *owned;                           // std::exception
  CHECK(dynamic_cast<std::exception*>(&base) != nullptr);
}

TEST_CASE("a missing kernel is a clear error") {
  OpTable<int (*)()> table{"my_op", {}};
  CHECK_THROWS_WITH_AS(table.lookup(DispatchKey::CUDA), "[my_op] no kernel for CUDA", Error);
}

TEST_CASE("dispatch key sets pick the highest key") {
  DispatchKeySet ks = DispatchKeySet(DispatchKey::CPU).add(DispatchKey::Autograd);
  CHECK(ks.highest() == DispatchKey::Autograd);
  CHECK(select_key(ks) == DispatchKey::Autograd);
  {
    NoGradGuard g;
    CHECK(select_key(ks) == DispatchKey::CPU);  // grad mode off: Autograd is skipped
  }
  Tensor x = ones({1});
  CHECK_FALSE(x.key_set().has(DispatchKey::Autograd));
  x.requires_grad_();
  CHECK(x.key_set().has(DispatchKey::Autograd));
}

TEST_CASE("storage is shared, 64-byte aligned, and versioned") {
  Tensor a = zeros({4});
  CHECK(reinterpret_cast<uintptr_t>(a.data_ptr()) % 64 == 0);
  Tensor v = a.detach();
  v.fill_(2);
  CHECK(a.to_vector<float>() == std::vector<float>(4, 2.f));
  CHECK(a.version() == 1);
}

TEST_CASE("copy_ broadcasts and converts - clone is independent") {
  Tensor a = zeros({2, 2}, kFloat64);
  a.copy_(tensor({1, 2}));
  CHECK(a.to_vector<double>() == std::vector<double>{1, 2, 1, 2});
  Tensor c = a.clone();
  c.fill_(0);
  CHECK(a.to_vector<double>() == std::vector<double>{1, 2, 1, 2});
  CHECK_THROWS_AS(a.copy_(ones({3})), ValueError);
  CHECK(a.to_vector<double>() == std::vector<double>{1, 2, 1, 2});  // unchanged after the error
}

TEST_CASE("copy_ is differentiable with respect to the source") {
  Tensor src = tensor({1.0, 2.0}).requires_grad_();
  Tensor dst = zeros({2, 2}, kFloat64);
  dst.copy_(src);
  sum(dst * 3.0).backward();
  CHECK(src.grad().to_vector<double>() == std::vector<double>{6, 6});
}

TEST_CASE("set_num_threads controls the pool") {
  int before = get_num_threads();
  set_num_threads(1);
  CHECK(get_num_threads() == 1);
  Tensor big = ones({1 << 18});
  CHECK(sum(big).item<double>() == double(1 << 18));
  set_num_threads(before);
  CHECK(sum(big).item<double>() == double(1 << 18));
  CHECK_THROWS_AS(set_num_threads(0), ValueError);
}

TEST_CASE("small tensors: bytes aligned at every size, kept alive by views") {
  // Up to 64 bytes live in the storage's own block (core/storage.cpp), larger ones do not.
  for (int64_t n : {0, 1, 2, 15, 16, 17, 100}) {
    Tensor t = full({n}, 1.5);
    CHECK(reinterpret_cast<uintptr_t>(t.data_ptr()) % 64 == 0);
    CHECK(t.to_vector<float>() == std::vector<float>(static_cast<size_t>(n), 1.5f));
  }
  Tensor v;
  {
    Tensor t = full({4}, 2.0);
    v = t.view({2, 2});
    t.add_(ones({4}));
  }
  CHECK(v.to_vector<float>() == std::vector<float>(4, 3.f));  // the base is gone, its bytes not
  Tensor a = full({3}, 1.0), b = full({3}, 1.0);
  a.fill_(4);
  CHECK(b.to_vector<float>() == std::vector<float>(3, 1.f));  // each has bytes of its own
}

TEST_CASE("Shape: moves keep the sizes, inline and on the heap") {
  Shape small{3, 1, 4}, big{1, 2, 3, 4, 5, 6, 7, 8};
  Shape moved_small = std::move(small), moved_big = std::move(big);
  CHECK(moved_small == Shape{3, 1, 4});
  CHECK(moved_big == Shape{1, 2, 3, 4, 5, 6, 7, 8});
  CHECK(moved_big.numel() == 40320);
  small = std::move(moved_big);  // a heap shape into an inline one, and back
  moved_big = std::move(moved_small);
  CHECK(small == Shape{1, 2, 3, 4, 5, 6, 7, 8});
  CHECK(moved_big == Shape{3, 1, 4});
  CHECK_FALSE(moved_big == Shape{3, 1});
  CHECK_FALSE(moved_big == Shape{3, 1, 5});
  Shape grown(size_t{2}, 7);
  grown.push_back(9);
  CHECK(grown == Shape{7, 7, 9});
}

TEST_CASE("allocator: blocks from 64 KiB up are kept for reuse, and empty_cache returns them") {
  if (cpu_allocator_is_exact()) return;  // the sanitizer build never reuses a block, by design
  cpu_empty_cache();
  const size_t bytes = 64 * 1024, before = cpu_allocator_stats().cached;
  const void* first = nullptr;
  {
    const Tensor t = empty({static_cast<int64_t>(bytes / 4)});  // float32: exactly 64 KiB
    first = t.data_ptr();
  }
  CHECK(cpu_allocator_stats().cached == before + bytes);
  {
    // A block of the same size comes back: the warm pages of the last one, no fresh fault.
    const Tensor again = empty({static_cast<int64_t>(bytes / 8)}, kFloat64);
    CHECK(again.data_ptr() == first);
    CHECK(cpu_allocator_stats().cached == before);
  }
  {
    // Just under the threshold: malloc's, not kept.
    const Tensor small = empty({static_cast<int64_t>(bytes / 4) - 16});
    CHECK(small.numel() > 0);
  }
  CHECK(cpu_allocator_stats().cached == before + bytes);
  {
    // 4 MiB and more: on a 2 MiB boundary, where a transparent huge page can back it.
    const Tensor large = empty({int64_t{1} << 20});
    CHECK(reinterpret_cast<uintptr_t>(large.data_ptr()) % (uintptr_t{2} << 20) == 0);
  }
  cpu_empty_cache();
  CHECK(cpu_allocator_stats().cached == 0);
}
