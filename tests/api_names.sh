#!/bin/sh
# api_names.sh HEADER...: the name of every function the headers declare
# with XS_API, a line each. For api_docs.sh and library_check.sh.
# comments out, preprocessor lines out, then one statement a line (split
# at ";", "{" and "}"): the name is the identifier before the first '(' of
# a statement that starts with XS_API
awk '
  {
    line = $0; out = ""
    while (line != "") {
      if (incomment) {
        i = index(line, "*/")
        if (!i) { line = ""; break }
        line = substr(line, i + 2); incomment = 0
      } else {
        i = index(line, "/*")
        if (!i) { out = out line; line = "" }
        else { out = out substr(line, 1, i - 1); line = substr(line, i + 2); incomment = 1 }
      }
    }
    # preprocessor lines, with their continuations
    if (cont || out ~ /^[ \t]*#/) { cont = (out ~ /\\[ \t]*$/); next }
    print out
  }' "$@" |
  tr '\n' ' ' | tr ';{}' '\n\n\n' |
  sed -n 's/^[[:space:]]*XS_API[[:space:]]\([^(]*\)(.*/\1/p' |
  sed 's/.*[^A-Za-z0-9_]\([A-Za-z_][A-Za-z0-9_]*\)[[:space:]]*$/\1/'
