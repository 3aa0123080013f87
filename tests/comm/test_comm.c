/* test_comm.c — the communicator (runtime/galv_comm.h) alone, over MPI
 * (runtime/comm_mpi.c) or one rank (runtime/comm_single.c). Run by
 * tests/comm.sh with mpirun -np 1, 2, 4, 8.
 *
 *   test_comm [MODE]
 *     all      (default) every collective on every axis group of the meshes
 *              that fit the world size (1, 2, 2x2, 4, 2x2x2, 2x4, 8), f32 and
 *              i64 (and f64 max), in place and out of place, several calls in
 *              flight on one queue, a call reading an earlier call's result
 *              (queue order), each result against a locally computed
 *              expectation; counters against the header's formulas; a grouped
 *              ring exchange (send right, recv left) in both directions; with
 *              3 ranks or more, galv_queue_sync_buf waiting for its buffer's
 *              send alone (another send in flight on the queue completes only
 *              after it returns: waiting for both would deadlock)
 *     ring     an UNgrouped ring exchange, every rank sending first: with
 *              GALV_COMM_SYNC=1 it must fail with one error line (deadlock
 *              detected), never hang or pass
 *     mesh     a mesh that does not match the rank count: one error line
 *
 * Values are small integers so that f32 sums are exact in any order. */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "galv_comm.h"
#include "galv_rt.h"

static int rank_, size_, fails, checks;

#define CHECK(cond, ...)                                                                                             \
  do {                                                                                                               \
    checks++;                                                                                                        \
    if (!(cond)) {                                                                                                   \
      fails++;                                                                                                       \
      fprintf(stderr, "rank %d: FAIL %s:%d: ", rank_, __FILE__, __LINE__);                                           \
      fprintf(stderr, __VA_ARGS__);                                                                                  \
      fputc('\n', stderr);                                                                                           \
    }                                                                                                                \
  } while (0)

/* The value rank r contributes at element i for call k. */
static int64_t val(int r, size_t i, int k) { return (int64_t)((r * 7 + (int)i * 3 + k * 11) % 23) - 11; }

typedef struct {
  int nmesh;
  int64_t shape[3];
  unsigned mask;
  int members[8]; /* world ranks of this rank's group, in group rank order */
  int n, me;
} grp;

/* The group of world rank `rank` for (shape, mask), computed independently
 * of the backend: ranks sharing every coordinate off the mask, ordered
 * row-major over the masked axes. */
static void group_of(grp *g, int rank) {
  int64_t c[3], r = rank;
  for (int d = g->nmesh - 1; d >= 0; d--) c[d] = r % g->shape[d], r /= g->shape[d];
  g->n = 0;
  for (int w = 0; w < size_; w++) {
    int64_t cw[3], x = w;
    for (int d = g->nmesh - 1; d >= 0; d--) cw[d] = x % g->shape[d], x /= g->shape[d];
    int same = 1;
    for (int d = 0; d < g->nmesh; d++)
      if (!(g->mask >> d & 1) && cw[d] != c[d]) same = 0;
    if (same) {
      if (w == rank) g->me = g->n;
      g->members[g->n++] = w;
    }
  }
}

static galv_comm_bytes expect;

static void add_expect(galv_comm_bytes *b, const galv_comm_bytes *d) {
  b->all_reduce += d->all_reduce, b->all_gather += d->all_gather, b->reduce_scatter += d->reduce_scatter;
  b->all_to_all += d->all_to_all, b->send += d->send;
}

static void check_counters(const char *where) {
  galv_comm_bytes c = galv_comm_counters();
  CHECK(c.all_reduce == expect.all_reduce, "%s: all_reduce bytes %llu, expected %llu", where,
        (unsigned long long)c.all_reduce, (unsigned long long)expect.all_reduce);
  CHECK(c.all_gather == expect.all_gather, "%s: all_gather bytes %llu, expected %llu", where,
        (unsigned long long)c.all_gather, (unsigned long long)expect.all_gather);
  CHECK(c.reduce_scatter == expect.reduce_scatter, "%s: reduce_scatter bytes %llu, expected %llu", where,
        (unsigned long long)c.reduce_scatter, (unsigned long long)expect.reduce_scatter);
  CHECK(c.all_to_all == expect.all_to_all, "%s: all_to_all bytes %llu, expected %llu", where,
        (unsigned long long)c.all_to_all, (unsigned long long)expect.all_to_all);
  CHECK(c.send == expect.send, "%s: send bytes %llu, expected %llu", where, (unsigned long long)c.send,
        (unsigned long long)expect.send);
}

