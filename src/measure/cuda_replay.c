/*
 * cuda_replay.c: the host side of the replay on a CUDA channel, in plain C
 * so that it is built and tested everywhere: the plan that spreads each
 * program worker over its CTAs (each CTA a copy of its worker's ops, each
 * send split into one part per CTA), and the result made of the kernel's
 * stamps. The kernel itself is in cuda.cu; docs/cuda.md.
 */
#include "../internal.h"
#include "xstage_measure.h"
#include "cuda_probe.h"

#include <ctype.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#define MAX_CTAS 4096
#define RING_MAX_VECTORS ((uint64_t)256 * 1048576 / 16) /* 256 MiB */

void xs__gplan_free(xs__gplan *g) {
  if (!g)
    return;
  free(g->ops);
  free(g->first);
  free(g->count);
  free(g->worker);
  free(g->parts);
  memset(g, 0, sizeof *g);
}

/* "sms:132 dispatch:8" (spaces or commas) into width[w] */
static xs_status parse_widths(const xs_program *p, const char *spec,
                              uint32_t *width, xs_error *err) {
  for (size_t w = 0; w < p->nworkers; w++)
    width[w] = 1;
  const char *s = spec ? spec : "";
  while (*s) {
    while (*s == ' ' || *s == ',')
      s++;
    if (!*s)
      break;
    const char *item = s, *colon = NULL;
    while (*s && *s != ' ' && *s != ',') {
      if (*s == ':' && !colon)
        colon = s;
      s++;
    }
    int len = (int)(s - item);
    if (!colon || colon == item || colon + 1 == s)
      return xs__fail(err, XS_INVALID, "width \"%.*s\": expected WORKER:CTAS, e.g. sms:132",
                      len, item);
    char *end;
    long n = strtol(colon + 1, &end, 10);
    if (end != s || n < 1 || n > MAX_CTAS)
      return xs__fail(err, XS_INVALID, "width \"%.*s\": expected a CTA count 1..%d after the colon",
                      len, item, MAX_CTAS);
    size_t w = 0, nl = (size_t)(colon - item);
    while (w < p->nworkers &&
           !(strlen(p->workers[w].name) == nl && !memcmp(p->workers[w].name, item, nl)))
      w++;
    if (w == p->nworkers)
      return xs__fail(err, XS_INVALID, "width \"%.*s\": the program has no worker \"%.*s\"",
                      len, item, (int)nl, item);
    width[w] = (uint32_t)n;
  }
  return XS_OK;
}

xs_status xs__gplan_build(const xs_program *p, const char *widths, unsigned threads,
                    double timeout_s, xs__gplan *g, xs_error *err) {
  memset(g, 0, sizeof *g);
  if (!p->finished)
    return xs__fail(err, XS_INVALID, "the program is not finished");
  if (threads == 0)
    threads = 256;
  if (threads % 32 || threads > 992)
    return xs__fail(err, XS_INVALID,
                    "threads %u: expected a multiple of 32 up to 992 (one more warp tracks delivery)",
                    threads);
  uint32_t *width = malloc((p->nworkers + 1) * sizeof *width);
  if (!width)
    return xs__fail(err, XS_NOMEM, "out of memory");
  xs_status st = parse_widths(p, widths, width, err);
  size_t nctas = 0, nops = 0;
  double vectors = 0;
  for (size_t w = 0; !st && w < p->nworkers; w++) {
    nctas += width[w];
    nops += (size_t)width[w] * p->workers[w].nops;
  }
  for (size_t s = 0; s < p->nsends; s++)
    vectors += ceil(p->workers[p->send_worker[s]].ops[p->send_op[s]].value / 16);
  for (size_t w = 0; !st && w < p->nworkers; w++) {
    /* a compute loop cannot be stopped: refuse one that outlasts the timeout */
    double busy = 0;
    for (size_t i = 0; i < p->workers[w].nops; i++)
      busy += p->workers[w].ops[i].kind == XS_OP_COMPUTE ? p->workers[w].ops[i].value : 0;
    if (busy >= (timeout_s > 0 ? timeout_s : 30) / 2)
      st = xs__fail(err, XS_INVALID,
                    "worker \"%s\" computes for %g s, more than half the timeout (%g s)",
                    p->workers[w].name, busy, timeout_s > 0 ? timeout_s : 30);
  }
  if (!st && nctas > MAX_CTAS)
    st = xs__fail(err, XS_INVALID, "the widths add up to %zu CTAs (at most %d)", nctas, MAX_CTAS);
  if (!st && nops > UINT32_MAX / 2)
    st = xs__fail(err, XS_INVALID, "the program has too many ops to replay (%zu over all CTAs)",
                  nops);
  if (st) {
    free(width);
    return st;
  }
  g->nctas = (unsigned)nctas;
  g->threads = threads;
  g->nops = nops;
  g->nsends = p->nsends;
  g->timeout_s = timeout_s > 0 ? timeout_s : 30;
  g->ring_vectors = vectors < (double)RING_MAX_VECTORS ? (uint64_t)vectors : RING_MAX_VECTORS;
  if (g->ring_vectors < 1024)
    g->ring_vectors = 1024;
  g->ops = malloc((nops + 1) * sizeof *g->ops);
  g->first = malloc(nctas * sizeof *g->first);
  g->count = malloc(nctas * sizeof *g->count);
  g->worker = malloc(nctas * sizeof *g->worker);
  g->parts = malloc((p->nsends + 1) * sizeof *g->parts);
  if (!g->ops || !g->first || !g->count || !g->worker || !g->parts) {
    free(width);
    xs__gplan_free(g);
    return xs__fail(err, XS_NOMEM, "out of memory");
  }
  for (size_t s = 0; s < p->nsends; s++)
    g->parts[s] = width[p->send_worker[s]];
  /* CTAs worker after worker; each part gets its own stretch of the ring,
   * contiguous (a part that would cross the end starts again at 0) */
  uint64_t cursor = 0;
  size_t c = 0, k = 0;
  for (size_t w = 0; w < p->nworkers; w++) {
    const xs__worker *wk = &p->workers[w];
    for (uint32_t j = 0; j < width[w]; j++, c++) {
      g->first[c] = (uint32_t)k;
      g->count[c] = (uint32_t)wk->nops;
      g->worker[c] = (uint32_t)w;
      for (size_t i = 0; i < wk->nops; i++, k++) {
        const xs__op *op = &wk->ops[i];
        xs__gop *o = &g->ops[k];
        o->kind = op->kind;
        o->send = op->kind == XS_OP_SEND || op->kind == XS_OP_WAIT ? op->aux : 0;
        o->n = 0;
        o->off = 0;
        if (op->kind == XS_OP_COMPUTE) {
          o->n = (uint64_t)llround(op->value * 1e9);
        } else if (op->kind == XS_OP_SEND) {
          uint64_t v = (uint64_t)ceil(op->value / 16);
          uint64_t n = v / width[w] + (j < v % width[w]);
          if (n > g->ring_vectors)
            n = g->ring_vectors, g->wrapped = 1; /* a part larger than the ring */
          if (cursor + n > g->ring_vectors)
            cursor = 0, g->wrapped = 1;
          o->n = n;
          o->off = cursor;
          cursor += n;
        }
      }
    }
  }
  free(width);
  return XS_OK;
}

