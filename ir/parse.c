/* parse.c — reads the IR text form (docs/ir-text.md) back into a module.
 *
 * A hand-written recursive-descent parser over (text, len): the text need not
 * be NUL-terminated and is never read past len. It accepts what ir/print.c
 * writes plus cheap MLIR variations (comments, any whitespace, attributes in
 * any order, a missing loc or attribute dict, a `module { }` wrapper). It is a
 * fuzz surface: every failure is one line "FILE:LINE:COL: message" through
 * gv_error_plain, the partial module is freed, and NULL is returned. Nesting
 * depth and splat sizes are bounded so hostile input cannot exhaust the
 * stack or memory; every other allocation is bounded by the input length.
 *
 * SSA names live in a hash table of entries; names defined inside a region
 * go out of scope when it closes (MLIR scoping), and an op's results become
 * visible only after the whole op, so its own regions cannot use them.
 */
#include "ir.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define MAX_DEPTH 64                /* region nesting */
#define MAX_SPLAT_BYTES (1u << 28)  /* a splat is the only literal not bounded by the input */

typedef struct {
  const char *name; /* points into the text */
  int len;
  gv_value **vals;
  int n;
  bool alive;
} sym;

typedef struct {
  const char *s;
  size_t n, pos;
  const char *source;
  gv_module *m;
  bool failed;
  sym *syms;
  int nsyms, capsyms;
  int *slots; /* hash: entry index + 1, 0 when empty */
  size_t capslots;
  int *scope; /* entries defined, innermost region last */
  int nscope, capscope;
  int depth;
} parser;

/* ---------------------------------------------------------------- errors */

static int perr(parser *p, size_t at, const char *fmt, ...) __attribute__((format(printf, 3, 4)));
static int perr(parser *p, size_t at, const char *fmt, ...) {
  if (p->failed) return -1;
  p->failed = true;
  int line = 1, col = 1;
  for (size_t i = 0; i < at && i < p->n; i++) {
    if (p->s[i] == '\n') {
      line++;
      col = 1;
    } else {
      col++;
    }
  }
  char msg[256];
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(msg, sizeof msg, fmt, ap);
  va_end(ap);
  gv_error_plain("%s:%d:%d: %s", p->source, line, col, msg);
  return -1;
}

/* Copies input text for a message, keeping it on one printable line. */
static const char *snip(const char *s, size_t n, char *buf, size_t cap) {
  size_t k = 0;
  for (size_t i = 0; i < n && k + 4 < cap; i++)
    buf[k++] = (s[i] >= 0x20 && s[i] < 0x7f && s[i] != '\'') ? s[i] : '?';
  if (n > 0 && k + 4 >= cap) {
    memcpy(buf + k, "...", 3);
    k += 3;
  }
  buf[k] = 0;
  return buf;
}

/* ---------------------------------------------------------------- lexing */

static int cur(const parser *p) { return p->pos < p->n ? (unsigned char)p->s[p->pos] : -1; }
static int at_off(const parser *p, size_t k) {
  return p->pos + k < p->n ? (unsigned char)p->s[p->pos + k] : -1;
}

static void skip_ws(parser *p) {
  while (p->pos < p->n) {
    char c = p->s[p->pos];
    if (c == ' ' || c == '\t' || c == '\n' || c == '\r') {
      p->pos++;
    } else if (c == '/' && at_off(p, 1) == '/') {
      while (p->pos < p->n && p->s[p->pos] != '\n') p->pos++;
    } else {
      break;
    }
  }
}

static int peek(parser *p) {
  skip_ws(p);
  return cur(p);
}

static bool accept(parser *p, char c) {
  if (peek(p) != (unsigned char)c) return false;
  p->pos++;
  return true;
}

static int expect(parser *p, char c) {
  if (accept(p, c)) return 0;
  if (p->pos >= p->n) return perr(p, p->pos, "unexpected end of input, expected '%c'", c);
  return perr(p, p->pos, "expected '%c'", c);
}

static bool is_ident_start(int c) { return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || c == '_'; }
static bool is_ident_char(int c) {
  return is_ident_start(c) || (c >= '0' && c <= '9') || c == '$' || c == '.';
}
static bool is_digit(int c) { return c >= '0' && c <= '9'; }
static int hexval(int c) {
  if (c >= '0' && c <= '9') return c - '0';
  if (c >= 'a' && c <= 'f') return c - 'a' + 10;
  if (c >= 'A' && c <= 'F') return c - 'A' + 10;
  return -1;
}

/* A bare identifier; len 0 when there is none. */
static size_t ident(parser *p, const char **start) {
  skip_ws(p);
  *start = p->s + p->pos;
  size_t b = p->pos;
  if (!is_ident_start(cur(p))) return 0;
  while (is_ident_char(cur(p))) p->pos++;
  return p->pos - b;
}

static bool accept_kw(parser *p, const char *kw) {
  skip_ws(p);
  size_t k = strlen(kw), save = p->pos;
  const char *s;
  if (ident(p, &s) == k && memcmp(s, kw, k) == 0) return true;
  p->pos = save;
  return false;
}

static int expect_kw(parser *p, const char *kw) {
  if (accept_kw(p, kw)) return 0;
  return perr(p, p->pos, p->pos >= p->n ? "unexpected end of input, expected '%s'" : "expected '%s'", kw);
}

/* A string literal, unescaped into the arena. MLIR escapes: \XX, \n, \t, \", \\. */
static int string_lit(parser *p, char **out, size_t *outlen) {
  if (peek(p) != '"') return perr(p, p->pos, p->pos >= p->n ? "unexpected end of input, expected a string" : "expected a string");
  size_t start = p->pos++;
  size_t n = 0;
  /* First pass finds the end and the unescaped length. */
  for (size_t i = p->pos;; i++) {
    if (i >= p->n) return perr(p, start, "unterminated string");
    char c = p->s[i];
    if (c == '"') break;
    if (c == '\n' || c == '\r') return perr(p, start, "unterminated string");
    if (c == '\\') {
      int a = i + 1 < p->n ? (unsigned char)p->s[i + 1] : -1;
      if (a == 'n' || a == 't' || a == '"' || a == '\\') {
        i++;
      } else if (hexval(a) >= 0 && i + 2 < p->n && hexval((unsigned char)p->s[i + 2]) >= 0) {
        if (hexval(a) == 0 && hexval((unsigned char)p->s[i + 2]) == 0)
          return perr(p, i, "NUL character in string");
        i += 2;
      } else {
        return perr(p, i, "bad escape in string");
      }
    }
    n++;
  }
  char *buf = gv_alloc(p->m->arena, n + 1);
  size_t k = 0;
  while (p->s[p->pos] != '"') {
    char c = p->s[p->pos++];
    if (c == '\\') {
      char a = p->s[p->pos++];
      if (a == 'n') c = '\n';
      else if (a == 't') c = '\t';
      else if (a == '"' || a == '\\') c = a;
      else c = (char)(hexval((unsigned char)a) * 16 + hexval((unsigned char)p->s[p->pos++]));
    }
    buf[k++] = c;
  }
  p->pos++;
  buf[k] = 0;
  *out = buf;
  if (outlen) *outlen = k;
  return 0;
}

