#pragma once
// The N-d walk of the elementwise engine's strided loop (loops.h), compiled once for every op
// and dtype. The walk splits a contiguous output into rows along its innermost dim and hands them
// to the op's row functions (unit-step rows in runs, others one block at a time); only those
// small functions are templates per op and dtype, so the walk is not compiled again for every op
// and dtype (docs/CI.md).
#include <tapegrad/core/shape.h>

#include <cstdint>

namespace tg::cpu {

// The most inputs an elementwise lambda takes (map_into of nn_loss: four).
inline constexpr int kMaxWalkOperands = 4;

// The longest row the walk hands to WalkRow when some step is above 1 (such rows go in blocks);
// rows with steps of 0 and 1 only go whole, and WalkRow works through them in blocks of this
// size where it needs stack space per element.
inline constexpr int64_t kWalkBlock = 128;

// One row of the walk: `count` outputs starting at output element `out_index` (the output is
// contiguous), input k starting at element `offset[k]` of its data and advancing `step[k]`
// elements per output. `ctx` is the op's own state (pointers, the lambda).
using WalkRow = void (*)(const void* ctx, int64_t out_index, const int64_t* offset,
                         const int64_t* step, int64_t count);

// `rows` consecutive rows where every input has step 1: row r has `count` outputs from output
// element out_index + r * count, and input k starts at element offset[k] + r * row_step[k].
// One call per run of rows ([4096, 1024] + [1024]: one per chunk), not one per row: with
// 1024-element rows the per-row calls and odometer steps were a measurable part of the op.
using WalkUnitRows = void (*)(const void* ctx, int64_t out_index, const int64_t* offset,
                              const int64_t* row_step, int64_t rows, int64_t count);

struct StridedWalk {
  Shape shape;                       // the output's shape
  Shape strides[kMaxWalkOperands];   // each input's element strides over `shape`
  int operands = 0;                  // how many entries of `strides` are used
  WalkUnitRows unit_rows = nullptr;  // rows where every input has step 1
  WalkRow any_row = nullptr;         // any other rows (see kWalkBlock)
  const void* ctx = nullptr;         // passed to both
  bool streaming = false;            // rows write with streaming stores (fence per chunk)
};

// Runs every row of the output once, split across the pool when the output is large.
void run_strided_walk(StridedWalk walk);

}  // namespace tg::cpu
