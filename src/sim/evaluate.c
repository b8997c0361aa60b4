/*
 * evaluate.c: xs_evaluate and xs_simulate, the entry to every model. It sits
 * in the sim layer because it is the one place that sees all three
 * evaluators: the closed forms and the fluid evaluation below it
 * (src/model/) and the packet simulator beside it. It binds a program's
 * channel names to a profile, applies the model's overrides (blocking:
 * C = 0 and a fence after every send), computes the serial and ideal
 * baselines, and hands burstgap and blocking to the one-worker closed forms
 * or to the exact event-driven evaluation. Definitions: docs/model.md.
 */
#include "internal.h"

#include <float.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

/* An array of at least need elements in *array, reusing it when it is
 * large enough; zeroed when zero is set. */
static int take(void **array, size_t *cap, size_t need, size_t elem,
                int zero) {
  if (!*array || *cap < need) {
    free(*array);
    *array = malloc((need ? need : 1) * elem);
    *cap = *array ? need : 0;
    if (!*array)
      return -1;
  }
  if (zero)
    memset(*array, 0, need * elem);
  return 0;
}

/* Profile channel index of every channel name the program uses (map[0] is
 * the default, the profile's first); the first unknown one is reported at
 * the first send that names it. */
static xs_status bind_channels(const xs_program *p, const xs_profile *prof,
                               uint32_t *map, xs_error *err) {
  map[0] = (uint32_t)xs_profile_default_channel(prof);
  for (size_t i = 0; i < p->nchan_names; i++) {
    long c = xs_profile_find_channel(prof, p->chan_names[i]);
    if (c >= 0) {
      map[i + 1] = (uint32_t)c;
      continue;
    }
    char known[512];
    size_t n = 0;
    known[0] = '\0';
    for (size_t k = 0; k < xs_profile_channel_count(prof) && n < sizeof known;
         k++) {
      int w = snprintf(known + n, sizeof known - n, "%s%s", k ? ", " : "",
                       xs_profile_channel_name(prof, k));
      if (w < 0)
        break;
      n += (size_t)w;
    }
    for (size_t s = 0; s < p->nsends; s++)
      if (p->send_chan[s] == i + 1)
        return xs__program_op_fail(
            p, err, XS_INVALID, p->send_worker[s], p->send_op[s], "channel",
            "unknown channel \"%s\" (profile \"%s\" has: %s)",
            p->chan_names[i], xs_profile_name(prof), known);
    return xs__fail(err, XS_INVALID, "unknown channel \"%s\"",
                    p->chan_names[i]);
  }
  return XS_OK;
}

static xs_status run_model(const xs_program *p, const xs_profile *prof,
                           xs_model model, const xs_eval_options *opt,
                           const xs_sim_options *sim, xs__eval_extra *extra,
                           xs_result **out, xs_error *err);

xs_status xs__evaluate_ex(const xs_program *p, const xs_profile *prof,
                          xs_model model, const xs_eval_options *opt,
                          xs__eval_extra *extra, xs_result **out,
                          xs_error *err) {
  *out = NULL;
  if ((unsigned)model >= XS_MODEL_COUNT) {
    if (opt)
      xs_result_free(opt->reuse); /* consumed either way */
    return xs__fail(err, XS_INVALID, "unknown model %d", (int)model);
  }
  return run_model(p, prof, model, opt, NULL, extra, out, err);
}

xs_status xs_evaluate(const xs_program *p, const xs_profile *prof,
                      xs_model model, const xs_eval_options *opt,
                      xs_result **out, xs_error *err) {
  return xs__evaluate_ex(p, prof, model, opt, NULL, out, err);
}

xs_status xs__makespan(const xs_program *p, const xs_profile *prof, xs_model m,
                       xs_timeline *tl, double *out, xs_error *err) {
  xs_eval_options o = {0, 1, NULL, tl};
  xs_result *res = NULL;
  xs_status st = xs_evaluate(p, prof, m, &o, &res, err);
  if (!st)
    *out = res->makespan_s;
  xs_result_free(res);
  return st;
}

/* The packet simulator runs each copy as a worker of its own (copies in
 * lockstep would send their packets in turns, not as one): simulate the
 * program with its copies written out, and report each worker's and each
 * send's first copy (the timeline keeps only those). */
