/* plan_sharding.c — `plan-sharding`: the intra-operator planner (issue 6,
 * docs/planner.md).
 *
 * Decision variables. Ops that follow an operand (elementwise, reshape,
 * transpose, reductions, attention) carry no choice of their own: they are
 * merged into the parameters that drive them, and propagate-sharding gives
 * them their shardings. What remains is, per plan: the mesh shape, the
 * axes that split the batch (dmask), the layers' Megatron axis (t_layer:
 * column-parallel / row-parallel dots as the tp preset finds them), the
 * vocab-parallel axis of embedding and head (t_outer), and per unit (the
 * outer part, then each layer: the repeated blocks of the forward program,
 * found by structure, layer_units.h) whether it is ZeRO-3 sharded over the batch axes
 * and, under a tp axis, whether it runs sequence parallelism (sp_extend) and,
 * per layer, its own tp choice: t_layer, none or another non-batch axis
 * (tp_extend, with the transitions between consecutive layers priced in a
 * chain DP, tp_knapsack).
 *
 * Costs. A candidate is realised: the module is cloned, the plan pinned,
 * and propagate-sharding, spmd-partition, fuse, storage and memory-plan run
 * on the clone; every op's time (planner/cost.h: roofline, alpha-beta collectives
 * per mesh axis) is attributed to the unit its ONNX node belongs to. Costs
 * are integer ns, so ties are exact. ZeRO of one unit changes no
 * activation sharding, so unit costs are independent of the other units'
 * ZeRO choices: two realisations per (mesh, dmask, t_layer, t_outer)
 * (ZeRO on even / on odd units) give every unit's time and state memory
 * under both choices, and the exact minimum over the 2^units ZeRO patterns
 * within the memory limit is a knapsack solved by DP over memory (granule
 * limit / 100000, sizes rounded up). The arena is not additive: it holds
 * the gathered parameters of the ZeRO units, so the no-ZeRO pattern is
 * realised too and the even / odd realisations' arena growth is charged to
 * their ZeRO units (in proportion to the state each saves). Each pattern
 * the DP picks is realised: its time and memory are the reported ones; one
 * that does not fit shrinks the budget by its excess, one that fits grows
 * it by its slack, and the DP runs again until a pattern repeats.
 *
 * The cost model stays data this pass reads (planner/cost.c, the cluster
 * JSON); no cost constant lives here.
 *
 * Search time (docs/planner.md, "Runs of the default training search"):
 * a program planned again in the same process takes the earlier search's
 * outcome; the reduced search decides from the unit tables whether
 * anything fits before it realises the uniform patterns; and a combination
 * whose compute alone is at least twice the runner-up's step is pruned
 * after its first realisations.
 */
#define _GNU_SOURCE /* fopencookie: the search key hashes the printed module */
#include "plan_sharding.h"
#include "sharding_roles.h"
#include "../runtime/galv_file.h"

/* --plan files: their size, and each mesh axis's (so the product of the axes cannot overflow) */
enum { GV_PLAN_FILE_MAX = 16 << 20, GV_PLAN_AXIS_MAX = 1 << 20 };

#include <fcntl.h>
#include <stdio.h>
#include <stdio_ext.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "../planner/cost.h"
#include "../planner/json.h"
#include "../planner/profile.h"
#include "../ir/comm_sync.h"
#include "../ir/storage.h"
#include "layer_units.h"
#include "passes.h"

gv_plan_options gv_plan_opts;
static gv_plan last_plan; /* the plan the pass pinned (--report-cost with --profile) */
static int64_t prof_lacking_tp; /* a tp degree a candidate had and the profile has no figures for (0: none) */
static const char *prof_lacking_field; /* ... in this field of the file */
static bool last_plan_set;

enum { ROLE_NONE = 0, ROLE_COL, ROLE_ROW, ROLE_VOCAB, ROLE_HEAD };

typedef struct {
  const gv_module *m;
  const gv_cluster *c;
  int nargs;
  int *unit;      /* per arg */
  int *role;      /* per arg (params) */
  int *tpdim;     /* per arg: the dim the tp / vocab axis splits, -1 */
  int *param_of;  /* per arg: a state's parameter arg, -1 */
  gv_layer_units lu; /* the units, found by structure (layer_units.h) */
  int nl;            /* layers: units 1..nl */
  bool train;
  bool outer_roles, layer_roles;
  int64_t limit;
  int64_t realised;
  int64_t batch;  /* gcd of the data inputs' dim 0 (those not of size 1); 1 when none splits */
  int64_t mb_batch; /* ... one microbatch's share of it (batch / the microbatch copies; batch without them) */
  struct reduced *red; /* repeated layers costed once (plan_search), NULL: every candidate realised in full */
  bool mem_only;       /* reduced search: the unit tables alone, the uniform patterns' steps not realised (plan_search) */
  bool no_prune;       /* reduced search: every combination's table made (no bound prunes one) */
  bool pruned;         /* reduced search: a combination was pruned by its bound */
  int64_t inc_pruned;  /* combinations left out by gv_plan_opts.incumbent_ns's bound (solve_reduced) */
  int64_t fb_ns;       /* the last realisation's forward, backward and recomputation compute (cost_ops) */
  int64_t tpc_ns;      /* ... and its collectives on no batch axis of the plan (tp, vocab; cost_ops): the ZeRO pattern
                        * moves none of them (ZeRO acts on the batch axes) */
  uint64_t memo;       /* the program's key for the realisations kept (realise); 0: none kept */
  double work_ns;      /* the program's FLOPs at the cluster's highest peak, ns on one device (idle_bound); < 0: not yet */
} ctx;

/* ---------------------------------------------------------------- units */

/* The unit of an op location (layer_units.h: found by structure). */
static int unit_of(const ctx *C, const char *loc) { return gv_layer_units_loc(&C->lu, loc); }

/* Unit u's tensor-parallel axis under p (-1 none): the outer unit's vocab
 * axis, a layer's own axis (tp_unit) or the layers' t_layer. */
static int unit_tp(const gv_plan *p, int u) {
  if (!u) return p->t_outer;
  return p->tp_unit[u] > 0 ? p->tp_unit[u] - 1 : p->tp_unit[u] < 0 ? -1 : p->t_layer;
}

/* Sequence parallelism per unit (plan.json's "sp"): propagate-sharding's
 * region filter (gv_shard_opts.sp_op) asks for the unit of each op by its
 * location, as unit_of does; the copy outlives the pass for the main
 * module's propagate-sharding (lu: the pass's units, kept for it). */
typedef struct {
  char axis[16];
  const gv_layer_units *lu;
  uint8_t sp[GV_PLAN_MAX_UNITS];
} plan_sp;

static bool plan_sp_op(const gv_op *op, void *arg) {
  const plan_sp *s = arg;
  return s->sp[gv_layer_units_loc(s->lu, op->loc)] != 0;
}

/* Points gv_shard_opts at s filled from p (nothing when p has no sp unit). */
static void plan_sp_set(plan_sp *s, const ctx *C, const gv_plan *p) {
  if (gv_plan_opts.intra_sp && p->t_layer >= 0) { /* a stage compiled from --strategy dp,tp,sp: sp on every op, as the
                                                  * preset's propagate-sharding applies it */
    snprintf(s->axis, sizeof s->axis, "%s", p->axis[p->t_layer]);
    gv_shard_opts.sp_axis = s->axis;
    gv_shard_opts.sp_op = NULL;
    return;
  }
  bool any = false;
  for (int u = 0; u < p->nunits; u++) any |= p->sp[u] != 0;
  if (!any || p->t_layer < 0 || C->nl >= GV_PLAN_MAX_UNITS) return;
  snprintf(s->axis, sizeof s->axis, "%s", p->axis[p->t_layer]);
  s->lu = &C->lu;
  memcpy(s->sp, p->sp, (size_t)p->nunits);
  gv_shard_opts.sp_axis = s->axis;
  gv_shard_opts.sp_op = plan_sp_op;
  gv_shard_opts.sp_arg = s;
}

/* ---------------------------------------------------------------- roles (as the tp preset finds them) */

static bool is_param(const gv_module *m, const gv_value *v) {
  const gv_func *f = m->main;
  return v && !v->def && v->block == f->body && f->arg_is_param && f->arg_is_param[v->index];
}

static void ctx_free(ctx *C) {
  free(C->unit);
  free(C->role);
  free(C->tpdim);
  free(C->param_of);
  gv_layer_units_free(&C->lu);
}

/* A data input that carries no batch (gv_plan_opts.intra_batch: a pipeline stage's input whose dim 0 the
 * microbatch's samples do not divide, such as a causal mask an earlier stage made from constants): no batch axis
 * splits it, and it does not set the program's batch. */
static bool no_batch(const gv_value *v) {
  int64_t b = gv_plan_opts.intra_batch;
  return b > 0 && v->type.rank >= 1 && v->type.dims[0] > 0 && v->type.dims[0] % b != 0;
}

static int64_t microbatch_copies(const gv_module *m);

static int ctx_init(ctx *C, const gv_module *m, const gv_cluster *c, int64_t limit) {
  memset(C, 0, sizeof *C);
  C->work_ns = -1;
  const gv_func *f = m->main;
  int n = f->body->nargs;
  C->m = m;
  C->c = c;
  C->nargs = n;
  C->limit = limit ? limit : c->memory_bytes;
  C->unit = calloc((size_t)n + 1, sizeof *C->unit);
  C->role = calloc((size_t)n + 1, sizeof *C->role);
  C->tpdim = calloc((size_t)n + 1, sizeof *C->tpdim);
  C->param_of = calloc((size_t)n + 1, sizeof *C->param_of);
  if (!C->unit || !C->role || !C->tpdim || !C->param_of) {
    ctx_free(C);
    return gv_error(m, "out of memory");
  }
  C->train = f->arg_is_state != NULL;
  for (int i = 0; i < n; i++) C->tpdim[i] = C->param_of[i] = -1;
  if (gv_layer_units_find(m, &C->lu) || gv_layer_units_bind(&C->lu, m)) { /* bound: m's locations by address (realise_do) */
    ctx_free(C);
    return -1;
  }
  C->nl = C->lu.nl;
  if (getenv("GALV_PLAN_DEBUG") && f->arg_names && f->arg_is_param)
    for (int i = 0; i < n; i++)
      if (f->arg_is_param[i]) fprintf(stderr, "plan-debug: unit %d: parameter %s\n", C->lu.arg_unit[i], f->arg_names[i]);
  if (C->nl + 1 > GV_PLAN_MAX_UNITS) {
    ctx_free(C);
    return gv_error(m, "planner: %d layers exceed the limit of %d", C->nl, GV_PLAN_MAX_UNITS - 1);
  }
  gv_arg_index names;
  if (gv_arg_index_build(&names, f)) {
    ctx_free(C);
    return gv_error(m, "plan-sharding: out of memory");
  }
  for (int i = 0; i < n; i++) {
    const char *nm = f->arg_names ? f->arg_names[i] : NULL;
    bool param = f->arg_is_param && f->arg_is_param[i];
    bool state = f->arg_is_state && f->arg_is_state[i];
    if (param || state) C->unit[i] = C->lu.arg_unit[i];
    if (state && nm) {
      const char *colon = strchr(nm, ':');
      int lo = 0, hi = 0;
      if (colon) gv_arg_index_find(&names, colon + 1, &lo, &hi);
      for (int k = lo; k < hi; k++) { /* the last parameter of that name and rank */
        int j = names.idx[k];
        if (f->arg_is_param[j] && f->body->args[j]->type.rank == f->body->args[i]->type.rank) C->param_of[i] = j;
      }
    }
  }
  gv_arg_index_free(&names);
  /* roles: the first dot / gather that uses each parameter (forward order) */
  gv_users *U = gv_users_new(f->body); /* NULL (out of memory): the role questions scan */
  for (const gv_op *op = f->body->first; op; op = op->next) {
    if (op->code == GV_OP_GATHER && is_param(m, op->opnds[0])) {
      int a = op->opnds[0]->index;
      if (!C->role[a] && gv_get_int(op, "axis", 0) == 0 && op->opnds[0]->type.rank == 2 && C->unit[a] == 0)
        C->role[a] = ROLE_VOCAB, C->tpdim[a] = 0;
      else if (!C->role[a]) C->role[a] = -1;
    }
    if (op->code != GV_OP_DOT) continue;
    /* a head reading its weight through a transpose (a tied embedding's [V, H] as [H, V], the pipeline's last stage
     * without the embedding's gather): the role of the parameter, its dim the transpose's perm maps the output's to */
    const gv_op *tr = op->opnds[1]->def;
    if (tr && tr->code == GV_OP_TRANSPOSE && is_param(m, tr->opnds[0]) && C->unit[tr->opnds[0]->index] == 0 &&
        !C->role[tr->opnds[0]->index]) {
      const int64_t *perm = NULL;
      int np = gv_get_ints(tr, "perm", &perm), d = gv_dot_rhs_dim(op, false);
      int a = tr->opnds[0]->index;
      C->role[a] = -1;
      if (np == tr->opnds[0]->type.rank && d >= 0 && d < np && perm[d] >= 0 && perm[d] < np)
        C->role[a] = ROLE_HEAD, C->tpdim[a] = (int)perm[d];
      continue;
    }
    if (!is_param(m, op->opnds[1])) continue;
    int a = op->opnds[1]->index;
    if (C->role[a]) continue;
    C->role[a] = -1;
    /* the outer unit: a head's columns, or the rows of a dot fed by a column-split one (a pipeline stage whose one
     * block is no repeated layer: its MLP and attention projections as Megatron splits them, no reshard between) */
    if (C->unit[a] == 0 && gv_megatron_from_column(m, U, op->opnds[0], 0, 1)) C->role[a] = ROLE_ROW, C->tpdim[a] = gv_dot_rhs_dim(op, true);
    else if (C->unit[a] == 0) C->role[a] = ROLE_HEAD, C->tpdim[a] = gv_dot_rhs_dim(op, false);
    /* tp 1: the roles themselves, before any degree is chosen */
    else if (gv_megatron_is_column(m, U, op, 1)) C->role[a] = ROLE_COL, C->tpdim[a] = gv_dot_rhs_dim(op, false);
    else if (gv_megatron_from_column(m, U, op->opnds[0], 0, 1)) C->role[a] = ROLE_ROW, C->tpdim[a] = gv_dot_rhs_dim(op, true);
  }
  gv_users_free(U);
  C->batch = 0;
  for (int i = 0; i < n; i++) {
    const gv_value *v = f->body->args[i];
    if ((f->arg_is_param && f->arg_is_param[i]) || (f->arg_is_state && f->arg_is_state[i]) || v->type.rank < 1 || v->type.dims[0] <= 1 ||
        no_batch(v))
      continue;
    int64_t a = C->batch, b = v->type.dims[0];
    while (b) { int64_t t = a % b; a = b; b = t; }
    C->batch = a;
  }
  if (!C->batch) C->batch = 1;
  {
    int64_t mc = microbatch_copies(m);
    C->mb_batch = mc > 1 && C->batch % mc == 0 ? C->batch / mc : C->batch;
  }
  for (int i = 0; i < n; i++) {
    if (C->role[i] < 0) C->role[i] = ROLE_NONE;
    if (C->role[i] && C->tpdim[i] >= 0) {
      if (C->unit[i]) C->layer_roles = true;
      else C->outer_roles = true;
    }
  }
  return 0;
}

/* ---------------------------------------------------------------- pins */

static gv_mesh *set_mesh(gv_module *m, const gv_plan *p) {
  if (!m->nmeshes) {
    const char *names[GV_MAX_MESH_AXES];
    for (int a = 0; a < p->naxes; a++) names[a] = p->axis[a];
    return gv_module_add_mesh(m, "m", p->naxes, names, p->size);
  }
  gv_mesh *mesh = m->meshes[0];
  mesh->naxes = p->naxes;
  for (int a = 0; a < p->naxes; a++) {
    mesh->axis[a] = gv_strdup(m->arena, p->axis[a]);
    mesh->size[a] = p->size[a];
  }
  return mesh;
}

static int64_t dprod(const gv_plan *p) {
  int64_t d = 1;
  for (int a = 0; a < p->naxes; a++)
    if (p->dmask & (1u << a)) d *= p->size[a];
  return d;
}

/* gv_zero_stage_pins on a module (a clone being realised, or the module
 * itself): arguments' galv.sharding, one-result ops' `sharding`, and a
 * gradient's consumers read a galv.reshard inserted after its producer
 * (a multi-result producer cannot be pinned one result at a time). */
static const gv_sharding *pio_get(void *ctx, const gv_value *v) {
  const gv_func *f = ((gv_module *)ctx)->main;
  if (!v->def) return f->arg_sharding && v->block == f->body ? f->arg_sharding[v->index] : NULL;
  for (int i = 0; i < v->def->nres; i++)
    if (v->def->res[i] == v) return gv_op_sharding(v->def, i);
  return NULL;
}

static void pio_pin(void *ctx, gv_value *v, const gv_sharding *s) {
  gv_module *m = ctx;
  if (!v->def) m->main->arg_sharding[v->index] = s;
  else if (v->def->nres == 1) gv_set_shardings(m, v->def, &s);
}

static gv_value *pio_pin_use(void *ctx, gv_value *v, const gv_sharding *s) {
  gv_module *m = ctx;
  const gv_op *at;
  gv_op *before = gv_pin_use_before(m->main->body, v, &at);
  if (!before) return v;
  gv_op *o = gv_op_new(m, GV_OP_RESHARD, 1, &v, 1);
  o->res[0]->type = v->type;
  gv_op_set_loc(m, o, at->loc, at->onnx_op);
  gv_set_shardings(m, o, &s);
  gv_insert_before(before, o);
  return o->res[0];
}

/* Pins the plan's argument shardings onto m (a clone or the module itself).
 * Returns 0, or 1 when the plan does not apply (a batch the batch axes do
 * not divide, or batch axes with no data input to split: a batch of 1
 * would leave them computing the same values, which is not data
 * parallelism; such a plan is searched as an idle, replicated axis). */
static int pin_plan(gv_module *m, const ctx *C, const gv_plan *p) {
  gv_func *f = m->main;
  int n = f->body->nargs;
  const gv_mesh *mesh = set_mesh(m, p);
  if (!mesh) return -1;
  if (!f->arg_sharding) {
    int cap = f->cap_args > n ? f->cap_args : n;
    f->arg_sharding = gv_alloc(m->arena, (size_t)cap * sizeof *f->arg_sharding);
  }
  for (int i = 0; i < n; i++) f->arg_sharding[i] = NULL;
  int64_t dp = dprod(p);
  int split = 0;
  for (int pass = 0; pass < 2; pass++)
    for (int i = 0; i < n; i++) {
      const gv_value *v = f->body->args[i];
      bool param = f->arg_is_param && f->arg_is_param[i];
      bool state = f->arg_is_state && f->arg_is_state[i];
      if (pass == 0 && !param && !state) {
        if (!p->dmask || v->type.rank < 1 || v->type.dims[0] == 1 || no_batch(v)) continue;
        if (v->type.dims[0] <= 0 || v->type.dims[0] % dp) return 1;
        split++;
        gv_sharding *s = gv_sharding_new(m, mesh, v->type.rank);
        for (int a = 0; a < p->naxes; a++)
          if (p->dmask & (1u << a)) s->axes[0][s->naxes[0]++] = (uint8_t)a;
        f->arg_sharding[i] = s;
      } else if (pass == 0 && param) {
        int u = C->unit[i];
        int t = unit_tp(p, u);
        int d = C->tpdim[i];
        bool tp = t >= 0 && C->role[i] && d >= 0 && v->type.dims[d] % p->size[t] == 0;
        bool z = p->zero[u] >= 3 && p->dmask && C->train; /* ZeRO-3: the parameter split too */
        int zd = -1;
        for (int k = 0; z && k < v->type.rank && zd < 0; k++)
          if (!(tp && k == d) && v->type.dims[k] > 0 && v->type.dims[k] % dp == 0) zd = k;
        if (!tp && zd < 0) continue;
        gv_sharding *s = gv_sharding_new(m, mesh, v->type.rank);
        if (tp) s->axes[d][s->naxes[d]++] = (uint8_t)t;
        for (int a = 0; zd >= 0 && a < p->naxes; a++)
          if (p->dmask & (1u << a)) s->axes[zd][s->naxes[zd]++] = (uint8_t)a;
        f->arg_sharding[i] = s;
      } else if (pass == 1 && state && C->param_of[i] >= 0 && f->arg_sharding[C->param_of[i]]) {
        const gv_sharding *ps = f->arg_sharding[C->param_of[i]];
        bool same = ps->rank == v->type.rank;
        for (int k = 0; same && k < v->type.rank; k++) same = v->type.dims[k] == f->body->args[C->param_of[i]]->type.dims[k];
        if (same) f->arg_sharding[i] = ps;
      }
    }
  if (dp > 1 && !split) return 1;
  /* ZeRO stages (propagate_sharding.c gv_zero_stage_pins): state, update
   * and gradient pins per unit; a stage-1/2 parameter stays whole */
  if (C->train && p->dmask && dp > 1) {
    uint8_t *st = calloc((size_t)n + 1, 1);
    if (!st) return gv_error(m, "planner: out of memory");
    bool any = false;
    for (int i = 0; i < n; i++)
      if (f->arg_is_param && f->arg_is_param[i] && C->unit[i] >= 0 && C->unit[i] < p->nunits)
        any |= (st[i] = p->zero[C->unit[i]]) != 0;
    gv_pin_io io = {m, pio_get, pio_pin, pio_pin_use};
    int rc = any ? gv_zero_stage_pins(m, mesh, st, p->dmask, &io) : 0;
    free(st);
    if (rc) return -1;
  }
  return 0;
}

int gv_plan_apply(gv_module *m, const gv_plan *plan) {
  ctx C;
  if (ctx_init(&C, m, gv_plan_opts.cluster, 0)) return -1;
  int rc = 0;
  if (plan->nunits != C.nl + 1) rc = gv_error(m, "plan: it has %d units, the model %d (outer + %d layers)", plan->nunits, C.nl + 1, C.nl);
  else {
    rc = pin_plan(m, &C, plan);
    if (rc > 0) rc = gv_error(m, "plan: the batch does not divide into %lld shards over the plan's batch axes", (long long)dprod(plan));
  }
  ctx_free(&C);
  return rc == 1 ? 1 : rc ? -1 : 0;
}

/* p's sp region (plan_sp_set) on C's units, both kept past C for a module's propagate-sharding after the caller:
 * the units move from C into *lu (its earlier ones freed), s reads them there. */
static void sp_region_keep(plan_sp *s, gv_layer_units *lu, ctx *C, const gv_plan *p) {
  gv_layer_units_free(lu);
  *lu = C->lu;
  memset(&C->lu, 0, sizeof C->lu);
  ctx keep = *C;
  keep.lu = *lu;
  plan_sp_set(s, &keep, p);
  s->lu = lu;
}

int gv_plan_sp_region(const gv_module *m, const gv_plan *plan) {
  static plan_sp sps;          /* read by m's propagate-sharding, after this call */
  static gv_layer_units sp_lu; /* its units: m's, kept until the next call */
  bool any = false;
  for (int u = 0; u < plan->nunits && u < GV_PLAN_MAX_UNITS; u++) any |= plan->sp[u] != 0;
  if (!any || plan->t_layer < 0) return 0;
  ctx C;
  if (ctx_init(&C, m, gv_plan_opts.cluster, 0)) return -1;
  int rc = 0;
  if (plan->nunits != C.nl + 1) rc = gv_error(m, "plan: it has %d units, the model %d (outer + %d layers)", plan->nunits, C.nl + 1, C.nl);
  else sp_region_keep(&sps, &sp_lu, &C, plan);
  ctx_free(&C);
  return rc ? -1 : 0;
}

int gv_plan_arg_blocks(const gv_module *m, const gv_plan *plan, const gv_cluster *c, const char *const *names, int n,
                       int64_t *blocks) {
  for (int k = 0; k < n; k++) blocks[k] = 1;
  ctx C;
  if (ctx_init(&C, m, c, 0)) return -1;
  const gv_func *f = m->main;
  const int64_t dp = dprod(plan);
  for (int k = 0; k < n; k++)
    for (int i = 0; i < f->body->nargs; i++) {
      if (!f->arg_is_param || !f->arg_is_param[i] || !f->arg_names[i] || strcmp(f->arg_names[i], names[k])) continue;
      const gv_value *v = f->body->args[i];
      const int u = C.unit[i], t = u < plan->nunits ? unit_tp(plan, u) : -1, d = C.tpdim[i]; /* as pin_plan pins it */
      const bool tp = t >= 0 && C.role[i] && d >= 0 && v->type.dims[d] % plan->size[t] == 0;
      bool zd = false;
      for (int e = 0; plan->zero[u] >= 3 && plan->dmask && C.train && e < v->type.rank && !zd; e++)
        zd = !(tp && e == d) && v->type.dims[e] > 0 && v->type.dims[e] % dp == 0;
      blocks[k] = (tp ? plan->size[t] : 1) * (zd ? dp : 1);
    }
  ctx_free(&C);
  return 0;
}

/* ---------------------------------------------------------------- realisation */

static int quiet_begin(void) {
  fflush(stderr);
  int fd = dup(2), nul = open("/dev/null", O_WRONLY);
  if (fd >= 0 && nul >= 0) dup2(nul, 2);
  if (nul >= 0) close(nul);
  return fd;
}

static void quiet_end(int fd) {
  if (fd < 0) return;
  fflush(stderr);
  dup2(fd, 2);
  close(fd);
}

static gv_module *clone_text(const gv_module *m) {
  gv_module *c;
  char *buf = NULL;
  size_t len = 0;
  FILE *f = open_memstream(&buf, &len);
  if (!f) return NULL;
  gv_print_module(m, f);
  fclose(f);
  c = gv_parse_module(buf, len, m->source);
  free(buf);
  return c;
}

/* A candidate's copy: in memory (gv_module_clone), the text only when that
 * cannot copy it. */
static gv_module *clone_module(const gv_module *m) {
  gv_module *c = gv_module_clone(m);
  return c ? c : clone_text(m);
}

/* A candidate realisation's copy: its constants' data shared with m (freed before m; no pass of a realisation
 * writes a constant's data), the rest as clone_module's. */
static gv_module *clone_realise(const gv_module *m) {
  gv_module *c = gv_module_clone_shared(m);
  return c ? c : clone_text(m);
}

static int coll_index(int code) {
  switch (code) {
  case GV_OP_ALL_REDUCE: return 0;
  case GV_OP_ALL_GATHER: return 1;
  case GV_OP_REDUCE_SCATTER: return 2;
  case GV_OP_ALL_TO_ALL: return 3;
  default: return -1;
  }
}

/* ---------------------------------------------------------------- costs of a realised program */

/* The step: compute (the profile's where it replaced the analytic figures),
 * the slowdown of compute overlapped with communication, and the
 * communication the compute stream waits for (gv_cost_timeline). */
static void plan_step(gv_plan_cost *pc) { pc->step_ns = pc->compute_ns + pc->slowdown_ns + pc->exposed_ns; }

/* An op's phase by its location: the backward's ops carry their forward
 * op's location plus "/grad" (autodiff), recomputed ones "/recompute"
 * (recompute.c); the optimizer's, accumulation's and the loss seed's
 * bookkeeping are none of the three. */
enum { PH_FWD, PH_BWD, PH_REC, PH_OTHER, NPH };
static int phase_of(const char *loc) {
  if (!loc || (loc[0] == 'o' && !strncmp(loc, "optimizer/", 10)) || (loc[0] == 'a' && (!strncmp(loc, "accumulate/", 11) || !strncmp(loc, "autodiff/", 9))))
    return PH_OTHER;
  size_t n = strlen(loc);
  if (n >= 5 && !strcmp(loc + n - 5, "/grad")) return PH_BWD;
  if (n >= 10 && !strcmp(loc + n - 10, "/recompute")) return PH_REC;
  return PH_FWD;
}

/* ---------------------------------------------------------------- counts priced from two microbatches
 *
 * galvc's count search (docs/planner.md, "Microbatch counts priced") plans
 * a count B > 2 on a stand-in: the program of 2 microbatches of the same
 * size batch / B. Its memory is count B's (one microbatch's activations,
 * the gradient sums, the states; only the data inputs hold the whole
 * batch), and its step is priced for B by repeating the second
 * microbatch's part of the critical path B - 2 more times: the ops from
 * the second microbatch's first input slice ("accumulate/microbatch") to
 * its last backward, recomputing or gradient-sum op, each weighted B - 1
 * (its time, its advance of the two-stream timeline, its collectives),
 * except the once-per-step reductions of the summed gradients (collectives
 * located "accumulate/P" with --zero-reduce once) and the optimizer's ops.
 * The chosen plan is then compiled at B and realised in full (galvc prints
 * the estimate beside the realised step). */
static int64_t count_as; /* the count the program stands in for (gv_plan_opts.count_as, during the pass); 0: none */
static int64_t cost_extra; /* the microbatches the last cost_ops priced beyond the program's own (a stand-in's count_as - 2) */
static int64_t microbatch_copies(const gv_module *m);

/* The second microbatch's ops [*lo, *hi] (op indices of f's body); false when the program has no second one. */
static bool count_region(const gv_func *f, int *lo, int *hi) {
  int runs = 0, idx = 0;
  bool in = false;
  *lo = *hi = -1;
  for (const gv_op *op = f->body->first; op; op = op->next, idx++) {
    bool mb = op->loc && !strcmp(op->loc, "accumulate/microbatch");
    if (mb && !in && ++runs == 2) *lo = idx;
    in = mb;
    if (*lo < 0 || mb) continue;
    int k = phase_of(op->loc);
    bool acc = op->loc && !strncmp(op->loc, "accumulate/", 11);
    if ((k == PH_BWD || k == PH_REC || acc) && coll_index(op->code) < 0) *hi = idx;
  }
  return *lo >= 0 && *hi >= *lo;
}

/* The weight of op (index idx) in a stand-in's price, in halves: B - 1 inside the second microbatch's part, else
 * 1; a microbatch's input slices and their collectives ("accumulate/microbatch", wherever overlap moved them) B / 2. */
static int64_t count_weight2(const gv_op *op, int idx, int lo, int hi, int64_t extra) {
  if (op->loc && !strcmp(op->loc, "accumulate/microbatch")) return 2 + extra;
  if (idx < lo || idx > hi) return 2;
  /* a collective after a gradient sum (stage 1's all-reduce, stage 3's under --zero-reduce once: right after the last
   * microbatch's add) runs once; a microbatch's own reduce-scatter takes its producer's location */
  if (coll_index(op->code) >= 0 && op->loc && !strncmp(op->loc, "accumulate/", 11)) return 2;
  return 2 + 2 * extra;
}

/* The data inputs' bytes (local, in the arena) into out->mem_data; a stand-in's at the whole batch: count_as / 2
 * times its own, the difference added to its activations and total. */
static void count_memory(const gv_module *m, gv_plan_cost *out) {
  const gv_func *f = m->main;
  int64_t data = 0;
  for (int i = 0; i < f->body->nargs; i++)
    if (!(f->arg_is_param && f->arg_is_param[i]) && !(f->arg_is_state && f->arg_is_state[i])) {
      int64_t b = gv_value_storage_bytes(f->body->args[i]);
      data += b > 0 ? b : 0;
    }
  out->mem_data = data;
  if (count_as <= 2 || microbatch_copies(m) != 2) return;
  int64_t more = data * (count_as - 2) / 2;
  out->mem_activations += more, out->mem_total += more, out->mem_data += more;
}

/* The cost model over m's ops (a realised, local program): compute and
 * communication, collectives, kernels into out, the step time the two-stream
 * timeline's (cost.h gv_cost_timeline); per unit its share of the step
 * (unit_ns: its ops' slowed times and the waits for its collectives, so the
 * shares sum to the step) and, when ph / cnt are given, its compute time and
 * op count per phase. */
/* A gradient bucket's call (passes/bucket.c: attribute bucket) and its pack
 * (the concat right before it) serve every member's unit: their share of
 * the step is split over the members' units by bytes, each member known by
 * its unpack (a slice of the call's result, at the member's location).
 * Returns false for any other op. */
static bool bucket_split(const ctx *C, const gv_op *op, int64_t share, int64_t *unit_ns) {
  const gv_op *call = op;
  if (op->code == GV_OP_CONCAT && op->next && op->next->nopnds == 1 && op->next->opnds[0] == op->res[0]) call = op->next;
  if (!gv_get_attr(call, "bucket") || call->nres != 1) return false;
  int64_t total = gv_type_numel(&call->res[0]->type), given = 0;
  if (total <= 0) return false;
  int last = -1;
  for (const gv_op *o = call->next; o; o = o->next)
    if (o->code == GV_OP_SLICE && o->nopnds && o->opnds[0] == call->res[0]) {
      int64_t n = gv_type_numel(&o->res[0]->type), part = share * n / total;
      last = unit_of(C, o->loc);
      unit_ns[last] += part, given += part;
    }
  if (last < 0) return false;
  unit_ns[last] += share - given; /* the rounding */
  return true;
}

/* A collective of the plan p on none of its batch axes (dmask): a tp or vocab axis's. */
static bool off_batch(const gv_plan *p, const gv_op *op) {
  const gv_attr *ax = gv_get_attr(op, "axes");
  if (!p || !ax || ax->kind != GV_ATTR_STRS) return false;
  for (int i = 0; i < ax->u.strs.n; i++)
    for (int a = 0; a < p->naxes; a++)
      if ((p->dmask & (1u << a)) && !strcmp(ax->u.strs.v[i], p->axis[a])) return false;
  return true;
}

/* when set (with unit_ns): each unit's exposed communication within its share, the waits for its collectives */
static int64_t *cost_unit_comm;

