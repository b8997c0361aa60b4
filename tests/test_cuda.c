/*
 * test_cuda.c: the CUDA probes' host logic against a fake timing source:
 * stamps made from known parameters become samples that fit back to them;
 * the plan of bursts; and, where a GPU is present, a real cuda-host probe
 * (skipped with the reason otherwise: "no CUDA device found").
 */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <cmocka.h>

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "internal.h"
#include "measure/cuda_probe.h"

static void test_plan(void **st) {
  (void)st;
  xs_probe_options o;
  memset(&o, 0, sizeof o);
  o.sizes = 6;
  o.repeats = 3;
  double *bytes;
  size_t n;
  unsigned warm;
  xs_error e;
  assert_int_equal(xs__cuda_plan_for_test(&o, &bytes, &n, &warm, &e), XS_OK);
  assert_int_equal(n, warm + 18);
  for (size_t k = 0; k < n; k++) {
    assert_true(fmod(bytes[k], 16) == 0); /* TMA needs multiples of 16 */
    assert_true(bytes[k] >= 65536 && bytes[k] <= 64.0 * 1048576);
  }
  assert_true(bytes[warm] < bytes[warm + 5] && bytes[warm] == bytes[warm + 6]);
  free(bytes);
  o.min_bytes = 8;
  assert_int_equal(xs__cuda_plan_for_test(&o, &bytes, &n, &warm, &e), XS_INVALID);
}

/* GPU stores into host memory as the model has them: R_inj 400 GB/s,
 * R_drain 52.8 GB/s, C 1 MiB, L 1 us (h100-pcie5-host's leads). */
static void test_fake_timing(void **st) {
  (void)st;
  xs_probe_options o;
  memset(&o, 0, sizeof o);
  double *bytes;
  size_t n;
  unsigned warm;
  xs_error e;
  assert_int_equal(xs__cuda_plan_for_test(&o, &bytes, &n, &warm, &e), XS_OK);
  double ri = 4e11, rd = 5.28e10, cap = 1048576, lat = 1e-6, bf = cap * ri / (ri - rd);
  double *issue = malloc(n * sizeof *issue), *del = malloc(n * sizeof *del);
  for (size_t k = 0; k < n; k++) {
    double b = bytes[k];
    issue[k] = b <= bf ? b / ri : bf / ri + (b - bf) / rd;
    del[k] = b / rd + lat;
    /* a timer that ticks in 32 ns steps, as %globaltimer may */
    issue[k] = 32e-9 * floor(issue[k] / 32e-9);
  }
  xs_samples *s;
  assert_int_equal(xs__cuda_samples("cuda-host", bytes, n, warm, issue, del, 14, &s, &e),
                   XS_OK);
  assert_int_equal(s->n, n - warm);
  xs_fit f;
  assert_int_equal(xs_fit_samples(s, &f, &e), XS_OK);
  printf("fake cuda-host: drain %.4g B/s, capacity %.4g B, inject %.4g B/s\n", f.drain_Bps,
         f.capacity_B, f.inject_Bps);
  assert_true(f.knee_reached);
  assert_true(fabs(f.drain_Bps / rd - 1) < 0.01);
  assert_true(fabs(f.capacity_B / cap - 1) < 0.05);
  assert_true(fabs(f.latency_s / lat - 1) < 0.05);
  xs_samples_free(s);
  /* a burst the kernel never finished is refused, not kept */
  del[warm + 2] = NAN;
  assert_int_equal(xs__cuda_samples("cuda-host", bytes, n, warm, issue, del, 14, &s, &e),
                   XS_INTERNAL);
  free(issue);
  free(del);
  free(bytes);
}

static void test_device(void **st) {
  (void)st;
  char why[512];
  xs_probe_options o;
  memset(&o, 0, sizeof o);
  xs_samples *s = NULL;
  xs_error e;
  if (!xs_cuda_available(why, sizeof why)) {
    /* the reason differs: not built, or built with no device */
    xs_status r = xs_cuda_probe("cuda-host", &o, &s, &e);
    assert_int_equal(r, xs_cuda_built() ? XS_NODEV : XS_NOTBUILT);
    assert_non_null(strstr(e.message, xs_cuda_built() ? "no CUDA device" : "rebuild"));
    printf("skip: %s\n", why);
    skip();
  }
  o.sizes = 8;
  o.repeats = 3;
  o.timeout_s = 20;
  assert_int_equal(xs_cuda_probe("cuda-host", &o, &s, &e), XS_OK);
  xs_fit f;
  assert_int_equal(xs_fit_samples(s, &f, &e), XS_OK);
  printf("cuda-host: drain %.4g B/s, capacity %.4g B\n", f.drain_Bps, f.capacity_B);
  xs_samples_free(s);
}

