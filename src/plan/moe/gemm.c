/*
 * gemm.c: the time one SM takes for one tile of a grouped FP8 GEMM, from
 * the tile's configuration and the profile's hardware terms. The mainloop
 * runs in promotion intervals (the K over which the tensor cores
 * accumulate before the FP32 accumulators are rescaled: 128 or 64 on
 * Hopper, where CUDA cores do it; none on Blackwell, whose MMA applies the
 * block scales). Each interval costs the larger of
 *
 *   tensor: its FLOPs at the SM's MMA peak, plus a fixed issue cost per
 *           WGMMA instruction, plus the promotion (every accumulator
 *           register of a warpgroup rescaled, one FFMA per register and
 *           clock on each SM sub-partition, while the tensor pipe idles;
 *           promo_passes such passes where the kernel multiplies each
 *           register more than once per interval);
 *   L2:     its operand bytes (A rows and B columns over the interval's K,
 *           halved for an operand multicast to a CTA pair) at the SM's
 *           share of the L2's bandwidth,
 *
 * and each tile adds a prologue and epilogue per 128x128 of output. HBM is
 * not here: the per-SM programs put each tile's HBM bytes on the
 * profile's "hbm" channel (emit.c). docs/plan-megamoe.md "GEMM tiles";
 * the terms are calibrated on DeepGEMM's published GEMM tables
 * (tests/test_moe.c checks every row).
 */
#include "plan/moe/moe.h"

#include <ctype.h>
#include <math.h>
#include <string.h>

xs_status xs__gemm_terms_read(const xs_profile *prof, const xs_moe_config *c,
                              double sms, xs__gemm_terms *g, xs_error *err) {
  memset(g, 0, sizeof *g);
  xs_kernel_costs k;
  xs_profile_kernel_costs(prof, &k);
  /* FP8 x FP4 weights run on the FP8 MMA: bytes at the weights' width,
   * math at FP8 */
  const char *math = strcmp(c->dtype, "fp8xfp4") == 0 ? "fp8" : c->dtype;
  double F = xs_profile_flops_per_s(prof, math);
  if (!(sms > 0) || !(F > 0))
    return xs__fail(err, XS_INVALID,
                    "profile \"%s\" has no compute section with SMs and an MMA "
                    "peak (flops_per_s) for dtype \"%s\" (see xstage profiles "
                    "show)",
                    xs_profile_name(prof), math);
  const char *missing = !(k.mma_clock_hz > 0) ? "mma_clock_hz"
                        : !(k.l2_Bps > 0)     ? "l2_Bps"
                                              : NULL;
  if (missing)
    return xs__fail(err, XS_INVALID,
                    "profile \"%s\" has no compute.%s, which the MegaMoE "
                    "kernel model needs (docs/plan-megamoe.md \"GEMM tiles\")",
                    xs_profile_name(prof), missing);
  if (xs_profile_find_channel(prof, "hbm") < 0)
    return xs__fail(err, XS_INVALID,
                    "profile \"%s\" has no \"hbm\" channel, which the MegaMoE "
                    "kernel model puts every tile's HBM bytes on "
                    "(docs/formats.md \"Profile\")",
                    xs_profile_name(prof));
  double full = xs_profile_sms(prof);
  g->S = sms;
  g->F_sm = F / (full > 0 ? full : sms);
  g->clock_hz = k.mma_clock_hz;
  g->wgmma_cycles = k.wgmma_cycles;
  g->l2_sm_Bps = k.l2_Bps / sms;
  /* the per-tile prologue and epilogue, fitted on Hopper's kernels whose
   * math warpgroups hold the accumulators in registers and stop for the
   * epilogue; Blackwell's keep two accumulator stages in tensor memory
   * (DeepGEMM's SM100 GEMMs and MegaMoE: kNumEpilogueStages = 2), so a
   * tile's epilogue runs while the next tile's MMAs issue and the TMA
   * warps run ahead across tiles: no per-tile cost there */
  g->tile_s = k.promotion > 0 ? k.tile_overhead_s : 0;
  g->launch_s = k.launch_s;
  g->barrier_s = k.barrier_s;
  g->setup_s = k.setup_s;
  /* the latency floor: a kernel's start as the timing sees it. A graph's
   * replay queues every kernel ahead of the GPU, which then pays its gap
   * between dependent kernels; the host's launches back to back pay
   * launch_s each (kernels of decode size are shorter than a launch, and
   * the sequential arm's host waits for the dispatch counts mid-layer) */
  int timing = xs__moe_timing(c);
  double gap = k.kernel_gap_s > 0 ? k.kernel_gap_s : k.launch_s;
  g->launch_cost_s = timing == XS__TIMING_DEVICE  ? 0
                     : timing == XS__TIMING_GRAPH ? gap
                                                  : k.launch_s;
  g->pdl_saving_s = k.pdl_saving_s;
  g->grid_sync_s = k.grid_sync_s;
  g->signal_s = k.signal_s;
  g->atomic_s = k.atomic_s;
  g->flag_s = k.flag_s;
  /* a cold-L2 harness flushes by writing: its dirty lines leave for HBM
   * as the kernel's first reads take their place */
  g->dirty_B = c->cold_l2 > 0 ? k.l2_B : 0;
  const xs_channel *hbm = xs_profile_channel(prof, (size_t)xs_profile_find_channel(prof, "hbm"));
  g->hbm_latency_s = hbm ? hbm->latency_s : 0;
  const xs_channel *link = xs_profile_channel(prof, xs_profile_default_channel(prof));
  g->link_latency_s = link ? link->latency_s : 0;
  g->hopper = k.promotion > 0;
  g->act_bytes = c->act_bytes;
  g->weight_bytes = c->weight_bytes;
  g->combine_bytes = c->combine_bytes;
  return XS_OK;
}

