/*
 * moe_table.c: plans a kernel can follow batch by batch. The stable choice
 * among the MegaMoE planner's options, knob tables over token counts with
 * a run-time lookup, the tables as a C header, and the sensitivity of a
 * plan to each number of the profile (docs/plan-megamoe.md "Knob tables").
 */
#include "formats/jsonutil.h"

#include <math.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

int xs_moe_same_choice(const xs_moe_option *a, const xs_moe_option *b) {
  if (a->schedule != b->schedule)
    return 0;
  return a->rule == b->rule ||
         memcmp(&a->knobs, &b->knobs, sizeof a->knobs) == 0;
}

static int by_time(const void *x, const void *y) {
  const xs_moe_option *a = x, *b = y;
  if (a->time_s != b->time_s)
    return a->time_s < b->time_s ? -1 : 1;
  if (a->schedule != b->schedule)
    return a->schedule < b->schedule ? -1 : 1;
  return a->rule < b->rule ? -1 : a->rule > b->rule;
}

void xs_moe_pick_options(const xs_moe_option *o, size_t n, double tol,
                         const xs_moe_option *prev, xs_moe_pick *out) {
  memset(out, 0, sizeof *out);
  out->runner_up.time_s = out->chosen.time_s = out->best.time_s = NAN;
  if (!n)
    return;
  size_t best = 0;
  for (size_t i = 1; i < n; i++)
    if (by_time(&o[i], &o[best]) < 0)
      best = i;
  out->best = o[best];
  double limit = o[best].time_s * (1 + tol);
  for (size_t i = 0; i < n && out->near < XS_MOE_MAX_OPTIONS; i++)
    if (o[i].time_s <= limit)
      out->near_set[out->near++] = o[i];
  qsort(out->near_set, out->near, sizeof out->near_set[0], by_time);
  const xs_moe_option *pick = NULL;
  for (size_t i = 0; prev && i < out->near && !pick; i++)
    if (xs_moe_same_choice(&out->near_set[i], prev))
      pick = &out->near_set[i];
  int kept = pick != NULL;
  /* fastest first, so the first of its kind is the fastest of it */
  for (size_t i = 0; !kept && i < out->near; i++) {
    const xs_moe_option *c = &out->near_set[i];
    if (!pick || c->away < pick->away ||
        (c->away == pick->away && prev && c->schedule == prev->schedule &&
         pick->schedule != prev->schedule))
      pick = c;
  }
  out->chosen = *pick;
  for (size_t i = 0; i < n; i++)
    if (o[i].schedule != pick->schedule &&
        (isnan(out->runner_up.time_s) || by_time(&o[i], &out->runner_up) < 0))
      out->runner_up = o[i];
}

/* ---- tables ---- */

struct xs_moe_table {
  xs_moe_pick *picks;
  double *lo; /* picks[i].lo, packed for the lookup's search */
  size_t n;
};

void xs_moe_table_free(xs_moe_table *t) {
  if (!t)
    return;
  free(t->picks);
  free(t->lo);
  free(t);
}
size_t xs_moe_table_size(const xs_moe_table *t) { return t->n; }
const xs_moe_pick *xs_moe_table_pick(const xs_moe_table *t, size_t i) {
  return i < t->n ? &t->picks[i] : NULL;
}

const xs_moe_pick *xs_moe_plan_lookup(const xs_moe_table *t, double tokens) {
  if (!t->n)
    return NULL;
  size_t a = 0, b = t->n; /* the answer is in [a, b) */
  while (b - a > 1) {
    size_t m = a + (b - a) / 2;
    if (t->lo[m] <= tokens)
      a = m;
    else
      b = m;
  }
  return &t->picks[a];
}

/* every option at one token count */
static xs_status options_at(const xs_moe_config *c, const xs_profile *prof,
                            double tokens, unsigned schedules,
                            xs_moe_option *o, size_t *n, xs_moe_workload *w,
                            xs_error *err) {
  xs_moe_config at = *c;
  at.tokens = tokens;
  xs_status st = xs_moe_options(&at, prof, schedules, o, n, w, err);
  if (!st && !*n)
    st = xs__fail(err, XS_INVALID, "no schedule to choose from");
  return st;
}

