#include "vm/disassembler.h"

#include "vm/opcodes.h"

namespace kiln {
namespace vm {

std::string DisassembleArg(int64_t word) {
  long long v = static_cast<long long>(ArgWordValue(word));
  switch (ArgWordKind(word)) {
    case 0: return StrFormat("r%lld", v);
    case 1: return StrFormat("#%lld", v);
    case 2: return StrFormat("c%lld", v);
    case 3: return StrFormat("@%lld", v);
  }
  return StrFormat("<bad arg 0x%llx>", static_cast<unsigned long long>(word));
}

std::string DisassembleFunction(const Program& p, uint32_t index, const std::string& indent) {
  if (index >= p.functions.size()) return indent + "<no such function>\n";
  const ProgramFunction& f = p.functions[index];
  if (f.code_begin > f.code_end || f.code_end > p.code.size()) return indent + "<code out of range>\n";
  const int64_t* w = p.code.data() + f.code_begin;
  size_t n = f.code_end - f.code_begin;
  std::string out;
  size_t pc = 0;
  while (pc < n) {
    size_t start = pc;
    int64_t op = w[pc++];
    std::string line = indent + StrFormat("%5zu  ", start);
    auto operand = [&](size_t k) -> const int64_t* { return pc + k < n ? &w[pc + k] : nullptr; };
    switch (op) {
      case static_cast<int64_t>(Opcode::kCall): {
        const int64_t *dst = operand(0), *callable = operand(1), *nargs = operand(2);
        if (!dst || !callable || !nargs) {
          out += line + "call <cut off>\n";
          return out;
        }
        pc += 3;
        std::string name = StrFormat("callable#%lld", static_cast<long long>(*callable));
        if (*callable >= 0 && static_cast<uint64_t>(*callable) < p.callables.size()) name = p.callables[*callable].name;
        line += "call ";
        if (*dst >= 0) line += StrFormat("r%lld = ", static_cast<long long>(*dst));
        line += name + "(";
        if (*nargs < 0 || static_cast<uint64_t>(*nargs) > n - pc) {
          out += line + StrFormat("<%lld args, cut off>)\n", static_cast<long long>(*nargs));
          return out;
        }
        for (int64_t i = 0; i < *nargs; ++i) {
          if (i) line += ", ";
          int64_t a = w[pc++];
          line += DisassembleArg(a);
          // Show string constants inline: they are context names.
          if (ArgWordKind(a) == 2) {
            int64_t c = ArgWordValue(a);
            if (c >= 0 && static_cast<uint64_t>(c) < p.constants.size() &&
                p.constants[c].kind == ProgramConstantKind::kString) {
              line += " \"" + p.constants[c].value.string_value() + "\"";
            }
          }
        }
        line += ")";
        break;
      }
      case static_cast<int64_t>(Opcode::kRet):
        if (!operand(0)) {
          out += line + "ret <cut off>\n";
          return out;
        }
        line += StrFormat("ret r%lld", static_cast<long long>(w[pc++]));
        break;
      case static_cast<int64_t>(Opcode::kGoto):
        if (!operand(0)) {
          out += line + "goto <cut off>\n";
          return out;
        }
        line += StrFormat("goto %lld", static_cast<long long>(static_cast<uint64_t>(start) + static_cast<uint64_t>(w[pc++])));
        break;
      case static_cast<int64_t>(Opcode::kIf):
        if (!operand(1)) {
          out += line + "if <cut off>\n";
          return out;
        }
        line += StrFormat("if r%lld else goto %lld", static_cast<long long>(w[pc]),
                          static_cast<long long>(static_cast<uint64_t>(start) + static_cast<uint64_t>(w[pc + 1])));
        pc += 2;
        break;
      default:
        line += StrFormat("<bad opcode %lld>", static_cast<long long>(op));
        break;
    }
    out += line + "\n";
  }
  return out;
}

}  // namespace vm
}  // namespace kiln
