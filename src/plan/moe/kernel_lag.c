/*
 * kernel_lag.c: the lag-ordered SM90 MegaMoE kernel (sgl-project/DeepGEMM
 * PR 88, DeepGEMM PR 440), and xstage's own schedules on its machinery.
 * One persistent launch (PDL for calls of at most 256 tokens per rank): a
 * count hand-shake of one flag per rank in place of a barrier, then the
 * pull (two warps per SM, each with one row in flight, the local store
 * not waited for before the next row) and one task stream:
 *
 *   units of up to 8 token blocks of one expert, all N tiles of a unit,
 *   blocks inner; L1 of units 0 .. lag, then `group` L2 units after every
 *   `group` further L1 units, the L2 units left over at the end;
 *
 * L1's output goes to an HBM ring of 8 (lag + group) + 4 blocks: the pull
 * of a block waits until the L1 tiles of the block that held its slot a
 * generation ago are done, and an L1 epilogue until that block's L2
 * tiles read it. One barrier before the combine, overlapped by the
 * reduction of the tokens already complete ("early combine").
 *
 * The schedules "l1-then-l2" (all L1, then all L2: the kernel's one-wave
 * order) and "searched" (lag and group searched) use the same machinery.
 */
#include "plan/moe/moe.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

#define UNIT_BLOCKS 8

/* The task stream of the lag rule over units of blocks. */
static int lag_order(const xs__moe_block *b, size_t nb, size_t n1, size_t n2,
                     double lag, double group, xs__tasks *out) {
  /* unit boundaries: up to 8 consecutive blocks of one expert */
  size_t *us = malloc((nb + 2) * sizeof *us), nu = 0;
  if (!us)
    return -1;
  for (size_t i = 0; i < nb;) {
    us[nu++] = i;
    size_t j = i + 1;
    while (j < nb && j - i < UNIT_BLOCKS && b[j].expert == b[i].expert)
      j++;
    i = j;
  }
  us[nu] = nb;
  int bad = 0;
#define UNIT(u, layer, n)                                                    \
  for (size_t j = 0; j < (n) && !bad; j++)                                   \
    for (size_t x = us[u]; x < us[(u) + 1] && !bad; x++)                     \
      bad = xs__tasks_add(out, x, layer, 1);
  size_t l2 = 0;
  for (size_t u = 0; u < nu && !bad; u++) {
    UNIT(u, 1, n1)
    double done = (double)(u + 1);
    if (done > lag && fmod(done - lag, group) == 0)
      for (double gi = 0; gi < group && l2 <= u && !bad; gi++, l2++)
        UNIT(l2, 2, n2)
  }
  for (; l2 < nu && !bad; l2++)
    UNIT(l2, 2, n2)
#undef UNIT
  free(us);
  return bad;
}

size_t xs__moe_lag_units(const xs__moe_block *b, size_t nb) {
  size_t nu = 0;
  for (size_t i = 0; i < nb;) {
    nu++;
    size_t j = i + 1;
    while (j < nb && j - i < UNIT_BLOCKS && b[j].expert == b[i].expert)
      j++;
    i = j;
  }
  return nu;
}

int xs__moe_lag_ring(const xs__moe_wl *wl, const xs__tile_cfg *t) {
  double cap = wl->c->capacity > 0 ? wl->c->capacity : wl->T;
  /* a small buffer is a full pool, scheduled L1 then L2 (the wave order);
   * so is a call of at most 256 tokens at BLOCK_M 64 */
  return cap >= 1024 && !(t->bm <= 64 && wl->T <= 256);
}

xs_status xs__moe_kernel_lag(const xs__moe_kctx *k, xs_moe_pattern *kn,
                             xs_program **out, xs_moe_breakdown *bd,
                             xs_error *err) {
  const xs__moe_wl *wl = k->wl;
  xs__tile_cfg tile;
  xs__moe_tile_lag(wl, &tile);
  xs__moe_block *blocks;
  size_t nb, n1, n2;
  xs_status st = xs__moe_kernel_blocks(wl, &tile, kn, 0, &blocks, &nb, &n1, &n2, err);
  if (st)
    return st;
  /* the default lag comes from the buffers' token bound (the capacity
   * when the call passes none) */
  double cap = wl->c->capacity > 0 ? wl->c->capacity : wl->T;
  double units = (double)xs__moe_lag_units(blocks, nb);
  double lag = kn->lag ? kn->lag : xs__moe_default_lag(wl, cap);
  double group = kn->group ? kn->group : 4;
  int ring = xs__moe_lag_ring(wl, &tile);
  if (!ring && !kn->lag)
    lag = units;
  kn->lag = (unsigned)fmin(lag, 1e9);
  kn->group = (unsigned)group;
  xs__tasks tasks = {0};
  xs__emit_flow flow;
  xs__moe_fused_flow(k, &flow);
  flow.pull_warps = 2;
  flow.publish_wait = 1;
  flow.ring_blocks = ring ? UNIT_BLOCKS * (lag + group) + 4 : 0;
  return xs__moe_emit_fused(k, &tile, blocks, nb, &flow, &tasks,
                            lag_order(blocks, nb, n1, n2, lag, group, &tasks),
                            (xs__fused_launch){wl->T <= 256, 1, 1}, out, bd, err);
}
