/* test_frontend.c — unit tests of the ONNX frontend (frontend/).
 *
 * Models are built here with the protobuf-c structs generated from onnx.proto,
 * packed to bytes and imported through gv_import_onnx_buffer (or written to a
 * temp folder for external data). Checked: op mapping and attributes, params
 * vs constants, dims bound from options, little-endian raw_data decoding,
 * typed-field decoding, external data (mmap happy path and every rejection),
 * one-line errors, and that every op type of examples/models/torch/ops.txt
 * is in the frontend's table. */
#define _GNU_SOURCE
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "frontend/onnx_import.h"
#include "onnx.pb-c.h"

static int failures;
#define CHECK(c)                                                                                   \
  do {                                                                                             \
    if (!(c)) {                                                                                    \
      fprintf(stderr, "%s:%d: check failed: %s\n", __FILE__, __LINE__, #c);                        \
      failures++;                                                                                  \
      return 1;                                                                                    \
    }                                                                                              \
  } while (0)

/* ---------------------------------------------------------------- model building */

/* every allocation of a test model, freed by reset() */
static void *allocs[4096];
static int nallocs;
static void *A(size_t n) {
  void *p = calloc(1, n ? n : 1);
  if (!p || nallocs == 4096) abort();
  allocs[nallocs++] = p;
  return p;
}
static void reset(void) {
  while (nallocs) free(allocs[--nallocs]);
}
static char *S(const char *s) { return strcpy(A(strlen(s) + 1), s); }

#define CAP 64
static Onnx__GraphProto *graph(void) {
  Onnx__GraphProto *g = A(sizeof *g);
  onnx__graph_proto__init(g);
  g->name = S("g");
  g->node = A(CAP * sizeof *g->node);
  g->input = A(CAP * sizeof *g->input);
  g->output = A(CAP * sizeof *g->output);
  g->initializer = A(CAP * sizeof *g->initializer);
  return g;
}

static Onnx__NodeProto *node(Onnx__GraphProto *g, const char *op, const char *name, const char *ins,
                             const char *outs) {
  Onnx__NodeProto *n = A(sizeof *n);
  onnx__node_proto__init(n);
  n->op_type = S(op);
  n->name = S(name);
  n->input = A(CAP * sizeof(char *));
  n->output = A(CAP * sizeof(char *));
  n->attribute = A(CAP * sizeof *n->attribute);
  /* ins / outs: comma-separated names; "" entries are empty optional inputs */
  for (int pass = 0; pass < 2; pass++) {
    const char *s = pass ? outs : ins;
    if (!s || !*s) continue;
    char *copy = S(s), *save = NULL;
    for (char *p = copy;; p = NULL) {
      char *t = strtok_r(p, ",", &save);
      if (!t) break;
      if (strcmp(t, "_") == 0) t = S("");
      if (pass) n->output[n->n_output++] = t;
      else n->input[n->n_input++] = t;
    }
  }
  g->node[g->n_node++] = n;
  return n;
}

static Onnx__AttributeProto *attr(Onnx__NodeProto *n, const char *name, Onnx__AttributeProto__AttributeType t) {
  Onnx__AttributeProto *a = A(sizeof *a);
  onnx__attribute_proto__init(a);
  a->name = S(name);
  a->has_type = 1;
  a->type = t;
  n->attribute[n->n_attribute++] = a;
  return a;
}
static void attr_i(Onnx__NodeProto *n, const char *name, int64_t v) {
  Onnx__AttributeProto *a = attr(n, name, ONNX__ATTRIBUTE_PROTO__ATTRIBUTE_TYPE__INT);
  a->has_i = 1;
  a->i = v;
}
static void attr_f(Onnx__NodeProto *n, const char *name, float v) {
  Onnx__AttributeProto *a = attr(n, name, ONNX__ATTRIBUTE_PROTO__ATTRIBUTE_TYPE__FLOAT);
  a->has_f = 1;
  a->f = v;
}
static void attr_ints(Onnx__NodeProto *n, const char *name, int k, const int64_t *v) {
  Onnx__AttributeProto *a = attr(n, name, ONNX__ATTRIBUTE_PROTO__ATTRIBUTE_TYPE__INTS);
  a->n_ints = (size_t)k;
  a->ints = A((size_t)k * sizeof(int64_t) + 1);
  memcpy(a->ints, v, (size_t)k * sizeof(int64_t));
}
static void attr_g(Onnx__NodeProto *n, const char *name, Onnx__GraphProto *g) {
  attr(n, name, ONNX__ATTRIBUTE_PROTO__ATTRIBUTE_TYPE__GRAPH)->g = g;
}

/* dims: -1 is a dim_param taken from params[i], anything else a value */
static Onnx__ValueInfoProto *vinfo(const char *name, int elem, int rank, const int64_t *dims,
                                   const char *const *params) {
  Onnx__ValueInfoProto *v = A(sizeof *v);
  onnx__value_info_proto__init(v);
  v->name = S(name);
  Onnx__TypeProto *tp = A(sizeof *tp);
  onnx__type_proto__init(tp);
  Onnx__TypeProto__Tensor *tt = A(sizeof *tt);
  onnx__type_proto__tensor__init(tt);
  tt->has_elem_type = 1;
  tt->elem_type = elem;
  if (rank >= 0) {
    Onnx__TensorShapeProto *sh = A(sizeof *sh);
    onnx__tensor_shape_proto__init(sh);
    sh->n_dim = (size_t)rank;
    sh->dim = A((size_t)(rank + 1) * sizeof *sh->dim);
    for (int i = 0; i < rank; i++) {
      Onnx__TensorShapeProto__Dimension *d = A(sizeof *d);
      onnx__tensor_shape_proto__dimension__init(d);
      if (dims[i] != -1) {
        d->value_case = ONNX__TENSOR_SHAPE_PROTO__DIMENSION__VALUE_DIM_VALUE;
        d->dim_value = dims[i];
      } else {
        d->value_case = ONNX__TENSOR_SHAPE_PROTO__DIMENSION__VALUE_DIM_PARAM;
        d->dim_param = S(params[i]);
      }
      sh->dim[i] = d;
    }
    tt->shape = sh;
  }
  tp->value_case = ONNX__TYPE_PROTO__VALUE_TENSOR_TYPE;
  tp->tensor_type = tt;
  v->type = tp;
  return v;
}
static void input(Onnx__GraphProto *g, Onnx__ValueInfoProto *v) { g->input[g->n_input++] = v; }
static void output(Onnx__GraphProto *g, const char *name) {
  g->output[g->n_output++] = vinfo(name, ONNX__TENSOR_PROTO__DATA_TYPE__FLOAT, -1, NULL, NULL);
}

static Onnx__TensorProto *tensor(const char *name, int dt, int rank, const int64_t *dims) {
  Onnx__TensorProto *t = A(sizeof *t);
  onnx__tensor_proto__init(t);
  t->name = S(name);
  t->has_data_type = 1;
  t->data_type = dt;
  t->n_dims = (size_t)rank;
  t->dims = A((size_t)(rank + 1) * sizeof(int64_t));
  if (rank) memcpy(t->dims, dims, (size_t)rank * sizeof(int64_t));
  return t;
}
static Onnx__TensorProto *raw(Onnx__TensorProto *t, const void *bytes, size_t n) {
  t->has_raw_data = 1;
  t->raw_data.len = n;
  t->raw_data.data = A(n);
  memcpy(t->raw_data.data, bytes, n);
  return t;
}
static void init(Onnx__GraphProto *g, Onnx__TensorProto *t) { g->initializer[g->n_initializer++] = t; }
static Onnx__TensorProto *external(Onnx__TensorProto *t, const char *loc, const char *off, const char *len) {
  t->has_data_location = 1;
  t->data_location = ONNX__TENSOR_PROTO__DATA_LOCATION__EXTERNAL;
  t->external_data = A(3 * sizeof *t->external_data);
  const char *kv[3][2] = {{"location", loc}, {"offset", off}, {"length", len}};
  for (int i = 0; i < 3; i++) {
    if (!kv[i][1]) continue;
    Onnx__StringStringEntryProto *e = A(sizeof *e);
    onnx__string_string_entry_proto__init(e);
    e->key = S(kv[i][0]);
    e->value = S(kv[i][1]);
    t->external_data[t->n_external_data++] = e;
  }
  return t;
}

typedef struct {
  uint8_t *data;
  size_t len;
} bytes;

static bytes pack(Onnx__GraphProto *g, int opset) {
  Onnx__ModelProto m;
  onnx__model_proto__init(&m);
  m.has_ir_version = 1;
  m.ir_version = 8;
  Onnx__OperatorSetIdProto os, *osp = &os;
  onnx__operator_set_id_proto__init(&os);
  os.domain = S("");
  os.has_version = 1;
  os.version = opset;
  m.n_opset_import = 1;
  m.opset_import = &osp;
  m.graph = g;
  bytes b;
  b.len = onnx__model_proto__get_packed_size(&m);
  b.data = A(b.len + 1);
  onnx__model_proto__pack(&m, b.data);
  return b;
}

static gv_import_options opts(void) {
  gv_import_options o = {.batch = 3, .seq = 7, .load_weights = true};
  return o;
}

static gv_module *import(Onnx__GraphProto *g, int opset, const char *dir, const gv_import_options *o) {
  bytes b = pack(g, opset);
  gv_import_options d = opts();
  return gv_import_onnx_buffer(b.data, b.len, "t.onnx", dir, o ? o : &d);
}

/* Imports expecting failure; the one stderr line must contain want. */
static char errbuf[4096];
static int import_err(Onnx__GraphProto *g, int opset, const char *dir, const gv_import_options *o, const char *want) {
  fflush(stderr);
  int saved = dup(2);
  FILE *tmp = tmpfile();
  if (!tmp || saved < 0) return 1;
  dup2(fileno(tmp), 2);
  gv_module *m = import(g, opset, dir, o);
  fflush(stderr);
  dup2(saved, 2);
  close(saved);
  rewind(tmp);
  size_t n = fread(errbuf, 1, sizeof errbuf - 1, tmp);
  errbuf[n] = 0;
  fclose(tmp);
  if (m) {
    gv_module_free(m);
    fprintf(stderr, "expected an error containing '%s', import succeeded\n", want);
    return 1;
  }
  int lines = 0;
  for (size_t i = 0; i < n; i++) lines += errbuf[i] == '\n';
  if (lines != 1 || !strstr(errbuf, want) || !strstr(errbuf, "t.onnx")) {
    fprintf(stderr, "expected one error line containing '%s', got: %s", want, errbuf);
    return 1;
  }
  return 0;
}

/* ---------------------------------------------------------------- IR queries */

static gv_op *find(gv_block *b, gv_opcode code, int nth) {
  for (gv_op *op = b->first; op; op = op->next)
    if (op->code == code && nth-- == 0) return op;
  return NULL;
}
static int count(gv_block *b, gv_opcode code) {
  int n = 0;
  for (gv_op *op = b->first; op; op = op->next) n += op->code == code;
  return n;
}
static int ints_eq(const gv_op *op, const char *name, int k, const int64_t *want) {
  const int64_t *v;
  int n = gv_get_ints(op, name, &v);
  if (n != k) return 0;
  for (int i = 0; i < k; i++)
    if (v[i] != want[i]) return 0;
  return 1;
}
static const gv_tensor *const_of(const gv_value *v) {
  if (!v->def || v->def->code != GV_OP_CONSTANT) return NULL;
  const gv_attr *a = gv_get_attr(v->def, "value");
  return a ? a->u.t : NULL;
}

enum { F32 = ONNX__TENSOR_PROTO__DATA_TYPE__FLOAT, I64 = ONNX__TENSOR_PROTO__DATA_TYPE__INT64 };

/* ---------------------------------------------------------------- tests */

/* MatMul + Add + Relu with symbolic dims; weights become params */
static int test_mlp(void) {
  Onnx__GraphProto *g = graph();
  const char *p[] = {"batch_size", "sequence_length", ""};
  input(g, vinfo("x", F32, 3, (int64_t[]){-1, -1, 4}, p));
  float w[8] = {1, 2, 3, 4, 5, 6, 7, 8};
  init(g, raw(tensor("w", F32, 2, (int64_t[]){4, 2}), w, sizeof w));
  float bias = 0.5f;
  init(g, raw(tensor("b", F32, 0, NULL), &bias, 4));
  node(g, "MatMul", "/fc/MatMul", "x,w", "h");
  node(g, "Add", "/fc/Add", "h,b", "h2");
  node(g, "Relu", "/act/Relu", "h2", "y");
  output(g, "y");
  gv_module *m = import(g, 17, NULL, NULL);
  CHECK(m);
  gv_func *f = m->main;
  gv_block *b = f->body;
  CHECK(b->nargs == 3); /* the 0-d bias "b" is a weight too: which initializers train is not a matter of size */
  CHECK(!f->arg_is_param[0] && f->arg_is_param[1] && f->arg_is_param[2] && gv_arg_trains(f, 1) && gv_arg_trains(f, 2));
  CHECK(strcmp(f->arg_names[0], "x") == 0 && strcmp(f->arg_names[1], "w") == 0 && strcmp(f->arg_names[2], "b") == 0);
  CHECK(b->args[0]->type.rank == 3 && b->args[0]->type.dims[0] == 3 && b->args[0]->type.dims[1] == 7 &&
        b->args[0]->type.dims[2] == 4);
  CHECK(f->param_data[1] && memcmp(f->param_data[1], w, sizeof w) == 0);
  gv_op *dot = find(b, GV_OP_DOT, 0);
  CHECK(dot && strcmp(dot->loc, "/fc/MatMul") == 0 && strcmp(dot->onnx_op, "MatMul") == 0);
  CHECK(ints_eq(dot, "lhs_contract", 1, (int64_t[]){2}) && ints_eq(dot, "rhs_contract", 1, (int64_t[]){0}));
  CHECK(ints_eq(dot, "lhs_batch", 0, NULL) && ints_eq(dot, "rhs_batch", 0, NULL));
  gv_op *add = find(b, GV_OP_ADD, 0);
  CHECK(add && add->opnds[0] == dot->res[0]);
  CHECK(add->opnds[1] == b->args[2] && b->args[2]->type.rank == 0 && *(const float *)f->param_data[2] == 0.5f);
  gv_op *ret = gv_block_terminator(b);
  CHECK(ret && ret->code == GV_OP_RETURN && ret->nopnds == 1 && ret->opnds[0] == find(b, GV_OP_RELU, 0)->res[0]);
  CHECK(f->nres_names == 1 && strcmp(f->res_names[0], "y") == 0);
  CHECK(strcmp(ret->opnds[0]->name, "y") == 0);
  gv_module_free(m);

  /* shapes only: params carry no bytes */
  gv_import_options o = opts();
  o.load_weights = false;
  m = import(g, 17, NULL, &o);
  CHECK(m && m->main->arg_is_param[1] && !m->main->param_data[1]);
  gv_module_free(m);

  /* --input-shape overrides; rank must match; unknown names are errors */
  gv_input_shape sh = {.name = "x", .rank = 3, .dims = {5, 6, 4}};
  o = opts();
  o.nshapes = 1;
  o.shapes = &sh;
  m = import(g, 17, NULL, &o);
  CHECK(m && m->main->body->args[0]->type.dims[0] == 5 && m->main->body->args[0]->type.dims[1] == 6);
  gv_module_free(m);
  sh.rank = 2;
  CHECK(import_err(g, 17, NULL, &o, "rank") == 0);
  sh.rank = 3;
  sh.name = "nope";
  CHECK(import_err(g, 17, NULL, &o, "no graph input") == 0);
  reset();
  return 0;
}

static int test_symbolic_dims(void) {
  const char *names[][2] = {{"N", "b"}, {"batch", "seq"}, {"my_batch", "past_seq_len"}, {"B", "T"}};
  for (int k = 0; k < 4; k++) {
    Onnx__GraphProto *g = graph();
    input(g, vinfo("ids", I64, 2, (int64_t[]){-1, -1}, names[k]));
    node(g, "Identity", "/id", "ids", "y");
    output(g, "y");
    gv_module *m = import(g, 17, NULL, NULL);
    CHECK(m);
    gv_type t = m->main->body->args[0]->type;
    /* "b" is batch-like (checked before seq) */
    CHECK(t.dims[0] == 3 && t.dims[1] == (k == 0 ? 3 : 7));
    gv_module_free(m);
    reset();
  }
  Onnx__GraphProto *g = graph();
  const char *p[] = {"batch", "height"};
  input(g, vinfo("img", F32, 2, (int64_t[]){-1, -1}, p));
  node(g, "Relu", "/r", "img", "y");
  output(g, "y");
  CHECK(import_err(g, 17, NULL, NULL, "input 'img': dim 1 is symbolic ('height')") == 0);
  CHECK(strstr(errbuf, "--input-shape"));
  g->input[0] = vinfo("img", F32, 2, (int64_t[]){2, -3}, p);
  CHECK(import_err(g, 17, NULL, NULL, "negative dimension") == 0);
  g->input[0] = vinfo("img", F32, 2, (int64_t[]){1ll << 40, 1ll << 40}, p);
  CHECK(import_err(g, 17, NULL, NULL, "overflow") == 0);
  g->input[0] = vinfo("img", ONNX__TENSOR_PROTO__DATA_TYPE__STRING, 1, (int64_t[]){2}, p);
  CHECK(import_err(g, 17, NULL, NULL, "unsupported data type STRING") == 0);
  reset();
  return 0;
}

/* raw_data is little-endian whatever the host: build the bytes by hand */
static int test_raw_decode(void) {
  Onnx__GraphProto *g = graph();
  input(g, vinfo("x", F32, 1, (int64_t[]){3}, NULL));
  uint8_t i64b[16] = {0x01, 0, 0, 0, 0, 0, 0, 0, 0xfe, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff}; /* 1, -2 */
  init(g, raw(tensor("ci", I64, 1, (int64_t[]){2}), i64b, 16));
  uint8_t f32b[4] = {0x00, 0x00, 0xc0, 0x3f}; /* 1.5f */
  init(g, raw(tensor("onnx::cf", F32, 1, (int64_t[]){1}), f32b, 4));
  uint8_t f16b[2] = {0x00, 0x3c}; /* 1.0 */
  init(g, raw(tensor("onnx::ch", ONNX__TENSOR_PROTO__DATA_TYPE__FLOAT16, 0, NULL), f16b, 2));
  uint8_t f16w[4] = {0x00, 0xc0, 0x00, 0x38}; /* -2.0, 0.5: a weight (2 elements) */
  init(g, raw(tensor("wh", ONNX__TENSOR_PROTO__DATA_TYPE__FLOAT16, 1, (int64_t[]){2}), f16w, 4));
  uint8_t boolb[3] = {1, 0, 7};
  init(g, raw(tensor("cb", ONNX__TENSOR_PROTO__DATA_TYPE__BOOL, 1, (int64_t[]){3}), boolb, 3));
  node(g, "Identity", "/i", "x", "y");
  output(g, "y");
  output(g, "ci");
  output(g, "onnx::cf");
  output(g, "onnx::ch");
  output(g, "wh");
  output(g, "cb");
  gv_module *m = import(g, 17, NULL, NULL);
  CHECK(m);
  gv_op *ret = gv_block_terminator(m->main->body);
  CHECK(ret->nopnds == 6 && ret->opnds[0] == m->main->body->args[0]);
  const gv_tensor *t = const_of(ret->opnds[1]);
  CHECK(t && t->type.dtype == GV_DT_I64 && gv_tensor_get_i(t, 0) == 1 && gv_tensor_get_i(t, 1) == -2);
  t = const_of(ret->opnds[2]);
  CHECK(t && t->type.dtype == GV_DT_F32 && gv_tensor_get_f(t, 0) == 1.5);
  t = const_of(ret->opnds[3]);
  CHECK(t && t->type.dtype == GV_DT_F16 && gv_tensor_get_f(t, 0) == 1.0);
  gv_value *wh = ret->opnds[4];
  CHECK(!wh->def && m->main->arg_is_param[wh->index]);
  const uint8_t *pd = m->main->param_data[wh->index];
  CHECK(pd && memcmp(pd, f16w, 4) == 0);
  t = const_of(ret->opnds[5]);
  CHECK(t && t->type.dtype == GV_DT_BOOL && gv_tensor_get_i(t, 0) == 1 && gv_tensor_get_i(t, 1) == 0 &&
        ((const uint8_t *)t->data)[2] == 1);
  gv_module_free(m);

  /* size mismatch */
  g->initializer[0]->raw_data.len = 15;
  CHECK(import_err(g, 17, NULL, NULL, "raw_data has 15 bytes") == 0);
  reset();
  return 0;
}

/* the typed fields: float_data, int32_data (small ints, bool, f16 bits), int64_data, double_data */
static int test_typed_decode(void) {
  Onnx__GraphProto *g = graph();
  Onnx__TensorProto *wf = tensor("wf", F32, 1, (int64_t[]){3});
  float fv[3] = {1.0f, -2.0f, 0.25f};
  wf->n_float_data = 3;
  wf->float_data = fv;
  init(g, wf);
  Onnx__TensorProto *c8 = tensor("c8", ONNX__TENSOR_PROTO__DATA_TYPE__INT8, 1, (int64_t[]){3});
  int32_t i8v[3] = {-5, 0, 127};
  c8->n_int32_data = 3;
  c8->int32_data = i8v;
  init(g, c8);
  Onnx__TensorProto *c64 = tensor("c64", I64, 1, (int64_t[]){2});
  int64_t i64v[2] = {INT64_MAX, -9};
  c64->n_int64_data = 2;
  c64->int64_data = i64v;
  init(g, c64);
  Onnx__TensorProto *cb = tensor("cb", ONNX__TENSOR_PROTO__DATA_TYPE__BOOL, 1, (int64_t[]){2});
  int32_t bv[2] = {0, 1};
  cb->n_int32_data = 2;
  cb->int32_data = bv;
  init(g, cb);
  Onnx__TensorProto *ch = tensor("onnx::ch", ONNX__TENSOR_PROTO__DATA_TYPE__FLOAT16, 0, NULL);
  int32_t hv[1] = {0xc000}; /* -2.0 */
  ch->n_int32_data = 1;
  ch->int32_data = hv;
  init(g, ch);
  Onnx__TensorProto *cd = tensor("onnx::cd", ONNX__TENSOR_PROTO__DATA_TYPE__DOUBLE, 0, NULL);
  double dv[1] = {0.1};
  cd->n_double_data = 1;
  cd->double_data = dv;
  init(g, cd);
  Onnx__TensorProto *wb = tensor("wb", ONNX__TENSOR_PROTO__DATA_TYPE__BFLOAT16, 1, (int64_t[]){2});
  int32_t bfv[2] = {0x3f80, 0xc040}; /* 1.0, -3.0 */
  wb->n_int32_data = 2;
  wb->int32_data = bfv;
  init(g, wb);
  const char *outs[] = {"wf", "c8", "c64", "cb", "onnx::ch", "onnx::cd", "wb"};
  for (int i = 0; i < 7; i++) output(g, outs[i]);
  gv_module *m = import(g, 17, NULL, NULL);
  CHECK(m);
  gv_op *ret = gv_block_terminator(m->main->body);
  CHECK(ret->nopnds == 7);
  gv_value *w = ret->opnds[0];
  CHECK(!w->def && m->main->arg_is_param[w->index]);
  const uint8_t *pd = m->main->param_data[w->index];
  /* params are little-endian bytes: 1.0f = 00 00 80 3f, -2.0f = 00 00 00 c0 */
  CHECK(pd && pd[3] == 0x3f && pd[2] == 0x80 && pd[7] == 0xc0 && pd[4] == 0);
  const gv_tensor *t = const_of(ret->opnds[1]);
  CHECK(t && t->type.dtype == GV_DT_I8 && gv_tensor_get_i(t, 0) == -5 && gv_tensor_get_i(t, 2) == 127);
  t = const_of(ret->opnds[2]);
  CHECK(t && gv_tensor_get_i(t, 0) == INT64_MAX && gv_tensor_get_i(t, 1) == -9);
  t = const_of(ret->opnds[3]);
  CHECK(t && t->type.dtype == GV_DT_BOOL && gv_tensor_get_i(t, 0) == 0 && gv_tensor_get_i(t, 1) == 1);
  t = const_of(ret->opnds[4]);
  CHECK(t && gv_tensor_get_f(t, 0) == -2.0);
  t = const_of(ret->opnds[5]);
  CHECK(t && t->type.dtype == GV_DT_F64 && gv_tensor_get_f(t, 0) == 0.1);
  gv_value *bw = ret->opnds[6];
  pd = m->main->param_data[bw->index];
  CHECK(!bw->def && pd && pd[0] == 0x80 && pd[1] == 0x3f && pd[2] == 0x40 && pd[3] == 0xc0);
  gv_module_free(m);

  /* wrong count, unsupported dtype */
  c8->n_int32_data = 2;
  CHECK(import_err(g, 17, NULL, NULL, "has 2 values, expected 3") == 0);
  c8->n_int32_data = 3;
  c8->data_type = ONNX__TENSOR_PROTO__DATA_TYPE__UINT32;
  CHECK(import_err(g, 17, NULL, NULL, "unsupported data type UINT32") == 0);
  c8->data_type = ONNX__TENSOR_PROTO__DATA_TYPE__INT8;
  c64->dims[0] = -1;
  CHECK(import_err(g, 17, NULL, NULL, "negative dimension") == 0);
  reset();
  return 0;
}

static int write_file(const char *path, const void *data, size_t n) {
  FILE *f = fopen(path, "wb");
  if (!f) return -1;
  size_t w = fwrite(data, 1, n, f);
  return fclose(f) == 0 && w == n ? 0 : -1;
}

static int test_external(void) {
  char dir[] = "/tmp/galv_fe_XXXXXX";
  CHECK(mkdtemp(dir));
  char path[1024], sub[512], outside[512];
  /* weights.bin: 16 bytes of header, then w1 [2,2] f32, then w2 [3] f32 */
  float data[4 + 4 + 3] = {0, 0, 0, 0, 1, 2, 3, 4, 5, 6, 7};
  snprintf(path, sizeof path, "%s/weights.bin", dir);
  CHECK(write_file(path, data, sizeof data) == 0);
  snprintf(sub, sizeof sub, "%s/sub", dir);
  CHECK(mkdir(sub, 0700) == 0);
  snprintf(path, sizeof path, "%s/sub/more.bin", dir);
  CHECK(write_file(path, data, sizeof data) == 0);
  int64_t ci[2] = {7, -1};
  snprintf(path, sizeof path, "%s/ints.bin", dir);
  CHECK(write_file(path, ci, sizeof ci) == 0);

  Onnx__GraphProto *g = graph();
  input(g, vinfo("x", F32, 2, (int64_t[]){2, 2}, NULL));
  Onnx__TensorProto *w1 = external(tensor("w1", F32, 2, (int64_t[]){2, 2}), "weights.bin", "16", "16");
  Onnx__TensorProto *w2 = external(tensor("w2", F32, 1, (int64_t[]){3}), "weights.bin", "32", "12");
  Onnx__TensorProto *w3 = external(tensor("w3", F32, 1, (int64_t[]){3}), "sub/more.bin", "32", NULL);
  Onnx__TensorProto *c1 = external(tensor("c1", I64, 1, (int64_t[]){2}), "ints.bin", NULL, NULL);
  init(g, w1);
  init(g, w2);
  init(g, w3);
  init(g, c1);
  node(g, "Add", "/add", "x,w1", "y");
  output(g, "y");
  output(g, "w2");
  output(g, "w3");
  output(g, "c1");
  gv_module *m = import(g, 17, dir, NULL);
  CHECK(m);
  CHECK(m->nmappings == 3); /* one per file, however many tensors it holds */
  gv_func *f = m->main;
  CHECK(f->body->nargs == 4 && f->arg_is_param[1] && f->arg_is_param[2] && f->arg_is_param[3]);
  float v[4];
  memcpy(v, f->param_data[1], 16);
  CHECK(v[0] == 1 && v[3] == 4);
  memcpy(v, f->param_data[2], 12);
  CHECK(v[0] == 5 && v[2] == 7);
  memcpy(v, f->param_data[3], 12);
  CHECK(v[0] == 5 && v[2] == 7);
  CHECK((const char *)f->param_data[2] - (const char *)f->param_data[1] == 16); /* same mapping, no copy */
  const gv_tensor *t = const_of(gv_block_terminator(f->body)->opnds[3]);
  CHECK(t && gv_tensor_get_i(t, 0) == 7 && gv_tensor_get_i(t, 1) == -1);
  gv_module_free(m);

  /* shapes only: files are checked but weights not mapped (the i64 constant still is) */
  gv_import_options o = opts();
  o.load_weights = false;
  m = import(g, 17, dir, &o);
  CHECK(m && m->nmappings == 1 && !m->main->param_data[1]);
  gv_module_free(m);

  /* rejections: each names the initializer */
  const struct {
    const char *loc, *off, *len, *want;
  } bad[] = {
      {"/etc/passwd", NULL, NULL, "absolute"},
      {"../weights.bin", NULL, NULL, "'..'"},
      {"sub/../weights.bin", NULL, NULL, "'..'"},
      {"link.bin", NULL, NULL, "symbolic link"},
      {"sublink/more.bin", NULL, NULL, "outside the model folder"},
      {"missing.bin", NULL, NULL, "cannot be read"},
      {"weights.bin", "40", NULL, "too short"},
      {"weights.bin", "0", "12", "length 12 does not match"},
      {"weights.bin", "x1", NULL, "not a number"},
      {"sub", NULL, NULL, "not a regular file"},
      {"", NULL, NULL, "without a location"},
  };
  snprintf(path, sizeof path, "%s/link.bin", dir);
  CHECK(symlink("weights.bin", path) == 0);
  /* a folder link pointing out of the model folder */
  snprintf(outside, sizeof outside, "%s_out", dir);
  CHECK(mkdir(outside, 0700) == 0);
  snprintf(path, sizeof path, "%s/more.bin", outside);
  CHECK(write_file(path, data, sizeof data) == 0);
  snprintf(path, sizeof path, "%s/sublink", dir);
  CHECK(symlink(outside, path) == 0);
  for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
    Onnx__GraphProto *b = graph();
    input(b, vinfo("x", F32, 2, (int64_t[]){2, 2}, NULL));
    init(b, external(tensor("w1", F32, 2, (int64_t[]){2, 2}), bad[i].loc, bad[i].off, bad[i].len));
    node(b, "Add", "/add", "x,w1", "y");
    output(b, "y");
    if (import_err(b, 17, dir, NULL, bad[i].want) || !strstr(errbuf, "external data") ||
        !strstr(errbuf, "initializer 'w1'")) {
      fprintf(stderr, "case %zu (%s)\n", i, bad[i].loc);
      CHECK(0);
    }
  }
  /* no folder (in-memory model): external data refused */
  CHECK(import_err(g, 17, NULL, NULL, "external data") == 0);

  const char *rm[] = {"weights.bin", "sub/more.bin", "ints.bin", "link.bin", "sublink", "sub", ""};
  for (int i = 0; rm[i][0]; i++) {
    snprintf(path, sizeof path, "%s/%s", dir, rm[i]);
    if (remove(path)) perror(path);
  }
  rmdir(dir);
  snprintf(path, sizeof path, "%s/more.bin", outside);
  remove(path);
  rmdir(outside);
  reset();
  return 0;
}

