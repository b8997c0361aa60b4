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
          "usage: xstage validate megamoe [--data FILE] [--model M] [--by-source]\n"
          "                       [--json | --csv] [--svg FILE] [--fail-above FRACTION]\n"
          "                       [--profile P]\n"
          "       xstage validate flashattn [--data FILE] [--model M] [--json | --csv]\n"
          "                       [--svg FILE] [--fail-above FRACTION]\n"
          "       xstage validate ep [--data FILE] ... (xstage validate ep --help)\n"
          "\n"
          "Predicts every row of a CSV of published MoE kernel timings (columns\n"
          "source, gpu, ep, hidden, intermediate, experts, topk, shared_experts,\n"
          "act_dtype, weight_dtype, tokens, arm, time_us; optional knobs and\n"
          "metric; others are ignored) on the built-in profile its gpu column names,\n"
          "for its arm (sequential, fused-split, fused-wave, fused-interleaved,\n"
          "fused-lag), with the knobs its kernel ran with (its heuristic's defaults\n"
          "for the shape, or the row's knobs column), and prints predicted beside\n"
          "measured with error = predicted / measured - 1; then the median and\n"
          "largest |error| per arm and source, every model per arm, the signed\n"
          "error per arm and token band, the pairs of arms measured more than 5%%\n"
          "apart on one config, the rows that time the dispatch pull, and what\n"
          "leaving a source or a kernel out changes. A prediction never reads\n"
          "time_us.\n"
          "\n"
          "flashattn: ring attention timings (columns source, gpu, cp, seq_per_rank,\n"
          "heads, kv_heads, head_dim, causal, layout, kernel, pass, arm, time_us;\n"
          "optional batch), arms local, sequential, dedicated-stream, dedicated-sms,\n"
          "piggyback; pairs are a ring beside the local arm (or another layout) of\n"
          "one shape. Each row also with communication free, and where\n"
          "communication shows (rings measured more than 10%% above P x their local\n"
          "arm): their errors, the error on that overhead, and what they score with\n"
          "communication free.\n"
          "\n"
          "ep: expert-parallel dispatch and combine timings, each in its own metric\n"
          "(xstage validate ep --help).\n"
          "\n"
          "  --data FILE          the CSV; by default the published one installed with\n"
          "                       xstage (share/xstage/published/megamoe.csv or\n"
          "                       ring-attention.csv; data/published/ in the source tree)\n"
          "  --model M            the model the rows and summaries use:\n"
          "                       burstgap (default), blocking, serial, ideal, or all\n"
          "                       (every model's prediction per row); --models M is\n"
          "                       the same flag, as validate ep spells it\n"
          "  --by-source          megamoe: the rows' table per source, each source\n"
          "                       predicted without it (leave one out), and the\n"
          "                       sequential rows with the EP constants refitted\n"
          "                       without DeepEP's sources\n"
          "  --profile P          megamoe: a profile of the caller's (a file from xstage\n"
          "                       fit megamoe): rows whose gpu is its name use it,\n"
          "                       the others their built-in profile (docs/tune.md)\n"
          "  --json               {\"rows\": [...], \"summary\": {...}} (docs/validate.md)\n"
          "  --csv                one header line, one line a row: --json's row keys,\n"
          "                       nested ones joined with \".\"\n"
          "  --svg FILE           predicted against measured, log axes, +-20%% band\n"
          "  --fail-above F       exit 1 when any arm's median |error| exceeds F\n"
          "                       (a fraction, e.g. 0.25), after printing\n");
}

/* a source for a column of width bytes: cut between characters, control
 * characters escaped (one per printf: a static buffer) */
/* the rows' sources: whole, or by number after a list of them whole */
static cli_sources row_sources;

static const char *source_text(const char *source) {
  static char buf[96];
  return cli_source_label(&row_sources, source, buf, sizeof buf);
}

static int is_time(const xs_validate_row *r) {
  return !r->metric[0] || !strcmp(r->metric, "time");
}

