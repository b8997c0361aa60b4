/*
 * test_latency.c: the latency floor of the MegaMoE kernels and the
 * prediction intervals, each against a second way of computing it: the
 * timing methods move a kernel's time by exactly its launches; the
 * routing's atomics by exactly their chain; a cold L2's write-back adds
 * the L2's bytes at the HBM's rate to a kernel that streams from HBM; the
 * timing column's words; the interval model against a Monte Carlo of the
 * residuals it assumes (fixed seeds; a failure prints the seed and both
 * values).
 */
#define _POSIX_C_SOURCE 200809L
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <cmocka.h>

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "internal.h"
#include <jansson.h>
#include "plan/moe/moe.h"
#include "testutil.h"

/* one schedule's burstgap time with the kernel's own knobs */
static double predict(const xs_moe_config *c, const xs_profile *p, xs_moe_schedule s) {
  double t[XS_MODEL_COUNT];
  xs_moe_pattern k = {0};
  xs_error e;
  xs_status st = xs_moe_evaluate(c, p, s, &k, t, NULL, &e);
  if (st)
    fprintf(stderr, "%s\n", e.message);
  assert_int_equal(st, XS_OK);
  return t[XS_MODEL_BURSTGAP];
}

static void config(xs_moe_config *c, double tokens, const char *timing) {
  assert_int_equal(xs_moe_preset("deepseek-v4-flash", c), 0);
  c->tokens = tokens;
  snprintf(c->timing, sizeof c->timing, "%s", timing);
}

static int near(double a, double b, double rel, double abs_s) {
  return fabs(a - b) <= rel * fmax(fabs(a), fabs(b)) + abs_s;
}

/* The launches: the device's time has none; a stream adds launch_s at
 * each kernel's start, a graph kernel_gap_s, PDL takes pdl_saving_s off
 * (the split kernel launches twice, the wave kernel once, the lag kernel
 * once with PDL at 256 tokens or fewer). They shift the whole program, so
 * the difference is exact. */
static void test_timing_launches(void **st) {
  (void)st;
  xs_profile *p = xs_test_profile("h200-nvlink");
  xs_kernel_costs k;
  xs_profile_kernel_costs(p, &k);
  static const struct {
    xs_moe_schedule s;
    double launches, pdl;
  } cases[] = {{XS_MOE_FUSED_SPLIT, 2, 0}, {XS_MOE_FUSED_WAVE, 1, 0}, {XS_MOE_FUSED_LAG, 1, 1}};
  for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
    xs_moe_config c;
    config(&c, 64, "device");
    double dev = predict(&c, p, cases[i].s);
    config(&c, 64, "stream");
    double stream = predict(&c, p, cases[i].s);
    config(&c, 64, "graph");
    double graph = predict(&c, p, cases[i].s);
    double want_s = cases[i].launches * k.launch_s - cases[i].pdl * k.pdl_saving_s;
    double want_g = cases[i].launches * k.kernel_gap_s - cases[i].pdl * k.pdl_saving_s;
    if (!near(stream - dev, want_s, 1e-6, 1e-12) || !near(graph - dev, fmax(want_g, 0), 1e-6, 1e-12)) {
      fprintf(stderr, "%s: stream - device %.6g s (want %.6g), graph - device %.6g s (want %.6g)\n",
              xs_moe_schedule_name(cases[i].s), stream - dev, want_s, graph - dev, want_g);
      fail();
    }
  }
  xs_profile_free(p);
}

/* The routing's send-count step: every SM adds to every expert's counter,
 * its dispatch threads ceil(E / threads) each in turn, each counter taking
 * the S SMs' atomics one after another: doubling atomic_s adds that chain
 * once more, before anything else starts. */
static void test_routing_chain(void **st) {
  (void)st;
  xs_profile *p = xs_test_profile("h200-nvlink");
  xs_kernel_costs k;
  xs_profile_kernel_costs(p, &k);
  xs_moe_config c;
  config(&c, 8, "device");
  double a = predict(&c, p, XS_MOE_FUSED_WAVE);
  xs_kernel_costs k2 = k;
  k2.atomic_s = 2 * k.atomic_s;
  xs_error e;
  assert_int_equal(xs_profile_set_kernel_costs(p, &k2, &e), XS_OK);
  double b = predict(&c, p, XS_MOE_FUSED_WAVE);
  /* the SM90 wave port's two dispatch warps: 64 threads, 32 local experts
   * of 256 routed: 4 atomics a thread, 132 SMs */
  double chain = ceil(c.experts / 64) * 132 * k.atomic_s;
  if (!near(b - a, chain, 1e-6, 1e-12)) {
    fprintf(stderr, "doubling atomic_s: +%.6g s, the chain by hand %.6g s\n", b - a, chain);
    fail();
  }
  xs_profile_free(p);
}

