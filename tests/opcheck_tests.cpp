// The op check: the sample parser on small JSON snippets, and check_op on hand-made toy ops
// (one right, several deliberately wrong) to show that each check catches what it should.
#include <doctest/doctest.h>

#include <algorithm>
#include <set>
#include <sstream>
#include <stdexcept>
#include <string>
#include <vector>

#include <tapegrad/testing/check.h>
#include <tapegrad/testing/samples.h>
#include <tapegrad/core/copy.h>
#include <tapegrad/tapegrad.h>

namespace {

using tg::Tensor;
using tg::registry::ArgInfo;
using tg::registry::OpInfo;
using tg::registry::Value;
using tg::testing::SampleArg;

ArgInfo arg(const std::string& name, const std::string& type, std::vector<std::string> dtypes = {},
            const std::string& default_json = "") {
  return {name, type, true, std::move(dtypes), {}, !default_json.empty(), default_json};
}

// An op with one arg of every kind the sample format knows.
OpInfo toy_op() {
  OpInfo op;
  op.name = "toy";
  op.dtypes = {"int32", "float32", "float64"};
  op.args = {arg("self", "Tensor", op.dtypes),
             arg("index", "Tensor", {"int32", "int64"}),
             arg("maybe", "Tensor?", op.dtypes, "null"),
             arg("tensors", "Tensor[]", op.dtypes, "[]"),
             arg("dim", "int", {}, "0"),
             arg("dims", "int[]", {}, "[]"),
             arg("alpha", "Scalar", {}, "1"),
             arg("scale", "float", {}, "1.0"),
             arg("flag", "bool", {}, "false"),
             arg("mode", "string", {}, "\"sum\""),
             arg("dtype", "DType?", {}, "null"),
             arg("device", "Device", {}, "\"cpu\"")};
  return op;
}

std::vector<tg::testing::Sample> parse(const OpInfo& op, const std::string& json) {
  return tg::testing::parse_samples(op, json);
}

std::string parse_error(const OpInfo& op, const std::string& json) {
  try {
    parse(op, json);
  } catch (const tg::ValueError& e) {
    return e.what();
  }
  return "no error";
}

bool contains(const std::string& text, const std::string& part) {
  return text.find(part) != std::string::npos;
}

}  // namespace

TEST_CASE("sample parser: shapes, defaults and materialized tensors") {
  OpInfo op = toy_op();
  auto samples = parse(op, R"([{"self": [2, 3], "index": {"shape": [2], "values": [1, 0]}}])");
  REQUIRE(samples.size() == 1);
  const auto& s = samples[0];
  REQUIRE(s.args.size() == op.args.size());
  CHECK(s.args[0].kind == SampleArg::Kind::Tensor);
  CHECK(s.args[0].tensors[0].shape == tg::Shape{2, 3});
  CHECK(s.args[2].kind == SampleArg::Kind::Value);  // Tensor? default null: none
  CHECK(std::holds_alternative<std::monostate>(s.args[2].value));
  CHECK(s.args[3].kind == SampleArg::Kind::TensorList);
  CHECK(s.args[3].tensors.empty());
  CHECK(std::get<int64_t>(s.args[4].value) == 0);
  CHECK(std::get<std::vector<int64_t>>(s.args[5].value).empty());
  CHECK(std::get<tg::Scalar>(s.args[6].value).is_integral());
  CHECK(std::get<double>(s.args[7].value) == 1.0);
  CHECK(std::get<bool>(s.args[8].value) == false);
  CHECK(std::get<std::string>(s.args[9].value) == "sum");
  CHECK(std::holds_alternative<std::monostate>(s.args[10].value));
  CHECK(std::get<tg::Device>(s.args[11].value) == tg::Device(tg::kCPU));

  auto c = tg::testing::materialize(op, s, tg::kFloat64, 42);
  const Tensor& self = std::get<Tensor>(c.args[0]);
  CHECK(self.dtype() == tg::kFloat64);
  CHECK(self.shape() == tg::Shape{2, 3});
  for (double v : self.to_vector<double>()) CHECK((v >= -1.0 && v < 1.0));
  // index allows only int32/int64: it gets int64 in a float64 run, with the given values
  const Tensor& index = std::get<Tensor>(c.args[1]);
  CHECK(index.dtype() == tg::kInt64);
  CHECK(index.to_vector<int64_t>() == std::vector<int64_t>{1, 0});
  REQUIRE(c.tensors.size() == 2);
  CHECK(c.tensors[0].grad);
  CHECK_FALSE(c.tensors[1].grad);  // integer: never differentiated

  // Same seed, same values; another seed, other values.
  auto again = tg::testing::materialize(op, s, tg::kFloat64, 42);
  CHECK(std::get<Tensor>(again.args[0]).to_vector<double>() == self.to_vector<double>());
  auto other = tg::testing::materialize(op, s, tg::kFloat64, 43);
  CHECK(std::get<Tensor>(other.args[0]).to_vector<double>() != self.to_vector<double>());
  CHECK(tg::testing::sample_seed("toy", 0) != tg::testing::sample_seed("toy", 1));

  // int32 run: small integers
  auto ci = tg::testing::materialize(op, s, tg::kInt32, 42);
  const Tensor& si = std::get<Tensor>(ci.args[0]);
  CHECK(si.dtype() == tg::kInt32);
  for (int64_t v : si.to_vector<int64_t>()) CHECK((v >= -3 && v <= 3));
  CHECK(tg::testing::describe_args(op, ci.args) ==
        "self=int32[2, 3] index=int32[2] maybe=none tensors=[] dim=0 dims=[] alpha=1 scale=1 "
        "flag=false mode=\"sum\" dtype=none device=cpu");
}

