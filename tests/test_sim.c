/*
 * test_sim.c: the packet simulator against the fluid model it refines:
 * with packets small next to the bursts (at most 1/256 of the smallest
 * non-zero send), makespan and every send's delivery within 1% of
 * burstgap, on random programs of one and of several workers; plus hand
 * cases for arbitration, the per-worker in-flight limit, determinism.
 */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <cmocka.h>

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "testutil.h"
#include "xstage.h"

static xs_profile *random_profile(rng *g, double min_send, int nch) {
  xs_profile *p = xs_profile_new("random", "test");
  for (int c = 0; c < nch; c++) {
    xs_channel ch;
    double rd = rng_range(g, 1e9, 1e10);
    double inj = rng_int(g, 4) == 0 ? rd * rng_range(g, 0.3, 1.0)
                                    : rd * rng_range(g, 1.0, 6.0);
    xs_channel_init(&ch, inj, rd);
    ch.worker_inject_Bps = rng_int(g, 2) ? inj : inj * rng_range(g, 0.3, 1.0);
    int k = rng_int(g, 5);
    /* capacities that hold many packets, or none, or unbounded */
    ch.capacity_B = k == 0 ? 0 : k == 1 || !isfinite(min_send) ? INFINITY : rng_range(g, 0.3, 3) * min_send;
    ch.latency_s = rng_int(g, 3) ? rng_range(g, 0, 5e-6) : 0;
    ch.issue_overhead_s = rng_int(g, 4) == 0 ? rng_range(g, 0, 1e-6) : 0;
    char name[16];
    snprintf(name, sizeof name, "c%d", c);
    xs_error e;
    assert_int_equal(xs_profile_add_channel(p, name, &ch, &e), XS_OK);
  }
  return p;
}

static xs_program *random_program(rng *g, int nw, int nch, double lo,
                                  double hi, double *min_send) {
  xs_program *p = xs_program_new("random");
  xs_error e;
  size_t last_send[16];
  int have[16] = {0};
  *min_send = INFINITY;
  for (int w = 0; w < nw; w++) {
    char name[16];
    snprintf(name, sizeof name, "w%d", w);
    assert_int_equal(xs_program_add_worker(p, name, NULL, &e), XS_OK);
    int nops = 2 + rng_int(g, 6);
    for (int i = 0; i < nops; i++) {
      int k = rng_int(g, 10);
      if (k < 4) {
        assert_int_equal(xs_program_compute(p, (size_t)w, rng_range(g, 0, 3e-4), &e), XS_OK);
      } else if (k < 8 || i == 0) {
        char ch[16];
        snprintf(ch, sizeof ch, "c%d", rng_int(g, nch));
        double b = rng_range(g, lo, hi);
        if (b < *min_send)
          *min_send = b;
        assert_int_equal(xs_program_send(p, (size_t)w, b, ch, NULL, &last_send[w], &e), XS_OK);
        have[w] = 1;
      } else if (k < 9) {
        int t = rng_int(g, w + 1);
        if (have[t])
          assert_int_equal(xs_program_wait_send(p, (size_t)w, last_send[t], &e), XS_OK);
      } else {
        assert_int_equal(xs_program_fence(p, (size_t)w, &e), XS_OK);
      }
    }
  }
  assert_int_equal(xs_program_finish(p, &e), XS_OK);
  return p;
}

static int close_enough(double a, double b, double rel) {
  return fabs(a - b) <= rel * fmax(fabs(a), fabs(b)) + 1e-15;
}

