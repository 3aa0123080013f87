/* json.h — a small JSON reader for the planner's data files (cluster
 * descriptions, later plans). It parses RFC 8259 text into a tree of
 * gv_json nodes owned by one allocation context and freed at once; every
 * node remembers its line so errors can point at it. It must never know
 * what the files mean: the schema lives with its reader (cluster.c). */
#ifndef GALV_JSON_H
#define GALV_JSON_H

#include <stdbool.h>
#include <stddef.h>

typedef enum { GV_JSON_NULL, GV_JSON_BOOL, GV_JSON_NUMBER, GV_JSON_STRING, GV_JSON_ARRAY, GV_JSON_OBJECT } gv_json_kind;

typedef struct gv_json gv_json;
struct gv_json {
  gv_json_kind kind;
  int line;             /* 1-based line of the value's first character */
  bool b;               /* GV_JSON_BOOL */
  double num;           /* GV_JSON_NUMBER */
  char *str;            /* GV_JSON_STRING (NUL-terminated; embedded NULs rejected) */
  int n;                /* GV_JSON_ARRAY / GV_JSON_OBJECT: item count */
  gv_json *items;       /* items[n] */
  char **keys;          /* GV_JSON_OBJECT: keys[n], unique */
};

/* Parses len bytes. Returns the root (free with gv_json_free), or NULL with
 * a one-line reason ("line 3: expected ',' or '}'") in err. */
gv_json *gv_json_parse(const char *text, size_t len, char *err, size_t errlen);
void gv_json_free(gv_json *root);
/* The member named key of an object, or NULL (also when o is not an object). */
const gv_json *gv_json_get(const gv_json *o, const char *key);
const char *gv_json_kind_name(gv_json_kind k);

#endif
