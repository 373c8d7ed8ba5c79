// CPU matmul with PyTorch's rules: 1-D operands become a row (self) or a column (other), batch
// dims broadcast, and the result drops the dims added for 1-D operands. float32/float64 go to
// OpenBLAS when it is built in (reading transposed operands in place); other dtypes, and builds
// without BLAS, use a cache-blocked loop.
#include <algorithm>
#include <climits>
#include <optional>
#include <type_traits>
#include <vector>

#include <tapegrad/backends/cpu/linalg.h>
#include <tapegrad/backends/cpu/serial_blas.h>
#include <tapegrad/backends/cpu/wrapping.h>
#include <tapegrad/backends/shared/matmul_plan.h>
#include <tapegrad/core/copy.h>
#include <tapegrad/core/parallel.h>
#include <tapegrad/generated/kernels.h>
#include <tapegrad/ops/factories.h>

#ifdef TG_WITH_BLAS
#include <cblas.h>
#endif

namespace tg::cpu {
namespace {

// ---- shapes ----------------------------------------------------------------------------------

// A stack of matrices [..., rows, cols]: the operand tensor, and for each batch entry (batch
// dims broadcast to the result's) the element offset of its matrix.
struct MatrixOperand {
  Tensor t;
  int64_t rows = 0, cols = 0, row_stride = 0, col_stride = 0;
  std::vector<int64_t> offsets;
};

// Offsets of each batch matrix of t, its batch dims broadcast to `batch` (row-major order).
std::vector<int64_t> batch_offsets(const Tensor& t, const Shape& batch) {
  const int64_t nb = static_cast<int64_t>(batch.size()), tb = t.dim() - 2;
  std::vector<int64_t> stride(nb, 0), index(nb, 0);
  for (int64_t j = 0; j < tb; ++j) stride[nb - tb + j] = t.size(j) == 1 ? 0 : t.strides()[j];
  std::vector<int64_t> offsets(batch.numel());
  int64_t offset = 0;
  for (int64_t& out : offsets) {
    out = offset;
    for (int64_t d = nb - 1; d >= 0; --d) {  // odometer step
      if (++index[d] < batch[d]) {
        offset += stride[d];
        break;
      }
      offset -= stride[d] * (batch[d] - 1);
      index[d] = 0;
    }
  }
  return offsets;
}

MatrixOperand make_operand(const Tensor& t, const Shape& batch) {
  MatrixOperand op{t, t.size(-2), t.size(-1), t.strides()[t.dim() - 2], t.strides()[t.dim() - 1],
                   {}};
  op.offsets = batch_offsets(t, batch);
  return op;
}

// When every batch matrix of `b` is the same one and `a`'s matrices lie back to back with equal
// row spacing, the whole batch of `a` is one tall matrix: one big gemm instead of many small.
bool fold_batch(MatrixOperand& a, const MatrixOperand& b) {
  const int64_t count = static_cast<int64_t>(a.offsets.size());
  if (count < 2 || std::any_of(b.offsets.begin(), b.offsets.end(), [](int64_t o) { return o; }))
    return false;
  const int64_t row_stride = a.rows > 1 ? a.row_stride : a.offsets[1];
  for (int64_t i = 0; i < count; ++i)
    if (a.offsets[i] != i * a.rows * row_stride) return false;
  a.rows *= count;
  a.row_stride = row_stride;
  a.offsets = {0};
  return true;
}

// ---- the blocked loop ------------------------------------------------------------------------

// c + a * b; integers wrap around on overflow (wrapping.h).
template <typename T> T mul_add(T c, T a, T b) { return wrapping_add(c, wrapping_mul(a, b)); }

// Rows [i0, i1) of c_mat = a_mat @ b_mat (c_mat contiguous, b_mat's rows contiguous). k and j are
// blocked so that a block of B stays in cache while the rows stream over it.
template <typename T> void gemm_rows(const MatrixOperand& a, const T* a_mat, const MatrixOperand& b,
                                     const T* b_mat, T* c_mat, int64_t i0, int64_t i1) {
  constexpr int64_t kDepth = 128, kCols = 256;
  const int64_t K = a.cols, N = b.cols;
  std::fill(c_mat + i0 * N, c_mat + i1 * N, T(0));
  for (int64_t k0 = 0; k0 < K; k0 += kDepth) {
    const int64_t k1 = std::min(K, k0 + kDepth);
    for (int64_t j0 = 0; j0 < N; j0 += kCols) {
      const int64_t j1 = std::min(N, j0 + kCols);
      for (int64_t i = i0; i < i1; ++i) {
        T* c_row = c_mat + i * N;
        for (int64_t k = k0; k < k1; ++k) {
          const T a_ik = a_mat[i * a.row_stride + k * a.col_stride];
          const T* b_row = b_mat + k * b.row_stride;
          for (int64_t j = j0; j < j1; ++j) c_row[j] = mul_add(c_row[j], a_ik, b_row[j]);
        }
      }
    }
  }
}

// C[i] = A[i] @ B[i] for each batch entry i; C is contiguous [batch, M, N]. Parallel over
// (batch entry, block of kRows rows) tasks.
template <typename T> void gemm_blocked(const MatrixOperand& a, const MatrixOperand& b, T* c) {
  constexpr int64_t kRows = 32;
  const int64_t M = a.rows, N = b.cols;
  const int64_t row_blocks = (M + kRows - 1) / kRows;
  const int64_t tasks = static_cast<int64_t>(a.offsets.size()) * row_blocks;
  const int64_t work = std::max<int64_t>(kRows * N * a.cols, 1);
  auto run = [&](int64_t lo, int64_t hi) {
    for (int64_t t = lo; t < hi; ++t) {
      const int64_t batch = t / row_blocks, i0 = (t % row_blocks) * kRows;
      gemm_rows(a, a.t.data<T>() + a.offsets[batch], b, b.t.data<T>() + b.offsets[batch],
                c + batch * M * N, i0, std::min(M, i0 + kRows));
    }
  };
  parallel_for(0, tasks, std::max<int64_t>(1, kElementwiseGrain / work), run);
}

// ---- BLAS --------------------------------------------------------------------------------------

#ifdef TG_WITH_BLAS
// How BLAS reads a matrix in place: row-major as stored, or transposed (its columns are
// contiguous), with leading dimension ld. Empty when it cannot (then we copy).
struct BlasLayout {
  bool trans;
  int64_t ld;
};
std::optional<BlasLayout> blas_layout(const MatrixOperand& m) {
  const int64_t rows = m.rows, cols = m.cols, rs = m.row_stride, cs = m.col_stride;
  if ((cols == 1 || cs == 1) && (rows == 1 || rs >= std::max<int64_t>(cols, 1)))
    return BlasLayout{false, rows == 1 ? std::max<int64_t>(cols, 1) : rs};
  if ((rows == 1 || rs == 1) && (cols == 1 || cs >= std::max<int64_t>(rows, 1)))
    return BlasLayout{true, cols == 1 ? std::max<int64_t>(rows, 1) : cs};
  return std::nullopt;
}

bool fits_int(std::initializer_list<int64_t> values) {
  return std::all_of(values.begin(), values.end(), [](int64_t v) { return v <= INT_MAX; });
}

// C[M, N] = alpha A[M, K] B[K, N] + beta C through cblas, row-major, each operand transposed or
// not (beta = 0: C is not read).
template <typename T> void blas_gemm(CBLAS_TRANSPOSE ta, CBLAS_TRANSPOSE tb, int M, int N, int K,
                                     const T* A, int lda, const T* B, int ldb, T* C, int ldc,
                                     const GemmScale& s) {
  if constexpr (std::is_same_v<T, float>)
    cblas_sgemm(CblasRowMajor, ta, tb, M, N, K, static_cast<float>(s.alpha), A, lda, B, ldb,
                static_cast<float>(s.beta), C, ldc);
  else
    cblas_dgemm(CblasRowMajor, ta, tb, M, N, K, s.alpha, A, lda, B, ldb, s.beta, C, ldc);
}

template <typename T>
void gemm_blas(const MatrixOperand& a, const MatrixOperand& b, T* c, const GemmScale& s) {
  const BlasLayout la = *blas_layout(a), lb = *blas_layout(b);
  const int M = static_cast<int>(a.rows), N = static_cast<int>(b.cols);
  const int K = static_cast<int>(a.cols);
  const auto ta = la.trans ? CblasTrans : CblasNoTrans, tb = lb.trans ? CblasTrans : CblasNoTrans;
  const int lda = static_cast<int>(la.ld), ldb = static_cast<int>(lb.ld);
  auto products = [&](int64_t lo, int64_t hi) {
    for (int64_t i = lo; i < hi; ++i)
      blas_gemm(ta, tb, M, N, K, a.t.data<T>() + a.offsets[static_cast<size_t>(i)], lda,
                b.t.data<T>() + b.offsets[static_cast<size_t>(i)], ldb, c + i * M * N, N, s);
  };
  // A batch of products, each whole on one thread with OpenBLAS single-threaded, when that
  // splits evenly (a multiple of the thread count, or four products per thread and more) or
  // the products are small: OpenBLAS splitting each product of [32,128,64]x[32,64,128] over
  // two threads took 1.8x the time of one thread.
  const int64_t batch = static_cast<int64_t>(a.offsets.size()), threads = get_num_threads();
  const bool small = int64_t{M} * N * K < (int64_t{1} << 22);
  const bool tiny = int64_t{M} * N * K < (int64_t{1} << 18);  // OpenBLAS's own one-thread bound
  if (threads > 1 && batch > 1 && (small || batch % threads == 0 || batch >= 4 * threads)) {
    SerialBlas serial(true);
    const int64_t work = std::max<int64_t>(int64_t{M} * N * K, 1);
    parallel_for(0, batch, std::max<int64_t>(1, kElementwiseGrain / work), products);
  } else if (threads > 1 && batch == 1 && !tiny && std::max(M, N) >= 8 * threads) {
    // One product: a block of C's rows (or of its columns, when it has more) per pool thread,
    // OpenBLAS single-threaded in each. OpenBLAS's own two threads took 1.3x this time for
    // [64,784]x[784,256] and 512^3 (docs/PERFORMANCE.md). Tiny products stay one call, as
    // OpenBLAS itself keeps them on one thread: a block's rows can get other bits than the
    // same rows of one call over all of C (OpenBLAS picks its kernels by size: float64
    // [32,8]x[8,16] at 2-4 threads on Zen 3, even with blocks on 16-row boundaries), so
    // small models' steps give the same bits at every thread count.
    SerialBlas serial(true);
    const T* A = a.t.data<T>() + a.offsets[0];
    const T* B = b.t.data<T>() + b.offsets[0];
    const bool by_rows = M >= N;
    const int64_t extent = by_rows ? M : N;
    parallel_for(0, threads, 1, [&](int64_t lo, int64_t hi) {
      for (int64_t t = lo; t < hi; ++t) {
        const int64_t b0 = extent * t / threads, b1 = extent * (t + 1) / threads;
        const int count = static_cast<int>(b1 - b0);
        if (by_rows)
          blas_gemm(ta, tb, count, N, K, A + b0 * (la.trans ? 1 : lda), lda, B, ldb, c + b0 * N, N,
                    s);
        else
          blas_gemm(ta, tb, M, count, K, A, lda, B + b0 * (lb.trans ? ldb : 1), ldb, c + b0, N, s);
      }
    });
  } else {
    products(0, batch);
  }
}
#endif

// ---- the op ------------------------------------------------------------------------------------

// The shapes and dtypes were checked before dispatch (checks::matmul). With an addend, the BLAS
// path returns alpha * product + beta * addend (broadcast to the product's shape) in one call,
// C preset to the addend, and says so in `scaled`; the other paths return the bare product.
struct Product {
  Tensor out;
  bool scaled = false;
};
Product matmul_impl(const Tensor& self, const Tensor& other, bool allow_blas,
                    const Tensor& addend = Tensor(), const GemmScale& scale = {}) {
  const shared::MatmulPlan plan = shared::matmul_plan(self, other);
  const Tensor &a = plan.a, &b = plan.b;
  const Shape& batch = plan.batch;
  const int64_t k = plan.k, n = plan.n;
  Tensor out = empty(plan.out_shape, self.dtype(), self.device());
  if (out.numel() == 0) return {out};
  if (k == 0) {
    fill_data(out, 0);
    return {out};
  }
  const DType dtype = self.dtype();
  bool use_blas = false;
#ifdef TG_WITH_BLAS
  use_blas = allow_blas && (dtype == kFloat32 || dtype == kFloat64) && fits_int({plan.m, n, k});
#else
  (void)allow_blas;
  (void)use_blas;
  (void)addend;
  (void)scale;
#endif
  MatrixOperand A = make_operand(a, batch), B = make_operand(b, batch);
  // A contraction along a stride-0 (expanded) dim is read from a dense copy, as a reduction
  // reads it: the work is then bounded by memory this call holds, and an expand too large to
  // hold is the allocator's typed error instead of a loop over 2^61 products.
  if (k > 1 && A.col_stride == 0) A = make_operand(a.contiguous(), batch);
  if (k > 1 && B.row_stride == 0) B = make_operand(b.contiguous(), batch);
#ifdef TG_WITH_BLAS
  if (use_blas) {
    if (!blas_layout(A)) A = make_operand(a.contiguous(), batch);
    if (!blas_layout(B)) B = make_operand(b.contiguous(), batch);
    MatrixOperand folded = A;
    if (fold_batch(folded, B) && blas_layout(folded) && fits_int({folded.rows})) A = folded;
    if (fits_int({blas_layout(A)->ld, blas_layout(B)->ld})) {
      const bool scaled = addend.defined();
      // beta = 0 leaves C unread (the addend's nan and inf do not leak in, as in PyTorch).
      if (scaled && scale.beta != 0) copy_data(out, addend.broadcast_to(out.shape()));
      const GemmScale s = scaled ? scale : GemmScale{};
      if (dtype == kFloat32)
        gemm_blas(A, B, out.data<float>(), s);
      else
        gemm_blas(A, B, out.data<double>(), s);
      return {out, scaled};
    }
  }
#endif
  if (n > 1 && B.col_stride != 1) B = make_operand(b.contiguous(), batch);
  if (n == 1) B.col_stride = 1;  // one column: its stride is never used
  fold_batch(A, B);
  switch (dtype) {
    case kInt32: gemm_blocked(A, B, out.data<int32_t>()); break;
    case kInt64: gemm_blocked(A, B, out.data<int64_t>()); break;
    case kFloat32: gemm_blocked(A, B, out.data<float>()); break;
    case kFloat64: gemm_blocked(A, B, out.data<double>()); break;
    default: throw_unsupported_dtype("matmul", dtype);
  }
  return {out};
}

}  // namespace

Tensor matmul(const Tensor& self, const Tensor& other) {
  return matmul_impl(self, other, true).out;
}

Tensor matmul_fallback(const Tensor& self, const Tensor& other) {
  checks::matmul(self, other);  // called directly, not through the front end
  return matmul_impl(self, other, false).out;
}

std::optional<Tensor> scaled_matmul_blas(const Tensor& self, const Tensor& other,
                                         const Tensor& addend, const GemmScale& scale) {
  Product p = matmul_impl(self, other, true, addend, scale);
  if (p.scaled || p.out.numel() == 0) return p.out;
  return std::nullopt;
}

}  // namespace tg::cpu