TEST_CASE("sample parser: tensor objects (values, dtype, fill, low/high, distinct, transpose)") {
  OpInfo op = toy_op();
  auto samples = parse(op, R"([
    {"self": {"values": [[1, 2], [3, 4]]}, "index": {"shape": [3], "dtype": "int32", "fill": 2}},
    {"self": {"shape": [200], "low": 0.5, "high": 2}, "index": {"shape": [], "values": [5]}},
    {"self": {"shape": [40], "distinct": true}, "index": [1], "maybe": {"shape": [2, 3],
     "values": [1, 2, 3, 4, 5, 6], "transpose": [0, 1], "requires_grad": false}}
  ])");
  REQUIRE(samples.size() == 3);

  auto c0 = tg::testing::materialize(op, samples[0], tg::kFloat32, 1);
  const Tensor& nested = std::get<Tensor>(c0.args[0]);
  CHECK(nested.shape() == tg::Shape{2, 2});
  CHECK(nested.dtype() == tg::kFloat32);
  CHECK(nested.to_vector<double>() == std::vector<double>{1, 2, 3, 4});
  const Tensor& filled = std::get<Tensor>(c0.args[1]);
  CHECK(filled.dtype() == tg::kInt32);
  CHECK(filled.to_vector<int64_t>() == std::vector<int64_t>{2, 2, 2});

  auto c1 = tg::testing::materialize(op, samples[1], tg::kFloat64, 1);
  for (double v : std::get<Tensor>(c1.args[0]).to_vector<double>()) CHECK((v >= 0.5 && v < 2.0));
  const Tensor& zero_d = std::get<Tensor>(c1.args[1]);
  CHECK(zero_d.dim() == 0);
  CHECK(zero_d.item<int64_t>() == 5);

  for (tg::DType dt : {tg::kFloat64, tg::kInt32}) {
    auto c2 = tg::testing::materialize(op, samples[2], dt, 7);
    std::vector<double> v = std::get<Tensor>(c2.args[0]).to_vector<double>();
    CHECK(std::set<double>(v.begin(), v.end()).size() == 40);  // distinct, even as integers
  }
  auto c2 = tg::testing::materialize(op, samples[2], tg::kFloat64, 7);
  const Tensor& transposed = std::get<Tensor>(c2.args[2]);
  CHECK(transposed.shape() == tg::Shape{2, 3});
  CHECK_FALSE(transposed.is_contiguous());
  CHECK(transposed.strides() == tg::Shape{1, 2});
  CHECK(transposed.to_vector<double>() == std::vector<double>{1, 2, 3, 4, 5, 6});
  REQUIRE(c2.tensors.size() == 3);
  CHECK_FALSE(c2.tensors[2].grad);  // "requires_grad": false
}

