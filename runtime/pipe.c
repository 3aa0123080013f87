/* pipe.c — the main of pipeline-stage programs (galv_pipe.h); compiled only
 * with -DGALV_PIPE_STAGE (the stage Makefiles galvc writes).
 *
 *   mpirun -np k0 stage0/program ARGS : -np k1 stage1/program ARGS ...   (out/launch)
 *   ARGS: --input NAME=FILE ... [-o OUTDIR] [--trace FILE] [--weights FILE] [--threads N]
 *
 * Inference schedule: every rank is given the global inputs; the batch
 * (dim 0 of every graph input and output) is cut into B microbatches. For
 * each microbatch a stage receives what earlier stages send it (one
 * galv_group_start/end group: cannot deadlock on order), copies its slice of
 * the graph inputs it reads, runs, sends its "pp." outputs to the later
 * stages (one group) and keeps its slice of the graph outputs it computes;
 * each stage writes the graph outputs it computed into OUTDIR. Messages
 * between two stages go in the order of their names' program positions on
 * both sides (MPI keeps order between a pair); each value moves as the
 * tiles of its cross-mesh plan (runtime/pipe_xfer.c: sends and receives
 * posted in the group, placement and the all-gather inside the receiving
 * stage once the group completes). Printed per stage: time,
 * arena bytes and measured high-water (the highest byte the runs wrote),
 * the cross-stage bytes sent (measured, planned, naive).
 * --trace FILE: a Chrome trace (Perfetto JSON), pid = stage, tid = rank,
 * one "X" event per forward microbatch, recv and send, gathered on rank 0.
 * Training stages (galv_pipe_training): pipe_train below.
 *
 * Buffers (arena, weights, saved inputs, received gradients, gradient sums,
 * optimizer state) are touched only through the galv_pipe_device hooks
 * (galv_pipe.h): host memory here (cpu_dev below), device memory when a
 * device target's main sets galv_pipe_dev (runtime/cuda/pipe_cuda.cu); the
 * schedules, p2p order, checks and files are this one code for both. */
#ifdef GALV_PIPE_STAGE
#include <errno.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "galv_comm.h"
#include "galv_pipe.h"
#include "galv_pipe_sched.h"
#include "galv_rt.h"
#include "galv_spmd.h"

void openblas_set_num_threads(int n);

#define FILL 0xA5

/* ---- the host hooks (the CPU target) */
static void *h_alloc(size_t n) {
  void *p = aligned_alloc(64, (n + 63) / 64 * 64 + 64);
  if (!p) galv_fatal("out of memory (%zu bytes)", n);
  return p;
}
static void h_release(void *p) { free(p); }
static void h_copy(void *dst, const void *src, size_t n) { memcpy(dst, src, n); }
static void h_fill(void *dst, int byte, size_t n) { memset(dst, byte, n); }
static void h_run(char *arena, const char *weights) { galv_program_run(arena, weights, NULL); }
static void h_run_entry(const galv_pipe_entry *e, char *arena, const char *weights, char *state) { e->run(arena, weights, state); }
static void h_add(float *dst, const float *src, size_t n) {
  for (size_t e = 0; e < n; e++) dst[e] += src[e];
}
static void h_opt(const galv_pipe_opt *o, float *x, float *m, float *v, const float *g, size_t n) {
  float dm = 0, dv = 0;
  for (size_t e = 0; e < n; e++) galv_pipe_opt_elem(o, &x[e], m ? &m[e] : &dm, v ? &v[e] : &dv, g[e]);
}
static void h_none(void) {}
static void h_scale(float *x, float a, size_t n) {
  for (size_t e = 0; e < n; e++) x[e] *= a;
}
static float h_ld16(int dt, uint16_t h) { return dt == GALV_BF16 ? galv_bf16_to_f32(h) : galv_f16_to_f32(h); }
static uint16_t h_st16(int dt, float f) { return dt == GALV_BF16 ? galv_f32_to_bf16(f) : galv_f32_to_f16(f); }
static void h_op16(int dt, void *dst, const void *src, float a, size_t n) {
  uint16_t *x = dst;
  const uint16_t *y = src;
  for (size_t e = 0; e < n; e++) x[e] = h_st16(dt, y ? h_ld16(dt, x[e]) + h_ld16(dt, y[e]) : h_ld16(dt, x[e]) * a);
}
static void h_to_f32(int dt, float *dst, const void *src, size_t n) {
  const uint16_t *h = src;
  for (size_t e = 0; e < n; e++) dst[e] = h_ld16(dt, h[e]);
}
static void h_scan(int dt, const void *x, size_t n, float *bad, double *sq) {
  const float *f = x;
  const uint16_t *h = x;
  int b = 0;
  for (size_t e = 0; e < n; e++) {
    float v = dt == GALV_F32 ? f[e] : h_ld16(dt, h[e]);
    b |= v * 0.0f != 0.0f; /* inf x 0 and NaN x 0 are NaN */
    if (sq) *sq += (double)v * (double)v;
  }
  if (b) *bad = 1;
}
static const galv_pipe_device cpu_dev = {h_none, h_alloc, h_release, h_copy, h_copy, h_copy, h_fill, h_run, h_run_entry, h_add,
                                         galv_spmd_block, galv_spmd_gather, h_opt, galv_pipe_box_host, h_none, h_scale,
                                         h_op16, h_to_f32, h_scan};
const galv_pipe_device *galv_pipe_dev;
int galv_pipe_device_slot;
static const galv_pipe_device *D = &cpu_dev;

/* Buffers the steps use go through dalloc / drelease: noted by the allocation tracker (runtime/io.c) with their
 * kind, on either target (a device target's allocations alike). Not noted: host staging for files and checks
 * (checkpoint span buffers, the shared copies' comparison after the steps, the trace's messages' sizes aside). */
static void *dalloc(size_t n, int kind) {
  void *p = D->alloc(n);
  galv_mem_note(p, (int64_t)n, kind);
  return p;
}
static void drelease(void *p) {
  galv_mem_forget(p);
  D->release(p);
}

/* a buffer holding a copy of n host bytes */
static void *upload(const void *host, size_t n, int kind) {
  void *b = dalloc(n, kind);
  D->h2d(b, host, n);
  return b;
}

/* ---- 16-bit storage (--precision bf16 / fp16; docs/pipeline.md, "16-bit
 * storage"): an f32 input or output held 16-bit (galv_io.storage) takes
 * nbytes / 2 in the arena, and so in every buffer that holds a copy of it
 * (received values, gradients to send back, stashes): AB(d) is its bytes
 * there. Sums and scalings of such values (rare: a value received by
 * several stages, cross entropy's microbatch weights) run where the buffers
 * are (the op16 hook): widened, computed in fp32, rounded back
 * (round-to-nearest-even), as the programs' own elementwise ops do. */
static size_t AB(const galv_io *d) { return (size_t)(d->storage ? d->nbytes / 2 : d->nbytes); }
/* the inline conversions of galv_rt.h (pipe.c links without kernels.c on the CUDA target) */
static void widen16(int dt, float *dst, const void *src, int64_t n) { h_to_f32(dt, dst, src, (size_t)n); }
static void narrow16(int dt, void *dst, const float *src, int64_t n) {
  uint16_t *h = (uint16_t *)dst;
  for (int64_t e = 0; e < n; e++) h[e] = h_st16(dt, src[e]);
}
/* dst += src / x *= a for an input or output d of the program, in its storage */
static void io_add(const galv_io *d, char *dst, const char *src) {
  if (d->storage) D->op16(d->storage, dst, src, 0, (size_t)d->nbytes / 4);
  else D->add_f32((float *)(void *)dst, (const float *)(const void *)src, (size_t)d->nbytes / 4);
}
static void io_scale(const galv_io *d, char *x, float a) {
  if (d->storage && a != 1.0f) D->op16(d->storage, x, NULL, a, (size_t)d->nbytes / 4);
  else if (!d->storage) D->scale_f32((float *)(void *)x, a, (size_t)d->nbytes / 4);
}
/* ---- the stage programs' own collectives (a stage of k devices: tp's activation all-reduces, dp's gradient
 * all-reduces, in their storage dtype): the bytes the communicator counts around each entry run against the
 * entry's prediction (its collectives' `bytes`, codegen/comm.c), summed over the runs; pipe_train checks them
 * as galv_spmd_check_bytes checks one program's. */
static uint64_t coll_got[4], coll_pred[4];
static int coll_unknown;
static galv_comm_bytes coll_mark;
static void coll_begin(void) { coll_mark = galv_comm_counters(); }
static void coll_end(const int64_t *pred) {
  galv_comm_bytes c = galv_comm_counters();
  const uint64_t d[4] = {c.all_reduce - coll_mark.all_reduce, c.all_gather - coll_mark.all_gather,
                         c.reduce_scatter - coll_mark.reduce_scatter, c.all_to_all - coll_mark.all_to_all};
  for (int k = 0; k < 4; k++) {
    coll_got[k] += d[k];
    if (!pred || pred[k] < 0) coll_unknown = 1;
    else coll_pred[k] += (uint64_t)pred[k];
  }
}

/* --grad-dtype bf16 / fp16 (GALV_BF16 / GALV_F16; else 0): the entries' parameter gradients are stored 16-bit
 * (their outputs' storage, checked when the tables are read) and so are the runtime's sums of them over the
 * microbatches (and a shared parameter's sum across its stages): 2 bytes per element, each term widened, added in
 * fp32 and rounded back (the op16 hook, on the device where the sums are, as the programs' elementwise adds round).
 * The overflow check and the clipping norm scan the sums where they are (the scan hook); the optimizer reads a sum
 * widened, one parameter at a time (grad_f32, the to_f32 hook). */
static int g16;
static size_t GSB(size_t nf32) { return g16 ? nf32 / 2 : nf32; } /* a sum's bytes for nf32 bytes of f32 */
/* sum += g (n elements, in the sums' dtype) */
static void grad_add(void *sum, const void *g, size_t n) {
  if (g16) D->op16(g16, sum, g, 0, n);
  else D->add_f32((float *)sum, (const float *)g, n);
}
/* parameter p's sum as f32 (n elements): the buffer itself, or (bf16 sums) widened into tmp (a buffer of the
 * largest parameter's f32 bytes) */
static const float *grad_f32(const void *sum, float *tmp, size_t n) {
  if (!g16) return (const float *)sum;
  D->to_f32(g16, tmp, sum, n);
  return tmp;
}
/* host f32 data (nbytes) into an input's slot in its storage; scratch: nbytes / 2 host bytes */
static void io_h2d(const galv_io *d, char *dst, const char *host, char *scratch) {
  if (!d->storage) { D->h2d(dst, host, (size_t)d->nbytes); return; }
  narrow16(d->storage, scratch, (const float *)(const void *)host, d->nbytes / 4);
  D->h2d(dst, scratch, AB(d));
}

/* this rank's place in its stage (galv_comm_world_split): rank lrank of
 * nlocal; what it exchanges with the other stages' ranks: runtime/pipe_xfer.c */
static int lrank, nlocal = 1;

/* cross-stage values are whole on every rank of a stage (galvc pins them
 * replicated) or kept split over the batch (dim 0 only: each rank its rows,
 * which runtime/pipe_xfer.c's tiles move; galvc's xs_split); another split
 * would be a compiler bug */
static void check_whole(const galv_io_split *s, const char *name) {
  if (galv_nranks <= 1 || !s->starts) return;
  int r = 0;
  while (r < GALV_RT_MAX_RANK && s->gdims[r]) r++; /* the rank: the dims given (a crossing value has no 0 dim) */
  for (int k = 0; k < galv_nranks; k++)
    for (int d = 1; d < r; d++)
      if (s->starts[(size_t)k * (size_t)r + (size_t)d])
        galv_fatal("pipeline value '%s' is split across the stage's ranks other than over its batch (dim 0)", name);
}

static double now_us(void) {
  struct timespec ts;
  clock_gettime(CLOCK_REALTIME, &ts);
  return (double)ts.tv_sec * 1e6 + (double)ts.tv_nsec * 1e-3;
}

enum { EV_FWD, EV_RECV, EV_SEND, EV_BWD, EV_WGT };
static const char *const ev_name[] = {"forward", "recv", "send", "backward", "weight"};
typedef struct {
  double ts, dur, kind, mb;
} event;
static event *evs;
static int nev, capev;
static void ev_add(int kind, int mb, double t0, double t1) {
  if (nev == capev) {
    capev = capev ? 2 * capev : 64;
    event *e = realloc(evs, sizeof *e * (size_t)capev);
    if (!e) galv_fatal("out of memory");
    evs = e;
  }
  evs[nev++] = (event){t0, t1 - t0, kind, mb};
}

static int find(const galv_io *t, int n, const char *name) {
  for (int i = 0; i < n; i++)
    if (!strcmp(t[i].name, name)) return i;
  return -1;
}

/* host bytes to / from a peer through a buffer (a device buffer where the comm backend wants one) */
static void xsend(galv_comm *world, int peer, const void *host, size_t count, int dtype, galv_queue *q) {
  void *b = upload(host, count * galv_dtype_size(dtype), GALV_MEM_COMM);
  galv_send(world, peer, b, count, dtype, q);
  galv_queue_sync(q);
  drelease(b);
}
static void xrecv(galv_comm *world, int peer, void *host, size_t count, int dtype, galv_queue *q) {
  void *b = dalloc(count * galv_dtype_size(dtype), GALV_MEM_COMM);
  galv_recv(world, peer, b, count, dtype, q);
  galv_queue_sync(q);
  D->d2h(host, b, count * galv_dtype_size(dtype));
  drelease(b);
}

static void write_trace(const char *path, galv_comm *world, galv_queue *q, int rank, int size) {
  if (rank != 0) {
    int64_t n = nev;
    xsend(world, 0, &n, 1, GALV_I64, q);
    if (n) xsend(world, 0, evs, (size_t)n * 4, GALV_F64, q);
    return;
  }
  galv_wfile w; /* replaced atomically (galv_file.h) */
  char err[4400];
  FILE *f = galv_wfile_open(&w, path, 0, err, sizeof err);
  if (!f) galv_fatal("%s (the trace)", err);
  double t0 = -1;
  event *all = NULL;
  int *owner = NULL, nall = 0;
  for (int r = 0; r < size; r++) {
    int64_t n = nev;
    event *e = evs;
    if (r) {
      xrecv(world, r, &n, 1, GALV_I64, q);
      e = malloc(sizeof *e * (size_t)(n ? n : 1));
      if (!e) galv_fatal("out of memory");
      if (n) xrecv(world, r, e, (size_t)n * 4, GALV_F64, q);
    }
    event *a2 = realloc(all, sizeof *all * (size_t)(nall + n + 1));
    int *o2 = realloc(owner, sizeof *owner * (size_t)(nall + n + 1));
    if (!a2 || !o2) galv_fatal("out of memory");
    all = a2, owner = o2;
    for (int64_t i = 0; i < n; i++) {
      all[nall] = e[i], owner[nall++] = r;
      if (t0 < 0 || e[i].ts < t0) t0 = e[i].ts;
    }
    if (r) free(e);
  }
  fprintf(f, "{\"traceEvents\": [\n");
  for (int i = 0; i < nall; i++) {
    int r = owner[i], st = 0;
    while (st + 1 < galv_pipe_nstages && r >= galv_pipe_first_rank[st + 1]) st++;
    int k = (int)all[i].kind;
    fprintf(f, "  {\"name\": \"%s mb%d\", \"cat\": \"%s\", \"ph\": \"X\", \"ts\": %.3f, \"dur\": %.3f, \"pid\": %d, \"tid\": %d}%s\n",
            ev_name[k], (int)all[i].mb, ev_name[k], all[i].ts - t0, all[i].dur, st, r, i + 1 < nall ? "," : "");
  }
  fprintf(f, "], \"displayTimeUnit\": \"ms\", \"otherData\": {\"source\": \"runtime\", \"stages\": %d, \"microbatches\": %d}}\n",
          galv_pipe_nstages, galv_pipe_microbatches);
  if (galv_wfile_commit(&w, err, sizeof err)) galv_fatal("%s", err);
  free(all);
  free(owner);
}

/* ---------------------------------------------------------------- training
 *
 *   ARGS: --batches DIR [--steps N] [-o OUTDIR] [--trace FILE] [--weights FILE] [--threads N]
 *
 * An earlier stage has two entries (passes/stage_stash.c): program.c (.cu), the
 * forward entry (inputs = data slices and received "pp." values; outputs =
 * the sent "pp." values and the stash "stash.N"), and program_bwd.c, the
 * backward entry (galv_pipe_bwd: inputs "gin:pp.X", the gradients of the
 * sent values; the stash as its state buffer; outputs grad:<param> and
 * grad:pp.X; program_bwd.cu on the CUDA target, run through
 * galv_pipe_dev->run_entry). Forward entry F(j): the microbatch's inputs go into the arena,
 * the forward entry runs, the "pp." outputs go to the later stages and the
 * stash outputs are copied into a fresh per-microbatch stash buffer (planned
 * offsets, .stash_bytes each: the saved activations in flight). Backward
 * entry B(j): the received gradients (summed over the receiving stages) and
 * the microbatch's stash run the backward entry; the parameter gradients are
 * accumulated, grad:pp.X goes back, the stash is freed. With
 * --pipeline-recompute the stage program is one
 * combined function (passes/stage_extract.c gv_stage_train; no
 * galv_pipe_bwd): F(j) keeps a copy of the microbatch's inputs and runs it
 * with gin = 0, B(j) runs it again on them with the received gradients
 * (recomputation). The last stage runs its combined program (forward,
 * loss, backward) once per
 * microbatch in F(j) (loss, parameter gradients) and keeps its inputs'
 * gradients until B(j) sends them. After the B microbatches: gradients / B,
 * one optimizer update (torch formulas, as passes/optimizer.c) of this
 * stage's parameters. GPipe: F0..F(B-1), B0..B(B-1). 1F1B: w = min(S-s-1,
 * B) warm-up forwards, then F(w+i), B(i), then the cool-down backwards
 * (galv_pipe_order, galv_pipe_sched.h: galvc's --trace-plan draws the
 * same order); interleaved 1F1B: a device group's stage ranks take turns,
 * below ("interleaved 1F1B"). Each action's sends and the next action's receives are one group (as
 * Megatron's send_forward_recv_backward), so neither order deadlocks under
 * synchronous sends. Printed: "step K loss X" (last stage: the mean of the
 * microbatch losses) and per stage the peak bytes of saved values in flight. */
static const char *outp(int o, char *arena, const char *w) {
  return galv_outputs[o].in_weights ? w + galv_outputs[o].offset : arena + galv_outputs[o].offset;
}

/* how many stages receive the sent value NAME (each sends its gradient back) */
static int gin_receivers(const char *name) {
  int nd = 0;
  for (int j = 0; j < galv_pipe_nout; j++)
    if (!strcmp(galv_pipe_out[j].name, name))
      for (int st = 0; st < galv_pipe_nstages; st++) nd += (int)(galv_pipe_out[j].dst >> st & 1);
  return nd;
}

/* ok[o] per output of an entry: j+1 sent forward (galv_pipe_out[j]), 1000000+k the gradient of
 * the received galv_pipe_in[k] (goff: its slot in the last stage's kept gradients), -(p+1)
 * the gradient of parameter p, 2000000+i the stash slot bw->stash[i], 3000000+i the slot wg->stash[i] of
 * the weight-gradient entry's state (ZB-H1: "wstash.N"); returns the "loss" output or -1 */
