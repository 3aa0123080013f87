/* test_cost.c — the cost model against hand-computed numbers: the
 * alpha-beta collectives of REFERENCES.md (one level, two levels across
 * nodes, mesh-axis layouts), the roofline of single ops (global and local
 * shapes), ZeRO model-state accounting, and FLOP counting on the GPT-2
 * example against the analytic 2 * params * tokens + attention term
 * (dot FLOPs exact; all FLOPs within 10%: the rest is norms, softmax,
 * GELU and residual adds), forward and training step; the two-stream step
 * (gv_cost_timeline) on a hand-made program: the critical path, the
 * overlap slowdown, a call with nothing under it exposed, shares adding up. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "frontend/onnx_import.h"
#include "ir/storage.h"
#include "passes/passes.h"
#include "planner/cost.h"

static int failures;
#define CHECK(c)                                                                                   \
  do {                                                                                             \
    if (!(c)) {                                                                                    \
      fprintf(stderr, "%s:%d: check failed: %s\n", __FILE__, __LINE__, #c);                        \
      failures++;                                                                                  \
    }                                                                                              \
  } while (0)
#define CHECK_EQ(a, b)                                                                             \
  do {                                                                                             \
    long long a_ = (long long)(a), b_ = (long long)(b);                                            \
    if (a_ != b_) {                                                                                \
      fprintf(stderr, "%s:%d: %s = %lld, want %lld\n", __FILE__, __LINE__, #a, a_, b_);             \
      failures++;                                                                                  \
    }                                                                                              \
  } while (0)

static const int64_t GiB = 1LL << 30;

static void test_collectives(void) {
  gv_cluster h;
  if (gv_cluster_load("h100-sxm", &h)) { failures++; return; }
  /* h100-sxm: intra 370 GB/s = 370 bytes/ns, alpha 3 us; inter 47 GB/s, 10 us.
   * ring all-reduce of 1 GiB over 8: 2*7*3000 + 2*7/8 * 2^30/370
   *   = 42000 + 5078508.63 = 5120508.63 -> 5120509 ns (5.12 ms) */
  CHECK_EQ(gv_cost_collective(&h, GV_COLL_ALL_REDUCE, GiB, 8, false), 5120509);
  /* all-gather / reduce-scatter / all-to-all: 7*3000 + 7/8 * 2^30/370 = 2560254.31 */
  CHECK_EQ(gv_cost_collective(&h, GV_COLL_ALL_GATHER, GiB, 8, false), 2560255);
  CHECK_EQ(gv_cost_collective(&h, GV_COLL_REDUCE_SCATTER, GiB, 8, false), 2560255);
  CHECK_EQ(gv_cost_collective(&h, GV_COLL_ALL_TO_ALL, GiB, 8, false), 2560255);
  /* two-level all-reduce, 2 nodes x 8: 42000 + 5078508.63 + 2*1*10000 + 2*(1/2) * (2^30/8)/47
   *   = 42000 + 5078508.63 + 20000 + 2855696.34 = 7996204.97 */
  CHECK_EQ(gv_cost_collective(&h, GV_COLL_ALL_REDUCE, GiB, 16, true), 7996205);
  CHECK_EQ(gv_cost_collective_levels(&h, GV_COLL_ALL_REDUCE, GiB, 8, 2), 7996205);
  /* two-level all-gather: 21000 + 2539254.31 + 10000 + 1427848.17 = 3998102.48 */
  CHECK_EQ(gv_cost_collective_levels(&h, GV_COLL_ALL_GATHER, GiB, 8, 2), 3998103);
  /* a group of 4 across 4 nodes (one member each): 3*10000 + 3/4 * 2^30/47 = 17164178.04 */
  CHECK_EQ(gv_cost_collective(&h, GV_COLL_REDUCE_SCATTER, GiB, 4, true), 17164179);
  /* p2p of 1 MiB: 10000 + 2^20/47 = 32310.13 across nodes; 3000 + 2^20/370 = 5833.99 inside */
  CHECK_EQ(gv_cost_collective(&h, GV_COLL_P2P, 1 << 20, 2, true), 32311);
  CHECK_EQ(gv_cost_collective(&h, GV_COLL_P2P, 1 << 20, 2, false), 5834);
  /* broadcast (pipelined ring) over 8: 7*3000 + 2^30/370 = 2923004.93 */
  CHECK_EQ(gv_cost_collective(&h, GV_COLL_BROADCAST, GiB, 8, false), 2923005);
  /* nothing to do */
  CHECK_EQ(gv_cost_collective(&h, GV_COLL_ALL_REDUCE, GiB, 1, false), 0);
  CHECK_EQ(gv_cost_collective(&h, GV_COLL_ALL_REDUCE, 0, 8, false), 0);
  /* a bigger group is never cheaper; crossing nodes is never cheaper */
  for (int64_t p = 2; p < 64; p *= 2) {
    CHECK(gv_cost_collective(&h, GV_COLL_ALL_REDUCE, GiB, p * 2, true) >= gv_cost_collective(&h, GV_COLL_ALL_REDUCE, GiB, p, p > 8));
    if (p <= 8) CHECK(gv_cost_collective(&h, GV_COLL_ALL_REDUCE, GiB, p, true) > gv_cost_collective(&h, GV_COLL_ALL_REDUCE, GiB, p, false));
  }
  /* the anchor's bus bandwidth: an a100 all-reduce over 8 of 1 GiB takes 2*7/8*2^30/230 + 42 us = 8.21 ms
   * (Galvatron measured 8.14 ms on its A100 node: anchors/galvatron_llama2_7b hardware) */
  gv_cluster a;
  if (gv_cluster_load("a100-80g", &a) == 0) {
    int64_t t = gv_cost_collective(&a, GV_COLL_ALL_REDUCE, GiB, 8, false);
    CHECK(t > 8000000 && t < 8400000);
  }
}

