// PrintModule and the Relax printer. The module prints its T.prim_funcs first,
// then its Relax functions, each group in module order; the text is canonical
// (see text.h).
#include <sstream>

#include "compiler/text/constant_data.h"
#include "compiler/text/printer_util.h"
#include "compiler/text/text.h"

namespace kiln {
namespace text {
namespace {

using ir::Expr;
using ir::StructInfo;

StructInfo VarSInfo(const ir::VarExpr& v) { return v.struct_info ? v.struct_info : v.annotation; }

// Every symbolic Var reachable from struct info and expressions, in order.
struct SymCollector {
  std::vector<ir::Var> vars;
  std::set<const ir::VarNode*> seen;
  void P(const ir::PrimExpr& e) { CollectVars(e, &vars, &seen); }
  void S(const StructInfo& s) {
    if (!s) return;
    if (const auto* t = ir::SInfoAs<ir::TensorSInfo>(s)) {
      for (const auto& d : t->shape) P(d);
    } else if (const auto* sh = ir::SInfoAs<ir::ShapeSInfo>(s)) {
      for (const auto& d : sh->values) P(d);
    } else if (const auto* p = ir::SInfoAs<ir::PrimSInfo>(s)) {
      P(p->value);
    } else if (const auto* tu = ir::SInfoAs<ir::TupleSInfo>(s)) {
      for (const auto& f : tu->fields) S(f);
    } else if (const auto* fn = ir::SInfoAs<ir::FuncSInfo>(s)) {
      for (const auto& f : fn->params) S(f);
      S(fn->ret);
    }
  }
  void E(const Expr& e) {
    if (!e) return;
    switch (e->kind) {
      case ir::ExprKind::kTuple:
        for (const auto& f : ir::ExprAs<ir::TupleExpr>(e)->fields) E(f);
        return;
      case ir::ExprKind::kTupleGetItem: E(ir::ExprAs<ir::TupleGetItemExpr>(e)->tuple); return;
      case ir::ExprKind::kShapeExpr:
        for (const auto& d : ir::ExprAs<ir::ShapeExpr>(e)->values) P(d);
        return;
      case ir::ExprKind::kPrimValue: P(ir::ExprAs<ir::PrimValueExpr>(e)->value); return;
      case ir::ExprKind::kCall: {
        const auto* c = ir::ExprAs<ir::CallExpr>(e);
        for (const auto& a : c->args) E(a);
        for (const auto& s : c->sinfo_args) S(s);
        return;
      }
      case ir::ExprKind::kSeqExpr: {
        const auto* seq = ir::ExprAs<ir::SeqExprNode>(e);
        for (const auto& b : seq->blocks)
          for (const auto& bd : b.bindings) {
            S(VarSInfo(*bd.var));
            E(bd.value);
            S(bd.match_cast);
          }
        E(seq->body);
        return;
      }
      case ir::ExprKind::kIf: {
        const auto* i = ir::ExprAs<ir::IfExpr>(e);
        E(i->cond);
        E(i->then_branch);
        E(i->else_branch);
        return;
      }
      default: return;
    }
  }
};

bool UsesGlobal(const Expr& e) {
  if (!e) return false;
  switch (e->kind) {
    case ir::ExprKind::kGlobalVar: return true;
    case ir::ExprKind::kTuple:
      for (const auto& f : ir::ExprAs<ir::TupleExpr>(e)->fields)
        if (UsesGlobal(f)) return true;
      return false;
    case ir::ExprKind::kTupleGetItem: return UsesGlobal(ir::ExprAs<ir::TupleGetItemExpr>(e)->tuple);
    case ir::ExprKind::kCall: {
      const auto* c = ir::ExprAs<ir::CallExpr>(e);
      if (UsesGlobal(c->op)) return true;
      for (const auto& a : c->args)
        if (UsesGlobal(a)) return true;
      return false;
    }
    case ir::ExprKind::kSeqExpr: {
      const auto* seq = ir::ExprAs<ir::SeqExprNode>(e);
      for (const auto& b : seq->blocks)
        for (const auto& bd : b.bindings)
          if (UsesGlobal(bd.value)) return true;
      return UsesGlobal(seq->body);
    }
    case ir::ExprKind::kIf: {
      const auto* i = ir::ExprAs<ir::IfExpr>(e);
      return UsesGlobal(i->cond) || UsesGlobal(i->then_branch) || UsesGlobal(i->else_branch);
    }
    default: return false;
  }
}

// The constants printed as metadata references, in order of first use.
struct ConstTable {
  std::vector<Expr> entries;
  std::map<const ir::ConstantExpr*, size_t> index;
};

class RelaxPrinter {
 public:
  RelaxPrinter(Namer* namer, bool quote_dims, ConstTable* table)
      : namer_(namer), tir_(namer), quote_dims_(quote_dims), table_(table) {}

