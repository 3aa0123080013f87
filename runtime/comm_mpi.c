/* comm_mpi.c — the MPI backend of galv_comm.h (CPU target, programs that
 * communicate; the generated Makefile builds them with mpicc).
 *
 * Every call is non-blocking: it posts an MPI_I* request on the queue and
 * returns. galv_queue_sync waits for every request of the queue. Queue order
 * is kept as a stream would keep it: a call whose buffers overlap those of
 * a request still in flight on the same queue (it reads what an earlier call
 * writes, or writes what an earlier call reads or writes) first waits for
 * the queue. Ranks issue calls in the same program order (SPMD), so waiting
 * only ever needs requests that every rank has already posted.
 *
 * Sub-communicators: one per (mesh shape, axes mask), made by MPI_Comm_split
 * with color = the rank's coordinates on the other axes and key = its
 * coordinates on the masked axes (row-major), cached for the whole run.
 * The mesh lives in the world, or after galv_comm_world_split (pipeline
 * stages of more than one rank) in this rank's sub-world.
 *
 * p2p: galv_send/galv_recv between galv_group_start/end are posted together
 * and cannot deadlock on their order. Outside a group, under
 * GALV_COMM_SYNC=1 (a test mode), each send is synchronous (MPI_Issend) and
 * each ungrouped send/recv completes before the call returns, as an
 * ungrouped NCCL send/recv would on its stream, so an ordering bug fails
 * (after GALV_COMM_TIMEOUT seconds, default 20 in that mode, with one error
 * line) instead of passing by MPI's buffering. Without it, sends are MPI_Isend.
 *
 * GALV_COMM_DELAY_US=N (a test mode, docs/cpu-target.md "Ranks"): every
 * collective's and recv's result is withheld until the call is waited for.
 * At the post the call runs on private copies (the send bytes snapshotted,
 * the result into a staging buffer) and the caller's result bytes are
 * poisoned with 0xff (NaN in every float type); the wait sleeps N us, copies
 * the result in and checks that the send bytes were not overwritten while the
 * call was in flight (one error line if they were). A program that reads a
 * result before its sync point, or writes a buffer a call in flight reads,
 * then computes different numbers or stops, whatever the timing.
 *
 * Every MPI call is checked (MPI_CHECK: file:line, rank, MPI's message).
 * Errors are one line (galv_fatal); an exit before finalize aborts the whole
 * job (MPI_Abort) so that no rank is left waiting.
 *
 * BLAS threads: the node's cores are shared among the ranks on the node
 * (cores / local ranks, at least 1: one thread per rank when ranks
 * outnumber cores); the program's --threads overrides it. */
#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "galv_comm.h"
#include "galv_rt.h"

void openblas_set_num_threads(int n);

static int world_rank = 0, world_size = 1, inited = 0, finalized = 0, sync_mode = 0;
static MPI_Comm base;               /* where meshes live: MPI_COMM_WORLD, or the sub-world of galv_comm_world_split */
static int base_rank = 0, base_size = 1, base_split = 0;
static galv_comm *whole;            /* galv_comm_world_split's group over the world */
static galv_comm *whole2;           /* galv_comm_world_dup's */
static double timeout_s = 0;
static long delay_us = -1;          /* GALV_COMM_DELAY_US: -1 off */
static int group_depth = 0;
static unsigned cur_group = 0, ngroups = 0; /* the open group's id (0: none) */
static galv_comm_bytes counters;

