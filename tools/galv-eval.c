/* galv-eval — runs an ONNX model through the frontend and passes, then
 * evaluates it with the reference evaluator on .npy or ONNX TensorProto (.pb)
 * inputs and writes the
 * outputs as .npy. Tests use it as the oracle that checks the frontend and
 * every rewriting pass against onnxruntime; it is not a fast runtime. */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "../codegen/codegen.h"
#include "../frontend/onnx_import.h"
#include "../ir/attention.h"
#include "../ir/dropout.h"
#include "../ir/interp.h"
#include "../ir/storage.h"
#include "../passes/build.h"
#include "../passes/passes.h"
#include "../runtime/npy.h"

static const char *const train_passes[] = {"master-weights", "loss", "fuse-attention", "autodiff", "recompute", "accumulate", "optimizer", NULL};

static void usage(FILE *f) {
  fprintf(f, "usage: galv-eval MODEL.onnx [options]\n"
             "Imports MODEL, runs passes, evaluates it with the reference evaluator.\n\n"
             "options:\n"
             "  --input NAME=FILE        value of graph input NAME: .npy, or .pb (serialized ONNX\n"
             "                           TensorProto); repeatable; every input is needed\n"
             "  -o DIR                   write each graph output as DIR/NAME.npy\n"
             "  --passes=a,b             passes before evaluating (default: shape-infer,fold-constants,\n"
             "                           canonicalize,dce,fuse,memory-plan; 'shape-infer' alone evaluates\n"
             "                           the graph as imported)\n"
             "  --batch N, --seq N, --input-shape NAME=DxD, --seed N   as for galvc\n"
             "  --list-ops               print the supported ONNX op types (default domain), one a line\n"
             "  --train                  add the training step after dce (loss, autodiff, optimizer);\n"
             "                           --loss, --labels, --optimizer, --lr, --weight-decay, --beta1, --beta2,\n"
             "                           --eps, --momentum, --ignore-index, --recompute, --fused-attention, --freeze, --trainable as\n"
             "                           for galvc (--fused-attention on|off|auto: default auto, as galvc on\n"
             "                           --target cpu: fused where its kernel runs, today fp32); optimizer\n"
             "                           state starts at 0\n"
             "  --steps N                run the step function N times, feeding updated params and state\n"
             "                           back; prints 'step I loss X'; -o then writes the last step's results\n"
             "                           (and, with --train, the frozen parameters, unchanged)\n"
             "  --precision bf16         round every value the targets store as bf16 under --precision bf16\n"
             "                           (and the operands their kernels convert) to bf16: inference every f32\n"
             "                           value (inputs, weights, constants as uploaded); with --train the\n"
             "                           mixed-precision plan, everything else fp32\n"
             "  --grad-dtype fp32|bf16   with --precision bf16: the parameter gradients stored bf16 too\n"
             "  -q, --quiet              no report of what trains (stderr, with --train)\n"
             "  -h, --help\n");
}

static const struct { gv_dtype g; npy_dtype n; } dmap[] = {
    {GV_DT_F32, NPY_F32}, {GV_DT_F64, NPY_F64}, {GV_DT_F16, NPY_F16}, {GV_DT_I64, NPY_I64},
    {GV_DT_I32, NPY_I32}, {GV_DT_I16, NPY_I16}, {GV_DT_I8, NPY_I8},   {GV_DT_U8, NPY_U8},
    {GV_DT_BOOL, NPY_BOOL}, {GV_DT_BF16, NPY_BF16_AS_U16},
};

/* The reference evaluator needs every result shape; one that is still not
 * static after the passes depends on values only known when running (a
 * Reshape / Slice / Range / Expand / Tile / ConstantOfShape operand computed
 * from a graph input): galvc compiles static shapes only. */
static int check_static(const gv_module *m, const gv_block *b) {
  for (const gv_op *op = b->first; op; op = op->next) {
    for (int i = 0; i < op->nres; i++)
      if (!gv_type_is_static(&op->res[i]->type))
        return gv_error_op(m, op,
                           "unsupported: dynamic shape (result %d depends on the values of a non-constant operand)", i);
    for (int r = 0; r < op->nregions; r++)
      if (check_static(m, op->regions[r])) return -1;
  }
  return 0;
}

