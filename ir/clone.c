/* clone.c — a deep copy of a module in memory (gv_module_clone, ir/ir.h).
 *
 * The result is the module gv_parse_module would build from
 * gv_print_module's text, without the text: the planner realises every
 * candidate plan on a copy, and the pipeline's stage DP extracts every
 * candidate stage from one, so printing and parsing (hex for every
 * constant's bytes) cost more than the passes run on the copy.
 *
 * As after printing and parsing: op results and region arguments have no
 * name, a function argument's name is its arg_names entry, param_data is
 * all NULL (weights are not part of the text), value and op ids are 0,
 * attributes, strings, constants and shardings are copied into the new
 * module's arena (nothing points into the original). The original's value
 * ids are used as scratch (the printer rewrites them too).
 */
#include <stdlib.h>
#include <string.h>

#include "ir.h"

typedef struct {
  gv_module *c;
  const gv_module *m;
  gv_value **map;          /* by original value id (given as the walk defines it): its copy */
  const gv_value **orig;   /* by id: the original (a stale id from before the walk is no definition) */
  int n, cap;
  bool bad;
  bool share; /* constants' data and op locations shared with m (gv_module_clone_shared), not copied */
} cloner;

/* v (an original's definition) -> c: v's id is its index */
static void define(cloner *k, gv_value *v, gv_value *c) {
  if (k->n == k->cap) {
    int cap = k->cap ? 2 * k->cap : 1024;
    gv_value **map = realloc(k->map, (size_t)cap * sizeof *map);
    if (map) k->map = map;
    const gv_value **orig = map ? realloc(k->orig, (size_t)cap * sizeof *orig) : NULL;
    if (orig) k->orig = orig;
    if (!map || !orig) {
      k->bad = true;
      return;
    }
    k->cap = cap;
  }
  v->id = k->n;
  k->orig[k->n] = v;
  k->map[k->n++] = c;
}

static const char *dup(cloner *k, const char *s) { return s ? gv_strdup(k->c->arena, s) : NULL; }

static const gv_sharding *sharding(cloner *k, const gv_sharding *s) {
  if (!s) return NULL;
  const gv_mesh *mesh = NULL;
  for (int i = 0; i < k->m->nmeshes && !mesh; i++)
    if (k->m->meshes[i] == s->mesh) mesh = k->c->meshes[i];
  if (!mesh && s->mesh) mesh = gv_module_mesh(k->c, s->mesh->name); /* the text names the mesh */
  if (!mesh) {
    k->bad = true;
    return NULL;
  }
  gv_sharding *t = gv_alloc(k->c->arena, sizeof *t);
  *t = *s;
  t->mesh = mesh;
  return t;
}

/* Every byte of d[0..n) is 0 or 1 (a bool constant as the text would give it back): eight at a time. */
static bool bool_bytes(const unsigned char *d, size_t n) {
  size_t i = 0;
  uint64_t any = 0;
  for (; i + 8 <= n; i += 8) {
    uint64_t w;
    memcpy(&w, d + i, 8);
    any |= w;
  }
  for (; i < n; i++) any |= d[i];
  return !(any & ~0x0101010101010101ull);
}

