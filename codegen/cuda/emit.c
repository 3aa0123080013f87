/* emit.c — the CUDA target's emitter: reads the same device program as the
 * CPU emitter (docs/device-program.md) and writes OUTDIR/program.cu:
 * tables of inputs, outputs and parameters, one generated kernel per
 * galv.fused / lone elementwise op (kernels_gen.c), and a straight-line
 * galv_cu_run() that enqueues, in schedule order on one compute stream, the
 * generated kernels and the runtime's library kernels (runtime/cuda/) with
 * device pointers A(off) into the arena and W(off) into the weights, shapes
 * as literals. GEMMs go to cuBLAS with their layouts worked out here (an
 * operand whose dims cannot be described by one leading dimension is packed
 * into scratch first). The chain dot -> [elementwise] -> softmax -> dot is one
 * fused attention kernel (runtime/cuda/attention.cuh) when its shapes allow.
 *
 * The CPU emitter runs first into the same directory: it checks the memory
 * plan and writes weights.bin (so both targets share one layout) and
 * program.c (`make cpu` builds the same program for the CPU). This file then
 * writes program.cu, constants.bin (the constants' part of weights.bin, for
 * `program --gen-weights`), the CUDA Makefile and runtime/cuda/. It never
 * rewrites the IR (it uses the scratch `id` fields and use counts only). */
#include <errno.h>
#include <limits.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "../../ir/attention.h"
#include "../../ir/shape_rules.h"
#include "../../ir/storage.h"
#include "../kcall.h"
#include "cuda.h"
#include "../cpu/cpu.h" /* cg_write_file: one file writer for both targets */
#include "../comm.h"    /* collectives: the decisions shared with the CPU emitter */

typedef struct {
  const gv_value *v;
  int in_weights; /* 1: weights, 0: arena, 2: state buffer (training; a pipeline stash) */
  int64_t off, nbytes;
} loc;

typedef gv_attn_chain attn_chain; /* ../../ir/attention.h */

typedef struct {
  gv_module *m;
  FILE *f;
  loc *L;
  int nv;
  bool narrow;         /* --precision bf16|fp16: f32 values stored 16-bit (every one, or per value when mixed) */
  bool f16;            /* the 16-bit dtype is f16 (--precision fp16), else bf16 */
  const char *hdt;     /* the 16-bit runtime dtype: "GALV_BF16" or "GALV_F16" */
  bool train;          /* a training step: parameters and galv.state args live in the state buffer */
  bool mixed;          /* 16-bit training: storage decided per value (the storage pass, ir/storage.h) */
  unsigned char *half; /* mixed: by value id, 1 = stored 16-bit */
  int64_t cvt;         /* scratch bytes of the current op's storage conversions (its own scratch follows) */
  cg_comm_target ct;   /* the collectives' target (per-value storage when mixed) */
  int64_t pbytes, wbytes, sbytes, scratch, flops;
  attn_chain *att;
  int natt;
  cg_comm *comm;       /* collectives and ranks (../comm.c) */
  const char *entry;   /* gv_emit_options.entry: a second entry's name, else NULL */
  int64_t const_base;  /* gv_emit_options.const_base: the constants' first offset at least (the CPU emitter's layout) */
} emitter;

/* The symbols program.cu defines besides the CPU program's (codegen/cpu/emit.c
 * program_syms, which a second entry renames too): an entry defines them as
 * galv_ENTRY_* and its run function is galv_ENTRY_program_run (no galv_cu_run). */
static const char *const cu_syms[] = {"cu_precision", "cu_params", "cu_nparams", "cu_nf32_consts", "cu_param_bytes",
                                      "cu_scratch_bytes", "cu_flops"};

/* Collectives on the GPU (../comm.h): calls go on the communication stream
 * of galv_q (runtime/cuda/comm_nccl.cu: each call first waits for an event
 * recorded on the compute stream, i.e. after the producer kernels); a sync
 * point makes the compute stream wait for an event recorded on the
 * communication stream after the calls (galv_cu_queue_join), so the host
 * never blocks mid-run; at the end of the run the host also waits for the
 * communication stream with the backend's error / timeout watch. */
#define CU_COMM_TARGET(BF16)                                                                                      \
  {.who = "cuda codegen",                                                                                         \
   .copy = "galv_cu_copy_strided",                                                                                \
   .sync = "  galv_cu_queue_join(galv_q);\n",                                                                     \
   .sync_keep = "  galv_cu_queue_join_keep(galv_q, %d);\n",                                                      \
   .end = "  galv_cu_queue_join(galv_q);\n  galv_queue_sync(galv_q);\n",                                          \
   .in_flight = "",                                                                                               \
   .scratch_alloc = "  cudaCheck(cudaMalloc((void **)&galv_scratch[%d], %lld));\n",                               \
   .scratch_free = "  if (galv_scratch[%1$d]) cudaCheck(cudaFree(galv_scratch[%1$d]));\n",                         \
   .axis_index = "  { int64_t r_ = galv_comm_rank(galv_g[%2$d]); /* pageable: staged before the call returns */\n"      \
                 "    cudaCheck(cudaMemcpyAsync(%1$s, &r_, 8, cudaMemcpyHostToDevice, galv_cu.stream)); }\n",          \
   .bf16 = BF16}
static const cg_comm_target cu_comm_f32 = CU_COMM_TARGET(0), cu_comm_bf16 = CU_COMM_TARGET(1);

static int64_t align64(int64_t x) { return (x + 63) / 64 * 64; }
static int64_t nbytes_of(const gv_type *t) { return gv_type_numel(t) * (int64_t)gv_dtype_size(t->dtype); }
static loc *L(emitter *e, const gv_value *v) { return &e->L[v->id]; }
/* element bytes as stored on the device (GEMM inputs: 16-bit whenever --precision bf16|fp16) */
static size_t ses(emitter *e, gv_dtype t) { return t == GV_DT_F32 && e->narrow ? 2 : gv_dtype_size(t); }
static const char *dt_of(emitter *e) { return e->narrow ? e->hdt : "GALV_F32"; }
/* f32 value v is stored 16-bit: every one under 16-bit inference, per the storage pass under 16-bit training */
static bool half_of(emitter *e, const gv_value *v) {
  if (v->type.dtype != GV_DT_F32 || !e->narrow) return false;
  return e->mixed ? e->half[v->id] != 0 : true;
}
static const char *hdt(emitter *e, bool half) { return half ? e->hdt : "GALV_F32"; }
static const char *vdt(emitter *e, const gv_value *v) { return hdt(e, half_of(e, v)); }
static size_t vses(emitter *e, const gv_value *v) { return half_of(e, v) ? 2 : gv_dtype_size(v->type.dtype); }
/* the storage type of v in generated code (kernels_gen.c): gf is bf16 / f16 in a 16-bit program */
static const char *vstype(const void *ctx, const gv_value *v) {
  emitter *e = (emitter *)ctx;
  return v->type.dtype != GV_DT_F32 ? cu_stype(v->type.dtype) : half_of(e, v) ? "gf" : "float";
}
static int comm_half(const void *ctx, const gv_value *v) { return half_of((emitter *)ctx, v); }

/* The dtype the storage pass stores f32 values in when narrower (bf16 or f16: one per program), else f32. */
static gv_dtype narrow_dtype(const gv_module *m) {
  if (!m->main || !m->main->body) return GV_DT_F32;
  const gv_block *b = m->main->body;
  for (int i = 0; i < b->nargs; i++)
    if (b->args[i]->type.dtype == GV_DT_F32 && gv_value_storage(b->args[i]) != GV_DT_F32) return gv_value_storage(b->args[i]);
  for (const gv_op *op = b->first; op; op = op->next)
    for (int i = 0; i < op->nres; i++)
      if (op->res[i]->type.dtype == GV_DT_F32 && gv_value_storage(op->res[i]) != GV_DT_F32) return gv_value_storage(op->res[i]);
  return GV_DT_F32;
}

static void ptr(emitter *e, const gv_value *v, int64_t extra, char *buf, size_t n) {
  const loc *l = L(e, v);
  snprintf(buf, n, "%s(%lld)", l->in_weights == 2 ? "S" : l->in_weights ? "W" : "A", (long long)(l->off + extra));
}

static void dims_lit(FILE *f, int rank, const int64_t *d) {
  fputc('{', f);
  for (int i = 0; i < rank; i++) fprintf(f, "%s%lld", i ? ", " : "", (long long)d[i]);
  if (!rank) fputc('0', f);
  fputc('}', f);
}


static void cstr(FILE *f, const char *s) {
  fputc('"', f);
  for (const unsigned char *p = (const unsigned char *)(s ? s : ""); *p; p++) {
    if (*p == '"' || *p == '\\' || *p == '?' || *p < 32 || *p >= 127) fprintf(f, "\\%03o", *p);
    else fputc(*p, f);
  }
  fputc('"', f);
}

static void ccomment(FILE *f, const char *s) {
  for (const unsigned char *p = (const unsigned char *)(s ? s : ""); *p; p++) {
    if (*p < 32 || *p == 127) fputc(' ', f);
    else if (*p == '*' && p[1] == '/') fputs("* ", f);
    else if (*p == '/' && p[1] == '*') fputs("/ ", f);
    else fputc(*p, f);
  }
}

static const char *rt_dtype(gv_dtype t) {
  switch (t) {
  case GV_DT_F32: return "GALV_F32";
  case GV_DT_F64: return "GALV_F64";
  case GV_DT_F16: return "GALV_F16";
  case GV_DT_BF16: return "GALV_BF16";
  case GV_DT_I64: return "GALV_I64";
  case GV_DT_I32: return "GALV_I32";
  case GV_DT_I16: return "GALV_I16";
  case GV_DT_I8: return "GALV_I8";
  case GV_DT_U8: return "GALV_U8";
  case GV_DT_BOOL: return "GALV_BOOL";
  default: return NULL;
  }
}

/* ---------------------------------------------------------------- locations */

/* The argument that result v updates in place (galv.arena in_place), or -1. */
static int in_place_arg(const gv_func *fn, const gv_op *ar, const gv_value *v) {
  const gv_op *ret = gv_block_terminator(fn->body);
  const int64_t *ip;
  int nip = gv_get_ints(ar, "in_place", &ip);
  if (!ret || !fn->res_updates || nip != ret->nopnds) return -1;
  for (int i = 0; i < nip; i++)
    if (ip[i] && ret->opnds[i] == v) return fn->res_updates[i];
  return -1;
}

/* Where every top-level value lives: the layout the CPU emitter wrote into
 * weights.bin (parameters in argument order, then constants in schedule
 * order, 64-byte aligned) and the arena offsets of the memory plan. A
 * training step (the same rules as codegen/cpu/emit.c): parameters live in
 * the state buffer at their weights.bin offsets, optimizer state arguments
 * after them, and an update planned in place (offset -1) at its argument's
 * slot. */
