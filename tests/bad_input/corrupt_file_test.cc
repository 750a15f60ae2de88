// Every check of "verify once at load" (issue 5 §1), each made to fire by
// damaging one field of a valid file in place: the field is found through the
// FlatBuffers read API and its bytes are patched, as a bit flip on disk would.
// Then damage inside each segment, which only the checksums see (issue 19
// §3), the checksums themselves, and a file from before checksums. Then
// truncation at many offsets, in memory and on disk. After every bad load, a
// module loaded before from the good bytes still runs correctly.
#include <gtest/gtest.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cstdio>
#include <cstring>
#include <functional>
#include <string>
#include <vector>

#include "runtime/vmfb_loader.h"
#include "schemas/vmfb_generated.h"
#include "tests/vm/test_util.h"
#include "vm/assembler.h"
#include "vm/module.h"
#include "vm/opcodes.h"

namespace kiln {
namespace {

using compiler::CallableKind;
using compiler::GraphArgInfo;
using compiler::GraphArgKind;
using compiler::VmfbProgram;
using testing::F32;
using testing::Values;

// Callables appended to AddProgram's.
constexpr uint32_t kJumpyAsValue = testing::kNumAddCallables;  // Function callable -> jumpy
constexpr uint32_t kAddKernel = kJumpyAsValue + 1;             // kernel add_f32 of the test library

// AddProgram with a tensor constant (weights segment), a native library
// (second segment) and its kernel, a Function callable, a second function
// with a jump, and a static graph for main.
VmfbProgram FullProgram() {
  VmfbProgram p = testing::AddProgram();
  compiler::ConstantValue w;
  w.kind = compiler::ConstantKind::kTensor;
  w.name = "weight";
  w.tensor = F32({2, 3}, {1, 2, 3, 4, 5, 6});
  p.constants.push_back(w);  // constant 2
  p.callables.push_back({CallableKind::kFunction, "jumpy", 1});
  p.callables.push_back({CallableKind::kKernel, "add_f32", 0, 3});
  p.native_libraries.push_back(testing::TestKernelLibraryInfo());

  compiler::FunctionInfo jumpy;
  jumpy.name = "jumpy";
  compiler::ValueInfo x;
  x.name = "x";
  jumpy.params = {x};
  jumpy.results = {x};
  jumpy.register_count = 1;
  vm::Assembler a;
  vm::Label l = a.NewLabel();
  a.Goto(l);
  a.Bind(l);
  a.Ret(0);
  jumpy.code = a.Finish();  // [Goto, 2, Ret, 0]
  p.functions.push_back(jumpy);

  compiler::GraphInfo g;
  g.function = "main";
  auto arg = [](GraphArgKind kind, uint32_t index) {
    GraphArgInfo info;
    info.kind = kind;
    info.index = index;
    info.shape = {2, 4};
    return info;
  };
  g.inputs = {arg(GraphArgKind::kInput, 0), arg(GraphArgKind::kInput, 1)};
  g.outputs = {arg(GraphArgKind::kOutput, 0)};
  g.nodes.push_back({testing::kTestAdd, {arg(GraphArgKind::kInput, 0), arg(GraphArgKind::kInput, 1),
                                          arg(GraphArgKind::kOutput, 0)}});
  p.graphs.push_back(g);
  return p;
}

// Overwrites the sizeof(T) bytes at `field` (a pointer into `bytes`).
// A generated table's hidden flatbuffers::Table base (same bytes), for the
// address of one of its fields.
template <typename FbTable>
const void* FieldOf(const FbTable* table, flatbuffers::voffset_t vt) {
  return reinterpret_cast<const flatbuffers::Table*>(table)->GetAddressOf(vt);
}

template <typename T>
void Poke(std::vector<uint8_t>* bytes, const void* field, T value) {
  ASSERT_NE(field, nullptr) << "the field is absent from the buffer";
  size_t offset = static_cast<const uint8_t*>(field) - bytes->data();
  ASSERT_LE(offset + sizeof(T), bytes->size());
  std::memcpy(bytes->data() + offset, &value, sizeof(T));
}

// The bytecode word `word` of function `f`.
const void* CodeWord(const fb::Module* m, uint32_t f, uint32_t word) {
  return m->code()->Data() + (m->functions()->Get(f)->code_begin() + word) * sizeof(int64_t);
}

struct Case {
  const char* name;
  std::function<void(const fb::Module*, std::vector<uint8_t>*)> damage;
  StatusCode code;
  const char* message;  // a substring of the error
};

class CorruptFileTest : public ::testing::Test {
 protected:
  void SetUp() override {
    good_ = testing::Serialize(FullProgram());
    auto m = testing::Load(good_);
    ASSERT_TRUE(m.ok()) << m.status().ToString();
    module_ = std::move(m).value();
  }

