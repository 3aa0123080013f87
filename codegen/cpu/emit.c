/* emit.c — the CPU target's emitter: reads a device program
 * (docs/device-program.md) and writes OUTDIR/program.c, weights.bin, the
 * Makefile and runtime/. program.c holds the input/output tables, one static
 * loop function per galv.fused (or lone elementwise) op (loops.c), and a
 * straight-line galv_program_run() that calls, in schedule order, those
 * functions and the runtime kernels (runtime/kernels.c) with pointers from
 * the arena offsets and weights-file offsets and shapes as literals.
 *
 * weights.bin: the parameters (in argument order) then the constants (in
 * schedule order), each 64-byte aligned, little-endian; a view of either
 * reads their bytes. The emitter checks the memory plan (a value's bytes
 * must not be shared with a value live at the same time) and computes last
 * uses so that debug builds poison each value after its last use. It never
 * rewrites the IR; a module that has not been through memory-plan is an
 * error. Output is deterministic: same module, same bytes. */
#include <errno.h>
#include <limits.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "../../ir/attention.h"
#include "../../ir/storage.h"
#include "../kcall.h"
#include "comm.h"
#include "cpu.h"

typedef struct {
  const gv_value *v;
  int in_weights;   /* 1: weights file, 0: arena, 2: state buffer (training) */
  int64_t off;
  int64_t nbytes;
  int root;         /* index of the value whose bytes it reads (views) */
  int def, last;    /* schedule positions: -1 = before the first op; INT_MAX = output */
} vinfo;

typedef struct {
  gv_module *m;
  FILE *f;
  vinfo *vi;
  int nv;
  int nkernels;
  bool train;          /* a training step: parameters and galv.state args live in the state buffer */
  int64_t pbytes, sbytes; /* parameter part and total size of the state buffer */
  int *inplace_arg;    /* per value id: the argument an in-place update result writes, else -1 */
  cg_comm *comm;       /* collectives and ranks (emit_comm.c) */
  cg_comm_target ct;   /* cg_cpu_comm with this program's 16-bit storage */
  /* 16-bit storage (--precision bf16 / fp16, the storage pass: ir/storage.h) */
  gv_dtype h;          /* the plan's 16-bit dtype, GV_DT_F32 when it stores nothing 16-bit */
  bool w16;            /* inference: every f32 value stored h (weights converted at the first run, as uploaded) */
  gv_dtype *st;        /* per value id: the dtype its bytes hold */
  unsigned char *half; /* per value id: an f32 value stored 16-bit (cu_kernel_storage's argument) */
  int64_t cvt;         /* conversion scratch bytes of the current op */
  const char *entry;   /* gv_emit_options.entry: a second entry's name, else NULL */
  int64_t const_base;  /* gv_emit_options.const_base: the constants' first offset at least */
  char pname[64], wname[64]; /* program.c / weights.bin, or program_ENTRY.c / weights_ENTRY.bin */
} emitter;

/* The symbols program.c defines (runtime/galv_rt.h, galv_spmd.h); a second
 * entry defines them as galv_ENTRY_* (one #define each before the includes;
 * program.cu's entries too, codegen/cuda/emit.c). */
const char *const cg_program_syms[] = {
    "inputs", "ninputs", "outputs", "noutputs", "training", "state", "nstate", "state_bytes", "param_bytes",
    "arena_bytes", "plan_high_water", "weights_bytes", "nranks", "input_split", "output_split", "state_split",
    "comm_predicted", "comm_predicted_global", "program_comm_free", "program_run", "nkernels", "kernels"};
const int cg_program_nsyms = sizeof cg_program_syms / sizeof *cg_program_syms;

static int64_t nbytes_of(const gv_type *t) { return gv_type_numel(t) * (int64_t)gv_dtype_size(t->dtype); }
static int64_t align64(int64_t x) { return (x + 63) / 64 * 64; }

static vinfo *info(emitter *e, const gv_value *v) { return &e->vi[v->id]; }

/* The dtype v's bytes hold: its type's, or (an f32 value) the 16-bit storage the plan gives it. */
static gv_dtype vst(const emitter *e, const gv_value *v) {
  return e->st && v->type.dtype == GV_DT_F32 && v->id >= 0 && v->id < e->nv && e->vi[v->id].v == v ? e->st[v->id]
                                                                                                      : v->type.dtype;
}
static gv_dtype vst_cb(const void *ctx, const gv_value *v) { return vst((const emitter *)ctx, v); }
static int comm_half(const void *ctx, const gv_value *v) { return vst((const emitter *)ctx, v) != v->type.dtype; }
static const char *hdt(const emitter *e) { return e->h == GV_DT_F16 ? "GALV_F16" : "GALV_BF16"; }

/* Which values are stored 16-bit (after the plan numbered them): under
 * training the storage pass's per-value decision (gv_value_storage: fp32
 * master weights, state and parameter gradients, 16-bit activations); under
 * inference every f32 value — arguments, constants and results —, the
 * weights converted as the CUDA runtime uploads them. */
static int storage_setup(emitter *e) {
  e->h = GV_DT_F32;
  for (int a = 0; a < e->nv && e->h == GV_DT_F32; a++) {
    gv_dtype t = gv_value_storage(e->vi[a].v);
    if (e->vi[a].v->type.dtype == GV_DT_F32 && t != GV_DT_F32) e->h = t;
  }
  if (e->h == GV_DT_F32) return 0;
  if (e->h != GV_DT_BF16 && e->h != GV_DT_F16)
    return gv_error(e->m, "cpu codegen: storage %s is not a 16-bit float", gv_dtype_name(e->h));
  e->w16 = !e->train && gv_func_stage_kind(e->m->main) != 2; /* a training stage: per value, as a training step */
  e->ct.half_dt = e->h == GV_DT_F16 ? "GALV_F16" : NULL;
  e->st = malloc(((size_t)e->nv + 1) * sizeof *e->st);
  e->half = calloc((size_t)e->nv + 1, 1);
  if (!e->st || !e->half) abort();
  for (int a = 0; a < e->nv; a++) {
    const gv_value *v = e->vi[a].v;
    gv_dtype t = v->type.dtype == GV_DT_F32 && e->w16 ? e->h : gv_value_storage(v);
    if (v->type.dtype == GV_DT_F32 && t != GV_DT_F32 && t != e->h)
      return gv_error(e->m, "cpu codegen: the plan stores values both %s and %s", gv_dtype_name(e->h), gv_dtype_name(t));
    e->st[a] = t;
    e->half[a] = v->type.dtype == GV_DT_F32 && t != GV_DT_F32;
  }
  return 0;
}
/* Pointer expression of a value: A(off) or W(off), plus a byte offset. */
static void ptr(emitter *e, const gv_value *v, int64_t extra, char *buf, size_t n) {
  const vinfo *i = info(e, v);
  snprintf(buf, n, "%s(%lld)", i->in_weights == 2 ? "S" : i->in_weights ? "W" : "A", (long long)(i->off + extra));
}

static void where_lit(FILE *f, const gv_op *op) {
  char b[600];
  snprintf(b, sizeof b, "node '%s' (%s)", op->loc ? op->loc : "", op->onnx_op ? op->onnx_op : gv_ops[op->code].name);
  cg_c_string(f, b);
}

/* ---------------------------------------------------------------- kernels */

/* The CPU's side of the shared kernel-call table (../kcall.h): element
 * sizes and pointers as program.c stores them. */
static size_t kc_es(const void *ctx, const gv_value *v) { return gv_dtype_size(vst((const emitter *)ctx, v)); }
static void kc_ptr(const void *ctx, const gv_value *v, int64_t off, char *buf, size_t n) { ptr((emitter *)ctx, v, off, buf, n); }

/* A filled kernel call as a call into runtime/kernels*.c (f32 compute
 * kernels take typed pointers; errors name the node through `where`);
 * p: the slots' pointer expressions (np of them). */
