// Helpers of the passes that rewrite R.nn.conv2d calls with constant
// weights (pack-constant-weights, winograd-conv2d): attribute reads with
// TVM's defaults, static shapes, the binding visitor, and the driver loop
// over a module's Relax functions.
#ifndef KILN_COMPILER_TRANSFORM_CONV_REWRITE_UTIL_H_
#define KILN_COMPILER_TRANSFORM_CONV_REWRITE_UTIL_H_

#include <cstdint>
#include <functional>
#include <map>
#include <set>
#include <string>
#include <vector>

#include "compiler/ir/module.h"
#include "compiler/ir/relax.h"
#include "compiler/relax/infer_struct_info.h"
#include "compiler/transform/expr_mutator.h"
#include "runtime/status.h"

namespace kiln {
namespace transform {

// The string attribute `name`, `dflt` when absent or None, "?" when not a string.
std::string StringAttr(const ir::AttrMap& attrs, const char* name, const std::string& dflt);
// The int attribute `name`, `dflt` when absent or not an int.
int64_t IntAttr(const ir::AttrMap& attrs, const char* name, int64_t dflt);
// An int or int-list attribute as n values: one value repeats, n values
// stay, and for n == 4 two values (h, w) mean both sides; `dflt` each when
// absent. False for any other form.
bool IntsAttr(const ir::AttrMap& attrs, const char* name, size_t n, int64_t dflt, std::vector<int64_t>* out);
// The static float32 shape of `e`, or false.
bool StaticF32(const ir::Expr& e, std::vector<int64_t>* shape);
// conv2d's layouts are the defaults (NCHW data and output, OIHW kernel) and
// its out_dtype is none or float32.
bool DefaultConvLayoutsF32(const ir::AttrMap& attrs);

// The visitor shared by the conv2d rewrites: per Relax function it records
// every name in use (FreshName returns an unused one for new bindings) and
// which variables are bound to constants (ConstantOf), and offers each
// `R.nn.conv2d(x, w)` binding (no match_cast) to RewriteConv, which appends
// the bindings that replace it and returns true, or returns false to keep
// it. Once `status` holds an error nothing more is offered. A rewriter of
// another operator names it and its argument count to the constructor
// (dispatch-int8-matmul: relax.matmul_integer, 4).
class ConvBindingRewriter : public ExprMutator {
 public:
  explicit ConvBindingRewriter(std::string op = "relax.nn.conv2d", size_t num_args = 2)
      : op_(std::move(op)), num_args_(num_args) {}
  Status status;
  ir::Function VisitFunction(const ir::Function& f) override;
  void VisitBinding(const ir::Binding& b, bool in_dataflow, std::vector<ir::Binding>* out) override;

 protected:
  virtual bool RewriteConv(const ir::CallExpr& call, const ir::Binding& b, bool dataflow,
                           std::vector<ir::Binding>* out) = 0;
  // The constant `e` is or whose variable is bound to, or null.
  const ir::ConstantExpr* ConstantOf(const ir::Expr& e) const;
  std::string FreshName(const std::string& base);

 private:
  std::string op_;
  size_t num_args_;
  std::set<std::string> names_;
  std::map<const ir::VarExpr*, const ir::ConstantExpr*> constants_;
};

// The kernels that repack a constant weight at compile time
// (pack-constant-weights, pack-matmul-weights): one PrimFunc per weight
// shape, added to the module on first use as PREFIX (made unique), each
// called on the weight; fold-constant then replaces the call with the
// packed constant.
class PackingKernels {
 public:
  using Builder = std::function<Result<ir::PrimFunc>(const std::string& name, const std::vector<int64_t>& shape)>;
  PackingKernels(ir::IRModule* mod, std::string prefix, Builder build)
      : mod_(mod), prefix_(std::move(prefix)), build_(std::move(build)) {}
  // relax.call_tir of the kernel for a weight of static shape `shape` on
  // `w`, giving a float32 tensor of `packed_shape`.
  Result<ir::Expr> Call(const ir::Expr& w, const std::vector<int64_t>& shape,
                        const std::vector<int64_t>& packed_shape);

 private:
  ir::IRModule* mod_;
  std::string prefix_;
  Builder build_;
  std::map<std::vector<int64_t>, std::string> kernels_;
};

// Runs a fresh `Rewriter(&out, args...)` (an ExprMutator with a Status
// `status`) over each Relax function of `mod`; the PrimFuncs it adds to
// `out` are appended after them. Re-infers struct info when anything
// changed.
template <typename Rewriter, typename... Args>
Result<ir::IRModule> RewriteRelaxFunctions(const ir::IRModule& mod, const Args&... args) {
  ir::IRModule out = mod;
  bool changed = false;
  size_t count = out.entries.size();  // kernels the rewriters add are appended
  for (size_t i = 0; i < count; ++i) {
    if (!out.entries[i].relax) continue;
    ir::Function f = out.entries[i].relax;
    Rewriter rewriter(&out, args...);
    ir::Function g = rewriter.VisitFunction(f);
    KILN_RETURN_IF_ERROR(rewriter.status);
    changed |= g != f;
    out.entries[i].relax = g;
  }
  if (!changed) return out;
  // The new bindings need struct info.
  return relax::InferStructInfo(out);
}

}  // namespace transform
}  // namespace kiln

#endif  // KILN_COMPILER_TRANSFORM_CONV_REWRITE_UTIL_H_
