/*
 * render.c: a recorded timeline (src/model/timeline.c), for people to look
 * at: a Chrome trace (opens in ui.perfetto.dev and chrome://tracing) with a
 * track per worker and per channel, and an SVG with worker lanes over the
 * channels' backlog. Both are built from an xs_timeline and the result.
 */
#include "internal.h"
#include "formats/jsonutil.h"

#include <jansson.h>
#include <math.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>

static const char *const seg_names[] = {"compute", "overhead", "issue",
                                        "stall", "blocked"};
static const char *const seg_colors[] = {"#4e79a7", "#bab0ac", "#59a14f",
                                         "#e15759", "#f1ce63"};

static const char *chan_name(const xs_profile *prof, size_t c) {
  return xs_profile_channel_name(prof, c);
}

/* ---- Chrome trace event JSON ---- */

#define TRACE_MAX_POINTS 200000

/* fmt's text in b, whole however long the names in it (NULL: out of
 * memory) */
static const char *named(xs__sbuf *b, const char *fmt, ...) XS__PRINTF(2, 3);
static const char *named(xs__sbuf *b, const char *fmt, ...) {
  va_list ap;
  va_start(ap, fmt);
  char one[1];
  int n = vsnprintf(one, 1, fmt, ap);
  va_end(ap);
  b->n = 0;
  if (n < 0 || xs__grow(&b->s, &b->cap, (size_t)n + 1, 1))
    return NULL;
  va_start(ap, fmt);
  vsnprintf(b->s, (size_t)n + 1, fmt, ap);
  va_end(ap);
  return b->s;
}

/* Every event or none: a name jansson refuses, or memory running out,
 * makes the whole trace NULL rather than one with events missing. */
