/*
 * predict.c: `xstage predict`: evaluate a program on a profile under the
 * Burst-Gap model and its baselines, side by side, as text for people or
 * as the JSON report (docs/predict.md) for programs.
 */
#include "common.h"

#include <getopt.h>
#include <stdlib.h>
#include <string.h>

static void help(FILE *f) {
  fprintf(f,
          "usage: xstage predict --profile P --program FILE [--model M] [--json]\n"
          "                      [--trace FILE] [--svg FILE]\n"
          "\n"
          "Evaluates a program (docs/formats.md \"Program\") on a profile.\n"
          "\n"
          "  --profile P   a built-in profile name (xstage profiles) or a JSON file\n"
          "  --program F   the program, JSON\n"
          "  --model M     burstgap, blocking, serial, ideal or all (default all)\n"
          "  --json        print the JSON report instead of text\n"
          "  --trace FILE  write a Chrome trace of burstgap (or of --model M when it\n"
          "                is blocking) for ui.perfetto.dev\n"
          "  --svg FILE    write the same timeline as an SVG\n"
          "  --help        this text\n"
          "\n"
          "Exit status: 0 success, 1 a failure of the machine (I/O), 2 bad input.\n");
}

#define MAX_SEND_TABLE 24

static void print_text(FILE *out, const xs_program *prog,
                       const xs_profile *prof, xs_result *const *res,
                       size_t n) {
  char a[32], b[32], c[32], d[32], e[32];
  const xs_result *bg = NULL, *bl = NULL, *se = NULL, *id = NULL;
  for (size_t i = 0; i < n; i++) {
    switch (res[i]->model) {
    case XS_MODEL_BURSTGAP: bg = res[i]; break;
    case XS_MODEL_BLOCKING: bl = res[i]; break;
    case XS_MODEL_SERIAL: se = res[i]; break;
    default: id = res[i]; break;
    }
  }
  /* workers and sends counted with their copies */
  size_t nsends = 0, nworkers = 0;
  double bytes = 0;
  for (size_t s = 0; s < xs_program_send_count(prog); s++) {
    size_t k = xs_program_worker_copies(prog, xs_program_send_worker(prog, s));
    bytes += xs_program_send_bytes(prog, s) * (double)k;
    nsends += k;
  }
  for (size_t w = 0; w < xs_program_worker_count(prog); w++)
    nworkers += xs_program_worker_copies(prog, w);
  char t1[256], t2[256];
  fprintf(out, "program \"%s\" on profile \"%s\": %zu worker%s, %zu send%s, %s\n\n",
          cli_text(xs_program_name(prog), t1, sizeof t1),
          cli_text(xs_profile_name(prof), t2, sizeof t2), nworkers,
          nworkers == 1 ? "" : "s", nsends, nsends == 1 ? "" : "s",
          xs_format_size(bytes, a, sizeof a));
  double ref = bg ? bg->makespan_s : 0;
  fprintf(out, "  %-10s %12s %12s %14s\n", "model", "makespan", "issue done",
          ref > 0 ? "vs burstgap" : "");
  for (size_t i = 0; i < n; i++) {
    const xs_result *r = res[i];
    int full = r->model == XS_MODEL_BURSTGAP || r->model == XS_MODEL_BLOCKING;
    char ratio[32] = "";
    if (ref > 0)
      snprintf(ratio, sizeof ratio, "%.3fx", r->makespan_s / ref);
    fprintf(out, "  %-10s %12s %12s %14s\n", xs_model_name(r->model),
            xs_format_time(r->makespan_s, a, sizeof a),
            full ? xs_format_time(r->issue_done_s, b, sizeof b) : "-", ratio);
  }
  if (bg && (bl || se || id)) {
    /* one program under two models: how far off a model is, not a speedup */
    fprintf(out, "\n  (vs burstgap: another model's makespan of the same program over "
                 "burstgap's; how\n  far a model that treats sends as blocking, "
                 "serial or free is off, not a speedup)\n");
  }
  for (size_t i = 0; i < n; i++) {
    const xs_result *r = res[i];
    if (r->model != XS_MODEL_BURSTGAP && r->model != XS_MODEL_BLOCKING)
      continue;
    double comp = 0, iss = 0, ovh = 0, stall = 0, blk = 0, nw = 0;
    for (size_t w = 0; w < r->nworkers; w++) {
      double k = (double)xs_program_worker_copies(prog, w);
      comp += k * r->workers[w].compute_s;
      iss += k * r->workers[w].issue_s;
      ovh += k * r->workers[w].overhead_s;
      blk += k * r->workers[w].blocked_s;
      stall += k * (r->workers[w].stall_s - r->workers[w].blocked_s);
      nw += k;
    }
    double m = r->makespan_s;
    double pct = m > 0 ? 100.0 / m : 0;
    if (nw == 0)
      nw = 1;
    fprintf(out, "\n  where the time goes (%s, mean over %.0f worker%s):\n",
            xs_model_name(r->model), nw, nw == 1 ? "" : "s");
    fprintf(out, "    %-22s %10s %5.1f%%\n", "compute",
            xs_format_time(comp / nw, a, sizeof a), comp / nw * pct);
    fprintf(out, "    %-22s %10s %5.1f%%\n", "issue at full rate",
            xs_format_time((iss - ovh - stall) / nw, a, sizeof a),
            (iss - ovh - stall) / nw * pct);
    if (ovh > 0)
      fprintf(out, "    %-22s %10s %5.1f%%\n", "issue overhead",
              xs_format_time(ovh / nw, a, sizeof a), ovh / nw * pct);
    fprintf(out, "    %-22s %10s %5.1f%%\n", "backpressure stall",
            xs_format_time(stall / nw, a, sizeof a), stall / nw * pct);
    fprintf(out, "    %-22s %10s %5.1f%%\n", "blocked in wait/fence",
            xs_format_time(blk / nw, a, sizeof a), blk / nw * pct);
    fprintf(out, "    %-22s %10s %5.1f%%   (makespan - issue done)\n",
            "X-stage tail", xs_format_time(m - r->issue_done_s, a, sizeof a),
            (m - r->issue_done_s) * pct);
    for (size_t ch = 0; ch < r->nchannels; ch++) {
      if (!r->channels[ch].sends)
        continue;
      const xs_channel *k = xs_profile_channel(prof, ch);
      if (r->model == XS_MODEL_BLOCKING)
        fprintf(out, "    channel %-14s %s, nothing in flight (blocking)\n",
                cli_text(xs_profile_channel_name(prof, ch), t1, sizeof t1),
                xs_format_size(r->channels[ch].bytes, a, sizeof a));
      else
        fprintf(out, "    channel %-14s %s, peak backlog %s of %s capacity\n",
                cli_text(xs_profile_channel_name(prof, ch), t1, sizeof t1),
                xs_format_size(r->channels[ch].bytes, a, sizeof a),
                xs_format_size(r->channels[ch].peak_backlog_B, b, sizeof b),
                xs_format_size(k->capacity_B, c, sizeof c));
    }
  }
  if (bg && bl) {
    size_t hol = 0;
    for (size_t w = 0; w < bg->nworkers; w++)
      if (bg->workers[w].finish_s > bl->workers[w].finish_s * (1 + 1e-9)) {
        if (hol++ < 4)
          fprintf(out,
                  "\n  note: worker \"%s\" finishes later under burstgap (%s) "
                  "than blocking (%s):\n        head-of-line blocking, its wait "
                  "queues behind other workers' backlog",
                  cli_text(xs_program_worker_name(prog, w), t1, sizeof t1),
                  xs_format_time(bg->workers[w].finish_s, a, sizeof a),
                  xs_format_time(bl->workers[w].finish_s, b, sizeof b));
      }
    if (hol > 4)
      fprintf(out, "\n  note: %zu workers in all finish later under burstgap",
              hol);
    if (hol)
      fprintf(out, "\n");
  }
  if (bg && bg->sends && nsends <= MAX_SEND_TABLE) {
    fprintf(out, "\n  sends under burstgap:\n");
    fprintf(out, "    %-14s %-8s %10s %10s %10s %10s %10s %10s\n", "id",
            "worker", "bytes", "start", "issued", "delivered", "X-stage",
            "stall");
    for (size_t s = 0; s < nsends; s++) {
      const xs_send_result *sr = &bg->sends[s];
      char idb[256], f[32], g[32];
      fprintf(out, "    %-14s %-8s %10s %10s %10s %10s %10s %10s\n",
              cli_text(xs_program_send_id(prog, s, idb, sizeof idb), t1, sizeof t1),
              cli_text(xs_program_worker_name(prog, xs_program_send_worker(prog, s)), t2,
                       sizeof t2),
              xs_format_size(xs_program_send_bytes(prog, s), a, sizeof a),
              xs_format_time(sr->issue_start_s, b, sizeof b),
              xs_format_time(sr->issue_end_s, c, sizeof c),
              xs_format_time(sr->deliver_s, d, sizeof d),
              xs_format_time(sr->xstage_s, e, sizeof e),
              xs_format_time(sr->stall_s, f, sizeof f));
      (void)g;
    }
  } else if (bg && nsends > MAX_SEND_TABLE) {
    fprintf(out, "\n  (%zu sends: use --json for the table per send)\n",
            nsends);
  }
}

