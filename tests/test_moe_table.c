/*
 * test_moe_table.c: knob tables. The stable choice changes only where
 * keeping the previous one would cost more than the tolerance (checked
 * against options evaluated afresh at each point), lookups agree with a
 * linear search over the buckets, the generated C header compiles with
 * warnings as errors and its lookup agrees with `xstage plan --tokens-grid
 * --json` at every grid point, and the sensitivity ranks every number of
 * each GPU profile, one of them checked by moving it by hand.
 */
#define _POSIX_C_SOURCE 200809L
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <cmocka.h>

#include <jansson.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "testio.h"
#include "testutil.h"
#include "internal.h"


/* the options at one token count, and the fastest time among them */
static double options_at(const xs_moe_config *c, const xs_profile *prof,
                         double tokens, xs_moe_option *o, size_t *n) {
  xs_moe_config at = *c;
  at.tokens = tokens;
  xs_error e;
  if (xs_moe_options(&at, prof, 0, o, n, NULL, &e))
    fail_msg("options at %g: %s", tokens, e.message);
  double best = INFINITY;
  for (size_t i = 0; i < *n; i++)
    best = fmin(best, o[i].time_s);
  return best;
}

static void test_stable_over_tokens(void **st) {
  (void)st;
  xs_profile *prof = xs_test_profile("h800-nvlink");
  xs_moe_config c;
  xs_moe_preset("deepseek-v3", &c);
  const double tol = 0.01;
  double grid[64];
  for (int i = 0; i < 64; i++)
    grid[i] = 64.0 * (i + 1);
  xs_moe_table_options to = {grid, 64, 0, 0, tol, 0};
  xs_moe_table *t;
  xs_error e;
  if (xs_moe_plan_table(&c, prof, &to, &t, &e))
    fail_msg("%s", e.message);
  assert_int_equal(xs_moe_table_size(t), 64);
  size_t changes = 0, raw = 0, fastest = SIZE_MAX;
  for (size_t i = 0; i < 64; i++) {
    const xs_moe_pick *p = xs_moe_table_pick(t, i);
    xs_moe_option o[XS_MOE_MAX_OPTIONS];
    size_t n;
    double best = options_at(&c, prof, grid[i], o, &n);
    size_t f = 0;
    for (size_t k = 1; k < n; k++)
      f = o[k].time_s < o[f].time_s ? k : f;
    raw += fastest != SIZE_MAX && fastest != o[f].schedule * 64u + o[f].rule;
    fastest = o[f].schedule * 64u + o[f].rule;
    if (!(p->chosen.time_s <= best * (1 + tol)))
      fail_msg("%g tokens: chosen %s/%s %.9g s, fastest %.9g s", grid[i],
               xs_moe_schedule_name(p->chosen.schedule),
               xs_moe_rule_name(p->chosen.schedule, p->chosen.rule),
               p->chosen.time_s, best);
    size_t near = 0;
    for (size_t k = 0; k < n; k++)
      near += o[k].time_s <= best * (1 + tol);
    assert_int_equal(near, p->near);
    if (i == 0)
      continue;
    const xs_moe_option *prev = &xs_moe_table_pick(t, i - 1)->chosen;
    if (xs_moe_same_choice(prev, &p->chosen))
      continue;
    changes++;
    /* a change: the previous choice, evaluated afresh here, is out */
    for (size_t k = 0; k < n; k++)
      if (o[k].schedule == prev->schedule && o[k].rule == prev->rule &&
          o[k].time_s <= best * (1 + tol))
        fail_msg("%g tokens: changed from %s/%s though it takes %.9g s, "
                 "within %g of the fastest %.9g s", grid[i],
                 xs_moe_schedule_name(prev->schedule),
                 xs_moe_rule_name(prev->schedule, prev->rule), o[k].time_s, tol,
                 best);
    print_message("# %g tokens: %s/%s -> %s/%s\n", grid[i],
                  xs_moe_schedule_name(prev->schedule),
                  xs_moe_rule_name(prev->schedule, prev->rule),
                  xs_moe_schedule_name(p->chosen.schedule),
                  xs_moe_rule_name(p->chosen.schedule, p->chosen.rule));
  }
  print_message("# %zu changes over 64 grid points; the fastest option changed %zu times\n",
                changes, raw);
  /* the options within the tolerance of each other trade places as the
   * token blocks fill the SMs' waves: the table keeps a choice through
   * that, changing at most half as often as the fastest option */
  assert_true(raw >= 4 && 2 * changes <= raw + 1);
  xs_moe_table_free(t);
  xs_profile_free(prof);
}

