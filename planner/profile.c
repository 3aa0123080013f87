/* profile.c — reads measured per-layer figures (planner/profile.h,
 * docs/planner.md "Profiles"): Galvatron's profiled inputs and galvc's own
 * profile format. Every field is checked; a bad file gives one error line
 * naming the file and the field (and its JSON line), never a half-filled
 * profile. It must never compute plan costs: plan_sharding.c applies the
 * figures read here. */
#include "profile.h"

#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "ir/ir.h"
#include "json.h"
#include "../runtime/galv_file.h"

enum { GV_PROFILE_FILE_MAX = 16 << 20 };
#define MIB 1048576.0

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
      return bad(r, f, "line %d: unknown field (see docs/planner.md, \"Profiles\")", o->items[i].line);
    }
  }
  return 0;
}

/* The member key of o (path names it), of the given kind; NULL when absent
 * (an error when required, *err set) or of another kind (*err set). */
static const gv_json *member(const rd *r, const gv_json *o, const char *key, const char *path, gv_json_kind kind,
                             bool required, int *err) {
  const gv_json *j = gv_json_get(o, key);
  if (!j) {
    if (required) *err = bad(r, path, "missing (see docs/planner.md, \"Profiles\")");
    return NULL;
  }
  if (j->kind != kind) {
    *err = bad(r, path, "line %d: expected %s, got %s", j->line, gv_json_kind_name(kind), gv_json_kind_name(j->kind));
    return NULL;
  }
  return j;
}

/* A finite number in [0, hi] (in (0, hi] unless zero_ok); absent and not
 * required: *out unchanged. */
static int number(const rd *r, const gv_json *o, const char *key, const char *path, bool required, bool zero_ok, double hi,
                  double *out) {
  int err = 0;
  const gv_json *j = member(r, o, key, path, GV_JSON_NUMBER, required, &err);
  if (err) return -1;
  if (!j) return 0;
  if (!isfinite(j->num) || j->num < 0 || (j->num == 0 && !zero_ok) || j->num > hi)
    return bad(r, path, "line %d: %g is out of range (expected %s 0 and <= %g)", j->line, j->num, zero_ok ? ">=" : ">", hi);
  *out = j->num;
  return 0;
}

/* A positive integer <= hi; absent and not required: *out unchanged. */
static int integer(const rd *r, const gv_json *o, const char *key, const char *path, bool required, double hi, int64_t *out) {
  double v = -1;
  if (number(r, o, key, path, required, false, hi, &v)) return -1;
  if (v < 0) return 0;
  if (v != floor(v)) return bad(r, path, "line %d: expected a positive integer, got %g", gv_json_get(o, key)->line, v);
  *out = (int64_t)v;
  return 0;
}

/* ---------------------------------------------------------------- Galvatron (the anchor's planner_inputs.json) */

/* A fit {a_ms_per_sample, b_ms_const}: fwd = a * b / tp + c. */
static int galv_fit(const rd *r, const gv_json *o, const char *path, gv_profile_kind *k) {
  char p[128];
  snprintf(p, sizeof p, "%s.a_ms_per_sample", path);
  if (number(r, o, "a_ms_per_sample", p, true, false, 1e9, &k->fit_a)) return -1;
  snprintf(p, sizeof p, "%s.b_ms_const", path);
  if (number(r, o, "b_ms_const", p, true, true, 1e9, &k->fit_c)) return -1;
  k->fit = k->present = true;
  snprintf(k->field, sizeof k->field, "%s", path);
  return 0;
}

