#include "compiler/transform/pack_matmul_weights.h"

#include <map>
#include <memory>
#include <string>
#include <vector>

#include "compiler/ir/op_pattern.h"
#include "compiler/relax/te_builder.h"
#include "compiler/tir/matmul_schedule.h"
#include "compiler/transform/conv_rewrite_util.h"
#include "compiler/transform/dead_code_elimination.h"
#include "compiler/transform/fold_constant.h"

namespace kiln {
namespace transform {
namespace {

// The PrimFunc W[K, N] -> P[ceil(N / b), K, b], P[c, k, l] = W[k, c * b + l],
// 0 past column N (the last block's padding; the column is clamped so that
// the load stays inside W, the select discards it).
Result<ir::PrimFunc> PackingKernel(const std::string& name, const std::vector<int64_t>& w, int64_t b) {
  const int64_t n = w[1], blocks = (n + b - 1) / b;
  te::FuncBuilder fb(name);
  te::Tensor in = fb.Input("W", {ir::PrimExpr(w[0]), ir::PrimExpr(n)}, DType::Float32());
  te::Tensor out = fb.Compute("W_packed", {ir::PrimExpr(blocks), ir::PrimExpr(w[0]), ir::PrimExpr(b)},
                              DType::Float32(), [&](const te::Indices& i) {
                                ir::PrimExpr col = i[0] * ir::PrimExpr(b) + i[2];
                                if (n % b == 0) return in({i[1], col});
                                ir::PrimExpr inside = ir::MakeBinary(ir::TirKind::kLT, col, ir::PrimExpr(n));
                                ir::PrimExpr clamped = ir::MakeBinary(ir::TirKind::kMin, col, ir::PrimExpr(n - 1));
                                return ir::PrimExpr(std::make_shared<ir::SelectNode>(
                                    inside, in({i[1], clamped}), ir::FloatImm(DType::Float32(), 0)));
                              });
  KILN_ASSIGN_OR_RETURN(ir::PrimFunc f, fb.Build({out}));
  auto nf = std::make_shared<ir::PrimFuncNode>(*f);
  nf->attrs[ir::kOpPatternAttr].kind = ir::AttrValue::Kind::kInt;
  nf->attrs[ir::kOpPatternAttr].i = static_cast<int64_t>(ir::OpPattern::kInjective);
  return ir::PrimFunc(nf);
}

// A float32 tensor of known rank >= 2 (its shape may be symbolic).
bool MatrixF32(const ir::Expr& e) {
  const auto* t = ir::SInfoAs<ir::TensorSInfo>(e->struct_info);
  return t && t->has_dtype && t->dtype == DType::Float32() && t->ndim >= 2;
}

class Packer : public ConvBindingRewriter {
 public:
  // Packing kernels are added to `mod` (one per weight shape).
  explicit Packer(ir::IRModule* mod)
      : ConvBindingRewriter("relax.matmul", 2),
        kernels_(mod, "pack_weight_kn" + std::to_string(tir::kMatmulWeightBlock) + "n",
                 [](const std::string& name, const std::vector<int64_t>& ws) {
                   return PackingKernel(name, ws, tir::kMatmulWeightBlock);
                 }) {}

 private:
  bool RewriteConv(const ir::CallExpr& call, const ir::Binding& b, bool dataflow,
                   std::vector<ir::Binding>* out) override {
    const ir::Expr& w = call.args[1];
    std::vector<int64_t> ws;
    const int64_t block = tir::kMatmulWeightBlock;
    // Fewer columns than a block keep the narrower tiles of the unpacked
    // kernel; more are padded to whole blocks.
    if (!ConstantOf(w) || !StaticF32(w, &ws) || ws.size() != 2 || ws[1] < block) return false;
    if (!MatrixF32(call.args[0])) return false;
    for (const auto& kv : call.attrs)
      if (kv.first != "out_dtype") return false;
    std::string out_dtype = StringAttr(call.attrs, "out_dtype", "");
    if (!out_dtype.empty() && out_dtype != "void" && out_dtype != "float32") return false;

    Result<ir::Expr> pack = kernels_.Call(w, ws, {(ws[1] + block - 1) / block, ws[0], block});
    if (!pack.ok()) {
      status = pack.status();
      return false;
    }
    ir::RVar pv = ir::MakeRVar(FreshName("packed"), nullptr, dataflow);
    out->push_back(ir::Binding{pv, *pack, nullptr, b.span});
    ir::AttrMap attrs = call.attrs;
    ir::AttrValue layout;
    layout.kind = ir::AttrValue::Kind::kString;
    layout.s = "KN" + std::to_string(block) + "n";
    attrs["weight_layout"] = layout;
    if (ws[1] % block != 0) {
      ir::AttrValue columns;
      columns.kind = ir::AttrValue::Kind::kInt;
      columns.i = ws[1];
      attrs["weight_columns"] = columns;
    }
    out->push_back(ir::Binding{b.var, ir::MakeOpCall("relax.matmul", {call.args[0], ir::Expr(pv)}, attrs, call.sinfo_args),
                               nullptr, b.span});
    return true;
  }

  PackingKernels kernels_;
};

}  // namespace

Result<ir::IRModule> PackMatmulWeights(const ir::IRModule& mod) {
  KILN_ASSIGN_OR_RETURN(ir::IRModule packed, RewriteRelaxFunctions<Packer>(mod));
  if (packed.entries.size() == mod.entries.size()) return packed;  // no kernel added: nothing rewritten
  KILN_ASSIGN_OR_RETURN(ir::IRModule folded, FoldConstant(packed));
  return EliminateDeadCode(folded);  // the unpacked weights
}

}  // namespace transform
}  // namespace kiln