/* GPU ns when the first CTA saw the start flag: time 0 of the result */
static uint64_t first_start(const xs__gplan *g, const xs__gstamps *t) {
  uint64_t g0 = UINT64_MAX;
  for (unsigned c = 0; c < g->nctas; c++)
    g0 = t->start_ns[c] < g0 ? t->start_ns[c] : g0;
  return g0;
}

/* The measured result: per program op, the earliest start and the latest
 * end over its worker's CTAs, from the first CTA to see the start flag. */
xs_status xs__gplan_result(const xs_program *p, const xs__gplan *g,
                           const xs__gstamps *t, xs_result **out, xs_error *err) {
  *out = NULL;
  xs_result *r = calloc(1, sizeof *r);
  if (r) {
    r->workers = calloc(p->nworkers + 1, sizeof *r->workers);
    r->sends = calloc(p->nsends + 1, sizeof *r->sends);
    r->channels = calloc(1, sizeof *r->channels);
  }
  size_t maxops = 1;
  for (size_t w = 0; w < p->nworkers; w++)
    maxops = p->workers[w].nops > maxops ? p->workers[w].nops : maxops;
  double *beg = malloc(maxops * sizeof *beg), *fin = malloc(maxops * sizeof *fin);
  if (!r || !r->workers || !r->sends || !r->channels || !beg || !fin) {
    xs_result_free(r);
    free(beg);
    free(fin);
    return xs__fail(err, XS_NOMEM, "out of memory");
  }
  r->model = XS_MODEL_BURSTGAP;
  r->nworkers = p->nworkers;
  r->nsends = p->nsends;
  r->nchannels = 1;
  uint64_t g0 = first_start(g, t);
  double last = 0;
  unsigned c = 0;
  for (size_t w = 0; w < p->nworkers; w++) {
    const xs__worker *wk = &p->workers[w];
    for (size_t i = 0; i < wk->nops; i++)
      beg[i] = INFINITY, fin[i] = 0;
    for (; c < g->nctas && g->worker[c] == w; c++)
      for (size_t i = 0; i < wk->nops; i++) {
        const uint64_t *s = &t->op_ns[2 * ((size_t)g->first[c] + i)];
        beg[i] = fmin(beg[i], 1e-9 * (double)(int64_t)(s[0] - g0));
        fin[i] = fmax(fin[i], 1e-9 * (double)(int64_t)(s[1] - g0));
      }
    xs_worker_result *wr = &r->workers[w];
    for (size_t i = 0; i < wk->nops; i++) {
      const xs__op *op = &wk->ops[i];
      double d = fin[i] - beg[i];
      if (op->kind == XS_OP_COMPUTE) {
        wr->compute_s += d;
      } else if (op->kind == XS_OP_SEND) {
        xs_send_result *sr = &r->sends[op->aux];
        sr->issue_start_s = beg[i];
        sr->issue_end_s = fin[i];
        wr->issue_s += d;
        r->channels[0].bytes += op->value;
        r->channels[0].sends++;
      } else {
        wr->blocked_s += d;
      }
      wr->finish_s = fmax(wr->finish_s, fin[i]);
    }
    wr->stall_s = wr->blocked_s;
    r->issue_done_s = fmax(r->issue_done_s, wr->finish_s);
  }
  for (size_t s = 0; s < p->nsends; s++) {
    xs_send_result *sr = &r->sends[s];
    double d = t->host_s[s] >= 0 ? t->host_s[s] : 1e-9 * (double)(int64_t)(t->fence_ns[s] - g0);
    /* delivered no earlier than issued: the host's clock and the GPU's
     * meet only through the start flag */
    sr->deliver_s = fmax(d, sr->issue_end_s);
    sr->xstage_s = sr->deliver_s - sr->issue_end_s;
    last = fmax(last, sr->deliver_s);
  }
  r->makespan_s = fmax(r->issue_done_s, last);
  free(beg);
  free(fin);
  *out = r;
  return XS_OK;
}

