/* train_cuda.cu — training step programs on the CUDA target (galvc --train
 * --target cuda). The host side is runtime/train.c, unchanged: options,
 * batches, steps, the "step K loss X" lines, checkpoints and -o files.
 * This file gives it a device step (galv_train_dev, galv_rt.h): the state
 * buffer (parameters, optimizer state) is copied to the device once, each
 * step uploads the step's inputs into the device arena, runs galv_cu_run on
 * the compute stream, copies each new value the step left in the arena into
 * its state slot (galv_state[].update_from, as train.c does on the CPU) on
 * the device, and reads the loss back; the state comes back to the host
 * only for checkpoints and -o. The step time (CUDA events, from the second
 * step on when there are several) is printed at the end with the step's
 * GEMM + attention TFLOP/s (measured with --trace and --profile-out too:
 * their events add a little host work per kernel). --trace FILE: the step's
 * compute and communication streams as CUDA events, written by
 * runtime/prof.c (below); --profile-out FILE: each call site's time from the
 * same events, written by prof.c's galv_prof_write as on the CPU target.
 * The state is fp32 under --precision bf16 too
 * (mixed precision: program.cu keeps activations in bf16 in the arena and
 * converts at its kernels; docs/cuda-target.md, "bf16 training"), so this
 * file, the checkpoints and -o are the same for both. On N ranks the
 * state of checkpoints and -o is gathered on the device (dev_gather). */
#include <string.h>

#include "galv_cuda.h"

static char *d_arena, *d_weights, *d_wbase, *d_state;
static cudaEvent_t ev0, ev1;
static double step_ms_sum, step_ms_min;
static long nsteps;

static void dev_begin(const char *weights, const char *state) {
  galv_cu_init((size_t)galv_cu_scratch_bytes);
  cudaCheck(cudaMalloc((void **)&d_arena, (size_t)(galv_arena_bytes ? galv_arena_bytes : 64)));
  /* The step reads the parameters from the state buffer: of weights.bin only the constants after the
   * parameters' part go to the device (W(off) has off >= galv_cu_param_bytes in a training program), so
   * the parameters are not held twice */
  int64_t cb = galv_weights_bytes - galv_cu_param_bytes;
  cudaCheck(cudaMalloc((void **)&d_wbase, (size_t)(cb > 0 ? cb : 64)));
  d_weights = d_wbase - galv_cu_param_bytes;
  cudaCheck(cudaMalloc((void **)&d_state, (size_t)(galv_state_bytes ? galv_state_bytes : 64)));
  /* on galv_cu.stream (the kernels' non-blocking stream): a legacy-stream cudaMemcpy from pageable memory may
   * return before the copy lands, and that stream does not wait for it */
  if (cb > 0)
    cudaCheck(cudaMemcpyAsync(d_wbase, weights + galv_cu_param_bytes, (size_t)cb, cudaMemcpyHostToDevice, galv_cu.stream));
  cudaCheck(cudaMemcpyAsync(d_state, state, (size_t)galv_state_bytes, cudaMemcpyHostToDevice, galv_cu.stream));
  cudaCheck(cudaStreamSynchronize(galv_cu.stream));
  cudaCheck(cudaEventCreate(&ev0));
  cudaCheck(cudaEventCreate(&ev1));
}

/* --trace (train.c sets galv_cu_trace_on around each step, galv_rt.h): one event per kernel call site and one
 * more for the run's end on the compute stream (GALV_CU_PROF), the spans of the collectives and waits from the
 * communicator (galv_cuda.h); after the step's streams are synchronised, each becomes one event of prof.c's
 * trace, which writes the Chrome trace as on the CPU target.
 * --profile-out (train.c sets prof_on for each step it times: those after the first): the same events and spans
 * (galv_cu_trace_on for the step: the waits); after the step, each call site's interval on the compute stream
 * (galv_cu_prof_collect: as the trace's kernels, cut at a wait) is added to prof.c's per call site time, which
 * train.c writes with galv_prof_write (the mean over the timed steps) */
static int prof_on;

static void prof_charge(int k, double ms) { galv_prof_charge(k, ms); }

static void trace_emit(int k, int stream, const char *name, long long bytes, double t0, double t1) {
  galv_trace_event(k, stream, name, bytes, t0, t1);
}

static void trace_start(void) {
  if (galv_cu_prof_ev) return;
  galv_cu_prof_ev = (cudaEvent_t *)calloc((size_t)galv_nkernels + 1, sizeof(cudaEvent_t));
  if (!galv_cu_prof_ev) galv_fatal("out of memory");
  for (int k = 0; k <= galv_nkernels; k++) cudaCheck(cudaEventCreate(&galv_cu_prof_ev[k]));
}

