/*
 * plan_fa.c: `xstage plan flashattn` and `xstage sweep flashattn`: ring
 * attention's KV forwarding, sequential, from dedicated SMs, or piggybacked
 * on the FlashAttention loop.
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
          "usage: xstage plan flashattn (--preset NAME | --config FILE) [--seq N]\n"
          "                             [--cp P] [--causal | --full] [--layout L]\n"
          "                             [--kernel K] [--backward] --profile P\n"
          "                             [--json | --csv]\n"
          "                             [--path W] [--emit-program FILE] [--trace FILE]\n"
          "                             [--svg FILE] [--sensitivity [--tolerance F]]\n"
          "       xstage plan flashattn ... --seq-grid LIST [--tolerance F]\n"
          "                             [--json | --csv]\n"
          "                             [--emit-header FILE [--header-prefix NAME]]\n"
          "\n"
          "Plans context-parallel (ring) attention: the attention kernel at its\n"
          "measured throughput, the causal layout's busiest rank, the merge of\n"
          "partial outputs and the fixed costs of each step, and each way of moving\n"
          "the KV blocks written as a program of the ring's SMs that the Burst-Gap\n"
          "model evaluates: sequential (compute, then forward), dedicated-stream\n"
          "(NCCL on its own stream), dedicated-sms (SMs set aside inside the kernel,\n"
          "their number searched) and piggyback (the kernel stores the K/V stages it\n"
          "loads). One table: every way under every causal layout, its time under\n"
          "burstgap, blocking and ideal, if communication were free, and where the\n"
          "time goes (docs/plan-flashattn.md).\n"
          "\n"
          "  --preset NAME      llama3-8b, llama3-70b, mha\n"
          "  --config FILE      a JSON config (docs/plan-flashattn.md)\n"
          "  --seq N            tokens per rank (default 16384; 16Ki = 16384, 16k = 16000)\n"
          "  --cp P             context-parallel ranks (default 8)\n"
          "  --causal, --full   the mask (default causal)\n"
          "  --layout L         contiguous, zigzag (default), stripe: the layout the\n"
          "                     plan's speedups, --path and --emit-program use\n"
          "  --kernel K         fa2, fa3, fa4 (default: the best the GPU runs: fa2 on\n"
          "                     Ampere, fa3 on Hopper, fa4 on Blackwell); one the GPU\n"
          "                     cannot run is refused (FA3 off Hopper, FA4's backward\n"
          "                     before sm90)\n"
          "  --backward         forward and backward\n"
          "  --profile P        a profile with a compute section\n"
          "  --json             machine-readable output\n"
          "  --csv              one header line, one line a way and layout (a table: a\n"
          "                     line a length): --json's keys, nested ones joined\n"
          "                     with \".\"\n"
          "  --path W           the way --emit-program, --trace and --svg write:\n"
          "                     local, sequential, dedicated-stream, dedicated-sms,\n"
          "                     piggyback (default: the fastest)\n"
          "  --emit-program F   write that way's program (- = stdout): evaluated with\n"
          "                     xstage predict on the same profile it takes the time\n"
          "                     the plan reports\n"
          "  --trace F, --svg F its timeline under burstgap\n"
          "  --sensitivity      how the fastest ring's time and the choice of ring move\n"
          "                     when each number of the profile the plan reads moves\n"
          "                     over the range its kind of source gives it (docs/tune.md\n"
          "                     \"Sensitivity\"); the choice stays while within\n"
          "                     --tolerance of the fastest\n"
          "  --seq-grid LIST    a table: per tokens per rank (64,128 or 4Ki:64Ki:x2),\n"
          "                     the ring predicted fastest, kept while within\n"
          "                     --tolerance F of the fastest (0.01 or 1%%, default)\n"
          "  --emit-header F    the table as a C header with a lookup (- = stdout)\n"
          "  --header-prefix N  names in the header start with N (xstage_ring)\n");
}

static void sweep_help(FILE *f) {
  fprintf(f,
          "usage: xstage sweep flashattn [--profile P] [--grid FILE] [--json | --csv]\n"
          "\n"
          "Plans every config of a grid (default: 4K to 64K tokens per rank, the 3\n"
          "presets, CP 2, 4 and 8, causal and full: 90 configs, the best kernel the\n"
          "GPU runs, zigzag) and prints each way's time and a summary: the\n"
          "geometric-mean and largest speedup of piggyback over sequential, over\n"
          "the faster dedicated way, the same as blocking predicts it, and\n"
          "closeness to ideal.\n"
          "\n"
          "  --profile P  the GPU (needed unless the grid names one)\n"
          "  --grid FILE  {\"presets\": [...], \"seq\": [...], \"cp\": [...], \"causal\": [true, false],\n"
          "               \"kernel\": [\"fa2\", \"fa3\", \"fa4\"], \"profile\": \"h100-nvlink\"}\n"
          "               (each optional)\n");
}

/* plan flashattn --seq-grid: per sequence length, the ring (path and
 * layout) the model predicts fastest, kept from the previous length while
 * within the tolerance of the fastest */
