#pragma once
// The op check: runs every sample of a registered op's spec in every dtype it supports and checks
// the forward (function vs method), gradcheck and gradgradcheck in float64, the in-place variant
// against the out-of-place one (values and gradients), that reject samples throw the right
// tg::Error and leave every input unchanged, and, for an op whose backward has a fused kernel,
// that the fused gradients equal the composed formula's bit for bit. tools/opcheck/main.cpp runs it over all ops; the
// generated doctest suite runs it op by op.
#include <string>
#include <vector>

#include <tapegrad/ops/registry.h>

namespace tg::opcheck {

struct Options {
  bool gradcheck = true;
  bool gradgradcheck = true;
  // Where a plain backward runs a fused kernel (autograd/formulas/fused.h), compare its gradients
  // with the composed formula's, bit for bit, in every floating dtype.
  bool fused_vs_composed = true;
  // Run only that comparison (forward, then backward both ways), for every sample.
  bool only_fused_vs_composed = false;
  bool verbose = false;  // also list the checks that passed in the report
  std::string only_op;   // check_ops: run this op only
};

struct OpReport {
  std::string op;
  bool ok = true;
  // Counts of checks run (a sample in two dtypes counts twice, except in `samples`).
  // fused: backward passes (sample, dtype, inputs asked for) that ran a fused kernel and were
  // compared with the composed formula.
  int samples = 0, forward = 0, gradchecks = 0, gradgradchecks = 0, inplace = 0, rejects = 0,
      fused = 0, failures = 0;
  std::string report;  // one line per failure (and per passed check when verbose)
};

/// Runs every check on one op.
OpReport check_op(const registry::OpInfo& op, const Options& options = {});
/// check_op over every registered op (or options.only_op; an unknown name is a failed report).
std::vector<OpReport> check_ops(const Options& options = {});

}  // namespace tg::opcheck
