/* accumulate.c — the `accumulate` pass (training, between recompute and
 * optimizer): gradient accumulation over B microbatches in one program
 * (galvc --microbatches B without --pipeline-stages; gv_train_opts.
 * microbatches). The driver imports the model at the microbatch size b =
 * batch / B, so after autodiff the body is one microbatch's forward and
 * backward; this pass turns it into the step of the whole batch:
 *
 *   - every data input (labels included) gets its global type [B*b, ...];
 *     microbatch k reads rows {j*B + k}: reshape to [b, B, ...], slice k on
 *     dim 1, reshape back. Row j*B + k lives in the block of rows [j*B,
 *     (j+1)*B), so a split of dim 0 over dp (the block rule) is a split of
 *     b: each rank's microbatches come out of its own block of the batch and
 *     data parallelism needs no extra communication (dp must divide b);
 *   - the body is cloned once per microbatch, in order, each clone reading
 *     its slices (same node names: the clones are attributed to the same
 *     layers by the planner and the collective tables);
 *   - the loss and every gradient are sums over microbatches weighted as
 *     the full batch's mean weighs them: MSE (a mean over equal-sized
 *     microbatches) 1/B; cross entropy (a mean over the rows whose label is
 *     not ignore_index) c_k / max(sum c, 1), c_k the counted rows of
 *     microbatch k, computed from the labels at the top of the step (the
 *     same weights as runtime/pipe.c's microbatches). The weight replaces
 *     autodiff's seed (d loss = 1, loc "autodiff/seed"), so each microbatch's
 *     backward is already scaled and the gradients are summed with plain
 *     adds, which keep a pending data-parallel sum pending: the sums at
 *     "accumulate/P" are reduced once, where the optimizer reads them. With
 *     gv_train_opts.zero_reduce_each (the default), propagate-sharding
 *     instead pins them to a ZeRO-3 parameter's split and reads each
 *     microbatch's gradient through a reshard to it right after its
 *     producer, so every microbatch's gradient is reduce-scattered into the
 *     shard as it is made (docs/sharding.md).
 *
 * The activations of one microbatch die before the next one starts, so the
 * memory plan holds one microbatch's activations plus the gradient sums.
 * B = 1 does nothing. It must never change the arithmetic of a microbatch. */
#include <stdlib.h>
#include <string.h>

#include "build.h"
#include "passes.h"

static int number(gv_block *b) {
  int n = 0;
  for (int i = 0; i < b->nargs; i++) b->args[i]->id = n++;
  for (gv_op *op = b->first; op; op = op->next)
    for (int i = 0; i < op->nres; i++) op->res[i]->id = n++;
  return n;
}

/* One constant for every microbatch: read, never written, it stays where it is, ahead of the first microbatch (a
 * copy per microbatch would hold B copies of a causal mask in the weights). Autodiff's seed is replaced instead. */
static bool shared_constant(const gv_op *op) { return op->code == GV_OP_CONSTANT && !op->nopnds; }

static gv_op *clone_op(gv_module *m, const gv_op *op, gv_value **map) {
  gv_value *buf[16], **in = op->nopnds <= 16 ? buf : gv_alloc(m->arena, (size_t)op->nopnds * sizeof *in);
  for (int i = 0; i < op->nopnds; i++) in[i] = map[op->opnds[i]->id] ? map[op->opnds[i]->id] : op->opnds[i];
  gv_op *c = gv_op_new(m, op->code, op->nopnds, in, op->nres);
  for (int i = 0; i < op->nattrs; i++) gv_set_attr(m, c, &op->attrs[i]);
  for (int i = 0; i < op->nres; i++) {
    c->res[i]->type = op->res[i]->type;
    c->res[i]->name = op->res[i]->name;
    map[op->res[i]->id] = c->res[i];
  }
  gv_op_set_loc(m, c, op->loc, op->onnx_op);
  return c;
}

static gv_value *reshape(gvb *b, gv_value *x, int rank, const int64_t *dims) {
  gv_op *o = gvb_new(b, GV_OP_RESHAPE, 1, &x);
  if (!o) return NULL;
  o->res[0]->type = gv_type_make(x->type.dtype, rank, dims);
  return gvb_fin(b, o);
}

static gv_value *slice1(gvb *b, gv_value *x, int64_t axis, int64_t k) {
  gv_op *o = gvb_new(b, GV_OP_SLICE, 1, &x);
  if (!o) return NULL;
  int64_t s = k, e = k + 1, st = 1;
  gv_set_ints(b->m, o, "starts", 1, &s);
  gv_set_ints(b->m, o, "ends", 1, &e);
  gv_set_ints(b->m, o, "axes", 1, &axis);
  gv_set_ints(b->m, o, "steps", 1, &st);
  return gvb_fin(b, o);
}

