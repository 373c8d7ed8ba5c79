// The portable half of the direct conv (conv_direct.h): which calls it takes, the weight
// packing, the staging of input rows, and the split into tasks across the pool; the tile kernels
// are per ISA.
#include <tapegrad/backends/cpu/conv_direct.h>

#include <algorithm>
#include <cstring>
#include <vector>

#include <tapegrad/backends/cpu/simd/isa_choice.h>
#include <tapegrad/core/parallel.h>

namespace tg::cpu::direct {

namespace {

struct Isa {
  const char* name;  // as TG_SIMD names it
  Kernels kernels;
};

// The widest kernel this CPU runs; none below AVX2 + FMA, or with TG_SIMD=sse2 / scalar. A
// kernel set is built only where the CPU runs it: even returning its table may use its ISA.
const Kernels* best_kernels() {
  static const Kernels* const chosen = []() -> const Kernels* {
    static const Isa sse2{"sse2", {}};
    std::vector<const Isa*> available{&sse2};
    if (__builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma")) {
      static const Isa avx2{"avx2", avx2_kernels()};
      available.push_back(&avx2);
      if (__builtin_cpu_supports("avx512f")) {
        static const Isa avx512{"avx512f", avx512_kernels()};
        available.push_back(&avx512);
      }
    }
    const Isa* isa = vec::choose_isa(available);
    return isa && isa->kernels.rows ? &isa->kernels : nullptr;
  }();
  return chosen;
}

int64_t round_up(int64_t n, int64_t m) { return (n + m - 1) / m * m; }

// The packed weights of every group, [groups][ceil(out / kRows)][in][taps][kRows], of the conv
// from `in` to `out` channels per group. w is the layer's [OC, C / groups, k]: for the forward
// conv out = OC / groups and the tap j of (o, c) is w[o][c][j]; for the input gradient (turned)
// in = OC / groups, out = C / groups, and it is w[c][o][k - 1 - j] (channels swapped, taps
// reversed).
std::vector<float> pack(const float* w, int64_t groups, int64_t in, int64_t out, int64_t taps,
                        bool turned) {
  const int64_t blocks = (out + kRows - 1) / kRows, per_group = blocks * kRows * in * taps;
  std::vector<float> packed(static_cast<size_t>(groups * per_group), 0.0f);
  for (int64_t gi = 0; gi < groups; ++gi) {
    const float* wg = w + gi * in * out * taps;
    float* dst = packed.data() + gi * per_group;
    for (int64_t o = 0; o < out; ++o)
      for (int64_t c = 0; c < in; ++c)
        for (int64_t j = 0; j < taps; ++j) {
          const float v =
              turned ? wg[(c * out + o) * taps + taps - 1 - j] : wg[(o * in + c) * taps + j];
          dst[(((o / kRows) * in + c) * taps + j) * kRows + o % kRows] = v;
        }
  }
  return packed;
}

// One conv of stride 1 over rows: `rows_per_plane` rows of src_len inputs per channel (planes of
// rows_per_plane * src_len), `in` channels per group in, `out` out, each output row
// out_len long: output l of a row reads its input l - pad + j * dilation (zero outside).
struct RowConv {
  int64_t n, groups, in, out, taps, dilation, pad;
  int64_t rows_per_plane, src_len, out_len;
};

// Runs p over every (image, group, row, chunk of positions) as its own task. A chunk's staged
// rows (in x ~chunk floats) stay within about 256 KiB; each output is summed within one task
// in a fixed order, so the result depends on neither the chunking nor the thread count.
void run(const Kernels& k, const RowConv& p, const float* packed, const float* bias,
         const float* src, float* dst) {
  const int64_t halo = (p.taps - 1) * p.dilation;
  const int64_t budget = std::max<int64_t>(k.cols, (int64_t{1} << 16) / std::max<int64_t>(p.in, 1));
  const int64_t chunk =
      std::min(budget / k.cols * k.cols, round_up(std::max<int64_t>(p.out_len, 1), k.cols));
  const int64_t chunk_count = (p.out_len + chunk - 1) / chunk;
  const int64_t stride = round_up(chunk + halo, 16);  // staged rows 64-byte aligned
  const int64_t per_group = round_up(p.out, kRows) * p.in * p.taps;
  const int64_t src_plane = p.rows_per_plane * p.src_len, dst_plane = p.rows_per_plane * p.out_len;
  const int64_t tasks = p.n * p.groups * p.rows_per_plane * chunk_count;
  // Tasks of at least ~2^16 multiply-adds each before the pool splits them.
  const int64_t work = std::max<int64_t>(1, p.in * p.taps * p.out * chunk);
  parallel_for(
      0, tasks, std::max<int64_t>(1, (int64_t{1} << 16) / work), [&](int64_t lo, int64_t hi) {
        thread_local std::vector<float> kept;
        const size_t need = static_cast<size_t>(p.in * stride + 16);
        if (kept.size() < need) kept.resize(need);
        float* stage = kept.data() +
                       ((64 - reinterpret_cast<uintptr_t>(kept.data()) % 64) % 64) / sizeof(float);
        for (int64_t t = lo; t < hi; ++t) {
          const int64_t ch = t % chunk_count, row = (t / chunk_count) % p.rows_per_plane;
          const int64_t gi = (t / (chunk_count * p.rows_per_plane)) % p.groups;
          const int64_t n = t / (chunk_count * p.rows_per_plane * p.groups);
          const int64_t l0 = ch * chunk, len = std::min(chunk, p.out_len - l0);
          // stage[c][s] = the input at position l0 - pad + s of row `row`, channel c of the group.
          const float* rows = src + (n * p.groups + gi) * p.in * src_plane + row * p.src_len;
          const int64_t first = l0 - p.pad, count = round_up(len, k.cols) + halo;
          const int64_t inside_lo = std::clamp<int64_t>(-first, 0, count);
          const int64_t inside_hi = std::clamp<int64_t>(p.src_len - first, inside_lo, count);
          for (int64_t c = 0; c < p.in; ++c) {
            float* s = stage + c * stride;
            std::fill(s, s + inside_lo, 0.0f);
            if (inside_hi > inside_lo)
              std::memcpy(s + inside_lo, rows + c * src_plane + first + inside_lo,
                          static_cast<size_t>(inside_hi - inside_lo) * sizeof(float));
            std::fill(s + inside_hi, s + count, 0.0f);
          }
          Rows r{};
          r.packed = packed + gi * per_group;
          r.bias = bias ? bias + gi * p.out : nullptr;
          r.stage = stage;
          r.in = p.in;
          r.out = p.out;
          r.taps = p.taps;
          r.dilation = p.dilation;
          r.stride = stride;
          r.len = len;
          r.y = dst + (n * p.groups + gi) * p.out * dst_plane + row * p.out_len + l0;
          r.y_row = dst_plane;
          k.rows(r);
        }
      });
}

// Whether rows of this length fill their tiles to within 1/8: on rows of 20 and 24 positions
// (tiles of 32) the kernel lost to im2col + GEMM, from 32 on it won (docs/PERFORMANCE.md).
bool fills_tiles(int64_t len, int64_t cols) { return round_up(len, cols) * 7 <= len * 8; }

// The conv as rows, each (image, row) of a conv2d a 1-d conv of its own. The input gradient's
// conv runs from the output gradient's channels to the input's, with w's taps reversed:
// gx[c][i] = sum over o, j of w[o][c][j] gy[o][i + pad - j * dilation], i.e. with j' = k - 1 - j
// a conv of gy padded on the left by (k - 1) * dilation - pad (negative: gy read from further in).
RowConv row_conv(const ConvGeometry& g, bool input_gradient) {
  const int64_t cg = g.c / g.groups, ocg = g.oc / g.groups;
  if (!input_gradient) return {g.n, g.groups, cg, ocg, g.kw, g.dw, g.pw, g.h, g.w, g.ow};
  return {g.n, g.groups, ocg, cg, g.kw, g.dw, (g.kw - 1) * g.dw - g.pw, g.h, g.ow, g.w};
}

}  // namespace

// 1-tap kernels stay with GEMM: their im2col is a plain copy, and the kernel only matched
// OpenBLAS there; what it saves grows with the taps (docs/PERFORMANCE.md).
bool fits(const ConvGeometry& g) {
  const Kernels* k = best_kernels();
  return k != nullptr && g.kh == 1 && g.kw > 1 && g.ph == 0 && g.sh == 1 && g.sw == 1 && g.n > 0 &&
         g.c > 0 && g.oc > 0 && g.h > 0 && fills_tiles(g.w, k->cols) && fills_tiles(g.ow, k->cols);
}

void forward(const float* x, const float* w, const float* bias, const ConvGeometry& g, float* y) {
  const std::vector<float> packed = pack(w, g.groups, g.c / g.groups, g.oc / g.groups, g.kw, false);
  run(*best_kernels(), row_conv(g, false), packed.data(), bias, x, y);
}

void backward_input(const float* gy, const float* w, const ConvGeometry& g, float* gx) {
  const std::vector<float> packed = pack(w, g.groups, g.oc / g.groups, g.c / g.groups, g.kw, true);
  run(*best_kernels(), row_conv(g, true), packed.data(), nullptr, gy, gx);
}

}  // namespace tg::cpu::direct
