// Before/after tests of the fusion passes: for each case, parse
// tests/fusion/NAME.before.relax, run the case's passes, print the result and
// compare it with tests/fusion/NAME.after.relax exactly; the expected file
// must also parse to a module StructuralEqual to the result.
//
// With KILN_UPDATE_PASS_GOLDEN=1 the test writes the .after.relax files
// instead of comparing (and still fails, so an update is never silent).
#include <gtest/gtest.h>

#include <cstdlib>
#include <fstream>
#include <sstream>
#include <string>

#include "compiler/fusion/annotate_op_pattern.h"
#include "compiler/fusion/fuse_ops.h"
#include "compiler/fusion/fuse_tir.h"
#include "compiler/ir/structural_equal.h"
#include "compiler/relax/infer_struct_info.h"
#include "compiler/relax/remove_unused.h"
#include "compiler/text/text.h"

namespace kiln {
namespace {

enum class Pipeline {
  kAnnotate,  // annotate-op-pattern
  kFuseOps,   // normalize, annotate-op-pattern, fuse-ops
  kFuseTir,   // normalize, fuse-tir, remove-unused
};

struct GoldenCase {
  const char* name;
  Pipeline pipeline;
};

std::string Dir() { return std::string(KILN_SOURCE_DIR) + "/tests/fusion/"; }

std::string ReadFile(const std::string& path) {
  std::ifstream f(path, std::ios::binary);
  std::stringstream ss;
  ss << f.rdbuf();
  return ss.str();
}

Result<ir::IRModule> RunPipeline(Pipeline p, const ir::IRModule& in) {
  if (p == Pipeline::kAnnotate) return fusion::AnnotateOpPattern(in);
  KILN_ASSIGN_OR_RETURN(ir::IRModule mod, relax::InferStructInfo(in));
  if (p == Pipeline::kFuseOps) return fusion::FuseOps(fusion::AnnotateOpPattern(mod));
  KILN_ASSIGN_OR_RETURN(mod, fusion::FuseTIR(mod));
  return relax::RemoveUnusedFunctions(mod);
}

class FusionGoldenTest : public ::testing::TestWithParam<GoldenCase> {};

TEST_P(FusionGoldenTest, MatchesExpectedText) {
  const GoldenCase& c = GetParam();
  std::string before_path = Dir() + c.name + ".before.relax";
  std::string after_path = Dir() + c.name + ".after.relax";
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

// Each fuse_tir case starts from the output of the matching fuse_ops case
// (the .before of one is a copy of the other's .after), so the chain
// fuse_ops -> print -> parse -> fuse_tir is covered too.
const GoldenCase kCases[] = {
    {"annotate_op_pattern", Pipeline::kAnnotate},
    {"fuse_ops_mlp", Pipeline::kFuseOps},
    {"fuse_tir_mlp", Pipeline::kFuseTir},
    {"fuse_ops_prologue", Pipeline::kFuseOps},
    {"fuse_tir_prologue", Pipeline::kFuseTir},
    {"fuse_ops_opaque", Pipeline::kFuseOps},
    {"fuse_tir_opaque", Pipeline::kFuseTir},
    {"fuse_ops_tir_vars", Pipeline::kFuseOps},
    {"fuse_tir_tir_vars", Pipeline::kFuseTir},
    {"fuse_ops_prologue_cost", Pipeline::kFuseOps},
    {"fuse_ops_shape_check", Pipeline::kFuseOps},
    {"fuse_tir_shape_check", Pipeline::kFuseTir},
    {"fuse_ops_if_branches", Pipeline::kFuseOps},
    {"fuse_tir_if_branches", Pipeline::kFuseTir},
};

INSTANTIATE_TEST_SUITE_P(Fusion, FusionGoldenTest, ::testing::ValuesIn(kCases),
                         [](const ::testing::TestParamInfo<GoldenCase>& info) { return std::string(info.param.name); });

// The .before of each fuse_tir case is the .after of its fuse_ops case.
TEST(FusionGolden, FuseTirInputsAreFuseOpsOutputs) {
  for (const char* name : {"mlp", "prologue", "opaque", "tir_vars", "shape_check", "if_branches"}) {
    std::string ops_after = ReadFile(Dir() + "fuse_ops_" + name + ".after.relax");
    std::string tir_before = ReadFile(Dir() + "fuse_tir_" + name + ".before.relax");
    EXPECT_FALSE(ops_after.empty());
    EXPECT_EQ(ops_after, tir_before) << name;
  }
}

}  // namespace
}  // namespace kiln