static int print_kcall(emitter *e, const gv_op *op, const cg_kcall *k, char p[][64], int np) {
  FILE *f = e->f;
  cg_kcall_target t = {"galv_", kc_es, kc_ptr, e};
  if (cg_kcall_print_move(f, op, k, &t, p, np) == 0) return 0;
  const gv_value *x = cg_kcall_value(op, k->src);
  size_t es = gv_dtype_size(vst(e, cg_kcall_value(op, k->es_slot)));
  const char *dst = k->dst >= 0 ? p[k->dst] : NULL;
  switch (k->kernel) {
  case CG_K_GATHER:
    fprintf(f, "  galv_gather(%s, %s, %s, %d, %lld, %lld, %lld, %lld, ", dst, p[k->src], p[k->aux[0]], k->idx_es,
            (long long)k->count, (long long)k->outer, (long long)k->len, (long long)(k->inner * (int64_t)es));
    where_lit(f, op);
    fprintf(f, ");\n");
    return 0;
  case CG_K_TRILU: {
    char ks[96];
    if (k->kdiag_slot >= 0) snprintf(ks, sizeof ks, "*(const int64_t *)%s", p[k->kdiag_slot]); /* k known at run time only */
    else snprintf(ks, sizeof ks, "%lld", (long long)k->kdiag);
    fprintf(f, "  galv_trilu(%s, %s, %zu, %lld, %lld, %lld, %s, %d);\n", dst, p[k->src], es, (long long)k->outer,
            (long long)k->len, (long long)k->inner, ks, k->kind);
    return 0;
  }
  case CG_K_CUMSUM:
    fprintf(f, "  galv_cumsum(%s, %s, %s, %lld, %lld, %lld, %d, %d);\n", dst, p[k->src], cg_rt_dtype(x->type.dtype),
            (long long)k->outer, (long long)k->len, (long long)k->inner, k->kind, k->kind2);
    return 0;
  case CG_K_REDUCE:
    fprintf(f, "  { static const int64_t d[] = "), cg_dims_lit(f, k->rank, k->dims);
    fprintf(f, ", s[] = "), cg_dims_lit(f, k->rank, k->strides);
    fprintf(f, ";\n    galv_reduce_f32((float *)%s, (const float *)%s, %d, d, s, %lld, %d); }\n", dst, p[k->src], k->rank,
            (long long)k->count, k->kind);
    return 0;
  case CG_K_DROPOUT:
    cg_dropout_lit(f, k);
    fprintf(f, "    galv_dropout_f32((float *)%s, (const float *)%s, &d, %s%s); }\n", dst, p[k->src],
            k->aux[0] >= 0 ? "(const int64_t *)" : "", k->aux[0] >= 0 ? p[k->aux[0]] : "NULL");
    return 0;
  case CG_K_SOFTMAX:
    fprintf(f, "  galv_softmax_f32((float *)%s, (const float *)%s, %lld, %lld, %lld, %d);\n", dst, p[k->src],
            (long long)k->outer, (long long)k->len, (long long)k->inner, k->kind);
    return 0;
  case CG_K_NORM:
    fprintf(f, "  galv_norm_f32((float *)%s, (const float *)%s, (const float *)%s, %lld, %s%s, %lld, %lld, %lld, %af, %d);\n",
            dst, p[k->src], p[k->aux[0]], (long long)k->count, k->aux[1] >= 0 ? "(const float *)" : "",
            k->aux[1] >= 0 ? p[k->aux[1]] : "NULL", (long long)k->count2, (long long)k->outer, (long long)k->len, k->eps,
            k->kind);
    return 0;
  case CG_K_DOT: {
    const cg_dim_group *b = &k->bg, *mg = &k->mg, *kg = &k->kg, *ng = &k->ng;
    fprintf(f, "  { static const galv_dot_desc d = {%d, %d, %d, %d, ", b->n, mg->n, kg->n, ng->n);
    cg_dims_lit(f, b->n, b->size), fputs(", ", f), cg_dims_lit(f, b->n, b->sa), fputs(", ", f);
    cg_dims_lit(f, b->n, b->sb), fputs(", ", f), cg_dims_lit(f, mg->n, mg->size), fputs(", ", f);
    cg_dims_lit(f, mg->n, mg->sa), fputs(", ", f), cg_dims_lit(f, kg->n, kg->size), fputs(", ", f);
    cg_dims_lit(f, kg->n, kg->sa), fputs(", ", f), cg_dims_lit(f, kg->n, kg->sb), fputs(", ", f);
    cg_dims_lit(f, ng->n, ng->size), fputs(", ", f), cg_dims_lit(f, ng->n, ng->sb);
    fprintf(f, "};\n    galv_dot_f32(&d, (const float *)%s, (const float *)%s, (float *)%s); }\n", p[k->src], p[k->aux[0]], dst);
    return 0;
  }
  case CG_K_CONV:
    cg_conv_lit(f, &k->conv);
    fprintf(f, "    galv_conv_f32(&d, (const float *)%s, (const float *)%s, %s%s, (float *)%s); }\n", p[k->src],
            p[k->aux[0]], k->aux[1] >= 0 ? "(const float *)" : "", k->aux[1] >= 0 ? p[k->aux[1]] : "NULL", dst);
    return 0;
  case CG_K_GATHER_GRAD:
    fprintf(f, "  galv_gather_grad_f32((float *)%s, (const float *)%s, %s, %d, %lld, %lld, %lld, %lld, ", dst, p[k->src],
            p[k->aux[0]], k->idx_es, (long long)k->count, (long long)k->outer, (long long)k->len, (long long)k->inner);
    where_lit(f, op);
    fputs(");\n", f);
    return 0;
  case CG_K_GATHER_ND:
  case CG_K_SCATTER_ND:
    fprintf(f, "  { static const int64_t d[] = "), cg_dims_lit(f, k->rank, k->dims);
    if (k->kernel == CG_K_GATHER_ND)
      fprintf(f, ";\n    galv_gather_nd(%s, %s, %s, %d, %lld, %d, d, %lld, ", dst, p[k->src], p[k->aux[0]], k->idx_es,
              (long long)k->count, k->rank, (long long)(k->inner * (int64_t)es));
    else
      fprintf(f, ";\n    galv_scatter_nd(%s, %s, %lld, %s, %d, %s, %lld, %d, d, %lld, %zu, %d, ", dst, p[k->src],
              (long long)(gv_type_numel(&x->type) * (int64_t)es), p[k->aux[0]], k->idx_es, p[k->aux[1]],
              (long long)k->count, k->rank, (long long)k->inner, es, k->kind);
    where_lit(f, op);
    fputs("); }\n", f);
    return 0;
  case CG_K_GATHER_ELEMENTS:
  case CG_K_SCATTER_ELEMENTS:
    fprintf(f, "  { static const int64_t d[] = "), cg_dims_lit(f, k->rank, k->dims);
    fprintf(f, ", s[] = "), cg_dims_lit(f, k->rank, k->strides);
    if (k->kernel == CG_K_GATHER_ELEMENTS)
      fprintf(f, ";\n    galv_gather_elements(%s, %s, %s, %d, %d, d, s, %d, %lld, %zu, ", dst, p[k->src], p[k->aux[0]],
              k->idx_es, k->rank, k->axis, (long long)k->len, es);
    else
      fprintf(f, ";\n    galv_scatter_elements(%s, %s, %lld, %s, %d, %s, %d, d, s, %d, %lld, %zu, %d, ", dst, p[k->src],
              (long long)(gv_type_numel(&x->type) * (int64_t)es), p[k->aux[0]], k->idx_es, p[k->aux[1]], k->rank,
              k->axis, (long long)k->len, es, k->kind);
    where_lit(f, op);
    fputs("); }\n", f);
    return 0;
  case CG_K_SCATTER_STRIDED: {
    int64_t nb = gv_type_numel(&cg_kcall_value(op, k->dst)->type) * (int64_t)es;
    if (gv_type_numel(&x->type) == 0) {
      fprintf(f, "  memset(%s, 0, %lld);\n", dst, (long long)nb);
      return 0;
    }
    fprintf(f, "  { static const int64_t d[] = "), cg_dims_lit(f, k->rank, k->dims);
    fprintf(f, ", s[] = "), cg_dims_lit(f, k->rank, k->strides);
    fprintf(f, ";\n    galv_scatter_strided(%s, %lld, %lld, %s, %zu, %d, d, s); }\n", dst, (long long)nb, (long long)k->base,
            p[k->src], es, k->rank);
    return 0;
  }
  case CG_K_CROSS_ENTROPY:
  case CG_K_CROSS_ENTROPY_GRAD:
    if (k->kernel == CG_K_CROSS_ENTROPY_GRAD)
      fprintf(f, "  galv_cross_entropy_grad_f32((float *)%s, (const float *)%s, (const float *)%s, (const int64_t *)%s, %lld, %lld, %lldLL, ",
              dst, p[k->aux[1]], p[k->src], p[k->aux[0]], (long long)k->count, (long long)k->len, (long long)k->ignore);
    else
      fprintf(f, "  galv_cross_entropy_f32((float *)%s, (const float *)%s, (const int64_t *)%s, %lld, %lld, %lldLL, ", dst,
              p[k->src], p[k->aux[0]], (long long)k->count, (long long)k->len, (long long)k->ignore);
    where_lit(f, op);
    fputs(");\n", f);
    return 0;
  case CG_K_CONV_GRAD_INPUT:
  case CG_K_CONV_GRAD_WEIGHT:
    cg_conv_lit(f, &k->conv);
    fprintf(f, "    galv_conv_grad_%s_f32(&d, (const float *)%s, (const float *)%s, (float *)%s); }\n",
            k->kernel == CG_K_CONV_GRAD_WEIGHT ? "weight" : "input", p[k->src], p[k->aux[0]], dst);
    return 0;
  case CG_K_POOL:
  case CG_K_POOL_GRAD:
    cg_conv_lit(f, &k->conv);
    fprintf(f, "    static const int64_t pe[] = "), cg_dims_lit(f, k->rank, k->dims);
    if (k->kernel == CG_K_POOL)
      fprintf(f, ";\n    galv_pool_f32(&d, pe, %d, %d, (const float *)%s, (float *)%s); }\n", k->kind, k->kind2, p[k->src], dst);
    else
      fprintf(f, ";\n    galv_pool_grad_f32(&d, pe, %d, %d, (const float *)%s, (const float *)%s, (float *)%s); }\n", k->kind,
              k->kind2, p[k->src], p[k->aux[0]], dst);
    return 0;
  case CG_K_TOPK:
    fprintf(f, "  galv_topk_f32((float *)%s, (int64_t *)%s, (const float *)%s, %lld, %lld, %lld, %lld, %d);\n", dst,
            p[k->aux[0]], p[k->src], (long long)k->outer, (long long)k->len, (long long)k->inner, (long long)k->count,
            k->kind);
    return 0;
  default:
    return gv_error_op(e->m, op, "cpu codegen: the %s kernel is not in the cpu runtime", cg_kernel_names[k->kernel]);
  }
}