static int shared_param(int p);
static int classify_outputs(const galv_io *outs, const galv_io_split *sp, int n, int *ok, int64_t *goff, int64_t *g_bytes,
                            const galv_pipe_entry *bw, const galv_pipe_entry *wg) {
  int iloss = -1;
  for (int o = 0; o < n; o++) {
    const char *nm = outs[o].name;
    if (!strcmp(nm, "loss")) iloss = o;
    else if (!strncmp(nm, "grad:pp.", 8)) {
      int k = -1;
      for (int j = 0; j < galv_pipe_nin; j++)
        if (!strcmp(galv_pipe_in[j].name, nm + 5)) k = j;
      if (k < 0) galv_fatal("pipeline table: '%s' is not a received value", nm + 5);
      ok[o] = 1000000 + k; /* a gradient to send back to galv_pipe_in[k].peer */
      check_whole(&sp[o], nm);
      goff[o] = *g_bytes;
      *g_bytes += ((int64_t)AB(&outs[o]) + 63) / 64 * 64;
    } else if (!strncmp(nm, "grad:", 5)) {
      int p = find(galv_pipe_params, galv_pipe_nparams, nm + 5);
      if (p < 0) galv_fatal("pipeline table: no parameter '%s'", nm + 5);
      if (outs[o].dtype != GALV_F32 || galv_pipe_params[p].dtype != GALV_F32) galv_fatal("parameter '%s' is not f32", nm + 5);
      if (outs[o].storage && outs[o].storage != GALV_BF16 && outs[o].storage != GALV_F16)
        galv_fatal("pipeline table: the gradient '%s' is stored %s (expected fp32 or, with --grad-dtype bf16 / fp16, that "
                   "16-bit dtype)", nm, galv_dtype_name(outs[o].storage));
      if (galv_nranks > 1 && sp[o].starts) { /* split as its parameter: this rank's block of the gradient */
        const galv_io_split *ps = &galv_pipe_param_split[p];
        const int rk = galv_pipe_params[p].rank;
        if (!ps->starts || memcmp(sp[o].gdims, ps->gdims, (size_t)rk * sizeof *ps->gdims) ||
            memcmp(sp[o].starts, ps->starts, (size_t)galv_nranks * (size_t)rk * sizeof *ps->starts) ||
            outs[o].nbytes != galv_pipe_params[p].nbytes)
          galv_fatal("pipeline table: the gradient '%s' is split unlike its parameter", nm);
        if (shared_param(p) && !galv_pipe_shared_split[p])
          galv_fatal("pipeline table: the gradient '%s' of a parameter other stages hold is split (expected whole)", nm);
      } else if (shared_param(p) && galv_pipe_shared_split[p])
        galv_fatal("pipeline table: the gradient '%s' of a parameter the holding stages split alike is whole (expected this "
                   "rank's block)", nm);
      else if (outs[o].nbytes != galv_spmd_global_io(&galv_pipe_params[p], &galv_pipe_param_split[p]).nbytes)
        galv_fatal("pipeline table: the gradient '%s' and its parameter differ in size", nm);
      ok[o] = -(p + 1);
    } else if (!strncmp(nm, "wstash.", 7)) {
      int i = 0;
      while (wg && i < *wg->nstash && strcmp(wg->stash[i].name, nm)) i++;
      if (!wg || i == *wg->nstash) galv_fatal("pipeline table: the weight-gradient entry has no stash slot '%s'", nm);
      if (wg->stash[i].nbytes != (int64_t)AB(&outs[o])) galv_fatal("pipeline table: stash slot '%s' differs in size between the entries", nm);
      ok[o] = 3000000 + i;
    } else if (!strncmp(nm, "stash.", 6)) {
      int i = 0;
      while (bw && i < *bw->nstash && strcmp(bw->stash[i].name, nm)) i++;
      if (!bw || i == *bw->nstash) galv_fatal("pipeline table: the backward entry has no stash slot '%s'", nm);
      if (bw->stash[i].nbytes != (int64_t)AB(&outs[o])) galv_fatal("pipeline table: stash slot '%s' differs in size between the entries", nm);
      ok[o] = 2000000 + i;
    } else {
      for (int j = 0; j < galv_pipe_nout; j++)
        if (!strcmp(galv_pipe_out[j].name, nm)) ok[o] = j + 1, check_whole(&sp[o], nm); /* a value sent forward */
    }
  }
  return iloss;
}

/* An entry's output: in the arena, the weights, or (in_weights 2: a view of a stashed input, as a ZB-H1 weight-gradient
 * entry returns a bias's gradient, a reshape of the stashed dy) the entry's state buffer st */
static char *outp_of(const galv_io *outs, int o, char *arena, const char *w, char *st) {
  if (outs[o].in_weights == 2) {
    if (!st) galv_fatal("pipeline: output '%s' lives in an entry's state buffer, which this call has not", outs[o].name);
    return st + outs[o].offset;
  }
  return outs[o].in_weights ? (char *)w + outs[o].offset : arena + outs[o].offset;
}

/* ---- shared parameters (docs/pipeline.md, "Shared parameters"): a parameter
 * read by several stages (a tied embedding, an initializer the exporter
 * merged) is held by each of them. Every holding stage accumulates the whole
 * gradient of its copy (accw); after the microbatches the lowest holding
 * stage's rank 0 (the root) receives the other stages' sums from their rank
 * 0, adds them in stage order and sends the total to every rank of every
 * holding stage, so each copy takes the same update from the same gradient
 * and the copies stay bit-identical (the single device sums the same terms).
 * Messages per step: (m - 1) to the root, then one per other holding rank. */
static int shared_param(int p) { return (galv_pipe_param_stages[p] & ~(1ull << galv_pipe_stage)) != 0; }
static int shared_root_stage(int p) { return __builtin_ctzll(galv_pipe_param_stages[p]); }
/* one split alike by every holding stage (galv_pipe_shared_split): summed block by block (shared_block_sum) */
static int shared_split(int p) { return shared_param(p) && galv_pipe_shared_split[p]; }
static uint64_t shared_sent; /* bytes this rank sent for shared parameters (galv_pipe_xfer_report counts them apart) */
static uint64_t shared_check_sent; /* ... and for the layout check before the steps (shared_layout_check) */

/* --clip-grad-norm: whether this rank counts parameter p in the global norm, so that every trained parameter of
 * every stage is counted once: a parameter whole in its stage by the stage's rank 0, a split one by the lowest
 * stage rank holding that block (dp x tp: the tp blocks repeat over dp), one shared with later stages by its
 * lowest holding stage only (each holder has the summed gradient). */
static int clip_counts(int p) {
  if (shared_param(p) && shared_root_stage(p) != galv_pipe_stage) return 0;
  const galv_io_split *sp = &galv_pipe_param_split[p];
  if (!sp->starts) return lrank == 0;
  const int rk = galv_pipe_params[p].rank;
  for (int r = 0; r < lrank; r++) {
    int same = 1;
    for (int d = 0; d < rk && same; d++) same = sp->starts[r * rk + d] == sp->starts[lrank * rk + d];
    if (same) return 0;
  }
  return 1;
}
/* The step's gradient sums scanned once where they are (the scan hook): bad = any inf / NaN (every trained
 * parameter; inf x 0 and NaN x 0 are NaN), sq = the sum of squares of those this rank counts for the clipping norm
 * (when want_sq). */
static void grad_scan(const char *trains, float *const *acc, int want_sq, float *bad, double *sq) {
  *bad = 0, *sq = 0;
  for (int p = 0; p < galv_pipe_nparams; p++) {
    if (!trains[p]) continue;
    const int count = want_sq && clip_counts(p);
    D->scan(g16 ? g16 : GALV_F32, acc[p], (size_t)galv_pipe_params[p].nbytes / 4, bad, count ? sq : NULL);
  }
}
/* ZeRO-2 loss scaling: an inf / NaN in this rank's chunk of the reduced sums (n elements, the sums' dtype) */
static float chunk_bad(const void *chunk, size_t n) {
  float bad = 0;
  D->scan(g16 ? g16 : GALV_F32, chunk, n, &bad, NULL);
  return bad;
}
/* ZeRO-2 clipping: the sum of squares of this rank's chunk (n elements from float lo of the span, the sums' dtype)
 * over the parameters its group counts (cnt[p]) */
static double chunk_sq(const void *chunk, size_t n, size_t lo, const char *trains, const float *cnt) {
  double sq = 0;
  float bad = 0;
  for (int p = 0; p < galv_pipe_nparams; p++) {
    if (!trains[p] || cnt[p] == 0) continue;
    size_t o = (size_t)galv_pipe_params[p].offset / 4, e = o + (size_t)galv_pipe_params[p].nbytes / 4;
    size_t a = o > lo ? o : lo, b = e < lo + n ? e : lo + n;
    if (a < b) D->scan(g16 ? g16 : GALV_F32, (const char *)chunk + GSB((a - lo) * 4), b - a, &bad, &sq);
  }
  return sq;
}
/* one scalar (dtype f32 or f64) reduced over every rank of every stage, in place */
static void world_scalar(galv_comm *world, galv_queue *q, void *x, int dtype, galv_redop op) {
  size_t es = dtype == GALV_F64 ? 8 : 4;
  char *buf = dalloc(2 * es, GALV_MEM_COMM);
  D->h2d(buf, x, es);
  galv_all_reduce(world, buf, buf + es, 1, dtype, op, q);
  galv_queue_sync(q);
  D->d2h(x, buf + es, es);
  drelease(buf);
}

static void shared_grad_sum(galv_comm *world, galv_queue *q, int p, void *whole, void *tmp, size_t n) {
  const uint64_t mask = galv_pipe_param_stages[p];
  const int dt = g16 ? g16 : GALV_F32; /* the sums' dtype (bf16 sums move 2 bytes per element) */
  const size_t es = g16 ? 2 : 4;
  const int rs = shared_root_stage(p), root = galv_pipe_first_rank[rs];
  if (galv_pipe_stage == rs && lrank == 0) {
    for (int st = rs + 1; st < galv_pipe_nstages; st++) /* the other stages' sums, in stage order */
      if (mask >> st & 1) {
        galv_recv(world, galv_pipe_first_rank[st], tmp, n, dt, q);
        galv_queue_sync(q);
        grad_add(whole, tmp, n);
      }
    galv_group_start();
    for (int st = rs; st < galv_pipe_nstages; st++)
      if (mask >> st & 1)
        for (int r = galv_pipe_first_rank[st]; r < galv_pipe_first_rank[st + 1]; r++)
          if (r != root) galv_send(world, r, whole, n, dt, q), shared_sent += n * es;
    galv_group_end();
    galv_queue_sync(q);
  } else {
    if (lrank == 0) {
      galv_send(world, root, whole, n, dt, q), shared_sent += n * es;
      galv_queue_sync(q);
    }
    galv_recv(world, root, whole, n, dt, q);
    galv_queue_sync(q);
  }
}

/* A shared parameter the holding stages split alike (shared_split): rank r of the root stage receives rank r's
 * block of the other holding stages' sums (their rank r), adds them in stage order and sends the total back, so every
 * copy of the block takes the same update. Messages per step and block: (m - 1) to the root rank, (m - 1) back. */
static void shared_block_sum(galv_comm *world, galv_queue *q, int p, void *blk, void *tmp, size_t n) {
  const uint64_t mask = galv_pipe_param_stages[p];
  const int dt = g16 ? g16 : GALV_F32;
  const size_t es = g16 ? 2 : 4;
  const int rs = shared_root_stage(p);
  if (galv_pipe_stage == rs) {
    for (int st = rs + 1; st < galv_pipe_nstages; st++)
      if (mask >> st & 1) {
        galv_recv(world, galv_pipe_first_rank[st] + lrank, tmp, n, dt, q);
        galv_queue_sync(q);
        grad_add(blk, tmp, n);
      }
    galv_group_start();
    for (int st = rs + 1; st < galv_pipe_nstages; st++)
      if (mask >> st & 1) galv_send(world, galv_pipe_first_rank[st] + lrank, blk, n, dt, q), shared_sent += n * es;
    galv_group_end();
    galv_queue_sync(q);
  } else {
    galv_send(world, galv_pipe_first_rank[rs] + lrank, blk, n, dt, q), shared_sent += n * es;
    galv_queue_sync(q);
    galv_recv(world, galv_pipe_first_rank[rs] + lrank, blk, n, dt, q);
    galv_queue_sync(q);
  }
}

/* Before the steps: every rank of a later holding stage sends rank r of the root stage (r its own stage rank) its
 * record of each shared parameter: the table's choice (galv_pipe_shared_split), and for a split one its stage's
 * ranks, the parameter's dims and its own block's starts; the root stage's rank r compares them with its own. A
 * difference (stages built apart, a table edited) is one error line. */
static void shared_layout_check(galv_comm *world, galv_queue *q) {
  enum { NR = 2 + 2 * GALV_RT_MAX_RANK };
  for (int p = 0; p < galv_pipe_nparams; p++) {
    if (!shared_param(p)) continue;
    const uint64_t mask = galv_pipe_param_stages[p];
    const int rs = shared_root_stage(p), rk = galv_pipe_params[p].rank;
    const galv_io_split *sp = &galv_pipe_param_split[p];
    int64_t mine[NR] = {galv_pipe_shared_split[p], 0};
    if (galv_pipe_shared_split[p]) {
      if (!sp->starts) galv_fatal("pipeline table: parameter '%s' is marked split alike across its stages but is whole here",
                                  galv_pipe_params[p].name);
      mine[1] = nlocal;
      for (int d = 0; d < rk; d++) mine[2 + d] = sp->gdims[d], mine[2 + GALV_RT_MAX_RANK + d] = sp->starts[(size_t)lrank * (size_t)rk + (size_t)d];
    }
    const int nroot = galv_pipe_first_rank[rs + 1] - galv_pipe_first_rank[rs];
    if (galv_pipe_stage != rs) {
      if (lrank >= nroot) {
        if (galv_pipe_shared_split[p])
          galv_fatal("shared parameter '%s': stage %d has %d ranks, stage %d %d: the block-by-block gradient sum needs the "
                     "same split in every holding stage (rebuild with galvc)", galv_pipe_params[p].name, galv_pipe_stage,
                     nlocal, rs, nroot);
        continue;
      }
      uint64_t before = galv_comm_counters().send;
      xsend(world, galv_pipe_first_rank[rs] + lrank, mine, NR, GALV_I64, q);
      shared_check_sent += galv_comm_counters().send - before;
      continue;
    }
    for (int st = rs + 1; st < galv_pipe_nstages; st++) {
      if (!(mask >> st & 1) || lrank >= galv_pipe_first_rank[st + 1] - galv_pipe_first_rank[st]) continue;
      int64_t other[NR];
      xrecv(world, galv_pipe_first_rank[st] + lrank, other, NR, GALV_I64, q);
      if (other[0] != mine[0])
        galv_fatal("shared parameter '%s': stage %d's table sums its gradient %s, stage %d's %s (rebuild with galvc)",
                   galv_pipe_params[p].name, rs, mine[0] ? "block by block" : "whole", st, other[0] ? "block by block" : "whole");
      if (mine[0] && memcmp(mine, other, sizeof mine))
        galv_fatal("shared parameter '%s': stage %d rank %d holds another block of it than stage %d rank %d (%d and %lld "
                   "ranks): the block-by-block gradient sum needs the same split in every holding stage (rebuild with galvc)",
                   galv_pipe_params[p].name, st, lrank, rs, lrank, nlocal, (long long)other[1]);
    }
  }
}

/* After training: the root compares its copy of each shared parameter with
 * every other holding stage's (their rank 0 sends the gathered whole value);
 * a difference is fatal. Returns the number of copies compared. */
static int shared_check(galv_comm *world, galv_queue *q, const char *W) {
  int compared = 0;
  for (int p = 0; p < galv_pipe_nparams; p++) {
    if (!shared_param(p)) continue;
    const galv_io *l = &galv_pipe_params[p];
    char *h = malloc((size_t)l->nbytes + 1);
    if (!h) galv_fatal("out of memory");
    D->d2h(h, W + l->offset, (size_t)l->nbytes);
    galv_io g;
    const char *x = D->gather(l, &galv_pipe_param_split[p], h, &g); /* collective in the stage */
    size_t nb = (size_t)g.nbytes;
    char *mine = malloc(nb + 1), *other = malloc(nb + 1);
    void *dev = D->alloc(nb);
    if (!mine || !other) galv_fatal("out of memory");
    memcpy(mine, x, nb);
    const uint64_t mask = galv_pipe_param_stages[p];
    const int rs = shared_root_stage(p);
    if (galv_pipe_stage == rs && lrank == 0) {
      for (int st = rs + 1; st < galv_pipe_nstages; st++)
        if (mask >> st & 1) {
          galv_recv(world, galv_pipe_first_rank[st], dev, nb / 4, GALV_F32, q);
          galv_queue_sync(q);
          D->d2h(other, dev, nb);
          if (memcmp(mine, other, nb))
            galv_fatal("shared parameter '%s': the copies in stages %d and %d differ after training", l->name, rs, st);
          compared++;
        }
    } else if (lrank == 0) {
      D->h2d(dev, mine, nb);
      galv_send(world, galv_pipe_first_rank[rs], dev, nb / 4, GALV_F32, q);
      galv_queue_sync(q);
    }
    drelease(dev);
    free(mine), free(other), free(h);
  }
  return compared;
}

/* ---- checkpoints (runtime/io.c's format: global tensors by name, the same
 * as the single-device and N-rank programs', so a pipeline's checkpoint
 * loads into any plan of the model and the reverse). Each stage holds its
 * parameters ("NAME") and, for those that train, their optimizer state
 * ("opt.m:NAME" / "opt.v:NAME" for AdamW, "opt.buf:NAME" for SGD with
 * momentum; AdamW's step count "opt.step", f32, written by stage 0; with
 * loss scaling the one-program optimizer's scalars, also f32 and written by
 * stage 0: "opt.loss_scale" and "opt.growth_tracker" (dynamic scale only)
 * and "opt.skipped_steps"). A shared parameter is written by its lowest
 * holding stage. Saving: the
 * stages append in turn to one PATH.tmp (each stage's rank 0 gets the
 * running CRC and count from the previous stage's, gathers its tensors over
 * its ranks and appends them); the last stage ends the file and renames it
 * over PATH. */
static const char *opt_state_name(int k, const char *param, char *buf, size_t n, int adamw) {
  snprintf(buf, n, "%s%s", adamw ? (k ? "opt.v:" : "opt.m:") : "opt.buf:", param);
  return buf;
}

/* whole (host, the global tensor) -> this rank's block of buffer dst */
static void put_block(int p, void *dst, const void *whole) {
  const galv_io *l = &galv_pipe_params[p];
  char *h = malloc((size_t)l->nbytes + 1);
  if (!h) galv_fatal("out of memory");
  galv_spmd_block(l, &galv_pipe_param_split[p], h, whole);
  D->h2d(dst, h, (size_t)l->nbytes);
  free(h);
}

/* loss scaling's state, as passes/optimizer.c names it in the one-program step: the scale (dynamic), the good
 * steps since its last change (dynamic), the skipped steps; mode as galv_pipe_loss_scale[0] */
typedef struct {
  int mode;
  float scale, tracker, skipped;
} pipe_ls_state;
static const char *const ls_names[3] = {"opt.loss_scale", "opt.growth_tracker", "opt.skipped_steps"};
static float *ls_slot(pipe_ls_state *ls, int k) { return k == 0 ? &ls->scale : k == 1 ? &ls->tracker : &ls->skipped; }

/* ZeRO-1 checkpoints: with chunk (this rank's part of one optimizer state) given, a zeroed buffer of the whole
 * parameter span (g chunks of n floats, laid out as weights.bin) returned and st[p] pointed at each trained
 * parameter's place in it, so the unsplit state's load and save read and write it; chunk NULL: st[] reset (NULL) */
