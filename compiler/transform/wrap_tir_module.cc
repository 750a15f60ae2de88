#include "compiler/transform/wrap_tir_module.h"

#include <set>

#include "compiler/tir/stmt_functor.h"

namespace kiln {
namespace transform {
namespace {

// The buffers a statement stores into.
class StoredBuffers : public tir::StmtExprVisitor {
 public:
  std::set<const ir::BufferNode*> buffers;
  void VisitStmt(const ir::Stmt& s) override {
    if (const auto* st = ir::As<ir::BufferStoreNode>(s)) buffers.insert(st->buffer.get());
    tir::StmtExprVisitor::VisitStmt(s);
  }
};

// The variables of expressions.
class UsedVars : public tir::StmtExprVisitor {
 public:
  std::set<const ir::VarNode*> vars;
  void VisitExpr(const ir::PrimExpr& e) override {
    if (const auto* v = e.as<ir::VarNode>()) vars.insert(v);
    tir::StmtExprVisitor::VisitExpr(e);
  }
};

Result<ir::Function> Wrap(const ir::PrimFunc& f, const std::string& kernel_name) {
  const std::string where = "T.prim_func '" + f->name + "' (a module without Relax functions)";
  StoredBuffers stored;
  stored.VisitStmt(f->body);
  std::vector<ir::Buffer> buffers;
  for (const ir::Var& p : f->params) {
    ir::Buffer b = f->BufferOf(p);
    if (!b) return InvalidArgument(where + ": parameter '" + p->name + "' is not a buffer; Kiln calls such a function with tensors only");
    buffers.push_back(b);
  }
  size_t first_output = buffers.size();
  while (first_output > 0 && stored.buffers.count(buffers[first_output - 1].get())) --first_output;
  if (first_output == buffers.size())
    return InvalidArgument(where + ": its last parameter is not written, so it has no output (outputs are the trailing parameters it stores into)");
  for (size_t i = 0; i < first_output; ++i)
    if (stored.buffers.count(buffers[i].get()))
      return InvalidArgument(where + ": it writes parameter '" + buffers[i]->name +
                             "', which is followed by an input; its outputs must be its last parameters");

  auto fn = std::make_shared<ir::FunctionExpr>();
  fn->name = f->name;
  fn->span = f->span;
  UsedVars input_dims;
  std::vector<ir::Expr> args;
  for (size_t i = 0; i < first_output; ++i) {
    for (const ir::PrimExpr& d : buffers[i]->shape) input_dims.VisitExpr(d);
    ir::RVar v = ir::MakeRVar(buffers[i]->name, ir::MakeTensorSInfo(buffers[i]->shape, buffers[i]->dtype));
    fn->params.push_back(v);
    args.push_back(v);
  }
  std::vector<ir::StructInfo> outs;
  for (size_t i = first_output; i < buffers.size(); ++i) {
    UsedVars dims;
    for (const ir::PrimExpr& d : buffers[i]->shape) dims.VisitExpr(d);
    for (const ir::VarNode* v : dims.vars)
      if (!input_dims.vars.count(v))
        return InvalidArgument(where + ": the size '" + v->name + "' of output '" + buffers[i]->name +
                               "' is not the size of an input, so a caller could not give it");
    outs.push_back(ir::MakeTensorSInfo(buffers[i]->shape, buffers[i]->dtype));
  }
  ir::Expr call = ir::MakeOpCall("relax.call_tir",
                                 {std::make_shared<ir::GlobalVarExpr>(kernel_name),
                                  std::make_shared<ir::TupleExpr>(std::move(args))},
                                 {}, outs);
  ir::Binding b;
  b.var = ir::MakeRVar(outs.size() == 1 ? buffers.back()->name : "outputs");
  b.value = call;
  b.span = f->span;
  ir::BindingBlock block;
  block.bindings.push_back(b);
  fn->body = std::make_shared<ir::SeqExprNode>(std::vector<ir::BindingBlock>{block}, b.var);
  return ir::Function(fn);
}

}  // namespace

Result<ir::IRModule> WrapTirModule(const ir::IRModule& mod) {
  for (const auto& e : mod.entries)
    if (e.relax) return mod;
  ir::IRModule out = mod;
  for (const auto& e : mod.entries) {
    if (e.prim->is_private) continue;
    std::string kernel = out.UniqueName(e.name + "_tir");
    KILN_ASSIGN_OR_RETURN(ir::Function wrapper, Wrap(e.prim, kernel));
    auto renamed = std::make_shared<ir::PrimFuncNode>(*e.prim);
    renamed->name = kernel;
    renamed->is_private = true;
    out.Add(kernel, ir::PrimFunc(renamed));
    out.Add(e.name, wrapper);  // replaces the PrimFunc entry, keeping its place
  }
  return out;
}

}  // namespace transform
}  // namespace kiln
