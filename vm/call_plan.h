// CallPlan: one interpreted call of a bytecode function recorded as the list
// of kernel calls it made, and replayed for later calls whose arguments have
// the same shapes. Internal to the VM.
//
// Why. A symbolic function's bytecode spends its prologue re-deriving, on
// every call, what depends only on the argument shapes: match_shape binds the
// dimensions, shape_arith computes the sizes, alloc_arena lays out the arena,
// arena_tensors makes the views, make_shape / alloc_tensor the results. On a
// small model that is a third of the call (mtcnn_pnet at 12x12: ~0.45 of
// ~1.9 us), and the interpreter's code competes with the kernels' for the
// instruction cache. The pinned model runs on the graph executor, a loop over
// prebuilt argument arrays. A plan is that loop, built from a real call: when
// a call's arguments have the shapes (and int values) of one of the recent
// calls, it records its kernel calls; each later call with those shapes
// stores its tensors' data pointers into the recorded arguments and calls
// the kernels, without the bytecode.
//
// Exactness. A function is replayable when nothing it runs reads tensor data
// into registers or branches on it: its calls are kernels and the shape,
// allocation, view and tuple builtins (no packed functions, callees, loops,
// to_bool or tensor_to_shape), and its jumps go forward, so each instruction
// runs at most once a call. Then every register value, branch and kernel
// argument of a call is a function of the arguments' shapes, dtypes and int
// values: the plan's key. Each recorded tensor argument is traced to what
// gives it its bytes: an argument (at an offset), a result or intermediate of
// an alloc_tensor site (taken from the site's reuse slot again at replay, as
// alloc_tensor would: last call's tensor when the caller let go of it, else a
// new one), a constant, or a planned storage (the plan holds the block). A
// value that traces to nothing else, or a result that is not an argument, a
// constant, a site's tensor or a make_tuple of those, leaves the function
// interpreted for that key. A context keeps a few plans per function
// (PlanCache), and drops those whose planned storage a larger call replaced.
//
// Thread-compatible: plans live in one context (vm::ContextImpl).
#ifndef KILN_VM_CALL_PLAN_H_
#define KILN_VM_CALL_PLAN_H_

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "kernels/kiln_kernel_abi.h"
#include "runtime/any.h"
#include "runtime/program.h"
#include "runtime/span.h"
#include "runtime/status.h"
#include "runtime/tensor.h"
#include "vm/bytecode.h"
#include "vm/frame.h"

namespace kiln {

class ThreadPool;

namespace vm {

// Whether every call of `fn` with equal argument shapes makes the same kernel
// calls (the conditions above).
bool Replayable(const DecodedFunction& fn, const LinkedProgram& linked);

// The key of a call: each argument's dtype and shape (compact CPU tensors)
// or value (ints). False, and `key` cleared, when an argument is anything
// else (that call is interpreted).
bool KeyOf(Span<const Any> args, std::vector<int64_t>* key);
// Whether `args` have the key `key` (empty: no key). Allocates nothing.
bool KeyMatches(const std::vector<int64_t>& key, Span<const Any> args);

class CallPlan {
 public:
  // What a replay takes a recorded tensor argument's bytes from.
  enum class Base : uint8_t { kArgument, kSite };
  // Where a result comes from: an argument, an alloc_tensor site's tensor, a
  // fixed value (a constant, an int), or a make_tuple site of other results.
  struct ResultValue {
    enum class Kind : uint8_t { kArgument, kSite, kFixed, kTuple } kind = Kind::kFixed;
    uint32_t index = 0;   // kArgument: the argument; kSite: the alloc site; kTuple: the make_tuple site's offset
    Any fixed;            // kFixed
    std::vector<ResultValue> fields;  // kTuple
  };

  // Whether `args` have this plan's key.
  bool Matches(Span<const Any> args) const { return KeyMatches(key_, args); }
  // Whether every planned storage block the plan holds is still the
  // function's current one in `storage` (a call with larger sizes replaces a
  // block; a plan on the old one would keep it alive).
  bool StorageCurrent(const std::vector<Tensor>* storage) const;
  // Runs the recorded kernel calls on `args` (which match) and makes the
  // result. `fn` is the function's code (for its reuse slots), `name` names
  // it in errors. Must run inside the context's call (ScopedCallState).
  Status Replay(Span<const Any> args, const DecodedFunction& fn, const std::string& name, ThreadPool* pool,
                Any* result);

