/* ir.c — IR data structures: arena, types, tensors, attributes, builder,
 * diagnostics and the op table. No pass logic here. */
#include "ir.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>

/* ---------------------------------------------------------------- op table */

const gv_opinfo gv_ops[GV_OP_COUNT] = {
#define X(E, nm, mi, ma, nr, fl, inf, ev, gr, sh) [GV_OP_##E] = {nm, mi, ma, nr, fl, inf, ev, gr, sh},
#include "ops.def"
#undef X
};

bool gv_opcode_lookup(const char *name, size_t n, gv_opcode *out) {
  for (int i = 0; i < GV_OP_COUNT; i++) {
    if (strlen(gv_ops[i].name) == n && memcmp(gv_ops[i].name, name, n) == 0) {
      *out = (gv_opcode)i;
      return true;
    }
  }
  return false;
}

/* ---------------------------------------------------------------- arena */

typedef struct chunk {
  struct chunk *next;
  size_t size, used;
  _Alignas(16) unsigned char data[];
} chunk;

struct gv_arena {
  chunk *head;
  size_t total;
};

gv_arena *gv_arena_new(void) {
  gv_arena *a = calloc(1, sizeof *a);
  if (!a) abort();
  return a;
}

void gv_arena_free(gv_arena *a) {
  if (!a) return;
  chunk *c = a->head;
  while (c) {
    chunk *n = c->next;
    free(c);
    c = n;
  }
  free(a);
}

void *gv_alloc(gv_arena *a, size_t n) {
  n = (n + 15) & ~(size_t)15;
  if (n == 0) n = 16;
  chunk *c = a->head;
  if (!c || c->size - c->used < n) {
    size_t sz = n > (1u << 16) ? n : (1u << 16);
    c = calloc(1, sizeof(chunk) + sz); /* zeroed once, whole: every allocation from it starts zeroed */
    if (!c) {
      fprintf(stderr, "%s: error: out of memory (%zu bytes)\n", gv_progname, n);
      exit(1);
    }
    c->size = sz;
    c->used = 0;
    /* Big allocations get their own chunk behind the head so the head's
     * free space is not wasted. */
    if (a->head && n > (1u << 15)) {
      c->next = a->head->next;
      a->head->next = c;
    } else {
      c->next = a->head;
      a->head = c;
    }
    a->total += sz;
  }
  void *p = c->data + c->used; /* zero: chunks are handed out once, from calloc */
  c->used += n;
  return p;
}

size_t gv_arena_bytes(const gv_arena *a) { return a->total; }

char *gv_strndup(gv_arena *a, const char *s, size_t n) {
  char *p = gv_alloc(a, n + 1);
  memcpy(p, s, n);
  p[n] = 0;
  return p;
}

char *gv_strdup(gv_arena *a, const char *s) { return gv_strndup(a, s, strlen(s)); }

/* ---------------------------------------------------------------- types */

static const struct {
  const char *name;
  size_t size;
} dtinfo[GV_DT_COUNT] = {
    [GV_DT_UNKNOWN] = {"?", 0}, [GV_DT_F32] = {"f32", 4},  [GV_DT_F16] = {"f16", 2},
    [GV_DT_BF16] = {"bf16", 2}, [GV_DT_F64] = {"f64", 8},  [GV_DT_I64] = {"i64", 8},
    [GV_DT_I32] = {"i32", 4},   [GV_DT_I16] = {"i16", 2},  [GV_DT_I8] = {"i8", 1},
    [GV_DT_U8] = {"ui8", 1},    [GV_DT_BOOL] = {"i1", 1},
};

size_t gv_dtype_size(gv_dtype t) { return t < GV_DT_COUNT ? dtinfo[t].size : 0; }
const char *gv_dtype_name(gv_dtype t) { return t < GV_DT_COUNT ? dtinfo[t].name : "?"; }

bool gv_dtype_parse(const char *s, size_t n, gv_dtype *out) {
  for (int i = 1; i < GV_DT_COUNT; i++) {
    if (strlen(dtinfo[i].name) == n && memcmp(dtinfo[i].name, s, n) == 0) {
      *out = (gv_dtype)i;
      return true;
    }
  }
  return false;
}

bool gv_dtype_is_float(gv_dtype t) {
  return t == GV_DT_F32 || t == GV_DT_F16 || t == GV_DT_BF16 || t == GV_DT_F64;
}
bool gv_dtype_is_int(gv_dtype t) {
  return t == GV_DT_I64 || t == GV_DT_I32 || t == GV_DT_I16 || t == GV_DT_I8 || t == GV_DT_U8;
}

gv_type gv_type_make(gv_dtype dt, int rank, const int64_t *dims) {
  gv_type t;
  memset(&t, 0, sizeof t);
  t.dtype = dt;
  t.rank = rank;
  for (int i = 0; i < rank && i < GV_MAX_RANK; i++) t.dims[i] = dims ? dims[i] : GV_DIM_UNKNOWN;
  return t;
}

gv_type gv_type_unranked(gv_dtype dt) {
  gv_type t;
  memset(&t, 0, sizeof t);
  t.dtype = dt;
  t.rank = GV_RANK_UNKNOWN;
  return t;
}

