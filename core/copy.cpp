#include <tapegrad/core/copy.h>

#include <algorithm>
#include <cstdint>
#include <cstring>
#include <vector>

#if defined(__x86_64__)
#include <immintrin.h>
#endif

#include <tapegrad/core/checked.h>
#include <tapegrad/core/cpu_features.h>
#include <tapegrad/core/parallel.h>
#include <tapegrad/core/widest.h>

namespace tg {

namespace {

CopyKernel g_copy[2] = {nullptr, nullptr};
FillKernel g_fill[2] = {nullptr, nullptr};

// Visits elements begin..end of `shape` in row-major order as runs along the innermost dim:
// fn(offset_a, offset_b, length), where a run steps by a.back() and b.back(). Kernels then write
// tight inner loops (vectorised when the inner strides are 1 or 0).
template <typename Fn> void for_each_run(const Shape& shape, const Shape& a, const Shape& b,
                                         int64_t begin, int64_t end, Fn&& fn) {
  const size_t nd = shape.size();
  if (nd == 0) {
    if (begin < end) fn(int64_t{0}, int64_t{0}, int64_t{1});
    return;
  }
  const size_t last = nd - 1;
  Shape idx(nd);
  int64_t rem = begin, oa = 0, ob = 0;
  for (size_t i = nd; i-- > 0;) {
    idx[i] = rem % shape[i];
    rem /= shape[i];
    oa += idx[i] * a[i];
    ob += idx[i] * b[i];
  }
  for (int64_t n = begin; n < end;) {
    const int64_t len = std::min(shape[last] - idx[last], end - n);
    fn(oa, ob, len);
    n += len;
    if (n >= end) break;
    // The run ended at the end of the inner dim: back to its start, then carry outwards.
    oa -= idx[last] * a[last];
    ob -= idx[last] * b[last];
    idx[last] = 0;
    for (size_t i = last; i-- > 0;) {
      oa += a[i];
      ob += b[i];
      if (++idx[i] < shape[i]) break;
      oa -= a[i] * shape[i];
      ob -= b[i] * shape[i];
      idx[i] = 0;
    }
  }
}

// NaN, inf, out of range to an integer: To's lowest value, as PyTorch on x86 (core/checked.h).
template <typename To, typename From> __attribute__((always_inline)) inline To convert(From v) {
  return convert_value<To>(v);
}

// out[i] = convert<D>(in[i]) for i < n. Conversions from a floating type run in the widest
// build (core/widest.h): float to int64 is one AVX-512 instruction (vcvttps2qq) and a scalar
// one per value below that, float to int32 and between float32 and float64 take 4, 8 or 16
// values per instruction. Same values on every build (exact or correctly rounded, and
// float_to_int's out-of-range rule is the instructions' own).
template <typename D, typename S>
__attribute__((always_inline)) inline void convert_loop(D* __restrict out, const S* __restrict in,
                                                        int64_t n) {
  for (int64_t i = 0; i < n; ++i) out[i] = convert<D>(in[i]);
}

#if defined(__x86_64__)
// Float to int64 without AVX-512: x86's scalar truncation (cvttss2si / cvttsd2si) gives
// float_to_int's lowest() for NaN, infinities and out-of-range values by itself, so the loop is
// one conversion per value; the portable select-then-convert compiles to two compares and two
// branches per value there (1.2x libtorch's time on AVX2).
template <typename S> void truncate_to_int64(int64_t* out, const S* in, int64_t n) {
  for (int64_t i = 0; i < n; ++i) {
    if constexpr (std::is_same_v<S, float>)
      out[i] = _mm_cvttss_si64(_mm_set_ss(in[i]));
    else
      out[i] = _mm_cvttsd_si64(_mm_set_sd(in[i]));
  }
}
#endif

template <typename D, typename S> void convert_run(D* out, const S* in, int64_t n) {
  if constexpr (std::is_floating_point_v<S> && !std::is_same_v<D, bool>) {
#if defined(__x86_64__)
    if constexpr (std::is_same_v<D, int64_t> &&
                  (std::is_same_v<S, float> || std::is_same_v<S, double>)) {
      if (!cpu_runs_avx512()) return truncate_to_int64(out, in, n);
    }
#endif
    // The loop is a function of its own, its bounds arguments: read through the lambda's
    // captures, the count could alias an int64 result, which kept the loop scalar.
    run_widest_avx512([ out, in, n ]()
                          __attribute__((always_inline)) { convert_loop(out, in, n); });
  } else {
    convert_loop(out, in, n);
  }
}

// dst [rows, cols] contiguous = src read with steps (1, ld) (a transposed matrix), scalar, over
// dst rows [i0, i1) and columns [j0, j1). T is moved as raw bytes of its size.
template <typename T> void transpose_block(T* dst, const T* src, int64_t i0, int64_t i1, int64_t j0,
                                           int64_t j1, int64_t cols, int64_t ld) {
  for (int64_t i = i0; i < i1; ++i)
    for (int64_t j = j0; j < j1; ++j) dst[i * cols + j] = src[i + j * ld];
}

#if defined(__x86_64__) && (defined(__GNUC__) || defined(__clang__))
#define TG_COPY_AVX2 1
// 8x8 block of 4-byte items through eight 256-bit registers: eight full 32-byte loads from eight
// source rows and eight 32-byte stores, instead of 64 single-item accesses that each touch a
// different cache line (and, at a 4096-item stride, the same L1 set). Pure shuffles: the bits
// of every item, NaN payloads included, move unchanged.
__attribute__((target("avx2"))) inline void transpose8x8_regs(__m256 out[8], const uint32_t* s,
                                                              int64_t lds) {
  __m256 r[8];
  for (int k = 0; k < 8; ++k) r[k] = _mm256_loadu_ps(reinterpret_cast<const float*>(s + k * lds));
  const __m256 t0 = _mm256_unpacklo_ps(r[0], r[1]), t1 = _mm256_unpackhi_ps(r[0], r[1]);
  const __m256 t2 = _mm256_unpacklo_ps(r[2], r[3]), t3 = _mm256_unpackhi_ps(r[2], r[3]);
  const __m256 t4 = _mm256_unpacklo_ps(r[4], r[5]), t5 = _mm256_unpackhi_ps(r[4], r[5]);
  const __m256 t6 = _mm256_unpacklo_ps(r[6], r[7]), t7 = _mm256_unpackhi_ps(r[6], r[7]);
  const __m256 u[8] = {_mm256_shuffle_ps(t0, t2, 0x44), _mm256_shuffle_ps(t0, t2, 0xEE),
                       _mm256_shuffle_ps(t1, t3, 0x44), _mm256_shuffle_ps(t1, t3, 0xEE),
                       _mm256_shuffle_ps(t4, t6, 0x44), _mm256_shuffle_ps(t4, t6, 0xEE),
                       _mm256_shuffle_ps(t5, t7, 0x44), _mm256_shuffle_ps(t5, t7, 0xEE)};
  for (int k = 0; k < 4; ++k) {
    out[k] = _mm256_permute2f128_ps(u[k], u[k + 4], 0x20);
    out[k + 4] = _mm256_permute2f128_ps(u[k], u[k + 4], 0x31);
  }
}
__attribute__((target("avx2"))) inline void transpose8x8(uint32_t* d, int64_t ldd,
                                                         const uint32_t* s, int64_t lds) {
  __m256 out[8];
  transpose8x8_regs(out, s, lds);
  for (int k = 0; k < 8; ++k) _mm256_storeu_ps(reinterpret_cast<float*>(d + k * ldd), out[k]);
}

// The same for 8-byte items: a 4x4 block through four 256-bit registers (pure shuffles too).
__attribute__((target("avx2"))) inline void transpose4x4(uint64_t* d, int64_t ldd,
                                                         const uint64_t* s, int64_t lds) {
  __m256d r[4];
  for (int k = 0; k < 4; ++k) r[k] = _mm256_loadu_pd(reinterpret_cast<const double*>(s + k * lds));
  const __m256d t0 = _mm256_unpacklo_pd(r[0], r[1]), t1 = _mm256_unpackhi_pd(r[0], r[1]);
  const __m256d t2 = _mm256_unpacklo_pd(r[2], r[3]), t3 = _mm256_unpackhi_pd(r[2], r[3]);
  const __m256d out[4] = {_mm256_permute2f128_pd(t0, t2, 0x20),
                          _mm256_permute2f128_pd(t1, t3, 0x20),
                          _mm256_permute2f128_pd(t0, t2, 0x31),
                          _mm256_permute2f128_pd(t1, t3, 0x31)};
  for (int k = 0; k < 4; ++k) _mm256_storeu_pd(reinterpret_cast<double*>(d + k * ldd), out[k]);
}

// dst columns [j0, j1) (a multiple of 16 wide, dst rows 64-byte aligned) of a large transpose:
// 16x16 blocks of four 8x8 register transposes, so each of a block's source row pieces and dst
// row pieces is one whole 64-byte line. The dst lines go out with non-temporal stores: the
// result, larger than the caches, then costs no read of each dst line before its write and does
// not evict the source being read. Both halves of a source line are loaded back to back: the
// band's rows, 16 KiB apart in a [4096, 4096] matrix, share one L1 set, so a line read half now
// and half after the other 15 rows was read twice from L2. The last rows % 16 dst rows go item
// by item.
__attribute__((target("avx2"))) void transpose_band_stream(uint32_t* dst, const uint32_t* src,
                                                           int64_t rows, int64_t cols, int64_t ld,
                                                           int64_t j0, int64_t j1) {
  const int64_t rows16 = rows / 16 * 16;
  for (int64_t i = 0; i < rows16; i += 16) {
    // The next line of each source row goes into L2 one block column ahead: the hardware
    // prefetchers do not follow a band's many rows. Into L1 it was slower (the one L1 set).
    const int64_t next = std::min(i + 16, rows16 - 16);
    for (int64_t j = j0; j < j1; j += 16) {
      for (int64_t k = 0; k < 16; ++k)
        _mm_prefetch(reinterpret_cast<const char*>(src + next + (j + k) * ld), _MM_HINT_T1);
      // top_left: dst rows i .. i + 7, columns j .. j + 7 (source rows j .. j + 7); and so on.
      __m256 top_left[8], bottom_left[8], top_right[8], bottom_right[8];
      transpose8x8_regs(top_left, src + i + j * ld, ld);
      transpose8x8_regs(bottom_left, src + i + 8 + j * ld, ld);
      transpose8x8_regs(top_right, src + i + (j + 8) * ld, ld);
      transpose8x8_regs(bottom_right, src + i + 8 + (j + 8) * ld, ld);
      for (int k = 0; k < 8; ++k) {
        float* d = reinterpret_cast<float*>(dst + (i + k) * cols + j);
        _mm256_stream_ps(d, top_left[k]);
        _mm256_stream_ps(d + 8, top_right[k]);
      }
      for (int k = 0; k < 8; ++k) {
        float* d = reinterpret_cast<float*>(dst + (i + 8 + k) * cols + j);
        _mm256_stream_ps(d, bottom_left[k]);
        _mm256_stream_ps(d + 8, bottom_right[k]);
      }
    }
  }
  transpose_block(dst, src, rows16, rows, j0, j1, cols, ld);
  _mm_sfence();  // the streamed lines are visible before another thread reads the result
}

// The same band with AVX-512: one 16x16 register transpose per block.
__attribute__((target("avx512f"))) void transpose_band_stream16(uint32_t* dst, const uint32_t* src,
                                                                int64_t rows, int64_t cols,
                                                                int64_t ld, int64_t j0,
                                                                int64_t j1) {
  // Every lane through the masked forms: GCC 12 flags the plain intrinsics' undefined source
  // operand as maybe-uninitialized.
  constexpr __mmask16 kAll = 0xFFFF;
  const int64_t rows16 = rows / 16 * 16;
  for (int64_t i = 0; i < rows16; i += 16) {
    // The next source line of each row into L2, as in transpose_band_stream.
    const int64_t next = std::min(i + 16, rows16 - 16);
    for (int64_t j = j0; j < j1; j += 16) {
      // In-lane steps as in the 8x8 case: v[4g + c] lane L holds column 4L + c of rows
      // 4g .. 4g + 3. Then a 4x4 transpose of 128-bit lanes: dst row 4L + c is lane L of
      // v[c], v[4 + c], v[8 + c], v[12 + c].
      __m512 r[16], t[16], v[16];
      for (int k = 0; k < 16; ++k) {
        r[k] = _mm512_maskz_loadu_ps(kAll, reinterpret_cast<const float*>(src + i + (j + k) * ld));
        _mm_prefetch(reinterpret_cast<const char*>(src + next + (j + k) * ld), _MM_HINT_T1);
      }
      for (int k = 0; k < 16; k += 2) {
        t[k] = _mm512_maskz_unpacklo_ps(kAll, r[k], r[k + 1]);
        t[k + 1] = _mm512_maskz_unpackhi_ps(kAll, r[k], r[k + 1]);
      }
      for (int g = 0; g < 16; g += 4) {
        v[g] = _mm512_maskz_shuffle_ps(kAll, t[g], t[g + 2], 0x44);
        v[g + 1] = _mm512_maskz_shuffle_ps(kAll, t[g], t[g + 2], 0xEE);
        v[g + 2] = _mm512_maskz_shuffle_ps(kAll, t[g + 1], t[g + 3], 0x44);
        v[g + 3] = _mm512_maskz_shuffle_ps(kAll, t[g + 1], t[g + 3], 0xEE);
      }
      for (int c = 0; c < 4; ++c) {
        const __m512 x0 = _mm512_maskz_shuffle_f32x4(kAll, v[c], v[4 + c], 0x44);
        const __m512 x1 = _mm512_maskz_shuffle_f32x4(kAll, v[c], v[4 + c], 0xEE);
        const __m512 x2 = _mm512_maskz_shuffle_f32x4(kAll, v[8 + c], v[12 + c], 0x44);
        const __m512 x3 = _mm512_maskz_shuffle_f32x4(kAll, v[8 + c], v[12 + c], 0xEE);
        float* d = reinterpret_cast<float*>(dst + (i + c) * cols + j);
        _mm512_stream_ps(d, _mm512_maskz_shuffle_f32x4(kAll, x0, x2, 0x88));
        _mm512_stream_ps(d + 4 * cols, _mm512_maskz_shuffle_f32x4(kAll, x0, x2, 0xDD));
        _mm512_stream_ps(d + 8 * cols, _mm512_maskz_shuffle_f32x4(kAll, x1, x3, 0x88));
        _mm512_stream_ps(d + 12 * cols, _mm512_maskz_shuffle_f32x4(kAll, x1, x3, 0xDD));
      }
    }
  }
  transpose_block(dst, src, rows16, rows, j0, j1, cols, ld);
  _mm_sfence();
}

// One tile: whole 8x8 blocks walking eight source rows at a time (sequential reads), then the
// ragged right and bottom edges item by item.
__attribute__((target("avx2"))) void transpose_tile_avx2(uint32_t* dst, const uint32_t* src,
                                                         int64_t i0, int64_t i1, int64_t j0,
                                                         int64_t j1, int64_t cols, int64_t ld) {
  const int64_t i8 = i0 + (i1 - i0) / 8 * 8, j8 = j0 + (j1 - j0) / 8 * 8;
  for (int64_t j = j0; j < j8; j += 8)
    for (int64_t i = i0; i < i8; i += 8)
      transpose8x8(dst + i * cols + j, cols, src + i + j * ld, ld);
  transpose_block(dst, src, i0, i8, j8, j1, cols, ld);
  transpose_block(dst, src, i8, i1, j0, j1, cols, ld);
}
// 8-byte items: 4 dst rows x 8 columns per step (two 4x4 blocks), so that each dst row gets a
// whole 64-byte line while eight source rows are walked in order.
__attribute__((target("avx2"))) void transpose_tile_avx2(uint64_t* dst, const uint64_t* src,
                                                         int64_t i0, int64_t i1, int64_t j0,
                                                         int64_t j1, int64_t cols, int64_t ld) {
  const int64_t i4 = i0 + (i1 - i0) / 4 * 4, j8 = j0 + (j1 - j0) / 8 * 8;
  for (int64_t j = j0; j < j8; j += 8)
    for (int64_t i = i0; i < i4; i += 4) {
      transpose4x4(dst + i * cols + j, cols, src + i + j * ld, ld);
      transpose4x4(dst + i * cols + j + 4, cols, src + i + (j + 4) * ld, ld);
    }
  transpose_block(dst, src, i0, i4, j8, j1, cols, ld);
  transpose_block(dst, src, i4, i1, j0, j1, cols, ld);
}
#endif

// dst [rows, cols] contiguous = src read with steps (1, ld), in square tiles of kTile items. The
// threads split the tiles' columns: each writes its own 1 KiB-aligned part of every dst row.
// On an AVX2 CPU 4-byte items go through 8x8 register transposes and 8-byte ones through 4x4;
// large tiles keep the source's rows streaming sequentially while a tile's rows of dst stay in L2.
template <typename T>
void transpose_copy(T* dst, const T* src, int64_t rows, int64_t cols, int64_t ld) {
#ifdef TG_COPY_AVX2
  if constexpr (sizeof(T) == 4) {
    // Results of 16 MiB and more (a good part of a last-level cache) stream out
    // (transpose_band_stream, or ..16 with AVX-512) when every dst row starts on a 64-byte line;
    // the threads split the dst columns into bands. AVX-512's are 256 wide (measured best of
    // 16 .. 4096 for a [4096, 4096] float32 matrix on Zen 4, with the prefetch 128 .. 512 within
    // 4 %). AVX2's are 16 wide, measured on Zen 3 (AVX2 only, 512 KiB L2): each 16 KiB-strided
    // source row of a band is a read stream, and a band's 256 rows fall into four L2 sets (32
    // lines), so the prefetched lines evicted each other; 16 rows took 0.65-0.7x the time of
    // 256, although each dst row then gets 64-byte pieces (scattered non-temporal 64-byte writes
    // alone ran at half the speed of 256-byte ones).
    constexpr int64_t kStreamBytes = int64_t{16} << 20;
    if (cpu_has_avx2() && rows * cols * 4 >= kStreamBytes && cols % 16 == 0 &&
        reinterpret_cast<uintptr_t>(dst) % 64 == 0) {
      // TG_SIMD=avx2 (or weaker) keeps the AVX2 band, so that the tests reach it here too.
      const bool wide = cpu_runs_avx512();
      const int64_t band = wide ? 256 : 16;
      const int64_t bands = (cols + band - 1) / band;
      parallel_for(0, bands, 1, [&](int64_t b, int64_t e) {
        for (int64_t k = b; k < e; ++k) {
          const int64_t j0 = k * band, j1 = std::min(cols, j0 + band);
          if (wide)
            transpose_band_stream16(dst, src, rows, cols, ld, j0, j1);
          else
            transpose_band_stream(dst, src, rows, cols, ld, j0, j1);
        }
      });
      return;
    }
  }
  if constexpr (sizeof(T) == 4 || sizeof(T) == 8) {
    if (cpu_has_avx2()) {
      // A tile's dst rows: 256 KiB of 4-byte items, 128 KiB of 8-byte ones.
      constexpr int64_t kTile = sizeof(T) == 4 ? 256 : 128;
      const int64_t col_tiles = (cols + kTile - 1) / kTile;
      parallel_for(0, col_tiles, std::max<int64_t>(1, kElementwiseGrain / (kTile * rows)),
                   [&](int64_t tb, int64_t te) {
                     for (int64_t j0 = tb * kTile; j0 < std::min(cols, te * kTile); j0 += kTile)
                       for (int64_t i0 = 0; i0 < rows; i0 += kTile)
                         transpose_tile_avx2(dst, src, i0, std::min(rows, i0 + kTile), j0,
                                             std::min(cols, j0 + kTile), cols, ld);
                   });
      return;
    }
  }
#endif
  constexpr int64_t kTile = 32;
  const int64_t tile_rows = (rows + kTile - 1) / kTile;
  parallel_for(0, tile_rows, std::max<int64_t>(1, kElementwiseGrain / (kTile * cols)),
               [&](int64_t tb, int64_t te) {
                 for (int64_t i0 = tb * kTile; i0 < std::min(rows, te * kTile); i0 += kTile) {
                   const int64_t i1 = std::min(rows, i0 + kTile);
                   for (int64_t j0 = 0; j0 < cols; j0 += kTile)
                     transpose_block(dst, src, i0, i1, j0, std::min(cols, j0 + kTile), cols, ld);
                 }
               });
}

// copy_bytes with AVX2: a plain loop of 32-byte loads and stores. For long runs glibc's memcpy
// takes `rep movsb`, which measured about 6 % slower on 2 MB runs here (the copy loop libtorch's
// cat runs is the same one); short runs (a permuted copy's rows) stream only through this loop.
#if defined(__x86_64__) && defined(__GNUC__)
template <bool kStream> __attribute__((target("avx2"))) inline void put(char* at, __m256i v) {
  if constexpr (kStream)
    _mm256_stream_si256(reinterpret_cast<__m256i*>(at), v);
  else
    _mm256_storeu_si256(reinterpret_cast<__m256i*>(at), v);
}
template <bool kStream>
__attribute__((target("avx2"))) void copy_bytes_avx2(char* dst, const char* src, size_t n) {
  size_t i = 0;
  if constexpr (kStream) {  // non-temporal stores need 32-byte aligned addresses
    i = std::min(n, (32 - reinterpret_cast<uintptr_t>(dst) % 32) % 32);
    std::memcpy(dst, src, i);
  }
  for (; i + 128 <= n; i += 128) {
    const __m256i a = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(src + i));
    const __m256i b = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(src + i + 32));
    const __m256i c = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(src + i + 64));
    const __m256i d = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(src + i + 96));
    put<kStream>(dst + i, a);
    put<kStream>(dst + i + 32, b);
    put<kStream>(dst + i + 64, c);
    put<kStream>(dst + i + 96, d);
  }
  std::memcpy(dst + i, src + i, n - i);
}
#endif

}  // namespace

