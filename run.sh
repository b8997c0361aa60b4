#!/bin/sh
# run.sh: the two commands of the README.
#
#   ./run.sh demo   install what is missing, build, run `xstage demo`
#   ./run.sh test   install what is missing, build, run every test: plainly,
#                   under AddressSanitizer and UndefinedBehaviorSanitizer, and
#                   the libFuzzer target for a bounded time
#
# Packages come from Debian's archive; they are installed when the script
# runs as root (or with sudo), otherwise it prints the command to run.
# Environment: FUZZ_SECONDS (default 60), JOBS (default: all cores).
set -eu
cd "$(dirname "$0")"

PACKAGES="cmake make gcc pkg-config libjansson-dev libcmocka-dev"
TEST_PACKAGES="clang libclang-rt-dev libxml2-utils openmpi-bin libopenmpi-dev python3 python3-pytest
    python3-venv python3-pip python3-setuptools python3-wheel python3-hypothesis python3-numpy
    python3-pandas python3-matplotlib locales"
JOBS=${JOBS:-$(nproc 2>/dev/null || echo 2)}

say() { printf '==> %s\n' "$*" >&2; }

install_missing() {
    missing=""
    for p in "$@"; do
        dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" ||
            missing="$missing $p"
    done
    [ -z "$missing" ] && return 0
    if [ "$(id -u)" = 0 ]; then sudo=""
    elif command -v sudo >/dev/null 2>&1; then sudo="sudo"
    else
        say "missing Debian packages:$missing"
        say "install them as root: apt-get update && apt-get install -y$missing"
        exit 1
    fi
    say "installing$missing"
    $sudo apt-get update -q
    DEBIAN_FRONTEND=noninteractive $sudo apt-get install -y -q --no-install-recommends $missing
}

build() { # build DIR [cmake options...]
    dir=$1; shift
    say "building in $dir"
    cmake -S . -B "$dir" -DXSTAGE_WERROR=ON "$@" >/dev/null
    cmake --build "$dir" -j "$JOBS" >/dev/null
}

case "${1:-}" in
demo)
    install_missing $PACKAGES
    build build
    ./build/xstage demo
    ;;
test)
    install_missing $PACKAGES $TEST_PACKAGES
    # a cuobjdump that reads CUDA 13 cubins, for sass_check (which skips
    # without one): Debian 13's, unpacked under .cache, not installed
    if command -v nvcc >/dev/null 2>&1 || [ -x /usr/local/cuda/bin/nvcc ]; then
        mkdir -p .cache
        sh scripts/fetch-cuobjdump.sh >/dev/null 2>.cache/fetch-cuobjdump.log ||
            say "no cuobjdump fetched, sass_check will skip: $(tail -1 .cache/fetch-cuobjdump.log)"
    fi
    build build
    say "tests"
    (cd build && ctest --output-on-failure -j "$JOBS")
    build build-asan -DXSTAGE_SANITIZE=ON -DCMAKE_BUILD_TYPE=Debug
    say "tests under AddressSanitizer and UndefinedBehaviorSanitizer"
    (cd build-asan && ASAN_OPTIONS=detect_leaks=1 UBSAN_OPTIONS=print_stacktrace=1 \
        ctest --output-on-failure -j "$JOBS")
    # the parsers need neither CUDA nor MPI, and libFuzzer links with clang
    CC=clang build build-fuzz -DXSTAGE_FUZZ=ON -DXSTAGE_SANITIZE=ON -DXSTAGE_WITH_CUDA=OFF -DXSTAGE_WITH_MPI=OFF
    secs=${FUZZ_SECONDS:-60}
    say "fuzzing the parsers, serialisers and builders for ${secs}s"
    corpus=$(mktemp -d)
    trap 'rm -rf "$corpus"' EXIT
    cp tests/fuzz-corpus/* "$corpus"/
    ./build-fuzz/tests/fuzz_parse -max_total_time="$secs" -max_len=4096 \
        -print_final_stats=1 "$corpus" 2>build-fuzz/fuzz.log ||
        { tail -50 build-fuzz/fuzz.log; say "the fuzzer found a crash (input saved as crash-*)"; exit 1; }
    grep -E "stat::number_of_executed_units" build-fuzz/fuzz.log >&2 || true
    say "all tests passed"
    ;;
*)
    echo "usage: ./run.sh demo|test" >&2
    exit 2
    ;;
esac
