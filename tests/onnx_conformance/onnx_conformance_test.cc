// The ONNX backend node tests of issue 7's operators (node_tests.h) against
// expected_failures.txt: a test not listed must pass, a listed test must
// still fail (so a fix forces its line out of the list), out-of-scope tests
// are skipped with their reason. ctest runs this binary in shards
// (GTEST_TOTAL_SHARDS / GTEST_SHARD_INDEX, see CMakeLists.txt).
#include <gtest/gtest.h>

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

const std::vector<NodeTestCase>& Cases() {
  static const std::vector<NodeTestCase> cases = [] {
    Result<std::vector<NodeTestCase>> r = DiscoverNodeTests(DefaultTestDataRoot());
    return r.ok() ? r.value() : std::vector<NodeTestCase>{};
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
