// BlockBuilder: builds Relax functions in C++ the way the MLC course's
// relax.BlockBuilder does in Python — a function scope, an optional dataflow
// scope, `Emit` for each binding, `EmitTE` to turn a tensor expression into a
// new PrimFunc plus an R.call_tir binding, `EmitOutput` for the values that
// leave the dataflow block, and `EmitFuncOutput` to finish the function.
//
//   BlockBuilder bb;
//   ir::RVar x = BlockBuilder::Param("x", ir::MakeTensorSInfo({n, 784}, f32));
//   bb.BeginFunction("main", {x});
//   bb.BeginDataflow();
//   auto lv = bb.EmitTE(te_matmul, {x, w}, "te_matmul");
//   auto gv = bb.EmitOutput(*lv);
//   bb.EndDataflow();
//   bb.EmitFuncOutput(*gv);
//   ir::IRModule mod = bb.module();
//
// Every emitted value is normalized at once (its struct info inferred), so
// errors surface at the Emit that caused them. Variable names follow TVM's
// printing: "lv", "lv1", ... inside dataflow blocks and "gv", "gv1", ... for
// outputs, unless a name hint is given. A failed call leaves the builder as it
// was. Not thread-safe.
#ifndef KILN_COMPILER_BUILDER_BLOCK_BUILDER_H_
#define KILN_COMPILER_BUILDER_BLOCK_BUILDER_H_

#include <functional>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "compiler/ir/module.h"
#include "compiler/relax/te_builder.h"
#include "runtime/status.h"

namespace kiln {
namespace builder {

class BlockBuilder {
 public:
  explicit BlockBuilder(ir::IRModule mod = {});

  // A function parameter with its struct info.
  static ir::RVar Param(const std::string& name, ir::StructInfo sinfo);

  Status BeginFunction(const std::string& name, std::vector<ir::RVar> params, ir::AttrMap attrs = {},
                       bool is_private = false);
  // Starts a function while another is open (a branch or loop body that an
  // importer lifts out of the function it is building): the open one is
  // suspended, and EmitFuncOutput or AbandonFunction of the nested one
  // resumes it where it was.
  Status BeginNestedFunction(const std::string& name, std::vector<ir::RVar> params, ir::AttrMap attrs = {},
                             bool is_private = true);
  // Drops the open function without adding it (after an error while building
  // it); a suspended function resumes.
  void AbandonFunction();
  Status BeginDataflow();
  // Ends the open dataflow block; a block that holds no binding is dropped.
  Status EndDataflow();
  // Whether a dataflow block is open.
  bool InDataflow() const { return fn_ && fn_->in_dataflow; }

  // Binds `value` to a new variable (a dataflow variable inside a dataflow
  // block). An empty hint picks "lv<N>".
  Result<ir::RVar> Emit(ir::Expr value, const std::string& name_hint = "");
  // R.match_cast(value, sinfo); `messages` (optional, one per dimension of
  // the matched shape) say what a failed run-time check means (ir::Binding).
  Result<ir::RVar> EmitMatchCast(ir::Expr value, ir::StructInfo sinfo, const std::string& name_hint = "",
                                 std::vector<std::string> messages = {});

  // The tensor-expression callback: given the TE inputs (one per argument, in
  // order), adds stages to `b` and returns the output tensor(s).
  using TeFn = std::function<Result<std::vector<te::Tensor>>(te::FuncBuilder& b, const std::vector<te::Tensor>& inputs)>;
  // Builds a PrimFunc named `prim_name` (made unique) from `fn` over `args`
  // (tensor-typed expressions), adds it to the module, and emits
  // R.call_tir(cls.<prim_name>, (args), out_sinfo). One output: a tensor;
  // several: a tuple.
  Result<ir::RVar> EmitTE(const TeFn& fn, const std::vector<ir::Expr>& args, const std::string& prim_name,
                          const std::string& name_hint = "");

  // Inside a dataflow block: binds `value` to a non-dataflow variable ("gv<N>")
  // that the block outputs.
  Result<ir::RVar> EmitOutput(ir::Expr value, const std::string& name_hint = "");

  // Ends the function with `result` (no dataflow block may be open) and adds
  // it to the module.
  Status EmitFuncOutput(ir::Expr result);

  // Adds a PrimFunc under a unique name derived from `name`; returns the name.
  std::string AddPrimFunc(ir::PrimFunc func, const std::string& name);

  const ir::IRModule& module() const { return mod_; }

 private:
  Status CheckInFunction(const char* what) const;
  std::string NextName(const std::string& hint, bool output);
  Result<ir::RVar> Bind(ir::Expr value, ir::StructInfo match_cast, const std::string& name_hint, bool output);

  ir::IRModule mod_;
  struct FunctionScope {
    std::string name;
    std::vector<ir::RVar> params;
    ir::AttrMap attrs;
    bool is_private = false;
    std::vector<ir::BindingBlock> blocks;
    bool in_dataflow = false;
    std::map<std::string, int> name_counts;
  };
  std::optional<FunctionScope> fn_;
  std::vector<FunctionScope> suspended_;  // outer functions of nested ones
};

}  // namespace builder
}  // namespace kiln

#endif  // KILN_COMPILER_BUILDER_BLOCK_BUILDER_H_
