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

#include <math.h>
#include <stdlib.h>

/* SMs the all-to-all kernels run on: DeepEP V2 uses 24 to 64 on SM100's
 * NVLink (its README); the SM90 count is not published, 24 is taken */
#define A2A_SMS 24

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
  xs_kernel_costs kc;
  xs_profile_kernel_costs(k->prof, &kc);
  xs__emit_flow flow = {0};
  flow.pull = 0;
  flow.combine_push = 0;
  flow.l1_out_bytes = 4; /* 2I BF16 columns per row: I x 4 bytes */
  flow.l2_in_bytes = 1;  /* the SwiGLU kernel's FP8 */
  flow.link = k->link;
  double tok_B = wl->H * g->act_bytes, comb_B = wl->H * g->combine_bytes;
  double dispatch_B = wl->T * wl->a2a_dest * tok_B;
  double combine_B = wl->T * wl->a2a_dest * comb_B;
  /* SwiGLU reads L1's BF16 output (2I per row) and writes FP8 (I) */
  double swiglu_B = rows * wl->I * (2 * 2 + 1);
  /* the combine sums each token's copies from every rank it went to */
  double reduce_B = wl->T * (wl->a2a_dest + 1) * comb_B;
  size_t S = (size_t)g->S, sizes[2] = {l1.n % S, l2.n % S};
  if (!(st = xs__emit_new(k, &tile, blocks, nb, &flow, &e, err)) &&
      !(st = xs__emit_split(e, sizes, 2)) &&
      /* dispatch: notify (counts to every rank), the host, the kernel */
      !(st = xs__emit_fixed(e, g->launch_s, "launch", err)) &&
      !(st = xs__emit_barrier(e, err)) &&
      !(st = xs__emit_fixed(e, kc.host_sync_s, "host", err)) &&
      !(st = xs__emit_kernel(e, 0, err)) &&
      !(st = xs__emit_a2a(e, dispatch_B, A2A_SMS, kc.a2a_fixed_s, err)) &&
      !(st = xs__emit_kernel(e, 0, err)) &&
      !(st = xs__emit_phase(e, l1.t, l1.n, err)) &&
      !(st = xs__emit_kernel(e, 0, err)) &&
      !(st = xs__emit_stream(e, swiglu_B, 0, "swiglu", err)) &&
      !(st = xs__emit_kernel(e, 0, err)) &&
      !(st = xs__emit_phase(e, l2.t, l2.n, err)) &&
      !(st = xs__emit_kernel(e, 0, err)) &&
      !(st = xs__emit_a2a(e, combine_B, A2A_SMS, kc.a2a_fixed_s, err)) &&
      !(st = xs__emit_stream(e, reduce_B, 0, "reduce", err)))
    st = xs__emit_finish(e, out, bd, err);
done:
  xs__emit_free(e);
  free(l1.t);
  free(l2.t);
  free(blocks);
  return st;
}
