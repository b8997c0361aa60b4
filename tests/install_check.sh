#!/bin/sh
# install_check.sh BUILD SOURCE: `cmake --install` into a temporary prefix,
# then a small consumer (tests/consumer) built three ways: with pkg-config
# (shared, and static through `pkg-config --static`), with
# find_package(xstage) (xstage::xstage, xstage::xstage_static,
# xstage::measure), and from a parent project that takes the source tree by
# add_subdirectory. Each consumer runs. The temporary folders go, whatever
# happens.
set -eu
build=$(cd "$1" && pwd) src=$(cd "$2" && pwd)
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT INT TERM
cc=${CC:-cc}
say() { printf 'install_check: %s\n' "$*"; }

cmake --install "$build" --prefix "$tmp/prefix" >"$tmp/install.log" ||
    { cat "$tmp/install.log"; exit 1; }
pc=$(find "$tmp/prefix" -name xstage.pc | head -1)
[ -n "$pc" ] || { say "no xstage.pc installed"; exit 1; }
libdir=$(dirname "$(dirname "$pc")")
for f in include/xstage.h include/xstage_measure.h bin/xstage; do
    [ -e "$tmp/prefix/$f" ] || { say "not installed: $f"; exit 1; }
done
for f in libxstage.so libxstage.a libxstage-measure.so libxstage-measure.a \
         pkgconfig/xstage-measure.pc cmake/xstage/xstageConfig.cmake; do
    [ -e "$libdir/$f" ] || { say "not installed: $libdir/$f"; exit 1; }
done

# pkg-config, shared and static
export PKG_CONFIG_PATH="$libdir/pkgconfig"
want=$(awk '/^#define XSTAGE_VERSION_(MAJOR|MINOR|PATCH) / { v = v sep $3; sep = "." }
           END { print v }' "$src/include/xstage.h")
[ "$(pkg-config --modversion xstage)" = "$want" ] ||
    { say "pkg-config --modversion xstage disagrees with xstage.h ($want)"; exit 1; }
# shellcheck disable=SC2046
$cc -std=c11 -Wall -Werror "$src/tests/consumer/use.c" -o "$tmp/use_pc" \
    $(pkg-config --cflags --libs xstage)
# runs with nothing more: pkg-config --libs gave what the loader needs
env -u LD_LIBRARY_PATH "$tmp/use_pc"
# shellcheck disable=SC2046
$cc -std=c11 -Wall -Werror "$src/tests/consumer/use.c" -o "$tmp/use_pc_static" \
    $(pkg-config --cflags xstage) "$libdir/libxstage.a" \
    $(pkg-config --static --libs-only-l xstage | sed 's/-lxstage//')
if readelf -d "$tmp/use_pc_static" | grep -q 'libxstage'; then
    say "the static consumer still needs libxstage.so"; exit 1
fi
"$tmp/use_pc_static"
# shellcheck disable=SC2046
$cc -std=c11 -Wall -Werror "$src/tests/consumer/measure.c" -o "$tmp/measure_pc" \
    $(pkg-config --cflags --libs xstage-measure)
env -u LD_LIBRARY_PATH "$tmp/measure_pc"
say "pkg-config: shared, static and measure consumers built and ran (no rpath given by hand)"

# the data: installed under share/xstage, found by the installed command
# away from the source tree, and again once the prefix has moved
for f in published/megamoe.csv published/ring-attention.csv examples/hol.json \
         profiles/h200-nvlink.json; do
    [ -e "$tmp/prefix/share/xstage/$f" ] || { say "not installed: share/xstage/$f"; exit 1; }
done
got=$(cd "$tmp" && env -u XSTAGE_DATA_DIR "$tmp/prefix/bin/xstage" validate flashattn | head -1)
case "$got" in
    *" of $tmp/prefix/share/xstage/published/ring-attention.csv,"*) ;;
    *) say "the installed xstage did not read its installed data: $got"; exit 1 ;;
