/* print.c — prints a module as MLIR generic syntax (docs/ir-text.md).
 *
 * The output is the exchange format of the project: ir/parse.c reads it back
 * and print -> parse -> print must be byte-identical, and MLIR 19 must parse
 * it. So every number is printed in a form that round-trips exactly (f32 as
 * %.9e, f64 as %.17e, non-finite floats as their bit pattern in hex), and
 * every name is data, escaped as \XX. The printer also tolerates broken IR
 * (NULL pointers, uses before definitions) so that it can dump what a failing
 * pass produced; such text does not parse back, by design.
 */
#include "ir.h"

#include <math.h>
#include <stdio.h>
#include <string.h>

typedef struct {
  FILE *f;
  int next_val, next_arg;
} printer;

static void put_str(FILE *f, const char *s) {
  fputc('"', f);
  gv_write_escaped(f, s ? s : "");
  fputc('"', f);
}

static void put_type(FILE *f, const gv_type *t) {
  char buf[512];
  gv_type_str(t, buf, sizeof buf);
  fputs(buf, f);
}

/* Attribute names print bare when MLIR's bare-id grammar allows it. */
static void put_attr_name(FILE *f, const char *s) {
  bool bare = s && ((*s >= 'a' && *s <= 'z') || (*s >= 'A' && *s <= 'Z') || *s == '_');
  for (const char *c = s; bare && *c; c++)
    bare = (*c >= 'a' && *c <= 'z') || (*c >= 'A' && *c <= 'Z') || (*c >= '0' && *c <= '9') ||
           *c == '_' || *c == '$' || *c == '.';
  if (bare)
    fputs(s, f);
  else
    put_str(f, s);
}

/* Non-finite floats have no decimal form MLIR accepts: print the bits. */
static void put_f32(FILE *f, float v) {
  if (isfinite(v)) {
    fprintf(f, "%.9e", (double)v);
  } else {
    uint32_t b;
    memcpy(&b, &v, 4);
    fprintf(f, "0x%08X", b);
  }
}

static void put_elem(FILE *f, const gv_tensor *t, int64_t i) {
  const unsigned char *d = t->data;
  switch (t->type.dtype) {
  case GV_DT_F32: {
    float v;
    memcpy(&v, d + 4 * i, 4);
    put_f32(f, v);
    return;
  }
  case GV_DT_F64: {
    double v;
    memcpy(&v, d + 8 * i, 8);
    if (isfinite(v)) {
      fprintf(f, "%.17e", v);
    } else {
      uint64_t b;
      memcpy(&b, &v, 8);
      fprintf(f, "0x%016llX", (unsigned long long)b);
    }
    return;
  }
  case GV_DT_F16:
  case GV_DT_BF16: {
    /* Every f16/bf16 value is exactly an f32, so the f32 decimal form
     * round-trips; non-finite ones print their own 16-bit pattern. */
    uint16_t h;
    memcpy(&h, d + 2 * i, 2);
    float v = t->type.dtype == GV_DT_F16 ? gv_f16_to_f32(h) : gv_bf16_to_f32(h);
    if (isfinite(v))
      fprintf(f, "%.9e", (double)v);
    else
      fprintf(f, "0x%04X", h);
    return;
  }
  case GV_DT_BOOL: fputs(d[i] ? "true" : "false", f); return;
  default: fprintf(f, "%lld", (long long)gv_tensor_get_i(t, i)); return;
  }
}

/* Nested brackets per dimension, as MLIR requires for ranked literals. */
static void put_list(FILE *f, const gv_tensor *t, int d, int64_t *idx) {
  if (d == t->type.rank) {
    put_elem(f, t, (*idx)++);
    return;
  }
  fputc('[', f);
  for (int64_t k = 0; k < t->type.dims[d]; k++) {
    if (k) fputs(", ", f);
    put_list(f, t, d + 1, idx);
  }
  fputc(']', f);
}

/* Bytes as upper-case hex pairs, written in chunks: one fprintf per byte
 * made printing a module with large constants (the planner clones modules
 * by printing and parsing them) cost seconds per clone. */
static void put_hex(FILE *f, const unsigned char *d, size_t n) {
  static const char digits[] = "0123456789ABCDEF";
  char buf[4096];
  size_t k = 0;
  for (size_t i = 0; i < n; i++) {
    buf[k++] = digits[d[i] >> 4];
    buf[k++] = digits[d[i] & 15];
    if (k == sizeof buf) fwrite(buf, 1, k, f), k = 0;
  }
  if (k) fwrite(buf, 1, k, f);
}