/* op mapping details */
static int test_ops(void) {
  Onnx__GraphProto *g = graph();
  input(g, vinfo("a", F32, 2, (int64_t[]){4, 6}, NULL));
  input(g, vinfo("q", F32, 4, (int64_t[]){2, 3, 5, 8}, NULL));
  float wb[6 * 3];
  for (int i = 0; i < 18; i++) wb[i] = (float)i;
  init(g, raw(tensor("wt", F32, 2, (int64_t[]){3, 6}), wb, sizeof wb));
  /* Gemm with transB and alpha: dot contracting rhs dim 1, then mul */
  Onnx__NodeProto *n = node(g, "Gemm", "/gemm", "a,wt", "g");
  attr_i(n, "transB", 1);
  attr_f(n, "alpha", 2.0f);
  /* batched MatMul: q @ q^T */
  n = node(g, "Transpose", "/t", "q", "qt");
  attr_ints(n, "perm", 4, (int64_t[]){0, 1, 3, 2});
  node(g, "MatMul", "/mm", "q,qt", "s");
  /* Split without sizes: equal parts from the known dim */
  n = node(g, "Split", "/split", "a", "s0,s1,s2");
  attr_i(n, "axis", 1);
  /* Unsqueeze with a constant axes input (opset 13+) */
  n = node(g, "Constant", "/c", "", "ax");
  attr_ints(n, "value_ints", 1, (int64_t[]){0});
  n->attribute[0]->type = ONNX__ATTRIBUTE_PROTO__ATTRIBUTE_TYPE__INTS;
  n->attribute[0]->name = S("value_ints");
  node(g, "Unsqueeze", "/u", "s0,ax", "u");
  /* ReduceSum with noop_with_empty_axes and no axes: an alias */
  n = node(g, "ReduceSum", "/rs", "u", "r");
  attr_i(n, "noop_with_empty_axes", 1);
  /* ReduceMean with axes attr (opset < 18) */
  n = node(g, "ReduceMean", "/rm", "s", "mean");
  attr_ints(n, "axes", 1, (int64_t[]){-1});
  attr_i(n, "keepdims", 0);
  /* Min with three inputs: a chain */
  node(g, "Min", "/min", "s1,s2,s1", "mn");
  n = node(g, "Softmax", "/sm", "s", "sm");
  node(g, "Dropout", "/drop", "sm", "dr");
  n = node(g, "Cast", "/cast", "dr", "ci");
  attr_i(n, "to", ONNX__TENSOR_PROTO__DATA_TYPE__INT32);
  const char *outs[] = {"g", "s", "r", "mean", "mn", "ci"};
  for (int i = 0; i < 6; i++) output(g, outs[i]);
  gv_module *m = import(g, 17, NULL, NULL);
  CHECK(m);
  gv_block *b = m->main->body;
  gv_op *dot = find(b, GV_OP_DOT, 0);
  CHECK(dot && ints_eq(dot, "lhs_contract", 1, (int64_t[]){1}) && ints_eq(dot, "rhs_contract", 1, (int64_t[]){1}));
  CHECK(dot->res[0]->type.rank == 2 && dot->res[0]->type.dims[0] == 4 && dot->res[0]->type.dims[1] == 3);
  gv_op *mul = find(b, GV_OP_MUL, 0);
  CHECK(mul && mul->opnds[0] == dot->res[0] && const_of(mul->opnds[1]) &&
        gv_tensor_get_f(const_of(mul->opnds[1]), 0) == 2.0);
  gv_op *bmm = find(b, GV_OP_DOT, 1);
  CHECK(bmm && ints_eq(bmm, "lhs_batch", 2, (int64_t[]){0, 1}) && ints_eq(bmm, "rhs_batch", 2, (int64_t[]){0, 1}) &&
        ints_eq(bmm, "lhs_contract", 1, (int64_t[]){3}) && ints_eq(bmm, "rhs_contract", 1, (int64_t[]){2}));
  CHECK(bmm->res[0]->type.rank == 4 && bmm->res[0]->type.dims[2] == 5 && bmm->res[0]->type.dims[3] == 5);
  gv_op *split = find(b, GV_OP_SPLIT, 0);
  CHECK(split && split->nres == 3 && ints_eq(split, "sizes", 3, (int64_t[]){2, 2, 2}) &&
        gv_get_int(split, "axis", -9) == 1);
  gv_op *uns = find(b, GV_OP_UNSQUEEZE, 0);
  CHECK(uns && ints_eq(uns, "axes", 1, (int64_t[]){0}) && uns->nopnds == 1);
  gv_op *ret = gv_block_terminator(b);
  CHECK(ret->opnds[2] == uns->res[0]); /* ReduceSum noop */
  gv_op *rm = find(b, GV_OP_REDUCE_MEAN, 0);
  CHECK(rm && ints_eq(rm, "axes", 1, (int64_t[]){-1}) && gv_get_int(rm, "keepdims", 1) == 0);
  CHECK(count(b, GV_OP_MIN) == 2);
  gv_op *sm = find(b, GV_OP_SOFTMAX, 0);
  CHECK(sm && gv_get_int(sm, "axis", 0) == -1);
  gv_op *cast = find(b, GV_OP_CAST, 0);
  CHECK(cast && cast->opnds[0] == sm->res[0]); /* Dropout is an alias */
  const gv_attr *to = gv_get_attr(cast, "to");
  CHECK(to && to->kind == GV_ATTR_TYPE && to->u.ty == GV_DT_I32);
  gv_module_free(m);

  /* axes inputs must be constant */
  Onnx__GraphProto *g2 = graph();
  input(g2, vinfo("x", F32, 1, (int64_t[]){4}, NULL));
  input(g2, vinfo("ax", I64, 1, (int64_t[]){1}, NULL));
  node(g2, "Unsqueeze", "/u", "x,ax", "y");
  output(g2, "y");
  CHECK(import_err(g2, 13, NULL, NULL, "unsupported: non-constant axes") == 0);
  CHECK(strstr(errbuf, "node '/u' (Unsqueeze)"));
  reset();
  return 0;
}

