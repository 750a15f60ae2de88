#include "compiler/fusion/fuse_ops.h"

#include <algorithm>
#include <functional>
#include <map>
#include <memory>
#include <set>
#include <unordered_map>
#include <vector>

#include "compiler/arith/simplify.h"
#include "compiler/fusion/fusion_graph.h"
#include "compiler/fusion/hoist_shape_checks.h"
#include "compiler/fusion/op_pattern.h"
#include "compiler/fusion/prologue_cost.h"

namespace kiln {
namespace fusion {
namespace {

using ir::Expr;
using ir::RVar;

// Calls `fn` for every Relax variable an expression reads.
void ForEachVarUse(const Expr& e, const std::function<void(const ir::VarExpr*)>& fn) {
  if (!e) return;
  switch (e->kind) {
    case ir::ExprKind::kVar:
      fn(static_cast<const ir::VarExpr*>(e.get()));
      return;
    case ir::ExprKind::kTuple:
      for (const auto& f : static_cast<const ir::TupleExpr&>(*e).fields) ForEachVarUse(f, fn);
      return;
    case ir::ExprKind::kTupleGetItem:
      ForEachVarUse(static_cast<const ir::TupleGetItemExpr&>(*e).tuple, fn);
      return;
    case ir::ExprKind::kCall: {
      const auto& c = static_cast<const ir::CallExpr&>(*e);
      ForEachVarUse(c.op, fn);
      for (const auto& a : c.args) ForEachVarUse(a, fn);
      return;
    }
    case ir::ExprKind::kIf: {
      const auto& i = static_cast<const ir::IfExpr&>(*e);
      ForEachVarUse(i.cond, fn);
      ForEachVarUse(i.then_branch, fn);
      ForEachVarUse(i.else_branch, fn);
      return;
    }
    case ir::ExprKind::kSeqExpr: {
      const auto& s = static_cast<const ir::SeqExprNode&>(*e);
      for (const auto& b : s.blocks)
        for (const auto& bind : b.bindings) ForEachVarUse(bind.value, fn);
      ForEachVarUse(s.body, fn);
      return;
    }
    default:
      return;  // constants, shapes, globals, functions (no nested functions here)
  }
}

// A binding fuse_ops may fuse: R.call_tir(cls.f, (args), out_sinfo=one
// tensor[, tir_vars=R.shape([...])]).
struct KernelCall {
  const ir::CallExpr* call = nullptr;
  const ir::TupleExpr* args = nullptr;
  const ir::ShapeExpr* tir_vars = nullptr;  // may be null
  std::string callee;
  OpPattern pattern = kOpaque;
  const ir::TensorSInfo* out = nullptr;
};

KernelCall AsKernelCall(const ir::IRModule& mod, const ir::Binding& b) {
  KernelCall k;
  if (b.match_cast) return k;
  const auto* call = ir::ExprAs<ir::CallExpr>(b.value);
  const auto* op = call ? ir::ExprAs<ir::OpExpr>(call->op) : nullptr;
  if (!op || op->name != "relax.call_tir" || call->args.size() < 2 || call->args.size() > 3 ||
      call->sinfo_args.size() != 1) {
    return k;
  }
  const auto* gv = ir::ExprAs<ir::GlobalVarExpr>(call->args[0]);
  const auto* args = ir::ExprAs<ir::TupleExpr>(call->args[1]);
  const auto* tir_vars = call->args.size() == 3 ? ir::ExprAs<ir::ShapeExpr>(call->args[2]) : nullptr;
  const auto* out = ir::SInfoAs<ir::TensorSInfo>(call->sinfo_args[0]);
  if (!gv || !args || !out || !out->has_shape || (call->args.size() == 3 && !tir_vars)) return k;
  ir::PrimFunc f = mod.FindPrim(gv->name);
  size_t num_buffers = args->fields.size() + 1;
  size_t num_scalars = tir_vars ? tir_vars->values.size() : 0;
  if (!f || f->params.size() != num_buffers + num_scalars) return k;
  // Buffers first, then the scalars the tir_vars give (te_builder.h).
  for (size_t i = 0; i < f->params.size(); ++i)
    if ((f->BufferOf(f->params[i]) != nullptr) != (i < num_buffers)) return k;
  for (const auto& a : args->fields) {
    if (!ir::ExprAs<ir::VarExpr>(a) && !ir::ExprAs<ir::ConstantExpr>(a)) return k;
    if (!ir::SInfoAs<ir::TensorSInfo>(a->struct_info)) return k;
  }
  OpPattern p = GetOpPattern(f);
  if (p == kOpaque || p == kTuple) return k;
  k.call = call;
  k.args = args;
  k.tir_vars = tir_vars;
  k.callee = gv->name;
  k.pattern = p;
  k.out = out;
  return k;
}

bool SameShape(const std::vector<ir::PrimExpr>& a, const std::vector<ir::PrimExpr>& b) {
  if (a.size() != b.size()) return false;
  for (size_t i = 0; i < a.size(); ++i)
    if (!arith::CanProveEqual(a[i], b[i])) return false;
  return true;
}

void CollectTirVars(const ir::PrimExpr& e, std::set<const ir::VarNode*>* out) {
  if (const auto* v = e.as<ir::VarNode>()) {
    out->insert(v);
  } else if (ir::IsBinary(e->kind())) {
    const auto* b = static_cast<const ir::BinaryNode*>(e.get());
    CollectTirVars(b->a, out);
    CollectTirVars(b->b, out);
  } else if (const auto* c = e.as<ir::CastNode>()) {
    CollectTirVars(c->value, out);
  }
}

// The occurrence of `v` in `e`, as a PrimExpr sharing its node.
ir::PrimExpr FindVarExpr(const ir::PrimExpr& e, const ir::VarNode* v) {
  if (e.get() == v) return e;
  if (ir::IsBinary(e->kind())) {
    const auto* b = static_cast<const ir::BinaryNode*>(e.get());
    ir::PrimExpr a = FindVarExpr(b->a, v);
    return a.defined() ? a : FindVarExpr(b->b, v);
  }
  if (const auto* c = e.as<ir::CastNode>()) return FindVarExpr(c->value, v);
  return ir::PrimExpr();
}

// How many times the anchor kernel `callee` reads each element of `v` (the
// reads of every argument position that passes it, summed).
double AnchorReads(const ir::PrimFunc& callee, const KernelCall& call, const ir::VarExpr* v) {
  double reads = 0.0;
  const auto& fields = call.args->fields;
  for (size_t a = 0; a < fields.size(); ++a)
    if (fields[a].get() == v) reads += ReadsPerElement(callee, a);
  return std::max(1.0, reads);
}

class BlockFuser {
 public:
  BlockFuser(ir::IRModule* mod, std::vector<ir::Function>* fused) : mod_(mod), fused_(fused) {}

