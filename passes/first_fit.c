/* first_fit.c — memory-plan's placement: each block, in the given order, at
 * the lowest offset where it overlaps no placed block live at the same time
 * (first_fit.h). It must give exactly the offsets of the plain definition;
 * only the search is faster, never the answer different.
 *
 * The lowest free offset x of a block is unique, so any search that finds it
 * gives the same plan. Two searches, the cheaper used per block:
 *  - the walk: the placed blocks in offset order (a list of sorted chunks),
 *    skipping those live at other times (a bit mask per 64 of a chunk,
 *    made without branches, then its set bits), until the first one at or
 *    past x + size. It stops at the gap but passes every placed block below it,
 *    live or not; in a long program most of those live elsewhere (20k ops
 *    of a deep model share a few kilobytes of offsets), which made it
 *    quadratic.
 *  - the gather: only the placed blocks live at the same time: those live at
 *    the block's start (a segment tree over the points, each block in the
 *    O(log P) nodes that cover its interval) and those starting inside it
 *    (per-point lists, a two-level bitmap of the points that have one),
 *    sorted by offset and swept the same way. Its cost is the number K of
 *    such blocks (counted beforehand with two Fenwick trees) times log K.
 * A block whose lifetime lies inside one window of 1024 points walks that window's list of the placed blocks live
 * in it, one over up to 8 windows those windows' lists merged in offset order (where they hold under a quarter of
 * the blocks placed: a long program, whose other times' blocks the global walk would pass); the rest use these:
 * The walk runs with a budget of about what the gather's sort costs
 * (4 K log2 K + 64 steps) and the gather takes over when that runs out, so a
 * block costs about min(walk, K log K): the walk wins
 * where many blocks are live at once (a training step's saved activations)
 * and the gather where few are (inference, one layer live at a time).
 */
#include "first_fit.h"

#include <stdbool.h>
#include <stdlib.h>
#include <string.h>
#ifdef __SSE2__
#include <emmintrin.h>
#endif

/* The placed blocks in offset order: sorted chunks of at most CHUNK blocks
 * (insertion moves at most a chunk, not the whole list), each block's
 * lifetime and bytes held in the chunk so that the walk reads memory in
 * order. */
enum { CHUNK = 256 };
typedef struct {
  int n;
  int start[CHUNK], end[CHUNK];
  int64_t off[CHUNK], top[CHUNK]; /* bytes [off, top) */
} chunk;

typedef struct {
  int *ids;
  int n, cap;
} ilist;

typedef struct {
  int64_t off, end; /* a placed block's bytes [off, end) */
} span;

typedef struct {
  int P, leaves;          /* points; leaves: a power of two >= P */
  ilist *cover;           /* per segment-tree node (2 * leaves): blocks covering its points */
  int *first_at, *next_at; /* per point: the placed blocks starting there (a list through next_at) */
  uint64_t *bits, *bits2; /* points with a block starting there; bits2: the non-zero words of bits */
  int *fw_start, *fw_end; /* Fenwick trees: placed blocks by start point, by end point */
  span *g;                /* gather buffer */
  int gcap;
} tindex;

static int push(ilist *l, int id) {
  if (l->n == l->cap) {
    int cap = l->cap ? 2 * l->cap : 4;
    int *ids = realloc(l->ids, (size_t)cap * sizeof *ids);
    if (!ids) return -1;
    l->ids = ids, l->cap = cap;
  }
  l->ids[l->n++] = id;
  return 0;
}

static void fw_add(int *fw, int P, int i) {
  for (i++; i <= P; i += i & -i) fw[i]++;
}

/* placed blocks with key <= i */
static int fw_count(const int *fw, int i) {
  int s = 0;
  for (i++; i > 0; i -= i & -i) s += fw[i];
  return s;
}

/* The first point >= t where a placed block starts, P if none. */
static int next_point(const tindex *T, int t) {
  if (t >= T->P) return T->P;
  int w = t >> 6, nw = (T->P + 63) >> 6;
  uint64_t m = T->bits[w] & (~0ull << (t & 63));
  if (m) return (w << 6) + __builtin_ctzll(m);
  for (int w2 = w + 1, q = w2 >> 6; (q << 6) < nw; q++) {
    uint64_t mm = T->bits2[q] & (q == w2 >> 6 ? ~0ull << (w2 & 63) : ~0ull);
    if (mm) {
      int ww = (q << 6) + __builtin_ctzll(mm);
      return (ww << 6) + __builtin_ctzll(T->bits[ww]);
    }
  }
  return T->P;
}