static void test_lookup_buckets(void **st) {
  (void)st;
  xs_profile *prof = xs_test_profile("h100-nvlink");
  xs_moe_config c;
  xs_moe_preset("qwen3-235b", &c);
  xs_moe_table_options to = {NULL, 0, 16, 2048, 0.01, 0};
  xs_moe_table *t;
  xs_error e;
  if (xs_moe_plan_table(&c, prof, &to, &t, &e))
    fail_msg("%s", e.message);
  size_t n = xs_moe_table_size(t);
  assert_true(n >= 2);
  for (size_t i = 0; i < n; i++) {
    const xs_moe_pick *p = xs_moe_table_pick(t, i);
    assert_ptr_equal(xs_moe_plan_lookup(t, p->tokens), p);
    assert_true(p->lo <= p->tokens);
    if (i)
      assert_true(p->lo > xs_moe_table_pick(t, i - 1)->tokens);
  }
  for (double tk = 1; tk <= 3000; tk += 7) {
    size_t want = 0; /* a linear search: the last lo <= tk */
    for (size_t i = 0; i < n; i++)
      if (xs_moe_table_pick(t, i)->lo <= tk)
        want = i;
    if (xs_moe_plan_lookup(t, tk) != xs_moe_table_pick(t, want))
      fail_msg("lookup(%g): row %td, a linear search says %zu", tk,
               xs_moe_plan_lookup(t, tk) - xs_moe_table_pick(t, 0), want);
  }
  xs_moe_table_free(t);
  xs_profile_free(prof);
}

/* How sure a recommendation is: the finer grid's best is never slower
 * than the chosen option, is what evaluating its knobs gives, and "holds"
 * says whether it beats the choice by more than the tolerance; the
 * runner-up's margin is its time over the chosen's. */
static void test_certainty(void **st) {
  (void)st;
  xs_profile *prof = xs_test_profile("h200-nvlink");
  const char *presets[] = {"deepseek-v4-flash", "glm", "qwen3.5"};
  const double tokens[] = {64, 1024, 4096};
  const double tol = 0.01;
  size_t refined = 0;
  for (int i = 0; i < 3; i++)
    for (int t = 0; t < 3; t++) {
      xs_moe_config c;
      xs_moe_preset(presets[i], &c);
      c.tokens = tokens[t];
      xs_moe_pick pick;
      xs_moe_certainty cert;
      xs_error e;
      assert_int_equal(xs_moe_recommend(&c, prof, tol, 0, &pick, &e), XS_OK);
      assert_int_equal(xs_moe_certainty_of(&c, prof, &pick, tol, &cert, &e), XS_OK);
      const xs_moe_option *ch = &pick.chosen;
      assert_true(cert.finer.time_s <= ch->time_s);
      assert_true(cert.holds == !(cert.finer.time_s < ch->time_s * (1 - tol)));
      if (!isnan(pick.runner_up.time_s))
        assert_true(fabs(cert.runner_up_margin - (pick.runner_up.time_s / ch->time_s - 1)) < 1e-12);
      if (cert.settings) {
        refined++;
        double tm[XS_MODEL_COUNT];
        xs_moe_pattern k = cert.finer.knobs;
        assert_int_equal(xs_moe_evaluate(&c, prof, ch->schedule, &k, tm, NULL, &e), XS_OK);
        if (fabs(tm[0] / cert.finer.time_s - 1) > 1e-12)
          fail_msg("%s T=%g: finer %.17g s, evaluated again %.17g s", presets[i], tokens[t],
                   cert.finer.time_s, tm[0]);
      }
    }
  assert_true(refined > 0);
  xs_profile_free(prof);
}

