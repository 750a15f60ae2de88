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

TEST(GpuScheduleTest, AReductionToOneValueRunsInOneThread) {
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

}  // namespace
}  // namespace tir
}  // namespace kiln
