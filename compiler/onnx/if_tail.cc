// An If whose branches give values of different ranks (or dtypes), with a
// condition known only at run time.
//
// ONNX allows it: each branch declares its own output types, and exporters
// write it for torch's data-dependent squeezes. torch's `x.squeeze(-1)` on a
// dimension that may be 1 becomes If(Shape(x)[-1] == 1, Squeeze, Identity),
// rank 2 or 3, and torch's RNN cells then branch on the rank again
// (`Size(Shape(x)) != 2` → Unsqueeze): silero-vad's decoder is this.
//
// A Relax value has one rank. The choices weighed:
// (a) Decide the condition at import time when it depends on shape values
//     only. Done wherever it folds (ops_control.cc), but here it does not:
//     `T == 1` for a symbolic T is true for some inputs and false for others,
//     so one compiled program still has to hold both.
// (c) An unknown-rank value (R.Tensor(ndim=-1)) flowing on. Only the few
//     operators that take any rank could accept it; Shape/Size of it could
//     not fold, so the rank checks that follow (the nested Ifs above) would
//     stay run-time Ifs returning unknown ranks in turn, and every kernel
//     after them would need a rank-generic form. It does not compose.
// (b) Tail duplication, what this file does: the nodes after the If that
//     depend on its outputs (its tail) are imported twice, once with the
//     outputs typed as the then branch gives them and once as the else branch
//     does. In each copy the ranks are fixed again, rank checks fold, nested
//     Ifs on them take their branch at import time, and each copy is ordinary
//     Relax. The If then chooses between
//
//         if cond:  r = cls.f_then(args...); out = cls.f_after_then(r, captured...)
//         else:     r = cls.f_else(args...); out = cls.f_after_else(r, captured...)
//
//     where out are the graph outputs that depend on the If (each copy is a
//     private function, as lifted branches are). Only one copy runs per
//     call, so duplication costs compile time and program size, not run
//     time. It is bounded: nested splits multiply the copies, so the nodes
//     imported a second time are counted over the whole model against
//     ImportOptions::if_tail_limit (4096 by default; silero-vad needs under
//     600), and an If that would exceed it is an error naming it. The nodes
//     after the If that do not depend on it are imported once, ahead of it.
//
// A copy that does not import is a path the model itself gets wrong: in
// silero-vad the rank-3 copy feeds a rank-5 tensor to LSTM, which ONNX
// Runtime too refuses when that path runs (input lengths other than 1 frame).
// So when exactly one copy imports, the other branch of the If raises, when
// the program runs, an error naming the If and the problems of its copy
// (vm.builtin.raise). Problems in both copies, or a split whose copies give
// the graph's outputs different ranks, remain import errors. Problems in the
// branches themselves are ConvertIf's (ops_control.cc: a branch wrong at
// these shapes raises too, while the other imports).
#include <algorithm>
#include <map>

#include "compiler/onnx/graph_importer.h"

