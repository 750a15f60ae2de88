#include "vm/builtins.h"

#include <algorithm>
#include <cstring>

#include "runtime/arena_layout.h"
#include "runtime/tensor.h"
#include "vm/builtins_shape_value.h"
#include "vm/call_state.h"
#include "vm/frame.h"

namespace kiln {
namespace vm {
namespace {

const char* const kBuiltinNames[] = {
#define KILN_VM_BUILTIN(name, text) text,
#include "vm/builtins.def"
#undef KILN_VM_BUILTIN
};

// Larger requests are certainly corrupt shapes (1 TiB).
constexpr uint64_t kMaxTensorBytes = uint64_t(1) << 40;

// Call-time arena layouts each alloc_arena site keeps (AllocArena).
constexpr size_t kKeptArenaLayouts = 4;

int64_t FloorDiv(int64_t a, int64_t b) {
  // INT64_MIN / -1 overflows (a trap on x86): negate with wrapping instead.
  if (b == -1) return static_cast<int64_t>(uint64_t(0) - static_cast<uint64_t>(a));
  int64_t q = a / b;
  if ((a % b != 0) && ((a < 0) != (b < 0))) --q;
  return q;
}

int64_t FloorMod(int64_t a, int64_t b) { return b == -1 ? 0 : a - FloorDiv(a, b) * b; }

// The reuse slot of the call site whose arguments start at `args`, or null
// outside a context call (vm/call_state.h).
Any* ReuseSlot(const Arg* args, const DecodedFunction& code) {
  CallState* s = CurrentCallState();
  if (s == nullptr) return nullptr;
  size_t offset = static_cast<size_t>(args - code.args.data());
  if (s->reuse.size() <= code.function_index) s->reuse.resize(code.function_index + 1);
  std::vector<Any>& sites = s->reuse[code.function_index];
  if (sites.size() < code.args.size()) sites.resize(code.args.size());
  return offset < sites.size() ? &sites[offset] : nullptr;
}

// Nothing but the reuse slot holds the object: it may be overwritten.
bool HeldOnlyBySlot(const Any& a) { return a.object() != nullptr && a.object().use_count() == 1; }

// The running context's allocator, or the default outside a context call.
Allocator* CallAllocator() {
  CallState* s = CurrentCallState();
  return s != nullptr ? s->allocator : DefaultCpuAllocator();
}

// An uninitialized tensor from the call's allocator, keeping that allocator
// alive. Allocation failures name the builtin and the allocator.
Result<Tensor> NewTensor(Span<const int64_t> dims, DType dtype, const std::string& function, const char* builtin) {
  CallState* s = CurrentCallState();
  Allocator* allocator = CallAllocator();
  Result<Tensor> t = Tensor::Empty(dims, dtype, allocator);
  if (!t.ok()) {
    Status status = t.TakeStatus();
    if (status.code() == StatusCode::kResourceExhausted) {
      status = ResourceExhausted(status.message() + " from " + allocator->Describe());
    }
    status.Annotate(function + ": " + builtin);
    return status;
  }
  if (s != nullptr) t.value().object()->owner = s->keep_alive;
  return t;
}

}  // namespace

Any* ReuseSlotAt(const DecodedFunction& code, uint32_t offset) {
  return ReuseSlot(code.args.data() + offset, code);
}

Status TensorAtSite(Any* slot, Span<const int64_t> dims, DType dtype, const std::string& function, Any* out) {
  if (slot != nullptr && slot->is_tensor() && HeldOnlyBySlot(*slot)) {
    const TensorObj* o = slot->tensor_obj();
    if (o->allocator == CallAllocator() && DType::FromDL(o->dl.dtype) == dtype &&
        std::equal(o->shape.begin(), o->shape.end(), dims.begin(), dims.end())) {
      *out = *slot;  // the caller let go of last call's tensor: same shape, same bytes
      return Status::Ok();
    }
  }
  Result<Tensor> t = NewTensor(dims, dtype, function, "vm.builtin.alloc_tensor");
  if (!t.ok()) return t.TakeStatus();
  *out = Any(std::move(t).value());
  if (slot != nullptr) *slot = *out;
  return Status::Ok();
}

namespace {

const std::string& ContextString(const Arg& a, const ValueSource& src) {
  return src.program->constants[a.value].value.string_value();
}

Status CheckTensor(const Arg* args, const Frame& f, const ValueSource& src) {
  Any tmp;
  const Any& v = ArgValue(args[0], f, src, &tmp);
  const std::string& ctx = ContextString(args[5], src);
  if (!v.is_tensor()) return InvalidArgument(ctx + ": expected a tensor, got " + v.Describe());
  const DLTensor& dl = v.tensor_obj()->dl;
  int64_t ndim = args[1].value;
  if (ndim >= 0 && dl.ndim != ndim) {
    return InvalidArgument(StrFormat("%s: expected %lld dimensions, got %d", ctx.c_str(),
                                     static_cast<long long>(ndim), dl.ndim));
  }
  if (args[2].value >= 0) {
    DType want{static_cast<uint8_t>(args[2].value), static_cast<uint8_t>(args[3].value),
               static_cast<uint16_t>(args[4].value)};
    DType got = DType::FromDL(dl.dtype);
    if (want != got) {
      return InvalidArgument(StrFormat("%s: expected dtype %s, got %s", ctx.c_str(), DTypeToString(want).c_str(),
                                       DTypeToString(got).c_str()));
    }
  }
  return Status::Ok();
}

// `message` with each `{expected}` and `{got}` replaced by the values.
std::string FillMessage(const std::string& message, int64_t expected, int64_t got) {
  std::string out;
  for (size_t i = 0; i < message.size();) {
    if (message.compare(i, 10, "{expected}") == 0) {
      out += std::to_string(expected);
      i += 10;
    } else if (message.compare(i, 5, "{got}") == 0) {
      out += std::to_string(got);
      i += 5;
    } else {
      out += message[i++];
    }
  }
  return out;
}

// match_shape, and match_shape_explained when `explained` (its messages
// follow the pairs).
Status MatchShape(const Arg* args, Frame& f, const ValueSource& src, const DecodedFunction& code, bool explained) {
  Any tmp;
  const Any& v = ArgValue(args[0], f, src, &tmp);
  const std::string& ctx = ContextString(args[1], src);
  const int64_t* dims;
  size_t ndim;
  if (v.is_tensor()) {
    const DLTensor& dl = v.tensor_obj()->dl;
    dims = dl.shape;
    ndim = static_cast<size_t>(dl.ndim);
  } else if (v.is_shape()) {
    dims = v.shape_dims().data();
    ndim = v.shape_dims().size();
  } else {
    return InvalidArgument(ctx + ": expected a tensor or a shape, got " + v.Describe());
  }
  int64_t want_ndim = args[2].value;
  if (static_cast<int64_t>(ndim) != want_ndim) {
    return InvalidArgument(StrFormat("%s: expected %lld dimensions, got %zu", ctx.c_str(),
                                     static_cast<long long>(want_ndim), ndim));
  }
  for (size_t i = 0; i < ndim; ++i) {
    auto mode = static_cast<MatchMode>(args[3 + 2 * i].value);
    int64_t value = args[4 + 2 * i].value;
    int64_t expected;
    const std::string* symbol = nullptr;
    switch (mode) {
      case MatchMode::kAssertEqualToImm: expected = value; break;
      case MatchMode::kStoreToHeap: f.heap[value] = dims[i]; continue;
      case MatchMode::kAssertEqualToLoad:
        expected = f.heap[value];
        if (!code.slot_names[value].empty()) symbol = &code.slot_names[value];
        break;
      default: continue;
    }
    if (dims[i] != expected) {
      if (explained) {
        const std::string& message = ContextString(args[3 + 2 * ndim + i], src);
        if (!message.empty()) return InvalidArgument(FillMessage(message, expected, dims[i]));
      }
      return InvalidArgument(StrFormat("%s, dimension %zu: expected %lld%s%s%s, got %lld", ctx.c_str(), i,
                                       static_cast<long long>(expected), symbol ? " (" : "",
                                       symbol ? symbol->c_str() : "", symbol ? ")" : "",
                                       static_cast<long long>(dims[i])));
    }
  }
  return Status::Ok();
}

Any MakeShape(const Arg* args, const Frame& f, const DecodedFunction& code) {
  int64_t ndim = args[0].value;
  auto fill = [&](std::vector<int64_t>& dims) {
    for (int64_t i = 0; i < ndim; ++i) {
      int64_t mode = args[1 + 2 * i].value, v = args[2 + 2 * i].value;
      dims[i] = mode == static_cast<int64_t>(ShapeMode::kLoadFromHeap) ? f.heap[v] : v;
    }
  };
  Any* slot = ReuseSlot(args, code);
  if (slot != nullptr && slot->is_shape() && HeldOnlyBySlot(*slot) &&
      slot->shape_dims().size() == static_cast<size_t>(ndim)) {
    // Nobody else sees this shape object: refill it in place.
    fill(static_cast<ShapeObj*>(slot->object().get())->dims);
    return *slot;
  }
  std::vector<int64_t> dims(static_cast<size_t>(ndim));
  fill(dims);
  Any shape = Any::Shape(std::move(dims));
  if (slot != nullptr) *slot = shape;
  return shape;
}

// One or more groups of six arguments, run in order: a function computes
// its shape arithmetic in one call rather than one call per operation.
Status ComputeShapeArith(const Arg* args, uint32_t num_args, Frame& f, const std::string& function) {
  for (uint32_t g = 0; g + 6 <= num_args; g += 6) {
    const Arg* op = args + g;
    auto operand = [&](int i) {
      return op[i].value == static_cast<int64_t>(ShapeMode::kLoadFromHeap) ? f.heap[op[i + 1].value] : op[i + 1].value;
    };
    int64_t a = operand(2), b = operand(4), r = 0;
    switch (static_cast<ShapeOp>(op[1].value)) {
      // Wrapping, not undefined, on overflow: the arithmetic also runs for
      // If branches not taken (and for any bytecode a file carries); a
      // size that wrapped is refused where a tensor is allocated or checked.
      case ShapeOp::kAdd: r = static_cast<int64_t>(static_cast<uint64_t>(a) + static_cast<uint64_t>(b)); break;
      case ShapeOp::kSub: r = static_cast<int64_t>(static_cast<uint64_t>(a) - static_cast<uint64_t>(b)); break;
      case ShapeOp::kMul: r = static_cast<int64_t>(static_cast<uint64_t>(a) * static_cast<uint64_t>(b)); break;
      case ShapeOp::kFloorDiv:
      case ShapeOp::kFloorMod:
        if (b == 0) return InvalidArgument(function + ": vm.builtin.shape_arith: division by zero in a shape expression");
        r = static_cast<ShapeOp>(op[1].value) == ShapeOp::kFloorDiv ? FloorDiv(a, b) : FloorMod(a, b);
        break;
      case ShapeOp::kMin: r = a < b ? a : b; break;
      case ShapeOp::kMax: r = a > b ? a : b; break;
      case ShapeOp::kEQ: r = a == b; break;
      case ShapeOp::kNE: r = a != b; break;
      case ShapeOp::kLT: r = a < b; break;
      case ShapeOp::kLE: r = a <= b; break;
      case ShapeOp::kGT: r = a > b; break;
      case ShapeOp::kGE: r = a >= b; break;
      case ShapeOp::kAnd: r = a != 0 && b != 0; break;
      case ShapeOp::kOr: r = a != 0 || b != 0; break;
    }
    f.heap[op[0].value] = r;
  }
  return Status::Ok();
}

// The memo of a shape_arith call site (ShapeArith), kept in its reuse slot as
// the int64 values of a shape object:
//   [0] k: heap slots the groups read before any group writes them (inputs)
//   [1] r: runs of consecutive slots the groups write (outputs)
//   [2] w: output slots in all (the runs' lengths added up)
//   [3] e: entries kept (at most kKeptShapeArithResults), most recent first
//   k input slots, r (first slot, length) pairs, then e entries of the k
//   input values followed by the w output values (last write of each slot).
constexpr size_t kKeptShapeArithResults = 4;
constexpr size_t kMemoHeader = 4;

// The memo's header for the groups at `args`: which slots they read first and
// which they write. Computed once per site and context.
std::vector<int64_t> ShapeArithMemoHeader(const Arg* args, uint32_t num_args) {
  std::vector<int64_t> inputs, written;
  for (uint32_t g = 0; g + 6 <= num_args; g += 6) {
    for (int i : {2, 4}) {
      if (args[g + i].value != static_cast<int64_t>(ShapeMode::kLoadFromHeap)) continue;
      int64_t slot = args[g + i + 1].value;
      if (std::find(written.begin(), written.end(), slot) == written.end() &&
          std::find(inputs.begin(), inputs.end(), slot) == inputs.end()) {
        inputs.push_back(slot);
      }
    }
    if (std::find(written.begin(), written.end(), args[g].value) == written.end()) written.push_back(args[g].value);
  }
  std::sort(written.begin(), written.end());
  std::vector<int64_t> runs;
  for (size_t i = 0; i < written.size();) {
    size_t j = i + 1;
    while (j < written.size() && written[j] == written[j - 1] + 1) ++j;
    runs.push_back(written[i]);
    runs.push_back(static_cast<int64_t>(j - i));
    i = j;
  }
  std::vector<int64_t> header = {static_cast<int64_t>(inputs.size()), static_cast<int64_t>(runs.size() / 2),
                                 static_cast<int64_t>(written.size()), 0};
  header.insert(header.end(), inputs.begin(), inputs.end());
  header.insert(header.end(), runs.begin(), runs.end());
  return header;
}

// shape_arith. Its results depend only on the heap slots it reads before
// writing them (the symbolic dimensions match_shape stored), and a program
// called again and again mostly sees the same few input shapes: each call
// site keeps the results of the last kKeptShapeArithResults distinct inputs
// and, when this call's inputs equal one of them, writes those results to the
// heap instead of running the groups (about 30 instructions each; a
// function's prologue holds one group per operation of all its shape
// expressions). The memo is per context (its reuse slot), so concurrent calls
// never share it. A failing call (division by zero) leaves no entry.
Status ShapeArith(const Arg* args, uint32_t num_args, Frame& f, const DecodedFunction& code,
                  const std::string& function) {
  Any* slot = ReuseSlot(args, code);
  if (slot == nullptr) return ComputeShapeArith(args, num_args, f, function);
  if (!slot->is_shape() || !HeldOnlyBySlot(*slot)) *slot = Any::Shape(ShapeArithMemoHeader(args, num_args));
  std::vector<int64_t>& memo = static_cast<ShapeObj*>(slot->object().get())->dims;
  const size_t k = static_cast<size_t>(memo[0]), r = static_cast<size_t>(memo[1]), w = static_cast<size_t>(memo[2]);
  const size_t entries = static_cast<size_t>(memo[3]);
  const int64_t* in_slots = memo.data() + kMemoHeader;
  const int64_t* runs = in_slots + k;
  const size_t first = kMemoHeader + k + 2 * r, entry = k + w;
  for (size_t e = 0; e < entries; ++e) {
    const int64_t* kept = memo.data() + first + e * entry;
    size_t i = 0;
    while (i < k && kept[i] == f.heap[in_slots[i]]) ++i;
    if (i < k) continue;
    const int64_t* out = kept + k;
    for (size_t j = 0; j < r; ++j) {
      std::memcpy(&f.heap[runs[2 * j]], out, static_cast<size_t>(runs[2 * j + 1]) * sizeof(int64_t));
      out += runs[2 * j + 1];
    }
    // Most recent first: the next call with these inputs finds them at once.
    if (e > 0) {
      std::rotate(memo.begin() + first, memo.begin() + first + e * entry, memo.begin() + first + (e + 1) * entry);
    }
    return Status::Ok();
  }
  // Read the inputs before the groups overwrite any of them.
  std::vector<int64_t> fresh(entry);
  for (size_t i = 0; i < k; ++i) fresh[i] = f.heap[in_slots[i]];
  KILN_RETURN_IF_ERROR(ComputeShapeArith(args, num_args, f, function));
  int64_t* out = fresh.data() + k;
  for (size_t j = 0; j < r; ++j) {
    std::memcpy(out, &f.heap[runs[2 * j]], static_cast<size_t>(runs[2 * j + 1]) * sizeof(int64_t));
    out += runs[2 * j + 1];
  }
  memo.insert(memo.begin() + first, fresh.begin(), fresh.end());
  if (entries < kKeptShapeArithResults) {
    memo[3] = static_cast<int64_t>(entries + 1);
  } else {
    memo.resize(first + kKeptShapeArithResults * entry);
  }
  return Status::Ok();
}

Status AllocTensor(const Arg* args, const Frame& f, const ValueSource& src, const DecodedFunction& code,
                   const std::string& function, Any* out) {
  Any tmp;
  const Any& shape = ArgValue(args[0], f, src, &tmp);
  if (!shape.is_shape()) {
    return InvalidArgument(function + ": vm.builtin.alloc_tensor: expected a shape, got " + shape.Describe());
  }
  DType dtype{static_cast<uint8_t>(args[1].value), static_cast<uint8_t>(args[2].value),
              static_cast<uint16_t>(args[3].value)};
  // Shapes come from user data and symbolic arithmetic: refuse negative or
  // overflowing sizes here rather than allocate a wrong-sized buffer.
  uint64_t nbytes = dtype.bytes();
  for (int64_t d : shape.shape_dims()) {
    if (d < 0 || __builtin_mul_overflow(nbytes, static_cast<uint64_t>(d), &nbytes) || nbytes > kMaxTensorBytes) {
      return InvalidArgument(StrFormat("%s: vm.builtin.alloc_tensor: cannot allocate a %s%s tensor", function.c_str(),
                                       DTypeToString(dtype).c_str(), ShapeToString(shape.shape_dims()).c_str()));
    }
  }
  return TensorAtSite(ReuseSlot(args, code), shape.shape_dims(), dtype, function, out);
}

// Bytes of a compact tensor of `dims` and `dtype`; false when a dimension is
// negative or the size overflows or exceeds kMaxTensorBytes.
bool TensorBytes(Span<const int64_t> dims, DType dtype, uint64_t* out) {
  uint64_t nbytes = dtype.bytes();
  for (int64_t d : dims) {
    if (d < 0 || __builtin_mul_overflow(nbytes, static_cast<uint64_t>(d), &nbytes) || nbytes > kMaxTensorBytes) {
      return false;
    }
  }
  *out = nbytes;
  return true;
}

// Planned storage `index` of the running function at this call depth, at
// least `size` bytes: made on the first call, replaced only by a larger one.
Status KeptStorage(Frame& f, const DecodedFunction& code, int64_t index, int64_t size, const std::string& function,
                   const char* builtin, Any* out) {
  if (f.storage.size() <= code.function_index) f.storage.resize(code.function_index + 1);
  std::vector<Tensor>& slots = f.storage[code.function_index];
  if (slots.size() < code.num_storages) slots.resize(code.num_storages);
  Tensor& storage = slots[index];
  if (!storage.defined() || storage.shape()[0] < size) {
    // Tensors viewing the old block keep it alive until they die.
    const int64_t dims[1] = {size};
    Result<Tensor> t = NewTensor(dims, DType::UInt8(), function, builtin);
    if (!t.ok()) return t.TakeStatus();
    storage = std::move(t).value();
  }
  *out = Any(storage);
  return Status::Ok();
}

Status AllocStorage(const Arg* args, Frame& f, const DecodedFunction& code, const std::string& function, Any* out) {
  int64_t size = args[1].value == static_cast<int64_t>(ShapeMode::kLoadFromHeap) ? f.heap[args[2].value] : args[2].value;
  if (size < 0 || static_cast<uint64_t>(size) > kMaxTensorBytes) {
    return InvalidArgument(StrFormat("%s: vm.builtin.alloc_storage: cannot allocate %lld bytes", function.c_str(),
                                     static_cast<long long>(size)));
  }
  // Sized on the first call of this function at this depth; reused after.
  return KeptStorage(f, code, args[0].value, size, function, "vm.builtin.alloc_storage", out);
}

// alloc_arena(index, dst_slot, n, [size_mode, size, begin, end]*n): the
// verifier checked the operands' kinds and ranges.
Status AllocArena(const Arg* args, Frame& f, const DecodedFunction& code, const std::string& function, Any* out) {
  const int64_t dst = args[1].value;
  const size_t n = static_cast<size_t>(args[2].value);
  const Arg* buf = args + 3;
  // The sizes are computed in the prologue, also for tensors of an if/else
  // branch that will not run, where they may be negative or absurd: such a
  // buffer gets no bytes, and arena_view refuses any tensor there.
  auto size_of = [&](size_t i) {
    const Arg* b = buf + 4 * i;
    int64_t size = b[0].value == static_cast<int64_t>(ShapeMode::kLoadFromHeap) ? f.heap[b[1].value] : b[1].value;
    return size < 0 || static_cast<uint64_t>(size) > kMaxTensorBytes ? int64_t{0} : size;
  };
  // The site's cache: a shape object holding, for each of the last
  // kKeptArenaLayouts distinct size lists, most recent first, the sizes, their
  // offsets and the total (2n + 1 values each), so that a server alternating
  // among a few shapes lays out nothing either. The layout depends on the
  // sizes only, so one cache serves every call depth.
  const size_t entry = 2 * n + 1;
  Any* slot = ReuseSlot(args, code);
  std::vector<int64_t>* cache = nullptr;
  if (slot != nullptr && slot->is_shape() && HeldOnlyBySlot(*slot) && slot->shape_dims().size() % entry == 0) {
    cache = &static_cast<ShapeObj*>(slot->object().get())->dims;
  }
  bool hit = false;
  for (size_t e = 0; cache != nullptr && !hit && (e + 1) * entry <= cache->size(); ++e) {
    const int64_t* kept = cache->data() + e * entry;
    hit = true;
    for (size_t i = 0; hit && i < n; ++i) hit = kept[i] == size_of(i);
    // Most recent first: the next call with these sizes finds them at once.
    if (hit && e > 0) std::rotate(cache->begin(), cache->begin() + e * entry, cache->begin() + (e + 1) * entry);
  }
  if (!hit) {
    std::vector<ArenaBuffer> buffers(n);
    for (size_t i = 0; i < n; ++i) {
      const Arg* b = buf + 4 * i;
      buffers[i] = ArenaBuffer{static_cast<uint64_t>(size_of(i)), static_cast<size_t>(b[2].value),
                               static_cast<size_t>(b[3].value)};
    }
    ArenaLayout layout = LayOutArena(buffers);
    if (layout.total_bytes > kMaxTensorBytes) {
      return InvalidArgument(StrFormat("%s: vm.builtin.alloc_arena: cannot allocate %llu bytes", function.c_str(),
                                       static_cast<unsigned long long>(layout.total_bytes)));
    }
    std::vector<int64_t> fresh(entry);
    for (size_t i = 0; i < n; ++i) {
      fresh[i] = size_of(i);
      fresh[n + i] = static_cast<int64_t>(layout.offsets[i]);
    }
    fresh[2 * n] = static_cast<int64_t>(layout.total_bytes);
    if (cache != nullptr) {
      cache->insert(cache->begin(), fresh.begin(), fresh.end());
      if (cache->size() > kKeptArenaLayouts * entry) cache->resize(kKeptArenaLayouts * entry);
    } else if (slot != nullptr) {
      *slot = Any::Shape(std::move(fresh));
      cache = &static_cast<ShapeObj*>(slot->object().get())->dims;
    } else {
      // Outside a context call: nothing to keep the layout in.
      for (size_t i = 0; i < n; ++i) f.heap[dst + i] = fresh[n + i];
      return KeptStorage(f, code, args[0].value, fresh[2 * n], function, "vm.builtin.alloc_arena", out);
    }
  }
  for (size_t i = 0; i < n; ++i) f.heap[dst + i] = (*cache)[n + i];
  return KeptStorage(f, code, args[0].value, (*cache)[2 * n], function, "vm.builtin.alloc_arena", out);
}

Any MakeTuple(const Arg* args, uint32_t num_args, const Frame& f, const ValueSource& src,
              const DecodedFunction& code) {
  return TupleAtSite(ReuseSlot(args, code), code.function_index, static_cast<uint32_t>(args - code.args.data()),
                     num_args, [&](uint32_t i) {
                       Any tmp;
                       return ArgValue(args[i], f, src, &tmp);
                     });
}

// A compact tensor of `shape` and `dtype` at byte `offset` of the storage
// `block`, made by the call site whose reuse slot is `slot` (kept for its
// next call; null outside a context call), after
// checking that it fits the `room` bytes there: tensor_view and arena_view.
Status ViewOfStorage(const Tensor& block, uint64_t offset, uint64_t room, Span<const int64_t> dims, DType dtype,
                     Any* slot, const std::string& function, const char* builtin, const char* planned_by, Any* out) {
  uint64_t capacity = static_cast<uint64_t>(block.shape()[0]);
  if (offset <= capacity && capacity - offset < room) room = capacity - offset;
  uint64_t nbytes = 0;
  if (!TensorBytes(dims, dtype, &nbytes)) {
    return InvalidArgument(StrFormat("%s: %s: cannot allocate a %s%s tensor", function.c_str(), builtin,
                                     DTypeToString(dtype).c_str(), ShapeToString(dims).c_str()));
  }
  if (nbytes > room || offset > capacity) {
    return InvalidArgument(StrFormat("%s: a %s%s tensor does not fit the %llu bytes %s", function.c_str(),
                                     DTypeToString(dtype).c_str(), ShapeToString(dims).c_str(),
                                     static_cast<unsigned long long>(offset > capacity ? 0 : room), planned_by));
  }
  void* data = static_cast<uint8_t*>(block.raw_data()) + offset;
  if (slot != nullptr && slot->is_tensor() && HeldOnlyBySlot(*slot)) {
    const TensorObj* o = slot->tensor_obj();
    if (o->dl.data == data && o->owner.get() == static_cast<void*>(block.object().get()) &&
        DType::FromDL(o->dl.dtype) == dtype && std::equal(o->shape.begin(), o->shape.end(), dims.begin(), dims.end())) {
      *out = *slot;  // the same view of the same storage as last call
      return Status::Ok();
    }
  }
  Tensor view = Tensor::Borrow(data, dims, dtype, block.object());
  view.object()->dl.device = block.dl()->device;  // device storage gives device views
  *out = Any(view);
  if (slot != nullptr) *slot = *out;
  return Status::Ok();
}

// The storage and shape operands of tensor_view / arena_view.
Status ViewOperands(const Any& storage, const Any& shape, const std::string& function, const char* builtin) {
  if (!storage.is_tensor() || storage.tensor_obj()->dl.ndim != 1) {
    return InvalidArgument(function + ": " + builtin + ": expected a storage, got " + storage.Describe());
  }
  if (!shape.is_shape()) {
    return InvalidArgument(function + ": " + builtin + ": expected a shape, got " + shape.Describe());
  }
  return Status::Ok();
}

Status TensorView(const Arg* args, const Frame& f, const ValueSource& src, const DecodedFunction& code,
                  const std::string& function, Any* out) {
  Any tmp_storage, tmp_shape;
  const Any& storage = ArgValue(args[0], f, src, &tmp_storage);
  const Any& shape = ArgValue(args[3], f, src, &tmp_shape);
  KILN_RETURN_IF_ERROR(ViewOperands(storage, shape, function, "vm.builtin.tensor_view"));
  DType dtype{static_cast<uint8_t>(args[4].value), static_cast<uint8_t>(args[5].value),
              static_cast<uint16_t>(args[6].value)};
  uint64_t room = args[2].value >= 0 ? static_cast<uint64_t>(args[2].value) : UINT64_MAX;
  return ViewOfStorage(storage.tensor(), static_cast<uint64_t>(args[1].value), room, shape.shape_dims(), dtype,
                       ReuseSlot(args, code), function, "vm.builtin.tensor_view", "planned for it; a symbolic dimension is larger than the upper bound the memory plan assumed "
                       "(tir_var_upper_bound or --bound)",
                       out);
}

// arena_view and arena_tensor: the view at the offset alloc_arena wrote to
// heap[offset_slot], of `dims` (operands 1-3 and 5-7 are laid out alike).
Status ViewOfArena(const Arg* args, const Any& storage, Span<const int64_t> dims, const Frame& f, Any* slot,
                   const std::string& function, const char* builtin, Any* out) {
  DType dtype{static_cast<uint8_t>(args[5].value), static_cast<uint8_t>(args[6].value),
              static_cast<uint16_t>(args[7].value)};
  int64_t size = args[2].value == static_cast<int64_t>(ShapeMode::kLoadFromHeap) ? f.heap[args[3].value] : args[3].value;
  // A negative heap value (never written by alloc_arena) is outside any storage.
  uint64_t offset = static_cast<uint64_t>(f.heap[args[1].value]);
  uint64_t room = size >= 0 ? static_cast<uint64_t>(size) : 0;
  return ViewOfStorage(storage.tensor(), offset, room, dims, dtype, slot, function, builtin,
                       "the call-time arena laid out for it", out);
}

Status ArenaView(const Arg* args, const Frame& f, const ValueSource& src, const DecodedFunction& code,
                 const std::string& function, Any* out) {
  Any tmp_storage, tmp_shape;
  const Any& storage = ArgValue(args[0], f, src, &tmp_storage);
  const Any& shape = ArgValue(args[4], f, src, &tmp_shape);
  KILN_RETURN_IF_ERROR(ViewOperands(storage, shape, function, "vm.builtin.arena_view"));
  return ViewOfArena(args, storage, shape.shape_dims(), f, ReuseSlot(args, code), function, "vm.builtin.arena_view",
                     out);
}

// The storage operand of arena_tensor / arena_tensors.
Status ArenaStorage(const Any& storage, const std::string& function, const char* builtin) {
  if (!storage.is_tensor() || storage.tensor_obj()->dl.ndim != 1) {
    return InvalidArgument(function + ": " + builtin + ": expected a storage, got " + storage.Describe());
  }
  return Status::Ok();
}

// The view of arena_tensor's operands at `args` (args[1..], args[0] unread):
// the dimensions are read from the heap into the stack, so no shape object
// is made, kept or touched.
Status ArenaTensorAt(const Arg* args, const Any& storage, const Frame& f, Any* slot, const std::string& function,
                     const char* builtin, Any* out) {
  int64_t dims[kMaxArenaTensorDims];  // the verifier bounds ndim
  const size_t ndim = static_cast<size_t>(args[4].value);
  for (size_t i = 0; i < ndim; ++i) {
    int64_t mode = args[8 + 2 * i].value, v = args[9 + 2 * i].value;
    dims[i] = mode == static_cast<int64_t>(ShapeMode::kLoadFromHeap) ? f.heap[v] : v;
  }
  return ViewOfArena(args, storage, Span<const int64_t>(dims, ndim), f, slot, function, builtin, out);
}

// arena_view with its shape as (mode, value) pairs (builtins.def).
Status ArenaTensor(const Arg* args, const Frame& f, const ValueSource& src, const DecodedFunction& code,
                   const std::string& function, Any* out) {
  Any tmp_storage;
  const Any& storage = ArgValue(args[0], f, src, &tmp_storage);
  KILN_RETURN_IF_ERROR(ArenaStorage(storage, function, "vm.builtin.arena_tensor"));
  return ArenaTensorAt(args, storage, f, ReuseSlot(args, code), function, "vm.builtin.arena_tensor", out);
}

// Many arena_tensor views in one call, each written to its register: made
// in the prologue, one after the other, rather than one builtin call between
// every two kernels, where each finds its reuse slot, view and code evicted
// from the caches by the kernel before it (builtins.def).
Status ArenaTensors(const Arg* args, uint32_t num_args, Frame& f, const ValueSource& src, const DecodedFunction& code,
                    const std::string& function) {
  // A copy: a group may name the storage's own register as its destination.
  Any tmp_storage;
  const Any storage = ArgValue(args[0], f, src, &tmp_storage);
  KILN_RETURN_IF_ERROR(ArenaStorage(storage, function, "vm.builtin.arena_tensors"));
  // The reuse slots of the call's arguments, looked up once: a group's slot
  // is the one at its own offset.
  Any* slots = ReuseSlot(args, code);
  for (const Arg* g = args + 1; g < args + num_args; g += 8 + 2 * g[4].value) {
    // Each group is arena_tensor's operands with its register in place of
    // the storage.
    KILN_RETURN_IF_ERROR(ArenaTensorAt(g, storage, f, slots != nullptr ? slots + (g - args) : nullptr, function,
                                       "vm.builtin.arena_tensors", &f.regs[g[0].value]));
  }
  return Status::Ok();
}

// storage_tensors(index, size, [reg, offset, slot_bytes, ndim, dtype..., pairs...]*k):
// the views of a static memory plan, made in one call in the prologue. A
// static program made each with make_shape + alloc_storage + tensor_view,
// three builtin calls between two kernels (builtins.def).
Status StorageTensors(const Arg* args, uint32_t num_args, Frame& f, const DecodedFunction& code,
                      const std::string& function) {
  Any storage;
  KILN_RETURN_IF_ERROR(
      KeptStorage(f, code, args[0].value, args[1].value, function, "vm.builtin.storage_tensors", &storage));
  int64_t dims[kMaxArenaTensorDims];  // the verifier bounds ndim
  Any* slots = ReuseSlot(args, code);  // the call's reuse slots, looked up once
  for (const Arg* g = args + 2; g < args + num_args; g += 7 + 2 * g[3].value) {
    const size_t ndim = static_cast<size_t>(g[3].value);
    for (size_t i = 0; i < ndim; ++i) {
      int64_t mode = g[7 + 2 * i].value, v = g[8 + 2 * i].value;
      dims[i] = mode == static_cast<int64_t>(ShapeMode::kLoadFromHeap) ? f.heap[v] : v;
    }
    DType dtype{static_cast<uint8_t>(g[4].value), static_cast<uint8_t>(g[5].value), static_cast<uint16_t>(g[6].value)};
    uint64_t room = g[2].value >= 0 ? static_cast<uint64_t>(g[2].value) : UINT64_MAX;
    // Each group's reuse slot is its own (the group's offset): a call whose
    // views are those of the last call makes no object.
    KILN_RETURN_IF_ERROR(ViewOfStorage(storage.tensor(), static_cast<uint64_t>(g[1].value), room,
                                       Span<const int64_t>(dims, ndim), dtype,
                                       slots != nullptr ? slots + (g - args) : nullptr, function,
                                       "vm.builtin.storage_tensors",
                                       "planned for it; a symbolic dimension is larger than the upper bound the memory "
                                       "plan assumed (tir_var_upper_bound or --bound)",
                                       &f.regs[g[0].value]));
  }
  return Status::Ok();
}

// A view of the leading elements of a compact tensor (builtins.def). The
// call site keeps its view, like tensor_view, and hands it out again (pointed
// at this call's tensor) while only the site holds it; the view lets go of
// its tensor when the next call begins, so that the tensor's own site can
// reuse it too.
Status ReshapeView(const Arg* args, const Frame& f, const ValueSource& src, const DecodedFunction& code,
                   const std::string& function, Any* out) {
  Any tmp_value, tmp_shape;
  const Any& value = ArgValue(args[0], f, src, &tmp_value);
  const Any& shape = ArgValue(args[1], f, src, &tmp_shape);
  if (!value.is_tensor() || !value.tensor().IsCompact()) {
    return InvalidArgument(function + ": vm.builtin.reshape_view: expected a compact tensor, got " + value.Describe());
  }
  if (!shape.is_shape()) {
    return InvalidArgument(function + ": vm.builtin.reshape_view: expected a shape, got " + shape.Describe());
  }
  Tensor t = value.tensor();
  DType dtype = t.dtype();
  uint64_t want = 0;
  if (!TensorBytes(shape.shape_dims(), dtype, &want) || want > t.NumBytes()) {
    return InvalidArgument(StrFormat("%s: vm.builtin.reshape_view: a %s tensor cannot be viewed as %s%s",
                                     function.c_str(), t.TypeString().c_str(), DTypeToString(dtype).c_str(),
                                     ShapeToString(shape.shape_dims()).c_str()));
  }
  void* data = t.raw_data();
  Any* slot = ReuseSlot(args, code);
  if (slot != nullptr && slot->is_tensor() && HeldOnlyBySlot(*slot)) {
    // Last call's view, released when this call began (call_state.h): point
    // it at this call's tensor.
    auto* o = static_cast<TensorObj*>(slot->object().get());
    if (DType::FromDL(o->dl.dtype) == dtype && o->shape == shape.shape_dims() &&
        o->dl.device.device_type == t.dl()->device.device_type && o->dl.device.device_id == t.dl()->device.device_id) {
      o->dl.data = data;
      o->owner = t.object();
      *out = *slot;
      return Status::Ok();
    }
  }
  Tensor view = Tensor::Borrow(data, shape.shape_dims(), dtype, t.object());
  view.object()->dl.device = t.dl()->device;
  *out = Any(view);
  if (slot != nullptr) {
    if (slot->is_none()) {
      CurrentCallState()->release_sites.push_back({code.function_index, static_cast<uint32_t>(args - code.args.data())});
    }
    *slot = *out;
  }
  return Status::Ok();
}

Status ToBool(const Any& v, const std::string& function, Any* out) {
  if (v.is_int()) {
    *out = Any(v.int_value() != 0);
    return Status::Ok();
  }
  if (v.is_float()) {
    *out = Any(v.float_value() != 0.0);
    return Status::Ok();
  }
  if (v.is_tensor() && v.tensor_obj()->dl.ndim == 0) {
    // A device tensor is copied to the host, after the kernels that wrote it.
    KILN_ASSIGN_OR_RETURN(Tensor t, ReadableOnHost(v.tensor(), CallDeviceMemory(), function + ": vm.builtin.to_bool"));
    DType d = t.dtype();
    const void* p = t.raw_data();
    bool b = false;
    if (d.lanes != 1) return InvalidArgument(function + ": vm.builtin.to_bool: vector dtypes have no truth value");
    if (d.code == kDLFloat && d.bits == 32) {
      float x;
      std::memcpy(&x, p, 4);
      b = x != 0;
    } else if (d.code == kDLFloat && d.bits == 64) {
      double x;
      std::memcpy(&x, p, 8);
      b = x != 0;
    } else if ((d.code == kDLInt || d.code == kDLUInt) && (d.bits == 1 || d.bits == 8 || d.bits == 16 ||
                                                          d.bits == 32 || d.bits == 64)) {
      uint64_t x = 0;
      std::memcpy(&x, p, d.bytes());  // non-zero in any byte <=> non-zero
      b = x != 0;
    } else {
      return InvalidArgument(function + ": vm.builtin.to_bool: no truth value for dtype " + DTypeToString(d));
    }
    *out = Any(b);
    return Status::Ok();
  }
  return InvalidArgument(function + ": vm.builtin.to_bool: expected an int, a float or a 0-d tensor, got " +
                         v.Describe());
}

}  // namespace

const char* BuiltinName(Builtin b) {
  int32_t i = static_cast<int32_t>(b);
  if (i < 0 || i >= static_cast<int32_t>(Builtin::kCount)) return "vm.builtin.unknown";
  return kBuiltinNames[i];
}

int32_t LookupBuiltin(const std::string& name) {
  for (int32_t i = 0; i < static_cast<int32_t>(Builtin::kCount); ++i) {
    if (name == kBuiltinNames[i]) return i;
  }
  return -1;
}

Status RunBuiltin(Builtin b, const Arg* args, uint32_t num_args, Frame& frame, const ValueSource& src,
                  const std::string& function, const DecodedFunction& code, Any* out) {
  switch (b) {
    case Builtin::kCheckTensor:
      return CheckTensor(args, frame, src);
    case Builtin::kMatchShape:
      return MatchShape(args, frame, src, code, false);
    case Builtin::kMatchShapeExplained:
      return MatchShape(args, frame, src, code, true);
    case Builtin::kMakeShape:
      *out = MakeShape(args, frame, code);
      return Status::Ok();
    case Builtin::kShapeArith:
      return ShapeArith(args, num_args, frame, code, function);
    case Builtin::kAllocTensor:
      return AllocTensor(args, frame, src, code, function, out);
    case Builtin::kTupleGetItem: {
      Any tmp;
      const Any& t = ArgValue(args[0], frame, src, &tmp);
      if (!t.is_tuple()) {
        return InvalidArgument(function + ": vm.builtin.tuple_getitem: expected a tuple, got " + t.Describe());
      }
      int64_t i = args[1].value;
      if (static_cast<uint64_t>(i) >= t.tuple_fields().size()) {
        return InvalidArgument(StrFormat("%s: vm.builtin.tuple_getitem: index %lld out of range for a tuple of %zu",
                                         function.c_str(), static_cast<long long>(i), t.tuple_fields().size()));
      }
      *out = t.tuple_fields()[i];
      return Status::Ok();
    }
    case Builtin::kMakeTuple:
      *out = MakeTuple(args, num_args, frame, src, code);
      return Status::Ok();
    case Builtin::kCopy: {
      Any tmp;
      *out = ArgValue(args[0], frame, src, &tmp);
      return Status::Ok();
    }
    case Builtin::kToBool: {
      Any tmp;
      return ToBool(ArgValue(args[0], frame, src, &tmp), function, out);
    }
    case Builtin::kAllocStorage:
      return AllocStorage(args, frame, code, function, out);
    case Builtin::kTensorView:
      return TensorView(args, frame, src, code, function, out);
    case Builtin::kAllocArena:
      return AllocArena(args, frame, code, function, out);
    case Builtin::kArenaView:
      return ArenaView(args, frame, src, code, function, out);
    case Builtin::kArenaTensor:
      return ArenaTensor(args, frame, src, code, function, out);
    case Builtin::kArenaTensors:
      return ArenaTensors(args, num_args, frame, src, code, function);
    case Builtin::kStorageTensors:
      return StorageTensors(args, num_args, frame, code, function);
    case Builtin::kHeapLoad:
      *out = Any(frame.heap[args[0].value]);
      return Status::Ok();
    case Builtin::kHeapLoads:
      for (uint32_t i = 0; i + 1 < num_args; i += 2) frame.regs[args[i].value] = Any(frame.heap[args[i + 1].value]);
      return Status::Ok();
    case Builtin::kTensorToShape: {
      Any tmp;
      return TensorToShape(ArgValue(args[0], frame, src, &tmp), ContextString(args[1], src), out);
    }
    case Builtin::kShapeToTensor: {
      Any tmp;
      CallState* state = CurrentCallState();
      return ShapeToTensor(ArgValue(args[0], frame, src, &tmp), CallAllocator(),
                           state != nullptr ? state->keep_alive : nullptr, function, out);
    }
    case Builtin::kReshapeView:
      return ReshapeView(args, frame, src, code, function, out);
    case Builtin::kRaise:
      return FailedPrecondition(function + ": " + ContextString(args[0], src));
    case Builtin::kLoop:  // runs in the interpreter (vm/loop.cc)
    case Builtin::kCount:
      break;
  }
  return Internal("unknown builtin");
}

}  // namespace vm
}  // namespace kiln