  ir::BindingBlock Run(const ir::BindingBlock& block) {
    const auto& bs = block.bindings;
    size_t n = bs.size();
    std::vector<KernelCall> calls(n);
    std::unordered_map<const ir::VarExpr*, int> index;
    FusionGraph g;
    g.nodes.resize(n);
    for (size_t i = 0; i < n; ++i) {
      calls[i] = AsKernelCall(*mod_, bs[i]);
      g.nodes[i].pattern = calls[i].pattern;
      g.nodes[i].external = !bs[i].var->is_dataflow;
      ir::PrimFunc callee = calls[i].call ? mod_->FindPrim(calls[i].callee) : nullptr;
      // The prologue cost check (prologue_cost.h) needs what a producer
      // costs per element and how often an anchor re-reads each input.
      if (callee && calls[i].pattern <= kInjective) {
        g.nodes[i].cost = OpsPerElement(callee);
        g.nodes[i].inlinable = StoresAtLoopPoint(callee);
      }
      if (callee) g.nodes[i].symbolic = HasSymbolicExtent(callee);
      bool anchor = calls[i].pattern == kCommReduce || calls[i].pattern == kOutEWiseFusable;
      std::map<int, OpPattern> producers;
      ForEachVarUse(bs[i].value, [&](const ir::VarExpr* v) {
        auto it = index.find(v);
        if (it == index.end()) return;
        OpPattern edge = calls[i].pattern;
        // A broadcast reading an argument of its own output shape reads it
        // elementwise (the matmul result in matmul + bias).
        if (edge == kBroadcast) {
          const auto* t = ir::SInfoAs<ir::TensorSInfo>(v->struct_info);
          if (t && t->has_shape && SameShape(t->shape, calls[i].out->shape)) edge = kElemWise;
        }
        auto p = producers.find(it->second);
        producers[it->second] = p == producers.end() ? edge : std::max(p->second, edge);
      });
      if (bs[i].match_cast) {
        // match_cast checks at run time; its source is read opaquely.
        for (auto& p : producers) p.second = kOpaque;
      }
      for (const auto& p : producers) {
        FusionGraph::Edge edge{static_cast<int>(i), p.second};
        if (anchor) edge.reads = AnchorReads(callee, calls[i], bs[p.first].var.get());
        g.nodes[p.first].consumers.push_back(edge);
      }
      index[bs[i].var.get()] = static_cast<int>(i);
    }
    std::vector<int> group = PartitionFusionGraph(g);
    // Only a group's last binding may be read outside it (no work is repeated
    // and the group can be replaced by one call at that binding).
    for (size_t i = 0; i < n; ++i) {
      if (group[i] == static_cast<int>(i)) continue;
      KILN_CHECK(!g.nodes[i].external, "fuse_ops: output %s inside a group", bs[i].var->name.c_str());
      for (const auto& e : g.nodes[i].consumers)
        KILN_CHECK(group[e.consumer] == group[i], "fuse_ops: %s read outside its group", bs[i].var->name.c_str());
    }

    std::map<int, std::vector<int>> members;
    for (size_t i = 0; i < n; ++i) members[group[i]].push_back(static_cast<int>(i));
    std::map<int, ir::Binding> replacement;  // root -> the call of its fused function
    std::set<int> absorbed;
    for (const auto& m : members) {
      if (m.second.size() < 2) continue;
      ir::Binding call;
      if (!MakeGroup(bs, calls, m.second, &call)) continue;
      replacement[m.first] = call;
      for (int k : m.second)
        if (k != m.first) absorbed.insert(k);
    }
    if (replacement.empty()) return block;
    ir::BindingBlock out;
    out.is_dataflow = block.is_dataflow;
    for (size_t i = 0; i < n; ++i) {
      if (absorbed.count(static_cast<int>(i))) continue;
      auto r = replacement.find(static_cast<int>(i));
      out.bindings.push_back(r == replacement.end() ? bs[i] : r->second);
    }
    return out;
  }

