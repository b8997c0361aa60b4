#!/usr/bin/env python3
"""docs_check.py: the documentation as tests. Every fenced code block of the
pages switched on in tests/docs_pages.txt is run, and what it prints is
compared with what the page shows.

    docs_check.py SRC BUILD [--update-figures] [PAGE...]

What each kind of block means (the info string after the fence):

``console``  Lines starting with "$ " are commands (a line ending in "\\"
             goes on), run with sh; the lines up to the next "$ " are what
             the command prints (standard output and error). A line "..."
             stands for any number of lines (abridged output); "$ " lines
             with nothing shown after them must just succeed.
``sh``       A script: each line a command, run with sh -e; it must exit 0.
``python``   Run with the Python given (the venv the python_install test
             made, whose xstage is the pip-installed one); a ``text`` block
             right after it is what it prints.
``c``        Compiled with the library (build tree) inside a main() that
             already has, in an outer scope, the variables the API pages
             take as given (err, prof, prog, w, r, ...: PRELUDE below), and
             run; a snippet's own declarations shadow them.
``json``     Needs an annotation: "program", "profile", "grid" or
             "moe-config" (the input is read by the command that takes it),
             or "keys of `COMMAND`" (every key the block names is a key of
             the command's JSON output, and every key of the output is
             named on the page).
(none)       A command's synopsis ("xstage predict --profile P ..."): equal,
             but for white space, to the usage lines of its --help.
``cmake``    Not run (a fragment of a consumer's CMakeLists.txt); say so.

Annotations: an HTML comment on the lines just above a fence,
``<!-- doctest: WORDS -->``, one or more of
  skip: REASON          not run (GPUs, several ranks, system-wide installs);
                        the rest of the comment is the reason
  tolerance N%          numbers within N% (default 1%)
  measured              every number a measurement of this machine: checked
                        for presence and unit only
  timing REGEX          the same for the numbers on lines matching REGEX
                        (wall-clock times)
  varies REGEX          a line of the page matching REGEX matches any one
                        line (the host name and the date of a header)
  usage subset          a synopsis that shows part of a usage: its flags
                        must be in --help's
  program, profile, grid, moe-config, keys of `COMMAND`  (json, above)

Figures in the prose: tests/docs_figures.py (``<!-- doctest: let NAME =
`COMMAND` -->``, then ``<!-- = EXPRESSION -->`` after a figure), run on every
page; ``--update-figures`` writes each with the value its command gives now.

Numbers match when they are within the tolerance (relative), or within
half a unit of the last digit the page shows (what rounding allows). Commands run in a scratch folder in which
examples/, data/, profiles/, python/ and tests/ of the source tree and
build/ are reachable, with the build's xstage first on PATH and then the
venv's python3. Exit 0 when every block
of every page switched on passes; each failure prints the page, the line,
and the lines or numbers that differ.
"""
import json
import os
import re
import shutil
import subprocess
import sys
import tempfile
import time

import docs_figures

NUMBER = re.compile(r"[-+]?(?:\d+\.\d*|\.\d+|\d+)(?:[eE][-+]?\d+)?")
UNITS = ("ns", "us", "ms", "s", "B", "KiB", "MiB", "GiB", "kB", "MB", "GB", "B/s", "kB/s",
         "MB/s", "GB/s", "TB/s", "%", "x")
PRELUDE = r"""
#define _POSIX_C_SOURCE 200809L
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "xstage.h"
#include "xstage_measure.h"
/* what the pages take as given: a profile, a finished program of one
 * worker, a config, and uses of results */
static void use_(int n, ...) { (void)n; }
#define use(...) use_(0, __VA_ARGS__)
#define launch(...) use_(0, __VA_ARGS__)
@@INCLUDES@@
int main(void) {
  xs_error err;
  xs_profile *prof = NULL, *profile;
  xs_program *prog = xs_program_new("doc");
  size_t w = 0;
  xs_result *r = NULL;
  if (xs_profile_load("h200-nvlink", &prof, &err) ||
      xs_program_add_worker(prog, "sm0", &w, &err) ||
      xs_program_send(prog, w, 1e6, NULL, NULL, NULL, &err) ||
      xs_program_finish(prog, &err)) {
    fprintf(stderr, "prelude: %s\n", err.message);
    return 99;
  }
  profile = prof;
  xs_moe_config cfg, c;
  xs_moe_preset("deepseek-v3", &cfg);
  c = cfg;
  /* a probe's options, samples and fit, as the probe snippet leaves them */
  xs_probe_options po = {0};
  xs_samples *s = NULL;
  xs_fit f;
  /* a CSV of published timings, read */
  char text[1 << 16];
  size_t length = 0;
  FILE *csv = fopen("data/published/megamoe.csv", "rb");
  if (csv) {
    length = fread(text, 1, sizeof text - 1, csv);
    fclose(csv);
  }
  text[length] = 0;
  (void)po; (void)s; (void)f; (void)c;
  double tokens_this_batch = 512, tokens_this_step = 512;
  int ncandidates = 1;
  xs_program *cand[1] = {prog};
  (void)r; (void)tokens_this_batch; (void)tokens_this_step; (void)ncandidates; (void)cand;
  {
@@SNIPPET@@
  }
  return 0;
}
"""