  void ExpectGoodModuleStillWorks() {
    Any out;
    std::vector<Any> args = {F32({1, 4}, {1, 2, 3, 4}), F32({1, 4}, {1, 1, 1, 1})};
    Status s = module_->CreateContext()->Invoke("main", args, &out);
    ASSERT_TRUE(s.ok()) << s.ToString();
    EXPECT_EQ(Values(out.tensor()), (std::vector<float>{2, 3, 4, 5}));
  }

  void Run(const Case& c) {
    SCOPED_TRACE(c.name);
    std::vector<uint8_t> bytes = good_;
    const fb::Module* m = fb::GetSizePrefixedModule(bytes.data());
    c.damage(m, &bytes);
    ASSERT_NE(bytes, good_) << "the damage changed nothing";
    auto loaded = testing::Load(bytes);
    ASSERT_FALSE(loaded.ok()) << c.name << ": the damaged file loaded";
    EXPECT_EQ(loaded.status().code(), c.code) << loaded.status().ToString();
    EXPECT_NE(loaded.status().message().find(c.message), std::string::npos)
        << "want: " << c.message << "\ngot:  " << loaded.status().message();
    ExpectGoodModuleStillWorks();
  }

  std::vector<uint8_t> good_;
  std::shared_ptr<const vm::Module> module_;
};

using fb::Module;
using FbFunction = fb::Function;

TEST_F(CorruptFileTest, RegisterIndex) {
  Run({"ret register", [](const Module* m, std::vector<uint8_t>* b) {
         uint32_t words = m->functions()->Get(0)->code_end() - m->functions()->Get(0)->code_begin();
         Poke<int64_t>(b, CodeWord(m, 0, words - 1), 99);  // Ret r3 -> Ret r99
       },
       StatusCode::kDataLoss, "corrupt bytecode in function 'main' at word"});
  Run({"register count", [](const Module* m, std::vector<uint8_t>* b) {
         Poke<uint32_t>(b, FieldOf(m->functions()->Get(0), FbFunction::VT_REGISTER_COUNT), 3);
       },
       StatusCode::kDataLoss, "register 3 out of range (3 registers)"});
  Run({"register count over the cap", [](const Module* m, std::vector<uint8_t>* b) {
         Poke<uint32_t>(b, FieldOf(m->functions()->Get(0), FbFunction::VT_REGISTER_COUNT), 0x7fffffff);
       },
       StatusCode::kDataLoss, "function 'main' has 2147483647 registers (limit"});
}

TEST_F(CorruptFileTest, ConstantIndex) {
  // Word 9 of main is check_tensor's context argument, Const(0).
  Run({"constant operand", [](const Module* m, std::vector<uint8_t>* b) {
         Poke<int64_t>(b, CodeWord(m, 0, 9), vm::Const(77));
       },
       StatusCode::kDataLoss, "at word 9: constant 77 out of range (3 constants)"});
}

TEST_F(CorruptFileTest, CallableAndImportIndex) {
  // Word 2 of main is the first Call's callable.
  Run({"callable operand", [](const Module* m, std::vector<uint8_t>* b) { Poke<int64_t>(b, CodeWord(m, 0, 2), 42); },
       StatusCode::kDataLoss, "at word 0: callable 42 out of range (7 callables)"});
  Run({"import name", [](const Module* m, std::vector<uint8_t>* b) {
         const flatbuffers::String* name = m->callables()->Get(testing::kTestAdd)->name();
         Poke<char>(b, name->c_str() + name->size() - 1, 'X');  // test.add -> test.adX
       },
       StatusCode::kNotFound, "cannot resolve 1 callable: packed function 'test.adX'"});
}

TEST_F(CorruptFileTest, FunctionIndex) {
  Run({"function callable", [](const Module* m, std::vector<uint8_t>* b) {
         Poke<uint32_t>(b, FieldOf(m->callables()->Get(kJumpyAsValue), fb::Callable::VT_FUNCTION_INDEX), 5);
       },
       StatusCode::kDataLoss, "callable 5 names function 5; the module has 2"});
}

TEST_F(CorruptFileTest, KernelNameAndArity) {
  Run({"kernel name", [](const Module* m, std::vector<uint8_t>* b) {
         const flatbuffers::String* name = m->callables()->Get(kAddKernel)->name();
         Poke<char>(b, name->c_str() + 6, '3');  // add_f32 -> add_f33
       },
       StatusCode::kNotFound, "kernel 'add_f33'"});
  Run({"kernel arity", [](const Module* m, std::vector<uint8_t>* b) {
         Poke<int32_t>(b, FieldOf(m->callables()->Get(kAddKernel), fb::Callable::VT_NUM_ARGS), 5);
       },
       StatusCode::kIncompatible, "kernel 'add_f32' takes 3 arguments in its library; the program says 5"});
  Run({"callable kind", [](const Module* m, std::vector<uint8_t>* b) {
         Poke<uint8_t>(b, FieldOf(m->callables()->Get(kAddKernel), fb::Callable::VT_KIND), 9);
       },
       StatusCode::kDataLoss, "callable 6 has an unknown kind 9"});
}

TEST_F(CorruptFileTest, ShapeHeapSlot) {
  Run({"shape heap size", [](const Module* m, std::vector<uint8_t>* b) {
         Poke<uint32_t>(b, FieldOf(m->functions()->Get(0), FbFunction::VT_SHAPE_HEAP_SIZE), 0);
       },
       StatusCode::kDataLoss, "shape-heap slot is 0, outside [0, -1]"});
}

TEST_F(CorruptFileTest, JumpTarget) {
  Run({"goto offset", [](const Module* m, std::vector<uint8_t>* b) { Poke<int64_t>(b, CodeWord(m, 1, 1), 1000); },
       StatusCode::kDataLoss, "corrupt bytecode in function 'jumpy' at word 0: jump to word 1000, outside the function"});
  Run({"goto into an operand", [](const Module* m, std::vector<uint8_t>* b) { Poke<int64_t>(b, CodeWord(m, 1, 1), 3); },
       StatusCode::kDataLoss, "jump to word 3, outside the function or not on an instruction boundary"});
  Run({"goto backwards out", [](const Module* m, std::vector<uint8_t>* b) { Poke<int64_t>(b, CodeWord(m, 1, 1), -5); },
       StatusCode::kDataLoss, "jump to word -5"});
}

TEST_F(CorruptFileTest, CodeRange) {
  Run({"code end", [](const Module* m, std::vector<uint8_t>* b) {
         Poke<uint32_t>(b, FieldOf(m->functions()->Get(1), FbFunction::VT_CODE_END), 100000);
       },
       StatusCode::kDataLoss, "function 'jumpy' has code range"});
}

TEST_F(CorruptFileTest, SegmentOffsets) {
  Run({"weights offset", [](const Module* m, std::vector<uint8_t>* b) {
         Poke<uint64_t>(b, m->weights(), uint64_t{1} << 40);
       },
       StatusCode::kDataLoss, "truncated .vmfb: the weights segment ends at byte"});
  Run({"weights offset overflow", [](const Module* m, std::vector<uint8_t>* b) {
         Poke<uint64_t>(b, m->weights(), ~uint64_t{63});
       },
       StatusCode::kDataLoss, "the weights segment ends at byte"});
  Run({"weights alignment", [](const Module* m, std::vector<uint8_t>* b) { Poke<uint64_t>(b, m->weights(), 8); },
       StatusCode::kDataLoss, "weights segment is not 64-byte aligned"});
  Run({"native library size", [](const Module* m, std::vector<uint8_t>* b) {
         const fb::SegmentRef* ref = m->native_libraries()->Get(0)->data();
         Poke<uint64_t>(b, reinterpret_cast<const uint8_t*>(ref) + 8, ref->size() + 4096);
       },
       StatusCode::kDataLoss, "truncated .vmfb: the native library 0 segment ends at byte"});
}

TEST_F(CorruptFileTest, TensorByteSizes) {
  auto weight = [](const Module* m) { return m->constants()->Get(2); };
  Run({"data size", [&](const Module* m, std::vector<uint8_t>* b) {
         Poke<uint64_t>(b, reinterpret_cast<const uint8_t*>(weight(m)->data()) + 8, 20);
       },
       StatusCode::kDataLoss, "constant 2 ('weight') holds 20 bytes; a float32[2, 3] tensor needs 24"});
  Run({"shape", [&](const Module* m, std::vector<uint8_t>* b) {
         Poke<int64_t>(b, weight(m)->shape()->Data() + 8, 4);
       },
       StatusCode::kDataLoss, "holds 24 bytes; a float32[2, 4] tensor needs 32"});
  Run({"negative dimension", [&](const Module* m, std::vector<uint8_t>* b) {
         Poke<int64_t>(b, weight(m)->shape()->Data(), -2);
       },
       StatusCode::kDataLoss, "has a negative dimension in [-2, 3]"});
  Run({"dtype bits", [&](const Module* m, std::vector<uint8_t>* b) {
         Poke<uint8_t>(b, reinterpret_cast<const uint8_t*>(weight(m)->dtype()) + 1, 12);
       },
       StatusCode::kDataLoss, "has an invalid dtype (code 2, bits 12, lanes 1)"});
  Run({"dtype bits that still divide", [&](const Module* m, std::vector<uint8_t>* b) {
         Poke<uint8_t>(b, reinterpret_cast<const uint8_t*>(weight(m)->dtype()) + 1, 64);
       },
       StatusCode::kDataLoss, "holds 24 bytes; a float64[2, 3] tensor needs 48"});
}

TEST_F(CorruptFileTest, GraphIndices) {
  auto node = [](const Module* m) { return m->graphs()->Get(0)->nodes()->Get(0); };
  Run({"graph node callable", [&](const Module* m, std::vector<uint8_t>* b) {
         Poke<uint32_t>(b, FieldOf(node(m), fb::GraphNode::VT_CALLABLE), 99);
       },
       StatusCode::kDataLoss, "graph 'main' node 0 calls callable 99 of 7"});
  Run({"graph argument index", [&](const Module* m, std::vector<uint8_t>* b) {
         Poke<uint32_t>(b, FieldOf(node(m)->args()->Get(1), fb::GraphArg::VT_INDEX), 7);
       },
       StatusCode::kDataLoss, "graph 'main' node 0 argument 1 names input 7 of 2"});
}

TEST_F(CorruptFileTest, Version) {
  Run({"newer major", [](const Module* m, std::vector<uint8_t>* b) { Poke<uint16_t>(b, m->version(), 3); },
       StatusCode::kIncompatible, "file format 3.1 is newer than this runtime's 1.1"});
}

// Where segment `ref` starts in the file: the segment base (the end of the
// size-prefixed FlatBuffer, rounded up to 64) plus its offset.
size_t SegmentStart(const std::vector<uint8_t>& bytes, const fb::SegmentRef* ref) {
  uint32_t fb_size;
  std::memcpy(&fb_size, bytes.data(), 4);
  return (fb_size + 4 + 63) / 64 * 64 + ref->offset();
}

// Byte positions inside a segment of `size` bytes: both ends and a spread
// between them.
std::vector<size_t> PositionsIn(uint64_t size) {
  std::vector<size_t> at = {0, static_cast<size_t>(size - 1)};
  for (uint64_t i = 1; i < size; i += size / 23 + 1) at.push_back(static_cast<size_t>(i));
  return at;
}

// A changed byte of machine code used to load and die when called (SIGILL,
// issue 19 §3); the checksum refuses it on every load, options or not.
TEST_F(CorruptFileTest, DamageInsideTheNativeLibraryIsRefused) {
  const fb::Module* m = fb::GetSizePrefixedModule(good_.data());
  const fb::SegmentRef* ref = m->native_libraries()->Get(0)->data();
  size_t start = SegmentStart(good_, ref);
  ASSERT_GT(ref->size(), 1000u);
  for (size_t at : PositionsIn(ref->size())) {
    std::vector<uint8_t> bytes = good_;
    bytes[start + at] ^= 0x10;
    auto loaded = testing::Load(bytes);
    ASSERT_FALSE(loaded.ok()) << "a changed byte at " << at << " of the native library loaded";
    EXPECT_EQ(loaded.status().code(), StatusCode::kDataLoss);
    EXPECT_NE(loaded.status().message().find(StrFormat(
                  "damaged .vmfb: the native library 0 segment (%llu bytes) does not match its checksum (xxh3-64 ",
                  static_cast<unsigned long long>(ref->size()))),
              std::string::npos)
        << loaded.status().message();
    EXPECT_NE(loaded.status().message().find("computed); the file was changed after it was written"),
              std::string::npos);
  }
  ExpectGoodModuleStillWorks();
}

// Weights are checked only when asked (loading stays zero copy); a default
// load of damaged weights succeeds and the damage shows in the constant.
TEST_F(CorruptFileTest, DamageInsideTheWeightsIsRefusedWhenVerifying) {
  const fb::Module* m = fb::GetSizePrefixedModule(good_.data());
  size_t start = SegmentStart(good_, m->weights());
  uint64_t size = m->weights()->size();
  ASSERT_EQ(size, 24u);  // the one float32[2, 3] constant
  vm::LoadOptions verify;
  verify.verify_weights = true;
  ASSERT_TRUE(testing::Load(good_, verify).ok());
  for (size_t at : PositionsIn(size)) {
    std::vector<uint8_t> bytes = good_;
    bytes[start + at] ^= 0x01;
    auto checked = testing::Load(bytes, verify);
    ASSERT_FALSE(checked.ok()) << "a changed byte at " << at << " of the weights passed --verify";
    EXPECT_EQ(checked.status().code(), StatusCode::kDataLoss);
    EXPECT_NE(checked.status().message().find(
                  "damaged .vmfb: the weights segment (24 bytes) does not match its checksum (xxh3-64 "),
              std::string::npos)
        << checked.status().message();

    auto unchecked = testing::Load(bytes);
    ASSERT_TRUE(unchecked.ok()) << unchecked.status().ToString();
    const Program& p = (*unchecked)->linked_program()->program;
    EXPECT_TRUE(p.has_checksums);
    EXPECT_FALSE(p.weights_verified);
    Tensor w = p.constants[2].value.tensor();
    EXPECT_NE(Values(w), (std::vector<float>{1, 2, 3, 4, 5, 6})) << "the damage is in the loaded weights";
  }
  ExpectGoodModuleStillWorks();
}

TEST_F(CorruptFileTest, DamagedChecksums) {
  auto weights_checksum = [](const Module* m) { return m->weights_checksum(); };
  auto library_checksum = [](const Module* m) { return m->native_libraries()->Get(0)->checksum(); };
  Run({"native library checksum value", [&](const Module* m, std::vector<uint8_t>* b) {
         const fb::Checksum* c = library_checksum(m);
         Poke<uint64_t>(b, FieldOf(c, fb::Checksum::VT_VALUE), c->value() ^ 4);
       },
       StatusCode::kDataLoss, "the native library 0 segment"});
  Run({"native library checksum algorithm", [&](const Module* m, std::vector<uint8_t>* b) {
         Poke<uint8_t>(b, FieldOf(library_checksum(m), fb::Checksum::VT_ALGORITHM), 7);
       },
       StatusCode::kDataLoss, "corrupt .vmfb: the native library 0 segment's checksum has an unknown algorithm 7"});
  Run({"weights checksum algorithm", [&](const Module* m, std::vector<uint8_t>* b) {
         Poke<uint8_t>(b, FieldOf(weights_checksum(m), fb::Checksum::VT_ALGORITHM), 0);
       },
       StatusCode::kDataLoss, "corrupt .vmfb: the weights segment's checksum has an unknown algorithm 0"});

  // A changed stored value passes a default load (the weights are not
  // hashed) and fails a verifying one.
  std::vector<uint8_t> bytes = good_;
  const fb::Checksum* c = weights_checksum(fb::GetSizePrefixedModule(bytes.data()));
  Poke<uint64_t>(&bytes, FieldOf(c, fb::Checksum::VT_VALUE), c->value() + 1);
  EXPECT_TRUE(testing::Load(bytes).ok());
  vm::LoadOptions verify;
  verify.verify_weights = true;
  auto loaded = testing::Load(bytes, verify);
  ASSERT_FALSE(loaded.ok());
  EXPECT_NE(loaded.status().message().find("the weights segment (24 bytes) does not match its checksum"),
            std::string::npos)
      << loaded.status().message();
  ExpectGoodModuleStillWorks();
}

// Format 1.0 files (written before checksums) still load, and say that they
// cannot be checked; a file claiming 1.1 without checksums is damaged.
TEST_F(CorruptFileTest, FilesWithoutChecksums) {
  VmfbProgram old = FullProgram();
  old.format_minor = 0;
  std::vector<uint8_t> bytes = testing::Serialize(old);
  const fb::Module* m = fb::GetSizePrefixedModule(bytes.data());
  EXPECT_EQ(m->weights_checksum(), nullptr);
  EXPECT_EQ(m->native_libraries()->Get(0)->checksum(), nullptr);
  vm::LoadOptions verify;
  verify.verify_weights = true;
  for (const vm::LoadOptions& options : {vm::LoadOptions(), verify}) {
    auto loaded = testing::Load(bytes, options);
    ASSERT_TRUE(loaded.ok()) << loaded.status().ToString();
    const Program& p = (*loaded)->linked_program()->program;
    EXPECT_FALSE(p.has_checksums);
    EXPECT_FALSE(p.weights_verified);
    EXPECT_EQ(NoChecksumsNote(p),
              "format 1.0 file: its segments carry no checksums (added in 1.1), so damage to its kernels or weights "
              "cannot be detected; recompile it to add them");
    Any out;
    std::vector<Any> args = {F32({1, 4}, {1, 2, 3, 4}), F32({1, 4}, {1, 1, 1, 1})};
    ASSERT_TRUE((*loaded)->CreateContext()->Invoke("main", args, &out).ok());
    EXPECT_EQ(Values(out.tensor()), (std::vector<float>{2, 3, 4, 5}));
  }
  EXPECT_EQ(NoChecksumsNote(module_->linked_program()->program), "");

  Poke<uint16_t>(&bytes, reinterpret_cast<const uint8_t*>(m->version()) + 2, 1);  // minor 0 -> 1
  auto claimed = testing::Load(bytes);
  ASSERT_FALSE(claimed.ok());
  EXPECT_EQ(claimed.status().code(), StatusCode::kDataLoss);
  EXPECT_NE(claimed.status().message().find(
                "corrupt .vmfb: the weights segment has no checksum (format 1.1 files carry one)"),
            std::string::npos)
      << claimed.status().message();
  ExpectGoodModuleStillWorks();
}

// Issue 19 §3 as it was found: change bytes of the file, load it, call it.
// One byte at a time, at every byte of the FlatBuffer and a spread over the
// segments; each case runs in a child process, so that a crash is reported
// with its position instead of ending the test. A load may succeed (damaged
// weights, a changed name or number that still makes sense) and a call may
// then fail or give other numbers, or loop (a jump changed into a loop is
// still a valid program, hence the alarm); what must never happen is a crash.
TEST_F(CorruptFileTest, ChangedBytesAnywhereNeverCrash) {
  uint32_t fb_size;
  std::memcpy(&fb_size, good_.data(), 4);
  std::vector<size_t> positions;
  for (size_t at = 0; at < good_.size(); at += at < fb_size + 4u ? 1 : 13) positions.push_back(at);
  size_t loaded = 0;
  for (size_t at : positions) {
    std::vector<uint8_t> bytes = good_;
    bytes[at] ^= static_cast<uint8_t>(0x5a + at % 7);
    std::fflush(nullptr);
    pid_t child = fork();
    ASSERT_GE(child, 0);
    if (child == 0) {
      alarm(5);
      vm::LoadOptions options;
      options.num_threads = 1;  // the pool's workers do not survive fork()
      auto m = testing::Load(bytes, options);
      if (!m.ok()) _exit(0);
      Any out;
      std::vector<Any> args = {F32({1, 4}, {1, 2, 3, 4}), F32({1, 4}, {1, 1, 1, 1})};
      (void)(*m)->CreateContext()->Invoke("main", args, &out);
      _exit(1);  // loaded: counted by the parent
    }
    int status = 0;
    ASSERT_EQ(waitpid(child, &status, 0), child);
    bool exited = WIFEXITED(status);
    bool looped = WIFSIGNALED(status) && WTERMSIG(status) == SIGALRM;
    EXPECT_TRUE(exited || looped) << "a changed byte at " << at << " of " << good_.size() << " killed the process ("
                                  << (WIFSIGNALED(status) ? strsignal(WTERMSIG(status)) : "?") << ")";
    if (exited && WEXITSTATUS(status) == 1) ++loaded;
  }
  // Most damage is refused; some (names, weights, unused fields) loads.
  EXPECT_GT(positions.size(), 1000u);
  EXPECT_GT(loaded, 0u);
  EXPECT_LT(loaded, positions.size() / 2);
  ExpectGoodModuleStillWorks();
}

TEST_F(CorruptFileTest, UnalignedBufferIsRefused) {
  std::vector<uint8_t> shifted(good_.size() + 8);
  for (size_t offset : {1, 4}) {
    std::copy(good_.begin(), good_.end(), shifted.begin() + offset);
    auto m = vm::Module::LoadBuffer(shifted.data() + offset, good_.size());
    ASSERT_FALSE(m.ok());
    EXPECT_EQ(m.status().code(), StatusCode::kInvalidArgument) << m.status().ToString();
    EXPECT_NE(m.status().message().find(".vmfb bytes must start at an 8-byte aligned address"), std::string::npos)
        << m.status().message();
  }
  ExpectGoodModuleStillWorks();
}

// Cut points: every byte of the FlatBuffer, then every 61st byte of the
// segments, then the last bytes.
std::vector<size_t> CutPoints(const std::vector<uint8_t>& bytes) {
  uint32_t fb_size;
  std::memcpy(&fb_size, bytes.data(), 4);
  std::vector<size_t> cuts;
  for (size_t n = 0; n < bytes.size(); n += n < fb_size + 4u ? 1 : 61) cuts.push_back(n);
  for (size_t n = bytes.size() > 8 ? bytes.size() - 8 : 0; n < bytes.size(); ++n) cuts.push_back(n);
  return cuts;
}

TEST_F(CorruptFileTest, TruncatedInMemoryAtManyOffsets) {
  std::vector<size_t> cuts = CutPoints(good_);
  ASSERT_GT(cuts.size(), 300u);
  for (size_t n : cuts) {
    std::vector<uint8_t> cut(good_.begin(), good_.begin() + n);
    auto m = testing::Load(cut);
    ASSERT_FALSE(m.ok()) << "truncated to " << n << " of " << good_.size() << " bytes, the file loaded";
    EXPECT_EQ(m.status().code(), StatusCode::kDataLoss) << n << ": " << m.status().ToString();
  }
  ExpectGoodModuleStillWorks();
}

TEST_F(CorruptFileTest, TruncatedOnDiskAtManyOffsets) {
  std::string path = ::testing::TempDir() + "/kiln_bad_input_truncated.vmfb";
  std::vector<size_t> cuts = CutPoints(good_);
  for (size_t i = 0; i < cuts.size(); i += 7) {  // mapped files: a sample is enough
    size_t n = cuts[i];
    std::FILE* f = std::fopen(path.c_str(), "wb");
    ASSERT_NE(f, nullptr);
    if (n > 0) ASSERT_EQ(std::fwrite(good_.data(), 1, n, f), n);
    std::fclose(f);
    auto m = vm::Module::LoadFile(path);
    ASSERT_FALSE(m.ok()) << "truncated to " << n << " bytes, the file loaded";
    EXPECT_EQ(m.status().code(), StatusCode::kDataLoss) << m.status().ToString();
    EXPECT_EQ(m.status().message().rfind("loading " + path + ": ", 0), 0u) << m.status().message();
  }
  std::remove(path.c_str());
  ExpectGoodModuleStillWorks();
}

}  // namespace
}  // namespace kiln