static int parse_galvatron(const rd *r, const gv_json *root, gv_profile *p) {
  int e = 0;
  const gv_json *j, *model = member(r, root, "model", "model", GV_JSON_OBJECT, true, &e);
  if (!model) return -1;
  if (integer(r, model, "num_layers", "model.num_layers", true, 1e6, &p->layers)) return -1;
  if (integer(r, model, "hidden_size", "model.hidden_size", true, 1e9, &p->hidden)) return -1;
  if (integer(r, model, "seq_length", "model.seq_length", true, 1e9, &p->seq)) return -1;
  if (integer(r, model, "vocab_size", "model.vocab_size", false, 1e12, &p->vocab)) return -1;
  const gv_json *cm = member(r, root, "compute_ms", "compute_ms", GV_JSON_OBJECT, true, &e);
  if (!cm) return -1;
  if (!(j = member(r, cm, "per_layer_fwd_ms_fit", "compute_ms.per_layer_fwd_ms_fit", GV_JSON_OBJECT, true, &e))) return -1;
  if (galv_fit(r, j, "compute_ms.per_layer_fwd_ms_fit", &p->layer)) return -1;
  if ((j = member(r, cm, "embed_lmhead_fwd_ms_fit", "compute_ms.embed_lmhead_fwd_ms_fit", GV_JSON_OBJECT, false, &e)) &&
      galv_fit(r, j, "compute_ms.embed_lmhead_fwd_ms_fit", &p->outer))
    return -1;
  if (e) return -1;
  double bwd = 0, rec = -1;
  if (number(r, cm, "bwd_over_fwd", "compute_ms.bwd_over_fwd", true, false, 1e3, &bwd)) return -1;
  if (number(r, cm, "recompute_extra_fwd", "compute_ms.recompute_extra_fwd", true, true, 1e3, &rec)) return -1;
  p->layer.bwd_over_fwd = p->outer.bwd_over_fwd = bwd;
  p->layer.rec_over_fwd = p->outer.rec_over_fwd = rec;
  p->layer.ckpt_per_sample = p->outer.ckpt_per_sample = -1;
  const gv_json *mm = member(r, root, "memory_MB", "memory_MB", GV_JSON_OBJECT, false, &e);
  if (e) return -1;
  const char *ap = "memory_MB.per_layer_activation_MB_per_sample_by_tp_sp";
  const gv_json *act = mm ? member(r, mm, "per_layer_activation_MB_per_sample_by_tp_sp", ap, GV_JSON_OBJECT, false, &e) : NULL;
  if (e) return -1;
  for (int i = 0; act && i < act->n; i++) {
    char path[160];
    snprintf(path, sizeof path, "%s.%s", ap, act->keys[i]);
    double mb = 0;
    if (number(r, act, act->keys[i], path, true, false, 1e9, &mb)) return -1;
    if (!strcmp(act->keys[i], "checkpoint")) {
      p->layer.ckpt_per_sample = mb * MIB;
      continue;
    }
    char *end;
    long long tp = strtoll(act->keys[i], &end, 10);
    if (end == act->keys[i] || *end || tp < 1 || tp > 1 << 20)
      return bad(r, path, "line %d: expected a tensor-parallel degree (a positive integer) or \"checkpoint\" as the key",
                 act->items[i].line);
    if (p->layer.nact == GV_PROFILE_MAX_TP) return bad(r, path, "line %d: more than %d degrees", act->items[i].line, GV_PROFILE_MAX_TP);
    p->layer.act_tp[p->layer.nact] = tp;
    p->layer.act_per_sample[p->layer.nact++] = mb * MIB;
  }
  if (act && !p->layer.nact) return bad(r, ap, "line %d: no tensor-parallel degree", act->line);
  return 0;
}

/* ---------------------------------------------------------------- galvc-profile, version 1 */

static int parse_points(const rd *r, const gv_json *o, const char *name, gv_profile_kind *k) {
  static const char *const kkeys[] = {"points", NULL};
  char path[160];
  snprintf(path, sizeof path, "%s.", name);
  if (only_keys(r, o, path, kkeys)) return -1;
  int e = 0;
  snprintf(path, sizeof path, "%s.points", name);
  const gv_json *a = member(r, o, "points", path, GV_JSON_ARRAY, true, &e);
  if (!a) return -1;
  if (a->n < 1 || a->n > GV_PROFILE_MAX_POINTS)
    return bad(r, path, "line %d: expected 1 to %d points, got %d", a->line, GV_PROFILE_MAX_POINTS, a->n);
  static const char *const pkeys[] = {"microbatch", "tp", "forward_ms", "backward_ms", "recompute_ms", "activation_bytes",
                                      "checkpoint_bytes", NULL};
  for (int i = 0; i < a->n; i++) {
    const gv_json *q = &a->items[i];
    char base[96], f[160];
    snprintf(base, sizeof base, "%s.points[%d]", name, i);
    if (q->kind != GV_JSON_OBJECT) return bad(r, base, "line %d: expected an object, got %s", q->line, gv_json_kind_name(q->kind));
    snprintf(f, sizeof f, "%s.", base);
    if (only_keys(r, q, f, pkeys)) return -1;
    gv_profile_point *pt = &k->pts[i];
    pt->rec_ms = pt->act_bytes = pt->ckpt_bytes = -1;
#define FIELD(key) (snprintf(f, sizeof f, "%s.%s", base, key), f)
    if (integer(r, q, "microbatch", FIELD("microbatch"), true, 1e9, &pt->b)) return -1;
    if (integer(r, q, "tp", FIELD("tp"), true, 1 << 20, &pt->tp)) return -1;
    if (number(r, q, "forward_ms", FIELD("forward_ms"), true, false, 1e9, &pt->fwd_ms)) return -1;
    pt->bwd_ms = -1; /* absent (an inference program's profile): the planner keeps the cost model's backward */
    if (number(r, q, "backward_ms", FIELD("backward_ms"), false, true, 1e9, &pt->bwd_ms)) return -1;
    if (number(r, q, "recompute_ms", FIELD("recompute_ms"), false, true, 1e9, &pt->rec_ms)) return -1;
    if (number(r, q, "activation_bytes", FIELD("activation_bytes"), false, true, 9e18, &pt->act_bytes)) return -1;
    if (number(r, q, "checkpoint_bytes", FIELD("checkpoint_bytes"), false, true, 9e18, &pt->ckpt_bytes)) return -1;
#undef FIELD
    for (int j = 0; j < i; j++)
      if (k->pts[j].b == pt->b && k->pts[j].tp == pt->tp)
        return bad(r, base, "line %d: a second point at microbatch %lld, tp %lld", q->line, (long long)pt->b, (long long)pt->tp);
  }
  k->npts = a->n;
  k->present = true;
  k->ckpt_per_sample = -1;
  snprintf(k->field, sizeof k->field, "%s.points", name);
  return 0;
}