static void test_bad_table_options(void **st) {
  (void)st;
  xs_profile *prof = xs_test_profile("h800-nvlink");
  xs_moe_config c;
  xs_moe_preset("deepseek-v3", &c);
  xs_moe_table *t = NULL;
  xs_error e;
  double down[2] = {128, 64}, frac[1] = {1.5};
  xs_moe_table_options bad[] = {{down, 2, 0, 0, 0.01, 0},
                                {frac, 1, 0, 0, 0.01, 0},
                                {NULL, 0, 64, 32, 0.01, 0},
                                {NULL, 0, 64, 128, -1, 0},
                                {NULL, 0, 64, 128, 0.01, 1u << 9}};
  for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
    assert_int_equal(xs_moe_plan_table(&c, prof, &bad[i], &t, &e), XS_INVALID);
    assert_null(t);
    print_message("# refused: %s\n", e.message);
  }
  xs_profile_free(prof);
}

/* The header from `xstage plan --emit-header`, compiled with warnings as
 * errors into a program that prints its lookups; they must equal the
 * --json table of the same command at every grid point. */
static void test_header_agrees_with_plan(void **st) {
  (void)st;
  char dir[] = "/tmp/xstage-header-XXXXXX";
  assert_non_null(mkdtemp(dir));
  char cmd[2048];
  snprintf(cmd, sizeof cmd,
           "%s plan megamoe --preset deepseek-v3 --profile h800-nvlink "
           "--tokens-grid 64:1024:64,1536,2048,4096 --emit-header %s/knobs.h "
           "--header-prefix moe_knobs --json",
           XSTAGE_BIN, dir);
  FILE *f = popen(cmd, "r");
  assert_non_null(f);
  char *text = xs_test_read_stream(f, NULL);
  assert_int_equal(pclose(f), 0);
  json_error_t je;
  json_t *doc = json_loads(text, 0, &je);
  free(text);
  assert_non_null(doc);
  json_t *grid = json_object_get(doc, "grid");
  assert_int_equal(json_array_size(grid), 19);

  snprintf(cmd, sizeof cmd, "%s/check.c", dir);
  f = fopen(cmd, "w");
  assert_non_null(f);
  fprintf(f,
          "#include <stdio.h>\n#include <stdlib.h>\n#include \"knobs.h\"\n"
          "int main(int argc, char **argv) {\n"
          "  for (int i = 1; i < argc; i++) {\n"
          "    const moe_knobs_knobs *k = moe_knobs_lookup(strtoul(argv[i], 0, 10));\n"
          "    printf(\"%%s %%s %%u %%u %%u %%u %%u %%u %%.6f %%s %%d\\n\", k->schedule_name,\n"
          "           k->rule, k->block_m, k->block_n,\n"
          "           k->experts_per_wave, k->warmup, k->lag, k->group,\n"
          "           k->predicted_us, k->kernel, k->proposal);\n"
          "  }\n  return 0;\n}\n");
  fclose(f);
  /* a second unit that includes it and calls nothing: no unused warnings */
  snprintf(cmd, sizeof cmd, "%s/other.c", dir);
  f = fopen(cmd, "w");
  assert_non_null(f);
  fprintf(f, "#include \"knobs.h\"\n#include \"knobs.h\"\nint other(void);\n"
             "int other(void) { return MOE_KNOBS_ROWS; }\n");
  fclose(f);
  snprintf(cmd, sizeof cmd,
           "cc -std=c11 -Wall -Wextra -Werror -pedantic -o %s/check %s/check.c "
           "%s/other.c",
           dir, dir, dir);
  if (system(cmd) != 0)
    fail_msg("the header did not compile: %s", cmd);
  size_t len = (size_t)snprintf(cmd, sizeof cmd, "%s/check", dir);
  for (size_t i = 0; i < json_array_size(grid); i++)
    len += (size_t)snprintf(cmd + len, sizeof cmd - len, " %.0f",
                            json_number_value(json_object_get(
                                json_array_get(grid, i), "tokens")));
  f = popen(cmd, "r");
  assert_non_null(f);
  for (size_t i = 0; i < json_array_size(grid); i++) {
    json_t *row = json_array_get(grid, i);
    json_t *ch = json_object_get(row, "chosen");
    json_t *k = json_object_get(ch, "knobs");
    char want[512], got[512];
    /* a knob the schedule lacks is absent from --json, 0 in the header */
    json_t *kern = json_object_get(ch, "kernel");
    snprintf(want, sizeof want, "%s %s %lld %lld %lld %lld %lld %lld %.6f %s %d\n",
             json_string_value(json_object_get(ch, "schedule")),
             json_string_value(json_object_get(ch, "rule")),
             json_integer_value(json_object_get(k, "block_m")),
             json_integer_value(json_object_get(k, "block_n")),
             json_integer_value(json_object_get(k, "experts_per_wave")),
             json_integer_value(json_object_get(k, "warmup")),
             json_integer_value(json_object_get(k, "lag")),
             json_integer_value(json_object_get(k, "group")),
             json_number_value(json_object_get(ch, "time_s")) * 1e6,
             json_string_value(json_object_get(kern, "label")),
             json_is_string(json_object_get(kern, "proposal")));
    assert_non_null(fgets(got, sizeof got, f));
    if (strcmp(want, got) != 0)
      fail_msg("grid point %zu: plan --json says %s  the header's lookup %s", i,
               want, got);
  }
  assert_int_equal(pclose(f), 0);
  json_decref(doc);
  snprintf(cmd, sizeof cmd, "rm -rf %s", dir);
  assert_int_equal(system(cmd), 0);
}

