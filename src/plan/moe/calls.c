/*
 * calls.c: what a user calls to run a MegaMoE option (docs/plan-megamoe.md
 * "The calls"). Each schedule is a kernel that exists (its library, the
 * version the model was read from, its entry points), or xstage's own
 * order on one of them; the knobs a plan reports become that kernel's
 * arguments where it takes them, and what it picks by itself where it
 * does not. An option that no shipping kernel runs as given is a
 * proposal, with the change it needs: a knob the kernel picks itself, an
 * order its arguments cannot reach, a kernel the GPU cannot run.
 *
 * The entry points and argument names are those of the sources named
 * below at the commits given; tests/test_moe.c holds every argument
 * printed to its own transcription of those signatures, and predicts
 * every option again through the validate row given here. Nothing here
 * changes a prediction.
 */
#include "plan/moe/moe.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

/* the lag kernel's group (kSm90FusedAutoLagGroup) and the least buffer
 * on which it runs the lag order (kSm90FusedAutoLagMinTokens), and the
 * token alignment of its buffers (get_token_alignment_sm90_fused: the
 * Python wrapper rounds num_max_tokens_per_rank up to it) */
#define LAG_GROUP 4
#define LAG_MIN_TOKENS 1024
#define SM90_TOKEN_ALIGN 128

/* what every call of one config on one profile reads (the workload, the
 * tile terms): made once for all the schedules and options a document
 * names (xs__moe_calls_open) */
struct xs__moe_calls {
  const xs_moe_config *c;
  const xs_profile *prof;
  xs__moe_wl wl;
  xs__gemm_terms g;
  unsigned arch;  /* 90, 100, ...                                      */
  double cap;     /* tokens per rank the buffers are sized for         */
  int fp8_dispatch, fp8_weights, forced_tile;
};
typedef struct xs__moe_calls ctx;

/* ---- building a call ---- */

static xs_moe_call_step *add_step(xs_moe_call *o, const char *function,
                                  const char *tensors, const char *does) {
  if (o->nsteps >= XS_MOE_CALL_STEPS)
    return &o->steps[XS_MOE_CALL_STEPS - 1];
  xs_moe_call_step *s = &o->steps[o->nsteps++];
  memset(s, 0, sizeof *s);
  s->assign = "";
  s->function = function;
  s->tensors = tensors;
  s->does = does;
  return s;
}

static void add_arg(xs_moe_call_step *s, const char *name, xs_moe_arg_kind kind,
                    double a, double b, double c, unsigned count) {
  if (s->nargs >= XS_MOE_CALL_ARGS)
    return;
  xs_moe_call_arg *x = &s->args[s->nargs++];
  x->name = name;
  x->kind = kind;
  x->value[0] = (long long)a;
  x->value[1] = (long long)b;
  x->value[2] = (long long)c;
  x->count = count;
}

static void arg_int(xs_moe_call_step *s, const char *name, double v) {
  add_arg(s, name, XS_MOE_ARG_INT, v, 0, 0, 1);
}

static void arg_bool(xs_moe_call_step *s, const char *name, int v) {
  add_arg(s, name, XS_MOE_ARG_BOOL, v != 0, 0, 0, 1);
}

/* the first reason is the one a user acts on */
#define propose(o, ...)                                                      \
  xs__first_reason(&(o)->proposal, (o)->change, sizeof (o)->change, __VA_ARGS__)

static void picks_tile(xs_moe_call *o, const xs_moe_pattern *k) {
  o->picks.block_m = k->block_m;
  o->picks.block_n = k->block_n;
  o->picks_mask |= XS_MOE_KNOB_BLOCK_M | XS_MOE_KNOB_BLOCK_N;
}

/* the checks every fused DeepGEMM kernel makes: FP8 dispatch, its own
 * tile (no argument sets BLOCK_M or BLOCK_N) */
static void fused_common(const ctx *x, xs_moe_call *o) {
  if (!x->fp8_dispatch)
    propose(o, "FP8 dispatch: the fused kernels pull FP8 tokens (the config's "
               "dispatch is %g bytes an element)",
            x->c->act_bytes);
  if (x->forced_tile)
    propose(o, "a tile override: the kernel picks BLOCK_M and BLOCK_N by "
               "itself (the config sets block_m %g, block_n %g)",
            x->c->block_m, x->c->block_n);
}

static void sm90_only(const ctx *x, xs_moe_call *o, const char *what) {
  if (x->arch / 10 != 9)
    propose(o, "a port to sm%u: %s runs on SM90 (compute capability 9.x) "
               "only",
            x->arch, what);
  if (!x->fp8_weights)
    propose(o, "%s weights: %s takes FP8 e4m3 weights only", x->c->dtype, what);
}

