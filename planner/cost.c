/* cost.c — the cost model (cost.h, docs/cluster.md). FLOPs follow each
 * op's semantics in ir/ops.def; bytes are what the CPU / CUDA kernels move
 * through device memory; time is the roofline max of the two. Collective
 * times are the alpha-beta formulas of REFERENCES.md with NCCL's bus
 * bandwidth as B. All results are integer nanoseconds (GB/s = bytes/ns).
 * It must never rewrite IR or decide anything: the planner does. */
#include "cost.h"

#include <math.h>
#include <stdlib.h>
#include "ir/comm_sync.h"
#include "ir/storage.h"
#include <stdio.h>
#include <string.h>

static int64_t numel(const gv_type *t) {
  int64_t n = gv_type_numel(t);
  return n < 0 ? -1 : n;
}

static int64_t tbytes(const gv_type *t) {
  int64_t n = numel(t);
  return n < 0 ? -1 : n * (int64_t)gv_dtype_size(t->dtype);
}

/* Bytes of t (v's type, or a local shape of v) as v is stored: an f32 value
 * the storage pass stores 16-bit moves 2 bytes per element (ir/storage.h). */
static int64_t sbytes(const gv_type *t, const gv_value *v) {
  int64_t n = numel(t);
  gv_dtype d = v && v->type.dtype == t->dtype ? gv_value_storage(v) : t->dtype;
  return n < 0 ? -1 : n * (int64_t)gv_dtype_size(d);
}

/* FLOPs per result element of elementwise ops: 1 for arithmetic and
 * comparisons, 0 for pure data (cast, logic), more for composite
 * functions (gelu: the tanh form's ~8 operations; silu: x * sigmoid(x)). */
static int64_t per_element(gv_opcode c) {
  switch (c) {
  case GV_OP_CAST: case GV_OP_NOT: case GV_OP_AND: case GV_OP_OR: return 0;
  case GV_OP_GELU: return 8;
  case GV_OP_SILU: return 4;
  default: return 1;
  }
}

/* Per-element FLOPs of the normalisations (of the operand's elements):
 * softmax max, subtract, exp, sum, divide; layer norm mean, subtract,
 * square, sum, rsqrt-scale, scale, shift and a spare; RMS norm square, sum,
 * rsqrt-scale, scale and a spare. */
enum { SOFTMAX_FLOPS = 5, LAYER_NORM_FLOPS = 8, RMS_NORM_FLOPS = 5, CROSS_ENTROPY_FLOPS = 5 };
/* galv.dropout (and its gradient, the same op on dy) per element: the
 * mask's hash (runtime/galv_rng.h: one 64-bit multiply-add per coordinate
 * and the splitmix64 finaliser's two multiplies, three shifts and xors,
 * counted as ~14 operations for a rank-4 tensor), the compare, the scale
 * and the select. A memory-bound pass on every target: it reads x (in its
 * storage, 16-bit under --precision bf16) and writes y; no mask is stored
 * or read (bytes_of's default). */
enum { DROPOUT_FLOPS = 16 };

static int64_t block_flops(const gv_block *b);

static int64_t flops_of(const gv_op *op, const gv_type *const *in, const gv_type *const *out) {
  const gv_opinfo *info = &gv_ops[op->code];
  int64_t r0 = op->nres ? numel(out[0]) : 0;
  int64_t x0 = op->nopnds ? numel(in[0]) : 0;
  switch (op->code) {
  case GV_OP_DOT: {
    const int64_t *lc;
    int nc = gv_get_ints(op, "lhs_contract", &lc);
    int64_t k = 1;
    for (int i = 0; i < nc; i++) {
      int64_t d = lc[i] < 0 ? lc[i] + in[0]->rank : lc[i];
      if (d >= 0 && d < in[0]->rank) k *= in[0]->dims[d];
    }
    return 2 * r0 * k;
  }
  case GV_OP_CONV: {
    const gv_type *w = in[1];
    int64_t per = w->rank > 0 && w->dims[0] > 0 ? numel(w) / w->dims[0] : 0; /* Cin/group * kernel */
    return 2 * r0 * per + (op->nopnds > 2 ? r0 : 0);
  }
  case GV_OP_CONV_GRAD_INPUT: /* (dy, w) */
  case GV_OP_CONV_GRAD_WEIGHT: { /* (x, dy) -> w */
    const gv_type *w = op->code == GV_OP_CONV_GRAD_INPUT ? in[1] : out[0];
    const gv_type *dy = op->code == GV_OP_CONV_GRAD_INPUT ? in[0] : in[1];
    int64_t per = w->rank > 0 && w->dims[0] > 0 ? numel(w) / w->dims[0] : 0;
    return 2 * numel(dy) * per;
  }
  case GV_OP_POOL: case GV_OP_POOL_GRAD: { /* one compare or add per window element of each output (dy) */
    const int64_t *kv;
    int nk = gv_get_ints(op, "kernel", &kv);
    int64_t kk = 1;
    for (int i = 0; i < nk; i++) kk *= kv[i] > 0 ? kv[i] : 0;
    return kk * (op->code == GV_OP_POOL ? r0 : numel(in[1]));
  }
  case GV_OP_ATTENTION: case GV_OP_ATTENTION_GRAD: { /* docs/fused-attention.md: no S x S value is stored */
    const gv_type *q = in[0];
    int nb = q->rank - 2;
    if (nb < 0 || q->dims[nb] <= 0 || q->dims[nb + 1] <= 0) return 0;
    int64_t D = q->dims[nb + 1], rows = numel(q) / D, B = rows / q->dims[nb];
    int64_t Sk = B > 0 ? numel(in[1]) / (B * D) : 0, Dv = B > 0 && Sk > 0 ? numel(in[2]) / (B * Sk) : 0;
    int64_t ss = rows * Sk; /* scores, recomputed tile by tile */
    if (op->code == GV_OP_ATTENTION) return 2 * ss * D + 2 * ss * Dv + SOFTMAX_FLOPS * ss;
    /* scores again, dV = P^T dO, dP = dO V^T, dQ = dS K, dK = dS^T Q, the softmax backward */
    return 2 * ss * D * 3 + 2 * ss * Dv * 2 + SOFTMAX_FLOPS * ss + 4 * ss;
  }
  case GV_OP_SOFTMAX: case GV_OP_LOG_SOFTMAX: return SOFTMAX_FLOPS * x0;
  case GV_OP_DROPOUT: return DROPOUT_FLOPS * r0;
  case GV_OP_LAYER_NORM: return LAYER_NORM_FLOPS * x0;
  case GV_OP_RMS_NORM: return RMS_NORM_FLOPS * x0;
  case GV_OP_CROSS_ENTROPY: return CROSS_ENTROPY_FLOPS * x0;
  case GV_OP_CROSS_ENTROPY_GRAD: return CROSS_ENTROPY_FLOPS * numel(in[1]);
  case GV_OP_REDUCE_SUM: case GV_OP_REDUCE_MAX: case GV_OP_REDUCE_MIN: case GV_OP_CUMSUM: return x0;
  case GV_OP_REDUCE_MEAN: return x0 + r0;
  case GV_OP_GATHER_GRAD: return x0; /* scatter-add of dy */
  case GV_OP_ALL_REDUCE: case GV_OP_REDUCE_SCATTER: return x0;
  case GV_OP_FUSED: {
    if (!op->nregions) return 0;
    int64_t f = block_flops(op->regions[0]);
    /* Local (sharded) shapes scale the body's work with the iteration shape. */
    int64_t g = op->nres ? numel(&op->res[0]->type) : 0;
    return g > 0 && r0 >= 0 && r0 != g ? (int64_t)((double)f * (double)r0 / (double)g) : f;
  }
  case GV_OP_IF: {
    int64_t best = 0;
    for (int r = 0; r < op->nregions; r++) {
      int64_t f = block_flops(op->regions[r]);
      if (f > best) best = f;
    }
    return best;
  }
  default:
    if (info->flags & GV_ELEMENTWISE) return per_element(op->code) * r0;
    return 0; /* data movement, views, constants, metadata */
  }
}

