// Weights verified at load through the C API (kiln_instance_options_set_
// verify_weights) and the C++ wrapper (InstanceOptions::verify_weights), and
// the warning logged for a file without checksums (issue 19 §3).
#include <gtest/gtest.h>

#include <cstdio>
#include <string>
#include <vector>

#include "capi/kiln.h"
#include "capi/kiln.hpp"
#include "compiler/writer/vmfb_program.h"
#include "compiler/writer/vmfb_writer.h"
#include "vm/assembler.h"

namespace kiln {
namespace {

// echo(x) -> x, and a float32[4] constant: a weights segment of 16 bytes at
// the start of the segments.
compiler::VmfbProgram EchoWithWeights() {
  compiler::VmfbProgram p;
  compiler::ConstantValue w;
  w.kind = compiler::ConstantKind::kTensor;
  w.name = "w";
  w.tensor = Tensor::Empty(std::vector<int64_t>{4}, DType::Float32()).value();
  for (int i = 0; i < 4; ++i) w.tensor.data<float>()[i] = static_cast<float>(i);
  p.constants = {w};
  compiler::FunctionInfo echo;
  echo.name = "echo";
  compiler::ValueInfo x;
  x.name = "x";
  echo.params = {x};
  echo.results = {x};
  echo.register_count = 1;
  vm::Assembler a;
  a.Ret(0);
  echo.code = a.Finish();
  p.functions = {echo};
  return p;
}

struct Log {
  std::vector<std::pair<kiln_log_level_t, std::string>> messages;
  static void Record(void* user, kiln_log_level_t level, const char* message) {
    static_cast<Log*>(user)->messages.emplace_back(level, message);
  }
};

class VerifyWeightsTest : public ::testing::Test {
 protected:
  // Writes `program` to a file, with one weights byte changed when `damage`.
  std::string Write(const compiler::VmfbProgram& program, bool damage, const std::string& name) {
    std::vector<uint8_t> bytes = compiler::SerializeVmfb(program).value();
    if (damage) {
      uint32_t fb_size = bytes[0] | bytes[1] << 8 | bytes[2] << 16 | static_cast<uint32_t>(bytes[3]) << 24;
      bytes[(fb_size + 4 + 63) / 64 * 64 + 5] ^= 0x40;  // inside the weights, which start the segments
    }
    std::string path = ::testing::TempDir() + name;
    std::FILE* f = std::fopen(path.c_str(), "wb");
    EXPECT_NE(f, nullptr);
    std::fwrite(bytes.data(), 1, bytes.size(), f);
    std::fclose(f);
    paths_.push_back(path);
    return path;
  }
  void TearDown() override {
    for (const std::string& p : paths_) std::remove(p.c_str());
  }

  // Loads `path` through an instance with the option set as asked; returns
  // the status (NULL on success) and the log.
  kiln_status_t* Load(const std::string& path, bool verify, Log* log) {
    kiln_instance_options_t* options = nullptr;
    EXPECT_EQ(kiln_instance_options_create(&options), nullptr);
    EXPECT_EQ(kiln_instance_options_set_logger(options, Log::Record, log, KILN_LOG_INFO), nullptr);
    EXPECT_EQ(kiln_instance_options_set_verify_weights(options, verify ? 1 : 0), nullptr);
    kiln_instance_t* instance = nullptr;
    EXPECT_EQ(kiln_instance_create(options, &instance), nullptr);
    kiln_instance_options_release(options);
    kiln_module_t* module = nullptr;
    kiln_status_t* s = kiln_instance_load_module_file(instance, path.c_str(), &module);
    EXPECT_EQ(module == nullptr, s != nullptr);
    kiln_module_release(module);
    kiln_instance_release(instance);
    return s;
  }

  std::vector<std::string> paths_;
};

TEST_F(VerifyWeightsTest, CApi) {
  std::string good = Write(EchoWithWeights(), false, "kiln_verify_good.vmfb");
  std::string bad = Write(EchoWithWeights(), true, "kiln_verify_bad.vmfb");
  Log log;
  EXPECT_EQ(Load(good, true, &log), nullptr);
  EXPECT_EQ(Load(bad, false, &log), nullptr) << "by default the weights are not hashed";
  for (const auto& m : log.messages) EXPECT_NE(m.first, KILN_LOG_WARNING) << m.second;

  kiln_status_t* s = Load(bad, true, &log);
  ASSERT_NE(s, nullptr);
  EXPECT_EQ(kiln_status_code(s), KILN_STATUS_DATA_LOSS);
  EXPECT_NE(std::string(kiln_status_message(s))
                .find("damaged .vmfb: the weights segment (16 bytes) does not match its checksum"),
            std::string::npos)
      << kiln_status_message(s);
  kiln_status_free(s);
}

TEST_F(VerifyWeightsTest, FileWithoutChecksumsLogsAWarning) {
  compiler::VmfbProgram old = EchoWithWeights();
  old.format_minor = 0;
  std::string path = Write(old, true, "kiln_verify_old.vmfb");
  Log log;
  EXPECT_EQ(Load(path, true, &log), nullptr) << "a 1.0 file cannot be checked and loads";
  bool warned = false;
  for (const auto& m : log.messages) {
    if (m.first != KILN_LOG_WARNING) continue;
    warned = true;
    EXPECT_EQ(m.second, "loaded '" + path +
                            "': format 1.0 file: its segments carry no checksums (added in 1.1), so damage to its "
                            "kernels or weights cannot be detected; recompile it to add them");
  }
  EXPECT_TRUE(warned);
}

TEST_F(VerifyWeightsTest, CppWrapper) {
  std::string bad = Write(EchoWithWeights(), true, "kiln_verify_bad_cpp.vmfb");
  kiln::api::InstanceOptions options;
  EXPECT_TRUE(kiln::api::Instance::Create(options).value().LoadModule(bad).ok());
  options.verify_weights = true;
  kiln::api::Result<kiln::api::Module> m = kiln::api::Instance::Create(options).value().LoadModule(bad);
  ASSERT_FALSE(m.ok());
  EXPECT_NE(m.status().message().find("damaged .vmfb: the weights segment"), std::string::npos)
      << m.status().message();
}

// The wrapper's .npy helpers (the C functions have their own C test,
// tests/capi_c/npy_test.c).
TEST(CppWrapperNpyTest, RoundTrip) {
  std::string path = ::testing::TempDir() + "kiln_cpp_npy.npy";
  kiln::api::Tensor t = kiln::api::Tensor::Create({2, 2}, KILN_DTYPE_FLOAT16).value();
  for (int i = 0; i < 4; ++i) t.data<uint16_t>()[i] = static_cast<uint16_t>(0x3C00 + i);
  ASSERT_TRUE(t.WriteNpy(path).ok());
  kiln::api::Result<kiln::api::Tensor> back = kiln::api::Tensor::ReadNpy(path);
  ASSERT_TRUE(back.ok()) << back.status().message();
  EXPECT_EQ(back->dtype(), KILN_DTYPE_FLOAT16);
  EXPECT_EQ(back->shape(), (std::vector<int64_t>{2, 2}));
  EXPECT_EQ(back->data<uint16_t>()[3], 0x3C03);
  std::remove(path.c_str());
  kiln::api::Result<kiln::api::Tensor> missing = kiln::api::Tensor::ReadNpy("/nonexistent/x.npy");
  ASSERT_FALSE(missing.ok());
  EXPECT_EQ(missing.status().code(), KILN_STATUS_NOT_FOUND);
}

}  // namespace
}  // namespace kiln
