#include "compiler/relax/te_builder.h"

#include <limits>

#include "compiler/tir/stmt_functor.h"
#include "compiler/tir/substitute.h"

namespace kiln {
namespace te {
namespace {

using ir::PrimExpr;

// Replaces caller Vars by local ones, creating a local Var on first sight.
class Localizer : public tir::StmtExprMutator {
 public:
  Localizer(std::map<const ir::VarNode*, PrimExpr>* map, std::vector<ir::Var>* created,
            std::vector<std::pair<ir::Var, PrimExpr>>* caller_of)
      : map_(map), created_(created), caller_of_(caller_of) {}
  PrimExpr MutateExpr(const PrimExpr& e) override {
    if (const auto* v = e.as<ir::VarNode>()) {
      // A Var that already is a local one (passed back in by a caller) stays.
      for (const auto& l : *created_)
        if (l.get() == v) return e;
      auto it = map_->find(v);
      if (it != map_->end()) return it->second;
      ir::Var local = ir::MakeVar(v->name, v->dtype);
      created_->push_back(local);
      caller_of_->emplace_back(local, e);
      (*map_)[v] = PrimExpr(local);
      return PrimExpr(local);
    }
    return tir::StmtExprMutator::MutateExpr(e);
  }

 private:
  std::map<const ir::VarNode*, PrimExpr>* map_;
  std::vector<ir::Var>* created_;
  std::vector<std::pair<ir::Var, PrimExpr>>* caller_of_;
};

ir::BufferRegion Whole(const ir::Buffer& b) {
  ir::BufferRegion r;
  r.buffer = b;
  for (const auto& d : b->shape) r.ranges.emplace_back(PrimExpr(int64_t{0}), d);
  return r;
}

PrimExpr True() { return ir::IntImm(DType::Bool(), 1); }

// Buffers a statement or expression loads from (for the block's reads),
// leaving out those allocated inside it: a read region names a buffer that
// exists where the block starts (the printed text would not parse back).
class LoadCollector : public tir::StmtExprVisitor {
 public:
  void VisitExpr(const PrimExpr& e) override {
    if (const auto* l = e.as<ir::BufferLoadNode>()) Add(l->buffer);
    tir::StmtExprVisitor::VisitExpr(e);
  }
  void VisitStmt(const ir::Stmt& s) override {
    if (s && s->kind() == ir::TirKind::kAllocate) local_.push_back(ir::As<ir::AllocateNode>(s)->buffer);
    tir::StmtExprVisitor::VisitStmt(s);
  }
  void Add(const ir::Buffer& b) {
    for (const auto& x : buffers)
      if (x == b) return;
    buffers.push_back(b);
  }
  // The loaded buffers not allocated in what was visited.
  std::vector<ir::Buffer> Outer() const {
    std::vector<ir::Buffer> out;
    for (const auto& b : buffers) {
      bool local = false;
      for (const auto& l : local_) local = local || l == b;
      if (!local) out.push_back(b);
    }
    return out;
  }
  std::vector<ir::Buffer> buffers;

