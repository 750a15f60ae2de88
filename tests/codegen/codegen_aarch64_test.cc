// The named aarch64 target (issue 4 §3) run, not only assembled: modules
// lowered by the driver with its default schedules are built for
// aarch64-linux-gnu and for the host, and every kernel runs on the same
// random float32 arguments on both sides. The aarch64 side is a small C
// runner (aarch64_kernel_runner.c, cross-compiled with aarch64-linux-gnu-gcc)
// under qemu-aarch64; scripts/setup.sh installs both. Every argument must
// match after the call (outputs within a float tolerance, inputs unchanged).
#include <gtest/gtest.h>

#include <unistd.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <string>
#include <vector>

#include "compiler/codegen/native_codegen.h"
#include "compiler/driver/compile.h"
#include "compiler/text/text.h"
#include "tests/codegen/test_kernels.h"

namespace kiln {
namespace codegen_test {
namespace {

using namespace ir;  // NOLINT

// The modules: a two-layer MLP (its second layer a 10-column tile), a 3x3
// convolution at 7x7 with run-time weights (shift planes), a stride-2
// depthwise convolution, softmax, layer_norm and sigmoid (vector math).
const char* kModules[] = {
    R"(@I.ir_module
class Module:
    @R.function
    def main(x: R.Tensor((64, 784), dtype="float32"), w1: R.Tensor((784, 128), dtype="float32"), b1: R.Tensor((128,), dtype="float32"), w2: R.Tensor((128, 10), dtype="float32"), b2: R.Tensor((10,), dtype="float32")) -> R.Tensor((64, 10), dtype="float32"):
        with R.dataflow():
            h = R.matmul(x, w1)
            hb = R.add(h, b1)
            r = R.nn.relu(hb)
            o = R.matmul(r, w2)
            y = R.add(o, b2)
            R.output(y)
        return y
)",
    R"(@I.ir_module
class Module:
    @R.function
    def main(x: R.Tensor((1, 16, 7, 7), dtype="float32"), w: R.Tensor((24, 16, 3, 3), dtype="float32"), d: R.Tensor((1, 24, 14, 14), dtype="float32"), dw: R.Tensor((24, 1, 3, 3), dtype="float32")) -> R.Tuple(R.Tensor((1, 24, 7, 7), dtype="float32"), R.Tensor((1, 24, 7, 7), dtype="float32")):
        with R.dataflow():
            c = R.nn.conv2d(x, w, strides=[1, 1], padding=[1, 1, 1, 1])
            y = R.nn.relu(c)
            e = R.nn.conv2d(d, dw, strides=[2, 2], padding=[1, 1, 1, 1], groups=24)
            z = R.clip(e, min=0, max=6)
            R.output(y, z)
        return (y, z)
)",
    R"(@I.ir_module
class Module:
    @R.function
    def main(s: R.Tensor((8, 128), dtype="float32"), l: R.Tensor((16, 256), dtype="float32"), g: R.Tensor((256,), dtype="float32"), b: R.Tensor((256,), dtype="float32"), v: R.Tensor((1000,), dtype="float32")) -> R.Tuple(R.Tensor((8, 128), dtype="float32"), R.Tensor((16, 256), dtype="float32"), R.Tensor((1000,), dtype="float32")):
        with R.dataflow():
            p = R.nn.softmax(s, axis=-1)
            n = R.nn.layer_norm(l, g, b, axes=[-1])
            q = R.sigmoid(v)
            R.output(p, n, q)
        return (p, n, q)
)",
};

bool Exists(const std::string& path) { return !path.empty() && access(path.c_str(), X_OK) == 0; }

std::string Runner() {
#ifdef KILN_AARCH64_RUNNER
  return KILN_AARCH64_RUNNER;
#else
  return "";
#endif
}
std::string Qemu() {
#ifdef KILN_QEMU_AARCH64
  return KILN_QEMU_AARCH64;
#else
  return "";
#endif
}

// A scratch directory, removed with its files.
class TempDir {
 public:
  TempDir() {
    char tmpl[] = "/tmp/kiln_aarch64_XXXXXX";
    if (mkdtemp(tmpl) != nullptr) path_ = tmpl;
  }
  ~TempDir() {
    if (!path_.empty()) std::system(("rm -rf '" + path_ + "'").c_str());
  }
  const std::string& path() const { return path_; }

 private:
  std::string path_;
};

void WriteFile(const std::string& path, const void* data, size_t bytes) {
  std::ofstream f(path, std::ios::binary);
  f.write(static_cast<const char*>(data), static_cast<std::streamsize>(bytes));
}

std::vector<float> ReadFloats(const std::string& path, size_t count) {
  std::vector<float> v(count);
  std::ifstream f(path, std::ios::binary);
  f.read(reinterpret_cast<char*>(v.data()), static_cast<std::streamsize>(count * sizeof(float)));
  if (!f) v.clear();
  return v;
}

// Static float32 extents of a kernel parameter, or false.
bool ParamShape(const PrimFunc& f, size_t i, std::vector<int64_t>* shape) {
  Buffer b = f->BufferOf(f->params[i]);
  if (b == nullptr || !(b->dtype == DType::Float32())) return false;
  for (const PrimExpr& d : b->shape) {
    const auto* imm = d.as<IntImmNode>();
    if (imm == nullptr) return false;
    shape->push_back(imm->value);
  }
  return true;
}