TEST_CASE("sample parser: Tensor[] lists") {
  OpInfo op = toy_op();
  auto samples = parse(op, R"([{"self": [1], "index": [1],
                                "tensors": [[2], {"shape": [3], "fill": 1.5}, []]}])");
  const SampleArg& list = samples[0].args[3];
  CHECK(list.kind == SampleArg::Kind::TensorList);
  REQUIRE(list.tensors.size() == 3);
  auto c = tg::testing::materialize(op, samples[0], tg::kFloat64, 3);
  const auto& tensors = std::get<std::vector<Tensor>>(c.args[3]);
  REQUIRE(tensors.size() == 3);
  CHECK(tensors[0].shape() == tg::Shape{2});
  CHECK(tensors[1].to_vector<double>() == std::vector<double>{1.5, 1.5, 1.5});
  CHECK(tensors[2].dim() == 0);
  REQUIRE(c.tensors.size() == 5);
  CHECK(c.tensors[3].arg == 3);
  CHECK(c.tensors[3].item == 1);
  CHECK(tg::testing::tensor_at(c.args, c.tensors[3]).is_same(tensors[1]));

  CHECK(contains(parse_error(op, R"([{"self": [1], "index": [1], "tensors": [2, 3]}])"),
                 "a Tensor[] arg takes a list of shapes or tensor objects"));
}

TEST_CASE("sample parser: plain values take the type their arg needs") {
  OpInfo op = toy_op();
  auto s = parse(op, R"([{"self": [1], "index": [1], "dim": -1, "dims": [0, 2], "alpha": 2.5,
                          "scale": 2, "flag": true, "mode": "mean", "dtype": "float32",
                          "device": "cuda", "maybe": null}])")[0];
  CHECK(std::get<int64_t>(s.args[4].value) == -1);
  CHECK(std::get<std::vector<int64_t>>(s.args[5].value) == std::vector<int64_t>{0, 2});
  tg::Scalar alpha = std::get<tg::Scalar>(s.args[6].value);
  CHECK(alpha.is_floating());
  CHECK(alpha.to_double() == 2.5);
  CHECK(std::get<double>(s.args[7].value) == 2.0);  // an integer JSON for a float arg
  CHECK(std::get<bool>(s.args[8].value));
  CHECK(std::get<std::string>(s.args[9].value) == "mean");
  CHECK(std::get<tg::DType>(s.args[10].value) == tg::kFloat32);
  CHECK(std::get<tg::Device>(s.args[11].value) == tg::Device(tg::kCUDA));
  CHECK(std::holds_alternative<std::monostate>(s.args[2].value));

  CHECK(std::get<tg::Scalar>(tg::testing::parse_value(arg("a", "Scalar"), "3")).is_integral());
  CHECK(std::get<tg::Scalar>(tg::testing::parse_value(arg("a", "Scalar"), "true")).is_bool());
  CHECK(std::get<std::vector<int64_t>>(tg::testing::parse_value(arg("a", "int[]"), "1")) ==
        std::vector<int64_t>{1});
  CHECK(std::holds_alternative<std::monostate>(tg::testing::parse_value(arg("a", "int?"), "null")));
}

TEST_CASE("sample parser: options and the dtypes a sample runs in") {
  OpInfo op = toy_op();
  auto samples = parse(op, R"([
    {"self": [2], "index": [1], "dtypes": ["float64", "bool"], "no_grad": true},
    {"self": [2], "index": [1], "no_gradgrad": true, "why": "kink at 0"},
    {"reject": "out of range", "error": "IndexError", "self": [2], "index": [1], "dtypes": ["bool"]},
    {"self": [2], "index": [1], "dtypes": ["floating"]}
  ])");
  CHECK(samples[0].no_grad);
  CHECK(tg::testing::sample_dtypes(op, samples[0]) == std::vector<tg::DType>{tg::kFloat64});
  CHECK(samples[1].no_gradgrad);
  CHECK(samples[1].why == "kink at 0");
  CHECK(tg::testing::sample_dtypes(op, samples[1]) ==
        std::vector<tg::DType>{tg::kInt32, tg::kFloat32, tg::kFloat64});
  CHECK(samples[2].reject == "out of range");
  CHECK(samples[2].error == "IndexError");
  CHECK(tg::testing::sample_dtypes(op, samples[2]) == std::vector<tg::DType>{tg::kBool});
  CHECK(tg::testing::sample_dtypes(op, samples[3]) ==
        std::vector<tg::DType>{tg::kFloat32, tg::kFloat64});
}

