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
          "                             [--cp P] [--causal | --full] --profile P [--json]\n"
          "                             [--emit-program FILE] [--trace FILE] [--svg FILE]\n"
          "\n"
          "Plans the KV forwarding of context-parallel (ring) attention: sequential\n"
          "(compute the step, then forward), dedicated (k SMs forward, k searched) and\n"
          "piggyback (compute CTAs forward the KV tiles they load, spread searched),\n"
          "under burstgap, blocking and ideal.\n"
          "\n"
          "  --preset NAME      llama3-8b, llama3-70b, mha\n"
          "  --config FILE      a JSON config (docs/plan-flashattn.md)\n"
          "  --seq N            tokens per rank (default 16384; 16Ki = 16384, 16k = 16000)\n"
          "  --cp P             context-parallel ranks (default 8)\n"
          "  --causal, --full   the mask (default causal)\n"
          "  --profile P        a profile with a compute section\n"
          "  --emit-program F   write the piggyback program (- = stdout)\n"
          "  --trace F, --svg F its timeline under burstgap\n"
          "\n"
          "Where the profile has the kernel's measured throughput, the ring model\n"
          "(docs/plan-flashattn.md) follows: every path (local, sequential,\n"
          "dedicated-stream, dedicated-sms, piggyback) under every causal layout,\n"
          "with compute, merge, fixed per-step costs, exposed communication and\n"
          "imbalance.\n"
          "  --kernel K         fa2 (default), fa3, fa4\n"
          "  --layout L         contiguous, zigzag (default), stripe: the local arm's\n"
          "                     and, with --full, the ring's\n"
          "  --backward         forward and backward\n"
          "  --seq-grid LIST    a table: per tokens per rank (64,128 or 4Ki:64Ki:x2),\n"
          "                     the ring the model predicts fastest, kept while within\n"
          "                     --tolerance F of the fastest (0.01 or 1%%, default)\n"
          "  --emit-header F    the table as a C header with a lookup (- = stdout)\n"
          "  --header-prefix N  names in the header start with N (xstage_ring)\n");
}

static void sweep_help(FILE *f) {
  fprintf(f,
          "usage: xstage sweep flashattn --profile P [--grid FILE] [--json | --csv]\n"
          "\n"
          "Default grid: 4K to 64K tokens per rank, the 3 presets, CP 2, 4 and 8,\n"
          "causal and full (90 configs). Rows and a summary: the geometric-mean and\n"
          "largest speedup of piggyback over sequential, over the best dedicated\n"
          "split, the same as blocking predicts it, and closeness to ideal.\n"
          "\n"
          "  --grid FILE  {\"presets\": [...], \"seq\": [...], \"cp\": [...], \"causal\": [true, false]}\n");
}

/* ---- the ring kernel model (xs_fa_predict) beside the schedules ---- */

static int has_ring_model(const xs_fa_config *c, const xs_profile *prof) {
  char key[24];
  snprintf(key, sizeof key, "%s%s", c->kernel, c->backward ? "_fwd_bwd" : "");
  return xs_profile_attn(prof, XS_ATTN_FLOPS, key) > 0;
}

/* the fastest ring (not the local arm) */
static void ring_print(const xs_fa_config *c, const xs_fa_ring *r, size_t n) {
  char t[6][32];
  printf("\n  ring model (%s %s, measured kernel throughput; docs/plan-flashattn.md):\n",
         c->kernel, c->backward ? "forward and backward" : "forward");
  printf("  %-17s %-10s %10s %10s %10s %10s %10s %10s  %-8s %s\n", "path", "layout",
         "time", "compute", "merge", "fixed", "exposed", "imbalance", "bound", "choice");
  for (size_t i = 0; i < n; i++) {
    char ch[32] = "-";
    if (r[i].breakdown.forward_sms)
      snprintf(ch, sizeof ch, "%u SMs", r[i].breakdown.forward_sms);
    else if (r[i].breakdown.spread)
      snprintf(ch, sizeof ch, "%u pieces", r[i].breakdown.spread);
    printf("  %-17s %-10s %10s %10s %10s %10s %10s %10s  %-8s %s\n",
           xs_fa_path_name(r[i].path),
           r[i].layout < 0 ? "-" : xs_fa_layout_name((xs_fa_layout)r[i].layout),
           xs_format_time(r[i].time_s, t[0], 32), xs_format_time(r[i].breakdown.compute_s, t[1], 32),
           xs_format_time(r[i].breakdown.merge_s, t[2], 32), xs_format_time(r[i].breakdown.fixed_s, t[3], 32),
           xs_format_time(r[i].breakdown.exposed_s, t[4], 32),
           xs_format_time(r[i].breakdown.imbalance_s, t[5], 32), r[i].breakdown.bound, ch);
  }
  const xs_fa_ring *b = xs_fa_ring_best(r, n);
  if (b)
    printf("  fastest ring: %s, %s layout, %s (bound: %s)\n", xs_fa_path_name(b->path),
           b->layout < 0 ? "any" : xs_fa_layout_name((xs_fa_layout)b->layout),
           xs_format_time(b->time_s, t[0], 32), b->breakdown.bound);
}