/* the pick at one token count, the previous choice prev */
static xs_status pick_at(const xs_moe_config *c, const xs_profile *prof,
                         double tokens, double tol, unsigned schedules,
                         const xs_moe_option *prev, xs_moe_pick *out,
                         xs_error *err) {
  xs_moe_option o[XS_MOE_MAX_OPTIONS];
  size_t n;
  xs_moe_workload w;
  xs_status st = options_at(c, prof, tokens, schedules, o, &n, &w, err);
  if (st)
    return st;
  xs_moe_pick_options(o, n, tol, prev, out);
  out->tokens = out->lo = tokens;
  return XS_OK;
}

xs_status xs_moe_recommend(const xs_moe_config *c, const xs_profile *prof,
                           double tol, unsigned schedules, xs_moe_pick *out,
                           xs_error *err) {
  if (!(tol >= 0 && tol <= 1))
    return xs__fail(err, XS_INVALID, "tolerance %g: expected 0 to 1", tol);
  return pick_at(c, prof, c->tokens, tol, schedules, NULL, out, err);
}

xs_status xs_moe_certainty_of(const xs_moe_config *c, const xs_profile *prof,
                              const xs_moe_pick *pick, double tol,
                              xs_moe_certainty *out, xs_error *err) {
  memset(out, 0, sizeof *out);
  const xs_moe_option *ch = &pick->chosen;
  out->runner_up_margin = isnan(pick->runner_up.time_s)
                              ? NAN
                              : pick->runner_up.time_s / ch->time_s - 1;
  out->finer = *ch;
  out->holds = 1;
  static const unsigned lags[] = {1, 2, 3, 4, 6, 8, 12, 16, 24, 32, 48, 64};
  static const unsigned groups[] = {1, 2, 4, 8};
  xs_moe_pattern grid[64];
  size_t n = 0;
  switch (ch->schedule) {
  case XS_MOE_INTERLEAVED:
  case XS_MOE_FUSED_LAG:
    for (size_t i = 0; i < 12; i++)
      for (size_t j = 0; j < 4 && n < 64; j++) {
        grid[n] = ch->knobs;
        grid[n].lag = lags[i];
        grid[n++].group = groups[j];
      }
    n = n < 48 ? n : 48;
    break;
  case XS_MOE_FUSED_WAVE: {
    double el = c->experts / c->ep;
    for (unsigned e = 1; e <= 64 && e <= el; e++) {
      grid[n] = ch->knobs;
      grid[n++].experts_per_wave = e;
    }
    break;
  }
  case XS_MOE_FUSED_DYNAMIC:
    for (unsigned w = 1; w <= 8; w++) {
      grid[n] = ch->knobs;
      grid[n++].warmup = w;
    }
    break;
  default:
    return XS_OK;
  }
  double best = ch->time_s;
  for (size_t i = 0; i < n; i++) {
    double t;
    xs_moe_pattern k = grid[i];
    xs_status st = xs__moe_time(c, prof, ch->schedule, &k, &t, err);
    if (st)
      return st;
    out->settings++;
    if (t < best) {
      best = t;
      out->finer.knobs = k;
      out->finer.time_s = t;
      out->finer.rule = UINT32_MAX;
    }
  }
  out->holds = !(best < ch->time_s * (1 - tol));
  return XS_OK;
}

/* The loss of taking chosen's knob values at this token count: their
 * time over the fastest option's there, minus 1 */
static xs_status loss_at(const xs_moe_config *c, const xs_profile *prof,
                         double tokens, unsigned schedules,
                         const xs_moe_option *chosen, double *loss,
                         xs_error *err) {
  xs_moe_option o[XS_MOE_MAX_OPTIONS];
  size_t n;
  xs_status st = options_at(c, prof, tokens, schedules, o, &n, NULL, err);
  if (st)
    return st;
  double best = INFINITY, mine = NAN;
  for (size_t i = 0; i < n; i++) {
    best = fmin(best, o[i].time_s);
    if (o[i].schedule == chosen->schedule &&
        memcmp(&o[i].knobs, &chosen->knobs, sizeof o[i].knobs) == 0)
      mine = o[i].time_s;
  }
  xs_moe_config at = *c;
  at.tokens = tokens;
  if (isnan(mine) &&
      (st = xs__moe_time(&at, prof, chosen->schedule, &chosen->knobs, &mine, err)))
    return st;
  *loss = mine / best - 1;
  return XS_OK;
}

