#include "vm/bytecode.h"

#include "vm/builtins.h"

namespace kiln {
namespace vm {
namespace {

class FunctionVerifier {
 public:
  FunctionVerifier(const LinkedProgram& linked, uint32_t index)
      : linked_(linked), p_(linked.program), f_(p_.functions[index]) {
    out_.function_index = index;
  }

  Result<DecodedFunction> Run() {
    out_.register_count = f_.register_count;
    out_.shape_heap_size = f_.shape_heap_size;
    out_.num_params = static_cast<uint32_t>(f_.params.size());
    out_.slot_names.assign(f_.shape_heap_size, std::string());
    if (f_.params.size() > f_.register_count) {
      return Fail(0, StrFormat("%zu parameters but only %u registers", f_.params.size(), f_.register_count));
    }
    const int64_t* words = p_.code.data() + f_.code_begin;
    size_t n = f_.code_end - f_.code_begin;
    if (n == 0) return Fail(0, "the function has no code");
    // Pass 1: decode instructions, remembering where each starts.
    std::vector<int32_t> instr_at(n, -1);
    std::vector<int64_t> jump_word;  // per instruction: absolute target word, or -1
    size_t pc = 0;
    while (pc < n) {
      size_t start = pc;
      word_ = start;
      int64_t op = words[pc++];
      int operands = OpcodeOperandCount(op);
      if (operands == -2) return Fail(start, StrFormat("unknown opcode %lld", static_cast<long long>(op)));
      auto need = [&](size_t k) { return n - pc >= k; };
      Instruction ins;
      ins.op = static_cast<Opcode>(op);
      ins.word = static_cast<uint32_t>(start);
      int64_t target = -1;
      switch (ins.op) {
        case Opcode::kCall: {
          if (!need(3)) return Fail(start, "Call is cut off");
          int64_t dst = words[pc], callable = words[pc + 1], nargs = words[pc + 2];
          pc += 3;
          if (dst != -1) KILN_RETURN_IF_ERROR(CheckRegister(dst));
          if (callable < 0 || static_cast<uint64_t>(callable) >= p_.callables.size()) {
            return Fail(start, StrFormat("callable %lld out of range (%zu callables)", static_cast<long long>(callable),
                                         p_.callables.size()));
          }
          if (nargs < 0 || !need(static_cast<size_t>(nargs))) {
            return Fail(start, StrFormat("Call has %lld arguments but %zu words remain", static_cast<long long>(nargs),
                                         n - pc));
          }
          ins.reg = static_cast<int32_t>(dst);
          ins.callable = static_cast<uint32_t>(callable);
          ins.arg_begin = static_cast<uint32_t>(out_.args.size());
          ins.num_args = static_cast<uint32_t>(nargs);
          for (int64_t i = 0; i < nargs; ++i) {
            word_ = pc;
            KILN_ASSIGN_OR_RETURN(Arg a, DecodeArg(words[pc++]));
            out_.args.push_back(a);
          }
          word_ = start;
          if (ins.num_args > out_.max_call_args) out_.max_call_args = ins.num_args;
          KILN_RETURN_IF_ERROR(CheckCall(ins));
          break;
        }
        case Opcode::kRet:
          if (!need(1)) return Fail(start, "Ret is cut off");
          KILN_RETURN_IF_ERROR(CheckRegister(words[pc]));
          ins.reg = static_cast<int32_t>(words[pc++]);
          break;
        case Opcode::kGoto:
          if (!need(1)) return Fail(start, "Goto is cut off");
          if (__builtin_add_overflow(static_cast<int64_t>(start), words[pc++], &target)) target = -1;
          break;
        case Opcode::kIf:
          if (!need(2)) return Fail(start, "If is cut off");
          KILN_RETURN_IF_ERROR(CheckRegister(words[pc]));
          ins.reg = static_cast<int32_t>(words[pc]);
          if (__builtin_add_overflow(static_cast<int64_t>(start), words[pc + 1], &target)) target = -1;
          pc += 2;
          break;
      }
      instr_at[start] = static_cast<int32_t>(out_.code.size());
      jump_word.push_back(target);
      out_.code.push_back(ins);
    }
    // Pass 2: jump targets must start an instruction of this function.
    for (size_t i = 0; i < out_.code.size(); ++i) {
      Instruction& ins = out_.code[i];
      if (ins.op != Opcode::kGoto && ins.op != Opcode::kIf) continue;
      int64_t t = jump_word[i];
      if (t < 0 || static_cast<uint64_t>(t) >= n || instr_at[t] < 0) {
        // Find the instruction's word offset for the message.
        size_t at = 0;
        for (size_t w = 0; w < n; ++w) {
          if (instr_at[w] == static_cast<int32_t>(i)) at = w;
        }
        return Fail(at, StrFormat("jump to word %lld, outside the function or not on an instruction boundary",
                                  static_cast<long long>(t)));
      }
      ins.target = static_cast<uint32_t>(instr_at[t]);
    }
    Opcode last = out_.code.back().op;
    if (last != Opcode::kRet && last != Opcode::kGoto) {
      return Fail(n - 1, "the last instruction may fall off the end of the function");
    }
    return std::move(out_);
  }

