"""docs_figures.py: the figures of a page's prose, checked against the
commands that print them (docs_check.py runs it on every page it runs).

A page names the commands its figures come from, once, anywhere:

    <!-- doctest: let moe = `xstage validate megamoe --json` -->

Each runs once (in docs_check's scratch folder); the name holds what it
printed, parsed as JSON, or the text when it is not JSON. A figure, or a
run of figures, is followed by the expression that computes it:

    All rows 9.4%<!-- = pct(moe["summary"]["median_abs_error"]) -->

The expression is Python over those names and the helpers below. Its value,
a number or a list of them, is compared with as many numbers just before
the comment (the last ones in the text since the paragraph's start or the
previous such comment): each must be within half a unit of the last digit
the page shows, or 1%. None in a list stands for a number quoted from a
source (a table's column of published figures between computed ones). A
table is one paragraph: one comment after it covers its cells in reading
order. A sign the page writes (+, -, or U+2212) is the
number's; a hyphen right after a digit or a % joins a range (19-33%).
Numbers in code spans and inside words (h200, sm90, 3f9268b) are not
figures.

`<!-- doctest: def NAME(ARGS) = EXPRESSION -->` defines a function the
page's expressions call (it may read the lets and the helpers).

Between `<!-- doctest: figures -->` and `<!-- doctest: end figures -->`
every figure (a number with a unit: %, x, ns, us, ms, s, B/s rates; or one
with a decimal point) must be checked so, or be marked as quoted from a
source that no command prints (`<!-- = quoted(N) -->`: the last N numbers).

    docs_check.py SRC BUILD --update-figures PAGE...

writes each checked figure that differs with the value its command gives
now, at the digits the page shows (the prose around it is the writer's).
"""
import json
import math
import os
import re
import tempfile

UNIT = r"(?:%|\u00d7|x(?![A-Za-z0-9])|[nmu]?s(?![A-Za-z0-9/])|[KMGT]i?B/s|[kKMGT]i?B(?![A-Za-z0-9/])|B/s)"
NUM = re.compile(r"(?P<sign>[-+\u2212])?(?P<num>\d{1,3}(?:,\d{3})+(?![\d.])|\d+(?:\.\d+)?)"
                 r"(?P<unit>\s?" + UNIT + r")?")
COMMENT = re.compile(r"<!--(.*?)-->", re.S)
LET = re.compile(r"\s*doctest:\s*let\s+([A-Za-z_]\w*)\s*=\s*`([^`]+)`\s*$", re.S)
DEF = re.compile(r"\s*doctest:\s*def\s+([A-Za-z_]\w*)\(([^)]*)\)\s*=\s*(.*?)\s*$", re.S)
FIGURE = re.compile(r"\s*=\s*(.*?)\s*$", re.S)
FENCE = re.compile(r"^(\s*)```[^\n]*\n.*?^\s*```[ \t]*$", re.S | re.M)
SPAN = re.compile(r"`[^`\n]+`")


class Quoted:
    def __init__(self, n):
        self.n = n


class Number:
    def __init__(self, m, text):
        self.start = m.start("sign") if m.group("sign") else m.start("num")
        self.end = m.end()
        self.num_start, self.num_end = m.start("num"), m.end("num")
        sign = m.group("sign") or ""
        before = text[self.start - 1] if self.start > 0 else " "
        if sign and (before.isdigit() or before == "%"):
            sign = ""  # a range: 19-33%, 1%-2%
            self.start = self.num_start
        self.sign = sign
        self.text = m.group("num")
        self.unit = (m.group("unit") or "").strip()
        v = float(self.text.replace(",", ""))
        self.value = -v if sign in ("-", "\u2212") else v
        self.decimals = len(self.text.split(".")[1]) if "." in self.text else 0

    def is_figure(self):
        return bool(self.unit) or "." in self.text


def numbers(masked):
    out = []
    for m in NUM.finditer(masked):
        n = Number(m, masked)
        before = masked[n.start - 1] if n.start > 0 else " "
        after = masked[n.end] if n.end < len(masked) else " "
        if before.isalnum() or before in "_.@#/" or (not n.unit and (after.isalpha() or
                                                                  after == "_")):
            continue  # inside a word, a path or a hash
        out.append(n)
    return out


def spans(text):
    """The page's fenced blocks, HTML comments and code spans, as (start,
    end, kind), in order: read left to right, so that a comment may hold
    backticks (a let's command) and a code span may show a comment."""
    fences = [(m.start(), m.end()) for m in FENCE.finditer(text)]
    out, i = [], 0
    while i < len(text):
        f = next((f for f in fences if f[0] >= i), None)
        c, b = text.find("<!--", i), text.find("`", i)
        cands = [(p, k) for p, k in ((f[0] if f else -1, "fence"), (c, "comment"),
                                     (b, "code")) if p >= 0]
        if not cands:
            break
        p, kind = min(cands)
        if kind == "fence":
            end = f[1]
        elif kind == "comment":
            e = text.find("-->", p + 4)
            end = len(text) if e < 0 else e + 3
        else:
            m = SPAN.match(text, p)
            if not m:
                i = p + 1
                continue
            end = m.end()
        out.append((p, end, kind))
        i = end
    return out


