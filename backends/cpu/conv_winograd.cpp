// The portable half of the F(2x2, 3x3) path (conv_winograd.h): which calls it takes, the weight
// transform, and the split of images across the pool; the per-image kernels are per ISA.
#include <tapegrad/backends/cpu/conv_winograd.h>

#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <algorithm>
#include <memory>
#include <vector>

#include <tapegrad/core/parallel.h>

namespace tg::cpu::winograd {

namespace {

// The widest kernel this CPU runs; none below AVX2 + FMA, or with TG_SIMD=sse2 / scalar (the
// switch vec_math.h reads), so the old path stays one environment variable away.
const Kernels* best_kernels() {
  static const Kernels chosen = []() -> Kernels {
    const char* cap = std::getenv("TG_SIMD");
    const bool avx2 = __builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma");
    if (!avx2 || (cap && (std::strcmp(cap, "scalar") == 0 || std::strcmp(cap, "sse2") == 0)))
      return {};
    if (__builtin_cpu_supports("avx512f") && !(cap && std::strcmp(cap, "avx2") == 0))
      return avx512_kernels();
    return avx2_kernels();
  }();
  return chosen.conv ? &chosen : nullptr;
}

// The tiles of an output `width` wide fill at least 3/4 of their groups of 16 lanes (a 28-wide
// image: 14 of 16); narrower images waste most of each vector and stay with im2col.
bool fills_lanes(int64_t width) {
  const int64_t tiles = (width + 1) / 2, lanes = (tiles + 15) / 16 * 16;
  return tiles * 4 >= lanes * 3;
}

// The packed layout's test: the image's tiles, in row-major order, fill 3/4 of their groups of
// 16 (an 8x8 output: 16 tiles, one whole vector), and there are at most 256 of them (up to 32x32
// outputs): the layout stages a whole image's transformed rows at once, which larger images
// would push out of L2, and it has been measured on small images only.
bool fills_packed(int64_t height, int64_t width) {
  const int64_t tiles = (height + 1) / 2 * ((width + 1) / 2), lanes = (tiles + 15) / 16 * 16;
  return tiles <= 256 && tiles * 4 >= lanes * 3;
}

// Whether an image of this output size runs in one of the layouts: tile rows when they fill the
// lanes (as before the packed layout existed), else the packed layout.
bool layout_fits(int64_t height, int64_t width) {
  return fills_lanes(width) || fills_packed(height, width);
}

Problem problem(int64_t c, int64_t k, int64_t h, int64_t w, int64_t ph, int64_t pw) {
  Problem p{};
  p.c = c;
  p.k = k;
  p.h = h;
  p.w = w;
  p.ph = ph;
  p.pw = pw;
  p.oh = h + 2 * ph - 2;
  p.ow = w + 2 * pw - 2;
  p.tile_rows = (p.oh + 1) / 2;
  p.tiles = (p.ow + 1) / 2;
  p.vectors = (p.tiles + 15) / 16;
  p.stage_w = 16 * p.vectors + 1;
  p.stage_h = 2 * p.tile_rows + 2;
  p.flat_tiles = p.tile_rows * p.tiles;
  p.groups = (p.flat_tiles + 15) / 16;
  // Room for the reads of the last group (16 * groups + tiles) and the spill of the last row's
  // stores ((tile_rows + 1) * tiles + 16, the larger).
  p.plane = ((p.tile_rows + 1) * p.tiles + 16 + 15) / 16 * 16;
  return p;
}

// U[q][ci][ko] = (G g G^T)[q] with g the 3x3 filter from input channel ci to output channel ko:
// w[ko][ci] for the forward conv, w[ci][ko] turned by 180 degrees for the input gradient.
// G = [[1, 0, 0], [1/2, 1/2, 1/2], [1/2, -1/2, 1/2], [0, 0, 1]].
std::vector<float> transform_weights(const float* w, int64_t cin, int64_t kout, bool flipped) {
  std::vector<float> u(static_cast<size_t>(16 * cin * kout));
  for (int64_t ko = 0; ko < kout; ++ko)
    for (int64_t ci = 0; ci < cin; ++ci) {
      float g[3][3];
      for (int i = 0; i < 3; ++i)
        for (int j = 0; j < 3; ++j)
          g[i][j] = flipped ? w[((ci * kout + ko) * 3 + 2 - i) * 3 + 2 - j]
                            : w[((ko * cin + ci) * 3 + i) * 3 + j];
      float t[4][3];  // G g
      for (int j = 0; j < 3; ++j) {
        t[0][j] = g[0][j];
        t[1][j] = 0.5f * (g[0][j] + g[1][j] + g[2][j]);
        t[2][j] = 0.5f * (g[0][j] - g[1][j] + g[2][j]);
        t[3][j] = g[2][j];
      }
      for (int i = 0; i < 4; ++i) {
        const float r[4] = {t[i][0], 0.5f * (t[i][0] + t[i][1] + t[i][2]),
                            0.5f * (t[i][0] - t[i][1] + t[i][2]), t[i][2]};
        for (int j = 0; j < 4; ++j)
          u[static_cast<size_t>(((i * 4 + j) * cin + ci) * kout + ko)] = r[j];
      }
    }
  return u;
}

// Runs p over n images, one image per task step; the images are independent, so the result does
// not depend on the thread count.
// 64-byte aligned floats, every one written before it is read.
class Aligned {
 public:
  explicit Aligned(int64_t n)
      : own_(std::make_unique_for_overwrite<float[]>(static_cast<size_t>(n + 16))) {
    const auto address = reinterpret_cast<uintptr_t>(own_.get());
    ptr_ = own_.get() + ((64 - address % 64) % 64) / sizeof(float);
  }
  float* get() const { return ptr_; }