/* A program shaped as a fused MoE kernel of three workers (a dispatch
 * worker, all SMs, and the finish: a barrier and the combine reduction),
 * as the replay runs programs; variant 1 and 2 differ in the SMs' order
 * (all tiles first, or a combine store after each wave). The planner's
 * per-SM MegaMoE programs use counters and copies, which replays refuse
 * (docs/formats.md "Counters"). */
static xs_program *moe_program(int variant, xs_profile **prof) {
  xs_error e;
  assert_int_equal(xs_profile_load("h200-nvlink", prof, &e), XS_OK);
  xs_program *p = xs_program_new(variant == 1 ? "fused baseline" : "fused interleaved");
  size_t d, sms, fin;
  assert_int_equal(xs_program_add_worker(p, "dispatch", &d, &e), XS_OK);
  assert_int_equal(xs_program_add_worker(p, "sms", &sms, &e), XS_OK);
  assert_int_equal(xs_program_add_worker(p, "finish", &fin, &e), XS_OK);
  char id[16];
  for (int i = 0; i < 6; i++) {
    snprintf(id, sizeof id, "d%d", i);
    assert_int_equal(xs_program_send(p, d, 65536, "nvlink", id, NULL, &e), XS_OK);
  }
  assert_int_equal(xs_program_fence(p, d, &e), XS_OK);
  for (int w = 0; w < 6; w++) {
    snprintf(id, sizeof id, "d%d", w);
    assert_int_equal(xs_program_wait(p, sms, id, &e), XS_OK);
    assert_int_equal(xs_program_compute(p, sms, 2e-5, &e), XS_OK);
    if (variant == 2 || w == 5) {
      snprintf(id, sizeof id, "c%d", w);
      assert_int_equal(xs_program_send(p, sms, variant == 2 ? 131072 : 786432, "nvlink",
                                       id, NULL, &e), XS_OK);
    }
  }
  assert_int_equal(xs_program_fence(p, sms, &e), XS_OK);
  assert_int_equal(xs_program_wait(p, fin, "c5", &e), XS_OK);
  assert_int_equal(xs_program_compute(p, fin, 5e-6, &e), XS_OK);
  assert_int_equal(xs_program_finish(p, &e), XS_OK);
  return p;
}

static void test_replay_plan(void **st) {
  (void)st;
  xs_profile *prof;
  xs_program *p = moe_program(2, &prof);
  xs__gplan g;
  xs_error e;
  assert_int_equal(xs__gplan_build(p, "sms:132, dispatch:4", 0, 0, &g, &e), XS_OK);
  assert_int_equal(g.nctas, 137);
  assert_int_equal(g.threads, 256);
  size_t nw = xs_program_worker_count(p);
  double *sum = calloc(xs_program_send_count(p) + 1, sizeof *sum);
  unsigned *nparts = calloc(xs_program_send_count(p) + 1, sizeof *nparts);
  uint64_t used = 0;
  for (unsigned c = 0; c < g.nctas; c++) {
    size_t w = g.worker[c];
    assert_true(w < nw);
    assert_int_equal(g.count[c], xs_program_op_count(p, w));
    const char *wn = xs_program_worker_name(p, w);
    assert_int_equal(g.worker[c], !strcmp(wn, "dispatch") ? 0 : !strcmp(wn, "sms") ? 1 : 2);
    for (uint32_t i = 0; i < g.count[c]; i++) {
      const xs__gop *o = &g.ops[g.first[c] + i];
      xs_op_info oi;
      xs_program_op(p, w, i, &oi);
      assert_int_equal(o->kind, oi.kind);
      if (oi.kind == XS_OP_COMPUTE)
        assert_true(llabs((long long)o->n - llround(oi.value * 1e9)) == 0);
      if (oi.kind == XS_OP_WAIT)
        assert_int_equal(o->send, oi.send);
      if (oi.kind == XS_OP_SEND) {
        assert_int_equal(o->send, oi.send);
        sum[o->send] += (double)o->n;
        nparts[o->send]++;
        assert_true(o->off + o->n <= g.ring_vectors);
        used += o->n;
      }
    }
  }
  for (size_t s = 0; s < xs_program_send_count(p); s++) {
    assert_int_equal(nparts[s], g.parts[s]);
    assert_true(sum[s] == ceil(xs_program_send_bytes(p, s) / 16));
  }
  /* the parts tile the ring without overlap when it did not wrap */
  assert_false(g.wrapped);
  assert_true(used <= g.ring_vectors);
  free(sum);
  free(nparts);
  xs__gplan_free(&g);
  /* bad widths and threads say what was wrong */
  const char *bad[][2] = {{"sms", "expected WORKER:CTAS"},
                          {"sms:0", "CTA count"},
                          {"sms:12x", "CTA count"},
                          {"nobody:3", "no worker \"nobody\""},
                          {"sms:4000 dispatch:200", "4201 CTAs"}};
  for (size_t k = 0; k < sizeof bad / sizeof bad[0]; k++) {
    assert_int_equal(xs__gplan_build(p, bad[k][0], 0, 0, &g, &e), XS_INVALID);
    if (!strstr(e.message, bad[k][1]))
      fail_msg("width \"%s\": message \"%s\" lacks \"%s\"", bad[k][0], e.message, bad[k][1]);
  }
  assert_int_equal(xs__gplan_build(p, NULL, 48, 0, &g, &e), XS_INVALID);
  assert_non_null(strstr(e.message, "multiple of 32"));
  /* a compute op that would outlast the timeout is refused before any run */
  assert_int_equal(xs__gplan_build(p, NULL, 0, 1e-6, &g, &e), XS_INVALID);
  assert_non_null(strstr(e.message, "timeout"));
  xs_program_free(p);
  xs_profile_free(prof);
}