static void trace_stop(void) {
  if (!galv_cu_prof_ev) return;
  for (int k = 0; k <= galv_nkernels; k++) cudaCheck(cudaEventDestroy(galv_cu_prof_ev[k]));
  free(galv_cu_prof_ev);
  galv_cu_prof_ev = NULL;
  galv_cu_trace_free();
}

static double dev_step(const char *arena) {
  int timed = prof_on && !galv_cu_trace_on; /* --profile-out (train.c refuses it with --trace) */
  if (timed) galv_cu_trace_on = 1;          /* the waits' spans: a kernel ends where the stream waits */
  if (galv_cu_trace_on) trace_start();
  for (int i = 0; i < galv_ninputs; i++)
    cudaCheck(cudaMemcpyAsync(d_arena + galv_inputs[i].offset, arena + galv_inputs[i].offset, (size_t)galv_inputs[i].nbytes,
                              cudaMemcpyHostToDevice, galv_cu.stream));
  cudaCheck(cudaEventRecord(ev0, galv_cu.stream));
  galv_cu_run(d_arena, d_weights, d_state);
  for (int i = 0; i < galv_nstate; i++)
    if (galv_state[i].update_from >= 0)
      cudaCheck(cudaMemcpyAsync(d_state + galv_state[i].offset, d_arena + galv_state[i].update_from,
                                (size_t)galv_state[i].nbytes, cudaMemcpyDeviceToDevice, galv_cu.stream));
  cudaCheck(cudaEventRecord(ev1, galv_cu.stream));
  const galv_io *lo = &galv_outputs[0];
  double loss = 0;
  char buf[8] = {0};
  cudaCheck(cudaMemcpyAsync(buf, (lo->in_weights == 2 ? d_state : d_arena) + lo->offset, lo->dtype == GALV_F64 ? 8 : 4,
                            cudaMemcpyDeviceToHost, galv_cu.stream));
  cudaCheck(cudaStreamSynchronize(galv_cu.stream));
  int err = 0;
  cudaCheck(cudaMemcpy(&err, galv_cu.err, sizeof err, cudaMemcpyDeviceToHost));
  if (err) galv_fatal("kernel %d (%s, node '%s'): index or label out of range, or integer division by zero", err - 1,
                      galv_kernels[err - 1].kind, galv_kernels[err - 1].node);
  if (timed) { /* the run's communication completed in it */
    galv_cu_prof_collect(galv_nkernels, prof_charge);
    galv_cu_trace_on = 0;
  } else if (galv_cu_prof_ev) {
    galv_cu_trace_collect(galv_nkernels, trace_emit);
  }
  float ms = 0;
  cudaCheck(cudaEventElapsedTime(&ms, ev0, ev1));
  if (nsteps == 1) step_ms_sum = 0, step_ms_min = ms; /* the first step warms up cuBLAS: not counted when there are more */
  step_ms_sum += ms;
  if (nsteps == 0 || ms < step_ms_min) step_ms_min = ms;
  nsteps++;
  if (lo->dtype == GALV_F64) memcpy(&loss, buf, 8);
  else {
    float f;
    memcpy(&f, buf, 4);
    loss = f;
  }
  return loss;
}

static void dev_fetch(char *state) {
  cudaCheck(cudaMemcpy(state, d_state, (size_t)galv_state_bytes, cudaMemcpyDeviceToHost));
}

void *galv_cu_gather_host(const galv_io *l, const galv_io_split *s, const void *local, galv_io *g) {
  static galv_comm *world;
  *g = galv_spmd_global_io(l, s);
  size_t nb = (size_t)l->nbytes, all = nb * (size_t)galv_nranks;
  void *out = malloc((size_t)g->nbytes + 1);
  if (!out) galv_fatal("out of memory gathering '%s'", l->name);
  if (galv_nranks <= 1 || !s->starts) { /* not split: every rank holds the whole tensor */
    memcpy(out, local, nb);
    return out;
  }
  if (!world) {
    int64_t n = galv_nranks;
    world = galv_comm_group(&n, 1, 1);
  }
  char *dl = NULL, *dg = NULL;
  cudaCheck(cudaMalloc((void **)&dl, nb ? nb : 1));
  cudaCheck(cudaMalloc((void **)&dg, all ? all : 1));
  cudaCheck(cudaMemcpyAsync(dl, local, nb, cudaMemcpyHostToDevice, galv_cu.stream));
  galv_queue *q = galv_queue_new();
  galv_all_gather(world, dl, dg, nb, GALV_U8, q); /* after the upload (the queue waits for the compute stream) */
  galv_queue_sync(q);
  void *hg = malloc(all + 1);
  if (!hg) galv_fatal("out of memory gathering '%s'", l->name);
  cudaCheck(cudaMemcpyAsync(hg, dg, all, cudaMemcpyDeviceToHost, galv_cu.stream));
  cudaCheck(cudaStreamSynchronize(galv_cu.stream));
  galv_queue_free(q);
  cudaCheck(cudaFree(dl));
  cudaCheck(cudaFree(dg));
  galv_spmd_place(l, s, hg, out);
  free(hg);
  return out;
}

