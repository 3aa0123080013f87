/* pipe_xfer.c — cross-stage transfers of pipeline-stage programs
 * (galv_pipe.h; docs/pipeline.md, "Cross-mesh transfers"); compiled only
 * with -DGALV_PIPE_STAGE.
 *
 * galvc plans every crossing value with planner/cross_mesh.c (the plan
 * stage-split prints as galv.send / galv.recv tiles) and writes the tiles
 * into pipe_stage.c (galv_pipe_xfers). Here a sending rank posts each tile
 * whose sender it is (straight from the value when the tile is contiguous in
 * it, else packed into a staging buffer), a receiving rank posts each tile
 * it receives (in place when contiguous, else staged and placed once the
 * group completes), and when the plan uses the local all-gather the
 * receiving stage's ranks then all-gather their boxes (in place when the
 * boxes are contiguous and rank-ordered in the value). Both sides walk a
 * transfer's tiles in table order, so the messages between two ranks match
 * in MPI order. The communicator's `send` byte counter is tallied per
 * direction (forward values, gradients) and checked against the plan.
 * Values, staging buffers and box copies go through the stage's buffer
 * hooks (galv_pipe_dev, galv_pipe.h): host memory on the CPU target,
 * device memory on the CUDA target. */
#ifdef GALV_PIPE_STAGE
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "galv_comm.h"
#include "galv_pipe.h"
#include "galv_rt.h"

static galv_comm *world;
static int me, lr, nl = 1;
static uint64_t measured[2];                         /* send bytes counted by the communicator: forward, gradients */
static uint64_t plan_run[2], out_run[2], naive_run[2]; /* per microbatch: this rank's plan, the stage's plan and naive bytes */
static int split_run[2], whole_run[2], scat_run[2]; /* the transfers this rank sends: kept split (its rows), whole;
                                                     * scattered over the ranks holding its block (galv_pipe_xfer) */

/* Per transfer, this rank's view of the value: the box it holds (its block when the program's input / output is
 * split, galv_spmd.h's split tables: a crossing value kept split over the batch; else the whole value). The tiles'
 * offsets are global; a tile is placed at its offset less the block's start, in a buffer of the block's dims. */
typedef struct {
  int64_t start[GALV_RT_MAX_RANK], dims[GALV_RT_MAX_RANK];
  int split;
} view;
static view *views; /* per galv_pipe_xfers entry */

typedef struct {
  char *stage;      /* staging buffer (the stage's alloc hook), NULL: in place */
  char *whole;      /* receives: where the tile goes */
  const galv_pipe_xfer *x;
  const galv_pipe_tile *t;
  int64_t off[GALV_RT_MAX_RANK]; /* receives: the tile's offset in this rank's box */
} pending;
static pending *pend;
static int npend, cappend;
static struct gather {
  const galv_pipe_xfer *x;
  char *whole, *mine, *all;
} *gath;
static int64_t (*scat_n)[2]; /* per transfer with scatter: its block's bytes and this rank's chunk index */
static int ngath, capgath;

static int nranks_of(int stage) { return galv_pipe_first_rank[stage + 1] - galv_pipe_first_rank[stage]; }

static int64_t box_bytes(const galv_pipe_xfer *x, const int64_t *len) {
  int64_t n = (int64_t)galv_dtype_size(x->dtype);
  for (int d = 0; d < x->rank; d++) n *= len[d];
  return n;
}

/* The box's first element (elements) when it is one contiguous run of a buffer of dims, else -1. */
static int64_t box_flat_in(const galv_pipe_xfer *x, const int64_t *dims, const int64_t *off, const int64_t *len) {
  int q = x->rank - 1;
  while (q >= 0 && len[q] == dims[q]) q--;
  for (int d = 0; d < q; d++)
    if (len[d] != 1) return -1;
  int64_t flat = 0, st = 1;
  for (int d = x->rank - 1; d >= 0; d--) flat += off[d] * st, st *= dims[d];
  return flat;
}

static int64_t box_flat(const galv_pipe_xfer *x, const int64_t *off, const int64_t *len) { return box_flat_in(x, x->dims, off, len); }

