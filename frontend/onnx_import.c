/* onnx_import.c — ONNX ModelProto -> galvc IR: the public entry points,
 * opset checks, graph inputs (with symbolic dims bound from the options),
 * initializers, scopes and graphs (main graph and If branches).
 *
 * The model file is memory-mapped and unpacked with protobuf-c; the unpacked
 * message lives only during import (weights in raw_data are copied into the
 * module arena, external weights point into their mapped files). Everything
 * read from the file is untrusted: every count, name and size is checked and
 * every failure is one error line, never a crash. Node mapping is in
 * onnx_ops.c, tensor data in onnx_read.c. */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <fnmatch.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include "onnx_internal.h"

/* Opsets 22 to 27 only add element types (bfloat16, float8/4, int4/2,
 * uint16..64) to the ops in onnx_ops.c's table, which the frontend rejects
 * by dtype anyway; the attributes they add (Cast-24 round_mode for
 * FLOAT8E8M0, Range-27 stash_type for float16) are handled there. An op
 * added to the table must be checked against its schema history up to
 * MAX_OPSET. */
enum { MIN_OPSET = 13, MAX_OPSET = 27 };

/* ---------------------------------------------------------------- messages */

const char *gv_esc(gv_ictx *c, const char *s) {
  if (!s) return "";
  size_t n = 0;
  for (const unsigned char *p = (const unsigned char *)s; *p; p++)
    n += (*p < 0x20 || *p == 0x7f || *p == '"' || *p == '\\' || *p == '\'') ? 3 : 1;
  char *o = gv_alloc(c->tmp, n + 1), *w = o;
  static const char hex[] = "0123456789ABCDEF";
  for (const unsigned char *p = (const unsigned char *)s; *p; p++) {
    if (*p < 0x20 || *p == 0x7f || *p == '"' || *p == '\\' || *p == '\'') {
      *w++ = '\\';
      *w++ = hex[*p >> 4];
      *w++ = hex[*p & 15];
    } else {
      *w++ = (char)*p;
    }
  }
  *w = 0;
  return o;
}

int gv_node_error(gv_ictx *c, const char *fmt, ...) {
  char msg[2048];
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(msg, sizeof msg, fmt, ap);
  va_end(ap);
  const Onnx__NodeProto *n = c->node;
  return gv_error(c->m, "node '%s' (%s): %s", gv_esc(c, n && n->name ? n->name : ""),
                  gv_esc(c, n && n->op_type ? n->op_type : "?"), msg);
}

/* ---------------------------------------------------------------- scopes */

static size_t hash(const char *s) {
  size_t h = 1469598103934665603ull;
  for (; *s; s++) h = (h ^ (unsigned char)*s) * 1099511628211ull;
  return h;
}

gv_scope *gv_scope_push(gv_ictx *c, gv_block *b) {
  gv_scope *s = gv_alloc(c->tmp, sizeof *s);
  s->cap = 64;
  s->tab = gv_alloc(c->tmp, s->cap * sizeof *s->tab);
  s->parent = c->scope;
  s->block = b;
  c->scope = s;
  return s;
}

void gv_scope_pop(gv_ictx *c) { c->scope = c->scope->parent; }

static gv_sym *find(gv_scope *s, const char *name) {
  for (gv_sym *e = s->tab[hash(name) & (s->cap - 1)]; e; e = e->next)
    if (strcmp(e->name, name) == 0) return e;
  return NULL;
}

static int insert(gv_ictx *c, const char *name, gv_value *v, const char *poison) {
  gv_scope *s = c->scope;
  if (find(s, name)) {
    if (c->node) return gv_node_error(c, "value '%s' is defined twice", gv_esc(c, name));
    return gv_error(c->m, "value '%s' is defined twice", gv_esc(c, name));
  }
  if (s->n * 2 >= s->cap) { /* grow: keep chains short */
    size_t nc = s->cap * 2;
    gv_sym **nt = gv_alloc(c->tmp, nc * sizeof *nt);
    for (size_t i = 0; i < s->cap; i++)
      for (gv_sym *e = s->tab[i], *nx; e; e = nx) {
        nx = e->next;
        size_t h = hash(e->name) & (nc - 1);
        e->next = nt[h];
        nt[h] = e;
      }
    s->tab = nt;
    s->cap = nc;
  }
  gv_sym *e = gv_alloc(c->tmp, sizeof *e);
  e->name = name;
  e->v = v;
  e->poison = poison;
  size_t h = hash(name) & (s->cap - 1);
  e->next = s->tab[h];
  s->tab[h] = e;
  s->n++;
  if (v && !v->name) v->name = gv_strdup(c->m->arena, name);
  return 0;
}

