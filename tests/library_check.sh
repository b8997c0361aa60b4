#!/bin/sh
# library_check.sh LIB.so HEADER [measure]: the library exports exactly
# the functions HEADER declares with XS_API (nm -D against the header:
# nothing hidden that is declared, nothing exported that is not). The core
# library (no third argument) also needs neither MPI nor the CUDA runtime
# nor the C++ runtime (readelf -d).
set -eu
lib=$1 header=$2 kind=${3:-core}
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT INT TERM
nm -D --defined-only "$lib" | awk '$2 ~ /^[TDBRVW]$/ {print $3}' | sort -u >"$tmp/exported"
sh "$(dirname "$0")/api_names.sh" "$header" | sort -u >"$tmp/declared"
[ -s "$tmp/declared" ] || { echo "library_check: no XS_API functions read from $header"; exit 1; }
status=0
if grep -v '^xs_' "$tmp/exported" >"$tmp/other"; then
    echo "library_check: $lib exports symbols outside xs_:"; cat "$tmp/other"; status=1
fi
comm -23 "$tmp/declared" "$tmp/exported" >"$tmp/missing"
comm -13 "$tmp/declared" "$tmp/exported" >"$tmp/extra"
if [ -s "$tmp/missing" ]; then
    echo "library_check: declared with XS_API in $header but not exported:"; cat "$tmp/missing"; status=1
fi
if [ -s "$tmp/extra" ]; then
    echo "library_check: exported but not declared with XS_API in $header:"; cat "$tmp/extra"; status=1
fi
needed=$(readelf -d "$lib" | sed -n 's/.*(NEEDED).*\[\(.*\)\]/\1/p' | tr '\n' ' ')
bads="libmpi libcudart libstdc++ libcuda.so libopen-"
[ "$kind" = core ] || bads=""
for bad in $bads; do
    case " $needed" in *" $bad"*)
        echo "library_check: $lib needs $bad ($needed)"; status=1;;
    esac
done
echo "library_check: $(wc -l <"$tmp/exported") functions exported, all xs_ and all in $(basename "$header"); needs: $needed"
exit $status
