/*
 * emit.c: what every way of moving KV writes into its program: the
 * attention kernel's SMs as workers (one per group of SMs that finish
 * alike, copies = its SMs), the barrier that ends a kernel, the merge and
 * the fixed costs between kernels, the waits for the next block, the
 * final conversion. The ways (way_*.c) add the forwards.
 */
#include "plan/attention/attention.h"

#include <string.h>

xs_status xs__fa_prog_start(xs__fa_prog *g, const xs__fa_ring *r,
                            const xs__fa_costs *t, const xs_profile *prof,
                            const xs__fa_kcall (*call)[XS__FA_SHAPES],
                            size_t groups, int comm_free, const char *name,
                            xs_error *err) {
  memset(g, 0, sizeof *g);
  g->r = r;
  g->t = t;
  g->call = call;
  g->comm_free = comm_free;
  size_t ch = xs_profile_default_channel(prof);
  if (ch >= xs_profile_channel_count(prof))
    return xs__fail(err, XS_INVALID, "profile \"%s\" has no channel to forward the "
                    "KV blocks on (see xstage profiles show)", xs_profile_name(prof));
  snprintf(g->channel, sizeof g->channel, "%s", xs_profile_channel_name(prof, ch));
  g->ch = xs_profile_channel(prof, ch);
  g->r_w = fmin(g->ch->worker_inject_Bps > 0 ? g->ch->worker_inject_Bps : INFINITY,
                g->ch->inject_Bps);
  if (!(g->p = xs_program_new(name)))
    return xs__fail(err, XS_NOMEM, "out of memory");
  xs_status st = xs_program_counter(g->p, "kernel_done", &g->barrier, err);
  /* the host that issues the ring's work */
  g->synced = r->c->timing == XS_FA_SYNCED;
  if (!st)
    st = xs_program_add_workers(g->p, "host", 1, &g->host, err);
  if (!st && g->synced)
    st = xs_program_counter(g->p, "issued", &g->issued, err);
  /* every shape's call has the same groups of SMs */
  const xs__fa_kcall *k = NULL;
  for (int b = 0; b < 2 && !k; b++)
    for (int s = 0; s < XS__FA_SHAPES && !k; s++)
      if (call[b][s].n)
        k = &call[b][s];
  if (!k)
    st = st ? st : xs__fail(err, XS_INVALID, "the ring runs no kernel");
  if (groups < 1)
    groups = 1;
  for (size_t c = 0; !st && k && c < k->n; c++) {
    double sms = k->sms[c];
    for (size_t q = 0; !st && q < groups; q++) {
      /* the class's SMs in `groups` nearly equal parts */
      double part = floor(sms * (double)(q + 1) / (double)groups) -
                    floor(sms * (double)q / (double)groups);
      if (part < 1)
        continue;
      if (g->nw == XS__FA_WORKERS)
        return xs__fail(err, XS_INVALID, "too many groups of SMs");
      char wn[48];
      if (groups > 1)
        snprintf(wn, sizeof wn, "sms%zu.%zu", c, q);
      else
        snprintf(wn, sizeof wn, "sms%zu", c);
      st = xs_program_add_workers(g->p, wn, (size_t)part, &g->w[g->nw], err);
      g->wclass[g->nw] = c;
      g->wgroup[g->nw] = q;
      g->wsms[g->nw++] = part;
    }
  }
  if (st) {
    xs_program_free(g->p);
    g->p = NULL;
  }
  return st;
}

xs_status xs__fa_add_worker(xs__fa_prog *g, const char *name, double copies,
                            size_t *w, xs_error *err) {
  if (g->nw == XS__FA_WORKERS)
    return xs__fail(err, XS_INVALID, "too many workers");
  xs_status st = xs_program_add_workers(g->p, name, (size_t)copies, w, err);
  if (st)
    return st;
  g->w[g->nw] = *w;
  g->wclass[g->nw] = SIZE_MAX;
  g->wgroup[g->nw] = 0;
  g->wsms[g->nw++] = copies;
  return XS_OK;
}

const xs__fa_kcall *xs__fa_call(const xs__fa_prog *g, size_t s) {
  const xs__fa_step *st = &g->r->step[s];
  return &g->call[st->backward][st->shape];
}