/* A cold L2 (flushed by writing): the kernel's first reads evict the
 * flush's dirty lines, which HBM writes back. For a kernel that streams
 * its weights from HBM (the split kernel at 8 tokens: hundreds of MB, HBM
 * bound), that is the L2's bytes more at the HBM's rate, less what the
 * kernel's gaps in HBM use absorb. */
static void test_cold_l2(void **st) {
  (void)st;
  xs_profile *p = xs_test_profile("h200-nvlink");
  xs_kernel_costs k;
  xs_profile_kernel_costs(p, &k);
  const xs_channel *hbm = xs_profile_channel(p, (size_t)xs_profile_find_channel(p, "hbm"));
  xs_moe_config c;
  config(&c, 8, "device");
  double warm = predict(&c, p, XS_MOE_FUSED_SPLIT);
  c.cold_l2 = 1;
  double cold = predict(&c, p, XS_MOE_FUSED_SPLIT);
  double want = k.l2_B / hbm->drain_Bps;
  if (!(cold - warm <= want * 1.0001 && cold - warm >= 0.6 * want)) {
    fprintf(stderr, "cold - warm %.6g s, the L2's %.3g B at %.3g B/s is %.6g s\n", cold - warm,
            k.l2_B, hbm->drain_Bps, want);
    fail();
  }
  xs_profile_free(p);
}

/* the timing column's words */
static void test_timing_text(void **st) {
  (void)st;
  static const struct {
    const char *text, *timing;
    double cold;
  } cases[] = {{"Kineto device time; mean over 8 ranks", "device", 1},
               {"cold L2; per-rank median; max over ranks", "stream", 1},
               {"DeepEP V2 + grouped GEMMs under a CUDA graph (median)", "graph", 0},
               {"cuda events on rank0, total of 500 iters", "stream", 0},
               {"in-kernel event trace (DG_SM90_TRACE_PTR)", "device", 0},
               {"", "stream", 0}};
  for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
    const char *t = xs__moe_timing_of_text(cases[i].text);
    double cold = xs__moe_cold_of_text(cases[i].text);
    if (strcmp(t, cases[i].timing) || cold != cases[i].cold) {
      fprintf(stderr, "\"%s\": %s, cold %g (want %s, cold %g)\n", cases[i].text, t, cold,
              cases[i].timing, cases[i].cold);
      fail();
    }
  }
}

/* xorshift and Box-Muller: seeded, so a failure repeats */
static unsigned long long rng_state;
static double uniform(void) {
  rng_state ^= rng_state << 13;
  rng_state ^= rng_state >> 7;
  rng_state ^= rng_state << 17;
  return ((double)(rng_state >> 11) + 0.5) / 9007199254740992.0;
}
static double gauss(void) {
  return sqrt(-2 * log(uniform())) * cos(6.283185307179586 * uniform());
}

/* The interval model against the residuals it assumes: sources with
 * offsets drawn around a cell's mean (tau), rows around their source's
 * offset (sw). Leaving each source out in turn, its rows should fall
 * inside their 80% interval about 80% of the time, pooled over many drawn
 * tables: 70-90% here, with the half-width the spread asks for. */
static void test_intervals_monte_carlo(void **st) {
  (void)st;
  const unsigned long long seed = 20261206;
  rng_state = seed;
  const double tau = 0.08, sw = 0.05, mu = -0.05;
  enum { SOURCES = 5, ROWS = 6, DRAWS = 300 };
  xs__resid rows[SOURCES * ROWS];
  static char names[SOURCES][16];
  size_t inside = 0, total = 0;
  double width = 0;
  for (int d = 0; d < DRAWS; d++) {
    size_t n = 0;
    for (int s = 0; s < SOURCES; s++) {
      snprintf(names[s], sizeof names[s], "source %d", s);
      double off = mu + tau * gauss();
      for (int r = 0; r < ROWS; r++)
        rows[n++] = (xs__resid){"megamoe", names[s], "fused-split", 0, 8,
                                100 * exp(off + sw * gauss()), 100};
    }
    for (size_t i = 0; i < n; i++) {
      xs_interval iv;
      xs_error e;
      assert_int_equal(xs__interval_of(rows, n, "megamoe", "fused-split", 8, rows[i].source,
                                       &iv, &e), XS_OK);
      double x = rows[i].measured / rows[i].predicted;
      inside += x >= iv.low && x <= iv.high;
      width += (iv.high - iv.low) / 2;
      total++;
    }
  }
  double cover = (double)inside / (double)total;
  /* the spread a new source's row has: sqrt(sw^2 + tau^2 (1 + 1/m)) */
  double s = sqrt(sw * sw + tau * tau * (1 + 1.0 / (SOURCES - 1)));
  double want_hw = sinh(1.2816 * s) * exp(mu); /* (e^(mu+zs) - e^(mu-zs)) / 2 */
  if (!(cover >= 0.7 && cover <= 0.9) || !near(width / (double)total, want_hw, 0.35, 0)) {
    fprintf(stderr, "seed %llu: %.1f%% inside the 80%% intervals (want 70-90%%), mean "
                    "half-width %.4f (the model's %.4f)\n",
            seed, 100 * cover, width / (double)total, want_hw);
    fail();
  }
}

