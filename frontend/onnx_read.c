/* onnx_read.c — tensor data of the ONNX frontend: dtypes, initializer types,
 * raw / typed field decoding and external data.
 *
 * raw_data is little-endian on every host (ONNX spec); constants are decoded
 * element by element from bytes so nothing here assumes the host byte order.
 * External data files are memory-mapped once each and registered with the
 * module (unmapped by gv_module_free); weights point into the mapping, so a
 * model with gigabytes of external weights costs no resident memory at
 * import. External paths are untrusted: absolute paths, '..' components and
 * symbolic links are rejected, and the resolved path must stay inside the
 * model's folder. */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include "onnx_internal.h"

gv_dtype gv_onnx_dtype(int32_t t) {
  switch (t) {
  case ONNX__TENSOR_PROTO__DATA_TYPE__FLOAT: return GV_DT_F32;
  case ONNX__TENSOR_PROTO__DATA_TYPE__FLOAT16: return GV_DT_F16;
  case ONNX__TENSOR_PROTO__DATA_TYPE__BFLOAT16: return GV_DT_BF16;
  case ONNX__TENSOR_PROTO__DATA_TYPE__DOUBLE: return GV_DT_F64;
  case ONNX__TENSOR_PROTO__DATA_TYPE__INT64: return GV_DT_I64;
  case ONNX__TENSOR_PROTO__DATA_TYPE__INT32: return GV_DT_I32;
  case ONNX__TENSOR_PROTO__DATA_TYPE__INT16: return GV_DT_I16;
  case ONNX__TENSOR_PROTO__DATA_TYPE__INT8: return GV_DT_I8;
  case ONNX__TENSOR_PROTO__DATA_TYPE__UINT8: return GV_DT_U8;
  case ONNX__TENSOR_PROTO__DATA_TYPE__BOOL: return GV_DT_BOOL;
  default: return GV_DT_UNKNOWN;
  }
}

const char *gv_onnx_dtype_name(int32_t t) {
  static const char *const names[] = {
      "UNDEFINED", "FLOAT",  "UINT8",     "INT8",       "UINT16",       "INT16",      "INT32",
      "INT64",     "STRING", "BOOL",      "FLOAT16",    "DOUBLE",       "UINT32",     "UINT64",
      "COMPLEX64", "COMPLEX128", "BFLOAT16", "FLOAT8E4M3FN", "FLOAT8E4M3FNUZ", "FLOAT8E5M2",
      "FLOAT8E5M2FNUZ", "UINT4", "INT4", "FLOAT4E2M1", "FLOAT8E8M0", "UINT2", "INT2"};
  if (t >= 0 && (size_t)t < sizeof names / sizeof names[0]) return names[t];
  return "unknown";
}

int gv_onnx_tensor_type(gv_ictx *c, const Onnx__TensorProto *t, const char *what, gv_type *out) {
  gv_dtype dt = gv_onnx_dtype(t->data_type);
  if (dt == GV_DT_UNKNOWN)
    return gv_error(c->m, "%s: unsupported data type %s (%d)", what, gv_onnx_dtype_name(t->data_type),
                    (int)t->data_type);
  if (t->n_dims > GV_MAX_RANK)
    return gv_error(c->m, "%s: rank %zu exceeds the maximum %d", what, t->n_dims, GV_MAX_RANK);
  for (size_t i = 0; i < t->n_dims; i++)
    if (t->dims[i] < 0)
      return gv_error(c->m, "%s: negative dimension %lld at index %zu", what, (long long)t->dims[i], i);
  *out = gv_type_make(dt, (int)t->n_dims, t->dims);
  int64_t n = gv_type_numel(out);
  if (n == -2 || (n > 0 && (uint64_t)n > (uint64_t)INT64_MAX / gv_dtype_size(dt)))
    return gv_error(c->m, "%s: element count overflows int64", what);
  return 0;
}

/* ---------------------------------------------------------------- external data */

static int parse_u64(const char *s, uint64_t *out) {
  if (!s || !*s) return -1;
  uint64_t v = 0;
  for (; *s; s++) {
    if (*s < '0' || *s > '9') return -1;
    if (v > (UINT64_MAX - 9) / 10) return -1;
    v = v * 10 + (uint64_t)(*s - '0');
  }
  *out = v;
  return 0;
}

void gv_onnx_xfiles_free(gv_ictx *c) {
  for (gv_xfile *f = c->xfiles, *n; f; f = n) {
    n = f->next;
    free(f->real);
    free(f);
  }
  c->xfiles = NULL;
}