 private:
  std::unique_ptr<float[]> own_;
  float* ptr_;
};

void run(const Problem& p, int64_t n, const float* x, float* y) {
  const bool packed = !fills_lanes(p.ow);
  const auto kernel = packed ? best_kernels()->packed_conv : best_kernels()->conv;
  const int64_t in_size = p.c * p.h * p.w, out_size = p.k * p.oh * p.ow;
  parallel_for(0, n, 1, [&](int64_t lo, int64_t hi) {
    const int64_t size = kernel_scratch(p, packed);
    const Aligned scratch(size);
    if (packed) std::fill(scratch.get(), scratch.get() + size, 0.0f);  // its padding
    for (int64_t i = lo; i < hi; ++i) kernel(p, x + i * in_size, y + i * out_size, scratch.get());
  });
}

}  // namespace

int64_t kernel_scratch(const Problem& p, bool packed) {
  const auto round16 = [](int64_t n) { return (n + 15) / 16 * 16; };
  const int64_t conv = round16(p.c * p.stage_h * 2 * p.stage_w) + 16 * p.c * 16 + 16 * 8 * 16;
  // The weight gradient's: staged gy planes, channel-last x, DY, V.
  const int64_t cols = 2 * p.vectors * 16 + 2;
  const int64_t weight = round16(p.k * p.stage_h * 2 * p.stage_w) +
                         round16(p.stage_h * cols * p.c) + 16 * p.k * 16 + 16 * 16 * p.c;
  // The packed layout's: H planes, V, M, the padded planes and the 48 floats read past them;
  // channel-last x, DY, V and the image's sums.
  const int64_t packed_conv =
      p.c * 8 * p.plane + 16 * p.c * 16 + 16 * 8 * 16 + p.c * p.stage_h * (2 * p.tiles + 2) + 48;
  const int64_t packed_weight =
      round16(p.stage_h * (2 * p.tiles + 2) * p.c) + 16 * p.k * 16 + 16 * 16 * p.c + 16 * p.c * p.k;
  return packed ? std::max(packed_conv, packed_weight) : std::max(conv, weight);
}

bool fits(const ConvGeometry& g) {
  return best_kernels() != nullptr && g.spatial == 2 && g.groups == 1 && g.kh == 3 && g.kw == 3 &&
         g.sh == 1 && g.sw == 1 && g.dh == 1 && g.dw == 1 && g.ph <= 2 && g.pw <= 2 && g.n > 0 &&
         g.c > 0 && g.oc > 0 && g.oh > 0 && g.ow > 0 && layout_fits(g.oh, g.ow) &&
         layout_fits(g.h, g.w);
}

void forward(const float* x, const float* w, const float* bias, const ConvGeometry& g, float* y) {
  const std::vector<float> u = transform_weights(w, g.c, g.oc, false);
  Problem p = problem(g.c, g.oc, g.h, g.w, g.ph, g.pw);
  p.u = u.data();
  p.bias = bias;
  run(p, g.n, x, y);
}

// gx = the conv of gy, padded by 2 - p, with w's channels swapped and its filters turned:
// its output has the input's size, H = OH + 2 (2 - ph) - 2.
void backward_input(const float* gy, const float* w, const ConvGeometry& g, float* gx) {
  const std::vector<float> u = transform_weights(w, g.oc, g.c, true);
  Problem p = problem(g.oc, g.c, g.oh, g.ow, 2 - g.ph, 2 - g.pw);
  p.u = u.data();
  run(p, g.n, gy, gx);
}

bool fits_weight(const ConvGeometry& g) { return fits(g) && g.c % 16 == 0; }

// Sums over images in a fixed number of parts (each in image order, added in part order), so
// the result does not depend on the thread count; then gw[o][c] = G^T S[o][c] G.
void backward_weight(const float* gy, const float* x, const ConvGeometry& g, float* gw) {
  const bool packed = !fills_lanes(g.ow);
  const auto kernel = packed ? best_kernels()->packed_weight : best_kernels()->weight;
  const Problem p = problem(g.c, g.oc, g.h, g.w, g.ph, g.pw);
  const int64_t parts = std::min<int64_t>(g.n, 4), acc_size = 16 * g.c * g.oc;
  const int64_t in_size = p.c * p.h * p.w, out_size = p.k * p.oh * p.ow;
  const Aligned acc(parts * acc_size);
  parallel_for(0, parts, 1, [&](int64_t lo, int64_t hi) {
    const int64_t size = kernel_scratch(p, packed);
    const Aligned scratch(size), image(packed ? 0 : acc_size);
    if (packed) std::fill(scratch.get(), scratch.get() + size, 0.0f);  // its padding
    for (int64_t part = lo; part < hi; ++part) {
      float* a = acc.get() + part * acc_size;
      std::fill(a, a + acc_size, 0.0f);
      // Each image's sums apart, then added: short float32 sums (the transformed values are up
      // to 16 times the inputs, so long running sums would lose more than the GEMM's). The
      // packed kernel keeps its image's sums apart itself.
      for (int64_t i = part * g.n / parts; i < (part + 1) * g.n / parts; ++i) {
        if (packed) {
          kernel(p, x + i * in_size, gy + i * out_size, a, scratch.get());
          continue;
        }
        std::fill(image.get(), image.get() + acc_size, 0.0f);
        kernel(p, x + i * in_size, gy + i * out_size, image.get(), scratch.get());
        for (int64_t k = 0; k < acc_size; ++k) a[k] += image.get()[k];
      }
    }
  });
  float* total = acc.get();
  for (int64_t part = 1; part < parts; ++part)
    for (int64_t i = 0; i < acc_size; ++i) total[i] += total[part * acc_size + i];
  // acc is [q][C / 16][OC][16 channels]; G^T = [[1, 1/2, 1/2, 0], [0, 1/2, -1/2, 0], [0, 1/2, 1/2,
  // 1]].
  for (int64_t o = 0; o < g.oc; ++o)
    for (int64_t c = 0; c < g.c; ++c) {
      float s[4][4];
      for (int q = 0; q < 16; ++q)
        s[q / 4][q % 4] = total[((q * (g.c / 16) + c / 16) * g.oc + o) * 16 + c % 16];
      float t[3][4];  // G^T S
      for (int j = 0; j < 4; ++j) {
        t[0][j] = s[0][j] + 0.5f * (s[1][j] + s[2][j]);
        t[1][j] = 0.5f * (s[1][j] - s[2][j]);
        t[2][j] = 0.5f * (s[1][j] + s[2][j]) + s[3][j];
      }
      float* out = gw + (o * g.c + c) * 9;
      for (int i = 0; i < 3; ++i) {
        out[i * 3 + 0] = t[i][0] + 0.5f * (t[i][1] + t[i][2]);
        out[i * 3 + 1] = 0.5f * (t[i][1] - t[i][2]);
        out[i * 3 + 2] = 0.5f * (t[i][1] + t[i][2]) + t[i][3];
      }
    }
}

}  // namespace tg::cpu::winograd
