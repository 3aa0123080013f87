/* test_cluster.c — the JSON reader (valid documents, every malformed case
 * fails cleanly with a line number) and the cluster model: every preset
 * loads, cites a source for every field it sets, and carries the figures of
 * REFERENCES.md; every schema violation is refused. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "planner/cluster.h"
#include "planner/json.h"

static int failures;
#define CHECK(c)                                                                                   \
  do {                                                                                             \
    if (!(c)) {                                                                                    \
      fprintf(stderr, "%s:%d: check failed: %s\n", __FILE__, __LINE__, #c);                        \
      failures++;                                                                                  \
    }                                                                                              \
  } while (0)

static gv_json *parse(const char *s, char *err) { return gv_json_parse(s, strlen(s), err, 256); }

static void test_json_valid(void) {
  char err[256];
  gv_json *j = parse(" {\"a\": [1, -2.5e3, true, false, null, \"x\\n\\u00e9\\ud83d\\ude00\"],\n \"b\": {}, \"c\": []} ", err);
  CHECK(j && j->kind == GV_JSON_OBJECT && j->n == 3);
  const gv_json *a = gv_json_get(j, "a");
  CHECK(a && a->kind == GV_JSON_ARRAY && a->n == 6);
  if (a && a->n == 6) {
    CHECK(a->items[0].kind == GV_JSON_NUMBER && a->items[0].num == 1);
    CHECK(a->items[1].num == -2500);
    CHECK(a->items[2].kind == GV_JSON_BOOL && a->items[2].b);
    CHECK(a->items[3].kind == GV_JSON_BOOL && !a->items[3].b);
    CHECK(a->items[4].kind == GV_JSON_NULL);
    CHECK(a->items[5].kind == GV_JSON_STRING && !strcmp(a->items[5].str, "x\n\xc3\xa9\xf0\x9f\x98\x80"));
  }
  const gv_json *b = gv_json_get(j, "b");
  CHECK(b && b->kind == GV_JSON_OBJECT && b->n == 0 && b->line == 2);
  CHECK(!gv_json_get(j, "zz") && !gv_json_get(a, "a"));
  gv_json_free(j);
  j = parse("0", err);
  CHECK(j && j->kind == GV_JSON_NUMBER && j->num == 0);
  gv_json_free(j);
  j = parse("\xEF\xBB\xBF[\"\"]", err); /* byte order mark, empty string */
  CHECK(j && j->n == 1 && j->items[0].str[0] == 0);
  gv_json_free(j);
  /* nesting up to the limit is fine */
  char deep[200];
  memset(deep, '[', 60);
  memset(deep + 60, ']', 60);
  deep[120] = 0;
  j = parse(deep, err);
  CHECK(j != NULL);
  gv_json_free(j);
}

static void test_json_malformed(void) {
  static const struct { const char *text, *msg; } bad[] = {
      {"", "expected a value"},
      {"   ", "expected a value"},
      {"{", "expected a string key"},
      {"{\"a\" 1}", "expected ':'"},
      {"{\"a\": 1,}", "expected a string key"},
      {"{\"a\": 1 \"b\": 2}", "expected ',' or '}'"},
      {"[1, 2", "expected ',' or ']'"},
      {"[1,]", "unexpected character ']'"},
      {"{a: 1}", "expected a string key"},
      {"{\"a\": 1, \"a\": 2}", "duplicate key \"a\""},
      {"\"abc", "unterminated string"},
      {"\"a\nb\"", "control character"},
      {"\"\\x\"", "bad escape"},
      {"\"\\u12g4\"", "bad hex digit"},
      {"\"\\ud800\"", "unpaired surrogate"},
      {"\"\\udc00\"", "unpaired surrogate"},
      {"\"\\u0000\"", "\\u0000"},
      {"01", "trailing characters"},
      {"1.", "digit expected after '.'"},
      {"1e", "digit expected in exponent"},
      {"-", "bad number"},
      {"+1", "unexpected character '+'"},
      {"1e999", "out of range"},
      {"tru", "unexpected character 't'"},
      {"nul", "unexpected character 'n'"},
      {"[1] [2]", "trailing characters"},
      {"[1]\n\n x", "line 3: trailing characters"},
      {"\x01", "unexpected byte 0x01"},
      {"NaN", "unexpected character 'N'"},
  };
  char err[256];
  for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
    gv_json *j = parse(bad[i].text, err);
    if (j || !strstr(err, bad[i].msg) || strncmp(err, "line ", 5) != 0) {
      fprintf(stderr, "malformed case %zu: got %s '%s', want '%s'\n", i, j ? "a tree" : "error", err, bad[i].msg);
      failures++;
    }
    gv_json_free(j);
  }
  /* too deep: refused, not a stack overflow */
  size_t n = 100000;
  char *deep = malloc(n + 1);
  memset(deep, '[', n);
  deep[n] = 0;
  gv_json *j = gv_json_parse(deep, n, err, sizeof err);
  CHECK(!j && strstr(err, "nesting deeper than"));
  free(deep);
  /* embedded NUL byte: the length counts, the NUL is not a value */
  j = gv_json_parse("[1]\0", 4, err, sizeof err);
  CHECK(!j && strstr(err, "trailing"));
  /* every prefix of a valid document either parses or fails cleanly */
  const char *doc = "{\"a\": [1, 2.5, \"s\\u00e9\"], \"b\": {\"c\": null}}";
  for (size_t k = 0; k < strlen(doc); k++) {
    j = gv_json_parse(doc, k, err, sizeof err);
    CHECK(!j);
    gv_json_free(j);
  }
}