static void agreement(uint64_t first, int count, int max_workers) {
  int worst_seed = -1;
  double worst = 0;
  for (uint64_t seed = first; seed < first + (uint64_t)count; seed++) {
    rng g = {seed};
    int nw = max_workers == 1 ? 1 : 2 + rng_int(&g, max_workers - 1);
    int nch = 1 + rng_int(&g, 2);
    double min_send;
    xs_program *p = random_program(&g, nw, nch, 2e5, 1e6, &min_send);
    xs_profile *prof = random_profile(&g, min_send, nch);
    xs_error e;
    xs_result *fl, *sm;
    xs_sim_options so = {isfinite(min_send) ? min_send / 256 : 0, XS_ARB_RR, 0, NULL, 0};
    assert_int_equal(xs_evaluate(p, prof, XS_MODEL_BURSTGAP, NULL, &fl, &e), XS_OK);
    xs_status st = xs_simulate(p, prof, &so, &sm, &e);
    if (st)
      fprintf(stderr, "seed %llu: %s\n", (unsigned long long)seed, e.message);
    assert_int_equal(st, XS_OK);
    double err = fabs(sm->makespan_s / fl->makespan_s - 1);
    if (!close_enough(sm->makespan_s, fl->makespan_s, 0.01)) {
      fprintf(stderr, "seed %llu: makespan sim %.9g vs burstgap %.9g\n",
              (unsigned long long)seed, sm->makespan_s, fl->makespan_s);
      fail();
    }
    for (size_t s = 0; s < fl->nsends; s++) {
      double d = fabs(sm->sends[s].deliver_s / fl->sends[s].deliver_s - 1);
      if (d > err)
        err = d;
      if (!close_enough(sm->sends[s].deliver_s, fl->sends[s].deliver_s, 0.01)) {
        fprintf(stderr, "seed %llu: send %zu delivered sim %.9g vs burstgap %.9g\n",
                (unsigned long long)seed, s, sm->sends[s].deliver_s,
                fl->sends[s].deliver_s);
        fail();
      }
    }
    if (err > worst) {
      worst = err;
      worst_seed = (int)seed;
    }
    xs_result_free(fl);
    xs_result_free(sm);
    xs_program_free(p);
    xs_profile_free(prof);
  }
  printf("agreement over %d programs of up to %d workers: worst relative "
         "difference %.3g (seed %d)\n", count, max_workers, worst, worst_seed);
}

static void test_agree_one_worker(void **s) {
  (void)s;
  agreement(1, 150, 1);
}

static void test_agree_several_workers(void **s) {
  (void)s;
  agreement(5000, 150, 6);
}

static xs_program *two_senders(double b) {
  xs_program *p = xs_program_new("two");
  xs_error e;
  for (int w = 0; w < 2; w++) {
    char n[16];
    snprintf(n, sizeof n, "w%d", w);
    assert_int_equal(xs_program_add_worker(p, n, NULL, &e), XS_OK);
    assert_int_equal(xs_program_send(p, (size_t)w, b, NULL, NULL, NULL, &e), XS_OK);
  }
  assert_int_equal(xs_program_finish(p, &e), XS_OK);
  return p;
}

/* FIFO serves the first send entirely before the second; round robin
 * finishes both together. */
static void test_arbitration(void **s) {
  (void)s;
  xs_profile *prof = xs_profile_new("t", "t");
  xs_channel ch;
  xs_channel_init(&ch, 4e9, 1e9);
  ch.capacity_B = 1e5;
  xs_error e;
  assert_int_equal(xs_profile_add_channel(prof, "l", &ch, &e), XS_OK);
  xs_program *p = two_senders(1e6);
  xs_result *rr, *fifo;
  xs_sim_options o = {1000, XS_ARB_RR, 0, NULL, 0};
  assert_int_equal(xs_simulate(p, prof, &o, &rr, &e), XS_OK);
  o.arbitration = XS_ARB_FIFO;
  assert_int_equal(xs_simulate(p, prof, &o, &fifo, &e), XS_OK);
  assert_true(close_enough(rr->sends[0].issue_end_s, rr->sends[1].issue_end_s, 0.01));
  /* fifo: w0 is done by about (1e6 + 1e5 * ...)/R_drain, well before w1 */
  assert_true(fifo->sends[0].issue_end_s < 0.6 * fifo->sends[1].issue_end_s);
  /* the channel drains the same bytes either way */
  assert_true(close_enough(rr->makespan_s, fifo->makespan_s, 0.01));
  xs_result_free(rr);
  xs_result_free(fifo);
  xs_program_free(p);
  xs_profile_free(prof);
}

/* A per-worker in-flight limit caps one worker at limit / round trip
 * (Little's law), far below the channel's rates. */
