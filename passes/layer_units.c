/* layer_units.c — the planner's units (outer part, layers) found by the
 * structure of the forward program: repeated isomorphic blocks
 * (layer_units.h, docs/planner.md "Search space"). Names play no part. */
#define _POSIX_C_SOURCE 200809L
#include "layer_units.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* ---------------------------------------------------------------- location table */

static const uint64_t HASH0 = 1469598103934665603ull;
static uint64_t hash_more(uint64_t h, const char *s, size_t n) { /* FNV-1a: a prefix's hash continues to the whole */
  for (size_t i = 0; i < n; i++) h = (h ^ (unsigned char)s[i]) * 1099511628211ull;
  return h;
}
static uint64_t key_hash(uint64_t h, char ns) { return h * 31 + (unsigned char)ns; }

/* The slot of key (ns: 'n' node location, 'p' parameter name; s[0..len), its key_hash h). */
static int slot(const gv_layer_units *u, char ns, const char *s, size_t len, uint64_t h) {
  int i = (int)(h & (uint64_t)(u->cap - 1));
  while (u->key[i] && !(u->khash[i] == h && u->key[i][0] == ns && u->klen[i] == len && !memcmp(u->key[i] + 1, s, len)))
    i = (i + 1) & (u->cap - 1);
  return i;
}

/* Adds key -> unit unless the key is there (the first one stands). */
static int put(gv_layer_units *u, char ns, const char *s, int unit) {
  if (!s) return 0;
  size_t len = strlen(s);
  uint64_t h = key_hash(hash_more(HASH0, s, len), ns);
  int i = slot(u, ns, s, len, h);
  if (u->key[i]) return 0;
  if (!(u->key[i] = malloc(len + 2))) return -1;
  u->key[i][0] = ns;
  memcpy(u->key[i] + 1, s, len + 1);
  u->val[i] = unit;
  u->khash[i] = h, u->klen[i] = len;
  u->n++;
  return 0;
}

static int get(const gv_layer_units *u, char ns, const char *s, size_t len, uint64_t h) {
  if (!u->cap) return -1;
  int i = slot(u, ns, s, len, key_hash(h, ns));
  return u->key[i] ? u->val[i] : -1;
}

static size_t ptr_slot(const gv_layer_units *u, const char *p) {
  uint64_t x = (uint64_t)(uintptr_t)p;
  x ^= x >> 33;
  x *= 0xff51afd7ed558ccdull;
  x ^= x >> 33;
  size_t i = (size_t)x & (size_t)(u->pcap - 1);
  while (u->pkey[i] && u->pkey[i] != p) i = (i + 1) & (size_t)(u->pcap - 1);
  return i;
}

static int loc_by_name(const gv_layer_units *u, const char *loc);

int gv_layer_units_loc(const gv_layer_units *u, const char *loc) {
  if (!u || !loc || !u->nl) return 0;
  if (u->bound && u->pcap) {
    size_t i = ptr_slot(u, loc);
    if (u->pkey[i]) return u->pval[i];
  }
  return loc_by_name(u, loc);
}

static int bind_block(gv_layer_units *u, const gv_block *b, int *n) {
  for (const gv_op *op = b->first; op; op = op->next) {
    if (op->loc) {
      size_t i = ptr_slot(u, op->loc);
      if (!u->pkey[i]) u->pkey[i] = op->loc, u->pval[i] = loc_by_name(u, op->loc), ++*n;
    }
    for (int r = 0; r < op->nregions; r++) bind_block(u, op->regions[r], n);
  }
  return 0;
}

static int count_ops(const gv_block *b) {
  int n = 0;
  for (const gv_op *op = b->first; op; op = op->next) {
    n++;
    for (int r = 0; r < op->nregions; r++) n += count_ops(op->regions[r]);
  }
  return n;
}