static int test_errors(void) {
  Onnx__GraphProto *g = graph();
  input(g, vinfo("x", F32, 2, (int64_t[]){2, 4}, NULL));
  node(g, "FancyOp", "/f", "x", "y");
  output(g, "y");
  CHECK(import_err(g, 17, NULL, NULL, "node '/f' (FancyOp): unsupported operator") == 0);
  g->node[0]->op_type = S("Relu");
  g->node[0]->domain = S("com.microsoft");
  CHECK(import_err(g, 17, NULL, NULL, "unsupported operator") == 0);
  g->node[0]->domain = S("ai.onnx");
  gv_module *m = import(g, 17, NULL, NULL);
  CHECK(m);
  gv_module_free(m);
  CHECK(import_err(g, 12, NULL, NULL, "opset") == 0);
  CHECK(import_err(g, 28, NULL, NULL, "opset") == 0);
  g->node[0]->input[0] = S("nowhere");
  CHECK(import_err(g, 17, NULL, NULL, "node '/f' (Relu): undefined value 'nowhere'") == 0);
  g->node[0]->input[0] = S("x");
  g->output[0]->name = S("dangling");
  CHECK(import_err(g, 17, NULL, NULL, "undefined value 'dangling'") == 0);
  g->output[0]->name = S("y");
  /* LayerNormalization's mean output is reduce_mean over the normalised dims; the op needs opset 17 */
  float sc[4] = {1, 1, 1, 1};
  init(g, raw(tensor("scale", F32, 1, (int64_t[]){4}), sc, sizeof sc));
  node(g, "LayerNormalization", "/ln", "y,scale", "z,zmean");
  output(g, "z");
  m = import(g, 17, NULL, NULL);
  CHECK(m && find(m->main->body, GV_OP_LAYER_NORM, 0));
  CHECK(gv_get_float(find(m->main->body, GV_OP_LAYER_NORM, 0), "epsilon", 0) == 1e-5f);
  gv_module_free(m);
  CHECK(import_err(g, 16, NULL, NULL, "unsupported operator") == 0);
  node(g, "Relu", "/use_mean", "zmean", "w");
  m = import(g, 17, NULL, NULL);
  CHECK(m && find(m->main->body, GV_OP_REDUCE_MEAN, 0) && find(m->main->body, GV_OP_RECIPROCAL, 0));
  gv_module_free(m);
  /* hostile names go into the one line escaped */
  Onnx__GraphProto *h = graph();
  input(h, vinfo("x", F32, 1, (int64_t[]){2}, NULL));
  node(h, "Bad\nOp", "evil */ \"q\"\nline", "x", "y");
  output(h, "y");
  CHECK(import_err(h, 17, NULL, NULL, "unsupported operator") == 0);
  /* garbage */
  uint8_t junk[64];
  for (int i = 0; i < 64; i++) junk[i] = (uint8_t)(0xff - i * 7);
  fflush(stderr);
  int saved = dup(2), nul = open("/dev/null", O_WRONLY);
  dup2(nul, 2);
  gv_module *jm = gv_import_onnx_buffer(junk, sizeof junk, "junk.onnx", NULL, NULL);
  gv_module *em = gv_import_onnx_buffer("", 0, "empty.onnx", NULL, NULL);
  gv_module *fm = gv_import_onnx("/nonexistent/model.onnx", NULL);
  dup2(saved, 2);
  close(saved);
  close(nul);
  CHECK(!jm && !em && !fm);
  reset();
  return 0;
}