int cli_predict_report(const char *cmd, const xs_program *prog,
                       const xs_profile *prof, const xs_model *models,
                       size_t nmodels, int json, FILE *out) {
  xs_result *res[XS_MODEL_COUNT] = {0};
  xs_error err;
  int rc = EXIT_OK;
  for (size_t i = 0; i < nmodels; i++)
    if (xs_evaluate(prog, prof, models[i], NULL, &res[i], &err)) {
      rc = cli_error(cmd, &err);
      goto done;
    }
  if (json) {
    char *text = xs_report_json(prog, prof, res, nmodels);
    if (!text) {
      fprintf(stderr, "xstage %s: out of memory\n", cmd);
      rc = EXIT_MACHINE;
      goto done;
    }
    fprintf(out, "%s\n", text);
    free(text);
  } else {
    print_text(out, prog, prof, res, nmodels);
  }
done:
  for (size_t i = 0; i < nmodels; i++)
    xs_result_free(res[i]);
  return rc;
}

int cli_parse_models(const char *cmd, const char *arg, xs_model *models,
                     size_t *n);
int cli_parse_models(const char *cmd, const char *arg, xs_model *models,
                     size_t *n) {
  if (!arg || strcmp(arg, "all") == 0) {
    for (int i = 0; i < XS_MODEL_COUNT; i++)
      models[i] = (xs_model)i;
    *n = XS_MODEL_COUNT;
    return 0;
  }
  if (xs_model_from_name(arg, &models[0]) != 0)
    return cli_usage_error(cmd,
                           "--model: unknown model \"%s\" (burstgap, blocking, "
                           "serial, ideal, all)",
                           arg);
  *n = 1;
  return 0;
}

