/* naive_fluid.c: see naive_fluid.h. Written from docs/model.md alone. */
#include "naive_fluid.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

enum { READY, TIMED, SENDING, WAITING, AWAITING, DONE };

typedef struct {
  size_t pc;
  int state, ovh_done, fence_pending;
  double until, left;
  size_t send, chan, counter;
  double maxdel, need;
} nw;

int naive_eval(const xs_program *p, const xs_profile *prof, int blocking,
               double *makespan, double *deliver, double *finish) {
  size_t W = xs_program_worker_count(p), S = xs_program_send_count(p);
  size_t C = xs_profile_channel_count(prof);
  nw *w = calloc(W, sizeof *w);
  double *q = calloc(C, sizeof *q);
  int *full = calloc(C, sizeof *full);
  double *rate = calloc(C, sizeof *rate), *dq = calloc(C, sizeof *dq);
  double *cap = calloc(C, sizeof *cap);
  size_t K = xs_program_counter_count(p);
  double *counter = calloc(K + 1, sizeof *counter);
  for (size_t s = 0; s < S; s++)
    deliver[s] = NAN;
  for (size_t c = 0; c < C; c++) {
    cap[c] = blocking ? 0 : xs_profile_channel(prof, c)->capacity_B;
    full[c] = cap[c] == 0;
  }
  double now = 0, last = 0;
  int rc = 0;
  for (long guard = 0;; guard++) {
    if (guard > 10000000) {
      rc = -1;
      break;
    }
    /* run every ready worker until it blocks; repeat while anything moves */
    int moved = 1;
    while (moved) {
      moved = 0;
      for (size_t i = 0; i < W; i++) {
        nw *k = &w[i];
        if (k->state == WAITING && !isnan(deliver[k->send])) {
          k->state = TIMED;
          k->until = deliver[k->send];
        }
        if (k->state == TIMED && k->until <= now)
          k->state = READY;
        if (k->state == AWAITING && counter[k->counter] >= k->need)
          k->state = READY;
        while (k->state == READY) {
          moved = 1;
          if (k->fence_pending) {
            k->fence_pending = 0;
            if (k->maxdel > now) {
              k->state = TIMED;
              k->until = k->maxdel;
              break;
            }
          }
          if (k->pc >= xs_program_op_count(p, i)) {
            k->state = DONE;
            finish[i] = now;
            break;
          }
          xs_op_info op;
          xs_program_op(p, i, k->pc, &op);
          if (op.kind == XS_OP_COMPUTE) {
            k->pc++;
            if (op.value > 0) {
              k->state = TIMED;
              k->until = now + op.value;
            }
          } else if (op.kind == XS_OP_SEND) {
            long c = op.channel ? xs_profile_find_channel(prof, op.channel)
                                : (long)xs_profile_default_channel(prof);
            const xs_channel *ch = xs_profile_channel(prof, (size_t)c);
            if (!k->ovh_done && ch->issue_overhead_s > 0) {
              k->ovh_done = 1;
              k->state = TIMED;
              k->until = now + ch->issue_overhead_s;
              break;
            }
            k->send = op.send;
            k->chan = (size_t)c;
            k->left = op.value;
            if (op.value > 0) {
              k->state = SENDING;
            } else {
              double d = now + q[c] / ch->drain_Bps + ch->latency_s;
              deliver[op.send] = d;
              if (d > k->maxdel)
                k->maxdel = d;
              if (d > last)
                last = d;
              k->pc++;
              k->ovh_done = 0;
              k->fence_pending = blocking;
            }
          } else if (op.kind == XS_OP_SIGNAL || op.kind == XS_OP_AWAIT) {
            size_t c = 0;
            while (strcmp(xs_program_counter_name(p, c), op.counter) != 0)
              c++;
            k->pc++;
            if (op.kind == XS_OP_SIGNAL) {
              counter[c] += op.value * (double)xs_program_worker_copies(p, i);
            } else if (counter[c] < op.value) {
              k->state = AWAITING;
              k->counter = c;
              k->need = op.value;
            }
          } else if (op.kind == XS_OP_WAIT) {
            k->pc++;
            k->send = op.send;
            k->state = WAITING;
            if (!isnan(deliver[op.send])) {
              k->state = TIMED;
              k->until = deliver[op.send];
              if (k->until <= now)
                k->state = READY;
            }
          } else {
            k->pc++;
            if (k->maxdel > now) {
              k->state = TIMED;
              k->until = k->maxdel;
            }
          }
        }
      }
    }
    /* rates */
    for (size_t c = 0; c < C; c++) {
      const xs_channel *ch = xs_profile_channel(prof, c);
      double n = 0; /* senders, each worker with its copies */
      for (size_t i = 0; i < W; i++)
        if (w[i].state == SENDING && w[i].chan == c)
          n += (double)xs_program_worker_copies(p, i);
      double x = n ? fmin(ch->worker_inject_Bps, ch->inject_Bps / n) : 0;
      double in = n * x, rd = ch->drain_Bps;
      if (full[c] && in > rd) {
        rate[c] = rd / n;
        dq[c] = 0;
      } else if (q[c] <= 0 && in <= rd) {
        rate[c] = x;
        dq[c] = 0;
      } else {
        rate[c] = x;
        dq[c] = in - rd;
        if (dq[c] < 0 && cap[c] > 0)
          full[c] = 0;
      }
    }
    /* next event */
    double dt = INFINITY;
    int any = 0;
    for (size_t i = 0; i < W; i++) {
      if (w[i].state != DONE)
        any = 1;
      if (w[i].state == TIMED)
        dt = fmin(dt, w[i].until - now);
      if (w[i].state == SENDING)
        dt = fmin(dt, w[i].left / rate[w[i].chan]);
    }
    if (!any)
      break;
    for (size_t c = 0; c < C; c++) {
      if (dq[c] > 0 && isfinite(cap[c]))
        dt = fmin(dt, (cap[c] - q[c]) / dq[c]);
      if (dq[c] < 0)
        dt = fmin(dt, q[c] / -dq[c]);
    }
    if (!isfinite(dt)) {
      rc = -1;
      break;
    }
    if (dt < 0)
      dt = 0;
    now += dt;
    for (size_t c = 0; c < C; c++) {
      q[c] += dq[c] * dt;
      if (dq[c] > 0 && q[c] >= cap[c] * (1 - 1e-13)) {
        q[c] = cap[c];
        full[c] = 1;
      }
      if (dq[c] < 0 && q[c] <= 1e-9)
        q[c] = 0;
    }
    for (size_t i = 0; i < W; i++) {
      nw *k = &w[i];
      if (k->state != SENDING)
        continue;
      double sent = rate[k->chan] * dt;
      k->left -= sent;
      if (k->left <= 1e-9 * (1 + sent)) {
        const xs_channel *ch = xs_profile_channel(prof, k->chan);
        double d = now + q[k->chan] / ch->drain_Bps + ch->latency_s;
        deliver[k->send] = d;
        if (d > k->maxdel)
          k->maxdel = d;
        if (d > last)
          last = d;
        k->pc++;
        k->ovh_done = 0;
        k->fence_pending = blocking;
        k->state = READY;
      }
    }
  }
  double done = 0;
  for (size_t i = 0; i < W; i++)
    done = fmax(done, finish[i]);
  *makespan = fmax(done, last);
  free(w), free(q), free(full), free(rate), free(dq), free(cap);
  free(counter);
  return rc;
}
