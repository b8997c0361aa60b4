/*
 * test_fa.c: the context-parallel attention planner. Each KV tile is
 * forwarded exactly once per step (P - 1 forwards), the flops equal the
 * config's, step s+1's compute waits for the delivery of step s's block,
 * piggyback is never slower than sequential under burstgap, and one small
 * config is checked by hand.
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

static int near(double a, double b, double rel) {
  return fabs(a - b) <= rel * fmax(fabs(a), fabs(b)) + 1e-300;
}

/* Walk the compute worker: the k-th wait is on block k-1's last send, and
 * comes before any compute of step k; returns the number of waits. */
static int check_chain(const xs_program *p, size_t sms) {
  int waits = 0;
  char buf[64], want[64];
  for (size_t i = 0; i < xs_program_op_count(p, sms); i++) {
    xs_op_info op;
    xs_program_op(p, sms, i, &op);
    if (op.kind != XS_OP_WAIT)
      continue;
    const char *id = xs_program_send_id(p, op.send, buf, sizeof buf);
    snprintf(want, sizeof want, "kv%d", waits);
    if (strncmp(id, want, strlen(want)) != 0 ||
        (id[strlen(want)] != '\0' && id[strlen(want)] != '.'))
      return -1;
    /* dedicated: one wait per forwarder, all on the same step */
    if (id[strlen(want)] == '.') {
      size_t j = i + 1;
      for (; j < xs_program_op_count(p, sms); j++) {
        xs_op_info o2;
        xs_program_op(p, sms, j, &o2);
        if (o2.kind != XS_OP_WAIT)
          break;
      }
      i = j - 1;
    }
    waits++;
  }
  return waits;
}

static void test_conservation_and_chain(void **st) {
  (void)st;
  xs_profile *prof;
  xs_error e;
  assert_int_equal(xs_profile_load("h100-nvlink", &prof, &e), XS_OK);
  const xs_fa_choice choices[] = {{0, 0, 1}, {0, 1, 1}, {0, 4, 16}, {0, 16, 4},
                                  {1, 0, 1}, {8, 0, 1}};
  for (size_t i = 0; i < xs_fa_preset_count(); i++)
    for (double seq = 1000; seq <= 20000; seq *= 4.5)
      for (int causal = 0; causal < 2; causal++)
        for (int sc = 0; sc < XS_FA_SCHEDULES; sc++)
          for (size_t k = 0; k < 6; k++) {
            if ((sc == XS_FA_DEDICATED) != (choices[k].forward_sms > 0))
              continue;
            xs_fa_config c;
            xs_fa_preset(xs_fa_preset_name(i), &c);
            c.seq = seq;
            c.causal = causal;
            c.cp = 4;
            xs__fa_audit a;
            xs_program *p;
            assert_int_equal(xs__fa_audit_program(&c, prof, (xs_fa_schedule)sc,
                                                  &choices[k], &a, &p, &e), XS_OK);
            double tiles = ceil(seq / c.block_n) * c.heads_kv;
            double kv = 2 * seq * c.heads_kv * c.head_dim * c.bytes;
            double flops = 4 * seq * seq * c.heads_q * c.head_dim * (causal ? 0.5 : 1) * 4;
            if (!near(a.tiles_forwarded, tiles * 3, 1e-9) || !near(a.bytes, kv * 3, 1e-9) ||
                !near(a.flops, flops, 1e-9) || !near(a.config_flops, flops, 1e-12)) {
              fprintf(stderr, "%s seq %g causal %d schedule %d choice %zu: tiles %g (%g) "
                              "bytes %g (%g) flops %g (%g)\n",
                      c.name, seq, causal, sc, k, a.tiles_forwarded, tiles * 3, a.bytes,
                      kv * 3, a.flops, flops);
              fail();
            }
            assert_int_equal(check_chain(p, 0), 3);
            xs_program_free(p);
          }
  xs_profile_free(prof);
}

static void test_never_slower(void **st) {
  (void)st;
  const char *profiles[] = {"h100-nvlink", "h200-nvlink", "h800-nvlink", "h100-pcie5-host"};
  for (int q = 0; q < 4; q++) {
    xs_profile *prof;
    xs_error e;
    assert_int_equal(xs_profile_load(profiles[q], &prof, &e), XS_OK);
    for (size_t i = 0; i < xs_fa_preset_count(); i++)
      for (double seq = 4096; seq <= 65536; seq *= 4)
        for (int causal = 0; causal < 2; causal++) {
          xs_fa_config c;
          xs_fa_preset(xs_fa_preset_name(i), &c);
          c.seq = seq;
          c.causal = causal;
          xs_fa_result r;
          assert_int_equal(xs_fa_plan(&c, prof, &r, &e), XS_OK);
          if (!(r.time_s[2][0] <= r.time_s[0][0])) {
            fprintf(stderr, "%s %s seq %g: piggyback %.9g > sequential %.9g\n",
                    profiles[q], c.name, seq, r.time_s[2][0], r.time_s[0][0]);
            fail();
          }
        }
    xs_profile_free(prof);
  }
}

