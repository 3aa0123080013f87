/* comm_single.c — the one-rank backend of galv_comm.h: programs without
 * collectives (and any program run as a single device) link it instead of
 * comm_mpi.c and need no MPI. Every group has one rank; a collective on a
 * group of one is a copy (done at the call: the queue is always in order);
 * send/recv can only address rank 0 of the group (itself) and are matched in
 * order at galv_group_end / galv_queue_sync. Counters follow the same
 * formulas as comm_mpi.c (p = 1: collectives move nothing; send n). */
#include <stdlib.h>
#include <string.h>

#include "galv_comm.h"
#include "galv_rt.h"

struct galv_comm {
  int dummy;
};
struct galv_queue {
  int dummy;
};

static galv_comm self;
static galv_comm_bytes counters;

typedef struct {
  char *p;
  size_t n;
} xfer;
static xfer *sends, *recvs;
static int nsend, nrecv, capsend, caprecv, depth;

int galv_comm_world_init(int *argc, char ***argv, int *rank, int *size) {
  (void)argc, (void)argv;
  *rank = 0, *size = 1;
  return 0;
}

static void match(void);
void galv_comm_world_finalize(void) {
  match();
  free(sends), free(recvs);
  sends = recvs = NULL;
  nsend = nrecv = capsend = caprecv = 0;
}

galv_comm *galv_comm_group(const int64_t *mesh_shape, int nmesh, unsigned axes_mask) {
  int64_t n = 1;
  for (int d = 0; d < nmesh; d++) n *= mesh_shape[d];
  if (axes_mask >> nmesh) galv_fatal("galv_comm_group: axes mask 0x%x names an axis beyond the %d-axis mesh", axes_mask, nmesh);
  if (n != 1)
    galv_fatal("the program was partitioned for %lld ranks but built without MPI (comm_single.c); rebuild it with "
               "the MPI backend", (long long)n);
  return &self;
}
int galv_comm_rank(const galv_comm *c) { return (void)c, 0; }
int galv_comm_size(const galv_comm *c) { return (void)c, 1; }

static galv_queue the_queue;
galv_queue *galv_queue_new(void) { return &the_queue; }
void galv_queue_sync(galv_queue *q) {
  (void)q;
  match();
  if (nsend || nrecv)
    galv_fatal("galv_queue_sync: %d send(s) and %d recv(s) of a one-rank program have no partner", nsend, nrecv);
}
void galv_queue_free(galv_queue *q) { galv_queue_sync(q); }
/* collectives are done at the call: nothing to wait for */
void galv_queue_sync_buf(galv_queue *q, const void *buf, size_t n) { (void)q, (void)buf, (void)n; }

void galv_queue_sync_keep(galv_queue *q, int m) {
  if (m <= 0) galv_queue_sync(q);
}

static void copy(void *dst, const void *src, size_t n) {
  if (n && dst != src) memmove(dst, src, n);
}

void galv_all_reduce(galv_comm *c, const void *send, void *recv, size_t count, int dtype, galv_redop op,
                     galv_queue *q) {
  (void)c, (void)op, (void)q;
  copy(recv, send, count * galv_dtype_size(dtype));
}
void galv_all_gather(galv_comm *c, const void *send, void *recv, size_t count, int dtype, galv_queue *q) {
  (void)c, (void)q;
  copy(recv, send, count * galv_dtype_size(dtype));
}
void galv_reduce_scatter(galv_comm *c, const void *send, void *recv, size_t count, int dtype, galv_redop op,
                         galv_queue *q) {
  (void)c, (void)op, (void)q;
  copy(recv, send, count * galv_dtype_size(dtype));
}
void galv_all_to_all(galv_comm *c, const void *send, void *recv, size_t count, int dtype, galv_queue *q) {
  (void)c, (void)q;
  copy(recv, send, count * galv_dtype_size(dtype));
}

static void push(xfer **v, int *n, int *cap, void *p, size_t bytes) {
  if (*n == *cap) {
    int nc = *cap ? 2 * *cap : 8;
    xfer *nv = realloc(*v, sizeof *nv * (size_t)nc);
    if (!nv) galv_fatal("out of memory");
    *v = nv, *cap = nc;
  }
  (*v)[(*n)++] = (xfer){p, bytes};
}

/* pairs sends and recvs in order (MPI's non-overtaking rule on one peer) */
static void match(void) {
  int k = nsend < nrecv ? nsend : nrecv;
  if (!k) return;
  for (int i = 0; i < k; i++) {
    if (sends[i].n != recvs[i].n)
      galv_fatal("galv_recv of %zu bytes matched a galv_send of %zu bytes", recvs[i].n, sends[i].n);
    copy(recvs[i].p, sends[i].p, sends[i].n);
  }
  memmove(sends, sends + k, sizeof *sends * (size_t)(nsend - k));
  memmove(recvs, recvs + k, sizeof *recvs * (size_t)(nrecv - k));
  nsend -= k, nrecv -= k;
}

void galv_group_start(void) { depth++; }
void galv_group_end(void) {
  if (depth <= 0) galv_fatal("galv_group_end without galv_group_start");
  if (--depth == 0) match();
}

void galv_send(galv_comm *c, int peer, const void *buf, size_t count, int dtype, galv_queue *q) {
  (void)c, (void)q;
  if (peer != 0) galv_fatal("galv_send: peer %d is not in the group of 1 rank", peer);
  size_t n = count * galv_dtype_size(dtype);
  counters.send += n;
  push(&sends, &nsend, &capsend, (void *)buf, n);
  if (!depth) match();
}
void galv_recv(galv_comm *c, int peer, void *buf, size_t count, int dtype, galv_queue *q) {
  (void)c, (void)q;
  if (peer != 0) galv_fatal("galv_recv: peer %d is not in the group of 1 rank", peer);
  push(&recvs, &nrecv, &caprecv, buf, count * galv_dtype_size(dtype));
  if (!depth) match();
}

galv_comm_bytes galv_comm_counters(void) { return counters; }
