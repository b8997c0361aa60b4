/*
 * test_moe.c: the MegaMoE planner. Generated programs conserve work (the
 * tiles' flops and the bytes sent equal the config's), respect the
 * dependency of an L2 tile on every L1 tile of its token block (checked by
 * per-block counters independent of the generator's own bookkeeping), the
 * searched schedule is never slower than the fused baseline under
 * burstgap, one small config is checked by hand, the expected touched
 * experts and all-to-all destinations match a Monte Carlo routing, every
 * number of the GPU profiles names its source, and validation never reads
 * the measured column.
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
#include "testio.h"

#include <jansson.h>

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
  const xs_moe_pattern pats[] = {{0, 0, 0, 0, 0, 0, 0}, {1, 1, 0, 0, 0, 0, 0},
                                 {3, 2, 0, 0, 0, 0, 0}, {0, 0, 20, 0, 0, 0, 0},
                                 {0, 0, 90, 0, 0, 0, 0}};
  for (size_t i = 0; i < xs_moe_preset_count(); i++)
    for (size_t t = 0; t < 4; t++)
      for (int sc = 0; sc < XS_MOE_SCHEDULES; sc++)
        for (size_t k = 0; k < (sc == XS_MOE_INTERLEAVED ? 5u : 1u); k++) {
          xs_moe_config c;
          assert_int_equal(xs_moe_preset(xs_moe_preset_name(i), &c), 0);
          c.tokens = tokens[t];
          xs__moe_audit a;
          xs_program *p;
          xs_status s = xs__moe_audit_program(&c, prof, (xs_moe_schedule)sc,
                                              sc == XS_MOE_INTERLEAVED ? &pats[k] : NULL,
                                              &a, &p, &e);
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
            assert_true(close(sent(p, "sms"), r.work.a2a_dispatch_B + r.work.a2a_combine_B, 1e-9));
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
    assert_int_equal(xs_moe_program(c, prof, (xs_moe_schedule)s, &r->knobs[s], &p, &e), XS_OK);
    for (int m = 0; m < 3; m++) {
      xs_result *res;
      assert_int_equal(xs_evaluate(p, prof, models[m], NULL, &res, &e), XS_OK);
      if (res->makespan_s != r->time_s[s][m]) {
        fprintf(stderr, "%s %s T=%g schedule %d model %d: plan %.17g, program %.17g\n",
                xs_profile_name(prof), c->name, c->tokens, s, m, r->time_s[s][m],
                res->makespan_s);
        fail();
      }
      if (m == 0) {
        /* the breakdown's build-time parts are the evaluator's compute
         * time of the SMs and the finish (the dispatch worker's launch is
         * not counted) */
        const xs_moe_breakdown *b = &r->breakdown[s];
        double ops = s == XS_MOE_SEQUENTIAL ? res->workers[0].compute_s
                                            : res->workers[1].compute_s + res->workers[2].compute_s;
        if (!close(ops, b->hbm_s + b->compute_s + b->fixed_s, 1e-9)) {
          fprintf(stderr, "%s T=%g schedule %s: compute ops %.12g, breakdown %.12g\n",
                  c->name, c->tokens, xs_moe_schedule_name((xs_moe_schedule)s), ops,
                  b->hbm_s + b->compute_s + b->fixed_s);
          fail();
        }
        assert_true(close(b->hbm_s + b->compute_s + b->fixed_s + b->dispatch_s + b->link_s,
                          res->makespan_s, 1e-9));
      }
      xs_result_free(res);
    }
    xs_program_free(p);
  }
}

static void test_never_slower(void **st) {
  (void)st;
  const char *profiles[] = {"h100-nvlink", "h200-nvlink", "h800-nvlink", "h20-nvlink",
                            "b200-nvlink", "h100-pcie5-host"};
  for (int q = 0; q < 6; q++) {
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
        for (int s = 0; s < XS_MOE_SCHEDULES; s++)
          assert_true(r.time_s[s][2] <= r.time_s[s][0] * (1 + 1e-9)); /* ideal */
        assert_true(r.searched >= 10);
        check_plan_matches_programs(&c, prof, &r);
      }
    xs_profile_free(prof);
  }
}