static char *trace_json(const xs_program *p, const xs_profile *prof,
                             const xs_result *r, const xs_timeline *tl) {
  json_t *ev = json_array();
  const char *model = xs_model_name(r->model);
  xs__sbuf nb = {0}, ib = {0}; /* a name, a send's id */
  int bad = !ev;
  /* process and thread names */
  bad |= xs__jappend(ev, json_pack("{s:s,s:s,s:i,s:i,s:{s:s}}", "name", "process_name",
                                   "ph", "M", "pid", 1, "tid", 0, "args", "name",
                                   "workers"));
  const char *nm = named(&nb, "channels (%s)", model);
  bad |= xs__jappend(ev, nm ? json_pack("{s:s,s:s,s:i,s:i,s:{s:s}}", "name",
                                        "process_name", "ph", "M", "pid", 2, "tid", 0,
                                        "args", "name", nm)
                            : NULL);
  for (size_t w = 0; w < p->nworkers && !bad; w++) {
    /* a worker with copies: one track, named with how many it stands for */
    nm = p->workers[w].copies > 1
             ? named(&nb, "%s (x%u)", p->workers[w].name, (unsigned)p->workers[w].copies)
             : p->workers[w].name;
    bad |= xs__jappend(ev, nm ? json_pack("{s:s,s:s,s:i,s:I,s:{s:s}}", "name",
                                          "thread_name", "ph", "M", "pid", 1, "tid",
                                          (json_int_t)w + 1, "args", "name", nm)
                              : NULL);
  }
  for (size_t c = 0; c < r->nchannels && !bad; c++)
    bad |= xs__jappend(
        ev, json_pack("{s:s,s:s,s:i,s:I,s:{s:s}}", "name", "thread_name", "ph",
                      "M", "pid", 2, "tid", (json_int_t)c + 1, "args", "name",
                      chan_name(prof, c)));
  /* worker slices, times in microseconds as the format wants */
  for (size_t i = 0; i < tl->nsegments && !bad; i++) {
    const xs_segment *s = &tl->segments[i];
    json_t *args = json_object();
    bad |= xs__jput(args, "duration_s", json_real(s->end_s - s->start_s));
    if (s->send != XS__NONE && s->send < p->nsends) {
      const char *id = xs__send_id(p, s->send, &ib);
      bad |= xs__jput(args, "send", id ? json_string(id) : NULL);
      bad |= xs__jput(args, "bytes", json_real(xs_program_send_bytes(p, s->send)));
    }
    bad |= xs__jappend(
        ev, json_pack("{s:s,s:s,s:s,s:f,s:f,s:i,s:I,s:o}", "name",
                      seg_names[s->kind], "cat", seg_names[s->kind], "ph", "X",
                      "ts", s->start_s * 1e6, "dur",
                      (s->end_s - s->start_s) * 1e6, "pid", 1, "tid",
                      (json_int_t)s->worker + 1, "args", args));
  }
  /* backlog counters, thinned evenly past TRACE_MAX_POINTS */
  size_t stride = tl->npoints / TRACE_MAX_POINTS + 1;
  for (size_t i = 0; i < tl->npoints && !bad; i++) {
    const xs_backlog_point *pt = &tl->points[i];
    if (i % stride && i + 1 < tl->npoints)
      continue;
    nm = named(&nb, "backlog %s (bytes)", chan_name(prof, pt->channel));
    bad |= xs__jappend(
        ev, nm ? json_pack("{s:s,s:s,s:f,s:i,s:I,s:{s:f}}", "name", nm, "ph", "C",
                           "ts", pt->t_s * 1e6, "pid", 2, "tid",
                           (json_int_t)pt->channel + 1, "args", "backlog_B",
                           pt->backlog_B)
               : NULL);
  }
  /* each send's X-stage as an async span on its channel's track */
  for (size_t s = 0; r->sends && s < r->nsends && !bad; s++) {
    const xs_send_result *sr = &r->sends[s];
    uint32_t c = 0;
    const char *cn = xs_program_send_channel(p, s);
    if (cn) {
      long k = xs_profile_find_channel(prof, cn);
      c = k < 0 ? 0 : (uint32_t)k;
    }
    const char *id = xs__send_id(p, s, &ib);
    nm = id ? named(&nb, "X-stage %s", id) : NULL;
    bad |= xs__jappend(
        ev, nm ? json_pack("{s:s,s:s,s:s,s:I,s:f,s:i,s:I,s:{s:f,s:f,s:f}}", "name",
                           nm, "cat", "xstage", "ph", "b", "id", (json_int_t)s,
                           "ts", sr->issue_end_s * 1e6, "pid", 2, "tid",
                           (json_int_t)c + 1, "args", "bytes",
                           xs_program_send_bytes(p, s), "xstage_s", sr->xstage_s,
                           "deliver_s", sr->deliver_s)
               : NULL);
    bad |= xs__jappend(
        ev, nm ? json_pack("{s:s,s:s,s:s,s:I,s:f,s:i,s:I}", "name", nm, "cat",
                           "xstage", "ph", "e", "id", (json_int_t)s, "ts",
                           sr->deliver_s * 1e6, "pid", 2, "tid", (json_int_t)c + 1)
               : NULL);
  }
  free(nb.s);
  free(ib.s);
  json_t *root = json_object();
  bad |= xs__jput(root, "traceEvents", ev);
  bad |= xs__jput(root, "displayTimeUnit", json_string("ns"));
  json_t *meta = json_object();
  bad |= xs__jput(meta, "program", json_string(p->name));
  bad |= xs__jput(meta, "profile", json_string(xs_profile_name(prof)));
  bad |= xs__jput(meta, "model", json_string(model));
  bad |= xs__jput(meta, "makespan_s", json_real(r->makespan_s));
  bad |= xs__jput(meta, "units", json_string("ts and dur in microseconds; "
                                             "args in bytes and seconds"));
  bad |= xs__jput(root, "otherData", meta);
  char *out = bad ? NULL : json_dumps(root, JSON_COMPACT | JSON_REAL_PRECISION(12));
  json_decref(root);
  return out;
}

/* numbers with a point whatever the host's locale */
char *xs_timeline_trace_json(const xs_program *p, const xs_profile *prof,
                             const xs_result *r, const xs_timeline *tl) {
  void *loc = xs__numeric_c();
  char *s = trace_json(p, prof, r, tl);
  xs__numeric_restore(loc);
  return s;
}

/* ---- SVG ---- */

#define SVG_W 1200.0
#define SVG_LEFT 130.0
#define SVG_RIGHT 20.0
#define LANE_H 14.0
#define MAX_LANES 33
#define BINS 540

/* The shortest time axis: its bins and ticks (a 1/BINS and a 1/80 of it)
 * are still normal numbers, so none of them underflows to 0. */
#define MIN_SPAN 1e-300

/* Choose "nice" tick spacing for an axis of length span (positive,
 * finite). */
static double tick_step(double span) {
  double raw = span / 8, p = pow(10, floor(log10(raw)));
  double m = raw / p;
  return p * (m < 1.5 ? 1 : m < 3.5 ? 2 : m < 7.5 ? 5 : 10);
}