/* ---------------------------------------------------------------- 16-bit storage */

/* Kernels that move elements as they are (cg_kcall_moves) run in the
 * storage of their element-size slot — but for a 16-bit result that the
 * storage plan forces (a pipeline stage's crossing value) moved from fp32
 * elements: those are moved into fp32 scratch and rounded into the result
 * after the call (convert_in). */

/* Before a kernel call under 16-bit storage: each f32 slot the kernel reads
 * or writes in another storage than the plan's gets conversion scratch —
 * the compute kernels are f32 (a 16-bit operand widened, exactly; a 16-bit
 * result written to scratch and rounded into its slot after the call,
 * post[]), data movement runs in its result's storage (a concat piece
 * stored otherwise rounded to it); an fp32 operand that the CUDA kernel
 * reads in 16 bits (a GEMM's fp32 weight, a norm's scale under a 16-bit
 * result: cu_kernel_storage) is rounded into scratch, and an fp32 result it
 * writes in 16 bits rounded in place — so the CPU rounds where the GPU does
 * (docs/cpu-target.md, "16-bit storage"). p[] then points at the scratch. */
static int convert_in(emitter *e, const gv_op *op, const cg_kcall *k, char p[][64], int np, int *post, int *npost) {
  FILE *f = e->f;
  bool mv = cg_kcall_moves(k);
  gv_dtype ks = mv ? vst(e, cg_kcall_value(op, k->es_slot)) : GV_DT_F32;
  e->cvt = 0;
  char cv[(GV_MAX_RANK * 4 + 4) * 160] = ""; /* one line per slot at most */
  size_t cn = 0;
  for (int i = 0; i < op->nopnds + op->nres; i++) {
    const gv_value *v = i < op->nopnds ? op->opnds[i] : op->res[i - op->nopnds];
    if (v->type.dtype != GV_DT_F32) continue;
    gv_dtype s = vst(e, v);
    int want = e->w16 || mv ? -1 : cu_kernel_storage(op, i, e->half);
    bool res = i >= op->nopnds, rnd = s == GV_DT_F32 && ks == GV_DT_F32 && want == 1;
    if (s == ks && !(rnd && !res)) {
      if (rnd) post[(*npost)++] = i; /* rounded in place after the call */
      continue;
    }
    if (i >= np)
      return gv_error_op(e->m, op, "cpu codegen: galv.%s with more than %d pieces of mixed 16-bit storage is not supported",
                         gv_ops[op->code].name, np);
    /* a move of fp32 elements into a 16-bit result (a pipeline stage's crossing value, 16-bit, gathered from an
     * fp32 parameter: ir/storage.c) moves into fp32 scratch, rounded into its slot after the call; 16-bit
     * elements into an fp32 result would need widening */
    if (res && mv && ks != GV_DT_F32)
      return gv_error_op(e->m, op, "cpu codegen: galv.%s stores its result otherwise than it moves it", gv_ops[op->code].name);
    int64_t n = gv_type_numel(&v->type), at = e->cvt;
    e->cvt += align64(n * 4);
    char c[64];
    snprintf(c, sizeof c, "(galv_cvt + %lld)", (long long)at);
    if (res) post[(*npost)++] = i;
    else if (s != GV_DT_F32)
      cn += (size_t)snprintf(cv + cn, sizeof cv - cn, "  galv_widen16(%s, (float *)%s, %s, %lld);\n", hdt(e), c, p[i], (long long)n);
    else if (ks != GV_DT_F32)
      cn += (size_t)snprintf(cv + cn, sizeof cv - cn, "  galv_narrow16(%s, %s, (const float *)%s, %lld);\n", hdt(e), c, p[i], (long long)n);
    else
      cn += (size_t)snprintf(cv + cn, sizeof cv - cn, "  galv_round16(%s, (float *)%s, (const float *)%s, %lld);\n", hdt(e), c, p[i], (long long)n);
    if (cn >= sizeof cv) return gv_error_op(e->m, op, "cpu codegen: too many 16-bit conversions");
    snprintf(p[i], 64, "%s", c);
  }
  if (f && e->cvt) fprintf(f, "  galv_cvt = galv_cvt_scratch(%lld);\n", (long long)e->cvt);
  if (f) fputs(cv, f);
  return 0;
}

/* After the call: 16-bit results narrowed from their scratch, fp32 results the GPU writes 16-bit rounded. */
static void convert_out(emitter *e, const gv_op *op, char p[][64], const int *post, int npost) {
  for (int j = 0; j < npost; j++) {
    int i = post[j];
    const gv_value *v = op->res[i - op->nopnds];
    char dst[64];
    ptr(e, v, 0, dst, sizeof dst);
    long long n = (long long)gv_type_numel(&v->type);
    if (vst(e, v) != GV_DT_F32) fprintf(e->f, "  galv_narrow16(%s, %s, (const float *)%s, %lld);\n", hdt(e), dst, p[i], n);
    else fprintf(e->f, "  galv_round16(%s, (float *)%s, (const float *)%s, %lld);\n", hdt(e), dst, dst, n);
  }
}

/* One non-elementwise op as a runtime kernel call. */
/* galv.attention / attention_grad (docs/fused-attention.md): a call into
 * runtime/attention.c with the geometry and the score functor as a static
 * descriptor; the kernel by the storage of q, k, v, o, do and the
 * gradients (all fp32: galv_attention_f32; all 16-bit: galv_attention_bf16 /
 * _f16), lse fp32, the functor operands read in their own storage. */
