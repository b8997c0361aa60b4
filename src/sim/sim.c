/*
 * sim.c: the packet-level simulator, the higher-fidelity check on the fluid
 * model and the tool for what it cannot capture (packet granularity,
 * arbitration, a per-worker outstanding-store limit). docs/simulate.md.
 *
 * A send is cut into packets of P bytes. A packet is admitted at the end of
 * its injection slot: no earlier than P/R_inj after the channel's previous
 * admission, P/r_w after its worker's previous one (or the send's start),
 * and not before the channel has credit for it: at most capacity_B bytes
 * admitted and not yet drained (one packet is always allowed, so C = 0 and
 * C < P mean one packet at a time), and at most worker_inflight_B bytes of
 * the worker's packets admitted and not yet delivered. Admitted packets
 * drain first in, first out at R_drain, so a packet's departure is known
 * when it is admitted: max(admit, previous departure) + P/R_drain; it
 * arrives L later. Among waiting workers the head of the channel's list is
 * served: round robin moves it to the tail after each packet, FIFO keeps it
 * until its send is done. Departures live in a ring per channel, and only
 * one entry per channel sits in the event heap (its next admission), so a
 * packet costs O(log channels), not a heap entry of its own.
 */
#include "model/iheap.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

typedef struct {
  double t, bytes; /* departure (channel ring) or delivery (worker ring) */
} pkt;

typedef struct {
  pkt *q;
  size_t head, n, cap;
  double bytes; /* sum of bytes in the ring */
} ring;

typedef struct {
  ring out;          /* admitted, not yet drained, in departure order */
  double last_adm;   /* the channel's previous admission */
  double last_depart;
  double P;          /* packet size */
  uint32_t first, last; /* waiting workers, a doubly linked list */
  size_t nwait;
} sim_chan;

typedef struct {
  double left, from, prev_adm, ideal; /* the current send */
  uint32_t prev, next;
  ring inflight; /* admitted, not yet delivered (worker_inflight_B) */
} sim_worker;

typedef struct {
  const xs__eval *ev;
  xs__wm wm;
  sim_chan *cs;
  sim_worker *ws;
  xs__iheap ch;
  xs_result *r;
  uint64_t events;
} sim;

static int ring_push(ring *g, double t, double bytes) {
  if (g->n == g->cap) {
    size_t cap = g->cap ? 2 * g->cap : 64;
    pkt *q = malloc(cap * sizeof *q);
    if (!q)
      return -1;
    for (size_t i = 0; i < g->n; i++)
      q[i] = g->q[(g->head + i) % g->cap];
    free(g->q);
    g->q = q;
    g->head = 0;
    g->cap = cap;
  }
  g->q[(g->head + g->n) % g->cap] = (pkt){t, bytes};
  g->n++;
  g->bytes += bytes;
  return 0;
}

static const pkt *ring_at(const ring *g, size_t i) {
  return &g->q[(g->head + i) % g->cap];
}

static void ring_pop(ring *g) {
  g->bytes -= g->q[g->head].bytes;
  g->head = (g->head + 1) % g->cap;
  g->n--;
  if (g->n == 0)
    g->bytes = 0; /* no drift from adding and subtracting */
}

/* The earliest time >= t at which a ring holding bytes that leave at their
 * times has room for b more under limit (one packet always fits). */
static double room_at(const ring *g, double t, double b, double limit) {
  double left = g->bytes;
  for (size_t i = 0; i < g->n; i++) {
    const pkt *p = ring_at(g, i);
    if (p->t <= t) {
      left -= p->bytes;
      continue;
    }
    if (left <= 0 || left + b <= limit)
      return t;
    t = p->t;
    left -= p->bytes;
  }
  return t;
}

static void unlink_waiter(sim *s, sim_chan *c, uint32_t w) {
  sim_worker *k = &s->ws[w];
  if (k->prev != XS__NONE)
    s->ws[k->prev].next = k->next;
  else
    c->first = k->next;
  if (k->next != XS__NONE)
    s->ws[k->next].prev = k->prev;
  else
    c->last = k->prev;
  c->nwait--;
}

static void append_waiter(sim *s, sim_chan *c, uint32_t w) {
  sim_worker *k = &s->ws[w];
  k->prev = c->last;
  k->next = XS__NONE;
  if (c->last != XS__NONE)
    s->ws[c->last].next = w;
  else
    c->first = w;
  c->last = w;
  c->nwait++;
}

/* Drain what has left channel c by time now. */
static void drain(sim *s, size_t c, double now) {
  sim_chan *ch = &s->cs[c];
  while (ch->out.n > 0 && ring_at(&ch->out, 0)->t <= now) {
    double t = ring_at(&ch->out, 0)->t;
    ring_pop(&ch->out);
    s->events++;
    if (s->ev->tl)
      xs__tl_point(s->ev->tl, c, t, ch->out.bytes);
  }
}