static xs_status check_table_options(const xs_moe_table_options *o,
                                     xs_error *err) {
  if (!(o->tolerance >= 0 && o->tolerance <= 1))
    return xs__fail(err, XS_INVALID, "tolerance %g: expected 0 to 1",
                    o->tolerance);
  if (o->schedules >> XS_MOE_SCHEDULES)
    return xs__fail(err, XS_INVALID, "schedule mask 0x%x names no schedule",
                    o->schedules);
  if (o->tokens) {
    if (!o->ntokens || o->ntokens > XS_MOE_TABLE_MAX)
      return xs__fail(err, XS_INVALID,
                      "%zu grid points: expected 1 to %d", o->ntokens,
                      XS_MOE_TABLE_MAX);
    for (size_t i = 0; i < o->ntokens; i++) {
      double t = o->tokens[i];
      if (!(t >= 1 && t <= 1e9 && t == floor(t)))
        return xs__fail(err, XS_INVALID,
                        "grid point %zu: %g tokens, expected a whole number "
                        "from 1 to 1e9", i + 1, t);
      if (i && !(t > o->tokens[i - 1]))
        return xs__fail(err, XS_INVALID,
                        "grid point %zu: %g tokens after %g, expected "
                        "ascending token counts", i + 1, t, o->tokens[i - 1]);
    }
    return XS_OK;
  }
  double a = o->min_tokens, b = o->max_tokens;
  if (!(a >= 1 && b >= a && b <= 1e9 && a == floor(a) && b == floor(b)))
    return xs__fail(err, XS_INVALID,
                    "token range %g to %g: expected whole numbers, 1 <= min "
                    "<= max <= 1e9", a, b);
  return XS_OK;
}

/* PER_OCTAVE points per octave from a to b, whole and distinct, both ends
 * in */
#define PER_OCTAVE 32
static double *range_grid(double a, double b, size_t *n) {
  size_t cap = (size_t)ceil(PER_OCTAVE * log2(b / a)) + 2;
  double *g = malloc(cap * sizeof *g);
  if (!g)
    return NULL;
  *n = 0;
  for (size_t i = 0; i < cap; i++) {
    double t = fmin(b, round(a * exp2((double)i / PER_OCTAVE)));
    if (!*n || t > g[*n - 1])
      g[(*n)++] = t;
    if (t >= b)
      break;
  }
  return g;
}

/* Stable picks over a grid, each bucket's start: where the choice
 * changes, the first token count at which the lower pick's knob values
 * lose more than the tolerance (bisection); elsewhere the geometric
 * middle. */
static xs_status fill(const xs_moe_config *c, const xs_profile *prof,
                      const double *grid, size_t n, double tol,
                      unsigned schedules, xs_moe_pick *picks, xs_error *err) {
  xs_status st = XS_OK;
  for (size_t i = 0; i < n && !st; i++) {
    const xs_moe_option *prev = i ? &picks[i - 1].chosen : NULL;
    if ((st = pick_at(c, prof, grid[i], tol, schedules, prev, &picks[i], err)) || !i)
      continue;
    double a = grid[i - 1], b = grid[i];
    if (xs_moe_same_choice(prev, &picks[i].chosen)) {
      picks[i].lo = fmin(b, fmax(a + 1, ceil(sqrt(a * b))));
      continue;
    }
    while (b - a > 1 && !st) {
      double m = floor((a + b) / 2), loss = 0;
      st = loss_at(c, prof, m, schedules, prev, &loss, err);
      if (loss <= tol)
        a = m;
      else
        b = m;
    }
    picks[i].lo = b;
  }
  return st;
}

static int by_value(const void *x, const void *y) {
  double a = *(const double *)x, b = *(const double *)y;
  return a < b ? -1 : a > b;
}

