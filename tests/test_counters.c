/*
 * test_counters.c: counters (signal and await) and workers that stand for
 * identical copies, checked against second ways of computing them: hand-
 * worked cases, the naive evaluator (tests/naive_fluid.c, which runs
 * counters and copies from docs/formats.md alone), the same program with
 * its copies written out as workers of their own, and the packet
 * simulator; the sums and the early stop a planner asks of an evaluation
 * against its timeline and its full run. Fixed seeds; failures print seed
 * and values.
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
#include "naive_fluid.h"
#include "testutil.h"

#define check_close check_close_rel
#define link_profile(inj, rw, rd, cap, lat) one_channel(inj, rw, rd, cap, lat, 0)

static xs_program *parse(const char *text) {
  xs_program *p;
  xs_error e;
  xs_status st = xs_program_parse(text, strlen(text), "t.json", &p, &e);
  if (st)
    fprintf(stderr, "parse: %s\n", e.message);
  assert_int_equal(st, XS_OK);
  return p;
}

/* ---- hand-worked ---- */

/* A producer publishes two tiles, 1 s apart; the consumer takes 0.5 s per
 * tile and waits for each. */
static void test_hand_producer_consumer(void **state) {
  (void)state;
  xs_profile *prof = link_profile(1e9, 1e9, 1e9, INFINITY, 0);
  xs_program *p = parse(
      "{\"workers\":["
      "{\"name\":\"prod\",\"ops\":[{\"compute\":1},{\"signal\":\"tile\"},"
      "{\"compute\":1},{\"signal\":\"tile\"}]},"
      "{\"name\":\"cons\",\"ops\":[{\"await\":\"tile\"},{\"compute\":0.5},"
      "{\"await\":\"tile\",\"value\":2},{\"compute\":0.5}]}]}");
  for (int m = 0; m < 2; m++) {
    xs_result *r = eval(p, prof, (xs_model)m, 1);
    check_close(r->workers[1].finish_s, 2.5, 1e-12, 1, "consumer finish", 0);
    check_close(r->workers[1].blocked_s, 1.5, 1e-12, 1, "consumer blocked", 0);
    check_close(r->makespan_s, 2.5, 1e-12, 1, "makespan", 0);
    xs_result_free(r);
  }
  xs_program_free(p);
  xs_profile_free(prof);
}

/* A barrier: 3 copies of one worker and one other arrive at different
 * times; every one leaves when the last arrives. Copies signal once each. */
static void test_hand_barrier(void **state) {
  (void)state;
  xs_profile *prof = link_profile(1e9, 1e9, 1e9, INFINITY, 0);
  xs_program *p = parse(
      "{\"workers\":["
      "{\"name\":\"sm\",\"copies\":3,\"ops\":[{\"compute\":1},"
      "{\"signal\":\"bar\"},{\"await\":\"bar\",\"value\":4},{\"compute\":1}]},"
      "{\"name\":\"late\",\"ops\":[{\"compute\":2},{\"signal\":\"bar\"},"
      "{\"await\":\"bar\",\"value\":4},{\"compute\":0.25}]}]}");
  xs_result *r = eval(p, prof, XS_MODEL_BURSTGAP, 1);
  check_close(r->workers[0].finish_s, 3, 1e-12, 1, "copies leave at 2", 0);
  check_close(r->workers[1].finish_s, 2.25, 1e-12, 1, "late", 0);
  xs_result_free(r);
  /* two copies only: the counter reaches 3 of 4, never enough */
  xs_program *q;
  xs_error e;
  const char *bad =
      "{\"workers\":[{\"name\":\"sm\",\"copies\":2,\"ops\":[{\"signal\":"
      "\"bar\"},{\"await\":\"bar\",\"value\":4}]},{\"name\":\"x\",\"ops\":["
      "{\"signal\":\"bar\"}]}]}";
  assert_int_equal(xs_program_parse(bad, strlen(bad), "b.json", &q, &e),
                   XS_INVALID);
  assert_non_null(strstr(e.message, "b.json:1:"));
  assert_non_null(strstr(e.message, "add up to 3"));
  xs_program_free(p);
  xs_profile_free(prof);
}

/* Copies count as that many senders: 4 copies of 1 MB on a 1 GB/s drain,
 * unbounded injection and capacity, deliver 4 MB at 1 GB/s. */
