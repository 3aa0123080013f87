/* cross_mesh.c — cross-mesh resharding plans (cross_mesh.h). */
#include "cross_mesh.h"

#include <stdlib.h>
#include <string.h>

/* The box rank r of mesh holds under sharding s (global coordinates). */
static void tile_of(const gv_sharding *s, const gv_type *t, int r, int64_t *off, int64_t *len) {
  const gv_mesh *mesh = s->mesh;
  int64_t coord[GV_MAX_MESH_AXES], rem = r;
  for (int a = mesh->naxes - 1; a >= 0; a--) {
    coord[a] = rem % mesh->size[a];
    rem /= mesh->size[a];
  }
  for (int d = 0; d < t->rank; d++) {
    int64_t idx = 0, p = 1;
    for (int k = 0; k < s->naxes[d]; k++) {
      int a = s->axes[d][k];
      idx = idx * mesh->size[a] + coord[a];
      p *= mesh->size[a];
    }
    len[d] = t->dims[d] / p;
    off[d] = idx * len[d];
  }
}

static int check(const gv_type *t, const gv_sharding *s, const char *who) {
  if (s->partial) return gv_error_plain("cross-mesh reshard: the %s sharding is a partial sum (reduce it first)", who);
  if (s->rank != t->rank) return gv_error_plain("cross-mesh reshard: %s sharding rank %d != tensor rank %d", who, s->rank, t->rank);
  for (int d = 0; d < t->rank; d++) {
    int64_t p = gv_sharding_dim_split(s, d);
    if (p < 1 || t->dims[d] % p)
      return gv_error_plain("cross-mesh reshard: dim %d of size %lld does not split %lld ways (%s)", d,
                            (long long)t->dims[d], (long long)p, who);
  }
  return 0;
}