/* Op times of a result, worked out op by op from its sends' times: the
 * reference the fake kernel stamps come from. */
static void op_times(const xs_program *p, const xs_result *r, size_t w, double *beg,
                     double *end) {
  double t = 0;
  for (size_t i = 0; i < xs_program_op_count(p, w); i++) {
    xs_op_info o;
    xs_program_op(p, w, i, &o);
    beg[i] = t;
    if (o.kind == XS_OP_COMPUTE)
      t += o.value;
    else if (o.kind == XS_OP_SEND) {
      /* the reference keeps time with the evaluator, op by op */
      if (fabs(t - r->sends[o.send].issue_start_s) > 1e-12 * fmax(1, t))
        fail_msg("worker %zu op %zu: reached at %.12g s, burstgap says %.12g s", w, i, t,
                 r->sends[o.send].issue_start_s);
      t = r->sends[o.send].issue_end_s;
    }
    else if (o.kind == XS_OP_WAIT)
      t = fmax(t, r->sends[o.send].deliver_s);
    else
      for (size_t s = 0; s < xs_program_send_count(p); s++)
        if (xs_program_send_worker(p, s) == w && r->sends[s].issue_end_s <= beg[i])
          t = fmax(t, r->sends[s].deliver_s);
    end[i] = t;
  }
}

/* Stamps a kernel would write if the GPU ran the program as burstgap
 * predicts: per CTA a few ns of skew, a 32 ns timer, the host seeing some
 * flags and missing others. The result made of them is burstgap's. */
