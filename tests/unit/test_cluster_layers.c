/* test_cluster_layers — cluster-layers (passes/cluster_layers.c) on
 * synthetic programs: an L-layer residual MLP and a two-branch (diamond)
 * network. For every requested group count K = 1..L (and more groups than
 * layers, up to the op count): exactly K non-empty groups, FLOPs within the
 * stated bound max((1+delta)*total/K, total/K + largest op), acyclic (no
 * operand defined in a later group), the reordered body verifies, and
 * repeated layers share a block signature when K divides L. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "ir/ir.h"
#include "passes/passes.h"

static int fails;
#define CHECK(c, ...)                                              \
  do {                                                             \
    if (!(c)) {                                                    \
      fprintf(stderr, "FAIL %s:%d: ", __FILE__, __LINE__);         \
      fprintf(stderr, __VA_ARGS__);                                \
      fputc('\n', stderr);                                         \
      fails++;                                                     \
    }                                                              \
  } while (0)

#define DOT "{lhs_batch = array<i64>, lhs_contract = array<i64: 1>, rhs_batch = array<i64>, rhs_contract = array<i64: 0>}"

/* L layers: h = h + dot(gelu(dot(h, w1_l)), w2_l); diamond: two branches per layer. */
static char *make_model(int L, bool diamond) {
  size_t cap = 1 << 20, n = 0;
  char *s = malloc(cap);
  n += (size_t)snprintf(s + n, cap - n, "\"galv.func\"() ({\n^bb0(%%arg0: tensor<8x16xf32>");
  int nw = diamond ? 3 : 2;
  for (int l = 0; l < L * nw; l++) n += (size_t)snprintf(s + n, cap - n, ", %%arg%d: tensor<16x16xf32>", l + 1);
  n += (size_t)snprintf(s + n, cap - n, "):\n");
  int v = 0, h = -1; /* h: -1 = %arg0 */
#define H(buf) (h < 0 ? snprintf(buf, sizeof buf, "%%arg0") : snprintf(buf, sizeof buf, "%%%d", h))
  for (int l = 0; l < L; l++) {
    char hb[32];
    H(hb);
    int w = 1 + l * nw;
    n += (size_t)snprintf(s + n, cap - n, "  %%%d = \"galv.dot\"(%s, %%arg%d) " DOT " : (tensor<8x16xf32>, tensor<16x16xf32>) -> tensor<8x16xf32>\n", v, hb, w);
    n += (size_t)snprintf(s + n, cap - n, "  %%%d = \"galv.gelu\"(%%%d) {approximate = \"none\"} : (tensor<8x16xf32>) -> tensor<8x16xf32>\n", v + 1, v);
    n += (size_t)snprintf(s + n, cap - n, "  %%%d = \"galv.dot\"(%%%d, %%arg%d) " DOT " : (tensor<8x16xf32>, tensor<16x16xf32>) -> tensor<8x16xf32>\n", v + 2, v + 1, w + 1);
    int last = v + 2;
    v += 3;
    if (diamond) {
      n += (size_t)snprintf(s + n, cap - n, "  %%%d = \"galv.dot\"(%s, %%arg%d) " DOT " : (tensor<8x16xf32>, tensor<16x16xf32>) -> tensor<8x16xf32>\n", v, hb, w + 2);
      n += (size_t)snprintf(s + n, cap - n, "  %%%d = \"galv.add\"(%%%d, %%%d) : (tensor<8x16xf32>, tensor<8x16xf32>) -> tensor<8x16xf32>\n", v + 1, last, v);
      last = v + 1;
      v += 2;
    }
    n += (size_t)snprintf(s + n, cap - n, "  %%%d = \"galv.add\"(%%%d, %s) : (tensor<8x16xf32>, tensor<8x16xf32>) -> tensor<8x16xf32>\n", v, last, hb);
    h = v++;
  }
  n += (size_t)snprintf(s + n, cap - n, "  \"galv.return\"(%%%d) : (tensor<8x16xf32>) -> ()\n}) {sym_name = \"main\"} : () -> ()\n", h);
  return s;
}

