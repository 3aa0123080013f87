/* ir.h — the galvc IR: types, attributes, values, ops, blocks, functions.
 *
 * SSA over tensors. A module holds one function ("main") whose block
 * arguments are the graph inputs followed by the parameters (weights); the
 * block ends in galv.return. Every op carries the ONNX node it came from
 * (name and op type) so that any error can name it. All IR memory belongs to
 * the module's arena: ops are unlinked, never freed one by one.
 *
 * This header must never grow pass logic: passes live in passes/, one file
 * each; shape and value rules live with the op table (ir/ops.def).
 */
#ifndef GALV_IR_H
#define GALV_IR_H

#include <stdarg.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/* ---------------------------------------------------------------- arena */

typedef struct gv_arena gv_arena;
gv_arena *gv_arena_new(void);
void gv_arena_free(gv_arena *a);
void *gv_alloc(gv_arena *a, size_t n); /* zeroed, 16-byte aligned; aborts on OOM */
char *gv_strdup(gv_arena *a, const char *s);
char *gv_strndup(gv_arena *a, const char *s, size_t n);
size_t gv_arena_bytes(const gv_arena *a);

/* ---------------------------------------------------------------- types */

typedef enum {
  GV_DT_UNKNOWN = 0,
  GV_DT_F32, GV_DT_F16, GV_DT_BF16, GV_DT_F64,
  GV_DT_I64, GV_DT_I32, GV_DT_I16, GV_DT_I8, GV_DT_U8, GV_DT_BOOL,
  GV_DT_COUNT
} gv_dtype;

size_t gv_dtype_size(gv_dtype t);          /* bytes per element (bool: 1) */
const char *gv_dtype_name(gv_dtype t);     /* MLIR spelling: f32, i64, i1, ui8, ... */
bool gv_dtype_parse(const char *s, size_t n, gv_dtype *out);
bool gv_dtype_is_float(gv_dtype t);
bool gv_dtype_is_int(gv_dtype t);          /* signed/unsigned integers, not bool */

#define GV_MAX_RANK 8
#define GV_DIM_UNKNOWN (-1)                /* printed '?' */
#define GV_RANK_UNKNOWN (-1)               /* printed tensor<*xT> */

typedef struct {
  gv_dtype dtype;
  int rank;                                /* GV_RANK_UNKNOWN when unranked */
  int64_t dims[GV_MAX_RANK];
} gv_type;

gv_type gv_type_make(gv_dtype dt, int rank, const int64_t *dims);
gv_type gv_type_unranked(gv_dtype dt);
bool gv_type_is_static(const gv_type *t);  /* ranked, every dim known */
int64_t gv_type_numel(const gv_type *t);   /* -1 unless static; -2 on int64 overflow */
bool gv_type_equal(const gv_type *a, const gv_type *b);
/* Writes "tensor<2x?x4xf32>" into buf; returns chars written (snprintf). */
int gv_type_str(const gv_type *t, char *buf, size_t n);

/* ---------------------------------------------------------------- tensors */

/* A constant tensor. data holds numel * dtype_size bytes, little-endian,
 * row-major; bool is one byte per element (0/1). data is owned by the
 * module's arena or by a mapped weights file; never freed on its own. */
typedef struct {
  gv_type type;
  void *data;
} gv_tensor;

gv_tensor *gv_tensor_new(gv_arena *a, gv_type type); /* zeroed data; type must be static */
/* Element access converting through double / int64 (any dtype). */
double gv_tensor_get_f(const gv_tensor *t, int64_t i);
int64_t gv_tensor_get_i(const gv_tensor *t, int64_t i);
void gv_tensor_set_f(gv_tensor *t, int64_t i, double v);
void gv_tensor_set_i(gv_tensor *t, int64_t i, int64_t v);
int64_t gv_tensor_numel(const gv_tensor *t);
/* fp16 / bf16 <-> f32 conversion (round to nearest even). */
float gv_f16_to_f32(uint16_t h);
uint16_t gv_f32_to_f16(float f);
float gv_bf16_to_f32(uint16_t h);
uint16_t gv_f32_to_bf16(float f);

/* ---------------------------------------------------------------- attributes */

