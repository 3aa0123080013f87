/* recompute.c — the `recompute` pass (training, between autodiff and
 * optimizer): activation recomputation per layer. For each selected layer
 * it clones the layer's forward ops that compute values its backward ops
 * use, right before the first such backward use, and redirects those uses
 * to the clones; the originals then die at the end of the layer's forward
 * and the memory plan reuses their bytes. Only the layer's inputs (values
 * from outside the layer: the previous layer's output, masks, parameters)
 * stay live until backward. Clones compute the same ops on the same values,
 * so results are bit-identical to running without recomputation.
 *
 * Layers: with "all", the repeated blocks of the forward program found by
 * structure (layer_units.h, as the planner's units: names play no part; a
 * backward or recomputed op is in its forward op's layer). A listed layer
 * (below) is named: an op's layer is the prefix of its location (ONNX node name) up
 * to and including the first '/'-separated segment of the form NAME.N
 * (NAME letters, digits, '_'; N digits) or N alone after another segment,
 * e.g. "/transformer/h.0" for "/transformer/h.0/attn/MatMul",
 * "/model/layers.3" for "/model/layers.3/mlp/Mul", "/model/layers/3" for
 * "/model/layers/3/mlp/Mul"; gradient ops carry their forward op's location
 * plus "/grad", so they share its layer. Ops without such a segment
 * (embeddings, final norm, head, loss, optimizer) belong to no layer.
 * Forward = ops up to the loss (the op defining the first result);
 * backward = ops after it.
 *
 * Selection (gv_train_opts.recompute): "none" (default), "all", or a
 * comma-separated list whose items name a layer by its segment ("h.0"), its
 * full prefix ("/transformer/h.0") or its index N ("0"). Constants are not
 * cloned (they are not in the arena); ops with regions are not cloned
 * (their results stay live).
 *
 * "first:K" (and "selective:first:K") selects the first K layers found by
 * structure, as "all" finds them (galvc's default search compiles a
 * recomputing mode on its first K layers so; one program only).
 *
 * Selective recomputation ("selective", or "selective:LIST" for the listed
 * layers; Korthikanti et al. 2022): only the attention cores are cloned,
 * so the S x S tensors (scores, masked scores, probabilities) die in the
 * forward while the rest of the layer's activations stay stored. A core is
 * found by structure, not by name: a forward softmax over the last axis
 * whose operand comes from a dot through elementwise ops of the score's
 * shape (scale, mask add / where, casts), and whose result reaches a dot
 * as its left operand through elementwise ops of that shape (dropout); the
 * core is the first dot, those elementwise ops and the softmax (the
 * chain codegen/cuda fuses into one attention kernel), never the second
 * dot (its output, the context, is the input the output projection keeps
 * anyway). Operands from outside the core (Q, K, masks) stay live; every
 * backward op that reads a core value reads its clone instead. A fused
 * core (galv.attention, passes/fuse_attention.c) counts as found and is
 * left: it stores no S x S value, so there is nothing to recompute.
 *
 * Pipeline stages (docs/pipeline.md, "Recomputation per layer inside
 * stages"): gv_stage_train runs this pass on a stage's training function
 * (it returns the loss or the seed "pp.seed" first). A stage may hold one
 * block (no repeat to find by structure: "all" then takes its layers by
 * name) or no layer at all (an embedding or head stage): a stage where
 * nothing is selected is left as it is, no error. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "layer_units.h"
#include "passes.h"
#include "../ir/shape_rules.h"

/* The layer prefix length of loc (0: no layer); *seg / *seglen give the NAME.N segment. */
static size_t layer_of(const char *loc, const char **seg, size_t *seglen) {
  if (!loc) return 0;
  const char *p = loc;
  while (*p) {
    const char *s = p;
    while (*p && *p != '/') p++;
    const char *dot = NULL;
    bool ok = p > s;
    for (const char *q = s; q < p && ok; q++) {
      if (*q == '.') {
        if (dot) ok = false;
        dot = q;
      } else if (dot) {
        ok = *q >= '0' && *q <= '9';
      } else {
        ok = (*q >= 'a' && *q <= 'z') || (*q >= 'A' && *q <= 'Z') || (*q >= '0' && *q <= '9') || *q == '_';
      }
    }
    bool digits = ok && !dot && s > loc + 1; /* "/model/layers/3": a number after some segment */
    for (const char *q = s; digits && q < p; q++) digits = *q >= '0' && *q <= '9';
    if ((ok && dot && dot > s && dot + 1 < p) || digits) {
      *seg = s;
      *seglen = (size_t)(p - s);
      return (size_t)(p - loc);
    }
    if (*p) p++;
  }
  return 0;
}

