/*
 * test_ep.c: fabrics and node sizes in profiles, the EP kernel programs
 * and `validate ep`: routing expectations against a Monte Carlo routing,
 * every program's bytes on each channel against the traffic worked out
 * from the shape by hand, the refusal of an EP that spans nodes without a
 * fabric, predictions that never read the published value, the shipped
 * constants as the fit's fixed point; the low-latency kernels' terms (the
 * doorbells a queue pair rings, the busiest rank, a small kernel worked
 * out by hand) and the signed median per library and token band.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "plan/ep/ep.h"
#include "validate/validate.h"
#include "testio.h"
#include "testutil.h"
#include "xstage.h"

static xs_profile *load(const char *name) {
  xs_profile *p = NULL;
  xs_error e;
  if (xs_profile_load(name, &p, &e))
    fail_msg("%s: %s", name, e.message);
  return p;
}

/* ---- fabrics ---- */

static const char *const fabrics[] = {"ib-400", "roce-200", "efa-400"};

static void check_kind(const xs_profile *p, const char *key) {
  const char *s = xs_profile_number_source(p, key);
  if (!s)
    fprintf(stderr, "%s: %s: no source\n", xs_profile_name(p), key);
  assert_non_null(s);
  static const char *const kinds[] = {"measurement", "derived", "datasheet", "lead",
                                      "fitted"};
  int ok = 0;
  for (size_t k = 0; k < 5; k++)
    ok |= !strncmp(s, kinds[k], strlen(kinds[k]));
  if (!ok)
    fprintf(stderr, "%s: %s: \"%s\" has no kind\n", xs_profile_name(p), key, s);
  assert_true(ok);
}

static void test_fabric_profiles(void **st) {
  (void)st;
  static const char *const keys[] = {"inject_Bps", "drain_Bps", "capacity_B",
                                     "latency_s", "issue_overhead_s"};
  for (size_t f = 0; f < 3; f++) {
    xs_profile *p = load(fabrics[f]);
    long nic = xs_profile_find_channel(p, "nic");
    assert_true(nic >= 0);
    const xs_channel *c = xs_profile_channel(p, (size_t)nic);
    /* the wire's rate is under the line rate of its name */
    double line = f == 1 ? 25e9 : 50e9;
    assert_true(c->drain_Bps > 0.8 * line && c->drain_Bps <= line);
    for (size_t k = 0; k < 5; k++) {
      char key[64];
      snprintf(key, sizeof key, "channels.nic.%s", keys[k]);
      check_kind(p, key);
    }
    /* with a GPU: its channels and the fabric's, sources and all */
    char spec[64];
    snprintf(spec, sizeof spec, "h800-nvlink+%s", fabrics[f]);
    xs_profile *g = load(spec);
    assert_string_equal(xs_profile_name(g), spec);
    assert_string_equal(xs_profile_fabric(g), fabrics[f]);
    assert_true(xs_profile_find_channel(g, "nvlink") >= 0);
    assert_true(xs_profile_find_channel(g, "hbm") >= 0);
    long gn = xs_profile_find_channel(g, "nic");
    assert_true(gn >= 0);
    assert_memory_equal(xs_profile_channel(g, (size_t)gn), c, sizeof *c);
    check_kind(g, "channels.nic.drain_Bps");
    assert_int_equal(xs_profile_node_gpus(g), 8);
    /* the same profile back from its JSON */
    char *json = xs_profile_to_json(g);
    assert_non_null(json);
    xs_profile *back;
    xs_error e;
    assert_int_equal(xs_profile_parse(json, strlen(json), "back", &back, &e), XS_OK);
    assert_string_equal(xs_profile_fabric(back), fabrics[f]);
    assert_int_equal(xs_profile_node_gpus(back), 8);
    char *json2 = xs_profile_to_json(back);
    assert_string_equal(json, json2);
    free(json);
    free(json2);
    /* a second fabric, or a GPU profile as one, is refused */
    assert_int_equal(xs_profile_add_fabric(back, p, &e), XS_INVALID);
    assert_non_null(strstr(e.message, "already has the fabric"));
    xs_profile *h = load("h100-nvlink");
    assert_int_equal(xs_profile_add_fabric(h, h, &e), XS_INVALID);
    assert_non_null(strstr(e.message, "is not a fabric"));
    xs_profile_free(h);
    xs_profile_free(back);
    xs_profile_free(g);
    xs_profile_free(p);
  }
  /* load_fabric without one is the GPU alone */
  xs_profile *p;
  xs_error e;
  assert_int_equal(xs_profile_load_fabric("b200-nvlink", NULL, &p, &e), XS_OK);
  assert_null(xs_profile_fabric(p));
  xs_profile_free(p);
  assert_int_equal(xs_profile_load("h800-nvlink+nvlink-9000", &p, &e), XS_NOTFOUND);
  assert_non_null(strstr(e.message, "nvlink-9000"));
}

static void test_node_gpus(void **st) {
  (void)st;
  xs_profile *p = load("gb200-nvl72");
  assert_int_equal(xs_profile_node_gpus(p), 72);
  check_kind(p, "compute.ep_sm_streams");
  /* the streams an SM copies with are fitted to EP timings, and its kind
   * says so */
  assert_true(!strncmp(xs_profile_number_source(p, "compute.ep_sm_streams"), "fitted", 6));
  xs_profile_free(p);
  for (size_t i = 0; i < xs_builtin_profile_count(); i++) {
    const char *n = xs_builtin_profile_name(i);
    p = load(n);
    if (xs_profile_find_channel(p, "nvlink") >= 0)
      check_kind(p, "node_gpus");
    xs_profile_free(p);
  }
  /* not stated: 8, an HGX board; a bad one: where it is */
  static const char ok[] = "{\"name\": \"x\", \"channels\": {\"nvlink\": "
                           "{\"inject_Bps\": 1e9, \"drain_Bps\": 1e9}}}";
  static const char bad[] = "{\"name\": \"x\", \"node_gpus\": 0, \"channels\": "
                            "{\"nvlink\": {\"inject_Bps\": 1e9, \"drain_Bps\": 1e9}}}";
  xs_error e;
  assert_int_equal(xs_profile_parse(ok, strlen(ok), "ok.json", &p, &e), XS_OK);
  assert_int_equal(xs_profile_node_gpus(p), 8);
  assert_int_equal(xs_profile_set_node_gpus(p, 0, &e), XS_INVALID);
  xs_profile_free(p);
  assert_int_not_equal(xs_profile_parse(bad, strlen(bad), "bad.json", &p, &e), XS_OK);
  assert_non_null(strstr(e.message, "bad.json:1:"));
  assert_non_null(strstr(e.message, "node_gpus"));
}

