/*
 * test_plan_eval.c: the planners' mode of the fluid evaluation
 * (xs__eval.plan: no event when a backlog drains to 0, a send that starts
 * alone ended without the event queues) against the reference, the same
 * evaluation event by event, on the same programs: random ones (seeded)
 * built to reach what the mode does differently (sends that end at once,
 * on channels like HBM, with workers in lockstep that tie; backlogs that
 * drain to 0; counters, waits, fences, sends of no bytes, overheads), and
 * the MegaMoE kernels' programs over presets, token counts, uneven expert
 * loads and knobs. Every worker's figures, the makespan, each channel's
 * peak backlog, the breakdown's sums and the early stop agree to 1e-9 of
 * the makespan; a failure prints the seed (or the config) and both values.
 */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <cmocka.h>

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "evalutil.h"
#include "internal.h"
#include "testutil.h"

/* sums by segment kind and mark (as a planner's breakdown sums them) */
enum { NCLS = 2 * (XS__SEG_AWAIT + 1) + 1 };

typedef struct {
  xs_result *r;
  double sums[64 * NCLS];
  int stopped;
} run_out;

/* One evaluation under model m, by the planners' way or the reference's,
 * summing segments per worker by kind and mark, stopping past stop_s. */
static void run(const xs_program *p, const xs_profile *prof, xs_model m, int reference,
                double stop_s, run_out *o) {
  size_t ncode = p->nchan_names + 1, nk = p->ncounters;
  uint8_t marks[256] = {0};
  assert_true(ncode + nk <= sizeof marks && p->nworkers <= 64);
  for (size_t k = 1; k < ncode; k++)
    marks[k] = (uint8_t)(k & 1);
  for (size_t c = 0; c < nk; c++)
    marks[ncode + c] = (uint8_t)(c % 3);
  xs__seg_sums S = {marks, marks + ncode, {{0}}, {{0}}, NCLS, o->sums};
  memset(S.also, -1, sizeof S.also);
  for (int k = 0; k <= XS__SEG_AWAIT; k++)
    for (int mk = 0; mk < 3; mk++)
      S.cls[k][mk] = (signed char)(k == XS__SEG_AWAIT ? 2 * k + (mk > 0) : 2 * k + (mk & 1));
  S.also[XS_SEG_STALL][0] = NCLS - 1;
  memset(o->sums, 0, sizeof o->sums);
  xs__eval_extra x = {.sums = &S, .stop_s = stop_s, .plan = 1};
  xs_eval_options opt = {1, 1, NULL, NULL};
  xs_error e;
  xs__set_reference(reference);
  xs_status st = xs__evaluate_ex(p, prof, m, &opt, &x, &o->r, &e);
  xs__set_reference(0);
  if (st)
    fprintf(stderr, "evaluate: %s\n", e.message);
  assert_int_equal(st, XS_OK);
  o->stopped = x.stopped;
}

/* The two ways on one program and model agree; what says where it came
 * from is printed on a failure. Returns the makespan. */
static double compare(const xs_program *p, const xs_profile *prof, xs_model m,
                      uint64_t seed, const char *what) {
  run_out a, b;
  run(p, prof, m, 0, INFINITY, &a);
  run(p, prof, m, 1, INFINITY, &b);
  double mk = b.r->makespan_s;
  char msg[160];
  snprintf(msg, sizeof msg, "%s, model %d: makespan", what, (int)m);
  check_close_rel(a.r->makespan_s, mk, 1e-9, mk, msg, seed);
  snprintf(msg, sizeof msg, "%s, model %d: issue done", what, (int)m);
  check_close_rel(a.r->issue_done_s, b.r->issue_done_s, 1e-9, mk, msg, seed);
  for (size_t w = 0; w < p->nworkers; w++) {
    const xs_worker_result *x = &a.r->workers[w], *y = &b.r->workers[w];
    const double u[] = {x->finish_s, x->stall_s, x->compute_s, x->issue_s, x->overhead_s,
                        x->blocked_s};
    const double v[] = {y->finish_s, y->stall_s, y->compute_s, y->issue_s, y->overhead_s,
                        y->blocked_s};
    for (int k = 0; k < 6; k++) {
      snprintf(msg, sizeof msg, "%s, model %d: worker %zu figure %d", what, (int)m, w, k);
      check_close_rel(u[k], v[k], 1e-9, mk, msg, seed);
    }
    for (int k = 0; k < NCLS; k++) {
      snprintf(msg, sizeof msg, "%s, model %d: worker %zu sum %d", what, (int)m, w, k);
      check_close_rel(a.sums[w * NCLS + k], b.sums[w * NCLS + k], 1e-9, mk, msg, seed);
    }
  }
  for (size_t c = 0; c < a.r->nchannels; c++) {
    snprintf(msg, sizeof msg, "%s, model %d: channel %zu peak", what, (int)m, c);
    check_close_rel(a.r->channels[c].peak_backlog_B, b.r->channels[c].peak_backlog_B, 1e-9,
                    1, msg, seed);
  }
  xs_result_free(a.r);
  xs_result_free(b.r);
  /* a stop clear of the makespan: both stop below it, neither above */
  const double f[] = {0.5, 0.9, 1.1};
  for (int k = 0; k < 3; k++) {
    run(p, prof, m, 0, mk * f[k], &a);
    run(p, prof, m, 1, mk * f[k], &b);
    if (a.stopped != b.stopped || a.stopped != (f[k] < 1)) {
      fprintf(stderr, "seed %llu: %s, model %d: stop at %g of the makespan: %d and %d\n",
              (unsigned long long)seed, what, (int)m, f[k], a.stopped, b.stopped);
      fail();
    }
    xs_result_free(a.r);
    xs_result_free(b.r);
  }
  return mk;
}

