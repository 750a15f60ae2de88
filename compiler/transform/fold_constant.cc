#include "compiler/transform/fold_constant.h"

#include <map>
#include <memory>
#include <unordered_map>

#include "compiler/codegen/native_codegen.h"
#include "compiler/relax/infer_struct_info.h"
#include "compiler/relax/op_registry.h"
#include "compiler/relax/struct_info_util.h"
#include "compiler/tir/lower_blocks.h"
#include "compiler/transform/expr_mutator.h"
#include "runtime/kernel_call.h"
#include "runtime/native_library.h"

namespace kiln {
namespace transform {
namespace {

// One call to evaluate: its kernel, inputs and result type.
struct Job {
  ir::PrimFunc kernel;  // lowered, uniquely named
  std::vector<Tensor> inputs;
  std::vector<int64_t> shape;
  DType dtype;
  ir::SourceSpan span;
  Tensor result;  // set once run
};

const ir::ConstantExpr* AsConst(const ir::Expr& e) { return ir::ExprAs<ir::ConstantExpr>(e); }

// The static tensor type of a call's result, or false.
bool StaticResult(const ir::StructInfo& s, std::vector<int64_t>* shape, DType* dtype) {
  const auto* t = ir::SInfoAs<ir::TensorSInfo>(s);
  if (!t || !t->has_shape || !t->has_dtype) return false;
  shape->clear();
  for (const auto& d : t->shape) {
    auto c = relax::ConstDim(d);
    if (!c) return false;
    shape->push_back(*c);
  }
  *dtype = t->dtype;
  return true;
}

// Pass 1 of a round: propagate constants into uses and collect the calls
// that can be evaluated (keyed by the rebuilt call node).
class Collector : public ExprMutator {
 public:
  Collector(const ir::IRModule& mod, int* counter, std::unordered_map<const ir::ExprNode*, Job>* jobs)
      : mod_(mod), counter_(counter), jobs_(jobs) {}

  void VisitBinding(const ir::Binding& b, bool in_dataflow, std::vector<ir::Binding>* out) override {
    ExprMutator::VisitBinding(b, in_dataflow, out);
    const ir::Binding& nb = out->back();
    if (!nb.match_cast && AsConst(nb.value)) var_remap_[nb.var.get()] = nb.value;
    if (nb.value->kind == ir::ExprKind::kCall) Consider(nb.value);
  }

 private:
  void Consider(const ir::Expr& e) {
    const auto& call = static_cast<const ir::CallExpr&>(*e);
    const auto* op = ir::ExprAs<ir::OpExpr>(call.op);
    if (!op) return;
    Job job;
    if (!StaticResult(call.struct_info, &job.shape, &job.dtype)) return;
    std::string name = "fold_constant" + std::to_string((*counter_)++);
    ir::PrimFunc func;
    std::vector<ir::Expr> inputs;
    if (op->name == "relax.call_tir") {
      const auto* gv = call.args.size() == 2 ? ir::ExprAs<ir::GlobalVarExpr>(call.args[0]) : nullptr;
      const auto* args = call.args.size() == 2 ? ir::ExprAs<ir::TupleExpr>(call.args[1]) : nullptr;
      if (!gv || !args || call.sinfo_args.size() != 1) return;
      func = mod_.FindPrim(gv->name);
      inputs = args->fields;
    } else {
      const relax::OpInfo* info = relax::FindOp(op->name);
      if (!info || !info->legalize || !IsPureValue(e)) return;
      inputs = call.args;
      for (const auto& a : inputs)
        if (!AsConst(a)) return;
      Result<ir::PrimFunc> f = info->legalize(call, name);
      if (!f.ok()) return;  // not evaluable here; legalization reports it later
      func = *f;
    }
    if (!func) return;
    for (const auto& a : inputs) {
      const auto* c = AsConst(a);
      if (!c) return;
      job.inputs.push_back(c->data);
    }
    // Only tensors in, one tensor out: every parameter is a buffer.
    if (func->params.size() != inputs.size() + 1 || func->buffer_map.size() != func->params.size()) return;
    auto lowered = std::make_shared<ir::PrimFuncNode>(*tir::LowerBlocks(func));
    lowered->name = name;
    lowered->is_private = false;
    job.kernel = lowered;
    job.span = call.span;
    (*jobs_)[e.get()] = std::move(job);
  }