static int emit_attention(emitter *e, const gv_op *op, char p[][64]) {
  gv_module *m = e->m;
  FILE *f = e->f;
  gv_attn_geo g;
  if (gv_attn_geometry(m, op, &g)) return gv_error_op(m, op, "cpu codegen: galv.%s needs static types", gv_ops[op->code].name);
  bool fwd = op->code == GV_OP_ATTENTION;
  int f0 = fwd ? 3 : 6, lse = fwd ? op->nopnds + 1 : 5;
  gv_dtype st = vst(e, op->opnds[0]);
  const char *fdt[8];
  for (int i = 0; i < op->nopnds + op->nres; i++) {
    const gv_value *v = i < op->nopnds ? op->opnds[i] : op->res[i - op->nopnds];
    gv_dtype s = vst(e, v);
    if (i == g.off) continue; /* the dropout's offsets (i64) */
    bool fn = i >= f0 && i < op->nopnds;
    if (fn && i - f0 < 8 && (v->type.dtype == GV_DT_BOOL || v->type.dtype == GV_DT_F32)) {
      fdt[i - f0] = s == GV_DT_BOOL ? "GALV_BOOL" : s == GV_DT_BF16 ? "GALV_BF16" : s == GV_DT_F16 ? "GALV_F16" : "GALV_F32";
      continue;
    }
    if (v->type.dtype != GV_DT_F32 || fn)
      return gv_error_op(m, op, "cpu codegen: galv.%s runs f32 values (and bool conditions) only", gv_ops[op->code].name);
    if (i == lse ? s != GV_DT_F32 : s != st)
      return gv_error_op(m, op, "cpu codegen: galv.%s: operand / result %d stored %s, the kernel takes q, k, v, o, do and the "
                                "gradients in one storage (%s) and lse fp32",
                         gv_ops[op->code].name, i, gv_dtype_name(s), gv_dtype_name(st));
  }
  if (st == GV_DT_F32) return cg_fattn_call(f, m, op, &g, "galv_attention_f32", "galv_attention_grad_f32", "float", fdt, "", p);
  if (st == GV_DT_BF16) return cg_fattn_call(f, m, op, &g, "galv_attention_bf16", "galv_attention_grad_bf16", "uint16_t", fdt, "", p);
  return cg_fattn_call(f, m, op, &g, "galv_attention_f16", "galv_attention_grad_f16", "uint16_t", fdt, "", p);
}

static int emit_kernel(emitter *e, const gv_op *op) {
  gv_module *m = e->m;
  FILE *f = e->f;
  char p[GV_MAX_RANK * 4 + 4][64];
  int np = op->nopnds + op->nres, NP = (int)(sizeof p / sizeof p[0]);
  if (np > NP && op->code != GV_OP_CONCAT && op->code != GV_OP_SPLIT) return gv_error_op(m, op, "cpu codegen: too many operands");
  for (int i = 0; i < op->nopnds && i < NP; i++) ptr(e, op->opnds[i], 0, p[i], sizeof p[i]);
  for (int i = 0; i < op->nres && op->nopnds + i < NP; i++) ptr(e, op->res[i], 0, p[op->nopnds + i], sizeof p[0]);
  if (cg_comm_is_op(op)) return cg_emit_comm_op(e->comm, f, op, p); /* collectives: emit_comm.c */
  if (cg_kcall_kernel(op->code) != CG_K_NONE) { /* the shared kernel-call table (../kcall.c) */
    cg_kcall kc;
    if (cg_kcall_fill(m, op, "cpu codegen", &kc)) return -1;
    int post[GV_MAX_RANK * 4 + 4], npost = 0;
    if (e->st && convert_in(e, op, &kc, p, np < NP ? np : NP, post, &npost)) return -1;
    if (print_kcall(e, op, &kc, p, np < NP ? np : NP)) return -1;
    convert_out(e, op, p, post, npost);
    return 0;
  }
  if (op->code == GV_OP_ATTENTION || op->code == GV_OP_ATTENTION_GRAD) return emit_attention(e, op, p);
  return gv_error_op(m, op, "cpu codegen: galv.%s is not supported by the cpu target%s", gv_ops[op->code].name,
                     op->code == GV_OP_SHAPE || op->code == GV_OP_RANGE || op->code == GV_OP_CONSTANT_OF_SHAPE ||
                             op->code == GV_OP_IF
                         ? " (it should have been folded: are the input shapes bound?)"
                         : "");
}

/* ---------------------------------------------------------------- plan */

static int fail_plan(emitter *e, const gv_op *op, const char *what) {
  return gv_error_op(e->m, op, "cpu codegen: %s (did the memory-plan pass run?)", what);
}

/* Uses of top-level values inside nested regions count at the enclosing op. */
static void mark_uses(emitter *e, const gv_block *b, int t) {
  for (const gv_op *op = b->first; op; op = op->next) {
    for (int i = 0; i < op->nopnds; i++) {
      const gv_value *v = op->opnds[i];
      if (v->id >= 0 && v->id < e->nv && e->vi[v->id].v == v) {
        vinfo *r = &e->vi[e->vi[v->id].root];
        if (r->last != INT_MAX && r->last < t) r->last = t;
      }
    }
    for (int k = 0; k < op->nregions; k++) mark_uses(e, op->regions[k], t);
  }
}

static void clear_ids(const gv_block *b) {
  for (int i = 0; i < b->nargs; i++) b->args[i]->id = -1;
  for (const gv_op *op = b->first; op; op = op->next) {
    for (int i = 0; i < op->nres; i++) op->res[i]->id = -1;
    for (int k = 0; k < op->nregions; k++) clear_ids(op->regions[k]);
  }
}

/* The conversion scratch program.c asks for (galv_cvt_scratch: one buffer,
 * grown to the largest call's bytes and kept), for the cost model under
 * --target cpu (planner/cost.h gv_cost_convert_fn): convert_in's sizes over
 * the kernel calls, the values numbered as plan() numbers them and their
 * storage set by storage_setup(), nothing printed; the values' ids are
 * restored after. -1 when a kernel call cannot be filled (nothing is
 * printed either). */
static int ids_walk(const gv_block *b, int *ids, int n, bool restore) {
  for (int i = 0; i < b->nargs; i++, n++)
    if (ids) restore ? (void)(b->args[i]->id = ids[n]) : (void)(ids[n] = b->args[i]->id);
  for (const gv_op *op = b->first; op; op = op->next) {
    for (int i = 0; i < op->nres; i++, n++)
      if (ids) restore ? (void)(op->res[i]->id = ids[n]) : (void)(ids[n] = op->res[i]->id);
    for (int k = 0; k < op->nregions; k++) n = ids_walk(op->regions[k], ids, n, restore);
  }
  return n;
}

int64_t gv_cpu_convert_scratch(const gv_module *m) {
  if (!m || !m->main) return 0;
  gv_block *body = m->main->body;
  int n = ids_walk(body, NULL, 0, false);
  int *ids = malloc(sizeof *ids * ((size_t)n + 1));
  emitter e = {.m = (gv_module *)m, .train = m->main->res_updates != NULL};
  e.vi = calloc((size_t)n + 1, sizeof *e.vi);
  if (!ids || !e.vi) abort();
  ids_walk(body, ids, 0, false);
  clear_ids(body);
  for (int i = 0; i < body->nargs; i++, e.nv++) body->args[i]->id = e.nv, e.vi[e.nv].v = body->args[i];
  for (const gv_op *op = body->first; op; op = op->next)
    for (int i = 0; i < op->nres; i++, e.nv++) op->res[i]->id = e.nv, e.vi[e.nv].v = op->res[i];
  int64_t most = 0;
  gv_error_quiet++;
  int rc = storage_setup(&e);
  for (const gv_op *op = body->first; op && !rc && e.st; op = op->next) {
    if (cg_comm_is_op(op) || cg_kcall_kernel(op->code) == CG_K_NONE || op->code == GV_OP_FUSED ||
        (gv_ops[op->code].flags & (GV_ELEMENTWISE | GV_VIEW)))
      continue;
    char p[GV_MAX_RANK * 4 + 4][64];
    int np = op->nopnds + op->nres, NP = (int)(sizeof p / sizeof p[0]), post[GV_MAX_RANK * 4 + 4], npost = 0;
    for (int i = 0; i < NP; i++) snprintf(p[i], sizeof p[i], "p%d", i);
    cg_kcall kc;
    rc = cg_kcall_fill(e.m, op, "cpu codegen", &kc) || convert_in(&e, op, &kc, p, np < NP ? np : NP, post, &npost);
    if (!rc && e.cvt > most) most = e.cvt;
  }
  gv_error_quiet--;
  ids_walk(body, ids, 0, true);
  free(ids);
  free(e.vi);
  free(e.st);
  free(e.half);
  return rc ? -1 : most;
}

/* The results that memory-plan writes over the argument they update
 * (galv.arena in_place), by value id: ids are assigned in the order plan()
 * numbers values (arguments, then results in schedule order). */