/* Bit j set: block j of the n (<= 64) given by their lifetimes hs, he is
 * live at some point of [s, e]. Four at a time where SSE2 is there. */
static uint64_t live_mask(const int *hs, const int *he, int n, int s, int e) {
  uint64_t m = 0;
  int j = 0;
#ifdef __SSE2__
  const __m128i vs = _mm_set1_epi32(s), ve = _mm_set1_epi32(e);
  for (; j + 4 <= n; j += 4) {
    __m128i out = _mm_or_si128(_mm_cmpgt_epi32(vs, _mm_loadu_si128((const __m128i *)(he + j))), /* ended before s */
                               _mm_cmpgt_epi32(_mm_loadu_si128((const __m128i *)(hs + j)), ve)); /* starts after e */
    m |= (uint64_t)(~_mm_movemask_ps(_mm_castsi128_ps(out)) & 0xF) << j;
  }
#endif
  for (; j < n; j++) m |= (uint64_t)((s <= he[j]) & (hs[j] <= e)) << j;
  return m;
}

static int index_add(tindex *T, const gv_ff_block *b, int id) {
  const gv_ff_block *a = &b[id];
  for (int l = a->start + T->leaves, r = a->end + T->leaves + 1; l < r; l >>= 1, r >>= 1) {
    if ((l & 1) && push(&T->cover[l++], id)) return -1;
    if ((r & 1) && push(&T->cover[--r], id)) return -1;
  }
  T->next_at[id] = T->first_at[a->start];
  T->first_at[a->start] = id;
  int w = a->start >> 6;
  T->bits[w] |= 1ull << (a->start & 63);
  T->bits2[w >> 6] |= 1ull << (w & 63);
  fw_add(T->fw_start, T->P, a->start);
  fw_add(T->fw_end, T->P, a->end);
  return 0;
}

/* Windows of 2^WIN_SHIFT points: each lists the placed blocks live at some point of it, in offset order (a block
 * in every window it spans). A block whose lifetime lies inside one window is placed by the walk over that window's
 * list alone: every placed block live with it is there, and the list holds only blocks live near its time (a long
 * program's offsets are shared by blocks of every other time, which the global walk passes over: quadratic in the
 * program's length, 36 s of memory-plan at 500k blocks). */
enum { WIN_SHIFT = 10 };
typedef struct {
  int n, cap;
  int *start, *end;
  int64_t *off, *top;
} wlist;

static int wl_insert(wlist *w, int start, int end, int64_t off, int64_t top) {
  if (w->n == w->cap) {
    int cap = w->cap ? 2 * w->cap : 64;
    int *s2 = realloc(w->start, (size_t)cap * sizeof *s2);
    if (s2) w->start = s2;
    int *e2 = realloc(w->end, (size_t)cap * sizeof *e2);
    if (e2) w->end = e2;
    int64_t *o2 = realloc(w->off, (size_t)cap * sizeof *o2);
    if (o2) w->off = o2;
    int64_t *t2 = realloc(w->top, (size_t)cap * sizeof *t2);
    if (t2) w->top = t2;
    if (!s2 || !e2 || !o2 || !t2) return -1;
    w->cap = cap;
  }
  int lo = 0, hi = w->n; /* after the entries at offsets <= off (ties in any order give the same walk) */
  while (lo < hi) {
    int mid = (lo + hi) / 2;
    if (w->off[mid] <= off) lo = mid + 1;
    else hi = mid;
  }
  int m = w->n - lo;
  memmove(w->start + lo + 1, w->start + lo, sizeof(int) * (size_t)m);
  memmove(w->end + lo + 1, w->end + lo, sizeof(int) * (size_t)m);
  memmove(w->off + lo + 1, w->off + lo, sizeof(int64_t) * (size_t)m);
  memmove(w->top + lo + 1, w->top + lo, sizeof(int64_t) * (size_t)m);
  w->start[lo] = start, w->end[lo] = end, w->off[lo] = off, w->top[lo] = top;
  w->n++;
  return 0;
}

