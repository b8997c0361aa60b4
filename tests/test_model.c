/*
 * test_model.c: the Burst-Gap model checked against second ways of computing
 * it: hand-worked cases, the one-worker closed forms against the
 * event-driven evaluation, the event-driven evaluation against a naive one,
 * symmetry (n identical workers = one worker n times as wide), and the
 * invariants of docs/model.md; the evaluations' queue of next events
 * against a scan. Fixed seeds; failures print seed and values.
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
#include "model/iheap.h"
#include "naive_fluid.h"
#include "testutil.h"
#include "xstage.h"

#define REL 1e-9

static void check_close(double a, double b, double scale, const char *what,
                        uint64_t seed) {
  check_close_rel(a, b, REL, scale, what, seed);
}

/* ---- hand-worked cases (docs/model.md "One worker") ---- */

static void test_hand_below_knee(void **state) {
  (void)state;
  /* the numbers of the Burst-Gap model's worked example: R_inj 1.2e12,
   * R_drain 3.7e11, C 4 MiB, L 2 us */
  xs_profile *prof = one_channel(1.2e12, 1.2e12, 3.7e11, 4194304, 2e-6, 0);
  xs_error e;
  xs_program *p;
  const char *text =
      "{\"name\":\"two bursts\",\"workers\":[{\"name\":\"sm0\",\"ops\":["
      "{\"send\":4000000,\"channel\":\"link\",\"id\":\"a\"},"
      "{\"compute\":1e-3},{\"send\":1000000,\"id\":\"b\"},"
      "{\"wait\":\"b\"},{\"fence\":true}]}]}";
  assert_int_equal(xs_program_parse(text, strlen(text), "t", &p, &e), XS_OK);
  for (int ed = 0; ed < 2; ed++) {
    xs_result *r = eval(p, prof, XS_MODEL_BURSTGAP, ed);
    /* send a: 4e6 B < b_f = C R_inj/(R_inj - R_drain) = 6.064e6 B */
    double ia = 4e6 / 1.2e12, qa = (1.2e12 - 3.7e11) * ia;
    check_close(r->sends[0].issue_end_s, ia, 1e-6, "issue a", 0);
    check_close(r->sends[0].deliver_s, ia + qa / 3.7e11 + 2e-6, 1e-6,
                "deliver a", 0);
    check_close(r->sends[0].stall_s, 0, 1e-6, "stall a", 0);
    /* send b after 1 ms: backlog long drained */
    double sb = ia + 1e-3, ib = 1e6 / 1.2e12, qb = (1.2e12 - 3.7e11) * ib;
    check_close(r->sends[1].issue_start_s, sb, 1e-3, "start b", 0);
    check_close(r->sends[1].deliver_s, sb + ib + qb / 3.7e11 + 2e-6, 1e-3,
                "deliver b", 0);
    check_close(r->makespan_s, sb + ib + qb / 3.7e11 + 2e-6, 1e-3,
                "makespan", 0);
    check_close(r->channels[0].peak_backlog_B, qa, 1e6, "peak", 0);
    xs_result_free(r);
  }
  xs_program_free(p);
  xs_profile_free(prof);
}

static void test_hand_above_knee(void **state) {
  (void)state;
  double inj = 1.2e12, rd = 3.7e11, C = 4194304, L = 2e-6, B = 1e7;
  xs_profile *prof = one_channel(inj, inj, rd, C, L, 0);
  xs_program *p = xs_program_new("big");
  xs_error e;
  size_t w;
  assert_int_equal(xs_program_add_worker(p, "w", &w, &e), XS_OK);
  assert_int_equal(xs_program_send(p, w, B, NULL, NULL, NULL, &e), XS_OK);
  assert_int_equal(xs_program_finish(p, &e), XS_OK);
  double tf = C / (inj - rd), bf = inj * tf;
  double issue = tf + (B - bf) / rd;
  for (int ed = 0; ed < 2; ed++) {
    xs_result *r = eval(p, prof, XS_MODEL_BURSTGAP, ed);
    check_close(r->sends[0].issue_end_s, issue, 1e-5, "issue", 0);
    check_close(r->sends[0].deliver_s, issue + C / rd + L, 1e-5, "deliver", 0);
    check_close(r->sends[0].stall_s, issue - B / inj, 1e-5, "stall", 0);
    check_close(r->channels[0].peak_backlog_B, C, C, "peak", 0);
    check_close(r->issue_done_s, issue, 1e-5, "issue_done", 0);
    xs_result_free(r);
    /* blocking: o + B/min(R_inj, r_w, R_drain) + L */
    r = eval(p, prof, XS_MODEL_BLOCKING, ed);
    check_close(r->makespan_s, B / rd + L, 1e-5, "blocking", 0);
    xs_result_free(r);
  }
  xs_result *r = eval(p, prof, XS_MODEL_SERIAL, 0);
  check_close(r->makespan_s, B / rd + L, 1e-5, "serial", 0);
  xs_result_free(r);
  xs_program_free(p);
  xs_profile_free(prof);
}