int xs__moe_timing(const xs_moe_config *c) {
  if (!c->timing[0] || !strcmp(c->timing, "stream"))
    return XS__TIMING_STREAM;
  if (!strcmp(c->timing, "graph"))
    return XS__TIMING_GRAPH;
  if (!strcmp(c->timing, "device"))
    return XS__TIMING_DEVICE;
  return -1;
}

/* a case-blind search for needle in hay */
static int mentions(const char *hay, const char *needle) {
  size_t n = strlen(needle);
  for (const char *p = hay; *p; p++) {
    size_t i = 0;
    while (i < n && p[i] && tolower((unsigned char)p[i]) == needle[i])
      i++;
    if (i == n)
      return 1;
  }
  return 0;
}

const char *xs__moe_timing_of_text(const char *text) {
  static const char *const device[] = {"kineto", "device time", "nsys", "nsight",
                                       "ncu", "kernel time", "event trace", NULL};
  for (int i = 0; device[i]; i++)
    if (mentions(text, device[i]))
      return "device";
  return mentions(text, "graph") ? "graph" : "stream";
}

double xs__moe_cold_of_text(const char *text) {
  /* DeepGEMM's bench_kineto, which these kernels' harnesses time with,
   * flushes the L2 with an 8 GB memset before every call by default
   * (deep_gemm/testing/bench.py at 54e2261) */
  return mentions(text, "cold l2") || mentions(text, "flush") ||
                 mentions(text, "kineto")
             ? 1
             : 0;
}

double xs__tile_time(const xs__gemm_terms *g, const xs__tile_cfg *t,
                     double rows, double K, int layer) {
  double rp = t->swap_ab ? fmax(8, ceil(rows / 8) * 8) : t->bm;
  double kp = g->hopper ? (layer == 1 ? t->scale_k1 : t->scale_k2) : 0;
  if (!(kp > 0))
    kp = 128; /* no promotion: intervals only count operand traffic */
  double nint = ceil(K / kp);
  double flops = 2 * rp * t->bn * kp;
  double instr = t->wgs * ceil(kp / 32);
  double tensor = flops / g->F_sm + instr * g->wgmma_cycles / g->clock_hz;
  if (g->hopper) {
    double passes = t->promo_passes > 0 ? t->promo_passes : 1;
    tensor += passes * t->wgs * (t->wg_n / 2) / g->clock_hz;
  }
  double a = rp * kp * g->act_bytes / (t->mc_a ? t->cluster : 1);
  double b = t->bn * kp * g->weight_bytes / (t->mc_b ? t->cluster : 1);
  double l2 = (a + b) / g->l2_sm_Bps;
  return nint * fmax(tensor, l2) + g->tile_s * rp * t->bn / (128.0 * 128.0);
}
