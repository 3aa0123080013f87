/* comm_nccl.cu — the NCCL backend of the communicator interface
 * (runtime/galv_comm.h) for the CUDA target. MPI only bootstraps: rank and
 * size come from mpirun, every sub-communicator (a mesh-axis group) is an
 * MPI_Comm_split whose rank 0 makes the ncclUniqueId and broadcasts it.
 * A galv_queue is a CUDA stream of its own (the communication stream); each
 * call first makes it wait for the work already enqueued on the compute
 * stream (an event), so collectives overlap later compute but never read a
 * buffer before it is written. galv_queue_sync polls the stream and
 * ncclCommGetAsyncError of every communicator: an NCCL error, or no progress
 * for GALV_COMM_TIMEOUT seconds (default 300), aborts every rank with one
 * clear line instead of hanging. Byte counters follow galv_comm.h.
 * Pipeline stages: galv_comm_world_split moves the meshes into the stage's
 * sub-world and returns a world-wide communicator for the p2p between them. */
#define OMPI_SKIP_MPICXX 1 /* the C API only (OpenMPI C++ bindings do not build with -Werror) */
#include <mpi.h>
#include <nccl.h>
#include <string.h>
#include <time.h>

#include "galv_cuda.h"

extern "C" {
#include "../galv_comm.h"
}

static void abort_all(void) { MPI_Abort(MPI_COMM_WORLD, 1); }