def mask(text):
    """The page with what is not prose blanked (same length, newlines
    kept): fenced blocks, HTML comments, code spans."""
    t = list(text)
    for a, b, _ in spans(text):
        for k in range(a, b):
            if t[k] != "\n":
                t[k] = " "
    return "".join(t)


def median(vals):
    v = sorted(vals)
    if not v:
        raise ValueError("median of nothing")
    n = len(v)
    return v[n // 2] if n % 2 else (v[n // 2 - 1] + v[n // 2]) / 2


def get(doc, *path):
    """doc at a path: keys (and list indexes) in turn, or one dotted string
    ("summary.by_arm.fused-lag")."""
    if len(path) == 1 and isinstance(path[0], str):
        path = path[0].split(".") if path[0] else []
    for part in path:
        doc = doc[int(part)] if isinstance(doc, list) else doc[part]
    return doc


def rows(doc, **where):
    """The rows of a validate document whose keys match: a value, a list or
    tuple of values, or a test (a function); a__b is the key b of a."""
    out = []
    for r in doc["rows"] if isinstance(doc, dict) else doc:
        ok = True
        for k, want in where.items():
            v = r
            for part in k.split("__"):
                v = v.get(part) if isinstance(v, dict) else None
            if callable(want):
                ok = ok and v is not None and want(v)
            elif isinstance(want, (list, tuple, set)):
                ok = ok and v in want
            else:
                ok = ok and v == want
        if ok:
            out.append(r)
    if not out:
        raise ValueError("no row has %s" % where)
    return out


def col(rs, key):
    return [get(r, key) for r in rs]


def pct(x):
    return [100 * v for v in x] if isinstance(x, (list, tuple)) else 100 * x


def mag(x):
    return [abs(v) for v in x] if isinstance(x, (list, tuple)) else abs(x)


def span(vals):
    """The smallest and the largest: a range the page writes lo-hi."""
    return [min(vals), max(vals)]


def line_numbers(text, pattern, nth=0):
    """The numbers of the nth line of a text output that matches pattern."""
    hits = [l for l in text.split("\n") if re.search(pattern, l)]
    if len(hits) <= nth:
        raise ValueError("no line %d matching %r" % (nth, pattern))
    return [n.value for n in numbers(hits[nth])]


HELPERS = {"pct": pct, "mag": mag, "span": span, "median": median, "rows": rows, "col": col,
           "get": get, "quoted": Quoted, "line_numbers": line_numbers, "abs": abs,
           "min": min, "max": max, "len": len, "round": round, "sorted": sorted, "sum": sum,
           "zip": zip, "list": list, "set": set, "dict": dict, "any": any, "all": all,
           "float": float, "int": int,
           "math": math}


def close(shown, value):
    if not isinstance(value, (int, float)) or isinstance(value, bool):
        return False
    half = 0.5 * 10.0 ** (-shown.decimals)
    return abs(shown.value - value) <= max(0.01 * abs(value), half * 1.0001)


def formatted(shown, value, page_minus):
    if shown.decimals == 0 and abs(value - round(value)) < 1e-9:
        value = round(value)
    body = "%.*f" % (shown.decimals, abs(value))
    if "," in shown.text:
        whole, _, frac = body.partition(".")
        body = "{:,}".format(int(whole)) + ("." + frac if frac else "")
    if value < 0 and float(body.replace(",", "")) != 0:
        return (shown.sign if shown.sign in ("-", "\u2212") else page_minus) + body
    return ("+" if shown.sign == "+" else "") + body


class Page:
    def __init__(self, page, text, run):
        """run(command) -> (exit code, output)."""
        self.page, self.text, self.run = page, text, run
        self.masked = mask(text)
        self.nums = numbers(self.masked)
        self.lets, self.defs = {}, {}
        self.checks = []  # (line, figure comment, numbers, value or error)
        self.uncovered = []

    def line_of(self, pos):
        return self.text.count("\n", 0, pos) + 1

    def value_of(self, name, cache):
        cmd = self.lets[name]
        if cmd not in cache:
            rc, out = self.run(cmd)
            if rc != 0:
                cache[cmd] = RuntimeError("`%s` exited %d: %s" % (cmd, rc, out.strip()[-500:]))
            else:
                try:
                    cache[cmd] = json.loads(out)
                except ValueError:
                    cache[cmd] = out
        v = cache[cmd]
        if isinstance(v, Exception):
            raise v
        return v

    def env(self, expr, cache):
        """The names an expression reads: the helpers, the page's defs, and
        the outputs of the lets it (or a def it calls) reads, each command
        run once."""
        env = dict(HELPERS, __builtins__={})
        seen, todo = set(), [expr]
        while todo:
            for name in set(re.findall(r"[A-Za-z_]\w*", todo.pop())) - seen:
                seen.add(name)
                if name in self.defs:
                    todo.append(self.defs[name][1])
        for name in seen & set(self.lets):
            env[name] = self.value_of(name, cache)
        for name in seen & set(self.defs):
            args, body = self.defs[name]
            env[name] = eval("lambda %s: %s" % (args, body), env)
        return env

    def check(self, cache):
        """Every figure comment of the page: a list of (where, why) for the
        failures and the count passed."""
        events = []
        for start, end, kind in spans(self.text):
            if kind != "comment":
                continue
            m = COMMENT.match(self.text, start)
            if not m:
                continue
            body = m.group(1)
            let = LET.match(body)
            if let:
                self.lets[let.group(1)] = let.group(2)
                continue
            d = DEF.match(body)
            if d:
                self.defs[d.group(1)] = (d.group(2), d.group(3))
                continue
            if re.match(r"\s*doctest:\s*figures\s*$", body):
                events.append((m.start(), "open", None))
            elif re.match(r"\s*doctest:\s*end figures\s*$", body):
                events.append((m.start(), "close", None))
            else:
                f = FIGURE.match(body)
                if f and body.lstrip().startswith("="):
                    events.append((m.start(), "figure", (m.end(), f.group(1))))
        breaks = [m.end() for m in re.finditer(r"\n[ \t]*\n", self.masked)]
        failures, passed, covered = [], 0, set()
        prev_end = 0
        regions, open_at = [], None
        for pos, kind, data in sorted(events, key=lambda e: e[0]):
            if kind == "open":
                open_at = pos
                continue
            if kind == "close":
                if open_at is not None:
                    regions.append((open_at, pos))
                open_at = None
                continue
            end, expr = data
            start = max([prev_end] + [b for b in breaks if b <= pos])
            seg = [n for n in self.nums if start <= n.start and n.end <= pos]
            prev_end = end
            where = "%s:%d" % (self.page, self.line_of(pos))
            try:
                value = eval(expr, self.env(expr, cache))
            except Exception as e:  # the expression's own error, reported
                failures.append((where, "figure `%s`: %s: %s" % (expr, type(e).__name__, e)))
                continue
            if isinstance(value, Quoted):
                got = seg[-value.n:] if value.n <= len(seg) else None
                if got is None:
                    failures.append((where, "quoted(%d): only %d numbers before it"
                                     % (value.n, len(seg))))
                    continue
                covered.update(id(n) for n in got)
                passed += 1
                continue
            values = list(value) if isinstance(value, (list, tuple)) else [value]
            if len(values) > len(seg):
                failures.append((where, "figure `%s` gives %d values, the text before it has "
                                 "%d numbers" % (expr, len(values), len(seg))))
                continue
            shown = seg[len(seg) - len(values):]
            covered.update(id(n) for n in shown)
            bad = [(s, v) for s, v in zip(shown, values) if v is not None and not close(s, v)]
            self.checks.append((shown, values))
            if bad:
                failures.append((where, "the page shows %s, the command gives %s (`%s`)" % (
                    ", ".join(self.text[s.start:s.end] for s, _ in bad),
                    ", ".join(_show(v) for _, v in bad), expr)))
            else:
                passed += 1
        if open_at is not None:
            failures.append(("%s:%d" % (self.page, self.line_of(open_at)),
                             "`doctest: figures` without `doctest: end figures`"))
        for a, b in regions:
            for n in self.nums:
                if a <= n.start < b and n.is_figure() and id(n) not in covered:
                    failures.append(("%s:%d" % (self.page, self.line_of(n.start)),
                                     "the figure %s is not checked against a command (follow "
                                     "it with <!-- = EXPRESSION -->, or quoted(N) for a "
                                     "source's)" % self.text[n.start:n.end].strip()))
        return failures, passed

    def updated(self):
        """The page with every checked figure written as its value."""
        minus = "\u2212" if "\u2212" in self.text else "-"
        edits = []
        for shown, values in self.checks:
            for s, v in zip(shown, values):
                if isinstance(v, (int, float)) and not close(s, v):
                    edits.append((s.start if s.sign else s.num_start, s.num_end,
                                  formatted(s, v, minus)))
        text = self.text
        for a, b, new in sorted(edits, reverse=True):
            text = text[:a] + new + text[b:]
        return text, len(edits)


def _show(v):
    return "%.6g" % v if isinstance(v, (int, float)) else repr(v)


def write_atomically(path, text):
    d = os.path.dirname(os.path.abspath(path))
    fd, tmp = tempfile.mkstemp(dir=d, prefix=".figures-")
    with os.fdopen(fd, "w") as f:
        f.write(text)
    os.replace(tmp, path)