 private:
  Status Fail(size_t word, const std::string& what) const {
    return DataLoss(StrFormat("corrupt bytecode in function '%s' at word %zu: %s", f_.name.c_str(), word,
                              what.c_str()));
  }

  Status CheckRegister(int64_t r) const {
    if (r < 0 || r >= static_cast<int64_t>(f_.register_count)) {
      return Fail(word_, StrFormat("register %lld out of range (%u registers)", static_cast<long long>(r),
                                   f_.register_count));
    }
    return Status::Ok();
  }

  Result<Arg> DecodeArg(int64_t w) const {
    uint8_t kind = ArgWordKind(w);
    int64_t v = ArgWordValue(w);
    if (kind >= kArgKindCount) return Fail(word_, StrFormat("argument word of unknown kind %d", kind));
    Arg a{static_cast<ArgKind>(kind), v};
    switch (a.kind) {
      case ArgKind::kRegister:
        KILN_RETURN_IF_ERROR(CheckRegister(v));
        break;
      case ArgKind::kImmediate:
        break;
      case ArgKind::kConstant:
        if (v < 0 || static_cast<uint64_t>(v) >= p_.constants.size()) {
          return Fail(word_, StrFormat("constant %lld out of range (%zu constants)", static_cast<long long>(v),
                                       p_.constants.size()));
        }
        break;
      case ArgKind::kCallable:
        if (v < 0 || static_cast<uint64_t>(v) >= p_.callables.size()) {
          return Fail(word_, StrFormat("callable %lld out of range (%zu callables)", static_cast<long long>(v),
                                       p_.callables.size()));
        }
        if (p_.callables[v].kind == CallableKind::kBuiltin) {
          return Fail(word_, "a builtin cannot be passed as a value");
        }
        break;
    }
    return a;
  }

  const Arg* ArgsOf(const Instruction& ins) const { return out_.args.data() + ins.arg_begin; }

  Status NeedImmediate(const Instruction& ins, uint32_t i, const char* what, int64_t lo, int64_t hi) const {
    const Arg& a = ArgsOf(ins)[i];
    if (a.kind != ArgKind::kImmediate) return Fail(word_, StrFormat("%s must be an immediate", what));
    if (a.value < lo || a.value > hi) {
      return Fail(word_, StrFormat("%s is %lld, outside [%lld, %lld]", what, static_cast<long long>(a.value),
                                   static_cast<long long>(lo), static_cast<long long>(hi)));
    }
    return Status::Ok();
  }

  Status NeedStringConstant(const Instruction& ins, uint32_t i, const char* what) const {
    const Arg& a = ArgsOf(ins)[i];
    if (a.kind != ArgKind::kConstant || p_.constants[a.value].kind != ProgramConstantKind::kString) {
      return Fail(word_, StrFormat("%s must be a string constant", what));
    }
    return Status::Ok();
  }

  Status NeedCount(const Instruction& ins, const char* name, uint32_t expected) const {
    if (ins.num_args != expected) {
      return Fail(word_, StrFormat("%s takes %u arguments, got %u", name, expected, ins.num_args));
    }
    return Status::Ok();
  }

  // A heap slot operand: `mode_is_slot` says whether v is a slot index.
  Status CheckSlot(const Instruction& ins, uint32_t i, const char* what) const {
    return NeedImmediate(ins, i, what, 0, static_cast<int64_t>(f_.shape_heap_size) - 1);
  }

