#!/usr/bin/env bash
# torchvision (resnet18, resnet50, mobilenet_v2, efficientnet_b0,
# convnext_tiny, vgg11_bn), a UNet, a temporal conv net, LSTM and GRU models
# exported by Debian's torch with random weights (cached), each imported,
# folded, run on the CPU = torch, on 2 ranks (tp, dp) = torch, and trained 2
# SGD steps (momentum 0.9) = torch training the same graph (tests/vision_models.py; the
# table in docs/vision-models.md). GALV_VISION_FULL=1: opsets 14 and 17 for
# every model.
set -euo pipefail
BUILD=$(cd "$1" && pwd)
SRC=${GALV_SOURCE_DIR:-$(cd "$(dirname "$0")/.." && pwd)}
. "$SRC/tests/lib/require.sh"
require_torch /usr/bin/python3
require_cmd "Debian libopenmpi-dev, openmpi-bin" mpicc mpirun
/usr/bin/python3 -c "import torchvision" 2>/dev/null || galv_skip "Debian's python3-torchvision is not installed"
full=()
[ "${GALV_VISION_FULL:-0}" = 1 ] && full=(--full)
exec python3 "$SRC/tests/vision_models.py" "$BUILD" -j 2 "${full[@]}"
