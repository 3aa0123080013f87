/* test_kcall.c — the shared kernel-call table (codegen/kcall.c): the
 * description both emitters print, for one op of each family (kernel,
 * slots, static shape parameters worked out by hand), the table's
 * consistency (every row's kernel has a name; elementwise ops, views and
 * collectives have no row), and its error lines (one line naming the node
 * and the target, -1). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "codegen/kcall.h"
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

static const char model[] =
    "\"galv.func\"() ({\n"
    "^bb0(%arg0: tensor<2x3xf32>, %arg1: tensor<4x6xf32>, %arg2: tensor<2x3x4xf32>, %arg3: tensor<2x5xf32>, "
    "%arg4: tensor<3x4xf32>, %arg5: tensor<2x3xi64>, %arg6: tensor<5x4xf32>):\n"
    "  %0 = \"galv.transpose\"(%arg0) {perm = array<i64: 1, 0>} : (tensor<2x3xf32>) -> tensor<3x2xf32> loc(\"t\")\n"
    "  %1 = \"galv.slice\"(%arg1) {axes = array<i64: 0, 1>, ends = array<i64: 4, 6>, starts = array<i64: 1, 2>, "
    "steps = array<i64: 1, 2>} : (tensor<4x6xf32>) -> tensor<3x2xf32> loc(\"s\")\n"
    "  %2 = \"galv.reduce_sum\"(%arg2) {axes = array<i64: 1>, keepdims = 1 : i64} : (tensor<2x3x4xf32>) -> "
    "tensor<2x1x4xf32> loc(\"r\")\n"
    "  %3 = \"galv.concat\"(%arg0, %arg3) {axis = 1 : i64} : (tensor<2x3xf32>, tensor<2x5xf32>) -> tensor<2x8xf32> "
    "loc(\"c\")\n"
    "  %4 = \"galv.dot\"(%arg0, %arg4) {lhs_batch = array<i64>, lhs_contract = array<i64: 1>, rhs_batch = array<i64>, "
    "rhs_contract = array<i64: 0>} : (tensor<2x3xf32>, tensor<3x4xf32>) -> tensor<2x4xf32> loc(\"d\")\n"
    "  %5 = \"galv.reduce_sum\"(%arg5) {axes = array<i64: 1>, keepdims = 1 : i64} : (tensor<2x3xi64>) -> "
    "tensor<2x1xi64> loc(\"ri\")\n"
    "  %6 = \"galv.transpose\"(%arg0) {perm = array<i64: 0, 1>} : (tensor<2x3xf32>) -> tensor<3x2xf32> loc(\"tbad\")\n"
    "  %7 = \"galv.gather\"(%arg6, %arg5) {axis = 0 : i64} : (tensor<5x4xf32>, tensor<2x3xi64>) -> tensor<2x3x4xf32> "
    "loc(\"g\")\n"
    "  \"galv.return\"(%0, %1, %2, %3, %4, %5, %6, %7) : (tensor<3x2xf32>, tensor<3x2xf32>, tensor<2x1x4xf32>, "
    "tensor<2x8xf32>, tensor<2x4xf32>, tensor<2x1xi64>, tensor<3x2xf32>, tensor<2x3x4xf32>) -> () loc(\"return\")\n"
    "}) {sym_name = \"main\"} : () -> ()\n";

static const gv_op *op_at(gv_module *m, const char *loc) {
  for (const gv_op *op = m->main->body->first; op; op = op->next)
    if (op->loc && strcmp(op->loc, loc) == 0) return op;
  return NULL;
}

static bool ints_eq(const int64_t *a, const int64_t *b, int n) {
  for (int i = 0; i < n; i++)
    if (a[i] != b[i]) return false;
  return true;
}

/* Fills op's call with stderr captured into err (the error line, if any). */
static int fill_capture(gv_module *m, const gv_op *op, cg_kcall *k, char *err, size_t n) {
  fflush(stderr);
  FILE *tmp = tmpfile();
  int saved = dup(2);
  dup2(fileno(tmp), 2);
  int rc = cg_kcall_fill(m, op, "test codegen", k);
  fflush(stderr);
  dup2(saved, 2);
  close(saved);
  rewind(tmp);
  err[0] = 0;
  if (!fgets(err, (int)n, tmp)) err[0] = 0;
  char rest[256];
  CHECK(!fgets(rest, sizeof rest, tmp), "more than one error line: %s", rest);
  fclose(tmp);
  return rc;
}

