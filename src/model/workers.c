/*
 * workers.c: the worker machine shared by the event-driven evaluators (the
 * exact fluid evaluation and the packet simulator). It walks each worker's
 * ops, times compute and overheads, blocks waits until the send's delivery
 * is known and reached, honours fences (and the blocking model's fence
 * after every send), and records results and timelines. What happens on a
 * channel is the backend's: it is told when a worker starts a send, and
 * tells the machine when the send's last byte is in and when it arrives.
 */
#include "model/iheap.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

enum { W_READY, W_COMPUTE, W_OVERHEAD, W_SENDING, W_BLOCKED, W_WAITING,
       W_DONE };

int xs__wm_init(xs__wm *m, const xs__eval *ev, xs_result *r,
                const xs__wm_ops *ops, void *ctx) {
  memset(m, 0, sizeof *m);
  m->ev = ev;
  m->p = ev->prog;
  m->r = r;
  m->ops = ops;
  m->ctx = ctx;
  m->nw = m->p->nworkers;
  m->ws = calloc(m->nw + 1, sizeof *m->ws);
  m->stack = malloc((m->nw + 1) * sizeof *m->stack);
  if (!m->ws || !m->stack || xs__iheap_init(&m->timers, m->nw))
    return -1;
  for (size_t w = 0; w < m->nw; w++)
    m->ws[w].wake = XS__NONE;
  m->rec = ev->tl != NULL || ev->sums != NULL;
  /* a rounding margin: the bound below sums the computes in another order
   * than the evaluation's clock adds them */
  m->stop_s = ev->stop_s + fabs(ev->stop_s) * 1e-9;
  if (m->stop_s < INFINITY) {
    m->compute_total = malloc((m->nw + 1) * sizeof *m->compute_total);
    if (!m->compute_total)
      return -1;
    for (size_t w = 0; w < m->nw; w++) {
      double t = 0;
      for (size_t i = 0; i < m->p->workers[w].nops; i++)
        if (m->p->workers[w].ops[i].kind == XS_OP_COMPUTE)
          t += m->p->workers[w].ops[i].value;
      m->compute_total[w] = t;
    }
  }
  if (m->p->ncounters) {
    m->counters = calloc(m->p->ncounters, sizeof *m->counters);
    m->cwaiters = malloc(m->p->ncounters * sizeof *m->cwaiters);
    m->ready = malloc((m->nw + 1) * sizeof *m->ready);
    if (!m->counters || !m->cwaiters || !m->ready)
      return -1;
    for (size_t c = 0; c < m->p->ncounters; c++)
      m->cwaiters[c] = XS__NONE;
  }
  if (m->p->nwaits) {
    m->deliver = malloc((m->p->nsends + 1) * sizeof *m->deliver);
    m->waiters = malloc((m->p->nsends + 1) * sizeof *m->waiters);
    if (!m->deliver || !m->waiters)
      return -1;
    for (size_t s = 0; s < m->p->nsends; s++) {
      m->deliver[s] = NAN;
      m->waiters[s] = XS__NONE;
    }
  }
  return 0;
}

void xs__wm_free(xs__wm *m) {
  free(m->ws);
  free(m->stack);
  xs__iheap_free(&m->timers);
  free(m->deliver);
  free(m->waiters);
  free(m->counters);
  free(m->cwaiters);
  free(m->ready);
  free(m->compute_total);
}

static void set_key(xs__wm *m, size_t w, double t) {
  xs__iheap_set(&m->timers, (uint32_t)w, t);
}

/* Add a segment's d seconds to worker w's sums of its class. */
static void sums_add(xs__seg_sums *S, int kind, int marked, size_t w,
                     double d) {
  signed char k = S->cls[kind][marked], k2 = S->also[kind][marked];
  double *row = S->sums + w * S->ncls;
  if (k >= 0)
    row[k] += d;
  if (k2 >= 0)
    row[k2] += d;
}

/* A segment of worker w (send sid, or XS__NONE): to the timeline and the
 * sums, either of which may be absent. */