bool gv_type_is_static(const gv_type *t) {
  if (t->rank < 0) return false;
  for (int i = 0; i < t->rank; i++)
    if (t->dims[i] < 0) return false;
  return true;
}

int64_t gv_type_numel(const gv_type *t) {
  if (!gv_type_is_static(t)) return -1;
  int64_t n = 1;
  for (int i = 0; i < t->rank; i++) /* dims >= 0 here: overflow exactly when n > INT64_MAX / dims[i] */
    if (__builtin_mul_overflow(n, t->dims[i], &n)) return -2;
  return n;
}

bool gv_type_equal(const gv_type *a, const gv_type *b) {
  if (a->dtype != b->dtype || a->rank != b->rank) return false;
  for (int i = 0; i < a->rank; i++)
    if (a->dims[i] != b->dims[i]) return false;
  return true;
}

int gv_type_str(const gv_type *t, char *buf, size_t n) {
  size_t w = 0;
#define PUT(...)                                                                                   \
  do {                                                                                             \
    int k_ = snprintf(buf + (w < n ? w : n), w < n ? n - w : 0, __VA_ARGS__);                      \
    if (k_ > 0) w += (size_t)k_;                                                                   \
  } while (0)
  PUT("tensor<");
  if (t->rank < 0) {
    PUT("*x");
  } else {
    for (int i = 0; i < t->rank; i++) {
      if (t->dims[i] < 0)
        PUT("?x");
      else
        PUT("%lldx", (long long)t->dims[i]);
    }
  }
  PUT("%s>", t->dtype == GV_DT_UNKNOWN ? "!galv.any" : gv_dtype_name(t->dtype));
#undef PUT
  return (int)w;
}

/* ---------------------------------------------------------------- tensors */

gv_tensor *gv_tensor_new(gv_arena *a, gv_type type) {
  gv_tensor *t = gv_alloc(a, sizeof *t);
  t->type = type;
  int64_t n = gv_type_numel(&type);
  if (n < 0) n = 0;
  t->data = gv_alloc(a, (size_t)n * gv_dtype_size(type.dtype));
  return t;
}

int64_t gv_tensor_numel(const gv_tensor *t) { return gv_type_numel(&t->type); }

float gv_f16_to_f32(uint16_t h) {
  uint32_t s = (uint32_t)(h >> 15) << 31, e = (h >> 10) & 0x1f, mant = h & 0x3ff, bits;
  if (e == 0) {
    if (mant == 0) {
      bits = s;
    } else { /* subnormal */
      float f = ldexpf((float)mant, -24);
      return s ? -f : f;
    }
  } else if (e == 31) {
    bits = s | 0x7f800000u | (mant << 13);
  } else {
    bits = s | ((e + 112) << 23) | (mant << 13);
  }
  float f;
  memcpy(&f, &bits, 4);
  return f;
}

uint16_t gv_f32_to_f16(float f) {
  uint32_t x;
  memcpy(&x, &f, 4);
  uint32_t sign = (x >> 16) & 0x8000;
  uint32_t absx = x & 0x7fffffff;
  if (absx >= 0x7f800000) return (uint16_t)(sign | 0x7c00 | (absx > 0x7f800000 ? 0x200 : 0));
  if (absx >= 0x477ff000) return (uint16_t)(sign | 0x7c00); /* overflow to inf */
  if (absx < 0x38800000) {                                  /* subnormal or zero */
    float a;
    memcpy(&a, &absx, 4);
    uint32_t m = (uint32_t)nearbyintf(a * 16777216.0f); /* 2^24, round-half-even */
    return (uint16_t)(sign | m);
  }
  uint32_t mant = absx & 0x7fffff, e = (absx >> 23) - 112;
  uint32_t h = (e << 10) | (mant >> 13);
  uint32_t rem = mant & 0x1fff;
  if (rem > 0x1000 || (rem == 0x1000 && (h & 1))) h++;
  return (uint16_t)(sign | h);
}

float gv_bf16_to_f32(uint16_t h) {
  uint32_t bits = (uint32_t)h << 16;
  float f;
  memcpy(&f, &bits, 4);
  return f;
}

uint16_t gv_f32_to_bf16(float f) {
  uint32_t x;
  memcpy(&x, &f, 4);
  if ((x & 0x7fffffff) > 0x7f800000) return (uint16_t)((x >> 16) | 0x40);
  uint32_t r = 0x7fff + ((x >> 16) & 1);
  return (uint16_t)((x + r) >> 16);
}

double gv_tensor_get_f(const gv_tensor *t, int64_t i) {
  const void *d = t->data;
  switch (t->type.dtype) {
  case GV_DT_F32: return ((const float *)d)[i];
  case GV_DT_F64: return ((const double *)d)[i];
  case GV_DT_F16: return gv_f16_to_f32(((const uint16_t *)d)[i]);
  case GV_DT_BF16: return gv_bf16_to_f32(((const uint16_t *)d)[i]);
  default: return (double)gv_tensor_get_i(t, i);
  }
}

