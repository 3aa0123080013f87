/* main.c — the entry point of generated CPU programs:
 *
 *   ./program --input NAME=FILE ... [-o OUTDIR] [--iters N] [--warmup N]
 *             [--threads N] [--weights FILE] [--profile] [--profile-out FILE]
 *
 * Maps weights.bin (default: next to the executable), reads and checks every
 * input against the generated table (name, dtype, shape), runs the program
 * warmup + iters times, prints per-iteration timing and the arena size with
 * its measured high-water mark (--profile: the time per kernel kind and the
 * slowest calls, runtime/prof.c), and writes each output as OUTDIR/NAME.npy.
 * Every error is one line on stderr and exit status 1; it never crashes on
 * bad input. It knows nothing of the model beyond program.c's tables. */
#include <errno.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "galv_rt.h"
#include "galv_spmd.h"
#ifdef GALV_PIPE_STAGE
#include "galv_pipe.h"
#endif

void openblas_set_num_threads(int n);
char *openblas_get_corename(void);
int openblas_get_num_threads(void);

/* The arena is filled with this byte before the first run; the high-water
 * mark is the highest byte that no longer holds it afterwards. */
#define FILL 0xA5

static double now_ms(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return ts.tv_sec * 1e3 + ts.tv_nsec * 1e-6;
}

static long pos_int(const char *opt, const char *s, long min) {
  char *end;
  errno = 0;
  long v = strtol(s, &end, 10);
  if (errno || *end || v < min) galv_fatal_all("%s expects an integer >= %ld, got '%s'", opt, min, s);
  return v;
}

static void usage(FILE *f) {
  fprintf(f, "usage: %s --input NAME=FILE ... [-o OUTDIR] [--iters N] [--warmup N] [--threads N] [--weights FILE]\n"
             "       [--profile] [--profile-out FILE]\n"
             "  --input NAME=FILE  graph input NAME from FILE (.npy, or .pb = ONNX TensorProto); every input needed\n"
             "  -o OUTDIR          write each graph output as OUTDIR/NAME.npy\n"
             "  --iters N          timed runs (default 1); --warmup N untimed runs first (default 0)\n"
             "  --threads N        BLAS threads (default: OpenBLAS's own choice); other kernels use one\n"
             "  --weights FILE     weights file (default: weights.bin next to the program)\n"
             "  --comm-stats       print the bytes this rank sent per collective kind\n"
             "  --profile          time every kernel call of the timed runs; print the time per kernel kind\n"
             "  --profile-out FILE --profile, and write every call site's time as JSON to FILE (bench/layer_profile.py)\n"
             "inputs:\n", galv_progname);
  for (int i = 0; i < galv_ninputs; i++) { /* the global shape: what the file holds, on any number of ranks */
    galv_io g = galv_spmd_global_io(&galv_inputs[i], &galv_input_split[i]);
    fprintf(f, "  %s: tensor<", g.name);
    for (int d = 0; d < g.rank; d++) fprintf(f, "%lldx", (long long)g.dims[d]);
    fprintf(f, "%s>\n", galv_dtype_name(g.dtype));
  }
}

/* the bytes an input or output holds in the arena (16-bit storage: 2 per element) */
static int64_t arena_bytes_of(const galv_io *d) { return d->storage ? d->nbytes / 2 : d->nbytes; }

static void shape_str(char *b, size_t n, int rank, const int64_t *dims) {
  size_t k = 0;
  b[0] = 0;
  if (rank == 0) snprintf(b, n, "scalar");
  for (int d = 0; d < rank && k < n; d++) k += (size_t)snprintf(b + k, n - k, d ? "x%lld" : "%lld", (long long)dims[d]);
}