/* A numeric token: [-+]?(0x hex | digits [. digits] [e [-+] digits]), copied
 * into buf so that strtod never reads past the input. */
static int number_tok(parser *p, char *buf, size_t cap, bool *is_float, bool *is_hex) {
  skip_ws(p);
  size_t b = p->pos, k = 0;
  *is_float = *is_hex = false;
  if (cur(p) == '-' || cur(p) == '+') p->pos++;
  if (cur(p) == '0' && (at_off(p, 1) == 'x' || at_off(p, 1) == 'X') && hexval(at_off(p, 2)) >= 0) {
    *is_hex = true;
    p->pos += 2;
    while (hexval(cur(p)) >= 0) p->pos++;
  } else {
    if (!is_digit(cur(p))) {
      p->pos = b;
      return perr(p, b, p->pos >= p->n ? "unexpected end of input, expected a number" : "expected a number");
    }
    while (is_digit(cur(p))) p->pos++;
    if (cur(p) == '.') {
      *is_float = true;
      p->pos++;
      while (is_digit(cur(p))) p->pos++;
    }
    if ((cur(p) == 'e' || cur(p) == 'E') &&
        (is_digit(at_off(p, 1)) || ((at_off(p, 1) == '-' || at_off(p, 1) == '+') && is_digit(at_off(p, 2))))) {
      *is_float = true;
      p->pos += 2;
      while (is_digit(cur(p))) p->pos++;
    }
  }
  k = p->pos - b;
  if (k >= cap) return perr(p, b, "number too long");
  memcpy(buf, p->s + b, k);
  buf[k] = 0;
  return 0;
}

/* An integer token as a sign and 64-bit magnitude. */
static int int_tok(parser *p, const char *buf, size_t at, bool *neg, uint64_t *mag) {
  const char *c = buf;
  *neg = *c == '-';
  if (*c == '-' || *c == '+') c++;
  bool hex = c[0] == '0' && (c[1] == 'x' || c[1] == 'X');
  if (hex) c += 2;
  uint64_t v = 0, base = hex ? 16 : 10;
  for (; *c; c++) {
    uint64_t d = (uint64_t)hexval((unsigned char)*c);
    if (v > (UINT64_MAX - d) / base) return perr(p, at, "integer literal out of range");
    v = v * base + d;
  }
  *mag = v;
  return 0;
}

/* An integer that fits dtype dt (signless types also take their unsigned range). */
static int int_value(parser *p, gv_dtype dt, int64_t *out) {
  char buf[128];
  bool isf, ishex, neg;
  uint64_t mag;
  size_t at = (skip_ws(p), p->pos);
  if (number_tok(p, buf, sizeof buf, &isf, &ishex)) return -1;
  if (isf) return perr(p, at, "expected an integer");
  if (int_tok(p, buf, at, &neg, &mag)) return -1;
  int bits = (int)gv_dtype_size(dt) * 8;
  if (dt == GV_DT_BOOL) bits = 1;
  uint64_t lim_pos = bits == 64 ? UINT64_MAX : (1ull << bits) - 1;
  uint64_t lim_neg = dt == GV_DT_U8 ? 0 : bits == 64 ? (1ull << 63) : (1ull << (bits - 1));
  if (dt == GV_DT_BOOL) lim_neg = 0;
  if (neg ? mag > lim_neg : mag > lim_pos) return perr(p, at, "integer %s out of range for %s", buf, gv_dtype_name(dt));
  *out = neg ? (int64_t)(0 - mag) : (int64_t)mag;
  if (bits < 64 && !neg && dt != GV_DT_U8 && dt != GV_DT_BOOL && mag >= (1ull << (bits - 1)))
    *out = (int64_t)mag - (int64_t)(1ull << bits); /* e.g. 255 : i8 is -1 */
  return 0;
}

/* A float literal for dtype dt: decimal, or hex bits of exactly that width. */
static int float_value(parser *p, gv_dtype dt, double *out, uint64_t *bits, bool *is_bits) {
  char buf[128];
  bool isf, ishex;
  size_t at = (skip_ws(p), p->pos);
  if (number_tok(p, buf, sizeof buf, &isf, &ishex)) return -1;
  *is_bits = ishex;
  if (ishex) {
    bool neg;
    if (buf[0] == '-' || buf[0] == '+') return perr(p, at, "signed hexadecimal float literal");
    if (int_tok(p, buf, at, &neg, bits)) return -1;
    size_t w = gv_dtype_size(dt) * 8;
    if (w < 64 && *bits >> w) return perr(p, at, "hexadecimal literal too wide for %s", gv_dtype_name(dt));
    return 0;
  }
  *out = dt == GV_DT_F64 ? strtod(buf, NULL) : (double)strtof(buf, NULL);
  return 0;
}

/* ---------------------------------------------------------------- types */

static int parse_dtype(parser *p, gv_dtype *dt, bool allow_unknown) {
  skip_ws(p);
  size_t at = p->pos;
  if (cur(p) == '!') {
    p->pos++;
    const char *s;
    size_t k = ident(p, &s);
    if (k == 8 && memcmp(s, "galv.any", 8) == 0 && allow_unknown) {
      *dt = GV_DT_UNKNOWN;
      return 0;
    }
    return perr(p, at, "unknown element type");
  }
  const char *s;
  size_t k = ident(p, &s);
  if (k && gv_dtype_parse(s, k, dt)) return 0;
  if (p->pos >= p->n) return perr(p, at, "unexpected end of input, expected an element type");
  char b[48];
  return perr(p, at, "unknown element type '%s'", snip(s, k ? k : 1, b, sizeof b));
}

static int parse_type(parser *p, gv_type *t) {
  memset(t, 0, sizeof *t);
  if (expect_kw(p, "tensor") || expect(p, '<')) return -1;
  skip_ws(p);
  if (cur(p) == '*') {
    p->pos++;
    if (cur(p) != 'x') return perr(p, p->pos, "expected 'x' after '*'");
    p->pos++;
    t->rank = GV_RANK_UNKNOWN;
  } else {
    while (is_digit(cur(p)) || cur(p) == '?') {
      size_t at = p->pos;
      int64_t d = GV_DIM_UNKNOWN;
      if (cur(p) == '?') {
        p->pos++;
      } else {
        d = 0;
        while (is_digit(cur(p))) {
          if (d > (INT64_MAX / 2 - 9) / 10) return perr(p, at, "dimension too large");
          d = d * 10 + (cur(p) - '0');
          p->pos++;
        }
      }
      if (cur(p) != 'x') return perr(p, p->pos, "expected 'x' after a dimension");
      p->pos++;
      if (t->rank == GV_MAX_RANK) return perr(p, at, "rank exceeds %d", GV_MAX_RANK);
      t->dims[t->rank++] = d;
    }
  }
  if (parse_dtype(p, &t->dtype, true)) return -1;
  return expect(p, '>');
}