namespace kiln {
namespace onnx {
namespace {

// What `node` reads: its inputs and what its subgraphs read from enclosing graphs.
std::vector<std::string> NodeReads(const ::onnx::NodeProto& node) {
  std::vector<std::string> reads(node.input().begin(), node.input().end());
  for (const auto& a : node.attribute()) {
    if (a.has_g()) {
      std::set<std::string> outer = OuterNames(a.g());
      reads.insert(reads.end(), outer.begin(), outer.end());
    }
    for (const auto& g : a.graphs()) {
      std::set<std::string> outer = OuterNames(g);
      reads.insert(reads.end(), outer.begin(), outer.end());
    }
  }
  return reads;
}

// One for the node and one for each node of its subgraphs, nested ones too.
int64_t NodeWeight(const ::onnx::NodeProto& node) {
  int64_t w = 1;
  for (const auto& a : node.attribute()) {
    if (a.has_g())
      for (const auto& n : a.g().node()) w += NodeWeight(n);
    for (const auto& g : a.graphs())
      for (const auto& n : g.node()) w += NodeWeight(n);
  }
  return w;
}

// The n fields of a function result (the result itself when n is 1).
std::vector<ir::StructInfo> Fields(const ir::StructInfo& s, size_t n) {
  if (n == 1) return {s};
  if (const auto* t = ir::SInfoAs<ir::TupleSInfo>(s)) return t->fields;
  return std::vector<ir::StructInfo>(n, s);
}

// "rank 2 float32" (the parts of a type that decide whether one value holds it).
std::string RankText(const ir::StructInfo& s) {
  const auto* t = ir::SInfoAs<ir::TensorSInfo>(s);
  if (t == nullptr) return "a non-tensor value";
  std::string r = t->ndim < 0 ? "unknown rank" : "rank " + std::to_string(t->ndim);
  return t->has_dtype ? r + " " + DTypeName(t->dtype) : r;
}

bool SameRankAndDtype(const ir::StructInfo& a, const ir::StructInfo& b) { return RankText(a) == RankText(b); }

bool DimInScope(const ir::PrimExpr& d, const std::set<const ir::VarNode*>& scope) {
  std::set<const ir::VarNode*> vars;
  CollectDimVars(ir::MakeTensorSInfo({d}, DType::Int64()), &vars);
  for (const ir::VarNode* v : vars)
    if (!scope.count(v)) return false;
  return true;
}

// A tensor type for a value after the If: `s`'s dimensions where the calling
// function knows them (constants, its own variables), fresh variables
// `base`_dim<k> elsewhere (a dimension the copy computed).
ir::StructInfo ScopedType(const ir::TensorSInfo& s, const std::set<const ir::VarNode*>& scope, const std::string& base) {
  std::vector<ir::PrimExpr> dims;
  for (int k = 0; k < s.ndim; ++k) {
    if (s.has_shape && DimInScope(s.shape[static_cast<size_t>(k)], scope)) {
      dims.push_back(s.shape[static_cast<size_t>(k)]);
    } else {
      dims.push_back(ir::PrimExpr(ir::MakeVar(base + "_dim" + std::to_string(k))));
    }
  }
  return ir::MakeTensorSInfo(dims, s.dtype);
}

// Binds `value` (of type `sinfo`) in `block`; the new variable.
ir::RVar Bind(ir::BindingBlock* block, ir::Expr value, const ir::StructInfo& sinfo, const std::string& name) {
  value->struct_info = sinfo;
  ir::RVar v = ir::MakeRVar(name);
  v->struct_info = sinfo;
  block->bindings.push_back(ir::Binding{v, value, nullptr, {}});
  return v;
}

ir::Expr Seq(ir::BindingBlock block, const ir::RVar& result) {
  auto seq = std::make_shared<ir::SeqExprNode>(std::vector<ir::BindingBlock>{std::move(block)}, result);
  seq->struct_info = result->struct_info;
  return seq;
}

// One arm of the If: the branch, then the copy of the tail typed by it.
ir::Expr ArmCall(const ir::IRModule& mod, const std::string& branch, const std::vector<ir::Expr>& branch_args,
                 size_t n, const std::string& tail, const std::vector<ir::Expr>& tail_args) {
  ir::BindingBlock block;
  ir::StructInfo ret = mod.FindRelax(branch)->ret_sinfo;
  ir::RVar r = Bind(&block, std::make_shared<ir::CallExpr>(std::make_shared<ir::GlobalVarExpr>(branch), branch_args), ret,
                    branch + "_result");
  std::vector<ir::Expr> args;
  std::vector<ir::StructInfo> fields = Fields(ret, n);
  for (size_t k = 0; k < n; ++k) {
    if (n == 1) {
      args.push_back(r);
    } else {
      args.push_back(Bind(&block, std::make_shared<ir::TupleGetItemExpr>(r, static_cast<int>(k)), fields[k],
                          branch + "_out" + std::to_string(k)));
    }
  }
  args.insert(args.end(), tail_args.begin(), tail_args.end());
  ir::RVar t = Bind(&block, std::make_shared<ir::CallExpr>(std::make_shared<ir::GlobalVarExpr>(tail), args),
                    mod.FindRelax(tail)->ret_sinfo, tail + "_result");
  return Seq(std::move(block), t);
}

}  // namespace

// `s` with only its ranks and dtypes: the declared type of a raise arm, which
// never returns (so it must not bind any dimension).
ir::StructInfo RanksOnly(const ir::StructInfo& s) {
  if (const auto* t = ir::SInfoAs<ir::TupleSInfo>(s)) {
    std::vector<ir::StructInfo> fields;
    for (const auto& f : t->fields) fields.push_back(RanksOnly(f));
    return std::make_shared<ir::TupleSInfo>(fields);
  }
  const auto* t = ir::SInfoAs<ir::TensorSInfo>(s);
  if (t == nullptr || t->ndim < 0 || !t->has_dtype) return s;
  return ir::MakeTensorSInfoNdim(t->ndim, t->dtype);
}

// An arm that fails with `message` when it runs.
ir::Expr RaiseArm(const std::string& message, const ir::StructInfo& sinfo, const std::string& name) {
  ir::BindingBlock block;
  auto call = std::make_shared<ir::CallExpr>(std::make_shared<ir::ExternFuncExpr>("vm.builtin.raise"),
                                             std::vector<ir::Expr>{std::make_shared<ir::StringImmExpr>(message)},
                                             ir::AttrMap{}, std::vector<ir::StructInfo>{sinfo});
  ir::RVar v = Bind(&block, call, sinfo, name);
  return Seq(std::move(block), v);
}

Status Importer::SplitIfTail(NodeCtx& ctx, const IfBranches& br) {
  const ::onnx::GraphProto& graph = *graph_;
  const int at = node_index_;
  std::vector<char>& pending = *pending_;
  const ::onnx::NodeProto& node = ctx.node();
  const size_t n = ctx.NumOutputs();
  const ir::IRModule& mod = bb_.module();
  std::vector<ir::StructInfo> then_out = Fields(mod.FindRelax(br.then_fn)->ret_sinfo, n);
  std::vector<ir::StructInfo> else_out = Fields(mod.FindRelax(br.else_fn)->ret_sinfo, n);
  std::string differ;
  for (size_t k = 0; k < n && differ.empty(); ++k) {
    if (!SameRankAndDtype(then_out[k], else_out[k])) {
      differ = "output " + std::to_string(k) + " is " + RankText(then_out[k]) + " when the condition is true, " +
               RankText(else_out[k]) + " when it is false";
    }
  }

  // The nodes after the If: those that read its outputs, directly or not (its
  // tail, held while the split runs), and the others, imported ahead of it.
  // An If among the others whose results the tail reads joins the tail, with
  // what depends on it: it may give different ranks in turn, and its own
  // tail, which then meets this one, must be copied inside each copy of this
  // one (torch's `a.squeeze(-1) + b.squeeze(-1)`: four copies).
  std::vector<int> later;
  std::map<int, std::vector<std::string>> reads_of;
  for (int i = at + 1; i < graph.node_size(); ++i) {
    if (pending[static_cast<size_t>(i)] == 0) continue;
    later.push_back(i);
    reads_of[i] = NodeReads(graph.node(i));
  }
  std::vector<char> in_tail(static_cast<size_t>(graph.node_size()), 0);
  std::set<std::string> tainted;
  for (const auto& o : node.output())
    if (!o.empty()) tainted.insert(o);
  for (bool joined = true; joined;) {
    for (int i : later) {
      if (in_tail[static_cast<size_t>(i)]) continue;
      bool reads = false;
      for (const auto& r : reads_of[i]) reads = reads || tainted.count(r) > 0;
      if (!reads) continue;
      in_tail[static_cast<size_t>(i)] = 1;
      for (const auto& o : graph.node(i).output())
        if (!o.empty()) tainted.insert(o);
    }
    joined = false;
    std::set<std::string> feeds;  // what the tail reads, directly or not
    for (auto it = later.rbegin(); it != later.rend(); ++it) {
      const ::onnx::NodeProto& other = graph.node(*it);
      bool feeding = in_tail[static_cast<size_t>(*it)] != 0;
      for (const auto& o : other.output()) feeding = feeding || feeds.count(o) > 0;
      if (!feeding) continue;
      feeds.insert(reads_of[*it].begin(), reads_of[*it].end());
      if (!in_tail[static_cast<size_t>(*it)] && other.op_type() == "If") {
        in_tail[static_cast<size_t>(*it)] = 1;
        for (const auto& o : other.output())
          if (!o.empty()) tainted.insert(o);
        joined = true;
      }
    }
  }
  std::vector<int> tail, ahead;
  int64_t weight = 0;
  for (int i : later) {
    char state = pending[static_cast<size_t>(i)];
    if (!in_tail[static_cast<size_t>(i)]) {
      if (state == 1) ahead.push_back(i);
      continue;
    }
    // Held by an enclosing split: it would have taken this If into its tail.
    if (state == 2) return Internal(NodeLabel(graph.node(i), i) + " is in the tails of two If splits");
    tail.push_back(i);
    weight += NodeWeight(graph.node(i));
  }
  std::vector<std::string> outputs;  // the graph's outputs that depend on the If
  for (const auto& o : graph.output())
    if (tainted.count(o.name()) && std::find(outputs.begin(), outputs.end(), o.name()) == outputs.end()) outputs.push_back(o.name());
  auto take_tail = [&] {
    for (int i : tail) pending[static_cast<size_t>(i)] = 0;
    for (const auto& o : node.output()) split_outputs_.insert(o);
  };
  if (outputs.empty()) {  // nothing the graph gives depends on the If
    take_tail();
    return ResumeDataflow();
  }
  if (if_tail_nodes_ + weight > if_tail_limit_) {
    if_tail_limit_hit_ = true;
    return ctx.Unsupported(differ + ", so the " + std::to_string(weight) +
                           " nodes that depend on it would be imported once per branch, bringing the nodes imported "
                           "twice to " + std::to_string(if_tail_nodes_ + weight) + ", above the limit of " +
                           std::to_string(if_tail_limit_) + " (ImportOptions::if_tail_limit)");
  }
  if_tail_nodes_ += weight;

  // The others first, ahead of the If, while the tail is held.
  for (int i : tail) pending[static_cast<size_t>(i)] = 2;
  KILN_RETURN_IF_ERROR(ResumeDataflow());
  for (int i : ahead) {
    if (pending[static_cast<size_t>(i)] == 1) ImportNode(i);  // a nested split may have imported it
    graph_ = &graph;
  }
  node_index_ = at;
  KILN_RETURN_IF_ERROR(SuspendDataflow());

  // The tail as a graph of its own whose inputs are the If's outputs,
  // imported once per branch with that branch's types.
  auto tg = std::make_unique<::onnx::GraphProto>();
  std::string base = IdentifierText(node.name().empty() ? "if" : node.name());
  tg->set_name(graph.name() + " after " + (node.name().empty() ? "If #" + std::to_string(at) : node.name()));
  for (size_t k = 0; k < n; ++k) {
    const std::string& o = node.output(static_cast<int>(k));
    tg->add_input()->set_name(o.empty() ? "(unused If output " + std::to_string(k) + ")" : o);
  }
  std::vector<int> index;
  auto parent = tail_index_.find(&graph);
  for (int i : tail) {
    *tg->add_node() = graph.node(i);
    index.push_back(parent != tail_index_.end() ? parent->second[static_cast<size_t>(i)] : i);
  }
  for (const auto& o : outputs) tg->add_output()->set_name(o);
  const ::onnx::GraphProto* tail_graph = tg.get();
  tail_graphs_.push_back(std::move(tg));
  tail_index_[tail_graph] = std::move(index);

  struct Copy {
    std::string fn;  // empty when it did not import
    std::vector<ir::Expr> args;
    std::vector<std::string> problems;
  };
  // Problems of a copy are its own: taken out of the model's list, and the
  // names it poisoned cleared, so the other copy imports as if alone.
  auto import_copy = [&](const std::vector<ir::StructInfo>& types, const std::string& hint) {
    Copy c;
    size_t before = problems_.size();
    std::set<std::string> poisoned = poisoned_;
    Result<std::string> fn = LiftSubgraph(*tail_graph, hint, &c.args, types);
    c.problems.assign(problems_.begin() + static_cast<std::ptrdiff_t>(before), problems_.end());
    DropProblemsFrom(before);
    poisoned_ = std::move(poisoned);
    if (fn.ok()) {
      c.fn = *fn;
    } else if (c.problems.empty()) {
      c.problems.push_back(fn.status().message());
    }
    return c;
  };
  Copy then_copy = import_copy(then_out, base + "_after_then");
  Copy else_copy = import_copy(else_out, base + "_after_else");
  take_tail();
  auto fail = [&](Status s) {
    for (const auto& name : tainted) poisoned_.insert(name);
    return s;
  };
  // A copy cut short by the limit is no path the model gets wrong: an error here.
  if ((then_copy.fn.empty() && else_copy.fn.empty()) || if_tail_limit_hit_) {
    problems_.insert(problems_.end(), then_copy.problems.begin(), then_copy.problems.end());
    for (const auto& p : else_copy.problems)
      if (std::find(then_copy.problems.begin(), then_copy.problems.end(), p) == then_copy.problems.end()) problems_.push_back(p);
    return fail(ctx.Unsupported(differ + "; the " + std::to_string(tail.size()) + " nodes that depend on it " +
                                (if_tail_limit_hit_ ? "could not be imported for both branches within the limit"
                                                    : "import for neither branch") +
                                " (the problems are listed)"));
  }
  ir::StructInfo then_ret = then_copy.fn.empty() ? nullptr : mod.FindRelax(then_copy.fn)->ret_sinfo;
  ir::StructInfo else_ret = else_copy.fn.empty() ? nullptr : mod.FindRelax(else_copy.fn)->ret_sinfo;
  const ir::StructInfo& good = then_ret ? then_ret : else_ret;
  std::vector<ir::StructInfo> good_out = Fields(good, outputs.size());
  if (then_ret && else_ret) {
    std::vector<ir::StructInfo> t = Fields(then_ret, outputs.size()), e = Fields(else_ret, outputs.size());
    for (size_t k = 0; k < outputs.size(); ++k) {
      if (!SameRankAndDtype(t[k], e[k])) {
        return fail(ctx.Unsupported(differ + "; the graph output \"" + outputs[k] + "\" that depends on it is then " +
                                    RankText(t[k]) + " or " + RankText(e[k]) + " (one rank per value)"));
      }
    }
  }
  auto raise_message = [&](const Copy& c, bool cond) {
    std::string m = NodeLabel(node, at) + ": " + differ + "; what follows could not be compiled for the " +
                    (cond ? "true" : "false") + " case:";
    for (const auto& p : c.problems) m += "\n  " + p;
    return m;
  };
  ir::Expr then_arm = then_ret ? ArmCall(mod, br.then_fn, br.then_args, n, then_copy.fn, then_copy.args)
                               : RaiseArm(raise_message(then_copy, true), RanksOnly(good), base + "_then_raise");
  ir::Expr else_arm = else_ret ? ArmCall(mod, br.else_fn, br.else_args, n, else_copy.fn, else_copy.args)
                               : RaiseArm(raise_message(else_copy, false), RanksOnly(good), base + "_else_raise");
  KILN_ASSIGN_OR_RETURN(ir::RVar r, bb_.Emit(std::make_shared<ir::IfExpr>(br.cond, then_arm, else_arm), base));

  // The calling function's symbolic variables: those of what it passes.
  std::set<const ir::VarNode*> scope;
  for (const std::vector<ir::Expr>* args :
       std::initializer_list<const std::vector<ir::Expr>*>{&br.then_args, &br.else_args, &then_copy.args, &else_copy.args})
    for (const auto& a : *args) CollectDimVars(a->struct_info, &scope);
  for (size_t k = 0; k < outputs.size(); ++k) {
    ir::Expr e = r;
    if (outputs.size() > 1) {
      KILN_ASSIGN_OR_RETURN(ir::RVar item, bb_.Emit(std::make_shared<ir::TupleGetItemExpr>(r, static_cast<int>(k))));
      e = item;
    }
    const auto* want = ir::SInfoAs<ir::TensorSInfo>(good_out[k]);
    const auto* got = ir::SInfoAs<ir::TensorSInfo>(e->struct_info);
    if (want != nullptr && want->ndim >= 0 && want->has_dtype && got != nullptr) {
      bool known = got->has_shape;
      for (const auto& d : got->shape) known = known && DimInScope(d, scope);
      if (!known) {
        KILN_ASSIGN_OR_RETURN(ir::RVar cast, bb_.EmitMatchCast(e, ScopedType(*want, scope, IdentifierText(outputs[k]))));
        e = cast;
      }
    }
    Value v;
    v.expr = e;
    values_[outputs[k]] = std::move(v);
  }
  return ResumeDataflow();
}

}  // namespace onnx
}  // namespace kiln