static void mpi_fail(int err, const char *call, const char *file, int line) {
  char msg[MPI_MAX_ERROR_STRING];
  int len = 0;
  if (MPI_Error_string(err, msg, &len) != MPI_SUCCESS) snprintf(msg, sizeof msg, "MPI error %d", err);
  msg[len < (int)sizeof msg ? len : (int)sizeof msg - 1] = 0;
  for (char *c = msg; *c; c++)
    if (*c == '\n') *c = ' ';
  galv_fatal("%s:%d: rank %d: %s failed: %s", file, line, world_rank, call, msg);
}
#define MPI_CHECK(call)                                                                                              \
  do {                                                                                                               \
    int e_ = (call);                                                                                                 \
    if (e_ != MPI_SUCCESS) mpi_fail(e_, #call, __FILE__, __LINE__);                                                  \
  } while (0)

struct galv_comm {
  MPI_Comm comm;
  int rank, size;
  int nmesh;
  unsigned mask;
  int64_t shape[8];
  struct galv_comm *next;
};
static galv_comm *groups; /* the cache */

typedef struct {
  const char *s; /* bytes the request reads */
  size_t sn;
  const char *r; /* bytes it writes */
  size_t rn;
  unsigned group; /* the galv_group_start/end it was posted in; 0: none */
  char *ds, *dr;  /* GALV_COMM_DELAY_US: the send snapshot, the result staging (NULL: none) */
  int trace;      /* --trace: its event (galv_trace_post), -1: none */
  int coll;       /* a collective (galv_queue_sync_keep counts them) */
} span;

/* --trace hooks (runtime/prof.c, galv_rt.h): weak, so that a program
 * without prof.c (the CUDA program's staged backend) links without them */
#pragma weak galv_trace_post
#pragma weak galv_trace_wait_begin
#pragma weak galv_trace_wait_end
#pragma weak galv_trace_done

struct galv_queue {
  MPI_Request *req;
  span *sp;
  int n, cap;
};

static void on_exit_abort(void) {
  /* galv_fatal (or any exit) before galv_comm_world_finalize: take the job down */
  if (inited && !finalized) {
    fflush(stdout);
    fflush(stderr);
    if (world_size == 1) { /* nobody else to stop; MPI_Abort would print a banner */
      finalized = 1;
      MPI_Finalize();
      return;
    }
    MPI_Abort(MPI_COMM_WORLD, 1);
  }
}

static double now_s(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (double)ts.tv_sec + ts.tv_nsec * 1e-9;
}

int galv_comm_world_init(int *argc, char ***argv, int *rank, int *size) {
  if (inited) {
    *rank = world_rank, *size = world_size;
    return 0;
  }
  int rc = MPI_Init(argc, argv);
  if (rc != MPI_SUCCESS) galv_fatal("MPI_Init failed (run the program with mpirun or %s)", galv_launch_hint());
  inited = 1;
  atexit(on_exit_abort);
  MPI_CHECK(MPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_RETURN));
  MPI_CHECK(MPI_Comm_rank(MPI_COMM_WORLD, &world_rank));
  MPI_CHECK(MPI_Comm_size(MPI_COMM_WORLD, &world_size));
  base = MPI_COMM_WORLD, base_rank = world_rank, base_size = world_size;
  const char *s = getenv("GALV_COMM_SYNC");
  sync_mode = s && *s && strcmp(s, "0") != 0;
  const char *t = getenv("GALV_COMM_TIMEOUT");
  timeout_s = t && *t ? atof(t) : sync_mode ? 20.0 : 0.0;
  const char *dl = getenv("GALV_COMM_DELAY_US");
  if (dl && *dl) {
    char *end;
    delay_us = strtol(dl, &end, 10);
    if (*end || delay_us < 0 || delay_us > 10000000) galv_fatal("GALV_COMM_DELAY_US=%s: expected microseconds 0 to 10000000", dl);
  }
  /* BLAS threads: share the node's cores among the ranks on it */
  MPI_Comm node;
  int local = 1;
  MPI_CHECK(MPI_Comm_split_type(MPI_COMM_WORLD, MPI_COMM_TYPE_SHARED, world_rank, MPI_INFO_NULL, &node));
  MPI_CHECK(MPI_Comm_size(node, &local));
  MPI_CHECK(MPI_Comm_free(&node));
  long cores = sysconf(_SC_NPROCESSORS_ONLN);
  if (local > 1) {
    long th = cores > 0 ? cores / local : 1;
    openblas_set_num_threads(th < 1 ? 1 : (int)th);
  }
  *rank = world_rank, *size = world_size;
  return 0;
}

void galv_comm_world_finalize(void) {
  if (!inited || finalized) return;
  while (groups) {
    galv_comm *c = groups;
    groups = c->next;
    MPI_CHECK(MPI_Comm_free(&c->comm));
    free(c);
  }
  if (whole) {
    MPI_CHECK(MPI_Comm_free(&whole->comm));
    free(whole);
    whole = NULL;
  }
  if (whole2) {
    MPI_CHECK(MPI_Comm_free(&whole2->comm));
    free(whole2);
    whole2 = NULL;
  }
  if (base_split) {
    MPI_CHECK(MPI_Comm_free(&base));
    base_split = 0;
  }
  finalized = 1;
  MPI_Finalize();
}

