/* sharding.c — meshes, shardings (docs/sharding.md) and the shape rule of
 * the collective ops. Pass logic (propagation, partitioning) lives in
 * passes/; this file only stores, compares and prints. */
#include "ir.h"

#include <stdio.h>
#include <string.h>

gv_mesh *gv_module_add_mesh(gv_module *m, const char *name, int naxes, const char *const *axes, const int64_t *sizes) {
  if (!name || !*name) return gv_error(m, "a mesh needs a name"), NULL;
  if (gv_module_mesh(m, name)) return gv_error(m, "mesh '%s' defined twice", name), NULL;
  if (naxes < 1 || naxes > GV_MAX_MESH_AXES)
    return gv_error(m, "mesh '%s' has %d axes (1 to %d allowed)", name, naxes, GV_MAX_MESH_AXES), NULL;
  gv_mesh *mesh = gv_alloc(m->arena, sizeof *mesh);
  memset(mesh, 0, sizeof *mesh);
  mesh->name = gv_strdup(m->arena, name);
  mesh->naxes = naxes;
  for (int a = 0; a < naxes; a++) {
    if (!axes[a] || !*axes[a]) return gv_error(m, "mesh '%s': axis %d has no name", name, a), NULL;
    if (sizes[a] < 1 || sizes[a] > (1 << 20))
      return gv_error(m, "mesh '%s': axis '%s' has size %lld", name, axes[a], (long long)sizes[a]), NULL;
    for (int b = 0; b < a; b++)
      if (strcmp(axes[a], axes[b]) == 0) return gv_error(m, "mesh '%s': axis '%s' repeated", name, axes[a]), NULL;
    mesh->axis[a] = gv_strdup(m->arena, axes[a]);
    mesh->size[a] = sizes[a];
  }
  gv_mesh **nm = gv_alloc(m->arena, (size_t)(m->nmeshes + 1) * sizeof *nm);
  if (m->nmeshes) memcpy(nm, m->meshes, (size_t)m->nmeshes * sizeof *nm);
  nm[m->nmeshes++] = mesh;
  m->meshes = nm;
  return mesh;
}

const gv_mesh *gv_module_mesh(const gv_module *m, const char *name) {
  for (int i = 0; m && name && i < m->nmeshes; i++)
    if (strcmp(m->meshes[i]->name, name) == 0) return m->meshes[i];
  return NULL;
}

int gv_mesh_axis(const gv_mesh *mesh, const char *name, size_t len) {
  for (int a = 0; mesh && a < mesh->naxes; a++)
    if (strlen(mesh->axis[a]) == len && memcmp(mesh->axis[a], name, len) == 0) return a;
  return -1;
}

int64_t gv_mesh_devices(const gv_mesh *mesh) {
  int64_t n = 1;
  for (int a = 0; a < mesh->naxes; a++) n *= mesh->size[a];
  return n;
}

gv_sharding *gv_sharding_new(gv_module *m, const gv_mesh *mesh, int rank) {
  gv_sharding *s = gv_alloc(m->arena, sizeof *s);
  s->mesh = mesh;
  s->rank = rank < 0 ? 0 : rank;
  return s;
}

bool gv_sharding_equal(const gv_sharding *a, const gv_sharding *b) {
  if (!a || !b) return gv_sharding_is_replicated(a) && gv_sharding_is_replicated(b);
  if (a->mesh != b->mesh || a->rank != b->rank || a->partial != b->partial) return false;
  for (int d = 0; d < a->rank; d++) {
    if (a->naxes[d] != b->naxes[d]) return false;
    for (int k = 0; k < a->naxes[d]; k++)
      if (a->axes[d][k] != b->axes[d][k]) return false;
  }
  return true;
}

bool gv_sharding_is_replicated(const gv_sharding *s) {
  if (!s) return true;
  if (s->partial) return false;
  for (int d = 0; d < s->rank; d++)
    if (s->naxes[d]) return false;
  return true;
}

int64_t gv_sharding_dim_split(const gv_sharding *s, int d) {
  int64_t p = 1;
  if (!s || d < 0 || d >= s->rank) return 1;
  for (int k = 0; k < s->naxes[d]; k++) p *= s->mesh->size[s->axes[d][k]];
  return p;
}

static void put_q(FILE *f, const char *s) {
  fputc('"', f);
  gv_write_escaped(f, s);
  fputc('"', f);
}

void gv_sharding_print(const gv_sharding *s, void *file) {
  FILE *f = file;
  if (!s || !s->mesh) {
    fputs("#galv.sharding<@undef, []>", f);
    return;
  }
  fprintf(f, "#galv.sharding<@%s, [", s->mesh->name);
  for (int d = 0; d < s->rank; d++) {
    fputs(d ? ", {" : "{", f);
    for (int k = 0; k < s->naxes[d]; k++) {
      if (k) fputs(", ", f);
      put_q(f, s->mesh->axis[s->axes[d][k]]);
    }
    fputc('}', f);
  }
  fputc(']', f);
  if (s->partial) {
    fputs(", partial={", f);
    bool first = true;
    for (int a = 0; a < s->mesh->naxes; a++) {
      if (!(s->partial & (1u << a))) continue;
      if (!first) fputs(", ", f);
      first = false;
      put_q(f, s->mesh->axis[a]);
      fputs(":sum", f);
    }
    fputc('}', f);
  }
  fputc('>', f);
}

