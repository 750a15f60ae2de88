// Plugins end to end: kiln-run and kiln-bench, the binaries users run, load
// examples/plugin (env.linear, env.relu) and run the seed notes' modules that
// call them, verbatim; every refusal of kiln_plugin_load has its message
// checked. The C API's own behaviour (a failing entry point's registrations
// are taken back, loading twice) is checked in this process, which exports
// the C API as the tools do.
#include <gtest/gtest.h>

#include <sys/wait.h>

#include <cstdio>
#include <filesystem>
#include <string>

#include "capi/kiln.h"
#include "compiler/driver/compile.h"
#include "runtime/registry.h"
#include "tests/e2e/e2e_util.h"
#include "runtime/npy.h"

namespace kiln {
namespace {

struct Output {
  int exit_code = -1;
  std::string text;  // stdout and stderr
};

Output Shell(const std::string& command) {
  Output out;
  FILE* p = popen((command + " 2>&1").c_str(), "r");
  if (!p) return out;
  char buf[4096];
  size_t n;
  while ((n = fread(buf, 1, sizeof buf, p)) > 0) out.text.append(buf, n);
  int status = pclose(p);
  out.exit_code = WIFEXITED(status) ? WEXITSTATUS(status) : -1;
  return out;
}

std::string Work(const std::string& name) { return std::string(KILN_PLUGIN_TEST_WORK) + "/" + name; }

// Compiles a seed module (tests/data/seeds/) to Work(name).vmfb.
std::string CompileSeed(const std::string& name) {
  std::filesystem::create_directories(KILN_PLUGIN_TEST_WORK);
  std::string out = Work(name + ".vmfb");
  Status s = driver::CompileFile("tests/data/seeds/" + name + ".relax", out, driver::CompileOptions());
  EXPECT_TRUE(s.ok()) << s.ToString();
  return out;
}

// The MLP's inputs at the lesson's sizes, as .npy files, and the reference.
struct MlpCase {
  std::vector<std::string> input_flags;
  Tensor expected;
};

MlpCase WriteMlpInputs() {
  Tensor x = e2e::RandomTensor({1, 784}, 11), w0 = e2e::RandomTensor({128, 784}, 2), b0 = e2e::RandomTensor({128}, 3);
  Tensor w1 = e2e::RandomTensor({10, 128}, 4), b1 = e2e::RandomTensor({10}, 5);
  MlpCase c;
  const char* names[] = {"x", "w0", "b0", "w1", "b1"};
  Tensor tensors[] = {x, w0, b0, w1, b1};
  std::filesystem::create_directories(KILN_PLUGIN_TEST_WORK);
  for (int i = 0; i < 5; ++i) {
    std::string path = Work(std::string(names[i]) + ".npy");
    EXPECT_TRUE(WriteNpyFile(tensors[i], path).ok());
    c.input_flags.push_back("--input=@" + path);
  }
  c.expected = e2e::ReferenceMlp(x, w0, b0, w1, b1);
  return c;
}

std::string Join(const std::vector<std::string>& flags) {
  std::string s;
  for (const auto& f : flags) s += " " + f;
  return s;
}

// kiln-run --plugin=libkiln_env_plugin.so runs MyModuleWithExternCall and
// MyModuleMixture (lesson 3) as the notes print them; the result matches the
// reference MLP.
TEST(PluginTools, KilnRunRunsTheExternCallModules) {
  MlpCase c = WriteMlpInputs();
  for (const char* name : {"mlc_mymodule_with_extern_call", "mlc_mymodule_mixture"}) {
    std::string vmfb = CompileSeed(name);
    std::string y = Work(std::string(name) + "_y.npy");
    Output r = Shell(std::string(KILN_RUN_PATH) + " " + vmfb + " --plugin=" + KILN_ENV_PLUGIN + Join(c.input_flags) +
                   " --output=@" + y);
    ASSERT_EQ(r.exit_code, 0) << name << ":\n" << r.text;
    Result<Tensor> got = ReadNpyFile(y);
    ASSERT_TRUE(got.ok()) << got.status().ToString();
    EXPECT_LE(e2e::MaxAbsDiff(*got, c.expected), 1e-4f) << name;
  }
}

// `--plugin=libx.so`, a name without a directory, is the file in the current
// directory (dlopen alone would search the system's library path only).
TEST(PluginTools, ABareFileNameIsInTheCurrentDirectory) {
  MlpCase c = WriteMlpInputs();
  std::string vmfb = CompileSeed("mlc_mymodule_with_extern_call");
  std::filesystem::path plugin(KILN_ENV_PLUGIN);
  Output r = Shell("cd " + plugin.parent_path().string() + " && " + KILN_RUN_PATH + " " + vmfb +
                   " --plugin=" + plugin.filename().string() + Join(c.input_flags));
  EXPECT_EQ(r.exit_code, 0) << r.text;
}

// Without the plugin the module does not load, and says what is missing.
TEST(PluginTools, KilnRunWithoutThePluginNamesTheMissingFunctions) {
  MlpCase c = WriteMlpInputs();
  std::string vmfb = CompileSeed("mlc_mymodule_with_extern_call");
  Output r = Shell(std::string(KILN_RUN_PATH) + " " + vmfb + Join(c.input_flags));
  EXPECT_EQ(r.exit_code, 1) << r.text;
  EXPECT_NE(r.text.find("env.linear"), std::string::npos) << r.text;
}

TEST(PluginTools, KilnBenchTimesTheExternCallModule) {
  MlpCase c = WriteMlpInputs();
  std::string vmfb = CompileSeed("mlc_mymodule_mixture");
  Output r = Shell(std::string(KILN_BENCH_PATH) + " " + vmfb + " --plugin=" + KILN_ENV_PLUGIN +
                 " --warmup=0 --runs=2 --min-time=0 --format=csv" + Join(c.input_flags));
  ASSERT_EQ(r.exit_code, 0) << r.text;
  EXPECT_NE(r.text.find("mlc_mymodule_mixture.vmfb"), std::string::npos) << r.text;
}

// One case per refusal; the same message from kiln-run and kiln-bench.
struct Refusal {
  std::string plugin;
  std::string message;  // after "kiln-run: error: " (a prefix when `prefix`)
  bool prefix;
};

std::vector<Refusal> Refusals() {
  std::string missing = Work("no_such_plugin.so");
  std::string not_a_library = std::filesystem::absolute("tests/data/seeds/mlc_mymodule.relax").string();
  return {
      {missing, "--plugin: cannot load plugin '" + missing + "': " + missing + ": cannot open shared object file", true},
      {not_a_library, "--plugin: cannot load plugin '" + not_a_library + "': " + not_a_library + ": ", true},
      {KILN_NO_ENTRY_PLUGIN,
       std::string("--plugin: plugin '") + KILN_NO_ENTRY_PLUGIN +
           "' has no entry point: it must export the C function kiln_plugin_register (see kiln.h, \"Plugins\")",
       false},
      {KILN_EMPTY_PLUGIN,
       std::string("--plugin: plugin '") + KILN_EMPTY_PLUGIN +
           "' registered no functions: its kiln_plugin_register must call kiln_register_function",
       false},
      {KILN_FAILING_PLUGIN,
       std::string("--plugin: plugin '") + KILN_FAILING_PLUGIN + "': kiln_plugin_register failed: refused on purpose",
       false},
  };
}

TEST(PluginTools, RefusalsAreClear) {
  MlpCase c = WriteMlpInputs();
  std::string vmfb = CompileSeed("mlc_mymodule_with_extern_call");
  for (const Refusal& f : Refusals()) {
    for (const char* tool : {"kiln-run", "kiln-bench"}) {
      std::string bin = std::string(tool) == "kiln-run" ? KILN_RUN_PATH : KILN_BENCH_PATH;
      Output r = Shell(bin + " " + vmfb + " --plugin=" + f.plugin + Join(c.input_flags));
      EXPECT_EQ(r.exit_code, 1) << r.text;
      std::string want = std::string(tool) + ": error: " + f.message;
      if (f.prefix) {
        EXPECT_EQ(r.text.substr(0, want.size()), want) << r.text;
      } else {
        EXPECT_EQ(r.text, want + "\n") << r.text;
      }
    }
  }
}

// In this process (linked like the tools, kiln_export_c_api): a failing
// entry point's registrations are taken back; loading twice registers once.
TEST(PluginLoad, FailingEntryPointLeavesNothingRegistered) {
  size_t count = 99;
  kiln_status_t* s = kiln_plugin_load(KILN_FAILING_PLUGIN, &count);
  ASSERT_NE(s, nullptr);
  EXPECT_EQ(kiln_status_code(s), KILN_STATUS_FAILED_PRECONDITION);
  kiln_status_free(s);
  EXPECT_EQ(count, 0u);
  EXPECT_FALSE(LookupGlobalFunction("kiln_test.first").ok());
}

TEST(PluginLoad, LoadingTwiceRegistersOnce) {
  size_t first = 0, second = 0;
  kiln_status_t* s = kiln_plugin_load(KILN_ENV_PLUGIN, &first);
  ASSERT_EQ(s, nullptr) << kiln_status_message(s);
  s = kiln_plugin_load(KILN_ENV_PLUGIN, &second);
  ASSERT_EQ(s, nullptr) << kiln_status_message(s);
  EXPECT_EQ(first, 2u);
  EXPECT_EQ(second, 2u);
  EXPECT_TRUE(LookupGlobalFunction("env.linear").ok());
  EXPECT_TRUE(LookupGlobalFunction("env.relu").ok());
}

TEST(PluginLoad, NullArguments) {
  size_t count = 0;
  kiln_status_t* s = kiln_plugin_load(nullptr, &count);
  ASSERT_NE(s, nullptr);
  EXPECT_EQ(std::string(kiln_status_message(s)), "kiln_plugin_load: path is NULL");
  kiln_status_free(s);
  s = kiln_plugin_load(KILN_ENV_PLUGIN, nullptr);
  ASSERT_NE(s, nullptr);
  EXPECT_EQ(std::string(kiln_status_message(s)), "kiln_plugin_load: out_num_functions is NULL");
  kiln_status_free(s);
}

}  // namespace
}  // namespace kiln