static int types_of(const gv_op *op, const gv_type *opnd, const gv_type *res, const gv_type **in, const gv_type **out) {
  for (int i = 0; i < op->nopnds; i++) {
    in[i] = opnd ? &opnd[i] : &op->opnds[i]->type;
    if (!gv_type_is_static(in[i])) return -1;
  }
  for (int i = 0; i < op->nres; i++) {
    out[i] = res ? &res[i] : &op->res[i]->type;
    if (!gv_type_is_static(out[i])) return -1;
  }
  return 0;
}

enum { MAX_VALS = 256 };

static int64_t block_flops(const gv_block *b) {
  int64_t total = 0;
  for (const gv_op *op = b->first; op; op = op->next) {
    int64_t f = gv_op_flops(op, NULL, NULL);
    if (f > 0) total += f;
  }
  return total;
}

int64_t gv_op_flops(const gv_op *op, const gv_type *opnd, const gv_type *res) {
  const gv_type *in[MAX_VALS], *out[MAX_VALS];
  if (op->nopnds > MAX_VALS || op->nres > MAX_VALS || types_of(op, opnd, res, in, out)) return -1;
  int64_t f = flops_of(op, in, out);
  return f < 0 ? -1 : f;
}

/* Bytes through device memory. Views alias their operand; gather and slice
 * read only what they return; the scatter ops write a zeroed result. */
static int64_t bytes_of(const gv_op *op, const gv_type *const *in, const gv_type *const *out) {
  const gv_opinfo *info = &gv_ops[op->code];
  if (info->flags & (GV_VIEW | GV_TERMINATOR)) return 0;
  switch (op->code) {
  case GV_OP_CONSTANT: case GV_OP_SHAPE: case GV_OP_ARENA: case GV_OP_RESHARD: case GV_OP_AXIS_INDEX:
    return 0;
  case GV_OP_ALL_REDUCE: case GV_OP_ALL_GATHER: case GV_OP_REDUCE_SCATTER: case GV_OP_ALL_TO_ALL:
    return 0; /* communication: gv_cost_collective */
  case GV_OP_GATHER: return 2 * sbytes(out[0], op->res[0]) + tbytes(in[1]);
  case GV_OP_SLICE: case GV_OP_SHARD_SLICE: return 2 * sbytes(out[0], op->res[0]);
  case GV_OP_IF: {
    int64_t b = 0;
    for (int i = 0; i < op->nres; i++) b += sbytes(out[i], op->res[i]);
    return b;
  }
  default: {
    /* A GEMM or convolution reading 16-bit inputs (input_storage) reads
     * each operand 16-bit; one stored wider is first converted (read at its
     * storage, written 16-bit: the CUDA emitter's scratch copy). */
    gv_dtype is = op->code == GV_OP_DOT || op->code == GV_OP_CONV ? gv_op_input_storage(op) : GV_DT_COUNT;
    int64_t b = 0;
    for (int i = 0; i < op->nopnds; i++) {
      int64_t s = sbytes(in[i], op->opnds[i]);
      if (is != GV_DT_COUNT && in[i]->dtype == GV_DT_F32 && gv_dtype_size(is) < 4) {
        int64_t h = numel(in[i]) * (int64_t)gv_dtype_size(is);
        if (s > h) s += 2 * h; /* the conversion: read s, write h; the kernel reads h */
      }
      b += s;
    }
    for (int i = 0; i < op->nres; i++) b += sbytes(out[i], op->res[i]);
    return b;
  }
  }
}

/* GEMMs and convolutions run at the peak of the dtype they read their
 * inputs in (16-bit under --precision bf16: input_storage), not of the
 * IR's f32; other ops are memory-bound in practice and keep their dtype. */
static gv_dtype compute_dtype(const gv_op *op, const gv_type *const *in, const gv_type *const *out) {
  if (op->code == GV_OP_DOT || op->code == GV_OP_CONV) {
    gv_dtype d = gv_op_input_storage(op);
    return in[0]->dtype == GV_DT_F32 ? d : in[0]->dtype;
  }
  if (op->nres) return out[0]->dtype;
  return op->nopnds ? in[0]->dtype : GV_DT_F32;
}

