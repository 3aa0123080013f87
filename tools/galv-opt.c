/* galv-opt — runs galvc passes on IR text, like mlir-opt. Pass tests are
 * written with it: IR in, passes named on the command line, IR out. */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "../ir/ir.h"
#include "../passes/passes.h"
#include "../runtime/galv_file.h"

static void usage(FILE *f) {
  fprintf(f,
          "usage: galv-opt [options] IN.mlir|-\n"
          "Parses galvc IR text, runs the named passes in order and prints the result.\n\n"
          "options (--opt=VALUE or --opt VALUE):\n"
          "  --passes=a,b,c   passes to run, in order (default: none; the input is re-printed)\n"
          "  -o FILE          write the result to FILE (default: stdout)\n"
          "  --verify-each    run the verifier after every pass (always after parsing)\n"
          "  --layers=K       cluster-layers: K layer groups; --pipe-stats prints its summary (docs/pipeline.md)\n"
          "  --fused-attention=on|off  fuse-attention: off leaves every chain (docs/fused-attention.md)\n"
          "  --recompute=SPEC recompute: none, all, L,.., selective or selective:L,.. (docs/autodiff.md)\n"
          "  --stash=PART     stage-stash: the entry the module becomes, forward or backward (docs/pipeline.md)\n"
          "  --strategy=S     propagate-sharding presets: dp, tp, zero1, zero2, zero3 (= zero), dp,tp, zero2,tp, tp,sp, dp,tp,sp\n"
          "                   (docs/sharding.md)\n"
          "  --sharding=FILE  propagate-sharding: pinned values, NAME [{\"dp\"}, {}] per line; @sequence_parallel AXIS\n"
          "  --collectives    spmd-partition: print the collective table (stderr)\n"
          "  --microbatches=B accumulate: B microbatches of the function's batch (the input is one microbatch)\n"
          "  --zero-reduce=F  propagate-sharding: accumulated ZeRO gradients reduced once (default) or per-microbatch\n"
          "  --bucket-mb=X    bucket: gradient reductions coalesced into buckets of at most X MiB (default 0: none)\n"
          "  --precision=P    storage: fp32 (default), bf16 or fp16 storage of f32 values (docs/cuda-target.md)\n"
          "  --grad-dtype=D   storage, training: parameter gradients fp32 (default) or bf16 / fp16 as --precision\n"
          "  --help           this text\n\npasses:\n");
  for (int i = 0; i < gv_pass_count; i++)
    fprintf(f, "  %-16s %s\n", gv_pass_table[i].name, gv_pass_table[i].help);
}

/* The IR text: a regular file of at most GV_IR_FILE_MAX bytes (galv_read_whole:
 * a directory, FIFO or device is refused, never an endless read), or "-",
 * standard input, read up to the same cap. NULL with err filled otherwise. */
#define GV_IR_FILE_MAX ((size_t)1 << 30)
static char *read_all(const char *path, size_t *len, char *err, size_t errlen) {
  char *buf = NULL;
  if (strcmp(path, "-") != 0) return galv_read_whole(path, GV_IR_FILE_MAX, &buf, len, err, errlen) ? NULL : buf;
  size_t cap = 1 << 16, n = 0, k;
  buf = malloc(cap + 1);
  while (buf && (k = fread(buf + n, 1, cap - n, stdin)) > 0) {
    n += k;
    if (n > GV_IR_FILE_MAX) {
      free(buf);
      snprintf(err, errlen, "more than the %zu bytes this reader accepts", GV_IR_FILE_MAX);
      return NULL;
    }
    if (n == cap) {
      char *nb = realloc(buf, (cap *= 2) + 1);
      if (!nb) free(buf);
      buf = nb;
    }
  }
  if (!buf) return snprintf(err, errlen, "out of memory"), NULL;
  if (ferror(stdin)) {
    free(buf);
    return snprintf(err, errlen, "read error: %s", strerror(errno)), NULL;
  }
  buf[n] = 0;
  *len = n;
  return buf;
}