int64_t gv_tensor_get_i(const gv_tensor *t, int64_t i) {
  const void *d = t->data;
  switch (t->type.dtype) {
  case GV_DT_I64: return ((const int64_t *)d)[i];
  case GV_DT_I32: return ((const int32_t *)d)[i];
  case GV_DT_I16: return ((const int16_t *)d)[i];
  case GV_DT_I8: return ((const int8_t *)d)[i];
  case GV_DT_U8: return ((const uint8_t *)d)[i];
  case GV_DT_BOOL: return ((const uint8_t *)d)[i] != 0;
  default: {
    double v = gv_tensor_get_f(t, i);
    if (v != v) return 0;
    if (v >= 9.2e18) return INT64_MAX;
    if (v <= -9.2e18) return INT64_MIN;
    return (int64_t)v; /* truncation toward zero, as ONNX Cast */
  }
  }
}

void gv_tensor_set_f(gv_tensor *t, int64_t i, double v) {
  void *d = t->data;
  switch (t->type.dtype) {
  case GV_DT_F32: ((float *)d)[i] = (float)v; return;
  case GV_DT_F64: ((double *)d)[i] = v; return;
  case GV_DT_F16: ((uint16_t *)d)[i] = gv_f32_to_f16((float)v); return;
  case GV_DT_BF16: ((uint16_t *)d)[i] = gv_f32_to_bf16((float)v); return;
  case GV_DT_BOOL: ((uint8_t *)d)[i] = v != 0; return;
  default: {
    int64_t iv;
    if (v != v) iv = 0;
    else if (v >= 9.2e18) iv = INT64_MAX;
    else if (v <= -9.2e18) iv = INT64_MIN;
    else iv = (int64_t)v;
    gv_tensor_set_i(t, i, iv);
  }
  }
}

void gv_tensor_set_i(gv_tensor *t, int64_t i, int64_t v) {
  void *d = t->data;
  switch (t->type.dtype) {
  case GV_DT_I64: ((int64_t *)d)[i] = v; return;
  case GV_DT_I32: ((int32_t *)d)[i] = (int32_t)v; return;
  case GV_DT_I16: ((int16_t *)d)[i] = (int16_t)v; return;
  case GV_DT_I8: ((int8_t *)d)[i] = (int8_t)v; return;
  case GV_DT_U8: ((uint8_t *)d)[i] = (uint8_t)v; return;
  case GV_DT_BOOL: ((uint8_t *)d)[i] = v != 0; return;
  default: gv_tensor_set_f(t, i, (double)v); return;
  }
}

/* ---------------------------------------------------------------- module */

typedef struct {
  void *addr;
  size_t len;
} mapping;

gv_module *gv_module_new(const char *source) {
  gv_arena *a = gv_arena_new();
  gv_module *m = gv_alloc(a, sizeof *m);
  static uint64_t made;
  m->arena = a;
  m->source = gv_strdup(a, source ? source : "<input>");
  m->serial = ++made;
  return m;
}

void gv_module_free(gv_module *m) {
  if (!m) return;
  mapping *mp = m->mappings;
  for (int i = 0; i < m->nmappings; i++) munmap(mp[i].addr, mp[i].len);
  free(m->mappings);
  gv_arena_free(m->arena);
}

void gv_module_add_mapping(gv_module *m, void *addr, size_t len) {
  if (m->nmappings == m->cap_mappings) {
    int cap = m->cap_mappings ? 2 * m->cap_mappings : 8;
    void *p = realloc(m->mappings, (size_t)cap * sizeof(mapping));
    if (!p) abort();
    m->mappings = p;
    m->cap_mappings = cap;
  }
  mapping *mp = m->mappings;
  mp[m->nmappings].addr = addr;
  mp[m->nmappings].len = len;
  m->nmappings++;
}

/* ---------------------------------------------------------------- builder */

gv_block *gv_block_new(gv_module *m) { return gv_alloc(m->arena, sizeof(gv_block)); }

gv_value *gv_block_add_arg(gv_module *m, gv_block *b, gv_type type) {
  /* Arrays grow by doubling so that adding n arguments costs O(n). */
  if (b->nargs >= b->cap_args) { /* also when another builder filled args directly */
    int cap = b->nargs ? 2 * b->nargs : 8;
    gv_value **args = gv_alloc(m->arena, (size_t)cap * sizeof *args);
    if (b->nargs) memcpy(args, b->args, (size_t)b->nargs * sizeof *args);
    b->args = args;
    b->cap_args = cap;
  }
  gv_value *v = gv_alloc(m->arena, sizeof *v);
  v->type = type;
  v->block = b;
  v->index = b->nargs;
  b->args[b->nargs++] = v;
  return v;
}

gv_func *gv_func_new(gv_module *m, const char *name) {
  gv_func *f = gv_alloc(m->arena, sizeof *f);
  f->name = gv_strdup(m->arena, name);
  f->body = gv_block_new(m);
  return f;
}