static void test_worker_inflight(void **s) {
  (void)s;
  xs_profile *prof = xs_profile_new("t", "t");
  xs_channel ch;
  xs_channel_init(&ch, 1e11, 1e11);
  ch.latency_s = 1e-6;
  ch.worker_inflight_B = 65536;
  xs_error e;
  assert_int_equal(xs_profile_add_channel(prof, "l", &ch, &e), XS_OK);
  xs_program *p = xs_program_new("one");
  assert_int_equal(xs_program_add_worker(p, "w", NULL, &e), XS_OK);
  assert_int_equal(xs_program_send(p, 0, 64e6, NULL, NULL, NULL, &e), XS_OK);
  assert_int_equal(xs_program_finish(p, &e), XS_OK);
  xs_result *r;
  xs_sim_options o = {4096, XS_ARB_RR, 0, NULL, 0};
  assert_int_equal(xs_simulate(p, prof, &o, &r, &e), XS_OK);
  /* round trip per packet: 4096/1e11 to drain + 1 us: about 64 KiB/1.04 us */
  double rate = 64e6 / r->sends[0].issue_end_s;
  double expect = 65536 / (1e-6 + 4096 / 1e11);
  assert_true(close_enough(rate, expect, 0.05));
  xs_result_free(r);
  xs_program_free(p);
  xs_profile_free(prof);
}

static void test_deterministic(void **s) {
  (void)s;
  rng g = {99};
  double min_send;
  xs_program *p = random_program(&g, 5, 2, 1e5, 5e5, &min_send);
  xs_profile *prof = random_profile(&g, min_send, 2);
  char *first = NULL;
  for (int i = 0; i < 3; i++) {
    xs_result *r;
    xs_error e;
    xs_sim_options o = {0, XS_ARB_RR, 0, NULL, 0};
    assert_int_equal(xs_simulate(p, prof, &o, &r, &e), XS_OK);
    assert_int_equal(r->model, XS_MODEL_SIM);
    char *j = xs_report_json(p, prof, &r, 1);
    assert_non_null(strstr(j, "\"sim\""));
    if (!first)
      first = j;
    else {
      assert_string_equal(first, j);
      free(j);
    }
    xs_result_free(r);
  }
  free(first);
  xs_program_free(p);
  xs_profile_free(prof);
}

/* A chain of 50,000 signals of no bytes on a channel without latency, each
 * worker waiting on the next one's: the last worker's signal, after its
 * compute, lets the whole chain go at the same instant. */
static void test_signal_chain(void **s) {
  (void)s;
  enum { N = 50000 };
  xs_profile *prof = xs_profile_new("t", "t");
  xs_channel ch;
  xs_channel_init(&ch, 1e11, 1e10);
  xs_error e;
  assert_int_equal(xs_profile_add_channel(prof, "l", &ch, &e), XS_OK);
  xs_program *p = xs_program_new("chain");
  for (size_t w = 0; w < N; w++) {
    char name[16], next[16];
    snprintf(name, sizeof name, "s%zu", w);
    snprintf(next, sizeof next, "s%zu", w + 1);
    assert_int_equal(xs_program_add_worker(p, name, NULL, &e), XS_OK);
    if (w + 1 < N)
      assert_int_equal(xs_program_wait(p, w, next, &e), XS_OK);
    else
      assert_int_equal(xs_program_compute(p, w, 1e-3, &e), XS_OK);
    assert_int_equal(xs_program_send(p, w, 0, NULL, name, NULL, &e), XS_OK);
  }
  assert_int_equal(xs_program_finish(p, &e), XS_OK);
  for (int m = XS_MODEL_BURSTGAP; m <= XS_MODEL_BLOCKING; m++) {
    xs_result *r;
    assert_int_equal(xs_evaluate(p, prof, (xs_model)m, NULL, &r, &e), XS_OK);
    assert_true(r->makespan_s == 1e-3);
    assert_true(r->workers[0].finish_s == 1e-3);
    assert_true(r->sends[0].deliver_s == 1e-3);
    xs_result_free(r);
  }
  xs_result *r;
  xs_sim_options o = {0, XS_ARB_RR, 0, NULL, 0};
  assert_int_equal(xs_simulate(p, prof, &o, &r, &e), XS_OK);
  assert_true(r->makespan_s == 1e-3);
  assert_true(r->workers[0].finish_s == 1e-3);
  xs_result_free(r);
  xs_program_free(p);
  xs_profile_free(prof);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_agree_one_worker),
      cmocka_unit_test(test_agree_several_workers),
      cmocka_unit_test(test_arbitration),
      cmocka_unit_test(test_worker_inflight),
      cmocka_unit_test(test_deterministic),
      cmocka_unit_test(test_signal_chain),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
