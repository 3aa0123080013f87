/* test_verify.c — gv_verify accepts a well-formed module and catches each
 * kind of broken IR it is meant to catch: operand and result counts, uses
 * before definition or outside their region, terminators, galv.if shape,
 * attribute order, constant types. Each case builds a fresh module with the
 * builder and breaks one thing. */
#include <stdio.h>
#include <string.h>

#include "ir/ir.h"

#define CHECK(c)                                                                                   \
  do {                                                                                             \
    if (!(c)) {                                                                                    \
      fprintf(stdout, "%s:%d: check failed: %s\n", __FILE__, __LINE__, #c);                        \
      return 1;                                                                                    \
    }                                                                                              \
  } while (0)

/* A valid module: x -> neg -> if(c){yield neg}{yield x} -> return. The
 * fixture's ops are exposed so each case can break one. */
typedef struct {
  gv_module *m;
  gv_value *x, *c;
  gv_op *neg, *iff, *then_y, *else_y, *ret, *cst;
} fixture;

static fixture make(void) {
  fixture f;
  int64_t d[1] = {4};
  gv_type t = gv_type_make(GV_DT_F32, 1, d);
  f.m = gv_module_new("v.mlir");
  gv_func *fn = gv_func_new(f.m, "main");
  f.m->main = fn;
  f.x = gv_func_add_arg(f.m, fn, "x", t, false);
  f.c = gv_func_add_arg(f.m, fn, "c", gv_type_make(GV_DT_BOOL, 0, NULL), false);
  gv_tensor *ct = gv_tensor_new(f.m->arena, t);
  f.cst = gv_constant_new(f.m, ct);
  gv_block_append(fn->body, f.cst);
  f.neg = gv_op_new(f.m, GV_OP_NEG, 1, &f.x, 1);
  f.neg->res[0]->type = t;
  gv_set_int(f.m, f.neg, "a", 1);
  gv_set_int(f.m, f.neg, "b", 2);
  gv_block_append(fn->body, f.neg);
  f.iff = gv_op_new(f.m, GV_OP_IF, 1, &f.c, 1);
  gv_block *th = gv_block_new(f.m), *el = gv_block_new(f.m);
  f.then_y = gv_op_new(f.m, GV_OP_YIELD, 1, &f.neg->res[0], 0);
  f.else_y = gv_op_new(f.m, GV_OP_YIELD, 1, &f.x, 0);
  gv_block_append(th, f.then_y);
  gv_block_append(el, f.else_y);
  gv_op_add_region(f.m, f.iff, th);
  gv_op_add_region(f.m, f.iff, el);
  gv_block_append(fn->body, f.iff);
  f.ret = gv_op_new(f.m, GV_OP_RETURN, 1, &f.iff->res[0], 0);
  gv_block_append(fn->body, f.ret);
  return f;
}

/* Runs gv_verify on a broken module; it must fail. */
static int expect_fail(fixture *f, const char *what) {
  int rc = gv_verify(f->m);
  gv_module_free(f->m);
  if (rc != -1) {
    fprintf(stdout, "verifier accepted: %s\n", what);
    return 1;
  }
  return 0;
}

int main(void) {
  fixture f = make();
  CHECK(gv_verify(f.m) == 0);
  CHECK(gv_verify(f.m) == 0); /* repeatable: scratch ids are reset */
  gv_module_free(f.m);
  /* Errors are expected from here on. */
  if (!freopen("/dev/null", "w", stderr)) return 1;
  int bad = 0;

  f = make();
  gv_op_set_operands(f.m, f.neg, 2, (gv_value *[]){f.x, f.x});
  bad |= expect_fail(&f, "neg with 2 operands");

  f = make();
  gv_op_set_operands(f.m, f.ret, 0, NULL);
  gv_op_set_operands(f.m, f.iff, 0, NULL);
  bad |= expect_fail(&f, "if without its condition");

  f = make();
  f.neg->nres = 0;
  bad |= expect_fail(&f, "neg without a result");

  f = make();
  f.neg->opnds[0] = NULL;
  bad |= expect_fail(&f, "null operand");

  f = make();
  /* neg uses the if's result, defined after it */
  f.neg->opnds[0] = f.iff->res[0];
  bad |= expect_fail(&f, "use before definition");

  f = make();
  {
    gv_op *late = gv_op_new(f.m, GV_OP_NEG, 1, &f.x, 1);
    f.neg->opnds[0] = late->res[0]; /* never linked anywhere */
  }
  bad |= expect_fail(&f, "use of an op that is not in the module");

  f = make();
  {
    /* a value defined inside the then-region, used after the if */
    gv_op *in = gv_op_new(f.m, GV_OP_NEG, 1, &f.x, 1);
    gv_insert_before(f.then_y, in);
    f.ret->opnds[0] = in->res[0];
  }
  bad |= expect_fail(&f, "region value used outside its region");

  f = make();
  {
    gv_op *in = gv_op_new(f.m, GV_OP_NEG, 1, &f.x, 1);
    gv_insert_before(f.then_y, in);
    f.else_y->opnds[0] = in->res[0];
  }
  bad |= expect_fail(&f, "value of one region used in the sibling region");

  f = make();
  gv_op_unlink(f.ret);
  bad |= expect_fail(&f, "missing galv.return");

  f = make();
  gv_op_unlink(f.ret);
  gv_insert_before(f.iff, f.ret);
  f.ret->opnds[0] = f.neg->res[0];
  bad |= expect_fail(&f, "terminator not last");

  f = make();
  gv_op_unlink(f.ret);
  gv_block_append(f.m->main->body, gv_op_new(f.m, GV_OP_YIELD, 1, &f.iff->res[0], 0));
  bad |= expect_fail(&f, "yield ends the function body");

  f = make();
  {
    gv_block *th = f.iff->regions[0];
    gv_op_unlink(f.then_y);
    gv_block_append(th, gv_op_new(f.m, GV_OP_RETURN, 1, &f.x, 0));
  }
  bad |= expect_fail(&f, "return inside a region");

  f = make();
  gv_op_unlink(f.then_y);
  bad |= expect_fail(&f, "region without a terminator");

  f = make();
  f.iff->nregions = 1;
  bad |= expect_fail(&f, "if with one region");

  f = make();
  gv_op_set_operands(f.m, f.else_y, 2, (gv_value *[]){f.x, f.x});
  bad |= expect_fail(&f, "yield count differs from the if's results");

  f = make();
  f.iff->opnds[0] = f.x;
  bad |= expect_fail(&f, "if condition is f32");

  f = make();
  gv_op_add_region(f.m, f.neg, gv_block_new(f.m));
  bad |= expect_fail(&f, "region on neg");

  f = make();
  {
    gv_attr t = f.neg->attrs[0];
    f.neg->attrs[0] = f.neg->attrs[1];
    f.neg->attrs[1] = t;
  }
  bad |= expect_fail(&f, "unsorted attributes");

  f = make();
  f.neg->attrs[1].name = f.neg->attrs[0].name;
  bad |= expect_fail(&f, "duplicate attributes");

  f = make();
  f.cst->res[0]->type = gv_type_make(GV_DT_F16, 0, NULL);
  bad |= expect_fail(&f, "constant type differs from its value");

  f = make();
  gv_remove_attr(f.cst, "value");
  bad |= expect_fail(&f, "constant without value");

  f = make();
  f.m->main = NULL;
  bad |= expect_fail(&f, "module without function");

  if (bad) return 1;
  printf("test_verify: ok\n");
  return 0;
}
