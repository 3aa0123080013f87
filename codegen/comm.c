/* comm.c — the target-independent part of emitting collectives and SPMD
 * tables (comm.h), used by the CPU emitter (codegen/cpu/emit_comm.c) and the
 * CUDA emitter (codegen/cuda/emit.c); each passes a cg_comm_target with the
 * few statements that differ.
 *
 * Collective ops of the local program (docs/sharding.md) become calls of
 * runtime/galv_comm.h on one queue (galv_q): one galv_comm group per distinct
 * (mesh, axes), created on the first galv_program_run / galv_cu_run; a sync
 * point (the target's `sync` statement: galv_queue_sync on the CPU, the
 * compute stream waiting on the communication stream on the GPU) is emitted
 * before the first op that reads a result still in flight or writes bytes
 * that a call in flight reads or writes (the memory plan may reuse an
 * operand's bytes right after the collective), and at the end of the run.
 * all_gather / reduce_scatter / all_to_all along a dim with a non-unit
 * extent before it pack the blocks to the leading extent (a strided copy into
 * a scratch buffer) and unpack after the call (then the call is synced at
 * once). The rule is ir/comm_sync.h, which the cost model's two-stream
 * simulation follows too. shard_slice is a strided copy at this rank's group
 * coordinate; axis_index stores the coordinate (the target's statement).
 *
 * SPMD tables (runtime/galv_spmd.h): the rank count, per graph input/output
 * (and training state) its global dims and each rank's block start
 * (docs/sharding.md block rule), and the planner's predicted bytes per run per
 * collective kind: the prediction the planner made from the global program
 * (the mesh's predicted_bytes, gv_cost_comm_bytes) — independent of this
 * partitioned program, which the runtime's wire count then checks. Without
 * one (a partitioned program written by hand), the sum of the ops' `bytes`.
 * Both count a value stored 16-bit (the storage pass, ir/storage.h) at 2
 * bytes per element: the prediction from the global program's storage,
 * `bytes` from spmd-partition's. */
#include <stdlib.h>
#include <string.h>

#include "comm.h"
#include "ir/comm_sync.h"
#include "ir/storage.h" /* gv_func_stage_kind */
#include "cpu/cpu.h" /* cg_rt_dtype, cg_c_comment: the runtime's names are the same on both targets */

typedef struct {
  const gv_mesh *mesh;
  unsigned mask;
} group;

struct cg_comm {
  gv_module *m;
  const cg_comm_target *t;
  int nranks;
  const gv_mesh *mesh;     /* the mesh of the program (the first with > 1 device) */
  group *g;
  int ng;
  int64_t scratch[2];      /* bytes of the pack / unpack scratch buffers */
  int64_t predicted[4];    /* all_reduce, all_gather, reduce_scatter, all_to_all; -1: unknown */
  int predicted_global;     /* 1: predicted is the mesh's (from the global program); 0: the ops' bytes */
  int nops;
  gv_comm_sync sync;       /* the calls in flight and the sync rule (ir/comm_sync.h) */
};

int cg_comm_is_op(const gv_op *op) {
  switch (op->code) {
  case GV_OP_ALL_REDUCE:
  case GV_OP_ALL_GATHER:
  case GV_OP_REDUCE_SCATTER:
  case GV_OP_ALL_TO_ALL:
  case GV_OP_SHARD_SLICE:
  case GV_OP_AXIS_INDEX: return 1;
  default: return 0;
  }
}

static int64_t prod(const int64_t *d, int lo, int hi) {
  int64_t n = 1;
  for (int i = lo; i < hi; i++) n *= d[i];
  return n;
}

static int64_t nbytes_of(const gv_type *t) { return gv_type_numel(t) * (int64_t)gv_dtype_size(t->dtype); }

