/* io.c — input, output and weights I/O of generated CPU programs: .npy (via
 * npy.c) and serialized ONNX TensorProto (.pb) inputs, .npy outputs, and the
 * read-only mapping of weights.bin. The .pb reader is a small protobuf
 * wire-format decoder for the TensorProto fields dims(1), data_type(2),
 * float_data(4), int32_data(5), int64_data(7), name(8), raw_data(9),
 * double_data(10); it links no protobuf library. Nothing here trusts a file:
 * every length is checked and a bad file is a one-line reason, never a crash. */
#include <errno.h>
#include <fcntl.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include "galv_rt.h"
#include "npy.h"

const char *galv_progname = "program";

int galv_fatal_rank;
const char *galv_fatal_name;

static void vfatal(const char *name, const char *fmt, va_list ap) __attribute__((noreturn, format(printf, 2, 0)));
static void vfatal(const char *name, const char *fmt, va_list ap) {
  fflush(stdout);
  /* one write, so that the lines of several ranks do not interleave */
  char line[2048];
  int k = snprintf(line, sizeof line, "%s: error: ", name);
  if (k >= 0 && k < (int)sizeof line) vsnprintf(line + k, sizeof line - (size_t)k, fmt, ap);
  line[sizeof line - 2] = 0;
  fprintf(stderr, "%s\n", line);
  exit(1);
}

void galv_fatal(const char *fmt, ...) {
  va_list ap;
  va_start(ap, fmt);
  vfatal(galv_progname, fmt, ap);
}

void galv_fatal_all(const char *fmt, ...) {
  if (galv_fatal_rank != 0) {
    /* rank 0 reports it; its exit takes the job down (MPI_Abort, or the
     * launcher stopping the other ranks). Exit ourselves only if it does not. */
    fflush(stdout);
    for (int i = 0; i < 30; i++) sleep(1);
    exit(1);
  }
  va_list ap;
  va_start(ap, fmt);
  vfatal(galv_fatal_name ? galv_fatal_name : galv_progname, fmt, ap);
}

const char *galv_argv0;

const char *galv_launch_hint(void) {
  static char hint[4200];
  char dir[4096] = "";
  if (galv_argv0 && strchr(galv_argv0, '/')) snprintf(dir, sizeof dir, "%s", galv_argv0);
  else {
    ssize_t n = readlink("/proc/self/exe", dir, sizeof dir - 1);
    dir[n > 0 ? n : 0] = 0;
  }
  char *slash = strrchr(dir, '/');
  if (!slash) return "the launch script next to this program";
  *slash = 0; /* the program's directory ("" for /program) */
  snprintf(hint, sizeof hint, "%s/launch", dir);
  if (access(hint, X_OK) == 0) return hint;
  /* a pipeline stage program: DIR/stageK/program, the launcher in DIR */
  char *up = strrchr(dir, '/');
  if (up) *up = 0;
  snprintf(hint, sizeof hint, up ? "%s/launch" : "launch", dir);
  if (access(hint, X_OK) == 0) return hint;
  return "the launch script next to this program";
}

const char *galv_weights_path(const char *given, char *buf, size_t n) {
  if (given) return given;
  ssize_t k = n > 16 ? readlink("/proc/self/exe", buf, n - 16) : -1;
  if (k <= 0) galv_fatal_all("cannot locate the program's directory; pass --weights FILE");
  buf[k] = 0;
  char *s = strrchr(buf, '/');
  strcpy(s ? s + 1 : buf, "weights.bin");
  return buf;
}

int galv_mkdirs(const char *path) {
  char b[4096];
  size_t n = strlen(path);
  if (!n || n >= sizeof b) return errno = ENAMETOOLONG, -1;
  memcpy(b, path, n + 1);
  for (size_t i = 1; i <= n; i++)
    if (b[i] == '/' || !b[i]) {
      char c = b[i];
      b[i] = 0;
      struct stat st;
      if (stat(b, &st) != 0) {
        if (mkdir(b, 0777) != 0 && errno != EEXIST) return -1;
      } else if (!S_ISDIR(st.st_mode)) return errno = ENOTDIR, -1;
      b[i] = c;
    }
  return 0;
}

