// The static graph executor: a graph of kernel and packed-function nodes over
// inputs, weights and a planned arena.
#include <gtest/gtest.h>

#include "graph_executor/graph_session.h"
#include "runtime/vmfb_loader.h"
#include "tests/vm/test_util.h"

namespace kiln {
namespace {

using compiler::CallableKind;
using compiler::ConstantKind;
using compiler::ConstantValue;
using compiler::GraphArgInfo;
using compiler::GraphArgKind;
using compiler::VmfbProgram;
using testing::F32;
using testing::Values;

GraphArgInfo Arg(GraphArgKind kind, uint32_t index, std::vector<int64_t> shape, uint64_t offset = 0) {
  GraphArgInfo a;
  a.kind = kind;
  a.index = index;
  a.byte_offset = offset;
  a.dtype = DType::Float32();
  a.shape = std::move(shape);
  return a;
}

// main(x: [4], y: [4]) -> (out0, out1, out2):
//   t = add_f32(x, w)        kernel, w a weights constant, t in the arena at 0
//   out0 = add_f32(t, y)     kernel, written in place into the caller's output
//   s = test.add(t, t)       packed, s in the arena at 64
//   out1 = s                 copied from the arena
//   out2 = w                 copied from the constant
VmfbProgram GraphProgram() {
  VmfbProgram p = testing::AddProgram();  // registers test.add; its bytecode is unused here
  p.native_libraries.push_back(testing::TestKernelLibraryInfo());
  uint32_t add = static_cast<uint32_t>(p.callables.size());
  p.callables.push_back({CallableKind::kKernel, "add_f32", 0, 3});
  ConstantValue w;
  w.kind = ConstantKind::kTensor;
  w.name = "w";
  w.tensor = F32({4}, {10, 20, 30, 40});
  p.constants.push_back(w);
  uint32_t wi = static_cast<uint32_t>(p.constants.size() - 1);
  compiler::GraphInfo g;
  g.function = "main";
  g.arena_bytes = 128;
  g.inputs = {Arg(GraphArgKind::kInput, 0, {4}), Arg(GraphArgKind::kInput, 1, {4})};
  g.outputs = {Arg(GraphArgKind::kOutput, 0, {4}), Arg(GraphArgKind::kStorage, 0, {4}, 64),
               Arg(GraphArgKind::kConstant, wi, {4})};
  g.nodes = {
      {add, {Arg(GraphArgKind::kInput, 0, {4}), Arg(GraphArgKind::kConstant, wi, {4}), Arg(GraphArgKind::kStorage, 0, {4}, 0)}},
      {add, {Arg(GraphArgKind::kStorage, 0, {4}, 0), Arg(GraphArgKind::kInput, 1, {4}), Arg(GraphArgKind::kOutput, 0, {4})}},
      {testing::kTestAdd,
       {Arg(GraphArgKind::kStorage, 0, {4}, 0), Arg(GraphArgKind::kStorage, 0, {4}, 0), Arg(GraphArgKind::kStorage, 0, {4}, 64)}},
  };
  p.graphs.push_back(g);
  // Give main one-dimensional parameter names for messages.
  p.functions[0].params[0].name = "x";
  return p;
}

std::shared_ptr<const LinkedProgram> LoadGraph(const std::vector<uint8_t>& bytes) {
  FileBytes fb;
  fb.data = bytes.data();
  fb.size = bytes.size();
  auto linked = LoadVmfb(fb);  // no builtin resolver: the graph needs none
  EXPECT_TRUE(linked.ok()) << linked.status().ToString();
  return linked.ok() ? linked.value() : nullptr;
}

TEST(GraphExecutorTest, RunsKernelsPackedFunctionsAndCopies) {
  std::vector<uint8_t> bytes = testing::Serialize(GraphProgram());
  auto linked = LoadGraph(bytes);
  ASSERT_TRUE(linked);
  auto session = graph_executor::GraphSession::Create(linked, "main");
  ASSERT_TRUE(session.ok()) << session.status().ToString();
  auto outputs = (*session)->NewOutputs();
  ASSERT_TRUE(outputs.ok());
  for (int iter = 0; iter < 3; ++iter) {
    float k = static_cast<float>(iter);
    std::vector<Tensor> inputs = {F32({4}, {1 + k, 2, 3, 4}), F32({4}, {100, 100, 100, 100})};
    ASSERT_TRUE((*session)->Run(inputs, *outputs).ok());
    EXPECT_EQ(Values((*outputs)[0]), (std::vector<float>{111 + k, 122, 133, 144}));
    EXPECT_EQ(Values((*outputs)[1]), (std::vector<float>{22 + 2 * k, 44, 66, 88}));
    EXPECT_EQ(Values((*outputs)[2]), (std::vector<float>{10, 20, 30, 40}));
  }
}

TEST(GraphExecutorTest, ThroughTheVmModule) {
  auto m = testing::Load(testing::Serialize(GraphProgram()));
  ASSERT_TRUE(m.ok()) << m.status().ToString();
  EXPECT_TRUE((*m)->HasStaticGraph("main"));
  auto session = graph_executor::GraphSession::Create(*m, "main");
  ASSERT_TRUE(session.ok());
  auto outputs = (*session)->NewOutputs();
  ASSERT_TRUE(outputs.ok());
  std::vector<Tensor> inputs = {F32({4}, {0, 0, 0, 0}), F32({4}, {1, 1, 1, 1})};
  ASSERT_TRUE((*session)->Run(inputs, *outputs).ok());
  EXPECT_EQ(Values((*outputs)[0]), (std::vector<float>{11, 21, 31, 41}));
}

TEST(GraphExecutorTest, CallerTensorsAreChecked) {
  std::vector<uint8_t> bytes = testing::Serialize(GraphProgram());
  auto linked = LoadGraph(bytes);
  ASSERT_TRUE(linked);
  auto session = graph_executor::GraphSession::Create(linked, "main");
  ASSERT_TRUE(session.ok());
  std::vector<Tensor> outputs = (*session)->NewOutputs().value();
  auto run = [&](std::vector<Tensor> in, std::vector<Tensor> out) { return (*session)->Run(in, out).message(); };
  Tensor ok4 = F32({4}, {0, 0, 0, 0});
  EXPECT_EQ(run({ok4}, outputs), "main: expected 2 inputs, got 1");
  EXPECT_EQ(run({ok4, ok4}, {outputs[0]}), "main: expected 3 outputs, got 1");
  EXPECT_EQ(run({F32({5}, std::vector<float>(5)), ok4}, outputs),
            "main: input x: expected float32[4], got float32[5]");
  Tensor i32 = Tensor::Empty(std::vector<int64_t>{4}, DType::Int32()).value();
  EXPECT_EQ(run({ok4, i32}, outputs), "main: input y: expected float32[4], got int32[4]");
  EXPECT_EQ(run({ok4, ok4}, {outputs[0], outputs[1], F32({2, 2}, {0, 0, 0, 0})}),
            "main: output 2: expected float32[4], got float32[2, 2]");
  EXPECT_EQ(run({ok4, Tensor()}, outputs), "main: input y: expected float32[4], got an undefined tensor");
  EXPECT_EQ(graph_executor::GraphSession::Create(linked, "other").status().message(),
            "no static graph for function 'other'");
}

TEST(GraphExecutorTest, LoaderChecksGraphIndices) {
  VmfbProgram p = GraphProgram();
  p.graphs[0].nodes[0].args[2].byte_offset = 128;  // past the 128-byte arena
  FileBytes fb;
  std::vector<uint8_t> bytes = testing::Serialize(p);
  fb.data = bytes.data();
  fb.size = bytes.size();
  EXPECT_EQ(LoadVmfb(fb).status().message(),
            "corrupt .vmfb: graph 'main' node 0 argument 2: storage at offset 128 (16 bytes) is not 64-byte aligned "
            "inside the 128-byte arena");
  p = GraphProgram();
  p.graphs[0].nodes[1].args[1].index = 5;
  bytes = testing::Serialize(p);
  fb.data = bytes.data();
  fb.size = bytes.size();
  EXPECT_EQ(LoadVmfb(fb).status().message(), "corrupt .vmfb: graph 'main' node 1 argument 1 names input 5 of 2");
  p = GraphProgram();
  p.graphs[0].nodes[0].callable = testing::kMatchShape;
  bytes = testing::Serialize(p);
  fb.data = bytes.data();
  fb.size = bytes.size();
  EXPECT_EQ(LoadVmfb(fb).status().message(),
            "corrupt .vmfb: graph 'main' node 0 calls a builtin; graphs call only kernels and packed functions");
}

}  // namespace
}  // namespace kiln