/* The op's mesh and axes mask; group size in *p. */
static int op_group(cg_comm *c, const gv_op *op, int *gi, int64_t *p) {
  gv_module *m = c->m;
  const char *mn = gv_get_str(op, "mesh", NULL);
  const gv_mesh *mesh = mn ? gv_module_mesh(m, mn) : NULL;
  if (!mesh) return gv_error_op(m, op, "%s: galv.%s names no mesh of the module", c->t->who, gv_ops[op->code].name);
  const gv_attr *a = gv_get_attr(op, "axes");
  if (!a || a->kind != GV_ATTR_STRS)
    return gv_error_op(m, op, "%s: galv.%s has no 'axes' (a list of mesh axis names)", c->t->who, gv_ops[op->code].name);
  unsigned mask = 0;
  *p = 1;
  for (int i = 0; i < a->u.strs.n; i++) {
    int ax = gv_mesh_axis(mesh, a->u.strs.v[i], strlen(a->u.strs.v[i]));
    if (ax < 0 || (mask >> ax & 1))
      return gv_error_op(m, op, "%s: axis '%s' is not an axis of mesh '%s' (or repeated)", c->t->who, a->u.strs.v[i],
                         mesh->name);
    mask |= 1u << ax;
    *p *= mesh->size[ax];
  }
  if (c->mesh && gv_mesh_devices(mesh) != c->nranks)
    return gv_error_op(m, op, "%s: mesh '%s' has %lld devices, the program's mesh '%s' %d", c->t->who, mesh->name,
                       (long long)gv_mesh_devices(mesh), c->mesh->name, c->nranks);
  int i = 0;
  while (i < c->ng && !(c->g[i].mesh == mesh && c->g[i].mask == mask)) i++;
  if (i == c->ng) {
    group *ng = realloc(c->g, sizeof *ng * (size_t)(c->ng + 1));
    if (!ng) abort();
    c->g = ng;
    c->g[c->ng++] = (group){mesh, mask};
  }
  *gi = i;
  return 0;
}

/* The block start of rank r along every dim of a value of sharding s and
 * local dims ld (docs/sharding.md: block index = row-major over the dim's
 * axes of the rank's coordinates). */
void cg_block_start(const gv_sharding *s, int rank, const int64_t *ld, int r, int64_t *start) {
  int64_t coord[GV_MAX_MESH_AXES] = {0}, x = r;
  const gv_mesh *mesh = s->mesh;
  for (int a = mesh->naxes - 1; a >= 0; a--) coord[a] = x % mesh->size[a], x /= mesh->size[a];
  for (int d = 0; d < rank; d++) {
    int64_t idx = 0;
    for (int k = 0; d < s->rank && k < s->naxes[d]; k++) idx = idx * mesh->size[s->axes[d][k]] + coord[s->axes[d][k]];
    start[d] = idx * ld[d];
  }
}

int cg_is_split(const gv_sharding *s) {
  if (!s) return 0;
  for (int d = 0; d < s->rank; d++)
    if (s->naxes[d]) return 1;
  return 0;
}


/* f32 value v is stored (and communicated) as bf16 */
static bool stored_bf16(const cg_comm_target *t, const gv_value *v) {
  if (v->type.dtype != GV_DT_F32) return false;
  return t->half ? t->half(t->half_ctx, v) != 0 : t->bf16 != 0;
}

cg_comm *cg_comm_new(gv_module *m, const cg_comm_target *t) {
  cg_comm *c = calloc(1, sizeof *c);
  if (!c) abort();
  c->m = m;
  c->t = t;
  c->nranks = 1;
  for (int i = 0; i < m->nmeshes; i++) {
    int64_t n = gv_mesh_devices(m->meshes[i]);
    if (n <= 1) continue;
    if (c->mesh && n != c->nranks) {
      gv_error(m, "%s: meshes '%s' (%lld devices) and '%s' (%d) differ in size; one program runs on one "
                  "set of ranks", c->t->who, m->meshes[i]->name, (long long)n, c->mesh->name, c->nranks);
      cg_comm_free(c);
      return NULL;
    }
    if (n > 4096) {
      gv_error(m, "%s: mesh '%s' has %lld devices (at most 4096)", c->t->who, m->meshes[i]->name, (long long)n);
      cg_comm_free(c);
      return NULL;
    }
    c->mesh = m->meshes[i];
    c->nranks = (int)n;
  }
  for (int k = 0; k < 4; k++) c->predicted[k] = 0;
  gv_block *body = m->main ? m->main->body : NULL;
  gv_comm_sync_init(&c->sync, m);
  for (const gv_op *op = body ? body->first : NULL; op; op = op->next) {
    if (!cg_comm_is_op(op)) continue;
    int gi;
    int64_t p;
    if (op_group(c, op, &gi, &p)) {
      cg_comm_free(c);
      return NULL;
    }
    c->nops++;
    int kind = op->code == GV_OP_ALL_REDUCE ? 0 : op->code == GV_OP_ALL_GATHER ? 1 : op->code == GV_OP_REDUCE_SCATTER ? 2
               : op->code == GV_OP_ALL_TO_ALL ? 3 : -1;
    if (kind >= 0) {
      int64_t b = gv_get_int(op, "bytes", -1);
      if (b < 0 || c->predicted[kind] < 0) c->predicted[kind] = -1;
      else c->predicted[kind] += b;
      int64_t in = nbytes_of(&op->opnds[0]->type), out = nbytes_of(&op->res[0]->type);
      if (gv_get_attr(op, "bucket")) in = out = 0; /* a gradient bucket's buffer is contiguous: no pack / unpack scratch */
      for (int s = 0; s < 2; s++)
        if (c->scratch[s] < (in > out ? in : out)) c->scratch[s] = in > out ? in : out;
    }
  }
  if (c->mesh && c->mesh->has_predicted)
    for (int k = 0; k < 4; k++) c->predicted[k] = c->mesh->predicted[k], c->predicted_global = 1;
  return c;
}

