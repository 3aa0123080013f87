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
 * Layers: an op's layer is the prefix of its location (ONNX node name) up
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
 * (their results stay live). */
#include <stdlib.h>
#include <string.h>

#include "passes.h"

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

static bool same_layer(const char *a, size_t na, const char *b) {
  const char *s;
  size_t sl, nb = layer_of(b, &s, &sl);
  return nb == na && nb && !strncmp(a, b, na);
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

/* Recomputes one layer (prefix loc[0..n)); fwd_end is the loss op. */
static int recompute_layer(gv_module *m, gv_block *body, gv_op *fwd_end, const char *loc, size_t n, int nv) {
  bool *used = calloc((size_t)nv + 1, 1);
  gv_value **map = calloc((size_t)nv + 1, sizeof *map);
  if (!used || !map) {
    free(used), free(map);
    return gv_error(m, "recompute: out of memory");
  }
  /* forward values of the layer that its backward ops use */
  gv_op *first_use = NULL;
  for (gv_op *op = fwd_end->next; op; op = op->next) {
    if (!same_layer(loc, n, op->loc)) continue;
    for (int i = 0; i < op->nopnds; i++) {
      const gv_op *d = op->opnds[i]->def;
      if (!d || d->code == GV_OP_CONSTANT || d->nregions || d->id != 1 || !same_layer(loc, n, d->loc)) continue;
      used[op->opnds[i]->id] = true;
      if (!first_use) first_use = op;
    }
  }
  int rc = 0;
  if (first_use) {
    /* the layer's forward ops those values need, in reverse program order */
    for (gv_op *op = fwd_end; op; op = op->prev) {
      if (op->id != 1 || op->code == GV_OP_CONSTANT || op->nregions || !same_layer(loc, n, op->loc)) continue;
      bool any = false;
      for (int i = 0; i < op->nres; i++) any = any || used[op->res[i]->id];
      if (!any) continue;
      for (int i = 0; i < op->nopnds; i++) used[op->opnds[i]->id] = true;
    }
    for (gv_op *op = body->first; op != fwd_end->next; op = op->next) {
      if (op->id != 1 || op->code == GV_OP_CONSTANT || op->nregions || !same_layer(loc, n, op->loc) || !op->nres) continue;
      bool any = false;
      for (int i = 0; i < op->nres; i++) any = any || used[op->res[i]->id];
      if (any) gv_insert_before(first_use, clone_op(m, op, map));
    }
    /* backward ops of the layer read the clones */
    for (gv_op *op = first_use; op; op = op->next) {
      if (op->id == 2 || !same_layer(loc, n, op->loc)) continue;
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

int gv_pass_recompute(gv_module *m) {
  const char *spec = gv_train_opts.recompute ? gv_train_opts.recompute : "none";
  if (!strcmp(spec, "none") || !*spec) return 0;
  gv_func *f = m->main;
  gv_op *ret = f ? gv_block_terminator(f->body) : NULL;
  if (!ret || ret->code != GV_OP_RETURN || ret->nopnds < 1 || !ret->opnds[0]->def)
    return gv_error(m, "recompute: the function must return the loss first (run loss and autodiff first)");
  gv_block *body = f->body;
  gv_op *fwd_end = ret->opnds[0]->def;
  /* op->id: 1 forward, 0 backward (original), 2 clone; value ids numbered once (clones: -1) */
  int nv = number(body);
  for (gv_op *op = body->first; op; op = op->next) op->id = 0;
  for (gv_op *op = body->first; op != fwd_end->next; op = op->next) op->id = 1;
  /* the distinct layers of forward ops, in program order */
  int found = 0;
  for (gv_op *op = body->first; op != fwd_end->next; op = op->next) {
    const char *seg;
    size_t sl, n = layer_of(op->loc, &seg, &sl);
    if (!n || op->id != 1) continue;
    bool seen = false;
    for (gv_op *p = body->first; p != op && !seen; p = p->next) seen = p->id == 1 && same_layer(op->loc, n, p->loc);
    if (seen || !selected(spec, op->loc, n, seg, sl)) continue;
    found++;
    if (recompute_layer(m, body, fwd_end, op->loc, n, nv)) return -1;
  }
  if (!found) return gv_error(m, "recompute: --recompute=%s selects no layer (layers are named by a NAME.N segment of the node names, e.g. h.0 or layers.3)", spec);
  return 0;
}