/* ---- random programs ---- */

/* "hbm" (no capacity, an inject rate far past its drain: sends end almost
 * at once), "link" (a capacity, a per-worker rate), "tight" (capacity 0
 * or a little, an overhead sometimes) */
static xs_profile *random_profile(rng *g) {
  xs_profile *p = xs_profile_new("random", "test");
  xs_error e;
  xs_channel c;
  xs_channel_init(&c, 1e16, rng_range(g, 1e12, 5e12));
  c.capacity_B = INFINITY;
  c.latency_s = rng_range(g, 0, 1e-6);
  assert_int_equal(xs_profile_add_channel(p, "hbm", &c, &e), XS_OK);
  xs_channel_init(&c, rng_range(g, 5e11, 2e12), rng_range(g, 1e11, 5e11));
  c.worker_inject_Bps = rng_range(g, 5e9, 5e10);
  c.capacity_B = rng_range(g, 1e5, 8e6);
  c.latency_s = rng_range(g, 0, 2e-6);
  assert_int_equal(xs_profile_add_channel(p, "link", &c, &e), XS_OK);
  xs_channel_init(&c, rng_range(g, 1e10, 1e11), rng_range(g, 1e10, 5e10));
  c.capacity_B = rng_int(g, 2) ? 0 : rng_range(g, 1e4, 1e5);
  c.issue_overhead_s = rng_int(g, 2) ? rng_range(g, 0, 1e-6) : 0;
  assert_int_equal(xs_profile_add_channel(p, "tight", &c, &e), XS_OK);
  return p;
}

/* Workers in a few lockstep families (the same computes, so they tie),
 * each op drawn from computes, sends (mostly to hbm, some of no bytes),
 * waits on earlier sends, signals and awaits of counters that earlier
 * workers signal enough (never a deadlock), fences. */
