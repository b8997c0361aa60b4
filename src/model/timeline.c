/*
 * timeline.c: recording what a model or the simulator saw: segments of each
 * worker's time (compute, overhead, issue, stall, blocked) and points of
 * each channel's backlog, at most TL_MAX_POINTS of them (past that every
 * second point is dropped and the stride doubles). Rendering them is
 * src/report/render.c.
 */
#include "internal.h"

#include <jansson.h>
#include <math.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>

xs_timeline *xs_timeline_new(void) { return calloc(1, sizeof(xs_timeline)); }

void xs_timeline_free(xs_timeline *tl) {
  if (!tl)
    return;
  free(tl->segments);
  free(tl->points);
  free(tl);
}

void xs__tl_segment(xs_timeline *tl, xs_segment_kind kind, size_t worker,
                    uint32_t send, double start_s, double end_s) {
  if (!(end_s > start_s))
    return;
  if (xs__grow(&tl->segments, &tl->segments_cap, tl->nsegments + 1,
               sizeof *tl->segments))
    return;
  xs_segment *s = &tl->segments[tl->nsegments++];
  s->start_s = start_s;
  s->end_s = end_s;
  s->worker = (uint32_t)worker;
  s->send = send;
  s->kind = kind;
  s->counter = XS__NONE;
}

void xs__tl_await(xs_timeline *tl, size_t worker, uint32_t counter,
                  double start_s, double end_s) {
  size_t n = tl->nsegments;
  xs__tl_segment(tl, XS_SEG_BLOCKED, worker, XS__NONE, start_s, end_s);
  if (tl->nsegments > n)
    tl->segments[n].counter = counter;
}

#define TL_MAX_POINTS 4000000

void xs__tl_point(xs_timeline *tl, size_t channel, double t_s,
                  double backlog_B) {
  if (tl->point_stride > 1 && tl->point_count++ % tl->point_stride)
    return;
  if (tl->npoints >= TL_MAX_POINTS) {
    size_t k = 0;
    for (size_t i = 0; i < tl->npoints; i += 2)
      tl->points[k++] = tl->points[i];
    tl->npoints = k;
    tl->point_stride = tl->point_stride ? 2 * tl->point_stride : 2;
  }
  /* a point at the same time and channel as the last one replaces it */
  if (tl->npoints > 0) {
    xs_backlog_point *last = &tl->points[tl->npoints - 1];
    if (last->channel == channel && last->t_s == t_s) {
      last->backlog_B = backlog_B;
      return;
    }
  }
  if (xs__grow(&tl->points, &tl->points_cap, tl->npoints + 1,
               sizeof *tl->points))
    return;
  xs_backlog_point *p = &tl->points[tl->npoints++];
  p->t_s = t_s;
  p->backlog_B = backlog_B;
  p->channel = (uint32_t)channel;
}