typedef enum {
  GV_ATTR_INT,      /* 5 : i64 */
  GV_ATTR_FLOAT,    /* 1.000000000e-05 : f32 */
  GV_ATTR_STR,      /* "abc" */
  GV_ATTR_INTS,     /* array<i64: 1, 2> */
  GV_ATTR_FLOATS,   /* array<f32: 1.0e+00, ...> */
  GV_ATTR_STRS,     /* ["a", "b"] */
  GV_ATTR_TENSOR,   /* dense<...> : tensor<...> */
  GV_ATTR_TYPE,     /* f32 (a dtype) */
  GV_ATTR_UNIT,     /* present, no value (printed as the bare name) */
  GV_ATTR_SHARDING, /* #galv.sharding<@m, [{"dp"}, {}]> (one) or [#galv.sharding<...>, ...] */
} gv_attr_kind;

/* ---------------------------------------------------------------- meshes and shardings (docs/sharding.md) */

#define GV_MAX_MESH_AXES 3

/* "galv.mesh"() {axes = #galv.axes<["dp"=2, "tp"=4]>, sym_name = "m"}: ranks
 * numbered row-major over the axes (the last varies fastest). */
typedef struct {
  const char *name;
  int naxes;
  const char *axis[GV_MAX_MESH_AXES];
  int64_t size[GV_MAX_MESH_AXES];
  /* predicted_bytes: each rank's sent bytes per run per collective kind
   * (all_reduce, all_gather, reduce_scatter, all_to_all) as the planner
   * predicted them from the global program (gv_cost_comm_bytes), recorded
   * by spmd-partition; has_predicted false: none. */
  bool has_predicted;
  int64_t predicted[4];
} gv_mesh;

/* A value's layout on a mesh: per dim the mesh axes (indices) that split it,
 * major first, in mesh order; partial: bit a set = a pending sum over axis a. */
typedef struct {
  const gv_mesh *mesh;
  int rank;
  uint8_t naxes[GV_MAX_RANK];
  uint8_t axes[GV_MAX_RANK][GV_MAX_MESH_AXES];
  unsigned partial;
} gv_sharding;

typedef struct {
  const char *name;
  gv_attr_kind kind;
  union {
    int64_t i;
    float f;
    const char *s;
    struct { int n; int64_t *v; } ints;
    struct { int n; float *v; } floats;
    struct { int n; const char **v; } strs;
    gv_tensor *t;
    gv_dtype ty;
    struct { int n; const gv_sharding **v; } sh; /* one per result */
  } u;
} gv_attr;

/* ---------------------------------------------------------------- ops */

typedef enum {
#define X(E, name, mi, ma, nr, fl, inf, ev, gr, sh) GV_OP_##E,
#include "ops.def"
#undef X
  GV_OP_COUNT
} gv_opcode;

enum {
  GV_PURE = 1 << 0,         /* no side effects: dce may remove it */
  GV_ELEMENTWISE = 1 << 1,
  GV_COMMUTATIVE = 1 << 2,
  GV_TERMINATOR = 1 << 3,
  GV_VIEW = 1 << 4,         /* changes only the shape, never the bytes */
  GV_REDUCTION = 1 << 5,
};

typedef struct gv_module gv_module;
typedef struct gv_op gv_op;
typedef struct gv_block gv_block;
typedef struct gv_value gv_value;

/* Shape inference: sets op's result types from operand types. values[i] is
 * the constant value of operand i when known (constant op, or computed by
 * shape-infer's value propagation), else NULL. Returns 0, or -1 after
 * reporting an error through gv_error_op. */
typedef int (*gv_infer_fn)(gv_module *m, gv_op *op, const gv_tensor *const *values);
/* Reference evaluation: all operand values given; results' types are set
 * (by shape inference) before the call; writes out[i] (allocated in the
 * module arena). Returns 0, or -1 after reporting an error. */
typedef int (*gv_eval_fn)(gv_module *m, const gv_op *op, const gv_tensor *const *in, gv_tensor **out);

/* Gradient rule (ir/grad.c): given the gradients of op's results (dres[i],
 * NULL when none reaches result i), builds IR ops before `before` computing
 * the gradient of every operand i with need[i] into dopnds[i] (NULL: none).
 * Returns 0, or -1 after reporting an error naming the op. */
typedef int (*gv_grad_fn)(gv_module *m, gv_op *op, gv_value *const *dres, const bool *need, gv_value **dopnds,
                          gv_op *before);