static int64_t ceil_ns(double ns) {
  if (!(ns > 0)) return 0;
  if (ns > 9.0e18) return INT64_MAX / 4;
  return (int64_t)ceil(ns - 1e-6); /* a hair below an integer stays that integer */
}

int gv_cost_op(const gv_cluster *c, const gv_op *op, const gv_type *opnd, const gv_type *res, gv_op_cost *out) {
  memset(out, 0, sizeof *out);
  const gv_type *in[MAX_VALS], *ot[MAX_VALS];
  if (op->nopnds > MAX_VALS || op->nres > MAX_VALS || types_of(op, opnd, res, in, ot)) return -1;
  int64_t f = flops_of(op, in, ot), b = bytes_of(op, in, ot);
  if (f < 0 || b < 0) return -1;
  out->flops = f;
  out->bytes = b;
  double tc = f ? (double)f / gv_cluster_flops(c, compute_dtype(op, in, ot)) * 1e9 : 0;
  double tm = b ? (double)b / (c->memory_gbps * c->memory_efficiency) : 0; /* GB/s = bytes/ns */
  out->compute_bound = f && tc >= tm;
  out->ns = ceil_ns(tc > tm ? tc : tm);
  return 0;
}

int gv_cost_attention_chains(const gv_cluster *c, const gv_module *m, gv_attn_chain *out) {
  int n = 0;
  if (!c->fused_attention || !m->main) return 0;
  gv_attn_uses *ix = gv_attn_uses_new(m->main->body); /* NULL (out of memory): each match scans */
  for (const gv_op *op = m->main->body->first; op && n < GV_ATTN_MAX; op = op->next)
    if (op->code == GV_OP_DOT && gv_attn_match_in(op, &out[n], ix)) n++;
  gv_attn_uses_free(ix);
  return n;
}

int gv_cost_attention_op(const gv_cluster *c, const gv_attn_chain *ch, int n, const gv_op *op, gv_op_cost *out) {
  const gv_attn_chain *a = NULL;
  for (int i = 0; i < n && !a; i++)
    if (op == ch[i].d1 || op == ch[i].mid || op == ch[i].sm || op == ch[i].d2) a = &ch[i];
  if (!a) return 0;
  memset(out, 0, sizeof *out);
  if (op != a->d1) return 1;
  const gv_op *ops[4] = {a->d1, a->mid, a->sm, a->d2};
  int64_t f = 0, b = gv_value_storage_bytes(a->d1->opnds[0]) + gv_value_storage_bytes(a->d1->opnds[1]) +
                     gv_value_storage_bytes(a->d2->opnds[1]) + gv_value_storage_bytes(a->d2->res[0]);
  for (int i = 0; i < 4; i++) {
    int64_t fi = ops[i] ? gv_op_flops(ops[i], NULL, NULL) : 0;
    if (fi > 0) f += fi;
  }
  for (int i = 0; a->mid && i < a->mid->nopnds; i++) /* mask / scale, read by the score functor */
    if (i != a->score_opnd) b += gv_value_storage_bytes(a->mid->opnds[i]);
  out->flops = f;
  out->bytes = b;
  /* fp32 peak in either storage: the fused kernel (runtime/cuda/attention.cuh) reads 16-bit values but computes
   * on the CUDA cores in float, not on the tensor cores the bf16 peak counts */
  double tc = f ? (double)f / gv_cluster_flops(c, GV_DT_F32) * 1e9 : 0;
  double tm = b ? (double)b / (c->memory_gbps * c->memory_efficiency) : 0;
  out->compute_bound = f && tc >= tm;
  out->ns = ceil_ns(tc > tm ? tc : tm);
  return 1;
}

const char *gv_coll_name(gv_coll_kind k) {
  static const char *const names[] = {"all_reduce", "all_gather", "reduce_scatter", "all_to_all", "p2p", "broadcast"};
  return (unsigned)k < GV_COLL_COUNT ? names[k] : "?";
}

/* One level: p ranks, latency a (ns), bus bandwidth B (bytes/ns). */
static double one_level(gv_coll_kind kind, double n, double p, double a, double B) {
  switch (kind) {
  case GV_COLL_ALL_REDUCE: return 2 * (p - 1) * a + 2 * (p - 1) / p * n / B;
  case GV_COLL_ALL_GATHER: case GV_COLL_REDUCE_SCATTER: case GV_COLL_ALL_TO_ALL:
    return (p - 1) * a + (p - 1) / p * n / B;
  case GV_COLL_BROADCAST: return (p - 1) * a + n / B;
  case GV_COLL_P2P: return a + n / B;
  default: return 0;
  }
}

int64_t gv_cost_collective_levels(const gv_cluster *c, gv_coll_kind kind, int64_t bytes, int64_t per_node,
                                  int64_t nodes) {
  if (bytes <= 0 || per_node < 1 || nodes < 1) return 0;
  double n = (double)bytes, k = (double)per_node, m = (double)nodes, p = k * m;
  double ai = c->intra_latency_us * 1e3, bi = c->intra_gbps, ae = c->inter_latency_us * 1e3, be = c->inter_gbps;
  if (kind == GV_COLL_P2P) return ceil_ns(nodes > 1 ? ae + n / be : ai + n / bi);
  if (p <= 1) return 0;
  if (nodes == 1) return ceil_ns(one_level(kind, n, k, ai, bi));
  if (per_node == 1) return ceil_ns(one_level(kind, n, m, ae, be));
  double t;
  switch (kind) {
  case GV_COLL_ALL_REDUCE: /* reduce-scatter in the node, all-reduce of n/k across, all-gather in the node */
    t = 2 * (k - 1) * ai + 2 * (k - 1) / k * n / bi + 2 * (m - 1) * ae + 2 * (m - 1) / m * (n / k) / be;
    break;
  case GV_COLL_ALL_GATHER: case GV_COLL_REDUCE_SCATTER: /* half of the all-reduce's two levels */
    t = (k - 1) * ai + (k - 1) / k * n / bi + (m - 1) * ae + (m - 1) / m * (n / k) / be;
    break;
  case GV_COLL_ALL_TO_ALL: /* the (k-1)/p share stays in the node, the (p-k)/p share leaves through the NIC */
    t = (k - 1) * ai + (k - 1) / p * n / bi + (m - 1) * ae + (p - k) / p * n / be;
    break;
  case GV_COLL_BROADCAST: /* pipelined chain whose slowest link is the network */
    t = (k - 1) * ai + (m - 1) * ae + n / be;
    break;
  default: t = 0;
  }
  return ceil_ns(t);
}