/* ---- routing against a Monte Carlo ---- */

/* tokens drawn as the model says routing goes: k distinct experts of e,
 * uniform, or of the g nodes a token picks first */
static void mc_route(rng *g0, const xs__ep_shape *s, double G, double *R,
                     double *pself, double *Nn, double *own) {
  int E = (int)s->experts, K = (int)s->topk, P = (int)s->ep;
  int N = P / (int)G, g = s->topk_groups > 0 && s->topk_groups < N ? (int)s->topk_groups : N;
  int El = E / P, En = E / N;
  const int tokens = 100000;
  double r = 0, ps = 0, nn = 0, ow = 0;
  int *pick = malloc((size_t)E * sizeof *pick);
  int *nodes = malloc((size_t)N * sizeof *nodes);
  for (int t = 0; t < tokens; t++) {
    for (int i = 0; i < N; i++)
      nodes[i] = i;
    for (int i = 0; i < g; i++) { /* the token's nodes */
      int j = i + rng_int(g0, N - i), x = nodes[i];
      nodes[i] = nodes[j];
      nodes[j] = x;
    }
    int ne = 0;
    for (int i = 0; i < g; i++)
      for (int x = 0; x < En; x++)
        pick[ne++] = nodes[i] * En + x;
    char hit_rank[1024] = {0}, hit_node[1024] = {0};
    for (int i = 0; i < K; i++) { /* k distinct experts among them */
      int j = i + rng_int(g0, ne - i), x = pick[i];
      pick[i] = pick[j];
      pick[j] = x;
      hit_rank[pick[i] / El] = 1;
      hit_node[pick[i] / En] = 1;
    }
    for (int i = 0; i < P; i++)
      r += hit_rank[i];
    for (int i = 0; i < N; i++)
      nn += hit_node[i];
    ps += hit_rank[0];
    ow += hit_node[0];
  }
  free(pick);
  free(nodes);
  *R = r / tokens, *pself = ps / tokens, *Nn = nn / tokens, *own = ow / tokens;
}

static void close_to(const char *what, uint64_t seed, double got, double want,
                     double tol) {
  if (!(fabs(got - want) <= tol * fmax(fabs(want), 0.05))) {
    fprintf(stderr, "%s (seed %llu): expectation %g, Monte Carlo %g\n", what,
            (unsigned long long)seed, got, want);
    fail();
  }
}

static void test_routing(void **st) {
  (void)st;
  static const struct {
    double E, K, P, G, groups;
  } cases[] = {{256, 8, 8, 8, 0},   {256, 8, 16, 8, 0},  {256, 8, 64, 8, 4},
               {288, 8, 24, 8, 3},  {128, 8, 16, 8, 0},  {256, 6, 32, 8, 2},
               {288, 8, 36, 72, 0}, {64, 2, 16, 4, 0}};
  for (size_t c = 0; c < sizeof cases / sizeof cases[0]; c++) {
    xs__ep_shape s = {0};
    s.tokens = 128;
    s.hidden = 7168;
    s.experts = cases[c].E;
    s.topk = cases[c].K;
    s.ep = cases[c].P;
    s.elem_bytes = 1;
    s.topk_groups = cases[c].groups;
    xs__ep_route r;
    xs_error e;
    assert_int_equal(xs__ep_routing(&s, cases[c].G, &r, &e), XS_OK);
    uint64_t seed = 0x9e3779b97f4a7c15ull + c;
    rng g0 = {seed};
    double R, ps, Nn, own;
    mc_route(&g0, &s, fmin(cases[c].G, cases[c].P), &R, &ps, &Nn, &own);
    close_to("ranks a token goes to", seed, r.R, R, 0.01);
    close_to("its own rank among them", seed, r.pself, ps, 0.03);
    close_to("nodes a token goes to", seed, r.Nn, Nn, 0.01);
    close_to("its own node among them", seed, r.own, own, 0.03);
  }
  /* a shape that cannot be split is refused */
  xs__ep_shape s = {0};
  s.experts = 288, s.topk = 8, s.ep = 64, s.tokens = 1, s.hidden = 1;
  xs__ep_route r;
  xs_error e;
  assert_int_equal(xs__ep_routing(&s, 8, &r, &e), XS_INVALID);
  assert_non_null(strstr(e.message, "multiple of the EP ranks"));
}

/* ---- the programs' bytes ---- */

static double chan_bytes(const xs_program *p, const xs_profile *prof,
                         const char *name) {
  xs_result *r;
  xs_error e;
  xs_eval_options o = {0};
  o.summary_only = 1;
  assert_int_equal(xs_evaluate(p, prof, XS_MODEL_BURSTGAP, &o, &r, &e), XS_OK);
  long c = xs_profile_find_channel(prof, name);
  double b = c < 0 ? 0 : r->channels[c].bytes;
  xs_result_free(r);
  return b;
}

static void same_bytes(const char *what, double got, double want) {
  if (!(fabs(got - want) <= 1e-6 * fmax(want, 1))) {
    fprintf(stderr, "%s: program %.6g B, from the shape %.6g B\n", what, got, want);
    fail();
  }
}

/* Each library's traffic worked out by hand from its source: what the
 * NIC carries and what NVLink carries, against the program's channels
 * (NVLink's bytes are sent / nvl_eff). */
