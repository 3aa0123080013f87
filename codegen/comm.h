/* comm.h — collectives and SPMD tables of generated programs, shared by the
 * CPU emitter (codegen/cpu/emit_comm.c: its target, the per-rank weights
 * blocks and out/launch) and the CUDA emitter (codegen/cuda/emit.c). The
 * decisions are made here once: the group table (one galv_comm per distinct
 * (mesh, axes)), where sync points go, when a call is packed / unpacked
 * through scratch, the SPMD tables of runtime/galv_spmd.h. A target gives
 * the few statements that differ (cg_comm_target). A program is SPMD when
 * its module has a mesh of more than one device: one program for every rank
 * (docs/cpu-target.md "Ranks", docs/cuda-target.md "Ranks"). */
#ifndef GALV_CODEGEN_COMM_H
#define GALV_CODEGEN_COMM_H

#include <stdio.h>

#include "codegen.h"

/* What differs between targets: statements written as is (sync, end,
 * in_flight), printf formats (scratch_alloc: int s, long long bytes;
 * scratch_free: int s; axis_index: const char *dst, int group), the strided
 * copy function (dst, src, es, rank, dims, strides). */
typedef struct {
  const char *who;           /* error prefix: "cpu codegen" */
  const char *copy;          /* galv_copy_strided / galv_cu_copy_strided */
  const char *sync;          /* a sync point: later ops see every call queued so far, and may overwrite its bytes */
  const char *sync_keep;     /* printf (%d: m): a sync point for every call but the newest m (the overlap window) */
  const char *end;           /* the end of the run with calls in flight */
  const char *in_flight;     /* after a call left in flight (may be "") */
  const char *scratch_alloc; /* galv_scratch[s] = bytes (in the setup function) */
  const char *scratch_free;  /* frees galv_scratch[s] */
  const char *axis_index;    /* stores galv_comm_rank(galv_g[group]) as one int64 at dst */
  int bf16;                  /* f32 values are stored (and communicated) as bf16 */
  /* when set, instead of bf16: whether f32 value v is stored (and communicated) as bf16 (mixed storage:
   * the CUDA target's bf16 training); ctx is passed back */
  int (*half)(const void *ctx, const gv_value *v);
  const void *half_ctx;
  const char *half_dt;       /* the runtime dtype of those 16-bit values: NULL = "GALV_BF16" ("GALV_F16": fp16 storage) */
} cg_comm_target;

typedef struct cg_comm cg_comm;

/* Scans m (meshes, collective ops, shardings of the arguments and outputs).
 * Returns NULL after reporting an error. */
cg_comm *cg_comm_new(gv_module *m, const cg_comm_target *t);
void cg_comm_free(cg_comm *c);
int cg_comm_nranks(const cg_comm *c); /* 1: a single-device program */
gv_module *cg_comm_module(const cg_comm *c);
int cg_comm_is_op(const gv_op *op);  /* a collective, shard_slice or axis_index */

/* Before the run function: the groups, the queue, scratch buffers, their
 * setup and free functions, the SPMD tables (galv_spmd.h). Returns 0/-1. */
int cg_comm_decls(cg_comm *c, FILE *f);
/* First lines of the run function (lazy setup of groups and queue). */
void cg_comm_run_start(cg_comm *c, FILE *f);
/* Before each op of the schedule: a sync point when op reads the result of
 * a call still in flight or writes bytes such a call reads or writes. */
void cg_comm_before_op(cg_comm *c, FILE *f, const gv_op *op);
/* op as communication calls; p[i]: pointer expressions of the operands then
 * the results. Returns 0, -1 after an error, 1 when op is not a comm op. */
int cg_emit_comm_op(cg_comm *c, FILE *f, const gv_op *op, char p[][64]);
/* Last lines of the run function (whatever is in flight). */
void cg_comm_run_end(cg_comm *c, FILE *f);

/* The block start of rank r along every dim of a value of sharding s and
 * local dims ld (docs/sharding.md: block index = row-major over the dim's
 * axes of the rank's coordinates); whether s splits any dim. */
void cg_block_start(const gv_sharding *s, int rank, const int64_t *ld, int r, int64_t *start);
int cg_is_split(const gv_sharding *s);

/* The sh function galv_mpirun of the launch scripts (SPMD and pipeline):
 * runs mpirun, passes the ranks' lines, turns mpirun's banners into one line
 * naming the failing rank, its host and the cause (codegen/comm.c). */
extern const char cg_launch_mpirun_sh[];

/* The sh function galv_place of the pipeline's launch script: GALV_HOSTS /
 * GALV_HOSTFILE -> an OpenMPI rankfile placing each rank on its device's node
 * (codegen/comm.c). */
extern const char cg_launch_place_sh[];

#endif
