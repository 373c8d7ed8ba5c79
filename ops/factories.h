#pragma once
// Tensor factories. Default dtype is float32 (as in PyTorch); integral ranges default to int64.
#include <cstdint>
#include <initializer_list>
#include <optional>
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

// From host data, row-major: double -> float64, float -> float32, int64_t -> int64,
// int32_t -> int32, bool -> bool. Without a shape: a 1-d tensor of all the values. With one: that
// shape, which needs exactly its number of values, so an empty shape {} is a 0-d tensor of one
// value (as torch.tensor(3.0)), never a 1-d tensor.
Tensor tensor(const std::vector<double>& data);
Tensor tensor(const std::vector<float>& data);
Tensor tensor(const std::vector<int64_t>& data);
Tensor tensor(const std::vector<int32_t>& data);
Tensor tensor(const std::vector<bool>& data);
Tensor tensor(const std::vector<double>& data, IntArrayRef shape);
Tensor tensor(const std::vector<float>& data, IntArrayRef shape);
Tensor tensor(const std::vector<int64_t>& data, IntArrayRef shape);
Tensor tensor(const std::vector<int32_t>& data, IntArrayRef shape);
Tensor tensor(const std::vector<bool>& data, IntArrayRef shape);
// Nested initializer lists, 1 to 3 levels: tg::tensor({{1., 2.}, {3., 4.}}) is a 2x2 float64
// tensor; {1, 2} (int) gives int64, {1.f} float32, {true} bool.
template <typename T> using List1 = std::initializer_list<T>;
template <typename T> using List2 = std::initializer_list<List1<T>>;
template <typename T> using List3 = std::initializer_list<List2<T>>;
#define TG_DECLARE_NESTED_TENSOR(T) \
  Tensor tensor(List1<T> data);     \
  Tensor tensor(List2<T> data);     \
  Tensor tensor(List3<T> data);
TG_DECLARE_NESTED_TENSOR(double)
TG_DECLARE_NESTED_TENSOR(float)
TG_DECLARE_NESTED_TENSOR(int)
TG_DECLARE_NESTED_TENSOR(int64_t)
TG_DECLARE_NESTED_TENSOR(bool)
#undef TG_DECLARE_NESTED_TENSOR
Tensor scalar_tensor(const Scalar& s, std::optional<DType> dtype = std::nullopt,
                     Device device = {});

}  // namespace tg
