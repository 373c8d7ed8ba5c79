// The direct conv's tile kernels (backends/cpu/conv_direct_impl.h) in both layouts, AVX2's
// (16-position tiles) and AVX-512's (64), built here without their ISA flags: GCC and clang
// lower the wide vectors to what the test's CPU has, so the AVX-512 layout's logic (its tails,
// its wide tiles of up to 24 vectors for a last block of one channel, its channel passes) is
// checked on every CPU, not only on one with AVX-512. Each layout's rows() against the sum it
// defines, in float64, on hand-made staged rows and packed weights.
#include <doctest/doctest.h>

#include <cmath>
#include <vector>

#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wpsabi"  // internal vectors wider than the build's ISA
#include <tapegrad/backends/cpu/conv_direct_impl.h>
#pragma GCC diagnostic pop

namespace {

using tg::cpu::direct::kRows;
using tg::cpu::direct::Rows;

struct TileCase {
  int64_t in, out, taps, dilation, len;
  bool bias;
};

// y from `rows` against y[o][l] = bias[o] + sum over c, j of w(o, c, j) stage[c][l + j * dilation],
// within 1e-5 of the sum of the terms' magnitudes (the kernel sums in float32).
void check_rows(void (*rows)(const Rows&), const TileCase& t) {
  const int64_t blocks = (t.out + kRows - 1) / kRows, halo = (t.taps - 1) * t.dilation;
  const int64_t stride = (t.len + 63) / 64 * 64 + halo + 3;  // odd: rows not aligned
  std::vector<float> stage(static_cast<size_t>(t.in * stride));
  std::vector<float> packed(static_cast<size_t>(blocks * t.in * t.taps * kRows), 0.0f);
  std::vector<float> bias(static_cast<size_t>(t.out));
  for (size_t i = 0; i < stage.size(); ++i)
    stage[i] = static_cast<float>(std::sin(0.37 * static_cast<double>(i) + 0.1));
  for (int64_t o = 0; o < t.out; ++o) {
    bias[static_cast<size_t>(o)] = static_cast<float>(std::cos(1.3 * static_cast<double>(o)));
    for (int64_t c = 0; c < t.in; ++c)
      for (int64_t j = 0; j < t.taps; ++j)
        packed[static_cast<size_t>((((o / kRows) * t.in + c) * t.taps + j) * kRows + o % kRows)] =
            static_cast<float>(std::sin(0.23 * static_cast<double>((o * t.in + c) * t.taps + j)));
  }
  const int64_t y_row = t.len + 5;  // rows of y apart, with room that must stay untouched
  std::vector<float> y(static_cast<size_t>(t.out * y_row), -7.0f);
  Rows r{};
  r.packed = packed.data();
  r.bias = t.bias ? bias.data() : nullptr;
  r.stage = stage.data();
  r.in = t.in;
  r.out = t.out;
  r.taps = t.taps;
  r.dilation = t.dilation;
  r.stride = stride;
  r.len = t.len;
  r.y = y.data();
  r.y_row = y_row;
  rows(r);
  for (int64_t o = 0; o < t.out; ++o)
    for (int64_t l = 0; l < y_row; ++l) {
      const float got = y[static_cast<size_t>(o * y_row + l)];
      INFO("output ", o, ", position ", l, ": got ", got);
      if (l >= t.len) {
        CHECK(got == -7.0f);
        continue;
      }
      double want = t.bias ? bias[static_cast<size_t>(o)] : 0.0, magnitude = std::abs(want);
      for (int64_t c = 0; c < t.in; ++c)
        for (int64_t j = 0; j < t.taps; ++j) {
          const double term = static_cast<double>(packed[static_cast<size_t>(
                                  (((o / kRows) * t.in + c) * t.taps + j) * kRows + o % kRows)]) *
                              stage[static_cast<size_t>(c * stride + l + j * t.dilation)];
          want += term;
          magnitude += std::abs(term);
        }
      CHECK(std::abs(static_cast<double>(got) - want) <= 1e-5 * magnitude + 1e-30);
    }
}

}  // namespace

TEST_CASE("direct conv tiles: AVX2's and AVX-512's layouts against their sums") {
  const std::vector<TileCase> cases = {
      {700, 13, 1, 1, 400, true},  // a last block of 1 on wide tiles; two channel passes
      {5, 8, 3, 2, 200, true},     // a last block of 2, dilation 2
      {2, 3, 5, 1, 70, false},     // one block of 3
      {4, 6, 2, 1, 64, true},      // whole tiles only
      {3, 5, 1, 1, 1, false},      // one position: a tail shorter than any tile
      {260, 7, 3, 1, 130, true},   // passes of 227 channels with 3 taps
  };
  for (size_t k = 0; k < cases.size(); ++k) {
    INFO("case ", k);
    {
      INFO("AVX2 layout");
      check_rows(&tg::cpu::direct::Tiles<8, 2>::rows, cases[k]);
    }
    {
      INFO("AVX-512 layout");
      check_rows(&tg::cpu::direct::Tiles<16, 4>::rows, cases[k]);
    }
  }
}