int gv_layer_units_bind(gv_layer_units *u, const gv_module *m) {
  free(u->pkey), free(u->pval);
  u->pkey = NULL, u->pval = NULL, u->pcap = 0, u->bound = false;
  if (!u->nl || !m || !m->main || !m->main->body) return 0;
  int nops = count_ops(m->main->body), cap = 16, n = 0;
  while (cap < 2 * (nops + 1)) cap *= 2;
  u->pkey = calloc((size_t)cap, sizeof *u->pkey);
  u->pval = calloc((size_t)cap, sizeof *u->pval);
  if (!u->pkey || !u->pval) {
    free(u->pkey), free(u->pval);
    u->pkey = NULL, u->pval = NULL;
    fprintf(stderr, "%s: error: out of memory\n", gv_progname);
    return -1;
  }
  u->pcap = cap;
  return bind_block(u, m->main->body, &n);
}

static int loc_by_name(const gv_layer_units *u, const char *loc) {
  char ns = 'n';
  const char *s = loc;
  if (!strncmp(loc, "optimizer/", 10)) { /* optimizer/OPT/PARAM */
    const char *q = strchr(loc + 10, '/');
    if (!q) return 0;
    s = q + 1, ns = 'p';
  } else if (!strncmp(loc, "accumulate/", 11)) /* accumulate/PARAM: its gradient's sum over the microbatches */
    s = loc + 11, ns = 'p';
  /* the location, then without its last /component, ...: the prefixes ending before each '/', longest first,
   * their hashes from one pass */
  enum { NCUT = 32 };
  size_t cut[NCUT];
  uint64_t ch[NCUT];
  int nc = 0;
  uint64_t h = HASH0;
  size_t len = 0;
  for (;; len++) {
    unsigned char c = (unsigned char)s[len];
    if (!c) break;
    if (c == '/') {
      if (nc == NCUT) memmove(cut, cut + 1, (NCUT - 1) * sizeof *cut), memmove(ch, ch + 1, (NCUT - 1) * sizeof *ch), nc--;
      cut[nc] = len, ch[nc++] = h;
    }
    h = (h ^ c) * 1099511628211ull;
  }
  int r = get(u, ns, s, len, h);
  if (r >= 0) return r;
  for (int k = nc - 1; k >= 0; k--)
    if ((r = get(u, ns, s, cut[k], ch[k])) >= 0) return r;
  if (nc < NCUT || !cut[0]) return 0;
  /* more cuts than kept: the shorter prefixes hashed each on its own */
  for (len = cut[0]; len;) {
    while (len && s[len - 1] != '/') len--;
    if (!len) return 0;
    len--;
    if ((r = get(u, ns, s, len, hash_more(HASH0, s, len))) >= 0) return r;
  }
  return 0;
}

/* the hint's module by its serial (a freed module's function pointer may be a later module's: galvc's
 * default search frees each point's module and imports the next, which the allocator places alike) */
static uint64_t hint_serial;
static const gv_func *hint_f;
static const gv_layer_units *hint_u;
void gv_layer_units_hint(const gv_module *m, const gv_layer_units *u) {
  hint_serial = m && u ? m->serial : 0, hint_f = m && u ? m->main : NULL, hint_u = m ? u : NULL;
}
gv_layer_units_hint_state gv_layer_units_hint_get(void) { return (gv_layer_units_hint_state){hint_serial, hint_f, hint_u}; }
void gv_layer_units_hint_put(gv_layer_units_hint_state s) {
  hint_serial = s.serial, hint_f = s.f, hint_u = s.u;
}
const gv_layer_units *gv_layer_units_for(const gv_module *m) {
  return m && m->main && hint_serial && m->serial == hint_serial && m->main == hint_f ? hint_u : NULL;
}

void gv_layer_units_free(gv_layer_units *u) {
  for (int i = 0; i < u->cap; i++) free(u->key[i]);
  free(u->key), free(u->val), free(u->khash), free(u->klen), free(u->pkey), free(u->pval), free(u->arg_unit), free(u->kind), free(u->len);
  memset(u, 0, sizeof *u);
}

/* ---------------------------------------------------------------- detection */

static bool forward_loc(const char *loc) {
  if (!loc || !strncmp(loc, "optimizer/", 10) || !strncmp(loc, "accumulate/", 11) || !strncmp(loc, "autodiff/", 9)) return false;
  size_t n = strlen(loc);
  return !(n >= 5 && !strcmp(loc + n - 5, "/grad")) && !(n >= 10 && !strcmp(loc + n - 10, "/recompute"));
}

