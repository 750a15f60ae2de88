// The tensor-expression builder that operator legalizations use: a PrimFunc
// described as a small dataflow of stages over whole tensors (TVM's te.compute
// / te.create_prim_func, our own take).
//
//   te::FuncBuilder b("softmax");
//   te::Tensor x = b.Input("A", x_shape, f32);              // caller's shape
//   te::Tensor m = b.Reduce("T_max", rows, f32, te::ReduceKind::kMax, {cols},
//                           [&](auto& i, auto& k) { return x({i[0], k[0]}); });
//   te::Tensor y = b.Compute("T_softmax", x.shape(), f32, [&](auto& i) { ... });
//   Result<ir::PrimFunc> f = b.Build({y});
//
// Contract:
// - Shapes and extents passed in may use the caller's (Relax) symbolic Vars;
//   the builder replaces them by PrimFunc-local Vars of the same names (one per
//   caller Var, created on first use). Local() applies the same mapping to any
//   other expression an fcompute needs (a reshape target, a pad width). The
//   shapes Tensor::shape() returns are already local.
// - Each stage becomes one block in the root block, in creation order, with
//   TVM's structure: one loop per output dimension (then per reduction axis),
//   a block with spatial/reduce iteration variables, T.init for reductions.
// - Build(outputs): parameters are the inputs in creation order, then the
//   outputs in the given order, then one int64 scalar per local symbolic Var
//   that is not a plain dimension of any of those buffers (the kernel could
//   not bind it from them), in creation order and named like the caller's Var:
//   the call passes the caller's values as tir_vars (TVM's convention). Every
//   other computed tensor becomes a T.alloc_buffer of the root block. Fails
//   (kInvalidArgument) when an output is an input.
// - fcompute callbacks run once, when the stage is created.
#ifndef KILN_COMPILER_RELAX_TE_BUILDER_H_
#define KILN_COMPILER_RELAX_TE_BUILDER_H_

#include <functional>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "compiler/ir/tir.h"
#include "runtime/status.h"

namespace kiln {
namespace te {

using Indices = std::vector<ir::PrimExpr>;

// A tensor of the function being built: an input or a stage's result.
class Tensor {
 public:
  Tensor() = default;
  explicit Tensor(ir::Buffer b) : buffer_(std::move(b)) {}
  const ir::Buffer& buffer() const { return buffer_; }
  const std::vector<ir::PrimExpr>& shape() const { return buffer_->shape; }
  size_t ndim() const { return buffer_->shape.size(); }
  DType dtype() const { return buffer_->dtype; }
  // A load of one element.
  ir::PrimExpr operator()(Indices idx) const { return ir::Load(buffer_, std::move(idx)); }
  bool defined() const { return buffer_ != nullptr; }

 private:
  ir::Buffer buffer_;
};

enum class ReduceKind { kSum, kProd, kMax, kMin };
// The combiner's identity in `dtype`: 0, 1, the lowest value, the highest value
// (-inf / +inf for floats).
ir::PrimExpr ReduceIdentity(ReduceKind kind, DType dtype);
// combine(acc, value) of the kind.
ir::PrimExpr ReduceCombine(ReduceKind kind, ir::PrimExpr acc, ir::PrimExpr value);

class FuncBuilder {
 public:
  explicit FuncBuilder(std::string func_name);

  ir::PrimExpr Local(const ir::PrimExpr& e);
  std::vector<ir::PrimExpr> Local(const std::vector<ir::PrimExpr>& es);

  // The inverse of Local: local Vars back to the caller's (for the out_sinfo
  // of a call to the built function).
  ir::PrimExpr Caller(const ir::PrimExpr& e) const;
  std::vector<ir::PrimExpr> Caller(const std::vector<ir::PrimExpr>& es) const;

  Tensor Input(const std::string& name, const std::vector<ir::PrimExpr>& shape, DType dtype);

  using ComputeFn = std::function<ir::PrimExpr(const Indices& i)>;
  Tensor Compute(const std::string& name, const std::vector<ir::PrimExpr>& shape, DType dtype, const ComputeFn& f);

  // out[i] = combine over r in [0, extents) of f(i, r), starting from `init`
  // (undefined: the combiner's identity).
  using ReduceFn = std::function<ir::PrimExpr(const Indices& i, const Indices& r)>;
  Tensor Reduce(const std::string& name, const std::vector<ir::PrimExpr>& shape, DType dtype, ReduceKind kind,
                const std::vector<ir::PrimExpr>& extents, const ReduceFn& f, ir::PrimExpr init = ir::PrimExpr());

  // A stage written as explicit TIR (scans, sorts): `body(out)` must write
  // every element of `out`; it is wrapped in an opaque block.
  using StmtFn = std::function<ir::Stmt(const ir::Buffer& out)>;
  Tensor Custom(const std::string& name, const std::vector<ir::PrimExpr>& shape, DType dtype, const StmtFn& body);

  Result<ir::PrimFunc> Build(const std::vector<Tensor>& outputs);

  // Attributes to set on the PrimFunc (tir.noalias is always set).
  ir::AttrMap& attrs() { return attrs_; }

 private:
  ir::Var NewLoopVar(const std::string& base);
  void AddStage(ir::Stmt stmt, const ir::Buffer& out);

  std::string func_name_;
  std::map<const ir::VarNode*, ir::PrimExpr> local_;  // caller Var -> local Var
  std::vector<ir::Var> local_vars_;                   // in creation order
  std::vector<std::pair<ir::Var, ir::PrimExpr>> caller_of_;  // local Var -> caller expression
  std::vector<ir::Buffer> inputs_;
  std::vector<ir::Buffer> computed_;
  std::vector<ir::Stmt> stages_;
  std::map<std::string, int> names_;
  ir::AttrMap attrs_;
};

}  // namespace te
}  // namespace kiln

#endif  // KILN_COMPILER_RELAX_TE_BUILDER_H_
