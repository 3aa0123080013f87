/* npy.c — NumPy .npy reader/writer. Little-endian hosts only (checked), C
 * order only: a Fortran-order or big-endian file is refused with a reason,
 * never misread. The reader takes regular files only and a header that is
 * one complete dict ({...} then padding and a newline) whose shape matches
 * the file's size exactly; the writer replaces a file atomically (galv_file.h). */
#include "npy.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "galv_file.h"

static const struct {
  const char *descr;
  size_t size;
} kinds[] = {
    [NPY_F32] = {"<f4", 4}, [NPY_F64] = {"<f8", 8}, [NPY_F16] = {"<f2", 2},
    [NPY_I64] = {"<i8", 8}, [NPY_I32] = {"<i4", 4}, [NPY_I16] = {"<i2", 2},
    [NPY_I8] = {"|i1", 1},  [NPY_U8] = {"|u1", 1},  [NPY_BOOL] = {"|b1", 1},
    [NPY_BF16_AS_U16] = {"<u2", 2},
};

size_t npy_dtype_size(npy_dtype t) { return kinds[t].size; }
const char *npy_dtype_descr(npy_dtype t) { return kinds[t].descr; }

void npy_free(npy_array *a) {
  free(a->data);
  a->data = NULL;
}

#define FAIL(...)                                                                                  \
  do {                                                                                             \
    snprintf(err, errlen, __VA_ARGS__);                                                            \
    goto fail;                                                                                     \
  } while (0)

int npy_read(const char *path, npy_array *out, char *err, size_t errlen) {
  memset(out, 0, sizeof *out);
  char *hdr = NULL;
  int fd = open(path, O_RDONLY | O_CLOEXEC | O_NONBLOCK); /* O_NONBLOCK: a FIFO does not hang the open */
  struct stat st;
  if (fd < 0 || fstat(fd, &st)) {
    snprintf(err, errlen, "cannot open: %s", strerror(errno));
    if (fd >= 0) close(fd);
    return -1;
  }
  if (!S_ISREG(st.st_mode)) {
    snprintf(err, errlen, "not a regular file (%s)", S_ISDIR(st.st_mode) ? "a directory" : "a device, pipe or socket");
    close(fd);
    return -1;
  }
  FILE *f = fdopen(fd, "rb");
  if (!f) {
    snprintf(err, errlen, "cannot open: %s", strerror(errno));
    close(fd);
    return -1;
  }
  unsigned char magic[8];
  if (fread(magic, 1, 8, f) != 8 || memcmp(magic, "\x93NUMPY", 6) != 0) FAIL("not a .npy file");
  size_t hlen;
  if (magic[6] == 1) {
    unsigned char b[2];
    if (fread(b, 1, 2, f) != 2) FAIL("truncated header");
    hlen = b[0] | (size_t)b[1] << 8;
  } else if (magic[6] == 2 || magic[6] == 3) {
    unsigned char b[4];
    if (fread(b, 1, 4, f) != 4) FAIL("truncated header");
    hlen = b[0] | (size_t)b[1] << 8 | (size_t)b[2] << 16 | (size_t)b[3] << 24;
    if (hlen > (1u << 20)) FAIL("header too large");
  } else {
    FAIL("unsupported .npy version %d", magic[6]);
  }
  hdr = malloc(hlen + 1);
  if (!hdr || fread(hdr, 1, hlen, f) != hlen) FAIL("truncated header");
  hdr[hlen] = 0;
  /* one dict: "{...}", then spaces, then the newline that ends the header */
  size_t e = hlen;
  if (e && hdr[e - 1] == '\n') e--;
  while (e && hdr[e - 1] == ' ') e--;
  if (!hlen || hdr[hlen - 1] != '\n' || hdr[0] != '{' || !e || hdr[e - 1] != '}' || memchr(hdr, 0, hlen) ||
      memchr(hdr, '}', e - 1) || memchr(hdr, '\n', hlen - 1))
    FAIL("malformed header (expected one {...} dict ending in a newline)");
  const char *d = strstr(hdr, "'descr'");
  const char *fo = strstr(hdr, "'fortran_order'");
  const char *sh = strstr(hdr, "'shape'");
  if (!d || !fo || !sh) FAIL("malformed header");
  d = strchr(d + 7, '\'');
  if (!d) FAIL("malformed descr");
  d++;
  int found = -1;
  for (int i = 0; i < (int)(sizeof kinds / sizeof kinds[0]); i++) {
    size_t n = strlen(kinds[i].descr);
    if (strncmp(d, kinds[i].descr, n) == 0 && d[n] == '\'') found = i;
    /* '<' vs '|' vs '=' for one-byte types */
    else if (kinds[i].size == 1 && strncmp(d + 1, kinds[i].descr + 1, n - 1) == 0 && d[n] == '\'') found = i;
  }
  if (found < 0) FAIL("unsupported dtype '%.5s' (want little-endian f4 f8 f2 i8 i4 i2 i1 u1 b1)", d);
  out->dtype = (npy_dtype)found;
  const char *fv = fo + 15;
  while (*fv == ' ' || *fv == ':') fv++;
  if (strncmp(fv, "False", 5) != 0) FAIL("Fortran-order arrays are not supported");
  const char *p = strchr(sh, '(');
  if (!p) FAIL("malformed shape");
  p++;
  size_t numel = 1;
  for (;;) {
    while (*p == ' ' || *p == ',') p++;
    if (*p == ')') break;
    if (*p < '0' || *p > '9') FAIL("malformed shape");
    if (out->rank == NPY_MAX_RANK) FAIL("rank above %d", NPY_MAX_RANK);
    char *end;
    errno = 0;
    long long v = strtoll(p, &end, 10);
    if (errno || v < 0) FAIL("bad dimension");
    out->dims[out->rank++] = v;
    if (v && numel > SIZE_MAX / 16 / (size_t)v) FAIL("shape too large");
    numel *= (size_t)v;
    p = end;
  }
  out->nbytes = numel * kinds[found].size;
  size_t start = (magic[6] == 1 ? 10 : 12) + hlen;
  if ((uint64_t)st.st_size < start || (uint64_t)st.st_size - start < out->nbytes)
    FAIL("file shorter than its shape says (%zu data bytes, the shape needs %zu)",
         (uint64_t)st.st_size < start ? (size_t)0 : (size_t)st.st_size - start, out->nbytes);
  if ((uint64_t)st.st_size - start > out->nbytes)
    FAIL("file longer than its shape says (%zu data bytes, the shape needs %zu)", (size_t)st.st_size - start, out->nbytes);
  out->data = malloc(out->nbytes ? out->nbytes : 1);
  if (!out->data) FAIL("out of memory");
  if (fread(out->data, 1, out->nbytes, f) != out->nbytes) FAIL("file shorter than its shape says");
  free(hdr);
  fclose(f);
  return 0;
fail:
  free(hdr);
  npy_free(out);
  fclose(f);
  return -1;
}