/* the symmetric buffer of the SM90 fused kernels */
static xs_moe_call_step *sm90_buffer(const ctx *x, xs_moe_call *o, int fused,
                                     double num_max_tokens) {
  xs_moe_call_step *s = add_step(o, "deep_gemm.get_symm_buffer_for_sm90_mega_moe",
                                 "group", "the symmetric buffer (token pool or "
                                          "ring) every rank pulls from");
  s->assign = "sym_buffer";
  arg_int(s, "num_experts", x->c->experts);
  arg_int(s, "num_max_tokens_per_rank", num_max_tokens);
  arg_int(s, "num_topk", x->c->topk);
  arg_int(s, "hidden", x->c->hidden);
  arg_int(s, "intermediate_hidden", x->c->intermediate);
  if (fused)
    arg_bool(s, "fused", 1);
  return s;
}

static void fp8_mega_moe(xs_moe_call *o, const char *does) {
  xs_moe_call_step *s = add_step(o, "deep_gemm.fp8_mega_moe",
                                 "y, l1_weights, l2_weights, sym_buffer", does);
  add_arg(s, "recipe", XS_MOE_ARG_TUPLE, 128, 128, 128, 3);
}

/* ---- the lag kernel: fused-lag, and l1-then-l2 and searched on it ---- */

/* The experts per wave of the lag kernel's wave schedule on a full pool
 * (get_num_experts_per_wave_sm90_fused at 903bd1f, its branches for a
 * buffer holding the pool): one wave at BLOCK_M 64 up to 256 tokens,
 * or below one and above four rows per local expert; at BLOCK_M 64 and
 * more than four, the experts whose L1 tiles fill the SMs once; else the
 * occupancy rule the SM100 kernel has (xs__moe_default_epw). */
static double lag_kernel_waves(const ctx *x, const xs__tile_cfg *t) {
  const xs__moe_wl *wl = &x->wl;
  double el = wl->El, rows = wl->T * wl->K / el;
  double nblk = floor(2 * wl->I / t->bn);
  if (t->bm == 64 && wl->T <= 256)
    return el;
  if (t->bm == 64 && rows > 4)
    return fmin(fmax(1, floor(wl->S / fmax(1, nblk))), el);
  if (rows < 1 || rows > 4)
    return el;
  if (t->bm == 64 && wl->I >= 3072 && el * nblk >= 4 * wl->S)
    return el;
  return xs__moe_default_epw(wl, t);
}

/* The lag the kernel derives from a buffer of cap tokens per rank
 * (get_auto_late_lag_sm90_fused), which the model's default follows. */
static double lag_of(const ctx *x, double cap) {
  return xs__moe_default_lag(&x->wl, cap);
}

/* The least buffer (tokens per rank, a multiple of the kernel's token
 * alignment, at least `from`) whose lag is `lag`; 0 for none. Lags grow
 * with the buffer in steps of 1024 / top-k tokens a local expert. */
static double capacity_for_lag(const ctx *x, double lag, double from) {
  const xs__moe_wl *wl = &x->wl;
  double step = wl->El * 1024 / wl->K;
  double u0 = fmax(1, ceil(from * wl->K / (wl->El * 1024)));
  for (double u = u0; u < u0 + 4096; u++) {
    double c = fmax(from, u > 1 ? floor((u - 1) * step) + 1 : 1);
    c = ceil(c / SM90_TOKEN_ALIGN) * SM90_TOKEN_ALIGN;
    double l = lag_of(x, c);
    if (l == lag && fmax(1, ceil(c * wl->K / (wl->El * 1024))) == u)
      return c;
    if (l > lag || l >= 64)
      break;
  }
  return 0;
}

/* "14, 29, 43" : the lags buffers from `from` tokens per rank give */
static void lags_reachable(const ctx *x, double from, char *buf, size_t n) {
  const xs__moe_wl *wl = &x->wl;
  double step = wl->El * 1024 / wl->K, last = -1;
  size_t at = 0;
  buf[0] = '\0';
  double u0 = fmax(1, ceil(from * wl->K / (wl->El * 1024)));
  for (double u = u0; u < u0 + 64 && last < 64; u++) {
    double c = fmax(from, u > 1 ? floor((u - 1) * step) + 1 : 1);
    double l = lag_of(x, c);
    if (l == last)
      continue;
    int w = snprintf(buf + at, n - at, "%s%g", at ? ", " : "", l);
    if (w < 0 || (size_t)w >= n - at)
      break;
    at += (size_t)w;
    last = l;
  }
}