 private:
  // Builds the fused function of one group (sorted binding indices, the last
  // one is the result) and the binding that calls it. False when the group
  // cannot become one kernel (see fuse_ops.h).
  bool MakeGroup(const std::vector<ir::Binding>& bs, const std::vector<KernelCall>& calls, const std::vector<int>& group,
                 ir::Binding* out) {
    std::set<const ir::VarExpr*> inside;
    for (int k : group) inside.insert(bs[k].var.get());
    const ir::Binding& last = bs[group.back()];

    // Inputs: variables and constants from outside, in order of first use.
    std::vector<Expr> inputs;
    for (int k : group) {
      for (const auto& a : calls[k].args->fields) {
        const auto* v = ir::ExprAs<ir::VarExpr>(a);
        if (v && inside.count(v)) continue;
        if (std::find(inputs.begin(), inputs.end(), a) == inputs.end()) inputs.push_back(a);
      }
    }
    // The fused kernel binds a symbolic variable from a plain dimension of an
    // input or of the result; every other variable its kernels use (in
    // shapes or tir_vars) it takes as a scalar, passed in a trailing shape.
    std::set<const ir::VarNode*> plain;
    std::vector<ir::PrimExpr> used;  // in order of first use
    std::set<const ir::VarNode*> seen;
    auto use = [&](const ir::PrimExpr& d) {
      std::set<const ir::VarNode*> vars;
      CollectTirVars(d, &vars);
      std::vector<const ir::VarNode*> ordered(vars.begin(), vars.end());
      std::sort(ordered.begin(), ordered.end(), [](const ir::VarNode* a, const ir::VarNode* b) { return a->name < b->name; });
      for (const auto* v : ordered) {
        if (seen.insert(v).second) used.push_back(FindVarExpr(d, v));
      }
    };
    auto note = [&](const ir::TensorSInfo& t, bool boundary) {
      for (const auto& d : t.shape) {
        if (boundary && d.as<ir::VarNode>()) plain.insert(d.as<ir::VarNode>());
        use(d);
      }
    };
    for (const auto& in : inputs) {
      const auto* t = ir::SInfoAs<ir::TensorSInfo>(in->struct_info);
      if (!t->has_shape || !t->has_dtype) return false;
      note(*t, true);
    }
    note(*calls[group.back()].out, true);
    for (int k : group) {
      note(*calls[k].out, false);
      if (calls[k].tir_vars)
        for (const auto& d : calls[k].tir_vars->values) use(d);
    }
    std::vector<ir::PrimExpr> scalars;
    for (const auto& v : used)
      if (!plain.count(v.as<ir::VarNode>())) scalars.push_back(v);

    auto f = std::make_shared<ir::FunctionExpr>();
    std::string name = "fused";
    for (int k : group) name += "_" + calls[k].callee;
    name = mod_->UniqueName(name);
    f->name = name;
    f->is_private = true;
    ir::AttrValue one;
    one.kind = ir::AttrValue::Kind::kInt;
    one.i = 1;
    f->attrs[kPrimitiveAttr] = one;

    std::unordered_map<const ir::ExprNode*, Expr> remap;
    int const_count = 0;
    std::vector<ir::StructInfo> param_sinfo;
    for (const auto& in : inputs) {
      const auto* v = ir::ExprAs<ir::VarExpr>(in);
      auto p = std::make_shared<ir::VarExpr>(v ? v->name : "c" + std::to_string(const_count++), in->struct_info, false);
      p->struct_info = in->struct_info;
      p->span = in->span;
      f->params.push_back(p);
      param_sinfo.push_back(in->struct_info);
      remap[in.get()] = p;
    }
    ir::Expr scalar_arg;
    if (!scalars.empty()) {
      ir::StructInfo sinfo = std::make_shared<ir::ShapeSInfo>(true, scalars, static_cast<int>(scalars.size()));
      auto p = std::make_shared<ir::VarExpr>(kScalarsParam, sinfo, false);
      p->struct_info = sinfo;
      f->params.push_back(p);
      param_sinfo.push_back(sinfo);
      auto shape = std::make_shared<ir::ShapeExpr>(scalars);
      shape->struct_info = sinfo;
      scalar_arg = shape;
    }
    ir::BindingBlock body;
    body.is_dataflow = true;
    for (int k : group) {
      const ir::Binding& b = bs[k];
      const KernelCall& kc = calls[k];
      std::vector<Expr> fields;
      for (const auto& a : kc.args->fields) fields.push_back(remap.at(a.get()));
      auto args = std::make_shared<ir::TupleExpr>(std::move(fields));
      args->struct_info = kc.args->struct_info;
      args->span = kc.args->span;
      std::vector<Expr> call_args{kc.call->args[0], args};
      if (kc.tir_vars) call_args.push_back(kc.call->args[2]);
      auto call = std::make_shared<ir::CallExpr>(kc.call->op, std::move(call_args), kc.call->attrs, kc.call->sinfo_args);
      call->struct_info = kc.call->struct_info;
      call->span = kc.call->span;
      auto v = std::make_shared<ir::VarExpr>(b.var->name, nullptr, k != group.back());
      v->struct_info = b.var->struct_info;
      v->span = b.var->span;
      remap[b.var.get()] = v;
      ir::Binding nb;
      nb.var = v;
      nb.value = call;
      nb.span = b.span;
      body.bindings.push_back(nb);
    }
    Expr result = remap.at(last.var.get());
    auto seq = std::make_shared<ir::SeqExprNode>(std::vector<ir::BindingBlock>{body}, result);
    seq->struct_info = last.var->struct_info;
    f->body = seq;
    f->ret_sinfo = last.var->struct_info;
    f->struct_info = std::make_shared<ir::FuncSInfo>(param_sinfo, last.var->struct_info);
    mod_->Add(name, ir::Function(f));  // reserves the name for later groups
    fused_->push_back(f);

    auto callee = std::make_shared<ir::GlobalVarExpr>(name);
    callee->struct_info = f->struct_info;
    std::vector<Expr> call_inputs = inputs;
    if (scalar_arg) call_inputs.push_back(scalar_arg);
    auto call = std::make_shared<ir::CallExpr>(callee, std::move(call_inputs));
    call->struct_info = last.var->struct_info;
    call->span = last.value->span;
    out->var = last.var;
    out->value = call;
    out->span = last.span;
    return true;
  }

