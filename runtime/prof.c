/* prof.c — `program --profile`: the time of every kernel call of the timed
 * runs, summed per kernel kind (dot, fused, softmax, ...) and per call site,
 * printed after the timing line; `--profile-out FILE` writes the per call
 * site times as JSON (galv_prof_write: the kernel profile that
 * bench/layer_profile.py turns into a galvc --profile file). program.c marks each call with GALV_PROF(k)
 * (k = its index in galv_kernels[]) and the end of the run with
 * GALV_PROF(-1); a mark charges the time since the previous mark to the
 * previous kernel. Off (one predictable branch per call) unless --profile.
 * A call site timed elsewhere is charged with galv_prof_charge (the CUDA
 * training step's --profile-out: its CUDA events, runtime/cuda/train_cuda.cu),
 * and galv_prof_write writes it the same. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "galv_file.h"
#include "galv_rt.h"

int galv_prof_on;
static double *acc; /* ms per kernel call site, summed over runs */
static int cur = -1;
static double last;

static double now_ms(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return ts.tv_sec * 1e3 + ts.tv_nsec * 1e-6;
}

static void trace_tick(int k, double t);

void galv_prof_tick(int k) {
  double t = now_ms();
  if (!acc && !(acc = calloc((size_t)galv_nkernels + 1, sizeof *acc))) galv_fatal("out of memory");
  if (cur >= 0 && cur < galv_nkernels) acc[cur] += t - last;
  if (galv_trace_on) trace_tick(k, t);
  cur = k;
  last = k >= 0 ? now_ms() : t;
}

void galv_prof_charge(int k, double ms) {
  if (!acc && !(acc = calloc((size_t)galv_nkernels + 1, sizeof *acc))) galv_fatal("out of memory");
  if (k >= 0 && k < galv_nkernels) acc[k] += ms;
}

static int by_time_desc(const void *a, const void *b) {
  double x = acc[*(const int *)a], y = acc[*(const int *)b];
  return x < y ? 1 : x > y ? -1 : *(const int *)a - *(const int *)b;
}

void galv_prof_report(long runs) {
  if (!acc || runs < 1) return;
  enum { MAXKIND = 64 };
  const char *kind[MAXKIND];
  double kt[MAXKIND] = {0}, total = 0;
  int kn[MAXKIND] = {0}, nk = 0;
  for (int i = 0; i < galv_nkernels; i++) {
    int j = 0;
    while (j < nk && strcmp(kind[j], galv_kernels[i].kind)) j++;
    if (j == nk && nk < MAXKIND) kind[nk++] = galv_kernels[i].kind;
    if (j < MAXKIND) kt[j] += acc[i], kn[j]++;
    total += acc[i];
  }
  printf("%s: profile (ms per run, mean over %ld runs; kernel time %.3f ms)\n", galv_progname, runs, total / runs);
  printf("  %-14s %6s %10s %6s\n", "kind", "calls", "ms", "%");
  for (int done = 0; done < nk; done++) { /* kinds by time, largest first */
    int b = -1;
    for (int j = 0; j < nk; j++)
      if (kn[j] >= 0 && (b < 0 || kt[j] > kt[b])) b = j;
    printf("  %-14s %6d %10.3f %6.1f\n", kind[b], kn[b], kt[b] / runs, total > 0 ? 100 * kt[b] / total : 0);
    kn[b] = -1;
  }
  int *ord = malloc(sizeof *ord * (size_t)(galv_nkernels > 0 ? galv_nkernels : 1));
  if (!ord) galv_fatal("out of memory");
  for (int i = 0; i < galv_nkernels; i++) ord[i] = i;
  qsort(ord, (size_t)galv_nkernels, sizeof *ord, by_time_desc);
  printf("  slowest calls:\n");
  for (int i = 0; i < galv_nkernels && i < 10; i++)
    printf("  %10.3f ms  #%d %s %s\n", acc[ord[i]] / runs, ord[i], galv_kernels[ord[i]].kind, galv_kernels[ord[i]].node);
  free(ord);
}

/* JSON string body of s (quotes, backslashes, control bytes escaped) */
static void json_str(FILE *f, const char *s) {
  fputc('"', f);
  for (const unsigned char *p = (const unsigned char *)s; p && *p; p++) {
    if (*p == '"' || *p == '\\') fprintf(f, "\\%c", *p);
    else if (*p < 0x20) fprintf(f, "\\u%04x", *p);
    else fputc(*p, f);
  }
  fputc('"', f);
}

int galv_prof_write(const char *path, long runs, const char *what, char *err, size_t errlen) {
  galv_wfile w;
  FILE *f = galv_wfile_open(&w, path, 0, err, errlen);
  if (!f) return -1;
  fprintf(f, "{\"format\": \"galvc-kernel-profile\", \"version\": 1, \"program\": ");
  json_str(f, galv_progname);
  fprintf(f, ", \"run\": \"%s\", \"runs\": %ld, \"kernels\": [\n", what, runs);
  for (int i = 0; i < galv_nkernels; i++) {
    fprintf(f, "  {\"kind\": ");
    json_str(f, galv_kernels[i].kind);
    fprintf(f, ", \"node\": ");
    json_str(f, galv_kernels[i].node);
    fprintf(f, ", \"ms\": %.6f}%s\n", acc && runs > 0 ? acc[i] / runs : 0.0, i + 1 < galv_nkernels ? "," : "");
  }
  fprintf(f, "]}\n");
  return galv_wfile_commit(&w, err, errlen);
}