class Block:
    def __init__(self, page, line, info, text, notes):
        self.page, self.line, self.info, self.text, self.notes = page, line, info, text, notes
        self.output = None  # a text block right after a python block

    def where(self):
        return "%s:%d" % (self.page, self.line)


def parse_notes(comments):
    notes = {}
    for c in comments:
        if c.startswith("skip:"):  # the reason may hold anything
            notes["skip"] = c[len("skip:"):].strip()
            continue
        for part in re.split(r";\s*", c):
            part = part.strip()
            if not part:
                continue
            if re.match(r"(let\s|def\s|figures$|end figures$)", part):
                continue  # the prose's figures (docs_figures.py), not a block's
            m = re.match(r"skip:\s*(.*)", part)
            if m:
                notes["skip"] = m.group(1)
                continue
            m = re.match(r"tolerance\s+([\d.]+)%", part)
            if m:
                notes["tolerance"] = float(m.group(1)) / 100
                continue
            m = re.match(r"timing\s+(.*)", part)
            if m:
                notes["timing"] = re.compile(m.group(1))
                continue
            m = re.match(r"varies\s+(.*)", part)
            if m:
                notes["varies"] = re.compile(m.group(1))
                continue
            m = re.match(r"keys of `(.*)`", part)
            if m:
                notes["keys"] = m.group(1)
                continue
            if part in ("measured", "usage subset", "program", "profile", "grid", "moe-config"):
                notes[part] = True
                continue
            raise SystemExit("docs_check: unknown annotation %r" % part)
    return notes


def blocks_of(page, text):
    """The fenced blocks of a page, with their annotations."""
    lines = text.split("\n")
    out, i, pending = [], 0, []
    while i < len(lines):
        line = lines[i]
        m = re.match(r"<!--\s*doctest:\s*(.*?)\s*-->\s*$", line.strip())
        if m:
            pending.append(m.group(1))
            i += 1
            continue
        m = re.match(r"^(\s*)```\s*([\w+-]*)\s*$", line)
        if m:
            indent, info = m.group(1), m.group(2)
            body, j = [], i + 1
            while j < len(lines) and not re.match(r"^\s*```\s*$", lines[j]):
                body.append(lines[j][len(indent):] if lines[j].startswith(indent) else lines[j])
                j += 1
            b = Block(page, i + 1, info, "\n".join(body), parse_notes(pending))
            if info == "text" and out and out[-1].info == "python" and out[-1].output is None \
                    and not pending:
                out[-1].output = b
            else:
                out.append(b)
            pending = []
            i = j + 1
            continue
        if line.strip():
            pending = []
        i += 1
    return out


# ---- comparing output ----

def tokens(line):
    """A line as words and numbers: ("w", word) and ("n", value, digits
    after the point, unit that follows)."""
    out, pos = [], 0
    for m in NUMBER.finditer(line):
        # a number inside a word (h200, sm0, fp8, x2) is part of the word
        if (m.start() > 0 and (line[m.start() - 1].isalpha() or line[m.start() - 1] in "_#"))\
                or (m.end() < len(line) and line[m.end()].isalpha() and
                    not line[m.end():].startswith(UNITS)):
            continue
        out += [("w", w) for w in line[pos:m.start()].split()]
        s = m.group(0)
        frac = len(s.split(".")[1].split("e")[0].split("E")[0]) if "." in s else 0
        rest = line[m.end():].lstrip()
        unit = next((u for u in sorted(UNITS, key=len, reverse=True)
                     if rest.startswith(u) and (len(rest) == len(u) or not rest[len(u)].isalnum())),
                    "")
        exp = 0
        if "e" in s.lower():
            exp = int(s.lower().split("e")[1])
        out.append(("n", float(s), frac - exp, unit))
        # the unit belongs to the number (compared by kind when measured)
        pos = m.end() + (len(line[m.end():]) - len(rest)) + len(unit)
    out += [("w", w) for w in line[pos:].split()]
    return out