int gv_bind(gv_ictx *c, const char *name, gv_value *v) { return insert(c, name, v, NULL); }
int gv_bind_poison(gv_ictx *c, const char *name, const char *why) { return insert(c, name, NULL, why); }

int gv_bind_seq(gv_ictx *c, const char *name, gv_value *const *vals, int n) {
  if (insert(c, name, NULL, "a sequence")) return -1;
  gv_sym *e = find(c->scope, name);
  e->is_seq = true;
  e->nseq = n;
  e->seq = gv_alloc(c->tmp, (size_t)(n ? n : 1) * sizeof *e->seq);
  for (int i = 0; i < n; i++) e->seq[i] = vals[i];
  return 0;
}

static gv_sym *lookup_sym(gv_ictx *c, const char *name) {
  for (gv_scope *s = c->scope; s; s = s->parent) {
    gv_sym *e = find(s, name);
    if (e) return e;
  }
  return NULL;
}

bool gv_is_seq(gv_ictx *c, const char *name) {
  gv_sym *e = lookup_sym(c, name);
  return e && e->is_seq;
}

int gv_lookup_seq(gv_ictx *c, const char *name, gv_value ***vals) {
  gv_sym *e = lookup_sym(c, name);
  if (!e) return gv_node_error(c, "undefined value '%s'", gv_esc(c, name));
  if (!e->is_seq) return gv_node_error(c, "'%s' is a tensor where a sequence is expected", gv_esc(c, name));
  *vals = e->seq;
  return e->nseq;
}

gv_value *gv_lookup(gv_ictx *c, const char *name) {
  for (gv_scope *s = c->scope; s; s = s->parent) {
    gv_sym *e = find(s, name);
    if (!e) continue;
    if (e->is_seq) {
      if (c->node) gv_node_error(c, "'%s' is a sequence where a tensor is expected", gv_esc(c, name));
      else gv_error(c->m, "graph output '%s' is a sequence (the programs' outputs are tensors)", gv_esc(c, name));
      return NULL;
    }
    if (!e->v) {
      if (c->node) gv_node_error(c, "uses '%s': %s", gv_esc(c, name), e->poison);
      else gv_error(c->m, "graph output '%s': %s", gv_esc(c, name), e->poison);
      return NULL;
    }
    return e->v;
  }
  if (c->node) gv_node_error(c, "undefined value '%s'", gv_esc(c, name));
  else gv_error(c->m, "graph output '%s': undefined value '%s'", gv_esc(c, name), gv_esc(c, name));
  return NULL;
}

/* ---------------------------------------------------------------- dims */

int gv_parse_dims(const char *s, int64_t *dims, int max) {
  if (!s || !*s) return -1;
  int n = 0;
  while (*s) {
    if (n == max || *s < '0' || *s > '9') return -1;
    int64_t v = 0;
    for (; *s >= '0' && *s <= '9'; s++) {
      if (v > (INT64_MAX - 9) / 10) return -1;
      v = v * 10 + (*s - '0');
    }
    if (v <= 0) return -1;
    dims[n++] = v;
    if (*s == 'x' || *s == 'X') {
      s++;
      if (!*s) return -1;
    } else if (*s) {
      return -1;
    }
  }
  return n;
}

/* dim_param names bound by --batch / --seq (compared case-insensitively).
 * Exact names first, then substrings. Anything else must be bound with
 * --input-shape. Keep docs (galvc --help) in step with these lists. */