/* The tile's offset in this rank's box of transfer x (its view), into loff. */
static void local_off(const galv_pipe_xfer *x, const galv_pipe_tile *t, int64_t *loff) {
  const view *v = &views[x - galv_pipe_xfers];
  for (int d = 0; d < x->rank; d++) loff[d] = t->off[d] - v->start[d];
}

/* The host hooks' box copy: the box len at off of a value (dims) to (pack) or
 * from (unpack) a contiguous buffer: pack reads src = the value and writes
 * dst = the buffer, unpack reads src = the buffer and writes dst = the value. */
void galv_pipe_box_host(size_t es, int r, const int64_t *dims, const char *src, char *dst, const int64_t *off,
                        const int64_t *len, int pack) {
  if (r == 0) {
    memcpy(dst, src, es);
    return;
  }
  int64_t st[GALV_RT_MAX_RANK], idx[GALV_RT_MAX_RANK] = {0}, rows = 1, s = 1;
  for (int d = r - 1; d >= 0; d--) st[d] = s, s *= dims[d];
  for (int d = 0; d < r; d++)
    if (len[d] <= 0) return;
  for (int d = 0; d < r - 1; d++) rows *= len[d];
  size_t run = (size_t)len[r - 1] * es;
  for (int64_t i = 0; i < rows; i++) {
    int64_t e = off[r - 1];
    for (int d = 0; d < r - 1; d++) e += (off[d] + idx[d]) * st[d];
    if (pack) memcpy(dst + (size_t)i * run, src + (size_t)e * es, run);
    else memcpy(dst + (size_t)e * es, src + (size_t)i * run, run);
    for (int d = r - 2; d >= 0; d--) {
      if (++idx[d] < len[d]) break;
      idx[d] = 0;
    }
  }
}

/* Copies the box len at off of the value to (pack) or from (unpack) a
 * contiguous buffer (stage buffers: the stage's box hook, galv_pipe.h):
 * pack reads src = the value and writes dst = the buffer, unpack reads
 * src = the buffer and writes dst = the value. */
static void box_copy(const galv_pipe_xfer *x, const char *src, char *dst, const int64_t *off, const int64_t *len, int pack) {
  galv_pipe_dev->box(galv_dtype_size(x->dtype), x->rank, x->dims, src, dst, off, len, pack);
}

/* The same in this rank's box of x (off: local to it). */
static void box_copy_local(const galv_pipe_xfer *x, const char *src, char *dst, const int64_t *off, const int64_t *len, int pack) {
  galv_pipe_dev->box(galv_dtype_size(x->dtype), x->rank, views[x - galv_pipe_xfers].dims, src, dst, off, len, pack);
}

/* The box receiving rank r gets from the sending stage: the bounding box of its tiles. */
static int64_t recv_box(const galv_pipe_xfer *x, int r, int64_t *off, int64_t *len) {
  int any = 0;
  int64_t hi[GALV_RT_MAX_RANK];
  for (int i = 0; i < x->ntiles; i++) {
    const galv_pipe_tile *t = &x->tiles[i];
    if (t->dst != r) continue;
    for (int d = 0; d < x->rank; d++) {
      int64_t h = t->off[d] + t->len[d];
      if (!any || t->off[d] < off[d]) off[d] = t->off[d];
      if (!any || h > hi[d]) hi[d] = h;
    }
    any = 1;
  }
  if (!any) return 0;
  for (int d = 0; d < x->rank; d++) len[d] = hi[d] - off[d];
  return box_bytes(x, len);
}

