/* train.c — the entry point of training step programs (galvc --train
 * --target cpu; main.c hands over when program.c says galv_training):
 *
 *   ./program --batches DIR [--steps N] [--input NAME=FILE ...]
 *             [--load-checkpoint F] [--save-checkpoint F] [-o OUTDIR]
 *             [--weights FILE] [--threads N]
 *
 * State: one writable buffer holding the parameters (copied from the mapped
 * weights.bin) and the optimizer state (zeros), or both from a checkpoint.
 * Each step copies the step's batch into the arena, runs galv_program_run,
 * prints "step K loss X" (K counts from the checkpoint's step count; with
 * loss scaling: "scale S skipped N" follow, S the scale after
 * the step's update, N the steps skipped so far, and "(overflow: step
 * skipped)" when this step was) and
 * copies every new value that the step did not write in place into its
 * state slot (galv_state[].update_from). Batches: DIR/NAME.npy per data
 * input (NAME sanitised: '/' and control characters -> '_'), of the
 * input's shape, or with one more leading dim S: step K uses batch K mod S.
 * -o OUTDIR writes every parameter as OUTDIR/NAME.npy after the last step.
 * After the first step every rank prints its memory: the state buffer plus
 * the arena's high-water mark (the arena is filled with 0xA5 first; the
 * highest byte that no longer holds it), for the planner's prediction.
 *
 * Checkpoints: runtime/io.c's format (global tensors by name, CRC-32,
 * written atomically), the same for every plan and pipeline stages, so a
 * checkpoint loads into any plan of the model. Loading finds each state
 * tensor by name and checks its dtype and shape; every error is one line
 * and exit status 1.
 *
 * Ranks (an N-rank SPMD program, runtime/spmd.c): every rank maps its own
 * block of weights.bin (its block of each sharded parameter), reads the
 * global batches and keeps its block of each input; the optimizer state is
 * local (zeros, or this rank's block of the checkpoint). Rank 0 prints the
 * loss (the same on every rank) and writes -o files and checkpoints, which
 * hold global tensors: sharded parameters and state are gathered first, so
 * a checkpoint loads on any rank count (a device target fetches its state
 * to the host first and gathers through galv_train_dev->gather).
 * --comm-stats prints the bytes this rank sent; counted == predicted x
 * steps is checked on every rank. */
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

void openblas_set_num_threads(int n);

const galv_train_device *galv_train_dev; /* NULL: the CPU target */


static long train_int(const char *opt, const char *s, long min) {
  char *end;
  errno = 0;
  long v = strtol(s, &end, 10);
  if (errno || *end || v < min) galv_fatal_all("%s expects an integer >= %ld, got '%s'", opt, min, s);
  return v;
}

static void sanitise(char *dst, size_t n, const char *name) {
  snprintf(dst, n, "%s", name);
  for (char *c = dst; *c; c++)
    if (*c == '/' || *c == '\\' || (unsigned char)*c < 32) *c = '_';
}

static void shape_of(char *b, size_t n, int rank, const int64_t *dims) {
  size_t k = 0;
  b[0] = 0;
  if (rank == 0) snprintf(b, n, "scalar");
  for (int d = 0; d < rank && k < n; d++) k += (size_t)snprintf(b + k, n - k, d ? "x%lld" : "%lld", (long long)dims[d]);
}

static double train_now_ms(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (double)ts.tv_sec * 1e3 + (double)ts.tv_nsec * 1e-6;
}