void copy_bytes(char* dst, const char* src, size_t n, bool stream) {
  // Short cached copies straight to memcpy, before the CPU check: a permuted tensor's
  // contiguous() calls this once per row of 256 bytes.
  if (!stream && n < 4096) {
    std::memcpy(dst, src, n);
    return;
  }
#if defined(__x86_64__) && defined(__GNUC__)
  if (cpu_has_avx2() && n >= (stream ? 128 : 4096))
    return stream ? copy_bytes_avx2<true>(dst, src, n) : copy_bytes_avx2<false>(dst, src, n);
#else
  (void)stream;
#endif
  std::memcpy(dst, src, n);
}

namespace {

// A copy between two tensors of one dtype whose rows (innermost dim) are contiguous on both
// sides, dst contiguous: a permuted tensor's contiguous(), e.g. attention's head split. Each row
// is one memcpy (glibc's, whose widest stores keep more of a row in flight than the compiler's
// 16-byte moves), the rows of the next-to-last dim in a loop of their own (for_each_run over the
// outer dims): the walk's carry per row took 0.25 ms of a 16-byte-row head split's 0.5. A result
// that streams (streaming_stores_for) is written in its own order, so its lines fill whole.
// Otherwise the rows go in the source's order where the source is a permutation (no broadcast dim),
// reads in sequence and writes scattered: the 256-byte rows of [32, 128, 12, 64].permute(0, 2, 1,
// 3) took 0.75 of the time in dst's order, from memory, and the same in cache.
void copy_contiguous_rows(const TensorBase& dst, const TensorBase& src, const Shape& src_strides) {
  const int64_t n = dst.numel();
  if (n == 0) return;
  const auto item = static_cast<int64_t>(itemsize(dst.dtype()));
  char* d = static_cast<char*>(dst.data_ptr());
  const char* s = static_cast<const char*>(src.data_ptr());
  int64_t distinct = 1;  // the source's own values: fewer than n along broadcast (stride-0) dims
  for (size_t k = 0; k < src_strides.size(); ++k)
    if (src_strides[k] != 0) distinct *= dst.shape()[k];
  const bool stream = streaming_stores_for(n * item, distinct * item);
  // The outer dims (all but the row) in walk order, with both tensors' strides in bytes.
  const size_t outer = dst.dim() - 1;
  std::vector<size_t> order(outer);
  for (size_t k = 0; k < outer; ++k) order[k] = k;
  if (!stream && distinct == n)
    std::stable_sort(order.begin(), order.end(),
                     [&](size_t x, size_t y) { return src_strides[x] > src_strides[y]; });
  Shape shape(outer), dst_step(outer), src_step(outer);
  for (size_t k = 0; k < outer; ++k) {
    shape[k] = dst.shape()[order[k]];
    dst_step[k] = dst.strides()[order[k]] * item;
    src_step[k] = src_strides[order[k]] * item;
  }
  const auto row_bytes = static_cast<size_t>(dst.shape().back() * item);
  const int64_t rows = n / dst.shape().back();
  const int64_t grain = std::max<int64_t>(1, kElementwiseGrain / dst.shape().back());
  // The walk over the outer dims gives runs of rows along the next-to-last one (a single row
  // when there is none).
  const int64_t dstep = outer ? dst_step.back() : 0, sstep = outer ? src_step.back() : 0;
  parallel_for(0, rows, grain, [&](int64_t b, int64_t e) {
    for_each_run(shape, dst_step, src_step, b, e, [&](int64_t od, int64_t os, int64_t count) {
      if (stream) {
        for (int64_t j = 0; j < count; ++j)
          copy_bytes(d + od + j * dstep, s + os + j * sstep, row_bytes, true);
      } else {
        for (int64_t j = 0; j < count; ++j)
          std::memcpy(d + od + j * dstep, s + os + j * sstep, row_bytes);
      }
    });
    if (stream) stream_fence();
  });
}

void cpu_copy(const TensorBase& dst, const TensorBase& src) {
  Shape src_strides = broadcast_strides("copy", src, dst.shape());
  const int64_t n = dst.numel();
  if (dst.dtype() == src.dtype() && dst.is_contiguous() && src.is_contiguous() &&
      src.shape() == dst.shape()) {
    // In chunks across the threads: one core does not saturate memory bandwidth here.
    const auto item = static_cast<int64_t>(itemsize(dst.dtype()));
    char* d = static_cast<char*>(dst.data_ptr());
    const char* s = static_cast<const char*>(src.data_ptr());
    parallel_for(0, n * item, kCopyGrainBytes, [&](int64_t b, int64_t e) {
      std::memcpy(d + b, s + b, static_cast<size_t>(e - b));
    });
    return;
  }
  // A transposed matrix, or a batch of them ([B, R, C] from strides (sb, 1, ld): a 3-d tensor's
  // transpose(1, 2)): the tiled transpose per matrix, the threads splitting the batch. Matrices
  // under 1024 items take the general walk below (a call per tiny matrix would cost more).
  const int64_t nd = dst.dim();
  if (dst.dtype() == src.dtype() && (nd == 2 || nd == 3) && dst.is_contiguous() &&
      src_strides[nd - 2] == 1 && src_strides[nd - 1] >= dst.size(nd - 2) && dst.size(nd - 1) > 1 &&
      n >= 4096 && dst.size(nd - 2) * dst.size(nd - 1) >= 1024) {
    const int64_t rows = dst.size(nd - 2), cols = dst.size(nd - 1), ld = src_strides[nd - 1];
    const int64_t batches = nd == 3 ? dst.size(0) : 1, batch_step = nd == 3 ? src_strides[0] : 0;
    auto each_matrix = [&](auto* d, const auto* s) {
      parallel_for(0, batches, std::max<int64_t>(1, kElementwiseGrain / (rows * cols)),
                   [&](int64_t b, int64_t e) {
                     for (int64_t k = b; k < e; ++k)
                       transpose_copy(d + k * rows * cols, s + k * batch_step, rows, cols, ld);
                   });
    };
    switch (itemsize(dst.dtype())) {
      case 4:
        return each_matrix(static_cast<uint32_t*>(dst.data_ptr()),
                           static_cast<const uint32_t*>(src.data_ptr()));
      case 8:
        return each_matrix(static_cast<uint64_t*>(dst.data_ptr()),
                           static_cast<const uint64_t*>(src.data_ptr()));
      default: break;
    }
  }
  if (dst.dtype() == src.dtype() && dst.dim() > 0 && dst.is_contiguous() &&
      src_strides.back() == 1) {
    copy_contiguous_rows(dst, src, src_strides);
    return;
  }
  visit_dtype("copy", dst.dtype(), [&](auto dtag) {
    using D = typename decltype(dtag)::type;
    visit_dtype("copy", src.dtype(), [&](auto stag) {
      using S = typename decltype(stag)::type;
      D* d = dst.data<D>();
      const S* s = src.data<S>();
      const int64_t ds = dst.dim() ? dst.strides().back() : 0;
      const int64_t ss = dst.dim() ? src_strides.back() : 0;
      parallel_for(0, n, kElementwiseGrain, [&](int64_t b, int64_t e) {
        for_each_run(dst.shape(), dst.strides(), src_strides, b, e,
                     [&](int64_t od, int64_t os, int64_t len) {
                       D* out = d + od;
                       const S* in = s + os;
                       if (ds == 1 && ss == 1) {
                         convert_run(out, in, len);
                       } else if (ds == 1 && ss == 0) {  // a broadcast value along the row
                         std::fill(out, out + len, convert<D>(*in));
                       } else {
                         for (int64_t i = 0; i < len; ++i) out[i * ds] = convert<D>(in[i * ss]);
                       }
                     });
      });
    });
  });
}

void cpu_fill(const TensorBase& dst, const Scalar& value) {
  visit_dtype("fill", dst.dtype(), [&](auto tag) {
    using T = typename decltype(tag)::type;
    T v = value.is_floating() ? convert<T>(value.to_double()) : convert<T>(value.to_int());
    T* d = dst.data<T>();
    const int64_t n = dst.numel();
    if (dst.is_contiguous()) {
      // A value of all zero bits (zeros, fresh gradients; not -0.0) is a memset: libc's runs on
      // the CPU's widest stores, std::fill in the library's baseline build on 16-byte ones.
      const T zero{};
      const bool zero_bits = std::memcmp(&v, &zero, sizeof(T)) == 0;
      auto fill = [&](int64_t b, int64_t e) {
        if (zero_bits)
          std::memset(static_cast<void*>(d + b), 0, static_cast<size_t>(e - b) * sizeof(T));
        else
          std::fill(d + b, d + e, v);
      };
      const int64_t grain = kCopyGrainBytes / static_cast<int64_t>(sizeof(T));
      if (n <= grain)  // one chunk (scalars, small tensors): no std::function, no pool
        fill(0, n);
      else  // split as a copy is: one core does not saturate the bandwidth
        parallel_for(0, n, grain, fill);
      return;
    }
    const int64_t ds = dst.strides().back();
    for_each_run(dst.shape(), dst.strides(), dst.strides(), 0, dst.numel(),
                 [&](int64_t o, int64_t, int64_t len) {
                   for (int64_t i = 0; i < len; ++i) d[o + i * ds] = v;
                 });
  });
}

}  // namespace