/* Sharding rule (ir/shard_rules.c, as Shardy's OpShardingRule): the op's
 * dimensions as factors. Every operand and result dim lists the factors it
 * is made of (major first: a reshape [B,T,H*D] -> [B,T,H,D] gives the H*D
 * dim the factors H, D); a dim with no factor must stay unsharded (a
 * normalised axis, a broadcast size-1 dim, a concat axis). A PASS factor
 * may be split the same way everywhere it occurs; a REDUCE factor
 * (contracting) split over axes A leaves the result a partial sum over A;
 * a GATHER factor (the table dim of an embedding gather) split over A gives
 * a partial sum of masked lookups. linear: a pending sum on the operands
 * passes through (add/sub with equal partial axes, views, neg, transpose). */
#define GV_MAX_FACTORS 16
#define GV_SHARD_MAX_VALUES 8
#define GV_DIM_FACTORS 4
enum { GV_FACTOR_PASS = 0, GV_FACTOR_REDUCE = 1, GV_FACTOR_GATHER = 2 };
typedef struct {
  int nfactors;
  int64_t size[GV_MAX_FACTORS];
  uint8_t kind[GV_MAX_FACTORS];
  int nvals[2];                         /* [0] operands, [1] results covered */
  int rank[2][GV_SHARD_MAX_VALUES];
  uint8_t nf[2][GV_SHARD_MAX_VALUES][GV_MAX_RANK];
  int8_t f[2][GV_SHARD_MAX_VALUES][GV_MAX_RANK][GV_DIM_FACTORS];
  bool linear;
} gv_shard_rule;
/* Fills r for op (static types needed). Returns 0, or 1 when the op has no
 * rule (then every operand and result is replicated). */
typedef int (*gv_shard_fn)(const gv_op *op, gv_shard_rule *r);

typedef struct {
  const char *name;     /* without the "galv." prefix */
  int min_operands, max_operands; /* max -1: variadic */
  int num_results;      /* -1: variadic */
  unsigned flags;
  gv_infer_fn infer;
  gv_eval_fn eval;
  gv_grad_fn grad;      /* gv_grad_none: no gradient flows; gv_grad_missing: no rule */
  gv_shard_fn shard;    /* gv_shard_none: no rule, replicated */
} gv_opinfo;

extern const gv_opinfo gv_ops[GV_OP_COUNT];
bool gv_opcode_lookup(const char *name, size_t n, gv_opcode *out); /* name without "galv." */

struct gv_value {
  gv_type type;
  gv_op *def;           /* defining op, NULL for block arguments */
  gv_block *block;      /* owning block for block arguments */
  int index;            /* result index or argument index */
  int nuses;            /* valid after gv_count_uses */
  int id;               /* scratch for passes / printer */
  const char *name;     /* ONNX value name, may be NULL */
};

struct gv_op {
  gv_opcode code;
  int nopnds;
  gv_value **opnds;
  int nres;
  gv_value **res;
  int nattrs;           /* sorted by name, unique */
  gv_attr *attrs;
  const char *loc;      /* ONNX node name ("" when unnamed) */
  const char *onnx_op;  /* ONNX op type it came from, may be NULL */
  int nregions;
  gv_block **regions;
  gv_op *prev, *next;
  gv_block *parent;
  int id;               /* scratch */
};

struct gv_block {
  int nargs, cap_args;
  gv_value **args;
  gv_op *first, *last;
  gv_op *parent;        /* enclosing op for regions, NULL for a function body */
};

typedef struct {
  const char *name;         /* "main" */
  gv_block *body;           /* args: inputs then params; ends in galv.return */
  const char **arg_names;   /* per block arg */
  bool *arg_is_param;       /* per block arg: a weight (galv.param) */
  const void **param_data;  /* per block arg: weight bytes when loaded, else NULL */
  const char **res_names;   /* per return operand, may be NULL */
  int nres_names;
  /* Training step (passes/optimizer.c): arg_is_state marks optimizer state
   * args (galv.state; NULL = none); res_updates[i] is the arg that result i
   * replaces for the next step (galv.updates; -1 or NULL = none). */
  bool *arg_is_state;
  int *res_updates;
  /* Per block arg: a frozen parameter (galv.frozen; NULL = none): a weight
   * the step reads but does not train, so autodiff gives it no gradient and
   * the optimizer no update or state (docs/autodiff.md, "Which
   * initializers train"). */
  bool *arg_is_frozen;
  /* Per block arg: its sharding (galv.sharding in arg_attrs); NULL = none. */
  const gv_sharding **arg_sharding;
  int cap_args;             /* capacity of the per-arg arrays */
} gv_func;