static const struct {
  const char *name;
  size_t size;
  int npy;
} dts[] = {
    [GALV_F32] = {"f32", 4, NPY_F32}, [GALV_F64] = {"f64", 8, NPY_F64}, [GALV_F16] = {"f16", 2, NPY_F16},
    [GALV_BF16] = {"bf16", 2, NPY_BF16_AS_U16}, [GALV_I64] = {"i64", 8, NPY_I64}, [GALV_I32] = {"i32", 4, NPY_I32},
    [GALV_I16] = {"i16", 2, NPY_I16}, [GALV_I8] = {"i8", 1, NPY_I8}, [GALV_U8] = {"ui8", 1, NPY_U8},
    [GALV_BOOL] = {"i1", 1, NPY_BOOL},
};
enum { NDT = sizeof dts / sizeof dts[0] };

size_t galv_dtype_size(int dt) { return dt > 0 && dt < NDT ? dts[dt].size : 0; }
const char *galv_dtype_name(int dt) { return dt > 0 && dt < NDT ? dts[dt].name : "?"; }

static int from_npy(npy_dtype n) {
  for (int i = 1; i < NDT; i++)
    if (dts[i].npy == (int)n) return i;
  return 0;
}

/* ---------------------------------------------------------------- TensorProto */

typedef struct {
  const uint8_t *p, *end;
} rd;

static int varint(rd *r, uint64_t *v) {
  *v = 0;
  for (int s = 0; s < 64; s += 7) {
    if (r->p >= r->end) return -1;
    uint8_t b = *r->p++;
    *v |= (uint64_t)(b & 0x7f) << s;
    if (!(b & 0x80)) return 0;
  }
  return -1;
}

/* Appends n elements of es bytes to a growing buffer. */
typedef struct {
  uint8_t *d;
  size_t n, cap;
} buf;

static int put(buf *b, const void *src, size_t len) {
  if (b->n + len > b->cap) {
    size_t c = b->cap ? b->cap * 2 : 64;
    while (c < b->n + len) c *= 2;
    uint8_t *d = realloc(b->d, c);
    if (!d) return -1;
    b->d = d, b->cap = c;
  }
  memcpy(b->d + b->n, src, len);
  b->n += len;
  return 0;
}

static int onnx_dtype(uint64_t t) {
  switch (t) {
  case 1: return GALV_F32;
  case 2: return GALV_U8;
  case 3: return GALV_I8;
  case 5: return GALV_I16;
  case 6: return GALV_I32;
  case 7: return GALV_I64;
  case 9: return GALV_BOOL;
  case 10: return GALV_F16;
  case 11: return GALV_F64;
  case 16: return GALV_BF16;
  default: return 0;
  }
}

