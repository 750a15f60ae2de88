#include "compiler/fusion/prim_func_instance.h"

#include <memory>
#include <unordered_map>

#include "compiler/arith/simplify.h"
#include "compiler/arith/debug_string.h"
#include "compiler/tir/stmt_functor.h"
#include "compiler/tir/substitute.h"

namespace kiln {
namespace fusion {
namespace {

using ir::Buffer;
using ir::PrimExpr;
using ir::Stmt;

std::string ShapeText(const std::vector<PrimExpr>& shape) {
  std::string s = "(";
  for (size_t i = 0; i < shape.size(); ++i) s += (i ? ", " : "") + arith::ToDebugString(shape[i]);
  return s + (shape.size() == 1 ? ",)" : ")");
}

class Instantiator : public tir::StmtExprMutator {
 public:
  Instantiator(tir::VarMap vars, std::unordered_map<const ir::BufferNode*, Buffer> buffers,
               std::set<std::string>* block_names)
      : vars_(std::move(vars)), buffers_(std::move(buffers)), block_names_(block_names) {}

  PrimExpr MutateExpr(const PrimExpr& e) override {
    if (const auto* v = e.as<ir::VarNode>()) {
      auto it = vars_.find(v);
      return it == vars_.end() ? e : it->second;
    }
    if (const auto* l = e.as<ir::BufferLoadNode>()) {
      std::vector<PrimExpr> idx;
      MutateExprs(l->indices, &idx);
      auto n = std::make_shared<ir::BufferLoadNode>(Map(l->buffer), std::move(idx));
      n->span = l->span;
      return PrimExpr(n);
    }
    return tir::StmtExprMutator::MutateExpr(e);
  }

  Stmt MutateStmt(const Stmt& s) override {
    if (!s) return s;
    if (const auto* x = ir::As<ir::BufferStoreNode>(s)) {
      std::vector<PrimExpr> idx;
      MutateExprs(x->indices, &idx);
      return Spanned(std::make_shared<ir::BufferStoreNode>(Map(x->buffer), MutateExpr(x->value), std::move(idx)), s);
    }
    if (const auto* x = ir::As<ir::ForNode>(s)) {
      PrimExpr mn = MutateExpr(x->min), ext = MutateExpr(x->extent);
      ir::Var v = Fresh(x->loop_var);
      return Spanned(std::make_shared<ir::ForNode>(v, mn, ext, x->for_kind, MutateStmt(x->body)), s);
    }
    if (const auto* x = ir::As<ir::LetStmtNode>(s)) {
      PrimExpr value = MutateExpr(x->value);
      ir::Var v = Fresh(x->var);
      return Spanned(std::make_shared<ir::LetStmtNode>(v, value, MutateStmt(x->body)), s);
    }
    if (const auto* x = ir::As<ir::AllocateNode>(s)) {
      Buffer b = Copy(x->buffer);
      return Spanned(std::make_shared<ir::AllocateNode>(b, MutateStmt(x->body)), s);
    }
    if (const auto* x = ir::As<ir::BlockRealizeNode>(s)) {
      std::vector<PrimExpr> values;
      MutateExprs(x->iter_values, &values);
      PrimExpr pred = MutateExpr(x->predicate);
      ir::Block b = x->block;
      b.name = UniqueBlockName(b.name);
      for (auto& iv : b.iter_vars) {
        iv.min = MutateExpr(iv.min);
        iv.extent = MutateExpr(iv.extent);
        iv.var = Fresh(iv.var);
      }
      for (auto& a : b.alloc_buffers) a = Copy(a);
      for (auto* regions : {&b.reads, &b.writes}) {
        for (auto& r : *regions) {
          r.buffer = Map(r.buffer);
          for (auto& range : r.ranges) range = {MutateExpr(range.first), MutateExpr(range.second)};
        }
      }
      b.init = MutateStmt(b.init);
      b.body = MutateStmt(b.body);
      return Spanned(std::make_shared<ir::BlockRealizeNode>(std::move(values), pred, std::move(b)), s);
    }
    return tir::StmtExprMutator::MutateStmt(s);
  }

  // A fresh buffer for one the function allocates, with its shape in the
  // enclosing function's variables.
  Buffer Copy(const Buffer& old) {
    auto b = std::make_shared<ir::BufferNode>(*old);
    b->data = ir::MakeVar(old->data ? old->data->name : old->name + "_data", ir::HandleType());
    for (auto& d : b->shape) d = MutateExpr(d);
    for (auto& d : b->strides) d = MutateExpr(d);
    if (old->data) vars_[old->data.get()] = PrimExpr(b->data);
    buffers_[old.get()] = b;
    return b;
  }

  Buffer Map(const Buffer& b) const {
    auto it = buffers_.find(b.get());
    return it == buffers_.end() ? b : it->second;  // unknown buffers are left to later checks
  }