  // A make_shape (mode, value) pair at `m`.
  Status CheckShapePair(const Instruction& ins, uint32_t m) const {
    KILN_RETURN_IF_ERROR(NeedImmediate(ins, m, "mode", 0, 1));
    if (ArgsOf(ins)[m].value == 1) return CheckSlot(ins, m + 1, "shape-heap slot");
    return NeedImmediate(ins, m + 1, "value", kArgValueMin, kArgValueMax);
  }

  // arena_tensor's operands 1-7 (offset slot to dtype), at `at` + 1.. (0
  // for arena_tensor, a group's first word for arena_tensors).
  Status CheckArenaTensor(const Instruction& ins, uint32_t at) const {
    KILN_RETURN_IF_ERROR(CheckSlot(ins, at + 1, "offset slot"));
    KILN_RETURN_IF_ERROR(NeedImmediate(ins, at + 2, "mode", 0, 1));
    if (ArgsOf(ins)[at + 2].value == 1) {
      KILN_RETURN_IF_ERROR(CheckSlot(ins, at + 3, "shape-heap slot"));
    } else {
      KILN_RETURN_IF_ERROR(NeedImmediate(ins, at + 3, "size", 0, kArgValueMax));
    }
    KILN_RETURN_IF_ERROR(NeedImmediate(ins, at + 4, "ndim", 0, kMaxArenaTensorDims));
    KILN_RETURN_IF_ERROR(NeedImmediate(ins, at + 5, "dtype code", 0, 4));
    KILN_RETURN_IF_ERROR(NeedImmediate(ins, at + 6, "dtype bits", 1, 64));
    return NeedImmediate(ins, at + 7, "dtype lanes", 1, 64);
  }

  // ndim-prefixed (mode, value) pairs starting at `first`.
  // With `strings_per_dim`, that many string constants per dimension follow
  // the pairs (match_shape_explained's messages).
  Status CheckPairs(const Instruction& ins, const char* name, uint32_t ndim_at, int64_t max_mode,
                    bool modes_with_slot_1_2, uint32_t strings_per_dim = 0) const {
    KILN_RETURN_IF_ERROR(NeedImmediate(ins, ndim_at, "ndim", 0, 64));
    int64_t ndim = ArgsOf(ins)[ndim_at].value;
    uint32_t expected = ndim_at + 1 + static_cast<uint32_t>((2 + strings_per_dim) * ndim);
    KILN_RETURN_IF_ERROR(NeedCount(ins, name, expected));
    for (uint32_t i = ndim_at + 1 + static_cast<uint32_t>(2 * ndim); i < expected; ++i) {
      KILN_RETURN_IF_ERROR(NeedStringConstant(ins, i, "a message"));
    }
    for (int64_t d = 0; d < ndim; ++d) {
      uint32_t m = ndim_at + 1 + static_cast<uint32_t>(2 * d);
      KILN_RETURN_IF_ERROR(NeedImmediate(ins, m, "mode", 0, max_mode));
      int64_t mode = ArgsOf(ins)[m].value;
      bool slot = modes_with_slot_1_2 ? (mode == 1 || mode == 2) : mode == 1;
      if (slot) {
        KILN_RETURN_IF_ERROR(CheckSlot(ins, m + 1, "shape-heap slot"));
      } else {
        KILN_RETURN_IF_ERROR(NeedImmediate(ins, m + 1, "value", kArgValueMin, kArgValueMax));
      }
    }
    return Status::Ok();
  }

  // When match_shape stores a parameter's dimension into a slot, the
  // parameter's dimension text ("n") names the slot for error messages.
  void NameSlots(const Instruction& ins) {
    const Arg* a = ArgsOf(ins);
    if (a[0].kind != ArgKind::kRegister || a[0].value >= static_cast<int64_t>(f_.params.size())) return;
    const ProgramValueInfo& param = f_.params[a[0].value];
    int64_t ndim = a[2].value;
    if (static_cast<int64_t>(param.dims.size()) != ndim) return;
    for (int64_t d = 0; d < ndim; ++d) {
      if (a[3 + 2 * d].value != static_cast<int64_t>(MatchMode::kStoreToHeap)) continue;
      std::string& name = out_.slot_names[a[4 + 2 * d].value];
      if (name.empty()) name = param.dims[d];
    }
  }