xs_status xs_moe_plan_table(const xs_moe_config *c, const xs_profile *prof,
                            const xs_moe_table_options *o, xs_moe_table **out,
                            xs_error *err) {
  *out = NULL;
  xs_status st = check_table_options(o, err);
  if (st)
    return st;
  size_t n = o->ntokens;
  double *grid = NULL;
  if (o->tokens) {
    grid = malloc(n * sizeof *grid);
    if (grid)
      memcpy(grid, o->tokens, n * sizeof *grid);
  } else {
    grid = range_grid(o->min_tokens, o->max_tokens, &n);
  }
  xs_moe_pick *picks = grid ? malloc(n * sizeof *picks) : NULL;
  if (!picks) {
    free(grid);
    return xs__fail(err, XS_NOMEM, "out of memory");
  }
  /* the largest point first: past the planner's limit, say so at once */
  xs_moe_config top = *c;
  top.tokens = grid[n - 1];
  xs_error e2;
  if (xs_moe_config_check(&top, &e2)) {
    free(grid);
    free(picks);
    return xs__fail(err, XS_INVALID, "%g tokens, the table's largest: %s", top.tokens,
                    e2.message);
  }
  if (xs_moe_tiles(&top) > XS_MOE_MAX_TILES) {
    free(grid);
    free(picks);
    return xs__fail(err, XS_INVALID,
                    "%g tokens, the table's largest: %.3g GEMM tiles, more than the "
                    "planner's limit of %g", top.tokens, xs_moe_tiles(&top),
                    XS_MOE_MAX_TILES);
  }
  /* a range: where a lookup halfway between two grid points would lose
   * more than the tolerance, that point joins the grid; repeated until
   * none does (or the table is full) */
  for (int pass = 0; !st; pass++) {
    if ((st = fill(c, prof, grid, n, o->tolerance, o->schedules, picks, err)) ||
        o->tokens || pass == 16)
      break;
    size_t add = 0;
    double *more = malloc(2 * n * sizeof *more);
    if (!more) {
      st = xs__fail(err, XS_NOMEM, "out of memory");
      break;
    }
    memcpy(more, grid, n * sizeof *more);
    for (size_t i = 1; i < n && !st && n + add < XS_MOE_TABLE_MAX; i++) {
      double a = grid[i - 1], b = grid[i], m = floor((a + b) / 2), loss = 0;
      if (b - a < 2)
        continue;
      const xs_moe_pick *p = m < picks[i].lo ? &picks[i - 1] : &picks[i];
      st = loss_at(c, prof, m, o->schedules, &p->chosen, &loss, err);
      if (!st && loss > o->tolerance)
        more[n + add++] = m;
    }
    if (st || !add) {
      free(more);
      break;
    }
    qsort(more, n + add, sizeof *more, by_value);
    xs_moe_pick *np = realloc(picks, (n + add) * sizeof *picks);
    if (!np) {
      free(more);
      st = xs__fail(err, XS_NOMEM, "out of memory");
      break;
    }
    picks = np;
    free(grid);
    grid = more;
    n += add;
  }
  free(grid);
  xs_moe_table *t = st ? NULL : calloc(1, sizeof *t);
  if (!st && (!t || !(t->lo = malloc(n * sizeof *t->lo)))) {
    free(t);
    t = NULL;
    st = xs__fail(err, XS_NOMEM, "out of memory");
  }
  if (st) {
    free(picks);
    return st;
  }
  t->picks = picks;
  t->n = n;
  for (size_t i = 0; i < n; i++)
    t->lo[i] = picks[i].lo;
  *out = t;
  return XS_OK;
}

/* ---- the table as a C header ---- */

char *xs_c_comment_text(const char *text) {
  size_t n = strlen(text);
  char *o = malloc(n + 1);
  if (!o)
    return NULL;
  for (size_t i = 0; i < n; i++) {
    unsigned char ch = (unsigned char)text[i];
    /* neither end nor open a comment; nothing a terminal acts on */
    if ((ch == '*' && text[i + 1] == '/') || (ch == '/' && text[i + 1] == '*') ||
        ch < 0x20 || ch == 0x7f)
      ch = ch == '\n' || ch == '\t' ? ' ' : ch < 0x20 || ch == 0x7f ? '?' : '+';
    o[i] = (char)ch;
  }
  o[n] = 0;
  return o;
}