static void call_lag_kernel(const ctx *x, xs_moe_schedule s,
                            const xs_moe_pattern *k, xs_moe_call *o,
                            xs_error *err, xs_status *st) {
  const xs__moe_wl *wl = &x->wl;
  o->kernel = "DeepGEMM's fused SM90 FP8 MegaMoE: one launch; on a ring of "
              "L1's output its L2 tiles trail L1 by a lag, on a full pool it "
              "runs expert waves";
  o->label = "DeepGEMM PR 440";
  o->version = "deepseek-ai/DeepGEMM PR 440 (= sgl-project/DeepGEMM PR 88)";
  o->source = "deepseek-ai/DeepGEMM csrc/apis/sm90_fused_mega.hpp at 187288b, "
              "csrc/jit_kernels/heuristics/sm90_fused_mega_moe.hpp at 903bd1f, "
              "tests/test_mega_moe_sm90_fused_ring.py at c3586bb";
  xs__tile_cfg tile;
  xs__moe_tile_lag(wl, &tile);
  xs_moe_pattern kn = *k;
  xs__moe_block *blocks = NULL;
  size_t nb, n1, n2;
  if ((*st = xs__moe_kernel_blocks(wl, &tile, &kn, 0, &blocks, &nb, &n1, &n2, err)))
    return;
  double units = (double)xs__moe_lag_units(blocks, nb);
  free(blocks);
  int ring = xs__moe_lag_ring(wl, &tile);
  int all_first = k->lag >= units;
  picks_tile(o, k);
  fused_common(x, o);
  sm90_only(x, o, "DeepGEMM PR 440's fused kernel");
  double el = wl->El;
  if (all_first) {
    double waves = lag_kernel_waves(x, &tile);
    snprintf(o->order, sizeof o->order,
             "one wave of all %g local experts: every L1 tile, then every L2", el);
    /* a lag ring holds the lag's blocks only: one wave needs the pool */
    xs_moe_call_step *b = sm90_buffer(x, o, 1, x->cap);
    if (ring)
      arg_int(b, "num_experts_per_wave", el);
    fp8_mega_moe(o, "dispatch pull, L1, SwiGLU, L2 and combine in one launch, "
                    "in expert waves");
    o->picks.experts_per_wave = (unsigned)el;
    o->picks_mask |= XS_MOE_KNOB_EXPERTS_PER_WAVE;
    if (waves < el)
      propose(o, "one wave: on a full pool the kernel's wave schedule runs "
                 "%g experts per wave here (get_num_experts_per_wave_sm90_fused); "
                 "one wave of all %g needs an override of it",
              waves, el);
    if (s == XS_MOE_INTERLEAVED || s == XS_MOE_L1_THEN_L2) {
      snprintf(o->arm, sizeof o->arm, "l1-then-l2");
      o->knobs[0] = '\0';
    } else {
      snprintf(o->arm, sizeof o->arm, "%s", xs_moe_schedule_name(s));
      if (k->lag == lag_of(x, x->cap) || !ring)
        o->knobs[0] = '\0';
      else
        snprintf(o->knobs, sizeof o->knobs, "lag=%u;group=%u", k->lag, k->group);
    }
    if (x->c->capacity > 0 && x->c->capacity != x->c->tokens) {
      size_t at = strlen(o->knobs);
      snprintf(o->knobs + at, sizeof o->knobs - at, "%scapacity=%g",
               at ? ";" : "", x->c->capacity);
    }
    return;
  }
  snprintf(o->order, sizeof o->order, "lag %u units, group %u", k->lag, k->group);
  o->picks.lag = k->lag;
  o->picks.group = k->group;
  o->picks_mask |= XS_MOE_KNOB_LAG | XS_MOE_KNOB_GROUP;
  snprintf(o->arm, sizeof o->arm, "%s", xs_moe_schedule_name(s));
  double c = 0;
  if (!ring) {
    propose(o, "a ring buffer: the kernel runs the lag order only on a ring of "
               "L1's output, which it builds for buffers of at least %d tokens "
               "per rank and, at BLOCK_M 64, calls of more than 256 (this one: "
               "%g tokens of buffer, BLOCK_M %u)",
            LAG_MIN_TOKENS, x->cap, k->block_m);
  } else if (k->group != LAG_GROUP) {
    propose(o, "group %u: the kernel issues L2 units %d at a time "
               "(kSm90FusedAutoLagGroup)",
            k->group, LAG_GROUP);
  } else if (lag_of(x, ceil(x->cap / SM90_TOKEN_ALIGN) * SM90_TOKEN_ALIGN) == k->lag &&
             lag_of(x, x->cap) == k->lag) {
    c = x->cap; /* the buffer's own: the kernel's default for it */
  } else if (!(c = capacity_for_lag(x, k->lag, fmax(x->c->tokens, LAG_MIN_TOKENS)))) {
    char lags[96];
    lags_reachable(x, fmax(x->c->tokens, LAG_MIN_TOKENS), lags, sizeof lags);
    propose(o, "a lag argument: the kernel derives its lag from "
               "num_max_tokens_per_rank (get_auto_late_lag_sm90_fused), which "
               "gives lags %s for this shape, not %u",
            lags, k->lag);
  }
  xs_moe_call_step *b = sm90_buffer(x, o, 1, c > 0 ? c : x->cap);
  (void)b;
  fp8_mega_moe(o, "dispatch pull, L1, SwiGLU, L2 and combine in one launch, "
                  "L2 trailing L1 by the lag");
  if (c > 0 && !o->proposal) {
    /* the buffer's capacity sets the lag: the row says the capacity */
    if (c != x->c->tokens)
      snprintf(o->knobs, sizeof o->knobs, "capacity=%g", c);
    else
      o->knobs[0] = '\0';
    if (s != XS_MOE_FUSED_LAG) {
      /* the same program as fused-lag at that capacity */
      snprintf(o->arm, sizeof o->arm, "fused-lag");
    }
    return;
  }
  snprintf(o->knobs, sizeof o->knobs, "lag=%u;group=%u", k->lag, k->group);
  if (x->c->capacity > 0 && x->c->capacity != x->c->tokens) {
    size_t at = strlen(o->knobs);
    snprintf(o->knobs + at, sizeof o->knobs - at, ";capacity=%g", x->c->capacity);
  }
}

