/*
 * bench.c: xstage-bench prints figures, one a line as NAME VALUE UNIT, and
 * never fails on time: the machine it runs on may be shared and noisy, so
 * it reports the median of several runs and leaves judging to the reader;
 * the planners' figures come with the thread's CPU time too (_cpu), which
 * other processes' turns on the cores do not add to.
 *
 *   xstage-bench model   the evaluators on large programs
 *   xstage-bench sim     the packet simulator, beside a SimPy model of the
 *                        same channel (bench/simpy_channel.py)
 *   xstage-bench plan    the cost of one MegaMoE plan (xs_moe_plan), of
 *                        the default sweep, of a sensitivity run, of the
 *                        attention plans, of a knob table
 *   xstage-bench probe   calibration accuracy against the pipe's set
 *                        truth, and replays of burst schedules measured
 *                        against burstgap and blocking
 *   xstage-bench validate  validate's summary of 25,800 rows
 */
#define _POSIX_C_SOURCE 200809L
#include "xstage_measure.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/utsname.h>
#include <time.h>
#include <unistd.h>

static double now_s(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

/* this thread's CPU time: what a call costs when the shared machine
 * also runs others (wall time counts their turns too) */
static double cpu_s(void) {
  struct timespec ts;
  clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
  return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

static int cmp(const void *a, const void *b) {
  double x = *(const double *)a, y = *(const double *)b;
  return x < y ? -1 : x > y;
}

static double median(double *v, int n) {
  qsort(v, (size_t)n, sizeof *v, cmp);
  return n % 2 ? v[n / 2] : 0.5 * (v[n / 2 - 1] + v[n / 2]);
}

__attribute__((noreturn)) static void die(const char *what, const xs_error *e) {
  fprintf(stderr, "xstage-bench: %s: %s\n", what, e->message);
  exit(1);
}

/* Workers each alternate compute and a send; sizes vary so that some sends
 * stay under the capacity and some pass it. */
static xs_program *build(size_t nworkers, size_t sends_each, double gap_s) {
  xs_program *p = xs_program_new("bench");
  xs_error e;
  uint64_t x = 12345;
  for (size_t w = 0; w < nworkers; w++) {
    char name[32];
    snprintf(name, sizeof name, "sm%zu", w);
    if (xs_program_add_worker(p, name, NULL, &e))
      die("build", &e);
    for (size_t i = 0; i < sends_each; i++) {
      x = x * 6364136223846793005ULL + 1442695040888963407ULL;
      double bytes = 4096.0 * (double)(1 + (x >> 60)); /* 4 KiB .. 64 KiB */
      if (xs_program_compute(p, w, gap_s, &e) ||
          xs_program_send(p, w, bytes, NULL, NULL, NULL, &e))
        die("build", &e);
    }
  }
  if (xs_program_finish(p, &e))
    die("finish", &e);
  return p;
}

/* Median time of reps evaluations. reuse: each call recycles the previous
 * result (xs_eval_options.reuse), as a planner's search loop would. */
static double run(const xs_program *p, const xs_profile *prof,
                  xs_eval_options o, int reps, int reuse, uint64_t *events) {
  double t[9];
  xs_result *res = NULL;
  for (int r = 0; r < reps; r++) {
    xs_error e;
    o.reuse = reuse ? res : NULL;
    if (!reuse)
      xs_result_free(res);
    double t0 = now_s();
    if (xs_evaluate(p, prof, XS_MODEL_BURSTGAP, &o, &res, &e))
      die("evaluate", &e);
    t[r] = now_s() - t0;
    if (events)
      *events = res->events;
  }
  xs_result_free(res);
  return median(t, reps);
}

static int bench_model(int quick) {
  xs_profile *prof;
  xs_error e;
  if (xs_profile_load("h200-nvlink", &prof, &e))
    die("profile", &e);
  size_t n1 = quick ? 1000000 : 10000000;
  size_t nw = 132, each = quick ? 10000 : 100000;
  int reps = quick ? 3 : 5;

  xs_program *one = build(1, n1, 2e-7);
  xs_eval_options full = {0, 0, NULL, NULL}, summary = {0, 1, NULL, NULL},
                  event = {1, 0, NULL, NULL};
  /* the first run of a reused series allocates; the median is of the rest */
  double t = run(one, prof, full, reps + 1, 1, NULL);
  printf("fluid_one_worker %.3g sends/s\n", (double)n1 / t);
  t = run(one, prof, summary, reps, 0, NULL);
  printf("fluid_one_worker_summary %.3g sends/s\n", (double)n1 / t);
  t = run(one, prof, full, reps, 0, NULL);
  printf("fluid_one_worker_fresh_results %.3g sends/s\n", (double)n1 / t);
  uint64_t ev = 0;
  t = run(one, prof, event, quick ? 2 : 3, 1, &ev);
  printf("fluid_one_worker_event_driven %.3g sends/s\n", (double)n1 / t);
  printf("fluid_one_worker_event_driven_events %.3g events/s\n", (double)ev / t);
  xs_program_free(one);

  /* compute between sends of 132 * 24 KiB / 370 GB/s keeps the channel near
   * its capacity, so backpressure switches on and off all the time */
  xs_program *many = build(nw, each, 8e-6);
  t = run(many, prof, full, quick ? 2 : 3, 1, &ev);
  printf("fluid_many_workers %.3g events/s\n", (double)ev / t);
  printf("fluid_many_workers_sends %.3g sends/s\n", (double)(nw * each) / t);
  printf("fluid_many_workers_events %llu events\n", (unsigned long long)ev);
  xs_program_free(many);
  xs_profile_free(prof);
  return 0;
}

/* Workers alternate 10 us of compute and sends of send_b bytes, as in
 * bench/simpy_channel.py. */
static xs_program *build_uniform(size_t nworkers, size_t sends, double send_b) {
  xs_program *p = xs_program_new("sim bench");
  xs_error e;
  for (size_t w = 0; w < nworkers; w++) {
    char name[32];
    snprintf(name, sizeof name, "sm%zu", w);
    if (xs_program_add_worker(p, name, NULL, &e))
      die("build", &e);
    for (size_t i = 0; i < sends; i++)
      if (xs_program_compute(p, w, 10e-6, &e) ||
          xs_program_send(p, w, send_b, NULL, NULL, NULL, &e))
        die("build", &e);
  }
  if (xs_program_finish(p, &e))
    die("finish", &e);
  return p;
}

static int bench_sim(int quick) {
  xs_profile *prof;
  xs_error e;
  if (xs_profile_load("h200-nvlink", &prof, &e))
    die("profile", &e);
  size_t sends = quick ? 15 : 150;
  xs_program *p = build_uniform(132, sends, 65536);
  xs_sim_options o = {256, XS_ARB_RR, 1, NULL, 0};
  double t[5];
  uint64_t events = 0;
  int reps = quick ? 1 : 3;
  for (int r = 0; r < reps; r++) {
    xs_result *res;
    double t0 = now_s();
    if (xs_simulate(p, prof, &o, &res, &e))
      die("simulate", &e);
    t[r] = now_s() - t0;
    events = res->events;
    xs_result_free(res);
  }
  double rate = (double)events / median(t, reps);
  printf("sim_packet_events %llu events\n", (unsigned long long)events);
  printf("sim_events_per_s %.3g events/s\n", rate);
  xs_program_free(p);
  /* the SimPy model of the same channel, on a program it finishes in a
   * few seconds; events per second do not depend much on its length */
  char cmd[1024];
  snprintf(cmd, sizeof cmd,
           /* Debian's python3, where python3-simpy3 puts SimPy */
           "$(test -x /usr/bin/python3 && echo /usr/bin/python3 || echo python3) "
           "'%s/bench/simpy_channel.py' 132 %d 65536 256 2>&1",
           XSTAGE_SRC, quick ? 1 : 3);
  FILE *f = popen(cmd, "r");
  double simpy = 0, simpy_makespan = 0;
  char line[256];
  while (f && fgets(line, sizeof line, f)) {
    double v;
    if (sscanf(line, "simpy_events_per_s %lf", &v) == 1)
      simpy = v;
    else if (sscanf(line, "simpy_makespan_s %lf", &v) == 1)
      simpy_makespan = v;
    else if (strncmp(line, "simpy_", 6) != 0)
      printf("# simpy: %s", line);
  }
  if (f)
    pclose(f);
  if (simpy > 0) {
    printf("simpy_events_per_s %.3g events/s\n", simpy);
    printf("sim_vs_simpy %.0f ratio\n", rate / simpy);
    /* the two models of the channel should agree on the same program; the
     * profile's latency is left out, as the SimPy model has none */
    xs_profile *nolat = xs_profile_new("h200-nvlink, no latency", "bench");
    xs_channel ch = *xs_profile_channel(prof, 0);
    ch.latency_s = 0;
    xs_program *small = build_uniform(132, quick ? 1 : 3, 65536);
    xs_result *res = NULL;
    o.summary_only = 1;
    if (xs_profile_add_channel(nolat, "nvlink", &ch, &e) ||
        xs_simulate(small, nolat, &o, &res, &e))
      die("simulate", &e);
    printf("sim_makespan_same_program %.6g s\n", res->makespan_s);
    printf("simpy_makespan_same_program %.6g s\n", simpy_makespan);
    xs_result_free(res);
    xs_program_free(small);
    xs_profile_free(nolat);
  } else {
    printf("# SimPy model not run (needs python3 and Debian python3-simpy3)\n");
  }
  xs_profile_free(prof);
  return 0;
}

/* The burstgap time of one schedule with literal knobs at a config */
static double time_with(const xs_moe_config *c, const xs_profile *prof,
                        xs_moe_schedule s, const xs_moe_pattern *k) {
  xs_program *p;
  xs_result *r;
  xs_error e;
  xs_eval_options o = {0, 1, NULL, NULL};
  if (xs_moe_program(c, prof, s, k, &p, &e) ||
      xs_evaluate(p, prof, XS_MODEL_BURSTGAP, &o, &r, &e))
    die("program", &e);
  double t = r->makespan_s;
  xs_result_free(r);
  xs_program_free(p);
  return t;
}

/* A knob table for DeepSeek-V3 on h800-nvlink, 64 to 4096 tokens: what it
 * costs to build, a lookup's time, and its worst loss against a full plan
 * at every token count (the looked-up knob values, as a kernel would take
 * them from the table, evaluated at that count, against the fastest of
 * all options there) */
static int bench_plan_table(int quick, double tol, const char *suffix) {
  xs_profile *prof;
  xs_error e;
  if (xs_profile_load("h800-nvlink", &prof, &e))
    die("profile", &e);
  xs_moe_config c;
  xs_moe_preset("deepseek-v3", &c);
  const double lo = 64, hi = 4096;
  xs_moe_table_options to = {NULL, 0, lo, hi, tol, 0};
  xs_moe_table *t;
  double t0 = now_s(), c0 = cpu_s();
  if (xs_moe_plan_table(&c, prof, &to, &t, &e))
    die("table", &e);
  printf("plan_table_tolerance%s %g fraction\n", suffix, tol);
  printf("plan_table_build%s %.3g s\n", suffix, now_s() - t0);
  printf("plan_table_build_cpu%s %.3g s\n", suffix, cpu_s() - c0);
  printf("plan_table_rows%s %zu rows\n", suffix, xs_moe_table_size(t));
  /* lookups of pseudo-random token counts in the range, fixed seed */
  enum { LOOKUPS = 1000000 };
  double lt[5];
  unsigned long long x = 42;
  double sink = 0;
  for (int r = 0; r < 5; r++) {
    double s0 = now_s();
    for (int i = 0; i < LOOKUPS; i++) {
      x = x * 6364136223846793005ULL + 1442695040888963407ULL;
      double tk = lo + (double)((x >> 33) % (unsigned long long)(hi - lo + 1));
      sink += xs_moe_plan_lookup(t, tk)->chosen.knobs.block_m;
    }
    lt[r] = (now_s() - s0) / LOOKUPS;
  }
  printf("plan_lookup_ns%s %.3g ns\n", suffix, median(lt, 5) * 1e9);
  double worst = 0, worst_at = 0, sum = 0;
  size_t n = 0, step = quick ? 61 : 1;
  for (double tk = lo; tk <= hi; tk += (double)step, n++) {
    xs_moe_config at = c;
    at.tokens = tk;
    xs_moe_option o[XS_MOE_MAX_OPTIONS];
    size_t no;
    if (xs_moe_options(&at, prof, 0, o, &no, NULL, &e))
      die("options", &e);
    double best = INFINITY;
    for (size_t i = 0; i < no; i++)
      best = fmin(best, o[i].time_s);
    const xs_moe_pick *p = xs_moe_plan_lookup(t, tk);
    double loss = time_with(&at, prof, p->chosen.schedule, &p->chosen.knobs) / best - 1;
    sum += loss;
    if (loss > worst) {
      worst = loss;
      worst_at = tk;
    }
  }
  printf("plan_table_worst_loss%s %.4f fraction\n", suffix, worst);
  printf("plan_table_worst_loss_at%s %g tokens\n", suffix, worst_at);
  printf("plan_table_mean_loss%s %.4f fraction\n", suffix, sum / (double)n);
  printf("plan_table_checked%s %zu token counts\n", suffix, n);
  if (sink < 0)
    printf("#\n");
  xs_moe_table_free(t);
  xs_profile_free(prof);
  return 0;
}

static int bench_plan(int quick) {
  xs_profile *prof;
  xs_error e;
  if (xs_profile_load("h200-nvlink", &prof, &e))
    die("profile", &e);
  const double tokens[] = {16, 128, 1024, 4096, 32768};
  for (int k = 0; k < 5; k++) {
    xs_moe_config c;
    xs_moe_preset("deepseek-v3", &c);
    c.tokens = tokens[k];
    int reps = quick ? 3 : tokens[k] > 4096 ? 5 : 21;
    double t[21], tc[21];
    for (int r = 0; r < reps; r++) {
      xs_moe_result res;
      double t0 = now_s(), c0 = cpu_s();
      if (xs_moe_plan(&c, prof, &res, &e))
        die("plan", &e);
      t[r] = now_s() - t0;
      tc[r] = cpu_s() - c0;
    }
    printf("plan_deepseek_v3_T%g %.3g us\n", tokens[k], median(t, reps) * 1e6);
    printf("plan_deepseek_v3_T%g_cpu %.3g us\n", tokens[k], median(tc, reps) * 1e6);
  }
  double t0 = now_s(), c0 = cpu_s();
  size_t n = 0;
  for (size_t i = 0; i < xs_moe_preset_count(); i++)
    for (double tk = 16; tk <= 32768; tk *= 2, n++) {
      xs_moe_config c;
      xs_moe_result res;
      xs_moe_preset(xs_moe_preset_name(i), &c);
      c.tokens = tk;
      if (xs_moe_plan(&c, prof, &res, &e))
        die("plan", &e);
    }
  printf("sweep_megamoe_default %.3g s\n", now_s() - t0);
  printf("sweep_megamoe_default_cpu %.3g s\n", cpu_s() - c0);
  printf("sweep_megamoe_configs %zu configs\n", n);
  /* plan megamoe --sensitivity's run: every number the plan reads moved
   * over its range, 4 factors each, the options planned at each */
  {
    xs_moe_config c;
    xs_moe_preset("deepseek-v3", &c);
    c.tokens = 4096;
    int reps = quick ? 1 : 3;
    double ts[3], tsc[3];
    size_t ns = 0;
    xs_moe_sensitivity *sens = malloc(XS_MOE_SENS_MAX * sizeof *sens);
    if (!sens) {
      fprintf(stderr, "xstage-bench: out of memory\n");
      return 1;
    }
    for (int r = 0; r < reps; r++) {
      xs_moe_pick base;
      double a = now_s(), ac = cpu_s();
      if (xs_moe_sensitivity_run(&c, prof, 0.01, 0, &base, sens, &ns, &e))
        die("plan megamoe --sensitivity", &e);
      ts[r] = now_s() - a;
      tsc[r] = cpu_s() - ac;
    }
    printf("sensitivity_megamoe_T4096 %.3g s\n", median(ts, reps));
    printf("sensitivity_megamoe_T4096_cpu %.3g s\n", median(tsc, reps));
    printf("sensitivity_megamoe_T4096_numbers %zu numbers\n", ns);
    free(sens);
  }
  /* the attention planner (FA3, Llama-3-8B, CP 8, causal): a plan, and a
   * sensitivity run (4 x numbers + 1 plans) */
  const double seqs[] = {2048, 131072};
  for (int k = 0; k < 2; k++) {
    xs_fa_config c;
    xs_fa_preset("llama3-8b", &c);
    snprintf(c.kernel, sizeof c.kernel, "fa3");
    c.seq = seqs[k];
    int reps = quick ? 1 : 3;
    double tp[3], ts[3];
    xs_fa_result *res = malloc(sizeof *res);
    xs_fa_sensitivity *sens = malloc(XS_FA_SENS_MAX * sizeof *sens);
    size_t ns = 0;
    if (!res || !sens) {
      fprintf(stderr, "xstage-bench: out of memory\n");
      return 1;
    }
    for (int r = 0; r < reps; r++) {
      xs_fa_ring base;
      double a = now_s();
      if (xs_fa_plan(&c, prof, res, &e))
        die("plan flashattn", &e);
      double b = now_s();
      if (xs_fa_sensitivity_run(&c, prof, 0.01, &base, sens, &ns, &e))
        die("plan flashattn --sensitivity", &e);
      tp[r] = b - a;
      ts[r] = now_s() - b;
    }
    printf("plan_flashattn_fa3_S%g %.3g ms\n", seqs[k], median(tp, reps) * 1e3);
    printf("sensitivity_flashattn_fa3_S%g %.3g s\n", seqs[k], median(ts, reps));
    printf("sensitivity_flashattn_fa3_S%g_plans %zu plans\n", seqs[k], 4 * ns + 1);
    free(res);
    free(sens);
  }
  xs_profile_free(prof);
  /* the run-time table at half the 1% target, then at the CLI's default */
  return bench_plan_table(quick, 0.005, "") || bench_plan_table(quick, 0.01, "_tol1pct");
}

static int cmp_abs(const void *a, const void *b) {
  double x = fabs(*(const double *)a), y = fabs(*(const double *)b);
  return x < y ? -1 : x > y;
}

static int bench_probe(int quick) {
  const struct {
    double cap, rate;
  } cases[] = {{1048576, 1e8}, {1048576, 2e8}, {524288, 1e8}, {262144, 1e8}, {1048576, 4e8}};
  int ncases = quick ? 2 : 5;
  for (int c = 0; c < ncases; c++) {
    xs_probe_options o;
    memset(&o, 0, sizeof o);
    o.capacity_B = cases[c].cap;
    o.drain_Bps = cases[c].rate;
    o.timeout_s = 60;
    char tag[64];
    snprintf(tag, sizeof tag, "pipe_%.0fKiB_%.0fMBps", cases[c].cap / 1024, cases[c].rate / 1e6);
    xs_samples *s;
    xs_error e;
    double t0 = now_s();
    if (xs_probe("pipe", &o, &s, &e))
      die("probe", &e);
    xs_fit f;
    if (xs_fit_samples(s, &f, &e))
      die("fit", &e);
    double took = now_s() - t0;
    printf("%s_calibration %.3g s\n", tag, took);
    printf("%s_drain_error %+.2f %%\n", tag, 100 * (f.drain_Bps / cases[c].rate - 1));
    printf("%s_capacity_error %+.2f %%\n", tag, 100 * (f.capacity_B / cases[c].cap - 1));
    printf("%s_drain_in_capacity %.3g ms\n", tag, cases[c].cap / cases[c].rate * 1e3);
    xs_profile *prof = xs_fit_profile(&f, "pipe", "pipe", "bench");
    xs_samples_free(s);
    /* schedules of 6 to 8 bursts of C/4 to 3C, gaps C/(4R) to 3C/R */
    int nsched = quick ? 3 : 7;
    double ebg[8], ebl[8];
    uint64_t x = 42 + (uint64_t)c;
    for (int k = 0; k < nsched; k++) {
      xs_program *p = xs_program_new("bench replay");
      xs_program_add_worker(p, "w", NULL, &e);
      x = x * 6364136223846793005ULL + 1442695040888963407ULL;
      int nb = 6 + (int)((x >> 33) % 3);
      for (int b = 0; b < nb; b++) {
        x = x * 6364136223846793005ULL + 1442695040888963407ULL;
        double u = (double)(x >> 11) / 9007199254740992.0;
        x = x * 6364136223846793005ULL + 1442695040888963407ULL;
        double v = (double)(x >> 11) / 9007199254740992.0;
        xs_program_send(p, 0, round(cases[c].cap * (0.25 + 2.75 * u)), NULL, NULL, NULL, &e);
        if (b + 1 < nb)
          xs_program_compute(p, 0, cases[c].cap / cases[c].rate * (0.25 + 2.75 * v), &e);
      }
      xs_program_finish(p, &e);
      xs_result *m, *bg, *bl;
      if (xs_replay(p, "pipe", &o, &m, &e) ||
          xs_evaluate(p, prof, XS_MODEL_BURSTGAP, NULL, &bg, &e) ||
          xs_evaluate(p, prof, XS_MODEL_BLOCKING, NULL, &bl, &e))
        die("replay", &e);
      ebg[k] = bg->makespan_s / m->makespan_s - 1;
      ebl[k] = bl->makespan_s / m->makespan_s - 1;
      xs_result_free(m);
      xs_result_free(bg);
      xs_result_free(bl);
      xs_program_free(p);
    }
    qsort(ebg, (size_t)nsched, sizeof *ebg, cmp_abs);
    qsort(ebl, (size_t)nsched, sizeof *ebl, cmp_abs);
    printf("%s_replay_burstgap_median_abs_error %.2f %%\n", tag, 100 * fabs(ebg[nsched / 2]));
    printf("%s_replay_blocking_median_abs_error %.2f %%\n", tag, 100 * fabs(ebl[nsched / 2]));
    printf("%s_replay_burstgap_worst_abs_error %.2f %%\n", tag, 100 * fabs(ebg[nsched - 1]));
    xs_profile_free(prof);
  }
  return 0;
}

/* validate ep --by-source over many sources: the project's EP rows, row i
 * the (i mod n)-th under a source of its own ("s<i>"), read and
 * predicted, then each source left out of the constants' fit
 * (validate_ep_by_source_s; its CPU time beside). */
static int bench_ep_by_source(size_t want) {
  FILE *f = fopen(XSTAGE_SRC "/data/published/ep.csv", "rb");
  char line[8192], **rows = malloc(1024 * sizeof *rows), *header = NULL;
  size_t nr = 0;
  while (f && rows && nr < 1024 && fgets(line, sizeof line, f)) {
    if (line[0] == '#')
      continue;
    /* the line past its first field (a quoted one may hold commas) */
    const char *p = line;
    if (*p == '"')
      for (p++; *p && !(p[0] == '"' && p[1] != '"'); p += p[0] == '"' ? 2 : 1)
        ;
    p = strchr(p, ',');
    if (!p)
      continue;
    if (!header)
      header = strdup(line);
    else
      rows[nr++] = strdup(p);
  }
  if (f)
    fclose(f);
  size_t cap = want * 8300 + 8192, n = 0;
  char *csv = nr && header ? malloc(cap) : NULL;
  if (!csv) {
    fprintf(stderr, "xstage-bench: no rows in data/published/ep.csv\n");
    return 1;
  }
  n += (size_t)snprintf(csv, cap, "%s", header);
  for (size_t i = 0; i < want; i++)
    n += (size_t)snprintf(csv + n, cap - n, "s%zu%s", i, rows[i % nr]);
  xs_validate_set set;
  xs_error e;
  double t0 = now_s(), c0 = cpu_s();
  if (xs_validate_ep(csv, n, "ep.csv", &set, NULL, NULL, &e))
    die("validate ep", &e);
  double *values = malloc((want + 1) * XS_EP_CONSTANTS * sizeof *values);
  if (!values || xs_validate_ep_by_source(&set, values, &e))
    die("by source", &e);
  printf("validate_ep_by_source_sources %zu sources\n", want);
  printf("validate_ep_by_source_s %.3g s\n", now_s() - t0);
  printf("validate_ep_by_source_cpu_s %.3g s\n", cpu_s() - c0);
  free(values);
  xs_validate_free(&set);
  free(csv);
  for (size_t i = 0; i < nr; i++)
    free(rows[i]);
  free(rows);
  free(header);
  return 0;
}

/* validate's summary over many rows: the project's MegaMoE rows
 * predicted once, then copied under distinct sources into `rows` rows
 * (each copy a set of configs of its own, as another paper's data would
 * be), and the summary the command prints made of them: arms and sources
 * with their medians and the pairs of arms (validate_summary_s), and the
 * JSON document of every row and that summary (validate_json_s). */
static int bench_validate(int quick) {
  size_t want = quick ? 2580 : 25800, len;
  char *text = NULL;
  FILE *f = fopen(XSTAGE_SRC "/data/published/megamoe.csv", "rb");
  if (!f) {
    fprintf(stderr, "xstage-bench: %s/data/published/megamoe.csv: cannot open\n", XSTAGE_SRC);
    return 1;
  }
  text = malloc(1 << 20);
  len = text ? fread(text, 1, (1 << 20) - 1, f) : 0;
  fclose(f);
  xs_validate_set one, many;
  xs_error e;
  double t0 = now_s();
  if (!text || xs_validate_megamoe(text, len, "megamoe.csv", &one, NULL, NULL, &e))
    die("validate", &e);
  printf("validate_predict_per_row %.3g ms\n", (now_s() - t0) * 1e3 / (double)one.nrows);
  many.nrows = want;
  many.rows = malloc(want * sizeof *many.rows);
  if (!many.rows)
    return 1;
  for (size_t i = 0; i < want; i++) {
    many.rows[i] = one.rows[i % one.nrows];
    /* each copy a source of its own, freed with the set */
    const char *src = one.rows[i % one.nrows].source;
    size_t n = strlen(src) + 32;
    if (!(many.rows[i].source = malloc(n)))
      return 1;
    snprintf(many.rows[i].source, n, "%s #%zu", src, i / one.nrows);
  }
  double v[5], vj[5];
  size_t pairs = 0, groups = 0;
  for (int r = 0; r < 5; r++) {
    double s0 = now_s();
    xs_validate_group *g;
    size_t n, n2, np;
    xs_validate_pairs pr;
    xs_validate_pair *pl;
    char *js;
    if (xs_validate_groups(&many, 0, &g, &n, &e))
      die("groups", &e);
    free(g);
    if (xs_validate_groups(&many, 1, &g, &n2, &e))
      die("groups", &e);
    free(g);
    if (xs_validate_compare_arms(&many, &pr, &e) ||
        xs_validate_pair_list(&many, 0.05, &pl, &np, &e))
      die("summary", &e);
    free(pl);
    v[r] = now_s() - s0;
    s0 = now_s();
    if (xs_validate_json(&many, &js, &e))
      die("json", &e);
    xs_free(js);
    vj[r] = now_s() - s0;
    pairs = pr.pairs;
    groups = n + n2;
  }
  printf("validate_summary_rows %zu rows\n", want);
  printf("validate_summary_groups %zu arms and sources\n", groups);
  printf("validate_summary_pairs %zu pairs\n", pairs);
  printf("validate_summary_s %.3g s\n", median(v, 5));
  printf("validate_json_s %.3g s\n", median(vj, 5));
  xs_validate_free(&one);
  xs_validate_free(&many);
  free(text);
  return bench_ep_by_source(quick ? 100 : 1000);
}

/* The online tuner (docs/tune.md): creating it for DeepSeek-V3 on
 * h200-nvlink over five batch sizes, then a choice and a timing taken in,
 * each the median of 5 runs of many calls; and a fit to published
 * timings (DeepGEMM PR 440's 14 rows on H100). */
static int bench_tune(int quick) {
  xs_profile *prof;
  xs_error e;
  if (xs_profile_load("h200-nvlink", &prof, &e))
    die("profile", &e);
  xs_moe_config c;
  xs_moe_preset("deepseek-v3", &c);
  double grid[] = {64, 128, 256, 512, 1024};
  xs_tuner_options o;
  memset(&o, 0, sizeof o);
  o.tokens = grid;
  o.ntokens = quick ? 2 : 5;
  xs_tuner *t;
  double t0 = now_s(), tc0 = cpu_s();
  if (xs_tuner_create(&c, prof, &o, &t, &e))
    die("tuner", &e);
  printf("tuner_create %.3g s\n", now_s() - t0);
  printf("tuner_create_cpu %.3g s\n", cpu_s() - tc0);
  printf("tuner_points %zu points\n", o.ntokens);
  /* and at the most points a tuner keeps: 64 over the same tokens */
  {
    double many[XS_TUNER_MAX_POINTS];
    size_t np = quick ? 8 : XS_TUNER_MAX_POINTS;
    for (size_t i = 0; i < np; i++)
      many[i] = round(64 * exp2(4.0 * (double)i / (double)(np - 1)));
    xs_tuner_options om = o;
    om.tokens = many;
    om.ntokens = np;
    xs_tuner *tm;
    double t1 = now_s(), c1 = cpu_s();
    if (xs_tuner_create(&c, prof, &om, &tm, &e))
      die("tuner", &e);
    printf("tuner_create_%zu %.3g s\n", np, now_s() - t1);
    printf("tuner_create_%zu_cpu %.3g s\n", np, cpu_s() - c1);
    xs_tuner_free(tm);
  }
  printf("tuner_state %zu bytes\n", xs_tuner_state_size(t));
  enum { CHOOSE = 200000, OBSERVE = 20000 };
  double ct[5], ot[5], cc[5], oc[5], sink = 0;
  unsigned long long x = 42;
  for (int r = 0; r < 5; r++) {
    double s0 = now_s(), c0 = cpu_s();
    for (int i = 0; i < CHOOSE; i++) {
      x = x * 6364136223846793005ULL + 1442695040888963407ULL;
      xs_tuner_choice ch;
      xs_tuner_choose(t, 64 + (double)((x >> 33) % 961), &ch);
      sink += ch.predicted_s;
    }
    ct[r] = (now_s() - s0) / CHOOSE;
    cc[r] = (cpu_s() - c0) / CHOOSE;
    xs_tuner_choice ch[64];
    double tk[64];
    for (int i = 0; i < 64; i++) { /* the choices, made beforehand */
      x = x * 6364136223846793005ULL + 1442695040888963407ULL;
      tk[i] = 64 + (double)((x >> 33) % 961);
      xs_tuner_choose(t, tk[i], &ch[i]);
    }
    s0 = now_s();
    c0 = cpu_s();
    for (int i = 0; i < OBSERVE; i++) {
      const xs_tuner_choice *h = &ch[i & 63];
      if (xs_tuner_observe(t, tk[i & 63], h->schedule, &h->knobs,
                           h->predicted_s * (1 + 0.01 * (i % 5)), &e))
        die("observe", &e);
    }
    ot[r] = (now_s() - s0) / OBSERVE;
    oc[r] = (cpu_s() - c0) / OBSERVE;
  }
  printf("tuner_choose_ns %.3g ns\n", median(ct, 5) * 1e9);
  printf("tuner_choose_cpu_ns %.3g ns\n", median(cc, 5) * 1e9);
  printf("tuner_observe_ns %.3g ns\n", median(ot, 5) * 1e9);
  printf("tuner_observe_cpu_ns %.3g ns\n", median(oc, 5) * 1e9);
  if (sink < 0)
    printf("#\n");
  xs_tuner_free(t);
  xs_profile_free(prof);
  /* the fit: PR 440's rows of the published timings */
  FILE *f = fopen(XSTAGE_SRC "/data/published/megamoe.csv", "rb");
  if (!f) {
    fprintf(stderr, "xstage-bench: no data/published/megamoe.csv\n");
    return 1;
  }
  char line[4096], *csv = malloc(1 << 20);
  size_t n = 0;
  int header = 0;
  while (csv && fgets(line, sizeof line, f))
    if (line[0] != '#' && (!header++ || strstr(line, "DeepGEMM PR 440,")))
      n += (size_t)snprintf(csv + n, (1 << 20) - n, "%s", line);
  fclose(f);
  if (xs_profile_load("h100-nvlink", &prof, &e))
    die("profile", &e);
  xs_moe_fit_result r;
  t0 = now_s();
  if (!csv || xs_moe_fit(csv, n, "megamoe.csv", prof, NULL, &r, NULL, &e))
    die("fit", &e);
  printf("fit_megamoe_pr440 %.3g s\n", now_s() - t0);
  printf("fit_megamoe_pr440_programs %u programs\n", r.evaluations);
  printf("fit_megamoe_pr440_error_before %.1f %%\n", 100 * r.median_before);
  printf("fit_megamoe_pr440_error_after %.1f %%\n", 100 * r.median_after);
  xs_moe_fit_free(&r);
  /* The fit on 1,000 rows (10x the project's data): the published H100
   * rows (their first 14 columns, before the quoted timing note) at 1,000
   * token counts, row i the (i mod n)-th at tokens + k (+ 7k past 64
   * tokens), k = i / n, its time moved with the square root of the
   * tokens; each keeps its source, so that two sources' rows of one shape
   * stay two rows. */
  enum { ROWS = 1000, COLS = 14 };
  char *base[64][COLS] = {{0}}, *lines = malloc(1 << 20);
  size_t nb = 0, used = 0;
  f = fopen(XSTAGE_SRC "/data/published/megamoe.csv", "rb");
  while (f && lines && nb < 64 && fgets(line, sizeof line, f)) {
    /* kernel times only: a row with a metric (the last column) is another
     * quantity */
    size_t len = strcspn(line, "\r\n");
    if (line[0] == '#' || !strstr(line, ",h100-nvlink,") || (len && line[len - 1] != ','))
      continue;
    char *quote = strchr(line, '"'); /* the timing note: past the columns used */
    if (quote)
      *quote = '\0';
    char *copy = lines + used, *save = NULL;
    used += (size_t)snprintf(copy, (1 << 20) - used, "%s", line) + 1;
    int col = 0;
    for (char *tok = strtok_r(copy, ",\n", &save); tok && col < COLS;
         tok = strtok_r(NULL, ",\n", &save))
      base[nb][col++] = tok;
    nb += col == COLS;
  }
  if (f)
    fclose(f);
  size_t cap = (size_t)ROWS * 160 + 256;
  char *big = nb ? malloc(cap) : NULL;
  if (!big) {
    fprintf(stderr, "xstage-bench: no H100 rows in data/published/megamoe.csv\n");
    return 1;
  }
  n = (size_t)snprintf(big, cap, "source,gpu,ep,hidden,intermediate,experts,topk,"
                       "shared_experts,act_dtype,weight_dtype,tokens,arm,time_us\n");
  for (size_t i = 0; i < ROWS; i++) {
    char **b = base[i % nb];
    double tk = atof(b[11]), k = (double)(i / nb), nt = tk + (tk > 64 ? 7 * k : k);
    n += (size_t)snprintf(big + n, cap - n, "%s,%s,%s,%s,%s,%s,%s,%s,%s,%s,%.0f,%s,%.1f\n",
                          b[0], b[1], b[3], b[4], b[5], b[6], b[7], b[8], b[9], b[10], nt, b[12],
                          atof(b[13]) * sqrt(nt / tk));
  }
  t0 = now_s();
  double c0 = cpu_s();
  if (xs_moe_fit(big, n, "bench.csv", prof, NULL, &r, NULL, &e))
    die("fit 1000", &e);
  printf("fit_megamoe_1000 %.3g s\n", now_s() - t0);
  printf("fit_megamoe_1000_cpu %.3g s\n", cpu_s() - c0);
  printf("fit_megamoe_1000_rows %zu rows\n", r.nrows);
  printf("fit_megamoe_1000_programs %u programs\n", r.evaluations);
  xs_moe_fit_free(&r);
  free(big);
  free(lines);
  xs_profile_free(prof);
  free(csv);
  return 0;
}

static void usage(FILE *f) {
  fprintf(f, "usage: xstage-bench model|sim|plan|probe|validate|tune [--quick]\n"
             "\n"
             "Prints figures, one a line: NAME VALUE UNIT (medians of repeated\n"
             "runs). It never fails on time. --quick runs smaller programs.\n");
}

int main(int argc, char **argv) {
  if (argc < 2 || strcmp(argv[1], "--help") == 0 || strcmp(argv[1], "-h") == 0) {
    usage(argc < 2 ? stderr : stdout);
    return argc < 2 ? 2 : 0;
  }
  int quick = argc > 2 && strcmp(argv[2], "--quick") == 0;
  if (argc > 2 && !quick) {
    fprintf(stderr, "xstage-bench: unknown flag %s (see --help)\n", argv[2]);
    return 2;
  }
  struct utsname u;
  uname(&u);
  printf("# xstage-bench %s %s on %s %s %s, %ld cores online\n", XSTAGE_VERSION,
         argv[1], u.sysname, u.release, u.machine,
         (long)sysconf(_SC_NPROCESSORS_ONLN));
  if (strcmp(argv[1], "model") == 0)
    return bench_model(quick);
  if (strcmp(argv[1], "sim") == 0)
    return bench_sim(quick);
  if (strcmp(argv[1], "plan") == 0)
    return bench_plan(quick);
  if (strcmp(argv[1], "probe") == 0)
    return bench_probe(quick);
  if (strcmp(argv[1], "validate") == 0)
    return bench_validate(quick);
  if (strcmp(argv[1], "tune") == 0)
    return bench_tune(quick);
  fprintf(stderr, "xstage-bench: unknown benchmark \"%s\" (model, sim, plan, probe, "
                  "validate, tune)\n", argv[1]);
  return 2;
}