/* 1024 tokens, 2 query heads, 1 KV head, d 64, CP 2, full mask, BF16, on
 * 4 SMs of 1e12 FLOP/s: a step is 4*1024^2*2*64 = 5.37e8 flop, 536.9 us;
 * the block is 2*1024*1*64*2 = 262144 B; a 1 GB/s channel with C = 0 and
 * L = 1 us forwards it in 262.144 us + 1 us. Sequential: compute, forward,
 * compute: 536.870912*2 + 263.144 us. */
static void test_hand_small(void **st) {
  (void)st;
  xs_profile *prof = xs_profile_new("hand", "test");
  xs_channel ch;
  xs_channel_init(&ch, 1e9, 1e9);
  ch.capacity_B = 0;
  ch.latency_s = 1e-6;
  xs_error e;
  assert_int_equal(xs_profile_add_channel(prof, "link", &ch, &e), XS_OK);
  assert_int_equal(xs_profile_set_compute(prof, 4, 1, 0, &e), XS_OK);
  assert_int_equal(xs_profile_set_flops(prof, "bf16", 1e12, &e), XS_OK);
  const char *cfg = "{\"seq\": 1024, \"heads_q\": 2, \"heads_kv\": 1, \"head_dim\": 64,"
                    " \"cp\": 2, \"causal\": false}";
  xs_fa_config c;
  assert_int_equal(xs_fa_config_parse(cfg, strlen(cfg), "small.json", &c, &e), XS_OK);
  xs_fa_result r;
  assert_int_equal(xs_fa_plan(&c, prof, &r, &e), XS_OK);
  double step = 4.0 * 1024 * 1024 * 2 * 64 / 1e12;
  assert_true(near(r.work.step_s, step, 1e-12));
  assert_true(near(r.work.kv_B, 262144, 1e-12));
  assert_true(near(r.time_s[0][0], 2 * step + 262144 / 1e9 + 1e-6, 1e-9));
  /* 16 CTAs on 4 SMs: 4 waves; piggyback over all 4 waves hides all but the
   * last chunk's forwarding behind compute */
  assert_true(r.work.waves == 4);
  assert_true(r.time_s[2][0] < r.time_s[0][0]);
  assert_true(r.time_s[2][2] <= r.time_s[2][0]);
  xs_profile_free(prof);
}

static void test_bad_config(void **st) {
  (void)st;
  xs_fa_config c;
  xs_error e;
  const char *bad[] = {"{\"heads_kv\": 5}", "{\"seq\": 0}", "{\"preset\": \"gpt\"}",
                       "{\"causal\": 1}", "{\"mask\": 1}"};
  const char *want[] = {"b.json:1:14: heads_kv: heads_kv (5) must divide", "seq",
                        "unknown preset", "expected true or false", "unknown key"};
  for (int i = 0; i < 5; i++) {
    xs_status s = xs_fa_config_parse(bad[i], strlen(bad[i]), "b.json", &c, &e);
    if (s == XS_OK || !strstr(e.message, want[i])) {
      fprintf(stderr, "%s: %s (want %s)\n", bad[i], s ? e.message : "accepted", want[i]);
      fail();
    }
  }
}

/* A profile built with a compute section and no channel: refused, since
 * the KV blocks have nothing to go over. */
static void test_no_channel(void **st) {
  (void)st;
  xs_profile *prof = xs_profile_new("compute-only", "test");
  xs_error e;
  assert_int_equal(xs_profile_set_compute(prof, 4, 1, 0, &e), XS_OK);
  assert_int_equal(xs_profile_set_flops(prof, "bf16", 1e12, &e), XS_OK);
  xs_fa_config c;
  assert_int_equal(xs_fa_preset("llama3-70b", &c), 0);
  xs_fa_result r;
  assert_int_equal(xs_fa_plan(&c, prof, &r, &e), XS_INVALID);
  assert_non_null(strstr(e.message, "profile \"compute-only\" has no channel"));
  xs_program *p;
  assert_int_equal(xs_fa_program(&c, prof, XS_FA_PIGGYBACK, NULL, &p, NULL, &e),
                   XS_INVALID);
  assert_non_null(strstr(e.message, "has no channel"));
  xs_profile_free(prof);
}