/* x rounded to bf16 and back (a cast pair before b->pos); its id is x's */
static gv_value *round_bf16(gvb *b, gv_value *x) {
  gv_op *o = gvb_new(b, GV_OP_CAST, 1, &x);
  if (!o) return NULL;
  gv_set_type(b->m, o, "to", GV_DT_BF16);
  gv_value *h = gvb_fin(b, o);
  if (!h) return NULL;
  gv_op *o2 = gvb_new(b, GV_OP_CAST, 1, &h);
  if (!o2) return NULL;
  gv_set_type(b->m, o2, "to", GV_DT_F32);
  gv_value *r = gvb_fin(b, o2);
  if (r) h->id = r->id = x->id;
  return r;
}

/* --precision bf16 (training): the cuda target's bf16 storage plan
 * (the storage pass, ir/storage.h) applied to the device program
 * as cast pairs: every value stored bf16 is rounded where it is defined,
 * every operand a kernel reads in bf16 though it is stored fp32 (a GEMM's
 * parameter operand, a norm's scale) is rounded for that use, and a result
 * a kernel writes in bf16 is rounded. Elementwise chains inside galv.fused
 * stay in float, as the generated kernels compute them. */
static int emulate_bf16_storage(gv_module *m) {
  gv_block *body = m->main->body;
  if (!body->first || body->first->code != GV_OP_ARENA)
    return gv_error(m, "--precision bf16 emulates the cuda target's device program: keep the fuse and memory-plan passes");
  int n = 0, nops = 0;
  for (int i = 0; i < body->nargs; i++) body->args[i]->id = n++;
  for (gv_op *op = body->first; op; op = op->next, nops++)
    for (int i = 0; i < op->nres; i++) op->res[i]->id = n++;
  unsigned char *half = calloc((size_t)n + 1, 1);
  gv_op **ops = malloc((size_t)(nops + 1) * sizeof *ops);
  if (!half || !ops) abort();
  /* the storage pass's plan (ir/storage.h), as galvc --target cuda runs it before memory-plan */
  gv_precision_options saved = gv_precision_opts;
  gv_precision_opts.storage = GV_DT_BF16;
  int rc = gv_pass_storage(m), k = 0;
  gv_precision_opts = saved;
  n = 0;
  for (int i = 0; i < body->nargs; i++) body->args[i]->id = n++;
  for (gv_op *op = body->first; op; op = op->next)
    for (int i = 0; i < op->nres; i++) half[n] = gv_value_storage(op->res[i]) == GV_DT_BF16, op->res[i]->id = n++;
  gv_subst *sub = gv_subst_new(); /* a rounded result replaces its value for every later use */
  for (gv_op *op = body->first; op; op = op->next) ops[k++] = op;
  bool infer = !m->main->res_updates; /* inference: inputs, weights and f32 constants are stored bf16 too (uploaded so) */
  if (infer && nops > 1) {
    gvb top = {m, body->first->next, "bf16 storage"};
    for (int i = 0; i < body->nargs && !rc; i++) {
      gv_value *v = body->args[i];
      if (v->type.dtype != GV_DT_F32) continue;
      gv_value *r = round_bf16(&top, v);
      if (!r) rc = -1;
      else gv_subst_add(sub, v, r, r->def->opnds[0]->def);
    }
  }
  for (k = 0; k < nops && !rc; k++) {
    gv_op *op = ops[k];
    gv_subst_op(sub, op);
    if (infer && op->code == GV_OP_CONSTANT && op->res[0]->type.dtype == GV_DT_F32) {
      gvb after = {m, op->next, "bf16 storage"};
      gv_value *r = round_bf16(&after, op->res[0]);
      if (!r) rc = -1;
      else gv_subst_add(sub, op->res[0], r, r->def->opnds[0]->def);
      continue;
    }
    if (op->code == GV_OP_CONSTANT || op->code == GV_OP_ARENA || op->code == GV_OP_RETURN || (gv_ops[op->code].flags & GV_VIEW))
      continue;
    gvb before = {m, op, "bf16 storage"};
    for (int i = 0; i < op->nopnds && !rc; i++) {
      gv_value *v = op->opnds[i];
      if (v->type.dtype != GV_DT_F32 || half[v->id] || cu_kernel_storage(op, i, half) != 1) continue;
      if (!(op->opnds[i] = round_bf16(&before, v))) rc = -1;
    }
    for (int i = 0; i < op->nres && !rc; i++) {
      gv_value *v = op->res[i];
      if (v->type.dtype != GV_DT_F32 || (!half[v->id] && cu_kernel_storage(op, op->nopnds + i, half) != 1)) continue;
      gvb after = {m, op->next, "bf16 storage"};
      gv_value *r = round_bf16(&after, v);
      if (!r) { rc = -1; break; }
      gv_subst_add(sub, v, r, r->def->opnds[0]->def); /* the cast to bf16 keeps reading v */
    }
  }
  gv_subst_free(sub);
  free(half);
  free(ops);
  return rc;
}