 private:
  friend class PlanRecorder;
  struct Step {
    const ResolvedCallable* callee;
    uint32_t first_arg;
    uint32_t num_args;
  };
  // A tensor argument whose data pointer a replay sets: base + offset.
  struct Patch {
    uint32_t dl;
    Base base;
    uint32_t index;   // the argument, or the alloc site (index into sites_)
    uint64_t offset;  // bytes from the base's first element
  };
  struct Site {
    uint32_t offset;  // the alloc_tensor call's first argument in the function's args
    DType dtype;
    std::vector<int64_t> dims;
  };
  Any MakeResult(const ResultValue& v, Span<const Any> args, const DecodedFunction& fn);

  std::vector<int64_t> key_;
  std::vector<Step> steps_;
  std::vector<kiln_kernel_arg> args_;
  std::vector<kiln_dltensor> dl_;   // args_' tensors point here
  std::vector<int64_t> dims_;       // dl_'s shapes point here
  std::vector<Patch> patches_;
  std::vector<Site> sites_;
  ResultValue result_;
  std::vector<Tensor> storage_;     // planned storage blocks the fixed pointers are in
  std::vector<Any> site_values_;    // scratch of a replay: each site's tensor (empty between calls)
};

// The plans of one function in one context, and the keys of its recent
// interpreted calls. A key seen again is recorded; up to kKeptPlans plans are
// kept, most recently used first, so that a caller cycling through a few
// shapes (an image pyramid, a batcher's batch sizes) replays each of them.
class PlanCache {
 public:
  static constexpr size_t kKeptPlans = 8;
  // The plan for `args`' key, moved to the front; null when there is none.
  CallPlan* Find(Span<const Any> args);
  // Called for an interpreted call: whether to record it (its key was seen
  // recently and recording it did not fail before). Otherwise the key is
  // remembered as seen.
  bool ShouldRecord(Span<const Any> args);
  // The result of recording a call on `args`: a plan, or null when the call
  // could not be traced (its key is then not recorded again while it stays
  // among the recent ones).
  void Recorded(Span<const Any> args, std::unique_ptr<CallPlan> plan);
  // Drops the plans that hold a storage block `storage` no longer has.
  void DropStale(const std::vector<Tensor>* storage);

  int8_t replayable = -1;  // Replayable() of the function: -1 not asked yet

 private:
  struct Seen {
    std::vector<int64_t> key;
    bool untraceable = false;
  };
  std::vector<std::unique_ptr<CallPlan>> plans_;  // most recently used first
  std::vector<Seen> seen_;                        // most recent first, at most kKeptPlans
};

// Collects what an interpreted call does (vm/interpreter.cc calls it after
// each instruction of a depth-0 call it records), then makes the plan.
class PlanRecorder {
 public:
  PlanRecorder() : plan_(new CallPlan()) {}
  // After a Call instruction ran: `out` is its result, not yet stored.
  void AfterCall(const Instruction& ins, const Arg* args, const ResolvedCallable& callee, const Frame& frame,
                 const ValueSource& src, const Any& out);
  void AtReturn(const Any& value) { returned_ = value; }
  // The plan of the call that ran on `args` with `storage` its function's
  // planned storage blocks, or null when a value traces to nothing the plan
  // can make again (the call is then interpreted for this key).
  std::unique_ptr<CallPlan> Finish(Span<const Any> args, const std::vector<Tensor>* storage, const Program& program);

 private:
  std::unique_ptr<CallPlan> plan_;
  std::vector<int32_t> arg_dl_;       // per plan arg: its dl_ index, or -1
  std::vector<uint8_t> dl_fixed_;     // per dl_: a constant (its pointer stays)
  std::vector<uint32_t> dl_dims_;     // per dl_: where its shape starts in dims_
  std::vector<Any> site_objects_;     // per site: the tensor the recorded call got
  std::vector<std::pair<uint32_t, Any>> tuples_;  // make_tuple sites and their tuples
  Any returned_;
  bool failed_ = false;
};

}  // namespace vm
}  // namespace kiln

#endif  // KILN_VM_CALL_PLAN_H_
