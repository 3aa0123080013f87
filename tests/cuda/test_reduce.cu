/* test_reduce.cu — galv_cu_reduce (one warp per output) over the last axis
 * and over a middle axis, sum/mean/max/min, vs a CPU reference; --time: GB/s
 * of a row sum over 8192 x 4096. */
#include "lab.cuh"

int main(int argc, char **argv) {
  bool timing = lab_timing(argc, argv);
  galv_cu_init(0);
  printf("reduce:\n");
  const int64_t A = 3, Bd = 45, C = 7, dims[] = {A, Bd, C};
  for (int dt : {GALV_F32, GALV_BF16})
    for (int axis = 1; axis < 3; axis++)
      for (int kind = 0; kind < 4; kind++) {
        auto x = lab_stored(lab_vec((size_t)(A * Bd * C)), dt);
        int64_t no = axis == 1 ? A * C : A * Bd;
        std::vector<float> want((size_t)no);
        for (int64_t o = 0; o < no; o++) {
          double acc = kind == 2 ? -INFINITY : kind == 3 ? INFINITY : 0;
          int64_t L = axis == 1 ? Bd : C;
          for (int64_t r = 0; r < L; r++) {
            float v = axis == 1 ? x[((o / C) * Bd + r) * C + o % C] : x[o * C + r];
            acc = kind < 2 ? acc + v : kind == 2 ? fmax(acc, v) : fmin(acc, v);
          }
          want[o] = (float)(kind == 1 ? acc / L : acc);
        }
        const int64_t ostr[] = {axis == 1 ? C : Bd, axis == 1 ? 0 : 1, axis == 1 ? 1 : 0};
        void *dx = lab_upload(x, dt), *dy = lab_upload(want, dt);
        galv_cu_reduce(dt, dy, dx, 3, dims, ostr, no, kind);
        char what[96];
        static const char *kn[] = {"sum", "mean", "max", "min"};
        snprintf(what, sizeof what, "%s reduce_%s axis %d of 3x45x7", lab_dt(dt), kn[kind], axis);
        lab_check(what, lab_download(dy, (size_t)no, dt), want, dt == GALV_BF16 ? 5e-2f : 1e-5f, dt == GALV_BF16 ? 1e-2f : 1e-5f);
        cudaCheck(cudaFree(dx));
        cudaCheck(cudaFree(dy));
      }
  if (timing)
    for (int dt : {GALV_F32, GALV_BF16}) {
      const int64_t R = 8192, N = 4096, d2[] = {R, N}, os[] = {1, 0};
      void *dx = lab_upload(lab_vec((size_t)(R * N)), dt), *dy = lab_upload(lab_vec((size_t)R), dt);
      double ms = lab_time_ms([&] { galv_cu_reduce(dt, dy, dx, 2, d2, os, R, 0); }, 20);
      lab_report_bw(dt == GALV_BF16 ? "reduce_sum rows bf16 8192x4096" : "reduce_sum rows fp32 8192x4096", ms,
                    (double)R * N * (dt == GALV_BF16 ? 2 : 4));
      cudaCheck(cudaFree(dx));
      cudaCheck(cudaFree(dy));
    }
  galv_cu_finish();
  return lab_fail;
}
