#!/bin/sh
# sass_check.sh NVCC SRC [CUOBJDUMP]: the CUDA kernels, built for sm_90 by
# this toolkit's nvcc and ptxas, read back as SASS: 16-byte vector stores
# (STG.E.128), bulk copies from shared to global memory (UBLKCP.G.S), the
# system-scope fences (MEMBAR.SC.SYS) and the replay's flags and barriers.
# Skips (77) without a cuobjdump that reads the cubin: CUDA 13 ships none
# here; scripts/fetch-cuobjdump.sh fetches Debian 13's, which does.
set -eu
nvcc=$1 src=$2 cuobjdump=${3:-${CUOBJDUMP:-}}
if [ -z "$cuobjdump" ] || [ ! -x "$cuobjdump" ]; then
  cuobjdump=$(command -v cuobjdump || true)
fi
[ -n "$cuobjdump" ] || { echo "skip: no cuobjdump (scripts/fetch-cuobjdump.sh fetches one)"; exit 77; }
dir=$(mktemp -d)
trap 'rm -rf "$dir"' EXIT
"$nvcc" -cubin -arch=sm_90 -O3 -I"$src/src/measure" -I"$src/include" \
  "$src/src/measure/cuda.cu" -o "$dir/k.cubin"
"$cuobjdump" -sass "$dir/k.cubin" > "$dir/k.sass" 2> "$dir/err" ||
  { echo "skip: $cuobjdump cannot read this cubin: $(head -1 "$dir/err")"; exit 77; }
grep -q "Function" "$dir/k.sass" || { echo "skip: $cuobjdump printed no functions"; exit 77; }
# the SASS of one kernel
kernel() { awk -v f="$1" '/Function :/ { p = index($0, f) > 0 } p' "$dir/k.sass"; }
pass=0 failed=0
has() { # has KERNEL PATTERN WHAT
  if kernel "$1" | grep -q -- "$2"; then pass=$((pass + 1))
  else echo "FAIL: $1: no $2 ($3)"; failed=$((failed + 1)); fi
}
has host_store_kernel "STG.E.128" "16-byte vector stores"
has host_store_kernel "MEMBAR.SC.SYS" "system-scope fence before the done flag"
has tma_store_kernel "UBLKCP.G.S" "bulk copy, shared to global"
has tma_store_kernel "FENCE.VIEW.ASYNC.S" "shared writes made visible to the async proxy"
has tma_store_kernel "DEPBAR.LE SB0" "wait on the bulk group"
has replay_kernel "STG.E.128" "16-byte vector stores of a send's part"
has replay_kernel "MEMBAR.SC.SYS" "the tracker's system-scope fence"
has replay_kernel "ATOMS" "issuer warps' add to the tracker's counter"
has replay_kernel "STG.E.STRONG.SYS" "host flag, released at system scope"
has replay_kernel "LDG.E.STRONG.GPU" "acquire of device flags in waits"
has replay_kernel "BAR.SYNC.DEFER_BLOCKING 0x1" "the issuers' named barrier"
# bulk ops are not in program order, and timer reads float around them
# (docs/cuda.md, "Pitfalls"): in the TMA kernel the issue stamp must come
# after the copies' commit (UTMACMDFLUSH) and before the first wait (DEPBAR)
order=$(kernel tma_store_kernel | awk '
  /UBLKCP/ { c = NR } /UTMACMDFLUSH/ && c && !f { f = NR }
  /DEPBAR/ && f && !d { d = NR } /SR_GLOBALTIMER/ && f && !d { t = NR }
  END { print (c && f && t && d && c < f) ? "ok" : "bad" }')
if [ "$order" = ok ]; then pass=$((pass + 1))
else echo "FAIL: tma_store_kernel: no timer read between the commit and the first wait"; failed=$((failed + 1)); fi
echo "$pass passed, $failed failed"
[ "$failed" = 0 ]