static uint64_t mix(uint64_t h, uint64_t x) { return (h ^ x) * 1099511628211ull + (h >> 29); }

static uint64_t type_hash(uint64_t h, const gv_type *t) {
  h = mix(h, (uint64_t)t->dtype);
  h = mix(h, (uint64_t)(t->rank + 7));
  for (int d = 0; d < t->rank && d < GV_MAX_RANK; d++) h = mix(h, (uint64_t)t->dims[d]);
  return h;
}

typedef struct {
  const gv_func *f;
  int n;             /* forward ops */
  gv_op **op;        /* the forward ops in program order */
  uint64_t *h;       /* their hashes */
  int *npar;         /* prefix count of ops reading a parameter */
  int *last;         /* per op: the last forward op index reading one of its results (-1 none) */
  int *unit;         /* per op: its unit */
  int min_len;       /* the shortest block a run may have */
  struct run { int start, len, count, pre, post; } runs[64]; /* pre / post: the ops of a differing first / last block (0: none) */
  int nruns;
} finder;

static bool arg_param(const gv_func *f, const gv_value *v) {
  return v && !v->def && v->block == f->body && f->arg_is_param && f->arg_is_param[v->index];
}

/* Computed values live across the boundary before forward op b. */
static int live_at(const finder *F, int b) {
  int c = 0;
  for (int i = 0; i < b; i++) c += F->last[i] >= b;
  return c;
}

/* Whether each of the count blocks of len ops from start reads a value the
 * block before it computes (layers are chained by the residual stream;
 * parallel branches, like q / k / v projections of one input, are not). */
static bool chained(const finder *F, int start, int len, int count) {
  for (int k = 1; k < count; k++) {
    int lo = start + (k - 1) * len, hi = start + k * len;
    bool reads = false;
    for (int i = hi; i < hi + len && !reads; i++)
      for (int j = 0; j < F->op[i]->nopnds && !reads; j++) {
        const gv_value *v = F->op[i]->opnds[j];
        reads = v->def && v->id >= lo && v->id < hi;
      }
    if (!reads) return false;
  }
  return true;
}

/* A differing first block before the run of count blocks of p ops at s,
 * within ops [lo, s): the shortest window ending at s that holds the run's
 * block as a subsequence (its first and last op at the window's ends) with
 * at most half a block of extra ops, reading at most one parameter more
 * than the block (a quarter more on long blocks), that the run's first
 * block reads (T5's first layer: the block plus the relative position bias
 * it computes for the layers after it). Its op count, 0 when none. */
static int extend_before(const finder *F, int s, int p, int lo) {
  int j = p - 1, i = s - 1;
  const uint64_t *blk = F->h + s;
  if (i < lo || F->h[i] != blk[p - 1]) return 0;
  for (; i >= lo && i >= s - p - p / 2 && j >= 0; i--)
    if (F->h[i] == blk[j]) j--;
  if (j >= 0) return 0;
  int q = s - (i + 1), bpar = F->npar[s + p] - F->npar[s], extra = bpar / 4 > 1 ? bpar / 4 : 1;
  if (F->npar[s] - F->npar[s - q] > bpar + extra) return 0;
  for (int k = s; k < s + p; k++)
    for (int o = 0; o < F->op[k]->nopnds; o++) {
      const gv_value *v = F->op[k]->opnds[o];
      if (v->def && v->id >= s - q && v->id < s) return q;
    }
  return 0;
}

/* A differing last block after the run (its end e = s + count p), within
 * ops [e, hi): the shortest window from e that holds the block as a
 * subsequence, its first and last op at the window's ends, with at most
 * half a block of extras and a parameter more (a quarter on long blocks),
 * reading the run's last block. Its op count, 0 when none. */