static int cmp_double(const void *a, const void *b) {
  double x = *(const double *)a, y = *(const double *)b;
  return (x > y) - (x < y);
}

void xs__gplan_info(const xs__gplan *g, const xs__gstamps *t, xs_replay_info *info) {
  memset(info, 0, sizeof *info);
  info->ctas = g->nctas;
  info->threads = g->threads;
  info->timer_tick_s = t->tick_s;
  info->fma_per_ns = t->fma_per_ns;
  info->one_way_s = t->one_way_s;
  info->tags_checked = t->tags_checked;
  info->tags_missing = t->tags_missing;
  uint64_t g0 = first_start(g, t), g1 = 0;
  for (unsigned c = 0; c < g->nctas; c++)
    g1 = t->start_ns[c] > g1 ? t->start_ns[c] : g1;
  info->start_skew_s = g->nctas ? 1e-9 * (double)(g1 - g0) : 0;
  double *d = malloc((g->nsends + 1) * sizeof *d);
  size_t n = 0;
  for (size_t s = 0; d && s < g->nsends; s++)
    if (t->host_s[s] >= 0)
      d[n++] = t->host_s[s] - 1e-9 * (double)(int64_t)(t->fence_ns[s] - g0);
  if (n) {
    qsort(d, n, sizeof *d, cmp_double);
    info->host_minus_fence_median_s = d[n / 2];
    info->host_minus_fence_max_s = d[n - 1];
  }
  free(d);
}

xs_status xs__cuda_replay_plan(const xs_program *p, const char *channel,
                               const xs_probe_options *o, xs__gplan *g, xs_error *err) {
  memset(g, 0, sizeof *g);
  if (strcmp(channel, "cuda-host") && strcmp(channel, "cuda-p2p"))
    return xs__fail(err, XS_INVALID,
                    "replay runs on cuda-host and cuda-p2p (\"%s\" is a probe only)", channel);
  return xs__gplan_build(p, o->cuda_widths, o->cuda_threads, o->timeout_s, g, err);
}

xs_status xs__cuda_replay(const xs_program *p, const char *channel,
                          const xs_probe_options *o, xs_result **out, xs_error *err) {
  *out = NULL;
  char why[512];
  xs__gplan g;
  xs_status st = xs__cuda_replay_plan(p, channel, o, &g, err);
  if (st)
    return st;
  if (xs__cuda_device_count(why, sizeof why) <= 0) {
    if (!xs_cuda_built()) {
      xs__gplan_free(&g);
      return xs__fail(err, XS_NOTBUILT, "%s", why);
    }
    xs__gplan_free(&g);
    return xs__fail(err, XS_NODEV, "%s", why);
  }
  xs__gstamps t;
  memset(&t, 0, sizeof t);
  int rc;
  t.op_ns = malloc(2 * (g.nops + 1) * sizeof *t.op_ns);
  t.start_ns = malloc((g.nctas + 1) * sizeof *t.start_ns);
  t.fence_ns = malloc((g.nsends + 1) * sizeof *t.fence_ns);
  t.host_s = malloc((g.nsends + 1) * sizeof *t.host_s);
  if (!t.op_ns || !t.start_ns || !t.fence_ns || !t.host_s)
    st = xs__fail(err, XS_NOMEM, "out of memory");
  else if ((rc = xs__cuda_replay_run(channel, &g, &t, why, sizeof why)))
    st = xs__fail(err, rc == XS__CUDA_TIMEOUT ? XS_TIMEOUT : rc == XS__CUDA_NODEV ? XS_NODEV : XS_IO,
                  "replay on %s: %s", channel, why);
  else if (!(st = xs__gplan_result(p, &g, &t, out, err)) && o->info)
    xs__gplan_info(&g, &t, o->info);
  free(t.op_ns);
  free(t.start_ns);
  free(t.fence_ns);
  free(t.host_s);
  xs__gplan_free(&g);
  return st;
}
