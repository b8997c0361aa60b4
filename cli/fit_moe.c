/*
 * fit_moe.c: `xstage fit megamoe`: the MegaMoE kernel model's terms
 * fitted to a user's own kernel timings (docs/tune.md), written as a
 * profile that `validate megamoe --profile` and the planners take.
 */
#define _POSIX_C_SOURCE 200809L
#include "common.h"

#include <getopt.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

static void help(FILE *f) {
  fprintf(f,
          "usage: xstage fit megamoe --data CSV --profile BASE [-o TUNED.json]\n"
          "                          [--terms LIST] [--source NAME] [--bootstrap N]\n"
          "                          [--seed N]\n"
          "\n"
          "Fits the MegaMoE kernel model to kernel timings in the validate CSV format\n"
          "(docs/validate.md): the rows whose gpu is BASE's name, each predicted as\n"
          "`xstage validate megamoe` predicts it. The model's terms (achieved GEMM\n"
          "throughput, tile overhead, L2 and HBM bandwidth, the link's drain and issue\n"
          "rates, capacity and latency, launch, barrier, setup, host round trip and\n"
          "all-to-all fixed costs) are scaled to minimise the squared log error,\n"
          "each within x1/4 to x4 of BASE, with the uncertainty of bootstrap resamples\n"
          "of the rows. Only terms the rows determine are fitted: a row must be\n"
          "sensitive to it, its effect must not be a combination of the others', two\n"
          "rows a term. The tuned profile keeps BASE's name (so validate --profile\n"
          "uses it for those rows) and names each fitted number's source \"fitted:\".\n"
          "\n"
          "  --data CSV           the timings (at most 64 MiB)\n"
          "  --profile BASE       the profile to start from: built-in name or file\n"
          "  -o, --output FILE    write the tuned profile (JSON); without it, only print\n"
          "  --terms LIST         fit these terms (gemm, tile, l2, hbm, link, link-issue,\n"
          "                       capacity, latency, launch, barrier, setup, host-sync,\n"
          "                       a2a), each of which the rows must determine (else\n"
          "                       exit 2, naming why); default: every term they determine\n"
          "  --source NAME        only the rows of this source\n"
          "  --bootstrap N        resamples of the rows for the uncertainty (default 200)\n"
          "  --seed N             of the resampling (default: a fixed one)\n");
}

static int parse_terms(const char *text, unsigned *mask) {
  *mask = 0;
  char buf[512];
  if (strlen(text) >= sizeof buf)
    return cli_usage_error("fit megamoe", "--terms: the list is too long");
  strcpy(buf, text);
  for (char *t = buf, *next; t; t = next) {
    next = strchr(t, ',');
    if (next)
      *next++ = '\0';
    int k = xs_moe_term_from_name(t);
    if (k < 0)
      return cli_usage_error("fit megamoe",
                             "--terms: unknown term \"%s\" (gemm, tile, l2, hbm, link, "
                             "link-issue, capacity, latency, launch, barrier, setup, "
                             "host-sync, a2a)", t);
    *mask |= 1u << k;
  }
  return 0;
}

static int parse_count(const char *flag, const char *text, double lo, double hi,
                       double *out) {
  char *end;
  *out = strtod(text, &end);
  if (*end || !(*out >= lo && *out <= hi) || *out != floor(*out))
    return cli_usage_error("fit megamoe", "%s: expected a whole number from %g to %g, "
                           "got \"%s\"", flag, lo, hi, text);
  return 0;
}

