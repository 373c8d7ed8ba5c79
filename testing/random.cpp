// The op check's random mode (tg_opcheck --random N): cases shaped like the spec's samples with
// random sizes and values, and a failing one shrunk before it is reported (see check.h).
//
// A small generator of our own rather than RapidCheck: what makes a case valid is the spec's
// shape relations (equal sizes stay equal, 1s broadcast, 0s are empty), which the samples already
// encode; a generic generator would need them restated per op, its shrinking works on its own
// generated values rather than on "this size", and it would be a dependency of the installed
// tapegrad::testing library that every user project would then need.
#include <algorithm>
#include <map>
#include <ostream>
#include <random>
#include <set>

#include <nlohmann/json.hpp>

#include <tapegrad/testing/check.h>

namespace tg::testing {
namespace {

using nlohmann::json;
using registry::OpInfo;

bool is_tensor(const std::string& type) { return type == "Tensor" || type == "Tensor?"; }

// The shape lists of a sample's tensors whose values are not spelled out, for `visit`.
template <typename F> void for_each_shape(const OpInfo& op, json& sample, F&& visit) {
  auto tensor = [&](json& t) {
    if (t.is_array()) {
      visit(t);
    } else if (t.is_object() && t.contains("shape") && !t.contains("values")) {
      visit(t["shape"]);
    }
  };
  for (const auto& arg : op.args) {
    if (!sample.contains(arg.name)) continue;
    json& v = sample[arg.name];
    if (is_tensor(arg.type)) tensor(v);
    if (arg.type == "Tensor[]" && v.is_array())
      for (json& t : v) tensor(t);
  }
}

// The sample with every size in `sizes` (old -> new) replaced.
json resized(const OpInfo& op, json sample, const std::map<int64_t, int64_t>& sizes) {
  for_each_shape(op, sample, [&](json& shape) {
    for (json& d : shape)
      if (d.is_number_integer() && sizes.count(d.get<int64_t>())) d = sizes.at(d.get<int64_t>());
  });
  return sample;
}

// A failed report whose failures are all the op refusing its arguments (a tg::Error naming the
// op from the forward) or arguments the sample format cannot fill: a discarded case.
bool discarded(const OpReport& r) {
  const auto failed = r.failed_checks();
  if (failed.empty()) return false;
  return std::all_of(failed.begin(), failed.end(), [&](const std::string& f) {
    return f.find("forward: forward threw: [" + r.op + "]") != std::string::npos ||
           f.find("error: unexpected error: [opcheck]") != std::string::npos;
  });
}

}  // namespace

std::ostream& operator<<(std::ostream& os, const RandomReport& r) {
  os << "random check of " << r.op << ": " << (r.ok ? "ok" : "FAILED") << " (" << r.run
     << " cases run, " << r.discarded << " discarded as arguments the op rejects)\n";
  if (!r.ok)
    os << "  failing case: " << r.failing_sample << "\n  shrunk to:    " << r.shrunk_sample << "\n"
       << r.failure;
  return os;
}

RandomReport check_op_random(const OpInfo& op, const RandomOptions& random,
                             const CheckOptions& options) {
  RandomReport report;
  report.op = op.name;
  std::vector<json> samples;
  for (json& s : json::parse(op.samples_json))
    if (!s.contains("reject")) samples.push_back(s);
  if (samples.empty()) return report;
  std::mt19937_64 rng(random.seed ^ std::hash<std::string>{}(op.name));
  auto run = [&](const json& sample, uint64_t seed) {
    OpInfo one = op;
    one.samples_json = json::array({sample}).dump();
    CheckOptions o = options;
    o.seed = seed;
    o.only_op.clear();
    return check_op(one, o);
  };
  for (int n = 0; n < random.cases; ++n) {
    const json& base = samples[static_cast<size_t>(rng() % samples.size())];
    json sample = base;
    std::set<int64_t> vars;  // the sample's sizes above 1
    for_each_shape(op, sample, [&](json& shape) {
      for (const json& d : shape)
        if (d.is_number_integer() && d.get<int64_t>() > 1) vars.insert(d.get<int64_t>());
    });
    std::map<int64_t, int64_t> sizes;
    for (int64_t v : vars) sizes[v] = 1 + static_cast<int64_t>(rng() % random.max_size);
    const uint64_t seed = rng() | 1;
    OpReport r = run(resized(op, base, sizes), seed);
    if (r.ok) {
      ++report.run;
      continue;
    }
    if (discarded(r)) {
      ++report.discarded;
      continue;
    }
    ++report.run;
    report.ok = false;
    report.failing_sample = resized(op, base, sizes).dump();
    // Shrink: each size down (to 1, to half, by one) while the case still fails for real.
    int tries = 0;
    for (bool smaller = true; smaller && tries < random.max_shrinks;) {
      smaller = false;
      for (auto& [old_size, size] : sizes) {
        for (int64_t candidate : {int64_t{1}, size / 2, size - 1}) {
          if (candidate < 1 || candidate >= size || tries >= random.max_shrinks) continue;
          ++tries;
          std::map<int64_t, int64_t> trial = sizes;
          trial[old_size] = candidate;
          OpReport t = run(resized(op, base, trial), seed);
          if (t.ok || discarded(t)) continue;
          sizes = trial;
          r = t;
          smaller = true;
          break;
        }
        if (smaller) break;
      }
    }
    report.shrunk_sample = resized(op, base, sizes).dump();
    report.failure = r;
    return report;
  }
  return report;
}

}  // namespace tg::testing