static int locate(emitter *e) {
  gv_module *m = e->m;
  gv_func *fn = m->main;
  gv_block *body = fn->body;
  const gv_op *ar = body->first;
  const int64_t *argoff, *offs;
  if (!ar || ar->code != GV_OP_ARENA || gv_get_ints(ar, "arg_offsets", &argoff) != body->nargs)
    return gv_error(m, "cuda codegen: the program has no memory plan (run the fuse and memory-plan passes first)");
  int n = body->nargs;
  for (const gv_op *op = body->first; op; op = op->next) n += op->nres;
  e->L = calloc((size_t)n + 1, sizeof *e->L);
  if (!e->L) abort();
  int64_t w = 0;
  for (int i = 0; i < body->nargs; i++) {
    gv_value *v = body->args[i];
    v->id = e->nv;
    loc *l = &e->L[e->nv++];
    *l = (loc){v, 0, argoff[i], gv_value_storage_bytes(v)}; /* a data input: its arena slot */
    if (fn->arg_is_param[i]) /* the weights keep weights.bin's f32 layout (converted in place on upload) */
      l->in_weights = e->train ? 2 : 1, l->off = w, l->nbytes = nbytes_of(&v->type), w = align64(w + l->nbytes);
    else if (fn->arg_is_state && fn->arg_is_state[i])
      l->in_weights = 2, l->nbytes = gv_value_storage_bytes(v); /* not training: a pipeline stash (S(off) from 0), as stored */
  }
  e->pbytes = w, e->sbytes = e->train ? w : 0;
  for (int i = 0; i < body->nargs; i++)
    if (e->L[i].in_weights == 2 && !fn->arg_is_param[i]) e->L[i].off = e->sbytes, e->sbytes = align64(e->sbytes + e->L[i].nbytes);
  if (e->const_base > w) w = e->const_base; /* a backward entry's constants after the forward entry's weights */
  for (const gv_op *op = body->first; op; op = op->next) {
    if (op->code == GV_OP_CONSTANT) {
      gv_value *v = op->res[0];
      v->id = e->nv;
      e->L[e->nv++] = (loc){v, 1, w, nbytes_of(&v->type)};
      w = align64(w + nbytes_of(&v->type));
      continue;
    }
    if (op->nres == 0) continue;
    if (gv_get_ints(op, "offsets", &offs) != op->nres) return gv_error_op(m, op, "cuda codegen: op has no 'offsets'");
    for (int i = 0; i < op->nres; i++) {
      gv_value *v = op->res[i];
      v->id = e->nv;
      loc *l = &e->L[e->nv++];
      *l = (loc){v, 0, offs[i], gv_value_storage_bytes(v)}; /* the plan's bytes: 2 per element when stored 16-bit */
      int a = offs[i] == -1 && e->train && !(gv_ops[op->code].flags & GV_VIEW) ? in_place_arg(fn, ar, v) : -1;
      if (a >= 0) {
        if (e->L[a].in_weights != 2 || e->L[a].nbytes != l->nbytes)
          return gv_error_op(m, op, "cuda codegen: memory plan error: an in-place update does not match its argument");
        l->in_weights = 2, l->off = e->L[a].off;
      } else if (gv_ops[op->code].flags & GV_VIEW) {
        l->in_weights = L(e, op->opnds[0])->in_weights, l->off = L(e, op->opnds[0])->off;
      }
    }
  }
  e->wbytes = w;
  return 0;
}

/* ---------------------------------------------------------------- GEMM layouts */

/* Merges a dim group (outer to inner) into one (size, stride) per operand;
 * false when the strides do not chain. Size-1 dims are dropped. */
static bool merge(const cg_dim_group *g, int which, int64_t *size, int64_t *stride) {
  int64_t sz = 1, st = 0;
  bool have = false;
  for (int i = g->n - 1; i >= 0; i--) {
    int64_t s = which ? g->sb[i] : g->sa[i];
    if (g->size[i] == 1) continue;
    if (!have) sz = g->size[i], st = s, have = true;
    else if (s == st * sz) sz *= g->size[i];
    else return false;
  }
  *size = sz;
  *stride = have ? st : 0;
  return true;
}

typedef struct {
  int64_t batch, M, N, K;
  int ta, tb;
  int64_t lda, ldb, sa, sb;
  bool pack_a, pack_b;
  cg_dim_group bg, mg, kg, ng; /* for packing */
} gemm_plan;

/* A row-major (rows x cols) view with strides (rs, cs): returns 0 (stored as
 * is, ld = rs), 1 (stored transposed, ld = cs) or -1 (needs packing). */
static int layout(int64_t rows, int64_t cols, int64_t rs, int64_t cs, int64_t *ld) {
  if (cols == 1) cs = 1;
  if (rows == 1) rs = cols;
  if (cs == 1 && rs >= cols) return *ld = rs, 0;
  if (rs == 1 && cs >= rows) return *ld = cs, 1;
  return -1;
}

/* The cuBLAS call of a dot whose dim groups kc holds (../kcall.c): merged
 * batch / M / N / K, each operand as is, transposed or packed into scratch. */
static int plan_dot(emitter *e, const gv_op *op, const cg_kcall *kc, gemm_plan *p) {
  gv_module *m = e->m;
  memset(p, 0, sizeof *p);
  p->bg = kc->bg, p->mg = kc->mg, p->kg = kc->kg, p->ng = kc->ng;
  p->batch = cg_prod(p->bg.size, 0, p->bg.n), p->M = cg_prod(p->mg.size, 0, p->mg.n);
  p->K = cg_prod(p->kg.size, 0, p->kg.n), p->N = cg_prod(p->ng.size, 0, p->ng.n);
  if (p->M > INT_MAX || p->N > INT_MAX || p->K > INT_MAX || p->batch > INT_MAX)
    return gv_error_op(m, op, "cuda codegen: dot dimensions above 2^31 are not supported");
  int64_t s1 = 0, s2 = 0, sm = 0, ska = 0, skb = 0, sn = 0;
  bool a_ok = merge(&p->bg, 0, &s1, &p->sa) && merge(&p->mg, 0, &s2, &sm) && merge(&p->kg, 0, &s2, &ska);
  bool b_ok = merge(&p->bg, 1, &s1, &p->sb) && merge(&p->kg, 1, &s2, &skb) && merge(&p->ng, 1, &s2, &sn);
  int ta = a_ok ? layout(p->M, p->K, sm, ska, &p->lda) : -1;
  int tb = b_ok ? layout(p->K, p->N, skb, sn, &p->ldb) : -1;
  if (ta < 0) p->pack_a = true, ta = 0, p->lda = p->K, p->sa = p->M * p->K;
  if (tb < 0) p->pack_b = true, tb = 0, p->ldb = p->N, p->sb = p->K * p->N;
  if (p->batch == 1) p->sa = p->sb = 0;
  p->ta = ta, p->tb = tb;
  int64_t es = (int64_t)ses(e, GV_DT_F32), need = 0;
  if (p->pack_a) need += align64(p->batch * p->M * p->K * es);
  if (p->pack_b) need += align64(p->batch * p->K * p->N * es);
  if (e->cvt + need > e->scratch) e->scratch = e->cvt + need;
  return 0;
}

/* Packs an operand into scratch as [batch..., outer..., inner...] contiguous. */
static void emit_pack(emitter *e, const cg_dim_group *g1, const cg_dim_group *g2, const cg_dim_group *g3, int which, const char *src,
                      const char *dst) {
  int64_t d[3 * GV_MAX_RANK], s[3 * GV_MAX_RANK];
  int r = 0;
  const cg_dim_group *gs[3] = {g1, g2, g3};
  for (int k = 0; k < 3; k++)
    for (int i = 0; i < gs[k]->n; i++) d[r] = gs[k]->size[i], s[r++] = which ? gs[k]->sb[i] : gs[k]->sa[i];
  fprintf(e->f, "  { static const int64_t d[] = "), dims_lit(e->f, r, d);
  fprintf(e->f, ", s[] = "), dims_lit(e->f, r, s);
  fprintf(e->f, ";\n    galv_cu_copy_strided(%s, %s, %zu, %d, d, s); }\n", dst, src, ses(e, GV_DT_F32), r);
}

static int emit_dot(emitter *e, const gv_op *op, const cg_kcall *kc, const char *pa, const char *pb, const char *pc) {
  gemm_plan p;
  if (plan_dot(e, op, kc, &p)) return -1;
  FILE *f = e->f;
  char a[64], b[64];
  snprintf(a, sizeof a, "%s", pa);
  snprintf(b, sizeof b, "%s", pb);
  int64_t es = (int64_t)ses(e, GV_DT_F32); /* GEMM inputs: 16-bit whenever --precision bf16|fp16 */
  if (p.pack_a) {
    snprintf(a, sizeof a, "(galv_cu.scratch + %lld)", (long long)e->cvt);
    emit_pack(e, &p.bg, &p.mg, &p.kg, 0, pa, a);
  }
  if (p.pack_b) {
    snprintf(b, sizeof b, "(galv_cu.scratch + %lld)", (long long)(e->cvt + (p.pack_a ? align64(p.batch * p.M * p.K * es) : 0)));
    emit_pack(e, &p.bg, &p.kg, &p.ng, 1, pb, b);
  }
  fprintf(f, "  { static const galv_cu_gemm_desc g = {%lld, %lld, %lld, %lld, %d, %d, %lld, %lld, %lld, %lld};\n",
          (long long)p.batch, (long long)p.M, (long long)p.N, (long long)p.K, p.ta, p.tb, (long long)p.lda,
          (long long)p.ldb, (long long)p.sa, (long long)p.sb);
  if (half_of(e, op->res[0]) == e->narrow) fprintf(f, "    galv_cu_gemm(%s, &g, %s, %s, %s); }\n", dt_of(e), a, b, pc);
  else fprintf(f, "    galv_cu_gemm_to(%s, %s, &g, %s, %s, %s); }\n", dt_of(e), vdt(e, op->res[0]), a, b, pc);
  e->flops += 2 * p.batch * p.M * p.N * p.K;
  return 0;
}

enum { NP = GV_MAX_RANK * 4 + 4 }; /* pointer expressions of one op */

/* The CUDA side of the shared kernel-call table (../kcall.h): element sizes
 * as stored (16-bit) and device pointers. */
static size_t kc_es(const void *ctx, const gv_value *v) { return vses((emitter *)ctx, v); }
static void kc_ptr(const void *ctx, const gv_value *v, int64_t off, char *buf, size_t n) { ptr((emitter *)ctx, v, off, buf, n); }

/* The kernels of the shared table that runtime/cuda/ has (all of them). */
static bool cu_has(cg_kernel k) { return k != CG_K_NONE; }