/* The ring model against a hand computation: a full-mask ring whose
 * forward is tiny (one KV head, short head dim, a fast link), so every
 * path's time is the steps' kernels, merges and fixed costs: P full
 * kernels in whole waves at the profile's rate, plus the merge bytes over
 * the copy bandwidth. */
static void test_ring_by_hand(void **st) {
  (void)st;
  xs_profile *prof;
  xs_error e;
  assert_int_equal(xs_profile_load("h800-nvlink", &prof, &e), XS_OK);
  xs_fa_config c;
  xs_fa_preset("mha", &c);
  c.seq = 4096;
  c.heads_q = 132; /* 32 Q tiles x 132 heads */
  c.heads_kv = 1;
  c.cp = 4;
  c.causal = 0;
  double F = xs_profile_attn(prof, XS_ATTN_FLOPS, "fa2");
  double cta = xs_profile_attn(prof, XS_ATTN_CTA_S, "fa2");
  xs_kernel_costs k;
  xs_profile_kernel_costs(prof, &k);
  /* FlashAttention-2: 128 x 64 tiles, two CTAs an SM each at half its
   * rate: 4224 CTAs in 16 waves of 264 */
  double tile = 4 * 128.0 * 64 * 128 / (F / 132);
  double kernel = 16 * 2 * (64 * tile + cta);
  double el = 4096.0 * 132 * 128, bw = xs_profile_hbm_Bps(prof) * k.copy_efficiency;
  double merge = (6 * el + 3 * 38 * el + 6 * el) / bw;
  /* the communication kernel's SMs, while each of the 3 forwards drains */
  double comm = 2 * 4096.0 * 128 * 2 /
                xs_profile_channel(prof, xs_profile_default_channel(prof))->drain_Bps;
  double lost = 3 * kernel * k.comm_sms / (132 - k.comm_sms) * fmin(1, comm / kernel);
  double want = 4 * kernel + lost + merge + 4 * k.ring_step_s;
  double got;
  xs_fa_breakdown bd;
  assert_int_equal(xs_fa_predict(&c, prof, XS_FA_PATH_STREAM, &got, &bd, &e), XS_OK);
  if (fabs(got / want - 1) > 0.02)
    fail_msg("dedicated-stream: %.9g s, by hand %.9g s", got, want);
  assert_true(k.comm_sms > 0 && lost > 0);
  assert_true(fabs(bd.compute_s - 4 * kernel - lost) < 1e-9 * kernel);
  assert_true(fabs(bd.merge_s - merge) < 1e-9);
  double local;
  assert_int_equal(xs_fa_predict(&c, prof, XS_FA_LOCAL, &local, NULL, &e), XS_OK);
  assert_true(fabs(local - kernel) < 1e-12);
  /* the sequential path adds the forwards; piggyback is never slower than
   * it; causal contiguous is slower than zigzag (the last rank's work) */
  double seq, pig;
  assert_int_equal(xs_fa_predict(&c, prof, XS_FA_PATH_SEQUENTIAL, &seq, NULL, &e), XS_OK);
  assert_int_equal(xs_fa_predict(&c, prof, XS_FA_PATH_PIGGYBACK, &pig, NULL, &e), XS_OK);
  assert_true(seq > got && pig <= seq);
  c.causal = 1;
  double cont, zig;
  c.layout = XS_FA_CONTIGUOUS;
  assert_int_equal(xs_fa_predict(&c, prof, XS_FA_PATH_STREAM, &cont, &bd, &e), XS_OK);
  assert_true(bd.imbalance_s > 0);
  c.layout = XS_FA_ZIGZAG;
  assert_int_equal(xs_fa_predict(&c, prof, XS_FA_PATH_STREAM, &zig, NULL, &e), XS_OK);
  assert_true(cont > 1.3 * zig);
  xs_profile_free(prof);
}

