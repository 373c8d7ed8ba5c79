// sort / topk as two stable radix sorts of 64-bit keys (Thrust's stable_sort_by_key, one
// instantiation for every dtype): each element's value is mapped to an unsigned key whose order
// is the sort's order (NaN largest, -0 = +0, complemented when descending), the positions are
// sorted by that key, then stably by row, which leaves each row's positions in value order with
// ties in index order. The first k of each row are then gathered. one_hot is a plain kernel
// whose bad class values go to the device error record.
#include <cstring>
#include <type_traits>

#include <thrust/sort.h>

#include "algorithms.cuh"
#include "device_errors.h"
#include "sort_kernels.h"

namespace tg::cuda::detail {
namespace {

// An unsigned key with the order of the sort: floating values through the sign-flip of their
// IEEE bits (negative: all bits flipped; positive: the sign bit set), integers with the sign bit
// flipped.
template <typename T> __host__ __device__ inline uint64_t order_key(T v) {
  constexpr uint64_t kSign = 1ULL << 63;
  if constexpr (std::is_floating_point_v<T>) {
    if (v != v) return ~0ULL;  // NaN: above +inf (whose key has a zero low part)
    const double d = v == T(0) ? 0.0 : static_cast<double>(v);  // -0 sorts as +0
    uint64_t u = 0;
    memcpy(&u, &d, sizeof u);
    return (u & kSign) ? ~u : (u | kSign);
  } else {
    return static_cast<uint64_t>(static_cast<int64_t>(v)) ^ kSign;
  }
}

template <typename T> struct KeyBody {
  const T* x;
  SortRows l;
  bool descending;
  uint64_t* keys;
  int64_t* perm;
  __host__ __device__ void operator()(int64_t p) const {
    const int64_t r = p / l.size, j = p % l.size;
    const uint64_t key = order_key(x[(r / l.inner) * l.size * l.inner + j * l.inner + r % l.inner]);
    keys[p] = descending ? ~key : key;
    perm[p] = p;
  }
};

// keys[q] = the row of the position now at q.
struct RowKeyBody {
  const int64_t* perm;
  int64_t size;
  uint64_t* keys;
  __host__ __device__ void operator()(int64_t q) const {
    keys[q] = static_cast<uint64_t>(perm[q] / size);
  }
};

template <typename T> struct GatherBody {
  const T* x;
  SortRows l;
  int64_t k;
  const int64_t* perm;
  T* values;
  int64_t* indices;
  __host__ __device__ void operator()(int64_t e) const {
    const int64_t r = e / k, jj = e % k;
    const int64_t p = perm[r * l.size + jj], j = p % l.size;
    const int64_t o = r / l.inner, i = r % l.inner;
    const int64_t out = (o * k + jj) * l.inner + i;
    values[out] = x[(o * l.size + j) * l.inner + i];
    indices[out] = j;
  }
};

struct OneHotBody {
  const int64_t* index;
  int64_t classes;
  int64_t* out;
  ErrorRecord* err;
  int32_t op;
  __host__ __device__ void operator()(int64_t i) const {
    const int64_t v = index[i];
    if (v < 0 || v >= classes) {
      record_error(err, kClassOutOfRange, op, v, classes, i);
      return;
    }
    out[i * classes + v] = 1;
  }
};

}  // namespace

void launch_sort_rows(DType dtype, const void* x, const SortRows& l, int64_t k, bool descending,
                      uint64_t* keys, int64_t* perm, void* values, int64_t* indices) {
  const int64_t n = l.rows() * l.size;
  visit_dtype("sort", dtype, [&](auto tag) {
    using T = typename decltype(tag)::type;
    launch_n("sort", n, KeyBody<T>{static_cast<const T*>(x), l, descending, keys, perm});
  });
  ThrustAllocator alloc;
  thrust::stable_sort_by_key(thrust_policy(alloc), keys, keys + n, perm);
  if (l.rows() > 1) {
    launch_n("sort", n, RowKeyBody{perm, l.size, keys});
    thrust::stable_sort_by_key(thrust_policy(alloc), keys, keys + n, perm);
  }
  visit_dtype("sort", dtype, [&](auto tag) {
    using T = typename decltype(tag)::type;
    launch_n("sort", l.rows() * k,
             GatherBody<T>{static_cast<const T*>(x), l, k, perm, static_cast<T*>(values), indices});
  });
}

void launch_one_hot(const int64_t* index, int64_t n, int64_t classes, int64_t* out) {
  launch_n("one_hot", n, OneHotBody{index, classes, out, error_record(), op_id("one_hot")});
}

}  // namespace tg::cuda::detail
