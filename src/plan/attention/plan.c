/*
 * plan.c: the ring attention planner (docs/plan-flashattn.md). A way of
 * moving KV writes its program for the ring (way_*.c); the program is
 * evaluated under the Burst-Gap model, and under the baselines; the time
 * the planner reports is the program's makespan, so the program it emits
 * is the plan. Where the time goes is what the program was written with
 * (kernels, merges, fixed costs, interference); the rest is exposed
 * communication. The same ring with nothing forwarded is the figure "if
 * communication were free".
 */
#include "plan/attention/attention.h"

#include <stdlib.h>
#include <string.h>

static const xs__fa_way ways[XS_FA_PATHS] = {xs__fa_way_local, xs__fa_way_sequential,
                                             xs__fa_way_stream, xs__fa_way_sms,
                                             xs__fa_way_piggyback};
/* the merge each way runs, which its ring is built for (xs__fa_merge
 * takes the ring's): fused into one kernel but for dedicated-stream's,
 * ring-flash-attention's (way_*.c say why) */
static const int fused_merge[XS_FA_PATHS] = {1, 1, 0, 1, 1};

/* dedicated-sms: the SMs set aside that are searched (mKernel's and
 * ThunderKittens' sweeps: even, a K and a V sender each; and one, for
 * small SM counts) */
static const unsigned sms_knobs[] = {1, 2, 4, 8, 16, 32, 64};
#define NKNOBS (sizeof sms_knobs / sizeof sms_knobs[0])

/* Write path's program for ring r with knob k; g->p is the program. */
static xs_status build(const xs__fa_ring *r, const xs__fa_costs *t,
                       const xs_profile *prof, xs_fa_path path, unsigned k,
                       int comm_free, const char *name, xs__fa_prog *g,
                       xs__fa_kcall calls[2][XS__FA_SHAPES], xs_error *err) {
  const xs__fa_kcall (*call)[XS__FA_SHAPES] = (const xs__fa_kcall (*)[XS__FA_SHAPES])r->call;
  xs_status st;
  if (path == XS_FA_PATH_SMS && !comm_free) {
    if (!(k >= 1 && (double)k <= r->sms - 1))
      return xs__fail(err, XS_INVALID, "dedicated-sms: %u SMs set aside of %g: the "
                      "attention needs some left", k, r->sms);
    if ((st = xs__fa_ring_calls(r, r->sms - k, calls, err)))
      return st;
    call = (const xs__fa_kcall (*)[XS__FA_SHAPES])calls;
  }
  size_t groups = path == XS_FA_PATH_PIGGYBACK && !comm_free ? (size_t)t->phase_groups : 1;
  if ((st = xs__fa_prog_start(g, r, t, prof, call, groups, comm_free, name, err)))
    return st;
  if ((st = ways[path](g, path == XS_FA_PATH_SMS && !comm_free ? k : 0, err))) {
    xs_program_free(g->p);
    g->p = NULL;
  }
  return st;
}

/* piggyback: the mean stall of the SMs that finish last, waiting for a
 * stage's store to read it (blocked on their "free" counter) */
static double stall_of(const xs__fa_prog *g, const xs_timeline *tl) {
  double sum = 0, n = 0;
  for (size_t i = 0; i < g->nw; i++) {
    if (g->wclass[i] != 0)
      continue;
    char name[32];
    snprintf(name, sizeof name, "free%zu", i);
    uint32_t ci = UINT32_MAX;
    for (size_t c = 0; c < xs_program_counter_count(g->p); c++)
      if (!strcmp(xs_program_counter_name(g->p, c), name))
        ci = (uint32_t)c;
    double b = 0;
    for (size_t s = 0; s < tl->nsegments; s++) {
      const xs_segment *seg = &tl->segments[s];
      if (seg->kind == XS_SEG_BLOCKED && seg->worker == g->w[i] && seg->counter == ci)
        b += seg->end_s - seg->start_s;
    }
    sum += b * g->wsms[i];
    n += g->wsms[i];
  }
  return n > 0 ? sum / n : 0;
}