def unit_kind(unit):
    """time, size, rate, or the unit itself: 2.85 GB/s and 284 MB/s are both
    rates, which a measurement may print in either."""
    if unit in ("ns", "us", "ms", "s"):
        return "time"
    if unit.endswith("/s"):
        return "rate"
    if unit.endswith("B"):
        return "size"
    return unit


def line_matches(want, got, tol, loose):
    """Whether a printed line matches the page's; else why not."""
    a, b = tokens(want), tokens(got)
    if loose:
        # a measurement the formatter printed as "unbounded" or "n/a" (a
        # fit that found no knee) stands where a number and its unit do
        nb = []
        for t in b:
            if t[0] == "w" and t[1].strip("()") in ("unbounded", "n/a"):
                nb += [("w", "(")] if t[1].startswith("(") else []
                nb.append(("n", float("inf"), 0, "*"))
                nb += [("w", ")")] if t[1].endswith(")") else []
            else:
                nb.append(t)
        b = nb
    if len(a) != len(b):
        return "different words"
    for x, y in zip(a, b):
        if x[0] != y[0]:
            return "a number where a word is shown, or the other way"
        if x[0] == "w":
            if x[1] != y[1]:
                return "%r, not %r" % (y[1], x[1])
            continue
        if loose:  # presence and unit (its kind: a time, a size, a rate) only
            if y[3] != "*" and unit_kind(x[3]) != unit_kind(y[3]):
                return "unit %r, not %r" % (y[3], x[3])
            continue
        half = 0.5 * 10.0 ** (-x[2])  # what rounding to the digits shown allows
        if abs(x[1] - y[1]) > max(tol * abs(x[1]), half * 1.0001):
            return "%s, not %s (tolerance %g%%, or half a unit of the last digit shown)" % (
                y[1], x[1], 100 * tol)
    return None


def compare(want_lines, got_lines, notes):
    """None when the output matches the page's lines, else a report."""
    tol = notes.get("tolerance", 0.01)
    measured = notes.get("measured", False)
    timing = notes.get("timing")
    got = [l.rstrip() for l in got_lines]
    while got and not got[-1].strip():
        got.pop()
    want = [l.rstrip() for l in want_lines]
    while want and not want[-1].strip():
        want.pop()

    def match(wi, gi):
        """Match want[wi:] against got[gi:], "..." anywhere; a report or None."""
        while wi < len(want):
            if want[wi].strip() == "...":
                if wi + 1 == len(want):
                    return None
                for k in range(gi, len(got) + 1):
                    if match(wi + 1, k) is None:
                        return None
                # the closest: a line of the same words, its numbers apart
                words = [t for t in tokens(want[wi + 1]) if t[0] == "w"]
                for g in got[gi:]:
                    if [t for t in tokens(g) if t[0] == "w"] == words:
                        return "page: %s\n    got:  %s\n    (%s)" % (
                            want[wi + 1], g, line_matches(want[wi + 1], g, tol, False))
                return "the page's %r (after \"...\") and what follows it are not in the " \
                    "output" % want[wi + 1]
            if gi >= len(got):
                return "the page shows %r; the output ends before it" % want[wi]
            loose = measured or bool(timing and timing.search(want[wi]))
            varies = notes.get("varies")
            why = None if varies and varies.search(want[wi]) else \
                line_matches(want[wi], got[gi], tol, loose)
            if why:
                return "page: %s\n    got:  %s\n    (%s)" % (want[wi], got[gi], why)
            wi += 1
            gi += 1
        if gi < len(got):
            return "the output goes on after the page's last line: %r" % got[gi]
        return None
    return match(0, 0)


# ---- JSON shapes ----

def sketch_to_json(text):
    """A page's sketch of a document as JSON: a set of keys {"a", "b"}
    becomes {"a": null, "b": null}."""
    return re.sub(r'(?<=[{,])(\s*)("(?:[^"\\]|\\.)*")(?=\s*[,}])', r'\1\2: null', text)


def placeholder(key):
    """A key that stands for data (ARM, "the same keys"): any key."""
    return key.isupper() or " " in key