static xs_status simulate_copies(const xs_program *p, const xs_profile *prof,
                                 const xs_eval_options *o,
                                 const xs_sim_options *sim, xs_result **out,
                                 xs_error *err) {
  uint32_t *fw = malloc((p->nworkers + 1) * sizeof *fw);
  uint32_t *fs = malloc((p->nsends + 1) * sizeof *fs);
  xs_program *x = NULL;
  xs_result *r = NULL;
  size_t seg0 = o->timeline ? o->timeline->nsegments : 0;
  xs_status st = fw && fs ? xs__program_expand_copies(p, &x, fw, fs, err)
                          : xs__fail(err, XS_NOMEM, "out of memory");
  if (!st)
    st = run_model(x, prof, XS_MODEL_SIM, o, sim, NULL, &r, err);
  if (!st) {
    /* first copies only, renumbered: expanded index -> original + 1 */
    uint32_t *wback = calloc(x->nworkers + 1, sizeof *wback);
    uint32_t *sback = calloc(x->nsends + 1, sizeof *sback);
    if (!wback || !sback) {
      st = xs__fail(err, XS_NOMEM, "out of memory");
    } else {
      for (size_t w = 0; w < p->nworkers; w++) {
        wback[fw[w]] = (uint32_t)w + 1;
        r->workers[w] = r->workers[fw[w]];
      }
      for (size_t s = 0; s < p->nsends && r->sends; s++) {
        sback[fs[s]] = (uint32_t)s + 1;
        r->sends[s] = r->sends[fs[s]];
      }
      r->nworkers = p->nworkers;
      if (r->sends)
        r->nsends = p->nsends;
      if (o->timeline) {
        xs_timeline *tl = o->timeline;
        size_t k = seg0;
        for (size_t i = seg0; i < tl->nsegments; i++) {
          xs_segment sg = tl->segments[i];
          if (!wback[sg.worker])
            continue;
          sg.worker = wback[sg.worker] - 1;
          sg.send = sg.send == XS__NONE || !sback[sg.send]
                        ? XS__NONE
                        : sback[sg.send] - 1;
          tl->segments[k++] = sg;
        }
        tl->nsegments = k;
      }
    }
    free(wback);
    free(sback);
  }
  xs_program_free(x);
  free(fw);
  free(fs);
  if (st) {
    xs_result_free(r);
    return st;
  }
  *out = r;
  return XS_OK;
}

xs_status xs_simulate(const xs_program *p, const xs_profile *prof,
                      const xs_sim_options *sim, xs_result **out,
                      xs_error *err) {
  xs_sim_options defaults = {0, XS_ARB_RR, 0, NULL, 0};
  *out = NULL;
  if (!sim)
    sim = &defaults;
  if (!(sim->packet_B >= 0) || !isfinite(sim->packet_B))
    return xs__fail(err, XS_INVALID, "packet size must be > 0, got %g",
                    sim->packet_B);
  if (sim->arbitration != XS_ARB_RR && sim->arbitration != XS_ARB_FIFO)
    return xs__fail(err, XS_INVALID, "unknown arbitration %d",
                    (int)sim->arbitration);
  /* bound the work before doing it */
  double limit = sim->max_packets > 0 ? sim->max_packets : 1e8, packets = 0;
  for (size_t s = 0; s < p->nsends; s++) {
    const char *cn = xs_program_send_channel(p, s);
    long c = cn ? xs_profile_find_channel(prof, cn)
                : (long)xs_profile_default_channel(prof);
    const xs_channel *ch = xs_profile_channel(prof, c < 0 ? 0 : (size_t)c);
    double P = sim->packet_B > 0 ? sim->packet_B
               : ch && ch->packet_B > 0 ? ch->packet_B
                                        : 256;
    packets += ceil(xs_program_send_bytes(p, s) / P) *
               (double)xs_program_worker_copies(p, xs_program_send_worker(p, s));
  }
  if (packets > limit)
    return xs__fail(err, XS_INVALID,
                    "program \"%s\" needs %.3g packets, more than the limit of "
                    "%.3g: use larger packets (--packet-bytes) or xstage predict",
                    p->name, packets, limit);
  xs_eval_options o = {1, sim->summary_only, NULL, sim->timeline};
  if (p->finished && p->copies_sum > (double)p->nworkers) {
    /* the copies written out must stay what a program may expand to */
    double ops = 0;
    for (size_t w = 0; w < p->nworkers; w++)
      ops += (double)p->workers[w].nops * p->workers[w].copies;
    if (ops > 16777216.0 || p->copies_sum > 1048576.0)
      return xs__fail(err, XS_INVALID,
                      "program \"%s\" has %.0f workers and %.0f ops with its "
                      "copies written out, which the packet simulator needs; "
                      "at most 1048576 and 16777216: use xstage predict",
                      p->name, p->copies_sum, ops);
    return simulate_copies(p, prof, &o, sim, out, err);
  }
  return run_model(p, prof, XS_MODEL_SIM, &o, sim, NULL, out, err);
}