int npy_write(const char *path, const npy_array *a, char *err, size_t errlen) {
  char dict[256];
  int n = snprintf(dict, sizeof dict, "{'descr': '%s', 'fortran_order': False, 'shape': (", kinds[a->dtype].descr);
  for (int i = 0; i < a->rank; i++)
    n += snprintf(dict + n, sizeof dict - (size_t)n, "%lld%s", (long long)a->dims[i], a->rank == 1 ? "," : (i + 1 < a->rank ? ", " : ""));
  n += snprintf(dict + n, sizeof dict - (size_t)n, "), }");
  /* pad so that data starts on a 64-byte boundary; header ends in '\n' */
  size_t total = 10 + (size_t)n + 1;
  size_t pad = (64 - total % 64) % 64;
  size_t hlen = (size_t)n + pad + 1;
  galv_wfile w;
  char why[4400];
  FILE *f = galv_wfile_open(&w, path, 0, why, sizeof why);
  if (!f) {
    snprintf(err, errlen, "cannot create: %s", strerror(errno));
    return -1;
  }
  unsigned char pre[10] = {0x93, 'N', 'U', 'M', 'P', 'Y', 1, 0, (unsigned char)(hlen & 0xff), (unsigned char)(hlen >> 8)};
  int ok = fwrite(pre, 1, 10, f) == 10 && fwrite(dict, 1, (size_t)n, f) == (size_t)n;
  for (size_t i = 0; ok && i < pad; i++) ok = fputc(' ', f) != EOF;
  ok = ok && fputc('\n', f) != EOF && fwrite(a->data, 1, a->nbytes, f) == a->nbytes;
  if (!ok) {
    snprintf(err, errlen, "write failed: %s", strerror(errno));
    galv_wfile_abandon(&w);
    return -1;
  }
  if (galv_wfile_commit(&w, why, sizeof why)) {
    const char *c = strstr(why, ": write failed");
    snprintf(err, errlen, "%s", c ? c + 2 : why); /* the caller names the file */
    return -1;
  }
  return 0;
}
