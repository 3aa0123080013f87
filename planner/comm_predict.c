/* comm_predict.c — the bytes each rank sends per collective kind, predicted
 * from the GLOBAL program with shardings (after propagate-sharding, before
 * spmd-partition: cost.h gv_cost_comm_bytes).
 *
 * This is the planner's side of "bytes predicted = bytes counted": it reads
 * only global types, the shardings and the mesh, never the local program
 * that spmd-partition builds, and the runtime counts on the other side what
 * the communicator hands to MPI (runtime/comm_mpi.c, the wire counter). A
 * local type that spmd-partition gets wrong, a collective it inserts twice
 * or on the wrong axes, or a buffer the emitter sizes wrong, makes the two
 * differ.
 *
 * What communicates in a global program:
 *  - galv.reshard (docs/sharding.md): pending sums are completed first (a
 *    reduce_scatter into a dim the target splits next by that axis, when
 *    the dim divides, else one all_reduce over all remaining pending axes);
 *    then each split the target lacks is undone minor axis first (moved to a
 *    dim the target splits next by it: all_to_all; else all_gather); splits
 *    to add are local slices (free).
 *  - cross_entropy / cross_entropy_grad on split logits (Megatron's
 *    vocab-parallel form): per (logits, labels) pair once, the row max and
 *    the row sum of exponentials all-reduced over the vocab axes and the
 *    count of counted rows over the row axes; the loss adds its target
 *    logits (vocab axes) and its sum (row axes).
 * Per-rank bytes follow the ring formulas of runtime/galv_comm.h on the
 * local buffer b of a group of p: all_reduce 2(p-1)b/p, all_gather (p-1)b
 * (b: the part each rank holds), reduce_scatter and all_to_all (p-1)b/p.
 * A group of one rank sends nothing. */
#include "cost.h"
#include "ir/storage.h"

#include <string.h>

typedef struct {
  const gv_mesh *mesh;
  int rank;
  int64_t dims[GV_MAX_RANK];  /* global */
  int64_t esize;
  uint8_t n[GV_MAX_RANK];     /* axes splitting each dim, major first */
  uint8_t ax[GV_MAX_RANK][GV_MAX_MESH_AXES];
  unsigned pending;           /* axes with a pending sum */
} layout;

static int64_t group(const gv_mesh *mesh, unsigned mask) {
  int64_t p = 1;
  for (int a = 0; a < mesh->naxes; a++)
    if (mask & (1u << a)) p *= mesh->size[a];
  return p;
}

/* How many parts dim d is cut into now. */
static int64_t parts(const layout *L, int d) {
  int64_t p = 1;
  for (int k = 0; k < L->n[d]; k++) p *= L->mesh->size[L->ax[d][k]];
  return p;
}

/* Bytes of the piece one rank holds. */
static int64_t held(const layout *L) {
  int64_t b = L->esize;
  for (int d = 0; d < L->rank; d++) b *= L->dims[d] / parts(L, d);
  return b;
}

/* Is dim d's current split list a prefix of the target's? */
static bool prefix_of(const layout *L, const gv_sharding *w, int d) {
  if (L->n[d] > w->naxes[d]) return false;
  for (int k = 0; k < L->n[d]; k++)
    if (L->ax[d][k] != w->axes[d][k]) return false;
  return true;
}

/* The dim (other than skip) the target splits next by axis a, -1: none. */
static int next_split_by(const layout *L, const gv_sharding *w, int a, int skip) {
  int found = -1;
  for (int d = 0; d < L->rank; d++)
    if (d != skip && prefix_of(L, w, d) && w->naxes[d] > L->n[d] && w->axes[d][L->n[d]] == a) found = d;
  return found;
}

static void add(int64_t out[4], gv_coll_kind k, int64_t b, int64_t p) {
  if (p <= 1) return;
  switch (k) {
  case GV_COLL_ALL_REDUCE: out[0] += 2 * (p - 1) * b / p; break;
  case GV_COLL_ALL_GATHER: out[1] += (p - 1) * b; break;
  case GV_COLL_REDUCE_SCATTER: out[2] += (p - 1) * b / p; break;
  case GV_COLL_ALL_TO_ALL: out[3] += (p - 1) * b / p; break;
  default: break;
  }
}