galv_comm *galv_comm_group(const int64_t *mesh_shape, int nmesh, unsigned axes_mask) {
  if (!inited) galv_fatal("galv_comm_group before galv_comm_world_init");
  if (nmesh < 0 || nmesh > 8) galv_fatal("galv_comm_group: a mesh has 0 to 8 axes, got %d", nmesh);
  int64_t n = 1;
  char sh[160] = "";
  for (int d = 0, k = 0; d < nmesh; d++) {
    if (mesh_shape[d] < 1) galv_fatal("galv_comm_group: mesh axis %d has size %lld", d, (long long)mesh_shape[d]);
    n *= mesh_shape[d];
    k += snprintf(sh + k, sizeof sh - (size_t)k, d ? "x%lld" : "%lld", (long long)mesh_shape[d]);
    if (k >= (int)sizeof sh) k = (int)sizeof sh - 1;
  }
  if (axes_mask >> nmesh) galv_fatal("galv_comm_group: axes mask 0x%x names an axis beyond the %d-axis mesh", axes_mask, nmesh);
  if (n != base_size)
    galv_fatal_all("the program was partitioned for a mesh of %lld ranks (%s), but %d were started%s (use %s or "
                   "mpirun -np %lld)", (long long)n, nmesh ? sh : "scalar", base_size, base_split ? " for its stage" : "",
                   galv_launch_hint(), (long long)n);
  for (galv_comm *c = groups; c; c = c->next)
    if (c->nmesh == nmesh && c->mask == axes_mask && !memcmp(c->shape, mesh_shape, sizeof(int64_t) * (size_t)nmesh))
      return c;
  /* coordinates of this rank (row-major); color over the other axes, key over the masked ones */
  int64_t coord[8], r = base_rank;
  for (int d = nmesh - 1; d >= 0; d--) coord[d] = r % mesh_shape[d], r /= mesh_shape[d];
  int64_t color = 0, key = 0;
  for (int d = 0; d < nmesh; d++) {
    if (axes_mask >> d & 1) key = key * mesh_shape[d] + coord[d];
    else color = color * mesh_shape[d] + coord[d];
  }
  galv_comm *c = calloc(1, sizeof *c);
  if (!c) galv_fatal("out of memory");
  MPI_CHECK(MPI_Comm_split(base, (int)color, (int)key, &c->comm));
  MPI_CHECK(MPI_Comm_set_errhandler(c->comm, MPI_ERRORS_RETURN));
  MPI_CHECK(MPI_Comm_rank(c->comm, &c->rank));
  MPI_CHECK(MPI_Comm_size(c->comm, &c->size));
  c->nmesh = nmesh;
  c->mask = axes_mask;
  memcpy(c->shape, mesh_shape, sizeof(int64_t) * (size_t)nmesh);
  c->next = groups;
  groups = c;
  return c;
}

galv_comm *galv_comm_world_split(int color, int *sub_rank, int *sub_size) {
  if (!inited) galv_fatal("galv_comm_world_split before galv_comm_world_init");
  if (base_split || groups) galv_fatal("galv_comm_world_split: called twice or after galv_comm_group");
  if (color < 0) galv_fatal("galv_comm_world_split: negative color %d", color);
  MPI_CHECK(MPI_Comm_split(MPI_COMM_WORLD, color, world_rank, &base));
  MPI_CHECK(MPI_Comm_set_errhandler(base, MPI_ERRORS_RETURN));
  MPI_CHECK(MPI_Comm_rank(base, &base_rank));
  MPI_CHECK(MPI_Comm_size(base, &base_size));
  base_split = 1;
  whole = calloc(1, sizeof *whole);
  if (!whole) galv_fatal("out of memory");
  MPI_CHECK(MPI_Comm_dup(MPI_COMM_WORLD, &whole->comm));
  MPI_CHECK(MPI_Comm_set_errhandler(whole->comm, MPI_ERRORS_RETURN));
  whole->rank = world_rank, whole->size = world_size, whole->nmesh = -1;
  *sub_rank = base_rank, *sub_size = base_size;
  return whole;
}

