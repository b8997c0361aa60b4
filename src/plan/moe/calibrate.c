/*
 * calibrate.c: a plain FP8 GEMM kernel as a per-SM program, for checking
 * (and fitting) the tile model against published GEMM microbenchmarks:
 * DeepGEMM's README tables (data/published/deepgemm-h800.csv), each row
 * with the block sizes DeepGEMM's heuristic of that commit (55ab91f) picks
 * for it. The same emitter and tile model as the MoE kernels: a GEMM of
 * `groups` x (m x n x k) is an L1 phase over `groups` experts of m rows,
 * with K = k and 2I = n, writing BF16.
 */
#include "plan/moe/moe.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

/* DeepGEMM's get_best_configs at 55ab91f: BLOCK_M 64 for m <= 64 (128
 * for the contiguous layout), BLOCK_N from 16..128 by 8, 144, 160 by the
 * fewest waves, then the fullest last wave, then the larger BLOCK_M and
 * the smaller BLOCK_N; TMA multicast of 2 (on the larger block side
 * first) for dense GEMMs with m >= 512 where the shape allows it. Each
 * math warpgroup takes 64 rows and all BLOCK_N columns. */
static void deepgemm_55ab91f(const char *layout, double groups, double m,
                             double n, double S, xs__tile_cfg *t) {
  int contiguous = strcmp(layout, "contiguous") == 0;
  double bm = contiguous ? 128 : (m <= 64 ? 64 : 128);
  double best_bn = 0, best_w = 0, best_u = 0;
  for (int i = 0; i < 17; i++) {
    double bn = i < 15 ? 16 + 8 * i : (i == 15 ? 144 : 160);
    double tiles = ceil(m / bm) * ceil(n / bn) * groups;
    double w = ceil(tiles / S), u = fmod(tiles, S);
    if (u == 0)
      u = S;
    if (best_bn == 0 || w < best_w ||
        (w == best_w && (u > best_u || (u == best_u && bn < best_bn)))) {
      best_bn = bn;
      best_w = w;
      best_u = u;
    }
  }
  memset(t, 0, sizeof *t);
  t->bm = bm;
  t->bn = best_bn;
  t->wgs = bm / 64;
  t->wg_n = best_bn;
  t->cluster = 1;
  t->scale_k1 = t->scale_k2 = 128;
  int legal_a = fmod(n, best_bn * 2) == 0, legal_b = fmod(m, bm * 2) == 0;
  if (m >= 512 && groups == 1 && fmod(S, 2) == 0) {
    int a_first = bm > best_bn;
    if (a_first ? legal_a : legal_b) {
      t->cluster = 2;
      t->mc_a = a_first;
      t->mc_b = !a_first;
    } else if (a_first ? legal_b : legal_a) {
      t->cluster = 2;
      t->mc_a = !a_first;
      t->mc_b = a_first;
    }
  }
}

/* One persistent GEMM phase over the workload's experts (rows aligned per
 * expert to `align`, 0 for none), tiles of one layer in order, tile t to
 * SM t mod S, evaluated under burstgap on its own. */
