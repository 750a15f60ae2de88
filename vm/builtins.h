// The VM's builtins (vm/builtins.def) as an enum and a name table, and the
// function that runs one against a frame.
#ifndef KILN_VM_BUILTINS_H_
#define KILN_VM_BUILTINS_H_

#include <cstdint>
#include <string>

namespace kiln {
namespace vm {

enum class Builtin : int32_t {
#define KILN_VM_BUILTIN(name, text) k##name,
#include "vm/builtins.def"
#undef KILN_VM_BUILTIN
  kCount
};

// "vm.builtin.alloc_tensor".
const char* BuiltinName(Builtin b);
// Index of the builtin named `name`, or -1.
int32_t LookupBuiltin(const std::string& name);

// Storage indices of vm.builtin.alloc_storage are below this.
constexpr int64_t kMaxStorages = 65536;
// vm.builtin.arena_tensor reads at most this many dimensions (its verifier
// checks it), so they fit an array on the stack.
constexpr int64_t kMaxArenaTensorDims = 64;

// match_shape / make_shape / shape_arith operand modes.
enum class MatchMode : int64_t { kAssertEqualToImm = 0, kStoreToHeap = 1, kAssertEqualToLoad = 2, kNoOp = 3 };
enum class ShapeMode : int64_t { kImmediate = 0, kLoadFromHeap = 1 };
enum class ShapeOp : int64_t {
  kAdd = 0, kSub = 1, kMul = 2, kFloorDiv = 3, kFloorMod = 4, kMin = 5, kMax = 6,
  // Comparisons and logic give 0 or 1 (an If's condition computed on the heap).
  kEQ = 7, kNE = 8, kLT = 9, kLE = 10, kGT = 11, kGE = 12, kAnd = 13, kOr = 14,
};

}  // namespace vm
}  // namespace kiln

#endif  // KILN_VM_BUILTINS_H_