static void cost_ops(ctx *C, const gv_module *m, gv_plan_cost *out, int64_t *unit_ns, int64_t (*ph)[NPH], int (*cnt)[NPH],
                     const gv_plan *p) {
  const gv_func *f = m->main;
  int64_t fb = 0, tpc = 0;
  int nops = 0;
  for (const gv_op *op = f->body->first; op; op = op->next) nops++;
  int64_t *adv = malloc(((size_t)nops + 1) * sizeof *adv), *opns = malloc(((size_t)nops + 1) * sizeof *opns);
  gv_timeline tl;
  gv_cost_timeline_ns(C->c, m, &tl, adv, opns); /* opns: each op's time as the timeline priced it (the same calls as below) */
  int lo = -1, hi = -1; /* a stand-in for count_as microbatches: its second microbatch's ops weigh count_as - 1 */
  int64_t extra = count_as > 2 && adv && microbatch_copies(m) == 2 && count_region(f, &lo, &hi) ? count_as - 2 : 0, wait = 0;
  cost_extra = extra;
  /* The repeats' waits and slowdown come from the second microbatch as it would run without the once-per-step
   * reductions beside its backward (the collectives weighted once inside its part): the middle microbatches have
   * none beside them, and their slowdown of the second's compute and their queue ahead of its own collectives,
   * repeated, priced Llama2-7B / 64 GPUs' 8 microbatches of recompute=none 6.2 % over the realised step (adv2: a
   * second timeline with those collectives free; NULL when the part has none) */
  int64_t *adv2 = NULL;
  if (extra) {
    bool *free_coll = calloc((size_t)nops + 1, sizeof *free_coll);
    bool any = false;
    int i2 = 0;
    for (const gv_op *op = f->body->first; free_coll && op; op = op->next, i2++)
      if (i2 >= lo && i2 <= hi && coll_index(op->code) >= 0 && count_weight2(op, i2, lo, hi, extra) == 2) free_coll[i2] = any = true;
    if (any && (adv2 = malloc(((size_t)nops + 1) * sizeof *adv2))) {
      gv_timeline tl2;
      gv_cost_timeline_free(C->c, m, &tl2, adv2, NULL, free_coll);
    }
    free(free_coll);
  }
  gv_attn_chain att[GV_ATTN_MAX]; /* the target's fused attention (cost.h), priced as one kernel */
  int natt = opns ? 0 : gv_cost_attention_chains(C->c, m, att);
  int idx = 0;
  for (const gv_op *op = f->body->first; op; op = op->next, idx++) {
    int ci = coll_index(op->code);
    int64_t ns, w2 = extra ? count_weight2(op, idx, lo, hi, extra) : 2; /* the weight, in halves */
    if (ci >= 0) {
      ns = opns ? opns[idx] : gv_cost_collective_op(C->c, m, op);
      if (ns < 0) ns = 0;
      out->comm_ns += w2 * ns / 2;
      if (off_batch(p, op)) tpc += w2 * ns / 2;
      out->coll_count[ci] += w2 / 2; /* a microbatch's input collectives: both copies' (w2 odd) round down */
      out->coll_bytes[ci] += w2 * gv_get_int(op, "bytes", 0) / 2;
    } else {
      gv_op_cost oc;
      if (opns) {
        if (opns[idx] < 0) continue; /* not priced */
        oc.ns = opns[idx];
      } else if (!gv_cost_attention_op(C->c, att, natt, op, &oc) && gv_cost_op(C->c, op, NULL, NULL, &oc))
        continue;
      ns = oc.ns;
      out->compute_ns += w2 * ns / 2;
      if (phase_of(op->loc) != PH_OTHER) fb += w2 * ns / 2;
      if (ph) {
        int u = unit_of(C, op->loc), k = phase_of(op->loc);
        ph[u][k] += w2 * ns / 2; /* a stand-in's: weighted as its price (count_weight2), for count_as microbatches */
        if (op->code != GV_OP_CONSTANT) cnt[u][k]++;
      }
    }
    if (ns > 0) out->kernels++;
    if (w2 > 2 && adv) { /* the repeats' waits and slowdown */
      const int64_t *a = adv2 && idx >= lo && idx <= hi ? adv2 : adv;
      wait += (w2 - 2) * (a[idx] - (ci >= 0 ? 0 : ns)) / 2;
    }
    int64_t share = adv ? w2 * adv[idx] / 2 : ns;
    if (unit_ns && !bucket_split(C, op, share, unit_ns)) unit_ns[unit_of(C, op->loc)] += share;
    if (unit_ns && cost_unit_comm && ci >= 0 && !bucket_split(C, op, share, cost_unit_comm)) cost_unit_comm[unit_of(C, op->loc)] += share;
  }
  if (extra && getenv("GALV_PLAN_DEBUG")) { /* the stand-in's price: its second microbatch's ops and advance */
    int64_t ra = 0;
    int i2 = 0;
    for (const gv_op *op = f->body->first; op; op = op->next, i2++)
      if (i2 >= lo && i2 <= hi) ra += adv[i2];
    fprintf(stderr, "plan: count %lld from 2: ops %d, second microbatch [%d, %d], step %lld, its advance %lld\n",
            (long long)count_as, nops, lo, hi, (long long)tl.step_ns, (long long)ra);
  }
  free(adv), free(adv2), free(opns);
  C->fb_ns = fb, C->tpc_ns = tpc;
  out->slowdown_ns = tl.slowdown_ns;
  out->exposed_ns = tl.exposed_ns + wait; /* a stand-in's repeated microbatches: their advance beyond their compute */
  plan_step(out);
}

/* The arena bytes each unit's forward keeps for the backward: every
 * activation (a value computed from a data input: not a parameter, a
 * gathered parameter or a table of constants) a forward op of the unit
 * defines (a view: its root) that a backward or recomputing op reads, once
 * (kept[u], summed over the microbatches). */
static int kept_bytes(const ctx *C, const gv_module *m, int nunits, int64_t *kept) {
  const gv_func *f = m->main;
  int n = 0;
  for (int i = 0; i < f->body->nargs; i++) f->body->args[i]->id = n++;
  for (gv_op *op = f->body->first; op; op = op->next)
    for (int r = 0; r < op->nres; r++) op->res[r]->id = n++;
  unsigned char *seen = calloc((size_t)n + 1, 1), *data = calloc((size_t)n + 1, 1), *grad = calloc((size_t)n + 1, 1);
  if (!seen || !data || !grad) {
    free(seen), free(data), free(grad);
    return -1;
  }
  for (int i = 0; i < f->body->nargs; i++)
    data[i] = !(f->arg_is_param && f->arg_is_param[i]) && !(f->arg_is_state && f->arg_is_state[i]);
  /* grad: a value of the backward, found by dataflow (a "/grad" op or one
   * reading such a value): autodiff's gradient sums and the partition's
   * collectives of the backward keep their forward op's location */
  for (gv_op *op = f->body->first; op; op = op->next) {
    bool d = false, g = phase_of(op->loc) == PH_BWD;
    for (int i = 0; i < op->nopnds; i++) {
      int id = op->opnds[i]->id;
      if (id < 0 || id >= n) continue;
      d |= data[id] != 0, g |= grad[id] != 0;
    }
    for (int r = 0; r < op->nres; r++) data[op->res[r]->id] = d, grad[op->res[r]->id] = g;
  }
  memset(kept, 0, (size_t)nunits * sizeof *kept);
  for (const gv_op *op = f->body->first; op; op = op->next) {
    int k = phase_of(op->loc);
    bool g = false;
    for (int i = 0; i < op->nopnds && !g && k != PH_OTHER; i++) g = op->opnds[i]->id >= 0 && op->opnds[i]->id < n && grad[op->opnds[i]->id];
    if (k != PH_BWD && k != PH_REC && !g) continue;
    for (int i = 0; i < op->nopnds; i++) {
      const gv_value *v = op->opnds[i];
      while (v->def && (gv_ops[v->def->code].flags & GV_VIEW) && v->def->nopnds) v = v->def->opnds[0];
      if (!v->def || v->def->parent != f->body || v->def->code == GV_OP_CONSTANT) continue;
      if (v->id < 0 || v->id >= n || seen[v->id] || !data[v->id] || grad[v->id] || phase_of(v->def->loc) != PH_FWD) continue;
      seen[v->id] = 1;
      int64_t b = gv_value_storage_bytes(v);
      if (b > 0) kept[unit_of(C, v->def->loc)] += b;
    }
  }
  free(seen), free(data), free(grad);
  return 0;
}

/* The number of times m runs one microbatch's forward: the accumulate
 * pass's microbatches (its ops located "accumulate/..."), else 1. */
static int64_t microbatch_copies(const gv_module *m) {
  if (gv_train_opts.microbatches <= 1) return 1;
  for (const gv_op *op = m->main->body->first; op; op = op->next)
    if (op->loc && !strncmp(op->loc, "accumulate/", 11)) return gv_train_opts.microbatches;
  return 1;
}

static int64_t *prof_dmem_units; /* when set: profile_apply's memory correction per unit */

/* --profile (planner/profile.h): for each unit the profile has a kind for
 * (the layers; unit 0, the outer part), its forward, backward and (full
 * recomputation) recomputed ops' analytic compute time is replaced by the
 * profile's figure for one microbatch of b = batch / (copies x dp) samples
 * per device at the unit's own tp degree (utp[u]: the layers' per-unit
 * choice, the outer unit's vocab-parallel degree), times the copies; and, training
 * without selective recomputation, the activations its forward keeps for
 * the backward (kept_bytes, per microbatch) by the profile's activation (or
 * checkpoint) bytes, when it gives them. Collectives stay the cluster
 * model's. Returns 0, 1 when the profile lacks the plan's tp degree (the
 * plan is then no candidate), -1 after an error line. detail: one line per
 * profiled unit (--report-cost). */
static int profile_apply(const ctx *C, const gv_module *m, int nunits, int64_t dp, const int64_t *utp, int64_t tp_layer,
                         gv_plan_cost *out, int64_t *unit_ns, int64_t (*ph)[NPH], int (*cnt)[NPH], FILE *detail) {
  const gv_profile *P = gv_plan_opts.profile;
  int64_t M = microbatch_copies(m);
  int64_t b = C->batch / (M * (dp > 0 ? dp : 1));
  if (b < 1) b = 1;
  bool selective = gv_train_opts.recompute && !strncmp(gv_train_opts.recompute, "selective", 9);
  int64_t *kept = NULL;
  int64_t dmem = 0, dns = 0;
  out->prof_b = b, out->prof_tp = tp_layer;
  const double osh = gv_plan_opts.profile_outer_share; /* a pipeline stage's share of the outer figure (0: all of it) */
  for (int u = 0; u < nunits; u++) {
    const gv_profile_kind *k = u ? &P->layer : &P->outer;
    if (!k->present || !cnt[u][PH_FWD] || (!u && osh < 0)) continue;
    const double share = !u && osh > 0 ? osh : 1.0;
    int64_t tp = utp[u];
    double fwd, bwd, rec;
    if (gv_profile_time(k, b, tp, &fwd, &bwd, &rec)) {
      free(kept);
      prof_lacking_tp = tp, prof_lacking_field = k->field;
      return 1;
    }
    bool train = cnt[u][PH_BWD] > 0, full = cnt[u][PH_REC] > 0 && !selective, pbwd = train && bwd >= 0;
    fwd *= share, bwd *= share, rec *= share;
    double ms = fwd + (pbwd ? bwd : 0) + (full ? rec : 0);
    /* (a stand-in for count_as microbatches: its analytic figures weighted for count_as, so the measured ones too) */
    int64_t prof = (int64_t)(ms * 1e6 * (double)(M + cost_extra) + 0.5);
    int64_t ana = ph[u][PH_FWD] + (pbwd ? ph[u][PH_BWD] : 0) + (full ? ph[u][PH_REC] : 0);
    if (detail)
      fprintf(detail, "profile: %s %d: forward %.3f ms (analytic %.3f), backward %.3f (%.3f)%s, recompute %.3f (%.3f)%s\n",
              u ? "layer" : "outer", u ? u - 1 : 0, fwd * (double)M, ph[u][PH_FWD] / 1e6, pbwd ? bwd * (double)M : ph[u][PH_BWD] / 1e6,
              ph[u][PH_BWD] / 1e6, train && !pbwd ? " (not measured: analytic)" : "", full ? rec * (double)M : ph[u][PH_REC] / 1e6,
              ph[u][PH_REC] / 1e6,
              cnt[u][PH_REC] && selective ? " (selective recomputation: analytic)" : "");
    dns += prof - ana;
    if (unit_ns) unit_ns[u] += prof - ana;
    out->prof_units++;
    out->prof_ns += prof;
    out->prof_analytic_ns += ana;
    double act;
    if (train && !(cnt[u][PH_REC] && selective)) {
      int r = gv_profile_act(k, b, tp, full, &act);
      bool any = false; /* the kind gives activations at some tp: a tp it lacks is no candidate */
      if (r) gv_profile_has_tp(k, 1, &any);
      for (int i = 0; r && !any && i < k->npts; i++) any = k->pts[i].act_bytes >= 0;
      any |= k->nact > 0;
      if (r && any && !full) {
        free(kept);
        prof_lacking_tp = tp, prof_lacking_field = k->fit ? "memory_MB.per_layer_activation_MB_per_sample_by_tp_sp" : k->field;
        return 1;
      }
      if (!r) {
        act *= share;
        if (!kept) {
          if (!(kept = calloc((size_t)nunits, sizeof *kept)) || kept_bytes(C, m, nunits, kept)) {
            free(kept);
            return gv_error_plain("planner: out of memory");
          }
        }
        int64_t pa = (int64_t)(act + 0.5), aa = kept[u] / M;
        if (getenv("GALV_PLAN_DEBUG"))
          fprintf(stderr, "plan-debug: profile: unit %d keeps %lld bytes for backward, the profile %lld (b %lld, tp %lld)\n", u,
                  (long long)aa, (long long)pa, (long long)b, (long long)tp);
        dmem += pa - aa;
        if (prof_dmem_units) prof_dmem_units[u] += pa - aa;
        out->prof_mem_units++;
        out->prof_act += pa;
        out->prof_analytic_act += aa;
      }
    }
  }
  free(kept);
  out->compute_ns += dns;
  plan_step(out);
  out->mem_total += dmem;
  out->mem_activations += dmem;
  return 0;
}

/* Realises p on a clone of C->m. unit_ns / unit_state (nunits each, may be
 * NULL) get the time and the state memory (parameters, gradients, optimizer
 * state) attributed to each unit. Returns 0, 1 when the plan does not
 * realise (it is then no candidate), -1 on an internal error. */
static int64_t *realise_kept; /* when set: each unit's activations kept for backward (kept_bytes), filled by realise */
static int64_t *realise_comm; /* when set (with unit_ns): each unit's exposed communication (cost_unit_comm), filled by realise */

/* ---------------------------------------------------------------- the full program's memory from a reduced one
 *
 * A reduced program (outer + layers 0, 1 and L-1; see "reduced modules"
 * below) stands for the full one with its middle layer (unit 2) repeated
 * L - 2 times. Its memory plan (the observer, passes.h) gives the op at
 * every point and every arena value's bytes and live range; the full
 * program's most bytes live at once are then found on the schedule with the
 * middle layer's stretches repeated: each point belongs to the unit of the
 * last computing op at or before it (a collective moved by the overlap pass
 * belongs where it runs, not to the unit it serves; so does an op preparing
 * parameters or state alone, such as ZeRO-3's casts moved with their
 * gathers; a constant, outside the arena, to none; the optimizer's update,
 * its ops fused across parameters, to the outer part), and the points of
 * the middle unit form runs, each run repeated once per middle layer
 * (forward runs in layer order, backward and recomputing runs in reverse).
 * A value's copies follow where it starts and ends (red_map):
 *   - between layer runs (layer 0, the middle layers, the last layer), one
 *     copy per middle layer when it starts in a middle run: it ends as many
 *     layers from its start as in the reduced program (a checkpoint or the
 *     residual stream read by the next layer, the gradient into the
 *     previous one, a gather prefetched for the next, gradients in flight
 *     two layers on), in the middle run nearest the end's run when that
 *     layer is a middle one, its offset there taken with the runs aligned
 *     at their ends (a middle run opens with the next layer's prefetches);
 *   - from a middle run to the outer part: one copy per middle layer,
 *     ending where the value ended (a gradient held to the update), or, an
 *     in-flight call, as many layers on as in the reduced program, at the
 *     point of that layer's run where calls from other layers end;
 *   - from the outer part into a middle run: one value, ending in the first
 *     copy executed when it is an in-flight call (the head's gradient), else
 *     in the last (a value every layer reads);
 *   - else: one value, its range stretched over the repeated runs between.
 * The full program's memory is the reduced one's plus the difference of the
 * two busiest points, plus L - 3 times the middle layer's parameters and
 * optimizer state (outside the arena) and its --profile correction. The
 * difference of two reduced programs' peaks is no layer's memory: their
 * busiest points are not the full program's (Llama2-7B, dp=8, ZeRO-3, full
 * recomputation: r3 and r2 differ by 1.03 GB, the full program grows
 * 0.63 GB per layer; docs/planner.md, "Llama2-7B with Galvatron's profile"). */
typedef struct {
  int start, end;
  int64_t bytes;
  bool fl;
} red_root;
typedef struct {
  const gv_func *f;
  const gv_op **at;
  bool *anchor;  /* per point: a computing op (see above) */
  int npoints, cap;
  bool *staged;  /* per value id (the memory plan's numbering): computed from parameters and state alone */
  int capv;
  red_root *roots;
  int nroots, caproots;
  bool oom;
} red_obs;

/* A point's op anchors its unit's run unless it is a collective, a constant, or prepares parameters or state
 * alone (ZeRO-3's casts of the master weights before their gathers, moved ahead by the overlap pass with them). */
static void red_obs_point(void *ud, int p, const gv_op *op) {
  red_obs *o = ud;
  if (o->oom) return;
  if (p >= o->cap) {
    int cap = o->cap ? 2 * o->cap : 1024;
    while (cap <= p) cap *= 2;
    const gv_op **n = realloc(o->at, (size_t)cap * sizeof *n);
    bool *a = n ? realloc(o->anchor, (size_t)cap * sizeof *a) : NULL;
    if (n) o->at = n;
    if (!n || !a) {
      o->oom = true;
      return;
    }
    for (int i = o->cap; i < cap; i++) n[i] = NULL, a[i] = false;
    o->anchor = a, o->cap = cap;
  }
  bool staged = true;
  for (int i = 0; i < op->nopnds && staged; i++) {
    const gv_value *v = op->opnds[i];
    if (!v->def) {
      const gv_func *f = o->f;
      staged = v->block == f->body && ((f->arg_is_param && f->arg_is_param[v->index]) || (f->arg_is_state && f->arg_is_state[v->index]));
    } else
      staged = v->id >= 0 && v->id < o->capv && o->staged[v->id];
  }
  for (int i = 0; i < op->nres; i++) {
    int id = op->res[i]->id;
    if (id < 0) continue;
    if (id >= o->capv) {
      int cap = o->capv ? 2 * o->capv : 4096;
      while (cap <= id) cap *= 2;
      bool *n = realloc(o->staged, (size_t)cap * sizeof *n);
      if (!n) {
        o->oom = true;
        return;
      }
      for (int k = o->capv; k < cap; k++) n[k] = false;
      o->staged = n, o->capv = cap;
    }
    o->staged[id] = staged;
  }
  o->at[p] = op;
  o->anchor[p] = op->code != GV_OP_CONSTANT && !gv_comm_is_collective(op) && !staged;
  if (p + 1 > o->npoints) o->npoints = p + 1;
}

static void red_obs_root(void *ud, int start, int end, int64_t bytes, bool fl) {
  red_obs *o = ud;
  if (o->nroots == o->caproots) {
    int cap = o->caproots ? 2 * o->caproots : 1024;
    red_root *n = realloc(o->roots, (size_t)cap * sizeof *n);
    if (!n) {
      o->oom = true;
      return;
    }
    o->roots = n, o->caproots = cap;
  }
  o->roots[o->nroots++] = (red_root){start, end, bytes, fl};
}

/* The schedule of a reduced program with its middle runs repeated (see above). */
typedef struct {
  int n;                         /* middle layers: copies of a middle run */
  int *run, *rs, *rlen, *rbwd, *reg; /* per point its run; per run its first point, length, direction (> 0: backward), unit */
  int *near;                     /* per run the nearest middle run (-1: none) */
  int *wait;                     /* per run: the latest point in it (from its start) where an in-flight call from another layer's run ends */
  int64_t *base;                 /* per run its first position in the full schedule */
} red_sched;

/* Adds v's copies (their live ranges in the full schedule) to diff (when given); returns how many cover position probe. */
static int red_map(const red_sched *S, const red_root *v, int64_t *diff, int64_t probe) {
  int n = S->n, A = S->run[v->start], B = S->run[v->end], so = v->start - S->rs[A], eo = v->end - S->rs[B], hits = 0;
  int ua = S->reg[S->rs[A]], ub = S->reg[S->rs[B]];
#define POS(r, c, off) (S->base[r] + (int64_t)(c) * S->rlen[r] + ((off) < 0 ? 0 : (off) >= S->rlen[r] ? S->rlen[r] - 1 : (off)))
#define EXEC(r, j) (S->rbwd[r] > 0 ? n - (j) : (j) - 1) /* middle layer j's (1 .. n) copy of run r, in execution order */
#define ALIGN(off, r, m) ((off) + S->rlen[m] - S->rlen[r]) /* offset off of run r in middle run m: the runs aligned at their ends */
#define ADD(a, b)                                                                                                      \
  do {                                                                                                                 \
    int64_t a_ = (a), b_ = (b) < a_ ? a_ : (b);                                                                        \
    if (diff) diff[a_] += v->bytes, diff[b_ + 1] -= v->bytes;                                                          \
    hits += probe >= a_ && probe <= b_;                                                                                \
  } while (0)
  if (ua && ub && (ua == 2 || ub == 2 || ua != ub)) {
    /* between layers: layer 0, the middle layers 1 .. n, layer n + 1; the end as many layers from the start as in
     * the reduced program, in the middle run nearest the end's run where it falls on a middle layer */
    int lo = ua == 2 ? 1 : ua == 1 ? 0 : n + 1, hi = ua == 2 ? n : lo, d = ub - ua;
    for (int j = lo; j <= hi; j++) {
      int64_t s0 = ua == 2 ? POS(A, EXEC(A, j), so) : POS(A, 0, so);
      int k = j + d, mb = S->near[B];
      ADD(s0, k >= 1 && k <= n && mb >= 0 ? POS(mb, EXEC(mb, k), ALIGN(eo, B, mb)) : POS(B, 0, eo));
    }
  } else if (ua == 2) {
    /* to the outer part: where it ended, or, an in-flight call, as many layers on as in the reduced program (the
     * layer runs between, and one more) */
    int k = 1;
    for (int r = A + 1; r < B; r++) k += S->reg[S->rs[r]] && S->reg[S->rs[r]] != S->reg[S->rs[r - 1]];
    int w = A + 1 < B ? ALIGN(S->wait[A + 1], A + 1, A) : 0; /* where in a layer's run the calls of two layers back end */
    for (int c = 0; c < n; c++) {
      int t = c + k;
      ADD(POS(A, c, so), !v->fl || c == n - 1 ? POS(B, 0, eo) : t <= n - 1 ? POS(A, t, w) : A + t - (n - 1) < B ? POS(A + t - (n - 1), 0, S->wait[A + t - (n - 1)]) : POS(B, 0, eo));
    }
  } else if (ub == 2) /* from the outer part: an in-flight call ends in the first layer run, else in the last */
    ADD(POS(A, 0, so), POS(B, v->fl ? 0 : n - 1, eo));
  else
    ADD(POS(A, 0, so), POS(B, 0, eo));
#undef POS
#undef EXEC
#undef ALIGN
#undef ADD
  return hits;
}

/* The most bytes live at once in the full program of L layers that the reduced program C (3 layers) observed in o
 * stands for (see above); *lower: the reduced program's own. -1 when out of memory. */
static int64_t red_full_lower(const ctx *C, const red_obs *o, int L, int64_t *lower) {
  int np = o->npoints;
  red_sched S = {.n = L - 2};
  S.run = malloc((size_t)(np + 1) * sizeof *S.run), S.reg = malloc((size_t)(np + 1) * sizeof *S.reg);
  S.rs = malloc((size_t)(np + 1) * sizeof *S.rs), S.rlen = calloc((size_t)np + 1, sizeof *S.rlen);
  S.rbwd = calloc((size_t)np + 1, sizeof *S.rbwd), S.base = malloc((size_t)(np + 2) * sizeof *S.base);
  S.near = malloc((size_t)(np + 1) * sizeof *S.near), S.wait = calloc((size_t)np + 1, sizeof *S.wait);
  int64_t *diff = NULL, *d3 = calloc((size_t)np + 2, sizeof *d3), best = -1;
  if (!S.run || !S.reg || !S.rs || !S.rlen || !S.rbwd || !S.base || !S.near || !S.wait || !d3 || S.n < 1) goto done;
  /* each point's unit: the last computing op's at or before it (the first's before it) */
  int cur = 0, nr = 0;
  for (int p = 1; p < np; p++)
    if (o->at[p] && o->anchor[p]) {
      cur = unit_of(C, o->at[p]->loc);
      break;
    }
  for (int p = 0; p < np; p++) {
    const gv_op *op = p ? o->at[p] : NULL;
    bool anchor = op && o->anchor[p];
    if (anchor) cur = op->loc && !strncmp(op->loc, "optimizer/", 10) ? 0 : unit_of(C, op->loc);
    if (!p || cur != S.reg[S.rs[nr - 1]]) S.rs[nr] = p, S.reg[p] = cur, nr++;
    S.reg[p] = cur;
    S.run[p] = nr - 1;
    S.rlen[nr - 1]++;
    if (anchor) { /* the run's direction: backward and recomputing ops against forward and optimizer ones */
      int ph = phase_of(op->loc);
      S.rbwd[nr - 1] += ph == PH_BWD || ph == PH_REC ? 1 : -1;
    }
  }
  for (int r = 0; r < nr; r++) {
    S.near[r] = -1;
    for (int k = 0; k < nr && S.near[r] < 0; k++)
      S.near[r] = r - k >= 0 && S.reg[S.rs[r - k]] == 2 ? r - k : r + k < nr && S.reg[S.rs[r + k]] == 2 ? r + k : -1;
  }
  for (int i = 0; i < o->nroots; i++) {
    const red_root *v = &o->roots[i];
    if (v->start < 0 || v->end >= np || v->end < v->start || !v->fl) continue;
    int A = S.run[v->start], B = S.run[v->end];
    if (A != B && S.reg[S.rs[A]] && S.reg[S.rs[B]] && v->end - S.rs[B] > S.wait[B]) S.wait[B] = v->end - S.rs[B];
  }
  S.base[0] = 0;
  for (int r = 0; r < nr; r++) S.base[r + 1] = S.base[r] + (int64_t)S.rlen[r] * (S.reg[S.rs[r]] == 2 ? S.n : 1);
  int64_t total = S.base[nr], live = 0, at = 0;
  if (!(diff = calloc((size_t)total + 2, sizeof *diff))) goto done;
  for (int i = 0; i < o->nroots; i++) {
    const red_root *v = &o->roots[i];
    if (v->start < 0 || v->end >= np || v->end < v->start) continue;
    d3[v->start] += v->bytes, d3[v->end + 1] -= v->bytes;
    red_map(&S, v, diff, -1);
  }
  best = 0;
  for (int64_t p = 0; p <= total; p++) {
    live += diff[p];
    if (live > best) best = live, at = p;
  }
  live = 0, *lower = 0;
  for (int p = 0; p < np; p++) {
    live += d3[p];
    if (live > *lower) *lower = live;
  }
  const char *dbg = getenv("GALV_PLAN_DEBUG");
  if (dbg && atoi(dbg) >= 2) { /* the runs, and the largest values at the full schedule's busiest position */
    for (int r = 0; r < nr; r++)
      fprintf(stderr, "plan-debug: reduced run %d: unit %d, points %d-%d (%s), x %d\n", r, S.reg[S.rs[r]], S.rs[r], S.rs[r] + S.rlen[r] - 1,
              S.rbwd[r] > 0 ? "backward" : "forward", S.reg[S.rs[r]] == 2 ? S.n : 1);
    fprintf(stderr, "plan-debug: %d layers: busiest position %lld of %lld, %lld bytes; the largest values there:\n", L, (long long)at,
            (long long)total, (long long)best);
    for (int i = 0; i < o->nroots; i++) {
      const red_root *v = &o->roots[i];
      if (v->start < 0 || v->end >= np || v->end < v->start) continue;
      int h = red_map(&S, v, NULL, at);
      if (h && v->bytes * h >= best / 50)
        fprintf(stderr, "plan-debug:   %d x %lld bytes, r3 points %d-%d%s: %s %s\n", h, (long long)v->bytes, v->start, v->end,
                v->fl ? " (in flight)" : "", o->at[v->start] ? gv_ops[o->at[v->start]->code].name : "input",
                o->at[v->start] && o->at[v->start]->loc ? o->at[v->start]->loc : "");
    }
  }
done:
  free(S.run), free(S.reg), free(S.rs), free(S.rlen), free(S.rbwd), free(S.base), free(S.near), free(S.wait), free(diff), free(d3);
  return best;
}

/* When set (a realisation of a reduced program of 3 layers): the layers of the full program it stands for;
 * realise_do then fills out->mem_full (red_full_lower). */
static int red_full_nl;

static int realise_copy(ctx *C, const gv_plan *p, gv_plan_cost *out, int64_t *unit_ns, int64_t *unit_state) {
  memset(out, 0, sizeof *out);
  gv_module *m = clone_realise(C->m);
  if (!m) return -1;
  C->realised++;
  C->lu.bound = true; /* the copy's locations are C->m's strings (clone_realise): looked up by address */
  int rc = pin_plan(m, C, p);
  gv_shard_options saved = gv_shard_opts;
  gv_shard_opts.strategy = NULL;
  gv_shard_opts.file = NULL;
  gv_shard_opts.quiet = true;
  gv_shard_opts.sp_axis = NULL, gv_shard_opts.sp_op = NULL;
  static plan_sp sps; /* large: not on the stack; realise does not nest */
  plan_sp_set(&sps, C, p);
  int fd = quiet_begin();
  gv_layer_units_hint(m, &C->lu); /* regather's and overlap's layers: this search's units */
  if (!rc) rc = gv_pass_propagate_sharding(m) ? 1 : 0;
  if (!rc) rc = gv_pass_regather(m) ? 1 : 0; /* ZeRO-3 parameters gathered per layer that reads them */
  if (!rc) rc = gv_pass_storage(m) ? 1 : 0; /* the collectives move values as stored */
  if (!rc) rc = gv_pass_spmd_partition(m) ? 1 : 0;
  if (!rc) rc = gv_pass_fuse(m) ? 1 : 0;
  if (!rc) rc = gv_pass_overlap(m) ? 1 : 0;
  if (!rc) rc = gv_pass_bucket(m) ? 1 : 0;
  if (!rc) rc = gv_pass_storage(m) ? 1 : 0; /* the memory plan and the cost read the storage precision */
  red_obs obs = {.f = m->main};
  gv_mem_observer ob = {red_obs_point, red_obs_root, &obs};
  bool want_full = red_full_nl > 3 && C->nl == 3 && p->nunits == 4;
  if (want_full) gv_memory_plan_observer = &ob;
  if (!rc) rc = gv_pass_memory_plan(m) ? 1 : 0;
  gv_memory_plan_observer = NULL;
  quiet_end(fd);
  gv_layer_units_hint(NULL, NULL);
  int64_t bucket = gv_shard_opts.bucket_chosen; /* --bucket-mb auto: this plan's cap, the fastest priced */
  gv_shard_opts = saved;
  if (rc) {
    free(obs.at), free(obs.anchor), free(obs.staged), free(obs.roots);
    gv_module_free(m);
    return rc < 0 ? -1 : 1;
  }
  out->bucket_bytes = bucket;
  if (unit_ns) memset(unit_ns, 0, (size_t)p->nunits * sizeof *unit_ns);
  if (unit_state) memset(unit_state, 0, (size_t)p->nunits * sizeof *unit_state);
  if (realise_comm) memset(realise_comm, 0, (size_t)p->nunits * sizeof *realise_comm);
  const gv_func *f = m->main;
  int64_t(*ph)[NPH] = gv_plan_opts.profile ? calloc((size_t)p->nunits, sizeof *ph) : NULL;
  int(*cnt)[NPH] = ph ? calloc((size_t)p->nunits, sizeof *cnt) : NULL;
  if (gv_plan_opts.profile && (!ph || !cnt)) {
    free(ph), free(cnt);
    gv_module_free(m);
    return gv_error_plain("planner: out of memory");
  }
  cost_unit_comm = unit_ns ? realise_comm : NULL;
  cost_ops(C, m, out, unit_ns, ph, cnt, p);
  cost_unit_comm = NULL;
  plan_step(out);
  const char *dbg3 = getenv("GALV_PLAN_DEBUG"); /* 3: each realisation's per-op table */
  if (dbg3 && atoi(dbg3) >= 3) gv_cost_report(C->c, m, stderr);
  if (unit_ns && bucket && getenv("GALV_PLAN_DEBUG")) { /* the buckets' split (bucket_split): the unit shares still add up */
    int64_t sum = 0;
    int nb = 0, spread = 0;
    fprintf(stderr, "plan-debug: bucket cap %lld: unit shares", (long long)bucket);
    for (int u = 0; u < p->nunits; u++) fprintf(stderr, " %lld", (long long)unit_ns[u]), sum += unit_ns[u];
    for (const gv_op *op = f->body->first; op; op = op->next) {
      if (!gv_get_attr(op, "bucket")) continue;
      int first = -1;
      bool more = false;
      for (const gv_op *o = op->next; o; o = o->next)
        if (o->code == GV_OP_SLICE && o->nopnds && o->opnds[0] == op->res[0]) {
          int u = unit_of(C, o->loc);
          more |= first >= 0 && u != first;
          if (first < 0) first = u;
        }
      nb++, spread += more;
    }
    fprintf(stderr, "; sum %lld, step %lld; %d bucket calls, %d of them over more than one unit\n", (long long)sum, (long long)out->step_ns, nb,
            spread);
  }
  gv_mem mem;
  gv_cost_memory(m, &mem);
  out->mem_params = mem.params + mem.working_copy; /* ZeRO-1/2 under 16-bit training: the split masters and the whole 16-bit copies */
  out->mem_grads = mem.grads;
  out->mem_optimizer = mem.optimizer;
  out->mem_activations = mem.total - out->mem_params - mem.optimizer - mem.grads - mem.constants - mem.comm;
  out->mem_total = mem.total;
  count_memory(m, out);
  int64_t dmem_u[4] = {0};
  if (ph) { /* --profile: measured figures replace the analytic ones of the profiled units */
    int64_t tl = p->t_layer >= 0 ? p->size[p->t_layer] : 1;
    int64_t *utp = malloc((size_t)p->nunits * sizeof *utp);
    for (int u = 0; utp && u < p->nunits; u++) utp[u] = unit_tp(p, u) >= 0 ? p->size[unit_tp(p, u)] : 1;
    prof_dmem_units = want_full ? dmem_u : NULL;
    const int64_t c0 = out->compute_ns;
    int q = utp ? profile_apply(C, m, p->nunits, dprod(p), utp, tl, out, unit_ns, ph, cnt, NULL) : gv_error_plain("planner: out of memory");
    C->fb_ns += out->compute_ns - c0; /* the bounds' compute: the measured figures where they replaced the analytic */
    prof_dmem_units = NULL;
    free(ph), free(cnt), free(utp);
    if (q) {
      free(obs.at), free(obs.anchor), free(obs.staged), free(obs.roots);
      gv_module_free(m);
      return q < 0 ? -1 : 1;
    }
  }
  if (want_full && !obs.oom) {
    /* the full program's memory (red_full_lower): the middle layer's states outside the arena and its profile
     * correction L - 3 more times */
    int64_t lower3 = 0, lowerL = red_full_lower(C, &obs, red_full_nl, &lower3), lowerP = red_full_lower(C, &obs, red_full_nl - 1, &lower3), ext = 0;
    for (int i = 0; i < f->body->nargs; i++)
      if (C->unit[i] == 2 && ((f->arg_is_param && f->arg_is_param[i]) || (f->arg_is_state && f->arg_is_state[i]))) {
        const gv_type *t = &f->body->args[i]->type; /* as the memory plan's param_bytes and gv_cost_memory count them */
        int64_t b = (int64_t)gv_dtype_size(t->dtype);
        for (int k = 0; k < t->rank; k++) b *= t->dims[k] > 0 ? t->dims[k] : 0;
        ext += b;
      }
    if (lowerL >= 0 && lowerP >= 0) {
      out->mem_full = out->mem_total + (lowerL - lower3) + (int64_t)(red_full_nl - 3) * (ext + dmem_u[2]);
      out->mem_full_layer = lowerL - lowerP + ext + dmem_u[2];
    }
    if (getenv("GALV_PLAN_DEBUG"))
      fprintf(stderr, "plan-debug: reduced memory (ZeRO %d %d %d %d): r3 %lld (busiest %lld) -> %d layers: busiest %lld (%d layers: %lld), per middle layer states %lld, profile %lld: %lld, a middle layer %lld\n",
              p->zero[0], p->zero[1], p->zero[2], p->zero[3], (long long)out->mem_total, (long long)lower3, red_full_nl, (long long)lowerL,
              red_full_nl - 1, (long long)lowerP, (long long)ext, (long long)dmem_u[2], (long long)out->mem_full, (long long)out->mem_full_layer);
  }
  free(obs.at), free(obs.anchor), free(obs.staged), free(obs.roots);
  plan_step(out);
  for (int i = 0; unit_state && i < f->body->nargs; i++) {
    const gv_type *t = &f->body->args[i]->type;
    int64_t b = (int64_t)gv_dtype_size(t->dtype);
    for (int k = 0; k < t->rank; k++) b *= t->dims[k] > 0 ? t->dims[k] : 0;
    bool param = f->arg_is_param && f->arg_is_param[i];
    bool state = f->arg_is_state && f->arg_is_state[i];
    if (param) unit_state[C->unit[i]] += C->train ? 2 * b : b;
    else if (state) unit_state[C->unit[i]] += b;
  }
  if (realise_kept && kept_bytes(C, m, p->nunits, realise_kept)) memset(realise_kept, 0, (size_t)p->nunits * sizeof *realise_kept);
  gv_module_free(m);
  return 0;
}