void cg_comm_free(cg_comm *c) {
  if (!c) return;
  free(c->g);
  gv_comm_sync_free(&c->sync);
  free(c);
}

int cg_comm_nranks(const cg_comm *c) { return c ? c->nranks : 1; }
gv_module *cg_comm_module(const cg_comm *c) { return c->m; }

static void dims_lit(FILE *f, int n, const int64_t *d) {
  fputc('{', f);
  for (int i = 0; i < n; i++) fprintf(f, "%s%lld", i ? ", " : "", (long long)d[i]);
  if (!n) fputc('0', f);
  fputc('}', f);
}

/* One table entry per graph input / output: global dims, per-rank starts. */
static int split_table(cg_comm *c, FILE *f, const char *name, int n, const gv_value *const *v, int outputs) {
  gv_module *m = c->m;
  for (int i = 0; i < n; i++) {
    const gv_sharding *s = gv_value_sharding(m, v[i]);
    /* a training stage's parameter gradient left unreduced (ZeRO-2, galvc --pipeline-zero 2): each rank's share,
     * laid out whole; the runtime sums the shares (its galv_pipe_zero_partial table) */
    const char *rn = outputs && i < m->main->nres_names && m->main->res_names ? m->main->res_names[i] : NULL;
    bool zero2 = rn && !strncmp(rn, "grad:", 5) && strncmp(rn, "grad:pp.", 8) && gv_func_stage_kind(m->main) == 2;
    if (s && s->partial && c->nranks > 1 && !zero2)
      return gv_error(m, "%s: %s %d is a pending sum (partial); graph %ss must be replicated or split", c->t->who, outputs ? "output" : "input", i,
                      outputs ? "output" : "input");
    if (!cg_is_split(s) || c->nranks == 1) continue;
    fprintf(f, "static const int64_t %s_starts%d[] = {", name, i);
    for (int r = 0; r < c->nranks; r++) {
      int64_t st[GV_MAX_RANK];
      cg_block_start(s, v[i]->type.rank, v[i]->type.dims, r, st);
      for (int d = 0; d < v[i]->type.rank; d++) fprintf(f, "%s%lld", r || d ? ", " : "", (long long)st[d]);
    }
    fprintf(f, "};\n");
  }
  fprintf(f, "const galv_io_split %s[] = {\n", name);
  for (int i = 0; i < n; i++) {
    const gv_sharding *s = gv_value_sharding(m, v[i]);
    int64_t g[GV_MAX_RANK];
    for (int d = 0; d < v[i]->type.rank; d++)
      g[d] = v[i]->type.dims[d] * (s && c->nranks > 1 && d < s->rank ? gv_sharding_dim_split(s, d) : 1);
    fputs("  {", f);
    dims_lit(f, v[i]->type.rank, g);
    if (cg_is_split(s) && c->nranks > 1) fprintf(f, ", %s_starts%d},\n", name, i);
    else fputs(", NULL},\n", f);
  }
  if (!n) fputs("  {{0}, NULL}\n", f);
  fputs("};\n", f);
  return 0;
}

