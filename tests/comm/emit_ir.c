/* emit_ir.c — test helper: emits the CPU program of a device program given
 * as IR text (after galv-opt --passes=memory-plan), for hand-written local
 * programs with collectives (tests/comm_emit.sh). IR text carries no weights:
 * parameter k (in argument order among the parameters) gets global data
 * value[i] = ((i * 7 + k * 13) % 17 - 8) / 8 (f32), of its global shape
 * (local dims times the split of its galv.sharding), which the test's
 * reference recomputes.
 *
 *   emit_ir IN.mlir OUTDIR */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "codegen/codegen.h"

int main(int argc, char **argv) {
  gv_progname = "emit_ir";
  if (argc != 3) {
    fprintf(stderr, "usage: emit_ir IN.mlir OUTDIR\n");
    return 2;
  }
  FILE *f = fopen(argv[1], "rb");
  if (!f) return gv_error_plain("%s: cannot open", argv[1]), 1;
  char *text = NULL;
  size_t len = 0, cap = 0, n;
  char buf[65536];
  while ((n = fread(buf, 1, sizeof buf, f)) > 0) {
    if (len + n + 1 > cap) {
      cap = (len + n + 1) * 2;
      char *t = realloc(text, cap);
      if (!t) abort();
      text = t;
    }
    memcpy(text + len, buf, n);
    len += n;
  }
  fclose(f);
  gv_module *m = gv_parse_module(text ? text : "", len, argv[1]);
  free(text);
  if (!m) return 1;
  gv_func *fn = m->main;
  float **data = calloc((size_t)fn->body->nargs + 1, sizeof *data);
  int k = 0;
  for (int i = 0; i < fn->body->nargs; i++) {
    if (!fn->arg_is_param[i]) continue;
    const gv_type *t = &fn->body->args[i]->type;
    const gv_sharding *s = fn->arg_sharding ? fn->arg_sharding[i] : NULL;
    int64_t numel = 1;
    for (int d = 0; d < t->rank; d++) numel *= t->dims[d] * (s && d < s->rank ? gv_sharding_dim_split(s, d) : 1);
    if (t->dtype != GV_DT_F32) return gv_error_plain("emit_ir: parameter %d is not f32", i), 1;
    data[i] = malloc(sizeof(float) * (size_t)(numel ? numel : 1));
    for (int64_t e = 0; e < numel; e++) data[i][e] = (float)((e * 7 + k * 13) % 17 - 8) / 8.0f;
    fn->param_data[i] = data[i];
    k++;
  }
  gv_emit_options o = {0};
  int rc = gv_emit_cpu(m, argv[2], &o);
  for (int i = 0; i < fn->body->nargs; i++) free(data[i]);
  free(data);
  gv_module_free(m);
  return rc ? 1 : 0;
}