/* The GPU waiting for the host: synced, the time the SMs that finish
 * last spend blocked on the host's signals; pipelined (the host runs
 * beside the GPU), how far the host's issuing outlasts the rest. */
static double host_of(const xs__fa_prog *g, const xs_timeline *tl, double T) {
  double b = 0, end = 0;
  size_t w0 = SIZE_MAX;
  for (size_t i = 0; i < g->nw && w0 == SIZE_MAX; i++)
    if (g->wclass[i] == 0)
      w0 = g->w[i];
  for (size_t s = 0; s < tl->nsegments; s++) {
    const xs_segment *seg = &tl->segments[s];
    if (seg->worker != g->host)
      end = fmax(end, seg->end_s);
    if (g->synced && seg->kind == XS_SEG_BLOCKED && seg->worker == w0 &&
        seg->counter == g->issued)
      b += seg->end_s - seg->start_s;
  }
  return g->synced ? b : fmax(0, T - end);
}

/* values within a billionth of the time are rounding: 0 */
static double snap(double v, double scale) {
  return fabs(v) <= 1e-9 * scale ? 0 : v;
}

typedef struct {
  double time[XS_MODEL_COUNT];
  xs_fa_breakdown bd;
} path_result;

/* One path on ring r: the knob (searched for dedicated-sms unless
 * kfix), its time under burstgap (and the baselines when all), where the
 * time goes, and the time if communication were free. */
static xs_status run_path(const xs__fa_ring *r, const xs__fa_costs *t,
                          const xs_profile *prof, xs_fa_path path, unsigned kfix,
                          int all, path_result *out, unsigned *searched,
                          xs_error *err) {
  memset(out, 0, sizeof *out);
  for (int m = 0; m < XS_MODEL_COUNT; m++)
    out->time[m] = NAN;
  xs__fa_kcall calls[2][XS__FA_SHAPES];
  xs__fa_prog g;
  xs_status st = XS_OK;
  unsigned k = 0;
  if (path == XS_FA_PATH_SMS) {
    double best = INFINITY;
    for (size_t i = 0; i < NKNOBS && !st; i++) {
      /* the knobs that leave SMs to compute */
      unsigned kk = kfix ? kfix : sms_knobs[i];
      if (!kfix && (double)kk > r->sms - 1)
        continue;
      double v;
      if (!(st = build(r, t, prof, path, kk, 0, "candidate", &g, calls, err))) {
        st = xs__makespan(g.p, prof, XS_MODEL_BURSTGAP, NULL, &v, err);
        xs_program_free(g.p);
        if (searched)
          (*searched)++;
        if (!st && v < best)
          best = v, k = kk;
      }
      if (kfix)
        break;
    }
    if (st)
      return st;
    if (!k)
      return xs__fail(err, XS_INVALID, "dedicated-sms: %g SMs leave none to set aside "
                      "for forwarding", r->sms);
  }
  if ((st = build(r, t, prof, path, k, 0, xs_fa_path_name(path), &g, calls, err)))
    return st;
  /* a timeline where the breakdown needs one: piggyback's stall, the
   * host's signals when synced, and a pipelined host that is the last to
   * finish (the GPU's end then comes from the timeline) */
  int need = path == XS_FA_PATH_PIGGYBACK || g.synced;
  xs_timeline *tl = need ? xs_timeline_new() : NULL;
  if (need && !tl)
    st = xs__fail(err, XS_NOMEM, "out of memory");
  if (!st)
    st = xs__makespan(g.p, prof, XS_MODEL_BURSTGAP, tl, &out->time[XS_MODEL_BURSTGAP], err);
  if (!st && !tl && g.host_total_s >= out->time[XS_MODEL_BURSTGAP] * (1 - 1e-12)) {
    if (!(tl = xs_timeline_new()))
      st = xs__fail(err, XS_NOMEM, "out of memory");
    else
      st = xs__makespan(g.p, prof, XS_MODEL_BURSTGAP, tl, &out->time[XS_MODEL_BURSTGAP], err);
  }
  for (int m = 1; all && !st && m < XS_MODEL_COUNT; m++)
    st = xs__makespan(g.p, prof, (xs_model)m, NULL, &out->time[m], err);
  if (searched)
    (*searched)++;
  xs_fa_breakdown *b = &out->bd;
  if (!st) {
    double T = out->time[XS_MODEL_BURSTGAP];
    b->compute_s = g.compute_s;
    b->merge_s = g.merge_s;
    b->fixed_s = g.fixed_s;
    b->interference_s = snap(g.interference_s, T);
    b->imbalance_s = snap(g.imbalance_s, T);
    b->host_s = tl ? snap(host_of(&g, tl, T), T) : 0;
    b->exposed_s = fmax(0, snap(T - g.compute_s - g.merge_s - g.fixed_s -
                                    g.interference_s - b->host_s, T));
    b->stall_s = path == XS_FA_PATH_PIGGYBACK ? snap(stall_of(&g, tl), T) : 0;
    b->forward_sms = k;
    const char *names[6] = {"compute", "merge", "fixed", "interference", "host", "exposed"};
    double v[6] = {b->compute_s, b->merge_s, b->fixed_s, b->interference_s, b->host_s,
                   b->exposed_s};
    int w = 0;
    for (int i = 1; i < 6; i++)
      if (v[i] > v[w])
        w = i;
    b->bound = names[w];
  }
  xs_timeline_free(tl);
  xs_program_free(g.p);
  /* if communication were free: the same ring, nothing forwarded */
  if (!st && !(st = build(r, t, prof, path, 0, 1, "free", &g, calls, err))) {
    st = xs__makespan(g.p, prof, XS_MODEL_BURSTGAP, NULL, &b->free_s, err);
    xs_program_free(g.p);
  }
  return st;
}

