#!/bin/sh
# ptx_check.sh NVCC SRC: the CUDA probes compile for sm_90 to 16-byte
# vector stores (st.global.v4) and bulk async copies (cp.async.bulk), read
# from the PTX (this machine has no cuobjdump to read the SASS).
set -eu
nvcc=$1 src=$2
out=$(mktemp)
trap 'rm -f "$out"' EXIT
"$nvcc" -ptx -arch=sm_90 -I"$src/src/measure" -I"$src/include" "$src/src/measure/cuda.cu" -o "$out"
grep -q "st.global.v4" "$out" || { echo "no st.global.v4 in the PTX"; exit 1; }
grep -q "cp.async.bulk.global.shared::cta.bulk_group" "$out" || { echo "no cp.async.bulk"; exit 1; }
grep -q "cp.async.bulk.wait_group.read 0" "$out" || { echo "no wait_group.read"; exit 1; }
grep -q "%globaltimer" "$out" || { echo "no %globaltimer"; exit 1; }
grep -q "membar.sys" "$out" || { echo "no system-scope fence"; exit 1; }
# the replay kernel: issuer warps release their sends to the tracker, which
# acquires them before its fence; flags are released at gpu and sys scope
grep -q "red.release.cta.shared::cta.add.u32" "$out" || { echo "no release of a send to the tracker"; exit 1; }
grep -q "ld.acquire.cta.shared::cta.u32" "$out" || { echo "no acquire by the tracker"; exit 1; }
grep -q "st.release.sys.global.u32" "$out" || { echo "no system-scope flag release"; exit 1; }
grep -q "ld.acquire.gpu.global.u32" "$out" || { echo "no acquire in waits"; exit 1; }
grep -q "bar.sync 1," "$out" || { echo "no issuers' named barrier"; exit 1; }
echo "10 passed, 0 failed"
