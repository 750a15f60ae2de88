// Helpers for the shape and data-movement operator tests (op_reshape_test.cc,
// op_concat_split_test.cc, ...): modules with several results so that one
// compiled module checks several operators, struct-info inference without
// compiling, and error checks with the call's location.
#ifndef KILN_TESTS_OPS_OP_SHAPE_TEST_UTIL_H_
#define KILN_TESTS_OPS_OP_SHAPE_TEST_UTIL_H_

#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "compiler/relax/infer_struct_info.h"
#include "compiler/relax/legalize_ops.h"
#include "compiler/text/text.h"
#include "tests/ops/op_test_util.h"

namespace kiln {
namespace optest {

// main(<params>) with `n = T.int64()` etc. for each of `syms`, one dataflow
// binding r<i> = exprs[i] each, returning the tuple of them all (or the one
// value). RunMain flattens the tuple, so result i is exprs[i]. An expression
// starting with '~' is bound (later ones may use r<i>) but not returned, e.g.
// a tuple such as split's result.
inline std::string MultiOpModule(const std::vector<std::string>& params, const std::vector<std::string>& exprs,
                                 const std::vector<std::string>& syms = {}) {
  std::string s = "@I.ir_module\nclass Module:\n    @R.function\n    def main(";
  for (size_t i = 0; i < params.size(); ++i) s += (i ? ", " : "") + params[i];
  s += "):\n";
  for (const auto& v : syms) s += "        " + v + " = T.int64()\n";
  s += "        with R.dataflow():\n";
  std::string ret;
  size_t n_ret = 0;
  for (size_t i = 0; i < exprs.size(); ++i) {
    bool hidden = !exprs[i].empty() && exprs[i][0] == '~';
    s += "            r" + std::to_string(i) + " = " + exprs[i].substr(hidden ? 1 : 0) + "\n";
    if (hidden) continue;
    ret += (n_ret++ ? ", r" : "r") + std::to_string(i);
  }
  s += "            R.output(" + ret + ")\n";
  s += n_ret == 1 ? "        return " + ret + "\n" : "        return (" + ret + ")\n";
  return s;
}

// The struct info main returns after normalization, printed
// ("R.Tensor((n * 4,), dtype=\"float32\")"), or the error.
inline Result<std::string> InferredResult(const std::string& source) {
  KILN_ASSIGN_OR_RETURN(ir::IRModule mod, text::ParseModule(source, "t.relax"));
  KILN_ASSIGN_OR_RETURN(mod, relax::InferStructInfo(mod));
  ir::Function f = mod.FindRelax("main");
  if (!f) return Internal("no main");
  return text::PrintStructInfo(f->ret_sinfo);
}

// Parses, normalizes and legalizes; the first error.
inline Status NormalizeAndLegalize(const std::string& source) {
  KILN_ASSIGN_OR_RETURN(ir::IRModule mod, text::ParseModule(source, "t.relax"));
  KILN_ASSIGN_OR_RETURN(mod, relax::InferStructInfo(mod));
  return relax::LegalizeOps(mod, {}).status();
}

// A one-result module's error: code and the whole message.
inline ::testing::AssertionResult FailsWith(const std::string& source, StatusCode code, const std::string& message) {
  Status s = NormalizeAndLegalize(source);
  if (s.ok()) return ::testing::AssertionFailure() << "no error";
  if (s.code() != code || s.message() != message) {
    return ::testing::AssertionFailure() << "got " << s.ToString() << "\nwant " << message;
  }
  return ::testing::AssertionSuccess();
}

// Every element of `x` in row-major order (a reshape keeps them).
inline std::vector<double> Same(const Tensor& x) { return ToDoubles(x); }

}  // namespace optest
}  // namespace kiln

#endif  // KILN_TESTS_OPS_OP_SHAPE_TEST_UTIL_H_