/* ---- the other fused kernels ---- */

static void call_split(const ctx *x, const xs_moe_pattern *k, xs_moe_call *o) {
  o->kernel = "DeepGEMM's SM90 FP8 MegaMoE in two launches: L1 with the "
              "dispatch pull, then L2 with the combine";
  o->label = "DeepGEMM PR 383";
  o->version = "deepseek-ai/DeepGEMM PR 383 (AichenF/DeepGEMM)";
  o->source = "AichenF/DeepGEMM deep_gemm/mega/__init__.py at bc4f33a";
  picks_tile(o, k);
  snprintf(o->order, sizeof o->order, "every L1 tile, then every L2 (two launches)");
  fused_common(x, o);
  sm90_only(x, o, "DeepGEMM PR 383's kernel");
  sm90_buffer(x, o, 0, x->cap);
  fp8_mega_moe(o, "dispatch pull, L1 and SwiGLU; then L2 and combine");
  snprintf(o->arm, sizeof o->arm, "fused-split");
}

/* the symmetric buffer of the SM100 kernels and the SM90 wave port */
static void wave_buffer(const ctx *x, xs_moe_call *o) {
  xs_moe_call_step *s = add_step(o, "deep_gemm.get_symm_buffer_for_mega_moe",
                                 "group", "the symmetric buffer (token pool "
                                          "or ring) every rank pulls from");
  s->assign = "sym_buffer";
  arg_int(s, "num_experts", x->c->experts);
  arg_int(s, "num_max_tokens_per_rank", x->cap);
  arg_int(s, "num_topk", x->c->topk);
  arg_int(s, "hidden", x->c->hidden);
  arg_int(s, "intermediate_hidden", x->c->intermediate);
}

/* The wave and interleaved kernels: SM100's in DeepGEMM, or the SM90
 * ports of sgl-project/DeepGEMM. */
