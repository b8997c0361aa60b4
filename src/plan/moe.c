/*
 * moe.c: the MegaMoE planner. From an MoE config and a profile it derives
 * the tiles of one rank's fused kernel, generates its schedules as programs
 * (docs/plan-megamoe.md) and searches the interleaving of Linear-1 and
 * Linear-2 waves that the Burst-Gap model predicts fastest. For kernel
 * writers choosing wave patterns, and for host code choosing a schedule at
 * run time for the token count it got.
 *
 * Programs have two workers: "dispatch" sends the tokens this rank sends to
 * the others (the same bytes it receives, by symmetry of balanced routing),
 * chunk by chunk, and "sms" is all SMs aggregated: one op per wave. By the
 * fluid model's symmetry, S SMs issuing b bytes each at R_inj/S are one
 * worker issuing S*b at R_inj (tests/test_model.c checks this), so the
 * aggregate loses nothing while the SMs of a wave move together.
 */
#include "formats/jsonutil.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

typedef struct {
  const char *name;
  double hidden, intermediate, experts, topk;
} preset;

/* shapes and their sources: docs/plan-megamoe.md "Presets" */
static const preset presets[] = {
    {"deepseek-v3", 7168, 2048, 256, 8},
    {"deepseek-v4-flash", 4096, 2048, 256, 6},
    {"deepseek-v4-pro", 7168, 3072, 384, 6},
    {"qwen3.5", 4096, 1024, 512, 10},
    {"glm", 4096, 2048, 288, 8},
    {"qwen3-235b", 4096, 1536, 128, 8},
    {"mixtral-8x7b", 4096, 14336, 8, 2},
};
#define NPRESETS (sizeof presets / sizeof presets[0])

size_t xs_moe_preset_count(void) { return NPRESETS; }
const char *xs_moe_preset_name(size_t i) {
  return i < NPRESETS ? presets[i].name : NULL;
}

int xs_moe_preset(const char *name, xs_moe_config *c) {
  for (size_t i = 0; i < NPRESETS; i++) {
    if (strcmp(presets[i].name, name) != 0)
      continue;
    memset(c, 0, sizeof *c);
    snprintf(c->name, sizeof c->name, "%s", name);
    c->tokens = 4096;
    c->hidden = presets[i].hidden;
    c->intermediate = presets[i].intermediate;
    c->experts = presets[i].experts;
    c->topk = presets[i].topk;
    c->ep = 8;
    c->act_bytes = 1;
    c->combine_bytes = 2;
    c->weight_bytes = 1;
    c->shared_experts = 0;
    c->block_m = 0;
    c->block_n = 128;
    c->sms = 0;
    c->imbalance = 1;
    c->stagger = 4;
    snprintf(c->dtype, sizeof c->dtype, "fp8");
    return 0;
  }
  return -1;
}

static int whole(double x) { return isfinite(x) && x == floor(x); }

xs_status xs_moe_config_check(const xs_moe_config *c, xs_error *err) {
  const struct {
    const char *key;
    double v;
    double lo, hi;
    int integer;
  } f[] = {{"tokens", c->tokens, 1, 1e7, 1},
           {"hidden", c->hidden, 1, 1e6, 1},
           {"intermediate", c->intermediate, 1, 1e6, 1},
           {"experts", c->experts, 1, 1e5, 1},
           {"topk", c->topk, 1, 1e4, 1},
           {"ep", c->ep, 1, 1e5, 1},
           {"act_bytes", c->act_bytes, 0.125, 16, 0},
           {"combine_bytes", c->combine_bytes, 0.125, 16, 0},
           {"weight_bytes", c->weight_bytes, 0.125, 16, 0},
           {"shared_experts", c->shared_experts, 0, 64, 1},
           {"block_m", c->block_m, 0, 4096, 1},
           {"block_n", c->block_n, 1, 4096, 1},
           {"sms", c->sms, 0, 1e5, 1},
           {"imbalance", c->imbalance, 1, 1e3, 0},
           {"stagger", c->stagger, 1, 64, 1}};
  for (size_t i = 0; i < sizeof f / sizeof f[0]; i++) {
    if (!(f[i].v >= f[i].lo && f[i].v <= f[i].hi) ||
        (f[i].integer && !whole(f[i].v)))
      return xs__fail(err, XS_INVALID,
                      "%s must be a%s number in [%g, %g], got %g", f[i].key,
                      f[i].integer ? " whole" : "", f[i].lo, f[i].hi, f[i].v);
  }
  if (fmod(c->experts, c->ep) != 0)
    return xs__fail(err, XS_INVALID,
                    "experts (%g) must be a multiple of ep (%g): each rank "
                    "holds experts/ep of them",
                    c->experts, c->ep);
  if (c->topk > c->experts)
    return xs__fail(err, XS_INVALID, "topk (%g) exceeds experts (%g)",
                    c->topk, c->experts);
  if (!c->dtype[0])
    return xs__fail(err, XS_INVALID, "dtype must name a compute dtype");
  return XS_OK;
}

xs_status xs_moe_config_parse(const char *text, size_t length,
                              const char *filename, xs_moe_config *out,
                              xs_error *err) {
  static const char *const keys[] = {
      "name",    "preset",  "tokens",    "hidden",    "intermediate",
      "experts", "topk",    "ep",        "act_bytes", "combine_bytes",
      "block_m", "block_n", "sms",       "imbalance", "dtype",
      "stagger", "weight_bytes", "shared_experts", NULL};
  xs__jdoc d = {filename, text, length, {0}, err};
  json_t *root;
  xs_status st = xs__jparse(&d, &root);
  if (st)
    return st;
  xs_moe_config c;
  if (!json_is_object(root)) {
    st = xs__jfail(&d, "an MoE config is an object, got %s", xs__jtype(root));
    goto done;
  }
  if ((st = xs__jkeys(&d, root, keys)))
    goto done;
  const char *pre = "deepseek-v3", *s;
  int have;
  if ((st = xs__jstring(&d, root, "preset", &s, &have)))
    goto done;
  if (have)
    pre = s;
  if (xs_moe_preset(pre, &c) != 0) {
    xs__jpath_key(&d.path, "preset");
    st = xs__jfail(&d, "unknown preset \"%s\" (see xstage plan megamoe --help)",
                   pre);
    goto done;
  }
  if ((st = xs__jstrcpy(&d, root, "name", c.name, sizeof c.name)) ||
      (st = xs__jstrcpy(&d, root, "dtype", c.dtype, sizeof c.dtype)))
    goto done;
  const xs__jfield nums[] = {{"tokens", &c.tokens},
              {"hidden", &c.hidden},
              {"intermediate", &c.intermediate},
              {"experts", &c.experts},
              {"topk", &c.topk},
              {"ep", &c.ep},
              {"act_bytes", &c.act_bytes},
              {"combine_bytes", &c.combine_bytes},
              {"weight_bytes", &c.weight_bytes},
              {"shared_experts", &c.shared_experts},
              {"block_m", &c.block_m},
              {"block_n", &c.block_n},
              {"sms", &c.sms},
              {"imbalance", &c.imbalance},
              {"stagger", &c.stagger}};
  if ((st = xs__jnumbers(&d, root, nums, sizeof nums / sizeof nums[0])))
    goto done;
  xs_error e2;
  if (xs_moe_config_check(&c, &e2)) {
    st = xs__jfail_checked(&d, root, &e2);
    goto done;
  }
  *out = c;
done:
  json_decref(root);
  return st;
}