static int parse_galvc(const rd *r, const gv_json *root, gv_profile *p) {
  static const char *const top[] = {"format", "version", "source", "model", "layer", "outer", NULL};
  if (only_keys(r, root, "", top)) return -1;
  int e = 0;
  double v = 0;
  if (number(r, root, "version", "version", true, false, 1e9, &v)) return -1;
  if (v != 1) return bad(r, "version", "line %d: version %g is not one this galvc reads (1)", gv_json_get(root, "version")->line, v);
  member(r, root, "source", "source", GV_JSON_STRING, false, &e);
  if (e) return -1;
  const gv_json *m = member(r, root, "model", "model", GV_JSON_OBJECT, false, &e);
  if (e) return -1;
  if (m) {
    static const char *const mk[] = {"layers", "hidden", "seq", "vocab", NULL};
    if (only_keys(r, m, "model.", mk)) return -1;
    if (integer(r, m, "layers", "model.layers", false, 1e6, &p->layers) || integer(r, m, "hidden", "model.hidden", false, 1e9, &p->hidden) ||
        integer(r, m, "seq", "model.seq", false, 1e9, &p->seq) || integer(r, m, "vocab", "model.vocab", false, 1e12, &p->vocab))
      return -1;
  }
  const gv_json *k;
  if ((k = member(r, root, "layer", "layer", GV_JSON_OBJECT, false, &e)) && parse_points(r, k, "layer", &p->layer)) return -1;
  if (e) return -1;
  if ((k = member(r, root, "outer", "outer", GV_JSON_OBJECT, false, &e)) && parse_points(r, k, "outer", &p->outer)) return -1;
  if (e) return -1;
  if (!p->layer.present && !p->outer.present) return bad(r, "layer", "missing: a profile gives \"layer\", \"outer\" or both");
  return 0;
}

int gv_profile_parse(const char *text, size_t len, const char *origin, gv_profile *out) {
  rd r = {origin};
  char err[256];
  gv_json *root = gv_json_parse(text, len, err, sizeof err);
  if (!root) return gv_error_plain("%s: not valid JSON: %s", origin, err);
  int rc = -1;
  gv_profile *p = calloc(1, sizeof *p);
  if (!p) {
    gv_error_plain("%s: out of memory", origin);
    goto done;
  }
  snprintf(p->path, sizeof p->path, "%s", origin);
  if (root->kind != GV_JSON_OBJECT) {
    gv_error_plain("%s: field '(root)': line %d: expected an object, got %s", origin, root->line, gv_json_kind_name(root->kind));
    goto done;
  }
  const gv_json *fmt = gv_json_get(root, "format");
  if (fmt) {
    if (fmt->kind != GV_JSON_STRING || strcmp(fmt->str, "galvc-profile")) {
      bad(&r, "format", "line %d: expected \"galvc-profile\"", fmt->line);
      goto done;
    }
    strcpy(p->format, "galvc");
    if (parse_galvc(&r, root, p)) goto done;
  } else if (gv_json_get(root, "compute_ms")) {
    strcpy(p->format, "galvatron");
    if (parse_galvatron(&r, root, p)) goto done;
  } else {
    gv_error_plain("%s: field 'format': missing: neither a galvc profile (\"format\": \"galvc-profile\") nor Galvatron's profiled "
                   "inputs (\"compute_ms\"; docs/planner.md, \"Profiles\")", origin);
    goto done;
  }
  *out = *p;
  rc = 0;
done:
  free(p);
  gv_json_free(root);
  return rc;
}

int gv_profile_load(const char *path, gv_profile *out) {
  char *buf = NULL, err[256];
  size_t len = 0;
  if (galv_read_whole(path, GV_PROFILE_FILE_MAX, &buf, &len, err, sizeof err))
    return gv_error_plain("%s: cannot read profile: %s", path, err);
  int rc = gv_profile_parse(buf, len, path, out);
  free(buf);
  return rc;
}