static int test_if(void) {
  Onnx__GraphProto *g = graph();
  input(g, vinfo("x", F32, 2, (int64_t[]){2, 3}, NULL));
  input(g, vinfo("c", ONNX__TENSOR_PROTO__DATA_TYPE__BOOL, 0, NULL, NULL));
  Onnx__GraphProto *t = graph(), *e = graph();
  node(t, "Relu", "/then/Relu", "x", "t_out");
  output(t, "t_out");
  int64_t one = 1;
  init(e, raw(tensor("e_k", I64, 0, NULL), &one, 8));
  node(e, "Neg", "/else/Neg", "x", "e_out");
  output(e, "e_out");
  Onnx__NodeProto *n = node(g, "If", "/If", "c", "y");
  attr_g(n, "then_branch", t);
  attr_g(n, "else_branch", e);
  output(g, "y");
  gv_module *m = import(g, 17, NULL, NULL);
  CHECK(m);
  gv_op *ifop = find(m->main->body, GV_OP_IF, 0);
  CHECK(ifop && ifop->nregions == 2 && ifop->nres == 1);
  gv_op *ty = gv_block_terminator(ifop->regions[0]), *ey = gv_block_terminator(ifop->regions[1]);
  CHECK(ty && ty->code == GV_OP_YIELD && ty->nopnds == 1 && ty->opnds[0]->def->code == GV_OP_RELU);
  CHECK(ty->opnds[0]->def->opnds[0] == m->main->body->args[0]); /* outer-scope value */
  CHECK(ey && ey->code == GV_OP_YIELD && ey->opnds[0]->def->code == GV_OP_NEG);
  CHECK(find(ifop->regions[1], GV_OP_CONSTANT, 0)); /* branch initializer stays in the branch */
  CHECK(ifop->res[0]->type.rank == 2 && ifop->res[0]->type.dims[1] == 3);
  gv_module_free(m);
  /* branch values do not leak out of the branch */
  node(g, "Relu", "/after", "t_out", "z");
  CHECK(import_err(g, 17, NULL, NULL, "undefined value 't_out'") == 0);
  reset();
  return 0;
}

