/*
 * plan.c: `xstage plan megamoe` plans one MoE config (three schedules, the
 * interleave search, where the time goes) and `xstage sweep megamoe` runs
 * the planner over a grid of presets and token counts.
 */
#define _POSIX_C_SOURCE 200809L
#include "common.h"

#include <getopt.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>


static void plan_help(FILE *f) {
  fprintf(f,
          "usage: xstage plan megamoe (--preset NAME | --config FILE) [--tokens N]\n"
          "                           [--ep P] --profile P [--fabric F] [--json | --csv]\n"
          "                           [--ep-library L] [--ep-kernel K]\n"
          "                           [--compute P2] [--schedule S]\n"
          "                           [--emit-program FILE] [--trace FILE] [--svg FILE]\n"
          "                           [--tolerance F] [--schedules LIST] [--sensitivity]\n"
          "       xstage plan megamoe ... (--tokens-grid LIST | --tokens-range MIN:MAX)\n"
          "                           [--json | --csv]\n"
          "                           [--emit-header FILE [--header-prefix NAME]]\n"
          "\n"
          "Plans one rank of an expert-parallel MoE layer (dispatch, Linear-1,\n"
          "SwiGLU, Linear-2, combine) with the kernel model of docs/plan-megamoe.md:\n"
          "the unfused sequential schedule, the fused schedules real kernels use\n"
          "(fused-split, fused-wave, fused-interleaved, fused-lag), the lag kernel\n"
          "run as one wave (l1-then-l2) and xstage's searched interleavings on it;\n"
          "each one's knobs searched under burstgap, its time under burstgap,\n"
          "blocking, serial and ideal, where the time goes (HBM, GEMM compute,\n"
          "fixed costs, link), and the call each option is: the kernel, its\n"
          "arguments, or a proposal and the change it needs (\"The calls\").\n"
          "\n"
          "  --preset NAME      deepseek-v3, deepseek-v4-flash, deepseek-v4-pro,\n"
          "                     qwen3.5, glm, qwen3-235b, mixtral-8x7b\n"
          "  --config FILE      a JSON config (docs/plan-megamoe.md)\n"
          "  --tokens N         tokens per rank (default 4096); counts take k, M (10^3,\n"
          "                     10^6) and Ki, Mi (2^10, 2^20): 4Ki = 4096, 4k = 4000\n"
          "  --ep P             expert-parallel ranks (default 8)\n"
          "  --profile P        a profile with a compute section\n"
          "  --fabric F         the network between nodes (ib-400, roce-200, efa-400,\n"
          "                     or a fabric profile's file): ranks past the profile's\n"
          "                     node_gpus are on other nodes and their share of the\n"
          "                     traffic crosses it; an EP past one node needs one\n"
          "  --ep-library L     the sequential arm's all-to-all, as ep.csv names it:\n"
          "                     deepep-v1, deepep-v2 (default), deepep-hybrid,\n"
          "                     pplx-kernels, uccl-ep (docs/ep.md)\n"
          "  --ep-kernel K      its mode: normal (default) or low-latency\n"
          "  --compute P2       take the compute section from P2 instead (a measured\n"
          "                     channel, e.g. from xstage calibrate, with a published GPU)\n"
          "  --json             machine-readable output\n"
          "  --csv              one header line, one line a schedule (a table: a line\n"
          "                     a token count): --json's keys, nested ones joined\n"
          "                     with \".\", a call as its Python\n"
          "  --schedule S       the schedule the three outputs below show: sequential,\n"
          "                     l1-then-l2, searched (default; also \"interleaved\"),\n"
          "                     fused-split, fused-wave, fused-interleaved, fused-lag\n"
          "  --emit-program F   write that schedule's program (- = stdout)\n"
          "  --trace F, --svg F its timeline under burstgap\n"
          "\n"
          "What a kernel can follow (docs/plan-megamoe.md \"Knob tables\"):\n"
          "  --tolerance F      options within F of the fastest count as equal: the\n"
          "                     recommended one is the simplest of them (fewest knobs\n"
          "                     away from the kernel's default); 0.01 or 1%% (default)\n"
          "  --schedules LIST   choose only among these (comma-separated names)\n"
          "  --sensitivity      how the recommended option's time and the choice move\n"
          "                     when each number of the profile moves over the range\n"
          "                     its kind of source gives it (a measurement its spread,\n"
          "                     a datasheet rate x0.7-x1, a lead its plausible range;\n"
          "                     docs/tune.md \"Sensitivity\")\n"
          "  --tokens-grid LIST a knob table: the stable choice per token count; LIST\n"
          "                     is values and ranges FIRST:LAST[:STEP] or FIRST:LAST:xF\n"
          "                     (times F each step), ascending, at most 4096 points\n"
          "                     (64,128 or 64:4096:64 or 16:8Ki:x2)\n"
          "  --tokens-range A:B a run-time table from A to B tokens: 32 points per\n"
          "                     octave, more where the count halfway between two\n"
          "                     would lose more than the tolerance\n"
          "  --emit-header F    the table as a C header with a lookup function (- =\n"
          "                     stdout); needs no xstage to build\n"
          "  --header-prefix N  names in the header start with N (xstage_moe)\n");
}