int64_t gv_cost_collective(const gv_cluster *c, gv_coll_kind kind, int64_t bytes, int64_t group, bool spans_nodes) {
  if (group < 1) return 0;
  if (kind == GV_COLL_P2P) return gv_cost_collective_levels(c, kind, bytes, 1, spans_nodes ? 2 : 1);
  if (!spans_nodes) return gv_cost_collective_levels(c, kind, bytes, group, 1);
  int64_t k = group > c->devices_per_node && group % c->devices_per_node == 0 ? c->devices_per_node : 1;
  return gv_cost_collective_levels(c, kind, bytes, k, group / k);
}

/* Members of the group over the axes in `mask` that share a node with
 * rank 0 (ranks row-major over the mesh, nodes of k consecutive ranks). */
static void group_layout(const gv_cluster *c, const gv_mesh *mesh, unsigned mask, int64_t *per_node, int64_t *nodes) {
  int64_t stride[GV_MAX_MESH_AXES], group = 1, k = c->devices_per_node, s = 1;
  for (int a = mesh->naxes - 1; a >= 0; a--) stride[a] = s, s *= mesh->size[a];
  for (int a = 0; a < mesh->naxes; a++)
    if (mask >> a & 1) group *= mesh->size[a];
  int64_t in_node = 0;
  for (int64_t g = 0; g < group; g++) { /* g's digits over the masked axes, last axis fastest */
    int64_t r = 0, rest = g;
    for (int a = mesh->naxes - 1; a >= 0; a--)
      if (mask >> a & 1) r += (rest % mesh->size[a]) * stride[a], rest /= mesh->size[a];
    if (r < k) in_node++;
  }
  if (in_node < 1) in_node = 1;
  *per_node = in_node;
  *nodes = (group + in_node - 1) / in_node;
}

int64_t gv_cost_mesh_group(const gv_cluster *c, const gv_mesh *mesh, unsigned mask, gv_coll_kind kind, int64_t bytes) {
  mask &= (1u << mesh->naxes) - 1;
  if (!mask) return 0;
  int64_t per_node, nodes;
  group_layout(c, mesh, mask, &per_node, &nodes);
  if (kind == GV_COLL_P2P) return gv_cost_collective_levels(c, kind, bytes, 1, nodes > 1 ? 2 : 1);
  return gv_cost_collective_levels(c, kind, bytes, per_node, nodes);
}

int64_t gv_cost_mesh_axis(const gv_cluster *c, const gv_mesh *mesh, int axis, gv_coll_kind kind, int64_t bytes) {
  if (axis < 0 || axis >= mesh->naxes) return 0;
  return gv_cost_mesh_group(c, mesh, 1u << axis, kind, bytes);
}

int64_t gv_cost_collective_op(const gv_cluster *c, const gv_module *m, const gv_op *op) {
  gv_coll_kind kind;
  switch (op->code) {
  case GV_OP_ALL_REDUCE: kind = GV_COLL_ALL_REDUCE; break;
  case GV_OP_ALL_GATHER: kind = GV_COLL_ALL_GATHER; break;
  case GV_OP_REDUCE_SCATTER: kind = GV_COLL_REDUCE_SCATTER; break;
  case GV_OP_ALL_TO_ALL: kind = GV_COLL_ALL_TO_ALL; break;
  default: return 0;
  }
  const gv_mesh *mesh = gv_module_mesh(m, gv_get_str(op, "mesh", ""));
  const gv_attr *ax = gv_get_attr(op, "axes");
  if (!mesh || !ax || ax->kind != GV_ATTR_STRS || op->nopnds < 1 || op->nres < 1) return -1;
  unsigned mask = 0;
  for (int i = 0; i < ax->u.strs.n; i++) {
    int a = gv_mesh_axis(mesh, ax->u.strs.v[i], strlen(ax->u.strs.v[i]));
    if (a < 0) return -1;
    mask |= 1u << a;
  }
  /* n: the full buffer (docs/sharding.md): the gathered result for all_gather, else the operand, as stored
   * (a value stored 16-bit moves 2 bytes per element) */
  int64_t n = gv_value_storage_bytes(kind == GV_COLL_ALL_GATHER ? op->res[0] : op->opnds[0]);
  if (n < 0) return -1;
  int64_t per_node, nodes;
  group_layout(c, mesh, mask, &per_node, &nodes);
  return gv_cost_collective_levels(c, kind, n, per_node, nodes);
}

/* ---------------------------------------------------------------- two-stream timeline
 *
 * The program's ops in order, as both targets run them (docs/planner.md,
 * "Step time"): compute ops one after another on the compute stream; each
 * collective is posted when the compute stream reaches it and runs on the
 * communication stream when that is free (one queue, in order); an op the
 * sync rule (ir/comm_sync.h, the emitters' rule) stops first waits until
 * everything posted has completed. A compute op that runs while the
 * communication stream is busy is slowed by the cluster's overlap_slowdown
 * for the overlapped part: over the w ns the stream stays busy, it does
 * w / s ns of its work. */
static int64_t slowed(int64_t d, int64_t w, double s) {
  if (d <= 0 || w <= 0 || !(s > 1)) return d;
  double ds = (double)d * s;
  if (ds <= (double)w) return ceil_ns(ds);
  return ceil_ns((double)w + ((double)d - (double)w / s));
}

typedef struct {
  int idx;
  int64_t start, end;
} coll_run;

