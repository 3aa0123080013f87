/* npy.h — reading and writing NumPy .npy files (format 1.0/2.0/3.0, C order,
 * little-endian). Used by the drivers and tests now and by the generated
 * programs' runtime later; it depends on nothing but libc. */
#ifndef GALV_NPY_H
#define GALV_NPY_H

#include <stddef.h>
#include <stdint.h>

enum { NPY_MAX_RANK = 8 };

typedef enum {
  NPY_F32, NPY_F64, NPY_F16, NPY_I64, NPY_I32, NPY_I16, NPY_I8, NPY_U8, NPY_BOOL, NPY_BF16_AS_U16
} npy_dtype;

typedef struct {
  npy_dtype dtype;
  int rank;
  int64_t dims[NPY_MAX_RANK];
  size_t nbytes;
  void *data; /* malloc'ed; free with npy_free */
} npy_array;

/* Returns 0, or -1 with a one-line reason in err (never prints). */
int npy_read(const char *path, npy_array *out, char *err, size_t errlen);
int npy_write(const char *path, const npy_array *a, char *err, size_t errlen);
void npy_free(npy_array *a);
size_t npy_dtype_size(npy_dtype t);
const char *npy_dtype_descr(npy_dtype t); /* "<f4", ... */

#endif