galv_comm *galv_comm_world_dup(void) {
  if (!base_split || whole2) galv_fatal("galv_comm_world_dup: called before galv_comm_world_split or twice");
  whole2 = calloc(1, sizeof *whole2);
  if (!whole2) galv_fatal("out of memory");
  MPI_CHECK(MPI_Comm_dup(MPI_COMM_WORLD, &whole2->comm));
  MPI_CHECK(MPI_Comm_set_errhandler(whole2->comm, MPI_ERRORS_RETURN));
  whole2->rank = world_rank, whole2->size = world_size, whole2->nmesh = -1;
  return whole2;
}

int galv_comm_rank(const galv_comm *c) { return c->rank; }
int galv_comm_size(const galv_comm *c) { return c->size; }

galv_queue *galv_queue_new(void) {
  galv_queue *q = calloc(1, sizeof *q);
  if (!q) galv_fatal("out of memory");
  return q;
}

/* GALV_COMM_DELAY_US: a completed request's result reaches the caller only
 * now, after the delay; its send bytes must be as they were at the post. */
static void release(span *p, const char *what) {
  if (!p->ds && !p->dr) return;
  if (delay_us > 0) {
    struct timespec ns = {delay_us / 1000000, (delay_us % 1000000) * 1000};
    nanosleep(&ns, NULL);
  }
  if (p->ds && p->sn && memcmp(p->ds, p->s, p->sn))
    galv_fatal("rank %d: %s: its send buffer was overwritten while the call was in flight (GALV_COMM_DELAY_US)", world_rank, what);
  if (p->dr && p->rn) memcpy((char *)p->r, p->dr, p->rn);
  free(p->ds), free(p->dr);
  p->ds = p->dr = NULL;
}

/* Waits for the first k requests of the queue and drops them. */
static void wait_prefix(galv_queue *q, int k, const char *what) {
  if (k <= 0) return;
  double tw = galv_trace_wait_begin ? galv_trace_wait_begin() : 0;
  if (timeout_s <= 0) {
    MPI_CHECK(MPI_Waitall(k, q->req, MPI_STATUSES_IGNORE));
  } else {
    double t0 = now_s();
    for (;;) {
      int done = 0;
      MPI_CHECK(MPI_Testall(k, q->req, &done, MPI_STATUSES_IGNORE));
      if (done) break;
      if (now_s() - t0 > timeout_s)
        galv_fatal("rank %d: %s did not complete within %g s (a deadlock: ungrouped send/recv in an order the peers "
                   "do not match? group them with galv_group_start/end)", world_rank, what, timeout_s);
      struct timespec ns = {0, 20000};
      nanosleep(&ns, NULL);
    }
  }
  for (int i = 0; i < k; i++) {
    if (galv_trace_done && q->sp[i].trace >= 0) galv_trace_done(q->sp[i].trace);
    release(&q->sp[i], what);
  }
  if (galv_trace_wait_end) galv_trace_wait_end(tw);
  memmove(q->req, q->req + k, sizeof *q->req * (size_t)(q->n - k));
  memmove(q->sp, q->sp + k, sizeof *q->sp * (size_t)(q->n - k));
  q->n -= k;
}

static void wait_all(galv_queue *q, const char *what) { wait_prefix(q, q->n, what); }

void galv_queue_sync(galv_queue *q) { wait_all(q, "a communication call"); }

void galv_queue_sync_keep(galv_queue *q, int m) {
  int k = m <= 0 ? q->n : 0;
  for (int i = q->n - 1, seen = 0; i >= 0 && m > 0; i--)
    if (q->sp[i].coll && ++seen == m) {
      k = i;
      break;
    }
  wait_prefix(q, k, "a communication call");
}

void galv_queue_free(galv_queue *q) {
  if (!q) return;
  galv_queue_sync(q);
  free(q->req);
  free(q->sp);
  free(q);
}

static int overlap(const char *a, size_t an, const char *b, size_t bn) {
  return an && bn && a < b + bn && b < a + an;
}