static int seq_table(const xs_fa_config *c, const xs_profile *prof,
                     const char *grid_text, double tol, int json,
                     const char *header, const char *prefix) {
  double *grid;
  size_t n;
  int rc = cli_parse_tokens_grid("plan", "--seq-grid", grid_text, &grid, &n);
  if (rc)
    return rc;
  /* every length the config takes, before the first plan */
  for (size_t i = 0; i < n && !rc; i++) {
    xs_fa_config at = *c;
    xs_error e;
    at.seq = grid[i];
    if (xs_fa_config_check(&at, &e))
      rc = cli_usage_error("plan", "--seq-grid: %g tokens per rank: %s", grid[i], e.message);
  }
  if (rc) {
    free(grid);
    return rc;
  }
  xs_fa_table_row *rows = calloc(n, sizeof *rows);
  size_t changes = 0;
  xs_error err;
  if (!rows)
    rc = cli_out_of_memory("plan");
  else if (xs_fa_table(c, prof, grid, n, tol, rows, &changes, &err))
    rc = cli_error("plan", &err);
  if (!rc && header) {
    char *h = xs_fa_table_header(c, prof, rows, n, tol, prefix);
    rc = h ? cli_write_output("plan", header, h) : cli_out_of_memory("plan");
    free(h);
  }
  if (!rc && header && !strcmp(header, "-")) {
    /* the header took standard output */
  } else if (!rc && json) {
    char *t;
    if (xs_fa_table_json(c, prof, rows, n, tol, &t, &err)) {
      rc = cli_error("plan", &err);
    } else {
      if (json == 2) /* --csv: a line a sequence length */
        rc = cli_csv_document("plan", t, "grid", NULL, NULL, NULL);
      else
        printf("%s\n", t);
      xs_free(t);
    }
  } else if (!rc) {
    printf("Ring attention table: %s, CP %g, %s mask, %s %s, on %s; tolerance %.3g%%\n",
           cli_name_text(c->name), c->cp, c->causal ? "causal" : "full", c->kernel,
           c->backward ? "forward and backward" : "forward", cli_profile_given(prof), tol * 100);
    printf("  %8s  %-17s %-10s %10s %-8s %10s %4s\n", "seq", "path", "layout", "time", "bound",
           "fastest", "near");
    for (size_t i = 0; i < n; i++) {
      char a[32], b[32];
      const xs_fa_ring *pick = &rows[i].chosen;
      int changed = i && !xs_fa_same_ring(pick, &rows[i - 1].chosen);
      xs_fa_call call;
      char pw[32];
      int prop = !xs_fa_call_of(c, prof, pick->path, pick->layout, &call, &err) &&
                 call.proposal;
      snprintf(pw, sizeof pw, "%s%s", xs_fa_path_name(pick->path), prop ? " (p)" : "");
      printf("%c %8g  %-17s %-10s %10s %-8s %10s %4zu\n", changed ? '*' : ' ', rows[i].seq,
             pw,
             pick->layout < 0 ? "-" : xs_fa_layout_name((xs_fa_layout)pick->layout),
             xs_format_time(pick->time_s, a, sizeof a), pick->breakdown.bound,
             xs_format_time(rows[i].fastest.time_s, b, sizeof b), rows[i].near);
    }
    printf("\n  %zu change%s of choice (*: where staying would cost more than the "
           "tolerance); near: rings within it;\n  (p): a proposal, a way no public kernel "
           "runs with %s (plan flashattn --seq N names the change)\n", changes,
           changes == 1 ? "" : "s", c->kernel);
  }
  free(rows);
  free(grid);
  return rc;
}

