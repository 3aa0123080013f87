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
#include <string.h>
#include <dirent.h>
#include <fcntl.h>
#include <sys/mman.h>
#include <unistd.h>

static int fuzz_memfd = -1;

/* The path of a memfd holding exactly data[0..size). */
static const char *fuzz_file(const uint8_t *data, size_t size) {
  static char path[64];
  if (fuzz_memfd < 0) {
    fuzz_memfd = memfd_create("galv-fuzz", MFD_CLOEXEC);
    if (fuzz_memfd < 0) perror("memfd_create"), abort();
    snprintf(path, sizeof path, "/proc/self/fd/%d", fuzz_memfd);
  }
  if (ftruncate(fuzz_memfd, 0)) perror("ftruncate"), abort();
  for (size_t got = 0; got < size;) {
    ssize_t k = pwrite(fuzz_memfd, data + got, size - got, (off_t)got);
    if (k <= 0) perror("pwrite"), abort();
    got += (size_t)k;
  }
  return path;
}

/* Called at the end of each input: aborts when the reader left the input
 * file open (a FILE it did not close is no leak to LSan, since glibc lists
 * every open FILE; descriptors are what such a leak exhausts). Only
 * descriptors of the input count: libFuzzer's own (its symbolizer's pipes)
 * come and go. */
static void fuzz_fds_check(void) {
  DIR *d = opendir("/proc/self/fd");
  if (!d) perror("opendir /proc/self/fd"), abort();
  for (struct dirent *e; (e = readdir(d));) {
    int fd = atoi(e->d_name);
    if (e->d_name[0] == '.' || fd == fuzz_memfd || fd == dirfd(d)) continue;
    char link[64], target[256];
    snprintf(link, sizeof link, "/proc/self/fd/%d", fd);
    ssize_t n = readlink(link, target, sizeof target - 1);
    if (n > 0 && (target[n] = 0, strstr(target, "memfd:galv-fuzz"))) {
      fprintf(stdout, "the reader left the input file open (descriptor %d)\n", fd);
      fflush(stdout);
      abort();
    }
  }
  closedir(d);
}

#endif
