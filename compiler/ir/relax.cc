#include "compiler/ir/relax.h"

#include "compiler/ir/module.h"

namespace kiln {
namespace ir {

StructInfo MakeTensorSInfo(std::vector<PrimExpr> shape, DType dtype) {
  return std::make_shared<TensorSInfo>(true, std::move(shape), -1, dtype);
}

StructInfo MakeTensorSInfoNdim(int ndim, DType dtype) {
  return std::make_shared<TensorSInfo>(false, std::vector<PrimExpr>{}, ndim, dtype);
}

RVar MakeRVar(const std::string& name, StructInfo annotation, bool dataflow) {
  return std::make_shared<VarExpr>(name, std::move(annotation), dataflow);
}

Expr MakeOpCall(const std::string& op, std::vector<Expr> args, AttrMap attrs, std::vector<StructInfo> sinfo_args) {
  return std::make_shared<CallExpr>(std::make_shared<OpExpr>(op), std::move(args), std::move(attrs),
                                    std::move(sinfo_args));
}

Expr MakeConstant(Tensor t, std::string name) {
  std::vector<PrimExpr> dims(t.shape().begin(), t.shape().end());
  DType dtype = t.dtype();
  auto c = std::make_shared<ConstantExpr>(std::move(t), std::move(name));
  c->struct_info = MakeTensorSInfo(std::move(dims), dtype);
  return c;
}

void IRModule::Add(const std::string& n, Function f) {
  for (auto& e : entries) {
    if (e.name == n) {
      e.relax = std::move(f);
      e.prim = nullptr;
      return;
    }
  }
  entries.push_back(ModuleEntry{n, std::move(f), nullptr});
}

void IRModule::Add(const std::string& n, PrimFunc f) {
  for (auto& e : entries) {
    if (e.name == n) {
      e.prim = std::move(f);
      e.relax = nullptr;
      return;
    }
  }
  entries.push_back(ModuleEntry{n, nullptr, std::move(f)});
}

std::string IRModule::UniqueName(const std::string& base) const {
  if (!Find(base)) return base;
  for (int i = 1;; ++i) {
    std::string n = base + std::to_string(i);
    if (!Find(n)) return n;
  }
}

Function WithBody(const Function& f, std::vector<BindingBlock> blocks, Expr body, bool keep_struct_info) {
  auto seq = std::make_shared<SeqExprNode>(std::move(blocks), std::move(body));
  seq->span = f->body->span;
  if (keep_struct_info) seq->struct_info = f->body->struct_info;
  auto out = std::make_shared<FunctionExpr>(*f);
  out->body = seq;
  return out;
}

}  // namespace ir
}  // namespace kiln