int gv_profile_check(const gv_profile *p, int64_t layers, int64_t hidden, int64_t seq, int64_t vocab) {
  bool g = !strcmp(p->format, "galvatron");
  struct {
    int64_t prof, model;
    const char *field, *what;
  } c[4] = {{p->layers, layers, g ? "model.num_layers" : "model.layers", "layers"},
            {p->hidden, hidden, g ? "model.hidden_size" : "model.hidden", "hidden size"},
            {p->seq, seq, g ? "model.seq_length" : "model.seq", "sequence length"},
            {p->vocab, vocab, g ? "model.vocab_size" : "model.vocab", "vocabulary"}};
  for (int i = 0; i < 4; i++)
    if (c[i].prof && c[i].model && c[i].prof != c[i].model)
      return gv_error_plain("%s: field '%s': the profile was measured with %s %lld, the model has %lld", p->path, c[i].field,
                            c[i].what, (long long)c[i].prof, (long long)c[i].model);
  return 0;
}

/* ---------------------------------------------------------------- queries */

/* Piecewise linear through the points of tp (sorted by b) at b, extended by
 * the end segments; one point: proportional to b. sel: 0 fwd, 1 bwd, 2 rec,
 * 3 act, 4 ckpt. Returns 0, or 1 when no point at tp gives the figure. */
static int interp(const gv_profile_kind *k, int64_t b, int64_t tp, int sel, double *out) {
  int idx[GV_PROFILE_MAX_POINTS], n = 0;
  for (int i = 0; i < k->npts; i++) {
    const gv_profile_point *q = &k->pts[i];
    double v = sel == 0 ? q->fwd_ms : sel == 1 ? q->bwd_ms : sel == 2 ? q->rec_ms : sel == 3 ? q->act_bytes : q->ckpt_bytes;
    if (q->tp != tp || v < 0) continue;
    int j = n++;
    while (j > 0 && k->pts[idx[j - 1]].b > q->b) idx[j] = idx[j - 1], j--;
    idx[j] = i;
  }
  if (!n) return 1;
#define VAL(i) (sel == 0 ? k->pts[i].fwd_ms : sel == 1 ? k->pts[i].bwd_ms : sel == 2 ? k->pts[i].rec_ms : sel == 3 ? k->pts[i].act_bytes : k->pts[i].ckpt_bytes)
  if (n == 1) {
    *out = VAL(idx[0]) * (double)b / (double)k->pts[idx[0]].b;
    return 0;
  }
  int lo = 0;
  while (lo < n - 2 && k->pts[idx[lo + 1]].b <= b) lo++;
  const gv_profile_point *x = &k->pts[idx[lo]], *y = &k->pts[idx[lo + 1]];
  double vx = VAL(idx[lo]), vy = VAL(idx[lo + 1]);
#undef VAL
  double v = vx + (vy - vx) * (double)(b - x->b) / (double)(y->b - x->b);
  *out = v > 0 ? v : 0;
  return 0;
}

int gv_profile_time(const gv_profile_kind *k, int64_t b, int64_t tp, double *fwd, double *bwd, double *rec) {
  if (!k->present) return 1;
  if (k->fit) {
    *fwd = k->fit_a * (double)b / (double)tp + k->fit_c;
    *bwd = k->bwd_over_fwd * *fwd;
    *rec = k->rec_over_fwd * *fwd;
    return 0;
  }
  if (interp(k, b, tp, 0, fwd)) return 1;
  if (interp(k, b, tp, 1, bwd)) *bwd = -1;    /* not measured: the cost model's */
  if (interp(k, b, tp, 2, rec)) *rec = *fwd; /* recomputation runs the forward again */
  return 0;
}

int gv_profile_act(const gv_profile_kind *k, int64_t b, int64_t tp, bool recomputed, double *bytes) {
  if (!k->present) return 1;
  if (k->fit) {
    if (recomputed) {
      if (k->ckpt_per_sample < 0) return 1;
      *bytes = k->ckpt_per_sample * (double)b;
      return 0;
    }
    for (int i = 0; i < k->nact; i++)
      if (k->act_tp[i] == tp) {
        *bytes = k->act_per_sample[i] * (double)b;
        return 0;
      }
    return 1;
  }
  return interp(k, b, tp, recomputed ? 4 : 3, bytes);
}

bool gv_profile_has_tp(const gv_profile_kind *k, int64_t tp, bool *mem) {
  double f, b, r, a;
  bool t = gv_profile_time(k, 1, tp, &f, &b, &r) == 0;
  if (mem) *mem = gv_profile_act(k, 1, tp, false, &a) == 0;
  return t;
}