static void test_program_bytes(void **st) {
  (void)st;
  xs__ep_params par;
  xs__ep_params_default(&par);
  const double T = 4096, H = 7168, K = 8;
  xs__ep_shape s = {0};
  s.tokens = T, s.hidden = H, s.topk = K, s.experts = 256, s.elem_bytes = 1;
  xs_error e;
  xs_program *p;
  double t;
  double fp8 = H + H / 128 * 4, bf16 = 2 * H;
  static const struct {
    const char *gpu, *lib, *mode;
    double ep, groups;
  } cases[] = {{"h800-nvlink", "deepep-v1", "normal", 8, 0},
               {"h800-nvlink+ib-400", "deepep-v1", "normal", 32, 4},
               {"h800-nvlink+ib-400", "deepep-v1", "low-latency", 16, 0},
               {"h200-nvlink+efa-400", "uccl-ep", "normal", 16, 2},
               {"h200-nvlink+efa-400", "uccl-ep", "low-latency", 32, 0},
               {"h100-nvlink+ib-400", "deepep-hybrid", "normal", 32, 0},
               {"gb200-nvl72", "deepep-hybrid", "normal", 36, 0},
               {"h100-nvlink+ib-400", "deepep-v2", "normal", 16, 0},
               {"b200-nvlink", "deepep-v2", "normal", 8, 0},
               {"h100-nvlink+ib-400", "pplx-kernels", "low-latency", 64, 0}};
  for (size_t c = 0; c < sizeof cases / sizeof cases[0]; c++)
    for (int ph = 0; ph < 2; ph++) {
      xs_profile *prof = load(cases[c].gpu);
      s.ep = cases[c].ep;
      s.experts = fmod(256, s.ep) ? 288 : 256;
      s.topk_groups = cases[c].groups;
      s.elem_bytes = ph ? 2 : 1;
      s.tokens = !strcmp(cases[c].mode, "low-latency") ? 128 : T;
      xs__ep_route r;
      assert_int_equal(xs__ep_routing(&s, xs_profile_node_gpus(prof), &r, &e), XS_OK);
      double payload = ph ? bf16 : fp8, nic = 0, nvl = 0;
      const char *lib = cases[c].lib;
      int v1 = !strcmp(lib, "deepep-v1") || !strcmp(lib, "uccl-ep");
      int ll = !strcmp(cases[c].mode, "low-latency");
      double Tn = s.tokens;
      if (v1 && !ll) {
        /* a record: payload, source metadata, top-k indexes and weights in
         * the dispatch, 16-aligned */
        double rec = ceil((payload + (ph ? 0 : 8 + 8 * K)) / 16) * 16;
        if (r.N == 1) {
          nvl = Tn * (r.R - r.pself) * rec;
        } else {
          nic = Tn * (r.Nn - r.own) * rec;
          nvl = Tn * r.R * (r.G - 1) / r.G * rec;
        }
      } else if (ll) {
        /* one message per selection: 16-byte header in the dispatch */
        double msg = ph ? bf16 : 16 + fp8;
        if (!strcmp(lib, "pplx-kernels"))
          msg = ph ? bf16 : ceil((fp8 + 4) / 16) * 16;
        /* the busiest rank's: the mean T K selections and the largest of
         * P such ranks, each a sum of hypergeometric draws */
        double sd = sqrt(Tn * K * (1 - 1 / r.P) * (r.E - K) / (r.E - 1));
        double busy = 1 + xs__ep_max_normal(r.P) * sd / (Tn * K);
        nic = Tn * K * busy * r.sel_remote * msg;
        nvl = Tn * K * busy * r.sel_node * msg;
      } else if (!strcmp(lib, "deepep-hybrid")) {
        nic = r.N > 1 ? Tn * (r.Nn - r.own) * payload : 0;
        nvl = Tn * r.R * (r.G - 1) / r.G * payload;
      } else { /* V2: the top-k indexes and weights travel too */
        double b = payload + (ph ? K * 4 : K * 12);
        if (r.N > 1) {
          nic = Tn * (r.Nn - r.own) * b;
          nvl = Tn * r.R * (r.G - 1) / r.G * b;
        } else {
          nvl = Tn * (r.R - r.pself) * b;
        }
      }
      char what[160];
      assert_int_equal(xs__ep_kernel(lib, cases[c].mode, (xs__ep_phase)ph, &s, prof,
                                     &par, &p, &t, &e),
                       XS_OK);
      assert_true(t > 0 && isfinite(t));
      snprintf(what, sizeof what, "%s %s %s EP%g on %s: NIC", lib, cases[c].mode,
               ph ? "combine" : "dispatch", s.ep, cases[c].gpu);
      same_bytes(what, chan_bytes(p, prof, "nic"), nic);
      snprintf(what, sizeof what, "%s %s %s EP%g on %s: NVLink", lib, cases[c].mode,
               ph ? "combine" : "dispatch", s.ep, cases[c].gpu);
      same_bytes(what, chan_bytes(p, prof, "nvlink") * par.nvl_eff, nvl);
      /* the time is the program's: burstgap on the program returned */
      xs_result *res;
      assert_int_equal(xs_evaluate(p, prof, XS_MODEL_BURSTGAP, NULL, &res, &e), XS_OK);
      assert_true(fabs(res->makespan_s - t) <= 1e-12 * t);
      /* and no faster than its bytes through the tightest link allow */
      for (size_t ch = 0; ch < res->nchannels; ch++) {
        const xs_channel *k = xs_profile_channel(prof, ch);
        assert_true(t >= res->channels[ch].bytes / k->drain_Bps * (1 - 1e-9));
      }
      xs_result_free(res);
      xs_program_free(p);
      xs_profile_free(prof);
    }
}

/* ---- the terms of the low-latency kernels ---- */

/* Doorbells: E[floor(X / b)] for X ~ Binomial(n, p), against the sum over
 * the binomial's probabilities from lgamma, and a Monte Carlo. */
static void test_batches(void **st) {
  (void)st;
  static const struct {
    double n, p, b;
  } cases[] = {{128, 8.0 / 288, 4}, {128, 8.0 / 256, 4}, {4096, 0.03, 4},
               {1, 0.5, 4}, {64, 0.9, 3}, {300, 0.2, 1}};
  for (size_t c = 0; c < sizeof cases / sizeof cases[0]; c++) {
    double n = cases[c].n, p = cases[c].p, b = cases[c].b, want = 0;
    for (double x = 0; x <= n; x++)
      want += floor(x / b) * exp(lgamma(n + 1) - lgamma(x + 1) - lgamma(n - x + 1) +
                                 x * log(p) + (n - x) * log1p(-p));
    double got = xs__ep_batches(n, p, b);
    if (!(fabs(got - want) <= 1e-9 * fmax(1, want)))
      fprintf(stderr, "batches(%g, %g, %g): %.12g, by the probabilities %.12g\n", n,
              p, b, got, want);
    assert_true(fabs(got - want) <= 1e-9 * fmax(1, want));
  }
  uint64_t seed = 0x5eed0001ull;
  rng g = {seed};
  double sum = 0;
  const int trials = 200000;
  for (int t = 0; t < trials; t++) {
    int x = 0;
    for (int i = 0; i < 128; i++)
      x += rng_unit(&g) < 8.0 / 288;
    sum += x / 4;
  }
  close_to("doorbells of a queue pair", seed, xs__ep_batches(128, 8.0 / 288, 4),
           sum / trials, 0.02);
  assert_true(xs__ep_batches(10, 1, 4) == 2 && xs__ep_batches(0, 0.5, 4) == 0);
}

