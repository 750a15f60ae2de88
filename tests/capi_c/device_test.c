/* Devices in the C API (API 0.6) on a machine without a GPU: the device
 * option's errors, a CUDA instance that cannot open its device (no driver:
 * this test runs with KILN_CUDA_DRIVER naming a library that does not
 * exist, so also on a GPU machine), DLPack import and export of kDLCUDA
 * tensors, kiln_tensor_device, and what a CPU instance or context does with
 * a device tensor: refuse it, never read it. */
#include <dlpack/dlpack.h>
#include <stdint.h>
#include <string.h>

#include "tests/capi_c/check.h"
#include "tests/capi_c/test_model.h"

static void test_device_option_errors(void) {
  kiln_instance_options_t* options = NULL;
  kiln_instance_t* instance = NULL;
  int32_t type = -1, id = -1;
  CHECK_OK(kiln_instance_options_create(&options));
  CHECK_STATUS(kiln_instance_options_set_device(options, 10, 0), KILN_STATUS_INVALID_ARGUMENT,
               "device type 10 is not one Kiln runs on (KILN_DEVICE_CPU 1, KILN_DEVICE_CUDA 2)");
  CHECK_STATUS(kiln_instance_options_set_device(options, KILN_DEVICE_CUDA, -1), KILN_STATUS_INVALID_ARGUMENT,
               "device id -1: GPU ordinals start at 0");
  CHECK_STATUS(kiln_instance_options_set_device(options, KILN_DEVICE_CPU, 1), KILN_STATUS_INVALID_ARGUMENT,
               "device id 1: the CPU is device 0");
  CHECK_STATUS(kiln_instance_options_set_device(NULL, KILN_DEVICE_CPU, 0), KILN_STATUS_INVALID_ARGUMENT,
               "options is NULL");
  /* The default: the CPU. */
  CHECK_OK(kiln_instance_create(options, &instance));
  CHECK_OK(kiln_instance_device(instance, &type, &id));
  CHECK(type == KILN_DEVICE_CPU && id == 0);
  CHECK_OK(kiln_instance_synchronize(instance)); /* nothing to wait for */
  kiln_instance_release(instance);
  instance = NULL;

  CHECK_OK(kiln_instance_options_set_device(options, KILN_DEVICE_CUDA, 0));
  /* No driver (or a library built without CUDA): a status, no instance. */
  {
    kiln_status_t* s = kiln_instance_create(options, &instance);
    kiln_status_code_t code = kiln_status_code(s);
    const char* message = kiln_status_message(s);
    CHECK(instance == NULL);
    CHECK((code == KILN_STATUS_FAILED_PRECONDITION &&
           strstr(message, "kiln_instance_create: KILN_DEVICE_CUDA 0: no CUDA driver: "
                           "libkiln-no-such-driver.so.1: ") != NULL) ||
          (code == KILN_STATUS_UNIMPLEMENTED &&
           strstr(message, "KILN_DEVICE_CUDA: this library was built without CUDA") != NULL));
    kiln_status_free(s);
  }
  kiln_instance_options_release(options);
}

static void* never_allocate(void* user, size_t nbytes, size_t alignment) {
  (void)user;
  (void)nbytes;
  (void)alignment;
  return NULL;
}
static void never_free(void* user, void* ptr) {
  (void)user;
  (void)ptr;
}

static void test_cuda_instance_takes_no_allocator(void) {
  kiln_instance_options_t* options = NULL;
  kiln_instance_t* instance = NULL;
  kiln_allocator_t a;
  memset(&a, 0, sizeof a);
  a.allocate = never_allocate;
  a.free = never_free;
  CHECK_OK(kiln_instance_options_create(&options));
  CHECK_OK(kiln_instance_options_set_allocator(options, &a));
  CHECK_OK(kiln_instance_options_set_device(options, KILN_DEVICE_CUDA, 0));
  CHECK_STATUS(kiln_instance_create(options, &instance), KILN_STATUS_INVALID_ARGUMENT,
               "a CUDA instance allocates its GPU's memory; it takes no allocator");
  CHECK(instance == NULL);
  kiln_instance_options_release(options);
}

static int g_deletes = 0;
static int64_t g_shape[2] = {3, 4};
static void count_delete(DLManagedTensor* self) { ++*(int*)self->manager_ctx; }

