#!/usr/bin/env bash
# Installs everything galvc needs on a fresh Debian machine: the Debian
# packages (apt-get) and the pinned Python packages for the python3 on PATH.
# ccache caches the test suite's builds of the programs galvc emits
# (tests/CMakeLists.txt).
# Fails loudly, naming the package, when something cannot be installed.
set -euo pipefail

DEB_PACKAGES=(
  build-essential cmake pkg-config
  protobuf-c-compiler libprotobuf-c-dev
  libmetis-dev
  libmlir-19-dev mlir-19-tools llvm-19-tools llvm-19-dev
  libopenmpi-dev openmpi-bin
  libopenblas-dev
  python3-torch python3-torchvision python3-venv
  clang libclang-rt-14-dev
  time bc
  ccache
)
# Pinned for the python3 on PATH (pyenv). onnx 1.22 still ships the backend
# node test data.
PY_PACKAGES=(onnx==1.22.0 onnxruntime==1.22.1 numpy==2.2.6)

SUDO=""
[ "$(id -u)" -eq 0 ] || SUDO="sudo"

need_deb=()
for p in "${DEB_PACKAGES[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "ok installed" || need_deb+=("$p")
done
if [ "${#need_deb[@]}" -gt 0 ]; then
  echo "setup: installing Debian packages: ${need_deb[*]}"
  $SUDO apt-get update -qq || { echo "setup: error: apt-get update failed" >&2; exit 1; }
  if ! DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -qq --no-install-recommends "${need_deb[@]}" >/tmp/galvc-apt.log 2>&1; then
    for p in "${need_deb[@]}"; do
      dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "ok installed" ||
        echo "setup: error: Debian package '$p' could not be installed (see /tmp/galvc-apt.log)" >&2
    done
    exit 1
  fi
fi
for p in "${DEB_PACKAGES[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "ok installed" ||
    { echo "setup: error: Debian package '$p' is not installed" >&2; exit 1; }
done

PY=${PYTHON:-python3}
if ! "$PY" -c 'import onnx, onnxruntime, numpy, sys
want = {"onnx": "1.22.0", "onnxruntime": "1.22.1", "numpy": "2.2.6"}
got = {"onnx": onnx.__version__, "onnxruntime": onnxruntime.__version__, "numpy": numpy.__version__}
sys.exit(0 if got == want else 1)' 2>/dev/null; then
  echo "setup: installing Python packages: ${PY_PACKAGES[*]}"
  for p in "${PY_PACKAGES[@]}"; do
    "$PY" -m pip install -q "$p" || { echo "setup: error: Python package '$p' could not be installed for $PY" >&2; exit 1; }
  done
fi
/usr/bin/python3 -c 'import torch' 2>/dev/null ||
  { echo "setup: error: torch is not importable by /usr/bin/python3 (Debian python3-torch)" >&2; exit 1; }
# transformers builds real model classes from configs (random weights, never
# downloaded) for the frontend tests. It must work with Debian's torch 1.13,
# so it lives in a venv over the system python3 (--system-site-packages keeps
# torch and torchvision visible). tests/lib/hf_python.sh finds it.
HF_VENV=${GALV_HF_VENV:-$HOME/.cache/galvc/hf-venv}
HF_PIN="transformers==4.40.2"
if ! "$HF_VENV/bin/python" -c 'import transformers, torch, sys
sys.exit(0 if transformers.__version__ == "4.40.2" else 1)' 2>/dev/null; then
  echo "setup: installing $HF_PIN into $HF_VENV"
  mkdir -p "$(dirname "$HF_VENV")"
  /usr/bin/python3 -m venv --system-site-packages "$HF_VENV" ||
    { echo "setup: error: cannot create the venv $HF_VENV from /usr/bin/python3" >&2; exit 1; }
  "$HF_VENV/bin/python" -m pip install -q "$HF_PIN" ||
    { echo "setup: error: Python package '$HF_PIN' could not be installed into $HF_VENV" >&2; exit 1; }
fi
/usr/bin/python3 -c 'import torchvision' 2>/dev/null ||
  { echo "setup: error: torchvision is not importable by /usr/bin/python3 (Debian python3-torchvision)" >&2; exit 1; }
echo "setup: all dependencies present"