gv_value *gv_func_add_arg(gv_module *m, gv_func *f, const char *name, gv_type type, bool is_param) {
  int n = f->body->nargs;
  if (n >= f->cap_args) {
    int cap = n ? 2 * n : 8;
    const char **names = gv_alloc(m->arena, (size_t)cap * sizeof *names);
    bool *isp = gv_alloc(m->arena, (size_t)cap * sizeof *isp);
    const void **pd = gv_alloc(m->arena, (size_t)cap * sizeof *pd);
    if (n) {
      memcpy(names, f->arg_names, (size_t)n * sizeof *names);
      memcpy(isp, f->arg_is_param, (size_t)n * sizeof *isp);
      memcpy(pd, f->param_data, (size_t)n * sizeof *pd);
    }
    f->arg_names = names;
    f->arg_is_param = isp;
    f->param_data = pd;
    if (f->arg_is_state) {
      bool *ist = gv_alloc(m->arena, (size_t)cap * sizeof *ist);
      memcpy(ist, f->arg_is_state, (size_t)n * sizeof *ist);
      f->arg_is_state = ist;
    }
    if (f->arg_is_frozen) {
      bool *ifr = gv_alloc(m->arena, (size_t)cap * sizeof *ifr);
      memcpy(ifr, f->arg_is_frozen, (size_t)n * sizeof *ifr);
      f->arg_is_frozen = ifr;
    }
    if (f->arg_sharding) {
      const gv_sharding **ash = gv_alloc(m->arena, (size_t)cap * sizeof *ash);
      memcpy(ash, f->arg_sharding, (size_t)n * sizeof *ash);
      f->arg_sharding = ash;
    }
    f->cap_args = cap;
  }
  f->arg_names[n] = gv_strdup(m->arena, name ? name : "");
  f->arg_is_param[n] = is_param;
  if (f->arg_is_state) f->arg_is_state[n] = false;
  if (f->arg_is_frozen) f->arg_is_frozen[n] = false;
  if (f->arg_sharding) f->arg_sharding[n] = NULL;
  gv_value *v = gv_block_add_arg(m, f->body, type);
  v->name = f->arg_names[n];
  return v;
}

gv_op *gv_op_new(gv_module *m, gv_opcode code, int nopnds, gv_value *const *opnds, int nres) {
  gv_op *op = gv_alloc(m->arena, sizeof *op);
  op->code = code;
  op->loc = "";
  gv_op_set_operands(m, op, nopnds, opnds);
  op->nres = nres;
  op->res = gv_alloc(m->arena, (size_t)(nres ? nres : 1) * sizeof *op->res);
  for (int i = 0; i < nres; i++) {
    gv_value *v = gv_alloc(m->arena, sizeof *v);
    v->type = gv_type_unranked(GV_DT_UNKNOWN);
    v->def = op;
    v->index = i;
    op->res[i] = v;
  }
  return op;
}

void gv_op_set_operands(gv_module *m, gv_op *op, int n, gv_value *const *opnds) {
  op->nopnds = n;
  op->opnds = gv_alloc(m->arena, (size_t)(n ? n : 1) * sizeof *op->opnds);
  if (n && opnds) memcpy(op->opnds, opnds, (size_t)n * sizeof *op->opnds);
}

void gv_op_set_loc(gv_module *m, gv_op *op, const char *node_name, const char *onnx_op) {
  op->loc = gv_strdup(m->arena, node_name ? node_name : "");
  op->onnx_op = onnx_op ? gv_strdup(m->arena, onnx_op) : NULL;
}

void gv_op_add_region(gv_module *m, gv_op *op, gv_block *b) {
  gv_block **r = gv_alloc(m->arena, (size_t)(op->nregions + 1) * sizeof *r);
  if (op->nregions) memcpy(r, op->regions, (size_t)op->nregions * sizeof *r);
  r[op->nregions++] = b;
  op->regions = r;
  b->parent = op;
}

void gv_block_append(gv_block *b, gv_op *op) {
  op->parent = b;
  op->next = NULL;
  op->prev = b->last;
  if (b->last)
    b->last->next = op;
  else
    b->first = op;
  b->last = op;
}

void gv_insert_before(gv_op *pos, gv_op *op) {
  gv_block *b = pos->parent;
  op->parent = b;
  op->next = pos;
  op->prev = pos->prev;
  if (pos->prev)
    pos->prev->next = op;
  else
    b->first = op;
  pos->prev = op;
}

void gv_op_unlink(gv_op *op) {
  gv_block *b = op->parent;
  if (!b) return;
  if (op->prev)
    op->prev->next = op->next;
  else
    b->first = op->next;
  if (op->next)
    op->next->prev = op->prev;
  else
    b->last = op->prev;
  op->prev = op->next = NULL;
  op->parent = NULL;
}

void gv_replace_uses(gv_block *b, gv_value *from, gv_value *to) {
  for (gv_op *op = b->first; op; op = op->next) {
    for (int i = 0; i < op->nopnds; i++)
      if (op->opnds[i] == from) op->opnds[i] = to;
    for (int r = 0; r < op->nregions; r++) gv_replace_uses(op->regions[r], from, to);
  }
}

static int replace_in_block_from(gv_op *op, gv_value *from, gv_value *to, int left) {
  for (; op && left > 0; op = op->next) {
    for (int i = 0; i < op->nopnds; i++)
      if (op->opnds[i] == from) op->opnds[i] = to, left--;
    for (int r = 0; r < op->nregions && left > 0; r++) left = replace_in_block_from(op->regions[r]->first, from, to, left);
  }
  return left;
}