/* Finds the external bytes of t: checks the path rules and sizes; with map
 * set, also the file (a regular file inside the model folder, long enough)
 * and maps it (once per file); without (--no-weights), the file system is
 * not touched. need: numel * element size. */
static int external_bytes(gv_ictx *c, const Onnx__TensorProto *t, const char *what, uint64_t need, bool map,
                          const unsigned char **out) {
  const char *loc = NULL, *soff = NULL, *slen = NULL;
  *out = NULL;
  for (size_t i = 0; i < t->n_external_data; i++) {
    const Onnx__StringStringEntryProto *e = t->external_data[i];
    if (!e || !e->key) continue;
    if (strcmp(e->key, "location") == 0) loc = e->value;
    else if (strcmp(e->key, "offset") == 0) soff = e->value;
    else if (strcmp(e->key, "length") == 0) slen = e->value;
  }
  if (!loc || !*loc) return gv_error(c->m, "%s: external data without a location", what);
  const char *eloc = gv_esc(c, loc);
  if (!c->dir) return gv_error(c->m, "%s: external data '%s' needs a model file on disk", what, eloc);
  if (loc[0] == '/' || loc[0] == '\\')
    return gv_error(c->m, "%s: external data path '%s' is absolute (must be relative to the model folder)", what,
                    eloc);
  /* any '..' component could leave the folder: reject before touching the file system */
  for (const char *p = loc; *p;) {
    const char *q = p;
    while (*q && *q != '/' && *q != '\\') q++;
    if (q - p == 2 && p[0] == '.' && p[1] == '.')
      return gv_error(c->m, "%s: external data path '%s' contains '..'", what, eloc);
    p = *q ? q + 1 : q;
  }
  uint64_t off = 0, len = need;
  if (soff && parse_u64(soff, &off)) return gv_error(c->m, "%s: external data offset '%s' is not a number", what, gv_esc(c, soff));
  if (slen && parse_u64(slen, &len)) return gv_error(c->m, "%s: external data length '%s' is not a number", what, gv_esc(c, slen));
  if (len != need)
    return gv_error(c->m, "%s: external data length %llu does not match the tensor (%llu bytes)", what,
                    (unsigned long long)len, (unsigned long long)need);
  /* shapes only (--no-weights): the reference is checked, the file is never opened, so a model can be
   * planned without its weights */
  if (!map) return 0;

  size_t dl = strlen(c->dir), ll = strlen(loc);
  char *full = gv_alloc(c->tmp, dl + ll + 2);
  memcpy(full, c->dir, dl);
  full[dl] = '/';
  memcpy(full + dl + 1, loc, ll + 1);
  struct stat st;
  if (lstat(full, &st) != 0)
    return gv_error(c->m, "%s: external data file '%s' cannot be read: %s", what, eloc, strerror(errno));
  if (S_ISLNK(st.st_mode))
    return gv_error(c->m, "%s: external data file '%s' is a symbolic link (not allowed)", what, eloc);
  if (!S_ISREG(st.st_mode)) return gv_error(c->m, "%s: external data file '%s' is not a regular file", what, eloc);
  char *rdir = realpath(c->dir, NULL);
  char *rfile = realpath(full, NULL);
  int bad = !rdir || !rfile;
  if (!bad) {
    size_t n = strlen(rdir);
    /* rdir "/" is a prefix of everything; otherwise rfile must be rdir + '/' + ... */
    bad = !(strncmp(rfile, rdir, n) == 0 && (rfile[n] == '/' || (n == 1 && rdir[0] == '/')));
  }
  free(rdir);
  if (bad) {
    free(rfile);
    return gv_error(c->m, "%s: external data file '%s' resolves outside the model folder", what, eloc);
  }
  gv_xfile *xf = c->xfiles;
  while (xf && strcmp(xf->real, rfile) != 0) xf = xf->next;
  if (xf) {
    free(rfile);
  } else {
    xf = calloc(1, sizeof *xf);
    if (!xf) {
      free(rfile);
      return gv_error(c->m, "%s: out of memory", what);
    }
    xf->real = rfile;
    xf->size = (size_t)st.st_size;
    xf->next = c->xfiles;
    c->xfiles = xf;
  }
  if (off > xf->size || need > xf->size - off)
    return gv_error(c->m,
                    "%s: external data file '%s' is too short (offset %llu + length %llu > file size %llu)", what,
                    eloc, (unsigned long long)off, (unsigned long long)need, (unsigned long long)xf->size);
  if (!map || need == 0) return 0;
  if (!xf->addr) {
    /* O_NOFOLLOW: the final component was checked not to be a link; keep it so */
    int fd = open(xf->real, O_RDONLY | O_NOFOLLOW | O_CLOEXEC);
    if (fd < 0) return gv_error(c->m, "%s: external data file '%s' cannot be opened: %s", what, eloc, strerror(errno));
    struct stat fs;
    if (fstat(fd, &fs) != 0 || !S_ISREG(fs.st_mode) || (size_t)fs.st_size != xf->size) {
      close(fd);
      return gv_error(c->m, "%s: external data file '%s' changed while reading", what, eloc);
    }
    void *p = mmap(NULL, xf->size, PROT_READ, MAP_PRIVATE, fd, 0);
    close(fd);
    if (p == MAP_FAILED)
      return gv_error(c->m, "%s: external data file '%s' cannot be mapped: %s", what, eloc, strerror(errno));
    gv_module_add_mapping(c->m, p, xf->size);
    xf->addr = p;
  }
  *out = xf->addr + off;
  return 0;
}

