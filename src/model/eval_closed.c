/*
 * eval_closed.c: the one-worker closed forms of the Burst-Gap model, a
 * single pass over a flat array of ops with no allocation on the way. This
 * is the fast path for one-worker programs (planner searches, probes'
 * predictions) and the reference the event-driven evaluation is tested
 * against.
 *
 * With one worker only one send is active at a time, so each send is one
 * closed form (docs/model.md "One worker"): starting with backlog q0 and
 * rate x = min(r_w, R_inj),
 *   x <= R_drain: issue B/x, backlog after max(0, q0 - (R_drain - x) B/x);
 *   else t_f = (C - q0)/(x - R_drain), b_f = x t_f;
 *     B <= b_f: issue B/x, backlog after q0 + (x - R_drain) B/x;
 *     B >  b_f: issue t_f + (B - b_f)/R_drain, backlog after C.
 * Between sends the backlog decays: q <- max(0, q - R_drain g) (Lindley).
 * A send ending at t_e with backlog q is delivered at t_e + q/R_drain + L.
 */
#include "internal.h"

#include <math.h>
#include <stdlib.h>

typedef struct {
  double q, t; /* backlog at time t */
  double x, rd, inv_x, inv_rd, cap, lat, ovh;
  double fill;   /* x - R_drain: how fast the backlog grows while issuing */
  double knee_f; /* (x - R_drain)/x: b_f = (C - q0)/knee_f */
} chan_now;

xs_status xs__eval_closed(const xs__eval *ev, xs_result *r, xs_error *err) {
  const xs_program *p = ev->prog;
  const xs__worker *wk = &p->workers[0];
  size_t nch = ev->nchans;
  chan_now *cs = malloc(nch * sizeof *cs);
  if (!cs)
    return xs__fail(err, XS_NOMEM, "out of memory");
  for (size_t c = 0; c < nch; c++) {
    const xs__chan *k = &ev->chans[c];
    cs[c].q = 0;
    cs[c].t = 0;
    cs[c].x = fmin(k->worker_Bps, k->inject_Bps);
    cs[c].rd = k->drain_Bps;
    cs[c].inv_x = 1.0 / cs[c].x;
    cs[c].inv_rd = 1.0 / k->drain_Bps;
    cs[c].cap = k->capacity_B;
    cs[c].lat = k->latency_s;
    cs[c].ovh = k->overhead_s;
    cs[c].fill = cs[c].x - cs[c].rd;
    cs[c].knee_f = cs[c].fill * cs[c].inv_x;
  }
  /* waits need the deliveries of earlier sends even without results */
  double *deliver = NULL;
  xs_send_result *sends = r->sends;
  if (!sends && p->nwaits) {
    deliver = malloc(p->nsends * sizeof *deliver + 1);
    if (!deliver) {
      free(cs);
      return xs__fail(err, XS_NOMEM, "out of memory");
    }
  }
  const uint32_t *send_chan = p->send_chan, *chan_map = ev->chan_map;
  const int fence_after = ev->fence_after_send;
  double t = 0, compute = 0, issue = 0, overhead = 0, blocked = 0, stall = 0;
  double last_deliver = 0;
  xs_channel_result *cres = r->channels;
  for (size_t i = 0; i < wk->nops; i++) {
    const xs__op *op = &wk->ops[i];
    switch (op->kind) {
    case XS_OP_COMPUTE:
      t += op->value;
      compute += op->value;
      break;
    case XS_OP_SEND: {
      uint32_t s = op->aux;
      uint32_t ci = chan_map[send_chan[s]];
      chan_now *c = &cs[ci];
      double start = t;
      t += c->ovh;
      double q = c->q - c->rd * (t - c->t);
      if (q < 0)
        q = 0;
      double b = op->value, dt, qa, st = 0;
      if (c->x <= c->rd) {
        dt = b * c->inv_x;
        qa = q - (c->rd - c->x) * dt;
        if (qa < 0)
          qa = 0;
      } else {
        /* B <= b_f = (C - q0) x/(x - R_drain), without a division */
        double room = c->cap - q;
        dt = b * c->inv_x;
        if (b * c->knee_f <= room) {
          qa = q + c->fill * dt;
        } else {
          /* past the knee: t_f + (B - b_f)/R_drain */
          double tf = room / c->fill;
          double past = tf + (b - c->x * tf) * c->inv_rd;
          st = past - dt;
          dt = past;
          qa = c->cap;
        }
      }
      t += dt;
      c->q = qa;
      c->t = t;
      double d = t + qa * c->inv_rd + c->lat;
      if (d > last_deliver)
        last_deliver = d;
      xs_channel_result *cr = &cres[ci];
      if (qa > cr->peak_backlog_B)
        cr->peak_backlog_B = qa;
      cr->bytes += b;
      cr->sends++;
      overhead += c->ovh;
      issue += t - start;
      stall += st;
      if (sends) {
        xs_send_result *sr = &sends[s];
        sr->issue_start_s = start;
        sr->issue_end_s = t;
        sr->deliver_s = d;
        sr->xstage_s = d - t;
        sr->stall_s = st;
      } else if (deliver) {
        deliver[s] = d;
      }
      if (fence_after && d > t) {
        blocked += d - t;
        t = d;
      }
      break;
    }
    case XS_OP_WAIT: {
      double d = sends ? sends[op->aux].deliver_s : deliver[op->aux];
      if (d > t) {
        blocked += d - t;
        t = d;
      }
      break;
    }
    default: /* fence: every earlier send of this worker delivered */
      if (last_deliver > t) {
        blocked += last_deliver - t;
        t = last_deliver;
      }
      break;
    }
  }
  /* the serial and ideal terms (eval.c computes them for other paths) */
  r->compute_term_s = compute + overhead;
  r->comm_term_s = 0;
  for (size_t c = 0; c < nch; c++)
    if (cres[c].sends && xs__chan_comm_s(&ev->chans[c], cres[c].bytes) > r->comm_term_s)
      r->comm_term_s = xs__chan_comm_s(&ev->chans[c], cres[c].bytes);
  free(cs);
  free(deliver);
  xs_worker_result *w = &r->workers[0];
  w->finish_s = t;
  w->compute_s = compute;
  w->issue_s = issue;
  w->overhead_s = overhead;
  w->blocked_s = blocked;
  w->stall_s = stall + blocked;
  r->issue_done_s = t;
  r->makespan_s = fmax(t, last_deliver);
  r->events = 0;
  return XS_OK;
}