static void call_wave_kind(const ctx *x, xs_moe_schedule s,
                           const xs_moe_pattern *k, xs_moe_call *o) {
  const xs__moe_wl *wl = &x->wl;
  int hopper = x->arch / 10 == 9, wave = s == XS_MOE_FUSED_WAVE;
  xs__tile_cfg tile;
  xs__moe_tile_wave_or_sm100(wl, &x->g, &tile);
  if (k->block_m)
    tile.bm = k->block_m;
  if (k->block_n)
    tile.bn = k->block_n;
  picks_tile(o, k);
  fused_common(x, o);
  snprintf(o->arm, sizeof o->arm, "%s", xs_moe_schedule_name(s));
  if (hopper) {
    o->kernel = wave ? "sgl-project/DeepGEMM's SM90 port of DeepGEMM's MegaMoE: "
                       "one launch, experts in waves"
                     : "sgl-project/DeepGEMM's SM90 port of the interleaved "
                       "scheduler: warm-up L1 waves, then L2 and L1 tasks "
                       "alternating";
    o->label = wave ? "sgl DeepGEMM PR 36" : "sgl DeepGEMM PR 69";
    o->version = wave ? "sgl-project/DeepGEMM PR 36 (sgl-deep-gemm, imported as "
                        "deep_gemm)"
                      : "sgl-project/DeepGEMM PR 69 (sgl-deep-gemm, imported as "
                        "deep_gemm)";
    o->source = wave ? "sgl-project/DeepGEMM sgl_deep_gemm/__init__.py and "
                       "csrc/jit_kernels/heuristics/mega_moe.hpp at 3f9268b"
                     : "PR 69 from its description (its source was not read); "
                       "the entry points are PR 36's, sgl_deep_gemm/__init__.py "
                       "at 3f9268b";
    if (!x->fp8_weights)
      propose(o, "%s weights: the SM90 port takes FP8 e4m3 weights only",
              x->c->dtype);
    wave_buffer(x, o);
    fp8_mega_moe(o, "dispatch pull, L1, SwiGLU, L2 and combine in one launch");
  } else {
    o->kernel = wave ? "DeepGEMM's SM100 MegaMoE: one launch, experts in waves"
                     : "DeepGEMM's SM100 MegaMoE with the interleaved scheduler: "
                       "warm-up L1 waves, then L2 and L1 tasks alternating";
    o->label = wave ? "DeepGEMM PR 316" : "DeepGEMM PR 377";
    o->version = wave ? "deepseek-ai/DeepGEMM PR 316, as at 54e2261"
                      : "deepseek-ai/DeepGEMM PR 377 (AichenF/DeepGEMM)";
    o->source = wave ? "deepseek-ai/DeepGEMM deep_gemm/mega/__init__.py, "
                       "csrc/apis/mega.hpp, csrc/jit_kernels/heuristics/"
                       "mega_moe.hpp at 54e2261"
                     : "AichenF/DeepGEMM deep_gemm/mega/__init__.py and "
                       "deep_gemm/include/deep_gemm/scheduler/mega_moe.cuh at "
                       "559d79f";
    if (x->arch / 10 != 10)
      propose(o, "a port to sm%u: DeepGEMM's MegaMoE runs on SM100 "
                 "(compute capability 10.x) and its SM90 ports only",
              x->arch);
    wave_buffer(x, o);
    add_step(o, "deep_gemm.fp8_fp4_mega_moe", "y, l1_weights, l2_weights, sym_buffer",
             "dispatch pull, L1, SwiGLU, L2 and combine in one launch");
  }
  if (wave) {
    double d = xs__moe_wave_epw(wl, &x->g, &tile);
    o->picks.experts_per_wave = k->experts_per_wave;
    o->picks_mask |= XS_MOE_KNOB_EXPERTS_PER_WAVE;
    snprintf(o->order, sizeof o->order, "waves of %u of the %g local experts: "
                                        "a wave's L1 tiles, then its L2",
             k->experts_per_wave, wl->El);
    if (k->experts_per_wave != d) {
      propose(o, "experts per wave %u: the kernel picks %g here by itself "
                 "(get_num_experts_per_wave_for_mega_moe); %u needs an override "
                 "of that rule",
              k->experts_per_wave, d, k->experts_per_wave);
      snprintf(o->knobs, sizeof o->knobs, "experts_per_wave=%u", k->experts_per_wave);
    }
  } else {
    size_t n1 = (size_t)ceil(2 * wl->I / tile.bn), n2 = (size_t)ceil(wl->H / tile.bn);
    double d = xs__moe_default_warmup(n1, n2);
    o->picks.warmup = k->warmup;
    o->picks_mask |= XS_MOE_KNOB_WARMUP;
    snprintf(o->order, sizeof o->order, "%u warm-up L1 waves, then L2 and L1 "
                                        "tasks alternating",
             k->warmup);
    if (k->warmup != d) {
      propose(o, "warm-up waves %u: the scheduler picks %g here by itself; %u "
                 "needs an override of its warm-up rule",
              k->warmup, d, k->warmup);
      snprintf(o->knobs, sizeof o->knobs, "warmup=%u", k->warmup);
    }
  }
}

/* ---- the unfused path: an all-to-all library around grouped GEMMs ---- */

static void grouped_gemm(const ctx *x, xs_moe_call *o, int masked, const char *does) {
  int fp4 = !x->fp8_weights;
  const char *f = masked ? (fp4 ? "deep_gemm.m_grouped_fp8_fp4_gemm_nt_masked"
                                : "deep_gemm.m_grouped_fp8_gemm_nt_masked")
                         : (fp4 ? "deep_gemm.m_grouped_fp8_fp4_gemm_nt_contiguous"
                                : "deep_gemm.m_grouped_fp8_gemm_nt_contiguous");
  xs_moe_call_step *s =
      add_step(o, f, masked ? "a, b, d, masked_m" : "a, b, d, grouped_layout", does);
  /* a masked layout's rows per local expert, as the GEMM's heuristic
   * expects them: the mean a routed expert gets */
  if (masked)
    arg_int(s, "expected_m", ceil(x->c->tokens * x->c->ep * x->c->topk / x->c->experts));
}

