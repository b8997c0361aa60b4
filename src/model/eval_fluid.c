/*
 * eval_fluid.c: the exact event-driven evaluation of the fluid Burst-Gap
 * model for any number of workers and channels (docs/model.md).
 *
 * Rates are constant between events, and events are: an op of a worker
 * ending (compute, overhead, a wait or fence released at a known delivery
 * time), a sender finishing its bytes, and a backlog reaching C or 0. All
 * active senders on a channel get the same rate (x = min(r_w, R_inj/n), or
 * R_drain/n under backpressure), so, as in a processor-sharing queue, each
 * channel keeps V(t), the bytes served per active sender, and a min-heap of
 * the senders' finishing marks V_start + B (4-ary): a rate change costs
 * O(log n).
 * S(t) integrates (1 - r/x) over throttled time, so a send's stall is
 * S_end - S_start. The workers' ops run in the worker machine (workers.c);
 * this file is the channels. Next-event times sit in two indexed heaps (keys
 * in the nodes, for locality), one entry per worker and one per channel, so
 * each event costs O(log workers + log channels); channels change key at
 * every event, and with one or a few channels their heap is nearly free.
 * Ties are broken by entity index, which makes the evaluation deterministic.
 */
#include "model/iheap.h"

#include <math.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>

static atomic_int reference_on;
void xs__set_reference(int on) { atomic_store(&reference_on, on != 0); }
int xs__reference(void) { return atomic_load(&reference_on); }

enum { EV_FINISH = 1, EV_FULL = 2, EV_EMPTY = 4 };

/* a sender's mark: key = V at which its last byte is admitted, id = worker */
typedef xs__hnode mark;

typedef struct {
  double t, q, V, S; /* state at time t */
  double wn;         /* active senders, each worker counted with its copies */
  double r, dq, sr;  /* per-sender rate, dq/dt, stall rate */
  double x;          /* unthrottled per-sender rate */
  int full;          /* q == C exactly */
  int kind;          /* what its scheduled event is */
  double t_empty;    /* the planners' mode: when its backlog, with no
                        sender, reaches 0 (the event not scheduled) */
  int dirty;
  mark *heap;
  size_t n, cap;
} chan_state;

typedef struct {
  const xs__eval *ev;
  size_t nc;
  xs__wm wm;
  chan_state *cs;
  xs__iheap ch;  /* next event of each channel */
  double *S0;    /* per worker: S of its channel when its send began */
  double *tol;   /* per worker: how near V its mark counts as reached */
  uint32_t *dirty;
  size_t ndirty;
  xs_result *r;
  uint64_t events;
  size_t event_chan; /* the channel whose event runs now; nc: a worker's */
} fluid;

static inline double dmin(double a, double b) { return b < a ? b : a; }

/* ---- per-channel sender heap keyed by (mark, worker): 4-ary like the
 * indexed heaps, not indexed; slots [n, n+3] always hold sentinels ---- */

static int mpush(chan_state *c, mark m) {
  if (xs__grow(&c->heap, &c->cap, c->n + 5, sizeof *c->heap))
    return -1;
  size_t i = c->n++;
  for (size_t k = c->n; k < c->n + 4; k++)
    c->heap[k] = XS__HSENTINEL;
  while (i > 0) {
    size_t up = (i - 1) / 4;
    if (!xs__hbefore(&m, &c->heap[up]))
      break;
    c->heap[i] = c->heap[up];
    i = up;
  }
  c->heap[i] = m;
  return 0;
}

static mark mpop(chan_state *c) {
  mark top = c->heap[0];
  mark last = c->heap[--c->n];
  c->heap[c->n] = XS__HSENTINEL;
  if (c->n == 0)
    return top;
  size_t i = 0;
  for (;;) {
    size_t k = 4 * i + 1;
    if (k >= c->n)
      break;
    size_t m = xs__hleast4(c->heap, k);
    if (!xs__hbefore(&c->heap[m], &last))
      break;
    c->heap[i] = c->heap[m];
    i = m;
  }
  c->heap[i] = last;
  return top;
}

