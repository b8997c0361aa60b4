#!/bin/sh
# ptx_check.sh NVCC SRC: the CUDA probes compile for sm_90 to 16-byte
# vector stores (st.global.v4) and bulk async copies (cp.async.bulk), read
# from the PTX (this machine has no cuobjdump to read the SASS).
set -eu
nvcc=$1 src=$2
out=$(mktemp)
trap 'rm -f "$out"' EXIT
"$nvcc" -ptx -arch=sm_90 -I"$src/src/backend" "$src/src/backend/cuda.cu" -o "$out"
grep -q "st.global.v4" "$out" || { echo "no st.global.v4 in the PTX"; exit 1; }
grep -q "cp.async.bulk.global.shared::cta.bulk_group" "$out" || { echo "no cp.async.bulk"; exit 1; }
grep -q "cp.async.bulk.wait_group.read 0" "$out" || { echo "no wait_group.read"; exit 1; }
grep -q "%globaltimer" "$out" || { echo "no %globaltimer"; exit 1; }
grep -q "membar.sys" "$out" || { echo "no system-scope fence"; exit 1; }
echo "5 passed, 0 failed"