def shape_diff(page, doc, path, out):
    """What differs between the keys a page shows and a document's, into
    out: keys shown and missing, keys present and not shown. Values are
    examples and are not compared; None and "..." stand for anything."""
    if page is None or page == "...":
        return
    if isinstance(page, dict):
        if not isinstance(doc, dict):
            out.append("%s: the page shows an object, the output has %s"
                       % (path or "top", type(doc).__name__))
            return
        named = [k for k in page if not placeholder(k)]
        holders = [k for k in page if placeholder(k)]
        for k in named:
            if k not in doc:
                out.append("%s%s: on the page, not in the output" % (path, k))
            else:
                shape_diff(page[k], doc[k], path + k + ".", out)
        for k in doc:
            if k in page:
                continue
            if holders:
                for h in holders:
                    shape_diff(page[h], doc[k], path + k + ".", out)
            else:
                out.append("%s%s: in the output, not on the page" % (path, k))
    elif isinstance(page, list) and page:
        if not isinstance(doc, list):
            out.append("%s: the page shows a list, the output has %s"
                       % (path or "top", type(doc).__name__))
            return
        if not doc:
            return
        if isinstance(page[0], dict) and all(isinstance(d, dict) for d in doc):
            union = {}
            for d in doc:  # a key some elements have (optional) counts
                for k, v in d.items():
                    union.setdefault(k, v)
            shape_diff(page[0], union, path + "[].", out)
        else:
            for d in doc:
                shape_diff(page[0], d, path + "[].", out)


# ---- running ----