static float *zero_span_views(float **st, const float *chunk, int g, size_t n, const char *trains) {
  float *f = chunk ? D->alloc((size_t)g * n * 4) : NULL;
  if (f) D->fill(f, 0, (size_t)g * n * 4);
  for (int p = 0; p < galv_pipe_nparams; p++) st[p] = f && trains[p] ? f + galv_pipe_params[p].offset / 4 : NULL;
  return f;
}

static int64_t pipe_load_checkpoint(const char *path, char *W, float **st1, float **st2, const char *trains, int adamw,
                                    float *step_t, pipe_ls_state *ls) {
  galv_ckpt c;
  if (galv_ckpt_open(&c, path)) galv_fatal_all("%s", c.err);
  char *buf = NULL, nm[1100];
  for (int p = 0; p < galv_pipe_nparams; p++) {
    const galv_io *l = &galv_pipe_params[p];
    galv_io g = galv_spmd_global_io(l, &galv_pipe_param_split[p]);
    for (int k = -1; k < 2; k++) {
      float *dst = k < 0 ? (float *)(void *)(W + l->offset) : k == 0 ? st1[p] : st2[p];
      if (k >= 0 && (!trains[p] || !dst)) continue;
      const char *name = k < 0 ? l->name : opt_state_name(k, l->name, nm, sizeof nm, adamw);
      galv_ckpt_entry *e = galv_ckpt_find(&c, name);
      if (!e) galv_fatal_all("%s: checkpoint of another model or optimizer: no state '%s'", path, name);
      int same = e->dtype == GALV_F32 && e->rank == g.rank && e->nbytes == g.nbytes;
      for (int d = 0; same && d < g.rank; d++) same = e->dims[d] == g.dims[d];
      if (!same) galv_fatal_all("%s: checkpoint of another model: state '%s' has another dtype or shape", path, name);
      free(buf);
      buf = malloc((size_t)e->nbytes + 1);
      if (!buf) galv_fatal("out of memory");
      if (galv_ckpt_read(&c, e, buf)) galv_fatal_all("%s", c.err);
      put_block(p, dst, buf);
    }
  }
  free(buf);
  if (adamw) {
    galv_ckpt_entry *e = galv_ckpt_find(&c, "opt.step");
    if (!e || e->dtype != GALV_F32 || e->rank != 0) galv_fatal_all("%s: checkpoint of another optimizer: no AdamW step count 'opt.step'", path);
    if (galv_ckpt_read(&c, e, step_t)) galv_fatal_all("%s", c.err);
  }
  for (int k = ls->mode == 2 ? 0 : 2; ls->mode && k < 3; k++) { /* loss scaling: the scalars the one-program step keeps */
    galv_ckpt_entry *e = galv_ckpt_find(&c, ls_names[k]);
    if (!e || e->dtype != GALV_F32 || e->rank != 0)
      galv_fatal_all("%s: checkpoint of a run without %s loss scaling: no f32 scalar '%s'", path,
                     ls->mode == 2 ? "dynamic" : "static", ls_names[k]);
    if (galv_ckpt_read(&c, e, ls_slot(ls, k))) galv_fatal_all("%s", c.err);
  }
  if (ls->mode == 2 && ls->scale == 0) ls->scale = (float)galv_pipe_loss_scale[1]; /* a fresh state's 0: the initial scale */
  int64_t steps = c.steps;
  galv_ckpt_close(&c);
  return steps;
}

/* Every rank of every stage calls it, after the steps (and after
 * galv_pipe_xfer_report: it sends). */
static void pipe_save_checkpoint(const char *path, galv_comm *world, galv_queue *q, const char *W, float **st1, float **st2,
                                 const char *trains, int adamw, float step_t, const pipe_ls_state *ls, int64_t done) {
  const int me = galv_pipe_stage, S = galv_pipe_nstages;
  galv_ckpt_writer w;
  uint32_t tok[16] = {0}; /* running CRC, count (a 64-byte message) */
  void *dtok = D->alloc(sizeof tok);
  if (lrank == 0) {
    if (me == 0) {
      if (galv_ckpt_begin(&w, path, done)) galv_fatal("%s", w.err);
      int64_t none[1] = {0};
      if (adamw && galv_ckpt_put(&w, "opt.step", GALV_F32, 0, none, 4, &step_t)) galv_fatal("%s", w.err);
      pipe_ls_state v = *ls;
      for (int k = v.mode == 2 ? 0 : 2; v.mode && k < 3; k++) /* loss scaling's scalars (every rank has them alike) */
        if (galv_ckpt_put(&w, ls_names[k], GALV_F32, 0, none, 4, ls_slot(&v, k))) galv_fatal("%s", w.err);
    } else {
      galv_recv(world, galv_pipe_first_rank[me - 1], dtok, sizeof tok / 4, GALV_F32, q);
      galv_queue_sync(q);
      D->d2h(tok, dtok, sizeof tok);
      if (galv_ckpt_resume(&w, path, tok[0], tok[1])) galv_fatal("%s", w.err);
    }
  }
  char nm[1100];
  for (int p = 0; p < galv_pipe_nparams; p++) {
    if (shared_param(p) && shared_root_stage(p) != me) continue; /* its lowest holding stage writes it */
    const galv_io *l = &galv_pipe_params[p];
    char *h = malloc((size_t)l->nbytes + 1);
    if (!h) galv_fatal("out of memory");
    for (int k = -1; k < 2; k++) {
      const float *src = k < 0 ? (const float *)(const void *)(W + l->offset) : k == 0 ? st1[p] : st2[p];
      if (k >= 0 && (!trains[p] || !src)) continue;
      D->d2h(h, src, (size_t)l->nbytes);
      galv_io g;
      const void *x = D->gather(l, &galv_pipe_param_split[p], h, &g); /* collective in the stage */
      const char *name = k < 0 ? l->name : opt_state_name(k, l->name, nm, sizeof nm, adamw);
      if (lrank == 0 && galv_ckpt_put(&w, name, GALV_F32, g.rank, g.dims, g.nbytes, x)) {
        galv_ckpt_abandon(&w);
        galv_fatal("%s", w.err);
      }
      if (lrank == 0) fflush(w.f), galv_test_point("checkpoint"); /* the file partly written */
    }
    free(h);
  }
  if (lrank == 0) {
    if (me < S - 1) {
      if (galv_ckpt_suspend(&w, &tok[0], &tok[1])) galv_fatal("%s", w.err);
      D->h2d(dtok, tok, sizeof tok);
      galv_send(world, galv_pipe_first_rank[me + 1], dtok, sizeof tok / 4, GALV_F32, q);
      galv_queue_sync(q);
    } else {
      if (galv_ckpt_end(&w)) {
        galv_ckpt_abandon(&w);
        galv_fatal("%s", w.err);
      }
      printf("%s: wrote checkpoint %s (%lld steps done)\n", galv_progname, path, (long long)done);
    }
  }
  drelease(dtok);
}

/* ZeRO-2 per microbatch (galv_pipe_zero 3): the parameters' span cut as ZeRO-1 cuts it (g chunks of zn floats);
 * a microbatch's gradients are reduce-scattered into this rank's chunk sum a bucket at a time: bucket b stages
 * elements [r zn + b bs, r zn + (b + 1) bs) of each rank r's chunk side by side (g x bs elements, the sums' dtype),
 * the reduce-scatter leaves this rank's bs summed elements, added to sum[b bs ..]. ZE_BUCKETS x g buckets
 * (GV_ZERO_EACH_BUCKETS, planner/pipeline.h, prices the same): the staging is about a quarter of the chunk. */
enum { ZE_BUCKETS = 4 };
static struct {
  galv_comm *c;
  galv_queue *q;
  int g, r;
  size_t zn, bs, nbk;
  char *st, *rb, *sum; /* staging (g x bs), the reduce-scatter's result (bs), the chunk's sums (nbk x bs >= zn) */
  const void **gp;     /* per parameter: the gradient the pass adds (NULL: none) */
  unsigned char *gw;   /* per parameter: gp is the whole gradient of a split parameter (its block taken first) */
  uint64_t sent;       /* reduce-scatter bytes (galv_comm_counters around them) */
} ze;
/* one pass over the buckets: ze.gp[p]'s elements in each rank's part of the bucket; whole: the gradients are whole
 * (a split parameter's block taken into gblk), else already this rank's blocks */
static void ze_pass(int whole, float *gblk) {
  const int dt = g16 ? g16 : GALV_F32;
  for (size_t b = 0; b < ze.nbk; b++) {
    D->fill(ze.st, 0, GSB((size_t)ze.g * ze.bs * 4));
    for (int p = 0; p < galv_pipe_nparams; p++) {
      if (!ze.gp[p]) continue;
      const size_t o = (size_t)galv_pipe_params[p].offset / 4, n = (size_t)galv_pipe_params[p].nbytes / 4;
      const char *src = NULL;
      for (int r = 0; r < ze.g; r++) {
        size_t lo = (size_t)r * ze.zn + b * ze.bs, hi = lo + ze.bs, end = (size_t)(r + 1) * ze.zn;
        if (hi > end) hi = end;
        size_t a = o > lo ? o : lo, e = o + n < hi ? o + n : hi;
        if (a >= e) continue;
        if (!src) {
          src = ze.gp[p];
          if (whole && ze.gw[p] && galv_pipe_param_split[p].starts) { /* the whole gradient: this rank's block of it */
            galv_io l = galv_pipe_params[p];
            if (g16) l.dtype = g16, l.nbytes /= 2;
            D->block(&l, &galv_pipe_param_split[p], gblk, src);
            src = (const char *)gblk;
          }
        }
        D->copy(ze.st + GSB(((size_t)r * ze.bs + (a - lo)) * 4), src + GSB((a - o) * 4), GSB((e - a) * 4));
      }
    }
    galv_queue_sync(ze.q);
    uint64_t before = galv_comm_counters().reduce_scatter;
    galv_reduce_scatter(ze.c, ze.st, ze.rb, ze.bs, dt, GALV_RED_SUM, ze.q);
    galv_queue_sync(ze.q);
    ze.sent += galv_comm_counters().reduce_scatter - before;
    grad_add(ze.sum + GSB(b * ze.bs * 4), ze.rb, ze.bs);
  }
}

/* adds an entry's parameter gradients (outputs o with ok[o] = -(p+1), in the arena or the entry's weights w)
 * to the sums: a shared parameter's whole gradient to accw[p] (summed across the stages after the
 * microbatches), else this rank's block to acc[p] (ZeRO-2 per microbatch: reduce-scattered into the chunk's sums,
 * a whole gradient counted by the group's first rank only) */
/* The largest parameter (its bytes on this rank) that is split, held by this stage only, and whose gradient output
 * o (ok[o] < 0) of an entry is whole: max with mx. */
static int64_t whole_grad_max(const galv_io *outs, const int *ok, int n, int64_t mx) {
  for (int o = 0; o < n; o++)
    if (ok[o] < 0) {
      const int p = -ok[o] - 1;
      if (galv_pipe_param_split[p].starts && !shared_param(p) &&
          (size_t)outs[o].nbytes / galv_dtype_size(outs[o].dtype) != (size_t)galv_pipe_params[p].nbytes / 4 &&
          galv_pipe_params[p].nbytes > mx)
        mx = galv_pipe_params[p].nbytes;
    }
  return mx;
}

static void accumulate(const galv_io *outs, const int *ok, int n, char *arena, const char *w, char *st, float **acc, float **accw,
                       float *gblk) {
  int any = 0;
  for (int o = 0; o < n; o++)
    if (ok[o] < 0) {
      int p = -ok[o] - 1;
      const void *g = outp_of(outs, o, arena, w, st);
      if (accw[p]) {
        grad_add(accw[p], g, (size_t)outs[o].nbytes / 4);
        continue;
      }
      if (ze.c && shared_split(p)) { /* its block's step sum, summed across the stages before ZeRO-2's pass */
        grad_add(acc[p], g, (size_t)galv_pipe_params[p].nbytes / 4);
        continue;
      }
      /* a gradient returned split as its parameter (propagate-sharding) is this rank's block already; the whole
       * gradient of a split parameter is blocked (its element count the parameter's whole one) */
      const int whole = galv_pipe_param_split[p].starts &&
                         (size_t)outs[o].nbytes / galv_dtype_size(outs[o].dtype) != (size_t)galv_pipe_params[p].nbytes / 4;
      if (ze.c) {
        ze.gp[p] = galv_pipe_zero_partial[p] || ze.r == 0 ? g : NULL;
        ze.gw[p] = whole;
        any = 1;
        continue;
      }
      if (whole) { /* this rank's block of it (in the sums' dtype) */
        galv_io l = galv_pipe_params[p];
        if (g16) l.dtype = g16, l.nbytes /= 2;
        D->block(&l, &galv_pipe_param_split[p], gblk, g);
        g = gblk;
      }
      grad_add(acc[p], g, (size_t)galv_pipe_params[p].nbytes / 4);
    }
  if (any) { /* the same entries on every rank of the group: the same passes */
    ze_pass(1, gblk);
    memset(ze.gp, 0, sizeof *ze.gp * (size_t)galv_pipe_nparams);
  }
}

/* ---- interleaved 1F1B (galv_pipe_schedule 3; docs/pipeline.md, "Schedules"):
 * the V stages of a device group (stages d, d + P, ..) are V ranks that take
 * turns. The group's order (galv_pipe_order_group) is walked by a baton: the
 * rank of the entry before passes it to the rank of the next entry when
 * they differ, so one entry of the group computes at a time, in the order
 * the timeline predicts. Batons travel on a world communicator of their
 * own (galv_comm_world_dup): p2p has no tags, and a stage may send data to
 * a later stage of its own group. The baton carries the group's counters
 * of saved bytes and (chunk, microbatch) entries holding them (live, n,
 * peak, peak n), each rank adding what its entries save and free: the
 * group's measured peak. An entry's sends go out right after its compute, from
 * copies (the arena is the next entry's), posted and not waited for: a rank
 * only ever waits for data an earlier entry sends or for the baton, so the
 * run cannot deadlock where the timeline does not. A copy goes once a
 * message received proves its receiver has it (il_rel_setup): a forward
 * value's at B(j), when its gradient comes back from every rank it went to;
 * a gradient's to the previous stage at F(j'), the first forward after
 * B(j) in that stage's order (galv_pipe_il_grad_release), when the input
 * comes from every rank the gradient went to; the send's own completion
 * then waited for (galv_queue_sync_buf: at once). The others (no such
 * message), and the baton messages, are released once the step's sends
 * complete (step end, before the shared parameters' sums). The baton into
 * a step's first entry is sent at the start of the step, after the
 * previous step's update.
 *
 * The baton also carries the group's tracked bytes (runtime/io.c): the sum
 * G of its ranks' live buffers, each as of the rank's last turn, and the
 * peak of that sum. A rank's turn opens when the baton arrives
 * (galv_mem_window) and closes when it passes the baton on: then the peak
 * is at least (G less this rank's share) + this rank's live peak during
 * the turn, and its share becomes its live bytes now. A send copy counts
 * until it is released: in a later turn of its rank, from its live bytes
 * (and from C), or at the step's end (C: the step's copies of every rank
 * still held as of their ranks' last turns, taken off G there by the rank
 * of the group's last entry, and off each rank's share by itself). Before the first step the ranks' live bytes are
 * summed once (world_rank_values); at the end the group's arenas' written
 * bytes are added, as a rank's tracker counts its arena. The step's end
 * (the shared parameters' sums, the update) is outside the turns. */
typedef struct {
  void *p;
  int64_t n;
  int fwd, mb; /* released after the receives of entry F(mb) (fwd 1) or B(mb) (0); mb -1: at the step's end (fwd -1:
                * a baton) */
  int staging; /* a packed tile's staging buffer of a copy's send (galv_pipe_xfer_send_own): not tracked, not in held */
} il_buf;
typedef struct {
  galv_comm *bw;    /* the batons' world (galv_comm_world_dup): never matched with a stage's data messages */
  galv_queue *sq;   /* the posted sends */
  il_buf *bufs;     /* their buffers (copies, batons), in the order made */
  int nbufs, capbufs;
  int ncounted;     /* bufs[0 .. ncounted): in mine and C (as of the last close) */
  int64_t dev[8];   /* the group's counters: live saved bytes, entries, their peak bytes, peak entries; the tracked bytes:
                     * G, G's peak, the step's send copies C */
  int64_t mine;     /* this rank's share of G */
  int64_t held;     /* the bytes of bufs (this step's copies) */
  int64_t counted;  /* of held: those of bufs[0 .. ncounted) */
  uint64_t sent;    /* baton bytes sent (galv_pipe_xfer_report counts them apart) */
  long nrel, nend;  /* send copies released when proven received, at the step's end */
} il_state;
enum { IL_G = 4, IL_GPEAK = 5, IL_COPIES = 6 };
enum { IL_NSUMS = 6 }; /* per rank, for its group's memory line: arena, saved, copies released / kept (fwd, bwd) */
_Static_assert(sizeof(((il_state *)0)->dev) == GALV_PIPE_BATON_BYTES, "the baton's bytes (galv_pipe_sched.h)");

/* a turn closes: the group's tracked peak with this rank's turn, its share now */
static void il_close(il_state *il) {
  const int64_t others = il->dev[IL_G] - il->mine, live = galv_mem_live(), w = galv_mem_window();
  if (others + w > il->dev[IL_GPEAK]) il->dev[IL_GPEAK] = others + w;
  il->dev[IL_G] = others + live, il->mine = live;
  il->dev[IL_COPIES] += il->held - il->counted, il->counted = il->held, il->ncounted = il->nbufs;
}

/* a buffer of n bytes held until the receives of entry (fwd, mb) (mb -1: the step's end) */
static void il_push(il_state *il, il_buf b) {
  if (il->nbufs == il->capbufs) {
    il->capbufs = il->capbufs ? 2 * il->capbufs : 32;
    il_buf *g = realloc(il->bufs, sizeof *g * (size_t)il->capbufs);
    if (!g) galv_fatal("out of memory");
    il->bufs = g;
  }
  il->bufs[il->nbufs++] = b;
}
static void *il_keep(il_state *il, size_t n, int fwd, int mb) {
  const int64_t m = (int64_t)(n ? n : 64);
  il->held += m;
  il_push(il, (il_buf){dalloc((size_t)m, GALV_MEM_COMM), m, fwd, mb, 0});
  return il->bufs[il->nbufs - 1].p;
}

/* the staging buffer of a packed tile of the copy il_send is sending: released with the copy (il_release) */
typedef struct {
  il_state *il;
  int fwd, mb;
} il_own_ctx;
static void il_own(void *ctx, void *buf, size_t n) {
  const il_own_ctx *c = ctx;
  il_push(c->il, (il_buf){buf, (int64_t)n, c->fwd, c->mb, 1});
}

/* entry (fwd, mb)'s receives completed: the copies they prove received go (their sends completed; a copy counted
 * already leaves C, this rank holding the baton) */
static void il_release(il_state *il, int fwd, int mb) {
  int k = 0, nc = 0; /* the buffers kept; of them, counted ones (the counted ones a prefix still) */
  for (int i = 0; i < il->nbufs; i++) {
    const il_buf b = il->bufs[i];
    if (b.mb != mb || b.fwd != fwd) {
      nc += i < il->ncounted;
      il->bufs[k++] = b;
      continue;
    }
    galv_queue_sync_buf(il->sq, b.p, (size_t)b.n);
    if (b.staging) {
      D->release(b.p);
      continue;
    }
    drelease(b.p);
    il->held -= b.n;
    if (i < il->ncounted) il->counted -= b.n, il->dev[IL_COPIES] -= b.n;
    il->nrel++;
  }
  il->nbufs = k, il->ncounted = nc;
}