/* Every field set in a preset names its source. */
static void test_presets(void) {
  int count = 0;
  static const char *const want[] = {"a100-40g", "a100-80g", "h100-sxm", "h200", "cpu-local", NULL};
  for (int i = 0; want[i]; i++) {
    gv_cluster c;
    CHECK(gv_cluster_load(want[i], &c) == 0);
    CHECK(!strcmp(c.name, want[i]));
    CHECK(gv_cluster_devices(&c) >= 1);
    const char *text = gv_cluster_preset_text(want[i]);
    CHECK(text != NULL);
    if (!text) continue;
    char err[256];
    gv_json *j = gv_json_parse(text, strlen(text), err, sizeof err);
    const gv_json *src = gv_json_get(j, "sources");
    CHECK(src && src->kind == GV_JSON_OBJECT);
    static const char *const fields[] = {"devices_per_node", "peak_tflops.f32", "peak_tflops.bf16", "peak_tflops.f16",
                                         "memory_bytes", "memory_bandwidth_gbps", "intra_node.bus_bandwidth_gbps",
                                         "intra_node.latency_us", "inter_node.bandwidth_gbps", "inter_node.latency_us", NULL};
    for (int f = 0; fields[f]; f++) {
      const gv_json *s = gv_json_get(src, fields[f]);
      if (!s || s->kind != GV_JSON_STRING || strlen(s->str) < 10) {
        fprintf(stderr, "preset %s: no source for %s\n", want[i], fields[f]);
        failures++;
      }
    }
    if (gv_json_get(j, "compute_efficiency")) CHECK(gv_json_get(src, "compute_efficiency") != NULL);
    if (gv_json_get(j, "memory_efficiency")) CHECK(gv_json_get(src, "memory_efficiency") != NULL);
    gv_json_free(j);
    count++;
  }
  int n = 0;
  while (gv_cluster_preset_names[n]) n++;
  CHECK(n == count);
  /* the figures of REFERENCES.md */
  gv_cluster c;
  CHECK(gv_cluster_load("h100-sxm", &c) == 0);
  CHECK(c.peak_tflops[GV_PEAK_BF16] == 989 && c.peak_tflops[GV_PEAK_F32] == 67 && c.memory_gbps == 3350);
  CHECK(c.intra_gbps == 370 && c.inter_gbps == 47 && c.devices_per_node == 8 && c.memory_bytes == 80000000000LL);
  CHECK(fabs(gv_cluster_flops(&c, GV_DT_BF16) - 989e12 * 0.8) < 1e6);
  CHECK(gv_cluster_flops(&c, GV_DT_I64) == gv_cluster_flops(&c, GV_DT_F32));
  CHECK(gv_cluster_load("h200", &c) == 0);
  CHECK(c.memory_bytes == 141000000000LL && c.memory_gbps == 4800 && c.memory_efficiency == 0.9);
  CHECK(gv_cluster_load("a100-40g", &c) == 0);
  CHECK(c.peak_tflops[GV_PEAK_BF16] == 312 && c.peak_tflops[GV_PEAK_F32] == 19.5 && c.memory_gbps == 1555);
  CHECK(gv_cluster_load("a100-80g", &c) == 0);
  CHECK(c.memory_bytes == 80000000000LL && c.memory_gbps == 2039 && c.intra_gbps == 230 && c.inter_gbps == 24);
  CHECK(gv_cluster_load("no-such-preset", &c) == -1);
  CHECK(gv_cluster_load("/nonexistent/x.json", &c) == -1);
}