static void call_sequential(const ctx *x, const xs_moe_pattern *k, xs_moe_call *o) {
  const xs_moe_config *c = x->c;
  const char *lib = c->ep_library[0] ? c->ep_library : XS__MOE_EP_LIBRARY;
  const char *mode = c->ep_kernel[0] ? c->ep_kernel : XS__MOE_EP_KERNEL;
  int ll = !strcmp(mode, "low-latency"), fp8 = x->fp8_dispatch;
  picks_tile(o, k);
  snprintf(o->order, sizeof o->order, "dispatch, L1, SwiGLU, L2, combine: one "
                                      "kernel after another");
  snprintf(o->arm, sizeof o->arm, "sequential");
  o->kernel = "unfused: the all-to-all library's dispatch and combine around "
              "DeepGEMM's grouped GEMMs (L1, a SwiGLU and FP8 cast kernel, L2)";
  xs_moe_call_step *s;
  if (!strcmp(lib, "deepep-v2")) {
    o->label = "DeepEP V2 + DeepGEMM";
    o->version = "DeepEP V2 (deepseek-ai/DeepEP 2.1.0) and DeepGEMM";
    o->source = "deepseek-ai/DeepEP deep_ep/buffers/elastic.py at dd758ca; "
                "deepseek-ai/DeepGEMM csrc/apis/gemm.hpp at 54e2261";
    s = add_step(o, "deep_ep.ElasticBuffer", "group", "the EP buffer");
    s->assign = "buffer";
    arg_int(s, "num_max_tokens_per_rank", c->tokens);
    arg_int(s, "hidden", c->hidden);
    arg_int(s, "num_topk", c->topk);
    arg_bool(s, "use_fp8_dispatch", fp8);
    s = add_step(o, "buffer.dispatch", "x, topk_idx, topk_weights",
                 "dispatch: counts to the host, then every token to its ranks");
    arg_int(s, "num_experts", c->experts);
    arg_int(s, "expert_alignment", 128);
    arg_bool(s, "do_cpu_sync", 1);
  } else if (!strcmp(lib, "deepep-v1") || !strcmp(lib, "uccl-ep")) {
    int uccl = !strcmp(lib, "uccl-ep");
    o->label = uccl ? "UCCL-EP + DeepGEMM" : "DeepEP V1 + DeepGEMM";
    o->version = uccl ? "UCCL-EP (uccl-project/uccl ep/, DeepEP V1's Python API) "
                        "and DeepGEMM"
                      : "DeepEP V1 (deepseek-ai/DeepEP) and DeepGEMM";
    o->source = uccl ? "uccl-project/uccl ep/ at da914a20, its deep_ep wrapper "
                       "ep/deep_ep_wrapper/deep_ep/buffer.py; deepseek-ai/DeepGEMM "
                       "csrc/apis/gemm.hpp at 54e2261"
                     : "deepseek-ai/DeepEP deep_ep/buffer.py at 567632d; "
                       "deepseek-ai/DeepGEMM csrc/apis/gemm.hpp at 54e2261";
    if (ll) {
      s = add_step(o, "buffer.low_latency_dispatch", "x, topk_idx",
                   "dispatch: every (token, expert) as its own message");
      arg_int(s, "num_max_dispatch_tokens_per_rank", c->tokens);
      arg_int(s, "num_experts", c->experts);
      arg_bool(s, "use_fp8", fp8);
    } else {
      if (!uccl) {
        s = add_step(o, "deep_ep.Buffer.set_num_sms", "", "the SMs the normal "
                                                          "kernels take");
        arg_int(s, "new_num_sms", 24);
      }
      s = add_step(o, "buffer.get_dispatch_layout", "topk_idx", "the counts");
      s->assign = "num_tokens_per_rank, _, num_tokens_per_expert, is_token_in_rank, _";
      arg_int(s, "num_experts", c->experts);
      s = add_step(o, "buffer.dispatch", "x, num_tokens_per_rank, is_token_in_rank, "
                                         "num_tokens_per_expert, topk_idx, topk_weights",
                   "dispatch: every token once to each of its ranks");
      arg_int(s, "expert_alignment", 128);
    }
  } else if (!strcmp(lib, "deepep-hybrid")) {
    o->label = "HybridEP + DeepGEMM";
    o->version = "HybridEP (deepseek-ai/DeepEP branch hybrid-ep) and DeepGEMM";
    o->source = "deepseek-ai/DeepEP deep_ep/hybrid_ep_buffer.py at 94a9f8f; "
                "deepseek-ai/DeepGEMM csrc/apis/gemm.hpp at 54e2261";
    s = add_step(o, "deep_ep.HybridEPBuffer", "group", "the EP buffer");
    s->assign = "buffer";
    arg_int(s, "hidden_dim", c->hidden);
    arg_int(s, "max_num_of_tokens_per_rank", c->tokens);
    arg_int(s, "num_local_experts", c->experts / c->ep);
    arg_bool(s, "use_fp8", fp8);
    s = add_step(o, "buffer.dispatch", "hidden, scaling_factor, topk_idx, topk_weights",
                 "dispatch");
    arg_int(s, "num_of_experts", c->experts);
  } else {
    /* pplx-kernels */
    int inter = c->ep > xs_profile_node_gpus(x->prof);
    o->label = "pplx-kernels + DeepGEMM";
    o->version = "pplx-kernels (ppl-ai/pplx-kernels) and DeepGEMM";
    o->source = "wufann/pplx-kernels src/pplx_kernels/all_to_all.py at 081394b "
                "(the model follows 12cecfd); deepseek-ai/DeepGEMM "
                "csrc/apis/gemm.hpp at 54e2261";
    s = add_step(o, inter ? "pplx_kernels.AllToAll.internode"
                          : "pplx_kernels.AllToAll.intranode",
                 "rank", "the all-to-all's buffers");
    s->assign = "ata";
    arg_int(s, "max_num_tokens", c->tokens);
    arg_int(s, "num_experts", c->experts);
    arg_int(s, "experts_per_token", c->topk);
    arg_int(s, "world_size", c->ep);
    arg_int(s, "dp_size", 1);
    arg_int(s, "hidden_dim", c->hidden);
    arg_int(s, "hidden_dim_bytes", c->hidden * c->act_bytes);
    arg_int(s, "hidden_dim_scale_bytes", fp8 ? c->hidden / 128 * 4 : 0);
    add_step(o, "ata.dispatch", "out_expert_num_tokens, out_expert_x, "
                                "out_expert_x_scale, dp_x, dp_x_scale, indices, bound_m",
             "dispatch: every (token, expert) with a signal");
    ll = 1;
  }
  grouped_gemm(x, o, ll, "L1 over the received rows");
  grouped_gemm(x, o, ll, "L2, after a SwiGLU and FP8 cast kernel");
  if (!strcmp(lib, "pplx-kernels"))
    add_step(o, "ata.combine", "out_tokens, indices, weights, expert_y, bound_m",
             "combine");
  else if (!strcmp(lib, "deepep-hybrid"))
    add_step(o, "buffer.combine", "hidden, probs, handle", "combine");
  else if (ll)
    add_step(o, "buffer.low_latency_combine", "x, topk_idx, topk_weights, handle",
             "combine: every (token, expert) result home, summed there");
  else
    add_step(o, "buffer.combine", "x, handle, topk_weights",
             "combine: every token's results home, summed");
  if (strcmp(lib, XS__MOE_EP_LIBRARY) || strcmp(mode, XS__MOE_EP_KERNEL))
    o->arm[0] = '\0'; /* validate's sequential arm runs DeepEP V2 normal */
  if (x->forced_tile)
    propose(o, "a tile override: DeepGEMM's grouped GEMM picks its tile by "
               "itself (the config sets block_m %g, block_n %g)",
            c->block_m, c->block_n);
  if (x->arch != 90 && x->arch / 10 != 10)
    propose(o, "a port to sm%u: DeepGEMM's grouped GEMMs run on SM90 and SM100",
            x->arch);
  if (!x->fp8_weights && x->arch == 90)
    propose(o, "%s weights: DeepGEMM's FP4 weights run on SM100 only", c->dtype);
}