/* The compute stream waits from t until `until` (the communication
 * stream's end): each collective running in that window gets the part of
 * the wait it runs in (the stream is busy throughout, so the parts sum to
 * the wait). */
static void charge_wait(int64_t *adv, const coll_run *run, int nrun, int64_t t, int64_t until) {
  for (int k = nrun - 1; k >= 0 && run[k].end > t; k--) {
    int64_t a = run[k].start > t ? run[k].start : t, b = run[k].end < until ? run[k].end : until;
    if (b > a) adv[run[k].idx] += b - a;
  }
}

int gv_cost_timeline(const gv_cluster *c, const gv_module *m, gv_timeline *out, int64_t *adv) {
  return gv_cost_timeline_ns(c, m, out, adv, NULL);
}

int gv_cost_timeline_ns(const gv_cluster *c, const gv_module *m, gv_timeline *out, int64_t *adv, int64_t *op_ns) {
  return gv_cost_timeline_free(c, m, out, adv, op_ns, NULL);
}

int gv_cost_timeline_free(const gv_cluster *c, const gv_module *m, gv_timeline *out, int64_t *adv, int64_t *op_ns,
                          const bool *free_coll) {
  memset(out, 0, sizeof *out);
  if (!m->main) return 0;
  double s = c->overlap_slowdown >= 1 ? c->overlap_slowdown : 1;
  out->slowdown = s;
  gv_attn_chain att[GV_ATTN_MAX];
  int natt = gv_cost_attention_chains(c, m, att);
  gv_comm_sync sync;
  gv_comm_sync_init(&sync, m);
  int64_t t = 0, free_at = 0; /* the compute stream's time; when the communication stream is free */
  coll_run *run = NULL;       /* the collectives posted, in order (adv only) */
  int nrun = 0, caprun = 0, idx = 0;
  for (const gv_op *op = m->main->body->first; op; op = op->next, idx++) {
    if (adv) adv[idx] = 0;
    if (op_ns) op_ns[idx] = -1;
    if (gv_comm_sync_before(&sync, op)) {
      if (free_at > t) {
        out->nwait++;
        if (adv) charge_wait(adv, run, nrun, t, free_at);
        t = free_at;
      }
      gv_comm_sync_clear(&sync);
    } else {
      int k = gv_comm_sync_prefix(&sync, op); /* the overlap window: the oldest calls in flight, to the k-th's end */
      if (k > 0 && k <= sync.n) {
        int64_t until = sync.p[k - 1].end;
        if (until > t) {
          out->nwait++;
          if (adv) charge_wait(adv, run, nrun, t, until);
          t = until;
        }
        gv_comm_sync_drop(&sync, k);
      }
    }
    if (gv_comm_is_collective(op)) {
      int64_t ns = free_coll && free_coll[idx] ? 0 : gv_cost_collective_op(c, m, op);
      out->ncomm++;
      if (ns < 0) out->comm_unknown++, ns = 0;
      if (op_ns) op_ns[idx] = ns;
      out->comm_ns += ns;
      int64_t start = free_at > t ? free_at : t;
      free_at = start + ns;
      if (adv && nrun == caprun) {
        int cap = caprun ? 2 * caprun : 64;
        coll_run *n = realloc(run, sizeof *n * (size_t)cap);
        if (!n) abort();
        run = n, caprun = cap;
      }
      if (adv) run[nrun++] = (coll_run){idx, start, free_at};
      if (gv_comm_sync_at_once(op)) {
        if (free_at > t) {
          out->nwait++;
          if (adv) charge_wait(adv, run, nrun, t, free_at);
          t = free_at;
        }
        gv_comm_sync_clear(&sync);
      } else {
        gv_comm_sync_post(&sync, op);
        sync.p[sync.n - 1].end = free_at;
      }
      continue;
    }
    gv_op_cost oc;
    if (!gv_cost_attention_op(c, att, natt, op, &oc) && gv_cost_op(c, op, NULL, NULL, &oc)) continue;
    if (op_ns) op_ns[idx] = oc.ns;
    int64_t d = slowed(oc.ns, free_at - t, s);
    out->compute_ns += oc.ns;
    out->slowdown_ns += d - oc.ns;
    if (free_at > t) out->overlapped_ns += free_at - t < d ? free_at - t : d;
    if (adv) adv[idx] += d;
    t += d;
  }
  if (free_at > t) { /* the run ends when its last collective does */
    if (adv) charge_wait(adv, run, nrun, t, free_at);
    out->nwait++;
    t = free_at;
  }
  free(run);
  gv_comm_sync_free(&sync);
  out->step_ns = t;
  out->exposed_ns = t - out->compute_ns - out->slowdown_ns;
  return idx;
}

static int64_t align64(int64_t b) { return (b + 63) / 64 * 64; }

/* Under 16-bit storage the CUDA program converts, per kernel call, the
 * operands its kernel reads in another storage through scratch (codegen/cuda
 * emit_kernel): a GEMM's fp32 operands (parameters: the fp32 master
 * weights) to bf16, a norm's fp32 scale and bias to its result's storage,
 * and writes a 16-bit-stored parameter gradient of an fp32 kernel
 * (gather_grad, conv_grad_weight) to fp32 scratch first. No persistent
 * 16-bit copy of the weights exists: the most bytes of one call count. */
int64_t (*gv_cost_convert_fn)(const gv_module *m);

static int64_t convert_scratch(const gv_block *b) {
  int64_t most = 0;
  for (const gv_op *op = b->first; op; op = op->next) {
    int64_t n = 0;
    bool narrow = op->nres && gv_value_storage(op->res[0]) != op->res[0]->type.dtype;
    if (op->code == GV_OP_DOT || op->code == GV_OP_CONV || ((op->code == GV_OP_LAYER_NORM || op->code == GV_OP_RMS_NORM) && narrow)) {
      gv_dtype is = op->code == GV_OP_DOT || op->code == GV_OP_CONV ? gv_op_input_storage(op) : gv_value_storage(op->res[0]);
      for (int i = 0; i < op->nopnds && gv_dtype_size(is) < 4; i++) {
        const gv_value *v = op->opnds[i];
        if (v->type.dtype == GV_DT_F32 && gv_value_storage(v) == GV_DT_F32 && numel(&v->type) > 0)
          n += align64(numel(&v->type) * (int64_t)gv_dtype_size(is));
      }
    } else if ((op->code == GV_OP_GATHER_GRAD || op->code == GV_OP_CONV_GRAD_WEIGHT) && narrow && numel(&op->res[0]->type) > 0) {
      n = align64(numel(&op->res[0]->type) * 4);
    }
    if (n > most) most = n;
  }
  return most;
}

