// myops' ops through tapegrad's op check: every sample of each spec in float32 and float64,
// gradcheck and gradgradcheck, softclip_ against softclip, the reject samples, and the edge cases
// the check derives (non-contiguous, expanded, 0-size, 0-d inputs, in place into a view).
#define DOCTEST_CONFIG_IMPLEMENT_WITH_MAIN
#include <doctest/doctest.h>

#include <sstream>

#include <myops/functions.h>
#include <tapegrad/tapegrad.h>
#include <tapegrad/testing/check.h>

namespace {
std::string text(const tg::testing::OpReport& r) {
  std::ostringstream os;
  os << r;
  return os.str();
}
}  // namespace

TEST_CASE("softclip passes the op check") {
  const tg::testing::OpReport r = tg::testing::check_op("softclip");
  INFO(text(r));
  CHECK(r.ok);
  CHECK(r.gradgradchecks > 0);
  CHECK(r.rejects == 2);  // the reject sample, in float32 and float64
  CHECK(r.derived > 0);
}

TEST_CASE("pairwise_sqdist passes the op check, fast gradcheck too") {
  tg::testing::CheckOptions options;
  CHECK_MESSAGE(tg::testing::check_op("pairwise_sqdist", options).ok,
                text(tg::testing::check_op("pairwise_sqdist", options)));
  options.fast_gradcheck = true;
  const tg::testing::OpReport fast = tg::testing::check_op("pairwise_sqdist", options);
  CHECK_MESSAGE(fast.ok, text(fast));
}

TEST_CASE("a wrong value is caught where it is") {
  // softclip(x, 2) at 0.5 is 2 tanh(0.25); a typo in a formula would show in the op check above,
  // this checks the kernel against the definition directly.
  tg::Tensor x = tg::tensor({0.5, -1.0});
  tg::Tensor y = myops::softclip(x, 2.0);
  CHECK(y.to_vector<double>()[0] == doctest::Approx(2 * std::tanh(0.25)).epsilon(1e-6));
  CHECK_THROWS_AS(myops::softclip(x, -1.0), tg::ValueError);
}