static int mark_in_place(emitter *e, const gv_op *ar, int n) {
  gv_func *fn = e->m->main;
  const gv_op *ret = gv_block_terminator(fn->body);
  const int64_t *ip;
  int nip = gv_get_ints(ar, "in_place", &ip);
  if (!ret || nip != ret->nopnds) return fail_plan(e, ar, "a training step needs galv.arena in_place with one entry per result");
  int id = fn->body->nargs;
  for (const gv_op *op = fn->body->first; op; op = op->next)
    for (int i = 0; i < op->nres; i++) op->res[i]->id = id++;
  for (int i = 0; i < nip; i++) {
    int a = fn->res_updates[i];
    if (!ip[i]) continue;
    const gv_value *r = ret->opnds[i];
    if (a < 0 || a >= fn->body->nargs || !r->def || r->id < 0 || r->id >= n || e->inplace_arg[r->id] >= 0)
      return fail_plan(e, ar, "in_place marks a result that does not update a distinct argument");
    e->inplace_arg[r->id] = a;
  }
  clear_ids(fn->body);
  return 0;
}

/* In-place updates: every use of the argument is before the result's
 * definition, or at it by the defining elementwise op (read before write). */
static int check_in_place(emitter *e) {
  for (int a = 0; a < e->nv; a++) {
    const vinfo *x = &e->vi[a];
    if (x->in_weights != 2 || x->def < 0 || x->root != a) continue;
    const vinfo *arg = &e->vi[e->inplace_arg[x->v->id]];
    const gv_op *d = x->v->def;
    bool ew = d->code == GV_OP_FUSED || (gv_ops[d->code].flags & GV_ELEMENTWISE);
    if (arg->last > x->def || (arg->last == x->def && !ew))
      return gv_error_op(e->m, d, "cpu codegen: memory plan error: update written in place over '%s', which is used "
                                  "after it", e->m->main->arg_names[arg->v->index]);
  }
  return 0;
}

/* The plan check's fast path: whether any two arena values whose lifetimes
 * meet (one defined while the other is live) share a byte. A sweep over
 * the schedule positions keeps the live values in a treap by offset; in a
 * correct plan they are disjoint, so a new value overlaps one of them iff it
 * overlaps its neighbour below or above. Any overlap found (or a value of
 * no bytes) sends the check to the pairwise loop, which knows the allowed
 * cases and names the pair; a plan without one is correct and costs
 * O(n log n) instead of the loop's O(n^2). */
typedef struct {
  int64_t off, end;
  unsigned pri;
  int l, r;
} tnode;

static bool tkey_less(const tnode *T, int a, int b) { return T[a].off < T[b].off || (T[a].off == T[b].off && a < b); }

static void tsplit(tnode *T, int t, int key, int *l, int *r) { /* l: keys < key's */
  if (t < 0) {
    *l = *r = -1;
  } else if (tkey_less(T, t, key)) {
    tsplit(T, T[t].r, key, &T[t].r, r);
    *l = t;
  } else {
    tsplit(T, T[t].l, key, l, &T[t].l);
    *r = t;
  }
}

static int tmerge(tnode *T, int a, int b) {
  if (a < 0 || b < 0) return a < 0 ? b : a;
  if (T[a].pri > T[b].pri) {
    T[a].r = tmerge(T, T[a].r, b);
    return a;
  }
  T[b].l = tmerge(T, a, T[b].l);
  return b;
}

/* t without node a (which it holds). */
static int terase(tnode *T, int t, int a) {
  if (t == a) return tmerge(T, T[a].l, T[a].r);
  if (tkey_less(T, a, t)) T[t].l = terase(T, T[t].l, a);
  else T[t].r = terase(T, T[t].r, a);
  return t;
}

/* Whether [off, end) overlaps a node of t (its nodes disjoint). */
static bool toverlaps(const tnode *T, int t, int64_t off, int64_t end) {
  int below = -1, above = -1; /* the last node starting at or below off, the first above it */
  for (int u = t; u >= 0;)
    if (T[u].off <= off) below = u, u = T[u].r;
    else above = u, u = T[u].l;
  return (below >= 0 && T[below].end > off) || (above >= 0 && T[above].off < end);
}

static bool plan_may_overlap(const emitter *e, int npos) {
  int nv = e->nv, *first = malloc(2 * ((size_t)npos + 2) * sizeof *first), *next = malloc(2 * ((size_t)nv + 1) * sizeof *next);
  tnode *T = malloc(((size_t)nv + 1) * sizeof *T);
  bool may = true;
  if (!first || !next || !T) goto done;
  for (int p = 0; p < 2 * (npos + 2); p++) first[p] = -1;
  unsigned rng = 2463534242u;
  for (int a = nv - 1; a >= 0; a--) { /* per position (def + 1, last + 1): the values defined there, last used there */
    const vinfo *x = &e->vi[a];
    if (x->in_weights || x->root != a) continue;
    if (x->nbytes <= 0 || x->def < -1 || x->def >= npos) goto done;
    T[a] = (tnode){x->off, x->off + x->nbytes, (rng ^= rng << 13, rng ^= rng >> 17, rng ^= rng << 5), -1, -1};
    next[2 * a] = first[2 * (x->def + 1)], first[2 * (x->def + 1)] = a;
    if (x->last >= x->def && x->last < npos) next[2 * a + 1] = first[2 * (x->last + 1) + 1], first[2 * (x->last + 1) + 1] = a;
  }
  int root = -1;
  for (int p = -1; p < npos; p++) {
    for (int a = first[2 * (p + 1)]; a >= 0; a = next[2 * a]) {
      if (toverlaps(T, root, T[a].off, T[a].end)) goto done;
      if (e->vi[a].last < e->vi[a].def) continue; /* never live after its definition: checked, not kept */
      int l, r;
      tsplit(T, root, a, &l, &r);
      root = tmerge(T, tmerge(T, l, a), r);
    }
    for (int a = first[2 * (p + 1) + 1]; a >= 0; a = next[2 * a + 1]) root = terase(T, root, a); /* dead after p */
  }
  may = false;
done:
  free(first);
  free(next);
  free(T);
  return may;
}

