/*
 * calls.c: which attention kernels a GPU runs, and what a user calls to
 * run each way of the ring (docs/plan-flashattn.md "Kernels and calls").
 *
 * FlashAttention-2 runs on Ampere and later (Dao-AILab/flash-attention
 * README at f82d0dc6: Ampere, Ada, Hopper; setup.py there builds sm_80,
 * sm_90 and, from CUDA 12.8, sm_100 and sm_120). FlashAttention-3 is a
 * Hopper kernel ("Requirements: H100 / H800 GPU", the same README; what
 * its hopper/ folder builds for sm_80 is another kernel, not the one
 * modelled). FlashAttention-4 (flash_attn/cute/interface.py at f82d0dc6)
 * runs its forward on 8.x to 12.x and its backward on 9.x to 12.x, with a
 * kernel class of its own for each: on Hopper FlashAttentionForwardSm90
 * and FlashAttentionBackwardSm90. A ring's way is ring-flash-attention's
 * (zhuzilin/ring-flash-attention at 556ddaa, which calls FlashAttention-2's
 * _flash_attn_forward), or a proposal: no public kernel sets SMs aside for
 * a FlashAttention ring or stores its K/V stages from inside the loop.
 * Nothing here changes a prediction.
 */
#include "plan/attention/attention.h"

#include <stdarg.h>
#include <stdio.h>
#include <string.h>

static const char *const fa_source =
    "Dao-AILab/flash-attention at f82d0dc6: README.md, setup.py, "
    "hopper/flash_attn_interface.py, flash_attn/cute/interface.py";

/* the kernels the arch runs, best first */
static const char *best_for(unsigned arch) {
  if (arch / 10 == 9)
    return "fa3";
  if (arch >= 100)
    return "fa4";
  return "fa2";
}

/* Whether the arch runs the kernel's passes; else why, and what to use */
static int runs(const char *kernel, unsigned arch, int backward, char *why, size_t n) {
  if (arch < 80) {
    snprintf(why, n, "the GPU (sm%u) is older than Ampere: FlashAttention-2, -3 "
                     "and -4 need sm80 or later", arch);
    return 0;
  }
  if (!strcmp(kernel, "fa3") && arch / 10 != 9) {
    snprintf(why, n, "FlashAttention-3 runs on Hopper (sm90) only, and this GPU is "
                     "sm%u (flash-attention README at f82d0dc6: \"Requirements: H100 "
                     "/ H800 GPU\"): use %s (--kernel %s), the best kernel it runs",
             arch, best_for(arch), best_for(arch));
    return 0;
  }
  if (!strcmp(kernel, "fa4") && backward && arch < 90) {
    snprintf(why, n, "FlashAttention-4's backward runs on sm90 and later "
                     "(flash_attn/cute/interface.py at f82d0dc6, _flash_attn_bwd), "
                     "and this GPU is sm%u: use fa2 (--kernel fa2), or plan the "
                     "forward alone",
             arch);
    return 0;
  }
  return 1;
}

xs_status xs_fa_kernel_resolve(const xs_fa_config *c, const xs_profile *prof,
                               xs_fa_config *out, xs_error *err) {
  if (out != c)
    *out = *c;
  unsigned arch = prof ? xs_profile_arch(prof) : 0;
  if (!out->kernel[0]) {
    if (arch) {
      snprintf(out->kernel, sizeof out->kernel, "%s", best_for(arch));
    } else {
      /* no architecture: the best kernel the profile has figures for */
      static const char *const pref[] = {"fa4", "fa3", "fa2"};
      const char *k = "fa2";
      for (int i = 0; i < 3 && prof; i++)
        if (xs_profile_attn(prof, XS_ATTN_FLOPS, pref[i]) > 0) {
          k = pref[i];
          break;
        }
      snprintf(out->kernel, sizeof out->kernel, "%s", k);
    }
  }
  xs_status st = xs_fa_config_check(out, err);
  if (st)
    return st;
  char why[320];
  if (arch && !runs(out->kernel, arch, out->backward, why, sizeof why))
    return xs__fail(err, XS_INVALID, "kernel %s on profile \"%s\": %s", out->kernel,
                    xs_profile_name(prof), why);
  return XS_OK;
}

/* the first reason is the one a user acts on */
#define propose(o, ...)                                                      \
  xs__first_reason(&(o)->proposal, (o)->change, sizeof (o)->change, __VA_ARGS__)