int main(void) {
  gv_module *m = gv_parse_module(model, strlen(model), "kcall.mlir");
  if (!m) {
    fprintf(stderr, "FAIL: the test module does not parse\n");
    return 1;
  }
  cg_kcall k;
  char err[512];

  /* transpose: copy_strided of the result's dims at the permuted strides */
  const gv_op *op = op_at(m, "t");
  CHECK(cg_kcall_kernel(op->code) == CG_K_COPY_STRIDED, "transpose kernel");
  CHECK(fill_capture(m, op, &k, err, sizeof err) == 0 && !err[0], "transpose: %s", err);
  CHECK(k.kernel == CG_K_COPY_STRIDED && k.src == 0 && k.dst == 1 && k.base == 0 && k.rank == 2, "transpose call");
  CHECK(ints_eq(k.dims, (int64_t[]){3, 2}, 2) && ints_eq(k.strides, (int64_t[]){1, 3}, 2), "transpose dims/strides");

  /* slice [1:4, 2:6:2] of 4x6: base 1*6 + 2, strides 6 and 2 */
  op = op_at(m, "s");
  CHECK(fill_capture(m, op, &k, err, sizeof err) == 0, "slice: %s", err);
  CHECK(k.kernel == CG_K_COPY_STRIDED && k.base == 8 && ints_eq(k.strides, (int64_t[]){6, 2}, 2) &&
            ints_eq(k.dims, (int64_t[]){3, 2}, 2),
        "slice window: base %lld strides %lld %lld", (long long)k.base, (long long)k.strides[0], (long long)k.strides[1]);

  /* reduce_sum over axis 1 of 2x3x4: output strides 4, 0 (reduced), 1; 8 outputs, kind sum */
  op = op_at(m, "r");
  CHECK(fill_capture(m, op, &k, err, sizeof err) == 0, "reduce: %s", err);
  CHECK(k.kernel == CG_K_REDUCE && k.rank == 3 && ints_eq(k.strides, (int64_t[]){4, 0, 1}, 3) && k.count == 8 && k.kind == 0,
        "reduce call");

  /* concat along axis 1 of 2x3 and 2x5: 2 rows of 3 + 5 elements into slot 2 */
  op = op_at(m, "c");
  CHECK(fill_capture(m, op, &k, err, sizeof err) == 0, "concat: %s", err);
  CHECK(k.kernel == CG_K_CONCAT && k.nparts == 2 && k.part0 == 0 && k.dst == 2 && k.es_slot == 2 && k.outer == 2 &&
            cg_kcall_part_elems(op, &k, 0) == 3 && cg_kcall_part_elems(op, &k, 1) == 5,
        "concat call");

  /* dot 2x3 . 3x4: M = 2 (lhs stride 3), K = 3 (strides 1 and 4), N = 4 (rhs stride 1), no batch */
  op = op_at(m, "d");
  CHECK(fill_capture(m, op, &k, err, sizeof err) == 0, "dot: %s", err);
  CHECK(k.kernel == CG_K_DOT && k.bg.n == 0 && k.mg.n == 1 && k.mg.size[0] == 2 && k.mg.sa[0] == 3 && k.kg.n == 1 &&
            k.kg.size[0] == 3 && k.kg.sa[0] == 1 && k.kg.sb[0] == 4 && k.ng.n == 1 && k.ng.size[0] == 4 && k.ng.sb[0] == 1 &&
            k.src == 0 && k.aux[0] == 1 && k.dst == 2,
        "dot groups");

  /* gather along axis 0 of 5x4 at 2x3 i64 indices: 1 row of 5 x 4 elements, 6 indices */
  op = op_at(m, "g");
  CHECK(fill_capture(m, op, &k, err, sizeof err) == 0, "gather: %s", err);
  CHECK(k.kernel == CG_K_GATHER && k.outer == 1 && k.len == 5 && k.inner == 4 && k.count == 6 && k.idx_es == 8 &&
            k.aux[0] == 1 && k.dst == 2,
        "gather call");

  /* errors: one line naming the node and the target */
  op = op_at(m, "ri");
  CHECK(fill_capture(m, op, &k, err, sizeof err) == -1 &&
            strstr(err, "node 'ri'") && strstr(err, "test codegen: galv.reduce_sum on i64 is not supported (f32 only)"),
        "i64 reduce: '%s'", err);
  op = op_at(m, "tbad");
  CHECK(fill_capture(m, op, &k, err, sizeof err) == -1 && strstr(err, "node 'tbad'") && strstr(err, "test codegen: bad transpose perm"),
        "bad perm: '%s'", err);

  /* the table: elementwise ops, views and collectives have no kernel call; every kernel has a name */
  for (int c = 0; c < GV_OP_COUNT; c++) {
    cg_kernel kk = cg_kcall_kernel((gv_opcode)c);
    if (gv_ops[c].flags & (GV_ELEMENTWISE | GV_VIEW)) CHECK(kk == CG_K_NONE, "galv.%s has a kernel call", gv_ops[c].name);
    CHECK(kk >= 0 && kk < CG_K_COUNT && cg_kernel_names[kk] && cg_kernel_names[kk][0], "galv.%s: kernel %d", gv_ops[c].name, kk);
  }
  CHECK(cg_kcall_kernel(GV_OP_ALL_REDUCE) == CG_K_NONE, "all_reduce has a kernel call");

  gv_module_free(m);
  printf("kcall: %s\n", fails ? "FAILED" : "all checks passed");
  return fails ? 1 : 0;
}