/* The lowest offset for size bytes clear of the blocks of w live at some point of [s, e]. */
static int64_t wl_walk(const wlist *w, int64_t size, int s, int e) {
  int64_t x = 0;
  for (int base = 0; base < w->n; base += 64) {
    int lim = w->n - base < 64 ? w->n - base : 64;
    for (uint64_t live = live_mask(w->start + base, w->end + base, lim, s, e); live; live &= live - 1) {
      int k = base + __builtin_ctzll(live);
      if (w->off[k] >= x + size) return x;
      if (w->top[k] > x) x = w->top[k];
    }
  }
  return x;
}

/* The same over windows w[0..k) (k <= WIN_MULTI, a block's lifetime spanning them): their lists merged in offset
 * order (a block in several of them seen once per list: the same bytes, no other gap). Every placed block live at some
 * point of [s, e] is in the list of that point's window, and the lists hold only blocks live near that time, where the
 * global walk passes every placed block below the gap (a long program's other microbatches at the same offsets). */
enum { WIN_MULTI = 8 };
static int64_t wl_walk_multi(const wlist *w, int k, int64_t size, int s, int e) {
  int at[WIN_MULTI] = {0};
  int64_t x = 0;
  for (;;) {
    int j = -1;
    for (int i = 0; i < k; i++) /* the lowest offset among the lists' next entries */
      if (at[i] < w[i].n && (j < 0 || w[i].off[at[i]] < w[j].off[at[j]])) j = i;
    if (j < 0) return x;
    const int t = at[j]++;
    if (w[j].start[t] > e || w[j].end[t] < s) continue; /* live at other times */
    if (w[j].off[t] >= x + size) return x;
    if (w[j].top[t] > x) x = w[j].top[t];
  }
}

/* The merged walk visits the windows' entries one at a time and k-way; the global walk masks 64 at a time and gives up
 * to the gather: the merge pays where the windows hold a small part (under a quarter) of the placed blocks (a long
 * program), not in a short one, where they hold most of them (Llama2-7B's programs of 25k ops: 0.5 s more planning
 * with the merge on every block it could take) */
static bool multi_pays(const wlist *w, int k, int placed) {
  long held = 0;
  for (int i = 0; i < k; i++) held += w[i].n;
  return 4 * held < (long)placed;
}

static int by_off(const void *x, const void *y) {
  const span *a = x, *b = y;
  return (a->off > b->off) - (a->off < b->off);
}

static int gather_one(tindex *T, int *n, const gv_ff_block *p) {
  if (*n == T->gcap) {
    int cap = T->gcap ? 2 * T->gcap : 256;
    span *g = realloc(T->g, (size_t)cap * sizeof *g);
    if (!g) return -1;
    T->g = g, T->gcap = cap;
  }
  T->g[(*n)++] = (span){p->off, p->off + p->size};
  return 0;
}

/* The lowest free offset for a among the placed blocks live when it is:
 * those live at a->start, then those starting in (start, end]. -2: out of
 * memory. */
static int64_t gather(tindex *T, const gv_ff_block *b, const gv_ff_block *a) {
  int n = 0;
  for (int node = a->start + T->leaves; node >= 1; node >>= 1)
    for (int k = 0; k < T->cover[node].n; k++)
      if (gather_one(T, &n, &b[T->cover[node].ids[k]])) return -2;
  for (int t = next_point(T, a->start + 1); t <= a->end; t = next_point(T, t + 1))
    for (int j = T->first_at[t]; j >= 0; j = T->next_at[j])
      if (gather_one(T, &n, &b[j])) return -2;
  if (n > 1) qsort(T->g, (size_t)n, sizeof *T->g, by_off);
  int64_t x = 0;
  for (int k = 0; k < n && T->g[k].off < x + a->size; k++)
    if (T->g[k].end > x) x = T->g[k].end;
  return x;
}