static void test_hand_copies_share(void **state) {
  (void)state;
  xs_profile *prof = link_profile(8e9, 1e9, 1e9, INFINITY, 0);
  xs_program *p = parse("{\"workers\":[{\"name\":\"sm\",\"copies\":4,"
                        "\"ops\":[{\"send\":1e6},{\"fence\":true}]}]}");
  xs_result *r = eval(p, prof, XS_MODEL_BURSTGAP, 1);
  /* each copy injects at min(r_w, R_inj/4) = 1 GB/s: issue 1 ms, backlog
   * 3 MB after it, drained by 4 ms */
  check_close(r->sends[0].issue_end_s, 1e-3, 1e-9, 1e-3, "issue", 0);
  check_close(r->makespan_s, 4e-3, 1e-9, 1e-3, "makespan", 0);
  check_close(r->channels[0].bytes, 4e6, 1e-12, 4e6, "channel bytes", 0);
  xs_result_free(r);
  r = eval(p, prof, XS_MODEL_SERIAL, 1);
  check_close(r->makespan_s, 4e-3, 1e-9, 1e-3, "serial", 0);
  xs_result_free(r);
  xs_program_free(p);
  xs_profile_free(prof);
}

/* ---- parsing and the checks of finish ---- */

static void test_parse_roundtrip(void **state) {
  (void)state;
  xs_program *p = parse(
      "{\"name\":\"r\",\"workers\":[{\"name\":\"a\",\"copies\":8,\"ops\":["
      "{\"compute\":1e-6},{\"signal\":\"x\",\"add\":3},{\"send\":10}]},"
      "{\"name\":\"b\",\"ops\":[{\"await\":\"x\",\"value\":24},"
      "{\"signal\":\"y\"}]}]}");
  assert_int_equal(xs_program_worker_copies(p, 0), 8);
  assert_int_equal(xs_program_counter_count(p), 2);
  xs_op_info op;
  xs_program_op(p, 1, 0, &op);
  assert_int_equal(op.kind, XS_OP_AWAIT);
  assert_string_equal(op.counter, "x");
  assert_true(op.value == 24);
  char *json = xs_program_to_json(p);
  assert_non_null(json);
  xs_program *q = parse(json);
  char *again = xs_program_to_json(q);
  assert_string_equal(json, again);
  assert_non_null(strstr(json, "\"copies\":8"));
  assert_non_null(strstr(json, "\"add\":3"));
  free(json);
  free(again);
  xs_program_free(p);
  xs_program_free(q);
}

static void test_parse_errors(void **state) {
  (void)state;
  static const struct {
    const char *text;
    xs_status status;
    const char *want;
  } cases[] = {
      {"{\"workers\":[{\"ops\":[{\"signal\":\"\"}]}]}", XS_INVALID,
       "1:31: workers[0].ops[0].signal: a counter needs a non-empty name"},
      {"{\"workers\":[{\"ops\":[{\"signal\":\"x\",\"add\":0}]}]}", XS_INVALID,
       "workers[0].ops[0].add:"},
      {"{\"workers\":[{\"ops\":[{\"signal\":\"x\",\"add\":1.5}]}]}",
       XS_INVALID, "workers[0].ops[0].add: expected the amount to add"},
      {"{\"workers\":[{\"ops\":[{\"signal\":\"x\",\"value\":2}]}]}",
       XS_INVALID, "\"value\" belongs to a await op, not to a signal op"},
      {"{\"workers\":[{\"ops\":[{\"await\":\"x\",\"add\":2}]}]}", XS_INVALID,
       "\"add\" belongs to a signal op"},
      {"{\"workers\":[{\"ops\":[{\"await\":7}]}]}", XS_INVALID,
       "workers[0].ops[0].await:"},
      {"{\"workers\":[{\"ops\":[{\"await\":\"x\",\"value\":1e300}]}]}",
       XS_INVALID, "workers[0].ops[0].value: expected the counter value"},
      {"{\"workers\":[{\"copies\":0,\"ops\":[{\"fence\":true}]}]}", XS_INVALID,
       "workers[0].copies:"},
      {"{\"workers\":[{\"copies\":2.5,\"ops\":[{\"fence\":true}]}]}",
       XS_INVALID, "workers[0].copies: expected a number of identical copies"},
      {"{\"workers\":[{\"ops\":[{\"await\":\"x\"}]}]}", XS_INVALID,
       "1:30: workers[0].ops[0].await: await \"x\" for 1 can never return: "
       "the program's signals of \"x\" add up to 0"},
      /* each waits for the other's signal, which comes after its await */
      {"{\"workers\":[{\"name\":\"a\",\"ops\":[{\"await\":\"y\"},{\"signal\":"
       "\"x\"}]},{\"name\":\"b\",\"ops\":[{\"await\":\"x\"},{\"signal\":"
       "\"y\"}]}]}",
       XS_CYCLE, "never returns, so the program never finishes: \"y\" "
                 "reaches only 0 before it"},
      /* a wait behind an await that is never met */
      {"{\"workers\":[{\"name\":\"a\",\"ops\":[{\"send\":1,\"id\":\"s\"},"
       "{\"await\":\"z\",\"value\":2},{\"signal\":\"z\"}]},{\"name\":\"b\","
       "\"ops\":[{\"wait\":\"s\"},{\"signal\":\"z\"}]}]}",
       XS_CYCLE, "await \"z\" for 2 never returns"},
  };
  for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
    xs_program *p = (xs_program *)1;
    xs_error e;
    xs_status st = xs_program_parse(cases[i].text, strlen(cases[i].text),
                                    "t.json", &p, &e);
    if (st != cases[i].status || !strstr(e.message, cases[i].want)) {
      fprintf(stderr, "case %zu: status %d (want %d)\n  message: %s\n  want: %s\n",
              i, (int)st, (int)cases[i].status, e.message, cases[i].want);
      fail();
    }
    assert_null(p);
  }
}