static int realise_do(ctx *C, const gv_plan *p, gv_plan_cost *out, int64_t *unit_ns, int64_t *unit_state) {
  int rc = realise_copy(C, p, out, unit_ns, unit_state);
  C->lu.bound = false;
  return rc;
}

/* ---------------------------------------------------------------- realisations kept
 *
 * A realisation is a function of the program, the plan and the options the
 * search reads, not of the memory limit: the process keeps each one's
 * figures (its cost, the unit shares, states, kept activations and exposed
 * communication, the forward / backward compute) keyed by the program's key
 * without the limit (ctx.memo: plan_key_of's, for the reduced programs
 * mixed with their kind) and the plan. A search of the same program under
 * another limit (galvc's budget correction after a realised program over
 * the limit) or a plan realised twice in one search reads them instead of
 * realising again: the same figures, so the same choices; the report's
 * "candidate programs realised" counts the realisations made. */
typedef struct {
  uint64_t memo, h;
  int nunits;
  int rc;
  gv_plan_cost out;
  int64_t fb_ns, tpc_ns;
  int64_t *v; /* unit_ns, unit_state, kept, exposed communication: nunits each */
} memo_entry;
enum { MEMO_MAX = 16384 };
static memo_entry *memo_tab;
static int memo_n;
static int64_t memo_hits;
static int64_t report_kept; /* the pass's search: the candidate realisations read from earlier ones (the report says so) */
static int64_t report_inc_out, report_inc_ns; /* ... the combinations left out by gv_plan_opts.incumbent_ns's bound */

static uint64_t plan_hash(const gv_plan *p) {
  uint64_t h = 14695981039346656037ull;
#define MIX(ptr, len)                                                                                                  \
  do {                                                                                                                 \
    const unsigned char *b_ = (const unsigned char *)(ptr);                                                            \
    for (size_t i_ = 0; i_ < (size_t)(len); i_++) h = (h ^ b_[i_]) * 1099511628211ull;                              \
  } while (0)
  MIX(&p->naxes, sizeof p->naxes);
  MIX(p->size, (size_t)p->naxes * sizeof p->size[0]);
  for (int a = 0; a < p->naxes; a++) MIX(p->axis[a], strnlen(p->axis[a], sizeof p->axis[a]) + 1);
  MIX(&p->dmask, sizeof p->dmask);
  MIX(&p->t_layer, sizeof p->t_layer);
  MIX(&p->t_outer, sizeof p->t_outer);
  MIX(&p->nunits, sizeof p->nunits);
  int nu = p->nunits > 0 && p->nunits <= GV_PLAN_MAX_UNITS ? p->nunits : 0;
  MIX(p->zero, (size_t)nu);
  MIX(p->sp, (size_t)nu);
  MIX(p->tp_unit, (size_t)nu);
#undef MIX
  return h;
}

static int realise(ctx *C, const gv_plan *p, gv_plan_cost *out, int64_t *unit_ns, int64_t *unit_state) {
  if (!C->memo || gv_plan_opts.profile || p->nunits <= 0 || p->nunits > GV_PLAN_MAX_UNITS)
    return realise_do(C, p, out, unit_ns, unit_state);
  uint64_t h = plan_hash(p);
  int nu = p->nunits;
  for (int i = memo_n - 1; i >= 0; i--) {
    memo_entry *e = &memo_tab[i];
    if (e->memo != C->memo || e->h != h || e->nunits != nu) continue;
    if (!e->rc && red_full_nl > 3 && C->nl == 3 && nu == 4 && !e->out.mem_full) continue; /* kept without the estimate */
    memo_hits++;
    *out = e->out;
    if (e->rc) return e->rc;
    C->fb_ns = e->fb_ns, C->tpc_ns = e->tpc_ns;
    if (unit_ns) memcpy(unit_ns, e->v, (size_t)nu * sizeof *unit_ns);
    if (unit_state) memcpy(unit_state, e->v + nu, (size_t)nu * sizeof *unit_state);
    if (realise_kept) memcpy(realise_kept, e->v + 2 * nu, (size_t)nu * sizeof *realise_kept);
    if (realise_comm) memcpy(realise_comm, e->v + 3 * nu, (size_t)nu * sizeof *realise_comm);
    return e->rc;
  }
  /* every unit figure of the realisation, kept with it (the report reads the chosen plan's from here) */
  int64_t *v = malloc(4 * (size_t)nu * sizeof *v);
  if (!v) return realise_do(C, p, out, unit_ns, unit_state);
  int64_t *kept_user = realise_kept, *comm_user = realise_comm;
  realise_kept = v + 2 * nu, realise_comm = v + 3 * nu;
  int rc = realise_do(C, p, out, v, v + nu);
  realise_kept = kept_user, realise_comm = comm_user;
  if (rc >= 0) {
    if (unit_ns) memcpy(unit_ns, v, (size_t)nu * sizeof *unit_ns);
    if (unit_state) memcpy(unit_state, v + nu, (size_t)nu * sizeof *unit_state);
    if (kept_user) memcpy(kept_user, v + 2 * nu, (size_t)nu * sizeof *kept_user);
    if (comm_user) memcpy(comm_user, v + 3 * nu, (size_t)nu * sizeof *comm_user);
    if (!memo_tab) memo_tab = calloc(MEMO_MAX, sizeof *memo_tab);
    if (memo_tab && memo_n == MEMO_MAX) { /* full: start again */
      for (int i = 0; i < memo_n; i++) free(memo_tab[i].v);
      memo_n = 0;
    }
    if (memo_tab) {
      memo_tab[memo_n++] = (memo_entry){.memo = C->memo, .h = h, .nunits = nu, .rc = rc, .out = *out, .fb_ns = C->fb_ns,
                                        .tpc_ns = C->tpc_ns, .v = v};
      v = NULL;
    }
  }
  free(v);
  return rc;
}

/* ---------------------------------------------------------------- reduced modules
 *
 * A model whose layers are identical (same op sequence, result types and
 * argument types per unit) is costed on two reduced programs instead of the
 * full one: outer + layers 0, 1 and L-1 (r3), and outer + layers 0 and L-1
 * (r2). The layers in between are cut out of the training program: an op
 * kept that reads a value of the dropped layer L-2 (forward: the residual
 * stream entering the last layer) reads the same op's value in the last
 * kept middle layer instead, and one that reads a value of the first
 * dropped layer (backward: the gradient entering a kept layer) reads the
 * same op's value in the last layer. Their arguments and step results go.
 * Unit times and state memory of r3 map onto the full units (first layer,
 * middle layers = r3's layer 1, last layer); the rest of the memory (the
 * arena: activations kept for backward grow per layer) is extrapolated
 * linearly: rest(L) = rest(r3) + (L - 3) * (rest(r3) - rest(r2)). The
 * chosen plan is then realised in full for its exact cost. */

/* One (mesh, dmask, t_layer, t_outer) combination's reduced table (its
 * realisations on the reduced modules, made once per plan_search) and its
 * own memory budget: a choice of the combination that does not fit in full
 * corrects that combination's budget only (another combination's estimate
 * errs by its own amount). */
/* Choices per unit: no ZeRO and the stages 1-3 (docs/sharding.md, "ZeRO
 * stages"), each without and (a plan with a tp axis) with sequence
 * parallelism. Choice k of a unit is stage zs[k] (zero_choices; sp_extend
 * adds the sp choices, zs[k] | SP_CHOICE). */
/* A choice byte: the stage (bits 0-3), SP_CHOICE, and (tp_extend) the layer's tp choice in bits 5-6 (0: the
 * combination's t_layer). NZ: the most choices per unit (4 stages x (plain, sp, up to 3 other tp choices)). */
enum { NZ = 24, SP_CHOICE = 0x10, TP_SHIFT = 5, TP_BITS = 0x60, NTP = 4 };
/* The layers' tp choices of a combination ("the layers' tp choice per unit" below). */
typedef struct {
  int n;                      /* choices: [0] the combination's t_layer, then the others */
  int8_t val[NTP];            /* per choice: its gv_plan.tp_unit value (0: t_layer, -1 none, a + 1: axis a) */
  int64_t trans[NTP][NTP];    /* ns per boundary between consecutive layers of choices i and j (realised) */
  int64_t trans_bytes[NTP][NTP]; /* collective bytes per boundary (realised; for the report) */
  bool trans_known[NTP][NTP];
  bool need0; /* some layer must keep choice 0: else t_layer's axis would be idle, a plan search_all leaves out */
} tp_choices;
typedef struct {
  gv_plan key;
  int status; /* 0: the table below; 1: the combination does not realise; 2: pruned by a bound; 3: none of its plans
              * fits (solve_reduced: its smallest pattern over the limit), no table: nofit_* stand for it */
  gv_plan nofit_plan; /* status 3: the smallest pattern, its memory (the full program's estimate from r3) and a step */
  int64_t nofit_mem, nofit_ns;
  int64_t n3[4][NZ], s3[4][NZ], rest3, rest2;
  int64_t restL; /* the rest of the full program from r3's memory plans (red_full_lower; INT64_MIN: none) */
  int64_t midL[NZ]; /* per choice: what a middle layer at that choice adds to the full program (mem_full_layer; 0: unknown) */
  /* per stage: every unit at it on r3 (solve_reduced's table): realised (u3_done), its rc, step, memory and the full
   * program's estimate */
  bool u3_done[4];
  int u3_rc[4];
  int64_t u3_step[4], u3_mem[4], u3_full[4];
  int64_t limit; /* the budget the knapsack fills (the memory limit until a full realisation corrects it) */
  /* per stage s, every unit at s: its step and memory extrapolated from r3 and r2 at s (uni_done[s]: known; uni[s] < 0:
   * does not realise), and its memory's error once realised in full (plan_search; 0 before) */
  int64_t uni[4], uni_mem[4], uni_err[4];
  bool uni_done[4];
  int64_t lb; /* status 2 (pruned): the bound on any of its plans' steps (solve_reduced) */
  bool kept_in; /* unpruned once: not pruned again in this search */
  bool inc_out; /* status 2 by gv_plan_opts.incumbent_ns's bound: never unpruned */
  bool sp;                                  /* sequence parallelism searched: r3's baseline and sp realisations (sp_extend) */
  int64_t sp_ns[2][4], sp_kept[2][4];       /* [0] the baseline, [1] with sp on every unit: per r3 unit */
  /* per choice: what a middle layer with sp adds to the full program, and the rest with sp on every layer (both from
   * r3's memory plan with sp on every layer at each stage, as midL and restL; restS INT64_MIN: unknown) */
  int64_t midS[NZ], restS;
  /* the layers' other tp choices (tp_alternatives) on r3: P0 (the first table realisation, every layer at t_layer)
   * and U_j (every layer at choice j) per r3 unit, and the transitions (tp_tables); tc.n < 2: none searched */
  tp_choices tc;
  int64_t tp_ns[NTP][4], tp_state[NTP][4], tp_kept[NTP][4], tp_bytes[NTP];
  bool tp_ok[NTP];
} red_combo;

typedef struct reduced {
  gv_module *m3, *m2;
  ctx c3, c2;
  red_combo *combos;
  int ncombos, capcombos;
} reduced;

static bool type_eq(const gv_type *a, const gv_type *b) {
  if (a->dtype != b->dtype || a->rank != b->rank) return false;
  for (int k = 0; k < a->rank; k++)
    if (a->dims[k] != b->dims[k]) return false;
  return true;
}

/* The module with layers K-1 .. L-2 (0-based; units K .. L-1) cut out, or
 * NULL when the layers are not identical or the cut does not apply. */
static gv_module *build_reduced(const ctx *C, int K) {
  int L = C->nl;
  if (K < 2 || L < K + 2) return NULL;
  gv_module *m = clone_module(C->m);
  if (!m) return NULL;
  gv_func *f = m->main;
  gv_block *b = f->body;
  int nops = 0;
  for (gv_op *op = b->first; op; op = op->next) op->id = nops++;
  gv_op **list = malloc((size_t)(nops + 1) * sizeof *list);
  int *uop = malloc((size_t)(nops + 1) * sizeof *uop), *pos = malloc((size_t)(nops + 1) * sizeof *pos);
  int *cnt = calloc((size_t)L + 2, sizeof *cnt), *start = calloc((size_t)L + 2, sizeof *start);
  int *nargs = calloc((size_t)L + 2, sizeof *nargs), *newidx = malloc((size_t)b->nargs * sizeof *newidx + 1);
  bool ok = list && uop && pos && cnt && start && nargs && newidx;
  gv_op *term = gv_block_terminator(b);
  for (gv_op *op = b->first; ok && op; op = op->next) {
    uop[op->id] = op == term ? 0 : unit_of(C, op->loc);
    pos[op->id] = cnt[uop[op->id]]++;
  }
  for (int u = 1; ok && u <= L; u++) start[u + 1] = start[u] + cnt[u];
  for (gv_op *op = b->first; ok && op; op = op->next)
    if (uop[op->id]) list[start[uop[op->id]] + pos[op->id]] = op;
  /* identical layers: op codes, result types, argument types */
  for (int u = 2; ok && u <= L; u++) {
    ok = cnt[u] == cnt[1];
    for (int k = 0; ok && k < cnt[1]; k++) {
      const gv_op *a = list[start[1] + k], *c = list[start[u] + k];
      ok = a->code == c->code && a->nres == c->nres && a->nopnds == c->nopnds;
      for (int r = 0; ok && r < a->nres; r++) ok = type_eq(&a->res[r]->type, &c->res[r]->type);
    }
  }
  for (int i = 0; ok && i < b->nargs; i++) nargs[C->unit[i]]++;
  for (int u = 2; ok && u <= L; u++) ok = nargs[u] == nargs[1];
#define DROPPED(u) ((u) >= K && (u) <= L - 1)
  /* rewire the kept ops' reads of dropped layers */
  for (gv_op *op = b->first; ok && op; op = op->next) {
    if (op == term || DROPPED(uop[op->id])) continue;
    for (int i = 0; ok && i < op->nopnds; i++) {
      gv_value *v = op->opnds[i];
      if (!v->def) {
        ok = v->block != b || !DROPPED(C->unit[v->index]);
        continue;
      }
      if (v->def->parent != b || !DROPPED(uop[v->def->id])) continue;
      int d = uop[v->def->id], src = d == L - 1 ? K - 1 : d == K ? L : -1;
      if (src < 0) ok = false;
      else op->opnds[i] = list[start[src] + pos[v->def->id]]->res[v->index];
    }
  }
  /* the step's results: drop those of dropped layers */
  int nr = 0;
  for (int i = 0; ok && i < term->nopnds; i++) {
    gv_value *v = term->opnds[i];
    int upd = f->res_updates ? f->res_updates[i] : -1;
    bool drop = (v->def && v->def->parent == b && DROPPED(uop[v->def->id])) || (!v->def && v->block == b && DROPPED(C->unit[v->index])) ||
                (upd >= 0 && DROPPED(C->unit[upd]));
    if (drop) continue;
    if (f->res_names && i < f->nres_names) f->res_names[nr] = f->res_names[i];
    if (f->res_updates) f->res_updates[nr] = upd;
    term->opnds[nr++] = v;
  }
  if (ok) {
    if (f->res_names && f->nres_names > nr) f->nres_names = nr;
    term->nopnds = nr;
    for (gv_op *op = b->first, *next; op; op = next) {
      next = op->next;
      if (DROPPED(uop[op->id])) gv_op_unlink(op);
    }
    int j = 0;
    for (int i = 0; i < b->nargs; i++) {
      bool drop = DROPPED(C->unit[i]) && ((f->arg_is_param && f->arg_is_param[i]) || (f->arg_is_state && f->arg_is_state[i]));
      newidx[i] = drop ? -1 : j;
      if (drop) continue;
      b->args[j] = b->args[i];
      b->args[j]->index = j;
      if (f->arg_names) f->arg_names[j] = f->arg_names[i];
      if (f->arg_is_param) f->arg_is_param[j] = f->arg_is_param[i];
      if (f->param_data) f->param_data[j] = f->param_data[i];
      if (f->arg_is_state) f->arg_is_state[j] = f->arg_is_state[i];
      if (f->arg_sharding) f->arg_sharding[j] = f->arg_sharding[i];
      j++;
    }
    b->nargs = j;
    for (int i = 0; f->res_updates && i < nr; i++)
      if (f->res_updates[i] >= 0) f->res_updates[i] = newidx[f->res_updates[i]];
    for (gv_op *op = b->first; ok && op; op = op->next)
      for (int i = 0; ok && i < op->nopnds; i++)
        ok = op->opnds[i]->def ? op->opnds[i]->def->parent != b || !DROPPED(uop[op->opnds[i]->def->id])
                               : op->opnds[i]->block != b || op->opnds[i]->index < b->nargs;
  }
#undef DROPPED
  free(list), free(uop), free(pos), free(cnt), free(start), free(nargs), free(newidx);
  if (ok) {
    /* a fresh copy (the module the printer and parser would give: no unlinked ops, ids reset), checked: a
     * well-formed module, or none */
    gv_module *c = NULL;
    int fd = quiet_begin();
    if (!gv_verify(m)) c = clone_module(m);
    if (c && gv_verify(c)) gv_module_free(c), c = NULL;
    quiet_end(fd);
    gv_module_free(m);
    return c;
  }
  gv_module_free(m);
  return NULL;
}

static void red_free(reduced *R) {
  if (!R) return;
  if (R->m3) ctx_free(&R->c3), gv_module_free(R->m3);
  if (R->m2) ctx_free(&R->c2), gv_module_free(R->m2);
  free(R->combos);
  free(R);
}

/* The reduced modules for C, or NULL (then every candidate is realised in
 * full). GALV_PLAN_LAYERS=full turns them off, =reduced uses them from 5
 * layers on (comparisons); by default from RED_MIN_LAYERS layers. */
#define RED_MIN_LAYERS 12
static reduced *red_init(const ctx *C) {
  const char *e = getenv("GALV_PLAN_LAYERS");
  int min = e && !strcmp(e, "reduced") ? 5 : RED_MIN_LAYERS;
  if ((e && !strcmp(e, "full")) || C->nl < min) return NULL;
  reduced *R = calloc(1, sizeof *R);
  if (!R) return NULL;
  R->m3 = build_reduced(C, 3);
  if (R->m3 && ctx_init(&R->c3, R->m3, C->c, C->limit)) gv_module_free(R->m3), R->m3 = NULL;
  R->m2 = R->m3 ? build_reduced(C, 2) : NULL;
  if (R->m2 && ctx_init(&R->c2, R->m2, C->c, C->limit)) gv_module_free(R->m2), R->m2 = NULL;
  if (R->m3) R->c3.memo = C->memo ? (C->memo ^ 3) * 1099511628211ull : 0; /* the reduced programs follow from the full one */
  if (R->m2) R->c2.memo = C->memo ? (C->memo ^ 2) * 1099511628211ull : 0;
  if (!R->m3 || !R->m2 || R->c3.nl != 3 || R->c2.nl != 2) {
    red_free(R);
    return NULL;
  }
  return R;
}

/* ---------------------------------------------------------------- search */

static void name_axes(gv_plan *p, const gv_mesh *fixed) {
  int ndp = 0;
  for (int a = 0; a < p->naxes; a++) {
    if (fixed) snprintf(p->axis[a], sizeof p->axis[a], "%s", fixed->axis[a]);
    else if (p->dmask & (1u << a)) {
      if (ndp) snprintf(p->axis[a], sizeof p->axis[a], "dp%d", ndp);
      else snprintf(p->axis[a], sizeof p->axis[a], "dp");
      ndp++;
    }
    else if (a == p->t_layer) snprintf(p->axis[a], sizeof p->axis[a], "tp");
    else if (a == p->t_outer) snprintf(p->axis[a], sizeof p->axis[a], "vp");
    else snprintf(p->axis[a], sizeof p->axis[a], "rep"); /* idle: its ranks compute the same values */
  }
}

typedef struct {
  gv_plan best;
  gv_plan_cost best_cost;
  int64_t best_pred, best_pred_mem; /* the search's prediction of the best plan (reduced: scaled) */
  bool found;
  int64_t min_mem;  /* the smallest memory any candidate needs (predicted on the reduced programs) */
  int64_t min_pred; /* the same as predicted, kept when min_mem becomes the full realisation's (-1: none) */
  gv_plan min_mem_plan;
  bool min_realised; /* min_mem / min_mem_cost: the full realisation of the smallest (reduced search, no fit) */
  bool min_terms;    /* min_mem_cost holds the smallest candidate's realised terms (every candidate realised in full) */
  gv_plan_cost min_mem_cost;
  bool over;        /* a candidate was over the limit: */
  int64_t over_ns, over_mem; /* the fastest such (predicted) and the smallest */
  gv_plan over_plan; /* the fastest such */
  int64_t over_plan_mem;
  int64_t inc_out, inc_ns; /* the combinations gv_plan_opts.incumbent_ns's bound left out, and the step it was */
  bool has_ru;      /* the runner-up: the fastest fitting candidate of another mesh / strategy than best's */
  gv_plan ru;
  int64_t ru_ns, ru_mem;
  bool has_nosp;    /* the fastest fitting candidate with no sp unit (sp_final) */
  gv_plan nosp;
  int64_t nosp_ns;
  bool reduced;     /* costed on the reduced programs (plan_search) */
  bool estimated;   /* reduced: the choice predicted over gv_plan_opts.over_ns, not realised in full (its prediction) */
  int retries;      /* reduced: searches again because the choice did not fit in full */
  bool has_uni;     /* reduced: the fastest uniform pattern (every unit at one stage) predicted within the limit */
  gv_plan uni;
  int64_t uni_ns, uni_mem;
  bool has_alt;     /* reduced: the fastest knapsack mix over the ZeRO stages alone predicted within the budget */
  gv_plan alt;
  int64_t alt_ns, alt_mem;
  bool has_notp;    /* reduced: the fastest candidate predicted within the budget with every layer at t_layer */
  gv_plan notp;
  int64_t notp_ns, notp_mem;
} search;

/* The stages the search chooses from for p's units: zs[0] = 0 (no ZeRO),
 * then those of gv_plan_opts.zero_stages (bit s: stage s; 0: 2 and 3, the
 * default: stage 1 is dominated by stage 2 on every count the cost model
 * prices, more communication (an all_reduce, not a reduce_scatter, of the
 * gradients) and more memory (whole gradients), so realising it would only
 * slow the search; --zero-stages 1 asks for it; with microbatches the
 * default prices stage 1 on every unit too: zero1_uniform). Only stage 0
 * without training or batch axes. Returns their count. */
static int zero_choices(const ctx *C, const gv_plan *p, uint8_t zs[NZ]) {
  int n = 0;
  zs[n++] = 0;
  unsigned mask = gv_plan_opts.zero_stages ? gv_plan_opts.zero_stages : 0xCu;
  for (int st = 1; C->train && p->dmask && st <= 3; st++)
    if (mask & (1u << st)) zs[n++] = (uint8_t)st;
  return n;
}

/* ZeRO-1 on every unit as one more candidate of p's combination, beside the
 * table's stages: under the default --zero-stages (stage 1 not a per-unit
 * choice) when the program accumulates microbatches. Stage 1 then reduces
 * each gradient sum once per step (an all_reduce where the sums are read)
 * while stage 2 reduce-scatters every microbatch's gradients, so neither
 * dominates (Megatron Table 1 row 1, dp=32, 4 microbatches: ZeRO-1 608
 * collectives, 2274.9 ms; ZeRO-2 1478, 2431.4 ms; none 2355.9 ms). With one
 * microbatch both reduce once and stage 2 moves less and holds less (row 1:
 * 2195.5 against 2202.6 ms), so stage 1 adds nothing there. One realisation
 * per combination (two on the reduced programs), not the table's four. */
static bool zero1_uniform(const ctx *C, const gv_plan *p) {
  return !gv_plan_opts.zero_stages && C->train && p->dmask && microbatch_copies(C->m) > 1;
}

static int choice_of(const uint8_t *zs, int nz, int stage) {
  for (int k = 0; k < nz; k++)
    if (zs[k] == stage) return k;
  return 0;
}

/* Exact minimum of sum ns[u][z_u] with sum st[u][z_u] + rest <= limit,
 * over the nz choices of each unit; zero[u] = the chosen stage zs[z_u].
 * The states in units of g = cap / 100000 + 1 bytes (rounded up), the
 * capacity cap / g. knapsack_dense: the table over every capacity. */
static int64_t knapsack_dense(int nu, int64_t (*ns)[NZ], int64_t (*st)[NZ], int nz, int64_t cap, const uint8_t *zs, uint8_t *zero) {
  if (cap < 0) return -1;
  int64_t g = cap / 100000 + 1;
  int64_t C = cap / g;
  int64_t *f = malloc((size_t)(C + 1) * sizeof *f), *h = malloc((size_t)(C + 1) * sizeof *h);
  uint8_t *ch = malloc((size_t)nu * (size_t)(C + 1));
  if (!f || !h || !ch) {
    free(f), free(h), free(ch);
    return -2;
  }
  for (int64_t c = 0; c <= C; c++) f[c] = 0;
  for (int u = 0; u < nu; u++) {
    int64_t w[NZ];
    for (int z = 0; z < nz; z++) w[z] = (st[u][z] + g - 1) / g;
    /* per capacity the first choice of the least time (choices in order,
     * each a pass over the capacities: no branch per choice and capacity) */
    uint8_t *cu = ch + (size_t)u * (size_t)(C + 1);
    for (int64_t c = 0; c <= C; c++) h[c] = INT64_MAX;
    memset(cu, 0, (size_t)(C + 1));
    for (int z = 0; z < nz; z++) {
      int64_t t = ns[u][z];
      for (int64_t c = w[z] < 0 ? 0 : w[z]; c <= C; c++) {
        int64_t v = f[c - w[z]];
        if (v != INT64_MAX && v + t < h[c]) h[c] = v + t, cu[c] = (uint8_t)z;
      }
    }
    memcpy(f, h, (size_t)(C + 1) * sizeof *f);
  }
  int64_t best = f[C];
  if (best != INT64_MAX) {
    int64_t c = C;
    for (int u = nu - 1; u >= 0; u--) {
      uint8_t z = ch[(size_t)u * (size_t)(C + 1) + (size_t)c];
      zero[u] = zs[z];
      c -= (st[u][z] + g - 1) / g;
    }
  } else best = -1;
  free(f), free(h), free(ch);
  return best;
}

/* The same knapsack over Pareto frontiers (docs/planner.md, "Cheaper realisations"): after each unit the
 * (state, time) points of the units so far that no other point beats in both (state within the capacity), sorted
 * by state with the time falling; the least time within capacity c is the last point at or under c. The choice
 * per unit is then taken back from the last unit exactly as the table does (per remaining capacity the first
 * choice of the least time), so the same choice; the work is the frontiers' sizes, not the capacity's. */
typedef struct {
  int64_t w, t;
} kp_point;

static int kp_cmp(const void *a, const void *b) {
  const kp_point *x = a, *y = b;
  return x->w != y->w ? (x->w < y->w ? -1 : 1) : x->t != y->t ? (x->t < y->t ? -1 : 1) : 0;
}

/* the least time within capacity c over frontier fr[0..n) (INT64_MAX: none) */
static int64_t kp_best(const kp_point *fr, int64_t n, int64_t c) {
  int64_t lo = 0, hi = n; /* the first point over c */
  while (lo < hi) {
    int64_t mid = (lo + hi) / 2;
    if (fr[mid].w <= c) lo = mid + 1;
    else hi = mid;
  }
  return lo ? fr[lo - 1].t : INT64_MAX;
}

static int64_t knapsack(int nu, int64_t (*ns)[NZ], int64_t (*st)[NZ], int nz, int64_t cap, const uint8_t *zs, uint8_t *zero) {
  if (cap < 0) return -1;
  if (nu <= 0 || nu > GV_PLAN_MAX_UNITS || nz <= 0) return knapsack_dense(nu, ns, st, nz, cap, zs, zero);
  int64_t g = cap / 100000 + 1, C = cap / g;
  for (int u = 0; u < nu; u++)
    for (int z = 0; z < nz; z++)
      if (st[u][z] < 0 || st[u][z] > INT64_MAX / 4 || ns[u][z] < 0 || ns[u][z] > INT64_MAX / 4 / (nu + 1))
        return knapsack_dense(nu, ns, st, nz, cap, zs, zero);
  kp_point **fr = calloc((size_t)nu, sizeof *fr);
  int64_t *fn = calloc((size_t)nu, sizeof *fn);
  kp_point *cand = NULL;
  int64_t best = -1, cap_c = 0;
  bool oom = !fr || !fn;
  if (oom) goto out;
  kp_point start = {0, 0};
  const kp_point *prev = &start;
  int64_t np = 1;
  for (int u = 0; u < nu; u++) {
    int64_t w[NZ];
    for (int z = 0; z < nz; z++) w[z] = (st[u][z] + g - 1) / g;
    if (np * nz > cap_c) {
      kp_point *c2 = realloc(cand, (size_t)(np * nz) * sizeof *cand);
      if (!c2) {
        oom = true;
        goto out;
      }
      cand = c2, cap_c = np * nz;
    }
    int64_t n = 0;
    for (int64_t i = 0; i < np; i++)
      for (int z = 0; z < nz; z++)
        if (prev[i].w + w[z] <= C) cand[n++] = (kp_point){prev[i].w + w[z], prev[i].t + ns[u][z]};
    if (!n) goto out; /* nothing fits */
    qsort(cand, (size_t)n, sizeof *cand, kp_cmp);
    int64_t k = 0;
    for (int64_t i = 0; i < n; i++)
      if (!k || cand[i].t < cand[k - 1].t) cand[k++] = cand[i];
    fr[u] = malloc((size_t)k * sizeof **fr);
    if (!fr[u]) {
      oom = true;
      goto out;
    }
    memcpy(fr[u], cand, (size_t)k * sizeof **fr);
    fn[u] = k, prev = fr[u], np = k;
  }
  best = fr[nu - 1][fn[nu - 1] - 1].t;
  int64_t c = C;
  for (int u = nu - 1; u >= 0; u--) {
    int64_t bv = INT64_MAX;
    int bz = 0;
    for (int z = 0; z < nz; z++) {
      int64_t wz = (st[u][z] + g - 1) / g;
      if (wz > c) continue;
      int64_t v = u ? kp_best(fr[u - 1], fn[u - 1], c - wz) : 0;
      if (v != INT64_MAX && v + ns[u][z] < bv) bv = v + ns[u][z], bz = z;
    }
    zero[u] = zs[bz];
    c -= (st[u][bz] + g - 1) / g;
  }
out:
  for (int u = 0; fr && u < nu; u++) free(fr[u]);
  if (oom) best = -2;
  free(fr), free(fn), free(cand);
  return best;
}

/* ---------------------------------------------------------------- sequence parallelism as a choice
 *
 * Under a plan with a tp axis for the layers every unit may run Megatron-SP
 * (docs/sharding.md, "Sequence parallelism"): the values between its
 * tensor-parallel blocks split over the sequence, its all_reduces become
 * reduce_scatter + all_gather pairs. What it changes is a unit's time (less
 * elementwise work, more collectives, each paying its latency) and the
 * activations it keeps for backward; the unit's state is the same. One
 * more realisation per combination measures both: the combination's first
 * table realisation (its baseline) again with sp on every unit. The
 * differences, per unit, are added to each of the unit's ZeRO choices as a
 * second set of choices (the kept activations join the state the knapsack
 * packs, for both sets, and leave the rest), so the knapsack picks per unit
 * the stage and sp together; a unit sp changes nothing in (same time, same
 * kept bytes) ties, and the tie keeps sp off. The boundary reshards between
 * an sp unit and a plain one are not in the table: each pattern the
 * knapsack picks is realised, and its realised cost is the one compared
 * (GALV_PLAN_SP=off leaves sp out of the search). */

/* gv_plan_intra (the pipeline stages) searches sp in the planner's own
 * stage plans: a stage compiled from such a plan sets the plan's sp units
 * as its region (gv_plan_sp_region) after gv_plan_apply, so the stage that
 * runs is the one priced. A stage of a preset (gv_plan_opts.intra_roles)
 * is compiled by propagate-sharding from --strategy: dp,tp,sp has sp on
 * every op (intra_sp), the others none, so its search leaves sp out. */
static bool sp_excluded;

/* Whether p's combination searches sp: a tp axis for the layers, no
 * layer with its own axis (--plan only). */
static bool env_off(const char *name) {
  const char *e = getenv(name);
  return e && !strcmp(e, "off");
}

static bool sp_searchable(const ctx *C, const gv_plan *p) {
  if (sp_excluded || env_off("GALV_PLAN_SP") || p->t_layer < 0 || !C->layer_roles || p->nunits > GV_PLAN_MAX_UNITS) return false;
  for (int u = 0; u < p->nunits; u++)
    if (p->tp_unit[u]) return false;
  return true;
}

/* Per-unit figures of a realisation, for sp_extend, and the realisation
 * itself (its pattern as the knapsack writes it, zero | SP_CHOICE, and its
 * cost), which the knapsack's tries reuse instead of realising it again. */
typedef struct {
  int64_t *ns, *kept; /* per unit: its share of the step, its activations kept for backward */
  uint8_t *key;
  gv_plan_cost pc;
  bool have;
} sp_units;

static int sp_units_alloc(sp_units *a, int nu) {
  a->ns = calloc((size_t)nu, sizeof *a->ns);
  a->kept = calloc((size_t)nu, sizeof *a->kept);
  a->key = calloc((size_t)nu, 1);
  return a->ns && a->kept && a->key ? 0 : -1;
}

static void sp_units_free(sp_units *a) { free(a->ns), free(a->kept), free(a->key); }

/* a's realisation when it is the pattern zero (zero | SP_CHOICE per unit), else NULL */
static const gv_plan_cost *sp_known(const sp_units *a, const uint8_t *zero, int nu) {
  return a->have && !memcmp(a->key, zero, (size_t)nu) ? &a->pc : NULL;
}

/* Realises p (its ZeRO pattern as set; a module of nu units on R) with sp
 * on every unit into *a. Returns realise's result. */
static int sp_realise(ctx *R, gv_plan *p, int nu, gv_plan_cost *pc, sp_units *a) {
  gv_plan q = *p;
  q.nunits = nu;
  memset(q.sp, 1, (size_t)nu);
  realise_kept = a->kept;
  int r = realise(R, &q, pc, a->ns, NULL);
  realise_kept = NULL;
  return r;
}

/* Adds the sp choices: columns nz..2nz-1 of ns / st, from base (the
 * realisation without sp) and on (the same with sp on every unit), per
 * unit; both sets' state grows by the unit's kept activations and *rest
 * (the memory no unit's choice holds) loses them. zs[nz + k] = zs[k] |
 * SP_CHOICE. Returns the number of choices. */
