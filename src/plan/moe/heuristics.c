/*
 * heuristics.c: each kernel's default tile configuration and knobs for a
 * shape, as its own heuristic picks them (docs/plan-megamoe.md
 * "Schedules" names the source of each). A prediction of a published
 * timing uses these, not the planner's search: a kernel is predicted with
 * the knobs it ran with. Written from reading the kernels' host code; the
 * choices are theirs.
 */
#include "plan/moe/moe.h"

#include <math.h>
#include <string.h>

/* rows a routed expert gets on average, over all ranks' tokens: the load
 * the heuristics key on (tokens x ranks x top-k / experts) */
static double rows_per_expert(const xs__moe_wl *wl) {
  return wl->T * wl->P * wl->K / wl->E;
}

static void tile(xs__tile_cfg *t, double bm, double bn, double wgs,
                 double wg_n, double cluster, int mc_a, int mc_b, double k1,
                 double k2) {
  memset(t, 0, sizeof *t);
  t->bm = bm;
  t->bn = bn;
  t->wgs = wgs;
  t->wg_n = wg_n;
  t->cluster = cluster;
  t->mc_a = mc_a;
  t->mc_b = mc_b;
  t->scale_k1 = k1;
  t->scale_k2 = k2;
}

/* a block_m override: 64 gets the two-warpgroup split-N tile of the SM90
 * kernels, 128 and more the kernel's large tile */
static int forced(const xs__moe_wl *wl, double *bm) {
  if (wl->c->block_m > 0) {
    *bm = wl->c->block_m;
    return 1;
  }
  return 0;
}

/* DeepGEMM's SM90 MegaMoE in two launches (PR 383, select_mega_moe_sm90):
 * BLOCK_M 64 always, BLOCK_N 256 from two warpgroups split along N (each
 * m64n128), no cluster; swap-AB with BLOCK_N 128 at a load of at most 24
 * rows per local expert; L2 activations scaled per 64 of K. */
void xs__moe_tile_split(const xs__moe_wl *wl, xs__tile_cfg *t) {
  double bm = 64;
  forced(wl, &bm);
  double load = wl->T * wl->K / wl->El;
  /* swap-AB up to 24 rows per local expert for the "Compact" shapes
   * (hidden 3072-5119, intermediate 1536-2559), 16 for the others
   * (AichenF/DeepGEMM at bc4f33a, heuristics/sm90_mega_moe.hpp) */
  int compact = wl->H >= 3072 && wl->H < 5120 && wl->I >= 1536 && wl->I < 2560;
  if (load <= (compact ? 24 : 16) && wl->c->block_m == 0) {
    tile(t, 64, 128, 2, 64, 1, 0, 0, 128, 64);
    t->swap_ab = 1;
  } else {
    tile(t, bm, 256, bm >= 128 ? 4 : 2, 128, 1, 0, 0, 128, 64);
  }
  if (wl->c->block_n > 0)
    t->bn = wl->c->block_n;
}

/* The SM90 port with expert waves (sgl-project/DeepGEMM PR 36, its
 * heuristic at 3f9268b, get_mega_moe_config_sm90): at least 64 rows per
 * expert, BLOCK_M 128 with four warpgroups (m64n128 each) on a 128x256
 * tile; fewer, BLOCK_M 64 with two split along N, BLOCK_N 256 where the
 * intermediate size is at least 3072 and a quarter row per expert is
 * expected, else 128; no swap-AB at that commit; L2 activations per 64 of
 * K; no cluster; as many stages as fit. Its 128-row tile has no register
 * room for a second accumulator (112 per math thread at 640 threads), so
 * it promotes in place (reuse_accum_as_final = BLOCK_M 128): below a
 * hidden size of 7168 each interval rescales every accumulator register
 * twice, a prescale before the WGMMAs and a postscale after them
 * (impls/sm90_fp8_mega_moe.cuh:936-1269 at 3f9268b; from 7168 one rescale
 * of the running sum, :1044). The lag kernel's 128-row tile rescales once
 * per interval at these shapes (its hoisted loop, DeepGEMM 187288b
 * sm90_fp8_fused_mega_moe.cuh), as the one-FFMA default counts. */
void xs__moe_tile_wave(const xs__moe_wl *wl, xs__tile_cfg *t) {
  double r = rows_per_expert(wl), bm = r >= 64 ? 128 : 64;
  forced(wl, &bm);
  int wide = wl->I >= 3072 && r >= 0.25 && fmod(2 * wl->I, 256) == 0;
  if (bm >= 128) {
    tile(t, bm, 256, 4, 128, 1, 0, 0, 128, 64);
    t->promo_passes = wl->H < 7168 ? 2 : 1;
  } else
    tile(t, bm, wide ? 256 : 128, 2, wide ? 128 : 64, 1, 0, 0, 128, 64);
  if (wl->c->block_n > 0)
    t->bn = wl->c->block_n;
}

