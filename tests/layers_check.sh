#!/bin/sh
# layers_check.sh LAYER=OBJECTS ...: each argument names a layer, bottom
# first, and its object files (separated by '%'). A layer may use the
# functions of itself and of the layers before it, never of one after it:
# nm's undefined xs_ and xs__ symbols of each layer are looked up in every
# layer's definitions. This is the same rule the build's per-layer link
# checks (-Wl,--no-undefined) enforce, computed a second way; it also
# prints the layer graph.
set -eu
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT INT TERM
order=""
for arg in "$@"; do
    layer=${arg%%=*}
    order="$order $layer"
    objs=$(echo "${arg#*=}" | tr '%' ' ')
    [ -n "$objs" ] || { echo "layers_check: no objects for layer $layer"; exit 1; }
    for o in $objs; do
        [ -f "$o" ] || { echo "layers_check: $o: no such object"; exit 1; }
        nm "$o" | awk -v L="$layer" 'NF == 3 && $2 ~ /^[TDBR]$/ && $3 ~ /^xs_/ {print $3, L}' >>"$tmp/defs"
        nm "$o" | awk '$1 == "U" && $2 ~ /^xs_/ {print $2}' | sed "s/\$/ $layer/" >>"$tmp/uses"
    done
done
sort -u "$tmp/defs" -o "$tmp/defs"
status=0
rank() { i=0; for l in $order; do [ "$l" = "$1" ] && { echo $i; return; }; i=$((i + 1)); done; echo 99; }
: >"$tmp/edges"
sort -u "$tmp/uses" | while read -r sym user; do
    owner=$(awk -v s="$sym" '$1 == s {print $2; exit}' "$tmp/defs")
    [ -n "$owner" ] || continue
    [ "$owner" = "$user" ] && continue
    echo "$user -> $owner" >>"$tmp/edges"
    if [ "$(rank "$owner")" -gt "$(rank "$user")" ]; then
        echo "layers_check: $user uses $sym of $owner, a layer above it" >>"$tmp/bad"
    fi
done
echo "layers (bottom first):$order"
sort -u "$tmp/edges" | sed 's/^/  /'
if [ -s "$tmp/bad" ]; then cat "$tmp/bad"; status=1; fi
[ -s "$tmp/edges" ] || { echo "layers_check: no edges found: nm read nothing?"; status=1; }
exit $status