/* Every time an evaluation reaches is at most every compute, overhead and
 * latency one after another plus every byte at the slowest rate any worker
 * may get (each of n sharing workers gets at least 1/n of it): refuse a
 * program whose finite numbers add up past what a double holds, before
 * they turn into infinities and NaNs on the way. */
static xs_status check_overflow(const xs_program *p, const xs_profile *prof,
                                const xs__chan *chans, size_t nch, xs_error *err) {
  double slowest = INFINITY, ovh = 0, lat = 0;
  for (size_t c = 0; c < nch; c++) {
    slowest = fmin(slowest, fmin(fmin(chans[c].worker_Bps, chans[c].inject_Bps),
                                 chans[c].drain_Bps));
    ovh = fmax(ovh, chans[c].overhead_s);
    lat = fmax(lat, chans[c].latency_s);
  }
  double bound = p->compute_sum + (double)p->nsends * (ovh + lat) +
                 p->bytes_sum * p->copies_sum / slowest;
  if (isfinite(bound))
    return XS_OK;
  char cs[32], bs[32];
  snprintf(cs, sizeof cs, isfinite(p->compute_sum) ? "%.3g" : "more than %.3g",
           isfinite(p->compute_sum) ? p->compute_sum : DBL_MAX);
  snprintf(bs, sizeof bs, isfinite(p->bytes_sum) ? "%.3g" : "more than %.3g",
           isfinite(p->bytes_sum) ? p->bytes_sum : DBL_MAX);
  int other_file = p->src_name && strcmp(p->src_name, p->name) != 0;
  return xs__fail(err, XS_INVALID,
                  "program \"%s\"%s%s%s is too large to evaluate: its computes add "
                  "up to %s s and its sends to %s bytes, times that overflow a "
                  "double on profile \"%s\"",
                  p->name, other_file ? " (" : "", other_file ? p->src_name : "",
                  other_file ? ")" : "", cs, bs, xs_profile_name(prof));
}

void xs__chans_of(const xs_profile *prof, xs_model m, xs__chan *out) {
  for (size_t c = 0; c < xs_profile_channel_count(prof); c++) {
    const xs_channel *pc = xs_profile_channel(prof, c);
    out[c].inject_Bps = pc->inject_Bps;
    out[c].worker_Bps = pc->worker_inject_Bps;
    out[c].drain_Bps = pc->drain_Bps;
    out[c].capacity_B = m == XS_MODEL_BLOCKING ? 0 : pc->capacity_B;
    out[c].latency_s = pc->latency_s;
    out[c].overhead_s = pc->issue_overhead_s;
    out[c].packet_B = pc->packet_B;
    out[c].worker_inflight_B = pc->worker_inflight_B;
  }
}

