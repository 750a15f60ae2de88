// Builders of operator attribute values (ir::AttrValue), for passes and
// importers that emit operator calls: AttrInt(3), AttrInts({1, 0}), ...
#ifndef KILN_COMPILER_IR_ATTR_VALUES_H_
#define KILN_COMPILER_IR_ATTR_VALUES_H_

#include <cstdint>
#include <string>
#include <vector>

#include "compiler/ir/tir.h"

namespace kiln {
namespace ir {

inline AttrValue AttrInt(int64_t v) {
  AttrValue a;
  a.kind = AttrValue::Kind::kInt;
  a.i = v;
  return a;
}
inline AttrValue AttrFloat(double v) {
  AttrValue a;
  a.kind = AttrValue::Kind::kFloat;
  a.f = v;
  return a;
}
inline AttrValue AttrString(std::string v) {
  AttrValue a;
  a.kind = AttrValue::Kind::kString;
  a.s = std::move(v);
  return a;
}
inline AttrValue AttrBool(bool v) {
  AttrValue a;
  a.kind = AttrValue::Kind::kBool;
  a.i = v ? 1 : 0;
  return a;
}
inline AttrValue AttrInts(std::vector<int64_t> v) {
  AttrValue a;
  a.kind = AttrValue::Kind::kIntList;
  a.ints = std::move(v);
  return a;
}

}  // namespace ir
}  // namespace kiln

#endif  // KILN_COMPILER_IR_ATTR_VALUES_H_