const gv_sharding *gv_op_sharding(const gv_op *op, int i) {
  static const char *key; /* interned: read for every value the passes and the cost walk see */
  if (!key) key = gv_intern("sharding");
  const gv_attr *a = gv_get_attr_key(op, key);
  if (!a || a->kind != GV_ATTR_SHARDING || i < 0 || i >= a->u.sh.n) return NULL;
  return a->u.sh.v[i];
}

void gv_set_shardings(gv_module *m, gv_op *op, const gv_sharding *const *sh) {
  gv_attr a;
  memset(&a, 0, sizeof a);
  a.name = gv_strdup(m->arena, "sharding");
  a.kind = GV_ATTR_SHARDING;
  a.u.sh.n = op->nres;
  a.u.sh.v = gv_alloc(m->arena, (size_t)(op->nres ? op->nres : 1) * sizeof *a.u.sh.v);
  for (int i = 0; i < op->nres; i++) a.u.sh.v[i] = sh[i];
  gv_set_attr(m, op, &a);
}

const gv_sharding *gv_value_sharding(const gv_module *m, const gv_value *v) {
  if (!v) return NULL;
  if (v->def) return gv_op_sharding(v->def, v->index);
  const gv_func *f = m->main;
  if (f && v->block == f->body && f->arg_sharding && v->index >= 0 && v->index < f->body->nargs)
    return f->arg_sharding[v->index];
  return NULL;
}

/* Shape rule of the collectives: the group size p from mesh and axes. */
int gv_infer_collective(gv_module *m, gv_op *op, const gv_tensor *const *values) {
  (void)values;
  const char *mn = gv_get_str(op, "mesh", NULL);
  const gv_mesh *mesh = gv_module_mesh(m, mn);
  if (!mesh) return gv_error_op(m, op, "galv.%s: mesh '%s' is not defined", gv_ops[op->code].name, mn ? mn : "");
  const gv_attr *ax = gv_get_attr(op, "axes");
  if (!ax || ax->kind != GV_ATTR_STRS || ax->u.strs.n < 1)
    return gv_error_op(m, op, "galv.%s: needs axes = [\"axis\", ...]", gv_ops[op->code].name);
  int64_t p = 1;
  for (int k = 0; k < ax->u.strs.n; k++) {
    int a = gv_mesh_axis(mesh, ax->u.strs.v[k], strlen(ax->u.strs.v[k]));
    if (a < 0) return gv_error_op(m, op, "galv.%s: mesh '%s' has no axis '%s'", gv_ops[op->code].name, mesh->name, ax->u.strs.v[k]);
    p *= mesh->size[a];
  }
  if (op->code == GV_OP_AXIS_INDEX) {
    op->res[0]->type = gv_type_make(GV_DT_I64, 0, NULL);
    return 0;
  }
  gv_type t = op->opnds[0]->type;
  if (op->code == GV_OP_ALL_REDUCE) {
    const char *r = gv_get_str(op, "reduce", "sum");
    if (strcmp(r, "sum") != 0 && strcmp(r, "max") != 0)
      return gv_error_op(m, op, "galv.all_reduce: reduce = \"%s\" (known: sum, max)", r);
    op->res[0]->type = t;
    return 0;
  }
  if (t.rank < 0) {
    op->res[0]->type = gv_type_unranked(t.dtype);
    return 0;
  }
  int d1 = -1, d2 = -1; /* divided dim, multiplied dim */
  if (op->code == GV_OP_ALL_GATHER) d2 = (int)gv_get_int(op, "dim", 0);
  else if (op->code == GV_OP_REDUCE_SCATTER || op->code == GV_OP_SHARD_SLICE) d1 = (int)gv_get_int(op, "dim", 0);
  else d1 = (int)gv_get_int(op, "split_dim", 0), d2 = (int)gv_get_int(op, "concat_dim", 0);
  if ((d1 != -1 && (d1 < 0 || d1 >= t.rank)) || (d2 != -1 && (d2 < 0 || d2 >= t.rank)) ||
      (op->code == GV_OP_ALL_TO_ALL && (d1 < 0 || d2 < 0)))
    return gv_error_op(m, op, "galv.%s: dim out of range for rank %d", gv_ops[op->code].name, t.rank);
  if (d1 >= 0 && t.dims[d1] >= 0) {
    if (t.dims[d1] % p)
      return gv_error_op(m, op, "galv.%s: dim %d of size %lld is not divisible by the group size %lld", gv_ops[op->code].name,
                         d1, (long long)t.dims[d1], (long long)p);
    t.dims[d1] /= p;
  }
  if (d2 >= 0 && t.dims[d2] >= 0) t.dims[d2] *= p;
  op->res[0]->type = t;
  return 0;
}
