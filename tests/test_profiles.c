/* test_profiles.c: the built-in GPU profiles against their own stated
 * sources. Each derived number is computed again from the published
 * figures its source quotes; numbers a source says are shared (the same
 * silicon, the same per-SM rate, the H200's L2 per SM and clock) are
 * compared across profiles; and every built-in GPU profile plans a MegaMoE
 * layer through the library and the command. docs/profiles.md. */
#define _POSIX_C_SOURCE 200809L /* popen */
#include <ctype.h>
#include <math.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>
#include <jansson.h>

#include "testio.h"
#include "xstage.h"

/* a profile as JSON, and its numbers by key path ("channels.hbm.drain_Bps",
 * "compute.flops_per_s.fp8"); NAN where absent */
static json_t *profile_json(const char *name) {
  xs_profile *p;
  xs_error e;
  if (xs_profile_load(name, &p, &e) != XS_OK)
    fail_msg("%s: %s", name, e.message);
  char *text = xs_profile_to_json(p);
  xs_profile_free(p);
  assert_non_null(text);
  json_error_t je;
  json_t *root = json_loads(text, 0, &je);
  free(text);
  assert_non_null(root);
  return root;
}

static double num(json_t *root, const char *path) {
  char buf[128];
  snprintf(buf, sizeof buf, "%s", path);
  json_t *v = root;
  for (char *tok = strtok(buf, "."); tok && v; tok = strtok(NULL, "."))
    v = json_object_get(v, tok);
  return v && json_is_number(v) ? json_number_value(v) : NAN;
}

static const char *source(json_t *root, const char *path) {
  json_t *v = json_object_get(json_object_get(root, "sources"), path);
  return v ? json_string_value(v) : NULL;
}

static void near(const char *what, double got, double want, double rel) {
  if (!(fabs(got - want) <= rel * fabs(want)))
    fail_msg("%s: the profile has %.6g, its source's figures give %.6g (off by %.2f%%, "
             "allowed %.2f%%)",
             what, got, want, 100 * (got / want - 1), 100 * rel);
}

/* Each number below is derived from published figures its source quotes;
 * computed here again from those figures. The tolerance is the rounding
 * the profile applies (three significant figures). */
static void test_derived_from_quoted_figures(void **st) {
  (void)st;
  static const struct {
    const char *profile, *key;
    double want, rel;
  } rows[] = {
      /* nvbandwidth on a GB200 tray (4 GPUs, 12 ordered pairs), SUM lines */
      {"b200-nvlink", "channels.nvlink.drain_Bps", 2925.66e9 / 4, 0.001},
      {"b200-nvlink", "channels.nvlink.latency_s", 20725.53e-9 / 12 / 2, 0.001},
      {"b200-nvlink", "channels.hbm.drain_Bps", 2 * 13094.41e9 / 4, 0.001},
      {"b200-nvlink", "compute.barrier_s", 4e-6 - 20725.53e-9 / 12 / 2, 0.001},
      /* the same on a GB300 tray */
      {"gb300-nvlink", "channels.nvlink.drain_Bps", 2924.14e9 / 4, 0.001},
      {"gb300-nvlink", "channels.nvlink.latency_s", 20525.53e-9 / 12 / 2, 0.001},
      {"gb300-nvlink", "channels.hbm.drain_Bps", 2 * 13249.68e9 / 4, 0.001},
      {"gb300-nvlink", "compute.barrier_s", 4e-6 - 20525.53e-9 / 12 / 2, 0.001},
      {"gb300-nvlink", "compute.mma_clock_hz", 5.0e15 / (152 * 16384.0), 0.001},
      /* HBM: the datasheet rate times the fraction an H200 reaches */
      {"h20-3e-nvlink", "channels.hbm.drain_Bps", 4.8e12 * (3.89e12 / 4.8e12), 0.001},
      {"h20-nvlink", "channels.hbm.drain_Bps", 4.0e12 * 0.81, 0.001},
      {"h100-nvlink", "channels.hbm.drain_Bps", 3.35e12 * 0.81, 0.002},
      /* an NCCL all-reduce of 1-32 KiB on 8x H100, about 33 us, less the
       * launch */
      {"b200-nvlink", "compute.a2a_fixed_s", 33e-6 - 3e-6, 0.001},
      {"gb300-nvlink", "compute.a2a_fixed_s", 33e-6 - 3e-6, 0.001},
      {"h20-3e-nvlink", "compute.a2a_fixed_s", 33e-6 - 3e-6, 0.001},
  };
  for (size_t i = 0; i < sizeof rows / sizeof rows[0]; i++) {
    json_t *root = profile_json(rows[i].profile);
    char what[160];
    snprintf(what, sizeof what, "%s %s", rows[i].profile, rows[i].key);
    near(what, num(root, rows[i].key), rows[i].want, rows[i].rel);
    json_decref(root);
  }
}

