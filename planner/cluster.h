/* cluster.h — the cluster model: what one device computes and stores, and
 * how fast devices talk inside a node and across nodes (docs/cluster.md).
 * It is data the planner and the cost model read, loaded from a preset
 * (data/clusters/NAME.json, embedded into galvc at build time) or a file.
 * It must never hold cost formulas (cost.c) or pass logic. */
#ifndef GALV_CLUSTER_H
#define GALV_CLUSTER_H

#include <stdbool.h>
#include <stdint.h>

#include "ir/ir.h"

/* Compute peaks kept per dtype; other dtypes use f32's (cost.c). */
typedef enum { GV_PEAK_F32, GV_PEAK_BF16, GV_PEAK_F16, GV_NPEAK } gv_peak_dtype;

typedef struct {
  char name[64];
  char origin[512];             /* "preset h100-sxm" or the file's path: for messages */
  int64_t nodes;                /* >= 1 */
  int64_t devices_per_node;     /* >= 1 */
  double peak_tflops[GV_NPEAK]; /* dense peak per device, TFLOP/s (1e12) */
  double compute_efficiency;    /* achievable fraction of peak_tflops (0, 1], default 1 */
  int64_t memory_bytes;         /* per device */
  double memory_gbps;           /* device memory bandwidth, GB/s (1e9 bytes/s) */
  double memory_efficiency;     /* achievable fraction of memory_gbps (0, 1], default 1 */
  double intra_gbps;            /* NCCL bus bandwidth inside a node, GB/s */
  double intra_latency_us;      /* per collective step inside a node */
  double inter_gbps;            /* network bandwidth per device across nodes, GB/s */
  double inter_latency_us;      /* per collective step across nodes */
  double launch_overhead_us;    /* fixed host time per kernel launch (optional, default 0) */
  double overlap_slowdown;      /* compute overlapped with communication runs this many times slower
                                   (optional, >= 1, default 1; cost.c gv_cost_timeline) */
  bool fused_attention;         /* not from the file: the driver sets it for a target that runs attention fused
                                   (cuda, fp32 storage; cost.h gv_cost_attention_chains) */
} gv_cluster;

/* Loads spec: a preset name (gv_cluster_preset_names) or a path to a JSON
 * file (anything with a '/' or ending in .json). Returns 0, or -1 after one
 * error line naming the file (or preset) and the field. */
int gv_cluster_load(const char *spec, gv_cluster *out);
/* Parses JSON text; origin names it in errors. */
int gv_cluster_parse(const char *text, size_t len, const char *origin, gv_cluster *out);
/* The embedded presets, NULL-terminated, and their JSON text. */
extern const char *const gv_cluster_preset_names[];
const char *gv_cluster_preset_text(const char *name);
/* Devices in the cluster: nodes * devices_per_node. */
int64_t gv_cluster_devices(const gv_cluster *c);
/* Peak FLOP/s (not TFLOP/s) for a dtype, efficiency applied. */
double gv_cluster_flops(const gv_cluster *c, gv_dtype dt);
/* One line: "h100-sxm: 1 x 8 devices, f32 67 / bf16 989 TFLOP/s, 80.0 GiB at 3350 GB/s, ..." */
void gv_cluster_describe(const gv_cluster *c, void *file);

#endif
