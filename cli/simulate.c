/*
 * simulate.c: `xstage simulate`: the packet-level simulation of a program,
 * with burstgap beside it in the text report, the JSON report of predict
 * (model "sim") with --json, and timelines with --trace and --svg.
 */
#include "common.h"

#include <getopt.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

static void help(FILE *f) {
  fprintf(f,
          "usage: xstage simulate --profile P --program FILE [--packet-bytes N]\n"
          "                       [--arbitration rr|fifo] [--json] [--trace FILE]\n"
          "                       [--svg FILE]\n"
          "\n"
          "Simulates the program at packet level (docs/simulate.md): credit of\n"
          "capacity_B bytes per channel, FIFO drain at drain_Bps, injection paced by\n"
          "inject_Bps, worker_inject_Bps and the optional worker_inflight_B.\n"
          "\n"
          "  --profile P          a built-in profile name or a JSON file\n"
          "  --program F          the program, JSON\n"
          "  --packet-bytes N     packet size (default: the channel's packet_B, else\n"
          "                       256); suffixes allowed (4KiB)\n"
          "  --arbitration A      rr (default): one packet per waiting worker in\n"
          "                       turn; fifo: the earliest send first\n"
          "  --json               the JSON report of xstage predict, model \"sim\"\n"
          "  --trace FILE         a Chrome trace for ui.perfetto.dev\n"
          "  --svg FILE           the timeline as an SVG\n");
}

int cmd_simulate(int argc, char **argv) {
  static const struct option opts[] = {
      {"profile", required_argument, 0, 'p'},
      {"program", required_argument, 0, 'f'},
      {"packet-bytes", required_argument, 0, 'b'},
      {"arbitration", required_argument, 0, 'a'},
      {"json", no_argument, 0, 'j'},
      {"trace", required_argument, 0, 't'},
      {"svg", required_argument, 0, 's'},
      {"help", no_argument, 0, 'h'},
      {0, 0, 0, 0}};
  const char *profile = NULL, *program = NULL, *trace = NULL, *svg = NULL;
  xs_sim_options so = {0, XS_ARB_RR, 0, NULL, 0};
  int json = 0, c;
  xs_error err;
  opterr = 0;
  optind = 1;
  while ((c = getopt_long(argc, argv, ":p:f:b:a:jt:s:h", opts, NULL)) != -1) {
    switch (c) {
    case 'p': profile = optarg; break;
    case 'f': program = optarg; break;
    case 'b':
      if (xs_parse_size(optarg, &so.packet_B, &err))
        return cli_usage_error("simulate", "--packet-bytes: %s", err.message);
      if (!(so.packet_B >= 1))
        return cli_usage_error("simulate", "--packet-bytes: must be at least 1 byte, got \"%s\"", optarg);
      break;
    case 'a':
      if (strcmp(optarg, "rr") == 0)
        so.arbitration = XS_ARB_RR;
      else if (strcmp(optarg, "fifo") == 0)
        so.arbitration = XS_ARB_FIFO;
      else
        return cli_usage_error("simulate", "--arbitration: expected rr or fifo, got \"%s\"", optarg);
      break;
    case 'j': json = 1; break;
    case 't': trace = optarg; break;
    case 's': svg = optarg; break;
    case 'h': help(stdout); return EXIT_OK;
    default: return cli_bad_flag("simulate", argc, argv);
    }
  }
  if (optind < argc)
    return cli_usage_error("simulate", "unexpected argument \"%s\"", argv[optind]);
  if (!profile)
    return cli_usage_error("simulate", "--profile is required (a built-in name or a JSON file)");
  if (!program)
    return cli_usage_error("simulate", "--program is required (a JSON file)");
  const char *ins[] = {profile, program}, *outs[] = {trace, svg};
  if (cli_refuse_overwrite("simulate", ins, 2, outs, 2))
    return EXIT_INPUT;
  xs_profile *prof = NULL;
  xs_program *prog = NULL;
  xs_result *sim = NULL, *bg = NULL;
  xs_timeline *tl = NULL;
  int rc = EXIT_OK;
  if (xs_profile_load(profile, &prof, &err) || xs_program_load(program, &prog, &err)) {
    rc = cli_error("simulate", &err);
    goto done;
  }
  if ((rc = cli_timeline_fits("simulate", prog, trace, svg)))
    goto done;
  if (trace || svg) {
    if (!(tl = xs_timeline_new())) {
      rc = EXIT_MACHINE;
      goto done;
    }
    so.timeline = tl;
  }
  if (xs_simulate(prog, prof, &so, &sim, &err) ||
      xs_evaluate(prog, prof, XS_MODEL_BURSTGAP, NULL, &bg, &err)) {
    rc = cli_error("simulate", &err);
    goto done;
  }
  if (json) {
    char *text = xs_report_json(prog, prof, &sim, 1);
    if (!text) {
      rc = EXIT_MACHINE;
      goto done;
    }
    printf("%s\n", text);
    free(text);
  } else {
    char a[32], b[32], d[32], e[32], t1[256], t2[256];
    size_t ns = xs_program_send_count(prog);
    printf("program \"%s\" on profile \"%s\": %zu workers, %zu sends; %llu packet "
           "events, %s arbitration\n\n",
           cli_text(xs_program_name(prog), t1, sizeof t1),
           cli_text(xs_profile_name(prof), t2, sizeof t2), xs_program_worker_count(prog),
           ns, (unsigned long long)sim->events,
           so.arbitration == XS_ARB_RR ? "round-robin" : "FIFO");
    printf("  %-10s %12s %12s\n", "model", "makespan", "issue done");
    printf("  %-10s %12s %12s\n", "sim", xs_format_time(sim->makespan_s, a, sizeof a),
           xs_format_time(sim->issue_done_s, b, sizeof b));
    printf("  %-10s %12s %12s\n", "burstgap", xs_format_time(bg->makespan_s, a, sizeof a),
           xs_format_time(bg->issue_done_s, b, sizeof b));
    printf("\n  sim / burstgap makespan: %.4f\n", sim->makespan_s / bg->makespan_s);
    for (size_t ch = 0; ch < sim->nchannels; ch++)
      if (sim->channels[ch].sends)
        printf("  channel %-10s peak in flight %s (burstgap %s)\n",
               cli_text(xs_profile_channel_name(prof, ch), t1, sizeof t1),
               xs_format_size(sim->channels[ch].peak_backlog_B, a, sizeof a),
               xs_format_size(bg->channels[ch].peak_backlog_B, b, sizeof b));
    if (ns <= 24) {
      printf("\n    %-14s %10s %10s %10s %10s\n", "send", "sim issued", "burstgap",
             "sim deliv.", "burstgap");
      for (size_t s = 0; s < ns; s++) {
        char idb[256];
        printf("    %-14s %10s %10s %10s %10s\n",
               cli_text(xs_program_send_id(prog, s, idb, sizeof idb), t1, sizeof t1),
               xs_format_time(sim->sends[s].issue_end_s, a, sizeof a),
               xs_format_time(bg->sends[s].issue_end_s, b, sizeof b),
               xs_format_time(sim->sends[s].deliver_s, d, sizeof d),
               xs_format_time(bg->sends[s].deliver_s, e, sizeof e));
      }
    }
  }
  if (tl)
    rc = cli_write_timelines("simulate", prog, prof, sim, tl, trace, svg);
done:
  xs_result_free(sim);
  xs_result_free(bg);
  xs_timeline_free(tl);
  xs_program_free(prog);
  xs_profile_free(prof);
  return rc;
}