class Runner:
    def __init__(self, src, build, python):
        self.src, self.build, self.python = src, build, python
        self.scratch = tempfile.mkdtemp(prefix="xstage-docs-")
        for d in ("examples", "data", "profiles", "python", "tests"):
            os.symlink(os.path.join(src, d), os.path.join(self.scratch, d))
        os.symlink(build, os.path.join(self.scratch, "build"))
        self.env = dict(os.environ)
        # the build's xstage, then the venv's python3 (the installed package)
        path = [build] + ([os.path.dirname(python)] if python else [])
        self.env["PATH"] = os.pathsep.join(path + [self.env.get("PATH", "")])
        for k in ("XSTAGE_LIBRARY", "PYTHONPATH", "XSTAGE_DATA_DIR"):
            self.env.pop(k, None)
        self.env["COLUMNS"] = "100"
        self.failures, self.passed, self.skipped = [], 0, []

    def sh(self, script, timeout=300):
        r = subprocess.run(["sh", "-c", script], cwd=self.scratch, env=self.env,
                           capture_output=True, text=True, timeout=timeout)
        return r.returncode, r.stdout + r.stderr

    def fail(self, b, why):
        self.failures.append("%s: %s block: %s" % (b.where(), b.info or "plain", why))

    def run(self, b):
        if "skip" in b.notes:
            self.skipped.append("%s: %s" % (b.where(), b.notes["skip"]))
            return
        kind = b.info
        if kind == "cmake":
            self.skipped.append("%s: a fragment of a consumer's CMakeLists.txt (install_check "
                                "builds one)" % b.where())
            return
        handler = {"console": self.console, "sh": self.script, "python": self.py, "c": self.c,
                   "json": self.json_block, "": self.synopsis}.get(kind)
        if handler is None:
            self.fail(b, "no rule for blocks of kind %r (annotate it)" % kind)
            return
        start = time.monotonic()
        why = handler(b)
        took = time.monotonic() - start
        if why == "skipped":
            return
        if why:
            self.fail(b, why)
        else:
            self.passed += 1
            print("docs_check: ok %s (%s, %.1f s)" % (b.where(), b.info or "synopsis", took))

    def console(self, b):
        lines = b.text.split("\n")
        i = 0
        while i < len(lines):
            if not lines[i].startswith("$ "):
                return "line %d: expected a command (\"$ ...\")" % (b.line + 1 + i)
            cmd = lines[i][2:]
            while cmd.endswith("\\") and i + 1 < len(lines):
                i += 1
                cmd = cmd[:-1] + " " + lines[i].strip()
            i += 1
            want = []
            while i < len(lines) and not lines[i].startswith("$ "):
                want.append(lines[i])
                i += 1
            rc, out = self.sh(cmd)
            if rc != 0 and not any(w.strip() for w in want):
                return "`%s` exited %d:\n    %s" % (cmd, rc, out.strip().replace("\n", "\n    "))
            if any(w.strip() for w in want):
                why = compare(want, out.split("\n"), b.notes)
                if why:
                    return "`%s`:\n    %s" % (cmd, why)
        return None

    def script(self, b):
        rc, out = self.sh("set -e\n" + b.text)
        return None if rc == 0 else "exited %d:\n    %s" % (rc, out.strip()[-2000:])

    def py(self, b):
        if not self.python or not os.path.exists(self.python):
            self.skipped.append("%s: no venv to run it with (XSTAGE_DOCS_PYTHON %s: the "
                                "python_install test made none)" % (b.where(), self.python))
            return "skipped"
        r = subprocess.run([self.python, "-c", b.text], cwd=self.scratch, env=self.env,
                           capture_output=True, text=True, timeout=300)
        if r.returncode != 0:
            return "exited %d:\n    %s" % (r.returncode, r.stderr.strip()[-2000:])
        if b.output is not None:
            return compare(b.output.text.split("\n"), r.stdout.split("\n"), b.output.notes)
        return None

    def c(self, b):
        cc = shutil.which(os.environ.get("CC", "cc"))
        if not cc:
            return "no C compiler"
        d = tempfile.mkdtemp(dir=self.scratch)
        src = os.path.join(d, "snippet.c")
        # a snippet's #include lines go above main()
        lines = b.text.split("\n")
        incs = [l for l in lines if l.startswith("#include")]
        body = [l for l in lines if not l.startswith("#include")]
        with open(src, "w") as f:
            f.write(PRELUDE.replace("@@INCLUDES@@", "\n".join(incs))
                    .replace("@@SNIPPET@@", "\n".join(body)))
        exe = os.path.join(d, "snippet")
        # the shared libraries of the build: the measure one brings its own
        # MPI and CUDA where they were built in
        r = subprocess.run([cc, "-std=c11", "-Wall", "-Wno-unused", "-Wno-shadow",
                            "-I" + os.path.join(self.src, "include"), "-I" + self.scratch,
                            src, "-o", exe, "-L" + self.build, "-lxstage-measure", "-lxstage",
                            "-Wl,-rpath," + self.build],
                           capture_output=True, text=True, cwd=self.scratch)
        if r.returncode != 0:
            return "does not compile:\n    " + r.stderr.strip()[-2000:].replace("\n", "\n    ")
        r = subprocess.run([exe], capture_output=True, text=True, cwd=self.scratch,
                           timeout=120)
        if r.returncode != 0:
            return "exited %d: %s" % (r.returncode, (r.stdout + r.stderr).strip()[-1000:])
        return None

    def json_block(self, b):
        n = b.notes
        path = os.path.join(self.scratch, "block.json")
        with open(path, "w") as f:
            f.write(b.text)
        if n.get("program"):
            cmd = "xstage predict --program block.json --profile h200-nvlink"
        elif n.get("profile"):
            cmd = "xstage profiles show block.json"
        elif n.get("grid"):
            cmd = "xstage sweep megamoe --profile h200-nvlink --grid block.json --csv"
        elif n.get("moe-config"):
            cmd = "xstage plan megamoe --config block.json --profile h200-nvlink"
        elif "keys" in n:
            return self.keys(b, n["keys"])
        else:
            return "a json block needs an annotation (program, profile, grid, moe-config, " \
                   "keys of `COMMAND`)"
        rc, out = self.sh(cmd)
        return None if rc == 0 else "`%s` refused it:\n    %s" % (cmd, out.strip())

    def keys(self, b, cmd):
        rc, out = self.sh(cmd)
        if rc != 0:
            return "`%s` exited %d: %s" % (cmd, rc, out.strip()[-1000:])
        try:
            doc = json.loads(out)
        except ValueError as e:
            return "`%s` printed no JSON: %s" % (cmd, e)
        try:
            sketch = json.loads(sketch_to_json(b.text))
        except ValueError as e:
            return "the page's sketch does not read as JSON with sets of keys: %s" % e
        diffs = []
        shape_diff(sketch, doc, "", diffs)
        if diffs:
            return "`%s` against the page:\n    %s" % (cmd, "\n    ".join(diffs[:20]))
        return None

    def synopsis(self, b):
        text = b.text.strip("\n")
        if not text.startswith("xstage "):
            return "a block without a kind that is not a synopsis (xstage ...): give it one"
        cmds, cur = [], None
        for line in text.split("\n"):
            if line.startswith("xstage ") or line.startswith("mpirun "):
                cur = [line]
                cmds.append(cur)
            else:
                cur.append(line)
        for c in cmds:
            words = " ".join(" ".join(c).split())
            sub = []
            for word in words.split()[1:3]:
                if word.startswith("-") or not re.match(r"^[a-z]+$", word):
                    break
                sub.append(word)
            if not sub:
                return "an empty synopsis"
            usage = self.usage(sub)
            if usage is None:
                return "no --help for `xstage %s`" % " ".join(sub)
            if b.notes.get("usage subset"):
                flags = set(re.findall(r"--[a-z][a-z-]*", words))
                helptext = self.help_text(sub)
                extra = sorted(f for f in flags if f not in helptext)
                if extra:
                    return "flags not in `xstage %s --help`: %s" % (" ".join(sub), extra)
            elif words not in usage:
                return "`%s` is not a usage line of `xstage %s --help`:\n    %s" % (
                    words, " ".join(sub), "\n    ".join(usage))
        return None

    def help_text(self, sub):
        for n in (2, 1):
            rc, out = self.sh("xstage %s --help" % " ".join(sub[:n]))
            if rc == 0:
                return out
        return ""

    def usage(self, sub):
        """The usage commands of the help (white space collapsed)."""
        out = self.help_text(sub)
        if not out:
            return None
        lines = out.split("\n")
        block = []
        for line in lines:
            if not line.strip():
                break
            block.append(line)
        cmds, cur = [], None
        for line in block:
            s = line.strip()
            if s.startswith("usage:"):
                s = s[len("usage:"):].strip()
            if s.startswith("xstage "):
                cur = [s]
                cmds.append(cur)
            elif cur is not None:
                cur.append(s)
        return [" ".join(" ".join(c).split()) for c in cmds]