  void set_quote_dims(bool q) { quote_dims_ = q; }

  std::string Dims(const std::vector<ir::PrimExpr>& dims, bool tuple) {
    std::string s = tuple ? "(" : "[";
    for (size_t i = 0; i < dims.size(); ++i) {
      s += i ? ", " : "";
      std::string d = tir_.Expr(dims[i], DType::Int64());
      bool literal = dims[i].as<ir::IntImmNode>() && dims[i].dtype() == DType::Int64();
      s += quote_dims_ && !literal ? Quote(d) : d;
    }
    if (tuple && dims.size() == 1) s += ",";
    return s + (tuple ? ")" : "]");
  }

  std::string SInfo(const StructInfo& s) {
    if (!s) return "R.Object";
    switch (s->kind) {
      case ir::SInfoKind::kObject: return "R.Object";
      case ir::SInfoKind::kPrim: {
        const auto* p = ir::SInfoAs<ir::PrimSInfo>(s);
        if (p->value.defined()) {
          std::string v = tir_.Expr(p->value, DType::Int64());
          return "R.Prim(value=" + (quote_dims_ && !p->value.as<ir::IntImmNode>() ? Quote(v) : v) + ")";
        }
        return "R.Prim(" + Quote(DTypeToString(p->dtype)) + ")";
      }
      case ir::SInfoKind::kShape: {
        const auto* sh = ir::SInfoAs<ir::ShapeSInfo>(s);
        if (sh->has_values) return "R.Shape(" + Dims(sh->values, false) + ")";
        if (sh->ndim >= 0) return "R.Shape(ndim=" + std::to_string(sh->ndim) + ")";
        return "R.Shape";
      }
      case ir::SInfoKind::kTensor: {
        const auto* t = ir::SInfoAs<ir::TensorSInfo>(s);
        std::vector<std::string> args;
        if (t->has_shape) args.push_back(Dims(t->shape, true));
        if (!t->has_shape && t->ndim >= 0) args.push_back("ndim=" + std::to_string(t->ndim));
        if (t->has_dtype) args.push_back("dtype=" + Quote(DTypeToString(t->dtype)));
        if (args.empty()) return "R.Tensor";
        std::string r = "R.Tensor(";
        for (size_t i = 0; i < args.size(); ++i) r += (i ? ", " : "") + args[i];
        return r + ")";
      }
      case ir::SInfoKind::kTuple: {
        const auto& f = ir::SInfoAs<ir::TupleSInfo>(s)->fields;
        if (f.empty()) return "R.Tuple";  // as TVM prints the empty tuple
        std::string r = "R.Tuple(";
        for (size_t i = 0; i < f.size(); ++i) r += (i ? ", " : "") + SInfo(f[i]);
        return r + ")";
      }
      case ir::SInfoKind::kFunc: return "R.Callable";
    }
    return "R.Object";
  }

  std::string SInfoList(const std::vector<StructInfo>& s, bool list_brackets) {
    if (s.size() == 1) return SInfo(s[0]);
    std::string r = list_brackets ? "[" : "(";
    for (size_t i = 0; i < s.size(); ++i) r += (i ? ", " : "") + SInfo(s[i]);
    if (!list_brackets && s.size() == 1) r += ",";
    return r + (list_brackets ? "]" : ")");
  }

  std::string Args(const std::vector<Expr>& args, size_t begin) {
    std::string r;
    for (size_t i = begin; i < args.size(); ++i) r += (i > begin ? ", " : "") + Value(args[i]);
    return r;
  }