/* Locations of every top-level value; weights layout; last uses; plan check. */
static int plan(emitter *e, int64_t *wbytes, const gv_op **arena_op) {
  gv_module *m = e->m;
  gv_func *fn = m->main;
  gv_block *body = fn->body;
  const gv_op *ar = body->first;
  if (!ar || ar->code != GV_OP_ARENA)
    return gv_error(m, "cpu codegen: the program has no memory plan (galv.arena is not the first op); run the "
                       "fuse and memory-plan passes first");
  *arena_op = ar;
  const int64_t *argoff;
  int nao = gv_get_ints(ar, "arg_offsets", &argoff);
  if (nao != body->nargs) return fail_plan(e, ar, "arg_offsets does not have one entry per block argument");
  int64_t abytes = gv_get_int(ar, "bytes", -1);
  if (abytes < 0) return fail_plan(e, ar, "galv.arena has no 'bytes'");
  int n = body->nargs;
  for (const gv_op *op = body->first; op; op = op->next) n += op->nres;
  clear_ids(body);
  e->vi = calloc((size_t)n + 1, sizeof *e->vi);
  e->inplace_arg = malloc(((size_t)n + 1) * sizeof *e->inplace_arg);
  if (!e->vi || !e->inplace_arg) abort();
  for (int i = 0; i <= n; i++) e->inplace_arg[i] = -1;
  if (e->train && mark_in_place(e, ar, n)) return -1;
  int64_t w = 0;
  for (int i = 0; i < body->nargs; i++) {
    const gv_value *v = body->args[i];
    vinfo *vi = &e->vi[e->nv];
    ((gv_value *)v)->id = e->nv;
    *vi = (vinfo){v, 0, 0, 0, e->nv, -1, -1};
    e->nv++;
    if (!gv_type_is_static(&v->type) || !gv_dtype_size(v->type.dtype))
      return gv_error(m, "cpu codegen: argument '%s' has no static type", fn->arg_names[i] ? fn->arg_names[i] : "?");
    vi->nbytes = nbytes_of(&v->type);
    if (!fn->arg_is_param[i]) /* a data input: the plan's arena slot; a pipeline stash slot: its storage (ir/storage.h) */
      vi->nbytes = gv_value_storage_bytes(v);
    if (fn->arg_is_param[i]) {
      vi->in_weights = e->train ? 2 : 1; /* training: the state buffer mirrors the parameters' weights.bin bytes */
      vi->off = w;
      w = align64(w + vi->nbytes);
    } else if (fn->arg_is_state && fn->arg_is_state[i]) {
      vi->in_weights = 2; /* the state buffer: offset after the parameters (training) or from 0, set below */
      if (argoff[i] != -1) return fail_plan(e, ar, "an optimizer state argument must have offset -1");
    } else {
      vi->off = argoff[i];
      if (argoff[i] < 0 || argoff[i] % 64 || argoff[i] + vi->nbytes > abytes)
        return fail_plan(e, ar, "graph input offset outside the arena or unaligned");
    }
  }
  e->pbytes = e->sbytes = e->train ? w : 0; /* not a training step: galv.state inputs only (a pipeline stash) */
  for (int i = 0; i < body->nargs; i++)
    if (e->vi[i].in_weights == 2 && !fn->arg_is_param[i]) {
      e->vi[i].off = e->sbytes;
      e->sbytes = align64(e->sbytes + e->vi[i].nbytes);
    }
  if (e->const_base > w) w = e->const_base; /* a backward entry's constants after the forward entry's weights */
  int t = 0;
  for (const gv_op *op = body->first; op; op = op->next, t++) {
    if (op->code == GV_OP_CONSTANT) {
      const gv_value *v = op->res[0];
      vinfo *vi = &e->vi[e->nv];
      ((gv_value *)v)->id = e->nv;
      *vi = (vinfo){v, 1, w, nbytes_of(&v->type), e->nv, t, -1};
      e->nv++;
      if (vi->nbytes < 0) return gv_error_op(m, op, "cpu codegen: constant type is not static");
      w = align64(w + vi->nbytes);
      continue;
    }
    if (op->nres == 0) continue;
    const int64_t *offs;
    int no = gv_get_ints(op, "offsets", &offs);
    if (no != op->nres) return fail_plan(e, op, "op has no 'offsets' with one entry per result");
    for (int i = 0; i < op->nres; i++) {
      const gv_value *v = op->res[i];
      vinfo *vi = &e->vi[e->nv];
      ((gv_value *)v)->id = e->nv;
      *vi = (vinfo){v, 0, offs[i], gv_value_storage_bytes(v), e->nv, t, -1}; /* the plan's bytes (ir/storage.h) */
      e->nv++;
      if (!gv_type_is_static(&v->type) || vi->nbytes < 0 || !gv_dtype_size(v->type.dtype))
        return gv_error_op(m, op, "cpu codegen: result %d has no static type", i);
      if (offs[i] == -1 && e->train && e->inplace_arg[v->id] >= 0 && !(gv_ops[op->code].flags & GV_VIEW)) {
        const vinfo *a = &e->vi[e->inplace_arg[v->id]]; /* an update written over its argument's bytes */
        vi->in_weights = 2;
        vi->off = a->off;
        if (!a->in_weights || a->nbytes != vi->nbytes) return fail_plan(e, op, "an in-place update does not match its argument");
      } else if (gv_ops[op->code].flags & GV_VIEW) {
        const vinfo *src = info(e, op->opnds[0]);
        vi->root = src->root;
        vi->in_weights = src->in_weights;
        if (src->in_weights) {
          vi->off = src->off;
          if (offs[i] != -1) return fail_plan(e, op, "a view of a weight must have offset -1");
        } else if (offs[i] != src->off) {
          return fail_plan(e, op, "a view must have its operand's offset");
        }
      } else if (offs[i] < 0 || offs[i] % 64 || offs[i] + vi->nbytes > abytes) {
        return fail_plan(e, op, "result offset outside the arena or unaligned");
      }
    }
  }
  *wbytes = w;
  if (storage_setup(e)) return -1;
  /* last uses (in schedule positions); graph outputs live to the end */
  t = 0;
  for (const gv_op *op = body->first; op; op = op->next, t++) {
    if (op->code == GV_OP_RETURN) {
      for (int i = 0; i < op->nopnds; i++) e->vi[info(e, op->opnds[i])->root].last = INT_MAX;
      continue;
    }
    gv_block tmp = {0};
    tmp.first = tmp.last = (gv_op *)op;
    gv_op *nx = op->next;
    ((gv_op *)op)->next = NULL; /* mark_uses walks a one-op list */
    mark_uses(e, &tmp, t);
    ((gv_op *)op)->next = nx;
  }
  if (e->train && check_in_place(e)) return -1;
  /* plan check: a value's bytes never overlap those of a value live when it is
   * defined (an elementwise op may write over an operand of exactly its size
   * that dies there: each element is read before it is written). */
  bool may = plan_may_overlap(e, t);
  for (int a = 0; may && a < e->nv; a++) {
    vinfo *x = &e->vi[a];
    if (x->in_weights || x->root != a || x->def < 0) continue;
    const gv_op *dop = x->v->def;
    bool ew = dop->code == GV_OP_FUSED || (gv_ops[dop->code].flags & GV_ELEMENTWISE);
    for (int b = 0; b < e->nv; b++) {
      vinfo *y = &e->vi[b];
      if (b == a || y->in_weights || y->root != b || y->last < x->def || y->def > x->def) continue;
      if (y->def == x->def && y->v->def == dop) {
        if (x->off < y->off + y->nbytes && y->off < x->off + x->nbytes)
          return gv_error_op(m, dop, "cpu codegen: memory plan places two results of one op in overlapping bytes");
        continue;
      }
      if (!(x->off < y->off + y->nbytes && y->off < x->off + x->nbytes)) continue;
      bool operand = false;
      for (int i = 0; i < dop->nopnds; i++) operand |= info(e, dop->opnds[i])->root == b;
      if (ew && operand && y->last == x->def && y->off == x->off && y->nbytes == x->nbytes &&
          gv_dtype_size(vst(e, y->v)) == gv_dtype_size(vst(e, x->v)))
        continue;
      return gv_error_op(m, dop, "cpu codegen: memory plan error: result shares arena bytes [%lld, %lld) with a value "
                                 "still live (arena offset %lld)",
                         (long long)x->off, (long long)(x->off + x->nbytes), (long long)y->off);
    }
  }
  return 0;
}

/* ---------------------------------------------------------------- weights */

static int write_weights(emitter *e, const char *dir, int64_t total) {
  gv_module *m = e->m;
  gv_func *fn = m->main;
  char path[4096];
  snprintf(path, sizeof path, "%s/%s", dir, e->wname);
  galv_wfile w;
  FILE *f = cg_open_file(&w, path);
  if (!f) return -1;
  static const char zeros[64];
  int64_t pos = 0;
  int rc = 0, werr = 0;
  for (int a = 0; a < e->nv && !rc; a++) {
    const vinfo *x = &e->vi[a];
    bool param = x->in_weights == 2 && !x->v->def && fn->arg_is_param[x->v->index]; /* initial value of a state slot */
    if ((x->in_weights != 1 && !param) || x->root != a) continue;
    const void *data = NULL;
    if (!x->v->def) {
      data = fn->param_data ? fn->param_data[x->v->index] : NULL;
      if (!data && x->nbytes)
        rc = gv_error(m, "cpu codegen: parameter '%s' has no data (imported with --no-weights?)",
                      fn->arg_names[x->v->index] ? fn->arg_names[x->v->index] : "?");
    } else {
      const gv_attr *at = gv_get_attr(x->v->def, "value");
      if (!at || at->kind != GV_ATTR_TENSOR || !at->u.t) rc = gv_error_op(m, x->v->def, "constant has no value");
      else data = at->u.t->data;
    }
    if (rc) break;
    while (pos < x->off) {
      size_t k = (size_t)(x->off - pos > 64 ? 64 : x->off - pos);
      fwrite(zeros, 1, k, f);
      pos += (int64_t)k;
    }
    if (x->nbytes && fwrite(data, 1, (size_t)x->nbytes, f) != (size_t)x->nbytes) werr = 1;
    pos += x->nbytes;
  }
  while (!rc && pos < total) {
    size_t k = (size_t)(total - pos > 64 ? 64 : total - pos);
    fwrite(zeros, 1, k, f);
    pos += (int64_t)k;
  }
  if (werr && !rc) rc = gv_error_plain("%s: write failed: %s", path, strerror(errno));
  return cg_close_weights(&w, rc, total, 1);
}

