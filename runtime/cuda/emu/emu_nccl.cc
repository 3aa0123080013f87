/* emu_nccl.cc — NCCL for the CUDA execution layer, over MPI directly (each
 * rank a process with its own emulated device, started by mpirun as on a
 * GPU machine).
 *
 * Communicators: ncclGetUniqueId names its creator (world rank) and a
 * serial; ncclCommInitRank sends (nccl rank, world rank) to the creator,
 * which answers every member with the world ranks in nccl-rank order, and
 * the members build the MPI communicator with MPI_Comm_create_group — a
 * collective over the members only, as ncclCommInitRank is.
 * Calls run when issued, in the order CUDA's stream semantics give (every
 * earlier operation of every stream already ran); their buffers' byte
 * ranges go to the stream check (emu.cc). ncclSend / ncclRecv between
 * ncclGroupStart and ncclGroupEnd are posted together at ncclGroupEnd
 * (MPI_Isend / MPI_Irecv, then MPI_Waitall), so a grouped exchange cannot
 * deadlock; outside a group a send or receive completes before the call
 * returns, which deadlocks exactly where NCCL's blocking p2p would.
 * Reductions: MPI's for f32 / f64 / integers; bf16 and f16 sums and maxima
 * are MPI user operations computing in fp32 and rounding per step, as
 * NCCL's ring does. ncclCommGetAsyncError reports ncclSuccess (an MPI error
 * aborts the job). */
#define OMPI_SKIP_MPICXX 1
#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>

#include <vector>

#include "galv_emu_impl.h"
#include "nccl.h"

struct galv_emu_nccl {
  MPI_Comm m;
  int rank, size;
};

static void mpi_ok(int r, const char *what) {
  if (r != MPI_SUCCESS) galv_emu_die("%s: MPI call failed", what);
}
static int world_rank(void) {
  int init = 0, r = 0;
  MPI_Initialized(&init);
  if (!init) galv_emu_die("NCCL call before MPI_Init (the NCCL bootstrap of the programs runs over MPI)");
  MPI_Comm_rank(MPI_COMM_WORLD, &r);
  galv_emu_set_rank(r);
  return r;
}

const char *ncclGetErrorString(ncclResult_t r) {
  switch (r) {
  case ncclSuccess: return "no error";
  case ncclInvalidArgument: return "invalid argument";
  case ncclInvalidUsage: return "invalid usage";
  case ncclInProgress: return "operation in progress";
  default: return "NCCL error";
  }
}

struct uid {
  int creator, serial;
};
enum { TAG_BASE = 0x4e00 };
ncclResult_t ncclGetUniqueId(ncclUniqueId *id) {
  static int serial;
  memset(id, 0, sizeof *id);
  uid u = {world_rank(), serial++};
  memcpy(id->internal, &u, sizeof u);
  return ncclSuccess;
}

ncclResult_t ncclCommInitRank(ncclComm_t *c, int n, ncclUniqueId id, int rank) {
  uid u;
  memcpy(&u, id.internal, sizeof u);
  int me = world_rank();
  if (n < 1 || rank < 0 || rank >= n) return ncclInvalidArgument;
  int tag = TAG_BASE + (u.serial % 4096);
  std::vector<int> members((size_t)n, -1);
  if (me == u.creator) {
    members[(size_t)rank] = me;
    for (int i = 1; i < n; i++) {
      int msg[2];
      MPI_Status st;
      mpi_ok(MPI_Recv(msg, 2, MPI_INT, MPI_ANY_SOURCE, tag, MPI_COMM_WORLD, &st), "ncclCommInitRank");
      if (msg[0] < 0 || msg[0] >= n || members[(size_t)msg[0]] >= 0)
        galv_emu_die("ncclCommInitRank: rank %d given twice or out of range for %d ranks", msg[0], n);
      members[(size_t)msg[0]] = msg[1];
    }
    for (int i = 0; i < n; i++)
      if (members[(size_t)i] != me) mpi_ok(MPI_Send(members.data(), n, MPI_INT, members[(size_t)i], tag, MPI_COMM_WORLD), "ncclCommInitRank");
  } else {
    int msg[2] = {rank, me};
    mpi_ok(MPI_Send(msg, 2, MPI_INT, u.creator, tag, MPI_COMM_WORLD), "ncclCommInitRank");
    mpi_ok(MPI_Recv(members.data(), n, MPI_INT, u.creator, tag, MPI_COMM_WORLD, MPI_STATUS_IGNORE), "ncclCommInitRank");
  }
  MPI_Group wg, g;
  mpi_ok(MPI_Comm_group(MPI_COMM_WORLD, &wg), "ncclCommInitRank");
  mpi_ok(MPI_Group_incl(wg, n, members.data(), &g), "ncclCommInitRank");
  galv_emu_nccl *k = new galv_emu_nccl{};
  mpi_ok(MPI_Comm_create_group(MPI_COMM_WORLD, g, tag, &k->m), "ncclCommInitRank");
  MPI_Group_free(&g);
  MPI_Group_free(&wg);
  MPI_Comm_rank(k->m, &k->rank);
  MPI_Comm_size(k->m, &k->size);
  if (k->rank != rank) galv_emu_die("ncclCommInitRank: rank %d became %d", rank, k->rank);
  *c = k;
  return ncclSuccess;
}

