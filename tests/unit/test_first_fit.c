/* test_first_fit.c — gv_first_fit (passes/first_fit.c, memory-plan's
 * placement) gives exactly the offsets of the plain definition: each block,
 * in order, at the lowest offset x where [x, x + size) overlaps no earlier
 * block live at the same time. The brute force here computes that from the
 * definition (every candidate offset: 0 and the ends of the blocks live
 * with it), on seeded random programs shaped like the two cases the fast
 * search has two paths for: few blocks live at once (a deep inference
 * model: the gather path) and many long-lived ones (a training step's saved
 * activations: the walk), in both of memory-plan's orders, with equal
 * sizes, zero sizes and one-point lifetimes; and a program long enough that
 * chunks of the offset list split. Orders by start point (memory-plan's
 * earliest-first, and program order here) take the sweep path (a treap of
 * the blocks live at the start), the others the walk and the gather;
 * gv_first_fit_below gives the same placement under a limit it reaches and
 * gives up on one it passes. */
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "passes/first_fit.h"

#define CHECK(c)                                                                                   \
  do {                                                                                             \
    if (!(c)) {                                                                                    \
      fprintf(stderr, "%s:%d: check failed: %s\n", __FILE__, __LINE__, #c);                        \
      return 1;                                                                                    \
    }                                                                                              \
  } while (0)

static uint64_t rng = 88172645463325252ull;
static unsigned rnd(unsigned n) {
  rng ^= rng << 13;
  rng ^= rng >> 7;
  rng ^= rng << 17;
  return (unsigned)(rng % n);
}

static bool live_together(const gv_ff_block *a, const gv_ff_block *b) { return a->start <= b->end && b->start <= a->end; }

/* The definition: the lowest x among 0 and the ends of the placed blocks
 * live with it that overlaps none of them (the lowest free offset is one of
 * those). Quadratic per block; fine for the sizes here. */
static int64_t brute(gv_ff_block *b, const int *order, int n) {
  int64_t total = 0;
  const gv_ff_block **with = malloc((size_t)(n + 1) * sizeof *with);
  for (int i = 0; with && i < n; i++) {
    gv_ff_block *a = &b[order[i]];
    int k = 0;
    for (int j = 0; j < i; j++)
      if (b[order[j]].size > 0 && live_together(a, &b[order[j]])) with[k++] = &b[order[j]];
    int64_t best = -1;
    for (int c = -1; c < k; c++) {
      int64_t x = c < 0 ? 0 : with[c]->off + with[c]->size;
      if (best >= 0 && x >= best) continue;
      bool ok = true;
      for (int j = 0; ok && j < k && a->size > 0; j++)
        ok = x + a->size <= with[j]->off || with[j]->off + with[j]->size <= x;
      if (ok) best = x;
    }
    a->off = best;
    if (best + a->size > total) total = best + a->size;
  }
  free(with);
  return total;
}

static const gv_ff_block *sort_base;
static int by_size(const void *x, const void *y) {
  const gv_ff_block *a = &sort_base[*(const int *)x], *b = &sort_base[*(const int *)y];
  if (a->size != b->size) return a->size > b->size ? -1 : 1;
  if (a->start != b->start) return a->start < b->start ? -1 : 1;
  return *(const int *)x - *(const int *)y;
}
static int by_start(const void *x, const void *y) {
  const gv_ff_block *a = &sort_base[*(const int *)x], *b = &sort_base[*(const int *)y];
  if (a->start != b->start) return a->start < b->start ? -1 : 1;
  if (a->size != b->size) return a->size > b->size ? -1 : 1;
  return *(const int *)x - *(const int *)y;
}

/* n blocks over about n points: each lives `span` points (long_every-th of
 * them to the end, as saved activations do), sizes from a few classes. */
static int one(int n, int span, int long_every, int order_kind, const char *what) {
  gv_ff_block *b = malloc((size_t)n * sizeof *b), *r = malloc((size_t)n * sizeof *r);
  int *order = malloc((size_t)n * sizeof *order);
  CHECK(b && r && order);
  int P = n + 1;
  for (int i = 0; i < n; i++) {
    int s = i * (P - 1) / n;
    int e = long_every && i % long_every == 0 ? P - 1 - (int)rnd((unsigned)(P / 8 + 1)) : s + (int)rnd((unsigned)span + 1);
    if (e >= P) e = P - 1;
    if (e < s) e = s;
    static const int64_t sizes[] = {0, 64, 64, 128, 192, 512, 4096, 64 * 1000};
    b[i] = (gv_ff_block){.start = s, .end = e, .size = sizes[rnd(8)], .off = -7};
    order[i] = i;
  }
  sort_base = b;
  if (order_kind == 1) qsort(order, (size_t)n, sizeof *order, by_size);
  if (order_kind == 2) qsort(order, (size_t)n, sizeof *order, by_start);
  memcpy(r, b, (size_t)n * sizeof *b);
  int64_t fast = gv_first_fit(b, order, n, P), slow = brute(r, order, n);
  if (fast != slow) fprintf(stderr, "%s: arena %lld, the definition gives %lld\n", what, (long long)fast, (long long)slow);
  CHECK(fast == slow);
  for (int i = 0; i < n; i++) {
    if (b[i].off != r[i].off)
      fprintf(stderr, "%s: block %d [%d,%d] size %lld at %lld, the definition gives %lld\n", what, i, b[i].start,
              b[i].end, (long long)b[i].size, (long long)b[i].off, (long long)r[i].off);
    CHECK(b[i].off == r[i].off);
  }
  /* gv_first_fit_below: the same placement under a limit it reaches (not
   * passed: the same offsets), abandoned with a size over one it passes */
  for (int i = 0; i < n; i++) b[i].off = -7;
  CHECK(gv_first_fit_below(b, order, n, P, slow) == slow);
  for (int i = 0; i < n; i++) CHECK(b[i].off == r[i].off);
  if (slow > 0) {
    int64_t over = gv_first_fit_below(b, order, n, P, slow - 1);
    CHECK(over > slow - 1 && over <= slow);
  }
  free(b);
  free(r);
  free(order);
  return 0;
}

int main(void) {
  int rc = 0, cases = 0;
  char what[96];
  for (int k = 0; k < 3; k++)                 /* program order, by size, by start */
    for (int rep = 0; rep < 4; rep++) {
      snprintf(what, sizeof what, "short-lived, order %d, #%d", k, rep);
      rc |= one(600 + 300 * rep, 6, 0, k, what), cases++;
      snprintf(what, sizeof what, "long-lived, order %d, #%d", k, rep);
      rc |= one(600 + 300 * rep, 20, 5, k, what), cases++;
      snprintf(what, sizeof what, "mixed, order %d, #%d", k, rep);
      rc |= one(800, 200, 40, k, what), cases++;
    }
  rc |= one(6000, 8, 0, 1, "long program, by size (chunks split)"), cases++;
  rc |= one(6000, 30, 50, 2, "long program, by start, long-lived"), cases++;
  /* many windows of points (first_fit.c's per-window walk): blocks inside one, across a boundary, and long-lived */
  rc |= one(12000, 300, 100, 1, "many windows, by size"), cases++;
  rc |= one(12000, 40, 0, 0, "many windows, program order"), cases++;
  rc |= one(4000, 2000, 0, 1, "blocks over several windows, by size"), cases++; /* the global walk and gather */
  rc |= one(4000, 1200, 7, 1, "blocks over several windows and long-lived, by size"), cases++;
  /* the windows' lists merged: blocks over a few windows in a program long enough that those windows hold a small
   * part of the blocks placed (first_fit.c multi_pays) */
  rc |= one(12000, 700, 0, 1, "blocks over up to 2 windows of a long program, by size (the windows' lists merged)"), cases++;
  /* an empty program and a single block */
  CHECK(gv_first_fit(NULL, NULL, 0, 1) == 0);
  gv_ff_block one_b = {.start = 0, .end = 0, .size = 128};
  int o = 0;
  CHECK(gv_first_fit(&one_b, &o, 1, 1) == 128 && one_b.off == 0);
  if (!rc) printf("test_first_fit: %d random programs placed as the definition does\n", cases);
  return rc;
}
