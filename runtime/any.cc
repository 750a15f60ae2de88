#include "runtime/any.h"

namespace kiln {

const char* AnyKindName(AnyKind kind) {
  switch (kind) {
    case AnyKind::kNone: return "none";
    case AnyKind::kInt: return "int";
    case AnyKind::kFloat: return "float";
    case AnyKind::kString: return "string";
    case AnyKind::kTensor: return "tensor";
    case AnyKind::kShape: return "shape";
    case AnyKind::kTuple: return "tuple";
    case AnyKind::kFunction: return "function";
    case AnyKind::kOpaque: return "object";
  }
  return "unknown";
}

Any::Any(std::string v) : kind_(AnyKind::kString), obj_(std::make_shared<StringObj>(std::move(v))) {}

Any::Any(Tensor t) : kind_(t.defined() ? AnyKind::kTensor : AnyKind::kNone), obj_(t.object()) {}

Any Any::Shape(std::vector<int64_t> dims) {
  Any a;
  a.kind_ = AnyKind::kShape;
  a.obj_ = std::make_shared<ShapeObj>(std::move(dims));
  return a;
}

Any Any::Tuple(std::vector<Any> fields) {
  Any a;
  a.kind_ = AnyKind::kTuple;
  a.obj_ = std::make_shared<TupleObj>(std::move(fields));
  return a;
}

Any Any::Function(std::string name, PackedFunc fn) {
  Any a;
  a.kind_ = AnyKind::kFunction;
  a.obj_ = std::make_shared<FunctionObj>(std::move(name), std::move(fn));
  return a;
}

Any Any::FromObject(ObjectRef obj) {
  Any a;
  if (!obj) return a;
  switch (obj->object_kind()) {
    case ObjectKind::kString: a.kind_ = AnyKind::kString; break;
    case ObjectKind::kTensor: a.kind_ = AnyKind::kTensor; break;
    case ObjectKind::kShape: a.kind_ = AnyKind::kShape; break;
    case ObjectKind::kTuple: a.kind_ = AnyKind::kTuple; break;
    case ObjectKind::kFunction: a.kind_ = AnyKind::kFunction; break;
    case ObjectKind::kOpaque: a.kind_ = AnyKind::kOpaque; break;
  }
  a.obj_ = std::move(obj);
  return a;
}

Result<int64_t> Any::AsInt() const {
  if (kind_ != AnyKind::kInt) return InvalidArgument(std::string("expected an int, got ") + Describe());
  return pod_.i;
}

Result<double> Any::AsFloat() const {
  if (kind_ == AnyKind::kFloat) return pod_.f;
  if (kind_ == AnyKind::kInt) return static_cast<double>(pod_.i);
  return InvalidArgument(std::string("expected a float, got ") + Describe());
}

Result<Tensor> Any::AsTensor() const {
  if (kind_ != AnyKind::kTensor) return InvalidArgument(std::string("expected a tensor, got ") + Describe());
  return tensor();
}

std::string Any::Describe() const {
  switch (kind_) {
    case AnyKind::kInt: return "int " + std::to_string(pod_.i);
    case AnyKind::kFloat: return "float " + std::to_string(pod_.f);
    case AnyKind::kString: return "string \"" + string_value() + "\"";
    case AnyKind::kTensor: return "tensor " + tensor().TypeString();
    case AnyKind::kShape: return "shape " + ShapeToString(shape_dims());
    case AnyKind::kTuple: return "tuple of " + std::to_string(tuple_fields().size());
    case AnyKind::kFunction: return "function " + function().name;
    default: return AnyKindName(kind_);
  }
}

}  // namespace kiln