xs_status xs__fa_barrier(xs__fa_prog *g, xs_error *err) {
  double n = 0;
  xs_status st = XS_OK;
  for (size_t i = 0; i < g->nw && !st; i++) {
    n += g->wsms[i];
    st = xs_program_signal_index(g->p, g->w[i], g->barrier, 1, err);
  }
  g->barrier_n += n;
  for (size_t i = 0; i < g->nw && !st; i++)
    st = xs_program_await_index(g->p, g->w[i], g->barrier, g->barrier_n, err);
  return st;
}

void xs__fa_kernel_terms(xs__fa_prog *g, size_t s, double slow, double extra) {
  const xs__fa_step *st = &g->r->step[s];
  const xs__fa_kcall *k = xs__fa_call(g, s), *all = &g->r->call[st->backward][st->shape];
  /* the ranks' mean kernel, on this call's SMs */
  double mean = all->end > 0 ? st->mean_s * k->end / all->end : 0;
  g->compute_s += k->end * slow;
  /* (zigzag's busiest rank may be the one whose merge is larger) */
  g->imbalance_s += fmax(0, k->end - mean) * slow;
  g->interference_s += extra;
}

xs_status xs__fa_kernel_on_classes(xs__fa_prog *g, size_t s, double slow,
                                   double extra, xs_error *err) {
  const xs__fa_kcall *k = xs__fa_call(g, s);
  xs_status st = XS_OK;
  for (size_t i = 0; i < g->nw && !st; i++)
    if (g->wclass[i] != SIZE_MAX)
      st = xs_program_compute(g->p, g->w[i], k->time[g->wclass[i]] * slow + extra, err);
  xs__fa_kernel_terms(g, s, slow, extra);
  return st ? st : xs__fa_barrier(g, err);
}

xs_status xs__fa_all_compute(xs__fa_prog *g, double seconds, xs_error *err) {
  xs_status st = XS_OK;
  for (size_t i = 0; i < g->nw && !st && seconds > 0; i++)
    st = xs_program_compute(g->p, g->w[i], seconds, err);
  return st;
}

xs_status xs__fa_all_wait(xs__fa_prog *g, size_t send, xs_error *err) {
  xs_status st = XS_OK;
  for (size_t i = 0; i < g->nw && !st; i++)
    st = xs_program_wait_send(g->p, g->w[i], send, err);
  return st;
}

/* The bytes step s's merge moves through HBM: the first step only
 * converts its output (unfused) or writes it (fused); later ones merge
 * their share of it; a backward step accumulates dQ, dK and dV. */
static double merge_B(const xs__fa_prog *g, size_t s) {
  const xs__fa_ring *r = g->r;
  const xs__fa_step *st = &r->step[s];
  const xs_fa_config *c = r->c;
  if (st->backward) {
    double kv_el = c->batch * c->seq * c->heads_kv * c->head_dim;
    return g->t->grad_B * (r->out_el + 2 * kv_el);
  }
  if (s == 0)
    return r->fused ? 0 : g->t->convert_B * r->out_el;
  return (r->fused ? g->t->fused_B : g->t->unfused_B) * r->out_el * st->out_share;
}

xs_status xs__fa_merge(xs__fa_prog *g, size_t s, double launches, double fixed,
                       xs_error *err) {
  double m = merge_B(g, s) / g->t->merge_Bps;
  double f = launches * g->t->gap_s + fixed;
  g->merge_s += m;
  g->fixed_s += f;
  return xs__fa_all_compute(g, m + f, err);
}

xs_status xs__fa_prog_end(xs__fa_prog *g, double end_ops, xs_error *err) {
  const xs_fa_config *c = g->r->c;
  double kv_el = c->batch * c->seq * c->heads_kv * c->head_dim;
  double B = (g->r->fused ? 0 : g->t->convert_B * g->r->out_el) +
             (c->backward ? g->t->convert_B * (g->r->out_el + 2 * kv_el) : 0);
  double m = B / g->t->merge_Bps;
  g->merge_s += m;
  xs_status st = XS_OK;
  if (end_ops > 0 && !(st = xs__fa_host_issue(g, end_ops * g->t->host_op_s, err)))
    st = xs__fa_await_issue(g, SIZE_MAX, err);
  if (!st)
    st = xs__fa_all_compute(g, m, err);
  return st ? st : xs_program_finish(g->p, err);
}