int main(int argc, char **argv) {
  gv_progname = "galv-opt";
  const char *in = NULL, *out = NULL, *passes = NULL;
  int verify_each = 0;
  for (int i = 1; i < argc; i++) {
    const char *a = argv[i], *val = NULL;
/* --opt VALUE or --opt=VALUE; the option given last without its value: one error line */
#define TAKES(flag)                                                                                           \
  ((strcmp(a, flag) == 0 && (i + 1 < argc ? (val = argv[++i]) != NULL                                         \
                                          : (gv_error_plain("%s needs a value (see --help)", flag), exit(2), 0))) || \
   (strncmp(a, flag "=", sizeof(flag)) == 0 && (val = a + sizeof(flag))))
    if (strcmp(a, "--help") == 0 || strcmp(a, "-h") == 0) {
      usage(stdout);
      return 0;
    } else if (TAKES("--passes")) {
      passes = val;
    } else if (TAKES("-o")) {
      out = val;
    } else if (TAKES("--layers")) {
      char *end;
      long k = strtol(val, &end, 10);
      if (!strcmp(val, "blocks")) {
        gv_pipe_opts.blocks = true;
      } else if (*end || k < 1 || k > 1000000) {
        gv_error_plain("--layers=%s: expected a positive integer or blocks", val);
        return 2;
      } else gv_pipe_opts.layers = (int)k;
    } else if (TAKES("--recompute")) {
      gv_train_opts.recompute = val;
    } else if (TAKES("--fused-attention")) {
      if (strcmp(val, "on") && strcmp(val, "off")) {
        gv_error_plain("--fused-attention=%s: expected on or off", val);
        return 2;
      }
      gv_train_opts.unfused_attention = !strcmp(val, "off");
    } else if (TAKES("--stash")) {
      gv_pipe_opts.stash = val;
    } else if (strcmp(a, "--pipe-stats") == 0) {
      gv_pipe_opts.quiet = false;
    } else if (TAKES("--precision") || TAKES("--grad-dtype")) {
      bool grad = a[2] == 'g';
      gv_dtype t = strcmp(val, "fp32") == 0 ? GV_DT_F32 : strcmp(val, "bf16") == 0 ? GV_DT_BF16
                   : strcmp(val, "fp16") == 0 ? GV_DT_F16 : GV_DT_COUNT;
      if (t == GV_DT_COUNT) {
        gv_error_plain("%s=%s: expected fp32, bf16 or fp16", grad ? "--grad-dtype" : "--precision", val);
        return 2;
      }
      *(grad ? &gv_precision_opts.grad : &gv_precision_opts.storage) = t;
    } else if (TAKES("--strategy")) {
      gv_shard_opts.strategy = val;
    } else if (TAKES("--sharding")) {
      gv_shard_opts.file = val;
    } else if (TAKES("--microbatches")) {
      char *end;
      long k = strtol(val, &end, 10);
      if (*end || k < 1 || k > 1000000) {
        gv_error_plain("--microbatches=%s: expected a positive integer", val);
        return 2;
      }
      gv_train_opts.microbatches = k;
    } else if (TAKES("--bucket-mb")) {
      char *end;
      double v = strtod(val, &end);
      if (*end || !(v >= 0) || v > 1e6) {
        gv_error_plain("--bucket-mb=%s: expected a non-negative number of MiB", val);
        return 2;
      }
      gv_shard_opts.bucket_bytes = (int64_t)(v * 1048576.0 + 0.5);
    } else if (TAKES("--zero-reduce")) {
      if (strcmp(val, "once") && strcmp(val, "per-microbatch")) {
        gv_error_plain("--zero-reduce=%s: expected once or per-microbatch", val);
        return 2;
      }
      gv_train_opts.zero_reduce_each = strcmp(val, "per-microbatch") == 0;
    } else if (strcmp(a, "--collectives") == 0) {
      gv_shard_opts.quiet = false;
    } else if (strcmp(a, "--verify-each") == 0) {
      verify_each = 1;
    } else if (a[0] == '-' && a[1]) {
      gv_error_plain("unknown option '%s' (see --help)", a);
      return 2;
    } else if (!in) {
      in = a;
    } else {
      gv_error_plain("more than one input file ('%s' and '%s')", in, a);
      return 2;
    }
#undef TAKES
  }
  if (!in) {
    usage(stderr);
    return 2;
  }
  /* Check the pass names before doing any work. */
  char *list = strdup(passes ? passes : "");
  const gv_pass *todo[64];
  int ntodo = 0;
  for (char *tok = strtok(list, ","); tok; tok = strtok(NULL, ",")) {
    const gv_pass *p = gv_pass_lookup(tok);
    if (!p) {
      gv_error_plain("unknown pass '%s' (see --help)", tok);
      free(list);
      return 2;
    }
    if (ntodo == 64) {
      gv_error_plain("too many passes");
      free(list);
      return 2;
    }
    todo[ntodo++] = p;
  }
  free(list);

  size_t len;
  char rerr[256];
  char *text = read_all(in, &len, rerr, sizeof rerr);
  if (!text) {
    gv_error_plain("%s: %s", in, rerr);
    return 1;
  }
  gv_module *m = gv_parse_module(text, len, in);
  free(text);
  if (!m) return 1;
  int rc = gv_verify(m) ? 1 : 0;
  for (int i = 0; !rc && i < ntodo; i++) {
    if (todo[i]->run(m)) rc = 1;
    else if (verify_each && gv_verify(m)) rc = 1;
  }
  if (!rc) {
    FILE *f = out ? fopen(out, "w") : stdout;
    if (!f) {
      gv_error_plain("%s: cannot write file: %s", out, strerror(errno));
      rc = 1;
    } else {
      gv_print_module(m, f);
      if (f != stdout) fclose(f);
    }
  }
  gv_module_free(m);
  return rc;
}