static int load(const char *preset, const char *file, const char *seq, const char *cp,
                int causal, xs_fa_config *c) {
  xs_error err;
  if (!!preset == !!file)
    return cli_usage_error("plan", "give one of --preset NAME or --config FILE");
  if (preset && xs_fa_preset(preset, c))
    return cli_usage_error("plan", "--preset: unknown \"%s\" (llama3-8b, llama3-70b, mha)", preset);
  if (file) {
    char *text;
    size_t n;
    int rrc = cli_read_file("plan", file, CLI_INPUT_LIMIT, &text, &n);
    if (rrc)
      return rrc;
    xs_status st = xs_fa_config_parse(text, n, file, c, &err);
    free(text);
    if (st)
      return cli_error("plan", &err);
  }
  int prc;
  /* the config check's ranges (xs_fa_config_check) */
  if (seq && (prc = cli_parse_count("plan", "--seq", seq, 1, 1e8, &c->seq)))
    return prc;
  if (cp && (prc = cli_parse_count("plan", "--cp", cp, 1, 4096, &c->cp)))
    return prc;
  if (causal >= 0)
    c->causal = causal;
  if (xs_fa_config_check(c, &err))
    return cli_usage_error("plan", "%s", err.message);
  return 0;
}


static const char *layout_text(int l) {
  return l < 0 ? "-" : xs_fa_layout_name((xs_fa_layout)l);
}

