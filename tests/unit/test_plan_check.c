/* test_plan_check.c — the CPU emitter's check of the memory plan
 * (codegen/cpu/emit.c): hand-written plans of a chain x -> neg -> exp ->
 * tanh (live ranges x [0,1], %0 [1,2], %1 [2,3], %2 [3,4]) and an unused
 * result. A plan where two values live at the same time share a byte is
 * refused with its error line, whichever value comes first and however far
 * apart the two are; the allowed cases pass: disjoint live ranges sharing
 * bytes, and an elementwise op writing over an operand of its size that
 * dies there. The check's fast path (a sweep with the live values ordered
 * by offset) must refuse exactly what the pairwise definition refuses, so
 * each case is one the sweep sees differently: reuse, in-place, overlap
 * below and above, overlap by an unused result, overlap with an input. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "codegen/codegen.h"
#include "ir/ir.h"

static int fails;
#define CHECK(c, ...)                                                                              \
  do {                                                                                             \
    if (!(c)) {                                                                                    \
      fprintf(stderr, "FAIL %s:%d: ", __FILE__, __LINE__);                                         \
      fprintf(stderr, __VA_ARGS__);                                                                \
      fputc('\n', stderr);                                                                         \
      fails++;                                                                                     \
    }                                                                                              \
  } while (0)

/* The chain with offsets x, %0, %1, %2, %3 (%3 = neg(%0), unused, placed
 * unless u < 0: then it is left out); bytes = arena size. */
static int emit(long long x, long long a, long long b, long long c, long long u, const char *want) {
  char text[4096], dir[] = "/tmp/test_plan_check.XXXXXX", err[256] = "";
  snprintf(text, sizeof text,
           "\"galv.func\"() ({\n"
           "^bb0(%%x: tensor<32xf32>):\n"
           "  \"galv.arena\"() {arg_offsets = array<i64: %lld>, bytes = 4096 : i64, lower_bound = 40 : i64} : () -> () "
           "loc(\"arena\")\n"
           "  %%0 = \"galv.neg\"(%%x) {offsets = array<i64: %lld>} : (tensor<32xf32>) -> tensor<32xf32> loc(\"neg\")\n"
           "%s"
           "  %%1 = \"galv.exp\"(%%0) {offsets = array<i64: %lld>} : (tensor<32xf32>) -> tensor<32xf32> loc(\"exp\")\n"
           "  %%2 = \"galv.tanh\"(%%1) {offsets = array<i64: %lld>} : (tensor<32xf32>) -> tensor<32xf32> loc(\"tanh\")\n"
           "  \"galv.return\"(%%2) : (tensor<32xf32>) -> () loc(\"return\")\n"
           "}) {arg_attrs = [{galv.name = \"x\"}], res_attrs = [{galv.name = \"y\"}], sym_name = \"main\"} : () -> ()\n",
           x, a, u >= 0 ? "  %3 = \"galv.neg\"(%0) {offsets = array<i64: UOFF>} : (tensor<32xf32>) -> tensor<32xf32> loc(\"unused\")\n" : "",
           b, c);
  char *p = strstr(text, "UOFF");
  if (p) {
    char rest[4096];
    snprintf(rest, sizeof rest, "%s", p + 4);
    snprintf(p, sizeof text - (size_t)(p - text), "%lld%s", u, rest);
  }
  gv_module *m = gv_parse_module(text, strlen(text), "plan.mlir");
  if (!m) {
    fprintf(stderr, "FAIL: the test's IR does not parse\n");
    return fails++, -1;
  }
  if (!mkdtemp(dir)) return fails++, -1;
  /* the error line goes to stderr: catch it in a file */
  char ef[300];
  snprintf(ef, sizeof ef, "%s.err", dir);
  fflush(stderr);
  int saved = dup(2);
  FILE *cap = fopen(ef, "w");
  dup2(fileno(cap), 2);
  int rc = gv_emit_cpu(m, dir, NULL);
  fflush(stderr);
  dup2(saved, 2);
  close(saved);
  fclose(cap);
  cap = fopen(ef, "r");
  if (!fgets(err, sizeof err, cap)) err[0] = 0;
  fclose(cap);
  remove(ef);
  char cmd[400];
  snprintf(cmd, sizeof cmd, "rm -rf '%s'", dir);
  if (system(cmd)) fails++;
  gv_module_free(m);
  if (want) CHECK(rc != 0 && strstr(err, want), "plan x=%lld %%0=%lld %%1=%lld %%2=%lld %%3=%lld: want '%s', got rc %d '%s'",
                  x, a, b, c, u, want, rc, err);
  else CHECK(rc == 0, "plan x=%lld %%0=%lld %%1=%lld %%2=%lld %%3=%lld accepted by the definition, refused: '%s'", x, a, b, c, u,
             err);
  return rc;
}

int main(void) {
  const char *shares = "shares arena bytes";
  emit(0, 128, 0, 128, -1, NULL);      /* memory-plan's kind of plan: disjoint ranges share */
  emit(0, 128, 128, 128, -1, NULL);    /* exp and tanh write over their dying operand (same bytes) */
  emit(0, 0, 256, 384, -1, NULL);      /* neg over its dying input x */
  emit(0, 128, 256, 0, -1, NULL);      /* tanh reuses x's bytes */
  emit(0, 128, 256, 128, -1, NULL);    /* tanh reuses %0's (dead once exp has read it) */
  emit(0, 128, 0, 256, 384, NULL);     /* the unused result in bytes of its own */
  emit(0, 128, 0, 256, 0, NULL);       /* ... or over x, dead by then */
  emit(0, 64, 256, 384, -1, shares);   /* %0 half over x, its operand (not exactly its bytes): from above */
  emit(64, 0, 256, 384, -1, shares);   /* ... from below */
  emit(0, 128, 256, 320, -1, shares);  /* tanh half over %1, its live operand */
  emit(0, 128, 0, 256, 128, shares);   /* the unused %3 over %0, live at %3 (exp reads %0 after it) */
  emit(0, 128, 0, 256, 192, shares);   /* ... half over it */
  if (!fails) printf("test_plan_check: ok\n");
  return fails ? 1 : 0;
}
