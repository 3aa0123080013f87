/* test_roundtrip.c — the IR text form: print -> parse -> print is
 * byte-identical for a module built to cover every attribute kind, every
 * dtype, literal forms (list, nested, splat, hex, empty, non-finite),
 * multi-result ops, nested galv.if regions and hostile names; the parsed
 * module holds the same bytes; and the parser rejects malformed text (every
 * truncation of a valid text, specific bad cases, random mutations) without
 * crashing or reading past the given length. gv_module_clone gives the
 * module the text would (printed the same, same constants, no weights, no
 * result names) and shares nothing with the original (printed again after
 * the original is freed), meshes and shardings included;
 * gv_module_clone_shared the same module with its constants' data the
 * original's (bool constants copied). */
#define _GNU_SOURCE
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "ir/ir.h"

#define CHECK(c)                                                                                   \
  do {                                                                                             \
    if (!(c)) {                                                                                    \
      fprintf(stdout, "%s:%d: check failed: %s\n", __FILE__, __LINE__, #c);                        \
      return 1;                                                                                    \
    }                                                                                              \
  } while (0)

static const char *HOSTILE = "a*/b\"c\\d\ne\tf\x01g\x7f\xc3\xa9\xe2\x82\xac }) loc(";

static char *print_str(const gv_module *m, size_t *len) {
  char *buf = NULL;
  size_t n = 0;
  FILE *f = open_memstream(&buf, &n);
  gv_print_module(m, f);
  fclose(f);
  if (len) *len = n;
  return buf;
}

/* Parses exactly len bytes from a heap copy with no terminator, so that
 * ASan catches any read past the end. */
static gv_module *parse_exact(const char *text, size_t len) {
  char *copy = malloc(len ? len : 1);
  memcpy(copy, text, len);
  gv_module *m = gv_parse_module(copy, len, "t.mlir");
  free(copy);
  return m;
}

static gv_value *constant(gv_module *m, gv_block *b, gv_dtype dt, int rank, const int64_t *dims,
                          const double *vals, int nvals) {
  gv_tensor *t = gv_tensor_new(m->arena, gv_type_make(dt, rank, dims));
  int64_t n = gv_tensor_numel(t);
  for (int64_t i = 0; i < n; i++) gv_tensor_set_f(t, i, vals[i % nvals]);
  gv_op *op = gv_constant_new(m, t);
  gv_op_set_loc(m, op, "const", "Constant");
  gv_block_append(b, op);
  return op->res[0];
}

static gv_module *build(void) {
  gv_module *m = gv_module_new("built");
  gv_func *f = gv_func_new(m, "main");
  m->main = f;
  gv_block *b = f->body;
  int64_t d23[2] = {2, 3}, d2u[2] = {2, GV_DIM_UNKNOWN}, d4[1] = {4}, d20[1] = {20}, d0[2] = {0, 3};
  int64_t d1[1] = {1}, d17[1] = {17};
  gv_value *x = gv_func_add_arg(m, f, HOSTILE, gv_type_make(GV_DT_F32, 2, d23), false);
  gv_value *ids = gv_func_add_arg(m, f, "ids", gv_type_make(GV_DT_I64, 2, d2u), false);
  gv_value *cond = gv_func_add_arg(m, f, "", gv_type_make(GV_DT_BOOL, 0, NULL), false);
  gv_value *w = gv_func_add_arg(m, f, "w", gv_type_unranked(GV_DT_BF16), true);
  gv_value *any = gv_func_add_arg(m, f, "any", gv_type_unranked(GV_DT_UNKNOWN), true);
  (void)ids;
  (void)any;

  /* Constants of every dtype and literal form. */
  double fv[] = {1.5, -0.0, 3.14159265358979, 1e-40, 65504, -2.5e-7, 1e30, 7};
  double iv[] = {1, -2, 127, -128, 0, 42};
  double nonfin[] = {NAN, INFINITY, -INFINITY, 0.1};
  constant(m, b, GV_DT_F32, 2, d23, fv, 8);                /* nested list, subnormal */
  constant(m, b, GV_DT_F32, 1, d20, fv, 8);                /* hex */
  constant(m, b, GV_DT_F32, 1, d4, nonfin, 4);             /* NaN, inf */
  constant(m, b, GV_DT_F32, 1, d4, fv, 1);                 /* splat */
  constant(m, b, GV_DT_F32, 0, NULL, fv + 2, 1);           /* rank 0 */
  constant(m, b, GV_DT_F32, 1, d1, fv + 2, 1);             /* one element, rank 1 */
  constant(m, b, GV_DT_F32, 2, d0, fv, 1);                 /* empty */
  constant(m, b, GV_DT_F64, 1, d4, fv + 1, 4);
  constant(m, b, GV_DT_F64, 1, d4, nonfin, 4);
  constant(m, b, GV_DT_F16, 1, d4, fv + 2, 4);
  constant(m, b, GV_DT_F16, 1, d4, nonfin, 4);
  constant(m, b, GV_DT_F16, 1, d17, fv, 8);
  constant(m, b, GV_DT_BF16, 2, d23, fv, 8);
  constant(m, b, GV_DT_BF16, 1, d4, nonfin, 4);
  constant(m, b, GV_DT_I64, 1, d4, iv, 6);
  constant(m, b, GV_DT_I64, 1, d4, iv + 4, 1);
  constant(m, b, GV_DT_I32, 2, d23, iv, 6);
  constant(m, b, GV_DT_I16, 1, d20, iv, 6);
  constant(m, b, GV_DT_I8, 1, d4, iv, 6);
  constant(m, b, GV_DT_I8, 1, d20, iv, 5);
  constant(m, b, GV_DT_U8, 1, d4, (double[]){200, 0, 255, 1}, 4);
  constant(m, b, GV_DT_BOOL, 1, d4, (double[]){1, 0, 0, 1}, 4);
  constant(m, b, GV_DT_BOOL, 1, d20, (double[]){1, 0, 1, 1, 0, 0, 0}, 7); /* packed hex */
  constant(m, b, GV_DT_BOOL, 1, d20, (double[]){1}, 1);
  {
    /* i64 extremes go through set_i: doubles cannot hold them. */
    gv_tensor *t = gv_tensor_new(m->arena, gv_type_make(GV_DT_I64, 1, d4));
    gv_tensor_set_i(t, 0, INT64_MIN);
    gv_tensor_set_i(t, 1, INT64_MAX);
    gv_tensor_set_i(t, 2, -1);
    gv_op *op = gv_constant_new(m, t);
    gv_block_append(b, op);
  }

  /* Every attribute kind, with hostile strings and names. */
  gv_op *c = gv_op_new(m, GV_OP_CAST, 1, &x, 1);
  c->res[0]->type = gv_type_make(GV_DT_F16, 2, d23);
  gv_set_int(m, c, "i", INT64_MIN);
  gv_set_int(m, c, "j", 5);
  gv_set_float(m, c, "f", 9.99999975e-6f);
  gv_set_float(m, c, "g", -INFINITY);
  gv_set_float(m, c, "h", 1e-45f);
  gv_set_str(m, c, "s", HOSTILE);
  gv_set_str(m, c, "empty", "");
  int64_t ints[3] = {1, -2, INT64_MAX};
  gv_set_ints(m, c, "ints", 3, ints);
  gv_set_ints(m, c, "no_ints", 0, NULL);
  float floats[3] = {1.0f, -0.0f, NAN};
  gv_set_floats(m, c, "floats", 3, floats);
  gv_set_floats(m, c, "no_floats", 0, NULL);
  const char *strs[3] = {"a", HOSTILE, ""};
  gv_set_strs(m, c, "strs", 3, strs);
  gv_set_strs(m, c, "no_strs", 0, NULL);
  gv_tensor *t = gv_tensor_new(m->arena, gv_type_make(GV_DT_I64, 1, d4));
  gv_set_tensor(m, c, "tensor", t);
  gv_set_type(m, c, "to", GV_DT_F16);
  gv_set_type(m, c, "unknown_type", GV_DT_UNKNOWN);
  gv_set_unit(m, c, "unit");
  gv_set_unit(m, c, "weird name\n");
  gv_set_int(m, c, "galv.dotted$name_1", 1);
  gv_op_set_loc(m, c, HOSTILE, HOSTILE);
  gv_block_append(b, c);

  /* Multi-result op. */
  gv_op *sp = gv_op_new(m, GV_OP_SPLIT, 1, &c->res[0], 3);
  int64_t sizes[3] = {1, 1, 1}, d13[2] = {2, 1};
  gv_set_ints(m, sp, "sizes", 3, sizes);
  gv_set_int(m, sp, "axis", 1);
  for (int i = 0; i < 3; i++) sp->res[i]->type = gv_type_make(GV_DT_F16, 2, d13);
  gv_op_set_loc(m, sp, "/split", NULL);
  gv_block_append(b, sp);

  /* galv.if with two results; the then-branch holds a nested if. */
  gv_op *iff = gv_op_new(m, GV_OP_IF, 1, &cond, 2);
  iff->res[0]->type = sp->res[0]->type;
  iff->res[1]->type = gv_type_unranked(GV_DT_UNKNOWN);
  gv_block *th = gv_block_new(m), *el = gv_block_new(m);
  gv_op *neg = gv_op_new(m, GV_OP_NEG, 1, &sp->res[2], 1);
  neg->res[0]->type = sp->res[2]->type;
  gv_block_append(th, neg);
  gv_op *inner = gv_op_new(m, GV_OP_IF, 1, &cond, 1);
  inner->res[0]->type = neg->res[0]->type;
  gv_block *ith = gv_block_new(m), *iel = gv_block_new(m);
  gv_block_append(ith, gv_op_new(m, GV_OP_YIELD, 1, &neg->res[0], 0));
  gv_block_append(iel, gv_op_new(m, GV_OP_YIELD, 1, &sp->res[1], 0));
  gv_op_add_region(m, inner, ith);
  gv_op_add_region(m, inner, iel);
  gv_op_set_loc(m, inner, "inner", "If");
  gv_block_append(th, inner);
  gv_value *ty[2] = {inner->res[0], w};
  gv_block_append(th, gv_op_new(m, GV_OP_YIELD, 2, ty, 0));
  gv_value *ey[2] = {sp->res[0], x};
  gv_block_append(el, gv_op_new(m, GV_OP_YIELD, 2, ey, 0));
  gv_op_add_region(m, iff, th);
  gv_op_add_region(m, iff, el);
  gv_op_set_loc(m, iff, "/If", "If");
  gv_block_append(b, iff);

  gv_value *rets[3] = {iff->res[0], iff->res[1], sp->res[1]};
  gv_op *ret = gv_op_new(m, GV_OP_RETURN, 3, rets, 0);
  gv_op_set_loc(m, ret, "return", NULL);
  gv_block_append(b, ret);
  const char **rn = gv_alloc(m->arena, 3 * sizeof *rn);
  rn[0] = "out0";
  rn[1] = NULL;
  rn[2] = HOSTILE;
  f->res_names = rn;
  f->nres_names = 3;
  return m;
}

/* The parsed module holds the same constants, byte for byte. */
static int same_constants(const gv_block *a, const gv_block *b) {
  const gv_op *x = a->first, *y = b->first;
  for (; x && y; x = x->next, y = y->next) {
    CHECK(x->code == y->code && x->nattrs == y->nattrs && x->nres == y->nres);
    if (x->code == GV_OP_CONSTANT) {
      const gv_tensor *s = gv_get_attr(x, "value")->u.t, *t = gv_get_attr(y, "value")->u.t;
      CHECK(gv_type_equal(&s->type, &t->type));
      size_t n = (size_t)gv_tensor_numel(s) * gv_dtype_size(s->type.dtype);
      CHECK(n == 0 || memcmp(s->data, t->data, n) == 0);
    }
  }
  CHECK(!x && !y);
  return 0;
}

static int test_roundtrip(char **text_out, size_t *len_out) {
  gv_module *m = build();
  CHECK(gv_verify(m) == 0);
  size_t n1, n2;
  char *t1 = print_str(m, &n1);
  gv_module *m2 = parse_exact(t1, n1);
  CHECK(m2 != NULL);
  CHECK(gv_verify(m2) == 0);
  char *t2 = print_str(m2, &n2);
  if (n1 != n2 || memcmp(t1, t2, n1) != 0) {
    fprintf(stdout, "round trip differs:\n--- first\n%s--- second\n%s", t1, t2);
    return 1;
  }
  CHECK(same_constants(m->main->body, m2->main->body) == 0);
  /* Names survive as data. */
  CHECK(strcmp(m2->main->arg_names[0], HOSTILE) == 0 && m2->main->arg_is_param[3] && !m2->main->arg_is_param[0]);
  CHECK(m2->main->nres_names == 3 && m2->main->res_names[1] == NULL && strcmp(m2->main->res_names[2], HOSTILE) == 0);
  CHECK(strcmp(m2->main->body->args[0]->name, HOSTILE) == 0);
  CHECK(strstr(t1, ":3 = \"galv.split\"") && strstr(t1, "#2)")); /* multi-result def and use */
  CHECK(strstr(t1, "dense<\"0x") && strstr(t1, "array<i64>") && strstr(t1, "0x7FC00000"));
  gv_module_free(m);
  gv_module_free(m2);
  free(t2);
  *text_out = t1;
  *len_out = n1;
  return 0;
}

/* Every proper prefix up to the trailing newline is malformed. */
static int test_truncations(const char *text, size_t len) {
  size_t end = len;
  while (end && (text[end - 1] == '\n' || text[end - 1] == ' ')) end--;
  for (size_t k = 0; k < end; k++) {
    gv_module *m = parse_exact(text, k);
    if (m) {
      fprintf(stdout, "prefix of %zu bytes parsed\n", k);
      return 1;
    }
  }
  for (size_t k = end; k <= len; k++) {
    gv_module *m = parse_exact(text, k);
    CHECK(m != NULL);
    gv_module_free(m);
  }
  return 0;
}

#define FUNC(body) "\"galv.func\"() ({\n^bb0(%a: tensor<2xf32>, %c: tensor<i1>):\n" body "}) : () -> ()\n"
#define RET "  \"galv.return\"(%a) : (tensor<2xf32>) -> ()\n"

static const char *const bad_cases[] = {
    "",
    "   // only a comment\n",
    "\"galv.func\"",
    "\"galv.fun\"() ({}) : () -> ()",
    FUNC("  %0 = \"galv.nope\"(%a) : (tensor<2xf32>) -> tensor<2xf32>\n" RET),
    FUNC("  %0 = \"neg\"(%a) : (tensor<2xf32>) -> tensor<2xf32>\n" RET),
    FUNC("  %0 = \"galv.neg\"(%b) : (tensor<2xf32>) -> tensor<2xf32>\n" RET),
    FUNC("  %0 = \"galv.neg\"(%a) : (tensor<2xf32>) -> tensor<2xf32>\n"
         "  %0 = \"galv.neg\"(%a) : (tensor<2xf32>) -> tensor<2xf32>\n" RET),
    FUNC("  %a = \"galv.neg\"(%a) : (tensor<2xf32>) -> tensor<2xf32>\n" RET),
    FUNC("  %0 = \"galv.neg\"(%a) : (tensor<3xf32>) -> tensor<2xf32>\n" RET),
    FUNC("  %0 = \"galv.neg\"(%a) : (tensor<2xf33>) -> tensor<2xf32>\n" RET),
    FUNC("  %0 = \"galv.neg\"(%a) : (tensor<2xf32) -> tensor<2xf32>\n" RET),
    FUNC("  %0 = \"galv.neg\"(%a) : (tensor<1x1x1x1x1x1x1x1x1xf32>) -> tensor<2xf32>\n" RET),
    FUNC("  %0 = \"galv.neg\"(%a) : (tensor<99999999999999999999xf32>) -> tensor<2xf32>\n" RET),
    FUNC("  %0 = \"galv.neg\"(%a) : (tensor<2xf32>) -> tensor<2xf32> loc(\"abc)\n" RET),
    FUNC("  %0 = \"galv.neg\"(%a) : (tensor<2xf32>) -> tensor<2xf32> loc(\"a\\q\")\n" RET),
    FUNC("  %0 = \"galv.neg\"(%a) : (tensor<2xf32>) -> tensor<2xf32> loc(\"a\\00\")\n" RET),
    FUNC("  %0 = \"galv.add\"(%a) : (tensor<2xf32>) -> tensor<2xf32>\n" RET),
    FUNC("  %0 = \"galv.add\"(%a, %a, %a) : (tensor<2xf32>, tensor<2xf32>, tensor<2xf32>) -> tensor<2xf32>\n" RET),
    FUNC("  %0 = \"galv.neg\"(%a) : (tensor<2xf32>) -> (tensor<2xf32>, tensor<2xf32>)\n" RET),
    FUNC("  %0:2 = \"galv.split\"(%a) : (tensor<2xf32>) -> tensor<2xf32>\n" RET),
    FUNC("  %0:0 = \"galv.split\"(%a) : (tensor<2xf32>) -> ()\n" RET),
    FUNC("  %0:2 = \"galv.split\"(%a) : (tensor<2xf32>) -> (tensor<1xf32>, tensor<1xf32>)\n"
         "  %1 = \"galv.neg\"(%0#2) : (tensor<1xf32>) -> tensor<1xf32>\n" RET),
    FUNC("  %0 = \"galv.neg\"(%a) {x = 1 : i64, x = 2 : i64} : (tensor<2xf32>) -> tensor<2xf32>\n" RET),
    FUNC("  %0 = \"galv.neg\"(%a) {x = 300 : i8} : (tensor<2xf32>) -> tensor<2xf32>\n" RET),
    FUNC("  %0 = \"galv.neg\"(%a) {x = 99999999999999999999 : i64} : (tensor<2xf32>) -> tensor<2xf32>\n" RET),
    FUNC("  %0 = \"galv.neg\"(%a) {x = 1.5 : i64} : (tensor<2xf32>) -> tensor<2xf32>\n" RET),
    FUNC("  %0 = \"galv.neg\"(%a) {x = @sym} : (tensor<2xf32>) -> tensor<2xf32>\n" RET),
    FUNC("  %0 = \"galv.neg\"(%a) {x = [1, 2]} : (tensor<2xf32>) -> tensor<2xf32>\n" RET),
    FUNC("  %0 = \"galv.neg\"(%a) {x = array<i1: true>} : (tensor<2xf32>) -> tensor<2xf32>\n" RET),
    FUNC("  %0 = \"galv.constant\"() {value = dense<[1, 2, 3]> : tensor<2xi64>} : () -> tensor<2xi64>\n" RET),
    FUNC("  %0 = \"galv.constant\"() {value = dense<[1]> : tensor<2xi64>} : () -> tensor<2xi64>\n" RET),
    FUNC("  %0 = \"galv.constant\"() {value = dense<[1, 2]> : tensor<2x1xi64>} : () -> tensor<2x1xi64>\n" RET),
    FUNC("  %0 = \"galv.constant\"() {value = dense<[[1], [2]]> : tensor<2xi64>} : () -> tensor<2xi64>\n" RET),
    FUNC("  %0 = \"galv.constant\"() {value = dense<[1, 2]> : tensor<?xi64>} : () -> tensor<2xi64>\n" RET),
    FUNC("  %0 = \"galv.constant\"() {value = dense<\"0x0102\"> : tensor<2xi64>} : () -> tensor<2xi64>\n" RET),
    FUNC("  %0 = \"galv.constant\"() {value = dense<\"0x01G2\"> : tensor<1xi16>} : () -> tensor<1xi16>\n" RET),
    FUNC("  %0 = \"galv.constant\"() {value = dense<1> : tensor<100000000000xi64>} : () -> tensor<2xi64>\n" RET),
    FUNC("  %0 = \"galv.constant\"() {value = dense<> : tensor<2xi64>} : () -> tensor<2xi64>\n" RET),
    FUNC("  %0 = \"galv.constant\"() {value = dense<[1, 2> : tensor<2xi64>} : () -> tensor<2xi64>\n" RET),
    FUNC("  %0 = \"galv.constant\"() {value = dense<[1, 256]> : tensor<2xui8>} : () -> tensor<2xui8>\n" RET),
    FUNC("  %0 = \"galv.constant\"() {value = dense<[true, 2]> : tensor<2xi1>} : () -> tensor<2xi1>\n" RET),
    FUNC("  %0 = \"galv.constant\"() {value = dense<0x7FC00000> : tensor<2xf16>} : () -> tensor<2xf16>\n" RET),
    FUNC("  %0 = \"galv.constant\"() {value = dense<1.0> : tensor<2x!galv.any>} : () -> tensor<2xf16>\n" RET),
    FUNC("  %0 = \"galv.if\"(%c) ({\n    %1 = \"galv.neg\"(%a) : (tensor<2xf32>) -> tensor<2xf32>\n"
         "    \"galv.yield\"(%1) : (tensor<2xf32>) -> ()\n  }, {\n    \"galv.yield\"(%a) : (tensor<2xf32>) -> ()\n"
         "  }) : (tensor<i1>) -> tensor<2xf32>\n  %2 = \"galv.neg\"(%1) : (tensor<2xf32>) -> tensor<2xf32>\n" RET),
    FUNC("  %0 = \"galv.if\"(%c) ({\n  ^bb0:\n    \"galv.yield\"(%a) : (tensor<2xf32>) -> ()\n  ^bb1:\n  }) : (tensor<i1>) -> tensor<2xf32>\n" RET),
    FUNC("  %0 = \"galv.if\"(%c) ({\n    \"galv.yield\"(%0) : (tensor<2xf32>) -> ()\n  }) : (tensor<i1>) -> tensor<2xf32>\n" RET),
    FUNC(RET) "garbage",
    FUNC(RET) "\"galv.func\"() ({}) : () -> ()",
    "\"galv.func\"() ({\n}) {sym_name = 3 : i64} : () -> ()",
    "\"galv.func\"() ({\n}) {bogus = \"x\"} : () -> ()",
    "\"galv.func\"() ({\n}) {arg_attrs = [{}]} : () -> ()",
    "\"galv.func\"() ({\n}) {sym_name = \"a\", sym_name = \"b\"} : () -> ()",
    "module {\n" FUNC(RET),
    "\xff\xfe\x00\x01",
};

static int test_bad_cases(void) {
  for (size_t i = 0; i < sizeof bad_cases / sizeof *bad_cases; i++) {
    size_t n = strlen(bad_cases[i]);
    if (i == sizeof bad_cases / sizeof *bad_cases - 1) n = 4;
    gv_module *m = parse_exact(bad_cases[i], n);
    if (m) {
      fprintf(stdout, "bad case %zu parsed:\n%s\n", i, bad_cases[i]);
      return 1;
    }
  }
  /* Regions nested beyond the limit fail cleanly rather than exhaust the stack. */
  size_t depth = 200000, cap = depth * 40 + 256, k = 0;
  char *deep = malloc(cap);
  k += (size_t)sprintf(deep + k, "\"galv.func\"() ({\n^bb0(%%c: tensor<i1>):\n");
  for (size_t i = 0; i < depth; i++) k += (size_t)sprintf(deep + k, "\"galv.if\"(%%c) ({");
  CHECK(parse_exact(deep, k) == NULL);
  free(deep);
  return 0;
}

/* Accepted MLIR variations parse to the canonical text. */
static int test_tolerant(void) {
  const char *in =
      "// leading comment\nmodule {\n\"galv.func\"()   ({\n^entry(%x : tensor<2xf32>):  // args\n"
      "  %r = \"galv.softmax\"(%x) {z, axis = -1 : i64} : (tensor<2xf32>) -> tensor<2xf32>\n"
      "  %s = \"galv.neg\"(%r) {} : (tensor<2xf32>) -> (tensor<2xf32>) loc(unknown)\n"
      "  \"galv.return\"(%s) : (tensor<2xf32>) -> ()\n"
      "}) {sym_name = \"g\", arg_attrs = [{galv.param, galv.name = \"x\"}]} : () -> () loc(\"f\")\n}\n";
  const char *want =
      "\"galv.func\"() ({\n^bb0(%arg0: tensor<2xf32>):\n"
      "  %0 = \"galv.softmax\"(%arg0) {axis = -1 : i64, z} : (tensor<2xf32>) -> tensor<2xf32> loc(\"\")\n"
      "  %1 = \"galv.neg\"(%0) : (tensor<2xf32>) -> tensor<2xf32> loc(\"\")\n"
      "  \"galv.return\"(%1) : (tensor<2xf32>) -> () loc(\"\")\n"
      "}) {arg_attrs = [{galv.name = \"x\", galv.param}], res_attrs = [], sym_name = \"g\"} : () -> ()\n";
  gv_module *m = parse_exact(in, strlen(in));
  CHECK(m != NULL);
  CHECK(gv_verify(m) == 0);
  char *t = print_str(m, NULL);
  if (strcmp(t, want) != 0) {
    fprintf(stdout, "tolerant parse printed:\n%s", t);
    return 1;
  }
  free(t);
  gv_module_free(m);
  return 0;
}

/* One error line in the documented format. */
static int test_error_format(void) {
  char path[] = "/tmp/galv_rt_XXXXXX";
  int fd = mkstemp(path);
  CHECK(fd >= 0);
  fflush(stderr);
  CHECK(freopen(path, "w", stderr) != NULL);
  gv_progname = "galv-opt";
  const char *in = FUNC("  %0 = \"galv.neg\"(%zz) : (tensor<2xf32>) -> tensor<2xf32>\n" RET);
  CHECK(parse_exact(in, strlen(in)) == NULL);
  fflush(stderr);
  CHECK(freopen("/dev/null", "w", stderr) != NULL);
  FILE *f = fopen(path, "r");
  char line[512] = "", rest[64] = "";
  CHECK(f && fgets(line, sizeof line, f));
  CHECK(!fgets(rest, sizeof rest, f)); /* exactly one line */
  fclose(f);
  remove(path);
  if (strcmp(line, "galv-opt: error: t.mlir:3:19: use of undefined value '%zz'\n") != 0) {
    fprintf(stdout, "error line: %s", line);
    return 1;
  }
  return 0;
}

/* Random byte edits of a valid text: parse never crashes; whatever parses
 * also verifies or fails cleanly, and prints. */
static int test_mutations(const char *text, size_t len) {
  uint64_t s = 0x9e3779b97f4a7c15ull;
  char *buf = malloc(len + 64);
  static const char alphabet[] = "%#:(){}[]<>\",=x?*-0123456789.e\\\n ^!";
  for (int iter = 0; iter < 3000; iter++) {
    memcpy(buf, text, len);
    size_t n = len;
    int edits = 1 + (int)(s % 4);
    for (int e = 0; e < edits; e++) {
      s = s * 6364136223846793005ull + 1442695040888963407ull;
      size_t at = (size_t)(s >> 33) % n;
      int what = (int)(s >> 20) % 3;
      char c = (s >> 40) % 2 ? alphabet[(s >> 45) % (sizeof alphabet - 1)] : (char)(s >> 50);
      if (what == 0) {
        buf[at] = c;
      } else if (what == 1 && n > 1) {
        memmove(buf + at, buf + at + 1, n - at - 1);
        n--;
      } else {
        memmove(buf + at + 1, buf + at, n - at);
        buf[at] = c;
        n++;
      }
    }
    gv_module *m = parse_exact(buf, n);
    if (m) {
      gv_verify(m);
      char *t = print_str(m, NULL);
      free(t);
      gv_module_free(m);
    }
  }
  free(buf);
  return 0;
}

static int test_clone(void) {
  gv_module *m = build();
  const char *axes[] = {"dp", "tp"};
  int64_t sizes[] = {2, 2};
  gv_mesh *mesh = gv_module_add_mesh(m, "m", 2, axes, sizes);
  CHECK(mesh != NULL);
  mesh->has_predicted = true;
  mesh->predicted[2] = 12345;
  gv_func *f = m->main;
  gv_sharding *sh = gv_sharding_new(m, mesh, f->body->args[0]->type.rank);
  if (sh->rank > 0) sh->naxes[0] = 1, sh->axes[0][0] = 0;
  f->arg_sharding = gv_alloc(m->arena, (size_t)f->body->nargs * sizeof *f->arg_sharding);
  f->arg_sharding[0] = sh;
  for (gv_op *op = f->body->first; op; op = op->next)
    if (op->nres == 1 && op->res[0]->type.rank >= 0 && op->code != GV_OP_CONSTANT) {
      gv_sharding *r = gv_sharding_new(m, mesh, op->res[0]->type.rank);
      r->partial = 2;
      const gv_sharding *rs[1] = {r};
      gv_set_shardings(m, op, rs);
      break;
    }
  CHECK(gv_verify(m) == 0);
  size_t n1, n2, n3;
  char *t1 = print_str(m, &n1);
  CHECK(strstr(t1, "galv.sharding") && strstr(t1, "12345"));
  gv_module *c = gv_module_clone(m);
  CHECK(c != NULL);
  CHECK(gv_verify(c) == 0);
  char *t2 = print_str(c, &n2);
  if (n1 != n2 || memcmp(t1, t2, n1) != 0) {
    fprintf(stdout, "clone prints differently:\n--- original\n%s--- clone\n%s", t1, t2);
    return 1;
  }
  CHECK(same_constants(m->main->body, c->main->body) == 0);
  CHECK(c->main->param_data[0] == NULL && c->main->arg_sharding[0]->mesh == c->meshes[0]);
  for (gv_op *op = c->main->body->first; op; op = op->next)
    for (int i = 0; i < op->nres; i++) CHECK(op->res[i]->name == NULL && op->res[i]->def == op);
  /* gv_module_clone_shared: the same module, its non-bool constants' data m's own (not copied), bool ones copied */
  gv_module *cs = gv_module_clone_shared(m);
  CHECK(cs != NULL && gv_verify(cs) == 0);
  size_t ns;
  char *ts = print_str(cs, &ns);
  CHECK(ns == n1 && memcmp(t1, ts, n1) == 0);
  CHECK(same_constants(m->main->body, cs->main->body) == 0);
  int nshared = 0;
  for (const gv_op *x = m->main->body->first, *y = cs->main->body->first; x && y; x = x->next, y = y->next)
    if (x->code == GV_OP_CONSTANT) {
      const gv_tensor *a = gv_get_attr(x, "value")->u.t, *b = gv_get_attr(y, "value")->u.t;
      CHECK(b != a && (a->type.dtype == GV_DT_BOOL ? b->data != a->data || !a->data : b->data == a->data));
      nshared += a->type.dtype != GV_DT_BOOL && a->data != NULL;
    }
  CHECK(nshared > 0);
  gv_module_free(cs);
  free(ts);
  gv_module_free(m);
  char *t3 = print_str(c, &n3);
  CHECK(n1 == n3 && memcmp(t1, t3, n1) == 0);
  gv_module_free(c);
  free(t1), free(t2), free(t3);
  return 0;
}

int main(void) {
  char *text;
  size_t len;
  if (test_roundtrip(&text, &len) || test_clone()) return 1;
  /* The rest checks failures: keep their error lines out of the test log. */
  if (!freopen("/dev/null", "w", stderr)) return 1;
  int rc = test_truncations(text, len) || test_bad_cases() || test_tolerant() || test_error_format() ||
           test_mutations(text, len);
  free(text);
  if (rc) return 1;
  printf("test_roundtrip: ok\n");
  return 0;
}