/* Element of buffer as int64 whatever the dtype. */
static int64_t get(const void *b, int dt, size_t i) {
  return dt == GALV_F32 ? (int64_t)((const float *)b)[i] : dt == GALV_F64 ? (int64_t)((const double *)b)[i]
                                                                          : ((const int64_t *)b)[i];
}
static void set(void *b, int dt, size_t i, int64_t v) {
  if (dt == GALV_F32) ((float *)b)[i] = (float)v;
  else if (dt == GALV_F64) ((double *)b)[i] = (double)v;
  else ((int64_t *)b)[i] = v;
}

/* Every collective once on group g, dtype dt, count elements per chunk. */
static void collectives(const grp *g, galv_comm *c, int dt, size_t count, int k, galv_queue *q, const char *name) {
  size_t es = galv_dtype_size(dt), p = (size_t)g->n;
  char where[160];
  CHECK(galv_comm_size(c) == g->n && galv_comm_rank(c) == g->me, "%s: group size/rank %d/%d, expected %d/%d", name,
        galv_comm_size(c), galv_comm_rank(c), g->n, g->me);
  char *ar_s = malloc(p * count * es), *ar_r = malloc(p * count * es), *ar_m = malloc(p * count * es);
  char *ip = malloc(p * count * es);
  char *ag_s = malloc(count * es), *ag_r = malloc(p * count * es), *ag_ip = malloc(p * count * es);
  char *rs_s = malloc(p * count * es), *rs_r = malloc(count * es);
  char *aa_s = malloc(p * count * es), *aa_r = malloc(p * count * es);
  size_t n = p * count; /* all_reduce over n elements */
  for (size_t i = 0; i < n; i++) {
    set(ar_s, dt, i, val(rank_, i, k));
    set(ip, dt, i, val(rank_, i, k + 1));
    set(rs_s, dt, i, val(rank_, i, k + 2));
    set(aa_s, dt, i, val(rank_, i, k + 3));
  }
  for (size_t i = 0; i < count; i++) set(ag_s, dt, i, val(rank_, i, k + 4));
  for (size_t i = 0; i < count; i++) set(ag_ip + (size_t)g->me * count * es, dt, i, val(rank_, i, k + 5));
  /* all posted, then one sync: several requests in flight on the queue */
  galv_all_reduce(c, ar_s, ar_r, n, dt, GALV_RED_SUM, q);
  galv_all_reduce(c, ip, ip, n, dt, GALV_RED_SUM, q); /* in place */
  galv_all_gather(c, ag_s, ag_r, count, dt, q);
  galv_all_gather(c, ag_ip + (size_t)g->me * count * es, ag_ip, count, dt, q); /* in place */
  galv_reduce_scatter(c, rs_s, rs_r, count, dt, GALV_RED_SUM, q);
  galv_all_to_all(c, aa_s, aa_r, count, dt, q);
  galv_all_reduce(c, ar_s, ar_m, n, dt, GALV_RED_MAX, q);
  galv_queue_sync(q);
  galv_comm_bytes d = {0};
  d.all_reduce = 3 * (2 * (uint64_t)(p - 1) * (n * es) / p);
  d.all_gather = 2 * (uint64_t)(p - 1) * count * es;
  d.reduce_scatter = (uint64_t)(p - 1) * count * es;
  d.all_to_all = (uint64_t)(p - 1) * count * es;
  add_expect(&expect, &d);
  int bad = 0;
  for (size_t i = 0; i < n && !bad; i++) {
    int64_t s = 0, s1 = 0, mx = INT64_MIN;
    for (int j = 0; j < g->n; j++) {
      s += val(g->members[j], i, k), s1 += val(g->members[j], i, k + 1);
      if (val(g->members[j], i, k) > mx) mx = val(g->members[j], i, k);
    }
    if (get(ar_r, dt, i) != s || get(ip, dt, i) != s1 || get(ar_m, dt, i) != mx) bad = 1;
  }
  snprintf(where, sizeof where, "%s all_reduce (sum, in place, max)", name);
  CHECK(!bad, "%s: wrong result", where);
  bad = 0;
  for (int j = 0; j < g->n; j++)
    for (size_t i = 0; i < count; i++) {
      if (get(ag_r, dt, (size_t)j * count + i) != val(g->members[j], i, k + 4)) bad = 1;
      if (get(ag_ip, dt, (size_t)j * count + i) != val(g->members[j], i, k + 5)) bad = 1;
    }
  CHECK(!bad, "%s all_gather (and in place): wrong result", name);
  bad = 0;
  for (size_t i = 0; i < count; i++) {
    int64_t s = 0;
    for (int j = 0; j < g->n; j++) s += val(g->members[j], (size_t)g->me * count + i, k + 2);
    if (get(rs_r, dt, i) != s) bad = 1;
  }
  CHECK(!bad, "%s reduce_scatter: wrong result", name);
  bad = 0;
  for (int j = 0; j < g->n; j++) /* chunk j of my recv is chunk me of rank j's send */
    for (size_t i = 0; i < count; i++)
      if (get(aa_r, dt, (size_t)j * count + i) != val(g->members[j], (size_t)g->me * count + i, k + 3)) bad = 1;
  CHECK(!bad, "%s all_to_all: wrong result", name);

  /* queue order: a call that reads an earlier call's result, no sync between */
  for (size_t i = 0; i < count; i++) set(ag_s, dt, i, val(rank_, i, k + 6));
  galv_all_gather(c, ag_s, ag_r, count, dt, q);
  galv_all_reduce(c, ag_r, ar_r, p * count, dt, GALV_RED_SUM, q);
  galv_queue_sync(q);
  d = (galv_comm_bytes){0};
  d.all_gather = (uint64_t)(p - 1) * count * es;
  d.all_reduce = 2 * (uint64_t)(p - 1) * (p * count * es) / p;
  add_expect(&expect, &d);
  bad = 0;
  for (int j = 0; j < g->n; j++)
    for (size_t i = 0; i < count; i++)
      if (get(ar_r, dt, (size_t)j * count + i) != (int64_t)g->n * val(g->members[j], i, k + 6)) bad = 1;
  CHECK(!bad, "%s all_gather -> all_reduce on one queue: wrong result", name);
  free(ar_s), free(ar_r), free(ar_m), free(ip), free(ag_s), free(ag_r), free(ag_ip), free(rs_s), free(rs_r);
  free(aa_s), free(aa_r);
}

