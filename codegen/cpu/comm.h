/* comm.h — the CPU emitter's collectives and SPMD parts, hooked into emit.c:
 * the shared decisions of ../comm.h with the CPU target's statements
 * (emit_comm.c), built with mpicc and runtime/comm_mpi.c; each rank reads
 * its block of every sharded parameter (weights.bin holds one block per
 * rank) and of every sharded input, and rank 0 writes the (gathered)
 * outputs. See docs/cpu-target.md, "Ranks". */
#ifndef GALV_CODEGEN_CPU_COMM_H
#define GALV_CODEGEN_CPU_COMM_H

#include "../comm.h"

extern const cg_comm_target cg_cpu_comm;

/* Rewrites DIR/NAME (weights.bin or a second entry's weights_ENTRY.bin; block_bytes, as emit.c wrote it) as one block
 * per rank when the program has more than one rank: rank r's block holds its
 * slice of every sharded parameter (arg_woff[i]: weights offset of argument
 * i, -1 when not in weights.bin; the parameter data are global tensors). */
int cg_comm_write_weights(cg_comm *c, const char *dir, const char *name, int64_t block_bytes, const int64_t *arg_woff);
/* Writes DIR/launch (multi-rank programs). */
int cg_comm_write_launch(cg_comm *c, const char *dir);

#endif
