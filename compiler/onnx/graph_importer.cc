#include "compiler/onnx/graph_importer.h"

#include <cmath>
#include <cstring>
#include <set>
#include <sstream>

#include "compiler/arith/simplify.h"
#include "compiler/ir/attr_values.h"
#include "compiler/onnx/input_dims.h"
#include "compiler/onnx/onnx_tensor.h"
#include "runtime/half_float.h"

namespace kiln {
namespace onnx {

// ---------------------------------------------------------------- helpers

std::optional<std::vector<int64_t>> KnownInts::Ints() const {
  std::vector<int64_t> out;
  out.reserve(elems.size());
  for (const auto& e : elems) {
    auto c = ConstDim(e);
    if (!c) return std::nullopt;
    out.push_back(*c);
  }
  return out;
}

ir::AttrValue AttrI(int64_t v) { return ir::AttrInt(v); }
ir::AttrValue AttrF(double v) { return ir::AttrFloat(v); }
ir::AttrValue AttrS(const std::string& v) { return ir::AttrString(v); }
ir::AttrValue AttrB(bool v) { return ir::AttrBool(v); }
ir::AttrValue AttrInts(const std::vector<int64_t>& v) { return ir::AttrInts(v); }

ir::Expr ScalarConst(DType dtype, double v) {
  Tensor t = Tensor::Empty(std::vector<int64_t>{}, dtype).value();
  if (dtype == DType::Float32()) {
    *t.data<float>() = static_cast<float>(v);
  } else if (dtype == DType::Float16()) {
    *t.data<uint16_t>() = FloatToHalf(static_cast<float>(v));
  } else if (dtype == DType::Float64()) {
    *t.data<double>() = v;
  } else if (dtype == DType::Int64()) {
    *t.data<int64_t>() = static_cast<int64_t>(v);
  } else if (dtype == DType::Int32()) {
    *t.data<int32_t>() = static_cast<int32_t>(v);
  } else if (dtype == DType::Int8()) {
    *t.data<int8_t>() = static_cast<int8_t>(v);
  } else {  // uint8, bool
    *t.data<uint8_t>() = static_cast<uint8_t>(v);
  }
  return MakeConstant(t);
}

ir::Expr MakeShape(std::vector<ir::PrimExpr> dims) {
  auto s = std::make_shared<ir::ShapeExpr>(dims);
  s->struct_info = std::make_shared<ir::ShapeSInfo>(true, dims, static_cast<int>(dims.size()));
  return s;
}

ir::Expr PrimValue(ir::PrimExpr v) {
  auto p = std::make_shared<ir::PrimValueExpr>(v);
  p->struct_info = std::make_shared<ir::PrimSInfo>(v.dtype(), v);
  return p;
}

std::optional<Tensor> KnownToTensor(const KnownInts& k) {
  auto ints = k.Ints();
  if (!ints) return std::nullopt;
  Tensor t = Tensor::Empty(k.shape, k.dtype).value();
  for (size_t i = 0; i < ints->size(); ++i) {
    int64_t v = (*ints)[i];
    if (k.dtype == DType::Int64()) t.data<int64_t>()[i] = v;
    else if (k.dtype == DType::Int32()) t.data<int32_t>()[i] = static_cast<int32_t>(v);
    else if (k.dtype == DType::Int8()) t.data<int8_t>()[i] = static_cast<int8_t>(v);
    else t.data<uint8_t>()[i] = static_cast<uint8_t>(v);
  }
  return t;
}

std::optional<int64_t> ConstDim(const ir::PrimExpr& d) {
  if (!d.defined()) return std::nullopt;
  if (const auto* i = d.as<ir::IntImmNode>()) return i->value;
  return arith::AsConstInt(arith::Simplify(d));
}

ir::PrimExpr SimplifyDim(const ir::PrimExpr& e) { return arith::Simplify(e); }

std::optional<int64_t> CheckedProduct(const std::vector<int64_t>& dims) {
  int64_t n = 1;
  for (int64_t d : dims) {
    if (d < 0 || d > kMaxElements || __builtin_mul_overflow(n, d, &n) || n > kMaxElements) return std::nullopt;
  }
  return n;
}

Status CheckShape(const std::vector<ir::PrimExpr>& dims) {
  std::vector<int64_t> consts;
  for (const auto& d : dims) {
    if (auto c = ConstDim(d)) consts.push_back(*c);
  }
  if (!CheckedProduct(consts)) {
    std::string text;
    for (int64_t c : consts) text += (text.empty() ? "" : ", ") + std::to_string(c);
    return InvalidArgument("shape dimensions (" + text + ") are negative or too large");
  }
  return Status::Ok();
}

Result<int64_t> NormAxis(int64_t axis, int64_t rank, const char* what) {
  if (axis < -rank || axis >= rank) {
    return InvalidArgument(std::string(what) + " " + std::to_string(axis) + " is out of range for rank " + std::to_string(rank));
  }
  return axis < 0 ? axis + rank : axis;
}

std::string DTypeName(DType t) { return DTypeToString(t); }

// ---------------------------------------------------------------- NodeCtx

Result<const Value*> NodeCtx::In(size_t i) const {
  if (!HasInput(i)) return InvalidArgument("input " + std::to_string(i) + " is required");
  const Value* v = imp_->Find(node_->input(static_cast<int>(i)));
  if (!v) return InvalidArgument("input \"" + node_->input(static_cast<int>(i)) + "\" is not defined");
  return v;
}

Result<ir::Expr> NodeCtx::Input(size_t i) {
  if (!HasInput(i)) return InvalidArgument("input " + std::to_string(i) + " is required");
  return imp_->ExprOf(node_->input(static_cast<int>(i)));
}

Result<const ir::TensorSInfo*> NodeCtx::Info(size_t i) {
  KILN_ASSIGN_OR_RETURN(const Value* v, In(i));
  if (!v->sinfo) {
    if (v->expr) {
      v->sinfo = v->expr->struct_info;
    } else if (v->constant.defined()) {
      std::vector<ir::PrimExpr> dims(v->constant.shape().begin(), v->constant.shape().end());
      v->sinfo = ir::MakeTensorSInfo(dims, v->constant.dtype());
    } else if (v->known) {
      std::vector<ir::PrimExpr> dims(v->known->shape.begin(), v->known->shape.end());
      v->sinfo = ir::MakeTensorSInfo(dims, v->known->dtype);
    }
  }
  const auto* t = ir::SInfoAs<ir::TensorSInfo>(v->sinfo);
  if (!t || t->ndim < 0) return Unimplemented("input " + std::to_string(i) + " must be a tensor of known rank");
  return t;
}

const KnownInts* NodeCtx::Known(size_t i) const {
  if (!HasInput(i)) return nullptr;
  const Value* v = imp_->Find(node_->input(static_cast<int>(i)));
  return v && v->known ? &*v->known : nullptr;
}

Result<std::vector<int64_t>> NodeCtx::ConstInts(size_t i, const char* what) const {
  const KnownInts* k = Known(i);
  if (k) {
    if (auto ints = k->Ints()) return *ints;
  }
  return Unimplemented(std::string(what) + " (input " + std::to_string(i) + ") must be a constant known at import time");
}

Result<double> NodeCtx::ConstScalar(size_t i, const char* what) const {
  KILN_ASSIGN_OR_RETURN(const Value* v, In(i));
  if (v->known) {
    auto ints = v->known->Ints();
    if (ints && ints->size() == 1) return static_cast<double>((*ints)[0]);
  }
  const Tensor& t = v->constant;
  if (t.defined() && t.NumElements() == 1) {
    DType d = t.dtype();
    if (d == DType::Float32()) return static_cast<double>(*t.data<float>());
    if (d == DType::Float64()) return *t.data<double>();
    if (d == DType::Int64()) return static_cast<double>(*t.data<int64_t>());
    if (d == DType::Int32()) return static_cast<double>(*t.data<int32_t>());
    if (d == DType::Int8()) return static_cast<double>(*t.data<int8_t>());
    if (d == DType::UInt8() || d == DType::Bool()) return static_cast<double>(*t.data<uint8_t>());
  }
  return Unimplemented(std::string(what) + " (input " + std::to_string(i) + ") must be a constant scalar known at import time");
}

const ::onnx::AttributeProto* NodeCtx::Attr(const char* name) const {
  for (const auto& a : node_->attribute())
    if (a.name() == name) return &a;
  return nullptr;
}
bool NodeCtx::HasAttr(const char* name) const { return Attr(name) != nullptr; }

Result<int64_t> NodeCtx::AttrInt(const char* name, int64_t def) const {
  const auto* a = Attr(name);
  if (!a) return def;
  if (a->type() != ::onnx::AttributeProto::INT) return InvalidArgument(std::string("attribute ") + name + " must be an integer");
  return a->i();
}
Result<double> NodeCtx::AttrFloat(const char* name, double def) const {
  const auto* a = Attr(name);
  if (!a) return def;
  if (a->type() == ::onnx::AttributeProto::INT) return static_cast<double>(a->i());
  if (a->type() != ::onnx::AttributeProto::FLOAT) return InvalidArgument(std::string("attribute ") + name + " must be a float");
  return static_cast<double>(a->f());
}
Result<std::string> NodeCtx::AttrString(const char* name, const std::string& def) const {
  const auto* a = Attr(name);
  if (!a) return def;
  if (a->type() != ::onnx::AttributeProto::STRING) return InvalidArgument(std::string("attribute ") + name + " must be a string");
  return a->s();
}
Result<std::vector<int64_t>> NodeCtx::AttrInts(const char* name, const std::vector<int64_t>& def) const {
  const auto* a = Attr(name);
  if (!a) return def;
  if (a->type() == ::onnx::AttributeProto::INT) return std::vector<int64_t>{a->i()};
  if (a->type() != ::onnx::AttributeProto::INTS) return InvalidArgument(std::string("attribute ") + name + " must be a list of integers");
  return std::vector<int64_t>(a->ints().begin(), a->ints().end());
}
Result<std::vector<double>> NodeCtx::AttrFloats(const char* name, const std::vector<double>& def) const {
  const auto* a = Attr(name);
  if (!a) return def;
  if (a->type() != ::onnx::AttributeProto::FLOATS) return InvalidArgument(std::string("attribute ") + name + " must be a list of floats");
  return std::vector<double>(a->floats().begin(), a->floats().end());
}

Result<ir::Expr> NodeCtx::Emit(ir::Expr value) {
  KILN_ASSIGN_OR_RETURN(ir::RVar v, imp_->bb().Emit(std::move(value)));
  return ir::Expr(v);
}

Result<ir::Expr> NodeCtx::Op(const std::string& op, std::vector<ir::Expr> args, ir::AttrMap attrs) {
  return Emit(ir::MakeOpCall("relax." + op, std::move(args), std::move(attrs)));
}

void NodeCtx::SetOutput(size_t i, ir::Expr e) {
  Value v;
  v.expr = std::move(e);
  SetOutputValue(i, std::move(v));
}
void NodeCtx::SetOutputValue(size_t i, Value v) {
  if (!HasOutput(i)) return;
  imp_->Set(node_->output(static_cast<int>(i)), std::move(v));
}
void NodeCtx::SetOutputKnown(size_t i, KnownInts k) {
  Value v;
  v.known = std::move(k);
  SetOutputValue(i, std::move(v));
}

// ---------------------------------------------------------------- table

const ConverterTable& Converters() {
  static const ConverterTable* table = [] {
    auto* t = new ConverterTable();
    AddElementwiseConverters(t);
    AddNnConverters(t);
    AddShapeConverters(t);
    AddReduceConverters(t);
    AddResizeConverters(t);
    AddControlFlowConverters(t);
    AddLoopConverters(t);
    AddRnnConverters(t);
    AddDataDependentConverters(t);
    AddGatherConverters(t);
    AddScatterConverters(t);
    AddQuantizedConverters(t);
    return t;
  }();
  return *table;
}

// ---------------------------------------------------------------- Importer

Importer::Importer(const ::onnx::ModelProto& model, std::string base_dir, const std::map<std::string, int64_t>& fixed_dims,
                   std::string function_name, const std::map<std::string, Tensor>& input_values)
    : model_(model), base_dir_(std::move(base_dir)), fixed_dims_(fixed_dims), input_values_(input_values),
      function_name_(std::move(function_name)) {}

const Value* Importer::Find(const std::string& name) const {
  auto it = values_.find(name);
  return it == values_.end() ? nullptr : &it->second;
}

void Importer::Set(const std::string& name, Value v) { values_[name] = std::move(v); }

Result<ir::Expr> Importer::ExprOf(const std::string& name) {
  auto it = values_.find(name);
  if (it == values_.end()) return InvalidArgument("value \"" + name + "\" is not defined");
  Value& v = it->second;
  if (v.expr) return v.expr;
  if (v.constant.defined()) {
    v.expr = MakeConstant(v.constant);
    return v.expr;
  }
  if (v.known) {
    std::optional<Tensor> t = KnownToTensor(*v.known);
    if (!t) {
      // Symbolic dimensions used as data: computed when the program runs.
      KILN_ASSIGN_OR_RETURN(v.expr, MaterializeKnown(bb_, *v.known));
      return v.expr;
    }
    v.constant = *t;
    v.expr = MakeConstant(*t);
    return v.expr;
  }
  return Internal("value \"" + name + "\" has no expression");
}

// An identifier for the Relax text form ("input.1" -> "input_1", "0" ->
// "v0"), unique among `used`.
std::string Identifier(const std::string& name, std::set<std::string>* used) {
  std::string id = IdentifierText(name);
  std::string unique = id;
  for (int n = 1; used->count(unique); ++n) unique = id + "_" + std::to_string(n);
  used->insert(unique);
  return unique;
}

std::string Importer::NodeLabel(const ::onnx::NodeProto& node, int index) const {
  // A node of an If's tail (if_tail.cc) is named by its index in the model's graph.
  auto mapped = tail_index_.find(graph_);
  if (mapped != tail_index_.end() && index >= 0 && static_cast<size_t>(index) < mapped->second.size()) {
    index = mapped->second[static_cast<size_t>(index)];
  }
  std::string label = node.name().empty() ? "node #" + std::to_string(index) : "node \"" + node.name() + "\" (#" + std::to_string(index) + ")";
  return label + " " + node.op_type() + " (opset " + std::to_string(opset_) + ")";
}

Result<DType> Importer::InputDType(const ::onnx::ValueInfoProto& vi) {
  if (!vi.type().has_tensor_type()) return Unimplemented("graph input \"" + vi.name() + "\" is not a tensor (sequence, map and optional types are not supported)");
  const auto& tt = vi.type().tensor_type();
  auto dt = DTypeFromOnnx(tt.elem_type());
  if (!dt.ok()) return Unimplemented("graph input \"" + vi.name() + "\": " + dt.status().message());
  if (!tt.has_shape()) return Unimplemented("graph input \"" + vi.name() + "\" has no shape (its rank must be known)");
  return *dt;
}

Result<ir::StructInfo> Importer::InputSInfo(const InputShape& shape, DType dtype, const std::map<std::string, int64_t>& pinned) {
  std::vector<ir::PrimExpr> dims;
  for (const auto& d : shape.dims) {
    if (d.value) {
      dims.push_back(ir::PrimExpr(*d.value));
      continue;
    }
    auto fixed = pinned.find(d.name);
    if (fixed != pinned.end()) {
      dims.push_back(ir::PrimExpr(fixed->second));
      continue;
    }
    auto it = dim_vars_.find(d.name);
    if (it == dim_vars_.end()) it = dim_vars_.emplace(d.name, ir::MakeVar(Identifier(d.name, &identifiers_))).first;
    dims.push_back(ir::PrimExpr(it->second));
  }
  Status shape_ok = CheckShape(dims);
  if (!shape_ok.ok()) return InvalidArgument("graph input \"" + shape.input + "\": " + shape_ok.message());
  return ir::MakeTensorSInfo(dims, dtype);
}

Status Importer::ImportInputs() {
  std::set<std::string> inits;
  for (const auto& t : model_.graph().initializer()) inits.insert(t.name());
  std::set<std::string> bound;
  // The parameters' shapes first, all of them: fresh names of unknown
  // dimensions and the fixed dims' positions need every input.
  std::vector<InputShape> shapes;
  std::vector<DType> dtypes;
  for (const auto& vi : model_.graph().input()) {
    if (inits.count(vi.name())) continue;
    auto given = input_values_.find(vi.name());
    if (given != input_values_.end()) {
      bound.insert(vi.name());
      Value v = ConstantValue(given->second);
      v.expr = MakeConstant(given->second);
      values_[vi.name()] = v;
      continue;
    }
    auto dtype = InputDType(vi);
    if (!dtype.ok()) {
      problems_.push_back(dtype.status().message());
      continue;
    }
    auto shape = ReadInputShape(vi, kMaxElements);
    if (!shape.ok()) {
      problems_.push_back(shape.status().message());
      continue;
    }
    shapes.push_back(std::move(*shape));
    dtypes.push_back(*dtype);
  }
  NameUnknownDims(&shapes);
  std::map<std::string, int64_t> pinned = ResolveFixedDims(shapes, fixed_dims_, &problems_);
  for (size_t i = 0; i < shapes.size(); ++i) {
    auto sinfo = InputSInfo(shapes[i], dtypes[i], pinned);
    if (!sinfo.ok()) {
      problems_.push_back(sinfo.status().message());
      continue;
    }
    ir::RVar p = builder::BlockBuilder::Param(Identifier(shapes[i].input, &identifiers_), *sinfo);
    params_.push_back(p);
    Value v;
    v.expr = p;
    values_[shapes[i].input] = v;
  }
  for (const auto& kv : input_values_) {
    if (!bound.count(kv.first)) problems_.push_back("input value \"" + kv.first + "\" names no graph input (or names an initializer)");
  }
  return Status::Ok();
}

namespace {

// Small integer tensors are tracked as known contents (shape arithmetic).
constexpr int64_t kMaxKnownElems = 1 << 12;

std::optional<KnownInts> KnownFromTensor(const Tensor& t) {
  DType d = t.dtype();
  if (!(d == DType::Int64() || d == DType::Int32()) || t.NumElements() > kMaxKnownElems) return std::nullopt;
  KnownInts k;
  k.shape = t.shape();
  k.dtype = d;
  for (int64_t i = 0; i < t.NumElements(); ++i) {
    int64_t v = d == DType::Int64() ? t.data<int64_t>()[i] : t.data<int32_t>()[i];
    k.elems.push_back(ir::PrimExpr(v));
  }
  return k;
}

}  // namespace

Value ConstantValue(const Tensor& t) {
  Value v;
  v.constant = t;
  v.known = KnownFromTensor(t);
  return v;
}

Status Importer::ImportInitializers(const ::onnx::GraphProto& graph) {
  for (const auto& t : graph.initializer()) {
    auto tensor = TensorFromProto(t, base_dir_);
    if (!tensor.ok()) {
      problems_.push_back(tensor.status().message());
      continue;
    }
    Value v = ConstantValue(*tensor);
    auto c = std::make_shared<ir::ConstantExpr>(*tensor, t.name());
    std::vector<ir::PrimExpr> dims(tensor->shape().begin(), tensor->shape().end());
    c->struct_info = ir::MakeTensorSInfo(dims, tensor->dtype());
    v.expr = c;
    values_[t.name()] = v;
  }
  return Status::Ok();
}

void Importer::ImportNodes(const ::onnx::GraphProto& graph) {
  // Nodes are imported in order, except that an If whose branches give
  // different ranks imports the nodes after it that do not depend on it
  // first and takes those that do (if_tail.cc): `pending` says which are left.
  std::vector<char> pending(static_cast<size_t>(graph.node_size()), 1);
  std::vector<char>* outer_pending = pending_;
  pending_ = &pending;
  graph_ = &graph;
  for (int i = 0; i < graph.node_size(); ++i) {
    if (pending[static_cast<size_t>(i)] == 1) ImportNode(i);
    graph_ = &graph;
  }
  pending_ = outer_pending;
  for (const auto& o : graph.output()) {
    if (!values_.count(o.name()) && !poisoned_.count(o.name())) {
      problems_.push_back("graph output \"" + o.name() + "\" is not produced by any node");
    }
  }
}

void Importer::ImportNode(int i) {
  const ConverterTable& table = Converters();
  std::set<std::string>& poisoned = poisoned_;
  const ::onnx::NodeProto& node = graph_->node(i);
  node_index_ = i;
  // Done once converted (or refused): NamesUsedFromCurrentNode counts the
  // node being converted among those left.
  struct Done {
    std::vector<char>* pending;
    int i;
    ~Done() { (*pending)[static_cast<size_t>(i)] = 0; }
  } done{pending_, i};
  auto poison = [&] {
    for (const auto& o : node.output()) poisoned.insert(o);
  };
  bool skip = false;
  // What the node reads: its inputs, and what its subgraphs read from here.
  std::vector<std::string> reads(node.input().begin(), node.input().end());
  for (const auto& a : node.attribute()) {
    if (a.has_g()) {
      std::set<std::string> outer = OuterNames(a.g());
      reads.insert(reads.end(), outer.begin(), outer.end());
    }
  }
  for (const auto& in : reads) {
    if (in.empty()) continue;
    if (poisoned.count(in)) {
      skip = true;  // its producer's problem is reported already
    } else if (!values_.count(in)) {
      problems_.push_back(NodeLabel(node, i) + ": input \"" + in + "\" is not defined by an earlier node, an input or an initializer");
      skip = true;
    }
  }
  if (!node.domain().empty() && node.domain() != "ai.onnx") {
    problems_.push_back(NodeLabel(node, i) + ": operators of domain \"" + node.domain() + "\" are not supported");
    poison();
    return;
  }
  auto it = table.find(node.op_type());
  if (it == table.end()) {
    problems_.push_back(NodeLabel(node, i) + ": unsupported operator");
    poison();
    return;
  }
  if (skip) {
    poison();
    return;
  }
  NodeCtx ctx(this, &node, opset_);
  split_outputs_.clear();
  Status s = it->second(ctx);
  if (!s.ok()) {
    if (s.code() == StatusCode::kInvalidArgument) invalid_problems_.insert(problems_.size());
    problems_.push_back(NodeLabel(node, i) + ": " + s.message());
    poison();
    return;
  }
  for (int o = 0; o < node.output_size(); ++o) {
    const std::string& out = node.output(o);
    // An If that took what follows it leaves the outputs only its copies read unset.
    if (!out.empty() && !values_.count(out) && !split_outputs_.count(out)) {
      problems_.push_back(NodeLabel(node, i) + ": output " + std::to_string(o) + " is not supported");
      poisoned.insert(out);
    }
  }
}

bool Importer::AllInvalidFrom(size_t from) const {
  for (size_t k = from; k < problems_.size(); ++k)
    if (!invalid_problems_.count(k)) return false;
  return true;
}

void Importer::DropProblemsFrom(size_t from) {
  if (from >= problems_.size()) return;
  problems_.resize(from);
  invalid_problems_.erase(invalid_problems_.lower_bound(from), invalid_problems_.end());
}

Result<ir::IRModule> Importer::Run() {
  // The default domain's opset selects the operators' forms.
  bool found = false;
  for (const auto& op : model_.opset_import()) {
    if (op.domain().empty() || op.domain() == "ai.onnx") {
      opset_ = static_cast<int>(op.version());
      found = true;
    }
  }
  if (!found) return InvalidArgument("ONNX model imports no opset of the default domain");
  if (opset_ < 1 || opset_ > kMaxOpset) {
    return Unimplemented("ONNX model uses opset " + std::to_string(opset_) + " of the default domain; Kiln supports opsets 1 to " +
                         std::to_string(kMaxOpset));
  }
  if (!model_.has_graph()) return InvalidArgument("ONNX model has no graph");
  KILN_RETURN_IF_ERROR(ImportInputs());
  KILN_RETURN_IF_ERROR(ImportInitializers(model_.graph()));
  KILN_RETURN_IF_ERROR(bb_.BeginFunction(function_name_, params_));
  KILN_RETURN_IF_ERROR(bb_.BeginDataflow());
  if (problems_.empty()) ImportNodes(model_.graph());
  std::vector<ir::Expr> outputs;
  if (problems_.empty()) {
    for (const auto& o : model_.graph().output()) {
      auto e = ExprOf(o.name());
      if (!e.ok()) {
        problems_.push_back("graph output \"" + o.name() + "\": " + e.status().message());
        continue;
      }
      auto out = bb_.EmitOutput(*e);
      if (!out.ok()) {
        problems_.push_back("graph output \"" + o.name() + "\": " + out.status().message());
        continue;
      }
      outputs.push_back(*out);
    }
    if (outputs.empty() && problems_.empty()) problems_.push_back("the graph has no outputs");
  }
  if (!problems_.empty()) {
    std::ostringstream os;
    os << "ONNX import failed with " << problems_.size() << (problems_.size() == 1 ? " problem:" : " problems:");
    for (const auto& p : problems_) os << "\n  " << p;
    return Unimplemented(os.str());
  }
  KILN_RETURN_IF_ERROR(bb_.EndDataflow());
  if (outputs.size() == 1) {
    KILN_RETURN_IF_ERROR(bb_.EmitFuncOutput(outputs[0]));
  } else {
    auto tuple = std::make_shared<ir::TupleExpr>(outputs);
    KILN_ASSIGN_OR_RETURN(ir::RVar t, bb_.Emit(tuple, "out"));
    KILN_RETURN_IF_ERROR(bb_.EmitFuncOutput(t));
  }
  return bb_.module();
}

}  // namespace onnx
}  // namespace kiln