void gv_replace_uses_after(gv_op *def, gv_value *from, gv_value *to, int nuses) {
  if (replace_in_block_from(def->next, from, to, nuses) != 0 || nuses < 0) /* the count was off: every use, the slow way */
    gv_replace_uses(def->parent, from, to);
}

/* gv_subst: open addressing on the value pointer, power-of-two capacity,
 * at most half full. */
typedef struct {
  gv_value *from, *to;
  const gv_op *keep;
} subst_entry;

struct gv_subst {
  size_t n, cap;
  subst_entry *e;
  uint64_t version; /* entries recorded so far (gv_subst_version) */
};

static void *subst_calloc(size_t n, size_t size) {
  void *p = calloc(n, size);
  if (!p) {
    fprintf(stderr, "%s: error: out of memory (%zu bytes)\n", gv_progname, n * size);
    exit(1);
  }
  return p;
}

static size_t subst_hash(const gv_value *v, size_t cap) {
  uint64_t x = (uint64_t)(uintptr_t)v;
  x ^= x >> 33;
  x *= 0xff51afd7ed558ccdull;
  x ^= x >> 33;
  return (size_t)x & (cap - 1);
}

gv_subst *gv_subst_new(void) {
  gv_subst *s = subst_calloc(1, sizeof *s);
  s->cap = 64;
  s->e = subst_calloc(s->cap, sizeof *s->e);
  return s;
}

void gv_subst_free(gv_subst *s) {
  if (!s) return;
  free(s->e);
  free(s);
}

bool gv_subst_empty(const gv_subst *s) { return s->n == 0; }

static subst_entry *subst_find(const gv_subst *s, const gv_value *v) {
  for (size_t i = subst_hash(v, s->cap);; i = (i + 1) & (s->cap - 1)) {
    if (!s->e[i].from) return NULL;
    if (s->e[i].from == v) return &s->e[i];
  }
}

void gv_subst_add(gv_subst *s, gv_value *from, gv_value *to, const gv_op *keep) {
  if (from == to) return;
  if (2 * (s->n + 1) > s->cap) {
    subst_entry *old = s->e;
    size_t oc = s->cap;
    s->cap *= 2;
    s->e = subst_calloc(s->cap, sizeof *s->e);
    for (size_t i = 0; i < oc; i++)
      if (old[i].from) {
        size_t j = subst_hash(old[i].from, s->cap);
        while (s->e[j].from) j = (j + 1) & (s->cap - 1);
        s->e[j] = old[i];
      }
    free(old);
  }
  size_t i = subst_hash(from, s->cap);
  while (s->e[i].from && s->e[i].from != from) i = (i + 1) & (s->cap - 1);
  if (!s->e[i].from) s->n++;
  s->e[i] = (subst_entry){from, to, keep};
  s->version++;
}

uint64_t gv_subst_version(const gv_subst *s) { return s->version; }

gv_value *gv_subst_value(const gv_subst *s, gv_value *v, const gv_op *user) {
  for (size_t hops = 0; hops <= s->n; hops++) { /* a chain visits each entry at most once */
    const subst_entry *e = subst_find(s, v);
    if (!e || (e->keep && e->keep == user)) return v;
    v = e->to;
  }
  return v;
}

void gv_subst_op(const gv_subst *s, gv_op *op) {
  if (!s->n) return;
  for (int i = 0; i < op->nopnds; i++) op->opnds[i] = gv_subst_value(s, op->opnds[i], op);
  if (op->code == GV_OP_FUSED) return; /* its region sees only its own block (verify.c) */
  for (int r = 0; r < op->nregions; r++) gv_subst_block(s, op->regions[r]);
}

void gv_subst_block(const gv_subst *s, gv_block *b) {
  if (!s->n) return;
  for (gv_op *op = b->first; op; op = op->next) gv_subst_op(s, op);
}

static void zero_uses(gv_block *b) {
  for (int i = 0; i < b->nargs; i++) b->args[i]->nuses = 0;
  for (gv_op *op = b->first; op; op = op->next) {
    for (int i = 0; i < op->nres; i++) op->res[i]->nuses = 0;
    for (int r = 0; r < op->nregions; r++) zero_uses(op->regions[r]);
  }
}

static void add_uses(gv_block *b) {
  for (gv_op *op = b->first; op; op = op->next) {
    for (int i = 0; i < op->nopnds; i++) op->opnds[i]->nuses++;
    for (int r = 0; r < op->nregions; r++) add_uses(op->regions[r]);
  }
}

void gv_count_uses(gv_block *b) {
  zero_uses(b);
  add_uses(b);
}

static const char *const *arg_sort_names;
static int by_name_index(const void *x, const void *y) {
  int a = *(const int *)x, b = *(const int *)y, c = strcmp(arg_sort_names[a], arg_sort_names[b]);
  return c ? c : (a > b) - (a < b);
}