struct gv_module {
  gv_arena *arena;
  const char *source;       /* file name used in diagnostics */
  gv_func *main;
  void *mappings;           /* weight file mappings, unmapped by gv_module_free */
  int nmappings;
  int cap_mappings;
  gv_mesh **meshes;         /* galv.mesh symbols, printed before the function */
  int nmeshes;
  uint64_t serial;          /* distinct per module made in this process: what refers to a module by it cannot match
                             * a later module allocated where a freed one was (a pointer can) */
};

gv_module *gv_module_new(const char *source);
void gv_module_free(gv_module *m);
void gv_module_add_mapping(gv_module *m, void *addr, size_t len);

/* meshes and shardings (ir/sharding.c) */
/* Adds a mesh (copies names); NULL after reporting a bad or duplicate one. */
gv_mesh *gv_module_add_mesh(gv_module *m, const char *name, int naxes, const char *const *axes, const int64_t *sizes);
const gv_mesh *gv_module_mesh(const gv_module *m, const char *name);
int gv_mesh_axis(const gv_mesh *mesh, const char *name, size_t len); /* -1 when none */
int64_t gv_mesh_devices(const gv_mesh *mesh);
gv_sharding *gv_sharding_new(gv_module *m, const gv_mesh *mesh, int rank); /* replicated */
bool gv_sharding_equal(const gv_sharding *a, const gv_sharding *b);
bool gv_sharding_is_replicated(const gv_sharding *s); /* no split, no partial */
int64_t gv_sharding_dim_split(const gv_sharding *s, int d); /* product of the sizes of dim d's axes */
/* Writes #galv.sharding<@m, [{"dp"}, {}], partial={"tp":sum}> into f (a FILE *). */
void gv_sharding_print(const gv_sharding *s, void *file);
/* The sharding of result i from the op's `sharding` attribute, or NULL. */
const gv_sharding *gv_op_sharding(const gv_op *op, int i);
/* Sets the `sharding` attribute from one sharding per result (may hold NULLs: then replicated). */
void gv_set_shardings(gv_module *m, gv_op *op, const gv_sharding *const *sh);
/* A value's sharding: its op's attribute or its function argument's; NULL = none. */
const gv_sharding *gv_value_sharding(const gv_module *m, const gv_value *v);
/* scatter_nd / scatter_elements' `reduction`: 0 none, 1 add, 2 mul, 3 max,
 * 4 min (runtime/galv_rt.h's GALV_SCATTER_RED); -1 another value. */
int gv_scatter_reduction(const gv_op *op);
/* The op table's sharding rule for op (1: none, everything replicated). */
int gv_shard_rule_of(const gv_op *op, gv_shard_rule *r);
/* Whether conv op's output channels are a sharding factor (group 1; ir/shard_rules.c). */
bool gv_conv_channel_split(const gv_op *op);

/* builder */
gv_func *gv_func_new(gv_module *m, const char *name);
gv_value *gv_func_add_arg(gv_module *m, gv_func *f, const char *name, gv_type type, bool is_param);
/* "PROG: training N parameters (P elements); frozen: K (Q elements): a, b"
 * (the first 8 frozen names; "frozen: none" without any). */
void gv_print_trainable(const gv_func *f, const char *prog, void *out); /* out: a FILE * */
/* Whether argument i is a parameter that trains (galv.param, not galv.frozen). */
static inline bool gv_arg_trains(const gv_func *f, int i) {
  return f->arg_is_param[i] && !(f->arg_is_frozen && f->arg_is_frozen[i]);
}
gv_block *gv_block_new(gv_module *m);
gv_value *gv_block_add_arg(gv_module *m, gv_block *b, gv_type type);
/* Creates an unlinked op with nres results of type tensor<*x?>. opnds may be NULL when nopnds is 0. */
gv_op *gv_op_new(gv_module *m, gv_opcode code, int nopnds, gv_value *const *opnds, int nres);
void gv_op_set_loc(gv_module *m, gv_op *op, const char *node_name, const char *onnx_op);
void gv_op_add_region(gv_module *m, gv_op *op, gv_block *b);
void gv_op_set_operands(gv_module *m, gv_op *op, int n, gv_value *const *opnds);
void gv_block_append(gv_block *b, gv_op *op);
void gv_insert_before(gv_op *pos, gv_op *op);
void gv_op_unlink(gv_op *op);
/* Replaces every use of from by to in the block and nested regions. */
void gv_replace_uses(gv_block *b, gv_value *from, gv_value *to);
/* The same for a result of def with nuses uses (gv_count_uses, kept up to
 * date): they follow def in its block (SSA), so the walk starts after def
 * and stops at the last one (linear in the distance to the last use, not
 * in the block); a count that does not match falls back to gv_replace_uses. */
