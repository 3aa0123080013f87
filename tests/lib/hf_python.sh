# Sourced by tests that build transformers model classes. Sets HF_PY to the
# python of the venv scripts/setup.sh makes (Debian's torch + pinned
# transformers), or skips the test (exit 77; a failure under GALV_REQUIRE_ALL).
# shellcheck shell=bash
HF_VENV=${GALV_HF_VENV:-$HOME/.cache/galvc/hf-venv}
HF_PY="$HF_VENV/bin/python"
if ! "$HF_PY" -c 'import transformers, torch' 2>/dev/null; then
  . "$(dirname "${BASH_SOURCE[0]}")/require.sh"
  galv_skip "transformers venv missing ($HF_VENV): run scripts/setup.sh"
fi