/* sends value src (n bytes) as transfer x from a copy, released after the receives of entry (fwd, mb) */
static void il_send(il_state *il, const galv_pipe_xfer *x, const void *src, size_t n, int fwd, int mb) {
  void *c = il_keep(il, n, fwd, mb);
  D->copy(c, src, n);
  il_own_ctx own = {il, fwd, mb}; /* its packed tiles' staging goes with it (not at the next entry's complete) */
  galv_group_start();
  galv_pipe_xfer_send_own(x, c, il->sq, il_own, &own);
  galv_group_end();
}

/* the baton goes to the rank of the same place (lrank) in the next entry's stage: with stages of k ranks a device group
 * is k devices, and each walks the group's order with a baton of its own (the stages' collectives then meet: every
 * rank of a stage reaches its entries in the same order) */
static void il_baton_send(il_state *il, int stage) {
  void *b = il_keep(il, sizeof il->dev, -1, -1);
  il_close(il);
  D->h2d(b, il->dev, sizeof il->dev);
  galv_group_start();
  galv_send(il->bw, galv_pipe_first_rank[stage] + lrank, b, 8, GALV_I64, il->sq);
  galv_group_end();
  il->sent += sizeof il->dev;
}

static void il_baton_recv(il_state *il, galv_queue *q, int stage) {
  xrecv(il->bw, galv_pipe_first_rank[stage] + lrank, il->dev, 8, GALV_I64, q);
  galv_mem_window(); /* the turn opens */
}

/* the step's sends completed, their copies released; holder: the rank of the group's last entry (it holds the baton,
 * its turn closed): the step's copies off G */
static void il_step_end(il_state *il, int holder) {
  galv_queue_sync(il->sq);
  for (int i = 0; i < il->nbufs; i++)
    if (il->bufs[i].staging) D->release(il->bufs[i].p);
    else il->nend += il->bufs[i].fwd >= 0, drelease(il->bufs[i].p);
  il->nbufs = il->ncounted = 0;
  il->mine -= il->counted, il->held = il->counted = 0;
  if (holder) il->dev[IL_G] -= il->dev[IL_COPIES], il->dev[IL_COPIES] = 0;
}

/* Which interleaved send copies a later message proves received (runtime/pipe.c, il_state). frel[o S + t]: output
 * o's copy to stage t (ok[o] = k + 1, galv_pipe_out[k]) goes at B(j), where the value's gradient comes back
 * (a gin input of the backward, gbuf) from every rank of t the copy went to. grel[o]: backward output o's copy, the
 * gradient of galv_pipe_in[k] (okb[o] = 1000000 + k) back to stage me - 1, goes at that stage's next input, sent
 * from every rank the gradient went to (ik: the forward's received inputs). A value with no gradient back, or a
 * gradient to another stage: kept until the step's end. galvc's predicted memory follows the same rule by value
 * (tools/galvc_pipeline.c il_fs / il_fk). */
static void il_rel_setup(const int *ok, int no, const int *okb, int nbo, const galv_io *bin, char *const *gbuf, int nbi,
                         const int *ik, int ni, int8_t *frel, int8_t *grel) {
  const int S = galv_pipe_nstages, me = galv_pipe_stage;
  for (int o = 0; o < no; o++) {
    if (ok[o] <= 0 || ok[o] >= 1000000) continue;
    const galv_pipe_value *v = &galv_pipe_out[ok[o] - 1];
    int back = 0;
    for (int i = 0; i < nbi && !back; i++) back = gbuf[i] && !strcmp(bin[i].name + 4, v->name);
    for (int st = 0; back && st < S; st++)
      if (v->dst >> st & 1) {
        const uint64_t to = galv_pipe_xfer_peers(galv_pipe_xfer_find(v->name, 0, me, st), 1),
                       from = galv_pipe_xfer_peers(galv_pipe_xfer_find(v->name, 1, st, me), 0);
        frel[o * S + st] = !(to & ~from);
      }
  }
  uint64_t in = 0; /* the ranks of stage me - 1 that send this rank forward inputs */
  for (int i = 0; i < ni && me > 0; i++)
    if (ik[i] > 0 && galv_pipe_in[ik[i] - 1].peer == me - 1)
      in |= galv_pipe_xfer_peers(galv_pipe_xfer_find(galv_pipe_in[ik[i] - 1].name, 0, me - 1, me), 0);
  for (int o = 0; o < nbo; o++) {
    if (okb[o] < 1000000 || okb[o] >= 2000000) continue;
    const galv_pipe_value *v = &galv_pipe_in[okb[o] - 1000000];
    if (v->peer == me - 1) grel[o] = !(galv_pipe_xfer_peers(galv_pipe_xfer_find(v->name, 1, me, v->peer), 1) & ~in);
  }
}

/* every rank's x gathered over the world (a sum of one contribution each): out[r * n + k] = rank r's x[k]; rank r is
 * place r - galv_pipe_first_rank[s] of its stage s */
static void world_rank_values(galv_comm *world, galv_queue *q, const double *x, int n, double *out) {
  const int S = galv_pipe_first_rank[galv_pipe_nstages]; /* the world's ranks */
  double *h = calloc((size_t)(S * n), sizeof *h);
  char *buf = dalloc(2 * (size_t)(S * n) * 8, GALV_MEM_COMM);
  if (!h) galv_fatal("out of memory");
  for (int k = 0; k < n; k++) h[(galv_pipe_first_rank[galv_pipe_stage] + lrank) * n + k] = x[k];
  D->h2d(buf, h, (size_t)(S * n) * 8);
  galv_all_reduce(world, buf, buf + (size_t)(S * n) * 8, (size_t)(S * n), GALV_F64, GALV_RED_SUM, q);
  galv_queue_sync(q);
  D->d2h(out, buf + (size_t)(S * n) * 8, (size_t)(S * n) * 8);
  drelease(buf);
  free(h);
}