/* ---------------------------------------------------------------- the sweep (blocks in start order)
 *
 * When the blocks come in order of their start point (memory-plan's
 * "earliest first"), every placed block starts at or before the new one, so
 * the placed blocks live with it are those still live at its start: a
 * sweep over the points drops the others (per end point lists). Those all
 * hold the same point, so their byte ranges are disjoint, and the lowest
 * free offset is the start of the first gap between them (in offset order,
 * from 0) of at least the block's size, or the end of the highest. They are
 * kept in a treap by offset, each node holding the gap below it and its
 * subtree the largest such gap, so a block costs O(log n): n log n for the
 * order, where the search above costs about n x the blocks live at once. */
typedef struct {
  int *l, *r;
  unsigned *pri;
  int64_t *off, *top, *gap, *mx;
} treap;

static int64_t mx_of(const treap *t, int x) { return x < 0 ? -1 : t->mx[x]; }

static void pull(treap *t, int x) {
  int64_t m = t->gap[x], a = mx_of(t, t->l[x]), c = mx_of(t, t->r[x]);
  t->mx[x] = m > a ? (m > c ? m : c) : (a > c ? a : c);
}

/* keys < k into *a, keys >= k into *b */
static void split(treap *t, int x, int64_t k, int *a, int *b) {
  if (x < 0) {
    *a = *b = -1;
    return;
  }
  if (t->off[x] < k) {
    split(t, t->r[x], k, &t->r[x], b);
    *a = x;
  } else {
    split(t, t->l[x], k, a, &t->l[x]);
    *b = x;
  }
  pull(t, x);
}

static int merge(treap *t, int a, int b) {
  if (a < 0) return b;
  if (b < 0) return a;
  if (t->pri[a] > t->pri[b]) {
    t->r[a] = merge(t, t->r[a], b);
    pull(t, a);
    return a;
  }
  t->l[b] = merge(t, a, t->l[b]);
  pull(t, b);
  return b;
}

static int64_t top_end(const treap *t, int x) { /* the end of the highest block, 0 for none */
  if (x < 0) return 0;
  while (t->r[x] >= 0) x = t->r[x];
  return t->top[x];
}

/* Sets the gap of the lowest block of x to its offset - below. */
static int set_first_gap(treap *t, int x, int64_t below) {
  if (x < 0) return x;
  if (t->l[x] >= 0) t->l[x] = set_first_gap(t, t->l[x], below);
  else t->gap[x] = t->off[x] - below;
  pull(t, x);
  return x;
}

static int64_t lowest_gap(const treap *t, int x, int64_t size) {
  while (x >= 0) {
    if (mx_of(t, t->l[x]) >= size) x = t->l[x];
    else if (t->gap[x] >= size) return t->off[x] - t->gap[x];
    else x = t->r[x];
  }
  return -1;
}

static int64_t sweep(gv_ff_block *b, const int *order, int n, int npoints, int nids, int64_t cap) {
  treap t;
  size_t m = (size_t)(nids + 1);
  t.l = malloc(m * sizeof *t.l), t.r = malloc(m * sizeof *t.r), t.pri = malloc(m * sizeof *t.pri);
  t.off = malloc(m * sizeof *t.off), t.top = malloc(m * sizeof *t.top);
  t.gap = malloc(m * sizeof *t.gap), t.mx = malloc(m * sizeof *t.mx);
  int *first_end = malloc((size_t)(npoints + 1) * sizeof *first_end), *next_end = malloc(m * sizeof *next_end);
  int64_t total = -1;
  if (!t.l || !t.r || !t.pri || !t.off || !t.top || !t.gap || !t.mx || !first_end || !next_end) goto done;
  memset(first_end, -1, (size_t)(npoints + 1) * sizeof *first_end);
  total = 0;
  int root = -1, point = 0; /* blocks ending before `point` are out */
  uint32_t seed = 2463534242u;
  for (int i = 0; i < n; i++) {
    int id = order[i];
    gv_ff_block *a = &b[id];
    for (; point < a->start; point++)
      for (int j = first_end[point]; j >= 0; j = next_end[j]) { /* drop j */
        int lo, mid, hi;
        split(&t, root, t.off[j], &lo, &mid);
        split(&t, mid, t.off[j] + 1, &mid, &hi);
        root = merge(&t, lo, set_first_gap(&t, hi, top_end(&t, lo)));
      }
    int64_t x = 0;
    if (a->size > 0) {
      x = lowest_gap(&t, root, a->size);
      if (x < 0) x = top_end(&t, root);
      seed ^= seed << 13, seed ^= seed >> 17, seed ^= seed << 5;
      t.l[id] = t.r[id] = -1, t.pri[id] = seed;
      t.off[id] = x, t.top[id] = x + a->size;
      int lo, hi;
      split(&t, root, x, &lo, &hi);
      t.gap[id] = x - top_end(&t, lo);
      pull(&t, id);
      root = merge(&t, merge(&t, lo, id), set_first_gap(&t, hi, x + a->size));
      next_end[id] = first_end[a->end];
      first_end[a->end] = id;
    }
    a->off = x;
    if (x + a->size > total) total = x + a->size;
    if (total > cap) break;
  }
done:
  free(t.l), free(t.r), free(t.pri), free(t.off), free(t.top), free(t.gap), free(t.mx);
  free(first_end), free(next_end);
  return total;
}