/* Whether the layer (prefix loc[0..n), segment seg) is selected by spec. */
static bool selected(const char *spec, const char *loc, size_t n, const char *seg, size_t sl) {
  if (!strcmp(spec, "all")) return true;
  const char *dot = memchr(seg, '.', sl), *idx = dot ? dot + 1 : seg;
  size_t il = sl - (size_t)(idx - seg);
  for (const char *p = spec; *p;) {
    size_t k = strcspn(p, ",");
    if ((k == sl && !strncmp(p, seg, k)) || (k == n && !strncmp(p, loc, k)) || (k == il && !strncmp(p, idx, k)))
      return true;
    p += k;
    if (*p) p++;
  }
  return false;
}

/* A layer: by structure (lu: unit `unit` of layer_units.h, --recompute=all)
 * or by name (the prefix loc[0..n), the listed layers). */
typedef struct {
  const char *loc;
  size_t n;
  const gv_layer_units *lu;
  int unit;
} layer_id;

static bool in_layer(const layer_id *L, const char *b) {
  if (L->lu) return L->unit > 0 && gv_layer_units_loc(L->lu, b) == L->unit;
  const char *s;
  size_t sl, nb = layer_of(b, &s, &sl);
  return nb == L->n && nb && !strncmp(L->loc, b, L->n);
}

static gv_op *clone_op(gv_module *m, const gv_op *op, gv_value **map) {
  gv_value *buf[16], **in = op->nopnds <= 16 ? buf : gv_alloc(m->arena, (size_t)op->nopnds * sizeof *in);
  for (int i = 0; i < op->nopnds; i++) in[i] = map[op->opnds[i]->id] ? map[op->opnds[i]->id] : op->opnds[i];
  gv_op *c = gv_op_new(m, op->code, op->nopnds, in, op->nres);
  for (int i = 0; i < op->nattrs; i++) gv_set_attr(m, c, &op->attrs[i]);
  c->id = 2;
  for (int i = 0; i < op->nres; i++) {
    c->res[i]->id = -1;
    c->res[i]->type = op->res[i]->type;
    c->res[i]->name = op->res[i]->name;
    map[op->res[i]->id] = c->res[i];
  }
  size_t n = strlen(op->loc ? op->loc : "");
  char *loc = gv_alloc(m->arena, n + 11);
  memcpy(loc, op->loc ? op->loc : "", n);
  memcpy(loc + n, "/recompute", 11);
  gv_op_set_loc(m, c, loc, op->onnx_op);
  return c;
}

static int number(gv_block *b) {
  int n = 0;
  for (int i = 0; i < b->nargs; i++) b->args[i]->id = n++;
  for (gv_op *op = b->first; op; op = op->next)
    for (int i = 0; i < op->nres; i++) op->res[i]->id = n++;
  return n;
}

/* Recomputes one layer; fwd_end is the loss op. */
static int recompute_layer(gv_module *m, gv_block *body, gv_op *fwd_end, const layer_id *L, int nv) {
  bool *used = calloc((size_t)nv + 1, 1);
  gv_value **map = calloc((size_t)nv + 1, sizeof *map);
  if (!used || !map) {
    free(used), free(map);
    return gv_error(m, "recompute: out of memory");
  }
  /* forward values of the layer that its backward ops use */
  gv_op *first_use = NULL;
  for (gv_op *op = fwd_end->next; op; op = op->next) {
    if (op->id == 2 || !in_layer(L, op->loc)) continue; /* (a clone: another layer's recomputation) */
    for (int i = 0; i < op->nopnds; i++) {
      const gv_op *d = op->opnds[i]->def;
      if (!d || d->code == GV_OP_CONSTANT || d->nregions || d->id != 1 || !in_layer(L, d->loc)) continue;
      used[op->opnds[i]->id] = true;
      if (!first_use) first_use = op;
    }
  }
  int rc = 0;
  if (first_use) {
    /* the layer's forward ops those values need, in reverse program order */
    for (gv_op *op = fwd_end; op; op = op->prev) {
      if (op->id != 1 || op->code == GV_OP_CONSTANT || op->nregions || !in_layer(L, op->loc)) continue;
      bool any = false;
      for (int i = 0; i < op->nres; i++) any = any || used[op->res[i]->id];
      if (!any) continue;
      for (int i = 0; i < op->nopnds; i++) used[op->opnds[i]->id] = true;
    }
    for (gv_op *op = body->first; op != fwd_end->next; op = op->next) {
      if (op->id != 1 || op->code == GV_OP_CONSTANT || op->nregions || !in_layer(L, op->loc) || !op->nres) continue;
      bool any = false;
      for (int i = 0; i < op->nres; i++) any = any || used[op->res[i]->id];
      if (any) gv_insert_before(first_use, clone_op(m, op, map));
    }
    /* backward ops of the layer read the clones */
    for (gv_op *op = first_use; op; op = op->next) {
      if (op->id == 2 || !in_layer(L, op->loc)) continue;
      for (int i = 0; i < op->nopnds; i++)
        if (op->opnds[i]->id >= 0 && op->opnds[i]->id < nv && map[op->opnds[i]->id]) {
          gv_value **o = op->opnds;
          o[i] = map[o[i]->id];
        }
    }
  }
  free(used), free(map);
  return rc;
}

