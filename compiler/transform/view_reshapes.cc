#include "compiler/transform/view_reshapes.h"

#include <memory>
#include <vector>

#include "compiler/arith/simplify.h"
#include "compiler/tir/lower_blocks.h"
#include "compiler/transform/expr_mutator.h"

namespace kiln {
namespace transform {
namespace {

bool IsZero(const ir::PrimExpr& e) {
  const auto* imm = e.as<ir::IntImmNode>();
  return imm != nullptr && imm->value == 0;
}

bool PlainBuffer(const ir::Buffer& b) { return b != nullptr && b->strides.empty() && b->scope == "global"; }

// `e` as a floordiv or floormod of two operands, else null.
const ir::BinaryNode* DivMod(const ir::PrimExpr& e, ir::TirKind kind) {
  return e.defined() && e->kind() == kind ? static_cast<const ir::BinaryNode*>(e.get()) : nullptr;
}

// Row-major position of `indices` in a buffer of `shape` (Horner form). A
// flattening reshape reads [.., f // m, f % m, ..] from a dimension of m:
// the pair folds back to f here, which the simplifier does not prove for a
// symbolic m.
ir::PrimExpr Linear(const std::vector<ir::PrimExpr>& indices, const std::vector<ir::PrimExpr>& shape) {
  ir::PrimExpr pos(int64_t{0});
  for (size_t k = 0; k < indices.size(); ++k) {
    if (k == 0) {
      pos = indices[0];
      continue;
    }
    const ir::BinaryNode* div = DivMod(pos, ir::TirKind::kFloorDiv);
    const ir::BinaryNode* mod = DivMod(indices[k], ir::TirKind::kFloorMod);
    if (div != nullptr && mod != nullptr && arith::CanProveEqual(div->a, mod->a) &&
        arith::CanProveEqual(div->b, mod->b) && arith::CanProveEqual(mod->b, shape[k])) {
      pos = mod->a;
    } else {
      pos = pos * shape[k] + indices[k];
    }
  }
  return pos;
}

// The output's shape when `call` is a call_tir of a row-major copy whose
// output has a symbolic dimension, else null.
const ir::TensorSInfo* ViewableCall(const ir::IRModule& mod, const ir::CallExpr& call) {
  const auto* op = ir::ExprAs<ir::OpExpr>(call.op);
  if (op == nullptr || op->name != "relax.call_tir" || call.args.size() != 2 || call.sinfo_args.size() != 1) {
    return nullptr;
  }
  const auto* gv = ir::ExprAs<ir::GlobalVarExpr>(call.args[0]);
  const auto* args = ir::ExprAs<ir::TupleExpr>(call.args[1]);
  if (gv == nullptr || args == nullptr || args->fields.size() != 1) return nullptr;
  if (ir::ExprAs<ir::VarExpr>(args->fields[0]) == nullptr) return nullptr;
  const auto* out = ir::SInfoAs<ir::TensorSInfo>(call.sinfo_args[0]);
  if (out == nullptr || !out->has_shape || !out->has_dtype) return nullptr;
  bool symbolic = false;
  for (const auto& d : out->shape) symbolic |= d.defined() && d.as<ir::IntImmNode>() == nullptr;
  if (!symbolic) return nullptr;
  ir::PrimFunc f = mod.FindPrim(gv->name);
  return f != nullptr && IsRowMajorCopy(f) ? out : nullptr;
}

class ReshapeViewer : public ExprMutator {
 public:
  explicit ReshapeViewer(const ir::IRModule& mod) : mod_(mod) {}

  void VisitBinding(const ir::Binding& b, bool in_dataflow, std::vector<ir::Binding>* out) override {
    const auto* call = b.match_cast ? nullptr : ir::ExprAs<ir::CallExpr>(b.value);
    const ir::TensorSInfo* shape = call ? ViewableCall(mod_, *call) : nullptr;
    if (shape == nullptr) return ExprMutator::VisitBinding(b, in_dataflow, out);
    const ir::Expr& x = ir::ExprAs<ir::TupleExpr>(call->args[1])->fields[0];
    auto shape_value = std::make_shared<ir::ShapeExpr>(shape->shape);
    shape_value->struct_info = std::make_shared<ir::ShapeSInfo>(true, shape->shape, -1);
    auto view = std::make_shared<ir::CallExpr>(std::make_shared<ir::ExternFuncExpr>(kReshapeViewBuiltin),
                                               std::vector<ir::Expr>{VisitExpr(x), shape_value}, ir::AttrMap{},
                                               call->sinfo_args);
    view->struct_info = call->sinfo_args[0];
    view->span = call->span;
    out->push_back(ir::Binding{b.var, view, nullptr, b.span});
  }

 private:
  const ir::IRModule& mod_;
};

}  // namespace

bool IsRowMajorCopy(const ir::PrimFunc& func) {
  if (func == nullptr || func->params.size() != 2) return false;
  ir::Buffer in = func->BufferOf(func->params[0]);
  ir::Buffer out = func->BufferOf(func->params[1]);
  if (!PlainBuffer(in) || !PlainBuffer(out) || in == out || in->dtype != out->dtype) return false;
  ir::PrimFunc lowered = tir::LowerBlocks(func);
  ir::Stmt s = lowered->body;
  std::vector<const ir::ForNode*> loops;
  for (;;) {
    if (!s) return false;
    if (const auto* seq = ir::As<ir::SeqStmtNode>(s)) {
      if (seq->seq.size() != 1) return false;
      s = seq->seq[0];
    } else if (const auto* loop = ir::As<ir::ForNode>(s)) {
      if (!IsZero(loop->min)) return false;
      loops.push_back(loop);
      s = loop->body;
    } else {
      break;
    }
  }
  const auto* store = ir::As<ir::BufferStoreNode>(s);
  if (store == nullptr || store->buffer->data.get() != out->data.get()) return false;
  const auto* load = store->value.as<ir::BufferLoadNode>();
  if (load == nullptr || load->buffer->data.get() != in->data.get()) return false;
  // One store per output element, each exactly once.
  if (store->indices.size() != loops.size() || out->shape.size() != loops.size()) return false;
  for (size_t k = 0; k < loops.size(); ++k) {
    if (store->indices[k].get() != loops[k]->loop_var.get()) return false;
    if (!arith::CanProveEqual(loops[k]->extent, out->shape[k])) return false;
  }
  if (load->indices.size() != in->shape.size()) return false;
  return arith::CanProveEqual(Linear(load->indices, in->shape), Linear(store->indices, out->shape));
}

Result<ir::IRModule> ViewReshapes(const ir::IRModule& mod) {
  ir::IRModule out = mod;
  for (auto& e : out.entries) {
    if (!e.relax) continue;
    ReshapeViewer viewer(mod);
    e.relax = viewer.VisitFunction(e.relax);
  }
  return out;
}

}  // namespace transform
}  // namespace kiln