Shape broadcast_strides(const char* op, const TensorBase& src, const Shape& shape) {
  const Shape& s = src.shape();
  TG_CHECK(s.size() <= shape.size(), ValueError, op, "source of shape ", s, " cannot broadcast to ",
           shape);
  Shape strides(shape.size(), 0);
  size_t lead = shape.size() - s.size();
  for (size_t i = 0; i < s.size(); ++i) {
    TG_CHECK(s[i] == shape[lead + i] || s[i] == 1, ValueError, op, "source of shape ", s,
             " cannot broadcast to ", shape);
    strides[lead + i] = s[i] == 1 ? 0 : src.strides()[i];
  }
  return strides;
}

void set_copy_kernel(DeviceType type, CopyKernel fn) { g_copy[static_cast<int>(type)] = fn; }
void set_fill_kernel(DeviceType type, FillKernel fn) { g_fill[static_cast<int>(type)] = fn; }

void copy_data(const TensorBase& dst, const TensorBase& src) {
  if (dst.numel() == 0) return;
  Device dd = dst.device(), sd = src.device();
  if (dd == sd) {
    CopyKernel k = dd.is_cpu() ? &cpu_copy : g_copy[static_cast<int>(dd.type)];
    TG_CHECK(k != nullptr, Error, "copy", "no copy kernel for ", dd);
    return k(dst, src);
  }
  // Across devices: move bytes of a contiguous, same-dtype, same-shape source. A host source is
  // first converted and broadcast to that on the host.
  TensorBase s = src;
  const bool ready =
      src.dtype() == dst.dtype() && src.shape() == dst.shape() && src.is_contiguous();
  if (sd.is_cpu() && !ready) {
    s = empty_strided(dst.shape(), contiguous_strides(dst.shape()), dst.dtype(), sd);
    cpu_copy(s, src);
  }
  if (dst.is_contiguous() && s.is_contiguous() && s.dtype() == dst.dtype() &&
      s.shape() == dst.shape()) {
    memcpy_between(dst.data_ptr(), dd, s.data_ptr(), s.device(),
                   static_cast<size_t>(dst.numel()) * itemsize(dst.dtype()));
    return;
  }
  // General case: stage through a contiguous tensor on dst's device.
  TensorBase staged = empty_strided(s.shape(), contiguous_strides(s.shape()), s.dtype(), dd);
  TensorBase sc = s;
  if (!s.is_contiguous()) {  // made contiguous on its own device first
    sc = empty_strided(s.shape(), contiguous_strides(s.shape()), s.dtype(), s.device());
    copy_data(sc, s);
  }
  memcpy_between(staged.data_ptr(), dd, sc.data_ptr(), sc.device(),
                 static_cast<size_t>(sc.numel()) * itemsize(sc.dtype()));
  copy_data(dst, staged);
}

void fill_data(const TensorBase& dst, const Scalar& value) {
  if (dst.numel() == 0) return;
  Device d = dst.device();
  FillKernel k = d.is_cpu() ? &cpu_fill : g_fill[static_cast<int>(d.type)];
  TG_CHECK(k != nullptr, Error, "fill", "no fill kernel for ", d);
  k(dst, value);
}

}  // namespace tg
