/* onnx_import.h — ONNX ModelProto -> galvc IR.
 *
 * Maps each ONNX (op_type, opset) onto the core op set (ir/ops.def); graph
 * inputs become function arguments, initializers that are weights become
 * parameters (galv.param) whose bytes stay in the model or are memory-mapped
 * from external data; small integer / scalar initializers become constants.
 * Symbolic dims are bound here, so later passes see static shapes. */
#ifndef GALV_ONNX_IMPORT_H
#define GALV_ONNX_IMPORT_H

#include "../ir/ir.h"

typedef struct {
  const char *name;     /* graph input name */
  int rank;
  int64_t dims[GV_MAX_RANK];
} gv_input_shape;

typedef struct {
  int nshapes;
  const gv_input_shape *shapes; /* --input-shape NAME=8x128 (override everything) */
  int64_t batch;                /* --batch: binds dim_params named like batch (default 1) */
  int64_t seq;                  /* --seq: binds dim_params named like seq (default 128) */
  bool load_weights;            /* false: shapes only (plan-only) */
} gv_import_options;

/* Returns NULL after printing one error line naming the file (and the node
 * and op where there is one). */
gv_module *gv_import_onnx(const char *path, const gv_import_options *opt);

/* Parses "8x128" into dims; returns rank or -1. */
int gv_parse_dims(const char *s, int64_t *dims, int max);

#endif
