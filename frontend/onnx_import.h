/* onnx_import.h — ONNX ModelProto -> galvc IR.
 *
 * Maps each ONNX (op_type, opset) onto the core op set (ir/ops.def); graph
 * inputs become function arguments; float initializers that train become
 * parameters (galv.param) whose bytes stay in the model or are memory-mapped
 * from external data, frozen ones with more than one element frozen
 * parameters (galv.param + galv.frozen); integer initializers and frozen
 * one-element ones become constants (docs/autodiff.md, "Which initializers
 * train").
 * Symbolic dims are bound here, so later passes see static shapes. */
#ifndef GALV_ONNX_IMPORT_H
#define GALV_ONNX_IMPORT_H

#include "../ir/ir.h"

typedef struct {
  const char *name;     /* graph input name */
  int rank;
  int64_t dims[GV_MAX_RANK];
} gv_input_shape;

/* --freeze PATTERN (train = false) / --trainable PATTERN (train = true):
 * an initializer name or an fnmatch glob. */
typedef struct {
  const char *pattern;
  bool train;
} gv_train_select;

typedef struct {
  int nshapes;
  const gv_input_shape *shapes; /* --input-shape NAME=8x128 (override everything) */
  int64_t batch;                /* --batch: binds dim_params named like batch (default 1) */
  int64_t seq;                  /* --seq: binds dim_params named like seq (default 128) */
  bool load_weights;            /* false: shapes only (plan-only) */
  /* Which float initializers train (docs/autodiff.md, "Which initializers
   * train"): the default rule (gv_onnx_default_trains), then these in
   * order, the last match deciding. A pattern that matches no float
   * initializer is an error. */
  int nselect;
  const gv_train_select *select;
  /* Ops that unrolled Loops may emit in all (0: 1 << 22, some 4M; past it one
   * error line). The fuzz target sets less, so no input runs past its timeout. */
  int64_t max_unrolled_ops;
  /* galvc --seed: the seed of every training-mode Dropout's mask (galv.dropout's
   * attribute seed; docs/training.md "Dropout"); 0 by default */
  uint64_t seed;
} gv_import_options;

/* The default rule: whether a float initializer named name trains when no
 * --freeze / --trainable pattern matches it. */
bool gv_onnx_default_trains(const char *name);

/* Returns NULL after printing one error line naming the file (and the node
 * and op where there is one). */
gv_module *gv_import_onnx(const char *path, const gv_import_options *opt);

/* The same from bytes in memory (fuzzing, tests). source names the model in
 * errors; dir is the folder external data is relative to (NULL: external
 * data is rejected). opt may be NULL (batch 1, seq 128, weights loaded). */
gv_module *gv_import_onnx_buffer(const void *data, size_t len, const char *source, const char *dir,
                                 const gv_import_options *opt);

/* Reads a serialized ONNX TensorProto (the backend tests' input_0.pb ...)
 * into a tensor owned by m's arena. External data is rejected. Returns NULL
 * after printing one error line naming the file. */
gv_tensor *gv_read_tensor_pb(gv_module *m, const char *path);

/* NULL-terminated list of the ONNX op types (default domain) the frontend
 * maps, sorted by name. */
const char *const *gv_onnx_supported_ops(void);

/* Parses "8x128" into dims; returns rank or -1. */
int gv_parse_dims(const char *s, int64_t *dims, int max);

#endif