static xs_program *random_program(rng *g) {
  xs_program *p = xs_program_new("random");
  xs_error e;
  enum { NK = 4, MAXS = 256 };
  static const char *const chans[] = {"hbm", "hbm", "hbm", "link", "tight"};
  double total[NK] = {0};
  size_t sends[MAXS];
  int nsends = 0;
  int nw = 2 + rng_int(g, 14), fam = 1 + rng_int(g, 3);
  double step[3] = {rng_range(g, 1e-6, 2e-5), rng_range(g, 1e-6, 2e-5),
                    rng_range(g, 1e-6, 2e-5)};
  for (int w = 0; w < nw; w++) {
    char name[16];
    snprintf(name, sizeof name, "w%d", w);
    size_t idx;
    assert_int_equal(xs_program_add_workers(p, name, 1 + (size_t)rng_int(g, 12), &idx, &e),
                     XS_OK);
    double mine[NK] = {0};
    int nops = 4 + rng_int(g, 40);
    for (int i = 0; i < nops; i++) {
      int k = rng_int(g, 16);
      char cn[8];
      int c = rng_int(g, NK);
      snprintf(cn, sizeof cn, "k%d", c);
      size_t s;
      if (k < 4) {
        double t = rng_int(g, 3) ? step[w % fam] : rng_range(g, 0, 3e-5);
        assert_int_equal(xs_program_compute(p, idx, t, &e), XS_OK);
      } else if (k < 9) {
        const char *ch = chans[rng_int(g, 5)];
        double bytes = rng_int(g, 8) ? rng_range(g, 1e3, 1e6) : 0;
        assert_int_equal(xs_program_send(p, idx, bytes, ch, NULL, &s, &e), XS_OK);
        if (nsends < MAXS)
          sends[nsends++] = s;
        if (rng_int(g, 3) == 0) /* the TMA pattern: a load waited for */
          assert_int_equal(xs_program_wait_send(p, idx, s, &e), XS_OK);
      } else if (k < 11) {
        double add = 1 + rng_int(g, 3);
        assert_int_equal(xs_program_signal(p, idx, cn, add, &e), XS_OK);
        mine[c] += add * (double)xs_program_worker_copies(p, idx);
      } else if (k < 13 && total[c] >= 1) { /* at most what earlier ones signal */
        double v = 1 + floor(rng_unit(g) * total[c]);
        assert_int_equal(xs_program_await(p, idx, cn, v, &e), XS_OK);
      } else if (k < 15 && nsends > 0) { /* an earlier send, or its own */
        size_t s0 = sends[rng_int(g, nsends)];
        assert_int_equal(xs_program_wait_send(p, idx, s0, &e), XS_OK);
      } else if (k == 15) {
        assert_int_equal(xs_program_fence(p, idx, &e), XS_OK);
      }
    }
    for (int c = 0; c < NK; c++)
      total[c] += mine[c];
  }
  finish_ok(p);
  return p;
}

static void test_random_programs(void **state) {
  (void)state;
  for (uint64_t seed = 1; seed <= 400; seed++) {
    rng g = {seed};
    xs_profile *prof = random_profile(&g);
    xs_program *p = random_program(&g);
    compare(p, prof, XS_MODEL_BURSTGAP, seed, "random");
    compare(p, prof, XS_MODEL_BLOCKING, seed, "random");
    xs_program_free(p);
    xs_profile_free(prof);
  }
}

/* ---- the MegaMoE kernels' programs ---- */

static void test_moe_programs(void **state) {
  (void)state;
  const char *const profs[] = {"h200-nvlink", "b200-nvlink", "h800-nvlink"};
  for (uint64_t seed = 1; seed <= 48; seed++) {
    rng g = {seed};
    xs_profile *prof = xs_test_profile(profs[rng_int(&g, 3)]);
    xs_moe_config c;
    assert_int_equal(
        xs_moe_preset(xs_moe_preset_name((size_t)rng_int(&g, (int)xs_moe_preset_count())), &c),
        0);
    c.tokens = floor(exp(rng_range(&g, log(1), log(6000))));
    /* uneven expert loads: the busiest rank's excess and shared experts */
    c.imbalance = rng_int(&g, 2) ? 1 : rng_range(&g, 1, 2.5);
    c.shared_experts = rng_int(&g, 3) == 0 ? 1 : 0;
    if (rng_int(&g, 3) == 0)
      c.sm_groups = 1 + rng_int(&g, 40);
    for (int s = 0; s < XS_MOE_SCHEDULES; s++) {
      xs_moe_pattern kn = {0};
      if (rng_int(&g, 2)) {
        kn.lag = (unsigned)rng_int(&g, 20);
        kn.group = (unsigned)rng_int(&g, 6);
        kn.experts_per_wave = (unsigned)rng_int(&g, 8);
        kn.warmup = (unsigned)rng_int(&g, 4);
      }
      xs_program *p;
      xs_error e;
      xs_status st = xs_moe_program(&c, prof, (xs_moe_schedule)s, &kn, &p, &e);
      if (st)
        fprintf(stderr, "seed %llu: %s\n", (unsigned long long)seed, e.message);
      assert_int_equal(st, XS_OK);
      char what[160];
      snprintf(what, sizeof what, "%s %s T=%g imbalance %g %s", xs_profile_name(prof), c.name,
               c.tokens, c.imbalance, xs_moe_schedule_name((xs_moe_schedule)s));
      compare(p, prof, XS_MODEL_BURSTGAP, seed, what);
      compare(p, prof, XS_MODEL_BLOCKING, seed, what);
      xs_program_free(p);
    }
    xs_profile_free(prof);
  }
}

/* ---- what the planners answer, the planners' way and the reference's:
 * the same options, the same choices, times to 1e-9 ---- */