/* the plan's one table: every way under every layout */
static void plan_print(const xs_fa_config *c, const xs_profile *prof, const xs_fa_result *r) {
  const xs_fa_workload *w = &r->work;
  char a[32], b[32], d[32];
  printf("Ring attention plan: %s, %g tokens per rank%s, CP %g, %s mask%s%s, %s %s, on %s\n",
         cli_name_text(c->name), c->seq, c->batch > 1 ? " (per sequence)" : "", c->cp,
         c->causal ? "causal" : "full", c->causal ? ", layout " : "",
         c->causal ? layout_text(c->layout) : "", c->kernel,
         c->backward ? "forward and backward" : "forward", cli_profile_given(prof));
  printf("  per step: %.3g TFLOP, kernel %s (mean over steps, busiest rank), %g CTAs\n"
         "  in %g waves on %g SMs, %g KV tiles a CTA; KV block %s, K/V stages of %s\n"
         "  (%g in the kernel's pipeline); kernel throughput %s\n\n",
         w->step_flops / 1e12, xs_format_time(w->step_s, a, sizeof a), w->q_tiles, w->waves,
         w->sms, w->iterations, xs_format_size(w->kv_B, b, sizeof b),
         xs_format_size(w->stage_B, d, sizeof d), w->stages,
         w->measured ? "measured (the profile's attn_flops_per_s)"
                     : "a lead (the profile's FLOP/s x efficiency)");
  static const char *const head[] = {"burstgap", "blocking", "ideal", "if free", "compute",
                                     "merge", "fixed", "interf.", "host", "exposed",
                                     "stall", "imbalance"};
  printf("  %-17s %-10s", "way", "layout");
  for (size_t i = 0; i < sizeof head / sizeof head[0]; i++)
    printf(" %9s", head[i]);
  printf("  %-12s %s\n", "bound", "choice");
  for (size_t i = 0; i < r->nrings; i++) {
    const xs_fa_ring *g = &r->rings[i];
    const xs_fa_breakdown *bd = &g->breakdown;
    /* the baselines: for the config's layout only (the plan keeps those) */
    int mine = g->path == XS_FA_LOCAL || g->layout < 0 || g->layout == c->layout;
    double v[12] = {g->time_s,
                    mine ? r->time_s[g->path][XS_MODEL_BLOCKING] : NAN,
                    mine ? r->time_s[g->path][XS_MODEL_IDEAL] : NAN,
                    bd->free_s, bd->compute_s, bd->merge_s, bd->fixed_s,
                    bd->interference_s, bd->host_s, bd->exposed_s, bd->stall_s,
                    bd->imbalance_s};
    printf("%c %-17s %-10s", mine && g->path == r->best ? '*' : ' ',
           xs_fa_path_name(g->path), layout_text(g->layout));
    for (int k = 0; k < 12; k++) {
      char t[32];
      printf(" %9s", isnan(v[k]) ? "-" : xs_format_time(v[k], t, sizeof t));
    }
    char ch[32] = "-";
    if (bd->forward_sms)
      snprintf(ch, sizeof ch, "%u SMs", bd->forward_sms);
    printf("  %-12s %s\n", bd->bound, ch);
  }
  /* what to call for each way under the config's layout */
  xs_fa_call call;
  xs_error e;
  if (!xs_fa_call_of(c, prof, XS_FA_LOCAL, -1, &call, &e)) {
    char line[640];
    snprintf(line, sizeof line, "the kernel: %s, %s (%s), %s", call.kernel, call.function,
             call.package, call.passes);
    printf("\n  ");
    cli_wrap(line, 4, 2);
    printf("  the calls (docs/plan-flashattn.md \"Kernels and calls\"; layout %s):\n",
           c->causal ? layout_text(c->layout) : "-");
    for (int p = XS_FA_PATH_SEQUENTIAL; p < XS_FA_PATHS; p++) {
      if (xs_fa_call_of(c, prof, (xs_fa_path)p, -1, &call, &e))
        continue;
      if (call.proposal)
        snprintf(line, sizeof line, "a proposal: %s", call.change);
      else if (call.ring[0])
        snprintf(line, sizeof line, "%s (%s)", call.ring, call.ring_source);
      else
        snprintf(line, sizeof line, "%s", call.way);
      printf("    %-17s ", xs_fa_path_name((xs_fa_path)p));
      cli_wrap(line, 22, 22);
    }
  }
  double sp = r->time_s[XS_FA_PATH_SEQUENTIAL][0] / r->time_s[XS_FA_PATH_PIGGYBACK][0];
  double ded = fmin(r->time_s[XS_FA_PATH_STREAM][0], r->time_s[XS_FA_PATH_SMS][0]);
  printf("\n  * fastest under layout %s: %s, %s\n", c->causal ? layout_text(c->layout) : "-",
         xs_fa_path_name(r->best), xs_format_time(r->time_s[r->best][0], a, sizeof a));
  printf("  piggyback over sequential: %.3fx (blocking predicts %.3fx); over the faster\n"
         "  dedicated way: %.3fx; piggyback / ideal: %.3f; if communication were free:\n"
         "  %.3fx of the piggyback time (%u programs evaluated)\n", sp,
         r->time_s[XS_FA_PATH_SEQUENTIAL][XS_MODEL_BLOCKING] /
             r->time_s[XS_FA_PATH_PIGGYBACK][XS_MODEL_BLOCKING],
         ded / r->time_s[XS_FA_PATH_PIGGYBACK][0],
         r->time_s[XS_FA_PATH_PIGGYBACK][0] / r->time_s[XS_FA_PATH_PIGGYBACK][XS_MODEL_IDEAL],
         r->breakdown[XS_FA_PATH_PIGGYBACK].free_s / r->time_s[XS_FA_PATH_PIGGYBACK][0],
         r->searched);
  printf("  (compute + merge + fixed + interf. + host + exposed = burstgap; host is the\n"
         "  GPU waiting for the host to issue the ring's ops (timing %s), exposed the\n"
         "  communication the others do not hide, stall the part of it piggyback's\n"
         "  SMs spend waiting for a stage's store)\n",
         xs_fa_timing_name((xs_fa_timing)c->timing));
  cli_profile_leads(prof);
}