/* ---------------------------------------------------------------- symbols */

static uint64_t hash_name(const char *s, int n) {
  uint64_t h = 1469598103934665603ull;
  for (int i = 0; i < n; i++) h = (h ^ (unsigned char)s[i]) * 1099511628211ull;
  return h;
}

/* The slot of name: holding its entry, or the empty slot where it goes. */
static size_t sym_slot(const parser *p, const char *name, int len) {
  size_t mask = p->capslots - 1, i = (size_t)hash_name(name, len) & mask;
  for (;; i = (i + 1) & mask) {
    int e = p->slots[i];
    if (!e) return i;
    const sym *s = &p->syms[e - 1];
    if (s->len == len && memcmp(s->name, name, (size_t)len) == 0) return i;
  }
}

static int sym_define(parser *p, const char *name, int len, gv_value **vals, int n, size_t at) {
  if ((size_t)(p->nsyms + 1) * 2 > p->capslots) {
    size_t cap = p->capslots ? p->capslots * 2 : 256;
    int *ns = calloc(cap, sizeof *ns);
    if (!ns) return perr(p, at, "out of memory");
    int *old = p->slots;
    size_t oldcap = p->capslots;
    p->slots = ns;
    p->capslots = cap;
    for (size_t i = 0; i < oldcap; i++)
      if (old[i]) p->slots[sym_slot(p, p->syms[old[i] - 1].name, p->syms[old[i] - 1].len)] = old[i];
    free(old);
  }
  size_t slot = sym_slot(p, name, len);
  int e = p->slots[slot];
  if (e && p->syms[e - 1].alive) {
    char b[48];
    return perr(p, at, "redefinition of value '%%%s'", snip(name, (size_t)len, b, sizeof b));
  }
  if (!e) {
    if (p->nsyms == p->capsyms) {
      int cap = p->capsyms ? 2 * p->capsyms : 256;
      sym *ns = realloc(p->syms, (size_t)cap * sizeof *ns);
      if (!ns) return perr(p, at, "out of memory");
      p->syms = ns;
      p->capsyms = cap;
    }
    e = ++p->nsyms;
    p->slots[slot] = e;
  }
  /* A dead entry (its region closed) is reused: the name is free again. */
  p->syms[e - 1] = (sym){name, len, vals, n, true};
  if (p->nscope == p->capscope) {
    int cap = p->capscope ? 2 * p->capscope : 256;
    int *ns = realloc(p->scope, (size_t)cap * sizeof *ns);
    if (!ns) return perr(p, at, "out of memory");
    p->scope = ns;
    p->capscope = cap;
  }
  p->scope[p->nscope++] = e - 1;
  return 0;
}

static void scope_pop(parser *p, int mark) {
  while (p->nscope > mark) p->syms[p->scope[--p->nscope]].alive = false;
}

/* %name, returning the name without '%' (MLIR suffix-id characters). */
static int ssa_name(parser *p, const char **name, int *len) {
  skip_ws(p);
  if (cur(p) != '%') return perr(p, p->pos, p->pos >= p->n ? "unexpected end of input, expected a value" : "expected a value name");
  p->pos++;
  size_t b = p->pos;
  while (is_ident_char(cur(p)) || cur(p) == '-') p->pos++;
  if (p->pos == b) return perr(p, b, "expected a value name after '%%'");
  if (p->pos - b > 1000) return perr(p, b, "value name too long");
  *name = p->s + b;
  *len = (int)(p->pos - b);
  return 0;
}

/* A use: %name or %name#N. */
static gv_value *ssa_use(parser *p) {
  size_t at = (skip_ws(p), p->pos);
  const char *name;
  int len;
  if (ssa_name(p, &name, &len)) return NULL;
  int64_t idx = 0;
  if (cur(p) == '#') {
    p->pos++;
    if (!is_digit(cur(p))) return perr(p, p->pos, "expected a result number after '#'"), NULL;
    while (is_digit(cur(p))) {
      if (idx < 1000000000) idx = idx * 10 + (cur(p) - '0');
      p->pos++;
    }
  }
  char b[48];
  int e = p->capslots ? p->slots[sym_slot(p, name, len)] : 0;
  if (!e || !p->syms[e - 1].alive)
    return perr(p, at, "use of undefined value '%%%s'", snip(name, (size_t)len, b, sizeof b)), NULL;
  const sym *s = &p->syms[e - 1];
  if (idx >= s->n)
    return perr(p, at, "result #%lld of '%%%s' out of range (it has %d)", (long long)idx,
                snip(name, (size_t)len, b, sizeof b), s->n), NULL;
  return s->vals[idx];
}

/* ---------------------------------------------------------------- attributes */

/* Grows an arena array by doubling; the old copy stays in the arena. */
static void *grow(gv_arena *a, void *old, int n, int *cap, size_t elem) {
  if (n < *cap) return old;
  int nc = *cap ? 2 * *cap : 8;
  void *nv = gv_alloc(a, (size_t)nc * elem);
  if (n) memcpy(nv, old, (size_t)n * elem);
  *cap = nc;
  return nv;
}

/* The literal of dense<...> between the brackets, parsed once the type is known. */
static int dense_elem(parser *p, gv_tensor *t, int64_t i) {
  gv_dtype dt = t->type.dtype;
  unsigned char *d = t->data;
  if (dt == GV_DT_BOOL) {
    int64_t v;
    if (accept_kw(p, "true")) v = 1;
    else if (accept_kw(p, "false")) v = 0;
    else if (int_value(p, dt, &v)) return -1;
    d[i] = v != 0;
    return 0;
  }
  if (gv_dtype_is_float(dt)) {
    double v = 0;
    uint64_t bits = 0;
    bool isbits;
    if (float_value(p, dt, &v, &bits, &isbits)) return -1;
    size_t es = gv_dtype_size(dt);
    if (isbits) {
      for (size_t k = 0; k < es; k++) d[(size_t)i * es + k] = (unsigned char)(bits >> (8 * k));
    } else {
      gv_tensor_set_f(t, i, v);
    }
    return 0;
  }
  int64_t v;
  if (int_value(p, dt, &v)) return -1;
  gv_tensor_set_i(t, i, v);
  return 0;
}

static int dense_list(parser *p, gv_tensor *t, int d, int64_t *idx) {
  if (d == t->type.rank) return dense_elem(p, t, (*idx)++);
  size_t at = (skip_ws(p), p->pos);
  if (expect(p, '[')) return -1;
  int64_t k = 0;
  if (!accept(p, ']')) {
    do {
      if (k == t->type.dims[d]) return perr(p, at, "dense literal has more than %lld elements in dimension %d", (long long)k, d);
      if (dense_list(p, t, d + 1, idx)) return -1;
      k++;
    } while (accept(p, ','));
    if (expect(p, ']')) return -1;
  }
  if (k != t->type.dims[d])
    return perr(p, at, "dense literal has %lld elements in dimension %d, the type has %lld", (long long)k, d,
                (long long)t->type.dims[d]);
  return 0;
}