static void test_builder_errors(void **state) {
  (void)state;
  xs_program *p = xs_program_new("b");
  xs_error e;
  size_t w, c;
  assert_int_equal(xs_program_add_workers(p, "w", 0, &w, &e), XS_INVALID);
  assert_int_equal(xs_program_add_workers(p, "w", 4, &w, &e), XS_OK);
  assert_int_equal(xs_program_counter(p, "", &c, &e), XS_INVALID);
  assert_int_equal(xs_program_counter(p, "c", &c, &e), XS_OK);
  assert_int_equal(xs_program_signal_index(p, w, c + 1, 1, &e), XS_INVALID);
  assert_int_equal(xs_program_signal_index(p, w, c, 0.5, &e), XS_INVALID);
  assert_int_equal(xs_program_await_index(p, w, c, NAN, &e), XS_INVALID);
  assert_int_equal(xs_program_signal_index(p, w, c, 2, &e), XS_OK);
  assert_int_equal(xs_program_await_index(p, w, c, 8, &e), XS_OK);
  assert_int_equal(xs_program_finish(p, &e), XS_OK);
  xs_program_free(p);
}

/* ---- random programs with copies and counters ---- */

static xs_profile *random_profile(rng *g) {
  xs_profile *p = xs_profile_new("random", "test");
  for (int c = 0; c < 2; c++) {
    xs_channel ch;
    double rd = rng_range(g, 1e9, 1e10);
    double inj = rd * rng_range(g, 0.5, 6.0);
    xs_channel_init(&ch, inj, rd);
    ch.worker_inject_Bps = rng_int(g, 2) ? inj : inj * rng_range(g, 0.05, 1.0);
    int k = rng_int(g, 4);
    ch.capacity_B = k == 0 ? 0 : k == 1 ? INFINITY : rng_range(g, 1e3, 2e6);
    ch.latency_s = rng_int(g, 2) ? rng_range(g, 0, 5e-6) : 0;
    char name[8];
    snprintf(name, sizeof name, "c%d", c);
    xs_error e;
    assert_int_equal(xs_profile_add_channel(p, name, &ch, &e), XS_OK);
  }
  return p;
}

/* Worker w awaits only counters that earlier workers signal, for at most
 * what they signal in all, and waits only on earlier workers' sends: never
 * a deadlock. */