/* The busiest rank: the largest of n normals against a Monte Carlo (and
 * two's exactly, 1 / sqrt(pi)), and
 * the busiest rank's selections over the mean against a Monte Carlo
 * routing (uniform distinct experts) at the project's shapes. */
static void test_busiest(void **st) {
  (void)st;
  uint64_t seed = 0x5eed0002ull;
  rng g = {seed};
  static const double ns[] = {2, 8, 16, 64, 256};
  for (size_t c = 0; c < sizeof ns / sizeof ns[0]; c++) {
    double sum = 0;
    const int trials = 20000;
    for (int t = 0; t < trials; t++) {
      double mx = -INFINITY;
      for (int i = 0; i < (int)ns[c]; i++) {
        /* Box-Muller */
        double u = rng_unit(&g), v = rng_unit(&g);
        mx = fmax(mx, sqrt(-2 * log(1 - u)) * cos(6.283185307179586 * v));
      }
      sum += mx;
    }
    /* Blom's approximation: 4.5% above the exact 1 / sqrt(pi) at two,
     * within 1.5% from eight on */
    close_to("the largest of n normals", seed, xs__ep_max_normal(ns[c]), sum / trials,
             ns[c] < 8 ? 0.06 : 0.015);
  }
  assert_true(fabs(xs__ep_max_normal(2) / 0.5641896 - 1) <= 0.05);
  static const struct {
    double P, T, K, E;
  } cases[] = {{16, 128, 8, 288}, {64, 128, 8, 256}, {8, 128, 8, 288}};
  for (size_t c = 0; c < sizeof cases / sizeof cases[0]; c++) {
    int P = (int)cases[c].P, T = (int)cases[c].T, K = (int)cases[c].K;
    int E = (int)cases[c].E, El = E / P;
    int *pick = malloc((size_t)E * sizeof *pick), *cnt = malloc((size_t)P * sizeof *cnt);
    const int trials = 100;
    double sum = 0;
    for (int t = 0; t < trials; t++) {
      for (int i = 0; i < P; i++)
        cnt[i] = 0;
      for (int tok = 0; tok < P * T; tok++) {
        for (int i = 0; i < E; i++)
          pick[i] = i;
        for (int i = 0; i < K; i++) {
          int j = i + rng_int(&g, E - i), x = pick[i];
          pick[i] = pick[j], pick[j] = x;
          cnt[pick[i] / El]++;
        }
      }
      int mx = 0;
      for (int i = 0; i < P; i++)
        mx = cnt[i] > mx ? cnt[i] : mx;
      sum += (double)mx / (T * K);
    }
    free(pick);
    free(cnt);
    xs__ep_route r = {0};
    r.P = P, r.T = T, r.K = K, r.E = E;
    close_to("the busiest rank over the mean", seed, xs__ep_busiest(&r), sum / trials,
             0.01);
  }
}

/* DeepEP's low-latency kernel for a shape small enough to follow by hand
 * (one token, one expert per rank and token, 128 elements, 16 ranks on
 * two nodes over ib-400): the SMs' step (pair_s for their share of the
 * selections), the NIC injecting the remote messages, the count one
 * network latency behind them, then the receivers' share and the copy
 * out through HBM (its latency); and a fabric slower by 10 us makes the
 * kernel slower by 10 us, its one network hop. */
static void test_ll_chain(void **st) {
  (void)st;
  xs_profile *prof = load("h800-nvlink+ib-400");
  xs__ep_shape s = {0};
  s.tokens = 1, s.hidden = 128, s.topk = 1, s.experts = 16, s.ep = 16, s.elem_bytes = 1;
  xs__ep_params par;
  xs__ep_params_default(&par);
  const xs_channel *nic = xs_profile_channel(prof, (size_t)xs_profile_find_channel(prof, "nic"));
  const xs_channel *hbm = xs_profile_channel(prof, (size_t)xs_profile_find_channel(prof, "hbm"));
  xs__ep_route r;
  xs_error e;
  assert_int_equal(xs__ep_routing(&s, 8, &r, &e), XS_OK);
  /* 16 experts over 132 SMs: 16 blocks; the busiest rank's selections */
  double B = 16, sel = xs__ep_busiest(&r);
  for (int ph = 0; ph < 2; ph++) {
    double msg = ph ? 2 * 128 : 16 + 128 + 4;
    double out = ph ? sel + 1 : 2 * sel; /* messages' bytes through HBM */
    double want = 2 * par.pair_s * sel / B + sel * r.sel_remote * msg / nic->inject_Bps +
                  nic->latency_s + hbm->latency_s + out * msg / hbm->drain_Bps;
    xs__ep_shape sp = s;
    sp.elem_bytes = ph ? 2 : 1;
    double t;
    assert_int_equal(xs__ep_kernel("deepep-v1", "low-latency", (xs__ep_phase)ph, &sp,
                                   prof, NULL, NULL, &t, &e),
                     XS_OK);
    if (!(fabs(t / want - 1) <= 0.005))
      fprintf(stderr, "LL %s: program %.6g us, by hand %.6g us\n",
              ph ? "combine" : "dispatch", t * 1e6, want * 1e6);
    assert_true(fabs(t / want - 1) <= 0.005);
    /* one hop: the fabric's latency once */
    xs_profile *slow = load("h800-nvlink");
    xs_channel c = *nic;
    c.latency_s += 10e-6;
    assert_int_equal(xs_profile_add_channel(slow, "nic", &c, &e), XS_OK);
    double t2;
    assert_int_equal(xs__ep_kernel("deepep-v1", "low-latency", (xs__ep_phase)ph, &sp,
                                   slow, NULL, NULL, &t2, &e),
                     XS_OK);
    assert_true(fabs(t2 - t - 10e-6) <= 1e-3 * t);
    xs_profile_free(slow);
  }
  xs_profile_free(prof);
}