static void same_time(double a, double b, const char *what, const char *where) {
  if (!(a == b || (isnan(a) && isnan(b)) || fabs(a - b) <= 1e-9 * fmax(fabs(a), fabs(b)))) {
    fprintf(stderr, "%s: %s: %.17g (planners) vs %.17g (reference)\n", where, what, a, b);
    fail();
  }
}

/* a relative change (time / base - 1): to 1e-9 of the base */
static void same_change(double a, double b, const char *what, const char *where) {
  if (!(a == b || (isnan(a) && isnan(b)) || fabs(a - b) <= 1e-9)) {
    fprintf(stderr, "%s: %s: %.17g (planners) vs %.17g (reference)\n", where, what, a, b);
    fail();
  }
}

static void same_option(const xs_moe_option *a, const xs_moe_option *b, const char *where) {
  if (a->schedule != b->schedule || a->rule != b->rule ||
      memcmp(&a->knobs, &b->knobs, sizeof a->knobs) || a->away != b->away) {
    fprintf(stderr, "%s: option %s/%u vs %s/%u\n", where,
            xs_moe_schedule_name(a->schedule), a->rule, xs_moe_schedule_name(b->schedule),
            b->rule);
    fail();
  }
  same_time(a->time_s, b->time_s, "option's time", where);
}

static void same_pick(const xs_moe_pick *a, const xs_moe_pick *b, const char *where) {
  same_option(&a->chosen, &b->chosen, where);
  same_option(&a->best, &b->best, where);
  assert_int_equal(a->near, b->near);
  for (size_t i = 0; i < a->near; i++)
    same_option(&a->near_set[i], &b->near_set[i], where);
  if (!(isnan(a->runner_up.time_s) && isnan(b->runner_up.time_s)))
    same_option(&a->runner_up, &b->runner_up, where);
  same_time(a->lo, b->lo, "lo", where);
  same_time(a->tokens, b->tokens, "tokens", where);
}

static void plan_both(const xs_moe_config *c, const xs_profile *prof, const char *where) {
  xs_moe_result a, b;
  xs_error e;
  assert_int_equal(xs_moe_plan(c, prof, &a, &e), XS_OK);
  xs__set_reference(1);
  xs_status st = xs_moe_plan(c, prof, &b, &e);
  xs__set_reference(0);
  assert_int_equal(st, XS_OK);
  assert_int_equal(a.searched, b.searched); /* the same options considered */
  assert_int_equal(a.best_fused, b.best_fused);
  assert_int_equal(a.best_interleaved, b.best_interleaved);
  assert_int_equal(a.best_plain, b.best_plain);
  for (int s = 0; s < XS_MOE_SCHEDULES; s++) {
    assert_memory_equal(&a.knobs[s], &b.knobs[s], sizeof a.knobs[s]);
    for (int m = 0; m < XS_MODEL_COUNT; m++)
      same_time(a.time_s[s][m], b.time_s[s][m], xs_moe_schedule_name((xs_moe_schedule)s),
                where);
    const xs_moe_breakdown *x = &a.breakdown[s], *y = &b.breakdown[s];
    const double u[] = {x->compute_s, x->hbm_s, x->fixed_s, x->dispatch_s, x->sync_s,
                        x->link_s, x->stall_s, x->xstage_tail_s};
    const double v[] = {y->compute_s, y->hbm_s, y->fixed_s, y->dispatch_s, y->sync_s,
                        y->link_s, y->stall_s, y->xstage_tail_s};
    for (int k = 0; k < 8; k++)
      same_change(u[k] / b.time_s[s][0], v[k] / b.time_s[s][0], "breakdown", where);
    assert_string_equal(x->bound, y->bound);
  }
  /* and every option, as a recommendation sees them */
  xs_moe_option oa[XS_MOE_MAX_OPTIONS], ob[XS_MOE_MAX_OPTIONS];
  size_t na, nb;
  assert_int_equal(xs_moe_options(c, prof, 0, oa, &na, NULL, &e), XS_OK);
  xs__set_reference(1);
  st = xs_moe_options(c, prof, 0, ob, &nb, NULL, &e);
  xs__set_reference(0);
  assert_int_equal(st, XS_OK);
  assert_int_equal(na, nb);
  for (size_t i = 0; i < na; i++)
    same_option(&oa[i], &ob[i], where);
}

