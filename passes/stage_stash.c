/* stage_stash.c — the stage-stash pass: splits an earlier pipeline stage's
 * training function (passes/stage_extract.c gv_stage_train, possibly
 * spmd-partitioned) into its forward entry or its backward entry
 * (docs/pipeline.md, "Pipeline training"). gv_pipe_opts.stash selects which
 * one the module becomes; the runtime runs the forward entry once per
 * microbatch in F(j) and the backward entry in B(j), so every op runs once.
 *
 * Input: results named "pp.X" (the values sent to later stages; "pp.seed"
 * excluded), "grad:X" (parameter gradients and the gradients of the received
 * values), inputs "gin:pp.X" (the gradients the later stages send back).
 *
 * - forward ops: the ops the "pp." results need (their transitive operands);
 *   none of them may depend on a "gin:" input;
 * - backward ops: the ops the "grad:" results need that are not forward ops;
 *   a constant, or a view of a parameter or constant, that both need is in
 *   both (copied, never stashed); an elementwise forward op (or galv.fused)
 *   whose operands the backward has anyway (stashed, copied) is recomputed
 *   in the backward instead of stashing its result;
 * - the stash: the forward values (results of forward ops, and the non-
 *   parameter inputs: data and received values) that a backward op uses or a
 *   "grad:" result is; nothing else. Named "stash.N" in order (inputs first,
 *   then program order). A pending sum (a value partial over a mesh axis)
 *   is never stashed: the op making it is recomputed in the backward.
 *
 * forward: keeps the forward ops; results = the "pp." results then the stash
 * values ("stash.N"); drops the "gin:" inputs and unused data inputs (every
 * received "pp." input stays: its message arrives either way).
 * backward: keeps the backward ops; each stash value becomes an input
 * "stash.N" marked galv.state (it lives in the program's state buffer, the
 * microbatch's stash, not in the arena); results = the "grad:" results;
 * drops the data and received inputs (their uses are stash inputs) but keeps
 * every "gin:" input. Both keep every parameter, in order, so the two
 * programs' parameters have one weights layout.
 *
 * ZB-H1 (docs/pipeline.md, "Schedules") splits a backward once more, the
 * same way: --stash=input-grad|weight-grad on a backward entry (or on the
 * last stage's combined program). Part one (input-grad, the B entry) keeps
 * the ops every result other than a parameter gradient needs (grad:pp.X,
 * the loss); part two (weight-grad, the W entry) the ops the parameter
 * gradients "grad:NAME" need beyond those. What W reads from part one or
 * its inputs is W's stash: a galv.state input "stash.N" of the backward
 * entry stays one of W's state inputs under its name (the runtime copies it
 * out of the microbatch's stash), every other value (part one's results,
 * gin:, data and received inputs) becomes a result "wstash.N" of part one
 * and a galv.state input "wstash.N" of W. Part one keeps every input it
 * had besides (the forward entry fills the whole stash; messages arrive
 * anyway). Errors: a function that is not an earlier stage's training
 * function (forward / backward) or has no parameter gradient and no other
 * result (input-grad / weight-grad), an op without results, a forward value
 * that depends on a "gin:" input. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "passes.h"

static bool is_term(const gv_op *op) { return (gv_ops[op->code].flags & GV_TERMINATOR) != 0; }

static void clear_ids(gv_block *b) {
  for (gv_op *op = b->first; op; op = op->next) {
    for (int i = 0; i < op->nres; i++) op->res[i]->id = -1;
    for (int r = 0; r < op->nregions; r++) {
      for (int a = 0; a < op->regions[r]->nargs; a++) op->regions[r]->args[a]->id = -1;
      clear_ids(op->regions[r]);
    }
  }
}

/* calls f(ctx, id) for every top-level value op reads (operands and uses inside its regions) */
static void each_use(const gv_op *op, void (*f)(void *, int), void *ctx) {
  for (int i = 0; i < op->nopnds; i++)
    if (op->opnds[i]->id >= 0) f(ctx, op->opnds[i]->id);
  for (int r = 0; r < op->nregions; r++)
    for (const gv_op *o = op->regions[r]->first; o; o = o->next) each_use(o, f, ctx);
}

