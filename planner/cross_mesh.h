/* cross_mesh.h — cross-mesh resharding plans (docs/pipeline.md; Alpa,
 * Zhuang et al. MLSys'23): a value leaves a stage with one sharding on the
 * sender's mesh and enters the next stage with another on the receiver's.
 * Per receiving device, its tile (global box); per tile, the sender tiles
 * that overlap it; each overlap may be held by several senders (replicas),
 * and the sender is chosen greedily by least bytes sent so far. Local
 * all-gather: when the receivers replicate the value over mesh axes R, the
 * destination is first split further over R (each byte crosses between the
 * meshes once), then all-gathered over R inside the receiving mesh. */
#ifndef GALV_CROSS_MESH_H
#define GALV_CROSS_MESH_H

#include <stdbool.h>
#include <stdint.h>

#include "ir/ir.h"

typedef struct {
  int src, dst;                   /* ranks on the sender's / receiver's mesh */
  int64_t off[GV_MAX_RANK], len[GV_MAX_RANK];
  int64_t bytes;
} gv_xfer;

typedef struct {
  int nx;
  gv_xfer *x;                     /* malloc'd; gv_xmesh_free */
  int64_t bytes;                  /* crossing between the meshes */
  int64_t direct_bytes;           /* the same without the local all-gather */
  int64_t naive_bytes;            /* every receiver gets the whole tensor */
  int64_t max_send;               /* most bytes one sender sends */
  int ag_dim;                     /* local all-gather: dim, -1 none */
  unsigned ag_axes;               /* and the receiving mesh's axes it gathers over */
  gv_sharding eff;                /* the sharding the transfers deliver (dst + ag split) */
} gv_xmesh_plan;

/* Plans moving a value of type t from src (on its mesh) to dst (on another,
 * or the same, mesh). local_allgather: allow the optimisation. Returns 0, or
 * -1 after one error line (a partial-sum source, a split that does not
 * divide, a type that is not static). */
int gv_xmesh_plan_make(const gv_type *t, const gv_sharding *src, const gv_sharding *dst, bool local_allgather,
                       gv_xmesh_plan *out);
void gv_xmesh_free(gv_xmesh_plan *p);

#endif