static int sp_extend(int nu, int64_t (*ns)[NZ], int64_t (*st)[NZ], uint8_t *zs, int nz, const sp_units *base, const sp_units *on,
                     int64_t *rest) {
  for (int u = 0; u < nu; u++) {
    int64_t dns = on->ns[u] - base->ns[u];
    for (int z = 0; z < nz; z++) {
      ns[u][nz + z] = ns[u][z] + dns > 0 ? ns[u][z] + dns : 0;
      st[u][nz + z] = st[u][z] + on->kept[u];
      st[u][z] += base->kept[u];
    }
    *rest -= base->kept[u];
  }
  for (int z = 0; z < nz; z++) zs[nz + z] = (uint8_t)(zs[z] | SP_CHOICE);
  return 2 * nz;
}

/* A knapsack's zero[] (stages | SP_CHOICE) into p's zero and sp. */
static void sp_decode(gv_plan *p) {
  for (int u = 0; u < p->nunits; u++) {
    p->sp[u] = (p->zero[u] & SP_CHOICE) != 0;
    p->zero[u] &= (uint8_t)~SP_CHOICE;
  }
}

/* Unit u's choice (index into zs) under p. */
static int plan_choice(const uint8_t *zs, int nc, const gv_plan *p, int u) {
  return choice_of(zs, nc, (uint8_t)(p->zero[u] | (p->sp[u] ? SP_CHOICE : 0)));
}

/* The same mesh and strategy (ZeRO stages and sp aside). */
static bool same_combo(const gv_plan *a, const gv_plan *b) {
  if (a->naxes != b->naxes || a->dmask != b->dmask || a->t_layer != b->t_layer || a->t_outer != b->t_outer) return false;
  for (int i = 0; i < a->naxes; i++)
    if (a->size[i] != b->size[i]) return false;
  return true;
}

static void consider(search *S, const gv_plan *p, const gv_plan_cost *pc, int64_t pred, int64_t limit) {
  if (pc->mem_total < S->min_mem || S->min_mem < 0) {
    S->min_mem = pc->mem_total, S->min_mem_plan = *p;
    /* a realised candidate's terms (a reduced prediction has none: plan_search realises it at the end) */
    S->min_terms = pc->mem_params > 0 || pc->mem_activations > 0;
    if (S->min_terms) S->min_mem_cost = *pc;
  }
  if (pc->mem_total > limit) {
    if (!S->over || pc->step_ns < S->over_ns) S->over_ns = pc->step_ns, S->over_plan = *p, S->over_plan_mem = pc->mem_total;
    if (!S->over || pc->mem_total < S->over_mem) S->over_mem = pc->mem_total;
    S->over = true;
    return;
  }
  bool sp = false;
  for (int u = 0; u < p->nunits && !sp; u++) sp = p->sp[u] != 0;
  if (!sp && (!S->has_nosp || pc->step_ns < S->nosp_ns)) S->has_nosp = true, S->nosp = *p, S->nosp_ns = pc->step_ns;
  bool tpu = false;
  for (int u = 0; u < p->nunits && !tpu; u++) tpu = p->tp_unit[u] != 0;
  if (!tpu && (!S->has_notp || pc->step_ns < S->notp_ns))
    S->has_notp = true, S->notp = *p, S->notp_ns = pc->step_ns, S->notp_mem = pc->mem_total;
  /* the runner-up (report): best's old combination when another wins, or a slower other combination */
  if (S->found && !same_combo(p, &S->best)) {
    if (pc->step_ns < S->best_cost.step_ns) S->has_ru = true, S->ru = S->best, S->ru_ns = S->best_cost.step_ns, S->ru_mem = S->best_pred_mem;
    else if (!S->has_ru || pc->step_ns < S->ru_ns) S->has_ru = true, S->ru = *p, S->ru_ns = pc->step_ns, S->ru_mem = pc->mem_total;
  }
  if (!S->found || pc->step_ns < S->best_cost.step_ns) {
    S->found = true;
    S->best = *p;
    S->best_cost = *pc;
    S->best_pred = pred;
    S->best_pred_mem = pc->mem_total;
  }
}

static void consider_pred(search *S, const gv_plan *p, int64_t pred, int64_t mem, int64_t limit) {
  gv_plan_cost pc;
  memset(&pc, 0, sizeof pc);
  pc.step_ns = pred;
  pc.mem_total = mem;
  consider(S, p, &pc, pred, limit);
}

/* ---------------------------------------------------------------- the layers' tp choice per unit
 *
 * Under a combination whose layers have a tp axis (t_layer) each layer may
 * instead take another non-batch axis of the mesh or none (degree 1: its
 * weights whole, its compute repeated over the tp ranks): plan.json's
 * units[].tp_axis, gv_plan.tp_unit. What a layer's choice changes is its
 * time, its state and the activations it keeps for backward, and it may
 * cost a reshard where two consecutive layers differ. Per other choice j
 * the combination's first table realisation (P0: its ZeRO pattern, every
 * layer at t_layer) is realised again with every layer at j (U_j): per
 * unit, its share of the step, its state and its kept activations. The
 * differences to P0 become a further set of columns of the unit table,
 * beside each stage's (tp_extend; a unit's state scaled by the ratio its
 * state has under j at P0's stage). Per pair of choices i, j the layers
 * alternating between them (A_ij) give the transition: the realised sum of
 * the unit shares above what the columns predict, per boundary between
 * consecutive layers (clamped at 0), with the collective bytes it adds.
 * The choices then are a chain: tp_knapsack minimises the table's time
 * plus the transitions between consecutive layers within the memory
 * budget (a DP over memory and the previous layer's tp choice). Every
 * pattern it picks is realised and compared at its realised cost, as the
 * ZeRO patterns are; U_j and A_ij are candidates themselves.
 * GALV_PLAN_LAYER_TP=off leaves the choice out. On the reduced programs
 * (repeated identical layers, 12 or more) U_j and A_ij are realised on r3
 * and mapped onto the full units as its table is (red_tp_tables,
 * red_tp_choice); the candidate is realised in full by plan_search, beside
 * the fastest candidate with every layer at t_layer. Not searched under
 * --plan-search exhaustive, in a pipeline stage's plan (gv_plan_intra), or
 * with sp on a layer of another tp choice (the two sets of columns stay
 * apart: a unit with sp keeps t_layer). */

static bool tp_excluded; /* gv_plan_intra: the stage plans keep one tp axis */

/* GALV_PLAN_IDLE=off: plans with an idle (replicating) axis are left out where the batch splits over every device
 * (the search before they were searched there; search_all) */
static bool idle_off(void) { return env_off("GALV_PLAN_IDLE"); }


/* The layers' tp choices of p's combination: none when disabled, without a
 * tp axis for the layers, or with a layer of its own axis already (--plan). */
static void tp_alternatives(const ctx *C, const gv_plan *p, tp_choices *tc) {
  memset(tc, 0, sizeof *tc);
  tc->n = 1;
  if (tp_excluded || env_off("GALV_PLAN_LAYER_TP") || p->t_layer < 0 || !C->layer_roles || C->nl < 1 || p->nunits > GV_PLAN_MAX_UNITS)
    return;
  for (int u = 0; u < p->nunits; u++)
    if (p->tp_unit[u]) return;
  /* as search_all: an axis that only replicates is searched only when the batch does not split over all devices */
  int64_t devices = 1;
  bool size1 = false;
  for (int a = 0; a < p->naxes; a++) devices *= p->size[a], size1 |= p->size[a] == 1;
  /* (with every layer off t_layer the plan is that of the combination without t_layer, which search_all searches as one
   * with an idle axis: the table would only find it again) */
  tc->need0 = p->t_layer != p->t_outer && !size1 && C->mb_batch % devices == 0;
  tc->val[tc->n++] = -1;
  for (int a = 0; a < p->naxes && tc->n < NTP; a++)
    if (a != p->t_layer && !(p->dmask & (1u << a)) && p->size[a] > 1) tc->val[tc->n++] = (int8_t)(a + 1);
}

/* Choice j's index of a tp_unit value (0 when it is none of them). */
static int tp_index(const tp_choices *tc, int8_t v) {
  for (int j = 0; j < tc->n; j++)
    if (tc->val[j] == v) return j;
  return 0;
}

/* One realisation's per-unit figures for tp_extend. */
typedef struct {
  int64_t *ns, *state, *kept;
  int64_t coll_bytes;
  bool ok;
} tp_units;

static int tp_units_alloc(tp_units *a, int nu) {
  a->ns = calloc((size_t)nu, sizeof *a->ns);
  a->state = calloc((size_t)nu, sizeof *a->state);
  a->kept = calloc((size_t)nu, sizeof *a->kept);
  return a->ns && a->state && a->kept ? 0 : -1;
}

static void tp_units_free(tp_units *a) { free(a->ns), free(a->state), free(a->kept); }

/* P0's figures into a (kept: when not NULL, the kept activations another
 * buffer received) and its ZeRO pattern into p0_zero. */
static void tp_p0(tp_units *a, int nu, const int64_t *ns, const int64_t *state, const int64_t *kept, const gv_plan_cost *pc,
                  const uint8_t *zero, uint8_t *p0_zero) {
  memcpy(a->ns, ns, (size_t)nu * sizeof *ns);
  memcpy(a->state, state, (size_t)nu * sizeof *state);
  if (kept) memcpy(a->kept, kept, (size_t)nu * sizeof *kept);
  a->coll_bytes = 0;
  for (int i = 0; i < 4; i++) a->coll_bytes += pc->coll_bytes[i];
  memcpy(p0_zero, zero, (size_t)nu);
  a->ok = true;
}

/* Realises q into a (per-unit shares, state, kept activations) and offers
 * it as a candidate. Returns realise's result (1: no candidate, a->ok false). */
static int tp_realise(ctx *C, const gv_plan *q, tp_units *a, search *S, bool candidate) {
  gv_plan_cost pc;
  realise_kept = a->kept;
  int r = realise(C, q, &pc, a->ns, a->state);
  realise_kept = NULL;
  a->ok = !r;
  if (r) return r;
  a->coll_bytes = 0;
  for (int i = 0; i < 4; i++) a->coll_bytes += pc.coll_bytes[i];
  if (candidate && S) consider(S, q, &pc, pc.step_ns, C->limit);
  return 0;
}

/* Layer u's share of the step under choice j (1..n-1), from U_j, the
 * outer unit's change under U_j split between the first and last layer. */
static int64_t tp_layer_ns(int nu, const tp_units *base, const tp_units *uj, int u) {
  int64_t d0 = uj->ns[0] - base->ns[0], h = d0 / 2, v = uj->ns[u];
  if (u == 1) v += nu == 2 ? d0 : h;
  else if (u == nu - 1) v += d0 - h;
  return v;
}

/* The realisations of the other tp choices of p's combination (p: P0's
 * pattern, every layer at t_layer; base: P0's figures): U_j into u[j], and
 * the transitions from the alternating patterns A_ij. Returns 0, or -1. */
static int tp_tables(ctx *C, const gv_plan *p, search *S, tp_choices *tc, const tp_units *base, tp_units *uj) {
  int nu = p->nunits, L = nu - 1;
  for (int j = 1; j < tc->n; j++) {
    gv_plan q = *p;
    for (int u = 1; u < nu; u++) q.tp_unit[u] = tc->val[j];
    if (!uj[j].ns && tp_units_alloc(&uj[j], nu)) return gv_error(C->m, "out of memory");
    if (tp_realise(C, &q, &uj[j], S, !tc->need0) < 0) return -1;
    /* a choice no faster and no smaller than t_layer on every layer adds nothing: no transitions, no columns */
    bool dominated = uj[j].ok;
    for (int u = 1; dominated && u < nu; u++)
      dominated = tp_layer_ns(nu, base, &uj[j], u) >= base->ns[u] && uj[j].state[u] + uj[j].kept[u] >= base->state[u] + base->kept[u];
    if (dominated) uj[j].ok = false;
  }
  tp_units a = {0};
  if (L >= 2 && tp_units_alloc(&a, nu)) return gv_error(C->m, "out of memory");
  for (int i = 0; L >= 2 && i < tc->n; i++)
    for (int j = i + 1; j < tc->n; j++) {
      if ((i && !uj[i].ok) || !uj[j].ok) continue;
      gv_plan q = *p;
      int8_t ch[2] = {(int8_t)i, (int8_t)j};
      for (int u = 1; u < nu; u++) q.tp_unit[u] = tc->val[ch[u % 2]];
      int r = tp_realise(C, &q, &a, S, i == 0 || !tc->need0);
      if (r < 0) {
        tp_units_free(&a);
        return -1;
      }
      if (r) continue;
      /* the table's prediction of A_ij's unit shares and bytes: P0's, each layer at its choice's column */
      int64_t pred = 0, got = 0;
      double bytes = (double)base->coll_bytes;
      for (int u = 0; u < nu; u++) got += a.ns[u], pred += base->ns[u];
      for (int u = 1; u < nu; u++) {
        int c = ch[u % 2];
        if (!c) continue;
        pred += tp_layer_ns(nu, base, &uj[c], u) - base->ns[u];
        bytes += (double)(uj[c].coll_bytes - base->coll_bytes) / L;
      }
      int64_t t = (got - pred) / (L - 1);
      tc->trans[i][j] = tc->trans[j][i] = t > 0 ? t : 0;
      int64_t tb = (int64_t)(((double)a.coll_bytes - bytes) / (L - 1));
      tc->trans_bytes[i][j] = tc->trans_bytes[j][i] = tb;
      tc->trans_known[i][j] = tc->trans_known[j][i] = true;
      if (getenv("GALV_PLAN_DEBUG"))
        fprintf(stderr, "plan-debug: tp choices %d/%d: realised unit shares %lld ns, the table's %lld: %lld ns and %lld collective bytes "
                        "per boundary\n", tc->val[i], tc->val[j], (long long)got, (long long)pred, (long long)t, (long long)tb);
    }
  tp_units_free(&a);
  return 0;
}

/* Adds the columns of the other tp choices to the unit table: for choice j
 * and each stage column z < nz, at nc + (j - 1) nz + z: the layer's time
 * shifted by U_j's change of its share, its state scaled by U_j's state
 * ratio at P0's stage, its kept activations U_j's. The table's existing
 * columns hold base's kept activations (with_kept: sp_extend added them;
 * else they are added here and leave *rest). The outer unit takes no other
 * choice (its columns an impossible weight). Returns the number of choices. */
static int tp_extend(int nu, int64_t (*ns)[NZ], int64_t (*st)[NZ], uint8_t *zs, int nz, int nc, bool with_kept, const tp_choices *tc,
                     const tp_units *base, const tp_units *uj, int64_t *rest) {
  if (!with_kept)
    for (int u = 0; u < nu; u++) {
      for (int z = 0; z < nc; z++) st[u][z] += base->kept[u];
      *rest -= base->kept[u];
    }
  int n = nc;
  for (int j = 1; j < tc->n; j++) {
    if (!uj[j].ok) continue;
    for (int z = 0; z < nz; z++, n++) {
      zs[n] = (uint8_t)(zs[z] | (j << TP_SHIFT));
      ns[0][n] = INT64_MAX / 4, st[0][n] = INT64_MAX / 4;
      for (int u = 1; u < nu; u++) {
        int64_t d = tp_layer_ns(nu, base, &uj[j], u) - base->ns[u], s = st[u][z] - base->kept[u];
        ns[u][n] = ns[u][z] + d > 0 ? ns[u][z] + d : 0;
        if (base->state[u] > 0) s = (int64_t)((double)s * (double)uj[j].state[u] / (double)base->state[u] + 0.5);
        st[u][n] = s + uj[j].kept[u];
      }
    }
  }
  return n;
}

/* A choice's tp index (bits 5-6). */
static int tp_of(uint8_t z) { return (z & TP_BITS) >> TP_SHIFT; }

/* The knapsack over a chain: the minimum of sum ns[u][z_u] plus tc's
 * transition between consecutive layers' tp choices, with sum st[u][z_u]
 * <= cap; zero[u] = zs[z_u]. A DP over memory and a state per unit: the
 * previous layer's tp choice and whether a layer so far took choice 0
 * (required with tc->need0). Its granule is knapsack's times the states
 * (cap / (100000 / states): the same work per unit as knapsack's). Returns
 * the table's time, -1 when nothing fits, -2 out of memory. */
/* A column's weight in tp_knapsack's granules: W (cannot fit) for the impossible columns, 0 for a state the
 * table's corrections left at or below 0 (the reduced programs' columns: what a layer adds less its kept
 * activations, scaled, can come out negative) */
static int64_t tp_weight(int64_t st, int64_t g, int64_t W) { return st >= INT64_MAX / 8 ? W : st <= 0 ? 0 : (st + g - 1) / g; }

static int64_t tp_knapsack(int nu, int64_t (*ns)[NZ], int64_t (*st)[NZ], int nc, int64_t cap, const uint8_t *zs, const tp_choices *tc,
                           uint8_t *zero) {
  if (cap < 0) return -1;
  int nt = tc->n, ns2 = 2 * nt; /* state s = t + nt * (a layer at choice 0 so far) */
  int64_t cells = 100000 / ns2;
  if ((int64_t)nu * ns2 * cells > (int64_t)1 << 26) cells = ((int64_t)1 << 26) / ((int64_t)nu * ns2) + 1;
  int64_t g = cap / cells + 1, Cn = cap / g, W = Cn + 1;
  size_t cellsz = (size_t)nu * (size_t)ns2 * (size_t)W;
  int64_t *f = malloc((size_t)(ns2 * W) * sizeof *f), *h = malloc((size_t)(ns2 * W) * sizeof *h), *m = malloc((size_t)W * sizeof *m);
  uint8_t *ms = malloc((size_t)W), *ch = malloc(cellsz), *ps = malloc(cellsz);
  if (!f || !h || !m || !ms || !ch || !ps) {
    free(f), free(h), free(m), free(ms), free(ch), free(ps);
    return -2;
  }
  const int64_t INF = INT64_MAX;
  for (int64_t i = 0; i < ns2 * W; i++) f[i] = INF;
  for (int64_t c = 0; c < W; c++) f[c] = 0; /* before the outer unit: choice 0, no layer yet */
  for (int u = 0; u < nu; u++) {
    int64_t w[NZ];
    int zl[NTP][NZ], nzl[NTP] = {0}; /* the unit's choices per tp choice (those that can fit) */
    for (int z = 0; z < nc; z++) {
      w[z] = tp_weight(st[u][z], g, W);
      if (w[z] < W) zl[tp_of(zs[z])][nzl[tp_of(zs[z])]++] = z;
    }
    for (int64_t i = 0; i < ns2 * W; i++) h[i] = INF;
    for (int s2 = 0; s2 < ns2; s2++) {
      int t2 = s2 % nt, k2 = s2 / nt;
      if ((!u && s2) || !nzl[t2]) continue; /* the outer unit: choice 0, no layer */
      /* m[c]: the best predecessor state s (flag k: k2, or 0 when this layer takes choice 0 and sets it) */
      for (int64_t c = 0; c < W; c++) {
        m[c] = INF, ms[c] = 0;
        for (int s = 0; s < ns2; s++) {
          int t = s % nt, k = s / nt;
          int kn = u ? (k || !t2) : 0;
          if (kn != k2) continue;
          int64_t v = f[s * W + c];
          if (v == INF) continue;
          if (u >= 2 && t != t2) v += tc->trans[t][t2];
          if (v < m[c]) m[c] = v, ms[c] = (uint8_t)s;
        }
      }
      for (int64_t c = 0; c < W; c++) {
        int64_t bv = INF;
        uint8_t bz = 0, bs = 0;
        for (int i = 0; i < nzl[t2]; i++) {
          int z = zl[t2][i];
          if (w[z] <= c && m[c - w[z]] != INF && m[c - w[z]] + ns[u][z] < bv)
            bv = m[c - w[z]] + ns[u][z], bz = (uint8_t)z, bs = ms[c - w[z]];
        }
        h[s2 * W + c] = bv;
        ch[((size_t)u * ns2 + s2) * W + c] = bz;
        ps[((size_t)u * ns2 + s2) * W + c] = bs;
      }
    }
    memcpy(f, h, (size_t)(ns2 * W) * sizeof *f);
  }
  int64_t best = INF;
  int bs = 0;
  for (int s = 0; s < ns2; s++)
    if ((!tc->need0 || nu < 2 || s >= nt) && f[s * W + Cn] < best) best = f[s * W + Cn], bs = s;
  if (best != INF) {
    int64_t c = Cn;
    for (int u = nu - 1; u >= 0; u--) {
      size_t i = ((size_t)u * ns2 + bs) * W + c;
      uint8_t z = ch[i];
      zero[u] = zs[z];
      bs = ps[i];
      c -= tp_weight(st[u][z], g, W);
    }
  } else best = -1;
  free(f), free(h), free(m), free(ms), free(ch), free(ps);
  return best;
}

/* A knapsack's choice bytes' tp bits into p's tp_unit (after sp_decode). */
static void tp_decode(gv_plan *p, const tp_choices *tc) {
  for (int u = 0; u < p->nunits; u++) {
    int j = tp_of(p->zero[u]);
    p->tp_unit[u] = u && j < tc->n ? tc->val[j] : 0;
    p->zero[u] &= (uint8_t)~TP_BITS;
  }
}

/* Unit u's choice (index into zs) under p, its tp choice included. */
static int tp_plan_choice(const uint8_t *zs, int nc, const gv_plan *p, int u, const tp_choices *tc) {
  int j = u ? tp_index(tc, p->tp_unit[u]) : 0;
  return choice_of(zs, nc, (uint8_t)(p->zero[u] | (p->sp[u] ? SP_CHOICE : 0) | (j << TP_SHIFT)));
}

/* Realises p's (mesh, dmask, t_layer, t_outer) on a reduced module (nu
 * units), ZeRO stage `stage` on even (r = 0) or odd units. */
static int realise_red(ctx *C, ctx *R, const gv_plan *p, int nu, int r, int stage, gv_plan_cost *pc, int64_t *uns,
                       int64_t *ust) {
  gv_plan q = *p;
  q.nunits = nu;
  for (int u = 0; u < nu; u++) q.zero[u] = u % 2 == r % 2 ? (uint8_t)stage : 0;
  C->realised++;
  return realise(R, &q, pc, uns, ust);
}

/* The same with every unit at `stage`; sp: with sequence parallelism on every layer (the outer unit without). */
static int realise_uniform(ctx *C, ctx *R, const gv_plan *p, int nu, int stage, bool sp, gv_plan_cost *pc, int64_t *ust) {
  gv_plan q = *p;
  q.nunits = nu;
  for (int u = 0; u < nu; u++) q.zero[u] = (uint8_t)stage, q.sp[u] = sp && u > 0;
  C->realised++;
  red_full_nl = C->nl;
  int64_t uns[4];
  int rc = realise(R, &q, pc, ust ? uns : NULL, ust);
  red_full_nl = 0;
  return rc;
}

/* One combination on the reduced modules (see reduced): the unit table of
 * r3 mapped onto the full units, the rest of the memory extrapolated, the
 * knapsack and the uniform patterns predicted from the table. */
/* p's combination in R's table (NULL: out of memory). */
static red_combo *red_combo_of(reduced *R, const gv_plan *p, int64_t limit) {
  for (int i = 0; i < R->ncombos; i++)
    if (same_combo(&R->combos[i].key, p)) return &R->combos[i];
  if (R->ncombos == R->capcombos) {
    int cap = R->capcombos ? 2 * R->capcombos : 64;
    red_combo *n = realloc(R->combos, (size_t)cap * sizeof *n);
    if (!n) return NULL;
    R->combos = n, R->capcombos = cap;
  }
  red_combo *e = &R->combos[R->ncombos];
  memset(e, 0, sizeof *e);
  e->key = *p, e->status = -1, e->limit = limit;
  return e;
}

enum { PRUNE_FACTOR = 2 };
/* The bound's terms (GALV_PLAN_BOUND): 0 off (every combination's table made), 1 compute alone, 2 (the default)
 * compute and the communication on no batch axis. */
static int bound_mode(void) {
  static int mode = -1;
  if (mode < 0) {
    const char *b = getenv("GALV_PLAN_BOUND");
    mode = b && !strcmp(b, "off") ? 0 : b && !strcmp(b, "compute") ? 1 : 2;
  }
  return mode;
}
/* GALV_PLAN_NOFIT=off: a combination's table is made even where its smallest pattern is over the limit */
static bool nofit_on(void) {
  static int on = -1;
  if (on < 0) {
    const char *e = getenv("GALV_PLAN_NOFIT");
    on = !(e && !strcmp(e, "off"));
  }
  return on;
}
/* r3's figure x3 extrapolated over L layers by r2's x2: x3 + (L - 3) x the per-layer difference (none below 0) */
static int64_t red_lin(int64_t x3, int64_t x2, int L) { return x3 + (int64_t)(L - 3) * (x3 > x2 ? x3 - x2 : 0); }
/* A combination's bound on every plan's step (solve_reduced): its compute extrapolated from r3 (f3) and r2 (f2) and,
 * with the default GALV_PLAN_BOUND, its collectives on no batch axis (t3, t2) too: the larger */
/* A combination's step bound from its compute f and its collectives on no batch axis t: the busier of the two
 * streams where the communication counts (comm, GALV_PLAN_BOUND default), else the compute */
/* Under --profile the measured compute replaces the analytic one in the step (profile_apply) but not in the
 * communication timeline, so the step need not reach the collectives' time: compute alone bounds it there. */
static int64_t step_bound(int64_t f, int64_t t, bool comm) {
  return comm && bound_mode() == 2 && !gv_plan_opts.profile && t > f ? t : f;
}

static int64_t red_bound(int64_t f3, int64_t f2, int64_t t3, int64_t t2, int L) {
  return step_bound(red_lin(f3, f2, L), red_lin(t3, t2, L), true);
}

static void red_unprune(red_combo *e) {
  int64_t lim = e->limit;
  gv_plan key = e->key;
  memset(e, 0, sizeof *e);
  e->key = key, e->limit = lim, e->status = -1, e->kept_in = true;
}

/* After a search: the pruned combinations whose bound no longer clears its
 * runner-up by PRUNE_FACTOR (a later search, after a budget correction, may
 * end with a slower one, or none) get their tables made: true when there
 * were such (the search then runs again, in the same order as without the
 * bound). */
static bool red_unprune_stale(reduced *R, const search *S) {
  bool any = false;
  for (int i = 0; i < R->ncombos; i++) {
    red_combo *e = &R->combos[i];
    if (e->status == 2 && !e->inc_out && (!S->has_ru || e->lb < PRUNE_FACTOR * S->ru_ns)) red_unprune(e), any = true;
  }
  return any;
}

/* Every unit of p's combination at `stage` on r3 and r2: its step and memory extrapolated over the layers as the
 * rest is (e->uni[stage], uni_mem[stage]); realised once per combination (the reruns after a full realisation reuse
 * it). Returns 0, -1 after an error line. */
static int red_uniform(ctx *C, red_combo *e, const gv_plan *p, int stage) {
  if (e->uni_done[stage]) return 0;
  reduced *R = C->red;
  int L = C->nl;
  gv_plan_cost u3, u2;
  int q;
  if (e->u3_done[stage]) /* realised with the table */
    q = e->u3_rc[stage], u3.step_ns = e->u3_step[stage], u3.mem_total = e->u3_mem[stage], u3.mem_full = e->u3_full[stage];
  else
    q = realise_uniform(C, &R->c3, p, 4, stage, false, &u3, NULL);
  if (!q) q = realise_uniform(C, &R->c2, p, 3, stage, false, &u2, NULL);
  if (q < 0) return -1;
  e->uni[stage] = q ? -1 : red_lin(u3.step_ns, u2.step_ns, L);
  /* its memory: the full program's from r3's memory plan (red_full_lower); the peaks' linear extrapolation only
   * where that is missing, and printed beside it */
  int64_t lin = q ? -1 : red_lin(u3.mem_total, u2.mem_total, L);
  e->uni_mem[stage] = q ? -1 : u3.mem_full > 0 ? u3.mem_full : lin;
  e->uni_done[stage] = true;
  if (getenv("GALV_PLAN_DEBUG")) {
    char u0[64];
    gv_plan_unit_str(p, p->nunits > 1 ? 1 : 0, u0, sizeof u0);
    fprintf(stderr, "plan-debug: uniform stage %d (%s, %lld devices): r3 %lld r2 %lld bytes (linear %lld) -> %lld, step %lld\n", stage,
            u0, (long long)dprod(p), q ? -1LL : (long long)u3.mem_total, q ? -1LL : (long long)u2.mem_total, (long long)lin,
            (long long)e->uni_mem[stage], (long long)e->uni[stage]);
  }
  return 0;
}

/* The unit of r3 that full unit u (of L layers) maps onto: the outer unit, the first layer, the last, or r3's
 * middle layer for every layer between. */
static int red_unit(int u, int L) { return u == 0 ? 0 : u == 1 ? 1 : u == L ? 3 : 2; }

/* The layers' other tp choices on r3 (tp_tables on the reduced module of 3 layers): U_j and the transitions per
 * boundary, from P0 (e->tp_*[0], its ZeRO pattern p0_zero); a choice that does not realise or is dominated drops
 * out (e->tp_ok[j]), and with none left the combination has no other choice (e->tc.n = 1). Returns 0, or -1. */
static int red_tp_tables(ctx *C, red_combo *e, const gv_plan *p, const uint8_t *p0_zero) {
  reduced *R = C->red;
  gv_plan q = *p;
  q.nunits = 4;
  memcpy(q.zero, p0_zero, 4);
  memset(q.sp, 0, 4), memset(q.tp_unit, 0, 4);
  tp_units base = {e->tp_ns[0], e->tp_state[0], e->tp_kept[0], e->tp_bytes[0], true}, uj[NTP];
  memset(uj, 0, sizeof uj);
  for (int j = 1; j < e->tc.n; j++) uj[j] = (tp_units){e->tp_ns[j], e->tp_state[j], e->tp_kept[j], 0, false};
  int64_t before = R->c3.realised;
  if (tp_tables(&R->c3, &q, NULL, &e->tc, &base, uj) < 0) return -1;
  C->realised += R->c3.realised - before; /* U_j and A_ij */
  bool any = false;
  for (int j = 1; j < e->tc.n; j++) e->tp_ok[j] = uj[j].ok, e->tp_bytes[j] = uj[j].coll_bytes, any |= uj[j].ok;
  if (getenv("GALV_PLAN_DEBUG"))
    for (int j = 1; j < e->tc.n; j++)
      fprintf(stderr, "plan-debug: reduced tp choice %d: %s; r3 units ns %lld %lld %lld %lld (t_layer %lld %lld %lld %lld)\n", e->tc.val[j],
              uj[j].ok ? "kept" : "does not realise or is dominated", (long long)uj[j].ns[0], (long long)uj[j].ns[1],
              (long long)uj[j].ns[2], (long long)uj[j].ns[3], (long long)base.ns[0], (long long)base.ns[1], (long long)base.ns[2],
              (long long)base.ns[3]);
  if (!any) e->tc.n = 1;
  return 0;
}

/* The knapsack over the layers' tp choices too (tp_extend, tp_knapsack) on the combination's table (ns, st: nc
 * choices per unit, the rest `rest`; with_kept: the columns hold the activations kept for backward already), r3's
 * per-unit figures mapped onto the full units as the table is: a pattern with some layer at another choice is a
 * candidate (consider_pred; plan_search realises it in full, and the fastest candidate without such a layer beside
 * it). Changes ns, st and zs. Returns 0, or -1 after an error line. */
static int red_tp_choice(ctx *C, red_combo *e, gv_plan *p, search *S, int64_t (*ns)[NZ], int64_t (*st)[NZ], uint8_t *zs, int nz,
                         int nc, bool with_kept, int64_t rest, int64_t limit) {
  int nu = p->nunits, L = C->nl, rc = 0;
  tp_units base = {0}, uj[NTP];
  memset(uj, 0, sizeof uj);
  if (tp_units_alloc(&base, nu)) rc = -1;
  for (int j = 1; !rc && j < e->tc.n; j++)
    if (tp_units_alloc(&uj[j], nu)) rc = -1;
  if (!rc) {
    for (int u = 0; u < nu; u++) {
      int ru = red_unit(u, L);
      base.ns[u] = e->tp_ns[0][ru], base.state[u] = e->tp_state[0][ru], base.kept[u] = e->tp_kept[0][ru];
      for (int j = 1; j < e->tc.n; j++)
        uj[j].ns[u] = e->tp_ns[j][ru], uj[j].state[u] = e->tp_state[j][ru], uj[j].kept[u] = e->tp_kept[j][ru];
    }
    base.ok = true, base.coll_bytes = e->tp_bytes[0];
    for (int j = 1; j < e->tc.n; j++) uj[j].ok = e->tp_ok[j], uj[j].coll_bytes = e->tp_bytes[j];
    int nc2 = tp_extend(nu, ns, st, zs, nz, nc, with_kept, &e->tc, &base, uj, &rest);
    int64_t pred = nc2 > nc ? tp_knapsack(nu, ns, st, nc2, limit - rest, zs, &e->tc, p->zero) : -1;
    if (pred == -2) rc = -1;
    else if (pred >= 0) {
      sp_decode(p);
      tp_decode(p, &e->tc);
      bool mixed = false;
      int64_t mem = rest;
      for (int u = 0; u < nu; u++) mixed |= p->tp_unit[u] != 0, mem += st[u][tp_plan_choice(zs, nc2, p, u, &e->tc)];
      if (getenv("GALV_PLAN_DEBUG")) {
        fprintf(stderr, "plan-debug: reduced tp knapsack: pred %lld mem %lld; layers", (long long)pred, (long long)mem);
        for (int u = 1; u < nu; u++) fprintf(stderr, " %d", p->tp_unit[u]);
        fputc('\n', stderr);
      }
      if (mixed) consider_pred(S, p, pred, mem, limit);
    }
  }
  memset(p->sp, 0, (size_t)nu), memset(p->tp_unit, 0, (size_t)nu);
  tp_units_free(&base);
  for (int j = 1; j < NTP; j++) tp_units_free(&uj[j]);
  return rc < 0 ? gv_error(C->m, "out of memory") : 0;
}