static int extend_after(const finder *F, int s, int p, int count, int hi) {
  int e = s + p * count, j = 0, i = e;
  const uint64_t *blk = F->h + s;
  if (i >= hi || F->h[i] != blk[0]) return 0;
  for (; i < hi && i < e + p + p / 2 && j < p; i++)
    if (F->h[i] == blk[j]) j++;
  if (j < p) return 0;
  int q = i - e, bpar = F->npar[s + p] - F->npar[s], extra = bpar / 4 > 1 ? bpar / 4 : 1;
  if (F->npar[e + q] - F->npar[e] > bpar + extra) return 0;
  for (int k = e; k < e + q; k++)
    for (int o = 0; o < F->op[k]->nopnds; o++) {
      const gv_value *v = F->op[k]->opnds[o];
      if (v->def && v->id >= e - p && v->id < e) return q;
    }
  return 0;
}

/* The best run of equal blocks within ops [lo, hi). Returns false when none. */
static bool best_run(const finder *F, int lo, int hi, struct run *out) {
  int best_cov = 0, bp = 0, bs = 0, bcount = 0, bspare = 0;
  for (int p = F->min_len > 1 ? F->min_len : 1; 2 * p <= hi - lo; p++) {
    int i = lo;
    while (i + p < hi) {
      if (F->h[i] != F->h[i + p]) {
        i++;
        continue;
      }
      int j = i;
      while (j + p < hi && F->h[j] == F->h[j + p]) j++;
      int span = j - i + p, count = span / p; /* ops [i, i + span) are count blocks of p (and a rest) */
      if (count >= 2 && count * p > best_cov && F->npar[i + p] - F->npar[i] > 0 && chained(F, i, p, count)) {
        /* every block reads a parameter: the blocks are equal, so the first one tells (any rotation of the
         * slack keeps the ops, the check below picks one) */
        best_cov = count * p, bp = p, bs = i, bcount = count, bspare = span - count * p;
      }
      i = j + 1;
    }
  }
  if (!best_cov) return false;
  /* the rotation whose inner boundary (block 1 | block 2) the fewest values cross; on a tie (a layer of
   * sublayers, each ending in the residual stream) the one whose blocks extend to more differing first or
   * last blocks, then to the fewest extra ops, then the earliest */
  int start = bs, lv = -1, ext = -1, extra = 0, pre = 0, post = 0;
  for (int s = bs; s <= bs + bspare; s++) {
    if (F->npar[s + bp] - F->npar[s] <= 0 || !chained(F, s, bp, bcount)) continue;
    int c = live_at(F, s + bp), a = extend_before(F, s, bp, lo), z = extend_after(F, s, bp, bcount, hi);
    int x = (a > 0) + (z > 0), xo = (a ? a - bp : 0) + (z ? z - bp : 0);
    if (getenv("GALV_PLAN_UNITS_DUMP")) fprintf(stderr, "rotation %d p %d count %d: live %d pre %d post %d\n", s, bp, bcount, c, a, z);
    if (lv < 0 || c < lv || (c == lv && (x > ext || (x == ext && xo < extra))))
      lv = c, ext = x, extra = xo, start = s, pre = a, post = z;
  }
  out->start = start, out->len = bp, out->count = bcount, out->pre = pre, out->post = post;
  return true;
}

static void find_runs(finder *F, int lo, int hi) {
  struct run r;
  if (hi - lo < 2 * (F->min_len > 1 ? F->min_len : 1) || F->nruns == (int)(sizeof F->runs / sizeof F->runs[0]) ||
      !best_run(F, lo, hi, &r))
    return;
  if (!F->nruns) F->min_len = (r.len + 3) / 4; /* a second kind of block: at least a quarter of the first's ops */
  F->runs[F->nruns++] = r;
  find_runs(F, lo, r.start - r.pre);
  find_runs(F, r.start + r.len * r.count + r.post, hi);
}

static int cmp_run(const void *a, const void *b) {
  const struct run *x = a, *y = b;
  return (x->start > y->start) - (x->start < y->start);
}