static void segment(xs__wm *m, xs_segment_kind kind, size_t w, uint32_t sid,
                    double start, double end) {
  if (m->ev->tl)
    xs__tl_segment(m->ev->tl, kind, w, sid, start, end);
  xs__seg_sums *S = m->ev->sums;
  if (S && end > start)
    sums_add(S, kind,
             sid != XS__NONE && S->chan_marked[m->p->send_chan[sid]], w,
             end - start);
}

/* Worker w blocked in an await on counter c from start to end. */
static void segment_await(xs__wm *m, size_t w, uint32_t c, double start,
                          double end) {
  if (m->ev->tl)
    xs__tl_await(m->ev->tl, w, c, start, end);
  xs__seg_sums *S = m->ev->sums;
  if (S && end > start)
    sums_add(S, XS__SEG_AWAIT, S->counter_marked[c], w, end - start);
}

static void block_until(xs__wm *m, size_t w, double now, double until,
                        uint32_t sid) {
  xs__wm_worker *ws = &m->ws[w];
  if (m->rec)
    segment(m, XS_SEG_BLOCKED, w, sid, now, until);
  ws->state = W_BLOCKED;
  ws->t_block = now;
  set_key(m, w, until);
}

/* Record the end of the current send of w. The workers waiting on it are
 * left in w's wake list for run() to let go. */
static void send_end(xs__wm *m, size_t w, double now, double d,
                     double stall) {
  xs__wm_worker *ws = &m->ws[w];
  uint32_t sid = ws->send;
  if (stall < 0)
    stall = 0;
  if (m->r->sends) {
    xs_send_result *sr = &m->r->sends[sid];
    sr->issue_start_s = ws->issue_start;
    sr->issue_end_s = now;
    sr->deliver_s = d;
    sr->xstage_s = d - now;
    sr->stall_s = stall;
  }
  ws->stall_s += stall;
  ws->issue_s += now - ws->issue_start;
  if (m->rec) {
    double from = ws->issue_start +
                  m->ev->chans[xs__chan_of(m->ev, sid)].overhead_s;
    segment(m, XS_SEG_ISSUE, w, sid, from, now - stall);
    if (stall > 0)
      segment(m, XS_SEG_STALL, w, sid, now - stall, now);
  }
  if (d > ws->max_deliver) {
    ws->max_deliver = d;
    ws->max_send = sid;
  }
  if (d > m->last_deliver)
    m->last_deliver = d;
  ws->pc++;
  ws->overhead_done = 0;
  ws->pending_fence = m->ev->fence_after_send;
  ws->state = W_READY;
  if (m->deliver) {
    m->deliver[sid] = d;
    ws->wake = m->waiters[sid];
    m->waiters[sid] = XS__NONE;
  }
}

/* Let worker x, waiting on send sid, go: blocked until the delivery when
 * that is later than now; 1 when it is ready to run at now. */
static int wake(xs__wm *m, uint32_t x, uint32_t sid, double now) {
  xs__wm_worker *wx = &m->ws[x];
  double d = m->deliver[sid];
  if (m->rec && d > wx->t_block)
    segment(m, XS_SEG_BLOCKED, x, sid, wx->t_block, d);
  if (d > now) {
    wx->state = W_BLOCKED; /* t_block kept from when it began */
    set_key(m, x, d);
    return 0;
  }
  wx->blocked_s += now - wx->t_block;
  wx->state = W_READY;
  return 1;
}

/* Step worker w from its current op at time *nowp until it blocks
 * (*blocked set; every such path sets the worker's next timer, INFINITY
 * when it waits on a channel or a send) or until a send of no bytes, or
 * one the backend ended at once (which moves *nowp on to its end), ended
 * with workers to wake (*blocked clear, the workers in w's wake list). */