static xs_program *random_program(rng *g, int nw) {
  xs_program *p = xs_program_new("random");
  xs_error e;
  enum { NC = 4 };
  double total[NC] = {0};
  size_t sends[64];
  int nsends = 0;
  for (int w = 0; w < nw; w++) {
    char name[16];
    snprintf(name, sizeof name, "w%d", w);
    size_t copies = 1 + (size_t)rng_int(g, 4), idx;
    assert_int_equal(xs_program_add_workers(p, name, copies, &idx, &e), XS_OK);
    double mine[NC] = {0};
    int nops = 2 + rng_int(g, 10);
    for (int i = 0; i < nops; i++) {
      int k = rng_int(g, 12);
      char cn[8];
      int c = rng_int(g, NC);
      snprintf(cn, sizeof cn, "k%d", c);
      if (k < 3) {
        assert_int_equal(xs_program_compute(p, idx, rng_range(g, 0, 3e-4), &e),
                         XS_OK);
      } else if (k < 7) {
        char ch[8];
        snprintf(ch, sizeof ch, "c%d", rng_int(g, 2));
        size_t s;
        assert_int_equal(xs_program_send(p, idx, rng_int(g, 6) ? rng_range(g, 1e3, 2e6) : 0,
                                         ch, NULL, &s, &e),
                         XS_OK);
        if (nsends < 64)
          sends[nsends++] = s;
      } else if (k < 9) {
        double add = 1 + rng_int(g, 3);
        assert_int_equal(xs_program_signal(p, idx, cn, add, &e), XS_OK);
        mine[c] += add * (double)copies;
      } else if (k < 11) {
        if (total[c] >= 1)
          assert_int_equal(
              xs_program_await(p, idx, cn, 1 + floor(rng_unit(g) * total[c]), &e),
              XS_OK);
      } else if (nsends > 0) {
        /* a send of an earlier worker, or this one's own */
        assert_int_equal(xs_program_wait_send(p, idx, sends[rng_int(g, nsends)], &e),
                         XS_OK);
      } else {
        assert_int_equal(xs_program_fence(p, idx, &e), XS_OK);
      }
    }
    for (int c = 0; c < NC; c++)
      total[c] += mine[c];
  }
  finish_ok(p);
  return p;
}

static void test_random_vs_naive(void **state) {
  (void)state;
  for (uint64_t seed = 1; seed <= 300; seed++) {
    rng g = {seed};
    xs_profile *prof = random_profile(&g);
    int nw = 1 + rng_int(&g, 8);
    xs_program *p = random_program(&g, nw);
    size_t ns = xs_program_send_count(p);
    double *del = malloc((ns + 1) * sizeof *del);
    double *fin = malloc((size_t)nw * sizeof *fin);
    for (int m = 0; m < 2; m++) {
      xs_result *a = eval(p, prof, (xs_model)m, 1);
      double mk;
      assert_int_equal(naive_eval(p, prof, m == 1, &mk, del, fin), 0);
      double sc = a->makespan_s;
      check_close(a->makespan_s, mk, 1e-9, sc, "makespan vs naive", seed);
      for (size_t s = 0; s < ns; s++)
        check_close(a->sends[s].deliver_s, del[s], 1e-9, sc,
                    "deliver vs naive", seed);
      for (int w = 0; w < nw; w++)
        check_close(a->workers[w].finish_s, fin[w], 1e-9, sc,
                    "finish vs naive", seed);
      xs_result_free(a);
    }
    free(del);
    free(fin);
    xs_program_free(p);
    xs_profile_free(prof);
  }
}

/* copies run as one worker = the same copies written out one by one */
static void test_random_vs_expanded(void **state) {
  (void)state;
  for (uint64_t seed = 500; seed < 800; seed++) {
    rng g = {seed};
    xs_profile *prof = random_profile(&g);
    int nw = 1 + rng_int(&g, 8);
    xs_program *p = random_program(&g, nw);
    uint32_t fw[16], fs[256];
    xs_program *x;
    xs_error e;
    assert_true(xs_program_send_count(p) < 256);
    assert_int_equal(xs__program_expand_copies(p, &x, fw, fs, &e), XS_OK);
    for (int m = 0; m < 2; m++) {
      xs_result *a = eval(p, prof, (xs_model)m, 1);
      xs_result *b = eval(x, prof, (xs_model)m, 1);
      double sc = a->makespan_s;
      check_close(a->makespan_s, b->makespan_s, 1e-9, sc, "makespan", seed);
      for (int w = 0; w < nw; w++)
        check_close(a->workers[w].finish_s, b->workers[fw[w]].finish_s, 1e-9,
                    sc, "finish", seed);
      for (size_t s = 0; s < xs_program_send_count(p); s++)
        check_close(a->sends[s].deliver_s, b->sends[fs[s]].deliver_s, 1e-9,
                    sc, "deliver", seed);
      for (size_t c = 0; c < a->nchannels; c++)
        check_close(a->channels[c].bytes, b->channels[c].bytes, 1e-12,
                    a->channels[c].bytes, "bytes", seed);
      xs_result_free(a);
      xs_result_free(b);
    }
    xs_program_free(x);
    xs_program_free(p);
    xs_profile_free(prof);
  }
}

