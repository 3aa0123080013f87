/* stage_split.c — stage-split: where a value crosses pipeline stages, a
 * galv.send in the producing stage and a galv.recv in each consuming stage
 * (docs/pipeline.md).
 *
 * Input: the global program with every top-level op tagged `stage = i`
 * (the stage partitioner, or by hand in tests) and shardings on each
 * stage's mesh (a stage's mesh is the mesh of its ops' shardings). For a
 * value defined in stage a and used in stage b != a:
 *   - source sharding: the value's own (replicated on a's mesh if none);
 *   - destination sharding: the sharding of a galv.reshard in stage b that
 *     consumes it (propagate-sharding's request), else the same dim -> axis
 *     names on b's mesh when b's mesh has those axes with the same sizes,
 *     else replicated on b's mesh;
 *   - the transfer: planner/cross_mesh.c (tiles, senders balanced by bytes,
 *     local all-gather when receivers replicate). The recv delivers the
 *     plan's effective sharding; when that differs from the destination
 *     (local all-gather) a galv.reshard on b's mesh follows, which
 *     spmd-partition lowers to the all-gather inside the receiving mesh.
 * send: operand the value; attrs peer (b), src_mesh, dst_mesh, bytes,
 * tiles, stage (a). recv: attrs peer (a), shape, dtype, src_mesh, dst_mesh,
 * bytes, tiles (per transfer: src rank, dst rank, offsets..., lengths...),
 * allgather (axes, when used), sharding, stage (b). Programs without stage
 * attributes pass through unchanged. */
#include "passes.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "planner/cross_mesh.h"

#define MAX_STAGES 1024

static int64_t op_stage(const gv_op *op) { return gv_get_int(op, "stage", -1); }

/* Does op (or a region inside it) use v? */
static bool uses(const gv_op *op, const gv_value *v) {
  for (int i = 0; i < op->nopnds; i++)
    if (op->opnds[i] == v) return true;
  for (int r = 0; r < op->nregions; r++)
    for (const gv_op *o = op->regions[r]->first; o; o = o->next)
      if (uses(o, v)) return true;
  return false;
}

static void replace_in(gv_module *m, gv_op *op, gv_value *from, gv_value *to) {
  for (int i = 0; i < op->nopnds; i++)
    if (op->opnds[i] == from) op->opnds[i] = to;
  for (int r = 0; r < op->nregions; r++) gv_replace_uses(op->regions[r], from, to);
  (void)m;
}

static const gv_sharding *copy_sharding(gv_module *m, const gv_sharding *s) {
  gv_sharding *n = gv_sharding_new(m, s->mesh, s->rank);
  *n = *s;
  return n;
}