/* the rows: shape, measured, predicted (every model with --model all) */
static void moe_rows(const xs_validate_set *set, const char *data, int model,
                     const char *given_file, const char *given_name) {
  printf("MegaMoE validation: %zu rows of %s, each predicted with the knobs its\n"
         "kernel ran with, under %s,", set->nrows, cli_name_text(data),
         model < 0 ? "every model" : xs_model_name((xs_model)model));
  if (given_file)
    printf("\non the profile file %s (named %s) for its rows of gpu %s,\n"
           "the other rows on their gpu's built-in profile\n\n", cli_name_text(given_file),
           given_name, given_name);
  else
    printf(" on its gpu's built-in profile\n\n");
  cli_sources_print(&row_sources);
  printf("  %-16s %-11s %2s %5s %4s %2s %6s %-12s %9s", "source", "gpu", "ep", "H", "E",
         "K", "tokens", "arm", "measured");
  if (model < 0)
    for (int m = 0; m < XS_MODEL_COUNT; m++)
      printf(" %9s %6s", xs_model_name((xs_model)m), "error");
  else
    printf(" %9s %6s", "predicted", "error");
  printf(" %-15s  %-8s %s\n", "80% interval", "bound", "knobs");
  for (size_t i = 0; i < set->nrows; i++) {
    const xs_validate_row *r = &set->rows[i];
    const xs_moe_config *c = &r->config;
    char knobs[80];
    xs_moe_schedule s = (xs_moe_schedule)xs_moe_schedule_from_name(r->arm);
    cli_moe_knobs(s, &r->knobs, knobs, sizeof knobs);
    printf("  %-16s %-11.11s %2g %5g %4g %2g %6g %-12.12s %9.1f", source_text(r->source),
           r->gpu, c->ep, c->hidden, c->experts, c->topk, r->tokens,
           r->arm + (strncmp(r->arm, "fused-", 6) ? 0 : 6), r->measured_us);
    if (model < 0)
      for (int m = 0; m < XS_MODEL_COUNT; m++) {
        if (isnan(r->model_us[m]))
          printf(" %9s %6s", "-", "-");
        else
          printf(" %9.1f %+5.0f%%", r->model_us[m], 100 * (r->model_us[m] / r->measured_us - 1));
      }
    else
      printf(" %9.1f %+5.1f%%", r->predicted_us, 100 * r->error);
    if (isfinite(r->interval_us[0]))
      printf(" %7.0f-%-7.0f", r->interval_us[0], r->interval_us[1]);
    else
      printf(" %15s", "-");
    printf("  %-8s %s%s\n", is_time(r) ? (r->breakdown.bound ? r->breakdown.bound : "") : r->metric,
           knobs, isnan(r->alt_us) ? "" : " *");
  }
  printf("  (arms without their \"fused-\" prefix; * fused-lag with its default lag:\n"
         "  the other token bound is under \"lag bound\" below)\n");
}

/* the sections after the medians: models, bias, pairs, pull end, lag
 * bound, leave one out */
