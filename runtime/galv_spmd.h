/* galv_spmd.h — ranks of generated CPU programs (docs/cpu-target.md, Ranks).
 *
 * One program.c runs on every rank (SPMD). program.c defines the tables
 * below (a single-device program too: galv_nranks 1, nothing split);
 * runtime/spmd.c gives main.c what differs per rank: the world, its block of
 * weights.bin, its block of each input, the gathered outputs and the byte
 * check against the planner's prediction. */
#ifndef GALV_SPMD_H
#define GALV_SPMD_H

#include <stdlib.h>

#include "galv_comm.h"
#include "galv_rt.h"

/* A graph input or output of a sharded program: global dims and, per rank,
 * the start of its block (galv_nranks x rank entries); NULL: replicated
 * (every rank holds the whole tensor). Indexed like galv_inputs / galv_outputs. */
typedef struct {
  int64_t gdims[GALV_RT_MAX_RANK];
  const int64_t *starts;
} galv_io_split;

/* ---- defined by program.c */
extern const int galv_nranks;                 /* ranks the program was partitioned for (1: one device) */
extern const galv_io_split galv_input_split[];
extern const galv_io_split galv_output_split[];
extern const galv_io_split galv_state_split[]; /* training: per galv_state entry (parameters, optimizer state) */
/* bytes one run sends per rank, as the planner predicted (sum of the
 * collective ops' `bytes`): all_reduce, all_gather, reduce_scatter,
 * all_to_all; -1: not stated in the IR */
extern const int64_t galv_comm_predicted[4];
/* 1: galv_comm_predicted is the planner's prediction from the global
 * program (independent of the partitioned collectives); 0: the sum of the
 * collectives' `bytes` (a hand-written partitioned program, bf16 storage).
 * The printed counters say which, so a test can require the independent one. */
extern const int galv_comm_predicted_global;
void galv_program_comm_free(void);            /* the queue and scratch of galv_program_run */

/* ---- runtime/spmd.c */
/* World setup (MPI under mpirun), checks the rank count against
 * galv_nranks; progname becomes "program[R]" and ranks other than 0 stop
 * printing on stdout. */
void galv_spmd_init(int *argc, char ***argv);
int galv_spmd_rank(void);
/* Pipeline stages (runtime/pipe.c): instead of galv_spmd_init, this rank's
 * place in its stage's sub-world (galv_comm_world_split); checks size
 * against galv_nranks. */
void galv_spmd_attach(int rank, int size);
/* weights.bin of an N-rank program holds N blocks of galv_weights_bytes,
 * each at a multiple of galv_spmd_weights_stride(), then the checksum
 * trailer (galv_file.h); maps this rank's block and checks its CRC-32. */
int64_t galv_spmd_weights_stride(void);
const char *galv_spmd_map_weights(const char *path, size_t *len);
/* The same for a weights file of `bytes` per rank (a second entry's, gv_emit_options.entry). */
const char *galv_spmd_map_weights_of(const char *path, int64_t bytes, size_t *len);
/* The global form of input i (dims, nbytes) that its file must have. */
galv_io galv_spmd_global_io(const galv_io *local, const galv_io_split *s);
/* Copies this rank's block of input i from the global tensor into dst. */
void galv_spmd_load_input(int i, void *dst, const void *global);
/* Output o as a global tensor: split outputs are gathered from every rank
 * (a collective: every rank calls it for every output, in order). Returns
 * the data (valid until the next call) and its global form in *g. */
const void *galv_spmd_output(int o, const void *local, galv_io *g);
/* Checks the runtime's byte counters (after `runs` runs) against
 * galv_comm_predicted (one error line when they differ) and, with print,
 * prints them. Call before galv_spmd_output (which communicates). */
void galv_spmd_check_bytes(int print, long runs);
/* The same for any tensor l with split s: gather (a collective: every rank
 * calls it) into a global tensor (valid until the next gather / output),
 * and cut this rank's block out of a global tensor into dst. */
const void *galv_spmd_gather(const galv_io *l, const galv_io_split *s, const void *local, galv_io *g);
void galv_spmd_block(const galv_io *l, const galv_io_split *s, void *dst, const void *global);
/* The global tensor from every rank's block of l, rank-ordered in gathered
 * (galv_nranks x l->nbytes, as an all_gather leaves them; s split). Targets
 * whose buffers are not host memory gather themselves (runtime/cuda/main_cuda.cu). */
void galv_spmd_place(const galv_io *l, const galv_io_split *s, const void *gathered, void *global);
void galv_spmd_finalize(void);

#endif
