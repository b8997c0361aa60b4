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
#include "jsonutil.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

typedef struct {
  const char *name;
  double hidden, intermediate, experts, topk;
} preset;

/* ../REFERENCES.md "MoE shapes" */
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
      "stagger", NULL};
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
  if ((st = xs__jstring(&d, root, "name", &s, &have)))
    goto done;
  if (have)
    snprintf(c.name, sizeof c.name, "%s", s);
  if ((st = xs__jstring(&d, root, "dtype", &s, &have)))
    goto done;
  if (have)
    snprintf(c.dtype, sizeof c.dtype, "%s", s);
  const xs__jfield nums[] = {{"tokens", &c.tokens},
              {"hidden", &c.hidden},
              {"intermediate", &c.intermediate},
              {"experts", &c.experts},
              {"topk", &c.topk},
              {"ep", &c.ep},
              {"act_bytes", &c.act_bytes},
              {"combine_bytes", &c.combine_bytes},
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

typedef struct {
  double rows;
  double l1_tile_s, l2_tile_s, l2_tile_B, dispatch_B;
} block;

typedef struct {
  xs_moe_workload w;
  double stagger, flops_per_sm;
  block *blocks;
  size_t nblocks;
  double n1, n2; /* tiles per block in L1 and L2 */
} workload;

static xs_status build_workload(const xs_moe_config *c, const xs_profile *prof,
                                workload *wl, xs_error *err) {
  xs_status st = xs_moe_config_check(c, err);
  if (st)
    return st;
  double sms = c->sms > 0 ? c->sms : xs_profile_sms(prof);
  double F = xs_profile_flops_per_s(prof, c->dtype) * xs_profile_efficiency(prof);
  if (!(sms > 0) || !(F > 0))
    return xs__fail(err, XS_INVALID,
                    "profile \"%s\" has no compute section with SMs and FLOP/s "
                    "for dtype \"%s\" (see xstage profiles show)",
                    xs_profile_name(prof), c->dtype);
  memset(wl, 0, sizeof *wl);
  wl->stagger = c->stagger;
  wl->flops_per_sm = F / sms;
  double el = c->experts / c->ep;
  double pairs = round(c->tokens * c->topk * c->imbalance);
  double m = pairs / el;
  double bm = c->block_m > 0 ? c->block_m : m <= 16 ? 16 : m <= 32 ? 32
                                                  : m <= 64 ? 64 : 128;
  double off = (c->ep - 1) / c->ep;
  double per_sm = F / sms;
  wl->n1 = ceil(2 * c->intermediate / c->block_n);
  wl->n2 = ceil(c->hidden / c->block_n);
  /* integer rows per expert: the first pairs % el experts get one more */
  double base = floor(pairs / el), extra = pairs - base * el;
  double nb_max = ceil((base + 1) / bm);
  size_t cap = (size_t)(el * nb_max) + 1;
  wl->blocks = malloc(cap * sizeof *wl->blocks);
  if (!wl->blocks)
    return xs__fail(err, XS_NOMEM, "out of memory");
  double flops = 0;
  for (double e = 0; e < el; e++) {
    double rows = base + (e < extra ? 1 : 0);
    for (double r0 = 0; r0 < rows; r0 += bm) {
      double r = fmin(bm, rows - r0);
      block *b = &wl->blocks[wl->nblocks++];
      double f1 = 2 * r * 2 * c->intermediate * c->hidden;
      double f2 = 2 * r * c->intermediate * c->hidden;
      flops += f1 + f2;
      b->rows = r;
      b->l1_tile_s = f1 / wl->n1 / per_sm;
      b->l2_tile_s = f2 / wl->n2 / per_sm;
      b->l2_tile_B = r * c->hidden * c->combine_bytes * off / wl->n2;
      b->dispatch_B = r * c->hidden * c->act_bytes * off;
    }
  }
  xs_moe_workload *w = &wl->w;
  w->pairs = pairs;
  w->tokens_per_expert = m;
  w->block_m = bm;
  w->block_n = c->block_n;
  w->sms = sms;
  w->blocks = (double)wl->nblocks;
  w->l1_tiles = w->blocks * wl->n1;
  w->l2_tiles = w->blocks * wl->n2;
  w->waves = ceil((w->l1_tiles + w->l2_tiles) / sms);
  w->l1_tile_s = 2 * bm * c->block_n * c->hidden / per_sm;
  w->l2_tile_s = 2 * bm * c->block_n * c->intermediate / per_sm;
  w->flops = flops;
  w->dispatch_B = pairs * c->hidden * c->act_bytes * off;
  w->combine_B = pairs * c->hidden * c->combine_bytes * off;
  w->offrank = off;
  return XS_OK;
}

/* ---- schedules as programs ---- */

#define MAX_DISPATCH_CHUNKS 64

/* Tiles go to waves of S slots. A wave that prefers L2 takes the ready L2
 * tiles (their block's L1 tiles all in earlier waves) first and fills up
 * with L1 tiles; one that prefers L1 does the opposite; a split wave gives
 * at most l2_sms slots to ready L2 tiles and the rest to L1. A full wave
 * takes the sum of its tiles' times / S, since the SMs of a persistent
 * kernel pick up the next tile when they finish one; a partial (last) wave
 * takes at least its longest tile. ids: name the sends ("dispatch0", ...)
 * in programs that leave the library; the plan's own search skips them. */
static xs_status build_program(const workload *wl, xs_moe_schedule sched,
                               const xs_moe_pattern *pat, const char *name,
                               int ids, xs__moe_audit *audit, xs_program **out,
                               xs_error *err) {
  xs_program *p = xs_program_new(name);
  if (!p)
    return xs__fail(err, XS_NOMEM, "out of memory");
  xs_status st;
  size_t nb = wl->nblocks, S = (size_t)wl->w.sms;
  size_t n1 = (size_t)wl->n1, n2 = (size_t)wl->n2;
  size_t sms;
  if (sched == XS_MOE_SEQUENTIAL) {
    if ((st = xs_program_add_worker(p, "sms", &sms, err)))
      goto fail;
    double disp = 0, comb = 0, l1 = 0, l2 = 0;
    for (size_t b = 0; b < nb; b++) {
      disp += wl->blocks[b].dispatch_B;
      comb += wl->blocks[b].l2_tile_B * (double)n2;
      l1 += wl->blocks[b].l1_tile_s * (double)n1;
      l2 += wl->blocks[b].l2_tile_s * (double)n2;
    }
    /* each kernel takes its waves: S SMs share the work, whole tiles */
    if (audit)
      audit->flops = (l1 + l2) * wl->flops_per_sm;
    double w1 = fmax(l1 / (double)S, wl->blocks[0].l1_tile_s);
    double w2 = fmax(l2 / (double)S, wl->blocks[0].l2_tile_s);
    if ((st = xs_program_send(p, sms, disp, NULL, ids ? "dispatch" : NULL, NULL, err)) ||
        (st = xs_program_fence(p, sms, err)) ||
        (st = xs_program_compute(p, sms, w1, err)) ||
        (st = xs_program_compute(p, sms, w2, err)) ||
        (st = xs_program_send(p, sms, comb, NULL, ids ? "combine" : NULL, NULL, err)) ||
        (st = xs_program_fence(p, sms, err)))
      goto fail;
    goto finish;
  }
  size_t dw;
  if ((st = xs_program_add_worker(p, "dispatch", &dw, err)) ||
      (st = xs_program_add_worker(p, "sms", &sms, err)))
    goto fail;
  /* dispatch in chunks of consecutive blocks, in block order */
  size_t per_chunk = (nb + MAX_DISPATCH_CHUNKS - 1) / MAX_DISPATCH_CHUNKS;
  size_t nchunks = (nb + per_chunk - 1) / per_chunk;
  size_t *chunk_send = malloc(nchunks * sizeof *chunk_send + 1);
  if (!chunk_send) {
    st = xs__fail(err, XS_NOMEM, "out of memory");
    goto fail;
  }
  for (size_t k = 0; k < nchunks; k++) {
    double bytes = 0;
    for (size_t b = k * per_chunk; b < nb && b < (k + 1) * per_chunk; b++)
      bytes += wl->blocks[b].dispatch_B;
    char id[32];
    if (ids)
      snprintf(id, sizeof id, "dispatch%zu", k);
    if ((st = xs_program_send(p, dw, bytes, NULL, ids ? id : NULL, &chunk_send[k], err))) {
      free(chunk_send);
      goto fail;
    }
  }
  /* the audit counts, per block, the L1 tiles of waves already closed */
  size_t *l1_closed = audit ? calloc(nb + 1, sizeof *l1_closed) : NULL,
         *l1_open = audit ? calloc(nb + 1, sizeof *l1_open) : NULL;
  if (audit && (!l1_closed || !l1_open)) {
    free(l1_closed);
    free(l1_open);
    free(chunk_send);
    st = xs__fail(err, XS_NOMEM, "out of memory");
    goto fail;
  }
  /* waves */
  size_t i1 = 0, i2 = 0; /* tiles placed: L1 in block order, L2 likewise */
  size_t t1 = nb * n1, t2 = nb * n2;
  long waited = -1;
  unsigned phase = 0;
  int interleave = sched == XS_MOE_INTERLEAVED && pat && pat->l1_waves > 0 &&
                   !pat->l2_sms;
  size_t split = sched == XS_MOE_INTERLEAVED && pat ? pat->l2_sms : 0;
  while (i1 < t1 || i2 < t2) {
    size_t ready2 = (i1 / n1) * n2; /* L2 tiles of blocks whose L1 is done */
    int prefer2;
    if (!interleave)
      prefer2 = i1 >= t1;
    else {
      unsigned cycle = pat->l1_waves + (pat->l2_waves ? pat->l2_waves : 1);
      prefer2 = phase % cycle >= pat->l1_waves;
    }
    if (split)
      prefer2 = 1;
    double sum = 0, longest = 0, bytes = 0;
    size_t slots = S, hi_block = SIZE_MAX;
    for (int pass = 0; pass < 3 && slots; pass++) {
      int take2 = pass == 1 ? !prefer2 : prefer2;
      /* a split wave: at most `split` L2 tiles first, L1, then L2 if no L1
       * is left */
      size_t cap2 = split && pass == 0 ? split : SIZE_MAX;
      if (pass == 2 && !split)
        break;
      /* tiles of one block are alike: take them a block's run at a time */
      if (take2) {
        while (slots && i2 < ready2 && cap2) {
          const block *b = &wl->blocks[i2 / n2];
          size_t run = n2 - i2 % n2;
          run = run < slots ? run : slots;
          run = run < ready2 - i2 ? run : ready2 - i2;
          run = run < cap2 ? run : cap2;
          if (audit) {
            audit->flops += (double)run * b->l2_tile_s * wl->flops_per_sm;
            if (l1_closed[i2 / n2] != n1)
              audit->violations += run;
          }
          sum += (double)run * b->l2_tile_s;
          if (b->l2_tile_s > longest)
            longest = b->l2_tile_s;
          bytes += (double)run * b->l2_tile_B;
          i2 += run;
          slots -= run;
          cap2 -= cap2 == SIZE_MAX ? 0 : run;
        }
      } else {
        while (slots && i1 < t1) {
          const block *b = &wl->blocks[i1 / n1];
          size_t run = n1 - i1 % n1;
          run = run < slots ? run : slots;
          if (audit) {
            audit->flops += (double)run * b->l1_tile_s * wl->flops_per_sm;
            l1_open[i1 / n1] += run;
          }
          sum += (double)run * b->l1_tile_s;
          if (b->l1_tile_s > longest)
            longest = b->l1_tile_s;
          hi_block = i1 / n1;
          i1 += run;
          slots -= run;
        }
      }
    }
    if (slots == S) /* nothing ready: cannot happen, L1 always progresses */
      break;
    if (audit) {
      audit->waves++;
      for (size_t b = 0; b < nb; b++)
        l1_closed[b] = l1_open[b];
    }
    if (hi_block != SIZE_MAX && (long)(hi_block / per_chunk) > waited) {
      waited = (long)(hi_block / per_chunk);
      if ((st = xs_program_wait_send(p, sms, chunk_send[waited], err))) {
        free(chunk_send);
        goto fail;
      }
    }
    double wave_s = sum / (double)S;
    if (slots > 0 && longest > wave_s)
      wave_s = longest;
    /* the wave's combine stores leave in `stagger` steps over the wave */
    int steps = bytes > 0 ? (int)wl->stagger : 1;
    for (int k = 0; k < steps; k++)
      if ((st = xs_program_compute(p, sms, wave_s / steps, err)) ||
          (bytes > 0 &&
           (st = xs_program_send(p, sms, bytes / steps, NULL, NULL, NULL, err)))) {
        free(chunk_send);
        goto fail;
      }
    phase++;
  }
  free(chunk_send);
  free(l1_closed);
  free(l1_open);
finish:
  if ((st = xs_program_finish(p, err)))
    goto fail;
  *out = p;
  return XS_OK;
fail:
  xs_program_free(p);
  return st;
}

xs_status xs_moe_program(const xs_moe_config *c, const xs_profile *prof,
                         xs_moe_schedule sched, const xs_moe_pattern *pat,
                         xs_program **out, xs_error *err) {
  static const char *const names[] = {"sequential", "fused baseline",
                                      "interleaved"};
  *out = NULL;
  if ((unsigned)sched >= XS_MOE_SCHEDULES)
    return xs__fail(err, XS_INVALID, "unknown schedule %d", (int)sched);
  workload wl;
  xs_status st = build_workload(c, prof, &wl, err);
  if (st)
    return st;
  char name[160];
  snprintf(name, sizeof name, "%s T=%g EP=%g %s", c->name, c->tokens, c->ep,
           names[sched]);
  st = build_program(&wl, sched, pat, name, 1, NULL, out, err);
  free(wl.blocks);
  return st;
}

#define BALANCED 1000u /* l2_sms: L1 and L2 tiles run out together */

/* candidates of the search; {0, 0, 0} is the baseline; split waves give
 * L2 a share of the SMs (l2_sms is filled in from these eighths, and one
 * candidate gives L2 the share that makes L1 and L2 tiles run out
 * together) */
static const xs_moe_pattern patterns[] = {
    {0, 0, 0}, {1, 1, 0}, {2, 1, 0}, {4, 1, 0}, {8, 1, 0}, {1, 2, 0},
    {2, 2, 0}, {0, 0, 1}, {0, 0, 2}, {0, 0, 4}, {0, 0, 6}, {0, 0, BALANCED}};
#define NPATTERNS (sizeof patterns / sizeof patterns[0])

static xs_moe_pattern candidate(const workload *wl, size_t k) {
  xs_moe_pattern p = patterns[k];
  if (p.l2_sms == BALANCED) {
    double share = wl->w.l2_tiles / (wl->w.l1_tiles + wl->w.l2_tiles);
    p.l2_sms = (unsigned)fmax(1, round(wl->w.sms * share));
  } else if (p.l2_sms) {
    p.l2_sms = (unsigned)fmax(1, round(wl->w.sms * p.l2_sms / 8.0));
  }
  return p;
}

/* Makespans of p under blocking and ideal (burstgap is known already) */
static xs_status eval_others(const xs_program *p, const xs_profile *prof,
                             double out[3], xs_result **spare, xs_error *err) {
  static const xs_model models[3] = {XS_MODEL_BURSTGAP, XS_MODEL_BLOCKING,
                                     XS_MODEL_IDEAL};
  xs_eval_options o = {0, 1, NULL, NULL};
  for (int m = 1; m < 3; m++) {
    o.reuse = *spare;
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
  /* Each distinct program is built and evaluated once: candidate 0 is the
   * fused baseline, the best candidate is the interleaved schedule. One
   * result is kept for the best, one recycled for the rest. */
  xs_program *base = NULL, *best_p = NULL, *p = NULL;
  xs_result *best_r = NULL, *r = NULL;
  xs_eval_options o = {0, 1, NULL, NULL};
  for (size_t k = 0; k < NPATTERNS && !st; k++) {
    xs_moe_pattern cand = candidate(&wl, k);
    o.reuse = r;
    if ((st = build_program(&wl, XS_MOE_INTERLEAVED, &cand, c->name, 0, NULL, &p, err)) ||
        (st = xs_evaluate(p, prof, XS_MODEL_BURSTGAP, &o, &r, err)))
      break;
    out->searched++;
    if (k == 0) {
      base = p;
      out->time_s[XS_MOE_BASELINE][0] = r->makespan_s;
    }
    if (!best_r || r->makespan_s < best_r->makespan_s) {
      xs_result *t = best_r;
      best_r = r;
      r = t;
      if (best_p != base)
        xs_program_free(best_p);
      best_p = p;
      out->chosen = cand;
    } else if (p != base) {
      xs_program_free(p);
    }
    p = NULL;
  }
  xs_program_free(p);
  if (!st) {
    out->time_s[XS_MOE_INTERLEAVED][0] = best_r->makespan_s;
    const xs_worker_result *w = &best_r->workers[1]; /* "sms" */
    out->compute_s = w->compute_s;
    out->dispatch_wait_s = w->blocked_s;
    out->stall_s = w->stall_s - w->blocked_s;
    out->xstage_tail_s = best_r->makespan_s - w->finish_s;
    st = eval_others(base, prof, out->time_s[XS_MOE_BASELINE], &r, err);
  }
  if (!st)
    st = eval_others(best_p, prof, out->time_s[XS_MOE_INTERLEAVED], &r, err);
  if (!st && !(st = build_program(&wl, XS_MOE_SEQUENTIAL, NULL, c->name, 0, NULL, &p, err))) {
    o.reuse = r;
    if (!(st = xs_evaluate(p, prof, XS_MODEL_BURSTGAP, &o, &r, err))) {
      out->time_s[XS_MOE_SEQUENTIAL][0] = r->makespan_s;
      st = eval_others(p, prof, out->time_s[XS_MOE_SEQUENTIAL], &r, err);
    }
    xs_program_free(p);
  }
  if (best_p != base)
    xs_program_free(best_p);
  xs_program_free(base);
  xs_result_free(best_r);
  xs_result_free(r);
  free(wl.blocks);
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
  st = build_program(&wl, sched, pat, c->name, 1, audit, out, err);
  free(wl.blocks);
  return st;
}
