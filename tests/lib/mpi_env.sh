# Sourced by the MPI pipeline test scripts (tests/pipeline_*.sh): skips the
# script without mpicc/mpirun (tests/lib/require.sh: exit 77, a failure under
# GALV_REQUIRE_ALL=1), runs every rank with synchronous sends under a
# timeout (GALV_COMM_SYNC=1: an ordering that could deadlock fails instead of
# passing by buffering), one BLAS thread per rank, oversubscribed, as root if
# need be; ok/bad count the checks into $pass / $fail.
. "$(dirname "${BASH_SOURCE[0]}")/require.sh"
require_cmd "Debian libopenmpi-dev, openmpi-bin" mpicc mpirun
export GALV_COMM_SYNC=1 GALV_COMM_TIMEOUT=${GALV_COMM_TIMEOUT:-30} OMPI_MCA_btl_vader_single_copy_mechanism=none OPENBLAS_NUM_THREADS=1
RUNAS=()
[ "$(id -u)" = 0 ] && RUNAS=(--allow-run-as-root)
export MPIRUN="mpirun ${RUNAS[*]} --oversubscribe -x GALV_COMM_SYNC -x GALV_COMM_TIMEOUT -x OPENBLAS_NUM_THREADS"
# (a script that counted checks before sourcing this keeps its counts: a failure before it must still fail the script)
pass=${pass:-0} fail=${fail:-0}
ok() { echo "ok   $*"; pass=$((pass + 1)); }
bad() { echo "FAIL $*"; fail=$((fail + 1)); }