void galv_pipe_xfer_init(galv_comm *w, int stage, int lrank, int nlocal) {
  world = w, me = stage, lr = lrank, nl = nlocal;
  free(views);
  views = calloc((size_t)galv_pipe_nxfers + 1, sizeof *views);
  free(scat_n);
  scat_n = calloc((size_t)galv_pipe_nxfers + 1, sizeof *scat_n);
  if (!views || !scat_n) galv_fatal("out of memory");
  for (int i = 0; i < galv_pipe_nxfers; i++) {
    const galv_pipe_xfer *x = &galv_pipe_xfers[i];
    if (x->from < 0 || x->to < 0 || x->from >= galv_pipe_nstages || x->to >= galv_pipe_nstages || x->from == x->to ||
        (x->from != me && x->to != me) || x->rank < 0 || x->rank > GALV_RT_MAX_RANK)
      galv_fatal("pipeline table: transfer '%s' (stage %d to %d) is not one of stage %d's", x->name, x->from, x->to, me);
    /* the program's own input (received value, gin:) or output (sent value, grad:) of that name; a
     * stage with a backward entry (galv_pipe_bwd) has the gradients there */
    char nm[300];
    snprintf(nm, sizeof nm, "%s%s", x->grad ? (x->to == me ? "gin:" : "grad:") : "", x->name);
    const galv_io *io = NULL;
    const galv_pipe_entry *bw = x->grad && galv_pipe_bwd.run ? &galv_pipe_bwd : NULL; /* gradients: the backward entry's */
    const galv_io *ins = bw ? bw->inputs : galv_inputs, *outs = bw ? bw->outputs : galv_outputs;
    const galv_io_split *insp = bw ? bw->input_split : galv_input_split, *outsp = bw ? bw->output_split : galv_output_split;
    const galv_io_split *sp = NULL;
    const int nins = bw ? *bw->ninputs : galv_ninputs, nouts = bw ? *bw->noutputs : galv_noutputs;
    for (int k = 0; x->to == me && k < nins; k++)
      if (!strcmp(ins[k].name, nm)) io = &ins[k], sp = insp ? &insp[k] : NULL;
    for (int k = 0; x->from == me && k < nouts; k++)
      if (!strcmp(outs[k].name, nm)) io = &outs[k], sp = outsp ? &outsp[k] : NULL;
    /* this rank's box: its block when the program holds the value split (kept split over the batch), else whole */
    view *v = &views[i];
    for (int d = 0; d < x->rank; d++) v->start[d] = 0, v->dims[d] = x->dims[d];
    if (io && sp && sp->starts && nl > 1) {
      v->split = 1;
      for (int d = 0; d < x->rank; d++) {
        if (sp->gdims[d] != x->dims[d] || io->rank != x->rank)
          galv_fatal("pipeline table: transfer '%s': the program's %s '%s' is not of the value's shape", x->name,
                     x->to == me ? "input" : "output", nm);
        v->start[d] = sp->starts[(size_t)lr * (size_t)x->rank + (size_t)d], v->dims[d] = io->dims[d];
      }
    }
    /* a value held 16-bit (--precision bf16 / fp16: io->storage) moves as its 16-bit elements */
    if (!io || (io->storage ? io->storage : io->dtype) != x->dtype || (io->storage ? io->nbytes / 2 : io->nbytes) != box_bytes(x, v->dims))
      galv_fatal("pipeline table: transfer '%s' (stage %d to %d): the program has no %s '%s' of %lld bytes", x->name, x->from,
                 x->to, x->to == me ? "input" : "output", nm, (long long)box_bytes(x, v->dims));
    if (v->split && x->to == me && x->allgather) galv_fatal("pipeline table: transfer '%s' all-gathers into a split input", x->name);
    if (x->scatter > 1) { /* the block in q chunks: this rank's is its place among the q ranks holding the block */
      const int64_t n = box_bytes(x, v->dims), es = (int64_t)galv_dtype_size(x->dtype);
      if (!v->split || x->ntiles || nl % x->scatter || nranks_of(x->from) != nranks_of(x->to) || (n / es) % x->scatter)
        galv_fatal("pipeline table: transfer '%s' (stage %d to %d) scatters %lld bytes over %d of %d ranks: not a split "
                   "block that divides over them on two stages of the same ranks", x->name, x->from, x->to, (long long)n,
                   x->scatter, nl);
      scat_n[i][0] = n, scat_n[i][1] = lr % x->scatter;
      if (x->from == me) {
        plan_run[x->grad] += (uint64_t)(n / x->scatter);
        scat_run[x->grad]++;
        out_run[x->grad] += (uint64_t)x->bytes;
        naive_run[x->grad] += (uint64_t)x->naive;
      }
      continue;
    }
    int64_t recv = 0, sent = 0;
    for (int k = 0; k < x->ntiles; k++) {
      const galv_pipe_tile *t = &x->tiles[k];
      if (t->src < 0 || t->src >= nranks_of(x->from) || t->dst < 0 || t->dst >= nranks_of(x->to))
        galv_fatal("pipeline table: transfer '%s' has a tile from rank %d to rank %d (stages of %d and %d ranks)", x->name,
                   t->src, t->dst, nranks_of(x->from), nranks_of(x->to));
      for (int d = 0; d < x->rank; d++)
        if (t->off[d] < 0 || t->len[d] < 1 || t->off[d] + t->len[d] > x->dims[d])
          galv_fatal("pipeline table: transfer '%s': a tile leaves the value in dim %d", x->name, d);
      for (int d = 0; d < x->rank && ((t->src == lr && x->from == me) || (t->dst == lr && x->to == me)); d++)
        if (t->off[d] < v->start[d] || t->off[d] + t->len[d] > v->start[d] + v->dims[d])
          galv_fatal("pipeline table: transfer '%s': a tile of rank %d leaves its rows in dim %d", x->name, lr, d);
      if (t->dst == lr) recv += box_bytes(x, t->len);
      if (t->src == lr) sent += box_bytes(x, t->len);
    }
    if (x->to == me) { /* this rank ends up with the whole value */
      int64_t lo[GALV_RT_MAX_RANK], ln[GALV_RT_MAX_RANK];
      if (recv * (x->allgather ? nl : 1) != box_bytes(x, v->dims) || (x->allgather && recv_box(x, lr, lo, ln) != recv))
        galv_fatal("pipeline table: transfer '%s' gives stage %d rank %d %lld bytes%s, not the %s %lld", x->name, me, lr,
                   (long long)recv, x->allgather ? " to all-gather" : "", v->split ? "rows it holds," : "value's",
                   (long long)box_bytes(x, v->dims));
    } else {
      plan_run[x->grad] += (uint64_t)sent;
      split_run[x->grad] += v->split, whole_run[x->grad] += !v->split;
      out_run[x->grad] += (uint64_t)x->bytes;
      naive_run[x->grad] += (uint64_t)x->naive;
    }
  }
}