/* The lag-ordered SM90 kernel (DeepGEMM PR 440 = sgl PR 88,
 * get_mega_moe_config_sm90_fused): at least 64 rows per expert, a 128x256
 * tile from two warpgroups split along M (each m64n256), 2-CTA clusters
 * multicasting the weights; fewer, BLOCK_M 64 with two split along N, no
 * cluster; both layers scaled per 128 of K; no swap-AB on these shapes. */
void xs__moe_tile_lag(const xs__moe_wl *wl, xs__tile_cfg *t) {
  double bm = rows_per_expert(wl) >= 64 ? 128 : 64;
  forced(wl, &bm);
  if (bm >= 128) {
    tile(t, bm, 256, 2, 256, 2, 0, 1, 128, 128);
    /* in-place promotion: one rescale per interval in the hoisted loop
     * it runs from a hidden size of 4096, a prescale and a postscale
     * below (sm90_fp8_fused_mega_moe.cuh at 187288b, kHoistedMainloop) */
    t->promo_passes = wl->H < 4096 ? 2 : 1;
  } else
    tile(t, bm, 256, 2, 128, 1, 0, 0, 128, 128);
  if (wl->c->block_n > 0)
    t->bn = wl->c->block_n;
}

/* DeepGEMM's SM100 MegaMoE (get_block_config_for_mega_moe at 54e2261):
 * BLOCK_M by expected rows per expert (16 up to 8.5, 32, 64, 96, 128,
 * 192), BLOCK_N 128 per CTA, 2-CTA clusters that split A (each loads half
 * and multicasts it); the MMA applies the block scales. */
void xs__moe_tile_sm100(const xs__moe_wl *wl, xs__tile_cfg *t) {
  double r = rows_per_expert(wl);
  double bm = r <= 8.5 ? 16 : r <= 16.5 ? 32 : r <= 32.5 ? 64
            : r <= 64.5 ? 96 : r <= 96.5 ? 128 : 192;
  forced(wl, &bm);
  tile(t, bm, 128, 2, 128, 2, 1, 0, 0, 0);
  if (wl->c->block_n > 0)
    t->bn = wl->c->block_n;
}

void xs__moe_tile_wave_or_sm100(const xs__moe_wl *wl, const xs__gemm_terms *g,
                                xs__tile_cfg *t) {
  if (g->hopper)
    xs__moe_tile_wave(wl, t);
  else
    xs__moe_tile_sm100(wl, t);
}

/* DeepGEMM's grouped contiguous GEMM as the sequential baseline runs it
 * (BLOCK_M 128 = the all-to-all's alignment; on H200 its heuristic picked
 * BLOCK_N 192 with 2-CTA clusters for both Flash and Pro at 8192 tokens,
 * the split kernel author's log, iterations 125-126); per 128 of K. */
void xs__moe_tile_grouped(const xs__moe_wl *wl, const xs__gemm_terms *g,
                          xs__tile_cfg *t) {
  double bm = 128;
  forced(wl, &bm);
  if (g->hopper)
    tile(t, bm, 192, bm / 64, 192, 2, 0, 1, 128, 128);
  else
    tile(t, bm, 128, 2, 128, 2, 1, 0, 0, 0);
  if (wl->c->block_n > 0)
    t->bn = wl->c->block_n;
}

/* The lag kernel's default lag (get_auto_late_lag_sm90_fused):
 * clamp(round(0.45 x units), 8, 64), units estimated from a token bound:
 * E_local x max(1, ceil(bound x top-k / (E_local x 1024))). The bound is
 * what the call passes, or the buffer's capacity when it passes none. */
double xs__moe_default_lag(const xs__moe_wl *wl, double bound) {
  double el = wl->El;
  double units = el * fmax(1, ceil(bound * wl->K / (el * 1024)));
  return fmin(64, fmax(8, round(0.45 * units)));
}

/* SM100's experts per wave (get_num_experts_per_wave_for_mega_moe): the
 * fewest whose L1 blocks, halved for uneven routing, fill the SMs; all of
 * them under one row per expert; then the value up to twice that whose
 * last wave is fullest. (The ring-capacity bound is not modelled: the
 * buffers are taken large enough.) */
double xs__moe_default_epw(const xs__moe_wl *wl, const xs__tile_cfg *t) {
  double el = wl->El, S = wl->S;
  double expected = wl->T * wl->K / el;
  double mb = fmax(1, ceil(ceil(expected) / t->bm));
  double l1_per_expert = mb * floor(2 * wl->I / t->bn);
  double fill = ceil(2 * S / fmax(1, l1_per_expert));
  if (expected < 1)
    fill = el;
  if (fill >= el)
    return el;
  if (l1_per_expert >= S)
    return fill;
  double best = fill, best_tail = -1;
  for (double epw = fill; epw <= fmin(el, 2 * fill); epw++) {
    double rem = fmod(el, epw), tail = rem == 0 ? 1 : rem / epw;
    if (tail > best_tail) {
      best_tail = tail;
      best = epw;
    }
  }
  return best;
}