/* the bench's plans and the default sweep's 84 configs (every preset at
 * 16 to 32768 tokens on h200-nvlink) */
static void test_plans_match_reference(void **state) {
  (void)state;
  xs_profile *prof = xs_test_profile("h200-nvlink");
  for (size_t i = 0; i < xs_moe_preset_count(); i++)
    for (double tk = 16; tk <= 32768; tk *= 2) {
      xs_moe_config c;
      xs_moe_preset(xs_moe_preset_name(i), &c);
      c.tokens = tk;
      char where[96];
      snprintf(where, sizeof where, "%s T=%g", c.name, tk);
      plan_both(&c, prof, where);
    }
  xs_profile_free(prof);
}

/* a knob table's points and a sensitivity run */
static void test_tables_match_reference(void **state) {
  (void)state;
  xs_profile *prof = xs_test_profile("h800-nvlink");
  xs_moe_config c;
  xs_moe_preset("deepseek-v3", &c);
  xs_moe_table_options o = {NULL, 0, 64, 1024, 0.005, 0};
  xs_moe_table *a, *b;
  xs_error e;
  assert_int_equal(xs_moe_plan_table(&c, prof, &o, &a, &e), XS_OK);
  xs__set_reference(1);
  xs_status st = xs_moe_plan_table(&c, prof, &o, &b, &e);
  xs__set_reference(0);
  assert_int_equal(st, XS_OK);
  assert_int_equal(xs_moe_table_size(a), xs_moe_table_size(b));
  for (size_t i = 0; i < xs_moe_table_size(a); i++) {
    char where[64];
    snprintf(where, sizeof where, "table row %zu", i);
    same_pick(xs_moe_table_pick(a, i), xs_moe_table_pick(b, i), where);
  }
  xs_moe_table_free(a);
  xs_moe_table_free(b);
  xs_profile_free(prof);
  /* the sensitivity run the bench times */
  prof = xs_test_profile("h200-nvlink");
  c.tokens = 4096;
  static xs_moe_sensitivity sa[XS_MOE_SENS_MAX], sb[XS_MOE_SENS_MAX];
  xs_moe_pick pa, pb;
  size_t na, nb;
  assert_int_equal(xs_moe_sensitivity_run(&c, prof, 0.01, 0, &pa, sa, &na, &e), XS_OK);
  xs__set_reference(1);
  st = xs_moe_sensitivity_run(&c, prof, 0.01, 0, &pb, sb, &nb, &e);
  xs__set_reference(0);
  assert_int_equal(st, XS_OK);
  same_pick(&pa, &pb, "sensitivity base");
  assert_int_equal(na, nb);
  for (size_t i = 0; i < na; i++) {
    assert_string_equal(sa[i].param, sb[i].param);
    for (int f = 0; f < XS_MOE_SENS_FACTORS; f++) {
      same_change(sa[i].time_change[f], sb[i].time_change[f], "time change", sa[i].param);
      same_change(sa[i].replan_change[f], sb[i].replan_change[f], "replan", sa[i].param);
      assert_int_equal(sa[i].changed[f], sb[i].changed[f]);
      if (!isnan(sa[i].time_change[f]))
        same_option(&sa[i].choice[f], &sb[i].choice[f], sa[i].param);
    }
  }
  xs_profile_free(prof);
}

/* A planner evaluates a rule whose build writes back the knobs another
 * rule's did once (plan.c's aliases): that holds where a kernel builds
 * from the knobs it writes back. Each schedule's default program against
 * the one its written-back knobs build, as JSON, and every option's time
 * against its knobs' built anew, bit for bit; presets, token counts,
 * uneven loads, two GPUs. */