const galv_pipe_xfer *galv_pipe_xfer_find(const char *name, int grad, int from, int to) {
  for (int i = 0; i < galv_pipe_nxfers; i++) {
    const galv_pipe_xfer *x = &galv_pipe_xfers[i];
    if (x->grad == grad && x->from == from && x->to == to && !strcmp(x->name, name)) return x;
  }
  galv_fatal("pipeline table: no transfer of %s'%s' from stage %d to stage %d", grad ? "the gradient of " : "", name, from, to);
}

static pending *push_pending(void) {
  if (npend == cappend) {
    cappend = cappend ? 2 * cappend : 16;
    pending *p = realloc(pend, sizeof *p * (size_t)cappend);
    if (!p) galv_fatal("out of memory");
    pend = p;
  }
  pending *p = &pend[npend++];
  memset(p, 0, sizeof *p);
  return p;
}

/* scatter: this rank's chunk of the block (bytes), its offset in it */
static int64_t scat_chunk(const galv_pipe_xfer *x, int64_t *off) {
  const int64_t *sn = scat_n[x - galv_pipe_xfers], c = sn[0] / x->scatter;
  *off = sn[1] * c;
  return c;
}

/* a send's staging buffer handed to the caller (galv_pipe_xfer_send_own) instead of released at the next complete */
static void (*own_fn)(void *ctx, void *buf, size_t n);
static void *own_ctx;

void galv_pipe_xfer_send_own(const galv_pipe_xfer *x, const void *whole, galv_queue *q, void (*own)(void *ctx, void *buf, size_t n),
                             void *ctx) {
  own_fn = own, own_ctx = ctx;
  galv_pipe_xfer_send(x, whole, q);
  own_fn = NULL, own_ctx = NULL;
}