/* ---------------------------------------------------------------- selective */

enum { MAX_CORE = 16 }; /* ops of one attention core: dot, a few elementwise ops, softmax */

static bool same_dims(const gv_type *a, const gv_type *b) {
  if (a->rank != b->rank) return false;
  for (int i = 0; i < a->rank; i++)
    if (a->dims[i] != b->dims[i]) return false;
  return true;
}

/* A forward elementwise op of one result shaped like the scores s (galv.dropout
 * too: its clone draws the same mask, runtime/galv_rng.h). */
static bool score_ew(const gv_op *op, const gv_type *s) {
  return op && op->id == 1 && ((gv_ops[op->code].flags & GV_ELEMENTWISE) || op->code == GV_OP_DROPOUT) && !op->nregions && op->nres == 1 &&
         same_dims(&op->res[0]->type, s);
}

/* Walks from v back through score-shaped elementwise ops to the dot making
 * the scores; the ops on that path, dot first, are appended to core. */
static bool back_to_dot(const gv_value *v, const gv_type *s, const gv_op **core, int *n, int depth) {
  const gv_op *d = v->def;
  if (!d || d->id != 1 || depth > MAX_CORE - 4) return false;
  if (d->code == GV_OP_DOT && same_dims(&d->res[0]->type, s)) {
    core[(*n)++] = d;
    return true;
  }
  if (!score_ew(d, s)) return false;
  for (int i = 0; i < d->nopnds; i++) /* the operand carrying the scores (a mask is another operand) */
    if (same_dims(&d->opnds[i]->type, s) && back_to_dot(d->opnds[i], s, core, n, depth + 1)) {
      core[(*n)++] = d;
      return true;
    }
  return false;
}

/* The forward op after `from` that reads v, when exactly one does. */
static gv_op *sole_forward_user(gv_op *from, gv_op *fwd_end, const gv_value *v) {
  gv_op *user = NULL;
  for (gv_op *op = from; op != fwd_end->next; op = op->next)
    for (int i = 0; i < op->nopnds; i++)
      if (op->opnds[i] == v) {
        if (user && user != op) return NULL;
        user = op;
      }
  return user;
}

/* The attention core around softmax sm, or 0 ops: dot -> [ew] -> softmax -> [ew] -> dot(P, V). */
static int attention_core(gv_op *sm, gv_op *fwd_end, const gv_op **core) {
  const gv_type *s = &sm->res[0]->type;
  if (sm->code != GV_OP_SOFTMAX || sm->id != 1 || s->rank < 2 || gv_norm_axis(gv_get_int(sm, "axis", -1), s->rank) != s->rank - 1)
    return 0;
  int n = 0;
  if (!back_to_dot(sm->opnds[0], s, core, &n, 0)) return 0;
  core[n++] = sm;
  const gv_value *p = sm->res[0];
  for (gv_op *u = sole_forward_user(sm->next, fwd_end, p); u; u = sole_forward_user(u->next, fwd_end, p)) {
    if (u->code == GV_OP_DOT) return u->opnds[0] == p ? n : 0;
    if (!score_ew(u, s) || n == MAX_CORE) return 0;
    core[n++] = u; /* dropout on the probabilities */
    p = u->res[0];
  }
  return 0;
}

/* Clones the core ops whose values backward ops read, right before the
 * first such read, and points every backward read at the clones. */
