/*
 * kernel_split.c: DeepGEMM's SM90 MegaMoE in two launches (DeepGEMM PR 352,
 * merged as PR 383): an L1 kernel (routing, a barrier, the dispatch pull,
 * every L1 tile) and an L2 kernel (every L2 tile storing its output to the
 * home ranks, a barrier, the reduction of the top-k copies; its third
 * barrier, after the workspace clean, runs beside the reduction). No PDL:
 * the L2 kernel starts once the L1 kernel has drained. Each dispatch warp
 * (two per SM at the 256-wide tile, four otherwise) pulls one row, waits
 * for its local store, publishes it, then takes the next row. Tiles go out
 * in order, tile t to SM t mod S (blocks outer, N tiles inner).
 */
#include "plan/moe/moe.h"

#include <math.h>
#include <stdlib.h>

xs_status xs__moe_kernel_split(const xs__moe_kctx *k, xs_moe_pattern *kn,
                               xs_program **out, xs_moe_breakdown *bd,
                               xs_error *err) {
  const xs__moe_wl *wl = k->wl;
  xs__tile_cfg tile;
  xs__moe_tile_split(wl, &tile);
  xs__moe_block *blocks;
  size_t nb, n1, n2;
  xs_status st = xs__moe_kernel_blocks(wl, &tile, kn, 0, &blocks, &nb, &n1, &n2, err);
  if (st)
    return st;
  xs__tasks l1 = {0}, l2 = {0};
  xs__emit *e = NULL;
  if (xs__tasks_layer(&l1, 0, nb, 1, n1) || xs__tasks_layer(&l2, 0, nb, 2, n2)) {
    st = xs__fail(err, XS_NOMEM, "out of memory");
    goto done;
  }
  xs__emit_flow flow;
  xs__moe_fused_flow(k, &flow);
  /* two dispatch warps on the 256-wide tile and on the decode tile
   * (swap-AB), four otherwise */
  flow.pull_warps = tile.bn >= 256 || tile.swap_ab ? 2 : 4;
  flow.pull_store_wait = 1;
  flow.publish_wait = 1;
  size_t S = (size_t)k->g->S, sizes[2] = {l1.n % S, l2.n % S};
  if (!(st = xs__emit_new(k, &tile, blocks, nb, &flow, &e, err)) &&
      !(st = xs__emit_split(e, sizes, 2)) &&
      !(st = xs__emit_launch(e, 0, err)) &&
      !(st = xs__emit_routing(e, 0, err)) && !(st = xs__emit_pull(e, err)) &&
      !(st = xs__emit_phase(e, l1.t, l1.n, err)) &&
      !(st = xs__emit_kernel(e, 0, err)) &&
      !(st = xs__emit_phase(e, l2.t, l2.n, err)) &&
      !(st = xs__emit_barrier(e, err)) &&
      !(st = xs__emit_combine(e, xs__moe_reduce_bytes(k), 1, err)))
    st = xs__emit_finish(e, out, bd, err);
done:
  xs__emit_free(e);
  free(l1.t);
  free(l2.t);
  free(blocks);
  return st;
}
