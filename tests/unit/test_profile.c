/* test_profile.c — the --profile readers (planner/profile.c): Galvatron's
 * profiled inputs (bench/galvatron/planner_inputs.json, the anchor's file)
 * and galvc's own format; their queries (Galvatron's fit a * b / tp + c,
 * the per-tp activation table, galvc's points interpolated in b); every
 * malformed form refused with one line naming the file and the field; the
 * model check; a path that is not a regular file. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "planner/profile.h"

static int failures;
#define CHECK(c)                                                                                   \
  do {                                                                                             \
    if (!(c)) {                                                                                    \
      fprintf(stderr, "%s:%d: check failed: %s\n", __FILE__, __LINE__, #c);                        \
      failures++;                                                                                  \
    }                                                                                              \
  } while (0)
#define NEAR(a, b) (fabs((double)(a) - (double)(b)) <= 1e-9 * (fabs((double)(b)) + 1))

/* stderr of fn into buf (the error line) */
static char errbuf[4096];
static int run_captured(int (*fn)(void *), void *arg) {
  fflush(stderr);
  FILE *t = tmpfile();
  int saved = dup(2);
  dup2(fileno(t), 2);
  int rc = fn(arg);
  fflush(stderr);
  dup2(saved, 2);
  close(saved);
  rewind(t);
  size_t n = fread(errbuf, 1, sizeof errbuf - 1, t);
  errbuf[n] = 0;
  fclose(t);
  return rc;
}

static gv_profile P;
static int parse_text(void *s) { return gv_profile_parse((const char *)s, strlen((const char *)s), "p.json", &P); }
static int load_path(void *s) { return gv_profile_load((const char *)s, &P); }
static int lines(const char *s) {
  int n = 0;
  for (; *s; s++) n += *s == '\n';
  return n;
}

static void test_galvatron(void) {
  const char *src = getenv("GALV_SOURCE_DIR");
  char path[4096];
  snprintf(path, sizeof path, "%s/bench/galvatron/planner_inputs.json", src ? src : ".");
  int rc = run_captured(load_path, path);
  CHECK(rc == 0);
  if (rc) {
    fprintf(stderr, "%s", errbuf);
    return;
  }
  CHECK(!strcmp(P.format, "galvatron"));
  CHECK(P.layers == 32 && P.hidden == 4096 && P.seq == 2048 && P.vocab == 32000);
  CHECK(P.layer.present && P.layer.fit && P.outer.present && P.outer.fit);
  double f, b, r, a;
  CHECK(gv_profile_time(&P.layer, 8, 1, &f, &b, &r) == 0);
  CHECK(NEAR(f, 3.85901689949117 * 8 + 0.8329851393754094) && NEAR(b, 2 * f) && NEAR(r, f));
  CHECK(gv_profile_time(&P.layer, 2, 4, &f, &b, &r) == 0 && NEAR(f, 3.85901689949117 * 0.5 + 0.8329851393754094));
  CHECK(gv_profile_time(&P.outer, 8, 1, &f, &b, &r) == 0 && NEAR(f, 2.6803283211563755 * 8 + 2.3548992612929927));
  CHECK(gv_profile_act(&P.layer, 8, 1, false, &a) == 0 && NEAR(a, 514.5634765625 * 1048576 * 8));
  CHECK(gv_profile_act(&P.layer, 2, 8, false, &a) == 0 && NEAR(a, 68.3204345703125 * 1048576 * 2));
  CHECK(gv_profile_act(&P.layer, 4, 1, true, &a) == 0 && NEAR(a, 32.0 * 1048576 * 4));
  CHECK(gv_profile_act(&P.layer, 1, 16, false, &a) == 1); /* no activation figure at tp 16 */
  CHECK(gv_profile_act(&P.outer, 1, 1, false, &a) == 1);  /* the outer part's memory stays analytic */
  bool mem;
  CHECK(gv_profile_has_tp(&P.layer, 16, &mem) && !mem);
  CHECK(gv_profile_has_tp(&P.layer, 4, &mem) && mem);
  /* the model check: each field named */
  CHECK(gv_profile_check(&P, 32, 4096, 2048, 32000) == 0);
  CHECK(gv_profile_check(&P, 0, 0, 0, 0) == 0); /* unknown: unchecked */
  static const struct { int64_t l, h, s, v; const char *field; } mm[] = {
      {2, 4096, 2048, 32000, "'model.num_layers': the profile was measured with layers 32, the model has 2"},
      {32, 64, 2048, 32000, "'model.hidden_size'"},
      {32, 4096, 128, 32000, "'model.seq_length'"},
      {32, 4096, 2048, 256, "'model.vocab_size'"}};
  for (size_t i = 0; i < sizeof mm / sizeof *mm; i++) {
    fflush(stderr);
    FILE *t = tmpfile();
    int saved = dup(2);
    dup2(fileno(t), 2);
    int q = gv_profile_check(&P, mm[i].l, mm[i].h, mm[i].s, mm[i].v);
    fflush(stderr);
    dup2(saved, 2);
    close(saved);
    rewind(t);
    size_t n = fread(errbuf, 1, sizeof errbuf - 1, t);
    errbuf[n] = 0;
    fclose(t);
    CHECK(q == -1 && strstr(errbuf, mm[i].field) && strstr(errbuf, "planner_inputs.json") && lines(errbuf) == 1);
  }
}

