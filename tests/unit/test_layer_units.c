/* test_layer_units — the planner's layers found by structure
 * (passes/layer_units.c) on synthetic programs with opaque names:
 *  - an outer op (an add like the residual's) before LA residual-MLP blocks
 *    (dot, gelu, dot, add) and LB blocks of a second kind (dot, tanh, mul,
 *    dot, add), then a head: LA + LB layers, two kinds, each block's
 *    parameters in its unit, the leading add and the head in the outer
 *    unit (the block boundary is the residual stream, not one op earlier);
 *  - locations of derived ops ("X/grad", "X/recompute", "X/grad/grad",
 *    "optimizer/adamw/PARAM", "accumulate/PARAM") map to their forward op's /
 *    parameter's unit;
 *  - one block only (no repetition): no layers, every unit 0;
 *  - parallel branches (three dots of one input, as q / k / v projections,
 *    then their sum): equal ops, but not chained: no layers;
 *  - two blocks (dot, where, dot, add) whose first also computes the mask
 *    both read (an equal on a data input: DistilBERT's `mask == 0`, merged
 *    into its first use): 2 layers, the mask's op in the outer unit. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "ir/ir.h"
#include "passes/layer_units.h"

static int fails;
#define CHECK(c, ...)                                      \
  do {                                                     \
    if (!(c)) {                                            \
      fprintf(stderr, "FAIL %s:%d: ", __FILE__, __LINE__); \
      fprintf(stderr, __VA_ARGS__);                        \
      fputc('\n', stderr);                                 \
      fails++;                                             \
    }                                                      \
  } while (0)

#define DOT "{lhs_batch = array<i64>, lhs_contract = array<i64: 1>, rhs_batch = array<i64>, rhs_contract = array<i64: 0>}"
#define T "tensor<8x16xf32>"
#define W "tensor<16x16xf32>"

/* Opaque, scrambled names: op k is "q<perm(k)>", parameter j "w<perm(j)>". */
static int perm(int k) { return (k * 7919 + 13) % 10007; }

/* The program; wunit[j] = the layer (1-based, 0 outer) parameter j belongs to, oploc_unit likewise per op. */
static char *make(int LA, int LB, int *wunit, int *nw, int *opunit, int *nop) {
  size_t cap = 1 << 20, n = 0;
  char *s = malloc(cap);
  int npar = 2 * LA + 2 * LB + 1;
  n += (size_t)snprintf(s + n, cap - n, "\"galv.func\"() ({\n^bb0(%%arg0: " T);
  for (int j = 0; j < npar; j++) n += (size_t)snprintf(s + n, cap - n, ", %%arg%d: " W, j + 1);
  n += (size_t)snprintf(s + n, cap - n, "):\n");
  int v = 0, op = 0;
#define OP(u, ...)                                                      \
  do {                                                                  \
    n += (size_t)snprintf(s + n, cap - n, "  " __VA_ARGS__);            \
    n += (size_t)snprintf(s + n, cap - n, " loc(\"q%d\")\n", perm(op)); \
    opunit[op++] = (u);                                                 \
  } while (0)
  OP(0, "%%0 = \"galv.add\"(%%arg0, %%arg0) : (" T ", " T ") -> " T);
  int h = 0, w = 1;
  v = 1;
  for (int l = 0; l < LA + LB; l++) {
    bool b = l >= LA;
    wunit[w - 1] = wunit[w] = l + 1;
    OP(l + 1, "%%%d = \"galv.dot\"(%%%d, %%arg%d) " DOT " : (" T ", " W ") -> " T, v, h, w);
    if (!b) OP(l + 1, "%%%d = \"galv.gelu\"(%%%d) {approximate = \"none\"} : (" T ") -> " T, v + 1, v);
    else OP(l + 1, "%%%d = \"galv.tanh\"(%%%d) : (" T ") -> " T, v + 1, v);
    int x = v + 1;
    v += 2;
    if (b) {
      OP(l + 1, "%%%d = \"galv.mul\"(%%%d, %%%d) : (" T ", " T ") -> " T, v, x, x);
      x = v++;
    }
    OP(l + 1, "%%%d = \"galv.dot\"(%%%d, %%arg%d) " DOT " : (" T ", " W ") -> " T, v, x, w + 1);
    OP(l + 1, "%%%d = \"galv.add\"(%%%d, %%%d) : (" T ", " T ") -> " T, v + 1, v, h);
    h = v + 1;
    v += 2;
    w += 2;
  }
  wunit[w - 1] = 0;
  OP(0, "%%%d = \"galv.dot\"(%%%d, %%arg%d) " DOT " : (" T ", " W ") -> " T, v, h, w);
  n += (size_t)snprintf(s + n, cap - n, "  \"galv.return\"(%%%d) : (" T ") -> () loc(\"return\")\n}) {arg_attrs = [{galv.name = \"x\"}", v);
  for (int j = 0; j < npar; j++) n += (size_t)snprintf(s + n, cap - n, ", {galv.name = \"w%d\", galv.param}", perm(j));
  n += (size_t)snprintf(s + n, cap - n, "], sym_name = \"main\"} : () -> ()\n");
  *nw = npar, *nop = op;
  return s;
}