static void mark(void *ctx, int id) { ((bool *)ctx)[id] = true; }

/* the operands of op (and of its regions' ops) that are values of ids [0, nv) with a substitute: replaced by it */
static void replace_ids(gv_op *op, gv_value *const *sub, int nv) {
  for (int i = 0; i < op->nopnds; i++) {
    const int id = op->opnds[i]->id; /* top-level values only: clear_ids set the regions' own to -1 */
    if (id >= 0 && id < nv && sub[id]) op->opnds[i] = sub[id];
  }
  for (int r = 0; r < op->nregions; r++)
    for (gv_op *o = op->regions[r]->first; o; o = o->next) replace_ids(o, sub, nv);
}

/* marks read[a] for each argument a of body (ids = argument indexes) that op or its regions' ops read */
static void mark_args(const gv_op *op, const gv_block *body, bool *read) {
  for (int i = 0; i < op->nopnds; i++) {
    const gv_value *v = op->opnds[i];
    if (!v->def && v->block == body && v->id >= 0 && v->id < body->nargs && body->args[v->id] == v) read[v->id] = true;
  }
  for (int r = 0; r < op->nregions; r++)
    for (const gv_op *o = op->regions[r]->first; o; o = o->next) mark_args(o, body, read);
}

static bool name_is(const char *n, const char *prefix) { return n && !strncmp(n, prefix, strlen(prefix)); }

/* the results of the first part (forward entry; under ZB-H1 the input-gradient entry) and of the second */
/* value id v (numbered arguments first) is a galv.state input */
static bool is_state(const gv_func *f, int v) { return v < f->body->nargs && f->arg_is_state && f->arg_is_state[v]; }

static bool part_two(const char *n, bool zb) { return zb ? name_is(n, "grad:") && !name_is(n, "grad:pp.") : name_is(n, "grad:"); }
static bool part_one(const char *n, bool zb) { return zb ? !part_two(n, zb) : name_is(n, "pp.") && strcmp(n, "pp.seed"); }