static void test_sensitivity(void **st) {
  (void)st;
  static const char *gpus[] = {"h100-nvlink", "h200-nvlink", "h800-nvlink",
                               "h20-nvlink", "b200-nvlink"};
  for (size_t g = 0; g < 5; g++) {
    xs_profile *prof = xs_test_profile(gpus[g]);
    xs_moe_config c;
    xs_moe_preset("deepseek-v3", &c);
    c.tokens = 512;
    xs_moe_pick base;
    xs_moe_sensitivity s[XS_MOE_SENS_MAX];
    size_t n;
    xs_error e;
    if (xs_moe_sensitivity_run(&c, prof, 0.01, 0, &base, s, &n, &e))
      fail_msg("%s: %s", gpus[g], e.message);
    assert_true(n >= 8);
    assert_true(s[0].score > 0.01);
    for (size_t i = 0; i < n; i++) {
      if (i)
        assert_true(s[i - 1].score >= s[i].score);
      if (!xs_profile_number_source(prof, s[i].param))
        fail_msg("%s: %s has no source", gpus[g], s[i].param);
    }
    print_message("# %s: %s first (%+.1f%% at x%.3g), then %s\n", gpus[g],
                  s[0].param, s[0].time_change[0] * 100, s[0].factor[0], s[1].param);
    for (size_t i = 0; i < n; i++) {
      /* the range follows the source's kind (docs/tune.md "Sensitivity") */
      const char *src = xs_profile_number_source(prof, s[i].param);
      assert_true(!strncmp(src, s[i].kind, strlen(s[i].kind)) && s[i].kind[0]);
      if (!strcmp(s[i].kind, "lead") && strstr(s[i].param, "capacity_B")) {
        assert_true(fabs(s[i].lo * s[i].value - 65536) < 1e-6);
        assert_true(fabs(s[i].hi * s[i].value - 65536.0 * xs_profile_sms(prof)) < 1e-3);
      } else if (!strcmp(s[i].kind, "lead")) {
        assert_true(fabs(s[i].lo * 3 - 1) < 1e-12 && fabs(s[i].hi - 3) < 1e-12);
      } else if (!strcmp(s[i].kind, "measurement")) {
        assert_true(s[i].lo < 1 && s[i].hi > 1 && fabs(s[i].lo + s[i].hi - 2) < 1e-12);
      } else if (!strcmp(s[i].kind, "datasheet") && strstr(s[i].param, "_Bps")) {
        assert_true(s[i].lo == 0.7 && s[i].hi == 1);
        for (int f = 0; f < XS_MOE_SENS_FACTORS; f++)
          assert_true(s[i].factor[f] < 1); /* the peak itself is no point */
      }
      assert_true(fabs(s[i].factor[0] / s[i].lo - 1) < 1e-12);
      assert_true(s[i].settle[0]);
    }
    /* a second way: the link's drain moved by hand, through JSON, to the
     * row's lowest factor */
    int checked = 0;
    for (size_t i = 0; i < n; i++) {
      size_t link = xs_profile_default_channel(prof);
      char key[128];
      snprintf(key, sizeof key, "channels.%s.drain_Bps", xs_profile_channel_name(prof, link));
      if (strcmp(s[i].param, key) != 0)
        continue;
      char *text = xs_profile_to_json(prof);
      xs_profile *q;
      assert_int_equal(xs_profile_parse(text, strlen(text), NULL, &q, &e), XS_OK);
      free(text);
      xs_channel ch = *xs_profile_channel(q, link);
      ch.drain_Bps *= s[i].factor[0];
      /* built from its parts: the channels (the link moved), then the
       * compute section, which brings the "hbm" channel along */
      xs_profile *r = xs_profile_new("moved", "");
      for (size_t k = 0; k < xs_profile_channel_count(q); k++)
        if (strcmp(xs_profile_channel_name(q, k), "hbm"))
          assert_int_equal(xs_profile_add_channel(r, xs_profile_channel_name(q, k),
                                                  k == link ? &ch : xs_profile_channel(q, k),
                                                  &e), XS_OK);
      assert_int_equal(xs_profile_copy_compute(r, q, &e), XS_OK);
      assert_int_equal(xs_profile_set_default_channel(r, xs_profile_channel_name(q, link), &e),
                       XS_OK);
      double tm;
      assert_int_equal(xs__moe_time(&c, r, base.chosen.schedule,
                                    &base.chosen.knobs, &tm, &e), XS_OK);
      double want = tm / base.chosen.time_s - 1;
      if (fabs(want - s[i].time_change[0]) > 1e-9)
        fail_msg("%s: link drain x%g: sensitivity says %+.9f, by hand %+.9f", gpus[g],
                 s[i].factor[0], s[i].time_change[0], want);
      checked = 1;
      xs_profile_free(q);
      xs_profile_free(r);
    }
    assert_true(checked);
    xs_profile_free(prof);
  }
}