 private:
  std::vector<ir::Buffer> local_;
};

}  // namespace

PrimExpr ReduceIdentity(ReduceKind kind, DType dtype) {
  bool f = dtype.is_float();
  switch (kind) {
    case ReduceKind::kSum: return f ? ir::FloatImm(dtype, 0.0) : ir::IntImm(dtype, 0);
    case ReduceKind::kProd: return f ? ir::FloatImm(dtype, 1.0) : ir::IntImm(dtype, 1);
    case ReduceKind::kMax:
    case ReduceKind::kMin: {
      bool max = kind == ReduceKind::kMax;
      if (f) return ir::FloatImm(dtype, max ? -std::numeric_limits<double>::infinity() : std::numeric_limits<double>::infinity());
      if (dtype.bits == 1) return ir::IntImm(dtype, max ? 0 : 1);
      bool is_signed = dtype.code == kDLInt;
      int bits = dtype.bits;
      int64_t lo = is_signed ? (bits == 64 ? std::numeric_limits<int64_t>::min() : -(int64_t{1} << (bits - 1))) : 0;
      int64_t hi = is_signed ? (bits == 64 ? std::numeric_limits<int64_t>::max() : (int64_t{1} << (bits - 1)) - 1)
                             : (bits >= 63 ? std::numeric_limits<int64_t>::max() : (int64_t{1} << bits) - 1);
      return ir::IntImm(dtype, max ? lo : hi);
    }
  }
  return PrimExpr();
}

PrimExpr ReduceCombine(ReduceKind kind, PrimExpr acc, PrimExpr value) {
  switch (kind) {
    case ReduceKind::kSum: return ir::MakeBinary(ir::TirKind::kAdd, acc, value);
    case ReduceKind::kProd: return ir::MakeBinary(ir::TirKind::kMul, acc, value);
    case ReduceKind::kMax: return ir::MakeBinary(ir::TirKind::kMax, acc, value);
    case ReduceKind::kMin: return ir::MakeBinary(ir::TirKind::kMin, acc, value);
  }
  return PrimExpr();
}

FuncBuilder::FuncBuilder(std::string func_name) : func_name_(std::move(func_name)) {}

PrimExpr FuncBuilder::Local(const PrimExpr& e) {
  if (!e.defined()) return e;
  Localizer l(&local_, &local_vars_, &caller_of_);
  return l.MutateExpr(e);
}

std::vector<PrimExpr> FuncBuilder::Local(const std::vector<PrimExpr>& es) {
  std::vector<PrimExpr> out;
  out.reserve(es.size());
  for (const auto& e : es) out.push_back(Local(e));
  return out;
}

PrimExpr FuncBuilder::Caller(const PrimExpr& e) const {
  if (!e.defined()) return e;
  tir::VarMap back;
  for (const auto& kv : caller_of_) back[kv.first.get()] = kv.second;
  return tir::Substitute(e, back);
}

std::vector<PrimExpr> FuncBuilder::Caller(const std::vector<PrimExpr>& es) const {
  std::vector<PrimExpr> out;
  for (const auto& e : es) out.push_back(Caller(e));
  return out;
}

ir::Var FuncBuilder::NewLoopVar(const std::string& base) {
  int n = names_[base]++;
  return ir::MakeVar(n == 0 ? base : base + "_" + std::to_string(n), DType::Int64());
}

Tensor FuncBuilder::Input(const std::string& name, const std::vector<PrimExpr>& shape, DType dtype) {
  ir::Buffer b = ir::MakeBuffer(name, Local(shape), dtype);
  inputs_.push_back(b);
  return Tensor(b);
}

void FuncBuilder::AddStage(ir::Stmt stmt, const ir::Buffer& out) {
  computed_.push_back(out);
  stages_.push_back(std::move(stmt));
}

Tensor FuncBuilder::Reduce(const std::string& name, const std::vector<PrimExpr>& shape, DType dtype, ReduceKind kind,
                           const std::vector<PrimExpr>& extents, const ReduceFn& f, PrimExpr init) {
  ir::Buffer out = ir::MakeBuffer(name, Local(shape), dtype);
  std::vector<PrimExpr> red = Local(extents);
  size_t nsp = out->shape.size();
  std::vector<ir::Var> loops;
  std::vector<PrimExpr> loop_extents;
  for (size_t i = 0; i < nsp; ++i) {
    loops.push_back(NewLoopVar(nsp == 1 ? "i" : "i" + std::to_string(i)));
    loop_extents.push_back(out->shape[i]);
  }
  for (size_t r = 0; r < red.size(); ++r) {
    loops.push_back(NewLoopVar(red.size() == 1 ? "k" : "k" + std::to_string(r)));
    loop_extents.push_back(red[r]);
  }
  ir::Block block;
  block.name = name;
  Indices spatial, reduce;
  std::vector<PrimExpr> values;
  for (size_t i = 0; i < loops.size(); ++i) {
    bool is_reduce = i >= nsp;
    ir::IterVar iv;
    iv.var = ir::MakeVar("v_" + loops[i]->name, DType::Int64());
    iv.min = PrimExpr(int64_t{0});
    iv.extent = loop_extents[i];
    iv.kind = is_reduce ? ir::IterKind::kReduce : ir::IterKind::kSpatial;
    block.iter_vars.push_back(iv);
    (is_reduce ? reduce : spatial).push_back(PrimExpr(iv.var));
    values.push_back(PrimExpr(loops[i]));
  }
  PrimExpr value = red.empty() ? f(spatial, {}) : f(spatial, reduce);
  LoadCollector reads;
  reads.VisitExpr(value);
  if (red.empty()) {
    block.body = ir::Store(out, value, spatial);
  } else {
    block.init = ir::Store(out, init.defined() ? init : ReduceIdentity(kind, dtype), spatial);
    block.body = ir::Store(out, ReduceCombine(kind, ir::Load(out, spatial), value), spatial);
  }
  for (const auto& b : reads.buffers) block.reads.push_back(Whole(b));
  block.writes.push_back(Whole(out));
  ir::Stmt body = std::make_shared<ir::BlockRealizeNode>(values, True(), std::move(block));
  for (size_t i = loops.size(); i-- > 0;) {
    body = std::make_shared<ir::ForNode>(loops[i], PrimExpr(int64_t{0}), loop_extents[i], ir::ForKind::kSerial, body);
  }
  AddStage(body, out);
  return Tensor(out);
}

Tensor FuncBuilder::Compute(const std::string& name, const std::vector<PrimExpr>& shape, DType dtype,
                            const ComputeFn& f) {
  return Reduce(name, shape, dtype, ReduceKind::kSum, {}, [&f](const Indices& i, const Indices&) { return f(i); });
}

Tensor FuncBuilder::Custom(const std::string& name, const std::vector<PrimExpr>& shape, DType dtype,
                           const StmtFn& body) {
  ir::Buffer out = ir::MakeBuffer(name, Local(shape), dtype);
  ir::Block block;
  block.name = name;
  block.body = body(out);
  LoadCollector reads;
  reads.VisitStmt(block.body);
  for (const auto& b : reads.Outer())
    if (b != out) block.reads.push_back(Whole(b));
  block.writes.push_back(Whole(out));
  AddStage(std::make_shared<ir::BlockRealizeNode>(std::vector<PrimExpr>{}, True(), std::move(block)), out);
  return Tensor(out);
}

Result<ir::PrimFunc> FuncBuilder::Build(const std::vector<Tensor>& outputs) {
  for (const auto& o : outputs) {
    for (const auto& in : inputs_)
      if (o.buffer() == in) {
        return InvalidArgument("kernel " + func_name_ + ": output '" + in->name + "' is an input; copy it with a stage");
      }
  }
  std::vector<ir::Buffer> params = inputs_;
  for (const auto& o : outputs) params.push_back(o.buffer());

  // A variable no parameter has as a plain dimension cannot be bound from
  // the buffers: the caller passes it as an int64 scalar after the buffers
  // (call_tir's tir_vars), in creation order.
  std::vector<ir::Var> scalars;
  for (const auto& v : local_vars_) {
    bool plain = false;
    for (const auto& b : params)
      for (const auto& d : b->shape) plain |= d.get() == v.get();
    if (!plain) scalars.push_back(v);
  }

  auto func = std::make_shared<ir::PrimFuncNode>();
  func->name = func_name_;
  for (const auto& b : params) {
    ir::Var handle = ir::MakeVar(b->name + "_handle", ir::HandleType());
    func->params.push_back(handle);
    func->buffer_map.emplace_back(handle, b);
  }
  for (const auto& v : scalars) func->params.push_back(v);
  func->attrs = attrs_;
  func->attrs["tir.noalias"].kind = ir::AttrValue::Kind::kBool;
  func->attrs["tir.noalias"].i = 1;

  ir::Block root;
  root.name = "root";
  for (const auto& c : computed_) {
    bool is_param = false;
    for (const auto& p : params) is_param |= p == c;
    if (!is_param) root.alloc_buffers.push_back(c);
  }
  root.body = ir::Seq(stages_);
  func->body = std::make_shared<ir::BlockRealizeNode>(std::vector<PrimExpr>{}, True(), std::move(root));
  return ir::PrimFunc(func);
}

}  // namespace te
}  // namespace kiln