/* Two workers start equal sends together: they share R_inj, fill C
 * together, then share R_drain; both finish at the same instant. */
static void test_hand_two_workers(void **state) {
  (void)state;
  double inj = 4e9, rd = 1e9, C = 1e6, B = 2e6;
  xs_profile *prof = one_channel(inj, 3e9, rd, C, 1e-6, 0);
  xs_program *p = xs_program_new("pair");
  xs_error e;
  for (int i = 0; i < 2; i++) {
    char n[16];
    snprintf(n, sizeof n, "w%d", i);
    assert_int_equal(xs_program_add_worker(p, n, NULL, &e), XS_OK);
    assert_int_equal(xs_program_compute(p, (size_t)i, 1e-3, &e), XS_OK);
    assert_int_equal(xs_program_send(p, (size_t)i, B, NULL, NULL, NULL, &e),
                     XS_OK);
  }
  assert_int_equal(xs_program_finish(p, &e), XS_OK);
  /* x = min(3e9, 4e9/2) = 2e9 each, 4e9 in, fill at 3e9/s: 1e6 B in 1/3 ms,
   * by then each sent 2e9/3e3 = 6.67e5 B; the rest 1.33e6 B at 0.5e9 each */
  double tf = C / (4e9 - rd), each = 2e9 * tf;
  double issue = tf + (B - each) / (rd / 2);
  xs_result *r = eval(p, prof, XS_MODEL_BURSTGAP, 1);
  check_close(r->sends[0].issue_end_s, 1e-3 + issue, 1e-3, "issue w0", 0);
  check_close(r->sends[1].issue_end_s, 1e-3 + issue, 1e-3, "issue w1", 0);
  check_close(r->sends[1].deliver_s, 1e-3 + issue + C / rd + 1e-6, 1e-3,
              "deliver", 0);
  /* stall: issue time minus B at the unthrottled rate 2e9 */
  check_close(r->sends[0].stall_s, issue - B / 2e9, 1e-3, "stall", 0);
  xs_result_free(r);
  r = eval(p, prof, XS_MODEL_IDEAL, 0);
  check_close(r->makespan_s, fmax(1e-3, 2 * B / rd + 1e-6), 1e-3, "ideal", 0);
  xs_result_free(r);
  r = eval(p, prof, XS_MODEL_SERIAL, 0);
  check_close(r->makespan_s, 1e-3 + 2 * B / rd + 1e-6, 1e-3, "serial", 0);
  xs_result_free(r);
  xs_program_free(p);
  xs_profile_free(prof);
}

/* Injection slower than drain: the bytes cannot leave faster than R_inj,
 * so serial and ideal take bytes/min(R_inj, R_drain), and ideal stays
 * below burstgap, with one worker (the closed forms) and two. */
static void test_baselines_slow_injection(void **state) {
  (void)state;
  double inj = 1e6, rd = 1e9, L = 1e-6, B = 1e6;
  xs_profile *prof = one_channel(inj, inj, rd, 1e6, L, 0);
  for (int nw = 1; nw <= 2; nw++) {
    xs_program *p = xs_program_new("slow injection");
    xs_error e;
    for (int i = 0; i < nw; i++) {
      char n[16];
      snprintf(n, sizeof n, "w%d", i);
      assert_int_equal(xs_program_add_worker(p, n, NULL, &e), XS_OK);
      assert_int_equal(xs_program_compute(p, (size_t)i, 1e-3, &e), XS_OK);
      assert_int_equal(xs_program_send(p, (size_t)i, B / nw, NULL, NULL, NULL, &e), XS_OK);
    }
    assert_int_equal(xs_program_finish(p, &e), XS_OK);
    xs_result *r = eval(p, prof, XS_MODEL_SERIAL, 0);
    check_close(r->makespan_s, 1e-3 + B / inj + L, 1, "serial", 0);
    xs_result_free(r);
    r = eval(p, prof, XS_MODEL_IDEAL, 0);
    check_close(r->makespan_s, B / inj + L, 1, "ideal", 0);
    double ideal = r->makespan_s;
    xs_result_free(r);
    for (int ed = 0; ed < 2; ed++) {
      r = eval(p, prof, XS_MODEL_BURSTGAP, ed);
      assert_true(ideal <= r->makespan_s * (1 + REL));
      check_close(r->comm_term_s, B / inj + L, 1, "comm term", 0);
      xs_result_free(r);
    }
    xs_program_free(p);
  }
  xs_profile_free(prof);
}

/* Finite numbers whose sums overflow: refused by every model, naming the
 * program, rather than evaluated into infinities and NaNs. */