/* A filled kernel call as a call into runtime/cuda/kernels*.cu: the storage
 * dtype first, the kernel number k last where the kernel flags errors;
 * p: the slots' pointers (after storage conversions). */
static int print_kcall(emitter *e, const gv_op *op, const cg_kcall *kc, int k, char p[][64]) {
  FILE *f = e->f;
  int np = op->nopnds + op->nres;
  cg_kcall_target t = {"galv_cu_", kc_es, kc_ptr, e};
  if (cg_kcall_print_move(f, op, kc, &t, p, np < NP ? np : NP) == 0) return 0;
  const gv_value *x = cg_kcall_value(op, kc->src), *y = cg_kcall_value(op, kc->dst);
  size_t es = vses(e, cg_kcall_value(op, kc->es_slot));
  const char *dst = p[kc->dst], *src = p[kc->src];
  switch (kc->kernel) {
  case CG_K_GATHER:
    fprintf(f, "  galv_cu_gather(%s, %s, %s, %d, %lld, %lld, %lld, %lld, %d);\n", dst, src, p[kc->aux[0]], kc->idx_es,
            (long long)kc->count, (long long)kc->outer, (long long)kc->len, (long long)(kc->inner * (int64_t)es), k);
    return 0;
  case CG_K_TRILU:
    if (kc->kdiag_slot >= 0) return gv_error_op(e->m, op, "cuda codegen: trilu k must be a compile-time constant");
    fprintf(f, "  galv_cu_trilu(%s, %s, %zu, %lld, %lld, %lld, %lld, %d);\n", dst, src, es, (long long)kc->outer,
            (long long)kc->len, (long long)kc->inner, (long long)kc->kdiag, kc->kind);
    return 0;
  case CG_K_REDUCE:
    fprintf(f, "  { static const int64_t d[] = "), cg_dims_lit(f, kc->rank, kc->dims);
    fprintf(f, ", s[] = "), cg_dims_lit(f, kc->rank, kc->strides);
    if (half_of(e, x) == half_of(e, y))
      fprintf(f, ";\n    galv_cu_reduce(%s, %s, %s, %d, d, s, %lld, %d); }\n", vdt(e, y), dst, src, kc->rank,
              (long long)kc->count, kc->kind);
    else /* 16-bit training: e.g. a 16-bit activation gradient summed into an fp32 bias gradient */
      fprintf(f, ";\n    galv_cu_reduce_to(%s, %s, %s, %s, %d, d, s, %lld, %d); }\n", vdt(e, x), vdt(e, y), dst, src,
              kc->rank, (long long)kc->count, kc->kind);
    return 0;
  case CG_K_DROPOUT:
    cg_dropout_lit(f, kc);
    fprintf(f, "    galv_cu_dropout(%s, %s, %s, &d, %s%s, galv_rt_step, galv_rt_mb); }\n", vdt(e, y), dst, src,
            kc->aux[0] >= 0 ? "(const int64_t *)" : "", kc->aux[0] >= 0 ? p[kc->aux[0]] : "NULL");
    return 0;
  case CG_K_CUMSUM: /* a float as stored (f32 or the program's 16-bit type), an integer as its own dtype */
    if (y->type.dtype == GV_DT_F32 && half_of(e, x) != half_of(e, y))
      return gv_error_op(e->m, op, "cuda codegen: cumsum with its input and result stored in different dtypes is not supported");
    fprintf(f, "  galv_cu_cumsum(%s, %s, %s, %lld, %lld, %lld, %d, %d);\n",
            y->type.dtype == GV_DT_F32 ? vdt(e, y) : cg_rt_dtype(y->type.dtype), dst, src, (long long)kc->outer,
            (long long)kc->len, (long long)kc->inner, kc->kind, kc->kind2);
    return 0;
  case CG_K_SOFTMAX:
    fprintf(f, "  galv_cu_softmax(%s, %s, %s, %lld, %lld, %lld, %d);\n", vdt(e, y), dst, src, (long long)kc->outer,
            (long long)kc->len, (long long)kc->inner, kc->kind);
    return 0;
  case CG_K_NORM:
    fprintf(f, "  galv_cu_norm(%s, %s, %s, %s, %lld, %s, %lld, %lld, %lld, %af, %d);\n", vdt(e, y), dst, src, p[kc->aux[0]],
            (long long)kc->count, kc->aux[1] >= 0 ? p[kc->aux[1]] : "NULL", (long long)kc->count2, (long long)kc->outer,
            (long long)kc->len, kc->eps, kc->kind);
    return 0;
  case CG_K_DOT: return emit_dot(e, op, kc, src, p[kc->aux[0]], dst);
  case CG_K_CONV: {
    cg_conv_lit(f, &kc->conv);
    fprintf(f, "    galv_cu_conv(%s, &d, %s, %s, %s, %s); }\n", vdt(e, y), src, p[kc->aux[0]],
            kc->aux[1] >= 0 ? p[kc->aux[1]] : "NULL", dst);
    const gv_type *w = &op->opnds[kc->aux[0]]->type;
    e->flops += 2 * gv_type_numel(&y->type) * cg_prod(w->dims, 1, w->rank);
    return 0;
  }
  case CG_K_GATHER_GRAD:
    fprintf(f, "  galv_cu_gather_grad(%s, (float *)%s, %s, %s, %d, %lld, %lld, %lld, %lld, %d);\n", vdt(e, x), dst, src,
            p[kc->aux[0]], kc->idx_es, (long long)kc->count, (long long)kc->outer, (long long)kc->len,
            (long long)kc->inner, k);
    return 0;
  case CG_K_SCATTER_STRIDED: /* an empty dy: rank 0 (the kernel only zeroes dst) */
    fprintf(f, "  { static const int64_t d[] = "), cg_dims_lit(f, kc->rank, kc->dims);
    fprintf(f, ", s[] = "), cg_dims_lit(f, kc->rank, kc->strides);
    fprintf(f, ";\n    galv_cu_scatter_strided(%s, %lld, %lld, %s, %zu, %d, d, s); }\n", dst,
            (long long)(gv_type_numel(&y->type) * (int64_t)es), (long long)kc->base, src, es,
            gv_type_numel(&x->type) ? kc->rank : 0);
    return 0;
  case CG_K_CROSS_ENTROPY:
  case CG_K_CROSS_ENTROPY_GRAD: {
    if (kc->count > INT_MAX) return gv_error_op(e->m, op, "cuda codegen: cross_entropy over more than 2^31 rows");
    if (e->cvt + (kc->count + 2) * 8 > e->scratch) e->scratch = e->cvt + (kc->count + 2) * 8;
    if (kc->kernel == CG_K_CROSS_ENTROPY_GRAD)
      fprintf(f, "  galv_cu_cross_entropy_grad(%s, %s, (const float *)%s, %s, (const int64_t *)%s, %lld, %lld, %lldLL, galv_cu.scratch + %lld, %d);\n",
              vdt(e, x), dst, p[kc->aux[1]], src, p[kc->aux[0]], (long long)kc->count, (long long)kc->len,
              (long long)kc->ignore, (long long)e->cvt, k);
    else
      fprintf(f, "  galv_cu_cross_entropy(%s, (float *)%s, %s, (const int64_t *)%s, %lld, %lld, %lldLL, galv_cu.scratch + %lld, %d);\n",
              vdt(e, x), dst, src, p[kc->aux[0]], (long long)kc->count, (long long)kc->len, (long long)kc->ignore,
              (long long)e->cvt, k);
    return 0;
  }
  case CG_K_POOL:
  case CG_K_POOL_GRAD: {
    bool pg = kc->kernel == CG_K_POOL_GRAD;
    cg_conv_lit(f, &kc->conv);
    fprintf(f, "    static const int64_t pe[] = "), cg_dims_lit(f, kc->rank, kc->dims);
    if (!pg) fprintf(f, ";\n    galv_cu_pool(%s, &d, pe, %d, %d, %s, %s); }\n", vdt(e, y), kc->kind, kc->kind2, src, dst);
    else
      fprintf(f, ";\n    galv_cu_pool_grad(%s, &d, pe, %d, %d, %s, %s, %s); }\n", vdt(e, y), kc->kind, kc->kind2, src,
              p[kc->aux[0]], dst);
    return 0;
  }
  case CG_K_CONV_GRAD_INPUT:
  case CG_K_CONV_GRAD_WEIGHT: {
    bool wg = kc->kernel == CG_K_CONV_GRAD_WEIGHT;
    const char *dt = vdt(e, op->opnds[wg ? 1 : 0]); /* dy's storage: x and dx follow it, w and dw are fp32 */
    cg_conv_lit(f, &kc->conv);
    if (wg) fprintf(f, "    galv_cu_conv_grad_weight(%s, &d, %s, %s, (float *)%s); }\n", dt, src, p[kc->aux[0]], dst);
    else fprintf(f, "    galv_cu_conv_grad_input(%s, &d, %s, (const float *)%s, %s); }\n", dt, src, p[kc->aux[0]], dst);
    const gv_type *dy = &op->opnds[wg ? 1 : 0]->type, *cw = wg ? &y->type : &op->opnds[1]->type;
    e->flops += 2 * gv_type_numel(dy) * cg_prod(cw->dims, 1, cw->rank);
    return 0;
  }
  case CG_K_GATHER_ND:
  case CG_K_SCATTER_ND:
    if (kc->kind && half_of(e, y))
      return gv_error_op(e->m, op, "cuda codegen: scatter_nd %s on 16-bit storage is not supported",
                         gv_get_str(op, "reduction", "none"));
    fprintf(f, "  { static const int64_t d[] = "), cg_dims_lit(f, kc->rank, kc->dims);
    if (kc->kernel == CG_K_GATHER_ND)
      fprintf(f, ";\n    galv_cu_gather_nd(%s, %s, %s, %d, %lld, %d, d, %lld, %d); }\n", dst, src, p[kc->aux[0]],
              kc->idx_es, (long long)kc->count, kc->rank, (long long)(kc->inner * (int64_t)es), k);
    else
      fprintf(f, ";\n    galv_cu_scatter_nd(%s, %s, %lld, %s, %d, %s, %lld, %d, d, %lld, %d, %d); }\n", dst, src,
              (long long)(gv_type_numel(&x->type) * (int64_t)es), p[kc->aux[0]], kc->idx_es, p[kc->aux[1]],
              (long long)kc->count, kc->rank, (long long)(kc->inner * (int64_t)es), kc->kind, k);
    return 0;
  case CG_K_TOPK: /* x and the values each in their storage (f32 or 16-bit) */
    fprintf(f, "  galv_cu_topk(%s, %s, %s, (int64_t *)%s, %s, %lld, %lld, %lld, %lld, %d);\n", vdt(e, x), vdt(e, y), dst,
            p[kc->aux[0]], src, (long long)kc->outer, (long long)kc->len, (long long)kc->inner, (long long)kc->count,
            kc->kind);
    return 0;
  case CG_K_GATHER_ELEMENTS:
  case CG_K_SCATTER_ELEMENTS:
    if (kc->kind && half_of(e, y))
      return gv_error_op(e->m, op, "cuda codegen: scatter_elements %s on 16-bit storage is not supported",
                         gv_get_str(op, "reduction", "none"));
    fprintf(f, "  { static const int64_t d[] = "), cg_dims_lit(f, kc->rank, kc->dims);
    fprintf(f, ", s[] = "), cg_dims_lit(f, kc->rank, kc->strides);
    if (kc->kernel == CG_K_GATHER_ELEMENTS)
      fprintf(f, ";\n    galv_cu_gather_elements(%s, %s, %s, %d, %d, d, s, %d, %lld, %zu, %d); }\n", dst, src,
              p[kc->aux[0]], kc->idx_es, kc->rank, kc->axis, (long long)kc->len, es, k);
    else
      fprintf(f, ";\n    galv_cu_scatter_elements(%s, %s, %lld, %s, %d, %s, %d, d, s, %d, %lld, %zu, %d, %d); }\n", dst,
              src, (long long)(gv_type_numel(&x->type) * (int64_t)es), p[kc->aux[0]], kc->idx_es, p[kc->aux[1]],
              kc->rank, kc->axis, (long long)kc->len, es, kc->kind, k);
    return 0;
  default:
    return gv_error_op(e->m, op, "cuda codegen: the %s kernel is not in the cuda runtime", cg_kernel_names[kc->kernel]);
  }
}

