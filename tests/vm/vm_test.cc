// The register VM end to end: hand-assembled programs, serialized by the
// writer, loaded, verified and run.
#include <gtest/gtest.h>

#include <limits>

#include <thread>

#include "runtime/program.h"
#include "runtime/registry.h"
#include "tests/vm/test_util.h"
#include "vm/assembler.h"

namespace kiln {
namespace {

using compiler::CallableInfo;
using compiler::CallableKind;
using compiler::ConstantKind;
using compiler::ConstantValue;
using compiler::FunctionInfo;
using compiler::VmfbProgram;
using testing::AddProgram;
using testing::F32;
using testing::Load;
using testing::Serialize;
using testing::Values;
using vm::Assembler;
using vm::CallableArg;
using vm::Const;
using vm::Imm;
using vm::Reg;

std::shared_ptr<const vm::Module> MustLoad(const VmfbProgram& p) {
  auto m = Load(Serialize(p));
  EXPECT_TRUE(m.ok()) << m.status().ToString();
  return m.ok() ? m.value() : nullptr;
}

Status Call(const vm::Module& m, const std::string& fn, std::vector<Any> args, Any* out) {
  return m.CreateContext()->Invoke(fn, args, out);
}

TEST(VmTest, MatchesShapesAllocatesAndCallsPackedFunction) {
  auto m = MustLoad(AddProgram());
  ASSERT_TRUE(m);
  auto ctx = m->CreateContext();
  for (int64_t n : {1, 3, 5}) {
    std::vector<float> a(n * 4), b(n * 4);
    for (int i = 0; i < n * 4; ++i) a[i] = static_cast<float>(i), b[i] = 100.0f * i;
    Any out;
    std::vector<Any> args = {F32({n, 4}, a), F32({n, 4}, b)};
    ASSERT_TRUE(ctx->Invoke("main", args, &out).ok());
    ASSERT_TRUE(out.is_tensor());
    EXPECT_EQ(out.tensor().shape(), (std::vector<int64_t>{n, 4}));
    std::vector<float> got = Values(out.tensor());
    for (int i = 0; i < n * 4; ++i) EXPECT_EQ(got[i], 101.0f * i);
  }
}

TEST(VmTest, SignatureAndMetadata) {
  auto m = MustLoad(AddProgram());
  ASSERT_TRUE(m);
  EXPECT_EQ(m->FunctionNames(), std::vector<std::string>{"main"});
  auto sig = m->GetSignature("main");
  ASSERT_TRUE(sig.ok());
  ASSERT_EQ(sig->params.size(), 2u);
  EXPECT_EQ(sig->params[1].name, "y");
  EXPECT_EQ(sig->params[0].dims, (std::vector<std::string>{"n", "4"}));
  EXPECT_EQ(m->GetSignature("nope").status().code(), StatusCode::kNotFound);
  EXPECT_NE(m->Producer().find("kiln 0.1.0, format 1.1"), std::string::npos);
  EXPECT_NE(m->TargetDescription().find("x86_64-unknown-linux-gnu"), std::string::npos);
  EXPECT_FALSE(m->HasStaticGraph("main"));
}

struct ArgErrorCase {
  std::vector<Any> args;
  std::string message;
};

TEST(VmTest, ArgumentErrorsNameFunctionArgumentAndDimension) {
  auto m = MustLoad(AddProgram());
  ASSERT_TRUE(m);
  Tensor i32 = Tensor::Empty(std::vector<int64_t>{2, 4}, DType::Int32()).value();
  std::vector<ArgErrorCase> cases = {
      {{F32({2, 4}, std::vector<float>(8))}, "main: expected 2 arguments, got 1"},
      {{F32({8}, std::vector<float>(8)), F32({2, 4}, std::vector<float>(8))},
       "main: argument x: expected 2 dimensions, got 1"},
      {{F32({2, 5}, std::vector<float>(10)), F32({2, 4}, std::vector<float>(8))},
       "main: argument x, dimension 1: expected 4, got 5"},
      {{F32({2, 4}, std::vector<float>(8)), F32({3, 4}, std::vector<float>(12))},
       "main: argument y, dimension 0: expected 2 (n), got 3"},
      {{Any(i32), F32({2, 4}, std::vector<float>(8))}, "main: argument x: expected dtype float32, got int32"},
      {{Any(int64_t{3}), F32({2, 4}, std::vector<float>(8))}, "main: argument x: expected a tensor, got int 3"},
  };
  for (const ArgErrorCase& c : cases) {
    Any out;
    Status s = Call(*m, "main", c.args, &out);
    EXPECT_EQ(s.code(), StatusCode::kInvalidArgument);
    EXPECT_EQ(s.message(), c.message);
  }
}

TEST(VmTest, UnknownFunctionListsWhatExists) {
  auto m = MustLoad(AddProgram());
  ASSERT_TRUE(m);
  Any out;
  Status s = Call(*m, "foo", {}, &out);
  EXPECT_EQ(s.code(), StatusCode::kNotFound);
  EXPECT_EQ(s.message(), "no function named 'foo' in module; it has: main");
}

// select(c, a, b): to_bool(c) ? a : b, through If and Goto.
VmfbProgram SelectProgram() {
  VmfbProgram p;
  p.callables = {{CallableKind::kBuiltin, "vm.builtin.to_bool"}, {CallableKind::kBuiltin, "vm.builtin.copy"}};
  FunctionInfo f;
  f.name = "select";
  f.params.resize(3);
  f.register_count = 5;
  Assembler a;
  vm::Label otherwise = a.NewLabel(), end = a.NewLabel();
  a.Call(3, 0, {Reg(0)});
  a.If(3, otherwise);
  a.Call(4, 1, {Reg(1)});
  a.Goto(end);
  a.Bind(otherwise);
  a.Call(4, 1, {Reg(2)});
  a.Bind(end);
  a.Ret(4);
  f.code = a.Finish();
  p.functions.push_back(f);
  return p;
}

TEST(VmTest, IfAndGotoWithToBool) {
  auto m = MustLoad(SelectProgram());
  ASSERT_TRUE(m);
  Any out;
  ASSERT_TRUE(Call(*m, "select", {Any(int64_t{1}), Any(int64_t{10}), Any(int64_t{20})}, &out).ok());
  EXPECT_EQ(out.int_value(), 10);
  ASSERT_TRUE(Call(*m, "select", {Any(int64_t{0}), Any(int64_t{10}), Any(int64_t{20})}, &out).ok());
  EXPECT_EQ(out.int_value(), 20);
  // A 0-d tensor condition.
  Tensor zero_d = F32({}, {0.0f});
  ASSERT_TRUE(Call(*m, "select", {Any(zero_d), Any(int64_t{10}), Any(int64_t{20})}, &out).ok());
  EXPECT_EQ(out.int_value(), 20);
  zero_d.data<float>()[0] = 2.0f;
  ASSERT_TRUE(Call(*m, "select", {Any(zero_d), Any(int64_t{10}), Any(int64_t{20})}, &out).ok());
  EXPECT_EQ(out.int_value(), 10);
  Status s = Call(*m, "select", {Any("yes"), Any(int64_t{10}), Any(int64_t{20})}, &out);
  EXPECT_EQ(s.message(), "select: vm.builtin.to_bool: expected an int, a float or a 0-d tensor, got string \"yes\"");
}

TEST(VmTest, IfOnANonIntConditionFails) {
  VmfbProgram p;
  FunctionInfo f;
  f.name = "main";
  f.params.resize(1);
  f.register_count = 1;
  Assembler a;
  vm::Label l = a.NewLabel();
  a.If(0, l);
  a.Bind(l);
  a.Ret(0);
  f.code = a.Finish();
  p.functions.push_back(f);
  auto m = MustLoad(p);
  ASSERT_TRUE(m);
  Any out;
  Status s = Call(*m, "main", {Any("x")}, &out);
  EXPECT_EQ(s.message(), "main: If needs an int condition, got string \"x\" (use vm.builtin.to_bool)");
}

// main(x) calls twice(x) which returns x + x through test.add; main returns
// (twice(x), shape(x), 7) as a tuple, and "second" reads item 1 of main's result.
VmfbProgram NestedTupleProgram() {
  VmfbProgram p = AddProgram();
  p.functions.clear();
  p.constants = {testing::StringConstant("twice: argument x")};
  ConstantValue seven;
  seven.kind = ConstantKind::kInt;
  seven.int_value = 7;
  p.constants.push_back(seven);
  int twice_c = static_cast<int>(p.callables.size());
  p.callables.push_back({CallableKind::kFunction, "twice", 1});
  int make_tuple = static_cast<int>(p.callables.size());
  p.callables.push_back({CallableKind::kBuiltin, "vm.builtin.make_tuple"});
  int getitem = static_cast<int>(p.callables.size());
  p.callables.push_back({CallableKind::kBuiltin, "vm.builtin.tuple_getitem"});
  int main_c = static_cast<int>(p.callables.size());
  p.callables.push_back({CallableKind::kFunction, "main", 0});

  FunctionInfo main;
  main.name = "main";
  main.params.resize(1);
  main.register_count = 4;
  main.shape_heap_size = 1;
  {
    Assembler a;
    a.Call(1, twice_c, {Reg(0)});
    a.Call(-1, testing::kMatchShape, {Reg(0), Const(0), Imm(1), Imm(1), Imm(0)});
    a.Call(2, testing::kMakeShape, {Imm(1), Imm(1), Imm(0)});
    a.Call(3, make_tuple, {Reg(1), Reg(2), Const(1)});
    a.Ret(3);
    main.code = a.Finish();
  }
  FunctionInfo twice;
  twice.name = "twice";
  twice.params.resize(1);
  twice.register_count = 4;
  twice.shape_heap_size = 1;
  {
    Assembler a;
    a.Call(-1, testing::kMatchShape, {Reg(0), Const(0), Imm(1), Imm(1), Imm(0)});
    a.Call(1, testing::kMakeShape, {Imm(1), Imm(1), Imm(0)});
    a.Call(2, testing::kAllocTensor, {Reg(1), Imm(kDLFloat), Imm(32), Imm(1)});
    a.Call(-1, testing::kTestAdd, {Reg(0), Reg(0), Reg(2)});
    a.Ret(2);
    twice.code = a.Finish();
  }
  FunctionInfo second;
  second.name = "second";
  second.params.resize(1);
  second.register_count = 3;
  {
    Assembler a;
    a.Call(1, main_c, {Reg(0)});
    a.Call(2, getitem, {Reg(1), Imm(1)});
    a.Ret(2);
    second.code = a.Finish();
  }
  p.functions = {main, twice, second};
  return p;
}

TEST(VmTest, NestedCallsAndTuples) {
  auto m = MustLoad(NestedTupleProgram());
  ASSERT_TRUE(m);
  Any out;
  ASSERT_TRUE(Call(*m, "main", {F32({3}, {1, 2, 3})}, &out).ok());
  ASSERT_TRUE(out.is_tuple());
  ASSERT_EQ(out.tuple_fields().size(), 3u);
  EXPECT_EQ(Values(out.tuple_fields()[0].tensor()), (std::vector<float>{2, 4, 6}));
  EXPECT_EQ(out.tuple_fields()[1].shape_dims(), std::vector<int64_t>{3});
  EXPECT_EQ(out.tuple_fields()[2].int_value(), 7);
  ASSERT_TRUE(Call(*m, "second", {F32({2}, {1, 2})}, &out).ok());
  ASSERT_TRUE(out.is_shape());
  EXPECT_EQ(out.shape_dims(), std::vector<int64_t>{2});
}

TEST(VmTest, ShapeArithmetic) {
  // f(x: [n]) -> shape (n * 3 + 1, n floordiv 2, -7 floormod 3, min(n, 2))
  VmfbProgram p = AddProgram();
  p.functions.clear();
  p.constants = {testing::StringConstant("f: argument x")};
  int arith = static_cast<int>(p.callables.size());
  p.callables.push_back({CallableKind::kBuiltin, "vm.builtin.shape_arith"});
  FunctionInfo f;
  f.name = "f";
  f.params.resize(1);
  f.register_count = 2;
  f.shape_heap_size = 5;
  Assembler a;
  a.Call(-1, testing::kMatchShape, {Reg(0), Const(0), Imm(1), Imm(1), Imm(0)});
  a.Call(-1, arith, {Imm(1), Imm(2), Imm(1), Imm(0), Imm(0), Imm(3)});   // h1 = n * 3
  a.Call(-1, arith, {Imm(1), Imm(0), Imm(1), Imm(1), Imm(0), Imm(1)});   // h1 = h1 + 1
  a.Call(-1, arith, {Imm(2), Imm(3), Imm(1), Imm(0), Imm(0), Imm(2)});   // h2 = n floordiv 2
  a.Call(-1, arith, {Imm(3), Imm(4), Imm(0), Imm(-7), Imm(0), Imm(3)});  // h3 = -7 floormod 3
  a.Call(-1, arith, {Imm(4), Imm(5), Imm(1), Imm(0), Imm(0), Imm(2)});   // h4 = min(n, 2)
  a.Call(1, testing::kMakeShape, {Imm(4), Imm(1), Imm(1), Imm(1), Imm(2), Imm(1), Imm(3), Imm(1), Imm(4)});
  a.Ret(1);
  f.code = a.Finish();
  p.functions.push_back(f);
  auto m = MustLoad(p);
  ASSERT_TRUE(m);
  Any out;
  ASSERT_TRUE(Call(*m, "f", {F32({5}, std::vector<float>(5))}, &out).ok());
  EXPECT_EQ(out.shape_dims(), (std::vector<int64_t>{16, 2, 2, 2}));
}

TEST(VmTest, ShapeArithmeticGroupsRunInOrderInOneCall) {
  // f(x: [n]) -> shape ((n * 3 + 1) floordiv 2, n - 1, and comparisons of
  // them): one shape_arith call of seven groups, later ones reading what
  // earlier ones wrote.
  VmfbProgram p = AddProgram();
  p.functions.clear();
  p.constants = {testing::StringConstant("f: argument x")};
  int arith = static_cast<int>(p.callables.size());
  p.callables.push_back({CallableKind::kBuiltin, "vm.builtin.shape_arith"});
  FunctionInfo f;
  f.name = "f";
  f.params.resize(1);
  f.register_count = 2;
  f.shape_heap_size = 7;
  Assembler a;
  a.Call(-1, testing::kMatchShape, {Reg(0), Const(0), Imm(1), Imm(1), Imm(0)});
  a.Call(-1, arith, {Imm(1), Imm(2), Imm(1), Imm(0), Imm(0), Imm(3),     // h1 = n * 3
                     Imm(1), Imm(0), Imm(1), Imm(1), Imm(0), Imm(1),     // h1 = h1 + 1
                     Imm(2), Imm(3), Imm(1), Imm(1), Imm(0), Imm(2),     // h2 = h1 floordiv 2
                     Imm(3), Imm(1), Imm(1), Imm(0), Imm(0), Imm(1),     // h3 = n - 1
                     Imm(4), Imm(7), Imm(1), Imm(2), Imm(0), Imm(8),     // h4 = h2 == 8
                     Imm(5), Imm(11), Imm(1), Imm(3), Imm(1), Imm(0),    // h5 = h3 > n
                     Imm(6), Imm(13), Imm(1), Imm(4), Imm(0), Imm(1)});  // h6 = h4 and 1
  a.Call(1, testing::kMakeShape, {Imm(5), Imm(1), Imm(2), Imm(1), Imm(3), Imm(1), Imm(4), Imm(1), Imm(5), Imm(1), Imm(6)});
  a.Ret(1);
  f.code = a.Finish();
  p.functions.push_back(f);
  auto m = MustLoad(p);
  ASSERT_TRUE(m);
  Any out;
  ASSERT_TRUE(Call(*m, "f", {F32({5}, std::vector<float>(5))}, &out).ok());
  EXPECT_EQ(out.shape_dims(), (std::vector<int64_t>{8, 4, 1, 0, 1}));
}

TEST(VmTest, ShapeArithmeticWrapsInsteadOfOverflowing) {
  // The arithmetic runs for If branches not taken too: 2^62 + 2^62,
  // INT64_MIN * -1 and INT64_MIN floordiv -1 wrap (no undefined behaviour, no
  // trap); INT64_MIN floormod -1 is 0.
  VmfbProgram p = AddProgram();
  p.functions.clear();
  p.constants = {testing::StringConstant("f: argument x")};
  int arith = static_cast<int>(p.callables.size());
  p.callables.push_back({CallableKind::kBuiltin, "vm.builtin.shape_arith"});
  FunctionInfo f;
  f.name = "f";
  f.params.resize(1);
  f.register_count = 2;
  f.shape_heap_size = 7;
  Assembler a;
  a.Call(-1, testing::kMatchShape, {Reg(0), Const(0), Imm(1), Imm(1), Imm(0)});
  a.Call(-1, arith, {Imm(1), Imm(2), Imm(0), Imm(65536), Imm(0), Imm(32768),  // h1 = 2^31
                     Imm(2), Imm(2), Imm(1), Imm(1), Imm(1), Imm(1),          // h2 = 2^62
                     Imm(3), Imm(0), Imm(1), Imm(2), Imm(1), Imm(2),          // h3 = 2^62 + 2^62
                     Imm(4), Imm(2), Imm(1), Imm(3), Imm(0), Imm(-1),         // h4 = h3 * -1
                     Imm(5), Imm(3), Imm(1), Imm(3), Imm(0), Imm(-1),         // h5 = h3 floordiv -1
                     Imm(6), Imm(4), Imm(1), Imm(3), Imm(0), Imm(-1)});       // h6 = h3 floormod -1
  a.Call(1, testing::kMakeShape, {Imm(4), Imm(1), Imm(3), Imm(1), Imm(4), Imm(1), Imm(5), Imm(1), Imm(6)});
  a.Ret(1);
  f.code = a.Finish();
  p.functions.push_back(f);
  auto m = MustLoad(p);
  ASSERT_TRUE(m);
  Any out;
  ASSERT_TRUE(Call(*m, "f", {F32({5}, std::vector<float>(5))}, &out).ok());
  const int64_t kMin = std::numeric_limits<int64_t>::min();
  EXPECT_EQ(out.shape_dims(), (std::vector<int64_t>{kMin, kMin, kMin, 0}));
}

TEST(VmTest, HeapLoadReadsASlotIntoARegister) {
  // f(x: [n]) -> n * 3 as an int (what a kernel's tir_vars and a symbolic
  // R.prim_value are); the verifier refuses a slot outside the heap.
  VmfbProgram p = AddProgram();
  p.functions.clear();
  p.constants = {testing::StringConstant("f: argument x")};
  int arith = static_cast<int>(p.callables.size());
  p.callables.push_back({CallableKind::kBuiltin, "vm.builtin.shape_arith"});
  int load = static_cast<int>(p.callables.size());
  p.callables.push_back({CallableKind::kBuiltin, "vm.builtin.heap_load"});
  FunctionInfo f;
  f.name = "f";
  f.params.resize(1);
  f.register_count = 2;
  f.shape_heap_size = 2;
  Assembler a;
  a.Call(-1, testing::kMatchShape, {Reg(0), Const(0), Imm(1), Imm(1), Imm(0)});
  a.Call(-1, arith, {Imm(1), Imm(2), Imm(1), Imm(0), Imm(0), Imm(3)});  // h1 = n * 3
  a.Call(1, load, {Imm(1)});
  a.Ret(1);
  f.code = a.Finish();
  p.functions.push_back(f);
  auto m = MustLoad(p);
  ASSERT_TRUE(m);
  Any out;
  ASSERT_TRUE(Call(*m, "f", {F32({5}, std::vector<float>(5))}, &out).ok());
  ASSERT_TRUE(out.is_int()) << out.Describe();
  EXPECT_EQ(out.int_value(), 15);
  Assembler bad;
  bad.Call(1, load, {Imm(2)});
  bad.Ret(1);
  p.functions[0].code = bad.Finish();
  auto refused = Load(Serialize(p));
  ASSERT_FALSE(refused.ok());
  EXPECT_NE(refused.status().message().find("shape-heap slot is 2, outside [0, 1]"), std::string::npos)
      << refused.status().message();
}

TEST(VmTest, HeapLoadsReadSlotsIntoTheirRegisters) {
  // f(x: [n]) -> (n * 3, n, n * 3) by one heap_loads into r1, r2 and r3; the
  // verifier refuses an odd count, a register or slot out of range.
  VmfbProgram p = AddProgram();
  p.functions.clear();
  p.constants = {testing::StringConstant("f: argument x")};
  int arith = static_cast<int>(p.callables.size());
  p.callables.push_back({CallableKind::kBuiltin, "vm.builtin.shape_arith"});
  int loads = static_cast<int>(p.callables.size());
  p.callables.push_back({CallableKind::kBuiltin, "vm.builtin.heap_loads"});
  int tuple = static_cast<int>(p.callables.size());
  p.callables.push_back({CallableKind::kBuiltin, "vm.builtin.make_tuple"});
  FunctionInfo f;
  f.name = "f";
  f.params.resize(1);
  f.register_count = 5;
  f.shape_heap_size = 2;
  Assembler a;
  a.Call(-1, testing::kMatchShape, {Reg(0), Const(0), Imm(1), Imm(1), Imm(0)});
  a.Call(-1, arith, {Imm(1), Imm(2), Imm(1), Imm(0), Imm(0), Imm(3)});  // h1 = n * 3
  a.Call(-1, loads, {Imm(1), Imm(1), Imm(2), Imm(0), Imm(3), Imm(1)});
  a.Call(4, tuple, {Reg(1), Reg(2), Reg(3)});
  a.Ret(4);
  f.code = a.Finish();
  p.functions.push_back(f);
  auto m = MustLoad(p);
  ASSERT_TRUE(m);
  Any out;
  ASSERT_TRUE(Call(*m, "f", {F32({5}, std::vector<float>(5))}, &out).ok());
  ASSERT_TRUE(out.is_tuple()) << out.Describe();
  std::vector<int64_t> got;
  for (const Any& v : out.tuple_fields()) got.push_back(v.is_int() ? v.int_value() : -1);
  EXPECT_EQ(got, (std::vector<int64_t>{15, 5, 15}));
  struct Case {
    std::vector<int64_t> args;
    std::string message;
  };
  const Case cases[] = {
      {{Imm(1), Imm(1), Imm(2)}, "vm.builtin.heap_loads takes (register, slot) pairs, got 3 arguments"},
      {{Imm(5), Imm(1)}, "destination register is 5, outside [0, 4]"},
      {{Reg(1), Imm(1)}, "destination register must be an immediate"},
      {{Imm(1), Imm(0), Imm(2), Imm(2)}, "shape-heap slot is 2, outside [0, 1]"},
  };
  for (const Case& c : cases) {
    Assembler bad;
    bad.Call(-1, loads, c.args);
    bad.Ret(0);
    p.functions[0].code = bad.Finish();
    auto refused = Load(Serialize(p));
    ASSERT_FALSE(refused.ok()) << c.message;
    EXPECT_NE(refused.status().message().find(c.message), std::string::npos) << refused.status().message();
  }
}

TEST(VmTest, PackedFunctionErrorsCarryContext) {
  auto m = MustLoad(AddProgram());
  ASSERT_TRUE(m);
  VmfbProgram p = AddProgram();
  // Call test.add with only two arguments: the packed function refuses.
  p.functions[0].code.clear();
  Assembler a;
  a.Call(-1, testing::kTestAdd, {Reg(0), Reg(1)});
  a.Ret(0);
  p.functions[0].code = a.Finish();
  auto bad = MustLoad(p);
  ASSERT_TRUE(bad);
  Any out;
  Status s = Call(*bad, "main", {F32({1}, {1}), F32({1}, {1})}, &out);
  EXPECT_EQ(s.message(), "main: packed function 'test.add': test.add takes 3 arguments");
}

TEST(VmTest, CallablesAsValuesAndRecursionLimit) {
  // apply(x) passes the packed function test.add as a value to "call3",
  // a packed function that calls its first argument with the rest.
  static bool registered = [] {
    return RegisterGlobalFunction("test.call3", [](Span<const Any> args, Any* ret) -> Status {
             if (args.size() != 4 || !args[0].is_function()) return InvalidArgument("test.call3: bad arguments");
             return args[0].function().fn(args.subspan(1, 3), ret);
           }).ok();
  }();
  ASSERT_TRUE(registered);
  VmfbProgram p = AddProgram();
  int call3 = static_cast<int>(p.callables.size());
  p.callables.push_back({CallableKind::kPacked, "test.call3"});
  int self = static_cast<int>(p.callables.size());
  p.callables.push_back({CallableKind::kFunction, "loop", 1});
  p.functions[0].code.clear();
  {
    Assembler a;
    a.Call(-1, call3, {CallableArg(testing::kTestAdd), Reg(0), Reg(0), Reg(1)});
    a.Ret(1);
    p.functions[0].code = a.Finish();
  }
  FunctionInfo loop;
  loop.name = "loop";
  loop.register_count = 1;
  {
    Assembler a;
    a.Call(0, self, {});
    a.Ret(0);
    loop.code = a.Finish();
  }
  p.functions.push_back(loop);
  auto m = MustLoad(p);
  ASSERT_TRUE(m);
  Any out;
  Tensor y = F32({2}, {0, 0});
  ASSERT_TRUE(Call(*m, "main", {F32({2}, {1, 2}), Any(y)}, &out).ok());
  EXPECT_EQ(Values(y), (std::vector<float>{2, 4}));
  Status s = Call(*m, "loop", {}, &out);
  EXPECT_EQ(s.code(), StatusCode::kResourceExhausted);
  EXPECT_NE(s.message().find("call depth exceeds"), std::string::npos) << s.message();
}

TEST(VmTest, ManyThreadsShareOneModule) {
  auto m = MustLoad(AddProgram());
  ASSERT_TRUE(m);
  std::vector<int> failures(4, 0);
  std::vector<std::thread> threads;
  for (int t = 0; t < 4; ++t) {
    threads.emplace_back([&, t] {
      auto ctx = m->CreateContext();
      int64_t n = t + 1;
      for (int iter = 0; iter < 200; ++iter) {
        std::vector<float> a(n * 4, static_cast<float>(t)), b(n * 4, static_cast<float>(iter));
        std::vector<Any> args = {F32({n, 4}, a), F32({n, 4}, b)};
        Any out;
        if (!ctx->Invoke("main", args, &out).ok() || !out.is_tensor() ||
            out.tensor().shape() != std::vector<int64_t>{n, 4}) {
          ++failures[t];
          continue;
        }
        for (float v : Values(out.tensor())) {
          if (v != static_cast<float>(t + iter)) {
            ++failures[t];
            break;
          }
        }
      }
    });
  }
  for (auto& th : threads) th.join();
  EXPECT_EQ(failures, std::vector<int>(4, 0));
}

}  // namespace
}  // namespace kiln