static const char *good_galvc =
    "{\"format\": \"galvc-profile\", \"version\": 1, \"source\": \"test\",\n"
    " \"model\": {\"layers\": 4, \"hidden\": 64, \"seq\": 32},\n"
    " \"layer\": {\"points\": [\n"
    "   {\"microbatch\": 4, \"tp\": 1, \"forward_ms\": 2.0, \"backward_ms\": 4.5, \"activation_bytes\": 4096},\n"
    "   {\"microbatch\": 2, \"tp\": 1, \"forward_ms\": 1.2, \"backward_ms\": 2.5, \"recompute_ms\": 1.0, \"activation_bytes\": 2048,\n"
    "    \"checkpoint_bytes\": 512},\n"
    "   {\"microbatch\": 4, \"tp\": 2, \"forward_ms\": 3.0, \"backward_ms\": 6.0}]},\n"
    " \"outer\": {\"points\": [{\"microbatch\": 8, \"tp\": 1, \"forward_ms\": 0.8, \"backward_ms\": 1.6}]}}\n";

static void test_galvc(void) {
  int rc = run_captured(parse_text, (void *)good_galvc);
  CHECK(rc == 0);
  if (rc) {
    fprintf(stderr, "%s", errbuf);
    return;
  }
  CHECK(!strcmp(P.format, "galvc") && P.layers == 4 && P.hidden == 64 && P.seq == 32 && P.vocab == 0);
  CHECK(P.layer.npts == 3 && P.outer.npts == 1 && !P.layer.fit);
  double f, b, r, a;
  CHECK(gv_profile_time(&P.layer, 2, 1, &f, &b, &r) == 0 && NEAR(f, 1.2) && NEAR(b, 2.5) && NEAR(r, 1.0));
  CHECK(gv_profile_time(&P.layer, 3, 1, &f, &b, &r) == 0 && NEAR(f, 1.6) && NEAR(b, 3.5) && NEAR(r, 1.0 * 3 / 2));
  CHECK(gv_profile_time(&P.layer, 8, 1, &f, &b, &r) == 0 && NEAR(f, 2.0 + 0.8 * 2)); /* extended by the last segment */
  CHECK(gv_profile_time(&P.layer, 2, 2, &f, &b, &r) == 0 && NEAR(f, 1.5) && NEAR(b, 3.0) && NEAR(r, 1.5)); /* one point: proportional; rec = fwd */
  CHECK(gv_profile_time(&P.layer, 2, 4, &f, &b, &r) == 1); /* no point at tp 4 */
  CHECK(gv_profile_time(&P.outer, 4, 1, &f, &b, &r) == 0 && NEAR(f, 0.4));
  CHECK(gv_profile_act(&P.layer, 3, 1, false, &a) == 0 && NEAR(a, 3072));
  CHECK(gv_profile_act(&P.layer, 4, 1, true, &a) == 0 && NEAR(a, 1024)); /* one checkpoint point: proportional */
  CHECK(gv_profile_act(&P.layer, 4, 2, false, &a) == 1);
  CHECK(gv_profile_check(&P, 4, 64, 32, 50000) == 0); /* vocab not given: unchecked */
  /* an inference program's profile: no backward (the planner keeps the cost model's), recompute = forward */
  static const char *fwd_only = "{\"format\": \"galvc-profile\", \"version\": 1, \"layer\": {\"points\": "
                                "[{\"microbatch\": 1, \"tp\": 1, \"forward_ms\": 0.5}]}}";
  CHECK(run_captured(parse_text, (void *)fwd_only) == 0 && !P.outer.present);
  CHECK(gv_profile_time(&P.layer, 2, 1, &f, &b, &r) == 0 && NEAR(f, 1.0) && b < 0 && NEAR(r, 1.0));
}

