// kiln-gpu-device-check MODEL.cuda.vmfb: a GPU .vmfb of tests/gpu/device_io.relax
// (main(x, y) = x * y + x, 64x64 float32) run on CUDA device 0:
//
// 1. Through the C API (kiln.h): a KILN_DEVICE_CUDA instance, host inputs in,
//    the output on the device (kiln_tensor_device), copied out and checked;
//    then that device output exported as DLPack (kDLCUDA), imported back and
//    passed as x of a second call (a device-resident input), checked again.
// 2. Through PreparedCall (kiln-run's and kiln-bench's path) with and without
//    CUDA graph replay: the replayed result equals the plain one bit for bit,
//    and the wall time per call (median of 500, each waiting for the device)
//    of both is printed.
//
// Exit status 0 when everything matches, 1 otherwise, 2 without a GPU.
#include <dlpack/dlpack.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <string>
#include <vector>

#include "capi/kiln.h"
#include "tools/common/prepared_call.h"

namespace {

constexpr int64_t kN = 64 * 64;
int g_failures = 0;

#define EXPECT_OK(expr)                                                                   \
  do {                                                                                    \
    kiln_status_t* s_ = (expr);                                                           \
    if (s_ != nullptr) {                                                                  \
      std::printf("FAIL %s: %s\n", #expr, kiln_status_message(s_));                       \
      kiln_status_free(s_);                                                               \
      ++g_failures;                                                                       \
      return;                                                                             \
    }                                                                                     \
  } while (0)

kiln_tensor_t* Host(float start, float step) {
  const int64_t shape[2] = {64, 64};
  kiln_tensor_t* t = nullptr;
  if (kiln_tensor_create(shape, 2, KILN_DTYPE_FLOAT32, &t) != nullptr) return nullptr;
  void* data = nullptr;
  kiln_tensor_data(t, &data);
  for (int64_t i = 0; i < kN; ++i) static_cast<float*>(data)[i] = start + step * static_cast<float>(i % 101);
  return t;
}

float At(const kiln_tensor_t* t, int64_t i) {
  void* data = nullptr;
  kiln_tensor_data(t, &data);
  return static_cast<const float*>(data)[i];
}

// want(i) for each element; prints the largest difference.
void Check(const char* what, const kiln_tensor_t* host, const std::vector<float>& want) {
  double worst = 0;
  for (int64_t i = 0; i < kN; ++i) worst = std::max(worst, std::fabs(double(At(host, i)) - want[i]));
  bool ok = worst <= 1e-4;
  std::printf("%s %s: max |gpu - host| %.3g\n", ok ? "ok  " : "FAIL", what, worst);
  if (!ok) ++g_failures;
}

void CApiRoundTrip(const char* path) {
  kiln_instance_options_t* options = nullptr;
  kiln_instance_t* instance = nullptr;
  kiln_module_t* module = nullptr;
  kiln_context_t* context = nullptr;
  EXPECT_OK(kiln_instance_options_create(&options));
  EXPECT_OK(kiln_instance_options_set_device(options, KILN_DEVICE_CUDA, 0));
  EXPECT_OK(kiln_instance_create(options, &instance));
  kiln_instance_options_release(options);
  EXPECT_OK(kiln_instance_load_module_file(instance, path, &module));
  EXPECT_OK(kiln_instance_create_context(instance, module, nullptr, &context));
  kiln_tensor_t* x = Host(0.5f, 0.25f);
  kiln_tensor_t* y = Host(-1.0f, 0.125f);
  kiln_tensor_t* inputs[2] = {x, y};
  kiln_outputs_t* outputs = nullptr;
  EXPECT_OK(kiln_context_invoke(context, "main", inputs, 2, &outputs));
  const kiln_tensor_t* out = nullptr;
  EXPECT_OK(kiln_outputs_get(outputs, 0, &out));
  int32_t type = 0, id = -1;
  EXPECT_OK(kiln_tensor_device(out, &type, &id));
  std::printf("%s C API output on device type %d id %d (want KILN_DEVICE_CUDA %d, 0)\n",
              type == KILN_DEVICE_CUDA && id == 0 ? "ok  " : "FAIL", type, id, KILN_DEVICE_CUDA);
  if (type != KILN_DEVICE_CUDA || id != 0) ++g_failures;
  std::vector<float> want1(kN), want2(kN);
  for (int64_t i = 0; i < kN; ++i) {
    want1[i] = At(x, i) * At(y, i) + At(x, i);
    want2[i] = want1[i] * At(y, i) + want1[i];
  }
  kiln_tensor_t* host = nullptr;
  EXPECT_OK(kiln_instance_copy_to_host(instance, out, &host));
  Check("C API: host inputs -> device output, copied out", host, want1);
  kiln_tensor_release(host);

  // The device output back in as x, through DLPack (no copy to the host).
  DLManagedTensor* managed = nullptr;
  EXPECT_OK(kiln_tensor_to_dlpack(out, &managed));
  std::printf("%s DLPack export of the output: device type %d\n",
              managed->dl_tensor.device.device_type == kDLCUDA ? "ok  " : "FAIL",
              static_cast<int>(managed->dl_tensor.device.device_type));
  kiln_tensor_t* dev_x = nullptr;
  EXPECT_OK(kiln_tensor_from_dlpack(managed, &dev_x));
  kiln_tensor_t* inputs2[2] = {dev_x, y};
  kiln_outputs_t* outputs2 = nullptr;
  EXPECT_OK(kiln_context_invoke(context, "main", inputs2, 2, &outputs2));
  const kiln_tensor_t* out2 = nullptr;
  EXPECT_OK(kiln_outputs_get(outputs2, 0, &out2));
  EXPECT_OK(kiln_instance_synchronize(instance));
  EXPECT_OK(kiln_instance_copy_to_host(instance, out2, &host));
  Check("C API: device input (DLPack kDLCUDA) -> device output", host, want2);
  kiln_tensor_release(host);
  kiln_outputs_release(outputs2);
  kiln_tensor_release(dev_x);
  kiln_outputs_release(outputs);
  kiln_tensor_release(x);
  kiln_tensor_release(y);
  kiln_context_release(context);
  kiln_module_release(module);
  kiln_instance_release(instance);
}

double MedianUs(kiln::tools::PreparedCall* call, kiln::Any* last) {
  std::vector<double> us;
  for (int i = 0; i < 520; ++i) {
    kiln::Any result;
    auto t0 = std::chrono::steady_clock::now();
    kiln::Status s = call->Call(&result);  // waits for the device
    auto t1 = std::chrono::steady_clock::now();
    if (!s.ok()) {
      std::printf("FAIL call: %s\n", s.ToString().c_str());
      ++g_failures;
      return -1;
    }
    if (i >= 20) us.push_back(std::chrono::duration<double, std::micro>(t1 - t0).count());
    *last = result;
  }
  std::sort(us.begin(), us.end());
  return us[us.size() / 2];
}

void GraphVersusPlain(const char* path) {
  kiln::tools::CallSpec spec;
  spec.module_path = path;
  spec.inputs = {"64x64xf32=random:1", "64x64xf32=random:2"};
  spec.device = 0;
  double us[2] = {0, 0};
  std::vector<float> values[2];
  for (int graph = 0; graph < 2; ++graph) {
    spec.cuda_graph = graph == 1;
    kiln::Result<std::unique_ptr<kiln::tools::PreparedCall>> call = kiln::tools::PreparedCall::Create(spec);
    if (!call.ok()) {
      std::printf("FAIL %s\n", call.status().ToString().c_str());
      ++g_failures;
      return;
    }
    kiln::Any last;
    us[graph] = MedianUs(call->get(), &last);
    std::vector<kiln::Any> outs = {last};
    kiln::Status s = (*call)->OutputsToHost(&outs);
    if (!s.ok() || !outs[0].is_tensor()) {
      std::printf("FAIL reading the output: %s\n", s.ToString().c_str());
      ++g_failures;
      return;
    }
    const float* p = outs[0].tensor().data<float>();
    values[graph].assign(p, p + kN);
    if (graph == 1) {
      const std::string& note = (*call)->cuda_graph_note();
      bool captured = note.rfind("captured", 0) == 0;
      std::printf("%s CUDA graph: %s\n", captured ? "ok  " : "FAIL", note.c_str());
      if (!captured) ++g_failures;
    }
  }
  bool same = values[0] == values[1];
  std::printf("%s graph replay's output equals the plain launches' bit for bit\n", same ? "ok  " : "FAIL");
  if (!same) ++g_failures;
  std::printf("device_io call wall time (PreparedCall, waits for the device), median of 500: plain launches %.2f us, "
              "CUDA graph %.2f us\n",
              us[0], us[1]);
}

}  // namespace

int main(int argc, char** argv) {
  if (argc != 2) {
    std::fprintf(stderr, "usage: kiln-gpu-device-check DEVICE_IO.cuda.vmfb\n");
    return 2;
  }
  kiln_instance_options_t* options = nullptr;
  kiln_instance_t* probe = nullptr;
  kiln_instance_options_create(&options);
  kiln_instance_options_set_device(options, KILN_DEVICE_CUDA, 0);
  kiln_status_t* s = kiln_instance_create(options, &probe);
  kiln_instance_options_release(options);
  if (s != nullptr) {
    std::printf("kiln-gpu-device-check: no GPU: %s\n", kiln_status_message(s));
    kiln_status_free(s);
    return 2;
  }
  kiln_instance_release(probe);
  CApiRoundTrip(argv[1]);
  GraphVersusPlain(argv[1]);
  std::printf("%s\n", g_failures == 0 ? "all ok" : "FAILED");
  return g_failures == 0 ? 0 : 1;
}