/* One non-elementwise op as a runtime library call; k is its kernel number;
 * p: the pointers of its operands then results (after storage conversions). */
static int emit_call(emitter *e, const gv_op *op, int k, char p[][64]) {
  if (op->code == GV_OP_ATTENTION || op->code == GV_OP_ATTENTION_GRAD) { /* runtime/cuda/fused_attention.cuh */
    gv_attn_geo g;
    if (e->narrow && !e->mixed)
      return gv_error_op(e->m, op, "cuda codegen: galv.%s in a 16-bit inference program (a training op)", gv_ops[op->code].name);
    if (gv_attn_geometry(e->m, op, &g)) return gv_error_op(e->m, op, "cuda codegen: galv.%s needs static types", gv_ops[op->code].name);
    bool fwd = op->code == GV_OP_ATTENTION;
    const char *fdt[8];
    for (int i = g.fn0, n = 0; n < g.nfn && n < 8; i++, n++)
      fdt[n] = op->opnds[i]->type.dtype == GV_DT_BOOL ? "GALV_BOOL" : half_of(e, op->opnds[i]) ? e->hdt : "GALV_F32";
    if (!e->mixed) return cg_fattn_call(e->f, e->m, op, &g, "galv_cu_fattn", "galv_cu_fattn_grad", "float", fdt, "", p);
    /* 16-bit training (the operands converted to the kernel's storage by emit_kernel): the fp32 accumulators
     * of o (forward) or dq, dk, dv (backward) in scratch after the conversions */
    int64_t B = 1;
    for (int x = 0; x < g.nb; x++) B *= g.bd[x];
    int64_t need = fwd ? align64(B * g.Sq * g.Dv * 4) : align64(B * g.Sq * g.D * 4) + align64(B * g.Sk * g.D * 4) + align64(B * g.Sk * g.Dv * 4);
    int64_t at = align64(e->cvt);
    if (at + need > e->scratch) e->scratch = at + need;
    char tail[64];
    snprintf(tail, sizeof tail, ", galv_cu.scratch + %lld", (long long)at);
    return cg_fattn_call(e->f, e->m, op, &g, "galv_cu_fattn", "galv_cu_fattn_grad", e->f16 ? "__half" : "__nv_bfloat16", fdt, tail, p);
  }
  if (cu_has(cg_kcall_kernel(op->code))) { /* the shared kernel-call table (../kcall.c) */
    cg_kcall kc;
    if (cg_kcall_fill(e->m, op, "cuda codegen", &kc)) return -1;
    return print_kcall(e, op, &kc, k, p);
  }
  return gv_error_op(e->m, op, "cuda codegen: galv.%s is not supported by the cuda target yet%s", gv_ops[op->code].name,
                     op->code == GV_OP_SHAPE || op->code == GV_OP_RANGE || op->code == GV_OP_CONSTANT_OF_SHAPE ||
                             op->code == GV_OP_IF
                         ? " (it should have been folded: are the input shapes bound?)"
                         : " (use --target cpu)");
}

/* op as a runtime library call (collectives: ../comm.c). Under 16-bit
 * training an operand stored otherwise than the kernel needs is converted
 * into scratch first, and a result is written to scratch and converted
 * into its own storage after the call (galv_cu_from_f32 / galv_cu_to_f32).
 * A kernel that moves elements (cg_kcall_moves) needs every float slot in
 * its element-size slot's storage: a 16-bit result gathered from an fp32
 * parameter (a pipeline stage's crossing value) is gathered into fp32
 * scratch and rounded into its slot, as on the CPU target. */
static int emit_kernel(emitter *e, const gv_op *op, int k) {
  FILE *f = e->f;
  char p[NP][64];
  int np = op->nopnds + op->nres, post[NP], npost = 0;
  int64_t at[NP];
  if (np > NP && op->code != GV_OP_CONCAT && op->code != GV_OP_SPLIT) return gv_error_op(e->m, op, "cuda codegen: too many operands");
  for (int i = 0; i < op->nopnds && i < NP; i++) ptr(e, op->opnds[i], 0, p[i], sizeof p[i]);
  for (int i = 0; i < op->nres && op->nopnds + i < NP; i++) ptr(e, op->res[i], 0, p[op->nopnds + i], sizeof p[0]);
  e->cvt = 0;
  if (cg_comm_is_op(op)) return cg_emit_comm_op(e->comm, f, op, p); /* collectives: ../comm.c */
  int ks = -1; /* a move kernel's storage (1: 16-bit), its element-size slot's */
  if (e->mixed && cu_has(cg_kcall_kernel(op->code))) {
    cg_kcall kc;
    if (cg_kcall_fill(e->m, op, "cuda codegen", &kc)) return -1;
    const gv_value *es = kc.kernel != CG_K_NONE && cg_kcall_moves(&kc) ? cg_kcall_value(op, kc.es_slot) : NULL;
    if (es && es->type.dtype == GV_DT_F32) ks = half_of(e, es);
  }
  for (int i = 0; i < np; i++) {
    const gv_value *v = i < op->nopnds ? op->opnds[i] : op->res[i - op->nopnds];
    int want = !e->mixed ? -1 : ks < 0 ? cu_kernel_storage(op, i, e->half) : v->type.dtype == GV_DT_F32 ? ks : -1;
    if (want < 0 || want == (int)half_of(e, v)) continue;
    if (i >= NP)
      return gv_error_op(e->m, op, "cuda codegen: 16-bit training: galv.%s with more than %d pieces of mixed "
                                   "storage is not supported", gv_ops[op->code].name, NP);
    int64_t n = gv_type_numel(&v->type);
    at[i] = e->cvt;
    e->cvt += align64(n * (want ? 2 : 4));
    if (i >= op->nopnds) post[npost++] = i;
    else if (want)
      fprintf(f, "  galv_cu_from_f32(%s, galv_cu.scratch + %lld, (const float *)%s, %lld);\n", e->hdt, (long long)at[i], p[i], (long long)n);
    else fprintf(f, "  galv_cu_to_f32(%s, (float *)(galv_cu.scratch + %lld), %s, %lld);\n", e->hdt, (long long)at[i], p[i], (long long)n);
    snprintf(p[i], sizeof p[i], "(galv_cu.scratch + %lld)", (long long)at[i]);
  }
  if (e->cvt > e->scratch) e->scratch = e->cvt;
  int rc = emit_call(e, op, k, p);
  for (int j = 0; j < npost && !rc; j++) {
    int i = post[j];
    const gv_value *v = op->res[i - op->nopnds];
    char dst[64];
    ptr(e, v, 0, dst, sizeof dst);
    if (half_of(e, v)) fprintf(f, "  galv_cu_from_f32(%s, %s, (const float *)%s, %lld);\n", e->hdt, dst, p[i], (long long)gv_type_numel(&v->type));
    else fprintf(f, "  galv_cu_to_f32(%s, (float *)%s, %s, %lld);\n", e->hdt, dst, p[i], (long long)gv_type_numel(&v->type));
  }
  e->cvt = 0;
  return rc;
}

/* ---------------------------------------------------------------- attention */

/* The chain's match (dot -> [one elementwise op] -> softmax -> dot, the
 * conditions in ir/attention.h) is shared with the cost model, which prices
 * the same chains without their score bytes. */

/* The generated kernels' and attention functors' name prefix: a second
 * entry (program_bwd.cu, program_wgt.cu) links into one executable with the
 * program, whose kernels are numbered alike ("bwd_ew7" beside "ew7"). */
static const char *kprefix(const emitter *e) {
  static char b[40];
  if (!e->entry) return "";
  snprintf(b, sizeof b, "%s_", e->entry);
  return b;
}

