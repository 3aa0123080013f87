/* cluster.c — reads cluster descriptions (docs/cluster.md) from the
 * embedded presets or a JSON file, checking every field: a bad file gives
 * one error line naming the file and the field, never a half-filled model.
 * It must never compute costs: cost.c does, from the numbers read here. */
#include "cluster.h"

#include <errno.h>
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "json.h"
#include "../runtime/galv_file.h"

extern const char *const gv_cluster_preset_texts[]; /* generated: cmake/embed_clusters.cmake */

/* Every field of the schema, as it is spelled in "sources". */
static const char *const known_fields[] = {
    "name", "description", "nodes", "devices_per_node", "peak_tflops", "peak_tflops.f32", "peak_tflops.bf16",
    "peak_tflops.f16", "compute_efficiency", "memory_bytes", "memory_bandwidth_gbps", "memory_efficiency",
    "intra_node", "intra_node.bus_bandwidth_gbps", "intra_node.latency_us", "inter_node",
    "inter_node.bandwidth_gbps", "inter_node.latency_us", "launch_overhead_us", "overlap_slowdown", NULL};

typedef struct {
  const char *origin;
} rd;

static int bad(const rd *r, const char *field, const char *fmt, ...) __attribute__((format(printf, 3, 4)));
static int bad(const rd *r, const char *field, const char *fmt, ...) {
  char msg[512];
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(msg, sizeof msg, fmt, ap);
  va_end(ap);
  return gv_error_plain("%s: field '%s': %s", r->origin, field, msg);
}

static int only_keys(const rd *r, const gv_json *o, const char *prefix, const char *const *keys) {
  for (int i = 0; i < o->n; i++) {
    int k = 0;
    while (keys[k] && strcmp(keys[k], o->keys[i])) k++;
    if (!keys[k]) {
      char f[256];
      snprintf(f, sizeof f, "%s%s", prefix, o->keys[i]);
      return bad(r, f, "unknown field (see docs/cluster.md)");
    }
  }
  return 0;
}

static const gv_json *member(const rd *r, const gv_json *o, const char *key, const char *path, gv_json_kind kind,
                             bool required, int *err) {
  const gv_json *j = gv_json_get(o, key);
  if (!j) {
    if (required) *err = bad(r, path, "missing (see docs/cluster.md)");
    return NULL;
  }
  if (j->kind != kind) {
    *err = bad(r, path, "line %d: expected %s, got %s", j->line, gv_json_kind_name(kind), gv_json_kind_name(j->kind));
    return NULL;
  }
  return j;
}

/* A finite number in (0, hi] ([0, hi] with zero_ok). */
static int number(const rd *r, const gv_json *o, const char *key, const char *path, bool required, bool zero_ok,
                  double hi, double *out) {
  int err = 0;
  const gv_json *j = member(r, o, key, path, GV_JSON_NUMBER, required, &err);
  if (err) return -1;
  if (!j) return 0;
  if (!isfinite(j->num) || j->num < 0 || (j->num == 0 && !zero_ok) || j->num > hi)
    return bad(r, path, "line %d: %g is out of range (expected %s 0 and <= %g)", j->line, j->num, zero_ok ? ">=" : ">", hi);
  *out = j->num;
  return 0;
}

static int integer(const rd *r, const gv_json *o, const char *key, const char *path, double hi, int64_t *out) {
  double v = 0;
  if (number(r, o, key, path, true, false, hi, &v)) return -1;
  if (v != floor(v)) return bad(r, path, "line %d: expected a positive integer, got %g", gv_json_get(o, key)->line, v);
  *out = (int64_t)v;
  return 0;
}