void galv_pipe_xfer_send(const galv_pipe_xfer *x, const void *whole, galv_queue *q) {
  if (x->scatter > 1) { /* chunk r mod q of the block to rank r of the other stage */
    int64_t off, n = scat_chunk(x, &off);
    uint64_t before = galv_comm_counters().send;
    galv_send(world, galv_pipe_first_rank[x->to] + lr, (const char *)whole + off, (size_t)n, GALV_U8, q);
    measured[x->grad] += galv_comm_counters().send - before;
    return;
  }
  for (int i = 0; i < x->ntiles; i++) {
    const galv_pipe_tile *t = &x->tiles[i];
    if (t->src != lr) continue;
    int64_t loff[GALV_RT_MAX_RANK];
    local_off(x, t, loff);
    int64_t n = box_bytes(x, t->len), flat = box_flat_in(x, views[x - galv_pipe_xfers].dims, loff, t->len);
    const char *p;
    if (flat >= 0) p = (const char *)whole + flat * (int64_t)galv_dtype_size(x->dtype);
    else if (own_fn) { /* packed into a staging buffer the caller frees once the send is known complete */
      char *b = galv_pipe_dev->alloc((size_t)n);
      box_copy_local(x, whole, b, loff, t->len, 1);
      own_fn(own_ctx, b, (size_t)n);
      p = b;
    } else { /* packed into a staging buffer, freed once the group completes */
      pending *s = push_pending();
      s->stage = galv_pipe_dev->alloc((size_t)n);
      box_copy_local(x, whole, s->stage, loff, t->len, 1);
      p = s->stage;
    }
    uint64_t before = galv_comm_counters().send;
    galv_send(world, galv_pipe_first_rank[x->to] + t->dst, p, (size_t)n, GALV_U8, q);
    measured[x->grad] += galv_comm_counters().send - before;
  }
}

uint64_t galv_pipe_xfer_peers(const galv_pipe_xfer *x, int send) {
  if (x->scatter > 1) return lr < 64 ? 1ull << lr : send ? ~0ull : 0; /* rank r with rank r */
  uint64_t m = 0;
  for (int i = 0; i < x->ntiles; i++) {
    const galv_pipe_tile *t = &x->tiles[i];
    if ((send ? t->src : t->dst) != lr) continue;
    const int o = send ? t->dst : t->src;
    if (o >= 64) {
      if (send) return ~0ull;
      continue;
    }
    m |= 1ull << o;
  }
  return m;
}

static struct gather *push_gather(void) {
  if (ngath == capgath) {
    capgath = capgath ? 2 * capgath : 8;
    struct gather *g = realloc(gath, sizeof *g * (size_t)capgath);
    if (!g) galv_fatal("out of memory");
    gath = g;
  }
  return &gath[ngath++];
}

void galv_pipe_xfer_recv(const galv_pipe_xfer *x, void *whole, galv_queue *q) {
  if (x->scatter > 1) { /* this rank's chunk in place; the q ranks' chunks gathered once the group completes */
    int64_t off, n = scat_chunk(x, &off);
    galv_recv(world, galv_pipe_first_rank[x->from] + lr, (char *)whole + off, (size_t)n, GALV_U8, q);
    *push_gather() = (struct gather){x, whole, NULL, NULL};
    return;
  }
  for (int i = 0; i < x->ntiles; i++) {
    const galv_pipe_tile *t = &x->tiles[i];
    if (t->dst != lr) continue;
    int64_t loff[GALV_RT_MAX_RANK];
    local_off(x, t, loff);
    int64_t n = box_bytes(x, t->len), flat = box_flat_in(x, views[x - galv_pipe_xfers].dims, loff, t->len);
    char *p;
    if (flat >= 0) p = (char *)whole + flat * (int64_t)galv_dtype_size(x->dtype);
    else { /* staged, placed once the group completes */
      pending *s = push_pending();
      s->stage = galv_pipe_dev->alloc((size_t)n);
      s->whole = whole, s->x = x, s->t = t;
      memcpy(s->off, loff, sizeof loff);
      p = s->stage;
    }
    galv_recv(world, galv_pipe_first_rank[x->from] + t->src, p, (size_t)n, GALV_U8, q);
  }
  if (x->allgather && nl > 1) *push_gather() = (struct gather){x, whole, NULL, NULL};
}

