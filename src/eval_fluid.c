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
 * the senders' finishing marks V_start + B: a rate change costs O(log n).
 * S(t) integrates (1 - r/x) over throttled time, so a send's stall is
 * S_end - S_start. Next-event times sit in two indexed 4-ary heaps (keys
 * in the nodes, for locality), one entry per worker and one per channel, so
 * each event costs O(log workers + log channels); channels change key at
 * every event, and with one or a few channels their heap is nearly free.
 * Ties are broken by entity index, which makes the evaluation deterministic.
 */
#include "internal.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

enum { EV_FINISH = 1, EV_FULL = 2, EV_EMPTY = 4 };
enum { W_READY, W_COMPUTE, W_OVERHEAD, W_SENDING, W_BLOCKED, W_WAITING,
       W_DONE };

typedef struct {
  double key; /* V at which the sender's last byte is admitted */
  uint32_t w;
} mark;

typedef struct {
  double t, q, V, S; /* state at time t */
  double r, dq, sr;  /* per-sender rate, dq/dt, stall rate */
  double x;          /* unthrottled per-sender rate */
  int full;          /* q == C exactly */
  int kind;          /* what its scheduled event is */
  int dirty;
  mark *heap;
  size_t n, cap;
} chan_state;

typedef struct {
  size_t pc;
  int state;
  int overhead_done, pending_fence;
  uint32_t send;
  double t_block, issue_start, S0, max_deliver;
  double compute_s, issue_s, overhead_s, blocked_s, stall_s, finish_s;
  uint32_t next_waiter;
} worker_state;

typedef struct {
  const xs__eval *ev;
  const xs_program *p;
  size_t nw, nc;
  worker_state *ws;
  chan_state *cs;
  xs__iheap wh, ch; /* next events of workers, of channels */
  /* deliveries known so far (NAN until the send's last byte is in) */
  double *deliver;
  uint32_t *waiters; /* per send: first worker waiting on it */
  uint32_t *dirty;
  size_t ndirty;
  xs_result *r;
  double last_deliver;
  uint64_t events;
} fluid;

static void set_key(fluid *f, uint32_t w, double t) { xs__iheap_set(&f->wh, w, t); }

static inline double dmin(double a, double b) { return b < a ? b : a; }

/* ---- per-channel sender heap keyed by (mark, worker) ---- */

static int mless(const mark *a, const mark *b) {
  return a->key < b->key || (a->key == b->key && a->w < b->w);
}

static int mpush(chan_state *c, mark m) {
  if (xs__grow(&c->heap, &c->cap, c->n + 1, sizeof *c->heap))
    return -1;
  size_t i = c->n++;
  c->heap[i] = m;
  while (i > 0 && mless(&c->heap[i], &c->heap[(i - 1) / 2])) {
    mark t = c->heap[i];
    c->heap[i] = c->heap[(i - 1) / 2];
    c->heap[(i - 1) / 2] = t;
    i = (i - 1) / 2;
  }
  return 0;
}

static mark mpop(chan_state *c) {
  mark top = c->heap[0];
  c->heap[0] = c->heap[--c->n];
  size_t i = 0;
  for (;;) {
    size_t l = 2 * i + 1, m = i;
    if (l < c->n && mless(&c->heap[l], &c->heap[m]))
      m = l;
    if (l + 1 < c->n && mless(&c->heap[l + 1], &c->heap[m]))
      m = l + 1;
    if (m == i)
      break;
    mark t = c->heap[i];
    c->heap[i] = c->heap[m];
    c->heap[m] = t;
    i = m;
  }
  return top;
}

/* ---- channels ---- */