/* state tensor i as a global tensor (checkpoints, -o): the host copy of this
 * rank's block (dev_fetch ran before) gathered on the device */
static const void *dev_gather(int i, const galv_io *l, const void *local, galv_io *g) {
  static void *last;
  free(last);
  last = galv_cu_gather_host(l, &galv_state_split[i], local, g);
  return last;
}

static void dev_read(int i, void *dst) {
  cudaCheck(cudaMemcpy(dst, d_state + galv_state[i].offset, (size_t)galv_state[i].nbytes, cudaMemcpyDeviceToHost));
}

static const galv_train_device cuda_dev = {dev_begin, dev_step, dev_fetch, dev_gather, dev_read};

int galv_cu_train_main(int argc, char **argv) {
  galv_train_dev = &cuda_dev;
  galv_train_prof.on = &prof_on;
  galv_train_prof.write = galv_prof_write;
  galv_train_prof.trace_on = &galv_cu_trace_on;
  galv_train_prof.trace_step = galv_trace_step;
  galv_train_prof.trace_write = galv_trace_write;
  int rc = galv_train_main(argc, argv);
  trace_stop();
  if (nsteps > 0) {
    long counted = nsteps > 1 ? nsteps - 1 : 1;
    double mean = step_ms_sum / (double)counted;
    int64_t params = 0;
    for (int i = 0; i < galv_nstate; i++)
      if (galv_state[i].is_param) params += galv_state[i].nbytes / (int64_t)galv_dtype_size(galv_state[i].dtype);
    cudaDeviceProp prop;
    cudaCheck(cudaGetDeviceProperties(&prop, galv_cu.device));
    printf("%s: %s, training step: mean %.3f ms, min %.3f ms over %ld steps%s, %.1f GEMM+attention TFLOP/s, %lld "
           "parameters (fp32%s)\n",
           galv_progname, prop.name, mean, step_ms_min, counted, nsteps > 1 ? " (after the first)" : "",
           (double)galv_cu_flops / (step_ms_min * 1e-3) / 1e12, (long long)params,
           galv_cu_precision == GALV_BF16 ? "; bf16 activations" : galv_cu_precision == GALV_F16 ? "; fp16 activations" : "");
  }
  if (d_arena) {
    cudaCheck(cudaFree(d_arena));
    cudaCheck(cudaFree(d_wbase));
    cudaCheck(cudaFree(d_state));
    cudaCheck(cudaEventDestroy(ev0));
    cudaCheck(cudaEventDestroy(ev1));
    galv_cu_finish();
  }
  return rc;
}

/* What train.c and spmd.c reference from the CPU runtime but a one-rank
 * CUDA program never reaches: the CPU step, OpenBLAS threads, the host
 * strided copy of a sharded input (runtime/kernels.c's semantics). */
extern "C" {
void galv_program_run(char *arena, const char *weights, char *state) {
  (void)arena, (void)weights, (void)state;
  galv_fatal("internal error: the CPU step was called in a CUDA program");
}
void openblas_set_num_threads(int n) { (void)n; }
void galv_copy_strided(void *dst, const void *src, size_t es, int rank, const int64_t *dims, const int64_t *strides) {
  int64_t n = 1, idx[GALV_RT_MAX_RANK] = {0}, off = 0;
  for (int d = 0; d < rank; d++) n *= dims[d];
  for (int64_t i = 0; i < n; i++) {
    memcpy((char *)dst + i * (int64_t)es, (const char *)src + off * (int64_t)es, es);
    for (int d = rank - 1; d >= 0; d--) {
      off += strides[d];
      if (++idx[d] < dims[d]) break;
      off -= strides[d] * dims[d];
      idx[d] = 0;
    }
  }
}
}