static int to_npy(gv_dtype g, npy_dtype *n) {
  for (size_t i = 0; i < sizeof dmap / sizeof dmap[0]; i++)
    if (dmap[i].g == g) { *n = dmap[i].n; return 0; }
  return -1;
}

/* A .npy input whose shape is not the one the graph input was bound to
 * (--batch, --seq, --input-shape): said before the passes trip over it. */
static int check_input_shapes(const gv_module *m, const gv_import_options *opt, const char **names, const char **files,
                              int nin) {
  const gv_func *f = m->main;
  for (int j = 0; j < nin; j++) {
    size_t fl = strlen(files[j]);
    if (fl < 4 || strcmp(files[j] + fl - 4, ".npy")) continue;
    for (int i = 0; i < f->body->nargs; i++) {
      if (f->arg_is_param[i] || !f->arg_names[i] || strcmp(f->arg_names[i], names[j])) continue;
      const gv_type *t = &f->body->args[i]->type;
      npy_array a;
      char err[256];
      if (npy_read(files[j], &a, err, sizeof err)) return gv_error_plain("%s: %s", files[j], err);
      npy_free(&a);
      bool same = a.rank == t->rank;
      for (int d = 0; same && d < a.rank; d++) same = a.dims[d] == t->dims[d];
      if (same) break;
      char got[256] = "", want[256];
      for (int d = 0; d < a.rank; d++) snprintf(got + strlen(got), sizeof got - strlen(got), d ? "x%lld" : "%lld", (long long)a.dims[d]);
      gv_type_str(t, want, sizeof want);
      return gv_error_plain("%s: input '%s' has shape %s, but the model's input is bound to %s (--batch %lld, --seq %lld): "
                            "give --batch / --seq or --input-shape %s=%s", files[j], names[j], a.rank ? got : "scalar", want,
                            (long long)opt->batch, (long long)opt->seq, names[j], a.rank ? got : "");
    }
  }
  return 0;
}

