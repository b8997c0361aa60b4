/*
 * test_moe.c: the MegaMoE planner. Generated programs conserve work (the
 * tiles' flops and the bytes sent equal the config's), respect the
 * dependency of an L2 tile on every L1 tile of its token block (checked by
 * per-block counters independent of the generator's own bookkeeping), the
 * interleaved schedule is never slower than the fused baseline under
 * burstgap, and one small config is checked by hand.
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

static int close(double a, double b, double rel) {
  return fabs(a - b) <= rel * fmax(fabs(a), fabs(b)) + 1e-300;
}

static double sent(const xs_program *p, const char *worker) {
  double b = 0;
  for (size_t s = 0; s < xs_program_send_count(p); s++)
    if (strcmp(xs_program_worker_name(p, xs_program_send_worker(p, s)), worker) == 0)
      b += xs_program_send_bytes(p, s);
  return b;
}

static void test_conservation_and_dependencies(void **st) {
  (void)st;
  xs_profile *prof;
  xs_error e;
  assert_int_equal(xs_profile_load("h200-nvlink", &prof, &e), XS_OK);
  const double tokens[] = {16, 100, 1024, 8192};
  const xs_moe_pattern pats[] = {{0, 0, 0}, {1, 1, 0}, {3, 2, 0}, {0, 0, 20}, {0, 0, 90}};
  for (size_t i = 0; i < xs_moe_preset_count(); i++)
    for (size_t t = 0; t < 4; t++)
      for (int sc = 0; sc < XS_MOE_SCHEDULES; sc++)
        for (size_t k = 0; k < (sc == XS_MOE_INTERLEAVED ? 5u : 1u); k++) {
          xs_moe_config c;
          assert_int_equal(xs_moe_preset(xs_moe_preset_name(i), &c), 0);
          c.tokens = tokens[t];
          xs__moe_audit a;
          xs_program *p;
          xs_status s = xs__moe_audit_program(&c, prof, (xs_moe_schedule)sc, &pats[k], &a, &p, &e);
          if (s)
            fprintf(stderr, "%s\n", e.message);
          assert_int_equal(s, XS_OK);
          xs_moe_result r;
          assert_int_equal(xs_moe_plan(&c, prof, &r, &e), XS_OK);
          double pairs = round(c.tokens * c.topk);
          double flops = 2 * pairs * c.hidden * 2 * c.intermediate + 2 * pairs * c.intermediate * c.hidden;
          double off = (c.ep - 1) / c.ep;
          if (!close(a.flops, flops, 1e-9) || !close(a.config_flops, flops, 1e-12) ||
              a.violations) {
            fprintf(stderr, "%s T=%g schedule %d pattern %zu: flops %.9g vs %.9g, %zu violations\n",
                    c.name, c.tokens, sc, k, a.flops, flops, a.violations);
            fail();
          }
          double disp = pairs * c.hidden * c.act_bytes * off;
          double comb = pairs * c.hidden * c.combine_bytes * off;
          if (sc == XS_MOE_SEQUENTIAL) {
            assert_true(close(sent(p, "sms"), disp + comb, 1e-9));
          } else {
            assert_true(close(sent(p, "dispatch"), disp, 1e-9));
            assert_true(close(sent(p, "sms"), comb, 1e-9));
          }
          assert_true(close(r.work.dispatch_B, disp, 1e-12));
          assert_true(close(r.work.combine_B, comb, 1e-12));
          xs_program_free(p);
        }
  xs_profile_free(prof);
}

/* The plan's makespans are those of the programs xs_moe_program builds,
 * each evaluated on its own: the plan shares programs between schedules
 * (the baseline is candidate 0 of the search) and recycles results. */