xs_status xs__fa_host_busy(xs__fa_prog *g, double seconds, xs_error *err) {
  if (!(seconds > 0))
    return XS_OK;
  g->host_total_s += seconds;
  return xs_program_compute(g->p, g->host, seconds, err);
}

xs_status xs__fa_host_issue(xs__fa_prog *g, double seconds, xs_error *err) {
  xs_status st = xs__fa_host_busy(g, seconds, err);
  if (st || !g->synced)
    return st;
  g->issued_n += 1;
  return xs_program_signal_index(g->p, g->host, g->issued, 1, err);
}

xs_status xs__fa_await_issue(xs__fa_prog *g, size_t w, xs_error *err) {
  xs_status st = XS_OK;
  if (!g->synced || !(g->issued_n > 0))
    return st;
  if (w != SIZE_MAX)
    return xs_program_await_index(g->p, w, g->issued, g->issued_n, err);
  for (size_t i = 0; i < g->nw && !st; i++)
    st = xs_program_await_index(g->p, g->w[i], g->issued, g->issued_n, err);
  return st;
}

/* a zigzag step that merges half of the output (its second half's
 * queries): it slices out and lse, and writes them back */
static int half_out(const xs__fa_prog *g, size_t s) {
  const xs__fa_step *st = &g->r->step[s];
  return !st->backward && st->out_share < 1;
}

/* the step's index within its pass */
static size_t pass_step(const xs__fa_prog *g, size_t s) {
  size_t P = (size_t)g->r->c->cp;
  return P ? s % P : s;
}

double xs__fa_post_host(const xs__fa_prog *g, size_t s) {
  const xs__fa_step *st = &g->r->step[s];
  if (!(st->send_B > 0))
    return 0;
  return (st->backward ? g->t->bwd_posts : 1) * g->t->post_ops * g->t->host_op_s;
}

double xs__fa_call_host(const xs__fa_prog *g, size_t s) {
  /* the call from Python; a backward call's other kernels from C++ */
  const xs__fa_step *st = &g->r->step[s];
  return g->t->host_op_s + (st->backward ? (g->t->bwd_kernels - 1) * g->t->launch_s : 0);
}

double xs__fa_merge_host(const xs__fa_prog *g, size_t s, int fused) {
  const xs__fa_costs *t = g->t;
  const xs__fa_step *st = &g->r->step[s];
  const xs_fa_config *c = g->r->c;
  if (st->backward)
    return t->bwd_acc_ops * t->host_op_s;
  if (fused) /* one kernel called from Python */
    return t->host_op_s;
  if (pass_step(g, s) == 0)
    return t->merge_first_ops * t->host_op_s;
  /* under zigzag some rank merges half of its output at every later step
   * (rank 0 at all of them): the ring goes at that host's pace whichever
   * rank's kernel is the longer */
  int half = c->causal && c->layout == XS_FA_ZIGZAG;
  return (t->merge_ops + (half ? t->slice_ops : 0)) * t->host_op_s +
         t->unfused_kernels * t->launch_s;
}

double xs__fa_merge_kernels(const xs__fa_prog *g, size_t s, int fused) {
  const xs__fa_costs *t = g->t;
  const xs__fa_step *st = &g->r->step[s];
  if (st->backward)
    return t->bwd_acc_ops;
  if (fused || pass_step(g, s) == 0)
    return 1;
  return t->unfused_kernels + (half_out(g, s) ? t->slice_kernels : 0);
}

double xs__fa_streams(const xs__fa_prog *g, double units, double unit_Bps) {
  double m = unit_Bps > 0 && isfinite(g->r_w) ? unit_Bps / g->r_w : 1;
  return fmax(1, round(units * m));
}

double xs__fa_interference(const xs__fa_prog *g, double hbm_bytes) {
  if (g->comm_free || !(hbm_bytes > 0))
    return 0;
  return g->t->interference * hbm_bytes / g->t->hbm_Bps;
}