static int test_supported_list(void) {
  const char *const *ops = gv_onnx_supported_ops();
  int n = 0;
  for (; ops[n]; n++)
    if (n) CHECK(strcmp(ops[n - 1], ops[n]) < 0);
  CHECK(n > 50);
  const char *src = getenv("GALV_SOURCE_DIR");
  char path[1024];
  snprintf(path, sizeof path, "%s/examples/models/torch/ops.txt", src ? src : ".");
  FILE *f = fopen(path, "r");
  if (!f) {
    fprintf(stderr, "note: %s not found, ops.txt check skipped\n", path);
    return 0;
  }
  char line[256];
  int missing = 0, total = 0;
  while (fgets(line, sizeof line, f)) {
    char op[128];
    if (sscanf(line, "%127s", op) != 1) continue;
    total++;
    int found = 0;
    for (int i = 0; ops[i] && !found; i++) found = strcmp(ops[i], op) == 0;
    if (!found) {
      fprintf(stderr, "ops.txt: %s is not supported by the frontend\n", op);
      missing++;
    }
  }
  fclose(f);
  CHECK(total > 0 && missing == 0);
  return 0;
}

static int test_parse_dims(void) {
  int64_t d[GV_MAX_RANK];
  CHECK(gv_parse_dims("8x128", d, GV_MAX_RANK) == 2 && d[0] == 8 && d[1] == 128);
  CHECK(gv_parse_dims("3", d, GV_MAX_RANK) == 1 && d[0] == 3);
  CHECK(gv_parse_dims("", d, GV_MAX_RANK) == -1);
  CHECK(gv_parse_dims("8x", d, GV_MAX_RANK) == -1);
  CHECK(gv_parse_dims("8x0", d, GV_MAX_RANK) == -1);
  CHECK(gv_parse_dims("8x-1", d, GV_MAX_RANK) == -1);
  CHECK(gv_parse_dims("1x2x3", d, 2) == -1);
  CHECK(gv_parse_dims("99999999999999999999", d, GV_MAX_RANK) == -1);
  return 0;
}