void gv_replace_uses_after(gv_op *def, gv_value *from, gv_value *to, int nuses);
/* Deferred replacement of uses, for passes that replace values while they
 * walk a block in program order. In SSA every use of a value follows its
 * definition, so recording from -> to (gv_subst_add) and resolving each op's
 * operands when the walk reaches it (gv_subst_op) does what gv_replace_uses
 * over the rest of the block does, in time linear in the operands instead
 * of the block per replacement. `keep` (may be NULL) is an op that keeps
 * reading `from` (the reshard inserted after a producer, which replaces the
 * producer's result for everyone else). Chains resolve (a -> b, b -> c:
 * a -> c). gv_subst_block resolves every op of a block and its regions (at
 * the end of the walk, for the ops it skipped); galv.fused regions, which see
 * only their own block, are not entered. Out of memory exits. */
typedef struct gv_subst gv_subst;
gv_subst *gv_subst_new(void);
void gv_subst_free(gv_subst *s);
void gv_subst_add(gv_subst *s, gv_value *from, gv_value *to, const gv_op *keep);
bool gv_subst_empty(const gv_subst *s);
/* Grows with every gv_subst_add: resolving an op again resolves nothing new
 * while it is unchanged. */
uint64_t gv_subst_version(const gv_subst *s);
gv_value *gv_subst_value(const gv_subst *s, gv_value *v, const gv_op *user);
void gv_subst_op(const gv_subst *s, gv_op *op);
void gv_subst_block(const gv_subst *s, gv_block *b);
/* Sets nuses of every value in the block (recursively). */
void gv_count_uses(gv_block *b);
/* A function's arguments by name: the named ones sorted by (name, index),
 * so that matching names (optimizer state "opt.m:P" to parameter P) costs a
 * binary search instead of a scan of every argument. gv_arg_index_find
 * gives the range [*lo, *hi) of entries named `name` (their argument
 * indices ascending in idx[]). Returns 0, -1 when out of memory. */
typedef struct {
  const char **names;
  int *idx;
  int n;
} gv_arg_index;
int gv_arg_index_build(gv_arg_index *x, const gv_func *f);
void gv_arg_index_find(const gv_arg_index *x, const char *name, int *lo, int *hi);
void gv_arg_index_free(gv_arg_index *x);
gv_op *gv_block_terminator(gv_block *b);
/* The layer of a node or parameter name: its first segment NAME.N or
 * NAME/N, as "NAME.N" ("/transformer/h.0/attn/..." and
 * "optimizer/adamw/transformer.h.0.ln_1.weight" are h.0); "other" for none. */
void gv_layer_key(const char *loc, char *key, size_t n);
/* Convenience: a constant op holding t, appended nowhere. */
gv_op *gv_constant_new(gv_module *m, gv_tensor *t);

/* attributes (kept sorted by name; setting an existing name replaces it) */
void gv_set_int(gv_module *m, gv_op *op, const char *name, int64_t v);
void gv_set_float(gv_module *m, gv_op *op, const char *name, float v);
void gv_set_str(gv_module *m, gv_op *op, const char *name, const char *v);
void gv_set_ints(gv_module *m, gv_op *op, const char *name, int n, const int64_t *v);
void gv_set_floats(gv_module *m, gv_op *op, const char *name, int n, const float *v);
void gv_set_strs(gv_module *m, gv_op *op, const char *name, int n, const char *const *v);
void gv_set_tensor(gv_module *m, gv_op *op, const char *name, gv_tensor *t);
void gv_set_type(gv_module *m, gv_op *op, const char *name, gv_dtype t);
void gv_set_unit(gv_module *m, gv_op *op, const char *name);
void gv_set_attr(gv_module *m, gv_op *op, const gv_attr *a); /* copies the struct, not the payload */
void gv_remove_attr(gv_op *op, const char *name);
const gv_attr *gv_get_attr(const gv_op *op, const char *name);
/* Attribute names are interned (one pointer per name for the process: every
 * op's names are gv_intern's, whoever set or parsed them), so a look-up
 * with a key from gv_intern compares pointers only; a hot reader keeps its
 * key (static const char *k; if (!k) k = gv_intern("storage");). */