static int solve_reduced(ctx *C, gv_plan *p, search *S) {
  reduced *R = C->red;
  int L = C->nl, nu = p->nunits;
  uint8_t zs[NZ];
  int nz = zero_choices(C, p, zs);
  red_combo *e = red_combo_of(R, p, C->limit);
  if (!e) return gv_error(C->m, "out of memory");
  /* a combination pruned by its bound stays out (plan_search checks the bound against each search's runner-up) */
  bool isnew = e == &R->combos[R->ncombos];
  if (e->status == 2 && (!C->no_prune || e->inc_out)) return 0;
  if (e->status == 3) { /* no plan of it fits: its smallest pattern stands for it (the smallest need, a faster one over) */
    consider_pred(S, &e->nofit_plan, e->nofit_ns, e->nofit_mem, C->limit);
    return 0;
  }
  if (e->status == 2) red_unprune(e);
  if (e->status < 0) { /* the combination's first search: its reduced realisations */
    int64_t(*n3)[NZ] = e->n3, (*s3)[NZ] = e->s3, uns[4], ust[4], rest3 = INT64_MIN, rest2 = INT64_MIN, restL = INT64_MIN;
    int deferred[2 * NZ][2], ndef = 0; /* the pairs whose r2 realisation waits until it is needed */
    int64_t f3sp = -1, t3sp = -1;      /* r3 with sp on every layer (the first pair's sp realisation) */
    bool full_known = true;
    gv_plan_cost pc;
    int st = 0;
    bool first = true;
    e->sp = sp_searchable(C, p);
    tp_alternatives(C, p, &e->tc); /* the layers' other tp choices: the first realisation below is their P0 */
    uint8_t p0_zero[4] = {0};
    int64_t p0_f = 0, p0_c = 0, fp3 = -1, fp2 = -1; /* fp: the first pair's steps on r3 and r2 */
    for (int k = nz > 1 ? 1 : 0; !st && k < nz; k++) /* each stage on even and odd units (no training: one realisation) */
      for (int r = 0; !st && r < (nz > 1 ? 2 : 1); r++) {
        bool sp_base = e->sp && k == (nz > 1) && !r; /* sequence parallelism's baseline, then the same with sp */
        bool p0 = k == (nz > 1) && !r && e->tc.n > 1;
        realise_kept = sp_base ? e->sp_kept[0] : p0 ? e->tp_kept[0] : NULL;
        int q = realise_red(C, &R->c3, p, 4, r, zs[k], &pc, uns, ust);
        realise_kept = NULL;
        if (q) { st = q; break; }
        if (p0) {
          memcpy(e->tp_ns[0], uns, sizeof uns), memcpy(e->tp_state[0], ust, sizeof ust);
          if (sp_base) memcpy(e->tp_kept[0], e->sp_kept[0], sizeof e->tp_kept[0]);
          e->tp_bytes[0] = 0;
          for (int i = 0; i < 4; i++) e->tp_bytes[0] += pc.coll_bytes[i], p0_zero[i] = i % 2 == r % 2 ? zs[k] : 0;
          e->tp_ok[0] = true;
        }
        int64_t f3 = R->c3.fb_ns, t3 = R->c3.tpc_ns; /* the bound's r3 figures (sp_realise below realises on c3 too) */
        if (first) fp3 = pc.step_ns;
        if (sp_base) {
          memcpy(e->sp_ns[0], uns, sizeof uns);
          gv_plan qp = *p;
          for (int u = 0; u < 4; u++) qp.zero[u] = u % 2 == 0 ? zs[k] : 0;
          sp_units on = {e->sp_ns[1], e->sp_kept[1], NULL, {0}, false};
          gv_plan_cost spc;
          C->realised++;
          int qs = sp_realise(&R->c3, &qp, 4, &spc, &on);
          if (qs < 0) return -1;
          if (qs) e->sp = false; /* sp does not realise here (a sequence the tp degree does not divide) */
          else f3sp = R->c3.fb_ns, t3sp = R->c3.tpc_ns; /* the incumbent's bound: sp's compute and tp communication */
        }
        int64_t sum = 0;
        for (int u = 0; u < 4; u++) {
          int z = u % 2 == r % 2 ? k : 0;
          n3[u][z] = uns[u], s3[u][z] = ust[u];
          sum += ust[u];
        }
        if (pc.mem_total - sum > rest3) rest3 = pc.mem_total - sum;
        if (!first) { /* r2 serves the rest's linear extrapolation only, which the uniform realisations below replace */
          deferred[ndef][0] = k, deferred[ndef++][1] = r;
          continue;
        }
        q = realise_red(C, &R->c2, p, 3, r, zs[k], &pc, uns, ust);
        if (q) { st = q; break; }
        if (p0) p0_f = f3 - R->c2.fb_ns, p0_c = t3 - R->c2.tpc_ns; /* a layer's compute and tp communication at P0 */
        fp2 = pc.step_ns;
        sum = 0;
        for (int u = 0; u < 3; u++) sum += ust[u];
        if (pc.mem_total - sum > rest2) rest2 = pc.mem_total - sum;
        int64_t inc = gv_plan_opts.incumbent_ns;
        if (first && inc > 0 && bound_mode()) { /* (one ZeRO choice too: such a combination may be the one chosen) */
          /* The fastest step realised so far (galvc's earlier searches) bounds this one: a combination whose every
           * plan has a step above it cannot be chosen over it. The bound below, taken with and without sp on the
           * layers (sp splits the norms and residual adds: less compute, the same tp bytes in other collectives),
           * the smaller of the two; sp's per-layer compute is taken against r2 without sp, which only lowers it
           * (r2 with sp computes less). 1 % above it, for the extrapolation's error (the reduced programs' steps
           * err by less than that) */
          int64_t f2 = R->c2.fb_ns, t2 = R->c2.tpc_ns, lb = red_bound(f3, f2, t3, t2, L), thr = inc + inc / 100;
          if (f3sp >= 0) {
            int64_t ls = red_bound(f3sp, f2, t3sp, t2, L);
            if (lb >= thr && ls < thr) { /* r2 with sp too (its per-layer compute exactly) where that decides */
              gv_plan qp = *p;
              for (int u = 0; u < 3; u++) qp.zero[u] = u % 2 == r % 2 ? zs[k] : 0;
              int64_t ns2[4], kept2[4];
              sp_units on2 = {ns2, kept2, NULL, {0}, false};
              gv_plan_cost c2c;
              C->realised++;
              int qs = sp_realise(&R->c2, &qp, 3, &c2c, &on2);
              if (qs < 0) return -1;
              if (!qs) ls = red_bound(f3sp, R->c2.fb_ns, t3sp, R->c2.tpc_ns, L);
            }
            if (ls < lb) lb = ls;
          }
          bool out = lb >= thr;
          if (getenv("GALV_PLAN_DEBUG"))
            fprintf(stderr, "plan-debug: bound %lld (sp %s) against the fastest step realised so far %lld%s\n", (long long)lb,
                    f3sp >= 0 ? "counted" : "none", (long long)inc, out ? ": left out" : "");
          if (out) {
            e->status = 2, e->lb = lb, e->inc_out = true;
            C->inc_pruned++;
            if (isnew) R->ncombos++;
            return 0;
          }
        }
        if (first && nz > 1 && !C->no_prune && !e->kept_in && S->has_ru && bound_mode()) {
          /* Compute alone bounds the step (step = compute + slowdown + exposed communication), and the
           * forward and backward compute is the same under every ZeRO pattern (ZeRO changes the
           * optimizer's and the collectives' share): from the first pair, extrapolated over the
           * layers, it bounds every plan of the combination. Far above the runner-up (PRUNE_FACTOR
           * times: replicated compute on idle axes, tp across nodes), the rest of its table is not
           * made: none of its plans could be chosen, nor be the runner-up. */
          /* The communication stream too (gv_cost_timeline: one queue, the step ends after its last call): the
           * collectives on no batch axis (tp, vocab; ZeRO moves only the batch axes' ones), extrapolated the same
           * way, bound the step as well (GALV_PLAN_BOUND=compute: compute alone; off: no bound) */
          int64_t f2 = R->c2.fb_ns, t2 = R->c2.tpc_ns, lb = red_bound(f3, f2, t3, t2, L);
          if (getenv("GALV_PLAN_DEBUG"))
            fprintf(stderr, "plan-debug: bound %lld (compute r3 %lld, r2 %lld; tp communication r3 %lld, r2 %lld) against the runner-up "
                    "%lld%s\n", (long long)lb, (long long)f3, (long long)f2, (long long)t3, (long long)t2, (long long)S->ru_ns,
                    lb >= PRUNE_FACTOR * S->ru_ns ? ": pruned" : "");
          if (lb >= PRUNE_FACTOR * S->ru_ns) {
            e->status = 2, e->lb = lb;
            C->pruned = true;
            if (isnew) R->ncombos++;
            return 0;
          }
        }
        first = false;
      }
    /* The combination's smallest pattern first: every unit at the highest ZeRO stage searched, without and with sp
     * on every layer (where sp is searched), every layer at t_layer (a layer's other tp choices are of no larger degree, else this is
     * not done). Where the full program's memory estimated from its r3 realisation (red_full_lower, the estimate the
     * tables use) is over the limit by 2 %, none of the combination's plans fits and its table is not made
     * (the uniform realisations at every stage, with and without sp, and the tp tables): galvc's probes of too few
     * microbatches realised them all to find nothing fitting. It stands for the combination in each search as the
     * smallest need, a candidate over the limit whose step is the first pair's extrapolated over the layers. Only
     * where realisations are kept (ctx.memo): where it fits, the table's own realisation of it is read, not made
     * again. GALV_PLAN_NOFIT=off: every table made. */
    if (!st && C->memo && nofit_on() && fp3 >= 0 && fp2 >= 0 && zs[nz - 1] <= 3) {
      bool larger = false; /* another tp choice of a larger degree: less memory, possibly */
      int64_t t = p->t_layer >= 0 ? p->size[p->t_layer] : 1;
      for (int j = 0; j < e->tc.n; j++) larger |= e->tc.val[j] > 0 && p->size[e->tc.val[j] - 1] > t;
      if (!larger) {
        /* without sp, and with it where searched (sp moves the activations onto the sequence split but adds its
         * communication buffers: either may be the smaller) */
        gv_plan_cost mc;
        int64_t need = INT64_MAX; /* -1: a realisation gave no estimate (the table is made) */
        bool need_sp = false;
        for (int w = 0; w < 1 + e->sp && need > 0; w++) {
          int q = realise_uniform(C, &R->c3, p, 4, zs[nz - 1], w == 1, &mc, NULL);
          if (q < 0) return -1;
          if (q || mc.mem_full <= 0) need = -1;
          else if (mc.mem_full < need) need = mc.mem_full, need_sp = w == 1;
        }
        if (need > C->limit + C->limit / 50) {
          gv_plan np = *p;
          for (int u = 0; u < nu; u++) np.zero[u] = zs[nz - 1], np.sp[u] = need_sp && u > 0;
          e->status = 3, e->nofit_plan = np, e->nofit_mem = need, e->nofit_ns = red_lin(fp3, fp2, L);
          if (getenv("GALV_PLAN_DEBUG"))
            fprintf(stderr, "plan-debug: smallest pattern (stage %d%s) needs %lld bytes, over %lld: no table\n", zs[nz - 1],
                    need_sp ? ", sp" : "", (long long)need, (long long)C->limit);
          if (isnew) R->ncombos++;
          consider_pred(S, &e->nofit_plan, e->nofit_ns, e->nofit_mem, C->limit);
          return 0;
        }
      }
    }
    /* Every unit at each stage on r3: the full program's memory from its memory plan (red_full_lower), what a
     * middle layer at that stage adds to it (the table's column for the middle layers) and the rest (the full
     * program's memory less the outer part's and the first and last layers' states and the middle layers'
     * additions; the largest over the stages). The alternating patterns' do not serve: a layer's stage changes
     * what its neighbours hold (ZeRO-2 next to stage-0 layers kept no more than ZeRO-3 there, Llama2-7B dp=8),
     * and the uniform patterns are the ones the search compares. red_uniform reads them for the uniform
     * patterns' memory. */
    for (int k = 0; !st && k < nz; k++) {
      int z = zs[k];
      if (z > 3 || e->u3_done[z]) continue;
      int q = realise_uniform(C, &R->c3, p, 4, z, false, &pc, ust);
      if (q < 0) return -1;
      e->u3_done[z] = true, e->u3_rc[z] = q, e->u3_step[z] = pc.step_ns, e->u3_mem[z] = pc.mem_total, e->u3_full[z] = pc.mem_full;
      if (q || !pc.mem_full || pc.mem_full_layer <= 0) {
        full_known = false;
        continue;
      }
      e->midL[k] = pc.mem_full_layer;
      int64_t restf = pc.mem_full - ust[0] - (int64_t)L * pc.mem_full_layer;
      if (getenv("GALV_PLAN_DEBUG"))
        fprintf(stderr, "plan-debug: reduced rest at stage %d: %lld (estimate %lld, a layer %lld)\n", z, (long long)restf, (long long)pc.mem_full,
                (long long)pc.mem_full_layer);
      if (restf > restL) restL = restf;
    }
    /* r2 at the other pairs: only when a middle layer's memory is not known from the uniform realisations (their
     * rest replaces the pairs' extrapolated one) */
    bool mids = full_known;
    for (int k = 0; k < nz; k++) mids &= e->midL[k] > 0;
    for (int i = 0; !st && !mids && i < ndef; i++) {
      int q = realise_red(C, &R->c2, p, 3, deferred[i][1], zs[deferred[i][0]], &pc, uns, ust);
      if (q) { st = q; break; }
      int64_t sum = 0;
      for (int u = 0; u < 3; u++) sum += ust[u];
      if (pc.mem_total - sum > rest2) rest2 = pc.mem_total - sum;
    }
    /* The same with sp on every layer (the sp columns' memory and their rest): sp changes more than the
     * activations a layer keeps for backward (sp_extend's kept bytes): the values a layer holds at the busiest
     * point, and the communication buffers (2 x the largest collective operand; under sp the embedding
     * table's gradient is a partial sum over the sequence split, all-reduced whole). The kept bytes alone
     * priced GPT-3's shape (12 layers, hidden 12288) at dp=64 x tp=16 with sp at 30.08 GB, realised 38.91. */
    int64_t restS = INT64_MIN;
    bool sp_full = !st && e->sp && full_known;
    for (int k = 0; sp_full && k < nz; k++) {
      int z = zs[k];
      int q = z > 3 ? 1 : realise_uniform(C, &R->c3, p, 4, z, true, &pc, ust);
      if (q < 0) return -1;
      if (q || !pc.mem_full || pc.mem_full_layer <= 0) {
        sp_full = false;
        break;
      }
      e->midS[k] = pc.mem_full_layer;
      int64_t restf = pc.mem_full - ust[0] - (int64_t)L * pc.mem_full_layer;
      if (getenv("GALV_PLAN_DEBUG"))
        fprintf(stderr, "plan-debug: reduced rest at stage %d with sp: %lld (estimate %lld, a layer %lld)\n", z, (long long)restf,
                (long long)pc.mem_full, (long long)pc.mem_full_layer);
      if (restf > restS) restS = restf;
    }
    if (st < 0) return -1;
    if (!st && e->tc.n > 1 && e->tp_ok[0]) {
      /* none (the layer's compute repeated over the t ranks of its tp axis) is faster only where a layer's tp
       * collectives take longer than the (t - 1) x its compute it adds: with them under half that, it is left out
       * unrealised (more memory and, by this margin, more time on every layer) */
      int64_t t = p->t_layer >= 0 ? p->size[p->t_layer] : 1;
      bool no_none = 2 * p0_c <= (t - 1) * p0_f;
      /* another axis of t_layer's size outside it (an earlier mesh axis: its ranks further apart) splits the layers
       * the same way with collectives no cheaper: no faster and no smaller, as U_j would show; left out unrealised */
      int n = 0;
      for (int j = 0; j < e->tc.n; j++) {
        int a = e->tc.val[j] - 1;
        bool outer_twin = a >= 0 && p->t_layer >= 0 && a < p->t_layer && p->size[a] == t;
        if (!(e->tc.val[j] == -1 && no_none) && !outer_twin) e->tc.val[n++] = e->tc.val[j];
      }
      e->tc.n = n;
      if (e->tc.n > 1 && red_tp_tables(C, e, p, p0_zero) < 0) return -1;
    }
    e->status = st, e->rest3 = rest3, e->rest2 = rest2, e->restL = full_known ? restL : INT64_MIN;
    e->restS = sp_full ? restS : INT64_MIN;
    if (isnew) R->ncombos++;
  }
  if (e->status) return 0;
  int64_t(*n3)[NZ] = e->n3, (*s3)[NZ] = e->s3, rest3 = e->rest3, rest2 = e->rest2, limit = e->limit;
  int64_t(*ns)[NZ] = calloc((size_t)nu, sizeof *ns);
  int64_t(*st)[NZ] = calloc((size_t)nu, sizeof *st);
  if (!ns || !st) {
    free(ns), free(st);
    return gv_error(C->m, "out of memory");
  }
  bool mid_known = e->restL != INT64_MIN;
  for (int z = 0; z < nz; z++) mid_known &= e->midL[z] > 0;
  for (int u = 0; u < nu; u++) {
    int ru = red_unit(u, L);
    for (int z = 0; z < nz; z++) ns[u][z] = n3[ru][z], st[u][z] = ru && mid_known ? e->midL[z] : s3[ru][z];
  }
  int64_t rest = red_lin(rest3, rest2, L);
  if (getenv("GALV_PLAN_DEBUG"))
    fprintf(stderr, "plan-debug: reduced rest: r3 %lld r2 %lld (linear %lld) -> %lld; a middle layer: %lld %lld %lld %lld\n", (long long)rest3, (long long)rest2, (long long)rest,
            (long long)(e->restL != INT64_MIN ? e->restL : rest), (long long)e->midL[0], (long long)e->midL[1 % NZ], (long long)e->midL[2 % NZ], (long long)e->midL[3 % NZ]);
  if (mid_known) rest = e->restL;
  if (getenv("GALV_PLAN_DEBUG") && !C->mem_only)
    for (int u = 0; u < 4; u++) {
      fprintf(stderr, "plan-debug: reduced unit %d:", u);
      for (int z = 0; z < nz; z++) fprintf(stderr, " stage %d ns %lld state %lld;", zs[z], (long long)n3[u][z], (long long)s3[u][z]);
      fputc('\n', stderr);
    }
  int nc = nz; /* choices per unit: with sp, r3's per-unit differences mapped onto the full units as the table is */
  int64_t rest_sp = rest; /* the rest with sp on every layer (restS; else the table's rest serves both) */
  if (e->sp) {
    sp_units sb, so;
    if (sp_units_alloc(&sb, nu) || sp_units_alloc(&so, nu)) {
      sp_units_free(&sb), sp_units_free(&so), free(ns), free(st);
      return gv_error(C->m, "out of memory");
    }
    for (int u = 0; u < nu; u++) {
      int ru = red_unit(u, L);
      sb.ns[u] = e->sp_ns[0][ru], sb.kept[u] = e->sp_kept[0][ru], so.ns[u] = e->sp_ns[1][ru], so.kept[u] = e->sp_kept[1][ru];
    }
    nc = sp_extend(nu, ns, st, zs, nz, &sb, &so, &rest);
    rest_sp = rest;
    if (mid_known && e->restS != INT64_MIN) {
      /* the layers' columns from the uniform realisations (what a middle layer adds, without and with sp), each
       * set against its own rest; the outer unit keeps sp_extend's kept bytes (its own activations left the
       * rests: its column holds them) */
      for (int u = 1; u < nu; u++)
        for (int z = 0; z < nz; z++) st[u][z] = e->midL[z], st[u][nz + z] = e->midS[z];
      rest = e->restL - sb.kept[0], rest_sp = e->restS - sb.kept[0];
    }
    sp_units_free(&sb), sp_units_free(&so);
  }
  int64_t rest_mix = rest > rest_sp ? rest : rest_sp; /* a pattern with and without sp on its layers: the larger */
  int rc = 0;
  /* k < nz: every unit at stage zs[k] (0: no ZeRO; inference: the plan), k = nz: the knapsack's pattern; with sp,
   * then the knapsack's pattern without sp (sp_final's candidate without sp: a prediction, no realisation), and,
   * where sp on every layer leaves less than the rest without, the knapsack's pattern with sp on every layer
   * against that rest (the pattern over every choice is packed against the larger rest) */
  int kall = nc > 1 ? nz : -1, knosp = nc > nz && nz > 1 ? nz + 1 : -1;
  int ksp = nc > nz && rest_sp < rest ? nz + 1 + (knosp >= 0) : -1;
  for (int k = 0; k < nz + (kall >= 0) + (knosp >= 0) + (ksp >= 0); k++) {
    int64_t pred = 0, mem;
    memset(p->sp, 0, (size_t)nu);
    if (k < nz) {
      for (int u = 0; u < nu; u++) p->zero[u] = zs[k];
    } else if (k == ksp) {
      int64_t(*ns2)[NZ] = calloc((size_t)nu, sizeof *ns2), (*st2)[NZ] = calloc((size_t)nu, sizeof *st2);
      uint8_t zs2[NZ];
      if (!ns2 || !st2) {
        free(ns2), free(st2);
        rc = gv_error(C->m, "out of memory");
        break;
      }
      for (int z = 0; z < nz; z++) {
        zs2[z] = (uint8_t)(zs[z] | SP_CHOICE);
        for (int u = 0; u < nu; u++) ns2[u][z] = ns[u][u ? nz + z : z], st2[u][z] = st[u][u ? nz + z : z];
      }
      pred = knapsack(nu, ns2, st2, nz, limit - rest_sp, zs2, p->zero);
      free(ns2), free(st2);
      if (pred == -2) { rc = gv_error(C->m, "out of memory"); break; }
      if (pred < 0) continue;
      sp_decode(p);
      p->sp[0] = 0; /* the outer unit's column was its plain one */
    } else {
      pred = knapsack(nu, ns, st, k == kall ? nc : nz, limit - (k == kall ? rest_mix : rest), zs, p->zero);
      if (pred == -2) { rc = gv_error(C->m, "out of memory"); break; }
      if (pred < 0) continue;
      sp_decode(p);
    }
    int nsp = 0;
    for (int u = 1; u < nu; u++) nsp += p->sp[u] != 0;
    mem = !nsp ? rest : nsp == nu - 1 ? rest_sp : rest_mix;
    pred = 0;
    for (int u = 0; u < nu; u++) {
      int z = plan_choice(zs, nc, p, u);
      pred += ns[u][z], mem += st[u][z];
    }
    if (k < nz && nz > 1 && !C->mem_only) {
      /* a uniform pattern's step from r3 and r2 at that stage, extrapolated over the layers as the memory is: the
       * step is a critical path over two streams (cost.h gv_cost_timeline), not a sum of the unit table's shares,
       * and a layer's communication hides under its neighbours' compute only when they run the same stage;
       * realised once per combination (the reruns after a full realisation reuse it) */
      if (red_uniform(C, e, p, zs[k]) < 0) { rc = -1; break; }
      if (e->uni[zs[k]] >= 0) {
        /* its memory too from its own realisations, against the limit itself (the budget's correction is the
         * table's error; this estimate has its own, once realised in full): the table charges every pattern the
         * largest rest of its realisations, and the rest holds what a unit's stage puts in the arena (stages 1 and
         * 2: the whole 16-bit working copies; 3: the gathered parameters), so a uniform ZeRO-3 was priced with
         * ZeRO-2's working copies (Megatron Table 1 row 3, dp=128, selective: 75.1 GB like ZeRO-2, realised 79.0;
         * ZeRO-2 realised 92.2, whose correction then left ZeRO-3 out) */
        int64_t um = e->uni_mem[zs[k]] + e->uni_err[zs[k]];
        consider_pred(S, p, e->uni[zs[k]], um, C->limit);
        if (um <= C->limit && (!S->has_uni || e->uni[zs[k]] < S->uni_ns))
          S->has_uni = true, S->uni = *p, S->uni_ns = e->uni[zs[k]], S->uni_mem = um;
        continue;
      }
    }
    consider_pred(S, p, pred, mem, limit);
  }
  memset(p->sp, 0, (size_t)nu);
  if (!rc && !C->mem_only && nz > 2 && nc == nz && !zs[0]) {
    /* the knapsack over the ZeRO stages alone (every unit split): a second mix, realised in full beside the
     * choice as the fastest uniform pattern is (plan_search); the table's time prices units without ZeRO
     * between ZeRO ones a few ms too cheaply (Llama2-7B, 16 GPUs / 36 GiB) */
    int64_t(*ns2)[NZ] = calloc((size_t)nu, sizeof *ns2), (*st2)[NZ] = calloc((size_t)nu, sizeof *st2);
    if (!ns2 || !st2) rc = gv_error(C->m, "out of memory");
    for (int u = 0; !rc && u < nu; u++)
      for (int z = 1; z < nz; z++) ns2[u][z - 1] = ns[u][z], st2[u][z - 1] = st[u][z];
    int64_t pr = rc ? -1 : knapsack(nu, ns2, st2, nz - 1, limit - rest, zs + 1, p->zero);
    if (pr == -2) rc = gv_error(C->m, "out of memory");
    else if (pr >= 0) {
      int64_t pred = 0, mem = rest;
      for (int u = 0; u < nu; u++) {
        int z = plan_choice(zs, nc, p, u);
        pred += ns[u][z], mem += st[u][z];
      }
      if (mem <= limit && (!S->has_alt || pred < S->alt_ns)) S->has_alt = true, S->alt = *p, S->alt_ns = pred, S->alt_mem = mem;
    }
    free(ns2), free(st2);
  }
  if (!rc && !C->mem_only && zero1_uniform(C, p)) {
    /* ZeRO-1 on every unit: its step and memory from r3 and r2 at stage 1, extrapolated over the layers as the
     * uniform patterns' steps and the rest are (its memory is never below stage 2's: the probes need it not) */
    if (red_uniform(C, e, p, 1) < 0) rc = -1;
    else if (e->uni[1] >= 0) {
      for (int u = 0; u < nu; u++) p->zero[u] = 1;
      consider_pred(S, p, e->uni[1], e->uni_mem[1] + e->uni_err[1], C->limit);
    }
  }
  if (!rc && !C->mem_only && e->tc.n > 1) /* last: it changes the table */
    rc = red_tp_choice(C, e, p, S, ns, st, zs, nz, nc, e->sp || mid_known, rest_mix, limit);
  free(ns), free(st);
  return rc;
}

/* One (mesh, dmask, t_layer, t_outer) combination. */
static int solve_combo(ctx *C, gv_plan *p, search *S, bool exhaustive) {
  int nu = p->nunits;
  uint8_t zs[NZ];
  int nz = zero_choices(C, p, zs);
  gv_plan_cost pc;
  if (C->red && !exhaustive) return solve_reduced(C, p, S);
  if (exhaustive) { /* nz^nu patterns */
    int64_t npat = 1;
    for (int u = 0; u < nu && npat <= 65536; u++) npat *= nz;
    if (npat > 65536)
      return gv_error(C->m, "planner: exhaustive search over %d units and %d ZeRO choices is too large (at most 65536 patterns; "
                            "--zero-stages narrows the choices)", nu, nz);
    for (int64_t pat = 0; pat < npat; pat++) {
      int64_t x = pat;
      for (int u = 0; u < nu; u++) p->zero[u] = zs[x % nz], x /= nz;
      int r = realise(C, p, &pc, NULL, NULL);
      if (r < 0) return -1;
      if (r > 0) return 0;
      consider(S, p, &pc, pc.step_ns, C->limit);
    }
    return 0;
  }
  int64_t(*ns)[NZ] = calloc((size_t)nu, sizeof *ns);
  int64_t(*st)[NZ] = calloc((size_t)nu, sizeof *st);
  int64_t *uns = calloc((size_t)nu, sizeof *uns), *ust = calloc((size_t)nu, sizeof *ust);
  int rc = 0;
  if (!ns || !st || !uns || !ust) rc = gv_error(C->m, "out of memory");
  int64_t rest = INT64_MIN, rest_r[NZ][2];
  memset(rest_r, 0, sizeof rest_r);
  /* sequence parallelism (sp_extend): the first realisation below is the baseline, again with sp its partner */
  bool sp = !rc && sp_searchable(C, p);
  sp_units sp_base = {0}, sp_on = {0};
  if (sp && (sp_units_alloc(&sp_base, nu) || sp_units_alloc(&sp_on, nu))) rc = gv_error(C->m, "out of memory");
  /* the layers' other tp choices (tp_tables): the first realisation below is their P0 too */
  tp_choices tc;
  tp_alternatives(C, p, &tc);
  tp_units tp_base = {0}, tp_u[NTP] = {{0}};
  uint8_t *p0_zero = tc.n > 1 ? calloc((size_t)nu, 1) : NULL;
  if (tc.n > 1 && (!p0_zero || tp_units_alloc(&tp_base, nu))) rc = gv_error(C->m, "out of memory");
  /* each stage on even and odd units: every unit's time and state under every choice */
  for (int k = nz > 1 ? 1 : 0; !rc && k < nz; k++)
    for (int r = 0; !rc && r < (nz > 1 ? 2 : 1); r++) {
      for (int u = 0; u < nu; u++) p->zero[u] = u % 2 == r % 2 ? zs[k] : 0;
      bool p0 = k == (nz > 1) && !r;
      realise_kept = p0 && sp ? sp_base.kept : p0 && tc.n > 1 ? tp_base.kept : NULL;
      int q = realise(C, p, &pc, uns, ust);
      realise_kept = NULL;
      if (q) {
        rc = q < 0 ? -1 : 1;
        break;
      }
      if (p0 && tc.n > 1) tp_p0(&tp_base, nu, uns, ust, sp ? sp_base.kept : NULL, &pc, p->zero, p0_zero);
      const int64_t f0 = C->fb_ns, t0 = C->tpc_ns; /* the bound's figures (sp_realise below realises again) */
      int64_t fsp = -1, tsp = -1;
      if (sp && k == (nz > 1) && !r) {
        memcpy(sp_base.ns, uns, (size_t)nu * sizeof *uns);
        memcpy(sp_base.key, p->zero, (size_t)nu);
        sp_base.pc = pc, sp_base.have = true;
        int qs = sp_realise(C, p, nu, &sp_on.pc, &sp_on);
        if (qs < 0) rc = -1;
        else if (qs) sp = false; /* sp does not realise here (a sequence the tp degree does not divide) */
        else {
          gv_plan ps = *p;
          memset(ps.sp, 1, (size_t)nu);
          consider(S, &ps, &sp_on.pc, sp_on.pc.step_ns, C->limit);
          for (int u = 0; u < nu; u++) sp_on.key[u] = (uint8_t)(p->zero[u] | SP_CHOICE);
          sp_on.have = true;
          fsp = C->fb_ns, tsp = C->tpc_ns;
        }
      }
      /* The fastest step realised so far (galvc's earlier searches, gv_plan_opts.incumbent_ns) bounds this
       * combination as it does on the reduced programs (solve_reduced): every ZeRO pattern computes the same forward
       * and backward and moves the same tp / vocab collectives (ZeRO acts on the batch axes), and sp computes less, so
       * the first realisation's compute (and its tp communication, GALV_PLAN_BOUND=compute: not) with and without sp,
       * the smaller, bounds every plan of it; 1 % above the incumbent it is left out before its table. With the
       * layers' other tp choices (none, or another axis) the tp communication is left out of the bound (a layer
       * replicated moves none of it, and computes more), and a choice of a larger degree than the layers' (less
       * compute) keeps the combination in. */
      if (p0 && !rc && (gv_plan_opts.incumbent_ns > 0 || S->has_ru) && bound_mode()) {
        /* (this search's own: above its runner-up so far by 5 %, which only falls as the search goes on, so neither
         * the choice nor the runner-up the report names can be left out) */
        const int64_t inc = gv_plan_opts.incumbent_ns, thr = inc > 0 ? inc + inc / 100 : INT64_MAX;
        const int64_t own = S->found && S->has_ru ? S->ru_ns : 0, t = p->t_layer >= 0 ? p->size[p->t_layer] : 1;
        bool larger = false;
        for (int j = 0; j < tc.n; j++) larger |= tc.val[j] > 0 && p->size[tc.val[j] - 1] > t;
        const bool comm = tc.n <= 1;
        int64_t lb = step_bound(f0, t0, comm);
        if (fsp >= 0 && step_bound(fsp, tsp, comm) < lb) lb = step_bound(fsp, tsp, comm);
        const bool by_inc = lb >= thr, out = !larger && (by_inc || (own > 0 && (double)lb > (double)own * 1.05));
        if (getenv("GALV_PLAN_DEBUG"))
          fprintf(stderr, "plan-debug: bound %lld (full program, sp %s) against the fastest step realised so far %lld, this "
                  "search's runner-up %lld%s\n", (long long)lb, fsp >= 0 ? "counted" : "none", (long long)inc, (long long)own,
                  out ? ": left out" : "");
        if (out) {
          if (by_inc) C->inc_pruned++; /* (the report's count of them; this search's own are not counted) */
          memset(p->sp, 0, (size_t)nu), memset(p->tp_unit, 0, (size_t)nu);
          goto done;
        }
      }
      int64_t sum = 0;
      for (int u = 0; u < nu; u++) {
        int z = p->zero[u] ? k : 0;
        ns[u][z] = uns[u];
        st[u][z] = ust[u];
        sum += ust[u];
      }
      rest_r[k][r] = pc.mem_total - sum;
      if (pc.mem_total - sum > rest) rest = pc.mem_total - sum;
      if (nz == 1) consider(S, p, &pc, pc.step_ns, C->limit);
    }
  /* The rest (the arena) depends on the pattern: it holds the gathered
   * parameters of ZeRO-3 units (and the whole gradients of ZeRO-1 ones).
   * With the no-ZeRO pattern realised too, each stage's even and odd
   * realisations' excess over its rest is spread over their units at that
   * stage in proportion to the state each saves and charged to the unit's
   * choice of that stage. */
  bool none_done = false;
  if (!rc && nz > 1) {
    for (int u = 0; u < nu; u++) p->zero[u] = 0;
    int q = realise(C, p, &pc, NULL, NULL);
    if (q) rc = q < 0 ? -1 : 1;
    else {
      none_done = true;
      consider(S, p, &pc, pc.step_ns, C->limit);
      int64_t base = pc.mem_total;
      for (int u = 0; u < nu; u++) base -= st[u][0];
      for (int k = 1; k < nz; k++)
        for (int r = 0; r < 2; r++) {
          int64_t extra = rest_r[k][r] - base, saved = 0;
          if (extra <= 0) continue;
          for (int u = r; u < nu; u += 2) saved += st[u][0] > st[u][k] ? st[u][0] - st[u][k] : 0;
          for (int u = r; u < nu; u += 2) {
            int64_t sv = st[u][0] > st[u][k] ? st[u][0] - st[u][k] : 0;
            st[u][k] += saved > 0 ? (int64_t)((double)extra * (double)sv / (double)saved + 0.5) : extra / ((nu - r + 1) / 2);
          }
        }
      rest = base;
    }
  }
  int nc = !rc && sp ? sp_extend(nu, ns, st, zs, nz, &sp_base, &sp_on, &rest) : nz; /* choices per unit */
  int ncp = nc; /* ... without the layers' other tp choices */
  if (!rc && tc.n > 1 && tp_base.ok) {
    gv_plan q = *p;
    memcpy(q.zero, p0_zero, (size_t)nu);
    memset(q.sp, 0, (size_t)nu);
    if (tp_tables(C, &q, S, &tc, &tp_base, tp_u)) rc = -1;
    else nc = tp_extend(nu, ns, st, zs, nz, nc, sp, &tc, &tp_base, tp_u, &rest);
  }
  if (!rc && nc > 1) {
    /* The table's memory is an estimate (the arena is not additive): each
     * realised pattern corrects the budget, by its excess when it does
     * not fit (the next pattern must hold that much less state) and by its
     * slack when it does, until a pattern repeats. With the layers'
     * other tp choices this runs twice: first over the choices without
     * them (the patterns the search without them realises: the choice
     * can only add faster plans), then over all of them (tp_knapsack). */
    enum { TRIES = 8 };
    uint8_t seen[2 * TRIES][GV_PLAN_MAX_UNITS];
    int64_t seen_mem[2 * TRIES];
    int nseen = 0;
    for (int pass = ncp > 1 ? 0 : 1; !rc && pass < (nc > ncp ? 2 : 1); pass++) {
      int nch = pass ? nc : ncp, first_seen = nseen;
      int64_t budget = C->limit - rest;
      bool fitted = false;
      for (int tries = 0; tries < TRIES; tries++) {
        int64_t pred = nch > ncp ? tp_knapsack(nu, ns, st, nch, budget, zs, &tc, p->zero)
                                 : knapsack(nu, ns, st, nch, budget, zs, p->zero);
        if (pred == -2) { rc = gv_error(C->m, "out of memory"); break; }
        if (pred < 0) {
          if (fitted) break;
          /* nothing fits: every unit at its stage of least memory (the
           * table's state with the arena charge; stages mix: ZeRO-3 holds
           * the fewest parameters, ZeRO-2 no gathered ones); record it for
           * the error beside the uniform patterns below */
          for (int u = 0; u < nu; u++) {
            int kmin = 0;
            for (int k = 1; k < nch; k++)
              if (st[u][k] < st[u][kmin]) kmin = k;
            p->zero[u] = zs[kmin];
          }
          sp_decode(p);
          tp_decode(p, &tc);
          int q = realise(C, p, &pc, NULL, NULL);
          if (q < 0) rc = -1;
          else if (!q) consider(S, p, &pc, pc.step_ns, C->limit);
          break;
        }
        int again = -1; /* a pattern this pass found before ends it; one of the first pass is not realised again */
        for (int k = 0; k < nseen && again < 0; k++)
          if (!memcmp(seen[k], p->zero, (size_t)nu)) again = k;
        if (again >= first_seen) break;
        if (again < 0) memcpy(seen[nseen++], p->zero, (size_t)nu);
        const gv_plan_cost *known = sp ? sp_known(&sp_base, p->zero, nu) : NULL;
        if (sp && !known) known = sp_known(&sp_on, p->zero, nu);
        sp_decode(p);
        tp_decode(p, &tc);
        int q = known || again >= 0 ? 0 : realise(C, p, &pc, NULL, NULL);
        if (known) pc = *known;
        if (again >= 0) pc.mem_total = seen_mem[again];
        if (q) { rc = q < 0 ? -1 : 0; break; }
        if (again < 0) seen_mem[nseen - 1] = pc.mem_total, consider(S, p, &pc, pred, C->limit);
        int64_t used = 0;
        for (int u = 0; u < nu; u++) used += st[u][tp_plan_choice(zs, nc, p, u, &tc)];
        if (pc.mem_total <= C->limit) {
          fitted = true;
          if (pc.mem_total == C->limit) break;
          budget += C->limit - pc.mem_total;
        } else {
          budget = (budget < used ? budget : used) - (pc.mem_total - C->limit);
        }
      }
    }
    memset(p->sp, 0, (size_t)nu);
  }
  memset(p->tp_unit, 0, (size_t)nu);
  /* Unit costs are nearly but not exactly independent (fusion and
   * propagation see neighbouring units' local shapes): the uniform
   * patterns are realised too, and the best realised plan wins. */
  for (int k = none_done ? 1 : 0; !rc && nz > 1 && k < nz; k++) {
    for (int u = 0; u < nu; u++) p->zero[u] = zs[k];
    int q = realise(C, p, &pc, NULL, NULL);
    if (q < 0) rc = -1;
    else if (!q) consider(S, p, &pc, pc.step_ns, C->limit);
  }
  if (!rc && zero1_uniform(C, p)) { /* ZeRO-1 on every unit */
    for (int u = 0; u < nu; u++) p->zero[u] = 1;
    int q = realise(C, p, &pc, NULL, NULL);
    if (q < 0) rc = -1;
    else if (!q) consider(S, p, &pc, pc.step_ns, C->limit);
  }
  /* The outer unit (embeddings, final norm, head, loss) is unlike the
   * layers, and its table row, taken from realisations with its neighbours
   * at the same stage, is the least certain: when this combination holds
   * the best plan, that plan is realised with each other stage of unit 0
   * too. (6-layer GPT-2, dp=4, stages 2 and 3, no limit: every unit at
   * ZeRO-2, 0.438 ms, while the outer unit at ZeRO-3 is both faster and
   * smaller, 0.435 ms.) */
  if (!rc && nz > 1 && S->found && same_combo(p, &S->best)) {
    gv_plan b = S->best;
    for (int k = 0; !rc && k < nz; k++) {
      if (zs[k] == b.zero[0]) continue;
      *p = b;
      p->zero[0] = zs[k];
      int q = realise(C, p, &pc, NULL, NULL);
      if (q < 0) rc = -1;
      else if (!q) consider(S, p, &pc, pc.step_ns, C->limit);
    }
  }
done:
  free(ns), free(st), free(uns), free(ust);
  sp_units_free(&sp_base), sp_units_free(&sp_on);
  tp_units_free(&tp_base), free(p0_zero);
  for (int j = 0; j < NTP; j++) tp_units_free(&tp_u[j]);
  return rc < 0 ? -1 : 0;
}

