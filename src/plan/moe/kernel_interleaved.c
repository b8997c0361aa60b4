/*
 * kernel_interleaved.c: the interleaved L1/L2 scheduler of DeepGEMM's SM100
 * MegaMoE (DeepGEMM PR 377, at AichenF/DeepGEMM 559d79f) and its SM90 port
 * (sgl-project/DeepGEMM PR 69, from its description). One persistent
 * launch and three barriers, as the wave kernel; each SM claims `warmup`
 * waves of L1 tasks, then strictly alternates one L2 task and one L1 task
 * from global counters; an L2 task waits until every L1 task of its block
 * is done. Here the SMs alternate together: a position of L2 tasks, then
 * one of L1 tasks (each SM's own alternation, in the order the counters
 * hand them out). The warm-up covers the L1 tiles of the blocks the first L2 wave
 * takes: ceil(N1/N2) + 1 waves. The SM90 port keeps one dispatch warp per
 * SM and the wave kernel's tiles.
 */
#include "plan/moe/moe.h"

#include <math.h>
#include <stdlib.h>

double xs__moe_default_warmup(size_t n1, size_t n2) {
  return ceil((double)n1 / (double)n2) + 1;
}

xs_status xs__moe_kernel_interleaved(const xs__moe_kctx *k,
                                     xs_moe_pattern *kn, xs_program **out,
                                     xs_moe_breakdown *bd, xs_error *err) {
  const xs__moe_wl *wl = k->wl;
  xs__tile_cfg tile;
  xs__moe_tile_wave_or_sm100(wl, k->g, &tile);
  xs__moe_block *blocks;
  size_t nb, n1, n2;
  xs_status st = xs__moe_kernel_blocks(wl, &tile, kn, 0, &blocks, &nb, &n1, &n2, err);
  if (st)
    return st;
  size_t S = (size_t)k->g->S;
  double warm = kn->warmup ? kn->warmup : xs__moe_default_warmup(n1, n2);
  kn->warmup = (unsigned)warm;
  size_t t1 = nb * n1, t2 = nb * n2, i1 = 0, i2 = 0;
  size_t w = (size_t)fmin((double)t1, warm * (double)S);
  xs__tasks tasks = {0};
  int bad = 0;
  for (; i1 < w && !bad; i1++)
    bad = xs__tasks_add(&tasks, i1 / n1, 1, 1);
  /* every SM alternates an L2 and an L1 task: position by position, S
   * L2 tasks (as many as have their L1 tasks handed out), then S L1 */
  while ((i1 < t1 || i2 < t2) && !bad) {
    size_t m = 0;
    for (; m < S && i2 < t2 && (i2 / n2 + 1) * n1 <= i1 && !bad; m++, i2++)
      bad = xs__tasks_add(&tasks, i2 / n2, 2, 1);
    for (size_t j = 0; j < S && i1 < t1 && !bad; j++, i1++)
      bad = xs__tasks_add(&tasks, i1 / n1, 1, 1);
    if (m == 0 && i1 >= t1) /* the last L2 tasks once every L1 is out */
      for (; i2 < t2 && !bad; i2++)
        bad = xs__tasks_add(&tasks, i2 / n2, 2, 1);
  }
  xs__emit_flow flow;
  xs__moe_fused_flow(k, &flow);
  flow.pull_warps = k->g->hopper ? 1 : 4;
  flow.pull_store_wait = k->g->hopper;
  return xs__moe_emit_fused(k, &tile, blocks, nb, &flow, &tasks, bad,
                            (xs__fused_launch){0, 0, 0}, out, bd, err);
}
