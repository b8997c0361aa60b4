#!/bin/sh
# svg_wellformed.sh XSTAGE SRC: SVGs and traces from predict and simulate,
# for 2 and 132 workers, are well-formed XML and JSON. Skips (77) without
# xmllint (Debian libxml2-utils).
set -eu
xstage=$1 src=$2
command -v xmllint >/dev/null 2>&1 || { echo "skip: xmllint not installed (apt-get install libxml2-utils)"; exit 77; }
dir=$(mktemp -d)
trap 'rm -rf "$dir"' EXIT
"$xstage" demo --emit-program "$dir/demo.json" >/dev/null
"$xstage" predict --profile h200-nvlink --program "$src/examples/hol.json" --svg "$dir/a.svg" --trace "$dir/a.json" >/dev/null
"$xstage" predict --profile h200-nvlink --program "$dir/demo.json" --svg "$dir/b.svg" >/dev/null
"$xstage" simulate --profile h200-nvlink --program "$dir/demo.json" --svg "$dir/c.svg" --trace "$dir/c.json" >/dev/null
"$xstage" simulate --profile h100-pcie5-host --program "$src/examples/hol.json" --svg "$dir/d.svg" >/dev/null
"$xstage" validate megamoe --data "$src/data/published/megamoe.csv" --svg "$dir/e.svg" >/dev/null
for f in "$dir"/*.svg; do xmllint --noout "$f"; done
echo "5 passed, 0 failed"
