/* fuzz_util.h — what the path-taking readers' fuzz targets share: each
 * input becomes the contents of one in-memory file (memfd), opened by the
 * reader through /proc/self/fd/N like any regular file, so every input goes
 * through the reader's own open, stat, size and read checks without touching
 * the disk, and fuzz_fds_check finds descriptors a reader left open.
 * Header-only; included by tests/fuzz/fuzz_*.c. */
#ifndef GALV_FUZZ_UTIL_H
#define GALV_FUZZ_UTIL_H

#define _GNU_SOURCE
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <fcntl.h>
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

/* Called at the end of each input: aborts when the reader left a file
 * descriptor open (a FILE it did not close is no leak to LSan, since glibc
 * lists every open FILE; fds are what such a leak exhausts). */
static void fuzz_fds_check(void) {
  static int base = -1;
  int fd = open("/dev/null", O_RDONLY | O_CLOEXEC);
  if (fd < 0) perror("open /dev/null"), abort();
  close(fd);
  if (base < 0) base = fd;
  if (fd > base) {
    fprintf(stdout, "the reader left file descriptor %d open\n", base);
    fflush(stdout);
    abort();
  }
}

#endif