/* ---- the workload ---- */

/* A token block. Its tiles' times are the workload's l1_tile_s and
 * l2_tile_s: a tile computes its padded rows, whatever the block holds. */
typedef struct {
  double h1, h2;   /* HBM bytes of one L1 / L2 tile                        */
  double f1, f2;   /* useful flops of one L1 / L2 tile                     */
  double comb_B;   /* combine bytes of one L2 tile leaving the rank        */
  double disp_B;   /* dispatch bytes of the block arriving from others     */
  int local;       /* a shared expert's block: its tokens are local        */
} block;

typedef struct {
  xs_moe_workload w;
  xs_kernel_costs k;
  double stagger, Fsm, B; /* GEMM FLOP/s of one SM, HBM B/s              */
  block *blocks;
  size_t nblocks, nlocal; /* the first nlocal blocks are shared experts'  */
  size_t n1, n2;          /* tiles per block in L1 and L2                 */
  size_t *expert_first;   /* nexperts + 1 block offsets                   */
  size_t nexperts;
  double finish_s;        /* fused, after the last combine store: a barrier,
                             the home rank's sum of the top-k copies, the
                             barrier after the workspace clean           */
  double swiglu_s;        /* sequential: the SwiGLU and quantisation kernel */
} workload;

static void free_workload(workload *wl) {
  free(wl->blocks);
  free(wl->expert_first);
}

/* The expected number of distinct off-rank destination ranks of one token:
 * it picks K distinct experts of E, E/P on each rank; a rank is missed
 * with probability C(E - E/P, K) / C(E, K). */
static double offrank_destinations(double E, double K, double P) {
  double miss = 1, el = E / P;
  for (double i = 0; i < K; i++)
    miss *= fmax(0, E - el - i) / (E - i);
  return (P - 1) * (1 - miss);
}

/* block_m by rows per expert, as DeepGEMM's MegaMoE heuristics choose it
 * (16 up to 8.5 rows, 32, 64, 96, 128, then 192) */
static double auto_block_m(double m) {
  return m <= 8.5 ? 16 : m <= 16.5 ? 32 : m <= 32.5 ? 64 : m <= 64.5 ? 96
       : m <= 96.5 ? 128 : 192;
}

/* The routing's shape: pairs, expected touched experts, the experts
 * given tokens (ne), block_m, and an upper bound on the token blocks. */
typedef struct {
  double pairs, touched, ne, bm, blocks;
} shape;

static void moe_shape(const xs_moe_config *c, shape *sh) {
  double el = c->experts / c->ep;
  double pairs = round(c->tokens * c->topk * c->imbalance);
  /* uniform routing: each of the P*T tokens misses a given expert with
   * probability 1 - K/E */
  double touched = el * (1 - pow(1 - c->topk / c->experts, c->ep * c->tokens));
  touched = fmin(el, fmax(touched, fmin(1, pairs)));
  double ne = fmin(ceil(touched - 1e-9), pairs);
  double bm = c->block_m > 0 ? c->block_m : auto_block_m(pairs / ne);
  double base = floor(pairs / ne);
  sh->pairs = pairs;
  sh->touched = touched;
  sh->ne = ne;
  sh->bm = bm;
  sh->blocks = c->shared_experts * ceil(c->tokens / bm) + ne * ceil((base + 1) / bm) + 1;
}

double xs_moe_tiles(const xs_moe_config *c) {
  xs_error e;
  if (xs_moe_config_check(c, &e))
    return 0;
  shape sh;
  moe_shape(c, &sh);
  return sh.blocks * (ceil(2 * c->intermediate / c->block_n) + ceil(c->hidden / c->block_n));
}