/* When the head waiter's next packet can be admitted. */
static void plan(sim *s, size_t c, double now) {
  sim_chan *ch = &s->cs[c];
  if (ch->nwait == 0) {
    xs__iheap_set(&s->ch, (uint32_t)c, INFINITY);
    return;
  }
  const xs__chan *k = &s->ev->chans[c];
  sim_worker *w = &s->ws[ch->first];
  double b = w->left < ch->P ? w->left : ch->P;
  double t = fmax(now, fmax(ch->last_adm + b / k->inject_Bps,
                            w->prev_adm + b / k->worker_Bps));
  for (;;) {
    double t2 = room_at(&ch->out, t, b, k->capacity_B);
    if (isfinite(k->worker_inflight_B))
      t2 = room_at(&w->inflight, t2, b, k->worker_inflight_B);
    if (t2 == t)
      break;
    t = t2;
  }
  xs__iheap_set(&s->ch, (uint32_t)c, t);
}

static xs_status admit(sim *s, size_t c, double now, xs_error *err) {
  sim_chan *ch = &s->cs[c];
  const xs__chan *k = &s->ev->chans[c];
  drain(s, c, now);
  uint32_t wi = ch->first;
  sim_worker *w = &s->ws[wi];
  double b = w->left < ch->P ? w->left : ch->P;
  /* the unthrottled share this packet would have had, for the stall */
  double share = fmin(k->worker_Bps, k->inject_Bps / (double)ch->nwait);
  w->ideal += b / share;
  double depart = fmax(now, ch->last_depart) + b / k->drain_Bps;
  if (ring_push(&ch->out, depart, b))
    return xs__fail(err, XS_NOMEM, "out of memory");
  if (isfinite(k->worker_inflight_B)) {
    while (w->inflight.n > 0 && ring_at(&w->inflight, 0)->t <= now)
      ring_pop(&w->inflight);
    if (ring_push(&w->inflight, depart + k->latency_s, b))
      return xs__fail(err, XS_NOMEM, "out of memory");
  }
  ch->last_depart = depart;
  ch->last_adm = now;
  w->prev_adm = now;
  w->left -= b;
  s->events++;
  xs_channel_result *cr = &s->r->channels[c];
  if (ch->out.bytes > cr->peak_backlog_B)
    cr->peak_backlog_B = ch->out.bytes;
  if (s->ev->tl)
    xs__tl_point(s->ev->tl, c, now, ch->out.bytes);
  xs_status st = XS_OK;
  if (w->left <= 0) {
    unlink_waiter(s, ch, wi);
    double stall = (now - w->from) - w->ideal;
    st = xs__wm_send_done(&s->wm, wi, now, depart + k->latency_s, stall, err);
  } else if (s->ev->arbitration == XS_ARB_RR && ch->nwait > 1) {
    unlink_waiter(s, ch, wi);
    append_waiter(s, ch, wi);
  }
  plan(s, c, now);
  return st;
}

static xs_status join(void *ctx, size_t w, uint32_t sid, size_t c,
                      double bytes, double now, xs__wm_end *end, xs_error *err) {
  (void)end; /* packets end no send at once */
  sim *s = ctx;
  (void)sid;
  (void)err;
  sim_worker *k = &s->ws[w];
  k->left = bytes;
  k->from = now;
  k->prev_adm = now;
  k->ideal = 0;
  drain(s, c, now);
  append_waiter(s, &s->cs[c], (uint32_t)w);
  plan(s, c, now);
  return XS_OK;
}

static double signal_at(void *ctx, size_t c, double now) {
  sim *s = ctx;
  return fmax(now, s->cs[c].last_depart) + s->ev->chans[c].latency_s;
}

xs_status xs__simulate(const xs__eval *ev, xs_result *r, xs_error *err) {
  static const xs__wm_ops hooks = {join, signal_at};
  sim s;
  memset(&s, 0, sizeof s);
  s.ev = ev;
  s.r = r;
  size_t nc = ev->nchans, nw = ev->prog->nworkers;
  s.cs = calloc(nc, sizeof *s.cs);
  s.ws = calloc(nw + 1, sizeof *s.ws);
  int bad = xs__wm_init(&s.wm, ev, r, &hooks, &s) | xs__iheap_init(&s.ch, nc);
  xs_status st = XS_OK;
  if (bad || !s.cs || !s.ws) {
    st = xs__fail(err, XS_NOMEM, "out of memory");
    goto done;
  }
  for (size_t c = 0; c < nc; c++) {
    s.cs[c].first = s.cs[c].last = XS__NONE;
    s.cs[c].P = ev->packet_B > 0          ? ev->packet_B
                : ev->chans[c].packet_B > 0 ? ev->chans[c].packet_B
                                            : 256;
  }
  st = xs__wm_start(&s.wm, err);
  while (!st) {
    double tw = xs__wm_next(&s.wm), tc = xs__iheap_top(&s.ch);
    if (!(tw < INFINITY) && !(tc < INFINITY))
      break;
    if (tw <= tc)
      st = xs__wm_timer(&s.wm, err);
    else
      st = admit(&s, xs__iheap_top_id(&s.ch), tc, err);
  }
  for (size_t c = 0; c < nc && !st; c++)
    drain(&s, c, INFINITY);
  if (!st)
    st = xs__wm_finish(&s.wm, err);
  r->events = s.events;
done:
  if (s.cs)
    for (size_t c = 0; c < nc; c++)
      free(s.cs[c].out.q);
  if (s.ws)
    for (size_t w = 0; w < nw; w++)
      free(s.ws[w].inflight.q);
  free(s.cs);
  free(s.ws);
  xs__wm_free(&s.wm);
  xs__iheap_free(&s.ch);
  return st;
}
