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
#include "compiler/transform/bind_params.h"
#include "compiler/transform/canonicalize_bindings.h"
#include "compiler/transform/common_subexpr_elimination.h"
#include "compiler/transform/dead_code_elimination.h"
#include "compiler/transform/decompose_ops.h"
#include "compiler/transform/dispatch_library.h"
#include "compiler/transform/flatten_nested_calls.h"
#include "compiler/transform/fold_constant.h"
#include "compiler/transform/fold_softmax_nan_guard.h"
#include "compiler/transform/mixed_precision.h"
#include "compiler/transform/guard_raise_arms.h"
#include "compiler/transform/inline_functions.h"
#include "compiler/transform/shape_condition.h"
#include "compiler/transform/pack_constant_weights.h"
#include "compiler/transform/view_reshapes.h"

namespace kiln {
namespace {

enum class Pipeline {
  kLegalize, kDispatchLibrary, kRemoveUnused, kCanonicalize, kCse, kDce, kBindParams, kFoldConstant, kFlatten, kDecompose,
  kPackWeights, kFoldSoftmaxNanGuard, kShapeCondition, kViewReshapes, kMixedPrecision, kGuardRaiseArms, kInlineFunctions
};

// The weights of the bind_params / fold_constant cases: w (4, 3), b (4,).
params::ParamList TestWeights() {
  params::ParamList list;
  Tensor w = Tensor::Empty(std::vector<int64_t>{4, 3}, DType::Float32()).value();
  for (int i = 0; i < 12; ++i) w.data<float>()[i] = static_cast<float>(i);
  Tensor b = Tensor::Empty(std::vector<int64_t>{4}, DType::Float32()).value();
  for (int i = 0; i < 4; ++i) b.data<float>()[i] = 0.5f * static_cast<float>(i);
  list.push_back({"w", w});
  list.push_back({"b", b});
  return list;
}

// The weights of the pack_constant_weights case: cw (16, 2, 3, 3), cw2 (12, 2, 3, 3).
params::ParamList ConvWeights() {
  params::ParamList list;
  for (auto [name, o] : {std::pair<const char*, int64_t>{"cw", 16}, {"cw2", 12}}) {
    Tensor w = Tensor::Empty(std::vector<int64_t>{o, 2, 3, 3}, DType::Float32()).value();
    for (int64_t i = 0; i < w.NumElements(); ++i) w.data<float>()[i] = static_cast<float>(i);
    list.push_back({name, w});
  }
  return list;
}

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
  switch (p) {
    case Pipeline::kCanonicalize: return transform::CanonicalizeBindings(mod);
    case Pipeline::kFlatten: return transform::FlattenNestedCalls(mod);
    case Pipeline::kDecompose: return transform::DecomposeOpsForInference(mod);
    case Pipeline::kPackWeights: {
      KILN_ASSIGN_OR_RETURN(mod, transform::BindParams(mod, ConvWeights()));
      return transform::PackConstantWeights(mod);
    }
    case Pipeline::kFoldSoftmaxNanGuard: {
      // fold, then drop the softmax and the test the fold left dead.
      KILN_ASSIGN_OR_RETURN(mod, transform::FoldSoftmaxNanGuard(mod));
      return transform::EliminateDeadCode(mod);
    }
    case Pipeline::kShapeCondition: {
      // rewrite, then drop the tensors that computed the condition.
      KILN_ASSIGN_OR_RETURN(mod, transform::FoldShapeConditions(mod));
      return transform::EliminateDeadCode(mod);
    }
    case Pipeline::kViewReshapes: {
      // legalize, view the copies, drop the kernels no one calls any more.
      KILN_ASSIGN_OR_RETURN(mod, relax::LegalizeOps(mod, relax::LegalizeOptions{}));
      KILN_ASSIGN_OR_RETURN(mod, transform::ViewReshapes(mod));
      return relax::RemoveUnusedFunctions(mod);
    }
    case Pipeline::kMixedPrecision: {
      // bind the weights, go bfloat16, drop the float32 constants left dead.
      KILN_ASSIGN_OR_RETURN(mod, transform::BindParams(mod, TestWeights()));
      KILN_ASSIGN_OR_RETURN(mod, transform::ToMixedPrecision(mod, transform::Precision::kBFloat16));
      return transform::EliminateDeadCode(mod);
    }
    case Pipeline::kGuardRaiseArms: {
      // guard, then drop the aliases and the match_casts the arm's shapes prove.
      KILN_ASSIGN_OR_RETURN(mod, transform::GuardRaiseArms(mod));
      return transform::CanonicalizeBindings(mod);
    }
    case Pipeline::kInlineFunctions: return transform::InlineFunctions(mod);
    case Pipeline::kCse: return transform::EliminateCommonSubexpressions(mod);
    case Pipeline::kDce: return transform::EliminateDeadCode(mod);
    case Pipeline::kBindParams: return transform::BindParams(mod, TestWeights());
    case Pipeline::kFoldConstant: {
      // bind, fold, then drop the bindings folding left dead.
      KILN_ASSIGN_OR_RETURN(mod, transform::BindParams(mod, TestWeights()));
      KILN_ASSIGN_OR_RETURN(mod, transform::FoldConstant(mod));
      return transform::EliminateDeadCode(mod);
    }
    default: break;
  }
  if (p == Pipeline::kDispatchLibrary) {
    KILN_ASSIGN_OR_RETURN(std::vector<transform::DispatchRule> rules,
                          transform::ParseDispatchRules("rules:\n"
                                                        "  - {op: matmul, library: dnnl}\n"
                                                        "  - {op: conv2d, library: dnnl, when: {groups: 1}}\n",
                                                        "rules.yaml"));
    KILN_ASSIGN_OR_RETURN(mod, transform::DispatchToLibraries(mod, rules));
  }
  return relax::LegalizeOps(mod, relax::LegalizeOptions{});
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
  std::vector<ir::Expr> constants;  // bound weights print as metadata[...]
  std::string printed = text::PrintModule(*result, &constants);

