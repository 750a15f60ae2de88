// Pass (analysis): memory planning for the VM — which storage each tensor a
// Relax function allocates lives in, so that one call reuses bytes between
// tensors whose lifetimes do not overlap, and a second call of the same
// Context allocates nothing (vm/builtins.def: alloc_storage, tensor_view).
//
// Pre: LegalizeOps ran and struct info is inferred (the input of
//      relax::GenerateVMCode). The plan refers to the module's CallExpr nodes
//      by address: plan and generate code from the very same module.
// Post: one FunctionPlan per Relax function (module order). The module is not
//      changed.
//
// What is planned. The tensors a function allocates are the outputs of its
// R.call_tir / R.call_dps_packed calls. One is planned unless it *escapes*:
// returned from the function (directly, through a tuple, an alias, a
// match_cast or an if/else result), or passed to anything else than a
// destination-passing call's inputs (a Relax function, R.call_packed, ...),
// which might keep or return it. Escaping tensors stay fresh allocations
// (the caller owns the outputs).
//
// Lifetimes. Bindings are numbered in the order VM code generation emits them
// (then-branch before else-branch); a tensor lives from the binding that
// writes it to the last one that reads it or an alias of it (closed interval).
// Only one branch of an if/else runs, so numbering them one after the other
// is conservative and sound. In a call-time arena (below), a tensor written
// in a branch of an If on a boolean shape condition (R.prim_value, e.g. the
// Winograd-or-direct choice, transform/winograd_choice.h) that the arguments
// determine is laid out with bytes * guard (the product of the enclosing
// branches' conditions, 1 - cond in an else branch): 0 bytes in calls that
// take the other branch, so a call's arena holds the branch it runs only.
//
// Storage. Variables get the bounds [0, upper bound]; upper bounds come from
// the function attribute `tir_var_upper_bound` ({"n": 128}) and from
// PlanOptions (the --bound flag), which wins. A tensor whose byte size has a
// constant maximum under these bounds is *static*: all static tensors share
// storage 0, an arena laid out first fit (arena.h), each at a 64-byte aligned
// offset with a slot of its maximum size. Any other tensor gets a storage of
// symbolic size: a storage freed by earlier tensors is reused when its size is
// provably at least the new tensor's (equal sizes included), otherwise a new
// one is made. A function whose storages are all static has a fully static
// plan: its memory is allocated on the first call and never again.
//
// Call-time arena (PlanOptions::call_time_arena, on by default). A function
// with a tensor whose size has no constant maximum (a model compiled once for
// any image size) would otherwise get one storage per distinct symbolic size:
// many scattered blocks, several times the bytes a plan for the call's shapes
// needs, which costs cache misses in every kernel. Instead, every planned
// tensor whose size the arguments' shapes determine (its variables appear as
// dimensions of tensor or shape parameters, and its arithmetic cannot fail:
// division by nonzero constants only) goes to one storage laid out when the
// call runs (vm.builtin.alloc_arena), first fit over the concrete sizes in
// definition order with these lifetimes: at given shapes, the layout a
// function compiled for those shapes gets. Static tensors join it too (their
// constant size), since they are then laid out together with the rest.
// Tensors whose sizes depend on values computed in the body keep the scheme
// above. A function whose every size has a constant maximum (upper bounds
// included) keeps its static plan.
//
// Peak: storages are held for the whole call, so the planned peak is the sum
// of their sizes (a constant, or an expression of the symbolic variables);
// for a call-time arena, the sum of its tensors' aligned sizes, an upper
// bound of what the layout takes. Escaping tensors are not included.
//
// Failures: an upper bound that is not a positive integer, or a
// tir_var_upper_bound attribute that is not a dict of names to integers, is
// kInvalidArgument naming the function.
#ifndef KILN_COMPILER_MEMORY_PLAN_MEMORY_H_
#define KILN_COMPILER_MEMORY_PLAN_MEMORY_H_

