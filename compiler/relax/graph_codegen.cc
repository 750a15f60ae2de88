#include "compiler/relax/graph_codegen.h"

#include <algorithm>
#include <map>
#include <optional>

#include "compiler/memory/arena.h"
#include "compiler/relax/struct_info_util.h"
#include "compiler/relax/vm_codegen.h"

namespace kiln {
namespace relax {
namespace {

using compiler::GraphArgInfo;
using compiler::GraphArgKind;

constexpr uint64_t kAlign = memory::kStorageAlignment;

struct StorageUse {
  uint64_t bytes = 0;
  size_t def = 0;       // node that writes it
  size_t last_use = 0;  // last node that reads it (def when never read)
  uint64_t offset = 0;
  int output_index = -1;
};

std::optional<std::vector<int64_t>> StaticShape(const ir::StructInfo& s, DType* dtype) {
  const auto* t = ir::SInfoAs<ir::TensorSInfo>(s);
  if (!t || !t->has_shape || !t->has_dtype) return std::nullopt;
  std::vector<int64_t> dims;
  for (const auto& d : t->shape) {
    auto c = ConstDim(d);
    if (!c) return std::nullopt;
    dims.push_back(*c);
  }
  *dtype = t->dtype;
  return dims;
}

class GraphBuilder {
 public:
  GraphBuilder(const ir::IRModule& mod, compiler::VmfbProgram* program) : mod_(mod), program_(program) {}

  // nullopt: not eligible.
  std::optional<compiler::GraphInfo> Build(const std::string& name, const ir::Function& f) {
    compiler::GraphInfo g;
    g.function = name;
    for (size_t i = 0; i < f->params.size(); ++i) {
      GraphArgInfo a;
      a.kind = GraphArgKind::kInput;
      a.index = static_cast<uint32_t>(i);
      auto shape = StaticShape(f->params[i]->struct_info, &a.dtype);
      if (!shape) return std::nullopt;
      a.shape = *shape;
      g.inputs.push_back(a);
      values_[f->params[i].get()] = a;
    }
    const auto* seq = ir::ExprAs<ir::SeqExprNode>(f->body);
    if (!seq) return std::nullopt;
    for (const auto& block : seq->blocks) {
      for (const auto& b : block.bindings) {
        if (b.match_cast) return std::nullopt;
        if (!Bind(b.var.get(), b.value, &g)) return std::nullopt;
      }
    }
    // Results: a tensor or a tuple of tensors.
    std::vector<ir::Expr> results;
    ir::Expr body = seq->body;
    if (const auto* t = ir::ExprAs<ir::TupleExpr>(body)) {
      results = t->fields;
    } else {
      auto it = tuples_.find(body.get());
      results = it != tuples_.end() ? it->second : std::vector<ir::Expr>{body};
    }
    for (size_t k = 0; k < results.size(); ++k) {
      auto arg = Lookup(results[k]);
      if (!arg) return std::nullopt;
      if (arg->kind == GraphArgKind::kStorage && storage_[arg->index].output_index < 0) {
        storage_[arg->index].output_index = static_cast<int>(k);
        GraphArgInfo out = *arg;
        out.kind = GraphArgKind::kOutput;
        out.index = static_cast<uint32_t>(k);
        g.outputs.push_back(out);
      } else if (arg->kind == GraphArgKind::kStorage) {
        // The same kernel result returned twice: its kernel writes only the
        // first output tensor and a graph cannot copy one output into
        // another, so the VM runs this function.
        return std::nullopt;
      } else {
        g.outputs.push_back(*arg);  // an input or a constant, copied by the executor
      }
    }
    Plan(&g);
    return g;
  }

 private:
  std::optional<GraphArgInfo> Lookup(const ir::Expr& e) {
    if (const auto* c = ir::ExprAs<ir::ConstantExpr>(e)) {
      GraphArgInfo a;
      a.kind = GraphArgKind::kConstant;
      a.index = InternTensorConstant(program_, *c);
      a.dtype = c->data.dtype();
      a.shape = c->data.shape();
      return a;
    }
    auto it = values_.find(e.get());
    if (it == values_.end()) return std::nullopt;
    return it->second;
  }