static xs_status build_workload(const xs_moe_config *c, const xs_profile *prof,
                                workload *wl, xs_error *err) {
  xs_status st = xs_moe_config_check(c, err);
  if (st)
    return st;
  memset(wl, 0, sizeof *wl);
  double sms = c->sms > 0 ? c->sms : xs_profile_sms(prof);
  double F = xs_profile_gemm_flops_per_s(prof, c->dtype);
  if (!(sms > 0) || !(F > 0))
    return xs__fail(err, XS_INVALID,
                    "profile \"%s\" has no compute section with SMs and FLOP/s "
                    "for dtype \"%s\" (see xstage profiles show)",
                    xs_profile_name(prof), c->dtype);
  xs_profile_kernel_costs(prof, &wl->k);
  double hbm = xs_profile_hbm_Bps(prof) *
               (wl->k.hbm_efficiency > 0 ? wl->k.hbm_efficiency : 1);
  wl->B = hbm > 0 ? hbm : INFINITY; /* no HBM figure: compute only */
  wl->stagger = c->stagger;
  wl->Fsm = F / sms;
  shape sh;
  moe_shape(c, &sh);
  double pairs = sh.pairs, touched = sh.touched, ne = sh.ne, bm = sh.bm;
  double m = pairs / ne;
  double bn = c->block_n;
  double off = (c->ep - 1) / c->ep;
  double wshare = touched / ne; /* weights of the expected touched experts */
  double ns = c->shared_experts;
  wl->n1 = (size_t)ceil(2 * c->intermediate / bn);
  wl->n2 = (size_t)ceil(c->hidden / bn);
  double n1 = (double)wl->n1, n2 = (double)wl->n2;
  double base = floor(pairs / ne), extra = pairs - base * ne;
  double cap = sh.blocks;
  if (cap * (n1 + n2) > XS_MOE_MAX_TILES)
    return xs__fail(err, XS_INVALID,
                    "%.3g GEMM tiles (%.3g token blocks of %g rows): more than the "
                    "planner's limit of %g, about 4 s of planning (fewer tokens or "
                    "a larger block_m)", cap * (n1 + n2), cap, bm, XS_MOE_MAX_TILES);
  wl->blocks = malloc((size_t)cap * sizeof *wl->blocks);
  wl->expert_first = malloc(((size_t)(ns + ne) + 1) * sizeof *wl->expert_first);
  if (!wl->blocks || !wl->expert_first) {
    free_workload(wl);
    return xs__fail(err, XS_NOMEM, "out of memory");
  }
  double over = wl->k.tile_overhead_s * bm / 128;
  double flops = 0, weights = 0;
  for (double e = 0; e < ns + ne; e++) {
    int local = e < ns;
    double rows_e = local ? c->tokens : base + (e - ns < extra ? 1 : 0);
    double ws = local ? 1 : wshare;
    wl->expert_first[wl->nexperts++] = wl->nblocks;
    weights += 3 * c->intermediate * c->hidden * c->weight_bytes * ws;
    for (double r0 = 0; r0 < rows_e; r0 += bm) {
      double r = fmin(bm, rows_e - r0);
      block *b = &wl->blocks[wl->nblocks++];
      int first = r0 == 0;
      b->local = local;
      b->f1 = 2 * r * 2 * c->intermediate * c->hidden / n1;
      b->f2 = 2 * r * c->intermediate * c->hidden / n2;
      flops += b->f1 * n1 + b->f2 * n2;
      /* the weight slice comes from HBM for the expert's first block (its
       * other blocks find it in L2); activations are read once per block;
       * L1 writes the SwiGLU output in FP8 */
      b->h1 = (first ? bn * c->hidden * c->weight_bytes * ws : 0) +
              r * c->hidden * c->act_bytes / n1 + r * bn / 2;
      b->h2 = (first ? bn * c->intermediate * c->weight_bytes * ws : 0) +
              r * c->intermediate / n2 +
              (local ? r * bn * c->combine_bytes : 0);
      b->comb_B = local ? 0 : r * bn * c->combine_bytes * off;
      b->disp_B = local ? 0 : r * c->hidden * c->act_bytes * off;
      if (local)
        wl->nlocal++;
    }
  }
  wl->expert_first[wl->nexperts] = wl->nblocks;
  /* fused combine: the home rank reads its tokens' K copies and writes the
   * sum (DeepGEMM's MegaMoE reduces after a barrier) */
  wl->finish_s = 2 * wl->k.barrier_s +
                 c->tokens * c->hidden * c->combine_bytes * (c->topk + 1) / wl->B;
  /* sequential: SwiGLU reads L1's BF16 output and writes FP8 */
  wl->swiglu_s = (pairs + ns * c->tokens) * c->intermediate * (2 * 2 + 1) / wl->B;
  xs_moe_workload *w = &wl->w;
  w->pairs = pairs;
  w->tokens_per_expert = m;
  w->experts_touched = touched;
  w->block_m = bm;
  w->block_n = bn;
  w->sms = sms;
  w->blocks = (double)wl->nblocks;
  w->l1_tiles = w->blocks * n1;
  w->l2_tiles = w->blocks * n2;
  w->waves = ceil((w->l1_tiles + w->l2_tiles) / sms);
  w->l1_tile_s = 2 * bm * bn * c->hidden / wl->Fsm + over;
  w->l2_tile_s = 2 * bm * bn * c->intermediate / wl->Fsm + over;
  w->flops = flops;
  w->weights_B = weights;
  w->gemm_flops_per_s = F;
  w->hbm_Bps = wl->B;
  w->dispatch_B = pairs * c->hidden * c->act_bytes * off;
  w->combine_B = pairs * c->hidden * c->combine_bytes * off;
  w->offrank = off;
  double dest = offrank_destinations(c->experts, c->topk, c->ep) * c->imbalance;
  w->a2a_dispatch_B = c->tokens * dest * c->hidden * c->act_bytes;
  w->a2a_combine_B = c->tokens * dest * c->hidden * c->combine_bytes;
  return XS_OK;
}

/* ---- schedules as programs ---- */

#define MAX_DISPATCH_CHUNKS 64
#define NO_BLOCK ((size_t)-1)

/* Emits waves and fixed costs into the program and keeps the audit and
 * the breakdown's build-time parts (HBM-bound, compute-bound, fixed). */
typedef struct {
  xs_program *p;
  const workload *wl;
  size_t sms, dw;
  int sends_combine;
  size_t *chunk_send, per_chunk;
  long waited;
  size_t last_send;
  int have_send;
  xs__moe_audit *audit;
  xs_moe_breakdown *bd;
  /* the open wave */
  size_t S, slots;
  double sum_c, sum_h, longest, bytes;
  size_t hi_block;
  /* L1 tiles per block: in closed waves, and in all waves */
  size_t *closed, *open, *dirty;
  size_t ndirty;
  unsigned char *mark;
} emitter;

static double pnorm(double a, double b, double p) {
  if (!(p > 0) || a == 0 || b == 0)
    return fmax(a, b);
  double m = fmax(a, b);
  return m * pow(pow(a / m, p) + pow(b / m, p), 1 / p);
}

static xs_status emit_fixed(emitter *e, double s, xs_error *err) {
  if (!(s > 0))
    return XS_OK;
  e->bd->fixed_s += s;
  return xs_program_compute(e->p, e->sms, s, err);
}

/* close the open wave: wait for the dispatch chunk of its last routed
 * block, then its time in `stagger` steps, each followed by its share of
 * the combine stores */
static xs_status close_wave(emitter *e, xs_error *err) {
  if (e->slots == e->S)
    return XS_OK;
  const workload *wl = e->wl;
  xs_status st;
  if (e->hi_block != NO_BLOCK && e->chunk_send) {
    long k = (long)((e->hi_block - wl->nlocal) / e->per_chunk);
    if (k > e->waited) {
      e->waited = k;
      if ((st = xs_program_wait_send(e->p, e->sms, e->chunk_send[k], err)))
        return st;
    }
  }
  double c = e->sum_c / (double)e->S, m = e->sum_h / wl->B;
  double t = pnorm(c, m, wl->k.roofline_p);
  if (e->slots > 0 && e->longest > t) /* a partial wave: its longest tile */
    t = e->longest;
  if (m > c)
    e->bd->hbm_s += t;
  else
    e->bd->compute_s += t;
  double bytes = e->sends_combine ? e->bytes : 0;
  int steps = bytes > 0 ? (int)wl->stagger : 1;
  for (int k = 0; k < steps; k++) {
    if ((st = xs_program_compute(e->p, e->sms, t / steps, err)))
      return st;
    if (bytes > 0) {
      if ((st = xs_program_send(e->p, e->sms, bytes / steps, NULL, NULL,
                                &e->last_send, err)))
        return st;
      e->have_send = 1;
    }
  }
  if (e->audit)
    e->audit->waves++;
  for (size_t i = 0; i < e->ndirty; i++) {
    e->closed[e->dirty[i]] = e->open[e->dirty[i]];
    e->mark[e->dirty[i]] = 0;
  }
  e->ndirty = 0;
  e->slots = e->S;
  e->sum_c = e->sum_h = e->longest = e->bytes = 0;
  e->hi_block = NO_BLOCK;
  return XS_OK;
}