int galv_read_pb(const void *data, size_t len, galv_tensor *t, char **name, char *err, size_t errlen) {
  rd r = {data, (const uint8_t *)data + len};
  buf raw = {0}, f32 = {0}, i32 = {0}, i64 = {0}, f64 = {0};
  uint64_t dtype = 0;
  int has_raw = 0, rc = -1;
  memset(t, 0, sizeof *t);
  *name = NULL;
#define BAD(...) do { snprintf(err, errlen, __VA_ARGS__); goto out; } while (0)
  while (r.p < r.end) {
    uint64_t key, v;
    if (varint(&r, &key)) BAD("not a TensorProto (truncated field key)");
    unsigned field = (unsigned)(key >> 3), wt = key & 7;
    if (wt == 2) { /* length-delimited */
      if (varint(&r, &v) || v > (uint64_t)(r.end - r.p)) BAD("not a TensorProto (field %u runs past the end)", field);
      rd sub = {r.p, r.p + v};
      r.p += v;
      switch (field) {
      case 1: case 5: case 7: /* packed varints */
        while (sub.p < sub.end) {
          uint64_t x;
          if (varint(&sub, &x)) BAD("not a TensorProto (bad packed field %u)", field);
          if (field == 1) {
            if (t->rank == GALV_RT_MAX_RANK) BAD("rank above %d", GALV_RT_MAX_RANK);
            t->dims[t->rank++] = (int64_t)x;
          } else if (field == 5) {
            int32_t y = (int32_t)x;
            if (put(&i32, &y, 4)) BAD("out of memory");
          } else if (put(&i64, &x, 8)) BAD("out of memory");
        }
        break;
      case 4:
        if (v % 4 || put(&f32, sub.p, v)) BAD("not a TensorProto (bad float_data)");
        break;
      case 10:
        if (v % 8 || put(&f64, sub.p, v)) BAD("not a TensorProto (bad double_data)");
        break;
      case 8:
        free(*name);
        *name = malloc(v + 1);
        if (!*name) BAD("out of memory");
        memcpy(*name, sub.p, v);
        (*name)[v] = 0;
        break;
      case 9:
        has_raw = 1;
        if (put(&raw, sub.p, v)) BAD("out of memory");
        break;
      case 13: BAD("external data is not supported");
      default: break; /* string_data, doc_string, segment ... */
      }
    } else if (wt == 0) {
      if (varint(&r, &v)) BAD("not a TensorProto (truncated varint)");
      if (field == 1) {
        if (t->rank == GALV_RT_MAX_RANK) BAD("rank above %d", GALV_RT_MAX_RANK);
        t->dims[t->rank++] = (int64_t)v;
      } else if (field == 2) dtype = v;
      else if (field == 5) { int32_t y = (int32_t)v; if (put(&i32, &y, 4)) BAD("out of memory"); }
      else if (field == 7) { if (put(&i64, &v, 8)) BAD("out of memory"); }
      else if (field == 14 && v == 1) BAD("external data is not supported");
    } else if (wt == 5) {
      if (r.end - r.p < 4) BAD("not a TensorProto (truncated fixed32)");
      if (field == 4 && put(&f32, r.p, 4)) BAD("out of memory");
      r.p += 4;
    } else if (wt == 1) {
      if (r.end - r.p < 8) BAD("not a TensorProto (truncated fixed64)");
      if (field == 10 && put(&f64, r.p, 8)) BAD("out of memory");
      r.p += 8;
    } else {
      BAD("not a TensorProto (wire type %u)", wt);
    }
  }
  t->dtype = onnx_dtype(dtype);
  if (!t->dtype) BAD("unsupported TensorProto data_type %llu", (unsigned long long)dtype);
  int64_t n = 1;
  for (int d = 0; d < t->rank; d++) {
    if (t->dims[d] < 0 || (t->dims[d] && n > INT64_MAX / 16 / t->dims[d])) BAD("bad dims");
    n *= t->dims[d];
  }
  size_t es = galv_dtype_size(t->dtype), want = (size_t)n * es;
  t->nbytes = want;
  t->data = malloc(want ? want : 1);
  if (!t->data) BAD("out of memory");
  if (has_raw) {
    if (raw.n != want) BAD("raw_data holds %zu bytes, dims and data_type need %zu", raw.n, want);
    memcpy(t->data, raw.d, want);
  } else if (t->dtype == GALV_F32) {
    if (f32.n != want) BAD("float_data holds %zu values, dims need %lld", f32.n / 4, (long long)n);
    memcpy(t->data, f32.d, want);
  } else if (t->dtype == GALV_F64) {
    if (f64.n != want) BAD("double_data holds %zu values, dims need %lld", f64.n / 8, (long long)n);
    memcpy(t->data, f64.d, want);
  } else if (t->dtype == GALV_I64) {
    if (i64.n != want) BAD("int64_data holds %zu values, dims need %lld", i64.n / 8, (long long)n);
    memcpy(t->data, i64.d, want);
  } else {
    /* int32_data carries i32, i16, i8, u8, bool, f16, bf16 (one value each) */
    if (i32.n != (size_t)n * 4) BAD("int32_data holds %zu values, dims need %lld", i32.n / 4, (long long)n);
    for (int64_t i = 0; i < n; i++) {
      int32_t v;
      memcpy(&v, i32.d + i * 4, 4);
      if (es == 4) memcpy((char *)t->data + i * 4, &v, 4);
      else if (es == 2) { uint16_t h = (uint16_t)v; memcpy((char *)t->data + i * 2, &h, 2); }
      else ((uint8_t *)t->data)[i] = t->dtype == GALV_BOOL ? v != 0 : (uint8_t)v;
    }
  }
  rc = 0;
#undef BAD
out:
  if (rc) {
    free(t->data);
    t->data = NULL;
    free(*name);
    *name = NULL;
  }
  free(raw.d), free(f32.d), free(i32.d), free(i64.d), free(f64.d);
  return rc;
}