static void check(int LA, int LB) {
  int wunit[256], opunit[1024], nw, nop;
  char *text = make(LA, LB, wunit, &nw, opunit, &nop);
  gv_module *m = gv_parse_module(text, strlen(text), "synthetic");
  free(text);
  CHECK(m, "parse");
  if (!m) return;
  gv_layer_units u;
  CHECK(gv_layer_units_find(m, &u) == 0, "find");
  bool rep = LA >= 2 || LB >= 2;
  int want = (LA >= 2 ? LA : 0) + (LB >= 2 ? LB : 0);
  CHECK(u.nl == want, "LA %d LB %d: %d layers, want %d", LA, LB, u.nl, want);
  CHECK(u.nkinds == (LA >= 2) + (LB >= 2), "LA %d LB %d: %d kinds", LA, LB, u.nkinds);
  if (u.nl == want && LA >= 2 && LB >= 2) {
    for (int j = 0; j < nw; j++)
      CHECK(u.arg_unit[j + 1] == wunit[j], "LA %d LB %d: parameter %d in unit %d, want %d", LA, LB, j, u.arg_unit[j + 1], wunit[j]);
    for (int k = 0; k < nop; k++) {
      char loc[64];
      const char *suf[] = {"", "/grad", "/recompute", "/grad/grad"};
      for (int i = 0; i < 4; i++) {
        snprintf(loc, sizeof loc, "q%d%s", perm(k), suf[i]);
        CHECK(gv_layer_units_loc(&u, loc) == opunit[k], "LA %d LB %d: %s in unit %d, want %d", LA, LB, loc, gv_layer_units_loc(&u, loc),
              opunit[k]);
      }
    }
    for (int j = 0; j < nw; j++) {
      char loc[64];
      snprintf(loc, sizeof loc, "optimizer/adamw/w%d", perm(j));
      CHECK(gv_layer_units_loc(&u, loc) == wunit[j], "%s in unit %d, want %d", loc, gv_layer_units_loc(&u, loc), wunit[j]);
      snprintf(loc, sizeof loc, "accumulate/w%d", perm(j));
      CHECK(gv_layer_units_loc(&u, loc) == wunit[j], "%s in unit %d, want %d", loc, gv_layer_units_loc(&u, loc), wunit[j]);
    }
    CHECK(u.kind[0] == 0 && u.kind[LA] == 1 && u.len[0] == 4 && u.len[LA] == 5, "kinds / lengths");
  }
  if (!rep) {
    for (int j = 0; j < nw; j++) CHECK(u.arg_unit[j + 1] == 0, "no repetition: parameter %d in unit %d", j, u.arg_unit[j + 1]);
    CHECK(gv_layer_units_loc(&u, "q13") == 0 && gv_layer_units_loc(&u, "nowhere/grad") == 0, "no repetition: locations");
  }
  CHECK(gv_layer_units_loc(&u, "loss/cross_entropy") == 0 && gv_layer_units_loc(&u, "optimizer/adamw") == 0 &&
            gv_layer_units_loc(&u, NULL) == 0,
        "unknown locations: outer");
  gv_layer_units_free(&u);
  gv_module_free(m);
}

