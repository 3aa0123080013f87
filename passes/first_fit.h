/* first_fit.h — lowest-offset placement of blocks that live over intervals
 * of program points (memory-plan's placement; tests/unit/test_first_fit.c
 * checks it against a brute force). */
#ifndef GALV_FIRST_FIT_H
#define GALV_FIRST_FIT_H

#include <stdint.h>

typedef struct {
  int start, end; /* live over the points [start, end], 0 <= start <= end < npoints */
  int64_t size;   /* bytes (the caller aligns them); 0: placed at 0, occupies nothing */
  int64_t off;    /* out: the offset chosen */
} gv_ff_block;

/* Places blocks order[0..n) in that order, each at the lowest offset x >= 0
 * where [x, x + size) overlaps no earlier block whose live interval
 * intersects its own. Returns the arena size (the largest x + size), or -1
 * when out of memory. The result depends only on the order, not on how the
 * search runs. */
int64_t gv_first_fit(gv_ff_block *b, const int *order, int n, int npoints);

/* The same placement, abandoned as soon as the arena passes cap: then it
 * returns a size > cap and the offsets of the blocks after the one that
 * passed it are not set (a caller that keeps the smaller of two placements
 * needs no more of one that is larger). */
int64_t gv_first_fit_below(gv_ff_block *b, const int *order, int n, int npoints, int64_t cap);

#endif