/* n tiles (n <= slots) of block b, layer 1 or 2, into the open wave */
static void add_tiles(emitter *e, int layer, size_t b, size_t n) {
  const block *bl = &e->wl->blocks[b];
  double dn = (double)n;
  if (layer == 1) {
    e->sum_c += dn * e->wl->w.l1_tile_s;
    e->sum_h += dn * bl->h1;
    e->longest = fmax(e->longest, e->wl->w.l1_tile_s);
    e->open[b] += n;
    if (!e->mark[b]) {
      e->mark[b] = 1;
      e->dirty[e->ndirty++] = b;
    }
    if (!bl->local && (e->hi_block == NO_BLOCK || b > e->hi_block))
      e->hi_block = b;
    if (e->audit)
      e->audit->flops += dn * bl->f1;
  } else {
    e->sum_c += dn * e->wl->w.l2_tile_s;
    e->sum_h += dn * bl->h2;
    e->longest = fmax(e->longest, e->wl->w.l2_tile_s);
    e->bytes += dn * bl->comb_B;
    if (e->audit) {
      e->audit->flops += dn * bl->f2;
      if (e->closed[b] != e->wl->n1)
        e->audit->violations += n;
    }
  }
  e->slots -= n;
}

/* In-order packing: n tiles of one block and layer, taken in the order
 * given; an L2 tile whose block's L1 tiles are not all in closed waves
 * ends the wave (its SM would wait). */
static xs_status put_run(emitter *e, int layer, size_t b, size_t n,
                         xs_error *err) {
  xs_status st;
  if (layer == 2 && e->closed[b] != e->wl->n1 && (st = close_wave(e, err)))
    return st;
  while (n) {
    size_t k = n < e->slots ? n : e->slots;
    add_tiles(e, layer, b, k);
    n -= k;
    if (!e->slots && (st = close_wave(e, err)))
      return st;
  }
  return XS_OK;
}

/* Ready-queue packing (baseline, searched, fused-interleaved): each wave
 * takes ready L2 tiles (their block's L1 all in closed waves) and L1
 * tiles, in block order, by the pattern's preference. */
static xs_status pack_ready(emitter *e, const xs_moe_pattern *pat,
                            int dynamic, xs_error *err) {
  const workload *wl = e->wl;
  size_t nb = wl->nblocks, n1 = wl->n1, n2 = wl->n2, S = e->S;
  size_t i1 = 0, i2 = 0, t1 = nb * n1, t2 = nb * n2;
  unsigned phase = 0;
  int interleave = pat && pat->l1_waves > 0 && !pat->l2_sms && !dynamic;
  size_t split = pat ? pat->l2_sms : 0;
  if (dynamic && !split)
    split = S / 2 ? S / 2 : 1;
  xs_status st;
  while (i1 < t1 || i2 < t2) {
    size_t ready2 = (i1 / n1) * n2; /* an upper bound; checked per tile */
    int warm = dynamic && phase < pat->warmup;
    int prefer2;
    if (warm)
      prefer2 = i1 >= t1;
    else if (split)
      prefer2 = 1;
    else if (!interleave)
      prefer2 = i1 >= t1;
    else {
      unsigned cycle = pat->l1_waves + (pat->l2_waves ? pat->l2_waves : 1);
      prefer2 = phase % cycle >= pat->l1_waves;
    }
    for (int pass = 0; pass < 3 && e->slots; pass++) {
      int take2 = pass == 1 ? !prefer2 : prefer2;
      size_t cap2 = split && !warm && pass == 0 ? split : SIZE_MAX;
      if (pass == 2 && !(split && !warm))
        break;
      if (warm && take2 && i1 < t1)
        continue;
      if (take2) {
        while (e->slots && i2 < ready2 && i2 < t2 && cap2 &&
               e->closed[i2 / n2] == n1) {
          size_t run = n2 - i2 % n2;
          run = run < e->slots ? run : e->slots;
          run = run < cap2 ? run : cap2;
          add_tiles(e, 2, i2 / n2, run);
          i2 += run;
          cap2 -= cap2 == SIZE_MAX ? 0 : run;
        }
      } else {
        while (e->slots && i1 < t1) {
          size_t run = n1 - i1 % n1;
          run = run < e->slots ? run : e->slots;
          add_tiles(e, 1, i1 / n1, run);
          i1 += run;
        }
      }
    }
    if (e->slots == S) /* nothing ready: cannot happen, L1 always progresses */
      break;
    if ((st = close_wave(e, err)))
      return st;
    phase++;
  }
  return XS_OK;
}

/* fused-lag: units of up to 8 consecutive blocks of one expert (DeepGEMM's
 * SM90 lag scheduler); L1 of units 0..lag, then L2 of `group` units and L1
 * of the next `group`, alternating; the remaining L2 units last */
#define LAG_UNIT_BLOCKS 8
static xs_status pack_lag(emitter *e, unsigned lag, unsigned group,
                          xs_error *err) {
  const workload *wl = e->wl;
  size_t nu = 0;
  for (size_t x = 0; x < wl->nexperts; x++) {
    size_t nbx = wl->expert_first[x + 1] - wl->expert_first[x];
    nu += (nbx + LAG_UNIT_BLOCKS - 1) / LAG_UNIT_BLOCKS;
  }
  size_t *ustart = malloc((nu + 1) * sizeof *ustart);
  if (!ustart)
    return xs__fail(err, XS_NOMEM, "out of memory");
  size_t u = 0;
  for (size_t x = 0; x < wl->nexperts; x++)
    for (size_t b = wl->expert_first[x]; b < wl->expert_first[x + 1];
         b += LAG_UNIT_BLOCKS)
      ustart[u++] = b;
  ustart[nu] = wl->nblocks;
  size_t l1u = 0, l2u = 0;
  xs_status st = XS_OK;
  group = group ? group : 1;
#define UNIT(layer, k)                                                        \
  for (size_t b = ustart[k]; !st && b < ustart[(k) + 1]; b++)                 \
    st = put_run(e, layer, b, layer == 1 ? wl->n1 : wl->n2, err);
  for (; l1u < nu && l1u <= lag && !st; l1u++)
    UNIT(1, l1u)
  while (!st && l2u < nu) {
    for (unsigned g = 0; g < group && l2u < l1u && !st; g++, l2u++)
      UNIT(2, l2u)
    for (unsigned g = 0; g < group && l1u < nu && !st; g++, l1u++)
      UNIT(1, l1u)
  }
#undef UNIT
  free(ustart);
  return st;
}

