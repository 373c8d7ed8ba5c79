// The tape: backward, grad, accumulation, broadcasting, hooks, guards, version counters, in-place.
#include <doctest/doctest.h>

#include <tapegrad/tapegrad.h>

using namespace tg;

namespace {
std::vector<double> vals(const Tensor& t) { return t.to_vector<double>(); }
// A node that returns the very list of gradients it was given: the engine reuses the lists it
// passes and gets back (autograd/node.h), and must cope with a moved-from one.
struct PassThroughNode final : autograd::Node {
  std::vector<Tensor> apply(std::vector<Tensor>&& grads) override { return std::move(grads); }
  const char* name() const override { return "PassThrough"; }
};
Tensor leaf(std::vector<double> v, IntArrayRef shape) { return tensor(v, shape).requires_grad_(); }
Tensor leaf(std::vector<double> v) { return tensor(v).requires_grad_(); }
}  // namespace

TEST_CASE("backward of a small graph gives the chain rule") {
  Tensor a = leaf({1, 2, 3, 4}, {2, 2});
  Tensor b = leaf({10, 20});  // broadcast over rows
  Tensor loss = sum(a * b + a);
  loss.backward();
  CHECK(vals(a.grad()) == std::vector<double>{11, 21, 11, 21});
  CHECK(vals(b.grad()) == std::vector<double>{4, 6});  // summed back to b's shape
  CHECK(b.grad().shape() == Shape{2});
}

TEST_CASE("gradients accumulate across backward calls and reset with zero_") {
  Tensor x = leaf({2});
  for (int i = 0; i < 3; ++i) (x * x).backward();
  CHECK(vals(x.grad()) == std::vector<double>{12});
  {
    NoGradGuard g;
    x.grad().zero_();
  }
  (x * 3.0).backward();
  CHECK(vals(x.grad()) == std::vector<double>{3});
}

TEST_CASE("double backward: d2/dx2 of x^3 is 6x") {
  Tensor x = leaf({1, 2, -3});
  Tensor y = sum(x * x * x);
  auto g = autograd::grad({y}, {x}, {}, true, /*create_graph=*/true);
  CHECK(vals(g[0]) == std::vector<double>{3, 12, 27});
  auto gg = autograd::grad({sum(g[0])}, {x});
  CHECK(vals(gg[0]) == std::vector<double>{6, 12, -18});
  CHECK_FALSE(x.grad().defined());  // grad() never touches .grad
}

TEST_CASE("backward with create_graph leaves differentiable grads in .grad") {
  Tensor x = leaf({2});
  (x * x * x).backward({}, false, /*create_graph=*/true);
  Tensor dx = x.grad();  // 3x^2 = 12, with history
  CHECK(vals(dx) == std::vector<double>{12});
  CHECK(dx.requires_grad());
  auto gg = autograd::grad({dx}, {x});
  CHECK(vals(gg[0]) == std::vector<double>{12});  // 6x
}

TEST_CASE("a second backward without retain_graph is a clear error") {
  Tensor x = leaf({1, 2});
  Tensor y = sum(x * x);
  y.backward({}, /*retain_graph=*/true);
  y.backward();  // allowed: the graph was retained
  CHECK(vals(x.grad()) == std::vector<double>{4, 8});
  CHECK_THROWS_WITH_AS(y.backward(), doctest::Contains("backward through the graph a second time"),
                       Error);
}

TEST_CASE("non-scalar backward needs a gradient") {
  Tensor x = leaf({1, 2});
  Tensor y = x * 2.0;
  CHECK_THROWS_WITH_AS(y.backward(), doctest::Contains("[backward]"), ValueError);
  y.backward(tensor({1.0, 10.0}));
  CHECK(vals(x.grad()) == std::vector<double>{2, 20});
  CHECK_THROWS_WITH_AS((x * 2.0).backward(tensor({1.0})), doctest::Contains("has shape [1]"),
                       ValueError);
}

TEST_CASE("grad returns undefined for inputs that do not influence the output") {
  Tensor x = leaf({1}), unused = leaf({5});
  auto g = autograd::grad({x * 2.0}, {x, unused});
  CHECK(vals(g[0]) == std::vector<double>{2});
  CHECK_FALSE(g[1].defined());
}

TEST_CASE("grad of an intermediate (non-leaf) tensor") {
  Tensor x = leaf({3});
  Tensor h = x * x;  // 9
  Tensor y = h * h;  // 81, dy/dh = 2h = 18
  auto g = autograd::grad({y}, {h});
  CHECK(vals(g[0]) == std::vector<double>{18});
}

TEST_CASE("NoGradGuard records nothing - detach cuts history") {
  Tensor x = leaf({1, 2});
  {
    NoGradGuard guard;
    Tensor y = x * 2.0;
    CHECK_FALSE(y.requires_grad());
  }
  Tensor d = x.detach();
  CHECK_FALSE(d.requires_grad());
  CHECK(d.data_ptr() == x.data_ptr());  // same storage
  Tensor y = x * 2.0;
  CHECK(y.requires_grad());
  CHECK_FALSE(y.is_leaf());
}