int gv_arg_index_build(gv_arg_index *x, const gv_func *f) {
  int n = f->body ? f->body->nargs : 0;
  *x = (gv_arg_index){0};
  x->idx = malloc(((size_t)n + 1) * sizeof *x->idx);
  x->names = malloc(((size_t)n + 1) * sizeof *x->names);
  if (!x->idx || !x->names) {
    gv_arg_index_free(x);
    return -1;
  }
  for (int i = 0; i < n; i++)
    if (f->arg_names && f->arg_names[i]) x->idx[x->n++] = i;
  arg_sort_names = f->arg_names;
  qsort(x->idx, (size_t)x->n, sizeof *x->idx, by_name_index);
  for (int k = 0; k < x->n; k++) x->names[k] = f->arg_names[x->idx[k]];
  return 0;
}

void gv_arg_index_find(const gv_arg_index *x, const char *name, int *lo, int *hi) {
  int a = 0, b = x->n;
  while (a < b) { /* the first entry >= name */
    int mid = a + (b - a) / 2;
    if (strcmp(x->names[mid], name) < 0) a = mid + 1;
    else b = mid;
  }
  *lo = *hi = a;
  while (*hi < x->n && !strcmp(x->names[*hi], name)) ++*hi;
}

void gv_arg_index_free(gv_arg_index *x) {
  free(x->idx);
  free(x->names);
  *x = (gv_arg_index){0};
}

gv_op *gv_block_terminator(gv_block *b) {
  return b->last && (gv_ops[b->last->code].flags & GV_TERMINATOR) ? b->last : NULL;
}

gv_op *gv_constant_new(gv_module *m, gv_tensor *t) {
  gv_op *op = gv_op_new(m, GV_OP_CONSTANT, 0, NULL, 1);
  gv_set_tensor(m, op, "value", t);
  op->res[0]->type = t->type;
  return op;
}

/* ---------------------------------------------------------------- attributes */

/* Attribute names, interned: one copy of each name for the process (never
 * freed; the names are the compiler's own vocabulary and those of the files
 * it reads), so that every op's attribute names are these pointers
 * (gv_set_attr, the parser and gv_module_clone keep it so) and a look-up
 * with an interned key compares pointers only (gv_get_attr_key). */
static struct {
  gv_arena *arena;
  const char **slot; /* open addressing, cap a power of two, at most half full */
  size_t cap, n;
} names;

static uint64_t name_hash(const char *s, size_t n) {
  uint64_t h = 1469598103934665603ull;
  for (size_t i = 0; i < n; i++) h = (h ^ (unsigned char)s[i]) * 1099511628211ull;
  return h;
}

const char *gv_intern(const char *s) {
  if (!s) return NULL;
  if (2 * (names.n + 1) > names.cap) {
    size_t cap = names.cap ? 2 * names.cap : 256;
    const char **slot = calloc(cap, sizeof *slot);
    if (!slot) {
      fprintf(stderr, "%s: error: out of memory (%zu bytes)\n", gv_progname, cap * sizeof *slot);
      exit(1);
    }
    for (size_t i = 0; i < names.cap; i++) {
      if (!names.slot[i]) continue;
      size_t j = name_hash(names.slot[i], strlen(names.slot[i])) & (cap - 1);
      while (slot[j]) j = (j + 1) & (cap - 1);
      slot[j] = names.slot[i];
    }
    free(names.slot);
    names.slot = slot, names.cap = cap;
    if (!names.arena) names.arena = gv_arena_new();
  }
  size_t n = strlen(s);
  for (size_t j = name_hash(s, n) & (names.cap - 1);; j = (j + 1) & (names.cap - 1)) {
    if (!names.slot[j]) {
      names.n++;
      return names.slot[j] = gv_strndup(names.arena, s, n);
    }
    if (names.slot[j] == s || strcmp(names.slot[j], s) == 0) return names.slot[j];
  }
}

/* strcmp's order of two attribute names (an op's attributes are sorted by
 * it), compared inline: names are short, and look-ups run for every value
 * the planner's passes and cost walk read (storage, shardings, offsets),
 * most of them misses, so strcmp calls on every name of every op were a
 * tenth of planning time. */
static inline int name_cmp(const char *a, const char *b) {
  if (a == b) return 0;
  while (*a && *a == *b) a++, b++;
  return (int)(unsigned char)*a - (int)(unsigned char)*b;
}

/* a->name is gv_intern's */
static void set_interned(gv_module *m, gv_op *op, const gv_attr *a) {
  const char *name = a->name;
  int lo = 0;
  int c = 1;
  while (lo < op->nattrs && (c = name_cmp(op->attrs[lo].name, name)) < 0) lo++;
  if (lo < op->nattrs && c == 0) {
    op->attrs[lo] = *a;
    op->attrs[lo].name = name;
    return;
  }
  gv_attr *na = gv_alloc(m->arena, (size_t)(op->nattrs + 1) * sizeof *na);
  if (lo) memcpy(na, op->attrs, (size_t)lo * sizeof *na);
  na[lo] = *a;
  na[lo].name = name;
  if (op->nattrs > lo) memcpy(na + lo + 1, op->attrs + lo, (size_t)(op->nattrs - lo) * sizeof *na);
  op->attrs = na;
  op->nattrs++;
}