/* A 2x4 mesh on nodes of 4: the inner axis stays in a node, the outer crosses. */
static void test_mesh_axes(void) {
  const char *json =
      "{\"name\": \"two-by-four\", \"nodes\": 2, \"devices_per_node\": 4, \"peak_tflops\": {\"f32\": 10, \"bf16\": 100, "
      "\"f16\": 100}, \"memory_bytes\": 1000000000, \"memory_bandwidth_gbps\": 1000, \"intra_node\": "
      "{\"bus_bandwidth_gbps\": 100, \"latency_us\": 1}, \"inter_node\": {\"bandwidth_gbps\": 10, \"latency_us\": 5}}";
  gv_cluster c;
  if (gv_cluster_parse(json, strlen(json), "mesh.json", &c)) { failures++; return; }
  gv_module *m = gv_module_new("mesh");
  const char *ax1[] = {"dp", "tp"}, *ax2[] = {"tp", "dp"};
  int64_t s1[] = {2, 4}, s2[] = {4, 2};
  gv_mesh *dp_tp = gv_module_add_mesh(m, "a", 2, ax1, s1), *tp_dp = gv_module_add_mesh(m, "b", 2, ax2, s2);
  CHECK(dp_tp && tp_dp);
  if (!dp_tp || !tp_dp) { gv_module_free(m); return; }
  int64_t n = 64 << 20;
  /* tp (inner, stride 1): 4 members in one node; dp (stride 4): one member in each of 2 nodes */
  CHECK_EQ(gv_cost_mesh_axis(&c, dp_tp, 1, GV_COLL_ALL_REDUCE, n), gv_cost_collective_levels(&c, GV_COLL_ALL_REDUCE, n, 4, 1));
  CHECK_EQ(gv_cost_mesh_axis(&c, dp_tp, 0, GV_COLL_ALL_REDUCE, n), gv_cost_collective_levels(&c, GV_COLL_ALL_REDUCE, n, 1, 2));
  /* tp outer (stride 2): 2 members per node in 2 nodes; dp inner: in a node */
  CHECK_EQ(gv_cost_mesh_axis(&c, tp_dp, 0, GV_COLL_ALL_REDUCE, n), gv_cost_collective_levels(&c, GV_COLL_ALL_REDUCE, n, 2, 2));
  CHECK_EQ(gv_cost_mesh_axis(&c, tp_dp, 1, GV_COLL_ALL_REDUCE, n), gv_cost_collective_levels(&c, GV_COLL_ALL_REDUCE, n, 2, 1));
  /* one-level, by hand: 4 in a node, 64 MiB: 2*3*1000 + 2*3/4 * 2^26/100 = 6000 + 1006632.96 */
  CHECK_EQ(gv_cost_mesh_axis(&c, dp_tp, 1, GV_COLL_ALL_REDUCE, n), 1012633);
  /* a group over a mask (gv_cost_mesh_group, the pipeline stages' dp collectives): one axis as gv_cost_mesh_axis; both
   * axes: the whole mesh, 4 per node in 2 nodes; and a dp axis of 8 outside a tp of 4 on 8 nodes of 4: one member
   * per node, a ring across the 8 (not packed 4 per node as a bare group of 8 would be) */
  CHECK_EQ(gv_cost_mesh_group(&c, dp_tp, 1u, GV_COLL_ALL_REDUCE, n), gv_cost_mesh_axis(&c, dp_tp, 0, GV_COLL_ALL_REDUCE, n));
  CHECK_EQ(gv_cost_mesh_group(&c, dp_tp, 3u, GV_COLL_ALL_REDUCE, n), gv_cost_collective_levels(&c, GV_COLL_ALL_REDUCE, n, 4, 2));
  {
    int64_t s8[] = {8, 4};
    gv_mesh *big = gv_module_add_mesh(m, "c", 2, ax1, s8);
    gv_cluster c8 = c;
    c8.nodes = 8;
    CHECK(big != NULL);
    if (big) {
      CHECK_EQ(gv_cost_mesh_group(&c8, big, 1u, GV_COLL_ALL_REDUCE, n), gv_cost_collective_levels(&c8, GV_COLL_ALL_REDUCE, n, 1, 8));
      CHECK(gv_cost_mesh_group(&c8, big, 1u, GV_COLL_ALL_REDUCE, n) > gv_cost_collective(&c8, GV_COLL_ALL_REDUCE, n, 8, true));
    }
  }
  /* the tensor-parallel axis inside the node is cheaper than across: ATP's point */
  CHECK(gv_cost_mesh_axis(&c, dp_tp, 1, GV_COLL_ALL_REDUCE, n) < gv_cost_mesh_axis(&c, tp_dp, 0, GV_COLL_ALL_REDUCE, n));
  /* ... and swapping the two bandwidths flips it */
  double t = c.intra_gbps;
  c.intra_gbps = c.inter_gbps, c.inter_gbps = t;
  t = c.intra_latency_us, c.intra_latency_us = c.inter_latency_us, c.inter_latency_us = t;
  CHECK(gv_cost_mesh_axis(&c, dp_tp, 1, GV_COLL_ALL_REDUCE, n) > gv_cost_mesh_axis(&c, dp_tp, 0, GV_COLL_ALL_REDUCE, n));
  gv_module_free(m);
}