int gv_xmesh_plan_make(const gv_type *t, const gv_sharding *src, const gv_sharding *dst, bool local_allgather,
                       gv_xmesh_plan *out) {
  memset(out, 0, sizeof *out);
  out->ag_dim = -1;
  if (!gv_type_is_static(t)) return gv_error_plain("cross-mesh reshard: the type is not static");
  if (check(t, src, "source") || check(t, dst, "destination")) return -1;
  int64_t esz = (int64_t)gv_dtype_size(t->dtype), total = gv_type_numel(t) * esz;
  int na = (int)gv_mesh_devices(src->mesh), nb = (int)gv_mesh_devices(dst->mesh);
  out->naive_bytes = total * nb;
  out->eff = *dst;
  /* local all-gather: the receiving mesh's axes no dim uses */
  unsigned used = 0;
  for (int d = 0; d < dst->rank; d++)
    for (int k = 0; k < dst->naxes[d]; k++) used |= 1u << dst->axes[d][k];
  unsigned R = 0;
  int64_t q = 1;
  for (int a = 0; a < dst->mesh->naxes; a++)
    if (!(used & (1u << a)) && dst->mesh->size[a] > 1) R |= 1u << a, q *= dst->mesh->size[a];
  if (local_allgather && q > 1) {
    int rmin = 0;
    while (!(R & (1u << rmin))) rmin++;
    int best = -1;
    for (int d = 0; d < t->rank; d++) {
      int64_t local = t->dims[d] / gv_sharding_dim_split(dst, d);
      bool order_ok = dst->naxes[d] + __builtin_popcount(R) <= GV_MAX_MESH_AXES;
      for (int k = 0; k < dst->naxes[d]; k++)
        if (dst->axes[d][k] > rmin) order_ok = false;
      if (!order_ok || local % q) continue;
      best = d; /* the outermost: a tile is one contiguous run of the value when the dims before it are 1 */
      break;
    }
    if (best >= 0) {
      for (int a = 0; a < dst->mesh->naxes; a++)
        if (R & (1u << a)) out->eff.axes[best][out->eff.naxes[best]++] = (uint8_t)a;
      out->ag_dim = best;
      out->ag_axes = R;
    }
  }
  const gv_sharding *E = &out->eff;
  int64_t *sent = calloc((size_t)na, sizeof(int64_t));
  int64_t (*st)[2][GV_MAX_RANK] = calloc((size_t)na, sizeof *st);
  int cap = 64;
  out->x = malloc(sizeof(gv_xfer) * (size_t)cap);
  int *rep = malloc(sizeof(int) * (size_t)na);
  bool *done = malloc(sizeof(bool) * (size_t)na);
  if (!sent || !st || !out->x || !rep || !done) {
    free(sent), free(st), free(rep), free(done);
    gv_xmesh_free(out);
    return gv_error_plain("cross-mesh reshard: out of memory");
  }
  for (int r = 0; r < na; r++) tile_of(src, t, r, st[r][0], st[r][1]);
  /* pass 0 counts the overlaps (receiver tile x group of replicas); pass 1
   * plans them: an overlap held by several replicas is cut into up to
   * min(replicas, senders / overlaps) pieces (along its outermost dim that
   * divides), so that fewer overlaps than senders still use every sender */
  int nover = 0;
  for (int pass = 0; pass < 2; pass++)
  for (int b = 0; b < nb; b++) {
    int64_t doff[GV_MAX_RANK], dlen[GV_MAX_RANK], full[GV_MAX_RANK], flen[GV_MAX_RANK];
    tile_of(E, t, b, doff, dlen);
    tile_of(dst, t, b, full, flen);
    int64_t tb = esz;
    for (int d = 0; d < t->rank; d++) tb *= flen[d];
    if (pass) out->direct_bytes += tb;
    memset(done, 0, sizeof(bool) * (size_t)na);
    for (int r = 0; r < na; r++) {
      if (done[r]) continue;
      int64_t io[GV_MAX_RANK], il[GV_MAX_RANK], bytes = esz;
      bool empty = false;
      for (int d = 0; d < t->rank; d++) {
        int64_t lo = doff[d] > st[r][0][d] ? doff[d] : st[r][0][d];
        int64_t hi1 = doff[d] + dlen[d], hi2 = st[r][0][d] + st[r][1][d];
        int64_t hi = hi1 < hi2 ? hi1 : hi2;
        if (hi <= lo) empty = true;
        io[d] = lo;
        il[d] = hi - lo;
        bytes *= hi > lo ? hi - lo : 0;
      }
      if (empty) continue;
      /* the replicas: senders whose tile is the same box as r's */
      int nrep = 0;
      for (int r2 = r; r2 < na; r2++)
        if (!done[r2] && !memcmp(st[r2], st[r], sizeof st[r])) rep[nrep++] = r2, done[r2] = true;
      if (!pass) {
        nover++;
        continue;
      }
      int m = na / nover < nrep ? na / nover : nrep, sd = -1;
      for (; m > 1 && sd < 0; m -= sd < 0)
        for (int d = 0; d < t->rank; d++)
          if (il[d] % m == 0 && sd < 0) sd = d;
      if (m < 1) m = 1;
      for (int piece = 0; piece < m; piece++) {
        int pick = rep[0];
        for (int i = 1; i < nrep; i++)
          if (sent[rep[i]] < sent[pick]) pick = rep[i];
        sent[pick] += bytes / m;
        if (out->nx == cap) {
          cap *= 2;
          gv_xfer *nx = realloc(out->x, sizeof(gv_xfer) * (size_t)cap);
          if (!nx) {
            free(sent), free(st), free(rep), free(done);
            gv_xmesh_free(out);
            return gv_error_plain("cross-mesh reshard: out of memory");
          }
          out->x = nx;
        }
        gv_xfer *x = &out->x[out->nx++];
        memset(x, 0, sizeof *x);
        x->src = pick;
        x->dst = b;
        memcpy(x->off, io, sizeof io);
        memcpy(x->len, il, sizeof il);
        if (m > 1) x->len[sd] = il[sd] / m, x->off[sd] = io[sd] + piece * (il[sd] / m);
        x->bytes = bytes / m;
        out->bytes += bytes / m;
      }
    }
  }
  for (int r = 0; r < na; r++)
    if (sent[r] > out->max_send) out->max_send = sent[r];
  free(sent), free(st), free(rep), free(done);
  return 0;
}

void gv_xmesh_free(gv_xmesh_plan *p) {
  free(p->x);
  p->x = NULL;
  p->nx = 0;
}