static int pipe_train(int argc, char **argv, galv_comm *world, galv_queue *q, int rank, int size) {
  const int S = galv_pipe_nstages, B = galv_pipe_microbatches, me = galv_pipe_stage, last = me == S - 1;
  const char *outdir = NULL, *wpath = NULL, *trace = NULL, *bdir = NULL, *load = NULL, *save = NULL;
  long steps = 1;
  for (int i = 1; i < argc; i++) {
    const char *a = argv[i], *v = i + 1 < argc ? argv[i + 1] : NULL;
    if (!strcmp(a, "--batches") && v) bdir = v, i++;
    else if (!strcmp(a, "--load-checkpoint") && v) load = v, i++;
    else if (!strcmp(a, "--save-checkpoint") && v) save = v, i++;
    else if (!strcmp(a, "--steps") && v) {
      char *end;
      steps = strtol(v, &end, 10);
      if (*end || steps < 1 || steps > 1000000) galv_fatal_all("--steps expects an integer >= 1, got '%s'", v);
      i++;
    } else if (!strcmp(a, "-o") && v) outdir = v, i++;
    else if (!strcmp(a, "--weights") && v) wpath = v, i++;
    else if (!strcmp(a, "--trace") && v) trace = v, i++;
    else if (!strcmp(a, "--threads") && v) openblas_set_num_threads(atoi(v) > 0 ? atoi(v) : 1), i++;
    else galv_fatal_all("unknown or incomplete option '%s' (usage: --batches DIR [--steps N] [-o OUTDIR] [--trace FILE] "
                    "[--load-checkpoint F] [--save-checkpoint F] [--weights FILE] [--threads N])", a);
  }
  if (!bdir) galv_fatal_all("a training pipeline needs --batches DIR (DIR/NAME.npy per data input)");
  char wbuf[PATH_MAX];
  wpath = galv_weights_path(wpath, wbuf, sizeof wbuf); /* --weights, else next to the executable */
  size_t wlen = 0;
  const char *mapped = galv_spmd_map_weights(wpath, &wlen); /* this rank's block */
  /* an earlier stage with a stash: its backward entry (program_bwd.c, weights_bwd.bin next to weights.bin); both
   * weights blocks start with the same parameters. With galv_pipe_bwd_base its constants follow the forward entry's
   * weights: one buffer [parameters, the forward entry's constants, the backward entry's] serves both entries (the
   * parameters held once); else the backward entry's block is a copy, its parameters copied over after each update */
  const galv_pipe_entry *bw = !last && galv_pipe_bwd.run ? &galv_pipe_bwd : NULL;
  const int wshare = bw && galv_pipe_bwd_base > 0;
  if (wshare && (galv_pipe_bwd_base < galv_weights_bytes || *bw->weights_bytes < galv_pipe_bwd_base))
    galv_fatal("pipeline table: the backward entry's constants start at byte %lld, inside the forward entry's %lld bytes of "
               "weights or past its own %lld (rebuild with galvc)", (long long)galv_pipe_bwd_base, (long long)galv_weights_bytes,
               (long long)*bw->weights_bytes);
  /* ZB-H1: the weight-gradient entry (program_wgt.c, weights_wgt.bin); with galv_pipe_wgt_base its constants follow
   * the others' in the same buffer (the parameters held once for the three entries) */
  const galv_pipe_entry *wg = galv_pipe_schedule == 2 && galv_pipe_wgt.run ? &galv_pipe_wgt : NULL;
  const int wgshare = wg && galv_pipe_wgt_base > 0 && (!bw || wshare);
  const int64_t wprev = wshare ? *bw->weights_bytes : galv_weights_bytes; /* the buffer's end before the W entry's constants */
  if (wgshare && (galv_pipe_wgt_base < wprev || *wg->weights_bytes < galv_pipe_wgt_base))
    galv_fatal("pipeline table: the weight-gradient entry's constants start at byte %lld, inside the other entries' %lld "
               "bytes or past its own %lld (rebuild with galvc)", (long long)galv_pipe_wgt_base, (long long)wprev,
               (long long)*wg->weights_bytes);
  const int64_t wtotal = wgshare ? *wg->weights_bytes : wprev;
  char *W = wshare || wgshare ? dalloc((size_t)wtotal, GALV_MEM_WEIGHTS) /* writable: the parameters are updated */
                              : upload(mapped, (size_t)galv_weights_bytes, GALV_MEM_WEIGHTS);
  if (wshare || wgshare) {
    D->h2d(W, mapped, (size_t)galv_weights_bytes);
    const int64_t next = wshare ? galv_pipe_bwd_base : galv_pipe_wgt_base;
    if (next > galv_weights_bytes) D->fill(W + galv_weights_bytes, 0, (size_t)(next - galv_weights_bytes));
    if (wgshare && galv_pipe_wgt_base > wprev) D->fill(W + wprev, 0, (size_t)(galv_pipe_wgt_base - wprev));
  }
  char *Wb = W;
  int64_t pspan = 0;
  for (int p = 0; p < galv_pipe_nparams; p++)
    if (galv_pipe_params[p].offset + galv_pipe_params[p].nbytes > pspan) pspan = galv_pipe_params[p].offset + galv_pipe_params[p].nbytes;
  if (bw) {
    char bpath[PATH_MAX + 64];
    const char *sl = strrchr(wpath, '/');
    snprintf(bpath, sizeof bpath, "%.*s%s", sl ? (int)(sl - wpath + 1) : 0, wpath, bw->weights_file);
    if (*bw->nranks != galv_nranks)
      galv_fatal("pipeline table: the backward entry has %d ranks, the forward entry %d", *bw->nranks, galv_nranks);
    size_t blen = 0;
    const char *mbw = galv_spmd_map_weights_of(bpath, *bw->weights_bytes, &blen);
    if (*bw->weights_bytes < pspan || galv_weights_bytes < pspan || memcmp(mbw, mapped, (size_t)pspan))
      galv_fatal("%s: the backward entry's parameters differ from %s's (rebuild with galvc)", bpath, wpath);
    if (wshare) /* its constants into the shared buffer, past the forward entry's weights */
      D->h2d(W + galv_pipe_bwd_base, mbw + galv_pipe_bwd_base, (size_t)(*bw->weights_bytes - galv_pipe_bwd_base));
    else Wb = upload(mbw, (size_t)*bw->weights_bytes, GALV_MEM_COPIES);
  }
  /* ZeRO-1 (galvc --pipeline-zero 1): the ranks holding the same parameters (zc, zg ranks) each keep the optimizer
   * state of one chunk of zn floats of the parameters' span [0, pspan) of weights.bin, update that chunk from the
   * (whole, already summed) gradient sums, and all-gather the chunks into W in place after the update. W is padded
   * to zg chunks (the last chunk's bytes past pspan: the constants after the parameters, equal on every rank). */
  galv_comm *zc = NULL;
  int zg = 1, zr = 0;
  size_t zn = 0, wbytes_all = (size_t)wtotal;
  /* no ZeRO, the data-parallel gradients reduced once per step (galv_pipe_zero 4, galvc's default for a training
   * stage over more than one rank): the stage program leaves each parameter gradient unreduced over the ranks holding
   * equal parameters (as ZeRO-2's); the runtime sums the microbatches' shares locally into one buffer laid out as the
   * parameters' span (acc[p] views into it) and all-reduces the unreduced ones in place once per step over them; the
   * optimizer then updates the whole parameters as without ZeRO */
  galv_comm *gc = NULL;
  int ogg = 1;
  size_t ogn = 0;
  if (galv_pipe_zero == 4 && galv_pipe_zero_axes) {
    gc = galv_comm_group(galv_pipe_zero_mesh, galv_pipe_zero_nmesh, galv_pipe_zero_axes);
    ogg = galv_comm_size(gc);
    if (ogg < 2) gc = NULL, ogg = 1;
    ogn = (((size_t)pspan + 3) / 4 + (size_t)ogg - 1) / (size_t)ogg;
  }
  if (galv_pipe_zero && galv_pipe_zero <= 3 && galv_pipe_zero_axes) {
    zc = galv_comm_group(galv_pipe_zero_mesh, galv_pipe_zero_nmesh, galv_pipe_zero_axes);
    zg = galv_comm_size(zc), zr = galv_comm_rank(zc);
    if (zg < 2) zc = NULL, zg = 1, zr = 0;
  }
  if (zc) {
    size_t nf = ((size_t)pspan + 3) / 4;
    zn = (nf + (size_t)zg - 1) / (size_t)zg;
    if ((size_t)zg * zn * 4 > wbytes_all) {
      char *W2 = dalloc((size_t)zg * zn * 4, GALV_MEM_WEIGHTS);
      D->copy(W2, W, wbytes_all);
      D->fill(W2 + wbytes_all, 0, (size_t)zg * zn * 4 - wbytes_all);
      drelease(W);
      if (Wb == W) Wb = W2; /* the shared buffer */
      W = W2;
      wbytes_all = (size_t)zg * zn * 4;
    }
  }
  /* ZB-H1: the weight-gradient entry's weights, its parameters alike (shared: its constants into W) */
  char *Ww = W;
  if (wg) {
    char wpath2[PATH_MAX + 64];
    const char *sl = strrchr(wpath, '/');
    snprintf(wpath2, sizeof wpath2, "%.*s%s", sl ? (int)(sl - wpath + 1) : 0, wpath, wg->weights_file);
    if (*wg->nranks != galv_nranks)
      galv_fatal("pipeline table: the weight-gradient entry has %d ranks, the forward entry %d", *wg->nranks, galv_nranks);
    size_t wl = 0;
    const char *mw = galv_spmd_map_weights_of(wpath2, *wg->weights_bytes, &wl);
    if (*wg->weights_bytes < pspan || memcmp(mw, mapped, (size_t)pspan))
      galv_fatal("%s: the weight-gradient entry's parameters differ from %s's (rebuild with galvc)", wpath2, wpath);
    if (wgshare) D->h2d(W + galv_pipe_wgt_base, mw + galv_pipe_wgt_base, (size_t)(*wg->weights_bytes - galv_pipe_wgt_base));
    else Ww = upload(mw, (size_t)*wg->weights_bytes, GALV_MEM_COPIES);
  }
  /* the backward entry's tables (the combined program's without a stash) */
  const galv_io *bin = bw ? bw->inputs : galv_inputs, *bout = bw ? bw->outputs : galv_outputs;
  const galv_io_split *bins = bw ? bw->input_split : galv_input_split, *bouts = bw ? bw->output_split : galv_output_split;
  const int nbi = bw ? *bw->ninputs : galv_ninputs, nbo = bw ? *bw->noutputs : galv_noutputs;

  /* inputs: 0 data (a batch file), k+1 received (galv_pipe_in[k]), -1 gin (the combined program) */
  int ni = galv_ninputs, no = galv_noutputs;
  int *ik = calloc((size_t)ni + 1, sizeof *ik), *ok = calloc((size_t)no + 1, sizeof *ok), *ng = calloc((size_t)nbi + 1, sizeof *ng);
  int *okb = bw ? calloc((size_t)nbo + 1, sizeof *okb) : ok;
  int64_t *ioff = calloc((size_t)ni + 1, sizeof *ioff), *goff = calloc((size_t)no + 1, sizeof *goff);
  galv_tensor *bat = calloc((size_t)ni + 1, sizeof *bat);
  int64_t *nbat = calloc((size_t)ni + 1, sizeof *nbat), *gnb = calloc((size_t)ni + 1, sizeof *gnb);
  char **gbuf = calloc((size_t)nbi + 1, sizeof *gbuf); /* per backward input "gin:pp.X": one gradient per receiving stage */
  float **accw = calloc((size_t)galv_pipe_nparams + 1, sizeof *accw); /* shared parameters: the whole gradient */
  float **acc = calloc((size_t)galv_pipe_nparams + 1, sizeof *acc), **st1 = calloc((size_t)galv_pipe_nparams + 1, sizeof *st1),
        **st2 = calloc((size_t)galv_pipe_nparams + 1, sizeof *st2);
  char **stash = calloc((size_t)B, sizeof *stash);
  if (!ik || !ok || !okb || !ng || !ioff || !goff || !bat || !nbat || !gnb || !gbuf || !acc || !accw || !st1 || !st2 || !stash)
    galv_fatal("out of memory");
  for (int i = 0; i < nbi; i++) {
    const galv_io *d = &bin[i];
    if (strncmp(d->name, "gin:", 4)) {
      if (bw) galv_fatal("pipeline table: the backward entry's input '%s' is not a gradient input", d->name);
      continue;
    }
    if (find(galv_outputs, no, d->name + 4) < 0) galv_fatal("pipeline table: no output '%s' for the gradient input '%s'", d->name + 4, d->name);
    ng[i] = gin_receivers(d->name + 4); /* the stages that received the value: one gradient each */
    check_whole(&bins[i], d->name);
    if (d->dtype != GALV_F32) galv_fatal("gradient input '%s' is not f32", d->name);
    gbuf[i] = dalloc(AB(d) * (size_t)(ng[i] ? ng[i] : 1), GALV_MEM_COMM);
  }
  int64_t in_bytes = 0, g_bytes = 0, dmax = 0;
  for (int i = 0; i < ni; i++) {
    const galv_io *d = &galv_inputs[i];
    int k = -1;
    for (int j = 0; j < galv_pipe_nin; j++)
      if (!strcmp(galv_pipe_in[j].name, d->name)) k = j;
    if (!strncmp(d->name, "gin:", 4)) {
      if (bw) galv_fatal("pipeline table: the forward entry has the gradient input '%s'", d->name);
      ik[i] = -1;
      continue;
    }
    if (!strcmp(d->name, "opt.loss_scale") && galv_pipe_loss_scale[0] && d->rank == 0) { ik[i] = -2; continue; }
    ioff[i] = in_bytes;
    in_bytes += ((int64_t)AB(d) + 63) / 64 * 64;
    if (k >= 0) { ik[i] = k + 1; check_whole(&galv_input_split[i], d->name); continue; }
    if (d->nbytes > dmax) dmax = d->nbytes;
    const galv_io gd = galv_spmd_global_io(d, &galv_input_split[i]); /* the file holds the global tensor */
    gnb[i] = gd.nbytes;
    char fn[256], path[PATH_MAX + 300], err[512];
    snprintf(fn, sizeof fn, "%s", d->name);
    for (char *c = fn; *c; c++)
      if (*c == '/' || *c == '\\' || (unsigned char)*c < 32) *c = '_';
    snprintf(path, sizeof path, "%s/%s.npy", bdir, fn);
    if (galv_read_tensor(path, &bat[i], err, sizeof err)) galv_fatal("%s: input '%s': %s", path, d->name, err);
    if (bat[i].dtype != d->dtype)
      galv_fatal("%s: input '%s' has dtype %s, the program expects %s", path, d->name, galv_dtype_name(bat[i].dtype),
                 galv_dtype_name(d->dtype));
    int lead = bat[i].rank == d->rank + 1, same = d->rank > 0 && (bat[i].rank == d->rank || lead);
    for (int r = 0; same && r < d->rank; r++) same = bat[i].dims[r + lead] == gd.dims[r] * (r ? 1 : B);
    if (!same || (lead && bat[i].dims[0] < 1))
      galv_fatal("%s: input '%s' does not have the program's shape with a batch (dim 0) of %d microbatches x %lld "
                 "(optionally with a leading steps dim)", path, d->name, B, d->rank ? (long long)gd.dims[0] : 0LL);
    nbat[i] = lead ? bat[i].dims[0] : 1;
  }
  int iloss = classify_outputs(galv_outputs, galv_output_split, no, ok, goff, &g_bytes, bw, wg);
  if (bw) {
    int64_t *gb = calloc((size_t)nbo + 1, sizeof *gb), gbb = 0;
    if (!gb) galv_fatal("out of memory");
    if (classify_outputs(bout, bouts, nbo, okb, gb, &gbb, NULL, wg) >= 0) galv_fatal("pipeline table: an earlier stage's backward entry has a loss");
    free(gb);
    int ns = 0; /* every stash slot is written by the forward entry */
    for (int o = 0; o < no; o++) ns += ok[o] >= 2000000 && ok[o] < 3000000;
    if (ns != *bw->nstash) galv_fatal("pipeline table: the forward entry writes %d stash values, the backward entry reads %d", ns, *bw->nstash);
  }
  if (last && iloss < 0) galv_fatal("the last stage's program has no 'loss' output");
  /* ZB-H1's weight-gradient entry: outputs grad:<param> only; its state slots come from the entry before it
   * ("wstash.N": that entry's outputs; "stash.N": the microbatch's stash, wsrc[i] its slot there) */
  const int nwo = wg ? *wg->noutputs : 0;
  int *okw = calloc((size_t)nwo + 1, sizeof *okw), *wsrc = calloc(wg ? (size_t)*wg->nstash + 1 : 1, sizeof *wsrc);
  if (!okw || !wsrc) galv_fatal("out of memory");
  if (wg) {
    int64_t *gb = calloc((size_t)nwo + 1, sizeof *gb), gbb = 0;
    if (!gb) galv_fatal("out of memory");
    if (classify_outputs(wg->outputs, wg->output_split, nwo, okw, gb, &gbb, NULL, NULL) >= 0 || gbb)
      galv_fatal("pipeline table: the weight-gradient entry has outputs other than parameter gradients");
    free(gb);
    for (int o = 0; o < nwo; o++)
      if (okw[o] >= 0) galv_fatal("pipeline table: the weight-gradient entry's output '%s' is no parameter gradient", wg->outputs[o].name);
    if (!last && !bw) galv_fatal("pipeline table: a weight-gradient entry without a backward entry");
    const int *okp = bw ? okb : ok; /* the entry that fills W's "wstash.N" slots */
    const int npo = bw ? nbo : no;
    for (int i = 0; i < *wg->nstash; i++) {
      wsrc[i] = -1;
      if (!strncmp(wg->stash[i].name, "wstash.", 7)) {
        for (int o = 0; o < npo; o++) wsrc[i] = okp[o] == 3000000 + i ? -2 : wsrc[i];
        if (wsrc[i] != -2) galv_fatal("pipeline table: no entry writes the weight-gradient entry's slot '%s'", wg->stash[i].name);
        continue;
      }
      for (int k = 0; bw && k < *bw->nstash; k++)
        if (!strcmp(bw->stash[k].name, wg->stash[i].name)) wsrc[i] = k;
      if (wsrc[i] < 0 || bw->stash[wsrc[i]].nbytes != wg->stash[i].nbytes)
        galv_fatal("pipeline table: the weight-gradient entry's slot '%s' is not in the microbatch's stash", wg->stash[i].name);
    }
  }
  /* an earlier stage with no gradient outputs (only frozen parameters, nothing received): forward only */
  int fwd_only = !last && !bw;
  for (int o = 0; o < nbo && fwd_only; o++)
    if (okb[o] < 0 || (okb[o] >= 1000000 && okb[o] < 2000000)) fwd_only = 0;
  /* cross entropy on the last stage: each microbatch's mean weighted by its counted labels (mbw) */
  double *mbw = NULL;
  int ilab = -1;
  if (last && galv_pipe_ce) {
    for (int i = 0; i < ni; i++)
      if (ik[i] == 0 && !strcmp(galv_inputs[i].name, galv_pipe_labels)) ilab = i;
    if (ilab < 0) galv_fatal("pipeline table: the last stage has no labels input '%s'", galv_pipe_labels);
    if (bat[ilab].dtype != GALV_I64) galv_fatal("labels '%s' are not int64", galv_pipe_labels);
    mbw = calloc((size_t)B, sizeof *mbw);
    if (!mbw) galv_fatal("out of memory");
  }
  int adamw = !strcmp(galv_pipe_optimizer, "adamw");
  const double lr = galv_pipe_hparams[0], wd = galv_pipe_hparams[1], b1 = galv_pipe_hparams[2], b2 = galv_pipe_hparams[3],
               eps = galv_pipe_hparams[4], mom = galv_pipe_hparams[5];
  /* a parameter trains when an entry outputs its gradient; a frozen one (galv.frozen) has none: no sums, no
   * optimizer state, no update (drelease(NULL) is a no-op) */
  char *trains = calloc((size_t)galv_pipe_nparams + 1, 1);
  if (!trains) galv_fatal("out of memory");
  for (int o = 0; o < nbo; o++)
    if (okb[o] < 0) trains[-okb[o] - 1] = 1;
  for (int o = 0; o < nwo; o++) trains[-okw[o] - 1] = 1;
  { /* the parameter gradients' storage (every entry's alike) is the sums' dtype (--grad-dtype bf16 / fp16) */
    const galv_io *os[3] = {galv_outputs, bout, wg ? wg->outputs : NULL};
    const int *oks[3] = {ok, okb, okw}, nos[3] = {no, nbo, nwo};
    int n16 = 0, n32 = 0, two = 0; /* two: both 16-bit dtypes */
    for (int e = 0; e < 3; e++)
      for (int o = 0; o < nos[e]; o++)
        if (oks[e][o] < 0) {
          if (os[e][o].storage) n16++, two |= g16 && os[e][o].storage != g16, g16 = os[e][o].storage;
          else n32++;
        }
    if (n16 && (n32 || two))
      galv_fatal("pipeline table: the parameter gradients are stored in more than one dtype (%d 16-bit, %d fp32; rebuild with galvc)", n16, n32);
  }
  int64_t m_sums = 0, m_opt = 0, m_buf = 0; /* the bytes allocated per rank (printed after the steps) */
  float *zs1 = NULL, *zs2 = NULL; /* ZeRO-1: this rank's chunk of the optimizer state */
  /* ZeRO-2 (galv_pipe_zero 2): the step's sums laid out as the parameters' span (zg chunks of zn elements, in the
   * sums' dtype; acc[p] views into it), reduce-scattered once per step into this rank's chunk zsum */
  const int z2 = zc && galv_pipe_zero >= 2, z2e = zc && galv_pipe_zero == 3; /* z2e: per microbatch (ze above) */
  char *zacc = z2 && !z2e ? dalloc(GSB((size_t)zg * zn * 4), GALV_MEM_SUMS) : NULL;
  float *zsum = z2 && !z2e ? dalloc(GSB(zn * 4), GALV_MEM_SUMS) : NULL;
  if (z2 && !z2e) {
    D->fill(zacc, 0, GSB((size_t)zg * zn * 4));
    m_sums = (int64_t)GSB((size_t)zg * zn * 4) + (int64_t)GSB(zn * 4);
  }
  char *gacc = gc ? dalloc(GSB((size_t)ogg * ogn * 4), GALV_MEM_SUMS) : NULL; /* galv_pipe_zero 4: the step's sums, all-reduced once */
  if (gc) D->fill(gacc, 0, GSB((size_t)ogg * ogn * 4)), m_sums = (int64_t)GSB((size_t)ogg * ogn * 4);
  if (z2e) { /* the chunk's sums, one bucket per rank staged, the reduce-scatter's result */
    ze.c = zc, ze.q = q, ze.g = zg, ze.r = zr, ze.zn = zn, ze.nbk = (size_t)ZE_BUCKETS * (size_t)zg;
    ze.bs = (zn + ze.nbk - 1) / ze.nbk;
    ze.sum = dalloc(GSB(ze.nbk * ze.bs * 4), GALV_MEM_SUMS), ze.st = dalloc(GSB((size_t)zg * ze.bs * 4), GALV_MEM_COMM),
    ze.rb = dalloc(GSB(ze.bs * 4), GALV_MEM_COMM);
    ze.gp = calloc((size_t)galv_pipe_nparams + 1, sizeof *ze.gp);
    ze.gw = calloc((size_t)galv_pipe_nparams + 1, 1);
    if (!ze.gp || !ze.gw) galv_fatal("out of memory");
    zsum = (float *)(void *)ze.sum;
    m_sums = (int64_t)GSB((ze.nbk + (size_t)zg + 1) * ze.bs * 4);
  }
  /* --clip-grad-norm with ZeRO-2: per parameter whether this rank's group counts it in the norm (one of its ranks
   * would without ZeRO-2: clip_counts; each replicated parameter once), from each rank's chunk of the reduced sums */
  float *zcnt = z2 && galv_pipe_clip > 0 ? calloc((size_t)galv_pipe_nparams + 1, sizeof *zcnt) : NULL;
  if (zcnt) {
    for (int p = 0; p < galv_pipe_nparams; p++) zcnt[p] = trains[p] && clip_counts(p) ? 1.0f : 0.0f;
    char *buf = dalloc(2 * (size_t)galv_pipe_nparams * 4 + 64, GALV_MEM_COMM);
    D->h2d(buf, zcnt, (size_t)galv_pipe_nparams * 4);
    galv_all_reduce(zc, buf, buf + (size_t)galv_pipe_nparams * 4, (size_t)galv_pipe_nparams, GALV_F32, GALV_RED_MAX, q);
    galv_queue_sync(q);
    D->d2h(zcnt, buf + (size_t)galv_pipe_nparams * 4, (size_t)galv_pipe_nparams * 4);
    drelease(buf);
  }
  for (int p = 0; p < galv_pipe_nparams; p++) { /* the gradient sums and the optimizer state, zero */
    if (!trains[p]) continue;
    size_t n = (size_t)galv_pipe_params[p].nbytes;
    if (z2e && !shared_param(p)) acc[p] = NULL; /* reduce-scattered per microbatch; a shared one: its sum (below) */
    else if (z2 && !z2e) acc[p] = (float *)(void *)(zacc + GSB((size_t)galv_pipe_params[p].offset));
    else if (gc) acc[p] = (float *)(void *)(gacc + GSB((size_t)galv_pipe_params[p].offset));
    else acc[p] = dalloc(GSB(n), GALV_MEM_SUMS), m_sums += (int64_t)GSB(n);
    if (zc) continue;
    st1[p] = adamw || mom != 0 ? dalloc(n, GALV_MEM_OPT) : NULL;
    st2[p] = adamw ? dalloc(n, GALV_MEM_OPT) : NULL;
    if (st1[p]) D->fill(st1[p], 0, n);
    if (st2[p]) D->fill(st2[p], 0, n);
    m_opt += (int64_t)n * ((st1[p] != NULL) + (st2[p] != NULL));
  }
  if (zc) {
    zs1 = adamw || mom != 0 ? dalloc(zn * 4, GALV_MEM_OPT) : NULL;
    zs2 = adamw ? dalloc(zn * 4, GALV_MEM_OPT) : NULL;
    if (zs1) D->fill(zs1, 0, zn * 4);
    if (zs2) D->fill(zs2, 0, zn * 4);
    m_opt = (int64_t)zn * 4 * ((zs1 != NULL) + (zs2 != NULL));
  }
  uint64_t zsent = 0, zrs = 0, gar = 0; /* gar: the once-per-step gradient all-reduces' bytes (galv_pipe_zero 4);  the ZeRO-1 all-gathers' bytes, ZeRO-2's reduce-scatters' (galv_comm_counters, around them) */
  /* gmax: the largest split parameter whose gradient an entry returns whole (accumulate / ze_pass take this rank's
   * block of it into gblk); a gradient returned split as its parameter needs none */
  int64_t gmax = whole_grad_max(galv_outputs, ok, no, 0), wmax = 0;
  if (bw) gmax = whole_grad_max(bout, okb, nbo, gmax);
  if (wg) gmax = whole_grad_max(wg->outputs, okw, nwo, gmax);
  for (int p = 0; p < galv_pipe_nparams; p++)
    if (shared_split(p) && trains[p]) { /* its block's sum is acc[p]; one received from another stage: wtmp */
      int64_t bb = (int64_t)GSB((size_t)galv_pipe_params[p].nbytes);
      if (bb > wmax) wmax = bb;
    } else if (shared_param(p) && trains[p]) { /* frozen everywhere it is held: nothing to sum */
      int64_t wb = (int64_t)GSB((size_t)galv_spmd_global_io(&galv_pipe_params[p], &galv_pipe_param_split[p]).nbytes);
      accw[p] = dalloc((size_t)wb, GALV_MEM_SUMS);
      if (wb > wmax) wmax = wb;
    }
  for (int p = 0; p < galv_pipe_nparams; p++)
    if (accw[p]) m_buf += (int64_t)GSB((size_t)galv_spmd_global_io(&galv_pipe_params[p], &galv_pipe_param_split[p]).nbytes);
  int64_t pmax = 0; /* bf16 sums: the largest trained parameter's f32 bytes (grad_f32's buffer) */
  for (int p = 0; p < galv_pipe_nparams && g16; p++)
    if (trains[p] && galv_pipe_params[p].nbytes > pmax) pmax = galv_pipe_params[p].nbytes;
  gmax = (int64_t)GSB((size_t)gmax);
  m_buf += wmax + gmax + pmax + (last || bw ? in_bytes : 0);
  for (int i = 0; i < nbi; i++)
    if (gbuf[i]) m_buf += (int64_t)AB(&bin[i]) * (ng[i] ? ng[i] : 1);
  float *wtmp = wmax ? dalloc((size_t)wmax, GALV_MEM_COMM) : NULL; /* a shared gradient received from another stage */
  shared_layout_check(world, q);
  float *gblk = gmax ? dalloc((size_t)gmax, GALV_MEM_BUFFERS) : NULL; /* a split parameter's block of its (whole) gradient */
  float *g32 = pmax ? dalloc((size_t)pmax, GALV_MEM_BUFFERS) : NULL; /* bf16 sums: one widened for the optimizer */
  char *inbuf = last || bw ? dalloc((size_t)in_bytes, GALV_MEM_BUFFERS) : NULL; /* a forward's inputs (received, data slices) */
  char *hin = malloc((size_t)dmax + (size_t)dmax / 2 + 128); /* a data slice on the host, before its copy (16-bit: then narrowed) */
  if (!hin) galv_fatal("out of memory");
  /* one arena for both entries (each planned on its own; they never run at once) */
  int64_t amax = bw && *bw->arena_bytes > galv_arena_bytes ? *bw->arena_bytes : galv_arena_bytes;
  if (wg && *wg->arena_bytes > amax) amax = *wg->arena_bytes;
  size_t abytes = (size_t)(amax ? amax : 64);
  char *arena = dalloc(abytes, GALV_MEM_ARENA);
  D->fill(arena, FILL, abytes);

  /* the schedule */
  galv_pipe_act *acts = malloc(sizeof *acts * (size_t)(3 * B * (galv_pipe_vstages > 1 ? galv_pipe_vstages : 1))); /* interleaved: 2 V B */
  char **wst = calloc((size_t)B, sizeof *wst); /* ZB-H1: per microbatch what its W reads, from B(j) (last stage: F(j)) to W(j) */
  if (!acts || !wst) galv_fatal("out of memory");
  const int IL = galv_pipe_schedule == GALV_SCHED_INTERLEAVED, V = IL ? galv_pipe_vstages : 1, NG = S / V, grp = me % NG;
  int il_even = 1; /* interleaved: every stage on as many ranks (a device group: that many devices, each running
                         * the group's V chunks' ranks of its place) */
  for (int s = 0; IL && s < S; s++) il_even &= galv_pipe_first_rank[s + 1] - galv_pipe_first_rank[s] == nlocal;
  if (IL && (V < 2 || S % V || B % NG || !il_even))
    galv_fatal("pipeline table: interleaved over %d stages, %d chunks per group, %d microbatches, %d ranks on stage %d "
               "(expected S = P V, B a multiple of P, as many ranks on every stage)", S, V, B, nlocal, me);
  const int na = galv_pipe_order_v(S, V, me, B, galv_pipe_schedule, acts); /* galv_pipe_sched.h: also galvc's --trace-plan */
  /* interleaved: the group's order; gidx[k]: this stage's entry k's place in it; owner(i): the stage of entry i */
  galv_pipe_act *gacts = IL ? malloc(sizeof *gacts * (size_t)(2 * V * B)) : NULL;
  int *gidx = IL ? malloc(sizeof *gidx * (size_t)(na + 1)) : NULL, gn = 0;
  il_state il = {0};
  /* interleaved: which copies a later message proves received (il_rel_setup): per output o and receiving stage st
   * il_frel[o S + st], per backward output il_grel[o]; il_relmb[j]: the forward entry releasing gradient copy j */
  int8_t *il_frel = NULL, *il_grel = NULL;
  int *il_relmb = NULL;
  double *il_sums = NULL; /* interleaved: per stage its arena written, saved bytes, forward and backward sends per microbatch */
  if (IL) {
    if (!gacts || !gidx) galv_fatal("out of memory");
    il_relmb = malloc(sizeof *il_relmb * (size_t)B);
    if (!il_relmb) galv_fatal("out of memory");
    galv_pipe_il_grad_release(NG, V, me, B, gacts, il_relmb); /* gacts as scratch, before the group's order */
    gn = galv_pipe_order_group(NG, V, grp, B, gacts);
    for (int i = 0, k = 0; i < gn; i++)
      if (gacts[i].chunk * NG + grp == me) gidx[k++] = i;
    il.sq = galv_queue_new();
    il.bw = galv_comm_world_dup();
    il_frel = calloc((size_t)(no * S) + 1, 1), il_grel = calloc((size_t)nbo + 1, 1);
    if (!il_frel || !il_grel) galv_fatal("out of memory");
    il_rel_setup(ok, no, okb, nbo, bin, gbuf, nbi, ik, ni, il_frel, il_grel);
  }
#define IL_OWNER(i) (gacts[i].chunk * NG + grp)
  const int64_t wbytes = wg ? *wg->stash_bytes : 0;
  /* saved per microbatch in flight: the stash; without one the inputs (recomputed from); the last stage its inputs' gradients */
  const int64_t sbytes = bw ? *bw->stash_bytes : last ? g_bytes : in_bytes;
  int64_t live = 0, peak = 0;
  int inflight = 0, peak_mb = 0;
  double tstart = now_us(), tcomp = 0;
  float step_t = 0;
  /* loss scaling (galv_pipe_loss_scale): the scale, the good steps since the last change, the skipped steps */
  const int lsm = (int)galv_pipe_loss_scale[0];
  pipe_ls_state ls = {lsm, lsm ? (float)galv_pipe_loss_scale[1] : 1.0f, 0, 0};
  int64_t done = 0; /* steps done before */
  if (load && zc) { /* ZeRO-1: the whole state read into span-laid buffers, this rank's chunk kept */
    float *f1 = zero_span_views(st1, zs1, zg, zn, trains), *f2 = zero_span_views(st2, zs2, zg, zn, trains);
    done = pipe_load_checkpoint(load, W, st1, st2, trains, adamw, &step_t, &ls);
    if (zs1) D->copy(zs1, f1 + (size_t)zr * zn, zn * 4);
    if (zs2) D->copy(zs2, f2 + (size_t)zr * zn, zn * 4);
    zero_span_views(st1, NULL, 0, 0, trains), zero_span_views(st2, NULL, 0, 0, trains);
    drelease(f1), drelease(f2);
  } else if (load) done = pipe_load_checkpoint(load, W, st1, st2, trains, adamw, &step_t, &ls);
  float ls_scale = ls.scale, ls_tracker = ls.tracker, ls_skipped = ls.skipped;
  if (load && bw && Wb != W) D->copy(Wb, W, (size_t)pspan);
  if (load && wg && Ww != W) D->copy(Ww, W, (size_t)pspan);
  if (IL) { /* the group's tracked bytes before its first entry: its ranks' live buffers summed */
    double x = (double)galv_mem_live(), *all = malloc(sizeof *all * (size_t)galv_pipe_first_rank[S]);
    if (!all) galv_fatal("out of memory");
    world_rank_values(world, q, &x, 1, all);
    il.dev[IL_G] = 0, il.mine = (int64_t)x;
    for (int c = 0; c < V; c++) il.dev[IL_G] += (int64_t)all[galv_pipe_first_rank[c * NG + grp] + lrank];
    free(all);
    galv_mem_window(); /* the first entry's turn opens */
  }
  for (long step = 0; step < steps; step++) {
    galv_rt_step = done + step; /* galv.dropout's masks: the step count (checkpoints included) */
    for (int p = 0; p < galv_pipe_nparams; p++) {
      if (trains[p] && acc[p]) D->fill(acc[p], 0, GSB((size_t)galv_pipe_params[p].nbytes));
      if (accw[p]) D->fill(accw[p], 0, GSB((size_t)galv_spmd_global_io(&galv_pipe_params[p], &galv_pipe_param_split[p]).nbytes));
    }
    if (z2e) D->fill(ze.sum, 0, GSB(ze.nbk * ze.bs * 4));
    double loss = 0;
    int nops = 0;
    if (mbw) { /* per microbatch: its labels other than the ignore index; weight c_j B / sum c */
      int64_t tot = 0, per = gnb[ilab] / 8;
      const int64_t *lab = (const int64_t *)(const void *)((const char *)bat[ilab].data +
                                                           (size_t)(nbat[ilab] > 1 ? (done + step) % nbat[ilab] : 0) * (size_t)B * (size_t)gnb[ilab]);
      for (int j = 0; j < B; j++) {
        int64_t c = 0;
        for (int64_t e = 0; e < per; e++) c += lab[(int64_t)j * per + e] != galv_pipe_ignore_index;
        mbw[j] = (double)c, tot += c;
      }
      for (int j = 0; j < B; j++) mbw[j] = tot ? mbw[j] * B / (double)tot : 1.0;
    }
    char *to_free = NULL;
    if (IL && step > 0 && IL_OWNER(gn - 1) == me) { /* this rank holds the baton: a turn opens */
      galv_mem_window();
      if (IL_OWNER(0) != me) il_baton_send(&il, IL_OWNER(0)); /* into the step */
    }
    for (int k = 0; k <= na; k++) {
      const galv_pipe_act *pa = k ? &acts[k - 1] : NULL, *a = k < na ? &acts[k] : NULL;
      if (IL) { /* the previous entry's sends (from copies, not waited for), the baton on, the baton for this entry */
        if (pa && pa->fwd && !last)
          for (int o = 0; o < no; o++)
            if (ok[o] > 0 && ok[o] < 1000000) {
              const galv_pipe_value *v = &galv_pipe_out[ok[o] - 1];
              for (int st = 0; st < S; st++)
                if (v->dst >> st & 1)
                  il_send(&il, galv_pipe_xfer_find(v->name, 0, me, st), outp(o, arena, W), AB(&galv_outputs[o]), 0,
                          il_frel[o * S + st] ? pa->mb : -1);
            }
        if (pa && !pa->fwd)
          for (int o = 0; o < nbo; o++)
            if (okb[o] >= 1000000 && okb[o] < 2000000) {
              const galv_pipe_value *v = &galv_pipe_in[okb[o] - 1000000];
              il_send(&il, galv_pipe_xfer_find(v->name, 1, me, v->peer), last ? stash[pa->mb] + goff[o] : outp_of(bout, o, arena, Wb, NULL),
                      AB(&bout[o]), 1, il_grel[o] ? il_relmb[pa->mb] : -1);
            }
        if (pa && !pa->fwd && last) drelease(stash[pa->mb]), stash[pa->mb] = NULL;
        if (pa && gidx[k - 1] + 1 < gn && IL_OWNER(gidx[k - 1] + 1) != me) il_baton_send(&il, IL_OWNER(gidx[k - 1] + 1));
        if (!a) break;
        const int gi = gidx[k], prev = gi ? gi - 1 : gn - 1;
        if ((gi || step > 0) && IL_OWNER(prev) != me) {
          double tb = now_us();
          il_baton_recv(&il, q, IL_OWNER(prev));
          ev_add(EV_RECV, a->mb, tb, now_us());
        }
      }
      const int64_t live0 = live;
      const int inflight0 = inflight;
      double t0 = now_us();
      galv_group_start();
      nops = 0;
      if (!IL && pa && pa->fwd && !last) /* the previous forward's values to the later stages */
        for (int o = 0; o < no; o++)
          if (ok[o] > 0 && ok[o] < 1000000) {
            const galv_pipe_value *v = &galv_pipe_out[ok[o] - 1];
            for (int st = 0; st < S; st++)
              if (v->dst >> st & 1) galv_pipe_xfer_send(galv_pipe_xfer_find(v->name, 0, me, st), outp(o, arena, W), q), nops++;
          }
      if (!IL && pa && !pa->fwd && !pa->w) /* the previous backward's gradients of the received values */
        for (int o = 0; o < nbo; o++)
          if (okb[o] >= 1000000 && okb[o] < 2000000) {
            const char *src = last ? stash[pa->mb] + goff[o] : outp_of(bout, o, arena, Wb, NULL);
            const galv_pipe_value *v = &galv_pipe_in[okb[o] - 1000000];
            galv_pipe_xfer_send(galv_pipe_xfer_find(v->name, 1, me, v->peer), src, q), nops++;
          }
      if (!IL && pa && !pa->fwd && !pa->w && last) to_free = stash[pa->mb], stash[pa->mb] = NULL;
      if (a && a->fwd) {
        char *dst = inbuf;
        if (!last && !bw) { /* recomputation: the inputs are what is saved */
          dst = stash[a->mb] = dalloc((size_t)in_bytes, GALV_MEM_SAVED);
          live += sbytes, inflight++;
          if (live > peak) peak = live;
          if (inflight > peak_mb) peak_mb = inflight;
        }
        for (int i = 0; i < ni; i++)
          if (ik[i] > 0) {
            const galv_pipe_value *v = &galv_pipe_in[ik[i] - 1];
            galv_pipe_xfer_recv(galv_pipe_xfer_find(v->name, 0, v->peer, me), dst + ioff[i], q), nops++;
          }
      }
      if (a && !a->fwd && !a->w && !last)
        for (int i = 0; i < nbi; i++)
          if (gbuf[i]) {
            const char *oname = bin[i].name + 4;
            int c = 0;
            for (int j = 0; j < galv_pipe_nout; j++)
              if (!strcmp(galv_pipe_out[j].name, oname))
                for (int st = 0; st < S; st++)
                  if (galv_pipe_out[j].dst >> st & 1)
                    galv_pipe_xfer_recv(galv_pipe_xfer_find(oname, 1, st, me), gbuf[i] + (size_t)c++ * AB(&bin[i]),
                                        q), nops++;
          }
      galv_group_end();
      galv_pipe_xfer_complete(q);
      if (IL && a) il_release(&il, a->fwd, a->mb); /* the copies this entry's receives prove received */
      if (nops) ev_add(EV_RECV, a ? a->mb : pa->mb, t0, now_us());
      if (to_free) drelease(to_free);
      to_free = NULL;
      if (!a) break;
      /* compute */
      double t1 = now_us();
      galv_rt_mb = a->mb; /* galv.dropout's masks: this microbatch's rows of the step's batch */
      if (a->w) { /* ZB-H1: the weight-gradient entry on what B(j) (last stage: F(j)) kept for it */
        if (wg) {
          coll_begin();
          D->run_entry(wg, arena, Ww, wst[a->mb]);
          coll_end(wg->comm_predicted);
          for (int o = 0; o < nwo; o++) {
            if (!wg->outputs[o].in_weights) GALV_UNPOISON(arena + wg->outputs[o].offset, AB(&wg->outputs[o]));
            if (last && mbw && !lsm) /* cross entropy: weighted as the microbatch's other gradients (below) */
              io_scale(&wg->outputs[o], outp_of(wg->outputs, o, arena, Ww, wst[a->mb]), (float)mbw[a->mb]);
          }
          accumulate(wg->outputs, okw, nwo, arena, Ww, wst[a->mb], acc, accw, gblk);
          drelease(wst[a->mb]);
          wst[a->mb] = NULL;
          live -= wbytes, inflight--;
        }
      } else if (a->fwd || !last) {
        char *src = last || bw ? inbuf : stash[a->mb];
        if (a->fwd || !bw)
          for (int i = 0; i < ni; i++) {
            const galv_io *d = &galv_inputs[i];
            GALV_UNPOISON(arena + d->offset, AB(d));
            if (ik[i] == 0 && a->fwd) { /* this rank's block of the microbatch's slice of the step's batch */
              int64_t b = nbat[i] > 1 ? (done + step) % nbat[i] : 0;
              galv_spmd_block(d, &galv_input_split[i], hin, (char *)bat[i].data + ((size_t)b * (size_t)B + (size_t)a->mb) * (size_t)gnb[i]);
              io_h2d(d, src + ioff[i], hin, hin + (dmax + 63) / 64 * 64);
            }
            if (ik[i] >= 0) D->copy(arena + d->offset, src + ioff[i], AB(d));
            else if (ik[i] == -2) { /* the seed: the scale x the microbatch's share of the step's loss */
              float sd = (float)((double)ls_scale * (mbw ? mbw[a->mb] : 1.0) / B);
              io_h2d(d, arena + d->offset, (const char *)&sd, hin);
            }
            else if (a->fwd) D->fill(arena + d->offset, 0, AB(d)); /* recomputation: gin = 0 */
          }
        for (int i = 0; i < nbi && !a->fwd; i++)
          if (gbuf[i]) { /* the gradient: the sum over the stages that received the value */
            const galv_io *d = &bin[i];
            GALV_UNPOISON(arena + d->offset, AB(d));
            char *g = arena + d->offset;
            D->copy(g, gbuf[i], AB(d));
            for (int r = 1; r < ng[i]; r++) io_add(d, g, gbuf[i] + (size_t)r * AB(d));
          }
        coll_begin();
        if (bw && !a->fwd) D->run_entry(bw, arena, Wb, stash[a->mb]), coll_end(bw->comm_predicted); /* the stash is its state buffer */
        else if (a->fwd || !fwd_only) D->run(arena, W), coll_end(galv_comm_predicted); /* a forward-only stage's backward only received */
        const galv_io *outs = bw && !a->fwd ? bout : galv_outputs;
        for (int o = 0, n = bw && !a->fwd ? nbo : no; o < n; o++)
          if (!outs[o].in_weights) GALV_UNPOISON(arena + outs[o].offset, AB(&outs[o]));
        if (wg && (last ? a->fwd : !a->fwd)) { /* ZB-H1: what W(j) reads, kept until it runs */
          const int *okp = last ? ok : okb;
          char *wb = wst[a->mb] = dalloc((size_t)(wbytes ? wbytes : 64), GALV_MEM_SAVED);
          live += wbytes;
          if (live > peak) peak = live;
          for (int o = 0, n = last ? no : nbo; o < n; o++)
            if (okp[o] >= 3000000)
              D->copy(wb + wg->stash[okp[o] - 3000000].offset, outp_of(outs, o, arena, last ? W : Wb, last ? NULL : stash[a->mb]),
                      AB(&outs[o]));
          for (int i = 0; i < *wg->nstash; i++)
            if (wsrc[i] >= 0) D->copy(wb + wg->stash[i].offset, stash[a->mb] + bw->stash[wsrc[i]].offset, (size_t)wg->stash[i].nbytes);
        }
        if (last && mbw && !lsm) /* cross entropy: this microbatch's gradients weighted by its share of the counted labels
                                  * (loss scaling: in the seed) */
          for (int o = 0; o < no; o++)
            if (ok[o] < 0 || (ok[o] >= 1000000 && ok[o] < 2000000))
              io_scale(&galv_outputs[o], arena + galv_outputs[o].offset, (float)mbw[a->mb]);
        if (bw && a->fwd) { /* the microbatch's stash: the forward values the backward entry reads */
          stash[a->mb] = dalloc((size_t)sbytes, GALV_MEM_SAVED);
          live += sbytes, inflight++;
          if (live > peak) peak = live;
          if (inflight > peak_mb) peak_mb = inflight;
          for (int o = 0; o < no; o++)
            if (ok[o] >= 2000000 && ok[o] < 3000000)
              D->copy(stash[a->mb] + bw->stash[ok[o] - 2000000].offset, outp(o, arena, W), AB(&galv_outputs[o]));
        }
        if (!a->fwd || last) /* backward: the parameter gradients */
          accumulate(bout, okb, nbo, arena, Wb, bw && !a->fwd ? stash[a->mb] : NULL, acc, accw, gblk);
        if (last) {
          float l;
          D->d2h(&l, outp(iloss, arena, W), 4);
          loss += mbw ? l * mbw[a->mb] : l;
          stash[a->mb] = dalloc((size_t)g_bytes, GALV_MEM_SAVED);
          live += sbytes, inflight++;
          if (live > peak) peak = live;
          if (inflight > peak_mb) peak_mb = inflight;
          for (int o = 0; o < no; o++)
            if (ok[o] >= 1000000 && ok[o] < 2000000) D->copy(stash[a->mb] + goff[o], outp(o, arena, W), AB(&galv_outputs[o]));
        } else if (!a->fwd) {
          drelease(stash[a->mb]);
          stash[a->mb] = NULL;
          live -= sbytes;
          if (!wg) inflight--; /* with W: the microbatch holds what W reads until W(j) */
        }
      }
      if (last && !a->fwd && !a->w) { /* freed once the next group has sent it */
        live -= sbytes;
        if (!wg) inflight--;
      }
      double t2 = now_us();
      tcomp += t2 - t1;
      ev_add(a->fwd ? EV_FWD : a->w ? EV_WGT : EV_BWD, a->mb, t1, t2);
      if (IL) { /* the group's counters: what this entry saved or freed */
        il.dev[0] += live - live0, il.dev[1] += inflight - inflight0;
        if (il.dev[0] > il.dev[2]) il.dev[2] = il.dev[0];
        if (il.dev[1] > il.dev[3]) il.dev[3] = il.dev[1];
      }
    }
    if (IL) { /* the group's last entry's turn closes; every send of the step has completed */
      if (IL_OWNER(gn - 1) == me) il_close(&il);
      il_step_end(&il, IL_OWNER(gn - 1) == me);
    }
    /* shared parameters: the gradient summed across the holding stages, then this rank's block of it; one the program
     * left unreduced over the ranks holding equal parameters (no ZeRO: galv_pipe_zero 4) all-reduced over them first,
     * in place, so every rank's sum is the group's (then whole on every rank: left out of the all-reduce below) */
    for (int p = 0; gc && p < galv_pipe_nparams; p++) { /* (a block summed across the stages alike: its block) */
      if (!(accw[p] || (shared_split(p) && trains[p])) || !galv_pipe_zero_partial[p]) continue;
      size_t wb = accw[p] ? (size_t)galv_spmd_global_io(&galv_pipe_params[p], &galv_pipe_param_split[p]).nbytes
                          : (size_t)galv_pipe_params[p].nbytes;
      void *x = accw[p] ? (void *)accw[p] : (void *)acc[p];
      galv_queue_sync(q);
      uint64_t before = galv_comm_counters().all_reduce;
      galv_all_reduce(gc, x, x, wb / 4, g16 ? g16 : GALV_F32, GALV_RED_SUM, q);
      galv_queue_sync(q);
      gar += galv_comm_counters().all_reduce - before;
    }
    for (int p = 0; p < galv_pipe_nparams; p++) { /* in parameter order: the same order in every holding stage */
      if (shared_split(p) && trains[p]) {
        shared_block_sum(world, q, p, acc[p], wtmp, (size_t)galv_pipe_params[p].nbytes / 4);
        continue;
      }
      if (!accw[p]) continue;
      size_t wb = (size_t)galv_spmd_global_io(&galv_pipe_params[p], &galv_pipe_param_split[p]).nbytes;
      shared_grad_sum(world, q, p, accw[p], wtmp, wb / 4);
      galv_io l = galv_pipe_params[p];
      if (g16) l.dtype = g16, l.nbytes /= 2;
      if (galv_pipe_param_split[p].starts) D->block(&l, &galv_pipe_param_split[p], acc[p], accw[p]);
      else D->copy(acc[p], accw[p], GSB(wb));
    }
    if (z2e) { /* ZeRO-2 per microbatch: the shared parameters' step sums (whole: the group's first rank) into the chunk */
      int any = 0;
      for (int p = 0; p < galv_pipe_nparams; p++)
        if (accw[p] || (shared_split(p) && trains[p])) ze.gp[p] = zr == 0 ? acc[p] : NULL, any = 1;
      if (any) ze_pass(0, gblk);
      memset(ze.gp, 0, sizeof *ze.gp * (size_t)galv_pipe_nparams);
      zrs = ze.sent;
    } else if (z2) { /* ZeRO-2: a whole gradient (not left unreduced) counted once, then the step's sums reduce-scattered */
      for (int p = 0; p < galv_pipe_nparams && zr; p++)
        if (trains[p] && !galv_pipe_zero_partial[p]) D->fill(acc[p], 0, GSB((size_t)galv_pipe_params[p].nbytes));
      galv_queue_sync(q);
      uint64_t before = galv_comm_counters().reduce_scatter;
      galv_reduce_scatter(zc, zacc, zsum, zn, g16 ? g16 : GALV_F32, GALV_RED_SUM, q);
      galv_queue_sync(q);
      zrs += galv_comm_counters().reduce_scatter - before;
    } else if (gc) { /* the step's sums of the unreduced gradients all-reduced in place, one collective per run of
                      * consecutive such parameters (the slots' padding between them included; a whole gradient, the same
                      * on every rank already, is left out) */
      galv_queue_sync(q);
      uint64_t before = galv_comm_counters().all_reduce;
      for (int p = 0; p < galv_pipe_nparams;) {
        if (!trains[p] || !galv_pipe_zero_partial[p] || accw[p] || shared_split(p)) {
          p++;
          continue;
        }
        int e = p;
        while (e + 1 < galv_pipe_nparams && trains[e + 1] && galv_pipe_zero_partial[e + 1] && !accw[e + 1] && !shared_split(e + 1)) e++;
        size_t lo = (size_t)galv_pipe_params[p].offset, hi = (size_t)(galv_pipe_params[e].offset + galv_pipe_params[e].nbytes);
        galv_all_reduce(gc, gacc + GSB(lo), gacc + GSB(lo), (hi - lo) / 4, g16 ? g16 : GALV_F32, GALV_RED_SUM, q);
        p = e + 1;
      }
      galv_queue_sync(q);
      gar += galv_comm_counters().all_reduce - before;
    }
    /* loss scaling: an inf / NaN in any rank's gradient sums skips the step everywhere (one max over the world);
     * clipping: the global norm from every rank's counted squares (one sum over the world) */
    float bad = 0;
    double sq = 0;
    if (z2) { /* ZeRO-2: this rank's chunk of the reduced sums */
      if (lsm) bad = chunk_bad(zsum, zn);
      if (zcnt) sq = chunk_sq(zsum, zn, (size_t)zr * zn, trains, zcnt);
    } else if (lsm || galv_pipe_clip > 0) grad_scan(trains, acc, galv_pipe_clip > 0, &bad, &sq);
    if (lsm) world_scalar(world, q, &bad, GALV_F32, GALV_RED_MAX);
    const int skip = lsm && bad != 0;
    if (!skip) { /* one optimizer update of this stage's parameters (torch formulas, f32: galv_pipe_opt_elem) */
      step_t += 1.0f;
      galv_pipe_opt op = {.adamw = adamw, .one = B == 1, .lr = (float)lr, .wd = (float)wd, .b1 = (float)b1,
                          .omb1 = (float)(1 - b1), .b2 = (float)b2, .omb2 = (float)(1 - b2), .eps = (float)eps,
                          .mom = (float)mom, .decay = (float)(1 - lr * wd), .inv = 1.0f / (float)B};
      op.stepsz = (float)lr / (1.0f - powf((float)b1, step_t));
      op.bc2s = sqrtf(1.0f - powf((float)b2, step_t));
      /* the gradient g = sum x mul (the mean over the microbatches, unscaled), clipped: sum x (mul x coef) */
      const double mul = lsm ? 1.0 / (double)ls_scale : B > 1 ? 1.0 / B : 1.0; /* loss scaling: 1 / B in the seed */
      if (lsm) op.inv = (float)mul, op.one = 0;
      if (galv_pipe_clip > 0) { /* torch's clip_grad_norm_: x min(X / (n + 1e-6), 1) */
        world_scalar(world, q, &sq, GALV_F64, GALV_RED_SUM);
        double c = galv_pipe_clip / (sqrt(sq) * mul + 1e-6);
        if (c < 1) op.inv = (float)(mul * c), op.one = 0;
      }
      for (int p = 0; p < galv_pipe_nparams && !zc; p++)
        if (trains[p])
          D->optimizer(&op, (float *)(void *)(W + galv_pipe_params[p].offset), st1[p], st2[p],
                       grad_f32(acc[p], g32, (size_t)galv_pipe_params[p].nbytes / 4), (size_t)galv_pipe_params[p].nbytes / 4);
      if (zc) { /* ZeRO-1: the part of each parameter in this rank's chunk [lo, hi) (floats), then the chunks gathered */
        const size_t lo = (size_t)zr * zn, hi = lo + zn;
        for (int p = 0; p < galv_pipe_nparams; p++) {
          if (!trains[p]) continue;
          size_t o = (size_t)galv_pipe_params[p].offset / 4, n = (size_t)galv_pipe_params[p].nbytes / 4;
          size_t a = o > lo ? o : lo, b = o + n < hi ? o + n : hi;
          if (a >= b) continue;
          /* bf16 sums: the part widened into g32 (as the unsplit update widens the whole parameter) */
          const char *gs = z2 ? (const char *)zsum + GSB((a - lo) * 4) : (const char *)acc[p] + GSB((a - o) * 4);
          D->optimizer(&op, (float *)(void *)(W + a * 4), zs1 ? zs1 + (a - lo) : NULL, zs2 ? zs2 + (a - lo) : NULL,
                       grad_f32(gs, g32, b - a), b - a);
        }
        galv_queue_sync(q);
        uint64_t before = galv_comm_counters().all_gather;
        galv_all_gather(zc, W + lo * 4, W, zn, GALV_F32, q);
        galv_queue_sync(q);
        zsent += galv_comm_counters().all_gather - before;
      }
      if (bw && Wb != W) D->copy(Wb, W, (size_t)pspan); /* the backward entry's copy of the parameters */
      if (wg && Ww != W) D->copy(Ww, W, (size_t)pspan); /* the weight-gradient entry's */
    }
    if (lsm && skip) { /* torch's GradScaler.update: x backoff and the good-step count 0 on overflow */
      ls_skipped += 1;
      if (lsm == 2) ls_scale *= (float)galv_pipe_loss_scale[3], ls_tracker = 0;
    } else if (lsm == 2) { /* a good step: at the interval x growth (to a finite scale) and the count 0 */
      float t1 = ls_tracker + 1, big = ls_scale * (float)galv_pipe_loss_scale[2];
      if (t1 >= (float)galv_pipe_loss_scale[4]) {
        if (big * 0.0f == 0.0f) ls_scale = big;
        ls_tracker = 0;
      } else ls_tracker = t1;
    }
    if (last && lrank == 0 && lsm) { /* as the one-program training prints it */
      char scs[64] = "";
      if (lsm == 2) snprintf(scs, sizeof scs, " scale %.17g", ls_scale);
      printf("step %lld loss %.9g%s skipped %.0f%s\n", (long long)(done + step), loss / B, scs, ls_skipped,
             skip ? " (overflow: step skipped)" : "");
    } else if (last && lrank == 0) printf("step %lld loss %.9g\n", (long long)(done + step), loss / B);
  }
  double total = now_us() - tstart;
  printf("%s: %ld steps x %d microbatches (%s): %.3f ms (compute %.3f ms, predicted %.3f ms per microbatch forward+backward)\n",
         galv_progname, steps, B, IL ? "interleaved" : galv_pipe_schedule == 2 ? "zb-h1" : galv_pipe_schedule ? "1f1b" : "gpipe", total / 1e3,
         tcomp / 1e3, galv_pipe_predicted_ms[me]);
  if (wg)
    printf("%s: saved activations in flight: peak %lld bytes (%d microbatches: %lld bytes each until B, %lld until W)\n",
           galv_progname, (long long)peak, peak_mb, (long long)sbytes, (long long)wbytes);
  else
    printf("%s: saved activations in flight: peak %lld bytes (%d microbatches x %lld bytes)\n", galv_progname, (long long)peak,
           peak_mb, (long long)sbytes);
  if (IL)
    printf("%s: interleaved: send copies released once their receivers had them %ld, at the step's end %ld (%ld steps)\n",
           galv_progname, il.nrel, il.nend, steps);
  { /* memory per rank: what the runtime allocated, beside the stage cost's prediction */
    int64_t high = 0, copies = (bw && Wb != W ? (int64_t)*bw->weights_bytes : 0) + (wg && Ww != W ? (int64_t)*wg->weights_bytes : 0);
    char *ha = malloc(abytes);
    if (!ha) galv_fatal("out of memory");
    GALV_UNPOISON(arena, abytes);
    D->d2h(ha, arena, abytes);
    for (int64_t k = (int64_t)abytes - 1; k >= 0; k--)
      if ((unsigned char)ha[k] != FILL) {
        high = k + 1;
        break;
      }
    free(ha);
    /* the entries' collective scratch (allocated by each entry's first run, held to the end) */
    const int64_t scratch = galv_mem_kind_live(GALV_MEM_SCRATCH);
    int64_t states = (int64_t)wbytes_all + copies + m_sums + m_opt + m_buf + scratch + (int64_t)abytes;
    printf("%s: memory per rank: %lld bytes (weights %lld, entry copies %lld, gradient sums %lld, optimizer state %lld%s, "
           "buffers %lld, collective scratch %lld, arena %lld, high-water %lld) + saved activations peak %lld; predicted %lld + %d x %lld\n",
           galv_progname, (long long)states, (long long)wbytes_all, (long long)copies, (long long)m_sums, (long long)m_opt,
           z2 ? " (ZeRO-2)" : zc ? " (ZeRO-1)" : "", (long long)m_buf, (long long)scratch, (long long)abytes, (long long)high, (long long)peak,
           (long long)galv_pipe_predicted_state[me], peak_mb, (long long)galv_pipe_predicted_act[me]);
    galv_mem_arena_high(high);
    galv_mem_report(NULL); /* galv_progname names the stage and rank */
    if (IL) { /* every rank's arena written and what it saves and sends per microbatch, for its group's line below */
      /* arena, saved, the forward's and the backward's copies released when proven received, those kept to the end */
      double x[IL_NSUMS] = {(double)high, (double)sbytes, 0, 0, 0, 0};
      for (int o = 0; o < no && !last; o++) /* the forward's sends: a copy per receiving stage (il_send) */
        if (ok[o] > 0 && ok[o] < 1000000)
          for (int st = 0; st < S; st++)
            if (galv_pipe_out[ok[o] - 1].dst >> st & 1)
              x[il_frel[o * S + st] ? 2 : 4] += (double)(AB(&galv_outputs[o]) ? AB(&galv_outputs[o]) : 64);
      for (int o = 0; o < nbo; o++) /* the backward's: the gradients of the received values */
        if (okb[o] >= 1000000 && okb[o] < 2000000) x[il_grel[o] ? 3 : 5] += (double)(AB(&bout[o]) ? AB(&bout[o]) : 64);
      il_sums = malloc(sizeof *il_sums * (size_t)(IL_NSUMS * galv_pipe_first_rank[S]));
      if (!il_sums) galv_fatal("out of memory");
      world_rank_values(world, q, x, IL_NSUMS, il_sums);
    }
    /* the stage plan's peak: its states + its saved bytes at their peak (the microbatches it charges x the bytes per
     * microbatch; under ZB-H1 with what the weight-gradient entry reads from B until W: galv_pipe_predicted_saved) */
    const int64_t pred = galv_pipe_predicted_state[me] + galv_pipe_predicted_saved[me];
    printf("%s: memory peak %lld bytes (tracker), the stage plan's peak %lld (%lld + %lld saved: %d microbatches x %lld%s): %+.2f%%\n",
           galv_progname, (long long)galv_mem_high_water(), (long long)pred, (long long)galv_pipe_predicted_state[me],
           (long long)galv_pipe_predicted_saved[me], galv_pipe_predicted_inflight[me], (long long)galv_pipe_predicted_act[me],
           galv_pipe_schedule == 2 ? " until B, with W's bytes until W" : "",
           pred ? 100.0 * (double)(galv_mem_high_water() - pred) / (double)pred : 0.0);
    if (galv_pipe_schedule == 2) /* ZB-H1: the saved bytes have two sizes (until B, until W): the plan's peak of them */
      printf("%s: zb-h1: the stage plan's memory per rank %lld bytes (states %lld + saved activations peak %lld)\n", galv_progname,
             (long long)(galv_pipe_predicted_state[me] + galv_pipe_predicted_saved[me]), (long long)galv_pipe_predicted_state[me],
             (long long)galv_pipe_predicted_saved[me]);
    if (zc)
      printf("%s: ZeRO-%d over %d ranks: optimizer state %lld of %lld floats per rank; all-gather %llu bytes sent in %ld steps\n",
             galv_progname, z2 ? 2 : 1, zg, (long long)zn * ((zs1 != NULL) + (zs2 != NULL)),
             (long long)((z2 ? (int64_t)zg * (int64_t)zn : m_sums / 4) * ((zs1 != NULL) + (zs2 != NULL))), (unsigned long long)zsent, steps);
    if (gc) {
      int npart = 0, ntr = 0;
      for (int p = 0; p < galv_pipe_nparams; p++) ntr += trains[p] != 0, npart += trains[p] && galv_pipe_zero_partial[p];
      printf("%s: gradients reduced once per step over %d ranks: sums %lld bytes summed locally (%d of %d trained "
             "parameters' gradients unreduced); all-reduce %llu bytes sent in %ld steps\n", galv_progname, ogg,
             (long long)GSB((size_t)ogg * ogn * 4), npart, ntr, (unsigned long long)gar, steps);
    }
    if (z2e) {
      int npart = 0, ntr = 0;
      for (int p = 0; p < galv_pipe_nparams; p++) ntr += trains[p] != 0, npart += trains[p] && galv_pipe_zero_partial[p];
      printf("%s: ZeRO-2 over %d ranks: each microbatch's gradients reduce-scattered (%d of %d trained parameters' "
             "gradients unreduced) into this rank's chunk sums %lld bytes, %zu buckets of %zu elements staged %lld bytes; "
             "reduce-scatter %llu bytes sent in %ld steps\n", galv_progname, zg, npart, ntr, (long long)GSB(ze.nbk * ze.bs * 4),
             ze.nbk, ze.bs, (long long)GSB(((size_t)zg + 1) * ze.bs * 4), (unsigned long long)zrs, steps);
    } else if (z2) {
      int npart = 0, ntr = 0;
      for (int p = 0; p < galv_pipe_nparams; p++) ntr += trains[p] != 0, npart += trains[p] && galv_pipe_zero_partial[p];
      printf("%s: ZeRO-2 over %d ranks: gradient sums %lld bytes summed locally (%d of %d trained parameters' gradients "
             "unreduced), this rank's chunk %lld bytes; reduce-scatter %llu bytes sent in %ld steps\n", galv_progname, zg,
             (long long)GSB((size_t)zg * zn * 4), npart, ntr, (long long)GSB(zn * 4), (unsigned long long)zrs, steps);
    }
  }
  if (IL && IL_OWNER(gn - 1) == me) { /* the group's last entry: its counters are the group's (its device lrank's) */
    char dv[48] = "";
    if (nlocal > 1) snprintf(dv, sizeof dv, "; device %d of %d", lrank, nlocal);
    printf("%s: device group %d (stages", galv_progname, grp);
    for (int c = 0; c < V; c++) printf("%s%d", c ? "," : " ", c * NG + grp);
    printf("%s): saved activations in flight: peak %lld bytes (%lld chunk microbatches)\n", dv, (long long)il.dev[2], (long long)il.dev[3]);
    /* the group's memory: the tracked peak of its ranks' live buffers summed at its entries + their arenas written,
     * beside the plan's: its stages' states + the peak over the group's order of the saved bytes, the send copies
     * and the batons (galv_pipe_peak_group_mem, on what the stages save and send per microbatch) */
    int64_t fb[64], fs[64], bs[64], fk[64], bk[64], states = 0, arenas = 0;
    for (int c = 0; c < V; c++) {
      const int st = c * NG + grp, r = galv_pipe_first_rank[st] + lrank; /* the chunk's rank on this device */
      const double *x = il_sums + IL_NSUMS * r;
      states += galv_pipe_predicted_state[st], arenas += (int64_t)x[0];
      fb[c] = (int64_t)x[1], fs[c] = (int64_t)x[2], bs[c] = (int64_t)x[3], fk[c] = (int64_t)x[4], bk[c] = (int64_t)x[5];
    }
    const int64_t held = galv_pipe_group_held(NG, V, grp, B, fb, fs, bs, fk, bk, gacts); /* gacts: the group's order again */
    const int64_t got = il.dev[IL_GPEAK] + arenas, pred = states + held;
    printf("%s: device group %d (stages", galv_progname, grp);
    for (int c = 0; c < V; c++) printf("%s%d", c ? "," : " ", c * NG + grp);
    printf("%s): memory peak %lld bytes (tracker: the ranks' live buffers summed at the group's entries, peak %lld, + their "
           "arenas written %lld), the plan's peak %lld (states %lld + saved activations, send copies and batons at their "
           "peak %lld): %+.2f%%\n", dv, (long long)got, (long long)il.dev[IL_GPEAK], (long long)arenas, (long long)pred,
           (long long)states, (long long)held, pred ? 100.0 * (double)(got - pred) / (double)pred : 0.0);
  }
  free(il_sums);
#undef IL_OWNER
  if (outdir) {
    if (lrank == 0 && galv_mkdirs(outdir) != 0)
      galv_fatal("%s: cannot create the output directory: %s", outdir, strerror(errno));
    for (int p = 0; p < galv_pipe_nparams; p++) {
      galv_io g;
      char *h = malloc((size_t)galv_pipe_params[p].nbytes + 1);
      if (!h) galv_fatal("out of memory");
      D->d2h(h, W + galv_pipe_params[p].offset, (size_t)galv_pipe_params[p].nbytes);
      const void *x = D->gather(&galv_pipe_params[p], &galv_pipe_param_split[p], h, &g);
      if (lrank == 0 && (!shared_param(p) || shared_root_stage(p) == me)) { /* the stage's rank 0 writes (a shared one: the lowest holder) */
        char fn[256], path[PATH_MAX + 300], err[512];
        snprintf(fn, sizeof fn, "%s", galv_pipe_params[p].name);
        for (char *c = fn; *c; c++)
          if (*c == '/' || *c == '\\' || (unsigned char)*c < 32) *c = '_';
        snprintf(path, sizeof path, "%s/%s.npy", outdir, fn);
        if (galv_write_npy(path, &g, x, err, sizeof err)) galv_fatal("%s: %s", path, err);
      }
      free(h);
    }
  }
  if (!coll_unknown) { /* the stage programs' collectives: counted = predicted (every entry run summed) */
    static const char *const kind[4] = {"all_reduce", "all_gather", "reduce_scatter", "all_to_all"};
    uint64_t any = 0;
    for (int k = 0; k < 4; k++) any |= coll_got[k] | coll_pred[k];
    if (any)
      printf("%s: stage collectives sent by this rank in %ld steps: all_reduce %llu, all_gather %llu, reduce_scatter %llu, "
             "all_to_all %llu bytes (predicted by the entries: %llu, %llu, %llu, %llu)\n", galv_progname, steps,
             (unsigned long long)coll_got[0], (unsigned long long)coll_got[1], (unsigned long long)coll_got[2],
             (unsigned long long)coll_got[3], (unsigned long long)coll_pred[0], (unsigned long long)coll_pred[1],
             (unsigned long long)coll_pred[2], (unsigned long long)coll_pred[3]);
    for (int k = 0; k < 4; k++)
      if (coll_got[k] != coll_pred[k])
        galv_fatal("stage %d rank %d: the stage programs' %s moved %llu bytes, their entries predict %llu", me, lrank, kind[k],
                   (unsigned long long)coll_got[k], (unsigned long long)coll_pred[k]);
  }
  galv_pipe_xfer_report((long)B * steps, shared_sent + shared_check_sent + il.sent);
  int nshared = 0;
  for (int p = 0; p < galv_pipe_nparams; p++) nshared += shared_param(p) && shared_root_stage(p) == me;
  int ncopies = shared_check(world, q, W); /* after the report: these sends are not the steps' */
  if (save) {
    const pipe_ls_state ls_now = {lsm, ls_scale, ls_tracker, ls_skipped};
    float *f1 = NULL, *f2 = NULL;
    if (zc) { /* ZeRO-1: the chunks all-gathered into span-laid buffers, saved as the unsplit state */
      f1 = zero_span_views(st1, zs1, zg, zn, trains), f2 = zero_span_views(st2, zs2, zg, zn, trains);
      if (f1) galv_all_gather(zc, zs1, f1, zn, GALV_F32, q);
      if (f2) galv_all_gather(zc, zs2, f2, zn, GALV_F32, q);
      galv_queue_sync(q);
    }
    pipe_save_checkpoint(save, world, q, W, st1, st2, trains, adamw, step_t, &ls_now, done + steps);
    if (zc) zero_span_views(st1, NULL, 0, 0, trains), zero_span_views(st2, NULL, 0, 0, trains), drelease(f1), drelease(f2);
  }
  if (nshared && lrank == 0)
    printf("%s: shared parameters: %d held with later stages, %d copies compared: bit-identical; gradient sums sent by "
           "this rank: %llu bytes\n", galv_progname, nshared, ncopies, (unsigned long long)shared_sent);
  else if (shared_sent)
    printf("%s: shared parameters: gradient sums sent by this rank: %llu bytes\n", galv_progname, (unsigned long long)shared_sent);
  fflush(stdout);
  if (trace) write_trace(trace, world, q, rank, size);
  for (int i = 0; i < ni; i++) free(bat[i].data);
  for (int i = 0; i < nbi; i++)
    if (gbuf[i]) drelease(gbuf[i]);
  if (bw) free(okb), bw->comm_free();
  if (bw && Wb != W) drelease(Wb);
  if (wg && Ww != W) drelease(Ww);
  if (wg) wg->comm_free();
  for (int j = 0; j < B; j++) drelease(wst[j]);
  free(wst), free(okw), free(wsrc);
  for (int p = 0; p < galv_pipe_nparams; p++) drelease((z2 && !z2e) || gc ? NULL : acc[p]), drelease(accw[p]), drelease(st1[p]), drelease(st2[p]);
  drelease(zs1), drelease(zs2), drelease(zacc), drelease(zsum), drelease(gacc);
  if (z2e) drelease(ze.st), drelease(ze.rb), free(ze.gp), free(ze.gw), memset(&ze, 0, sizeof ze);
  free(zcnt);
  drelease(wtmp), free(accw);
  for (int j = 0; j < B; j++) drelease(stash[j]);
  drelease(g32), drelease(gblk), drelease(inbuf), drelease(arena), drelease(W);
  free(ik), free(ok), free(ng), free(ioff), free(goff), free(bat), free(nbat), free(gnb), free(gbuf), free(acc), free(st1), free(st2), free(stash), free(trains);
  free(hin), free(acts), free(evs), free(mbw), free(gacts), free(gidx), free(il.bufs), free(il_frel), free(il_grel), free(il_relmb);
  if (il.sq) galv_queue_free(il.sq);
  galv_queue_free(q);
  galv_spmd_finalize();
  D->end();
  return 0;
}

