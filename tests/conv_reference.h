#pragma once
// A conv's forward and both gradients by their definitions, one tap at a time, for the conv
// tests: each entry with the sum of its terms' magnitudes, which bounds a float32 sum's rounding
// (a term missed, or taken from the wrong tap or channel, is far outside such a bound).
#include <doctest/doctest.h>

#include <cmath>
#include <string>
#include <vector>

#include <tapegrad/tapegrad.h>

struct ConvSums {
  std::vector<double> y, gx, gw, y_abs, gx_abs, gw_abs;
  ConvSums(size_t ny, size_t nx, size_t nw)
      : y(ny), gx(nx), gw(nw), y_abs(ny), gx_abs(nx), gw_abs(nw) {}
  void bias(size_t yi, double b) {
    y[yi] += b;
    y_abs[yi] += std::abs(b);
  }
  // The tap that pairs x[xi], w[wi] and y[yi]; gy is the output gradient.
  void tap(size_t yi, size_t xi, size_t wi, const std::vector<double>& x,
           const std::vector<double>& w, const std::vector<double>& gy) {
    y[yi] += x[xi] * w[wi];
    y_abs[yi] += std::abs(x[xi] * w[wi]);
    gx[xi] += gy[yi] * w[wi];
    gx_abs[xi] += std::abs(gy[yi] * w[wi]);
    gw[wi] += gy[yi] * x[xi];
    gw_abs[wi] += std::abs(gy[yi] * x[xi]);
  }
};

// got within tol times the sum of the terms' magnitudes of want, element by element.
inline void check_within_sums(const std::string& what, const std::vector<double>& got,
                              const std::vector<double>& want, const std::vector<double>& abs_sum,
                              double tol) {
  INFO(what);
  REQUIRE(got.size() == want.size());
  for (size_t i = 0; i < got.size(); ++i) {
    INFO("element ", i, ": got ", got[i], ", expected ", want[i]);
    CHECK(std::abs(got[i] - want[i]) <= tol * abs_sum[i] + 1e-300);
  }
}

// run(threads) at 1 and at 2 threads (the pool's count restored after): each of its results
// must be the same bits at both; returns the 1-thread results.
template <typename Run> auto same_at_one_and_two_threads(const Run& run) {
  const int before = tg::get_num_threads();
  const auto one = run(1), two = run(2);
  tg::set_num_threads(before);
  for (size_t r = 0; r < one.size(); ++r) {
    INFO("result ", r);
    CHECK(two[r] == one[r]);
  }
  return one;
}