/* each malformed form: one error line naming the file and the field */
static void test_malformed(void) {
  static const struct { const char *from, *to, *msg; } bad[] = {
      {"\"version\": 1", "\"version\": 2", "field 'version': line 1: version 2 is not one this galvc reads"},
      {"\"version\": 1,", "", "field 'version': missing"},
      {"\"galvc-profile\"", "\"galvc\"", "field 'format': line 1: expected \"galvc-profile\""},
      {"\"source\": \"test\"", "\"source\": 3", "field 'source': line 1: expected a string, got a number"},
      {"\"seq\": 32", "\"sequence\": 32", "field 'model.sequence': line 2: unknown field"},
      {"\"hidden\": 64", "\"hidden\": 64.5", "field 'model.hidden': line 2: expected a positive integer"},
      {"\"forward_ms\": 2.0", "\"forward_ms\": -2.0", "field 'layer.points[0].forward_ms': line 4: -2 is out of range"},
      {"\"forward_ms\": 2.0, ", "", "field 'layer.points[0].forward_ms': missing"},
      {"\"backward_ms\": 4.5", "\"backward_ms\": \"4.5\"", "field 'layer.points[0].backward_ms': line 4: expected a number, got a string"},
      {"\"tp\": 2", "\"tp\": 0", "field 'layer.points[2].tp': line 7: 0 is out of range"},
      {"\"microbatch\": 2", "\"microbatch\": 4", "field 'layer.points[1]': line 5: a second point at microbatch 4, tp 1"},
      {"\"activation_bytes\": 4096}", "\"activation_bytes\": 4096, \"extra\": 1}",
       "field 'layer.points[0].extra': line 4: unknown field"},
      {"{\"points\": [{\"microbatch\": 8", "{\"points\": [], \"x\": [{\"microbatch\": 8", "field 'outer.x': line 8: unknown field"},
      {"\"outer\": {\"points\": [{\"microbatch\": 8, \"tp\": 1, \"forward_ms\": 0.8, \"backward_ms\": 1.6}]}",
       "\"outer\": {\"points\": []}", "field 'outer.points': line 8: expected 1 to 64 points, got 0"},
      {"\"layer\": {\"points\"", "\"layer\": {\"pts\"", "field 'layer.pts': line 3: unknown field"},
      {"\"model\"", "\"mode\"", "field 'mode': line 2: unknown field"},
      {"{\"format\"", "[{\"format\"", "not valid JSON"},
  };
  for (size_t i = 0; i < sizeof bad / sizeof *bad; i++) {
    const char *p = strstr(good_galvc, bad[i].from);
    if (!p) {
      fprintf(stderr, "case %zu: '%s' not in the good file\n", i, bad[i].from);
      failures++;
      continue;
    }
    char text[4096];
    snprintf(text, sizeof text, "%.*s%s%s", (int)(p - good_galvc), good_galvc, bad[i].to, p + strlen(bad[i].from));
    if (!strcmp(bad[i].msg, "not valid JSON")) strcat(text, "]"); /* still no object at the root: an array around it */
    int rc = run_captured(parse_text, text);
    bool ok = rc == -1 && strstr(errbuf, "p.json: ") && lines(errbuf) == 1;
    if (!strcmp(bad[i].msg, "not valid JSON")) ok = ok && strstr(errbuf, "p.json: field '(root)'");
    else ok = ok && strstr(errbuf, bad[i].msg);
    if (!ok) {
      fprintf(stderr, "malformed case %zu: rc %d, got '%s', want '%s'\n", i, rc, errbuf, bad[i].msg);
      failures++;
    }
  }
  static const struct { const char *text, *msg; } whole[] = {
      {"{\"a\": 1", "p.json: not valid JSON: line 1"},
      {"[]", "p.json: field '(root)': line 1: expected an object, got an array"},
      {"{}", "p.json: field 'format': missing: neither a galvc profile"},
      {"{\"format\": \"galvc-profile\", \"version\": 1}", "p.json: field 'layer': missing: a profile gives"},
      {"{\"compute_ms\": {}}", "p.json: field 'model': missing"},
      {"{\"model\": {\"num_layers\": 2, \"hidden_size\": 8, \"seq_length\": 4}, \"compute_ms\": {}}",
       "p.json: field 'compute_ms.per_layer_fwd_ms_fit': missing"},
      {"{\"model\": {\"num_layers\": 2, \"hidden_size\": 8, \"seq_length\": 4}, \"compute_ms\": {\"per_layer_fwd_ms_fit\": "
       "{\"a_ms_per_sample\": 1, \"b_ms_const\": 0}, \"bwd_over_fwd\": 2}}",
       "p.json: field 'compute_ms.recompute_extra_fwd': missing"},
      {"{\"model\": {\"num_layers\": 2, \"hidden_size\": 8, \"seq_length\": 4}, \"compute_ms\": {\"per_layer_fwd_ms_fit\": "
       "{\"a_ms_per_sample\": 0, \"b_ms_const\": 0}, \"bwd_over_fwd\": 2, \"recompute_extra_fwd\": 1}}",
       "p.json: field 'compute_ms.per_layer_fwd_ms_fit.a_ms_per_sample': line 1: 0 is out of range"},
      {"{\"model\": {\"num_layers\": 2, \"hidden_size\": 8, \"seq_length\": 4}, \"compute_ms\": {\"per_layer_fwd_ms_fit\": "
       "{\"a_ms_per_sample\": 1, \"b_ms_const\": 0}, \"bwd_over_fwd\": 2, \"recompute_extra_fwd\": 1},\n"
       " \"memory_MB\": {\"per_layer_activation_MB_per_sample_by_tp_sp\": {\"two\": 5}}}",
       "p.json: field 'memory_MB.per_layer_activation_MB_per_sample_by_tp_sp.two': line 2: expected a tensor-parallel degree"},
      {"{\"model\": {\"num_layers\": 2.5, \"hidden_size\": 8, \"seq_length\": 4}, \"compute_ms\": {}}",
       "p.json: field 'model.num_layers': line 1: expected a positive integer"},
  };
  for (size_t i = 0; i < sizeof whole / sizeof *whole; i++) {
    int rc = run_captured(parse_text, (void *)whole[i].text);
    if (rc != -1 || !strstr(errbuf, whole[i].msg) || lines(errbuf) != 1) {
      fprintf(stderr, "whole case %zu: rc %d, got '%s', want '%s'\n", i, rc, errbuf, whole[i].msg);
      failures++;
    }
  }
  /* every prefix of a good file: an error line or a profile, never a crash */
  size_t n = strlen(good_galvc) - 1; /* the prefixes cut before its closing brace */
  for (size_t k = 0; k < n; k++) {
    char *t = malloc(k + 1);
    memcpy(t, good_galvc, k);
    t[k] = 0;
    int rc = run_captured(parse_text, t);
    CHECK(rc == -1 && lines(errbuf) == 1);
    free(t);
  }
  /* not a regular file; missing */
  CHECK(run_captured(load_path, (void *)"/") == -1 && strstr(errbuf, "/: cannot read profile") && lines(errbuf) == 1);
  CHECK(run_captured(load_path, (void *)"/nonexistent/p.json") == -1 && strstr(errbuf, "cannot read profile") && lines(errbuf) == 1);
}

int main(void) {
  test_galvatron();
  test_galvc();
  test_malformed();
  if (failures) {
    fprintf(stderr, "test_profile: %d failures\n", failures);
    return 1;
  }
  printf("test_profile: ok\n");
  return 0;
}