static double now_s(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return ts.tv_sec + ts.tv_nsec * 1e-9;
}

/* The combinations in the order solved: the batch split over the most devices first (the original order within a
 * degree), on the reduced training search, where the bound compares each combination with the runner-up so far:
 * the data-parallel plans, mostly the fastest, give it a runner-up early. */
typedef struct {
  gv_plan p;
  int64_t dp;
  int i;
} combo_ord;
static int combo_cmp(const void *a, const void *b) {
  const combo_ord *x = a, *y = b;
  if (x->dp != y->dp) return x->dp > y->dp ? -1 : 1;
  return (x->i > y->i) - (x->i < y->i);
}

/* The axes p splits something over: its batch axes, the vocab axis, each layer's tp axis (a combination's layers are
 * all at t_layer) */
static unsigned plan_used_axes(const gv_plan *p) {
  unsigned used = p->dmask | (p->t_outer >= 0 ? 1u << p->t_outer : 0);
  for (int u = 1; u < p->nunits; u++) {
    int t = unit_tp(p, u);
    if (t >= 0) used |= 1u << t;
  }
  return used;
}

/* A lower bound on the step of every plan whose used axes (a batch, tp or vocab role) span `used` devices: each op
 * splits over at most those devices, so a device computes at least 1 / used of the global program's FLOPs, each at no
 * more than the cluster's highest peak (cost.c: an op's time is at least its FLOPs over its dtype's peak); the step is
 * at least that compute (step = compute + slowdown + exposed communication). A stand-in for count_as microbatches
 * weighs its ops as its price does (count_weight2). 0 under --profile (measured times replace the peaks). */
static double program_work_ns(ctx *C) {
  if (C->work_ns >= 0) return C->work_ns;
  C->work_ns = 0;
  if (gv_plan_opts.profile) return 0;
  double peak = 0;
  const gv_dtype dts[] = {GV_DT_F32, GV_DT_BF16, GV_DT_F16};
  for (int i = 0; i < 3; i++) {
    double pk = gv_cluster_flops(C->c, dts[i]);
    if (pk > peak) peak = pk;
  }
  if (!(peak > 0)) return 0;
  const gv_func *f = C->m->main;
  int lo = -1, hi = -1, idx = 0;
  int64_t extra = count_as > 2 && microbatch_copies(C->m) == 2 && count_region(f, &lo, &hi) ? count_as - 2 : 0;
  double flops = 0;
  for (const gv_op *op = f->body->first; op; op = op->next, idx++) {
    int64_t fl = gv_op_flops(op, NULL, NULL);
    if (fl > 0) flops += (double)fl * (double)count_weight2(op, idx, lo, hi, extra) / 2.0;
  }
  return C->work_ns = flops / peak * 1e9;
}

/* A combination with an idle axis (its ranks compute the same values) left out, searched after the others
 * (search_all): with no plan fitting so far (its memory is at least that of the combination using the idle axis for
 * the batch too: the same state sharded over fewer ranks, more samples each), or with its step bounded by
 * program_work_ns over its used devices above the runner-up so far (5 % for the reduced programs' extrapolation), or
 * the best where there is none, or above the fastest step realised so far (1 %): it cannot be the choice or the
 * runner-up. On the models where compute dominates no such combination is realised; where communication does (a
 * small model on many devices) they are searched, and replicating may win. */
static bool idle_bound(ctx *C, const gv_plan *p, const search *S) {
  if (!S->found) return true;
  double work = program_work_ns(C);
  if (!(work > 0)) return false;
  int64_t used = 1;
  unsigned mask = plan_used_axes(p);
  for (int a = 0; a < p->naxes; a++)
    if (mask & (1u << a)) used *= p->size[a];
  double lb = work / (double)used;
  int64_t thr = S->has_ru ? S->ru_ns : S->best_cost.step_ns, inc = gv_plan_opts.incumbent_ns;
  return lb > (double)thr * 1.05 || (inc > 0 && lb >= (double)inc * 1.01);
}

static int search_all(ctx *C, int64_t devices, const gv_mesh *fixed, bool exhaustive, search *S) {
  memset(S, 0, sizeof *S);
  combo_ord *late = NULL; /* the combinations with an idle axis, searched last (idle_bound) */
  int nlate = 0, caplate = 0;
  /* (the full path too, where its bound against the runner-up applies: not under --profile) */
  bool order = (C->red || !gv_plan_opts.profile) && C->train && !exhaustive && bound_mode() && !getenv("GALV_PLAN_ORDER_OFF");
  combo_ord *ord = NULL;
  int nord = 0, capord = 0;
  S->min_mem = S->min_pred = -1;
  bool idle_ok = C->mb_batch % devices != 0; /* a microbatch that does not split over every device */
  int64_t shapes[64][2];
  int nsh = 0;
  if (fixed) {
    nsh = 1;
  } else {
    shapes[nsh][0] = devices, shapes[nsh++][1] = 0;
    for (int64_t a = 2; a < devices && nsh < 64; a++)
      if (devices % a == 0) shapes[nsh][0] = a, shapes[nsh++][1] = devices / a;
  }
  for (int s = 0; s < nsh; s++) {
    gv_plan p;
    memset(&p, 0, sizeof p);
    p.nunits = C->nl + 1;
    if (fixed) {
      p.naxes = fixed->naxes;
      for (int a = 0; a < p.naxes; a++) p.size[a] = fixed->size[a];
    } else {
      p.naxes = shapes[s][1] ? 2 : 1;
      p.size[0] = shapes[s][0];
      p.size[1] = shapes[s][1];
    }
    unsigned all = (1u << p.naxes) - 1;
    for (unsigned dm = 0; dm <= all; dm++)
      for (int tl = -1; tl < p.naxes; tl++)
        for (int to = -1; to < p.naxes; to++) {
          if ((tl >= 0 && (dm & (1u << tl))) || (to >= 0 && (dm & (1u << to)))) continue;
          if (tl >= 0 && !C->layer_roles) continue;
          if (fixed && gv_plan_opts.intra_roles && /* the preset's roles only (no layers' tp where no layers are found) */
              (dm != (gv_plan_opts.intra_dp >= 0 ? 1u << gv_plan_opts.intra_dp : 0u) ||
               tl != (C->layer_roles ? gv_plan_opts.intra_tp : -1) || to != (C->outer_roles ? gv_plan_opts.intra_tp : -1)))
            continue;
          if (to >= 0 && !C->outer_roles) continue;
          unsigned used = dm | (tl >= 0 ? 1u << tl : 0) | (to >= 0 ? 1u << to : 0);
          bool size1 = false;
          for (int a = 0; a < p.naxes; a++) size1 |= p.size[a] == 1;
          /* an idle axis only replicates: where the batch splits over
           * every device such a combination is searched after the others
           * and only where its compute bound leaves it a chance (idle_bound);
           * where it does not split, a smaller dp or tp with replicated
           * ranks may be the best there is: searched in turn */
          bool idle = used != all && !size1 && !idle_ok;
          if (idle && idle_off()) continue;
          if (!used && p.naxes > 1 && !fixed) continue; /* = the 1-D replicated plan */
          if (p.naxes > 1 && dm == all && !fixed) continue; /* = the 1-D batch split over all devices */
          p.dmask = dm;
          p.t_layer = tl;
          p.t_outer = to;
          name_axes(&p, fixed);
          if (idle && !exhaustive) {
            if (nlate == caplate) {
              int cap = caplate ? 2 * caplate : 16;
              combo_ord *n = realloc(late, (size_t)cap * sizeof *n);
              if (!n) {
                free(late), free(ord);
                return gv_error(C->m, "out of memory");
              }
              late = n, caplate = cap;
            }
            late[nlate] = (combo_ord){p, dprod(&p), nlate}; /* (dp: the used devices' order below) */
            nlate++;
            continue;
          }
          if (order) {
            if (nord == capord) {
              int cap = capord ? 2 * capord : 64;
              combo_ord *n = realloc(ord, (size_t)cap * sizeof *n);
              if (!n) {
                free(ord);
                return gv_error(C->m, "out of memory");
              }
              ord = n, capord = cap;
            }
            ord[nord] = (combo_ord){p, dprod(&p), nord};
            nord++;
            continue;
          }
          if (solve_combo(C, &p, S, exhaustive)) return -1;
        }
  }
  if (order) qsort(ord, (size_t)nord, sizeof *ord, combo_cmp);
  for (int i = 0; i < nord; i++)
    if (solve_combo(C, &ord[i].p, S, exhaustive)) {
      free(ord), free(late);
      return -1;
    }
  free(ord);
  if (nlate > 1) qsort(late, (size_t)nlate, sizeof *late, combo_cmp);
  for (int i = 0; i < nlate; i++) {
    if (idle_bound(C, &late[i].p, S)) continue;
    if (solve_combo(C, &late[i].p, S, exhaustive)) {
      free(late);
      return -1;
    }
  }
  free(late);
  return 0;
}

/* search_all, on the reduced modules when the layers repeat (then the
 * best predicted plan is realised in full: S->best_cost is its exact cost,
 * S->best_pred the scaled prediction; a plan whose full realisation
 * exceeds the limit shrinks the budget by the excess and the search runs
 * again, up to 4 times). */
static bool plan_eq(const gv_plan *a, const gv_plan *b) {
  if (a->naxes != b->naxes || a->dmask != b->dmask || a->t_layer != b->t_layer || a->t_outer != b->t_outer ||
      a->nunits != b->nunits)
    return false;
  for (int i = 0; i < a->naxes; i++)
    if (a->size[i] != b->size[i]) return false;
  return !memcmp(a->zero, b->zero, (size_t)a->nunits) && !memcmp(a->sp, b->sp, (size_t)a->nunits) &&
         !memcmp(a->tp_unit, b->tp_unit, (size_t)a->nunits);
}

/* The reduced programs' step is an extrapolation that errs by a few per
 * cent, as much as sp changes a step by: a choice with sp could displace a
 * plan without it that is faster in full (Llama-7B shape, 8 A100s, bf16:
 * dp=2 x tp=4 with sp predicted 575.4 ms, 555.0 ms in full, while the
 * plan the search without sp chose, tp=2 x dp=4, is 545.9 ms in full). When
 * the choice has sp, its twin without sp and the fastest candidate without
 * sp are realised in full too, and the fastest that fits is the plan: sp
 * in the space never leaves a plan slower than the search without it. */
static int sp_final(ctx *C, search *S, int64_t limit) {
  bool any = false;
  for (int u = 0; u < S->best.nunits; u++) any |= S->best.sp[u] != 0;
  if (!any) return 0;
  gv_plan alt[2];
  int na = 0;
  alt[na] = S->best;
  memset(alt[na++].sp, 0, (size_t)S->best.nunits);
  if (S->has_nosp && !plan_eq(&S->nosp, &alt[0])) alt[na++] = S->nosp;
  for (int i = 0; i < na; i++) {
    gv_plan_cost pc;
    int q = realise(C, &alt[i], &pc, NULL, NULL);
    if (q < 0) return -1;
    if (q || pc.mem_total > limit || pc.step_ns >= S->best_cost.step_ns) continue;
    if (!same_combo(&alt[i], &S->best)) S->has_ru = true, S->ru = S->best, S->ru_ns = S->best_cost.step_ns, S->ru_mem = S->best_cost.mem_total;
    S->best = alt[i], S->best_cost = pc, S->best_pred = pc.step_ns, S->best_pred_mem = pc.mem_total;
  }
  return 0;
}

/* With repeated layers the search runs on the reduced programs and its
 * choice is realised in full. The reduced memory is an estimate, and its
 * error is the combination's own (a mesh whose arena the extrapolation
 * underestimates says nothing of another mesh): a choice over the limit in
 * full lowers its combination's budget below its own estimate by its
 * excess, one that fits with room raises it by the slack; the search reruns
 * on the cached reduced tables (12 times at most, until a choice repeats)
 * and the fastest choice that fits in full wins. */
static int plan_search(ctx *C, int64_t devices, const gv_mesh *fixed, bool exhaustive, search *S) {
  if (exhaustive || !(C->red = red_init(C))) return search_all(C, devices, fixed, exhaustive, S);
  int64_t limit = C->limit;
  int rc = 0, retries = 0;
  enum { TRIES = 12 };
  search *keep = malloc(sizeof *keep);
  gv_plan *seen = malloc(TRIES * sizeof *seen);
  if (!keep || !seen) rc = gv_error(C->m, "out of memory");
  bool have = false;
  int nseen = 0;
  /* Memory first: whether anything fits depends on the unit tables alone
   * (a pattern's memory is the table's; the uniform patterns' realised
   * steps only change its time). When nothing fits (galvc's probes of too
   * few microbatches), the search ends there, without realising the
   * uniform patterns; otherwise the search below takes the tables as made
   * and realises what it would have realised anyway. */
  C->mem_only = true;
  if (!rc) rc = search_all(C, devices, fixed, false, S);
  C->mem_only = false;
  bool none_fits = !rc && !S->found;
again_unpruned:
  for (int tries = 0; !rc && !none_fits && tries < TRIES; tries++) {
    rc = search_all(C, devices, fixed, false, S);
    while (!rc && C->pruned && red_unprune_stale(C->red, S)) rc = search_all(C, devices, fixed, false, S);
    if (rc || !S->found) break;
    bool again = false;
    for (int k = 0; k < nseen && !again; k++) again = plan_eq(&S->best, &seen[k]);
    if (again) break;
    seen[nseen++] = S->best;
    red_combo *e = red_combo_of(C->red, &S->best, limit);
    if (!e) { rc = gv_error(C->m, "out of memory"); break; }
    if (gv_plan_opts.over_ns > 0 && S->best_cost.step_ns > gv_plan_opts.over_ns) {
      /* predicted over the step the caller cannot use (galvc: 1.25 x a faster pipeline's): not realised in full, the
       * prediction returned (a plan fitting a tighter budget, were this one over it in full, is no faster) */
      S->best_pred = S->best_cost.step_ns, S->estimated = true;
      if (S->best_cost.mem_total <= 0) S->best_cost.mem_total = S->best_pred_mem;
      *keep = *S, have = true;
      break;
    }
    gv_plan_cost pc;
    int q = realise(C, &S->best, &pc, NULL, NULL);
    if (q) {
      rc = q < 0 ? -1 : gv_error(C->m, "planner: the chosen plan does not realise on the full program");
      break;
    }
    S->best_pred = S->best_cost.step_ns;
    if (getenv("GALV_PLAN_DEBUG")) {
      char u0[64], mesh[128];
      gv_plan_unit_str(&S->best, S->best.nunits > 1 ? 1 : 0, u0, sizeof u0);
      size_t k = 0;
      mesh[0] = 0;
      for (int a = 0; a < S->best.naxes; a++)
        k += (size_t)snprintf(mesh + k, sizeof mesh - k, "%s%s=%lld", a ? "," : "", S->best.axis[a], (long long)S->best.size[a]);
      fprintf(stderr, "plan-debug: try %d: %s %s: budget %lld, pred mem %lld ns %lld; realised mem %lld ns %lld (activations %lld)\n",
              tries, mesh, u0, (long long)e->limit, (long long)S->best_pred_mem, (long long)S->best_pred, (long long)pc.mem_total,
              (long long)pc.step_ns, (long long)pc.mem_activations);
    }
    S->best_cost = pc;
    /* a uniform pattern's own memory estimate (solve_reduced) learns its error */
    int us = S->best.nunits ? S->best.zero[0] : -1;
    for (int u = 0; u < S->best.nunits && us >= 0; u++)
      if (S->best.zero[u] != us || S->best.sp[u] || S->best.tp_unit[u]) us = -1;
    if (us >= 0 && us < 4 && e->uni_done[us] && e->uni[us] >= 0) e->uni_err[us] = pc.mem_total - e->uni_mem[us];
    /* the correction is the chosen combination's: its budget only */
    if (pc.mem_total <= limit) {
      if (!have || pc.step_ns < keep->best_cost.step_ns) *keep = *S, have = true;
      /* room only helps when the choice has ZeRO units (the knapsack
       * traded time for memory) or a faster candidate was over the budget
       * that the raised one would admit */
      int64_t raised = (e->limit > S->best_pred_mem ? e->limit : S->best_pred_mem) + (limit - pc.mem_total);
      bool zero = false;
      for (int u = 0; u < S->best.nunits && S->best.dmask; u++) zero |= S->best.zero[u] != 0;
      if (!zero && (!S->over || S->over_ns >= S->best_pred || S->over_mem > raised)) break;
      e->limit = raised;
    } else {
      retries++;
      e->limit = (e->limit < S->best_pred_mem ? e->limit : S->best_pred_mem) - (pc.mem_total - limit);
    }
  }
  bool best_tp = false; /* the choice has a layer at another tp choice: the fastest candidate without, realised too */
  for (int u = 0; have && u < keep->best.nunits; u++) best_tp |= keep->best.tp_unit[u] != 0;
  for (int x = 0; x < 3 && !rc && have && !keep->estimated; x++) { /* (keep is set only with have) */
    /* from the search whose choice was kept (its combinations' budgets) */
    bool has = x == 2 ? keep->has_notp && best_tp : x ? keep->has_alt : keep->has_uni;
    gv_plan up = x == 2 ? keep->notp : x ? keep->alt : keep->uni;
    int64_t ums = x == 2 ? keep->notp_mem : x ? keep->alt_mem : keep->uni_mem;
    int64_t uns = x == 2 ? keep->notp_ns : x ? keep->alt_ns : keep->uni_ns;
    if (rc || !have || !has || plan_eq(&up, &keep->best)) continue;
    /* The fastest uniform pattern predicted to fit, realised in full too: the knapsack's mixed patterns are
     * priced by the unit table's sum and a uniform one by its own realisations, two predictions whose errors
     * (a few ms on Llama2-7B's 4.2 s steps) exceed their differences; the faster realised wins (Galvatron's
     * rows at 32 and 64 GPUs / 36 GiB: a ZeRO-3 / ZeRO-2 / none mix predicted faster than uniform ZeRO-2,
     * realised 0.2 % slower, once the memory estimate let the mix fit) */
    gv_plan_cost pc;
    int q = realise(C, &up, &pc, NULL, NULL);
    if (q < 0) rc = -1;
    else if (!q && pc.mem_total <= limit && pc.step_ns < keep->best_cost.step_ns)
      keep->best = up, keep->best_cost = pc, keep->best_pred = pc.step_ns, keep->best_pred_mem = ums;
    if (getenv("GALV_PLAN_DEBUG"))
      fprintf(stderr, "plan-debug: the fastest %s: pred mem %lld ns %lld; realised %s mem %lld ns %lld\n",
              x == 2 ? "candidate with every layer at t_layer" : x ? "mix over the ZeRO stages" : "uniform pattern", (long long)ums, (long long)uns, q ? "(none)" : "", (long long)pc.mem_total,
              (long long)pc.step_ns);
  }
  if (!rc && !have && C->pruned && !C->no_prune) {
    /* no choice fitted in full: the search again from the start with every table made, as it ran before
     * the bound (the smallest candidate it reports may be one the bound pruned) */
    C->no_prune = true;
    for (int i = 0; i < C->red->ncombos; i++) C->red->combos[i].limit = limit;
    nseen = 0, retries = 0;
    goto again_unpruned;
  }
  C->no_prune = false;
  if (!rc && have) *S = *keep;
  else if (!rc) S->found = false;
  if (!rc && have && !S->estimated) rc = sp_final(C, S, limit);
  /* Nothing fit in full. The smallest candidate's memory so far is a
   * prediction from the reduced programs; realised in full it may fit
   * (then it is the plan: never a "no plan" the full program refutes), or
   * its realised memory is what the error reports, term by term. */
  if (!rc && !have && S->min_mem >= 0) {
    gv_plan_cost pc;
    gv_plan mp = S->min_mem_plan;
    int q = realise(C, &mp, &pc, NULL, NULL);
    if (q < 0) rc = -1;
    else if (q == 0 && pc.mem_total <= limit) {
      if (none_fits) { /* it is the plan: the whole search's figures for the report (the faster plans over the limit) */
        C->limit = limit;
        rc = search_all(C, devices, fixed, false, S);
        if (rc) goto out;
        S->found = false;
      }
      S->found = true, S->best = mp, S->best_cost = pc, S->best_pred = pc.step_ns, S->best_pred_mem = pc.mem_total;
    } else if (q == 0) {
      S->min_realised = true, S->min_pred = S->min_mem, S->min_mem = pc.mem_total, S->min_mem_cost = pc;
    }
  }
out:
  S->reduced = true;
  S->retries = retries;
  C->limit = limit;
  free(keep), free(seen);
  red_free(C->red);
  C->red = NULL;
  return rc;
}

/* ---------------------------------------------------------------- searches kept for the same program
 *
 * galvc's default training search compiles the program once per
 * (recomputation, microbatch count) it tries and compiles the winner again
 * at the end (docs/planner.md, "Pass scaling"): the same program, planned
 * under the same options. The search is deterministic, so its outcome is
 * kept per process, keyed by a hash of the module's text and of every
 * option the search reads, and a later run of the pass on the same program
 * takes it instead of searching again (the chosen plan and its realised
 * cost are the ones that search realised in full). */
typedef struct {
  uint64_t h, n; /* FNV-1a of the text and the options, and their length */
} plan_key;

static ssize_t key_write(void *cookie, const char *buf, size_t len) {
  plan_key *k = cookie;
  uint64_t h = k->h;
  for (size_t i = 0; i < len; i++) h = (h ^ (unsigned char)buf[i]) * 1099511628211ull;
  k->h = h, k->n += len;
  return (ssize_t)len;
}

/* The key of planning m under the options the search reads but the memory limit (false: no key, then nothing is
 * kept); a search's key mixes the limit in (plan_key_limit). */
static bool plan_key_of(const gv_module *m, const gv_plan_options *o, plan_key *k) {
  k->h = 14695981039346656037ull, k->n = 0;
  FILE *f = fopencookie(k, "w", (cookie_io_functions_t){.write = key_write});
  if (!f) return false;
  __fsetlocking(f, FSETLOCKING_BYCALLER); /* one thread prints it: no lock per character */
  setvbuf(f, NULL, _IOFBF, 1 << 16);
  gv_print_module(m, f);
  const gv_cluster *c = o->cluster;
  fprintf(f, "\n%s|%s|%lld|%lld|%.17g|%.17g|%.17g|%.17g|%lld|%.17g|%.17g|%.17g|%.17g|%.17g|%.17g|%.17g|%.17g|%d\n", c->name, c->origin,
          (long long)c->nodes, (long long)c->devices_per_node, c->peak_tflops[0], c->peak_tflops[1], c->peak_tflops[2],
          c->compute_efficiency, (long long)c->memory_bytes, c->memory_gbps, c->memory_efficiency, c->intra_gbps,
          c->intra_latency_us, c->inter_gbps, c->inter_latency_us, c->launch_overhead_us, c->overlap_slowdown, c->fused_attention);
  const char *lay = getenv("GALV_PLAN_LAYERS"), *sp = getenv("GALV_PLAN_SP"), *ltp = getenv("GALV_PLAN_LAYER_TP");
  fprintf(f, "%lld|%d|%d|%u|%p|%s|%lld|%d|%d|%d|%d|%d|%s|%lld|%lld|%s|%s|%d%d\n", (long long)o->devices, o->mesh_fixed, o->exhaustive, o->zero_stages, (const void *)o->profile,
          gv_train_opts.recompute ? gv_train_opts.recompute : "-", (long long)gv_train_opts.microbatches,
          gv_train_opts.zero_reduce_each, (int)gv_precision_opts.storage, (int)gv_precision_opts.grad,
          (int)gv_precision_opts.reduce, gv_shard_opts.no_overlap, lay ? lay : "-", (long long)count_as,
          (long long)gv_shard_opts.bucket_bytes, sp ? sp : "-", ltp ? ltp : "-", sp_excluded, tp_excluded);
  bool ok = !ferror(f);
  fclose(f);
  return ok;
}

static void plan_key_limit(plan_key *k, int64_t limit) {
  for (int i = 0; i < 8; i++) k->h = (k->h ^ (unsigned char)((uint64_t)limit >> (8 * i))) * 1099511628211ull;
  k->n += 8;
}

typedef struct {
  plan_key key;
  search S;
  int64_t realised;
  int64_t lacking_tp;
  const char *lacking_field;
} kept_search;

enum { KEPT_MAX = 8 };
static kept_search *kept[KEPT_MAX];
static int nkept;

static const kept_search *kept_find(const plan_key *k) {
  for (int i = 0; i < nkept; i++)
    if (kept[i]->key.h == k->h && kept[i]->key.n == k->n) return kept[i];
  return NULL;
}

static void kept_add(const plan_key *k, const search *S, int64_t realised) {
  kept_search *e = nkept < KEPT_MAX ? malloc(sizeof *e) : kept[nkept % KEPT_MAX];
  if (!e) return;
  if (nkept >= KEPT_MAX) memmove(kept, kept + 1, (KEPT_MAX - 1) * sizeof *kept), nkept--;
  e->key = *k, e->S = *S, e->realised = realised, e->lacking_tp = prof_lacking_tp, e->lacking_field = prof_lacking_field;
  kept[nkept++] = e;
}

/* the fixed plans realised (gv_plan_opts.plan_fixed): keyed as a search is, with the plan and the limit */
typedef struct {
  plan_key key;
  gv_plan plan;
  gv_plan_cost pc;
  int q;
} kept_fixed;
static kept_fixed kept_fixed_at[KEPT_MAX];
static int nkept_fixed, next_fixed;

int64_t gv_plan_intra_left_out;

int gv_plan_intra(const gv_module *m, int64_t devices, const int64_t *mesh_shape, int naxes, const gv_cluster *c,
                  int64_t memory_limit, gv_plan *plan, gv_plan_cost *cost) {
  double t0 = now_s();
  ctx C;
  if (!c) return gv_error(m, "planner: no cluster model");
  if (ctx_init(&C, m, c, memory_limit)) return -1;
  gv_mesh fixed = {.name = "m", .naxes = naxes};
  static const char *const names[GV_MAX_MESH_AXES] = {"a0", "a1", "a2"};
  for (int a = 0; mesh_shape && a < naxes && a < GV_MAX_MESH_AXES; a++) fixed.axis[a] = names[a], fixed.size[a] = mesh_shape[a];
  search S;
  /* a pipeline stage's gradients are summed over microbatches by the
   * pipeline runtime, whole: its stages choose ZeRO-3 or none, as before
   * the stages 1 and 2 (which reshard gradients inside the step) existed */
  unsigned saved = gv_plan_opts.zero_stages;
  gv_plan_opts.zero_stages = gv_plan_opts.intra_roles && mesh_shape && naxes ? 1u : 1u << 3; /* 1: none but stage 0 */
  tp_excluded = true;
  const bool preset = gv_plan_opts.intra_roles && mesh_shape && naxes; /* a preset's stage: as --strategy compiles it */
  const char *spe = getenv("GALV_PLAN_SP");
  const bool sp_always = !preset && spe && !strcmp(spe, "always"); /* sp searched in every stage plan at once */
  sp_excluded = !sp_always;
  /* a whole program's step bounds no stage's; a pipeline candidate's step to beat, per microbatch, does
   * (stage_incumbent_ns): the combinations whose bound is above it are left out as one program's searches leave them */
  int64_t inc = gv_plan_opts.incumbent_ns;
  gv_plan_opts.incumbent_ns = gv_plan_opts.stage_incumbent_ns;
  int64_t inc_left = 0; /* the combinations that bound left out, both searches */
  int rc = plan_search(&C, devices, mesh_shape && naxes ? &fixed : NULL, false, &S);
  inc_left += C.inc_pruned;
  /* sp in the planner's own stage plan: searched again, with sp per layer, where memory binds the stage (no plan
   * fits, or a faster candidate was over the limit: sp splits the layers' activations over tp); the faster plan
   * that fits (else the smaller need) is the stage's. Where memory does not bind, the search without sp stands:
   * with sp a stage's search takes about twice as long (docs/planner.md, "Sequence parallelism in the stages");
   * GALV_PLAN_SP=always searches it in every stage plan, =off in none */
  /* (not where nothing was weighed but what the stage bound left out: then memory did not bind it) */
  if (!rc && !preset && !sp_always && !(spe && !strcmp(spe, "off")) && !(!S.found && S.min_mem < 0 && inc_left > 0) &&
      (!S.found || (S.over && S.over_ns < S.best_cost.step_ns))) {
    ctx C2;
    search *S2 = malloc(sizeof *S2);
    if (!S2) rc = gv_error(m, "out of memory");
    else if (ctx_init(&C2, m, c, memory_limit)) rc = -1;
    else {
      sp_excluded = false;
      int r2 = plan_search(&C2, devices, mesh_shape && naxes ? &fixed : NULL, false, S2);
      if (r2 < 0) rc = -1;
      else if (!r2 && (S2->found ? !S.found || S2->best_cost.step_ns < S.best_cost.step_ns
                                 : !S.found && S2->min_mem >= 0 && (S.min_mem < 0 || S2->min_mem < S.min_mem)))
        S = *S2;
      C.realised += C2.realised, inc_left += C2.inc_pruned;
      ctx_free(&C2);
    }
    free(S2);
  }
  gv_plan_intra_left_out += inc_left;
  gv_plan_opts.incumbent_ns = inc;
  tp_excluded = sp_excluded = false;
  gv_plan_opts.zero_stages = saved;
  if (!rc) {
    if (S.found) *plan = S.best, *cost = S.best_cost, cost->memory_bound = S.over && S.over_ns < S.best_cost.step_ns;
    else { /* the smallest candidate: its realised terms where the search has them (the stage cost's states beside
            * the program: gradient sums, optimizer state), else its memory alone */
      if (S.min_mem >= 0 && (S.min_realised || S.min_terms)) *cost = S.min_mem_cost;
      else memset(cost, 0, sizeof *cost);
      cost->mem_total = S.min_mem;
      if (S.min_mem >= 0) *plan = S.min_mem_plan;
      cost->bounded = inc_left > 0;
      rc = 1;
    }
    cost->plan_seconds = now_s() - t0;
    cost->candidates = C.realised;
  }
  ctx_free(&C);
  return rc;
}

/* ---------------------------------------------------------------- report, plan.json */

/* "plan: units: outer + 12 layers found by structure (12 blocks of 37 forward ops)"; a differing
 * first or last block of a kind (layer_units.h) is a group of its own: "1 block of 52 forward ops, 5 blocks of 46 ..." */
static void layers_report(const gv_layer_units *u, FILE *f) {
  if (!u->nl) {
    fprintf(f, "plan: units: one (no repeated blocks in the forward program)\n");
    return;
  }
  fprintf(f, "plan: units: outer + %d layer%s found by structure (", u->nl, u->nl == 1 ? "" : "s");
  for (int l = 0, k = 0; l < u->nl; k++) {
    int e = l;
    while (e < u->nl && u->kind[e] == u->kind[l] && u->len[e] == u->len[l]) e++;
    fprintf(f, "%s%d block%s of %d forward ops", k ? ", " : "", e - l, e - l == 1 ? "" : "s", u->len[l]);
    l = e;
  }
  fprintf(f, ")\n");
}

void gv_plan_unit_str(const gv_plan *p, int u, char *buf, size_t n) {
  size_t k = 0;
  buf[0] = 0;
  if (p->dmask) {
    k += (size_t)snprintf(buf + k, n - k, "dp(");
    int first = 1;
    for (int a = 0; a < p->naxes && k < n; a++)
      if (p->dmask & (1u << a)) k += (size_t)snprintf(buf + k, n - k, "%s%s", first ? "" : ",", p->axis[a]), first = 0;
    if (k < n) k += (size_t)snprintf(buf + k, n - k, ")");
  }
  int t = unit_tp(p, u);
  if (t >= 0 && k < n) k += (size_t)snprintf(buf + k, n - k, "%s%s(%s)", k ? "+" : "", u ? "tp" : "vocab-parallel", p->axis[t]);
  /* zero = ZeRO-3 (--strategy zero), zero1 / zero2 the lighter stages */
  if (p->zero[u] && p->dmask && k < n) k += (size_t)snprintf(buf + k, n - k, p->zero[u] >= 3 ? "+zero" : "+zero%d", p->zero[u]);
  if (p->sp[u] && p->t_layer >= 0 && k < n) k += (size_t)snprintf(buf + k, n - k, "+sp(%s)", p->axis[p->t_layer]);
  if (!k) snprintf(buf, n, "replicated");
}