 private:
  ir::Var Fresh(const ir::Var& old) {
    ir::Var v = ir::MakeVar(old->name, old->dtype);
    vars_[old.get()] = PrimExpr(v);
    return v;
  }

  std::string UniqueBlockName(const std::string& name) {
    std::string n = name;
    for (int k = 1; block_names_->count(n); ++k) n = name + "_" + std::to_string(k);
    block_names_->insert(n);
    return n;
  }

  template <typename T>
  static Stmt Spanned(std::shared_ptr<T> n, const Stmt& old) {
    n->span = old->span;
    return n;
  }

  tir::VarMap vars_;
  std::unordered_map<const ir::BufferNode*, Buffer> buffers_;
  std::set<std::string>* block_names_;
};

// Whether a - b simplifies to a non-zero constant.
bool ProvablyDifferent(const PrimExpr& a, const PrimExpr& b) {
  PrimExpr diff = arith::Simplify(ir::MakeBinary(ir::TirKind::kSub, a, b));
  const auto* imm = diff.as<ir::IntImmNode>();
  return imm != nullptr && imm->value != 0;
}

bool IsRootBlock(const Stmt& s) {
  const auto* br = ir::As<ir::BlockRealizeNode>(s);
  return br && br->block.iter_vars.empty() && !br->block.init && br->iter_values.empty();
}

}  // namespace

Result<PrimFuncInstance> InstantiatePrimFunc(const ir::PrimFunc& func, const std::vector<Buffer>& args,
                                             const std::vector<ir::PrimExpr>& scalars,
                                             std::set<std::string>* block_names, bool output_promised) {
  if (func->params.size() != args.size() + scalars.size()) {
    return InvalidArgument("fuse_tir: kernel '" + func->name + "' has " + std::to_string(func->params.size()) +
                           " parameters but is given " + std::to_string(args.size()) + " buffers and " +
                           std::to_string(scalars.size()) + " scalars");
  }
  tir::VarMap vars;
  // Scalars first: a buffer dimension naming one is then checked, not bound.
  for (size_t k = 0; k < scalars.size(); ++k) {
    const ir::Var& p = func->params[args.size() + k];
    if (func->BufferOf(p)) {
      return InvalidArgument("fuse_tir: kernel '" + func->name + "' parameter '" + p->name +
                             "' is a buffer where the call passes a scalar");
    }
    vars[p.get()] = scalars[k];
  }
  std::unordered_map<const ir::BufferNode*, Buffer> buffers;
  std::vector<Buffer> params;
  for (size_t i = 0; i < args.size(); ++i) {
    Buffer p = func->BufferOf(func->params[i]);
    if (!p) {
      return InvalidArgument("fuse_tir: kernel '" + func->name + "' parameter '" + func->params[i]->name +
                             "' is a scalar where the call passes a buffer");
    }
    params.push_back(p);
    buffers[p.get()] = args[i];
    if (p->data && args[i]->data) vars[p->data.get()] = PrimExpr(args[i]->data);
    if (p->shape.size() != args[i]->shape.size()) continue;  // reported below
    for (size_t d = 0; d < p->shape.size(); ++d) {
      const auto* v = p->shape[d].as<ir::VarNode>();
      if (v && !vars.count(v)) vars[v] = args[i]->shape[d];
    }
  }
  for (size_t i = 0; i < args.size(); ++i) {
    const Buffer& p = params[i];
    bool ok = p->dtype == args[i]->dtype && p->shape.size() == args[i]->shape.size();
    const bool promised = output_promised && i + 1 == args.size();
    for (size_t d = 0; ok && d < p->shape.size(); ++d) {
      PrimExpr want = tir::Substitute(p->shape[d], vars);
      ok = arith::CanProveEqual(want, args[i]->shape[d]) ||
           (promised && !ProvablyDifferent(want, args[i]->shape[d]));
    }
    if (!ok) {
      return InvalidArgument("fuse_tir: kernel '" + func->name + "' parameter '" + p->name + "' of type " +
                             ShapeText(p->shape) + " " + DTypeToString(p->dtype) + " receives '" + args[i]->name +
                             "' of type " + ShapeText(args[i]->shape) + " " + DTypeToString(args[i]->dtype));
    }
  }
  Instantiator inst(std::move(vars), std::move(buffers), block_names);
  PrimFuncInstance out;
  if (IsRootBlock(func->body)) {
    const auto* root = ir::As<ir::BlockRealizeNode>(func->body);
    for (const auto& a : root->block.alloc_buffers) out.root_allocs.push_back(inst.Copy(a));
    out.body = inst.MutateStmt(root->block.body);
  } else {
    out.body = inst.MutateStmt(func->body);
  }
  return out;
}

}  // namespace fusion
}  // namespace kiln