/* gv_read_tensor_pb: serialized TensorProto files (the backend tests' input_K.pb) */
static int test_tensor_pb(void) {
  char dir[] = "/tmp/galv_pb_XXXXXX";
  CHECK(mkdtemp(dir));
  char path[1024];
  gv_module *m = gv_module_new("tensors");
  uint8_t f32b[8] = {0x00, 0x00, 0xc0, 0x3f, 0x00, 0x00, 0x00, 0xc0}; /* 1.5, -2 */
  Onnx__TensorProto *t = raw(tensor("x", F32, 2, (int64_t[]){1, 2}), f32b, 8);
  size_t n = onnx__tensor_proto__get_packed_size(t);
  uint8_t *buf = malloc(n);
  onnx__tensor_proto__pack(t, buf);
  snprintf(path, sizeof path, "%s/input_0.pb", dir);
  CHECK(write_file(path, buf, n) == 0);
  gv_tensor *v = gv_read_tensor_pb(m, path);
  CHECK(v && v->type.dtype == GV_DT_F32 && v->type.rank == 2 && v->type.dims[1] == 2);
  CHECK(gv_tensor_get_f(v, 0) == 1.5 && gv_tensor_get_f(v, 1) == -2.0);
  /* a string tensor, a truncated file, garbage, a missing file: NULL after one error */
  t->data_type = ONNX__TENSOR_PROTO__DATA_TYPE__STRING;
  n = onnx__tensor_proto__get_packed_size(t);
  onnx__tensor_proto__pack(t, buf);
  CHECK(write_file(path, buf, n) == 0);
  CHECK(!gv_read_tensor_pb(m, path));
  CHECK(write_file(path, "\x0a\xff\xff\xff", 4) == 0);
  CHECK(!gv_read_tensor_pb(m, path));
  unlink(path);
  CHECK(!gv_read_tensor_pb(m, path));
  rmdir(dir);
  free(buf);
  gv_module_free(m);
  reset();
  return 0;
}