static void test_overflow_refused(void **state) {
  (void)state;
  xs_profile *prof = one_channel(1e12, 1e12, 1e11, 1e6, 1e-6, 0);
  for (int k = 0; k < 3; k++) {
    xs_program *p = xs_program_new("huge");
    xs_error e;
    int nw = k == 2 ? 2 : 1;
    for (int i = 0; i < nw; i++) {
      char n[16];
      snprintf(n, sizeof n, "w%d", i);
      assert_int_equal(xs_program_add_worker(p, n, NULL, &e), XS_OK);
      for (int j = 0; j < 2; j++) {
        if (k == 1)
          assert_int_equal(xs_program_send(p, (size_t)i, 1e308, NULL, NULL, NULL, &e), XS_OK);
        else
          assert_int_equal(xs_program_compute(p, (size_t)i, 1.7e308, &e), XS_OK);
      }
    }
    assert_int_equal(xs_program_finish(p, &e), XS_OK);
    for (int m = 0; m < XS_MODEL_COUNT; m++)
      for (int ed = 0; ed < 2; ed++) {
        xs_result *r = NULL;
        xs_eval_options o = {ed, 0, NULL, NULL};
        assert_int_equal(xs_evaluate(p, prof, (xs_model)m, &o, &r, &e), XS_INVALID);
        assert_null(r);
        assert_non_null(strstr(e.message, "program \"huge\" is too large"));
      }
    xs_program_free(p);
  }
  /* large but not overflowing: evaluated, finite */
  xs_program *p = xs_program_new("large");
  xs_error e;
  assert_int_equal(xs_program_add_worker(p, "w", NULL, &e), XS_OK);
  assert_int_equal(xs_program_compute(p, 0, 1e300, &e), XS_OK);
  assert_int_equal(xs_program_send(p, 0, 1e300, NULL, NULL, NULL, &e), XS_OK);
  assert_int_equal(xs_program_finish(p, &e), XS_OK);
  xs_result *r = eval(p, prof, XS_MODEL_BURSTGAP, 1);
  assert_true(isfinite(r->makespan_s) && r->makespan_s >= 1e300);
  xs_result_free(r);
  xs_program_free(p);
  xs_profile_free(prof);
}

/* A result handed back through reuse is consumed when the evaluation
 * fails, however early: LeakSanitizer (build-asan) finds one that is not. */
static void test_reuse_consumed_on_failure(void **state) {
  (void)state;
  xs_profile *prof = one_channel(1e12, 1e12, 1e11, 1e6, 1e-6, 0);
  xs_profile *empty = xs_profile_new("empty", "no channels");
  xs_program *p = xs_program_new("p"), *open = xs_program_new("unfinished");
  xs_error e;
  assert_int_equal(xs_program_add_worker(p, "w", NULL, &e), XS_OK);
  assert_int_equal(xs_program_send(p, 0, 4096, NULL, NULL, NULL, &e), XS_OK);
  assert_int_equal(xs_program_finish(p, &e), XS_OK);
  assert_int_equal(xs_program_add_worker(open, "w", NULL, &e), XS_OK);
  assert_int_equal(xs_program_send(open, 0, 4096, "nowhere", NULL, NULL, &e), XS_OK);
  for (int k = 0; k < 4; k++) {
    xs_eval_options o = {0, 0, NULL, NULL};
    assert_int_equal(xs_evaluate(p, prof, XS_MODEL_BURSTGAP, NULL, &o.reuse, &e), XS_OK);
    xs_result *r = (xs_result *)1;
    xs_status st = k == 0   ? xs_evaluate(p, prof, (xs_model)99, &o, &r, &e)
                   : k == 1 ? xs_evaluate(open, prof, XS_MODEL_BURSTGAP, &o, &r, &e)
                   : k == 2 ? xs_evaluate(p, empty, XS_MODEL_IDEAL, &o, &r, &e)
                            : (xs_program_finish(open, &e),
                               xs_evaluate(open, prof, XS_MODEL_BURSTGAP, &o, &r, &e));
    assert_int_equal(st, XS_INVALID);
    assert_null(r);
  }
  xs_program_free(p);
  xs_program_free(open);
  xs_profile_free(prof);
  xs_profile_free(empty);
}

/* ---- random programs ---- */

static xs_profile *random_profile(rng *g, int nch, int blocking_limit) {
  xs_profile *p = xs_profile_new("random", "test");
  for (int c = 0; c < nch; c++) {
    xs_channel ch;
    double rd = rng_range(g, 1e9, 1e10);
    double inj = rng_int(g, 4) == 0 ? rd * rng_range(g, 0.3, 1.0)
                                    : rd * rng_range(g, 1.0, 6.0);
    xs_channel_init(&ch, inj, rd);
    ch.worker_inject_Bps = rng_int(g, 2) ? inj : inj * rng_range(g, 0.2, 1.0);
    int k = rng_int(g, 5);
    ch.capacity_B = k == 0 ? 0 : k == 1 ? INFINITY : rng_range(g, 1e3, 2e6);
    ch.latency_s = rng_int(g, 3) ? rng_range(g, 0, 5e-6) : 0;
    ch.issue_overhead_s = rng_int(g, 3) == 0 ? rng_range(g, 0, 1e-6) : 0;
    if (blocking_limit) {
      ch.inject_Bps = ch.worker_inject_Bps = rd * (1 + 1e-12);
      ch.capacity_B = rng_int(g, 2) ? 0 : 1e-6;
      ch.latency_s = 0;
    }
    char name[16];
    snprintf(name, sizeof name, "c%d", c);
    xs_error e;
    assert_int_equal(xs_profile_add_channel(p, name, &ch, &e), XS_OK);
  }
  return p;
}