static void test_needs_fabric(void **st) {
  (void)st;
  xs_profile *prof = load("h800-nvlink");
  xs__ep_shape s = {0};
  s.tokens = 4096, s.hidden = 7168, s.topk = 8, s.experts = 256, s.ep = 32;
  s.elem_bytes = 1;
  xs_error e;
  double t;
  assert_int_equal(xs__ep_kernel("deepep-v1", "normal", XS__EP_DISPATCH, &s, prof, NULL,
                                 NULL, &t, &e),
                   XS_INVALID);
  assert_non_null(strstr(e.message, "--fabric"));
  assert_non_null(strstr(e.message, "4 nodes"));
  xs_profile_free(prof);
  /* 72 GPUs share one NVLink domain on a GB200 rack: no fabric needed */
  prof = load("gb200-nvl72");
  s.ep = 64;
  assert_int_equal(xs__ep_kernel("deepep-hybrid", "normal", XS__EP_DISPATCH, &s, prof,
                                 NULL, NULL, &t, &e),
                   XS_OK);
  s.ep = 144;
  s.experts = 288;
  assert_int_equal(xs__ep_kernel("deepep-hybrid", "normal", XS__EP_DISPATCH, &s, prof,
                                 NULL, NULL, &t, &e),
                   XS_INVALID);
  xs_profile_free(prof);
  /* an unknown library names the known ones */
  prof = load("h800-nvlink");
  s.ep = 8;
  s.experts = 256;
  assert_int_equal(xs__ep_kernel("deepep-v3", "normal", XS__EP_DISPATCH, &s, prof, NULL,
                                 NULL, &t, &e),
                   XS_NOTFOUND);
  assert_non_null(strstr(e.message, "pplx-kernels low-latency"));
  xs_profile_free(prof);
}

/* more SMs never make DeepEP's intranode kernels slower, and a wider
 * NIC never makes an internode kernel slower */
static void test_monotone(void **st) {
  (void)st;
  xs_profile *prof = load("b200-nvlink");
  xs__ep_shape s = {0};
  s.tokens = 4096, s.hidden = 7168, s.topk = 8, s.experts = 64, s.ep = 8;
  s.elem_bytes = 1;
  double prev = INFINITY, t;
  xs_error e;
  for (double sms = 8; sms <= 64; sms += 8) {
    s.sms = sms;
    assert_int_equal(xs__ep_kernel("deepep-v1", "normal", XS__EP_DISPATCH, &s, prof,
                                   NULL, NULL, &t, &e),
                     XS_OK);
    /* (where the link binds, fewer chunks a channel leave a slightly
     * longer last drain: within 1%) */
    assert_true(t <= prev * 1.01);
    prev = t;
  }
  xs_profile_free(prof);
  s.sms = 0, s.ep = 32, s.experts = 256;
  double slow, fast;
  prof = load("h800-nvlink+roce-200");
  assert_int_equal(xs__ep_kernel("deepep-v1", "normal", XS__EP_DISPATCH, &s, prof, NULL,
                                 NULL, &slow, &e),
                   XS_OK);
  xs_profile_free(prof);
  prof = load("h800-nvlink+ib-400");
  assert_int_equal(xs__ep_kernel("deepep-v1", "normal", XS__EP_DISPATCH, &s, prof, NULL,
                                 NULL, &fast, &e),
                   XS_OK);
  xs_profile_free(prof);
  assert_true(fast < slow);
}

/* ---- validate ep ---- */

static char *data_file(size_t *len) {
  char path[1024];
  snprintf(path, sizeof path, "%s/data/published/ep.csv", XSTAGE_SRC);
  char *t = xs_test_read_file(path, len);
  assert_non_null(t);
  return t;
}

/* every value times 3: not one prediction moves */
static void test_validate_honest(void **st) {
  (void)st;
  size_t len;
  char *text = data_file(&len);
  xs_validate_set a, b;
  xs_error e;
  assert_int_equal(xs_validate_ep(text, len, "ep.csv", &a, NULL, NULL, &e), XS_OK);
  assert_int_equal(a.nrows, 325);
  /* the value column is the 16th: triple it on every data line */
  size_t cap = 2 * len + 1, n = 0;
  char *t3 = malloc(cap);
  const char *p = text;
  int header = 1;
  while (*p) {
    const char *nl = strchr(p, '\n');
    size_t ll = nl ? (size_t)(nl - p) : strlen(p);
    if (*p == '#' || header) {
      header = header && *p == '#';
      memcpy(t3 + n, p, ll);
      n += ll;
    } else {
      int field = 0, quoted = 0;
      for (size_t i = 0; i < ll; i++) {
        char ch = p[i];
        if (ch == '"')
          quoted = !quoted;
        if (field == 15 && !quoted && ch != ',') {
          size_t j = i;
          while (j < ll && p[j] != ',')
            j++;
          char num[64];
          snprintf(num, sizeof num, "%.*s", (int)(j - i), p + i);
          n += (size_t)snprintf(t3 + n, cap - n, "%.17g", 3 * strtod(num, NULL));
          i = j - 1;
          continue;
        }
        if (ch == ',' && !quoted)
          field++;
        t3[n++] = ch;
      }
    }
    if (nl)
      t3[n++] = '\n';
    p = nl ? nl + 1 : p + ll;
  }
  t3[n] = '\0';
  assert_int_equal(xs_validate_ep(t3, n, "ep3.csv", &b, NULL, NULL, &e), XS_OK);
  assert_int_equal(b.nrows, a.nrows);
  for (size_t i = 0; i < a.nrows; i++) {
    assert_memory_equal(&a.rows[i].ep.predicted, &b.rows[i].ep.predicted, sizeof(double));
    assert_true(fabs(b.rows[i].ep.measured / a.rows[i].ep.measured - 3) < 1e-12);
    assert_true(a.rows[i].error != b.rows[i].error);
  }
  xs_validate_free(&a);
  xs_validate_free(&b);
  free(t3);
  free(text);
}

/* the project's ep.csv validated (*text to free with the set) */
static void validate_data(xs_validate_set *set, char **text) {
  size_t len;
  xs_error e;
  *text = data_file(&len);
  assert_int_equal(xs_validate_ep(*text, len, "ep.csv", set, NULL, NULL, &e), XS_OK);
}

/* The constants the library ships are what the fit finds on the project's
 * data: the fit started from them does not move them by more than 2%. */
static void test_constants_fit(void **st) {
  (void)st;
  char *text;
  xs_validate_set set;
  xs_error e;
  validate_data(&set, &text);
  double v[XS_EP_CONSTANTS];
  assert_int_equal(xs_validate_ep_fit(&set, NULL, v, &e), XS_OK);
  for (size_t i = 0; i < XS_EP_CONSTANTS; i++) {
    double shipped = xs_ep_constant_value(i);
    if (fabs(v[i] / shipped - 1) > 0.02)
      fprintf(stderr, "%s: shipped %g, the fit finds %g\n", xs_ep_constant_name(i),
              shipped, v[i]);
    assert_true(fabs(v[i] / shipped - 1) <= 0.02);
  }
  xs_validate_free(&set);
  free(text);
}