void gv_cost_memory(const gv_module *m, gv_mem *out) {
  memset(out, 0, sizeof *out);
  const gv_func *f = m->main;
  const gv_op *a = f->body->first;
  if (a && a->code != GV_OP_ARENA) a = NULL;
  out->arena = a ? gv_get_int(a, "bytes", 0) : 0;
  if (a && gv_get_int(a, "param_bytes", -1) >= 0) {
    out->params = gv_get_int(a, "param_bytes", 0);
    out->grads = gv_get_int(a, "grad_bytes", 0);
    out->optimizer = gv_get_int(a, "optimizer_bytes", 0);
    out->activations = gv_get_int(a, "activation_bytes", 0);
    out->working_copy = gv_get_int(a, "working_copy_bytes", 0);
  } else {
    for (int i = 0; i < f->body->nargs; i++) {
      int64_t b = tbytes(&f->body->args[i]->type);
      if (b < 0) continue;
      if (f->arg_is_param && f->arg_is_param[i]) out->params += b;
      else if (f->arg_is_state && f->arg_is_state[i]) out->optimizer += b;
    }
    out->activations = a ? gv_get_int(a, "lower_bound", out->arena) : 0;
  }
  /* constants live in the weights buffer after the parameters, each 64-byte aligned (both emitters) */
  int64_t coll = 0;
  for (const gv_op *op = f->body->first; op; op = op->next) {
    int64_t b = op->code == GV_OP_CONSTANT ? tbytes(&op->res[0]->type) : 0;
    if (b > 0) out->constants += (b + 63) / 64 * 64;
    if ((op->code == GV_OP_ALL_REDUCE || op->code == GV_OP_ALL_GATHER || op->code == GV_OP_REDUCE_SCATTER ||
         op->code == GV_OP_ALL_TO_ALL) && op->nopnds && op->nres && !gv_get_attr(op, "bucket")) {
      /* the scratch buffers are sized by every collective but a gradient bucket (passes/bucket.c), which
       * never goes through them (its buffer is contiguous already): codegen/comm.c sizes them so */
      int64_t in = tbytes(&op->opnds[0]->type), o = tbytes(&op->res[0]->type);
      if (in > coll) coll = in;
      if (o > coll) coll = o;
    }
  }
  out->comm = 2 * coll;
  out->convert = gv_cost_convert_fn ? gv_cost_convert_fn(m) : -1;
  if (out->convert < 0) out->convert = convert_scratch(f->body);
  /* Gradients and activations live in the arena; parameters and optimizer
   * state in the weights / state buffer beside it. */
  out->total = out->params + out->optimizer + out->arena + out->constants + out->comm + out->convert;
}

int64_t gv_mem_model_states(int64_t nparams, int zero_stage, int64_t dp) {
  if (dp < 1) dp = 1;
  int64_t w = 2 * nparams, g = 2 * nparams, o = 12 * nparams; /* bf16 weight, bf16 grad, fp32 master + 2 moments */
  if (zero_stage >= 1) o = (o + dp - 1) / dp;
  if (zero_stage >= 2) g = (g + dp - 1) / dp;
  if (zero_stage >= 3) w = (w + dp - 1) / dp;
  return w + g + o;
}

bool gv_mem_fits(const gv_cluster *c, const gv_mem *m) { return m->total <= c->memory_bytes; }

/* ---------------------------------------------------------------- report */

static void human(char *buf, size_t n, double v, const char *unit) {
  static const char *const pre[] = {"", "K", "M", "G", "T", "P", "E"};
  int i = 0;
  while (v >= 1000 && i < 6) v /= 1000, i++;
  snprintf(buf, n, i ? "%.2f %s%s" : "%.0f %s%s", v, pre[i], unit);
}

typedef struct {
  int64_t flops, dot_flops, bytes, ns, compute_ns, memory_ns;
  int64_t comm_ns;
  int nops, ncompute, nzero, ncomm, comm_unknown;
} totals;

static unsigned axes_of(const gv_sharding *s) {
  unsigned m = 0;
  for (int d = 0; s && d < s->rank; d++)
    for (int a = 0; a < s->naxes[d]; a++) m |= 1u << s->axes[d][a];
  return m;
}

/* copy: the step reads a whole 16-bit working copy of the parameter (ZeRO-1/2 under 16-bit training: the
 * split parameter is the fp32 master, not stage 3) */
static unsigned param_stage(const gv_func *f, int i, int state, bool sliced, unsigned batch, bool copy) {
  unsigned pa = axes_of(f->arg_sharding[i]), sa = axes_of(f->arg_sharding[state]);
  return pa & batch && !copy ? 3 : sa & batch ? (sliced ? 1 : 2) : 0;
}

static void print_stages(FILE *out, bool *any, const char *first, const char *last, unsigned mask) {
  fprintf(out, "%s%s", *any ? "; " : "zero stages: ", first);
  if (strcmp(first, last)) fprintf(out, "-%s", last);
  for (int k = 0, sep = 0; k < 4; k++)
    if (mask & (1u << k)) fprintf(out, "%s%d", sep++ ? "," : " ", k);
  *any = true;
}

/* The ZeRO stage of each trained parameter as the local program runs it
 * (docs/sharding.md, "ZeRO stages"), per layer (gv_layer_key of its name),
 * runs of layers with the same stages merged: "zero stages: other 2;
 * h.0 1; h.1-h.11 3". Stage 3: the parameter is split over a batch axis
 * (one splitting the data inputs' dim 0); else its optimizer state is (1 or
 * 2): 1 when the update slices its gradient out of a whole one (a
 * galv.shard_slice at "optimizer/OPT/P" of a computed value), else 2;
 * neither: 0. Nothing without batch axes or optimizer state. */
