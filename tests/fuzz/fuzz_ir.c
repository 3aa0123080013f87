/* fuzz_ir.c — libFuzzer target for the IR text parser (ir/parse.c), as a
 * round trip: every input that parses is printed, the print parsed again
 * and printed again, and the two prints must be equal (the printer's output
 * is the parser's language, and printing is a fixed point after one trip).
 * The verifier then runs on the module, as galv-opt does before any pass.
 * A print that does not parse back, or two different prints, abort (a
 * finding); a rejected input must be one error line, never a crash. */
#define _GNU_SOURCE
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "ir/ir.h"

static char *print(const gv_module *m, size_t *len) {
  char *buf = NULL;
  FILE *f = open_memstream(&buf, len);
  if (!f) abort();
  gv_print_module(m, f);
  fclose(f);
  return buf;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  gv_module *m = gv_parse_module((const char *)data, size, "fuzz.mlir");
  if (!m) return 0;
  size_t n1, n2;
  char *p1 = print(m, &n1);
  gv_module *m2 = gv_parse_module(p1, n1, "fuzz-printed.mlir");
  if (!m2) {
    fprintf(stdout, "round trip: the printed module does not parse:\n%s\n", p1);
    fflush(stdout);
    abort();
  }
  char *p2 = print(m2, &n2);
  if (n1 != n2 || memcmp(p1, p2, n1)) {
    fprintf(stdout, "round trip: the prints differ:\n--- first\n%s\n--- second\n%s\n", p1, p2);
    fflush(stdout);
    abort();
  }
  (void)gv_verify(m);
  free(p1), free(p2);
  gv_module_free(m2);
  gv_module_free(m);
  return 0;
}
