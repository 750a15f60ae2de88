// Memory planning over legalized modules: static arenas, symbolic storages
// reused when the prover shows the sizes fit, upper bounds that make a plan
// static, tuples, if/else, escapes, the report and every error message.
#include "compiler/memory/plan_memory.h"

#include <gtest/gtest.h>

#include "compiler/arith/debug_string.h"
#include "compiler/relax/infer_struct_info.h"
#include "compiler/relax/legalize_ops.h"
#include "compiler/text/text.h"

namespace kiln {
namespace memory {
namespace {

Result<ir::IRModule> Lower(const std::string& src) {
  KILN_ASSIGN_OR_RETURN(ir::IRModule mod, text::ParseModule(src, "t.relax"));
  KILN_ASSIGN_OR_RETURN(mod, relax::InferStructInfo(mod));
  return relax::LegalizeOps(mod, relax::LegalizeOptions{});
}

Result<ModulePlan> Plan(const std::string& src, const PlanOptions& options = {}) {
  KILN_ASSIGN_OR_RETURN(ir::IRModule mod, Lower(src));
  return PlanMemory(mod, options);
}

// "lv0 s0@0 [0,2]" per tensor: storage and offset (or "fresh" when it
// escapes) and its lifetime.
std::vector<std::string> Describe(const FunctionPlan& f) {
  std::vector<std::string> out;
  for (const auto& t : f.tensors) {
    std::string s = (t.name.empty() ? "_" : t.name) + " ";
    s += t.storage < 0 ? "fresh" : "s" + std::to_string(t.storage) + "@" + std::to_string(t.offset);
    s += " [" + std::to_string(t.def) + "," + std::to_string(t.last_use) + "]";
    out.push_back(s);
  }
  return out;
}

std::string Bytes(const ir::PrimExpr& e) { return arith::ToDebugString(e); }

constexpr const char* kStaticChain = R"(@I.ir_module
class Module:
    @R.function
    def main(x: R.Tensor((4, 8), dtype="float32"), w: R.Tensor((8, 16), dtype="float32")) -> R.Tensor((4, 16), dtype="float32"):
        with R.dataflow():
            lv0 = R.matmul(x, w)
            lv1 = R.nn.relu(lv0)
            lv2 = R.add(lv1, lv1)
            lv3 = R.multiply(lv2, lv2)
            gv = R.nn.relu(lv3)
            R.output(gv)
        return gv
)";

TEST(PlanMemory, StaticChainSharesOneArena) {
  Result<ModulePlan> p = Plan(kStaticChain);
  ASSERT_TRUE(p.ok()) << p.status().message();
  const FunctionPlan* f = p->Find("main");
  ASSERT_NE(f, nullptr);
  // 4 x 16 float32 = 256 bytes each. lv2 takes lv0's bytes (lv0 died at
  // lv1); lv3 takes lv1's. gv is returned: a fresh tensor for the caller.
  EXPECT_EQ(Describe(*f), (std::vector<std::string>{"lv0 s0@0 [1,2]", "lv1 s0@256 [2,3]", "lv2 s0@0 [3,4]",
                                                    "lv3 s0@256 [4,5]", "gv fresh [5,7]"}));
  ASSERT_EQ(f->storages.size(), 1u);
  EXPECT_TRUE(f->storages[0].is_static);
  EXPECT_EQ(f->storages[0].static_bytes, 512u);
  EXPECT_TRUE(f->fully_static);
  EXPECT_EQ(Bytes(f->peak_bytes), "512");
  EXPECT_EQ(f->tensors[0].slot_bytes, 256);
  EXPECT_EQ(FormatMemoryReport(*p), "memory plan: main: 4 of 5 tensors in 1 storage, peak 512 bytes (static)\n");
}

constexpr const char* kSymbolicChain = R"(@I.ir_module
class Module:
    @R.function
    def main(x: R.Tensor(("n", 4), dtype="float32")) -> R.Tensor(("n", 4), dtype="float32"):
        n = T.int64()
        with R.dataflow():
            lv0 = R.add(x, x)
            lv1 = R.multiply(lv0, lv0)
            lv2 = R.nn.relu(lv1)
            lv3 = R.add(lv2, lv2)
            gv = R.nn.relu(lv3)
            R.output(gv)
        return gv
)";

PlanOptions StoragePerSize() {
  PlanOptions options;
  options.call_time_arena = false;
  return options;
}

TEST(PlanMemory, SymbolicSizesAreReusedWhenProvablyEqual) {
  Result<ModulePlan> p = Plan(kSymbolicChain, StoragePerSize());
  ASSERT_TRUE(p.ok()) << p.status().message();
  const FunctionPlan& f = p->functions[0];
  EXPECT_EQ(Describe(f), (std::vector<std::string>{"lv0 s0@0 [1,2]", "lv1 s1@0 [2,3]", "lv2 s0@0 [3,4]",
                                                   "lv3 s1@0 [4,5]", "gv fresh [5,7]"}));
  ASSERT_EQ(f.storages.size(), 2u);
  EXPECT_FALSE(f.storages[0].is_static);
  EXPECT_EQ(Bytes(f.storages[0].bytes), "n * 16");
  EXPECT_FALSE(f.fully_static);
  EXPECT_EQ(Bytes(f.peak_bytes), "n * 32");
  EXPECT_EQ(FormatMemoryReport(*p),
            "memory plan: main: 4 of 5 tensors in 2 storages, peak n * 32 bytes (symbolic)\n");
}

TEST(PlanMemory, SymbolicStorageIsReusedForSmallerTensorsButNotLarger) {
  // lv1 is written while lv0 is read: a new storage. lv2 (n * 8 bytes) fits
  // the freed n * 16 of lv0; lv3 (n * 32 bytes) fits nothing and gets its own.
  Result<ModulePlan> p = Plan(R"(@I.ir_module
class Module:
    @R.function
    def main(x: R.Tensor(("n", 4), dtype="float32")):
        n = T.int64()
        lv0 = R.call_dps_packed("f", (x,), out_sinfo=R.Tensor((n, 4), dtype="float32"))
        lv1 = R.call_dps_packed("f", (lv0,), out_sinfo=R.Tensor((n, 4), dtype="float32"))
        lv2 = R.call_dps_packed("f", (lv1,), out_sinfo=R.Tensor((n, 2), dtype="float32"))
        lv3 = R.call_dps_packed("f", (lv2,), out_sinfo=R.Tensor((n, 8), dtype="float32"))
        gv = R.call_dps_packed("f", (lv3,), out_sinfo=R.Tensor((n, 4), dtype="float32"))
        return gv
)",
                              StoragePerSize());
  ASSERT_TRUE(p.ok()) << p.status().message();
  const FunctionPlan& f = p->functions[0];
  EXPECT_EQ(Describe(f), (std::vector<std::string>{"lv0 s0@0 [1,2]", "lv1 s1@0 [2,3]", "lv2 s0@0 [3,4]",
                                                   "lv3 s2@0 [4,5]", "gv fresh [5,7]"}));
  EXPECT_EQ(Bytes(f.peak_bytes), "n * 64");
}

