/* parse.c — STUB: being written. */
#include "ir.h"
gv_module *gv_parse_module(const char *text, size_t len, const char *source) {
  (void)text; (void)len;
  gv_error_plain("%s: parser not implemented", source);
  return 0;
}
