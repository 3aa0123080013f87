/* comm_sync.c — the sync rule of collectives in flight (comm_sync.h). */
#include "comm_sync.h"
#include "storage.h"

#include <stdlib.h>

bool gv_comm_is_collective(const gv_op *op) {
  return op->code == GV_OP_ALL_REDUCE || op->code == GV_OP_ALL_GATHER || op->code == GV_OP_REDUCE_SCATTER ||
         op->code == GV_OP_ALL_TO_ALL;
}

static bool is_view(const gv_op *op) { return (gv_ops[op->code].flags & GV_VIEW) != 0; }

static const gv_value *root_of(const gv_value *v) {
  while (v->def && is_view(v->def) && v->def->nopnds) v = v->def->opnds[0];
  return v;
}

/* the bytes a value takes in the arena: at its storage dtype (a value stored
 * 16-bit takes 2 bytes per element, as the memory plan placed it) */
static int64_t nbytes_of(const gv_value *v) { return gv_type_numel(&v->type) * (int64_t)gv_dtype_size(gv_value_storage(v)); }

void gv_comm_sync_init(gv_comm_sync *s, const gv_module *m) {
  s->m = m;
  s->argoff = NULL, s->nargoff = 0;
  s->p = NULL, s->n = s->cap = 0;
  s->mark = -1;
  const gv_block *body = m->main ? m->main->body : NULL;
  if (body && body->first && body->first->code == GV_OP_ARENA) s->nargoff = gv_get_ints(body->first, "arg_offsets", &s->argoff);
}

void gv_comm_sync_free(gv_comm_sync *s) {
  free(s->p);
  s->p = NULL, s->n = s->cap = 0;
}

/* Arena bytes of a value: [*off, *off + *n), *off = -1 when not in the arena. */
static void arena_of(const gv_comm_sync *s, const gv_value *v, int64_t *off, int64_t *n) {
  v = root_of(v);
  *n = nbytes_of(v);
  *off = -1;
  if (!v->def) {
    if (s->m->main && v->block == s->m->main->body && v->index < s->nargoff) *off = s->argoff[v->index];
    return;
  }
  if (v->def->code == GV_OP_CONSTANT) return;
  const int64_t *offs;
  if (gv_get_ints(v->def, "offsets", &offs) > v->index) *off = offs[v->index];
}

static bool reads_pending(const gv_comm_sync *s, const gv_op *op) {
  for (int i = 0; i < op->nopnds; i++) {
    const gv_value *r = root_of(op->opnds[i]);
    for (int k = 0; k < s->n; k++)
      if (s->p[k].res == r) return true;
  }
  for (int k = 0; k < op->nregions; k++)
    for (const gv_op *b = op->regions[k]->first; b; b = b->next)
      if (reads_pending(s, b)) return true;
  return false;
}

static bool hits(int64_t a, int64_t an, int64_t b, int64_t bn) { return a >= 0 && b >= 0 && a < b + bn && b < a + an; }

bool gv_comm_sync_before(const gv_comm_sync *s, const gv_op *op) {
  if (!s->n || is_view(op) || op->code == GV_OP_CONSTANT || op->code == GV_OP_ARENA) return false; /* no bytes touched */
  if (op->code == GV_OP_RETURN || reads_pending(s, op)) return true;
  for (int i = 0; i < op->nres; i++) {
    int64_t off, n;
    arena_of(s, op->res[i], &off, &n);
    if (off < 0) return true; /* writes outside the arena (training state): be safe */
    for (int k = 0; k < s->n; k++)
      if (hits(off, n, s->p[k].roff, s->p[k].rn) || hits(off, n, s->p[k].soff, s->p[k].sn)) return true;
  }
  return false;
}

void gv_comm_sync_clear(gv_comm_sync *s) { s->n = 0, s->mark = -1; }

int gv_comm_sync_prefix(const gv_comm_sync *s, const gv_op *op) {
  if (!gv_comm_is_collective(op) || !gv_get_int(op, "wait_posted", 0) || s->mark <= 0) return 0;
  return s->mark;
}

void gv_comm_sync_drop(gv_comm_sync *s, int k) {
  if (k <= 0) return;
  if (k >= s->n) {
    gv_comm_sync_clear(s);
    return;
  }
  for (int i = k; i < s->n; i++) s->p[i - k] = s->p[i];
  s->n -= k;
  s->mark = s->mark >= k ? s->mark - k : -1;
}

void gv_comm_sync_post(gv_comm_sync *s, const gv_op *op) {
  if (s->n == s->cap) {
    int cap = s->cap ? 2 * s->cap : 8;
    gv_inflight *np = realloc(s->p, sizeof *np * (size_t)cap);
    if (!np) abort();
    s->p = np, s->cap = cap;
  }
  if (gv_get_int(op, "wait_posted", 0)) s->mark = s->n;
  gv_inflight *p = &s->p[s->n++];
  p->end = 0;
  p->res = root_of(op->res[0]);
  arena_of(s, op->res[0], &p->roff, &p->rn);
  arena_of(s, op->opnds[0], &p->soff, &p->sn);
}

static int64_t lead(const gv_type *t, int64_t dim) {
  int64_t n = 1;
  for (int64_t d = 0; d < dim && d < t->rank; d++) n *= t->dims[d];
  return n;
}

bool gv_comm_sync_at_once(const gv_op *op) {
  if (!op->nopnds || !op->nres) return false;
  const gv_type *x = &op->opnds[0]->type, *o = &op->res[0]->type;
  switch (op->code) {
  case GV_OP_ALL_GATHER: case GV_OP_REDUCE_SCATTER: return lead(x, gv_get_int(op, "dim", 0)) > 1;
  case GV_OP_ALL_TO_ALL: return lead(x, gv_get_int(op, "split_dim", 0)) > 1 || lead(o, gv_get_int(op, "concat_dim", 0)) > 1;
  default: return false;
  }
}
