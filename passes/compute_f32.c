/* compute_f32.c — the `compute-f32` pass (--precision bf16 / fp16;
 * docs/autodiff.md, "Models computed in 16 bits"): a model exported whole
 * in 16 bits (torch's .half() or .to(torch.bfloat16) before the export:
 * parameters, activations and the ops' types all fp16 / bf16) computes in
 * fp32 with 16-bit storage, as mixed precision runs its fp32 twin. Under
 * --precision X (bf16 or fp16) every value, parameter, input, constant and
 * type attribute of dtype X becomes f32 — a parameter's and a constant's
 * stored bits widened exactly, here, once — and a cast that then converts
 * f32 to f32 is dropped. The storage pass then stores the values 16-bit as
 * for any model, so the parameters are fp32 masters (the optimizer state,
 * the checkpoint and -o fp32), the activations and GEMM inputs X, and the
 * program computes and accumulates in fp32: the 16-bit model trains as the
 * fp32 model holding its values does under the same --precision. A model
 * that computes in the other 16-bit dtype (an op whose result is typed it:
 * a .half() model under --precision bf16) is one error line naming the
 * node. Parameters of the other dtype read only through a cast to f32 (a
 * checkpoint stored in 16 bits) are master-weights' (training); a frozen
 * parameter of dtype X stays X (read, never updated), read through a cast
 * to f32. Without
 * --precision bf16 / fp16, or without a value of dtype X, the pass does
 * nothing (an fp32 compile keeps a 16-bit model's types, as before: what
 * the targets' 16-bit typed ops run, masters from master-weights). Runs
 * after shape-infer, before fold-constants (which then folds in fp32). */
#include <string.h>

#include "passes.h"

static const char *flag_name(gv_dtype t) { return t == GV_DT_BF16 ? "bf16" : "fp16"; }

/* the first op of b (regions included) other than a constant with a result of dtype y */
static const gv_op *computes_in(const gv_block *b, gv_dtype y) {
  for (const gv_op *op = b->first; op; op = op->next) {
    for (int r = 0; r < op->nres && op->code != GV_OP_CONSTANT; r++)
      if (op->res[r]->type.dtype == y) return op;
    for (int k = 0; k < op->nregions; k++) {
      const gv_op *in = computes_in(op->regions[k], y);
      if (in) return in;
    }
  }
  return NULL;
}

/* n 16-bit elements (dtype x) at h widened into a new f32 array of the module's arena */
static float *widen(gv_module *m, gv_dtype x, const void *h, int64_t n) {
  float *f = gv_alloc(m->arena, (size_t)(n > 0 ? n : 1) * sizeof *f);
  for (int64_t e = 0; e < n; e++) {
    uint16_t u;
    memcpy(&u, (const char *)h + 2 * e, sizeof u); /* external data may be unaligned */
    f[e] = x == GV_DT_BF16 ? gv_bf16_to_f32(u) : gv_f16_to_f32(u);
  }
  return f;
}

static bool any_x(const gv_block *b, gv_dtype x) {
  for (int i = 0; i < b->nargs; i++)
    if (b->args[i]->type.dtype == x) return true;
  for (const gv_op *op = b->first; op; op = op->next) {
    for (int r = 0; r < op->nres; r++)
      if (op->res[r]->type.dtype == x) return true;
    for (int a = 0; a < op->nattrs; a++)
      if ((op->attrs[a].kind == GV_ATTR_TYPE && op->attrs[a].u.ty == x) ||
          (op->attrs[a].kind == GV_ATTR_TENSOR && op->attrs[a].u.t->type.dtype == x))
        return true;
    for (int k = 0; k < op->nregions; k++)
      if (any_x(op->regions[k], x)) return true;
  }
  return false;
}

/* every value, type attribute and tensor attribute of dtype x in b (regions included; the arguments of b itself
 * when args) made f32; the casts that then convert f32 to f32 dropped */
static void to_f32(gv_module *m, gv_block *b, gv_dtype x, bool args) {
  for (int i = 0; i < b->nargs && args; i++)
    if (b->args[i]->type.dtype == x) b->args[i]->type.dtype = GV_DT_F32;
  for (gv_op *op = b->first, *next; op; op = next) {
    next = op->next;
    for (int r = 0; r < op->nres; r++)
      if (op->res[r]->type.dtype == x) op->res[r]->type.dtype = GV_DT_F32;
    for (int a = 0; a < op->nattrs; a++) {
      gv_attr *at = &op->attrs[a];
      if (at->kind == GV_ATTR_TYPE && at->u.ty == x) at->u.ty = GV_DT_F32;
      else if (at->kind == GV_ATTR_TENSOR && at->u.t->type.dtype == x) {
        gv_tensor *t = gv_alloc(m->arena, sizeof *t);
        t->type = at->u.t->type;
        t->type.dtype = GV_DT_F32;
        t->data = widen(m, x, at->u.t->data, gv_tensor_numel(at->u.t));
        at->u.t = t;
      }
    }
    for (int k = 0; k < op->nregions; k++) to_f32(m, op->regions[k], x, true);
    if (op->code == GV_OP_CAST && op->nopnds == 1 && op->nres == 1 && op->opnds[0]->type.dtype == GV_DT_F32 &&
        op->res[0]->type.dtype == GV_DT_F32) {
      gv_replace_uses(b, op->res[0], op->opnds[0]);
      gv_op_unlink(op);
    }
  }
}

int gv_pass_compute_f32(gv_module *m) {
  const gv_dtype x = gv_precision_opts.storage;
  if ((x != GV_DT_BF16 && x != GV_DT_F16) || !m->main || !m->main->body) return 0;
  const gv_dtype y = x == GV_DT_BF16 ? GV_DT_F16 : GV_DT_BF16;
  gv_func *f = m->main;
  const gv_op *op = computes_in(f->body, y);
  if (op)
    return gv_error_op(m, op, "the model computes in %s (its values typed %s), but --precision %s is given: compile it "
                              "with --precision %s (fp32 compute, %s storage)",
                       flag_name(y), gv_dtype_name(y), flag_name(x), flag_name(y), flag_name(y));
  if (!any_x(f->body, x)) return 0;
  gv_block *b = f->body;
  for (int i = 0; i < b->nargs; i++) {
    gv_value *w = b->args[i];
    if (w->type.dtype != x) continue;
    if (f->arg_is_frozen && f->arg_is_frozen[i]) { /* frozen: stays 16-bit (read, never updated; -o writes its stored
                                                    * bits back, as master-weights keeps one), read through a cast */
      gv_op *c = gv_op_new(m, GV_OP_CAST, 1, &w, 1);
      gv_set_type(m, c, "to", GV_DT_F32);
      c->res[0]->type = w->type;
      c->res[0]->type.dtype = GV_DT_F32;
      gv_op_set_loc(m, c, f->arg_names[i], NULL);
      if (b->first) gv_insert_before(b->first, c);
      else gv_block_append(b, c);
      gv_replace_uses(b, w, c->res[0]);
      c->opnds[0] = w; /* gv_replace_uses rewrote the cast's own operand too */
      continue;
    }
    if (f->param_data && f->param_data[i]) /* the parameter's stored bits widened exactly: the fp32 master */
      f->param_data[i] = widen(m, x, f->param_data[i], gv_type_numel(&w->type));
    w->type.dtype = GV_DT_F32;
  }
  to_f32(m, b, x, false);
  return 0;
}