static int dense_hex(parser *p, gv_tensor *t, int64_t numel) {
  size_t at = p->pos;
  char *hex;
  size_t hl;
  if (string_lit(p, &hex, &hl)) return -1;
  if (hl < 2 || hex[0] != '0' || (hex[1] != 'x' && hex[1] != 'X') || hl % 2)
    return perr(p, at, "expected \"0x...\" with an even number of hex digits");
  size_t nb = (hl - 2) / 2, es = gv_dtype_size(t->type.dtype);
  bool isbool = t->type.dtype == GV_DT_BOOL;
  size_t want = isbool ? (size_t)(numel + 7) / 8 : (size_t)numel * es;
  if (nb != want && nb != (isbool ? 1 : es))
    return perr(p, at, "hex literal has %zu bytes, the type needs %zu", nb, want);
  unsigned char *bytes = gv_alloc(p->m->arena, nb ? nb : 1);
  for (size_t i = 0; i < nb; i++) {
    int a = hexval((unsigned char)hex[2 + 2 * i]), b = hexval((unsigned char)hex[3 + 2 * i]);
    if (a < 0 || b < 0) return perr(p, at, "bad hex digit in dense literal");
    bytes[i] = (unsigned char)(a * 16 + b);
  }
  unsigned char *d = t->data;
  if (isbool) {
    for (int64_t i = 0; i < numel; i++)
      d[i] = nb == want ? (bytes[i / 8] >> (i % 8)) & 1 : bytes[0] != 0;
  } else if (nb == want) {
    memcpy(d, bytes, want);
  } else { /* one element: a splat */
    for (int64_t i = 0; i < numel; i++) memcpy(d + (size_t)i * es, bytes, es);
  }
  return 0;
}

static int parse_dense(parser *p, gv_tensor **out) {
  if (expect(p, '<')) return -1;
  /* Find the closing '>' first: the literal's meaning depends on the type after it. */
  size_t lit = (skip_ws(p), p->pos), end = lit;
  while (end < p->n && p->s[end] != '>') {
    if (p->s[end] == '"') {
      end++;
      while (end < p->n && p->s[end] != '"' && p->s[end] != '\n') end += p->s[end] == '\\' ? 2 : 1;
    }
    end++;
  }
  if (end >= p->n) return perr(p, lit, "unterminated dense<...> literal");
  p->pos = end + 1;
  gv_type ty;
  size_t tat;
  if (expect(p, ':') || ((tat = (skip_ws(p), p->pos)), parse_type(p, &ty))) return -1;
  int64_t numel = gv_type_numel(&ty);
  if (numel < 0 || ty.dtype == GV_DT_UNKNOWN) return perr(p, tat, "dense literal needs a static tensor type with an element type");
  size_t es = gv_dtype_size(ty.dtype), litlen = end - lit;
  int first = lit < end ? (unsigned char)p->s[lit] : -1;
  /* Bound the allocation by the text before making it. */
  if (first == '[' || first == '"' ? (uint64_t)numel > litlen * 8 : (uint64_t)numel > MAX_SPLAT_BYTES / es)
    return perr(p, lit, "dense literal too small or too large for its type");
  gv_tensor *t = gv_tensor_new(p->m->arena, ty);
  size_t after = p->pos, save_n = p->n;
  p->pos = lit;
  p->n = end; /* the literal cannot run past its '>' */
  int rc = 0;
  if (first == -1) {
    if (numel != 0) rc = perr(p, lit, "empty dense literal for a tensor with %lld elements", (long long)numel);
  } else if (first == '"') {
    rc = dense_hex(p, t, numel);
  } else if (first == '[') {
    int64_t idx = 0;
    rc = dense_list(p, t, 0, &idx);
  } else {
    rc = numel ? dense_elem(p, t, 0) : 0;
    /* the splat by doubling: log2(numel) copies, not one per element (a
     * 256 MB splat from a few bytes of text took seconds element by element) */
    for (size_t have = 1, n = (size_t)numel; !rc && have < n; have *= 2)
      memcpy((char *)t->data + have * es, t->data, (have < n - have ? have : n - have) * es);
  }
  if (!rc && peek(p) != -1) rc = perr(p, p->pos, "unexpected text in dense literal");
  p->n = save_n;
  p->pos = after;
  *out = t;
  return rc;
}

/* #galv.sharding<@m, [{"dp"}, {}], partial={"tp":sum}> (docs/sharding.md);
 * the mesh must be defined above the function. */
static int parse_sharding(parser *p, const gv_sharding **out) {
  size_t at = (skip_ws(p), p->pos);
  if (expect(p, '#') || expect_kw(p, "galv.sharding") || expect(p, '<') || expect(p, '@')) return -1;
  const char *mn;
  size_t k = ident(p, &mn);
  if (!k) return perr(p, p->pos, "expected a mesh name after '@'");
  char *name = gv_strndup(p->m->arena, mn, k);
  const gv_mesh *mesh = gv_module_mesh(p->m, name);
  if (!mesh) {
    char b[48];
    return perr(p, at, "sharding on undefined mesh '%s'", snip(mn, k, b, sizeof b));
  }
  gv_sharding *sh = gv_sharding_new(p->m, mesh, 0);
  unsigned used = 0;
  if (expect(p, ',') || expect(p, '[')) return -1;
  if (!accept(p, ']')) {
    do {
      if (sh->rank >= GV_MAX_RANK) return perr(p, p->pos, "sharding has more than %d dims", GV_MAX_RANK);
      int d = sh->rank++;
      if (expect(p, '{')) return -1;
      if (!accept(p, '}')) {
        do {
          size_t aat = (skip_ws(p), p->pos);
          char *an;
          size_t al;
          if (string_lit(p, &an, &al)) return -1;
          int a = gv_mesh_axis(mesh, an, al);
          char b[48];
          if (a < 0) return perr(p, aat, "mesh '%s' has no axis '%s'", mesh->name, snip(an, al, b, sizeof b));
          if (used & (1u << a)) return perr(p, aat, "mesh axis '%s' used twice in one sharding", mesh->axis[a]);
          if (sh->naxes[d] && sh->axes[d][sh->naxes[d] - 1] > a)
            return perr(p, aat, "axes of a dim must be listed in mesh order ('%s')", mesh->axis[a]);
          used |= 1u << a;
          sh->axes[d][sh->naxes[d]++] = (uint8_t)a;
        } while (accept(p, ','));
        if (expect(p, '}')) return -1;
      }
    } while (accept(p, ','));
    if (expect(p, ']')) return -1;
  }
  if (accept(p, ',')) {
    if (expect_kw(p, "partial") || expect(p, '=') || expect(p, '{')) return -1;
    do {
      size_t aat = (skip_ws(p), p->pos);
      char *an;
      size_t al;
      if (string_lit(p, &an, &al)) return -1;
      int a = gv_mesh_axis(mesh, an, al);
      char b[48];
      if (a < 0) return perr(p, aat, "mesh '%s' has no axis '%s'", mesh->name, snip(an, al, b, sizeof b));
      if (used & (1u << a)) return perr(p, aat, "mesh axis '%s' used twice in one sharding", mesh->axis[a]);
      used |= 1u << a;
      sh->partial |= 1u << a;
      if (expect(p, ':') || expect_kw(p, "sum")) return -1;
    } while (accept(p, ','));
    if (expect(p, '}')) return -1;
  }
  if (expect(p, '>')) return -1;
  *out = sh;
  return 0;
}

