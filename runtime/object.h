// Object: the reference-counted base of every heap value an Any can hold
// (strings, tensors, shapes, tuples, functions). Kinds are a tag, not RTTI.
#ifndef KILN_RUNTIME_OBJECT_H_
#define KILN_RUNTIME_OBJECT_H_

#include <cstdint>
#include <memory>

namespace kiln {

enum class ObjectKind : uint8_t { kString, kTensor, kShape, kTuple, kFunction, kOpaque };

class Object {
 public:
  explicit Object(ObjectKind kind) : kind_(kind) {}
  virtual ~Object() = default;
  ObjectKind object_kind() const { return kind_; }

 private:
  ObjectKind kind_;
};

using ObjectRef = std::shared_ptr<Object>;

}  // namespace kiln

#endif  // KILN_RUNTIME_OBJECT_H_