int gv_layer_units_find(const gv_module *m, gv_layer_units *u) {
  memset(u, 0, sizeof *u);
  const gv_func *f = m->main;
  const gv_block *b = f->body;
  int nargs = b->nargs, nops = 0;
  for (const gv_op *op = b->first; op; op = op->next) nops++;
  finder F = {.f = f};
  F.op = calloc((size_t)nops + 1, sizeof *F.op);
  F.h = calloc((size_t)nops + 1, sizeof *F.h);
  F.npar = calloc((size_t)nops + 2, sizeof *F.npar);
  F.last = calloc((size_t)nops + 1, sizeof *F.last);
  F.unit = calloc((size_t)nops + 1, sizeof *F.unit);
  u->nargs = nargs;
  u->arg_unit = calloc((size_t)nargs + 1, sizeof *u->arg_unit);
  int rc = -1;
  if (!F.op || !F.h || !F.npar || !F.last || !F.unit || !u->arg_unit) goto out;
  /* the forward ops of the first microbatch (the accumulate pass repeats the forward, its copies at the
   * same locations, each after the backward of the one before: the forward ops before the first backward
   * op); scratch ids: -1, the op index of each result */
  /* Tried twice when the first finds no run: then without the ops computed from the data inputs and constants alone
   * (no parameter, nothing a parameter reaches: a mask's comparison), which belong to no layer; a model whose first
   * layer holds such an op the later ones share (DistilBERT's `mask == 0`, merged into its first use) has no two
   * equal blocks otherwise. The first try keeps them, as every model with runs found has its blocks so. */
  bool *inv = NULL;
  for (int attempt = 0; attempt < 2; attempt++) {
  if (attempt) {
    if (F.nruns || !(inv = calloc((size_t)nops + 1, sizeof *inv))) break;
    int k = 0;
    for (gv_op *op = b->first; op; op = op->next) op->id = k++;
    for (gv_op *op = b->first; op; op = op->next) {
      bool v = op->code != GV_OP_CONSTANT && !op->nregions && op->nopnds > 0;
      for (int o = 0; o < op->nopnds && v; o++) {
        const gv_value *x = op->opnds[o];
        if (x->def) v = x->def->parent == b && (x->def->code == GV_OP_CONSTANT || inv[x->def->id]);
        else v = x->block == b && !arg_param(f, x);
      }
      inv[op->id] = v;
    }
    F.n = 0, F.min_len = 0, F.nruns = 0;
  }
  bool bwd = false;
  int seq = 0;
  for (gv_op *op = b->first; op; op = op->next, seq++) {
    op->id = -1;
    for (int r = 0; r < op->nres; r++) op->res[r]->id = -1;
    size_t ll = op->loc ? strlen(op->loc) : 0;
    bwd |= op->code != GV_OP_CONSTANT && ll >= 5 && !strcmp(op->loc + ll - 5, "/grad"); /* a constant marks nothing: the
                                                                                       * accumulate pass keeps the body's
                                                                                       * ahead of every microbatch */
    if (bwd || op->code == GV_OP_CONSTANT || !forward_loc(op->loc) || (inv && inv[seq])) continue;
    op->id = F.n;
    for (int r = 0; r < op->nres; r++) op->res[r]->id = F.n;
    F.op[F.n++] = op;
  }
  for (int i = 0; i < nargs; i++) b->args[i]->id = -1;
  for (int i = 0; i < F.n; i++) {
    const gv_op *op = F.op[i];
    uint64_t h = mix(1469598103934665603ull, (uint64_t)op->code + 1);
    h = mix(h, (uint64_t)op->nopnds), h = mix(h, (uint64_t)op->nres);
    for (int r = 0; r < op->nres; r++) h = type_hash(h, &op->res[r]->type);
    bool par = false;
    F.last[i] = -1;
    for (int k = 0; k < op->nopnds; k++) {
      const gv_value *v = op->opnds[k];
      /* a parameter by its type; any other value alike, computed or an input argument: a pipeline stage's first
       * layer reads its input ("pp.X", an argument) where the next layers read the value the layer before computed,
       * and is the same block */
      if (arg_param(f, v)) h = type_hash(mix(h, 1), &v->type), par = true;
      else h = mix(h, 3);
      if (v->def && v->id >= 0 && v->id < i) F.last[v->id] = i;
    }
    F.h[i] = h;
    F.npar[i + 1] = F.npar[i] + par;
  }
  find_runs(&F, 0, F.n);
  }
  free(inv);
  qsort(F.runs, (size_t)F.nruns, sizeof F.runs[0], cmp_run);
  for (int r = 0; r < F.nruns; r++) u->nl += F.runs[r].count + (F.runs[r].pre > 0) + (F.runs[r].post > 0);
  u->nkinds = F.nruns;
  u->kind = calloc((size_t)u->nl + 1, sizeof *u->kind);
  u->len = calloc((size_t)u->nl + 1, sizeof *u->len);
  if (!u->kind || !u->len) goto out;
  for (int r = 0, l = 0; r < F.nruns; r++) {
    const struct run *R = &F.runs[r];
    if (R->pre) {
      u->kind[l] = r, u->len[l] = R->pre;
      for (int i = R->start - R->pre; i < R->start; i++) F.unit[i] = l + 1;
      l++;
    }
    for (int k = 0; k < R->count; k++, l++) {
      u->kind[l] = r, u->len[l] = R->len;
      for (int i = 0; i < R->len; i++) F.unit[R->start + k * R->len + i] = l + 1;
    }
    if (R->post) {
      int e = R->start + R->len * R->count;
      u->kind[l] = r, u->len[l] = R->post;
      for (int i = e; i < e + R->post; i++) F.unit[i] = l + 1;
      l++;
    }
  }
  if (getenv("GALV_PLAN_UNITS_DUMP"))
    for (int i = 0; i < F.n; i++) fprintf(stderr, "op %d unit %d %s %s h%llx\n", i, F.unit[i], gv_ops[F.op[i]->code].name, F.op[i]->loc, (unsigned long long)(F.h[i] & 0xffff));
  /* parameters: the unit of their first forward reader; optimizer state: its parameter's (opt.K:PARAM) */
  for (int i = 0; i < nargs; i++) u->arg_unit[i] = -1;
  for (int i = 0; i < F.n; i++)
    for (int k = 0; k < F.op[i]->nopnds; k++) {
      const gv_value *v = F.op[i]->opnds[k];
      if (arg_param(f, v) && u->arg_unit[v->index] < 0) u->arg_unit[v->index] = F.unit[i];
    }
  for (int i = 0; i < nargs; i++)
    if (u->arg_unit[i] < 0) u->arg_unit[i] = 0;
  /* the table: node locations, parameter names; a power of two at least twice the keys */
  u->cap = 16;
  while (u->cap < 2 * (F.n + nargs + 1)) u->cap *= 2;
  u->key = calloc((size_t)u->cap, sizeof *u->key);
  u->val = calloc((size_t)u->cap, sizeof *u->val);
  u->khash = calloc((size_t)u->cap, sizeof *u->khash);
  u->klen = calloc((size_t)u->cap, sizeof *u->klen);
  if (!u->key || !u->val || !u->khash || !u->klen) goto out;
  for (int i = 0; i < F.n; i++)
    if (F.op[i]->loc && F.op[i]->loc[0] && put(u, 'n', F.op[i]->loc, F.unit[i])) goto out;
  for (int i = 0; i < nargs && f->arg_names; i++)
    if (f->arg_is_param && f->arg_is_param[i] && f->arg_names[i] && put(u, 'p', f->arg_names[i], u->arg_unit[i])) goto out;
  if (f->arg_is_state) { /* state "opt.K:PARAM": PARAM's unit */
    gv_arg_index names;
    if (gv_arg_index_build(&names, f)) goto out;
    for (int i = 0; i < nargs; i++) {
      const char *nm = f->arg_names ? f->arg_names[i] : NULL, *c = nm && f->arg_is_state[i] ? strchr(nm, ':') : NULL;
      if (!c) continue;
      int lo = 0, hi = 0;
      gv_arg_index_find(&names, c + 1, &lo, &hi);
      for (int k = lo; k < hi; k++)
        if (f->arg_is_param[names.idx[k]]) u->arg_unit[i] = u->arg_unit[names.idx[k]];
    }
    gv_arg_index_free(&names);
  }
  rc = 0;
out:
  free(F.op), free(F.h), free(F.npar), free(F.last), free(F.unit);
  if (rc) {
    gv_layer_units_free(u);
    gv_error(m, "plan-sharding: out of memory finding the layers");
  }
  return rc;
}