static void sweep_help(FILE *f) {
  fprintf(f,
          "usage: xstage sweep megamoe [--profile P] [--fabric F] [--grid FILE]\n"
          "                            [--ep-library L] [--ep-kernel K] [--json | --csv]\n"
          "\n"
          "Plans every config of a grid; the default is the 7 presets x 12 token\n"
          "counts per rank (16 to 32768, powers of two) at EP 8. Prints one row per\n"
          "config and a summary: the geometric-mean and largest speedup of the\n"
          "best interleaved schedule over the best of the others under burstgap,\n"
          "the same ratio as blocking predicts it, how close interleaved comes to\n"
          "ideal, and each row's kernels (* a proposal).\n"
          "\n"
          "  --profile P   the GPU (needed unless the grid names one)\n"
          "  --grid FILE   JSON: {\"presets\": [...], \"tokens\": [...], \"ep\": [...],\n"
          "                \"profile\": \"h200-nvlink\"} (each optional); at most 4096\n"
          "                values a list and 20000 configs in all\n"
          "  --fabric F    the network between nodes, for an EP past the profile's\n"
          "                node_gpus (ib-400, roce-200, efa-400)\n"
          "  --ep-library L, --ep-kernel K  the sequential arm's all-to-all (as\n"
          "                plan megamoe; default deepep-v2 normal)\n"
          "  --json        {\"profile\", \"configs\": [...], \"summary\": {...}}\n"
          "  --csv         one header line, one line per config\n");
}

int cli_moe_ep_library(const char *cmd, const char *library, const char *kernel,
                       xs_moe_config *c, int say) {
  if (library)
    snprintf(c->ep_library, sizeof c->ep_library, "%s", library);
  if (kernel)
    snprintf(c->ep_kernel, sizeof c->ep_kernel, "%s", kernel);
  xs_error err;
  if ((library || kernel) && xs_moe_config_check(c, &err))
    return say ? cli_usage_error(cmd, "--ep-library, --ep-kernel: %s", err.message)
               : EXIT_INPUT;
  return 0;
}

/* Config from a preset or a file, then the command-line overrides. */
static int load_config(const char *cmd, const char *preset, const char *file,
                       const char *tokens, const char *ep, xs_moe_config *c) {
  xs_error err;
  if (!!preset == !!file)
    return cli_usage_error(cmd, "give one of --preset NAME or --config FILE");
  if (preset && xs_moe_preset(preset, c) != 0) {
    char list[512] = "";
    for (size_t i = 0; i < xs_moe_preset_count(); i++) {
      strcat(list, i ? ", " : "");
      strcat(list, xs_moe_preset_name(i));
    }
    return cli_usage_error(cmd, "--preset: unknown \"%s\" (%s)", preset, list);
  }
  if (file) {
    char *text;
    size_t len;
    int rrc = cli_read_file(cmd, file, CLI_INPUT_LIMIT, &text, &len);
    if (rrc)
      return rrc;
    xs_status st = xs_moe_config_parse(text, len, file, c, &err);
    free(text);
    if (st)
      return cli_error(cmd, &err);
  }
  int prc;
  if (tokens && (prc = cli_parse_count(cmd, "--tokens", tokens, 1, 1e7, &c->tokens)))
    return prc;
  if (ep && (prc = cli_parse_count(cmd, "--ep", ep, 1, 1e5, &c->ep)))
    return prc;
  if (xs_moe_config_check(c, &err))
    return cli_usage_error(cmd, "%s", err.message);
  return 0;
}

