/*
 * validate_ep.c: `xstage validate ep` puts the EP kernel programs'
 * predictions beside published dispatch and combine timings, each in the
 * row's own metric, with summaries per library and mode, library, phase
 * and source, every model, and the figures with the fitted constants
 * refitted leaving each source out.
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
          "usage: xstage validate ep [--data FILE] [--models LIST|all] [--by-source]\n"
          "                          [--json | --csv] [--svg FILE] [--fail-above FRACTION]\n"
          "\n"
          "Predicts every row of a CSV of published expert-parallel dispatch and\n"
          "combine timings (ep.csv's columns: source, gpu, fabric, library, kernel,\n"
          "phase, scope, ep, nodes, tokens, hidden, topk, experts, dtype, metric,\n"
          "value, timing; an optional knobs column) by building the library's\n"
          "kernel as a program (docs/ep.md) on the gpu's built-in profile with the\n"
          "row's fabric, and prints predicted beside published in the row's own\n"
          "metric (time_us, or GB/s as the library's benchmark computes it), with\n"
          "error = predicted / published - 1; then the median and largest |error|\n"
          "per library and kernel mode, library, phase and source. A prediction\n"
          "never reads the value column.\n"
          "\n"
          "  --data FILE          the CSV; by default the published one installed with\n"
          "                       xstage (share/xstage/published/ep.csv;\n"
          "                       data/published/ in the source tree)\n"
          "  --models LIST|all    also the blocking, serial and ideal models'\n"
          "                       errors (comma-separated; all: every model);\n"
          "                       --model LIST is the same flag, as validate\n"
          "                       megamoe spells it\n"
          "  --by-source          leave one source out: the model's fitted constants\n"
          "                       refitted without each source and its rows predicted\n"
          "                       with them (about 15 s for the published data; on a\n"
          "                       linear model past 4,000 sources x rows, up to 2,000\n"
          "                       rows: docs/validate.md); lists every constant\n"
          "  --json               {\"rows\": [...], \"summary\": {...}} (docs/validate.md)\n"
          "  --csv                one header line, one line a row: --json's row keys,\n"
          "                       nested ones joined with \".\"\n"
          "  --svg FILE           predicted against published time, log axes\n"
          "  --fail-above F       exit 1 when the median |error| of any library and\n"
          "                       kernel mode (with --by-source: also left out)\n"
          "                       exceeds F (a fraction, e.g. 0.15), after printing\n");
}

/* --json, or with csv its rows alone as CSV (--csv) */
static int write_json(const xs_validate_set *set, const int *models, int loso,
                      const double *values, int csv) {
  unsigned mask = 0;
  for (int m = 0; m < XS_MODEL_COUNT; m++)
    mask |= models[m] ? 1u << m : 0;
  char *s;
  xs_error err;
  if (xs_validate_ep_json(set, mask, loso ? values : NULL, &s, &err))
    return cli_error("validate", &err);
  int rc = csv ? cli_csv_document("validate", s, "rows", NULL, NULL, NULL)
               : cli_write_document("validate", "-", s);
  if (csv)
    xs_free(s);
  return rc;
}

/* the signed median per library and mode and token band (the time's,
 * whatever the row's metric); 0, or the exit code */
static int print_bias(const xs_validate_set *set) {
  xs_validate_ep_groups g;
  xs_error err;
  if (xs_validate_ep_group(set, 0, &g, &err))
    return cli_error("validate", &err);
  printf("\n  signed median error of the time per library and kernel mode and "
         "tokens per rank\n  (predicted over published - 1; bands of 3 rows or "
         "more):\n");
  cli_validate_bias_rows(set, "library/kernel", 26, g.name, g.n, 3, XS_VALIDATE_EP_BANDS,
                         xs_validate_ep_band_bias);
  xs_validate_ep_groups_free(&g);
  return 0;
}

/* srcs: for the sources, their labels (by number after the legend, as
 * the rows name them); 0, or the exit code */
