/* test_memory_plan.c — the device-program invariants after fuse and
 * memory-plan (docs/device-program.md), checked by brute force with a
 * liveness analysis of its own:
 *   - every pair of arena values whose live ranges overlap has disjoint
 *     bytes; offsets are 64-byte aligned and inside the arena;
 *   - views carry their operand's offset, parameters / constants / views of
 *     them -1, constants and fused-body ops no offsets;
 *   - lower_bound equals the most bytes live at one point, <= bytes;
 *   - fused programs compute bit-identically what the unfused ones did.
 * Programs: the committed torch exports (whole galvc pipeline) and seeded
 * random DAGs of elementwise, view, reduction, transpose and softmax ops.
 * It must never pass on a plan it did not check: every model must plan. */
#include <dirent.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "frontend/onnx_import.h"
#include "ir/interp.h"
#include "ir/ir.h"
#include "passes/passes.h"

#define CHECK(c)                                                                                   \
  do {                                                                                             \
    if (!(c)) {                                                                                    \
      fprintf(stderr, "%s:%d: check failed: %s\n", __FILE__, __LINE__, #c);                        \
      return 1;                                                                                    \
    }                                                                                              \
  } while (0)

typedef struct {
  int64_t off, size;
  int start, end;
  int root;
  bool ext;
} val;

typedef struct {
  val *v;
  int n, point;
  int64_t arena;
  const char *what;
} chk;

static int number(gv_block *b, int n) {
  for (int i = 0; i < b->nargs; i++) b->args[i]->id = n++;
  for (gv_op *op = b->first; op; op = op->next) {
    for (int i = 0; i < op->nres; i++) op->res[i]->id = n++;
    for (int r = 0; r < op->nregions; r++) n = number(op->regions[r], n);
  }
  return n;
}

static int fail(const chk *c, const gv_op *op, const char *msg) {
  fprintf(stderr, "%s: op galv.%s '%s': %s\n", c->what, op ? gv_ops[op->code].name : "-", op ? op->loc : "", msg);
  return 1;
}

static int no_offsets_inside(const chk *c, const gv_block *b) {
  for (const gv_op *op = b->first; op; op = op->next) {
    if (gv_get_attr(op, "offsets")) return fail(c, op, "offsets inside a fused body");
    for (int r = 0; r < op->nregions; r++)
      if (no_offsets_inside(c, op->regions[r])) return 1;
  }
  return 0;
}

static int walk(chk *c, const gv_block *b) {
  for (const gv_op *op = b->first; op; op = op->next) {
    if (op->code == GV_OP_ARENA) {
      if (op != b->first || b->parent) return fail(c, op, "arena not first");
      continue;
    }
    int p = ++c->point;
    for (int i = 0; i < op->nopnds; i++) {
      val *r = &c->v[c->v[op->opnds[i]->id].root];
      if (p > r->end) r->end = p;
    }
    if (op->nres) {
      const int64_t *offs = NULL;
      int n = gv_get_ints(op, "offsets", &offs);
      if (op->code == GV_OP_CONSTANT) {
        if (n != -1) return fail(c, op, "constant with offsets");
      } else if (n != op->nres) {
        return fail(c, op, "offsets missing or of the wrong length");
      }
      for (int i = 0; i < op->nres; i++) {
        const gv_value *res = op->res[i];
        val *x = &c->v[res->id];
        x->root = res->id;
        x->start = x->end = p;
        if (op->code == GV_OP_CONSTANT) {
          x->ext = true;
          x->off = -1;
          continue;
        }
        x->off = offs[i];
        if (gv_ops[op->code].flags & GV_VIEW) {
          const val *src = &c->v[op->opnds[0]->id];
          x->root = src->root;
          x->ext = src->ext;
          if (x->off != (src->ext ? -1 : c->v[src->root].off)) return fail(c, op, "view offset differs from its operand's");
          continue;
        }
        x->size = gv_type_numel(&res->type) * (int64_t)gv_dtype_size(res->type.dtype);
        if (x->off < 0 || x->off % 64 || x->off + x->size > c->arena) return fail(c, op, "offset unaligned or outside the arena");
      }
    }
    if (op->code == GV_OP_FUSED) {
      if (no_offsets_inside(c, op->regions[0])) return 1;
    } else {
      for (int r = 0; r < op->nregions; r++)
        if (walk(c, op->regions[r])) return 1;
    }
  }
  return 0;
}

/* The whole check of one planned module. */
static int check_plan(gv_module *m, const char *what, bool quiet) {
  gv_block *body = m->main->body;
  const gv_op *a = body->first;
  chk c = {.what = what};
  if (!a || a->code != GV_OP_ARENA) return fail(&c, a, "no galv.arena first");
  c.arena = gv_get_int(a, "bytes", -1);
  int64_t lb = gv_get_int(a, "lower_bound", -1);
  const int64_t *argoff = NULL;
  CHECK(gv_get_ints(a, "arg_offsets", &argoff) == body->nargs);
  CHECK(c.arena >= 0 && c.arena % 64 == 0 && lb >= 0 && lb <= c.arena);
  c.n = number(body, 0);
  c.v = calloc((size_t)c.n + 1, sizeof *c.v);
  CHECK(c.v);
  for (int i = 0; i < body->nargs; i++) {
    val *x = &c.v[i];
    x->root = i;
    x->off = argoff[i];
    x->ext = m->main->arg_is_param[i];
    if (x->ext) {
      CHECK(x->off == -1);
    } else {
      x->size = gv_type_numel(&body->args[i]->type) * (int64_t)gv_dtype_size(body->args[i]->type.dtype);
      CHECK(x->off >= 0 && x->off % 64 == 0 && x->off + x->size <= c.arena);
    }
  }
  int rc = walk(&c, body);
  /* Brute force: every pair of simultaneously live arena values. */
  int pairs = 0;
  for (int i = 0; i < c.n && !rc; i++) {
    const val *x = &c.v[i];
    if (x->ext || x->root != i || !x->size) continue;
    for (int j = i + 1; j < c.n && !rc; j++) {
      const val *y = &c.v[j];
      if (y->ext || y->root != j || !y->size) continue;
      if (x->start <= y->end && y->start <= x->end) {
        pairs++;
        if (x->off < y->off + y->size && y->off < x->off + x->size) {
          fprintf(stderr, "%s: values %d [%d,%d] @%lld+%lld and %d [%d,%d] @%lld+%lld share bytes while both live\n",
                  what, i, x->start, x->end, (long long)x->off, (long long)x->size, j, y->start, y->end,
                  (long long)y->off, (long long)y->size);
          rc = 1;
        }
      }
    }
  }
  /* The lower bound, recomputed point by point. */
  int64_t most = 0;
  for (int p = 0; p <= c.point && !rc; p++) {
    int64_t live = 0;
    for (int i = 0; i < c.n; i++)
      if (!c.v[i].ext && c.v[i].root == i && c.v[i].start <= p && p <= c.v[i].end) live += c.v[i].size;
    if (live > most) most = live;
  }
  if (!rc && most != lb) {
    fprintf(stderr, "%s: lower_bound %lld, recomputed %lld\n", what, (long long)lb, (long long)most);
    rc = 1;
  }
  free(c.v);
  if (!rc && !quiet)
    printf("  %-28s arena %10lld  lower bound %10lld  (%.1f%% over, %d live pairs checked)\n", what,
           (long long)c.arena, (long long)lb, lb ? 100.0 * (double)(c.arena - lb) / (double)lb : 0.0, pairs);
  return rc;
}

static int run_passes(gv_module *m, const char *list) {
  char buf[256];
  snprintf(buf, sizeof buf, "%s", list);
  for (char *s = strtok(buf, ","); s; s = strtok(NULL, ",")) {
    const gv_pass *p = gv_pass_lookup(s);
    if (!p || p->run(m) || gv_verify(m)) return -1;
  }
  return 0;
}

static int count_fused(const gv_block *b) {
  int n = 0;
  for (const gv_op *op = b->first; op; op = op->next) n += op->code == GV_OP_FUSED;
  return n;
}

/* ---------------------------------------------------------------- models */

static int test_models(void) {
  const char *src = getenv("GALV_SOURCE_DIR");
  char dir[4096];
  snprintf(dir, sizeof dir, "%s/examples/models/torch", src ? src : ".");
  DIR *d = opendir(dir);
  if (!d) {
    printf("  (no %s: model plans skipped)\n", dir);
    return 0;
  }
  int n = 0, rc = 0, fused = 0;
  struct dirent *e;
  while ((e = readdir(d)) && !rc) {
    size_t l = strlen(e->d_name);
    if (l < 6 || strcmp(e->d_name + l - 5, ".onnx") != 0) continue;
    char path[8192];
    snprintf(path, sizeof path, "%s/%s", dir, e->d_name);
    gv_import_options opt = {.batch = 2, .seq = 16, .load_weights = false};
    gv_module *m = gv_import_onnx(path, &opt);
    if (!m) {
      rc = 1;
      break;
    }
    if (run_passes(m, "shape-infer,fold-constants,canonicalize,dce,fuse,memory-plan")) rc = 1;
    if (!rc) fused += count_fused(m->main->body);
    if (!rc) rc = check_plan(m, e->d_name, false);
    gv_module_free(m);
    n++;
  }
  closedir(d);
  CHECK(rc == 0);
  CHECK(n == 0 || fused > 0);
  printf("  %d models planned, %d fused ops\n", n, fused);
  return 0;
}

/* ---------------------------------------------------------------- random programs */

static uint64_t rng = 88172645463325252ull;
static unsigned rnd(unsigned n) {
  rng ^= rng << 13;
  rng ^= rng >> 7;
  rng ^= rng << 17;
  return (unsigned)(rng % n);
}

enum { S48, S8, S41, S84, S32, NSHAPES }; /* [4,8] [8] [4,1] [8,4] [32] */

typedef struct {
  gv_value *v[NSHAPES][256];
  int n[NSHAPES];
} pool;

static gv_value *pick(pool *p, int s) { return p->v[s][rnd((unsigned)p->n[s])]; }
static void put(pool *p, int s, gv_value *v) {
  if (p->n[s] < 256) p->v[s][p->n[s]++] = v;
}

static gv_value *emit(gv_module *m, gv_block *b, gv_opcode code, int n, gv_value **in) {
  gv_op *op = gv_op_new(m, code, n, in, 1);
  gv_op_set_loc(m, op, gv_ops[code].name, NULL);
  gv_block_append(b, op);
  return op->res[0];
}

/* A random program: inputs x [4,8], y [4,8], z [4,1]; parameter w [8]. */
static gv_module *random_program(int nops, float *wdata) {
  gv_module *m = gv_module_new("random");
  gv_func *f = gv_func_new(m, "main");
  m->main = f;
  gv_block *b = f->body;
  pool p = {0};
  const int64_t d48[] = {4, 8}, d41[] = {4, 1}, d8[] = {8};
  put(&p, S48, gv_func_add_arg(m, f, "x", gv_type_make(GV_DT_F32, 2, d48), false));
  put(&p, S48, gv_func_add_arg(m, f, "y", gv_type_make(GV_DT_F32, 2, d48), false));
  put(&p, S41, gv_func_add_arg(m, f, "z", gv_type_make(GV_DT_F32, 2, d41), false));
  put(&p, S8, gv_func_add_arg(m, f, "w", gv_type_make(GV_DT_F32, 1, d8), true));
  f->param_data[3] = wdata;
  static const gv_opcode unary[] = {GV_OP_NEG, GV_OP_TANH, GV_OP_ABS, GV_OP_SIGMOID, GV_OP_RELU};
  static const gv_opcode binary[] = {GV_OP_ADD, GV_OP_MUL, GV_OP_SUB, GV_OP_MAX};
  for (int i = 0; i < nops; i++) {
    int s = (int)rnd(NSHAPES);
    if (!p.n[s]) s = S48;
    gv_value *in[3];
    gv_op *op;
    switch (rnd(9)) {
    case 0: case 1:
      in[0] = pick(&p, s);
      put(&p, s, emit(m, b, unary[rnd(5)], 1, in));
      break;
    case 2: case 3: case 4:
      if (s == S48) {
        in[0] = pick(&p, S48);
        int o = (int)rnd(3);
        in[1] = pick(&p, o == 0 ? S48 : o == 1 ? S8 : S41);
        if (rnd(2)) { gv_value *t = in[0]; in[0] = in[1]; in[1] = t; }
      } else {
        in[0] = pick(&p, s);
        in[1] = pick(&p, s);
      }
      put(&p, s, emit(m, b, binary[rnd(4)], 2, in));
      break;
    case 5: /* where(greater(a, b), a, c) */
      in[0] = pick(&p, S48);
      in[1] = pick(&p, rnd(2) ? S48 : S41);
      gv_value *c = emit(m, b, GV_OP_GREATER, 2, in);
      in[2] = pick(&p, S8);
      in[1] = in[0];
      in[0] = c;
      put(&p, S48, emit(m, b, GV_OP_WHERE, 3, in));
      break;
    case 6: /* reduction or softmax */
      in[0] = pick(&p, S48);
      if (rnd(2)) {
        op = gv_op_new(m, GV_OP_REDUCE_SUM, 1, in, 1);
        int64_t ax = 1;
        gv_set_ints(m, op, "axes", 1, &ax);
        gv_set_int(m, op, "keepdims", 1);
        gv_block_append(b, op);
        put(&p, S41, op->res[0]);
      } else {
        op = gv_op_new(m, GV_OP_SOFTMAX, 1, in, 1);
        gv_set_int(m, op, "axis", -1);
        gv_block_append(b, op);
        put(&p, S48, op->res[0]);
      }
      break;
    case 7: /* transpose [4,8] <-> [8,4] */
      if (s == S84 && p.n[S84]) {
        in[0] = pick(&p, S84);
        put(&p, S48, emit(m, b, GV_OP_TRANSPOSE, 1, in));
      } else {
        in[0] = pick(&p, S48);
        put(&p, S84, emit(m, b, GV_OP_TRANSPOSE, 1, in));
      }
      break;
    default: /* views [4,8] <-> [32] */
      if (s == S32 && p.n[S32]) {
        in[0] = pick(&p, S32);
        gv_value *r = emit(m, b, GV_OP_RESHAPE, 1, in);
        r->type = gv_type_make(GV_DT_F32, 2, d48);
        put(&p, S48, r);
      } else {
        in[0] = pick(&p, S48);
        gv_value *r = emit(m, b, GV_OP_RESHAPE, 1, in);
        int64_t d32 = 32;
        r->type = gv_type_make(GV_DT_F32, 1, &d32);
        put(&p, S32, r);
      }
    }
  }
  /* Return the last values of a few shapes (the rest may die in dce). */
  gv_value *outs[4];
  int nout = 0;
  outs[nout++] = p.v[S48][p.n[S48] - 1];
  if (p.n[S41] > 1) outs[nout++] = p.v[S41][p.n[S41] - 1];
  if (p.n[S32]) outs[nout++] = p.v[S32][p.n[S32] - 1];
  if (rnd(2)) outs[nout++] = pick(&p, S48);
  gv_op *ret = gv_op_new(m, GV_OP_RETURN, nout, outs, 0);
  gv_block_append(b, ret);
  return m;
}

static gv_tensor *random_input(gv_module *m, const gv_type *t) {
  gv_tensor *x = gv_tensor_new(m->arena, *t);
  for (int64_t i = 0; i < gv_tensor_numel(x); i++) gv_tensor_set_f(x, i, (double)((int)rnd(2001) - 1000) / 400.0);
  return x;
}

static int test_random(void) {
  static float w[8];
  for (int i = 0; i < 8; i++) w[i] = (float)i / 4.0f - 1.0f;
  int fused = 0;
  for (int t = 0; t < 300; t++) {
    gv_module *m = random_program(4 + (int)rnd(60), w);
    char what[64];
    snprintf(what, sizeof what, "random #%d", t);
    CHECK(run_passes(m, "shape-infer,dce") == 0);
    const gv_tensor *in[3];
    for (int i = 0; i < 3; i++) in[i] = random_input(m, &m->main->body->args[i]->type);
    gv_tensor **before = NULL, **after = NULL;
    int nb = 0, na = 0;
    CHECK(gv_interpret(m, in, 3, &before, &nb) == 0);
    CHECK(run_passes(m, "fuse,memory-plan") == 0);
    fused += count_fused(m->main->body);
    /* Keep the output short: one line per 50 programs. */
    CHECK(check_plan(m, what, t % 50 != 0) == 0);
    CHECK(gv_interpret(m, in, 3, &after, &na) == 0);
    CHECK(na == nb);
    for (int i = 0; i < na; i++) {
      CHECK(gv_type_equal(&before[i]->type, &after[i]->type));
      size_t bytes = (size_t)gv_tensor_numel(before[i]) * gv_dtype_size(before[i]->type.dtype);
      if (memcmp(before[i]->data, after[i]->data, bytes) != 0) {
        fprintf(stderr, "%s: output %d differs after fuse\n", what, i);
        gv_print_module(m, stderr);
        return 1;
      }
    }
    gv_module_free(m);
  }
  CHECK(fused > 100);
  printf("  300 random programs: %d fused ops, plans and numerics checked\n", fused);
  return 0;
}

int main(void) {
  gv_progname = "test_memory_plan";
  int rc = 0;
  printf("test_memory_plan: models\n");
  rc |= test_models();
  printf("test_memory_plan: random programs\n");
  rc |= test_random();
  printf(rc ? "FAIL\n" : "ok\n");
  return rc;
}