ncclResult_t ncclCommDestroy(ncclComm_t c) {
  if (!c) return ncclInvalidArgument;
  MPI_Comm_free(&c->m);
  delete c;
  return ncclSuccess;
}
ncclResult_t ncclCommAbort(ncclComm_t c) {
  (void)c;
  MPI_Abort(MPI_COMM_WORLD, 1);
  return ncclSuccess;
}
ncclResult_t ncclCommGetAsyncError(ncclComm_t c, ncclResult_t *e) {
  if (!c) return ncclInvalidArgument;
  *e = ncclSuccess;
  return ncclSuccess;
}

static size_t type_size(ncclDataType_t t) {
  switch (t) {
  case ncclInt8: case ncclUint8: return 1;
  case ncclFloat16: case ncclBfloat16: return 2;
  case ncclInt32: case ncclFloat32: return 4;
  case ncclInt64: case ncclFloat64: return 8;
  }
  galv_emu_die("NCCL datatype %d is not used by the programs", (int)t);
}
/* 16-bit sums / maxima: fp32 compute, one rounding per step */
static void op16(void *in, void *inout, int *len, MPI_Datatype *dt, bool bf, bool max) {
  (void)dt;
  uint16_t *a = (uint16_t *)in, *b = (uint16_t *)inout;
  for (int i = 0; i < *len; i++) {
    float x, y;
    if (bf) {
      __nv_bfloat16 p, q;
      p.x = a[i], q.x = b[i];
      x = p, y = q;
    } else {
      __half p, q;
      p.x = a[i], q.x = b[i];
      x = p, y = q;
    }
    float r = max ? (x != x || y != y ? NAN : x > y ? x : y) : x + y;
    b[i] = bf ? __nv_bfloat16(r).x : __half(r).x;
  }
}
static void sum_bf16(void *a, void *b, int *n, MPI_Datatype *t) { op16(a, b, n, t, true, false); }
static void max_bf16(void *a, void *b, int *n, MPI_Datatype *t) { op16(a, b, n, t, true, true); }
static void sum_f16(void *a, void *b, int *n, MPI_Datatype *t) { op16(a, b, n, t, false, false); }
static void max_f16(void *a, void *b, int *n, MPI_Datatype *t) { op16(a, b, n, t, false, true); }

static MPI_Datatype mpi_type(ncclDataType_t t) {
  switch (t) {
  case ncclInt8: return MPI_INT8_T;
  case ncclUint8: return MPI_UINT8_T;
  case ncclInt32: return MPI_INT32_T;
  case ncclInt64: return MPI_INT64_T;
  case ncclFloat32: return MPI_FLOAT;
  case ncclFloat64: return MPI_DOUBLE;
  case ncclFloat16: case ncclBfloat16: return MPI_UINT16_T;
  }
  galv_emu_die("NCCL datatype %d is not used by the programs", (int)t);
}
static MPI_Op mpi_op(ncclDataType_t t, ncclRedOp_t op) {
  static MPI_Op ops[4];
  if (t == ncclBfloat16 || t == ncclFloat16) {
    int i = (t == ncclBfloat16 ? 0 : 2) + (op == ncclMax);
    static MPI_User_function *fn[4] = {sum_bf16, max_bf16, sum_f16, max_f16};
    if (!ops[i]) mpi_ok(MPI_Op_create(fn[i], 1, &ops[i]), "MPI_Op_create");
    return ops[i];
  }
  if (op != ncclSum && op != ncclMax) galv_emu_die("NCCL reduction %d is not used by the programs", (int)op);
  return op == ncclMax ? MPI_MAX : MPI_SUM;
}

/* the buffers of one call: device memory, in bounds; recorded on the stream */
static void dev_op(cudaStream_t s, const void *send, size_t sn, void *recv, size_t rn, const char *what) {
  galv_emu_check_device(send, sn, what);
  galv_emu_check_device(recv, rn, what);
  galv_emu_range r[2] = {{send, sn, false}, {recv, rn, true}};
  galv_emu_stream_op(s, r, 2, what);
}

static int group_depth;
struct p2p {
  bool send;
  void *buf;
  size_t bytes;
  int peer;
  ncclComm_t c;
  cudaStream_t s;
};
static std::vector<p2p> pending;