static int emit_attention(emitter *e, const attn_chain *c, int idx, int k) {
  FILE *f = e->f;
  const gv_op *d1 = c->d1, *d2 = c->d2;
  const gv_type *q = &d1->opnds[0]->type, *kt = &d1->opnds[1]->type, *v = &d2->opnds[1]->type;
  int nb = q->rank - 2;
  int64_t qs[GV_MAX_RANK], ks[GV_MAX_RANK], vs[GV_MAX_RANK];
  cg_strides_of(q, qs), cg_strides_of(kt, ks), cg_strides_of(v, vs);
  const int64_t *qc, *kc, *vc;
  gv_get_ints(d1, "lhs_contract", &qc), gv_get_ints(d1, "rhs_contract", &kc), gv_get_ints(d2, "rhs_contract", &vc);
  int qd = gv_norm_axis(qc[0], q->rank), kd = gv_norm_axis(kc[0], kt->rank), vj = (int)vc[0];
  int qi = qd == nb ? nb + 1 : nb, kj = kd == nb ? nb + 1 : nb, vd = vj == nb ? nb + 1 : nb;
  int64_t Sq = q->dims[qi], Sk = kt->dims[kj], D = q->dims[qd], Dv = v->dims[vd];
  fprintf(f, "  { static const galv_attn_desc a = {%d, ", nb);
  dims_lit(f, nb, q->dims), fputs(", ", f), dims_lit(f, nb, qs), fputs(", ", f), dims_lit(f, nb, ks), fputs(", ", f);
  dims_lit(f, nb, vs);
  fprintf(f, ", %lld, %lld, %lld, %lld, %lld, %lld, %lld, %lld, %lld, %lld};\n", (long long)Sq, (long long)Sk,
          (long long)D, (long long)Dv, (long long)qs[qi], (long long)qs[qd], (long long)ks[kj], (long long)ks[kd],
          (long long)vs[vj], (long long)vs[vd]);
  char pq[64], pk[64], pv[64], po[64];
  ptr(e, d1->opnds[0], 0, pq, sizeof pq), ptr(e, d1->opnds[1], 0, pk, sizeof pk), ptr(e, d2->opnds[1], 0, pv, sizeof pv);
  ptr(e, d2->res[0], 0, po, sizeof po);
  /* the output may take bytes of Q or K (dead after the first dot in the plan): then it goes through scratch */
  const loc *o = L(e, d2->res[0]);
  bool overlap = false;
  for (int i = 0; i < 2; i++) {
    const loc *in = L(e, d1->opnds[i]);
    overlap |= !in->in_weights && o->off < in->off + in->nbytes && in->off < o->off + o->nbytes;
  }
  if (overlap && o->nbytes > e->scratch) e->scratch = o->nbytes;
  if (c->mid) {
    fprintf(f, "    %sattn_score%d sc = {", kprefix(e), idx);
    for (int i = 0; i < c->mid->nopnds; i++) {
      if (i == c->score_opnd) continue;
      char b[64];
      ptr(e, c->mid->opnds[i], 0, b, sizeof b);
      fprintf(f, "(const %s *)%s, ", e->mixed ? vstype(e, c->mid->opnds[i]) : cu_stype(c->mid->opnds[i]->type.dtype), b);
    }
    fprintf(f, "galv_cu.err, %d};\n", k);
  } else {
    fprintf(f, "    galv_attn_identity sc;\n");
  }
  fprintf(f, "    galv_attention<gf>(&a, %s, %s, %s, %s, sc);\n", pq, pk, pv, overlap ? "galv_cu.scratch" : po);
  if (overlap)
    fprintf(f, "    cudaCheck(cudaMemcpyAsync(%s, galv_cu.scratch, %lld, cudaMemcpyDeviceToDevice, galv_cu.stream));\n", po,
            (long long)((int64_t)ses(e, GV_DT_F32) * gv_type_numel(&d2->res[0]->type)));
  fprintf(f, "  }\n");
  int64_t nbt = cg_prod(q->dims, 0, nb);
  e->flops += 2 * nbt * Sq * Sk * (D + Dv);
  return 0;
}

/* ---------------------------------------------------------------- program.cu */

static void io_entry(emitter *e, const char *name, const gv_value *v) {
  const loc *x = L(e, v);
  FILE *f = e->f;
  fputs("  {", f);
  cstr(f, name);
  fprintf(f, ", %s, %d, ", rt_dtype(v->type.dtype), v->type.rank);
  dims_lit(f, v->type.rank, v->type.dims);
  /* storage: a mixed program's f32 input or output held 16-bit in the arena (a pipeline stage's crossing values:
   * runtime/pipe.c moves their 2-byte elements); 0 otherwise (the inference runtime converts by galv_cu_precision) */
  bool h = e->mixed && !x->in_weights && half_of(e, v);
  fprintf(f, ", %d, %lld, %lld, %s},\n", x->in_weights, (long long)x->off, (long long)nbytes_of(&v->type), /* host bytes */
          h ? e->hdt : "0");
}

/* The state table of a training step (galv_rt.h galv_state_entry, the same
 * as the CPU program's: runtime/train.c reads it on both targets) and the
 * one-rank tables of galv_spmd.h that train.c and spmd.c read. Every
 * program.cu has them (empty state for inference). */
static int state_tables(emitter *e, const gv_op *ret) {
  gv_func *fn = e->m->main;
  gv_block *body = fn->body;
  FILE *f = e->f;
  int n = 0;
  fprintf(f, "const int galv_training = %d;\nconst galv_state_entry galv_state[] = {\n", e->train);
  for (int a = 0; a < body->nargs; a++) {
    const loc *x = &e->L[a];
    if (x->in_weights != 2) continue;
    int64_t from = -1;
    for (int i = 0; fn->res_updates && i < ret->nopnds; i++) {
      if (fn->res_updates[i] != a) continue;
      const loc *r = L(e, ret->opnds[i]);
      if (r->in_weights == 2 && r->off == x->off) break; /* written in place */
      if (r->in_weights != 0)
        return gv_error_op(e->m, ret, "cuda codegen: the update of '%s' is not in the arena (not supported)", fn->arg_names[a]);
      from = r->off;
      break;
    }
    fputs("  {", f);
    cstr(f, fn->arg_names[a] ? fn->arg_names[a] : "");
    fprintf(f, ", %s, %d, ", rt_dtype(x->v->type.dtype), x->v->type.rank);
    dims_lit(f, x->v->type.rank, x->v->type.dims);
    fprintf(f, ", %d, %lld, %lld, %lld},\n", fn->arg_is_param[a] ? 1 : 0, (long long)x->off, (long long)x->nbytes,
            (long long)from);
    n++;
  }
  if (!n) fprintf(f, "  {}\n"); /* C++: {0} would warn (missing initializers) */
  fprintf(f, "};\nconst int galv_nstate = %d;\nconst int64_t galv_state_bytes = %lld;\nconst int64_t galv_param_bytes = %lld;\n",
          n, (long long)e->sbytes, (long long)(e->train ? e->pbytes : 0));
  /* ranks, split tables, groups, queue and scratch of the collectives (../comm.c) */
  return cg_comm_decls(e->comm, f);
}

static bool skipped(emitter *e, const gv_op *op, int *head) {
  *head = -1;
  for (int i = 0; i < e->natt; i++) {
    const attn_chain *c = &e->att[i];
    if (op == c->d2) return *head = i, false;
    if (op == c->d1 || op == c->mid || op == c->sm) return true;
  }
  return false;
}

static bool is_call(const gv_op *op) {
  gv_opcode k = op->code;
  return !(k == GV_OP_ARENA || k == GV_OP_CONSTANT || k == GV_OP_RETURN || (gv_ops[k].flags & GV_VIEW));
}