static const char *const batch_names[] = {"batch", "batch_size", "batchsize", "bs", "n", "b", "nbatch",
                                          "num_batch", NULL};
static const char *const batch_parts[] = {"batch", NULL};
static const char *const seq_names[] = {"seq", "sequence", "seq_len", "seqlen", "seq_length", "sequence_length",
                                        "t", "s", "l", "len", "length", "time", "steps", "tokens",
                                        "num_tokens", "past", NULL};
static const char *const seq_parts[] = {"seq", "len", "past", "token", NULL};

static bool name_in(const char *s, const char *const *exact, const char *const *parts) {
  for (int i = 0; exact[i]; i++)
    if (strcasecmp(s, exact[i]) == 0) return true;
  for (int i = 0; parts[i]; i++)
    if (strcasestr(s, parts[i])) return true;
  return false;
}

/* Type of a graph input with every dim bound (override, dim_value, or a
 * batch/seq-like dim_param). */
static int input_type(gv_ictx *c, const Onnx__ValueInfoProto *vi, gv_type *out) {
  const char *name = vi->name ? vi->name : "";
  const char *en = gv_esc(c, name);
  const Onnx__TypeProto *tp = vi->type;
  if (!tp || tp->value_case != ONNX__TYPE_PROTO__VALUE_TENSOR_TYPE || !tp->tensor_type)
    return gv_error(c->m, "input '%s': only tensor inputs are supported", en);
  const Onnx__TypeProto__Tensor *tt = tp->tensor_type;
  gv_dtype dt = gv_onnx_dtype(tt->elem_type);
  if (dt == GV_DT_UNKNOWN)
    return gv_error(c->m, "input '%s': unsupported data type %s (%d)", en, gv_onnx_dtype_name(tt->elem_type),
                    (int)tt->elem_type);
  const gv_input_shape *ov = NULL;
  for (int i = 0; i < c->opt->nshapes; i++)
    if (c->opt->shapes[i].name && strcmp(c->opt->shapes[i].name, name) == 0) ov = &c->opt->shapes[i];
  const Onnx__TensorShapeProto *sh = tt->shape;
  if (sh && sh->n_dim > GV_MAX_RANK)
    return gv_error(c->m, "input '%s': rank %zu exceeds the maximum %d", en, sh->n_dim, GV_MAX_RANK);
  int64_t dims[GV_MAX_RANK];
  int rank;
  if (ov) {
    if (sh && (size_t)ov->rank != sh->n_dim)
      return gv_error(c->m, "input '%s': --input-shape gives rank %d but the model's input has rank %zu", en,
                      ov->rank, sh->n_dim);
    rank = ov->rank;
    for (int i = 0; i < rank; i++) {
      if (ov->dims[i] < 0) return gv_error(c->m, "input '%s': negative dimension in --input-shape", en);
      dims[i] = ov->dims[i];
    }
  } else {
    if (!sh) return gv_error(c->m, "input '%s' has no shape; bind it with --input-shape %s=DxD...", en, en);
    rank = (int)sh->n_dim;
    for (int i = 0; i < rank; i++) {
      const Onnx__TensorShapeProto__Dimension *d = sh->dim[i];
      if (d && d->value_case == ONNX__TENSOR_SHAPE_PROTO__DIMENSION__VALUE_DIM_VALUE) {
        if (d->dim_value < 0)
          return gv_error(c->m, "input '%s': negative dimension %lld at index %d", en, (long long)d->dim_value, i);
        dims[i] = d->dim_value;
      } else if (d && d->value_case == ONNX__TENSOR_SHAPE_PROTO__DIMENSION__VALUE_DIM_PARAM && d->dim_param &&
                 *d->dim_param) {
        if (name_in(d->dim_param, batch_names, batch_parts)) dims[i] = c->opt->batch;
        else if (name_in(d->dim_param, seq_names, seq_parts)) dims[i] = c->opt->seq;
        else
          return gv_error(c->m,
                          "input '%s': dim %d is symbolic ('%s') and not batch- or sequence-like; bind it with "
                          "--input-shape %s=DxD...",
                          en, i, gv_esc(c, d->dim_param), en);
      } else {
        return gv_error(c->m, "input '%s': dim %d has no value; bind it with --input-shape %s=DxD...", en, i, en);
      }
    }
  }
  *out = gv_type_make(dt, rank, dims);
  if (gv_type_numel(out) == -2) return gv_error(c->m, "input '%s': element count overflows int64", en);
  return 0;
}