/* The sums an evaluation keeps (xs__seg_sums, a planner's breakdown)
 * against the same evaluation's timeline added up segment by segment in
 * the order it records them: equal to the bit. Marked: channel "c1" and
 * counter "k0"; each kind and mark its own class, and stall also one. */
static void test_random_sums_vs_timeline(void **state) {
  (void)state;
  enum { NCLS = 2 * (XS__SEG_AWAIT + 1) + 1 };
  for (uint64_t seed = 900; seed < 1100; seed++) {
    rng g = {seed};
    xs_profile *prof = random_profile(&g);
    int nw = 1 + rng_int(&g, 8);
    xs_program *p = random_program(&g, nw);
    for (int m = 0; m < 2; m++) {
      uint8_t chan[8] = {0}, ctr[8] = {0};
      for (size_t k = 0; k < p->nchan_names; k++)
        chan[k + 1] = strcmp(p->chan_names[k], "c1") == 0;
      for (size_t c = 0; c < p->ncounters; c++)
        ctr[c] = strcmp(p->counter_names[c], "k0") == 0;
      double *sums = calloc((size_t)nw * NCLS, sizeof *sums);
      double *want = calloc((size_t)nw * NCLS, sizeof *want);
      xs__seg_sums S = {chan, ctr, {{0}}, {{0}}, NCLS, sums};
      memset(S.also, -1, sizeof S.also);
      for (int k = 0; k <= XS__SEG_AWAIT; k++)
        for (int mk = 0; mk < 2; mk++)
          S.cls[k][mk] = (signed char)(2 * k + mk);
      S.also[XS_SEG_STALL][0] = NCLS - 1;
      xs__eval_extra x = {.sums = &S, .stop_s = INFINITY};
      xs_eval_options o = {1, 0, NULL, NULL};
      xs_result *a, *b;
      xs_error e;
      assert_int_equal(xs__evaluate_ex(p, prof, (xs_model)m, &o, &x, &a, &e),
                       XS_OK);
      assert_int_equal(x.stopped, 0);
      xs_timeline *tl = xs_timeline_new();
      o.timeline = tl;
      assert_int_equal(xs_evaluate(p, prof, (xs_model)m, &o, &b, &e), XS_OK);
      assert_true(a->makespan_s == b->makespan_s);
      for (size_t i = 0; i < tl->nsegments; i++) {
        const xs_segment *sg = &tl->segments[i];
        int kind = sg->counter != UINT32_MAX ? XS__SEG_AWAIT : (int)sg->kind;
        int mk = sg->counter != UINT32_MAX
                     ? ctr[sg->counter]
                     : sg->send != UINT32_MAX &&
                           chan[p->send_chan[sg->send]];
        double d = sg->end_s - sg->start_s;
        want[sg->worker * NCLS + 2 * kind + mk] += d;
        if (kind == XS_SEG_STALL && !mk)
          want[sg->worker * NCLS + NCLS - 1] += d;
      }
      for (size_t i = 0; i < (size_t)nw * NCLS; i++)
        if (sums[i] != want[i]) {
          fprintf(stderr, "seed %llu model %d: sum %zu of worker %zu: %.17g, "
                          "the timeline's %.17g\n",
                  (unsigned long long)seed, m, i % NCLS, i / NCLS, sums[i],
                  want[i]);
          fail();
        }
      xs_result_free(a);
      xs_result_free(b);
      xs_timeline_free(tl);
      free(sums);
      free(want);
    }
    xs_program_free(p);
    xs_profile_free(prof);
  }
}

/* An evaluation asked to stop past stop_s stops only when the makespan is
 * past it: never at stop_s = the makespan; below it, when it stops, the
 * makespan is larger; when it does not, the result is the same. */