def pages(src, only):
    """(page, on, why) from tests/docs_pages.txt."""
    out = []
    with open(os.path.join(src, "tests", "docs_pages.txt")) as f:
        for n, line in enumerate(f, 1):
            line = line.split("#", 1)[0].strip()
            if not line:
                continue
            parts = line.split(None, 2)
            if len(parts) < 2 or parts[1] not in ("on", "off"):
                raise SystemExit("docs_pages.txt:%d: expected PAGE on|off [why]" % n)
            if parts[1] == "off" and len(parts) < 3:
                raise SystemExit("docs_pages.txt:%d: a page switched off says why" % n)
            if not only or parts[0] in only:
                out.append((parts[0], parts[1] == "on", parts[2] if len(parts) > 2 else ""))
    # a page named on the command line and not listed (a test's fixture)
    listed = {p for p, _, _ in out}
    for page in only:
        if page not in listed and os.path.exists(os.path.join(src, page)):
            out.append((page, True, ""))
    return out


def main(argv):
    if len(argv) < 3 or argv[1] in ("-h", "--help"):
        print(__doc__)
        return 0 if len(argv) > 1 and argv[1] in ("-h", "--help") else 2
    update = "--update-figures" in argv
    argv = [a for a in argv if a != "--update-figures"]
    src, build = os.path.abspath(argv[1]), os.path.abspath(argv[2])
    python = os.environ.get("XSTAGE_DOCS_PYTHON")
    listed = pages(src, argv[3:])
    known = {p for p, _, _ in listed}
    for md in ["README.md", "python/README.md"] + sorted(
            "docs/" + f for f in os.listdir(os.path.join(src, "docs")) if f.endswith(".md")):
        if not argv[3:] and md not in known:
            print("docs_check: %s is not in tests/docs_pages.txt (switch it on or off there)"
                  % md)
            return 1
    runner = Runner(src, build, python)
    figures, outputs = 0, {}
    try:
        for page, on, why in listed:
            if not on:
                print("docs_check: %s: off (%s)" % (page, why))
                continue
            with open(os.path.join(src, page)) as f:
                text = f.read()
            if not update:
                for b in blocks_of(page, text):
                    runner.run(b)
            # the figures of its prose, against the commands that print them
            fp = docs_figures.Page(page, text, runner.sh)
            failed, passed = fp.check(outputs)
            figures += passed
            for where, why in failed:
                runner.failures.append("%s: figure: %s" % (where, why))
            if update:
                new, n = fp.updated()
                if n:
                    docs_figures.write_atomically(os.path.join(src, page), new)
                print("docs_check: %s: %d figures written" % (page, n))
    finally:
        shutil.rmtree(runner.scratch, ignore_errors=True)
    print("docs_check: %d figures of the prose agree with their commands" % figures)
    for s in runner.skipped:
        print("docs_check: skipped %s" % s)
    for f in runner.failures:
        print("docs_check: FAIL %s" % f)
    print("docs_check: %d blocks passed, %d failed, %d skipped"
          % (runner.passed, len(runner.failures), len(runner.skipped)))
    return 1 if runner.failures else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
