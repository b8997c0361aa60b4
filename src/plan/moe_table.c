/*
 * moe_table.c: plans a kernel can follow batch by batch. The stable choice
 * among the MegaMoE planner's options, knob tables over token counts with
 * a run-time lookup, the tables as a C header, and the sensitivity of a
 * plan to each number of the profile (docs/plan-megamoe.md "Knob tables").
 */
#include "formats/jsonutil.h"
#include "plan/sensitivity.h"

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

xs_status xs_moe_parse_schedules(const char *text, unsigned *mask, xs_error *err) {
  *mask = 0;
  const char *p = text;
  for (;;) {
    size_t len = strcspn(p, ",");
    char name[32];
    int k = -1;
    if (len < sizeof name) {
      memcpy(name, p, len);
      name[len] = 0;
      k = xs_moe_schedule_from_name(name);
    }
    if (k < 0) {
      *mask = 0;
      return xs__fail(err, XS_INVALID, "\"%.*s\" is not a schedule (sequential, "
                      "l1-then-l2, searched, fused-split, fused-wave, fused-interleaved, "
                      "fused-lag)", (int)(len < 64 ? len : 64), p);
    }
    *mask |= 1u << k;
    if (!p[len])
      return XS_OK;
    p += len + 1;
  }
}

/* ---- tables ---- */

