#!/usr/bin/env python3
"""comm_counted.py LOG RUNS [KIND] -- the bytes rank 0 of a program handed to
MPI per collective kind, read from its --comm-stats line in LOG, checked equal
to the planner's prediction from the global program x RUNS (the program's own
check; a prediction that fell back to the partitioned collectives' sum, or a
count that differs, exits 1 with one line). Prints KIND's bytes, or with no
KIND (or "all") every kind's: "all_reduce A, all_gather G, reduce_scatter R,
all_to_all T". Shared by tests/train_accum.sh, train_sp.sh and
train_zero_stages.sh."""
import re
import sys

KINDS = ["all_reduce", "all_gather", "reduce_scatter", "all_to_all"]
log, n = sys.argv[1], int(sys.argv[2])
kind = sys.argv[3] if len(sys.argv) > 3 else "all"
m = re.search(rf"in {n} runs?: all_reduce (\d+), all_gather (\d+), reduce_scatter (\d+), all_to_all (\d+), send \d+ "
              r"\(predicted per run: (-?\d+), (-?\d+), (-?\d+), (-?\d+)\) from the global program", open(log).read())
if not m:
    sys.exit("no counters checked against the global program's prediction")
got, pred = [int(x) for x in m.groups()[:4]], [int(x) for x in m.groups()[4:]]
if got != [n * p for p in pred]:
    sys.exit(f"counted {got} != predicted x {n} {[n * p for p in pred]}")
print(got[KINDS.index(kind)] if kind in KINDS else ", ".join(f"{k} {g}" for k, g in zip(KINDS, got)))
