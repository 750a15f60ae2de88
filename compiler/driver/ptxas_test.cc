// ptxas at compile time (driver/ptxas.h): finding it, its failures as
// messages, and what a --target=cuda compile does with each.
#include "compiler/driver/ptxas.h"

#include <gtest/gtest.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cstdlib>
#include <fstream>
#include <string>

#include "compiler/driver/compile.h"
#include "compiler/text/text.h"

namespace kiln {
namespace driver {
namespace {

const char* kPtxas = "/usr/local/cuda/bin/ptxas";

// A stand-in ptxas: a shell script with `body`, in a directory removed at
// the end of the test.
class FakePtxas {
 public:
  explicit FakePtxas(const std::string& body) {
    char dir[] = "/tmp/kiln_ptxas_test_XXXXXX";
    if (mkdtemp(dir) != nullptr) dir_ = dir;
    path_ = dir_ + "/ptxas";
    std::ofstream(path_) << "#!/bin/sh\n" << body << "\n";
    chmod(path_.c_str(), 0755);
  }
  ~FakePtxas() {
    unlink(path_.c_str());
    rmdir(dir_.c_str());
  }
  const std::string& path() const { return path_; }

 private:
  std::string dir_, path_;
};

TEST(FindPtxas, NoneAndMissing) {
  Result<std::string> none = FindPtxas(kNoPtxas);
  ASSERT_TRUE(none.ok());
  EXPECT_EQ(*none, "");
  Result<std::string> missing = FindPtxas("/no/such/dir/ptxas");
  ASSERT_FALSE(missing.ok());
  EXPECT_EQ(missing.status().code(), StatusCode::kNotFound);
  EXPECT_EQ(missing.status().message(), "--ptxas: '/no/such/dir/ptxas' is not an executable program");
}

TEST(FindPtxas, EnvironmentFirst) {
  FakePtxas fake("exit 0");
  setenv("KILN_PTXAS", fake.path().c_str(), 1);
  Result<std::string> found = FindPtxas("");
  unsetenv("KILN_PTXAS");
  ASSERT_TRUE(found.ok());
  EXPECT_EQ(*found, fake.path());
}

TEST(AssembleCubin, FailureShowsTheDiagnostics) {
  FakePtxas fake("echo \"ptxas fatal   : Unsupported .version 8.7; current version is '8.0'\" >&2; exit 3");
  Result<std::string> r = AssembleCubin(fake.path(), ".version 8.7\n.target sm_90\n", "sm_90");
  ASSERT_FALSE(r.ok());
  const std::string& m = r.status().message();
  EXPECT_NE(m.find("ptxas '" + fake.path() + "' exited with status 3 assembling the module's PTX for sm_90:\n"),
            std::string::npos)
      << m;
  EXPECT_NE(m.find("Unsupported .version 8.7"), std::string::npos) << m;
  EXPECT_NE(m.find("(--ptxas=none builds the module with PTX only)"), std::string::npos) << m;
}

TEST(AssembleCubin, NoCubinWritten) {
  FakePtxas fake("exit 0");
  Result<std::string> r = AssembleCubin(fake.path(), ".target sm_90\n", "sm_90");
  ASSERT_FALSE(r.ok());
  EXPECT_NE(r.status().message().find("succeeded but wrote no cubin (an ELF file) for sm_90"), std::string::npos)
      << r.status().message();
}

TEST(AssembleCubin, KilledBySignal) {
  FakePtxas fake("kill -9 $$");
  Result<std::string> r = AssembleCubin(fake.path(), ".target sm_90\n", "sm_90");
  ASSERT_FALSE(r.ok());
  EXPECT_NE(r.status().message().find("was killed by signal 9"), std::string::npos) << r.status().message();
}

// The failure reaches kiln-compile's caller, naming ptxas; with "none" the
// same module compiles to PTX only.
TEST(AssembleCubin, CompileReportsIt) {
  Result<ir::IRModule> m = text::ParseModuleFile(std::string(KILN_SOURCE_DIR) + "/examples/mlp.relax");
  ASSERT_TRUE(m.ok()) << m.status().ToString();
  CompileOptions o;
  o.target_triple = "cuda";
  FakePtxas fake("echo 'ptxas error: broken' >&2; exit 1");
  o.ptxas = fake.path();
  Result<compiler::VmfbProgram> bad = CompileModule(*m, o);
  ASSERT_FALSE(bad.ok());
  EXPECT_NE(bad.status().message().find("ptxas error: broken"), std::string::npos) << bad.status().message();
  o.ptxas = kNoPtxas;
  Result<compiler::VmfbProgram> ok = CompileModule(*m, o);
  ASSERT_TRUE(ok.ok()) << ok.status().ToString();
  ASSERT_EQ(ok->gpu_modules.size(), 1u);
  EXPECT_TRUE(ok->gpu_modules[0].cubin.empty());
}

TEST(AssembleCubin, RealPtxasWritesElf) {
  if (access(kPtxas, X_OK) != 0) GTEST_SKIP() << kPtxas << " is absent";
  const std::string ptx =
      ".version 7.0\n.target sm_80\n.address_size 64\n.visible .entry k(.param .u64 p)\n{\n  ret;\n}\n";
  Result<std::string> r = AssembleCubin(kPtxas, ptx, "sm_80");
  ASSERT_TRUE(r.ok()) << r.status().ToString();
  EXPECT_EQ(r->compare(0, 4, "\x7f" "ELF"), 0);
}

}  // namespace
}  // namespace driver
}  // namespace kiln
