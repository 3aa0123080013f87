/* fuzz_ckpt.c — libFuzzer target for the checkpoint reader (runtime/io.c
 * galv_ckpt_open / galv_ckpt_read): the input is the checkpoint file; when
 * it opens, every tensor it lists is read back. A rejected input must be one
 * error line naming the file, never a crash or a leak. Inputs past the
 * CRC-32 check are rare from mutation alone: the seeds (make_seeds.py) are
 * valid checkpoints, and each field's range is checked before the CRC. */
#include "fuzz_util.h" /* first: it defines _GNU_SOURCE */
#include <stdint.h>
#include <stdlib.h>

#include "runtime/galv_rt.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  galv_ckpt c;
  if (galv_ckpt_open(&c, fuzz_file(data, size))) {
    fuzz_fds_check();
    return 0;
  }
  for (int i = 0; i < c.n; i++) {
    void *dst = malloc(c.e[i].nbytes ? (size_t)c.e[i].nbytes : 1);
    if (!dst) abort();
    (void)galv_ckpt_read(&c, &c.e[i], dst);
    free(dst);
  }
  galv_ckpt_close(&c);
  fuzz_fds_check();
  return 0;
}