int main(int argc, char **argv) {
  gv_progname = "galv-eval";
  const char *model = NULL, *outdir = NULL, *passes = "shape-infer,fold-constants,canonicalize,dce,fuse,memory-plan";
  gv_import_options opt = {.batch = 1, .seq = 128, .load_weights = true};
  gv_input_shape shapes[32];
  static char shape_names[32][256];
  int nshapes = 0;
  const char *in_names[64], *in_files[64];
  int nin = 0, train = 0, bf16 = 0, nselect = 0, quiet = 0, fused_attn = -1;
  gv_train_select select[64];
  long steps = 1;
  for (int i = 1; i < argc; i++) {
    const char *a = argv[i];
    if (!strcmp(a, "--help") || !strcmp(a, "-h")) { usage(stdout); return 0; }
    else if (!strcmp(a, "--list-ops")) {
      for (const char *const *o = gv_onnx_supported_ops(); *o; o++) puts(*o);
      return 0;
    }
    else if (!strncmp(a, "--passes=", 9)) passes = a + 9;
    else if (!strcmp(a, "--passes") && i + 1 < argc) passes = argv[++i];
    else if (!strcmp(a, "-o") && i + 1 < argc) outdir = argv[++i];
    else if (!strcmp(a, "--batch") && i + 1 < argc) opt.batch = atoll(argv[++i]);
    else if (!strcmp(a, "--seq") && i + 1 < argc) opt.seq = atoll(argv[++i]);
    else if (!strcmp(a, "--seed") && i + 1 < argc) opt.seed = strtoull(argv[++i], NULL, 10);
    else if (!strcmp(a, "--train")) train = 1;
    else if (!strcmp(a, "--grad-dtype") && i + 1 < argc) {
      const char *v = argv[++i];
      if (strcmp(v, "fp32") && strcmp(v, "bf16")) { gv_error_plain("--grad-dtype %s: expected fp32 or bf16", v); return 2; }
      gv_precision_opts.grad = strcmp(v, "bf16") ? GV_DT_F32 : GV_DT_BF16;
    }
    else if (!strcmp(a, "-q") || !strcmp(a, "--quiet")) quiet = 1;
    else if (!strcmp(a, "--precision") && i + 1 < argc) {
      const char *v = argv[++i];
      if (strcmp(v, "fp32") && strcmp(v, "bf16")) { gv_error_plain("--precision %s: expected fp32 or bf16", v); return 2; }
      bf16 = !strcmp(v, "bf16");
    }
    else if (!strcmp(a, "--steps") && i + 1 < argc) {
      steps = atol(argv[++i]);
      if (steps < 1) { gv_error_plain("--steps must be positive"); return 2; }
    } else if (!strcmp(a, "--loss") && i + 1 < argc) gv_train_opts.loss = argv[++i];
    else if (!strcmp(a, "--labels") && i + 1 < argc) gv_train_opts.labels = argv[++i];
    else if (!strcmp(a, "--recompute") && i + 1 < argc) gv_train_opts.recompute = argv[++i];
    else if (!strcmp(a, "--fused-attention") && i + 1 < argc) {
      const char *v = argv[++i];
      if (strcmp(v, "on") && strcmp(v, "off") && strcmp(v, "auto")) {
        gv_error_plain("--fused-attention %s: expected on, off or auto", v);
        return 2;
      }
      fused_attn = !strcmp(v, "on") ? 1 : !strcmp(v, "off") ? 0 : -1;
    }
    else if ((!strcmp(a, "--freeze") || !strcmp(a, "--trainable")) && i + 1 < argc) {
      if (nselect == 64) { gv_error_plain("too many --freeze / --trainable (at most 64)"); return 2; }
      select[nselect++] = (gv_train_select){argv[++i], a[2] == 't'};
    }
    else if (!strcmp(a, "--optimizer") && i + 1 < argc) gv_train_opts.optimizer = argv[++i];
    else if (!strcmp(a, "--ignore-index") && i + 1 < argc) gv_train_opts.ignore_index = atoll(argv[++i]);
    else if ((!strcmp(a, "--lr") || !strcmp(a, "--weight-decay") || !strcmp(a, "--beta1") || !strcmp(a, "--beta2") ||
              !strcmp(a, "--eps") || !strcmp(a, "--momentum")) && i + 1 < argc) {
      double v = atof(argv[++i]);
      *(a[2] == 'l' ? &gv_train_opts.lr : a[2] == 'w' ? &gv_train_opts.weight_decay : a[2] == 'e' ? &gv_train_opts.eps
        : a[2] == 'm' ? &gv_train_opts.momentum : a[6] == '1' ? &gv_train_opts.beta1 : &gv_train_opts.beta2) = v;
    }
    else if ((!strcmp(a, "--input") || !strcmp(a, "--input-shape")) && i + 1 < argc) {
      const char *v = argv[++i], *eq = strrchr(v, '=');
      if (!eq || eq == v) { gv_error_plain("%s expects NAME=VALUE, got '%s'", a, v); return 2; }
      if (!strcmp(a, "--input")) {
        if (nin == 64) { gv_error_plain("too many --input"); return 2; }
        char *nm = strndup(v, (size_t)(eq - v));
        in_names[nin] = nm;
        in_files[nin++] = eq + 1;
      } else {
        if (nshapes == 32) { gv_error_plain("too many --input-shape"); return 2; }
        gv_input_shape *s = &shapes[nshapes];
        snprintf(shape_names[nshapes], 256, "%.*s", (int)(eq - v), v);
        s->name = shape_names[nshapes];
        s->rank = gv_parse_dims(eq + 1, s->dims, GV_MAX_RANK);
        if (s->rank < 0) { gv_error_plain("--input-shape %s: bad dims", v); return 2; }
        nshapes++;
      }
    } else if (a[0] == '-') {
      static const char *const valued[] = {"-o", "--passes", "--batch", "--seq", "--seed", "--precision", "--grad-dtype", "--steps", "--loss",
                                           "--labels", "--recompute", "--fused-attention", "--optimizer", "--ignore-index", "--lr",
                                           "--weight-decay", "--beta1", "--beta2", "--eps", "--momentum", "--input",
                                           "--input-shape", "--freeze", "--trainable", NULL};
      for (const char *const *v = valued; *v; v++)
        if (!strcmp(a, *v)) { gv_error_plain("%s needs a value (see --help)", a); return 2; }
      gv_error_plain("unknown option '%s' (see --help)", a);
      return 2;
    }
    else if (!model) model = a;
    else { gv_error_plain("more than one model given"); return 2; }
  }
  if (!model) { usage(stderr); return 2; }
  /* auto (the default) as galvc --target cpu: fused where gv_attn_train_kernel says its kernel runs */
  gv_train_opts.unfused_attention =
    fused_attn == 0 || (fused_attn < 0 && gv_attn_train_kernel("cpu", bf16 ? GV_DT_BF16 : GV_DT_F32) != GV_ATTN_KERNEL_AUTO);
  if (opt.batch <= 0 || opt.seq <= 0) { gv_error_plain("--batch and --seq must be positive"); return 2; }
  opt.shapes = shapes;
  opt.nshapes = nshapes;
  opt.select = select;
  opt.nselect = nselect;

  int rc = 1;
  npy_array arrs[64];
  int narrs = 0;
  gv_module *m = gv_import_onnx(model, &opt);
  if (!m || check_input_shapes(m, &opt, in_names, in_files, nin)) goto out;
  char *list = strdup(passes);
  bool checked = false;
  for (char *tok = strtok(list, ","); tok; tok = strtok(NULL, ",")) {
    const gv_pass *p = gv_pass_lookup(tok);
    if (!p) { gv_error_plain("unknown pass '%s'", tok); free(list); goto out; }
    /* the passes after the shape ones (fuse, memory-plan, ...) need static
     * shapes: say why a shape is dynamic before they trip over it */
    bool shape_pass = !strcmp(tok, "shape-infer") || !strcmp(tok, "fold-constants") ||
                      !strcmp(tok, "canonicalize") || !strcmp(tok, "dce");
    if (!shape_pass && !checked) {
      if (check_static(m, m->main->body)) { free(list); goto out; }
      checked = true;
    }
    if (p->run(m)) { free(list); goto out; }
    for (const char *const *t = train_passes; train && !strcmp(tok, "dce") && *t; t++)
      if (gv_pass_lookup(*t)->run(m)) { free(list); goto out; }
  }
  free(list);

  gv_func *f = m->main;
  if (train && !quiet) gv_print_trainable(f, "galv-eval", stderr);
  if (!checked && check_static(m, f->body)) goto out;
  if (gv_precision_opts.grad != GV_DT_F32 && !bf16) { gv_error_plain("--grad-dtype bf16 applies to --precision bf16 training"); goto out; }
  if (bf16 && emulate_bf16_storage(m)) goto out;
  /* data inputs, then (training) one optimizer state tensor per parameter or two */
  const gv_tensor **inputs = gv_alloc(m->arena, (size_t)(f->body->nargs + 1) * sizeof *inputs);
  int k = 0, *slot = gv_alloc(m->arena, (size_t)(f->body->nargs + 1) * sizeof *slot);
  for (int i = 0; i < f->body->nargs; i++) {
    if (f->arg_is_param[i]) continue;
    slot[i] = k;
    const char *name = f->arg_names[i];
    if (f->arg_is_state && f->arg_is_state[i]) { /* optimizer state starts at zero */
      inputs[k++] = gv_tensor_new(m->arena, f->body->args[i]->type);
      continue;
    }
    int j = 0;
    while (j < nin && strcmp(in_names[j], name)) j++;
    if (j == nin) { gv_error(m, "input '%s' not given (use --input %s=FILE.npy or FILE.pb)", name, name); goto out; }
    gv_value *v = f->body->args[i];
    size_t fl = strlen(in_files[j]);
    if (fl >= 3 && !strcmp(in_files[j] + fl - 3, ".pb")) {
      gv_tensor *t = gv_read_tensor_pb(m, in_files[j]);
      if (!t) goto out;
      if (t->type.dtype != v->type.dtype) {
        gv_error_plain("%s: input '%s' has dtype %s, expected %s", in_files[j], name, gv_dtype_name(t->type.dtype),
                       gv_dtype_name(v->type.dtype));
        goto out;
      }
      inputs[k++] = t;
      continue;
    }
    char err[256];
    if (npy_read(in_files[j], &arrs[narrs], err, sizeof err)) {
      gv_error_plain("%s: %s", in_files[j], err);
      goto out;
    }
    npy_array *na = &arrs[narrs++];
    gv_tensor *t = gv_alloc(m->arena, sizeof *t);
    npy_dtype want;
    if (to_npy(v->type.dtype, &want) || want != na->dtype) {
      gv_error_plain("%s: input '%s' has dtype %s, expected %s", in_files[j], name, npy_dtype_descr(na->dtype),
                     gv_dtype_name(v->type.dtype));
      goto out;
    }
    t->type = gv_type_make(v->type.dtype, na->rank, na->dims);
    t->data = na->data;
    inputs[k++] = t;
  }
  gv_tensor **outs = NULL;
  int nouts = 0;
  for (long s = 0; s < steps; s++) {
    gv_eval_step = s; /* galv.dropout's mask of step s (as the programs' runtime/train.c counts) */
    if (gv_interpret(m, inputs, k, &outs, &nouts)) goto out;
    if (train && nouts > 0) printf("step %ld loss %.9g\n", s, gv_tensor_get_f(outs[0], 0));
    for (int i = 0; i < nouts && f->res_updates; i++) {
      int a = f->res_updates[i];
      if (a < 0) continue;
      if (f->arg_is_param[a]) f->param_data[a] = outs[i]->data;
      else inputs[slot[a]] = outs[i];
    }
  }
  if (outdir) {
    mkdir(outdir, 0777);
    for (int i = 0; i < nouts; i++) {
      char name[256], path[4096], err[256];
      const char *rn = i < f->nres_names && f->res_names && f->res_names[i] ? f->res_names[i] : NULL;
      if (rn) snprintf(name, sizeof name, "%s", rn); else snprintf(name, sizeof name, "output%d", i);
      for (char *c = name; *c; c++)
        if (*c == '/' || *c == '\\' || (unsigned char)*c < 0x20) *c = '_';
      snprintf(path, sizeof path, "%s/%s.npy", outdir, name);
      npy_array na = {0};
      if (to_npy(outs[i]->type.dtype, &na.dtype)) { gv_error(m, "output %d: dtype not writable", i); goto out; }
      na.rank = outs[i]->type.rank;
      memcpy(na.dims, outs[i]->type.dims, sizeof(int64_t) * (size_t)na.rank);
      na.nbytes = (size_t)gv_tensor_numel(outs[i]) * gv_dtype_size(outs[i]->type.dtype);
      na.data = outs[i]->data;
      if (npy_write(path, &na, err, sizeof err)) { gv_error_plain("%s: %s", path, err); goto out; }
    }
    /* training: the frozen parameters too (no result updates them: they are as imported) */
    for (int a = 0; train && a < f->body->nargs; a++) {
      if (!f->arg_is_param[a] || gv_arg_trains(f, a)) continue;
      const gv_type *t = &f->body->args[a]->type;
      char name[256], path[4096], err[256];
      snprintf(name, sizeof name, "%s", f->arg_names[a]);
      for (char *c = name; *c; c++)
        if (*c == '/' || *c == '\\' || (unsigned char)*c < 0x20) *c = '_';
      snprintf(path, sizeof path, "%s/%s.npy", outdir, name);
      npy_array na = {0};
      if (to_npy(t->dtype, &na.dtype)) { gv_error(m, "parameter '%s': dtype not writable", f->arg_names[a]); goto out; }
      na.rank = t->rank;
      memcpy(na.dims, t->dims, sizeof(int64_t) * (size_t)na.rank);
      na.nbytes = (size_t)gv_type_numel(t) * gv_dtype_size(t->dtype);
      na.data = (void *)f->param_data[a];
      if (npy_write(path, &na, err, sizeof err)) { gv_error_plain("%s: %s", path, err); goto out; }
    }
  }
  rc = 0;
out:
  for (int i = 0; i < narrs; i++) npy_free(&arrs[i]);
  for (int i = 0; i < nin; i++) free((char *)in_names[i]);
  gv_module_free(m);
  return rc;
}
