// ScheduleForGpu: before/after TIR text.
#include "compiler/tir/gpu_schedule.h"

#include <gtest/gtest.h>

#include <string>

#include "compiler/text/text.h"
#include "compiler/tir/lower_blocks.h"

namespace kiln {
namespace tir {
namespace {

// The scheduled PrimFunc `f` of `source`, printed; or the error.
std::string Scheduled(const std::string& source) {
  Result<ir::IRModule> m = text::ParseModule(source, "test.relax");
  if (!m.ok()) return "parse error: " + m.status().ToString();
  ir::IRModule out = m.value();
  for (auto& e : out.entries) {
    if (!e.prim) continue;
    Result<ir::PrimFunc> f = ScheduleForGpu(LowerBlocks(e.prim));
    if (!f.ok()) return f.status().ToString();
    e.prim = f.value();
  }
  std::string text = text::PrintModule(out);
  size_t at = text.find("    @T.prim_func");
  return at == std::string::npos ? text : text.substr(at);
}

TEST(GpuScheduleTest, ASmallStaticNestIsOneBlockWithoutAGuard) {
  EXPECT_EQ(Scheduled(R"(@I.ir_module
class Module:
    @T.prim_func
    def f(A: T.Buffer((4, 8), "float32"), B: T.Buffer((4, 8), "float32")):
        for i, j in T.grid(4, 8):
            B[i, j] = A[i, j] * T.float32(2)
)"),
            R"(    @T.prim_func
    def f(A: T.Buffer((4, 8), "float32"), B: T.Buffer((4, 8), "float32")):
        for blockIdx_x in T.thread_binding(T.int64(1), thread="blockIdx.x"):
            for threadIdx_x in T.thread_binding(T.int64(32), thread="threadIdx.x"):
                i: T.int32 = T.Cast("int32", (blockIdx_x * 32 + threadIdx_x) // 8)
                j: T.int32 = T.Cast("int32", (blockIdx_x * 32 + threadIdx_x) % 8)
                B[i, j] = A[i, j] * T.float32(2)
)");
}

TEST(GpuScheduleTest, ASymbolicNestIsGuarded) {
  EXPECT_EQ(Scheduled(R"(@I.ir_module
class Module:
    @T.prim_func
    def f(a: T.handle, b: T.handle):
        n = T.int64()
        A = T.match_buffer(a, (n, 8), "float32")
        B = T.match_buffer(b, (n, 8), "float32")
        for i, j in T.grid(n, T.int64(8)):
            B[i, j] = T.exp(A[i, j])
)"),
            R"(    @T.prim_func
    def f(a: T.handle, b: T.handle):
        n = T.int64()
        A = T.match_buffer(a, (n, 8), "float32")
        B = T.match_buffer(b, (n, 8), "float32")
        for blockIdx_x in T.thread_binding((8 * n + 255) // 256, thread="blockIdx.x"):
            for threadIdx_x in T.thread_binding(T.int64(256), thread="threadIdx.x"):
                if blockIdx_x * 256 + threadIdx_x < 8 * n:
                    i: T.int64 = (blockIdx_x * 256 + threadIdx_x) // 8
                    j: T.int64 = (blockIdx_x * 256 + threadIdx_x) % 8
                    B[i, j] = T.exp(A[i, j])
)");
}

TEST(GpuScheduleTest, AScanLoopStaysInTheThread) {
  // B[i, j] reads B[i, j - 1]: the rows are independent, the columns are not.
  EXPECT_EQ(Scheduled(R"(@I.ir_module
class Module:
    @T.prim_func
    def f(A: T.Buffer((300, 8), "float32"), B: T.Buffer((300, 8), "float32")):
        for i, j in T.grid(300, 8):
            B[i, j] = B[i, j - 1] + A[i, j]
)"),
            R"(    @T.prim_func
    def f(A: T.Buffer((300, 8), "float32"), B: T.Buffer((300, 8), "float32")):
        for blockIdx_x in T.thread_binding(T.int64(2), thread="blockIdx.x"):
            for threadIdx_x in T.thread_binding(T.int64(256), thread="threadIdx.x"):
                if blockIdx_x * 256 + threadIdx_x < 300:
                    i: T.int32 = T.Cast("int32", blockIdx_x * 256 + threadIdx_x)
                    for j in range(8):
                        B[i, j] = B[i, j - 1] + A[i, j]
)");
}

TEST(GpuScheduleTest, AnAccumulationWithoutAnInitRunsInOneThread) {
  // No init guard: S[0] keeps what it held, which a block reduction (every
  // thread starting from the identity) would not; one thread does it.
  EXPECT_EQ(Scheduled(R"(@I.ir_module
class Module:
    @T.prim_func
    def total(A: T.Buffer((64,), "float32"), S: T.Buffer((1,), "float32")):
        for k in range(64):
            S[0] = S[0] + A[k]
)"),
            R"(    @T.prim_func
    def total(A: T.Buffer((64,), "float32"), S: T.Buffer((1,), "float32")):
        for blockIdx_x in T.thread_binding(T.int64(1), thread="blockIdx.x"):
            for threadIdx_x in T.thread_binding(T.int64(1), thread="threadIdx.x"):
                for k in range(64):
                    S[0] = S[0] + A[k]
)");
}


// The lowered form of a row sum over 1000 columns.
const char* kRowSum = R"(@I.ir_module
class Module:
    @T.prim_func
    def f(A: T.Buffer((8, 1000), "float32"), B: T.Buffer((8,), "float32")):
        for i in range(8):
            for k in range(1000):
                if k == 0:
                    B[i] = T.float32(0)
                B[i] = B[i] + A[i, k]
)";

TEST(GpuScheduleTest, ARowReductionIsABlockPerRow) {
  EXPECT_EQ(Scheduled(kRowSum), R"(    @T.prim_func
    def f(A: T.Buffer((8, 1000), "float32"), B: T.Buffer((8,), "float32")):
        for blockIdx_x in T.thread_binding(T.int64(8), thread="blockIdx.x"):
            i: T.int32 = T.Cast("int32", blockIdx_x)
            red = T.decl_buffer((256,), "float32", scope="shared")
            for threadIdx_x in T.thread_binding(T.int64(256), thread="threadIdx.x"):
                red[threadIdx_x] = T.float32(0)
                for j in range(T.int64(4)):
                    k_fused: T.int64 = threadIdx_x + j * 256
                    if k_fused < 1000:
                        k: T.int32 = T.Cast("int32", k_fused)
                        red[threadIdx_x] = red[threadIdx_x] + A[i, k]
            T.evaluate(T.call_intrin("int32", "tvm_storage_sync"))
            for threadIdx_x in T.thread_binding(T.int64(256), thread="threadIdx.x"):
                if threadIdx_x < 128:
                    red[threadIdx_x] = red[threadIdx_x] + red[threadIdx_x + 128]
            T.evaluate(T.call_intrin("int32", "tvm_storage_sync"))
            for threadIdx_x in T.thread_binding(T.int64(256), thread="threadIdx.x"):
                if threadIdx_x < 64:
                    red[threadIdx_x] = red[threadIdx_x] + red[threadIdx_x + 64]
            T.evaluate(T.call_intrin("int32", "tvm_storage_sync"))
            for threadIdx_x in T.thread_binding(T.int64(256), thread="threadIdx.x"):
                if threadIdx_x < 32:
                    red[threadIdx_x] = red[threadIdx_x] + red[threadIdx_x + 32]
            T.evaluate(T.call_intrin("int32", "tvm_storage_sync"))
            for threadIdx_x in T.thread_binding(T.int64(256), thread="threadIdx.x"):
                if threadIdx_x < 32:
                    red[threadIdx_x] = red[threadIdx_x] + T.call_intrin("float32", "kiln.warp_shuffle_down", red[threadIdx_x], 16)
            for threadIdx_x in T.thread_binding(T.int64(256), thread="threadIdx.x"):
                if threadIdx_x < 32:
                    red[threadIdx_x] = red[threadIdx_x] + T.call_intrin("float32", "kiln.warp_shuffle_down", red[threadIdx_x], 8)
            for threadIdx_x in T.thread_binding(T.int64(256), thread="threadIdx.x"):
                if threadIdx_x < 32:
                    red[threadIdx_x] = red[threadIdx_x] + T.call_intrin("float32", "kiln.warp_shuffle_down", red[threadIdx_x], 4)
            for threadIdx_x in T.thread_binding(T.int64(256), thread="threadIdx.x"):
                if threadIdx_x < 32:
                    red[threadIdx_x] = red[threadIdx_x] + T.call_intrin("float32", "kiln.warp_shuffle_down", red[threadIdx_x], 2)
            for threadIdx_x in T.thread_binding(T.int64(256), thread="threadIdx.x"):
                if threadIdx_x < 32:
                    red[threadIdx_x] = red[threadIdx_x] + T.call_intrin("float32", "kiln.warp_shuffle_down", red[threadIdx_x], 1)
            for threadIdx_x in T.thread_binding(T.int64(256), thread="threadIdx.x"):
                if threadIdx_x < 1:
                    B[i] = red[T.int64(0)]
)");
}

// softmax as LowerBlocks leaves it: a row max, exp, a row sum, a division,
// over a symbolic row count and rows of 37 (not a multiple of a warp).
const char* kSoftmax = R"(@I.ir_module
class Module:
    @T.prim_func
    def f(a: T.handle, b: T.handle):
        n = T.int64()
        A = T.match_buffer(a, (n, 37), "float32")
        B = T.match_buffer(b, (n, 37), "float32")
        M = T.decl_buffer((n,), "float32")
        E = T.decl_buffer((n, 37), "float32")
        S = T.decl_buffer((n,), "float32")
        for i in range(n):
            for k in range(T.int64(37)):
                if k == 0:
                    M[i] = T.float32("-inf")
                M[i] = T.max(M[i], A[i, k])
        for i0 in range(n):
            for i1 in range(T.int64(37)):
                E[i0, i1] = T.exp(A[i0, i1] - M[i0])
        for i in range(n):
            for k in range(T.int64(37)):
                if k == 0:
                    S[i] = T.float32(0)
                S[i] = S[i] + E[i, k]
        for i0 in range(n):
            for i1 in range(T.int64(37)):
                B[i0, i1] = E[i0, i1] / S[i0]
)";

TEST(GpuScheduleTest, SoftmaxIsOneBlockPerRowWithTheRowValuesInSharedMemory) {
  std::string out = Scheduled(kSoftmax);
  EXPECT_EQ(out.substr(0, out.find("            for threadIdx_x")), R"(    @T.prim_func
    def f(a: T.handle, b: T.handle):
        n = T.int64()
        A = T.match_buffer(a, (n, 37), "float32")
        B = T.match_buffer(b, (n, 37), "float32")
        M = T.decl_buffer((n,), "float32")
        E = T.decl_buffer((n, 37), "float32")
        S = T.decl_buffer((n,), "float32")
        for blockIdx_x in T.thread_binding(n, thread="blockIdx.x"):
            i: T.int64 = blockIdx_x
            red = T.decl_buffer((32,), "float32", scope="shared")
            red_1 = T.decl_buffer((32,), "float32", scope="shared")
)");
  // One kernel: one blockIdx.x loop.
  size_t blocks = 0;
  for (size_t at = out.find("blockIdx.x"); at != std::string::npos; at = out.find("blockIdx.x", at + 1)) ++blocks;
  EXPECT_EQ(blocks, 1u) << out;
  // The exp pass reads the max from shared memory, strided over 32 threads
  // (two steps for 37, the second guarded), then a barrier before the sum.
  EXPECT_NE(out.find(R"(            T.evaluate(T.call_intrin("int32", "tvm_storage_sync"))
            for threadIdx_x in T.thread_binding(T.int64(32), thread="threadIdx.x"):
                for j in range(T.int64(2)):
                    k_fused: T.int64 = threadIdx_x + j * 32
                    if k_fused < 37:
                        i1: T.int64 = k_fused
                        E[i, i1] = T.exp(A[i, i1] - red[T.int64(0)])
            T.evaluate(T.call_intrin("int32", "tvm_storage_sync"))
)"), std::string::npos) << out;
  // The sum's value goes to S and, through red_1, into the division.
  EXPECT_NE(out.find("S[i] = red_1[T.int64(0)]"), std::string::npos) << out;
  EXPECT_NE(out.find("B[i, i1] = E[i, i1] / red_1[T.int64(0)]"), std::string::npos) << out;
  // A barrier between thread 0's store of the max and the exp pass.
  EXPECT_NE(out.find(R"(                if threadIdx_x < 1:
                    M[i] = red[T.int64(0)]
            T.evaluate(T.call_intrin("int32", "tvm_storage_sync"))
)"), std::string::npos) << out;
}

TEST(GpuScheduleTest, APassOverAnotherRowIsNotFused) {
  // E reads M at the next row: blocks would share M, so the exp pass keeps
  // a kernel of its own (after the row max's).
  std::string out = Scheduled(R"(@I.ir_module
class Module:
    @T.prim_func
    def f(A: T.Buffer((8, 64), "float32"), E: T.Buffer((8, 64), "float32")):
        M = T.decl_buffer((9,), "float32")
        for i in range(8):
            for k in range(64):
                if k == 0:
                    M[i] = T.float32("-inf")
                M[i] = T.max(M[i], A[i, k])
        for i0 in range(8):
            for i1 in range(64):
                E[i0, i1] = A[i0, i1] - M[i0 + 1]
)");
  size_t blocks = 0;
  for (size_t at = out.find("blockIdx.x"); at != std::string::npos; at = out.find("blockIdx.x", at + 1)) ++blocks;
  EXPECT_EQ(blocks, 2u) << out;
}

TEST(GpuScheduleTest, ABlockReductionPrintsAndParsesBack) {
  std::string text = "@I.ir_module\nclass Module:\n" + Scheduled(kRowSum);
  Result<ir::IRModule> back = text::ParseModule(text, "printed.relax");
  ASSERT_TRUE(back.ok()) << back.status().ToString();
  std::string again = text::PrintModule(back.value());
  EXPECT_NE(again.find(Scheduled(kRowSum)), std::string::npos) << again;
}

std::string Replace(std::string s, const std::string& from, const std::string& to) {
  size_t at = s.find(from);
  EXPECT_NE(at, std::string::npos) << from;
  if (at != std::string::npos) s.replace(at, from.size(), to);
  return s;
}

bool IsBlockReduction(const std::string& scheduled) {
  return scheduled.find("scope=\"shared\"") != std::string::npos &&
         scheduled.find("kiln.warp_shuffle_down") != std::string::npos;
}

TEST(GpuScheduleTest, AReductionToOneValueIsOneBlock) {
  // Two reduction loops (K = 2048), no row loop: one block of 256 threads.
  std::string out = Scheduled(R"(@I.ir_module
class Module:
    @T.prim_func
    def total(A: T.Buffer((64, 32), "float32"), S: T.Buffer((1,), "float32")):
        for k0, k1 in T.grid(64, 32):
            if k0 == 0 and k1 == 0:
                S[0] = T.float32(0)
            S[0] = S[0] + A[k0, k1]
)");
  EXPECT_TRUE(IsBlockReduction(out)) << out;
  for (const char* s : {"T.thread_binding(T.int64(1), thread=\"blockIdx.x\")", "red = T.decl_buffer((256,)",
                        "for j in range(T.int64(8)):", "k0: T.int32 = T.Cast(\"int32\", k_fused // 32)",
                        "k1: T.int32 = T.Cast(\"int32\", k_fused % 32)", "S[0] = red[T.int64(0)]"})
    EXPECT_NE(out.find(s), std::string::npos) << s << "\n" << out;
  EXPECT_EQ(out.find("if k_fused <"), std::string::npos) << "2048 is a multiple of 256: no guard\n" << out;
}

TEST(GpuScheduleTest, ASymbolicRowMaxIsABlockPerRowOfAWarpOrMore) {
  std::string out = Scheduled(R"(@I.ir_module
class Module:
    @T.prim_func
    def f(a: T.handle, b: T.handle):
        n = T.int64()
        A = T.match_buffer(a, (4, n, n), "float32")
        B = T.match_buffer(b, (4, n), "float32")
        for i0, i1, k in T.grid(T.int64(4), n, n):
            if k == 0:
                B[i0, i1] = T.float32("-inf")
            B[i0, i1] = T.max(B[i0, i1], A[i0, i1, k])
)");
  EXPECT_TRUE(IsBlockReduction(out)) << out;
  for (const char* s : {"T.thread_binding(n * 4, thread=\"blockIdx.x\")", "i0: T.int64 = blockIdx_x // n",
                        "i1: T.int64 = blockIdx_x % n", "for j in range((n + 255) // 256):", "if k_fused < n:",
                        "red[threadIdx_x] = T.float32(\"-inf\")", "B[i0, i1] = red[T.int64(0)]"})
    EXPECT_NE(out.find(s), std::string::npos) << s << "\n" << out;
}

TEST(GpuScheduleTest, AShortStaticRowIsOneWarp) {
  // K = 64: a block of 32 threads, two elements each, no shared halving.
  std::string out = Scheduled(Replace(Replace(kRowSum, "(8, 1000)", "(8, 64)"), "range(1000)", "range(64)"));
  EXPECT_TRUE(IsBlockReduction(out)) << out;
  EXPECT_NE(out.find("red = T.decl_buffer((32,)"), std::string::npos) << out;
  EXPECT_EQ(out.find("tvm_storage_sync"), out.rfind("tvm_storage_sync")) << "one barrier, after the strided part\n" << out;
}

TEST(GpuScheduleTest, WhatIsNoRowReductionKeepsAThreadPerOutput) {
  struct Case {
    const char* why;
    std::string source;
  } cases[] = {
      {"K below a warp", Replace(Replace(kRowSum, "(8, 1000)", "(8, 16)"), "range(1000)", "range(16)")},
      {"an init that is not the identity of +", Replace(kRowSum, "B[i] = T.float32(0)", "B[i] = T.float32(1)")},
      {"a product", Replace(kRowSum, "B[i] = B[i] + A[i, k]", "B[i] = B[i] * A[i, k]")},
      {"float64", Replace(Replace(kRowSum, "\"float32\"), B: T.Buffer((8,), \"float32\")",
                                  "\"float64\"), B: T.Buffer((8,), \"float64\")"),
                          "T.float32(0)", "T.float64(0)")},
      {"a matmul (two buffers indexed by k)", R"(@I.ir_module
class Module:
    @T.prim_func
    def mm(A: T.Buffer((64, 256), "float32"), W: T.Buffer((256, 64), "float32"), C: T.Buffer((64, 64), "float32")):
        for i, j, k in T.grid(64, 64, 256):
            if k == 0:
                C[i, j] = T.float32(0)
            C[i, j] = C[i, j] + A[i, k] * W[k, j]
)"},
  };
  for (const Case& c : cases) {
    std::string out = Scheduled(c.source);
    EXPECT_FALSE(IsBlockReduction(out)) << c.why << "\n" << out;
    EXPECT_NE(out.find("thread=\"threadIdx.x\""), std::string::npos) << c.why << "\n" << out;
  }
}


const char* kMatmul = R"(@I.ir_module
class Module:
    @T.prim_func
    def mm(a: T.handle, W: T.Buffer((100, 70), "float32"), c: T.handle):
        n = T.int64()
        A = T.match_buffer(a, (n, 100), "float32")
        C = T.match_buffer(c, (n, 70), "float32")
        for i, j, k in T.grid(n, T.int64(70), T.int64(100)):
            if k == 0:
                C[i, j] = T.float32(0)
            C[i, j] = C[i, j] + A[i, k] * W[k, j]
)";

TEST(GpuScheduleTest, AMatmulIsTiledInSharedMemory) {
  std::string out = Scheduled(kMatmul);
  for (const char* s : {"T.thread_binding((n + 63) // 64 * 2, thread=\"blockIdx.x\")",
                        "Xs = T.decl_buffer((16, 65), \"float32\", scope=\"shared\")",
                        "Ys = T.decl_buffer((16, 64), \"float32\", scope=\"shared\")",
                        "acc = T.decl_buffer((256, 16), \"float32\", scope=\"local\")",
                        "for kt in range(T.int64(7)):",
                        // M and K are off the tiles: the fetches are guarded, zero outside.
                        "if x_i < n and x_k < 100:", "if y_j < 70 and y_k < 100:",
                        "Ys[(threadIdx_x + l * 256) // 64, (threadIdx_x + l * 256) % 64] = W[y_k, y_j]",
                        "acc[threadIdx_x, ri * 4 + ci] = acc[threadIdx_x, ri * 4 + ci] + Xs[kk, threadIdx_x // 16 + ri * 16] * "
                        "Ys[kk, threadIdx_x % 16 + ci * 16]",
                        "if o_i < n and o_j < 70:", "C[o_i, o_j] = acc[threadIdx_x, ri * 4 + ci]"})
    EXPECT_NE(out.find(s), std::string::npos) << s << "\n" << out;
  EXPECT_FALSE(IsBlockReduction(out)) << out;
}

TEST(GpuScheduleTest, ABatchMatmulHasABlockPerBatchAndTile) {
  std::string out = Scheduled(R"(@I.ir_module
class Module:
    @T.prim_func
    def bmm(A: T.Buffer((3, 128, 64), "float32"), B: T.Buffer((3, 64, 128), "float32"), C: T.Buffer((3, 128, 128), "float32")):
        for b, i, j, k in T.grid(3, 128, 128, 64):
            if k == 0:
                C[b, i, j] = T.float32(0)
            C[b, i, j] = C[b, i, j] + A[b, i, k] * B[b, k, j]
)");
  for (const char* s : {"T.thread_binding(T.int64(12), thread=\"blockIdx.x\")", "b: T.int32 = T.Cast(\"int32\", blockIdx_x // 4)",
                        "for kt in range(T.int64(4)):", "C[b, T.Cast(\"int32\", o_i), T.Cast(\"int32\", o_j)] ="})
    EXPECT_NE(out.find(s), std::string::npos) << s << "\n" << out;
  // Every size a multiple of its tile: no guard.
  EXPECT_EQ(out.find("if "), std::string::npos) << out;
}

TEST(GpuScheduleTest, WhatIsNoMatmulIsNotTiled) {
  struct Case {
    const char* why;
    std::string source;
  } cases[] = {
      {"a nonzero init", Replace(kMatmul, "C[i, j] = T.float32(0)", "C[i, j] = T.float32(1)")},
      {"j read by both operands", Replace(kMatmul, "A[i, k] * W[k, j]", "A[i, k] * W[k, j] * A[i, j]")},
      {"a sum of products", Replace(kMatmul, "C[i, j] + A[i, k] * W[k, j]", "C[i, j] + (A[i, k] + W[k, j])")},
  };
  for (const Case& c : cases) {
    std::string out = Scheduled(c.source);
    EXPECT_EQ(out.find("Xs = T.decl_buffer"), std::string::npos) << c.why << "\n" << out;
  }
}

}  // namespace
}  // namespace tir
}  // namespace kiln