static gv_value *arg(gv_module *m, gv_func *f, const char *name, int rank, const int64_t *dims) {
  return gv_func_add_arg(m, f, name, gv_type_make(GV_DT_F32, rank, dims), false);
}

static void test_roofline(void) {
  gv_cluster h;
  if (gv_cluster_load("h100-sxm", &h)) { failures++; return; }
  gv_module *m = gv_module_new("roofline");
  gv_func *f = gv_func_new(m, "main");
  int64_t xd[] = {2, 64, 128}, wd[] = {128, 256}, yd[] = {2, 64, 256};
  gv_value *ops[2] = {arg(m, f, "x", 3, xd), arg(m, f, "w", 2, wd)};
  gv_op *dot = gv_op_new(m, GV_OP_DOT, 2, ops, 1);
  int64_t lc[] = {2}, rc[] = {0};
  gv_set_ints(m, dot, "lhs_contract", 1, lc);
  gv_set_ints(m, dot, "rhs_contract", 1, rc);
  dot->res[0]->type = gv_type_make(GV_DT_F32, 3, yd);
  gv_op_cost oc;
  CHECK(gv_cost_op(&h, dot, NULL, NULL, &oc) == 0);
  /* 2*M*N*K*batch = 2 * 64*256*128 * 2; bytes (16384 + 32768 + 32768) * 4;
   * 8388608 / (67e12 * 0.8) = 156.50 ns > 327680 / 3350 = 97.8 ns */
  CHECK_EQ(oc.flops, 8388608);
  CHECK_EQ(oc.bytes, 327680);
  CHECK_EQ(oc.ns, 157);
  CHECK(oc.compute_bound);
  /* local shapes (w and y split 4 ways on their last dim): a quarter of the FLOPs */
  gv_type lin[2] = {ops[0]->type, gv_type_make(GV_DT_F32, 2, (int64_t[]){128, 64})};
  gv_type lres[1] = {gv_type_make(GV_DT_F32, 3, (int64_t[]){2, 64, 64})};
  CHECK(gv_cost_op(&h, dot, lin, lres, &oc) == 0);
  CHECK_EQ(oc.flops, 8388608 / 4);
  CHECK_EQ(oc.bytes, (16384 + 8192 + 8192) * 4);
  /* bf16 operands use the bf16 peak */
  gv_type bin[2] = {gv_type_make(GV_DT_BF16, 3, xd), gv_type_make(GV_DT_BF16, 2, wd)};
  gv_type bres[1] = {gv_type_make(GV_DT_BF16, 3, yd)};
  CHECK(gv_cost_op(&h, dot, bin, bres, &oc) == 0);
  CHECK_EQ(oc.ns, 49); /* max(8388608 / 791.2e3 = 10.6, 163840 / 3350 = 48.9) */
  CHECK(!oc.compute_bound);
  /* elementwise add of 1M f32: 1M FLOPs, 12 MiB -> 12582912 / 3350 = 3756.09 ns, memory bound */
  int64_t ed[] = {1024, 1024};
  gv_value *ev[2] = {arg(m, f, "a", 2, ed), arg(m, f, "b", 2, ed)};
  gv_op *add = gv_op_new(m, GV_OP_ADD, 2, ev, 1);
  add->res[0]->type = ev[0]->type;
  CHECK(gv_cost_op(&h, add, NULL, NULL, &oc) == 0);
  CHECK_EQ(oc.flops, 1 << 20);
  CHECK_EQ(oc.bytes, 12 << 20);
  CHECK_EQ(oc.ns, 3757);
  /* a view is free */
  gv_op *rs = gv_op_new(m, GV_OP_RESHAPE, 1, ev, 1);
  rs->res[0]->type = gv_type_make(GV_DT_F32, 1, (int64_t[]){1 << 20});
  CHECK(gv_cost_op(&h, rs, NULL, NULL, &oc) == 0);
  CHECK_EQ(oc.ns, 0);
  CHECK_EQ(oc.bytes, 0);
  /* an unknown shape is refused, not guessed */
  gv_op *un = gv_op_new(m, GV_OP_NEG, 1, ev, 1);
  CHECK(gv_cost_op(&h, un, NULL, NULL, &oc) == -1);
  gv_module_free(m);
}