static void train_usage(FILE *f) {
  fprintf(f, "usage: %s --batches DIR [--steps N] [--input NAME=FILE ...] [--load-checkpoint F] [--save-checkpoint F]\n"
             "       [-o OUTDIR] [--weights FILE] [--threads N] [--comm-stats] [--profile-out FILE] [--trace FILE]\n"
             "  --batches DIR        DIR/NAME.npy per input: the input's shape, or [S, shape...] (step K uses batch K mod S)\n"
             "  --input NAME=FILE    that input from FILE instead (same rule)\n"
             "  --steps N            training steps (default 1); prints 'step K loss X' per step\n"
             "  --load-checkpoint F  parameters, optimizer state and step count from F (instead of weights.bin)\n"
             "  --save-checkpoint F  write them to F after the last step\n"
             "  -o OUTDIR            write every parameter as OUTDIR/NAME.npy after the last step\n"
             "  --profile-out FILE   time every kernel call of the steps after the first (of the one step when --steps 1)\n"
             "                       and write each call site's mean time as JSON to FILE (bench/layer_profile.py; CUDA:\n"
             "                       its CUDA events' interval on the compute stream, cut where the stream waits)\n"
             "  --trace FILE         a Chrome trace of every step: the compute stream's kernel calls and waits, the\n"
             "                       communication stream's collectives from post to completion (rank 0: FILE, rank R:\n"
             "                       FILE.rankR); prints each step's measured time\n"
             "inputs:\n", galv_progname);
  for (int i = 0; i < galv_ninputs; i++) {
    char sh[160];
    galv_io g = galv_spmd_global_io(&galv_inputs[i], &galv_input_split[i]); /* the global shape: what the file holds */
    shape_of(sh, sizeof sh, g.rank, g.dims);
    fprintf(f, "  %s: %s %s\n", g.name, sh, galv_dtype_name(g.dtype));
  }
}

/* ---------------------------------------------------------------- checkpoints */


/* State entry i as a local tensor (its slot in the state buffer). */
static galv_io state_io(int i) {
  const galv_state_entry *e = &galv_state[i];
  galv_io io = {e->name, e->dtype, e->rank, {0}, 2, e->offset, e->nbytes, 0};
  memcpy(io.dims, e->dims, sizeof io.dims);
  return io;
}

/* The global form of state tensor i (a collective for a sharded one: every
 * rank calls it). A device target gathers on the device. */
static const void *gather_state(int i, const galv_io *l, const char *local, galv_io *g) {
  if (galv_train_dev && galv_train_dev->gather) return galv_train_dev->gather(i, l, local, g);
  return galv_spmd_gather(l, &galv_state_split[i], local, g);
}

/* Every rank calls it (sharded state is gathered); rank 0 writes, atomically
 * (runtime/io.c: PATH.tmp, fsync, rename; CRC-32). */
static void save_checkpoint(const char *path, const char *state, int64_t steps) {
  galv_ckpt_writer w;
  int writer = galv_spmd_rank() == 0;
  if (writer && galv_ckpt_begin(&w, path, steps)) galv_fatal("%s", w.err);
  for (int i = 0; i < galv_nstate; i++) {
    galv_io l = state_io(i), g;
    const char *data = gather_state(i, &l, state + l.offset, &g);
    if (writer && galv_ckpt_put(&w, g.name, g.dtype, g.rank, g.dims, g.nbytes, data)) {
      galv_ckpt_abandon(&w);
      galv_fatal("%s", w.err);
    }
    if (writer && i == 0) fflush(w.f), galv_test_point("checkpoint"); /* the file partly written */
  }
  if (writer && galv_ckpt_end(&w)) {
    galv_ckpt_abandon(&w);
    galv_fatal("%s", w.err);
  }
}

/* Loads state (this rank's block of each global tensor, found by name: the
 * checkpoint may come from any plan of the model, a pipeline's included) and
 * the step count; a missing tensor, another dtype or shape, or a tensor this
 * program does not have is one error. */