/* Ring over group g: send `count` to the right, recv from the left (and the
 * other way round), grouped so that it cannot deadlock. */
static void ring(const grp *g, galv_comm *c, galv_queue *q, size_t count, int grouped, const char *name) {
  int p = g->n, right = (g->me + 1) % p, left = (g->me + p - 1) % p;
  float *s = malloc(count * 4), *r = malloc(count * 4), *s2 = malloc(count * 4), *r2 = malloc(count * 4);
  for (size_t i = 0; i < count; i++) s[i] = (float)val(rank_, i, 40), s2[i] = (float)val(rank_, i, 41);
  if (grouped) galv_group_start();
  galv_send(c, right, s, count, GALV_F32, q);
  galv_recv(c, left, r, count, GALV_F32, q);
  galv_send(c, left, s2, count, GALV_F32, q);
  galv_recv(c, right, r2, count, GALV_F32, q);
  if (grouped) galv_group_end();
  galv_queue_sync(q);
  expect.send += 2 * count * 4;
  int bad = 0;
  for (size_t i = 0; i < count; i++)
    if (r[i] != (float)val(g->members[left], i, 40) || r2[i] != (float)val(g->members[right], i, 41)) bad = 1;
  CHECK(!bad, "%s ring exchange: wrong result", name);
  free(s), free(r), free(s2), free(r2);
}

/* galv_queue_sync_buf completes the calls on one buffer only. World ranks 0-2 of group c (the world in order): rank 0
 * posts A to rank 1 and B to rank 2 on one queue, then sync_buf(B), then sends "go" to rank 2; rank 2 receives B and
 * go, then sends go2 to rank 1, which only then receives A. Under GALV_COMM_SYNC=1 (synchronous sends) A completes
 * after go2, after go, after sync_buf(B) returned: a sync_buf that waited for A too would never return. */