void gv_set_attr(gv_module *m, gv_op *op, const gv_attr *a) {
  gv_attr c = *a;
  c.name = gv_intern(a->name);
  set_interned(m, op, &c);
}

static gv_attr mkattr(gv_module *m, const char *name, gv_attr_kind k) {
  gv_attr a;
  memset(&a, 0, sizeof a);
  (void)m;
  a.name = gv_intern(name);
  a.kind = k;
  return a;
}

void gv_set_int(gv_module *m, gv_op *op, const char *name, int64_t v) {
  gv_attr a = mkattr(m, name, GV_ATTR_INT);
  a.u.i = v;
  set_interned(m, op, &a);
}

void gv_set_float(gv_module *m, gv_op *op, const char *name, float v) {
  gv_attr a = mkattr(m, name, GV_ATTR_FLOAT);
  a.u.f = v;
  set_interned(m, op, &a);
}

void gv_set_str(gv_module *m, gv_op *op, const char *name, const char *v) {
  gv_attr a = mkattr(m, name, GV_ATTR_STR);
  a.u.s = gv_strdup(m->arena, v);
  set_interned(m, op, &a);
}

void gv_set_ints(gv_module *m, gv_op *op, const char *name, int n, const int64_t *v) {
  gv_attr a = mkattr(m, name, GV_ATTR_INTS);
  a.u.ints.n = n;
  a.u.ints.v = gv_alloc(m->arena, (size_t)(n ? n : 1) * sizeof(int64_t));
  if (n) memcpy(a.u.ints.v, v, (size_t)n * sizeof(int64_t));
  set_interned(m, op, &a);
}

void gv_set_floats(gv_module *m, gv_op *op, const char *name, int n, const float *v) {
  gv_attr a = mkattr(m, name, GV_ATTR_FLOATS);
  a.u.floats.n = n;
  a.u.floats.v = gv_alloc(m->arena, (size_t)(n ? n : 1) * sizeof(float));
  if (n) memcpy(a.u.floats.v, v, (size_t)n * sizeof(float));
  set_interned(m, op, &a);
}

void gv_set_strs(gv_module *m, gv_op *op, const char *name, int n, const char *const *v) {
  gv_attr a = mkattr(m, name, GV_ATTR_STRS);
  a.u.strs.n = n;
  a.u.strs.v = gv_alloc(m->arena, (size_t)(n ? n : 1) * sizeof(char *));
  for (int i = 0; i < n; i++) a.u.strs.v[i] = gv_strdup(m->arena, v[i]);
  set_interned(m, op, &a);
}

void gv_set_tensor(gv_module *m, gv_op *op, const char *name, gv_tensor *t) {
  gv_attr a = mkattr(m, name, GV_ATTR_TENSOR);
  a.u.t = t;
  set_interned(m, op, &a);
}

void gv_set_type(gv_module *m, gv_op *op, const char *name, gv_dtype t) {
  gv_attr a = mkattr(m, name, GV_ATTR_TYPE);
  a.u.ty = t;
  set_interned(m, op, &a);
}

void gv_set_unit(gv_module *m, gv_op *op, const char *name) {
  gv_attr a = mkattr(m, name, GV_ATTR_UNIT);
  set_interned(m, op, &a);
}

void gv_remove_attr(gv_op *op, const char *name) {
  for (int i = 0; i < op->nattrs; i++) {
    int c = name_cmp(op->attrs[i].name, name);
    if (c > 0) return; /* sorted: not there */
    if (c == 0) {
      memmove(op->attrs + i, op->attrs + i + 1, (size_t)(op->nattrs - i - 1) * sizeof *op->attrs);
      op->nattrs--;
      return;
    }
  }
}

void gv_remove_attr_key(gv_op *op, const char *key) {
  for (int i = 0; i < op->nattrs; i++)
    if (op->attrs[i].name == key) {
      memmove(op->attrs + i, op->attrs + i + 1, (size_t)(op->nattrs - i - 1) * sizeof *op->attrs);
      op->nattrs--;
      return;
    }
}

const gv_attr *gv_get_attr_key(const gv_op *op, const char *key) {
  for (int i = 0; i < op->nattrs; i++)
    if (op->attrs[i].name == key) return &op->attrs[i];
  return NULL;
}

const gv_attr *gv_get_attr(const gv_op *op, const char *name) {
  for (int i = 0; i < op->nattrs; i++) {
    int c = name_cmp(op->attrs[i].name, name);
    if (c == 0) return &op->attrs[i];
    if (c > 0) break; /* sorted: not there */
  }
  return NULL;
}

int64_t gv_get_int(const gv_op *op, const char *name, int64_t dflt) {
  const gv_attr *a = gv_get_attr(op, name);
  return a && a->kind == GV_ATTR_INT ? a->u.i : dflt;
}

float gv_get_float(const gv_op *op, const char *name, float dflt) {
  const gv_attr *a = gv_get_attr(op, name);
  return a && a->kind == GV_ATTR_FLOAT ? a->u.f : dflt;
}