TEST(PlanMemory, DifferentVariablesAreNotShared) {
  Result<ModulePlan> p = Plan(R"(@I.ir_module
class Module:
    @R.function
    def main(x: R.Tensor(("n",), dtype="float32"), y: R.Tensor(("m",), dtype="float32")):
        n = T.int64()
        m = T.int64()
        a = R.call_dps_packed("f", (x,), out_sinfo=R.Tensor((n,), dtype="float32"))
        b = R.call_dps_packed("f", (a,), out_sinfo=R.Tensor((n,), dtype="float32"))
        c = R.call_dps_packed("f", (b, y), out_sinfo=R.Tensor((m,), dtype="float32"))
        return c
)",
                              StoragePerSize());
  ASSERT_TRUE(p.ok()) << p.status().message();
  EXPECT_EQ(Describe(p->functions[0]),
            (std::vector<std::string>{"a s0@0 [1,2]", "b s1@0 [2,3]", "c fresh [3,5]"}));
  EXPECT_EQ(Bytes(p->functions[0].peak_bytes), "n * 8");
}

TEST(PlanMemory, UpperBoundsFromOptionsGiveAStaticPlan) {
  PlanOptions options;
  options.upper_bounds["n"] = 128;
  Result<ModulePlan> p = Plan(kSymbolicChain, options);
  ASSERT_TRUE(p.ok()) << p.status().message();
  const FunctionPlan& f = p->functions[0];
  // Each (n, 4) float32 tensor is at most 128 * 16 = 2048 bytes.
  EXPECT_EQ(Describe(f), (std::vector<std::string>{"lv0 s0@0 [1,2]", "lv1 s0@2048 [2,3]", "lv2 s0@0 [3,4]",
                                                   "lv3 s0@2048 [4,5]", "gv fresh [5,7]"}));
  EXPECT_TRUE(f.fully_static);
  EXPECT_EQ(f.tensors[0].slot_bytes, 2048);
  EXPECT_EQ(Bytes(f.tensors[0].bytes), "n * 16");  // the exact size stays symbolic
  EXPECT_EQ(FormatMemoryReport(*p), "memory plan: main: 4 of 5 tensors in 1 storage, peak 4096 bytes (static)\n");
}