void galv_queue_sync_buf(galv_queue *q, const void *buf, size_t n) {
  /* those calls moved to the queue's front (the others keep their order), then waited for as a prefix */
  int k = 0;
  for (int i = 0; i < q->n; i++)
    if (overlap(q->sp[i].s, q->sp[i].sn, buf, n) || overlap(q->sp[i].r, q->sp[i].rn, buf, n)) {
      MPI_Request r = q->req[i];
      span p = q->sp[i];
      memmove(q->req + k + 1, q->req + k, sizeof *q->req * (size_t)(i - k));
      memmove(q->sp + k + 1, q->sp + k, sizeof *q->sp * (size_t)(i - k));
      q->req[k] = r, q->sp[k++] = p;
    }
  wait_prefix(q, k, "a send whose receiver has it");
}

/* Keeps queue order: waits for the queue when the new call's buffers overlap
 * those of a request in flight (read after write, write after read/write).
 * Inside a group only the requests from before the group are waited for
 * (the group's own calls run together; overlapping buffers there are an
 * error). */
static void order(galv_queue *q, const void *s, size_t sn, const void *r, size_t rn, const char *who) {
  int conflict = 0, base = q->n;
  for (int i = 0; i < q->n; i++) {
    const span *p = &q->sp[i];
    if (cur_group && p->group == cur_group && base == q->n) base = i;
    if (overlap(p->r, p->rn, s, sn) || overlap(p->r, p->rn, r, rn) || overlap(p->s, p->sn, r, rn)) {
      if (cur_group && p->group == cur_group)
        galv_fatal("%s: its buffers overlap those of another call in the same group", who);
      conflict = 1;
    }
  }
  if (conflict) wait_prefix(q, base, "a communication call");
}

static MPI_Request *push(galv_queue *q, const char *what, const void *s, size_t sn, const void *r, size_t rn) {
  if (q->n == q->cap) {
    int cap = q->cap ? 2 * q->cap : 16;
    MPI_Request *nr = realloc(q->req, sizeof *nr * (size_t)cap);
    if (nr) q->req = nr;
    span *ns = realloc(q->sp, sizeof *ns * (size_t)cap);
    if (ns) q->sp = ns;
    if (!nr || !ns) galv_fatal("out of memory");
    q->cap = cap;
  }
  int tr = galv_trace_post ? galv_trace_post(what, (long long)(sn > rn ? sn : rn)) : -1;
  int coll = strcmp(what, "send") && strcmp(what, "recv");
  q->sp[q->n] = (span){s, sn, r, rn, cur_group, NULL, NULL, tr, coll};
  return &q->req[q->n++];
}

/* GALV_COMM_DELAY_US: the buffers the MPI call gets instead of the caller's.
 * *ms: a snapshot of the sn send bytes (in_place: NULL, the staging holds
 * them); *mr: the rn-byte staging, initialised from the caller's result
 * bytes (in place: the data), which are then poisoned. Off: the caller's. */
typedef struct {
  char *ds, *dr;
} staged;
static staged stage(const void *send, size_t sn, void *recv, size_t rn, int in_place, const void **ms, void **mr) {
  staged st = {NULL, NULL};
  *ms = send, *mr = recv;
  if (delay_us < 0) return st;
  if ((sn && !in_place && !(st.ds = malloc(sn))) || (rn && !(st.dr = malloc(rn)))) galv_fatal("out of memory");
  if (st.ds) memcpy(st.ds, send, sn), *ms = st.ds;
  if (st.dr) memcpy(st.dr, recv, rn), memset(recv, 0xff, rn), *mr = st.dr;
  if (in_place && send) *ms = st.dr + ((const char *)send - (const char *)recv);
  return st;
}
static void staged_on(galv_queue *q, staged st) {
  q->sp[q->n - 1].ds = st.ds, q->sp[q->n - 1].dr = st.dr;
}

static MPI_Datatype mpi_type(int dtype, int reduce, galv_redop op, const char *who) {
  switch (dtype) {
  case GALV_F32: return MPI_FLOAT;
  case GALV_F64: return MPI_DOUBLE;
  case GALV_I64: return MPI_INT64_T;
  case GALV_I32: return MPI_INT32_T;
  case GALV_I16: return MPI_INT16_T;
  case GALV_I8: return MPI_INT8_T;
  case GALV_U8: return MPI_UINT8_T;
  case GALV_BOOL:
    if (reduce && op == GALV_RED_SUM) galv_fatal("%s: a sum of i1 values is not supported (use max)", who);
    return MPI_UINT8_T;
  case GALV_F16:
  case GALV_BF16: /* reductions: the user operations below (mpi_op) */
    return MPI_UINT16_T;
  default: galv_fatal("%s: unknown dtype code %d", who, dtype);
  }
}