xs_status xs_fa_call_of(const xs_fa_config *config, const xs_profile *prof, xs_fa_path path,
                        int layout, xs_fa_call *o, xs_error *err) {
  memset(o, 0, sizeof *o);
  xs_fa_config c;
  xs_status st = xs_fa_kernel_resolve(config, prof, &c, err);
  if (st)
    return st;
  if ((unsigned)path >= XS_FA_PATHS)
    return xs__fail(err, XS_INVALID, "unknown path %d", (int)path);
  unsigned arch = xs_profile_arch(prof);
  int fa2 = !strcmp(c.kernel, "fa2"), fa3 = !strcmp(c.kernel, "fa3");
  o->kernel = fa2 ? "FlashAttention-2" : fa3 ? "FlashAttention-3" : "FlashAttention-4";
  o->function = fa2   ? "flash_attn.flash_attn_func"
                : fa3 ? "flash_attn_interface.flash_attn_func"
                      : "flash_attn.cute.flash_attn_func";
  o->package = fa2 ? "flash-attn" : fa3 ? "hopper/ of flash-attention (flash_attn_3)"
                                        : "flash-attn-4";
  o->source = fa_source;
  /* the passes the GPU runs them with */
  const char *pass = c.backward ? "forward and backward" : "forward";
  if (!strcmp(c.kernel, "fa4")) {
    const char *cls = arch / 10 == 8   ? "Sm80"
                      : arch / 10 == 9 ? "Sm90"
                      : arch / 10 == 12 ? "Sm120"
                      : arch ? "Sm100" : "";
    if (cls[0])
      snprintf(o->passes, sizeof o->passes, "%s: FlashAttentionForward%s%s%s%s", pass,
               cls, c.backward ? ", FlashAttentionBackward" : "", c.backward ? cls : "",
               arch / 10 != 10 && arch / 10 != 11
                   ? " (not the SM100 kernel whose tiles the plan models)"
                   : "");
    else
      snprintf(o->passes, sizeof o->passes, "%s", pass);
  } else {
    snprintf(o->passes, sizeof o->passes, "%s", pass);
  }
  static const char *const ring_fn[XS_FA_LAYOUTS] = {
      "ring_flash_attn.ring_flash_attn_func", "ring_flash_attn.zigzag_ring_flash_attn_func",
      "ring_flash_attn.stripe_flash_attn_func"};
  int l = layout >= 0 && layout < XS_FA_LAYOUTS ? layout : (int)c.layout;
  o->ring = "";
  switch (path) {
  case XS_FA_LOCAL:
    o->label = o->kernel;
    o->way = "the kernel on the rank's own tokens: no ring";
    break;
  case XS_FA_PATH_SEQUENTIAL:
    o->label = o->kernel;
    o->way = "a loop that calls the kernel, then forwards K and V "
             "(torch.distributed.batch_isend_irecv) and waits: no ring "
             "library runs it, the loop is the caller's";
    break;
  case XS_FA_PATH_STREAM:
    o->label = "ring-flash-attention";
    o->ring = ring_fn[l];
    o->way = "ring-flash-attention: the send and receive of the next block "
             "posted on NCCL's stream at each step's start";
    o->ring_source = "zhuzilin/ring-flash-attention at 556ddaa: ring_flash_attn/";
    if (!fa2)
      propose(o, "%s inside the ring: ring-flash-attention calls "
                 "FlashAttention-2's _flash_attn_forward (flash_attn."
                 "flash_attn_interface), not %s",
              o->kernel, o->function);
    break;
  case XS_FA_PATH_SMS:
    o->label = o->kernel;
    o->way = "one kernel a step whose first CTAs forward the block while the "
             "others compute";
    propose(o, "SMs set aside inside %s to forward K and V: ThunderKittens' ring "
               "attention and uccl-project/mKernel run a ring this way with an "
               "attention kernel of their own, no FlashAttention does",
            o->kernel);
    break;
  default:
    o->label = o->kernel;
    o->way = "the kernel stores each K/V stage it loads to the next rank";
    propose(o, "%s storing each K/V stage it has loaded to the next rank from a "
               "warp it leaves idle, before the stage is refilled: no public "
               "FlashAttention kernel does",
            o->kernel);
    break;
  }
  return XS_OK;
}
