/*
 * kernel_wave.c: the fused MegaMoE kernels that group experts in waves:
 * DeepGEMM's SM100 kernel (DeepGEMM PR 316; MegaMoEScheduler at 54e2261)
 * and its SM90 port (sgl-project/DeepGEMM's dev branch, from its PR 36).
 * One persistent launch, three barriers (before the pull, before the
 * combine, and one after the workspace clean that runs beside the
 * reduction). Each SM walks the L1 tiles of a wave's experts, then their
 * L2 tiles, then the next wave; an L2 tile waits for its block's L1 tiles.
 * On SM90 each dispatch warp (two per SM at the large tile) waits for its
 * local store before the next row; SM100 has four dispatch warps.
 */
#include "plan/moe/moe.h"

#include <math.h>
#include <stdlib.h>

/* The SM90 port's experts per wave (3f9268b): one wave (every local
 * expert) below one or above four routed rows per local expert, or where
 * the 64-row tiles of a wide intermediate fill the SMs four times; in
 * between, SM100's rule */
static double sgl_epw(const xs__moe_wl *wl, const xs__tile_cfg *t) {
  double load = wl->T * wl->K / wl->El;
  if (load < 1 || load > 4)
    return wl->El;
  if (t->bm == 64 && wl->I >= 3072 && wl->El * floor(2 * wl->I / t->bn) >= 4 * wl->S)
    return wl->El;
  return xs__moe_default_epw(wl, t);
}

double xs__moe_wave_epw(const xs__moe_wl *wl, const xs__gemm_terms *g,
                        const xs__tile_cfg *t) {
  return g->hopper ? sgl_epw(wl, t) : xs__moe_default_epw(wl, t);
}

xs_status xs__moe_kernel_wave(const xs__moe_kctx *k, xs_moe_pattern *kn,
                              xs_program **out, xs_moe_breakdown *bd,
                              xs_error *err) {
  const xs__moe_wl *wl = k->wl;
  xs__tile_cfg tile;
  xs__moe_tile_wave_or_sm100(wl, k->g, &tile);
  xs__moe_block *blocks;
  size_t nb, n1, n2;
  xs_status st = xs__moe_kernel_blocks(wl, &tile, kn, 0, &blocks, &nb, &n1, &n2, err);
  if (st)
    return st;
  double epw = kn->experts_per_wave ? kn->experts_per_wave
                                    : xs__moe_wave_epw(wl, k->g, &tile);
  kn->experts_per_wave = (unsigned)epw;
  xs__tasks tasks = {0};
  int bad = 0;
  /* waves of epw experts: the wave's L1 tiles, then its L2 tiles */
  for (size_t b0 = 0; b0 < nb && !bad;) {
    size_t b1 = b0, first = blocks[b0].expert;
    while (b1 < nb && blocks[b1].expert < first + (size_t)epw)
      b1++;
    bad = xs__tasks_layer(&tasks, b0, b1, 1, n1) || xs__tasks_layer(&tasks, b0, b1, 2, n2);
    b0 = b1;
  }
  xs__emit_flow flow;
  xs__moe_fused_flow(k, &flow);
  flow.pull_warps = k->g->hopper ? 2 : 4;
  flow.pull_store_wait = k->g->hopper;
  /* SM90's math warpgroups wait for their L1 store before publishing;
   * SM100's epilogue warps do it while the MMA goes on */
  flow.publish_wait = k->g->hopper;
  /* SM100 pulls a row in chunks of at most 4096 bytes */
  flow.pull_chunk_B = k->g->hopper ? 0 : 4096;
  return xs__moe_emit_fused(k, &tile, blocks, nb, &flow, &tasks, bad,
                            (xs__fused_launch){0, 0, 0}, out, bd, err);
}