static int moe_sections(const xs_validate_set *set, const xs_validate_group *arms,
                        size_t narms, const xs_validate_group *sources,
                        size_t nsources, int by_source, const char *fitted) {
  printf("\n  median |error| per arm and model (kernel time rows):\n    %-20s", "arm");
  for (int m = 0; m < XS_MODEL_COUNT; m++)
    printf(" %9s", xs_model_name((xs_model)m));
  printf("\n");
  for (size_t k = 0; k < narms; k++) {
    printf("    %-20s", arms[k].name);
    for (int m = 0; m < XS_MODEL_COUNT; m++) {
      size_t n;
      double v = xs_validate_median_model(set, (xs_model)m, xs_validate_same_arm,
                                          (void *)arms[k].name, &n, NULL);
      printf(" %8.1f%%", 100 * v);
    }
    printf("\n");
  }
  printf("\n  signed median error per arm and token band (bands of 3 rows or more):\n");
  cli_validate_bias_table(set, arms, narms, XS_VALIDATE_BANDS, xs_validate_band_bias);
  xs_validate_pair *p;
  size_t np;
  xs_error err;
  if (xs_validate_pair_list(set, 0.05, &p, &np, &err))
    return cli_error("validate", &err);
  xs_validate_pair_stats ps;
  xs_validate_pair_stats_of(p, np, &ps);
  printf("\n  pairs: two arms of one config measured more than 5%% apart (a over b):\n");
  printf("    %-16s %-11s %6s %-12s %-12s %9s %9s %7s\n", "source", "gpu", "tokens", "a",
         "b", "measured", "predicted", "error");
  for (size_t i = 0; i < np; i++) {
    const xs_validate_row *a = &set->rows[p[i].a], *b = &set->rows[p[i].b];
    printf("    %-16s %-11.11s %6g %-12.12s %-12.12s %8.3fx %8.3fx %+6.1f%%%s\n",
           source_text(a->source), a->gpu, a->tokens,
           a->arm + (strncmp(a->arm, "fused-", 6) ? 0 : 6),
           b->arm + (strncmp(b->arm, "fused-", 6) ? 0 : 6), p[i].measured_ratio,
           p[i].predicted_ratio, 100 * (p[i].predicted_ratio / p[i].measured_ratio - 1),
           p[i].agree ? "" : "  the other way");
  }
  free(p);
  if (ps.pairs)
    printf("    %zu pairs: the faster predicted faster in %zu; ratio |error| median "
           "%.1f%%, largest %.1f%%;\n    of the %zu measured 1.2x or more apart, %zu "
           "predicted 1.1x or more apart the same way\n", ps.pairs, ps.agree,
           100 * ps.median_ratio_error, 100 * ps.max_ratio_error, ps.wide, ps.wide_kept);
  int header = 0;
  for (size_t i = 0; i < set->nrows; i++) {
    const xs_validate_row *r = &set->rows[i];
    if (is_time(r))
      continue;
    if (!header++)
      printf("\n  rows of another metric (not in the medians above):\n");
    char knobs[80];
    cli_moe_knobs((xs_moe_schedule)xs_moe_schedule_from_name(r->arm), &r->knobs, knobs,
                  sizeof knobs);
    printf("    line %zu: %s of %s at %g tokens, %s: measured %.1f us, predicted %.1f us "
           "(%+.1f%%)\n", r->line, r->metric, r->arm, r->tokens, knobs, r->measured_us,
           r->predicted_us, 100 * r->error);
  }
  header = 0;
  for (size_t i = 0; i < set->nrows; i++) {
    const xs_validate_row *r = &set->rows[i];
    if (isnan(r->alt_us) || !is_time(r))
      continue;
    if (!header++)
      printf("\n  lag bound: the lag kernel's default lag follows the token bound its\n"
             "  buffers were sized for; scored with the row's own (a capacity column,\n"
             "  else the call's tokens, as the harnesses pass it), beside the other:\n");
    printf("    line %zu: %g tokens: lag %u: %.1f us (%+.1f%%); other bound, lag %u: "
           "%.1f us (%+.1f%%)\n", r->line, r->tokens, r->knobs.lag, r->predicted_us,
           100 * r->error, r->alt_knobs.lag, r->alt_us, 100 * (r->alt_us / r->measured_us - 1));
  }
  /* the constants fitted to kernel timings: the EP programs', which the
   * sequential arm's all-to-all takes, and a fitted profile's */
  printf("\n  constants fitted to kernel timings: the sequential arm's all-to-all takes\n"
         "  the EP programs' five, fitted to published EP dispatch and combine\n"
         "  timings (data/published/ep.csv; docs/ep.md \"Fitted constants\"), DeepEP's\n"
         "  own among them:\n");
  for (size_t i = 0; i < XS_EP_CONSTANTS; i++) /* three to a line */
    printf("%s %s %.4g%s", i % 3 ? "," : "   ", xs_ep_constant_name(i),
           xs_ep_constant_value(i), i + 1 == XS_EP_CONSTANTS ? ".\n" : i % 3 == 2 ? ",\n" : "");
  if (fitted)
    printf("  And those of %s (xstage fit megamoe), fitted to its own rows, which\n"
           "  may be these. Per source and kernel:\n", fitted);
  else
    printf("  None is fitted to these rows (the GEMM tile terms to GEMM\n"
           "  microbenchmarks: `xstage profiles show`), so each source and each kernel\n"
           "  predicted without its own rows gives the same predictions (--by-source\n"
           "  refits the EP constants without DeepEP's sources):\n");
  for (size_t k = 0; k < nsources + narms; k++) {
    int is_src = k < nsources;
    const xs_validate_group *g = is_src ? &sources[k] : &arms[k - nsources];
    char nm[40];
    if (fitted) /* leaving rows out would mean fitting again without them */
      printf("    %-6s %-30s %3zu rows: median |error| %5.1f%%\n",
             is_src ? "source" : "kernel", cli_text(g->name, nm, sizeof nm), g->rows,
             100 * g->median_abs_error);
    else
      printf("    %-6s %-30s %3zu rows: median |error| %5.1f%%, left out %5.1f%%\n",
             is_src ? "source" : "kernel", cli_text(g->name, nm, sizeof nm), g->rows,
             100 * g->median_abs_error, 100 * g->median_abs_error);
  }
  if (by_source)
    for (size_t k = 0; k < nsources; k++) {
      printf("\n  %s:\n", cli_name_text(sources[k].name));
      for (size_t i = 0; i < set->nrows; i++) {
        const xs_validate_row *r = &set->rows[i];
        if (strcmp(r->source, sources[k].name) || !is_time(r))
          continue;
        printf("    %-11s %6g %-18s %9.1f us %9.1f us %+6.1f%%", r->gpu, r->tokens, r->arm,
               r->measured_us, r->predicted_us, 100 * r->error);
        if (set->refitted && r->refit_us > 0)
          printf("   without DeepEP's: %9.1f us %+6.1f%%", r->refit_us,
                 100 * (r->refit_us / r->measured_us - 1));
        printf("\n");
      }
    }
  if (set->refitted) {
    /* the sequential rows with the EP constants refitted without DeepEP */
    printf("\n  the EP constants refitted without DeepEP's sources (%s: %zu of the\n"
           "  %zu rows of ep.csv left out), and as shipped:\n", set->refit_without,
           set->refit_left_out, set->refit_rows);
    for (size_t i = 0; i < XS_EP_CONSTANTS; i++)
      printf("    %-18s %10.4g %10.4g\n", xs_ep_constant_name(i), set->refit[i],
             xs_ep_constant_value(i));
    printf("  the sequential rows with them, median |error| (with the shipped constants):\n");
    for (size_t k = 0; k <= nsources; k++) {
      size_t m;
      double mb, ma = xs_validate_refit_median(set, k == nsources ? NULL : sources[k].name,
                                               &mb, &m);
      if (m) {
        char nm[48];
        printf("    %-34s %3zu rows: %5.1f%% (%5.1f%%)\n",
               k == nsources ? "all" : cli_text(sources[k].name, nm, sizeof nm), m,
               100 * ma, 100 * mb);
      }
    }
  }
  return 0;
}

