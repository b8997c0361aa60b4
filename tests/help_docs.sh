#!/bin/sh
# help_docs.sh XSTAGE SRCDIR: the docs and the --help texts name the same
# flags. For every command (and planner) the --help text's --flags must
# appear in its page under docs/, and every --flag a page writes must be
# one that a command it documents takes. Every long option in the option
# tables of cli/*.c must be in some --help text and some page, and every
# probe backend in `xstage probe --help` and docs/probe.md.
# Prints each mismatch; exit 1 if there is one.
X=$1
S=$2
if [ ! -x "$X" ] || [ ! -d "$S/docs" ]; then
  echo "usage: help_docs.sh XSTAGE SRCDIR" >&2
  exit 2
fi
tmp=$(mktemp -d) || exit 2
trap 'rm -rf "$tmp"' EXIT
# loops below run in subshells (pipes): failures are counted in a file
: >"$tmp/failed"
bad() {
  echo "help_docs: $*"
  echo x >>"$tmp/failed"
}

# the --flags a text names, one a line, sorted
flags() { grep -o -- '--[a-z][a-z0-9-]*' | sort -u; }
# flags every command takes, or xstage itself
globals="--help
--version"

# command (and planner) -> the page that documents its flags (a command
# on two lines has its flags documented across both pages)
map="calibrate probe
demo demo
fit probe
fit_megamoe tune
plan_megamoe plan-megamoe
plan_flashattn plan-flashattn
predict predict
probe probe
profiles profiles
replay probe
simulate simulate
sweep_megamoe plan-megamoe
sweep_flashattn plan-flashattn
validate_megamoe validate
validate_megamoe tune
validate_flashattn validate
validate_flashattn tune
validate_ep validate
validate_residuals validate"
# pages that also show flags of commands documented elsewhere, and flags
# of other programs they show (mpirun's; pkg-config's, cmake's and the
# linker's where docs/api.md shows how to build against the library; pip's
# and venv's where the README installs the Python package,
# python/examples/autotune.py's, and tests/docs_check.py's where the README
# says how the pages' figures are written anew)
extra="mpi probe fit sweep_megamoe sweep_flashattn
cuda probe calibrate fit replay
simulate demo predict
plan-megamoe validate_megamoe
plan-flashattn validate_flashattn
tune plan_megamoe"
foreign="--hostfile
--map-by
--cflags
--libs
--libs-only-l
--static
--install
--prefix
--no-undefined
--no-build-isolation
--system-site-packages
--min
--max
--update-figures"

# every command `xstage --help` lists has a page
"$X" --help | awk '/^commands:/ { f = 1; next } f && /^$/ { exit } f { print $1 }' \
  >"$tmp/commands"
[ -s "$tmp/commands" ] || bad "no commands in xstage --help"
while read -r cmd; do
  echo "$map" | awk -v c="$cmd" '$1 == c || index($1, c "_") == 1 { ok = 1 } END { exit !ok }' ||
    bad "xstage $cmd: no page for it in tests/help_docs.sh (docs/<page>.md)"
done <"$tmp/commands"

# each command's help flags
: >"$tmp/all"
echo "$map" | while read -r key page; do
  # shellcheck disable=SC2046
  if ! "$X" $(echo "$key" | tr _ ' ') --help >"$tmp/help.$key" 2>&1; then
    bad "xstage $(echo "$key" | tr _ ' ') --help failed"
  fi
  flags <"$tmp/help.$key" | grep -vx -- "--help" >"$tmp/flags.$key"
  cat "$tmp/flags.$key" >>"$tmp/all"
  [ -s "$tmp/flags.$key" ] || [ "$key" = profiles ] ||
    bad "xstage $(echo "$key" | tr _ ' ') --help names no flags"
done
sort -u "$tmp/all" -o "$tmp/all"
[ -s "$tmp/all" ] || bad "no flags in any --help"

# 1. every flag of a command's --help is in its pages
echo "$map" | awk '{ print $1 }' | sort -u | while read -r key; do
  pages_of=$(echo "$map" | awk -v k="$key" '$1 == k { print $2 }')
  for page in $pages_of; do flags <"$S/docs/$page.md"; done | sort -u >"$tmp/page"
  while read -r f; do
    grep -qx -- "$f" "$tmp/page" ||
      bad "xstage $(echo "$key" | tr _ ' ') takes $f, docs/$(echo $pages_of | sed 's/ /.md or docs\//g').md does not mention it"
  done <"$tmp/flags.$key"
done

# 2. every flag a page names is one its commands take
pages=$(echo "$map" | awk '{ print $2 }' | sort -u)
for page in $pages mpi cuda; do
  keys=$({ echo "$map" | awk -v p="$page" '$2 == p { print $1 }'
           echo "$extra" | awk -v p="$page" '$1 == p { for (i = 2; i <= NF; i++) print $i }'; } |
         sort -u)
  { echo "$globals"; echo "$foreign"; for k in $keys; do cat "$tmp/flags.$k"; done; } |
    sort -u >"$tmp/allowed"
  flags <"$S/docs/$page.md" | while read -r f; do
    grep -qx -- "$f" "$tmp/allowed" ||
      bad "docs/$page.md names $f, which no command it documents takes ($(echo $keys | tr _ ' '))"
  done
done

# 3. other pages and the README name only flags some command (or one of the
# other programs above) takes
{ echo "$globals"; echo "$foreign"; cat "$tmp/all"; } | sort -u >"$tmp/allowed"
for f in "$S"/docs/*.md "$S/README.md"; do
  base=$(basename "$f" .md)
  case " $(echo $pages) mpi cuda " in *" $base "*) continue ;; esac
  flags <"$f" | while read -r g; do
    grep -qx -- "$g" "$tmp/allowed" || bad "${f#"$S"/} names $g, which no command takes"
  done
done

# 4. every long option the commands accept is in a --help and in the docs
cat "$S"/docs/*.md | flags >"$tmp/docflags"
grep -ho '{"[a-z][a-z0-9-]*", *[a-z_]*_argument' "$S"/cli/*.c |
  sed 's/{"\([^"]*\)".*/--\1/' | sort -u | grep -vx -- "--help" |
  while read -r f; do
    grep -qx -- "$f" "$tmp/all" || bad "a command accepts $f, no --help text names it"
    grep -qx -- "$f" "$tmp/docflags" || bad "a command accepts $f, no page under docs/ names it"
  done

# 5. every probe backend is in probe --help and docs/probe.md; the
# backends --version lists are among them
awk '/Backends:/ { f = 1; next } f && /^$/ { exit } f && /^  [^ ]/ { print $1 }' "$tmp/help.probe" \
  >"$tmp/backends"
for b in pipe tcp mpi cuda-host cuda-tma cuda-ce cuda-p2p cuda-p2p-tma; do
  grep -qx -- "$b" "$tmp/backends" || bad "xstage probe --help does not list the backend $b"
done
while read -r b; do
  grep -q -- "\`$b\`" "$S/docs/probe.md" || bad "docs/probe.md does not name the backend $b"
done <"$tmp/backends"
"$X" --version | sed -n 's/^backends: *//p' | tr ' ' '\n' |
  grep . | while read -r b; do
    grep -qx -- "$b" "$tmp/backends" ||
      bad "xstage --version lists the backend $b, xstage probe --help does not"
  done

if [ -s "$tmp/failed" ]; then
  echo "help_docs: $(wc -l <"$tmp/failed") mismatches between --help and docs/"
  exit 1
fi
exit 0
