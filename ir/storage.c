/* storage.c — storage precision of values (storage.h): the readers of the
 * storage pass's attributes, and the mixed-precision training rule that
 * pass applies (passes/storage.c). Reads the IR only. */
#include "storage.h"

#include <stdlib.h>
#include <string.h>

gv_dtype gv_value_storage(const gv_value *v) {
  static const char *k_arg, *k_res; /* interned keys: read for every value the cost walk prices */
  if (!k_res) k_arg = gv_intern("arg_storage"), k_res = gv_intern("storage");
  const gv_op *d = v->def;
  if (!d && v->block && v->block->last && v->block->last->code == GV_OP_RETURN) { /* a block argument */
    const gv_attr *a = gv_get_attr_key(v->block->last, k_arg);
    gv_dtype t;
    if (a && a->kind == GV_ATTR_STRS && v->index >= 0 && v->index < a->u.strs.n &&
        gv_dtype_parse(a->u.strs.v[v->index], strlen(a->u.strs.v[v->index]), &t))
      return t;
    return v->type.dtype;
  }
  const gv_attr *a = d ? gv_get_attr_key(d, k_res) : NULL;
  if (!a || a->kind != GV_ATTR_STRS) return v->type.dtype;
  for (int i = 0; i < d->nres && i < a->u.strs.n; i++) {
    gv_dtype t;
    if (d->res[i] == v && gv_dtype_parse(a->u.strs.v[i], strlen(a->u.strs.v[i]), &t)) return t;
  }
  return v->type.dtype;
}

int64_t gv_value_storage_bytes(const gv_value *v) {
  int64_t n = gv_type_numel(&v->type);
  return n < 0 ? -1 : n * (int64_t)gv_dtype_size(gv_value_storage(v));
}

gv_dtype gv_op_input_storage(const gv_op *op) {
  const char *s = gv_get_str(op, "input_storage", NULL);
  gv_dtype t;
  if (s && gv_dtype_parse(s, strlen(s), &t)) return t;
  return op->nopnds ? op->opnds[0]->type.dtype : GV_DT_F32;
}

bool gv_module_has_narrow_storage(const gv_module *m) {
  if (!m->main || !m->main->body) return false;
  for (const gv_op *op = m->main->body->first; op; op = op->next)
    if (gv_get_attr(op, "storage") || gv_get_attr(op, "arg_storage")) return true;
  return false;
}

bool gv_name_crosses(const char *n) {
  return n && (!strncmp(n, "pp.", 3) || !strncmp(n, "gin:pp.", 7) || !strncmp(n, "grad:pp.", 8) || !strncmp(n, "stash.", 6) ||
               !strncmp(n, "wstash.", 7));
}

int gv_func_stage_kind(const gv_func *f) {
  if (!f || !f->body || f->res_updates) return 0;
  bool stage = false, train = false;
  for (int i = 0; i < f->body->nargs; i++) {
    const char *n = f->arg_names ? f->arg_names[i] : NULL;
    stage = stage || gv_name_crosses(n);
    train = train || (n && (!strncmp(n, "gin:", 4) || !strncmp(n, "stash.", 6) || !strncmp(n, "wstash.", 7)));
  }
  for (int i = 0; i < f->nres_names; i++) {
    const char *n = f->res_names[i];
    stage = stage || gv_name_crosses(n);
    train = train || (n && (!strcmp(n, "loss") || !strncmp(n, "grad:", 5) || !strncmp(n, "stash.", 6) || !strncmp(n, "wstash.", 7)));
  }
  return !stage ? 0 : train ? 2 : 1;
}

static bool is_collective(const gv_op *op) {
  switch (op->code) {
  case GV_OP_ALL_REDUCE: case GV_OP_ALL_GATHER: case GV_OP_REDUCE_SCATTER: case GV_OP_ALL_TO_ALL:
  case GV_OP_SHARD_SLICE: case GV_OP_AXIS_INDEX: case GV_OP_RESHARD:
    return true;
  default:
    return false;
  }
}

/* ops whose result holds its operand's elements as they are (copies,
 * collectives): stored like the operand */