/* the ring a path runs on (the local arm's for it) and the costs */
static xs_status ring_for(const xs_fa_config *c, const xs_profile *prof, xs_fa_path path,
                          xs__fa_ring *r, xs__fa_costs *t, xs_error *err) {
  if ((unsigned)path >= XS_FA_PATHS)
    return xs__fail(err, XS_INVALID, "unknown path %d", (int)path);
  xs__fa_costs_of(prof, t);
  return xs__fa_ring_build(c, prof, path == XS_FA_LOCAL, fused_merge[path], NULL, r, err);
}

/* one path of the config's ring (or the local arm), under burstgap or,
 * with all, every model */
static xs_status predict(const xs_fa_config *config, const xs_profile *prof,
                         xs_fa_path path, int all, path_result *pr, xs_error *err) {
  xs__fa_ring r;
  xs__fa_costs t;
  xs_fa_config c[1];
  xs_status st = xs_fa_kernel_resolve(config, prof, c, err);
  if (!st)
    st = ring_for(c, prof, path, &r, &t, err);
  if (st)
    return st;
  st = run_path(&r, &t, prof, path, 0, all, pr, NULL, err);
  xs__fa_ring_free(&r);
  return st;
}

xs_status xs_fa_predict(const xs_fa_config *c, const xs_profile *prof, xs_fa_path path,
                        double *time_s, xs_fa_breakdown *bd, xs_error *err) {
  path_result pr;
  xs_status st = predict(c, prof, path, 0, &pr, err);
  if (!st && time_s)
    *time_s = pr.time[XS_MODEL_BURSTGAP];
  if (!st && bd)
    *bd = pr.bd;
  return st;
}