static const char *const sched_names[XS_MOE_SCHEDULES] = {
    "sequential", "baseline", "searched", "fused-split",
    "fused-wave", "fused-interleaved", "fused-lag"};

const char *xs_moe_schedule_name(xs_moe_schedule s) {
  return (unsigned)s < XS_MOE_SCHEDULES ? sched_names[s] : NULL;
}

int xs_moe_schedule_from_name(const char *name) {
  int i = xs__name_index(sched_names, XS_MOE_SCHEDULES, name);
  if (i >= 0)
    return i;
  if (strcmp(name, "interleaved") == 0)
    return XS_MOE_INTERLEAVED;
  return -1;
}

/* Builds one schedule's program. Fused schedules have three workers:
 * "dispatch" (the tokens this rank receives, pulled chunk by chunk after
 * the launch and a barrier; by symmetry the bytes others pull from it on
 * the same link), "sms" (all SMs, one op per wave step) and "finish" (the
 * barrier, the combine reduction and the last barrier, once the last
 * combine store is delivered). The sequential schedule is one worker. */
static xs_status build_program(const workload *wl, xs_moe_schedule sched,
                               const xs_moe_pattern *pat, const char *name,
                               int ids, xs__moe_audit *audit,
                               xs_moe_breakdown *bd, xs_program **out,
                               xs_error *err) {
  xs_moe_breakdown scratch;
  if (!bd)
    bd = &scratch;
  memset(bd, 0, sizeof *bd);
  xs_program *p = xs_program_new(name);
  if (!p)
    return xs__fail(err, XS_NOMEM, "out of memory");
  xs_moe_pattern none = {0};
  if (!pat)
    pat = &none;
  const xs_kernel_costs *k = &wl->k;
  size_t nb = wl->nblocks;
  emitter e = {0};
  e.p = p;
  e.wl = wl;
  e.audit = audit;
  e.bd = bd;
  e.S = e.slots = (size_t)wl->w.sms;
  e.hi_block = NO_BLOCK;
  e.waited = -1;
  e.closed = calloc(nb + 1, sizeof *e.closed);
  e.open = calloc(nb + 1, sizeof *e.open);
  e.dirty = malloc((nb + 1) * sizeof *e.dirty);
  e.mark = calloc(nb + 1, 1);
  xs_status st = XS_OK;
  if (!e.closed || !e.open || !e.dirty || !e.mark) {
    st = xs__fail(err, XS_NOMEM, "out of memory");
    goto fail;
  }
  if (sched == XS_MOE_SEQUENTIAL) {
    /* an all-to-all library's dispatch, the grouped GEMMs, SwiGLU, its
     * combine: five kernels, one after the other */
    if ((st = xs_program_add_worker(p, "sms", &e.sms, err)) ||
        (st = emit_fixed(&e, k->launch_s + k->a2a_fixed_s, err)) ||
        (st = xs_program_send(p, e.sms, wl->w.a2a_dispatch_B, NULL,
                              ids ? "dispatch" : NULL, NULL, err)) ||
        (st = xs_program_fence(p, e.sms, err)) ||
        (st = emit_fixed(&e, k->launch_s, err)))
      goto fail;
    for (size_t b = 0; b < nb && !st; b++)
      st = put_run(&e, 1, b, wl->n1, err);
    if (st || (st = close_wave(&e, err)) ||
        (st = emit_fixed(&e, k->launch_s, err)) ||
        (st = xs_program_compute(p, e.sms, wl->swiglu_s, err)) ||
        (st = emit_fixed(&e, k->launch_s, err)))
      goto fail;
    bd->hbm_s += wl->swiglu_s;
    for (size_t b = 0; b < nb && !st; b++)
      st = put_run(&e, 2, b, wl->n2, err);
    if (st || (st = close_wave(&e, err)) ||
        (st = emit_fixed(&e, k->launch_s + k->a2a_fixed_s, err)) ||
        (st = xs_program_send(p, e.sms, wl->w.a2a_combine_B, NULL,
                              ids ? "combine" : NULL, NULL, err)) ||
        (st = xs_program_fence(p, e.sms, err)))
      goto fail;
    goto finish;
  }
  size_t fw;
  e.sends_combine = 1;
  if ((st = xs_program_add_worker(p, "dispatch", &e.dw, err)) ||
      (st = xs_program_add_worker(p, "sms", &e.sms, err)) ||
      (st = xs_program_add_worker(p, "finish", &fw, err)))
    goto fail;
  /* dispatch: after the launch and the barrier that publishes the counts,
   * in chunks of consecutive routed blocks, in block order */
  size_t nr = nb - wl->nlocal;
  if (nr) {
    e.per_chunk = (nr + MAX_DISPATCH_CHUNKS - 1) / MAX_DISPATCH_CHUNKS;
    size_t nchunks = (nr + e.per_chunk - 1) / e.per_chunk;
    e.chunk_send = malloc(nchunks * sizeof *e.chunk_send);
    if (!e.chunk_send) {
      st = xs__fail(err, XS_NOMEM, "out of memory");
      goto fail;
    }
    if (k->launch_s + k->barrier_s > 0 &&
        (st = xs_program_compute(p, e.dw, k->launch_s + k->barrier_s, err)))
      goto fail;
    for (size_t c = 0; c < nchunks; c++) {
      double bytes = 0;
      for (size_t b = c * e.per_chunk; b < nr && b < (c + 1) * e.per_chunk; b++)
        bytes += wl->blocks[wl->nlocal + b].disp_B;
      char id[32];
      if (ids)
        snprintf(id, sizeof id, "dispatch%zu", c);
      if ((st = xs_program_send(p, e.dw, bytes, NULL, ids ? id : NULL,
                                &e.chunk_send[c], err)))
        goto fail;
    }
  }
  if ((st = emit_fixed(&e, k->launch_s + k->barrier_s, err)))
    goto fail;
  switch (sched) {
  case XS_MOE_BASELINE:
    st = pack_ready(&e, &none, 0, err);
    break;
  case XS_MOE_INTERLEAVED:
    st = pack_ready(&e, pat, 0, err);
    break;
  case XS_MOE_FUSED_DYNAMIC:
    st = pack_ready(&e, pat, 1, err);
    break;
  case XS_MOE_FUSED_SPLIT:
  case XS_MOE_FUSED_WAVE: {
    size_t epw = pat->experts_per_wave ? pat->experts_per_wave : wl->nexperts;
    if (sched == XS_MOE_FUSED_SPLIT) /* all L1 (block order), a launch, L2 */
      epw = wl->nexperts;
    for (size_t x0 = 0; x0 < wl->nexperts && !st; x0 += epw) {
      size_t x1 = x0 + epw < wl->nexperts ? x0 + epw : wl->nexperts;
      size_t b0 = wl->expert_first[x0], b1 = wl->expert_first[x1];
      for (size_t b = b0; b < b1 && !st; b++)
        st = put_run(&e, 1, b, wl->n1, err);
      if (!st && sched == XS_MOE_FUSED_SPLIT &&
          !(st = close_wave(&e, err)))
        st = emit_fixed(&e, k->launch_s, err);
      for (size_t b = b0; b < b1 && !st; b++)
        st = put_run(&e, 2, b, wl->n2, err);
    }
    if (!st)
      st = close_wave(&e, err);
    break;
  }
  case XS_MOE_FUSED_LAG:
    if (!(st = pack_lag(&e, pat->lag, pat->group, err)))
      st = close_wave(&e, err);
    break;
  default:
    st = xs__fail(err, XS_INVALID, "unknown schedule %d", (int)sched);
  }
  if (st)
    goto fail;
  /* the end: once the last combine store is delivered, a barrier, the
   * reduction of the top-k copies, the barrier after the workspace clean */
  if (e.have_send && (st = xs_program_wait_send(p, fw, e.last_send, err)))
    goto fail;
  bd->fixed_s += wl->finish_s;
  if ((st = xs_program_compute(p, fw, wl->finish_s, err)))
    goto fail;
finish:
  if ((st = xs_program_finish(p, err)))
    goto fail;
  *out = p;
  goto done;
fail:
  xs_program_free(p);
done:
  free(e.chunk_send);
  free(e.closed);
  free(e.open);
  free(e.dirty);
  free(e.mark);
  return st;
}

