// The MLC course's "params-bound" module: the MLP of examples/mlp.relax with
// its weights bound from a .npz at compile time (--params), run and compared
// with the same module run with the weights passed as inputs.
#include <gtest/gtest.h>
#include <zlib.h>

#include <cstdio>
#include <fstream>
#include <sstream>

#include "compiler/driver/compile_tool.h"
#include "runtime/npy.h"
#include "tests/e2e/e2e_util.h"

namespace kiln {
namespace e2e {
namespace {

void Put(std::string* s, uint64_t v, int n) {
  for (int i = 0; i < n; ++i) s->push_back(static_cast<char>((v >> (8 * i)) & 0xFF));
}

// numpy.savez's layout: STORED entries NAME.npy with a central directory.
std::string WriteNpz(const std::vector<std::pair<std::string, Tensor>>& tensors) {
  std::string file, cd;
  for (const auto& t : tensors) {
    std::string data = SerializeNpy(t.second).value();
    std::string name = t.first + ".npy";
    uint32_t crc = static_cast<uint32_t>(crc32(0L, reinterpret_cast<const Bytef*>(data.data()), static_cast<uInt>(data.size())));
    uint64_t offset = file.size();
    for (std::string* s : {&file, &cd}) {
      Put(s, s == &file ? 0x04034b50 : 0x02014b50, 4);
      if (s == &cd) Put(s, 20, 2);
      Put(s, 20, 2);
      Put(s, 0, 2);  // flags
      Put(s, 0, 2);  // STORED
      Put(s, 0, 4);  // time, date
      Put(s, crc, 4);
      Put(s, data.size(), 4);
      Put(s, data.size(), 4);
      Put(s, name.size(), 2);
      Put(s, 0, 2);
      if (s == &cd) {
        Put(s, 0, 8);  // comment length, disk, internal and external attributes
        Put(s, 0, 2);
        Put(s, offset, 4);
      }
      *s += name;
    }
    file += data;
  }
  uint64_t cd_offset = file.size();
  file += cd;
  Put(&file, 0x06054b50, 4);
  Put(&file, 0, 4);
  Put(&file, tensors.size(), 2);
  Put(&file, tensors.size(), 2);
  Put(&file, cd.size(), 4);
  Put(&file, cd_offset, 4);
  Put(&file, 0, 2);
  return file;
}

TEST(ParamsE2E, MlpWithWeightsFromNpzMatchesWeightsAsInputs) {
  Tensor w0 = RandomTensor({128, 784}, 2), b0 = RandomTensor({128}, 3);
  Tensor w1 = RandomTensor({10, 128}, 4), b1 = RandomTensor({10}, 5);
  std::string npz = ::testing::TempDir() + "/kiln_params_e2e.npz";
  std::ofstream(npz, std::ios::binary) << WriteNpz({{"w0", w0}, {"b0", b0}, {"w1", w1}, {"b1", b1}});

  // Through kiln-compile --params, as a user would.
  std::string vmfb = ::testing::TempDir() + "/kiln_params_e2e.vmfb";
  std::string relax = std::string(KILN_SOURCE_DIR) + "/examples/mlp.relax";
  const char* argv[] = {"kiln-compile", relax.c_str(), "--params", npz.c_str(), "-o", vmfb.c_str(),
                        "--dump-ir-after=dce"};
  std::ostringstream out, err;
  ASSERT_EQ(driver::CompileToolMain(7, argv, out, err), 0) << err.str();
  // The per-call weight transposes were folded away; the weights are constants.
  EXPECT_EQ(err.str().find("R.permute_dims"), std::string::npos) << err.str();
  EXPECT_NE(err.str().find("metadata["), std::string::npos) << err.str();
  // Mapped from the file: weights are used in place, 64-byte aligned.
  auto bound = vm::Module::LoadFile(vmfb);
  ASSERT_TRUE(bound.ok()) << bound.status().ToString();

  auto plain = CompileAndLoad(ReadFile(relax), relax);
  ASSERT_TRUE(plain.ok()) << plain.status().ToString();
  for (int64_t n : {1, 5}) {
    Tensor x = RandomTensor({n, 784}, 50 + n);
    Any with_params, with_inputs;
    std::vector<Any> args_bound = {x};
    std::vector<Any> args_plain = {x, w0, b0, w1, b1};
    Status s = (*bound)->CreateContext()->Invoke("main", args_bound, &with_params);
    ASSERT_TRUE(s.ok()) << s.ToString();
    s = (*plain)->CreateContext()->Invoke("main", args_plain, &with_inputs);
    ASSERT_TRUE(s.ok()) << s.ToString();
    EXPECT_LE(MaxAbsDiff(with_params.tensor(), with_inputs.tensor()), 1e-5f) << "n = " << n;
    EXPECT_LE(MaxAbsDiff(with_params.tensor(), ReferenceMlp(x, w0, b0, w1, b1)), 1e-4f) << "n = " << n;
  }
  std::remove(npz.c_str());
  std::remove(vmfb.c_str());
}

}  // namespace
}  // namespace e2e
}  // namespace kiln