static int recompute_core(gv_module *m, gv_op *fwd_end, const gv_op *const *core, int n, int nv) {
  bool *used = calloc((size_t)nv + 1, 1);
  gv_value **map = calloc((size_t)nv + 1, sizeof *map);
  if (!used || !map) {
    free(used), free(map);
    return gv_error(m, "recompute: out of memory");
  }
  gv_op *first_use = NULL;
  for (gv_op *op = fwd_end->next; op; op = op->next) {
    if (op->id != 0) continue;
    for (int i = 0; i < op->nopnds; i++)
      for (int k = 0; k < n; k++)
        if (op->opnds[i]->def == core[k]) {
          used[op->opnds[i]->id] = true;
          if (!first_use) first_use = op;
        }
  }
  if (first_use) {
    for (int k = n - 1; k >= 0; k--) /* the values those need, inside the core */
      if (used[core[k]->res[0]->id])
        for (int i = 0; i < core[k]->nopnds; i++) used[core[k]->opnds[i]->id] = true;
    for (int k = 0; k < n; k++)
      if (used[core[k]->res[0]->id]) gv_insert_before(first_use, clone_op(m, core[k], map));
    for (gv_op *op = first_use; op; op = op->next) {
      if (op->id != 0) continue;
      for (int i = 0; i < op->nopnds; i++)
        if (op->opnds[i]->id >= 0 && op->opnds[i]->id < nv && map[op->opnds[i]->id]) op->opnds[i] = map[op->opnds[i]->id];
    }
  }
  free(used), free(map);
  return 0;
}

/* --recompute=selective[:LIST]: every attention core of the selected layers (first: the first `first` layers found
 * by structure, lu; else LIST by name). */
static int recompute_selective(gv_module *m, gv_block *body, gv_op *fwd_end, const char *list, const char *spec, int nv,
                               bool stage, const gv_layer_units *lu, int first) {
  int found = 0, fused = 0;
  for (gv_op *op = body->first; op != fwd_end->next; op = op->next) {
    const gv_op *core[MAX_CORE];
    int n = op->code == GV_OP_SOFTMAX ? attention_core(op, fwd_end, core) : 0;
    if (!n && op->code != GV_OP_ATTENTION) continue;
    if (lu) {
      int u = gv_layer_units_loc(lu, op->loc);
      if (u < 1 || u > first) continue;
    } else {
      const char *seg;
      size_t sl, ln = layer_of(op->loc, &seg, &sl);
      if (list && (!ln || !selected(list, op->loc, ln, seg, sl))) continue;
    }
    found++, fused += !n;
    /* a fused core (galv.attention, docs/fused-attention.md) keeps no S x S value: nothing to recompute */
    if (n && recompute_core(m, fwd_end, core, n, nv)) return -1;
  }
  static bool noted; /* once a run: the driver's searches import the model again */
  if (found && fused == found && !stage && !gv_error_quiet && !noted) {
    noted = true;
    fprintf(stderr, "galvc: note: --recompute=%s: every selected attention core is fused (galv.attention keeps no scores): "
                    "nothing to recompute, the program is recompute=none's (--fused-attention off keeps the scores)\n", spec);
  }
  if (!found && !stage)
    return gv_error(m, "recompute: --recompute=%s finds no attention core (dot -> [elementwise] -> softmax -> dot) %s", spec,
                    list ? "in the listed layers" : "in the forward");
  return 0;
}

/* Whether f is a pipeline stage's training function (passes/stage_extract.c
 * gv_stage_train): it receives or sends "pp." values. A stage holds some of
 * the model's layers, possibly one or none. */
static bool stage_function(const gv_func *f) {
  for (int a = 0; a < f->body->nargs; a++)
    if (f->arg_names[a] && (!strncmp(f->arg_names[a], "pp.", 3) || !strncmp(f->arg_names[a], "gin:pp.", 7))) return true;
  for (int i = 0; i < f->nres_names; i++)
    if (f->res_names[i] && !strncmp(f->res_names[i], "pp.", 3)) return true;
  return false;
}

