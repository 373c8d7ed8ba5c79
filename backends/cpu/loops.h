#pragma once
// The CPU elementwise engine. Every elementwise kernel is one call of a helper below with a lambda
// for one element, e.g.
//   Tensor exp(const Tensor& self) {
//     return unary_float_op("exp", self, [](auto x) { return std::exp(x); });
//   }
//   Tensor mul(const Tensor& self, const Tensor& other) {
//     return binary_op("mul", self, other, [](auto a, auto b) { return a * b; });
//   }
// The helpers pick the output dtype (PyTorch type promotion) and shape (NumPy broadcasting),
// allocate a fresh contiguous output and run the lambda with the compute type T:
//   flat loop   every input contiguous with the output's shape, or a single value broadcast:
//               a loop over raw pointers that the compiler vectorises, split across threads
//               when large; 1-element calls allocate nothing but the output.
//   strided     anything else (transposed inputs, broadcasting along inner dims): an N-d loop
//               over strides.
#include <tapegrad/backends/cpu/one_value.h>
#include <tapegrad/backends/cpu/simd/vec_binary.h>
#include <tapegrad/backends/cpu/strided_walk.h>
#include <tapegrad/core/checked.h>
#include <tapegrad/core/copy.h>
#include <tapegrad/core/cpu_features.h>
#include <tapegrad/core/error.h>
#include <tapegrad/core/inplace_target.h>
#include <tapegrad/core/parallel.h>
#include <tapegrad/core/scalar.h>
#include <tapegrad/generated/tensor.h>
#include <tapegrad/ops/factories.h>

#include <algorithm>
#include <array>
#include <bit>
#include <cstdint>
#include <memory>
#include <tuple>
#include <type_traits>
#include <utility>