TEST_CASE("sample parser: malformed samples name the op, the sample and the problem") {
  OpInfo op = toy_op();
  CHECK(contains(parse_error(op, R"([{"self": [2], "index": [1], "bogus": 1}])"),
                 "[opcheck] op 'toy' sample 0: unknown key 'bogus'"));
  CHECK(
      contains(parse_error(op, R"([{"self": [2]}])"), "arg 'index' is missing and has no default"));
  CHECK(contains(
      parse_error(
          op,
          R"([{"self": [2], "index": [1]}, {"self": {"shape": [2, 2], "values": [1, 2, 3]}, "index": [1]}])"),
      "sample 1 arg 'self': \"values\" has 3 entries, shape [2, 2] needs 4"));
  CHECK(contains(parse_error(op, R"([{"self": 2, "index": [1]}])"),
                 "expected a shape list or a tensor object"));
  CHECK(contains(parse_error(op, R"([{"self": [2], "index": [1], "dim": 1.5}])"),
                 "expected an integer"));
  CHECK(contains(parse_error(op, R"([{"self": [2], "index": [1], "error": "ValueError"}])"),
                 "\"error\" is only meaningful with \"reject\""));
  CHECK(
      contains(parse_error(op, R"([{"self": {"shape": [2], "transpose": [0, 1]}, "index": [1]}])"),
               "out of range for shape [2]"));
  CHECK(contains(parse_error(op, "{"), "invalid JSON"));
}

TEST_CASE("clone_args copies every tensor, layout included") {
  OpInfo op = toy_op();
  auto s = parse(
      op,
      R"([{"self": {"shape": [2, 3], "transpose": [0, 1]}, "index": [1], "tensors": [[2]]}])")[0];
  auto c = tg::testing::materialize(op, s, tg::kFloat64, 5);
  auto copy = tg::testing::clone_args(c.args);
  const Tensor& a = std::get<Tensor>(c.args[0]);
  const Tensor& b = std::get<Tensor>(copy[0]);
  CHECK(b.strides() == a.strides());
  CHECK(b.to_vector<double>() == a.to_vector<double>());
  CHECK(b.data_ptr() != a.data_ptr());
  CHECK(std::get<std::vector<Tensor>>(copy[3])[0].data_ptr() !=
        std::get<std::vector<Tensor>>(c.args[3])[0].data_ptr());
}

// ---- check_op on toy ops --------------------------------------------------------------------

namespace {

const Tensor& self_of(const std::vector<Value>& a) { return std::get<Tensor>(a[0]); }

void check_k(const std::vector<Value>& a) {
  int64_t k = std::get<int64_t>(a[1]);
  TG_CHECK(k >= 0, tg::ValueError, "twice", "k must be non-negative, got ", k);
}

std::vector<Tensor> twice(const std::vector<Value>& a) {
  check_k(a);
  return {self_of(a) * 2.0};
}
std::vector<Tensor> twice_inplace(const std::vector<Value>& a) {
  check_k(a);
  self_of(a) *= 2.0;
  return {self_of(a)};
}
std::vector<Tensor> thrice(const std::vector<Value>& a) { return {self_of(a) * 3.0}; }
// Fails (as a kernel bug would: not a tg::Error naming the op) once a dim reaches 5.
std::vector<Tensor> twice_wrong_from_5(const std::vector<Value>& a) {
  const Tensor& self = self_of(a);
  const tg::Shape shape = self.shape();
  if (std::any_of(shape.begin(), shape.end(), [](int64_t d) { return d >= 5; }))
    throw std::runtime_error("out of bounds");
  return {self * 2.0};
}
// The kernel bug the derived non-contiguous case is for: reads self's storage in order, ignoring
// its strides (right for contiguous inputs only).
std::vector<Tensor> twice_raw_reads(const std::vector<Value>& a) {
  const Tensor& self = self_of(a);
  Tensor out = tg::empty(self.shape(), self.dtype());
  tg::visit_dtype("twice", self.dtype(), [&](auto tag) {
    using T = typename decltype(tag)::type;
    for (int64_t i = 0; i < self.numel(); ++i)
      out.data<T>()[i] = static_cast<T>(self.data<T>()[i] * 2);
  });
  return {out};
}
// Writes the result with a raw copy: right values, but no autograd history.
std::vector<Tensor> twice_raw_inplace(const std::vector<Value>& a) {
  Tensor r = twice(a)[0];
  tg::copy_data(self_of(a), r);
  self_of(a).bump_version();
  return {self_of(a)};
}
// Rejects only after scribbling on self.
std::vector<Tensor> twice_dirty_reject(const std::vector<Value>& a) {
  tg::fill_data(self_of(a), 0);
  return twice(a);
}
std::vector<Tensor> twice_never_rejects(const std::vector<Value>& a) { return {self_of(a) * 2.0}; }

OpInfo twice_op() {
  OpInfo op;
  op.name = "twice";
  op.dtypes = {"float32", "float64"};
  op.args = {arg("self", "Tensor", op.dtypes), arg("k", "int", {}, "0")};
  op.args[1].differentiable = false;
  op.variants = {"function", "method", "inplace"};
  op.samples_json = R"([{"self": [2, 3]}, {"self": {"shape": [3, 2], "transpose": [0, 1]}, "k": 1},
                        {"reject": "k must be non-negative", "error": "ValueError", "self": [2], "k": -1}])";
  op.call = &twice;
  op.call_method = &twice;
  op.call_inplace = &twice_inplace;
  return op;
}

}  // namespace

