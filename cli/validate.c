/*
 * validate.c: `xstage validate megamoe` and `xstage validate flashattn`
 * put the planners' predictions beside published timings of the kernels
 * they plan, row by row, with the summary that says how far the model is
 * from real kernels.
 */
#define _POSIX_C_SOURCE 200809L
#include "common.h"

#include <getopt.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

static void help(FILE *f) {
  fprintf(f,
          "usage: xstage validate (megamoe | flashattn | ep) --data FILE [--json]\n"
          "                       [--svg FILE] [--fail-above FRACTION]\n"
          "\n"
          "Predicts every row of a CSV of published MoE kernel timings (columns\n"
          "source, gpu, ep, hidden, intermediate, experts, topk, shared_experts,\n"
          "act_dtype, weight_dtype, tokens, arm, time_us; others are ignored) on\n"
          "the built-in profile its gpu column names, for its arm (sequential,\n"
          "fused-split, fused-wave, fused-interleaved, fused-lag), and prints\n"
          "predicted beside measured with error = predicted / measured - 1, then\n"
          "the median and largest |error| overall, per arm and per source, and how\n"
          "often the faster of two arms measured on one config is predicted faster.\n"
          "A prediction never reads time_us.\n"
          "\n"
          "flashattn: ring attention timings (columns source, gpu, cp, seq_per_rank,\n"
          "heads, kv_heads, head_dim, causal, layout, kernel, pass, arm, time_us),\n"
          "arms local, sequential, dedicated-stream, dedicated-sms, piggyback;\n"
          "pairs are a ring beside the local arm (or another layout) of one shape.\n"
          "\n"
          "ep: expert-parallel dispatch and combine timings (xstage validate ep\n"
          "--help).\n"
          "\n"
          "  --data FILE          the CSV (data/published/megamoe.csv or\n"
          "                       data/published/ring-attention.csv in the source tree)\n"
          "  --json               {\"rows\": [...], \"summary\": {...}} (docs/validate.md)\n"
          "  --svg FILE           predicted against measured, log axes, +-20%% band\n"
          "  --fail-above F       exit 1 when any arm's median |error| exceeds F\n"
          "                       (a fraction, e.g. 0.25), after printing\n");
}


static void progress(size_t done, void *ctx) {
  (void)ctx;
  fprintf(stderr, "\r  predicting row %zu", done);
}

int cli_validate_fraction(const char *text, double *out) {
  char *end;
  *out = strtod(text, &end);
  if (*end || !(*out >= 0) || !isfinite(*out))
    return cli_usage_error("validate", "--fail-above: expected a fraction >= 0, "
                                       "got \"%s\"", text);
  return 0;
}

int cli_validate_load(const char *data, const char *svg, cli_validate_fn fn,
                      xs_validate_set *set) {
  if (!data)
    return cli_usage_error("validate", "--data FILE is required");
  if (cli_refuse_overwrite("validate", &data, 1, &svg, 1))
    return EXIT_INPUT;
  char *text;
  size_t len;
  int rrc = cli_read_file("validate", data, CLI_INPUT_LIMIT, &text, &len);
  if (rrc)
    return rrc;
  xs_error err;
  int tty = isatty(2);
  xs_status st = fn(text, len, data, set, tty ? progress : NULL, NULL, &err);
  free(text);
  if (tty)
    fprintf(stderr, "\r%40s\r", "");
  return st ? cli_error("validate", &err) : 0;
}