int gv_cluster_parse(const char *text, size_t len, const char *origin, gv_cluster *out) {
  rd r = {origin};
  char err[256];
  gv_json *root = gv_json_parse(text, len, err, sizeof err);
  if (!root) return gv_error_plain("%s: not valid JSON: %s", origin, err);
  int rc = -1, e = 0;
  gv_cluster c;
  memset(&c, 0, sizeof c);
  snprintf(c.origin, sizeof c.origin, "%s", origin);
  c.compute_efficiency = c.memory_efficiency = 1.0;
  c.overlap_slowdown = 1.0;
  const gv_json *j;
  if (root->kind != GV_JSON_OBJECT) {
    gv_error_plain("%s: field '(root)': line %d: expected an object, got %s", origin, root->line,
                   gv_json_kind_name(root->kind));
    goto done;
  }
  static const char *const top[] = {"name", "description", "nodes", "devices_per_node", "peak_tflops",
                                    "compute_efficiency", "memory_bytes", "memory_bandwidth_gbps",
                                    "memory_efficiency", "intra_node", "inter_node", "launch_overhead_us", "overlap_slowdown",
                                    "sources", NULL};
  if (only_keys(&r, root, "", top)) goto done;
  if (!(j = member(&r, root, "name", "name", GV_JSON_STRING, true, &e))) goto done;
  if (!j->str[0] || strlen(j->str) >= sizeof c.name) {
    bad(&r, "name", "line %d: expected 1 to %zu characters", j->line, sizeof c.name - 1);
    goto done;
  }
  strcpy(c.name, j->str);
  member(&r, root, "description", "description", GV_JSON_STRING, false, &e);
  if (e) goto done;
  if (integer(&r, root, "nodes", "nodes", 1e6, &c.nodes)) goto done;
  if (integer(&r, root, "devices_per_node", "devices_per_node", 1e6, &c.devices_per_node)) goto done;

  if (!(j = member(&r, root, "peak_tflops", "peak_tflops", GV_JSON_OBJECT, true, &e))) goto done;
  static const char *const dts[] = {"f32", "bf16", "f16", NULL};
  if (only_keys(&r, j, "peak_tflops.", dts)) goto done;
  for (int d = 0; d < GV_NPEAK; d++) {
    char path[64];
    snprintf(path, sizeof path, "peak_tflops.%s", dts[d]);
    if (number(&r, j, dts[d], path, true, false, 1e6, &c.peak_tflops[d])) goto done;
  }
  if (number(&r, root, "compute_efficiency", "compute_efficiency", false, false, 1, &c.compute_efficiency)) goto done;
  double mb = 0;
  if (number(&r, root, "memory_bytes", "memory_bytes", true, false, 9.0e18, &mb)) goto done;
  if (mb != floor(mb)) {
    bad(&r, "memory_bytes", "line %d: expected a whole number of bytes, got %g", gv_json_get(root, "memory_bytes")->line, mb);
    goto done;
  }
  c.memory_bytes = (int64_t)mb;
  if (number(&r, root, "memory_bandwidth_gbps", "memory_bandwidth_gbps", true, false, 1e9, &c.memory_gbps)) goto done;
  if (number(&r, root, "memory_efficiency", "memory_efficiency", false, false, 1, &c.memory_efficiency)) goto done;
  if (number(&r, root, "launch_overhead_us", "launch_overhead_us", false, true, 1e9, &c.launch_overhead_us)) goto done;
  if (number(&r, root, "overlap_slowdown", "overlap_slowdown", false, false, 100, &c.overlap_slowdown)) goto done;
  if (c.overlap_slowdown < 1) {
    bad(&r, "overlap_slowdown", "line %d: %g is out of range (expected >= 1 and <= 100)", gv_json_get(root, "overlap_slowdown")->line,
        c.overlap_slowdown);
    goto done;
  }

  if (!(j = member(&r, root, "intra_node", "intra_node", GV_JSON_OBJECT, true, &e))) goto done;
  static const char *const intra[] = {"bus_bandwidth_gbps", "latency_us", NULL};
  if (only_keys(&r, j, "intra_node.", intra)) goto done;
  if (number(&r, j, "bus_bandwidth_gbps", "intra_node.bus_bandwidth_gbps", true, false, 1e9, &c.intra_gbps)) goto done;
  if (number(&r, j, "latency_us", "intra_node.latency_us", true, true, 1e9, &c.intra_latency_us)) goto done;

  if (!(j = member(&r, root, "inter_node", "inter_node", GV_JSON_OBJECT, true, &e))) goto done;
  static const char *const inter[] = {"bandwidth_gbps", "latency_us", NULL};
  if (only_keys(&r, j, "inter_node.", inter)) goto done;
  if (number(&r, j, "bandwidth_gbps", "inter_node.bandwidth_gbps", true, false, 1e9, &c.inter_gbps)) goto done;
  if (number(&r, j, "latency_us", "inter_node.latency_us", true, true, 1e9, &c.inter_latency_us)) goto done;

  /* sources: field path -> where the number comes from (strings only). */
  const gv_json *s = member(&r, root, "sources", "sources", GV_JSON_OBJECT, false, &e);
  if (e) goto done;
  for (int i = 0; s && i < s->n; i++) {
    char path[256];
    snprintf(path, sizeof path, "sources.%s", s->keys[i]);
    int k = 0;
    while (known_fields[k] && strcmp(known_fields[k], s->keys[i])) k++;
    if (!known_fields[k]) { bad(&r, path, "line %d: names no field of the schema", s->items[i].line); goto done; }
    if (s->items[i].kind != GV_JSON_STRING || !s->items[i].str[0]) {
      bad(&r, path, "line %d: expected a non-empty string", s->items[i].line);
      goto done;
    }
  }
  if (gv_cluster_devices(&c) > 1000000) { bad(&r, "nodes", "more than 1000000 devices"); goto done; }
  *out = c;
  rc = 0;
done:
  gv_json_free(root);
  return rc;
}

