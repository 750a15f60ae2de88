#include "compiler/transform/fold_constant.h"

#include <cstdint>
#include <map>
#include <memory>
#include <string>
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

// The calls to evaluate, keyed by the rebuilt call node. Equal calls (the same
// operator, attributes and constant inputs: a Gemm's transposed weight used at
// every step of an unrolled LSTM) share one job, so they fold to one tensor and
// the .vmfb stores it once.
struct Jobs {
  std::unordered_map<const ir::ExprNode*, std::shared_ptr<Job>> by_call;
  std::map<std::string, std::vector<std::pair<ir::AttrMap, std::shared_ptr<Job>>>> by_signature;
  std::vector<std::shared_ptr<Job>> unique;
};

// Pass 1 of a round: propagate constants into uses and collect the calls
// that can be evaluated.
class Collector : public ExprMutator {
 public:
  Collector(const ir::IRModule& mod, int* counter, Jobs* jobs) : mod_(mod), counter_(counter), jobs_(jobs) {}

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
      // Tensor arguments must be constants; a shape argument (R.reshape's
      // target, R.broadcast_to's) must be static, and its kernel then takes
      // no parameter for it. Without this a reshaped weight (ONNX RNNs'
      // W [D, G*H, I] -> [I, D*G*H]) was copied by a kernel on every call.
      // A tuple of constants (R.concat's) passes its fields, one buffer each
      // (Silero VAD's LSTM weights, concatenated on every call before).
      bool shape_arg = false;
      for (const auto& a : call.args) {
        if (const auto* sh = ir::ExprAs<ir::ShapeExpr>(a)) {
          for (const auto& v : sh->values)
            if (!relax::ConstDim(v)) return;
          shape_arg = true;
          continue;
        }
        if (const auto* tup = ir::ExprAs<ir::TupleExpr>(a)) {
          for (const auto& f : tup->fields) {
            if (!AsConst(f)) return;
            inputs.push_back(f);
          }
          continue;
        }
        if (!AsConst(a)) return;
        inputs.push_back(a);
      }
      // ... but not one that grows its input (R.broadcast_to, R.full of a
      // shape): that would store the expanded tensor in the module.
      if (shape_arg) {
        int64_t in = 0, out = 1;
        for (const auto& a : inputs) in += AsConst(a)->data.NumElements();
        for (int64_t d : job.shape) out *= d;
        if (out > in) return;
      }
      Result<ir::PrimFunc> f = info->legalize(call, name);
      if (!f.ok()) return;  // not evaluable here; legalization reports it later
      func = *f;
    }
    if (!func) return;
    // What makes two calls equal: the operator (or kernel), the result type,
    // the input tensors by identity; the attributes are compared below.
    std::string signature = op->name == "relax.call_tir" ? "call_tir " + func->name : op->name;
    signature += " " + std::to_string(static_cast<int>(job.dtype.code)) + ":" + std::to_string(job.dtype.bits);
    for (int64_t d : job.shape) signature += "," + std::to_string(d);
    for (const auto& a : inputs) {
      const auto* c = AsConst(a);
      if (!c) return;
      job.inputs.push_back(c->data);
      signature += " " + std::to_string(reinterpret_cast<uintptr_t>(c->data.object().get()));
    }
    // Only tensors in, one tensor out: every parameter is a buffer.
    if (func->params.size() != inputs.size() + 1 || func->buffer_map.size() != func->params.size()) return;
    auto& same = jobs_->by_signature[signature];
    for (const auto& [attrs, shared] : same) {
      if (attrs == call.attrs) {
        jobs_->by_call[e.get()] = shared;
        --*counter_;  // the name drawn above is not used
        return;
      }
    }
    auto lowered = std::make_shared<ir::PrimFuncNode>(*tir::LowerBlocks(func));
    lowered->name = name;
    lowered->is_private = false;
    job.kernel = lowered;
    job.span = call.span;
    auto shared = std::make_shared<Job>(std::move(job));
    same.emplace_back(call.attrs, shared);
    jobs_->by_call[e.get()] = shared;
    jobs_->unique.push_back(shared);
  }

  const ir::IRModule& mod_;
  int* counter_;
  Jobs* jobs_;
};

// Pass 2: replace evaluated calls by their constants (equal calls by the same
// tensor, which the VM codegen interns as one constant).
class Replacer : public ExprMutator {
 public:
  explicit Replacer(const Jobs& jobs) : jobs_(jobs) {}
  ir::Expr VisitExpr(const ir::Expr& e) override {
    auto it = e ? jobs_.by_call.find(e.get()) : jobs_.by_call.end();
    if (it == jobs_.by_call.end() || !it->second->result.defined()) return ExprMutator::VisitExpr(e);
    const Job& job = *it->second;
    auto c = std::make_shared<ir::ConstantExpr>(job.result);
    c->span = e->span;
    std::vector<ir::PrimExpr> shape;
    for (int64_t d : job.shape) shape.push_back(ir::PrimExpr(d));
    c->struct_info = ir::MakeTensorSInfo(shape, job.dtype);
    return c;
  }

 private:
  const Jobs& jobs_;
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
    Jobs jobs;
    for (auto& e : mod.entries) {
      if (!e.relax) continue;
      Collector collector(mod, &counter, &jobs);
      ir::Function f = collector.VisitFunction(e.relax);
      changed |= f != e.relax;
      e.relax = f;
    }
    if (jobs.unique.empty()) break;
    std::vector<Job*> pending;
    for (auto& j : jobs.unique) pending.push_back(j.get());
    KILN_RETURN_IF_ERROR(Evaluate(pending));
    bool folded = false;
    for (auto& j : jobs.unique) folded |= j->result.defined();
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