  const ir::IRModule& mod_;
  int* counter_;
  std::unordered_map<const ir::ExprNode*, Job>* jobs_;
};

// Pass 2: replace evaluated calls by their constants.
class Replacer : public ExprMutator {
 public:
  explicit Replacer(const std::unordered_map<const ir::ExprNode*, Job>& jobs) : jobs_(jobs) {}
  ir::Expr VisitExpr(const ir::Expr& e) override {
    auto it = e ? jobs_.find(e.get()) : jobs_.end();
    if (it == jobs_.end() || !it->second.result.defined()) return ExprMutator::VisitExpr(e);
    auto c = std::make_shared<ir::ConstantExpr>(it->second.result);
    c->span = e->span;
    std::vector<ir::PrimExpr> shape;
    for (int64_t d : it->second.shape) shape.push_back(ir::PrimExpr(d));
    c->struct_info = ir::MakeTensorSInfo(shape, it->second.dtype);
    return c;
  }

 private:
  const std::unordered_map<const ir::ExprNode*, Job>& jobs_;
};

// Builds one library for `jobs` and runs each. A library that does not build
// (TIR the codegen does not support yet) leaves its jobs unevaluated.
Status Evaluate(std::vector<Job*> jobs) {
  std::vector<ir::PrimFunc> funcs;
  for (Job* j : jobs) funcs.push_back(j->kernel);
  codegen::CodegenOptions options;
  options.opt_level = 1;  // run once: compile fast
  Result<codegen::NativeLibraryBuild> build = codegen::BuildNativeLibrary(funcs, options);
  if (!build.ok()) {
    if (jobs.size() > 1) {
      for (Job* j : jobs) KILN_RETURN_IF_ERROR(Evaluate({j}));
    }
    return Status::Ok();
  }
  KILN_ASSIGN_OR_RETURN(std::unique_ptr<NativeLibrary> lib,
                        NativeLibrary::LoadFromMemory(build->shared_object.data(), build->shared_object.size(), "fold_constant"));
  for (Job* j : jobs) {
    KILN_ASSIGN_OR_RETURN(const kiln_kernel_entry* entry, lib->Find(j->kernel->name));
    KILN_ASSIGN_OR_RETURN(Tensor out, Tensor::Empty(j->shape, j->dtype));
    std::vector<kiln_kernel_arg> args(j->inputs.size() + 1);
    for (size_t i = 0; i < j->inputs.size(); ++i) args[i].tensor = AsKernelTensor(j->inputs[i].dl());
    args.back().tensor = AsKernelTensor(out.dl());
    Status s = CallKernel(entry->fn, j->kernel->name, args.data(), static_cast<int32_t>(args.size()), nullptr);
    if (!s.ok()) return Status(s.code(), relax::Where(j->span) + "folding a constant call: " + s.message());
    j->result = out;
  }
  return Status::Ok();
}

}  // namespace

Result<ir::IRModule> FoldConstant(const ir::IRModule& input) {
  ir::IRModule mod = input;
  int counter = 0;
  bool changed = false;
  for (;;) {
    std::unordered_map<const ir::ExprNode*, Job> jobs;
    for (auto& e : mod.entries) {
      if (!e.relax) continue;
      Collector collector(mod, &counter, &jobs);
      ir::Function f = collector.VisitFunction(e.relax);
      changed |= f != e.relax;
      e.relax = f;
    }
    if (jobs.empty()) break;
    std::vector<Job*> pending;
    for (auto& kv : jobs) pending.push_back(&kv.second);
    KILN_RETURN_IF_ERROR(Evaluate(pending));
    bool folded = false;
    for (auto& kv : jobs) folded |= kv.second.result.defined();
    if (!folded) break;
    changed = true;
    for (auto& e : mod.entries) {
      if (!e.relax) continue;
      Replacer replacer(jobs);
      e.relax = replacer.VisitFunction(e.relax);
    }
  }
  if (!changed) return mod;
  return relax::InferStructInfo(mod);
}

}  // namespace transform
}  // namespace kiln