int gv_pass_stage_stash(gv_module *m) {
  const char *part = gv_pipe_opts.stash;
  bool zb = part && (!strcmp(part, "input-grad") || !strcmp(part, "weight-grad"));
  bool bwd = part && (!strcmp(part, "backward") || !strcmp(part, "weight-grad"));
  if (!part || (!bwd && !zb && strcmp(part, "forward")))
    return gv_error(m, "stage-stash: expected the part forward, backward, input-grad or weight-grad (galv-opt "
                       "--stash=forward|backward|input-grad|weight-grad), got '%s'", part ? part : "(none)");
  if (!m->main || !m->main->body) return gv_error(m, "stage-stash: module has no function");
  gv_func *f = m->main;
  gv_block *body = f->body;
  gv_op *ret = gv_block_terminator(body);
  if (!ret || ret->code != GV_OP_RETURN) return gv_error(m, "stage-stash: the function has no return");
  int nf = 0, nb = 0;
  for (int i = 0; i < ret->nopnds; i++) {
    const char *n = f->res_names && i < f->nres_names ? f->res_names[i] : NULL;
    nf += part_one(n, zb);
    nb += part_two(n, zb);
  }
  if ((!nf || !nb) && zb)
    return gv_error(m, "stage-stash: %s needs parameter gradients (\"grad:NAME\" results) and other results (\"grad:pp.X\", "
                       "the loss) to split a backward", part);
  if (!nf || !nb)
    return gv_error(m, "stage-stash: not an earlier pipeline stage's training function (it needs \"pp.\" results, the values "
                       "sent on, and \"grad:\" results)");
  /* number the top-level values: arguments, then results in program order */
  clear_ids(body);
  int nops = 0, nv = body->nargs;
  for (gv_op *op = body->first; op; op = op->next)
    if (!is_term(op)) {
      if (!op->nres) return gv_error_op(m, op, "stage-stash: an op without results (cannot place it in an entry)");
      nops++, nv += op->nres;
    }
  gv_op **ops = malloc(sizeof *ops * (size_t)(nops + 1));
  gv_value **val = malloc(sizeof *val * (size_t)(nv + 1));
  int *defk = malloc(sizeof *defk * (size_t)(nv + 1)); /* defining op index, -1: argument */
  bool *needf = calloc((size_t)nv + 1, 1), *needb = calloc((size_t)nv + 1, 1), *freev = calloc((size_t)nv + 1, 1),
       *gin = calloc((size_t)nv + 1, 1), *opf = calloc((size_t)nops + 1, 1), *opb = calloc((size_t)nops + 1, 1);
  int *stash = malloc(sizeof *stash * (size_t)(nv + 1));
  gv_value **sub = NULL; /* the backward entry: per value id, its state input */
  int rc = 0, ns = 0;
  if (!ops || !val || !defk || !needf || !needb || !freev || !gin || !opf || !opb || !stash) {
    rc = gv_error(m, "stage-stash: out of memory");
    goto done;
  }
  for (int a = 0; a < body->nargs; a++) {
    body->args[a]->id = a, val[a] = body->args[a], defk[a] = -1;
    freev[a] = f->arg_is_param[a];
    gin[a] = name_is(f->arg_names[a], "gin:");
  }
  int k = 0, id = body->nargs;
  for (gv_op *op = body->first; op; op = op->next) {
    if (is_term(op)) continue;
    ops[k] = op;
    bool fr = (!op->nopnds && !op->nregions) ||
              ((gv_ops[op->code].flags & GV_VIEW) && op->nopnds >= 1 && !op->nregions && op->opnds[0]->id >= 0 &&
               freev[op->opnds[0]->id]);
    for (int i = 0; i < op->nres; i++) op->res[i]->id = id, val[id] = op->res[i], defk[id] = k, freev[id] = fr, id++;
    k++;
  }
  /* forward: what the "pp." results need; backward: what the "grad:" results need beyond it */
  for (int i = 0; i < ret->nopnds; i++) {
    const char *n = f->res_names && i < f->nres_names ? f->res_names[i] : NULL;
    if (ret->opnds[i]->id < 0) continue;
    if (part_one(n, zb)) needf[ret->opnds[i]->id] = true;
    if (part_two(n, zb)) needb[ret->opnds[i]->id] = true;
  }
  for (k = nops - 1; k >= 0; k--) {
    gv_op *op = ops[k];
    for (int i = 0; i < op->nres && !opf[k]; i++) opf[k] = needf[op->res[i]->id];
    if (opf[k]) each_use(op, mark, needf);
  }
  for (int a = 0; a < body->nargs && !zb; a++)
    if (needf[a] && gin[a]) {
      rc = gv_error(m, "stage-stash: the values sent on depend on the gradient input '%s'", f->arg_names[a]);
      goto done;
    }
  /* the backward: what the "grad:" results need; a forward op's results are stashed unless
   * the op is free (a constant, a view of a parameter or constant) or recomputed */
  bool *needb0 = calloc((size_t)nv + 1, 1), *recomp = calloc((size_t)nops + 1, 1), *avail = calloc((size_t)nv + 1, 1);
  if (!needb0 || !recomp || !avail) {
    free(needb0), free(recomp), free(avail);
    rc = gv_error(m, "stage-stash: out of memory");
    goto done;
  }
  memcpy(needb0, needb, (size_t)nv);
  for (int pass = 0;; pass++) {
    if (pass) { /* again with the recomputed ops */
      memcpy(needb, needb0, (size_t)nv);
      memset(opb, 0, (size_t)nops);
    }
    for (k = nops - 1; k >= 0; k--) {
      gv_op *op = ops[k];
      bool need = false;
      for (int i = 0; i < op->nres; i++) need |= needb[op->res[i]->id];
      if (!need || (opf[k] && !freev[op->res[0]->id] && !recomp[k])) continue; /* a forward value: stashed */
      opb[k] = true;
      each_use(op, mark, needb);
    }
    /* a pending sum (partial over a mesh axis: a contraction split under tp, its all-reduce still to come)
     * cannot be a slot of the stash — an entry's result is whole or split — so the op that makes one the
     * second part reads is recomputed there, until no such value is left */
    bool more = pass == 0;
    for (k = 0; k < nops; k++) {
      if (!opf[k] || opb[k] || recomp[k]) continue;
      for (int i = 0; i < ops[k]->nres; i++) {
        const gv_sharding *sh = needb[ops[k]->res[i]->id] ? gv_value_sharding(m, ops[k]->res[i]) : NULL;
        if (sh && sh->partial) recomp[k] = more = true;
      }
    }
    if (!more) break;
    if (pass) continue;
    /* an elementwise forward op whose operands the backward has anyway (stashed, free, recomputed)
     * is recomputed in the backward instead of stashing its result */
    for (int v = 0; v < nv; v++)
      avail[v] = freev[v] || (needb[v] && (defk[v] < 0 ? zb || !gin[v] : opf[defk[v]] && !opb[defk[v]]));
    for (k = 0; k < nops; k++) {
      gv_op *op = ops[k];
      if (!opf[k] || opb[k] || op->nres != 1 || op->nregions || !needb[op->res[0]->id] ||
          (op->code != GV_OP_FUSED && !(gv_ops[op->code].flags & GV_ELEMENTWISE)))
        continue;
      bool ok = true;
      for (int i = 0; i < op->nopnds && ok; i++) ok = op->opnds[i]->id >= 0 && avail[op->opnds[i]->id];
      if (ok) recomp[k] = true;
    }
  }
  free(needb0), free(recomp), free(avail);
  /* the stash: forward values the backward reads */
  for (int v = 0; v < nv; v++) {
    if (!needb[v]) continue;
    if (defk[v] < 0 ? (!f->arg_is_param[v] && (zb || !gin[v])) : (opf[defk[v]] && !opb[defk[v]])) stash[ns++] = v;
  }
  if (!bwd) {
    /* forward entry: the forward ops; results = "pp." values, then the stash */
    int n0 = 0;
    gv_value **res = gv_alloc(m->arena, sizeof *res * (size_t)(ret->nopnds + ns + 1));
    const char **names = gv_alloc(m->arena, sizeof *names * (size_t)(ret->nopnds + ns + 1));
    for (int i = 0; i < ret->nopnds; i++) {
      const char *n = f->res_names && i < f->nres_names ? f->res_names[i] : NULL;
      if (part_one(n, zb)) res[n0] = ret->opnds[i], names[n0++] = n;
    }
    for (int s = 0, w = 0; s < ns; s++) {
      char nm[32];
      if (zb && is_state(f, stash[s])) continue; /* in the microbatch's stash already */
      snprintf(nm, sizeof nm, zb ? "wstash.%d" : "stash.%d", zb ? w++ : s);
      res[n0] = val[stash[s]], names[n0++] = gv_strdup(m->arena, nm);
    }
    if (zb) f->res_updates = NULL;
    for (k = nops - 1; k >= 0; k--)
      if (!opf[k]) gv_op_unlink(ops[k]);
    gv_op_set_operands(m, ret, n0, res);
    f->res_names = names;
    f->nres_names = n0;
  } else {
    /* backward entry: the stash becomes galv.state inputs; the backward ops; results = "grad:" values */
    sub = calloc((size_t)nv + 1, sizeof *sub); /* per value id: its state input */
    if (!sub) {
      rc = gv_error(m, "stage-stash: out of memory");
      goto done;
    }
    if (!f->arg_is_state) {
      int cap = f->cap_args > body->nargs ? f->cap_args : body->nargs;
      f->arg_is_state = gv_alloc(m->arena, sizeof *f->arg_is_state * (size_t)(cap ? cap : 1));
      memset(f->arg_is_state, 0, sizeof *f->arg_is_state * (size_t)(cap ? cap : 1));
    }
    for (int s = 0, w = 0; s < ns; s++) {
      char nm[32];
      if (zb && is_state(f, stash[s])) continue; /* a state input already: W's state input of the same name */
      snprintf(nm, sizeof nm, zb ? "wstash.%d" : "stash.%d", zb ? w++ : s);
      gv_value *v = val[stash[s]];
      gv_value *arg = gv_func_add_arg(m, f, nm, v->type, false);
      f->arg_is_state[body->nargs - 1] = true;
      arg->id = -1;
      sub[stash[s]] = arg;
    }
    /* the backward ops (and the return) read the state inputs: one pass over them, not one per stash value */
    for (k = 0; k < nops; k++)
      if (opb[k]) replace_ids(ops[k], sub, nv);
    for (int i = 0; i < ret->nopnds; i++)
      if (ret->opnds[i]->id >= 0 && ret->opnds[i]->id < nv && sub[ret->opnds[i]->id]) ret->opnds[i] = sub[ret->opnds[i]->id];
    int n0 = 0;
    gv_value **res = gv_alloc(m->arena, sizeof *res * (size_t)(ret->nopnds + 1));
    const char **names = gv_alloc(m->arena, sizeof *names * (size_t)(ret->nopnds + 1));
    for (int i = 0; i < ret->nopnds; i++) {
      const char *n = f->res_names && i < f->nres_names ? f->res_names[i] : NULL;
      if (part_two(n, zb)) res[n0] = ret->opnds[i], names[n0++] = n;
    }
    for (k = nops - 1; k >= 0; k--)
      if (!opb[k]) gv_op_unlink(ops[k]);
    gv_op_set_operands(m, ret, n0, res);
    f->res_names = names;
    f->nres_names = n0;
    f->res_updates = NULL;
  }
  /* drop the inputs the entry does not read (parameters stay; the received "pp." inputs in the
   * forward entry and the "gin:" inputs in the backward entry stay: the messages arrive anyway) */
  {
    /* the arguments the entry's ops read: one pass (ids 0 .. nargs - 1 marked) */
    for (int a = 0; a < body->nargs; a++) body->args[a]->id = a;
    bool *read = calloc((size_t)body->nargs + 1, 1);
    if (!read) {
      rc = gv_error(m, "stage-stash: out of memory");
      goto done;
    }
    for (gv_op *u = body->first; u; u = u->next) mark_args(u, body, read);
    int kk = 0;
    for (int a = 0; a < body->nargs; a++) {
      gv_value *v = body->args[a];
      bool keep = f->arg_is_param[a] || (zb ? !bwd && (name_is(f->arg_names[a], "gin:") || name_is(f->arg_names[a], "pp.") ||
                                                      (f->arg_is_state && f->arg_is_state[a]))
                                            : bwd ? name_is(f->arg_names[a], "gin:") : name_is(f->arg_names[a], "pp."));
      keep = keep || read[a];
      if (!keep) continue;
      body->args[kk] = v;
      v->index = kk;
      f->arg_names[kk] = f->arg_names[a];
      f->arg_is_param[kk] = f->arg_is_param[a];
      f->param_data[kk] = f->param_data[a];
      if (f->arg_is_state) f->arg_is_state[kk] = f->arg_is_state[a];
    if (f->arg_is_frozen) f->arg_is_frozen[kk] = f->arg_is_frozen[a];
      if (f->arg_sharding) f->arg_sharding[kk] = f->arg_sharding[a];
      kk++;
    }
    body->nargs = kk;
    free(read);
  }
done:
  free(sub);
  free(ops), free(val), free(defk), free(needf), free(needb), free(freev), free(gin), free(opf), free(opb), free(stash);
  return rc;
}
