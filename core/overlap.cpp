#include <tapegrad/core/overlap.h>

#include <cstring>

#include <tapegrad/core/error.h>

namespace tg::detail {

bool has_internal_overlap(const TensorBase& t) {
  const Shape& shape = t.shape();
  const Shape& strides = t.strides();
  for (size_t i = 0; i < shape.size(); ++i)
    if (strides[i] == 0 && shape[i] > 1) return true;
  return false;
}

void check_inplace_overlap(const char* op, const TensorBase& self) {
  if (std::strcmp(op, "fill_") == 0 || std::strcmp(op, "zero_") == 0) return;
  TG_CHECK(!has_internal_overlap(self), ValueError, op,
           "unsupported operation: more than one element of the written-to tensor refers to a "
           "single memory location (self has shape ",
           self.shape(), " and strides ", self.strides(),
           "). Please clone() the tensor before performing the operation.");
}

}  // namespace tg::detail