/* a cell with too few rows takes the family's pooled model; a band is
 * its family's */
static void test_interval_pooled(void **st) {
  (void)st;
  xs__resid rows[8];
  for (int i = 0; i < 8; i++)
    rows[i] = (xs__resid){"megamoe", i < 4 ? "a" : "b", i < 7 ? "fused-split" : "fused-lag", 0,
                          i < 7 ? 8 : 4096, 100 * (1 + 0.05 * (i - 3)), 100};
  xs_interval iv;
  xs_error e;
  assert_int_equal(xs__interval_of(rows, 8, "megamoe", "fused-lag", 4096, NULL, &iv, &e), XS_OK);
  assert_true(iv.pooled && iv.rows == 8 && iv.low < 1 && iv.high > 1);
  assert_int_equal(xs__interval_of(rows, 8, "megamoe", "fused-split", 16, NULL, &iv, &e), XS_OK);
  assert_true(!iv.pooled && iv.rows == 7 && iv.sources == 2);
  assert_int_equal(xs__interval_band("megamoe", 64), 0);
  assert_int_equal(xs__interval_band("megamoe", 65), 1);
  assert_int_equal(xs__interval_band("ep", 128), 0);
  assert_int_equal(xs__interval_band("ep", 1025), 2);
  assert_int_equal(xs__interval_band("flashattn", 16384), 1);
  /* the built-in table answers for every family */
  static const char *const fam[] = {"megamoe", "ep", "flashattn"};
  for (int f = 0; f < 3; f++) {
    assert_int_equal(xs_prediction_interval(fam[f], "no-such-arm", 100, &iv, &e), XS_OK);
    assert_true(iv.pooled && iv.low < iv.high && iv.rows > 0);
  }
  assert_int_equal(xs_prediction_interval("tpu", "x", 1, &iv, &e), XS_INVALID);
}

/* The residual table's reader (data/residuals.csv's format): comments,
 * CRLF, quoted fields with commas and doubled quotes; a line that is not
 * eight fields, or whose quotes are wrong, refused with its line (and
 * column). */
static void test_resid_table(void **st) {
  (void)st;
  static const char ok[] =
      "kind,family,source,gpu,arm,size,measured,predicted\n"
      "# a comment\n"
      "row,megamoe,\"DeepGEMM PR 440, \"\"H800\"\"\",H800,fused-lag,4096,120.5,110\r\n"
      "pair,megamoe,src,H100,fused-split/sequential,64,1.25,1e0\n";
  xs__resid_table t;
  xs_error e;
  assert_int_equal(xs__resid_table_parse(ok, strlen(ok), &t, &e), XS_OK);
  assert_int_equal(t.nrows, 2);
  assert_string_equal(t.rows[0].source, "DeepGEMM PR 440, \"H800\"");
  assert_string_equal(t.rows[0].arm, "fused-lag");
  assert_true(t.rows[0].size == 4096 && t.rows[0].measured == 120.5 && t.rows[0].predicted == 110);
  assert_true(t.rows[1].pair && !strcmp(t.rows[1].arm, "pair") && t.rows[1].predicted == 1);
  xs__resid_table_free(&t);
  static const struct {
    const char *line, *want;
  } bad[] = {{"row,megamoe,\"open,H800,fused-lag,1,2,3", "residuals:2:1: a quoted field is not closed"},
             {"row,megamoe,a\"b,H800,fused-lag,1,2,3", "residuals:2:14: a stray quote"},
             {"row,megamoe,\"a\"b,H800,fused-lag,1,2,3", "residuals:2:16: a stray quote"},
             {"row,megamoe,a,H800,fused-lag,1,2", "residuals:2: expected kind,family"},
             {"row,megamoe,a,H800,fused-lag,1,2,3,4", "residuals:2: expected kind,family"},
             {"row,megamoe,a,H800,fused-lag,1,2,x", "residuals:2: expected kind,family"},
             {"row,megamoe,a,H800,fused-lag,1,0,3", "residuals:2: expected kind,family"}};
  for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
    char text[256];
    snprintf(text, sizeof text, "kind,family,source,gpu,arm,size,measured,predicted\n%s\n",
             bad[i].line);
    if (xs__resid_table_parse(text, strlen(text), &t, &e) != XS_INVALID ||
        strncmp(e.message, bad[i].want, strlen(bad[i].want)))
      fail_msg("\"%s\": got \"%s\", want \"%s...\"", bad[i].line, e.message, bad[i].want);
  }
}