/* One attribute value after '=' (the name is set by the caller). */
static int parse_attr_value(parser *p, gv_attr *a) {
  int c = peek(p);
  size_t at = p->pos;
  if (c == '"') {
    a->kind = GV_ATTR_STR;
    return string_lit(p, (char **)&a->u.s, NULL);
  }
  if (c == '#') {
    a->kind = GV_ATTR_SHARDING;
    a->u.sh.n = 1;
    a->u.sh.v = gv_alloc(p->m->arena, sizeof *a->u.sh.v);
    return parse_sharding(p, &a->u.sh.v[0]);
  }
  if (c == '[') {
    p->pos++;
    if (peek(p) == '#') {
      a->kind = GV_ATTR_SHARDING;
      int cap = 0;
      do {
        a->u.sh.v = grow(p->m->arena, a->u.sh.v, a->u.sh.n, &cap, sizeof *a->u.sh.v);
        if (parse_sharding(p, &a->u.sh.v[a->u.sh.n])) return -1;
        a->u.sh.n++;
      } while (accept(p, ','));
      return expect(p, ']');
    }
    a->kind = GV_ATTR_STRS;
    int cap = 0;
    if (accept(p, ']')) return 0;
    do {
      a->u.strs.v = grow(p->m->arena, a->u.strs.v, a->u.strs.n, &cap, sizeof(char *));
      if (string_lit(p, (char **)&a->u.strs.v[a->u.strs.n], NULL)) return -1;
      a->u.strs.n++;
    } while (accept(p, ','));
    return expect(p, ']');
  }
  if (c == '!') {
    a->kind = GV_ATTR_TYPE;
    return parse_dtype(p, &a->u.ty, true);
  }
  if (c == '-' || c == '+' || is_digit(c)) {
    char buf[128];
    bool isf, ishex;
    if (number_tok(p, buf, sizeof buf, &isf, &ishex) || expect(p, ':')) return -1;
    gv_dtype dt;
    size_t tat = (skip_ws(p), p->pos);
    if (parse_dtype(p, &dt, false)) return -1;
    p->pos = at; /* re-read the number for the type now known */
    if (gv_dtype_is_float(dt)) {
      double v = 0;
      uint64_t bits = 0;
      bool isbits;
      a->kind = GV_ATTR_FLOAT;
      if (float_value(p, GV_DT_F32, &v, &bits, &isbits)) return -1;
      if (isbits) {
        uint32_t b32 = (uint32_t)bits;
        memcpy(&a->u.f, &b32, 4);
      } else {
        a->u.f = (float)v;
      }
    } else if (!isf) {
      a->kind = GV_ATTR_INT;
      if (int_value(p, dt, &a->u.i)) return -1;
    } else {
      return perr(p, tat, "a float literal needs a float type");
    }
    accept(p, ':');
    return parse_dtype(p, &dt, false);
  }
  const char *s;
  size_t k = ident(p, &s);
  if (k == 5 && memcmp(s, "dense", 5) == 0) {
    a->kind = GV_ATTR_TENSOR;
    return parse_dense(p, &a->u.t);
  }
  if (k == 5 && memcmp(s, "array", 5) == 0) {
    gv_dtype dt;
    if (expect(p, '<') || parse_dtype(p, &dt, false)) return -1;
    bool isf = gv_dtype_is_float(dt);
    if (dt == GV_DT_BOOL) return perr(p, at, "unsupported array element type");
    a->kind = isf ? GV_ATTR_FLOATS : GV_ATTR_INTS;
    int cap = 0, n = 0;
    if (accept(p, ':')) {
      do {
        if (isf) {
          a->u.floats.v = grow(p->m->arena, a->u.floats.v, n, &cap, sizeof(float));
          double v = 0;
          uint64_t bits = 0;
          bool isbits;
          if (float_value(p, GV_DT_F32, &v, &bits, &isbits)) return -1;
          uint32_t b32 = (uint32_t)bits;
          if (isbits) memcpy(&a->u.floats.v[n], &b32, 4);
          else a->u.floats.v[n] = (float)v;
        } else {
          a->u.ints.v = grow(p->m->arena, a->u.ints.v, n, &cap, sizeof(int64_t));
          if (int_value(p, dt, &a->u.ints.v[n])) return -1;
        }
        n++;
      } while (accept(p, ','));
    }
    if (isf) a->u.floats.n = n;
    else a->u.ints.n = n;
    if (!n && isf) a->u.floats.v = gv_alloc(p->m->arena, sizeof(float)); /* never NULL, as the builder */
    if (!n && !isf) a->u.ints.v = gv_alloc(p->m->arena, sizeof(int64_t));
    return expect(p, '>');
  }
  p->pos = at;
  if (k && gv_dtype_parse(s, k, &a->u.ty)) {
    p->pos += k;
    a->kind = GV_ATTR_TYPE;
    return 0;
  }
  if (at >= p->n) return perr(p, at, "unexpected end of input, expected an attribute value");
  return perr(p, at, "unsupported attribute value");
}

/* An attribute name: bare identifier or string. */
static int attr_name(parser *p, const char **out) {
  if (peek(p) == '"') return string_lit(p, (char **)out, NULL);
  const char *s;
  size_t k = ident(p, &s);
  if (!k) return perr(p, p->pos, p->pos >= p->n ? "unexpected end of input, expected an attribute name" : "expected an attribute name");
  *out = gv_strndup(p->m->arena, s, k);
  return 0;
}

typedef struct {
  gv_attr a;
  size_t at;
} attr_at;

static int attr_cmp(const void *x, const void *y) {
  const attr_at *a = x, *b = y;
  int c = strcmp(a->a.name, b->a.name);
  return c ? c : (a->at > b->at) - (a->at < b->at);
}

/* {name = value, unit, ...} into a scratch op's attribute list, sorted once
 * at the end (inserting one by one would be quadratic on hostile input). */
static int parse_attr_dict(parser *p, gv_op *into) {
  if (expect(p, '{')) return -1;
  if (accept(p, '}')) return 0;
  attr_at *v = NULL;
  int n = 0, cap = 0;
  do {
    v = grow(p->m->arena, v, n, &cap, sizeof *v);
    memset(&v[n], 0, sizeof v[n]);
    v[n].at = (skip_ws(p), p->pos);
    if (attr_name(p, &v[n].a.name)) return -1;
    if (accept(p, '=')) {
      if (parse_attr_value(p, &v[n].a)) return -1;
    } else {
      v[n].a.kind = GV_ATTR_UNIT;
    }
    n++;
  } while (accept(p, ','));
  if (expect(p, '}')) return -1;
  qsort(v, (size_t)n, sizeof *v, attr_cmp);
  into->attrs = gv_alloc(p->m->arena, (size_t)n * sizeof *into->attrs);
  into->nattrs = n;
  for (int i = 0; i < n; i++) {
    if (i && strcmp(v[i - 1].a.name, v[i].a.name) == 0) {
      char b[48];
      return perr(p, v[i].at, "duplicate attribute '%s'", snip(v[i].a.name, strlen(v[i].a.name), b, sizeof b));
    }
    into->attrs[i] = v[i].a;
    into->attrs[i].name = gv_intern(v[i].a.name);
  }
  return 0;
}

