/* fuzz_npy.c — libFuzzer target for the readers of program inputs: .npy
 * (runtime/npy.c npy_read, through its own open and stat checks) and the
 * serialized ONNX TensorProto (.pb, runtime/io.c galv_read_pb), both on
 * every input. A rejected input must be one error line, never a crash or a
 * leak. */
#include "fuzz_util.h" /* first: it defines _GNU_SOURCE */
#include <stdint.h>
#include <stdlib.h>

#include "runtime/galv_rt.h"
#include "runtime/npy.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  char err[512];
  npy_array a;
  if (npy_read(fuzz_file(data, size), &a, err, sizeof err) == 0) npy_free(&a);
  galv_tensor t;
  char *name = NULL;
  if (galv_read_pb(data, size, &t, &name, err, sizeof err) == 0) free(t.data), free(name);
  fuzz_fds_check();
  return 0;
}