static void test_replay_fake(void **st) {
  (void)st;
  for (int variant = 1; variant <= 2; variant++) {
    xs_profile *prof;
    xs_program *p = moe_program(variant, &prof);
    xs_result *bg;
    xs_error e;
    assert_int_equal(xs_evaluate(p, prof, XS_MODEL_BURSTGAP, NULL, &bg, &e), XS_OK);
    xs__gplan g;
    assert_int_equal(xs__gplan_build(p, "sms:132", 0, 0, &g, &e), XS_OK);
    size_t ns = xs_program_send_count(p), maxops = 0;
    for (size_t w = 0; w < xs_program_worker_count(p); w++)
      maxops = xs_program_op_count(p, w) > maxops ? xs_program_op_count(p, w) : maxops;
    double *beg = malloc(maxops * sizeof *beg), *end = malloc(maxops * sizeof *end);
    xs__gstamps t;
    memset(&t, 0, sizeof t);
    t.op_ns = calloc(2 * g.nops, sizeof *t.op_ns);
    t.start_ns = calloc(g.nctas, sizeof *t.start_ns);
    t.fence_ns = calloc(ns, sizeof *t.fence_ns);
    t.host_s = calloc(ns, sizeof *t.host_s);
    const uint64_t g0 = 7000000000000ull; /* the GPU's clock is not the host's */
#define TICK(x) (32 * (uint64_t)floor((x) / 32e-9))
    for (unsigned c = 0; c < g.nctas; c++) {
      size_t w = g.worker[c];
      op_times(p, bg, w, beg, end);
      double fin = end[xs_program_op_count(p, w) - 1];
      assert_true(fabs(fin - bg->workers[w].finish_s) <= 1e-12 * fmax(1, fin));
      uint64_t skew = 32 * (uint64_t)(c % 3);
      t.start_ns[c] = g0 + skew;
      for (uint32_t i = 0; i < g.count[c]; i++) {
        t.op_ns[2 * (g.first[c] + i)] = g0 + TICK(beg[i]) + skew;
        t.op_ns[2 * (g.first[c] + i) + 1] = g0 + TICK(end[i]) - skew + 64 * (c == 0);
      }
    }
    for (size_t s = 0; s < ns; s++) {
      t.fence_ns[s] = g0 + TICK(bg->sends[s].deliver_s) - 64;
      t.host_s[s] = s % 5 == 3 ? -1 : bg->sends[s].deliver_s;
    }
    xs_result *m;
    assert_int_equal(xs__gplan_result(p, &g, &t, &m, &e), XS_OK);
    double tol = 200e-9;
    if (fabs(m->makespan_s - bg->makespan_s) > tol)
      fail_msg("variant %d: makespan from stamps %.9g s, burstgap %.9g s", variant,
               m->makespan_s, bg->makespan_s);
    for (size_t s = 0; s < ns; s++) {
      if (fabs(m->sends[s].issue_end_s - bg->sends[s].issue_end_s) > tol ||
          fabs(m->sends[s].issue_start_s - bg->sends[s].issue_start_s) > tol ||
          fabs(m->sends[s].deliver_s - bg->sends[s].deliver_s) > tol)
        fail_msg("variant %d send %zu: issued %.9g / %.9g, delivered %.9g / %.9g", variant, s,
                 m->sends[s].issue_end_s, bg->sends[s].issue_end_s, m->sends[s].deliver_s,
                 bg->sends[s].deliver_s);
    }
    for (size_t w = 0; w < xs_program_worker_count(p); w++) {
      size_t nops = xs_program_op_count(p, w);
      assert_true(fabs(m->workers[w].finish_s - bg->workers[w].finish_s) < tol);
      if (fabs(m->workers[w].compute_s - bg->workers[w].compute_s) > tol * (double)nops)
        fail_msg("variant %d worker %zu: compute %.9g s from stamps, burstgap %.9g s", variant,
                 w, m->workers[w].compute_s, bg->workers[w].compute_s);
    }
    xs_replay_info info;
    xs__gplan_info(&g, &t, &info);
    assert_int_equal(info.ctas, 134);
    assert_true(fabs(info.start_skew_s - 64e-9) < 1e-12);
    assert_true(fabs(info.host_minus_fence_median_s - 64e-9) < 40e-9);
    xs_result_free(m);
    xs_result_free(bg);
    free(t.op_ns);
    free(t.start_ns);
    free(t.fence_ns);
    free(t.host_s);
    free(beg);
    free(end);
    xs__gplan_free(&g);
    xs_program_free(p);
    xs_profile_free(prof);
  }
}

/* Replay on a GPU where there is one; otherwise the reason, and replay
 * asked of a probe-only CUDA backend is refused. */
static void test_replay_device(void **st) {
  (void)st;
  xs_profile *prof;
  xs_program *p = moe_program(2, &prof);
  xs_probe_options o;
  memset(&o, 0, sizeof o);
  o.cuda_widths = "sms:132";
  xs_result *r = NULL;
  xs_error e;
  assert_int_equal(xs_replay(p, "cuda-tma", &o, &r, &e), XS_INVALID);
  assert_non_null(strstr(e.message, "cuda-host, cuda-p2p (\"cuda-tma\" is a probe only)"));
  char why[512];
  if (!xs_cuda_available(why, sizeof why)) {
    assert_int_equal(xs_replay(p, "cuda-host", &o, &r, &e),
                     xs_cuda_built() ? XS_NODEV : XS_NOTBUILT);
    assert_null(r);
    printf("skip: %s\n", why);
    xs_program_free(p);
    xs_profile_free(prof);
    skip();
  }
  xs_replay_info info;
  o.info = &info;
  o.timeout_s = 20;
  assert_int_equal(xs_replay(p, "cuda-host", &o, &r, &e), XS_OK);
  printf("cuda-host replay: makespan %.4g s, %zu of %zu tags missing\n", r->makespan_s,
         info.tags_missing, info.tags_checked);
  assert_true(r->makespan_s > 0);
  xs_result_free(r);
  xs_program_free(p);
  xs_profile_free(prof);
}

int main(void) {
  const struct CMUnitTest tests[] = {cmocka_unit_test(test_plan),
                                     cmocka_unit_test(test_fake_timing),
                                     cmocka_unit_test(test_replay_plan),
                                     cmocka_unit_test(test_replay_fake),
                                     cmocka_unit_test(test_device),
                                     cmocka_unit_test(test_replay_device)};
  return cmocka_run_group_tests(tests, NULL, NULL);
}