/* ---------------------------------------------------------------- ops */

/* loc("node"("OpType")), loc("node"), loc(unknown); absent means "". */
static int parse_loc(parser *p, char **node, char **optype) {
  *node = "";
  *optype = NULL;
  if (!accept_kw(p, "loc")) return 0;
  if (expect(p, '(')) return -1;
  if (accept_kw(p, "unknown")) return expect(p, ')');
  if (string_lit(p, node, NULL)) return -1;
  if (accept(p, '(')) {
    if (string_lit(p, optype, NULL) || expect(p, ')')) return -1;
  }
  return expect(p, ')');
}

/* (T, T) or a single T (results only), into an arena array. */
static int parse_type_list(parser *p, bool allow_single, gv_type **out, int *n) {
  int cap = 0;
  *n = 0;
  *out = NULL;
  if (allow_single && peek(p) != '(') {
    *out = gv_alloc(p->m->arena, sizeof(gv_type));
    *n = 1;
    return parse_type(p, *out);
  }
  if (expect(p, '(')) return -1;
  if (accept(p, ')')) return 0;
  do {
    *out = grow(p->m->arena, *out, *n, &cap, sizeof(gv_type));
    if (parse_type(p, &(*out)[*n])) return -1;
    (*n)++;
  } while (accept(p, ','));
  return expect(p, ')');
}

/* "2", "1 to 3" or "at least 1": an op table operand range for messages. */
static const char *arity(const gv_opinfo *info, char *buf, size_t n) {
  if (info->max_operands < 0) snprintf(buf, n, "at least %d", info->min_operands);
  else if (info->max_operands == info->min_operands) snprintf(buf, n, "%d", info->min_operands);
  else snprintf(buf, n, "%d to %d", info->min_operands, info->max_operands);
  return buf;
}

typedef struct {
  const char *name;
  int len;
  gv_type type;
  size_t at;
} arg_decl;

/* Creates a block's arguments in one go: the builder's gv_func_add_arg
 * copies its arrays per argument, quadratic on hostile input. Function
 * arguments get empty names here; arg_attrs fills them in. */
static int add_args(parser *p, gv_block *b, gv_func *f, const arg_decl *a, int n) {
  gv_arena *ar = p->m->arena;
  b->nargs = n;
  b->args = gv_alloc(ar, (size_t)(n ? n : 1) * sizeof *b->args);
  if (f) {
    f->arg_names = gv_alloc(ar, (size_t)(n ? n : 1) * sizeof *f->arg_names);
    f->arg_is_param = gv_alloc(ar, (size_t)(n ? n : 1) * sizeof *f->arg_is_param);
    f->param_data = gv_alloc(ar, (size_t)(n ? n : 1) * sizeof *f->param_data);
  }
  gv_value *vals = gv_alloc(ar, (size_t)(n ? n : 1) * sizeof *vals);
  gv_value **ptrs = gv_alloc(ar, (size_t)(n ? n : 1) * sizeof *ptrs);
  for (int i = 0; i < n; i++) {
    gv_value *v = ptrs[i] = &vals[i];
    v->type = a[i].type;
    v->block = b;
    v->index = i;
    b->args[i] = v;
    if (f) v->name = f->arg_names[i] = "";
    if (sym_define(p, a[i].name, a[i].len, &ptrs[i], 1, a[i].at)) return -1;
  }
  return 0;
}

static int parse_op(parser *p, gv_block *b);

/* { [^bb0(%a: T, ...):] ops } — f is the function for its body, else NULL. */
static int parse_region(parser *p, gv_block *b, gv_func *f) {
  size_t at = (skip_ws(p), p->pos);
  if (expect(p, '{')) return -1;
  if (++p->depth > MAX_DEPTH) return perr(p, at, "regions nested deeper than %d", MAX_DEPTH);
  int mark = p->nscope;
  if (peek(p) == '^') {
    p->pos++;
    while (is_ident_char(cur(p)) || cur(p) == '-') p->pos++;
    arg_decl *args = NULL;
    int nargs = 0, cap = 0;
    if (accept(p, '(') && !accept(p, ')')) {
      do {
        args = grow(p->m->arena, args, nargs, &cap, sizeof *args);
        args[nargs].at = (skip_ws(p), p->pos);
        if (ssa_name(p, &args[nargs].name, &args[nargs].len) || expect(p, ':') || parse_type(p, &args[nargs].type))
          return -1;
        nargs++;
      } while (accept(p, ','));
      if (expect(p, ')')) return -1;
    }
    if (add_args(p, b, f, args, nargs)) return -1;
    if (expect(p, ':')) return -1;
  }
  for (;;) {
    int c = peek(p);
    if (c == '}' || c == -1) break;
    if (c == '^') return perr(p, p->pos, "a region may hold only one block");
    if (parse_op(p, b)) return -1;
  }
  if (expect(p, '}')) return -1;
  scope_pop(p, mark);
  p->depth--;
  return 0;
}