/* validate flashattn: every time_us x 3 gives the same predictions */
static void test_validate_blind(void **st) {
  (void)st;
  char path[512];
  snprintf(path, sizeof path, "%s/data/published/ring-attention.csv", XSTAGE_SRC);
  FILE *f = fopen(path, "rb");
  assert_non_null(f);
  static char text[1 << 20], scaled[1 << 21];
  size_t n = fread(text, 1, sizeof text - 1, f);
  fclose(f);
  text[n] = 0;
  xs_validate_set a, b;
  xs_error e;
  assert_int_equal(xs_validate_flashattn(text, n, path, &a, NULL, NULL, &e), XS_OK);
  /* rewrite the time_us column (13th) of every data row */
  size_t w = 0;
  int header = 1;
  for (char *line = strtok(text, "\n"); line; line = strtok(NULL, "\n")) {
    if (line[0] == '#' || header) {
      header &= line[0] == '#';
      w += (size_t)snprintf(scaled + w, sizeof scaled - w, "%s\n", line);
      continue;
    }
    char *p = line;
    for (int c = 0; c < 12; c++)
      p = strchr(p, ',') + 1;
    char *end;
    double t = strtod(p, &end);
    w += (size_t)snprintf(scaled + w, sizeof scaled - w, "%.*s%.17g%s\n",
                          (int)(p - line), line, 3 * t, end);
  }
  assert_int_equal(xs_validate_flashattn(scaled, w, path, &b, NULL, NULL, &e), XS_OK);
  assert_int_equal(a.nrows, b.nrows);
  for (size_t i = 0; i < a.nrows; i++) {
    assert_true(a.rows[i].predicted_us == b.rows[i].predicted_us);
    assert_true(fabs(b.rows[i].measured_us - 3 * a.rows[i].measured_us) <
                1e-9 * b.rows[i].measured_us);
  }
  xs_validate_free(&a);
  xs_validate_free(&b);
}

static int by_double(const void *a, const void *b) {
  double x = *(const double *)a, y = *(const double *)b;
  return x < y ? -1 : x > y;
}

/* The profiles' attention figures reproduce the kernel benchmarks they
 * were fitted to (data/published/attention-kernels.csv): every row
 * predicted as the local arm, its throughput against the published one;
 * the median |error| of each group at most 3%. */
static void test_kernel_calibration(void **st) {
  (void)st;
  char path[512], line[512];
  snprintf(path, sizeof path, "%s/data/published/attention-kernels.csv", XSTAGE_SRC);
  FILE *f = fopen(path, "r");
  assert_non_null(f);
  double err[64];
  size_t n = 0, groups = 0;
  char group[96] = "";
  int header = 1;
  for (int more = 1; more;) {
    more = fgets(line, sizeof line, f) != NULL;
    char src[64] = "", gpu[32] = "", ker[8] = "", pass[8] = "";
    double seq = 0, heads = 0, d = 0, causal = 0, batch = 0, tflops = 0;
    if (more && (line[0] == '#' || header)) {
      header &= line[0] == '#';
      continue;
    }
    if (more)
      assert_int_equal(sscanf(line, "%63[^,],%31[^,],%7[^,],%7[^,],%lf,%lf,%lf,%lf,%lf,%lf",
                              src, gpu, ker, pass, &seq, &heads, &d, &causal, &batch,
                              &tflops), 10);
    char g[96];
    snprintf(g, sizeof g, "%s %s %s", gpu, ker, pass);
    if (n && (!more || strcmp(g, group))) {
      qsort(err, n, sizeof err[0], by_double);
      print_message("# %-28s %2zu rows: median |error| %.1f%%, largest %.1f%%\n", group,
                    n, 100 * err[n / 2], 100 * err[n - 1]);
      if (err[n / 2] > 0.03)
        fail_msg("%s: median |error| %.3f above 0.03", group, err[n / 2]);
      n = 0;
      groups++;
    }
    if (!more)
      break;
    snprintf(group, sizeof group, "%s", g);
    xs_profile *prof;
    xs_error e;
    assert_int_equal(xs_profile_load(gpu, &prof, &e), XS_OK);
    xs_fa_config c;
    xs_fa_preset("mha", &c);
    c.seq = seq;
    c.heads_q = c.heads_kv = heads;
    c.head_dim = d;
    c.causal = (int)causal;
    c.batch = batch;
    c.backward = !strcmp(pass, "fwd_bwd");
    snprintf(c.kernel, sizeof c.kernel, "%s", ker);
    double t;
    assert_int_equal(xs_fa_predict(&c, prof, XS_FA_LOCAL, &t, NULL, &e), XS_OK);
    double fl = 4 * batch * heads * seq * seq * d * (causal ? 0.5 : 1) *
                (c.backward ? 3.5 : 1);
    assert_true(n < 64);
    err[n++] = fabs(fl / t / 1e12 / tflops - 1);
    xs_profile_free(prof);
  }
  fclose(f);
  assert_true(groups >= 6);
}

int main(void) {
  const struct CMUnitTest tests[] = {cmocka_unit_test(test_conservation_and_chain),
                                     cmocka_unit_test(test_never_slower),
                                     cmocka_unit_test(test_hand_small),
                                     cmocka_unit_test(test_bad_config),
                                     cmocka_unit_test(test_no_channel),
                                     cmocka_unit_test(test_ring_by_hand),
                                     cmocka_unit_test(test_validate_blind),
                                     cmocka_unit_test(test_kernel_calibration)};
  return cmocka_run_group_tests(tests, NULL, NULL);
}