int cg_comm_decls(cg_comm *c, FILE *f) {
  gv_module *m = c->m;
  gv_func *fn = m->main;
  gv_block *body = fn->body;
  fprintf(f, "\n/* ---- ranks and communication (runtime/galv_spmd.h, docs/cpu-target.md) */\n");
  fprintf(f, "const int galv_nranks = %d;\n", c->nranks);
  /* inputs: the non-parameter arguments in the arena, as emit.c lists them */
  const gv_value **iv = calloc((size_t)body->nargs + 1, sizeof *iv);
  if (!iv) abort();
  int ni = 0;
  for (int i = 0; i < body->nargs; i++)
    if (!fn->arg_is_param[i] && !(fn->arg_is_state && fn->arg_is_state[i])) iv[ni++] = body->args[i];
  int rc = split_table(c, f, "galv_input_split", ni, iv, 0);
  free(iv);
  if (rc) return -1;
  const gv_op *ret = gv_block_terminator(body);
  if (split_table(c, f, "galv_output_split", ret ? ret->nopnds : 0, (const gv_value *const *)(ret ? ret->opnds : NULL), 1))
    return -1;
  /* training: every parameter and optimizer-state argument, in the order
   * of emit.c's galv_state table (arguments in order) */
  const gv_value **sv = calloc((size_t)body->nargs + 1, sizeof *sv);
  if (!sv) abort();
  int ns = 0;
  for (int i = 0; fn->res_updates && i < body->nargs; i++)
    if (fn->arg_is_param[i] || (fn->arg_is_state && fn->arg_is_state[i])) sv[ns++] = body->args[i];
  rc = split_table(c, f, "galv_state_split", ns, sv, 0);
  free(sv);
  if (rc) return -1;
  fprintf(f, "const int64_t galv_comm_predicted[4] = {%lld, %lld, %lld, %lld};\n", (long long)c->predicted[0],
          (long long)c->predicted[1], (long long)c->predicted[2], (long long)c->predicted[3]);
  fprintf(f, "const int galv_comm_predicted_global = %d;\n", c->predicted_global);
  if (!c->nops) {
    fprintf(f, "void galv_program_comm_free(void) {}\n\n");
    return 0;
  }
  fprintf(f, "static galv_comm *galv_g[%d];\nstatic galv_queue *galv_q;\nstatic char *galv_scratch[2];\n", c->ng);
  fprintf(f, "static void galv_comm_setup(void) {\n");
  for (int i = 0; i < c->ng; i++) {
    fprintf(f, "  { static const int64_t s[] = ");
    dims_lit(f, c->g[i].mesh->naxes, c->g[i].mesh->size);
    fprintf(f, "; galv_g[%d] = galv_comm_group(s, %d, 0x%xu); } /* mesh '", i, c->g[i].mesh->naxes, c->g[i].mask);
    cg_c_comment(f, c->g[i].mesh->name);
    fprintf(f, "' axes");
    for (int a = 0; a < c->g[i].mesh->naxes; a++)
      if (c->g[i].mask >> a & 1) fprintf(f, " "), cg_c_comment(f, c->g[i].mesh->axis[a]);
    fprintf(f, " */\n");
  }
  fprintf(f, "  galv_q = galv_queue_new();\n");
  for (int s = 0; s < 2; s++)
    fprintf(f, c->t->scratch_alloc, s, (long long)(c->scratch[s] ? c->scratch[s] : 1));
  fprintf(f, "}\nvoid galv_program_comm_free(void) {\n  if (galv_q) galv_queue_free(galv_q);\n  galv_q = NULL;\n");
  for (int s = 0; s < 2; s++) fprintf(f, c->t->scratch_free, s);
  fprintf(f, "  galv_scratch[0] = galv_scratch[1] = NULL;\n}\n\n");
  return 0;
}

void cg_comm_run_start(cg_comm *c, FILE *f) {
  gv_comm_sync_clear(&c->sync);
  if (c->nops) fprintf(f, "  if (!galv_q) galv_comm_setup();\n");
}

void cg_comm_before_op(cg_comm *c, FILE *f, const gv_op *op) {
  if (gv_comm_sync_before(&c->sync, op)) {
    fputs(c->t->sync, f);
    gv_comm_sync_clear(&c->sync);
    return;
  }
  int k = gv_comm_sync_prefix(&c->sync, op); /* the overlap window: the oldest k calls, the newest n - k stay in flight */
  if (k > 0) {
    fprintf(f, c->t->sync_keep, c->sync.n - k);
    gv_comm_sync_drop(&c->sync, k);
  }
}

void cg_comm_run_end(cg_comm *c, FILE *f) {
  if (c->sync.n) fputs(c->t->end, f);
  gv_comm_sync_clear(&c->sync);
}

static void add_pending(cg_comm *c, FILE *f, const gv_op *op) {
  gv_comm_sync_post(&c->sync, op);
  /* debug builds poison the operand after its last use (this op): MPI must
   * have read it by then (ASan intercepts the library's memcpy too) */
  fputs(c->t->in_flight, f);
}

