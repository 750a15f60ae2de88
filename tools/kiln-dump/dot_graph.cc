#include "tools/kiln-dump/dot_graph.h"

#include <map>
#include <vector>

#include "compiler/driver/compile.h"
#include "compiler/relax/infer_struct_info.h"
#include "compiler/text/text.h"  // PrintStructInfo

namespace kiln {
namespace tools {
namespace {

// Text inside a double-quoted DOT string; "\n" stays a DOT line break.
std::string Escape(const std::string& s) {
  std::string out;
  for (char c : s) {
    if (c == '"' || c == '\\') out += '\\';
    out += c;
  }
  return out;
}

std::string SInfoText(const ir::Expr& e, const ir::StructInfo& fallback) {
  const ir::StructInfo& s = e->struct_info ? e->struct_info : fallback;
  return s ? text::PrintStructInfo(s) : "";
}

// "matmul", "call_tir fused_matmul_add", "call_dps_packed kiln.dnnl.matmul".
std::string ValueName(const ir::Expr& value) {
  if (const auto* call = ir::ExprAs<ir::CallExpr>(value)) {
    std::string op = "call";
    if (const auto* o = ir::ExprAs<ir::OpExpr>(call->op)) {
      op = o->name.compare(0, 6, "relax.") == 0 ? o->name.substr(6) : o->name;
      // The callee of call_tir / call_dps_packed / call_packed names the kernel.
      if (!call->args.empty()) {
        if (const auto* g = ir::ExprAs<ir::GlobalVarExpr>(call->args[0])) op += " " + g->name;
        if (const auto* x = ir::ExprAs<ir::ExternFuncExpr>(call->args[0])) op += " " + x->global_symbol;
      }
    } else if (const auto* g = ir::ExprAs<ir::GlobalVarExpr>(call->op)) {
      op = g->name;
    } else if (const auto* x = ir::ExprAs<ir::ExternFuncExpr>(call->op)) {
      op = x->global_symbol;
    }
    return op;
  }
  switch (value->kind) {
    case ir::ExprKind::kVar: return "alias";
    case ir::ExprKind::kConstant: return "constant";
    case ir::ExprKind::kTuple: return "tuple";
    case ir::ExprKind::kTupleGetItem:
      return "get item " + std::to_string(ir::ExprAs<ir::TupleGetItemExpr>(value)->index);
    case ir::ExprKind::kShapeExpr: return "shape";
    case ir::ExprKind::kPrimValue: return "prim value";
    case ir::ExprKind::kIf: return "if";
    default: return "value";
  }
}

class DotWriter {
 public:
  std::string Draw(const ir::FunctionExpr& f) {
    out_ = "digraph \"" + Escape(f.name) + "\" {\n  node [shape=box, fontname=\"monospace\", fontsize=10];\n";
    for (const ir::RVar& p : f.params) {
      std::string id = NewNode(p.get());
      Emit(id, p->name + "\\n" + Escape(SInfoText(p, p->annotation)), "shape=ellipse");
    }
    const auto* seq = ir::ExprAs<ir::SeqExprNode>(f.body);
    if (seq) {
      for (const ir::BindingBlock& block : seq->blocks) {
        for (const ir::Binding& b : block.bindings) DrawBinding(b);
      }
    }
    ir::Expr result = seq ? seq->body : f.body;
    Emit("result", "result\\n" + Escape(SInfoText(result, f.ret_sinfo)), "shape=ellipse, style=bold");
    EdgesFrom(result, "result");
    return out_ + "}\n";
  }

 private:
  void DrawBinding(const ir::Binding& b) {
    std::string id = "n" + std::to_string(next_++);
    std::string op = b.match_cast ? "match_cast" : ValueName(b.value);
    Emit(id, Escape(b.var->name + " = " + op) + "\\n" + Escape(SInfoText(b.var, b.var->annotation)), "");
    EdgesFrom(b.value, id);
    ids_[b.var.get()] = id;  // after the edges: a binding never uses itself
  }

  // Edges from every variable and constant `e` uses to node `to`.
  void EdgesFrom(const ir::Expr& e, const std::string& to) {
    if (!e) return;
    switch (e->kind) {
      case ir::ExprKind::kVar: {
        auto it = ids_.find(static_cast<const ir::VarExpr*>(e.get()));
        if (it != ids_.end()) out_ += "  " + it->second + " -> " + to + ";\n";
        return;
      }
      case ir::ExprKind::kConstant: {
        std::string id = "c" + std::to_string(next_++);
        Emit(id, "const\\n" + Escape(SInfoText(e, nullptr)), "style=filled, fillcolor=lightgrey");
        out_ += "  " + id + " -> " + to + ";\n";
        return;
      }
      case ir::ExprKind::kCall: {
        const auto* c = ir::ExprAs<ir::CallExpr>(e);
        for (const ir::Expr& a : c->args) EdgesFrom(a, to);
        return;
      }
      case ir::ExprKind::kTuple:
        for (const ir::Expr& a : ir::ExprAs<ir::TupleExpr>(e)->fields) EdgesFrom(a, to);
        return;
      case ir::ExprKind::kTupleGetItem: EdgesFrom(ir::ExprAs<ir::TupleGetItemExpr>(e)->tuple, to); return;
      case ir::ExprKind::kIf: {
        const auto* i = ir::ExprAs<ir::IfExpr>(e);
        EdgesFrom(i->cond, to);
        EdgesFromBranch(i->then_branch, to);
        EdgesFromBranch(i->else_branch, to);
        return;
      }
      default: return;
    }
  }

  // What a branch uses from outside it (its own bindings are not drawn).
  void EdgesFromBranch(const ir::Expr& branch, const std::string& to) {
    const auto* seq = ir::ExprAs<ir::SeqExprNode>(branch);
    if (!seq) return EdgesFrom(branch, to);
    for (const ir::BindingBlock& block : seq->blocks) {
      for (const ir::Binding& b : block.bindings) EdgesFrom(b.value, to);
    }
    EdgesFrom(seq->body, to);
  }

  std::string NewNode(const ir::VarExpr* var) {
    std::string id = "n" + std::to_string(next_++);
    ids_[var] = id;
    return id;
  }
  void Emit(const std::string& id, const std::string& label, const std::string& attrs) {
    out_ += "  " + id + " [label=\"" + label + "\"" + (attrs.empty() ? "" : ", " + attrs) + "];\n";
  }

  std::string out_;
  std::map<const ir::VarExpr*, std::string> ids_;
  int next_ = 0;
};

}  // namespace

Result<std::string> FunctionToDot(const ir::IRModule& module, const std::string& function) {
  ir::Function f = module.FindRelax(function);
  if (!f) {
    std::string names;
    for (const ir::ModuleEntry& e : module.entries) {
      if (e.relax) names += (names.empty() ? "" : ", ") + e.name;
    }
    return NotFound("no Relax function '" + function + "' (the module has: " + (names.empty() ? "none" : names) +
                    ")");
  }
  return DotWriter().Draw(*f);
}

Result<std::string> RelaxFileToDot(const std::string& path, const std::string& function, bool lower) {
  driver::CompileOptions options;
  KILN_ASSIGN_OR_RETURN(ir::IRModule parsed, driver::LoadModuleFile(path, options));
  ir::IRModule mod;
  if (lower) {
    KILN_ASSIGN_OR_RETURN(mod, driver::LowerModule(parsed, options));
  } else {
    KILN_ASSIGN_OR_RETURN(mod, relax::InferStructInfo(parsed));
  }
  return FunctionToDot(mod, function);
}

}  // namespace tools
}  // namespace kiln