static void put_tensor(FILE *f, const gv_tensor *t) {
  if (!t) {
    fputs("dense<> : tensor<0x!galv.any>", f);
    return;
  }
  int64_t n = gv_tensor_numel(t);
  size_t es = gv_dtype_size(t->type.dtype);
  const unsigned char *d = t->data;
  fputs("dense<", f);
  if (n > 0 && es && d) {
    bool splat = true;
    /* every element equals the next: one overlapping compare, not one call per element */
    if (n > 1) splat = memcmp(d, d + es, (size_t)(n - 1) * es) == 0;
    if (splat && (n > 1 || t->type.rank == 0)) {
      put_elem(f, t, 0);
    } else if (n > 16) {
      fputs("\"0x", f);
      if (t->type.dtype == GV_DT_BOOL) { /* MLIR packs i1 hex data 8 per byte, LSB first */
        for (int64_t i = 0; i < n; i += 8) {
          unsigned byte = 0;
          for (int k = 0; k < 8 && i + k < n; k++) byte |= (d[i + k] ? 1u : 0u) << k;
          fprintf(f, "%02X", byte);
        }
      } else {
        put_hex(f, d, (size_t)n * es);
      }
      fputc('"', f);
    } else {
      int64_t idx = 0;
      put_list(f, t, 0, &idx);
    }
  }
  fputs("> : ", f);
  put_type(f, &t->type);
}

static void put_attr(FILE *f, const gv_attr *a) {
  put_attr_name(f, a->name);
  if (a->kind == GV_ATTR_UNIT) return;
  fputs(" = ", f);
  switch (a->kind) {
  case GV_ATTR_INT: fprintf(f, "%lld : i64", (long long)a->u.i); break;
  case GV_ATTR_FLOAT:
    put_f32(f, a->u.f);
    fputs(" : f32", f);
    break;
  case GV_ATTR_STR: put_str(f, a->u.s); break;
  case GV_ATTR_INTS:
    fputs("array<i64", f);
    for (int i = 0; i < a->u.ints.n; i++) fprintf(f, "%s%lld", i ? ", " : ": ", (long long)a->u.ints.v[i]);
    fputc('>', f);
    break;
  case GV_ATTR_FLOATS:
    fputs("array<f32", f);
    for (int i = 0; i < a->u.floats.n; i++) {
      fputs(i ? ", " : ": ", f);
      put_f32(f, a->u.floats.v[i]);
    }
    fputc('>', f);
    break;
  case GV_ATTR_STRS:
    fputc('[', f);
    for (int i = 0; i < a->u.strs.n; i++) {
      if (i) fputs(", ", f);
      put_str(f, a->u.strs.v[i]);
    }
    fputc(']', f);
    break;
  case GV_ATTR_TENSOR: put_tensor(f, a->u.t); break;
  case GV_ATTR_TYPE:
    fputs(a->u.ty == GV_DT_UNKNOWN || a->u.ty >= GV_DT_COUNT ? "!galv.any" : gv_dtype_name(a->u.ty), f);
    break;
  case GV_ATTR_UNIT: break;
  case GV_ATTR_SHARDING:
    if (a->u.sh.n != 1) fputc('[', f);
    for (int i = 0; i < a->u.sh.n; i++) {
      if (i) fputs(", ", f);
      gv_sharding_print(a->u.sh.v[i], f);
    }
    if (a->u.sh.n != 1) fputc(']', f);
    break;
  }
}

static void put_value(printer *p, const gv_value *v) {
  if (!v || v->id < 0) {
    fputs("%undef", p->f);
  } else if (!v->def) {
    fprintf(p->f, "%%arg%d", v->id);
  } else if (v->def->nres > 1) {
    fprintf(p->f, "%%%d#%d", v->id, v->index);
  } else {
    fprintf(p->f, "%%%d", v->id);
  }
}

/* Printing numbers values as it goes; this first walk forgets stale ids so
 * that a use before its definition (broken IR) shows as %undef. */
static void reset_ids(gv_block *b) {
  for (int i = 0; i < b->nargs; i++)
    if (b->args[i]) b->args[i]->id = -1;
  for (gv_op *op = b->first; op; op = op->next) {
    for (int i = 0; i < op->nopnds; i++)
      if (op->opnds[i]) op->opnds[i]->id = -1;
    for (int i = 0; i < op->nres; i++)
      if (op->res[i]) op->res[i]->id = -1;
    for (int r = 0; r < op->nregions; r++)
      if (op->regions[r]) reset_ids(op->regions[r]);
  }
}

static void indent(FILE *f, int n) {
  for (int i = 0; i < n; i++) fputc(' ', f);
}

static void print_op(printer *p, const gv_op *op, int ind);

/* The block label line, then its ops; the caller prints the braces. */
static void print_block(printer *p, const gv_block *b, int ind) {
  if (b->nargs) {
    indent(p->f, ind - 2);
    fputs("^bb0(", p->f);
    for (int i = 0; i < b->nargs; i++) {
      gv_value *v = b->args[i];
      if (i) fputs(", ", p->f);
      if (v) v->id = p->next_arg++;
      put_value(p, v);
      fputs(": ", p->f);
      if (v) put_type(p->f, &v->type);
    }
    fputs("):\n", p->f);
  }
  for (const gv_op *op = b->first; op; op = op->next) print_op(p, op, ind);
}