/* flags: 1 waits, 2 fences */
static xs_program *random_program(rng *g, int nworkers, int nch, int flags) {
  xs_program *p = xs_program_new("random");
  xs_error e;
  size_t *sends_of = calloc(64 * 16, sizeof *sends_of);
  int *nsends_of = calloc(64, sizeof *nsends_of);
  for (int w = 0; w < nworkers; w++) {
    char name[16];
    snprintf(name, sizeof name, "w%d", w);
    assert_int_equal(xs_program_add_worker(p, name, NULL, &e), XS_OK);
    int nops = 1 + rng_int(g, 10);
    for (int i = 0; i < nops; i++) {
      int k = rng_int(g, 10);
      if (k < 4) {
        assert_int_equal(
            xs_program_compute(p, (size_t)w, rng_int(g, 6) ? rng_range(g, 0, 5e-4) : 0, &e),
            XS_OK);
      } else if (k < 8 || !(flags & 3)) {
        char ch[16];
        snprintf(ch, sizeof ch, "c%d", rng_int(g, nch));
        double b = rng_int(g, 8) ? rng_range(g, 1e3, 4e6) : 0;
        size_t s;
        assert_int_equal(xs_program_send(p, (size_t)w, b, ch, NULL, &s, &e),
                         XS_OK);
        if (nsends_of[w] < 16)
          sends_of[w * 16 + nsends_of[w]++] = s;
      } else if (k < 9 && (flags & 1)) {
        /* wait on a send of this or an earlier worker: never a cycle */
        int t = rng_int(g, w + 1);
        if (nsends_of[t] > 0) {
          size_t s = sends_of[t * 16 + rng_int(g, nsends_of[t])];
          assert_int_equal(xs_program_wait_send(p, (size_t)w, s, &e), XS_OK);
        }
      } else if (flags & 2) {
        assert_int_equal(xs_program_fence(p, (size_t)w, &e), XS_OK);
      }
    }
    if (xs_program_op_count(p, (size_t)w) == 0)
      assert_int_equal(xs_program_send(p, (size_t)w, 1e4, "c0", NULL, NULL, &e),
                       XS_OK);
  }
  free(sends_of);
  free(nsends_of);
  xs_status st = xs_program_finish(p, &e);
  if (st)
    fprintf(stderr, "finish: %s\n", e.message);
  assert_int_equal(st, XS_OK);
  return p;
}

static void test_closed_vs_event(void **state) {
  (void)state;
  for (uint64_t seed = 1; seed <= 600; seed++) {
    rng g = {seed};
    int nch = 1 + rng_int(&g, 2);
    xs_profile *prof = random_profile(&g, nch, 0);
    xs_program *p = random_program(&g, 1, nch, 3);
    for (int m = 0; m < 2; m++) {
      xs_result *a = eval(p, prof, (xs_model)m, 0);
      xs_result *b = eval(p, prof, (xs_model)m, 1);
      assert_true(a->fast_path && !b->fast_path);
      double sc = a->makespan_s;
      check_close(a->makespan_s, b->makespan_s, sc, "makespan", seed);
      check_close(a->issue_done_s, b->issue_done_s, sc, "issue_done", seed);
      check_close(a->workers[0].stall_s, b->workers[0].stall_s, sc, "stall",
                  seed);
      for (size_t s = 0; s < a->nsends; s++) {
        check_close(a->sends[s].issue_end_s, b->sends[s].issue_end_s, sc,
                    "issue_end", seed);
        check_close(a->sends[s].deliver_s, b->sends[s].deliver_s, sc,
                    "deliver", seed);
        check_close(a->sends[s].stall_s, b->sends[s].stall_s, sc, "send stall",
                    seed);
      }
      for (size_t c = 0; c < a->nchannels; c++)
        check_close(a->channels[c].peak_backlog_B,
                    b->channels[c].peak_backlog_B,
                    fmax(1, a->channels[c].peak_backlog_B), "peak", seed);
      xs_result_free(a);
      xs_result_free(b);
    }
    xs_program_free(p);
    xs_profile_free(prof);
  }
}

/* seeds [from, to), workers 1 + [lo, hi) */
static void event_vs_naive(uint64_t from, uint64_t to, int lo, int hi) {
  for (uint64_t seed = from; seed < to; seed++) {
    rng g = {seed};
    int nch = 1 + rng_int(&g, 2);
    int nw = 1 + lo + rng_int(&g, hi - lo);
    xs_profile *prof = random_profile(&g, nch, 0);
    xs_program *p = random_program(&g, nw, nch, 3);
    size_t ns = xs_program_send_count(p);
    double *del = malloc((ns + 1) * sizeof *del);
    double *fin = malloc((size_t)nw * sizeof *fin);
    for (int m = 0; m < 2; m++) {
      xs_result *a = eval(p, prof, (xs_model)m, 1);
      double mk;
      assert_int_equal(naive_eval(p, prof, m == 1, &mk, del, fin), 0);
      double sc = a->makespan_s;
      check_close(a->makespan_s, mk, sc, "makespan vs naive", seed);
      for (size_t s = 0; s < ns; s++)
        check_close(a->sends[s].deliver_s, del[s], sc, "deliver vs naive",
                    seed);
      for (int w = 0; w < nw; w++)
        check_close(a->workers[w].finish_s, fin[w], sc, "finish vs naive",
                    seed);
      xs_result_free(a);
    }
    free(del);
    free(fin);
    xs_program_free(p);
    xs_profile_free(prof);
  }
}