static int cmp_double(const void *a, const void *b) {
  double x = *(const double *)a, y = *(const double *)b;
  return (x > y) - (x < y);
}

/* The signed median per library/mode and token band against the rows'
 * own times, sorted here: every arm and band, NAN where fewer than 3
 * rows, and a row in GB/s counted by its time (a bandwidth over-predicted
 * is a time under-predicted). */
static void test_band_bias(void **st) {
  (void)st;
  char *text;
  xs_validate_set set;
  validate_data(&set, &text);
  const double lo[] = {0, 129, 1025}, hi[] = {128, 1024, INFINITY};
  double *v = malloc(set.nrows * sizeof *v);
  size_t checked = 0;
  for (size_t a = 0; a < xs__ep_library_count(); a++) {
    const char *mode, *lib = xs__ep_library_name(a, &mode);
    char arm[64];
    snprintf(arm, sizeof arm, "%s/%s", lib, mode);
    for (int b = 0; b < XS_VALIDATE_EP_BANDS; b++) {
      size_t k = 0;
      for (size_t i = 0; i < set.nrows; i++) {
        const xs_validate_row *r = &set.rows[i];
        if (!strcmp(r->arm, arm) && r->tokens >= lo[b] && r->tokens <= hi[b]) {
          double t = r->ep.bytes > 0 ? r->ep.measured / r->ep.predicted - 1
                                     : r->ep.predicted / r->ep.measured - 1;
          v[k++] = t;
        }
      }
      qsort(v, k, sizeof *v, cmp_double);
      double want = k < 3 ? NAN : k % 2 ? v[k / 2] : (v[k / 2 - 1] + v[k / 2]) / 2;
      size_t n;
      const char *label;
      double got = xs_validate_ep_band_bias(&set, arm, b, &label, &n);
      assert_int_equal(n, k);
      if (isnan(want)) {
        assert_true(isnan(got));
      } else {
        assert_true(fabs(got - want) <= 1e-12);
        checked++;
      }
    }
  }
  /* ep.csv's low-latency rows are at 1 and 128 tokens, the normal ones at
   * 4096 and 8192: seven cells */
  assert_int_equal(checked, 7);
  free(v);
  xs_validate_free(&set);
  free(text);
}

/* The refits that leave each source out, two ways on the project's data:
 * from scratch (the exact refit it ships with) and as a set of many
 * sources makes them (each source of under a tenth of the rows refitted
 * on the rows' linear model about the fit to all rows). The linear model
 * is an approximation: each constant within 5% of the exact refit's, and
 * each library and kernel mode's left-out median within 3 points. */
static double loso_median(const xs_validate_set *set, const char *arm) {
  double v[512];
  size_t k = 0;
  for (size_t i = 0; i < set->nrows && k < 512; i++)
    if (!arm || !strcmp(set->rows[i].arm, arm))
      v[k++] = fabs(set->rows[i].ep.loso_error);
  return xs__median_of(v, k);
}

static void test_by_source_linear(void **st) {
  (void)st;
  size_t len;
  char *text = data_file(&len);
  xs_validate_set exact, lin;
  xs_error e;
  assert_int_equal(xs_validate_ep(text, len, "ep.csv", &exact, NULL, NULL, &e), XS_OK);
  assert_int_equal(xs_validate_ep(text, len, "ep.csv", &lin, NULL, NULL, &e), XS_OK);
  size_t ns = xs_validate_distinct(&exact, 1, NULL, 0);
  assert_true(ns * exact.nrows <= XS_EP_EXACT_WORK); /* the shipped path is exact */
  double *ve = malloc(ns * XS_EP_CONSTANTS * sizeof *ve);
  double *vl = malloc(ns * XS_EP_CONSTANTS * sizeof *vl);
  assert_int_equal(xs_validate_ep_by_source(&exact, ve, &e), XS_OK);
  assert_int_equal(xs__validate_ep_by_source_within(&lin, vl, 0, &e), XS_OK);
  double worst = 0;
  for (size_t k = 0; k < ns * XS_EP_CONSTANTS; k++) {
    double d = fabs(vl[k] / ve[k] - 1);
    worst = fmax(worst, d);
    if (d > 0.05)
      fprintf(stderr, "source %zu, %s: exact %g, linear %g\n", k / XS_EP_CONSTANTS,
              xs_ep_constant_name(k % XS_EP_CONSTANTS), ve[k], vl[k]);
    assert_true(d <= 0.05);
  }
  const char **arms = malloc(exact.nrows * sizeof *arms);
  size_t na = xs_validate_distinct(&exact, 0, arms, exact.nrows);
  double worst_med = 0;
  for (size_t a = 0; a <= na; a++) {
    const char *arm = a < na ? arms[a] : NULL;
    double me = loso_median(&exact, arm), ml = loso_median(&lin, arm);
    worst_med = fmax(worst_med, fabs(ml - me));
    if (fabs(ml - me) > 0.03)
      fprintf(stderr, "%s: left out median exact %.3f, linear %.3f\n", arm ? arm : "all",
              me, ml);
    assert_true(fabs(ml - me) <= 0.03);
  }
  printf("  linear against exact refits, %zu sources: constants within %.1f%%, left-out "
         "medians within %.1f points\n", ns, 100 * worst, 100 * worst_med);
  free(arms);
  free(ve);
  free(vl);
  xs_validate_free(&exact);
  xs_validate_free(&lin);
  free(text);
}

/* A fabric misspelt is refused naming the three built-in fabrics, and no
 * GPU profile among them. */
static void test_unknown_fabric(void **st) {
  (void)st;
  xs_profile *p = NULL;
  xs_error e;
  assert_int_equal(xs_profile_load_fabric("h800-nvlink", "ib400", &p, &e), XS_NOTFOUND);
  assert_null(p);
  assert_non_null(strstr(e.message, "unknown fabric \"ib400\""));
  for (size_t i = 0; i < sizeof fabrics / sizeof *fabrics; i++)
    assert_non_null(strstr(e.message, fabrics[i]));
  for (size_t i = 0; i < xs_builtin_profile_count(); i++) {
    const char *name = xs_builtin_profile_name(i);
    int fabric = 0;
    for (size_t k = 0; k < sizeof fabrics / sizeof *fabrics; k++)
      fabric |= !strcmp(name, fabrics[k]);
    if (!fabric && strstr(e.message, name))
      fprintf(stderr, "%s in: %s\n", name, e.message);
    assert_true(fabric || !strstr(e.message, name));
  }
  assert_int_equal(xs_profile_load("h800-nvlink+ib400", &p, &e), XS_NOTFOUND);
  assert_non_null(strstr(e.message, "not a built-in fabric"));
}