/* 16 tokens, H 256, I 128, 8 experts, top-2, EP 2 on 4 SMs of 1e12 FLOP/s
 * (efficiency 1, no HBM figure, no fixed costs), one channel of 1 GB/s
 * both ways, C = 0, L = 0: 32 pairs, 4 experts per rank with 8 rows each
 * (all touched: 1 - 0.75^32 of each), block_m 16, 4 blocks; a tile
 * computes its 16 padded rows: L1 2*16*128*256 flop in 4.194304 us on one
 * SM of 2.5e11, L2 2*16*128*128 in 2.097152 us, 2 of each per block.
 * Sequential: a token reaches the other rank unless both its experts are
 * local, 1 - C(4,2)/C(8,2) = 11/14 of tokens: dispatch 16*11/14*256 B,
 * combine twice that; L1 in 2 waves of 4 tiles, L2 likewise. */
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
  double disp = 16 * 11.0 / 14 * 256;
  assert_true(close(r.work.a2a_dispatch_B, disp, 1e-12));
  double seq = disp / 1e9 + 2 * 4.194304e-6 + 2 * 2.097152e-6 + 2 * disp / 1e9;
  assert_true(close(r.time_s[0][0], seq, 1e-9));
  /* blocking equals burstgap here: C = 0, R_inj = R_drain, L = 0 */
  for (int s = 0; s < XS_MOE_SCHEDULES; s++)
    assert_true(close(r.time_s[s][0], r.time_s[s][1], 1e-9));
  /* fused baseline: the dispatch chunks are one block each (1024 B, 1.024
   * us): L1 wave 1 needs blocks 0-1 (2.048 us), wave 2 blocks 2-3 (4.096
   * us); L1 waves take 4.194304 us, L2 waves 2.097152 us, each followed by
   * its 4096 B of combine (4.096 us) on the free channel. */
  double t = 2.048e-6 + 4.194304e-6;
  t = fmax(t, 4.096e-6) + 4.194304e-6;
  t += 2.097152e-6 + 4.096e-6;
  t += 2.097152e-6 + 4.096e-6;
  assert_true(close(r.time_s[1][0], t, 1e-9));
  xs_profile_free(prof);
}

/* The expected experts touched on a rank and the expected off-rank
 * destinations of a token, against a Monte Carlo routing: each token picks
 * K distinct experts uniformly; experts e live on rank e / (E/P). */
static unsigned long long rng_state;
static unsigned rng(unsigned n) {
  rng_state ^= rng_state << 13;
  rng_state ^= rng_state >> 7;
  rng_state ^= rng_state << 17;
  return (unsigned)(rng_state % n);
}

static void test_routing_monte_carlo(void **st) {
  (void)st;
  xs_profile *prof;
  xs_error e;
  assert_int_equal(xs_profile_load("h200-nvlink", &prof, &e), XS_OK);
  const unsigned long long seed = 20261203;
  const double tokens[] = {1, 8, 64};
  for (size_t i = 0; i < xs_moe_preset_count(); i++)
    for (int ti = 0; ti < 3; ti++) {
      xs_moe_config c;
      xs_moe_preset(xs_moe_preset_name(i), &c);
      c.tokens = tokens[ti];
      xs_moe_result r;
      assert_int_equal(xs_moe_plan(&c, prof, &r, &e), XS_OK);
      unsigned E = (unsigned)c.experts, K = (unsigned)c.topk, P = (unsigned)c.ep;
      unsigned el = E / P, T = (unsigned)c.tokens, trials = 2000;
      unsigned long long s0 = seed + i * 7 + (unsigned long long)ti;
      rng_state = s0;
      double touched = 0, dest = 0;
      unsigned char *hit = calloc(E, 1), *rank = calloc(P, 1);
      for (unsigned tr = 0; tr < trials; tr++) {
        memset(hit, 0, E);
        for (unsigned tok = 0; tok < P * T; tok++) {
          memset(rank, 0, P);
          unsigned home = tok % P, picked = 0;
          unsigned chosen[64];
          while (picked < K) {
            unsigned x = rng(E), dup = 0;
            for (unsigned j = 0; j < picked; j++)
              dup |= chosen[j] == x;
            if (dup)
              continue;
            chosen[picked++] = x;
            hit[x] = 1;
            rank[x / el] = 1;
          }
          if (home == 0)
            for (unsigned q = 0; q < P; q++)
              dest += q != home && rank[q];
        }
        for (unsigned x = 0; x < el; x++) /* rank 0's experts */
          touched += hit[x];
      }
      touched /= trials;
      dest /= (double)trials * T;
      free(hit);
      free(rank);
      double want_dest = r.work.a2a_dispatch_B / (c.tokens * c.hidden * c.act_bytes);
      /* below one expected expert the planner takes one: the rank has its
       * mean number of pairs, at least one */
      int clamped = r.work.experts_touched <= 1;
      if ((!clamped && !close(touched, r.work.experts_touched, 0.03)) ||
          !close(dest, want_dest, 0.03)) {
        fprintf(stderr, "seed %llu %s T=%g: touched %.4f (model %.4f), destinations %.4f "
                        "(model %.4f)\n", s0, c.name, c.tokens, touched,
                r.work.experts_touched, dest, want_dest);
        fail();
      }
    }
  xs_profile_free(prof);
}