static int64_t load_checkpoint(const char *path, char *state) {
  galv_ckpt c;
  if (galv_ckpt_open(&c, path)) galv_fatal_all("%s", c.err);
  char *buf = NULL;
  for (int i = 0; i < galv_nstate; i++) {
    galv_io l = state_io(i), e = galv_spmd_global_io(&l, &galv_state_split[i]);
    galv_ckpt_entry *t = galv_ckpt_find(&c, e.name);
    if (!t) galv_fatal_all("%s: checkpoint of another model or optimizer: no state '%s'", path, e.name);
    int same = t->dtype == e.dtype && t->rank == e.rank && t->nbytes == e.nbytes;
    for (int d = 0; same && d < e.rank; d++) same = t->dims[d] == e.dims[d];
    if (!same) {
      char a[160], b[160];
      shape_of(a, sizeof a, t->rank, t->dims);
      shape_of(b, sizeof b, e.rank, e.dims);
      galv_fatal_all("%s: checkpoint of another model: state '%s' is %s %s, this program expects %s %s", path, e.name, a,
                     galv_dtype_name(t->dtype), b, galv_dtype_name(e.dtype));
    }
    free(buf);
    buf = malloc((size_t)t->nbytes + 1);
    if (!buf) galv_fatal("%s: out of memory reading state '%s'", path, e.name);
    if (galv_ckpt_read(&c, t, buf)) galv_fatal_all("%s", c.err);
    galv_spmd_block(&l, &galv_state_split[i], state + l.offset, buf);
  }
  free(buf);
  for (int i = 0; i < c.n; i++)
    if (!c.e[i].used) galv_fatal_all("%s: checkpoint of another model or optimizer: it holds '%s', which this program does not have", path, c.e[i].name);
  int64_t steps = c.steps;
  galv_ckpt_close(&c);
  return steps;
}

/* ---------------------------------------------------------------- batches */

typedef struct {
  galv_tensor t;
  int64_t nbatch; /* 1 when the file has exactly the input's shape */
} batch;

static void read_batch(batch *b, const galv_io *d, const char *path) {
  char err[512], a[160], s[160];
  if (galv_read_tensor(path, &b->t, err, sizeof err)) galv_fatal_all("%s: input '%s': %s", path, d->name, err);
  if (b->t.dtype != d->dtype)
    galv_fatal_all("%s: input '%s' has dtype %s, the program expects %s", path, d->name, galv_dtype_name(b->t.dtype),
               galv_dtype_name(d->dtype));
  int lead = b->t.rank == d->rank + 1, same = b->t.rank == d->rank || lead;
  for (int k = 0; same && k < d->rank; k++) same = b->t.dims[k + lead] == d->dims[k];
  if (!same || (lead && b->t.dims[0] < 1)) {
    shape_of(a, sizeof a, b->t.rank, b->t.dims);
    shape_of(s, sizeof s, d->rank, d->dims);
    galv_fatal_all("%s: input '%s' has shape %s, the program expects %s or [steps, %s]", path, d->name, a, s, s);
  }
  b->nbatch = lead ? b->t.dims[0] : 1;
  if ((int64_t)b->t.nbytes != b->nbatch * d->nbytes) galv_fatal_all("%s: input '%s': size mismatch", path, d->name);
}

/* ---------------------------------------------------------------- main */

galv_train_profiler galv_train_prof; /* main.c fills it on the CPU target, runtime/cuda/train_cuda.cu on CUDA */