/* dst [outer, p, chunk] (contiguous) <- src [p, outer, chunk]: unpack after a
 * call that leaves the p blocks leading. */
static void emit_unpack(cg_comm *c, FILE *f, const char *dst, const char *src, size_t es, int64_t p, int64_t outer, int64_t chunk) {
  fprintf(f, "  { static const int64_t d[] = {%lld, %lld, %lld}, s[] = {%lld, %lld, 1};\n"
             "    %s(%s, %s, %zu, 3, d, s); }\n",
          (long long)outer, (long long)p, (long long)chunk, (long long)chunk, (long long)(outer * chunk), c->t->copy, dst, src, es);
}
/* dst [p, outer, chunk] (contiguous) <- src [outer, p, chunk]: pack the p blocks to the leading extent. */
static void emit_pack(cg_comm *c, FILE *f, const char *dst, const char *src, size_t es, int64_t p, int64_t outer, int64_t chunk) {
  fprintf(f, "  { static const int64_t d[] = {%lld, %lld, %lld}, s[] = {%lld, %lld, 1};\n"
             "    %s(%s, %s, %zu, 3, d, s); }\n",
          (long long)p, (long long)outer, (long long)chunk, (long long)chunk, (long long)(p * chunk), c->t->copy, dst, src, es);
}

