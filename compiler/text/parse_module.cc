// ParseModule: tokens -> syntax tree -> IRModule. Finds the @I.ir_module
// class, collects its function names (so functions may call ones defined
// later), and hands each def to the Relax or TIR builder by its decorator.
#include <fstream>
#include <sstream>

#include "compiler/text/builder.h"
#include "compiler/text/py_parser.h"
#include "compiler/text/text.h"

namespace kiln {
namespace text {
namespace {

// @R.function, @R.function(private=True), @T.prim_func, ...
Status Decorator(const SourceFile& src, const AstExpr& d, std::string* kind, bool* is_private) {
  const AstExpr* callee = d.kind == AstKind::kCall ? d.base.get() : &d;
  std::string name = callee->DottedName();
  if (name == "R.function") {
    *kind = "relax";
  } else if (name == "T.prim_func") {
    *kind = "tir";
  } else {
    return src.Error(d.loc, "unknown decorator @" + (name.empty() ? std::string("expression") : name) +
                                " (expected @R.function or @T.prim_func)");
  }
  if (d.kind == AstKind::kCall) {
    if (!d.items.empty()) return src.Error(d.items[0]->loc, "@" + name + " takes keyword arguments only");
    for (size_t i = 0; i < d.kwargs.size(); ++i) {
      const auto& kv = d.kwargs[i];
      if (kv.first == "private" && kv.second->kind == AstKind::kBool) {
        *is_private = kv.second->i != 0;
      } else if (kv.first == "pure" && kv.second->kind == AstKind::kBool && name == "R.function") {
        // Purity is re-derived by Kiln's passes; accepted for compatibility.
      } else {
        return src.Error(d.kwarg_locs[i], "unsupported argument '" + kv.first + "' of @" + name);
      }
    }
  }
  return Status::Ok();
}

bool IsModuleDecorator(const AstExpr& d) {
  std::string n = d.DottedName();
  return n == "I.ir_module" || n == "tvm.script.ir_module" || n == "ir_module";
}

Result<ir::IRModule> ParseModuleImpl(const std::string& source, const std::string& file_name,
                                     const std::vector<ir::Expr>* constants, bool* uses_constants);

}  // namespace

Result<ir::IRModule> ParseModule(const std::string& source, const std::string& file_name) {
  return ParseModuleImpl(source, file_name, nullptr, nullptr);
}

Result<ir::IRModule> ParseModule(const std::string& source, const std::string& file_name,
                                 const std::vector<ir::Expr>& constants) {
  return ParseModuleImpl(source, file_name, &constants, nullptr);
}

Result<ir::IRModule> ParseModule(const std::string& source, const std::string& file_name,
                                 const std::vector<ir::Expr>& constants, bool* uses_constants) {
  return ParseModuleImpl(source, file_name, &constants, uses_constants);
}

namespace {

Result<ir::IRModule> ParseModuleImpl(const std::string& source, const std::string& file_name,
                                     const std::vector<ir::Expr>* constants, bool* uses_constants) {
  if (uses_constants) *uses_constants = false;
  SourceFile src(source, file_name);
  KILN_ASSIGN_OR_RETURN(TokenStream toks, Tokenize(src));
  KILN_ASSIGN_OR_RETURN(std::vector<AstStmtP> stmts, ParsePython(src, toks));
  // Either one module class, or functions at the top level (a lone
  // @R.function or @T.prim_func as TVM prints it), which form a module
  // "Module" in their order.
  const AstStmt* cls = nullptr;
  AstStmt top;
  top.name = "Module";
  for (const auto& s : stmts) {
    if (s->kind == StmtKind::kImport) continue;
    if (s->kind == StmtKind::kDef) {
      if (cls) return src.Error(s->loc, "function '" + s->name + "' is outside the module class '" + cls->name + "'; indent it into the class");
      top.body.push_back(s);
      continue;
    }
    if (s->kind != StmtKind::kClass) return src.Error(s->loc, "expected '@I.ir_module' and 'class Module:' at the top level");
    if (s->decorators.size() != 1 || !IsModuleDecorator(*s->decorators[0]))
      return src.Error(s->loc, "class '" + s->name + "' needs the decorator @I.ir_module");
    if (cls) return src.Error(s->loc, "one file holds one module; found a second class '" + s->name + "'");
    if (!top.body.empty())
      return src.Error(s->loc, "class '" + s->name + "' follows function '" + top.body[0]->name +
                                   "' at the top level; put the function into the class");
    cls = s.get();
  }
  if (!cls && top.body.empty())
    return src.Error(Loc{1, 1}, "expected a module: '@I.ir_module' and 'class Module:', or an @R.function or @T.prim_func");
  if (!cls) cls = &top;

  ModuleContext ctx;
  ctx.src = &src;
  ctx.class_name = cls->name;
  ctx.comments = &toks.comments;
  ctx.constants = constants;
  ctx.uses_constants = uses_constants;
  for (const auto& s : cls->body) {
    if (s->kind == StmtKind::kPass) continue;
    if (s->kind != StmtKind::kDef) return src.Error(s->loc, "expected a function ('def') in the module class");
    if (ctx.function_names.count(s->name)) return src.Error(s->loc, "duplicate function '" + s->name + "'");
    ctx.function_names.insert(s->name);
  }

  ir::IRModule m;
  m.name = cls->name;
  for (const auto& s : cls->body) {
    if (s->kind == StmtKind::kPass) continue;
    if (s->decorators.size() != 1)
      return src.Error(s->loc, "function '" + s->name + "' needs exactly one decorator: @R.function or @T.prim_func");
    std::string kind;
    bool is_private = false;
    KILN_RETURN_IF_ERROR(Decorator(src, *s->decorators[0], &kind, &is_private));
    if (kind == "relax") {
      KILN_ASSIGN_OR_RETURN(ir::Function f, BuildRelaxFunction(ctx, *s, is_private));
      m.Add(s->name, f);
    } else {
      KILN_ASSIGN_OR_RETURN(ir::PrimFunc f, BuildPrimFunc(ctx, *s));
      if (is_private) {
        auto copy = std::make_shared<ir::PrimFuncNode>(*f);
        copy->is_private = true;
        f = copy;
      }
      m.Add(s->name, f);
    }
  }
  return m;
}

}  // namespace

Result<ir::IRModule> ParseModuleFile(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) return NotFound("cannot read '" + path + "'");
  std::stringstream ss;
  ss << in.rdbuf();
  return ParseModule(ss.str(), path);
}

Result<ir::IRModule> ParseModuleFile(const std::string& path, const std::vector<ir::Expr>& constants) {
  std::ifstream in(path, std::ios::binary);
  if (!in) return NotFound("cannot read '" + path + "'");
  std::stringstream ss;
  ss << in.rdbuf();
  return ParseModule(ss.str(), path, constants);
}

}  // namespace text
}  // namespace kiln