static void test_event_vs_naive(void **state) {
  (void)state;
  event_vs_naive(1000, 1300, 0, 6);
}

/* enough workers that the 4-ary heaps of workers and of one channel's
 * senders are several levels deep */
static void test_event_vs_naive_many(void **state) {
  (void)state;
  event_vs_naive(3000, 3040, 16, 64);
}

/* n identical workers on one channel = one worker with n times the bytes and
 * n times the per-worker rate (the closed forms) */
static void test_symmetry(void **state) {
  (void)state;
  for (uint64_t seed = 2000; seed < 2200; seed++) {
    rng g = {seed};
    int n = 2 + rng_int(&g, 30);
    xs_profile *prof = random_profile(&g, 1, 0);
    const xs_channel *ch = xs_profile_channel(prof, 0);
    xs_channel wide = *ch;
    wide.worker_inject_Bps = ch->worker_inject_Bps * n;
    wide.issue_overhead_s = 0;
    xs_channel narrow = *ch;
    narrow.issue_overhead_s = 0;
    xs_profile *pn = xs_profile_new("n", "t"), *p1 = xs_profile_new("1", "t");
    xs_error e;
    assert_int_equal(xs_profile_add_channel(pn, "c0", &narrow, &e), XS_OK);
    assert_int_equal(xs_profile_add_channel(p1, "c0", &wide, &e), XS_OK);
    xs_program *many = xs_program_new("many"), *one = xs_program_new("one");
    int nops = 1 + rng_int(&g, 8);
    double ops[8];
    int kind[8];
    for (int i = 0; i < nops; i++) {
      kind[i] = rng_int(&g, 2);
      ops[i] = kind[i] ? rng_range(&g, 0, 1e6) : rng_range(&g, 0, 1e-3);
    }
    for (int w = 0; w <= n; w++) {
      xs_program *t = w < n ? many : one;
      char name[16];
      snprintf(name, sizeof name, "w%d", w);
      size_t idx;
      assert_int_equal(xs_program_add_worker(t, name, &idx, &e), XS_OK);
      for (int i = 0; i < nops; i++) {
        if (kind[i])
          assert_int_equal(xs_program_send(t, idx, w < n ? ops[i] : ops[i] * n,
                                           NULL, NULL, NULL, &e),
                           XS_OK);
        else
          assert_int_equal(xs_program_compute(t, idx, ops[i], &e), XS_OK);
      }
    }
    assert_int_equal(xs_program_finish(many, &e), XS_OK);
    assert_int_equal(xs_program_finish(one, &e), XS_OK);
    xs_result *a = eval(many, pn, XS_MODEL_BURSTGAP, 0);
    xs_result *b = eval(one, p1, XS_MODEL_BURSTGAP, 0);
    assert_true(b->fast_path);
    check_close(a->makespan_s, b->makespan_s, b->makespan_s, "symmetric makespan", seed);
    size_t k = 0;
    for (int i = 0; i < nops; i++) {
      if (!kind[i])
        continue;
      for (int w = 0; w < n; w++)
        check_close(a->sends[(size_t)w * (a->nsends / (size_t)n) + k].deliver_s,
                    b->sends[k].deliver_s, b->makespan_s, "symmetric deliver",
                    seed);
      k++;
    }
    xs_result_free(a);
    xs_result_free(b);
    xs_program_free(many);
    xs_program_free(one);
    xs_profile_free(pn);
    xs_profile_free(p1);
    xs_profile_free(prof);
  }
}

static double makespan(const xs_program *p, const xs_profile *prof,
                       xs_model m) {
  xs_result *r = eval(p, prof, m, 0);
  double v = r->makespan_s;
  xs_result_free(r);
  return v;
}