/* Storage precision (ir/storage.h; the storage pass's attributes): a GEMM
 * whose inputs are read bf16 runs at the bf16 peak and moves storage bytes
 * (a bf16 activation 2 per element; an fp32 parameter 4 + 2 to convert it,
 * then 2 read by the GEMM), a collective of a bf16-stored value moves 2
 * bytes per element, and memory counts the largest conversion scratch. */
static void test_storage(void) {
  gv_cluster h;
  if (gv_cluster_load("h100-sxm", &h)) { failures++; return; }
  gv_module *m = gv_module_new("storage");
  gv_func *f = gv_func_new(m, "main");
  m->main = f;
  int64_t xd[] = {2, 64, 128}, wd[] = {128, 256}, yd[] = {2, 64, 256};
  gv_value *a = arg(m, f, "a", 3, xd), *w = arg(m, f, "w", 2, wd);
  gv_op *relu = gv_op_new(m, GV_OP_RELU, 1, &a, 1);
  relu->res[0]->type = a->type;
  gv_block_append(f->body, relu);
  gv_value *ops[2] = {relu->res[0], w};
  gv_op *dot = gv_op_new(m, GV_OP_DOT, 2, ops, 1);
  gv_set_ints(m, dot, "lhs_contract", 1, (int64_t[]){2});
  gv_set_ints(m, dot, "rhs_contract", 1, (int64_t[]){0});
  dot->res[0]->type = gv_type_make(GV_DT_F32, 3, yd);
  gv_block_append(f->body, dot);
  gv_op_cost oc;
  CHECK(gv_cost_op(&h, dot, NULL, NULL, &oc) == 0);
  CHECK_EQ(oc.bytes, 327680); /* fp32: (16384 + 32768 + 32768) * 4 */
  CHECK_EQ(oc.ns, 157);       /* 8388608 FLOPs at the f32 peak (test_roofline) */
  static const char *const bf[] = {"bf16"};
  gv_set_strs(m, relu, "storage", 1, bf);
  gv_set_strs(m, dot, "storage", 1, bf);
  gv_set_str(m, dot, "input_storage", "bf16");
  CHECK(gv_value_storage(relu->res[0]) == GV_DT_BF16 && gv_value_storage(w) == GV_DT_F32);
  CHECK(gv_cost_op(&h, dot, NULL, NULL, &oc) == 0);
  /* x 16384 * 2 + w 32768 * (4 + 2 + 2) + y 32768 * 2 = 360448 bytes; 360448 / 3350 = 107.6 ns
   * > 8388608 / 791.2e3 = 10.6 ns at the bf16 peak: memory-bound */
  CHECK_EQ(oc.flops, 8388608);
  CHECK_EQ(oc.bytes, 360448);
  CHECK_EQ(oc.ns, 108);
  CHECK(!oc.compute_bound);
  /* a local shape (w split 4 ways) keeps the storage: w 8192 * 8 + x 32768 + y 8192 * 2 */
  gv_type lin[2] = {relu->res[0]->type, gv_type_make(GV_DT_F32, 2, (int64_t[]){128, 64})};
  gv_type lres[1] = {gv_type_make(GV_DT_F32, 3, (int64_t[]){2, 64, 64})};
  CHECK(gv_cost_op(&h, dot, lin, lres, &oc) == 0);
  CHECK_EQ(oc.bytes, 8192 * 8 + 32768 + 8192 * 2);
  /* relu reads a 4-byte argument and writes 2 bytes per element */
  CHECK(gv_cost_op(&h, relu, NULL, NULL, &oc) == 0);
  CHECK_EQ(oc.bytes, 16384 * 6);
  /* an all-reduce over 8 of the bf16 result moves 65536 bytes, not 131072 */
  const char *axn[] = {"tp"};
  int64_t axs[] = {8};
  CHECK(gv_module_add_mesh(m, "m", 1, axn, axs) != NULL);
  gv_value *y = dot->res[0];
  gv_op *ar = gv_op_new(m, GV_OP_ALL_REDUCE, 1, &y, 1);
  ar->res[0]->type = y->type;
  gv_set_str(m, ar, "mesh", "m");
  gv_set_strs(m, ar, "axes", 1, axn);
  gv_set_strs(m, ar, "storage", 1, bf);
  gv_block_append(f->body, ar);
  CHECK_EQ(gv_cost_collective_op(&h, m, ar), gv_cost_collective_levels(&h, GV_COLL_ALL_REDUCE, 65536, 8, 1));
  CHECK(gv_cost_collective_op(&h, m, ar) < gv_cost_collective_levels(&h, GV_COLL_ALL_REDUCE, 131072, 8, 1));
  /* memory: the fp32 weight's bf16 copy for the GEMM, 32768 * 2 bytes of scratch */
  gv_mem mem;
  gv_cost_memory(m, &mem);
  CHECK_EQ(mem.convert, 65536);
  gv_module_free(m);
}