void galv_pipe_xfer_complete(galv_queue *q) {
  galv_queue_sync(q);
  for (int i = 0; i < npend; i++) {
    if (pend[i].whole) box_copy_local(pend[i].x, pend[i].stage, pend[i].whole, pend[i].off, pend[i].t->len, 0);
    galv_pipe_dev->release(pend[i].stage);
  }
  npend = 0;
  if (!ngath) return;
  /* the local all-gathers, inside the receiving stage, in the order the receives were posted */
  int64_t k = nl;
  galv_comm *c = galv_comm_group(&k, 1, 1);
  for (int i = 0; i < ngath; i++) {
    struct gather *g = &gath[i];
    const galv_pipe_xfer *x = g->x;
    if (x->scatter > 1) { /* in place inside the q consecutive ranks holding the block (mesh nl / q x q, inner axis) */
      const int64_t sh[2] = {nl / x->scatter, x->scatter};
      int64_t off, n = scat_chunk(x, &off);
      galv_all_gather(galv_comm_group(sh, 2, 2u), g->whole + off, g->whole, (size_t)n, GALV_U8, q);
      continue;
    }
    size_t es = galv_dtype_size(x->dtype);
    int64_t off[GALV_RT_MAX_RANK], len[GALV_RT_MAX_RANK], n = recv_box(x, lr, off, len);
    int inplace = 1;
    for (int r = 0; r < nl && inplace; r++) {
      int64_t o2[GALV_RT_MAX_RANK], l2[GALV_RT_MAX_RANK];
      if (recv_box(x, r, o2, l2) != n) galv_fatal("pipeline table: transfer '%s': the receivers' boxes differ in size", x->name);
      inplace = box_flat(x, o2, l2) * (int64_t)es == (int64_t)r * n;
    }
    if (inplace) {
      galv_all_gather(c, g->whole + (size_t)lr * (size_t)n, g->whole, (size_t)n, GALV_U8, q);
      continue;
    }
    g->mine = galv_pipe_dev->alloc((size_t)n);
    g->all = galv_pipe_dev->alloc((size_t)n * (size_t)nl);
    box_copy(x, g->whole, g->mine, off, len, 1);
    galv_all_gather(c, g->mine, g->all, (size_t)n, GALV_U8, q);
  }
  galv_queue_sync(q);
  for (int i = 0; i < ngath; i++) {
    struct gather *g = &gath[i];
    if (!g->all) continue;
    int64_t off[GALV_RT_MAX_RANK], len[GALV_RT_MAX_RANK];
    for (int r = 0; r < nl; r++) {
      int64_t n = recv_box(g->x, r, off, len);
      if (r != lr) box_copy(g->x, g->all + (size_t)r * (size_t)n, g->whole, off, len, 0);
    }
    galv_pipe_dev->release(g->mine), galv_pipe_dev->release(g->all);
  }
  ngath = 0;
}

void galv_pipe_xfer_report(long runs, uint64_t other) {
  uint64_t total = galv_comm_counters().send;
  if (total != measured[0] + measured[1] + other)
    galv_fatal("stage %d rank %d: the communicator sent %llu bytes, the cross-stage transfers %llu (and %llu of shared "
               "parameters' gradients)", me, lr, (unsigned long long)total, (unsigned long long)(measured[0] + measured[1]),
               (unsigned long long)other);
  static const char *const dir[2] = {"forward", "gradients"};
  for (int g = 0; g < 2; g++)
    if (measured[g] != plan_run[g] * (uint64_t)runs)
      galv_fatal("stage %d rank %d: %s: sent %llu bytes to the other stages, the cross-mesh plan says %llu (%llu per microbatch)",
                 me, lr, dir[g], (unsigned long long)measured[g], (unsigned long long)(plan_run[g] * (uint64_t)runs),
                 (unsigned long long)plan_run[g]);
  for (int g = 0; g < 2; g++)
    if (out_run[g])
      printf("%s: cross-stage %s bytes sent by this rank: %llu measured, %llu planned; by the stage: %llu planned, %llu naive "
             "(%ld microbatches); values kept split over the batch %d, whole %d, scattered over the ranks of a block %d\n",
             galv_progname, dir[g], (unsigned long long)measured[g], (unsigned long long)(plan_run[g] * (uint64_t)runs),
             (unsigned long long)(out_run[g] * (uint64_t)runs), (unsigned long long)(naive_run[g] * (uint64_t)runs), runs,
             split_run[g] + scat_run[g], whole_run[g], scat_run[g]);
  fflush(stdout);
  free(pend), free(gath), free(views), free(scat_n);
  pend = NULL, gath = NULL, views = NULL, scat_n = NULL;
  cappend = capgath = 0;
}
#else
typedef int galv_pipe_xfer_unused; /* ISO C: a translation unit is not empty */
#endif
