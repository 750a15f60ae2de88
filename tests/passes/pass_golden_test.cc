// Before/after tests of the Relax passes: for each case, parse
// tests/passes/NAME.before.relax, run the case's passes, print the result and
// compare it with tests/passes/NAME.after.relax exactly; the expected file
// must also parse to a module StructuralEqual to the result.
//
// With KILN_UPDATE_PASS_GOLDEN=1 the test writes the .after.relax files
// instead of comparing (and still fails, so an update is never silent).
#include <gtest/gtest.h>

#include <cstdlib>
#include <fstream>
#include <sstream>
#include <string>

#include "compiler/ir/structural_equal.h"
#include "compiler/relax/infer_struct_info.h"
#include "compiler/relax/legalize_ops.h"
#include "compiler/relax/remove_unused.h"
#include "compiler/text/text.h"

namespace kiln {
namespace {

enum class Pipeline { kLegalize, kLegalizeDnnl, kRemoveUnused };

struct GoldenCase {
  const char* name;
  Pipeline pipeline;
};

std::string PassesDir() { return std::string(KILN_SOURCE_DIR) + "/tests/passes/"; }

std::string ReadFile(const std::string& path) {
  std::ifstream f(path, std::ios::binary);
  std::stringstream ss;
  ss << f.rdbuf();
  return ss.str();
}

Result<ir::IRModule> RunPipeline(Pipeline p, const ir::IRModule& in) {
  if (p == Pipeline::kRemoveUnused) return relax::RemoveUnusedFunctions(in);
  KILN_ASSIGN_OR_RETURN(ir::IRModule mod, relax::InferStructInfo(in));
  relax::LegalizeOptions options;
  options.dispatch_matmul_to_dnnl = p == Pipeline::kLegalizeDnnl;
  return relax::LegalizeOps(mod, options);
}

class PassGoldenTest : public ::testing::TestWithParam<GoldenCase> {};

TEST_P(PassGoldenTest, MatchesExpectedText) {
  const GoldenCase& c = GetParam();
  std::string before_path = PassesDir() + c.name + ".before.relax";
  std::string after_path = PassesDir() + c.name + ".after.relax";
  Result<ir::IRModule> before = text::ParseModuleFile(before_path);
  ASSERT_TRUE(before.ok()) << before.status().message();
  Result<ir::IRModule> result = RunPipeline(c.pipeline, *before);
  ASSERT_TRUE(result.ok()) << result.status().message();
  std::string printed = text::PrintModule(*result);

  if (std::getenv("KILN_UPDATE_PASS_GOLDEN")) {
    std::ofstream(after_path, std::ios::binary) << printed;
    FAIL() << "wrote " << after_path << "; review it, then run again without KILN_UPDATE_PASS_GOLDEN";
  }

  std::string expected = ReadFile(after_path);
  ASSERT_FALSE(expected.empty()) << "missing " << after_path;
  EXPECT_EQ(printed, expected);
  Result<ir::IRModule> parsed = text::ParseModule(expected, after_path);
  ASSERT_TRUE(parsed.ok()) << parsed.status().message();
  std::string why;
  EXPECT_TRUE(ir::StructuralEqual(*result, *parsed, &why)) << why;
}

const GoldenCase kCases[] = {
    {"legalize_static", Pipeline::kLegalize},
    {"legalize_symbolic", Pipeline::kLegalize},
    {"legalize_dnnl", Pipeline::kLegalizeDnnl},
    {"legalize_nested", Pipeline::kLegalize},
    {"remove_unused", Pipeline::kRemoveUnused},
};

INSTANTIATE_TEST_SUITE_P(Passes, PassGoldenTest, ::testing::ValuesIn(kCases),
                         [](const ::testing::TestParamInfo<GoldenCase>& info) { return std::string(info.param.name); });

}  // namespace
}  // namespace kiln