const char *gv_get_str(const gv_op *op, const char *name, const char *dflt) {
  const gv_attr *a = gv_get_attr(op, name);
  return a && a->kind == GV_ATTR_STR ? a->u.s : dflt;
}

int gv_get_ints(const gv_op *op, const char *name, const int64_t **v) {
  const gv_attr *a = gv_get_attr(op, name);
  if (!a || a->kind != GV_ATTR_INTS) {
    *v = NULL;
    return -1;
  }
  *v = a->u.ints.v;
  return a->u.ints.n;
}

/* ---------------------------------------------------------------- diagnostics */

const char *gv_progname = "galvc";

void gv_write_escaped(void *file, const char *s) {
  FILE *f = file;
  for (const unsigned char *p = (const unsigned char *)s; *p; p++) {
    if (*p < 0x20 || *p == 0x7f || *p == '"' || *p == '\\')
      fprintf(f, "\\%02X", *p);
    else
      fputc(*p, f);
  }
}

int gv_error_quiet;

int gv_error_op(const gv_module *m, const gv_op *op, const char *fmt, ...) {
  if (gv_error_quiet > 0) return -1;
  fprintf(stderr, "%s: error: %s: node '", gv_progname, m && m->source ? m->source : "<input>");
  gv_write_escaped(stderr, op && op->loc ? op->loc : "");
  fprintf(stderr, "' (%s): ", op ? (op->onnx_op ? op->onnx_op : gv_ops[op->code].name) : "?");
  va_list ap;
  va_start(ap, fmt);
  vfprintf(stderr, fmt, ap);
  va_end(ap);
  fputc('\n', stderr);
  return -1;
}

int gv_error(const gv_module *m, const char *fmt, ...) {
  if (gv_error_quiet > 0) return -1;
  fprintf(stderr, "%s: error: %s: ", gv_progname, m && m->source ? m->source : "<input>");
  va_list ap;
  va_start(ap, fmt);
  vfprintf(stderr, fmt, ap);
  va_end(ap);
  fputc('\n', stderr);
  return -1;
}

int gv_error_plain(const char *fmt, ...) {
  if (gv_error_quiet > 0) return -1;
  fprintf(stderr, "%s: error: ", gv_progname);
  va_list ap;
  va_start(ap, fmt);
  vfprintf(stderr, fmt, ap);
  va_end(ap);
  fputc('\n', stderr);
  return -1;
}

int gv_infer_op(gv_module *m, gv_op *op, const gv_tensor *const *values) {
  return gv_ops[op->code].infer(m, op, values);
}

int gv_eval_op(gv_module *m, const gv_op *op, const gv_tensor *const *in, gv_tensor **out) {
  return gv_ops[op->code].eval(m, op, in, out);
}

void gv_print_trainable(const gv_func *f, const char *prog, void *fp) {
  FILE *out = fp;
  int nt = 0, nf = 0;
  long long et = 0, ef = 0;
  for (int i = 0; i < f->body->nargs; i++) {
    if (!f->arg_is_param[i]) continue;
    long long n = (long long)gv_type_numel(&f->body->args[i]->type);
    if (gv_arg_trains(f, i)) nt++, et += n;
    else nf++, ef += n;
  }
  fprintf(out, "%s: training %d parameters (%lld elements); frozen: ", prog, nt, et);
  if (!nf) {
    fputs("none\n", out);
    return;
  }
  fprintf(out, "%d (%lld elements):", nf, ef);
  int shown = 0;
  for (int i = 0; i < f->body->nargs; i++) {
    if (!f->arg_is_param[i] || gv_arg_trains(f, i)) continue;
    if (shown++ == 8) {
      fprintf(out, " ... (%d more)", nf - 8);
      break;
    }
    fprintf(out, "%s %s", shown > 1 ? "," : "", f->arg_names[i]);
  }
  fputc('\n', out);
}

/* The layer of a location: its first segment NAME.N or NAME/N (separated
 * by '/' or '.'), printed as NAME.N: "/transformer/h.0/attn/..." and the
 * optimizer's "optimizer/adamw/transformer.h.0.ln_1.weight" are both h.0,
 * "/blocks/0/mlp/..." is blocks.0. Elsewhere (embeddings, final norm, head,
 * loss, outputs): "other". */
void gv_layer_key(const char *loc, char *key, size_t n) {
  snprintf(key, n, "other");
  if (!loc) return;
  for (const char *p = loc; *p; p++) {
    if (p != loc && p[-1] != '/' && p[-1] != '.') continue;
    const char *q = p;
    while ((*q >= 'a' && *q <= 'z') || (*q >= 'A' && *q <= 'Z') || *q == '_' || (q > p && *q >= '0' && *q <= '9')) q++;
    if (q == p || (*q != '.' && *q != '/')) continue;
    const char *d = q + 1, *e = d;
    while (*e >= '0' && *e <= '9') e++;
    if (e == d || (*e && *e != '/' && *e != '.')) continue;
    snprintf(key, n, "%.*s.%.*s", (int)(q - p) > 30 ? 30 : (int)(q - p), p, (int)(e - d) > 10 ? 10 : (int)(e - d), d);
    return;
  }
}