static int print_group(const xs_validate_set *set, int field, const char *title,
                       const int *models, int loso, const cli_sources *srcs) {
  xs_validate_ep_groups g;
  xs_error err;
  if (xs_validate_ep_group(set, field, &g, &err))
    return cli_error("validate", &err);
  printf("\n  by %s:\n", title);
  for (size_t k = 0; k < g.n; k++) {
    size_t n;
    double mx, med = xs_validate_ep_median(set, &g, k, 0, &n, &mx);
    char lb[96];
    printf("    %-40s %3zu rows  median %5.1f%%  largest %6.1f%%",
           srcs ? cli_source_label(srcs, g.name[k], lb, sizeof lb)
                : cli_text_cut(g.name[k], 40, lb, sizeof lb),
           n, 100 * med, 100 * mx);
    if (loso)
      printf("  left out %5.1f%%", 100 * xs_validate_ep_median(set, &g, k, -1, NULL, NULL));
    for (int m = 1; m < XS_MODEL_COUNT; m++)
      if (models[m])
        printf("  %s %5.1f%%", xs_model_name((xs_model)m),
               100 * xs_validate_ep_median(set, &g, k, m, NULL, NULL));
    printf("\n");
  }
  xs_validate_ep_groups_free(&g);
  return 0;
}

