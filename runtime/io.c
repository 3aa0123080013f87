/* io.c — input, output and weights I/O of generated CPU programs: .npy (via
 * npy.c) and serialized ONNX TensorProto (.pb) inputs, .npy outputs, and the
 * read-only mapping of weights.bin. The .pb reader is a small protobuf
 * wire-format decoder for the TensorProto fields dims(1), data_type(2),
 * float_data(4), int32_data(5), int64_data(7), name(8), raw_data(9),
 * double_data(10); it links no protobuf library. Nothing here trusts a file:
 * every length is checked and a bad file is a one-line reason, never a crash. */
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <signal.h>
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
int64_t galv_rt_step, galv_rt_mb; /* galv.dropout's step and pipeline microbatch (galv_rt.h) */

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
  va_list ap;
  va_start(ap, fmt);
  if (galv_fatal_rank != 0) {
    /* rank 0 reports it once; its exit takes the job down (MPI_Abort, or the
     * launcher stopping the other ranks) within this wait. If it does not,
     * the error was this rank's alone (a file only this rank sees): report
     * it under this rank's name, and this exit takes the job down. */
    fflush(stdout);
    for (int i = 0; i < 50; i++) usleep(100000);
    vfatal(galv_progname, fmt, ap);
  }
  vfatal(galv_fatal_name ? galv_fatal_name : galv_progname, fmt, ap);
}

/* A test hook (tests/rank_failure.sh): GALV_TEST_DIE=POINT:RANK[:N] makes world
 * rank RANK kill itself with SIGKILL the N-th time (default 1) it reaches the
 * named point: all_reduce (inside an all-reduce, its part posted), send (a
 * pipeline transfer posted), checkpoint (a checkpoint save, the temporary
 * file partly written). So a test ends a rank exactly inside a collective
 * or a save, as kill -9 would, without racing it. Unset: one getenv. */