/* ---- channels ---- */

static inline void advance_to(fluid *f, size_t c, double now);

/* The planners' mode: a channel with no sender whose backlog drains to 0
 * has no event scheduled for it; advancing it past that time does what
 * the event would have done there (the backlog set to 0, then dq 0), in
 * the order events run: before a worker's at that very time, and before
 * another channel's of a higher index. The same numbers as the event. */
static inline void advance(fluid *f, size_t c, double now) {
  chan_state *s = &f->cs[c];
  if (s->t_empty <= now &&
      (s->t_empty < now || (f->event_chan < f->nc && f->event_chan > c))) {
    advance_to(f, c, s->t_empty);
    s->q = 0;
    s->dq = 0;
    s->t_empty = INFINITY;
  }
  advance_to(f, c, now);
}

static inline void advance_to(fluid *f, size_t c, double now) {
  chan_state *s = &f->cs[c];
  double dt = now - s->t;
  if (dt <= 0)
    return;
  const xs__chan *k = &f->ev->chans[c];
  s->V += s->r * dt;
  s->S += s->sr * dt;
  if (s->dq != 0) {
    s->q += s->dq * dt;
    if (s->dq > 0 && s->q >= k->capacity_B) {
      s->q = k->capacity_B;
      s->full = 1;
    } else if (s->dq < 0 && s->q <= 0) {
      s->q = 0;
    }
  }
  xs_channel_result *cr = &f->r->channels[c];
  if (s->q > cr->peak_backlog_B)
    cr->peak_backlog_B = s->q;
  s->t = now;
  if (f->ev->tl)
    xs__tl_point(f->ev->tl, c, now, s->q);
}

static void mark_dirty(fluid *f, size_t c) {
  if (!f->cs[c].dirty) {
    f->cs[c].dirty = 1;
    f->dirty[f->ndirty++] = (uint32_t)c;
  }
}

/* Rates for the current senders (docs/model.md "The Burst-Gap model") and
 * the channel's next event. The channel is at time now. */
static void recompute(fluid *f, size_t c, double now) {
  chan_state *s = &f->cs[c];
  const xs__chan *k = &f->ev->chans[c];
  double rd = k->drain_Bps;
  s->dirty = 0;
  s->t_empty = INFINITY;
  if (s->n == 0) {
    s->r = s->sr = s->x = 0;
    s->dq = s->q > 0 ? -rd : 0;
  } else {
    double n = s->wn;
    double x = dmin(k->worker_Bps, k->inject_Bps / n);
    double in = n * x;
    s->x = x;
    if (s->full && in > rd) {
      s->r = rd / n;
      s->dq = 0;
      s->sr = 1 - s->r / x;
    } else if (s->q <= 0 && in <= rd) {
      s->r = x;
      s->dq = 0;
      s->sr = 0;
    } else {
      s->r = x;
      s->dq = in - rd;
      s->sr = 0;
    }
  }
  if (s->dq < 0 && k->capacity_B > 0)
    s->full = 0;
  double dt = INFINITY;
  int kind = 0;
  if (s->n > 0) {
    double left = s->heap[0].key - s->V;
    dt = left > 0 ? left / s->r : 0;
    kind = EV_FINISH;
  }
  if (s->dq > 0 && isfinite(k->capacity_B)) {
    double tq = (k->capacity_B - s->q) / s->dq;
    if (tq < 0)
      tq = 0;
    if (tq < dt) {
      dt = tq;
      kind = EV_FULL;
    } else if (tq == dt) {
      kind |= EV_FULL;
    }
  } else if (s->dq < 0 && f->ev->plan && s->n == 0) {
    s->t_empty = now + s->q / -s->dq; /* no event (advance) */
  } else if (s->dq < 0) {
    double tq = s->q / -s->dq;
    if (tq < dt) {
      dt = tq;
      kind = EV_EMPTY;
    } else if (tq == dt) {
      kind |= EV_EMPTY;
    }
  }
  s->kind = kind;
  xs__iheap_set(&f->ch, (uint32_t)c, kind ? now + dt : INFINITY);
}

