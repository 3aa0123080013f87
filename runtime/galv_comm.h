/* galv_comm.h — the communicator interface of generated programs.
 *
 * NCCL's shape from the start (see ../shared/ARCHITECTURE.md, Targets):
 * every call is non-blocking and ordered on a queue (a CUDA stream on the
 * GPU, a FIFO of pending requests on the CPU); buffers are device pointers
 * (host pointers on the CPU target); send/recv can be grouped; one
 * sub-communicator per mesh-axis group. The MPI backend (runtime/comm_mpi.c)
 * implements it for the CPU target; the NCCL backend will implement the same
 * header. Nothing here blocks except galv_queue_sync, galv_queue_sync_keep and
 * galv_queue_sync_buf.
 *
 * Every call counts the bytes it moves per rank (what one rank sends) so
 * that tests can compare the runtime's count with the planner's prediction.
 */
#ifndef GALV_COMM_H
#define GALV_COMM_H

#include <stddef.h>
#include <stdint.h>

typedef struct galv_comm galv_comm;   /* a group of ranks (a mesh-axis group) */
typedef struct galv_queue galv_queue; /* ordering of communication calls */

typedef enum { GALV_RED_SUM, GALV_RED_MAX } galv_redop;

/* World setup: called once by main; rank/size from the launcher (MPI). */
int galv_comm_world_init(int *argc, char ***argv, int *rank, int *size);
void galv_comm_world_finalize(void);
/* The group of ranks that share every mesh coordinate except those on the
 * given axes. mesh_shape has nmesh dims (row-major rank numbering); axes is
 * a bit mask over mesh dims. Collective across the world: every rank calls
 * it with the same arguments, in the same order. */
galv_comm *galv_comm_group(const int64_t *mesh_shape, int nmesh, unsigned axes_mask);
/* Pipeline stages (runtime/pipe.c; the MPI and the CUDA backends): splits
 * the world by color (key: the world rank), every rank calls it once before
 * any galv_comm_group. Afterwards galv_comm_group builds a program's mesh
 * inside this rank's sub-world (mesh size == sub-world size, mesh ranks =
 * sub-world ranks). Returns a group over the whole world (p2p between the
 * stages, world ranks); *sub_rank, *sub_size: this rank's place in its color. */
galv_comm *galv_comm_world_split(int color, int *sub_rank, int *sub_size);
/* After galv_comm_world_split: another group over the whole world whose
 * messages never match the first's (p2p carries no tags; runtime/pipe.c's
 * interleaved schedule passes its baton here, apart from the data). */
galv_comm *galv_comm_world_dup(void);
int galv_comm_rank(const galv_comm *c);
int galv_comm_size(const galv_comm *c);

galv_queue *galv_queue_new(void);
void galv_queue_sync(galv_queue *q); /* waits for every call queued so far */
/* Waits for every call queued so far but the newest m collectives (and what
 * was queued after the oldest of them): the overlap window's wait
 * (ir/comm_sync.h); m 0: galv_queue_sync. */
void galv_queue_sync_keep(galv_queue *q, int m);
/* Completes the calls queued on q that read or write [buf, buf + n), once
 * the caller knows their peers have them (a point-to-point send whose
 * receiver has since answered): buf can then be freed. Only those calls are
 * waited for (the MPI backend); a backend whose queue runs in order (a CUDA
 * stream) is past them already, and the host-staged one copied buf at the
 * call: there it returns at once. */
void galv_queue_sync_buf(galv_queue *q, const void *buf, size_t n);
void galv_queue_free(galv_queue *q);

/* dtype: the runtime's GALV_F32... codes (galv_rt.h). count: elements. */
void galv_all_reduce(galv_comm *c, const void *send, void *recv, size_t count, int dtype, galv_redop op,
                     galv_queue *q);
/* recv holds size * count elements, rank-ordered along the leading extent. */
void galv_all_gather(galv_comm *c, const void *send, void *recv, size_t count, int dtype, galv_queue *q);
/* send holds size * count elements; recv gets this rank's reduced chunk. */
void galv_reduce_scatter(galv_comm *c, const void *send, void *recv, size_t count, int dtype, galv_redop op,
                         galv_queue *q);
/* send/recv hold size chunks of count elements; chunk j goes to rank j. */
void galv_all_to_all(galv_comm *c, const void *send, void *recv, size_t count, int dtype, galv_queue *q);
/* Point to point; between group_start/end calls they form one group that
 * cannot deadlock on ordering. */
void galv_group_start(void);
void galv_group_end(void);
void galv_send(galv_comm *c, int peer, const void *buf, size_t count, int dtype, galv_queue *q);
void galv_recv(galv_comm *c, int peer, void *buf, size_t count, int dtype, galv_queue *q);

/* Bytes this rank has sent, per collective kind, since the start, counted
 * as the ring algorithms move them (n = bytes of the full buffer, p = group
 * size): all_reduce 2(p-1)/p*n, all_gather and reduce_scatter (p-1)/p*n
 * (n = the gathered / unreduced size), all_to_all (p-1)/p*n, send n. The MPI
 * backend counts at the MPI boundary, from the arguments of the MPI calls
 * themselves (comm_mpi.c, the wire counter). The planner predicts with the
 * same formulas from the global program (planner/comm_predict.c), so the
 * two must agree exactly for the calls the program really makes. */
typedef struct {
  uint64_t all_reduce, all_gather, reduce_scatter, all_to_all, send;
  /* the calls handed to MPI / NCCL per collective kind (a gradient bucket
   * is one call: docs/planner.md, "Gradient buckets") */
  uint64_t calls[4]; /* all_reduce, all_gather, reduce_scatter, all_to_all */
} galv_comm_bytes;
galv_comm_bytes galv_comm_counters(void);

#endif