static int reshard(const gv_module *m, const gv_op *op, int64_t out[4]) {
  const gv_mesh *mesh = m->meshes[0];
  const gv_value *x = op->opnds[0];
  const gv_sharding *have = gv_value_sharding(m, x), *want = gv_op_sharding(op, 0);
  if (!want || gv_type_numel(&x->type) < 0) return -1;
  layout L;
  memset(&L, 0, sizeof L);
  /* moved as stored: a value the storage pass stores 16-bit moves 2 bytes per element (ir/storage.h) */
  L.mesh = mesh, L.rank = x->type.rank, L.esize = (int64_t)gv_dtype_size(gv_value_storage(x));
  for (int d = 0; d < L.rank; d++) L.dims[d] = x->type.dims[d];
  if (have) {
    L.pending = have->partial;
    for (int d = 0; d < L.rank && d < have->rank; d++) {
      L.n[d] = have->naxes[d];
      memcpy(L.ax[d], have->axes[d], sizeof L.ax[d]);
    }
  }
  if (want->partial & ~L.pending) return -1; /* not a reshard spmd-partition lowers */
  unsigned ar = 0;
  for (int a = 0; a < mesh->naxes; a++) {
    if (!(L.pending & (1u << a)) || (want->partial & (1u << a))) continue;
    int d = next_split_by(&L, want, a, -1);
    if (d >= 0 && (L.dims[d] / parts(&L, d)) % mesh->size[a] == 0) {
      add(out, GV_COLL_REDUCE_SCATTER, held(&L), mesh->size[a]);
      L.ax[d][L.n[d]++] = (uint8_t)a;
    } else {
      ar |= 1u << a;
    }
    L.pending &= ~(1u << a);
  }
  if (ar) add(out, GV_COLL_ALL_REDUCE, held(&L), group(mesh, ar));
  for (int d = 0; d < L.rank; d++)
    while (!prefix_of(&L, want, d)) {
      int a = L.ax[d][L.n[d] - 1];
      int e = next_split_by(&L, want, a, d);
      int64_t b = held(&L);
      L.n[d]--;
      if (e >= 0 && (L.dims[e] / parts(&L, e)) % mesh->size[a] == 0) {
        add(out, GV_COLL_ALL_TO_ALL, b, mesh->size[a]);
        L.ax[e][L.n[e]++] = (uint8_t)a;
      } else {
        add(out, GV_COLL_ALL_GATHER, b, mesh->size[a]);
      }
    }
  return 0;
}

/* Vocab-parallel cross entropy: see the file comment. seen[] holds the
 * (logits, labels) pairs whose row statistics exist already. */
static int cross_entropy(const gv_module *m, const gv_op *op, const gv_value **seen, int *nseen, int64_t out[4]) {
  bool grad = op->code == GV_OP_CROSS_ENTROPY_GRAD;
  const gv_value *x = op->opnds[grad ? 1 : 0], *lab = op->opnds[grad ? 2 : 1];
  const gv_sharding *xs = gv_value_sharding(m, x);
  int r = x->type.rank;
  if (!xs || r < 1) return 0;
  unsigned vax = 0, rax = 0;
  int64_t rows = 1, split = 1;
  for (int d = 0; d < r; d++) {
    int64_t s = d < xs->rank ? gv_sharding_dim_split(xs, d) : 1;
    for (int k = 0; d < xs->rank && k < xs->naxes[d]; k++) *(d == r - 1 ? &vax : &rax) |= 1u << xs->axes[d][k];
    if (d < r - 1) rows *= x->type.dims[d], split *= s;
  }
  if (!vax && !rax) return 0;
  if (rows < 0) return -1;
  const gv_mesh *mesh = m->meshes[0];
  int64_t es = (int64_t)gv_dtype_size(x->type.dtype), row_b = rows / split * es;
  int64_t pv = group(mesh, vax), pr = group(mesh, rax);
  bool have = false;
  for (int i = 0; i < *nseen && !have; i++) have = seen[2 * i] == x && seen[2 * i + 1] == lab;
  if (!have) {
    add(out, GV_COLL_ALL_REDUCE, row_b, pv); /* row max */
    add(out, GV_COLL_ALL_REDUCE, row_b, pv); /* row sum of exponentials */
    add(out, GV_COLL_ALL_REDUCE, es, pr);    /* counted rows */
    if (*nseen < 8) seen[2 * *nseen] = x, seen[2 * *nseen + 1] = lab, ++*nseen;
  }
  if (!grad) {
    add(out, GV_COLL_ALL_REDUCE, row_b, pv); /* target logits */
    add(out, GV_COLL_ALL_REDUCE, es, pr);    /* the loss's sum */
  }
  return 0;
}

int gv_cost_comm_bytes(const gv_module *m, int64_t out[4]) {
  memset(out, 0, 4 * sizeof out[0]);
  if (!m->nmeshes || !m->main) return 0;
  const gv_value *seen[16];
  int nseen = 0;
  for (const gv_op *op = m->main->body->first; op; op = op->next) {
    int rc = 0;
    if (op->code == GV_OP_RESHARD) rc = reshard(m, op, out);
    else if (op->code == GV_OP_CROSS_ENTROPY || op->code == GV_OP_CROSS_ENTROPY_GRAD)
      rc = cross_entropy(m, op, seen, &nseen, out);
    if (rc) return -1;
  }
  return 0;
}
