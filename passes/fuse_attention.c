/* fuse_attention.c — training: each attention chain dot(Q, K) -> [add | sub
 * | mul | div | where]* -> softmax(last axis) -> [dropout] -> dot(P, V) that
 * gv_attn_match_train (ir/attention.c) finds becomes one galv.attention
 * (docs/fused-attention.md), before autodiff, so that neither the forward
 * nor the backward (galv.attention_grad) holds an S x S value. The
 * elementwise ops become the op's score functor; a galv.dropout on the
 * probabilities becomes the op's dropout (its mask attributes copied: the
 * kernels draw the same mask per score). A chain whose functor
 * operand depends on a trained parameter stays (the functor operands get
 * no gradient). The op keeps the chain's layer group (attr `layer`, the
 * pipeline planner's stash count). Off with gv_train_opts.unfused_attention
 * (--fused-attention off). */
#include <stdbool.h>
#include <stdio.h>
#include <string.h>

#include "../ir/attention.h"
#include "passes.h"

int gv_pass_fuse_attention(gv_module *m) {
  if (!m || !m->main || !m->main->body || gv_train_opts.unfused_attention) return 0;
  gv_func *fn = m->main;
  gv_block *b = fn->body;
  /* id: 1 when the value depends on a trained parameter */
  for (int i = 0; i < b->nargs; i++)
    b->args[i]->id = fn->arg_is_param && fn->arg_is_param[i] && !(fn->arg_is_frozen && fn->arg_is_frozen[i]);
  for (gv_op *op = b->first; op; op = op->next) {
    int dep = 0;
    for (int i = 0; i < op->nopnds; i++) dep |= op->opnds[i]->id == 1;
    for (int i = 0; i < op->nres; i++) op->res[i]->id = dep;
  }
  /* the block's uses counted once (each match read the ops after its dot: quadratic in a long forward), the values
   * whose uses a fusion changes marked as such (scanned again when asked) */
  gv_attn_uses *ix = gv_attn_uses_new(b); /* NULL (out of memory): every match scans */
  gv_op *op = b->first;
  while (op) {
    gv_attn_train_chain c;
    if (!gv_attn_match_train_in(op, &c, ix)) {
      op = op->next;
      continue;
    }
    int dep = 0;
    for (int f = 0; f < c.nfn; f++) dep |= c.fn[f]->id == 1;
    if (dep) {
      op = op->next;
      continue;
    }
    gv_value *in[3 + GV_ATTN_MAX_FN];
    in[0] = c.d1->opnds[0], in[1] = c.d1->opnds[1], in[2] = c.d2->opnds[1];
    for (int f = 0; f < c.nfn; f++) in[3 + f] = c.fn[f];
    gv_op *a = gv_op_new(m, GV_OP_ATTENTION, 3 + c.nfn, in, 2);
    gv_op_set_loc(m, a, c.sm->loc ? c.sm->loc : "", c.sm->onnx_op);
    gv_set_int(m, a, "k_contract", c.k_contract);
    gv_set_int(m, a, "v_contract", c.v_contract);
    gv_set_str(m, a, "score", c.score);
    static const char *const mask_attrs[] = {"acc", "id", "ratio", "rows", "seed"}; /* galv.dropout's, ir/dropout.h */
    for (int i = 0; c.drop && i < c.drop->nattrs; i++)
      for (int k = 0; k < 5; k++)
        if (!strcmp(c.drop->attrs[i].name, mask_attrs[k])) gv_set_attr(m, a, &c.drop->attrs[i]);
    int64_t layer = gv_get_int(c.sm, "layer", -1); /* a clustered module's layer group (cluster-layers) */
    if (layer >= 0) gv_set_int(m, a, "layer", layer);
    if (gv_infer_op(m, a, NULL)) {
      gv_attn_uses_free(ix);
      return -1;
    }
    if (!gv_type_equal(&a->res[0]->type, &c.d2->res[0]->type)) {
      gv_attn_uses_free(ix);
      return gv_error_op(m, c.d2, "fuse-attention: the fused output type differs from the chain's");
    }
    gv_op *d1 = (gv_op *)c.d1, *d2 = (gv_op *)c.d2;
    gv_insert_before(d2, a);
    a->res[0]->name = d2->res[0]->name;
    a->res[0]->id = a->res[1]->id = 0;
    /* d2's result's uses: after d2, as counted (a count off, or none: every use, gv_replace_uses_after) */
    gv_replace_uses_after(d2, d2->res[0], a->res[0], gv_attn_uses_count(ix, d2->res[0]));
    /* what the removed chain read and the fused op reads: their uses changed */
    const gv_op *gone[4 + GV_ATTN_MAX_STEPS] = {d1, d2, c.sm, c.drop};
    for (int s = 0; s < c.nsteps; s++) gone[4 + s] = c.steps[s];
    for (int g = 0; g < 4 + c.nsteps; g++)
      for (int i = 0; gone[g] && i < gone[g]->nopnds; i++) gv_attn_uses_dirty(ix, gone[g]->opnds[i]);
    for (int i = 0; i < a->nopnds; i++) gv_attn_uses_dirty(ix, a->opnds[i]);
    gv_attn_uses_dirty(ix, d2->res[0]);
    for (int r = 0; r < a->nres; r++) gv_attn_uses_dirty(ix, a->res[r]);
    /* the chain's values have no other use (the match): drop it and go on
     * after the op before d1 (another chain may start between the dots) */
    gv_op *next = d1->next;
    for (bool chain = true; chain && next;) {
      chain = next == d2 || next == c.sm || next == c.drop;
      for (int s = 0; s < c.nsteps; s++) chain |= next == c.steps[s];
      if (chain) next = next->next;
    }
    gv_op_unlink(d2);
    if (c.drop) gv_op_unlink((gv_op *)c.drop);
    gv_op_unlink((gv_op *)c.sm);
    for (int s = 0; s < c.nsteps; s++) gv_op_unlink((gv_op *)c.steps[s]);
    gv_op_unlink(d1);
    op = next;
  }
  gv_attn_uses_free(ix);
  gv_count_uses(b);
  return 0;
}