/* ---------------------------------------------------------------- decoding */

static bool is_external(const Onnx__TensorProto *t) {
  return t->has_data_location && t->data_location == ONNX__TENSOR_PROTO__DATA_LOCATION__EXTERNAL;
}

/* Number of values in the typed field that ONNX uses for the dtype. */
static size_t typed_count(const Onnx__TensorProto *t, gv_dtype dt) {
  switch (dt) {
  case GV_DT_F32: return t->n_float_data;
  case GV_DT_F64: return t->n_double_data;
  case GV_DT_I64: return t->n_int64_data;
  default: return t->n_int32_data; /* int32/16/8, uint8, bool, f16/bf16 bits */
  }
}

/* Little-endian element i of size sz from bytes, as an integer bit pattern. */
static uint64_t le_bits(const unsigned char *p, size_t sz) {
  uint64_t v = 0;
  for (size_t k = 0; k < sz; k++) v |= (uint64_t)p[k] << (8 * k);
  return v;
}

/* Stores a bit pattern of the dtype's width into element i (host order,
 * which is how the IR's tensor accessors read it). */
static void put_bits(gv_tensor *t, int64_t i, uint64_t bits) {
  switch (gv_dtype_size(t->type.dtype)) {
  case 1: ((uint8_t *)t->data)[i] = (uint8_t)bits; break;
  case 2: ((uint16_t *)t->data)[i] = (uint16_t)bits; break;
  case 4: ((uint32_t *)t->data)[i] = (uint32_t)bits; break;
  default: ((uint64_t *)t->data)[i] = bits; break;
  }
}

/* Where the bytes of t live: raw_data, external data, or the typed field
 * (bytes NULL, *typed true). Checks that the size matches. */
static int locate(gv_ictx *c, const Onnx__TensorProto *t, const char *what, const gv_type *ty, bool map,
                  const unsigned char **bytes, bool *typed) {
  int64_t n = gv_type_numel(ty);
  uint64_t need = (uint64_t)n * gv_dtype_size(ty->dtype);
  *bytes = NULL;
  *typed = false;
  if (is_external(t)) return external_bytes(c, t, what, need, map, bytes);
  if (t->has_raw_data) {
    if (t->raw_data.len != need)
      return gv_error(c->m, "%s: raw_data has %zu bytes, expected %llu for %lld elements", what, t->raw_data.len,
                      (unsigned long long)need, (long long)n);
    *bytes = t->raw_data.data;
    return 0;
  }
  size_t cnt = typed_count(t, ty->dtype);
  if ((uint64_t)cnt != (uint64_t)n)
    return gv_error(c->m, "%s: has %zu values, expected %lld", what, cnt, (long long)n);
  *typed = true;
  return 0;
}

gv_tensor *gv_onnx_tensor(gv_ictx *c, const Onnx__TensorProto *t, const char *what) {
  gv_type ty;
  if (gv_onnx_tensor_type(c, t, what, &ty)) return NULL;
  const unsigned char *bytes;
  bool typed;
  if (locate(c, t, what, &ty, true, &bytes, &typed)) return NULL;
  gv_tensor *r = gv_tensor_new(c->m->arena, ty); /* size checked against the data above */
  int64_t n = gv_type_numel(&ty);
  size_t sz = gv_dtype_size(ty.dtype);
  if (!typed) {
    for (int64_t i = 0; i < n; i++) {
      uint64_t b = le_bits(bytes + (size_t)i * sz, sz);
      put_bits(r, i, ty.dtype == GV_DT_BOOL ? b != 0 : b);
    }
    return r;
  }
  for (int64_t i = 0; i < n; i++) {
    switch (ty.dtype) {
    case GV_DT_F32: ((float *)r->data)[i] = t->float_data[i]; break;
    case GV_DT_F64: ((double *)r->data)[i] = t->double_data[i]; break;
    case GV_DT_I64: ((int64_t *)r->data)[i] = t->int64_data[i]; break;
    case GV_DT_F16:
    case GV_DT_BF16: ((uint16_t *)r->data)[i] = (uint16_t)(t->int32_data[i] & 0xffff); break;
    default: gv_tensor_set_i(r, i, t->int32_data[i]); break;
    }
  }
  return r;
}