/* Bind, allocate, compute the baselines' terms, then run one model. */
static xs_status run_model(const xs_program *p, const xs_profile *prof,
                           xs_model model, const xs_eval_options *opt,
                           const xs_sim_options *sim, xs__eval_extra *extra,
                           xs_result **out, xs_error *err) {
  size_t nch = xs_profile_channel_count(prof);
  if (extra)
    extra->stopped = 0;
  if (!p->finished || nch == 0) {
    if (opt)
      xs_result_free(opt->reuse); /* consumed either way */
    return !p->finished ? xs__fail(err, XS_INVALID,
                                   "program \"%s\" is not finished: call "
                                   "xs_program_finish first",
                                   p->name)
                        : xs__fail(err, XS_INVALID, "profile \"%s\" has no channels",
                                   xs_profile_name(prof));
  }
  xs_eval_options defaults = {0, 0, NULL, NULL};
  if (!opt)
    opt = &defaults;

  /* a planner's channels and binding, resolved once, else by name */
  int typed = extra && extra->chans && extra->chan_map && extra->nchans == nch;
  uint32_t *map = typed ? NULL : malloc((p->nchan_names + 1) * sizeof *map);
  xs__chan *chans = typed ? NULL : malloc(nch * sizeof *chans);
  xs_result *r = opt->reuse;
  if (r) {
    xs_result keep = *r;
    memset(r, 0, sizeof *r);
    r->workers = keep.workers;
    r->sends = keep.sends;
    r->channels = keep.channels;
    r->workers_cap = keep.workers_cap;
    r->sends_cap = keep.sends_cap;
    r->channels_cap = keep.channels_cap;
  } else {
    r = calloc(1, sizeof *r);
  }
  xs_status st = XS_OK;
  if ((!typed && (!map || !chans)) || !r) {
    st = xs__fail(err, XS_NOMEM, "out of memory");
    goto done;
  }
  if (!typed && (st = bind_channels(p, prof, map, err)))
    goto done;
  if (!typed)
    xs__chans_of(prof, model, chans);
  const xs__chan *ch = typed ? extra->chans : chans;
  const uint32_t *cmap = typed ? extra->chan_map : map;
  if ((st = check_overflow(p, prof, ch, nch, err)))
    goto done;

  r->model = model;
  r->nworkers = p->nworkers;
  r->nsends = p->nsends;
  r->nchannels = nch;
  if (take((void **)&r->channels, &r->channels_cap, nch,
           sizeof *r->channels, 1)) {
    st = xs__fail(err, XS_NOMEM, "out of memory");
    goto done;
  }
  /* serial and ideal terms (docs/model.md "Baselines"), and the bytes of
   * each channel, in one pass over the ops; the one-worker fast path
   * computes them in its own pass */
  int fast = p->nworkers == 1 && p->workers[0].copies == 1 &&
             p->ncounters == 0 && !opt->event_driven && !opt->timeline &&
             !(extra && extra->sums) &&
             (model == XS_MODEL_BURSTGAP || model == XS_MODEL_BLOCKING);
  /* the planners' mode of burstgap or blocking (xs__eval.plan): a planner
   * reads the makespan and the workers' figures, not the baselines' terms
   * (left 0) */
  int plan = !fast && extra && extra->plan && opt->summary_only && !opt->timeline &&
             (model == XS_MODEL_BURSTGAP || model == XS_MODEL_BLOCKING) &&
             !xs__reference();
  double compute_term = 0;
  for (size_t w = 0; w < p->nworkers && !fast && !plan; w++) {
    const xs__worker *wk = &p->workers[w];
    double busy = 0;
    for (size_t i = 0; i < wk->nops; i++) {
      const xs__op *op = &wk->ops[i];
      if (op->kind == XS_OP_COMPUTE) {
        busy += op->value;
      } else if (op->kind == XS_OP_SEND) {
        uint32_t c = cmap[p->send_chan[op->aux]];
        busy += ch[c].overhead_s;
        r->channels[c].bytes += op->value * wk->copies;
        r->channels[c].sends += wk->copies;
      }
    }
    if (busy > compute_term)
      compute_term = busy;
  }
  double comm_term = 0;
  for (size_t c = 0; c < nch; c++) {
    if (!r->channels[c].sends)
      continue;
    double t = xs__chan_comm_s(&ch[c], r->channels[c].bytes);
    if (t > comm_term)
      comm_term = t;
  }
  r->compute_term_s = compute_term;
  r->comm_term_s = comm_term;
  if (model == XS_MODEL_SERIAL || model == XS_MODEL_IDEAL) {
    r->makespan_s = model == XS_MODEL_SERIAL ? compute_term + comm_term
                                             : fmax(compute_term, comm_term);
    r->issue_done_s = compute_term;
    r->nworkers = r->nsends = 0;
    free(r->workers);
    free(r->sends);
    r->workers = NULL;
    r->sends = NULL;
    r->workers_cap = r->sends_cap = 0;
    goto done;
  }

  /* every send's result is written by the evaluators: no need to zero */
  if (take((void **)&r->workers, &r->workers_cap, p->nworkers,
           sizeof *r->workers, 1) ||
      (!opt->summary_only &&
       take((void **)&r->sends, &r->sends_cap, p->nsends, sizeof *r->sends,
            0))) {
    st = xs__fail(err, XS_NOMEM, "out of memory");
    goto done;
  }
  if (opt->summary_only) {
    r->nsends = 0;
    free(r->sends); /* summary results carry no sends */
    r->sends = NULL;
    r->sends_cap = 0;
  }
  xs__eval ev = {p,
                 ch,
                 nch,
                 cmap,
                 model == XS_MODEL_BLOCKING,
                 opt->summary_only,
                 opt->timeline,
                 sim ? sim->packet_B : 0,
                 sim ? (int)sim->arbitration : 0,
                 extra ? extra->sums : NULL,
                 extra ? extra->stop_s : INFINITY,
                 extra ? &extra->stopped : NULL,
                 plan};
  if (model == XS_MODEL_SIM) {
    st = xs__simulate(&ev, r, err);
  } else if (fast) {
    r->fast_path = 1;
    st = xs__eval_closed(&ev, r, err);
  } else {
    st = xs__eval_fluid(&ev, r, err);
  }
done:
  free(map);
  free(chans);
  if (st) {
    xs_result_free(r);
    return st;
  }
  *out = r;
  return XS_OK;
}
