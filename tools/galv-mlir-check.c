/* galv-mlir-check — parses galvc IR dumps with MLIR 19's own parser (C API),
 * so the text form stays real MLIR generic syntax. Unregistered dialects
 * (galv.*) are allowed; everything else must parse and verify as MLIR.
 *
 *   galv-mlir-check FILE.mlir...     exit 0 when every file parses
 */
#include <mlir-c/BuiltinAttributes.h>
#include <mlir-c/Diagnostics.h>
#include <mlir-c/IR.h>
#include <mlir-c/Support.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static void print_cb(MlirStringRef s, void *user) { fwrite(s.data, 1, s.length, (FILE *)user); }

static MlirLogicalResult diag_handler(MlirDiagnostic d, void *user) {
  const char *file = user;
  fprintf(stderr, "galv-mlir-check: error: %s: ", file);
  mlirLocationPrint(mlirDiagnosticGetLocation(d), print_cb, stderr);
  fputs(": ", stderr);
  mlirDiagnosticPrint(d, print_cb, stderr);
  fputc('\n', stderr);
  return mlirLogicalResultSuccess();
}

static char *slurp(const char *path, size_t *len) {
  FILE *f = fopen(path, "rb");
  if (!f) return NULL;
  size_t cap = 1 << 16, n = 0;
  /* One spare byte: MLIR's lexer expects a NUL after the text. */
  char *buf = malloc(cap + 1);
  size_t k;
  while (buf && (k = fread(buf + n, 1, cap - n, f)) > 0) {
    n += k;
    if (n == cap) {
      char *nb = realloc(buf, (cap *= 2) + 1);
      if (!nb) { free(buf); buf = NULL; }
      else buf = nb;
    }
  }
  fclose(f);
  if (buf) {
    buf[n] = 0;
    *len = n;
  }
  return buf;
}

int main(int argc, char **argv) {
  if (argc < 2 || strcmp(argv[1], "--help") == 0 || strcmp(argv[1], "-h") == 0) {
    fprintf(argc < 2 ? stderr : stdout, "usage: galv-mlir-check FILE.mlir...\n"
            "Parses and verifies each file with MLIR 19 (unregistered dialects allowed): silent when all\n"
            "pass; otherwise MLIR's diagnostics and an error line per failing file, exit 1.\n");
    return argc < 2 ? 2 : 0;
  }
  for (int i = 1; i < argc; i++)
    if (argv[i][0] == '-' && argv[i][1]) {
      fprintf(stderr, "galv-mlir-check: error: unknown option '%s' (see --help)\n", argv[i]);
      return 2;
    }
  int rc = 0;
  for (int i = 1; i < argc; i++) {
    size_t len = 0;
    char *text = slurp(argv[i], &len);
    if (!text) {
      fprintf(stderr, "galv-mlir-check: error: %s: cannot read file\n", argv[i]);
      rc = 1;
      continue;
    }
    MlirContext ctx = mlirContextCreate();
    mlirContextSetAllowUnregisteredDialects(ctx, true);
    MlirDiagnosticHandlerID h = mlirContextAttachDiagnosticHandler(ctx, diag_handler, argv[i], NULL);
    MlirModule mod = mlirModuleCreateParse(ctx, mlirStringRefCreate(text, len));
    if (mlirModuleIsNull(mod)) {
      fprintf(stderr, "galv-mlir-check: error: %s: MLIR could not parse the file\n", argv[i]);
      rc = 1;
    } else {
      MlirOperation op = mlirModuleGetOperation(mod);
      if (!mlirOperationVerify(op)) {
        fprintf(stderr, "galv-mlir-check: error: %s: MLIR verification failed\n", argv[i]);
        rc = 1;
      }
      mlirModuleDestroy(mod);
    }
    mlirContextDetachDiagnosticHandler(ctx, h);
    mlirContextDestroy(ctx);
    free(text);
  }
  return rc;
}
