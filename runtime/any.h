// Any: the value a VM register, a packed-function argument or a return holds.
//
// Scalars (int, float) are stored inline; strings, tensors, shapes, tuples and
// functions are reference-counted Objects. Copying an Any copies a reference.
//
// Thread-compatible.
#ifndef KILN_RUNTIME_ANY_H_
#define KILN_RUNTIME_ANY_H_

#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "runtime/object.h"
#include "runtime/span.h"
#include "runtime/status.h"
#include "runtime/tensor.h"

namespace kiln {

class Any;

// A packed function: arguments in, one result out, a Status back. It must not
// throw. `ret` is never null; leaving it None means "no result".
using PackedFunc = std::function<Status(Span<const Any> args, Any* ret)>;

class StringObj final : public Object {
 public:
  explicit StringObj(std::string v) : Object(ObjectKind::kString), value(std::move(v)) {}
  std::string value;
};

// A concrete shape (the runtime value of R.Shape).
class ShapeObj final : public Object {
 public:
  explicit ShapeObj(std::vector<int64_t> v) : Object(ObjectKind::kShape), dims(std::move(v)) {}
  std::vector<int64_t> dims;
};

class TupleObj;

class FunctionObj final : public Object {
 public:
  FunctionObj(std::string n, PackedFunc f) : Object(ObjectKind::kFunction), name(std::move(n)), fn(std::move(f)) {}
  std::string name;
  PackedFunc fn;
};

enum class AnyKind : uint8_t { kNone, kInt, kFloat, kString, kTensor, kShape, kTuple, kFunction, kOpaque };

const char* AnyKindName(AnyKind kind);

class Any {
 public:
  Any() = default;
  Any(int64_t v) : kind_(AnyKind::kInt) { pod_.i = v; }        // NOLINT
  Any(int v) : kind_(AnyKind::kInt) { pod_.i = v; }            // NOLINT
  Any(bool v) : kind_(AnyKind::kInt) { pod_.i = v ? 1 : 0; }   // NOLINT
  Any(double v) : kind_(AnyKind::kFloat) { pod_.f = v; }       // NOLINT
  Any(std::string v);                                           // NOLINT
  Any(const char* v) : Any(std::string(v)) {}                   // NOLINT
  Any(Tensor t);                                                // NOLINT
  static Any Shape(std::vector<int64_t> dims);
  static Any Tuple(std::vector<Any> fields);
  static Any Function(std::string name, PackedFunc fn);
  static Any FromObject(ObjectRef obj);

  AnyKind kind() const { return kind_; }
  bool is_none() const { return kind_ == AnyKind::kNone; }
  bool is_int() const { return kind_ == AnyKind::kInt; }
  bool is_float() const { return kind_ == AnyKind::kFloat; }
  bool is_string() const { return kind_ == AnyKind::kString; }
  bool is_tensor() const { return kind_ == AnyKind::kTensor; }
  bool is_shape() const { return kind_ == AnyKind::kShape; }
  bool is_tuple() const { return kind_ == AnyKind::kTuple; }
  bool is_function() const { return kind_ == AnyKind::kFunction; }

  // Unchecked accessors: the caller has checked kind() (verified bytecode does).
  int64_t int_value() const { return pod_.i; }
  double float_value() const { return pod_.f; }
  const std::string& string_value() const { return static_cast<StringObj*>(obj_.get())->value; }
  Tensor tensor() const { return Tensor(std::static_pointer_cast<TensorObj>(obj_)); }
  TensorObj* tensor_obj() const { return static_cast<TensorObj*>(obj_.get()); }
  const std::vector<int64_t>& shape_dims() const { return static_cast<ShapeObj*>(obj_.get())->dims; }
  const std::vector<Any>& tuple_fields() const;
  const FunctionObj& function() const { return *static_cast<FunctionObj*>(obj_.get()); }
  const ObjectRef& object() const { return obj_; }

  // Checked accessors for packed functions reading user arguments.
  Result<int64_t> AsInt() const;
  Result<double> AsFloat() const;
  Result<Tensor> AsTensor() const;

  // "int 3", "tensor float32[2, 3]", "shape [1, 784]", "tuple of 2", ...
  std::string Describe() const;

 private:
  AnyKind kind_ = AnyKind::kNone;
  union {
    int64_t i;
    double f;
  } pod_{0};
  ObjectRef obj_;
};

class TupleObj final : public Object {
 public:
  explicit TupleObj(std::vector<Any> f) : Object(ObjectKind::kTuple), fields(std::move(f)) {}
  std::vector<Any> fields;
};

inline const std::vector<Any>& Any::tuple_fields() const {
  return static_cast<TupleObj*>(obj_.get())->fields;
}

}  // namespace kiln

#endif  // KILN_RUNTIME_ANY_H_