  // A scalar without a name inline; anything else as an entry of the table.
  std::string Constant(const Expr& e) {
    const auto* c = ir::ExprAs<ir::ConstantExpr>(e);
    const Tensor& t = c->data;
    if (t.defined() && t.ndim() == 0 && c->name.empty() && IsConstantDType(t.dtype()))
      return "R.const(" + LiteralText(t, 0) + ", " + Quote(DTypeToString(t.dtype())) + ")";
    auto it = table_->index.find(c);
    size_t i;
    if (it != table_->index.end()) {
      i = it->second;
    } else {
      i = table_->entries.size();
      table_->entries.push_back(e);
      table_->index[c] = i;
    }
    return "metadata[\"relax.expr.Constant\"][" + std::to_string(i) + "]";
  }

  std::string Value(const Expr& e) {
    if (!e) return "None";
    switch (e->kind) {
      case ir::ExprKind::kVar: {
        const auto* v = ir::ExprAs<ir::VarExpr>(e);
        return namer_->Get(v, v->name);
      }
      case ir::ExprKind::kConstant: return Constant(e);
      case ir::ExprKind::kTuple: {
        const auto& f = ir::ExprAs<ir::TupleExpr>(e)->fields;
        if (f.empty()) return "R.tuple()";  // as TVM prints it
        std::string r = "(" + Args(f, 0);
        return r + (f.size() == 1 ? ",)" : ")");
      }
      case ir::ExprKind::kTupleGetItem: {
        const auto* g = ir::ExprAs<ir::TupleGetItemExpr>(e);
        return Value(g->tuple) + "[" + std::to_string(g->index) + "]";
      }
      case ir::ExprKind::kShapeExpr: {
        bool q = quote_dims_;
        quote_dims_ = false;
        std::string r = "R.shape(" + Dims(ir::ExprAs<ir::ShapeExpr>(e)->values, false) + ")";
        quote_dims_ = q;
        return r;
      }
      case ir::ExprKind::kPrimValue:
        return "R.prim_value(" + tir_.Expr(ir::ExprAs<ir::PrimValueExpr>(e)->value, DType::Int64()) + ")";
      case ir::ExprKind::kStringImm: return "R.str(" + Quote(ir::ExprAs<ir::StringImmExpr>(e)->value) + ")";
      case ir::ExprKind::kDataTypeImm:
        return "R.dtype(" + Quote(DTypeToString(ir::ExprAs<ir::DataTypeImmExpr>(e)->value)) + ")";
      case ir::ExprKind::kGlobalVar: return "cls." + ir::ExprAs<ir::GlobalVarExpr>(e)->name;
      case ir::ExprKind::kExternFunc:
        return "R.ExternFunc(" + Quote(ir::ExprAs<ir::ExternFuncExpr>(e)->global_symbol) + ")";
      case ir::ExprKind::kOp: return "R." + ir::ExprAs<ir::OpExpr>(e)->name.substr(6);
      case ir::ExprKind::kCall: return Call(*ir::ExprAs<ir::CallExpr>(e));
      default: return "None  # unsupported expression";
    }
  }