/* the profile --profile gave megamoe's rows (NULL: each row's built-in
 * one), for megamoe_given */
static const xs_profile *given_profile;

/* xs_validate_megamoe_with on given_profile, as cli_validate_load calls a
 * validator */
static xs_status megamoe_given(const char *text, size_t length, const char *filename,
                               xs_validate_set *out, void (*progress)(size_t, void *),
                               void *ctx, xs_error *err) {
  const xs_profile *const gp[1] = {given_profile};
  return xs_validate_megamoe_with(text, length, filename, gp, given_profile ? 1 : 0, out,
                                  progress, ctx, err);
}

int cmd_validate(int argc, char **argv) {
  if (argc >= 2 && (!strcmp(argv[1], "--help") || !strcmp(argv[1], "-h"))) {
    help(stdout);
    return EXIT_OK;
  }
  if (argc >= 2 && !strcmp(argv[1], "ep"))
    return cli_validate_ep(argc, argv);
  if (argc >= 2 && !strcmp(argv[1], "residuals"))
    return cli_validate_residuals(argc, argv);
  if (argc < 2 || (strcmp(argv[1], "megamoe") && strcmp(argv[1], "flashattn")))
    return cli_usage_error("validate", "expected a planner: megamoe, flashattn or ep, or residuals");
  int fa = !strcmp(argv[1], "flashattn");
  static const struct option opts[] = {
      {"data", required_argument, 0, 'd'}, {"json", no_argument, 0, 'j'},
      {"svg", required_argument, 0, 'S'},  {"fail-above", required_argument, 0, 'f'},
      {"model", required_argument, 0, 'm'}, {"by-source", no_argument, 0, 'b'},
      {"models", required_argument, 0, 'm'}, /* validate ep's spelling */
      {"profile", required_argument, 0, 'p'}, {"csv", no_argument, 0, 'c'},
      {"help", no_argument, 0, 'h'},       {0, 0, 0, 0}};
  const char *data = NULL, *svg = NULL, *profile = NULL;
  double fail_above = INFINITY;
  int json = 0, c, model = XS_MODEL_BURSTGAP, by_source = 0;
  opterr = 0;
  optind = 2;
  int csv = 0;
  while ((c = getopt_long(argc, argv, ":d:jS:f:m:bp:hc", opts, NULL)) != -1) {
    switch (c) {
    case 'd': data = optarg; break;
    case 'p': profile = optarg; break;
    case 'b': by_source = 1; break;
    case 'm': {
      xs_model mm;
      if (!strcmp(optarg, "all"))
        model = -1;
      else if (xs_model_from_name(optarg, &mm) || mm >= XS_MODEL_COUNT)
        return cli_usage_error("validate", "--model: \"%s\" is not burstgap, blocking, "
                                           "serial, ideal or all", optarg);
      else
        model = (int)mm;
      break;
    }
    case 'j': json = 1; break;
    case 'c': csv = 1; break;
    case 'S': svg = optarg; break;
    case 'f':
      if (cli_validate_fraction(optarg, &fail_above))
        return EXIT_INPUT;
      break;
    case 'h': help(stdout); return EXIT_OK;
    default: return cli_bad_flag("validate", argc, argv);
    }
  }
  if (json && csv)
    return cli_usage_error("validate", "--json and --csv exclude each other");
  if (csv)
    json = 2; /* the JSON document's rows, printed as CSV */
  if (optind < argc)
    return cli_usage_error("validate", "unexpected argument \"%s\"", argv[optind]);
  if (fa && (by_source || profile))
    return cli_usage_error("validate", "%s is for megamoe only",
                           by_source ? "--by-source" : "--profile");
  xs_validate_set set;
  xs_error err;
  xs_profile *given = NULL;
  if (profile && xs_profile_load(profile, &given, &err))
    return cli_error("validate", &err);
  given_profile = given;
  char found[8192];
  int lrc = cli_validate_load(&data, fa ? "published/ring-attention.csv"
                                        : "published/megamoe.csv",
                              found, sizeof found, svg,
                              fa ? xs_validate_flashattn : megamoe_given, &set);
  char given_name[160] = "";
  if (given) {
    char text_buf[160];
    snprintf(given_name, sizeof given_name, "%s",
             cli_text(xs_profile_name(given), text_buf, sizeof text_buf));
  }
  given_profile = NULL;
  xs_profile_free(given);
  if (lrc)
    return lrc;
  /* --by-source: the EP constants the sequential arm takes, refitted
   * without DeepEP's own figures, and its rows predicted again with them */
  if (by_source && !fa) {
    char epfound[8192];
    const char *epdata = cli_data_file("published/ep.csv", epfound, sizeof epfound);
    char *eptext = NULL;
    size_t eplen = 0;
    xs_validate_set ep;
    int rrc = epdata ? cli_read_file("validate", epdata, CLI_INPUT_LIMIT, &eptext, &eplen)
                     : cli_usage_error("validate", "--by-source needs published/ep.csv: %s "
                                                   "(set XSTAGE_DATA_DIR)", epfound);
    if (rrc) {
      xs_validate_free(&set);
      return rrc;
    }
    if (isatty(2))
      fprintf(stderr, "\r  refitting the EP constants without DeepEP's sources");
    xs_status st = xs_validate_ep(eptext, eplen, epdata, &ep, NULL, NULL, &err);
    free(eptext);
    if (!st) {
      st = xs_validate_megamoe_refit(&set, &ep, "deepseek-ai/DeepEP*", &err);
      xs_validate_free(&ep);
    }
    if (isatty(2))
      fprintf(stderr, "\r%60s\r", "");
    if (st) {
      xs_validate_free(&set);
      return cli_error("validate", &err);
    }
  }
  /* another single model: its predictions are the rows' */
  if (model > XS_MODEL_BURSTGAP)
    for (size_t i = 0; i < set.nrows; i++) {
      xs_validate_row *r = &set.rows[i];
      if (!isnan(r->model_us[model])) {
        r->predicted_us = r->model_us[model];
        r->error = r->predicted_us / r->measured_us - 1;
      }
    }
  /* arms and sources in order of first appearance, with their medians */
  xs_validate_group *arms = NULL, *sources = NULL;
  size_t narms = 0, nsources = 0;
  if (xs_validate_groups(&set, 0, &arms, &narms, &err) ||
      xs_validate_groups(&set, 1, &sources, &nsources, &err)) {
    xs_validate_free(&set);
    free(arms);
    return cli_error("validate", &err);
  }
  double mx, med = xs_validate_median(&set, NULL, NULL, NULL, &mx);
  int rc = EXIT_OK;
  if (json) {
    char *s;
    if (xs_validate_json(&set, &s, &err)) {
      rc = cli_error("validate", &err);
    } else if (json == 2) { /* --csv: a line a row */
      rc = cli_csv_document("validate", s, "rows", NULL, NULL, NULL);
      xs_free(s);
    } else {
      rc = cli_write_document("validate", "-", s);
    }
  } else if (cli_sources_init(&row_sources, &set, fa ? 1 : 0, 16)) {
    rc = cli_out_of_memory("validate");
  } else if (fa) {
    cli_validate_fa_rows(&set, data, model, &row_sources);
  } else {
    moe_rows(&set, data, model, given_name[0] ? profile : NULL, given_name);
  }
  if (!json) {
    size_t nmed;
    xs_validate_median(&set, NULL, NULL, &nmed, NULL);
    printf("\n  |error|%s: median %.1f%%, largest %.1f%% over %zu rows%s\n",
           model >= 0 ? "" : " (burstgap)", 100 * med, 100 * mx, nmed,
           nmed < set.nrows ? " of kernel time" : "");
    for (size_t k = 0; k < narms; k++)
      printf("    arm %-18s median %5.1f%%, largest %5.1f%% (%zu rows)\n", arms[k].name,
             100 * arms[k].median_abs_error, 100 * arms[k].max_abs_error, arms[k].rows);
    for (size_t k = 0; k < nsources; k++)
      printf("    source %-15s median %5.1f%%, largest %5.1f%% (%zu rows)\n",
             cli_name_text(sources[k].name), 100 * sources[k].median_abs_error,
             100 * sources[k].max_abs_error, sources[k].rows);
    /* pairs of arms on one config: which is faster, and the ratio */
    xs_validate_pairs pr;
    if (xs_validate_compare_arms(&set, &pr, &err)) {
      cli_sources_free(&row_sources);
      xs_validate_free(&set);
      free(arms);
      free(sources);
      return cli_error("validate", &err);
    }
    if (pr.pairs && fa) {
      printf("\n  faster of two arms on one config predicted faster: %zu of %zu\n",
             pr.agree, pr.pairs);
      printf("  ratio of two arms on one config (predicted / measured - 1): median "
             "|error| %.1f%%, largest %.1f%%\n", 100 * pr.median_ratio_error,
             100 * pr.max_ratio_error);
    }
    if ((rc = fa ? cli_validate_fa_sections(&set, arms, narms)
                 : moe_sections(&set, arms, narms, sources, nsources, by_source,
                                given_name[0] ? given_name : NULL))) {
      cli_sources_free(&row_sources);
      xs_validate_free(&set);
      free(arms);
      free(sources);
      return rc;
    }
    cli_validate_intervals_print(&set);
    if (fa)
      printf("  (bound: what dominates the predicted time: compute, merge of partial\n"
             "  outputs, fixed per-step costs, interference or exposed communication)\n");
    else
      printf("\n  (bound: where the predicted time goes on the SMs that finish last:\n"
             "  compute, hbm, fixed costs, dispatch, sync or link; knobs: the tile and\n"
             "  the knobs the kernel ran with)\n");
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
    for (size_t k = 0; k < narms; k++)
      if (arms[k].median_abs_error > fail_above) {
        fprintf(stderr, "xstage validate: arm %s: median |error| %.1f%% is above "
                        "--fail-above %.1f%%\n", arms[k].name,
                100 * arms[k].median_abs_error, 100 * fail_above);
        rc = EXIT_MACHINE;
      }
  cli_sources_free(&row_sources);
  xs_validate_free(&set);
  free(arms);
  free(sources);
  return rc;
}
