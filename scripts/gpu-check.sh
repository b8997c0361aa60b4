#!/bin/sh
# gpu-check.sh: one prepared run on a machine with an NVIDIA GPU: build with
# CUDA, run each CUDA probe the machine can run, fit each, replay a MegaMoE
# fused baseline and its interleaved schedule on cuda-host, and print two
# short tables. Sized for under 5 minutes on one H200. Writes its files under
# ${OUT:-out/gpu-check}. Not yet run on a GPU (see docs/cuda.md).
set -u
cd "$(dirname "$0")/.."
out=${OUT:-out/gpu-check}
mkdir -p "$out"
nvidia-smi --query-gpu=name,driver_version,clocks.sm,clocks.max.sm --format=csv > "$out/gpu.txt" 2>&1
cat "$out/gpu.txt"
cmake -S . -B build-gpu -DXSTAGE_WITH_CUDA=ON -DXSTAGE_WITH_MPI=OFF -DBUILD_TESTING=ON \
  > "$out/configure.log" 2>&1 || { tail -20 "$out/configure.log"; exit 1; }
cmake --build build-gpu -j "$(nproc)" > "$out/build.log" 2>&1 || { tail -40 "$out/build.log"; exit 1; }
(cd build-gpu && ctest -R "test_cuda|ptx_check|sass_check" --output-on-failure) > "$out/tests.log" 2>&1
tail -5 "$out/tests.log"
printf '%-10s %12s %12s %12s %12s %s\n' probe inject drain capacity latency warning
for p in cuda-host cuda-tma cuda-ce cuda-p2p; do
  if timeout 90 ./build-gpu/xstage probe "$p" --timeout 60s -o "$out/$p.csv" 2> "$out/$p.err"; then
    ./build-gpu/xstage fit "$out/$p.csv" -o "$out/$p.json" > "$out/$p.fit" 2>&1
    awk -v p="$p" '/injection rate/{i=$3" "$4} /drain rate/{d=$3" "$4} /in-flight/{c=$3" "$4}
      /^  latency/{l=$2" "$3} /warning/{w="warning"} END{printf "%-10s %12s %12s %12s %12s %s\n", p, i, d, c, l, w}' "$out/$p.fit"
  else
    printf '%-10s failed: %s\n' "$p" "$(tail -1 "$out/$p.err")"
  fi
done
# replay the two planner programs on cuda-host: a MegaMoE fused baseline and
# its interleaved schedule, planned on the channel just measured with
# h200-nvlink's compute, each worker spread over the SMs
if [ -f "$out/cuda-host.json" ]; then
  for s in baseline interleaved; do
    ./build-gpu/xstage plan megamoe --preset deepseek-v3 --tokens 512 --profile "$out/cuda-host.json" \
      --compute h200-nvlink --schedule "$s" --emit-program "$out/moe-$s.json" > "$out/plan-$s.txt" 2>&1
  done
  printf '\n%-12s %11s %11s %11s %8s %8s %s\n' schedule measured burstgap blocking bg-err bl-err data
  for s in baseline interleaved; do
    if timeout 120 ./build-gpu/xstage replay --program "$out/moe-$s.json" --profile "$out/cuda-host.json" \
        --channel "cuda-host:width=sms:132,width=dispatch:132,timeout=60s" > "$out/replay-$s.txt" 2>&1; then
      awk -v s="$s" '/makespan:/{m=$3" "$4; b=$6" "$7; e1=$8; l=$10" "$11; e2=$12}
        /data check/{d=$0; sub(/.*data check: /, "", d)}
        END{printf "%-12s %11s %11s %11s %8s %8s %s\n", s, m, b, l, e1, e2, d}' "$out/replay-$s.txt" | tr -d '(),'
    else
      printf '%-12s failed: %s\n' "$s" "$(tail -1 "$out/replay-$s.txt")"
    fi
  done
  grep -h "kernel:\|start:\|host minus" "$out/replay-interleaved.txt" 2>/dev/null
fi