static void test_memory(void) {
  /* ZeRO accounting, 16 bytes per parameter (REFERENCES.md, Memory) */
  CHECK_EQ(gv_mem_model_states(1000000, 0, 8), 16000000);
  CHECK_EQ(gv_mem_model_states(1000000, 1, 8), 4000000 + 1500000);
  CHECK_EQ(gv_mem_model_states(1000000, 2, 8), 2000000 + 250000 + 1500000);
  CHECK_EQ(gv_mem_model_states(1000000, 3, 8), 2000000);
  gv_cluster h;
  if (gv_cluster_load("h100-sxm", &h)) { failures++; return; }
  gv_mem mem = {.total = 80000000000LL};
  CHECK(gv_mem_fits(&h, &mem));
  mem.total++;
  CHECK(!gv_mem_fits(&h, &mem));
}

/* GPT-2 (examples/models/torch: d 32, 4 heads, 2 layers, vocab 128, untied lm_head) */
static gv_module *gpt2_prec(bool train, gv_dtype prec);
static gv_module *gpt2(bool train) { return gpt2_prec(train, GV_DT_F32); }
/* GPT-2's forward after shape-infer, fold-constants, canonicalize and dce, the passes under 16-bit storage prec
 * (gv_precision_opts.storage left so; NULL on failure) */
static gv_module *gpt2_forward(gv_dtype prec) {
  const char *src = getenv("GALV_SOURCE_DIR");
  char path[4096];
  snprintf(path, sizeof path, "%s/examples/models/torch/gpt2_op17.onnx", src ? src : ".");
  gv_import_options opt = {.batch = 2, .seq = 16, .load_weights = false};
  gv_module *m = gv_import_onnx(path, &opt);
  gv_precision_opts.storage = prec;
  static const char *const fwd[] = {"shape-infer", "fold-constants", "canonicalize", "dce"};
  for (size_t i = 0; m && i < 4; i++)
    if (gv_pass_lookup(fwd[i])->run(m)) gv_module_free(m), m = NULL;
  return m;
}
static gv_module *gpt2_prec(bool train, gv_dtype prec) {
  static const char *const tr[] = {"loss", "autodiff", "recompute", "optimizer"};
  static const char *const tail[] = {"fuse", "storage", "memory-plan"};
  gv_module *m = gpt2_forward(prec);
  if (!m) goto bad;
  for (size_t i = 0; train && i < 4; i++)
    if (gv_pass_lookup(tr[i])->run(m)) goto bad;
  for (size_t i = 0; i < 3; i++)
    if (gv_pass_lookup(tail[i])->run(m)) goto bad;
  gv_precision_opts.storage = GV_DT_F32;
  return m;
bad:
  gv_precision_opts.storage = GV_DT_F32;
  gv_module_free(m);
  return NULL;
}

static void sum_flops(const gv_module *m, int64_t *dot, int64_t *all) {
  *dot = *all = 0;
  for (const gv_op *op = m->main->body->first; op; op = op->next) {
    int64_t f = gv_op_flops(op, NULL, NULL);
    CHECK(f >= 0);
    *all += f;
    if (op->code == GV_OP_DOT) *dot += f;
  }
}

static void test_gpt2_flops(void) {
  const int64_t d = 32, L = 2, V = 128, B = 2, T = 16, tokens = B * T;
  /* matmul parameters: per layer qkv 3d^2, proj d^2, mlp 8d^2; lm_head d*V (biases are adds) */
  const int64_t matmul_params = L * 12 * d * d + d * V;
  /* 2 * params * tokens + attention (QK^T and AV: 2 * 2 * T * d per token per layer, full T x T) */
  const int64_t analytic = 2 * matmul_params * tokens + 2 * 2 * L * B * T * T * d;
  gv_module *m = gpt2(false);
  CHECK(m != NULL);
  if (!m) return;
  int64_t dot, all;
  sum_flops(m, &dot, &all);
  CHECK_EQ(dot, analytic);
  double over = (double)all / (double)analytic - 1;
  printf("gpt2 forward: analytic %lld FLOPs, dots %lld, all ops %lld (+%.1f%%: norms, softmax, gelu, adds)\n",
         (long long)analytic, (long long)dot, (long long)all, 100 * over);
  CHECK(over >= 0 && over < 0.10);
  gv_mem mem;
  gv_cost_memory(m, &mem);
  /* biases 9d per layer; the export keeps one copy of the five identical layer-norm
   * weight / bias pairs (2d); wte V x d, wpe 64 x d */
  CHECK_EQ(mem.params, 4 * (matmul_params + L * 9 * d + 2 * d + V * d + 64 * d));
  CHECK(mem.arena > 0 && mem.comm == 0 && mem.total == mem.params + mem.arena + mem.constants); /* one device: no collectives */
  gv_module_free(m);

  /* training step: backward does two dots per forward dot (activation and weight gradients) */
  m = gpt2(true);
  CHECK(m != NULL);
  if (!m) return;
  int64_t tdot, tall;
  sum_flops(m, &tdot, &tall);
  printf("gpt2 training step: dots %lld = %.3f x forward, all ops %lld\n", (long long)tdot, (double)tdot / (double)dot,
         (long long)tall);
  CHECK_EQ(tdot, 3 * dot);
  CHECK(tall > 3 * dot);
  gv_cost_memory(m, &mem);
  CHECK_EQ(mem.grads, mem.params);
  CHECK(mem.optimizer >= 2 * mem.params);
  CHECK(mem.activations > 0 && mem.total == mem.params + mem.optimizer + mem.arena + mem.constants + mem.comm);
  gv_module_free(m);
}