static int parse_op(parser *p, gv_block *b) {
  gv_module *m = p->m;
  const char *rname = NULL;
  int rlen = 0;
  int64_t rcount = 0;
  size_t rat = (skip_ws(p), p->pos);
  if (cur(p) == '%') {
    if (ssa_name(p, &rname, &rlen)) return -1;
    rcount = 1;
    if (accept(p, ':')) {
      char buf[32];
      bool isf, ishex, neg;
      uint64_t mag;
      size_t cat = (skip_ws(p), p->pos);
      if (number_tok(p, buf, sizeof buf, &isf, &ishex) || int_tok(p, buf, cat, &neg, &mag)) return -1;
      if (isf || neg || mag < 1 || mag > 1000000) return perr(p, cat, "bad result count");
      rcount = (int64_t)mag;
    }
    if (expect(p, '=')) return -1;
  }
  size_t op_at = (skip_ws(p), p->pos);
  char *opname;
  size_t oplen;
  if (string_lit(p, &opname, &oplen)) return -1;
  gv_opcode code;
  if (oplen < 5 || memcmp(opname, "galv.", 5) != 0 || !gv_opcode_lookup(opname + 5, oplen - 5, &code)) {
    char bb[48];
    return perr(p, op_at, "unknown op '%s'", snip(opname, oplen, bb, sizeof bb));
  }
  const gv_opinfo *info = &gv_ops[code];

  /* operands */
  gv_value **opnds = NULL;
  size_t *opat = NULL;
  int nop = 0, cap = 0, cap2 = 0;
  if (expect(p, '(')) return -1;
  if (!accept(p, ')')) {
    do {
      opnds = grow(m->arena, opnds, nop, &cap, sizeof *opnds);
      opat = grow(m->arena, opat, nop, &cap2, sizeof *opat);
      opat[nop] = (skip_ws(p), p->pos);
      if (!(opnds[nop] = ssa_use(p))) return -1;
      nop++;
    } while (accept(p, ','));
    if (expect(p, ')')) return -1;
  }

  /* regions */
  gv_block **regions = NULL;
  int nreg = 0;
  cap = 0;
  if (accept(p, '(')) {
    do {
      regions = grow(m->arena, regions, nreg, &cap, sizeof *regions);
      regions[nreg] = gv_block_new(m);
      if (parse_region(p, regions[nreg], NULL)) return -1;
      nreg++;
    } while (accept(p, ','));
    if (expect(p, ')')) return -1;
  }

  gv_op attrs;
  memset(&attrs, 0, sizeof attrs);
  if (peek(p) == '{' && parse_attr_dict(p, &attrs)) return -1;

  /* : (operand types) -> result types */
  gv_type *ot, *rt;
  int not, nrt;
  if (expect(p, ':') || parse_type_list(p, false, &ot, &not)) return -1;
  skip_ws(p);
  if (cur(p) != '-' || at_off(p, 1) != '>') return perr(p, p->pos, "expected '->'");
  p->pos += 2;
  size_t rtat = (skip_ws(p), p->pos);
  if (parse_type_list(p, true, &rt, &nrt)) return -1;
  if (not != nop) return perr(p, op_at, "%d operands but %d operand types", nop, not);
  for (int i = 0; i < nop; i++) {
    if (!gv_type_equal(&opnds[i]->type, &ot[i])) {
      char a[512], c[512];
      gv_type_str(&opnds[i]->type, a, sizeof a);
      gv_type_str(&ot[i], c, sizeof c);
      return perr(p, opat[i], "operand %d has type %s but is declared %s", i, a, c);
    }
  }
  if (rname && rcount != nrt) return perr(p, rat, "%lld result names but %d result types", (long long)rcount, nrt);
  char ab[48];
  if (nop < info->min_operands || (info->max_operands >= 0 && nop > info->max_operands))
    return perr(p, op_at, "galv.%s takes %s operands, got %d", info->name, arity(info, ab, sizeof ab), nop);
  if (info->num_results >= 0 && nrt != info->num_results)
    return perr(p, rtat, "galv.%s has %d results, got %d", info->name, info->num_results, nrt);
  char *node, *optype;
  if (parse_loc(p, &node, &optype)) return -1;

  gv_op *op = gv_op_new(m, code, 0, NULL, nrt);
  op->nopnds = nop;
  if (nop) op->opnds = opnds;
  for (int i = 0; i < nrt; i++) op->res[i]->type = rt[i];
  op->attrs = attrs.attrs;
  op->nattrs = attrs.nattrs;
  op->loc = node;
  op->onnx_op = optype;
  op->nregions = nreg; /* set at once, as the args: gv_op_add_region copies per region */
  if (nreg) op->regions = regions;
  for (int r = 0; r < nreg; r++) regions[r]->parent = op;
  gv_block_append(b, op);
  if (rname && sym_define(p, rname, rlen, op->res, nrt, rat)) return -1;
  return 0;
}

/* ---------------------------------------------------------------- function */

/* [{galv.name = "x", galv.param}, {}] for arguments (f) or results. */
static int parse_name_dicts(parser *p, gv_func *f, bool args) {
  if (expect(p, '[')) return -1;
  int n = 0, cap = 0, ucap = 0;
  const char **names = NULL;
  int *upd = NULL;
  bool any_upd = false;
  size_t at = (skip_ws(p), p->pos);
  if (!accept(p, ']')) {
    do {
      if (args && n >= f->body->nargs) return perr(p, p->pos, "arg_attrs has more entries than the function has arguments");
      names = grow(p->m->arena, names, n, &cap, sizeof *names);
      if (!args) upd = grow(p->m->arena, upd, n, &ucap, sizeof *upd);
      if (!args) upd[n] = -1;
      gv_op d;
      memset(&d, 0, sizeof d);
      size_t dat = (skip_ws(p), p->pos);
      if (parse_attr_dict(p, &d)) return -1;
      names[n] = args ? "" : NULL;
      for (int i = 0; i < d.nattrs; i++) {
        const gv_attr *a = &d.attrs[i];
        if (strcmp(a->name, "galv.name") == 0 && a->kind == GV_ATTR_STR) names[n] = a->u.s;
        else if (args && strcmp(a->name, "galv.param") == 0 && a->kind == GV_ATTR_UNIT) f->arg_is_param[n] = true;
        else if (args && strcmp(a->name, "galv.frozen") == 0 && a->kind == GV_ATTR_UNIT) {
          if (!f->arg_is_frozen) f->arg_is_frozen = gv_alloc(p->m->arena, (size_t)(f->cap_args > f->body->nargs ? f->cap_args : f->body->nargs) * sizeof *f->arg_is_frozen);
          f->arg_is_frozen[n] = true;
        }
        else if (args && strcmp(a->name, "galv.sharding") == 0 && a->kind == GV_ATTR_SHARDING && a->u.sh.n == 1) {
          if (!f->arg_sharding) f->arg_sharding = gv_alloc(p->m->arena, (size_t)(f->cap_args > f->body->nargs ? f->cap_args : f->body->nargs) * sizeof *f->arg_sharding);
          if (a->u.sh.v[0]->rank != f->body->args[n]->type.rank) return perr(p, dat, "galv.sharding has %d dims for an argument of rank %d", a->u.sh.v[0]->rank, f->body->args[n]->type.rank);
          f->arg_sharding[n] = a->u.sh.v[0];
        } else if (args && strcmp(a->name, "galv.state") == 0 && a->kind == GV_ATTR_UNIT) {
          if (!f->arg_is_state) f->arg_is_state = gv_alloc(p->m->arena, (size_t)f->body->nargs * sizeof *f->arg_is_state);
          f->arg_is_state[n] = true;
        } else if (!args && strcmp(a->name, "galv.updates") == 0 && a->kind == GV_ATTR_INT && a->u.i >= 0 &&
                   a->u.i < f->body->nargs) {
          upd[n] = (int)a->u.i;
          any_upd = true;
        }
        else return perr(p, dat, "unexpected %s attribute", args ? "argument" : "result");
      }
      n++;
    } while (accept(p, ','));
    if (expect(p, ']')) return -1;
  }
  if (args) {
    if (n != f->body->nargs) return perr(p, at, "arg_attrs has %d entries for %d arguments", n, f->body->nargs);
    for (int i = 0; i < n; i++) f->arg_names[i] = f->body->args[i]->name = names[i];
    for (int i = 0; f->arg_is_frozen && i < n; i++)
      if (f->arg_is_frozen[i] && !f->arg_is_param[i])
        return perr(p, at, "argument '%s' is galv.frozen but not galv.param", names[i]);
  } else {
    f->res_names = names;
    f->nres_names = n;
    f->res_updates = any_upd ? upd : NULL;
  }
  return 0;
}