int64_t gv_emit_weights_bytes_at(const gv_module *m, int64_t const_base) {
  const gv_block *body = m->main->body;
  int64_t w = 0;
  for (int i = 0; i < body->nargs; i++)
    if (m->main->arg_is_param[i]) w = align64(w + nbytes_of(&body->args[i]->type));
  if (const_base > w) w = const_base; /* as plan lays the constants out (e->const_base) */
  for (const gv_op *op = body->first; op; op = op->next)
    if (op->code == GV_OP_CONSTANT) w = align64(w + nbytes_of(&op->res[0]->type));
  return w;
}

int64_t gv_emit_weights_bytes(const gv_module *m) { return gv_emit_weights_bytes_at(m, 0); }

/* ---------------------------------------------------------------- program.c */

/* An input or output: the tensor as its file holds it (an f32 tensor held
 * 16-bit in the arena: its storage, converted by runtime/main.c). */
static void io_entry(emitter *e, const char *name, const gv_value *v) {
  const vinfo *x = info(e, v);
  FILE *f = e->f;
  bool h = !x->in_weights && vst(e, v) != v->type.dtype;
  fputs("  {", f);
  cg_c_string(f, name);
  fprintf(f, ", %s, %d, ", cg_rt_dtype(v->type.dtype), v->type.rank);
  cg_dims_lit(f, v->type.rank, v->type.dims);
  fprintf(f, ", %d, %lld, %lld, %s},\n", x->in_weights, (long long)x->off,
          (long long)(h ? nbytes_of(&v->type) : x->nbytes), h ? hdt(e) : "0");
}

/* The arena values to unpoison before op t (defined there) and to poison
 * after it (last used there, or defined there and never used), in value
 * order: buckets per schedule position, built once (a scan of every value
 * per op was quadratic). */
typedef struct {
  int *first[2]; /* per position, [0] unpoison, [1] poison: the first value, -1 */
  int *next[2];  /* per value: the next value of the same position */
} poison_lists;

static int poison_lists_build(poison_lists *pl, const emitter *e, int npos) {
  for (int k = 0; k < 2; k++) {
    pl->first[k] = malloc(((size_t)npos + 1) * sizeof(int));
    pl->next[k] = malloc(((size_t)e->nv + 1) * sizeof(int));
    if (!pl->first[k] || !pl->next[k]) return -1;
    for (int t = 0; t < npos; t++) pl->first[k][t] = -1;
  }
  for (int a = e->nv - 1; a >= 0; a--) { /* from the last, so that each list is in value order */
    const vinfo *x = &e->vi[a];
    if (x->in_weights || x->root != a) continue;
    int at[2] = {x->def, x->last >= 0 ? x->last : x->def};
    for (int k = 0; k < 2; k++)
      if (at[k] >= 0 && at[k] < npos) pl->next[k][a] = pl->first[k][at[k]], pl->first[k][at[k]] = a;
  }
  return 0;
}

static void poison_lists_free(poison_lists *pl) {
  for (int k = 0; k < 2; k++) free(pl->first[k]), free(pl->next[k]);
}

static void poison_after(const emitter *e, const poison_lists *pl, int t, bool poison) {
  for (int a = pl->first[poison][t]; a >= 0; a = pl->next[poison][a]) {
    const vinfo *x = &e->vi[a];
    fprintf(e->f, "  GALV_%s(A(%lld), %lld);\n", poison ? "POISON" : "UNPOISON", (long long)x->off, (long long)x->nbytes);
  }
}

/* The state table of a training step (galv_rt.h galv_state_entry): every
 * parameter and galv.state argument, its slot, and where the step leaves
 * its new value (an arena offset copied after the step, or -1: in place). */
static int state_table(emitter *e, const gv_op *ret) {
  gv_func *fn = e->m->main;
  FILE *f = e->f;
  int n = 0;
  fprintf(f, "const int galv_training = %d;\nconst galv_state_entry galv_state[] = {\n", e->train);
  for (int a = 0; a < fn->body->nargs; a++) {
    const vinfo *x = &e->vi[a];
    if (x->in_weights != 2) continue;
    int64_t from = -1;
    for (int i = 0; fn->res_updates && i < ret->nopnds; i++) {
      if (fn->res_updates[i] != a) continue;
      const vinfo *r = info(e, ret->opnds[i]);
      if (r->in_weights == 2 && e->inplace_arg[e->vi[r->root].v->id] == a) break;
      if (r->in_weights != 0)
        return gv_error_op(e->m, ret, "cpu codegen: the update of '%s' is not in the arena (not supported)", fn->arg_names[a]);
      from = r->off;
      break;
    }
    fputs("  {", f);
    cg_c_string(f, fn->arg_names[a] ? fn->arg_names[a] : "");
    fprintf(f, ", %s, %d, ", cg_rt_dtype(x->v->type.dtype), x->v->type.rank);
    cg_dims_lit(f, x->v->type.rank, x->v->type.dims);
    fprintf(f, ", %d, %lld, %lld, %lld},\n", fn->arg_is_param[a] ? 1 : 0, (long long)x->off, (long long)x->nbytes,
            (long long)from);
    n++;
  }
  if (!n) fprintf(f, "  {0}\n");
  fprintf(f, "};\nconst int galv_nstate = %d;\nconst int64_t galv_state_bytes = %lld;\nconst int64_t galv_param_bytes = %lld;\n\n",
          n, (long long)e->sbytes, (long long)(e->train ? e->pbytes : 0));
  return 0;
}

