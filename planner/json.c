/* json.c — the planner's JSON reader (json.h): recursive descent over a
 * byte buffer with a nesting limit, so no input can overflow the stack,
 * and with exact one-line errors. Numbers go through strtod after a strict
 * grammar check; strings decode \u escapes (surrogate pairs) to UTF-8. */
#include "json.h"

#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

enum { MAX_DEPTH = 64 };

typedef struct {
  const char *s, *end;
  int line;
  char *err;
  size_t errlen;
  int failed;
} parser;

static int fail(parser *p, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static int fail(parser *p, const char *fmt, ...) {
  if (p->failed) return -1;
  p->failed = 1;
  int k = snprintf(p->err, p->errlen, "line %d: ", p->line);
  if (k < 0 || (size_t)k >= p->errlen) return -1;
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(p->err + k, p->errlen - (size_t)k, fmt, ap);
  va_end(ap);
  return -1;
}

static void skip_ws(parser *p) {
  while (p->s < p->end) {
    char c = *p->s;
    if (c == '\n') p->line++;
    else if (c != ' ' && c != '\t' && c != '\r') return;
    p->s++;
  }
}

static void free_node(gv_json *j) {
  if (j->kind == GV_JSON_STRING) free(j->str);
  if (j->kind == GV_JSON_ARRAY || j->kind == GV_JSON_OBJECT) {
    for (int i = 0; i < j->n; i++) {
      free_node(&j->items[i]);
      if (j->keys) free(j->keys[i]);
    }
    free(j->items);
    free(j->keys);
  }
}

void gv_json_free(gv_json *root) {
  if (!root) return;
  free_node(root);
  free(root);
}

static void put_utf8(char *out, size_t *n, uint32_t cp) {
  if (cp < 0x80) out[(*n)++] = (char)cp;
  else if (cp < 0x800) {
    out[(*n)++] = (char)(0xC0 | (cp >> 6));
    out[(*n)++] = (char)(0x80 | (cp & 0x3F));
  } else if (cp < 0x10000) {
    out[(*n)++] = (char)(0xE0 | (cp >> 12));
    out[(*n)++] = (char)(0x80 | ((cp >> 6) & 0x3F));
    out[(*n)++] = (char)(0x80 | (cp & 0x3F));
  } else {
    out[(*n)++] = (char)(0xF0 | (cp >> 18));
    out[(*n)++] = (char)(0x80 | ((cp >> 12) & 0x3F));
    out[(*n)++] = (char)(0x80 | ((cp >> 6) & 0x3F));
    out[(*n)++] = (char)(0x80 | (cp & 0x3F));
  }
}

static int hex4(parser *p, uint32_t *v) {
  if (p->end - p->s < 4) return fail(p, "truncated \\u escape");
  *v = 0;
  for (int i = 0; i < 4; i++) {
    char c = *p->s++;
    int d = c >= '0' && c <= '9' ? c - '0' : c >= 'a' && c <= 'f' ? c - 'a' + 10 : c >= 'A' && c <= 'F' ? c - 'A' + 10 : -1;
    if (d < 0) return fail(p, "bad hex digit in \\u escape");
    *v = *v * 16 + (uint32_t)d;
  }
  return 0;
}

/* p->s at the opening quote. The decoded string is never longer than the raw one. */
static char *parse_string(parser *p) {
  p->s++;
  const char *q = p->s;
  while (q < p->end && *q != '"') q += (*q == '\\' && q + 1 < p->end) ? 2 : 1;
  if (q >= p->end) return fail(p, "unterminated string"), NULL;
  char *out = malloc((size_t)(q - p->s) + 1);
  if (!out) return fail(p, "out of memory"), NULL;
  size_t n = 0;
  while (*p->s != '"') {
    unsigned char c = (unsigned char)*p->s++;
    if (c < 0x20) { fail(p, "control character in string"); goto bad; }
    if (c != '\\') { out[n++] = (char)c; continue; }
    char e = *p->s++;
    switch (e) {
    case '"': out[n++] = '"'; break;
    case '\\': out[n++] = '\\'; break;
    case '/': out[n++] = '/'; break;
    case 'b': out[n++] = '\b'; break;
    case 'f': out[n++] = '\f'; break;
    case 'n': out[n++] = '\n'; break;
    case 'r': out[n++] = '\r'; break;
    case 't': out[n++] = '\t'; break;
    case 'u': {
      uint32_t cp, lo;
      if (hex4(p, &cp)) goto bad;
      if (cp >= 0xD800 && cp < 0xDC00) {
        if (p->end - p->s < 6 || p->s[0] != '\\' || p->s[1] != 'u') { fail(p, "unpaired surrogate in \\u escape"); goto bad; }
        p->s += 2;
        if (hex4(p, &lo)) goto bad;
        if (lo < 0xDC00 || lo >= 0xE000) { fail(p, "unpaired surrogate in \\u escape"); goto bad; }
        cp = 0x10000 + ((cp - 0xD800) << 10) + (lo - 0xDC00);
      } else if (cp >= 0xDC00 && cp < 0xE000) {
        fail(p, "unpaired surrogate in \\u escape");
        goto bad;
      }
      if (cp == 0) { fail(p, "\\u0000 in string"); goto bad; }
      put_utf8(out, &n, cp);
      break;
    }
    default: fail(p, "bad escape '\\%c' in string", e >= 0x20 && e < 0x7f ? e : '?'); goto bad;
    }
  }
  p->s++;
  out[n] = 0;
  return out;
bad:
  free(out);
  return NULL;
}

static int parse_number(parser *p, gv_json *j) {
  const char *q = p->s;
  if (q < p->end && *q == '-') q++;
  if (q >= p->end || *q < '0' || *q > '9') return fail(p, "bad number");
  if (*q == '0') q++;
  else while (q < p->end && *q >= '0' && *q <= '9') q++;
  if (q < p->end && *q == '.') {
    q++;
    if (q >= p->end || *q < '0' || *q > '9') return fail(p, "bad number: digit expected after '.'");
    while (q < p->end && *q >= '0' && *q <= '9') q++;
  }
  if (q < p->end && (*q == 'e' || *q == 'E')) {
    q++;
    if (q < p->end && (*q == '+' || *q == '-')) q++;
    if (q >= p->end || *q < '0' || *q > '9') return fail(p, "bad number: digit expected in exponent");
    while (q < p->end && *q >= '0' && *q <= '9') q++;
  }
  char buf[64];
  if (q - p->s >= (long)sizeof buf) return fail(p, "number too long");
  memcpy(buf, p->s, (size_t)(q - p->s));
  buf[q - p->s] = 0;
  j->kind = GV_JSON_NUMBER;
  j->num = strtod(buf, NULL);
  if (j->num > 1.7976931348623157e308 || j->num < -1.7976931348623157e308) return fail(p, "number out of range");
  p->s = q;
  return 0;
}

static int parse_value(parser *p, gv_json *j, int depth);

/* Grows items (and keys) to hold one more. */
static int push(parser *p, gv_json *j, int *cap, bool keys) {
  if (j->n < *cap) return 0;
  int nc = *cap ? *cap * 2 : 4;
  gv_json *it = realloc(j->items, (size_t)nc * sizeof *it);
  if (!it) return fail(p, "out of memory");
  j->items = it;
  if (keys) {
    char **k = realloc(j->keys, (size_t)nc * sizeof *k);
    if (!k) return fail(p, "out of memory");
    j->keys = k;
  }
  *cap = nc;
  return 0;
}

static int parse_compound(parser *p, gv_json *j, int depth) {
  bool obj = *p->s == '{';
  char close = obj ? '}' : ']';
  j->kind = obj ? GV_JSON_OBJECT : GV_JSON_ARRAY;
  if (depth >= MAX_DEPTH) return fail(p, "nesting deeper than %d", MAX_DEPTH);
  p->s++;
  int cap = 0;
  skip_ws(p);
  if (p->s < p->end && *p->s == close) { p->s++; return 0; }
  for (;;) {
    skip_ws(p);
    if (push(p, j, &cap, obj)) return -1;
    gv_json *it = &j->items[j->n];
    memset(it, 0, sizeof *it);
    if (obj) {
      j->keys[j->n] = NULL;
      if (p->s >= p->end || *p->s != '"') return fail(p, "expected a string key");
      char *k = parse_string(p);
      if (!k) return -1;
      j->keys[j->n] = k;
      j->n++;  /* counted now so the key is freed on any later error */
      for (int i = 0; i + 1 < j->n; i++)
        if (!strcmp(j->keys[i], k)) return fail(p, "duplicate key \"%s\"", k);
      skip_ws(p);
      if (p->s >= p->end || *p->s != ':') return fail(p, "expected ':' after key \"%s\"", k);
      p->s++;
      skip_ws(p);
      if (parse_value(p, it, depth + 1)) return -1;
    } else {
      j->n++;
      if (parse_value(p, it, depth + 1)) return -1;
    }
    skip_ws(p);
    if (p->s >= p->end) return fail(p, "unexpected end of input, expected ',' or '%c'", close);
    if (*p->s == ',') { p->s++; continue; }
    if (*p->s == close) { p->s++; return 0; }
    return fail(p, "expected ',' or '%c'", close);
  }
}

static int parse_value(parser *p, gv_json *j, int depth) {
  skip_ws(p);
  j->line = p->line;
  if (p->s >= p->end) return fail(p, "unexpected end of input, expected a value");
  char c = *p->s;
  if (c == '{' || c == '[') return parse_compound(p, j, depth);
  if (c == '"') {
    j->str = parse_string(p);
    if (!j->str) return -1;
    j->kind = GV_JSON_STRING;
    return 0;
  }
  if (c == '-' || (c >= '0' && c <= '9')) return parse_number(p, j);
  static const struct { const char *w; gv_json_kind k; bool b; } lits[] = {
      {"true", GV_JSON_BOOL, true}, {"false", GV_JSON_BOOL, false}, {"null", GV_JSON_NULL, false}};
  for (size_t i = 0; i < sizeof lits / sizeof lits[0]; i++) {
    size_t n = strlen(lits[i].w);
    if ((size_t)(p->end - p->s) >= n && !memcmp(p->s, lits[i].w, n)) {
      p->s += n;
      j->kind = lits[i].k;
      j->b = lits[i].b;
      return 0;
    }
  }
  if (c >= 0x20 && c < 0x7f) return fail(p, "unexpected character '%c'", c);
  return fail(p, "unexpected byte 0x%02x", (unsigned char)c);
}

gv_json *gv_json_parse(const char *text, size_t len, char *err, size_t errlen) {
  char dummy[1];
  parser p = {text, text + len, 1, errlen ? err : dummy, errlen ? errlen : 1, 0};
  if (errlen) err[0] = 0;
  gv_json *root = calloc(1, sizeof *root);
  if (!root) { fail(&p, "out of memory"); return NULL; }
  if (len >= 3 && !memcmp(text, "\xEF\xBB\xBF", 3)) p.s += 3; /* UTF-8 byte order mark */
  if (parse_value(&p, root, 0) == 0) {
    skip_ws(&p);
    if (p.s == p.end) return root;
    fail(&p, "trailing characters after the value");
  }
  gv_json_free(root);
  return NULL;
}

const gv_json *gv_json_get(const gv_json *o, const char *key) {
  if (!o || o->kind != GV_JSON_OBJECT) return NULL;
  for (int i = 0; i < o->n; i++)
    if (!strcmp(o->keys[i], key)) return &o->items[i];
  return NULL;
}

const char *gv_json_kind_name(gv_json_kind k) {
  static const char *const names[] = {"null", "a boolean", "a number", "a string", "an array", "an object"};
  return (unsigned)k < sizeof names / sizeof names[0] ? names[k] : "?";
}