int cmd_validate(int argc, char **argv) {
  if (argc >= 2 && (!strcmp(argv[1], "--help") || !strcmp(argv[1], "-h"))) {
    help(stdout);
    return EXIT_OK;
  }
  if (argc >= 2 && !strcmp(argv[1], "ep"))
    return cli_validate_ep(argc, argv);
  if (argc < 2 || (strcmp(argv[1], "megamoe") && strcmp(argv[1], "flashattn")))
    return cli_usage_error("validate", "expected a planner: megamoe, flashattn or ep");
  int fa = !strcmp(argv[1], "flashattn");
  static const struct option opts[] = {
      {"data", required_argument, 0, 'd'}, {"json", no_argument, 0, 'j'},
      {"svg", required_argument, 0, 'S'},  {"fail-above", required_argument, 0, 'f'},
      {"help", no_argument, 0, 'h'},       {0, 0, 0, 0}};
  const char *data = NULL, *svg = NULL;
  double fail_above = INFINITY;
  int json = 0, c;
  opterr = 0;
  optind = 2;
  while ((c = getopt_long(argc, argv, ":d:jS:f:h", opts, NULL)) != -1) {
    switch (c) {
    case 'd': data = optarg; break;
    case 'j': json = 1; break;
    case 'S': svg = optarg; break;
    case 'f':
      if (cli_validate_fraction(optarg, &fail_above))
        return EXIT_INPUT;
      break;
    case 'h': help(stdout); return EXIT_OK;
    default: return cli_bad_flag("validate", argc, argv);
    }
  }
  if (optind < argc)
    return cli_usage_error("validate", "unexpected argument \"%s\"", argv[optind]);
  xs_validate_set set;
  xs_error err;
  int lrc = cli_validate_load(data, svg, fa ? xs_validate_flashattn : xs_validate_megamoe,
                              &set);
  if (lrc)
    return lrc;
  /* arms and sources in order of first appearance */
  size_t narms = xs_validate_distinct(&set, 0, NULL, 0);
  size_t nsources = xs_validate_distinct(&set, 1, NULL, 0);
  const char **arms = malloc((narms + nsources + 1) * sizeof *arms);
  const char **sources = arms + narms;
  if (!arms) {
    xs_validate_free(&set);
    fprintf(stderr, "xstage validate: out of memory\n");
    return EXIT_MACHINE;
  }
  xs_validate_distinct(&set, 0, arms, narms);
  xs_validate_distinct(&set, 1, sources, nsources);
  double mx, med = xs_validate_median(&set, NULL, NULL, NULL, &mx);
  int rc = EXIT_OK;
  if (json) {
    char *s;
    if (xs_validate_json(&set, &s, &err)) {
      rc = cli_error("validate", &err);
    } else {
      rc = cli_write_document("validate", "-", s);
    }
  } else if (fa) {
    printf("Ring attention validation: %zu rows of %s, predicted under burstgap on "
           "each row's built-in profile\n\n", set.nrows, data);
    printf("  %-22s %-12s %2s %6s %5s %-10s %-7s %-16s %11s %11s %8s  %s\n", "source",
           "gpu", "cp", "seq", "heads", "layout", "pass", "arm", "measured",
           "predicted", "error", "bound");
    for (size_t i = 0; i < set.nrows; i++) {
      const xs_validate_row *r = &set.rows[i];
      char hd[32];
      snprintf(hd, sizeof hd, "%g/%g", r->fa.heads_q, r->fa.heads_kv);
      printf("  %-22.22s %-12s %2g %6g %5s %-10s %-7s %-16s %8.0f us %8.0f us "
             "%+7.1f%%  %s\n", r->source, r->gpu, r->fa.cp, r->tokens, hd, r->layout,
             r->pass, r->arm, r->measured_us, r->predicted_us, 100 * r->error,
             r->fa_breakdown.bound ? r->fa_breakdown.bound : "");
    }
  } else {
    printf("MegaMoE validation: %zu rows of %s, predicted under burstgap on each "
           "row's built-in profile\n\n", set.nrows, data);
    printf("  %-22s %-12s %6s %-17s %11s %11s %8s  %-8s %s\n", "source", "gpu",
           "tokens", "arm", "measured", "predicted", "error", "bound", "knobs");
    for (size_t i = 0; i < set.nrows; i++) {
      const xs_validate_row *r = &set.rows[i];
      char knobs[64];
      xs_moe_schedule s = (xs_moe_schedule)xs_moe_schedule_from_name(r->arm);
      cli_moe_knobs(s, &r->knobs, knobs, sizeof knobs);
      printf("  %-22.22s %-12s %6g %-17s %8.1f us %8.1f us %+7.1f%%  %-8s %s\n",
             r->source, r->gpu, r->tokens, r->arm, r->measured_us, r->predicted_us,
             100 * r->error, r->breakdown.bound ? r->breakdown.bound : "", knobs);
    }
  }
  if (!json) {
    printf("\n  |error|: median %.1f%%, largest %.1f%% over %zu rows\n", 100 * med,
           100 * mx, set.nrows);
    for (size_t k = 0; k < narms; k++) {
      size_t n;
      double m2, m = xs_validate_median(&set, xs_validate_same_arm, (void *)arms[k], &n, &m2);
      printf("    arm %-18s median %5.1f%%, largest %5.1f%% (%zu rows)\n", arms[k],
             100 * m, 100 * m2, n);
    }
    for (size_t k = 0; k < nsources; k++) {
      size_t n;
      double m2, m = xs_validate_median(&set, xs_validate_same_source, (void *)sources[k], &n, &m2);
      printf("    source %-15s median %5.1f%%, largest %5.1f%% (%zu rows)\n",
             sources[k], 100 * m, 100 * m2, n);
    }
    /* pairs of arms on one config: which is faster, and the ratio */
    xs_validate_pairs pr;
    if (xs_validate_compare_arms(&set, &pr, &err)) {
      xs_validate_free(&set);
      free(arms);
      return cli_error("validate", &err);
    }
    if (pr.pairs) {
      printf("\n  faster of two arms on one config predicted faster: %zu of %zu\n",
             pr.agree, pr.pairs);
      printf("  ratio of two arms on one config (predicted / measured - 1): median "
             "|error| %.1f%%, largest %.1f%%\n", 100 * pr.median_ratio_error,
             100 * pr.max_ratio_error);
    }
    if (fa)
      printf("  (bound: what dominates the predicted time: compute, merge of partial\n"
             "  outputs, fixed per-step costs or exposed communication)\n");
    else
      printf("  (bound: what dominates the predicted time: hbm, compute, fixed costs or "
             "link; knobs: the kernel's searched setting)\n");
    cli_flush_stdout();
  }
  if (!rc && svg) {
    char title[200];
    snprintf(title, sizeof title, "xstage validate %s: %zu rows, median |error| "
             "%.1f%%", argv[1], set.nrows, 100 * med);
    char *s = xs_validate_svg(&set, title);
    if (!s) {
      fprintf(stderr, "xstage validate: out of memory\n");
      rc = EXIT_MACHINE;
    } else {
      rc = cli_write_output("validate", svg, s);
      free(s);
    }
  }
  if (!rc && isfinite(fail_above))
    for (size_t k = 0; k < narms; k++) {
      size_t n;
      double m = xs_validate_median(&set, xs_validate_same_arm, (void *)arms[k], &n, NULL);
      if (m > fail_above) {
        fprintf(stderr, "xstage validate: arm %s: median |error| %.1f%% is above "
                        "--fail-above %.1f%%\n", arms[k], 100 * m, 100 * fail_above);
        rc = EXIT_MACHINE;
      }
    }
  xs_validate_free(&set);
  free(arms);
  return rc;
}
