/* comm_staged.cu — the host-staged communicator backend of the CUDA target:
 * device buffers are copied to the host and moved by the MPI backend
 * (runtime/comm_mpi.c, compiled with its data calls renamed galv_mpi_*:
 * see STAGED_RENAME in the generated Makefile), then copied back. It lets
 * several ranks share one GPU (NCCL refuses two ranks on one device), so a
 * multi-rank plan can be checked on a single-GPU machine. Slow by design:
 * every call synchronises the compute stream. Counters and grouping are the
 * MPI backend's; a recv inside a group lands on the device at the next
 * galv_queue_sync (or galv_group_end). Reductions follow the MPI backend's
 * dtypes (no bf16 sums: use fp32 for multi-rank checks). --trace: a
 * collective's span is two events on the compute stream around it (the
 * compute stream's position before the staging copy, and after its results
 * landed). */
#include <string.h>

#include "galv_cuda.h"

extern "C" {
#include "../galv_comm.h"
void galv_mpi_all_reduce(galv_comm *, const void *, void *, size_t, int, galv_redop, galv_queue *);
void galv_mpi_all_gather(galv_comm *, const void *, void *, size_t, int, galv_queue *);
void galv_mpi_reduce_scatter(galv_comm *, const void *, void *, size_t, int, galv_redop, galv_queue *);
void galv_mpi_all_to_all(galv_comm *, const void *, void *, size_t, int, galv_queue *);
void galv_mpi_send(galv_comm *, int, const void *, size_t, int, galv_queue *);
void galv_mpi_recv(galv_comm *, int, void *, size_t, int, galv_queue *);
void galv_mpi_queue_sync(galv_queue *);
void galv_mpi_group_start(void);
void galv_mpi_group_end(void);
}

typedef struct {
  void *dev, *host;
  size_t n;
} pending;
static pending *pend;
static int npend, cpend, in_group;

static void *host_copy(const void *dev, size_t n) {
  void *h = malloc(n ? n : 1);
  if (!h) galv_fatal("out of memory");
  cudaCheck(cudaStreamSynchronize(galv_cu.stream));
  if (n) cudaCheck(cudaMemcpy(h, dev, n, cudaMemcpyDeviceToHost));
  return h;
}

/* results land on the compute stream (ordered before every later kernel; a
 * pageable source is staged before cudaMemcpyAsync returns, so it can be freed) */
static void flush(void) {
  for (int i = 0; i < npend; i++) {
    if (pend[i].dev && pend[i].n)
      cudaCheck(cudaMemcpyAsync(pend[i].dev, pend[i].host, pend[i].n, cudaMemcpyHostToDevice, galv_cu.stream));
    free(pend[i].host);
  }
  npend = 0;
}

static void keep(void *dev, void *h, size_t n) { /* h is copied to dev (if any) and freed at completion */
  if (npend == cpend) {
    cpend = cpend ? 2 * cpend : 16;
    pend = (pending *)realloc(pend, (size_t)cpend * sizeof *pend);
    if (!pend) galv_fatal("out of memory");
  }
  pend[npend++] = (pending){dev, h, n};
}

static void *land(void *dev, size_t n) { /* a host buffer copied to dev after the MPI call completes */
  void *h = malloc(n ? n : 1);
  if (!h) galv_fatal("out of memory");
  keep(dev, h, n);
  return h;
}

static void finish(galv_queue *q) {
  if (in_group) return;
  galv_mpi_queue_sync(q);
  flush();
}

void galv_queue_sync(galv_queue *q) {
  galv_mpi_queue_sync(q);
  flush();
}

/* buf's bytes were copied to the host at the call (host_copy); the host copy goes at the queue's sync */
void galv_queue_sync_buf(galv_queue *q, const void *buf, size_t n) { (void)q, (void)buf, (void)n; }

/* every call completed on the host already (or does now): its results are on the compute stream */
void galv_cu_queue_join(galv_queue *q) {
  int tr = galv_cu_trace_span_begin(galv_cu.stream, 0, "wait", 0); /* --trace: the compute stream's wait */
  galv_queue_sync(q);
  galv_cu_trace_span_end(tr, galv_cu.stream);
}
void galv_cu_queue_join_keep(galv_queue *q, int m) { (void)m, galv_cu_queue_join(q); }

void galv_group_start(void) {
  in_group = 1;
  galv_mpi_group_start();
}
void galv_group_end(void) {
  galv_mpi_group_end();
  in_group = 0;
}

void galv_all_reduce(galv_comm *c, const void *send, void *recv, size_t count, int dtype, galv_redop op, galv_queue *q) {
  size_t n = count * galv_dtype_size(dtype);
  int tr = galv_cu_trace_span_begin(galv_cu.stream, 1, "all_reduce", (long long)(n));
  void *h = host_copy(send, n);
  galv_mpi_all_reduce(c, h, land(recv, n), count, dtype, op, q);
  keep(NULL, h, 0);
  finish(q);
  galv_cu_trace_span_end(tr, galv_cu.stream);
}

void galv_all_gather(galv_comm *c, const void *send, void *recv, size_t count, int dtype, galv_queue *q) {
  size_t n = count * galv_dtype_size(dtype);
  int tr = galv_cu_trace_span_begin(galv_cu.stream, 1, "all_gather", (long long)(n * (size_t)galv_comm_size(c)));
  void *h = host_copy(send, n);
  galv_mpi_all_gather(c, h, land(recv, n * (size_t)galv_comm_size(c)), count, dtype, q);
  keep(NULL, h, 0);
  finish(q);
  galv_cu_trace_span_end(tr, galv_cu.stream);
}

void galv_reduce_scatter(galv_comm *c, const void *send, void *recv, size_t count, int dtype, galv_redop op,
                         galv_queue *q) {
  size_t n = count * galv_dtype_size(dtype);
  int tr = galv_cu_trace_span_begin(galv_cu.stream, 1, "reduce_scatter", (long long)(n * (size_t)galv_comm_size(c)));
  void *h = host_copy(send, n * (size_t)galv_comm_size(c));
  galv_mpi_reduce_scatter(c, h, land(recv, n), count, dtype, op, q);
  keep(NULL, h, 0);
  finish(q);
  galv_cu_trace_span_end(tr, galv_cu.stream);
}

void galv_all_to_all(galv_comm *c, const void *send, void *recv, size_t count, int dtype, galv_queue *q) {
  size_t n = count * galv_dtype_size(dtype) * (size_t)galv_comm_size(c);
  int tr = galv_cu_trace_span_begin(galv_cu.stream, 1, "all_to_all", (long long)(n));
  void *h = host_copy(send, n);
  galv_mpi_all_to_all(c, h, land(recv, n), count, dtype, q);
  keep(NULL, h, 0);
  finish(q);
  galv_cu_trace_span_end(tr, galv_cu.stream);
}

void galv_send(galv_comm *c, int peer, const void *buf, size_t count, int dtype, galv_queue *q) {
  size_t n = count * galv_dtype_size(dtype);
  void *h = host_copy(buf, n);
  galv_mpi_send(c, peer, h, count, dtype, q);
  keep(NULL, h, 0);
  finish(q);
}

void galv_recv(galv_comm *c, int peer, void *buf, size_t count, int dtype, galv_queue *q) {
  size_t n = count * galv_dtype_size(dtype);
  cudaCheck(cudaStreamSynchronize(galv_cu.stream));
  galv_mpi_recv(c, peer, land(buf, n), count, dtype, q);
  finish(q);
}