/* "galv.mesh"() {axes = #galv.axes<["dp"=2, "tp"=4]>, sym_name = "m"} : () -> () */
static int parse_mesh(parser *p, size_t at) {
  const char *names[GV_MAX_MESH_AXES];
  int64_t sizes[GV_MAX_MESH_AXES];
  int naxes = 0;
  char *sym = NULL;
  bool seen_axes = false, seen_pred = false;
  int64_t pred[4];
  if (expect(p, '(') || expect(p, ')') || expect(p, '{')) return -1;
  do {
    const char *an;
    size_t aat = (skip_ws(p), p->pos);
    if (attr_name(p, &an) || expect(p, '=')) return -1;
    if (strcmp(an, "sym_name") == 0 && !sym) {
      if (string_lit(p, &sym, NULL)) return -1;
      for (const char *c = sym; *c; c++)
        if (!is_ident_char((unsigned char)*c) || (c == sym && !is_ident_start((unsigned char)*c)))
          return perr(p, aat, "a mesh name must be an identifier");
    } else if (strcmp(an, "axes") == 0 && !seen_axes) {
      seen_axes = true;
      if (expect(p, '#') || expect_kw(p, "galv.axes") || expect(p, '<') || expect(p, '[')) return -1;
      do {
        if (naxes == GV_MAX_MESH_AXES) return perr(p, p->pos, "a mesh has at most %d axes", GV_MAX_MESH_AXES);
        char *nm;
        if (string_lit(p, &nm, NULL) || expect(p, '=')) return -1;
        if (int_value(p, GV_DT_I64, &sizes[naxes])) return -1;
        names[naxes++] = nm;
      } while (accept(p, ','));
      if (expect(p, ']') || expect(p, '>')) return -1;
    } else if (strcmp(an, "predicted_bytes") == 0 && !seen_pred) {
      seen_pred = true;
      if (expect(p, '[')) return -1;
      for (int k = 0; k < 4; k++) {
        size_t vat = (skip_ws(p), p->pos);
        if ((k && expect(p, ',')) || int_value(p, GV_DT_I64, &pred[k])) return -1;
        if (pred[k] < 0) return perr(p, vat, "galv.mesh predicted_bytes: a negative byte count");
      }
      if (expect(p, ']')) return -1;
    } else {
      return perr(p, aat, "unexpected or duplicate galv.mesh attribute");
    }
  } while (accept(p, ','));
  if (expect(p, '}')) return -1;
  if (!sym || !naxes) return perr(p, at, "galv.mesh needs axes and sym_name");
  gv_type *t;
  int n;
  if (expect(p, ':') || parse_type_list(p, false, &t, &n)) return -1;
  skip_ws(p);
  if (cur(p) != '-' || at_off(p, 1) != '>') return perr(p, p->pos, "expected '->'");
  p->pos += 2;
  if (parse_type_list(p, false, &t, &n)) return -1;
  char *node, *optype;
  if (parse_loc(p, &node, &optype)) return -1;
  for (int a = 0; a < naxes; a++)
    if (sizes[a] < 1) return perr(p, at, "mesh '%s': axis '%s' has size %lld", sym, names[a], (long long)sizes[a]);
  if (gv_module_mesh(p->m, sym)) return perr(p, at, "mesh '%s' defined twice", sym);
  for (int a = 0; a < naxes; a++)
    for (int b = 0; b < a; b++)
      if (strcmp(names[a], names[b]) == 0) return perr(p, at, "mesh '%s': axis '%s' repeated", sym, names[a]);
  gv_mesh *mesh = gv_module_add_mesh(p->m, sym, naxes, names, sizes);
  if (!mesh) { p->failed = true; return -1; }
  if (seen_pred) mesh->has_predicted = true, memcpy(mesh->predicted, pred, sizeof pred);
  return 0;
}

static int parse_func(parser *p) {
  size_t at = (skip_ws(p), p->pos);
  char *name;
  size_t len;
  if (p->pos >= p->n) return perr(p, at, "expected \"galv.func\"");
  if (string_lit(p, &name, &len)) return -1;
  while (strcmp(name, "galv.mesh") == 0) {
    if (parse_mesh(p, at)) return -1;
    at = (skip_ws(p), p->pos);
    if (p->pos >= p->n) return perr(p, at, "expected \"galv.func\"");
    if (string_lit(p, &name, &len)) return -1;
  }
  if (strcmp(name, "galv.func") != 0) return perr(p, at, "expected \"galv.func\"");
  gv_func *f = gv_func_new(p->m, "main");
  p->m->main = f;
  if (expect(p, '(') || expect(p, ')') || expect(p, '(') || parse_region(p, f->body, f) || expect(p, ')')) return -1;
  if (peek(p) == '{') {
    p->pos++;
    bool seen[3] = {false, false, false};
    if (!accept(p, '}')) {
      do {
        const char *an;
        size_t aat = (skip_ws(p), p->pos);
        if (attr_name(p, &an)) return -1;
        int k = strcmp(an, "arg_attrs") == 0 ? 0 : strcmp(an, "res_attrs") == 0 ? 1 : strcmp(an, "sym_name") == 0 ? 2 : -1;
        if (k < 0) return perr(p, aat, "unexpected galv.func attribute");
        if (seen[k]) return perr(p, aat, "duplicate attribute '%s'", an);
        seen[k] = true;
        if (expect(p, '=')) return -1;
        if (k == 2) {
          char *sn;
          if (string_lit(p, &sn, NULL)) return -1;
          f->name = sn;
        } else if (parse_name_dicts(p, f, k == 0)) {
          return -1;
        }
      } while (accept(p, ','));
      if (expect(p, '}')) return -1;
    }
  }
  gv_type *t;
  int n;
  if (expect(p, ':') || parse_type_list(p, false, &t, &n)) return -1;
  skip_ws(p);
  if (cur(p) != '-' || at_off(p, 1) != '>') return perr(p, p->pos, "expected '->'");
  p->pos += 2;
  if (parse_type_list(p, false, &t, &n)) return -1;
  char *node, *optype;
  return parse_loc(p, &node, &optype);
}

gv_module *gv_parse_module(const char *text, size_t len, const char *source) {
  parser p;
  memset(&p, 0, sizeof p);
  p.s = text ? text : "";
  p.n = text ? len : 0;
  p.source = source ? source : "<input>";
  p.m = gv_module_new(p.source);
  /* A `module { ... }` wrapper, as mlir-opt prints, is accepted. */
  bool wrapped = accept_kw(&p, "module");
  int rc = wrapped ? expect(&p, '{') : 0;
  if (!rc) rc = parse_func(&p);
  if (!rc && wrapped) rc = expect(&p, '}');
  if (!rc && peek(&p) != -1) rc = perr(&p, p.pos, "unexpected text after the function");
  free(p.syms);
  free(p.slots);
  free(p.scope);
  if (rc || p.failed) {
    gv_module_free(p.m);
    return NULL;
  }
  return p.m;
}