int cg_emit_comm_op(cg_comm *c, FILE *f, const gv_op *op, char p[][64]) {
  if (!cg_comm_is_op(op)) return 1;
  gv_module *m = c->m;
  int gi;
  int64_t np;
  if (op_group(c, op, &gi, &np)) return -1;
  const gv_type *o = &op->res[0]->type;
  if (op->code == GV_OP_AXIS_INDEX) {
    if (o->dtype != GV_DT_I64 || gv_type_numel(o) != 1) return gv_error_op(m, op, "%s: axis_index must give tensor<i64>", c->t->who);
    fprintf(f, c->t->axis_index, p[0], gi);
    return 0;
  }
  const gv_type *x = &op->opnds[0]->type;
  const char *dt = cg_rt_dtype(x->dtype);
  size_t es = gv_dtype_size(x->dtype);
  if (stored_bf16(c->t, op->opnds[0])) dt = c->t->half_dt ? c->t->half_dt : "GALV_BF16", es = 2; /* f32 stored 16-bit */
  if (!dt || x->dtype != o->dtype) return gv_error_op(m, op, "%s: galv.%s on %s is not supported", c->t->who, gv_ops[op->code].name, gv_dtype_name(x->dtype));
  /* a collective moves its operand's elements unconverted into the result's slot: both stored alike (the storage
   * plan's rule, ir/storage.c); an fp32 operand into a 16-bit slot would overrun it */
  if (stored_bf16(c->t, op->opnds[0]) != stored_bf16(c->t, op->res[0]))
    return gv_error_op(m, op, "%s: galv.%s moves a value stored %s into a result stored %s (internal error: the storage "
                              "plan stores a collective's result like its operand)", c->t->who, gv_ops[op->code].name,
                       stored_bf16(c->t, op->opnds[0]) ? "16-bit" : "fp32", stored_bf16(c->t, op->res[0]) ? "16-bit" : "fp32");
  const char *X = p[0], *R = p[1];
  int64_t n = gv_type_numel(x);
  char xs[96];
  snprintf(xs, sizeof xs, "(const void *)%s", X);
  switch (op->code) {
  case GV_OP_ALL_REDUCE: {
    const char *red = gv_get_str(op, "reduce", "sum");
    if (strcmp(red, "sum") && strcmp(red, "max")) return gv_error_op(m, op, "%s: all_reduce reduce '%s' (sum or max)", c->t->who, red);
    if (!gv_type_equal(x, o)) return gv_error_op(m, op, "%s: all_reduce result type differs from its operand's", c->t->who);
    fprintf(f, "  galv_all_reduce(galv_g[%d], %s, %s, %lld, %s, %s, galv_q);\n", gi, xs, R, (long long)n, dt,
            strcmp(red, "max") ? "GALV_RED_SUM" : "GALV_RED_MAX");
    add_pending(c, f, op);
    return 0;
  }
  case GV_OP_ALL_GATHER:
  case GV_OP_SHARD_SLICE:
  case GV_OP_REDUCE_SCATTER: {
    int64_t dim = gv_get_int(op, "dim", 0);
    int gather = op->code == GV_OP_ALL_GATHER;
    const gv_type *full = gather ? o : x, *part = gather ? x : o;
    if (dim < 0 || dim >= x->rank || o->rank != x->rank)
      return gv_error_op(m, op, "%s: galv.%s dim %lld out of range", c->t->who, gv_ops[op->code].name, (long long)dim);
    for (int d = 0; d < x->rank; d++)
      if (full->dims[d] != part->dims[d] * (d == dim ? np : 1))
        return gv_error_op(m, op, "%s: galv.%s result type does not match a group of %lld along dim %lld", c->t->who,
                           gv_ops[op->code].name, (long long)np, (long long)dim);
    int64_t outer = prod(part->dims, 0, (int)dim), chunk = part->dims[dim] * prod(part->dims, (int)dim + 1, part->rank);
    if (op->code == GV_OP_SHARD_SLICE) {
      fprintf(f, "  { static const int64_t d[] = {%lld, %lld}, s[] = {%lld, 1};\n"
                 "    %s(%s, (const char *)%s + (size_t)galv_comm_rank(galv_g[%d]) * %lld, %zu, 2, d, s); }\n",
              (long long)outer, (long long)chunk, (long long)(np * chunk), c->t->copy, R, X, gi, (long long)(chunk * (int64_t)es), es);
      return 0;
    }
    if (gather) {
      if (outer == 1) {
        fprintf(f, "  galv_all_gather(galv_g[%d], %s, %s, %lld, %s, galv_q);\n", gi, xs, R, (long long)n, dt);
        add_pending(c, f, op);
      } else {
        fprintf(f, "  galv_all_gather(galv_g[%d], %s, galv_scratch[1], %lld, %s, galv_q);\n%s",
                gi, xs, (long long)n, dt, c->t->sync);
        gv_comm_sync_clear(&c->sync);
        emit_unpack(c, f, R, "galv_scratch[1]", es, np, outer, chunk);
      }
      return 0;
    }
    const char *red = gv_get_str(op, "reduce", "sum");
    if (strcmp(red, "sum") && strcmp(red, "max")) return gv_error_op(m, op, "%s: reduce_scatter reduce '%s' (sum or max)", c->t->who, red);
    const char *rop = strcmp(red, "max") ? "GALV_RED_SUM" : "GALV_RED_MAX";
    if (outer == 1) {
      fprintf(f, "  galv_reduce_scatter(galv_g[%d], %s, %s, %lld, %s, %s, galv_q);\n", gi, xs, R,
              (long long)gv_type_numel(o), dt, rop);
      add_pending(c, f, op);
    } else {
      emit_pack(c, f, "galv_scratch[0]", X, es, np, outer, chunk);
      fprintf(f, "  galv_reduce_scatter(galv_g[%d], galv_scratch[0], %s, %lld, %s, %s, galv_q);\n%s",
              gi, R, (long long)gv_type_numel(o), dt, rop, c->t->sync);
      gv_comm_sync_clear(&c->sync);
    }
    return 0;
  }
  case GV_OP_ALL_TO_ALL: {
    int64_t sd = gv_get_int(op, "split_dim", -1), cd = gv_get_int(op, "concat_dim", -1);
    if (sd < 0 || sd >= x->rank || cd < 0 || cd >= x->rank || o->rank != x->rank)
      return gv_error_op(m, op, "%s: all_to_all split_dim/concat_dim out of range", c->t->who);
    int64_t b[GV_MAX_RANK]; /* the block shape */
    for (int d = 0; d < x->rank; d++) b[d] = x->dims[d];
    if (b[sd] % np) return gv_error_op(m, op, "%s: all_to_all split dim %lld is not divisible by %lld", c->t->who, (long long)sd, (long long)np);
    b[sd] /= np;
    for (int d = 0; d < x->rank; d++)
      if (o->dims[d] != b[d] * (d == cd ? np : 1))
        return gv_error_op(m, op, "%s: all_to_all result type does not match split_dim %lld, concat_dim %lld over %lld ranks", c->t->who,
                           (long long)sd, (long long)cd, (long long)np);
    int64_t souter = prod(x->dims, 0, (int)sd), schunk = b[sd] * prod(x->dims, (int)sd + 1, x->rank);
    int64_t couter = prod(b, 0, (int)cd), cchunk = b[cd] * prod(b, (int)cd + 1, x->rank), cnt = n / np;
    const char *src = xs, *dst = R;
    if (souter > 1) emit_pack(c, f, "galv_scratch[0]", X, es, np, souter, schunk), src = "galv_scratch[0]";
    if (couter > 1) dst = "galv_scratch[1]";
    fprintf(f, "  galv_all_to_all(galv_g[%d], %s, %s, %lld, %s, galv_q);\n", gi, src, dst, (long long)cnt, dt);
    if (souter > 1 || couter > 1) {
      fputs(c->t->sync, f);
      gv_comm_sync_clear(&c->sync);
      if (couter > 1) emit_unpack(c, f, R, "galv_scratch[1]", es, np, couter, cchunk);
    } else {
      add_pending(c, f, op);
    }
    return 0;
  }
  default: return 1;
  }
}


