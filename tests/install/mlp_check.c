/* A Kiln consumer, built by tests/install/ against an installed Kiln (once
 * with CMake's find_package(Kiln), once with a Makefile and pkg-config).
 *
 * usage: mlp_check MLP.vmfb
 * Runs examples/mlp.relax compiled by the installed kiln-compile on a batch of
 * 2 deterministic inputs and compares the result with the same MLP computed
 * here in double precision. Prints "mlp_check: ok ..." and exits 0 when every
 * output is within 1e-3; otherwise prints what went wrong and exits 1. */
#include <kiln/kiln.h>

#include <math.h>
#include <stdio.h>
#include <string.h>

enum { kBatch = 2, kIn = 784, kHidden = 128, kOut = 10 };

static int Fail(const char* what, kiln_status_t* status) {
  fprintf(stderr, "mlp_check: %s: %s: %s\n", what, kiln_status_code_name(kiln_status_code(status)),
          kiln_status_message(status));
  kiln_status_free(status);
  return 1;
}

/* Values in [-0.5, 0.5), the same on every machine. */
static float NextValue(uint32_t* state) {
  *state = *state * 1664525u + 1013904223u;
  return (float)((*state >> 8) & 0xffffu) / 65536.0f - 0.5f;
}

int main(int argc, char** argv) {
  if (argc != 2) {
    fprintf(stderr, "usage: mlp_check MLP.vmfb\n");
    return 2;
  }
  if (kiln_api_version() >> 16 != KILN_API_VERSION_MAJOR) {
    fprintf(stderr, "mlp_check: header major %d, library %u\n", KILN_API_VERSION_MAJOR,
            (unsigned)(kiln_api_version() >> 16));
    return 1;
  }
  const int64_t shapes[5][2] = {{kBatch, kIn}, {kHidden, kIn}, {kHidden, 0}, {kOut, kHidden}, {kOut, 0}};
  const int32_t ranks[5] = {2, 2, 1, 2, 1};
  kiln_tensor_t* inputs[5] = {NULL, NULL, NULL, NULL, NULL};
  float* data[5];
  uint32_t state = 12345u;
  kiln_status_t* status;
  for (int i = 0; i < 5; ++i) {
    status = kiln_tensor_create(shapes[i], ranks[i], KILN_DTYPE_FLOAT32, &inputs[i]);
    if (status) return Fail("kiln_tensor_create", status);
    int64_t count = 0;
    status = kiln_tensor_element_count(inputs[i], &count);
    if (status) return Fail("kiln_tensor_element_count", status);
    status = kiln_tensor_data(inputs[i], (void**)&data[i]);
    if (status) return Fail("kiln_tensor_data", status);
    for (int64_t k = 0; k < count; ++k) data[i][k] = NextValue(&state);
  }

  kiln_module_t* module = NULL;
  status = kiln_module_load_file(argv[1], &module);
  if (status) return Fail(argv[1], status);
  kiln_context_t* context = NULL;
  status = kiln_context_create(module, &context);
  if (status) return Fail("kiln_context_create", status);
  kiln_outputs_t* outputs = NULL;
  status = kiln_context_invoke(context, "main", inputs, 5, &outputs);
  if (status) return Fail("main", status);

  const kiln_tensor_t* y = NULL;
  status = kiln_outputs_get(outputs, 0, &y);
  if (status) return Fail("kiln_outputs_get", status);
  const int64_t* y_shape = NULL;
  int32_t y_ndim = 0;
  float* y_data = NULL;
  if ((status = kiln_tensor_ndim(y, &y_ndim)) || (status = kiln_tensor_shape(y, &y_shape)) ||
      (status = kiln_tensor_data(y, (void**)&y_data))) {
    return Fail("output", status);
  }
  if (y_ndim != 2 || y_shape[0] != kBatch || y_shape[1] != kOut) {
    fprintf(stderr, "mlp_check: output has rank %d, expected (%d, %d)\n", (int)y_ndim, kBatch, kOut);
    return 1;
  }

  /* The reference: relu(x w0^T + b0) w1^T + b1. */
  double max_diff = 0.0;
  for (int b = 0; b < kBatch; ++b) {
    double hidden[kHidden];
    for (int h = 0; h < kHidden; ++h) {
      double acc = data[2][h];
      for (int k = 0; k < kIn; ++k) acc += (double)data[0][b * kIn + k] * data[1][h * kIn + k];
      hidden[h] = acc > 0.0 ? acc : 0.0;
    }
    for (int o = 0; o < kOut; ++o) {
      double acc = data[4][o];
      for (int h = 0; h < kHidden; ++h) acc += hidden[h] * data[3][o * kHidden + h];
      double diff = fabs(acc - (double)y_data[b * kOut + o]);
      if (!(diff <= max_diff)) max_diff = diff; /* also catches NaN */
    }
  }

  kiln_outputs_release(outputs);
  kiln_context_release(context);
  kiln_module_release(module);
  for (int i = 0; i < 5; ++i) kiln_tensor_release(inputs[i]);
  if (!(max_diff <= 1e-3)) {
    fprintf(stderr, "mlp_check: output differs from the reference by %g\n", max_diff);
    return 1;
  }
  printf("mlp_check: ok (Kiln %s, API %u.%u, max difference %.2g)\n", kiln_version_string(),
         (unsigned)(kiln_api_version() >> 16), (unsigned)(kiln_api_version() & 0xffffu), max_diff);
  return 0;
}
