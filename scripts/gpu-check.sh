#!/bin/sh
# gpu-check.sh: one prepared run on a machine with an NVIDIA GPU: build with
# CUDA, run each CUDA probe the machine can run, fit each, replay a MegaMoE
# fused baseline and its interleaved schedule on cuda-host, and print two
# short tables. Sized for under 5 minutes on one H200; every step has its
# own timeout. Not yet run on a GPU (docs/cuda.md).
#
# Working files go to ${WORK:-/tmp/xstage-gpu-check}. Three files are left
# in ${OUT:-out/gpu-check}: summary.txt (what it printed, written as it
# goes), cuda-host.json (the fitted profile, as soon as it is fitted) and,
# at the end, gpu-check.tar.gz (every log, sample and report).
#
# A machine without jansson, cmocka or pkg-config (a GPU image that can
# fetch nothing): run scripts/gpu-deps.sh first where Debian's archive is
# reachable, and send .devdeps along; they are unpacked under /tmp there,
# not installed.
set -u
cd "$(dirname "$0")/.."
out=${OUT:-out/gpu-check}
work=${WORK:-/tmp/xstage-gpu-check}
mkdir -p "$out" "$work"
t0=$(date +%s)
step() { echo "== $* (at $(( $(date +%s) - t0 )) s)"; }

deps() {
  if command -v pkg-config >/dev/null 2>&1 && pkg-config --exists jansson cmocka; then
    return 0
  fi
  if ! ls .devdeps/*.deb >/dev/null 2>&1; then
    echo "no jansson/cmocka/pkg-config here and no .devdeps: run scripts/gpu-deps.sh and send .devdeps"
    return 0 # configure will say what is missing
  fi
  root=/tmp/xstage-deps
  rm -rf "$root"
  for f in .devdeps/*.deb; do dpkg -x "$f" "$root" || return 1; done
  arch=$(ls "$root/usr/lib" | grep -- '-linux-gnu$' | head -1)
  export PATH="$root/usr/bin:$PATH"
  export PKG_CONFIG_LIBDIR="$root/usr/lib/$arch/pkgconfig:$root/usr/share/pkgconfig"
  export PKG_CONFIG_SYSROOT_DIR="$root"
  export LD_LIBRARY_PATH="$root/usr/lib/$arch${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"
  echo "using jansson, cmocka and pkg-config unpacked from .devdeps under $root"
}

main() {
  step "GPU"
  nvidia-smi --query-gpu=name,driver_version,clocks.sm,clocks.max.sm --format=csv 2>&1
  deps
  gen=""
  command -v make >/dev/null 2>&1 || gen="-G Ninja"
  step "build"
  # shellcheck disable=SC2086
  timeout 120 cmake -S . -B build-gpu $gen -DXSTAGE_WITH_CUDA=ON -DXSTAGE_WITH_MPI=OFF \
    -DBUILD_TESTING=ON > "$work/configure.log" 2>&1 || { tail -20 "$work/configure.log"; return 1; }
  timeout 240 cmake --build build-gpu -j "$(nproc)" > "$work/build.log" 2>&1 ||
    { tail -40 "$work/build.log"; return 1; }
  step "tests"
  (cd build-gpu && timeout 60 ctest -R "test_cuda|ptx_check|sass_check" --output-on-failure) \
    > "$work/tests.log" 2>&1
  grep -E "tests passed|Passed|Failed|Skipped|passed, [0-9]+ failed" "$work/tests.log"
  step "probes"
  printf '%-10s %12s %12s %12s %12s %s\n' probe inject drain capacity latency warning
  for p in cuda-host cuda-tma cuda-ce cuda-p2p; do
    if timeout 60 ./build-gpu/xstage probe "$p" --timeout 45s -o "$work/$p.csv" 2> "$work/$p.err"; then
      ./build-gpu/xstage fit "$work/$p.csv" -o "$work/$p.json" > "$work/$p.fit" 2>&1
      [ "$p" = cuda-host ] && cp "$work/$p.json" "$out/cuda-host.json"
      awk -v p="$p" '/injection rate/{i=$3" "$4} /drain rate/{d=$3" "$4} /in-flight/{c=$3" "$4}
        /^  latency/{l=$2" "$3} /warning/{w="warning"} END{printf "%-10s %12s %12s %12s %12s %s\n", p, i, d, c, l, w}' "$work/$p.fit"
    else
      printf '%-10s failed: %s\n' "$p" "$(tail -1 "$work/$p.err")"
    fi
  done
  # replay the two planner programs on cuda-host: a MegaMoE fused baseline
  # and its interleaved schedule, planned on the channel just measured with
  # h200-nvlink's compute, each worker spread over the SMs
  [ -f "$work/cuda-host.json" ] || return 0
  step "replays"
  for s in baseline interleaved; do
    ./build-gpu/xstage plan megamoe --preset deepseek-v3 --tokens 512 --profile "$work/cuda-host.json" \
      --compute h200-nvlink --schedule "$s" --emit-program "$work/moe-$s.json" > "$work/plan-$s.txt" 2>&1
  done
  printf '%-12s %11s %11s %11s %8s %8s %s\n' schedule measured burstgap blocking bg-err bl-err data
  for s in baseline interleaved; do
    if timeout 75 ./build-gpu/xstage replay --program "$work/moe-$s.json" --profile "$work/cuda-host.json" \
        --channel "cuda-host:width=sms:132,width=dispatch:132,timeout=60s" > "$work/replay-$s.txt" 2>&1; then
      awk -v s="$s" '/makespan:/{m=$3" "$4; b=$6" "$7; e1=$8; l=$10" "$11; e2=$12}
        /data check/{d=$0; sub(/.*data check: /, "", d)}
        END{printf "%-12s %11s %11s %11s %8s %8s %s\n", s, m, b, l, e1, e2, d}' "$work/replay-$s.txt" | tr -d '(),'
    else
      printf '%-12s failed: %s\n' "$s" "$(tail -1 "$work/replay-$s.txt")"
    fi
  done
  grep -h "kernel:\|start:\|host minus" "$work/replay-interleaved.txt" 2>/dev/null
  return 0
}

main 2>&1 | tee "$out/summary.txt"
step "done" | tee -a "$out/summary.txt"
cp "$out/summary.txt" "$work/summary.txt"
tar czf "$out/gpu-check.tar.gz" -C "$work" . 2>/dev/null
exit 0