static const char *const coll_names[4] = {"all_reduce", "all_gather", "reduce_scatter", "all_to_all"};

static void axes_desc(const gv_plan *p, const gv_cluster *c, char *buf, size_t n) {
  size_t k = 0;
  int64_t stride = 1;
  for (int a = p->naxes - 1; a >= 0; a--) stride *= p->size[a];
  int64_t s = 1;
  char parts[GV_MAX_MESH_AXES][64];
  for (int a = p->naxes - 1; a >= 0; a--) {
    bool inside = s * p->size[a] <= c->devices_per_node;
    snprintf(parts[a], sizeof parts[a], "%s=%lld%s", p->axis[a], (long long)p->size[a],
             p->size[a] == 1 ? "" : inside ? " (inside a node)" : " (across nodes)");
    s *= p->size[a];
  }
  (void)stride;
  buf[0] = 0;
  for (int a = 0; a < p->naxes && k < n; a++) k += (size_t)snprintf(buf + k, n - k, "%s%s", a ? " x " : "", parts[a]);
}

/* ---------------------------------------------------------------- the report per layer group
 *
 * Each run of units the report prints on one line (the embedding / head, then
 * the layers with the same choice) is explained from the chosen plan's own
 * realisation: the units' share of the step (their ops' slowed compute and
 * the waits for their collectives: the shares add up to the step), their
 * state (parameters, gradients, optimizer state as the units' arguments hold
 * them) and their activations kept for backward. Then the group's runner-up:
 * the plan realised again with only that group's choice changed, one change
 * at a time (another ZeRO stage; sequence parallelism on or off; the layers'
 * tp axis or none; the embedding / head's vocab axis), the fastest that fits,
 * and why it lost (slower, by which term; or faster but over the memory
 * limit). Each costs a realisation, so they are realised once galvc has
 * chosen the program it compiles (gv_plan_explain, on the plan the last run
 * with gv_plan_opts.explain kept); every run prints the groups' figures. */
enum { EXPLAIN_GROUPS = 8, EXPLAIN_ALTS = 8 };
typedef struct {
  int64_t *ns, *state, *kept, *comm; /* per unit, the chosen plan's realisation (one block: ns owns it) */
  int64_t copies;                    /* the program's microbatches (each keeps its own activations, one after another) */
  bool have, train;
} unit_figs;

static void unit_figs_free(unit_figs *u) {
  free(u->ns);
  memset(u, 0, sizeof *u);
}

/* p's realisation with its unit figures (the search's memo holds them: no new realisation where it has p) */
static int unit_figs_get(ctx *C, const gv_plan *p, unit_figs *u, gv_plan_cost *pc) {
  int nu = p->nunits;
  if (!(u->ns = calloc(4 * (size_t)nu, sizeof *u->ns))) return -1;
  u->state = u->ns + nu, u->kept = u->ns + 2 * nu, u->comm = u->ns + 3 * nu;
  realise_kept = u->kept, realise_comm = u->comm;
  int q = realise(C, p, pc, u->ns, u->state);
  realise_kept = realise_comm = NULL;
  u->have = !q;
  u->copies = microbatch_copies(C->m);
  u->train = C->train;
  return q < 0 ? -1 : 0;
}

/* the units [a, b) of p at another choice: k-th alternative of the group (returns false past the last) */
static bool group_alt(const ctx *C, const gv_plan *p, int a, int b, int k, gv_plan *q, char *what, size_t wn) {
  int n = 0;
  bool anytp = false, layer = a > 0;
  for (int u = 0; u < p->nunits; u++) anytp |= p->tp_unit[u] != 0;
  /* another ZeRO stage (over the batch axes, training) */
  for (int st = 0; st <= 3; st++) {
    if (st == p->zero[a] || (st && (!C->train || !p->dmask))) continue;
    if (n++ == k) {
      *q = *p;
      for (int u = a; u < b; u++) q->zero[u] = (uint8_t)st;
      snprintf(what, wn, "zero %d", st);
      return true;
    }
  }
  /* sequence parallelism on or off (the layers at the plan's tp axis, no layer at another) */
  if (layer && p->t_layer >= 0 && !anytp && C->layer_roles && n++ == k) {
    *q = *p;
    for (int u = a; u < b; u++) q->sp[u] = !p->sp[a];
    snprintf(what, wn, "sp %s", p->sp[a] ? "false" : "true");
    return true;
  }
  /* the embedding / head: vocab-parallel over another axis off the batch, or not */
  if (!layer && C->outer_roles)
    for (int t = -1; t < p->naxes; t++) {
      if (t == p->t_outer || (t >= 0 && ((p->dmask & (1u << t)) || p->size[t] < 2))) continue;
      if (n++ == k) {
        *q = *p;
        q->t_outer = t;
        snprintf(what, wn, "vocab_axis %s", t < 0 ? "null" : p->axis[t]);
        return true;
      }
    }
  /* the layers' tp: none, or another axis off the batch (without sp); with no tp axis for the layers, an idle axis */
  if (layer && C->layer_roles)
    for (int t = -1; t < p->naxes; t++) {
      if ((t < 0 || t == p->t_layer) && p->t_layer < 0) continue; /* "none" is the plan's own choice */
      int8_t v = t < 0 ? -1 : t == p->t_layer ? 0 : (int8_t)(t + 1);
      if (v == p->tp_unit[a] || (t >= 0 && (p->dmask & (1u << t))) || (t >= 0 && t != p->t_layer && p->size[t] < 2)) continue;
      if (n++ == k) {
        *q = *p;
        for (int u = a; u < b; u++) q->tp_unit[u] = v, q->sp[u] = 0;
        snprintf(what, wn, "tp_axis %s%s", t < 0 ? "null" : p->axis[t], p->sp[a] ? ", sp false" : "");
        return true;
      }
    }
  return false;
}

static void group_figs(const unit_figs *uf, int a, int b, int64_t *ns, int64_t *comm, int64_t *state, int64_t *kept) {
  *ns = *comm = *state = *kept = 0;
  for (int u = a; u < b; u++) *ns += uf->ns[u], *comm += uf->comm[u], *state += uf->state[u], *kept += uf->kept[u];
}

static void report_group(const unit_figs *uf, int a, int b, FILE *f) {
  int64_t ns, comm, state, kept;
  group_figs(uf, a, b, &ns, &comm, &state, &kept);
  if (uf->train)
    fprintf(f, "plan:     %d unit%s: %.3f ms of the step (compute %.3f, exposed communication %.3f), per device: state %lld bytes "
               "(parameters, gradients, optimizer), activations kept for backward %lld bytes%s\n",
            b - a, b - a == 1 ? "" : "s", ns / 1e6, (ns - comm) / 1e6, comm / 1e6, (long long)state, (long long)(kept / uf->copies),
            uf->copies > 1 ? " a microbatch" : "");
  else
    fprintf(f, "plan:     %d unit%s: %.3f ms of the step (compute %.3f, exposed communication %.3f), per device: parameters %lld "
               "bytes\n", b - a, b - a == 1 ? "" : "s", ns / 1e6, (ns - comm) / 1e6, comm / 1e6, (long long)state);
}

/* The group [a, b)'s runner-up (see above): its line */
static int explain_group(ctx *C, const gv_plan *p, const gv_plan_cost *pc, int a, int b, FILE *f) {
  gv_plan best, over;
  gv_plan_cost bc, oc, qc;
  bool has_best = false, has_over = false;
  int tried = 0, offered = 0;
  char what[64], bw[64] = "", ow[64] = "";
  for (int k = 0; k < EXPLAIN_ALTS; k++) {
    gv_plan q;
    if (!group_alt(C, p, a, b, k, &q, what, sizeof what)) break;
    offered++;
    int r = realise(C, &q, &qc, NULL, NULL);
    if (r < 0) return -1;
    if (r) continue;
    tried++;
    if (qc.mem_total <= C->limit) {
      if (!has_best || qc.step_ns < bc.step_ns) best = q, bc = qc, has_best = true, snprintf(bw, sizeof bw, "%s", what);
    } else if (!has_over || qc.step_ns < oc.step_ns) over = q, oc = qc, has_over = true, snprintf(ow, sizeof ow, "%s", what);
  }
  if (!tried) {
    fprintf(f, offered ? "none (no other choice of this group realises on this mesh)\n"
                       : "none (no other choice for this group on this mesh: no ZeRO stage, sp or tp axis to change)\n");
    return 0;
  }
  const gv_plan *r = has_best ? &best : &over;
  const gv_plan_cost *rc = has_best ? &bc : &oc;
  char s[128];
  gv_plan_unit_str(r, a, s, sizeof s);
  int64_t dt = rc->step_ns - pc->step_ns, dm = rc->mem_total - pc->mem_total;
  fprintf(f, "%s [%s]: step %.3f ms (%+.4g ms: compute %+.4g, exposed communication %+.4g), %lld bytes per "
             "device (%+lld): ",
          s, has_best ? bw : ow, rc->step_ns / 1e6, dt / 1e6, (rc->compute_ns + rc->slowdown_ns - pc->compute_ns - pc->slowdown_ns) / 1e6,
          (rc->exposed_ns - pc->exposed_ns) / 1e6, (long long)rc->mem_total, (long long)dm);
  if (!has_best) fprintf(f, "over the memory limit of %lld bytes", (long long)C->limit);
  else if (dt > 0) fprintf(f, "slower");
  else if (dt == 0) fprintf(f, "as fast, %s", dm >= 0 ? "no smaller" : "smaller");
  else if (count_as) /* priced on a stand-in (gv_plan_explain after the polish priced, or --plan): a price, not a plan realised */
    fprintf(f, "priced faster and within the limit (a stand-in's price for %lld microbatches: realised, its memory can be over; "
               "--plan with it realises it)", (long long)count_as);
  else fprintf(f, "faster and within the limit: a pattern the search did not reach (--plan with it compiles it)");
  fprintf(f, " (%d other choice%s realised", tried, tried == 1 ? "" : "s");
  if (has_best && has_over && oc.step_ns < bc.step_ns) {
    char so[128];
    gv_plan_unit_str(&over, a, so, sizeof so);
    fprintf(f, "; %s [%s] faster, %.3f ms, but %lld bytes: over the limit", so, ow, oc.step_ns / 1e6, (long long)oc.mem_total);
  }
  fprintf(f, ")\n");
  return 0;
}

/* The plan's groups of units (report()'s lines): calls fn per group [u, v) with its label ("layers 0-3") and its
 * strategy ("dp(dp)+zero2"); returns the groups */
static int plan_groups(const gv_plan *p, void (*fn)(void *, int, int, const char *, const char *), void *ud) {
  int g = 0;
  for (int u = 0; u < p->nunits; g++) {
    int v = u + 1;
    char s1[128], s2[128], label[32];
    gv_plan_unit_str(p, u, s1, sizeof s1);
    while (u && v < p->nunits) {
      gv_plan_unit_str(p, v, s2, sizeof s2);
      if (strcmp(s1, s2)) break;
      v++;
    }
    if (!u) snprintf(label, sizeof label, "embedding/head");
    else if (v - u == 1) snprintf(label, sizeof label, "layer %d", u - 1);
    else snprintf(label, sizeof label, "layers %d-%d", u - 1, v - 2);
    fn(ud, u, v, label, s1);
    u = v;
  }
  return g;
}

typedef struct {
  const unit_figs *uf;
  FILE *f;
} groups_ud;

static void groups_line(void *ud, int a, int b, const char *label, const char *strategy) {
  groups_ud *g = ud;
  fprintf(g->f, "plan:   %s: %s\n", label, strategy);
  if (g->uf && g->uf->have) report_group(g->uf, a, b, g->f);
}

static void report(const gv_plan *p, const gv_plan_cost *pc, const unit_figs *uf, const gv_cluster *c, int64_t limit, int64_t pred,
                   int64_t pred_mem, FILE *f) {
  char b[256];
  axes_desc(p, c, b, sizeof b);
  fprintf(f, "plan: mesh %s on %s (%lld per node); %lld candidate programs realised in %.3f s", b, c->name,
          (long long)c->devices_per_node, (long long)pc->candidates, pc->plan_seconds);
  if (report_kept) fprintf(f, "; %lld realisations read from earlier ones of the same program", (long long)report_kept);
  if (report_inc_out)
    fprintf(f, "; %lld mesh / strategy combinations left out, bounded above the fastest step realised so far (%.3f ms)",
            (long long)report_inc_out, report_inc_ns / 1e6);
  fputc('\n', f);
  groups_ud gu = {uf, f};
  plan_groups(p, groups_line, &gu);
  fprintf(f, "plan: predicted step %.3f ms = compute %.3f + overlap slowdown %.3f + exposed communication %.3f (communication %.3f; "
             "search's prediction %.3f ms, %lld bytes)\n",
          pc->step_ns / 1e6, pc->compute_ns / 1e6, pc->slowdown_ns / 1e6, pc->exposed_ns / 1e6, pc->comm_ns / 1e6, pred / 1e6,
          (long long)pred_mem);
  fprintf(f, "plan: memory per device: parameters %lld, gradients %lld, optimizer %lld, activations %lld, total %lld of %lld bytes\n",
          (long long)pc->mem_params, (long long)pc->mem_grads, (long long)pc->mem_optimizer, (long long)pc->mem_activations,
          (long long)pc->mem_total, (long long)limit);
  if (gv_plan_opts.profile && pc->prof_units) {
    const gv_profile *P = gv_plan_opts.profile;
    fprintf(f, "plan: profile %s (%s): %d unit%s' compute from the profile (microbatch of %lld sample%s per device, tp %lld): "
               "%.3f ms, the cost model's %.3f ms", P->path, P->format, pc->prof_units, pc->prof_units == 1 ? "" : "s",
            (long long)pc->prof_b, pc->prof_b == 1 ? "" : "s", (long long)pc->prof_tp, pc->prof_ns / 1e6, pc->prof_analytic_ns / 1e6);
    if (pc->prof_mem_units)
      fprintf(f, "; activations kept for backward of %d unit%s from the profile: %lld bytes, the memory plan's %lld", pc->prof_mem_units,
              pc->prof_mem_units == 1 ? "" : "s", (long long)pc->prof_act, (long long)pc->prof_analytic_act);
    else fprintf(f, "; memory from the memory plan");
    fprintf(f, "; communication from the cluster model\n");
  } else if (gv_plan_opts.profile)
    fprintf(f, "plan: profile %s (%s): no unit of this program is profiled (the analytic figures stand)\n", gv_plan_opts.profile->path,
            gv_plan_opts.profile->format);
  if (pc->bucket_bytes > 0)
    fprintf(f, "plan: gradient buckets of at most %lld bytes (%.6g MiB%s)\n", (long long)pc->bucket_bytes, pc->bucket_bytes / 1048576.0,
            gv_shard_opts.bucket_bytes == GV_BUCKET_AUTO ? ", --bucket-mb auto's choice" : "");
  else if (gv_shard_opts.bucket_bytes == GV_BUCKET_AUTO) fprintf(f, "plan: gradient buckets: none (--bucket-mb auto's choice: one call per gradient)\n");
  fprintf(f, "plan: collectives:");
  int any = 0;
  for (int i = 0; i < 4; i++)
    if (pc->coll_count[i]) fprintf(f, " %s %lld (%lld bytes/device)", coll_names[i], (long long)pc->coll_count[i], (long long)pc->coll_bytes[i]), any = 1;
  fprintf(f, "%s\n", any ? "" : " none");
}

/* The search's alternatives to the chosen plan, for the report. */
typedef struct {
  bool has_ru, has_over;
  gv_plan ru, over;
  int64_t ru_ns, ru_mem, over_ns, over_mem;
} alternatives;

static void plan_brief(const gv_plan *p, const gv_cluster *c, char *buf, size_t n) {
  char m[256], u[128], z[64] = "";
  axes_desc(p, c, m, sizeof m);
  gv_plan_unit_str(p, p->nunits > 1 ? 1 : 0, u, sizeof u);
  int nz = 0;
  for (int k = 0; k < p->nunits; k++) nz += p->dmask && p->zero[k];
  if (nz) snprintf(z, sizeof z, ", ZeRO on %d of %d units", nz, p->nunits);
  snprintf(buf, n, "mesh %s, %s %s%s", m, p->nunits > 1 ? "layers" : "all", u, z);
}

/* Why the choice won: the runner-up (the fastest plan of another mesh or
 * strategy that fits) and the fastest candidate over the memory limit,
 * each with the search's prediction against the choice's. */
static void report_alternatives(const alternatives *a, const gv_cluster *c, int64_t limit, int64_t pred, FILE *f) {
  char b[512];
  if (a->has_ru) {
    plan_brief(&a->ru, c, b, sizeof b);
    fprintf(f, "plan: runner-up: %s: predicted %.3f ms (%+.1f %% against the choice's %.3f ms), %lld bytes\n", b, a->ru_ns / 1e6,
            pred > 0 ? 100.0 * (double)(a->ru_ns - pred) / (double)pred : 0.0, pred / 1e6, (long long)a->ru_mem);
  }
  if (a->has_over && a->over_ns < pred) {
    plan_brief(&a->over, c, b, sizeof b);
    fprintf(f, "plan: faster but over the memory limit: %s: predicted %.3f ms, needs %lld bytes (limit %lld)\n", b,
            a->over_ns / 1e6, (long long)a->over_mem, (long long)limit);
  }
}

static int write_plan(const char *path, const gv_plan *p, const gv_plan_cost *pc, const gv_cluster *c, int64_t limit, bool train) {
  galv_wfile w; /* replaced atomically */
  char err[4400];
  FILE *f = galv_wfile_open(&w, path, 0, err, sizeof err);
  if (!f) return gv_error_plain("%s", err);
  fprintf(f, "{\n  \"cluster\": \"%s\",\n  \"devices_per_node\": %lld,\n  \"memory_limit\": %lld,\n", c->name,
          (long long)c->devices_per_node, (long long)limit);
  fprintf(f, "  \"mesh\": {\"axes\": [");
  for (int a = 0; a < p->naxes; a++) fprintf(f, "%s\"%s\"", a ? ", " : "", p->axis[a]);
  fprintf(f, "], \"shape\": [");
  for (int a = 0; a < p->naxes; a++) fprintf(f, "%s%lld", a ? ", " : "", (long long)p->size[a]);
  fprintf(f, "]},\n  \"batch_axes\": [");
  int first = 1;
  for (int a = 0; a < p->naxes; a++)
    if (p->dmask & (1u << a)) fprintf(f, "%s\"%s\"", first ? "" : ", ", p->axis[a]), first = 0;
  fprintf(f, "],\n  \"tp_axis\": ");
  if (p->t_layer >= 0) fprintf(f, "\"%s\"", p->axis[p->t_layer]);
  else fprintf(f, "null");
  fprintf(f, ",\n  \"vocab_axis\": ");
  if (p->t_outer >= 0) fprintf(f, "\"%s\"", p->axis[p->t_outer]);
  else fprintf(f, "null");
  fprintf(f, ",\n  \"units\": [\n");
  bool own = false; /* a layer with its own tp axis: every layer's is written ("tp_axis") */
  for (int u = 1; u < p->nunits; u++) own |= p->tp_unit[u] != 0;
  for (int u = 0; u < p->nunits; u++) {
    char s[128], t[40] = "";
    gv_plan_unit_str(p, u, s, sizeof s);
    if (own && u) snprintf(t, sizeof t, unit_tp(p, u) >= 0 ? ", \"tp_axis\": \"%s\"" : ", \"tp_axis\": null", unit_tp(p, u) >= 0 ? p->axis[unit_tp(p, u)] : "");
    fprintf(f, "    {\"unit\": \"%s%d\", \"strategy\": \"%s\", \"zero\": %d, \"sp\": %s%s}%s\n", u ? "layer " : "outer",
            u ? u - 1 : 0, s, p->dmask ? p->zero[u] : 0, p->sp[u] ? "true" : "false", t, u + 1 < p->nunits ? "," : "");
  }
  fprintf(f, "  ],\n");
  if (train) { /* the recomputation the plan was priced with: --plan compiles the same */
    fprintf(f, "  \"recompute\": \"");
    for (const char *q = gv_train_opts.recompute ? gv_train_opts.recompute : "none"; *q; q++)
      if (*q == '"' || *q == '\\') fprintf(f, "\\%c", *q);
      else if ((unsigned char)*q >= 0x20) fputc(*q, f);
    fprintf(f, "\",\n");
  }
  gv_plan_write_numerics(f, train);
  if (train) /* the dropout masks' seed (docs/training.md "Dropout"): --plan compiles the same masks */
    fprintf(f, "  \"seed\": %llu,\n", (unsigned long long)gv_train_opts.seed);
  if (gv_train_opts.microbatches > 1) /* gradient accumulation (passes/accumulate.c): --plan compiles as many */
    fprintf(f, "  \"microbatches\": %lld,\n  \"zero_reduce\": \"%s\",\n", (long long)gv_train_opts.microbatches,
            gv_train_opts.zero_reduce_each ? "per-microbatch" : "once");
  fprintf(f, "  \"bucket_mb\": %.15g,\n", pc->bucket_bytes / 1048576.0); /* gradient buckets (bucket.c): --plan compiles the same */
  fprintf(f, "  \"predicted\": {\"step_ns\": %lld, \"compute_ns\": %lld, \"communication_ns\": %lld, \"overlap_slowdown_ns\": %lld, "
             "\"exposed_communication_ns\": %lld},\n",
          (long long)pc->step_ns, (long long)pc->compute_ns, (long long)pc->comm_ns, (long long)pc->slowdown_ns,
          (long long)pc->exposed_ns);
  fprintf(f, "  \"memory_per_device\": {\"parameters\": %lld, \"gradients\": %lld, \"optimizer\": %lld, \"activations\": %lld, \"total\": %lld},\n",
          (long long)pc->mem_params, (long long)pc->mem_grads, (long long)pc->mem_optimizer, (long long)pc->mem_activations,
          (long long)pc->mem_total);
  if (gv_plan_opts.profile) {
    fprintf(f, "  \"profile\": {\"file\": \"");
    for (const unsigned char *q = (const unsigned char *)gv_plan_opts.profile->path; *q; q++) /* a JSON string */
      if (*q == '"' || *q == '\\') fprintf(f, "\\%c", *q);
      else if (*q < 0x20) fprintf(f, "\\u%04x", *q);
      else fputc(*q, f);
    fprintf(f, "\", \"format\": \"%s\", \"microbatch\": %lld, \"tp\": %lld, \"units\": %d, "
               "\"compute_ns\": %lld, \"analytic_compute_ns\": %lld, "
               "\"memory_units\": %d, \"activation_bytes\": %lld, \"analytic_activation_bytes\": %lld},\n",
            gv_plan_opts.profile->format, (long long)pc->prof_b, (long long)pc->prof_tp, pc->prof_units,
            (long long)pc->prof_ns,
            (long long)pc->prof_analytic_ns, pc->prof_mem_units, (long long)pc->prof_act, (long long)pc->prof_analytic_act);
  }
  fprintf(f, "  \"collectives\": {");
  for (int i = 0; i < 4; i++)
    fprintf(f, "%s\"%s\": {\"count\": %lld, \"bytes\": %lld}", i ? ", " : "", coll_names[i], (long long)pc->coll_count[i],
            (long long)pc->coll_bytes[i]);
  fprintf(f, "},\n  \"planning_seconds\": %.3f,\n  \"candidates\": %lld\n}\n", pc->plan_seconds, (long long)pc->candidates);
  if (galv_wfile_commit(&w, err, sizeof err)) return gv_error_plain("%s", err);
  return 0;
}

static int axis_named(const gv_plan *p, const gv_json *v, const char *path, const char *field, int *out) {
  *out = -1;
  if (!v || v->kind == GV_JSON_NULL) return 0;
  if (v->kind == GV_JSON_STRING)
    for (int a = 0; a < p->naxes; a++)
      if (strcmp(p->axis[a], v->str) == 0) return *out = a, 0;
  return gv_error_plain("%s: line %d: field '%s': expected null or a mesh axis name", path, v->line, field);
}

/* plan.json read whole (the reader's size cap, regular files only) and parsed; NULL after one error line */
static gv_json *plan_json(const char *path) {
  char *buf = NULL, err[256];
  size_t len = 0;
  if (galv_read_whole(path, GV_PLAN_FILE_MAX, &buf, &len, err, sizeof err)) {
    gv_error_plain("%s: %s", path, err);
    return NULL;
  }
  gv_json *root = gv_json_parse(buf, len, err, sizeof err);
  free(buf);
  if (!root) gv_error_plain("%s: not valid JSON: %s", path, err);
  return root;
}

/* plan.json's bucket_mb (absent: -1, the bucket pass chooses) */
static int plan_read_bucket(const char *path, int64_t *bytes) {
  gv_json *root = plan_json(path);
  if (!root) return -1;
  const gv_json *v = gv_json_get(root, "bucket_mb");
  int rc = 0;
  *bytes = -1;
  if (v && (v->kind != GV_JSON_NUMBER || !(v->num >= 0) || v->num > 1e6))
    rc = gv_error_plain("%s: line %d: field 'bucket_mb': expected a number of MiB from 0 to 1000000", path, v->line);
  else if (v) *bytes = (int64_t)(v->num * 1048576.0 + 0.5);
  gv_json_free(root);
  return rc;
}

/* the precision names of plan.json's numerics (galvc's flag values) */
static const char *num_name(gv_dtype t) { return t == GV_DT_BF16 ? "bf16" : t == GV_DT_F16 ? "fp16" : "fp32"; }
void gv_plan_write_numerics(FILE *f, bool train) {
  fprintf(f, "  \"precision\": \"%s\",\n", num_name(gv_precision_opts.storage));
  if (train)
    fprintf(f, "  \"grad_dtype\": \"%s\",\n  \"clip_grad_norm\": %.17g,\n",
            num_name(gv_precision_opts.storage == GV_DT_F32 ? GV_DT_F32 : gv_precision_opts.grad), gv_train_opts.clip_grad_norm);
}

int gv_plan_read_numerics(const char *path, gv_plan_numerics *n) {
  memset(n, 0, sizeof *n);
  n->clip = -1;
  gv_json *root = plan_json(path);
  if (!root) return -1;
  int rc = 0;
  static const char *const keys[2] = {"precision", "grad_dtype"};
  const char **out[2] = {&n->precision, &n->grad_dtype};
  for (int k = 0; k < 2 && !rc; k++) {
    const gv_json *v = gv_json_get(root, keys[k]);
    if (!v) continue;
    if (v->kind != GV_JSON_STRING || (strcmp(v->str, "fp32") && strcmp(v->str, "bf16") && strcmp(v->str, "fp16")))
      rc = gv_error_plain("%s: line %d: field '%s': expected \"fp32\", \"bf16\" or \"fp16\"", path, v->line, keys[k]);
    else *out[k] = !strcmp(v->str, "fp32") ? "fp32" : !strcmp(v->str, "bf16") ? "bf16" : "fp16"; /* outlive the parse */
  }
  const gv_json *c = gv_json_get(root, "clip_grad_norm");
  if (!rc && c && (c->kind != GV_JSON_NUMBER || !(c->num >= 0) || c->num > 1e30))
    rc = gv_error_plain("%s: line %d: field 'clip_grad_norm': expected 0 (off) or a positive number", path, c->line);
  else if (!rc && c) n->clip = c->num;
  gv_json_free(root);
  return rc;
}

int gv_plan_read_microbatches(const char *path, int64_t *B, bool *each) {
  gv_json *root = plan_json(path);
  if (!root) return -1;
  const gv_json *v = gv_json_get(root, "microbatches");
  int rc = 0;
  *B = 1;
  if (v && (v->kind != GV_JSON_NUMBER || v->num < 1 || v->num > 1000000 || v->num != (double)(int64_t)v->num))
    rc = gv_error_plain("%s: line %d: field 'microbatches': expected an integer from 1 to 1000000", path, v->line);
  else if (v) *B = (int64_t)v->num;
  const gv_json *z = gv_json_get(root, "zero_reduce");
  *each = false;
  if (!rc && z && (z->kind != GV_JSON_STRING || (strcmp(z->str, "once") && strcmp(z->str, "per-microbatch"))))
    rc = gv_error_plain("%s: line %d: field 'zero_reduce': expected \"once\" or \"per-microbatch\"", path, z->line);
  else if (z) *each = !strcmp(z->str, "per-microbatch");
  gv_json_free(root);
  return rc;
}

int gv_plan_read_recompute(const char *path, const char **mode) {
  *mode = NULL;
  gv_json *root = plan_json(path);
  if (!root) return -1;
  const gv_json *v = gv_json_get(root, "recompute");
  int rc = 0;
  if (v && (v->kind != GV_JSON_STRING || !v->str[0] || strlen(v->str) > 4096))
    rc = gv_error_plain("%s: line %d: field 'recompute': expected \"none\", \"selective\", \"all\" or a layer list", path, v->line);
  else if (v) {
    static char keep[4097]; /* outlives the parsed file: gv_train_opts.recompute points here */
    snprintf(keep, sizeof keep, "%s", v->str);
    *mode = keep;
  }
  gv_json_free(root);
  return rc;
}

int gv_plan_read_seed(const char *path, uint64_t *seed, bool *found) {
  *found = false;
  gv_json *root = plan_json(path);
  if (!root) return -1;
  const gv_json *v = gv_json_get(root, "seed");
  int rc = 0;
  if (v && (v->kind != GV_JSON_NUMBER || v->num < 0 || v->num > 9007199254740992.0 || v->num != (double)(int64_t)v->num))
    rc = gv_error_plain("%s: line %d: field 'seed': expected an integer from 0 to 2^53", path, v->line);
  else if (v) *seed = (uint64_t)v->num, *found = true;
  gv_json_free(root);
  return rc;
}

int gv_plan_read(const char *path, gv_plan *p, int nunits) {
  gv_json *root = plan_json(path);
  if (!root) return -1;
  int rc = 0;
  memset(p, 0, sizeof *p);
  const gv_json *mesh = gv_json_get(root, "mesh");
  const gv_json *ax = gv_json_get(mesh, "axes"), *sh = gv_json_get(mesh, "shape");
  const gv_json *units = gv_json_get(root, "units");
  if (!ax || !sh || ax->kind != GV_JSON_ARRAY || sh->kind != GV_JSON_ARRAY || ax->n != sh->n || ax->n < 1 || ax->n > GV_MAX_MESH_AXES)
    rc = gv_error_plain("%s: line %d: field 'mesh': expected {\"axes\": [names], \"shape\": [sizes]} of 1 to 3 axes", path,
                        mesh ? mesh->line : 1);
  for (int a = 0; !rc && a < ax->n; a++) {
    /* sizes are bounded before any conversion or product (a size of 2^62 overflows the product of the axes) */
    double v = sh->items[a].kind == GV_JSON_NUMBER ? sh->items[a].num : 0;
    if (ax->items[a].kind != GV_JSON_STRING || strlen(ax->items[a].str) >= sizeof p->axis[a] || !ax->items[a].str[0] ||
        sh->items[a].kind != GV_JSON_NUMBER || !(v >= 1 && v <= GV_PLAN_AXIS_MAX) || v != (double)(int64_t)v)
      rc = gv_error_plain("%s: line %d: field 'mesh': axis %d needs a short name and an integer size from 1 to %d", path,
                          mesh->line, a, GV_PLAN_AXIS_MAX);
    for (int b = 0; !rc && b < a; b++)
      if (!strcmp(p->axis[b], ax->items[a].str))
        rc = gv_error_plain("%s: line %d: field 'mesh': axis name '%s' given twice", path, mesh->line, ax->items[a].str);
    if (!rc) {
      snprintf(p->axis[a], sizeof p->axis[a], "%s", ax->items[a].str);
      p->size[a] = (int64_t)sh->items[a].num;
    }
  }
  if (!rc) p->naxes = ax->n;
  const gv_json *ba = gv_json_get(root, "batch_axes");
  if (!rc && (!ba || ba->kind != GV_JSON_ARRAY)) rc = gv_error_plain("%s: line %d: field 'batch_axes': expected an array of axis names", path, ba ? ba->line : root->line);
  for (int i = 0; !rc && i < ba->n; i++) {
    int a;
    rc = axis_named(p, &ba->items[i], path, "batch_axes", &a);
    if (!rc && a < 0) rc = gv_error_plain("%s: line %d: field 'batch_axes': not a mesh axis", path, ba->items[i].line);
    if (!rc && (p->dmask & (1u << a)))
      rc = gv_error_plain("%s: line %d: field 'batch_axes': axis '%s' given twice", path, ba->items[i].line, p->axis[a]);
    if (!rc) p->dmask |= 1u << a;
  }
  if (!rc) rc = axis_named(p, gv_json_get(root, "tp_axis"), path, "tp_axis", &p->t_layer);
  if (!rc) rc = axis_named(p, gv_json_get(root, "vocab_axis"), path, "vocab_axis", &p->t_outer);
  if (!rc && (!units || units->kind != GV_JSON_ARRAY)) rc = gv_error_plain("%s: line %d: field 'units': expected an array", path, units ? units->line : root->line);
  /* "zero": the ZeRO stage 0-3 (plans before stages: true = 3, --strategy
   * zero, false = 0); "unit": "outer0" or "layer N", in model order */
  for (int u = 0; !rc && u < units->n && u < GV_PLAN_MAX_UNITS; u++) {
    const gv_json *it = &units->items[u], *z = gv_json_get(it, "zero"), *nm = gv_json_get(it, "unit");
    char want[32];
    snprintf(want, sizeof want, u ? "layer %d" : "outer0", u - 1);
    if (nm && (nm->kind != GV_JSON_STRING || (strcmp(nm->str, want) && !(u == 0 && !strcmp(nm->str, "outer"))))) {
      int L = -1;
      bool layer = nm->kind == GV_JSON_STRING && sscanf(nm->str, "layer %d", &L) == 1;
      if (layer && (L < 0 || L >= nunits - 1))
        rc = gv_error_plain("%s: line %d: field 'units': unit '%s' names no layer of the model (layers 0-%d)", path, it->line,
                            nm->str, nunits - 2);
      else
        rc = gv_error_plain("%s: line %d: field 'units': unit %d is '%s', expected '%s' (units in model order: outer0, layer 0, ...)",
                            path, it->line, u, nm->kind == GV_JSON_STRING ? nm->str : "?", want);
    } else if (z && z->kind == GV_JSON_BOOL) p->zero[u] = z->b ? 3 : 0;
    else if (z && z->kind == GV_JSON_NUMBER && z->num >= 0 && z->num <= 3 && z->num == (double)(int)z->num) p->zero[u] = (uint8_t)z->num;
    else
      rc = gv_error_plain("%s: line %d: field 'units': each unit needs \"zero\": its ZeRO stage 0, 1, 2 or 3 (true = 3, false = 0)",
                          path, z ? z->line : it->line);
    if (!rc && p->zero[u] && !p->dmask)
      rc = gv_error_plain("%s: line %d: field 'units': unit '%s' has ZeRO stage %d, but the plan has no batch axes to shard over "
                          "(ZeRO shards over the data-parallel axes)", path, it->line, want, p->zero[u]);
  }
  if (!rc && units->n != nunits)
    rc = gv_error_plain("%s: line %d: field 'units': the plan has %d units, the model %d (outer + %d layers)", path, units->line,
                        units->n, nunits, nunits - 1);
  for (int u = 0; !rc && u < units->n; u++) {
    /* "sp" (optional, false): sequence parallelism over the tp axis between this unit's tensor-parallel blocks */
    const gv_json *q = gv_json_get(&units->items[u], "sp");
    if (q && q->kind != GV_JSON_BOOL) rc = gv_error_plain("%s: line %d: field 'units': \"sp\" is true or false", path, q->line);
    else if (q && q->b && p->t_layer < 0)
      rc = gv_error_plain("%s: line %d: field 'units': \"sp\": true needs a tp_axis (sequence parallelism splits the values "
                          "between tensor-parallel blocks)", path, q->line);
    else if (q) p->sp[u] = q->b;
    /* "tp_axis" (optional, a layer's own tensor-parallel axis or null: none; absent: the plan's tp_axis) */
    const gv_json *t = gv_json_get(&units->items[u], "tp_axis");
    int a = -1;
    if (!rc && t && !u) rc = gv_error_plain("%s: line %d: field 'units': \"tp_axis\" is a layer's (the outer unit's is vocab_axis)", path, t->line);
    else if (!rc && t && !(rc = axis_named(p, t, path, "units[].tp_axis", &a))) {
      if (a >= 0 && (p->dmask & (1u << a)))
        rc = gv_error_plain("%s: line %d: field 'units': \"tp_axis\" '%s' is a batch axis", path, t->line, p->axis[a]);
      else p->tp_unit[u] = a == p->t_layer ? 0 : a >= 0 ? (int8_t)(a + 1) : -1;
      if (!rc && p->sp[u] && p->tp_unit[u])
        rc = gv_error_plain("%s: line %d: field 'units': \"sp\" with a layer's own \"tp_axis\" is not supported yet (sequence "
                            "parallelism runs over the plan's tp_axis)", path, t->line);
    }
  }
  p->nunits = nunits;
  gv_json_free(root);
  return rc ? -1 : 0;
}

