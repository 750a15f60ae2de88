// Helpers shared by the elementwise, binary, reduction, creation and scan
// operator tests (op_unary_test.cc ... op_scan_test.cc): diagnostics of the
// front half (parse, infer, legalize) and running one compiled module on
// several inputs (symbolic shapes).
#ifndef KILN_TESTS_OPS_OP_ELEM_TEST_UTIL_H_
#define KILN_TESTS_OPS_OP_ELEM_TEST_UTIL_H_

#include <memory>
#include <string>
#include <vector>

#include "compiler/relax/infer_struct_info.h"
#include "compiler/relax/legalize_ops.h"
#include "compiler/text/text.h"
#include "runtime/any.h"
#include "tests/e2e/e2e_util.h"
#include "tests/ops/op_test_util.h"
#include "vm/module.h"

namespace kiln {
namespace optest {

// The status of parsing, inferring and legalizing OneOpModule(params, expr)
// in file "t.relax"; the operator call sits at line 6, column 17.
inline Status FrontHalf(const std::vector<std::string>& params, const std::string& expr) {
  Result<ir::IRModule> m = text::ParseModule(OneOpModule(params, expr), "t.relax");
  if (!m.ok()) return m.status();
  Result<ir::IRModule> inferred = relax::InferStructInfo(*m);
  if (!inferred.ok()) return inferred.status();
  return relax::LegalizeOps(*inferred, relax::LegalizeOptions{}).status();
}

// One diagnostic: parameters, the expression, the code and the message after
// "t.relax:6:17: ".
struct ErrorCase {
  std::vector<std::string> params;
  std::string expr;
  StatusCode code;
  std::string message;
};

inline void ExpectErrors(const std::vector<ErrorCase>& cases) {
  for (const ErrorCase& c : cases) {
    Status s = FrontHalf(c.params, c.expr);
    EXPECT_FALSE(s.ok()) << c.expr;
    EXPECT_EQ(s.code(), c.code) << c.expr << ": " << s.ToString();
    EXPECT_EQ(s.message(), "t.relax:6:17: " + c.message) << c.expr;
  }
}

// The inferred struct info of `r` as printed, e.g. R.Tensor((n, 4), dtype="float32").
inline std::string InferredType(const std::vector<std::string>& params, const std::string& expr) {
  Result<ir::IRModule> m = text::ParseModule(OneOpModule(params, expr), "t.relax");
  if (!m.ok()) return m.status().ToString();
  Result<ir::IRModule> inferred = relax::InferStructInfo(*m);
  if (!inferred.ok()) return inferred.status().ToString();
  std::string printed = text::PrintModule(*inferred);
  size_t at = printed.find("r: ");
  if (at == std::string::npos) return printed;
  size_t end = printed.find(" = ", at);
  return printed.substr(at + 3, end - at - 3);
}

// Compiles `source` once and runs main on each input list; results flattened
// as RunMain's.
inline Result<std::vector<std::vector<Tensor>>> RunEach(const std::string& source,
                                                        const std::vector<std::vector<Tensor>>& inputs) {
  KILN_ASSIGN_OR_RETURN(std::shared_ptr<const vm::Module> mod, e2e::CompileAndLoad(source, "op.relax"));
  std::vector<std::vector<Tensor>> all;
  for (const auto& in : inputs) {
    std::unique_ptr<vm::Context> ctx = mod->CreateContext();
    std::vector<Any> args(in.begin(), in.end());
    Any result;
    KILN_RETURN_IF_ERROR(ctx->Invoke("main", Span<const Any>(args.data(), args.size()), &result));
    std::vector<Tensor> out;
    if (result.is_tuple()) {
      for (const Any& f : result.tuple_fields()) {
        KILN_ASSIGN_OR_RETURN(Tensor t, f.AsTensor());
        out.push_back(t);
      }
    } else {
      KILN_ASSIGN_OR_RETURN(Tensor t, result.AsTensor());
      out.push_back(t);
    }
    all.push_back(out);
  }
  return all;
}

}  // namespace optest
}  // namespace kiln

#endif  // KILN_TESTS_OPS_OP_ELEM_TEST_UTIL_H_
