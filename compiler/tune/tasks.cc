#include "compiler/tune/tasks.h"

#include <map>
#include <set>

#include "compiler/arith/simplify.h"
#include "compiler/tune/database.h"

namespace kiln {
namespace tune {

namespace {

// Every function name an expression refers to, with multiplicity: a
// GlobalVar or ExternFunc (R.call_dps_packed may name a PrimFunc) per site.
void CountRefs(const ir::Expr& e, std::map<std::string, int>* out) {
  if (!e) return;
  switch (e->kind) {
    case ir::ExprKind::kGlobalVar: ++(*out)[static_cast<const ir::GlobalVarExpr&>(*e).name]; break;
    case ir::ExprKind::kExternFunc: ++(*out)[static_cast<const ir::ExternFuncExpr&>(*e).global_symbol]; break;
    case ir::ExprKind::kTuple:
      for (const auto& f : static_cast<const ir::TupleExpr&>(*e).fields) CountRefs(f, out);
      break;
    case ir::ExprKind::kTupleGetItem: CountRefs(static_cast<const ir::TupleGetItemExpr&>(*e).tuple, out); break;
    case ir::ExprKind::kCall: {
      const auto& c = static_cast<const ir::CallExpr&>(*e);
      CountRefs(c.op, out);
      for (const auto& a : c.args) CountRefs(a, out);
      break;
    }
    case ir::ExprKind::kSeqExpr: {
      const auto& s = static_cast<const ir::SeqExprNode&>(*e);
      for (const auto& b : s.blocks)
        for (const auto& bind : b.bindings) CountRefs(bind.value, out);
      CountRefs(s.body, out);
      break;
    }
    case ir::ExprKind::kIf: {
      const auto& i = static_cast<const ir::IfExpr&>(*e);
      CountRefs(i.cond, out);
      CountRefs(i.then_branch, out);
      CountRefs(i.else_branch, out);
      break;
    }
    default: break;
  }
}

// Adds `times` calls of the Relax function `name` and of what it calls to
// `prim_calls`. `stack` stops recursion (a recursive function counts once).
void CountCalls(const ir::IRModule& mod, const std::string& name, int times, std::set<std::string>* stack,
                std::map<std::string, int>* prim_calls) {
  const ir::ModuleEntry* e = mod.Find(name);
  if (!e || !e->relax || !stack->insert(name).second) return;
  std::map<std::string, int> refs;
  CountRefs(e->relax->body, &refs);
  for (const auto& [callee, sites] : refs) {
    const ir::ModuleEntry* c = mod.Find(callee);
    if (!c) continue;
    if (c->prim) (*prim_calls)[callee] += sites * times;
    else if (c->relax) CountCalls(mod, callee, sites * times, stack, prim_calls);
  }
  stack->erase(name);
}

}  // namespace

std::string UntunableReason(const ir::PrimFunc& func) {
  for (const auto& p : func->params) {
    ir::Buffer buf = func->BufferOf(p);
    if (!buf) return "parameter " + p->name + " is a scalar (the runner passes buffers only)";
    if (!(buf->dtype == DType::Float32()))
      return "parameter " + p->name + " is " + DTypeToString(buf->dtype) + " (the runner fills float32 inputs only)";
    for (const auto& d : buf->shape)
      if (!arith::AsConstInt(d))
        return "parameter " + p->name +
               " has a symbolic shape (the runner needs static shapes; fix the dimension with --dim)";
  }
  return "";
}

std::vector<TuneTask> ExtractTasks(const ir::IRModule& kernels) {
  std::map<std::string, int> prim_calls;
  for (const auto& e : kernels.entries) {
    if (!e.relax || e.relax->is_private) continue;
    std::set<std::string> stack;
    CountCalls(kernels, e.name, 1, &stack, &prim_calls);
  }
  std::vector<TuneTask> tasks;
  std::map<std::string, size_t> by_workload;
  for (const auto& e : kernels.entries) {
    if (!e.prim) continue;
    auto calls = prim_calls.find(e.name);
    if (calls == prim_calls.end() || calls->second == 0) continue;
    std::string hash = Database::WorkloadHash(e.prim);
    auto it = by_workload.find(hash);
    if (it != by_workload.end()) {
      tasks[it->second].kernels.push_back(e.name);
      tasks[it->second].calls += calls->second;
      continue;
    }
    TuneTask t;
    t.name = e.name;
    t.kernels = {e.name};
    t.func = e.prim;
    t.workload = hash;
    t.calls = calls->second;
    t.skip_reason = UntunableReason(e.prim);
    by_workload[hash] = tasks.size();
    tasks.push_back(std::move(t));
  }
  return tasks;
}

}  // namespace tune
}  // namespace kiln