static void parallel(void) {
  const char *text =
      "\"galv.func\"() ({\n^bb0(%arg0: " T ", %arg1: " W ", %arg2: " W ", %arg3: " W "):\n"
      "  %0 = \"galv.dot\"(%arg0, %arg1) " DOT " : (" T ", " W ") -> " T " loc(\"a\")\n"
      "  %1 = \"galv.dot\"(%arg0, %arg2) " DOT " : (" T ", " W ") -> " T " loc(\"b\")\n"
      "  %2 = \"galv.dot\"(%arg0, %arg3) " DOT " : (" T ", " W ") -> " T " loc(\"c\")\n"
      "  %3 = \"galv.add\"(%0, %1) : (" T ", " T ") -> " T " loc(\"d\")\n"
      "  %4 = \"galv.add\"(%3, %2) : (" T ", " T ") -> " T " loc(\"e\")\n"
      "  \"galv.return\"(%4) : (" T ") -> () loc(\"return\")\n"
      "}) {arg_attrs = [{galv.name = \"x\"}, {galv.name = \"p\", galv.param}, {galv.name = \"q\", galv.param}, "
      "{galv.name = \"r\", galv.param}], sym_name = \"main\"} : () -> ()\n";
  gv_module *m = gv_parse_module(text, strlen(text), "parallel");
  CHECK(m, "parse parallel");
  if (!m) return;
  gv_layer_units u;
  CHECK(gv_layer_units_find(m, &u) == 0, "find");
  CHECK(u.nl == 0, "parallel branches: %d layers, want none", u.nl);
  gv_layer_units_free(&u);
  gv_module_free(m);
}

static void shared_mask(void) {
  const char *text =
      "\"galv.func\"() ({\n^bb0(%arg0: " T ", %arg1: " T ", %arg2: " W ", %arg3: " W ", %arg4: " W ", %arg5: " W "):\n"
      "  %0 = \"galv.constant\"() {value = dense<0.000000e+00> : tensor<f32>} : () -> tensor<f32> loc(\"c0\")\n"
      "  %1 = \"galv.dot\"(%arg0, %arg2) " DOT " : (" T ", " W ") -> " T " loc(\"a1\")\n"
      "  %2 = \"galv.equal\"(%arg1, %0) : (" T ", tensor<f32>) -> tensor<8x16xi1> loc(\"m\")\n"
      "  %3 = \"galv.where\"(%2, %0, %1) : (tensor<8x16xi1>, tensor<f32>, " T ") -> " T " loc(\"a2\")\n"
      "  %4 = \"galv.dot\"(%3, %arg3) " DOT " : (" T ", " W ") -> " T " loc(\"a3\")\n"
      "  %5 = \"galv.add\"(%4, %arg0) : (" T ", " T ") -> " T " loc(\"a4\")\n"
      "  %6 = \"galv.dot\"(%5, %arg4) " DOT " : (" T ", " W ") -> " T " loc(\"b1\")\n"
      "  %7 = \"galv.where\"(%2, %0, %6) : (tensor<8x16xi1>, tensor<f32>, " T ") -> " T " loc(\"b2\")\n"
      "  %8 = \"galv.dot\"(%7, %arg5) " DOT " : (" T ", " W ") -> " T " loc(\"b3\")\n"
      "  %9 = \"galv.add\"(%8, %5) : (" T ", " T ") -> " T " loc(\"b4\")\n"
      "  \"galv.return\"(%9) : (" T ") -> () loc(\"return\")\n"
      "}) {arg_attrs = [{galv.name = \"x\"}, {galv.name = \"mask\"}, {galv.name = \"p\", galv.param}, {galv.name = \"q\", "
      "galv.param}, {galv.name = \"r\", galv.param}, {galv.name = \"s\", galv.param}], sym_name = \"main\"} : () -> ()\n";
  gv_module *m = gv_parse_module(text, strlen(text), "shared_mask");
  CHECK(m, "parse shared_mask");
  if (!m) return;
  gv_layer_units u;
  CHECK(gv_layer_units_find(m, &u) == 0, "find");
  CHECK(u.nl == 2, "shared mask: %d layers, want 2", u.nl);
  if (u.nl == 2) {
    CHECK(gv_layer_units_loc(&u, "a1") == 1 && gv_layer_units_loc(&u, "a4") == 1 && gv_layer_units_loc(&u, "b1") == 2 &&
              gv_layer_units_loc(&u, "b4") == 2,
          "shared mask: the blocks' ops in units %d %d %d %d", gv_layer_units_loc(&u, "a1"), gv_layer_units_loc(&u, "a4"),
          gv_layer_units_loc(&u, "b1"), gv_layer_units_loc(&u, "b4"));
    CHECK(gv_layer_units_loc(&u, "m") == 0, "shared mask: the mask's op in unit %d, want the outer 0", gv_layer_units_loc(&u, "m"));
    CHECK(u.arg_unit[2] == 1 && u.arg_unit[4] == 2, "shared mask: parameters in units %d %d", u.arg_unit[2], u.arg_unit[4]);
  }
  gv_layer_units_free(&u);
  gv_module_free(m);
}

int main(void) {
  parallel();
  shared_mask();
  check(4, 3);
  check(12, 2);
  check(2, 6);
  check(1, 0);
  check(1, 1);
  if (!fails) printf("test_layer_units: ok\n");
  return fails != 0;
}
