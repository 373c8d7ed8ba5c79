// View kernels (namespace tg::views): backend-agnostic, registered for every backend with the spec
// key "Default". Each computes a new shape, strides and storage offset and returns make_view(self,
// ...), which shares self's storage. No data is read or written, except by reshape when no view is
// possible (then it copies) and by slice_backward (a fresh tensor).
#include <algorithm>
#include <optional>
#include <utility>
#include <vector>

#include <tapegrad/core/checked.h>
#include <tapegrad/core/copy.h>
#include <tapegrad/core/error.h>
#include <tapegrad/generated/kernels.h>
#include <tapegrad/generated/tensor.h>
#include <tapegrad/ops/factories.h>

namespace tg::views {
namespace {

// `size` with its single -1 replaced by the value that keeps numel (PyTorch's infer_size).
Shape infer_size(const char* op, IntArrayRef size, const Shape& self_shape) {
  const int64_t numel = self_shape.numel();
  Shape out(size.begin(), size.end());
  std::optional<size_t> infer_at;
  int64_t known = 1;
  for (size_t i = 0; i < size.size(); ++i) {
    if (size[i] == -1) {
      TG_CHECK(!infer_at, ValueError, op,
               "only one dimension can be inferred (-1), got -1 at dims ", *infer_at, " and ", i,
               " of shape ", size);
      infer_at = i;
    } else {
      TG_CHECK(size[i] >= 0, ValueError, op, "invalid size ", size[i], " at dim ", i, " of shape ",
               size, ", expected >= 0 or -1");
      // A product past int64 cannot equal numel; wrapping could (2^62 + 1 times 4 wraps to 4).
      TG_CHECK(checked::mul(known, size[i], known), ValueError, op, "shape ", size,
               " is invalid for input of shape ", self_shape, " (", numel,
               " elements): its product overflows int64");
    }
  }
  if (infer_at) {
    TG_CHECK(known != 0, ValueError, op, "cannot infer the -1 in shape ", size,
             " for input of shape ", self_shape, " (0 elements): any size would fit");
    TG_CHECK(numel % known == 0, ValueError, op, "shape ", size, " is invalid for input of shape ",
             self_shape, " (", numel, " elements): ", numel, " is not a multiple of ", known);
    out[*infer_at] = numel / known;
  }
  const int64_t out_numel = checked::view_numel(op, out);
  TG_CHECK(out_numel == numel, ValueError, op, "shape ", size, " (", out_numel,
           " elements) is invalid for input of shape ", self_shape, " (", numel, " elements)");
  return out;
}

// Strides that view (old_shape, old_strides) as new_shape without copying, or nullopt when a new
// dim would span two non-mergeable chunks of memory. PyTorch's computeStride: walk both shapes from
// the last dim, matching runs of old dims that are contiguous with each other.
std::optional<Shape> view_strides(const Shape& old_shape, const Shape& old_strides,
                                  const Shape& new_shape) {
  if (old_shape.empty()) return Shape(new_shape.size(), 1);
  const int64_t numel = old_shape.numel();
  if (numel == 0 && old_shape == new_shape) return old_strides;
  Shape strides(new_shape.size());
  if (numel == 0) {  // any strides work for an empty tensor: use contiguous ones
    for (int64_t d = static_cast<int64_t>(new_shape.size()) - 1; d >= 0; --d) {
      strides[d] = d + 1 == static_cast<int64_t>(new_shape.size())
                       ? 1
                       : std::max<int64_t>(new_shape[d + 1], 1) * strides[d + 1];
    }
    return strides;
  }
  int64_t view_d = static_cast<int64_t>(new_shape.size()) - 1;
  int64_t chunk_base_stride = old_strides.back();  // stride of the last dim of the current chunk
  int64_t tensor_numel = 1, view_numel = 1;
  for (int64_t d = static_cast<int64_t>(old_shape.size()) - 1; d >= 0; --d) {
    tensor_numel *= old_shape[d];
    // A chunk ends where the next-outer dim is not laid out right after this run.
    bool chunk_ends =
        d == 0 || (old_shape[d - 1] != 1 && old_strides[d - 1] != tensor_numel * chunk_base_stride);
    if (!chunk_ends) continue;
    while (view_d >= 0 && (view_numel < tensor_numel || new_shape[view_d] == 1)) {
      strides[view_d] = view_numel * chunk_base_stride;
      view_numel *= new_shape[view_d];
      --view_d;
    }
    if (view_numel != tensor_numel) return std::nullopt;
    if (d > 0) {
      chunk_base_stride = old_strides[d - 1];
      tensor_numel = 1;
      view_numel = 1;
    }
  }
  if (view_d != -1) return std::nullopt;
  return strides;
}

// view or reshape, with errors naming `op`: a view when the strides allow, else (allow_copy) a
// fresh contiguous copy.
Tensor reshape_impl(const char* op, const Tensor& self, IntArrayRef size, bool allow_copy) {
  Shape shape = infer_size(op, size, self.shape());
  // An empty result gets contiguous strides (view_strides): they must fit in int64 too, as for
  // any tensor with its own layout ([0, 3, 2^62] would overflow them).
  if (self.numel() == 0) checked::numel(op, shape, itemsize(self.dtype()));
  if (auto strides = view_strides(self.shape(), self.strides(), shape)) {
    return make_view(self, std::move(shape), std::move(*strides), self.storage_offset());
  }
  TG_CHECK(allow_copy, ValueError, op, "view size is not compatible with input tensor's size and ",
           "stride (at least one dimension spans across two contiguous subspaces): input shape ",
           self.shape(), ", strides ", self.strides(), ", requested shape ", shape,
           "; use reshape instead");
  // Copy self in row-major order into a fresh tensor of the new shape.
  Tensor out = tg::empty(shape, self.dtype(), self.device());
  copy_data(make_view(out, self.shape(), contiguous_strides(self.shape()), 0), self);
  return out;
}

// expand and broadcast_to: size-1 dims get stride 0, new leading dims are added in front.
Tensor expand_impl(const char* op, const Tensor& self, IntArrayRef size) {
  const int64_t ndim = self.dim(), new_ndim = static_cast<int64_t>(size.size());
  TG_CHECK(new_ndim >= ndim, ValueError, op, "size ", size, " has ", new_ndim,
           " entries, expected at least ", ndim, " (one per dim of self, shape ", self.shape(),
           ")");
  Shape shape(size.size()), strides(size.size());
  for (int64_t i = new_ndim - 1; i >= 0; --i) {
    const int64_t self_d = i - (new_ndim - ndim);  // the matching dim of self, < 0 for new dims
    const int64_t target = size[i];
    if (self_d < 0) {
      TG_CHECK(target >= 0, ValueError, op, "size ", size, " has ", target, " at new leading dim ",
               i, ", expected a size >= 0 (-1 only keeps an existing dim)");
      shape[i] = target;
      strides[i] = 0;
      continue;
    }
    const int64_t cur = self.shape()[self_d];
    TG_CHECK(target >= -1, ValueError, op, "invalid size ", target, " at dim ", i, " of ", size);
    if (target == -1 || target == cur) {
      shape[i] = cur;
      strides[i] = self.strides()[self_d];
    } else {
      TG_CHECK(cur == 1, ValueError, op, "the expanded size ", target, " at dim ", i,
               " must match the existing size ", cur, " (only size-1 dims expand); self shape ",
               self.shape(), ", size ", size);
      shape[i] = target;
      strides[i] = 0;
    }
  }
  checked::view_numel(op, shape);
  return make_view(self, std::move(shape), std::move(strides), self.storage_offset());
}

// Python slicing: negative bounds count from the end, then both clamp to [0, size].
struct SliceBounds {
  int64_t start, end, length;
};
SliceBounds slice_bounds(const char* op, int64_t size, std::optional<int64_t> start,
                         std::optional<int64_t> end, int64_t step) {
  TG_CHECK(step > 0, ValueError, op, "step must be positive, got ", step);
  auto clamp = [size](int64_t v) { return std::clamp<int64_t>(v < 0 ? v + size : v, 0, size); };
  const int64_t s = start ? clamp(*start) : 0;
  const int64_t e = std::max(s, end ? clamp(*end) : size);
  // ceil((e - s) / step) without forming e - s + step - 1, which overflows for a huge step.
  return {s, e, e == s ? 0 : (e - s - 1) / step + 1};
}

}  // namespace

Tensor view(const Tensor& self, IntArrayRef size) {
  return reshape_impl("view", self, size, /*allow_copy=*/false);
}

Tensor reshape(const Tensor& self, IntArrayRef shape) {
  return reshape_impl("reshape", self, shape, /*allow_copy=*/true);
}

Tensor flatten(const Tensor& self, int64_t start_dim, int64_t end_dim) {
  const int64_t start = wrap_dim("flatten", start_dim, self.dim());
  const int64_t end = wrap_dim("flatten", end_dim, self.dim());
  TG_CHECK(start <= end, ValueError, "flatten", "start_dim ", start_dim,
           " must not come after end_dim ", end_dim, " (dims ", start, " and ", end, " of shape ",
           self.shape(), ")");
  if (self.dim() == 0) return reshape_impl("flatten", self, {1}, true);
  Shape shape;
  for (int64_t d = 0; d < start; ++d) shape.push_back(self.shape()[d]);
  int64_t merged = 1;
  for (int64_t d = start; d <= end; ++d) merged *= self.shape()[d];
  shape.push_back(merged);
  for (int64_t d = end + 1; d < self.dim(); ++d) shape.push_back(self.shape()[d]);
  return reshape_impl("flatten", self, shape, /*allow_copy=*/true);
}

Tensor permute(const Tensor& self, IntArrayRef dims) {
  const int64_t ndim = self.dim();
  TG_CHECK(static_cast<int64_t>(dims.size()) == ndim, ValueError, "permute", "dims ", dims, " has ",
           dims.size(), " entries, expected ", ndim, " (one per dim of self, shape ", self.shape(),
           ")");
  Shape shape(dims.size()), strides(dims.size());
  std::vector<bool> seen(dims.size(), false);
  for (size_t i = 0; i < dims.size(); ++i) {
    const int64_t d = wrap_dim("permute", dims[i], ndim);
    TG_CHECK(!seen[d], ValueError, "permute", "dim ", d, " appears more than once in dims ", dims);
    seen[d] = true;
    shape[i] = self.shape()[d];
    strides[i] = self.strides()[d];
  }
  return make_view(self, std::move(shape), std::move(strides), self.storage_offset());
}

Tensor transpose(const Tensor& self, int64_t dim0, int64_t dim1) {
  const int64_t d0 = wrap_dim("transpose", dim0, self.dim());
  const int64_t d1 = wrap_dim("transpose", dim1, self.dim());
  Shape shape = self.shape(), strides = self.strides();
  if (self.dim() > 0) {
    std::swap(shape[d0], shape[d1]);
    std::swap(strides[d0], strides[d1]);
  }
  return make_view(self, std::move(shape), std::move(strides), self.storage_offset());
}

Tensor t(const Tensor& self) {
  TG_CHECK(self.dim() <= 2, ValueError, "t", "self must have at most 2 dims, got ", self.dim(),
           " (shape ", self.shape(), "); use transpose or permute");
  if (self.dim() < 2) return make_view(self, self.shape(), self.strides(), self.storage_offset());
  return views::transpose(self, 0, 1);
}

Tensor expand(const Tensor& self, IntArrayRef size) { return expand_impl("expand", self, size); }

Tensor broadcast_to(const Tensor& self, IntArrayRef size) {
  return expand_impl("broadcast_to", self, size);
}

Tensor squeeze(const Tensor& self, std::optional<int64_t> dim) {
  Shape shape, strides;
  if (dim) {
    const int64_t d = wrap_dim("squeeze", *dim, self.dim());
    for (int64_t i = 0; i < self.dim(); ++i) {
      if (i == d && self.shape()[i] == 1) continue;  // a dim of another size stays
      shape.push_back(self.shape()[i]);
      strides.push_back(self.strides()[i]);
    }
  } else {
    for (int64_t i = 0; i < self.dim(); ++i) {
      if (self.shape()[i] == 1) continue;
      shape.push_back(self.shape()[i]);
      strides.push_back(self.strides()[i]);
    }
  }
  return make_view(self, std::move(shape), std::move(strides), self.storage_offset());
}

Tensor unsqueeze(const Tensor& self, int64_t dim) {
  const int64_t n = self.dim() + 1;  // the new dim may go anywhere in [0, dim()]
  TG_CHECK(dim >= -n && dim < n, IndexError, "unsqueeze", "dim ", dim, " is out of range for a ",
           self.dim(), "-d tensor (expected a dim in [", -n, ", ", n - 1, "])");
  const int64_t d = dim < 0 ? dim + n : dim;
  Shape shape = self.shape(), strides = self.strides();
  // Any stride is valid for a size-1 dim; this one keeps contiguous tensors contiguous.
  int64_t stride = 1;
  if (d < self.dim() && !checked::mul(shape[d], strides[d], stride)) stride = 1;
  shape.insert(d, 1);
  strides.insert(d, stride);
  return make_view(self, std::move(shape), std::move(strides), self.storage_offset());
}

Tensor slice(const Tensor& self, int64_t dim, std::optional<int64_t> start,
             std::optional<int64_t> end, int64_t step) {
  TG_CHECK(self.dim() > 0, ValueError, "slice", "self must have at least 1 dim, got a 0-d tensor");
  const int64_t d = wrap_dim("slice", dim, self.dim());
  const SliceBounds b = slice_bounds("slice", self.shape()[d], start, end, step);
  Shape shape = self.shape(), strides = self.strides();
  shape[d] = b.length;
  // The stride of a dim of length <= 1 is never followed: a huge step must not overflow it.
  if (b.length > 1) strides[d] = checked::mul("slice", strides[d], step, "the stride times step");
  return make_view(self, std::move(shape), std::move(strides),
                   self.storage_offset() + b.start * self.strides()[d]);
}

Tensor narrow(const Tensor& self, int64_t dim, int64_t start, int64_t length) {
  TG_CHECK(self.dim() > 0, ValueError, "narrow", "self must have at least 1 dim, got a 0-d tensor");
  const int64_t d = wrap_dim("narrow", dim, self.dim());
  const int64_t size = self.shape()[d];
  TG_CHECK(start >= -size && start <= size, IndexError, "narrow", "start ", start,
           " is out of range for dim ", d, " of size ", size, " (expected ", -size,
           " <= start <= ", size, ")");
  const int64_t s = start < 0 ? start + size : start;
  TG_CHECK(length >= 0 && length <= size - s, IndexError, "narrow", "start (", s, ") + length (",
           length, ") is out of range for dim ", d, " of size ", size,
           " (expected 0 <= length <= ", size - s, ")");
  Shape shape = self.shape();
  shape[d] = length;
  return make_view(self, std::move(shape), self.strides(),
                   self.storage_offset() + s * self.strides()[d]);
}

Tensor select(const Tensor& self, int64_t dim, int64_t index) {
  TG_CHECK(self.dim() > 0, IndexError, "select", "self must have at least 1 dim, got a 0-d tensor");
  const int64_t d = wrap_dim("select", dim, self.dim());
  const int64_t size = self.shape()[d];
  TG_CHECK(index >= -size && index < size, IndexError, "select", "index ", index,
           " is out of range for dim ", d, " of size ", size, " (expected ", -size, " <= index < ",
           size, ")");
  const int64_t i = index < 0 ? index + size : index;
  const int64_t offset = self.storage_offset() + i * self.strides()[d];
  Shape shape = self.shape(), strides = self.strides();
  shape.erase(d);
  strides.erase(d);
  return make_view(self, std::move(shape), std::move(strides), offset);
}

Tensor slice_backward(const Tensor& grad_output, IntArrayRef input_shape, int64_t dim,
                      std::optional<int64_t> start, std::optional<int64_t> end, int64_t step) {
  const char* op = "slice_backward";
  TG_CHECK(!input_shape.empty(), ValueError, op, "input_shape must have at least 1 dim, got []");
  for (int64_t s : input_shape) {
    TG_CHECK(s >= 0, ValueError, op, "input_shape ", input_shape, " has a negative size");
  }
  const int64_t d = wrap_dim(op, dim, static_cast<int64_t>(input_shape.size()));
  const SliceBounds b = slice_bounds(op, input_shape[d], start, end, step);
  Shape expected(input_shape.begin(), input_shape.end());
  expected[d] = b.length;
  TG_CHECK(grad_output.shape() == expected, ValueError, op, "grad_output has shape ",
           grad_output.shape(), ", expected ", expected, " (input_shape ", input_shape,
           " sliced along dim ", d, ")");
  Tensor out = tg::zeros(input_shape, grad_output.dtype(), grad_output.device());
  copy_data(views::slice(out, d, b.start, b.end, step), grad_output);
  return out;
}

}  // namespace tg::views
