// CUDA sort, topk (sort_kernels.cu: stable radix sorts of order-preserving keys, the CPU's order
// and tie rule) and one_hot. Arguments were checked before dispatch (ops/checks/sequence.cpp);
// one_hot's class values are data, checked on the device.
#include <vector>

#include <tapegrad/backends/shared/sort_plan.h>
#include <tapegrad/core/copy.h>
#include <tapegrad/generated/kernels.h>
#include <tapegrad/generated/tensor.h>
#include <tapegrad/ops/factories.h>

#include "layout.h"
#include "device_errors.h"
#include "sort_kernels.h"

namespace tg::cuda {
namespace {

// The first k elements of each row along dim, in order, and their indices
// (backends/shared/sort_plan.h).
std::tuple<Tensor, Tensor> ordered_rows(const Tensor& self, const shared::SortPlan& plan,
                                        bool descending) {
  Tensor values = empty(plan.out_shape, self.dtype(), self.device());
  Tensor indices = empty(plan.out_shape, kInt64, self.device());
  if (values.numel() == 0) return {values, indices};
  const Tensor x = dense_as(self, self.dtype());
  const int64_t n = self.numel();
  Tensor keys = empty({n}, kInt64, self.device()), perm = empty({n}, kInt64, self.device());
  detail::launch_sort_rows(self.dtype(), x.data_ptr(), plan.rows, plan.k, descending,
                           reinterpret_cast<uint64_t*>(keys.data<int64_t>()), perm.data<int64_t>(),
                           values.data_ptr(), indices.data<int64_t>());
  return {values, indices};
}

}  // namespace

// Always stable: `stable` is there for PyTorch's signature.
std::tuple<Tensor, Tensor> sort(const Tensor& self, int64_t dim, bool descending, bool /*stable*/) {
  return ordered_rows(self, shared::sort_plan("sort", self, dim, std::nullopt), descending);
}

// sorted = false still returns the k elements in order, as on the CPU.
std::tuple<Tensor, Tensor> topk(const Tensor& self, int64_t k, int64_t dim, bool largest,
                                bool /*sorted*/) {
  return ordered_rows(self, shared::sort_plan("topk", self, dim, k), largest);
}

Tensor one_hot(const Tensor& self, int64_t num_classes) {
  const Tensor x = dense_as(self, kInt64);
  const int64_t n = x.numel();
  if (num_classes == -1) {
    // The result's shape depends on the data: one host read of the smallest and largest class.
    const std::vector<int64_t> range =
        stack({amin(x, {}, false), amax(x, {}, false)}, 0).cpu().to_vector<int64_t>();
    num_classes = shared::one_hot_inferred_classes(range[0], range[1]);
  }
  Shape shape = self.shape();
  shape.push_back(num_classes);
  Tensor out = zeros(shape, kInt64, self.device());
  if (n == 0) return out;
  detail::launch_one_hot(x.data<int64_t>(), n, num_classes, out.data<int64_t>());
  detail::checkpoint();  // checked mode: a bad class value raises here
  return out;
}

}  // namespace tg::cuda