  bool Bind(const ir::ExprNode* var, const ir::Expr& value, compiler::GraphInfo* g) {
    if (value->kind == ir::ExprKind::kVar) {
      auto a = Lookup(value);
      if (!a) return false;
      values_[var] = *a;
      return true;
    }
    if (const auto* t = ir::ExprAs<ir::TupleExpr>(value)) {
      tuples_[var] = t->fields;
      return true;
    }
    const auto* call = ir::ExprAs<ir::CallExpr>(value);
    const auto* op = call ? ir::ExprAs<ir::OpExpr>(call->op) : nullptr;
    if (!op || (op->name != "relax.call_tir" && op->name != "relax.call_dps_packed") || call->args.size() != 2) return false;
    if (call->sinfo_args.size() != 1) return false;  // multi-output kernels: VM only for now
    const auto* args = ir::ExprAs<ir::TupleExpr>(call->args[1]);
    if (!args) return false;
    compiler::GraphNodeInfo node;
    std::string name;
    if (const auto* gv = ir::ExprAs<ir::GlobalVarExpr>(call->args[0])) name = gv->name;
    else if (const auto* ext = ir::ExprAs<ir::ExternFuncExpr>(call->args[0])) name = ext->global_symbol;
    else return false;
    if (ir::PrimFunc f = mod_.FindPrim(name)) {
      node.callable = InternCallable(program_, compiler::CallableKind::kKernel, name, static_cast<int32_t>(f->params.size()));
    } else {
      node.callable = InternCallable(program_, compiler::CallableKind::kPacked, name);
    }
    size_t node_index = g->nodes.size();
    for (const auto& a : args->fields) {
      auto arg = Lookup(a);
      if (!arg) return false;
      if (arg->kind == GraphArgKind::kStorage) storage_[arg->index].last_use = node_index;
      node.args.push_back(*arg);
    }
    GraphArgInfo out;
    out.kind = GraphArgKind::kStorage;
    auto shape = StaticShape(call->sinfo_args[0], &out.dtype);
    if (!shape) return false;
    out.shape = *shape;
    out.index = static_cast<uint32_t>(storage_.size());
    StorageUse use;
    use.bytes = static_cast<uint64_t>(ShapeNumElements(out.shape)) * out.dtype.bytes();
    use.def = use.last_use = node_index;
    storage_.push_back(use);
    node.args.push_back(out);
    values_[var] = out;
    g->nodes.push_back(std::move(node));
    return true;
  }

  // Offsets for intermediates (the planner's arena layout, shared with the
  // VM's static plans); outputs go to the caller's tensors.
  void Plan(compiler::GraphInfo* g) {
    std::vector<size_t> placed;
    std::vector<memory::ArenaBuffer> buffers;
    for (size_t i = 0; i < storage_.size(); ++i) {
      const StorageUse& s = storage_[i];
      if (s.output_index >= 0) continue;
      placed.push_back(i);
      buffers.push_back(memory::ArenaBuffer{s.bytes, s.def, s.last_use});
    }
    memory::ArenaLayout layout = memory::LayOutArena(buffers, kAlign);
    for (size_t k = 0; k < placed.size(); ++k) storage_[placed[k]].offset = layout.offsets[k];
    uint64_t arena = layout.total_bytes;
    g->arena_bytes = arena;
    for (auto& node : g->nodes) {
      for (auto& a : node.args) {
        if (a.kind != GraphArgKind::kStorage) continue;
        const StorageUse& s = storage_[a.index];
        if (s.output_index >= 0) {
          a.kind = GraphArgKind::kOutput;
          a.index = static_cast<uint32_t>(s.output_index);
        } else {
          a.byte_offset = s.offset;
        }
      }
    }
  }

  const ir::IRModule& mod_;
  compiler::VmfbProgram* program_;
  std::map<const ir::ExprNode*, GraphArgInfo> values_;
  std::map<const ir::ExprNode*, std::vector<ir::Expr>> tuples_;
  std::vector<StorageUse> storage_;
};

}  // namespace

Result<std::vector<std::string>> GenerateStaticGraphs(const ir::IRModule& mod, compiler::VmfbProgram* program) {
  std::vector<std::string> names;
  for (const auto& e : mod.entries) {
    if (!e.relax) continue;
    GraphBuilder builder(mod, program);
    if (auto g = builder.Build(e.name, e.relax)) {
      program->graphs.push_back(std::move(*g));
      names.push_back(e.name);
    }
  }
  return names;
}

}  // namespace relax
}  // namespace kiln