TEST_CASE("check_op passes a correct op and counts its checks") {
  tg::testing::Options options;
  options.verbose = true;
  options.derived = false;  // counted in the next case
  auto r = tg::testing::check_op(twice_op(), options);
  INFO(r.report);
  CHECK(r.ok);
  CHECK(r.op == "twice");
  CHECK(r.samples == 3);
  CHECK(r.forward == 4);     // two samples in two dtypes
  CHECK(r.gradchecks == 2);  // float64 only
  CHECK(r.gradgradchecks == 2);
  CHECK(r.inplace == 4);
  CHECK(r.rejects == 2);
  CHECK(r.failures == 0);
  CHECK(contains(r.report, "twice_ rejected as expected"));

  options.gradgradcheck = false;
  auto quick = tg::testing::check_op(twice_op(), options);
  CHECK(quick.gradgradchecks == 0);
}

TEST_CASE("check_op derives edge cases from the samples and reports them as derived") {
  auto r = tg::testing::check_op(twice_op());
  INFO(r);
  CHECK(r.ok);
  std::set<std::string> kinds;
  for (const auto& c : r.cases) kinds.insert(c.derived);
  // sample 0 ([2, 3]) gives every kind; kinds a sample cannot have (0-d of a 0-d) are left out
  for (const char* kind : {"non-contiguous", "expanded", "0-size", "0-d", "inplace-view"})
    CHECK_MESSAGE(kinds.count(kind), kind);
  CHECK(r.derived > 0);
  // A sample opts out with a reason, and the report says so.
  OpInfo op = twice_op();
  op.samples_json = R"([{"self": [2, 3], "no_derived": {"0-d": "k needs rows"}}])";
  auto opted = tg::testing::check_op(op);
  const auto it = std::find_if(opted.cases.begin(), opted.cases.end(),
                               [](const tg::testing::CaseReport& c) { return c.derived == "0-d"; });
  REQUIRE(it != opted.cases.end());
  CHECK(it->skipped == "the spec opts out: k needs rows");
  op.samples_json = R"([{"self": [2, 3], "no_derived": {"0-dee": "typo"}}])";
  CHECK_FALSE(tg::testing::check_op(op).ok);  // an unknown kind is a spec error
}

TEST_CASE("a derived case catches a kernel that reads memory as if it were contiguous") {
  OpInfo op = twice_op();
  op.variants = {"function"};
  op.call_method = nullptr;
  op.call_inplace = nullptr;
  // contiguous: the spec's own sample passes. (The raw reads would run past the storage of an
  // expanded input, which ASan reports: that case is left out.)
  op.samples_json = R"([{"self": [2, 3], "no_derived": {"expanded": "reads past the storage"}}])";
  op.call = &twice_raw_reads;
  op.differentiable = false;  // a raw kernel, no autograd
  tg::testing::Options options;
  options.derived = false;
  CHECK_MESSAGE(tg::testing::check_op(op, options).ok, tg::testing::check_op(op, options));
  options.derived = true;
  auto r = tg::testing::check_op(op, options);
  CHECK_FALSE(r.ok);
  const auto failed = r.failed_checks();
  REQUIRE_FALSE(failed.empty());
  CHECK(contains(failed[0], "derived non-contiguous"));
  CHECK(contains(failed[0], "differs from the contiguous inputs'"));
}