static void check_plan_matches_programs(const xs_moe_config *c, const xs_profile *prof,
                                        const xs_moe_result *r) {
  static const xs_model models[3] = {XS_MODEL_BURSTGAP, XS_MODEL_BLOCKING, XS_MODEL_IDEAL};
  xs_error e;
  for (int s = 0; s < XS_MOE_SCHEDULES; s++) {
    xs_program *p;
    assert_int_equal(xs_moe_program(c, prof, (xs_moe_schedule)s, &r->chosen, &p, &e), XS_OK);
    for (int m = 0; m < 3; m++) {
      xs_result *res;
      assert_int_equal(xs_evaluate(p, prof, models[m], NULL, &res, &e), XS_OK);
      if (res->makespan_s != r->time_s[s][m]) {
        fprintf(stderr, "%s %s T=%g schedule %d model %d: plan %.17g, program %.17g\n",
                xs_profile_name(prof), c->name, c->tokens, s, m, r->time_s[s][m],
                res->makespan_s);
        fail();
      }
      if (s == XS_MOE_INTERLEAVED && m == 0) {
        const xs_worker_result *w = &res->workers[1];
        assert_true(w->compute_s == r->compute_s);
        assert_true(res->makespan_s - w->finish_s == r->xstage_tail_s);
      }
      xs_result_free(res);
    }
    xs_program_free(p);
  }
}

static void test_never_slower(void **st) {
  (void)st;
  const char *profiles[] = {"h100-nvlink", "h200-nvlink", "h800-nvlink", "h100-pcie5-host"};
  for (int q = 0; q < 4; q++) {
    xs_profile *prof;
    xs_error e;
    assert_int_equal(xs_profile_load(profiles[q], &prof, &e), XS_OK);
    for (size_t i = 0; i < xs_moe_preset_count(); i++)
      for (double t = 16; t <= 32768; t *= 8) {
        xs_moe_config c;
        xs_moe_preset(xs_moe_preset_name(i), &c);
        c.tokens = t;
        xs_moe_result r;
        assert_int_equal(xs_moe_plan(&c, prof, &r, &e), XS_OK);
        if (!(r.time_s[2][0] <= r.time_s[1][0])) {
          fprintf(stderr, "%s %s T=%g: interleaved %.9g > baseline %.9g\n", profiles[q],
                  c.name, t, r.time_s[2][0], r.time_s[1][0]);
          fail();
        }
        for (int s = 0; s < 3; s++)
          assert_true(r.time_s[s][2] <= r.time_s[s][0] * (1 + 1e-9)); /* ideal */
        assert_true(r.searched >= 10);
        check_plan_matches_programs(&c, prof, &r);
      }
    xs_profile_free(prof);
  }
}

/* 16 tokens, H 256, I 128, 8 experts, top-2, EP 2 on 4 SMs of 1e12 FLOP/s
 * (efficiency 1), one channel of 1 GB/s both ways, C = 0, L = 0:
 * 32 pairs, 4 experts per rank with 8 rows each, block_m 16, 4 blocks;
 * L1: 2 tiles per block of 2*8*256*256/2 = 524288 flop, 2.097152 us on one
 * SM of 2.5e11; L2: 2 tiles of 2*8*128*256/2 = 262144 flop, 1.048576 us.
 * Sequential: dispatch 32*256*1*(1/2) = 4096 B in 4.096 us, then L1 in
 * 8*2.097152/4 = 4.194304 us, L2 2.097152 us, combine 8192 B in 8.192 us. */