static void test_invariants(void **state) {
  (void)state;
  for (uint64_t seed = 3000; seed < 3400; seed++) {
    rng g = {seed};
    int nch = 1 + rng_int(&g, 2);
    int nw = rng_int(&g, 2) ? 1 : 1 + rng_int(&g, 5);
    int flags = nw == 1 ? 3 : rng_int(&g, 2) ? 3 : 0;
    xs_profile *prof = random_profile(&g, nch, 0);
    xs_program *p = random_program(&g, nw, nch, flags);
    double bg = makespan(p, prof, XS_MODEL_BURSTGAP);
    double bl = makespan(p, prof, XS_MODEL_BLOCKING);
    double id = makespan(p, prof, XS_MODEL_IDEAL);
    double se = makespan(p, prof, XS_MODEL_SERIAL);
    if (!(id <= bg * (1 + REL))) {
      fprintf(stderr, "seed %llu: ideal %.17g > burstgap %.17g\n",
              (unsigned long long)seed, id, bg);
      fail();
    }
    assert_true(id <= se * (1 + REL));
    if ((nw == 1 || flags == 0) && !(bg <= bl * (1 + REL))) {
      fprintf(stderr, "seed %llu: burstgap %.17g > blocking %.17g\n",
              (unsigned long long)seed, bg, bl);
      fail();
    }
    /* monotone in capacity: more room never makes one worker slower */
    if (nw == 1) {
      double prev = INFINITY;
      double caps[] = {0, 1e3, 1e4, 1e5, 1e6, 1e7, INFINITY};
      for (int k = 0; k < 7; k++) {
        xs_profile *q = xs_profile_new("cap", "t");
        for (size_t c = 0; c < xs_profile_channel_count(prof); c++) {
          xs_channel ch = *xs_profile_channel(prof, c);
          ch.capacity_B = caps[k];
          xs_error e;
          assert_int_equal(
              xs_profile_add_channel(q, xs_profile_channel_name(prof, c), &ch, &e),
              XS_OK);
        }
        double v = makespan(p, q, XS_MODEL_BURSTGAP);
        if (!(v <= prev * (1 + REL))) {
          fprintf(stderr, "seed %llu: capacity %g gives %.17g > %.17g\n",
                  (unsigned long long)seed, caps[k], v, prev);
          fail();
        }
        prev = v;
        xs_profile_free(q);
      }
    }
    xs_program_free(p);
    xs_profile_free(prof);
  }
}

/* C -> 0 with L = 0 and R_inj -> R_drain: burstgap -> blocking. C = 1e30
 * matches unbounded. */
static void test_limits(void **state) {
  (void)state;
  for (uint64_t seed = 4000; seed < 4200; seed++) {
    rng g = {seed};
    int nch = 1 + rng_int(&g, 2);
    int nw = 1 + rng_int(&g, 4);
    xs_profile *prof = random_profile(&g, nch, 1);
    xs_program *p = random_program(&g, nw, nch, nw == 1 ? 3 : 0);
    double bg = makespan(p, prof, XS_MODEL_BURSTGAP);
    double bl = makespan(p, prof, XS_MODEL_BLOCKING);
    check_close(bg, bl, bl, "C->0 limit", seed);
    xs_program_free(p);
    xs_profile_free(prof);

    rng h = {seed};
    prof = random_profile(&h, 1, 0);
    xs_channel ch = *xs_profile_channel(prof, 0);
    xs_profile *inf = xs_profile_new("i", "t"), *big = xs_profile_new("b", "t");
    xs_error e;
    ch.capacity_B = INFINITY;
    assert_int_equal(xs_profile_add_channel(inf, "c0", &ch, &e), XS_OK);
    ch.capacity_B = 1e30;
    assert_int_equal(xs_profile_add_channel(big, "c0", &ch, &e), XS_OK);
    p = random_program(&h, 1 + rng_int(&h, 3), 1, 3);
    double a = makespan(p, inf, XS_MODEL_BURSTGAP);
    double b = makespan(p, big, XS_MODEL_BURSTGAP);
    check_close(a, b, a, "C->inf limit", seed);
    xs_program_free(p);
    xs_profile_free(inf);
    xs_profile_free(big);
    xs_profile_free(prof);
  }
}

/* Head-of-line blocking is real: a small send queued behind another
 * worker's backlog makes its waiter later than under blocking. */
static void test_head_of_line(void **state) {
  (void)state;
  xs_profile *prof = one_channel(1e10, 1e10, 1e9, 1e7, 0, 0);
  xs_program *p = xs_program_new("hol");
  xs_error e;
  assert_int_equal(xs_program_add_worker(p, "big", NULL, &e), XS_OK);
  assert_int_equal(xs_program_add_worker(p, "small", NULL, &e), XS_OK);
  assert_int_equal(xs_program_send(p, 0, 5e6, NULL, NULL, NULL, &e), XS_OK);
  assert_int_equal(xs_program_compute(p, 1, 1e-3, &e), XS_OK);
  assert_int_equal(xs_program_send(p, 1, 1e3, NULL, "s", NULL, &e), XS_OK);
  assert_int_equal(xs_program_wait(p, 1, "s", &e), XS_OK);
  assert_int_equal(xs_program_finish(p, &e), XS_OK);
  xs_result *bg = eval(p, prof, XS_MODEL_BURSTGAP, 0);
  xs_result *bl = eval(p, prof, XS_MODEL_BLOCKING, 0);
  /* burstgap: big is issued by 0.5 ms, 4.5e6 B in flight; at 1 ms 4e6 B
   * remain ahead of the small send */
  check_close(bg->workers[1].finish_s, 1e-3 + 1e3 / 1e10 + (4e6 + 1e3 * 0.9) / 1e9,
              1e-3, "hol finish", 0);
  assert_true(bg->workers[1].finish_s > bl->workers[1].finish_s);
  xs_result_free(bg);
  xs_result_free(bl);
  xs_program_free(p);
  xs_profile_free(prof);
}

