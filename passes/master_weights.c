/* master_weights.c — the `master-weights` pass (training; docs/autodiff.md,
 * "Models stored in 16 bits"): a model whose trained initializers are
 * stored bf16 or fp16 trains with fp32 master weights, as mixed-precision
 * training keeps them. Each trained parameter of a 16-bit float type
 * becomes an fp32 parameter holding the same values (widened exactly: its
 * weight bytes converted once, here). Where the model reads it through a
 * cast to fp32 (the usual form of a checkpoint saved in 16 bits) that cast
 * reads the master itself, so --precision alone decides how what the model
 * reads is rounded (fp32 training: not at all; bf16 / fp16: the storage
 * plan's 16-bit GEMM inputs); where the model reads the 16-bit value as it
 * is (its ops typed bf16 / fp16) a galv.cast of the master to the stored
 * type, placed first in the body, takes the parameter's place, rounding it
 * (to nearest even) each step. The gradient reaches the fp32 master either
 * way, and the optimizer, the checkpoint and -o hold fp32 values. Frozen
 * 16-bit parameters stay as they are (read, never updated). Without a
 * 16-bit trained parameter the pass does nothing. */
#include <string.h>

#include "passes.h"

/* v read by an op of b (regions included) */
static bool uses(const gv_block *b, const gv_value *v) {
  for (const gv_op *op = b->first; op; op = op->next) {
    for (int k = 0; k < op->nopnds; k++)
      if (op->opnds[k] == v) return true;
    for (int r = 0; r < op->nregions; r++)
      if (uses(op->regions[r], v)) return true;
  }
  return false;
}

int gv_pass_master_weights(gv_module *m) {
  if (!m->main || !m->main->body) return 0;
  gv_func *f = m->main;
  gv_block *b = f->body;
  for (int i = 0; i < b->nargs; i++) {
    gv_value *w = b->args[i];
    const gv_dtype dt = w->type.dtype;
    if (!gv_arg_trains(f, i) || (dt != GV_DT_BF16 && dt != GV_DT_F16)) continue;
    const gv_op *user = NULL; /* the cast takes its first user's location (its layer) */
    for (const gv_op *op = b->first; op && !user; op = op->next)
      for (int k = 0; k < op->nopnds && !user; k++)
        if (op->opnds[k] == w) user = op;
    if (f->param_data && f->param_data[i]) { /* the stored bits, widened exactly */
      const int64_t n = gv_type_numel(&w->type);
      const uint16_t *h = f->param_data[i];
      float *x = gv_alloc(m->arena, (size_t)(n > 0 ? n : 1) * sizeof *x);
      for (int64_t e = 0; e < n; e++) {
        uint16_t u;
        memcpy(&u, h + e, sizeof u); /* external data may be unaligned */
        x[e] = dt == GV_DT_BF16 ? gv_bf16_to_f32(u) : gv_f16_to_f32(u);
      }
      f->param_data[i] = x;
    }
    const gv_type stored = w->type;
    w->type.dtype = GV_DT_F32;
    gv_op *c = gv_op_new(m, GV_OP_CAST, 1, &w, 1);
    gv_set_type(m, c, "to", dt);
    c->res[0]->type = stored;
    gv_op_set_loc(m, c, user && user->loc ? user->loc : f->arg_names[i], user ? user->onnx_op : NULL);
    if (b->first) gv_insert_before(b->first, c);
    else gv_block_append(b, c);
    gv_replace_uses(b, w, c->res[0]);
    c->opnds[0] = w; /* gv_replace_uses rewrote the cast's own operand too */
    /* the model's own casts back to fp32 (a checkpoint stored 16-bit, read as fp32) read the master itself:
     * what the model reads is then rounded as --precision decides (fp32: not at all; bf16 / fp16: the storage
     * plan's 16-bit GEMM inputs), and no 16-bit typed value is left where none is read */
    bool read16 = false; /* the 16-bit value read other than through a cast to fp32 */
    for (gv_op *op = c->next, *next; op; op = next) {
      next = op->next;
      if (op->code == GV_OP_CAST && op->nopnds == 1 && op->opnds[0] == c->res[0] && op->res[0]->type.dtype == GV_DT_F32) {
        gv_replace_uses(b, op->res[0], w);
        gv_op_unlink(op);
        continue;
      }
      for (int k = 0; k < op->nopnds; k++) read16 = read16 || op->opnds[k] == c->res[0];
      for (int r = 0; r < op->nregions && !read16; r++) read16 = uses(op->regions[r], c->res[0]);
    }
    if (!read16) gv_op_unlink(c);
  }
  return 0;
}