/* ---- the worker machine's hooks ---- */

static void recompute_dirty(fluid *f, double now) {
  for (size_t i = 0; i < f->ndirty; i++)
    recompute(f, f->dirty[i], now);
  f->ndirty = 0;
}

static xs_status join(void *ctx, size_t w, uint32_t sid, size_t c,
                      double bytes, double now, xs__wm_end *end,
                      xs_error *err) {
  fluid *f = ctx;
  (void)sid;
  advance(f, c, now);
  chan_state *s = &f->cs[c];
  f->S0[w] = s->S;
  /* rounding in V, relative to the send: not to V, which holds every byte
   * the channel has served (after 1e18 bytes, 1e-12 of V is 1 MB) */
  f->tol[w] = 1e-12 * bytes + 1e-9;
  int alone = s->n == 0;
  mark m = {s->V + bytes, (uint32_t)w};
  if (mpush(s, m))
    return xs__fail(err, XS_NOMEM, "out of memory");
  s->wn += f->ev->prog->workers[w].copies;
  mark_dirty(f, c);
  if (!end || !alone)
    return XS_OK;
  /* nothing else is due now: what the main loop would do next is
   * recompute the rates and take the earliest event. When that is this
   * send's end, before any worker's timer (workers go first at equal
   * times) and first among the channels (ties to the lower index), and
   * not past the stop, it is taken here. */
  recompute_dirty(f, now);
  double tf = xs__iheap_top(&f->ch);
  if (s->kind != EV_FINISH || xs__iheap_top_id(&f->ch) != c ||
      !(tf < xs__wm_next(&f->wm)) || tf > f->wm.stop_s)
    return XS_OK;
  f->events++;
  f->event_chan = c;
  advance(f, c, tf);
  if (s->heap[0].key > s->V)
    s->V = s->heap[0].key;
  mpop(s);
  s->wn = 0;
  mark_dirty(f, c);
  const xs__chan *k = &f->ev->chans[c];
  *end = (xs__wm_end){tf, tf + s->q / k->drain_Bps + k->latency_s, s->S - f->S0[w], 1};
  return XS_OK;
}

static double signal_at(void *ctx, size_t c, double now) {
  fluid *f = ctx;
  advance(f, c, now);
  const xs__chan *k = &f->ev->chans[c];
  return now + f->cs[c].q / k->drain_Bps + k->latency_s;
}

/* A channel's scheduled event at time now: snap the backlog, let every
 * sender whose mark is reached finish. */
static xs_status channel_event(fluid *f, size_t c, double now,
                               xs_error *err) {
  chan_state *s = &f->cs[c];
  const xs__chan *k = &f->ev->chans[c];
  advance(f, c, now);
  if (s->kind & EV_FULL) {
    s->q = k->capacity_B;
    s->full = 1;
  }
  if (s->kind & EV_EMPTY)
    s->q = 0;
  if (s->q > f->r->channels[c].peak_backlog_B)
    f->r->channels[c].peak_backlog_B = s->q;
  if (f->ev->tl)
    xs__tl_point(f->ev->tl, c, now, s->q);
  mark_dirty(f, c);
  if (!(s->kind & EV_FINISH) || s->n == 0)
    return XS_OK;
  if (s->heap[0].key > s->V)
    s->V = s->heap[0].key;
  /* pop first, then run: a finished worker may rejoin this channel */
  size_t nfin = 0;
  uint32_t stackbuf[64], *fin = stackbuf;
  while (s->n > 0 && s->heap[0].key <= s->V + f->tol[s->heap[0].id]) {
    if (nfin == 64 && fin == stackbuf) {
      fin = malloc(s->n * sizeof *fin + 64 * sizeof *fin);
      if (!fin)
        return xs__fail(err, XS_NOMEM, "out of memory");
      memcpy(fin, stackbuf, sizeof stackbuf);
    }
    fin[nfin] = mpop(s).id;
    s->wn -= f->ev->prog->workers[fin[nfin]].copies;
    nfin++;
  }
  if (s->n == 0)
    s->wn = 0; /* no drift from adding and subtracting */
  /* every finisher's last byte is in now, behind the same backlog */
  double d = now + s->q / k->drain_Bps + k->latency_s;
  xs_status st = XS_OK;
  /* each finisher's send ends and it runs, in turn: the later ones are
   * still due while the earlier run */
  for (size_t i = 0; i < nfin && !st; i++) {
    f->wm.solo = i + 1 == nfin;
    st = xs__wm_send_done(&f->wm, fin[i], now, d, s->S - f->S0[fin[i]], err);
  }
  if (fin != stackbuf)
    free(fin);
  return st;
}