  std::string Call(const ir::CallExpr& c) {
    if (const auto* op = ir::ExprAs<ir::OpExpr>(c.op)) {
      if ((op->name == "relax.call_tir" || op->name == "relax.call_dps_packed") && c.args.size() >= 2) {
        std::string callee = op->name == "relax.call_tir" ? Value(c.args[0])
                             : ir::ExprAs<ir::ExternFuncExpr>(c.args[0])
                                 ? Quote(ir::ExprAs<ir::ExternFuncExpr>(c.args[0])->global_symbol)
                                 : Value(c.args[0]);
        std::string r = (op->name == "relax.call_tir" ? "R.call_tir(" : "R.call_dps_packed(") + callee + ", " +
                        Value(c.args[1]) + ", out_sinfo=" + SInfoList(c.sinfo_args, true);
        if (c.args.size() > 2) r += ", tir_vars=" + Value(c.args[2]);
        return r + ")";
      }
      std::string name = op->name.compare(0, 6, "relax.") == 0 ? op->name.substr(6) : op->name;
      std::string r = "R." + name + "(" + Args(c.args, 0);
      bool first = c.args.empty();
      for (const auto& kv : c.attrs) {
        r += (first ? "" : ", ") + kv.first + "=" + AttrValueText(kv.second);
        first = false;
      }
      return r + ")";
    }
    if (const auto* ext = ir::ExprAs<ir::ExternFuncExpr>(c.op)) {
      std::string r = "R.call_packed(" + Quote(ext->global_symbol);
      for (const auto& a : c.args) r += ", " + Value(a);
      if (!c.sinfo_args.empty()) {
        // Always a tuple, as TVM prints it: sinfo_args=(R.Tensor(...),)
        r += ", sinfo_args=(";
        for (size_t i = 0; i < c.sinfo_args.size(); ++i) r += (i ? ", " : "") + SInfo(c.sinfo_args[i]);
        r += c.sinfo_args.size() == 1 ? ",)" : ")";
      }
      return r + ")";
    }
    return Value(c.op) + "(" + Args(c.args, 0) + ")";
  }

  // The SeqExpr of an if/else branch: its bindings, then `y: ann = body`.
  void Branch(const Expr& e, const ir::Binding& b, std::ostringstream& os, int indent) {
    namer_->Push();  // names bound in a branch are local to it
    const auto* seq = ir::ExprAs<ir::SeqExprNode>(e);
    if (seq) Blocks(seq->blocks, os, indent);
    std::string value = Value(seq ? seq->body : e);
    namer_->Pop();
    Indent(os, indent);
    os << namer_->Get(b.var.get(), b.var->name);
    if (StructInfo s = VarSInfo(*b.var)) os << ": " << SInfo(s);
    os << " = " << value << "\n";
  }

  // `, messages=["...", ...]` for a match_cast that explains its checks;
  // nothing otherwise, so plain modules print as TVMScript does.
  static std::string Messages(const ir::Binding& b) {
    if (b.messages.empty()) return "";
    std::string s = ", messages=[";
    for (size_t i = 0; i < b.messages.size(); ++i) s += (i ? ", " : "") + Quote(b.messages[i]);
    return s + "]";
  }

  void Binding(const ir::Binding& b, std::ostringstream& os, int indent) {
    if (const auto* i = ir::ExprAs<ir::IfExpr>(b.value)) {
      if (!b.match_cast) {
        // The result's name is taken before the branches so that a branch
        // local never takes it.
        namer_->Define(b.var.get(), b.var->name);
        Indent(os, indent);
        os << "if " << Value(i->cond) << ":\n";
        Branch(i->then_branch, b, os, indent + 1);
        Indent(os, indent);
        os << "else:\n";
        Branch(i->else_branch, b, os, indent + 1);
        return;
      }
    }
    Indent(os, indent);
    std::string value = b.match_cast ? "R.match_cast(" + Value(b.value) + ", " + SInfo(b.match_cast) + Messages(b) + ")"
                                     : Value(b.value);
    os << namer_->Define(b.var.get(), b.var->name);
    if (StructInfo s = VarSInfo(*b.var)) os << ": " << SInfo(s);
    os << " = " << value << "\n";
  }

  void Blocks(const std::vector<ir::BindingBlock>& blocks, std::ostringstream& os, int in) {
    for (const auto& blk : blocks) {
      if (!blk.is_dataflow) {
        for (const auto& b : blk.bindings) Binding(b, os, in);
        continue;
      }
      Indent(os, in);
      os << "with R.dataflow():\n";
      std::vector<std::string> outputs;
      for (const auto& b : blk.bindings) {
        Binding(b, os, in + 1);
        if (!b.var->is_dataflow) outputs.push_back(namer_->Get(b.var.get(), b.var->name));
      }
      Indent(os, in + 1);
      if (outputs.empty() && blk.bindings.empty()) {
        os << "pass\n";
        continue;
      }
      if (!outputs.empty()) {
        os << "R.output(";
        for (size_t i = 0; i < outputs.size(); ++i) os << (i ? ", " : "") << outputs[i];
        os << ")\n";
      } else {
        // No outputs: TVM still closes the block; an empty R.output() parses back.
        os << "R.output()\n";
      }
    }
  }