TEST(PlanMemory, UpperBoundsFromTheFunctionAttribute) {
  Result<ir::IRModule> mod = Lower(kSymbolicChain);
  ASSERT_TRUE(mod.ok()) << mod.status().message();
  // R.func_attr({"tir_var_upper_bound": {"n": 64}}), built directly.
  auto f = std::make_shared<ir::FunctionExpr>(*mod->entries[0].relax);
  ir::AttrValue bound;
  bound.kind = ir::AttrValue::Kind::kIntDict;
  bound.int_dict["n"] = 64;
  f->attrs["tir_var_upper_bound"] = bound;
  Result<FunctionPlan> plan = PlanFunction("main", f, {});
  ASSERT_TRUE(plan.ok()) << plan.status().message();
  EXPECT_TRUE(plan->fully_static);
  EXPECT_EQ(Bytes(plan->peak_bytes), "2048");
  // The option overrides the attribute.
  PlanOptions options;
  options.upper_bounds["n"] = 128;
  plan = PlanFunction("main", f, options);
  ASSERT_TRUE(plan.ok()) << plan.status().message();
  EXPECT_EQ(Bytes(plan->peak_bytes), "4096");
}

TEST(PlanMemory, ABoundOnAnotherVariableLeavesThePlanSymbolic) {
  PlanOptions options;
  options.upper_bounds["m"] = 8;
  Result<ModulePlan> p = Plan(kSymbolicChain, options);
  ASSERT_TRUE(p.ok()) << p.status().message();
  EXPECT_FALSE(p->functions[0].fully_static);
}

// "lv0 a0 [1,2]": the tensor's place in the call-time arena.
std::vector<std::string> DescribeCallTime(const FunctionPlan& f) {
  std::vector<std::string> out;
  for (const auto& t : f.tensors) {
    std::string s = (t.name.empty() ? "_" : t.name) + " ";
    if (t.arena_index >= 0) {
      s += "a" + std::to_string(t.arena_index);
    } else {
      s += t.storage < 0 ? "fresh" : "s" + std::to_string(t.storage) + "@" + std::to_string(t.offset);
    }
    out.push_back(s + " [" + std::to_string(t.def) + "," + std::to_string(t.last_use) + "]");
  }
  return out;
}

TEST(PlanMemory, SizesTheArgumentsDetermineAreLaidOutAtCallTime) {
  // Before: two storages of n * 16 bytes (SymbolicSizesAreReusedWhenProvablyEqual).
  // After: one storage whose four tensors get their offsets when n is known.
  Result<ModulePlan> p = Plan(kSymbolicChain);
  ASSERT_TRUE(p.ok()) << p.status().message();
  const FunctionPlan& f = p->functions[0];
  EXPECT_EQ(DescribeCallTime(f), (std::vector<std::string>{"lv0 a0 [1,2]", "lv1 a1 [2,3]", "lv2 a2 [3,4]",
                                                           "lv3 a3 [4,5]", "gv fresh [5,7]"}));
  ASSERT_EQ(f.storages.size(), 1u);
  EXPECT_TRUE(f.storages[0].call_time);
  EXPECT_FALSE(f.storages[0].is_static);
  EXPECT_EQ(f.storages[0].members, (std::vector<size_t>{0, 1, 2, 3}));
  for (size_t i = 0; i < 4; ++i) EXPECT_EQ(f.tensors[i].storage, 0) << i;
  EXPECT_FALSE(f.fully_static);
  // The sum of the aligned sizes: an upper bound of any layout.
  EXPECT_EQ(Bytes(f.peak_bytes), Bytes(f.storages[0].bytes));
  EXPECT_EQ(FormatMemoryReport(*p), "memory plan: main: 4 of 5 tensors in 1 storage, peak " + Bytes(f.peak_bytes) +
                                        " bytes (symbolic; 4 laid out at call time)\n");
}