/* A plan's verdict: the ratio of the runner-up over the chosen with the
 * interval of ratios from the built-in pairs, clear only when its low end
 * is above 1; and the JSON's intervals are the schedule's cell's interval
 * times its time (both computed a second way here). */
static void test_verdict(void **st) {
  (void)st;
  xs_error e;
  xs_interval ri;
  assert_int_equal(xs_ratio_interval("megamoe", 64, &ri, &e), XS_OK);
  assert_true(ri.low < 1 && ri.high > 1 && ri.rows >= 3);
  xs_moe_pick p;
  memset(&p, 0, sizeof p);
  p.tokens = 64;
  p.chosen.time_s = 100e-6;
  p.runner_up.schedule = XS_MOE_SEQUENTIAL;
  double far = 1.05 / ri.low, near = 1.0 / ri.low * 0.95;
  xs_moe_verdict v;
  p.runner_up.time_s = 100e-6 * far;
  assert_int_equal(xs_moe_verdict_of(&p, &v, &e), XS_OK);
  assert_int_equal(v.clear, 1);
  assert_true(fabs(v.low - far * ri.low) < 1e-12 && fabs(v.high - far * ri.high) < 1e-12);
  p.runner_up.time_s = 100e-6 * near;
  assert_int_equal(xs_moe_verdict_of(&p, &v, &e), XS_OK);
  assert_int_equal(v.clear, 0);
  p.runner_up.time_s = NAN;
  assert_int_equal(xs_moe_verdict_of(&p, &v, &e), XS_OK);
  assert_int_equal(v.clear, -1);
  assert_int_equal(xs_moe_verdict_of(NULL, &v, &e), XS_INVALID);

  xs_moe_config c;
  xs_moe_preset("glm", &c);
  c.tokens = 64;
  xs_profile *prof = xs_test_profile("h200-nvlink");
  char *js;
  assert_int_equal(xs_moe_plan_json(&c, prof, 0.01, 0, 0, NULL, &js, &e), XS_OK);
  json_error_t je;
  json_t *doc = json_loads(js, 0, &je);
  assert_non_null(doc);
  json_t *sch = json_object_get(doc, "schedules");
  for (int k = 0; k < XS_MOE_SCHEDULES; k++) {
    json_t *o = json_object_get(sch, xs_moe_schedule_name((xs_moe_schedule)k));
    double t = json_real_value(json_object_get(o, "burstgap_s"));
    json_t *iv = json_object_get(o, "interval_us");
    xs_interval want;
    assert_int_equal(xs_moe_interval(k, 64, &want, &e), XS_OK);
    double lo = json_real_value(json_array_get(iv, 0)), hi = json_real_value(json_array_get(iv, 1));
    if (fabs(lo / (t * want.low * 1e6) - 1) > 1e-9 || fabs(hi / (t * want.high * 1e6) - 1) > 1e-9)
      fail_msg("%s: interval %g-%g us, want %g-%g", xs_moe_schedule_name((xs_moe_schedule)k), lo,
               hi, t * want.low * 1e6, t * want.high * 1e6);
  }
  json_t *verdict = json_object_get(json_object_get(doc, "recommended"), "verdict");
  assert_non_null(verdict);
  const char *call = json_string_value(json_object_get(verdict, "call"));
  double rlo = json_real_value(json_array_get(json_object_get(verdict, "ratio_interval"), 0));
  assert_string_equal(call, rlo > 1 ? "clear" : "too close to call");
  json_decref(doc);
  free(js);
  xs_profile_free(prof);
}

int main(void) {
  const struct CMUnitTest tests[] = {cmocka_unit_test(test_timing_launches),
                                     cmocka_unit_test(test_routing_chain),
                                     cmocka_unit_test(test_cold_l2),
                                     cmocka_unit_test(test_timing_text),
                                     cmocka_unit_test(test_intervals_monte_carlo),
                                     cmocka_unit_test(test_interval_pooled),
                                     cmocka_unit_test(test_resid_table),
                                     cmocka_unit_test(test_verdict)};
  return cmocka_run_group_tests(tests, NULL, NULL);
}