static const char *good =
    "{\"name\": \"t\", \"nodes\": 2, \"devices_per_node\": 4, \"peak_tflops\": {\"f32\": 1, \"bf16\": 2, \"f16\": 2},"
    " \"memory_bytes\": 1000, \"memory_bandwidth_gbps\": 10,"
    " \"intra_node\": {\"bus_bandwidth_gbps\": 5, \"latency_us\": 0},"
    " \"inter_node\": {\"bandwidth_gbps\": 1, \"latency_us\": 2}}";

/* good with the first occurrence of `from` replaced by `to` */
static int parse_edit(const char *from, const char *to, gv_cluster *c) {
  char buf[2048];
  const char *p = strstr(good, from);
  if (!p) { fprintf(stderr, "edit: '%s' not found\n", from); failures++; return 0; }
  snprintf(buf, sizeof buf, "%.*s%s%s", (int)(p - good), good, to, p + strlen(from));
  return gv_cluster_parse(buf, strlen(buf), "edit.json", c);
}

static void test_schema(void) {
  gv_cluster c;
  CHECK(gv_cluster_parse(good, strlen(good), "good.json", &c) == 0);
  CHECK(c.nodes == 2 && c.devices_per_node == 4 && gv_cluster_devices(&c) == 8 && c.memory_bytes == 1000);
  CHECK(c.compute_efficiency == 1 && c.memory_efficiency == 1 && c.intra_latency_us == 0);
  static const struct { const char *from, *to; } bad[] = {
      {"\"name\": \"t\"", "\"name\": 3"},
      {"\"name\": \"t\"", "\"name\": \"\""},
      {"\"nodes\": 2", "\"nodes\": 0"},
      {"\"nodes\": 2", "\"nodes\": 1.5"},
      {"\"nodes\": 2", "\"nodes\": \"2\""},
      {"\"nodes\": 2, ", ""},
      {"\"devices_per_node\": 4", "\"devices_per_node\": -4"},
      {"\"f32\": 1, ", ""},
      {"\"f16\": 2}", "\"f16\": 2, \"f8\": 4}"},
      {"\"bf16\": 2", "\"bf16\": 0"},
      {"\"memory_bytes\": 1000", "\"memory_bytes\": 1000.5"},
      {"\"memory_bytes\": 1000", "\"memory_bytes\": 1e30"},
      {"\"memory_bandwidth_gbps\": 10", "\"memory_bandwidth_gbps\": null"},
      {"\"latency_us\": 0", "\"latency_us\": -1"},
      {"\"bus_bandwidth_gbps\": 5", "\"bandwidth_gbps\": 5"},
      {"\"inter_node\": {", "\"inter_node\": [], \"x\": {"},
      {"\"name\"", "\"nmae\": 1, \"name\""},
      {"\"nodes\"", "\"compute_efficiency\": 1.5, \"nodes\""},
      {"\"nodes\"", "\"sources\": {\"nodes\": 3}, \"nodes\""},
      {"\"nodes\"", "\"sources\": {\"gpus\": \"x\"}, \"nodes\""},
      {"\"nodes\"", "\"sources\": [], \"nodes\""},
      {"\"nodes\": 2", "\"nodes\": 2000000"},
  };
  for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++)
    if (parse_edit(bad[i].from, bad[i].to, &c) != -1) {
      fprintf(stderr, "schema case %zu accepted: %s -> %s\n", i, bad[i].from, bad[i].to);
      failures++;
    }
  CHECK(gv_cluster_parse("[]", 2, "arr.json", &c) == -1);
  CHECK(gv_cluster_parse("{", 1, "trunc.json", &c) == -1);
  CHECK(parse_edit("\"nodes\"", "\"sources\": {\"nodes\": \"counted\"}, \"description\": \"d\", \"nodes\"", &c) == 0);
}

int main(void) {
  test_json_valid();
  test_json_malformed();
  test_presets();
  test_schema();
  if (failures) {
    fprintf(stderr, "test_cluster: %d failures\n", failures);
    return 1;
  }
  printf("test_cluster: ok\n");
  return 0;
}