int gv_pass_stage_split(gv_module *m) {
  if (!m || !m->main || !m->main->body) return 0;
  gv_block *body = m->main->body;
  int nstages = 0, any = 0;
  for (gv_op *op = body->first; op; op = op->next) {
    if (gv_ops[op->code].flags & GV_TERMINATOR) continue;
    int64_t s = op_stage(op);
    if (s >= 0) any = 1;
    if (s >= MAX_STAGES) return gv_error_op(m, op, "stage-split: stage %lld: at most %d stages", (long long)s, MAX_STAGES);
    if (s + 1 > nstages) nstages = (int)s + 1;
  }
  if (!any) return 0;
  const gv_mesh **mesh = gv_alloc(m->arena, sizeof(gv_mesh *) * (size_t)nstages);
  for (gv_op *op = body->first; op; op = op->next) {
    if (gv_ops[op->code].flags & GV_TERMINATOR) continue;
    int64_t s = op_stage(op);
    if (s < 0) return gv_error_op(m, op, "stage-split: op has no stage (every op needs stage = N once one has)");
    for (int i = 0; i < op->nres; i++) {
      const gv_sharding *sh = gv_op_sharding(op, i);
      if (!sh) continue;
      if (!mesh[s]) mesh[s] = sh->mesh;
      else if (mesh[s] != sh->mesh)
        return gv_error_op(m, op, "stage-split: stage %lld uses meshes '%s' and '%s' (one mesh per stage)", (long long)s,
                           mesh[s]->name, sh->mesh->name);
    }
  }
  for (int s = 0; s < nstages; s++)
    if (!mesh[s]) return gv_error(m, "stage-split: stage %d has no mesh (none of its ops has a sharding)", s);
  int ncross = 0;
  int64_t bytes = 0, direct = 0, naive = 0;
  gv_op *next;
  for (gv_op *op = body->first; op; op = next) {
    next = op->next;
    int64_t a = op_stage(op);
    if (a < 0 || op->code == GV_OP_SEND || op->code == GV_OP_RECV) continue;
    gv_op *after = op;
    for (int ri = 0; ri < op->nres; ri++) {
      gv_value *v = op->res[ri];
      for (int b = 0; b < nstages; b++) {
        if (b == a) continue;
        gv_op *first = NULL, *req = NULL;
        for (gv_op *u = op->next; u; u = u->next)
          if (op_stage(u) == b && uses(u, v)) {
            if (!first) first = u;
            if (!req && u->code == GV_OP_RESHARD && u->opnds[0] == v) {
              const gv_sharding *rs = gv_op_sharding(u, 0);
              if (rs && rs->mesh == mesh[b]) req = u;
            }
          }
        if (!first) continue;
        if (!gv_type_is_static(&v->type))
          return gv_error_op(m, op, "stage-split: a value crossing to stage %d has no static shape", b);
        const gv_sharding *src = gv_value_sharding(m, v);
        if (!src) src = gv_sharding_new(m, mesh[a], v->type.rank);
        gv_sharding *dst = gv_sharding_new(m, mesh[b], v->type.rank);
        if (req) {
          *dst = *gv_op_sharding(req, 0);
        } else {
          bool same = src->mesh->naxes == mesh[b]->naxes;
          for (int x = 0; same && x < src->mesh->naxes; x++)
            same = !strcmp(src->mesh->axis[x], mesh[b]->axis[x]) && src->mesh->size[x] == mesh[b]->size[x];
          if (same) {
            *dst = *src;
            dst->mesh = mesh[b];
            dst->partial = 0;
          }
        }
        gv_xmesh_plan pl;
        if (gv_xmesh_plan_make(&v->type, src, dst, true, &pl))
          return gv_error_op(m, op, "stage-split: value to stage %d: cannot plan the transfer", b);
        int stride = 2 + 2 * v->type.rank;
        int64_t *tiles = malloc(sizeof(int64_t) * (size_t)(pl.nx * stride + 1));
        if (!tiles) {
          gv_xmesh_free(&pl);
          return gv_error(m, "stage-split: out of memory");
        }
        for (int i = 0; i < pl.nx; i++) {
          int64_t *t = tiles + (size_t)i * (size_t)stride;
          t[0] = pl.x[i].src;
          t[1] = pl.x[i].dst;
          for (int d = 0; d < v->type.rank; d++) t[2 + d] = pl.x[i].off[d], t[2 + v->type.rank + d] = pl.x[i].len[d];
        }
        gv_op *snd = gv_op_new(m, GV_OP_SEND, 1, &v, 0);
        gv_op *rcv = gv_op_new(m, GV_OP_RECV, 0, NULL, 1);
        gv_op *ops2[2] = {snd, rcv};
        for (int k = 0; k < 2; k++) {
          gv_op *o = ops2[k];
          gv_op_set_loc(m, o, op->loc, op->onnx_op);
          gv_set_int(m, o, "peer", k ? a : b);
          gv_set_int(m, o, "stage", k ? b : a);
          gv_set_str(m, o, "src_mesh", mesh[a]->name);
          gv_set_str(m, o, "dst_mesh", mesh[b]->name);
          gv_set_int(m, o, "bytes", pl.bytes);
          gv_set_ints(m, o, "tiles", pl.nx * stride, tiles);
        }
        free(tiles);
        gv_set_ints(m, rcv, "shape", v->type.rank, v->type.dims);
        gv_set_type(m, rcv, "dtype", v->type.dtype);
        rcv->res[0]->type = v->type;
        rcv->res[0]->name = v->name;
        if (pl.ag_dim >= 0) {
          const char *ax[GV_MAX_MESH_AXES];
          int n = 0;
          for (int x = 0; x < mesh[b]->naxes; x++)
            if (pl.ag_axes & (1u << x)) ax[n++] = mesh[b]->axis[x];
          gv_set_strs(m, rcv, "allgather", n, ax);
        }
        const gv_sharding *eff = copy_sharding(m, &pl.eff);
        gv_set_shardings(m, rcv, &eff);
        /* place: send right after the definer (after earlier sends), recv before the first user */
        gv_insert_before(after->next, snd);
        after = snd;
        gv_insert_before(first, rcv);
        gv_value *val = rcv->res[0];
        bool needs_gather = !gv_sharding_equal(&pl.eff, dst);
        if (req && !needs_gather) {
          gv_replace_uses(body, req->res[0], val);
          gv_op_unlink(req);
          if (next == req) next = req->next;
        } else if (req) {
          req->opnds[0] = val; /* the reshard stays: eff -> dst, an all-gather inside b's mesh */
        } else if (needs_gather) {
          gv_op *rs = gv_op_new(m, GV_OP_RESHARD, 1, &val, 1);
          gv_op_set_loc(m, rs, op->loc, op->onnx_op);
          rs->res[0]->type = v->type;
          const gv_sharding *d2 = copy_sharding(m, dst);
          gv_set_shardings(m, rs, &d2);
          gv_set_int(m, rs, "stage", b);
          gv_insert_before(first, rs);
          val = rs->res[0];
        }
        for (gv_op *u = first; u; u = u->next)
          if (op_stage(u) == b && u != rcv && (!req || u != req)) replace_in(m, u, v, val);
        ncross++;
        bytes += pl.bytes;
        direct += pl.direct_bytes;
        naive += pl.naive_bytes;
        gv_xmesh_free(&pl);
      }
    }
  }
  if (!gv_pipe_opts.quiet)
    fprintf(stderr, "stage-split: %d stages, %d values cross, %lld bytes between meshes (%lld without the local all-gather, %lld naive)\n",
            nstages, ncross, (long long)bytes, (long long)direct, (long long)naive);
  return 0;
}
