// Subgraphs of control-flow nodes: what they read from enclosing graphs, the
// import of a branch chosen at import time into the current function, the
// lifting of a branch into a private Relax function of its own, and the
// split of the current dataflow block around a binding that may not sit in
// one.
//
// A lifted subgraph becomes a function because each function's top-level
// dataflow blocks are what fusion and the memory planner work on: a branch
// holding a whole network (as exporters write models that pick a network by
// an input) gets the same kernels as the network alone would.
#include <functional>

#include "compiler/onnx/graph_importer.h"
#include "compiler/onnx/subgraph_outputs.h"

namespace kiln {
namespace onnx {
namespace {

void CollectOuterNames(const ::onnx::GraphProto& graph, std::set<std::string> defined, std::set<std::string>* used) {
  for (const auto& vi : graph.input()) defined.insert(vi.name());
  for (const auto& t : graph.initializer()) defined.insert(t.name());
  for (const auto& node : graph.node()) {
    for (const auto& in : node.input())
      if (!in.empty() && !defined.count(in)) used->insert(in);
    for (const auto& a : node.attribute()) {
      if (a.has_g()) CollectOuterNames(a.g(), defined, used);
      for (const auto& g : a.graphs()) CollectOuterNames(g, defined, used);
    }
    for (const auto& out : node.output()) defined.insert(out);
  }
  for (const auto& o : graph.output())
    if (!defined.count(o.name())) used->insert(o.name());
}

// A value a lifted function takes as a parameter: one the program computes.
// Constants and values known at import time are used as they are.
bool NeedsParameter(const Value& v) {
  if (v.known || v.constant.defined()) return false;
  return v.expr && ir::ExprAs<ir::VarExpr>(v.expr) != nullptr;
}

// The symbolic variables in `e`.
void CollectVars(const ir::PrimExpr& e, std::set<const ir::VarNode*>* out) {
  if (!e.defined()) return;
  if (const auto* v = e.as<ir::VarNode>()) {
    out->insert(v);
    return;
  }
  const ir::PrimExprNode* n = e.node().get();
  if (ir::IsBinary(n->kind())) {
    const auto* b = static_cast<const ir::BinaryNode*>(n);
    CollectVars(b->a, out);
    CollectVars(b->b, out);
  } else if (const auto* c = e.as<ir::CastNode>()) {
    CollectVars(c->value, out);
  } else if (const auto* s = e.as<ir::SelectNode>()) {
    CollectVars(s->cond, out);
    CollectVars(s->true_value, out);
    CollectVars(s->false_value, out);
  }
}

void CollectSInfoVars(const ir::StructInfo& s, std::set<const ir::VarNode*>* out) {
  if (const auto* t = ir::SInfoAs<ir::TensorSInfo>(s)) {
    for (const auto& d : t->shape) CollectVars(d, out);
  }
}

}  // namespace

void CollectDimVars(const ir::StructInfo& s, std::set<const ir::VarNode*>* out) {
  if (const auto* t = ir::SInfoAs<ir::TupleSInfo>(s)) {
    for (const auto& f : t->fields) CollectDimVars(f, out);
    return;
  }
  CollectSInfoVars(s, out);
}

std::set<std::string> OuterNames(const ::onnx::GraphProto& graph) {
  std::set<std::string> used;
  CollectOuterNames(graph, {}, &used);
  return used;
}

std::set<std::string> Importer::NamesUsedFromCurrentNode() const {
  std::set<std::string> names;
  if (graph_ == nullptr) return names;
  // The nodes left to import: from the current one on, or, while an If's
  // tail split imports nodes ahead of it (if_tail.cc), every one not done.
  for (int i = pending_ != nullptr ? 0 : node_index_; i < graph_->node_size(); ++i) {
    if (pending_ != nullptr && !(*pending_)[static_cast<size_t>(i)]) continue;
    const auto& node = graph_->node(i);
    for (const auto& in : node.input()) names.insert(in);
    for (const auto& a : node.attribute()) {
      if (a.has_g()) {
        std::set<std::string> inner = OuterNames(a.g());
        names.insert(inner.begin(), inner.end());
      }
      for (const auto& g : a.graphs()) {
        std::set<std::string> inner = OuterNames(g);
        names.insert(inner.begin(), inner.end());
      }
    }
  }
  for (const auto& o : graph_->output()) names.insert(o.name());
  return names;
}

Status Importer::SuspendDataflow() {
  if (!bb_.InDataflow()) return Status::Ok();
  for (const std::string& name : NamesUsedFromCurrentNode()) {
    auto it = values_.find(name);
    if (it == values_.end() || !it->second.expr) continue;
    const auto* var = ir::ExprAs<ir::VarExpr>(it->second.expr);
    if (var == nullptr || !var->is_dataflow) continue;
    KILN_ASSIGN_OR_RETURN(ir::RVar out, bb_.EmitOutput(it->second.expr));
    it->second.expr = out;
  }
  return bb_.EndDataflow();
}

Status Importer::ResumeDataflow() { return bb_.BeginDataflow(); }

Status Importer::ImportInline(const ::onnx::GraphProto& graph, std::vector<Value>* outputs) {
  const ::onnx::GraphProto* outer_graph = graph_;
  int outer_index = node_index_;
  size_t problems = problems_.size();
  // The branch's own names stay inside it; what it outputs is copied out.
  std::map<std::string, Value> outer = values_;
  Status init = ImportInitializers(graph);
  if (init.ok() && problems_.size() == problems) ImportNodes(graph);
  graph_ = outer_graph;
  node_index_ = outer_index;
  KILN_RETURN_IF_ERROR(init);
  if (problems_.size() != problems) {
    values_ = std::move(outer);
    // Only operands refused (the model wrong at these shapes): so is this node.
    std::string m = "its branch \"" + graph.name() + "\" could not be imported (the problems are listed)";
    return AllInvalidFrom(problems) ? InvalidArgument(m) : Unimplemented(m);
  }
  outputs->clear();
  for (const auto& o : graph.output()) outputs->push_back(values_.at(o.name()));
  values_ = std::move(outer);
  return Status::Ok();
}

Result<std::string> Importer::LiftSubgraph(const ::onnx::GraphProto& graph, const std::string& name_hint,
                                           std::vector<ir::Expr>* args, const std::vector<ir::StructInfo>& inputs) {
  // The graph's own inputs (a loop body's) come first, then the enclosing
  // values it reads: parameters, or used as they are.
  std::map<std::string, Value> inner;
  std::vector<ir::RVar> params;
  std::set<std::string> param_names;
  std::set<const ir::VarNode*> defined_vars, used_vars;
  if (!inputs.empty() && inputs.size() != static_cast<size_t>(graph.input_size())) {
    return Internal("subgraph \"" + graph.name() + "\": " + std::to_string(inputs.size()) + " input types for " +
                    std::to_string(graph.input_size()) + " inputs");
  }
  for (size_t i = 0; i < inputs.size(); ++i) {
    const std::string& name = graph.input(static_cast<int>(i)).name();
    ir::RVar p = builder::BlockBuilder::Param(Identifier(name, &param_names), inputs[i]);
    CollectSInfoVars(inputs[i], &defined_vars);
    params.push_back(p);
    Value v;
    v.expr = p;
    inner[name] = std::move(v);
  }
  for (const std::string& name : OuterNames(graph)) {
    auto it = values_.find(name);
    if (it == values_.end()) continue;  // reported by the node that reads it
    Value v = it->second;
    if (v.known) {
      for (const auto& e : v.known->elems) CollectVars(e, &used_vars);
    }
    if (NeedsParameter(v)) {
      ir::StructInfo sinfo = v.expr->struct_info;
      if (!sinfo) return Internal("value \"" + name + "\" has no struct info");
      ir::RVar p = builder::BlockBuilder::Param(Identifier(name, &param_names), sinfo);
      CollectSInfoVars(sinfo, &defined_vars);
      params.push_back(p);
      args->push_back(v.expr);
      v.expr = p;
    }
    inner[name] = std::move(v);
  }
  for (const ir::VarNode* var : used_vars) {
    if (!defined_vars.count(var)) {
      return Unimplemented("subgraph \"" + graph.name() + "\" uses the symbolic dimension " + var->name +
                           " of a shape value but no tensor it reads has it");
    }
  }
  std::string name = bb_.module().UniqueName(name_hint);
  KILN_RETURN_IF_ERROR(bb_.BeginNestedFunction(name, params));
  const ::onnx::GraphProto* outer_graph = graph_;
  int outer_index = node_index_;
  std::map<std::string, Value> outer = std::move(values_);
  values_ = std::move(inner);
  size_t problems = problems_.size();
  // Back to the enclosing graph; an error drops the half-built function.
  auto finish = [&](Status s) -> Result<std::string> {
    graph_ = outer_graph;
    node_index_ = outer_index;
    values_ = std::move(outer);
    if (!s.ok()) {
      bb_.AbandonFunction();
      return s;
    }
    return name;
  };
  KILN_RETURN_IF_ERROR(bb_.BeginDataflow());
  Status init = ImportInitializers(graph);
  if (!init.ok()) return finish(init);
  if (problems_.size() == problems) ImportNodes(graph);
  if (problems_.size() != problems) {
    std::string m = "its subgraph \"" + graph.name() + "\" could not be imported (the problems are listed)";
    return finish(AllInvalidFrom(problems) ? InvalidArgument(m) : Unimplemented(m));
  }
  std::vector<ir::Expr> outputs;
  std::string owner = SubgraphOwnerText(outer_graph, outer_index, graph);
  for (const auto& o : graph.output()) {
    Result<ir::Expr> e = ExprOf(o.name());
    if (!e.ok()) return finish(InvalidArgument("subgraph output \"" + o.name() + "\": " + e.status().message()));
    e = MatchDeclaredOutput(bb_, owner, outputs.size(), o, *e);
    if (!e.ok()) return finish(e.status());
    Result<ir::RVar> out = bb_.EmitOutput(*e);
    if (!out.ok()) return finish(out.status());
    outputs.push_back(*out);
  }
  if (outputs.empty()) return finish(InvalidArgument("subgraph \"" + graph.name() + "\" has no outputs"));
  Status end = bb_.EndDataflow();
  if (!end.ok()) return finish(end);
  ir::Expr result = outputs[0];
  if (outputs.size() > 1) {
    Result<ir::RVar> tuple = bb_.Emit(std::make_shared<ir::TupleExpr>(outputs));
    if (!tuple.ok()) return finish(tuple.status());
    result = *tuple;
  }
  return finish(bb_.EmitFuncOutput(result));
}

Result<std::string> Importer::LiftBranch(const ::onnx::GraphProto& graph, const std::string& name_hint,
                                         std::vector<ir::Expr>* args, std::vector<std::string>* wrong) {
  wrong->clear();
  size_t before = problems_.size();
  std::set<std::string> poisoned = poisoned_;
  Result<std::string> fn = LiftSubgraph(graph, name_hint, args);
  // Only problems of its nodes count: a graph that is malformed (no outputs,
  // an output nothing defines) is so at any shapes.
  if (fn.ok() || problems_.size() == before || !AllInvalidFrom(before)) return fn;
  wrong->assign(problems_.begin() + static_cast<std::ptrdiff_t>(before), problems_.end());
  DropProblemsFrom(before);
  poisoned_ = std::move(poisoned);
  return fn;
}

}  // namespace onnx
}  // namespace kiln