/* a ring in words: "piggyback, zigzag" ("dedicated-sms (8 SMs), stripe") */
static const char *ring_words(const xs_fa_ring *g, char *buf, size_t n) {
  char k[32] = "";
  if (g->breakdown.forward_sms)
    snprintf(k, sizeof k, " (%u SMs)", g->breakdown.forward_sms);
  snprintf(buf, n, "%s%s, %s", xs_fa_path_name(g->path), k,
           g->layout < 0 ? "full mask" : layout_text(g->layout));
  return buf;
}

static int sensitivity_print(const xs_profile *prof, const xs_fa_ring *base,
                             const xs_fa_sensitivity *s, size_t n) {
  cli_sens_row *rows = calloc(n ? n : 1, sizeof *rows);
  char w[128];
  if (!rows)
    return cli_out_of_memory("plan");
  for (size_t i = 0; i < n; i++) {
    cli_sens_row *r = &rows[i];
    CLI_SENS_ROW(r, &s[i]);
    for (int f = 0; f < XS_MOE_SENS_FACTORS; f++)
      if (s[i].changed[f])
        ring_words(&s[i].choice[f], r->choice[f], sizeof r->choice[f]);
  }
  cli_sensitivity_print(prof, ring_words(base, w, sizeof w), base->time_s, rows, n);
  free(rows);
  return EXIT_OK;
}