TEST(PlanMemory, CallTimeArenaTakesStaticTensorsButNotSizesTheBodyComputes) {
  // a: constant size; b: n * 4 bytes; c: m * 4 bytes, m bound by a
  // match_cast in the body, so only known when c is made: its own storage.
  Result<ModulePlan> p = Plan(R"(@I.ir_module
class Module:
    @R.function
    def main(x: R.Tensor(("n",), dtype="float32")):
        n = T.int64()
        m = T.int64()
        a = R.call_dps_packed("f", (x,), out_sinfo=R.Tensor((8,), dtype="float32"))
        b = R.call_dps_packed("f", (a,), out_sinfo=R.Tensor((n,), dtype="float32"))
        y = R.call_packed("g", x, sinfo_args=R.Tensor(ndim=1, dtype="float32"))
        z = R.match_cast(y, R.Tensor((m,), dtype="float32"))
        c = R.call_dps_packed("f", (z, b), out_sinfo=R.Tensor((m,), dtype="float32"))
        d = R.call_dps_packed("f", (c,), out_sinfo=R.Tensor((m,), dtype="float32"))
        return d
)");
  ASSERT_TRUE(p.ok()) << p.status().message();
  const FunctionPlan& f = p->functions[0];
  ASSERT_EQ(f.storages.size(), 2u);
  EXPECT_TRUE(f.storages[0].call_time);
  EXPECT_FALSE(f.storages[1].call_time);
  EXPECT_EQ(Bytes(f.storages[1].bytes), "m * 4");
  EXPECT_EQ(DescribeCallTime(f), (std::vector<std::string>{"a a0 [1,2]", "b a1 [2,5]", "c s1@0 [5,6]",
                                                           "d fresh [6,8]"}));
  EXPECT_EQ(f.storages[0].members, (std::vector<size_t>{0, 1}));
}

TEST(PlanMemory, ConstantSizesAloneStayInTheStaticArena) {
  // The only symbolic size depends on m, which the body binds: no call-time
  // arena for the constant-size a, which the Context can allocate up front.
  Result<ModulePlan> p = Plan(R"(@I.ir_module
class Module:
    @R.function
    def main(x: R.Tensor((8,), dtype="float32")):
        m = T.int64()
        a = R.call_dps_packed("f", (x,), out_sinfo=R.Tensor((8,), dtype="float32"))
        y = R.call_packed("g", x, sinfo_args=R.Tensor(ndim=1, dtype="float32"))
        z = R.match_cast(y, R.Tensor((m,), dtype="float32"))
        c = R.call_dps_packed("f", (z, a), out_sinfo=R.Tensor((m,), dtype="float32"))
        d = R.call_dps_packed("f", (c,), out_sinfo=R.Tensor((m,), dtype="float32"))
        return d
)");
  ASSERT_TRUE(p.ok()) << p.status().message();
  const FunctionPlan& f = p->functions[0];
  EXPECT_EQ(DescribeCallTime(f), (std::vector<std::string>{"a s0@0 [1,4]", "c s1@0 [4,5]", "d fresh [5,7]"}));
  ASSERT_EQ(f.storages.size(), 2u);
  EXPECT_TRUE(f.storages[0].is_static);
  EXPECT_FALSE(f.storages[1].call_time);
}

