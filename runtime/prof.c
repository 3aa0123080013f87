/* prof.c — `program --profile`: the time of every kernel call of the timed
 * runs, summed per kernel kind (dot, fused, softmax, ...) and per call site,
 * printed after the timing line; `--profile-out FILE` writes the per call
 * site times as JSON (galv_prof_write: the kernel profile that
 * bench/layer_profile.py turns into a galvc --profile file). program.c marks each call with GALV_PROF(k)
 * (k = its index in galv_kernels[]) and the end of the run with
 * GALV_PROF(-1); a mark charges the time since the previous mark to the
 * previous kernel. Off (one predictable branch per call) unless --profile. */
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

void galv_prof_tick(int k) {
  double t = now_ms();
  if (!acc && !(acc = calloc((size_t)galv_nkernels + 1, sizeof *acc))) galv_fatal("out of memory");
  if (cur >= 0 && cur < galv_nkernels) acc[cur] += t - last;
  cur = k;
  last = k >= 0 ? now_ms() : t;
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