  Status CheckCall(const Instruction& ins) {
    const ProgramCallable& c = p_.callables[ins.callable];
    const ResolvedCallable& r = linked_.callables[ins.callable];
    switch (c.kind) {
      case CallableKind::kFunction: {
        size_t params = p_.functions[c.function_index].params.size();
        if (ins.num_args != params) {
          return Fail(word_, StrFormat("call to '%s' passes %u arguments; it takes %zu", c.name.c_str(), ins.num_args,
                                       params));
        }
        return Status::Ok();
      }
      case CallableKind::kKernel:
        if (r.kernel_num_args >= 0 && ins.num_args != static_cast<uint32_t>(r.kernel_num_args)) {
          return Fail(word_, StrFormat("kernel '%s' takes %d arguments, got %u", c.name.c_str(), r.kernel_num_args,
                                       ins.num_args));
        }
        for (uint32_t i = 0; i < ins.num_args; ++i) {
          const Arg& a = ArgsOf(ins)[i];
          if (a.kind == ArgKind::kCallable) return Fail(word_, "kernels take no function arguments");
          if (a.kind == ArgKind::kConstant) {
            ProgramConstantKind k = p_.constants[a.value].kind;
            if (k != ProgramConstantKind::kTensor && k != ProgramConstantKind::kInt && k != ProgramConstantKind::kFloat) {
              return Fail(word_, "kernels take only tensor, int and float constants");
            }
          }
        }
        return Status::Ok();
      case CallableKind::kPacked:
        return Status::Ok();
      case CallableKind::kBuiltin:
        return CheckBuiltin(ins, r.builtin);
    }
    return Status::Ok();
  }