static void print_op(printer *p, const gv_op *op, int ind) {
  FILE *f = p->f;
  indent(f, ind);
  if (op->nres > 0) {
    int id = p->next_val++;
    for (int i = 0; i < op->nres; i++)
      if (op->res[i]) op->res[i]->id = id;
    fprintf(f, op->nres > 1 ? "%%%d:%d = " : "%%%d = ", id, op->nres);
  }
  fprintf(f, "\"galv.%s\"(", op->code < GV_OP_COUNT ? gv_ops[op->code].name : "?");
  for (int i = 0; i < op->nopnds; i++) {
    if (i) fputs(", ", f);
    put_value(p, op->opnds[i]);
  }
  fputc(')', f);
  if (op->nregions) {
    fputs(" (", f);
    for (int r = 0; r < op->nregions; r++) {
      fputs(r ? ", {\n" : "{\n", f);
      if (op->regions[r]) print_block(p, op->regions[r], ind + 2);
      indent(f, ind);
      fputc('}', f);
    }
    fputc(')', f);
  }
  if (op->nattrs) {
    fputs(" {", f);
    for (int i = 0; i < op->nattrs; i++) {
      if (i) fputs(", ", f);
      put_attr(f, &op->attrs[i]);
    }
    fputc('}', f);
  }
  fputs(" : (", f);
  for (int i = 0; i < op->nopnds; i++) {
    if (i) fputs(", ", f);
    if (op->opnds[i]) put_type(f, &op->opnds[i]->type);
  }
  fputs(") -> ", f);
  if (op->nres != 1) fputc('(', f);
  for (int i = 0; i < op->nres; i++) {
    if (i) fputs(", ", f);
    if (op->res[i]) put_type(f, &op->res[i]->type);
  }
  if (op->nres != 1) fputc(')', f);
  fputs(" loc(", f);
  put_str(f, op->loc);
  if (op->onnx_op) {
    fputc('(', f);
    put_str(f, op->onnx_op);
    fputc(')', f);
  }
  fputs(")\n", f);
}

void gv_print_module(const gv_module *m, void *file) {
  FILE *f = file;
  if (!m || !m->main || !m->main->body) return;
  const gv_func *fn = m->main;
  printer p = {f, 0, 0};
  reset_ids(fn->body);
  for (int i = 0; i < m->nmeshes; i++) {
    const gv_mesh *mesh = m->meshes[i];
    fputs("\"galv.mesh\"() {axes = #galv.axes<[", f);
    for (int a = 0; a < mesh->naxes; a++) {
      if (a) fputs(", ", f);
      put_str(f, mesh->axis[a]);
      fprintf(f, "=%lld", (long long)mesh->size[a]);
    }
    fputs("]>, ", f);
    if (mesh->has_predicted) /* sorted: axes < predicted_bytes < sym_name */
      fprintf(f, "predicted_bytes = [%lld, %lld, %lld, %lld], ", (long long)mesh->predicted[0],
              (long long)mesh->predicted[1], (long long)mesh->predicted[2], (long long)mesh->predicted[3]);
    fputs("sym_name = ", f);
    put_str(f, mesh->name);
    fputs("} : () -> ()\n", f);
  }
  fputs("\"galv.func\"() ({\n", f);
  print_block(&p, fn->body, 2);
  fputs("}) {arg_attrs = [", f);
  for (int i = 0; i < fn->body->nargs; i++) {
    fputs(i ? ", {" : "{", f);
    if (fn->arg_is_frozen && fn->arg_is_frozen[i]) fputs("galv.frozen, ", f); /* sorted: galv.frozen < galv.name */
    fputs("galv.name = ", f);
    put_str(f, fn->arg_names ? fn->arg_names[i] : "");
    if (fn->arg_is_param && fn->arg_is_param[i]) fputs(", galv.param", f);
    if (fn->arg_sharding && fn->arg_sharding[i]) { /* sorted: galv.param < galv.sharding < galv.state */
      fputs(", galv.sharding = ", f);
      gv_sharding_print(fn->arg_sharding[i], f);
    }
    if (fn->arg_is_state && fn->arg_is_state[i]) fputs(", galv.state", f);
    fputc('}', f);
  }
  fputs("], res_attrs = [", f);
  for (int i = 0; i < fn->nres_names; i++) {
    if (i) fputs(", ", f);
    int upd = fn->res_updates ? fn->res_updates[i] : -1;
    if ((fn->res_names && fn->res_names[i]) || upd >= 0) {
      fputc('{', f);
      if (fn->res_names && fn->res_names[i]) {
        fputs("galv.name = ", f);
        put_str(f, fn->res_names[i]);
      }
      if (upd >= 0) fprintf(f, "%sgalv.updates = %d : i64", fn->res_names && fn->res_names[i] ? ", " : "", upd);
      fputc('}', f);
    } else {
      fputs("{}", f);
    }
  }
  fputs("], sym_name = ", f);
  put_str(f, fn->name ? fn->name : "main");
  fputs("} : () -> ()\n", f);
}