/* ---------------------------------------------------------------- --profile */

/* The model's shape as a profile names it: layers, hidden size and
 * vocabulary from the embedding table (the vocab-parallel gather's [V, H]
 * parameter), sequence length from the first data input of rank >= 2. */
static void model_shape(const ctx *C, int64_t *layers, int64_t *hidden, int64_t *seq, int64_t *vocab) {
  const gv_func *f = C->m->main;
  *layers = C->nl, *hidden = *seq = *vocab = 0;
  for (int i = 0; i < C->nargs; i++) {
    const gv_type *t = &f->body->args[i]->type;
    bool param = f->arg_is_param && f->arg_is_param[i], state = f->arg_is_state && f->arg_is_state[i];
    if (C->role[i] == ROLE_VOCAB && t->rank == 2 && !*vocab) *vocab = t->dims[0], *hidden = t->dims[1];
    if (!param && !state && t->rank >= 2 && !*seq) *seq = t->dims[1];
  }
}

int gv_plan_profile_check(const gv_module *m) {
  const gv_profile *P = gv_plan_opts.profile;
  if (!P || !m->main) return 0;
  ctx C;
  if (ctx_init(&C, m, gv_plan_opts.cluster, 0)) return -1;
  int64_t l, h, s, v;
  model_shape(&C, &l, &h, &s, &v);
  ctx_free(&C);
  if (P->layer.present && !l)
    return gv_error_plain("%s: field '%s': the model has no layers (no repeated blocks in its forward program) to apply it to", P->path,
                          P->layer.field);
  return gv_profile_check(P, l, h, s, v);
}

void gv_plan_profile_report(const gv_module *m, FILE *f) {
  if (!gv_plan_opts.profile || !m->main || !gv_plan_opts.cluster) return;
  ctx C;
  if (ctx_init(&C, m, gv_plan_opts.cluster, 0)) return;
  int nu = C.nl + 1;
  int64_t(*ph)[NPH] = calloc((size_t)nu, sizeof *ph);
  int(*cnt)[NPH] = calloc((size_t)nu, sizeof *cnt);
  gv_plan_cost pc;
  memset(&pc, 0, sizeof pc);
  /* the program is one rank's: its batch is already the local one (dp 1 here); tp from the mesh axes the plan chose */
  int64_t tl = 1;
  const gv_plan *p = &last_plan;
  if (last_plan_set && p->t_layer >= 0) tl = p->size[p->t_layer];
  int64_t *utp = calloc((size_t)nu, sizeof *utp);
  for (int u = 0; utp && u < nu; u++) utp[u] = last_plan_set && u < p->nunits && unit_tp(p, u) >= 0 ? p->size[unit_tp(p, u)] : 1;
  if (ph && cnt && utp) {
    cost_ops(&C, m, &pc, NULL, ph, cnt, NULL);
    gv_mem mem;
    gv_cost_memory(m, &mem);
    pc.mem_total = mem.total;
    int64_t before = pc.step_ns, mem0 = pc.mem_total;
    int q = profile_apply(&C, m, nu, 1, utp, tl, &pc, NULL, ph, cnt, f);
    if (q == 1)
      fprintf(f, "profile: %s has no figures at tp %lld: the analytic figures stand\n", gv_plan_opts.profile->path, (long long)prof_lacking_tp);
    else if (!q)
      fprintf(f, "profile: %s (%s): %d units from the profile (microbatch %lld, tp %lld): predicted step %.3f ms (analytic %.3f ms), "
                 "memory per device %lld bytes (analytic %lld)\n",
              gv_plan_opts.profile->path, gv_plan_opts.profile->format, pc.prof_units, (long long)pc.prof_b, (long long)tl,
              pc.step_ns / 1e6, before / 1e6, (long long)pc.mem_total, (long long)mem0);
  }
  free(ph), free(cnt), free(utp);
  ctx_free(&C);
}

/* ---------------------------------------------------------------- the pass */

gv_plan_outcome gv_plan_last;

/* The run's chosen plan kept for gv_plan_explain: its program before pin_plan, the plan, its cost, the limit, the
 * count the program stands in for (count_as; 0: the program's own) and the microbatches it holds
 * (gv_train_opts.microbatches then: the passes its realisations run read it, and galvc may have compiled another
 * count since). A stand-in's run (galvc's polish priced from 2 microbatches) is kept beside the last run of a
 * program's own (stand_run): the polish prices on it and realises on that one. */
typedef struct {
  gv_module *m;
  gv_plan plan;
  gv_plan_cost pc;
  int64_t limit, count_as;
  int microbatches;
} kept_run;
static kept_run explained, stand_run;

static void explain_keep(const gv_module *m, const gv_plan *p, const gv_plan_cost *pc, int64_t limit) {
  kept_run *k = count_as > 2 ? &stand_run : &explained;
  if (k->m) gv_module_free(k->m);
  k->m = clone_module(m);
  k->plan = *p, k->pc = *pc, k->limit = limit, k->count_as = count_as;
  k->microbatches = gv_train_opts.microbatches;
}

static void kept_drop(kept_run *k) {
  if (k->m) gv_module_free(k->m);
  k->m = NULL;
}

/* The globals a realisation of a kept run's program reads, set to that run's; globals_put puts them back */
typedef struct {
  int64_t count_as;
  int microbatches;
} run_globals;
static run_globals globals_use(const kept_run *k) {
  run_globals g = {count_as, gv_train_opts.microbatches};
  count_as = k->count_as, gv_train_opts.microbatches = k->microbatches;
  return g;
}
static void globals_put(run_globals g) { count_as = g.count_as, gv_train_opts.microbatches = g.microbatches; }

typedef struct {
  ctx *C;
  FILE *f;
  int g, rc;
  const gv_plan *p; /* the plan explained, its figures */
  const gv_plan_cost *pc;
} explain_ud;

static void explain_line(void *ud, int a, int b, const char *label, const char *strategy) {
  explain_ud *e = ud;
  if (e->rc || e->g++ >= EXPLAIN_GROUPS) return;
  fprintf(e->f, "plan:   runner-up for %s (%s): ", label, strategy);
  e->rc = explain_group(e->C, e->p, e->pc, a, b, e->f);
}

/* p leaves an axis of more than one device idle: no batch, no unit's tp or vocab split over it */
static bool plan_idle(const gv_plan *p) {
  unsigned used = plan_used_axes(p);
  for (int a = 0; a < p->naxes; a++)
    if (p->size[a] > 1 && !(used & (1u << a))) return true;
  return false;
}

/* q (p with group a's choice changed) is in the space the user left the search: the ZeRO stages --zero-stages names
 * (the default space's omissions are the search's economies, not limits: ZeRO-1 on one group is taken), the layers'
 * tp choice unless GALV_PLAN_LAYER_TP=off, sp unless GALV_PLAN_SP=off, no idle axis under GALV_PLAN_IDLE=off */
static bool polish_in_space(const gv_plan *p, const gv_plan *q, int a) {
  if (idle_off() && plan_idle(q)) return false;
  if (gv_plan_opts.zero_stages && q->zero[a] != p->zero[a] && q->zero[a] && !(gv_plan_opts.zero_stages & (1u << q->zero[a])))
    return false;
  if (env_off("GALV_PLAN_LAYER_TP") && a > 0 && q->tp_unit[a] != p->tp_unit[a]) return false;
  return !(env_off("GALV_PLAN_SP") && q->sp[a] && !p->sp[a]);
}

/* gv_plan_polish's walk over one plan's groups: the fastest single change that fits and beats the plan; with a
 * stand-in (S), each change priced on it instead and those priced faster within the limit kept (cand) for the round
 * to realise in full, fastest priced first */
enum { POLISH_CANDS = 64, POLISH_VERIFY = 3 };
typedef struct {
  gv_plan q;
  gv_plan_cost qc;
  char what[64], label[32], from[128];
  int a;
} polish_cand;
typedef struct {
  ctx *C, *S;
  const gv_plan *p;
  const gv_plan_cost *pc, *ps; /* the plan's figures realised; priced on the stand-in (with S) */
  gv_plan best;
  gv_plan_cost bc;
  char what[64], label[32], from[128];
  bool found;
  int a, g, rc; /* a: the best change's group's first unit */
  polish_cand *cand;
  int ncand;
} polish_ud;

static void polish_group(void *ud, int a, int b, const char *label, const char *strategy) {
  polish_ud *e = ud;
  if (e->rc || e->g++ >= EXPLAIN_GROUPS) return;
  char what[64];
  for (int k = 0; k < EXPLAIN_ALTS; k++) {
    gv_plan q;
    gv_plan_cost qc;
    if (!group_alt(e->C, e->p, a, b, k, &q, what, sizeof what)) break;
    if (!polish_in_space(e->p, &q, a)) continue;
    if (e->S) { /* priced from 2 microbatches; over the limit as priced: over it realised (the copies never take less) */
      run_globals g = globals_use(&stand_run);
      int r = realise(e->S, &q, &qc, NULL, NULL);
      globals_put(g);
      if (r < 0) {
        e->rc = -1;
        return;
      }
      if (r || qc.mem_total > e->S->limit || qc.step_ns >= e->ps->step_ns || e->ncand == POLISH_CANDS) continue;
      polish_cand *c = &e->cand[e->ncand++];
      c->q = q, c->qc = qc, c->a = a;
      snprintf(c->what, sizeof c->what, "%s", what);
      snprintf(c->label, sizeof c->label, "%s", label);
      snprintf(c->from, sizeof c->from, "%s", strategy);
      continue;
    }
    int r = realise(e->C, &q, &qc, NULL, NULL);
    if (r < 0) {
      e->rc = -1;
      return;
    }
    if (r || qc.mem_total > e->C->limit || qc.step_ns >= e->pc->step_ns) continue;
    if (!e->found || qc.step_ns < e->bc.step_ns) {
      e->best = q, e->bc = qc, e->found = true, e->a = a;
      snprintf(e->what, sizeof e->what, "%s", what);
      snprintf(e->label, sizeof e->label, "%s", label);
      snprintf(e->from, sizeof e->from, "%s", strategy);
    }
  }
}

static int cand_cmp(const void *x, const void *y) {
  const polish_cand *a = x, *b = y;
  return a->qc.step_ns < b->qc.step_ns ? -1 : a->qc.step_ns > b->qc.step_ns;
}

enum { POLISH_ROUNDS = 3 };

int gv_plan_polish(gv_plan *out, FILE *f) {
  if (!explained.m) return 0;
  const char *env = getenv("GALV_PLAN_POLISH");
  if ((env && !strcmp(env, "off")) || gv_plan_opts.exhaustive) return 0; /* (exhaustive: the space's optimum, the tests' oracle) */
  const gv_plan_options *o = &gv_plan_opts;
  const gv_layer_units_hint_state hint = gv_layer_units_hint_get(); /* as gv_plan_explain: put back afterwards */
  const gv_shard_options shard = gv_shard_opts;
  /* a stand-in of the same plan at the program's count (galvc's polish priced from 2 microbatches) */
  const bool priced = stand_run.m && stand_run.count_as == explained.microbatches && plan_eq(&stand_run.plan, &explained.plan);
  ctx C, S;
  int rc = ctx_init(&C, explained.m, o->cluster, explained.limit);
  const bool c_on = !rc;
  bool s_on = false;
  if (!rc && priced) rc = ctx_init(&S, stand_run.m, o->cluster, stand_run.limit), s_on = !rc;
  polish_cand *cand = priced ? malloc(POLISH_CANDS * sizeof *cand) : NULL;
  if (priced && !cand) rc = gv_error_plain("planner: out of memory");
  int taken = 0;
  run_globals g0 = globals_use(&explained);
  if (!rc) {
    plan_key key;
    if (plan_key_of(explained.m, o, &key)) C.memo = (key.h ^ key.n) | 1;
    if (priced && plan_key_of(stand_run.m, o, &key)) S.memo = (key.h ^ key.n) | 1;
    double t0 = now_s();
    int64_t r0 = C.realised, s0 = priced ? S.realised : 0;
    gv_plan p = explained.plan;
    gv_plan_cost pc = explained.pc, ps = stand_run.pc;
    for (int round = 0; round < POLISH_ROUNDS && !rc; round++) {
      polish_ud e;
      memset(&e, 0, sizeof e);
      e.C = &C, e.S = priced ? &S : NULL, e.p = &p, e.pc = &pc, e.ps = &ps, e.cand = cand;
      plan_groups(&p, polish_group, &e);
      rc = e.rc;
      int tried = 0;
      if (!rc && priced) { /* the changes priced faster within the limit, realised in full, fastest priced first */
        qsort(cand, (size_t)e.ncand, sizeof *cand, cand_cmp);
        for (int i = 0; i < e.ncand && tried < POLISH_VERIFY && !e.found; i++, tried++) {
          gv_plan_cost qc;
          int r = realise(&C, &cand[i].q, &qc, NULL, NULL);
          if (r < 0) {
            rc = -1;
            break;
          }
          if (r || qc.mem_total > C.limit || qc.step_ns >= pc.step_ns) continue;
          const polish_cand *c = &cand[i];
          e.best = c->q, e.bc = qc, e.found = true, e.a = c->a, ps = c->qc;
          snprintf(e.what, sizeof e.what, "%s", c->what);
          snprintf(e.label, sizeof e.label, "%s", c->label);
          snprintf(e.from, sizeof e.from, "%s", c->from);
        }
      }
      if (rc || !e.found) break;
      if (f) {
        char to[128]; /* the changed group's strategy now */
        gv_plan_unit_str(&e.best, e.a, to, sizeof to);
        if (priced)
          fprintf(f, "plan: polished: %s (%s) -> %s [%s]: step %.3f -> %.3f ms, %lld bytes per device (the search's choice "
                     "with one layer group changed, priced from 2 microbatches for %lld (%d faster within the limit so), then "
                     "realised in full: faster and within the limit)\n", e.label, e.from, to, e.what, pc.step_ns / 1e6,
                  e.bc.step_ns / 1e6, (long long)e.bc.mem_total, (long long)stand_run.count_as, e.ncand);
        else
          fprintf(f, "plan: polished: %s (%s) -> %s [%s]: step %.3f -> %.3f ms, %lld bytes per device (the search's choice "
                     "with one layer group changed, realised in full: faster and within the limit)\n",
                  e.label, e.from, to, e.what, pc.step_ns / 1e6, e.bc.step_ns / 1e6, (long long)e.bc.mem_total);
      }
      p = e.best, pc = e.bc, taken++;
    }
    if (!rc && taken) *out = p;
    if (!rc && priced) stand_run.plan = p, stand_run.pc = ps; /* the report explains the plan compiled, priced */
    if (!rc && f && (taken || priced)) {
      fprintf(f, "plan: polish: %d change%s taken, %lld candidate programs realised in full", taken, taken == 1 ? "" : "s",
              (long long)(C.realised - r0));
      if (priced) fprintf(f, " and %lld priced from 2 microbatches", (long long)(S.realised - s0));
      fprintf(f, " in %.3f s\n", now_s() - t0);
    }
  }
  globals_put(g0);
  if (s_on) ctx_free(&S);
  if (c_on) ctx_free(&C);
  free(cand);
  gv_layer_units_hint_put(hint);
  gv_shard_opts = shard;
  return rc ? -1 : taken > 0;
}

int gv_plan_explain(FILE *f) {
  /* the program the polish priced on when there is one (a stand-in of the count compiled: its changes priced as the
   * polish priced them), else the run's own */
  const kept_run *k = stand_run.m ? &stand_run : &explained;
  if (!k->m) return 0;
  const gv_plan_options *o = &gv_plan_opts;
  /* the realisations below set the layer-units hint for each copy: the main program's (set by the pass after its
   * choice, read by its regather and overlap after this call) is put back, so the program compiled is the one
   * priced (tests/plan_explain.sh compares the IR with and without -q) */
  const gv_layer_units_hint_state hint = gv_layer_units_hint_get();
  const gv_shard_options shard = gv_shard_opts;
  ctx C;
  int rc = ctx_init(&C, k->m, o->cluster, k->limit);
  run_globals g0 = globals_use(k);
  if (!rc) {
    plan_key key;
    if (plan_key_of(k->m, o, &key)) C.memo = (key.h ^ key.n) | 1;
    double t0 = now_s();
    int64_t r0 = C.realised;
    if (k->count_as)
      fprintf(f, "plan: each layer group against its other choices (the plan with that group's choice changed, one change at "
                 "a time, priced from 2 microbatches for %lld as the polish priced them; the choice so priced: %.3f ms, %lld "
                 "bytes per device; the fastest that fits):\n", (long long)k->count_as, k->pc.step_ns / 1e6,
              (long long)k->pc.mem_total);
    else
      fprintf(f, "plan: each layer group against its other choices (the plan realised with that group's choice changed, one "
                 "change at a time; the fastest that fits):\n");
    explain_ud e = {&C, f, 0, 0, &k->plan, &k->pc};
    int g = plan_groups(&k->plan, explain_line, &e);
    rc = e.rc;
    if (!rc && g > EXPLAIN_GROUPS) fprintf(f, "plan:   (runner-ups for the first %d groups of %d)\n", EXPLAIN_GROUPS, g);
    if (!rc)
      fprintf(f, "plan: runner-ups: %lld candidate programs %s in %.3f s\n", (long long)(C.realised - r0),
              k->count_as ? "priced" : "realised", now_s() - t0);
    ctx_free(&C);
  }
  globals_put(g0);
  kept_drop(&explained), kept_drop(&stand_run);
  gv_layer_units_hint_put(hint);
  gv_shard_opts = shard;
  return rc ? -1 : 0;
}

int gv_pass_plan_sharding(gv_module *m) {
  const gv_plan_options *o = &gv_plan_opts;
  if (!o->active || !m->main) return 0;
  if (!o->cluster) return gv_error(m, "planner: no cluster model");
  report_kept = 0, report_inc_out = 0;
  for (gv_op *op = m->main->body->first; op; op = op->next)
    if (op->nregions) return gv_error_op(m, op, "planner: ops with regions (galv.%s) are not supported", gv_ops[op->code].name);
  double t0 = now_s();
  if (gv_plan_profile_check(m)) return -1;
  prof_lacking_tp = 0;
  ctx C;
  if (ctx_init(&C, m, o->cluster, o->memory_limit)) return -1;
  int64_t devices = o->devices > 0 ? o->devices : (m->nmeshes ? gv_mesh_devices(m->meshes[0]) : 1);
  gv_plan plan;
  gv_plan_cost pc;
  int64_t pred = 0, pred_mem = 0;
  int rc = 0;
  memset(&gv_plan_last, 0, sizeof gv_plan_last);
  gv_plan_last.layers = C.nl;
  gv_shard_opts.bucket_planned = -1; /* --bucket-mb auto: each candidate's realisation chooses */
  /* with plan_fixed (also after --plan): galvc prices a fixed plan at a count */
  count_as = o->count_as > 2 && (!o->plan_in || o->plan_fixed) ? o->count_as : 0;
  static alternatives alt; /* large (three plans): not on the stack */
  bool alt_scaled = false;   /* the alternatives' figures are the reduced search's scaled predictions, not realised */
  bool estimated = false;    /* the choice predicted over o->over_ns, not realised in full (plan_search) */
  memset(&alt, 0, sizeof alt);
  const int64_t hits_fixed = memo_hits; /* a plan given (plan_fixed, plan_in): its realisation read from an earlier one */
  if (o->plan_fixed) { /* galvc's stand-in choice at its count: realised in full */
    plan = *o->plan_fixed;
    /* galvc compiles a count's choice again as stored (the fastest count, the fastest recomputation): the same
     * program and plan realised earlier in this process is not realised again (a count of many microbatches is a
     * program of as many copies) */
    plan_key key;
    int64_t nops = 0;
    for (const gv_op *op = m->main->body->first; op; op = op->next) nops++;
    /* the report reads the realisation's unit figures back (unit_figs_get): keyed for it; -q needs no key where
     * a smaller program realises in less than it prints */
    bool keyed = (!o->quiet || nops >= 100000) && plan_key_of(m, o, &key);
    if (keyed) C.memo = (key.h ^ key.n) | 1;
    keyed = keyed && nops >= 100000;
    if (keyed) {
      plan_key_limit(&key, (int64_t)plan_hash(&plan));
      plan_key_limit(&key, o->memory_limit);
    }
    const kept_fixed *hit = NULL;
    for (int i = 0; keyed && i < nkept_fixed && !hit; i++)
      if (kept_fixed_at[i].key.h == key.h && kept_fixed_at[i].key.n == key.n && plan_eq(&kept_fixed_at[i].plan, &plan))
        hit = &kept_fixed_at[i];
    int q;
    if (hit) {
      q = hit->q, pc = hit->pc;
      if (!o->quiet) fprintf(stderr, "plan: the same program and plan as an earlier run: its realised cost\n");
    } else {
      q = realise(&C, &plan, &pc, NULL, NULL);
      if (keyed && q >= 0) {
        kept_fixed *e = &kept_fixed_at[nkept_fixed < KEPT_MAX ? nkept_fixed++ : (next_fixed++ % KEPT_MAX)];
        e->key = key, e->plan = plan, e->pc = pc, e->q = q;
      }
    }
    if (q) rc = q < 0 ? -1 : 1, gv_plan_last.min_mem = -1; /* does not realise: 1, no error line (galvc plans the count in full) */
    pred = pc.step_ns, pred_mem = pc.mem_total;
  } else if (o->plan_in) {
    plan_key key;
    if (!o->quiet && plan_key_of(m, o, &key)) C.memo = (key.h ^ key.n) | 1; /* as above */
    rc = gv_plan_read(o->plan_in, &plan, C.nl + 1);
    const gv_mesh *given = o->mesh_fixed && m->nmeshes ? m->meshes[0] : NULL; /* --mesh: must be the plan's */
    bool same = given && given->naxes == plan.naxes;
    for (int a = 0; same && a < plan.naxes; a++) same = !strcmp(given->axis[a], plan.axis[a]) && given->size[a] == plan.size[a];
    if (!rc && given && !same) {
      char g[128] = "", q[128] = "";
      for (int a = 0; a < given->naxes; a++)
        snprintf(g + strlen(g), sizeof g - strlen(g), "%s%s=%lld", a ? "," : "", given->axis[a], (long long)given->size[a]);
      for (int a = 0; a < plan.naxes; a++)
        snprintf(q + strlen(q), sizeof q - strlen(q), "%s%s=%lld", a ? "," : "", plan.axis[a], (long long)plan.size[a]);
      rc = gv_error_plain("%s: the plan's mesh %s conflicts with --mesh %s (give one of the two, or the same)", o->plan_in, q, g);
    }
    int64_t prod = 1;
    for (int a = 0; !rc && a < plan.naxes; a++) prod *= plan.size[a];
    if (!rc && prod != devices)
      rc = gv_error_plain("%s: the plan's mesh has %lld devices, --gpus %lld", o->plan_in, (long long)prod, (long long)devices);
    if (!rc && gv_shard_opts.bucket_bytes == GV_BUCKET_AUTO) rc = plan_read_bucket(o->plan_in, &gv_shard_opts.bucket_planned);
    if (!rc) {
      int q = realise(&C, &plan, &pc, NULL, NULL);
      if (q && q > 0 && o->profile && prof_lacking_tp)
        rc = gv_error_plain("%s: field '%s': no figures at tp %lld, the plan %s's", o->profile->path, prof_lacking_field,
                            (long long)prof_lacking_tp, o->plan_in);
      else if (q) rc = q < 0 ? -1 : gv_error_plain("%s: the plan does not apply to this model (a batch or dim it does not divide)", o->plan_in);
      pred = pc.step_ns, pred_mem = pc.mem_total;
    }
  } else {
    search S;
    const gv_mesh *fixed = o->mesh_fixed && m->nmeshes ? m->meshes[0] : NULL;
    plan_key key;
    bool keyed = plan_key_of(m, o, &key);
    if (keyed) C.memo = (key.h ^ key.n) | 1, plan_key_limit(&key, o->memory_limit);
    const kept_search *hit = keyed ? kept_find(&key) : NULL;
    if (hit) { /* the same program planned before in this process: that search's outcome */
      S = hit->S;
      prof_lacking_tp = hit->lacking_tp, prof_lacking_field = hit->lacking_field;
      if (!o->quiet)
        fprintf(stderr, "plan: the same program as an earlier run (%lld candidate programs realised then): its search's choice\n",
                (long long)hit->realised);
    } else {
      int64_t hits0 = memo_hits;
      rc = plan_search(&C, devices, fixed, o->exhaustive, &S);
      S.inc_out = C.inc_pruned, S.inc_ns = o->incumbent_ns;
      report_kept = memo_hits - hits0;
      if (!rc && keyed && !S.estimated) kept_add(&key, &S, C.realised); /* (a prediction alone is not kept) */
    }
    report_inc_out = S.inc_out, report_inc_ns = S.inc_ns;
    if (!rc && !S.found && S.min_mem < 0 && S.inc_out > 0 && o->probe) { /* every combination bounded above the incumbent */
      rc = 1;
      gv_plan_last.min_mem = -1, gv_plan_last.bounded = true;
    } else if (!rc && !S.found && S.min_mem >= 0 && o->probe) { /* no error line: the driver tries a smaller microbatch */
      rc = 1;
      gv_plan_last.min_mem = S.min_mem, gv_plan_last.min_cost = S.min_mem_cost, gv_plan_last.min_terms = S.min_realised || S.min_terms;
      gv_plan_last.min_need = S.min_realised && S.min_pred < S.min_mem ? S.min_pred : S.min_mem;
      gv_plan_last.limit = C.limit;
    }
    else if (!rc && !S.found) {
      char s[128] = "", pipe_hint[160] = ""; /* galvc's default search plans no pipelines here: the line names them */
      if (o->no_pipe_why)
        snprintf(pipe_hint, sizeof pipe_hint, " (pipelines are not searched %s: --pipeline-stages S plans S stages)", o->no_pipe_why);
      if (S.min_mem >= 0) gv_plan_unit_str(&S.min_mem_plan, S.min_mem_plan.nunits > 1 ? 1 : 0, s, sizeof s);
      if (S.min_mem >= 0 && (S.min_realised || S.min_terms)) {
        /* the binding term: what alone leaves no room (or the largest) */
        const gv_plan_cost *k = &S.min_mem_cost;
        const bool acts = k->mem_activations >= k->mem_params && k->mem_activations >= k->mem_optimizer;
        const bool opt = !acts && k->mem_optimizer >= k->mem_params; /* "optimizer state dominates" */
        const char *big = acts ? "activations" : opt ? "optimizer state" : "parameters";
        char fix[320];
        snprintf(fix, sizeof fix, "%s%s", C.train && acts && strcmp(gv_train_opts.recompute ? gv_train_opts.recompute : "none", "all")
                 ? "recompute them (--recompute=selective: the attention scores; all: everything), raise --memory-limit or add devices"
                 : "raise --memory-limit or add devices", pipe_hint);
        if (S.min_realised)
          rc = gv_error(m, "no plan fits the memory limit of %lld bytes per device on %lld devices: the smallest candidate (%s) "
                           "needs %lld bytes realised (parameters %lld, gradients %lld, optimizer state %lld, activations %lld); "
                           "%s %s: %s", (long long)C.limit, (long long)devices, s, (long long)S.min_mem,
                        (long long)k->mem_params, (long long)k->mem_grads, (long long)k->mem_optimizer, (long long)k->mem_activations,
                        big, opt ? "dominates" : "dominate", fix);
        else
          rc = gv_error(m, "no plan fits the memory limit of %lld bytes per device on %lld devices: the smallest needs %lld bytes (%s: "
                           "parameters %lld, gradients %lld, optimizer state %lld, activations %lld); %s %s: %s",
                        (long long)C.limit, (long long)devices, (long long)S.min_mem, s, (long long)k->mem_params,
                        (long long)k->mem_grads, (long long)k->mem_optimizer, (long long)k->mem_activations, big,
                        opt ? "dominates" : "dominate", fix);
      } else if (S.min_mem >= 0)
        rc = gv_error(m, "no plan fits the memory limit of %lld bytes per device on %lld devices: the smallest needs %lld bytes (%s); "
                         "raise --memory-limit or add devices%s", (long long)C.limit, (long long)devices, (long long)S.min_mem, s,
                      pipe_hint);
      else if (o->profile && prof_lacking_tp)
        rc = gv_error(m, "no plan applies on %lld devices: the candidates that realise need figures the profile %s does not "
                         "have (tp %lld, among others; field '%s')", (long long)devices, o->profile->path,
                      (long long)prof_lacking_tp, prof_lacking_field);
      else rc = gv_error(m, "no plan applies on %lld devices (the batch divides over no mesh axes)", (long long)devices);
    }
    if (!rc) plan = S.best, pc = S.best_cost, pred = S.best_pred, pred_mem = S.best_pred_mem, estimated = S.estimated;
    if (!rc) gv_plan_last.memory_bound = S.over && S.over_ns < S.best_cost.step_ns;
    if (!rc)
      alt = (alternatives){.has_ru = S.has_ru, .has_over = S.over, .ru = S.ru, .over = S.over_plan, .ru_ns = S.ru_ns,
                           .ru_mem = S.ru_mem, .over_ns = S.over_ns, .over_mem = S.over_plan_mem};
    alt_scaled = S.reduced;
    if (!rc && S.estimated && !o->quiet)
      fprintf(stderr, "plan: %d repeated layers: candidates costed on reduced programs, the choice predicted %.3f ms, over %.3f ms: not "
                      "realised in full\n", C.nl, (double)S.best_pred / 1e6, (double)o->over_ns / 1e6);
    else if (!rc && S.reduced && !o->quiet) { /* which path chose the plan (docs/planner.md, repeated layers) */
      fprintf(stderr, "plan: %d repeated layers: candidates costed on reduced programs, the choice realised in full", C.nl);
      if (S.retries) fprintf(stderr, " after %d search(es) whose choice did not fit in full", S.retries);
      fputc('\n', stderr);
    }
  }
  if (!rc && count_as && !o->quiet)
    fprintf(stderr, "plan: priced for %lld microbatches from the program of 2 (its second microbatch repeated; docs/planner.md, "
                    "\"Microbatch counts priced\")\n", (long long)count_as);
  if (!rc && !o->quiet) layers_report(&C.lu, stderr);
  if (!rc && gv_shard_opts.bucket_bytes == GV_BUCKET_AUTO) gv_shard_opts.bucket_planned = pc.bucket_bytes; /* the main program's */
  if (o->plan_fixed || o->plan_in) report_kept = memo_hits - hits_fixed;
  /* the chosen plan's unit figures for the report (before pin_plan changes m, which C->m is) */
  unit_figs uf = {0};
  if (!rc && !o->quiet && !estimated) {
    gv_plan_cost upc;
    if (unit_figs_get(&C, &plan, &uf, &upc)) rc = gv_error_plain("planner: out of memory");
  }
  if (!rc && o->explain && !estimated) explain_keep(m, &plan, &pc, C.limit); /* before pin_plan changes m */
  if (!rc) {
    pc.plan_seconds = now_s() - t0;
    pc.candidates = C.realised;
    gv_plan_last.cost = pc;
    gv_plan_last.plan = plan, gv_plan_last.limit = C.limit;
    rc = pin_plan(m, &C, &plan);
    if (rc > 0) rc = gv_error(m, "plan: the batch does not divide over the plan's batch axes");
    if (!rc) last_plan = plan, last_plan_set = true;
    static plan_sp main_sp; /* read by the main module's propagate-sharding, after this pass */
    static gv_layer_units main_lu; /* its units: the pass's, kept until the next run of the pass */
    if (!rc) {
      sp_region_keep(&main_sp, &main_lu, &C, &plan);
      gv_layer_units_hint(m, &main_lu); /* the main program's regather and overlap: the same units */
    }
  }
  if (!rc && !o->quiet && !estimated) report(&plan, &pc, &uf, o->cluster, C.limit, pred, pred_mem, stderr);
  unit_figs_free(&uf);
  /* the alternatives against the choice as the search measured them: realised steps on the full program
   * (the knapsack's table prediction is no sum under overlap), scaled predictions on reduced ones */
  if (!rc && !o->quiet && !estimated) report_alternatives(&alt, o->cluster, C.limit, alt_scaled ? pred : pc.step_ns, stderr);
  if (!rc && !o->quiet) { /* axes the plan leaves idle replicate the whole computation: one warning line */
    unsigned used = plan.dmask | (plan.t_layer >= 0 ? 1u << plan.t_layer : 0) | (plan.t_outer >= 0 ? 1u << plan.t_outer : 0);
    for (int u = 1; u < plan.nunits; u++) used |= unit_tp(&plan, u) >= 0 ? 1u << unit_tp(&plan, u) : 0;
    int64_t idle = 1;
    for (int a = 0; a < plan.naxes; a++)
      if (!(used & (1u << a))) idle *= plan.size[a];
    if (idle > 1 && C.mb_batch > 0 && C.mb_batch % devices == 0) { /* chosen over splitting the batch: the search's
                                                                       * plans with an idle axis ("Plans with an idle axis") */
      char names[GV_MAX_MESH_AXES * 48] = ""; /* "name=size, ..." (a name of 15 characters at most) */
      for (int a = 0, n = 0; a < plan.naxes && n < (int)sizeof names; a++)
        if (!(used & (1u << a)) && plan.size[a] > 1)
          n += snprintf(names + n, sizeof names - (size_t)n, "%s%s=%lld", n ? ", " : "", plan.axis[a], (long long)plan.size[a]);
      fprintf(stderr, "plan: note: groups of %lld ranks compute the same values (idle: %s), predicted faster than splitting the "
                      "batch of %lld over them (GALV_PLAN_IDLE=off leaves such plans out)\n",
              (long long)idle, names, (long long)C.mb_batch);
    } else if (idle > 1)
      fprintf(stderr, "plan: warning: the batch (%lld) does not split over the %lld devices: groups of %lld ranks compute the same values; "
                      "--batch %lld (or a multiple) lets data parallelism use every device\n",
              (long long)C.batch, (long long)devices, (long long)idle, (long long)(dprod(&plan) * idle));
  }
  if (!rc && o->plan_out) {
    rc = write_plan(o->plan_out, &plan, &pc, o->cluster, C.limit, C.train);
    if (!rc && !o->quiet) fprintf(stderr, "plan: wrote %s\n", o->plan_out);
  }
  ctx_free(&C);
  count_as = 0;
  return rc == 1 ? 1 : rc ? -1 : 0;
}