TEST(CodegenAarch64Test, KernelsMatchTheHostUnderQemu) {
  if (!Exists(Runner()) || !Exists(Qemu())) {
    GTEST_SKIP() << "needs aarch64-linux-gnu-gcc and qemu-aarch64 at configure time (scripts/setup.sh installs "
                    "gcc-aarch64-linux-gnu, libc6-dev-arm64-cross and qemu-user)";
  }
  TempDir dir;
  ASSERT_FALSE(dir.path().empty());
  int kernels_run = 0;
  for (size_t m = 0; m < sizeof(kModules) / sizeof(kModules[0]); ++m) {
    Result<IRModule> mod = text::ParseModule(kModules[m], "aarch64_test.relax");
    ASSERT_TRUE(mod.ok()) << mod.status().ToString();
    driver::CompileOptions options;
    options.num_threads_hint = 2;
    options.target_triple = "aarch64-linux-gnu";
    Result<IRModule> lowered = driver::LowerModule(*mod, options);
    ASSERT_TRUE(lowered.ok()) << lowered.status().ToString();
    std::vector<PrimFunc> funcs;
    for (const ModuleEntry& e : lowered->entries)
      if (e.prim) funcs.push_back(e.prim);
    ASSERT_FALSE(funcs.empty());

    codegen::CodegenOptions arm;
    arm.triple = "aarch64-linux-gnu";
    auto arm_lib = codegen::BuildNativeLibrary(funcs, arm);
    ASSERT_TRUE(arm_lib.ok()) << arm_lib.status().ToString();
    std::string so = dir.path() + "/m" + std::to_string(m) + ".so";
    WriteFile(so, arm_lib->shared_object.data(), arm_lib->shared_object.size());
    auto host_build = codegen::BuildNativeLibrary(funcs, {});
    ASSERT_TRUE(host_build.ok()) << host_build.status().ToString();
    auto host = LoadedLibrary::Load(host_build->shared_object);
    ASSERT_TRUE(host.ok()) << host.status().ToString();

    for (const PrimFunc& f : funcs) {
      std::vector<std::vector<int64_t>> shapes(f->params.size());
      bool plain = true;
      for (size_t i = 0; i < f->params.size() && plain; ++i) plain = ParamShape(f, i, &shapes[i]);
      if (!plain) continue;  // scalar or non-float parameters: not in these modules' kernels
      // The same random arguments for both sides.
      std::vector<Tensor> args;
      std::string job = so + "\n" + f->name + "\n" + std::to_string(f->params.size()) + "\n";
      for (size_t i = 0; i < shapes.size(); ++i) {
        Tensor t = MakeTensor(shapes[i]);
        FillRandom(t, 100 + i);
        std::string path = dir.path() + "/" + f->name + "_" + std::to_string(i) + ".bin";
        WriteFile(path, t.data<float>(), t.NumElements() * sizeof(float));
        job += std::to_string(shapes[i].size());
        for (int64_t e : shapes[i]) job += " " + std::to_string(e);
        job += " " + path + "\n";
        args.push_back(std::move(t));
      }
      std::string job_path = dir.path() + "/" + f->name + ".job";
      WriteFile(job_path, job.data(), job.size());
      std::string cmd = "'" + Qemu() + "' -L /usr/aarch64-linux-gnu '" + Runner() + "' '" + job_path + "' 2>&1";
      FILE* p = popen(cmd.c_str(), "r");
      ASSERT_NE(p, nullptr);
      std::string output;
      char buf[256];
      while (fgets(buf, sizeof(buf), p) != nullptr) output += buf;
      int status = pclose(p);
      ASSERT_EQ(status, 0) << f->name << ": " << output;

      ThreadPool pool(2);
      kiln_kernel_env env = MakeKernelEnv(&pool);
      std::vector<kiln_kernel_arg> host_args;
      for (Tensor& t : args) host_args.push_back(TensorArg(t));
      kiln_kernel_fn fn = (*host)->Find(f->name);
      ASSERT_NE(fn, nullptr) << f->name;
      ASSERT_EQ(fn(&env, host_args.data(), static_cast<int32_t>(host_args.size())), 0) << f->name;
      for (size_t i = 0; i < args.size(); ++i) {
        size_t n = static_cast<size_t>(args[i].NumElements());
        std::vector<float> got = ReadFloats(dir.path() + "/" + f->name + "_" + std::to_string(i) + ".bin.out", n);
        ASSERT_EQ(got.size(), n) << f->name << " argument " << i;
        const float* want = args[i].data<float>();
        float worst = 0;
        for (size_t k = 0; k < n; ++k) {
          float tol = 1e-5f + 1e-5f * std::fabs(want[k]);
          float err = std::fabs(got[k] - want[k]);
          if (!(err <= tol)) worst = std::max(worst, std::isnan(err) ? INFINITY : err / tol);
        }
        EXPECT_EQ(worst, 0.0f) << f->name << " argument " << i << ": worst error " << worst << "x the tolerance";
      }
      ++kernels_run;
    }
  }
  EXPECT_GE(kernels_run, 6);
}

}  // namespace
}  // namespace codegen_test
}  // namespace kiln