/* ---------------------------------------------------------------- launch scripts
 *
 * The sh function every launch script (SPMD: codegen/cpu/emit_comm.c;
 * pipeline: tools/galvc_pipeline.c) runs mpirun through, so that neither
 * hides a failure nor buries it in banners: the ranks' own lines (their
 * error line included) pass through; mpirun's dash-framed banners are
 * dropped (so are the help-aggregation notes and ORTE_ERROR_LOG lines of
 * an aborted job), and the one that says a rank died of a signal (the rank itself
 * prints nothing) becomes one line naming the rank, its host, its program
 * and the signal; a rank that ended non-zero without a line of its own is
 * named from the banner too. The exit status is mpirun's (128 + the signal
 * for a killed rank). GALV_WHO names the program (SPMD) or the directory
 * (pipeline, with GALV_RANKS: each rank's stage folder, in rank order). */
const char cg_launch_mpirun_sh[] =
    "# galv_mpirun MPIRUN ARGS..: the ranks' lines pass; mpirun's banners become one line naming\n"
    "# the failing rank, its host and the cause (a rank killed by a signal prints nothing itself)\n"
    "galv_mpirun() {\n"
    "  t=$(mktemp -d \"${TMPDIR:-/tmp}/galv-launch.XXXXXX\") || exit 1\n"
    "  exec 3>&1\n"
    "  { \"$@\" 2>&1 1>&3 3>&-; echo $? >\"$t/rc\"; } | awk -v who=\"$GALV_WHO\" -v ranks=\"${GALV_RANKS:-}\" -v told=\"$t/told\" '\n"
    "    BEGIN { split(\"HUP INT QUIT ILL TRAP ABRT BUS FPE KILL USR1 SEGV USR2 PIPE ALRM TERM\", sn, \" \") }\n"
    "    function prog(r,  rs) { if (ranks == \"\") return who; split(ranks, rs, \" \"); return who \"/\" rs[r + 1] \"/program\" }\n"
    "    /^--------------------/ { blk = !blk; next }\n"
    "    blk && /^mpirun noticed that process rank [0-9]+ with PID [0-9]+ on node .* exited on signal [0-9]+/ {\n"
    "      s = $0; sub(/^mpirun noticed that process rank /, \"\", s); r = s; sub(/ .*$/, \"\", r)\n"
    "      h = s; sub(/^.* on node /, \"\", h); sub(/ exited on signal .*$/, \"\", h)\n"
    "      g = s; sub(/^.* exited on signal /, \"\", g); sub(/[^0-9].*$/, \"\", g)\n"
    "      printf \"launch: error: rank %s on host %s (%s) was killed by signal %s (SIG%s); mpirun stopped the other ranks\\n\",\n"
    "        r, h, prog(r), g, (g in sn) ? sn[g] : \"?\"\n"
    "      fflush(); said = 1; next\n"
    "    }\n"
    "    blk && /Process name: \\[\\[[0-9]+,[0-9]+\\],[0-9]+\\]/ { s = $0; sub(/^.*\\],/, \"\", s); sub(/\\].*$/, \"\", s); er = s; next }\n"
    "    blk && /Exit code: *[0-9]+/ { s = $0; sub(/^.*Exit code: */, \"\", s); ec = s; next }\n"
    "    blk || /^\\[[^]]*\\] [0-9]+ more process/ || /^\\[[^]]*\\] .*ORTE_ERROR_LOG/ ||\n"
    "      /^(\\[[^]]*\\] )?Set MCA parameter \"orte_base_help_aggregate\"/ { next }\n"
    "    { print; fflush(); lines++ }\n"
    "    END {\n"
    "      if (!said && !lines && er != \"\" && ec != \"\") {\n"
    "        printf \"launch: error: rank %s (%s) exited with status %s and no error line\\n\", er, prog(er), ec; said = 1\n"
    "      }\n"
    "      if (said) printf \"\" > told\n"
    "    }' >&2\n"
    "  exec 3>&-\n"
    "  rc=$(cat \"$t/rc\" 2>/dev/null || echo 1)\n"
    "  if [ \"$rc\" -gt 128 ] && [ \"$rc\" -lt 160 ] && [ ! -e \"$t/told\" ]; then\n"
    "    echo \"launch: error: a rank of $GALV_WHO was killed by signal $((rc - 128)) (SIG$(kill -l $((rc - 128)) 2>/dev/null)); mpirun stopped the other ranks\" >&2\n"
    "  fi\n"
    "  rm -rf \"$t\"\n"
    "  return \"$rc\"\n"
    "}\n";