/* Relations the sources state in words, checked on every built-in GPU
 * profile where its source states them. */
static void test_stated_relations(void **st) {
  (void)st;
  json_t *h200 = profile_json("h200-nvlink");
  /* the H200's measured L2 rate per SM and clock, which the other GPUs'
   * l2_Bps scale */
  double l2_sm_clk = num(h200, "compute.l2_Bps") /
                     (num(h200, "compute.sms") * num(h200, "compute.mma_clock_hz"));
  json_decref(h200);
  size_t checked[4] = {0};
  for (size_t g = 0; g < xs_builtin_profile_count(); g++) {
    const char *name = xs_builtin_profile_name(g);
    json_t *root = profile_json(name);
    double sms = num(root, "compute.sms"), clock = num(root, "compute.mma_clock_hz");
    char what[160];
    const char *s = source(root, "channels.nvlink.inject_Bps");
    /* "N SMs x R GB/s": the injection rate is the per-SM rate times the
     * GPU's SMs, and the per-SM rate, where the profile has one, is R */
    double n_sms, per_sm;
    const char *m = s ? strstr(s, " SMs x ") : NULL;
    while (m && m > s && (isdigit((unsigned char)m[-1]) || m[-1] == '.'))
      m--;
    if (m && sscanf(m, "%lf SMs x %lf GB/s", &n_sms, &per_sm) == 2) {
      snprintf(what, sizeof what, "%s SMs in the injection rate's source", name);
      near(what, n_sms, sms, 0);
      snprintf(what, sizeof what, "%s injection rate (SMs x per-SM rate)", name);
      near(what, num(root, "channels.nvlink.inject_Bps"), sms * per_sm * 1e9, 1e-9);
      double w = num(root, "channels.nvlink.worker_inject_Bps");
      snprintf(what, sizeof what, "%s per-SM rate", name);
      if (!isnan(w))
        near(what, w, per_sm * 1e9, 1e-9);
      checked[0]++;
    }
    /* "the datasheet's dense FP8 peak ... over N SMs": FP8 FLOP per SM and
     * clock, 8192 on sm_90 (promotion on CUDA cores), 16384 on SM100 */
    s = source(root, "compute.mma_clock_hz");
    if (s && strncmp(s, "derived", 7) == 0) {
      double per = num(root, "compute.promotion") > 0 ? 8192 : 16384;
      snprintf(what, sizeof what, "%s FP8 peak (SMs x FLOP per clock x clock)", name);
      near(what, num(root, "compute.flops_per_s.fp8"), sms * per * clock, 0.005);
      checked[1]++;
    }
    /* the H200's L2 rate per SM (and clock) scaled to this GPU */
    s = source(root, "compute.l2_Bps");
    if (s && strstr(s, "H200")) {
      snprintf(what, sizeof what, "%s L2 rate (the H200's per SM and clock)", name);
      near(what, num(root, "compute.l2_Bps"), l2_sm_clk * sms * clock, 0.002);
      checked[2]++;
    }
    /* DeepGEMM's 4 us barrier less the signal's one-way latency */
    s = source(root, "compute.barrier_s");
    if (s && strstr(s, "about 4 us")) {
      snprintf(what, sizeof what, "%s barrier + link latency", name);
      near(what, num(root, "compute.barrier_s") + num(root, "channels.nvlink.latency_s"), 4e-6,
           0.005);
      checked[3]++;
    }
    json_decref(root);
  }
  /* the injection rate on every NVLink profile (a100 and a800 too), the
   * MMA clock where the peak is a datasheet's (h100, h200, h800, b200,
   * gb300), the L2 rate and the barrier on h100, h200, h800, h20, h20-3e,
   * b200 and gb300 */
  static const size_t at_least[4] = {9, 5, 7, 7};
  for (int i = 0; i < 4; i++)
    if (checked[i] < at_least[i])
      fail_msg("relation %d checked on %zu profiles, expected at least %zu", i, checked[i],
               at_least[i]);
}

