/*
 * probe.c: the pipe and tcp backends: the burst sweep that measures a
 * channel, and the replay of a one-worker program on a real channel. The
 * table that dispatches to every backend is backends.c.
 * Docs: docs/probe.md.
 */
#define _GNU_SOURCE
#include "backend.h"

#include <errno.h>
#include <sched.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

/* Can the pipe or tcp channel open here? */
int xs__chan_available(const char *name, char *why, size_t size) {
  xs__rchan c;
  xs_error e;
  xs_status st = xs__rchan_open(&c, name, 65536, 0, 1, &e);
  xs__rchan_close(&c);
  if (st) {
    snprintf(why, size, "%s", e.message);
    return 0;
  }
  return 1;
}

static int push_sample(xs_samples *s, double bytes, double gap, double issue,
                       double deliver, unsigned rep) {
  if (xs__grow(&s->rows, &s->cap, s->n + 1, sizeof *s->rows))
    return -1;
  s->rows[s->n++] = (xs_sample){bytes, gap, issue, deliver, rep};
  return 0;
}

xs_status xs__chan_probe(const char *backend, const xs_probe_options *opt,
                         xs_samples **out, xs_error *err) {
  *out = NULL;
  xs_status st;
  int is_pipe = strcmp(backend, "pipe") == 0;
  double cap = opt->capacity_B > 0 ? opt->capacity_B : is_pipe ? 1048576 : 262144;
  double maxb = opt->max_bytes > 0 ? opt->max_bytes : 4 * cap;
  double minb = opt->min_bytes > 0 ? opt->min_bytes : cap / 16;
  unsigned nsz = opt->sizes ? opt->sizes : 14, reps = opt->repeats ? opt->repeats : 5;
  unsigned warm = opt->warmup ? opt->warmup : 2;
  double timeout = opt->timeout_s > 0 ? opt->timeout_s : 30;
  if (!(minb >= 1) || !(maxb >= minb) || maxb > 1e10 || nsz > 1000 || reps > 1000)
    return xs__fail(err, XS_INVALID,
                    "burst sizes %g to %g bytes in %u sizes, %u repeats: expected "
                    "1 <= min <= max <= 1e10, at most 1000 of each",
                    minb, maxb, nsz, reps);
  double deadline = xs__now_s() + timeout;
  xs_samples *s = calloc(1, sizeof *s);
  char *buf = calloc(1, XS__CHUNK_BUF);
  xs__rchan c;
  size_t marks = (size_t)(warm + (nsz * reps) * 4 + 16);
  if (!s || !buf) {
    free(s);
    free(buf);
    return xs__fail(err, XS_NOMEM, "out of memory");
  }
  snprintf(s->backend, sizeof s->backend, "%s", backend);
  if ((st = xs__rchan_open(&c, backend, cap, opt->drain_Bps, marks, err)))
    goto done;
  s->capacity_B = c.capacity_B;
  s->drain_Bps = opt->drain_Bps;
  double *sizes = malloc(nsz * sizeof *sizes);
  if (!sizes) {
    st = xs__fail(err, XS_NOMEM, "out of memory");
    goto done;
  }
  for (unsigned i = 0; i < nsz; i++)
    sizes[i] = round(nsz == 1 ? maxb : minb * pow(maxb / minb, (double)i / (nsz - 1)));
  unsigned total = warm + nsz * reps, count = 0;
  for (unsigned k = 0; k < total && !st; k++) {
    int warmup = k < warm;
    double b = warmup ? sizes[nsz - 1] : sizes[(k - warm) % nsz];
    unsigned rep = warmup ? 0 : (k - warm) / nsz;
    for (int attempt = 0;; attempt++) {
      /* the waits below look at the clock and cancel only while they
       * wait: look here too, so that a channel that never makes them wait
       * stops in time */
      if ((opt->cancel && *opt->cancel) || xs__now_s() > deadline)
        goto stopped;
      /* start from an empty channel, and a reader that has been idle */
      if (xs__rchan_drained(&c, deadline, opt->cancel) < 0)
        goto stopped;
      double t_idle = xs__now_s();
      usleep(1000);
      size_t mark;
      double t0 = xs__now_s();
      double t_issue = xs__rchan_send(&c, buf, (size_t)b, deadline, opt->cancel, &mark);
      if (t_issue < 0)
        goto stopped;
      double t_del = xs__rchan_delivered(&c, mark, deadline, opt->cancel);
      if (t_del < 0)
        goto stopped;
      double issue = t_issue - t0, deliver = t_del - t0;
      /* a reader that found the channel empty mid-burst, or slept late,
       * delivers later than the drain allows: the drain lost time */
      int starved = opt->drain_Bps > 0 &&
                    deliver > 1.05 * b / opt->drain_Bps +
                                  3.0 * (double)c.chunk / opt->drain_Bps + 2e-4;
      if (starved && attempt < 4) {
        s->retried++;
        continue;
      }
      if (!warmup && push_sample(s, b, t0 - t_idle, issue, deliver, rep)) {
        st = xs__fail(err, XS_NOMEM, "out of memory");
        break;
      }
      break;
    }
    count++;
    if (opt->progress && opt->progress(opt->progress_ctx, (double)count / total))
      goto stopped;
    if (c.nmarks + 8 >= c.max_marks) { /* reuse the marks: the channel is empty */
      if (xs__rchan_drained(&c, deadline, opt->cancel) < 0)
        goto stopped;
      pthread_mutex_lock(&c.mu);
      c.nmarks = c.next_mark = 0;
      pthread_mutex_unlock(&c.mu);
    }
  }
  free(sizes);
  goto done;
stopped:
  free(sizes);
  st = opt->cancel && *opt->cancel
           ? xs__fail(err, XS_TIMEOUT, "%s probe interrupted", backend)
           : xs__fail(err, XS_TIMEOUT,
                      "%s probe: not done within --timeout %g s (a slower drain "
                      "rate or larger bursts need more time)",
                      backend, timeout);
done:
  xs__rchan_close(&c);
  free(buf);
  if (st) {
    xs_samples_free(s);
    return st;
  }
  *out = s;
  return XS_OK;
}

