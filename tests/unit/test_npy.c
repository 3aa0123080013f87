/* test_npy.c — .npy writer/reader round trip, numpy's own files, and the
 * refusal of files the runtime must not misread. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "runtime/npy.h"

#define CHECK(c)                                                                                   \
  do {                                                                                             \
    if (!(c)) {                                                                                    \
      fprintf(stderr, "%s:%d: check failed: %s\n", __FILE__, __LINE__, #c);                        \
      return 1;                                                                                    \
    }                                                                                              \
  } while (0)

static int write_bytes(const char *path, const void *b, size_t n) {
  FILE *f = fopen(path, "wb");
  if (!f) return -1;
  fwrite(b, 1, n, f);
  return fclose(f);
}

int main(void) {
  char dir[] = "/tmp/galv-npy-XXXXXX", path[256], err[256];
  if (!mkdtemp(dir)) return 1;
  /* round trip of each dtype, ranks 0..3 */
  npy_dtype kinds[] = {NPY_F32, NPY_F64, NPY_I64, NPY_I32, NPY_BOOL, NPY_U8, NPY_F16};
  for (unsigned k = 0; k < sizeof kinds / sizeof kinds[0]; k++) {
    for (int rank = 0; rank <= 3; rank++) {
      npy_array a = {.dtype = kinds[k], .rank = rank};
      size_t n = 1;
      for (int i = 0; i < rank; i++) n *= (size_t)(a.dims[i] = 2 + i);
      a.nbytes = n * npy_dtype_size(a.dtype);
      a.data = malloc(a.nbytes);
      for (size_t i = 0; i < a.nbytes; i++) ((unsigned char *)a.data)[i] = (unsigned char)(i * 7 + k);
      snprintf(path, sizeof path, "%s/a.npy", dir);
      CHECK(npy_write(path, &a, err, sizeof err) == 0);
      npy_array b;
      CHECK(npy_read(path, &b, err, sizeof err) == 0);
      CHECK(b.dtype == a.dtype && b.rank == a.rank && b.nbytes == a.nbytes);
      for (int i = 0; i < rank; i++) CHECK(b.dims[i] == a.dims[i]);
      CHECK(memcmp(a.data, b.data, a.nbytes) == 0);
      free(a.data);
      npy_free(&b);
    }
  }
  /* a header numpy writes (np.save(np.arange(3, dtype='<i8'))) */
  const char hdr[] = "\x93NUMPY\x01\x00\x76\x00{'descr': '<i8', 'fortran_order': False, 'shape': (3,), }";
  unsigned char buf[128 + 24];
  memset(buf, ' ', sizeof buf);
  memcpy(buf, hdr, sizeof hdr - 1);
  buf[127] = '\n';
  long long v[3] = {0, 1, 2};
  memcpy(buf + 128, v, 24);
  snprintf(path, sizeof path, "%s/np.npy", dir);
  CHECK(write_bytes(path, buf, sizeof buf) == 0);
  npy_array c;
  CHECK(npy_read(path, &c, err, sizeof err) == 0);
  CHECK(c.dtype == NPY_I64 && c.rank == 1 && c.dims[0] == 3 && ((long long *)c.data)[2] == 2);
  npy_free(&c);
  /* refusals: truncated data, Fortran order, big-endian, not npy, missing file */
  CHECK(write_bytes(path, buf, sizeof buf - 8) == 0);
  CHECK(npy_read(path, &c, err, sizeof err) == -1 && strstr(err, "shorter"));
  memcpy(buf + 10 + 34, "True, ", 6);
  CHECK(write_bytes(path, buf, sizeof buf) == 0);
  CHECK(npy_read(path, &c, err, sizeof err) == -1 && strstr(err, "Fortran"));
  memcpy(buf, hdr, sizeof hdr - 1);
  buf[21] = '>'; /* '>i8': big-endian */
  CHECK(write_bytes(path, buf, sizeof buf) == 0);
  CHECK(npy_read(path, &c, err, sizeof err) == -1 && strstr(err, "dtype"));
  CHECK(write_bytes(path, "hello", 5) == 0);
  CHECK(npy_read(path, &c, err, sizeof err) == -1 && strstr(err, "not a .npy"));
  snprintf(path, sizeof path, "%s/missing.npy", dir);
  CHECK(npy_read(path, &c, err, sizeof err) == -1 && strstr(err, "cannot open"));
  snprintf(path, sizeof path, "rm -rf %s", dir);
  if (system(path)) return 1;
  printf("test_npy: ok\n");
  return 0;
}