static void advance(fluid *f, size_t c, double now) {
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
  if (s->n == 0) {
    s->r = s->sr = s->x = 0;
    s->dq = s->q > 0 ? -rd : 0;
  } else {
    double n = (double)s->n;
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

/* ---- workers ---- */

static xs_status run_worker(fluid *f, size_t w, double now, xs_error *err);

static void block_until(fluid *f, size_t w, double now, double until) {
  worker_state *ws = &f->ws[w];
  if (f->ev->tl)
    xs__tl_segment(f->ev->tl, XS_SEG_BLOCKED, w, XS__NONE, now, until);
  ws->state = W_BLOCKED;
  ws->t_block = now;
  set_key(f, (uint32_t)w, until);
}

/* The send of worker w on channel c has its last byte in at time now. */
static xs_status send_done(fluid *f, size_t w, size_t c, double now,
                           xs_error *err) {
  worker_state *ws = &f->ws[w];
  const xs__chan *k = &f->ev->chans[c];
  chan_state *s = &f->cs[c];
  uint32_t sid = ws->send;
  double d = now + s->q / k->drain_Bps + k->latency_s;
  double stall = s->S - ws->S0;
  if (stall < 0)
    stall = 0;
  if (f->r->sends) {
    xs_send_result *sr = &f->r->sends[sid];
    sr->issue_start_s = ws->issue_start;
    sr->issue_end_s = now;
    sr->deliver_s = d;
    sr->xstage_s = d - now;
    sr->stall_s = stall;
  }
  ws->stall_s += stall;
  ws->issue_s += now - ws->issue_start;
  if (f->ev->tl) {
    double from = ws->issue_start + k->overhead_s;
    xs__tl_segment(f->ev->tl, XS_SEG_ISSUE, w, sid, from, now - stall);
    if (stall > 0)
      xs__tl_segment(f->ev->tl, XS_SEG_STALL, w, sid, now - stall, now);
  }
  if (d > ws->max_deliver)
    ws->max_deliver = d;
  if (d > f->last_deliver)
    f->last_deliver = d;
  ws->pc++;
  ws->overhead_done = 0;
  ws->pending_fence = f->ev->fence_after_send;
  ws->state = W_READY;
  if (f->deliver) {
    f->deliver[sid] = d;
    uint32_t x = f->waiters[sid];
    f->waiters[sid] = XS__NONE;
    while (x != XS__NONE) {
      uint32_t nx = f->ws[x].next_waiter;
      if (f->ev->tl && d > f->ws[x].t_block)
        xs__tl_segment(f->ev->tl, XS_SEG_BLOCKED, x, sid, f->ws[x].t_block, d);
      if (d > now) {
        f->ws[x].state = W_BLOCKED; /* t_block kept from when it began */
        set_key(f, x, d);
      } else {
        f->ws[x].blocked_s += now - f->ws[x].t_block;
        f->ws[x].state = W_READY;
        xs_status st = run_worker(f, x, now, err);
        if (st)
          return st;
      }
      x = nx;
    }
  }
  return XS_OK;
}

/* Run worker w from its current op at time now until it blocks. */
static xs_status run_worker(fluid *f, size_t w, double now, xs_error *err) {
  worker_state *ws = &f->ws[w];
  const xs__worker *wk = &f->p->workers[w];
  for (;;) {
    if (ws->pending_fence) {
      ws->pending_fence = 0;
      if (ws->max_deliver > now) {
        block_until(f, w, now, ws->max_deliver);
        return XS_OK;
      }
    }
    if (ws->pc >= wk->nops) {
      ws->state = W_DONE;
      ws->finish_s = now;
      set_key(f, (uint32_t)w, INFINITY);
      return XS_OK;
    }
    const xs__op *op = &wk->ops[ws->pc];
    switch (op->kind) {
    case XS_OP_COMPUTE:
      ws->pc++;
      if (op->value > 0) {
        ws->compute_s += op->value;
        ws->state = W_COMPUTE;
        if (f->ev->tl)
          xs__tl_segment(f->ev->tl, XS_SEG_COMPUTE, w, XS__NONE, now,
                         now + op->value);
        set_key(f, (uint32_t)w, now + op->value);
        return XS_OK;
      }
      break;
    case XS_OP_SEND: {
      uint32_t sid = op->aux;
      size_t c = xs__chan_of(f->ev, sid);
      const xs__chan *k = &f->ev->chans[c];
      if (!ws->overhead_done) {
        ws->issue_start = now;
        ws->send = sid;
        if (k->overhead_s > 0) {
          ws->overhead_done = 1;
          ws->overhead_s += k->overhead_s;
          ws->state = W_OVERHEAD;
          if (f->ev->tl)
            xs__tl_segment(f->ev->tl, XS_SEG_OVERHEAD, w, sid, now,
                           now + k->overhead_s);
          set_key(f, (uint32_t)w, now + k->overhead_s);
          return XS_OK;
        }
      }
      advance(f, c, now);
      chan_state *s = &f->cs[c];
      ws->S0 = s->S;
      if (op->value <= 0) {
        xs_status st = send_done(f, w, c, now, err);
        if (st)
          return st;
        break;
      }
      mark m = {s->V + op->value, (uint32_t)w};
      if (mpush(s, m))
        return xs__fail(err, XS_NOMEM, "out of memory");
      mark_dirty(f, c);
      ws->state = W_SENDING;
      set_key(f, (uint32_t)w, INFINITY);
      return XS_OK;
    }
    case XS_OP_WAIT: {
      uint32_t sid = op->aux;
      ws->pc++;
      double d = f->deliver[sid];
      if (isnan(d)) {
        ws->state = W_WAITING;
        ws->t_block = now;
        ws->next_waiter = f->waiters[sid];
        f->waiters[sid] = (uint32_t)w;
        set_key(f, (uint32_t)w, INFINITY);
        return XS_OK;
      }
      if (d > now) {
        block_until(f, w, now, d);
        return XS_OK;
      }
      break;
    }
    default: /* fence */
      ws->pc++;
      if (ws->max_deliver > now) {
        block_until(f, w, now, ws->max_deliver);
        return XS_OK;
      }
      break;
    }
  }
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
  double tol = 1e-12 * fabs(s->V) + 1e-9;
  /* pop first, then run: a finished worker may rejoin this channel */
  size_t nfin = 0;
  uint32_t stackbuf[64], *fin = stackbuf;
  while (s->n > 0 && s->heap[0].key <= s->V + tol) {
    if (nfin == 64 && fin == stackbuf) {
      fin = malloc(s->n * sizeof *fin + 64 * sizeof *fin);
      if (!fin)
        return xs__fail(err, XS_NOMEM, "out of memory");
      memcpy(fin, stackbuf, sizeof stackbuf);
    }
    fin[nfin++] = mpop(s).w;
  }
  xs_status st = XS_OK;
  for (size_t i = 0; i < nfin && !st; i++) {
    st = send_done(f, fin[i], c, now, err);
    if (!st)
      st = run_worker(f, fin[i], now, err);
  }
  if (fin != stackbuf)
    free(fin);
  return st;
}

static void fluid_free(fluid *f) {
  if (f->cs)
    for (size_t c = 0; c < f->nc; c++)
      free(f->cs[c].heap);
  free(f->cs);
  free(f->ws);
  xs__iheap_free(&f->wh);
  xs__iheap_free(&f->ch);
  free(f->deliver);
  free(f->waiters);
  free(f->dirty);
}

xs_status xs__eval_fluid(const xs__eval *ev, xs_result *r, xs_error *err) {
  fluid f;
  memset(&f, 0, sizeof f);
  f.ev = ev;
  f.p = ev->prog;
  f.r = r;
  f.nw = f.p->nworkers;
  f.nc = ev->nchans;
  f.ws = calloc(f.nw, sizeof *f.ws);
  f.cs = calloc(f.nc, sizeof *f.cs);
  int heaps_bad = xs__iheap_init(&f.wh, f.nw) | xs__iheap_init(&f.ch, f.nc);
  f.dirty = malloc(f.nc * sizeof *f.dirty);
  int has_waits = f.p->nwaits > 0;
  if (has_waits) {
    f.deliver = malloc(f.p->nsends * sizeof *f.deliver + 1);
    f.waiters = malloc(f.p->nsends * sizeof *f.waiters + 1);
  }
  if (!f.ws || !f.cs || heaps_bad || !f.dirty ||
      (has_waits && (!f.deliver || !f.waiters))) {
    fluid_free(&f);
    return xs__fail(err, XS_NOMEM, "out of memory");
  }
  for (size_t s = 0; has_waits && s < f.p->nsends; s++) {
    f.deliver[s] = NAN;
    f.waiters[s] = XS__NONE;
  }
  for (size_t c = 0; c < f.nc; c++)
    f.cs[c].full = ev->chans[c].capacity_B == 0;

  xs_status st = XS_OK;
  double now = 0;
  for (size_t w = 0; w < f.nw && !st; w++)
    st = run_worker(&f, w, 0, err);
  for (;;) {
    if (st)
      break;
    for (size_t i = 0; i < f.ndirty; i++)
      recompute(&f, f.dirty[i], now);
    f.ndirty = 0;
    /* the earlier of the two heaps' tops; at equal times workers first */
    double tw = xs__iheap_top(&f.wh), tc = xs__iheap_top(&f.ch);
    if (!(tw < INFINITY) && !(tc < INFINITY))
      break;
    f.events++;
    if (tw <= tc) {
      uint32_t e = xs__iheap_top_id(&f.wh);
      now = tw;
      worker_state *ws = &f.ws[e];
      if (ws->state == W_BLOCKED)
        ws->blocked_s += now - ws->t_block;
      ws->state = W_READY;
      /* run_worker sets the worker's next key on every path it returns by */
      st = run_worker(&f, e, now, err);
    } else {
      now = tc;
      st = channel_event(&f, xs__iheap_top_id(&f.ch), now, err);
    }
  }
  if (!st) {
    double done = 0;
    for (size_t w = 0; w < f.nw; w++) {
      worker_state *ws = &f.ws[w];
      if (ws->state != W_DONE) {
        st = xs__fail(err, XS_INTERNAL,
                      "evaluation stopped with worker \"%s\" unfinished at op "
                      "%zu (please report this program)",
                      f.p->workers[w].name, ws->pc);
        break;
      }
      xs_worker_result *wr = &r->workers[w];
      wr->finish_s = ws->finish_s;
      wr->compute_s = ws->compute_s;
      wr->issue_s = ws->issue_s;
      wr->overhead_s = ws->overhead_s;
      wr->blocked_s = ws->blocked_s;
      wr->stall_s = ws->stall_s + ws->blocked_s;
      if (ws->finish_s > done)
        done = ws->finish_s;
    }
    r->issue_done_s = done;
    r->makespan_s = fmax(done, f.last_deliver);
    r->events = f.events;
  }
  fluid_free(&f);
  return st;
}
