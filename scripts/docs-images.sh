#!/bin/sh
# docs-images.sh [BUILD]: the pictures in docs/, made again from the current
# code with the xstage of BUILD (default build/):
#   timeline-demo.png   the demo's program under burstgap (predict --svg)
#   timeline-hol.png    examples/hol.json under burstgap
#   calibrate-pipe.png  a pipe calibration, 1 MiB drained at 200 MB/s
#                       (calibrate --svg; a measurement of this machine,
#                       whose printout docs/probe.md shows beside it)
#   validate-megamoe.svg, validate-flashattn.svg, validate-ep.svg  the
#                       validations (--svg)
# SVGs become PNGs at their own size with rsvg-convert (Debian:
# librsvg2-bin). Writes into docs/; prints the calibration's text.
set -eu
cd "$(dirname "$0")/.."
build=${1:-build}
x=$build/xstage
[ -x "$x" ] || { echo "docs-images: no $x: build first (./run.sh demo)" >&2; exit 2; }
command -v rsvg-convert >/dev/null 2>&1 ||
    { echo "docs-images: needs rsvg-convert (apt-get install librsvg2-bin)" >&2; exit 2; }
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT INT TERM
png() { rsvg-convert --background-color white -o "$2" "$1"; }

"$x" demo --emit-program "$tmp/demo.json" >/dev/null
"$x" predict --program "$tmp/demo.json" --profile h200-nvlink --model burstgap \
    --svg "$tmp/demo.svg" >/dev/null
png "$tmp/demo.svg" docs/timeline-demo.png
"$x" predict --program examples/hol.json --profile h200-nvlink --model burstgap \
    --svg "$tmp/hol.svg" >/dev/null
png "$tmp/hol.svg" docs/timeline-hol.png
"$x" calibrate pipe --capacity 1MiB --drain-rate 200MB/s --svg "$tmp/pipe.svg"
png "$tmp/pipe.svg" docs/calibrate-pipe.png
"$x" validate megamoe --svg docs/validate-megamoe.svg >/dev/null
"$x" validate flashattn --svg docs/validate-flashattn.svg >/dev/null
"$x" validate ep --svg docs/validate-ep.svg >/dev/null
echo "docs-images: docs/timeline-demo.png, timeline-hol.png, calibrate-pipe.png," \
     "validate-megamoe.svg, validate-flashattn.svg and validate-ep.svg written" >&2
