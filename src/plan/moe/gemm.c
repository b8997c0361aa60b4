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
 *           clock on each SM sub-partition, while the tensor pipe idles);
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
  g->tile_s = k.tile_overhead_s;
  g->launch_s = k.launch_s;
  g->barrier_s = k.barrier_s;
  g->setup_s = k.setup_s;
  g->hopper = k.promotion > 0;
  g->act_bytes = c->act_bytes;
  g->weight_bytes = c->weight_bytes;
  g->combine_bytes = c->combine_bytes;
  return XS_OK;
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
  if (g->hopper)
    tensor += t->wgs * (t->wg_n / 2) / g->clock_hz;
  double a = rp * kp * g->act_bytes / (t->mc_a ? t->cluster : 1);
  double b = t->bn * kp * g->weight_bytes / (t->mc_b ? t->cluster : 1);
  double l2 = (a + b) / g->l2_sm_Bps;
  return nint * fmax(tensor, l2) + g->tile_s * rp * t->bn / (128.0 * 128.0);
}