esac
cp -R "$tmp/prefix" "$tmp/moved"
got=$(cd "$tmp" && env -u XSTAGE_DATA_DIR "$tmp/moved/bin/xstage" validate megamoe | head -1)
case "$got" in
    *" of $tmp/moved/share/xstage/published/megamoe.csv,"*) ;;
    *) say "a moved install did not read its own data: $got"; exit 1 ;;
esac
rm -rf "$tmp/moved"
say "data: validate read share/xstage/published from the installed command, and after a move"

# the Python package, installed beside the library, finds it there
py=/usr/bin/python3
if [ -x "$py" ]; then
    pkg=$(find "$tmp/prefix" -type d -name xstage -path '*dist-packages*' | head -1)
    [ -n "$pkg" ] || { say "no Python package installed"; exit 1; }
    got=$(cd "$tmp" && env -u XSTAGE_LIBRARY PYTHONPATH="$(dirname "$pkg")" "$py" -c \
        'import xstage; print(xstage.version(), xstage.library_path())')
    case "$got" in
        *" $tmp/prefix/"*) say "python: import xstage from ${pkg#"$tmp/prefix/"}: $got" ;;
        *) say "the installed Python package loaded another library: $got"; exit 1 ;;
    esac
    got=$(cd "$tmp" && env -u XSTAGE_LIBRARY -u XSTAGE_DATA_DIR PYTHONPATH="$(dirname "$pkg")" \
        "$py" -c 'import xstage; print(xstage.data_file("published/megamoe.csv"))')
    [ "$got" = "$tmp/prefix/share/xstage/published/megamoe.csv" ] ||
        { say "the installed Python package found its data elsewhere: $got"; exit 1; }
    # a run-time install: the versioned library only, no libxstage.so
    rt="$tmp/runtime"
    mkdir -p "$rt/lib" "$rt/${pkg#"$tmp/prefix/"}"
    cp -P "$libdir"/libxstage.so.* "$rt/lib/"
    cp -R "$pkg/." "$rt/${pkg#"$tmp/prefix/"}/"
    got=$(cd "$tmp" && env -u XSTAGE_LIBRARY PYTHONPATH="$(dirname "$rt/${pkg#"$tmp/prefix/"}")" \
        "$py" -c 'import xstage; print(xstage.library_path())')
    case "$got" in
        "$rt/lib/libxstage.so."*) say "python: a run-time install (no libxstage.so) loads $got" ;;
        *) say "the run-time install loaded $got, not its libxstage.so.X.Y"; exit 1 ;;
    esac
else
    say "python: skipped, no /usr/bin/python3"
fi

# find_package
gen="-DCMAKE_BUILD_TYPE=Release"
cmake -S "$src/tests/consumer" -B "$tmp/fp" $gen -DCMAKE_PREFIX_PATH="$tmp/prefix" \
    >"$tmp/fp.log" 2>&1 || { cat "$tmp/fp.log"; exit 1; }
cmake --build "$tmp/fp" >>"$tmp/fp.log" 2>&1 || { cat "$tmp/fp.log"; exit 1; }
"$tmp/fp/use_shared" && "$tmp/fp/use_static" && "$tmp/fp/use_measure"
say "find_package: xstage::xstage, xstage::xstage_static, xstage::measure built and ran"

# add_subdirectory from a parent project (core only, no CUDA or MPI, to
# keep the build short)
cmake -S "$src/tests/consumer" -B "$tmp/sub" $gen -DXSTAGE_SOURCE="$src" \
    -DXSTAGE_WITH_CUDA=OFF -DXSTAGE_WITH_MPI=OFF >"$tmp/sub.log" 2>&1 ||
    { cat "$tmp/sub.log"; exit 1; }
cmake --build "$tmp/sub" -j "${JOBS:-2}" --target use_shared use_static use_measure \
    >>"$tmp/sub.log" 2>&1 || { cat "$tmp/sub.log"; exit 1; }
"$tmp/sub/use_shared" && "$tmp/sub/use_static" && "$tmp/sub/use_measure"
say "add_subdirectory: the same consumers built inside a parent project and ran"
