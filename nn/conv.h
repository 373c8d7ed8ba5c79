#pragma once
// Convolution and pooling layers: Conv1d, Conv2d, MaxPool2d, AvgPool2d, AdaptiveAvgPool2d, and
// Flatten. Parameter names, shapes and initialisation follow PyTorch's.
//
//   auto conv = std::make_shared<tg::nn::Conv2d>(1, 16, 3, tg::nn::ConvOptions{.padding = 1});
//   auto same = std::make_shared<tg::nn::Conv2d>(16, 16, 3, tg::nn::ConvOptions{.padding =
//   "same"}); auto pool = std::make_shared<tg::nn::MaxPool2d>(2);
#include <cstdint>
#include <initializer_list>
#include <optional>
#include <string>
#include <string_view>
#include <type_traits>
#include <vector>

#include <tapegrad/nn/module.h>

namespace tg::nn {

// An int or a list of ints (kernel_size, stride, ...): 3 and {3, 5} both work.
struct IntList {
  IntList() = default;
  IntList(int64_t v) : values{v} {}  // NOLINT: implicit, like PyTorch's int-or-tuple arguments
  IntList(std::initializer_list<int64_t> l) : values(l) {}
  IntList(std::vector<int64_t> v) : values(std::move(v)) {}  // NOLINT
  std::vector<int64_t> values;
};

// A conv's padding: ints, or "same" / "valid".
struct ConvPadding {
  ConvPadding(int64_t v) : values{v} {}  // NOLINT
  ConvPadding(std::initializer_list<int64_t> l) : values(l) {}
  ConvPadding(std::vector<int64_t> v) : values(std::move(v)) {}  // NOLINT
  template <typename S,
            std::enable_if_t<std::is_convertible_v<const S&, std::string_view>, int> = 0>
  ConvPadding(const S& name) : name(std::string_view(name)) {}  // NOLINT
  std::vector<int64_t> values;                                  // used when name is empty
  std::string name;                                             // "same" or "valid"
};

struct ConvOptions {
  IntList stride = 1;
  ConvPadding padding = 0;
  IntList dilation = 1;
  int64_t groups = 1;
  bool bias = true;
  DType dtype = kFloat32;
};

// Shared by Conv1d and Conv2d: weight [out, in / groups, *kernel_size] and bias [out], both
// U(-1/sqrt(fan_in), 1/sqrt(fan_in)) with fan_in = in / groups * prod(kernel_size) (PyTorch's
// kaiming_uniform_ with a = sqrt(5)).
class ConvNd : public Module {
 public:
  Tensor forward(const Tensor& x) override;
  std::string extra_repr() const override;

  Tensor weight, bias;  // bias is undefined when built without one
  int64_t in_channels, out_channels, groups;
  std::vector<int64_t> kernel_size, stride, padding, dilation;  // one value per spatial dim
  std::string padding_name;                                     // "same" / "valid", or empty

 protected:
  ConvNd(const char* type_name, int spatial, int64_t in_channels, int64_t out_channels,
         const IntList& kernel_size, const ConvOptions& options);
  int spatial_;
};

// Input [N, in, L] or [in, L] -> [N, out, L_out].
class Conv1d : public ConvNd {
 public:
  Conv1d(int64_t in_channels, int64_t out_channels, const IntList& kernel_size,
         const ConvOptions& options = {})
      : ConvNd("Conv1d", 1, in_channels, out_channels, kernel_size, options) {}
};

// Input [N, in, H, W] or [in, H, W] -> [N, out, H_out, W_out].
class Conv2d : public ConvNd {
 public:
  Conv2d(int64_t in_channels, int64_t out_channels, const IntList& kernel_size,
         const ConvOptions& options = {})
      : ConvNd("Conv2d", 2, in_channels, out_channels, kernel_size, options) {}
};

struct MaxPoolOptions {
  IntList stride = {};  // empty: kernel_size
  IntList padding = 0;
  IntList dilation = 1;
  bool ceil_mode = false;
};

// The maximum of each window (forward returns the values; tg::max_pool2d also gives indices).
class MaxPool2d : public Module {
 public:
  explicit MaxPool2d(const IntList& kernel_size, const MaxPoolOptions& options = {});
  Tensor forward(const Tensor& x) override;
  std::string extra_repr() const override;
  std::vector<int64_t> kernel_size, stride, padding, dilation;
  bool ceil_mode;
};

struct AvgPoolOptions {
  IntList stride = {};  // empty: kernel_size
  IntList padding = 0;
  bool ceil_mode = false;
  bool count_include_pad = true;
  std::optional<int64_t> divisor_override = std::nullopt;
};

class AvgPool2d : public Module {
 public:
  explicit AvgPool2d(const IntList& kernel_size, const AvgPoolOptions& options = {});
  Tensor forward(const Tensor& x) override;
  std::string extra_repr() const override;
  std::vector<int64_t> kernel_size, stride, padding;
  bool ceil_mode, count_include_pad;
  std::optional<int64_t> divisor_override;
};

// Averages [.., H, W] down to output_size ([.., OH, OW]) whatever H and W are.
class AdaptiveAvgPool2d : public Module {
 public:
  explicit AdaptiveAvgPool2d(const IntList& output_size);
  Tensor forward(const Tensor& x) override;
  std::string extra_repr() const override;
  std::vector<int64_t> output_size;
};

// Merges dims start_dim..end_dim into one (a view when the strides allow).
class Flatten : public Module {
 public:
  explicit Flatten(int64_t start_dim = 1, int64_t end_dim = -1);
  Tensor forward(const Tensor& x) override;
  std::string extra_repr() const override;
  int64_t start_dim, end_dim;
};

}  // namespace tg::nn