  void Function(const ir::FunctionExpr& f, const std::string& name, const std::string& class_name,
                std::ostringstream& os, int indent) {
    Indent(os, indent);
    os << (f.is_private ? "@R.function(private=True)\n" : "@R.function\n");
    Indent(os, indent);
    // Symbolic variables are named before parameters so that they keep their
    // names ("n") and a parameter called n is renamed instead.
    SymCollector syms;
    for (const auto& p : f.params) syms.S(VarSInfo(*p));
    syms.S(f.ret_sinfo);
    syms.E(f.body);
    for (const auto& v : syms.vars) namer_->Define(v.get(), v->name);
    os << "def " << name << "(";
    quote_dims_ = true;
    for (size_t i = 0; i < f.params.size(); ++i)
      os << (i ? ", " : "") << namer_->Define(f.params[i].get(), f.params[i]->name) << ": " << SInfo(VarSInfo(*f.params[i]));
    os << ")";
    if (f.ret_sinfo) os << " -> " << SInfo(f.ret_sinfo);
    os << ":\n";
    quote_dims_ = false;
    int in = indent + 1;
    if (!f.attrs.empty()) {
      Indent(os, in);
      os << "R.func_attr(" << AttrDictText(f.attrs) << ")\n";
    }
    for (const auto& v : syms.vars) {
      Indent(os, in);
      os << namer_->Get(v.get(), v->name) << " = T." << DTypeToString(v->dtype) << "()\n";
    }
    if (UsesGlobal(f.body)) {
      Indent(os, in);
      os << "cls = " << class_name << "\n";
    }
    const auto* seq = ir::ExprAs<ir::SeqExprNode>(f.body);
    if (!seq) {
      Indent(os, in);
      os << "return " << Value(f.body) << "\n";
      return;
    }
    Blocks(seq->blocks, os, in);
    Indent(os, in);
    os << "return " << Value(seq->body) << "\n";
  }

 private:
  Namer* namer_;
  TirPrinter tir_;
  bool quote_dims_;
  ConstTable* table_;
};

std::string PrintModuleImpl(const ir::IRModule& m, ConstTable* table);

}  // namespace

std::string PrintPrimExpr(const ir::PrimExpr& e) {
  TirPrinter p(nullptr);
  return p.Expr(e, e.defined() && e.dtype() == DType::Int64() ? DType::Int64() : DType::Int32());
}

std::string PrintStructInfo(const ir::StructInfo& s) {
  Namer namer;
  ConstTable table;
  RelaxPrinter p(&namer, false, &table);
  return p.SInfo(s);
}

std::string PrintModule(const ir::IRModule& m) {
  ConstTable table;
  std::string text = PrintModuleImpl(m, &table);
  if (!table.entries.empty())
    text += "\n# Metadata omitted: PrintModule(module, &constants) returns the constant table.\n";
  return text;
}

std::string PrintModule(const ir::IRModule& m, std::vector<ir::Expr>* constants) {
  ConstTable table;
  std::string text = PrintModuleImpl(m, &table);
  *constants = std::move(table.entries);
  return text;
}

namespace {

std::string PrintModuleImpl(const ir::IRModule& m, ConstTable* table) {
  std::ostringstream os;
  os << "# from tvm.script import ir as I\n"
        "# from tvm.script import tir as T\n"
        "# from tvm.script import relax as R\n\n"
        "@I.ir_module\n"
        "class "
     << m.name << ":\n";
  bool first = true;
  for (int pass = 0; pass < 2; ++pass) {
    for (const auto& e : m.entries) {
      if ((pass == 0) != (e.prim != nullptr)) continue;
      if (!first) os << "\n";
      first = false;
      Namer namer;
      if (e.prim) {
        TirPrinter p(&namer);
        p.PrimFunc(*e.prim, e.name, os, 1);
      } else if (e.relax) {
        RelaxPrinter p(&namer, false, table);
        p.Function(*e.relax, e.name, m.name, os, 1);
      }
    }
  }
  if (first) os << "    pass\n";
  return os.str();
}

}  // namespace

}  // namespace text
}  // namespace kiln