/* The work a table or a sensitivity run estimates, computed again by
 * hand (each evaluation: the config's GEMM tiles plus 32768): a limit one
 * below it is refused before any plan, one at it lets the estimate pass,
 * and the counted work then stops a table whose bisection runs past. */
static double work_at(const xs_moe_config *c, double tokens) {
  xs_moe_config at = *c;
  at.tokens = tokens;
  return xs_moe_tiles(&at) + 32768;
}

static void test_work_limit(void **st) {
  (void)st;
  xs_profile *prof = xs_test_profile("h800-nvlink");
  xs_moe_config c;
  xs_moe_preset("deepseek-v3", &c);
  xs_moe_table *t = NULL;
  xs_error e;
  double grid[2] = {16, 4096};
  xs_moe_table_options o = {grid, 2, 0, 0, 0.01, 0};
  double est = work_at(&c, 16) + work_at(&c, 4096);
  assert_int_equal(xs__moe_plan_table_within(&c, prof, &o, est - 1, &t, &e), XS_INVALID);
  assert_null(t);
  if (!strstr(e.message, "a table of 2 grid points from 16 to 4096 tokens: about"))
    fail_msg("estimate %g, limit %g: %s", est, est - 1, e.message);
  /* without the limit, the two choices differ, so the table bisects
   * between them: the first midpoint passes a limit of the estimate */
  assert_int_equal(xs_moe_plan_table(&c, prof, &o, &t, &e), XS_OK);
  assert_false(xs_moe_same_choice(&xs_moe_table_pick(t, 0)->chosen,
                                  &xs_moe_table_pick(t, 1)->chosen));
  xs_moe_table_free(t);
  t = NULL;
  assert_int_equal(xs__moe_plan_table_within(&c, prof, &o, est, &t, &e), XS_INVALID);
  assert_null(t);
  char want[160];
  snprintf(want, sizeof want, "its plans passed %.3g GEMM tiles",
           est + work_at(&c, floor((16 + 4096) / 2)));
  if (!strstr(e.message, want))
    fail_msg("want \"%s\" in: %s", want, e.message);
  /* a range (32 points an octave) is estimated at twice its points */
  xs_moe_table_options r = {NULL, 0, 64, 128, 0.01, 0};
  double rest = 0;
  for (int i = 0; i <= 32; i++)
    rest += 2 * work_at(&c, round(64 * exp2(i / 32.0)));
  assert_int_equal(xs__moe_plan_table_within(&c, prof, &r, rest - 1, &t, &e), XS_INVALID);
  assert_non_null(strstr(e.message, "a table of 33 grid points from 64 to 128 tokens"));
  /* the sensitivity: 4 x numbers + 1 plans at the config's tokens */
  c.tokens = 256;
  xs_moe_pick base;
  xs_moe_sensitivity s[XS_MOE_SENS_MAX];
  size_t n;
  assert_int_equal(xs_moe_sensitivity_run(&c, prof, 0.01, 0, &base, s, &n, &e), XS_OK);
  double sest = (double)(4 * n + 1) * work_at(&c, 256);
  assert_int_equal(xs__moe_sensitivity_within(&c, prof, 0.01, 0, sest - 1, &base, s, &n,
                                              &e), XS_INVALID);
  assert_int_equal(n, 0);
  assert_non_null(strstr(e.message, "sensitivity: "));
  xs_profile_free(prof);
}

