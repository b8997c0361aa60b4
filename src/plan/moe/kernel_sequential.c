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

/* One of the library's kernels for this config's shape, through the EP
 * kernel programs (src/plan/ep/, docs/ep.md): its burstgap time. The
 * harness asks for the counts on the host (do_cpu_sync) and a receive
 * layout of 128 rows per expert. */
static xs_status a2a_time(const xs__moe_kctx *k, xs__ep_phase phase,
                          double *t, xs_error *err) {
  const xs_moe_config *c = k->wl->c;
  xs__ep_shape s = {0};
  s.tokens = c->tokens;
  s.hidden = c->hidden;
  s.topk = c->topk;
  s.experts = c->experts;
  s.ep = c->ep;
  s.elem_bytes = phase == XS__EP_DISPATCH ? c->act_bytes : c->combine_bytes;
  s.align = 128;
  s.cpu_sync = 1;
  s.api_time = 1; /* the harness calls the library's Python API */
  return xs__ep_kernel(c->ep_library[0] ? c->ep_library : XS__MOE_EP_LIBRARY,
                       c->ep_kernel[0] ? c->ep_kernel : XS__MOE_EP_KERNEL, phase,
                       &s, k->prof, k->ep_par, NULL, t, err);
}

xs_status xs__moe_kernel_sequential(const xs__moe_kctx *k, xs_moe_pattern *kn,
                                    xs_program **out, xs_moe_breakdown *bd,
                                    xs_error *err) {
  const xs__moe_wl *wl = k->wl;
  const xs__gemm_terms *g = k->g;
  xs__tile_cfg tile;
  xs__moe_tile_grouped(wl, g, &tile);
  xs__moe_block *blocks;
  size_t nb, n1, n2;
  /* the library's receive layout pads each expert to 128 rows */
  xs_status st = xs__moe_kernel_blocks(wl, &tile, kn, 128, &blocks, &nb, &n1, &n2, err);
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
  if (!(st = a2a_time(k, XS__EP_DISPATCH, &dispatch_s, err)) &&
      !(st = a2a_time(k, XS__EP_COMBINE, &combine_s, err)) &&
      !(st = xs__emit_new(k, &tile, blocks, nb, &flow, &e, err)) &&
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