int cmd_plan(int argc, char **argv) {
  if (argc >= 2 && (strcmp(argv[1], "--help") == 0 || strcmp(argv[1], "-h") == 0)) {
    plan_help(stdout);
    return EXIT_OK;
  }
  if (argc < 2 || strcmp(argv[1], "megamoe") != 0)
    return cli_usage_error("plan", "expected a planner: megamoe or flashattn");
  static const struct option opts[] = {
      {"preset", required_argument, 0, 'r'}, {"config", required_argument, 0, 'c'},
      {"tokens", required_argument, 0, 't'}, {"ep", required_argument, 0, 'e'},
      {"profile", required_argument, 0, 'p'}, {"json", no_argument, 0, 'j'},
      {"emit-program", required_argument, 0, 'o'}, {"trace", required_argument, 0, 'T'},
      {"svg", required_argument, 0, 'S'}, {"compute", required_argument, 0, 'C'},
      {"schedule", required_argument, 0, 's'}, {"help", no_argument, 0, 'h'},
      {"tokens-grid", required_argument, 0, 'G'}, {"tolerance", required_argument, 0, 'L'},
      {"schedules", required_argument, 0, 'Q'}, {"emit-header", required_argument, 0, 'H'},
      {"header-prefix", required_argument, 0, 'X'}, {"sensitivity", no_argument, 0, 'V'},
      {"tokens-range", required_argument, 0, 'R'}, {"fabric", required_argument, 0, 'F'},
      {"ep-library", required_argument, 0, 'l'}, {"ep-kernel", required_argument, 0, 'k'},
      {"csv", no_argument, 0, 'y'}, {0, 0, 0, 0}};
  const char *preset = NULL, *file = NULL, *tokens = NULL, *ep = NULL, *profile = NULL;
  const char *fabric = NULL, *ep_library = NULL, *ep_kernel = NULL;
  const char *emit = NULL, *trace = NULL, *svg = NULL, *compute = NULL;
  const char *grid_text = NULL, *range_text = NULL, *header = NULL, *prefix = NULL;
  xs_moe_schedule sched = XS_MOE_INTERLEAVED;
  double tol = 0.01;
  unsigned schedules = 0;
  int json = 0, csv = 0, sensitivity = 0, c, prc;
  opterr = 0;
  optind = 2;
  while ((c = getopt_long(argc, argv, ":r:c:t:e:p:jo:T:S:C:s:hG:L:Q:H:X:VR:F:l:k:y",
                          opts, NULL)) != -1) {
    switch (c) {
    case 'F':
      if (cli_once("plan", "--fabric", &fabric, optarg))
        return EXIT_INPUT;
      break;
    case 'l':
      if (cli_once("plan", "--ep-library", &ep_library, optarg))
        return EXIT_INPUT;
      break;
    case 'k':
      if (cli_once("plan", "--ep-kernel", &ep_kernel, optarg))
        return EXIT_INPUT;
      break;
    case 'G': grid_text = optarg; break;
    case 'R': range_text = optarg; break;
    case 'L':
      if ((prc = cli_parse_tolerance("plan", optarg, &tol)))
        return prc;
      break;
    case 'Q':
      if ((prc = cli_parse_schedules("plan", optarg, &schedules)))
        return prc;
      break;
    case 'H': header = optarg; break;
    case 'X': prefix = optarg; break;
    case 'V': sensitivity = 1; break;
    case 'C': compute = optarg; break;
    case 's': {
      int k = xs_moe_schedule_from_name(optarg);
      if (k < 0)
        return cli_usage_error("plan", "--schedule: expected sequential, l1-then-l2, "
                                       "searched, fused-split, fused-wave, "
                                       "fused-interleaved or fused-lag, got \"%s\"", optarg);
      sched = (xs_moe_schedule)k;
      break;
    }
    case 'r': preset = optarg; break;
    case 'c': file = optarg; break;
    case 't': tokens = optarg; break;
    case 'e': ep = optarg; break;
    case 'p':
      if (cli_once("plan", "--profile", &profile, optarg))
        return EXIT_INPUT;
      break;
    case 'j': json = 1; break;
    case 'y': csv = 1; break;
    case 'o': emit = optarg; break;
    case 'T': trace = optarg; break;
    case 'S': svg = optarg; break;
    case 'h': plan_help(stdout); return EXIT_OK;
    default: return cli_bad_flag("plan", argc, argv);
    }
  }
  if (optind < argc)
    return cli_usage_error("plan", "unexpected argument \"%s\"", argv[optind]);
  if (!profile)
    return cli_usage_error("plan", "--profile is required");
  if ((prc = cli_plan_format("schedules", csv, sensitivity, &json)))
    return prc;
  if (grid_text && range_text)
    return cli_usage_error("plan", "give one of --tokens-grid and --tokens-range");
  const char *table_flag = grid_text ? "--tokens-grid" : "--tokens-range";
  if ((grid_text || range_text) && (tokens || emit || trace || svg || sensitivity))
    return cli_usage_error("plan", "%s plans a table: it does not take --tokens, "
                                   "--emit-program, --trace, --svg or --sensitivity",
                           table_flag);
  if (header && !grid_text && !range_text)
    return cli_usage_error("plan", "--emit-header needs --tokens-grid or --tokens-range");
  if ((prc = cli_header_prefix("plan", header, prefix, "xstage_moe", &prefix)))
    return prc;
  const char *ins[] = {file, profile, compute}, *outs[] = {emit, trace, svg, header};
  if (cli_refuse_overwrite("plan", ins, 3, outs, 4))
    return EXIT_INPUT;
  double *grid = NULL, range[2] = {0, 0};
  size_t ngrid = 0;
  if (grid_text && (prc = cli_parse_tokens_grid("plan", "--tokens-grid", grid_text,
                                                &grid, &ngrid)))
    return prc;
  if (range_text && (prc = cli_parse_tokens_range("plan", range_text, range)))
    return prc;
  xs_moe_config cfg;
  int rc = load_config("plan", preset, file, tokens, ep, &cfg);
  if (!rc)
    rc = cli_moe_ep_library("plan", ep_library, ep_kernel, &cfg, 1);
  if (rc) {
    free(grid);
    return rc;
  }
  xs_error err;
  xs_profile *prof;
  if (xs_profile_load_fabric(profile, fabric, &prof, &err)) {
    free(grid);
    return cli_error("plan", &err);
  }
  cli_profile_from(profile, prof);
  if (compute) {
    xs_profile *cp;
    if (xs_profile_load(compute, &cp, &err)) {
      xs_profile_free(prof);
      free(grid);
      return cli_error("plan", &err);
    }
    xs_status cst = xs_profile_copy_compute(prof, cp, &err);
    xs_profile_free(cp);
    if (cst) {
      xs_profile_free(prof);
      free(grid);
      cli_say("plan", "--compute %s: %s", compute, err.message);
      return EXIT_INPUT;
    }
  }
  if (grid || range_text) {
    xs_moe_table_options to = {grid, ngrid, range[0], range[1], tol, schedules};
    rc = cli_moe_table("plan", &cfg, prof, &to, json, header, prefix);
    free(grid);
    xs_profile_free(prof);
    return rc;
  }
  xs_moe_result r;
  xs_moe_pick pick;
  xs_moe_sensitivity *sens = NULL;
  size_t nsens = 0;
  if (json) {
    char *s;
    if (xs_moe_plan_json(&cfg, prof, tol, schedules, sensitivity, &r, &s, &err)) {
      rc = cli_error("plan", &err);
      goto done;
    }
    static const char *const by_schedule[] = {"schedule", NULL};
    if (json == 2)
      rc = cli_csv_document("plan", s, "schedules", "schedule", "recommended.chosen",
                            by_schedule);
    else
      printf("%s\n", s);
    xs_free(s);
  } else if (sensitivity) {
    /* first, so that work past its bound is refused before any plan */
    sens = malloc(XS_MOE_SENS_MAX * sizeof *sens);
    if (!sens) {
      rc = cli_out_of_memory("plan");
      goto done;
    }
    if (xs_moe_sensitivity_run(&cfg, prof, tol, schedules, &pick, sens, &nsens, &err) ||
        xs_moe_plan(&cfg, prof, &r, &err)) {
      rc = cli_error("plan", &err);
      goto done;
    }
  } else if (xs_moe_plan(&cfg, prof, &r, &err)) {
    rc = cli_error("plan", &err);
    goto done;
  } else if (xs_moe_recommend(&cfg, prof, tol, schedules, &pick, &err)) {
    rc = cli_error("plan", &err);
    goto done;
  }
  if (!json) {
    const xs_moe_workload *w = &r.work;
    char a[32], b[32], d[32], e[32];
    printf("MegaMoE plan: %s, %g tokens per rank, EP %g, on %s\n", cli_name_text(cfg.name),
           cfg.tokens, cfg.ep, cli_profile_given(prof));
    printf("  H %g, I %g, %g experts (%g per rank), top-%g, %s GEMMs, "
           "dispatch %g B/element, combine %g B/element\n",
           cfg.hidden, cfg.intermediate, cfg.experts, cfg.experts / cfg.ep, cfg.topk,
           cfg.dtype, cfg.act_bytes, cfg.combine_bytes);
    printf("  the busiest rank (whose time the kernels take): %g token-expert pairs "
           "(a rank's mean %g),\n  %.1f rows per touched expert, %.1f of %g "
           "experts touched; %.3g TFLOP; weights %s\n",
           w->pairs, w->mean_pairs, w->tokens_per_expert, w->experts_touched,
           cfg.experts / cfg.ep, w->flops / 1e12,
           xs_format_size(w->weights_B, a, sizeof a));
    printf("  MMA peak %.0f TFLOP/s on %g SMs, L2 %.1f TB/s; off-rank dispatch %s, "
           "combine %s\n",
           w->mma_flops_per_s / 1e12, w->sms, w->l2_Bps / 1e12,
           xs_format_size(w->dispatch_B, d, sizeof d),
           xs_format_size(w->combine_B, e, sizeof e));
    double node = xs_profile_node_gpus(prof);
    printf("  EP %g on %g node%s of %g GPUs%s%s; the sequential arm's all-to-all: %s "
           "%s (docs/ep.md)\n\n", cfg.ep, ceil(cfg.ep / node), cfg.ep > node ? "s" : "",
           node, xs_profile_fabric(prof) ? ", over " : "",
           xs_profile_fabric(prof) ? xs_profile_fabric(prof) : "",
           cfg.ep_library[0] ? cfg.ep_library : "deepep-v2",
           cfg.ep_kernel[0] ? cfg.ep_kernel : "normal");
    char kb[64];
    printf("  %-18s %9s %9s %9s %9s  %-27s %-8s %8s %8s %8s %8s %8s %8s\n",
           "schedule", "burstgap", "blocking", "serial", "ideal", "knobs", "bound",
           "compute", "hbm", "fixed", "dispatch", "sync", "link");
    for (int k = 0; k < XS_MOE_SCHEDULES; k++) {
      const xs_moe_breakdown *bd = &r.breakdown[k];
      char t[6][16], m[4][16];
      const double v[6] = {bd->compute_s, bd->hbm_s, bd->fixed_s, bd->dispatch_s,
                           bd->sync_s, bd->link_s};
      for (int x = 0; x < 6; x++)
        xs_format_time(v[x], t[x], sizeof t[x]);
      for (int x = 0; x < 4; x++)
        xs_format_time(r.time_s[k][x], m[x], sizeof m[x]);
      printf("  %-18s %9s %9s %9s %9s  %-27s %-8s %8s %8s %8s %8s %8s %8s\n",
             xs_moe_schedule_name((xs_moe_schedule)k), m[0], m[1], m[2], m[3],
             cli_moe_knobs((xs_moe_schedule)k, &r.knobs[k], kb, sizeof kb),
             bd->bound, t[0], t[1], t[2], t[3], t[4], t[5]);
    }
    /* what each row runs: the call, or the proposal and its kernel */
    printf("\n  the kernels (docs/plan-megamoe.md \"The calls\"; the recommended "
           "option's call in full below):\n");
    for (int k = 0; k < XS_MOE_SCHEDULES; k++) {
      xs_moe_call call;
      char line[512];
      printf("    %-18s ", xs_moe_schedule_name((xs_moe_schedule)k));
      if (cli_moe_call(&cfg, prof, (xs_moe_schedule)k, &r.knobs[k], &call)) {
        printf("-\n");
        continue;
      }
      if (call.proposal)
        snprintf(line, sizeof line, "a proposal on %s: %s", call.label, call.change);
      else
        snprintf(line, sizeof line, "%s; %s", call.label, call.order);
      cli_wrap(line, 23, 23);
    }
    printf("\n  fastest fused schedule: %s, %.3fx over sequential\n",
           xs_moe_schedule_name(r.best_fused),
           r.time_s[0][0] / r.time_s[r.best_fused][0]);
    printf("  searched orders over all L1 first (l1-then-l2), on the same kernel: "
           "%.3fx under\n  burstgap, %.3fx as blocking predicts it (%u programs "
           "evaluated)\n",
           r.time_s[1][0] / r.time_s[2][0], r.time_s[1][1] / r.time_s[2][1], r.searched);
    /* the X-stage tail of each row, part of its link column */
    char tails[256] = "";
    size_t at = 0;
    for (int k = 0; k < XS_MOE_SCHEDULES; k++) {
      if (!(r.breakdown[k].xstage_tail_s > 0))
        continue;
      int wr = snprintf(tails + at, sizeof tails - at, "%s%s %s", at ? ", " : "",
                        xs_moe_schedule_name((xs_moe_schedule)k),
                        xs_format_time(r.breakdown[k].xstage_tail_s, b, sizeof b));
      if (wr > 0 && (size_t)wr < sizeof tails - at)
        at += (size_t)wr;
    }
    printf("  (where the time goes, on the SMs that finish last: compute: GEMM tiles;\n"
           "  hbm: waiting for HBM; fixed: launches, grid syncs, routing, host round\n"
           "  trips; dispatch: waiting for tokens; sync: waiting for other SMs (tile\n"
           "  dependencies, ring slots, barriers); link: issuing and stalling on the\n"
           "  link, flags to other ranks, and the X-stage tail, the link's delivery\n"
           "  after the last SM is done: ");
    if (at)
      cli_wrap(tails, 2, 31);
    else
      printf("0 ns in every row)\n");
    if (at)
      printf("  )\n");
    /* serial below burstgap: a pipeline of kernels, which serial does not add
     * up (docs/plan-megamoe.md "Output") */
    char below[256] = "";
    at = 0;
    for (int k = 0; k < XS_MOE_SCHEDULES; k++)
      if (r.time_s[k][XS_MODEL_SERIAL] < r.time_s[k][XS_MODEL_BURSTGAP]) {
        int wr = snprintf(below + at, sizeof below - at, "%s%s", at ? ", " : "",
                          xs_moe_schedule_name((xs_moe_schedule)k));
        if (wr > 0 && (size_t)wr < sizeof below - at)
          at += (size_t)wr;
      }
    if (at) {
      char note[768];
      snprintf(note, sizeof note,
               "serial is below burstgap for %s: serial adds the link's transfer "
               "time to the busiest worker's own compute, but here the dispatch "
               "and combine kernels (and the host's wait for the counts) are "
               "workers of their own that every SM waits for, one kernel after "
               "another; serial does not add them up, burstgap and blocking do. "
               "Serial is a bound for a kernel whose own SMs send, not for a "
               "pipeline of kernels.",
               below);
      printf("  ");
      cli_wrap(note, 2, 2);
    }
    printf("\n");
    cli_moe_pick_print(&cfg, prof, &pick, tol);
    xs_moe_call chosen;
    if (!cli_moe_call(&cfg, prof, pick.chosen.schedule, &pick.chosen.knobs, &chosen) &&
        chosen.proposal) {
      xs_moe_option ship;
      if (xs_moe_fastest_shipping(&cfg, prof, schedules, &ship, &err)) {
        rc = cli_error("plan", &err);
        goto done;
      }
      xs_moe_call sc;
      char words[128], lb[64];
      if (isnan(ship.time_s) || cli_moe_call(&cfg, prof, ship.schedule, &ship.knobs, &sc))
        printf("    the recommended option is a proposal, and no option here runs on "
               "an existing kernel as given\n");
      else
        printf("    the recommended option is a proposal; the fastest an existing "
               "kernel runs as given:\n      %s, %s (%+.1f%%), %s\n",
               cli_moe_option_words(&ship, words, sizeof words),
               xs_format_time(ship.time_s, b, sizeof b),
               100 * (ship.time_s / pick.chosen.time_s - 1),
               cli_moe_call_label(&sc, lb, sizeof lb));
    }
    xs_moe_certainty cert;
    if (xs_moe_certainty_of(&cfg, prof, &pick, tol, &cert, &err)) {
      rc = cli_error("plan", &err);
      goto done;
    }
    cli_moe_certainty_print(&pick, &cert, tol);
    cli_moe_verdict_print(&pick, cli_name_text(profile));
    if (sens && (rc = cli_moe_sensitivity_print(prof, &pick, sens, nsens)))
      goto done;
    cli_profile_leads(prof);
  }
  if (emit || trace || svg) {
    xs_program *p;
    if (xs_moe_program(&cfg, prof, sched, &r.knobs[sched], &p, &err)) {
      rc = cli_error("plan", &err);
      goto done;
    }
    rc = cli_program_outputs("plan", p, prof, XS_MODEL_BURSTGAP, emit, trace, svg);
    xs_program_free(p);
  }
done:
  free(sens);
  xs_profile_free(prof);
  return rc;
}