/* ---------------------------------------------------------------- --trace
 *
 * The run as two streams (galv_rt.h): the compute stream's kernel calls
 * (from one GALV_PROF mark to the next, cut short by a communication post or
 * a wait) and waits for communication, and the communication stream's
 * collectives from their post to their completion as the program sees it
 * (the wait that returned it; MPI progresses a non-blocking call inside MPI
 * calls, so on the CPU target the transfer may happen inside that wait).
 * The communicator (comm_mpi.c) reports posts, waits and completions through
 * galv_trace_post / _wait_begin / _wait_end / _done. The CUDA training step
 * (runtime/cuda/train_cuda.cu) times its streams by CUDA events instead and
 * hands each event over with galv_trace_event; galv_trace_write is the same. */
int galv_trace_on;
typedef struct {
  int k;            /* kernel call site (galv_kernels[]), -1: none */
  int stream;       /* 0 compute, 1 communication */
  int step;
  const char *name; /* communication: the call; compute: NULL (the kernel's kind), or "wait" */
  long long bytes;
  double t0, t1;
} tev;
static tev *tv;
static int ntv, captv, open_k = -1, comm_site = -1, tstep;
static double open_t;

static int trace_push(int k, int stream, const char *name, long long bytes, double t0, double t1) {
  if (ntv == captv) {
    int cap = captv ? 2 * captv : 4096;
    if (cap > 8000000) return -1; /* enough: later events are dropped */
    tev *n = realloc(tv, sizeof *n * (size_t)cap);
    if (!n) galv_fatal("out of memory");
    tv = n, captv = cap;
  }
  tv[ntv] = (tev){k, stream, tstep, name, bytes, t0, t1};
  return ntv++;
}

static void trace_close(double t) {
  if (open_k >= 0) trace_push(open_k, 0, NULL, 0, open_t, t);
  open_k = -1;
}

static int is_collective(const char *kind) {
  return !strcmp(kind, "all_reduce") || !strcmp(kind, "all_gather") || !strcmp(kind, "reduce_scatter") ||
         !strcmp(kind, "all_to_all");
}

static void trace_tick(int k, double t) {
  trace_close(t);
  if (k >= 0 && k < galv_nkernels && is_collective(galv_kernels[k].kind)) comm_site = k; /* its post follows */
  else if (k >= 0) open_k = k, open_t = t;
}

void galv_trace_step(int step) { tstep = step; }

int galv_trace_post(const char *what, long long bytes) {
  if (!galv_trace_on) return -1;
  double t = now_ms();
  trace_close(t);
  int id = trace_push(comm_site, 1, what, bytes, t, -1);
  comm_site = -1;
  return id;
}

double galv_trace_wait_begin(void) {
  double t = now_ms();
  if (galv_trace_on) trace_close(t);
  return t;
}

void galv_trace_wait_end(double t0) {
  if (galv_trace_on) trace_push(-1, 0, "wait", 0, t0, now_ms());
}

void galv_trace_event(int k, int stream, const char *name, long long bytes, double t0, double t1) {
  trace_push(k, stream, name, bytes, t0, t1);
}

void galv_trace_done(int id) {
  if (galv_trace_on && id >= 0 && id < ntv) tv[id].t1 = now_ms();
}

int galv_trace_write(const char *path, int rank, char *err, size_t errlen) {
  trace_close(now_ms());
  galv_wfile w;
  FILE *f = galv_wfile_open(&w, path, 0, err, errlen);
  if (!f) return -1;
  double t0 = ntv ? tv[0].t0 : 0;
  fprintf(f, "{\"traceEvents\": [\n");
  fprintf(f, "  {\"name\": \"process_name\", \"ph\": \"M\", \"pid\": %d, \"tid\": 0, \"args\": {\"name\": \"rank %d\"}},\n", rank, rank);
  fprintf(f, "  {\"name\": \"thread_name\", \"ph\": \"M\", \"pid\": %d, \"tid\": 0, \"args\": {\"name\": \"compute\"}},\n", rank);
  fprintf(f, "  {\"name\": \"thread_name\", \"ph\": \"M\", \"pid\": %d, \"tid\": 1, \"args\": {\"name\": \"communication\"}}", rank);
  for (int i = 0; i < ntv; i++) {
    const tev *e = &tv[i];
    const char *name = e->name ? e->name : e->k >= 0 && e->k < galv_nkernels ? galv_kernels[e->k].kind : "?";
    double end = e->t1 >= e->t0 ? e->t1 : e->t0;
    fprintf(f, ",\n  {\"name\": ");
    json_str(f, name);
    fprintf(f, ", \"cat\": \"%s\", \"ph\": \"X\", \"pid\": %d, \"tid\": %d, \"ts\": %.3f, \"dur\": %.3f, \"args\": {\"step\": %d",
            e->stream ? "communication" : e->name ? "wait" : "compute", rank, e->stream, (e->t0 - t0) * 1e3, (end - e->t0) * 1e3,
            e->step);
    if (e->k >= 0 && e->k < galv_nkernels) {
      fprintf(f, ", \"node\": ");
      json_str(f, galv_kernels[e->k].node);
    }
    if (e->stream) fprintf(f, ", \"bytes\": %lld, \"completed\": %s", e->bytes, e->t1 >= 0 ? "true" : "false");
    fprintf(f, "}}");
  }
  fprintf(f, "\n]}\n");
  return galv_wfile_commit(&w, err, errlen);
}