static void zero_report(const gv_module *m, FILE *out) {
  const gv_func *f = m->main;
  int n = f->body->nargs;
  if (!f->arg_sharding || !f->arg_is_state) return;
  unsigned batch = 0;
  for (int i = 0; i < n; i++) {
    const gv_sharding *s = f->arg_sharding[i];
    if (!f->arg_is_param[i] && !f->arg_is_state[i] && s && s->rank >= 1)
      for (int a = 0; a < s->naxes[0]; a++) batch |= 1u << s->axes[0][a];
  }
  gv_arg_index names;
  if (!batch || gv_arg_index_build(&names, f)) return;
  int *state = malloc(((size_t)n + 1) * sizeof *state);
  bool *sliced = calloc((size_t)n + 1, sizeof *sliced), *copy = calloc((size_t)n + 1, sizeof *copy);
  for (int i = 0; state && i < n; i++) state[i] = -1;
  for (int i = 0; state && sliced && i < n; i++) {
    const char *nm = f->arg_names[i], *c = nm && !strncmp(nm, "opt.", 4) ? strchr(nm, ':') : NULL;
    if (!c || !f->arg_is_state[i]) continue;
    int lo, hi;
    gv_arg_index_find(&names, c + 1, &lo, &hi);
    for (int k = lo; k < hi; k++)
      if (f->arg_is_param[names.idx[k]] && state[names.idx[k]] < 0) state[names.idx[k]] = i;
  }
  for (const gv_op *op = f->body->first; state && sliced && op; op = op->next) {
    const char *nm = op->code == GV_OP_SHARD_SLICE && op->loc && !strncmp(op->loc, "optimizer/", 10) ? strchr(op->loc + 10, '/') : NULL;
    if (!nm || !op->opnds[0]->def) continue;
    int lo, hi;
    gv_arg_index_find(&names, nm + 1, &lo, &hi);
    for (int k = lo; k < hi; k++) sliced[names.idx[k]] = true;
  }
  for (const gv_op *op = f->body->first; copy && op; op = op->next) { /* a working copy's gather (spmd-partition) */
    if (!op->nopnds || !gv_get_attr(op, "working_copy")) continue;
    const gv_value *x = op->opnds[0];
    if (x->def && x->def->code == GV_OP_CAST && x->def->nopnds == 1 && gv_get_attr(x->def, "gather_copy")) x = x->def->opnds[0];
    if (!x->def && x->block == f->body && x->index >= 0 && x->index < n) copy[x->index] = true;
  }
  if (!copy) state = (free(state), NULL);
  /* "other" (embeddings, final norm, head) first, then runs of layers */
  unsigned omask = 0;
  for (int i = 0; state && sliced && i < n; i++) {
    char key[64];
    gv_layer_key(f->arg_names[i], key, sizeof key);
    if (gv_arg_trains(f, i) && state[i] >= 0 && !strcmp(key, "other")) omask |= 1u << param_stage(f, i, state[i], sliced[i], batch, copy[i]);
  }
  bool any = false;
  if (omask) print_stages(out, &any, "other", "other", omask);
  char prev[64] = "", first[64] = "", last[64] = "";
  unsigned pmask = 0, mask = 0;
  for (int i = 0; state && sliced && i <= n; i++) {
    char key[64] = "";
    unsigned st = 0;
    if (i < n) {
      if (!gv_arg_trains(f, i) || state[i] < 0) continue;
      gv_layer_key(f->arg_names[i], key, sizeof key);
      if (!strcmp(key, "other")) continue;
      st = param_stage(f, i, state[i], sliced[i], batch, copy[i]);
      if (!strcmp(key, prev)) { /* the same layer: one more stage */
        mask |= 1u << st;
        continue;
      }
    }
    if (prev[0]) { /* layer prev is complete: extend the run or print it */
      if (first[0] && mask == pmask) snprintf(last, sizeof last, "%s", prev);
      else {
        if (first[0]) print_stages(out, &any, first, last, pmask);
        snprintf(first, sizeof first, "%s", prev), snprintf(last, sizeof last, "%s", prev), pmask = mask;
      }
    }
    snprintf(prev, sizeof prev, "%s", key);
    mask = 1u << st;
  }
  if (first[0]) print_stages(out, &any, first, last, pmask);
  if (any) fprintf(out, " (per layer: 0 gradients all-reduced, 1 optimizer state split, 2 and gradients reduce-scattered, 3 and parameters split)\n");
  free(state), free(sliced), free(copy);
  gv_arg_index_free(&names);
}

