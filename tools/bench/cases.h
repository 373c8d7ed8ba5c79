#pragma once
// The one list of benchmark cases, written once and instantiated for each library with its
// adapter (bench_tapegrad.cpp, bench_libtorch.cpp; the adapter's interface is described in
// cases_common.h). Adding a case: write its template in the family header it belongs to and add
// one line to that header's cases(); both libraries then run it under the same name.
#include <vector>

#include "cases_cnn.h"
#include "cases_elementwise.h"
#include "cases_everyday.h"
#include "cases_float64.h"
#include "cases_indexing.h"
#include "cases_layers.h"
#include "cases_nn.h"
#include "cases_overhead.h"
#include "cases_parallel.h"
#include "cases_reduce.h"
#include "cases_sequence.h"

namespace tg_bench {

template <class L> std::vector<Case> all_cases() {
  std::vector<Case> all;
  for (const auto& family :
       {overhead::cases<L>, parallel::cases<L>, elementwise::cases<L>, reduce::cases<L>,
        nn::cases<L>, cnn::cases<L>, indexing::cases<L>, sequence::cases<L>, everyday::cases<L>,
        layers::cases<L>, float64::cases<L>}) {
    const std::vector<Case> cases = family();
    all.insert(all.end(), cases.begin(), cases.end());
  }
  return all;
}

}  // namespace tg_bench