static void check(int L, bool diamond, int k) {
  char *text = make_model(L, diamond);
  gv_module *m = gv_parse_module(text, strlen(text), "synthetic");
  free(text);
  CHECK(m, "parse");
  if (!m) return;
  gv_layer_groups lg;
  int rc = gv_cluster_layers(m, k, &lg);
  CHECK(rc == 0, "L=%d diamond=%d k=%d: rc %d", L, diamond, k, rc);
  if (rc) {
    gv_module_free(m);
    return;
  }
  CHECK(lg.ngroups == k, "groups %d != %d", lg.ngroups, k);
  for (int g = 0; g < k; g++) {
    CHECK(lg.nops_per[g] > 0, "L=%d k=%d: group %d empty", L, k, g);
    CHECK(lg.flops[g] <= lg.bound, "L=%d k=%d: group %d FLOPs %lld > bound %lld", L, k, g, (long long)lg.flops[g],
          (long long)lg.bound);
  }
  /* acyclic, and the body is group by group */
  int prev = 0;
  for (gv_op *op = m->main->body->first; op; op = op->next) {
    if (op->code == GV_OP_RETURN) continue;
    int g = (int)gv_get_int(op, "layer", -1);
    CHECK(g >= prev, "L=%d k=%d: groups not contiguous", L, k);
    prev = g;
    for (int i = 0; i < op->nopnds; i++)
      if (op->opnds[i]->def)
        CHECK(gv_get_int(op->opnds[i]->def, "layer", -1) <= g, "L=%d k=%d: edge from a later group", L, k);
  }
  CHECK(gv_verify(m) == 0, "verify after reorder");
  /* repeated layers: with K dividing L and METIS parts kept on layer
   * boundaries, the middle groups share one signature; at least check that
   * equal signatures imply equal op counts and FLOPs */
  for (int g = 0; g < k; g++)
    if (lg.block[g] != g)
      CHECK(lg.flops[g] == lg.flops[lg.block[g]] && lg.nops_per[g] == lg.nops_per[lg.block[g]], "block signature");
  gv_module_free(m);
}

int main(void) {
  gv_progname = "test_cluster_layers";
  int ncases = 0;
  for (int d = 0; d < 2; d++)
    for (int L = 1; L <= 24; L += (L < 8 ? 1 : 8)) {
      for (int k = 1; k <= L + 3; k++, ncases++) check(L, d, k);
    }
  /* repeated blocks recognised: 8 identical layers in 8 or 4 groups */
  {
    char *text = make_model(8, false);
    gv_module *m = gv_parse_module(text, strlen(text), "synthetic");
    free(text);
    gv_layer_groups lg;
    if (m && gv_cluster_layers(m, 8, &lg) == 0) {
      int distinct = 0;
      for (int g = 0; g < 8; g++) distinct += lg.block[g] == g;
      printf("8 layers in 8 groups: %d distinct blocks (%s)\n", distinct, lg.recut ? "re-cut" : "METIS kept");
      CHECK(distinct <= 3, "8 identical layers gave %d distinct blocks", distinct);
    }
    gv_module_free(m);
  }
  /* bad input: more groups than ops, zero groups */
  {
    char *text = make_model(2, false);
    gv_module *m = gv_parse_module(text, strlen(text), "synthetic");
    free(text);
    gv_layer_groups lg;
    CHECK(gv_cluster_layers(m, 100, &lg) == -1, "100 groups of 8 ops must fail");
    CHECK(gv_cluster_layers(m, 0, &lg) == -1, "0 groups must fail");
    gv_module_free(m);
  }
  printf("%d cases, %d failures\n", ncases, fails);
  return fails ? 1 : 0;
}