/* Microbatch k of a data input x of global type [b*B, rest]: rows j*B + k. */
static gv_value *microbatch_of(gvb *b, gv_value *x, int64_t B, int64_t k) {
  const gv_type *t = &x->type;
  int64_t d3[GV_MAX_RANK], d1[GV_MAX_RANK];
  d3[0] = d1[0] = t->dims[0] / B;
  d3[1] = B;
  for (int d = 1; d < t->rank; d++) d3[d + 1] = d1[d] = t->dims[d];
  gv_value *v = slice1(b, reshape(b, x, t->rank + 1, d3), 1, k);
  return reshape(b, v, t->rank, d1);
}

int gv_pass_accumulate(gv_module *m) {
  const int64_t B = gv_train_opts.microbatches;
  if (B <= 1) return 0;
  gv_func *f = m->main;
  gv_block *body = f->body;
  gv_op *ret = gv_block_terminator(body);
  if (!ret || ret->nopnds < 1 || !f->res_names || f->nres_names != ret->nopnds || strncmp(f->res_names[0], "loss", 4))
    return gv_error(m, "accumulate: expects the loss and its gradients (run loss and autodiff first)");
  if (f->res_updates) return gv_error(m, "accumulate: the optimizer already ran (accumulate runs before it)");
  /* data inputs: neither parameters nor state (autodiff's loss scale) */
#define DATA(i) (!f->arg_is_param[i] && !(f->arg_is_state && f->arg_is_state[i]))
  const bool ce = strcmp(gv_train_opts.loss, "cross_entropy") == 0;
  gv_op *seed = NULL;
  for (gv_op *op = body->first; op && !seed; op = op->next) {
    if (op->nregions)
      return gv_error_op(m, op, "--microbatches: an op with regions (galv.%s) cannot be cloned per microbatch", gv_ops[op->code].name);
    if (op->code == GV_OP_CONSTANT && op->loc && !strcmp(op->loc, "autodiff/seed")) seed = op;
  }
  if (!seed) return gv_error(m, "accumulate: no loss gradient seed (loc autodiff/seed): run autodiff first");
  gv_value *labels = NULL;
  for (int i = 0; i < body->nargs; i++) {
    if (!DATA(i)) continue;
    gv_value *a = body->args[i];
    if (a->type.rank < 1 || a->type.rank >= GV_MAX_RANK)
      return gv_error(m, "--microbatches: input '%s' has rank %d: microbatches split dim 0 of every data input (rank 1 to %d)",
                      f->arg_names[i], a->type.rank, GV_MAX_RANK - 1);
    if (ce && !strcmp(f->arg_names[i], gv_train_opts.labels)) labels = a;
  }
  if (ce && !labels) return gv_error(m, "accumulate: no labels input '%s'", gv_train_opts.labels);

  int nv = number(body);
  gv_value **map = calloc((size_t)nv + 1, sizeof *map);
  gv_op **ops = calloc((size_t)nv + 1, sizeof *ops);
  gv_value **acc = calloc((size_t)ret->nopnds + 1, sizeof *acc);
  if (!map || !ops || !acc) {
    free(map), free(ops), free(acc);
    return gv_error(m, "accumulate: out of memory");
  }
  int nops = 0;
  for (gv_op *op = body->first; op != ret; op = op->next) ops[nops++] = op;
  /* the data inputs at the global batch */
  int64_t mbrows = 0; /* a microbatch's rows (samples) */
  for (int i = 0; i < body->nargs; i++)
    if (DATA(i)) {
      if (!mbrows) mbrows = body->args[i]->type.dims[0];
      body->args[i]->type.dims[0] *= B;
    }

  int rc = -1;
  gvb b = {m, body->first ? body->first : ret, "accumulate"};
  /* the microbatches' weights: cross entropy c_k / max(sum c, 1), [B] */
  gv_value *w = NULL;
  if (ce) {
    const gv_type *t = &labels->type;
    int64_t d3[GV_MAX_RANK], axes[GV_MAX_RANK], ign = 0;
    d3[0] = t->dims[0] / B, d3[1] = B;
    for (int d = 1; d < t->rank; d++) d3[d + 1] = t->dims[d];
    for (int d = 0; d <= t->rank; d++)
      if (d != 1) axes[ign++] = d;
    gv_value *is_ign = gvb_bin(&b, GV_OP_EQUAL, reshape(&b, labels, t->rank + 1, d3), gvb_cst(&b, t->dtype, (double)gv_train_opts.ignore_index));
    gv_op *cst = gvb_new(&b, GV_OP_CAST, 1, (gv_value *[]){gvb_un(&b, GV_OP_NOT, is_ign)});
    if (cst) gv_set_type(m, cst, "to", seed->res[0]->type.dtype);
    gv_op *cnt = gvb_new(&b, GV_OP_REDUCE_SUM, 1, (gv_value *[]){cst ? gvb_fin(&b, cst) : NULL});
    if (cnt) gv_set_ints(m, cnt, "axes", (int)ign, axes), gv_set_int(m, cnt, "keepdims", 0);
    gv_value *c = cnt ? gvb_fin(&b, cnt) : NULL;
    gv_op *tot = gvb_new(&b, GV_OP_REDUCE_SUM, 1, &c);
    if (tot) gv_set_int(m, tot, "keepdims", 0);
    gv_value *n = tot ? gvb_fin(&b, tot) : NULL;
    w = gvb_bin(&b, GV_OP_DIV, c, gvb_bin(&b, GV_OP_MAX, n, gvb_cst(&b, seed->res[0]->type.dtype, 1.0)));
    if (!w) goto done;
  }
  b.pos = ret;
  for (int64_t k = 0; k < B; k++) {
    /* this microbatch's inputs and weight (before its first op) */
    b.loc = "accumulate/microbatch";
    for (int i = 0; i < body->nargs; i++)
      if (DATA(i) && !(map[body->args[i]->id] = microbatch_of(&b, body->args[i], B, k))) goto done;
    gv_value *wk = w ? reshape(&b, slice1(&b, w, 0, k), 0, NULL) : gvb_cst(&b, seed->res[0]->type.dtype, 1.0 / (double)B);
    if (!wk) goto done;
    map[seed->res[0]->id] = wk;
    for (int j = 0; j < nops; j++) {
      if (ops[j] == seed) continue;
      if (shared_constant(ops[j])) continue;
      gv_op *c = clone_op(m, ops[j], map);
      bool attn = (c->code == GV_OP_ATTENTION || c->code == GV_OP_ATTENTION_GRAD) && gv_get_attr(c, "ratio");
      if ((c->code == GV_OP_DROPOUT || attn) && c->res[0]->type.rank > 0) {
        /* its mask: the rows of the batch this microbatch reads (j B + k), q rows per sample when dim 0 is the
         * samples' rows (docs/training.md "Dropout"); another dim 0 still gets a mask of its own per microbatch.
         * A fused attention's dropout (docs/fused-attention.md): its scores' dim 0, q's dim 0 */
        int64_t d0 = attn ? c->opnds[0]->type.dims[0] : c->res[0]->type.dims[0], q = mbrows > 0 && d0 % mbrows == 0 ? d0 / mbrows : d0 > 0 ? d0 : 1;
        gv_set_ints(m, c, "acc", 3, (int64_t[]){B, k, q});
      }
      gv_insert_before(ret, c);
    }
    /* the sums: the loss weighted, the gradients already scaled by the seed;
     * each added right where its microbatch value is computed, so that value
     * dies at once (and, reduce-scattered first, leaves only its shard) */
    for (int r = 0; r < ret->nopnds; r++) {
      gv_value *v = map[ret->opnds[r]->id] ? map[ret->opnds[r]->id] : ret->opnds[r];
      char *loc = gv_alloc(m->arena, strlen(f->res_names[r]) + 16);
      strcpy(loc, "accumulate/");
      strcat(loc, r ? f->res_names[r] + 5 : "loss"); /* "grad:P" -> "accumulate/P" */
      gvb a = {m, v->def && v->def->parent == body ? v->def->next : ret, loc};
      if (r == 0) v = gvb_bin(&a, GV_OP_MUL, v, wk);
      acc[r] = k ? gvb_bin(&a, GV_OP_ADD, acc[r], v) : v;
      if (!acc[r]) goto done;
    }
  }
  for (int j = 0; j < nops; j++)
    if (ops[j] == seed || !shared_constant(ops[j])) gv_op_unlink(ops[j]);
  gv_op_set_operands(m, ret, ret->nopnds, acc);
  rc = 0;
done:
  free(map), free(ops), free(acc);
  return rc;
#undef DATA
}