static void test_summary_only(void **state) {
  (void)state;
  rng g = {77};
  xs_profile *prof = random_profile(&g, 2, 0);
  for (int nw = 1; nw <= 3; nw++) {
    xs_program *p = random_program(&g, nw, 2, 3);
    xs_result *a, *b;
    xs_error e;
    xs_eval_options o = {0, 1, NULL, NULL};
    assert_int_equal(xs_evaluate(p, prof, XS_MODEL_BURSTGAP, &o, &a, &e), XS_OK);
    assert_null(a->sends);
    b = eval(p, prof, XS_MODEL_BURSTGAP, 0);
    assert_true(a->makespan_s == b->makespan_s);
    xs_result_free(a);
    xs_result_free(b);
    xs_program_free(p);
  }
  xs_profile_free(prof);
}

/* Ops added after xs_program_finish (which moves every worker's ops into
 * one block) land where they belong: finished twice with more ops in
 * between, a program evaluates exactly like one built in one go. */
static void add_ops(xs_program *p, size_t w, int k) {
  xs_error e;
  assert_int_equal(xs_program_compute(p, w, 1e-6 * (double)(k + 1), &e), XS_OK);
  assert_int_equal(xs_program_send(p, w, 65536.0 * (double)(k + 1), NULL, NULL, NULL, &e), XS_OK);
}

static void test_ops_after_finish(void **state) {
  (void)state;
  rng g = {91};
  xs_profile *prof = random_profile(&g, 1, 0);
  xs_program *a = xs_program_new("a"), *b = xs_program_new("b");
  xs_error e;
  for (int w = 0; w < 3; w++) {
    char name[8];
    snprintf(name, sizeof name, "w%d", w);
    assert_int_equal(xs_program_add_worker(a, name, NULL, &e), XS_OK);
    assert_int_equal(xs_program_add_worker(b, name, NULL, &e), XS_OK);
  }
  /* a: w0 and w1 get ops, finish; then w2 (none yet), w1, w0; finish;
   * then w1 again; b: the same ops worker by worker */
  add_ops(a, 0, 0);
  add_ops(a, 1, 1);
  assert_int_equal(xs_program_finish(a, &e), XS_OK);
  xs_result *r = eval(a, prof, XS_MODEL_BURSTGAP, 1);
  xs_result_free(r);
  add_ops(a, 2, 2);
  add_ops(a, 1, 3);
  add_ops(a, 0, 4);
  assert_int_equal(xs_program_finish(a, &e), XS_OK);
  add_ops(a, 1, 5);
  assert_int_equal(xs_program_finish(a, &e), XS_OK);
  add_ops(b, 0, 0);
  add_ops(b, 0, 4);
  add_ops(b, 1, 1);
  add_ops(b, 1, 3);
  add_ops(b, 1, 5);
  add_ops(b, 2, 2);
  assert_int_equal(xs_program_finish(b, &e), XS_OK);
  assert_int_equal(xs_program_op_count(a, 1), 6);
  xs_result *ra = eval(a, prof, XS_MODEL_BURSTGAP, 1), *rb = eval(b, prof, XS_MODEL_BURSTGAP, 1);
  assert_true(ra->makespan_s == rb->makespan_s);
  for (size_t w = 0; w < 3; w++)
    assert_true(ra->workers[w].finish_s == rb->workers[w].finish_s);
  xs_result_free(ra);
  xs_result_free(rb);
  xs_program_free(a);
  xs_program_free(b);
  xs_profile_free(prof);
}

/* A send's finish does not depend on the bytes the channel served before
 * it: after a send of 1e18 bytes, a 100 kB send and a 1 kB send start
 * together on an empty channel, and the 100 kB send takes as long as it
 * does on a fresh channel (about 1e5 / R_drain), not as long as the 1 kB
 * one. By hand (R_inj 4e12, R_drain 1e12, C 1e4): both at 2e12 until the
 * 1 kB send is in (5e-10 s, backlog 1.5e3 B); the 100 kB one alone at
 * 4e12 until the backlog is full (8.5e3 B more at 3e12/s), the rest at
 * R_drain. Time near 1e6 s resolves to 1.2e-10 s, hence 1%. */