  if (std::getenv("KILN_UPDATE_PASS_GOLDEN")) {
    std::ofstream(after_path, std::ios::binary) << printed;
    FAIL() << "wrote " << after_path << "; review it, then run again without KILN_UPDATE_PASS_GOLDEN";
  }

  std::string expected = ReadFile(after_path);
  ASSERT_FALSE(expected.empty()) << "missing " << after_path;
  EXPECT_EQ(printed, expected);
  Result<ir::IRModule> parsed = text::ParseModule(expected, after_path, constants);
  ASSERT_TRUE(parsed.ok()) << parsed.status().message();
  std::string why;
  EXPECT_TRUE(ir::StructuralEqual(*result, *parsed, &why)) << why;
}

const GoldenCase kCases[] = {
    {"legalize_static", Pipeline::kLegalize},
    {"legalize_symbolic", Pipeline::kLegalize},
    {"legalize_tir_vars", Pipeline::kLegalize},
    {"dispatch_library", Pipeline::kDispatchLibrary},
    {"legalize_nested", Pipeline::kLegalize},
    {"remove_unused", Pipeline::kRemoveUnused},
    {"canonicalize", Pipeline::kCanonicalize},
    {"canonicalize_tuple", Pipeline::kCanonicalize},
    {"cse", Pipeline::kCse},
    {"dce", Pipeline::kDce},
    {"dce_match_cast", Pipeline::kDce},
    {"dce_match_cast_messages", Pipeline::kDce},
    {"bind_params", Pipeline::kBindParams},
    {"fold_constant", Pipeline::kFoldConstant},
    {"fold_constant_concat", Pipeline::kFoldConstant},
    {"flatten_calls", Pipeline::kFlatten},
    {"decompose_ops", Pipeline::kDecompose},
    {"pack_constant_weights", Pipeline::kPackWeights},
    {"fold_softmax_nan_guard", Pipeline::kFoldSoftmaxNanGuard},
    {"shape_condition", Pipeline::kShapeCondition},
    {"view_reshapes", Pipeline::kViewReshapes},
    {"mixed_precision", Pipeline::kMixedPrecision},
    {"guard_raise_arms", Pipeline::kGuardRaiseArms},
    {"guard_raise_arms_cond", Pipeline::kGuardRaiseArms},
    {"inline_functions", Pipeline::kInlineFunctions},
    {"inline_functions_arms", Pipeline::kInlineFunctions},
};

INSTANTIATE_TEST_SUITE_P(Passes, PassGoldenTest, ::testing::ValuesIn(kCases),
                         [](const ::testing::TestParamInfo<GoldenCase>& info) { return std::string(info.param.name); });

}  // namespace
}  // namespace kiln
