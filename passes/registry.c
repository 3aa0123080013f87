/* registry.c — the table of passes that galvc and galv-opt can run. */
#include "passes.h"

#include <string.h>

const gv_pass gv_pass_table[] = {
    {"shape-infer", gv_pass_shape_infer, "infer every value's type; shapes become static once dims are bound"},
    {"fold-constants", gv_pass_fold_constants, "evaluate ops whose inputs are constants; resolve shape chains and constant If"},
    {"canonicalize", gv_pass_canonicalize, "recognise decomposed LayerNorm, RMSNorm and GELU as single ops"},
    {"dce", gv_pass_dce, "remove ops whose results are unused"},
    {"fuse", gv_pass_fuse, "group elementwise ops of one shape into galv.fused ops (one loop each)"},
    {"memory-plan", gv_pass_memory_plan, "place activations in one arena with liveness-based reuse (galv.arena, offsets)"},
};
const int gv_pass_count = (int)(sizeof gv_pass_table / sizeof gv_pass_table[0]);

const gv_pass *gv_pass_lookup(const char *name) {
  for (int i = 0; i < gv_pass_count; i++)
    if (strcmp(gv_pass_table[i].name, name) == 0) return &gv_pass_table[i];
  return 0;
}