xs_status xs__eval_fluid(const xs__eval *ev, xs_result *r, xs_error *err) {
  static const xs__wm_ops hooks = {join, signal_at};
  fluid f;
  memset(&f, 0, sizeof f);
  f.ev = ev;
  f.r = r;
  f.nc = ev->nchans;
  f.cs = calloc(f.nc, sizeof *f.cs);
  f.S0 = calloc(ev->prog->nworkers + 1, sizeof *f.S0);
  f.tol = calloc(ev->prog->nworkers + 1, sizeof *f.tol);
  f.dirty = malloc(f.nc * sizeof *f.dirty);
  int bad = xs__wm_init(&f.wm, ev, r, &hooks, &f) |
            xs__iheap_init(&f.ch, f.nc);
  xs_status st = XS_OK;
  if (bad || !f.cs || !f.S0 || !f.tol || !f.dirty) {
    st = xs__fail(err, XS_NOMEM, "out of memory");
    goto done;
  }
  for (size_t c = 0; c < f.nc; c++) {
    f.cs[c].full = ev->chans[c].capacity_B == 0;
    f.cs[c].t_empty = INFINITY;
  }
  f.event_chan = f.nc;
  double now = 0;
  st = xs__wm_start(&f.wm, err);
  now = f.wm.now; /* later than 0 when a send ended at once */
  while (!st) {
    /* Rates are recomputed once the workers due now have all run: a
     * channel changed at now has advanced to now, so its old rates act
     * over no time, and its stale next event is not before now (workers
     * go first at equal times). A batch of SMs that end their computes
     * together then costs one recomputation, not one each. */
    double tw = xs__wm_next(&f.wm);
    if (f.ndirty && !(tw <= now)) {
      for (size_t i = 0; i < f.ndirty; i++)
        recompute(&f, f.dirty[i], now);
      f.ndirty = 0;
    }
    /* the earlier of the two heaps' tops; at equal times workers first */
    double tc = xs__iheap_top(&f.ch);
    if (!(tw < INFINITY) && !(tc < INFINITY))
      break;
    f.events++;
    if (tw <= tc) {
      now = tw;
      f.event_chan = f.nc;
      st = xs__wm_timer(&f.wm, err);
    } else {
      now = tc;
      f.event_chan = xs__iheap_top_id(&f.ch);
      st = channel_event(&f, f.event_chan, now, err);
    }
    if (f.wm.now > now) /* a send ended at once */
      now = f.wm.now;
    /* every event is at most the makespan */
    if (f.wm.stopped || now > f.wm.stop_s) {
      *ev->stopped = 1;
      break;
    }
  }
  /* a backlog's drain to 0 that the reference would still run as an
   * event, past the stop, stops it there */
  for (size_t c = 0; c < f.nc && ev->plan && ev->stopped && !st; c++)
    if (f.cs[c].t_empty < INFINITY && f.cs[c].t_empty > f.wm.stop_s)
      *ev->stopped = 1;
  if (!st && !(ev->stopped && *ev->stopped))
    st = xs__wm_finish(&f.wm, err);
  r->events = f.events;
done:
  if (f.cs)
    for (size_t c = 0; c < f.nc; c++)
      free(f.cs[c].heap);
  free(f.cs);
  free(f.S0);
  free(f.tol);
  free(f.dirty);
  xs__wm_free(&f.wm);
  xs__iheap_free(&f.ch);
  return st;
}