/* The numbers of a profile's channels and compute sections (one level of
 * tables below), as key paths; returns how many (at most max). */
static size_t number_paths(json_t *root, char (*paths)[128], size_t max) {
  static const char *const sect[2] = {"channels", "compute"};
  size_t n = 0;
  for (int s = 0; s < 2; s++) {
    const char *k, *k2;
    json_t *v, *v2;
    json_object_foreach(json_object_get(root, sect[s]), k, v) {
      if (json_is_number(v) && n < max)
        snprintf(paths[n++], 128, "%s.%s", sect[s], k);
      if (json_is_object(v))
        json_object_foreach(v, k2, v2) if (json_is_number(v2) && n < max)
            snprintf(paths[n++], 128, "%s.%s.%s", sect[s], k, k2);
    }
  }
  return n;
}

/* The H20-3e is the H20 with HBM3e: every number is the H20's but the HBM
 * rates and the all-to-all fixed cost (an EP timing the H20 profile keeps),
 * and every source of a shared number says so. */
static void test_h20_3e_is_the_h20(void **st) {
  (void)st;
  static const char *const differ[] = {"compute.hbm_Bps", "channels.hbm.drain_Bps",
                                       "compute.a2a_fixed_s"};
  json_t *a = profile_json("h20-nvlink"), *b = profile_json("h20-3e-nvlink");
  static char paths[128][128];
  size_t n = number_paths(a, paths, 128), same = 0;
  for (size_t i = 0; i < n; i++) {
    int expected_differ = 0;
    for (size_t j = 0; j < sizeof differ / sizeof differ[0]; j++)
      expected_differ |= strcmp(paths[i], differ[j]) == 0;
    double x = num(a, paths[i]), y = num(b, paths[i]);
    const char *src = source(b, paths[i]);
    if (expected_differ) {
      if (x == y)
        fail_msg("h20-3e-nvlink %s: %g, the H20's, where the HBM3e part differs", paths[i], y);
    } else if (!(x == y)) {
      fail_msg("h20-3e-nvlink %s: %g, the H20's is %g (the same silicon)", paths[i], y, x);
    } else if (!src || (!strstr(src, "h20-nvlink") && !strstr(src, "the H20"))) {
      fail_msg("h20-3e-nvlink %s: the source does not say it is the H20's", paths[i]);
    } else {
      same++;
    }
  }
  /* and the H20-3e has no number the H20 lacks */
  static char paths_b[128][128];
  assert_int_equal(number_paths(b, paths_b, 128), n);
  assert_true(same >= 25);
  json_decref(a);
  json_decref(b);
}

/* Every built-in GPU profile with the MoE kernel model's terms plans a
 * MegaMoE layer: each schedule finite and positive, ideal at most burstgap;
 * and the GPUs that differ in one direction only order as they should
 * (a faster HBM never slows the best plan; GB300 has more SMs, a higher FP8
 * peak and more HBM rate than B200, at the same link). */
static double best(const xs_moe_result *r) {
  double t = INFINITY;
  for (int s = 0; s < XS_MOE_SCHEDULES; s++)
    t = fmin(t, r->time_s[s][XS_MODEL_BURSTGAP]);
  return t;
}

