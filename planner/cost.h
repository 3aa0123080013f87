/* cost.h — the cost model the planner reads (docs/cluster.md): per-op
 * compute time on the roofline, collective time by the alpha-beta formulas
 * of REFERENCES.md (hierarchical when a group spans nodes), and memory per
 * device. Every time is an integer number of nanoseconds, so sums are exact
 * and ties between plans are exact. Functions only: no pass logic, no IR
 * rewriting; the op table's semantics (ir/ops.def) give FLOPs and bytes. */
#ifndef GALV_COST_H
#define GALV_COST_H

#include <stdbool.h>
#include <stdint.h>

#include "cluster.h"
#include "ir/attention.h"
#include "ir/ir.h"

typedef struct {
  int64_t flops;        /* floating-point operations (a multiply-add is 2) */
  int64_t bytes;        /* device-memory traffic: operands read + results written */
  int64_t ns;           /* max(flops / peak, bytes / bandwidth), rounded up */
  bool compute_bound;   /* flops / peak >= bytes / bandwidth */
} gv_op_cost;

/* Cost of one op with the given operand and result types (the planner
 * passes local, sharded shapes; NULL: the op's own types). Views, constants
 * and terminators cost 0; a galv.fused op counts the FLOPs of its body and
 * only its own operands and results as bytes (the body stays in registers).
 * Returns 0, or -1 when a type is not static (out is zeroed then). */
int gv_cost_op(const gv_cluster *c, const gv_op *op, const gv_type *opnd, const gv_type *res, gv_op_cost *out);
/* FLOPs alone (same conventions). */
int64_t gv_op_flops(const gv_op *op, const gv_type *opnd, const gv_type *res);

/* Fused attention. With c->fused_attention (the cuda target) the chains
 * dot(Q, K) -> [elementwise] -> softmax -> dot(P, V) that the emitter runs
 * as one kernel (ir/attention.h: the first GV_ATTN_MAX in program order)
 * are priced as that kernel runs: their FLOPs, but bytes only for Q, K, V,
 * the elementwise op's other operands (mask, scale) and the output, never
 * the S x S scores. gv_cost_attention_chains finds them in m's body (none
 * without the flag) and returns their number; gv_cost_attention_op prices
 * an op of one of them: the whole chain at its first dot, 0 at the other
 * three (returns 1), or returns 0 when op is in none. The memory plan still
 * gives the scores arena bytes (the same plan serves the CPU build of a
 * CUDA program), so gv_cost_memory is unchanged. */
int gv_cost_attention_chains(const gv_cluster *c, const gv_module *m, gv_attn_chain *out);
int gv_cost_attention_op(const gv_cluster *c, const gv_attn_chain *ch, int n, const gv_op *op, gv_op_cost *out);

typedef enum {
  GV_COLL_ALL_REDUCE,
  GV_COLL_ALL_GATHER,     /* bytes: the gathered (full) size */
  GV_COLL_REDUCE_SCATTER, /* bytes: the unreduced (full) size */
  GV_COLL_ALL_TO_ALL,     /* bytes: each rank's buffer */
  GV_COLL_P2P,            /* bytes: the message; group ignored */
  GV_COLL_BROADCAST,
  GV_COLL_COUNT
} gv_coll_kind;
const char *gv_coll_name(gv_coll_kind k);

/* Time of one collective over a group of `group` devices, `bytes` as above.
 * spans_nodes: the group crosses nodes with devices_per_node members per
 * node (fewer when the group is smaller: then one member per node); the
 * two-level formula applies. A group of 1 costs 0. */
int64_t gv_cost_collective(const gv_cluster *c, gv_coll_kind kind, int64_t bytes, int64_t group, bool spans_nodes);
/* The same with the layout explicit: per_node members in each of `nodes`
 * nodes (group = per_node * nodes). */
int64_t gv_cost_collective_levels(const gv_cluster *c, gv_coll_kind kind, int64_t bytes, int64_t per_node,
                                  int64_t nodes);
/* One mesh axis's collective: ranks are numbered row-major over the mesh
 * axes and packed into nodes of devices_per_node, so an axis with stride s
 * (the product of the later axes' sizes) and size n has min(n, max(1, k/s))
 * members per node. */
int64_t gv_cost_mesh_axis(const gv_cluster *c, const gv_mesh *mesh, int axis, gv_coll_kind kind, int64_t bytes);
/* The same over the axes in mask (a group of their product; p2p: across nodes when the group spans several). */
int64_t gv_cost_mesh_group(const gv_cluster *c, const gv_mesh *mesh, unsigned mask, gv_coll_kind kind, int64_t bytes);

/* A collective op of the partitioned program (galv.all_reduce, ...: attrs
 * mesh, axes; docs/sharding.md): its time on the cluster, the group laid
 * out as gv_cost_mesh_axis does. 0 for other ops; -1 for an unknown mesh or
 * axis or a type that is not static. */
int64_t gv_cost_collective_op(const gv_cluster *c, const gv_module *m, const gv_op *op);

/* The step time of a local program (m's ops in order, after spmd-partition,
 * fuse and memory-plan, as it runs): the critical path of the compute and
 * communication streams (cost.c, docs/planner.md "Step time"). Collectives
 * run on the communication stream in program order from when the compute
 * stream posts them; an op waits for every collective in flight where the
 * emitters' sync rule (ir/comm_sync.h) syncs; compute overlapped with
 * communication in flight runs c->overlap_slowdown times slower. */