static int icount(size_t count, const char *who) {
  if (count > (size_t)0x7fffffff) galv_fatal("%s: %zu elements exceed MPI's int count", who, count);
  return (int)count;
}

/* 16-bit sums and maxima (f32 values stored bf16 / f16, --precision bf16):
 * each pairwise step widens both operands, computes in fp32 and rounds to
 * the storage type (round-to-nearest-even), as NCCL's ring reduces bf16
 * and as the CUDA execution layer's NCCL does (runtime/cuda/emu/emu_nccl.cc) */
static void op16(void *in, void *inout, int *len, int bf, int max) {
  const uint16_t *a = (const uint16_t *)in;
  uint16_t *b = (uint16_t *)inout;
  for (int i = 0; i < *len; i++) {
    float x = bf ? galv_bf16_to_f32(a[i]) : galv_f16_to_f32(a[i]), y = bf ? galv_bf16_to_f32(b[i]) : galv_f16_to_f32(b[i]);
    float r = max ? (x != x || y != y ? NAN : x > y ? x : y) : x + y;
    b[i] = bf ? galv_f32_to_bf16(r) : galv_f32_to_f16(r);
  }
}
static void sum_bf16(void *a, void *b, int *n, MPI_Datatype *t) { (void)t, op16(a, b, n, 1, 0); }
static void max_bf16(void *a, void *b, int *n, MPI_Datatype *t) { (void)t, op16(a, b, n, 1, 1); }
static void sum_f16(void *a, void *b, int *n, MPI_Datatype *t) { (void)t, op16(a, b, n, 0, 0); }
static void max_f16(void *a, void *b, int *n, MPI_Datatype *t) { (void)t, op16(a, b, n, 0, 1); }

static MPI_Op mpi_op16(int dtype, galv_redop op) {
  static MPI_Op ops[4];
  static int made[4];
  static MPI_User_function *const fn[4] = {sum_bf16, max_bf16, sum_f16, max_f16};
  int i = (dtype == GALV_BF16 ? 0 : 2) + (op == GALV_RED_MAX);
  if (!made[i]) {
    MPI_CHECK(MPI_Op_create(fn[i], 1, &ops[i]));
    made[i] = 1;
  }
  return ops[i];
}

static MPI_Op mpi_op(galv_redop op, int dtype) {
  if (dtype == GALV_BF16 || dtype == GALV_F16) return mpi_op16(dtype, op);
  return op == GALV_RED_MAX ? MPI_MAX : MPI_SUM;
}

void galv_all_reduce(galv_comm *c, const void *send, void *recv, size_t count, int dtype, galv_redop op,
                     galv_queue *q) {
  MPI_Datatype t = mpi_type(dtype, 1, op, "galv_all_reduce");
  size_t n = count * galv_dtype_size(dtype);
  if (!count) return;
  int in_place = send == recv;
  if (!in_place && overlap(send, n, recv, n)) galv_fatal("galv_all_reduce: send and recv buffers partly overlap");
  order(q, send, n, recv, n, "galv_all_reduce");
  const void *ms;
  void *mr;
  staged st = stage(send, n, recv, n, in_place, &ms, &mr);
  MPI_CHECK(MPI_Iallreduce(in_place ? MPI_IN_PLACE : ms, mr, icount(count, "galv_all_reduce"), t, mpi_op(op, dtype),
                           c->comm, push(q, "all_reduce", send, n, recv, n)));
  staged_on(q, st);
  galv_test_point("all_reduce");
}