TEST_CASE("random mode finds a failure the samples miss and shrinks it to the smallest size") {
  OpInfo op = twice_op();
  op.variants = {"function"};
  op.call_method = nullptr;
  op.call_inplace = nullptr;
  op.differentiable = false;
  op.samples_json = R"([{"self": [2, 3]}])";
  op.call = &twice_wrong_from_5;
  tg::testing::CheckOptions options;
  options.derived = false;
  CHECK(tg::testing::check_op(op, options).ok);  // the spec's sizes are too small to show it
  tg::testing::RandomOptions random;
  random.cases = 50;
  random.max_size = 8;
  const auto r = tg::testing::check_op_random(op, random, options);
  INFO(r);
  REQUIRE_FALSE(r.ok);
  // both sizes shrink: 2 -> 1 and the other to the smallest that still fails, 5
  CHECK((r.shrunk_sample == R"({"self":[1,5]})" || r.shrunk_sample == R"({"self":[5,1]})"));
  CHECK_FALSE(r.failure.ok);
  const auto again = tg::testing::check_op_random(op, random, options);
  CHECK(again.failing_sample == r.failing_sample);  // a seed gives the same cases
}

TEST_CASE("check_op catches a method that disagrees with the function") {
  OpInfo op = twice_op();
  op.call_method = &thrice;
  auto r = tg::testing::check_op(op);
  CHECK_FALSE(r.ok);
  CHECK(r.failures == 4);
  CHECK(contains(r.report,
                 "sample 0 [float32] (self=float32[2, 3] k=0): method: method output 0 differs"));
  // The same failure, structured: the case (sample, dtype, args) and the check that failed.
  const auto failed = std::find_if(r.cases.begin(), r.cases.end(),
                                   [](const tg::testing::CaseReport& c) { return !c.ok(); });
  REQUIRE(failed != r.cases.end());
  CHECK(failed->sample == 0);
  CHECK(failed->dtype == "float32");
  CHECK(failed->derived.empty());
  const auto bad = std::find_if(failed->checks.begin(), failed->checks.end(),
                                [](const tg::testing::CheckResult& c) { return !c.ok; });
  REQUIRE(bad != failed->checks.end());
  CHECK(bad->check == "method");
  CHECK(std::count_if(failed->checks.begin(), failed->checks.end(),
                      [](const tg::testing::CheckResult& c) { return !c.ok; }) == 1);
  CHECK(r.failed_checks().size() == 4);
  std::ostringstream printed;
  printed << r;
  CHECK(contains(printed.str(), "op check of twice: FAILED"));
  CHECK(contains(printed.str(), "  FAIL method: method output 0 differs"));
}

TEST_CASE("check_op catches an in-place variant without autograd history") {
  OpInfo op = twice_op();
  op.call_inplace = &twice_raw_inplace;
  auto r = tg::testing::check_op(op);
  CHECK_FALSE(r.ok);
  INFO(r.report);
  CHECK(contains(r.report, "sample 0 [float64]"));
  CHECK(contains(r.report, "in-place gradient w.r.t. self differs from the out-of-place one"));
}

TEST_CASE("check_op catches rejects that modify inputs or do not happen") {
  OpInfo op = twice_op();
  op.call = &twice_dirty_reject;
  auto dirty = tg::testing::check_op(op);
  CHECK_FALSE(dirty.ok);
  CHECK(contains(dirty.report, "twice was rejected but modified self"));

  op = twice_op();
  op.call = &twice_never_rejects;
  auto lax = tg::testing::check_op(op);
  CHECK_FALSE(lax.ok);
  CHECK(contains(lax.report,
                 "twice succeeded; expected an error containing 'k must be non-negative'"));

  op = twice_op();
  op.samples_json =
      R"([{"reject": "k must be non-negative", "error": "IndexError", "self": [2], "k": -1}])";
  auto kind = tg::testing::check_op(op);
  CHECK_FALSE(kind.ok);
  CHECK(contains(kind.report, "twice threw ValueError, expected IndexError"));
}

TEST_CASE("check_op reports malformed samples instead of throwing") {
  OpInfo op = twice_op();
  op.samples_json = R"([{"self": [2], "kk": 1}])";
  auto r = tg::testing::check_op(op);
  CHECK_FALSE(r.ok);
  CHECK(contains(r.report, "unknown key 'kk'"));
}