static int write_program(emitter *e, const char *dir, int *nkernels) {
  gv_module *m = e->m;
  gv_func *fn = m->main;
  gv_block *body = fn->body;
  char path[4096];
  if (e->entry) snprintf(path, sizeof path, "%s/program_%s.cu", dir, e->entry);
  else snprintf(path, sizeof path, "%s/program.cu", dir);
  galv_wfile w; /* written atomically (cg_open_file) */
  FILE *f = cg_open_file(&w, path);
  if (!f) return -1;
  e->f = f;
  const char *src = strrchr(m->source, '/');
  fprintf(f, "/* %s — generated by galvc (CUDA target) from ", strrchr(path, '/') + 1);
  ccomment(f, src ? src + 1 : m->source);
  fprintf(f, ". Do not edit.\n * galv_cu_run() enqueues one kernel per op of the device program, in schedule order, on\n"
             " * the compute stream; A(off) is the device arena, W(off) the device copy of weights.bin.\n"
             " * Float tensors are stored as gf (%s%s). */\n",
          !e->narrow ? "fp32" : e->f16 ? "f16" : "bf16",
          e->mixed    ? " training: activations as gf; parameters, optimizer state, parameter gradients and the loss as "
                        "float; fp32 accumulation"
          : e->narrow ? ", fp32 accumulation"
                      : "");
  if (e->entry) {
    fprintf(f, "/* the program's entry '%s' (weights in weights_%s.bin): its symbols are galv_%s_*, its run function\n"
               " * galv_%s_program_run (the galv_cu_run of an entry) */\n",
            e->entry, e->entry, e->entry, e->entry);
    for (int i = 0; i < cg_program_nsyms; i++)
      fprintf(f, "#define galv_%s galv_%s_%s\n", cg_program_syms[i], e->entry, cg_program_syms[i]);
    for (size_t i = 0; i < sizeof cu_syms / sizeof *cu_syms; i++)
      fprintf(f, "#define galv_%s galv_%s_%s\n", cu_syms[i], e->entry, cu_syms[i]);
    fputc('\n', f);
  }
  fprintf(f, "#include \"runtime/cuda/galv_cuda.h\"\n");
  if (e->entry) /* kernel timing (--profile) covers the program's own kernels */
    fprintf(f, "#undef GALV_CU_PROF\n#define GALV_CU_PROF(k) ((void)0)\n");
  if (e->natt) fprintf(f, "#include \"runtime/cuda/attention.cuh\"\n");
  for (const gv_op *op = e->m->main->body->first; op; op = op->next)
    if (op->code == GV_OP_ATTENTION || op->code == GV_OP_ATTENTION_GRAD) { /* training's fused attention */
      fprintf(f, "#include \"runtime/cuda/fused_attention.cuh\"\n");
      break;
    }
  fprintf(f, "\ntypedef %s gf;\nconst int galv_cu_precision = %s;\n\n#define A(o) (arena + (o))\n#define W(o) (weights + (o))\n"
             "#define S(o) (state + (o))\n\n",
          !e->narrow ? "float" : !e->f16 ? "__nv_bfloat16" : "__half", dt_of(e));
  /* tables */
  int nin = 0;
  fprintf(f, "const galv_io galv_inputs[] = {\n");
  for (int i = 0; i < body->nargs; i++)
    if (!fn->arg_is_param[i] && !(fn->arg_is_state && fn->arg_is_state[i])) { /* data inputs only */
      if (!rt_dtype(body->args[i]->type.dtype)) return galv_wfile_abandon(&w), gv_error(m, "cuda codegen: input dtype unsupported");
      io_entry(e, fn->arg_names[i] ? fn->arg_names[i] : "", body->args[i]), nin++;
    }
  if (!nin) fprintf(f, "  {}\n"); /* none (ZB-H1's weight-gradient entry reads parameters and its state only); C++: {} */
  fprintf(f, "};\nconst int galv_ninputs = %d;\n\n", nin);
  const gv_op *ret = gv_block_terminator(body);
  if (!ret || ret->code != GV_OP_RETURN) return galv_wfile_abandon(&w), gv_error(m, "cuda codegen: the function does not end in galv.return");
  fprintf(f, "const galv_io galv_outputs[] = {\n");
  for (int i = 0; i < ret->nopnds; i++) {
    char nm[64];
    const char *name = i < fn->nres_names && fn->res_names && fn->res_names[i] ? fn->res_names[i] : NULL;
    if (!name) snprintf(nm, sizeof nm, "output%d", i), name = nm;
    if (!rt_dtype(ret->opnds[i]->type.dtype)) return galv_wfile_abandon(&w), gv_error_op(m, ret, "cuda codegen: output dtype unsupported");
    io_entry(e, name, ret->opnds[i]);
  }
  if (!ret->nopnds) fprintf(f, "  {}\n");
  fprintf(f, "};\nconst int galv_noutputs = %d;\n\n", ret->nopnds);
  /* parameters (for --gen-weights and 16-bit conversion), then the f32 constants */
  int np = 0, nc = 0;
  fprintf(f, "const galv_cu_param galv_cu_params[] = {\n");
  for (int pass = 0; pass < 2; pass++)
    for (int a = 0; a < e->nv; a++) {
      const loc *x = &e->L[a];
      bool param = !x->v->def && x->in_weights && fn->arg_is_param[x->v->index], cst = x->v->def && x->v->def->code == GV_OP_CONSTANT;
      if (pass == 0 ? !param : !(cst && x->v->type.dtype == GV_DT_F32)) continue;
      fputs("  {", f);
      cstr(f, param ? fn->arg_names[x->v->index] : "");
      fprintf(f, ", %s, %lld, %lld, %d, ", rt_dtype(x->v->type.dtype), (long long)x->off,
              (long long)gv_type_numel(&x->v->type), x->v->type.rank);
      dims_lit(f, x->v->type.rank, x->v->type.dims);
      fprintf(f, "},\n");
      pass == 0 ? np++ : nc++;
    }
  if (!np && !nc) fprintf(f, "  {}\n");
  fprintf(f, "};\nconst int galv_cu_nparams = %d, galv_cu_nf32_consts = %d;\nconst int64_t galv_cu_param_bytes = %lld;\n",
          np, nc, (long long)e->pbytes);
  /* galv_plan_high_water: the CPU training runtime's memory line reads it (runtime/train.c, linked here too);
   * a CUDA program's arena is the plan's whole arena */
  fprintf(f, "const int64_t galv_arena_bytes = %lld;\nconst int64_t galv_plan_high_water = %lld;\n"
             "const int64_t galv_weights_bytes = %lld;\n\n",
          (long long)gv_get_int(body->first, "bytes", 0), (long long)gv_get_int(body->first, "bytes", 0), (long long)e->wbytes);
  if (state_tables(e, ret)) return galv_wfile_abandon(&w), -1;
  /* generated kernels */
  int t = 0, rc = 0, nk = 0;
  for (const gv_op *op = body->first; op && !rc; op = op->next, t++) {
    int head;
    if (!is_call(op)) continue;
    if (skipped(e, op, &head)) continue;
    if (head >= 0 && e->att[head].mid) {
      char name[96];
      snprintf(name, sizeof name, "%sattn_score%d", kprefix(e), head);
      fprintf(f, "/* attention score: ");
      ccomment(f, e->att[head].mid->loc);
      fprintf(f, " */\n");
      rc = cu_emit_score_functor(m, f, name, e->att[head].mid, e->att[head].score_opnd, e->mixed ? vstype : NULL, e);
    } else if (head < 0 && (op->code == GV_OP_FUSED || (gv_ops[op->code].flags & GV_ELEMENTWISE))) {
      char name[96];
      snprintf(name, sizeof name, "%s%s%d", kprefix(e), op->code == GV_OP_FUSED ? "fused" : "ew", t);
      fprintf(f, "/* ");
      if (op->code == GV_OP_FUSED) {
        for (const gv_op *b = op->regions[0]->first; b; b = b->next)
          if (b->code != GV_OP_YIELD) fprintf(f, "%s ", gv_ops[b->code].name);
      } else {
        fprintf(f, "%s ", gv_ops[op->code].name);
      }
      fprintf(f, "-- node '");
      ccomment(f, op->loc);
      fprintf(f, "' */\n");
      rc = cu_emit_elementwise(m, f, name, op, nk, e->mixed ? vstype : NULL, e);
    }
    nk++;
  }
  /* the run function */
  fprintf(f, "void %s(char *arena, const char *weights, char *state) {\n  (void)arena, (void)weights, (void)state;\n",
          e->entry ? "galv_program_run" : "galv_cu_run");
  /* the scratch buffer is sized for the program (galv_cu_init): grown for the entry, by the entry's figure (defined
   * below the run function: the emission sizes it; e->scratch here would be 0 and no reserve printed, so a backward
   * entry whose conversions outgrew the forward's wrote past the buffer) */
  if (e->entry) fputs("  galv_cu_scratch_reserve((size_t)galv_cu_scratch_bytes);\n", f);
  cg_comm_run_start(e->comm, f);
  t = 0, nk = 0;
  for (const gv_op *op = body->first; op && !rc; op = op->next, t++) {
    int head;
    /* the compute stream waits for communication whose bytes op touches (an
     * op of a fused attention chain: before the attention kernel) */
    if (op->code != GV_OP_RETURN) cg_comm_before_op(e->comm, f, op);
    if (!is_call(op) || skipped(e, op, &head)) continue;
    fprintf(f, "  /* %s: node '", head >= 0 ? "attention" : gv_ops[op->code].name);
    ccomment(f, op->loc);
    fprintf(f, "' */\n  GALV_CU_PROF(%d);\n", nk);
    if (head >= 0) {
      rc = emit_attention(e, &e->att[head], head, nk);
    } else if (op->code == GV_OP_FUSED || (gv_ops[op->code].flags & GV_ELEMENTWISE)) {
      int64_t n = gv_type_numel(&op->res[0]->type);
      fprintf(f, "  GALV_LAUNCH(%s%s%d, galv_cu_blocks(%lld), 256, 0, galv_cu.stream, ", kprefix(e),
              op->code == GV_OP_FUSED ? "fused" : "ew", t, (long long)n);
      for (int i = 0; i < op->nopnds + op->nres; i++) {
        const gv_value *v = i < op->nopnds ? op->opnds[i] : op->res[i - op->nopnds];
        char b[64];
        ptr(e, v, 0, b, sizeof b);
        fprintf(f, "(%s%s *)%s, ", i < op->nopnds ? "const " : "", e->mixed ? vstype(e, v) : cu_stype(v->type.dtype), b);
      }
      fprintf(f, "galv_cu.err);\n  GALV_CU_LAUNCHED();\n");
    } else {
      rc = emit_kernel(e, op, nk);
    }
    nk++;
  }
  cg_comm_run_end(e->comm, f);
  fprintf(f, "  GALV_CU_PROF(%d);\n}\n\nconst int galv_nkernels = %d;\n", nk, nk);
  fprintf(f, "const galv_kernel_info galv_kernels[] = {\n");
  for (const gv_op *op = body->first; op && !rc; op = op->next) {
    int head;
    if (!is_call(op) || skipped(e, op, &head)) continue;
    fprintf(f, "  {\"%s\", ", head >= 0 ? "attention" : gv_ops[op->code].name);
    cstr(f, op->loc);
    fprintf(f, "},\n");
  }
  fprintf(f, "  {NULL, NULL}\n};\nconst int64_t galv_cu_scratch_bytes = %lld;\nconst int64_t galv_cu_flops = %lld;\n",
          (long long)e->scratch, (long long)e->flops);
  *nkernels = nk;
  return cg_close_file(&w, rc);
}

/* ---------------------------------------------------------------- files */

/* constants.bin: weights.bin from the end of the parameters */
static int write_constants(emitter *e, const char *dir) {
  char path[4096];
  snprintf(path, sizeof path, "%s/weights.bin", dir);
  FILE *f = fopen(path, "rb");
  if (!f) return gv_error_plain("%s: cannot read: %s", path, strerror(errno));
  size_t n = (size_t)(e->wbytes - e->pbytes);
  char *buf = malloc(n + 1);
  if (!buf) abort();
  int rc = fseek(f, (long)e->pbytes, SEEK_SET) || fread(buf, 1, n, f) != n;
  fclose(f);
  if (rc) rc = gv_error_plain("%s: shorter than %lld bytes", path, (long long)e->wbytes);
  else rc = cg_write_file(dir, "constants.bin", buf, n);
  free(buf);
  return rc;
}