/* Fused attention (the cuda target): the chains the emitter fuses, priced
 * without the S x S scores; selective recomputation's extra FLOPs are the
 * cores' (scores dot, mask, softmax) and it frees the probabilities from the
 * backward, which makes the forward chains fusable in training. */
static void test_attention(void) {
  const int64_t L = 2, B = 2, H = 4, T = 16, Dh = 8, S = B * H * T * T * 4; /* one S x S f32 tensor */
  gv_cluster h;
  if (gv_cluster_load("h100-sxm", &h)) { failures++; return; }
  gv_attn_chain ch[GV_ATTN_MAX];
  gv_module *m = gpt2(false);
  CHECK(m != NULL);
  if (!m) return;
  { /* the training match (passes/fuse_attention.c, on the forward before fuse) with the block's uses counted once = the
     * scan after each dot, and with a value marked changed (scanned again) */
    gv_module *fm = gpt2_forward(GV_DT_F32);
    CHECK(fm != NULL);
    if (!fm) return;
    gv_attn_uses *ix = gv_attn_uses_new(fm->main->body);
    CHECK(ix != NULL);
    int dots = 0, same = 0, hits = 0;
    for (int pass = 0; pass < 2; pass++)
      for (const gv_op *op = fm->main->body->first; op; op = op->next) {
        if (op->code != GV_OP_DOT) continue;
        gv_attn_train_chain a, b;
        memset(&a, 0, sizeof a), memset(&b, 0, sizeof b);
        bool x = gv_attn_match_train(op, &a), y = gv_attn_match_train_in(op, &b, ix);
        dots++, hits += x;
        same += x == y && (!x || (a.d1 == b.d1 && a.sm == b.sm && a.d2 == b.d2 && a.drop == b.drop && a.nsteps == b.nsteps &&
                                  a.nfn == b.nfn && !memcmp(a.steps, b.steps, sizeof a.steps) && !memcmp(a.fn, b.fn, sizeof a.fn) &&
                                  !strcmp(a.score, b.score)));
        if (pass == 0 && x) gv_attn_uses_dirty(ix, op->res[0]); /* the second pass: the scores' uses scanned again */
      }
    CHECK_EQ(same, dots);
    CHECK_EQ(hits, 2 * L);
    gv_attn_uses_free(ix);
    gv_module_free(fm);
  }
  CHECK_EQ(gv_cost_attention_chains(&h, m, ch), 0); /* the flag is off: every op priced alone */
  h.fused_attention = true;
  int n = gv_cost_attention_chains(&h, m, ch);
  CHECK_EQ(n, L);
  for (int i = 0; i < n; i++) {
    const gv_op *ops[4] = {ch[i].d1, ch[i].mid, ch[i].sm, ch[i].d2};
    int64_t flops = 0, bytes = 0;
    for (int k = 0; k < 4; k++) {
      gv_op_cost oc;
      CHECK(ops[k] && gv_cost_op(&h, ops[k], NULL, NULL, &oc) == 0);
      if (ops[k]) flops += oc.flops, bytes += oc.bytes;
    }
    gv_op_cost fc, rest;
    CHECK(gv_cost_attention_op(&h, ch, n, ch[i].d1, &fc) == 1);
    CHECK(gv_cost_attention_op(&h, ch, n, ch[i].sm, &rest) == 1 && rest.flops == 0 && rest.bytes == 0 && rest.ns == 0);
    CHECK_EQ(fc.flops, flops);
    /* unfused: the scores written and read (dot, mid), the masked scores (mid, softmax), P (softmax, dot) */
    CHECK_EQ(fc.bytes, bytes - 6 * S);
  }
  gv_module_free(m);

  gv_train_opts.recompute = "none";
  m = gpt2(true);
  gv_train_opts.recompute = "selective";
  gv_module *sel = gpt2(true);
  gv_train_opts.recompute = "none";
  CHECK(m != NULL && sel != NULL);
  if (m && sel) {
    CHECK_EQ(gv_cost_attention_chains(&h, m, ch), 0); /* the backward reads P: not fused */
    CHECK_EQ(gv_cost_attention_chains(&h, sel, ch), L);
    /* the block's uses counted once (gv_attn_match_in) match every dot as the scan after it does (gv_attn_match) */
    for (int w = 0; w < 2; w++) {
      const gv_module *mm = w ? sel : m;
      gv_attn_uses *ix = gv_attn_uses_new(mm->main->body);
      CHECK(ix != NULL);
      int dots = 0, same = 0, hits = 0;
      for (const gv_op *op = mm->main->body->first; op; op = op->next) {
        if (op->code != GV_OP_DOT) continue;
        gv_attn_chain a, b;
        memset(&a, 0, sizeof a), memset(&b, 0, sizeof b);
        bool x = gv_attn_match(op, &a), y = gv_attn_match_in(op, &b, ix);
        dots++, hits += x;
        same += x == y && (!x || (a.d1 == b.d1 && a.mid == b.mid && a.sm == b.sm && a.d2 == b.d2 && a.score_opnd == b.score_opnd));
      }
      CHECK_EQ(same, dots);
      CHECK_EQ(hits, w ? L : 0);
      gv_attn_uses_free(ix);
    }
    int64_t d0, a0, d1, a1;
    sum_flops(m, &d0, &a0);
    sum_flops(sel, &d1, &a1);
    CHECK_EQ(d1 - d0, L * 2 * B * H * T * T * Dh); /* the QK^T dot again, per layer */
    /* and the scale / mask / softmax: more than the dots, less than 10 FLOPs per score */
    CHECK(a1 - a0 > d1 - d0 && a1 - a0 < d1 - d0 + L * 10 * B * H * T * T);
    gv_mem m0, m1;
    gv_cost_memory(m, &m0);
    gv_cost_memory(sel, &m1);
    printf("gpt2 training, selective recomputation: +%lld FLOPs, activations %lld -> %lld bytes\n", (long long)(a1 - a0),
           (long long)m0.activations, (long long)m1.activations);
    CHECK(m1.activations < m0.activations);
  }
  gv_module_free(m);
  gv_module_free(sel);
}