void galv_all_gather(galv_comm *c, const void *send, void *recv, size_t count, int dtype, galv_queue *q) {
  MPI_Datatype t = mpi_type(dtype, 0, GALV_RED_SUM, "galv_all_gather");
  size_t n = count * galv_dtype_size(dtype), full = n * (size_t)c->size;
  if (!count) return;
  int in_place = (const char *)send == (const char *)recv + (size_t)c->rank * n;
  if (!in_place && overlap(send, n, recv, full)) galv_fatal("galv_all_gather: send and recv buffers overlap");
  order(q, send, n, recv, full, "galv_all_gather");
  const void *ms;
  void *mr;
  staged st = stage(send, n, recv, full, in_place, &ms, &mr);
  MPI_CHECK(MPI_Iallgather(in_place ? MPI_IN_PLACE : ms, in_place ? 0 : icount(count, "galv_all_gather"), t, mr,
                           icount(count, "galv_all_gather"), t, c->comm, push(q, "all_gather", send, n, recv, full)));
  staged_on(q, st);
}

void galv_reduce_scatter(galv_comm *c, const void *send, void *recv, size_t count, int dtype, galv_redop op,
                         galv_queue *q) {
  MPI_Datatype t = mpi_type(dtype, 1, op, "galv_reduce_scatter");
  size_t n = count * galv_dtype_size(dtype), full = n * (size_t)c->size;
  if (!count) return;
  if (overlap(send, full, recv, n)) galv_fatal("galv_reduce_scatter: send and recv buffers overlap");
  order(q, send, full, recv, n, "galv_reduce_scatter");
  const void *ms;
  void *mr;
  staged st = stage(send, full, recv, n, 0, &ms, &mr);
  MPI_CHECK(MPI_Ireduce_scatter_block(ms, mr, icount(count, "galv_reduce_scatter"), t, mpi_op(op, dtype), c->comm,
                                      push(q, "reduce_scatter", send, full, recv, n)));
  staged_on(q, st);
}

void galv_all_to_all(galv_comm *c, const void *send, void *recv, size_t count, int dtype, galv_queue *q) {
  MPI_Datatype t = mpi_type(dtype, 0, GALV_RED_SUM, "galv_all_to_all");
  size_t n = count * galv_dtype_size(dtype), full = n * (size_t)c->size;
  if (!count) return;
  if (overlap(send, full, recv, full)) galv_fatal("galv_all_to_all: send and recv buffers overlap");
  order(q, send, full, recv, full, "galv_all_to_all");
  const void *ms;
  void *mr;
  staged st = stage(send, full, recv, full, 0, &ms, &mr);
  MPI_CHECK(MPI_Ialltoall(ms, icount(count, "galv_all_to_all"), t, mr, icount(count, "galv_all_to_all"), t,
                          c->comm, push(q, "all_to_all", send, full, recv, full)));
  staged_on(q, st);
}

void galv_group_start(void) {
  if (group_depth++ == 0) cur_group = ++ngroups ? ngroups : ++ngroups;
}
void galv_group_end(void) {
  if (group_depth <= 0) galv_fatal("galv_group_end without galv_group_start");
  if (--group_depth == 0) cur_group = 0;
}

static void check_peer(galv_comm *c, int peer, const char *who) {
  if (peer < 0 || peer >= c->size) galv_fatal("%s: peer %d is not in the group of %d ranks", who, peer, c->size);
}

/* Ungrouped p2p in the test mode completes before the call returns. */
static void complete_ungrouped(galv_queue *q, const char *what) {
  if (sync_mode && group_depth == 0) wait_all(q, what);
}

void galv_send(galv_comm *c, int peer, const void *buf, size_t count, int dtype, galv_queue *q) {
  MPI_Datatype t = mpi_type(dtype, 0, GALV_RED_SUM, "galv_send");
  check_peer(c, peer, "galv_send");
  size_t n = count * galv_dtype_size(dtype);
  order(q, buf, n, NULL, 0, "galv_send");
  if (sync_mode)
    MPI_CHECK(MPI_Issend(buf, icount(count, "galv_send"), t, peer, 0, c->comm, push(q, "send", buf, n, NULL, 0)));
  else
    MPI_CHECK(MPI_Isend(buf, icount(count, "galv_send"), t, peer, 0, c->comm, push(q, "send", buf, n, NULL, 0)));
  galv_test_point("send");
  complete_ungrouped(q, "an ungrouped galv_send");
}