static int write_program(emitter *e, const char *dir, int64_t wbytes, const gv_op *ar) {
  gv_module *m = e->m;
  gv_func *fn = m->main;
  gv_block *body = fn->body;
  char path[4096];
  snprintf(path, sizeof path, "%s/%s", dir, e->pname);
  galv_wfile w;
  FILE *f = cg_open_file(&w, path);
  if (!f) return -1;
  e->f = f;
  const char *src = strrchr(m->source, '/');
  fprintf(f, "/* program.c — generated by galvc (CPU target) from ");
  cg_c_comment(f, src ? src + 1 : m->source);
  fprintf(f, ". Do not edit.\n * galv_program_run() calls one kernel per op of the device program in schedule order;\n"
             " * A(off) is arena memory, W(off) the mapped weights.bin. */\n");
  if (e->entry) {
    fprintf(f, "/* the program's entry '%s' (weights in %s): its symbols are galv_%s_* */\n", e->entry, e->wname, e->entry);
    for (int i = 0; i < cg_program_nsyms; i++)
      fprintf(f, "#define galv_%s galv_%s_%s\n", cg_program_syms[i], e->entry, cg_program_syms[i]);
    fputc('\n', f);
  }
  fprintf(f, "#include <math.h>\n#include <stddef.h>\n#include <stdint.h>\n#include <string.h>\n\n#include \"runtime/galv_rt.h\"\n#include \"runtime/galv_spmd.h\"\n\n"
             "#define A(o) (arena + (o))\n#define W(o) (weights + (o))\n#define S(o) (state + (o))\n\n");
  /* tables */
  int nin = 0;
  fprintf(f, "const galv_io galv_inputs[] = {\n");
  for (int i = 0; i < body->nargs; i++)
    if (!fn->arg_is_param[i] && !info(e, body->args[i])->in_weights) {
      if (!cg_rt_dtype(body->args[i]->type.dtype))
        return fclose(f), gv_error(m, "cpu codegen: input dtype %s unsupported", gv_dtype_name(body->args[i]->type.dtype));
      io_entry(e, fn->arg_names[i] ? fn->arg_names[i] : "", body->args[i]), nin++;
    }
  if (!nin) fprintf(f, "  {0}\n");
  fprintf(f, "};\nconst int galv_ninputs = %d;\n\n", nin);
  const gv_op *ret = gv_block_terminator(body);
  if (!ret || ret->code != GV_OP_RETURN) return fclose(f), gv_error(m, "cpu codegen: the function does not end in galv.return");
  fprintf(f, "const galv_io galv_outputs[] = {\n");
  for (int i = 0; i < ret->nopnds; i++) {
    char nm[64];
    const char *name = i < fn->nres_names && fn->res_names && fn->res_names[i] ? fn->res_names[i] : NULL;
    if (!name) snprintf(nm, sizeof nm, "output%d", i), name = nm;
    if (!cg_rt_dtype(ret->opnds[i]->type.dtype))
      return fclose(f), gv_error_op(m, ret, "cpu codegen: output dtype %s unsupported", gv_dtype_name(ret->opnds[i]->type.dtype));
    io_entry(e, name, ret->opnds[i]);
  }
  if (!ret->nopnds) fprintf(f, "  {0}\n");
  int64_t high = 0;
  for (int a = 0; a < e->nv; a++)
    if (!e->vi[a].in_weights && e->vi[a].root == a && e->vi[a].off + e->vi[a].nbytes > high)
      high = e->vi[a].off + e->vi[a].nbytes;
  fprintf(f, "};\nconst int galv_noutputs = %d;\n\n", ret->nopnds);
  if (state_table(e, ret)) return fclose(f), -1;
  fprintf(f, "const int64_t galv_arena_bytes = %lld;\nconst int64_t galv_plan_high_water = %lld;\n"
             "const int64_t galv_weights_bytes = %lld;\n\n",
          (long long)gv_get_int(ar, "bytes", 0), (long long)high, (long long)wbytes);
  /* loop functions */
  int t = 0, rc = 0, nk = 0;
  for (const gv_op *op = body->first; op && !rc; op = op->next, t++) {
    if (op->code == GV_OP_FUSED || (gv_ops[op->code].flags & GV_ELEMENTWISE)) {
      char name[32];
      snprintf(name, sizeof name, "%s%d", op->code == GV_OP_FUSED ? "fused" : "ew", t);
      fprintf(f, "/* ");
      if (op->code == GV_OP_FUSED) {
        for (const gv_op *b = op->regions[0]->first; b; b = b->next)
          if (b->code != GV_OP_YIELD) fprintf(f, "%s ", gv_ops[b->code].name);
      } else {
        fprintf(f, "%s ", gv_ops[op->code].name);
      }
      fprintf(f, "-- node '");
      cg_c_comment(f, op->loc ? op->loc : "");
      fprintf(f, "' */\n");
      rc = cg_emit_loop(m, f, name, op, e->st ? vst_cb : NULL, e);
    }
  }
  if (!rc && cg_comm_decls(e->comm, f)) rc = -1;
  /* the run function */
  fprintf(f, "void galv_program_run(char *arena, const char *weights, char *state) {\n  (void)arena, (void)weights, (void)state;\n");
  if (e->st) fprintf(f, "  char *galv_cvt = NULL; /* 16-bit storage: conversion scratch */\n  (void)galv_cvt;\n");
  if (e->w16) { /* the f32 parameters and constants in 16 bits, as the CUDA runtime uploads them */
    int nw = 0;
    fprintf(f, "  static const int64_t w16[] = {");
    for (int a = 0; a < e->nv; a++)
      if (e->vi[a].in_weights == 1 && e->vi[a].root == a && e->vi[a].v->type.dtype == GV_DT_F32)
        fprintf(f, "%s%lld, %lld", nw++ ? ", " : "", (long long)e->vi[a].off, (long long)gv_type_numel(&e->vi[a].v->type));
    fprintf(f, "%s};\n  weights = galv_narrow_weights(weights, %lld, w16, %d, %s);\n", nw ? "" : "0", (long long)wbytes, nw,
            hdt(e));
  }
  cg_comm_run_start(e->comm, f);
  for (int a = 0; a < e->nv; a++)
    if (!e->vi[a].in_weights && e->vi[a].root == a && e->vi[a].def < 0 && e->vi[a].last < 0)
      fprintf(f, "  GALV_POISON(A(%lld), %lld); /* unused input */\n", (long long)e->vi[a].off, (long long)e->vi[a].nbytes);
  int npos = 0;
  for (const gv_op *op = body->first; op; op = op->next) npos++;
  poison_lists pl = {0};
  if (!rc && poison_lists_build(&pl, e, npos)) rc = gv_error_plain("cpu codegen: out of memory");
  t = 0;
  for (const gv_op *op = body->first; op && !rc; op = op->next, t++) {
    gv_opcode k = op->code;
    cg_comm_before_op(e->comm, f, op); /* waits for communication whose bytes op touches */
    if (k == GV_OP_ARENA || k == GV_OP_CONSTANT || k == GV_OP_RETURN || (gv_ops[k].flags & GV_VIEW)) continue;
    fprintf(f, "  /* %s: node '", gv_ops[k].name);
    cg_c_comment(f, op->loc ? op->loc : "");
    fprintf(f, "' */\n");
    poison_after(e, &pl, t, false);
    fprintf(f, "  GALV_PROF(%d);\n", nk);
    if (k == GV_OP_FUSED || (gv_ops[k].flags & GV_ELEMENTWISE)) {
      fprintf(f, "  %s%d(", k == GV_OP_FUSED ? "fused" : "ew", t);
      for (int i = 0; i < op->nopnds + op->nres; i++) {
        char b[64];
        ptr(e, i < op->nopnds ? op->opnds[i] : op->res[i - op->nopnds], 0, b, sizeof b);
        fprintf(f, "%s%s", i ? ", " : "", b);
      }
      fprintf(f, ");\n");
    } else {
      rc = emit_kernel(e, op);
    }
    nk++;
    poison_after(e, &pl, t, true);
  }
  poison_lists_free(&pl);
  cg_comm_run_end(e->comm, f);
  fprintf(f, "  GALV_PROF(-1);\n}\n\nconst int galv_nkernels = %d;\n", nk);
  /* kind and node of each kernel call, for --profile */
  fprintf(f, "const galv_kernel_info galv_kernels[] = {\n");
  for (const gv_op *op = body->first; op && !rc; op = op->next) {
    gv_opcode k = op->code;
    if (k == GV_OP_ARENA || k == GV_OP_CONSTANT || k == GV_OP_RETURN || (gv_ops[k].flags & GV_VIEW)) continue;
    fprintf(f, "  {\"%s\", ", gv_ops[k].name);
    cg_c_string(f, op->loc ? op->loc : "");
    fprintf(f, "},\n");
  }
  fprintf(f, "  {0}\n};\n");
  e->nkernels = nk;
  return cg_close_file(&w, rc);
}

int gv_emit_cpu(gv_module *m, const char *outdir, gv_emit_options *o) {
  emitter e = {.m = m, .train = m->main && m->main->res_updates != NULL, .entry = o ? o->entry : NULL,
               .const_base = o ? o->const_base : 0};
  if (e.entry) {
    for (const char *c = e.entry; *c; c++)
      if (!((*c >= 'a' && *c <= 'z') || (*c >= '0' && *c <= '9') || *c == '_') || strlen(e.entry) > 32)
        return gv_error_plain("cpu codegen: entry name '%s' is not a short C identifier (a-z, 0-9, _)", e.entry);
    snprintf(e.pname, sizeof e.pname, "program_%s.c", e.entry);
    snprintf(e.wname, sizeof e.wname, "weights_%s.bin", e.entry);
  } else {
    snprintf(e.pname, sizeof e.pname, "program.c");
    snprintf(e.wname, sizeof e.wname, "weights.bin");
  }
  int64_t wbytes = 0;
  const gv_op *ar = NULL;
  struct stat st;
  int rc = -1;
  if (stat(outdir, &st) != 0 && mkdir(outdir, 0777) != 0) {
    gv_error_plain("%s: cannot create output directory: %s", outdir, strerror(errno));
    goto out;
  }
  e.ct = cg_cpu_comm; /* collectives move 16-bit values in their storage (the plan's) */
  e.ct.half = comm_half, e.ct.half_ctx = &e;
  if (!(e.comm = cg_comm_new(m, &e.ct))) goto out;
  if (plan(&e, &wbytes, &ar) || write_program(&e, outdir, wbytes, ar) || write_weights(&e, outdir, wbytes))
    goto out;
  if (cg_comm_nranks(e.comm) > 1) { /* one weights block per rank (emit_comm.c) */
    int64_t *woff = malloc(sizeof *woff * (size_t)(m->main->body->nargs + 1));
    if (!woff) abort();
    for (int i = 0; i < m->main->body->nargs; i++) {
      const vinfo *x = info(&e, m->main->body->args[i]);
      woff[i] = x->in_weights ? x->off : -1;
    }
    int wrc = cg_comm_write_weights(e.comm, outdir, e.wname, wbytes, woff);
    free(woff);
    if (wrc || (!e.entry && cg_comm_write_launch(e.comm, outdir))) goto out;
  }
  if (!e.entry && (cg_write_makefile_comm(outdir, cg_comm_nranks(e.comm) > 1) || cg_write_runtime(outdir))) goto out;
  if (o) o->nkernels = e.nkernels;
  rc = 0;
out:
  free(e.vi);
  free(e.st);
  free(e.half);
  free(e.inplace_arg);
  cg_comm_free(e.comm);
  return rc;
}
