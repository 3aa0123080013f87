/* fuzz_util.h — what the path-taking readers' fuzz targets share: each
 * input becomes the contents of one in-memory file (memfd), opened by the
 * reader through /proc/self/fd/N like any regular file, so every input goes
 * through the reader's own open, stat, size and read checks without touching
 * the disk. Header-only; included by tests/fuzz/fuzz_*.c. */
#ifndef GALV_FUZZ_UTIL_H
#define GALV_FUZZ_UTIL_H

#define _GNU_SOURCE
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/mman.h>
#include <unistd.h>

/* The path of a memfd holding exactly data[0..size). */
static const char *fuzz_file(const uint8_t *data, size_t size) {
  static int fd = -1;
  static char path[64];
  if (fd < 0) {
    fd = memfd_create("galv-fuzz", MFD_CLOEXEC);
    if (fd < 0) perror("memfd_create"), abort();
    snprintf(path, sizeof path, "/proc/self/fd/%d", fd);
  }
  if (ftruncate(fd, 0)) perror("ftruncate"), abort();
  for (size_t got = 0; got < size;) {
    ssize_t k = pwrite(fd, data + got, size - got, (off_t)got);
    if (k <= 0) perror("pwrite"), abort();
    got += (size_t)k;
  }
  return path;
}

#endif