/* ---- the knob search ---- */

#define BALANCED 1000u /* l2_sms: L1 and L2 tiles run out together */

/* the searched schedule's candidates; {0} is the baseline; split waves
 * give L2 a share of the SMs (eighths, and the share that makes L1 and L2
 * tiles run out together) */
static const xs_moe_pattern searched_patterns[] = {
    {0, 0, 0, 0, 0, 0, 0}, {1, 1, 0, 0, 0, 0, 0}, {2, 1, 0, 0, 0, 0, 0},
    {4, 1, 0, 0, 0, 0, 0}, {8, 1, 0, 0, 0, 0, 0}, {1, 2, 0, 0, 0, 0, 0},
    {2, 2, 0, 0, 0, 0, 0}, {0, 0, 1, 0, 0, 0, 0}, {0, 0, 2, 0, 0, 0, 0},
    {0, 0, 4, 0, 0, 0, 0}, {0, 0, 6, 0, 0, 0, 0}, {0, 0, BALANCED, 0, 0, 0, 0}};
#define NSEARCHED (sizeof searched_patterns / sizeof searched_patterns[0])

/* The k-th candidate of a schedule's knob search (its rule k, named by
 * xs_moe_rule_name): 1, or -1 when the rule does not apply to this
 * workload, or 0 when k is past the last. Rule 0 is the schedule's
 * default: DeepGEMM's own choice where the model has it. A rule keeps its
 * index at every token count, so a knob table can tell a kept choice from
 * a changed one. */
static int candidate(const workload *wl, xs_moe_schedule s, size_t k,
                     xs_moe_pattern *out) {
  memset(out, 0, sizeof *out);
  size_t ne = wl->nexperts;
  switch (s) {
  case XS_MOE_SEQUENTIAL:
  case XS_MOE_BASELINE:
  case XS_MOE_FUSED_SPLIT:
    return k == 0;
  case XS_MOE_INTERLEAVED: {
    if (k >= NSEARCHED)
      return 0;
    *out = searched_patterns[k];
    if (out->l2_sms == BALANCED) {
      double share = wl->w.l2_tiles / (wl->w.l1_tiles + wl->w.l2_tiles);
      out->l2_sms = (unsigned)fmax(1, round(wl->w.sms * share));
    } else if (out->l2_sms) {
      out->l2_sms = (unsigned)fmax(1, round(wl->w.sms * out->l2_sms / 8.0));
    }
    return 1;
  }
  case XS_MOE_FUSED_WAVE: {
    /* DeepGEMM: the fewest experts whose L1 tiles fill two waves; then
     * half, twice and four times that, all experts, one expert */
    double l1_per_expert = wl->w.l1_tiles / (double)ne;
    size_t dflt = (size_t)fmin((double)ne,
                               fmax(1, ceil(2 * wl->w.sms / l1_per_expert)));
    size_t opts[6] = {dflt, dflt / 2, dflt * 2, dflt * 4, ne, 1};
    if (k >= 6)
      return 0;
    if (!opts[k] || opts[k] > ne)
      return -1;
    out->experts_per_wave = (unsigned)opts[k];
    return 1;
  }
  case XS_MOE_FUSED_DYNAMIC: {
    static const unsigned warm[] = {0, 1, 2, 4};
    if (k >= 4)
      return 0;
    if (k == 0) {
      /* DeepGEMM's warm-up: enough L1 waves that the first L2 tasks find
       * their blocks done, at least one wave */
      double w1 = ceil(wl->w.l1_tiles / wl->w.blocks / wl->w.sms *
                       ceil(wl->w.sms / (double)wl->n2));
      out->warmup = (unsigned)fmax(1, fmin(w1, 64));
    } else {
      out->warmup = warm[k];
    }
    return 1;
  }
  case XS_MOE_FUSED_LAG: {
    /* DeepGEMM's SM90 default: lag = clamp(round(0.45 units), 8, 64),
     * group 4; then shorter and longer lags */
    size_t units = 0;
    for (size_t x = 0; x < ne; x++)
      units += (wl->expert_first[x + 1] - wl->expert_first[x] +
                LAG_UNIT_BLOCKS - 1) / LAG_UNIT_BLOCKS;
    double d = fmin(64, fmax(8, round(0.45 * (double)units)));
    static const double f[] = {1, 0.25, 0.5, 2};
    if (k >= 4)
      return 0;
    out->lag = (unsigned)fmax(1, round(d * f[k]));
    out->group = 4;
    return 1;
  }
  default:
    return 0;
  }
}

