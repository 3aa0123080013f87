/* comm.h — the CPU emitter's collectives and SPMD parts (emit_comm.c),
 * hooked into emit.c. A program is SPMD when its module has a mesh of more
 * than one device: one program.c for every rank, built with mpicc and
 * runtime/comm_mpi.c; each rank reads its block of every sharded parameter
 * (weights.bin holds one block per rank) and of every sharded input, and
 * rank 0 writes the (gathered) outputs. See docs/cpu-target.md, "Ranks". */
#ifndef GALV_CODEGEN_CPU_COMM_H
#define GALV_CODEGEN_CPU_COMM_H

#include <stdio.h>

#include "../codegen.h"

typedef struct cg_comm cg_comm;

/* Scans m (meshes, collective ops, shardings of the arguments and outputs).
 * Returns NULL after reporting an error. */
cg_comm *cg_comm_new(gv_module *m);
void cg_comm_free(cg_comm *c);
int cg_comm_nranks(const cg_comm *c); /* 1: a single-device program */
int cg_comm_is_op(const gv_op *op);  /* a collective, shard_slice or axis_index */

/* Before galv_program_run: the groups, the queue, scratch buffers, their
 * setup and free functions, the SPMD tables (galv_spmd.h). Returns 0/-1. */
int cg_comm_decls(cg_comm *c, FILE *f);
/* First lines of galv_program_run (lazy setup of groups and queue). */
void cg_comm_run_start(cg_comm *c, FILE *f);
/* Before each op of the schedule: a galv_queue_sync when op reads the result
 * of a call still in flight or writes bytes such a call reads or writes. */
void cg_comm_before_op(cg_comm *c, FILE *f, const gv_op *op);
/* op as communication calls; p[i]: pointer expressions of the operands then
 * the results. Returns 0, -1 after an error, 1 when op is not a comm op. */
int cg_emit_comm_op(cg_comm *c, FILE *f, const gv_op *op, char p[][64]);
/* Last lines of galv_program_run (sync of whatever is in flight). */
void cg_comm_run_end(cg_comm *c, FILE *f);
/* Rewrites DIR/weights.bin (block_bytes, as emit.c wrote it) as one block
 * per rank when the program has more than one rank: rank r's block holds its
 * slice of every sharded parameter (arg_woff[i]: weights offset of argument
 * i, -1 when not in weights.bin; the parameter data are global tensors). */
int cg_comm_write_weights(cg_comm *c, const char *dir, int64_t block_bytes, const int64_t *arg_woff);
/* Writes DIR/launch (multi-rank programs). */
int cg_comm_write_launch(cg_comm *c, const char *dir);

#endif