TEST(PlanMemory, ADivisionByAVariableIsNotLaidOutAtCallTime) {
  // n // k could divide by zero: the prologue computes nothing that can fail,
  // so that tensor keeps a storage of its own.
  Result<ModulePlan> p = Plan(R"(@I.ir_module
class Module:
    @R.function
    def main(x: R.Tensor(("n", "k"), dtype="float32")):
        n = T.int64()
        k = T.int64()
        a = R.call_dps_packed("f", (x,), out_sinfo=R.Tensor((n // k,), dtype="float32"))
        b = R.call_dps_packed("f", (a,), out_sinfo=R.Tensor((n // 2,), dtype="float32"))
        c = R.call_dps_packed("f", (b,), out_sinfo=R.Tensor((n,), dtype="float32"))
        return c
)");
  ASSERT_TRUE(p.ok()) << p.status().message();
  const FunctionPlan& f = p->functions[0];
  EXPECT_EQ(DescribeCallTime(f), (std::vector<std::string>{"a s1@0 [1,2]", "b a0 [2,3]", "c fresh [3,5]"}));
  ASSERT_EQ(f.storages.size(), 2u);
  EXPECT_TRUE(f.storages[0].call_time);
}

TEST(PlanMemory, TuplesReturnedEscapeTuplesUsedInsideDoNot) {
  Result<ModulePlan> p = Plan(R"(@I.ir_module
class Module:
    @R.function
    def main(x: R.Tensor((8,), dtype="float32")):
        a = R.call_dps_packed("f", (x,), out_sinfo=R.Tensor((8,), dtype="float32"))
        b = R.call_dps_packed("f", (x,), out_sinfo=R.Tensor((8,), dtype="float32"))
        t = (a, b)
        c = t[0]
        d = R.call_dps_packed("f", (c,), out_sinfo=R.Tensor((8,), dtype="float32"))
        e = R.call_dps_packed("g", (d,), out_sinfo=[R.Tensor((8,), dtype="float32"), R.Tensor((16,), dtype="float32")])
        u = (d, e[1])
        return u
)");
  ASSERT_TRUE(p.ok()) << p.status().message();
  // c = t[0] may be a or b (element access is coarse), so both live until d
  // reads c; d and both outputs of e leave through the result tuple.
  EXPECT_EQ(Describe(p->functions[0]), (std::vector<std::string>{"a s0@0 [1,5]", "b s0@64 [2,5]", "d fresh [5,9]",
                                                                 "_ fresh [6,9]", "_ fresh [6,9]"}));
}

TEST(PlanMemory, ValuesPassedToOtherCallsEscape) {
  Result<ModulePlan> p = Plan(R"(@I.ir_module
class Module:
    @R.function
    def id(x: R.Tensor((8,), dtype="float32")) -> R.Tensor((8,), dtype="float32"):
        return x

    @R.function
    def main(x: R.Tensor((8,), dtype="float32")):
        cls = Module
        a = R.call_dps_packed("f", (x,), out_sinfo=R.Tensor((8,), dtype="float32"))
        b = cls.id(a)
        c = R.call_dps_packed("f", (x,), out_sinfo=R.Tensor((8,), dtype="float32"))
        d = R.call_packed("g", c, sinfo_args=R.Tensor((8,), dtype="float32"))
        e = R.call_dps_packed("f", (b,), out_sinfo=R.Tensor((8,), dtype="float32"))
        return e
)");
  ASSERT_TRUE(p.ok()) << p.status().message();
  const FunctionPlan* f = p->Find("main");
  ASSERT_NE(f, nullptr);
  EXPECT_EQ(Describe(*f), (std::vector<std::string>{"a fresh [1,2]", "c fresh [3,4]", "e fresh [5,7]"}));
  EXPECT_TRUE(f->storages.empty());
  EXPECT_EQ(Bytes(f->peak_bytes), "0");
}

TEST(PlanMemory, IfElseBranchesShareAfterTheirTensorsDie) {
  Result<ModulePlan> p = Plan(R"(@I.ir_module
class Module:
    @R.function
    def main(c: R.Tensor((), dtype="bool"), x: R.Tensor((16,), dtype="float32")) -> R.Tensor((16,), dtype="float32"):
        a = R.add(x, x)
        if c:
            b = R.multiply(a, a)
            y: R.Tensor((16,), dtype="float32") = b
        else:
            d = R.add(a, x)
            e = R.nn.relu(d)
            y: R.Tensor((16,), dtype="float32") = e
        z = R.add(y, x)
        w = R.nn.relu(z)
        return w
)");
  ASSERT_TRUE(p.ok()) << p.status().message();
  // a is read in both branches; b (then) and e (else) flow into y and live
  // until z reads it; d dies inside the else branch, so e may take a's
  // bytes and z d's. Positions: a 1, if 2, b 3, then-result 4, d 5, e 6,
  // else-result 7, copy 8, z 9, w 10.
  EXPECT_EQ(Describe(p->functions[0]),
            (std::vector<std::string>{"a s0@0 [1,5]", "b s0@64 [3,9]", "d s0@128 [5,6]", "e s0@0 [6,9]",
                                      "z s0@128 [9,10]", "w fresh [10,12]"}));
  EXPECT_EQ(p->functions[0].storages[0].static_bytes, 192u);
}

// An If on a shape condition (the Winograd-or-direct choice): a call runs
// one branch, so each branch's tensors are laid out with bytes * guard, 0
// in calls that take the other branch; tensors outside keep their size.
constexpr const char* kShapeIf = R"(@I.ir_module
class Module:
    @R.function
    def main(x: R.Tensor(("n", 4), dtype="float32")) -> R.Tensor(("n", 4), dtype="float32"):
        n = T.int64()
        a = R.add(x, x)
        if R.prim_value(n >= 8):
            b = R.multiply(a, a)
            c = R.add(b, a)
            y: R.Tensor(("n", 4), dtype="float32") = R.add(b, c)
        else:
            y: R.Tensor(("n", 4), dtype="float32") = R.nn.relu(a)
        w = R.add(y, x)
        return w
)";

TEST(PlanMemory, TensorsOfAShapeIfBranchTakeBytesOnlyWhenItRuns) {
  Result<ModulePlan> p = Plan(kShapeIf);
  ASSERT_TRUE(p.ok()) << p.status().message();
  const FunctionPlan& f = p->functions[0];
  ASSERT_EQ(f.storages.size(), 1u);
  ASSERT_TRUE(f.storages[0].call_time);
  ASSERT_EQ(f.tensors.size(), 6u);  // a, b, c, then-result, else-result, w
  EXPECT_FALSE(f.tensors[0].guard.defined());
  EXPECT_EQ(Bytes(f.tensors[0].arena_bytes), "n * 16");
  for (size_t i : {1, 2, 3}) {
    EXPECT_EQ(Bytes(f.tensors[i].guard), "n >= 8") << i;
    EXPECT_EQ(Bytes(f.tensors[i].arena_bytes), "n * 16 * (n >= 8)") << i;
  }
  EXPECT_EQ(Bytes(f.tensors[4].arena_bytes), "n * 16 * (1 - (n >= 8))");
  EXPECT_TRUE(f.tensors[5].escapes);
  // The peak stays the sum of every member's size: a bound for either branch.
  EXPECT_EQ(f.storages[0].members, (std::vector<size_t>{0, 1, 2, 3, 4}));
}

TEST(PlanMemory, AnIfOnATensorConditionKeepsFullSizes) {
  // Before the shape guard: every tensor of a branch took its bytes in every
  // call. A tensor condition is not known when the arena is laid out, so
  // that stays.
  Result<ModulePlan> p = Plan(R"(@I.ir_module
class Module:
    @R.function
    def main(c: R.Tensor((), dtype="bool"), x: R.Tensor(("n", 4), dtype="float32")) -> R.Tensor(("n", 4), dtype="float32"):
        n = T.int64()
        if c:
            y: R.Tensor(("n", 4), dtype="float32") = R.multiply(x, x)
        else:
            y: R.Tensor(("n", 4), dtype="float32") = R.nn.relu(x)
        w = R.add(y, x)
        return w
)");
  ASSERT_TRUE(p.ok()) << p.status().message();
  const FunctionPlan& f = p->functions[0];
  ASSERT_EQ(f.tensors.size(), 3u);
  for (size_t i : {0, 1}) {
    EXPECT_FALSE(f.tensors[i].guard.defined()) << i;
    EXPECT_EQ(Bytes(f.tensors[i].arena_bytes), "n * 16") << i;
  }
}

TEST(PlanMemory, NestedIfsMultiplyTheirShapeGuards) {
  // A tensor-condition If inside a shape If keeps the outer guard; a shape
  // If inside that multiplies it.
  Result<ModulePlan> p = Plan(R"(@I.ir_module
class Module:
    @R.function
    def main(c: R.Tensor((), dtype="bool"), x: R.Tensor(("n", 4), dtype="float32")) -> R.Tensor(("n", 4), dtype="float32"):
        n = T.int64()
        if R.prim_value(n >= 8):
            if c:
                if R.prim_value(n < 16):
                    y: R.Tensor(("n", 4), dtype="float32") = R.multiply(x, x)
                else:
                    y: R.Tensor(("n", 4), dtype="float32") = R.add(x, x)
            else:
                y: R.Tensor(("n", 4), dtype="float32") = R.nn.relu(x)
        else:
            y: R.Tensor(("n", 4), dtype="float32") = R.subtract(x, x)
        w = R.add(y, x)
        return w
)");
  ASSERT_TRUE(p.ok()) << p.status().message();
  const FunctionPlan& f = p->functions[0];
  ASSERT_EQ(f.tensors.size(), 5u);
  EXPECT_EQ(Bytes(f.tensors[0].guard), "(n >= 8) * (n < 16)");
  EXPECT_EQ(Bytes(f.tensors[1].guard), "(n >= 8) * (1 - (n < 16))");
  EXPECT_EQ(Bytes(f.tensors[2].guard), "n >= 8");
  EXPECT_EQ(Bytes(f.tensors[3].guard), "1 - (n >= 8)");
  EXPECT_FALSE(f.tensors[4].guard.defined());
}

TEST(PlanMemory, IfResultReturnedEscapes) {
  Result<ModulePlan> p = Plan(R"(@I.ir_module
class Module:
    @R.function
    def main(c: R.Prim("bool"), x: R.Tensor((16,), dtype="float32")) -> R.Tensor((16,), dtype="float32"):
        if c:
            y = R.add(x, x)
        else:
            y = R.multiply(x, x)
        return y
)");
  ASSERT_TRUE(p.ok()) << p.status().message();
  for (const auto& t : p->functions[0].tensors) EXPECT_TRUE(t.escapes) << t.name;
}

TEST(PlanMemory, Errors) {
  PlanOptions options;
  options.upper_bounds["n"] = 0;
  Result<ModulePlan> p = Plan(kSymbolicChain, options);
  ASSERT_FALSE(p.ok());
  EXPECT_EQ(p.status().message(), "main: the upper bound of 'n' must be a positive integer, got 0");

  ir::AttrMap attrs;
  attrs["tir_var_upper_bound"].kind = ir::AttrValue::Kind::kInt;
  Result<std::map<std::string, int64_t>> b = UpperBoundsFromAttrs("main", attrs);
  ASSERT_FALSE(b.ok());
  EXPECT_EQ(b.status().message(),
            "main: attribute tir_var_upper_bound must be a dict of variable names to integers, e.g. {\"n\": 128}");
  attrs["tir_var_upper_bound"].kind = ir::AttrValue::Kind::kIntDict;
  attrs["tir_var_upper_bound"].int_dict["n"] = -3;
  b = UpperBoundsFromAttrs("main", attrs);
  ASSERT_FALSE(b.ok());
  EXPECT_EQ(b.status().message(), "main: tir_var_upper_bound: the upper bound of 'n' must be a positive integer, got -3");
  attrs["tir_var_upper_bound"].int_dict["n"] = 7;
  b = UpperBoundsFromAttrs("main", attrs);
  ASSERT_TRUE(b.ok());
  EXPECT_EQ(b->at("n"), 7);
}

TEST(PlanMemory, BoundFlag) {
  auto ok = ParseBoundFlag("seq_len=128");
  ASSERT_TRUE(ok.ok()) << ok.status().message();
  EXPECT_EQ(ok->first, "seq_len");
  EXPECT_EQ(ok->second, 128);
  for (const char* bad : {"n", "=5", "1n=5", "n-x=5"}) {
    auto r = ParseBoundFlag(bad);
    ASSERT_FALSE(r.ok()) << bad;
    EXPECT_EQ(r.status().message(),
              std::string("--bound '") + bad + "': expected NAME=VALUE with a variable name, e.g. --bound n=128");
  }
  for (const char* bad : {"n=", "n=0", "n=-4", "n=12x", "n=99999999999999999999"}) {
    auto r = ParseBoundFlag(bad);
    ASSERT_FALSE(r.ok()) << bad;
    EXPECT_EQ(r.status().message(),
              std::string("--bound '") + bad + "': the upper bound of 'n' must be a positive integer");
  }
}

}  // namespace
}  // namespace memory
}  // namespace kiln
