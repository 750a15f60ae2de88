// VM code generation: the bytecode of small modules, decoded word by word
// (vm/opcodes.def) into a readable listing and compared with the expected
// structure, and every user-facing error of vm_codegen.cc.
#include "compiler/relax/vm_codegen.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "compiler/relax/infer_struct_info.h"
#include "compiler/relax/legalize_ops.h"
#include "compiler/text/text.h"

namespace kiln {
namespace relax {
namespace {

// Without memory planning unless `options` asks for it, so the listings
// below show plain allocations; the planned forms have tests of their own.
Result<compiler::VmfbProgram> Codegen(const std::string& src, VMCodegenOptions options = {false, {}}) {
  KILN_ASSIGN_OR_RETURN(ir::IRModule mod, text::ParseModule(src, "t.relax"));
  KILN_ASSIGN_OR_RETURN(mod, InferStructInfo(mod));
  KILN_ASSIGN_OR_RETURN(mod, LegalizeOps(mod, LegalizeOptions{}));
  compiler::VmfbProgram program;
  KILN_RETURN_IF_ERROR(GenerateVMCode(mod, &program, options));
  return program;
}

// One operand word: kind in bits 56..63, a signed 56-bit value below.
std::string Operand(const compiler::VmfbProgram& p, int64_t word) {
  int64_t kind = static_cast<int64_t>(static_cast<uint64_t>(word) >> 56);
  int64_t value = static_cast<int64_t>(static_cast<uint64_t>(word) << 8) >> 8;
  switch (kind) {
    case 0: return "r" + std::to_string(value);
    case 1: return std::to_string(value);
    case 2: {
      if (value < 0 || value >= static_cast<int64_t>(p.constants.size())) return "c<bad " + std::to_string(value) + ">";
      const auto& c = p.constants[value];
      return c.kind == compiler::ConstantKind::kString ? "\"" + c.string_value + "\"" : "c" + std::to_string(value);
    }
    case 3: return "f" + std::to_string(value);
  }
  return "?" + std::to_string(word);
}

std::string CallableName(const compiler::VmfbProgram& p, int64_t index) {
  if (index < 0 || index >= static_cast<int64_t>(p.callables.size())) return "<bad callable>";
  const auto& c = p.callables[index];
  switch (c.kind) {
    case compiler::CallableKind::kBuiltin: return c.name;
    case compiler::CallableKind::kPacked: return "packed " + c.name;
    case compiler::CallableKind::kKernel: return "kernel " + c.name;
    case compiler::CallableKind::kFunction: return "function " + c.name;
  }
  return "?";
}

// Decodes a function's code into one line per instruction:
//   "r4 = vm.builtin.alloc_tensor(r3, 2, 32, 1)", "kernel matmul(r0, r1, r4)", "ret r4",
//   "if r3 else #8", "goto #9" (jump targets as instruction numbers).
// A malformed stream ends the listing with a line saying so.
std::vector<std::string> Disassemble(const compiler::VmfbProgram& p, const compiler::FunctionInfo& f) {
  const std::vector<int64_t>& code = f.code;
  // Pass 1: where each instruction starts.
  std::vector<size_t> starts;
  for (size_t pc = 0; pc < code.size();) {
    starts.push_back(pc);
    int64_t op = code[pc];
    size_t size = op == 1 ? (pc + 3 < code.size() ? 4 + static_cast<size_t>(std::max<int64_t>(code[pc + 3], 0)) : 0)
                  : op == 2 || op == 3 ? 2
                  : op == 4          ? 3
                                     : 0;
    if (size == 0 || pc + size > code.size()) return {"<malformed at word " + std::to_string(pc) + ">"};
    pc += size;
  }
  auto target = [&](size_t pc, int64_t offset) {
    int64_t t = static_cast<int64_t>(pc) + offset;
    for (size_t i = 0; i < starts.size(); ++i)
      if (static_cast<int64_t>(starts[i]) == t) return "#" + std::to_string(i);
    return t == static_cast<int64_t>(code.size()) ? std::string("#end") : "<bad target " + std::to_string(t) + ">";
  };
  // Pass 2: one line each.
  std::vector<std::string> out;
  for (size_t pc : starts) {
    switch (code[pc]) {
      case 1: {  // Call dst callable nargs args...
        int64_t dst = code[pc + 1], callable = code[pc + 2], nargs = code[pc + 3];
        std::string line = dst >= 0 ? "r" + std::to_string(dst) + " = " : "";
        line += CallableName(p, callable) + "(";
        for (int64_t i = 0; i < nargs; ++i) line += (i ? ", " : "") + Operand(p, code[pc + 4 + i]);
        out.push_back(line + ")");
        break;
      }
      case 2: out.push_back("ret r" + std::to_string(code[pc + 1])); break;
      case 3: out.push_back("goto " + target(pc, code[pc + 1])); break;
      case 4: out.push_back("if r" + std::to_string(code[pc + 1]) + " else " + target(pc, code[pc + 2])); break;
    }
  }
  return out;
}

std::string Join(const std::vector<std::string>& lines) {
  std::string s;
  for (const auto& l : lines) s += l + "\n";
  return s;
}

const compiler::FunctionInfo* FindFunction(const compiler::VmfbProgram& p, const std::string& name) {
  for (const auto& f : p.functions)
    if (f.name == name) return &f;
  return nullptr;
}

// Operand modes, spelled out for the expected listings (vm/builtins.def):
// match_shape pairs are (mode, value) with 0 = assert equal to the immediate,
// 1 = store into heap slot, 2 = assert equal to heap slot; make_shape and
// shape_arith pairs use 0 = immediate, 1 = heap slot. check_tensor takes
// (value, ndim, dtype code, bits, lanes, context); float32 is code 2.

TEST(VMCodegen, ArgumentsAreCheckedAndMatchedKernelsGetAllocatedOutputs) {
  Result<compiler::VmfbProgram> p = Codegen(R"(@I.ir_module
class Module:
    @R.function
    def main(x: R.Tensor(("n", 4), dtype="float32"), w: R.Tensor((4, 3), dtype="float32"), b: R.Tensor(("n", 3), dtype="float32")) -> R.Tensor(("n", 3), dtype="float32"):
        n = T.int64()
        with R.dataflow():
            lv = R.matmul(x, w)
            gv = R.add(lv, b)
            R.output(gv)
        return gv
)");
  ASSERT_TRUE(p.ok()) << p.status().message();
  const compiler::FunctionInfo* main = FindFunction(*p, "main");
  ASSERT_NE(main, nullptr);
  EXPECT_EQ(Join(Disassemble(*p, *main)),
            Join({
                "vm.builtin.check_tensor(r0, 2, 2, 32, 1, \"main: argument x\")",
                // n is stored in slot 0; 4 is checked.
                "vm.builtin.match_shape(r0, \"main: argument x\", 2, 1, 0, 0, 4)",
                "vm.builtin.check_tensor(r1, 2, 2, 32, 1, \"main: argument w\")",
                "vm.builtin.match_shape(r1, \"main: argument w\", 2, 0, 4, 0, 3)",
                "vm.builtin.check_tensor(r2, 2, 2, 32, 1, \"main: argument b\")",
                // The second occurrence of n is checked against slot 0.
                "vm.builtin.match_shape(r2, \"main: argument b\", 2, 2, 0, 0, 3)",
                // (n, 3): slot 0, immediate 3.
                "r3 = vm.builtin.make_shape(2, 1, 0, 0, 3)",
                "r4 = vm.builtin.alloc_tensor(r3, 2, 32, 1)",
                "kernel matmul(r0, r1, r4)",
                "r5 = vm.builtin.make_shape(2, 1, 0, 0, 3)",
                "r6 = vm.builtin.alloc_tensor(r5, 2, 32, 1)",
                "kernel add(r4, r2, r6)",
                "ret r6",
            }));
  EXPECT_EQ(main->register_count, 7u);
  EXPECT_EQ(main->shape_heap_size, 1u);
  ASSERT_EQ(main->params.size(), 3u);
  EXPECT_EQ(main->params[0].name, "x");
  EXPECT_EQ(main->params[0].dims, (std::vector<std::string>{"n", "4"}));
  ASSERT_EQ(main->results.size(), 1u);
  EXPECT_EQ(main->results[0].dims, (std::vector<std::string>{"n", "3"}));
  // Kernels carry their parameter counts; each name is interned once.
  int kernels = 0;
  for (const auto& c : p->callables) {
    if (c.kind != compiler::CallableKind::kKernel) continue;
    ++kernels;
    EXPECT_EQ(c.num_args, 3) << c.name;
  }
  EXPECT_EQ(kernels, 2);
}

TEST(VMCodegen, AKernelsOutputsThatAreOnlyProjectedMakeNoTuple) {
  Result<compiler::VmfbProgram> p = Codegen(R"(@I.ir_module
class Module:
    @R.function
    def main(x: R.Tensor((4,), dtype="float32"), c: R.Tensor((), dtype="bool")):
        lv = R.call_dps_packed("split2", (x,), out_sinfo=[R.Tensor((2,), dtype="float32"), R.Tensor((2,), dtype="float32")])
        a = lv[1]
        if c:
            r = lv[0]
        else:
            r = a
        both = R.call_dps_packed("split2", (r,), out_sinfo=[R.Tensor((1,), dtype="float32"), R.Tensor((1,), dtype="float32")])
        first = both[0]
        return (first, both)
)");
  ASSERT_TRUE(p.ok()) << p.status().message();
  EXPECT_EQ(Join(Disassemble(*p, p->functions[0])),
            Join({
                "vm.builtin.check_tensor(r0, 1, 2, 32, 1, \"main: argument x\")",
                "vm.builtin.match_shape(r0, \"main: argument x\", 1, 0, 4)",
                "vm.builtin.check_tensor(r1, 0, 1, 1, 1, \"main: argument c\")",
                "vm.builtin.match_shape(r1, \"main: argument c\", 0)",
                "r2 = vm.builtin.alloc_tensor(c2, 2, 32, 1)",
                "r3 = vm.builtin.alloc_tensor(c2, 2, 32, 1)",
                // lv is only projected, in the If too: its fields are r2 and r3.
                "packed split2(r0, r2, r3)",
                "r4 = vm.builtin.to_bool(r1)",
                "if r4 else #11",
                "r5 = vm.builtin.copy(r2)",
                "goto #12",
                "r5 = vm.builtin.copy(r3)",
                "r6 = vm.builtin.alloc_tensor(c3, 2, 32, 1)",
                "r7 = vm.builtin.alloc_tensor(c3, 2, 32, 1)",
                "packed split2(r5, r6, r7)",
                // both is also used whole: its tuple is made, and both[0] reads it.
                "r8 = vm.builtin.make_tuple(r6, r7)",
                "r9 = vm.builtin.tuple_getitem(r8, 0)",
                "r10 = vm.builtin.make_tuple(r9, r8)",
                "ret r10",
            }));
}

TEST(VMCodegen, AConstantShapeAsATensorIsATensorConstant) {
  Result<compiler::VmfbProgram> p = Codegen(R"(@I.ir_module
class Module:
    @R.function
    def main(x: R.Tensor(("n",), dtype="int64")):
        n = T.int64()
        a = R.shape_to_tensor(R.shape([160, 3]))
        b = R.shape_to_tensor(R.shape([160, 3]))
        c = R.shape_to_tensor(R.shape([n, 3]))
        return (a, b, c)
)");
  ASSERT_TRUE(p.ok()) << p.status().message();
  EXPECT_EQ(Join(Disassemble(*p, p->functions[0])),
            Join({
                "vm.builtin.check_tensor(r0, 1, 0, 64, 1, \"main: argument x\")",
                "vm.builtin.match_shape(r0, \"main: argument x\", 1, 1, 0)",
                // a and b: one int64 tensor constant, made at compile time.
                "r1 = vm.builtin.make_shape(2, 1, 0, 0, 3)",
                "r2 = vm.builtin.shape_to_tensor(r1)",
                "r3 = vm.builtin.make_tuple(c2, c2, r2)",
                "ret r3",
            }));
  ASSERT_GE(p->constants.size(), 3u);
  const compiler::ConstantValue& k = p->constants[2];
  ASSERT_EQ(k.kind, compiler::ConstantKind::kTensor);
  EXPECT_EQ(k.tensor.dtype(), DType::Int64());
  ASSERT_EQ(k.tensor.shape(), (std::vector<int64_t>{2}));
  EXPECT_EQ(k.tensor.data<int64_t>()[0], 160);
  EXPECT_EQ(k.tensor.data<int64_t>()[1], 3);
}

TEST(VMCodegen, CompositeDimensionsAreComputedIntoTemporarySlots) {
  Result<compiler::VmfbProgram> p = Codegen(R"(@I.ir_module
class Module:
    @R.function
    def main(x: R.Tensor(("n", 3), dtype="float32")):
        n = T.int64()
        y = R.call_dps_packed("p", (x,), out_sinfo=R.Tensor((n * 2 + 1, 3), dtype="int8"))
        return y
)");
  ASSERT_TRUE(p.ok()) << p.status().message();
  EXPECT_EQ(Join(Disassemble(*p, p->functions[0])),
            Join({
                "vm.builtin.check_tensor(r0, 2, 2, 32, 1, \"main: argument x\")",
                "vm.builtin.match_shape(r0, \"main: argument x\", 2, 1, 0, 0, 3)",
                // slot1 = slot0 * 2 (op 2 = mul); slot2 = slot1 + 1 (op 0 = add):
                // two groups of one call, in the prologue (n is an argument's).
                "vm.builtin.shape_arith(1, 2, 1, 0, 0, 2, 2, 0, 1, 1, 0, 1)",
                "r1 = vm.builtin.make_shape(2, 1, 2, 0, 3)",
                // int8: DLPack code 0, 8 bits.
                "r2 = vm.builtin.alloc_tensor(r1, 0, 8, 1)",
                "packed p(r0, r2)",
                "ret r2",
            }));
  EXPECT_EQ(p->functions[0].shape_heap_size, 3u);
}

TEST(VMCodegen, TuplesMatchCastAndCallsOfOtherFunctions) {
  Result<compiler::VmfbProgram> p = Codegen(R"(@I.ir_module
class Module:
    @R.function
    def helper(a: R.Tensor(ndim=2, dtype="float32")) -> R.Tensor(ndim=2, dtype="float32"):
        return a

    @R.function
    def main(x: R.Tensor(ndim=2, dtype="float32")):
        m = T.int64()
        cls = Module
        y = R.match_cast(x, R.Tensor((m, 8), dtype="float32"))
        t = (y, x)
        z = t[1]
        h = cls.helper(z)
        return h
)");
  ASSERT_TRUE(p.ok()) << p.status().message();
  ASSERT_EQ(p->functions.size(), 2u);
  EXPECT_EQ(p->functions[0].name, "helper");
  EXPECT_EQ(Join(Disassemble(*p, p->functions[1])),
            Join({
                // Rank and dtype only: no shape to match.
                "vm.builtin.check_tensor(r0, 2, 2, 32, 1, \"main: argument x\")",
                "vm.builtin.check_tensor(r0, 2, 2, 32, 1, \"main: match_cast of y\")",
                "vm.builtin.match_shape(r0, \"main: match_cast of y\", 2, 1, 0, 0, 8)",
                // t is only projected: t[1] is x's register, no tuple is made.
                "r1 = function helper(r0)",
                "ret r1",
            }));
  for (const auto& c : p->callables) {
    if (c.kind == compiler::CallableKind::kFunction) {
      EXPECT_EQ(c.name, "helper");
      EXPECT_EQ(c.function_index, 0u);
      EXPECT_EQ(c.num_args, 1);
    }
  }
}

TEST(VMCodegen, CompositeDimensionsOfBoundVariablesAreChecked) {
  // z's (n * 2) and y's (n + 1) are computed from n (bound by x) and checked;
  // a composite dimension of a variable bound only later is skipped.
  Result<compiler::VmfbProgram> p = Codegen(R"(@I.ir_module
class Module:
    @R.function
    def main(w: R.Tensor(("m * 3",), dtype="float32"), x: R.Tensor(("n",), dtype="float32"), z: R.Tensor(("n * 2",), dtype="float32"), u: R.Tensor(("m",), dtype="float32")):
        n = T.int64()
        m = T.int64()
        y = R.match_cast(u, R.Tensor((n + 1,), dtype="float32"))
        return y
)");
  ASSERT_TRUE(p.ok()) << p.status().message();
  EXPECT_EQ(Join(Disassemble(*p, p->functions[0])),
            Join({
                "vm.builtin.check_tensor(r0, 1, 2, 32, 1, \"main: argument w\")",
                // m is not bound yet: mode 3, no check.
                "vm.builtin.match_shape(r0, \"main: argument w\", 1, 3, 0)",
                "vm.builtin.check_tensor(r1, 1, 2, 32, 1, \"main: argument x\")",
                "vm.builtin.match_shape(r1, \"main: argument x\", 1, 1, 0)",
                "vm.builtin.check_tensor(r2, 1, 2, 32, 1, \"main: argument z\")",
                "vm.builtin.shape_arith(1, 2, 1, 0, 0, 2)",
                "vm.builtin.match_shape(r2, \"main: argument z\", 1, 2, 1)",
                "vm.builtin.check_tensor(r3, 1, 2, 32, 1, \"main: argument u\")",
                "vm.builtin.match_shape(r3, \"main: argument u\", 1, 1, 2)",
                // n + 1: in the prologue, after the arguments' checks.
                "vm.builtin.shape_arith(3, 0, 1, 0, 0, 1)",
                "vm.builtin.check_tensor(r3, 1, 2, 32, 1, \"main: match_cast of y\")",
                "vm.builtin.match_shape(r3, \"main: match_cast of y\", 1, 2, 3)",
                "ret r3",
            }));
}

TEST(VMCodegen, CompositeDimensionsAreComputedOncePerPath) {
  // z's and v's (n * 2): one shape_arith, the second check reads its slot.
  // n * 3 uses only an argument's variable: computed once in the prologue,
  // which dominates both branches of the If and what follows it.
  Result<compiler::VmfbProgram> p = Codegen(R"(@I.ir_module
class Module:
    @R.function
    def main(c: R.Tensor((), dtype="bool"), x: R.Tensor(("n",), dtype="float32"), z: R.Tensor(("n * 2",), dtype="float32"), v: R.Tensor(("n * 2",), dtype="float32")):
        n = T.int64()
        if c:
            a = R.match_cast(x, R.Tensor((n * 3,), dtype="float32"))
            y: R.Tensor(dtype="float32", ndim=1) = a
        else:
            b = R.match_cast(x, R.Tensor((n * 3,), dtype="float32"))
            y: R.Tensor(dtype="float32", ndim=1) = b
        d = R.match_cast(y, R.Tensor((n * 3,), dtype="float32"))
        return d
)");
  ASSERT_TRUE(p.ok()) << p.status().message();
  std::vector<std::string> code = Disassemble(*p, p->functions[0]);
  std::vector<std::string> arith;
  for (const std::string& line : code)
    if (line.find("shape_arith") != std::string::npos) arith.push_back(line);
  // Slots: n is 0; n * 2 is 1; n * 3 is 2.
  EXPECT_EQ(Join(arith), Join({
                             "vm.builtin.shape_arith(1, 2, 1, 0, 0, 2)",
                             "vm.builtin.shape_arith(2, 2, 1, 0, 0, 3)",
                         }))
      << Join(code);
  int checks_of_slot1 = 0;
  for (const std::string& line : code) checks_of_slot1 += line.find("match_shape(r3, \"main: argument v\", 1, 2, 1)") != std::string::npos;
  EXPECT_EQ(checks_of_slot1, 1) << Join(code);
}

TEST(VMCodegen, ConstantsAndImmediatesMoveIntoRegistersForRet) {
  Result<compiler::VmfbProgram> p = Codegen(R"(@I.ir_module
class Module:
    @R.function
    def main(x: R.Tensor((2,), dtype="float32")):
        c = R.const(1.5, "float32")
        s = R.shape([2, 3])
        t = (c, s)
        return c
)");
  ASSERT_TRUE(p.ok()) << p.status().message();
  std::vector<std::string> code = Disassemble(*p, p->functions[0]);
  ASSERT_GE(code.size(), 2u);
  // s is a shape constant (c2): no register, no make_shape; t is never
  // used, so no tuple is made.
  EXPECT_EQ(code[code.size() - 2], "r1 = vm.builtin.copy(c1)");
  EXPECT_EQ(code.back(), "ret r1");
  EXPECT_EQ(p->constants[1].kind, compiler::ConstantKind::kTensor);
}

TEST(VMCodegen, CompositeDimensionsOfBodyVariablesAreComputedOncePerPath) {
  // m is bound by a match_cast in the body, not by an argument: m * 3 stays
  // where it is used, once in each branch of the If (the other branch did
  // not run) and again after it (neither branch dominates it). Two
  // computations in a row join one shape_arith call.
  Result<compiler::VmfbProgram> p = Codegen(R"(@I.ir_module
class Module:
    @R.function
    def main(c: R.Tensor((), dtype="bool"), x: R.Tensor(dtype="float32", ndim=1), w: R.Tensor(dtype="float32", ndim=1)):
        m = T.int64()
        u = R.match_cast(w, R.Tensor((m,), dtype="float32"))
        if c:
            a = R.match_cast(x, R.Tensor((m * 3,), dtype="float32"))
            y: R.Tensor(dtype="float32", ndim=1) = a
        else:
            b = R.match_cast(x, R.Tensor((m * 3,), dtype="float32"))
            y: R.Tensor(dtype="float32", ndim=1) = b
        d = R.match_cast(y, R.Tensor((m * 3 + 1,), dtype="float32"))
        return d
)");
  ASSERT_TRUE(p.ok()) << p.status().message();
  std::vector<std::string> code = Disassemble(*p, p->functions[0]);
  std::vector<std::string> arith;
  for (const std::string& line : code)
    if (line.find("shape_arith") != std::string::npos) arith.push_back(line);
  // Slots: m is 0; m * 3 is 1 (then), 2 (else), 3 (after, with m * 3 + 1 in 4).
  EXPECT_EQ(Join(arith), Join({
                             "vm.builtin.shape_arith(1, 2, 1, 0, 0, 3)",
                             "vm.builtin.shape_arith(2, 2, 1, 0, 0, 3)",
                             "vm.builtin.shape_arith(3, 2, 1, 0, 0, 3, 4, 0, 1, 3, 0, 1)",
                         }))
      << Join(code);
}

TEST(VMCodegen, DivisionByAVariableStaysWhereItIsUsed) {
  // n // 2 cannot fail: it moves to the prologue. n // k fails when k is 0,
  // so it is computed only where the program computed it.
  Result<compiler::VmfbProgram> p = Codegen(R"(@I.ir_module
class Module:
    @R.function
    def main(c: R.Tensor((), dtype="bool"), x: R.Tensor(("n", "k"), dtype="float32")):
        n = T.int64()
        k = T.int64()
        if c:
            y = R.call_dps_packed("p", (x,), out_sinfo=R.Tensor((n // k,), dtype="float32"))
        else:
            y = R.call_dps_packed("p", (x,), out_sinfo=R.Tensor((n // 2,), dtype="float32"))
        return y
)");
  ASSERT_TRUE(p.ok()) << p.status().message();
  std::vector<std::string> code = Disassemble(*p, p->functions[0]);
  std::vector<std::string> head(code.begin(), code.begin() + 6);
  EXPECT_EQ(Join(head), Join({
                            "vm.builtin.check_tensor(r0, 0, 1, 1, 1, \"main: argument c\")",
                            "vm.builtin.match_shape(r0, \"main: argument c\", 0)",
                            "vm.builtin.check_tensor(r1, 2, 2, 32, 1, \"main: argument x\")",
                            "vm.builtin.match_shape(r1, \"main: argument x\", 2, 1, 0, 1, 1)",
                            // n // 2 (op 3) into slot 3, computed before the If.
                            "vm.builtin.shape_arith(3, 3, 1, 0, 0, 2)",
                            "r2 = vm.builtin.to_bool(r0)",
                        }))
      << Join(code);
  int in_then = 0;
  for (const std::string& line : code) in_then += line == "vm.builtin.shape_arith(2, 3, 1, 0, 1, 1)";
  EXPECT_EQ(in_then, 1) << Join(code);
}

TEST(VMCodegen, AnIfOnAShapeComparisonBranchesOnAHeapSlot) {
  // The shape-condition pass's If: the comparison (op 7, ==) is computed in
  // the prologue with the rest of the shape arithmetic and loaded there; the
  // If reads that register, no to_bool.
  Result<compiler::VmfbProgram> p = Codegen(R"(@I.ir_module
class Module:
    @R.function
    def main(x: R.Tensor(("n",), dtype="float32")):
        n = T.int64()
        if R.prim_value((n + 64) // 128 == 1):
            y: R.Tensor(("n",), dtype="float32") = x
        else:
            y: R.Tensor(("n",), dtype="float32") = x
        return y
)");
  ASSERT_TRUE(p.ok()) << p.status().message();
  std::vector<std::string> code = Disassemble(*p, p->functions[0]);
  std::vector<std::string> head(code.begin(), code.begin() + 5);
  EXPECT_EQ(Join(head), Join({
                            "vm.builtin.check_tensor(r0, 1, 2, 32, 1, \"main: argument x\")",
                            "vm.builtin.match_shape(r0, \"main: argument x\", 1, 1, 0)",
                            "vm.builtin.shape_arith(1, 0, 1, 0, 0, 64, 2, 3, 1, 1, 0, 128, 3, 7, 1, 2, 0, 1)",
                            "r1 = vm.builtin.heap_load(3)",
                            "if r1 else #7",
                        }))
      << Join(code);
  for (const std::string& line : code) EXPECT_EQ(line.find("to_bool"), std::string::npos) << line;
}

TEST(VMCodegen, TirVarsArePassedAfterTheOutputs) {
  // fs takes n * 2 - 1 and m as int64 scalars after its output: the
  // composite value is computed into a heap slot and loaded into a register;
  // a constant passes as an immediate. R.prim_value(n + 1) loads the same way.
  Result<compiler::VmfbProgram> p = Codegen(R"(@I.ir_module
class Module:
    @T.prim_func
    def fs(A: T.Buffer((2, 3), "float32"), B: T.Buffer((2, 3), "float32"), a: T.int64, b: T.int64):
        for i, j in T.grid(2, 3):
            B[i, j] = A[i, j]

    @R.function
    def main(x: R.Tensor((2, 3), dtype="float32"), y: R.Tensor(("n",), dtype="float32")):
        n = T.int64()
        cls = Module
        r = R.call_tir(cls.fs, (x,), out_sinfo=R.Tensor((2, 3), dtype="float32"), tir_vars=R.shape([n * 2 - 1, 5]))
        s = R.call_packed("p", r, R.prim_value(n + 1), sinfo_args=R.Tensor((2, 3), dtype="float32"))
        return s
)");
  ASSERT_TRUE(p.ok()) << p.status().message();
  std::vector<std::string> code = Disassemble(*p, p->functions[0]);
  std::vector<std::string> tail(code.begin() + 4, code.end());
  // Both values use only n: computed and loaded once, in the prologue, by
  // one call (heap_loads(register, slot, ...); before: a heap_load each).
  EXPECT_EQ(Join(tail), Join({
                            "vm.builtin.shape_arith(1, 2, 1, 0, 0, 2, 2, 1, 1, 1, 0, 1, 3, 0, 1, 0, 0, 1)",
                            "vm.builtin.heap_loads(2, 2, 4, 3)",
                            // A constant shape is a shape constant, c2 (before: r3 = make_shape(2, 0, 2, 0, 3)).
                            "r3 = vm.builtin.alloc_tensor(c2, 2, 32, 1)",
                            "kernel fs(r0, r3, r2, 5)",
                            "r5 = packed p(r3, r4)",
                            "ret r5",
                        }));
}

TEST(VMCodegen, EncodeArgPutsTheKindInTheTopByte) {
  EXPECT_EQ(EncodeArg(ArgKind::kRegister, 5), 5);
  EXPECT_EQ(EncodeArg(ArgKind::kImmediate, 7), (int64_t{1} << 56) | 7);
  EXPECT_EQ(EncodeArg(ArgKind::kConstant, 0), int64_t{2} << 56);
  // Negative immediates keep their low 56 bits and decode back sign-extended.
  int64_t w = EncodeArg(ArgKind::kImmediate, -1);
  EXPECT_EQ(static_cast<uint64_t>(w) >> 56, 1u);
  EXPECT_EQ(static_cast<int64_t>(static_cast<uint64_t>(w) << 8) >> 8, -1);
}

// ---------------------------------------------------------------- errors

const char* kKernelHead = R"(@I.ir_module
class Module:
    @T.prim_func
    def f(A: T.Buffer((2, 3), "float32"), B: T.Buffer((2, 3), "float32")):
        for i, j in T.grid(2, 3):
            B[i, j] = A[i, j]

    @T.prim_func
    def fs(A: T.Buffer((2, 3), "float32"), B: T.Buffer((2, 3), "float32"), n: T.int64):
        for i, j in T.grid(2, 3):
            B[i, j] = A[i, j]

    @R.function
    def main(x: R.Tensor(("n", 3), dtype="float32")):
        n = T.int64()
        m = T.int64()
        cls = Module
)";

struct VmErrorCase {
  const char* body;    // main's body after kKernelHead
  const char* marker;  // where the error points; "" for messages without a location
  StatusCode code;
  const char* message;
};

std::string LineCol(const std::string& src, size_t at) {
  int line = 1, col = 1;
  for (size_t k = 0; k < at; ++k) {
    if (src[k] == '\n') {
      ++line;
      col = 1;
    } else {
      ++col;
    }
  }
  return std::to_string(line) + ":" + std::to_string(col);
}

class VmErrorTest : public ::testing::TestWithParam<VmErrorCase> {};

TEST_P(VmErrorTest, Fires) {
  const VmErrorCase& c = GetParam();
  std::string src = std::string(kKernelHead) + c.body;
  std::string want = c.message;
  if (*c.marker) {
    size_t at = src.find(c.marker, std::string(kKernelHead).size());
    ASSERT_NE(at, std::string::npos) << c.marker;
    want = "t.relax:" + LineCol(src, at) + ": " + want;
  }
  Result<compiler::VmfbProgram> p = Codegen(src);
  ASSERT_FALSE(p.ok()) << c.body;
  EXPECT_EQ(p.status().code(), c.code) << p.status().ToString();
  EXPECT_EQ(p.status().message(), want);
}

const VmErrorCase kVmErrors[] = {
    {"        r = R.call_dps_packed(\"p\", (x,), out_sinfo=R.Tensor((m, 3), dtype=\"float32\"))\n        return r\n", "",
     StatusCode::kInvalidArgument, "main: symbolic variable 'm' is used in a result shape but no argument defines it"},
    {"        r = R.call_dps_packed(\"p\", (x,), out_sinfo=R.Tensor((T.truncdiv(n, 2), 3), dtype=\"float32\"))\n"
     "        return r\n",
     "", StatusCode::kUnimplemented, "main: shape expression n / 2 cannot be computed by the VM"},
    {"        r = R.call_dps_packed(\"p\", (x,), out_sinfo=R.Tensor(ndim=2, dtype=\"float32\"))\n        return r\n",
     "R.call_dps_packed", StatusCode::kUnimplemented,
     "outputs of kernel calls need a tensor type with known shape and dtype, got R.Tensor(ndim=2, dtype=\"float32\")"},
    {"        r = R.call_dps_packed(\"f\", (x, x), out_sinfo=R.Tensor((2, 3), dtype=\"float32\"))\n        return r\n",
     "R.call_dps_packed", StatusCode::kInvalidArgument, "'f' has 2 parameters but the call passes 3 arguments"},
    {"        r = R.ExternFunc(\"kiln.debug.f\")\n        return r\n", "R.ExternFunc", StatusCode::kUnimplemented,
     "this kind of expression cannot be compiled to VM code yet"},
};

INSTANTIATE_TEST_SUITE_P(Messages, VmErrorTest, ::testing::ValuesIn(kVmErrors));

// The errors below duplicate checks normalization makes first; GenerateVMCode
// still reports them when it is given a module that skipped it.

Result<compiler::VmfbProgram> CodegenUnnormalized(const ir::IRModule& mod) {
  compiler::VmfbProgram program;
  KILN_RETURN_IF_ERROR(GenerateVMCode(mod, &program));
  return program;
}

ir::IRModule ParseOk(const std::string& src) {
  Result<ir::IRModule> r = text::ParseModule(src, "t.relax");
  EXPECT_TRUE(r.ok()) << r.status().message();
  return r.ok() ? *r : ir::IRModule();
}

TEST(VMCodegenError, CallTirOfARelaxFunction) {
  std::string src = std::string(kKernelHead) +
                    "        r = R.call_tir(cls.main, (x,), out_sinfo=R.Tensor((2, 3), dtype=\"float32\"))\n        return r\n";
  Result<compiler::VmfbProgram> p = CodegenUnnormalized(ParseOk(src));
  ASSERT_FALSE(p.ok());
  EXPECT_EQ(p.status().code(), StatusCode::kNotFound);
  EXPECT_EQ(p.status().message(),
            "t.relax:" + LineCol(src, src.find("R.call_tir")) + ": R.call_tir: no PrimFunc named 'main'");
}

TEST(VMCodegenError, CallOfAPrimFuncAsARelaxFunction) {
  std::string src = std::string(kKernelHead) + "        r = cls.f(x)\n        return r\n";
  Result<compiler::VmfbProgram> p = CodegenUnnormalized(ParseOk(src));
  ASSERT_FALSE(p.ok());
  EXPECT_EQ(p.status().code(), StatusCode::kNotFound);
  EXPECT_EQ(p.status().message(), "t.relax:" + LineCol(src, src.find("cls.f(x)")) + ": no Relax function named 'f'");
}

// main(x) { r = make(x); return r }, built directly (the parser refuses these).
ir::IRModule BuiltMain(const std::function<ir::Expr(const ir::RVar& x)>& make) {
  ir::RVar x = ir::MakeRVar("x", ir::MakeTensorSInfo({2, 3}, DType::Float32()));
  ir::RVar r = ir::MakeRVar("r");
  ir::BindingBlock block;
  block.bindings.push_back(ir::Binding{r, make(x), nullptr, {}});
  auto f = std::make_shared<ir::FunctionExpr>();
  f->name = "main";
  f->params = {x};
  f->body = std::make_shared<ir::SeqExprNode>(std::vector<ir::BindingBlock>{block}, r);
  ir::IRModule mod;
  mod.Add("main", ir::Function(f));
  return mod;
}

ir::SourceSpan At(int line, int col) {
  ir::SourceSpan s;
  s.file = std::make_shared<const std::string>("built.relax");
  s.line = line;
  s.col = col;
  return s;
}

TEST(VMCodegenError, DpsCallOfAComputedCallee) {
  ir::IRModule mod = BuiltMain([](const ir::RVar& x) {
    auto args = std::make_shared<ir::TupleExpr>(std::vector<ir::Expr>{x});
    auto call = std::const_pointer_cast<ir::ExprNode>(
        ir::MakeOpCall("relax.call_dps_packed", {x, args}, {}, {ir::MakeTensorSInfo({2, 3}, DType::Float32())}));
    call->span = At(3, 13);
    return ir::Expr(call);
  });
  Result<compiler::VmfbProgram> p = CodegenUnnormalized(mod);
  ASSERT_FALSE(p.ok());
  EXPECT_EQ(p.status().code(), StatusCode::kInvalidArgument);
  EXPECT_EQ(p.status().message(), "built.relax:3:13: the callee of a destination-passing call must be a function name");
}

TEST(VMCodegenError, TirVarsThatAreNotAShape) {
  ir::IRModule mod = BuiltMain([](const ir::RVar& x) {
    auto args = std::make_shared<ir::TupleExpr>(std::vector<ir::Expr>{x});
    auto callee = std::make_shared<ir::GlobalVarExpr>("k");
    auto call = std::const_pointer_cast<ir::ExprNode>(ir::MakeOpCall(
        "relax.call_tir", {callee, args, x}, {}, {ir::MakeTensorSInfo({2, 3}, DType::Float32())}));
    call->span = At(3, 13);
    return ir::Expr(call);
  });
  Result<compiler::VmfbProgram> p = CodegenUnnormalized(mod);
  ASSERT_FALSE(p.ok());
  EXPECT_EQ(p.status().code(), StatusCode::kInvalidArgument);
  EXPECT_EQ(p.status().message(), "built.relax:3:13: the tir_vars of a call must be R.shape([...])");
}

TEST(VMCodegenError, CallOfAComputedFunctionValue) {
  ir::IRModule mod = BuiltMain([](const ir::RVar& x) {
    auto call = std::make_shared<ir::CallExpr>(x, std::vector<ir::Expr>{x});
    call->span = At(3, 13);
    return ir::Expr(call);
  });
  Result<compiler::VmfbProgram> p = CodegenUnnormalized(mod);
  ASSERT_FALSE(p.ok());
  EXPECT_EQ(p.status().code(), StatusCode::kUnimplemented);
  EXPECT_EQ(p.status().message(), "built.relax:3:13: calls of computed function values are not supported yet");
}

TEST(VMCodegen, IfJumpsToTheElseBranchAndOverIt) {
  // The parser does not read if/else yet: build main(x, y, c) { r = x if c else y; return r }.
  ir::RVar x = ir::MakeRVar("x", ir::MakeTensorSInfo({2}, DType::Float32()));
  ir::RVar y = ir::MakeRVar("y", ir::MakeTensorSInfo({2}, DType::Float32()));
  ir::RVar c = ir::MakeRVar("c", std::make_shared<ir::PrimSInfo>(DType::Bool()));
  ir::RVar r = ir::MakeRVar("r");
  auto then_branch = std::make_shared<ir::SeqExprNode>(std::vector<ir::BindingBlock>{}, x);
  auto else_branch = std::make_shared<ir::SeqExprNode>(std::vector<ir::BindingBlock>{}, y);
  ir::BindingBlock block;
  block.bindings.push_back(ir::Binding{r, std::make_shared<ir::IfExpr>(c, then_branch, else_branch), nullptr, {}});
  auto f = std::make_shared<ir::FunctionExpr>();
  f->name = "main";
  f->params = {x, y, c};
  f->body = std::make_shared<ir::SeqExprNode>(std::vector<ir::BindingBlock>{block}, r);
  ir::IRModule mod;
  mod.Add("main", ir::Function(f));
  Result<ir::IRModule> normalized = InferStructInfo(mod);
  ASSERT_TRUE(normalized.ok()) << normalized.status().message();
  compiler::VmfbProgram p;
  ASSERT_TRUE(GenerateVMCode(*normalized, &p).ok());
  EXPECT_EQ(Join(Disassemble(p, p.functions[0])),
            Join({
                "vm.builtin.check_tensor(r0, 1, 2, 32, 1, \"main: argument x\")",
                "vm.builtin.match_shape(r0, \"main: argument x\", 1, 0, 2)",
                "vm.builtin.check_tensor(r1, 1, 2, 32, 1, \"main: argument y\")",
                "vm.builtin.match_shape(r1, \"main: argument y\", 1, 0, 2)",
                "r3 = vm.builtin.to_bool(r2)",
                "if r3 else #8",  // false: to the else branch
                "r4 = vm.builtin.copy(r0)",
                "goto #9",  // then branch done: over the else branch
                "r4 = vm.builtin.copy(r1)",
                "ret r4",
            }));
}

// Memory planning (compiler/memory/plan_memory.h): intermediates become
// views of storage the Context keeps; results stay fresh allocations.
// alloc_storage(index, size mode, size): mode 0 immediate, 1 heap slot;
// tensor_view(storage, offset, slot bytes, shape, dtype code, bits, lanes).
constexpr const char* kPlannedChain = R"(@I.ir_module
class Module:
    @R.function
    def main(x: R.Tensor(("n", 4), dtype="float32")) -> R.Tensor(("n", 4), dtype="float32"):
        n = T.int64()
        with R.dataflow():
            lv0 = R.add(x, x)
            lv1 = R.nn.relu(lv0)
            gv = R.add(lv1, x)
            R.output(gv)
        return gv
)";

TEST(VMCodegen, PlannedIntermediatesOfSymbolicSizeAreViewsOfGrowingStorage) {
  VMCodegenOptions options;
  options.memory.call_time_arena = false;  // one storage per symbolic size
  Result<compiler::VmfbProgram> p = Codegen(kPlannedChain, options);
  ASSERT_TRUE(p.ok()) << p.status().message();
  EXPECT_EQ(Join(Disassemble(*p, p->functions[0])),
            Join({
                "vm.builtin.check_tensor(r0, 2, 2, 32, 1, \"main: argument x\")",
                "vm.builtin.match_shape(r0, \"main: argument x\", 2, 1, 0, 0, 4)",
                // bytes = 4 * n * 4 into slots 1 and 2 (op 2 = mul), in the prologue.
                "vm.builtin.shape_arith(1, 2, 0, 4, 1, 0, 2, 2, 1, 1, 0, 4)",
                "r1 = vm.builtin.make_shape(2, 1, 0, 0, 4)",
                "r2 = vm.builtin.alloc_storage(0, 1, 2)",
                "r3 = vm.builtin.tensor_view(r2, 0, -1, r1, 2, 32, 1)",
                "kernel add(r0, r0, r3)",
                "r4 = vm.builtin.make_shape(2, 1, 0, 0, 4)",
                // The same byte count: slot 2 again, not computed twice.
                "r5 = vm.builtin.alloc_storage(1, 1, 2)",
                "r6 = vm.builtin.tensor_view(r5, 0, -1, r4, 2, 32, 1)",
                "kernel relu(r3, r6)",
                // The result is the caller's: a fresh tensor.
                "r7 = vm.builtin.make_shape(2, 1, 0, 0, 4)",
                "r8 = vm.builtin.alloc_tensor(r7, 2, 32, 1)",
                "kernel add1(r6, r0, r8)",
                "ret r8",
            }));
}

TEST(VMCodegen, IntermediatesOfSizesTheArgumentsDetermineAreLaidOutInThePrologue) {
  Result<compiler::VmfbProgram> p = Codegen(kPlannedChain, VMCodegenOptions{});
  ASSERT_TRUE(p.ok()) << p.status().message();
  // alloc_arena(storage, first offset slot, count, [size mode, size, first, last position]*count);
  // arena_tensors(storage, [register, offset slot, size mode, size, ndim, dtype code, bits, lanes,
  // [mode, value]*ndim]*k): the views whose shapes the arguments determine, all made in the prologue
  // by one call (before: a make_shape, then arena_view(storage, offset slot, size mode, size, shape
  // register, dtype code, bits, lanes) before each kernel).
  EXPECT_EQ(Join(Disassemble(*p, p->functions[0])),
            Join({
                "vm.builtin.check_tensor(r0, 2, 2, 32, 1, \"main: argument x\")",
                "vm.builtin.match_shape(r0, \"main: argument x\", 2, 1, 0, 0, 4)",
                // bytes = n * 16 into slot 1, in the prologue.
                "vm.builtin.shape_arith(1, 2, 1, 0, 0, 16)",
                // lv0 (live at positions 1-2) and lv1 (2-3): offsets into slots 2 and 3.
                "r1 = vm.builtin.alloc_arena(0, 2, 2, 1, 1, 1, 2, 1, 1, 2, 3)",
                // r2 and r3: (n, 4) float32 at heap[2] and heap[3], n * 16 bytes from slot 1.
                "vm.builtin.arena_tensors(r1, 2, 2, 1, 1, 2, 2, 32, 1, 1, 0, 0, 4, 3, 3, 1, 1, 2, 2, 32, 1, 1, 0, 0, 4)",
                "kernel add(r0, r0, r2)",
                "kernel relu(r2, r3)",
                // The result is the caller's: a fresh tensor, still of a shape register.
                "r4 = vm.builtin.make_shape(2, 1, 0, 0, 4)",
                "r5 = vm.builtin.alloc_tensor(r4, 2, 32, 1)",
                "kernel add1(r3, r0, r5)",
                "ret r5",
            }));
}

TEST(VMCodegen, ArenaTensorsInAShapeConditionedBranchAreMadeWhereTheyAreWritten) {
  // lv0 is written on every path: its view is made in the prologue. lv1 is
  // written only when n > 8 (its arena bytes are 0 otherwise, so a view made
  // in the prologue would not fit): its own arena_tensor, in its branch.
  Result<compiler::VmfbProgram> p = Codegen(R"(@I.ir_module
class Module:
    @R.function
    def main(x: R.Tensor(("n", 4), dtype="float32")) -> R.Tensor(("n", 4), dtype="float32"):
        n = T.int64()
        lv0 = R.add(x, x)
        if R.prim_value(n > 8):
            lv1 = R.nn.relu(lv0)
            y = R.add(lv1, x)
        else:
            y = R.add(lv0, x)
        return y
)",
                                            VMCodegenOptions{});
  ASSERT_TRUE(p.ok()) << p.status().message();
  std::vector<std::string> code = Disassemble(*p, p->functions[0]);
  std::vector<std::string> views;
  for (const std::string& line : code) {
    if (line.find("arena_tensor") != std::string::npos || line.find("kernel") != std::string::npos ||
        line.find("if ") == 0 || line.find("alloc_arena") != std::string::npos) {
      views.push_back(line);
    }
  }
  EXPECT_EQ(Join(views), Join({
                            // lv0 at heap[4], lv1 at heap[5] (n * 16 * (n > 8) bytes: slot 3).
                            "r1 = vm.builtin.alloc_arena(0, 4, 2, 1, 1, 1, 5, 1, 3, 3, 4)",
                            "vm.builtin.arena_tensors(r1, 2, 4, 1, 1, 2, 2, 32, 1, 1, 0, 0, 4)",
                            "kernel add(r0, r0, r2)",
                            "if r3 else #15",
                            "r5 = vm.builtin.arena_tensor(r1, 5, 1, 3, 2, 2, 32, 1, 1, 0, 0, 4)",
                            "kernel relu(r2, r5)",
                            "kernel add1(r5, r0, r7)",
                            "kernel add2(r2, r0, r9)",
                        }))
      << Join(code);
}

TEST(VMCodegen, ArenaTensorsInABranchOnAValueAreMadeWhereItStarts) {
  // An If on a tensor's value: its branch's arena bytes are reserved on every
  // call, but its shapes need not make sense in calls that skip it (a slice
  // of n - 3 rows for n < 3), so its view is made only when the branch runs
  // (before the If's depth was counted, lv1 joined arena_tensors): by the
  // arm's own arena_tensors call, where the arm starts.
  Result<compiler::VmfbProgram> p = Codegen(R"(@I.ir_module
class Module:
    @R.function
    def main(x: R.Tensor(("n", 4), dtype="float32"), c: R.Tensor((), dtype="bool")) -> R.Tensor(("n", 4), dtype="float32"):
        n = T.int64()
        lv0 = R.add(x, x)
        if c:
            lv1 = R.nn.relu(lv0)
            y = R.add(lv1, x)
        else:
            y = R.add(lv0, x)
        return y
)",
                                            VMCodegenOptions{});
  ASSERT_TRUE(p.ok()) << p.status().message();
  std::vector<std::string> code = Disassemble(*p, p->functions[0]);
  std::vector<std::string> views;
  for (const std::string& line : code) {
    if (line.find("arena_tensor") != std::string::npos || line.find("kernel relu") != std::string::npos ||
        line.find("if ") == 0) {
      views.push_back(line);
    }
  }
  EXPECT_EQ(Join(views), Join({
                            "vm.builtin.arena_tensors(r2, 3, 2, 1, 1, 2, 2, 32, 1, 1, 0, 0, 4)",  // lv0
                            "if r4 else #17",
                            "vm.builtin.arena_tensors(r2, 6, 3, 1, 1, 2, 2, 32, 1, 1, 0, 0, 4)",  // lv1
                            "kernel relu(r3, r6)",
                        }))
      << Join(code);
}

TEST(VMCodegen, UpperBoundsGiveOneStaticStorage) {
  VMCodegenOptions options;
  options.memory.upper_bounds["n"] = 32;
  Result<compiler::VmfbProgram> p = Codegen(kPlannedChain, options);
  ASSERT_TRUE(p.ok()) << p.status().message();
  // Each (n, 4) float32 intermediate gets a 512-byte slot of a 1024-byte
  // arena; both views are made in the prologue by one storage_tensors call
  // (storage 0 of 1024 bytes; [register, offset, slot bytes, ndim, dtype,
  // (mode, value) pairs] each). Before: make_shape, alloc_storage and
  // tensor_view before each kernel, six builtin calls.
  EXPECT_EQ(Join(Disassemble(*p, p->functions[0])),
            Join({
                "vm.builtin.check_tensor(r0, 2, 2, 32, 1, \"main: argument x\")",
                "vm.builtin.match_shape(r0, \"main: argument x\", 2, 1, 0, 0, 4)",
                "vm.builtin.storage_tensors(0, 1024, 1, 0, 512, 2, 2, 32, 1, 1, 0, 0, 4, "
                "2, 512, 512, 2, 2, 32, 1, 1, 0, 0, 4)",
                "kernel add(r0, r0, r1)",
                "kernel relu(r1, r2)",
                "r3 = vm.builtin.make_shape(2, 1, 0, 0, 4)",
                "r4 = vm.builtin.alloc_tensor(r3, 2, 32, 1)",
                "kernel add1(r2, r0, r4)",
                "ret r4",
            }));
}

TEST(VMCodegen, StaticPlanViewsAreMadeInThePrologueUnlessABranchHoldsASymbolicOne) {
  // A static plan (constant sizes, n bounded): lv0 and the constant-shaped
  // lv2 of a branch are made in the prologue (no view of a constant shape can
  // fail, whether its branch runs or not); lv1, of symbolic shape in a branch
  // on a value, is made where its branch writes it, with a shape constant
  // where the shape is constant and make_shape where it is not.
  VMCodegenOptions options;
  options.memory.upper_bounds["n"] = 8;
  Result<compiler::VmfbProgram> p = Codegen(R"(@I.ir_module
class Module:
    @R.function
    def main(x: R.Tensor(("n", 4), dtype="float32"), y: R.Tensor((2, 4), dtype="float32"),
             c: R.Tensor((), dtype="bool")) -> R.Tensor(("n", 4), dtype="float32"):
        n = T.int64()
        lv0 = R.add(x, x)
        if c:
            lv1 = R.nn.relu(lv0)
            lv2 = R.nn.relu(y)
            lv3 = R.add(lv2, y)
            z = R.add(lv1, x)
        else:
            z = R.add(lv0, x)
        return z
)",
                                            options);
  ASSERT_TRUE(p.ok()) << p.status().message();
  std::vector<std::string> code = Disassemble(*p, p->functions[0]);
  std::vector<std::string> views;
  for (const std::string& line : code) {
    if (line.find("storage") != std::string::npos || line.find("view") != std::string::npos ||
        line.find("make_shape") != std::string::npos || line.find("if ") == 0) {
      views.push_back(line);
    }
  }
  EXPECT_EQ(Join(views),
            Join({
                // lv0 at 0, lv2 at 256 and lv3 at 320 (each [register, offset, slot bytes, ndim, dtype, pairs]).
                "vm.builtin.storage_tensors(0, 384, 3, 0, 128, 2, 2, 32, 1, 1, 0, 0, 4, "
                "9, 256, 64, 2, 2, 32, 1, 0, 2, 0, 4, 10, 320, 64, 2, 2, 32, 1, 0, 2, 0, 4)",
                "if r4 else #21",
                "r6 = vm.builtin.make_shape(2, 1, 0, 0, 4)",  // lv1
                "r7 = vm.builtin.alloc_storage(0, 0, 384)",
                "r8 = vm.builtin.tensor_view(r7, 128, 128, r6, 2, 32, 1)",
                "r11 = vm.builtin.make_shape(2, 1, 0, 0, 4)",  // results: (n, 4), not constant
                "r13 = vm.builtin.make_shape(2, 1, 0, 0, 4)",
            }))
      << Join(code);
}

TEST(VMCodegen, PlanningErrorsAreReported) {
  VMCodegenOptions options;
  options.memory.upper_bounds["n"] = -1;
  Result<compiler::VmfbProgram> p = Codegen(kPlannedChain, options);
  ASSERT_FALSE(p.ok());
  EXPECT_EQ(p.status().message(), "main: the upper bound of 'n' must be a positive integer, got -1");
}

}  // namespace
}  // namespace relax
}  // namespace kiln
