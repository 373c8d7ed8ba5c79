// User op libraries (tapegrad_add_ops) register their ops at load: one op per name across the
// built-in ops and every library, and a clash names both ops' spec files.
#include <doctest/doctest.h>

#include <string>
#include <vector>

#include <tapegrad/ops/registry.h>
#include <tapegrad/tapegrad.h>

namespace {

using tg::registry::OpInfo;

OpInfo user_op(const std::string& name, const std::string& file) {
  OpInfo op;
  op.name = name;
  op.spec_file = file;
  op.samples_json = "[]";
  return op;
}

bool contains(const std::string& s, const std::string& part) {
  return s.find(part) != std::string::npos;
}

}  // namespace

TEST_CASE("a user library whose op takes a built-in op's name is refused, naming both") {
  const size_t before = tg::registry::all_ops().size();
  std::string msg;
  try {
    tg::registry::register_library("mylib", {user_op("lib_test_fresh", "ops/a.json"),
                                             user_op("relu", "ops/relu_mine.json")});
  } catch (const tg::ValueError& e) {
    msg = e.what();
  }
  CHECK(contains(msg,
                 "[registry] op 'relu' of library 'mylib' (ops/relu_mine.json) clashes "
                 "with the built-in op 'relu' of tapegrad (ops/specs/"));
  // Nothing of the refused library was registered, not even its first op.
  CHECK(tg::registry::all_ops().size() == before);
  CHECK(tg::registry::find_op("lib_test_fresh") == nullptr);
}

TEST_CASE("two user libraries may not define the same op, and a library is registered whole") {
  tg::registry::register_library("lib_one", {user_op("lib_test_twice", "one/twice.json")});
  const OpInfo* op = tg::registry::find_op("lib_test_twice");
  REQUIRE(op != nullptr);
  CHECK(op->library == "lib_one");
  CHECK_THROWS_WITH_AS(
      tg::registry::register_library("lib_two", {user_op("lib_test_twice", "two/twice.json")}),
      doctest::Contains("clashes with the op 'lib_test_twice' of lib_one (one/twice.json)"),
      tg::ValueError);
  CHECK_THROWS_WITH_AS(tg::registry::register_library("lib_three",
                                                      {user_op("lib_test_dup", "a.json"),
                                                       user_op("lib_test_dup", "b.json")}),
                       doctest::Contains("defines op 'lib_test_dup' twice"), tg::ValueError);
  CHECK(tg::registry::find_op("relu")->library == "tapegrad");
}