/* A profile with more numbers than the rows a sensitivity run gives is
 * refused, naming how many: the base profile's rows plus 4 for each
 * channel added (injection and drain rates, capacity, latency). */
static void test_sensitivity_rows(void **st) {
  (void)st;
  xs_profile *prof = xs_test_profile("h800-nvlink");
  xs_moe_config c;
  xs_moe_preset("deepseek-v3", &c);
  c.tokens = 64;
  xs_moe_pick base;
  xs_moe_sensitivity s[XS_MOE_SENS_MAX];
  size_t n0, n;
  xs_error e;
  assert_int_equal(xs_moe_sensitivity_run(&c, prof, 0.01, 0, &base, s, &n0, &e), XS_OK);
  size_t added = (XS_MOE_SENS_MAX - n0) / 4 + 1;
  for (size_t k = 0; k < added; k++) {
    xs_channel ch;
    xs_channel_init(&ch, 2e11, 1e11);
    ch.capacity_B = 1 << 20;
    ch.latency_s = 1e-6;
    char name[32];
    snprintf(name, sizeof name, "extra%zu", k);
    assert_int_equal(xs_profile_add_channel(prof, name, &ch, &e), XS_OK);
  }
  assert_int_equal(xs_moe_sensitivity_run(&c, prof, 0.01, 0, &base, s, &n, &e),
                   XS_INVALID);
  char want[64];
  snprintf(want, sizeof want, "has %zu numbers the plan reads", n0 + 4 * added);
  if (!strstr(e.message, want))
    fail_msg("want \"%s\" in: %s", want, e.message);
  xs_profile_free(prof);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_stable_over_tokens), cmocka_unit_test(test_lookup_buckets),
      cmocka_unit_test(test_bad_table_options), cmocka_unit_test(test_certainty),
      cmocka_unit_test(test_header_agrees_with_plan),
      cmocka_unit_test(test_sensitivity), cmocka_unit_test(test_work_limit),
      cmocka_unit_test(test_sensitivity_rows)};
  return cmocka_run_group_tests(tests, NULL, NULL);
}