/* A DLPack tensor that claims to be on GPU 0 at an address no host code may
 * read (Kiln must never dereference it on a CPU path). */
static DLManagedTensor cuda_managed(void) {
  DLManagedTensor m;
  memset(&m, 0, sizeof m);
  m.dl_tensor.data = (void*)(uintptr_t)0x7f0000000000ull;
  m.dl_tensor.device.device_type = kDLCUDA;
  m.dl_tensor.device.device_id = 0;
  m.dl_tensor.ndim = 2;
  m.dl_tensor.dtype.code = kDLFloat;
  m.dl_tensor.dtype.bits = 32;
  m.dl_tensor.dtype.lanes = 1;
  m.dl_tensor.shape = g_shape;
  m.manager_ctx = &g_deletes;
  m.deleter = count_delete;
  return m;
}

static void test_cuda_tensors_in_and_out(void) {
  DLManagedTensor m = cuda_managed();
  kiln_tensor_t* t = NULL;
  kiln_tensor_t* host = NULL;
  DLManagedTensor* out = NULL;
  int32_t type = -1, id = -1;
  kiln_instance_t* instance = NULL;
  g_deletes = 0;
  CHECK_OK(kiln_tensor_from_dlpack(&m, &t));
  CHECK_OK(kiln_tensor_device(t, &type, &id));
  CHECK(type == KILN_DEVICE_CUDA && id == 0);
  /* Exported as it is: still on the GPU. */
  CHECK_OK(kiln_tensor_to_dlpack(t, &out));
  CHECK(out->dl_tensor.device.device_type == kDLCUDA && out->dl_tensor.device.device_id == 0);
  CHECK(out->dl_tensor.data == m.dl_tensor.data);
  out->deleter(out);
  /* A CPU instance cannot copy it out. */
  CHECK_OK(kiln_instance_create(NULL, &instance));
  CHECK_STATUS(kiln_instance_copy_to_host(instance, t, &host), KILN_STATUS_FAILED_PRECONDITION,
               "kiln_instance_copy_to_host: the tensor is on cuda:0; this call has no access to that device's memory");
  CHECK(host == NULL);
  /* A CPU context refuses it at the call, before any kernel reads it. */
  {
    kiln_module_t* module = test_load_model();
    kiln_context_t* context = NULL;
    kiln_tensor_t* y = test_f32_tensor(g_shape, 2, 0.0f, 1.0f);
    kiln_tensor_t* inputs[2];
    kiln_outputs_t* outputs = NULL;
    inputs[0] = t;
    inputs[1] = y;
    CHECK(module != NULL);
    CHECK_OK(kiln_context_create_with_executor(module, KILN_EXECUTOR_VM, &context));
    CHECK_STATUS(kiln_context_invoke(context, "main", inputs, 2, &outputs), KILN_STATUS_INVALID_ARGUMENT,
                 "main: argument 0 is on cuda:0, but this call runs on the CPU");
    CHECK(outputs == NULL);
    /* A host tensor "copies" to itself: a new handle, the same storage. */
    {
      void* a = NULL;
      void* b = NULL;
      CHECK_OK(kiln_instance_copy_to_host(instance, y, &host));
      CHECK_OK(kiln_tensor_data(y, &a));
      CHECK_OK(kiln_tensor_data(host, &b));
      CHECK(a == b);
      CHECK_OK(kiln_tensor_device(host, &type, &id));
      CHECK(type == KILN_DEVICE_CPU && id == 0);
      kiln_tensor_release(host);
    }
    kiln_tensor_release(y);
    kiln_context_release(context);
    kiln_module_release(module);
  }
  kiln_instance_release(instance);
  kiln_tensor_release(t);
  CHECK(g_deletes == 1);

  /* Devices Kiln does not run on are refused at import. */
  m = cuda_managed();
  m.dl_tensor.device.device_type = kDLROCM;
  CHECK_STATUS(kiln_tensor_from_dlpack(&m, &t), KILN_STATUS_INVALID_ARGUMENT,
               "the tensor is on device type 10; Kiln takes kDLCPU (1), kDLCUDA (2) and kDLCUDAHost (3) tensors");
  CHECK(g_deletes == 1);
}

int main(void) {
  RUN_TEST(test_device_option_errors);
  RUN_TEST(test_cuda_instance_takes_no_allocator);
  RUN_TEST(test_cuda_tensors_in_and_out);
  return FINISH();
}