void galv_recv(galv_comm *c, int peer, void *buf, size_t count, int dtype, galv_queue *q) {
  MPI_Datatype t = mpi_type(dtype, 0, GALV_RED_SUM, "galv_recv");
  check_peer(c, peer, "galv_recv");
  size_t n = count * galv_dtype_size(dtype);
  order(q, NULL, 0, buf, n, "galv_recv");
  const void *ms;
  void *mr;
  staged st = stage(NULL, 0, buf, n, 0, &ms, &mr);
  MPI_CHECK(MPI_Irecv(mr, icount(count, "galv_recv"), t, peer, 0, c->comm, push(q, "recv", NULL, 0, buf, n)));
  staged_on(q, st);
  complete_ungrouped(q, "an ungrouped galv_recv");
}

/* ---------------------------------------------------------------- the wire counter
 *
 * galv_comm_counters counts what this process hands to MPI, not what the
 * program meant to send: the MPI entry points the communicator calls are
 * interposed through MPI's profiling interface (an executable's definition
 * of MPI_Iallreduce preempts the library's; the real call is PMPI_*), and
 * each counts from its own arguments — MPI_Type_size of the datatype times
 * the count, and MPI_Comm_size of the communicator — by the ring formulas
 * of galv_comm.h. The planner's prediction it is checked against
 * (runtime/spmd.c) comes from the global program before partitioning
 * (planner/comm_predict.c), so the two sides share no sizes: a wrong local
 * type, a doubled or missing collective, a wrong datatype or group shows. */
static uint64_t wire_bytes(int count, MPI_Datatype t) {
  int ts = 0;
  if (t == MPI_DATATYPE_NULL || PMPI_Type_size(t, &ts) != MPI_SUCCESS || ts < 0 || count < 0) return 0;
  return (uint64_t)count * (uint64_t)ts;
}
static uint64_t wire_group(MPI_Comm comm) {
  int p = 1;
  if (PMPI_Comm_size(comm, &p) != MPI_SUCCESS || p < 1) p = 1;
  return (uint64_t)p;
}

int MPI_Iallreduce(const void *s, void *r, int count, MPI_Datatype t, MPI_Op op, MPI_Comm comm, MPI_Request *req) {
  uint64_t p = wire_group(comm);
  counters.all_reduce += 2 * (p - 1) * wire_bytes(count, t) / p;
  counters.calls[0]++;
  return PMPI_Iallreduce(s, r, count, t, op, comm, req);
}
int MPI_Iallgather(const void *s, int scount, MPI_Datatype st, void *r, int rcount, MPI_Datatype rt, MPI_Comm comm,
                   MPI_Request *req) {
  counters.all_gather += (wire_group(comm) - 1) * wire_bytes(rcount, rt); /* each rank's part, sent to p-1 */
  counters.calls[1]++;
  return PMPI_Iallgather(s, scount, st, r, rcount, rt, comm, req);
}
int MPI_Ireduce_scatter_block(const void *s, void *r, int rcount, MPI_Datatype t, MPI_Op op, MPI_Comm comm,
                              MPI_Request *req) {
  counters.reduce_scatter += (wire_group(comm) - 1) * wire_bytes(rcount, t);
  counters.calls[2]++;
  return PMPI_Ireduce_scatter_block(s, r, rcount, t, op, comm, req);
}
int MPI_Ialltoall(const void *s, int scount, MPI_Datatype st, void *r, int rcount, MPI_Datatype rt, MPI_Comm comm,
                  MPI_Request *req) {
  counters.all_to_all += (wire_group(comm) - 1) * wire_bytes(scount, st);
  counters.calls[3]++;
  return PMPI_Ialltoall(s, scount, st, r, rcount, rt, comm, req);
}
int MPI_Isend(const void *b, int count, MPI_Datatype t, int dest, int tag, MPI_Comm comm, MPI_Request *req) {
  counters.send += wire_bytes(count, t);
  return PMPI_Isend(b, count, t, dest, tag, comm, req);
}
int MPI_Issend(const void *b, int count, MPI_Datatype t, int dest, int tag, MPI_Comm comm, MPI_Request *req) {
  counters.send += wire_bytes(count, t);
  return PMPI_Issend(b, count, t, dest, tag, comm, req);
}

galv_comm_bytes galv_comm_counters(void) { return counters; }