/* the breakdown's evaluated parts, from the burstgap result */
static void finish_breakdown(const workload *wl, xs_moe_schedule s,
                             const xs_result *r, xs_moe_breakdown *bd) {
  double ops = bd->hbm_s + bd->compute_s + bd->fixed_s;
  if (s == XS_MOE_SEQUENTIAL) {
    const xs_send_result *d = &r->sends[0];
    bd->dispatch_s = d->deliver_s - d->issue_start_s;
    bd->stall_s = r->workers[0].stall_s - r->workers[0].blocked_s;
  } else {
    const xs_worker_result *w = &r->workers[1]; /* "sms" */
    bd->dispatch_s = w->blocked_s;
    bd->stall_s = w->stall_s - w->blocked_s;
    /* the last delivery after the last wave: the finish worker ends the
     * barriers and the reduction after it */
    bd->xstage_tail_s = fmax(0, r->workers[2].finish_s - wl->finish_s - w->finish_s);
  }
  bd->link_s = fmax(0, r->makespan_s - ops - bd->dispatch_s);
  const char *names[4] = {"hbm", "compute", "fixed", "link"};
  double v[4] = {bd->hbm_s, bd->compute_s, bd->fixed_s,
                 bd->link_s + bd->dispatch_s};
  int best = 0;
  for (int i = 1; i < 4; i++)
    if (v[i] > v[best])
      best = i;
  bd->bound = names[best];
}

/* Search one schedule's knobs under burstgap: the best program (kept when
 * keep is not NULL), its makespan, knobs and breakdown. */
static xs_status search(const workload *wl, const char *name,
                        xs_moe_schedule s, const xs_profile *prof,
                        double *time_s, xs_moe_pattern *knobs,
                        xs_moe_breakdown *bd, xs_program **keep,
                        xs_result **spare, unsigned *count, xs_error *err) {
  xs_program *best = NULL, *p = NULL;
  double best_t = INFINITY;
  xs_moe_pattern cand;
  xs_moe_breakdown b;
  /* the sequential breakdown reads the dispatch send's times */
  xs_eval_options o = {0, s != XS_MOE_SEQUENTIAL, NULL, NULL};
  xs_status st = XS_OK;
  int have;
  for (size_t k = 0; (have = candidate(wl, s, k, &cand)) != 0; k++) {
    if (have < 0)
      continue;
    if ((st = build_program(wl, s, &cand, name, 0, NULL, &b, &p, err)))
      break;
    o.reuse = *spare;
    *spare = NULL;
    if ((st = xs_evaluate(p, prof, XS_MODEL_BURSTGAP, &o, spare, err)))
      break;
    if (count)
      (*count)++;
    if ((*spare)->makespan_s < best_t) {
      best_t = (*spare)->makespan_s;
      finish_breakdown(wl, s, *spare, &b);
      if (bd)
        *bd = b;
      if (knobs)
        *knobs = cand;
      xs_program_free(best);
      best = p;
    } else {
      xs_program_free(p);
    }
    p = NULL;
  }
  xs_program_free(p);
  if (!st) {
    *time_s = best_t;
    if (keep) {
      *keep = best;
      best = NULL;
    }
  }
  xs_program_free(best);
  return st;
}

/* the rules' names, by schedule: rule k of candidate() */
static const char *const searched_rule_names[NSEARCHED] = {
    "all-l1-first", "1:1",       "2:1",       "4:1",
    "8:1",          "1:2",       "2:2",       "split-1/8",
    "split-2/8",    "split-4/8", "split-6/8", "split-balanced"};
static const char *const wave_rule_names[] = {"default", "half", "double",
                                              "quadruple", "all", "one"};
static const char *const dynamic_rule_names[] = {"default", "warmup-1",
                                                 "warmup-2", "warmup-4"};
static const char *const lag_rule_names[] = {"default", "lag/4", "lag/2",
                                             "lag*2"};

const char *xs_moe_rule_name(xs_moe_schedule s, unsigned rule) {
  switch (s) {
  case XS_MOE_SEQUENTIAL:
  case XS_MOE_BASELINE:
  case XS_MOE_FUSED_SPLIT:
    return rule == 0 ? "default" : NULL;
  case XS_MOE_INTERLEAVED:
    return rule < NSEARCHED ? searched_rule_names[rule] : NULL;
  case XS_MOE_FUSED_WAVE:
    return rule < 6 ? wave_rule_names[rule] : NULL;
  case XS_MOE_FUSED_DYNAMIC:
    return rule < 4 ? dynamic_rule_names[rule] : NULL;
  case XS_MOE_FUSED_LAG:
    return rule < 4 ? lag_rule_names[rule] : NULL;
  default:
    return NULL;
  }
}

static unsigned knobs_away(const xs_moe_pattern *a, const xs_moe_pattern *b) {
  return (a->l1_waves != b->l1_waves) + (a->l2_waves != b->l2_waves) +
         (a->l2_sms != b->l2_sms) + (a->experts_per_wave != b->experts_per_wave) +
         (a->warmup != b->warmup) + (a->lag != b->lag) + (a->group != b->group);
}

static int same_knobs(const xs_moe_pattern *a, const xs_moe_pattern *b) {
  return knobs_away(a, b) == 0;
}

