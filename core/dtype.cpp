#include <tapegrad/core/dtype.h>

#include <tapegrad/core/error.h>

namespace tg {

const char* dtype_name(DType t) {
  switch (t) {
#define TG_DTYPE_NAME(e, type, s) \
  case DType::e: return s;
    TG_FORALL_DTYPES(TG_DTYPE_NAME)
#undef TG_DTYPE_NAME
  }
  return "?";
}

std::string to_string(DType t) { return dtype_name(t); }

DType dtype_from_name(const std::string& name) {
#define TG_DTYPE_FROM(e, type, s) \
  if (name == s) return DType::e;
  TG_FORALL_DTYPES(TG_DTYPE_FROM)
#undef TG_DTYPE_FROM
  fail<ValueError>("dtype", "unknown dtype name '", name,
                   "' (expected bool, int32, int64, float16, bfloat16, float32 or float64)");
}

namespace {
int category(DType t) { return t == kBool ? 0 : is_integral(t) ? 1 : 2; }
int rank(DType t) {
  switch (t) {
    case kBool: return 0;
    case kInt32: return 1;
    case kInt64: return 2;
    case kFloat16: return 3;
    case kBFloat16: return 3;
    case kFloat32: return 4;
    case kFloat64: return 5;
  }
  return 0;
}
}  // namespace

DType promote_types(DType a, DType b) {
  if (a == b) return a;
  // float16 with bfloat16 promotes to float32, as in PyTorch.
  if ((a == kFloat16 && b == kBFloat16) || (a == kBFloat16 && b == kFloat16)) return kFloat32;
  return rank(a) >= rank(b) ? a : b;
}

bool can_cast(DType from, DType to) { return category(from) <= category(to); }

void throw_unsupported_dtype(const char* op, DType t) {
  fail<TypeError>(op, "dtype ", dtype_name(t), " is not supported here");
}

}  // namespace tg
