/* fuzz_weights.c — libFuzzer target for the weights.bin reader (runtime/io.c
 * galv_weights_open: size, regular file, mapping, the checksum trailer and
 * the rank block's CRC-32). The first 4 input bytes are what the program
 * expects (u16 block bytes, u8 ranks 1..4, u8 this rank), the rest is the
 * file. A rejected input must be one error line, never a crash or a leak. */
#include "fuzz_util.h" /* first: it defines _GNU_SOURCE */
#include <stdint.h>
#include <sys/mman.h>

#include "runtime/galv_rt.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  if (size < 4) return 0;
  int64_t bytes = data[0] | data[1] << 8;
  int nblocks = 1 + data[2] % 4, index = data[3] % nblocks;
  char err[512];
  size_t len = 0;
  int common;
  const char *p = galv_weights_open(fuzz_file(data + 4, size - 4), bytes, nblocks, index, &len, &common, err, sizeof err);
  if (p && len) munmap((void *)p, len);
  fuzz_fds_check();
  return 0;
}