/* ---- replay ---- */

xs_status xs__chan_replay_check(const xs_program *p, const char *backend,
                                const xs_probe_options *opt, xs_error *err) {
  if (opt->cuda_widths || opt->cuda_threads)
    return xs__fail(err, XS_INVALID, "width= and threads= are for the CUDA channels, not %s",
                    backend);
  if (p->nworkers != 1)
    return xs__fail(err, XS_INVALID,
                    "replay runs one-worker programs on %s (this one has %zu workers)",
                    backend, p->nworkers);
  return XS_OK;
}

xs_status xs__chan_replay(const xs_program *p, const char *backend,
                          const xs_probe_options *opt, xs_result **out,
                          xs_error *err) {
  *out = NULL;
  xs_status st = xs__chan_replay_check(p, backend, opt, err);
  if (st)
    return st;
  int is_pipe = strcmp(backend, "pipe") == 0;
  double cap = opt->capacity_B > 0 ? opt->capacity_B : is_pipe ? 1048576 : 262144;
  double timeout = opt->timeout_s > 0 ? opt->timeout_s : 30;
  double deadline = xs__now_s() + timeout;
  xs_result *r = calloc(1, sizeof *r);
  char *buf = calloc(1, XS__CHUNK_BUF);
  size_t *marks = malloc((p->nsends + 1) * sizeof *marks);
  xs__rchan c;
  if (r) {
    r->workers = calloc(1, sizeof *r->workers);
    r->sends = calloc(p->nsends + 1, sizeof *r->sends);
    r->channels = calloc(1, sizeof *r->channels);
  }
  if (!r || !buf || !marks || !r->workers || !r->sends || !r->channels) {
    xs_result_free(r);
    free(buf);
    free(marks);
    return xs__fail(err, XS_NOMEM, "out of memory");
  }
  r->model = XS_MODEL_BURSTGAP;
  r->nworkers = 1;
  r->nsends = p->nsends;
  r->nchannels = 1;
  if ((st = xs__rchan_open(&c, backend, cap, opt->drain_Bps, p->nsends + 2, err)))
    goto done;
  /* warm up: one burst of the channel's size faults in its buffers and
   * wakes the reader, as the probe's untimed bursts do */
  size_t warm;
  if (xs__rchan_send(&c, buf, (size_t)c.capacity_B, deadline, opt->cancel, &warm) < 0 ||
      xs__rchan_delivered(&c, warm, deadline, opt->cancel) < 0)
    goto stopped;
  usleep(1000);
  const xs__worker *wk = &p->workers[0];
  double t0 = xs__now_s(), last = 0;
  xs_worker_result *w = r->workers;
  for (size_t i = 0; i < wk->nops && !st; i++) {
    const xs__op *op = &wk->ops[i];
    double now = xs__now_s() - t0;
    switch (op->kind) {
    case XS_OP_COMPUTE: {
      /* a timed spin: the worker is busy, as a compute op is; it yields
       * the CPU at each turn so that a reader sharing the core still runs */
      double until = xs__now_s() + op->value;
      for (double t = xs__now_s(); t < until; t = xs__now_s()) {
        if ((opt->cancel && *opt->cancel) || t > deadline)
          goto stopped;
        sched_yield();
      }
      w->compute_s += op->value;
      break;
    }
    case XS_OP_SEND: {
      uint32_t s = op->aux;
      double t = xs__rchan_send(&c, buf, (size_t)op->value, deadline, opt->cancel, &marks[s]);
      if (t < 0)
        goto stopped;
      r->sends[s].issue_start_s = now;
      r->sends[s].issue_end_s = t - t0;
      w->issue_s += t - t0 - now;
      r->channels[0].bytes += op->value;
      r->channels[0].sends++;
      break;
    }
    default: { /* wait or fence: on real delivery */
      size_t from = op->kind == XS_OP_WAIT ? op->aux : 0;
      size_t to = op->kind == XS_OP_WAIT ? op->aux + 1 : p->nsends;
      for (size_t s = from; s < to; s++) {
        if (p->send_worker[s] != 0 || r->sends[s].issue_end_s == 0)
          continue; /* not issued yet */
        if (xs__rchan_delivered(&c, marks[s], deadline, opt->cancel) < 0)
          goto stopped;
      }
      w->blocked_s += xs__now_s() - t0 - now;
      break;
    }
    }
  }
  w->finish_s = xs__now_s() - t0;
  for (size_t s = 0; s < p->nsends; s++) {
    double t = xs__rchan_delivered(&c, marks[s], deadline, opt->cancel);
    if (t < 0)
      goto stopped;
    r->sends[s].deliver_s = t - t0;
    r->sends[s].xstage_s = r->sends[s].deliver_s - r->sends[s].issue_end_s;
    if (t - t0 > last)
      last = t - t0;
  }
  r->issue_done_s = w->finish_s;
  r->makespan_s = fmax(w->finish_s, last);
  w->stall_s = w->blocked_s;
  goto done;
stopped:
  st = xs__fail(err, XS_TIMEOUT, "replay on %s: %s", backend,
                opt->cancel && *opt->cancel ? "interrupted"
                                            : "not done within the timeout");
done:
  xs__rchan_close(&c);
  free(buf);
  free(marks);
  if (st) {
    xs_result_free(r);
    return st;
  }
  *out = r;
  return XS_OK;
}