static xs_status step(xs__wm *m, size_t w, double *nowp, int *blocked,
                      xs_error *err) {
  xs__wm_worker *ws = &m->ws[w];
  *blocked = 1;
  const xs__worker *wk = &m->p->workers[w];
  for (;;) {
    double now = *nowp;
    if (ws->pending_fence) {
      ws->pending_fence = 0;
      if (ws->max_deliver > now) {
        block_until(m, w, now, ws->max_deliver, ws->max_send);
        return XS_OK;
      }
    }
    if (ws->pc >= wk->nops) {
      ws->state = W_DONE;
      ws->finish_s = now;
      set_key(m, w, INFINITY);
      return XS_OK;
    }
    const xs__op *op = &wk->ops[ws->pc];
    switch (op->kind) {
    case XS_OP_COMPUTE:
      ws->pc++;
      if (op->value > 0) {
        ws->compute_s += op->value;
        ws->state = W_COMPUTE;
        if (m->rec)
          segment(m, XS_SEG_COMPUTE, w, XS__NONE, now, now + op->value);
        set_key(m, w, now + op->value);
        /* the worker finishes no sooner than its computes left allow */
        if (m->compute_total &&
            now + op->value + (m->compute_total[w] - ws->compute_s) >
                m->stop_s)
          m->stopped = 1;
        return XS_OK;
      }
      break;
    case XS_OP_SEND: {
      uint32_t sid = op->aux;
      size_t c = xs__chan_of(m->ev, sid);
      const xs__chan *k = &m->ev->chans[c];
      if (!ws->overhead_done) {
        ws->issue_start = now;
        ws->send = sid;
        if (k->overhead_s > 0) {
          ws->overhead_done = 1;
          ws->overhead_s += k->overhead_s;
          ws->state = W_OVERHEAD;
          if (m->rec)
            segment(m, XS_SEG_OVERHEAD, w, sid, now, now + k->overhead_s);
          set_key(m, w, now + k->overhead_s);
          return XS_OK;
        }
      }
      if (op->value <= 0) {
        send_end(m, w, now, m->ops->signal(m->ctx, c, now), 0);
        if (ws->wake != XS__NONE) {
          *blocked = 0;
          return XS_OK;
        }
        break;
      }
      ws->state = W_SENDING;
      set_key(m, w, INFINITY);
      /* the planners' mode: with nothing else due now (no worker below it
       * on the stack, none a signal let go, no timer), the backend may end
       * the send at once */
      xs__wm_end end = {0, 0, 0, 0};
      int alone = m->ev->plan && m->solo && m->depth == 1 && !m->nready &&
                  xs__iheap_top(&m->timers) > now;
      xs_status st = m->ops->join(m->ctx, w, sid, c, op->value, now,
                                  alone ? &end : NULL, err);
      if (st || !end.ended)
        return st;
      send_end(m, w, end.end_s, end.deliver_s, end.stall_s);
      *nowp = end.end_s;
      if (ws->wake != XS__NONE) {
        *blocked = 0;
        return XS_OK;
      }
      break;
    }
    case XS_OP_WAIT: {
      uint32_t sid = op->aux;
      ws->pc++;
      double d = m->deliver[sid];
      if (isnan(d)) {
        ws->state = W_WAITING;
        ws->t_block = now;
        ws->next_waiter = m->waiters[sid];
        m->waiters[sid] = (uint32_t)w;
        set_key(m, w, INFINITY);
        return XS_OK;
      }
      if (d > now) {
        block_until(m, w, now, d, sid);
        return XS_OK;
      }
      break;
    }
    case XS_OP_SIGNAL: {
      /* every copy adds: the awaits it meets let their workers go at now,
       * to run once this one blocks (run() takes them in the order they
       * began to wait) */
      uint32_t c = op->aux;
      ws->pc++;
      double v = m->counters[c] += op->value * wk->copies;
      uint32_t *link = &m->cwaiters[c];
      while (*link != XS__NONE) {
        uint32_t x = *link;
        xs__wm_worker *wx = &m->ws[x];
        if (wx->await_value > v) {
          link = &wx->next_waiter;
          continue;
        }
        *link = wx->next_waiter;
        if (m->rec && now > wx->t_block)
          segment_await(m, x, c, wx->t_block, now);
        wx->blocked_s += now - wx->t_block;
        wx->state = W_READY;
        /* a ring: a worker is in it at most once (only an awaiting worker
         * is let go), so nw + 1 slots hold it */
        m->ready[(m->ready_head + m->nready++) % (m->nw + 1)] = x;
      }
      break;
    }
    case XS_OP_AWAIT: {
      uint32_t c = op->aux;
      ws->pc++;
      if (m->counters[c] >= op->value)
        break;
      ws->state = W_WAITING;
      ws->t_block = now;
      ws->await_value = op->value;
      ws->next_waiter = m->cwaiters[c];
      m->cwaiters[c] = (uint32_t)w;
      set_key(m, w, INFINITY);
      return XS_OK;
    }
    default: /* fence */
      ws->pc++;
      if (ws->max_deliver > now) {
        block_until(m, w, now, ws->max_deliver, ws->max_send);
        return XS_OK;
      }
      break;
    }
  }
}

