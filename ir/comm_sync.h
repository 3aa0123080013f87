/* comm_sync.h — where a program waits for its collectives in flight: the
 * one rule both emitters place sync points by (codegen/comm.c) and the cost
 * model's two-stream simulation prices (planner/cost.c gv_cost_timeline).
 *
 * The collectives of a local program are posted in program order on one
 * queue (runtime/galv_comm.h) and run there while later ops compute; a sync
 * point waits for every call posted so far. An op needs one first when it
 * reads the result of a call in flight (through views, or inside its
 * regions), writes arena bytes that such a call reads or writes (the memory
 * plan may reuse an operand's bytes right after the collective), writes
 * outside the arena (training state), or is the function's return. Views,
 * constants and the arena op touch no bytes. A collective whose call goes
 * through the pack / unpack scratch buffers (a gathered or scattered dim
 * with a non-unit extent before it; an all_to_all whose split or concat dim
 * has one) is synced right after its call.
 *
 * The overlap pass's window: a collective marked `wait_posted` (the first
 * gradient reduction of a layer's backward) first waits for the calls
 * posted before the previous marked one (gv_comm_sync_prefix: the oldest
 * calls in flight, a prefix of the queue); the previous layer's stay in
 * flight. So at most two layers' gradient reductions are in flight, each
 * with a layer of backward to run under, and the memory plan frees the
 * operands of the calls waited for there. */
#ifndef GALV_IR_COMM_SYNC_H
#define GALV_IR_COMM_SYNC_H

#include <stdbool.h>
#include <stdint.h>

#include "ir.h"

typedef struct {
  const gv_value *res;     /* the result in flight (its root through views) */
  int64_t roff, rn;        /* its arena bytes (roff -1: none) */
  int64_t soff, sn;        /* the operand's arena bytes */
  int64_t end;             /* the caller's: when the call ends (the cost model's timeline) */
} gv_inflight;

typedef struct {
  const gv_module *m;
  const int64_t *argoff;   /* galv.arena arg_offsets */
  int nargoff;
  gv_inflight *p;
  int n, cap;
  int mark;                /* index in p of the last wait_posted call in flight, -1: none */
} gv_comm_sync;

/* The four collectives that go on the queue (all_reduce, all_gather,
 * reduce_scatter, all_to_all). */
bool gv_comm_is_collective(const gv_op *op);
void gv_comm_sync_init(gv_comm_sync *s, const gv_module *m);
void gv_comm_sync_free(gv_comm_sync *s);
/* Whether op needs a sync point before it (nothing in flight: false). */
bool gv_comm_sync_before(const gv_comm_sync *s, const gv_op *op);
/* A sync point: nothing is in flight after it. */
void gv_comm_sync_clear(gv_comm_sync *s);
/* Collective op marked wait_posted: how many of the oldest calls in flight
 * to wait for before it (those posted before the previous marked call; 0:
 * none). Asked when gv_comm_sync_before(op) is false. */
int gv_comm_sync_prefix(const gv_comm_sync *s, const gv_op *op);
/* The k oldest calls in flight were waited for. */
void gv_comm_sync_drop(gv_comm_sync *s, int k);
/* Collective op was posted and left in flight. */
void gv_comm_sync_post(gv_comm_sync *s, const gv_op *op);
/* Collective op's call goes through scratch and is synced right after it. */
bool gv_comm_sync_at_once(const gv_op *op);

#endif