#include <cstdint>
#include <map>
#include <string>
#include <vector>

#include "compiler/ir/module.h"
#include "runtime/status.h"

namespace kiln {
namespace memory {

struct PlanOptions {
  // Upper bounds of symbolic variables by name (kiln-compile --bound n=128),
  // for every function; they override the functions' attributes.
  std::map<std::string, int64_t> upper_bounds;
  // Lay out the tensors of functions with symbolic sizes at call time (see
  // above); false: one storage per symbolic size, as before it existed.
  bool call_time_arena = true;
};

struct PlannedTensor {
  const ir::CallExpr* call = nullptr;  // the call that writes it
  int output = 0;                      // which of the call's outputs
  std::string name;                    // the variable bound to it ("" when nested in an expression)
  ir::PrimExpr bytes;                  // exact size in bytes, simplified
  size_t def = 0;                      // position of the writing binding
  size_t last_use = 0;                 // last position that reads it (def when never read)
  bool escapes = false;                // fresh allocation on every call
  int storage = -1;                    // index in FunctionPlan::storages; -1: not planned
  uint64_t offset = 0;                 // byte offset in the storage (multiple of 64)
  int64_t slot_bytes = -1;             // static: bytes reserved at offset; -1: the whole storage
  int arena_index = -1;                // in a call-time arena: its place in PlannedStorage::members
  // 0 or 1 at run time: whether the binding writing it runs (the product of
  // the shape conditions of the If branches it is in); undefined: always.
  ir::PrimExpr guard;
  // In a call-time arena: the bytes its layout reserves, `bytes * guard`
  // when the arguments determine the guard (0 in calls that skip its
  // branch), else `bytes`.
  ir::PrimExpr arena_bytes;
};

struct PlannedStorage {
  ir::PrimExpr bytes;        // size; an int64 IntImm when static; an upper bound when call_time
  bool is_static = false;
  uint64_t static_bytes = 0;  // is_static: the size
  // Laid out when the call runs: `members` (indices into
  // FunctionPlan::tensors, in definition order) get their offsets then.
  bool call_time = false;
  std::vector<size_t> members;
};

struct FunctionPlan {
  std::string function;
  std::vector<PlannedStorage> storages;
  std::vector<PlannedTensor> tensors;  // every allocated tensor, in definition order
  ir::PrimExpr peak_bytes;             // sum of the storages' sizes, simplified
  bool fully_static = true;            // every storage has a constant size

  // The tensor written as output `output` of `call`, or nullptr.
  const PlannedTensor* Find(const ir::CallExpr* call, int output) const;
  size_t num_planned() const;
};

struct ModulePlan {
  std::vector<FunctionPlan> functions;
  // nullptr when `function` is not a Relax function of the module.
  const FunctionPlan* Find(const std::string& function) const;
};

Result<FunctionPlan> PlanFunction(const std::string& name, const ir::Function& f, const PlanOptions& options);
Result<ModulePlan> PlanMemory(const ir::IRModule& mod, const PlanOptions& options = {});

// One line per function, for kiln-compile's report:
//   "memory plan: main: 3 of 4 tensors in 1 storage, peak 8192 bytes (static)"
//   "memory plan: main: 2 of 3 tensors in 2 storages, peak n * 1024 bytes (symbolic)"
//   "memory plan: main: 3 of 3 tensors in 1 storage, peak n * 2048 bytes (symbolic; 3 laid out at call time)"
std::string FormatMemoryReport(const ModulePlan& plan);

// Parses one --bound value "n=128" (name, '=', positive integer).
Result<std::pair<std::string, int64_t>> ParseBoundFlag(const std::string& text);

// The upper bounds a function declares in its attribute tir_var_upper_bound.
Result<std::map<std::string, int64_t>> UpperBoundsFromAttrs(const std::string& function, const ir::AttrMap& attrs);

}  // namespace memory
}  // namespace kiln

#endif  // KILN_COMPILER_MEMORY_PLAN_MEMORY_H_
