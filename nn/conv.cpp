#include <tapegrad/nn/conv.h>

#include <cmath>
#include <sstream>

#include <tapegrad/core/error.h>
#include <tapegrad/generated/functions.h>
#include <tapegrad/nn/init.h>
#include <tapegrad/ops/conv.h>
#include <tapegrad/ops/factories.h>

namespace tg::nn {

namespace {

// values expanded to `count` entries (one value repeats); anything else is an error.
std::vector<int64_t> expand(const char* module, const char* name,
                            const std::vector<int64_t>& values, size_t count) {
  TG_CHECK(values.size() == 1 || values.size() == count, ValueError, module, name, " must have 1",
           count == 2 ? " or 2" : "", " values, got ", values.size());
  return values.size() == count ? values : std::vector<int64_t>(count, values[0]);
}

// "(3, 3)" as PyTorch prints a tuple.
std::string tuple(const std::vector<int64_t>& v) {
  std::ostringstream os;
  os << "(";
  for (size_t i = 0; i < v.size(); ++i) os << (i ? ", " : "") << v[i];
  os << (v.size() == 1 ? ",)" : ")");
  return os.str();
}

bool all_equal(const std::vector<int64_t>& v, int64_t x) {
  for (int64_t e : v)
    if (e != x) return false;
  return true;
}

}  // namespace

// ---- Conv1d / Conv2d ---------------------------------------------------------------------------

ConvNd::ConvNd(const char* type_name, int spatial, int64_t in, int64_t out, const IntList& kernel,
               const ConvOptions& options)
    : Module(type_name), in_channels(in), out_channels(out), groups(options.groups),
      spatial_(spatial) {
  const size_t n = static_cast<size_t>(spatial);
  kernel_size = expand(type_name, "kernel_size", kernel.values, n);
  stride = expand(type_name, "stride", options.stride.values, n);
  dilation = expand(type_name, "dilation", options.dilation.values, n);
  padding_name = options.padding.name;
  padding = padding_name.empty() ? expand(type_name, "padding", options.padding.values, n)
                                 : std::vector<int64_t>(n, 0);
  TG_CHECK(padding_name.empty() || padding_name == "same" || padding_name == "valid", ValueError,
           type_name, "padding must be ints, 'same' or 'valid', got '", padding_name, "'");
  TG_CHECK(padding_name != "same" || all_equal(stride, 1), ValueError, type_name,
           "padding='same' is not supported for strided convolutions");
  TG_CHECK(in >= 1 && out >= 1, ValueError, type_name,
           "in_channels and out_channels must be positive, got ", in, " and ", out);
  TG_CHECK(groups >= 1 && in % groups == 0 && out % groups == 0, ValueError, type_name,
           "in_channels (", in, ") and out_channels (", out, ") must be divisible by groups (",
           groups, ")");
  std::vector<int64_t> shape = {out, in / groups};
  shape.insert(shape.end(), kernel_size.begin(), kernel_size.end());
  weight = register_parameter("weight", empty(shape, options.dtype));
  init::kaiming_uniform_(weight, std::sqrt(5.0));
  if (options.bias) {
    bias = register_parameter("bias", empty({out}, options.dtype));
    const double bound = 1.0 / std::sqrt(static_cast<double>(init::fan_in(weight)));
    init::uniform_(bias, -bound, bound);
  }
}

Tensor ConvNd::forward(const Tensor& x) {
  if (spatial_ == 1) {
    return padding_name.empty() ? conv1d(x, weight, bias, stride, padding, dilation, groups)
                                : conv1d(x, weight, bias, stride, padding_name, dilation, groups);
  }
  return padding_name.empty() ? conv2d(x, weight, bias, stride, padding, dilation, groups)
                              : conv2d(x, weight, bias, stride, padding_name, dilation, groups);
}

std::string ConvNd::extra_repr() const {
  std::ostringstream os;
  os << in_channels << ", " << out_channels << ", kernel_size=" << tuple(kernel_size)
     << ", stride=" << tuple(stride);
  if (!padding_name.empty()) {
    os << ", padding=" << padding_name;
  } else if (!all_equal(padding, 0)) {
    os << ", padding=" << tuple(padding);
  }
  if (!all_equal(dilation, 1)) os << ", dilation=" << tuple(dilation);
  if (groups != 1) os << ", groups=" << groups;
  if (!bias.defined()) os << ", bias=false";
  return os.str();
}

// ---- pooling -----------------------------------------------------------------------------------

MaxPool2d::MaxPool2d(const IntList& kernel, const MaxPoolOptions& options)
    : Module("MaxPool2d"), kernel_size(kernel.values),
      stride(options.stride.values.empty() ? kernel.values : options.stride.values),
      padding(options.padding.values), dilation(options.dilation.values),
      ceil_mode(options.ceil_mode) {}

Tensor MaxPool2d::forward(const Tensor& x) {
  return std::get<0>(max_pool2d(x, kernel_size, stride, padding, dilation, ceil_mode));
}

namespace {
// A PyTorch-style value: "2" for one value, "(2, 3)" for several.
std::string value(const std::vector<int64_t>& v) {
  return v.size() == 1 ? std::to_string(v[0]) : tuple(v);
}
}  // namespace

std::string MaxPool2d::extra_repr() const {
  return "kernel_size=" + value(kernel_size) + ", stride=" + value(stride) +
         ", padding=" + value(padding) + ", dilation=" + value(dilation) +
         ", ceil_mode=" + (ceil_mode ? "true" : "false");
}

AvgPool2d::AvgPool2d(const IntList& kernel, const AvgPoolOptions& options)
    : Module("AvgPool2d"), kernel_size(kernel.values),
      stride(options.stride.values.empty() ? kernel.values : options.stride.values),
      padding(options.padding.values), ceil_mode(options.ceil_mode),
      count_include_pad(options.count_include_pad), divisor_override(options.divisor_override) {}

Tensor AvgPool2d::forward(const Tensor& x) {
  return avg_pool2d(x, kernel_size, stride, padding, ceil_mode, count_include_pad,
                    divisor_override);
}

std::string AvgPool2d::extra_repr() const {
  return "kernel_size=" + value(kernel_size) + ", stride=" + value(stride) +
         ", padding=" + value(padding);
}

AdaptiveAvgPool2d::AdaptiveAvgPool2d(const IntList& size)
    : Module("AdaptiveAvgPool2d"), output_size(size.values) {}

Tensor AdaptiveAvgPool2d::forward(const Tensor& x) { return adaptive_avg_pool2d(x, output_size); }

std::string AdaptiveAvgPool2d::extra_repr() const { return "output_size=" + value(output_size); }

// ---- Flatten -----------------------------------------------------------------------------------

Flatten::Flatten(int64_t start, int64_t end) : Module("Flatten"), start_dim(start), end_dim(end) {}

Tensor Flatten::forward(const Tensor& x) { return flatten(x, start_dim, end_dim); }

std::string Flatten::extra_repr() const {
  return "start_dim=" + std::to_string(start_dim) + ", end_dim=" + std::to_string(end_dim);
}

}  // namespace tg::nn
