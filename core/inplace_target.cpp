// The thread's offered in-place target; see inplace_target.h.
#include <tapegrad/core/inplace_target.h>

#include <cstring>

namespace tg::detail {
namespace {

struct Offer {
  const char* op = nullptr;  // without the trailing '_'
  size_t op_len = 0;
  const TensorBase* self = nullptr;
};
// initial-exec: a plain TLS load (every elementwise kernel looks), no __tls_get_addr call.
__attribute__((tls_model("initial-exec"))) thread_local Offer offer;

}  // namespace

InplaceTarget::InplaceTarget(const char* op, const TensorBase& self, bool others_alias_self) {
  offer = {};
  const size_t len = std::strlen(op);
  if (others_alias_self || len < 2 || op[len - 1] != '_' || !self.is_contiguous()) return;
  offer = {op, len - 1, &self};
}

InplaceTarget::~InplaceTarget() { offer = {}; }

TensorBase take_inplace_target(const char* op, const Shape& shape, DType dtype) {
  if (!offer.self || std::strlen(op) != offer.op_len ||
      std::strncmp(op, offer.op, offer.op_len) != 0 || offer.self->shape() != shape ||
      offer.self->dtype() != dtype || offer.self->device() != Device())
    return TensorBase();
  TensorBase target = *offer.self;
  offer = {};
  return target;
}

}  // namespace tg::detail