static void attr(cloner *k, gv_attr *d, const gv_attr *a) {
  gv_arena *ar = k->c->arena;
  *d = *a;
  d->name = a->name; /* interned (gv_intern): shared, not copied */
  switch (a->kind) {
  case GV_ATTR_STR: d->u.s = dup(k, a->u.s); break;
  case GV_ATTR_INTS:
    d->u.ints.v = gv_alloc(ar, (size_t)(a->u.ints.n ? a->u.ints.n : 1) * sizeof(int64_t));
    if (a->u.ints.n) memcpy(d->u.ints.v, a->u.ints.v, (size_t)a->u.ints.n * sizeof(int64_t));
    break;
  case GV_ATTR_FLOATS:
    d->u.floats.v = gv_alloc(ar, (size_t)(a->u.floats.n ? a->u.floats.n : 1) * sizeof(float));
    if (a->u.floats.n) memcpy(d->u.floats.v, a->u.floats.v, (size_t)a->u.floats.n * sizeof(float));
    break;
  case GV_ATTR_STRS: {
    const char **v = gv_alloc(ar, (size_t)(a->u.strs.n ? a->u.strs.n : 1) * sizeof *v);
    for (int i = 0; i < a->u.strs.n; i++) v[i] = dup(k, a->u.strs.v[i]);
    d->u.strs.v = v;
    break;
  }
  case GV_ATTR_TENSOR:
    if (a->u.t) {
      gv_tensor *t = gv_alloc(ar, sizeof *t);
      t->type = a->u.t->type;
      t->data = NULL;
      int64_t n = gv_type_is_static(&t->type) ? gv_type_numel(&t->type) : -1;
      size_t es = gv_dtype_size(t->type.dtype);
      if (k->share && a->u.t->data && n >= 0 && es && t->type.dtype != GV_DT_BOOL) {
        t->data = a->u.t->data; /* read only, m outlives the copy */
      } else if (a->u.t->data && n >= 0 && es) {
        size_t bytes = (size_t)n * es;
        t->data = gv_alloc(ar, bytes ? bytes : 1);
        memcpy(t->data, a->u.t->data, bytes);
        if (t->type.dtype == GV_DT_BOOL && !bool_bytes(t->data, bytes)) /* the text keeps one bit per element */
          for (size_t i = 0; i < bytes; i++) ((unsigned char *)t->data)[i] = ((unsigned char *)t->data)[i] != 0;
      } else if (a->u.t->data || n != 0) {
        k->bad = true; /* not printable and parsable as it is: the caller goes through the text */
      }
      d->u.t = t;
    }
    break;
  case GV_ATTR_SHARDING: {
    const gv_sharding **v = gv_alloc(ar, (size_t)(a->u.sh.n ? a->u.sh.n : 1) * sizeof *v);
    for (int i = 0; i < a->u.sh.n; i++) {
      v[i] = sharding(k, a->u.sh.v[i]);
      if (!v[i]) k->bad = true;
    }
    d->u.sh.v = v;
    break;
  }
  default: break;
  }
}

static gv_value *use(cloner *k, const gv_value *v) {
  gv_value *c = v && v->id >= 0 && v->id < k->n && k->orig[v->id] == v ? k->map[v->id] : NULL;
  if (!c) k->bad = true; /* a use before its definition: not SSA */
  return c;
}

static void block(cloner *k, gv_block *d, const gv_block *b, bool body) {
  gv_arena *ar = k->c->arena;
  int n = b->nargs;
  d->nargs = n;
  d->args = gv_alloc(ar, (size_t)(n ? n : 1) * sizeof *d->args);
  gv_value *vals = gv_alloc(ar, (size_t)(n ? n : 1) * sizeof *vals);
  for (int i = 0; i < n; i++) {
    gv_value *v = d->args[i] = &vals[i];
    v->type = b->args[i]->type;
    v->block = d;
    v->index = i;
    if (body) v->name = k->c->main->arg_names[i];
    define(k, b->args[i], v);
  }
  for (const gv_op *op = b->first; op && !k->bad; op = op->next) {
    gv_block **regions = NULL;
    if (op->nregions) {
      regions = gv_alloc(ar, (size_t)op->nregions * sizeof *regions);
      for (int r = 0; r < op->nregions && !k->bad; r++) {
        regions[r] = gv_block_new(k->c);
        block(k, regions[r], op->regions[r], false);
      }
    }
    gv_op *o = gv_op_new(k->c, op->code, 0, NULL, op->nres);
    o->nopnds = op->nopnds;
    if (op->nopnds) {
      o->opnds = gv_alloc(ar, (size_t)op->nopnds * sizeof *o->opnds);
      for (int i = 0; i < op->nopnds; i++) o->opnds[i] = use(k, op->opnds[i]);
    }
    for (int i = 0; i < op->nres; i++) {
      o->res[i]->type = op->res[i]->type;
      define(k, op->res[i], o->res[i]);
    }
    if (op->nattrs) {
      o->attrs = gv_alloc(ar, (size_t)op->nattrs * sizeof *o->attrs);
      for (int i = 0; i < op->nattrs; i++) attr(k, &o->attrs[i], &op->attrs[i]);
      o->nattrs = op->nattrs;
    }
    o->loc = op->loc ? k->share ? op->loc : dup(k, op->loc) : ""; /* shared: m's strings (read only, m outlives the copy) */
    o->onnx_op = k->share ? op->onnx_op : dup(k, op->onnx_op);
    o->nregions = op->nregions;
    o->regions = regions;
    for (int r = 0; r < op->nregions; r++) regions[r]->parent = o;
    gv_block_append(d, o);
  }
}

