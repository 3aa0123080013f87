/* test_ir_basic.c — unit tests of the IR data structures: op table, types,
 * attributes (sorted), builder links, deferred use replacement (gv_subst),
 * the argument name index (gv_arg_index), fp16/bf16 conversion. */
#include <assert.h>
#include <stdio.h>
#include <string.h>

#include "ir/ir.h"

#define CHECK(c)                                                                                   \
  do {                                                                                             \
    if (!(c)) {                                                                                    \
      fprintf(stderr, "%s:%d: check failed: %s\n", __FILE__, __LINE__, #c);                        \
      return 1;                                                                                    \
    }                                                                                              \
  } while (0)

static int test_op_table(void) {
  for (int i = 0; i < GV_OP_COUNT; i++) {
    CHECK(gv_ops[i].name && gv_ops[i].infer && gv_ops[i].eval);
    gv_opcode c;
    CHECK(gv_opcode_lookup(gv_ops[i].name, strlen(gv_ops[i].name), &c) && c == (gv_opcode)i);
    for (int j = 0; j < i; j++) CHECK(strcmp(gv_ops[i].name, gv_ops[j].name) != 0);
  }
  gv_opcode c;
  CHECK(!gv_opcode_lookup("nope", 4, &c));
  return 0;
}

static int test_types(void) {
  int64_t d[3] = {2, 3, 4};
  gv_type t = gv_type_make(GV_DT_F32, 3, d);
  CHECK(gv_type_is_static(&t) && gv_type_numel(&t) == 24);
  char buf[64];
  gv_type_str(&t, buf, sizeof buf);
  CHECK(strcmp(buf, "tensor<2x3x4xf32>") == 0);
  t.dims[1] = GV_DIM_UNKNOWN;
  gv_type_str(&t, buf, sizeof buf);
  CHECK(strcmp(buf, "tensor<2x?x4xf32>") == 0 && gv_type_numel(&t) == -1);
  gv_type u = gv_type_unranked(GV_DT_BOOL);
  gv_type_str(&u, buf, sizeof buf);
  CHECK(strcmp(buf, "tensor<*xi1>") == 0);
  int64_t big[2] = {1LL << 40, 1LL << 40};
  gv_type o = gv_type_make(GV_DT_F32, 2, big);
  CHECK(gv_type_numel(&o) == -2);
  gv_dtype dt;
  CHECK(gv_dtype_parse("bf16", 4, &dt) && dt == GV_DT_BF16);
  CHECK(gv_dtype_parse("ui8", 3, &dt) && dt == GV_DT_U8);
  return 0;
}

static int test_attrs_sorted(void) {
  gv_module *m = gv_module_new("t");
  gv_op *op = gv_op_new(m, GV_OP_SOFTMAX, 0, NULL, 1);
  gv_set_int(m, op, "zeta", 1);
  gv_set_int(m, op, "axis", -1);
  gv_set_str(m, op, "mode", "x");
  gv_set_int(m, op, "axis", 2); /* replaces */
  CHECK(op->nattrs == 3);
  CHECK(strcmp(op->attrs[0].name, "axis") == 0 && strcmp(op->attrs[1].name, "mode") == 0 &&
        strcmp(op->attrs[2].name, "zeta") == 0);
  CHECK(gv_get_int(op, "axis", 0) == 2 && gv_get_int(op, "nope", 7) == 7);
  gv_remove_attr(op, "mode");
  CHECK(op->nattrs == 2 && !gv_get_attr(op, "mode"));
  gv_module_free(m);
  return 0;
}

static int test_builder(void) {
  gv_module *m = gv_module_new("t");
  gv_func *f = gv_func_new(m, "main");
  m->main = f;
  int64_t d[1] = {4};
  gv_value *x = gv_func_add_arg(m, f, "x", gv_type_make(GV_DT_F32, 1, d), false);
  gv_value *w = gv_func_add_arg(m, f, "w", gv_type_make(GV_DT_F32, 1, d), true);
  CHECK(f->arg_is_param[1] && !f->arg_is_param[0] && strcmp(f->arg_names[1], "w") == 0);
  gv_value *ops1[2] = {x, w};
  gv_op *a = gv_op_new(m, GV_OP_ADD, 2, ops1, 1);
  gv_op *n = gv_op_new(m, GV_OP_NEG, 1, &a->res[0], 1);
  gv_op *r = gv_op_new(m, GV_OP_RETURN, 1, &n->res[0], 0);
  gv_block_append(f->body, a);
  gv_block_append(f->body, r);
  gv_insert_before(r, n);
  CHECK(f->body->first == a && a->next == n && n->next == r && f->body->last == r);
  CHECK(gv_block_terminator(f->body) == r);
  gv_count_uses(f->body);
  CHECK(x->nuses == 1 && a->res[0]->nuses == 1 && n->res[0]->nuses == 1);
  gv_replace_uses(f->body, n->res[0], a->res[0]);
  gv_op_unlink(n);
  CHECK(a->next == r && r->opnds[0] == a->res[0]);
  gv_module_free(m);
  return 0;
}

/* gv_subst: chains resolve, the keep op keeps its operand, the walk's
 * resolution equals gv_replace_uses, galv.fused regions are not entered,
 * and many entries (rehashing) all resolve. */
static int test_subst(void) {
  gv_module *m = gv_module_new("t");
  gv_func *f = gv_func_new(m, "main");
  m->main = f;
  int64_t d[1] = {4};
  gv_value *x = gv_func_add_arg(m, f, "x", gv_type_make(GV_DT_F32, 1, d), false);
  gv_op *a = gv_op_new(m, GV_OP_NEG, 1, &x, 1);          /* a = -x */
  gv_op *b = gv_op_new(m, GV_OP_NEG, 1, &a->res[0], 1);  /* b = -a: replaces a */
  gv_op *c = gv_op_new(m, GV_OP_NEG, 1, &b->res[0], 1);  /* c = -b: replaces b */
  gv_value *uu[2] = {a->res[0], a->res[0]};
  gv_op *u = gv_op_new(m, GV_OP_ADD, 2, uu, 1);           /* u = a + a */
  gv_op *r = gv_op_new(m, GV_OP_RETURN, 1, &u->res[0], 0);
  gv_op *ops[] = {a, b, c, u, r};
  for (int i = 0; i < 5; i++) gv_block_append(f->body, ops[i]);
  gv_subst *s = gv_subst_new();
  CHECK(gv_subst_empty(s) && gv_subst_value(s, a->res[0], u) == a->res[0]);
  gv_subst_add(s, a->res[0], b->res[0], b); /* b keeps reading a */
  gv_subst_add(s, b->res[0], c->res[0], c); /* c keeps reading b */
  CHECK(!gv_subst_empty(s));
  CHECK(gv_subst_value(s, a->res[0], u) == c->res[0]); /* chain */
  CHECK(gv_subst_value(s, a->res[0], b) == a->res[0]); /* keep */
  CHECK(gv_subst_value(s, a->res[0], c) == b->res[0]); /* c keeps b, not a */
  gv_subst_block(s, f->body);
  CHECK(b->opnds[0] == a->res[0] && c->opnds[0] == b->res[0]);
  CHECK(u->opnds[0] == c->res[0] && u->opnds[1] == c->res[0] && r->opnds[0] == u->res[0]);
  /* a galv.fused region is not entered: its ops see only its block */
  gv_block *rb = gv_block_new(m);
  gv_value *arg = gv_block_add_arg(m, rb, x->type);
  gv_op *in = gv_op_new(m, GV_OP_NEG, 1, &arg, 1);
  gv_op *y = gv_op_new(m, GV_OP_YIELD, 1, &in->res[0], 0);
  gv_block_append(rb, in);
  gv_block_append(rb, y);
  gv_op *fu = gv_op_new(m, GV_OP_FUSED, 1, &x, 1);
  gv_op_add_region(m, fu, rb);
  gv_subst_add(s, arg, x, NULL);
  gv_subst_add(s, x, u->res[0], NULL);
  gv_subst_op(s, fu);
  CHECK(fu->opnds[0] == u->res[0] && in->opnds[0] == arg);
  gv_subst_free(s);
  /* many entries: rehashing keeps every one */
  gv_subst *t = gv_subst_new();
  enum { N = 1000 };
  gv_op *chain[N];
  gv_value *prev = x;
  for (int i = 0; i < N; i++) {
    chain[i] = gv_op_new(m, GV_OP_NEG, 1, &prev, 1);
    prev = chain[i]->res[0];
  }
  for (int i = 0; i + 1 < N; i += 2) gv_subst_add(t, chain[i]->res[0], chain[i + 1]->res[0], NULL);
  for (int i = 0; i + 1 < N; i += 2) CHECK(gv_subst_value(t, chain[i]->res[0], NULL) == chain[i + 1]->res[0]);
  CHECK(gv_subst_value(t, chain[1]->res[0], NULL) == chain[1]->res[0]);
  gv_subst_free(t);
  gv_module_free(m);
  return 0;
}

/* gv_arg_index gives, for a name, exactly the arguments of that name, in
 * argument order, as the scan it replaces found them; unnamed arguments and
 * absent names give nothing. */
static int test_arg_index(void) {
  gv_module *m = gv_module_new("t");
  gv_func *f = gv_func_new(m, "main");
  m->main = f;
  int64_t d[1] = {4};
  static const char *names[] = {"h.1.w", "opt.m:h.1.w", "h.0.w", "h.1.w", "b", "opt.m:h.0.w", "a", "h.10.w"};
  enum { N = sizeof names / sizeof names[0] };
  for (int i = 0; i < N; i++) gv_func_add_arg(m, f, names[i], gv_type_make(GV_DT_F32, 1, d), true);
  f->arg_names[4] = NULL; /* an unnamed argument is not indexed */
  gv_arg_index x;
  CHECK(gv_arg_index_build(&x, f) == 0 && x.n == N - 1);
  for (int i = 0; i < N; i++) {
    if (!names[i] || i == 4) continue;
    int lo, hi, want = 0;
    gv_arg_index_find(&x, names[i], &lo, &hi);
    for (int j = 0; j < N; j++) /* the scan: every argument of that name, in order */
      if (f->arg_names[j] && !strcmp(f->arg_names[j], names[i])) {
        CHECK(lo + want < hi && x.idx[lo + want] == j);
        want++;
      }
    CHECK(hi - lo == want);
  }
  int lo, hi;
  gv_arg_index_find(&x, "b", &lo, &hi);
  CHECK(lo == hi);
  gv_arg_index_find(&x, "zzz", &lo, &hi);
  CHECK(lo == hi && hi == x.n);
  gv_arg_index_find(&x, "", &lo, &hi);
  CHECK(lo == hi && lo == 0);
  gv_arg_index_free(&x);
  gv_module_free(m);
  return 0;
}

static int test_half(void) {
  float vals[] = {0.0f, 1.0f, -2.5f, 65504.0f, 6.1035156e-05f, 5.9604645e-08f, 0.333333f};
  for (unsigned i = 0; i < sizeof vals / sizeof vals[0]; i++) {
    float r = gv_f16_to_f32(gv_f32_to_f16(vals[i]));
    CHECK(r == vals[i] || (i == 6 && r > 0.3332f && r < 0.3335f));
    float b = gv_bf16_to_f32(gv_f32_to_bf16(vals[i]));
    CHECK(b == vals[i] || (b / vals[i] > 0.99f && b / vals[i] < 1.01f));
  }
  CHECK(gv_f32_to_f16(1e6f) == 0x7c00);
  return 0;
}

int main(void) {
  int fails = test_op_table() + test_types() + test_attrs_sorted() + test_builder() + test_subst() + test_arg_index() + test_half();
  printf("test_ir_basic: %s\n", fails ? "FAILED" : "ok");
  return fails ? 1 : 0;
}
