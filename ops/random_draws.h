#pragma once
// The draws behind rand, randn and randint: declared here for ops/factories.cpp, defined by the CPU
// backend (backends/cpu/random_draws.cpp), whose vectorised math (SLEEF) the ops layer cannot
// reach. Draw k of a call is uniform_at(state, k) (backends/cpu/counter_random.h): the global
// generator's output k + 1 after `state`, so the values do not depend on how threads split them.
#include <cstdint>

namespace tg::cpu {

// out[i] = uniform_at(state, i): U[0, 1) in steps of 2^-53 (n draws).
void uniform_draws(uint64_t state, double* out, int64_t n);
void uniform_draws(uint64_t state, float* out, int64_t n);

// out[i] = sqrt(-2 log(1 - u(2i))) cos(2 pi u(2i + 1)) with u(k) = uniform_at(state, k), in
// double and rounded once to out's type (2n draws): Box-Muller's cosine half.
void normal_draws(uint64_t state, double* out, int64_t n);
void normal_draws(uint64_t state, float* out, int64_t n);

// out[i] = low + bits_at(state, i) % span (n draws, span > 0): randint's values.
void integer_draws(uint64_t state, int64_t low, uint64_t span, int64_t* out, int64_t n);

}  // namespace tg::cpu