static xs_status phase_time(const xs_profile *prof, const xs__moe_wl *wl,
                            const xs__gemm_terms *g, const xs__tile_cfg *t,
                            double align, int layer, xs__emit_flow *flow,
                            double *time_s, xs_error *err) {
  xs__moe_block *b = NULL;
  size_t nb = 0;
  xs__tasks tasks = {0};
  xs__emit *e = NULL;
  xs_program *p = NULL;
  xs_result *r = NULL;
  xs_status st;
  if ((st = xs__moe_blocks(wl, t->bm, align, &b, &nb, err)))
    goto done;
  double N = layer == 1 ? 2 * wl->I : wl->H;
  size_t nt = (size_t)ceil(N / t->bn);
  for (size_t x = 0; x < nb; x++)
    for (size_t j = 0; j < nt; j++)
      if (xs__tasks_add(&tasks, x, layer, 1)) {
        st = xs__fail(err, XS_NOMEM, "out of memory");
        goto done;
      }
  flow->link = xs_profile_channel_name(prof, xs_profile_default_channel(prof));
  size_t sizes[1] = {tasks.n % (size_t)g->S};
  xs_eval_options o = {0, 1, NULL, NULL};
  xs__moe_kctx kc = {wl, g, wl->c->name, 0, 12, flow->link, 0, NULL, 0, 0, {0, 0}, NULL};
  if (!(st = xs__emit_new(&kc, t, b, nb, flow, &e, err)) &&
      !(st = xs__emit_split(e, sizes, 1)) &&
      !(st = xs__emit_phase(e, tasks.t, tasks.n, err)) &&
      !(st = xs__emit_finish(e, &p, NULL, err)) &&
      !(st = xs_evaluate(p, prof, XS_MODEL_BURSTGAP, &o, &r, err)))
    *time_s = r->makespan_s;
done:
  xs_result_free(r);
  xs_program_free(p);
  xs__emit_free(e);
  free(tasks.t);
  free(b);
  return st;
}

xs_status xs__gemm_table_time(const xs_profile *prof, const char *layout,
                              double groups, double m, double n, double k,
                              double *time_s, xs_error *err) {
  xs_moe_config c;
  xs_moe_preset("deepseek-v3", &c);
  snprintf(c.name, sizeof c.name, "gemm %s %gx%gx%gx%g", layout, groups, m,
           n, k);
  c.hidden = k;
  c.intermediate = n / 2;
  c.experts = groups;
  c.topk = 1;
  c.ep = 1;
  c.tokens = m;
  double S = xs_profile_sms(prof);
  xs__gemm_terms g;
  xs__moe_wl wl;
  xs_status st = xs__gemm_terms_read(prof, &c, S, &g, err);
  if (st)
    return st;
  memset(&wl, 0, sizeof wl);
  wl.c = &c;
  wl.S = S;
  wl.T = m;
  wl.H = k;
  wl.I = n / 2;
  wl.E = wl.El = groups;
  wl.K = wl.P = 1;
  wl.experts = calloc((size_t)groups + 1, sizeof *wl.experts);
  if (!wl.experts)
    return xs__fail(err, XS_NOMEM, "out of memory");
  wl.nexperts = (size_t)groups;
  for (size_t e = 0; e < wl.nexperts; e++) {
    wl.experts[e].rows = m;
    wl.experts[e].local = 1;
  }
  xs__tile_cfg t;
  deepgemm_55ab91f(layout, groups, m, n, S, &t);
  xs__emit_flow flow = {0};
  flow.l1_out_bytes = 4; /* BF16 over n = 2I columns */
  st = phase_time(prof, &wl, &g, &t, 0, 1, &flow, time_s, err);
  free(wl.experts);
  return st;
}

xs_status xs__moe_gemm_phase_time(const xs_moe_config *c, const xs_profile *prof,
                                  int layer, xs_moe_pattern *tile_used,
                                  double *time_s, xs_error *err) {
  double S = c->sms > 0 ? c->sms : xs_profile_sms(prof);
  xs__gemm_terms g;
  xs__moe_wl wl;
  memset(&wl, 0, sizeof wl);
  xs_status st = xs__gemm_terms_read(prof, c, S, &g, err);
  if (st || (st = xs__moe_wl_build(c, S, &wl, err)))
    return st;
  xs__tile_cfg t;
  xs__moe_tile_grouped(&wl, &g, &t);
  if (tile_used)
    *tile_used = (xs_moe_pattern){0, 0, 0, 0, (unsigned)t.bm, (unsigned)t.bn};
  xs__emit_flow flow = {0};
  flow.l1_out_bytes = 4; /* BF16, as the sequential arm's L1 writes it */
  flow.l2_in_bytes = 1;  /* the SwiGLU kernel's FP8 */
  st = phase_time(prof, &wl, &g, &t, 128, layer, &flow, time_s, err);
  xs__moe_wl_free(&wl);
  return st;
}
