#include "compiler/builder/block_builder.h"

#include <memory>

#include "compiler/relax/infer_struct_info.h"

namespace kiln {
namespace builder {

BlockBuilder::BlockBuilder(ir::IRModule mod) : mod_(std::move(mod)) {}

ir::RVar BlockBuilder::Param(const std::string& name, ir::StructInfo sinfo) {
  ir::RVar v = ir::MakeRVar(name, sinfo);
  v->struct_info = sinfo;
  return v;
}

Status BlockBuilder::BeginFunction(const std::string& name, std::vector<ir::RVar> params, ir::AttrMap attrs,
                                   bool is_private) {
  if (fn_) return FailedPrecondition("BlockBuilder: function '" + fn_->name + "' is still open; end it with EmitFuncOutput before starting '" + name + "'");
  if (mod_.Find(name)) return InvalidArgument("BlockBuilder: the module already has a function named '" + name + "'");
  for (const auto& p : params) {
    if (!p->annotation) return InvalidArgument("BlockBuilder: parameter '" + p->name + "' of '" + name + "' has no struct info");
    p->struct_info = p->annotation;
  }
  fn_ = FunctionScope{};
  fn_->name = name;
  fn_->params = std::move(params);
  fn_->attrs = std::move(attrs);
  fn_->is_private = is_private;
  for (const auto& p : fn_->params) fn_->name_counts[p->name]++;
  return Status::Ok();
}

Status BlockBuilder::BeginNestedFunction(const std::string& name, std::vector<ir::RVar> params, ir::AttrMap attrs,
                                         bool is_private) {
  KILN_RETURN_IF_ERROR(CheckInFunction("BeginNestedFunction"));
  FunctionScope outer = std::move(*fn_);
  fn_.reset();
  Status s = BeginFunction(name, std::move(params), std::move(attrs), is_private);
  if (!s.ok()) {
    fn_ = std::move(outer);
    return s;
  }
  suspended_.push_back(std::move(outer));
  return Status::Ok();
}

void BlockBuilder::AbandonFunction() {
  fn_.reset();
  if (!suspended_.empty()) {
    fn_ = std::move(suspended_.back());
    suspended_.pop_back();
  }
}

Status BlockBuilder::CheckInFunction(const char* what) const {
  if (!fn_) return FailedPrecondition(std::string("BlockBuilder: ") + what + " outside a function; call BeginFunction first");
  return Status::Ok();
}

Status BlockBuilder::BeginDataflow() {
  KILN_RETURN_IF_ERROR(CheckInFunction("BeginDataflow"));
  if (fn_->in_dataflow) return FailedPrecondition("BlockBuilder: a dataflow block is already open in '" + fn_->name + "'");
  fn_->in_dataflow = true;
  ir::BindingBlock block;
  block.is_dataflow = true;
  fn_->blocks.push_back(std::move(block));
  return Status::Ok();
}

Status BlockBuilder::EndDataflow() {
  KILN_RETURN_IF_ERROR(CheckInFunction("EndDataflow"));
  if (!fn_->in_dataflow) return FailedPrecondition("BlockBuilder: EndDataflow without an open dataflow block in '" + fn_->name + "'");
  fn_->in_dataflow = false;
  if (!fn_->blocks.empty() && fn_->blocks.back().is_dataflow && fn_->blocks.back().bindings.empty()) fn_->blocks.pop_back();
  return Status::Ok();
}

std::string BlockBuilder::NextName(const std::string& hint, bool output) {
  std::string base = hint.empty() ? (output ? "gv" : "lv") : hint;
  int& n = fn_->name_counts[base];
  std::string name = n == 0 ? base : base + std::to_string(n);
  ++n;
  return name;
}

Result<ir::RVar> BlockBuilder::Bind(ir::Expr value, ir::StructInfo match_cast, const std::string& name_hint,
                                    bool output) {
  KILN_ASSIGN_OR_RETURN(ir::StructInfo sinfo, relax::InferExprStructInfo(mod_, value));
  if (match_cast) sinfo = match_cast;
  bool dataflow_var = fn_->in_dataflow && !output;
  ir::RVar var = ir::MakeRVar(NextName(name_hint, output), nullptr, dataflow_var);
  var->struct_info = sinfo;
  if (!fn_->in_dataflow && (fn_->blocks.empty() || fn_->blocks.back().is_dataflow)) fn_->blocks.emplace_back();
  fn_->blocks.back().bindings.push_back(ir::Binding{var, std::move(value), std::move(match_cast), {}});
  return var;
}

Result<ir::RVar> BlockBuilder::Emit(ir::Expr value, const std::string& name_hint) {
  KILN_RETURN_IF_ERROR(CheckInFunction("Emit"));
  return Bind(std::move(value), nullptr, name_hint, /*output=*/false);
}

Result<ir::RVar> BlockBuilder::EmitMatchCast(ir::Expr value, ir::StructInfo sinfo, const std::string& name_hint,
                                             std::vector<std::string> messages) {
  KILN_RETURN_IF_ERROR(CheckInFunction("EmitMatchCast"));
  if (!sinfo) return InvalidArgument("BlockBuilder: EmitMatchCast needs a struct info to match");
  KILN_ASSIGN_OR_RETURN(ir::RVar var, Bind(std::move(value), std::move(sinfo), name_hint, /*output=*/false));
  fn_->blocks.back().bindings.back().messages = std::move(messages);
  return var;
}

Result<ir::RVar> BlockBuilder::EmitOutput(ir::Expr value, const std::string& name_hint) {
  KILN_RETURN_IF_ERROR(CheckInFunction("EmitOutput"));
  if (!fn_->in_dataflow) return FailedPrecondition("BlockBuilder: EmitOutput outside a dataflow block in '" + fn_->name + "'; use Emit");
  return Bind(std::move(value), nullptr, name_hint, /*output=*/true);
}

std::string BlockBuilder::AddPrimFunc(ir::PrimFunc func, const std::string& name) {
  std::string unique = mod_.UniqueName(name);
  if (func->name != unique) {
    auto copy = std::make_shared<ir::PrimFuncNode>(*func);
    copy->name = unique;
    func = copy;
  }
  mod_.Add(unique, func);
  return unique;
}

Result<ir::RVar> BlockBuilder::EmitTE(const TeFn& fn, const std::vector<ir::Expr>& args, const std::string& prim_name,
                                     const std::string& name_hint) {
  KILN_RETURN_IF_ERROR(CheckInFunction("EmitTE"));
  std::string name = mod_.UniqueName(prim_name);
  te::FuncBuilder b(name);
  std::vector<te::Tensor> inputs;
  std::vector<ir::StructInfo> arg_sinfo;
  for (size_t i = 0; i < args.size(); ++i) {
    KILN_ASSIGN_OR_RETURN(ir::StructInfo s, relax::InferExprStructInfo(mod_, args[i]));
    const auto* t = ir::SInfoAs<ir::TensorSInfo>(s);
    if (!t || !t->has_shape || !t->has_dtype) {
      return InvalidArgument("BlockBuilder: EmitTE '" + prim_name + "': argument " + std::to_string(i) +
                             " must be a tensor with a known shape and dtype");
    }
    // TVM names TE placeholders after the Relax variables.
    const auto* v = ir::ExprAs<ir::VarExpr>(args[i]);
    inputs.push_back(b.Input(v ? v->name : "A" + std::to_string(i), t->shape, t->dtype));
    arg_sinfo.push_back(s);
  }
  KILN_ASSIGN_OR_RETURN(std::vector<te::Tensor> outputs, fn(b, inputs));
  if (outputs.empty()) return InvalidArgument("BlockBuilder: EmitTE '" + prim_name + "' produced no output tensor");
  KILN_ASSIGN_OR_RETURN(ir::PrimFunc f, b.Build(outputs));
  auto priv = std::make_shared<ir::PrimFuncNode>(*f);
  priv->is_private = true;  // as bb.emit_te makes them
  mod_.Add(name, ir::PrimFunc(priv));

  std::vector<ir::StructInfo> out_sinfo;
  for (const auto& o : outputs) out_sinfo.push_back(ir::MakeTensorSInfo(b.Caller(o.shape()), o.dtype()));
  auto callee = std::make_shared<ir::GlobalVarExpr>(name);
  auto tuple = std::make_shared<ir::TupleExpr>(args);
  ir::Expr call = ir::MakeOpCall("relax.call_tir", {callee, tuple}, {}, out_sinfo);
  Result<ir::RVar> var = Emit(call, name_hint);
  if (!var.ok()) mod_.entries.pop_back();  // leave the module as it was
  return var;
}

Status BlockBuilder::EmitFuncOutput(ir::Expr result) {
  KILN_RETURN_IF_ERROR(CheckInFunction("EmitFuncOutput"));
  if (fn_->in_dataflow) return FailedPrecondition("BlockBuilder: the dataflow block of '" + fn_->name + "' is still open; call EndDataflow first");
  KILN_ASSIGN_OR_RETURN(ir::StructInfo ret, relax::InferExprStructInfo(mod_, result));
  if (const auto* v = ir::ExprAs<ir::VarExpr>(result); v && v->is_dataflow) {
    return InvalidArgument("BlockBuilder: '" + fn_->name + "' returns dataflow variable '" + v->name +
                           "'; pass it through EmitOutput first");
  }
  auto f = std::make_shared<ir::FunctionExpr>();
  f->name = fn_->name;
  f->params = fn_->params;
  auto body = std::make_shared<ir::SeqExprNode>(fn_->blocks, result);
  body->struct_info = ret;
  f->body = body;
  f->ret_sinfo = ret;
  f->attrs = fn_->attrs;
  f->is_private = fn_->is_private;
  std::vector<ir::StructInfo> params;
  for (const auto& p : f->params) params.push_back(p->struct_info);
  f->struct_info = std::make_shared<ir::FuncSInfo>(params, ret);
  mod_.Add(f->name, ir::Function(f));
  fn_.reset();
  if (!suspended_.empty()) {
    fn_ = std::move(suspended_.back());
    suspended_.pop_back();
  }
  return Status::Ok();
}

}  // namespace builder
}  // namespace kiln