/* every number of the GPU profiles that carry "sources" names where it
 * comes from, and what kind of figure it is */
static void check_leaf(const xs_profile *prof, const char *key) {
  const char *src = xs_profile_number_source(prof, key);
  static const char *const kinds[] = {"measurement", "derived", "datasheet", "lead"};
  int ok = 0;
  for (int k = 0; src && k < 4; k++)
    ok |= strncmp(src, kinds[k], strlen(kinds[k])) == 0;
  if (!ok) {
    fprintf(stderr, "%s: %s: %s\n", xs_profile_name(prof), key,
            src ? "source does not start with its kind" : "no source");
    fail();
  }
}

static void test_profile_sources(void **st) {
  (void)st;
  const char *gpus[] = {"h100-nvlink", "h200-nvlink", "h800-nvlink", "h20-nvlink",
                        "b200-nvlink", "a100-nvlink", "a800-nvlink"};
  for (int g = 0; g < 7; g++) {
    xs_profile *prof;
    xs_error e;
    assert_int_equal(xs_profile_load(gpus[g], &prof, &e), XS_OK);
    char *json = xs_profile_to_json(prof);
    assert_non_null(json);
    /* walk the serialised profile: every number under channels.* and
     * compute.* (one level of tables below) */
    json_error_t je;
    json_t *root = json_loads(json, 0, &je);
    free(json);
    assert_non_null(root);
    const char *sect[2] = {"channels", "compute"};
    for (int s = 0; s < 2; s++) {
      json_t *o = json_object_get(root, sect[s]), *v;
      const char *k;
      json_object_foreach(o, k, v) {
        char key[128];
        if (json_is_object(v)) {
          const char *k2;
          json_t *v2;
          json_object_foreach(v, k2, v2) {
            snprintf(key, sizeof key, "%s.%s.%s", sect[s], k, k2);
            if (json_is_number(v2))
              check_leaf(prof, key);
          }
        } else if (json_is_number(v)) {
          snprintf(key, sizeof key, "%s.%s", sect[s], k);
          check_leaf(prof, key);
        }
      }
    }
    json_decref(root);
    xs_profile_free(prof);
  }
}

/* validation: a prediction never reads the measured column, and bad rows
 * name the file, line and column */
static char *slurp(const char *path, size_t *len) {
  char *t = xs_test_read_file(path, len);
  assert_non_null(t);
  return t;
}