/* Run worker w at time now, and every worker its sends of no bytes let go
 * at now, until each blocks. The woken workers run from an explicit stack,
 * not by recursion (a chain of such signals is as long as the program):
 * a worker whose send woke others stays on the stack until each of them,
 * in the order they began to wait, has run until it blocked, and then goes
 * on. A worker is on the stack at most once (only a waiting worker is
 * woken, and none on the stack waits), so it holds nw entries. */
static xs_status run(xs__wm *m, size_t w, double now, xs_error *err) {
  size_t n = 0;
  m->stack[n++] = (uint32_t)w;
  /* a send that ends at once moves now on: only with w alone on the
   * stack, so every worker on it runs at one time */
  while (n) {
    uint32_t top = m->stack[n - 1];
    xs__wm_worker *ws = &m->ws[top];
    if (ws->wake != XS__NONE) {
      uint32_t x = ws->wake;
      ws->wake = m->ws[x].next_waiter;
      if (wake(m, x, ws->send, now))
        m->stack[n++] = x;
      continue;
    }
    int blocked;
    m->depth = n;
    xs_status st = step(m, top, &now, &blocked, err);
    if (st)
      return st;
    if (blocked) {
      /* the op it resumes at is read an event or a hundred later: ask
       * for its line now (one stream a worker is more than a hardware
       * prefetcher follows) */
      __builtin_prefetch(&m->p->workers[top].ops[ws->pc]);
      n--;
    }
    /* workers a signal let go run once the stack is empty, in order */
    if (n == 0 && m->nready) {
      m->stack[n++] = m->ready[m->ready_head];
      m->ready_head = (m->ready_head + 1) % (m->nw + 1);
      m->nready--;
    }
  }
  m->now = now;
  return XS_OK;
}

xs_status xs__wm_start(xs__wm *m, xs_error *err) {
  double last = 0;
  for (size_t w = 0; w < m->nw; w++) {
    m->solo = w + 1 == m->nw; /* the later workers are due at 0 too */
    xs_status st = run(m, w, 0, err);
    if (st)
      return st;
    if (m->now > last)
      last = m->now;
  }
  m->now = last;
  return XS_OK;
}

xs_status xs__wm_timer(xs__wm *m, xs_error *err) {
  size_t w = xs__iheap_top_id(&m->timers);
  double now = xs__iheap_top(&m->timers);
  xs__wm_worker *ws = &m->ws[w];
  if (ws->state == W_BLOCKED)
    ws->blocked_s += now - ws->t_block;
  ws->state = W_READY;
  m->solo = 1;
  return run(m, w, now, err);
}

xs_status xs__wm_send_done(xs__wm *m, size_t w, double now, double deliver,
                           double stall, xs_error *err) {
  send_end(m, w, now, deliver, stall);
  return run(m, w, now, err);
}

xs_status xs__wm_finish(xs__wm *m, xs_error *err) {
  double done = 0;
  for (size_t w = 0; w < m->nw; w++) {
    xs__wm_worker *ws = &m->ws[w];
    if (ws->state != W_DONE)
      return xs__fail(err, XS_INTERNAL,
                      "evaluation stopped with worker \"%s\" unfinished at op "
                      "%zu (please report this program)",
                      m->p->workers[w].name, ws->pc);
    xs_worker_result *wr = &m->r->workers[w];
    wr->finish_s = ws->finish_s;
    wr->compute_s = ws->compute_s;
    wr->issue_s = ws->issue_s;
    wr->overhead_s = ws->overhead_s;
    wr->blocked_s = ws->blocked_s;
    wr->stall_s = ws->stall_s + ws->blocked_s;
    if (ws->finish_s > done)
      done = ws->finish_s;
  }
  m->r->issue_done_s = done;
  m->r->makespan_s = fmax(done, m->last_deliver);
  return XS_OK;
}