xs_status xs__fa_predict_models(const xs_fa_config *c, const xs_profile *prof,
                                xs_fa_path path, double time_s[XS_MODEL_COUNT],
                                xs_fa_breakdown *bd, xs_error *err) {
  path_result pr;
  xs_status st = predict(c, prof, path, 1, &pr, err);
  if (!st)
    memcpy(time_s, pr.time, sizeof pr.time);
  if (!st && bd)
    *bd = pr.bd;
  return st;
}

/* xs_fa_plan; baselines 0: the rings' burstgap times alone (the blocking,
 * serial and ideal times of the config's layout left NAN) */
static xs_status plan(const xs_fa_config *config, const xs_profile *prof, int baselines,
                      xs_fa_result *out, xs_error *err) {
  memset(out, 0, sizeof *out);
  /* the kernel the GPU runs (xs_fa_kernel_resolve) */
  xs_fa_config c[1];
  xs_status rs = xs_fa_kernel_resolve(config, prof, c, err);
  if (rs)
    return rs;
  xs__fa_costs t;
  xs__fa_costs_of(prof, &t);
  xs__fa_ring r;
  /* the kernel calls the layouts and candidates share */
  xs__fa_kcache *cache = malloc(sizeof *cache);
  if (!cache)
    return xs__fail(err, XS_NOMEM, "out of memory");
  cache->n = 0;
  /* the local arm */
  xs_status st = xs__fa_ring_build(c, prof, 1, 1, cache, &r, err);
  if (st) {
    free(cache);
    return st;
  }
  path_result pr;
  st = run_path(&r, &t, prof, XS_FA_LOCAL, 0, baselines, &pr, &out->searched, err);
  xs__fa_ring_free(&r);
  if (st) {
    free(cache);
    return st;
  }
  memcpy(out->time_s[XS_FA_LOCAL], pr.time, sizeof pr.time);
  out->breakdown[XS_FA_LOCAL] = pr.bd;
  out->rings[0] = (xs_fa_ring){XS_FA_LOCAL, -1, pr.time[XS_MODEL_BURSTGAP], pr.bd};
  out->nrings = 1;
  /* every ring path under every causal layout (one for a full mask) */
  double best = INFINITY;
  for (int l = 0; l < XS_FA_LAYOUTS && !st; l++) {
    if (!c->causal && l != c->layout)
      continue;
    xs_fa_config at = *c;
    at.layout = l;
    /* the ring for each kind of merge (they differ under zigzag only) */
    xs__fa_ring rm[2];
    if ((st = xs__fa_ring_build(&at, prof, 0, 0, cache, &rm[0], err)))
      break;
    if ((st = xs__fa_ring_build(&at, prof, 0, 1, cache, &rm[1], err))) {
      xs__fa_ring_free(&rm[0]);
      break;
    }
    r = rm[1];
    if (l == c->layout) {
      /* the workload of the config's ring */
      xs_fa_workload *w = &out->work;
      double S = c->seq, d = c->head_dim;
      w->step_flops = 4 * c->batch * S * S * c->heads_q * d * (c->causal ? 0.5 : 1);
      for (size_t s = 0; s < r.n; s++)
        w->step_s += r.call[r.step[s].backward][r.step[s].shape].end / (double)r.n;
      w->kv_B = r.kv_B;
      w->q_tiles = c->batch * c->heads_q * ceil(S / r.kf.bm);
      w->iterations = ceil(S / r.kf.bn);
      w->kv_tiles = c->batch * c->heads_kv * w->iterations;
      w->sms = r.sms;
      w->waves = ceil(w->q_tiles / (r.kf.per_sm * r.sms));
      w->stage_B = 2 * r.kf.bn * d * c->bytes;
      w->stages = r.kf.stages;
      w->measured = r.kf.measured && (!c->backward || r.kb.measured);
    }
    for (int p = XS_FA_PATH_SEQUENTIAL; p < XS_FA_PATHS && !st; p++) {
      /* the baselines of the config's layout only: the plan keeps those */
      if ((st = run_path(&rm[fused_merge[p]], &t, prof, (xs_fa_path)p, 0,
                         baselines && l == c->layout, &pr, &out->searched, err)))
        break;
      out->rings[out->nrings++] =
          (xs_fa_ring){(xs_fa_path)p, c->causal ? l : -1, pr.time[XS_MODEL_BURSTGAP], pr.bd};
      if (l == c->layout) {
        memcpy(out->time_s[p], pr.time, sizeof pr.time);
        out->breakdown[p] = pr.bd;
        if (pr.time[XS_MODEL_BURSTGAP] < best) {
          best = pr.time[XS_MODEL_BURSTGAP];
          out->best = (xs_fa_path)p;
        }
      }
    }
    xs__fa_ring_free(&rm[0]);
    xs__fa_ring_free(&rm[1]);
  }
  free(cache);
  return st;
}