struct xs_moe_table {
  xs_moe_pick *picks;
  double *lo; /* picks[i].lo, packed for the lookup's search */
  size_t n;
  double tolerance;
  int range;  /* a range, refined; else the grid given */
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

/* ---- work ----
 * A table or a sensitivity run plans one config many times, and a plan's
 * time grows with its GEMM tiles (0.12-0.22 us a tile for DeepSeek-V3
 * here) plus a part that does not (a few ms: WORK_FIXED_TILES). Both are
 * estimated before the first plan and refused past XS_MOE_WORK_MAX; what
 * they do is counted as they go and stopped at the same limit (a table's
 * bisections and added points are not known beforehand). */
#define WORK_FIXED_TILES 32768.0

typedef struct {
  double done;      /* tile-equivalents planned so far              */
  double limit;     /* XS_MOE_WORK_MAX, or a test's                  */
  const char *what; /* "a table of 289 grid points", for the message */
} work_budget;

/* one evaluation of every option at tokens */
double xs__moe_plan_work(const xs_moe_config *c, double tokens) {
  xs_moe_config at = *c;
  at.tokens = tokens;
  return xs_moe_tiles(&at) + WORK_FIXED_TILES;
}

/* past the limit: estimated (before planning), or counted (on the way) */
static xs_status work_refuse(xs_error *err, const char *what, double work,
                             double limit, int counted) {
  return xs__fail(err, XS_INVALID,
                  "%s: %s %.3g GEMM tiles of planning, more than the limit of %g "
                  "(XS_MOE_WORK_MAX, about 6 s here): plan fewer or "
                  "smaller token counts", what, counted ? "its plans passed" : "about",
                  work, limit);
}

/* count one evaluation at tokens against the limit (b NULL: no count) */
static xs_status work_spend(work_budget *b, const xs_moe_config *c,
                            double tokens, xs_error *err) {
  if (!b)
    return XS_OK;
  b->done += xs__moe_plan_work(c, tokens);
  return b->done > b->limit ? work_refuse(err, b->what, b->done, b->limit, 1) : XS_OK;
}

/* What a table or a recommendation plans at one token count: every
 * option, kept for the table's later visits (a midpoint that joins the
 * grid, a bisection's step), counted against the work limit once. */
typedef struct {
  double tokens;
  size_t n;
  xs_moe_option o[XS_MOE_MAX_OPTIONS];
} planned;

typedef struct {
  const xs_moe_config *c;
  const xs_profile *prof;
  unsigned schedules;
  double tol;
  work_budget *budget; /* NULL: not counted */
  planned *at;         /* ascending tokens */
  size_t nat, cap;
} table_ctx;

/* every option at tokens */
static xs_status options_at(table_ctx *t, double tokens, const planned **out,
                            xs_error *err) {
  size_t lo = 0, hi = t->nat;
  while (lo < hi) {
    size_t m = (lo + hi) / 2;
    if (t->at[m].tokens < tokens)
      lo = m + 1;
    else
      hi = m;
  }
  if (lo < t->nat && t->at[lo].tokens == tokens) {
    *out = &t->at[lo];
    return XS_OK;
  }
  xs_status st = work_spend(t->budget, t->c, tokens, err);
  if (st)
    return st;
  if (xs__grow(&t->at, &t->cap, t->nat + 1, sizeof *t->at))
    return xs__fail(err, XS_NOMEM, "out of memory");
  memmove(&t->at[lo + 1], &t->at[lo], (t->nat - lo) * sizeof *t->at);
  t->nat++;
  planned *p = &t->at[lo];
  p->tokens = tokens;
  xs_moe_config at = *t->c;
  at.tokens = tokens;
  if ((st = xs_moe_options(&at, t->prof, t->schedules, p->o, &p->n, NULL, err)) ||
      (!p->n && (st = xs__fail(err, XS_INVALID, "no schedule to choose from")))) {
    memmove(&t->at[lo], &t->at[lo + 1], (t->nat - lo - 1) * sizeof *t->at);
    t->nat--;
    return st;
  }
  *out = p;
  return XS_OK;
}

/* the pick at one token count, the previous choice prev */
static xs_status pick_at(table_ctx *t, double tokens, const xs_moe_option *prev,
                         xs_moe_pick *out, xs_error *err) {
  const planned *p;
  xs_status st = options_at(t, tokens, &p, err);
  if (st)
    return st;
  xs_moe_pick_options(p->o, p->n, t->tol, prev, out);
  out->tokens = out->lo = tokens;
  return XS_OK;
}

xs_status xs_moe_recommend(const xs_moe_config *c, const xs_profile *prof,
                           double tol, unsigned schedules, xs_moe_pick *out,
                           xs_error *err) {
  if (!(tol >= 0 && tol <= 1))
    return xs__fail(err, XS_INVALID, "tolerance %g: expected 0 to 1", tol);
  table_ctx t = {c, prof, schedules, tol, NULL, NULL, 0, 0};
  xs_status st = pick_at(&t, c->tokens, NULL, out, err);
  free(t.at);
  return st;
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
  xs__moe_planner *pl; /* one for every setting: the workload once */
  xs_status st = xs__moe_planner_new(c, prof, &pl, err);
  for (size_t i = 0; i < n && !st; i++) {
    double t;
    if ((st = xs__moe_planner_time(pl, ch->schedule, &grid[i], &t, err)))
      break;
    xs_moe_pattern k = grid[i];
    out->settings++;
    if (t < best) {
      best = t;
      out->finer.knobs = k;
      out->finer.time_s = t;
      out->finer.rule = UINT32_MAX;
    }
  }
  xs__moe_planner_free(pl);
  if (st)
    return st;
  out->holds = !(best < ch->time_s * (1 - tol));
  return XS_OK;
}

/* The loss of taking chosen's knob values at this token count: their
 * time over the fastest option's there, minus 1 */
static xs_status loss_at(table_ctx *t, double tokens, const xs_moe_option *chosen,
                         double *loss, xs_error *err) {
  const planned *p;
  xs_status st = options_at(t, tokens, &p, err);
  if (st)
    return st;
  double best = INFINITY, mine = NAN;
  for (size_t i = 0; i < p->n; i++) {
    best = fmin(best, p->o[i].time_s);
    if (p->o[i].schedule == chosen->schedule &&
        memcmp(&p->o[i].knobs, &chosen->knobs, sizeof p->o[i].knobs) == 0)
      mine = p->o[i].time_s;
  }
  xs_moe_config at = *t->c;
  at.tokens = tokens;
  if (isnan(mine) &&
      (st = xs__moe_time(&at, t->prof, chosen->schedule, &chosen->knobs, &mine, err)))
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
 * in: where the table starts before it refines */
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

/* Stable picks over a grid, lowest first (each point's previous choice is
 * the one below it), each bucket's start: where the choice changes
 * between neighbours, the first token count at which the lower pick's
 * knob values lose more than the tolerance (bisection); elsewhere the
 * geometric middle. A range (refine set) also refines where the time
 * changes between neighbours of one choice: the halfway count is checked,
 * and joins the grid (its own pick, then the upper neighbour's again) when
 * the lower pick's knob values lose more than the tolerance there, until
 * neighbours are adjacent or the grid has twice its points. *grid and
 * *picks grow with it (*n points). */
static xs_status fill(table_ctx *t, double **grid, size_t *n, int refine,
                      xs_moe_pick **picks, xs_error *err) {
  size_t most = 2 * *n, cap = *n;
  if (most > XS_MOE_TABLE_MAX)
    most = XS_MOE_TABLE_MAX;
  xs_status st = XS_OK;
  for (size_t i = 0; i < *n && !st; i++) {
    const xs_moe_option *prev = i ? &(*picks)[i - 1].chosen : NULL;
    xs_moe_pick here;
    if ((st = pick_at(t, (*grid)[i], prev, &here, err)))
      break;
    if (i) {
      double a = (*grid)[i - 1], b = (*grid)[i];
      if (xs_moe_same_choice(prev, &here.chosen)) {
        double m = floor((a + b) / 2), loss = 0;
        if (refine && b - a >= 2 && *n < most &&
            !(st = loss_at(t, m, prev, &loss, err)) && loss > t->tol) {
          if (xs__grow(grid, &cap, *n + 1, sizeof **grid) ||
              !(*picks = realloc(*picks, (cap + 1) * sizeof **picks))) {
            st = xs__fail(err, XS_NOMEM, "out of memory");
            break;
          }
          memmove(&(*grid)[i + 1], &(*grid)[i], (*n - i) * sizeof **grid);
          (*grid)[i] = m;
          (*n)++;
          i--; /* the midpoint next, then this point again above it */
          continue;
        }
        here.lo = fmin(b, fmax(a + 1, ceil(sqrt(a * b))));
      } else {
        while (b - a > 1 && !st) {
          double m = floor((a + b) / 2), loss = 0;
          st = loss_at(t, m, prev, &loss, err);
          if (loss <= t->tol)
            a = m;
          else
            b = m;
        }
        here.lo = b;
      }
    }
    (*picks)[i] = here;
  }
  return st;
}

xs_status xs_moe_plan_table(const xs_moe_config *c, const xs_profile *prof,
                            const xs_moe_table_options *o, xs_moe_table **out,
                            xs_error *err) {
  return xs__moe_plan_table_within(c, prof, o, XS_MOE_WORK_MAX, out, err);
}

xs_status xs__moe_plan_table_within(const xs_moe_config *c, const xs_profile *prof,
                                    const xs_moe_table_options *o, double limit,
                                    xs_moe_table **out, xs_error *err) {
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
  xs_moe_pick *picks = grid ? malloc((n + 1) * sizeof *picks) : NULL;
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
  /* the work: every point planned, and for a range each midpoint checked
   * once more */
  char what[96];
  snprintf(what, sizeof what, "a table of %zu grid points from %g to %g tokens", n,
           grid[0], grid[n - 1]);
  work_budget budget = {0, limit, what};
  double est = 0;
  for (size_t i = 0; i < n; i++)
    est += xs__moe_plan_work(c, grid[i]) * (o->tokens ? 1 : 2);
  if (est > limit) {
    free(grid);
    free(picks);
    return work_refuse(err, what, est, limit, 0);
  }
  table_ctx tc = {c, prof, o->schedules, o->tolerance, &budget, NULL, 0, 0};
  st = fill(&tc, &grid, &n, !o->tokens, &picks, err);
  free(tc.at);
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
  t->tolerance = o->tolerance;
  t->range = !o->tokens;
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

/* Beginnings of names the C library has or may have (C11 7.1.3 and
 * 7.31): a header's names begin with the prefix (xx_lookup, xx_table) or
 * its capitals (XX_H, XX_ROWS), and must not land there. Each entry is a
 * beginning and what may follow it to be reserved: 'A' a capital or
 * digit, 'a' a lowercase letter, '_' anything. */
static const struct {
  const char *start;
  char next;
  const char *what;
} reserved[] = {
    {"E", 'A', "errno.h's macros (E and a capital or digit)"},
    {"SIG", 'A', "signal.h's macros (SIG and a capital)"},
    {"SIG_", 'A', "signal.h's macros (SIG_ and a capital)"},
    {"LC_", 'A', "locale.h's macros (LC_ and a capital)"},
    {"FE_", 'A', "fenv.h's macros (FE_ and a capital)"},
    {"ATOMIC_", 'A', "stdatomic.h's macros (ATOMIC_ and a capital)"},
    {"TIME_", 'A', "time.h's macros (TIME_ and a capital)"},
    {"PRIX", '_', "inttypes.h's macros (PRIX, SCNX)"},
    {"SCNX", '_', "inttypes.h's macros (PRIX, SCNX)"},
    {"is", 'a', "ctype.h's functions (is and a lowercase letter)"},
    {"to", 'a', "ctype.h's functions (to and a lowercase letter)"},
    {"str", 'a', "string.h's and stdlib.h's functions (str and a lowercase letter)"},
    {"mem", 'a', "string.h's functions (mem and a lowercase letter)"},
    {"wcs", 'a', "wchar.h's functions (wcs and a lowercase letter)"},
    {"atomic_", 'a', "stdatomic.h's names (atomic_ and a lowercase letter)"},
    {"memory_order_", 'a', "stdatomic.h's names (memory_order_)"},
    {"cnd_", 'a', "threads.h's names (cnd_)"},
    {"mtx_", 'a', "threads.h's names (mtx_)"},
    {"thrd_", 'a', "threads.h's names (thrd_)"},
    {"tss_", 'a', "threads.h's names (tss_)"},
};

xs_status xs_c_header_prefix(const char *prefix, xs_error *err) {
  if (!xs_c_identifier(prefix))
    return xs__fail(err, XS_INVALID, "\"%s\" is not a C identifier of at most 64 "
                    "characters", prefix ? prefix : "(null)");
  if (prefix[0] == '_')
    return xs__fail(err, XS_INVALID, "\"%s\" begins with an underscore: the header's "
                    "names would be reserved ones, where the C library's own guards "
                    "(_STDIO_H) are", prefix);
  for (const char *c = prefix; *c; c++)
    if (*c >= 'A' && *c <= 'Z')
      return xs__fail(err, XS_INVALID, "\"%s\" has capitals: a prefix is lowercase, "
                      "as its capitals name the header's guard and constants "
                      "(PREFIX_H, PREFIX_ROWS), which two prefixes that differ only in "
                      "case would share", prefix);
  char up[65];
  xs__c_upper(prefix, up);
  for (size_t i = 0; i < sizeof reserved / sizeof reserved[0]; i++) {
    const char *s = reserved[i].start;
    int caps = s[0] >= 'A' && s[0] <= 'Z';
    const char *name = caps ? up : prefix;
    size_t n = strlen(s);
    if (strncmp(name, s, n))
      continue;
    char next = name[n]; /* name holds s, so name[n] is its NUL at most */
    int hit = reserved[i].next == '_' ||
              (reserved[i].next == 'A' &&
               ((next >= 'A' && next <= 'Z') || (next >= '0' && next <= '9'))) ||
              (reserved[i].next == 'a' && next >= 'a' && next <= 'z');
    if (hit)
      return xs__fail(err, XS_INVALID, "\"%s\": the header's names (%s_H, %s_lookup) "
                      "would begin as %s do, which the C library reserves", prefix, up,
                      prefix, reserved[i].what);
  }
  return XS_OK;
}

int xs__c_value_ok(double v, int whole) {
  if (!isfinite(v))
    return 0;
  return !whole || (v >= 0 && v <= 4294967295.0 && v == floor(v));
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

static char *table_header(const xs_moe_table *t, const xs_moe_config *config,
                          const xs_profile *profile, const char *prefix,
                          const char *comment) {
  if (xs_c_header_prefix(prefix, NULL))
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
  if (t->range)
    xs__sb_printf(&b,
        " *\n"
        " * Planned at %d points per octave from %lu to %lu tokens, refined where\n"
        " * neighbours differ: where their choices differ, the switch is the first\n"
        " * count at which the lower one loses more than %g of the fastest\n"
        " * option's time (bisection); where they agree, the count halfway was\n"
        " * checked and joined the table where the choice lost more than that.\n"
        " * The bound holds at every count the table planned (its grid, the\n"
        " * halfway checks, the bisections' steps), not between them: the\n"
        " * kernels' times step with the waves of tiles.\n",
        PER_OCTAVE, (unsigned long)t->picks[0].tokens,
        (unsigned long)t->picks[t->n - 1].tokens, t->tolerance);
  xs__sb_printf(&b,
      " *\n"
      " * %s_lookup(tokens) returns the knobs for a token count per rank:\n"
      " * the row with the largest lo <= tokens (the first row below it).\n"
      " * Needs nothing but a C99 or C11 compiler; no xstage library.\n"
      " * Knob meanings: docs/plan-megamoe.md in xstage (\"Schedules\"); the\n"
      " * kernel to call and its arguments: \"The calls\" there.\n"
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
      "  unsigned lag, group;                 /* fused-lag, searched; 0, 0:\n"
      "                                          all L1 first, no lag      */\n"
      "  double predicted_us;   /* burstgap, at the grid point              */\n"
      "  int runner_up;         /* the fastest other schedule, -1: none     */\n"
      "  double runner_up_us;\n"
      "  const char *kernel;    /* the kernel to call, and the call in      */\n"
      "  const char *call;      /* Python (its steps, \"; \" between)         */\n"
      "  int proposal;          /* 1: no kernel runs it as given            */\n"
      "} %s_knobs;\n\n"
      "static const %s_knobs %s_table[%s_ROWS] = {\n",
      P, up, P, P, P, up);
  for (size_t i = 0; i < t->n; i++) {
    const xs_moe_pick *p = &t->picks[i];
    const xs_moe_option *c = &p->chosen;
    const xs_moe_pattern *kn = &c->knobs;
    int ru = isnan(p->runner_up.time_s) ? -1 : (int)p->runner_up.schedule;
    /* every number a C constant: no inf or nan in the text */
    if (!xs__c_value_ok(p->lo, 1) || !xs__c_value_ok(p->tokens, 1) ||
        !xs__c_value_ok(c->time_s * 1e6, 0) ||
        (ru >= 0 && !xs__c_value_ok(p->runner_up.time_s * 1e6, 0)))
      b.oom = 1;
    /* the call, at the row's token count: its steps as Python, with no
     * character a C string would need escaped */
    xs_moe_call call;
    char steps[1024] = "";
    const char *label = "";
    int proposal = 0;
    if (config && profile) {
      xs_moe_config at = *config;
      at.tokens = p->tokens;
      xs_error e;
      if (!xs_moe_call_of(&at, profile, c->schedule, kn, &call, &e)) {
        label = call.label;
        proposal = call.proposal;
        size_t used = 0;
        for (size_t j = 0; j < call.nsteps; j++) {
          char one[512];
          xs_moe_call_step_text(&call.steps[j], one, sizeof one);
          int w = snprintf(steps + used, sizeof steps - used, "%s%s", j ? "; " : "", one);
          if (w < 0 || (size_t)w >= sizeof steps - used)
            break;
          used += (size_t)w;
        }
      }
    }
    if (strpbrk(steps, "\"\\") || strpbrk(label, "\"\\"))
      b.oom = 1;
    int all_first = kn->lag >= XS_MOE_LAG_ALL;
    xs__sb_printf(&b,
        "  {%.0f, %.0f, %d, \"%s\", \"%s\", %u, %u, %u, %u, %u, %u, %.17g, "
        "%d, %.17g, \"%s\", \"%s\", %d},\n",
        p->lo, p->tokens, (int)c->schedule, xs_moe_schedule_name(c->schedule),
        xs_moe_rule_name(c->schedule, c->rule), kn->block_m, kn->block_n,
        kn->experts_per_wave, kn->warmup, all_first ? 0 : kn->lag,
        all_first ? 0 : kn->group, c->time_s * 1e6, ru,
        ru < 0 ? 0.0 : p->runner_up.time_s * 1e6, label, steps, proposal);
  }
  xs__c_lookup(&b, "knobs", P, up, "tokens");
  if (b.oom) {
    free(b.s);
    return NULL;
  }
  return b.s;
}

/* numbers with a point whatever the host's locale */
char *xs_moe_table_header(const xs_moe_table *t, const xs_moe_config *config,
                          const xs_profile *profile, const char *prefix,
                          const char *comment) {
  void *loc = xs__numeric_c();
  char *s = table_header(t, config, profile, prefix, comment);
  xs__numeric_restore(loc);
  return s;
}

/* ---- sensitivity ---- */

/* the numbers of prof the MegaMoE planner reads: every channel's, the MMA
 * peak and the kernel model's terms */
static void params_of(const xs_profile *prof, const char *dtype, xs__sens_list *l) {
  static const char *const costs[] = {"tile_overhead_s", "wgmma_cycles", "l2_Bps",
                                      "launch_s", "barrier_s", "setup_s",
                                      "host_sync_s", "a2a_fixed_s"};
  for (size_t i = 0; i < xs_profile_channel_count(prof); i++)
    xs__sens_channel(l, prof, i);
  xs__sens_flops(l, prof, strcmp(dtype, "fp8xfp4") == 0 ? "fp8" : dtype);
  xs__sens_costs(l, prof, costs, sizeof costs / sizeof costs[0]);
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
  return xs__moe_sensitivity_within(c, prof, tol, schedules, XS_MOE_WORK_MAX, base,
                                    out, n, err);
}

xs_status xs__moe_sensitivity_within(const xs_moe_config *c, const xs_profile *prof,
                                     double tol, unsigned schedules, double limit,
                                     xs_moe_pick *base, xs_moe_sensitivity *out,
                                     size_t *n, xs_error *err) {
  *n = 0;
  xs__sens_param ps[XS_MOE_SENS_MAX];
  xs__sens_list l = {ps, 0, XS_MOE_SENS_MAX};
  params_of(prof, c->dtype, &l);
  size_t np = l.n;
  if (np > XS_MOE_SENS_MAX)
    return xs__fail(err, XS_INVALID,
                    "sensitivity: profile \"%s\" has %zu numbers the plan reads, "
                    "more than the %d rows a run gives (XS_MOE_SENS_MAX): leave "
                    "out the channels the plan does not use", xs_profile_name(prof),
                    np, XS_MOE_SENS_MAX);
  char what[96];
  snprintf(what, sizeof what, "sensitivity: %zu numbers x %d factors at %g tokens",
           np, XS_MOE_SENS_FACTORS, c->tokens);
  double est = (double)(np * XS_MOE_SENS_FACTORS + 1) * xs__moe_plan_work(c, c->tokens);
  if (est > limit)
    return work_refuse(err, what, est, limit, 0);
  if (!(tol >= 0 && tol <= 1))
    return xs__fail(err, XS_INVALID, "tolerance %g: expected 0 to 1", tol);
  /* one planner for the base and every moved profile: a program whose
   * kernel inputs a move leaves as they were is built once (a channel's
   * rates move none); the channels' numbers first, so that their moves
   * follow the base's programs */
  xs__moe_planner *pl;
  xs_status st = xs__moe_planner_new(c, prof, &pl, err);
  xs_moe_option o[XS_MOE_MAX_OPTIONS];
  size_t no = 0;
  if (!st && !(st = xs__moe_planner_options(pl, schedules, o, &no, NULL, err)) && !no)
    st = xs__fail(err, XS_INVALID, "no schedule to choose from");
  if (!st) {
    xs_moe_pick_options(o, no, tol, NULL, base);
    base->tokens = base->lo = c->tokens;
  }
  size_t order[XS_MOE_SENS_MAX], k = 0;
  for (int pass = 0; pass < 2; pass++)
    for (size_t i = 0; i < np; i++)
      if ((ps[i].kind == XS__SENS_CHANNEL) == (pass == 0))
        order[k++] = i;
  xs_profile *held = NULL; /* the profile the planner is on, when moved */
  for (size_t j = 0; j < np && !st; j++) {
    size_t i = order[j];
    xs_moe_sensitivity *s = &out[j];
    memset(s, 0, sizeof *s);
    xs__sens_head(prof, &ps[i], "the kernel's own timings: xstage fit megamoe (docs/tune.md)",
                  s->param, &s->value, s->kind, &s->lo, &s->hi, s->settle, s->factor);
    for (int f = 0; f < XS_MOE_SENS_FACTORS && !st; f++) {
      xs_profile *q;
      s->time_change[f] = s->replan_change[f] = NAN;
      if ((st = xs__sens_moved(prof, &ps[i], s->factor[f], &q, err)))
        break;
      if (!q) /* moved out of its valid range: left out at that factor */
        continue;
      if (!(st = xs__moe_planner_on(pl, q, err))) {
        xs_profile_free(held);
        held = q;
      } else {
        xs_profile_free(q);
        break;
      }
      /* exact: the base's choice, and what is near the fastest */
      if ((st = xs__moe_planner_near(pl, schedules, tol, (int)base->chosen.schedule,
                                     base->chosen.rule, o, &no, NULL, err)))
        break;
      xs_moe_pick p;
      xs_moe_pick_options(o, no, tol, NULL, &p);
      for (size_t m = 0; m < no; m++)
        if (o[m].schedule == base->chosen.schedule && o[m].rule == base->chosen.rule)
          s->time_change[f] = o[m].time_s / base->chosen.time_s - 1;
      s->replan_change[f] = p.chosen.time_s / base->chosen.time_s - 1;
      s->choice[f] = p.chosen;
      s->changed[f] = !xs_moe_same_choice(&p.chosen, &base->chosen);
      if (fabs(s->time_change[f]) > s->score)
        s->score = fabs(s->time_change[f]);
    }
    if (!st)
      (*n)++;
  }
  xs__moe_planner_free(pl);
  xs_profile_free(held);
  if (st) {
    *n = 0;
    return st;
  }
  qsort(out, *n, sizeof *out, by_score);
  return XS_OK;
}
