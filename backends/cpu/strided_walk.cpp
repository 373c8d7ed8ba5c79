#include <tapegrad/backends/cpu/strided_walk.h>
#include <tapegrad/core/cpu_features.h>
#include <tapegrad/core/parallel.h>

#include <algorithm>
#include <array>

namespace tg::cpu {
namespace {

// Merges neighbouring dims that every operand walks as one (stride[d] == stride[d+1] * size[d+1])
// and drops size-1 dims, so that e.g. [2, 3, 4] + [4] runs as [6, 4].
void coalesce_dims(Shape& shape, Shape* strides, int operands) {
  size_t kept = 0;  // dims [0, kept) hold the result
  for (size_t d = 0; d < shape.size(); ++d) {
    if (shape[d] == 1) continue;
    bool merge = kept > 0;
    for (int k = 0; k < operands && merge; ++k)
      merge = strides[k][kept - 1] == strides[k][d] * shape[d];
    if (merge) {
      shape[kept - 1] *= shape[d];
      for (int k = 0; k < operands; ++k) strides[k][kept - 1] = strides[k][d];
    } else {
      shape[kept] = shape[d];
      for (int k = 0; k < operands; ++k) strides[k][kept] = strides[k][d];
      ++kept;
    }
  }
  if (kept == 0) {  // every dim had size 1
    shape[0] = 1;
    for (int k = 0; k < operands; ++k) strides[k][0] = 0;
    kept = 1;
  }
  shape.resize(kept);
  for (int k = 0; k < operands; ++k) strides[k].resize(kept);
}

using Offsets = std::array<int64_t, kMaxWalkOperands>;

}  // namespace

void run_strided_walk(StridedWalk walk) {
  const int n = walk.operands;
  Shape& shape = walk.shape;
  int64_t numel = 1;
  for (int64_t s : shape) numel *= s;
  if (numel == 0) return;
  coalesce_dims(shape, walk.strides, n);
  const size_t outer_dims = shape.size() - 1;
  const int64_t inner = shape.back();
  const int64_t rows = numel / inner;
  Offsets step{};  // each operand's innermost stride
  for (int k = 0; k < n; ++k) step[k] = walk.strides[k][outer_dims];
  // Raw pointers: Shape's operator[] tests inline-or-heap storage on every access.
  const int64_t* sizes = shape.data();
  std::array<const int64_t*, kMaxWalkOperands> stride_of{};
  for (int k = 0; k < n; ++k) stride_of[k] = walk.strides[k].data();
  // Each operand's offset of row r (a multi-index over the outer dims), into `index`/`offset`.
  auto start_row = [&](int64_t r, int64_t* index, Offsets& offset) {
    offset.fill(0);
    for (int64_t d = static_cast<int64_t>(outer_dims) - 1; d >= 0; --d) {
      index[d] = r % sizes[d];
      r /= sizes[d];
      for (int k = 0; k < n; ++k) offset[k] += index[d] * stride_of[k][d];
    }
  };
  // The next row: the multi-index and the offsets advance like an odometer, a few additions
  // per row instead of a recomputation over every dim and operand.
  auto next_row = [&](int64_t* index, Offsets& offset) {
    for (int64_t d = static_cast<int64_t>(outer_dims) - 1; d >= 0; --d) {
      for (int k = 0; k < n; ++k) offset[k] += stride_of[k][d];
      if (++index[d] < sizes[d]) return;
      for (int k = 0; k < n; ++k) offset[k] -= sizes[d] * stride_of[k][d];
      index[d] = 0;
    }
  };
  const int64_t row_grain = std::max<int64_t>(1, kElementwiseGrain / inner);
  // Streaming stores are fenced at the end of each chunk, before the pool hands it back.
  auto run = [&](auto&& rows_fn) {
    auto chunk = [&](int64_t begin, int64_t end) {
      rows_fn(begin, end);
      if (walk.streaming) stream_fence();
    };
    if (numel <= kElementwiseGrain) {
      chunk(0, rows);
    } else {
      parallel_for(0, rows, row_grain, chunk);
    }
  };

  // Every operand walks the innermost dim with step 1 (the usual broadcast, [m, n] + [n]): each
  // row is one flat run, which the row function vectorises. Rows go out in runs along the
  // innermost outer dim, where each operand's offset grows by one stride per row.
  if (std::all_of(step.begin(), step.begin() + n, [](int64_t s) { return s == 1; })) {
    Offsets row_step{};
    if (outer_dims > 0)
      for (int k = 0; k < n; ++k) row_step[k] = stride_of[k][outer_dims - 1];
    run([&](int64_t row_begin, int64_t row_end) {
      Shape index(outer_dims, 0);
      Offsets offset;
      start_row(row_begin, index.data(), offset);
      for (int64_t row = row_begin; row < row_end;) {
        // The rows left in this run of the innermost outer dim (a 1-d walk has one row).
        const int64_t run_rows =
            outer_dims == 0
                ? 1
                : std::min(row_end - row, sizes[outer_dims - 1] - index[outer_dims - 1]);
        walk.unit_rows(walk.ctx, row * inner, offset.data(), row_step.data(), run_rows, inner);
        row += run_rows;
        if (row == row_end) break;
        // To the run's last row, then one odometer step: as run_rows calls of next_row.
        index[outer_dims - 1] += run_rows - 1;
        for (int k = 0; k < n; ++k) offset[k] += (run_rows - 1) * row_step[k];
        next_row(index.data(), offset);
      }
    });
    return;
  }

  // Steps of 0 and 1 only ([m, n] - [m, 1], a column broadcast): each whole row in order to
  // any_row (a row kernel's scalar form, or the step-0 values spread over blocks and the vector
  // loop), so the result is written front to back; the bands below, made for reads across
  // lines, wrote 16 rows in turn, which with streaming stores took 1.7x the time.
  if (std::all_of(step.begin(), step.begin() + n, [](int64_t s) { return s <= 1; })) {
    run([&](int64_t row_begin, int64_t row_end) {
      Shape index(outer_dims, 0);
      Offsets offset;
      start_row(row_begin, index.data(), offset);
      for (int64_t row = row_begin; row < row_end; ++row) {
        walk.any_row(walk.ctx, row * inner, offset.data(), step.data(), inner);
        next_row(index.data(), offset);
      }
    });
    return;
  }

  // Rows go in bands of kBand, each band walked in column blocks of kBlock: an operand read with
  // a large inner stride (a transposed input) then uses whole cache lines across the band
  // instead of one element per line.
  constexpr int64_t kBand = 16, kBlock = kWalkBlock;
  run([&](int64_t row_begin, int64_t row_end) {
    Shape index(outer_dims, 0);
    std::array<Offsets, kBand> offset;  // each band row's start, per operand
    Offsets next;
    start_row(row_begin, index.data(), next);
    for (int64_t band = row_begin; band < row_end; band += kBand) {
      const int64_t band_rows = std::min(kBand, row_end - band);
      for (int64_t r = 0; r < band_rows; ++r) {
        offset[r] = next;
        next_row(index.data(), next);
      }
      for (int64_t j0 = 0; j0 < inner; j0 += kBlock) {
        const int64_t count = std::min(inner, j0 + kBlock) - j0;
        for (int64_t r = 0; r < band_rows; ++r) {
          Offsets at;
          for (int k = 0; k < n; ++k) at[k] = offset[r][k] + j0 * step[k];
          walk.any_row(walk.ctx, (band + r) * inner + j0, at.data(), step.data(), count);
        }
      }
    }
  });
}

}  // namespace tg::cpu