#define ncclCheck(call)                                                                              \
  do {                                                                                               \
    ncclResult_t r_ = (call);                                                                        \
    if (r_ != ncclSuccess && r_ != ncclInProgress)                                                   \
      galv_cu_fail("NCCL", #call, ncclGetErrorString(r_), __FILE__, __LINE__);                       \
  } while (0)
#define mpiCheck(call)                                                                               \
  do {                                                                                               \
    int r_ = (call);                                                                                 \
    if (r_ != MPI_SUCCESS) galv_cu_fail("MPI", #call, "call failed", __FILE__, __LINE__);            \
  } while (0)

struct galv_comm {
  ncclComm_t nc;
  MPI_Comm mpi;
  int rank, size;
};
enum { KEEP_RING = 64 }; /* galv_cu_queue_join_keep: the positions after the last KEEP_RING collectives */
struct galv_queue {
  cudaStream_t s;
  cudaEvent_t ready; /* compute stream position the next call waits for */
  cudaEvent_t done;  /* communication stream position the compute stream waits for (galv_cu_queue_join) */
  cudaEvent_t after[KEEP_RING]; /* communication stream position after collective number i (slot i % KEEP_RING) */
  long long posted;  /* collectives posted */
};

enum { MAXCOMMS = 64 };
static galv_comm *comms[MAXCOMMS];
static int ncomms, world_rank, world_size;
/* where meshes live: the world, or this rank's sub-world after galv_comm_world_split (pipeline stages) */
static MPI_Comm base = MPI_COMM_WORLD;
static int base_rank, base_size, base_split;
static galv_comm_bytes counters;

int galv_comm_world_init(int *argc, char ***argv, int *rank, int *size) {
  mpiCheck(MPI_Init(argc, argv));
  mpiCheck(MPI_Comm_rank(MPI_COMM_WORLD, &world_rank));
  mpiCheck(MPI_Comm_size(MPI_COMM_WORLD, &world_size));
  galv_cu_rank = world_rank;
  galv_cu_abort_all = abort_all;
  /* one device per rank on a node: the local rank picks it (GALV_CUDA_DEVICE overrides) */
  MPI_Comm local;
  int lrank = 0;
  mpiCheck(MPI_Comm_split_type(MPI_COMM_WORLD, MPI_COMM_TYPE_SHARED, world_rank, MPI_INFO_NULL, &local));
  mpiCheck(MPI_Comm_rank(local, &lrank));
  mpiCheck(MPI_Comm_free(&local));
  int ndev = 0;
  if (cudaGetDeviceCount(&ndev) != cudaSuccess) ndev = 0; /* no device: galv_cu_init says so in one line */
  if (ndev > 0 && !getenv("GALV_CUDA_DEVICE")) {
    char b[16];
    snprintf(b, sizeof b, "%d", lrank % (ndev ? ndev : 1));
    setenv("GALV_CUDA_DEVICE", b, 1);
  }
  base = MPI_COMM_WORLD, base_rank = world_rank, base_size = world_size;
  *rank = world_rank, *size = world_size;
  return 0;
}

/* an NCCL communicator over the MPI communicator m (rank 0 makes the id) */
static galv_comm *nccl_over(MPI_Comm m) {
  galv_comm *c = (galv_comm *)calloc(1, sizeof *c);
  if (!c || ncomms == MAXCOMMS) galv_fatal("too many communicators");
  c->mpi = m;
  mpiCheck(MPI_Comm_rank(c->mpi, &c->rank));
  mpiCheck(MPI_Comm_size(c->mpi, &c->size));
  ncclUniqueId id;
  if (c->rank == 0) ncclCheck(ncclGetUniqueId(&id));
  mpiCheck(MPI_Bcast(&id, sizeof id, MPI_BYTE, 0, c->mpi));
  ncclCheck(ncclCommInitRank(&c->nc, c->size, id, c->rank));
  comms[ncomms++] = c;
  return c;
}

/* Pipeline stages (galv_comm.h): meshes inside this rank's stage from now
 * on; the returned group spans the world (p2p between the stages). Called
 * after the device is chosen (NCCL binds a communicator to the current device). */
galv_comm *galv_comm_world_split(int color, int *sub_rank, int *sub_size) {
  if (base_split || ncomms) galv_fatal("galv_comm_world_split: called twice or after galv_comm_group");
  if (color < 0) galv_fatal("galv_comm_world_split: negative color %d", color);
  mpiCheck(MPI_Comm_split(MPI_COMM_WORLD, color, world_rank, &base));
  mpiCheck(MPI_Comm_rank(base, &base_rank));
  mpiCheck(MPI_Comm_size(base, &base_size));
  base_split = 1;
  MPI_Comm w;
  mpiCheck(MPI_Comm_dup(MPI_COMM_WORLD, &w));
  galv_comm *c = nccl_over(w);
  *sub_rank = base_rank, *sub_size = base_size;
  return c;
}

/* After galv_comm_world_split: a second world-wide group (its messages apart from the first's). */
galv_comm *galv_comm_world_dup(void) {
  if (!base_split) galv_fatal("galv_comm_world_dup before galv_comm_world_split");
  MPI_Comm w;
  mpiCheck(MPI_Comm_dup(MPI_COMM_WORLD, &w));
  return nccl_over(w);
}

void galv_comm_world_finalize(void) {
  for (int i = 0; i < ncomms; i++) {
    ncclCheck(ncclCommDestroy(comms[i]->nc));
    mpiCheck(MPI_Comm_free(&comms[i]->mpi));
    free(comms[i]);
  }
  ncomms = 0;
  if (base_split) mpiCheck(MPI_Comm_free(&base));
  base = MPI_COMM_WORLD, base_split = 0;
  galv_cu_abort_all = NULL;
  mpiCheck(MPI_Finalize());
}

galv_comm *galv_comm_group(const int64_t *mesh_shape, int nmesh, unsigned axes_mask) {
  int64_t total = 1, coord[8], r = base_rank;
  if (nmesh < 0 || nmesh > 8) galv_fatal("galv_comm_group: a mesh has 0 to 8 axes, got %d", nmesh);
  for (int d = 0; d < nmesh; d++) total *= mesh_shape[d];
  if (total != base_size)
    galv_fatal("the program was partitioned for a mesh of %lld ranks, but %d were started%s", (long long)total, base_size,
               base_split ? " for its pipeline stage" : "");
  for (int d = nmesh - 1; d >= 0; d--) coord[d] = r % mesh_shape[d], r /= mesh_shape[d];
  int color = 0; /* row-major index over the axes not in the group */
  for (int d = 0; d < nmesh; d++)
    if (!(axes_mask >> d & 1)) color = color * (int)mesh_shape[d] + (int)coord[d];
  MPI_Comm m;
  mpiCheck(MPI_Comm_split(base, color, base_rank, &m));
  return nccl_over(m);
}

int galv_comm_rank(const galv_comm *c) { return c->rank; }
int galv_comm_size(const galv_comm *c) { return c->size; }

galv_queue *galv_queue_new(void) {
  galv_queue *q = (galv_queue *)calloc(1, sizeof *q);
  if (!q) galv_fatal("out of memory");
  cudaCheck(cudaStreamCreateWithFlags(&q->s, cudaStreamNonBlocking));
  cudaCheck(cudaEventCreateWithFlags(&q->ready, cudaEventDisableTiming));
  cudaCheck(cudaEventCreateWithFlags(&q->done, cudaEventDisableTiming));
  for (int i = 0; i < KEEP_RING; i++) cudaCheck(cudaEventCreateWithFlags(&q->after[i], cudaEventDisableTiming));
  return q;
}

void galv_queue_free(galv_queue *q) {
  if (!q) return;
  cudaCheck(cudaEventDestroy(q->ready));
  cudaCheck(cudaEventDestroy(q->done));
  for (int i = 0; i < KEEP_RING; i++) cudaCheck(cudaEventDestroy(q->after[i]));
  cudaCheck(cudaStreamDestroy(q->s));
  free(q);
}

static double now_s(void) {
  struct timespec t;
  clock_gettime(CLOCK_MONOTONIC, &t);
  return (double)t.tv_sec + 1e-9 * (double)t.tv_nsec;
}

/* The stream runs its calls in order and a send whose receiver has its bytes has run: nothing to wait for. */
void galv_queue_sync_buf(galv_queue *q, const void *buf, size_t n) { (void)q, (void)buf, (void)n; }

/* Waits for the queue while watching every communicator for asynchronous errors. */
void galv_queue_sync(galv_queue *q) {
  const char *env = getenv("GALV_COMM_TIMEOUT");
  double limit = env ? atof(env) : 300.0, t0 = now_s();
  for (;;) {
    cudaError_t e = cudaStreamQuery(q->s);
    if (e == cudaSuccess) return;
    if (e != cudaErrorNotReady) galv_cu_fail("CUDA", "cudaStreamQuery(communication stream)", cudaGetErrorString(e), __FILE__, __LINE__);
    for (int i = 0; i < ncomms; i++) {
      ncclResult_t ae = ncclSuccess;
      ncclCheck(ncclCommGetAsyncError(comms[i]->nc, &ae));
      if (ae != ncclSuccess && ae != ncclInProgress) {
        ncclCommAbort(comms[i]->nc);
        galv_cu_fail("NCCL", "asynchronous error (ncclCommGetAsyncError)", ncclGetErrorString(ae), __FILE__, __LINE__);
      }
    }
    if (now_s() - t0 > limit) {
      fprintf(stderr, "%s: error: rank %d: a collective did not complete within %g s (peers not calling it, or a "
                      "deadlock); aborting all ranks (GALV_COMM_TIMEOUT sets the limit)\n", galv_progname, world_rank, limit);
      abort_all();
    }
    struct timespec ns = {0, 50000};
    nanosleep(&ns, NULL);
  }
}

/* the compute stream continues after everything queued on q so far */
void galv_cu_queue_join(galv_queue *q) {
  cudaCheck(cudaEventRecord(q->done, q->s));
  int tr = galv_cu_trace_span_begin(galv_cu.stream, 0, "wait", 0); /* --trace: the compute stream's wait */
  cudaCheck(cudaStreamWaitEvent(galv_cu.stream, q->done, 0));
  galv_cu_trace_span_end(tr, galv_cu.stream);
}

/* a collective was queued on q: its end position, for galv_cu_queue_join_keep */
static void posted(galv_queue *q) {
  cudaCheck(cudaEventRecord(q->after[q->posted % KEEP_RING], q->s));
  q->posted++;
}

/* the compute stream continues after every collective queued on q but the
 * newest m (the overlap window, ir/comm_sync.h): it waits for the position
 * after collective posted - m - 1; m 0, or a position no longer recorded:
 * after everything (galv_cu_queue_join) */
void galv_cu_queue_join_keep(galv_queue *q, int m) {
  long long i = q->posted - m - 1;
  if (m <= 0 || m >= KEEP_RING) {
    galv_cu_queue_join(q);
    return;
  }
  if (i < 0) return;
  int tr = galv_cu_trace_span_begin(galv_cu.stream, 0, "wait", 0);
  cudaCheck(cudaStreamWaitEvent(galv_cu.stream, q->after[i % KEEP_RING], 0));
  galv_cu_trace_span_end(tr, galv_cu.stream);
}

static ncclDataType_t nccl_type(int dt, const char *who) {
  switch (dt) {
  case GALV_F32: return ncclFloat32;
  case GALV_F64: return ncclFloat64;
  case GALV_F16: return ncclFloat16;
  case GALV_BF16: return ncclBfloat16;
  case GALV_I64: return ncclInt64;
  case GALV_I32: return ncclInt32;
  case GALV_I8: return ncclInt8;
  case GALV_U8: case GALV_BOOL: return ncclUint8;
  default: galv_fatal("%s: dtype %s is not supported by the NCCL backend", who, galv_dtype_name(dt));
  }
}

/* the communication stream starts after everything enqueued on the compute stream so far; --trace: the
 * collective's span starts there (returned: its id, for traced()) */
static int after_compute(galv_queue *q, const char *what, size_t bytes) {
  cudaCheck(cudaEventRecord(q->ready, galv_cu.stream));
  cudaCheck(cudaStreamWaitEvent(q->s, q->ready, 0));
  return what ? galv_cu_trace_span_begin(q->s, 1, what, (long long)bytes) : -1; /* p2p (pipeline stages): untraced */
}
static void traced(galv_queue *q, int tr) { galv_cu_trace_span_end(tr, q->s); }

static uint64_t ring(size_t n, int p, int twice) { return p > 1 ? (uint64_t)n * (uint64_t)(twice ? 2 : 1) * (uint64_t)(p - 1) / (uint64_t)p : 0; }

void galv_all_reduce(galv_comm *c, const void *send, void *recv, size_t count, int dtype, galv_redop op, galv_queue *q) {
  int tr = after_compute(q, "all_reduce", count * galv_dtype_size(dtype));
  ncclCheck(ncclAllReduce(send, recv, count, nccl_type(dtype, "all_reduce"), op == GALV_RED_MAX ? ncclMax : ncclSum,
                          c->nc, q->s));
  traced(q, tr);
  counters.all_reduce += ring(count * galv_dtype_size(dtype), c->size, 1);
  counters.calls[0]++;
  posted(q);
  galv_test_point("all_reduce"); /* tests/rank_kill.sh: this rank's part posted */
}

void galv_all_gather(galv_comm *c, const void *send, void *recv, size_t count, int dtype, galv_queue *q) {
  int tr = after_compute(q, "all_gather", count * galv_dtype_size(dtype) * (size_t)c->size);
  ncclCheck(ncclAllGather(send, recv, count, nccl_type(dtype, "all_gather"), c->nc, q->s));
  traced(q, tr);
  counters.all_gather += ring(count * galv_dtype_size(dtype) * (size_t)c->size, c->size, 0);
  counters.calls[1]++;
  posted(q);
}

void galv_reduce_scatter(galv_comm *c, const void *send, void *recv, size_t count, int dtype, galv_redop op,
                         galv_queue *q) {
  int tr = after_compute(q, "reduce_scatter", count * galv_dtype_size(dtype) * (size_t)c->size);
  ncclCheck(ncclReduceScatter(send, recv, count, nccl_type(dtype, "reduce_scatter"),
                              op == GALV_RED_MAX ? ncclMax : ncclSum, c->nc, q->s));
  traced(q, tr);
  counters.reduce_scatter += ring(count * galv_dtype_size(dtype) * (size_t)c->size, c->size, 0);
  counters.calls[2]++;
  posted(q);
}

void galv_all_to_all(galv_comm *c, const void *send, void *recv, size_t count, int dtype, galv_queue *q) {
  size_t bytes = count * galv_dtype_size(dtype);
  int tr = after_compute(q, "all_to_all", bytes * (size_t)c->size);
  ncclDataType_t t = nccl_type(dtype, "all_to_all");
  ncclCheck(ncclGroupStart());
  for (int j = 0; j < c->size; j++) {
    ncclCheck(ncclSend((const char *)send + j * bytes, count, t, j, c->nc, q->s));
    ncclCheck(ncclRecv((char *)recv + j * bytes, count, t, j, c->nc, q->s));
  }
  ncclCheck(ncclGroupEnd());
  traced(q, tr);
  counters.all_to_all += ring(bytes * (size_t)c->size, c->size, 0);
  counters.calls[3]++;
  posted(q);
}

void galv_group_start(void) { ncclCheck(ncclGroupStart()); }
void galv_group_end(void) { ncclCheck(ncclGroupEnd()); }

void galv_send(galv_comm *c, int peer, const void *buf, size_t count, int dtype, galv_queue *q) {
  after_compute(q, NULL, 0);
  ncclCheck(ncclSend(buf, count, nccl_type(dtype, "send"), peer, c->nc, q->s));
  counters.send += count * galv_dtype_size(dtype);
  galv_test_point("send");
}

void galv_recv(galv_comm *c, int peer, void *buf, size_t count, int dtype, galv_queue *q) {
  after_compute(q, NULL, 0);
  ncclCheck(ncclRecv(buf, count, nccl_type(dtype, "recv"), peer, c->nc, q->s));
}

galv_comm_bytes galv_comm_counters(void) { return counters; }