/* ---------------------------------------------------------------- graphs */

/* Which float initializers train. ONNX has no mark for torch's buffers:
 * torch.onnx.export (1.13) writes parameters *and* persistent buffers as
 * initializers named by their state_dict key (a Parameter with
 * requires_grad False too), non-persistent buffers and traced tensors as
 * Constant nodes, and the results of constant folding as initializers
 * named "onnx::<consumer op>_<n>" (a Linear's transposed weight becomes
 * "onnx::MatMul_<n>") or, for scoped nodes, "/path/Constant_output_0".
 * So the default rule goes by name: a torch-generated name (a leading '/'
 * or "::") is a folded constant and stays frozen, except the folded weight
 * operands of MatMul / Gemm, which are Linear weights, and of LSTM / GRU
 * (torch.nn.LSTM / GRU's weights and biases, gate-reordered and
 * concatenated: AdamW and SGD are elementwise, so training them trains the
 * module's parameters); a state_dict key
 * trains unless it names a buffer (or a frozen table) of a common torch /
 * transformers module (the list below). Its limits (docs/autodiff.md): a
 * buffer with another name trains, a folded MatMul operand that came from a
 * buffer trains, and a parameter folded through another op stays frozen;
 * --freeze / --trainable correct them. */
static const char *const buffer_names[] = {
    "running_mean", "*.running_mean", "running_var", "*.running_var", /* BatchNorm / InstanceNorm statistics */
    "inv_freq", "*.inv_freq", "*cos_cached", "*sin_cached",          /* rotary embedding tables */
    "*masked_bias", "*causal_mask",                                   /* attention masks and their fill value */
    "*encoder.embed_positions.weight", /* Whisper's / Marian's sinusoidal encoder positions (requires_grad False) */
    "*embed_positions.weights",        /* M2M100 / Speech2Text / FSMT sinusoidal position buffer */
};

bool gv_onnx_default_trains(const char *name) {
  if (name[0] == '/' || strstr(name, "::"))
    return strncmp(name, "onnx::MatMul_", 13) == 0 || strncmp(name, "onnx::Gemm_", 11) == 0 ||
           strncmp(name, "onnx::LSTM_", 11) == 0 || strncmp(name, "onnx::GRU_", 10) == 0;
  for (size_t i = 0; i < sizeof buffer_names / sizeof *buffer_names; i++)
    if (fnmatch(buffer_names[i], name, 0) == 0) return false;
  return true;
}

static int import_initializer(gv_ictx *c, const Onnx__TensorProto *t) {
  const char *name = t->name ? t->name : "";
  char what[64 + 4096];
  snprintf(what, sizeof what, "initializer '%.4000s'", gv_esc(c, name));
  gv_type ty;
  if (gv_onnx_tensor_type(c, t, what, &ty)) return -1;
  bool isf = gv_dtype_is_float(ty.dtype), train = isf && gv_onnx_default_trains(name);
  for (int k = 0; k < c->opt->nselect; k++) {
    if (fnmatch(c->opt->select[k].pattern, name, 0) != 0) continue;
    if (!isf) {
      c->sel_other[k]++;
      continue;
    }
    c->sel_float[k]++;
    train = c->opt->select[k].train;
  }
  if (isf && (train || gv_type_numel(&ty) > 1)) {
    /* a weight: a function parameter whose bytes stay where they are;
     * frozen: read by the step, never trained */
    const void *data;
    if (gv_onnx_param_data(c, t, &ty, &data)) return -1;
    gv_func *f = c->m->main;
    gv_value *v = gv_func_add_arg(c->m, f, name, ty, true);
    f->param_data[v->index] = data;
    if (!train) {
      if (!f->arg_is_frozen) f->arg_is_frozen = gv_alloc(c->m->arena, (size_t)f->cap_args * sizeof *f->arg_is_frozen);
      f->arg_is_frozen[v->index] = true;
    }
    return gv_bind(c, name, v);
  }
  /* integers, and frozen one-element floats (scales, epsilons: they fold) */
  gv_tensor *val = gv_onnx_tensor(c, t, what);
  if (!val) return -1;
  gv_op *op = gv_constant_new(c->m, val);
  gv_op_set_loc(c->m, op, name, NULL);
  gv_block_append(c->scope->block, op);
  return gv_bind(c, name, op->res[0]);
}