int galv_train_main(int argc, char **argv) {
  const char *outdir = NULL, *wpath = NULL, *bdir = NULL, *load = NULL, *save = NULL, *profile_out = NULL, *trace = NULL;
  long steps = 1, threads = 0;
  enum { MAXIN = 256 };
  const char *names[MAXIN], *files[MAXIN];
  int nin = 0, comm_stats = 0;
  for (int i = 1; i < argc; i++) {
    const char *a = argv[i], *v = i + 1 < argc ? argv[i + 1] : NULL;
    if (!strcmp(a, "--help") || !strcmp(a, "-h")) {
      train_usage(stdout);
      return 0;
    } else if (!strcmp(a, "--input") && v) {
      const char *eq = strchr(v, '=');
      if (!eq || eq == v) galv_fatal_all("--input expects NAME=FILE, got '%s'", v);
      if (nin == MAXIN) galv_fatal_all("too many --input options");
      names[nin] = strndup(v, (size_t)(eq - v));
      files[nin++] = eq + 1;
      i++;
    } else if (!strcmp(a, "--batches") && v) bdir = v, i++;
    else if (!strcmp(a, "-o") && v) outdir = v, i++;
    else if (!strcmp(a, "--weights") && v) wpath = v, i++;
    else if (!strcmp(a, "--load-checkpoint") && v) load = v, i++;
    else if (!strcmp(a, "--save-checkpoint") && v) save = v, i++;
    else if (!strcmp(a, "--steps") && v) steps = train_int(a, v, 0), i++;
    else if (!strcmp(a, "--threads") && v) threads = train_int(a, v, 1), i++;
    else if (!strcmp(a, "--comm-stats")) comm_stats = 1;
    else if (!strcmp(a, "--profile-out") && v) profile_out = v, i++;
    else if (!strcmp(a, "--trace") && v) trace = v, i++;
    else galv_fatal_all("unknown or incomplete option '%s' (see --help)", a);
  }
  if (profile_out && !galv_train_prof.write) galv_fatal_all("--profile-out: this program was built without its kernel timer");
  if (profile_out && steps < 1) galv_fatal_all("--profile-out needs at least one step (--steps)");
  if (trace && !galv_train_prof.trace_write) galv_fatal_all("--trace: this program was built without its trace");
  if (trace && profile_out) galv_fatal_all("--trace and --profile-out time the same marks: give one of them");
  if (threads > 0) openblas_set_num_threads((int)threads);
  for (int j = 0; j < nin; j++) {
    int i = 0;
    while (i < galv_ninputs && strcmp(galv_inputs[i].name, names[j])) i++;
    if (i == galv_ninputs) galv_fatal_all("--input %s: the program has no input named '%s' (see --help)", names[j], names[j]);
  }

  char wbuf[PATH_MAX];
  wpath = galv_weights_path(wpath, wbuf, sizeof wbuf); /* --weights, else next to the executable */
  size_t wlen = 0;
  const char *weights = galv_spmd_map_weights(wpath, &wlen); /* this rank's block */

  /* state: parameters from weights.bin (same offsets), optimizer state zeros */
  size_t sbytes = (size_t)(galv_state_bytes + 63) / 64 * 64;
  char *state = galv_mem_alloc(galv_state_bytes, GALV_MEM_STATE);
  /* the constants the step reads from the mapped weights (after the parameters, which it reads from the state) */
  if (galv_weights_bytes > galv_param_bytes) galv_mem_note(weights + galv_param_bytes, galv_weights_bytes - galv_param_bytes, GALV_MEM_WEIGHTS);
  memset(state, 0, sbytes);
  memcpy(state, weights, (size_t)galv_param_bytes);
  int64_t done = load ? load_checkpoint(load, state) : 0;
  if (galv_train_dev) galv_train_dev->begin(weights, state);

  /* batches */
  batch *in = calloc((size_t)galv_ninputs + 1, sizeof *in);
  if (!in) galv_fatal("out of memory");
  for (int i = 0; i < galv_ninputs && steps > 0; i++) {
    const galv_io *d = &galv_inputs[i];
    int j = 0;
    while (j < nin && strcmp(names[j], d->name)) j++;
    char fn[256], path[PATH_MAX + 300];
    if (j < nin) {
      snprintf(path, sizeof path, "%s", files[j]);
    } else {
      if (!bdir) galv_fatal_all("input '%s' not given (use --batches DIR with DIR/%s.npy, or --input %s=FILE)", d->name, d->name, d->name);
      sanitise(fn, sizeof fn, d->name);
      snprintf(path, sizeof path, "%s/%s.npy", bdir, fn);
    }
    galv_io gd = galv_spmd_global_io(d, &galv_input_split[i]); /* the file holds the global batch */
    read_batch(&in[i], &gd, path);
  }

  size_t abytes = (size_t)(galv_arena_bytes ? galv_arena_bytes : 64);
  char *arena = galv_mem_alloc((int64_t)abytes, GALV_MEM_ARENA);
  /* filled for the high-water measurement (main.c's): the highest byte
   * the first step wrote, printed after it by every rank */
  memset(arena, 0xA5, abytes);
  GALV_POISON(arena, abytes);
  const galv_io *lo = &galv_outputs[0];
  printf("%s: training step: %d kernels, arena %lld bytes, state %lld bytes (parameters %lld), %d state tensors\n",
         galv_progname, galv_nkernels, (long long)galv_arena_bytes, (long long)galv_state_bytes,
         (long long)galv_param_bytes, galv_nstate);
  int ls_scale = -1, ls_skip = -1; /* loss scaling's state (passes/optimizer.c), printed per step */
  for (int i = 0; i < galv_nstate; i++) {
    if (!strcmp(galv_state[i].name, "opt.loss_scale") && galv_state[i].dtype == GALV_F32 && galv_state[i].rank == 0) ls_scale = i;
    if (!strcmp(galv_state[i].name, "opt.skipped_steps") && galv_state[i].dtype == GALV_F32 && galv_state[i].rank == 0) ls_skip = i;
  }
  float ls_skipped = ls_skip >= 0 ? *(const float *)(state + galv_state[ls_skip].offset) : 0;
  for (long s = 0; s < steps; s++, done++) {
    galv_rt_step = done; /* galv.dropout's masks: the step count (checkpoints included) */
    for (int i = 0; i < galv_ninputs; i++) {
      const galv_io *d = &galv_inputs[i];
      GALV_UNPOISON(arena + d->offset, d->nbytes);
      int64_t gb = galv_spmd_global_io(d, &galv_input_split[i]).nbytes;
      galv_spmd_load_input(i, arena + d->offset, (const char *)in[i].t.data + (done % in[i].nbatch) * gb); /* this rank's block */
    }
    double loss;
    if (profile_out) *galv_train_prof.on = s >= 1 || steps == 1; /* the first step warms up when there are more */
    if (trace) *galv_train_prof.on = *galv_train_prof.trace_on = 1, galv_train_prof.trace_step((int)done);
    double t_step = trace ? train_now_ms() : 0;
    if (galv_train_dev) {
      loss = galv_train_dev->step(arena);
    } else {
      galv_program_run(arena, weights, state);
      const char *lp = lo->in_weights == 2 ? state + lo->offset : arena + lo->offset;
      loss = lo->dtype == GALV_F64 ? *(const double *)lp : *(const float *)lp;
    }
    for (int i = 0; i < galv_nstate && !galv_train_dev; i++)
      if (galv_state[i].update_from >= 0)
        memcpy(state + galv_state[i].offset, arena + galv_state[i].update_from, (size_t)galv_state[i].nbytes);
    if (ls_skip >= 0 && (!galv_train_dev || galv_train_dev->read)) { /* loss scaling: the scale after this step's update, the steps skipped */
      float sc = 0, sk = 0;
      if (galv_train_dev) {
        if (ls_scale >= 0) galv_train_dev->read(ls_scale, &sc);
        galv_train_dev->read(ls_skip, &sk);
      } else {
        if (ls_scale >= 0) memcpy(&sc, state + galv_state[ls_scale].offset, 4);
        memcpy(&sk, state + galv_state[ls_skip].offset, 4);
      }
      char scs[40] = "";
      if (ls_scale >= 0) snprintf(scs, sizeof scs, " scale %.17g", sc); /* exact */
      printf("step %lld loss %.9g%s skipped %.0f%s\n", (long long)done, loss, scs, sk, sk > ls_skipped ? " (overflow: step skipped)" : "");
      ls_skipped = sk;
    } else {
      printf("step %lld loss %.9g\n", (long long)done, loss);
    }
    if (trace) printf("%s: rank %d: step %lld took %.3f ms (measured, traced)\n", galv_progname, galv_spmd_rank(), (long long)done,
                      train_now_ms() - t_step);
    if (s == 0 && !galv_train_dev && galv_arena_bytes) {
      GALV_UNPOISON(arena, abytes);
      int64_t high = 0;
      for (int64_t k = (int64_t)abytes - 1; k >= 0 && !high; k--)
        if ((unsigned char)arena[k] != 0xA5) high = k + 1;
      printf("%s: rank %d: memory: state %lld bytes + arena high-water %lld bytes (measured: highest byte the first step "
             "wrote; plan: %lld) = %lld bytes\n", galv_progname, galv_spmd_rank(), (long long)galv_state_bytes, (long long)high,
             (long long)galv_plan_high_water, (long long)(galv_state_bytes + high));
      galv_mem_arena_high(high);
      if (galv_cvt_scratch_bytes())
        printf("%s: rank %d: 16-bit storage: conversion scratch %lld bytes (outside the arena)\n", galv_progname,
               galv_spmd_rank(), (long long)galv_cvt_scratch_bytes());
    }
    GALV_POISON(arena, abytes);
  }
  if (profile_out) *galv_train_prof.on = 0;
  if (trace) {
    *galv_train_prof.on = *galv_train_prof.trace_on = 0;
    char err[4400], path[PATH_MAX + 32];
    if (galv_spmd_rank() == 0) snprintf(path, sizeof path, "%s", trace);
    else snprintf(path, sizeof path, "%s.rank%d", trace, galv_spmd_rank());
    if (galv_train_prof.trace_write(path, galv_spmd_rank(), err, sizeof err)) galv_fatal("%s", err);
    printf("%s: rank %d: wrote the trace %s (a compute and a communication stream)\n", galv_progname, galv_spmd_rank(), path);
  }
  if (profile_out && galv_spmd_rank() == 0) {
    char err[4400];
    if (galv_train_prof.write(profile_out, steps > 1 ? steps - 1 : 1, "training step", err, sizeof err)) galv_fatal("%s", err);
    printf("%s: wrote the kernel profile %s (%ld step%s timed)\n", galv_progname, profile_out, steps > 1 ? steps - 1 : 1,
           steps > 2 ? "s" : "");
  }
  galv_spmd_check_bytes(comm_stats, steps); /* before gathering (which communicates) */
  if (!galv_train_dev && steps > 0) { /* the device target counts its own allocations (cudaMalloc) */
    char who[32];
    snprintf(who, sizeof who, "rank %d", galv_spmd_rank());
    galv_mem_report(who);
  }
  if (galv_train_dev && (save || outdir)) galv_train_dev->fetch(state);
  fflush(stdout);
  if (save) save_checkpoint(save, state, done);
  int writer = galv_spmd_rank() == 0;
  if (outdir && writer) {
    if (galv_mkdirs(outdir))
      galv_fatal("%s: cannot create the output directory: %s", outdir, strerror(errno));
  }
  for (int i = 0; outdir && i < galv_nstate; i++) {
    if (!galv_state[i].is_param) continue;
    galv_io l = state_io(i), g;
    const void *data = gather_state(i, &l, state + l.offset, &g); /* every rank */
    if (!writer) continue;
    char fn[256], path[PATH_MAX + 300], err[512];
    sanitise(fn, sizeof fn, g.name);
    snprintf(path, sizeof path, "%s%s%s.npy", outdir, outdir[0] && outdir[strlen(outdir) - 1] == '/' ? "" : "/", fn);
    if (galv_write_npy(path, &g, data, err, sizeof err)) galv_fatal("%s: %s", path, err);
  }
  if (writer && save) printf("%s: wrote checkpoint %s (%lld steps done)\n", galv_progname, save, (long long)done);
  if (writer && outdir) {
    int np = 0;
    for (int i = 0; i < galv_nstate; i++) np += galv_state[i].is_param;
    size_t n = strlen(outdir);
    printf("%s: wrote %d parameters to %s%sNAME.npy\n", galv_progname, np, outdir, n && outdir[n - 1] == '/' ? "" : "/");
  }
  for (int i = 0; i < galv_ninputs; i++) free(in[i].t.data);
  for (int j = 0; j < nin; j++) free((char *)names[j]);
  free(in);
  GALV_UNPOISON(arena, abytes);
  galv_mem_free(arena);
  galv_mem_free(state);
  galv_spmd_finalize();
  return 0;
}
