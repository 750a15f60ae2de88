#include "compiler/relax/te_compute.h"

#include <map>
#include <memory>

namespace kiln {
namespace te {
namespace {

using ir::PrimExpr;
using VarMap = std::map<const ir::VarNode*, PrimExpr>;

// Rewrites variables in shape expressions (which hold only arithmetic).
PrimExpr SubstituteShapeExpr(const PrimExpr& e, const VarMap& vars) {
  if (const auto* v = e.as<ir::VarNode>()) {
    auto it = vars.find(v);
    return it == vars.end() ? e : it->second;
  }
  if (ir::IsBinary(e->kind())) {
    const auto* b = static_cast<const ir::BinaryNode*>(e.get());
    PrimExpr a = SubstituteShapeExpr(b->a, vars);
    PrimExpr c = SubstituteShapeExpr(b->b, vars);
    if (a.same_as(b->a) && c.same_as(b->b)) return e;
    return ir::MakeBinary(e->kind(), a, c);
  }
  if (const auto* c = e.as<ir::CastNode>()) {
    PrimExpr v = SubstituteShapeExpr(c->value, vars);
    return v.same_as(c->value) ? e : ir::Cast(c->dtype, v);
  }
  return e;
}

void CollectVars(const PrimExpr& e, std::vector<ir::Var>* out) {
  if (e.as<ir::VarNode>()) {
    auto var = std::static_pointer_cast<const ir::VarNode>(e.node());
    for (const auto& v : *out)
      if (v == var) return;
    out->push_back(var);
  } else if (ir::IsBinary(e->kind())) {
    const auto* b = static_cast<const ir::BinaryNode*>(e.get());
    CollectVars(b->a, out);
    CollectVars(b->b, out);
  } else if (const auto* c = e.as<ir::CastNode>()) {
    CollectVars(c->value, out);
  }
}

}  // namespace

Result<ir::PrimFunc> BuildComputePrimFunc(const ComputeSpec& spec) {
  // 1. Local copies of the caller's symbolic variables.
  std::vector<ir::Var> caller_vars;
  for (const auto& t : spec.inputs)
    for (const auto& d : t.shape) CollectVars(d, &caller_vars);
  for (const auto& d : spec.output.shape) CollectVars(d, &caller_vars);
  for (const auto& d : spec.reduce_extents) CollectVars(d, &caller_vars);
  VarMap local;
  for (const auto& v : caller_vars) local[v.get()] = PrimExpr(ir::MakeVar(v->name, v->dtype));

  // Each variable must be readable from some buffer dimension as-is, or the
  // kernel could not bind it from its arguments.
  auto appears_plain = [&](const ir::VarNode* v) {
    auto plain_in = [&](const TensorSpec& t) {
      for (const auto& d : t.shape)
        if (d.get() == v) return true;
      return false;
    };
    for (const auto& t : spec.inputs)
      if (plain_in(t)) return true;
    return plain_in(spec.output);
  };
  for (const auto& v : caller_vars) {
    if (!appears_plain(v.get())) {
      return Unimplemented("kernel " + spec.func_name + ": symbolic variable '" + v->name +
                           "' is not a plain dimension of any argument; passing it as a scalar is not supported yet");
    }
  }

  auto make_buffer = [&](const TensorSpec& t) {
    std::vector<PrimExpr> shape;
    for (const auto& d : t.shape) shape.push_back(SubstituteShapeExpr(d, local));
    return ir::MakeBuffer(t.name, shape, t.dtype);
  };

  auto func = std::make_shared<ir::PrimFuncNode>();
  func->name = spec.func_name;
  std::vector<ir::Buffer> ins;
  for (const auto& t : spec.inputs) ins.push_back(make_buffer(t));
  ir::Buffer out = make_buffer(spec.output);
  for (const auto& b : ins) {
    ir::Var handle = ir::MakeVar(b->name + "_handle", ir::HandleType());
    func->params.push_back(handle);
    func->buffer_map.emplace_back(handle, b);
  }
  {
    ir::Var handle = ir::MakeVar(out->name + "_handle", ir::HandleType());
    func->params.push_back(handle);
    func->buffer_map.emplace_back(handle, out);
  }
  func->attrs["tir.noalias"].kind = ir::AttrValue::Kind::kBool;
  func->attrs["tir.noalias"].i = 1;

  // 2. Loops: one per output dimension, then one per reduction axis.
  size_t nsp = out->shape.size();
  std::vector<ir::Var> loop_vars;
  std::vector<PrimExpr> extents;
  for (size_t i = 0; i < nsp; ++i) {
    loop_vars.push_back(ir::MakeVar(nsp == 1 ? "i" : "i" + std::to_string(i), DType::Int64()));
    extents.push_back(out->shape[i]);
  }
  for (size_t r = 0; r < spec.reduce_extents.size(); ++r) {
    loop_vars.push_back(ir::MakeVar(spec.reduce_extents.size() == 1 ? "k" : "k" + std::to_string(r), DType::Int64()));
    extents.push_back(SubstituteShapeExpr(spec.reduce_extents[r], local));
  }

  // 3. The block: iteration variables mirror the loops.
  ir::Block block;
  block.name = spec.block_name;
  std::vector<PrimExpr> spatial, reduce, values;
  for (size_t i = 0; i < loop_vars.size(); ++i) {
    bool is_reduce = i >= nsp;
    ir::IterVar iv;
    iv.var = ir::MakeVar("v_" + loop_vars[i]->name, DType::Int64());
    iv.min = PrimExpr(int64_t{0});
    iv.extent = extents[i];
    iv.kind = is_reduce ? ir::IterKind::kReduce : ir::IterKind::kSpatial;
    block.iter_vars.push_back(iv);
    (is_reduce ? reduce : spatial).push_back(PrimExpr(iv.var));
    values.push_back(PrimExpr(loop_vars[i]));
  }
  PrimExpr value = spec.fcompute(ins, spatial, reduce);
  if (reduce.empty()) {
    block.body = ir::Store(out, value, spatial);
  } else {
    block.init = ir::Store(out, spec.reduce_init, spatial);
    block.body = ir::Store(out, ir::Load(out, spatial) + value, spatial);
  }
  // Whole-buffer regions: precise regions come with the scheduling work.
  auto whole = [](const ir::Buffer& b) {
    ir::BufferRegion r;
    r.buffer = b;
    for (const auto& d : b->shape) r.ranges.emplace_back(PrimExpr(int64_t{0}), d);
    return r;
  };
  for (const auto& b : ins) block.reads.push_back(whole(b));
  block.writes.push_back(whole(out));

  ir::Stmt body = std::make_shared<ir::BlockRealizeNode>(values, ir::IntImm(DType::Bool(), 1), std::move(block));
  for (size_t i = loop_vars.size(); i-- > 0;) {
    body = std::make_shared<ir::ForNode>(loop_vars[i], PrimExpr(int64_t{0}), extents[i], ir::ForKind::kSerial, body);
  }
  ir::Block root;
  root.name = "root";
  root.body = body;
  func->body = std::make_shared<ir::BlockRealizeNode>(std::vector<PrimExpr>{}, ir::IntImm(DType::Bool(), 1), std::move(root));
  return ir::PrimFunc(func);
}

}  // namespace te
}  // namespace kiln