int gv_import_graph_body(gv_ictx *c, const Onnx__GraphProto *g, gv_value ***outs) {
  c->node = NULL;
  for (size_t i = 0; i < g->n_initializer; i++)
    if (import_initializer(c, g->initializer[i])) return -1;
  if (g->n_sparse_initializer) return gv_error(c->m, "sparse initializers are not supported");
  for (size_t i = 0; i < g->n_node; i++) {
    c->node = g->node[i];
    if (gv_import_node(c, g->node[i])) return -1;
  }
  c->node = NULL;
  gv_value **o = gv_alloc(c->m->arena, (g->n_output ? g->n_output : 1) * sizeof *o);
  for (size_t i = 0; i < g->n_output; i++) {
    const char *name = g->output[i] && g->output[i]->name ? g->output[i]->name : "";
    if (!(o[i] = gv_lookup(c, name))) return -1;
  }
  *outs = o;
  return 0;
}

int gv_import_graph_nodes(gv_ictx *c, const Onnx__GraphProto *g) {
  c->node = NULL;
  for (size_t i = 0; i < g->n_initializer; i++) { /* constants: a body imported per iteration trains nothing */
    const Onnx__TensorProto *t = g->initializer[i];
    const char *name = t->name ? t->name : "";
    char what[64 + 4096];
    snprintf(what, sizeof what, "initializer '%.4000s'", gv_esc(c, name));
    gv_tensor *val = gv_onnx_tensor(c, t, what);
    if (!val) return -1;
    gv_op *op = gv_constant_new(c->m, val);
    gv_op_set_loc(c->m, op, name, NULL);
    gv_block_append(c->scope->block, op);
    if (gv_bind(c, name, op->res[0])) return -1;
  }
  if (g->n_sparse_initializer) return gv_error(c->m, "sparse initializers are not supported");
  for (size_t i = 0; i < g->n_node; i++) {
    c->node = g->node[i];
    if (gv_import_node(c, g->node[i])) return -1;
  }
  c->node = NULL;
  return 0;
}

static bool is_initializer(const Onnx__GraphProto *g, const char *name) {
  for (size_t i = 0; i < g->n_initializer; i++)
    if (g->initializer[i]->name && strcmp(g->initializer[i]->name, name) == 0) return true;
  return false;
}