/* ---- entry points ---- */

xs_status xs__moe_calls_open(const xs_moe_config *c, const xs_profile *prof,
                            xs__moe_calls **out, xs_error *err) {
  *out = NULL;
  ctx *x = calloc(1, sizeof *x);
  if (!x)
    return xs__fail(err, XS_NOMEM, "out of memory");
  x->c = c;
  x->prof = prof;
  double sms = c->sms > 0 ? c->sms : xs_profile_sms(prof);
  xs_status st;
  if ((st = xs_moe_config_check(c, err)) ||
      (st = xs__gemm_terms_read(prof, c, sms, &x->g, err)) ||
      (st = xs__moe_wl_build(c, sms, &x->wl, err))) {
    free(x);
    return st;
  }
  x->arch = xs_profile_arch(prof);
  if (!x->arch)
    x->arch = x->g.hopper ? 90 : 100;
  x->cap = c->capacity > 0 ? c->capacity : c->tokens;
  x->fp8_dispatch = c->act_bytes == 1;
  x->fp8_weights = !strcmp(c->dtype, "fp8");
  x->forced_tile = c->block_m > 0 || c->block_n > 0;
  *out = x;
  return XS_OK;
}

void xs__moe_calls_close(xs__moe_calls *x) {
  if (!x)
    return;
  xs__moe_wl_free(&x->wl);
  free(x);
}

