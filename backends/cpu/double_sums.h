#pragma once
// Sums of many terms in double for the loss and normalisation kernels (nn_loss.cpp, norm.cpp):
// kLanes independent chains of additions, merged by folding halves. One chain would wait an
// add's latency per term; with 8 the baseline (SSE2) build keeps four vector adds in flight.
#include <cstdint>

#include <tapegrad/core/widest.h>

namespace tg::cpu {

// term(begin) + ... + term(end - 1) in double: term i goes to lane (i - begin) % 8 (the tail to
// lane 0), then lane k += lane k + 4, k + 2, k + 1. Always inlined: a caller built for another
// instruction set (target attribute) gets its own copy.
template <typename Term> __attribute__((always_inline)) inline double sum_terms(const Term& term,
                                                                                int64_t begin,
                                                                                int64_t end) {
  constexpr int kLanes = 8;
  double acc[kLanes] = {};
  int64_t i = begin;
  for (; i + kLanes <= end; i += kLanes)
    for (int k = 0; k < kLanes; ++k) acc[k] += term(i + k);
  for (; i < end; ++i) acc[0] += term(i);
  for (int half = kLanes / 2; half > 0; half /= 2)
    for (int k = 0; k < half; ++k) acc[k] += acc[k + half];
  return acc[0];
}

// sum_terms in run_widest's AVX2 build where the CPU has it (core/widest.h): a term that widens
// float32 to double does four values per instruction there, two in the baseline build. The same
// additions in the same order, so the same bits (no FMA: ISO C++ mode does not contract). term
// must be always inlined (a functor or lambda marked so) for the AVX2 copy to be vector code.
template <typename Term> double sum_terms_widest(const Term& term, int64_t begin, int64_t end) {
  return run_widest([&]() __attribute__((always_inline)) { return sum_terms(term, begin, end); });
}

}  // namespace tg::cpu