int cli_validate_ep(int argc, char **argv) {
  static const struct option opts[] = {
      {"data", required_argument, 0, 'd'},  {"json", no_argument, 0, 'j'},
      {"svg", required_argument, 0, 'S'},   {"fail-above", required_argument, 0, 'f'},
      {"models", required_argument, 0, 'm'}, {"by-source", no_argument, 0, 'b'},
      {"model", required_argument, 0, 'm'}, /* validate megamoe's spelling */
      {"csv", no_argument, 0, 'c'},         {"help", no_argument, 0, 'h'},
      {0, 0, 0, 0}};
  const char *data = NULL, *svg = NULL;
  double fail_above = INFINITY;
  int json = 0, csv = 0, loso = 0, c, models[XS_MODEL_COUNT] = {1, 0, 0, 0};
  opterr = 0;
  optind = 2;
  while ((c = getopt_long(argc, argv, ":d:jS:f:m:bhc", opts, NULL)) != -1) {
    switch (c) {
    case 'd': data = optarg; break;
    case 'j': json = 1; break;
    case 'c': csv = 1; break;
    case 'S': svg = optarg; break;
    case 'b': loso = 1; break;
    case 'm': {
      char buf[256];
      snprintf(buf, sizeof buf, "%s", optarg);
      if (!strtok(buf, ", "))
        return cli_usage_error("validate", "--models: an empty list (burstgap, blocking, "
                               "serial, ideal, all)");
      snprintf(buf, sizeof buf, "%s", optarg);
      for (char *t = strtok(buf, ","); t; t = strtok(NULL, ",")) {
        xs_model m;
        if (!strcmp(t, "all"))
          models[1] = models[2] = models[3] = 1;
        else if (!xs_model_from_name(t, &m) && m < XS_MODEL_COUNT)
          models[m] = 1;
        else
          return cli_usage_error("validate", "--models: unknown model \"%s\" "
                                 "(burstgap, blocking, serial, ideal, all)", t);
      }
      break;
    }
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
  if (json && csv)
    return cli_usage_error("validate", "--json and --csv exclude each other");
  xs_validate_set set;
  xs_error err;
  char found[8192];
  int lrc = cli_validate_load(&data, "published/ep.csv", found, sizeof found, svg,
                              xs_validate_ep, &set);
  if (lrc)
    return lrc;
  int tty = isatty(2);
  xs_status st;
  size_t nsrc = xs_validate_distinct(&set, 1, NULL, 0);
  const char **sources = malloc((nsrc + 1) * sizeof *sources);
  double *values = malloc((nsrc + 1) * XS_EP_CONSTANTS * sizeof *values);
  if (!sources || !values) {
    free(sources);
    free(values);
    xs_validate_free(&set);
    return cli_out_of_memory("validate");
  }
  xs_validate_distinct(&set, 1, sources, nsrc);
  int rc = EXIT_OK;
  if (loso) {
    if (tty)
      fprintf(stderr, "  refitting without each of %zu sources...", nsrc);
    st = xs_validate_ep_by_source(&set, values, &err);
    if (tty)
      fprintf(stderr, "\r%60s\r", "");
    if (st) {
      rc = cli_error("validate", &err);
      goto done;
    }
  }
  /* each row's 80% interval from the other sources' residuals (each with
   * its constants refitted without its source where --by-source ran) */
  if ((st = xs_validate_intervals(&set, &err))) {
    rc = cli_error("validate", &err);
    goto done;
  }
  if (json || csv) {
    rc = write_json(&set, models, loso, values, csv);
  } else {
    printf("EP dispatch and combine: %zu rows of %s, each predicted under "
           "burstgap on its gpu's built-in profile and fabric, in its own "
           "metric\n\n", set.nrows, cli_name_text(data));
    cli_sources srcs;
    if (cli_sources_init(&srcs, &set, 2, 24)) {
      rc = cli_out_of_memory("validate");
      goto done;
    }
    cli_sources_print(&srcs);
    printf("  %-24s %-12s %-8s %-18s %-9s %4s %5s %-10s %10s %10s %8s%s\n",
           "source", "gpu", "fabric", "library/kernel", "phase", "ep", "tokens",
           "metric", "published", "predicted", "error",
           loso ? "  left out" : "");
    for (size_t i = 0; i < set.nrows; i++) {
      const xs_validate_row *r = &set.rows[i];
      const xs_validate_ep_row *e = &r->ep;
      char src[96];
      printf("  %-24s %-12s %-8s %-18.18s %-9.9s %4g %5g %-10s %10.1f %10.1f "
             "%+7.1f%%", cli_source_label(&srcs, r->source, src, sizeof src), r->gpu,
             e->fabric,
             r->arm, e->phase, e->ep, r->tokens, e->metric, e->measured,
             e->predicted, 100 * r->error);
      if (loso)
        printf("  %+7.1f%%", 100 * e->loso_error);
      printf("\n");
    }
    /* the tables below label a source in 40 columns, by the legend's
     * number where the rows do */
    cli_sources wide = srcs;
    wide.width = 40;
    size_t n;
    double mx, med = xs_validate_ep_median(&set, NULL, 0, 0, &n, &mx);
    printf("\n  |error|: median %.1f%%, largest %.1f%% over %zu rows", 100 * med,
           100 * mx, n);
    if (loso)
      printf("; with each source left out of the fit: median %.1f%%",
             100 * xs_validate_ep_median(&set, NULL, 0, -1, NULL, NULL));
    printf("\n");
    static const char *const titles[] = {"library and kernel mode", "library", "phase",
                                         "source"};
    for (int f = 0; f < 4 && !rc; f++)
      if (!(rc = print_group(&set, f, titles[f], models, loso, f == 3 ? &wide : NULL)) &&
          f == 0)
        rc = print_bias(&set);
    if (!rc)
      cli_validate_intervals_print(&set);
    printf("\n  fitted constants (the only numbers fitted to these timings; "
           "docs/ep.md):\n");
    for (size_t i = 0; i < XS_EP_CONSTANTS; i++) {
      printf("    %-18s %11.4g  %s\n", xs_ep_constant_name(i),
             xs_ep_constant_value(i), xs_ep_constant_about(i));
      for (size_t k = 0; loso && k < nsrc; k++) {
        char src[96];
        printf("      without %-40s %11.4g\n", cli_source_label(&wide, sources[k], src, sizeof src),
               values[k * XS_EP_CONSTANTS + i]);
      }
    }
    cli_sources_free(&srcs);
    cli_flush_stdout();
  }
  if (!rc && svg) {
    char title[200];
    snprintf(title, sizeof title, "xstage validate ep: %zu rows, median |error| "
             "%.1f%%", set.nrows, 100 * xs_validate_ep_median(&set, NULL, 0, 0, NULL, NULL));
    char *s = xs_validate_svg(&set, title);
    if (!s) {
      rc = cli_out_of_memory("validate");
    } else {
      rc = cli_write_output("validate", svg, s);
      free(s);
    }
  }
  if (!rc && isfinite(fail_above)) {
    xs_validate_ep_groups g;
    if (xs_validate_ep_group(&set, 0, &g, &err))
      rc = cli_error("validate", &err);
    for (size_t k = 0; !rc && k < g.n; k++) {
      double m = xs_validate_ep_median(&set, &g, k, 0, NULL, NULL);
      double l = loso ? xs_validate_ep_median(&set, &g, k, -1, NULL, NULL) : 0;
      if (m > fail_above || l > fail_above) {
        fprintf(stderr, "xstage validate: %s: median |error| %.1f%%%s is above "
                        "--fail-above %.1f%%\n", g.name[k], 100 * fmax(m, l),
                m > fail_above ? "" : " (left out)", 100 * fail_above);
        rc = EXIT_MACHINE;
      }
    }
    xs_validate_ep_groups_free(&g);
  }
done:
  free(sources);
  free(values);
  xs_validate_free(&set);
  return rc;
}