static char *timeline_svg(const xs_program *p, const xs_profile *prof,
                      const xs_result *r, const xs_timeline *tl) {
  xs__sbuf b = {0};
  double T = r->makespan_s > 0 ? fmax(r->makespan_s, MIN_SPAN) : 1e-9;
  double plot_w = SVG_W - SVG_LEFT - SVG_RIGHT;
  size_t nw = p->nworkers;
  /* one lane per worker, or groups of workers when there are too many */
  size_t per = nw <= MAX_LANES ? 1 : (nw + 32 - 1) / 32;
  size_t nlanes = (nw + per - 1) / per;
  size_t nch = 0;
  for (size_t c = 0; c < r->nchannels; c++)
    nch += r->channels[c].sends > 0;
  double top = 46, lanes_h = (double)nlanes * LANE_H;
  double chan_h = 110, chan_gap = 52, strip_h = 12; /* title, X-stage strip */
  double height = top + lanes_h + 30 + (double)nch * (chan_h + chan_gap) + 40;
  xs__sb_printf(&b,
            "<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n"
            "<svg xmlns=\"http://www.w3.org/2000/svg\" width=\"%.0f\" "
            "height=\"%.0f\" viewBox=\"0 0 %.0f %.0f\" font-family=\"sans-serif\" "
            "font-size=\"11\">\n<rect width=\"100%%\" height=\"100%%\" "
            "fill=\"white\"/>\n",
            SVG_W, height, SVG_W, height);
  char t1[32], t2[32];
  xs__sb_printf(&b, "<text x=\"%.0f\" y=\"18\" font-size=\"14\" font-weight=\"bold\">",
            SVG_LEFT);
  xs__sb_escaped(&b, p->name);
  xs__sb_printf(&b, " on ");
  xs__sb_escaped(&b, xs_profile_name(prof));
  xs__sb_printf(&b, " (%s): makespan %s, last worker done %s</text>\n",
            xs_model_name(r->model), xs_format_time(r->makespan_s, t1, sizeof t1),
            xs_format_time(r->issue_done_s, t2, sizeof t2));
  /* legend */
  double lx = SVG_LEFT;
  for (int k = 0; k < 5; k++) {
    xs__sb_printf(&b,
              "<rect x=\"%.1f\" y=\"26\" width=\"10\" height=\"10\" fill=\"%s\"/>"
              "<text x=\"%.1f\" y=\"35\">%s</text>\n",
              lx, seg_colors[k], lx + 14, seg_names[k]);
    lx += 90;
  }
  xs__sb_printf(&b,
            "<rect x=\"%.1f\" y=\"26\" width=\"10\" height=\"10\" fill=\"#9c755f\" "
            "fill-opacity=\"0.35\"/><text x=\"%.1f\" y=\"35\">X-stage (issued, "
            "not delivered)</text>\n",
            lx, lx + 14);
#define X(t) (SVG_LEFT + (t) / T * plot_w)
  /* worker lanes */
  if (per == 1) {
    for (size_t w = 0; w < nw; w++) {
      double y = top + (double)w * LANE_H;
      xs__sb_printf(&b, "<text x=\"%.0f\" y=\"%.1f\" text-anchor=\"end\">",
                SVG_LEFT - 6, y + LANE_H - 3);
      xs__sb_escaped(&b, p->workers[w].name);
      if (p->workers[w].copies > 1)
        xs__sb_printf(&b, " (x%u)", (unsigned)p->workers[w].copies);
      xs__sb_printf(&b, "</text>\n");
    }
    for (size_t i = 0; i < tl->nsegments; i++) {
      const xs_segment *s = &tl->segments[i];
      double y = top + (double)s->worker * LANE_H;
      double w = (s->end_s - s->start_s) / T * plot_w;
      xs__sb_printf(&b,
                "<rect x=\"%.2f\" y=\"%.1f\" width=\"%.2f\" height=\"%.1f\" "
                "fill=\"%s\"/>\n",
                X(s->start_s), y + 1, w < 0.3 ? 0.3 : w, LANE_H - 2,
                seg_colors[s->kind]);
    }
  } else {
    /* groups: per time bin, the share of the group's workers in each state,
     * stacked in the lane */
    double *occ = calloc(nlanes * BINS * 5, sizeof *occ);
    if (!occ) {
      free(b.s);
      return NULL;
    }
    double bin_t = T / BINS;
    for (size_t i = 0; i < tl->nsegments; i++) {
      const xs_segment *s = &tl->segments[i];
      size_t lane = s->worker / per;
      size_t b0 = (size_t)(s->start_s / bin_t), b1 = (size_t)(s->end_s / bin_t);
      for (size_t k = b0; k <= b1 && k < BINS; k++) {
        double lo = fmax(s->start_s, (double)k * bin_t);
        double hi = fmin(s->end_s, (double)(k + 1) * bin_t);
        if (hi > lo)
          occ[(lane * BINS + k) * 5 + s->kind] += hi - lo;
      }
    }
    for (size_t lane = 0; lane < nlanes; lane++) {
      size_t first = lane * per, last = first + per - 1;
      if (last >= nw)
        last = nw - 1;
      double y = top + (double)lane * LANE_H;
      xs__sb_printf(&b, "<text x=\"%.0f\" y=\"%.1f\" text-anchor=\"end\">",
                SVG_LEFT - 6, y + LANE_H - 3);
      xs__sb_escaped(&b, p->workers[first].name);
      xs__sb_printf(&b, "..");
      xs__sb_escaped(&b, p->workers[last].name);
      xs__sb_printf(&b, "</text>\n");
      double cap = bin_t * (double)(last - first + 1);
      for (size_t k = 0; k < BINS; k++) {
        double yy = y + LANE_H - 1;
        for (int kind = 0; kind < 5; kind++) {
          double h = occ[(lane * BINS + k) * 5 + kind] / cap * (LANE_H - 2);
          if (h < 0.05)
            continue;
          yy -= h;
          xs__sb_printf(&b,
                    "<rect x=\"%.2f\" y=\"%.2f\" width=\"%.2f\" height=\"%.2f\" "
                    "fill=\"%s\"/>\n",
                    X((double)k * bin_t), yy, plot_w / BINS + 0.6, h,
                    seg_colors[kind]);
        }
      }
    }
    free(occ);
    xs__sb_printf(&b,
              "<text x=\"%.0f\" y=\"%.1f\" fill=\"#555\">%zu workers in %zu lanes "
              "of %zu: each lane stacks the share of its workers in each "
              "state</text>\n",
              SVG_LEFT, top + lanes_h + 12, nw, nlanes, per);
  }
  /* time axis under the lanes */
  double axis_y = top + lanes_h + 2;
  double step = tick_step(T);
  /* near the largest double, T * 1.0001 and the last t are infinite */
  for (double t = 0; t <= T * 1.0001 && t < INFINITY; t += step) {
    xs__sb_printf(&b,
              "<line x1=\"%.2f\" x2=\"%.2f\" y1=\"%.1f\" y2=\"%.1f\" "
              "stroke=\"#ddd\"/>\n",
              X(t), X(t), top, height - 40);
    xs__sb_printf(&b,
              "<text x=\"%.2f\" y=\"%.1f\" text-anchor=\"middle\" "
              "fill=\"#555\">%s</text>\n",
              X(t), height - 26, xs_format_time(t, t1, sizeof t1));
  }
  (void)axis_y;
  /* channels: backlog over time, the capacity, the X-stages */
  double y0 = top + lanes_h + 30 + strip_h + 20;
  for (size_t c = 0; c < r->nchannels; c++) {
    if (!r->channels[c].sends)
      continue;
    const xs_channel *ch = xs_profile_channel(prof, c);
    double peak = r->channels[c].peak_backlog_B;
    double ymax = isfinite(ch->capacity_B) && ch->capacity_B > 0
                      ? fmax(ch->capacity_B, peak)
                      : peak;
    if (!(ymax > 0))
      ymax = 1;
    ymax *= 1.1;
    double base = y0 + chan_h;
    xs__sb_printf(&b, "<text x=\"%.0f\" y=\"%.1f\" font-weight=\"bold\">", SVG_LEFT,
              y0 - strip_h - 10);
    xs__sb_escaped(&b, chan_name(prof, c));
    char a1[32], a2[32];
    xs__sb_printf(&b, ": backlog (peak %s), capacity %s</text>\n",
              xs_format_size(peak, a1, sizeof a1),
              xs_format_size(ch->capacity_B, a2, sizeof a2));
    xs__sb_printf(&b,
              "<rect x=\"%.0f\" y=\"%.1f\" width=\"%.0f\" height=\"%.0f\" "
              "fill=\"none\" stroke=\"#999\"/>\n",
              SVG_LEFT, y0, plot_w, chan_h);
    xs__sb_printf(&b, "<text x=\"%.0f\" y=\"%.1f\" text-anchor=\"end\">%s</text>\n",
              SVG_LEFT - 6, y0 + 10, xs_format_size(ymax, a1, sizeof a1));
    xs__sb_printf(&b, "<text x=\"%.0f\" y=\"%.1f\" text-anchor=\"end\">0 B</text>\n",
              SVG_LEFT - 6, base);
    /* X-stages in a strip above the panel: overlapping spans darken */
    double sy = y0 - strip_h - 4;
    xs__sb_printf(&b, "<text x=\"%.0f\" y=\"%.1f\" text-anchor=\"end\">X-stage</text>\n",
              SVG_LEFT - 6, sy + strip_h - 2);
    size_t drawn = 0;
    for (size_t s = 0; r->sends && s < r->nsends && drawn < 5000; s++) {
      const char *cn = xs_program_send_channel(p, s);
      long k = cn ? xs_profile_find_channel(prof, cn)
                  : (long)xs_profile_default_channel(prof);
      if (k != (long)c)
        continue;
      const xs_send_result *sr = &r->sends[s];
      double w = (sr->deliver_s - sr->issue_end_s) / T * plot_w;
      xs__sb_printf(&b,
                "<rect x=\"%.2f\" y=\"%.1f\" width=\"%.2f\" height=\"%.1f\" "
                "fill=\"#9c755f\" fill-opacity=\"0.15\"/>\n",
                X(sr->issue_end_s), sy, w < 0.3 ? 0.3 : w, strip_h);
      drawn++;
    }
    /* the backlog: at most two points per pixel column (min and max) */
    xs__sb_printf(&b, "<polyline fill=\"none\" stroke=\"#2f5d8a\" "
                  "stroke-width=\"1.2\" points=\"%.2f,%.2f",
              SVG_LEFT, base);
    int col = -1;
    double lo = 0, hi = 0, lo_t = 0, hi_t = 0;
    for (size_t i = 0; i < tl->npoints; i++) {
      const xs_backlog_point *pt = &tl->points[i];
      if (pt->channel != c)
        continue;
      int k = (int)floor(X(pt->t_s));
      if (k != col) {
        if (col >= 0) {
          double ya = base - (lo_t < hi_t ? lo : hi) / ymax * chan_h;
          double yb = base - (lo_t < hi_t ? hi : lo) / ymax * chan_h;
          xs__sb_printf(&b, " %.2f,%.2f %.2f,%.2f", X(fmin(lo_t, hi_t)), ya,
                    X(fmax(lo_t, hi_t)), yb);
        }
        col = k;
        lo = hi = pt->backlog_B;
        lo_t = hi_t = pt->t_s;
      } else {
        if (pt->backlog_B < lo) {
          lo = pt->backlog_B;
          lo_t = pt->t_s;
        }
        if (pt->backlog_B > hi) {
          hi = pt->backlog_B;
          hi_t = pt->t_s;
        }
      }
    }
    if (col >= 0) {
      double ya = base - (lo_t < hi_t ? lo : hi) / ymax * chan_h;
      double yb = base - (lo_t < hi_t ? hi : lo) / ymax * chan_h;
      xs__sb_printf(&b, " %.2f,%.2f %.2f,%.2f", X(fmin(lo_t, hi_t)), ya,
                X(fmax(lo_t, hi_t)), yb);
    }
    xs__sb_printf(&b, "\"/>\n");
    if (isfinite(ch->capacity_B) && ch->capacity_B > 0) {
      double yc = base - ch->capacity_B / ymax * chan_h;
      xs__sb_printf(&b,
                "<line x1=\"%.0f\" x2=\"%.0f\" y1=\"%.2f\" y2=\"%.2f\" "
                "stroke=\"#e15759\" stroke-dasharray=\"6,4\"/>\n"
                "<text x=\"%.0f\" y=\"%.2f\" text-anchor=\"end\" "
                "fill=\"#e15759\">capacity C</text>\n",
                SVG_LEFT, SVG_LEFT + plot_w, yc, yc, SVG_LEFT + plot_w - 4,
                yc - 3);
    }
    y0 += chan_h + chan_gap;
  }
#undef X
  xs__sb_printf(&b, "<text x=\"%.0f\" y=\"%.0f\" fill=\"#555\">time</text>\n</svg>\n",
            SVG_LEFT + plot_w / 2, height - 10);
  if (b.oom) {
    free(b.s);
    return NULL;
  }
  return b.s;
}

char *xs_timeline_svg(const xs_program *p, const xs_profile *prof,
                      const xs_result *r, const xs_timeline *tl) {
  void *loc = xs__numeric_c();
  char *s = timeline_svg(p, prof, r, tl);
  xs__numeric_restore(loc);
  return s;
}
