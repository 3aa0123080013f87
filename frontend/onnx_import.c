/* onnx_import.c — STUB: being written. */
#include "onnx_import.h"
gv_module *gv_import_onnx(const char *path, const gv_import_options *opt) {
  (void)opt;
  gv_error_plain("%s: ONNX import not implemented", path);
  return 0;
}
int gv_parse_dims(const char *s, int64_t *dims, int max) { (void)s; (void)dims; (void)max; return -1; }
