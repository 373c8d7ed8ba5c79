#pragma once
// Tensor factories. Default dtype is float32 (as in PyTorch); integral ranges default to int64.
#include <cstdint>
#include <initializer_list>
#include <optional>
#include <type_traits>
#include <vector>

#include <tapegrad/generated/tensor.h>

namespace tg {

Tensor empty(IntArrayRef shape, DType dtype = kFloat32, Device device = {});
Tensor zeros(IntArrayRef shape, DType dtype = kFloat32, Device device = {});
Tensor ones(IntArrayRef shape, DType dtype = kFloat32, Device device = {});
// dtype defaults to the scalar's kind: bool, int64, or float32 for floating values.
Tensor full(IntArrayRef shape, const Scalar& value, std::optional<DType> dtype = std::nullopt,
            Device device = {});
Tensor empty_like(const Tensor& t);
Tensor zeros_like(const Tensor& t);
Tensor ones_like(const Tensor& t);
Tensor full_like(const Tensor& t, const Scalar& value);

// [start, end) in steps; dtype int64 when all three are integral, else float32.
Tensor arange(const Scalar& end, std::optional<DType> dtype = std::nullopt, Device device = {});
Tensor arange(const Scalar& start, const Scalar& end, const Scalar& step = 1,
              std::optional<DType> dtype = std::nullopt, Device device = {});
Tensor linspace(double start, double end, int64_t steps, DType dtype = kFloat32,
                Device device = {});
Tensor eye(int64_t n, std::optional<int64_t> m = std::nullopt, DType dtype = kFloat32,
           Device device = {});

// Random numbers from the global seedable generator (a 64-bit counter-based stream).
void manual_seed(uint64_t seed);
Tensor rand(IntArrayRef shape, DType dtype = kFloat32, Device device = {});   // U[0, 1)
Tensor randn(IntArrayRef shape, DType dtype = kFloat32, Device device = {});  // N(0, 1)
Tensor randint(int64_t low, int64_t high, IntArrayRef shape, DType dtype = kInt64,
               Device device = {});
uint64_t random_u64();  // next raw value of the global generator

// The argument of tg::tensor({{1., 2.}, {3., 4.}}): numbers in braced lists nested to any depth,
// rectangular. Each number keeps its C++ type and the tensor takes the widest of them: bool <
// integers (int64) < float (float32) < double (float64), so {1, 2} is int64, {1.f} float32,
// {{1, 2.5}} float64, {true} bool and {} an empty float32 tensor. One recursive type (as
// torch::tensor's) rather than an overload per depth and element type, which clang ranks as
// ambiguous. It points into the caller's braced lists, which live until the end of the call.
class NestedList {
 public:
  enum class Kind : uint8_t { kBool, kInteger, kFloat, kDouble, kList };
  template <typename T>
  requires std::is_arithmetic_v<T> NestedList(
      T value) {  // NOLINT(google-explicit-constructor): a number written in the list
    if constexpr (std::is_same_v<T, bool>) {
      kind_ = Kind::kBool;
      integer_ = value ? 1 : 0;
    } else if constexpr (std::is_integral_v<T>) {
      kind_ = Kind::kInteger;
      // An unsigned value past int64's range is kept as a flag: tg::tensor raises on it.
      too_large_ = std::is_unsigned_v<T> && static_cast<uint64_t>(value) > uint64_t{INT64_MAX};
      integer_ = too_large_ ? 0 : static_cast<int64_t>(value);
    } else {
      kind_ = std::is_same_v<T, float> ? Kind::kFloat : Kind::kDouble;
      real_ = static_cast<double>(value);
    }
  }
#if defined(__GNUC__) && !defined(__clang__)  // a GCC-only warning name
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Winit-list-lifetime"  // the lists outlive the call: by design
#endif
  NestedList(std::initializer_list<NestedList> items)  // NOLINT(google-explicit-constructor)
      : kind_(Kind::kList), items_(items.begin()), size_(items.size()) {}
#if defined(__GNUC__) && !defined(__clang__)
#pragma GCC diagnostic pop
#endif

  Kind kind() const { return kind_; }
  bool is_list() const { return kind_ == Kind::kList; }
  size_t size() const { return size_; }
  const NestedList& operator[](size_t i) const { return items_[i]; }
  int64_t integer() const { return integer_; }  // bool and integer numbers
  double real() const { return real_; }         // float and double numbers
  bool too_large() const { return too_large_; }

 private:
  Kind kind_;
  bool too_large_ = false;
  int64_t integer_ = 0;
  double real_ = 0;
  const NestedList* items_ = nullptr;
  size_t size_ = 0;
};

// From host data, row-major: double -> float64, float -> float32, int64_t -> int64,
// int32_t -> int32, bool -> bool. Without a shape: a 1-d tensor of all the values. With one: that
// shape, which needs exactly its number of values, so an empty shape {} is a 0-d tensor of one
// value (as torch.tensor(3.0)), never a 1-d tensor. (The one-argument form is a template so that
// a braced list always means the NestedList form below.)
template <typename T>
concept HostElement = std::is_same_v<T, double> || std::is_same_v<T, float> ||
    std::is_same_v<T, int64_t> || std::is_same_v<T, int32_t> || std::is_same_v<T, bool>;
template <HostElement T> Tensor tensor(const std::vector<T>& data);
Tensor tensor(const std::vector<double>& data, IntArrayRef shape);
Tensor tensor(const std::vector<float>& data, IntArrayRef shape);
Tensor tensor(const std::vector<int64_t>& data, IntArrayRef shape);
Tensor tensor(const std::vector<int32_t>& data, IntArrayRef shape);
Tensor tensor(const std::vector<bool>& data, IntArrayRef shape);
// Nested braced lists: tg::tensor({{1., 2.}, {3., 4.}}) is a 2x2 float64 tensor, tg::tensor(3.)
// a 0-d one (see NestedList for the dtype).
Tensor tensor(const NestedList& data);
Tensor scalar_tensor(const Scalar& s, std::optional<DType> dtype = std::nullopt,
                     Device device = {});

}  // namespace tg