static void test_hand_small(void **st) {
  (void)st;
  xs_profile *prof = xs_profile_new("hand", "test");
  xs_channel ch;
  xs_channel_init(&ch, 1e9, 1e9);
  ch.capacity_B = 0;
  xs_error e;
  assert_int_equal(xs_profile_add_channel(prof, "link", &ch, &e), XS_OK);
  assert_int_equal(xs_profile_set_compute(prof, 4, 1, 0, &e), XS_OK);
  assert_int_equal(xs_profile_set_flops(prof, "fp8", 1e12, &e), XS_OK);
  const char *cfg = "{\"name\": \"tiny\", \"tokens\": 16, \"hidden\": 256, \"intermediate\": 128,"
                    " \"experts\": 8, \"topk\": 2, \"ep\": 2, \"stagger\": 1}";
  xs_moe_config c;
  assert_int_equal(xs_moe_config_parse(cfg, strlen(cfg), "tiny.json", &c, &e), XS_OK);
  xs_moe_result r;
  assert_int_equal(xs_moe_plan(&c, prof, &r, &e), XS_OK);
  assert_true(r.work.pairs == 32 && r.work.block_m == 16 && r.work.blocks == 4);
  assert_true(r.work.l1_tiles == 8 && r.work.l2_tiles == 8 && r.work.waves == 4);
  assert_true(close(r.work.l1_tile_s, 2 * 16 * 128 * 256 / 2.5e11, 1e-12));
  double seq = 4096 / 1e9 + 8 * 2.097152e-6 / 4 + 8 * 1.048576e-6 / 4 + 8192 / 1e9;
  assert_true(close(r.time_s[0][0], seq, 1e-9));
  /* blocking equals burstgap here: C = 0, R_inj = R_drain, L = 0 */
  for (int s = 0; s < 3; s++)
    assert_true(close(r.time_s[s][0], r.time_s[s][1], 1e-9));
  /* fused baseline: 2 L1 waves (4 tiles each), waiting for dispatch, then 2
   * L2 waves each sending 4096 B. The dispatch chunks are one block each
   * (1024 B, 1.024 us): wave 1 needs blocks 0-1 (2.048 us), wave 2 blocks
   * 2-3 (4.096 us); L1 waves 2.097152 us each; then L2 waves 1.048576 us
   * each followed by 4.096 us of combine on the free channel. */
  double t = 2.048e-6 + 2.097152e-6;        /* end of L1 wave 1 */
  t = fmax(t, 4.096e-6) + 2.097152e-6;       /* end of L1 wave 2 */
  t += 1.048576e-6 + 4.096e-6;               /* L2 wave 1 and its combine */
  t += 1.048576e-6 + 4.096e-6;
  assert_true(close(r.time_s[1][0], t, 1e-9));
  xs_profile_free(prof);
}

static void test_bad_config(void **st) {
  (void)st;
  xs_moe_config c;
  xs_error e;
  const char *bad[] = {"{\"experts\": 250}", "{\"tokens\": -4}", "{\"preset\": \"gpt\"}",
                       "{\"tokens\": 1.5}", "{\"hidden\": \"big\"}", "{\"colour\": 1}",
                       "{\"topk\": 300}", "[1]"};
  const char *want[] = {"tiny.json:1:13: experts: experts (250) must be a multiple of ep",
                        "tokens", "unknown preset", "whole number", "expected a number",
                        "unknown key", "topk", "an object"};
  for (int i = 0; i < 8; i++) {
    xs_status s = xs_moe_config_parse(bad[i], strlen(bad[i]), "tiny.json", &c, &e);
    if (s == XS_OK || !strstr(e.message, want[i])) {
      fprintf(stderr, "%s: %s (want %s)\n", bad[i], s ? e.message : "accepted", want[i]);
      fail();
    }
  }
  xs_profile *prof = xs_profile_new("nocompute", "t");
  xs_channel ch;
  xs_channel_init(&ch, 1e9, 1e9);
  xs_profile_add_channel(prof, "l", &ch, &e);
  xs_moe_preset("glm", &c);
  xs_moe_result r;
  assert_int_equal(xs_moe_plan(&c, prof, &r, &e), XS_INVALID);
  assert_non_null(strstr(e.message, "no compute section"));
  xs_profile_free(prof);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_conservation_and_dependencies),
      cmocka_unit_test(test_never_slower), cmocka_unit_test(test_hand_small),
      cmocka_unit_test(test_bad_config)};
  return cmocka_run_group_tests(tests, NULL, NULL);
}