/* --help: answered by this stage alone, before the other stages are needed (under mpirun: world rank 0 only). */
static int pipe_help(int argc, char **argv) {
  int asked = 0;
  for (int i = 1; i < argc; i++) asked |= !strcmp(argv[i], "--help") || !strcmp(argv[i], "-h");
  if (!asked) return 0;
  const char *r = getenv("OMPI_COMM_WORLD_RANK");
  if (r && strcmp(r, "0")) return 1;
  printf("pipeline stage %d of %d, %d microbatches: run every stage with DIR/launch [OPTIONS] (the same options for all)\n",
         galv_pipe_stage, galv_pipe_nstages, galv_pipe_microbatches);
  if (galv_pipe_training) {
    printf("usage: launch --batches DIR [--steps N] [-o OUTDIR] [--trace FILE] [--load-checkpoint F] [--save-checkpoint F]\n"
           "              [--weights FILE] [--threads N]\n"
           "  --batches DIR   DIR/NAME.npy per data input (and the labels), the whole batch of one step\n"
           "  --steps N       training steps (default 1)\n"
           "  -o OUTDIR       write the parameters as OUTDIR/NAME.npy after the last step\n"
           "  --load-checkpoint F  parameters, optimizer state, step count (and the loss scale's state) from F\n"
           "                  (any plan's checkpoint of\n"
           "                  this model: one device, N ranks, another pipeline)\n"
           "  --save-checkpoint F  write them to F after the last step (the same format)\n"
           "  --trace FILE    a Chrome trace of the schedule; --weights FILE (default: weights.bin next to the\n"
           "                  program); --threads N: BLAS threads\n");
  } else {
    printf("usage: launch --input NAME=FILE ... [-o OUTDIR] [--trace FILE] [--weights FILE] [--threads N]\n"
           "  --input NAME=FILE  a graph input, the whole batch (dim 0: microbatches x the microbatch)\n"
           "  -o OUTDIR          write each graph output as OUTDIR/NAME.npy\n"
           "  --trace FILE       a Chrome trace of the schedule; --weights FILE (default: weights.bin next to\n"
           "                     the program); --threads N: BLAS threads\n");
    printf("graph inputs this stage reads (the microbatch's shape):\n");
    for (int i = 0; i < galv_ninputs; i++) {
      int recv = 0;
      for (int k = 0; k < galv_pipe_nin; k++) recv |= !strcmp(galv_pipe_in[k].name, galv_inputs[i].name);
      if (recv) continue;
      galv_io g = galv_spmd_global_io(&galv_inputs[i], &galv_input_split[i]);
      printf("  %s:", g.name);
      for (int d = 0; d < g.rank; d++) printf("%s%lld", d ? "x" : " ", (long long)g.dims[d]);
      printf(" %s\n", galv_dtype_name(g.dtype));
    }
  }
  return 1;
}