static void test_knobs_make_the_program(void **state) {
  (void)state;
  static const char *const profs[] = {"h200-nvlink", "b200-nvlink"};
  static const double tokens[] = {1, 128, 1500};
  size_t checked = 0;
  for (int g = 0; g < 2; g++) {
    xs_profile *prof = xs_test_profile(profs[g]);
    for (size_t i = 0; i < xs_moe_preset_count(); i++)
      for (int t = 0; t < 3; t++) {
        xs_moe_config c;
        xs_moe_preset(xs_moe_preset_name(i), &c);
        c.tokens = tokens[t];
        c.imbalance = (i + (size_t)t) % 3 == 0 ? 1.3 : 1;
        char where[128];
        snprintf(where, sizeof where, "%s %s T=%g imbalance %g", profs[g], c.name,
                 c.tokens, c.imbalance);
        xs_error e;
        for (int s = 0; s < XS_MOE_SCHEDULES; s++) {
          xs_moe_pattern used = {0};
          xs_program *a = NULL, *b = NULL;
          if (xs_moe_evaluate(&c, prof, (xs_moe_schedule)s, &used, NULL, NULL, &e))
            continue; /* a schedule this shape cannot run */
          assert_int_equal(xs_moe_program(&c, prof, (xs_moe_schedule)s, NULL, &a, &e), XS_OK);
          assert_int_equal(xs_moe_program(&c, prof, (xs_moe_schedule)s, &used, &b, &e), XS_OK);
          char *ja = xs_program_to_json(a), *jb = xs_program_to_json(b);
          if (strcmp(ja, jb) != 0)
            fail_msg("%s %s: the default's program differs from its knobs' (lag %u "
                     "group %u experts/wave %u warmup %u block %ux%u)",
                     where, xs_moe_schedule_name((xs_moe_schedule)s), used.lag,
                     used.group, used.experts_per_wave, used.warmup, used.block_m,
                     used.block_n);
          free(ja);
          free(jb);
          xs_program_free(a);
          xs_program_free(b);
          checked++;
        }
        xs_moe_option o[XS_MOE_MAX_OPTIONS];
        size_t no;
        assert_int_equal(xs_moe_options(&c, prof, 0, o, &no, NULL, &e), XS_OK);
        for (size_t k = 0; k < no; k++) {
          double ts[XS_MODEL_COUNT];
          xs_moe_pattern kn = o[k].knobs;
          assert_int_equal(xs_moe_evaluate(&c, prof, o[k].schedule, &kn, ts, NULL, &e),
                           XS_OK);
          if (ts[XS_MODEL_BURSTGAP] != o[k].time_s)
            fail_msg("%s %s rule %s: %.17g s as an option, %.17g s from its knobs", where,
                     xs_moe_schedule_name(o[k].schedule),
                     xs_moe_rule_name(o[k].schedule, o[k].rule), o[k].time_s,
                     ts[XS_MODEL_BURSTGAP]);
          checked++;
        }
      }
    xs_profile_free(prof);
  }
  assert_true(checked > 500);
}

/* validate megamoe, ep and flashattn over the published rows */
static void test_validate_matches_reference(void **state) {
  (void)state;
  static const char *const files[] = {"megamoe.csv", "ep.csv", "ring-attention.csv"};
  for (int k = 0; k < 3; k++) {
    char path[512];
    snprintf(path, sizeof path, "%s/data/published/%s", XSTAGE_SRC, files[k]);
    FILE *f = fopen(path, "rb");
    assert_non_null(f);
    static char text[1 << 20];
    size_t len = fread(text, 1, sizeof text - 1, f);
    fclose(f);
    xs_validate_set a, b;
    xs_error e;
    xs_status (*v)(const char *, size_t, const char *, xs_validate_set *,
                   void (*)(size_t, void *), void *, xs_error *) =
        k == 0 ? xs_validate_megamoe : k == 1 ? xs_validate_ep : xs_validate_flashattn;
    assert_int_equal(v(text, len, files[k], &a, NULL, NULL, &e), XS_OK);
    xs__set_reference(1);
    xs_status st = v(text, len, files[k], &b, NULL, NULL, &e);
    xs__set_reference(0);
    assert_int_equal(st, XS_OK);
    assert_int_equal(a.nrows, b.nrows);
    for (size_t i = 0; i < a.nrows; i++) {
      char where[160];
      snprintf(where, sizeof where, "%s line %zu", files[k], a.rows[i].line);
      same_time(a.rows[i].predicted_us, b.rows[i].predicted_us, "predicted", where);
      for (int m = 0; m < XS_MODEL_COUNT; m++)
        same_time(a.rows[i].model_us[m], b.rows[i].model_us[m], "model", where);
      if (!(isnan(a.rows[i].alt_us) && isnan(b.rows[i].alt_us)))
        same_time(a.rows[i].alt_us, b.rows[i].alt_us, "other bound", where);
    }
    xs_validate_free(&a);
    xs_validate_free(&b);
  }
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_random_programs),
      cmocka_unit_test(test_moe_programs),
      cmocka_unit_test(test_plans_match_reference),
      cmocka_unit_test(test_tables_match_reference),
      cmocka_unit_test(test_validate_matches_reference),
      cmocka_unit_test(test_knobs_make_the_program),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