xs_status xs_moe_options(const xs_moe_config *c, const xs_profile *prof,
                         unsigned schedules, xs_moe_option *out, size_t *n,
                         xs_moe_workload *work, xs_error *err) {
  *n = 0;
  workload wl;
  xs_status st = build_workload(c, prof, &wl, err);
  if (st)
    return st;
  if (work)
    *work = wl.w;
  xs_result *r = NULL;
  xs_program *p = NULL;
  xs_eval_options o = {0, 1, NULL, NULL};
  for (int s = 0; s < XS_MOE_SCHEDULES && !st; s++) {
    if (schedules && !(schedules & (1u << s)))
      continue;
    xs_moe_pattern dflt, cand;
    candidate(&wl, (xs_moe_schedule)s, 0, &dflt);
    size_t first = *n;
    int have;
    for (size_t k = 0; (have = candidate(&wl, (xs_moe_schedule)s, k, &cand)) != 0;
         k++) {
      if (have < 0)
        continue;
      xs_moe_option *opt = &out[*n];
      opt->schedule = (xs_moe_schedule)s;
      opt->rule = (unsigned)k;
      opt->away = knobs_away(&cand, &dflt);
      opt->knobs = cand;
      opt->time_s = NAN;
      for (size_t j = first; j < *n; j++)
        if (same_knobs(&out[j].knobs, &cand))
          opt->time_s = out[j].time_s; /* a rule that repeats another's */
      if (isnan(opt->time_s)) {
        if ((st = build_program(&wl, (xs_moe_schedule)s, &cand, c->name, 0,
                                NULL, NULL, &p, err)))
          break;
        o.reuse = r;
        r = NULL;
        if ((st = xs_evaluate(p, prof, XS_MODEL_BURSTGAP, &o, &r, err)))
          break;
        xs_program_free(p);
        p = NULL;
        opt->time_s = r->makespan_s;
      }
      (*n)++;
    }
  }
  xs_program_free(p);
  xs_result_free(r);
  free_workload(&wl);
  if (st)
    *n = 0;
  return st;
}

xs_status xs__moe_time(const xs_moe_config *c, const xs_profile *prof,
                       xs_moe_schedule s, const xs_moe_pattern *knobs,
                       double *time_s, xs_error *err) {
  workload wl;
  xs_status st = build_workload(c, prof, &wl, err);
  if (st)
    return st;
  xs_program *p = NULL;
  xs_result *r = NULL;
  xs_eval_options o = {0, 1, NULL, NULL};
  if (!(st = build_program(&wl, s, knobs, c->name, 0, NULL, NULL, &p, err)) &&
      !(st = xs_evaluate(p, prof, XS_MODEL_BURSTGAP, &o, &r, err)))
    *time_s = r->makespan_s;
  xs_result_free(r);
  xs_program_free(p);
  free_workload(&wl);
  return st;
}

xs_status xs_moe_predict(const xs_moe_config *c, const xs_profile *prof,
                         xs_moe_schedule s, double *time_s,
                         xs_moe_pattern *knobs, xs_moe_breakdown *bd,
                         xs_error *err) {
  if ((unsigned)s >= XS_MOE_SCHEDULES)
    return xs__fail(err, XS_INVALID, "unknown schedule %d", (int)s);
  workload wl;
  xs_status st = build_workload(c, prof, &wl, err);
  if (st)
    return st;
  xs_result *r = NULL;
  double t;
  st = search(&wl, c->name, s, prof, &t, knobs, bd, NULL, &r, NULL, err);
  if (!st && time_s)
    *time_s = t;
  xs_result_free(r);
  free_workload(&wl);
  return st;
}

xs_status xs_moe_program(const xs_moe_config *c, const xs_profile *prof,
                         xs_moe_schedule sched, const xs_moe_pattern *pat,
                         xs_program **out, xs_error *err) {
  *out = NULL;
  if ((unsigned)sched >= XS_MOE_SCHEDULES)
    return xs__fail(err, XS_INVALID, "unknown schedule %d", (int)sched);
  workload wl;
  xs_status st = build_workload(c, prof, &wl, err);
  if (st)
    return st;
  xs_moe_pattern dflt;
  if (!pat && candidate(&wl, sched, 0, &dflt))
    pat = &dflt;
  char name[160];
  snprintf(name, sizeof name, "%s T=%g EP=%g %s", c->name, c->tokens, c->ep,
           sched_names[sched]);
  st = build_program(&wl, sched, pat, name, 1, NULL, NULL, out, err);
  free_workload(&wl);
  return st;
}

/* Makespans of p under blocking and ideal (burstgap is known already) */
static xs_status eval_others(const xs_program *p, const xs_profile *prof,
                             double out[3], xs_result **spare, xs_error *err) {
  static const xs_model models[3] = {XS_MODEL_BURSTGAP, XS_MODEL_BLOCKING,
                                     XS_MODEL_IDEAL};
  xs_eval_options o = {0, 1, NULL, NULL};
  for (int m = 1; m < 3; m++) {
    o.reuse = *spare;
    *spare = NULL;
    xs_status st = xs_evaluate(p, prof, models[m], &o, spare, err);
    if (st)
      return st;
    out[m] = (*spare)->makespan_s;
  }
  return XS_OK;
}

xs_status xs_moe_plan(const xs_moe_config *c, const xs_profile *prof,
                      xs_moe_result *out, xs_error *err) {
  memset(out, 0, sizeof *out);
  workload wl;
  xs_status st = build_workload(c, prof, &wl, err);
  if (st)
    return st;
  out->work = wl.w;
  xs_result *r = NULL;
  double best = INFINITY;
  for (int s = 0; s < XS_MOE_SCHEDULES && !st; s++) {
    xs_program *p = NULL;
    st = search(&wl, c->name, (xs_moe_schedule)s, prof, &out->time_s[s][0],
                &out->knobs[s], &out->breakdown[s], &p, &r, &out->searched, err);
    if (!st)
      st = eval_others(p, prof, out->time_s[s], &r, err);
    xs_program_free(p);
    if (!st && s != XS_MOE_SEQUENTIAL && out->time_s[s][0] < best) {
      best = out->time_s[s][0];
      out->best_fused = (xs_moe_schedule)s;
    }
  }
  if (!st) {
    const xs_moe_breakdown *b = &out->breakdown[XS_MOE_INTERLEAVED];
    out->chosen = out->knobs[XS_MOE_INTERLEAVED];
    out->compute_s = b->hbm_s + b->compute_s + b->fixed_s - wl.finish_s;
    out->dispatch_wait_s = b->dispatch_s;
    out->stall_s = b->stall_s;
    out->xstage_tail_s = b->xstage_tail_s;
  }
  xs_result_free(r);
  free_workload(&wl);
  return st;
}

xs_status xs__moe_audit_program(const xs_moe_config *c, const xs_profile *prof,
                                xs_moe_schedule sched,
                                const xs_moe_pattern *pat,
                                xs__moe_audit *audit, xs_program **out,
                                xs_error *err) {
  workload wl;
  memset(audit, 0, sizeof *audit);
  xs_status st = build_workload(c, prof, &wl, err);
  if (st)
    return st;
  audit->config_flops = wl.w.flops;
  xs_moe_pattern dflt;
  if (!pat && candidate(&wl, sched, 0, &dflt))
    pat = &dflt;
  st = build_program(&wl, sched, pat, c->name, 1, audit, NULL, out, err);
  free_workload(&wl);
  return st;
}