static void test_random_early_stop(void **state) {
  (void)state;
  int stops = 0;
  for (uint64_t seed = 1200; seed < 1500; seed++) {
    rng g = {seed};
    xs_profile *prof = random_profile(&g);
    int nw = 1 + rng_int(&g, 8);
    xs_program *p = random_program(&g, nw);
    for (int m = 0; m < 2; m++) {
      xs_result *full = eval(p, prof, (xs_model)m, 1);
      double mk = full->makespan_s;
      const double f[] = {1, 1 - 1e-6, 0.9, 0.5, 0.1};
      for (int k = 0; k < 5; k++) {
        xs__eval_extra x = {.stop_s = mk * f[k]};
        xs_eval_options o = {1, 0, NULL, NULL};
        xs_result *a;
        xs_error e;
        assert_int_equal(
            xs__evaluate_ex(p, prof, (xs_model)m, &o, &x, &a, &e), XS_OK);
        if (x.stopped && !(mk > x.stop_s)) {
          fprintf(stderr, "seed %llu model %d: stopped past %.17g, makespan "
                          "%.17g\n", (unsigned long long)seed, m, x.stop_s, mk);
          fail();
        }
        if (!x.stopped)
          check_close(a->makespan_s, mk, 0, mk, "makespan, not stopped", seed);
        stops += x.stopped;
        xs_result_free(a);
      }
      xs_result_free(full);
    }
    xs_program_free(p);
    xs_profile_free(prof);
  }
  /* the check can fail: 2281 of these 3000 evaluations stop */
  assert_true(stops > 1500);
}

/* the packet simulator (copies written out, small packets) against the
 * fluid evaluation of copies and counters */
static void test_sim_vs_fluid(void **state) {
  (void)state;
  xs_profile *prof = link_profile(4e10, 1e10, 1e10, 1 << 20, 1e-6);
  /* 8 producers in lockstep publish 16 tiles each; a consumer class of 4
   * copies takes each tile when all 8 are in, and pushes its result */
  xs_program *p = xs_program_new("tiles");
  xs_error e;
  size_t prod, cons, tile;
  assert_int_equal(xs_program_add_workers(p, "prod", 8, &prod, &e), XS_OK);
  assert_int_equal(xs_program_add_workers(p, "cons", 4, &cons, &e), XS_OK);
  assert_int_equal(xs_program_counter(p, "tile", &tile, &e), XS_OK);
  for (int k = 1; k <= 16; k++) {
    assert_int_equal(xs_program_send(p, prod, 256e3, "link", NULL, NULL, &e), XS_OK);
    assert_int_equal(xs_program_compute(p, prod, 20e-6, &e), XS_OK);
    assert_int_equal(xs_program_signal_index(p, prod, tile, 1, &e), XS_OK);
    assert_int_equal(xs_program_await_index(p, cons, tile, 8.0 * k, &e), XS_OK);
    assert_int_equal(xs_program_compute(p, cons, 15e-6, &e), XS_OK);
    assert_int_equal(xs_program_send(p, cons, 128e3, "link", NULL, NULL, &e), XS_OK);
  }
  assert_int_equal(xs_program_finish(p, &e), XS_OK);
  xs_result *a = eval(p, prof, XS_MODEL_BURSTGAP, 1), *b;
  xs_sim_options so = {256, XS_ARB_RR, 0, NULL, 0};
  assert_int_equal(xs_simulate(p, prof, &so, &b, &e), XS_OK);
  assert_int_equal(b->nworkers, 2);
  check_close(b->makespan_s, a->makespan_s, 0.01, a->makespan_s,
              "sim vs fluid makespan", 0);
  check_close(b->workers[1].finish_s, a->workers[1].finish_s, 0.01,
              a->makespan_s, "sim vs fluid consumer", 0);
  check_close(b->channels[0].bytes, a->channels[0].bytes, 1e-12,
              a->channels[0].bytes, "bytes", 0);
  xs_result_free(a);
  xs_result_free(b);
  xs_program_free(p);
  xs_profile_free(prof);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_hand_producer_consumer),
      cmocka_unit_test(test_hand_barrier),
      cmocka_unit_test(test_hand_copies_share),
      cmocka_unit_test(test_parse_roundtrip),
      cmocka_unit_test(test_parse_errors),
      cmocka_unit_test(test_builder_errors),
      cmocka_unit_test(test_random_vs_naive),
      cmocka_unit_test(test_random_vs_expanded),
      cmocka_unit_test(test_sim_vs_fluid),
      cmocka_unit_test(test_random_sums_vs_timeline),
      cmocka_unit_test(test_random_early_stop),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