/* The default rule of which float initializers train (docs/autodiff.md) */
static int test_train_rule(void) {
  CHECK(gv_onnx_default_trains("head.bias") && gv_onnx_default_trains("scale") && gv_onnx_default_trains("pos_embed"));
  CHECK(gv_onnx_default_trains("onnx::MatMul_11") && gv_onnx_default_trains("onnx::Gemm_3"));
  CHECK(!gv_onnx_default_trains("onnx::Mul_123") && !gv_onnx_default_trains("/model/layers.0/Constant_output_0"));
  CHECK(!gv_onnx_default_trains("model.layers.0.self_attn.rotary_emb.inv_freq") && !gv_onnx_default_trains("inv_freq"));
  CHECK(!gv_onnx_default_trains("rotary.cos_cached") && !gv_onnx_default_trains("rotary._sin_cached"));
  CHECK(!gv_onnx_default_trains("bn.running_mean") && !gv_onnx_default_trains("h.0.attn.masked_bias"));
  CHECK(!gv_onnx_default_trains("model.encoder.embed_positions.weight"));
  CHECK(gv_onnx_default_trains("model.decoder.embed_positions.weight")); /* Whisper's decoder table is learned */
  CHECK(!gv_onnx_default_trains("model.decoder.embed_positions.weights"));
  return 0;
}

int main(void) {
  gv_progname = "test_frontend";
  int (*tests[])(void) = {test_mlp,   test_symbolic_dims, test_raw_decode, test_typed_decode, test_external,
                          test_ops,   test_errors,        test_if,         test_supported_list,
                          test_parse_dims, test_tensor_pb, test_train_rule};
  const char *names[] = {"mlp", "symbolic_dims", "raw_decode", "typed_decode", "external",
                         "ops", "errors",        "if",         "supported_list", "parse_dims", "tensor_pb",
                         "train_rule"};
  for (size_t i = 0; i < sizeof tests / sizeof tests[0]; i++) {
    int rc = tests[i]();
    reset();
    printf("%s %s\n", rc ? "FAIL" : "ok", names[i]);
  }
  return failures ? 1 : 0;
}
