/* onnx_internal.h — shared state of the ONNX frontend (not a public API).
 *
 * The frontend is split in three files: onnx_read.c (file mapping, protobuf
 * unpacking, initializer / external-data decoding), onnx_import.c (graphs,
 * scopes, graph inputs and dim binding, the public entry points) and
 * onnx_ops.c (the (op_type, opset) -> core op table). They share the import
 * context declared here. */
#ifndef GALV_ONNX_INTERNAL_H
#define GALV_ONNX_INTERNAL_H

#include "onnx.pb-c.h"
#include "onnx_import.h"

/* One memory-mapped external data file (one mapping per file). */
typedef struct gv_xfile {
  char *real;           /* realpath of the file */
  const unsigned char *addr; /* NULL when not mapped (size only, or empty file) */
  size_t size;
  struct gv_xfile *next;
} gv_xfile;

/* A name -> value binding; v == NULL marks a poisoned name (an output we do
 * not support, e.g. LayerNormalization's mean): using it is an error. */
typedef struct gv_sym {
  const char *name;
  gv_value *v;
  const char *poison;   /* why the name cannot be used (v == NULL) */
  /* an ONNX sequence (SequenceEmpty, SplitToSequence, a Loop's carried
   * sequence ...): an import-time list of tensor values; v is NULL then */
  bool is_seq;
  int nseq;
  gv_value **seq;
  struct gv_sym *next;
} gv_sym;

/* One graph scope: the main graph or an If branch. Lookups walk outwards so
 * subgraphs see outer-scope values. */
typedef struct gv_scope {
  gv_sym **tab;
  size_t cap, n;
  struct gv_scope *parent;
  gv_block *block;      /* where ops of this scope are appended */
} gv_scope;

typedef struct {
  gv_module *m;
  gv_arena *tmp;        /* import-time scratch, freed at the end */
  const gv_import_options *opt;
  const char *dir;      /* model folder for external data, NULL: none allowed */
  int opset;            /* default-domain opset */
  gv_scope *scope;      /* innermost scope */
  const Onnx__NodeProto *node; /* node being imported (for locations/errors) */
  gv_xfile *xfiles;
  int depth;            /* subgraph nesting */
  int *sel_float, *sel_other; /* per --freeze / --trainable pattern: float / other initializers it matched */
  /* import-time values found so far (onnx_ops.c v_eval): value -> tensor, open addressing */
  const void **memo_k;
  const void **memo_v;
  size_t memo_cap, memo_n;
  int64_t unrolled;     /* body nodes imported by unrolled Loops so far (capped) */
  int64_t ndropout;     /* training-mode Dropout nodes so far: the next one's galv.dropout id */
} gv_ictx;

/* ---- onnx_read.c */
/* ONNX TensorProto.DataType -> dtype; GV_DT_UNKNOWN when unsupported. */
gv_dtype gv_onnx_dtype(int32_t onnx_type);
const char *gv_onnx_dtype_name(int32_t onnx_type);
/* Decodes a tensor into an arena-owned gv_tensor (constants). what names it
 * in errors ("initializer 'w'", "attribute 'value'"). Returns NULL after
 * reporting. */
gv_tensor *gv_onnx_tensor(gv_ictx *c, const Onnx__TensorProto *t, const char *what);
/* Weight bytes of a float initializer for a parameter: external data points
 * into the file mapping (no copy), raw/typed data is copied into the arena.
 * With load_weights false returns NULL in *data after checking sizes. */
int gv_onnx_param_data(gv_ictx *c, const Onnx__TensorProto *t, const gv_type *ty, const void **data);
/* Static type of an initializer (checks dtype, dims, overflow). */
int gv_onnx_tensor_type(gv_ictx *c, const Onnx__TensorProto *t, const char *what, gv_type *out);
void gv_onnx_xfiles_free(gv_ictx *c);

/* ---- onnx_import.c */
/* Escapes a name for one-line messages (string in the scratch arena). */
const char *gv_esc(gv_ictx *c, const char *s);
/* "node 'NAME' (OpType): message" for the node being imported. Returns -1. */
int gv_node_error(gv_ictx *c, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
/* Resolves a value name through the scope chain; reports undefined values. */
gv_value *gv_lookup(gv_ictx *c, const char *name);
int gv_bind(gv_ictx *c, const char *name, gv_value *v);
int gv_bind_poison(gv_ictx *c, const char *name, const char *why);
/* Sequences: bound as a list of n values (copied); the lookup gives their
 * count and the list, or -1 after reporting (undefined, or a tensor). A
 * tensor lookup of a sequence's name is an error (gv_lookup). */
int gv_bind_seq(gv_ictx *c, const char *name, gv_value *const *vals, int n);
int gv_lookup_seq(gv_ictx *c, const char *name, gv_value ***vals);
/* Whether name is bound to a sequence (false when unbound). */
bool gv_is_seq(gv_ictx *c, const char *name);
/* A graph's initializers and nodes into the current scope (no outputs): a
 * Loop body, imported once per unrolled iteration. */
int gv_import_graph_nodes(gv_ictx *c, const Onnx__GraphProto *g);
/* Imports a graph's initializers and nodes into the current scope; outs gets
 * the graph output values (arena array of g->n_output). */
int gv_import_graph_body(gv_ictx *c, const Onnx__GraphProto *g, gv_value ***outs);
gv_scope *gv_scope_push(gv_ictx *c, gv_block *b);
void gv_scope_pop(gv_ictx *c);

/* ---- onnx_ops.c */
int gv_import_node(gv_ictx *c, const Onnx__NodeProto *n);
/* More than one node of g (subgraphs included) that no table row imports:
 * one error line naming each op type, its count and first node. */
int gv_onnx_check_supported(gv_ictx *c, const Onnx__GraphProto *g);

#endif
