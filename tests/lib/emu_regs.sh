# Sourced (after require.sh) by the tests that run programs under the CUDA
# execution layer (make emu, runtime/cuda/emu/). The layer checks each
# launch's registers per thread against the register file only with
# ptxas's counts, which make emu links (emu_regs.cc) when nvcc is on PATH.
# Without nvcc that check is a named skipped part of the test (require.sh:
# exit 77 at the end; under GALV_REQUIRE_ALL=1 a failure), never a silent
# pass.
#
#   emu_regs_on           0 when nvcc is on PATH; else says which check
#                         does not run and records the skipped part
#   emu_regs_all NAME LOG with nvcc: every process's line "emulation:
#                         registers checked for N of M launches" in LOG (a
#                         run with GALV_EMU_REGS=1; one per rank) has N = M
#                         > 0 and names no kernel without a count: ok / bad
emu_regs_on() {
  have_cmd nvcc && return 0
  echo "     (registers per thread are not checked: make emu links ptxas's counts only with nvcc)"
  return 1
}

emu_regs_all() { # NAME LOG
  local name=$1 log=$2 lines l n=0
  command -v nvcc >/dev/null || return 0 # emu_regs_on recorded the skip
  lines=$(grep -h '^emulation: registers checked' "$log")
  if [ -z "$lines" ]; then bad "$name: no register report (GALV_EMU_REGS=1) in $log"; return; fi
  while IFS= read -r l; do
    if [[ $l =~ checked\ for\ ([0-9]+)\ of\ ([0-9]+)\ launches ]] && [ "${BASH_REMATCH[1]}" = "${BASH_REMATCH[2]}" ] &&
       [ "${BASH_REMATCH[1]}" -gt 0 ] && [[ $l != *"not found"* ]]; then n=$((n + 1))
    else bad "$name: not every launch's registers checked: ${l#emulation: }"; return; fi
  done <<<"$lines"
  ok "$name: $(head -n 1 <<<"$lines" | sed 's/^emulation: //')$([ "$n" -gt 1 ] && echo " (and $((n - 1)) more process(es), each all)")"
}