static int import_model(gv_ictx *c, const Onnx__ModelProto *mp) {
  gv_module *m = c->m;
  const Onnx__GraphProto *g = mp->graph;
  if (!g) return gv_error(m, "cannot parse ONNX ModelProto: no graph");
  int found = 0;
  for (size_t i = 0; i < mp->n_opset_import; i++) {
    const Onnx__OperatorSetIdProto *o = mp->opset_import[i];
    if (!o || (o->domain && *o->domain && strcmp(o->domain, "ai.onnx") != 0)) continue;
    int64_t v = o->has_version ? o->version : 0;
    if (v < MIN_OPSET || v > MAX_OPSET)
      return gv_error(m, "opset %lld of the default domain is not supported (supported: %d to %d)", (long long)v,
                      MIN_OPSET, MAX_OPSET);
    c->opset = (int)v;
    found = 1;
  }
  if (!found) return gv_error(m, "no default-domain (ai.onnx) opset import; supported opsets: %d to %d", MIN_OPSET,
                              MAX_OPSET);

  gv_func *f = gv_func_new(m, "main");
  m->main = f;
  gv_scope_push(c, f->body);
  /* --input-shape names must exist: a typo would otherwise be silently ignored */
  for (int k = 0; k < c->opt->nshapes; k++) {
    const char *want = c->opt->shapes[k].name ? c->opt->shapes[k].name : "";
    bool ok = false;
    for (size_t i = 0; i < g->n_input && !ok; i++)
      ok = g->input[i] && g->input[i]->name && strcmp(g->input[i]->name, want) == 0 &&
           !is_initializer(g, want);
    if (!ok) return gv_error(m, "--input-shape %s: the model has no graph input of that name", gv_esc(c, want));
  }
  /* graph inputs first (params follow: initializers are imported after) */
  for (size_t i = 0; i < g->n_input; i++) {
    const Onnx__ValueInfoProto *vi = g->input[i];
    if (!vi) continue;
    const char *name = vi->name ? vi->name : "";
    if (is_initializer(g, name)) continue; /* IR < 4 lists initializers as inputs too */
    gv_type ty;
    if (input_type(c, vi, &ty)) return -1;
    gv_value *v = gv_func_add_arg(m, f, name, ty, false);
    if (gv_bind(c, name, v)) return -1;
  }
  gv_value **outs;
  if (gv_onnx_check_supported(c, g) || gv_import_graph_body(c, g, &outs)) return -1;
  /* a --freeze / --trainable pattern that matches nothing is a typo: training everything instead would be silent */
  for (int k = 0; k < c->opt->nselect; k++) {
    const gv_train_select *s = &c->opt->select[k];
    if (c->sel_float[k]) continue;
    if (c->sel_other[k])
      return gv_error(m, "--%s '%s': matches only non-float initializers (only float initializers train)",
                      s->train ? "trainable" : "freeze", gv_esc(c, s->pattern));
    return gv_error(m, "--%s '%s': no initializer matches", s->train ? "trainable" : "freeze", gv_esc(c, s->pattern));
  }
  /* an input's static dim 0 given another size (--input-shape, or galvc's microbatches): an output the model declares
   * with that static size in dim 0 that keeps it (a batch built into the graph: a static export's Reshape or initial
   * state) would hold rows for samples that are not there: refused rather than run */
  for (size_t i = 0; i < g->n_input; i++) {
    const Onnx__ValueInfoProto *vi = g->input[i];
    const char *in = vi && vi->name ? vi->name : "";
    if (!vi || is_initializer(g, in) || !vi->type || vi->type->value_case != ONNX__TYPE_PROTO__VALUE_TENSOR_TYPE ||
        !vi->type->tensor_type || !vi->type->tensor_type->shape || vi->type->tensor_type->shape->n_dim < 1)
      continue;
    const Onnx__TensorShapeProto__Dimension *d0 = vi->type->tensor_type->shape->dim[0];
    if (!d0 || d0->value_case != ONNX__TENSOR_SHAPE_PROTO__DIMENSION__VALUE_DIM_VALUE) continue;
    const gv_value *a = NULL;
    for (int k = 0; k < f->body->nargs && !a; k++)
      if (f->arg_names[k] && !strcmp(f->arg_names[k], in)) a = f->body->args[k];
    if (!a || a->type.rank < 1 || a->type.dims[0] == d0->dim_value) continue;
    for (size_t o = 0; o < g->n_output; o++) {
      const Onnx__ValueInfoProto *ov = g->output[o];
      if (!ov || !outs[o] || !ov->type || ov->type->value_case != ONNX__TYPE_PROTO__VALUE_TENSOR_TYPE || !ov->type->tensor_type ||
          !ov->type->tensor_type->shape || ov->type->tensor_type->shape->n_dim < 1 || outs[o]->type.rank < 1)
        continue;
      const Onnx__TensorShapeProto__Dimension *e0 = ov->type->tensor_type->shape->dim[0];
      if (e0 && e0->value_case == ONNX__TENSOR_SHAPE_PROTO__DIMENSION__VALUE_DIM_VALUE && e0->dim_value == d0->dim_value &&
          outs[o]->type.dims[0] == d0->dim_value)
        return gv_error(m, "input '%s': dim 0 is fixed at %lld in the model and given %lld, but output '%s' keeps %lld rows "
                        "(the graph builds its batch in: a static export); keep the batch at %lld or export the model "
                        "with a dynamic batch axis", gv_esc(c, in), (long long)d0->dim_value, (long long)a->type.dims[0],
                        gv_esc(c, ov->name ? ov->name : ""), (long long)d0->dim_value, (long long)d0->dim_value);
    }
  }
  gv_op *ret = gv_op_new(m, GV_OP_RETURN, (int)g->n_output, outs, 0);
  gv_op_set_loc(m, ret, "return", NULL);
  gv_block_append(f->body, ret);
  f->nres_names = (int)g->n_output;
  f->res_names = gv_alloc(m->arena, (g->n_output ? g->n_output : 1) * sizeof *f->res_names);
  for (size_t i = 0; i < g->n_output; i++)
    f->res_names[i] = gv_strdup(m->arena, g->output[i]->name ? g->output[i]->name : "");
  gv_scope_pop(c);
  return 0;
}