/* ---- sweep ---- */

/* the sweep's callbacks: config i of the grid */
typedef struct {
  const xs_moe_config *configs;
  const xs_profile *prof;
} moe_sweep;

static xs_status moe_check(void *ctx, size_t i, xs_error *err) {
  return xs_moe_config_check(&((const moe_sweep *)ctx)->configs[i], err);
}

static xs_status moe_plan(void *ctx, size_t i, void *result, xs_error *err) {
  const moe_sweep *m = ctx;
  return xs_moe_plan(&m->configs[i], m->prof, result, err);
}

static void moe_describe(void *ctx, size_t i, char *buf, size_t size) {
  xs_moe_config_describe(&((const moe_sweep *)ctx)->configs[i], buf, size);
}

int cmd_sweep(int argc, char **argv) {
  if (argc >= 2 && (strcmp(argv[1], "--help") == 0 || strcmp(argv[1], "-h") == 0)) {
    sweep_help(stdout);
    return EXIT_OK;
  }
  if (argc < 2 || strcmp(argv[1], "megamoe") != 0)
    return cli_usage_error("sweep", "expected a planner: megamoe or flashattn");
  cli_sweep_opts so;
  int orc = cli_sweep_options(argc, argv, sweep_help, &so);
  if (orc >= 0)
    return orc;
  xs_profile *prof = so.profile;
  const char *grid = so.grid;
  int json = so.json, csv = so.csv;
  xs_moe_config *rows;
  size_t n;
  int rc = cli_sweep_grid(grid, 0, (void **)&rows, &n);
  if (rc) {
    xs_profile_free(prof);
    return rc;
  }
  /* the flags checked on a config of their own (a grid's first may be
   * wrong for another reason, which the sweep's check of each names),
   * then given to every config */
  xs_moe_config probe;
  xs_moe_preset("deepseek-v3", &probe);
  rc = cli_moe_ep_library("sweep", so.ep_library, so.ep_kernel, &probe, 1);
  for (size_t i = 0; i < n && !rc; i++) {
    snprintf(rows[i].ep_library, sizeof rows[i].ep_library, "%s", probe.ep_library);
    snprintf(rows[i].ep_kernel, sizeof rows[i].ep_kernel, "%s", probe.ep_kernel);
  }
  if (rc) {
    xs_free(rows);
    xs_profile_free(prof);
    return rc;
  }
  xs_moe_result *res = calloc(n, sizeof *res);
  moe_sweep ms = {rows, prof};
  cli_sweep_job job = {n, res, sizeof *res, &ms, moe_check, moe_plan, moe_describe};
  if (!res)
    rc = EXIT_MACHINE;
  else if ((rc = cli_sweep_run("sweep", &argc, &argv, &job)) == -1) {
    free(res);
    xs_free(rows);
    xs_profile_free(prof);
    return EXIT_OK; /* not rank 0: rank 0 prints */
  }
  xs_sweep_summary sum;
  if (!rc)
    xs_moe_sweep_summary(res, n, &sum);
  if (!rc) {
    if (json) {
      char *s;
      xs_error err;
      if (xs_moe_sweep_json(prof, rows, n, res, &s, &err)) {
        rc = cli_error("sweep", &err);
      } else {
        printf("%s\n", s);
        xs_free(s);
      }
    } else if (csv) {
      printf("preset,tokens,ep");
      for (int k = 0; k < XS_MOE_SCHEDULES; k++)
        printf(",%s_s", xs_moe_schedule_name((xs_moe_schedule)k));
      printf(",best_interleaved,best_plain,speedup,blocking_speedup,order_gain,ideal_ratio,"
             "best_interleaved_kernel,best_interleaved_proposal,best_plain_kernel,"
             "best_plain_proposal\n");
      for (size_t i = 0; i < n; i++) {
        const xs_moe_result *r = &res[i];
        const double *il = r->time_s[r->best_interleaved], *pl = r->time_s[r->best_plain];
        xs_moe_call ci, cp;
        int hi = !cli_moe_call(&rows[i], prof, r->best_interleaved,
                               &r->knobs[r->best_interleaved], &ci);
        int hp = !cli_moe_call(&rows[i], prof, r->best_plain, &r->knobs[r->best_plain], &cp);
        printf("%s,%g,%g", rows[i].name, rows[i].tokens, rows[i].ep);
        for (int k = 0; k < XS_MOE_SCHEDULES; k++)
          printf(",%.9g", r->time_s[k][XS_MODEL_BURSTGAP]);
        printf(",%s,%s,%.6g,%.6g,%.6g,%.6g,%s,%d,%s,%d\n",
               xs_moe_schedule_name(r->best_interleaved),
               xs_moe_schedule_name(r->best_plain), pl[0] / il[0],
               pl[XS_MODEL_BLOCKING] / il[XS_MODEL_BLOCKING],
               r->time_s[XS_MOE_L1_THEN_L2][0] / r->time_s[XS_MOE_INTERLEAVED][0],
               il[0] / il[XS_MODEL_IDEAL], hi ? ci.label : "", hi && ci.proposal,
               hp ? cp.label : "", hp && cp.proposal);
      }
    } else {
      char a[32], b[32], pn[256], ka[48], kb[48];
      const char *pname = cli_text(xs_profile_name(prof), pn, sizeof pn);
      printf("MegaMoE sweep on %s: %zu configs (burstgap unless noted)\n\n",
             cli_profile_given(prof), n);
      printf("  %-18s %6s %3s  %-17s %10s %-17s  %-17s %10s %-17s %7s %8s %7s\n",
             "preset", "tokens", "ep", "best interleaved", "time", "its kernel",
             "best other", "time", "its kernel", "gain", "blocking", "order");
      for (size_t i = 0; i < n; i++) {
        const xs_moe_result *r = &res[i];
        const double *il = r->time_s[r->best_interleaved], *pl = r->time_s[r->best_plain];
        xs_moe_call ci, cp;
        int hi = !cli_moe_call(&rows[i], prof, r->best_interleaved,
                               &r->knobs[r->best_interleaved], &ci);
        int hp = !cli_moe_call(&rows[i], prof, r->best_plain, &r->knobs[r->best_plain], &cp);
        snprintf(ka, sizeof ka, "%s%s", hi ? ci.label : "-", hi && ci.proposal ? "*" : "");
        snprintf(kb, sizeof kb, "%s%s", hp ? cp.label : "-", hp && cp.proposal ? "*" : "");
        printf("  %-18s %6g %3g  %-17s %10s %-17s  %-17s %10s %-17s %6.3fx %7.3fx %6.3fx\n",
               rows[i].name, rows[i].tokens, rows[i].ep,
               xs_moe_schedule_name(r->best_interleaved), xs_format_time(il[0], a, sizeof a),
               ka, xs_moe_schedule_name(r->best_plain), xs_format_time(pl[0], b, sizeof b),
               kb, pl[0] / il[0], pl[XS_MODEL_BLOCKING] / il[XS_MODEL_BLOCKING],
               r->time_s[XS_MOE_L1_THEN_L2][0] / r->time_s[XS_MOE_INTERLEAVED][0]);
      }
      printf("\n  best interleaved over best other: geometric mean %.3fx, largest %.3fx\n",
             sum.geomean_speedup, sum.max_speedup);
      printf("  the same ratio as blocking predicts it: geometric mean %.3fx\n",
             sum.geomean_blocking_speedup);
      printf("  the order alone (l1-then-l2 over searched, one kernel): geometric mean "
             "%.3fx, largest %.3fx\n", sum.geomean_order_gain, sum.max_order_gain);
      printf("  best interleaved / its ideal: geometric mean %.3f\n", sum.geomean_ideal_ratio);
      printf("  (interleaved: searched, fused-interleaved, fused-lag; other: sequential,\n"
             "  l1-then-l2, fused-split, fused-wave; its kernel: what to call, * a proposal:\n"
             "  an order or a knob no kernel runs as given, or a kernel the GPU cannot run,\n"
             "  which plan megamoe names with the change it needs; %s's numbers are\n"
             "  leads unless measured)\n",
             pname);
    }
  }
  free(res);
  xs_free(rows);
  xs_profile_free(prof);
  return rc;
}
