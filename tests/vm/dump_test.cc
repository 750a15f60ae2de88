// kiln-dump's library prints every part of a file.
#include <gtest/gtest.h>

#include "tests/vm/test_util.h"
#include "tools/kiln-dump/dump.h"

namespace kiln {
namespace {

TEST(DumpTest, PrintsFunctionsCodeCallablesConstantsLibrariesAndGraphs) {
  compiler::VmfbProgram p = testing::AddProgram();
  p.target.features = "+avx2";
  compiler::ConstantValue w;
  w.kind = compiler::ConstantKind::kTensor;
  w.name = "weight";
  w.tensor = testing::F32({2, 2}, {1, 2, 3, 4});
  p.constants.push_back(w);
  p.native_libraries.push_back(testing::TestKernelLibraryInfo());
  compiler::GraphInfo g;
  g.function = "main";
  g.arena_bytes = 64;
  p.graphs.push_back(g);
  std::vector<uint8_t> bytes = testing::Serialize(p);
  FileBytes fb;
  fb.data = bytes.data();
  fb.size = bytes.size();
  auto text = tools::DumpVmfbBytes(fb);
  ASSERT_TRUE(text.ok()) << text.status().ToString();
  for (const char* want : {"format: 1.1", "producer: kiln 0.1.0", "features '+avx2'",
                           "main(x: Tensor((n, 4), \"float32\"), y: Tensor((n, 4), \"float32\"))",
                           "registers 4, shape heap 1",
                           "call vm.builtin.check_tensor(r0, #2, #2, #32, #1, c0 \"main: argument x\")",
                           "call r3 = vm.builtin.alloc_tensor(r2, #2, #32, #1)", "ret r3",
                           "@4 packed function test.add", "c2 weight tensor float32[2, 2] at weights+0",
                           "c0 string \"main: argument x\"", "kernels: add_f32, scale_parallel, fail_kernel",
                           "graph main: arena 64 bytes, 0 nodes"}) {
    EXPECT_NE(text->find(want), std::string::npos) << "missing: " << want << "\n" << *text;
  }
  bytes.resize(bytes.size() / 2);
  fb.size = bytes.size();
  EXPECT_FALSE(tools::DumpVmfbBytes(fb).ok());
}

}  // namespace
}  // namespace kiln