void galv_test_point(const char *point) {
  static int armed = -1, rank, left;
  static char name[64];
  if (armed < 0) {
    const char *e = getenv("GALV_TEST_DIE");
    armed = e && sscanf(e, "%63[^:]:%d:%d", name, &rank, &left) >= 2;
    if (armed && left <= 0) left = 1;
  }
  if (armed && galv_fatal_rank == rank && !strcmp(point, name) && --left == 0) {
    fflush(NULL);
    raise(SIGKILL);
  }
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
  if (!len) return 0; /* an empty field (raw_data of 0 bytes) leaves b->d NULL: no offset on it */
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
  /* the data present must match the dims before anything is allocated for
   * them: dims alone (a few bytes of input) may ask for exabytes */
  if (has_raw) {
    if (raw.n != want) BAD("raw_data holds %zu bytes, dims and data_type need %zu", raw.n, want);
  } else if (t->dtype == GALV_F32) {
    if (f32.n != want) BAD("float_data holds %zu values, dims need %lld", f32.n / 4, (long long)n);
  } else if (t->dtype == GALV_F64) {
    if (f64.n != want) BAD("double_data holds %zu values, dims need %lld", f64.n / 8, (long long)n);
  } else if (t->dtype == GALV_I64) {
    if (i64.n != want) BAD("int64_data holds %zu values, dims need %lld", i64.n / 8, (long long)n);
  } else if (i32.n != (size_t)n * 4) {
    BAD("int32_data holds %zu values, dims need %lld", i32.n / 4, (long long)n);
  }
  t->data = malloc(want ? want : 1);
  if (!t->data) BAD("out of memory");
  if (has_raw) {
    if (want) memcpy(t->data, raw.d, want); /* 0 bytes: raw.d is NULL */
  } else if (t->dtype == GALV_F32) {
    if (want) memcpy(t->data, f32.d, want); /* 0 bytes: f32.d is NULL */
  } else if (t->dtype == GALV_F64) {
    if (want) memcpy(t->data, f64.d, want); /* 0 bytes: f64.d is NULL */
  } else if (t->dtype == GALV_I64) {
    if (want) memcpy(t->data, i64.d, want); /* 0 bytes: i64.d is NULL */
  } else {
    /* int32_data carries i32, i16, i8, u8, bool, f16, bf16 (one value each) */
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
  return galv_map_weights_block(path, expect, 1, 0, len);
}

const char *galv_weights_open(const char *path, int64_t bytes, int nblocks, int index, size_t *len, int *common, char *err,
                              size_t errlen) {
  /* every rank finds a missing or mis-sized file alike (common); its own block's map and checksum are its own */
#define FAIL(all, ...) do { *common = all; snprintf(err, errlen, __VA_ARGS__); return NULL; } while (0)
  *len = 0, *common = 0;
  if (bytes < 0 || nblocks < 1 || index < 0 || index >= nblocks) FAIL(1, "%s: bad weights layout", path);
  int64_t expect = galv_weights_file_bytes(bytes, nblocks), stride = galv_weights_stride(bytes, nblocks);
  int fd = open(path, O_RDONLY | O_CLOEXEC | O_NONBLOCK);
  if (fd < 0) FAIL(1, "%s: cannot open the weights file: %s", path, strerror(errno));
  struct stat st;
  if (fstat(fd, &st)) {
    close(fd);
    FAIL(1, "%s: cannot stat the weights file: %s", path, strerror(errno));
  }
  if (!S_ISREG(st.st_mode)) {
    close(fd);
    FAIL(1, "%s: the weights file is not a regular file", path);
  }
  if ((int64_t)st.st_size != expect) {
    close(fd);
    if (nblocks > 1)
      FAIL(1, "%s: weights file has %lld bytes, the program expects %lld (%d ranks x %lld and the checksums; rebuild with galvc)",
           path, (long long)st.st_size, (long long)expect, nblocks, (long long)stride);
    FAIL(1, "%s: weights file has %lld bytes, the program expects %lld (rebuild with galvc)", path, (long long)st.st_size,
         (long long)expect);
  }
  static const char none[64];
  const char *p = none;
  if (bytes) {
    void *m = mmap(NULL, (size_t)bytes, PROT_READ, MAP_PRIVATE, fd, (off_t)(stride * index));
    if (m == MAP_FAILED) {
      close(fd);
      if (nblocks > 1) FAIL(0, "%s: cannot map rank %d's block of the weights file: %s", path, index, strerror(errno));
      FAIL(0, "%s: cannot map the weights file: %s", path, strerror(errno));
    }
    p = m;
  }
  char why[256];
  int bad = galv_weights_verify(fd, p, bytes, nblocks, index, why, sizeof why);
  close(fd);
  if (bad) {
    if (bytes) munmap((void *)p, (size_t)bytes);
    FAIL(0, "%s: %s", path, why);
  }
  *len = (size_t)bytes;
  return p;
#undef FAIL
}

const char *galv_map_weights_block(const char *path, int64_t bytes, int nblocks, int index, size_t *len) {
  char err[4400];
  int common;
  const char *p = galv_weights_open(path, bytes, nblocks, index, len, &common, err, sizeof err);
  if (p) return p;
  if (common && nblocks > 1) galv_fatal_all("%s", err);
  galv_fatal("%s", err);
}

/* ---------------------------------------------------------------- checkpoints
 *
 * One format for every program kind (single device, N ranks, pipeline
 * stages), holding global tensors by name, so a checkpoint loads into any
 * plan of the same model (docs/cpu-target.md, "Checkpoints"). Little-endian:
 *
 *   "GALVCKPT", u32 version (2), u32 0, i64 steps done
 *   per tensor: u32 name length (< 1024), name, u32 dtype, u32 rank,
 *               i64 dims[rank], i64 bytes (= product of dims x dtype size), bytes
 *   end:        u32 0xffffffff, u32 tensor count, u32 CRC-32 of every byte before it
 *
 * Written to PATH.tmp, flushed to disk (fsync), then renamed over PATH (and
 * the directory synced): a reader sees the old file or the new one, never a
 * part. Pipeline stages append in turn (galv_ckpt_resume / suspend pass the
 * running CRC and count along). The reader checks every field's range, the
 * sizes against the file's, and the CRC before any tensor is used. */
static const char ckpt_magic[8] = {'G', 'A', 'L', 'V', 'C', 'K', 'P', 'T'};
enum { CKPT_VERSION2 = 2, CKPT_NAME_MAX = 1024 };
#define CKPT_END 0xffffffffu

static int ck_write(galv_ckpt_writer *w, const void *p, size_t n) {
  if (n && fwrite(p, 1, n, w->f) != n) {
    snprintf(w->err, sizeof w->err, "%s: write failed: %s", w->tmp, strerror(errno));
    return -1;
  }
  w->crc = galv_crc32(w->crc, p, n);
  return 0;
}

int galv_ckpt_begin(galv_ckpt_writer *w, const char *path, int64_t steps) {
  memset(w, 0, sizeof *w);
  snprintf(w->path, sizeof w->path, "%s", path);
  snprintf(w->tmp, sizeof w->tmp, "%s.tmp", path);
  w->f = fopen(w->tmp, "wb");
  if (!w->f) return snprintf(w->err, sizeof w->err, "%s: cannot write the checkpoint: %s", w->tmp, strerror(errno)), -1;
  uint32_t u[2] = {CKPT_VERSION2, 0};
  return ck_write(w, ckpt_magic, 8) || ck_write(w, u, 8) || ck_write(w, &steps, 8) ? -1 : 0;
}

int galv_ckpt_resume(galv_ckpt_writer *w, const char *path, uint32_t crc, uint32_t count) {
  memset(w, 0, sizeof *w);
  snprintf(w->path, sizeof w->path, "%s", path);
  snprintf(w->tmp, sizeof w->tmp, "%s.tmp", path);
  w->f = fopen(w->tmp, "ab");
  if (!w->f) return snprintf(w->err, sizeof w->err, "%s: cannot append to the checkpoint: %s", w->tmp, strerror(errno)), -1;
  w->crc = crc, w->count = count;
  return 0;
}

int galv_ckpt_put(galv_ckpt_writer *w, const char *name, int dtype, int rank, const int64_t *dims, int64_t nbytes,
                  const void *data) {
  uint32_t h[3] = {(uint32_t)strlen(name), (uint32_t)dtype, (uint32_t)rank};
  if (h[0] >= CKPT_NAME_MAX) return snprintf(w->err, sizeof w->err, "%s: tensor name too long", name), -1;
  w->count++;
  return ck_write(w, &h[0], 4) || ck_write(w, name, h[0]) || ck_write(w, &h[1], 8) || ck_write(w, dims, 8 * (size_t)rank) ||
                 ck_write(w, &nbytes, 8) || ck_write(w, data, (size_t)nbytes)
             ? -1
             : 0;
}

static int ck_close(galv_ckpt_writer *w) {
  int bad = fflush(w->f) != 0 || fsync(fileno(w->f)) != 0;
  bad |= fclose(w->f) != 0;
  w->f = NULL;
  if (bad) return snprintf(w->err, sizeof w->err, "%s: write failed: %s", w->tmp, strerror(errno)), -1;
  return 0;
}

int galv_ckpt_suspend(galv_ckpt_writer *w, uint32_t *crc, uint32_t *count) {
  *crc = w->crc, *count = w->count;
  return ck_close(w);
}

int galv_ckpt_end(galv_ckpt_writer *w) {
  uint32_t e[3] = {CKPT_END, w->count, w->crc};
  if (fwrite(e, 1, sizeof e, w->f) != sizeof e)
    return snprintf(w->err, sizeof w->err, "%s: write failed: %s", w->tmp, strerror(errno)), -1;
  if (ck_close(w)) return -1;
  if (rename(w->tmp, w->path))
    return snprintf(w->err, sizeof w->err, "%s: cannot rename to %s: %s", w->tmp, w->path, strerror(errno)), -1;
  char dir[PATH_MAX];
  snprintf(dir, sizeof dir, "%s", w->path);
  char *sl = strrchr(dir, '/');
  if (sl) *(sl == dir ? sl + 1 : sl) = 0;
  else snprintf(dir, sizeof dir, ".");
  int fd = open(dir, O_RDONLY | O_DIRECTORY);
  if (fd >= 0) fsync(fd), close(fd); /* the rename itself on disk */
  return 0;
}

void galv_ckpt_abandon(galv_ckpt_writer *w) {
  if (w->f) fclose(w->f), w->f = NULL;
  unlink(w->tmp);
}

static int ck_read(galv_ckpt *c, void *p, size_t n, uint32_t *crc) {
  if (n && fread(p, 1, n, c->f) != n)
    return snprintf(c->err, sizeof c->err, "%s: truncated checkpoint", c->path), -1;
  if (crc) *crc = galv_crc32(*crc, p, n);
  return 0;
}

static int ck_open_fail(galv_ckpt *c) {
  fclose(c->f);
  c->f = NULL;
  return -1;
}

int galv_ckpt_open(galv_ckpt *c, const char *path) {
  memset(c, 0, sizeof *c);
  snprintf(c->path, sizeof c->path, "%s", path);
  struct stat st;
  if (stat(path, &st)) return snprintf(c->err, sizeof c->err, "%s: cannot open the checkpoint: %s", path, strerror(errno)), -1;
  if (!S_ISREG(st.st_mode)) return snprintf(c->err, sizeof c->err, "%s: not a regular file", path), -1;
  c->f = fopen(path, "rb");
  if (!c->f) return snprintf(c->err, sizeof c->err, "%s: cannot open the checkpoint: %s", path, strerror(errno)), -1;
  const int64_t size = (int64_t)st.st_size;
  char mg[8];
  uint32_t u[2], crc = 0;
  /* every failure from here closes the file (it is no leak LSan sees: glibc lists open FILEs) */
  if (size < 24 || ck_read(c, mg, 8, &crc) || memcmp(mg, ckpt_magic, 8))
    return snprintf(c->err, sizeof c->err, "%s: not a galvc checkpoint (bad magic)", path), ck_open_fail(c);
  if (ck_read(c, u, 8, &crc) || ck_read(c, &c->steps, 8, &crc)) return ck_open_fail(c);
  if (u[0] != CKPT_VERSION2)
    return snprintf(c->err, sizeof c->err, "%s: checkpoint version %u, this program reads version %d", path, u[0], CKPT_VERSION2),
           ck_open_fail(c);
  if (c->steps < 0 || c->steps > ((int64_t)1 << 50))
    return snprintf(c->err, sizeof c->err, "%s: bad checkpoint header (step count %lld)", path, (long long)c->steps),
           ck_open_fail(c);
  int cap = 0;
  char *chunk = malloc(1 << 16);
  if (!chunk) return snprintf(c->err, sizeof c->err, "%s: out of memory", path), ck_open_fail(c);
  int rc = -1;
  for (;;) {
    uint32_t nl;
    if (ck_read(c, &nl, 4, NULL)) break;
    if (nl == CKPT_END) {
      uint32_t e[2];
      if (ck_read(c, e, 8, NULL)) break;
      if (e[0] != (uint32_t)c->n)
        snprintf(c->err, sizeof c->err, "%s: bad checkpoint (its end says %u tensors, it holds %d)", path, e[0], c->n);
      else if (e[1] != crc)
        snprintf(c->err, sizeof c->err, "%s: checkpoint checksum mismatch (CRC-32 %08x, computed %08x): the file is damaged",
                 path, e[1], crc);
      else if (fgetc(c->f) != EOF) snprintf(c->err, sizeof c->err, "%s: bad checkpoint (trailing bytes)", path);
      else rc = 0;
      break;
    }
    crc = galv_crc32(crc, &nl, 4);
    if (nl == 0 || nl >= CKPT_NAME_MAX) {
      snprintf(c->err, sizeof c->err, "%s: bad checkpoint (tensor name of %u bytes)", path, nl);
      break;
    }
    if (c->n == cap) {
      cap = cap ? 2 * cap : 64;
      galv_ckpt_entry *ne = realloc(c->e, sizeof *ne * (size_t)cap);
      if (!ne) {
        snprintf(c->err, sizeof c->err, "%s: out of memory", path);
        break;
      }
      c->e = ne;
    }
    galv_ckpt_entry *e = &c->e[c->n];
    memset(e, 0, sizeof *e);
    uint32_t h[2];
    if (ck_read(c, e->name, nl, &crc) || ck_read(c, h, 8, &crc)) break;
    e->name[nl] = 0;
    if (strlen(e->name) != nl) {
      snprintf(c->err, sizeof c->err, "%s: bad checkpoint (a tensor name holds a NUL byte)", path);
      break;
    }
    if (h[0] < 1 || h[0] > GALV_BOOL || h[1] > GALV_RT_MAX_RANK) {
      snprintf(c->err, sizeof c->err, "%s: bad checkpoint (tensor '%s': dtype %u, rank %u)", path, e->name, h[0], h[1]);
      break;
    }
    e->dtype = (int)h[0], e->rank = (int)h[1];
    if (ck_read(c, e->dims, 8 * (size_t)e->rank, &crc) || ck_read(c, &e->nbytes, 8, &crc)) break;
    int64_t want = (int64_t)galv_dtype_size(e->dtype);
    int ok = 1;
    for (int d = 0; d < e->rank && ok; d++)
      ok = e->dims[d] >= 0 && (e->dims[d] == 0 || want <= INT64_MAX / e->dims[d]), want *= ok ? e->dims[d] : 1;
    e->off = (int64_t)ftello(c->f);
    if (!ok || want != e->nbytes) {
      snprintf(c->err, sizeof c->err, "%s: bad checkpoint (tensor '%s': %lld bytes, its shape needs %lld)", path, e->name,
               (long long)e->nbytes, (long long)want);
      break;
    }
    if (e->nbytes > size - e->off) {
      snprintf(c->err, sizeof c->err, "%s: truncated checkpoint (tensor '%s' ends past the end of the file)", path, e->name);
      break;
    }
    for (int64_t left = e->nbytes; left > 0;) { /* the CRC covers the data too */
      size_t k = left > (1 << 16) ? (1 << 16) : (size_t)left;
      if (ck_read(c, chunk, k, &crc)) goto out;
      left -= (int64_t)k;
    }
    c->n++;
  }
out:
  free(chunk);
  if (rc) {
    fclose(c->f), free(c->e);
    c->f = NULL, c->e = NULL, c->n = 0;
  }
  return rc;
}

galv_ckpt_entry *galv_ckpt_find(galv_ckpt *c, const char *name) {
  for (int i = 0; i < c->n; i++)
    if (!strcmp(c->e[i].name, name)) return &c->e[i];
  return NULL;
}

int galv_ckpt_read(galv_ckpt *c, galv_ckpt_entry *e, void *dst) {
  e->used = 1;
  if (fseeko(c->f, (off_t)e->off, SEEK_SET) || (e->nbytes && fread(dst, 1, (size_t)e->nbytes, c->f) != (size_t)e->nbytes))
    return snprintf(c->err, sizeof c->err, "%s: cannot read tensor '%s'", c->path, e->name), -1;
  return 0;
}

void galv_ckpt_close(galv_ckpt *c) {
  if (c->f) fclose(c->f);
  free(c->e);
  memset(c, 0, sizeof *c);
}

/* ---------------------------------------------------------------- 16-bit storage buffers */

/* The conversion scratch of a 16-bit storage program (galv_rt.h) and its
 * weights converted as the CUDA runtime uploads them: here, not in
 * kernels.c, because runtime/train.c reports them and the CUDA builds link
 * train.c without the CPU kernels. */
static char *cvt_buf;
static int64_t cvt_bytes;

char *galv_cvt_scratch(int64_t bytes) {
  if (bytes > cvt_bytes) {
    /* noted by the allocation tracker (its own kind): the CPU kernels compute in fp32, so this holds fp32 copies
     * of their 16-bit operands (a device's 16-bit kernels read them directly); --report-cost prices it for
     * --target cpu (codegen/cpu/emit.c gv_cpu_convert_scratch) */
    galv_mem_free(cvt_buf);
    cvt_buf = galv_mem_alloc(bytes, GALV_MEM_CONVERT);
    cvt_bytes = bytes;
  }
  return cvt_buf;
}

int64_t galv_cvt_scratch_bytes(void) { return cvt_bytes; }

/* The weights of a 16-bit inference program: a copy of the mapped block
 * with each f32 tensor (tab: offset, elements) converted to dt in the first
 * half of its slot, as the CUDA runtime uploads them. One copy, kept until
 * the weights pointer changes. */
static int64_t narrow_w_bytes;
int64_t galv_narrow_weights_bytes(void) { return narrow_w_bytes; }

const char *galv_narrow_weights(const char *w, int64_t bytes, const int64_t *tab, int n, int dt) {
  static const char *src;
  static char *copy;
  if (src == w && copy) return copy;
  narrow_w_bytes = bytes;
  galv_mem_free(copy);
  copy = galv_mem_alloc(bytes + 64, GALV_MEM_WEIGHTS);
  memcpy(copy, w, (size_t)bytes);
  for (int i = 0; i < n; i++) {
    const float *f = (const float *)(w + tab[2 * i]);
    uint16_t *d = (uint16_t *)(copy + tab[2 * i]);
    for (int64_t k = 0; k < tab[2 * i + 1]; k++) d[k] = dt == GALV_BF16 ? galv_f32_to_bf16(f[k]) : galv_f32_to_f16(f[k]);
  }
  src = w;
  return copy;
}

/* ---------------------------------------------------------------- the allocation tracker */

/* Every buffer of device-resident data is noted here with its bytes and kind
 * (galv_rt.h) and forgotten when released: an open-addressing table keyed by
 * the pointer. live[] is what is held now per kind; at each new peak of the
 * total the per-kind bytes are kept, so that the exit line says what the peak
 * was made of. The arena is noted but not counted in live: its bytes count as
 * the high-water mark the program measured (galv_mem_arena_high). */
static const char *const mem_kind_names[GALV_MEM_NKINDS] = {
    "arena", "weights", "state", "entry copies", "gradient sums", "optimizer state", "saved activations",
    "communication buffers", "buffers", "collective scratch", "16-bit conversion scratch"};
typedef struct {
  const void *p;
  int64_t bytes;
  int kind;
} mem_slot;
static mem_slot *mem_tab;
static size_t mem_cap, mem_used; /* mem_used: slots holding a pointer or a tombstone (p == &mem_tab) */
static int64_t mem_live[GALV_MEM_NKINDS], mem_at_peak[GALV_MEM_NKINDS], mem_total, mem_peak, mem_arena_alloc, mem_arena_hw;
static int64_t mem_win; /* the live bytes' peak since galv_mem_window */

static size_t mem_hash(const void *p, size_t cap) {
  uint64_t x = (uint64_t)(uintptr_t)p;
  x ^= x >> 33, x *= 0xff51afd7ed558ccdULL, x ^= x >> 33;
  return (size_t)x & (cap - 1);
}
static void mem_grow(void) {
  size_t ncap = mem_cap ? 2 * mem_cap : 256;
  mem_slot *n = calloc(ncap, sizeof *n), *old = mem_tab;
  if (!n) galv_fatal("out of memory");
  size_t ocap = mem_cap;
  mem_tab = n, mem_cap = ncap, mem_used = 0;
  for (size_t i = 0; i < ocap; i++)
    if (old[i].p && old[i].p != (const void *)&mem_tab) {
      size_t h = mem_hash(old[i].p, ncap);
      while (n[h].p) h = (h + 1) & (ncap - 1);
      n[h] = old[i], mem_used++;
    }
  free(old);
}

void galv_mem_note(const void *p, int64_t bytes, int kind) {
  if (!p) return;
  if (kind < 0 || kind >= GALV_MEM_NKINDS) kind = GALV_MEM_BUFFERS;
  if (2 * (mem_used + 1) > mem_cap) mem_grow();
  size_t h = mem_hash(p, mem_cap);
  while (mem_tab[h].p && mem_tab[h].p != (const void *)&mem_tab) {
    if (mem_tab[h].p == p) galv_fatal("memory tracker: a buffer noted twice");
    h = (h + 1) & (mem_cap - 1);
  }
  if (!mem_tab[h].p) mem_used++;
  mem_tab[h] = (mem_slot){p, bytes, kind};
  if (kind == GALV_MEM_ARENA) {
    mem_arena_alloc += bytes;
    return;
  }
  mem_live[kind] += bytes, mem_total += bytes;
  if (mem_total > mem_peak) mem_peak = mem_total, memcpy(mem_at_peak, mem_live, sizeof mem_live);
  if (mem_total > mem_win) mem_win = mem_total;
}

void galv_mem_forget(const void *p) {
  if (!p || !mem_cap) return;
  size_t h = mem_hash(p, mem_cap);
  for (; mem_tab[h].p; h = (h + 1) & (mem_cap - 1))
    if (mem_tab[h].p == p) {
      if (mem_tab[h].kind == GALV_MEM_ARENA) mem_arena_alloc -= mem_tab[h].bytes;
      else mem_live[mem_tab[h].kind] -= mem_tab[h].bytes, mem_total -= mem_tab[h].bytes;
      mem_tab[h].p = (const void *)&mem_tab; /* a tombstone: the probe chains through it */
      return;
    }
}

void *galv_mem_alloc(int64_t bytes, int kind) {
  size_t n = (size_t)(bytes > 0 ? (bytes + 63) / 64 * 64 : 64);
  void *p = aligned_alloc(64, n);
  if (!p) galv_fatal("out of memory (%lld bytes of %s)", (long long)bytes, mem_kind_names[kind]);
  galv_mem_note(p, bytes, kind);
  return p;
}

void galv_mem_free(void *p) {
  galv_mem_forget(p);
  free(p);
}

void galv_mem_arena_high(int64_t high) {
  if (high > mem_arena_hw) mem_arena_hw = high;
}

int64_t galv_mem_high_water(void) { return mem_peak + mem_arena_hw; }

int64_t galv_mem_live(void) { return mem_total; }
int64_t galv_mem_kind_live(int kind) { return kind >= 0 && kind < GALV_MEM_NKINDS && kind != GALV_MEM_ARENA ? mem_live[kind] : 0; }

int64_t galv_mem_window(void) {
  int64_t w = mem_win;
  mem_win = mem_total;
  return w;
}

void galv_mem_report(const char *who) {
  char line[1536];
  int k = snprintf(line, sizeof line, "%s: %s%smemory tracker: peak %lld bytes (live buffers' peak %lld + arena written "
                   "%lld of %lld; at the peak:", galv_progname, who ? who : "", who ? ": " : "", (long long)galv_mem_high_water(),
                   (long long)mem_peak, (long long)mem_arena_hw, (long long)mem_arena_alloc);
  int any = 0;
  for (int i = 1; i < GALV_MEM_NKINDS && k > 0 && k < (int)sizeof line; i++)
    if (mem_at_peak[i]) k += snprintf(line + k, sizeof line - (size_t)k, "%s %s %lld", any++ ? "," : "", mem_kind_names[i],
                                      (long long)mem_at_peak[i]);
  printf("%s%s)\n", line, any ? "" : " nothing");
}
