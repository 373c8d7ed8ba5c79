#pragma once
// The op check's internals, shared by check.cpp (the spec's samples) and derived.cpp (the edge
// cases derived from them). Not installed: the public API is check.h.
#include <cstdint>
#include <functional>
#include <string>
#include <vector>

#include <tapegrad/core/error.h>
#include <tapegrad/testing/check.h>
#include <tapegrad/testing/samples.h>

namespace tg::testing::detail {

using registry::OpInfo;
using registry::Value;

// Row-major bytes of t (through a contiguous CPU copy).
std::vector<unsigned char> bytes_of(const Tensor& t);
std::string describe(const Tensor& t);
// "" when got and want agree (same shape and dtype; bit for bit, or within atol + rtol * |want|
// when tolerant); otherwise what differs first.
std::string difference(const Tensor& got, const Tensor& want, bool tolerant = false,
                       double atol = 0, double rtol = 0);
// As difference, except that every NaN matches every NaN (which NaN an operation on two NaNs
// returns is the hardware's choice).
std::string difference_but_nan(const Tensor& got, const Tensor& want);
// The seed set before every call of an op (tg::manual_seed): an op that draws random numbers
// (dropout) then gives the same values on every call, so that function vs method, in-place vs
// out-of-place, the finite differences of gradcheck and the CPU vs a device compare like with like.
inline constexpr uint64_t kOpSeed = 0x5eed;
// Seeded values uniform in [-1, 1), shaped like t.
Tensor random_like(const Tensor& t, uint64_t seed);
const char* error_kind(const Error& e);

// Every input's layout and bytes, to show that a call left them alone.
struct Snapshot {
  std::vector<Shape> shapes, strides;
  std::vector<std::vector<unsigned char>> bytes;
};
Snapshot snapshot(const std::vector<Value>& args, const std::vector<TensorSlot>& slots);

// The op check on options.device (device.cpp), against the CPU backend.
OpReport check_op_on_device(const OpInfo& op, const CheckOptions& options);

class OpChecker {
 public:
  using Call = std::function<std::vector<Tensor>(const std::vector<Value>&)>;
  OpChecker(const OpInfo& op, const CheckOptions& options);
  OpReport run();

 private:
  // check.cpp
  CaseReport& open_case(const Sample& s, DType dtype, const std::string& derived);
  void failure(const std::string& check, const std::string& what);
  void passed(const std::string& check, const std::string& what);
  std::string changed(const std::vector<Value>& args, const std::vector<TensorSlot>& slots,
                      const Snapshot& before, int skip_arg = -1) const;
  std::string slot_name(const TensorSlot& slot) const;
  bool output_differentiable(size_t i) const;
  std::vector<Tensor> differentiable_outputs(std::vector<Tensor> outs) const;
  void check_case(const Sample& s, DType dtype, const Case& c);
  void check_gradients(const Sample& s, const Case& c);
  void check_fused_vs_composed(const Sample& s, const Case& c);
  std::vector<Tensor> backward_of(const Sample& s, const Case& c,
                                  const std::vector<TensorSlot>& subset, bool composed,
                                  bool& fused);
  void check_inplace(const Sample& s, DType dtype, const Case& c, const Tensor& expected);
  bool check_inplace_grad(const Sample& s, const Case& c);
  void check_reject(const Sample& s, const Case& c);
  void expect_rejected(const Sample& s, const std::string& suffix, const Call& fn,
                       const std::vector<Value>& args, const Case& c);
  // derived.cpp
  void check_derived(const Sample& s, const Case& c);
  void derived_like(const Sample& s, const Case& c, const std::string& kind, const Case& variant);
  void derived_alone(const Sample& s, const Case& c, const std::string& kind, const Case& variant);
  void derived_inplace_view(const Sample& s, const Case& c);
  void inplace_view_grad(const Sample& s, const Case& c, const Tensor& orig, int64_t d);
  std::vector<Tensor> gradients(const Sample& s, const Case& c, const std::vector<Tensor>& outs,
                                std::vector<Value>& args, std::vector<Tensor>& leaves) const;

  const OpInfo& op_;
  const CheckOptions& options_;
  const Call call_, call_method_, call_inplace_;
  OpReport report_;
  int self_arg_ = -1;  // position of the arg named self (in-place target)
};

}  // namespace tg::testing::detail