/* ---------------------------------------------------------------- entry points */

gv_module *gv_import_onnx_buffer(const void *data, size_t len, const char *source, const char *dir,
                                 const gv_import_options *opt) {
  static const gv_import_options dflt = {.batch = 1, .seq = 128, .load_weights = true};
  if (!opt) opt = &dflt;
  gv_module *m = gv_module_new(source);
  Onnx__ModelProto *mp = onnx__model_proto__unpack(NULL, len, data);
  if (!mp) {
    gv_error(m, "cannot parse ONNX ModelProto");
    gv_module_free(m);
    return NULL;
  }
  gv_ictx c = {.m = m, .tmp = gv_arena_new(), .opt = opt, .dir = dir};
  c.sel_float = gv_alloc(c.tmp, (size_t)(opt->nselect + 1) * sizeof *c.sel_float);
  c.sel_other = gv_alloc(c.tmp, (size_t)(opt->nselect + 1) * sizeof *c.sel_other);
  int rc = import_model(&c, mp);
  gv_onnx_xfiles_free(&c);
  gv_arena_free(c.tmp);
  onnx__model_proto__free_unpacked(mp, NULL);
  if (rc) {
    gv_module_free(m);
    return NULL;
  }
  return m;
}

#define GV_ONNX_FILE_MAX ((uint64_t)INT32_MAX)

gv_module *gv_import_onnx(const char *path, const gv_import_options *opt) {
  int fd = open(path, O_RDONLY | O_CLOEXEC | O_NONBLOCK); /* O_NONBLOCK: a FIFO does not hang the open */
  if (fd < 0) {
    gv_error_plain("%s: cannot open: %s", path, strerror(errno));
    return NULL;
  }
  struct stat st;
  if (fstat(fd, &st) != 0 || !S_ISREG(st.st_mode)) {
    close(fd);
    gv_error_plain("%s: not a regular file", path);
    return NULL;
  }
  if ((uint64_t)st.st_size > GV_ONNX_FILE_MAX) { /* protobuf's own limit: larger models keep weights external */
    close(fd);
    gv_error_plain("%s: file of %lld bytes, larger than the 2 GiB an ONNX protobuf can be (store the weights as external data)",
                   path, (long long)st.st_size);
    return NULL;
  }
  size_t len = (size_t)st.st_size;
  void *p = NULL;
  if (len) {
    p = mmap(NULL, len, PROT_READ, MAP_PRIVATE, fd, 0);
    if (p == MAP_FAILED) {
      close(fd);
      gv_error_plain("%s: cannot map: %s", path, strerror(errno));
      return NULL;
    }
  }
  close(fd);
  /* external data is relative to the model's folder */
  const char *slash = strrchr(path, '/');
  char *dir;
  if (!slash) dir = strdup(".");
  else if (slash == path) dir = strdup("/");
  else dir = strndup(path, (size_t)(slash - path));
  gv_module *m = NULL;
  if (!dir) gv_error_plain("%s: out of memory", path);
  else m = gv_import_onnx_buffer(len ? p : "", len, path, dir, opt);
  free(dir);
  if (len) munmap(p, len);
  return m;
}
