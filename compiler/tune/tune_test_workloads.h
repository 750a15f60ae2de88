// TIR workloads the tuner's tests share (all in kiln_compiler_tune_test): the
// MLC course's 128 x 128 x 128 `mm` as the course writes it, and a matmul
// with a ReLU consumer block (a producer to inline, a reduction to tile).
#ifndef KILN_COMPILER_TUNE_TUNE_TEST_WORKLOADS_H_
#define KILN_COMPILER_TUNE_TUNE_TEST_WORKLOADS_H_

namespace kiln {
namespace tune {
namespace testing {

inline constexpr char kCourseMM[] = R"(@T.prim_func
def mm(A: T.Buffer((128, 128), "float32"), B: T.Buffer((128, 128), "float32"), C: T.Buffer((128, 128), "float32")):
    T.func_attr({"global_symbol": "mm", "tir.noalias": True})
    for i, j, k in T.grid(128, 128, 128):
        with T.block("C"):
            vi, vj, vk = T.axis.remap("SSR", [i, j, k])
            with T.init():
                C[vi, vj] = T.float32(0)
            C[vi, vj] = C[vi, vj] + A[vi, vk] * B[vk, vj]
)";

inline constexpr char kMMRelu[] = R"(@T.prim_func
def mm_relu(A: T.Buffer((64, 48), "float32"), B: T.Buffer((48, 80), "float32"), C: T.Buffer((64, 80), "float32")):
    Y = T.alloc_buffer((64, 80), "float32")
    for i, j, k in T.grid(64, 80, 48):
        with T.block("Y"):
            vi = T.axis.spatial(64, i)
            vj = T.axis.spatial(80, j)
            vk = T.axis.reduce(48, k)
            with T.init():
                Y[vi, vj] = T.float32(0)
            Y[vi, vj] = Y[vi, vj] + A[vi, vk] * B[vk, vj]
    for i, j in T.grid(64, 80):
        with T.block("C"):
            vi = T.axis.spatial(64, i)
            vj = T.axis.spatial(80, j)
            C[vi, vj] = T.max(Y[vi, vj], T.float32(0))
)";

}  // namespace testing
}  // namespace tune
}  // namespace kiln

#endif  // KILN_COMPILER_TUNE_TUNE_TEST_WORKLOADS_H_