xs_status xs_fa_plan(const xs_fa_config *c, const xs_profile *prof, xs_fa_result *out,
                     xs_error *err) {
  return plan(c, prof, 1, out, err);
}

xs_status xs_fa_rings(const xs_fa_config *c, const xs_profile *prof, xs_fa_ring *out,
                      size_t *n, xs_error *err) {
  *n = 0;
  xs_fa_result *r = malloc(sizeof *r);
  if (!r)
    return xs__fail(err, XS_NOMEM, "out of memory");
  xs_status st = plan(c, prof, 0, r, err);
  if (!st) {
    memcpy(out, r->rings, r->nrings * sizeof *out);
    *n = r->nrings;
  }
  free(r);
  return st;
}

int xs_fa_same_ring(const xs_fa_ring *a, const xs_fa_ring *b) {
  return a->path == b->path && a->layout == b->layout;
}

const xs_fa_ring *xs__fa_ring_keep(const xs_fa_ring *rows, size_t n, const xs_fa_ring *prev,
                                   double tol) {
  const xs_fa_ring *b = xs_fa_ring_best(rows, n);
  for (size_t i = 0; prev && b && i < n; i++)
    if (xs_fa_same_ring(&rows[i], prev) && rows[i].time_s <= b->time_s * (1 + tol))
      return &rows[i];
  return b;
}

const xs_fa_ring *xs_fa_ring_best(const xs_fa_ring *r, size_t n) {
  const xs_fa_ring *b = NULL;
  for (size_t i = 0; i < n; i++)
    if (r[i].path != XS_FA_LOCAL && (!b || r[i].time_s < b->time_s))
      b = &r[i];
  return b;
}

xs_status xs_fa_program(const xs_fa_config *config, const xs_profile *prof,
                        xs_fa_path path, const xs_fa_choice *choice, xs_program **out,
                        xs_error *err) {
  *out = NULL;
  xs__fa_ring r;
  xs__fa_costs t;
  xs_fa_config c[1];
  xs_status st = xs_fa_kernel_resolve(config, prof, c, err);
  if (st)
    return st;
  st = ring_for(c, prof, path, &r, &t, err);
  if (st)
    return st;
  unsigned k = choice ? choice->forward_sms : 0;
  if (path == XS_FA_PATH_SMS && !k) {
    path_result pr;
    if (!(st = run_path(&r, &t, prof, path, 0, 0, &pr, NULL, err)))
      k = pr.bd.forward_sms;
  }
  char name[192];
  snprintf(name, sizeof name, "%s S=%g CP=%g%s %s %s %s%s", c->name, c->seq, c->cp,
           c->causal ? " causal" : "", c->causal ? xs_fa_layout_name((xs_fa_layout)c->layout) : "full",
           c->kernel, xs_fa_path_name(path), c->backward ? " fwd+bwd" : "");
  xs__fa_kcall calls[2][XS__FA_SHAPES];
  xs__fa_prog g;
  if (!st && !(st = build(&r, &t, prof, path, k, 0, name, &g, calls, err)))
    *out = g.p;
  xs__fa_ring_free(&r);
  return st;
}