TEST_CASE("hooks see and may replace the gradient") {
  Tensor x = leaf({1, 2});
  std::vector<double> seen;
  x.register_hook([&](const Tensor& g) {
    seen = g.to_vector<double>();
    return g * 10.0;
  });
  Tensor h = x * 3.0;
  h.register_hook([](const Tensor& g) { return g + 1.0; });  // non-leaf hook
  sum(h).backward();
  CHECK(seen == std::vector<double>{6, 6});  // (1 + 1) * 3
  CHECK(vals(x.grad()) == std::vector<double>{60, 60});
}

TEST_CASE("retain_grad keeps a non-leaf gradient") {
  Tensor x = leaf({1, 2});
  Tensor h = x * 3.0;
  h.retain_grad();
  sum(h * h).backward();
  CHECK(vals(h.grad()) == std::vector<double>{6, 12});
}

TEST_CASE("a saved tensor modified in place fails at backward with both versions") {
  Tensor x = leaf({1, 2});
  Tensor z = x * 2.0;
  Tensor w = z * z;  // saves z at version 0
  z += 1.0;          // version 1
  CHECK_THROWS_WITH_AS(sum(w).backward(),
                       doctest::Contains("saved at version 0 and is now at version 1"), Error);
}

TEST_CASE("in-place on a leaf that requires grad is an error and changes nothing") {
  Tensor x = leaf({1, 2});
  CHECK_THROWS_WITH_AS(x += 1.0, doctest::Contains("[add_] a leaf tensor that requires grad"),
                       ValueError);
  CHECK(vals(x) == std::vector<double>{1, 2});
  CHECK(x.version() == 0);
}

TEST_CASE("in-place on a non-leaf takes over its history") {
  Tensor x = leaf({1, 2}), w = leaf({3, 4});
  Tensor h = x * 2.0;  // [2, 4]
  h.mul_(w);           // [6, 16], history: MulBackward -> MulBackward
  CHECK(vals(h) == std::vector<double>{6, 16});
  sum(h).backward();
  CHECK(vals(x.grad()) == std::vector<double>{6, 8});
  CHECK(vals(w.grad()) == std::vector<double>{2, 4});
}

TEST_CASE("fill_ on a non-leaf sends no gradient to its old history") {
  Tensor x = leaf({1, 2});
  Tensor h = x * 2.0;
  h.fill_(5);
  Tensor y = sum(h * x);  // only the direct use of x counts
  y.backward();
  CHECK(vals(x.grad()) == std::vector<double>{5, 5});
}

TEST_CASE("requires_grad_ only on floating tensors") {
  Tensor i = tensor({1, 2});
  CHECK_THROWS_WITH_AS(i.requires_grad_(), doctest::Contains("only floating point tensors"),
                       TypeError);
}

TEST_CASE("saved values are freed after backward") {
  Tensor x = leaf({1, 2});
  Tensor big = x * 2.0;
  std::weak_ptr<TensorImpl> watch = big.impl_ptr();
  Tensor y = sum(big * big);
  big = Tensor();
  CHECK_FALSE(watch.expired());  // kept by MulBackward
  y.backward();
  CHECK(watch.expired());  // released by the backward without retain_graph
}

TEST_CASE("a wide graph: more nodes waiting at once than the engine keeps inline") {
  // cat's backward sends a gradient to 20 products at once: the ready queue outgrows its inline
  // storage, then empties again. Twice, so the second pass runs on reused gradient lists.
  for (int pass = 0; pass < 2; ++pass) {
    std::vector<Tensor> xs, products;
    for (int i = 0; i < 20; ++i) {
      xs.push_back(leaf({double(i)}));
      products.push_back(xs.back() * double(i + 1));
    }
    sum(cat(products) * 2.0).backward();
    for (int i = 0; i < 20; ++i) CHECK(vals(xs[i].grad()) == std::vector<double>{2.0 * (i + 1)});
  }
}

TEST_CASE("a node that hands back its own gradient list, and a backward inside a hook") {
  Tensor x = leaf({3});
  Tensor y;
  {
    NoGradGuard no_grad;
    y = x.clone();
  }
  auto node = std::make_shared<PassThroughNode>();
  autograd::collect_inputs(*node, {&x});
  autograd::set_history(node, {&y});
  Tensor inner = leaf({5});
  x.register_hook([&](const Tensor& g) {
    EnableGradGuard record;         // backward runs hooks with recording off
    sum(inner * inner).backward();  // a nested pass while the outer one waits
    return g;
  });
  sum(y * y).backward();
  CHECK(vals(x.grad()) == std::vector<double>{6});
  CHECK(vals(inner.grad()) == std::vector<double>{10});
}