static int letter(char c) {
  return c == '_' || (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z');
}

int xs_c_identifier(const char *s) {
  if (!s || !letter(*s) || strlen(s) > 64)
    return 0;
  for (; *s; s++)
    if (!letter(*s) && !(*s >= '0' && *s <= '9'))
      return 0;
  return 1;
}

void xs__c_upper(const char *prefix, char *up) {
  size_t k = 0;
  for (; prefix[k] && k < 64; k++)
    up[k] = (char)(prefix[k] >= 'a' && prefix[k] <= 'z' ? prefix[k] - 32
                                                           : prefix[k]);
  up[k] = 0;
}

void xs__c_lookup(xs__sbuf *b, const char *row_type, const char *P, const char *up,
                  const char *arg) {
  xs__sb_printf(b,
      "};\n\n"
      "static inline const %s_%s *%s_lookup(unsigned long %s) {\n"
      "  unsigned long a = 0, b = %s_ROWS;\n"
      "  while (b - a > 1) {\n"
      "    unsigned long m = a + (b - a) / 2;\n"
      "    if (%s_table[m].lo <= %s)\n"
      "      a = m;\n"
      "    else\n"
      "      b = m;\n"
      "  }\n"
      "  return &%s_table[a];\n"
      "}\n\n#endif\n",
      P, row_type, P, arg, up, P, arg, P);
}

char *xs_moe_table_header(const xs_moe_table *t, const char *prefix,
                          const char *comment) {
  if (!xs_c_identifier(prefix))
    return NULL;
  char up[65];
  xs__c_upper(prefix, up);
  xs__sbuf b = {0};
  const char *P = prefix;
  xs__sb_printf(&b, "/*\n * Generated by xstage %s: a MegaMoE knob table.\n",
                XSTAGE_VERSION);
  if (comment) {
    char *safe = xs_c_comment_text(comment);
    if (!safe)
      b.oom = 1;
    else
      xs__sb_printf(&b, " * %s\n", safe);
    free(safe);
  }
  xs__sb_printf(&b,
      " *\n"
      " * %s_lookup(tokens) returns the knobs for a token count per rank:\n"
      " * the row with the largest lo <= tokens (the first row below it).\n"
      " * Needs nothing but a C99 or C11 compiler; no xstage library.\n"
      " * Knob meanings: docs/plan-megamoe.md in xstage (\"Schedules\").\n"
      " */\n"
      "#ifndef %s_H\n#define %s_H\n\n",
      P, up, up);
  xs__sb_printf(&b, "enum {\n");
  for (int s = 0; s < XS_MOE_SCHEDULES; s++) {
    char name[32];
    const char *n = xs_moe_schedule_name((xs_moe_schedule)s);
    size_t j = 0;
    for (; n[j] && j < sizeof name - 1; j++)
      name[j] = n[j] == '-' ? '_' : (char)(n[j] >= 'a' && n[j] <= 'z' ? n[j] - 32 : n[j]);
    name[j] = 0;
    xs__sb_printf(&b, "  %s_%s = %d,\n", up, name, s);
  }
  xs__sb_printf(&b, "  %s_ROWS = %zu\n};\n\n", up, t->n);
  xs__sb_printf(&b,
      "typedef struct %s_knobs {\n"
      "  unsigned long lo;      /* token counts from lo up to the next row's */\n"
      "  unsigned long tokens;  /* the grid point planned                   */\n"
      "  int schedule;          /* %s_SEQUENTIAL ...                        */\n"
      "  const char *schedule_name, *rule;\n"
      "  unsigned block_m, block_n;           /* the tile                  */\n"
      "  unsigned experts_per_wave;           /* fused-wave                */\n"
      "  unsigned warmup;                     /* fused-interleaved         */\n"
      "  unsigned lag, group;                 /* fused-lag, searched       */\n"
      "  double predicted_us;   /* burstgap, at the grid point              */\n"
      "  int runner_up;         /* the fastest other schedule, -1: none     */\n"
      "  double runner_up_us;\n"
      "} %s_knobs;\n\n"
      "static const %s_knobs %s_table[%s_ROWS] = {\n",
      P, up, P, P, P, up);
  for (size_t i = 0; i < t->n; i++) {
    const xs_moe_pick *p = &t->picks[i];
    const xs_moe_option *c = &p->chosen;
    const xs_moe_pattern *kn = &c->knobs;
    int ru = isnan(p->runner_up.time_s) ? -1 : (int)p->runner_up.schedule;
    xs__sb_printf(&b,
        "  {%.0f, %.0f, %d, \"%s\", \"%s\", %u, %u, %u, %u, %u, %u, %.17g, "
        "%d, %.17g},\n",
        p->lo, p->tokens, (int)c->schedule, xs_moe_schedule_name(c->schedule),
        xs_moe_rule_name(c->schedule, c->rule), kn->block_m, kn->block_n,
        kn->experts_per_wave, kn->warmup, kn->lag, kn->group, c->time_s * 1e6,
        ru,
        ru < 0 ? 0.0 : p->runner_up.time_s * 1e6);
  }
  xs__c_lookup(&b, "knobs", P, up, "tokens");
  if (b.oom) {
    free(b.s);
    return NULL;
  }
  return b.s;
}

/* ---- sensitivity ---- */

enum { P_CHANNEL, P_MMA, P_COST };

typedef struct {
  char key[96];
  int kind;
  size_t chan;  /* P_CHANNEL: the channel                    */
  size_t field; /* P_CHANNEL: offset in xs_channel; P_COST: in
                   xs_kernel_costs                           */
  double value;
} param;

static const struct {
  const char *name;
  size_t offset;
} channel_fields[] = {
    {"inject_Bps", offsetof(xs_channel, inject_Bps)},
    {"worker_inject_Bps", offsetof(xs_channel, worker_inject_Bps)},
    {"drain_Bps", offsetof(xs_channel, drain_Bps)},
    {"capacity_B", offsetof(xs_channel, capacity_B)},
    {"latency_s", offsetof(xs_channel, latency_s)},
    {"issue_overhead_s", offsetof(xs_channel, issue_overhead_s)}},
  cost_fields[] = {{"tile_overhead_s", offsetof(xs_kernel_costs, tile_overhead_s)},
                   {"wgmma_cycles", offsetof(xs_kernel_costs, wgmma_cycles)},
                   {"l2_Bps", offsetof(xs_kernel_costs, l2_Bps)},
                   {"launch_s", offsetof(xs_kernel_costs, launch_s)},
                   {"barrier_s", offsetof(xs_kernel_costs, barrier_s)},
                   {"setup_s", offsetof(xs_kernel_costs, setup_s)},
                   {"host_sync_s", offsetof(xs_kernel_costs, host_sync_s)},
                   {"a2a_fixed_s", offsetof(xs_kernel_costs, a2a_fixed_s)}};

#define FIELD(base, off) (*(double *)((char *)(base) + (off)))

/* the numbers of prof the MegaMoE planner reads, set (nonzero, finite) */
static size_t params_of(const xs_profile *prof, const char *dtype,
                        param *out, size_t cap) {
  size_t n = 0;
  for (size_t i = 0; i < xs_profile_channel_count(prof); i++) {
    xs_channel ch = *xs_profile_channel(prof, i);
    for (size_t f = 0; f < sizeof channel_fields / sizeof channel_fields[0];
         f++) {
      double v = FIELD(&ch, channel_fields[f].offset);
      /* a per-worker rate equal to the channel's moves with it */
      if (!(v > 0 && isfinite(v)) || n >= cap ||
          (channel_fields[f].offset == offsetof(xs_channel, worker_inject_Bps) &&
           v == ch.inject_Bps))
        continue;
      param *p = &out[n++];
      snprintf(p->key, sizeof p->key, "channels.%s.%s",
               xs_profile_channel_name(prof, i), channel_fields[f].name);
      p->kind = P_CHANNEL;
      p->chan = i;
      p->field = channel_fields[f].offset;
      p->value = v;
    }
  }
  const char *math = strcmp(dtype, "fp8xfp4") == 0 ? "fp8" : dtype;
  double F = xs_profile_flops_per_s(prof, math);
  if (F > 0 && n < cap) {
    snprintf(out[n].key, sizeof out[n].key, "compute.flops_per_s.%s", math);
    out[n].kind = P_MMA;
    out[n++].value = F;
  }
  xs_kernel_costs k;
  xs_profile_kernel_costs(prof, &k);
  for (size_t f = 0; f < sizeof cost_fields / sizeof cost_fields[0]; f++) {
    double v = FIELD(&k, cost_fields[f].offset);
    if (!(v > 0 && isfinite(v)) || n >= cap)
      continue;
    snprintf(out[n].key, sizeof out[n].key, "compute.%s", cost_fields[f].name);
    out[n].kind = P_COST;
    out[n].field = cost_fields[f].offset;
    out[n++].value = v;
  }
  return n;
}

/* a copy of prof with one number moved by factor f */
static xs_status moved(const xs_profile *prof, const char *dtype,
                       const param *p, double f, xs_profile **out,
                       xs_error *err) {
  *out = NULL;
  char *text = xs_profile_to_json(prof);
  if (!text)
    return xs__fail(err, XS_NOMEM, "out of memory");
  xs_profile *q = NULL;
  xs_status st = xs_profile_parse(text, strlen(text), NULL, &q, err);
  free(text);
  if (st)
    return st;
  switch (p->kind) {
  case P_CHANNEL: {
    xs_channel *ch = xs__profile_channel_mut(q, p->chan);
    if (p->field == offsetof(xs_channel, inject_Bps) &&
        ch->worker_inject_Bps == ch->inject_Bps)
      ch->worker_inject_Bps *= f;
    FIELD(ch, p->field) *= f;
    st = xs_channel_check(ch, p->key, err);
    break;
  }
  case P_MMA:
    st = xs_profile_set_flops(
        q, strcmp(dtype, "fp8xfp4") == 0 ? "fp8" : dtype, p->value * f, err);
    break;
  default: {
    xs_kernel_costs k;
    xs_profile_kernel_costs(q, &k);
    FIELD(&k, p->field) *= f;
    st = xs_profile_set_kernel_costs(q, &k, err);
  }
  }
  if (st)
    xs_profile_free(q);
  else
    *out = q;
  return st;
}

static int by_score(const void *x, const void *y) {
  const xs_moe_sensitivity *a = x, *b = y;
  if (a->score != b->score)
    return a->score > b->score ? -1 : 1;
  return strcmp(a->param, b->param);
}

xs_status xs_moe_sensitivity_run(const xs_moe_config *c,
                                 const xs_profile *prof, double tol,
                                 unsigned schedules, xs_moe_pick *base,
                                 xs_moe_sensitivity *out, size_t *n,
                                 xs_error *err) {
  static const double factors[XS_MOE_SENS_FACTORS] = {0.5, 0.9, 1.1, 1.5};
  *n = 0;
  xs_status st = xs_moe_recommend(c, prof, tol, schedules, base, err);
  if (st)
    return st;
  param ps[XS_MOE_SENS_MAX];
  size_t np = params_of(prof, c->dtype, ps, XS_MOE_SENS_MAX);
  for (size_t i = 0; i < np && !st; i++) {
    xs_moe_sensitivity *s = &out[i];
    memset(s, 0, sizeof *s);
    memcpy(s->param, ps[i].key, sizeof s->param);
    s->value = ps[i].value;
    for (int f = 0; f < XS_MOE_SENS_FACTORS && !st; f++) {
      xs_profile *q = NULL;
      xs_moe_option o[XS_MOE_MAX_OPTIONS];
      size_t no = 0;
      xs_error skip;
      s->factor[f] = factors[f];
      s->time_change[f] = s->replan_change[f] = NAN;
      /* a number moved out of its valid range (roofline p below 1) is
       * left out at that factor */
      if (moved(prof, c->dtype, &ps[i], factors[f], &q, &skip) == XS_INVALID)
        continue;
      if (!q) {
        st = xs__fail(err, XS_NOMEM, "out of memory");
        break;
      }
      if ((st = xs_moe_options(c, q, schedules, o, &no, NULL, err))) {
        xs_profile_free(q);
        break;
      }
      xs_profile_free(q);
      xs_moe_pick p;
      xs_moe_pick_options(o, no, tol, NULL, &p);
      s->factor[f] = factors[f];
      s->time_change[f] = NAN;
      for (size_t j = 0; j < no; j++)
        if (o[j].schedule == base->chosen.schedule &&
            o[j].rule == base->chosen.rule)
          s->time_change[f] = o[j].time_s / base->chosen.time_s - 1;
      s->replan_change[f] = p.chosen.time_s / base->chosen.time_s - 1;
      s->choice[f] = p.chosen;
      s->changed[f] = !xs_moe_same_choice(&p.chosen, &base->chosen);
      if (fabs(s->time_change[f]) > s->score)
        s->score = fabs(s->time_change[f]);
    }
    if (!st)
      (*n)++;
  }
  if (st) {
    *n = 0;
    return st;
  }
  qsort(out, *n, sizeof *out, by_score);
  return XS_OK;
}