static int read_file(const char *path, uint8_t **data, size_t *len, char *err, size_t errlen) {
  FILE *f = fopen(path, "rb");
  if (!f) {
    snprintf(err, errlen, "cannot open: %s", strerror(errno));
    return -1;
  }
  buf b = {0};
  uint8_t chunk[65536];
  size_t n;
  while ((n = fread(chunk, 1, sizeof chunk, f)) > 0)
    if (put(&b, chunk, n)) {
      fclose(f);
      free(b.d);
      snprintf(err, errlen, "out of memory");
      return -1;
    }
  int bad = ferror(f);
  fclose(f);
  if (bad) {
    free(b.d);
    snprintf(err, errlen, "read error");
    return -1;
  }
  *data = b.d, *len = b.n;
  return 0;
}

int galv_read_tensor(const char *path, galv_tensor *t, char *err, size_t errlen) {
  size_t pl = strlen(path);
  memset(t, 0, sizeof *t);
  if (pl >= 3 && strcmp(path + pl - 3, ".pb") == 0) {
    uint8_t *d = NULL;
    size_t len = 0;
    if (read_file(path, &d, &len, err, errlen)) return -1;
    char *name = NULL;
    int rc = galv_read_pb(d, len, t, &name, err, errlen);
    free(d);
    free(name);
    return rc;
  }
  npy_array a;
  if (npy_read(path, &a, err, errlen)) return -1;
  t->dtype = from_npy(a.dtype);
  t->rank = a.rank;
  memcpy(t->dims, a.dims, sizeof(int64_t) * (size_t)a.rank);
  t->nbytes = a.nbytes;
  t->data = a.data;
  return 0;
}

int galv_write_npy(const char *path, const galv_io *o, const void *data, char *err, size_t errlen) {
  npy_array a = {.dtype = (npy_dtype)dts[o->dtype].npy, .rank = o->rank, .nbytes = (size_t)o->nbytes,
                 .data = (void *)data};
  memcpy(a.dims, o->dims, sizeof(int64_t) * (size_t)o->rank);
  return npy_write(path, &a, err, errlen);
}

const char *galv_map_weights(const char *path, int64_t expect, size_t *len) {
  int fd = open(path, O_RDONLY);
  if (fd < 0) galv_fatal("%s: cannot open the weights file: %s", path, strerror(errno));
  struct stat st;
  if (fstat(fd, &st)) {
    close(fd);
    galv_fatal("%s: cannot stat the weights file: %s", path, strerror(errno));
  }
  if ((int64_t)st.st_size != expect) {
    close(fd);
    galv_fatal("%s: weights file has %lld bytes, the program expects %lld (rebuild with galvc)", path,
               (long long)st.st_size, (long long)expect);
  }
  *len = (size_t)st.st_size;
  if (!*len) {
    close(fd);
    return NULL;
  }
  void *p = mmap(NULL, *len, PROT_READ, MAP_PRIVATE, fd, 0);
  close(fd);
  if (p == MAP_FAILED) galv_fatal("%s: cannot map the weights file: %s", path, strerror(errno));
  return p;
}