const char *gv_cluster_preset_text(const char *name) {
  for (int i = 0; gv_cluster_preset_names[i]; i++)
    if (!strcmp(gv_cluster_preset_names[i], name)) return gv_cluster_preset_texts[i];
  return NULL;
}

int gv_cluster_load(const char *spec, gv_cluster *out) {
  size_t n = strlen(spec);
  bool file = strchr(spec, '/') || (n > 5 && !strcmp(spec + n - 5, ".json"));
  if (!file) {
    const char *t = gv_cluster_preset_text(spec);
    if (!t) {
      char known[512] = "";
      for (int i = 0; gv_cluster_preset_names[i]; i++)
        snprintf(known + strlen(known), sizeof known - strlen(known), "%s%s", i ? ", " : "", gv_cluster_preset_names[i]);
      return gv_error_plain("--cluster %s: no such preset (known: %s) and not a .json file", spec, known);
    }
    char origin[256];
    snprintf(origin, sizeof origin, "preset %s (data/clusters/%s.json)", spec, spec);
    return gv_cluster_parse(t, strlen(t), origin, out);
  }
  char *buf = NULL, err[256];
  size_t len = 0; /* a regular file of at most 16 MiB (not /dev/zero, not a directory) */
  if (galv_read_whole(spec, 16u << 20, &buf, &len, err, sizeof err))
    return gv_error_plain("%s: cannot read cluster file: %s", spec, err);
  int rc = gv_cluster_parse(buf, len, spec, out);
  free(buf);
  return rc;
}

int64_t gv_cluster_devices(const gv_cluster *c) { return c->nodes * c->devices_per_node; }

double gv_cluster_flops(const gv_cluster *c, gv_dtype dt) {
  int k = dt == GV_DT_BF16 ? GV_PEAK_BF16 : dt == GV_DT_F16 ? GV_PEAK_F16 : GV_PEAK_F32;
  return c->peak_tflops[k] * 1e12 * c->compute_efficiency;
}

void gv_cluster_describe(const gv_cluster *c, void *file) {
  fprintf((FILE *)file,
          "%s: %lld node%s x %lld devices; per device f32 %g / bf16 %g / f16 %g TFLOP/s (x%g achievable), "
          "%.1f GiB at %g GB/s (x%g); intra-node bus %g GB/s, %g us; inter-node %g GB/s per device, %g us; launch %g us\n",
          c->name, (long long)c->nodes, c->nodes == 1 ? "" : "s", (long long)c->devices_per_node,
          c->peak_tflops[GV_PEAK_F32], c->peak_tflops[GV_PEAK_BF16], c->peak_tflops[GV_PEAK_F16],
          c->compute_efficiency, (double)c->memory_bytes / (1u << 30), c->memory_gbps, c->memory_efficiency,
          c->intra_gbps, c->intra_latency_us, c->inter_gbps, c->inter_latency_us, c->launch_overhead_us);
}
