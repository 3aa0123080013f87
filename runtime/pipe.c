/* pipe.c — the main of pipeline-stage programs (galv_pipe.h); compiled only
 * with -DGALV_PIPE_STAGE (the stage Makefiles galvc writes).
 *
 *   mpirun -np 1 stage0/program ARGS : -np 1 stage1/program ARGS ...   (out/launch)
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
 * both sides (MPI keeps order between a pair). Printed per stage: time,
 * arena bytes and measured high-water (the highest byte the runs wrote).
 * --trace FILE: a Chrome trace (Perfetto JSON), pid = stage, tid = rank,
 * one "X" event per forward microbatch, recv and send, gathered on rank 0. */
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
#include "galv_rt.h"

void openblas_set_num_threads(int n);

#define FILL 0xA5

static double now_us(void) {
  struct timespec ts;
  clock_gettime(CLOCK_REALTIME, &ts);
  return (double)ts.tv_sec * 1e6 + (double)ts.tv_nsec * 1e-3;
}

enum { EV_FWD, EV_RECV, EV_SEND, EV_BWD };
static const char *const ev_name[] = {"forward", "recv", "send", "backward"};
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

static void write_trace(const char *path, galv_comm *world, galv_queue *q, int rank, int size) {
  if (rank != 0) {
    int64_t n = nev;
    galv_send(world, 0, &n, 1, GALV_I64, q);
    galv_queue_sync(q);
    if (n) galv_send(world, 0, evs, (size_t)n * 4, GALV_F64, q);
    galv_queue_sync(q);
    return;
  }
  FILE *f = fopen(path, "w");
  if (!f) galv_fatal("%s: cannot write the trace: %s", path, strerror(errno));
  double t0 = -1;
  event *all = NULL;
  int *owner = NULL, nall = 0;
  for (int r = 0; r < size; r++) {
    int64_t n = nev;
    event *e = evs;
    if (r) {
      galv_recv(world, r, &n, 1, GALV_I64, q);
      galv_queue_sync(q);
      e = malloc(sizeof *e * (size_t)(n ? n : 1));
      if (!e) galv_fatal("out of memory");
      if (n) galv_recv(world, r, e, (size_t)n * 4, GALV_F64, q);
      galv_queue_sync(q);
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
  if (fclose(f)) galv_fatal("%s: write failed", path);
  free(all);
  free(owner);
}

int galv_pipe_main(int argc, char **argv) {
  int rank = 0, size = 1;
  galv_comm_world_init(&argc, &argv, &rank, &size);
  const int S = galv_pipe_nstages, B = galv_pipe_microbatches, me = galv_pipe_stage;
  static char pname[300];
  snprintf(pname, sizeof pname, "%s[stage %d, rank %d]", galv_progname, me, rank);
  galv_progname = pname;
  if (size != galv_pipe_first_rank[S])
    galv_fatal("the pipeline has %d ranks over %d stages, but %d were started (run it with out/launch)",
               galv_pipe_first_rank[S], S, size);
  if (rank < galv_pipe_first_rank[me] || rank >= galv_pipe_first_rank[me + 1])
    galv_fatal("world rank %d runs stage %d's program, but the pipeline places stage %d on ranks %d-%d (run it with out/launch)",
               rank, me, me, galv_pipe_first_rank[me], galv_pipe_first_rank[me + 1] - 1);
  if (galv_pipe_first_rank[me + 1] - galv_pipe_first_rank[me] != 1)
    galv_fatal("stages of more than one rank are not supported by this runtime yet");
  int64_t wshape = size;
  galv_comm *world = galv_comm_group(&wshape, 1, 1u);
  galv_queue *q = galv_queue_new();

  enum { MAXIN = 256 };
  const char *names[MAXIN], *files[MAXIN], *outdir = NULL, *wpath = NULL, *trace = NULL;
  int nin = 0;
  for (int i = 1; i < argc; i++) {
    const char *a = argv[i], *v = i + 1 < argc ? argv[i + 1] : NULL;
    if (!strcmp(a, "--input") && v) {
      const char *eq = strchr(v, '=');
      if (!eq || eq == v) galv_fatal("--input expects NAME=FILE, got '%s'", v);
      if (nin == MAXIN) galv_fatal("too many --input options");
      names[nin] = strndup(v, (size_t)(eq - v));
      files[nin++] = eq + 1;
      i++;
    } else if (!strcmp(a, "-o") && v) outdir = v, i++;
    else if (!strcmp(a, "--weights") && v) wpath = v, i++;
    else if (!strcmp(a, "--trace") && v) trace = v, i++;
    else if (!strcmp(a, "--threads") && v) openblas_set_num_threads(atoi(v) > 0 ? atoi(v) : 1), i++;
    else galv_fatal("unknown or incomplete option '%s' (usage: --input NAME=FILE ... [-o OUTDIR] [--trace FILE] "
                    "[--weights FILE] [--threads N])", a);
  }
  char wbuf[PATH_MAX];
  if (!wpath) {
    ssize_t n = readlink("/proc/self/exe", wbuf, sizeof wbuf - 16);
    if (n <= 0) galv_fatal("cannot locate the program's directory; pass --weights FILE");
    wbuf[n] = 0;
    char *s = strrchr(wbuf, '/');
    strcpy(s ? s + 1 : wbuf, "weights.bin");
    wpath = wbuf;
  }
  size_t wlen = 0;
  const char *weights = galv_map_weights(wpath, galv_weights_bytes, &wlen);

  /* graph inputs this stage reads: the global batch, B microbatches along dim 0 */
  galv_tensor *in = calloc((size_t)galv_ninputs + 1, sizeof *in);
  int *recv_of = calloc((size_t)galv_ninputs + 1, sizeof *recv_of); /* index into galv_pipe_in + 1, 0: graph input */
  if (!in || !recv_of) galv_fatal("out of memory");
  for (int k = 0; k < galv_pipe_nin; k++) {
    int i = find(galv_inputs, galv_ninputs, galv_pipe_in[k].name);
    if (i < 0) galv_fatal("pipeline table: no program input '%s'", galv_pipe_in[k].name);
    recv_of[i] = k + 1;
  }
  for (int i = 0; i < galv_ninputs; i++) {
    if (recv_of[i]) continue;
    const galv_io *d = &galv_inputs[i];
    int j = 0;
    while (j < nin && strcmp(names[j], d->name)) j++;
    if (j == nin) galv_fatal("input '%s' not given (use --input %s=FILE.npy or FILE.pb)", d->name, d->name);
    char err[512];
    if (galv_read_tensor(files[j], &in[i], err, sizeof err)) galv_fatal("%s: input '%s': %s", files[j], d->name, err);
    if (in[i].dtype != d->dtype)
      galv_fatal("%s: input '%s' has dtype %s, the program expects %s", files[j], d->name, galv_dtype_name(in[i].dtype),
                 galv_dtype_name(d->dtype));
    int same = in[i].rank == d->rank && d->rank > 0;
    for (int k = 0; same && k < d->rank; k++) same = in[i].dims[k] == d->dims[k] * (k ? 1 : B);
    if (!same || (int64_t)in[i].nbytes != d->nbytes * B)
      galv_fatal("%s: input '%s' does not have the program's shape with a batch (dim 0) of %d microbatches x %lld",
                 files[j], d->name, B, d->rank ? (long long)d->dims[0] : 0LL);
  }
  /* graph outputs this stage computes, gathered over the microbatches */
  int *send_of = calloc((size_t)galv_noutputs + 1, sizeof *send_of);
  char **gout = calloc((size_t)galv_noutputs + 1, sizeof *gout);
  if (!send_of || !gout) galv_fatal("out of memory");
  for (int k = 0; k < galv_pipe_nout; k++) {
    int o = find(galv_outputs, galv_noutputs, galv_pipe_out[k].name);
    if (o < 0) galv_fatal("pipeline table: no program output '%s'", galv_pipe_out[k].name);
    send_of[o] = k + 1;
  }
  for (int o = 0; o < galv_noutputs; o++)
    if (!send_of[o] && !(gout[o] = malloc((size_t)galv_outputs[o].nbytes * (size_t)B + 1))) galv_fatal("out of memory");

  size_t abytes = (size_t)(galv_arena_bytes ? galv_arena_bytes : 64);
  char *arena = aligned_alloc(64, (abytes + 63) / 64 * 64);
  if (!arena) galv_fatal("cannot allocate the %lld-byte arena", (long long)galv_arena_bytes);
  memset(arena, FILL, abytes);

  double tstart = now_us(), tcomp = 0;
  for (int mb = 0; mb < B; mb++) {
    double t0 = now_us();
    for (int i = 0; i < galv_ninputs; i++) GALV_UNPOISON(arena + galv_inputs[i].offset, galv_inputs[i].nbytes);
    if (galv_pipe_nin) {
      galv_group_start();
      for (int i = 0; i < galv_ninputs; i++)
        if (recv_of[i]) {
          const galv_pipe_value *v = &galv_pipe_in[recv_of[i] - 1];
          galv_recv(world, galv_pipe_first_rank[v->peer], arena + galv_inputs[i].offset, (size_t)galv_inputs[i].nbytes, GALV_U8, q);
        }
      galv_group_end();
      galv_queue_sync(q);
      ev_add(EV_RECV, mb, t0, now_us());
    }
    for (int i = 0; i < galv_ninputs; i++)
      if (!recv_of[i]) memcpy(arena + galv_inputs[i].offset, (char *)in[i].data + (size_t)mb * (size_t)galv_inputs[i].nbytes,
                              (size_t)galv_inputs[i].nbytes);
    double t1 = now_us();
    galv_program_run(arena, weights, NULL);
    double t2 = now_us();
    tcomp += t2 - t1;
    for (int o = 0; o < galv_noutputs; o++)
      if (!galv_outputs[o].in_weights) GALV_UNPOISON(arena + galv_outputs[o].offset, galv_outputs[o].nbytes);
    ev_add(EV_FWD, mb, t1, t2);
    if (galv_pipe_nout) {
      galv_group_start();
      for (int o = 0; o < galv_noutputs; o++)
        if (send_of[o]) {
          const galv_pipe_value *v = &galv_pipe_out[send_of[o] - 1];
          const char *p = galv_outputs[o].in_weights ? weights + galv_outputs[o].offset : arena + galv_outputs[o].offset;
          for (int st = 0; st < S; st++)
            if (v->dst >> st & 1) galv_send(world, galv_pipe_first_rank[st], p, (size_t)galv_outputs[o].nbytes, GALV_U8, q);
        }
      galv_group_end();
      galv_queue_sync(q);
      ev_add(EV_SEND, mb, t2, now_us());
    }
    for (int o = 0; o < galv_noutputs; o++)
      if (!send_of[o]) {
        const char *p = galv_outputs[o].in_weights ? weights + galv_outputs[o].offset : arena + galv_outputs[o].offset;
        memcpy(gout[o] + (size_t)mb * (size_t)galv_outputs[o].nbytes, p, (size_t)galv_outputs[o].nbytes);
      }
  }
  double total = now_us() - tstart;
  int64_t high = 0;
  GALV_UNPOISON(arena, abytes);
  for (int64_t k = (int64_t)galv_arena_bytes - 1; k >= 0; k--)
    if ((unsigned char)arena[k] != FILL) {
      high = k + 1;
      break;
    }
  printf("%s: %d microbatches: %.3f ms (compute %.3f ms, predicted %.3f ms per microbatch)\n", galv_progname, B,
         total / 1e3, tcomp / 1e3, galv_pipe_predicted_ms[me]);
  printf("%s: arena %lld bytes, high-water %lld bytes (measured)\n", galv_progname, (long long)galv_arena_bytes,
         (long long)high);
  for (int o = 0; o < galv_noutputs; o++) {
    if (send_of[o]) continue;
    galv_io g = galv_outputs[o];
    g.dims[0] *= B;
    g.nbytes *= B;
    printf("%s: output '%s' %s\n", galv_progname, g.name, galv_dtype_name(g.dtype));
    if (!outdir) continue;
    struct stat st;
    if (stat(outdir, &st) != 0 && mkdir(outdir, 0777) != 0 && errno != EEXIST)
      galv_fatal("%s: cannot create the output directory: %s", outdir, strerror(errno));
    char fn[256], path[PATH_MAX + 300], err[512];
    snprintf(fn, sizeof fn, "%s", g.name);
    for (char *c = fn; *c; c++)
      if (*c == '/' || *c == '\\' || (unsigned char)*c < 32) *c = '_';
    snprintf(path, sizeof path, "%s/%s.npy", outdir, fn);
    if (galv_write_npy(path, &g, gout[o], err, sizeof err)) galv_fatal("%s: %s", path, err);
  }
  fflush(stdout);
  if (trace) write_trace(trace, world, q, rank, size);
  for (int i = 0; i < galv_ninputs; i++) free(in[i].data);
  for (int o = 0; o < galv_noutputs; o++) free(gout[o]);
  for (int j = 0; j < nin; j++) free((char *)names[j]);
  free(in), free(recv_of), free(send_of), free(gout), free(arena), free(evs);
  galv_queue_free(q);
  galv_comm_world_finalize();
  return 0;
}
#else
typedef int galv_pipe_unused; /* ISO C: a translation unit is not empty */
#endif
