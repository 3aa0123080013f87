/* npy_compare.c — compares two float32 .npy files (got, want) without
 * Python: prints the max abs error, the max |want| and the worst
 * |got - want| / (atol + rtol |want|); exit 1 when that exceeds 1 or the
 * shapes differ. Used by bench/gpu_check.sh on a machine with no packages.
 * usage: npy_compare GOT.npy WANT.npy ATOL RTOL */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>

#include "../../runtime/npy.h"

int main(int argc, char **argv) {
  if (argc != 5) return fprintf(stderr, "usage: npy_compare GOT.npy WANT.npy ATOL RTOL\n"), 2;
  npy_array a, b;
  char err[512];
  if (npy_read(argv[1], &a, err, sizeof err) || npy_read(argv[2], &b, err, sizeof err))
    return fprintf(stderr, "npy_compare: %s\n", err), 2;
  if (a.dtype != NPY_F32 || b.dtype != NPY_F32 || a.nbytes != b.nbytes)
    return fprintf(stderr, "npy_compare: need two float32 arrays of one shape\n"), 1;
  double atol = atof(argv[3]), rtol = atof(argv[4]), maxabs = 0, maxref = 0, worst = 0;
  const float *x = a.data, *y = b.data;
  size_t n = a.nbytes / 4;
  for (size_t i = 0; i < n; i++) {
    double d = fabs((double)x[i] - y[i]), r = d / (atol + rtol * fabs((double)y[i]));
    if (!(d <= maxabs)) maxabs = d;
    if (fabs(y[i]) > maxref) maxref = fabs(y[i]);
    if (!(r <= worst)) worst = r;
  }
  printf("max abs err %.3g (max |ref| %.3g), worst err/(atol %g + rtol %g |ref|) = %.3f: %s\n", maxabs, maxref, atol,
         rtol, worst, worst <= 1 ? "ok" : "MISMATCH");
  npy_free(&a);
  npy_free(&b);
  return worst <= 1 ? 0 : 1;
}