/* The GPT-2 training step under bf16 storage (the storage pass before
 * memory-plan): the same FLOPs; every dot reads bf16 and is priced at the
 * bf16 peak, so the dots' time falls; activations take half the arena's
 * bytes; parameters and optimizer state stay fp32. */
static void test_gpt2_bf16(void) {
  gv_cluster h;
  if (gv_cluster_load("h100-sxm", &h)) { failures++; return; }
  gv_module *a = gpt2(true), *b = gpt2_prec(true, GV_DT_BF16);
  CHECK(a && b);
  if (!a || !b) { gv_module_free(a); gv_module_free(b); return; }
  int64_t ns[2] = {0, 0}, fl[2] = {0, 0}, ndot = 0, nin = 0;
  for (int k = 0; k < 2; k++)
    for (const gv_op *op = (k ? b : a)->main->body->first; op; op = op->next) {
      gv_op_cost oc;
      if (op->code != GV_OP_DOT || gv_cost_op(&h, op, NULL, NULL, &oc)) continue;
      ns[k] += oc.ns, fl[k] += oc.flops;
      if (k) ndot++, nin += gv_op_input_storage(op) == GV_DT_BF16;
    }
  CHECK_EQ(fl[1], fl[0]);
  CHECK(ndot > 0 && nin == ndot);
  CHECK(ns[1] < ns[0]);
  gv_mem ma, mb;
  gv_cost_memory(a, &ma);
  gv_cost_memory(b, &mb);
  CHECK_EQ(mb.params, ma.params);
  CHECK_EQ(mb.optimizer, ma.optimizer);
  CHECK(mb.activations < ma.activations && 2 * mb.activations >= ma.activations - 4096);
  CHECK(mb.arena < ma.arena);
  CHECK(ma.convert == 0 && mb.convert > 0);
  gv_module_free(a);
  gv_module_free(b);
}

/* The two-stream step (gv_cost_timeline, docs/planner.md "Step time: two
 * streams") on a hand-made local program: a dot makes a gradient, its
 * all_reduce is posted on the communication stream, an independent exp
 * computes under it, a mul reads the reduced value (a sync point). Without
 * a slowdown the step is the critical path t_dot + max(t_exp, t_comm) +
 * t_mul; with a100-80g's 1.1256 the overlapped compute is slowed; with the
 * reader first (nothing under the call) the whole call is exposed; the ops'
 * shares add up to the step. */
static gv_module *timeline_prog(bool reader_first) {
  char buf[4096];
  const char *mul = "  %3 = \"galv.mul\"(%1, %1) : (tensor<64x1024xf32>, tensor<64x1024xf32>) -> tensor<64x1024xf32> loc(\"optimizer/adamw/w\")\n";
  const char *ex = "  %2 = \"galv.exp\"(%a) : (tensor<2048x2048xf32>) -> tensor<2048x2048xf32> loc(\"/other\")\n";
  snprintf(buf, sizeof buf,
           "\"galv.mesh\"() {axes = #galv.axes<[\"dp\"=2]>, sym_name = \"m\"} : () -> ()\n"
           "\"galv.func\"() ({\n"
           "^bb0(%%x: tensor<64x1024xf32>, %%w: tensor<1024x1024xf32>, %%a: tensor<2048x2048xf32>):\n"
           "  %%0 = \"galv.dot\"(%%x, %%w) {lhs_batch = array<i64>, lhs_contract = array<i64: 1>, rhs_batch = array<i64>, "
           "rhs_contract = array<i64: 0>} : (tensor<64x1024xf32>, tensor<1024x1024xf32>) -> tensor<64x1024xf32> loc(\"/fc/grad\")\n"
           "  %%1 = \"galv.all_reduce\"(%%0) {axes = [\"dp\"], bytes = 262144 : i64, mesh = \"m\", reduce = \"sum\"} : "
           "(tensor<64x1024xf32>) -> tensor<64x1024xf32> loc(\"/fc/grad\")\n"
           "%s%s"
           "  \"galv.return\"(%%3, %%2) : (tensor<64x1024xf32>, tensor<2048x2048xf32>) -> () loc(\"return\")\n"
           "}) {arg_attrs = [{galv.name = \"x\"}, {galv.name = \"w\"}, {galv.name = \"a\"}], res_attrs = [{galv.name = \"y\"}, "
           "{galv.name = \"z\"}], sym_name = \"main\"} : () -> ()\n",
           reader_first ? mul : ex, reader_first ? ex : mul);
  gv_module *m = gv_parse_module(buf, strlen(buf), "timeline");
  if (m && gv_pass_memory_plan(m)) { /* arena offsets: the sync rule reads which bytes each op writes */
    gv_module_free(m);
    return NULL;
  }
  return m;
}