ncclResult_t ncclAllReduce(const void *send, void *recv, size_t count, ncclDataType_t t, ncclRedOp_t op, ncclComm_t c,
                           cudaStream_t s) {
  if (!c) return ncclInvalidArgument;
  size_t b = count * type_size(t);
  galv_emu_open o;
  dev_op(s, send, b, recv, b, "ncclAllReduce");
  if (count > (size_t)INT32_MAX) galv_emu_die("ncclAllReduce: %zu elements", count);
  mpi_ok(MPI_Allreduce(send == recv ? MPI_IN_PLACE : send, recv, (int)count, mpi_type(t), mpi_op(t, op), c->m),
         "ncclAllReduce");
  return ncclSuccess;
}
ncclResult_t ncclAllGather(const void *send, void *recv, size_t count, ncclDataType_t t, ncclComm_t c, cudaStream_t s) {
  if (!c) return ncclInvalidArgument;
  size_t b = count * type_size(t);
  galv_emu_open o;
  dev_op(s, send, b, recv, b * (size_t)c->size, "ncclAllGather");
  bool inplace = send == (const char *)recv + b * (size_t)c->rank;
  mpi_ok(MPI_Allgather(inplace ? MPI_IN_PLACE : send, (int)b, MPI_BYTE, recv, (int)b, MPI_BYTE, c->m), "ncclAllGather");
  return ncclSuccess;
}
ncclResult_t ncclReduceScatter(const void *send, void *recv, size_t count, ncclDataType_t t, ncclRedOp_t op,
                               ncclComm_t c, cudaStream_t s) {
  if (!c) return ncclInvalidArgument;
  size_t b = count * type_size(t);
  galv_emu_open o;
  dev_op(s, send, b * (size_t)c->size, recv, b, "ncclReduceScatter");
  /* through a copy: the result may overlap this rank's chunk of send (in place) */
  std::vector<char> tmp(b ? b : 1);
  mpi_ok(MPI_Reduce_scatter_block(send, tmp.data(), (int)count, mpi_type(t), mpi_op(t, op), c->m), "ncclReduceScatter");
  memcpy(recv, tmp.data(), b);
  return ncclSuccess;
}

static void run_p2p(std::vector<p2p> &v) {
  std::vector<MPI_Request> rq(v.size());
  /* receives first, so every send finds its receive posted */
  for (size_t i = 0; i < v.size(); i++)
    if (!v[i].send) mpi_ok(MPI_Irecv(v[i].buf, (int)v[i].bytes, MPI_BYTE, v[i].peer, TAG_BASE - 1, v[i].c->m, &rq[i]), "ncclRecv");
  for (size_t i = 0; i < v.size(); i++)
    if (v[i].send) mpi_ok(MPI_Isend(v[i].buf, (int)v[i].bytes, MPI_BYTE, v[i].peer, TAG_BASE - 1, v[i].c->m, &rq[i]), "ncclSend");
  mpi_ok(MPI_Waitall((int)rq.size(), rq.data(), MPI_STATUSES_IGNORE), "ncclGroupEnd");
}
static ncclResult_t p2p_call(bool send, const void *buf, size_t count, ncclDataType_t t, int peer, ncclComm_t c,
                             cudaStream_t s) {
  if (!c || peer < 0 || peer >= c->size) return ncclInvalidArgument;
  size_t b = count * type_size(t);
  if (b > (size_t)INT32_MAX) galv_emu_die("%s: %zu bytes", send ? "ncclSend" : "ncclRecv", b);
  galv_emu_open o;
  galv_emu_check_device(buf, b, send ? "ncclSend" : "ncclRecv");
  galv_emu_range r = {buf, b, !send};
  galv_emu_stream_op(s, &r, 1, send ? "ncclSend" : "ncclRecv");
  p2p p = {send, (void *)buf, b, peer, c, s};
  if (group_depth) pending.push_back(p);
  else {
    std::vector<p2p> one(1, p);
    run_p2p(one);
  }
  return ncclSuccess;
}
ncclResult_t ncclSend(const void *buf, size_t count, ncclDataType_t t, int peer, ncclComm_t c, cudaStream_t s) {
  return p2p_call(true, buf, count, t, peer, c, s);
}
ncclResult_t ncclRecv(void *buf, size_t count, ncclDataType_t t, int peer, ncclComm_t c, cudaStream_t s) {
  return p2p_call(false, buf, count, t, peer, c, s);
}
ncclResult_t ncclGroupStart(void) {
  group_depth++;
  return ncclSuccess;
}
ncclResult_t ncclGroupEnd(void) {
  if (group_depth == 0) return ncclInvalidUsage;
  if (--group_depth == 0 && !pending.empty()) {
    std::vector<p2p> v;
    v.swap(pending);
    galv_emu_open o;
    run_p2p(v);
  }
  return ncclSuccess;
}