  Status CheckBuiltin(const Instruction& ins, int32_t id) {
    if (id < 0 || id >= static_cast<int32_t>(Builtin::kCount)) {
      return Fail(word_, "builtin '" + p_.callables[ins.callable].name + "' is not resolved");
    }
    Builtin b = static_cast<Builtin>(id);
    const char* name = BuiltinName(b);
    switch (b) {
      case Builtin::kCheckTensor:
        KILN_RETURN_IF_ERROR(NeedCount(ins, name, 6));
        KILN_RETURN_IF_ERROR(NeedImmediate(ins, 1, "ndim", -1, 64));
        KILN_RETURN_IF_ERROR(NeedImmediate(ins, 2, "dtype code", -1, 255));
        KILN_RETURN_IF_ERROR(NeedImmediate(ins, 3, "dtype bits", -1, 255));
        KILN_RETURN_IF_ERROR(NeedImmediate(ins, 4, "dtype lanes", -1, 65535));
        return NeedStringConstant(ins, 5, "the context");
      case Builtin::kMatchShape:
      case Builtin::kMatchShapeExplained:
        if (ins.num_args < 3) return Fail(word_, StrFormat("%s takes at least 3 arguments", name));
        KILN_RETURN_IF_ERROR(NeedStringConstant(ins, 1, "the context"));
        KILN_RETURN_IF_ERROR(CheckPairs(ins, name, 2, 3, /*modes_with_slot_1_2=*/true,
                                        b == Builtin::kMatchShapeExplained ? 1 : 0));
        NameSlots(ins);
        return Status::Ok();
      case Builtin::kMakeShape:
        if (ins.num_args < 1) return Fail(word_, StrFormat("%s takes at least 1 argument", name));
        return CheckPairs(ins, name, 0, 1, /*modes_with_slot_1_2=*/false);
      case Builtin::kShapeArith: {
        if (ins.num_args == 0 || ins.num_args % 6 != 0) {
          return Fail(word_, StrFormat("%s takes groups of 6 arguments, got %u", name, ins.num_args));
        }
        for (uint32_t g = 0; g < ins.num_args; g += 6) {
          KILN_RETURN_IF_ERROR(CheckSlot(ins, g, "destination slot"));
          KILN_RETURN_IF_ERROR(NeedImmediate(ins, g + 1, "op", 0, 14));
          for (uint32_t i : {g + 2, g + 4}) {
            KILN_RETURN_IF_ERROR(NeedImmediate(ins, i, "mode", 0, 1));
            if (ArgsOf(ins)[i].value == 1) {
              KILN_RETURN_IF_ERROR(CheckSlot(ins, i + 1, "shape-heap slot"));
            } else {
              KILN_RETURN_IF_ERROR(NeedImmediate(ins, i + 1, "value", kArgValueMin, kArgValueMax));
            }
          }
        }
        return Status::Ok();
      }
      case Builtin::kAllocTensor: {
        KILN_RETURN_IF_ERROR(NeedCount(ins, name, 4));
        KILN_RETURN_IF_ERROR(NeedImmediate(ins, 1, "dtype code", 0, 4));
        KILN_RETURN_IF_ERROR(NeedImmediate(ins, 2, "dtype bits", 1, 64));
        KILN_RETURN_IF_ERROR(NeedImmediate(ins, 3, "dtype lanes", 1, 64));
        return Status::Ok();
      }
      case Builtin::kAllocStorage: {
        KILN_RETURN_IF_ERROR(NeedCount(ins, name, 3));
        KILN_RETURN_IF_ERROR(NeedImmediate(ins, 0, "storage index", 0, kMaxStorages - 1));
        KILN_RETURN_IF_ERROR(NeedImmediate(ins, 1, "mode", 0, 1));
        if (ArgsOf(ins)[1].value == 1) {
          KILN_RETURN_IF_ERROR(CheckSlot(ins, 2, "shape-heap slot"));
        } else {
          KILN_RETURN_IF_ERROR(NeedImmediate(ins, 2, "size", 0, kArgValueMax));
        }
        uint32_t used = static_cast<uint32_t>(ArgsOf(ins)[0].value) + 1;
        if (used > out_.num_storages) out_.num_storages = used;
        return Status::Ok();
      }
      case Builtin::kTensorView:
        KILN_RETURN_IF_ERROR(NeedCount(ins, name, 7));
        KILN_RETURN_IF_ERROR(NeedImmediate(ins, 1, "offset", 0, kArgValueMax));
        KILN_RETURN_IF_ERROR(NeedImmediate(ins, 2, "slot size", -1, kArgValueMax));
        KILN_RETURN_IF_ERROR(NeedImmediate(ins, 4, "dtype code", 0, 4));
        KILN_RETURN_IF_ERROR(NeedImmediate(ins, 5, "dtype bits", 1, 64));
        return NeedImmediate(ins, 6, "dtype lanes", 1, 64);
      case Builtin::kAllocArena: {
        if (ins.num_args < 3) return Fail(word_, StrFormat("%s takes at least 3 arguments", name));
        KILN_RETURN_IF_ERROR(NeedImmediate(ins, 0, "storage index", 0, kMaxStorages - 1));
        KILN_RETURN_IF_ERROR(NeedImmediate(ins, 2, "buffer count", 0, (ins.num_args - 3) / 4));
        const Arg* a = ArgsOf(ins);
        const int64_t n = a[2].value;
        KILN_RETURN_IF_ERROR(NeedCount(ins, name, 3 + 4 * static_cast<uint32_t>(n)));
        // heap[dst_slot .. dst_slot + n - 1] receive the offsets.
        KILN_RETURN_IF_ERROR(NeedImmediate(ins, 1, "destination slot", 0,
                                           static_cast<int64_t>(f_.shape_heap_size) - n));
        for (uint32_t i = 3; i < ins.num_args; i += 4) {
          KILN_RETURN_IF_ERROR(NeedImmediate(ins, i, "mode", 0, 1));
          if (a[i].value == 1) {
            KILN_RETURN_IF_ERROR(CheckSlot(ins, i + 1, "shape-heap slot"));
          } else {
            KILN_RETURN_IF_ERROR(NeedImmediate(ins, i + 1, "size", 0, kArgValueMax));
          }
          KILN_RETURN_IF_ERROR(NeedImmediate(ins, i + 2, "first position", 0, kArgValueMax));
          KILN_RETURN_IF_ERROR(NeedImmediate(ins, i + 3, "last position", a[i + 2].value, kArgValueMax));
        }
        uint32_t used = static_cast<uint32_t>(a[0].value) + 1;
        if (used > out_.num_storages) out_.num_storages = used;
        return Status::Ok();
      }
      case Builtin::kArenaView:
        KILN_RETURN_IF_ERROR(NeedCount(ins, name, 8));
        KILN_RETURN_IF_ERROR(CheckSlot(ins, 1, "offset slot"));
        KILN_RETURN_IF_ERROR(NeedImmediate(ins, 2, "mode", 0, 1));
        if (ArgsOf(ins)[2].value == 1) {
          KILN_RETURN_IF_ERROR(CheckSlot(ins, 3, "shape-heap slot"));
        } else {
          KILN_RETURN_IF_ERROR(NeedImmediate(ins, 3, "size", 0, kArgValueMax));
        }
        KILN_RETURN_IF_ERROR(NeedImmediate(ins, 5, "dtype code", 0, 4));
        KILN_RETURN_IF_ERROR(NeedImmediate(ins, 6, "dtype bits", 1, 64));
        return NeedImmediate(ins, 7, "dtype lanes", 1, 64);
      case Builtin::kArenaTensor:
        if (ins.num_args < 8) return Fail(word_, StrFormat("%s takes at least 8 arguments", name));
        KILN_RETURN_IF_ERROR(CheckArenaTensor(ins, 0));
        KILN_RETURN_IF_ERROR(NeedCount(ins, name, 8 + 2 * static_cast<uint32_t>(ArgsOf(ins)[4].value)));
        for (uint32_t m = 8; m < ins.num_args; m += 2) KILN_RETURN_IF_ERROR(CheckShapePair(ins, m));
        return Status::Ok();
      case Builtin::kArenaTensors: {
        if (ins.num_args < 1) return Fail(word_, StrFormat("%s takes at least 1 argument", name));
        uint32_t g = 1;
        while (g < ins.num_args) {
          if (ins.num_args - g < 8) {
            return Fail(word_, StrFormat("%s: a view at argument %u needs at least 8 arguments, got %u", name, g,
                                         ins.num_args - g));
          }
          KILN_RETURN_IF_ERROR(NeedImmediate(ins, g, "destination register", 0,
                                             static_cast<int64_t>(f_.register_count) - 1));
          KILN_RETURN_IF_ERROR(CheckArenaTensor(ins, g));
          const uint32_t next = g + 8 + 2 * static_cast<uint32_t>(ArgsOf(ins)[g + 4].value);
          if (next > ins.num_args) {
            return Fail(word_, StrFormat("%s: a view at argument %u needs %u arguments, got %u", name, g, next - g,
                                         ins.num_args - g));
          }
          for (uint32_t m = g + 8; m < next; m += 2) KILN_RETURN_IF_ERROR(CheckShapePair(ins, m));
          g = next;
        }
        return Status::Ok();
      }
      case Builtin::kStorageTensors: {
        if (ins.num_args < 2) return Fail(word_, StrFormat("%s takes at least 2 arguments", name));
        KILN_RETURN_IF_ERROR(NeedImmediate(ins, 0, "storage index", 0, kMaxStorages - 1));
        KILN_RETURN_IF_ERROR(NeedImmediate(ins, 1, "size", 0, kArgValueMax));
        uint32_t g = 2;
        while (g < ins.num_args) {
          if (ins.num_args - g < 7) {
            return Fail(word_, StrFormat("%s: a view at argument %u needs at least 7 arguments, got %u", name, g,
                                         ins.num_args - g));
          }
          KILN_RETURN_IF_ERROR(NeedImmediate(ins, g, "destination register", 0,
                                             static_cast<int64_t>(f_.register_count) - 1));
          KILN_RETURN_IF_ERROR(NeedImmediate(ins, g + 1, "offset", 0, kArgValueMax));
          KILN_RETURN_IF_ERROR(NeedImmediate(ins, g + 2, "slot size", -1, kArgValueMax));
          KILN_RETURN_IF_ERROR(NeedImmediate(ins, g + 3, "ndim", 0, kMaxArenaTensorDims));
          KILN_RETURN_IF_ERROR(NeedImmediate(ins, g + 4, "dtype code", 0, 4));
          KILN_RETURN_IF_ERROR(NeedImmediate(ins, g + 5, "dtype bits", 1, 64));
          KILN_RETURN_IF_ERROR(NeedImmediate(ins, g + 6, "dtype lanes", 1, 64));
          const uint32_t next = g + 7 + 2 * static_cast<uint32_t>(ArgsOf(ins)[g + 3].value);
          if (next > ins.num_args) {
            return Fail(word_, StrFormat("%s: a view at argument %u needs %u arguments, got %u", name, g, next - g,
                                         ins.num_args - g));
          }
          for (uint32_t m = g + 7; m < next; m += 2) KILN_RETURN_IF_ERROR(CheckShapePair(ins, m));
          g = next;
        }
        uint32_t used = static_cast<uint32_t>(ArgsOf(ins)[0].value) + 1;
        if (used > out_.num_storages) out_.num_storages = used;
        return Status::Ok();
      }
      case Builtin::kHeapLoad:
        KILN_RETURN_IF_ERROR(NeedCount(ins, name, 1));
        return CheckSlot(ins, 0, "shape-heap slot");
      case Builtin::kHeapLoads:
        if (ins.num_args % 2 != 0) {
          return Fail(word_, StrFormat("%s takes (register, slot) pairs, got %u arguments", name, ins.num_args));
        }
        for (uint32_t i = 0; i < ins.num_args; i += 2) {
          KILN_RETURN_IF_ERROR(NeedImmediate(ins, i, "destination register", 0,
                                             static_cast<int64_t>(f_.register_count) - 1));
          KILN_RETURN_IF_ERROR(CheckSlot(ins, i + 1, "shape-heap slot"));
        }
        return Status::Ok();
      case Builtin::kTupleGetItem:
        KILN_RETURN_IF_ERROR(NeedCount(ins, name, 2));
        return NeedImmediate(ins, 1, "index", 0, kArgValueMax);
      case Builtin::kMakeTuple:
        return Status::Ok();
      case Builtin::kReshapeView:
        return NeedCount(ins, name, 2);
      case Builtin::kCopy:
      case Builtin::kToBool:
      case Builtin::kShapeToTensor:
        return NeedCount(ins, name, 1);
      case Builtin::kLoop: {
        if (ins.num_args < 7) return Fail(word_, StrFormat("%s takes at least 7 arguments", name));
        const Arg& body = ArgsOf(ins)[0];
        if (body.kind != ArgKind::kCallable || p_.callables[body.value].kind != CallableKind::kFunction) {
          return Fail(word_, "the body of vm.builtin.loop must be a bytecode function");
        }
        KILN_RETURN_IF_ERROR(NeedImmediate(ins, 1, "flags", 0, 7));
        for (uint32_t i = 2; i < 5; ++i) KILN_RETURN_IF_ERROR(NeedImmediate(ins, i, "count", 0, 65535));
        const Arg* a = ArgsOf(ins);
        uint64_t fixed = 7 + 4 * static_cast<uint64_t>(a[4].value) + a[2].value + a[3].value;
        if (fixed > ins.num_args) return Fail(word_, StrFormat("%s: its counts need %llu arguments, got %u", name,
                                                                static_cast<unsigned long long>(fixed), ins.num_args));
        for (int64_t k = 0; k < a[4].value; ++k) {
          uint32_t at = 8 + 4 * static_cast<uint32_t>(k);
          KILN_RETURN_IF_ERROR(NeedImmediate(ins, at, "dtype code", 0, 4));
          KILN_RETURN_IF_ERROR(NeedImmediate(ins, at + 1, "dtype bits", 1, 64));
          KILN_RETURN_IF_ERROR(NeedImmediate(ins, at + 2, "dtype lanes", 1, 64));
        }
        return Status::Ok();
      }
      case Builtin::kRaise:
        KILN_RETURN_IF_ERROR(NeedCount(ins, name, 1));
        return NeedStringConstant(ins, 0, "the message");
      case Builtin::kTensorToShape:
        KILN_RETURN_IF_ERROR(NeedCount(ins, name, 2));
        return NeedStringConstant(ins, 1, "the context");
      case Builtin::kCount:
        break;
    }
    return Status::Ok();
  }

  const LinkedProgram& linked_;
  const Program& p_;
  const ProgramFunction& f_;
  DecodedFunction out_;
  size_t word_ = 0;  // the word being checked, for messages
};

}  // namespace

Result<std::vector<DecodedFunction>> VerifyAndDecode(const LinkedProgram& linked) {
  std::vector<DecodedFunction> out;
  for (uint32_t i = 0; i < linked.program.functions.size(); ++i) {
    KILN_ASSIGN_OR_RETURN(DecodedFunction f, FunctionVerifier(linked, i).Run());
    out.push_back(std::move(f));
  }
  return out;
}

}  // namespace vm
}  // namespace kiln