static void print_result(FILE *f, const xs_moe_fit_result *r, const xs_profile *base,
                         const char *data) {
  fprintf(f, "xstage fit megamoe: %zu rows of gpu %s in %s (%zu other rows skipped)\n\n",
         r->nrows, cli_profile_text(base), cli_name_text(data), r->skipped);
  fprintf(f, "  %6s %11s %11s %8s %11s %8s\n", "line", "measured", "before", "error",
         "after", "error");
  for (size_t i = 0; i < r->nrows; i++) {
    const xs_moe_fit_row *w = &r->rows[i];
    fprintf(f, "  %6zu %8.1f us %8.1f us %+7.1f%% %8.1f us %+7.1f%%\n", w->line,
           w->measured_us, w->before_us, 100 * (w->before_us / w->measured_us - 1),
           w->after_us, 100 * (w->after_us / w->measured_us - 1));
  }
  fprintf(f, "\n  |error| over these rows: median %.1f%% before, %.1f%% after; largest "
         "%.1f%% before, %.1f%% after\n", 100 * r->median_before, 100 * r->median_after,
         100 * r->max_before, 100 * r->max_after);
  fprintf(f, "  (%u iterations of the least squares, %u programs evaluated)\n\n",
         r->iterations, r->evaluations);
  fprintf(f, "  %-10s %7s %-21s %s\n", "term", "sens", "scale (68% interval)", "");
  for (int t = 0; t < XS_MOE_TERMS; t++) {
    const xs_moe_fit_term *ft = &r->terms[t];
    char keys[512];
    xs_moe_term_keys(base, ft->term, keys, sizeof keys);
    if (ft->fitted)
      fprintf(f, "  %-10s %7.3f x%-6.3f (x%.3f-x%.3f) %s: %.4g -> %.4g\n",
             xs_moe_term_name(ft->term), ft->sensitivity, ft->scale, ft->lo, ft->hi,
             keys, ft->base, ft->value);
    else
      fprintf(f, "  %-10s %7.3f not fitted: %s\n", xs_moe_term_name(ft->term),
             ft->sensitivity, ft->why);
  }
  fprintf(f, "  (sens: the largest |d log time / d log term| over the rows)\n");
  /* a term at x1/4 or x4 is where the bounds stopped it, not where the
   * rows put it */
  char pinned[256] = "";
  size_t w = 0;
  for (int t = 0; t < XS_MOE_TERMS; t++) {
    const xs_moe_fit_term *ft = &r->terms[t];
    if (ft->fitted && (ft->scale <= 0.25 * (1 + 1e-9) || ft->scale >= 4 * (1 - 1e-9)) &&
        w < sizeof pinned)
      w += (size_t)snprintf(pinned + w, sizeof pinned - w, "%s%s x%.3g", w ? ", " : "",
                            xs_moe_term_name(ft->term), ft->scale);
  }
  if (w)
    cli_say("fit megamoe", "warning: %s ended at the bound of x1/4 to x4 of the base: the "
            "rows would move %s further, and the other terms' factors are fitted around "
            "that", pinned, strchr(pinned, ',') ? "them" : "it");
}

int cmd_fit_megamoe(int argc, char **argv) {
  static const struct option opts[] = {
      {"data", required_argument, 0, 'd'},      {"profile", required_argument, 0, 'p'},
      {"output", required_argument, 0, 'o'},    {"terms", required_argument, 0, 't'},
      {"source", required_argument, 0, 's'},    {"bootstrap", required_argument, 0, 'b'},
      {"seed", required_argument, 0, 'S'},      {"help", no_argument, 0, 'h'},
      {0, 0, 0, 0}};
  const char *data = NULL, *profile = NULL, *outp = NULL;
  xs_moe_fit_options o = {0, NULL, 0, 0, 0};
  int c;
  double v;
  opterr = 0;
  optind = 1;
  while ((c = getopt_long(argc, argv, ":d:p:o:h", opts, NULL)) != -1) {
    switch (c) {
    case 'd': data = optarg; break;
    case 'p': profile = optarg; break;
    case 'o': outp = optarg; break;
    case 's': o.source = optarg; break;
    case 't':
      if (parse_terms(optarg, &o.terms))
        return EXIT_INPUT;
      break;
    case 'b':
      if (parse_count("--bootstrap", optarg, 1, 100000, &v))
        return EXIT_INPUT;
      o.bootstrap = (unsigned)v;
      break;
    case 'S':
      if (parse_count("--seed", optarg, 1, 9007199254740992.0, &v))
        return EXIT_INPUT;
      o.seed = (uint64_t)v;
      break;
    case 'h': help(stdout); return EXIT_OK;
    default: return cli_bad_flag("fit megamoe", argc, argv);
    }
  }
  if (optind < argc)
    return cli_usage_error("fit megamoe", "unexpected argument \"%s\"", argv[optind]);
  if (!data || !profile)
    return cli_usage_error("fit megamoe", "--data CSV and --profile BASE are required");
  const char *inputs[2] = {data, profile};
  if (cli_refuse_overwrite("fit megamoe", inputs, 2, &outp, 1))
    return EXIT_INPUT;
  xs_error err;
  xs_profile *base;
  if (xs_profile_load(profile, &base, &err))
    return cli_error("fit megamoe", &err);
  char *text;
  size_t len;
  int rc = cli_read_file("fit megamoe", data, CLI_INPUT_LIMIT, &text, &len);
  if (rc) {
    xs_profile_free(base);
    return rc;
  }
  xs_moe_fit_result r;
  xs_profile *tuned = NULL;
  if (xs_moe_fit(text, len, data, base, &o, &r, outp ? &tuned : NULL, &err)) {
    rc = cli_error("fit megamoe", &err);
  } else {
    /* the report beside a profile written to standard output goes to errors */
    FILE *rep = outp && !strcmp(outp, "-") ? stderr : stdout;
    print_result(rep, &r, base, data);
    if (outp) {
      rc = cli_write_document("fit megamoe", outp, xs_profile_to_json(tuned));
      if (!rc && strcmp(outp, "-"))
        fprintf(rep, "\n  wrote %s (validate megamoe --profile that file uses it for gpu "
                "%s)\n", cli_name_text(outp), cli_profile_text(base));
    }
    xs_moe_fit_free(&r);
  }
  free(text);
  xs_profile_free(tuned);
  xs_profile_free(base);
  return rc;
}