static void sync_buf_check(galv_comm *c, galv_queue *q) {
  enum { N = 1 << 14 }; /* beyond any eager limit */
  float *a = malloc(N * 4), *b = malloc(N * 4), go = 1, go2 = 2, got = 0;
  int bad = 0;
  for (size_t i = 0; i < N; i++) a[i] = (float)val(0, i, 50), b[i] = (float)val(0, i, 51);
  if (rank_ == 0) {
    galv_group_start(); /* each a group of its own, posted and left in flight (as runtime/pipe.c il_send) */
    galv_send(c, 1, a, N, GALV_F32, q);
    galv_group_end();
    galv_group_start();
    galv_send(c, 2, b, N, GALV_F32, q);
    galv_group_end();
    galv_queue_sync_buf(q, b, N * 4);
    galv_send(c, 2, &go, 1, GALV_F32, q);
    galv_queue_sync(q);
    expect.send += (2 * N + 1) * 4;
  } else if (rank_ == 1) {
    galv_recv(c, 2, &got, 1, GALV_F32, q);
    galv_queue_sync(q);
    memset(a, 0, N * 4);
    galv_recv(c, 0, a, N, GALV_F32, q);
    galv_queue_sync(q);
    for (size_t i = 0; i < N; i++) bad |= a[i] != (float)val(0, i, 50);
    bad |= got != go2;
  } else if (rank_ == 2) {
    memset(b, 0, N * 4);
    galv_recv(c, 0, b, N, GALV_F32, q);
    galv_recv(c, 0, &got, 1, GALV_F32, q);
    galv_queue_sync(q);
    for (size_t i = 0; i < N; i++) bad |= b[i] != (float)val(0, i, 51);
    bad |= got != go;
    galv_send(c, 1, &go2, 1, GALV_F32, q);
    galv_queue_sync(q);
    expect.send += 4;
  }
  CHECK(!bad, "sync_buf: wrong data on rank %d", rank_);
  free(a), free(b);
}

int main(int argc, char **argv) {
  galv_progname = "test_comm";
  galv_comm_world_init(&argc, &argv, &rank_, &size_);
  const char *mode = argc > 1 ? argv[1] : "all";
  galv_queue *q = galv_queue_new();
  if (!strcmp(mode, "mesh")) {
    int64_t shape[2] = {size_ + 1, 1};
    galv_comm_group(shape, 2, 1); /* fatal: does not match the world */
    return 0;
  }
  if (!strcmp(mode, "ring")) {
    int64_t shape[1] = {size_};
    grp g = {1, {size_}, 1, {0}, 0, 0};
    group_of(&g, rank_);
    galv_comm *c = galv_comm_group(shape, 1, 1);
    ring(&g, c, q, 1 << 16, 0, "ungrouped");
    galv_queue_free(q);
    galv_comm_world_finalize();
    printf("rank %d: ungrouped ring passed\n", rank_);
    return 0;
  }
  static const struct {
    int n;
    int64_t s[3];
  } meshes[] = {{1, {1}}, {1, {2}}, {2, {2, 2}}, {1, {4}}, {3, {2, 2, 2}}, {2, {2, 4}}, {2, {4, 2}}, {1, {8}}};
  int nm = 0, k = 0;
  for (size_t mi = 0; mi < sizeof meshes / sizeof meshes[0]; mi++) {
    int64_t tot = 1;
    for (int d = 0; d < meshes[mi].n; d++) tot *= meshes[mi].s[d];
    if (tot != size_) continue;
    nm++;
    for (unsigned mask = 0; mask < 1u << meshes[mi].n; mask++) {
      grp g = {meshes[mi].n, {meshes[mi].s[0], meshes[mi].s[1], meshes[mi].s[2]}, mask, {0}, 0, 0};
      group_of(&g, rank_);
      galv_comm *c = galv_comm_group(g.shape, g.nmesh, mask);
      CHECK(galv_comm_group(g.shape, g.nmesh, mask) == c, "group not cached");
      char name[96];
      int o = snprintf(name, sizeof name, "mesh ");
      for (int d = 0; d < g.nmesh; d++) o += snprintf(name + o, sizeof name - (size_t)o, d ? "x%lld" : "%lld", (long long)g.shape[d]);
      snprintf(name + o, sizeof name - (size_t)o, " axes 0x%x", mask);
      collectives(&g, c, GALV_F32, 5, k++, q, name);
      collectives(&g, c, GALV_I64, 3, k++, q, name);
      collectives(&g, c, GALV_F64, 1000, k++, q, name);
      ring(&g, c, q, 7, 1, name);
      ring(&g, c, q, 1 << 15, 1, name); /* large: beyond any eager limit */
      check_counters(name);
    }
  }
  if (size_ >= 3) {
    int64_t shape[1] = {size_};
    sync_buf_check(galv_comm_group(shape, 1, 1), q);
    check_counters("sync_buf");
  }
  galv_queue_free(q);
  galv_comm_world_finalize();
  if (fails) {
    fprintf(stderr, "rank %d: %d of %d checks failed\n", rank_, fails, checks);
    return 1;
  }
  printf("rank %d: %d checks passed on %d mesh(es)\n", rank_, checks, nm);
  return 0;
}