int galv_pipe_main(int argc, char **argv) {
  if (pipe_help(argc, argv)) return 0;
  int rank = 0, size = 1;
  if (galv_pipe_dev) D = galv_pipe_dev;
  else galv_pipe_dev = D; /* the host hooks (runtime/pipe_xfer.c goes through galv_pipe_dev) */
  galv_comm_world_init(&argc, &argv, &rank, &size);
  const int S = galv_pipe_nstages, B = galv_pipe_microbatches, me = galv_pipe_stage;
  static char pname[300];
  const char *prog0 = galv_progname;
  snprintf(pname, sizeof pname, "%s[stage %d, rank %d]", galv_progname, me, rank);
  galv_progname = pname;
  /* errors every rank finds alike (options, the rank count) print once, from world rank 0 */
  galv_fatal_rank = rank;
  galv_fatal_name = prog0;
  if (size != galv_pipe_first_rank[S])
    galv_fatal_all("the pipeline has %d ranks over %d stages, but %d were started (run it with %s)",
               galv_pipe_first_rank[S], S, size, galv_launch_hint());
  if (rank < galv_pipe_first_rank[me] || rank >= galv_pipe_first_rank[me + 1])
    galv_fatal("world rank %d runs stage %d's program, but the pipeline places stage %d on ranks %d-%d (run it with %s)",
               rank, me, me, galv_pipe_first_rank[me], galv_pipe_first_rank[me + 1] - 1, galv_launch_hint());
  galv_pipe_device_slot = rank;
  if (galv_pipe_schedule == GALV_SCHED_INTERLEAVED && galv_pipe_vstages > 1) /* the device group's place */
    galv_pipe_device_slot = (me % (S / galv_pipe_vstages)) * (galv_pipe_first_rank[me + 1] - galv_pipe_first_rank[me]) +
                            (rank - galv_pipe_first_rank[me]);
  D->begin(); /* the device (before any communicator: NCCL binds each to the current device) */
  /* the stage's sub-world: its program's mesh (SPMD over the stage's ranks); stages may differ in size */
  galv_comm *world = galv_comm_world_split(me, &lrank, &nlocal);
  galv_spmd_attach(lrank, nlocal);
  galv_fatal_rank = rank; /* galv_spmd_attach set the stage rank */
  galv_pipe_xfer_init(world, me, lrank, nlocal);
  if (nlocal > 1) snprintf(pname, sizeof pname, "%s[stage %d, rank %d, stage rank %d]", prog0, me, rank, lrank);
  galv_queue *q = galv_queue_new();
  if (galv_pipe_training) return pipe_train(argc, argv, world, q, rank, size);

  enum { MAXIN = 256 };
  const char *names[MAXIN], *files[MAXIN], *outdir = NULL, *wpath = NULL, *trace = NULL;
  int nin = 0;
  for (int i = 1; i < argc; i++) {
    const char *a = argv[i], *v = i + 1 < argc ? argv[i + 1] : NULL;
    if (!strcmp(a, "--input") && v) {
      const char *eq = strchr(v, '=');
      if (!eq || eq == v) galv_fatal_all("--input expects NAME=FILE, got '%s'", v);
      if (nin == MAXIN) galv_fatal_all("too many --input options");
      names[nin] = strndup(v, (size_t)(eq - v));
      files[nin++] = eq + 1;
      i++;
    } else if (!strcmp(a, "-o") && v) outdir = v, i++;
    else if (!strcmp(a, "--weights") && v) wpath = v, i++;
    else if (!strcmp(a, "--trace") && v) trace = v, i++;
    else if (!strcmp(a, "--threads") && v) openblas_set_num_threads(atoi(v) > 0 ? atoi(v) : 1), i++;
    else galv_fatal_all("unknown or incomplete option '%s' (usage: --input NAME=FILE ... [-o OUTDIR] [--trace FILE] "
                    "[--weights FILE] [--threads N])", a);
  }
  char wbuf[PATH_MAX];
  wpath = galv_weights_path(wpath, wbuf, sizeof wbuf); /* --weights, else next to the executable */
  size_t wlen = 0;
  const char *mapped = galv_spmd_map_weights(wpath, &wlen); /* this rank's block */

  /* graph inputs this stage reads: the global batch, B microbatches along dim 0 */
  galv_tensor *in = calloc((size_t)galv_ninputs + 1, sizeof *in);
  int *recv_of = calloc((size_t)galv_ninputs + 1, sizeof *recv_of); /* index into galv_pipe_in + 1, 0: graph input */
  if (!in || !recv_of) galv_fatal("out of memory");
  for (int k = 0; k < galv_pipe_nin; k++) {
    int i = find(galv_inputs, galv_ninputs, galv_pipe_in[k].name);
    if (i < 0) galv_fatal("pipeline table: no program input '%s'", galv_pipe_in[k].name);
    recv_of[i] = k + 1;
    check_whole(&galv_input_split[i], galv_inputs[i].name);
  }
  int64_t dmax = 0;
  for (int i = 0; i < galv_ninputs; i++) {
    if (recv_of[i]) continue;
    const galv_io *d = &galv_inputs[i];
    if (d->nbytes > dmax) dmax = d->nbytes;
    int j = 0;
    while (j < nin && strcmp(names[j], d->name)) j++;
    if (j == nin) galv_fatal("input '%s' not given (use --input %s=FILE.npy or FILE.pb)", d->name, d->name);
    char err[512];
    if (galv_read_tensor(files[j], &in[i], err, sizeof err)) galv_fatal("%s: input '%s': %s", files[j], d->name, err);
    if (in[i].dtype != d->dtype)
      galv_fatal("%s: input '%s' has dtype %s, the program expects %s", files[j], d->name, galv_dtype_name(in[i].dtype),
                 galv_dtype_name(d->dtype));
    const galv_io gd = galv_spmd_global_io(d, &galv_input_split[i]); /* the file holds the global tensor */
    int same = in[i].rank == gd.rank && gd.rank > 0;
    for (int k = 0; same && k < gd.rank; k++) same = in[i].dims[k] == gd.dims[k] * (k ? 1 : B);
    if (!same || (int64_t)in[i].nbytes != gd.nbytes * B)
      galv_fatal("%s: input '%s' does not have the program's shape with a batch (dim 0) of %d microbatches x %lld",
                 files[j], d->name, B, gd.rank ? (long long)gd.dims[0] : 0LL);
  }
  /* graph outputs this stage computes, gathered over the microbatches */
  int *send_of = calloc((size_t)galv_noutputs + 1, sizeof *send_of);
  char **gout = calloc((size_t)galv_noutputs + 1, sizeof *gout);
  if (!send_of || !gout) galv_fatal("out of memory");
  for (int k = 0; k < galv_pipe_nout; k++) {
    int o = find(galv_outputs, galv_noutputs, galv_pipe_out[k].name);
    if (o < 0) galv_fatal("pipeline table: no program output '%s'", galv_pipe_out[k].name);
    send_of[o] = k + 1;
    check_whole(&galv_output_split[o], galv_outputs[o].name);
  }
  int64_t omax = 0;
  for (int o = 0; o < galv_noutputs; o++)
    if (!send_of[o]) {
      if (!(gout[o] = malloc((size_t)galv_spmd_global_io(&galv_outputs[o], &galv_output_split[o]).nbytes * (size_t)B + 1)))
        galv_fatal("out of memory");
      if (galv_outputs[o].nbytes > omax) omax = galv_outputs[o].nbytes;
    }
  char *hin = malloc((size_t)dmax + (size_t)dmax / 2 + 128), *hout = malloc(2 * (size_t)omax + 64); /* host sides of a data slice,
                                                                                                       * an output (16-bit: + the narrow / wide copy) */
  if (!hin || !hout) galv_fatal("out of memory");

  /* the weights (the mapped file itself on the host), the arena */
  const char *weights = D != &cpu_dev ? upload(mapped, (size_t)galv_weights_bytes, GALV_MEM_WEIGHTS) : mapped;
  if (weights == mapped) galv_mem_note(mapped, galv_weights_bytes, GALV_MEM_WEIGHTS);
  size_t abytes = (size_t)(galv_arena_bytes ? galv_arena_bytes : 64);
  char *arena = dalloc(abytes, GALV_MEM_ARENA);
  D->fill(arena, FILL, abytes);

  double tstart = now_us(), tcomp = 0;
  for (int mb = 0; mb < B; mb++) {
    double t0 = now_us();
    for (int i = 0; i < galv_ninputs; i++) GALV_UNPOISON(arena + galv_inputs[i].offset, AB(&galv_inputs[i]));
    if (galv_pipe_nin) {
      galv_group_start();
      for (int i = 0; i < galv_ninputs; i++)
        if (recv_of[i]) {
          const galv_pipe_value *v = &galv_pipe_in[recv_of[i] - 1];
          galv_pipe_xfer_recv(galv_pipe_xfer_find(v->name, 0, v->peer, me), arena + galv_inputs[i].offset, q);
        }
      galv_group_end();
      galv_pipe_xfer_complete(q);
      ev_add(EV_RECV, mb, t0, now_us());
    }
    for (int i = 0; i < galv_ninputs; i++)
      if (!recv_of[i]) { /* this rank's block of the microbatch's slice */
        galv_spmd_block(&galv_inputs[i], &galv_input_split[i], hin,
                        (char *)in[i].data + (size_t)mb * (size_t)galv_spmd_global_io(&galv_inputs[i], &galv_input_split[i]).nbytes);
        io_h2d(&galv_inputs[i], arena + galv_inputs[i].offset, hin, hin + (dmax + 63) / 64 * 64);
      }
    double t1 = now_us();
    galv_rt_mb = mb;
    D->run(arena, weights);
    double t2 = now_us();
    tcomp += t2 - t1;
    for (int o = 0; o < galv_noutputs; o++)
      if (!galv_outputs[o].in_weights) GALV_UNPOISON(arena + galv_outputs[o].offset, AB(&galv_outputs[o]));
    ev_add(EV_FWD, mb, t1, t2);
    if (galv_pipe_nout) {
      galv_group_start();
      for (int o = 0; o < galv_noutputs; o++)
        if (send_of[o]) {
          const galv_pipe_value *v = &galv_pipe_out[send_of[o] - 1];
          const char *p = galv_outputs[o].in_weights ? weights + galv_outputs[o].offset : arena + galv_outputs[o].offset;
          for (int st = 0; st < S; st++)
            if (v->dst >> st & 1) galv_pipe_xfer_send(galv_pipe_xfer_find(v->name, 0, me, st), p, q);
        }
      galv_group_end();
      galv_pipe_xfer_complete(q);
      ev_add(EV_SEND, mb, t2, now_us());
    }
    for (int o = 0; o < galv_noutputs; o++)
      if (!send_of[o]) { /* split outputs gathered from the stage's ranks */
        const char *p = galv_outputs[o].in_weights ? weights + galv_outputs[o].offset : arena + galv_outputs[o].offset;
        galv_io go;
        if (galv_outputs[o].storage && !galv_outputs[o].in_weights) { /* 16-bit in the arena: widened */
          char *h16 = hout + (size_t)omax + 32;
          D->d2h(h16, p, AB(&galv_outputs[o]));
          widen16(galv_outputs[o].storage, (float *)(void *)hout, h16, galv_outputs[o].nbytes / 4);
        } else
          D->d2h(hout, p, (size_t)galv_outputs[o].nbytes);
        const void *gp = D->gather(&galv_outputs[o], &galv_output_split[o], hout, &go);
        memcpy(gout[o] + (size_t)mb * (size_t)go.nbytes, gp, (size_t)go.nbytes);
      }
  }
  double total = now_us() - tstart;
  int64_t high = 0;
  GALV_UNPOISON(arena, abytes);
  char *ha = malloc(abytes); /* the arena's bytes: the highest one the runs wrote */
  if (!ha) galv_fatal("out of memory");
  D->d2h(ha, arena, abytes);
  for (int64_t k = (int64_t)galv_arena_bytes - 1; k >= 0; k--)
    if ((unsigned char)ha[k] != FILL) {
      high = k + 1;
      break;
    }
  free(ha);
  printf("%s: %d microbatches: %.3f ms (compute %.3f ms, predicted %.3f ms per microbatch)\n", galv_progname, B,
         total / 1e3, tcomp / 1e3, galv_pipe_predicted_ms[me]);
  printf("%s: arena %lld bytes, high-water %lld bytes (measured)\n", galv_progname, (long long)galv_arena_bytes,
         (long long)high);
  galv_mem_arena_high(high);
  galv_mem_report(NULL);
  for (int o = 0; o < galv_noutputs; o++) {
    if (send_of[o]) continue;
    galv_io g = galv_spmd_global_io(&galv_outputs[o], &galv_output_split[o]);
    g.dims[0] *= B;
    g.nbytes *= B;
    printf("%s: output '%s' %s\n", galv_progname, g.name, galv_dtype_name(g.dtype));
    if (!outdir || lrank != 0) continue; /* the stage's rank 0 writes */
    if (galv_mkdirs(outdir) != 0)
      galv_fatal("%s: cannot create the output directory: %s", outdir, strerror(errno));
    char fn[256], path[PATH_MAX + 300], err[512];
    snprintf(fn, sizeof fn, "%s", g.name);
    for (char *c = fn; *c; c++)
      if (*c == '/' || *c == '\\' || (unsigned char)*c < 32) *c = '_';
    snprintf(path, sizeof path, "%s/%s.npy", outdir, fn);
    if (galv_write_npy(path, &g, gout[o], err, sizeof err)) galv_fatal("%s: %s", path, err);
  }
  galv_pipe_xfer_report(B, 0);
  fflush(stdout);
  if (trace) write_trace(trace, world, q, rank, size);
  for (int i = 0; i < galv_ninputs; i++) free(in[i].data);
  for (int o = 0; o < galv_noutputs; o++) free(gout[o]);
  for (int j = 0; j < nin; j++) free((char *)names[j]);
  if (D != &cpu_dev) drelease((char *)weights);
  else galv_mem_forget(weights);
  drelease(arena);
  free(in), free(recv_of), free(send_of), free(gout), free(hin), free(hout), free(evs);
  galv_queue_free(q);
  galv_spmd_finalize();
  D->end();
  return 0;
}
#else
typedef int galv_pipe_unused; /* ISO C: a translation unit is not empty */
#endif