int main(int argc, char **argv) {
  const char *slash = strrchr(argv[0], '/');
  galv_progname = slash ? slash + 1 : argv[0];
  galv_argv0 = argv[0];
#ifdef GALV_PIPE_STAGE
  return galv_pipe_main(argc, argv); /* a pipeline stage (runtime/pipe.c, galv_pipe.h) */
#endif
  galv_spmd_init(&argc, &argv); /* ranks (runtime/spmd.c): MPI when the program is partitioned */
  if (galv_training) { /* a training step program: runtime/train.c, with this program's kernel timer */
    galv_train_prof.on = &galv_prof_on;
    galv_train_prof.write = galv_prof_write;
    galv_train_prof.trace_on = &galv_trace_on;
    galv_train_prof.trace_step = galv_trace_step;
    galv_train_prof.trace_write = galv_trace_write;
    return galv_train_main(argc, argv);
  }
  const char *outdir = NULL, *wpath = NULL;
  long iters = 1, warmup = 0, threads = 0;
  int profile = 0;
  const char *profile_out = NULL;
  enum { MAXIN = 256 };
  const char *names[MAXIN], *files[MAXIN];
  int nin = 0, comm_stats = 0;
  for (int i = 1; i < argc; i++) {
    const char *a = argv[i];
    const char *v = i + 1 < argc ? argv[i + 1] : NULL;
    if (!strcmp(a, "--help") || !strcmp(a, "-h")) {
      usage(stdout);
      return 0;
    } else if (!strcmp(a, "--input") && v) {
      const char *eq = strchr(v, '=');
      if (!eq || eq == v) galv_fatal_all("--input expects NAME=FILE, got '%s'", v);
      if (nin == MAXIN) galv_fatal_all("too many --input options");
      names[nin] = strndup(v, (size_t)(eq - v));
      files[nin++] = eq + 1;
      i++;
    } else if (!strcmp(a, "-o") && v) outdir = v, i++;
    else if (!strcmp(a, "--weights") && v) wpath = v, i++;
    else if (!strcmp(a, "--iters") && v) iters = pos_int(a, v, 1), i++;
    else if (!strcmp(a, "--warmup") && v) warmup = pos_int(a, v, 0), i++;
    else if (!strcmp(a, "--threads") && v) threads = pos_int(a, v, 1), i++;
    else if (!strcmp(a, "--comm-stats")) comm_stats = 1;
    else if (!strcmp(a, "--profile")) profile = 1;
    else if (!strcmp(a, "--profile-out") && v) profile_out = v, profile = 1, i++;
    else galv_fatal_all("unknown or incomplete option '%s' (see --help)", a);
  }
  if (threads > 0) openblas_set_num_threads((int)threads);

  char wbuf[PATH_MAX];
  wpath = galv_weights_path(wpath, wbuf, sizeof wbuf); /* --weights, else next to the executable */
  size_t wlen = 0;
  const char *weights = galv_spmd_map_weights(wpath, &wlen); /* this rank's block */
  galv_mem_note(weights, galv_weights_bytes, GALV_MEM_WEIGHTS); /* what the runs read: device data on a device target */

  /* inputs: every --input names a graph input; every graph input is given */
  galv_tensor *in = calloc((size_t)galv_ninputs + 1, sizeof *in);
  if (!in) galv_fatal("out of memory");
  for (int j = 0; j < nin; j++) {
    int i = 0;
    while (i < galv_ninputs && strcmp(galv_inputs[i].name, names[j])) i++;
    if (i == galv_ninputs) galv_fatal_all("--input %s: the program has no input named '%s' (see --help)", names[j], names[j]);
    for (int k = 0; k < j; k++)
      if (!strcmp(names[k], names[j])) galv_fatal_all("--input %s given twice", names[j]);
  }
  for (int i = 0; i < galv_ninputs; i++) {
    galv_io gd = galv_spmd_global_io(&galv_inputs[i], &galv_input_split[i]); /* the file holds the global tensor */
    const galv_io *d = &gd;
    int j = 0;
    while (j < nin && strcmp(names[j], d->name)) j++;
    if (j == nin) galv_fatal_all("input '%s' not given (use --input %s=FILE.npy or FILE.pb)", d->name, d->name);
    char err[512];
    if (galv_read_tensor(files[j], &in[i], err, sizeof err)) galv_fatal_all("%s: input '%s': %s", files[j], d->name, err);
    char a[160], b[160];
    if (in[i].dtype != d->dtype)
      galv_fatal_all("%s: input '%s' has dtype %s, the program expects %s", files[j], d->name, galv_dtype_name(in[i].dtype),
                 galv_dtype_name(d->dtype));
    int same = in[i].rank == d->rank;
    for (int k = 0; same && k < d->rank; k++) same = in[i].dims[k] == d->dims[k];
    if (!same) {
      shape_str(a, sizeof a, in[i].rank, in[i].dims);
      shape_str(b, sizeof b, d->rank, d->dims);
      galv_fatal_all("%s: input '%s' has shape %s, the program expects %s (recompile with galvc for other shapes)",
                 files[j], d->name, a, b);
    }
    if ((int64_t)in[i].nbytes != d->nbytes) galv_fatal_all("%s: input '%s': size mismatch", files[j], d->name);
  }

  /* arena: 64-byte aligned, filled for the high-water measurement */
  size_t abytes = (size_t)(galv_arena_bytes ? galv_arena_bytes : 64);
  char *arena = galv_mem_alloc((int64_t)abytes, GALV_MEM_ARENA);
  memset(arena, FILL, abytes);
  GALV_POISON(arena, abytes);

  /* 16-bit storage (--precision bf16 / fp16): an f32 input is converted into its 16-bit arena slot, an
   * f32 output widened from it (what the file holds is f32 either way) */
  int64_t maxf = 0;
  for (int i = 0; i < galv_ninputs; i++)
    if (galv_inputs[i].storage && galv_inputs[i].nbytes > maxf) maxf = galv_inputs[i].nbytes;
  for (int o = 0; o < galv_noutputs; o++)
    if (galv_outputs[o].storage && galv_outputs[o].nbytes > maxf) maxf = galv_outputs[o].nbytes;
  float *wide = maxf ? malloc((size_t)maxf) : NULL;
  if (maxf && !wide) galv_fatal("out of memory");

  double sum = 0, min = 0;
  int64_t high = -1;
  for (long it = 0; it < warmup + iters; it++) {
    for (int i = 0; i < galv_ninputs; i++) {
      const galv_io *d = &galv_inputs[i];
      GALV_UNPOISON(arena + d->offset, arena_bytes_of(d));
      if (!d->storage) {
        galv_spmd_load_input(i, arena + d->offset, in[i].data); /* this rank's block */
        continue;
      }
      galv_spmd_load_input(i, wide, in[i].data);
      galv_narrow16(d->storage, arena + d->offset, wide, d->nbytes / 4);
    }
    galv_prof_on = profile && it >= warmup;
    double t0 = now_ms();
    galv_program_run(arena, weights, NULL);
    double t = now_ms() - t0;
    if (high < 0) {
      GALV_UNPOISON(arena, abytes);
      high = 0;
      for (int64_t k = (int64_t)galv_arena_bytes - 1; k >= 0; k--)
        if ((unsigned char)arena[k] != FILL) {
          high = k + 1;
          break;
        }
      /* outputs stay readable; everything else is dead between runs */
      GALV_POISON(arena, abytes);
      for (int o = 0; o < galv_noutputs; o++)
        if (!galv_outputs[o].in_weights) GALV_UNPOISON(arena + galv_outputs[o].offset, arena_bytes_of(&galv_outputs[o]));
    }
    if (it < warmup) continue;
    sum += t;
    if (it == warmup || t < min) min = t;
  }
  galv_spmd_check_bytes(comm_stats, warmup + iters);
  printf("%s: %d kernels, %ld iterations: mean %.3f ms, min %.3f ms\n", galv_progname, galv_nkernels, iters,
         sum / (double)iters, min);
  if (profile) {
    galv_prof_report(iters);
    char err[4400];
    if (profile_out && galv_spmd_rank() == 0) {
      if (galv_prof_write(profile_out, iters, "inference", err, sizeof err)) galv_fatal("%s", err);
      printf("%s: wrote the kernel profile %s\n", galv_progname, profile_out);
    }
    printf("%s: BLAS: OpenBLAS, core %s (OPENBLAS_CORETYPE %s), %d threads\n", galv_progname, openblas_get_corename(),
           getenv("OPENBLAS_CORETYPE") ? getenv("OPENBLAS_CORETYPE") : "unset", openblas_get_num_threads());
  }
  printf("%s: arena %lld bytes, high-water %lld bytes (measured: highest byte written in the first run; plan: %lld)\n",
         galv_progname, (long long)galv_arena_bytes, (long long)high, (long long)galv_plan_high_water);
  galv_mem_arena_high(high);
  if (galv_cvt_scratch_bytes() || galv_narrow_weights_bytes())
    printf("%s: 16-bit storage: conversion scratch %lld bytes, 16-bit weights copy %lld bytes (outside the arena)\n",
           galv_progname, (long long)galv_cvt_scratch_bytes(), (long long)galv_narrow_weights_bytes());

  for (int o = 0; o < galv_noutputs; o++) {
    galv_io go;
    const char *p = galv_outputs[o].in_weights ? weights + galv_outputs[o].offset : arena + galv_outputs[o].offset;
    if (galv_outputs[o].storage && !galv_outputs[o].in_weights) {
      galv_widen16(galv_outputs[o].storage, wide, p, galv_outputs[o].nbytes / 4);
      p = (const char *)wide;
    }
    p = galv_spmd_output(o, p, &go); /* split outputs gathered from every rank */
    const galv_io *d = &go;
    char sh[160];
    shape_str(sh, sizeof sh, d->rank, d->dims);
    char fn[256], path[PATH_MAX + 300] = "", err[512];
    snprintf(fn, sizeof fn, "%s", d->name);
    for (char *c = fn; *c; c++)
      if (*c == '/' || *c == '\\' || (unsigned char)*c < 32) *c = '_';
    if (outdir) snprintf(path, sizeof path, "%s%s%s.npy", outdir, outdir[0] && outdir[strlen(outdir) - 1] == '/' ? "" : "/", fn);
    printf("%s: output '%s' %s %s%s%s\n", galv_progname, d->name, sh, galv_dtype_name(d->dtype), outdir ? " -> " : "", path);
    if (!outdir || galv_spmd_rank() != 0) continue; /* rank 0 writes */
    if (galv_mkdirs(outdir))
      galv_fatal("%s: cannot create the output directory: %s", outdir, strerror(errno));
    if (galv_write_npy(path, d, p, err, sizeof err)) galv_fatal("%s: %s", path, err);
  }
  {
    char who[32];
    snprintf(who, sizeof who, "rank %d", galv_spmd_rank());
    galv_mem_report(who);
  }
  for (int i = 0; i < galv_ninputs; i++) free(in[i].data);
  free(wide);
  for (int j = 0; j < nin; j++) free((char *)names[j]);
  free(in);
  GALV_UNPOISON(arena, abytes);
  galv_mem_free(arena);
  galv_spmd_finalize();
  return 0;
}
