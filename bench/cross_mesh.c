/* cross_mesh — bytes crossing between two meshes for cross-mesh resharding
 * plans (planner/cross_mesh.c) against the naive plan in which every
 * receiving device gets the whole tensor, and against the plan without the
 * local all-gather; plus the most bytes one sender sends (load balance).
 * A GPT-3-sized activation (microbatch 8 x seq 2048 x h 12288, bf16)
 * between two 8-device meshes, and the pipeline runtime's case (the value
 * replicated on both stages, runtime/pipe_xfer.c executes these plans)
 * between stages of 8, 4 and 8 devices. Figures only. */
#include <stdio.h>
#include <string.h>

#include "planner/cross_mesh.h"

static gv_mesh mk(const char *name, int n, const char *a0, int64_t s0, const char *a1, int64_t s1) {
  gv_mesh m = {0};
  m.name = name;
  m.naxes = n;
  m.axis[0] = a0, m.size[0] = s0;
  if (n > 1) m.axis[1] = a1, m.size[1] = s1;
  return m;
}

static gv_sharding sh(const gv_mesh *m, int rank, int d0, int a0, int d1, int a1) {
  gv_sharding s = {0};
  s.mesh = m;
  s.rank = rank;
  if (d0 >= 0) s.axes[d0][s.naxes[d0]++] = (uint8_t)a0;
  if (d1 >= 0) s.axes[d1][s.naxes[d1]++] = (uint8_t)a1;
  return s;
}

int main(void) {
  gv_progname = "cross_mesh";
  int64_t dims[3] = {8, 2048, 12288};
  gv_type t = gv_type_make(GV_DT_BF16, 3, dims);
  gv_mesh A = mk("s0", 2, "dp", 2, "tp", 4), B = mk("s1", 2, "dp", 2, "tp", 4), C = mk("s1", 1, "tp", 8, 0, 0),
          D = mk("s1", 1, "tp", 4, 0, 0);
  struct {
    const char *name;
    gv_sharding src, dst;
  } cases[] = {
      {"same sharding (batch/dp, hidden/tp) on another 2x4 mesh", sh(&A, 3, 0, 0, 2, 1), sh(&B, 3, 0, 0, 2, 1)},
      {"batch/dp -> replicated on 2x4 (local all-gather)", sh(&A, 3, 0, 0, -1, 0), sh(&B, 3, -1, 0, -1, 0)},
      {"batch/dp -> batch/dp, replicated over tp (local all-gather)", sh(&A, 3, 0, 0, -1, 0), sh(&B, 3, 0, 0, -1, 0)},
      {"replicated -> hidden/tp on 1x8", sh(&A, 3, -1, 0, -1, 0), sh(&C, 3, 2, 0, -1, 0)},
      {"hidden/tp -> seq/tp on 1x8 (different axes)", sh(&A, 3, 2, 1, -1, 0), sh(&C, 3, 1, 0, -1, 0)},
      {"replicated -> replicated on 2x4 (pipeline runtime, pp x dp,tp)", sh(&A, 3, -1, 0, -1, 0), sh(&B, 3, -1, 0, -1, 0)},
      {"replicated on 8 -> replicated on 4 (uneven stages)", sh(&C, 3, -1, 0, -1, 0), sh(&D, 3, -1, 0, -1, 0)},
      {"replicated on 4 -> replicated on 8 (uneven stages)", sh(&D, 3, -1, 0, -1, 0), sh(&C, 3, -1, 0, -1, 0)},
  };
  printf("%-62s %12s %12s %12s %10s %8s\n", "case (8x2048x12288 bf16 = 384 MiB)", "plan MiB", "no-AG MiB", "naive MiB",
         "max send", "xfers");
  for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
    gv_xmesh_plan p;
    if (gv_xmesh_plan_make(&t, &cases[i].src, &cases[i].dst, true, &p)) return 1;
    printf("%-62s %12.1f %12.1f %12.1f %10.1f %8d\n", cases[i].name, (double)p.bytes / (1 << 20),
           (double)p.direct_bytes / (1 << 20), (double)p.naive_bytes / (1 << 20), (double)p.max_send / (1 << 20), p.nx);
    gv_xmesh_free(&p);
  }
  return 0;
}