static void test_timeline(void) {
  gv_cluster c;
  if (gv_cluster_load("a100-80g", &c)) { failures++; return; }
  CHECK(c.overlap_slowdown > 1.12 && c.overlap_slowdown < 1.13);
  gv_module *m = timeline_prog(false);
  CHECK(m != NULL);
  if (!m) return;
  int64_t t[4] = {0}; /* dot, all_reduce, exp, mul */
  int nops = 0;
  for (gv_op *op = m->main->body->first; op; op = op->next, nops++) {
    gv_op_cost oc;
    int k = op->code == GV_OP_DOT ? 0 : op->code == GV_OP_ALL_REDUCE ? 1 : op->code == GV_OP_EXP ? 2 : op->code == GV_OP_MUL ? 3 : -1;
    if (k == 1) t[k] = gv_cost_collective_op(&c, m, op);
    else if (k >= 0 && !gv_cost_op(&c, op, NULL, NULL, &oc)) t[k] = oc.ns;
  }
  const int64_t tdot = t[0], tcomm = t[1], texp = t[2], tmul = t[3];
  CHECK(nops <= 8);
  CHECK(tdot > 0 && tcomm > 0 && texp > 0 && tmul > 0);
  CHECK(texp > tcomm / 4); /* enough compute under the call to matter */
  fprintf(stderr, "timeline: dot %lld, all_reduce %lld, exp %lld, mul %lld ns\n", (long long)tdot, (long long)tcomm,
          (long long)texp, (long long)tmul);
  gv_timeline tl;
  int64_t adv[8] = {0};
  /* no slowdown: the critical path */
  c.overlap_slowdown = 1.0;
  CHECK(gv_cost_timeline(&c, m, &tl, adv) == nops);
  CHECK_EQ(tl.ncomm, 1);
  CHECK_EQ(tl.compute_ns, tdot + texp + tmul);
  CHECK_EQ(tl.comm_ns, tcomm);
  CHECK_EQ(tl.slowdown_ns, 0);
  fprintf(stderr, "timeline: step %lld (compute %lld slowdown %lld exposed %lld overlapped %lld waits %d)\n", (long long)tl.step_ns,
          (long long)tl.compute_ns, (long long)tl.slowdown_ns, (long long)tl.exposed_ns, (long long)tl.overlapped_ns, tl.nwait);
  CHECK(llabs(tl.step_ns - (tdot + (texp > tcomm ? texp : tcomm) + tmul)) <= 1);
  CHECK_EQ(tl.step_ns, tl.compute_ns + tl.slowdown_ns + tl.exposed_ns);
  int64_t sum = 0;
  for (int k = 0; k < nops; k++) sum += adv[k];
  CHECK_EQ(sum, tl.step_ns);
  /* a100's slowdown: the compute under the call takes longer, the step is still below the serial sum */
  c.overlap_slowdown = 1.1256;
  gv_timeline ts;
  CHECK(gv_cost_timeline(&c, m, &ts, NULL) == nops);
  CHECK(ts.slowdown_ns > 0 && ts.slowdown_ns <= (int64_t)(0.1256 * (double)texp) + 1);
  CHECK(ts.step_ns >= tl.step_ns && ts.step_ns < tdot + tcomm + texp + tmul);
  CHECK_EQ(ts.step_ns, ts.compute_ns + ts.slowdown_ns + ts.exposed_ns);
  gv_module_free(m);
  /* the reader right after the call: nothing computes under it, the whole call is exposed */
  m = timeline_prog(true);
  CHECK(m != NULL);
  if (!m) return;
  CHECK(gv_cost_timeline(&c, m, &ts, NULL) == nops);
  CHECK_EQ(ts.slowdown_ns, 0);
  CHECK_EQ(ts.exposed_ns, tcomm);
  CHECK_EQ(ts.step_ns, tdot + tcomm + tmul + texp);
  gv_module_free(m);
}

int main(void) {
  test_collectives();
  test_mesh_axes();
  test_roofline();
  test_storage();
  test_memory();
  test_gpt2_flops();
  test_gpt2_bf16();
  test_attention();
  test_timeline();
  if (failures) {
    fprintf(stderr, "test_cost: %d failures\n", failures);
    return 1;
  }
  printf("test_cost: ok\n");
  return 0;
}