int cmd_predict(int argc, char **argv) {
  static const struct option opts[] = {{"profile", required_argument, 0, 'p'},
                                       {"program", required_argument, 0, 'f'},
                                       {"model", required_argument, 0, 'm'},
                                       {"json", no_argument, 0, 'j'},
                                       {"trace", required_argument, 0, 't'},
                                       {"svg", required_argument, 0, 's'},
                                       {"help", no_argument, 0, 'h'},
                                       {0, 0, 0, 0}};
  const char *profile = NULL, *program = NULL, *model = NULL;
  const char *trace = NULL, *svg = NULL;
  int json = 0, c;
  opterr = 0;
  optind = 1;
  while ((c = getopt_long(argc, argv, ":p:f:m:jt:s:h", opts, NULL)) != -1) {
    switch (c) {
    case 'p': profile = optarg; break;
    case 'f': program = optarg; break;
    case 'm': model = optarg; break;
    case 'j': json = 1; break;
    case 't': trace = optarg; break;
    case 's': svg = optarg; break;
    case 'h': help(stdout); return EXIT_OK;
    default: return cli_bad_flag("predict", argc, argv);
    }
  }
  if (optind < argc)
    return cli_usage_error("predict", "unexpected argument \"%s\"",
                           argv[optind]);
  if (!profile)
    return cli_usage_error("predict", "--profile is required (a built-in "
                                      "name or a JSON file)");
  if (!program)
    return cli_usage_error("predict", "--program is required (a JSON file)");
  xs_model models[XS_MODEL_COUNT];
  size_t nmodels = 0;
  if (cli_parse_models("predict", model, models, &nmodels))
    return EXIT_INPUT;
  const char *ins[] = {profile, program}, *outs[] = {trace, svg};
  if (cli_refuse_overwrite("predict", ins, 2, outs, 2))
    return EXIT_INPUT;
  xs_error err;
  xs_profile *prof = NULL;
  xs_program *prog = NULL;
  int rc;
  if (xs_profile_load(profile, &prof, &err)) {
    rc = cli_error("predict", &err);
  } else if (xs_program_load(program, &prog, &err)) {
    rc = cli_error("predict", &err);
  } else if ((rc = cli_timeline_fits("predict", prog, trace, svg))) {
    /* said */
  } else {
    rc = cli_predict_report("predict", prog, prof, models, nmodels, json,
                            stdout);
    if (!rc)
      rc = cli_program_outputs("predict", prog, prof,
                               nmodels == 1 && models[0] == XS_MODEL_BLOCKING
                                   ? XS_MODEL_BLOCKING
                                   : XS_MODEL_BURSTGAP,
                               NULL, trace, svg);
  }
  xs_program_free(prog);
  xs_profile_free(prof);
  return rc;
}