int cmd_plan_flashattn(int argc, char **argv) {
  static const struct option opts[] = {
      {"preset", required_argument, 0, 'r'}, {"config", required_argument, 0, 'c'},
      {"seq", required_argument, 0, 's'}, {"cp", required_argument, 0, 'P'},
      {"causal", no_argument, 0, 'C'}, {"full", no_argument, 0, 'F'},
      {"profile", required_argument, 0, 'p'}, {"json", no_argument, 0, 'j'},
      {"emit-program", required_argument, 0, 'o'}, {"trace", required_argument, 0, 'T'},
      {"svg", required_argument, 0, 'S'}, {"help", no_argument, 0, 'h'},
      {"kernel", required_argument, 0, 'K'}, {"layout", required_argument, 0, 'L'},
      {"backward", no_argument, 0, 'B'}, {"seq-grid", required_argument, 0, 'G'},
      {"tolerance", required_argument, 0, 'l'}, {"emit-header", required_argument, 0, 'H'},
      {"header-prefix", required_argument, 0, 'X'}, {"path", required_argument, 0, 'W'},
      {"sensitivity", no_argument, 0, 'V'}, {"csv", no_argument, 0, 'y'}, {0, 0, 0, 0}};
  const char *preset = NULL, *file = NULL, *seq = NULL, *cp = NULL, *profile = NULL;
  const char *emit = NULL, *trace = NULL, *svg = NULL, *kernel = NULL, *layout = NULL;
  const char *grid_text = NULL, *header = NULL, *prefix = NULL, *way = NULL;
  double tol = 0.01;
  const char *tol_text = NULL;
  int json = 0, causal = -1, backward = 0, sensitivity = 0, c, prc;
  opterr = 0;
  optind = 2;
  int csv = 0;
  while ((c = getopt_long(argc, argv, ":r:c:s:P:CFp:jo:T:S:hK:L:BG:l:H:X:W:Vy", opts, NULL)) !=
         -1) {
    switch (c) {
    case 'K': kernel = optarg; break;
    case 'L': layout = optarg; break;
    case 'B': backward = 1; break;
    case 'G': grid_text = optarg; break;
    case 'H': header = optarg; break;
    case 'X': prefix = optarg; break;
    case 'W': way = optarg; break;
    case 'V': sensitivity = 1; break;
    case 'l':
      if ((prc = cli_parse_tolerance("plan", optarg, &tol)))
        return prc;
      tol_text = optarg;
      break;
    case 'r': preset = optarg; break;
    case 'c': file = optarg; break;
    case 's': seq = optarg; break;
    case 'P': cp = optarg; break;
    case 'C': causal = 1; break;
    case 'F': causal = 0; break;
    case 'p': profile = optarg; break;
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
  if ((prc = cli_plan_format("rings", csv, sensitivity, &json)))
    return prc;
  const char *ins[] = {file, profile}, *outs[] = {emit, trace, svg, header};
  if (cli_refuse_overwrite("plan", ins, 2, outs, 4))
    return EXIT_INPUT;
  int path = -1;
  if (way && (path = xs_fa_path_from_name(way)) < 0)
    return cli_usage_error("plan", "--path: expected local, sequential, dedicated-stream, "
                                   "dedicated-sms or piggyback, got \"%s\"", way);
  if (tol_text && !grid_text && !sensitivity)
    return cli_usage_error("plan", "--tolerance chooses among rings for --seq-grid or "
                                   "--sensitivity: give one of them");
  if (way && !emit && !trace && !svg)
    return cli_usage_error("plan", "--path chooses what --emit-program, --trace or --svg "
                                   "write: give one of them");
  xs_fa_config cfg;
  int rc = load(preset, file, seq, cp, causal, &cfg);
  if (rc)
    return rc;
  if (kernel) {
    if (strcmp(kernel, "fa2") && strcmp(kernel, "fa3") && strcmp(kernel, "fa4"))
      return cli_usage_error("plan", "--kernel: expected fa2, fa3 or fa4, got \"%s\"", kernel);
    snprintf(cfg.kernel, sizeof cfg.kernel, "%s", kernel);
  }
  if (layout && (cfg.layout = xs_fa_layout_from_name(layout)) < 0)
    return cli_usage_error("plan", "--layout: expected contiguous, zigzag or stripe, "
                                   "got \"%s\"", layout);
  if (backward)
    cfg.backward = 1;
  xs_error err;
  xs_profile *prof;
  if (xs_profile_load(profile, &prof, &err))
    return cli_error("plan", &err);
  cli_profile_from(profile, prof);
  /* the kernel the GPU runs, or why it cannot (exit 2) */
  if (xs_fa_kernel_resolve(&cfg, prof, &cfg, &err)) {
    xs_profile_free(prof);
    return cli_usage_error("plan", "%s%s", kernel ? "--kernel: " : "", err.message);
  }
  if (header && !grid_text) {
    xs_profile_free(prof);
    return cli_usage_error("plan", "--emit-header needs --seq-grid");
  }
  if ((prc = cli_header_prefix("plan", header, prefix, "xstage_ring", &prefix))) {
    xs_profile_free(prof);
    return prc;
  }
  if (grid_text) {
    if (seq || emit || trace || svg || sensitivity) {
      xs_profile_free(prof);
      return cli_usage_error("plan", "--seq-grid plans a table: it does not take --seq, "
                                     "--emit-program, --trace, --svg or --sensitivity");
    }
    rc = seq_table(&cfg, prof, grid_text, tol, json, header, prefix);
    xs_profile_free(prof);
    return rc;
  }
  xs_fa_result *r = malloc(sizeof *r);
  if (!r) {
    xs_profile_free(prof);
    return cli_out_of_memory("plan");
  }
  if (json) {
    char *t;
    if ((sensitivity ? xs_fa_plan_sensitivity_json(&cfg, prof, tol, r, &t, &err)
                     : xs_fa_plan_json(&cfg, prof, r, &t, &err))) {
      rc = cli_error("plan", &err);
      goto done;
    }
    if (json == 2) /* --csv: a line a way and layout */
      rc = cli_csv_document("plan", t, "ring", NULL, NULL, NULL);
    else
      printf("%s\n", t);
    xs_free(t);
  } else if (sensitivity) {
    /* first: a profile the run cannot take is refused before any output */
    xs_fa_sensitivity *sens = malloc(XS_FA_SENS_MAX * sizeof *sens);
    xs_fa_ring base;
    size_t nsens = 0;
    if (!sens) {
      rc = cli_out_of_memory("plan");
      goto done;
    }
    if (xs_fa_sensitivity_run(&cfg, prof, tol, &base, sens, &nsens, &err) ||
        xs_fa_plan(&cfg, prof, r, &err)) {
      free(sens);
      rc = cli_error("plan", &err);
      goto done;
    }
    plan_print(&cfg, prof, r);
    rc = sensitivity_print(prof, &base, sens, nsens);
    free(sens);
  } else if (xs_fa_plan(&cfg, prof, r, &err)) {
    rc = cli_error("plan", &err);
    goto done;
  } else {
    plan_print(&cfg, prof, r);
  }
  if (emit || trace || svg) {
    xs_program *p;
    xs_fa_path pth = path >= 0 ? (xs_fa_path)path : r->best;
    xs_fa_choice ch = {r->breakdown[pth].forward_sms};
    if (xs_fa_program(&cfg, prof, pth, &ch, &p, &err)) {
      rc = cli_error("plan", &err);
      goto done;
    }
    rc = cli_program_outputs("plan", p, prof, XS_MODEL_BURSTGAP, emit, trace, svg);
    xs_program_free(p);
  }
done:
  free(r);
  xs_profile_free(prof);
  return rc;
}

/* the sweep's callbacks: config i of the grid */
typedef struct {
  const xs_fa_config *configs;
  const xs_profile *prof;
} fa_sweep;

static xs_status fa_check(void *ctx, size_t i, xs_error *err) {
  return xs_fa_config_check(&((const fa_sweep *)ctx)->configs[i], err);
}

static xs_status fa_plan(void *ctx, size_t i, void *result, xs_error *err) {
  const fa_sweep *f = ctx;
  return xs_fa_plan(&f->configs[i], f->prof, result, err);
}

static void fa_describe(void *ctx, size_t i, char *buf, size_t size) {
  xs_fa_config_describe(&((const fa_sweep *)ctx)->configs[i], buf, size);
}

int cmd_sweep_flashattn(int argc, char **argv) {
  cli_sweep_opts so;
  int orc = cli_sweep_options(argc, argv, sweep_help, &so);
  if (orc >= 0)
    return orc;
  xs_profile *prof = so.profile;
  xs_fa_config *rows;
  size_t n;
  int rc = cli_sweep_grid(so.grid, 1, (void **)&rows, &n);
  if (rc) {
    xs_profile_free(prof);
    return rc;
  }
  /* each config's kernel: the best the GPU runs, or why it cannot */
  for (size_t i = 0; i < n && !rc; i++) {
    xs_error err;
    if (xs_fa_kernel_resolve(&rows[i], prof, &rows[i], &err)) {
      char what[256];
      xs_fa_config_describe(&rows[i], what, sizeof what);
      rc = cli_usage_error("sweep", "%s: %s", what, err.message);
    }
  }
  if (rc) {
    xs_free(rows);
    xs_profile_free(prof);
    return rc;
  }
  xs_fa_result *res = calloc(n ? n : 1, sizeof *res);
  fa_sweep fs = {rows, prof};
  cli_sweep_job job = {n, res, sizeof *res, &fs, fa_check, fa_plan, fa_describe};
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
    xs_fa_sweep_summary(res, n, &sum);
  if (!rc && so.json) {
    char *t;
    xs_error err;
    if (xs_fa_sweep_json(prof, rows, n, res, &t, &err)) {
      rc = cli_error("sweep", &err);
    } else {
      printf("%s\n", t);
      xs_free(t);
    }
  } else if (!rc && so.csv) {
    printf("preset,seq,cp,causal,kernel,local_s,sequential_s,stream_s,sms_s,piggyback_s,"
           "ideal_s,free_s,speedup,speedup_vs_dedicated,blocking_speedup,best,forward_sms,"
           "best_call,best_proposal\n");
    for (size_t i = 0; i < n; i++) {
      const xs_fa_result *r = &res[i];
      const double(*t)[XS_MODEL_COUNT] = r->time_s;
      xs_fa_call bc;
      xs_error e;
      int have = !xs_fa_call_of(&rows[i], prof, r->best, -1, &bc, &e);
      printf("%s,%g,%g,%d,%s,%.9g,%.9g,%.9g,%.9g,%.9g,%.9g,%.9g,%.6g,%.6g,%.6g,%s,%u,%s,%d\n",
             rows[i].name, rows[i].seq, rows[i].cp, rows[i].causal, rows[i].kernel,
             t[XS_FA_LOCAL][0], t[XS_FA_PATH_SEQUENTIAL][0], t[XS_FA_PATH_STREAM][0],
             t[XS_FA_PATH_SMS][0], t[XS_FA_PATH_PIGGYBACK][0],
             t[XS_FA_PATH_PIGGYBACK][XS_MODEL_IDEAL],
             r->breakdown[XS_FA_PATH_PIGGYBACK].free_s,
             t[XS_FA_PATH_SEQUENTIAL][0] / t[XS_FA_PATH_PIGGYBACK][0],
             fmin(t[XS_FA_PATH_STREAM][0], t[XS_FA_PATH_SMS][0]) / t[XS_FA_PATH_PIGGYBACK][0],
             t[XS_FA_PATH_SEQUENTIAL][XS_MODEL_BLOCKING] /
                 t[XS_FA_PATH_PIGGYBACK][XS_MODEL_BLOCKING],
             xs_fa_path_name(r->best), r->breakdown[XS_FA_PATH_SMS].forward_sms,
             have ? (bc.ring[0] ? bc.ring : bc.function) : "", have && bc.proposal);
    }
  } else if (!rc) {
    printf("Ring attention sweep on %s: %zu configs (burstgap unless noted)\n\n",
           cli_profile_given(prof), n);
    printf("  %-11s %6s %3s %-6s %-6s %10s %10s %10s %10s %10s %8s %8s %8s  %s\n", "preset",
           "seq", "cp", "mask", "kernel", "sequential", "stream", "sms", "piggyback", "ideal",
           "vs seq", "vs ded", "blocking", "fastest");
    for (size_t i = 0; i < n; i++) {
      const xs_fa_result *r = &res[i];
      const double(*t)[XS_MODEL_COUNT] = r->time_s;
      char a[32], b[32], d[32], e[32], f[32];
      xs_fa_call bc;
      xs_error err;
      int prop = !xs_fa_call_of(&rows[i], prof, r->best, -1, &bc, &err) && bc.proposal;
      printf("  %-11s %6g %3g %-6s %-6s %10s %10s %10s %10s %10s %7.3fx %7.3fx %7.3fx  %s%s\n",
             rows[i].name, rows[i].seq, rows[i].cp, rows[i].causal ? "causal" : "full",
             rows[i].kernel,
             xs_format_time(t[XS_FA_PATH_SEQUENTIAL][0], a, sizeof a),
             xs_format_time(t[XS_FA_PATH_STREAM][0], b, sizeof b),
             xs_format_time(t[XS_FA_PATH_SMS][0], d, sizeof d),
             xs_format_time(t[XS_FA_PATH_PIGGYBACK][0], e, sizeof e),
             xs_format_time(t[XS_FA_PATH_PIGGYBACK][XS_MODEL_IDEAL], f, sizeof f),
             t[XS_FA_PATH_SEQUENTIAL][0] / t[XS_FA_PATH_PIGGYBACK][0],
             fmin(t[XS_FA_PATH_STREAM][0], t[XS_FA_PATH_SMS][0]) / t[XS_FA_PATH_PIGGYBACK][0],
             t[XS_FA_PATH_SEQUENTIAL][XS_MODEL_BLOCKING] /
                 t[XS_FA_PATH_PIGGYBACK][XS_MODEL_BLOCKING],
             xs_fa_path_name(r->best), prop ? "*" : "");
    }
    printf("\n  piggyback over sequential: geometric mean %.3fx, largest %.3fx\n",
           sum.geomean_speedup, sum.max_speedup);
    printf("  piggyback over the faster dedicated way: geometric mean %.3fx\n",
           sum.geomean_speedup_vs_dedicated);
    printf("  over sequential as blocking predicts it: geometric mean %.3fx\n",
           sum.geomean_blocking_speedup);
    printf("  piggyback / ideal: geometric mean %.3f\n", sum.geomean_ideal_ratio);
    printf("  (* a proposal: a way no public kernel runs with this kernel, which plan\n"
           "  flashattn names with the change it needs; %s's numbers are leads\n"
           "  unless measured)\n", cli_profile_text(prof));
  }
  free(res);
  xs_free(rows);
  xs_profile_free(prof);
  return rc;
}
