// Assembler: builds one function's bytecode words (vm/opcodes.def) with
// labels, for the compiler's bytecode emitter and for tests.
//
//   Assembler a;
//   Label done = a.NewLabel();
//   a.If(/*cond=*/2, done);
//   a.Call(/*dst=*/3, /*callable=*/0, {Reg(0), Imm(4)});
//   a.Bind(done);
//   a.Ret(3);
//   std::vector<int64_t> code = a.Finish();   // fails a KILN_CHECK on unbound labels
//
// Thread-compatible.
#ifndef KILN_VM_ASSEMBLER_H_
#define KILN_VM_ASSEMBLER_H_

#include <cstdint>
#include <initializer_list>
#include <vector>

#include "runtime/status.h"
#include "vm/opcodes.h"

namespace kiln {
namespace vm {

struct Label {
  int32_t id = -1;
};

class Assembler {
 public:
  Label NewLabel() {
    labels_.push_back(-1);
    return Label{static_cast<int32_t>(labels_.size() - 1)};
  }
  // The next instruction is the label's target.
  void Bind(Label l) { labels_[l.id] = static_cast<int64_t>(code_.size()); }

  void Call(int64_t dst, int64_t callable, std::initializer_list<int64_t> args) {
    Call(dst, callable, std::vector<int64_t>(args));
  }
  void Call(int64_t dst, int64_t callable, const std::vector<int64_t>& args) {
    code_.push_back(static_cast<int64_t>(Opcode::kCall));
    code_.push_back(dst);
    code_.push_back(callable);
    code_.push_back(static_cast<int64_t>(args.size()));
    code_.insert(code_.end(), args.begin(), args.end());
  }
  void Ret(int64_t reg) {
    code_.push_back(static_cast<int64_t>(Opcode::kRet));
    code_.push_back(reg);
  }
  void Goto(Label target) {
    fixups_.push_back({code_.size() + 1, code_.size(), target.id});
    code_.push_back(static_cast<int64_t>(Opcode::kGoto));
    code_.push_back(0);
  }
  // Falls through when register `cond` is true; jumps to `target` otherwise.
  void If(int64_t cond, Label target) {
    fixups_.push_back({code_.size() + 2, code_.size(), target.id});
    code_.push_back(static_cast<int64_t>(Opcode::kIf));
    code_.push_back(cond);
    code_.push_back(0);
  }
  // Raw words (for tests that build invalid code on purpose).
  void Word(int64_t w) { code_.push_back(w); }

  std::vector<int64_t> Finish() {
    for (const Fixup& f : fixups_) {
      KILN_CHECK(labels_[f.label] >= 0, "label %d used but never bound", f.label);
      code_[f.word] = labels_[f.label] - static_cast<int64_t>(f.instruction);
    }
    fixups_.clear();
    return code_;
  }

 private:
  struct Fixup {
    size_t word;         // where the offset goes
    size_t instruction;  // the jump instruction's first word (offsets are relative to it)
    int32_t label;
  };
  std::vector<int64_t> code_;
  std::vector<int64_t> labels_;
  std::vector<Fixup> fixups_;
};

}  // namespace vm
}  // namespace kiln

#endif  // KILN_VM_ASSEMBLER_H_