static void test_finish_after_many_bytes(void **state) {
  (void)state;
  double inj = 4e12, rd = 1e12, C = 1e4;
  xs_profile *prof = one_channel(inj, inj, rd, C, 1e-6, 0);
  xs_program *p[2];
  xs_error e;
  for (int k = 0; k < 2; k++) {
    p[k] = xs_program_new(k ? "after 1e18 bytes" : "fresh");
    assert_int_equal(xs_program_add_worker(p[k], "a", NULL, &e), XS_OK);
    assert_int_equal(xs_program_add_worker(p[k], "b", NULL, &e), XS_OK);
    if (k) {
      assert_int_equal(xs_program_send(p[k], 0, 1e18, NULL, "big", NULL, &e), XS_OK);
      for (size_t w = 0; w < 2; w++) {
        assert_int_equal(xs_program_wait(p[k], w, "big", &e), XS_OK);
        assert_int_equal(xs_program_compute(p[k], w, 1, &e), XS_OK);
      }
    }
    assert_int_equal(xs_program_send(p[k], 0, 1e5, NULL, "large", NULL, &e), XS_OK);
    assert_int_equal(xs_program_send(p[k], 1, 1e3, NULL, "small", NULL, &e), XS_OK);
    assert_int_equal(xs_program_finish(p[k], &e), XS_OK);
  }
  double t_small = 1e3 / (inj / 2), q = (inj - rd) * t_small;
  double t_fill = (C - q) / (inj - rd);
  double want = t_small + t_fill + (1e5 - 1e3 - inj * t_fill) / rd;
  for (int m = XS_MODEL_BURSTGAP; m <= XS_MODEL_BLOCKING; m++) {
    double took[2];
    for (int k = 0; k < 2; k++) {
      xs_result *r = eval(p[k], prof, (xs_model)m, 1);
      const xs_send_result *sr = &r->sends[k];
      took[k] = sr->issue_end_s - sr->issue_start_s;
      xs_result_free(r);
    }
    if (m == XS_MODEL_BURSTGAP)
      check_close(took[0], want, 0, "100 kB send, fresh channel", 0);
    if (!(fabs(took[1] / took[0] - 1) < 0.01)) {
      fprintf(stderr, "%s: 100 kB send took %.6g s after 1e18 bytes, %.6g s fresh\n",
              xs_model_name((xs_model)m), took[1], took[0]);
      fail();
    }
  }
  xs_program_free(p[0]);
  xs_program_free(p[1]);
  xs_profile_free(prof);
}

/* The queue of next events (xs__iheap: up to XS__IHEAP_LINEAR entities a
 * scan, above a heap, and from XS__IHEAP_RING entities a sorted ring beside
 * it) against a scan for the least (key, id), after every change: keys
 * that rise in step (the ring), at random, repeated (ties go by id), and
 * INFINITY. */
static void test_queue_vs_scan(void **state) {
  (void)state;
  const size_t sizes[] = {1, 2, 3, 4, 5, 31, 32, 33, 200};
  for (size_t si = 0; si < sizeof sizes / sizeof *sizes; si++) {
    size_t n = sizes[si];
    uint64_t seed = 7000 + si;
    rng g = {seed};
    xs__iheap h;
    assert_int_equal(xs__iheap_init(&h, n), 0);
    double *key = malloc(n * sizeof *key);
    for (size_t e = 0; e < n; e++)
      key[e] = INFINITY;
    double clock = 0;
    for (int step = 0; step < 20000; step++) {
      uint32_t e = (uint32_t)rng_int(&g, (int)n);
      int how = rng_int(&g, 10);
      double t;
      if (how < 5) { /* the top moves on, as a worker that ran */
        e = xs__iheap_top_id(&h) < n ? xs__iheap_top_id(&h) : e;
        clock = xs__iheap_top(&h) < INFINITY ? xs__iheap_top(&h) : clock;
        t = clock + (how < 3 ? 1.0 : rng_range(&g, 0, 2));
      } else if (how < 7) {
        t = INFINITY;
      } else if (how < 8) {
        t = clock + 1.0; /* a tie with others in step */
      } else {
        t = clock + rng_range(&g, 0, 3);
      }
      xs__iheap_set(&h, e, t);
      key[e] = t;
      size_t best = SIZE_MAX;
      for (size_t x = 0; x < n; x++)
        if (key[x] < INFINITY && (best == SIZE_MAX || key[x] < key[best]))
          best = x;
      double want = best == SIZE_MAX ? INFINITY : key[best];
      if (xs__iheap_top(&h) != want ||
          (best != SIZE_MAX && xs__iheap_top_id(&h) != best)) {
        fprintf(stderr, "seed %llu n %zu step %d: top %.17g of %u, the scan "
                        "%.17g of %zu\n", (unsigned long long)seed, n, step,
                xs__iheap_top(&h), xs__iheap_top_id(&h), want, best);
        fail();
      }
    }
    free(key);
    xs__iheap_free(&h);
  }
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_hand_below_knee),
      cmocka_unit_test(test_hand_above_knee),
      cmocka_unit_test(test_hand_two_workers),
      cmocka_unit_test(test_baselines_slow_injection),
      cmocka_unit_test(test_overflow_refused),
      cmocka_unit_test(test_reuse_consumed_on_failure),
      cmocka_unit_test(test_closed_vs_event),
      cmocka_unit_test(test_event_vs_naive),
      cmocka_unit_test(test_event_vs_naive_many),
      cmocka_unit_test(test_symmetry),
      cmocka_unit_test(test_invariants),
      cmocka_unit_test(test_limits),
      cmocka_unit_test(test_head_of_line),
      cmocka_unit_test(test_summary_only),
      cmocka_unit_test(test_ops_after_finish),
      cmocka_unit_test(test_finish_after_many_bytes),
      cmocka_unit_test(test_queue_vs_scan),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
