// The ONNX backend node tests of issue 7's operators (node_tests.h) against
// expected_failures.txt: a test not listed must pass, a listed test must
// still fail (so a fix forces its line out of the list), out-of-scope tests
// are skipped with their reason. ctest runs this binary in shards
// (GTEST_TOTAL_SHARDS / GTEST_SHARD_INDEX, see CMakeLists.txt).
#include <gtest/gtest.h>

#include <algorithm>

#include <ostream>
#include <set>
#include <string>
#include <vector>

#include "tests/onnx_conformance/expected_failures.h"
#include "tests/onnx_conformance/node_tests.h"
#include "tests/onnx_conformance/runner.h"

namespace kiln {
namespace conformance {

// gtest prints a failing parameter by its test name, not as bytes.
void PrintTo(const NodeTestCase& test, std::ostream* os) { *os << test.name; }

namespace {

// Built twice: as kiln_onnx_conformance_test (attribute-like operands bound as
// constants) and, with KILN_ONNX_INPUTS_AS_DEFINED, as the as-defined variant,
// which feeds every input as the tests define them and runs only the tests
// that have such operands (the others run the same way in both).
#ifdef KILN_ONNX_INPUTS_AS_DEFINED
constexpr bool kInputsAsDefined = true;
#else
constexpr bool kInputsAsDefined = false;
#endif

const std::vector<NodeTestCase>& Cases() {
  static const std::vector<NodeTestCase> cases = [] {
    Result<std::vector<NodeTestCase>> r = DiscoverNodeTests(DefaultTestDataRoot());
    std::vector<NodeTestCase> all = r.ok() ? r.value() : std::vector<NodeTestCase>{};
    if (!kInputsAsDefined) return all;
    std::vector<NodeTestCase> fed;
    for (const NodeTestCase& c : all) {
      if (std::find(c.bind_as_constant.begin(), c.bind_as_constant.end(), true) != c.bind_as_constant.end()) {
        fed.push_back(c);
      }
    }
    return fed;
  }();
  return cases;
}

const Result<ExpectedFailures>& Expected() {
  static const Result<ExpectedFailures> expected = ReadExpectedFailures(KILN_ONNX_EXPECTED_FAILURES);
  return expected;
}

TEST(OnnxConformance, TestDataIsInstalled) {
  Result<std::vector<NodeTestCase>> r = DiscoverNodeTests(DefaultTestDataRoot());
  if (!r.ok()) GTEST_SKIP() << r.status().message();
  EXPECT_GT(r.value().size(), 400u) << "fewer node tests than libonnx-testdata ships for issue 7's operators";
  if (kInputsAsDefined) EXPECT_GT(Cases().size(), 90u) << "fewer node tests with attribute-like operands than expected";
}

TEST(OnnxConformance, ExpectedFailuresNameSelectedTests) {
  ASSERT_TRUE(Expected().ok()) << Expected().status().message();
  if (Cases().empty()) GTEST_SKIP() << "no ONNX node tests installed";
  std::set<std::string> in_scope;
  for (const NodeTestCase& c : Cases()) {
    if (c.out_of_scope.empty()) in_scope.insert(c.name);
  }
  for (const auto& [name, reason] : Expected().value()) {
    EXPECT_TRUE(in_scope.count(name)) << name << " in expected_failures.txt is not a selected, in-scope node test";
  }
}

class NodeTest : public ::testing::TestWithParam<NodeTestCase> {};

TEST_P(NodeTest, MatchesExpectation) {
  const NodeTestCase& test = GetParam();
  ASSERT_TRUE(Expected().ok()) << Expected().status().message();
  RunOptions options;
  options.inputs_as_defined = kInputsAsDefined;
  CaseResult r = RunNodeTest(test, options);
  if (r.outcome == Outcome::kOutOfScope) GTEST_SKIP() << r.detail;
  auto listed = Expected().value().find(test.name);
  if (listed == Expected().value().end()) {
    EXPECT_EQ(r.outcome, Outcome::kPass) << test.name << " (" << test.op << "): " << r.detail;
  } else {
    EXPECT_EQ(r.outcome, Outcome::kFail) << test.name << " passes now: remove it from expected_failures.txt";
  }
}

std::string TestName(const ::testing::TestParamInfo<NodeTestCase>& info) {
  std::string name = info.param.name;
  for (char& c : name) {
    if (!isalnum(static_cast<unsigned char>(c))) c = '_';
  }
  return name;
}

GTEST_ALLOW_UNINSTANTIATED_PARAMETERIZED_TEST(NodeTest);
INSTANTIATE_TEST_SUITE_P(Onnx, NodeTest, ::testing::ValuesIn(Cases()), TestName);

}  // namespace
}  // namespace conformance
}  // namespace kiln