static const char makefile[] =
    "# Generated by galvc: builds the CUDA program (program.cu + runtime/cuda/) with nvcc and cuBLAS.\n"
    "#   make              ./program      nvcc -O3 for ARCH (%s)\n"
    "#   make cpu          ./program-cpu  the same device program on the CPU target (program.c, OpenBLAS)\n"
    "#   make GALV_CU_LIB=libgalv_cuda.a  link a prebuilt runtime (tests/cuda_compile.sh) instead of compiling it\n"
    "#   make emu          ./program-emu  the same program.cu and runtime/cuda/ sources built by the host C++ compiler\n"
    "#                     against the CPU execution layer runtime/cuda/emu/ (no GPU needed; a test tool, slow)\n"
    "#   make emu-race     ./program-emu-race  the same with the race check: shared / global memory races between threads\n"
    "#                     (with nvcc on PATH, both also check each launch's registers per thread: ptxas's counts for\n"
    "#                     ARCH, emu_regs.cc; EMU_REGS= skips)\n"
    "# Runs need a CUDA device; without one ./program says so (use ./program-cpu or ./program-emu there).\n"
    "# Each source compiles to its own object (nvcc.d/, cpu.d/, emu.d/, emu-race.d/ for the four programs; the\n"
    "# host runtime's *.o), then one link: make -jN compiles them side by side, a rebuild recompiles only what changed.\n"
    ".DEFAULT_GOAL := all\n"
    "NVCC ?= nvcc\n"
    "ARCH ?= %s\n"
    "EMU_REG_ARCHS = %s\n"
    "NVFLAGS ?= -O3 -std=c++17 $(ARCH) -Xcompiler -Wall,-Wextra,-Wno-unused-parameter,-Wno-unused-variable\n"
    "CC ?= cc\n"
    "RT = $(MAIN_CU) runtime/cuda/context.cu runtime/cuda/kernels.cu runtime/cuda/kernels_grad.cu \\\n"
    "     runtime/cuda/train_cuda.cu\n"
    "%s"
    "HDR = $(wildcard runtime/*.h runtime/cuda/*.h runtime/cuda/*.cuh)\n"
    "GALV_CU_LIB ?=\n"
    "\n"
    "all: program\n"
    "ifeq ($(GALV_CU_LIB),)\n"
    "NV_OBJ = $(patsubst %%.cu,nvcc.d/%%.o,program.cu $(RT) $(STAGE_CU) $(COMM_SRC))\n"
    "program: $(NV_OBJ) $(HOST_O) $(STAGE_O) $(COMM_STAMP)\n"
    "\t$(NVCC) $(NVFLAGS) $(MPI_INC) -I. -o $@ $(NV_OBJ) $(HOST_O) $(STAGE_O) $(LIBS)\n"
    "else\n"
    "NV_OBJ = $(patsubst %%.cu,nvcc.d/%%.o,program.cu $(STAGE_CU) $(COMM_SRC))\n"
    "program: $(NV_OBJ) $(COMM_O) $(STAGE_O) $(GALV_CU_LIB) $(COMM_STAMP)\n"
    "\t$(NVCC) $(NVFLAGS) $(MPI_INC) -I. -o $@ $(NV_OBJ) $(COMM_O) $(STAGE_O) $(GALV_CU_LIB) $(LIBS)\n"
    "endif\n"
    "nvcc.d/%%.o: %%.cu $(HDR)\n"
    "\t@mkdir -p $(@D)\n"
    "\t$(NVCC) $(NVFLAGS) $(MPI_INC) -I. -c -o $@ $<\n"
    "io.o: runtime/io.c runtime/galv_rt.h\n"
    "\t$(CC) -O2 -std=gnu11 -c -o $@ $<\n"
    "npy.o: runtime/npy.c runtime/npy.h runtime/galv_file.h\n"
    "\t$(CC) -O2 -std=gnu11 -c -o $@ $<\n"
    "file.o: runtime/file.c runtime/galv_file.h\n"
    "\t$(CC) -O2 -std=gnu11 -c -o $@ $<\n"
    "train.o: runtime/train.c runtime/galv_rt.h runtime/galv_spmd.h\n"
    "\t$(CC) -O2 -std=gnu11 -c -o $@ $<\n"
    "spmd.o: runtime/spmd.c runtime/galv_rt.h runtime/galv_spmd.h\n"
    "\t$(CC) -O2 -std=gnu11 -c -o $@ $<\n"
    "prof.o: runtime/prof.c runtime/galv_rt.h runtime/galv_file.h\n"
    "\t$(CC) -O2 -std=gnu11 -c -o $@ $<\n"
    "comm_single.o: runtime/comm_single.c runtime/galv_comm.h\n"
    "\t$(CC) -O2 -std=gnu11 -c -o $@ $<\n"
    "CPU_OBJ = $(patsubst %%.c,cpu.d/%%.o,$(CPU_SRC))\n"
    "cpu: program-cpu\n"
    "program-cpu: $(CPU_OBJ)\n"
    "\t$(CPU_CC) -O3 -march=native -fno-math-errno -std=gnu11 $(CPU_FLAGS) -o $@ $(CPU_OBJ) -lopenblas -lm\n"
    "cpu.d/%%.o: %%.c $(HDR)\n"
    "\t@mkdir -p $(@D)\n"
    "\t$(CPU_CC) -O3 -march=native -fno-math-errno -std=gnu11 $(CPU_FLAGS) -c -o $@ $<\n"
    "EMU_CXX ?= g++\n"
    "EMU_FLAGS ?= -O1\n"
    "EMU_WARN = -std=c++17 -Wall -Wextra -Wno-unused-parameter -Wno-unused-variable -Wno-sign-compare\n"
    "# ptxas's registers per thread of every kernel (runtime/cuda/emu/ptxas_regs.sh) when nvcc is found\n"
    "EMU_REGS ?= $(if $(shell command -v $(NVCC) 2>/dev/null),emu_regs.cc)\n"
    "EMU_SRC = runtime/cuda/emu/emu.cc runtime/cuda/emu/emu_blas.cc $(EMU_NCCL) $(EMU_REGS)\n"
    "EMU_CU = program.cu $(RT) $(STAGE_CU) $(COMM_SRC)\n"
    "EMU_HDR = $(HDR) $(wildcard runtime/cuda/emu/*.h)\n"
    "EMU_OBJ = $(patsubst %%.cu,emu.d/%%.o,$(EMU_CU)) $(patsubst %%.cc,emu.d/%%.o,$(EMU_SRC))\n"
    "emu_regs.cc: program.cu $(RT) $(STAGE_CU) $(HDR) runtime/cuda/emu/ptxas_regs.sh\n"
    "\tsh runtime/cuda/emu/ptxas_regs.sh \"$(NVCC)\" \"$(EMU_REG_ARCHS)\" $(MPI_INC) -- program.cu $(RT) $(STAGE_CU) >$@.tmp\n"
    "\tmv $@.tmp $@\n"
    "EMU_NOREGS = @test -n \"$(EMU_REGS)\" || echo \"$@: registers per thread are not checked (no $(NVCC) on PATH)\"\n"
    "emu: program-emu\n"
    "program-emu: $(EMU_OBJ) $(HOST_O) $(STAGE_O) $(COMM_STAMP)\n"
    "\t$(EMU_CXX) $(EMU_WARN) $(MPI_INC) -Iruntime/cuda/emu -I. -o $@ $(EMU_OBJ) $(HOST_O) $(STAGE_O) $(EMU_LIBS) -lm $(EMU_FLAGS)\n"
    "\t$(EMU_NOREGS)\n"
    "emu.d/%%.o: %%.cu $(EMU_HDR)\n"
    "\t@mkdir -p $(@D)\n"
    "\t$(EMU_CXX) $(EMU_WARN) $(MPI_INC) -Iruntime/cuda/emu -I. -c -o $@ -x c++ $< $(EMU_FLAGS)\n"
    "emu.d/%%.o: %%.cc $(EMU_HDR)\n"
    "\t@mkdir -p $(@D)\n"
    "\t$(EMU_CXX) $(EMU_WARN) $(MPI_INC) -Iruntime/cuda/emu -I. -c -o $@ $< $(EMU_FLAGS)\n"
    "# the race check: the program's sources with TSan's instrumentation, linked against the layer's own\n"
    "# hooks (a per-barrier-epoch shadow of __shared__ memory; runtime/cuda/emu/emu.cc), not the TSan runtime\n"
    "EMU_RACE = -O1 -g -DGALV_EMU_SHADOW\n"
    "RACE_OBJ = $(patsubst %%.cu,emu-race.d/%%.o,$(EMU_CU)) $(patsubst %%.cc,emu-race.d/%%.o,$(EMU_SRC))\n"
    "emu-race: program-emu-race\n"
    "program-emu-race: $(RACE_OBJ) $(HOST_O) $(STAGE_O) $(COMM_STAMP)\n"
    "\t$(EMU_CXX) $(EMU_WARN) $(MPI_INC) $(EMU_RACE) -Iruntime/cuda/emu -o $@ $(RACE_OBJ) $(HOST_O) $(STAGE_O) $(EMU_LIBS) -lm\n"
    "\t$(EMU_NOREGS)\n"
    "emu-race.d/%%.o: %%.cu $(EMU_HDR)\n"
    "\t@mkdir -p $(@D)\n"
    "\t$(EMU_CXX) $(EMU_WARN) $(MPI_INC) -Iruntime/cuda/emu -I. $(EMU_RACE) -fsanitize=thread --param tsan-instrument-func-entry-exit=0 \\\n"
    "\t  -c -x c++ -o $@ $<\n"
    "emu-race.d/%%.o: %%.cc $(EMU_HDR)\n"
    "\t@mkdir -p $(@D)\n"
    "\t$(EMU_CXX) $(EMU_WARN) $(MPI_INC) $(EMU_RACE) -Iruntime/cuda/emu -c -o $@ $<\n"
    "clean:\n"
    "\trm -rf program program-cpu program-emu program-emu-race nvcc.d cpu.d emu.d emu-race.d emu_regs.cc $(HOST_O) $(STAGE_O) \\\n"
    "\t  comm_mpi_staged.o comm.nccl comm.staged\n"
    ".PHONY: all cpu emu emu-race clean\n";

/* one device */
static const char make_single[] =
    "# host side shared with the CPU target: tensor I/O, the training driver and its trace writer, one-rank SPMD tables\n"
    "HOST_O = io.o npy.o file.o train.o spmd.o prof.o comm_single.o\n"
    "LIBS = -lcublas -lcublasLt\n"
    "EMU_LIBS = -lopenblas\n"
    "CPU_CC = $(CC)\n"
    "CPU_SRC = program.c $(STAGE_C) $(filter-out runtime/comm_%.c,$(sort $(wildcard runtime/*.c))) runtime/comm_single.c\n";

/* N ranks: the communicator backend (docs/cuda-target.md, Ranks) */
static const char make_ranks_head[] =
    "# %d ranks (one SPMD program, started by ./launch = mpirun -np %d): the communicator backend\n";
static const char make_ranks[] =
    "#   make              NCCL (runtime/cuda/comm_nccl.cu, bootstrapped through MPI): one GPU per rank\n"
    "#   make COMM=staged  host-staged over the MPI backend (runtime/cuda/comm_staged.cu + runtime/comm_mpi.c):\n"
    "#                     several ranks may share one GPU (slow: checks of a multi-rank plan on one GPU)\n"
    "COMM ?= nccl\n"
    "MPICC ?= mpicc\n"
    "MPI_INC := $(shell $(MPICC) --showme:incdirs 2>/dev/null | sed 's/^/-I/; s/ / -I/g')\n"
    "MPI_LINK := $(shell $(MPICC) --showme:link 2>/dev/null)\n"
    "comma := ,\n"
    "empty :=\n"
    "space := $(empty) $(empty)\n"
    "ifeq ($(COMM),staged)\n"
    "COMM_SRC = runtime/cuda/comm_staged.cu\n"
    "COMM_O = comm_mpi_staged.o\n"
    "EMU_NCCL =\n"
    "COMM_LIBS = -lopenblas\n"
    "else ifeq ($(COMM),nccl)\n"
    "COMM_SRC = runtime/cuda/comm_nccl.cu\n"
    "COMM_O =\n"
    "EMU_NCCL = runtime/cuda/emu/emu_nccl.cc\n"
    "COMM_LIBS = -lnccl\n"
    "else\n"
    "$(error COMM=$(COMM): nccl or staged)\n"
    "endif\n"
    "# the program is rebuilt when COMM changes\n"
    "COMM_STAMP = comm.$(COMM)\n"
    "comm.$(COMM):\n"
    "\trm -f comm.nccl comm.staged && touch $@\n"
    "# runtime/comm_mpi.c with its data calls renamed galv_mpi_* (comm_staged.cu wraps them)\n"
    "STAGED_RENAME = -Dgalv_all_reduce=galv_mpi_all_reduce -Dgalv_all_gather=galv_mpi_all_gather \\\n"
    "  -Dgalv_reduce_scatter=galv_mpi_reduce_scatter -Dgalv_all_to_all=galv_mpi_all_to_all -Dgalv_send=galv_mpi_send \\\n"
    "  -Dgalv_recv=galv_mpi_recv -Dgalv_queue_sync=galv_mpi_queue_sync -Dgalv_queue_sync_keep=galv_mpi_queue_sync_keep -Dgalv_queue_sync_buf=galv_mpi_queue_sync_buf -Dgalv_group_start=galv_mpi_group_start \\\n"
    "  -Dgalv_group_end=galv_mpi_group_end\n"
    "comm_mpi_staged.o: runtime/comm_mpi.c runtime/galv_comm.h runtime/galv_rt.h\n"
    "\t$(MPICC) -O2 -std=gnu11 $(STAGED_RENAME) -c -o $@ $<\n"
    "HOST_O = io.o npy.o file.o train.o spmd.o prof.o $(COMM_O)\n"
    "LIBS = $(COMM_LIBS) -lcublas -lcublasLt -Xlinker $(subst $(space),$(comma),$(strip $(MPI_LINK)))\n"
    "EMU_LIBS = -lopenblas $(MPI_LINK)\n"
    "CPU_CC = $(MPICC)\n"
    "CPU_SRC = program.c $(STAGE_C) $(filter-out runtime/comm_%.c,$(sort $(wildcard runtime/*.c))) runtime/comm_mpi.c\n";