  ir::IRModule* mod_;
  std::vector<ir::Function>* fused_;
};

}  // namespace

bool IsPrimitiveFunction(const ir::FunctionExpr& f) {
  auto it = f.attrs.find(kPrimitiveAttr);
  return it != f.attrs.end() && it->second.kind == ir::AttrValue::Kind::kInt && it->second.i != 0;
}

Result<ir::IRModule> FuseOps(const ir::IRModule& mod) {
  ir::IRModule out = mod;
  std::vector<ir::Function> fused;
  BlockFuser fuser(&out, &fused);
  size_t count = out.entries.size();
  for (size_t i = 0; i < count; ++i) {
    ir::Function f = out.entries[i].relax;
    if (!f || IsPrimitiveFunction(*f)) continue;
    const auto* seq = ir::ExprAs<ir::SeqExprNode>(f->body);
    if (!seq) continue;
    for (const auto& p : f->params) {
      if (!p->struct_info) {
        return FailedPrecondition("fuse_ops: function '" + out.entries[i].name +
                                  "' has no struct info; run normalize (InferStructInfo) first");
      }
    }
    std::vector<ir::BindingBlock> blocks;
    bool changed = false;
    std::set<const ir::VarNode*> param_vars;
    for (const auto& p : f->params) CollectShapeVars(p->struct_info, &param_vars);
    // The dataflow blocks of If branches (winograd-conv2d's run-time
    // choices) fuse like the function's own.
    std::function<ir::BindingBlock(const ir::BindingBlock&)> fuse_block = [&](const ir::BindingBlock& b) {
      ir::BindingBlock in = b;
      for (ir::Binding& bind : in.bindings) {
        const auto* i = ir::ExprAs<ir::IfExpr>(bind.value);
        const auto* t = i ? ir::ExprAs<ir::SeqExprNode>(i->then_branch) : nullptr;
        const auto* e = i ? ir::ExprAs<ir::SeqExprNode>(i->else_branch) : nullptr;
        if (!t || !e) continue;
        auto branch = [&](const ir::SeqExprNode& s) {
          std::vector<ir::BindingBlock> bs;
          for (const auto& x : s.blocks) bs.push_back(x.is_dataflow ? fuse_block(x) : x);
          auto ns = std::make_shared<ir::SeqExprNode>(std::move(bs), s.body);
          ns->span = s.span;
          ns->struct_info = s.struct_info;
          return ns;
        };
        auto ni = std::make_shared<ir::IfExpr>(i->cond, branch(*t), branch(*e));
        ni->span = i->span;
        ni->struct_info = i->struct_info;
        bind.value = ni;
        changed = true;
      }
      if (!b.is_dataflow) return in;
      // Run-time shape checks move before the kernel whose result they
      // checked, so that no group ends at them (hoist_shape_checks.h).
      ir::BindingBlock fused = fuser.Run(HoistShapeChecks(out, in, param_vars, &changed));
      changed |= fused.bindings.size() != b.bindings.size();
      return fused;
    };
    for (const auto& b : seq->blocks) blocks.push_back(fuse_block(b));
    if (!changed) continue;
    out.entries[i].relax = ir::WithBody(f, std::move(blocks), seq->body);
  }
  return out;
}

}  // namespace fusion
}  // namespace kiln