/* Writes v's low sz bytes little-endian. */
static void put_le(unsigned char *p, uint64_t v, size_t sz) {
  for (size_t k = 0; k < sz; k++) p[k] = (unsigned char)(v >> (8 * k));
}

int gv_onnx_param_data(gv_ictx *c, const Onnx__TensorProto *t, const gv_type *ty, const void **data) {
  const char *what = gv_esc(c, t->name ? t->name : "");
  char buf[64 + 4096];
  snprintf(buf, sizeof buf, "initializer '%.4000s'", what);
  *data = NULL;
  const unsigned char *bytes;
  bool typed;
  bool load = c->opt->load_weights;
  if (locate(c, t, buf, ty, load, &bytes, &typed)) return -1;
  if (!load) return 0;
  int64_t n = gv_type_numel(ty);
  size_t sz = gv_dtype_size(ty->dtype), total = (size_t)n * sz;
  if (is_external(t)) {
    *data = bytes; /* in the file mapping: no copy, no resident memory until used */
    return 0;
  }
  unsigned char *dst = gv_alloc(c->m->arena, total ? total : 1);
  if (!typed) {
    if (total) memcpy(dst, bytes, total); /* raw_data is little-endian, like param storage (none: an empty tensor) */
  } else {
    for (int64_t i = 0; i < n; i++) {
      uint64_t b;
      switch (ty->dtype) {
      case GV_DT_F32: {
        uint32_t u;
        memcpy(&u, &t->float_data[i], 4);
        b = u;
        break;
      }
      case GV_DT_F64: memcpy(&b, &t->double_data[i], 8); break;
      default: b = (uint32_t)t->int32_data[i]; break; /* f16 / bf16 bits */
      }
      put_le(dst + (size_t)i * sz, b, sz);
    }
  }
  *data = dst;
  return 0;
}

/* ---------------------------------------------------------------- TensorProto files */

gv_tensor *gv_read_tensor_pb(gv_module *m, const char *path) {
  FILE *f = fopen(path, "rb");
  if (!f) {
    gv_error(m, "tensor file '%s': cannot open: %s", path, strerror(errno));
    return NULL;
  }
  size_t cap = 1 << 16, len = 0;
  unsigned char *buf = malloc(cap);
  while (buf) {
    if (len == cap) {
      unsigned char *nb = cap > (SIZE_MAX >> 1) ? NULL : realloc(buf, cap * 2);
      if (!nb) {
        free(buf);
        buf = NULL;
        break;
      }
      buf = nb;
      cap *= 2;
    }
    size_t k = fread(buf + len, 1, cap - len, f);
    len += k;
    if (k == 0) break;
  }
  int rerr = ferror(f);
  fclose(f);
  if (!buf || rerr) {
    free(buf);
    gv_error(m, "tensor file '%s': %s", path, buf ? "read error" : "out of memory");
    return NULL;
  }
  Onnx__TensorProto *tp = onnx__tensor_proto__unpack(NULL, len, buf);
  free(buf);
  if (!tp) {
    gv_error(m, "tensor file '%s': cannot parse ONNX TensorProto", path);
    return NULL;
  }
  static const gv_import_options dflt = {.batch = 1, .seq = 128, .load_weights = true};
  gv_ictx c = {.m = m, .tmp = gv_arena_new(), .opt = &dflt, .dir = NULL}; /* no external data */
  const char *ep = gv_esc(&c, path);
  size_t wl = strlen(ep) + 32;
  char *what = gv_alloc(c.tmp, wl);
  snprintf(what, wl, "tensor file '%s'", ep);
  gv_tensor *t = gv_onnx_tensor(&c, tp, what);
  gv_onnx_xfiles_free(&c);
  gv_arena_free(c.tmp);
  onnx__tensor_proto__free_unpacked(tp, NULL);
  return t;
}