xs_status xs__moe_calls_of(xs__moe_calls *x, xs_moe_schedule s,
                           const xs_moe_pattern *knobs, xs_moe_call *out,
                           xs_error *err) {
  memset(out, 0, sizeof *out);
  if ((unsigned)s >= XS_MOE_SCHEDULES || !knobs)
    return xs__fail(err, XS_INVALID, "xs_moe_call_of: expected a schedule and "
                                     "its knobs");
  const xs_moe_config *c = x->c;
  xs_status st = XS_OK;
  switch (s) {
  case XS_MOE_SEQUENTIAL:
    call_sequential(x, knobs, out);
    break;
  case XS_MOE_FUSED_SPLIT:
    call_split(x, knobs, out);
    break;
  case XS_MOE_FUSED_WAVE:
  case XS_MOE_FUSED_DYNAMIC:
    call_wave_kind(x, s, knobs, out);
    break;
  default:
    call_lag_kernel(x, s, knobs, out, err, &st);
    break;
  }
  if (!st && s == XS_MOE_INTERLEAVED && out->proposal &&
      (out->picks_mask & XS_MOE_KNOB_LAG)) {
    /* xstage's own order: say so before the kernel's reason */
    static const char pre[] = "xstage's order on this kernel; ";
    size_t n = strlen(out->change), room = sizeof out->change - sizeof pre;
    n = n < room ? n : room;
    memmove(out->change + sizeof pre - 1, out->change, n);
    memcpy(out->change, pre, sizeof pre - 1);
    out->change[sizeof pre - 1 + n] = '\0';
  }
  if (!st && c->block_m > 0 && !strstr(out->knobs, "block_m")) {
    size_t at = strlen(out->knobs);
    snprintf(out->knobs + at, sizeof out->knobs - at, "%sblock_m=%g", at ? ";" : "",
             c->block_m);
  }
  if (!st && c->block_n > 0 && !strstr(out->knobs, "block_n")) {
    size_t at = strlen(out->knobs);
    snprintf(out->knobs + at, sizeof out->knobs - at, "%sblock_n=%g", at ? ";" : "",
             c->block_n);
  }
  return st;
}

xs_status xs_moe_call_of(const xs_moe_config *c, const xs_profile *prof,
                         xs_moe_schedule s, const xs_moe_pattern *knobs,
                         xs_moe_call *out, xs_error *err) {
  memset(out, 0, sizeof *out);
  if ((unsigned)s >= XS_MOE_SCHEDULES || !knobs)
    return xs__fail(err, XS_INVALID, "xs_moe_call_of: expected a schedule and "
                                     "its knobs");
  xs__moe_calls *x;
  xs_status st = xs__moe_calls_open(c, prof, &x, err);
  if (!st)
    st = xs__moe_calls_of(x, s, knobs, out, err);
  xs__moe_calls_close(x);
  return st;
}

xs_status xs_moe_fastest_shipping(const xs_moe_config *c, const xs_profile *prof,
                                  unsigned schedules, xs_moe_option *out,
                                  xs_error *err) {
  memset(out, 0, sizeof *out);
  out->time_s = NAN;
  xs_moe_option *o = malloc(XS_MOE_MAX_OPTIONS * sizeof *o);
  if (!o)
    return xs__fail(err, XS_NOMEM, "out of memory");
  size_t n;
  xs_status st = xs_moe_options(c, prof, schedules, o, &n, NULL, err);
  for (size_t i = 0; !st && i < n; i++) {
    xs_moe_call k;
    if ((st = xs_moe_call_of(c, prof, o[i].schedule, &o[i].knobs, &k, err)))
      break;
    if (!k.proposal && !(o[i].time_s >= out->time_s))
      *out = o[i];
  }
  free(o);
  return st;
}

const char *xs_moe_call_step_text(const xs_moe_call_step *s, char *buf, size_t n) {
  if (!n)
    return buf;
  size_t at = 0;
#define PUT(...)                                                             \
  do {                                                                       \
    int w_ = snprintf(buf + at, n - at, __VA_ARGS__);                        \
    at = w_ < 0 ? at : (size_t)w_ >= n - at ? n - 1 : at + (size_t)w_;      \
  } while (0)
  if (s->assign && s->assign[0])
    PUT("%s = ", s->assign);
  PUT("%s(%s", s->function ? s->function : "", s->tensors ? s->tensors : "");
  int first = !s->tensors || !s->tensors[0];
  for (size_t i = 0; i < s->nargs; i++) {
    const xs_moe_call_arg *a = &s->args[i];
    PUT("%s%s=", first ? "" : ", ", a->name);
    first = 0;
    if (a->kind == XS_MOE_ARG_BOOL) {
      PUT("%s", a->value[0] ? "True" : "False");
    } else if (a->kind == XS_MOE_ARG_TUPLE) {
      PUT("(");
      for (unsigned j = 0; j < a->count && j < 3; j++)
        PUT("%s%lld", j ? ", " : "", a->value[j]);
      PUT(")");
    } else {
      PUT("%lld", a->value[0]);
    }
  }
  PUT(")");
#undef PUT
  return buf;
}
