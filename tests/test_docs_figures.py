#!/usr/bin/env python3
"""test_docs_figures.py: the prose-figure checker (docs_figures.py) against
pages written here and a command that prints a fixed document: a figure
that matches passes, one changed by more than its rounding fails naming
both values, a range and signs read as the page writes them, an unchecked
figure in a region fails, quoted figures pass, and --update-figures writes
the command's values at the digits shown, after which the page passes.

    test_docs_figures.py
"""
import json
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import docs_figures  # noqa: E402

DOC = {"summary": {"median_abs_error": 0.0940488, "max_abs_error": 0.7399},
       "rows": [{"arm": "split", "error": -0.1108}, {"arm": "split", "error": -0.3351},
                {"arm": "lag", "error": 0.0921}]}
RUNS = []


def run(cmd):
    RUNS.append(cmd)
    return (0, json.dumps(DOC)) if cmd == "xstage validate megamoe --json" else (1, "no")


def check(text):
    page = docs_figures.Page("t.md", text, run)
    failures, passed = page.check({})
    return page, failures, passed


LET = "<!-- doctest: let moe = `xstage validate megamoe --json` -->\n\n"


def expect(cond, what):
    if not cond:
        print("FAIL: " + what)
        sys.exit(1)


def main():
    # a figure as the command prints it, rounded as the page shows it
    _, f, n = check(LET + "All rows 9.4%<!-- = pct(moe[\"summary\"][\"median_abs_error\"]) -->.\n")
    expect(not f and n == 1, "9.4%% against 9.40488: %s" % f)
    # changed by more than half a unit of its last digit (and 1%): fails,
    # naming what the page shows and what the command gives
    _, f, n = check(LET + "All rows 9.6%<!-- = pct(moe[\"summary\"][\"median_abs_error\"]) -->.\n")
    expect(len(f) == 1 and n == 0 and "9.6%" in f[0][1] and "9.40488" in f[0][1],
           "9.6%% passed or said nothing useful: %s" % f)
    expect(f[0][0] == "t.md:3", "the failure's line: %s" % f[0][0])
    # a range is two numbers, unsigned (the hyphen joins them), a written
    # sign (U+2212) is the number's
    range_ = ("split 11-34%<!-- = pct(span(mag(col(rows(moe, arm=\"split\"), \"error\")))) -->,"
              " lag \u22129.2%<!-- = pct(col(rows(moe, arm=\"lag\"), \"error\")) -->\n")
    _, f, n = check(LET + range_)
    expect(len(f) == 1 and n == 1 and "\u22129.2%" in f[0][1],
           "the lag row is +9.2%%, the page says \u22129.2%%: %s" % f)
    # a figure in a checked region with no command, and one quoted
    region = ("<!-- doctest: figures -->\nThe paper says 1.43x<!-- = quoted(1) -->, "
              "and the model 1.2x.\n<!-- doctest: end figures -->\n")
    _, f, n = check(region)
    expect(len(f) == 1 and "1.2x is not checked" in f[0][1] and n == 1,
           "the unchecked 1.2x: %s" % f)
    # numbers inside words, paths, hashes and code spans are not figures
    _, f, n = check("<!-- doctest: figures -->\nh200 sm90 3f9268b PR 440 `--fail-above 0.13`"
                    " m64n128\n<!-- doctest: end figures -->\n")
    expect(not f, "a word's digits taken for a figure: %s" % f)
    # the command runs once for every figure of the page
    RUNS.clear()
    check(LET + "a 9.4%<!-- = pct(moe[\"summary\"][\"median_abs_error\"]) --> b 74.0%"
          "<!-- = pct(moe[\"summary\"][\"max_abs_error\"]) -->\n")
    expect(RUNS == ["xstage validate megamoe --json"], "runs: %s" % RUNS)
    # --update-figures: the command's values at the digits the page shows,
    # signs kept as written; the page then passes
    text = LET + ("All rows 9.6%<!-- = pct(moe[\"summary\"][\"median_abs_error\"]) --> and split "
                  "19-33%<!-- = pct(span(mag(col(rows(moe, arm=\"split\"), \"error\")))) -->, lag "
                  "+1.0%<!-- = pct(col(rows(moe, arm=\"lag\"), \"error\")) -->.\n")
    page, f, _ = check(text)
    expect(len(f) == 3, "three stale figures: %s" % f)
    new, edits = page.updated()
    expect(edits == 4, "four numbers written, not %d" % edits)
    expect("All rows 9.4%<!--" in new and "split 11-34%<!--" in new and "lag +9.2%<!--" in new,
           "updated page: %s" % new)
    _, f, n = check(new)
    expect(not f and n == 3, "the updated page: %s" % f)
    # a command that fails is the figure's failure, not a crash
    _, f, _ = check("<!-- doctest: let bad = `xstage nothing` -->\nx 1.0%<!-- = bad -->\n")
    expect(len(f) == 1 and "exited 1" in f[0][1], "a failing command: %s" % f)
    print("test_docs_figures: ok")
    return 0


if __name__ == "__main__":
    sys.exit(main())