int gv_pass_recompute(gv_module *m) {
  const char *spec = gv_train_opts.recompute ? gv_train_opts.recompute : "none";
  if (!strcmp(spec, "none") || !*spec) return 0;
  bool sel = !strncmp(spec, "selective", 9) && (!spec[9] || spec[9] == ':');
  if (sel && spec[9] == ':' && !spec[10])
    return gv_error(m, "recompute: --recompute=%s: no layer after ':' (selective, or selective:L,.. e.g. selective:h.0,h.2)", spec);
  gv_func *f = m->main;
  gv_op *ret = f ? gv_block_terminator(f->body) : NULL;
  if (!ret || ret->code != GV_OP_RETURN || ret->nopnds < 1 || !ret->opnds[0]->def)
    return gv_error(m, "recompute: the function must return the loss first (run loss and autodiff first)");
  gv_block *body = f->body;
  gv_op *fwd_end = ret->opnds[0]->def;
  /* first:K / selective:first:K: the first K layers found by structure (galvc's default search compiles these:
   * docs/planner.md "Recomputation on some layers") */
  const char *fs = sel ? (spec[9] == ':' ? spec + 10 : NULL) : spec;
  int first = -1;
  if (fs && !strncmp(fs, "first:", 6)) {
    char *end;
    long k = fs[6] >= '0' && fs[6] <= '9' ? strtol(fs + 6, &end, 10) : -1;
    if (k < 0 || *end || k > 1000000)
      return gv_error(m, "recompute: --recompute=%s: expected first:K (K a number of layers, e.g. first:4)", spec);
    first = (int)k;
  }
  /* --recompute=all: the layers found by structure (before the ids below: the finder numbers ops too) */
  gv_layer_units lu;
  bool all = !strcmp(spec, "all");
  if ((all || first >= 0) && gv_layer_units_find(m, &lu)) return -1;
  /* the ops' units looked up by their locations' addresses while this pass runs (the clones' new locations by name):
   * recompute_layer asks for every op once per layer */
  if ((all || first >= 0) && gv_layer_units_bind(&lu, m)) {
    gv_layer_units_free(&lu);
    return -1;
  }
  if (all || first >= 0) lu.bound = true;
  if (first >= 0) {
    bool st = stage_function(f);
    int nl = lu.nl;
    if (st || nl < 1 || first > nl) gv_layer_units_free(&lu);
    if (st)
      return gv_error(m, "recompute: --recompute=%s applies to one program: inside pipeline stages name the layers "
                         "(--recompute=LIST) or give all", spec);
    if (nl < 1) return gv_error(m, "recompute: --recompute=%s selects no layer (the forward program has no repeated blocks)", spec);
    if (first > nl) return gv_error(m, "recompute: --recompute=%s: the program has %d layers", spec, nl);
  }
  /* op->id: 1 forward, 0 backward (original), 2 clone; value ids numbered once (clones: -1) */
  int nv = number(body);
  for (gv_op *op = body->first; op; op = op->next) op->id = 0;
  for (gv_op *op = body->first; op != fwd_end->next; op = op->next) op->id = 1;
  bool stage = stage_function(f);
  if (sel) {
    int rc = recompute_selective(m, body, fwd_end, spec[9] ? spec + 10 : NULL, spec, nv, stage, first >= 0 ? &lu : NULL, first);
    if (first >= 0) gv_layer_units_free(&lu);
    return rc;
  }
  if (all || first >= 0) { /* the layers found by structure: every one, or the first `first` */
    int rc = 0, nl = lu.nl;
    for (int u = 1; u <= (first >= 0 ? first : nl) && !rc; u++) {
      layer_id L = {.lu = &lu, .unit = u};
      rc = recompute_layer(m, body, fwd_end, &L, nv);
    }
    gv_layer_units_free(&lu);
    if (rc || nl || first >= 0) return rc;
    if (!stage) return gv_error(m, "recompute: --recompute=all selects no layer (the forward program has no repeated blocks)");
    /* a pipeline stage of one block has no repeat to find: its layers by name (below; "all" selects each) */
  }
  /* the distinct layers of forward ops named in the list, in program order */
  int found = 0;
  for (gv_op *op = body->first; op != fwd_end->next; op = op->next) {
    const char *seg;
    size_t sl, n = layer_of(op->loc, &seg, &sl);
    if (!n || op->id != 1) continue;
    bool seen = false;
    layer_id L = {.loc = op->loc, .n = n};
    for (gv_op *p = body->first; p != op && !seen; p = p->next) seen = p->id == 1 && in_layer(&L, p->loc);
    if (seen || !selected(spec, op->loc, n, seg, sl)) continue;
    found++;
    if (recompute_layer(m, body, fwd_end, &L, nv)) return -1;
  }
  if (!found && stage) return 0; /* a stage without the listed layers (or without layers): nothing recomputed */
  if (!found) return gv_error(m, "recompute: --recompute=%s selects no layer (layers are named by a NAME.N segment of the node names, e.g. h.0 or layers.3)", spec);
  return 0;
}