/* validate megamoe --by-source: the sequential arm predicted again with the
 * EP constants refitted without some sources. The constants are the fit's
 * (xs_validate_ep_fit, the same leave-out), the left-out count is the rows
 * whose source the pattern begins, and refitted on every row (constants
 * within 2% of the shipped ones) each sequential row stays within 2% of its
 * shipped prediction; other rows get none. */
static void test_megamoe_refit(void **st) {
  (void)st;
  size_t len, mlen;
  char *text = data_file(&len), path[1024];
  snprintf(path, sizeof path, "%s/data/published/megamoe.csv", XSTAGE_SRC);
  char *mtext = xs_test_read_file(path, &mlen);
  assert_non_null(mtext);
  xs_validate_set ep, moe;
  xs_error e;
  assert_int_equal(xs_validate_ep(text, len, "ep.csv", &ep, NULL, NULL, &e), XS_OK);
  assert_int_equal(xs_validate_megamoe(mtext, mlen, "megamoe.csv", &moe, NULL, NULL, &e),
                   XS_OK);
  const char *prefix = "deepseek-ai/DeepEP*";
  double v[XS_EP_CONSTANTS];
  assert_int_equal(xs_validate_ep_fit(&ep, prefix, v, &e), XS_OK);
  assert_int_equal(xs_validate_megamoe_refit(&moe, &ep, prefix, &e), XS_OK);
  size_t out = 0, seq = 0;
  for (size_t i = 0; i < ep.nrows; i++)
    out += !strncmp(ep.rows[i].source, prefix, strlen(prefix) - 1);
  assert_true(moe.refitted);
  assert_int_equal(moe.refit_left_out, out);
  assert_true(out > 0 && out < ep.nrows);
  assert_int_equal(moe.refit_rows, ep.nrows);
  assert_string_equal(moe.refit_without, prefix);
  for (size_t i = 0; i < XS_EP_CONSTANTS; i++)
    assert_memory_equal(&moe.refit[i], &v[i], sizeof v[i]);
  assert_int_equal(xs_validate_megamoe_refit(&moe, &ep, NULL, &e), XS_OK);
  for (size_t i = 0; i < moe.nrows; i++) {
    const xs_validate_row *r = &moe.rows[i];
    if (strcmp(r->arm, "sequential") || (r->metric[0] && strcmp(r->metric, "time"))) {
      assert_true(isnan(r->refit_us));
      continue;
    }
    seq++;
    if (fabs(r->refit_us / r->predicted_us - 1) > 0.02)
      fprintf(stderr, "line %zu: shipped %.1f us, refitted on every row %.1f us\n", r->line,
              r->predicted_us, r->refit_us);
    assert_true(fabs(r->refit_us / r->predicted_us - 1) <= 0.02);
  }
  assert_true(seq >= 20);
  /* the medians over the refitted rows, against a median by hand */
  {
    double ra[512], rb[512], shipped;
    size_t k = 0, m;
    for (size_t i = 0; i < moe.nrows && k < 512; i++)
      if (moe.rows[i].refit_us > 0) {
        ra[k] = fabs(moe.rows[i].refit_us / moe.rows[i].measured_us - 1);
        rb[k++] = fabs(moe.rows[i].error);
      }
    qsort(ra, k, sizeof *ra, cmp_double);
    qsort(rb, k, sizeof *rb, cmp_double);
    double med = xs_validate_refit_median(&moe, NULL, &shipped, &m);
    assert_int_equal(m, seq);
    assert_int_equal(k, seq);
    double wa = k % 2 ? ra[k / 2] : (ra[k / 2 - 1] + ra[k / 2]) / 2;
    double wb = k % 2 ? rb[k / 2] : (rb[k / 2 - 1] + rb[k / 2]) / 2;
    if (med != wa || shipped != wb)
      fail_msg("refit median %.9g (by hand %.9g), shipped %.9g (%.9g)", med, wa, shipped, wb);
    assert_true(isnan(xs_validate_refit_median(&moe, "no such source", NULL, &m)) && m == 0);
  }
  /* a pattern longer than the set keeps is refused, not cut */
  char longer[200];
  memset(longer, 'a', sizeof longer - 2);
  longer[sizeof longer - 2] = '*';
  longer[sizeof longer - 1] = '\0';
  assert_int_equal(xs_validate_megamoe_refit(&moe, &ep, longer, &e), XS_INVALID);
  assert_non_null(strstr(e.message, "leave out"));
  xs_validate_free(&ep);
  xs_validate_free(&moe);
  free(mtext);
  free(text);
}

static void bad_csv(const char *body, const char *want) {
  char text[4096];
  snprintf(text, sizeof text,
           "source,gpu,fabric,library,kernel,phase,scope,ep,nodes,tokens,hidden,"
           "topk,experts,dtype,metric,value,timing,knobs\n%s\n",
           body);
  xs_validate_set set;
  xs_error e;
  assert_int_equal(xs_validate_ep(text, strlen(text), "bad.csv", &set, NULL, NULL, &e),
                   XS_INVALID);
  if (!strstr(e.message, want))
    fprintf(stderr, "wanted \"%s\" in: %s\n", want, e.message);
  assert_non_null(strstr(e.message, want));
}