int64_t gv_first_fit(gv_ff_block *b, const int *order, int n, int npoints) {
  return gv_first_fit_below(b, order, n, npoints, INT64_MAX);
}

int64_t gv_first_fit_below(gv_ff_block *b, const int *order, int n, int npoints, int64_t limit) {
  bool by_start = true;
  int maxid = 0;
  for (int i = 0; i < n; i++) {
    if (i && b[order[i]].start < b[order[i - 1]].start) by_start = false;
    if (order[i] > maxid) maxid = order[i];
  }
  if (by_start && n > 0) return sweep(b, order, n, npoints > 0 ? npoints : 1, maxid + 1, limit);
  tindex T = {.P = npoints > 0 ? npoints : 1, .leaves = 1};
  while (T.leaves < T.P) T.leaves *= 2;
  int nids = 0;
  for (int i = 0; i < n; i++)
    if (order[i] + 1 > nids) nids = order[i] + 1;
  int nw = (T.P + 63) >> 6, cap = n / (CHUNK / 2) + 2, nc = 1;
  T.cover = calloc(2 * (size_t)T.leaves, sizeof *T.cover);
  T.first_at = malloc((size_t)T.P * sizeof *T.first_at);
  T.next_at = malloc((size_t)(nids + 1) * sizeof *T.next_at);
  T.bits = calloc((size_t)nw, sizeof *T.bits);
  T.bits2 = calloc((size_t)(nw + 63) / 64, sizeof *T.bits2);
  T.fw_start = calloc((size_t)T.P + 1, sizeof *T.fw_start);
  T.fw_end = calloc((size_t)T.P + 1, sizeof *T.fw_end);
  chunk **ch = calloc((size_t)cap, sizeof *ch);
  int nwin = ((T.P - 1) >> WIN_SHIFT) + 1; /* one window: the walk and the gather below as they are */
  wlist *W = nwin > 1 ? calloc((size_t)nwin, sizeof *W) : NULL;
  int64_t total = -1;
  if (!T.cover || !T.first_at || !T.next_at || !T.bits || !T.bits2 || !T.fw_start || !T.fw_end || !ch ||
      !(ch[0] = malloc(sizeof **ch)) || (nwin > 1 && !W))
    goto done;
  memset(T.first_at, -1, (size_t)T.P * sizeof *T.first_at);
  ch[0]->n = 0;
  total = 0;
  int placed = 0; /* blocks of non-zero size placed so far */
  for (int i = 0; i < n; i++) {
    gv_ff_block *a = &b[order[i]];
    int64_t size = a->size, x = 0;
    if (size > 0 && W && a->start >> WIN_SHIFT == a->end >> WIN_SHIFT) {
      x = wl_walk(&W[a->start >> WIN_SHIFT], size, a->start, a->end);
    } else if (size > 0 && W && (a->end >> WIN_SHIFT) - (a->start >> WIN_SHIFT) < WIN_MULTI &&
               multi_pays(W + (a->start >> WIN_SHIFT), (a->end >> WIN_SHIFT) - (a->start >> WIN_SHIFT) + 1, placed)) {
      x = wl_walk_multi(&W[a->start >> WIN_SHIFT], (a->end >> WIN_SHIFT) - (a->start >> WIN_SHIFT) + 1, size, a->start, a->end);
    } else if (size > 0) {
      /* placed blocks live at some point of [start, end] */
      int live = fw_count(T.fw_start, a->end) - (a->start > 0 ? fw_count(T.fw_end, a->start - 1) : 0);
      long lg = 1;
      while ((1L << lg) <= live) lg++;
      long budget = 4L * live * lg + 64; /* about what sorting them costs */
      for (int c = 0; c < nc; c++) {
        const chunk *h = ch[c];
        for (int base = 0; base < h->n; base += 64) {
          /* which of the next 64 are live with a (without branches: most
           * are not), then those in offset order */
          int lim = h->n - base < 64 ? h->n - base : 64;
          const int *hs = h->start + base, *he = h->end + base;
          uint64_t live_at = live_mask(hs, he, lim, a->start, a->end);
          budget -= lim / 4 + 1;
          for (; live_at; live_at &= live_at - 1) {
            int k = base + __builtin_ctzll(live_at);
            if (h->off[k] >= x + size) goto found;
            if (h->top[k] > x) x = h->top[k];
          }
          if (budget < 0) {
            x = gather(&T, b, a);
            if (x == -2) {
              total = -1;
              goto done;
            }
            goto found;
          }
        }
      }
    }
  found:
    a->off = x;
    if (x + size > total) total = x + size;
    if (total > limit) break;
    if (size <= 0) continue;
    placed++;
    if (index_add(&T, b, order[i])) {
      total = -1;
      goto done;
    }
    for (int w = a->start >> WIN_SHIFT; W && w <= a->end >> WIN_SHIFT; w++)
      if (wl_insert(&W[w], a->start, a->end, x, x + size)) {
        total = -1;
        goto done;
      }
    /* the chunk to insert into: the first whose last offset is >= x (else the last); the chunks are in offset order
     * (only a lone first chunk is empty), so a binary search (a scan from the first was quadratic in long programs) */
    int c = 0, chi = nc - 1;
    while (c < chi) {
      int mid = (c + chi) / 2;
      if (ch[mid]->n && ch[mid]->off[ch[mid]->n - 1] >= x) chi = mid;
      else c = mid + 1;
    }
    if (ch[c]->n == CHUNK) { /* split it */
      chunk *h2 = nc < cap ? malloc(sizeof *h2) : NULL;
      if (!h2) {
        total = -1;
        goto done;
      }
      memmove(&ch[c + 2], &ch[c + 1], sizeof *ch * (size_t)(nc - c - 1));
      ch[c + 1] = h2;
      enum { H = CHUNK / 2 };
      h2->n = H;
      memcpy(h2->start, ch[c]->start + H, sizeof(int) * H);
      memcpy(h2->end, ch[c]->end + H, sizeof(int) * H);
      memcpy(h2->off, ch[c]->off + H, sizeof(int64_t) * H);
      memcpy(h2->top, ch[c]->top + H, sizeof(int64_t) * H);
      ch[c]->n = H;
      nc++;
      if (ch[c]->off[ch[c]->n - 1] < x) c++;
    }
    chunk *h = ch[c];
    int k = h->n;
    while (k > 0 && h->off[k - 1] > x) k--;
    int m = h->n - k;
    memmove(h->start + k + 1, h->start + k, sizeof(int) * (size_t)m);
    memmove(h->end + k + 1, h->end + k, sizeof(int) * (size_t)m);
    memmove(h->off + k + 1, h->off + k, sizeof(int64_t) * (size_t)m);
    memmove(h->top + k + 1, h->top + k, sizeof(int64_t) * (size_t)m);
    h->start[k] = a->start, h->end[k] = a->end, h->off[k] = x, h->top[k] = x + size;
    h->n++;
  }
done:
  for (int i = 0; T.cover && i < 2 * T.leaves; i++) free(T.cover[i].ids);
  free(T.cover);
  free(T.first_at);
  free(T.next_at);
  free(T.bits);
  free(T.bits2);
  free(T.fw_start);
  free(T.fw_end);
  free(T.g);
  for (int c = 0; ch && c < nc; c++) free(ch[c]);
  free(ch);
  for (int w = 0; W && w < nwin; w++) free(W[w].start), free(W[w].end), free(W[w].off), free(W[w].top);
  free(W);
  return total;
}