static bool moves_data(const gv_op *op) {
  switch (op->code) {
  case GV_OP_TRANSPOSE: case GV_OP_EXPAND: case GV_OP_SLICE: case GV_OP_TILE: case GV_OP_CONCAT: case GV_OP_SPLIT:
  case GV_OP_GATHER: case GV_OP_TRILU: case GV_OP_SLICE_GRAD:
    return true;
  default:
    return is_collective(op);
  }
}

/* the ops whose f32 inputs are 16-bit activations (they compute in fp32
 * from them): GEMMs, convolutions, norms, softmax, cross-entropy, fused attention */
static bool takes_activations(const gv_op *op) {
  switch (op->code) {
  case GV_OP_DOT: case GV_OP_CONV: case GV_OP_CONV_GRAD_INPUT: case GV_OP_CONV_GRAD_WEIGHT: case GV_OP_SOFTMAX:
  case GV_OP_LOG_SOFTMAX: case GV_OP_LAYER_NORM: case GV_OP_RMS_NORM: case GV_OP_CROSS_ENTROPY:
  case GV_OP_CROSS_ENTROPY_GRAD: case GV_OP_ATTENTION: case GV_OP_ATTENTION_GRAD:
    return true;
  default:
    return false;
  }
}

/* --grad-dtype bf16: the backward ops that produce a parameter gradient (a
 * GEMM's dW, a bias / norm-scale reduce, an embedding's scatter-add, a
 * convolution's dW) or reduce one across ranks write it 16-bit. A scalar
 * reduce (a norm, a count) is not a gradient. */
static bool makes_gradient(const gv_op *op) {
  switch (op->code) {
  case GV_OP_DOT: case GV_OP_GATHER_GRAD: case GV_OP_CONV_GRAD_WEIGHT: case GV_OP_ALL_REDUCE: case GV_OP_REDUCE_SCATTER:
    return true;
  case GV_OP_REDUCE_SUM: return op->nres && op->res[0]->type.rank > 0;
  default: return false;
  }
}

/* reductions keep their result fp32 (a row statistic: a softmax's max and
 * sum of exponentials in a vocab-parallel cross-entropy, a bias gradient,
 * a norm) and read 16-bit operands as GEMMs do (galv_cu_reduce_to) */
static bool reduction(const gv_op *op) {
  switch (op->code) {
  case GV_OP_REDUCE_SUM: case GV_OP_REDUCE_MAX: case GV_OP_REDUCE_MIN: case GV_OP_REDUCE_MEAN: return true;
  default: return false;
  }
}

/* the optimizer's ops (passes/optimizer.c, loc "optimizer/...": loss
 * unscaling and its overflow check, clipping, the update) compute on fp32
 * gradients, parameters and state: their results stay fp32 and their
 * operands are read as fp32 (a reduction there, an overflow count or a
 * clipping norm, does not make a gradient 16-bit). A collective spmd-
 * partition placed before one (it takes its consumer's loc) is not one. */
static bool update_op(const gv_op *op) {
  return op->loc && op->loc[0] == 'o' && !strncmp(op->loc, "optimizer/", 10) && !is_collective(op); /* a collective spmd-partition placed there moves the gradient */
}

static bool skip(const gv_op *op) {
  return op->code == GV_OP_CONSTANT || op->code == GV_OP_ARENA || op->code == GV_OP_RETURN ||
         (gv_ops[op->code].flags & GV_VIEW);
}

/* ops through which a parameter gradient flows unchanged in kind on its way to the optimizer */
static bool carries_gradient(const gv_op *op) {
  return op->code == GV_OP_ADD || op->code == GV_OP_TRANSPOSE || op->code == GV_OP_RESHARD || op->code == GV_OP_CONCAT ||
         op->code == GV_OP_SLICE || is_collective(op) || (gv_ops[op->code].flags & GV_VIEW);
}

/* Decided per root (a view shares its root's storage): the fp32 closure in
 * reverse schedule order, then forward for copies. */