void gv_cost_report(const gv_cluster *c, const gv_module *m, void *file) {
  FILE *f = file;
  fprintf(f, "cost model: ");
  gv_cluster_describe(c, f);
  fprintf(f, "%-5s %-18s %-38s %-22s %14s %14s %12s %s\n", "#", "op", "node", "result", "FLOPs", "bytes", "time ns",
          "bound");
  totals t = {0};
  int idx = 0;
  gv_attn_chain att[GV_ATTN_MAX];
  int natt = gv_cost_attention_chains(c, m, att);
  int64_t att_saved = 0; /* score bytes the fused chains do not move */
  for (const gv_op *op = m->main->body->first; op; op = op->next, idx++) {
    gv_op_cost oc;
    if (gv_cost_attention_op(c, att, natt, op, &oc)) {
      gv_op_cost plain;
      if (!gv_cost_op(c, op, NULL, NULL, &plain)) att_saved += plain.bytes;
      if (!oc.flops && !oc.bytes) continue; /* inside the chain: priced at its first dot */
    } else if (gv_cost_op(c, op, NULL, NULL, &oc)) {
      fprintf(f, "%-5d %-18s %-38.38s (shape not static: not counted)\n", idx, gv_ops[op->code].name, op->loc);
      continue;
    }
    bool comm = op->code >= GV_OP_ALL_REDUCE && op->code <= GV_OP_ALL_TO_ALL;
    if (comm) {
      int64_t ns = gv_cost_collective_op(c, m, op);
      t.ncomm++;
      if (ns < 0) t.comm_unknown++;
      else oc.ns = ns, t.comm_ns += ns;
    }
    if (!oc.flops && !oc.bytes && !comm) { t.nzero++; continue; }
    char shape[64] = "-";
    if (op->nres) gv_type_str(&op->res[0]->type, shape, sizeof shape);
    const char *loc = op->loc && op->loc[0] ? op->loc : "-";
    size_t ll = strlen(loc);
    bool head = false;
    for (int i = 0; i < natt; i++) head = head || op == att[i].d1;
    if (head) att_saved -= oc.bytes;
    fprintf(f, "%-5d %-18s %-38s %-22.22s %14lld %14lld %12lld %s\n", idx, head ? "attention (fused)" : gv_ops[op->code].name,
            ll > 38 ? loc + ll - 38 : loc, shape, (long long)oc.flops, (long long)oc.bytes, (long long)oc.ns,
            comm ? "comm" : oc.compute_bound ? "compute" : "memory");
    if (comm) continue;
    t.nops++;
    t.flops += oc.flops;
    t.bytes += oc.bytes;
    t.ns += oc.ns;
    if (head) /* the fused chain's two dots, not its softmax and mask */
      for (int i = 0; i < natt; i++) {
        if (op != att[i].d1) continue;
        int64_t f1 = gv_op_flops(att[i].d1, NULL, NULL), f2 = gv_op_flops(att[i].d2, NULL, NULL);
        t.dot_flops += (f1 > 0 ? f1 : 0) + (f2 > 0 ? f2 : 0);
      }
    else if (op->code == GV_OP_DOT) t.dot_flops += oc.flops;
    if (oc.compute_bound) t.ncompute++, t.compute_ns += oc.ns;
    else t.memory_ns += oc.ns;
  }
  char fl[32], by[32];
  human(fl, sizeof fl, (double)t.flops, "FLOP");
  human(by, sizeof by, (double)t.bytes, "B");
  fprintf(f, "total: %d ops (%d compute-bound, %d memory-bound; %d free: views, constants), FLOPs %lld (%s; dot %lld), "
             "bytes %lld (%s), time %lld ns = %.3f ms (compute-bound ops %.3f ms, memory-bound %.3f ms)\n",
          t.nops, t.ncompute, t.nops - t.ncompute, t.nzero, (long long)t.flops, fl, (long long)t.dot_flops,
          (long long)t.bytes, by, (long long)t.ns, (double)t.ns / 1e6, (double)t.compute_ns / 1e6,
          (double)t.memory_ns / 1e6);
  int nrec = 0; /* the recompute pass's clones (location suffix "/recompute", passes/recompute.c) */
  int64_t rec_flops = 0;
  for (const gv_op *op = m->main->body->first; op; op = op->next) {
    size_t ll = op->loc ? strlen(op->loc) : 0;
    if (ll < 10 || strcmp(op->loc + ll - 10, "/recompute")) continue;
    int64_t fl = gv_op_flops(op, NULL, NULL);
    nrec++;
    rec_flops += fl > 0 ? fl : 0;
  }
  if (nrec)
    fprintf(f, "recomputation: %d forward ops again in the backward, FLOPs %lld (%.1f%% of the step's)\n", nrec,
            (long long)rec_flops, t.flops ? 100.0 * (double)rec_flops / (double)t.flops : 0.0);
  if (c->fused_attention)
    fprintf(f, "attention: %d chain%s fused (dot -> softmax -> dot as one kernel: the S x S scores never move; "
               "%lld bytes of traffic fewer than unfused)\n", natt, natt == 1 ? "" : "s", (long long)att_saved);
  if (t.ncomm)
    fprintf(f, "communication: %d collectives, %lld ns = %.3f ms (alpha-beta per mesh axis)%s\n", t.ncomm,
            (long long)t.comm_ns, (double)t.comm_ns / 1e6, t.comm_unknown ? "; some name no known mesh axis: not timed" : "");
  gv_timeline tl;
  gv_cost_timeline(c, m, &tl, NULL);
  fprintf(f, "predicted step: %lld ns = %.3f ms (critical path of the compute and communication streams: compute %.3f + "
             "overlap slowdown %.3f + exposed communication %.3f; communication %.3f, %.3f of it under compute at "
             "overlap_slowdown x%g; %d wait%s)\n",
          (long long)tl.step_ns, (double)tl.step_ns / 1e6, (double)tl.compute_ns / 1e6, (double)tl.slowdown_ns / 1e6,
          (double)tl.exposed_ns / 1e6, (double)tl.comm_ns / 1e6, (double)(tl.comm_ns - tl.exposed_ns) / 1e6, tl.slowdown,
          tl.nwait, tl.nwait == 1 ? "" : "s");
  fprintf(f, "without overlap: %lld ns = %.3f ms (compute %.3f + communication %.3f)\n", (long long)(t.ns + t.comm_ns),
          (double)(t.ns + t.comm_ns) / 1e6, (double)t.ns / 1e6, (double)t.comm_ns / 1e6);
  gv_mem mem;
  gv_cost_memory(m, &mem);
  char wcs[96] = "";
  if (mem.working_copy) snprintf(wcs, sizeof wcs, ", 16-bit working copies %lld", (long long)mem.working_copy);
  fprintf(f, "memory per device: parameters %lld, optimizer state %lld, arena %lld (gradients %lld%s and activations "
             "peak %lld inside), constants %lld, communication buffers %lld, 16-bit conversion scratch %lld, total %lld of "
             "%lld bytes (%.1f%%)%s\n",
          (long long)mem.params, (long long)mem.optimizer, (long long)mem.arena, (long long)mem.grads, wcs,
          (long long)mem.activations, (long long)mem.constants, (long long)mem.comm, (long long)mem.convert, (long long)mem.total,
          (long long)c->memory_bytes,
          100.0 * (double)mem.total / (double)c->memory_bytes, gv_mem_fits(c, &mem) ? "" : "  DOES NOT FIT");
  zero_report(m, f);
}