static gv_module *clone(const gv_module *m, bool share) {
  if (!m || !m->main || !m->main->body) return NULL;
  gv_module *c = gv_module_new(m->source);
  cloner k = {.c = c, .m = m, .share = share};
  for (int i = 0; i < m->nmeshes; i++) {
    const gv_mesh *s = m->meshes[i];
    gv_mesh *t = gv_module_add_mesh(c, s->name, s->naxes, s->axis, s->size);
    if (!t) {
      gv_module_free(c);
      return NULL;
    }
    t->has_predicted = s->has_predicted;
    memcpy(t->predicted, s->predicted, sizeof t->predicted);
  }
  const gv_func *f = m->main;
  gv_func *g = gv_func_new(c, f->name ? f->name : "main");
  c->main = g;
  gv_arena *ar = c->arena;
  int n = f->body->nargs, n1 = n ? n : 1;
  g->arg_names = gv_alloc(ar, (size_t)n1 * sizeof *g->arg_names);
  g->arg_is_param = gv_alloc(ar, (size_t)n1 * sizeof *g->arg_is_param);
  g->param_data = gv_alloc(ar, (size_t)n1 * sizeof *g->param_data);
  bool any_state = false, any_frozen = false, any_sh = false;
  for (int i = 0; i < n; i++) {
    g->arg_names[i] = gv_strdup(ar, f->arg_names && f->arg_names[i] ? f->arg_names[i] : "");
    g->arg_is_param[i] = f->arg_is_param && f->arg_is_param[i];
    any_state |= f->arg_is_state && f->arg_is_state[i];
    any_frozen |= f->arg_is_frozen && f->arg_is_frozen[i];
    any_sh |= f->arg_sharding && f->arg_sharding[i];
  }
  if (any_state) {
    g->arg_is_state = gv_alloc(ar, (size_t)n1 * sizeof *g->arg_is_state);
    memcpy(g->arg_is_state, f->arg_is_state, (size_t)n * sizeof *g->arg_is_state);
  }
  if (any_frozen) {
    g->arg_is_frozen = gv_alloc(ar, (size_t)n1 * sizeof *g->arg_is_frozen);
    memcpy(g->arg_is_frozen, f->arg_is_frozen, (size_t)n * sizeof *g->arg_is_frozen);
  }
  if (any_sh) {
    g->arg_sharding = gv_alloc(ar, (size_t)n1 * sizeof *g->arg_sharding);
    for (int i = 0; i < n; i++)
      if (f->arg_sharding[i] && !(g->arg_sharding[i] = sharding(&k, f->arg_sharding[i]))) k.bad = true;
  }
  int nr = f->nres_names;
  if (nr > 0) {
    g->res_names = gv_alloc(ar, (size_t)nr * sizeof *g->res_names);
    for (int i = 0; i < nr; i++) g->res_names[i] = f->res_names ? dup(&k, f->res_names[i]) : NULL;
    bool any_upd = false;
    for (int i = 0; f->res_updates && i < nr; i++) any_upd |= f->res_updates[i] >= 0;
    if (any_upd) {
      g->res_updates = gv_alloc(ar, (size_t)nr * sizeof *g->res_updates);
      memcpy(g->res_updates, f->res_updates, (size_t)nr * sizeof *g->res_updates);
    }
  }
  g->nres_names = nr;
  block(&k, g->body, f->body, true);
  free(k.map), free(k.orig);
  if (k.bad) {
    gv_module_free(c);
    return NULL;
  }
  return c;
}

gv_module *gv_module_clone(const gv_module *m) { return clone(m, false); }
gv_module *gv_module_clone_shared(const gv_module *m) { return clone(m, true); }