namespace tg::cpu {

// ---- dtypes ----------------------------------------------------------------------------------

// Which dtypes a helper compiles its lambda for: all, or all but bool (ops such as neg and abs
// that reject bool; their spec's dtypes list rejects bool before the kernel runs).
enum class Types { All, NoBool };

template <Types kTypes, typename Fn> void visit(const char* op, DType t, Fn&& fn) {
  if constexpr (kTypes == Types::All) {
    visit_dtype(op, t, fn);
  } else {
    switch (t) {
      case kInt32: return fn(TypeTag<int32_t>{});
      case kInt64: return fn(TypeTag<int64_t>{});
      case kFloat32: return fn(TypeTag<float>{});
      case kFloat64: return fn(TypeTag<double>{});
      default: throw_unsupported_dtype(op, t);
    }
  }
}

// The one element of a one-element tensor of any dtype, converted to T.
template <typename T> T load_one(const Tensor& t) {
  if (t.dtype() == dtype_of<T>()) return *t.data<T>();  // the common case, without a switch
  return visit_dtype("elementwise", t.dtype(), [&](auto tag) {
    using S = typename decltype(tag)::type;
    return convert_value<T>(*t.data<S>());  // 1e19 into int32 is defined, as in .to()
  });
}

// ---- operands ----------------------------------------------------------------------------------

// One input of a loop, read as element type T. Lives within one op call, like the input it
// points to: holding a copy of the input cost two atomic reference-count updates per operand.
template <typename T> struct Operand {
  const T* data = nullptr;         // elements of *tensor
  T value{};                       // the element, when single
  bool single = false;             // one element, broadcast to every output position
  bool dense = false;              // contiguous with the output's shape
  const Tensor* tensor = nullptr;  // the input, or `converted`
  Tensor converted;                // the input in T's dtype, when it had another

  Operand(const Tensor& t, const Shape& out_shape) {
    if (t.numel() == 1 || holds_one_value(t)) {  // read directly: no conversion, no allocation
      single = true;
      value = load_one<T>(t);
      return;
    }
    if (t.dtype() == dtype_of<T>()) {
      tensor = &t;
      if (reads_across_lines(t, out_shape)) {  // a transposed view: copied blocked first
        converted = t.contiguous();
        tensor = &converted;
      }
    } else {
      converted = t.to(dtype_of<T>());
      tensor = &converted;
    }
    data = tensor->data<T>();
    dense = tensor->shape() == out_shape && tensor->is_contiguous();
  }
  // Whether the walk would read t a cache line per element: its values along the output's rows
  // lie a line or more apart (a transposed view of at least a grain). contiguous() copies such a
  // tensor in cache-sized blocks (core/copy.cpp) far faster than the walk reads it: a * 2 of a
  // transposed [4096, 1024] took 11 ms through the walk, the copy 0.7 ms.
  static bool reads_across_lines(const Tensor& t, const Shape& out_shape) {
    return t.dim() >= 2 && t.shape() == out_shape && t.size(-1) > 1 &&
           t.numel() >= kElementwiseGrain &&
           t.stride(-1) * static_cast<int64_t>(sizeof(T)) >= 64;  // a cache line
  }
  Operand(const Operand&) = delete;  // `tensor` may point into this object
  Operand& operator=(const Operand&) = delete;
  const T* pointer() const { return single ? &value : data; }
  // Element strides walking the output's shape (0 along broadcast dims).
  Shape strides_for(const Shape& out_shape) const {
    return single ? Shape(out_shape.size(), 0)
                  : broadcast_strides("elementwise", *tensor, out_shape);
  }
};

// A single value that reads like an array, so one flat loop serves pointers and scalars.
template <typename T> struct Broadcast {
  T value;
  T operator[](int64_t) const { return value; }
};
template <typename S> constexpr bool kIsBroadcast = false;
template <typename T> constexpr bool kIsBroadcast<Broadcast<T>> = true;

// A bool array read as bytes (0 or 1 in a tensor): GCC 12 vectorises no loop that loads bool,
// and one that loads bytes and compares them with 0 it does. Every loop below reads bool
// operands through this.
struct BoolBytes {
  const uint8_t* bytes;
  bool operator[](int64_t i) const { return bytes[i] != 0; }
};
template <typename T> const T* as_source(const T* p) { return p; }
inline BoolBytes as_source(const bool* p) { return {reinterpret_cast<const uint8_t*>(p)}; }

// c ? a : b by its bits, without a branch (c is 0 or 1): with a random condition a branch per
// element mispredicts every other time, and the compiler turns no `?:` between values of
// different widths (a bool and a float) into vector code. where and masked_fill use it.
template <typename T> T select_bits(bool c, T a, T b) {
  using Bits = std::conditional_t<sizeof(T) == 8, uint64_t,
                                  std::conditional_t<sizeof(T) == 4, uint32_t, uint8_t>>;
  static_assert(sizeof(Bits) == sizeof(T));
  const Bits mask = static_cast<Bits>(Bits{0} - static_cast<Bits>(c));
  return std::bit_cast<T>(
      static_cast<Bits>((std::bit_cast<Bits>(a) & mask) | (std::bit_cast<Bits>(b) & ~mask)));
}

// ---- the flat loop ---------------------------------------------------------------------------

template <typename Out, typename Fn, typename... Src>
void flat_chunk_base(Out* __restrict out, int64_t begin, int64_t end, const Fn& fn, Src... src) {
  for (int64_t i = begin; i < end; ++i) out[i] = static_cast<Out>(fn(src[i]...));
}

#if defined(__x86_64__) && defined(__GNUC__)
// The same loop compiled for AVX2 (8 floats or 4 doubles per instruction instead of SSE2's 4 or
// 2), taken at run time on CPUs that have it, for the float32, float64 and bool outputs of unary
// and binary ops only (each clone is code: the integer dtypes are rarely the hot ones; float64
// is gradcheck's, and its SSE2 loops took 1.2-1.7x libtorch's time). Operations are the same IEEE
// ones, element by element, so results match the SSE2 loop's.
template <typename Out, typename Fn, typename... Src>
__attribute__((target("avx2"))) void flat_chunk_avx2(Out* __restrict out, int64_t begin,
                                                     int64_t end, const Fn& fn, Src... src) {
  for (int64_t i = begin; i < end; ++i) out[i] = static_cast<Out>(fn(src[i]...));
}
#endif

// An element function that also names the row kernel of simd/vec_binary.h computing the same
// IEEE operation on float32 (add, sub, mul, div): the loops below run float32 rows through it.
template <vec::Binary kOp, typename Fn> struct WithRowKernel : Fn {
  static constexpr vec::Binary kRowKernel = kOp;
};
template <vec::Binary kOp, typename Fn> WithRowKernel<kOp, Fn> with_row_kernel(const Fn& fn) {
  return {fn};
}

template <typename S> constexpr bool kFloatSource =
    std::is_same_v<S, const float*> || std::is_same_v<S, Broadcast<float>>;
inline const float* row_start(const float* p, int64_t begin) { return p + begin; }
inline const float* row_start(const Broadcast<float>& b, int64_t) { return &b.value; }

// Runs out[begin, end) through fn's row kernel when it has one and the operands are float32
// arrays or one float32 scalar; false when the caller must run its own loop.
template <typename Out, typename Fn, typename... Src>
bool row_kernel(Out* out, int64_t begin, int64_t end, vec::Stores stores, Src... src) {
  if constexpr (requires { Fn::kRowKernel; } && std::is_same_v<Out, float> && sizeof...(Src) == 2 &&
                (... && kFloatSource<Src>)) {
    using A = std::tuple_element_t<0, std::tuple<Src...>>;
    using B = std::tuple_element_t<1, std::tuple<Src...>>;
    if constexpr (!(std::is_same_v<A, Broadcast<float>> && std::is_same_v<B, Broadcast<float>>)) {
      const vec::BinaryIsa* isa = vec::binary_best();
      if (!isa) return false;
      constexpr vec::Operands form = std::is_same_v<A, Broadcast<float>>   ? vec::Operands::scalar_a
                                     : std::is_same_v<B, Broadcast<float>> ? vec::Operands::scalar_b
                                                                           : vec::Operands::arrays;
      isa->row(Fn::kRowKernel, form, stores)(out + begin, row_start(src, begin)..., end - begin);
      return true;
    }
  }
  return false;
}

// stores: how the row kernels write (the other loops write through the cache).
template <typename Out, typename Fn, typename... Src>
void flat_chunk(Out* __restrict out, int64_t begin, int64_t end, const Fn& fn, vec::Stores stores,
                Src... src) {
  if (row_kernel<Out, Fn>(out, begin, end, stores, src...)) return;
#if defined(__x86_64__) && defined(__GNUC__)
  if constexpr ((std::is_same_v<Out, float> || std::is_same_v<Out, double> ||
                 std::is_same_v<Out, bool>)&&sizeof...(Src) <= 2) {
    if (cpu_has_avx2()) {
      flat_chunk_avx2(out, begin, end, fn, src...);
      return;
    }
  }
#endif
  flat_chunk_base(out, begin, end, fn, src...);
}

// stores: set by run_operands for the whole result.
template <typename Out, typename Fn, typename... Src>
void flat_loop(Out* out, int64_t n, const Fn& fn, vec::Stores stores, Src... src) {
  if (n <= kElementwiseGrain) {  // small: no thread hand-off, no std::function
    flat_chunk(out, 0, n, fn, stores, src...);
    return;
  }
  parallel_for(0, n, kElementwiseGrain, [&](int64_t begin, int64_t end) {
    flat_chunk(out, begin, end, fn, stores, src...);
    if (stores == vec::Stores::streaming) stream_fence();
  });
}

// Calls run(src...) with each operand as a raw pointer (dense) or a Broadcast (single): the
// flat loop is compiled once per combination, so each version is a plain vectorisable loop.
template <typename Run, typename... Src>
void with_sources(const Run& run, std::tuple<Src...> done) {
  std::apply(run, done);
}
template <typename Run, typename... Src, typename T, typename... Rest>
void with_sources(const Run& run, std::tuple<Src...> done, const Operand<T>& next,
                  const Operand<Rest>&... rest) {
  if (next.single) {
    with_sources(run, std::tuple_cat(done, std::tuple(Broadcast<T>{next.value})), rest...);
  } else {
    with_sources(run, std::tuple_cat(done, std::tuple(as_source(next.data))), rest...);
  }
}

// ---- the strided loop ------------------------------------------------------------------------

// Anything the flat loop cannot take (transposed inputs, broadcasting along inner dims): the walk
// of strided_walk.h, compiled once, calls two row functions compiled here per op and dtype.
// in_place: out is one of the inputs (a += b); stores: set by run_operands for the result.
template <typename Out, typename... In, typename Fn>
void strided_loop(const Tensor& out, const Fn& fn, bool in_place, vec::Stores stores,
                  const Operand<In>&... ops) {
  constexpr size_t N = sizeof...(In);
  static_assert(N <= kMaxWalkOperands);
  // add/sub/mul/div rows of float32 arrays go to their row kernels (simd/vec_binary.h), looked
  // up once per call, not once per row (with 1024-element rows the per-row lookup was measurable).
  constexpr bool kFloatRows = (requires { Fn::kRowKernel; }) && std::is_same_v<Out, float> &&
                              N == 2 && (... && std::is_same_v<In, float>);
  struct Context {
    Out* out;
    std::tuple<const In*...> base;
    const Fn* fn;
    bool in_place;
    vec::Stores stores;
    vec::BinaryRow row_kernel;
    vec::BinaryRow scalar_a_kernel, scalar_b_kernel;  // a[0] op b[i], a[i] op b[0]
  };
  // A single value (x / 4096) goes in as one row of copies along the output's last dim, read
  // with step 1 there and 0 elsewhere: the walk then hands unit-step rows to the vector loops,
  // not one element at a time to any_row ([1, 1024] expanded to [4096, 1024] / 4096: 4x faster).
  // Rows up to kMaxSpreadRow: the copies stay in the L2, and a long 1-d strided operand does not
  // get a temporary the size of the result.
  constexpr int64_t kMaxSpreadRow = int64_t{1} << 16;
  const int64_t row_len = out.dim() > 0 ? out.shape().back() : 1;
  std::tuple<std::unique_ptr<In[]>...> spread;
  const auto spread_if_single = [row_len](auto& row, const auto& op) {
    if (!op.single || row_len < 2 || row_len > kMaxSpreadRow) return;
    row = std::make_unique<std::remove_cvref_t<decltype(op.value)>[]>(static_cast<size_t>(row_len));
    std::fill_n(row.get(), row_len, op.value);
  };
  [&]<size_t... K>(std::index_sequence<K...>) { (..., spread_if_single(std::get<K>(spread), ops)); }
  (std::index_sequence_for<In...>{});
  const auto base_of = [](const auto& row, const auto& op) {
    return row ? static_cast<decltype(op.pointer())>(row.get()) : op.pointer();
  };
  Context ctx = [&]<size_t... K>(std::index_sequence<K...>) {
    return Context{out.data<Out>(),
                   {base_of(std::get<K>(spread), ops)...},
                   &fn,
                   in_place,
                   stores,
                   nullptr,
                   nullptr,
                   nullptr};
  }
  (std::index_sequence_for<In...>{});
  if constexpr (kFloatRows) {
    if (const vec::BinaryIsa* isa = vec::binary_best()) {
      ctx.row_kernel = isa->row(Fn::kRowKernel, vec::Operands::arrays, stores);
      ctx.scalar_a_kernel = isa->row(Fn::kRowKernel, vec::Operands::scalar_a, stores);
      ctx.scalar_b_kernel = isa->row(Fn::kRowKernel, vec::Operands::scalar_b, stores);
    }
  }

  // Rows where every input has step 1 ([m, n] + [n]): a flat run over raw pointers. Other
  // functions than the row kernels take the AVX2 clone only when the rows are written in place
  // (a += b): there it takes far fewer cycles than the SSE2 loop, but writing a separate result
  // ([m, n] + [n] out of place) it was measured slower than SSE2 on this machine's AMD EPYC (a
  // flat [n] + [n] was not), so those rows keep the SSE2 loop. All compute the same IEEE
  // operations element by element.
  WalkUnitRows unit_rows = [](const void* c, int64_t out_index, const int64_t* offset,
                              const int64_t* row_step, int64_t rows, int64_t count) {
    const Context& x = *static_cast<const Context*>(c);
    [&]<size_t... K>(std::index_sequence<K...>) {
      const std::tuple<const In*...> first{(std::get<K>(x.base) + offset[K])...};
      const std::array<int64_t, N> s{row_step[K]...};
      Out* const o = x.out + out_index;
      if constexpr (kFloatRows) {
        if (x.row_kernel) {
          for (int64_t r = 0; r < rows; ++r)
            x.row_kernel(o + r * count, (std::get<K>(first) + r * s[K])..., count);
          return;
        }
      }
      const bool vector_clone = x.in_place || requires { Fn::kRowKernel; };  // once per run
      for (int64_t r = 0; r < rows; ++r) {
        if (vector_clone)
          flat_chunk(o + r * count, 0, count, *x.fn, x.stores,
                     as_source(std::get<K>(first) + r * s[K])...);
        else
          flat_chunk_base(o + r * count, 0, count, *x.fn,
                          as_source(std::get<K>(first) + r * s[K])...);
      }
    }
    (std::index_sequence_for<In...>{});
  };
  WalkRow any_row = [](const void* c, int64_t out_index, const int64_t* offset, const int64_t* step,
                       int64_t count) {
    const Context& x = *static_cast<const Context*>(c);
    [&]<size_t... K>(std::index_sequence<K...>) {
      const std::tuple<const In*...> p{(std::get<K>(x.base) + offset[K])...};
      const std::array<int64_t, N> s{step[K]...};  // local: an int64 output could alias step
      Out* o = x.out + out_index;
      // Steps of 0 and 1 only ([m, n] - [m, 1], a column broadcast along rows; the walk hands
      // over whole rows): a float32 add/sub/mul/div row goes to its row kernel's scalar form
      // (x - col: 1.6 -> ~1.0x libtorch's time); other ops get each step-0 operand's value
      // spread over blocks on the stack, then the same vector loop as unit rows (element by
      // element, this walk took 4x the time of the vector loop).
      if ((... && (s[K] <= 1))) {
        if constexpr (kFloatRows) {
          const float* a = std::get<0>(p);
          const float* b = std::get<1>(p);
          if (s[0] == 1 && s[1] == 0 && x.scalar_b_kernel) return x.scalar_b_kernel(o, a, b, count);
          if (s[0] == 0 && s[1] == 1 && x.scalar_a_kernel) return x.scalar_a_kernel(o, a, b, count);
        }
        static_assert((... && (sizeof(In) <= sizeof(double))));
        // Raw bytes, not std::array in a std::tuple: a tuple zeroes its members, a memset per
        // block that took most of the time.
        alignas(64) unsigned char spread[sizeof...(In)][kWalkBlock * sizeof(double)];
        for (int64_t j0 = 0; j0 < count; j0 += kWalkBlock) {
          const int64_t len = std::min(count - j0, kWalkBlock);
          const auto spread_if_step0 = [len, j0](const auto* at, int64_t step_k,
                                                 unsigned char* raw) {
            if (step_k == 1) return at + j0;
            auto* block = reinterpret_cast<std::remove_cvref_t<decltype(*at)>*>(raw);
            std::fill_n(block, len, *at);
            return static_cast<decltype(at)>(block);
          };
          const std::tuple<const In*...> q{spread_if_step0(std::get<K>(p), s[K], spread[K])...};
          if (x.in_place || requires { Fn::kRowKernel; })  // as unit_rows picks its loop
            flat_chunk(o + j0, 0, len, *x.fn, x.stores, as_source(std::get<K>(q))...);
          else
            flat_chunk_base(o + j0, 0, len, *x.fn, as_source(std::get<K>(q))...);
        }
        return;
      }
      for (int64_t j = 0; j < count; ++j)
        o[j] = static_cast<Out>((*x.fn)(std::get<K>(p)[j * s[K]]...));
    }
    (std::index_sequence_for<In...>{});
  };

  StridedWalk walk;
  walk.shape = out.shape();
  size_t k = 0;
  const auto strides_of = [&](const auto& row, const auto& op) {
    if (!row) return op.strides_for(walk.shape);
    Shape along_rows(walk.shape.size(), 0);
    along_rows[along_rows.size() - 1] = 1;
    return along_rows;
  };
  [&]<size_t... K>(std::index_sequence<K...>) {
    (..., (walk.strides[k++] = strides_of(std::get<K>(spread), ops)));
  }
  (std::index_sequence_for<In...>{});
  walk.operands = static_cast<int>(N);
  walk.unit_rows = unit_rows;
  walk.any_row = any_row;
  walk.ctx = &ctx;
  walk.streaming = stores == vec::Stores::streaming;
  run_strided_walk(std::move(walk));
}

// ---- the engine's entry point ------------------------------------------------------------------

// Runs the flat loop when it can, else the strided loop. A fresh result large enough
// (core/cpu_features.h) is written with streaming stores; one written over an input (a += b)
// keeps cached stores, as its lines were just read into the cache.
template <typename Out, typename... In, typename Fn>
void run_operands(const Tensor& out, const Fn& fn, const Operand<In>&... ops) {
  Out* o = out.data<Out>();
  const int64_t n = out.numel();
  const bool in_place = (... || (static_cast<const void*>(o) == ops.pointer()));
  const vec::Stores stores =
      !in_place && streaming_stores_for(n * static_cast<int64_t>(sizeof(Out)))
          ? vec::Stores::streaming
          : vec::Stores::cached;
  if ((... && (ops.single || ops.dense)))
    with_sources(
        [&](auto... src) {
          if constexpr ((... && kIsBroadcast<decltype(src)>)) {  // one value in, one value out
            const Out value = static_cast<Out>(fn(src.value...));
            if (n == 1)
              *o = value;
            else
              fill_data(out, Scalar(value));
          } else {
            flat_loop(o, n, fn, stores, src...);
          }
        },
        std::tuple<>(), ops...);
  else
    strided_loop<Out>(out, fn, in_place, stores, ops...);
}

template <typename> struct AsTensor { using type = Tensor; };

// out[i] = fn(inputs[i]...) over out's shape, with input k read as element type In_k (converted
// when its dtype differs) and broadcast to out's shape. out is freshly allocated (contiguous)
// with element type Out. E.g. where: map_into<T, bool, T, T>(out, fn, condition, self, other).
template <typename Out, typename... In, typename Fn>
void map_into(const Tensor& out, const Fn& fn, const typename AsTensor<In>::type&... inputs) {
  const int64_t n = out.numel();
  if (n == 0) return;
  run_operands<Out>(out, fn, Operand<In>(inputs, out.shape())...);
}

// ---- helpers for the op families ------------------------------------------------------------

// A fresh result of `op`, or self when an unrecorded in-place call of `op` offers it and it fits
// (core/inplace_target.h): every loop above reads an element before writing the same index, so
// writing into an input laid out like the output is safe.
inline Tensor result_for(const char* op, const Shape& shape, DType dtype, Device device) {
  Tensor target = detail::take_inplace_target(op, shape, dtype);
  return target.defined() ? target : empty(shape, dtype, device);
}

// The broadcast shape of two inputs (no work when they already agree).
inline Shape broadcast_pair(const char* op, const Tensor& a, const Tensor& b) {
  return a.shape() == b.shape() ? a.shape() : broadcast_shapes(op, a.shape(), b.shape());
}

// fn(x) in self's dtype (neg, abs, sign, relu).
template <Types kTypes = Types::All, typename Fn>
Tensor unary_op(const char* op, const Tensor& self, const Fn& fn) {
  Tensor out = result_for(op, self.shape(), self.dtype(), self.device());
  visit<kTypes>(op, self.dtype(), [&](auto tag) {
    using T = typename decltype(tag)::type;
    map_into<T, T>(out, fn, self);
  });
  return out;
}

// fn(x) in floating point: bool and integer inputs give float32, as torch.exp(int) does.
template <typename Fn> Tensor unary_float_op(const char* op, const Tensor& self, const Fn& fn) {
  const DType dtype = is_floating(self.dtype()) ? self.dtype() : kFloat32;
  Tensor out = result_for(op, self.shape(), dtype, self.device());
  visit_floating(op, dtype, [&](auto tag) {
    using T = typename decltype(tag)::type;
    map_into<T, T>(out, fn, self);
  });
  return out;
}

// fn(x) -> bool in self's dtype (logical_not).
template <typename Fn> Tensor unary_bool_op(const char* op, const Tensor& self, const Fn& fn) {
  Tensor out = empty(self.shape(), kBool, self.device());
  visit_dtype(op, self.dtype(), [&](auto tag) {
    using T = typename decltype(tag)::type;
    map_into<bool, T>(out, fn, self);
  });
  return out;
}

// fn(a, b) with broadcasting; inputs and output in the promoted dtype `compute`, or bool output
// when OutBool. The building block of the binary helpers below.
template <Types kTypes, bool OutBool, typename Fn>
Tensor binary_op_in(const char* op, DType compute, const Tensor& a, const Tensor& b, const Fn& fn) {
  Shape broadcast;  // set only when the shapes differ: no copy on the common path
  const Shape& shape =
      a.shape() == b.shape() ? a.shape() : (broadcast = broadcast_shapes(op, a.shape(), b.shape()));
  Tensor out = result_for(op, shape, OutBool ? kBool : compute, a.device());
  visit<kTypes>(op, compute, [&](auto tag) {
    using T = typename decltype(tag)::type;
    using Out = std::conditional_t<OutBool, bool, T>;
    map_into<Out, T, T>(out, fn, a, b);
  });
  return out;
}

// fn(a, b) in result_type(a, b) (add, mul, pow).
template <Types kTypes = Types::All, typename Fn>
Tensor binary_op(const char* op, const Tensor& a, const Tensor& b, const Fn& fn) {
  return binary_op_in<kTypes, false>(op, result_type(a, b), a, b, fn);
}

// fn(a, b) in floating point: integer results promote to float32 (true division).
template <typename Fn>
Tensor binary_float_op(const char* op, const Tensor& a, const Tensor& b, const Fn& fn) {
  DType compute = result_type(a, b);
  if (!is_floating(compute)) compute = kFloat32;
  return binary_op_in<Types::All, false>(op, compute, a, b, fn);
}

// fn(a, b) -> bool, comparing in result_type(a, b) (eq, lt, logical_and, ...).
template <typename Fn>
Tensor comparison_op(const char* op, const Tensor& a, const Tensor& b, const Fn& fn) {
  return binary_op_in<Types::All, true>(op, result_type(a, b), a, b, fn);
}

}  // namespace tg::cpu
