/* layer_units.h — the planner's units found by structure (docs/planner.md,
 * "Search space"): the repeated isomorphic blocks of the forward program
 * are its layers, whatever the ONNX names say.
 *
 * gv_layer_units_find reads m's main function (a forward or a training
 * program: the forward ops are those whose location is an ONNX node's, not
 * ".../grad", ".../recompute", "optimizer/...", "accumulate/...",
 * "autodiff/...", before the first backward op: with microbatches, the
 * first one's forward). Each forward op (constants aside) is hashed by its op
 * code, operand count, result types and, per operand, whether it is a
 * parameter (and its type), a data input or a computed value; the op
 * sequence in program order is searched for the run of consecutive equal
 * blocks covering the most ops (ties: the shorter block, then the
 * earlier), blocks that use a parameter, two at least, each reading a
 * value the block before it computes (chained, as layers are by the
 * residual stream; parallel branches such as the q / k / v projections of
 * one input are no layers). Within the slack of
 * that run the block boundary is put where the fewest computed values
 * cross it (the residual stream: one). The ops before and after the run
 * are searched again for runs of blocks at least a quarter as long (a
 * second block kind: T5's decoder beside its encoder). Units: 0 = every
 * op outside a run, 1..L the blocks in program order. A parameter belongs
 * to the unit of the first forward op that reads it, an optimizer state
 * to its parameter's unit (by its name "opt.K:PARAM").
 *
 * gv_layer_units_loc maps any op location of m, or of a program derived
 * from m (realised, partitioned, fused clones), to its unit: the forward
 * node's own, with "/grad", "/recompute" or further components stripped,
 * "optimizer/OPT/PARAM[/...]" and "accumulate/PARAM" the parameter's.
 * Unknown: 0. */
#ifndef GALV_LAYER_UNITS_H
#define GALV_LAYER_UNITS_H

#include "../ir/ir.h"

typedef struct {
  int nl;         /* layers (units 1..nl) */
  int nkinds;     /* distinct block kinds (runs found) */
  int nargs;
  int *arg_unit;  /* per argument of m's main body: its unit (params and optimizer state; else 0) */
  int *kind;      /* per layer (0-based): its run's index (0 = the first run in program order) */
  int *len;       /* per layer: its block's forward op count */
  /* location -> unit: open addressing, keys copied (the table outlives m) */
  char **key;
  int *val;
  uint64_t *khash; /* per slot: its key's hash */
  size_t *klen;    /* per slot: its key's length (less the namespace byte) */
  /* one module's op locations by address (gv_layer_units_bind): read while `bound` */
  const char **pkey;
  int *pval;
  int pcap;
  bool bound;
  int cap, n;
} gv_layer_units;

/* Fills u from m. Returns 0, or -1 (out of memory, reported). */
int gv_layer_units_find(const gv_module *m, gv_layer_units *u);
int gv_layer_units_loc(const gv_layer_units *u, const char *loc);
void gv_layer_units_free(gv_layer_units *u);

/* gv_layer_units_bind(u, m): the unit of every op location of m (its main
 * function, regions included) kept by the string's address, so that a copy
 * sharing m's location strings (gv_module_clone_shared) is looked up
 * without hashing its names; read only while u->bound is set, which the
 * caller sets while m is alive (the same units as by name). Returns 0, or
 * -1 out of memory (reported). */
int gv_layer_units_bind(gv_layer_units *u, const gv_module *m);

/* The units the planner found, for the passes that group ops by layer
 * (regather, overlap's prefetch) on module m: plan-sharding sets them for
 * each candidate it realises and for the main program after its choice.
 * gv_layer_units_for(m): those units when m is the module they were set
 * for (its serial: a later module in a freed one's memory is not) and its
 * main function the same, else NULL (the pass then finds them itself:
 * gv_layer_units_find). */
void gv_layer_units_hint(const gv_module *m, const gv_layer_units *u);
const gv_layer_units *gv_layer_units_for(const gv_module *m);
/* The hint as set, kept and put back around work that sets its own (plan-sharding's report realises candidates
 * after the main program's hint is set: the main program's regather and overlap must still see theirs) */
typedef struct {
  uint64_t serial;
  const void *f, *u;
} gv_layer_units_hint_state;
gv_layer_units_hint_state gv_layer_units_hint_get(void);
void gv_layer_units_hint_put(gv_layer_units_hint_state s);

#endif