int gv_storage_plan_train(gv_module *m, unsigned char *half, int nvals, bool grad16, gv_dtype reduce, const char *const *wide,
                          int nwide) {
  gv_block *body = m->main->body;
  int nops = 0, rc = 0;
  for (const gv_op *op = body->first; op; op = op->next) nops++;
  const gv_op **ops = malloc((size_t)(nops + 1) * sizeof *ops);
  int *root = malloc((size_t)(nvals + 1) * sizeof *root);
  char *used = calloc((size_t)nvals + 1, 1), *bad = calloc((size_t)nvals + 1, 1), *ret = calloc((size_t)nvals + 1, 1);
  char *f32 = calloc((size_t)nvals + 1, 1), *togr = calloc((size_t)nvals + 1, 1); /* togr: flows into the optimizer */
  /* topg (a stage program, --grad-dtype bf16): flows into a parameter gradient result (grad:<param>) */
  char *topg = calloc((size_t)nvals + 1, 1);
  if (!ops || !root || !used || !bad || !ret || !f32 || !togr || !topg) abort();
  for (int i = 0; i < nvals; i++) root[i] = i, half[i] = 0;
  /* a training stage program: its crossing values (named) are 16-bit, not step results */
  const gv_func *fn = m->main;
  const bool stage = gv_func_stage_kind(fn) == 2;
  char *force = calloc((size_t)nvals + 1, 1);
  if (!force) abort();
  for (int i = 0; stage && i < body->nargs; i++)
    if (body->args[i]->type.dtype == GV_DT_F32 && gv_name_crosses(fn->arg_names[i]) && body->args[i]->id >= 0 &&
        body->args[i]->id < nvals) {
      bool w = false; /* a stash slot its writer stores fp32 */
      for (int k = 0; k < nwide && !w; k++) w = !strcmp(wide[k], fn->arg_names[i]);
      half[body->args[i]->id] = !w;
    }
  nops = 0;
  int lossk = -1; /* the loss's defining op: the backward and the update follow it */
  const gv_op *term = gv_block_terminator(body);
  const gv_op *lossop = term && term->nopnds ? term->opnds[0]->def : NULL;
  for (const gv_op *op = body->first; op; op = op->next) {
    if (op == lossop) lossk = nops;
    ops[nops++] = op;
    for (int i = 0; i < op->nres; i++)
      if (op->res[i]->id < 0 || op->res[i]->id >= nvals) {
        rc = gv_error_op(m, op, "storage: value numbering out of range (internal error)");
        goto done;
      }
    if ((gv_ops[op->code].flags & GV_VIEW) && op->nopnds && op->nres) root[op->res[0]->id] = root[op->opnds[0]->id];
  }
  for (int k = nops - 1; k >= 0; k--) {
    const gv_op *op = ops[k];
    if (op->code == GV_OP_RETURN)
      for (int i = 0; i < op->nopnds; i++) {
        const char *rn = stage && i < fn->nres_names ? fn->res_names[i] : NULL;
        bool stash = rn && (!strncmp(rn, "stash.", 6) || !strncmp(rn, "wstash.", 7)); /* stored as in the whole step */
        /* --grad-dtype bf16: a stage's parameter gradient (the runtime sums it over the microbatches, in bf16) */
        bool pgrad = grad16 && rn && !strncmp(rn, "grad:", 5) && !gv_name_crosses(rn + 5) && op->opnds[i]->type.dtype == GV_DT_F32;
        if (pgrad) force[root[op->opnds[i]->id]] = 1, topg[op->opnds[i]->id] = topg[root[op->opnds[i]->id]] = 1;
        else if (!gv_name_crosses(rn)) ret[root[op->opnds[i]->id]] = 1;
        else if (!stash && op->opnds[i]->type.dtype == GV_DT_F32) force[root[op->opnds[i]->id]] = 1;
      }
    if (skip(op)) continue;
    /* a collective moves its operand's bytes unconverted (codegen/comm.c): a result forced 16-bit (a stage's
     * crossing value or --grad-dtype bf16 parameter gradient a dp stage all-reduces) forces its operand too */
    for (int i = 0; is_collective(op) && i < op->nres && i < op->nopnds; i++)
      if (force[root[op->res[i]->id]] && op->opnds[i]->type.dtype == GV_DT_F32) force[root[op->opnds[i]->id]] = 1;
    /* a gradient-making op follows the loss; in a stage entry without one (an earlier stage's backward) it is
     * one whose result flows into a parameter gradient result (a bias's reduce before the dp all-reduce) */
    bool any = false, grad = grad16 && makes_gradient(op) && ((lossk >= 0 && k > lossk) || (op->nres && topg[op->res[0]->id]));
    bool wide32 = false; /* --reduce-dtype fp32: a gradient's pending sum stays fp32 */
    if (reduce != GV_DT_UNKNOWN && lossk >= 0 && k > lossk && op->nres == 1 && !update_op(op) && togr[op->res[0]->id]) {
      const gv_sharding *sh = gv_value_sharding(m, op->res[0]); /* a pending sum: a gradient reduction moves it */
      if (sh && sh->partial) grad = reduce != GV_DT_F32, wide32 = reduce == GV_DT_F32;
    }
    bool stat = reduction(op) && !grad;
    for (int i = 0; i < op->nres; i++) { /* every use of each result is known now (later in the schedule) */
      int r = op->res[i]->id;
      /* attention's lse is a row statistic as a reduction's: fp32 (docs/fused-attention.md) */
      f32[r] = ret[r] || stat || update_op(op) || wide32 || (used[r] && !bad[r] && !grad) || (op->code == GV_OP_ATTENTION && i == 1);
      any = any || (f32[r] && op->res[i]->type.dtype == GV_DT_F32);
    }
    bool through = (any && !takes_activations(op) && !reduction(op)) || update_op(op);
    for (int i = 0; i < op->nopnds; i++) {
      int r = root[op->opnds[i]->id];
      /* cross_entropy_grad's d loss is a scalar its kernel reads as fp32: an
       * accumulated microbatch's weight (passes/accumulate.c) stays fp32 */
      if (through || (op->code == GV_OP_CROSS_ENTROPY_GRAD && i == 0)) used[r] = 1;
      else bad[r] = 1;
      if (update_op(op) || (carries_gradient(op) && op->nres && togr[op->res[0]->id])) togr[op->opnds[i]->id] = 1;
      if (carries_gradient(op) && op->nres && topg[op->res[0]->id]) topg[op->opnds[i]->id] = topg[root[op->opnds[i]->id]] = 1;
    }
  }
  for (int k = 0; k < nops && !rc; k++) {
    const gv_op *op = ops[k];
    if (gv_ops[op->code].flags & GV_VIEW) {
      for (int i = 0; i < op->nres; i++) half[op->res[i]->id] = half[root[op->res[i]->id]];
      continue;
    }
    if (skip(op)) continue;
    bool any = false;
    for (int i = 0; i < op->nopnds; i++) any = any || half[op->opnds[i]->id];
    /* elementwise work on fp32 values only stays fp32 (nothing 16-bit to save: a vocab-parallel
     * cross-entropy's log-sum-exp from its fp32 row statistics, the sum of two fp32 embeddings) */
    bool wide = !any && (op->code == GV_OP_FUSED || (gv_ops[op->code].flags & GV_ELEMENTWISE)) && !gv_get_attr(op, "gather_copy");
    for (int i = 0; i < op->nres && !rc; i++) {
      int r = op->res[i]->id;
      if (op->res[i]->type.dtype != GV_DT_F32) continue;
      half[r] = force[r] || (moves_data(op) ? (op->code == GV_OP_CONCAT ? any : half[op->opnds[0]->id]) : !f32[r] && !wide);
      if (half[r] && ret[r])
        rc = gv_error_op(m, op, "storage: mixed-precision training: the step result from galv.%s would be stored "
                                "16-bit (its operand is a 16-bit activation); not supported", gv_ops[op->code].name);
    }
  }
  for (int k = 0; k < nops && !rc && stage; k++) /* a crossing result from a constant cannot be 16-bit */
    for (int i = 0; ops[k]->code == GV_OP_CONSTANT && i < ops[k]->nres; i++)
      if (force[root[ops[k]->res[i]->id]])
        rc = gv_error_op(m, ops[k], "storage: pipeline stage: a constant crosses between stages; 16-bit storage of it is not "
                                    "supported");
  for (int i = 0; i < body->nargs && !rc && stage; i++) /* nor one from an fp32 input (a parameter, a data input) */
    if (body->args[i]->id >= 0 && body->args[i]->id < nvals && force[body->args[i]->id] && !half[body->args[i]->id])
      rc = gv_error(m, "storage: pipeline stage: the fp32 input '%s' is sent on or stashed as it is; 16-bit storage of it is "
                       "not supported", fn->arg_names[i] ? fn->arg_names[i] : "?");
done:
  free(force);
  free(ops), free(root), free(used), free(bad), free(ret), free(f32), free(togr), free(topg);
  return rc;
}
