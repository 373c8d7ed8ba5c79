#pragma once
// float32 add, sub, mul and div over a row, as explicit vector loops compiled once per x86
// instruction set (vec_binary_sse2.cpp at the baseline, vec_binary_avx2.cpp with -mavx2) and
// picked at run time, as vec_math.h does for SLEEF. The elementwise engine (loops.h) runs its
// float32 add/sub/mul/div rows through them: the compiler's own loop for these is one vector
// per iteration, and an unrolled loop streams measurably faster on the same data. Each element
// is the one IEEE operation the scalar code does, so results are bit for bit the same.
// No AVX-512 set: these rows are memory bound, and 512-bit vectors measured no faster than
// AVX2 on this project's AVX-512 machine (AMD Zen 4), in place or not.
#include <cstdint>
#include <vector>

namespace tg::cpu::vec {

enum class Binary : int { add, sub, mul, div, count };

// Which operands are arrays of n elements; the other one is a single value read through its
// pointer and used for every element (a broadcast scalar).
enum class Operands : int { arrays, scalar_b, scalar_a, count };

// How a row's results are written. streaming: with non-temporal stores, which go to memory
// without first reading each destination line into the cache and without evicting what the
// cache holds; meant for a result too large to stay cached for its reader (loops.h decides).
// Same values either way. Streaming stores are weakly ordered: a caller calls
// tg::stream_fence() (core/cpu_features.h) after its last streaming row, before another thread
// may read the results.
enum class Stores : int { cached, streaming, count };

// out[i] = a[i] (op) b[i] for i < n. out may be a or b itself (every element is read before it
// is written), not a partial overlap.
using BinaryRow = void (*)(float* out, const float* a, const float* b, int64_t n);

struct BinaryIsa {
  const char* name;  // "avx2", "sse2"
  BinaryRow f32[static_cast<int>(Binary::count)][static_cast<int>(Operands::count)]
               [static_cast<int>(Stores::count)];
  BinaryRow row(Binary op, Operands form, Stores stores = Stores::cached) const {
    return f32[static_cast<int>(op)][static_cast<int>(form)][static_cast<int>(stores)];
  }
};

// The kernels of the widest set this CPU runs, chosen on first use; nullptr off x86-64 or when
// TG_SIMD=scalar (the engine then runs its generic loops: the A/B switch). TG_SIMD=sse2 caps it.
const BinaryIsa* binary_best();

// Every set compiled in that this CPU runs (the tests check each).
std::vector<const BinaryIsa*> binary_available();

// Per-set tables (vec_binary_<isa>.cpp, compiled on x86-64 only).
const BinaryIsa& binary_sse2();
const BinaryIsa& binary_avx2();

}  // namespace tg::cpu::vec