static void test_validate_errors(void **st) {
  (void)st;
  bad_csv("s,h800-nvlink,none,deepep-v3,normal,dispatch,intranode,8,1,4096,7168,8,256,"
          "fp8,nvl_GBps,153,t,",
          "bad.csv:2:");
  bad_csv("s,h800-nvlink,none,deepep-v1,normal,dispatch,intranode,8,1,4096,7168,8,256,"
          "fp8,nvl_GBps,-1,t,",
          "value: expected a positive number");
  bad_csv("s,h800-nvlink,none,deepep-v1,normal,dispatch,intranode,8,1,4096,7168,8,256,"
          "fp4,nvl_GBps,153,t,",
          "dtype: expected fp8 or bf16");
  bad_csv("s,h800-nvlink,none,deepep-v1,normal,dispatch,intranode,32,4,4096,7168,8,256,"
          "fp8,rdma_GBps,40,t,",
          "--fabric");
  bad_csv("s,h800-nvlink,ib-800,deepep-v1,normal,dispatch,internode,32,4,4096,7168,8,"
          "256,fp8,rdma_GBps,40,t,",
          "ib-800");
  bad_csv("s,h800-nvlink,none,deepep-v1,normal,dispatch,intranode,8,1,4096,7168,8,256,"
          "fp8,nvl_GBps,153,t,sms=two",
          "knobs: sms: expected a whole number");
  bad_csv("s,h800-nvlink,none,pplx-kernels,low-latency,dispatch,intranode,8,1,128,7168,"
          "8,256,fp8,rdma_GBps,50,t,",
          "does not print rdma_GBps");
  xs_validate_set set;
  xs_error e;
  const char *nocol = "source,gpu\ns,h800-nvlink\n";
  assert_int_equal(xs_validate_ep(nocol, strlen(nocol), "n.csv", &set, NULL, NULL, &e),
                   XS_INVALID);
  assert_non_null(strstr(e.message, "no column \"fabric\""));
}

/* The MegaMoE planner across nodes: an EP past one node needs a fabric;
 * with one, its sequential arm's dispatch and combine are the EP kernel
 * programs' for the same shape (one model of the library, not two). */
static void test_moe_across_nodes(void **st) {
  (void)st;
  xs_moe_config c;
  assert_int_equal(xs_moe_preset("deepseek-v3", &c), 0);
  c.ep = 32;
  xs_profile *prof = load("h800-nvlink");
  xs_moe_result r;
  xs_error e;
  assert_int_equal(xs_moe_plan(&c, prof, &r, &e), XS_INVALID);
  assert_non_null(strstr(e.message, "--fabric"));
  assert_non_null(strstr(e.message, "4 nodes"));
  xs_profile_free(prof);
  static const struct {
    const char *lib, *mode;
    double tokens;
  } arms[] = {{"", "", 4096}, {"deepep-v1", "normal", 4096},
              {"deepep-v1", "low-latency", 128}, {"uccl-ep", "normal", 1024}};
  prof = load("h800-nvlink+ib-400");
  for (size_t a = 0; a < sizeof arms / sizeof arms[0]; a++) {
    snprintf(c.ep_library, sizeof c.ep_library, "%s", arms[a].lib);
    snprintf(c.ep_kernel, sizeof c.ep_kernel, "%s", arms[a].mode);
    c.tokens = arms[a].tokens;
    xs_program *p;
    assert_int_equal(xs_moe_program(&c, prof, XS_MOE_SEQUENTIAL, NULL, &p, &e), XS_OK);
    double got[2] = {NAN, NAN};
    for (size_t w = 0; w < xs_program_worker_count(p); w++) {
      const char *n = xs_program_worker_name(p, w);
      int k = !strncmp(n, "rows.a2a", 8) ? 0 : !strncmp(n, "link.a2a", 8) ? 1 : -1;
      for (size_t i = 0; k >= 0 && i < xs_program_op_count(p, w); i++) {
        xs_op_info op;
        xs_program_op(p, w, i, &op);
        if (op.kind == XS_OP_COMPUTE)
          got[k] = op.value;
      }
    }
    xs_program_free(p);
    for (int ph = 0; ph < 2; ph++) {
      xs__ep_shape s = {0};
      s.tokens = c.tokens, s.hidden = c.hidden, s.topk = c.topk;
      s.experts = c.experts, s.ep = c.ep;
      s.elem_bytes = ph ? c.combine_bytes : c.act_bytes;
      s.align = 128, s.cpu_sync = 1, s.api_time = 1;
      double t;
      assert_int_equal(xs__ep_kernel(arms[a].lib[0] ? arms[a].lib : "deepep-v2",
                                     arms[a].mode[0] ? arms[a].mode : "normal",
                                     (xs__ep_phase)ph, &s, prof, NULL, NULL, &t, &e),
                       XS_OK);
      if (!(fabs(got[ph] / t - 1) <= 0.05))
        fprintf(stderr, "%s %s %s: the plan's %g s, the EP kernel's %g s\n",
                arms[a].lib, arms[a].mode, ph ? "combine" : "dispatch", got[ph], t);
      assert_true(fabs(got[ph] / t - 1) <= 0.05);
    }
  }
  /* the plan itself: every schedule, the fused ones' bytes partly over
   * the NIC */
  c.ep_library[0] = c.ep_kernel[0] = '\0';
  c.tokens = 512;
  assert_int_equal(xs_moe_plan(&c, prof, &r, &e), XS_OK);
  for (int s = 0; s < XS_MOE_SCHEDULES; s++)
    assert_true(r.time_s[s][XS_MODEL_BURSTGAP] > 0 && isfinite(r.time_s[s][XS_MODEL_BURSTGAP]));
  xs_program *p;
  assert_int_equal(xs_moe_program(&c, prof, XS_MOE_FUSED_LAG, NULL, &p, &e), XS_OK);
  assert_true(chan_bytes(p, prof, "nic") > 0);
  xs_program_free(p);
  xs_profile_free(prof);
  /* an unknown library is refused with the known ones */
  snprintf(c.ep_library, sizeof c.ep_library, "deepep-v9");
  assert_int_equal(xs_moe_config_check(&c, &e), XS_INVALID);
  assert_non_null(strstr(e.message, "deepep-hybrid normal"));
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_fabric_profiles), cmocka_unit_test(test_node_gpus),
      cmocka_unit_test(test_routing),         cmocka_unit_test(test_program_bytes),
      cmocka_unit_test(test_batches),         cmocka_unit_test(test_busiest),
      cmocka_unit_test(test_ll_chain),
      cmocka_unit_test(test_needs_fabric),    cmocka_unit_test(test_monotone),
      cmocka_unit_test(test_validate_honest), cmocka_unit_test(test_constants_fit),
      cmocka_unit_test(test_band_bias),
      cmocka_unit_test(test_by_source_linear),
      cmocka_unit_test(test_validate_errors), cmocka_unit_test(test_moe_across_nodes),
      cmocka_unit_test(test_megamoe_refit),   cmocka_unit_test(test_unknown_fabric)};
  return cmocka_run_group_tests(tests, NULL, NULL);
}