typedef struct {
  int64_t step_ns;      /* when both streams are done */
  int64_t compute_ns;   /* the compute ops' own times, summed (the roofline's) */
  int64_t comm_ns;      /* the collectives' alpha-beta times, summed */
  int64_t slowdown_ns;  /* extra compute time of the work overlapped with communication */
  int64_t exposed_ns;   /* communication the compute stream waits for: step - compute - slowdown */
  int64_t overlapped_ns; /* compute-stream time with communication in flight */
  int ncomm, comm_unknown; /* collectives; those naming no known mesh axis (timed 0) */
  int nwait;            /* sync points (and the run's end) where the compute stream waited */
  double slowdown;      /* the factor applied */
} gv_timeline;
/* Fills out; adv (NULL, or one per top-level op of the body) gets each op's
 * share of the step: a compute op its (slowed) time, a collective the part
 * of each wait of the compute stream that it runs in (the communication
 * stream is busy through a wait), so the shares sum to step_ns. Returns the
 * number of top-level ops. */
int gv_cost_timeline(const gv_cluster *c, const gv_module *m, gv_timeline *out, int64_t *adv);
/* gv_cost_timeline, and op_ns (NULL, or one per top-level op) gets each op's
 * own time as priced there: a collective's gv_cost_collective_op (0 when
 * unknown), a compute op's fused-attention or gv_cost_op ns, -1 for an op
 * the cost model cannot price (skipped). */
int gv_cost_timeline_ns(const gv_cluster *c, const gv_module *m, gv_timeline *out, int64_t *adv, int64_t *op_ns);
/* gv_cost_timeline_ns with the collectives flagged in `free_coll` (NULL, or
 * one per top-level op) taking no time on the communication stream: the
 * timeline of the program as if they were not there (the planner's
 * microbatch stand-ins: the middle microbatches have no once-per-step
 * reduction beside them). */
int gv_cost_timeline_free(const gv_cluster *c, const gv_module *m, gv_timeline *out, int64_t *adv, int64_t *op_ns,
                          const bool *free_coll);

/* Bytes each rank sends per run of the program, per collective kind
 * (all_reduce, all_gather, reduce_scatter, all_to_all), predicted from the
 * GLOBAL program with shardings before spmd-partition (planner/
 * comm_predict.c): reshards and vocab-parallel cross entropy, by the ring
 * formulas of runtime/galv_comm.h. Independent of the partitioned program,
 * it is what the runtime's wire counter is checked against. Returns 0, or
 * -1 when a type is not static or a reshard is not one spmd-partition
 * lowers (out is then meaningless). */
int gv_cost_comm_bytes(const gv_module *m, int64_t out[4]);

/* Memory per device, bytes. Activations are the memory plan's peak. */
typedef struct {
  int64_t params, grads, optimizer, activations, arena;
  int64_t working_copy; /* ZeRO-1/2, 16-bit training: the whole 16-bit copies of the split master weights (in the arena) */
  int64_t constants;    /* the program's constant tensors (weights.bin after the parameters; 64-byte aligned) */
  int64_t comm;         /* the collectives' pack / unpack buffers: two of the largest operand or result
                         * (codegen/comm.c allocates them so on both targets) */
  int64_t convert;      /* 16-bit storage: the largest per-call conversion scratch (the target's: fp32 GEMM operands
                         * to bf16, ... on the GPU, cost.c convert_scratch; 16-bit operands widened to fp32 on the
                         * CPU, gv_cost_convert_fn); 0 in fp32 */
  int64_t total;        /* params + optimizer + arena + constants + comm + convert (the arena holds gradients and
                         * activations) */
} gv_mem;
/* From the galv.arena op that memory-plan writes (param_bytes, ...; for
 * inference only bytes), or from the function's arguments when absent. */
void gv_cost_memory(const gv_module *m, gv_mem *out);
/* The conversion scratch gv_cost_memory prices: NULL (the default) the CUDA
 * kernels' (cost.c convert_scratch: fp32 operands a kernel reads 16-bit);
 * else this function's figure (galvc sets the CPU emitter's,
 * codegen/codegen.h gv_cpu_convert_scratch, for --target cpu: its kernels
 * compute in fp32 and widen 16-bit operands into scratch of their own;
 * a negative figure falls back to the CUDA kernels'). */
extern int64_t (*gv_cost_convert_fn)(const gv_module *m);
/* Model states for `params` parameter bytes (fp32-sized: 4 per parameter)
 * under mixed-precision Adam as ZeRO counts them: 16 bytes per parameter,
 * optimizer states divided by dp for ZeRO stage >= 1, gradients for >= 2,
 * weights for 3 (REFERENCES.md, Memory). */
int64_t gv_mem_model_states(int64_t nparams, int zero_stage, int64_t dp);
bool gv_mem_fits(const gv_cluster *c, const gv_mem *m);

/* Writes the per-op cost table of the module's program and its totals to
 * file (a FILE *): one line per op with FLOPs, bytes, time and what bounds
 * it, then totals and the memory per device against the cluster. */
void gv_cost_report(const gv_cluster *c, const gv_module *m, void *file);

#endif
