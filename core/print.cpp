// Printing tensors; see print.h.
#include <tapegrad/core/print.h>

#include <algorithm>
#include <cmath>
#include <iomanip>
#include <sstream>

#include <tapegrad/core/copy.h>

namespace tg {

namespace {

double read_as_double(const TensorBase& t, int64_t linear_index) {
  int64_t offset = 0, rem = linear_index;
  for (size_t i = t.shape().size(); i-- > 0;) {
    offset += (rem % t.shape()[i]) * t.strides()[i];
    rem /= t.shape()[i];
  }
  const char* base = static_cast<const char*>(t.data_ptr());
  return visit_dtype("print", t.dtype(), [&](auto tag) {
    using T = typename decltype(tag)::type;
    return static_cast<double>(reinterpret_cast<const T*>(base)[offset]);
  });
}

struct Printer {
  const TensorBase& t;
  bool floating, all_integral = true;
  int width = 1;
  std::string fmt(double v) const {
    std::ostringstream os;
    if (t.dtype() == kBool) return v != 0 ? "True" : "False";
    if (!floating) {
      os << static_cast<int64_t>(v);
    } else if (std::isnan(v)) {
      os << "nan";
    } else if (std::isinf(v)) {
      os << (v > 0 ? "inf" : "-inf");
    } else if (all_integral) {
      os << std::fixed << std::setprecision(0) << v << ".";
    } else {
      os << std::fixed << std::setprecision(4) << v;
    }
    return os.str();
  }
  void print(std::ostream& os, int64_t dim, int64_t base, int indent) const {
    const int64_t n = t.shape()[static_cast<size_t>(dim)];
    int64_t inner = 1;
    for (size_t i = static_cast<size_t>(dim) + 1; i < t.shape().size(); ++i) inner *= t.shape()[i];
    bool summarize = t.numel() > 1000 && n > 6;
    os << "[";
    for (int64_t i = 0; i < n; ++i) {
      if (summarize && i == 3) {
        os << "...";
        i = n - 3;
        const std::string newline = ",\n" + std::string(static_cast<size_t>(indent + 1), ' ');
        os << (dim + 1 == t.dim() ? std::string(", ") : newline);
      }
      if (dim + 1 == t.dim()) {
        std::string s = fmt(read_as_double(t, base + i));
        const int pad = std::max<int>(0, width - static_cast<int>(s.size()));
        os << std::string(static_cast<size_t>(pad), ' ') << s;
        if (i + 1 < n) os << ", ";
      } else {
        print(os, dim + 1, base + i * inner, indent + 1);
        if (i + 1 < n)
          os << "," << std::string(static_cast<size_t>(t.dim() - dim - 1), '\n')
             << std::string(static_cast<size_t>(indent + 1), ' ');
      }
    }
    os << "]";
  }
};
}  // namespace

void print_tensor(std::ostream& os, const TensorBase& t0, const std::string& note) {
  if (!t0.defined()) {
    os << "tensor(undefined)";
    return;
  }
  TensorBase t = t0;
  if (!t0.device().is_cpu()) {  // a contiguous host copy
    t = empty_strided(t0.shape(), contiguous_strides(t0.shape()), t0.dtype(), Device(kCPU));
    copy_data(t, t0);
  }
  Printer p{t, is_floating(t.dtype())};
  for (int64_t i = 0; i < t.numel(); ++i) {
    double v = read_as_double(t, i);
    if (std::isfinite(v) && v != std::floor(v)) p.all_integral = false;
  }
  for (int64_t i = 0; i < t.numel(); ++i)
    p.width = std::max(p.width, static_cast<int>(p.fmt(read_as_double(t, i)).size()));
  os << "tensor(";
  if (t.dim() == 0) {
    os << p.fmt(read_as_double(t, 0));
  } else if (t.numel() == 0) {
    os << "[]";
  } else {
    p.print(os, 0, 0, 7);
  }
  if (t.numel() == 0 && t.dim() > 1) os << ", size=" << t.shape();
  if (!t0.device().is_cpu()) os << ", device='" << t0.device() << "'";
  if (t.dtype() != kFloat32 && t.dtype() != kInt64 && t.dtype() != kBool)
    os << ", dtype=" << dtype_name(t.dtype());
  os << note << ")";
}

}  // namespace tg
