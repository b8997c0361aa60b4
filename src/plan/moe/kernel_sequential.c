/*
 * kernel_sequential.c: the unfused baseline as DeepGEMM's harnesses time it
 * (DeepGEMM PRs 316 and 383): an all-to-all library's dispatch (its notify
 * step, a barrier that exchanges the counts; a round trip through the host
 * that reads them when the harness asks for it; the dispatch kernel on a
 * few SMs), the grouped GEMM of L1 over the received rows aligned to 128
 * per expert, the SwiGLU and quantisation kernel, the grouped GEMM of L2,
 * and the library's combine, which sends every token's results home and
 * sums them. Each is its own launch; nothing overlaps.
 */
#include "plan/moe/moe.h"
#include "plan/ep/ep.h"

#include <math.h>
#include <stdlib.h>

/* The rows each expert's received block is padded to, which the harness
 * passes to the all-to-all as its expert alignment and to the grouped
 * GEMM (deepseek-ai/DeepGEMM tests/test_mega_moe.py:146-147 and 161 at
 * 891d57b): get_theoretical_mk_alignment_for_contiguous_layout(), 128 on
 * SM90, 240 on SM100 (csrc/jit_kernels/heuristics/runtime.hpp:10 and
 * 47-56). On SM100 the m-grouped GEMM's token block is that alignment
 * (heuristics/sm100.hpp:31-43: swap-AB, block N 128, a 2-CTA cluster),
 * and its TMA loads the whole block of token rows at every K step however
 * few of them are the expert's (impls/sm100_fp8_fp4_gemm_1d1d.cuh:209-247:
 * only the MMA's N shrinks to the rows, line 330), so a tile of a few rows
 * still moves 240 rows of activations through the L2. */
static double seq_align(const xs__moe_wl *wl, const xs__gemm_terms *g) {
  (void)wl;
  return g->hopper ? 128 : 240;
}

/* One of the library's kernels for this config's shape, through the EP
 * kernel programs (src/plan/ep/, docs/ep.md): its burstgap time. The
 * harness asks for the counts on the host (do_cpu_sync) and a receive
 * layout of 128 rows per expert. */
static xs_status a2a_time(const xs__moe_kctx *k, const xs_profile *prof,
                          xs__ep_phase phase, double *t, xs_error *err) {
  const xs_moe_config *c = k->wl->c;
  xs__ep_shape s = {0};
  s.tokens = c->tokens;
  s.hidden = c->hidden;
  s.topk = c->topk;
  s.experts = c->experts;
  s.ep = c->ep;
  s.elem_bytes = phase == XS__EP_DISPATCH ? c->act_bytes : c->combine_bytes;
  s.align = seq_align(k->wl, k->g);
  /* the harness calls the library's Python API, which asks for the counts
   * on the host; a CUDA graph's replay has neither (no host in the loop,
   * and no host wait can be captured: the library runs on its worst-case
   * receive buffers). The graph-timed baseline is DeepGEMM's
   * tests/test_mega_moe.py run_baseline (891d57b:148-187): do_cpu_sync
   * off, and the expanded layout (do_expand) with
   * allow_multiple_reduction=False, so the combine returns each (token,
   * expert) row on its own; the host-timed harness's settings beyond the
   * sync are not published, and the library's defaults stand there */
  int graph = xs__moe_timing(c) == XS__TIMING_GRAPH;
  s.cpu_sync = !graph;
  s.api_time = !graph;
  s.graph = graph;
  s.expanded = graph;
  return xs__ep_kernel(c->ep_library[0] ? c->ep_library : XS__MOE_EP_LIBRARY,
                       c->ep_kernel[0] ? c->ep_kernel : XS__MOE_EP_KERNEL, phase,
                       &s, prof, k->ep_par, NULL, t, err);
}

xs_status xs__moe_a2a_times(const xs__moe_kctx *k, const xs_profile *prof,
                            double out[2], xs_error *err) {
  xs_status st = a2a_time(k, prof, XS__EP_DISPATCH, &out[XS__EP_DISPATCH], err);
  return st ? st : a2a_time(k, prof, XS__EP_COMBINE, &out[XS__EP_COMBINE], err);
}

xs_status xs__moe_kernel_sequential(const xs__moe_kctx *k, xs_moe_pattern *kn,
                                    xs_program **out, xs_moe_breakdown *bd,
                                    xs_error *err) {
  const xs__moe_wl *wl = k->wl;
  const xs__gemm_terms *g = k->g;
  xs__tile_cfg tile;
  xs__moe_tile_grouped(wl, g, &tile);
  double align = seq_align(wl, g);
  if (!g->hopper && !(wl->c->block_m > 0))
    tile.bm = align;
  xs__moe_block *blocks;
  size_t nb, n1, n2;
  /* the library's receive layout pads each expert to the GEMM's alignment */
  xs_status st = xs__moe_kernel_blocks(wl, &tile, kn, align, &blocks, &nb, &n1, &n2, err);
  if (st)
    return st;
  double rows = 0;
  for (size_t b = 0; b < nb; b++)
    rows += blocks[b].rows;
  xs__tasks l1 = {0}, l2 = {0};
  xs__emit *e = NULL;
  if (xs__tasks_layer(&l1, 0, nb, 1, n1) || xs__tasks_layer(&l2, 0, nb, 2, n2)) {
    st = xs__fail(err, XS_NOMEM, "out of memory");
    goto done;
  }
  xs__emit_flow flow = {0};
  flow.pull = 0;
  flow.combine_push = 0;
  flow.l1_out_bytes = 4; /* 2I BF16 columns per row: I x 4 bytes */
  flow.l2_in_bytes = 1;  /* the SwiGLU kernel's FP8 */
  flow.link = k->link;
  double comb_B = wl->H * g->combine_bytes, dispatch_s, combine_s;
  /* SwiGLU reads L1's BF16 output (2I per row) and writes FP8 (I) */
  double swiglu_B = rows * wl->I * (2 * 2 + 1);
  /* the combine sums each token's copies from every rank it went to */
  double reduce_B = wl->T * (wl->a2a_dest + 1) * comb_B;
  size_t S = (size_t)g->S, sizes[2] = {l1.n % S, l2.n % S};
  /* the library's kernels, their times resolved by the planner once
   * (xs__moe_a2a_times) */
  dispatch_s = k->a2a_s[XS__EP_DISPATCH];
  combine_s = k->a2a_s[XS__EP_COMBINE];
  if (!(st = xs__emit_new(k, &tile, blocks, nb, &flow, &e, err)) &&
      !(st = xs__emit_split(e, sizes, 2)) &&
      /* the dispatch kernel: its launch, notify and the host's wait for
       * the counts are the EP program's */
      !(st = xs__emit_ep(e, dispatch_s, 1, err)) &&
      !(st = xs__emit_kernel(e, 0, err)) &&
      !(st = xs__emit_phase(e, l1.t, l1.n, err)) &&
      !(st = xs__emit_kernel(e, 0, err)) &&
      !(st = xs__emit_stream(e, swiglu_B, 0, "swiglu", err)) &&
      !(st = xs__emit_kernel(e, 0, err)) &&
      !(st = xs__emit_phase(e, l2.t, l2.n, err)) &&
      !(st = xs__emit_kernel(e, 0, err)) &&
      !(st = xs__emit_ep(e, combine_s, 0, err)) &&
      !(st = xs__emit_stream(e, reduce_B, 0, "reduce", err)))
    st = xs__emit_finish(e, out, bd, err);
done:
  xs__emit_free(e);
  free(l1.t);
  free(l2.t);
  free(blocks);
  return st;
}