const char *gv_intern(const char *s);
const gv_attr *gv_get_attr_key(const gv_op *op, const char *key);
void gv_remove_attr_key(gv_op *op, const char *key); /* gv_remove_attr by a gv_intern key */
int64_t gv_get_int(const gv_op *op, const char *name, int64_t dflt);
float gv_get_float(const gv_op *op, const char *name, float dflt);
const char *gv_get_str(const gv_op *op, const char *name, const char *dflt);
/* ints: returns count (-1 if absent) and sets *v. */
int gv_get_ints(const gv_op *op, const char *name, const int64_t **v);

/* ---------------------------------------------------------------- diagnostics */

/* Program name used in messages ("galvc", "galv-opt"). */
extern const char *gv_progname;
/* While gv_error_quiet > 0 the three below print nothing (and still return
 * -1): a caller that runs passes only to price their result and keeps an
 * estimate when they refuse (passes/stage_cost.c stash_entries). */
extern int gv_error_quiet;
/* "galvc: error: SOURCE: node 'NAME' (OpType): message" on one line (the
 * node name escaped so it cannot break the line). Returns -1. */
int gv_error_op(const gv_module *m, const gv_op *op, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));
/* "galvc: error: SOURCE: message". Returns -1. */
int gv_error(const gv_module *m, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
/* "galvc: error: message". Returns -1. */
int gv_error_plain(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
/* Writes s with control characters, quotes and backslashes escaped as \XX. */
void gv_write_escaped(void *file, const char *s);

/* ---------------------------------------------------------------- text, verifier, evaluator */

/* Prints the module in MLIR generic syntax (ir/print.c). */
void gv_print_module(const gv_module *m, void *file);
/* A deep copy of m: the module gv_parse_module would build from
 * gv_print_module's text, without printing and parsing (ir/clone.c). NULL
 * when m is not well-formed enough to copy (a use before its definition, a
 * sharding on an unknown mesh): go through the text then. m's value ids are
 * scratch. */
gv_module *gv_module_clone(const gv_module *m);
/* gv_module_clone, but the copy's constants (tensor attributes, bool ones
 * aside) point at m's data instead of copies of it, and its ops' locations
 * and ONNX op names at m's strings: only for a copy that is freed before m
 * and never writes a constant's data or a location's bytes (the planner's
 * candidate realisations). */
gv_module *gv_module_clone_shared(const gv_module *m);
/* Parses text printed by gv_print_module (ir/parse.c). source names the file
 * in errors. Returns NULL after reporting an error. */
gv_module *gv_parse_module(const char *text, size_t len, const char *source);
/* Checks structure: operand counts per op table, SSA dominance, terminators,
 * attribute order. Returns 0 or -1 after reporting (ir/verify.c). */
int gv_verify(const gv_module *m);
/* Infers result types of one op (calls gv_ops[op->code].infer). */
int gv_infer_op(gv_module *m, gv_op *op, const gv_tensor *const *values);
/* Evaluates one op on constant inputs (calls gv_ops[op->code].eval). */
int gv_eval_op(gv_module *m, const gv_op *op, const gv_tensor *const *in, gv_tensor **out);

/* The table's rule functions (defined in ir/infer.c, ir/eval.c, ir/grad.c and
 * ir/train_ops.c). */
#define X(E, name, mi, ma, nr, fl, inf, ev, gr, sh)                                           \
  int inf(gv_module *m, gv_op *op, const gv_tensor *const *values);                           \
  int ev(gv_module *m, const gv_op *op, const gv_tensor *const *in, gv_tensor **out);         \
  int gr(gv_module *m, gv_op *op, gv_value *const *dres, const bool *need, gv_value **dopnds, gv_op *before); \
  int sh(const gv_op *op, gv_shard_rule *r);
#include "ops.def"
#undef X

#endif
