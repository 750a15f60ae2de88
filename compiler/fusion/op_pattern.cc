#include "compiler/fusion/op_pattern.h"

namespace kiln {
namespace fusion {

OpPattern GetOpPattern(const ir::PrimFunc& func) {
  if (!func) return kOpaque;
  auto it = func->attrs.find(kOpPatternAttr);
  if (it == func->attrs.end() || it->second.kind != ir::AttrValue::Kind::kInt) return kOpaque;
  switch (it->second.i) {
    case kElemWise:
    case kBroadcast:
    case kInjective:
    case kCommReduce:
    case kOutEWiseFusable:
    case kTuple:
      return static_cast<OpPattern>(it->second.i);
    default:
      return kOpaque;
  }
}

const char* OpPatternName(OpPattern p) {
  switch (p) {
    case kElemWise: return "elemwise";
    case kBroadcast: return "broadcast";
    case kInjective: return "injective";
    case kCommReduce: return "comm_reduce";
    case kOutEWiseFusable: return "out_ewise_fusable";
    case kTuple: return "tuple";
    case kOpaque: return "opaque";
  }
  return "opaque";
}

}  // namespace fusion
}  // namespace kiln