static void test_every_gpu_profile_plans(void **st) {
  (void)st;
  static const double tokens[] = {1, 128, 4096};
  size_t planned = 0;
  for (size_t g = 0; g < xs_builtin_profile_count(); g++) {
    xs_profile *p;
    xs_error e;
    assert_int_equal(xs_profile_load(xs_builtin_profile_name(g), &p, &e), XS_OK);
    xs_kernel_costs k;
    xs_profile_kernel_costs(p, &k);
    if (!(k.mma_clock_hz > 0)) {
      xs_profile_free(p);
      continue;
    }
    for (size_t t = 0; t < 3; t++) {
      xs_moe_config c;
      assert_int_equal(xs_moe_preset("deepseek-v3", &c), 0);
      c.tokens = tokens[t];
      xs_moe_result r;
      if (xs_moe_plan(&c, p, &r, &e) != XS_OK)
        fail_msg("%s, %g tokens: %s", xs_profile_name(p), c.tokens, e.message);
      for (int s = 0; s < XS_MOE_SCHEDULES; s++) {
        double bg = r.time_s[s][XS_MODEL_BURSTGAP], id = r.time_s[s][XS_MODEL_IDEAL];
        if (!(isfinite(bg) && bg > 0 && id <= bg * (1 + 1e-9)))
          fail_msg("%s, %g tokens, %s: burstgap %g, ideal %g", xs_profile_name(p), c.tokens,
                   xs_moe_schedule_name((xs_moe_schedule)s), bg, id);
      }
    }
    planned++;
    xs_profile_free(p);
  }
  assert_true(planned >= 7);

  static const char *const pairs[][2] = {{"h20-3e-nvlink", "h20-nvlink"},
                                         {"gb300-nvlink", "b200-nvlink"}};
  for (size_t i = 0; i < 2; i++) {
    xs_profile *fast, *slow;
    xs_error e;
    assert_int_equal(xs_profile_load(pairs[i][0], &fast, &e), XS_OK);
    assert_int_equal(xs_profile_load(pairs[i][1], &slow, &e), XS_OK);
    for (size_t t = 0; t < 3; t++) {
      xs_moe_config c;
      assert_int_equal(xs_moe_preset("deepseek-v4-flash", &c), 0);
      c.tokens = tokens[t];
      xs_moe_result rf, rs;
      assert_int_equal(xs_moe_plan(&c, fast, &rf, &e), XS_OK);
      assert_int_equal(xs_moe_plan(&c, slow, &rs, &e), XS_OK);
      if (!(best(&rf) <= best(&rs) * (1 + 1e-9)))
        fail_msg("%g tokens: %s %.6g us slower than %s %.6g us", c.tokens, pairs[i][0],
                 best(&rf) * 1e6, pairs[i][1], best(&rs) * 1e6);
    }
    xs_profile_free(fast);
    xs_profile_free(slow);
  }
}

/* The command lists the new profiles, shows their sources and plans on
 * them. */
static void test_command(void **st) {
  (void)st;
  char out[1 << 16], err[4096];
  assert_int_equal(xs_test_cli_buf("profiles list", out, sizeof out, err, sizeof err), 0);
  assert_non_null(strstr(out, "h20-3e-nvlink"));
  assert_non_null(strstr(out, "gb300-nvlink"));
  assert_int_equal(xs_test_cli_buf("profiles show gb300-nvlink", out, sizeof out, err,
                                   sizeof err),
                   0);
  assert_non_null(strstr(out, "\"sources\""));
  assert_non_null(strstr(out, "one_to_all_write_sm"));
  const char *names[] = {"h20-3e-nvlink", "gb300-nvlink"};
  for (int i = 0; i < 2; i++) {
    char args[256];
    snprintf(args, sizeof args, "plan megamoe --preset deepseek-v3 --tokens 256 --profile %s",
             names[i]);
    if (xs_test_cli_buf(args, out, sizeof out, err, sizeof err) != 0)
      fail_msg("xstage %s: %s", args, err);
    assert_non_null(strstr(out, "recommended:"));
  }
}

int main(void) {
  const struct CMUnitTest tests[] = {cmocka_unit_test(test_derived_from_quoted_figures),
                                     cmocka_unit_test(test_stated_relations),
                                     cmocka_unit_test(test_h20_3e_is_the_h20),
                                     cmocka_unit_test(test_every_gpu_profile_plans),
                                     cmocka_unit_test(test_command)};
  return cmocka_run_group_tests(tests, NULL, NULL);
}