/* The sh function galv_place of the pipeline's launch script: with
 * GALV_HOSTS (host names, comma- or space-separated, one per node in the
 * plan's node order) or GALV_HOSTFILE (a file whose lines' first words are
 * those names; OpenMPI's hostfile format reads so), it writes an OpenMPI
 * rankfile to $1 placing each rank on the node of its device: GALV_DEVS
 * lists each rank's device in the plan (rank order), GALV_PER_NODE the
 * plan's devices per node, so device D is on host D / GALV_PER_NODE and is
 * that node's GPU D mod GALV_PER_NODE. Interleaved 1F1B's V ranks of a
 * device group have the same devices (runtime/pipe.c galv_pipe_device_slot),
 * so they share their node and GPU, where mpirun's own mapping fills nodes in
 * rank order. Each rank is bound to its GPU's share of the node's cores
 * (GALV_CORES_PER_NODE, else this machine's count: nodes alike). Returns 1
 * with one line when the hosts are fewer than the plan's nodes; 0 without
 * GALV_HOSTS / GALV_HOSTFILE (mpirun's own mapping, $1 not written). */
const char cg_launch_place_sh[] =
    "# galv_place FILE: GALV_HOSTS / GALV_HOSTFILE -> a rankfile placing each rank on its device's node\n"
    "galv_place() {\n"
    "  h=${GALV_HOSTS:-}\n"
    "  if [ -z \"$h\" ] && [ -n \"${GALV_HOSTFILE:-}\" ]; then\n"
    "    if [ ! -r \"$GALV_HOSTFILE\" ]; then echo \"launch: error: GALV_HOSTFILE $GALV_HOSTFILE: cannot read it\" >&2; return 1; fi\n"
    "    h=$(awk '!/^[ \\t]*(#|$)/ { print $1 }' \"$GALV_HOSTFILE\")\n"
    "    if [ -z \"$h\" ]; then echo \"launch: error: GALV_HOSTFILE $GALV_HOSTFILE names no host\" >&2; return 1; fi\n"
    "  fi\n"
    "  [ -z \"$h\" ] && return 0\n"
    "  c=${GALV_CORES_PER_NODE:-$(nproc 2>/dev/null || echo 1)}\n"
    "  printf '%s\\n' \"$h\" | tr ', ' '\\n\\n' | awk -v devs=\"$GALV_DEVS\" -v pn=\"$GALV_PER_NODE\" -v cores=\"$c\" -v out=\"$1\" '\n"
    "    NF { host[n++] = $1 }\n"
    "    END {\n"
    "      k = split(devs, d, \" \"); need = 0\n"
    "      for (i = 1; i <= k; i++) if (int(d[i] / pn) + 1 > need) need = int(d[i] / pn) + 1\n"
    "      if (n < need) {\n"
    "        m = sprintf(\"launch: error: the plan places its %d ranks on %d node%s of %d devices, but GALV_HOSTS / \", k, need,\n"
    "                    need > 1 ? \"s\" : \"\", pn)\n"
    "        m = m sprintf(\"GALV_HOSTFILE name%s %d host%s\", n == 1 ? \"s\" : \"\", n, n == 1 ? \"\" : \"s\")\n"
    "        print m > \"/dev/stderr\"\n"
    "        exit 1\n"
    "      }\n"
    "      cores += 0; if (cores < 1) cores = 1; per = int(cores / pn)\n"
    "      for (i = 1; i <= k; i++) {\n"
    "        g = d[i] % pn\n"
    "        slot = per > 1 ? (g * per) \"-\" (g * per + per - 1) : per == 1 ? g : g % cores\n"
    "        printf \"rank %d=%s slot=%s\\n\", i - 1, host[int(d[i] / pn)], slot > out\n"
    "      }\n"
    "    }'\n"
    "}\n";