/* A pipeline stage (galvc --pipeline-stages, docs/pipeline.md): main is
 * runtime/cuda/pipe_cuda.cu (runtime/pipe.c's schedule with device buffers),
 * always MPI + a communicator backend (p2p between the stages); `make cpu`
 * builds the same stage for the CPU target (runtime/main.c -> pipe.c). */
static const char make_stage[] =
    "MAIN_CU =\n"
    "# training with a stash: the backward entry (program_bwd.cu; program_bwd.c for make cpu); ZB-H1: the\n"
    "# weight-gradient entry (program_wgt.cu, program_wgt.c)\n"
    "STAGE_CU = runtime/cuda/pipe_cuda.cu $(wildcard program_bwd.cu) $(wildcard program_wgt.cu)\n"
    "STAGE_O = pipe.o pipe_xfer.o pipe_stage.o\n"
    "STAGE_C = pipe_stage.c $(wildcard program_bwd.c) $(wildcard program_wgt.c)\n"
    "pipe.o: runtime/pipe.c runtime/galv_pipe.h runtime/galv_pipe_sched.h runtime/galv_rt.h runtime/galv_spmd.h \\\n"
    "        runtime/galv_comm.h\n"
    "\t$(CC) -O2 -std=gnu11 -DGALV_PIPE_STAGE -c -o $@ $<\n"
    "pipe_xfer.o: runtime/pipe_xfer.c runtime/galv_pipe.h runtime/galv_rt.h runtime/galv_comm.h\n"
    "\t$(CC) -O2 -std=gnu11 -DGALV_PIPE_STAGE -c -o $@ $<\n"
    "pipe_stage.o: pipe_stage.c runtime/galv_pipe.h\n"
    "\t$(CC) -O2 -std=gnu11 -c -o $@ $<\n"
    "CPU_FLAGS = -DGALV_PIPE_STAGE\n"
    "# a pipeline stage of %d rank%s (every stage started by ../launch = mpirun MPMD): the communicator backend\n"
    "# (collectives inside the stage and p2p between the stages)\n";

static int write_makefile(const char *dir, const char *arch, int nranks, bool stage, bool shared_gpu) {
  char flags[1024] = "", list[512], regarchs[512] = "";
  snprintf(list, sizeof list, "%s", arch && *arch ? arch : "sm_90");
  size_t k = 0;
  for (char *s = strtok(list, ","); s; s = strtok(NULL, ",")) {
    const char *num = strncmp(s, "sm_", 3) == 0 ? s + 3 : s;
    k += (size_t)snprintf(flags + k, sizeof flags - k, "%s-gencode arch=compute_%s,code=sm_%s", k ? " " : "", num, num);
    if (k >= sizeof flags) return gv_error_plain("--cuda-arch %s: too long", arch);
    size_t r = strlen(regarchs);
    snprintf(regarchs + r, sizeof regarchs - r, "%ssm_%s", r ? " " : "", num);
  }
  char comm[sizeof make_ranks + sizeof make_stage + 512];
  int k0 = stage ? snprintf(comm, sizeof comm, make_stage, nranks, nranks > 1 ? "s" : "")
                 : snprintf(comm, sizeof comm, "MAIN_CU = runtime/cuda/main_cuda.cu\n");
  if (!stage && nranks > 1) k0 += snprintf(comm + k0, sizeof comm - (size_t)k0, make_ranks_head, nranks, nranks);
  snprintf(comm + k0, sizeof comm - (size_t)k0, "%s", nranks > 1 || stage ? make_ranks : make_single);
  char *dflt = strstr(comm, "COMM ?= nccl\n");
  if (shared_gpu && dflt) { /* the ranks share GPUs with other stages': host-staged by default */
    static const char sh[] = "# (interleaved 1F1B: a device group's ranks share its GPU, so COMM defaults to staged)\nCOMM ?= staged\n";
    const size_t tail = strlen(dflt + 13);
    if ((size_t)(dflt - comm) + sizeof sh + tail > sizeof comm) return gv_error_plain("%s: Makefile too long", dir);
    memmove(dflt + sizeof sh - 1, dflt + 13, tail + 1);
    memcpy(dflt, sh, sizeof sh - 1);
  }
  char buf[sizeof makefile + sizeof comm + 2048];
  int n = snprintf(buf, sizeof buf, makefile, arch && *arch ? arch : "sm_90", flags, regarchs, comm);
  return cg_write_file(dir, "Makefile", buf, (size_t)n);
}

static int write_cuda_runtime(const char *dir) {
  char rdir[4096];
  snprintf(rdir, sizeof rdir, "%s/runtime/cuda", dir);
  struct stat st;
  if (stat(rdir, &st) != 0 && mkdir(rdir, 0777) != 0)
    return gv_error_plain("%s: cannot create directory: %s", rdir, strerror(errno));
  /* runtime/cuda/emu/: the CPU execution layer of `make emu` */
  char edir[4200];
  snprintf(edir, sizeof edir, "%s/emu", rdir);
  if (stat(edir, &st) != 0 && mkdir(edir, 0777) != 0)
    return gv_error_plain("%s: cannot create directory: %s", edir, strerror(errno));
  for (int i = 0; i < gv_nruntime_cuda_files; i++)
    if (cg_write_file(rdir, gv_runtime_cuda_files[i].name, gv_runtime_cuda_files[i].data, gv_runtime_cuda_files[i].len))
      return -1;
  return 0;
}

/* A comma-separated list of sm_NN[a] / NN[a], no entry empty ("sm_90,"
 * and "," would leave the Makefile without a -gencode). */
static bool valid_arch(const char *a) {
  for (const char *s = a;; s++) {
    size_t len = strcspn(s, ",");
    const char *n = len >= 3 && strncmp(s, "sm_", 3) == 0 ? s + 3 : s;
    size_t nl = len - (size_t)(n - s);
    if (!nl || strspn(n, "0123456789a") < nl) return false;
    s += len;
    if (!*s) return true;
  }
}

int gv_emit_cuda(gv_module *m, const char *outdir, gv_emit_options *o, const gv_cuda_options *co) {
  const char *arch = co && co->arch ? co->arch : "sm_90";
  if (!valid_arch(arch)) return gv_error_plain("--cuda-arch %s: expected a list like sm_90,sm_80", arch);
  bool train = m->main && m->main->res_updates;
  const char *entry = o ? o->entry : NULL;
  gv_emit_options cpu = {.quiet = true, .entry = entry, .const_base = o ? o->const_base : 0};
  /* plan check, weights.bin, program.c, runtime/ (an entry: program_ENTRY.c, weights_ENTRY.bin) */
  if (gv_emit_cpu(m, outdir, &cpu)) return -1;
  /* 16-bit training is mixed precision: fp32 state, 16-bit activations (the storage pass) */
  /* a training pipeline stage's entries (ir/storage.h gv_func_stage_kind) are mixed alike: fp32 parameters and
   * parameter gradients, the crossing values and the stash 16-bit */
  bool stage_train = m->main && gv_func_stage_kind(m->main) == 2;
  /* the 16-bit dtype is the storage pass's (--precision fp16 stores f16; co->bf16 says --precision bf16) */
  gv_dtype nd = narrow_dtype(m);
  bool narrow = (co && co->bf16) || nd == GV_DT_F16;
  emitter e = {.m = m, .narrow = narrow, .f16 = nd == GV_DT_F16, .hdt = nd == GV_DT_F16 ? "GALV_F16" : "GALV_BF16", .train = train,
               .mixed = (train || stage_train) && narrow, .entry = entry, .const_base = o ? o->const_base : 0};
  int rc = -1, nk = 0;
  if (locate(&e)) goto out;
  gv_count_uses(m->main->body);
  /* the storage pass's decision (ir/storage.h), which the memory plan sized */
  if (gv_module_has_narrow_storage(m) && !e.narrow) {
    gv_error(m, "cuda codegen: the program stores values 16-bit (storage pass) but was not compiled with --precision bf16|fp16");
    goto out;
  }
  if (co && co->pipe_stage && nd == GV_DT_F16 && !stage_train) {
    gv_error(m, "cuda codegen: --precision fp16 inference pipeline stages are not supported on the cuda target yet (they "
                "run on the cpu target; fp16 training stages run on both)");
    goto out;
  }
  if (e.mixed) {
    if (!(e.half = calloc((size_t)e.nv + 1, 1))) abort();
    for (int i = 0; i < e.nv; i++)
      e.half[i] = e.L[i].v->type.dtype == GV_DT_F32 && gv_value_storage(e.L[i].v) != GV_DT_F32;
  }
  e.ct = e.narrow ? cu_comm_bf16 : cu_comm_f32;
  if (e.narrow) e.ct.half_dt = e.hdt; /* 16-bit collectives move bf16 or f16 */
  if (e.mixed) e.ct.half = comm_half, e.ct.half_ctx = &e;
  if (!(e.comm = cg_comm_new(m, &e.ct))) goto out;
  e.att = calloc(GV_ATTN_MAX, sizeof *e.att);
  if (!e.att) abort();
  gv_attn_uses *ix = e.mixed ? NULL : gv_attn_uses_new(m->main->body); /* NULL: each match scans */
  for (const gv_op *op = m->main->body->first; op; op = op->next) /* not under mixed storage: one storage per chain */
    if (op->code == GV_OP_DOT && e.natt < GV_ATTN_MAX && !e.mixed && gv_attn_match_in(op, &e.att[e.natt], ix)) e.natt++;
  gv_attn_uses_free(ix);
  if (write_program(&e, outdir, &nk)) goto out;
  /* an entry is linked into the program's build: no constants.bin, Makefile or runtime of its own */
  if (!entry && (write_constants(&e, outdir) || write_makefile(outdir, arch, cg_comm_nranks(e.comm), co && co->pipe_stage, co && co->shared_gpu) ||
                 write_cuda_runtime(outdir)))
    goto out;
  if (o) o->nkernels = nk;
  rc = 0;
out:
  free(e.L);
  free(e.half);
  free(e.att);
  cg_comm_free(e.comm);
  return rc;
}
