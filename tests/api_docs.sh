#!/bin/sh
# api_docs.sh SRCDIR: every function include/xstage.h and
# include/xstage_measure.h declare with XS_API
# is named in docs/api.md, and so are the version and export macros.
# Prints the missing names; exit 1 if there is one.
S=$1
H="$S/include/xstage.h"
M="$S/include/xstage_measure.h"
D="$S/docs/api.md"
if [ ! -r "$H" ] || [ ! -r "$D" ]; then
  echo "usage: api_docs.sh SRCDIR" >&2
  exit 2
fi
names=$(sh "$(dirname "$0")/api_names.sh" "$H" "$M")
count=$(echo "$names" | grep -c .)
if [ "$count" -lt 100 ]; then
  echo "api_docs: found only $count XS_API functions in $H; the extraction is broken"
  exit 1
fi
missing=""
for n in $names XS_API XSTAGE_VERSION_MAJOR XSTAGE_VERSION_MINOR XSTAGE_VERSION_PATCH \
  XSTAGE_VERSION_NUMBER XSTAGE_VERSION; do
  grep -qw -- "$n" "$D" || missing="$missing $n"
done
if [ -n "$missing" ]; then
  echo "api_docs: docs/api.md does not name:"
  for n in $missing; do echo "  $n"; done
  exit 1
fi
echo "api_docs: all $count XS_API functions named in docs/api.md"
exit 0