/* plan flashattn --seq-grid: per sequence length, the ring (path and
 * layout) the model predicts fastest, kept from the previous length while
 * within the tolerance of the fastest */
static int seq_table(const xs_fa_config *c, const xs_profile *prof,
                     const char *grid_text, double tol, int json,
                     const char *header, const char *prefix) {
  if (!has_ring_model(c, prof))
    return cli_usage_error("plan", "--seq-grid: %s has no attn_flops_per_s.%s%s for the "
                           "ring model", cli_profile_text(prof), c->kernel,
                           c->backward ? "_fwd_bwd" : "");
  double *grid;
  size_t n;
  int rc = cli_parse_tokens_grid("plan", "--seq-grid", grid_text, &grid, &n);
  if (rc)
    return rc;
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
      printf("%s\n", t);
      xs_free(t);
    }
  } else if (!rc) {
    printf("Ring attention table: %s, CP %g, %s mask, %s %s, on %s; tolerance %.3g%%\n",
           cli_name_text(c->name), c->cp, c->causal ? "causal" : "full", c->kernel,
           c->backward ? "forward and backward" : "forward", cli_profile_text(prof), tol * 100);
    printf("  %8s  %-17s %-10s %10s %-8s %10s %4s\n", "seq", "path", "layout", "time", "bound",
           "fastest", "near");
    for (size_t i = 0; i < n; i++) {
      char a[32], b[32];
      const xs_fa_ring *pick = &rows[i].chosen;
      int changed = i && (pick->path != rows[i - 1].chosen.path ||
                          pick->layout != rows[i - 1].chosen.layout);
      printf("%c %8g  %-17s %-10s %10s %-8s %10s %4zu\n", changed ? '*' : ' ', rows[i].seq,
             xs_fa_path_name(pick->path),
             pick->layout < 0 ? "-" : xs_fa_layout_name((xs_fa_layout)pick->layout),
             xs_format_time(pick->time_s, a, sizeof a), pick->breakdown.bound,
             xs_format_time(rows[i].fastest.time_s, b, sizeof b), rows[i].near);
    }
    printf("\n  %zu change%s of choice (*: where staying would cost more than the "
           "tolerance); near: rings within it\n", changes, changes == 1 ? "" : "s");
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
  if (seq && (prc = cli_parse_count("plan", "--seq", seq, 1, 1e9, &c->seq)))
    return prc;
  if (cp && (prc = cli_parse_count("plan", "--cp", cp, 1, 1e5, &c->cp)))
    return prc;
  if (causal >= 0)
    c->causal = causal;
  if (xs_fa_config_check(c, &err))
    return cli_usage_error("plan", "%s", err.message);
  return 0;
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
      {"header-prefix", required_argument, 0, 'X'}, {0, 0, 0, 0}};
  const char *preset = NULL, *file = NULL, *seq = NULL, *cp = NULL, *profile = NULL;
  const char *emit = NULL, *trace = NULL, *svg = NULL, *kernel = NULL, *layout = NULL;
  const char *grid_text = NULL, *header = NULL, *prefix = NULL;
  double tol = 0.01;
  int json = 0, causal = -1, backward = 0, c, prc;
  opterr = 0;
  optind = 2;
  while ((c = getopt_long(argc, argv, ":r:c:s:P:CFp:jo:T:S:hK:L:BG:l:H:X:", opts, NULL)) != -1) {
    switch (c) {
    case 'K': kernel = optarg; break;
    case 'L': layout = optarg; break;
    case 'B': backward = 1; break;
    case 'G': grid_text = optarg; break;
    case 'H': header = optarg; break;
    case 'X': prefix = optarg; break;
    case 'l':
      if ((prc = cli_parse_tolerance("plan", optarg, &tol)))
        return prc;
      break;
    case 'r': preset = optarg; break;
    case 'c': file = optarg; break;
    case 's': seq = optarg; break;
    case 'P': cp = optarg; break;
    case 'C': causal = 1; break;
    case 'F': causal = 0; break;
    case 'p': profile = optarg; break;
    case 'j': json = 1; break;
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
  const char *ins[] = {file, profile}, *outs[] = {emit, trace, svg, header};
  if (cli_refuse_overwrite("plan", ins, 2, outs, 4))
    return EXIT_INPUT;
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
  if (header && !grid_text) {
    xs_profile_free(prof);
    return cli_usage_error("plan", "--emit-header needs --seq-grid");
  }
  if ((prc = cli_header_prefix("plan", header, prefix, "xstage_ring", &prefix))) {
    xs_profile_free(prof);
    return prc;
  }
  if (grid_text) {
    if (seq || emit || trace || svg) {
      xs_profile_free(prof);
      return cli_usage_error("plan", "--seq-grid plans a table: it does not take --seq, "
                                     "--emit-program, --trace or --svg");
    }
    rc = seq_table(&cfg, prof, grid_text, tol, json, header, prefix);
    xs_profile_free(prof);
    return rc;
  }
  xs_fa_ring ring[XS_FA_RINGS];
  size_t nring = 0;
  xs_fa_result r;
  const char *names[] = {"sequential", "dedicated", "piggyback"};
  if (json) {
    char *t;
    if (xs_fa_plan_json(&cfg, prof, &r, &t, &err)) {
      rc = cli_error("plan", &err);
      goto done;
    }
    printf("%s\n", t);
    xs_free(t);
  } else if (xs_fa_rings(&cfg, prof, ring, &nring, &err) ||
             xs_fa_plan(&cfg, prof, &r, &err)) {
    rc = cli_error("plan", &err);
    goto done;
  } else {
    char a[32], b[32], d[32];
    printf("Context-parallel attention plan: %s, %g tokens per rank, CP %g, %s mask, on %s\n",
           cli_name_text(cfg.name), cfg.seq, cfg.cp, cfg.causal ? "causal" : "full",
           cli_profile_text(prof));
    printf("  per step: %.3g TFLOP in %s on %g SMs (%g CTAs, %g waves, %g KV tiles a CTA);\n"
           "  KV block to forward %s (%g tiles of %gx%g)\n\n",
           r.work.step_flops / 1e12, xs_format_time(r.work.step_s, a, sizeof a), r.work.sms,
           r.work.q_tiles, r.work.waves, r.work.iterations,
           xs_format_size(r.work.kv_B, b, sizeof b), r.work.kv_tiles, cfg.block_n, cfg.head_dim);
    printf("  %-12s %12s %12s %12s\n", "schedule", "burstgap", "blocking", "ideal");
    for (int k = 0; k < XS_FA_SCHEDULES; k++)
      printf("  %-12s %12s %12s %12s\n", names[k], xs_format_time(r.time_s[k][0], a, sizeof a),
             xs_format_time(r.time_s[k][1], b, sizeof b), xs_format_time(r.time_s[k][2], d, sizeof d));
    printf("\n  dedicated: %u SM%s forward; piggyback: ", r.dedicated.forward_sms,
           r.dedicated.forward_sms == 1 ? "" : "s");
    if (r.piggyback.spread_waves)
      printf("the first %u wave%s of each step forward, in %u send%s a wave\n",
             r.piggyback.spread_waves, r.piggyback.spread_waves == 1 ? "" : "s",
             r.piggyback.chunks, r.piggyback.chunks == 1 ? "" : "s");
    else
      printf("nothing beats forwarding at the step's end\n");
    printf("  piggyback over sequential: %.3fx (blocking predicts %.3fx); over dedicated: %.3fx;\n"
           "  piggyback / ideal: %.3f (%u choices searched)\n",
           r.time_s[0][0] / r.time_s[2][0], r.time_s[0][1] / r.time_s[2][1],
           r.time_s[1][0] / r.time_s[2][0], r.time_s[2][0] / r.time_s[2][2], r.searched);
    if (nring)
      ring_print(&cfg, ring, nring);
    else
      printf("\n  ring model: %s has no attn_flops_per_s.%s%s (docs/profiles.md)\n",
             cli_profile_text(prof), cfg.kernel, cfg.backward ? "_fwd_bwd" : "");
  }
  if (emit || trace || svg) {
    xs_program *p;
    if (xs_fa_program(&cfg, prof, XS_FA_PIGGYBACK, &r.piggyback, &p, NULL, &err)) {
      rc = cli_error("plan", &err);
      goto done;
    }
    rc = cli_program_outputs("plan", p, prof, XS_MODEL_BURSTGAP, emit, trace, svg);
    xs_program_free(p);
  }
done:
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
  const char *gridf = so.grid;
  int json = so.json, csv = so.csv;
  xs_fa_config *rows;
  size_t n;
  int rc = cli_sweep_grid(gridf, 1, (void **)&rows, &n);
  if (rc) {
    xs_profile_free(prof);
    return rc;
  }
  xs_fa_result *res = calloc(n, sizeof *res);
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
  /* the ring model per config, where the profile has it (the text and
   * CSV reports; xs_fa_sweep_json finds its own) */
  xs_fa_ring (*rings)[XS_FA_RINGS] = calloc(n, sizeof *rings);
  size_t *nrings = calloc(n, sizeof *nrings);
  if (!rings || !nrings)
    rc = EXIT_MACHINE;
  for (size_t i = 0; i < n && !rc && !json; i++) {
    xs_error err;
    if (xs_fa_rings(&rows[i], prof, rings[i], &nrings[i], &err))
      rc = cli_error("sweep", &err);
  }
  xs_sweep_summary sum;
  if (!rc)
    xs_fa_sweep_summary(res, n, &sum);
  if (!rc && json) {
    char *t;
    xs_error err;
    if (xs_fa_sweep_json(prof, rows, n, res, &t, &err)) {
      rc = cli_error("sweep", &err);
    } else {
      printf("%s\n", t);
      xs_free(t);
    }
  } else if (!rc && csv) {
    printf("preset,seq,cp,causal,sequential_s,dedicated_s,piggyback_s,ideal_s,speedup,"
           "speedup_vs_dedicated,blocking_speedup,forward_sms,spread_waves,chunks,"
           "ring_path,ring_layout,ring_s,ring_bound\n");
    for (size_t i = 0; i < n; i++) {
      const xs_fa_result *r = &res[i];
      const xs_fa_ring *b = xs_fa_ring_best(rings[i], nrings[i]);
      printf("%s,%g,%g,%d,%.9g,%.9g,%.9g,%.9g,%.6g,%.6g,%.6g,%u,%u,%u,%s,%s,%.9g,%s\n",
             rows[i].name, rows[i].seq, rows[i].cp, rows[i].causal, r->time_s[0][0],
             r->time_s[1][0], r->time_s[2][0], r->time_s[2][2],
             r->time_s[0][0] / r->time_s[2][0], r->time_s[1][0] / r->time_s[2][0],
             r->time_s[0][1] / r->time_s[2][1], r->dedicated.forward_sms,
             r->piggyback.spread_waves, r->piggyback.chunks,
             b ? xs_fa_path_name(b->path) : "",
             b ? (b->layout < 0 ? "-" : xs_fa_layout_name((xs_fa_layout)b->layout)) : "",
             b ? b->time_s : NAN, b ? b->breakdown.bound : "");
    }
  } else if (!rc) {
    char a[32], b[32], d[32], e[32];
    printf("Context-parallel attention sweep on %s: %zu configs (burstgap unless noted)\n\n",
           cli_profile_text(prof), n);
    printf("  %-11s %6s %3s %-6s %11s %11s %11s %11s %8s %8s %8s  %s\n", "preset", "seq",
           "cp", "mask", "sequential", "dedicated", "piggyback", "ideal", "vs seq", "vs ded",
           "blocking", "ring model: fastest path, layout, time, bound");
    for (size_t i = 0; i < n; i++) {
      const xs_fa_result *r = &res[i];
      const xs_fa_ring *rbest = xs_fa_ring_best(rings[i], nrings[i]);
      char rb[96] = "-", tt[32];
      if (rbest)
        snprintf(rb, sizeof rb, "%s, %s, %s, %s", xs_fa_path_name(rbest->path),
                 rbest->layout < 0 ? "-" : xs_fa_layout_name((xs_fa_layout)rbest->layout),
                 xs_format_time(rbest->time_s, tt, sizeof tt), rbest->breakdown.bound);
      printf("  %-11s %6g %3g %-6s %11s %11s %11s %11s %7.3fx %7.3fx %7.3fx  %s\n",
             rows[i].name, rows[i].seq, rows[i].cp, rows[i].causal ? "causal" : "full",
             xs_format_time(r->time_s[0][0], a, sizeof a),
             xs_format_time(r->time_s[1][0], b, sizeof b),
             xs_format_time(r->time_s[2][0], d, sizeof d),
             xs_format_time(r->time_s[2][2], e, sizeof e), r->time_s[0][0] / r->time_s[2][0],
             r->time_s[1][0] / r->time_s[2][0], r->time_s[0][1] / r->time_s[2][1], rb);
    }
    printf("\n  piggyback over sequential: geometric mean %.3fx, largest %.3fx\n",
           sum.geomean_speedup, sum.max_speedup);
    printf("  piggyback over the best dedicated split: geometric mean %.3fx\n",
           sum.geomean_speedup_vs_dedicated);
    printf("  over sequential as blocking predicts it: geometric mean %.3fx\n",
           sum.geomean_blocking_speedup);
    printf("  piggyback / ideal: geometric mean %.3f\n", sum.geomean_ideal_ratio);
    printf("  (%s's numbers are leads unless measured)\n", cli_profile_text(prof));
  }
  free(rings);
  free(nrings);
  free(res);
  xs_free(rows);
  xs_profile_free(prof);
  return rc;
}