static void test_validate(void **st) {
  (void)st;
  size_t len;
  char *text = slurp(XSTAGE_SRC "/data/published/megamoe.csv", &len);
  xs_validate_set a, b;
  xs_error e;
  assert_int_equal(xs_validate_megamoe(text, len, "megamoe.csv", &a, NULL, NULL, &e), XS_OK);
  assert_true(a.nrows >= 60);
  /* multiply every time_us by 3 (the column after arm) */
  char *changed = malloc(len * 2 + 1);
  size_t w = 0;
  for (const char *p = text; *p;) {
    const char *nl = strchr(p, '\n');
    size_t n = nl ? (size_t)(nl - p) + 1 : strlen(p);
    int field = 0;
    const char *q = p;
    if (*p != '#' && strncmp(p, "source,", 7) != 0) {
      for (; q < p + n && field < 13; q++)
        field += *q == ',';
      char *end;
      double v = strtod(q, &end);
      memcpy(changed + w, p, (size_t)(q - p));
      w += (size_t)(q - p);
      w += (size_t)sprintf(changed + w, "%.3f", 3 * v);
      size_t rest = n - (size_t)(end - p);
      memcpy(changed + w, end, rest);
      w += rest;
    } else {
      memcpy(changed + w, p, n);
      w += n;
    }
    p += n;
  }
  changed[w] = 0;
  assert_int_equal(xs_validate_megamoe(changed, w, "changed.csv", &b, NULL, NULL, &e), XS_OK);
  assert_int_equal(a.nrows, b.nrows);
  for (size_t i = 0; i < a.nrows; i++) {
    if (a.rows[i].predicted_us != b.rows[i].predicted_us ||
        !close(b.rows[i].measured_us, 3 * a.rows[i].measured_us, 1e-6)) {
      fprintf(stderr, "row %zu: predicted %.17g then %.17g, measured %g then %g\n", i,
              a.rows[i].predicted_us, b.rows[i].predicted_us, a.rows[i].measured_us,
              b.rows[i].measured_us);
      fail();
    }
  }
  size_t n;
  double mx, med = xs_validate_median(&a, NULL, NULL, &n, &mx);
  assert_true(n == a.nrows && med <= mx && med > 0);
  xs_validate_pairs pr;
  assert_int_equal(xs_validate_compare_arms(&a, &pr, &e), XS_OK);
  assert_true(pr.pairs >= 30 && pr.agree <= pr.pairs &&
              pr.median_ratio_error <= pr.max_ratio_error);
  /* by hand: measured 100 and 200 us, predicted 110 and 180: the first is
   * faster both ways; predicted ratio 0.6111 against 0.5, +22.2% */
  xs_validate_row two[3];
  memset(two, 0, sizeof two);
  for (int i = 0; i < 3; i++) {
    two[i] = a.rows[0];
    snprintf(two[i].arm, sizeof two[i].arm, "%s", i == 1 ? "other" : "one");
  }
  two[0].measured_us = 100, two[0].predicted_us = 110;
  two[1].measured_us = 200, two[1].predicted_us = 180;
  two[2].config.tokens += 1; /* another config: no pair */
  xs_validate_set hand = {two, 3};
  assert_int_equal(xs_validate_compare_arms(&hand, &pr, &e), XS_OK);
  assert_true(pr.pairs == 1 && pr.agree == 1);
  assert_true(close(pr.median_ratio_error, (110.0 / 180) / 0.5 - 1, 1e-12) &&
              pr.max_ratio_error == pr.median_ratio_error);
  xs_validate_free(&a);
  xs_validate_free(&b);
  free(changed);
  free(text);
  const char *hdr = "source,gpu,ep,hidden,intermediate,experts,topk,shared_experts,"
                    "act_dtype,weight_dtype,tokens,arm,time_us\n";
  const char *bad[] = {"s,h999,8,4096,2048,256,6,0,fp8,fp8,8,sequential,100\n",
                       "s,h200-nvlink,8,4096,2048,256,6,0,fp8,fp8,8,fifo,100\n",
                       "s,h200-nvlink,8,4096,x,256,6,0,fp8,fp8,8,sequential,100\n",
                       "s,h200-nvlink,8,4096,2048,256,6,0,fp8,fp8,8,sequential,-1\n",
                       "s,h200-nvlink,8,4096,2048,256,6,0,fp8,int3,8,sequential,100\n",
                       "s,h200-nvlink,8,4096,2048,250,6,0,fp8,fp8,8,sequential,100\n"};
  const char *want[] = {"d.csv:2:3: gpu", "d.csv:2:45: arm", "d.csv:2:22: intermediate",
                        "d.csv:2:56: time_us", "d.csv:2:39: weight_dtype", "d.csv:2:1: experts"};
  for (int i = 0; i < 6; i++) {
    char doc[512];
    snprintf(doc, sizeof doc, "%s%s", hdr, bad[i]);
    xs_validate_set s;
    xs_status rc = xs_validate_megamoe(doc, strlen(doc), "d.csv", &s, NULL, NULL, &e);
    if (rc != XS_INVALID || !strstr(e.message, want[i])) {
      fprintf(stderr, "%s: %s (want %s)\n", bad[i], rc ? e.message : "accepted", want[i]);
      fail();
    }
  }
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
      cmocka_unit_test(test_bad_config), cmocka_unit_test(test_routing_monte_carlo),
      cmocka_unit_test(test_profile_sources), cmocka_unit_test(test_validate)};
  return cmocka_run_group_tests(tests, NULL, NULL);
}
