#!/usr/bin/env python3
"""Autotune a MegaMoE kernel over batch sizes: plan one rank of an
expert-parallel MoE layer at each token count of a range and print the
option the planner recommends (schedule, knob rule and values), its
predicted time and the unfused sequential schedule's beside it.

    python3 python/examples/autotune.py --preset deepseek-v3 \\
        --profile h200-nvlink --min 64 --max 8192

(with the package installed; from a source tree, PYTHONPATH=python)
"""
import argparse
import sys

import xstage


def knob_words(schedule, k):
    """The knobs that matter for a schedule (an xstage.Knobs), in words."""
    if schedule in ("fused-wave", "fused-split"):
        return "experts/wave %d" % k.experts_per_wave if k.experts_per_wave else "all experts"
    if schedule == "fused-lag":
        return "lag %d, group %d" % (k.lag, k.group)
    if schedule == "fused-interleaved":
        return "warm-up %d" % k.warmup
    return "-"


def token_counts(lo, hi, per_octave):
    """Whole token counts from lo to hi, per_octave points per doubling."""
    out, t = [], float(lo)
    while t <= hi * (1 + 1e-9):
        v = int(round(t))
        if not out or v > out[-1]:
            out.append(v)
        t *= 2 ** (1.0 / per_octave)
    if out[-1] != hi:
        out.append(int(hi))
    return out


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--preset", default="deepseek-v3", help="a MegaMoE preset (%s)"
                    % ", ".join(xstage.moe_presets()))
    ap.add_argument("--profile", default="h200-nvlink",
                    help="a built-in profile or a profile JSON file")
    ap.add_argument("--ep", type=int, default=8, help="expert-parallel ranks")
    ap.add_argument("--min", type=int, default=64, help="fewest tokens per rank")
    ap.add_argument("--max", type=int, default=8192, help="most tokens per rank")
    ap.add_argument("--per-octave", type=int, default=1,
                    help="token counts per doubling (1: powers of two)")
    ap.add_argument("--tolerance", type=float, default=0.01,
                    help="options within this fraction of the fastest count as equal")
    args = ap.parse_args(argv)
    if not 1 <= args.min <= args.max:
        ap.error("expected 1 <= --min <= --max")

    prof = xstage.profile(args.profile)  # loaded once, used for every plan
    print("MegaMoE autotune: %s, EP %d, on %s (xstage %s)"
          % (args.preset, args.ep, prof.name, xstage.version()))
    head = ("%8s  %-18s %-10s %-18s %12s %12s %9s %8s"
            % ("tokens", "schedule", "rule", "knobs", "time (us)", "seq. (us)",
               "speedup", "bound"))
    print(head)
    print("-" * len(head))
    last = None
    for t in token_counts(args.min, args.max, args.per_octave):
        plan = xstage.plan_megamoe(args.preset, prof, tokens=t, ep=args.ep,
                                   tolerance=args.tolerance)
        chosen = plan.recommended.chosen
        sched = plan.schedules[chosen.schedule]
        seq_s = plan.schedules["sequential"].burstgap_s
        choice = (chosen.schedule, chosen.rule)
        mark = "*" if last is not None and choice != last else " "
        last = choice
        print("%s%7d  %-18s %-10s %-18s %12.1f %12.1f %8.2fx %8s"
              % (mark, t, chosen.schedule, chosen.rule,
                 knob_words(chosen.schedule, chosen.knobs),
                 chosen.time_s * 1e6, seq_s * 1e6, seq_s / chosen.time_s,
                 sched.breakdown["bound"]))
    print("\n(time: the recommended option's predicted time per layer and rank under "
          "burstgap;\n seq.: the unfused sequential schedule; speedup = seq. / time; "
          "*: the choice changes)")
    return 0


if __name__ == "__main__":
    try:
        sys.exit(main())
    except xstage.Error as e:
        print("autotune: %s" % e, file=sys.stderr)
        sys.exit(2)
