/*
 * validate.c: `xstage validate megamoe`. Reads published timings of MoE
 * kernels (a CSV with megamoe.csv's columns), predicts each row's arm on
 * its GPU's built-in profile with the MegaMoE planner, and puts predicted
 * beside measured. A prediction is made from the row's config only: the
 * measured column is parsed after the config is taken and never reaches
 * the planner (docs/validate.md).
 */
#include "validate/validate.h"

#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define MAX_COLS 32

typedef xs__csv_field field;

static const char *const need[] = {
    "source", "gpu",          "ep",        "hidden", "intermediate",
    "experts", "topk",        "shared_experts", "act_dtype", "weight_dtype",
    "tokens",  "arm",         "time_us",   NULL};
enum { C_SOURCE, C_GPU, C_EP, C_HIDDEN, C_INTER, C_EXPERTS, C_TOPK, C_SHARED,
       C_ACT, C_WEIGHT, C_TOKENS, C_ARM, C_TIME, C_N };
/* optional: the knobs a source states, and what a row measures */
static const char *const maybe[] = {"knobs", "metric", "timing", NULL};
enum { C_KNOBS = C_N, C_METRIC, C_TIMING };


typedef struct {
  char name[48];
  xs_profile *prof;
} cached_profile;

/* "FILE:LINE:COLUMN: what was wrong" */
xs_status xs__csv_fail(xs_error *err, const char *file, size_t line, size_t col,
                       const char *fmt, ...) {
  char msg[1400];
  va_list ap;
  va_start(ap, fmt);
  int w = vsnprintf(msg, sizeof msg, fmt, ap);
  va_end(ap);
  (void)w; /* a message cut short is still a message */
  return xs__fail(err, XS_INVALID, "%s:%zu:%zu: %s", file, line, col, msg);
}

/* a decimal number, whatever the locale (no hex, inf or nan) */
static int number(const char *s, double *out) {
  const char *end;
  if (xs__decimal(s, out, &end))
    return -1;
  while (*end == ' ')
    end++;
  return *end || !isfinite(*out) ? -1 : 0;
}

/* bytes per element of a dtype name, with the scales it carries */
static double dtype_bytes(const char *d) {
  if (!strcmp(d, "fp8"))
    return 1;
  if (!strcmp(d, "bf16") || !strcmp(d, "fp16"))
    return 2;
  if (!strcmp(d, "fp4"))
    return 0.5 + 1.0 / 32; /* one scale byte per 32 elements */
  return 0;
}

/* A CSV reader shared by the validators: comment and blank lines are
 * skipped, the header maps the needed columns, each data row's fields are
 * handed to row() in the needed order. */
typedef struct {
  const char *file;
  const char *const *need; /* NULL-terminated */
  const char *const *maybe; /* optional columns, NULL-terminated (or NULL):
                               their fields follow the needed ones, NULL
                               when the header lacks them */
  const char *need_list;   /* for messages */
  xs_validate_set *out;
  size_t cap;
  cached_profile profs[16];
  size_t nprofs;
  void (*progress)(size_t, void *);
  void *ctx;
  /* profiles given by the caller (a fitted one): rows whose gpu is one's
   * name use it instead of the built-in */
  const xs_profile *const *given;
  size_t ngiven;
  xs__csv_row_fn ext; /* a validator of another file, and its data */
  void *user;
  /* for the fit, which predicts the rows itself: each row's burstgap time
   * only (the check that it has one), not every model and lag bound, and
   * at most XS_MOE_FIT_MAX_ROWS rows */
  int burstgap_only;
} csv_job;

/* the built-in profile a row's gpu names (loaded once) */
static xs_status row_profile(csv_job *j, const field *f, size_t lineno,
                             const xs_profile **out, xs_error *err) {
  for (size_t i = 0; i < j->ngiven; i++)
    if (!strcmp(xs_profile_name(j->given[i]), f->s)) {
      *out = j->given[i];
      return XS_OK;
    }
  for (size_t i = 0; i < j->nprofs; i++)
    if (!strcmp(j->profs[i].name, f->s)) {
      *out = j->profs[i].prof;
      return XS_OK;
    }
  xs_error e2;
  xs_profile *loaded = NULL;
  if (j->nprofs == sizeof j->profs / sizeof j->profs[0])
    return xs__csv_fail(err, j->file, lineno, f->col, "gpu: more than %zu GPUs in one file",
                        sizeof j->profs / sizeof j->profs[0]);
  if (xs__profile_builtin(f->s, 0, &loaded, &e2))
    return xs__csv_fail(err, j->file, lineno, f->col, "gpu: %s%s%s%s", e2.message,
                        j->ngiven ? "; nor the given profile \"" : "",
                        j->ngiven ? xs_profile_name(j->given[0]) : "", j->ngiven ? "\"" : "");
  snprintf(j->profs[j->nprofs].name, sizeof j->profs[j->nprofs].name, "%s", f->s);
  j->profs[j->nprofs++].prof = loaded;
  *out = loaded;
  return XS_OK;
}

/* time_us, read only once the prediction is made: from a nanosecond to
 * 1e12 us (no zero, subnormal, negative, infinite or NaN time, whose
 * error would be infinite or meaningless) */
#define TIME_US_MIN XS__TIME_US_MIN
#define TIME_US_MAX XS__TIME_US_MAX
static xs_status row_measured(csv_job *j, const field *f, size_t lineno,
                              xs_validate_row *row, xs_error *err) {
  if (!(row->predicted_us > 0 && isfinite(row->predicted_us)))
    return xs__csv_fail(err, j->file, lineno, 1,
                    "the prediction is %g us, not a positive finite time",
                    row->predicted_us);
  if (number(f->s, &row->measured_us) ||
      !(row->measured_us >= TIME_US_MIN && row->measured_us <= TIME_US_MAX))
    return xs__csv_fail(err, j->file, lineno, f->col,
                    "time_us: expected microseconds from %g to %g, got \"%s\"",
                    TIME_US_MIN, TIME_US_MAX, f->s);
  row->error = row->predicted_us / row->measured_us - 1;
  j->out->nrows++;
  if (j->progress)
    j->progress(j->out->nrows, j->ctx);
  return XS_OK;
}

/* What identifies a row's measurement: kind, source, GPU, metric and
 * shape (the config two arms are paired on: same_config's), and with arm
 * also the arm, its stated knobs and capacity, and the layout. Doubles in
 * hex, exactly. */
static void row_key(const xs_validate_row *r, int with_arm, xs__sbuf *b) {
  b->n = 0;
  xs__sb_printf(b, "%d|%s|%s|%s|", r->kind, r->source, r->gpu, r->metric);
  if (r->kind == 2) {
    const xs_validate_ep_row *x = &r->ep;
    xs__sb_printf(b, "%s|%s|%s|%a %a %a %a %a %a %a %a %d %d", x->phase, x->fabric,
                  x->metric, r->tokens, x->ep, x->hidden, x->topk, x->experts,
                  x->elem_bytes, x->sms, x->topk_groups, x->api_time, x->ll_nvlink);
  } else if (r->kind == 1) {
    const xs_fa_config *x = &r->fa;
    xs__sb_printf(b, "%a %a %a %a %a %d %d %a %s %d", x->seq, x->cp, x->heads_q,
                  x->heads_kv, x->head_dim, x->causal, x->backward, x->batch,
                  x->kernel, x->timing);
  } else {
    const xs_moe_config *x = &r->config;
    xs__sb_printf(b, "%a %a %a %a %a %a %a %a %a", x->tokens, x->hidden,
                  x->intermediate, x->experts, x->topk, x->ep, x->weight_bytes,
                  x->act_bytes, x->shared_experts);
  }
  if (with_arm) {
    const xs_moe_pattern *k = &r->knobs;
    xs__sb_printf(b, "|%s|%s|%u %u %u %u %u %u|%a", r->arm, r->layout,
                  k->experts_per_wave, k->warmup, k->lag, k->group, k->block_m,
                  k->block_n, r->kind ? 0.0 : r->config.capacity);
  }
}

/* a line that is not blank and not a comment: the header or a row */
static int holds_fields(const char *lp, size_t len) {
  size_t skip = 0;
  while (skip < len && (lp[skip] == ' ' || lp[skip] == '\t'))
    skip++;
  return skip < len && lp[skip] != '#';
}

/* The line of the row past max, 0 when there is none: known before any
 * row is predicted (each takes milliseconds). */
static size_t row_past_limit(const char *p, const char *end, size_t max) {
  size_t lineno = 0, rows = 0;
  while (p < end) {
    const char *nl = memchr(p, '\n', (size_t)(end - p));
    size_t len = nl ? (size_t)(nl - p) : (size_t)(end - p);
    lineno++;
    if (holds_fields(p, len) && rows++ > max)
      return lineno; /* the header, then the rows */
    p = nl ? nl + 1 : end;
  }
  return 0;
}

static xs_status csv_rows(csv_job *j, const char *text, size_t length,
                          xs_status (*row)(csv_job *, const field **, size_t,
                                           xs_validate_row *, xs_error *),
                          xs_error *err) {
  memset(j->out, 0, sizeof *j->out);
  size_t nneed = 0, nmaybe = 0;
  while (j->need[nneed])
    nneed++;
  while (j->maybe && j->maybe[nmaybe])
    nmaybe++;
  int colmap[MAX_COLS];
  int have_header = 0;
  xs_status st = XS_OK;
  size_t lineno = 0;
  const char *p = text, *end = text + length;
  char *buf = NULL;
  size_t bufcap = 0;
  /* rows by what they measure: a second row of the same is refused */
  xs__strmap seen = {0};
  xs__sbuf key = {0};
  /* a byte order mark, as spreadsheets write: not part of the header */
  if (length >= 3 && !memcmp(text, "\xEF\xBB\xBF", 3))
    p += 3;
  size_t past = row_past_limit(p, end, j->burstgap_only ? XS_MOE_FIT_MAX_ROWS
                                                       : XS_VALIDATE_MAX_ROWS);
  if (past)
    st = j->burstgap_only
             ? xs__csv_fail(err, j->file, past, 1, "more than %d rows: the fit predicts each "
                            "60 to 120 times (up to 50 ms a row here); keep the rows of one "
                            "GPU, or split the file", XS_MOE_FIT_MAX_ROWS)
             : xs__csv_fail(err, j->file, past, 1, "more than %d rows (each is predicted, "
                            "about 10 ms here): split the file", XS_VALIDATE_MAX_ROWS);
  while (p < end && !st) {
    const char *nl = memchr(p, '\n', (size_t)(end - p));
    size_t len = nl ? (size_t)(nl - p) : (size_t)(end - p);
    lineno++;
    const char *lp = p;
    p = nl ? nl + 1 : end;
    if (len && lp[len - 1] == '\r')
      len--;
    const char *cr = memchr(lp, '\r', len);
    if (cr) {
      st = xs__csv_fail(err, j->file, lineno, (size_t)(cr - lp) + 1,
                        "a carriage return inside a line: lines end with LF or CR LF (a "
                        "file whose lines end with CR alone is one line here)");
      break;
    }
    const char *nul = memchr(lp, '\0', len);
    if (nul) {
      st = xs__csv_fail(err, j->file, lineno, (size_t)(nul - lp) + 1, "a NUL byte");
      break;
    }
    size_t good = xs__utf8_prefix(lp, len);
    if (good < len) {
      st = xs__csv_fail(err, j->file, lineno, good + 1,
                    "not UTF-8 (byte 0x%02x)", (unsigned char)lp[good]);
      break;
    }
    if (!holds_fields(lp, len))
      continue;
    if (len + 1 > bufcap) {
      bufcap = len + 1;
      char *nb = realloc(buf, bufcap);
      if (!nb) {
        st = xs__fail(err, XS_NOMEM, "out of memory");
        break;
      }
      buf = nb;
    }
    memcpy(buf, lp, len);
    buf[len] = '\0';
    field f[MAX_COLS];
    size_t bad_col = 1;
    int nf = xs__csv_split(buf, f, MAX_COLS, &bad_col);
    if (nf < 0) {
      st = nf == -2 ? xs__csv_fail(err, j->file, lineno, 1, "more than %d columns", MAX_COLS)
                    : xs__csv_fail(err, j->file, lineno, nf == -3 ? bad_col : 1, "%s",
                                   xs__csv_split_why(nf));
      break;
    }
    if (!have_header) {
      for (int a = 0; a < nf && !st; a++)
        for (int b = 0; b < a && !st; b++)
          if (f[a].s[0] && !strcmp(f[a].s, f[b].s))
            st = xs__csv_fail(err, j->file, lineno, f[a].col,
                          "column \"%s\" is named twice (columns %d and %d)",
                          f[a].s, b + 1, a + 1);
      if (st)
        break;
      for (size_t c = 0; c < nneed; c++) {
        colmap[c] = -1;
        for (int i = 0; i < nf; i++)
          if (!strcmp(f[i].s, j->need[c]))
            colmap[c] = i;
        if (colmap[c] < 0) {
          st = xs__csv_fail(err, j->file, lineno, 1,
                        "the header has no column \"%s\" (it needs %s)",
                        j->need[c], j->need_list);
          break;
        }
      }
      for (size_t c = 0; c < nmaybe; c++) {
        colmap[nneed + c] = -1;
        for (int i = 0; i < nf; i++)
          if (!strcmp(f[i].s, j->maybe[c]))
            colmap[nneed + c] = i;
      }
      have_header = 1;
      continue;
    }
    int maxcol = 0;
    for (size_t c = 0; c < nneed; c++)
      maxcol = colmap[c] > maxcol ? colmap[c] : maxcol;
    if (nf <= maxcol) {
      st = xs__csv_fail(err, j->file, lineno, 1, "only %d fields; the header names more", nf);
      break;
    }
    if (j->out->nrows == j->cap &&
        xs__grow(&j->out->rows, &j->cap, j->out->nrows + 1, sizeof *j->out->rows)) {
      st = xs__fail(err, XS_NOMEM, "out of memory");
      break;
    }
    xs_validate_row *r = &j->out->rows[j->out->nrows];
    memset(r, 0, sizeof *r);
    r->line = lineno;
    const field *F[2 * MAX_COLS];
    for (size_t c = 0; c < nneed; c++)
      F[c] = &f[colmap[c]];
    for (size_t c = 0; c < nmaybe; c++)
      F[nneed + c] = colmap[nneed + c] >= 0 && colmap[nneed + c] < nf
                         ? &f[colmap[nneed + c]]
                         : NULL;
    size_t before = j->out->nrows;
    st = row(j, F, lineno, r, err);
    if (st) {
      if (j->out->nrows == before) { /* a row not kept: its source is not the set's */
        free(r->source);
        r->source = NULL;
      }
      break;
    }
    row_key(r, 1, &key);
    if (key.oom) {
      st = xs__fail(err, XS_NOMEM, "out of memory");
      break;
    }
    uint32_t first;
    if (xs__strmap_get(&seen, key.s, &first)) {
      st = xs__csv_fail(err, j->file, lineno, 1,
                    "measures what line %zu does (the same source, gpu, shape, "
                    "arm%s): one row each", j->out->rows[first].line,
                    r->kind == 2 ? ", phase, metric and knobs"
                    : r->kind ? ", layout and pass" : ", metric and knobs");
      break;
    }
    if (j->out->nrows > UINT32_MAX ||
        xs__strmap_put(&seen, key.s, (uint32_t)(j->out->nrows - 1)) < 0) {
      st = xs__fail(err, XS_NOMEM, "out of memory");
      break;
    }
  }
  xs__strmap_free(&seen);
  free(key.s);
  if (!st && !have_header)
    st = xs__fail(err, XS_INVALID, "%s: no header line (source,gpu,...)", j->file);
  if (!st && !j->out->nrows)
    st = xs__fail(err, XS_INVALID, "%s: no data rows", j->file);
  for (size_t i = 0; i < j->nprofs; i++)
    xs_profile_free(j->profs[i].prof);
  free(buf);
  if (st)
    xs_validate_free(j->out);
  return st;
}

typedef struct {
  int col;     /* into the needed columns, source and gpu first */
  double *dst;
} row_number;

/* A row's source, gpu and arm, and its numbers, each named with its
 * column when it is not one */
static xs_status row_start(csv_job *j, const field **F, size_t lineno,
                           xs_validate_row *row, int arm,
                           const row_number *nums, size_t n, xs_error *err) {
  /* the whole source: two of one repository differ past any length */
  if (!(row->source = xs__strdup(F[0]->s)))
    return xs__fail(err, XS_NOMEM, "out of memory");
  snprintf(row->gpu, sizeof row->gpu, "%s", F[1]->s);
  snprintf(row->arm, sizeof row->arm, "%s", F[arm]->s);
  for (size_t i = 0; i < n; i++)
    if (number(F[nums[i].col]->s, nums[i].dst))
      return xs__csv_fail(err, j->file, lineno, F[nums[i].col]->col,
                      "%s: expected a number, got \"%s\"", j->need[nums[i].col],
                      F[nums[i].col]->s);
  return XS_OK;
}

static xs_status moe_row(csv_job *j, const field **F, size_t lineno,
                         xs_validate_row *row, xs_error *err) {
  const char *file = j->file;
  xs_status st = XS_OK;
  /* the config: from the row's shape, never from time_us */
  xs_moe_config *c = &row->config;
  xs_moe_preset("deepseek-v3", c);
  snprintf(c->name, sizeof c->name, "%s line %zu", file, lineno);
  xs__utf8_trim(c->name);
  const row_number nums[] = {{C_EP, &c->ep},           {C_HIDDEN, &c->hidden},
                             {C_INTER, &c->intermediate}, {C_EXPERTS, &c->experts},
                             {C_TOPK, &c->topk},       {C_SHARED, &c->shared_experts},
                             {C_TOKENS, &c->tokens}};
  if ((st = row_start(j, F, lineno, row, C_ARM, nums, sizeof nums / sizeof nums[0], err)))
    return st;
  c->act_bytes = dtype_bytes(F[C_ACT]->s);
  c->weight_bytes = dtype_bytes(F[C_WEIGHT]->s);
  if (!c->act_bytes || !strcmp(F[C_ACT]->s, "fp4"))
    return xs__csv_fail(err, file, lineno, F[C_ACT]->col,
                    "act_dtype: expected fp8, bf16 or fp16, got \"%s\"",
                    F[C_ACT]->s);
  if (!c->weight_bytes)
    return xs__csv_fail(err, file, lineno, F[C_WEIGHT]->col,
                    "weight_dtype: expected fp8, fp4, bf16 or fp16, got \"%s\"",
                    F[C_WEIGHT]->s);
  /* the GEMM runs in the activations' type; FP4 weights with FP8
   * activations take the mixed dtype */
  snprintf(c->dtype, sizeof c->dtype, "%s%s",
           !strcmp(F[C_ACT]->s, "fp8") ? "fp8" : "bf16",
           !strcmp(F[C_WEIGHT]->s, "fp4") ? "xfp4" : "");
  row->tokens = c->tokens;
  xs_error e2;
  if (xs_moe_config_check(c, &e2))
    return xs__csv_fail(err, file, lineno, 1, "%s", e2.message);
  int sched = xs_moe_schedule_from_name(row->arm);
  if (sched < 0)
    return xs__csv_fail(err, file, lineno, F[C_ARM]->col,
                    "arm: unknown \"%s\" (sequential, fused-split, fused-wave, "
                    "fused-interleaved, fused-lag, l1-then-l2, searched)",
                    row->arm);
  snprintf(row->metric, sizeof row->metric, "time");
  if (F[C_METRIC] && F[C_METRIC]->s[0]) {
    if (strcmp(F[C_METRIC]->s, "time") && strcmp(F[C_METRIC]->s, "pull_end"))
      return xs__csv_fail(err, file, lineno, F[C_METRIC]->col,
                      "metric: expected time or pull_end, got \"%s\"",
                      F[C_METRIC]->s);
    snprintf(row->metric, sizeof row->metric, "%s", F[C_METRIC]->s);
  }
  memset(&row->knobs, 0, sizeof row->knobs);
  char bad[256];
  /* how the source timed it, where that changes what the time holds */
  if (F[C_TIMING]) {
    snprintf(c->timing, sizeof c->timing, "%s", xs__moe_timing_of_text(F[C_TIMING]->s));
    c->cold_l2 = xs__moe_cold_of_text(F[C_TIMING]->s);
  }
  if (F[C_KNOBS] &&
      xs__validate_moe_knobs(F[C_KNOBS]->s, c, &row->knobs, bad, sizeof bad))
    return xs__csv_fail(err, file, lineno, F[C_KNOBS]->col, "knobs: %s", bad);
  const xs_profile *prof = NULL;
  if ((st = row_profile(j, F[C_GPU], lineno, &prof, err)))
    return st;
  if (j->burstgap_only) {
    double t;
    if (xs__moe_time(c, prof, (xs_moe_schedule)sched, &row->knobs, &t, &e2))
      return xs__csv_fail(err, file, lineno, 1, "%s", e2.message);
    row->alt_us = NAN;
    for (int m = 0; m < XS_MODEL_COUNT; m++)
      row->model_us[m] = m == XS_MODEL_BURSTGAP ? t * 1e6 : NAN;
    row->predicted_us = t * 1e6;
  } else if (xs__validate_moe_predict(row, prof, &e2)) {
    return xs__csv_fail(err, file, lineno, 1, "%s", e2.message);
  }
  return row_measured(j, F[C_TIME], lineno, row, err);
}

/* every row's 80% interval from the other sources' rows (interval.c) */
static xs_status with_intervals(xs_validate_set *set, xs_error *err) {
  xs_status st = xs_validate_intervals(set, err);
  if (st)
    xs_validate_free(set);
  return st;
}

xs_status xs_validate_megamoe(const char *text, size_t length,
                              const char *filename, xs_validate_set *out,
                              void (*progress)(size_t, void *), void *ctx,
                              xs_error *err) {
  return xs_validate_megamoe_with(text, length, filename, NULL, 0, out,
                                  progress, ctx, err);
}

static xs_status megamoe_rows(const char *text, size_t length, const char *filename,
                              const xs_profile *const *profiles, size_t nprofiles,
                              int burstgap_only, xs_validate_set *out,
                              void (*progress)(size_t, void *), void *ctx,
                              xs_error *err) {
  csv_job j = {filename ? filename : "<data>", need, maybe,
               "source, gpu, ep, hidden, intermediate, experts, topk, "
               "shared_experts, act_dtype, weight_dtype, tokens, arm, time_us",
               out, 0, {{{0}, NULL}}, 0, progress, ctx, profiles, nprofiles, NULL, NULL,
               burstgap_only};
  return csv_rows(&j, text, length, moe_row, err);
}

xs_status xs_validate_megamoe_with(const char *text, size_t length,
                                   const char *filename,
                                   const xs_profile *const *profiles,
                                   size_t nprofiles, xs_validate_set *out,
                                   void (*progress)(size_t, void *),
                                   void *ctx, xs_error *err) {
  xs_status st = megamoe_rows(text, length, filename, profiles, nprofiles, 0, out, progress,
                              ctx, err);
  return st ? st : with_intervals(out, err);
}

xs_status xs__validate_megamoe_burstgap(const char *text, size_t length,
                                        const char *filename, const xs_profile *profile,
                                        xs_validate_set *out, xs_error *err) {
  return megamoe_rows(text, length, filename, &profile, 1, 1, out, NULL, NULL, err);
}

/* ---- ring attention ---- */

static const char *const fa_need[] = {
    "source", "gpu", "cp", "seq_per_rank", "heads", "kv_heads", "head_dim",
    "causal", "layout", "kernel", "pass", "arm", "time_us", NULL};
enum { F_SOURCE, F_GPU, F_CP, F_SEQ, F_HEADS, F_KV, F_D, F_CAUSAL, F_LAYOUT,
       F_KERNEL, F_PASS, F_ARM, F_TIME, F_N };
/* optional: sequences per rank, when the source ran several; how the
 * source timed the ring ("synced ...": a sync or barrier around each
 * call; anything else: calls back to back) */
static const char *const fa_maybe[] = {"batch", "timing", NULL};
enum { F_BATCH = F_N, F_TIMING };

static xs_status fa_row(csv_job *j, const field **F, size_t lineno,
                        xs_validate_row *row, xs_error *err) {
  const char *file = j->file;
  row->kind = 1;
  xs_fa_config *c = &row->fa;
  xs_fa_preset("llama3-8b", c);
  snprintf(c->name, sizeof c->name, "%s line %zu", file, lineno);
  xs__utf8_trim(c->name);
  double causal = 0;
  const row_number nums[] = {{F_CP, &c->cp},       {F_SEQ, &c->seq},
                             {F_HEADS, &c->heads_q}, {F_KV, &c->heads_kv},
                             {F_D, &c->head_dim},  {F_CAUSAL, &causal}};
  xs_status st0 = row_start(j, F, lineno, row, F_ARM, nums, sizeof nums / sizeof nums[0], err);
  if (st0)
    return st0;
  if (causal != 0 && causal != 1)
    return xs__csv_fail(err, file, lineno, F[F_CAUSAL]->col,
                    "causal: expected 0 or 1, got \"%s\"", F[F_CAUSAL]->s);
  c->causal = (int)causal;
  /* batch: a column of its own when the source ran several sequences */
  c->batch = 1;
  if (F[F_BATCH] && F[F_BATCH]->s[0] &&
      (number(F[F_BATCH]->s, &c->batch) || !(c->batch >= 1)))
    return xs__csv_fail(err, file, lineno, F[F_BATCH]->col,
                    "batch: expected a whole number >= 1, got \"%s\"", F[F_BATCH]->s);
  c->timing = F[F_TIMING] && !strncmp(F[F_TIMING]->s, "synced", 6) ? XS_FA_SYNCED
                                                                    : XS_FA_PIPELINED;
  if (strlen(F[F_KERNEL]->s) >= sizeof c->kernel)
    return xs__csv_fail(err, file, lineno, F[F_KERNEL]->col,
                    "kernel: expected fa2, fa3 or fa4, got \"%s\"", F[F_KERNEL]->s);
  snprintf(c->kernel, sizeof c->kernel, "%s", F[F_KERNEL]->s);
  if (!strcmp(F[F_PASS]->s, "fwd_bwd"))
    c->backward = 1;
  else if (strcmp(F[F_PASS]->s, "fwd"))
    return xs__csv_fail(err, file, lineno, F[F_PASS]->col,
                    "pass: expected fwd or fwd_bwd, got \"%s\"", F[F_PASS]->s);
  int path = xs_fa_path_from_name(row->arm);
  if (path < 0)
    return xs__csv_fail(err, file, lineno, F[F_ARM]->col,
                    "arm: unknown \"%s\" (local, sequential, dedicated-stream, "
                    "dedicated-sms, piggyback)", row->arm);
  int layout = xs_fa_layout_from_name(F[F_LAYOUT]->s);
  if (layout < 0 && !((path == XS_FA_LOCAL || !c->causal) && !strcmp(F[F_LAYOUT]->s, "-")))
    return xs__csv_fail(err, file, lineno, F[F_LAYOUT]->col,
                    "layout: expected contiguous, zigzag or stripe (- for the "
                    "local arm or a full mask), got \"%s\"", F[F_LAYOUT]->s);
  c->layout = layout < 0 ? XS_FA_ZIGZAG : layout;
  snprintf(row->layout, sizeof row->layout, "%s", F[F_LAYOUT]->s);
  snprintf(row->pass, sizeof row->pass, "%s", F[F_PASS]->s);
  row->tokens = c->seq;
  xs_error e2;
  if (xs_fa_config_check(c, &e2))
    return xs__csv_fail(err, file, lineno, 1, "%s", e2.message);
  const xs_profile *prof = NULL;
  xs_status st = row_profile(j, F[F_GPU], lineno, &prof, err);
  if (st)
    return st;
  if (xs__validate_fa_predict(row, prof, (xs_fa_path)path, &e2))
    return xs__csv_fail(err, file, lineno, 1, "%s", e2.message);
  return row_measured(j, F[F_TIME], lineno, row, err);
}

xs_status xs_validate_flashattn(const char *text, size_t length,
                                const char *filename, xs_validate_set *out,
                                void (*progress)(size_t, void *), void *ctx,
                                xs_error *err) {
  csv_job j = {filename ? filename : "<data>", fa_need, fa_maybe,
               "source, gpu, cp, seq_per_rank, heads, kv_heads, head_dim, "
               "causal, layout, kernel, pass, arm, time_us",
               out, 0, {{{0}, NULL}}, 0, progress, ctx, NULL, 0, NULL, NULL, 0};
  xs_status st = csv_rows(&j, text, length, fa_row, err);
  return st ? st : with_intervals(out, err);
}

/* ---- the reader for validators in other files (ep.c) ---- */

static xs_status ext_row(csv_job *j, const field **F, size_t lineno,
                         xs_validate_row *row, xs_error *err) {
  xs_status st = j->ext(j->user, F, lineno, row, err);
  if (st)
    return st;
  j->out->nrows++;
  if (j->progress)
    j->progress(j->out->nrows, j->ctx);
  return XS_OK;
}

xs_status xs__validate_csv(const char *file, const char *const *needed,
                           const char *const *optional, const char *need_list,
                           const char *text, size_t length, xs_validate_set *out,
                           void (*progress)(size_t, void *), void *ctx,
                           xs__csv_row_fn row, void *user, xs_error *err) {
  csv_job j = {file ? file : "<data>", needed, optional, need_list, out, 0,
               {{{0}, NULL}}, 0, progress, ctx, NULL, 0, row, user, 0};
  return csv_rows(&j, text, length, ext_row, err);
}

int xs__csv_number(const char *s, double *out) { return number(s, out); }

void xs_validate_free(xs_validate_set *set) {
  for (size_t i = 0; set->rows && i < set->nrows; i++)
    free(set->rows[i].source);
  free(set->rows);
  set->rows = NULL;
  set->nrows = 0;
}

double xs_validate_median(const xs_validate_set *set,
                          int (*keep)(const xs_validate_row *, void *),
                          void *ctx, size_t *n, double *max_abs) {
  double *v = malloc((set->nrows + 1) * sizeof *v);
  size_t k = 0;
  double mx = 0;
  for (size_t i = 0; v && i < set->nrows; i++)
    if ((!set->rows[i].metric[0] || !strcmp(set->rows[i].metric, "time")) &&
        (!keep || keep(&set->rows[i], ctx))) {
      v[k++] = fabs(set->rows[i].error);
      mx = fmax(mx, fabs(set->rows[i].error));
    }
  if (n)
    *n = k;
  if (max_abs)
    *max_abs = k ? mx : NAN;
  double med = xs__median_of(v, k);
  free(v);
  return med;
}

/* rows a and b measure two arms of one config */
static int same_config(const xs_validate_row *a, const xs_validate_row *b) {
  if (a->kind != b->kind)
    return 0;
  if (a->kind == 1) {
    /* attention, one shape: a ring beside the local arm, or two layouts
     * of one ring arm */
    const xs_fa_config *x = &a->fa, *y = &b->fa;
    int la = !strcmp(a->arm, "local"), lb = !strcmp(b->arm, "local");
    return !strcmp(a->source, b->source) && !strcmp(a->gpu, b->gpu) &&
           x->seq == y->seq && x->cp == y->cp && x->heads_q == y->heads_q &&
           x->heads_kv == y->heads_kv && x->head_dim == y->head_dim &&
           x->causal == y->causal && x->backward == y->backward &&
           !strcmp(x->kernel, y->kernel) && x->batch == y->batch &&
           (la != lb || (!la && !strcmp(a->arm, b->arm) &&
                         strcmp(a->layout, b->layout) != 0));
  }
  const xs_moe_config *x = &a->config, *y = &b->config;
  return !strcmp(a->source, b->source) && !strcmp(a->gpu, b->gpu) &&
         !strcmp(a->metric, b->metric) &&
         x->tokens == y->tokens && x->hidden == y->hidden &&
         x->intermediate == y->intermediate && x->experts == y->experts &&
         x->topk == y->topk && x->ep == y->ep &&
         x->weight_bytes == y->weight_bytes && x->act_bytes == y->act_bytes &&
         x->shared_experts == y->shared_experts && strcmp(a->arm, b->arm) != 0;
}

/* row indices sorted by a string of each row, then by index */
typedef struct {
  const char *key;
  size_t i;
} keyed;

static int by_key(const void *x, const void *y) {
  const keyed *a = x, *b = y;
  int c = strcmp(a->key, b->key);
  return c ? c : (a->i > b->i) - (a->i < b->i);
}

/* Pairs are looked for within each group of rows of one config (sorted by
 * row_key without the arm: n log n), in row order within it, so that each
 * pair (a before b) is the one a search over all pairs would find. */
xs_status xs_validate_compare_arms(const xs_validate_set *set,
                                   xs_validate_pairs *out, xs_error *err) {
  memset(out, 0, sizeof *out);
  size_t n = set->nrows, cap = 0, np = 0;
  keyed *ix = malloc((n + 1) * sizeof *ix);
  xs__sbuf keys = {0}, one = {0};
  size_t *off = malloc((n + 1) * sizeof *off);
  double *v = NULL, mx = 0;
  xs_status st = ix && off ? XS_OK : XS_NOMEM;
  for (size_t i = 0; i < n && !st; i++) {
    row_key(&set->rows[i], 0, &one);
    off[i] = keys.n;
    if (!one.oom)
      xs__sb_put(&keys, one.s, one.n + 1); /* with its NUL */
    if (one.oom || keys.oom)
      st = XS_NOMEM;
  }
  for (size_t i = 0; i < n && !st; i++)
    ix[i] = (keyed){keys.s + off[i], i};
  if (!st)
    qsort(ix, n, sizeof *ix, by_key);
  for (size_t g = 0; g < n && !st;) {
    size_t e = g + 1;
    while (e < n && !strcmp(ix[g].key, ix[e].key))
      e++;
    for (size_t x = g; x < e && !st; x++)
      for (size_t y = x + 1; y < e && !st; y++) {
        const xs_validate_row *a = &set->rows[ix[x].i], *b = &set->rows[ix[y].i];
        if (!same_config(a, b))
          continue;
        if (xs__grow(&v, &cap, np + 1, sizeof *v)) {
          st = XS_NOMEM;
          break;
        }
        out->agree += (a->measured_us < b->measured_us) ==
                      (a->predicted_us < b->predicted_us);
        double r = fabs((a->predicted_us / b->predicted_us) /
                        (a->measured_us / b->measured_us) - 1);
        v[np++] = r;
        mx = fmax(mx, r);
      }
    g = e;
  }
  free(ix);
  free(off);
  free(keys.s);
  free(one.s);
  if (st) {
    free(v);
    memset(out, 0, sizeof *out);
    return xs__fail(err, st, "out of memory");
  }
  out->pairs = np;
  out->median_ratio_error = xs__median_of(v, np);
  out->max_ratio_error = np ? mx : NAN;
  free(v);
  return XS_OK;
}

/* a group and the index of its first row, to order groups by */
/* a run of one key in the sorted rows: its first row, and where it starts
 * and ends in the sorted order */
typedef struct {
  size_t row, start, end;
} run;

static int by_first_row(const void *x, const void *y) {
  const run *a = x, *b = y;
  return (a->row > b->row) - (a->row < b->row);
}

void xs_validate_ep_groups_free(xs_validate_ep_groups *g) {
  if (!g)
    return;
  free(g->name);
  free(g->first);
  free(g->idx);
  memset(g, 0, sizeof *g);
}

xs_status xs__validate_group_by(const xs_validate_set *set,
                                const char *(*key)(const xs_validate_row *, int), int which,
                                xs_validate_ep_groups *g, xs_error *err) {
  size_t n = set->nrows, nr = 0;
  memset(g, 0, sizeof *g);
  keyed *ix = malloc((n + 1) * sizeof *ix);
  run *runs = malloc((n + 1) * sizeof *runs);
  g->idx = malloc((n + 1) * sizeof *g->idx);
  g->first = malloc((n + 2) * sizeof *g->first);
  g->name = malloc((n + 1) * sizeof *g->name);
  if (!ix || !runs || !g->idx || !g->first || !g->name) {
    free(ix);
    free(runs);
    xs_validate_ep_groups_free(g);
    return xs__fail(err, XS_NOMEM, "out of memory");
  }
  for (size_t i = 0; i < n; i++)
    ix[i] = (keyed){key(&set->rows[i], which), i};
  qsort(ix, n, sizeof *ix, by_key);
  for (size_t i = 0; i < n; i++) {
    if (i && !strcmp(ix[i].key, ix[i - 1].key))
      continue;
    if (nr)
      runs[nr - 1].end = i;
    /* ix[i] is the run's first row: sorted by index within a key */
    runs[nr++] = (run){ix[i].i, i, n};
  }
  qsort(runs, nr, sizeof *runs, by_first_row);
  size_t at = 0;
  for (size_t k = 0; k < nr; k++) {
    g->first[k] = at;
    g->name[k] = key(&set->rows[runs[k].row], which);
    for (size_t i = runs[k].start; i < runs[k].end; i++)
      g->idx[at++] = ix[i].i;
  }
  g->first[nr] = at;
  g->n = nr;
  free(ix);
  free(runs);
  return XS_OK;
}

static const char *arm_or_source(const xs_validate_row *r, int by_source) {
  return by_source ? r->source : r->arm;
}

xs_status xs_validate_groups(const xs_validate_set *set, int by_source,
                             xs_validate_group **out, size_t *n, xs_error *err) {
  *out = NULL;
  *n = 0;
  xs_validate_ep_groups gr;
  xs_status st = xs__validate_group_by(set, arm_or_source, by_source, &gr, err);
  if (st)
    return st;
  double *v = malloc((set->nrows + 1) * sizeof *v);
  xs_validate_group *g = v ? malloc((gr.n + 1) * sizeof *g) : NULL;
  for (size_t a = 0; g && a < gr.n; a++) {
    size_t k = 0;
    double mx = 0;
    for (size_t j = gr.first[a]; j < gr.first[a + 1]; j++) {
      const xs_validate_row *r = &set->rows[gr.idx[j]];
      if (r->metric[0] && strcmp(r->metric, "time"))
        continue; /* not a kernel's time: as xs_validate_median */
      v[k++] = fabs(r->error);
      mx = fmax(mx, fabs(r->error));
    }
    g[a] = (xs_validate_group){gr.name[a], k, xs__median_of(v, k), k ? mx : NAN};
  }
  free(v);
  size_t ng = gr.n;
  xs_validate_ep_groups_free(&gr);
  if (!g)
    return xs__fail(err, XS_NOMEM, "out of memory");
  *out = g;
  *n = ng;
  return XS_OK;
}

/* ---- the plot ---- */

#define VW 720.0
#define VH 560.0
#define PL 90.0
#define PR 170.0
#define PT 50.0
#define PB 60.0

static char *validate_svg(const xs_validate_set *set, const char *title) {
  static const char *const colours[] = {"#1f77b4", "#d62728", "#2ca02c",
                                        "#9467bd", "#ff7f0e", "#8c564b",
                                        "#e377c2"};
  double lo = INFINITY, hi = 0;
  for (size_t i = 0; i < set->nrows; i++) {
    const xs_validate_row *r = &set->rows[i];
    lo = fmin(lo, fmin(r->measured_us, r->predicted_us));
    hi = fmax(hi, fmax(r->measured_us, r->predicted_us));
  }
  if (!(lo > 0) || !(hi >= lo))
    lo = 1, hi = 10;
  double l0 = floor(log10(lo)), l1 = ceil(log10(hi));
  if (l1 <= l0)
    l1 = l0 + 1;
  double pw = VW - PL - PR, ph = VH - PT - PB;
#define X(v) (PL + (log10(v) - l0) / (l1 - l0) * pw)
#define Y(v) (PT + ph - (log10(v) - l0) / (l1 - l0) * ph)
  xs__sbuf b = {0};
  xs__sb_printf(&b, "<svg xmlns=\"http://www.w3.org/2000/svg\" width=\"%.0f\" "
                    "height=\"%.0f\" font-family=\"sans-serif\" font-size=\"12\">\n",
                VW, VH);
  xs__sb_printf(&b, "<rect width=\"100%%\" height=\"100%%\" fill=\"white\"/>\n");
  xs__sb_printf(&b, "<text x=\"%.0f\" y=\"24\" font-size=\"14\">", PL);
  xs__sb_escaped(&b, title ? title : "predicted against measured");
  xs__sb_printf(&b, "</text>\n");
  /* the +-20% band and y = x */
  double a = pow(10, l0), z = pow(10, l1);
  xs__sb_printf(&b,
                "<polygon points=\"%.1f,%.1f %.1f,%.1f %.1f,%.1f %.1f,%.1f\" "
                "fill=\"#eeeeee\"/>\n",
                X(a), Y(fmin(a * 1.2, z)), X(fmin(z / 1.2, z)), Y(z), X(z),
                Y(z * 0.8), X(a / 0.8 > z ? z : a / 0.8), Y(a));
  xs__sb_printf(&b, "<rect x=\"%.1f\" y=\"%.1f\" width=\"%.1f\" height=\"%.1f\" "
                    "fill=\"none\" stroke=\"black\"/>\n",
                PL, PT, pw, ph);
  xs__sb_printf(&b, "<line x1=\"%.1f\" y1=\"%.1f\" x2=\"%.1f\" y2=\"%.1f\" "
                    "stroke=\"black\" stroke-dasharray=\"4 3\"/>\n",
                X(a), Y(a), X(z), Y(z));
  for (double d = l0; d <= l1; d++) {
    double v = pow(10, d);
    xs__sb_printf(&b, "<line x1=\"%.1f\" y1=\"%.1f\" x2=\"%.1f\" y2=\"%.1f\" "
                      "stroke=\"#cccccc\"/>\n",
                  X(v), PT, X(v), PT + ph);
    xs__sb_printf(&b, "<line x1=\"%.1f\" y1=\"%.1f\" x2=\"%.1f\" y2=\"%.1f\" "
                      "stroke=\"#cccccc\"/>\n",
                  PL, Y(v), PL + pw, Y(v));
    xs__sb_printf(&b, "<text x=\"%.1f\" y=\"%.1f\" text-anchor=\"middle\">%g</text>\n",
                  X(v), PT + ph + 16, v);
    xs__sb_printf(&b, "<text x=\"%.1f\" y=\"%.1f\" text-anchor=\"end\">%g</text>\n",
                  PL - 6, Y(v) + 4, v);
  }
  xs__sb_printf(&b, "<text x=\"%.1f\" y=\"%.1f\" text-anchor=\"middle\">measured "
                    "(us, log scale)</text>\n",
                PL + pw / 2, VH - 18);
  xs__sb_printf(&b, "<text x=\"20\" y=\"%.1f\" text-anchor=\"middle\" "
                    "transform=\"rotate(-90 20 %.1f)\">predicted (us, log scale)"
                    "</text>\n",
                PT + ph / 2, PT + ph / 2);
  const char *arms[8];
  size_t narms = 0;
  for (size_t i = 0; i < set->nrows; i++) {
    const xs_validate_row *r = &set->rows[i];
    size_t k = 0;
    while (k < narms && strcmp(arms[k], r->arm))
      k++;
    if (k == narms && narms < 7)
      arms[narms++] = r->arm;
    const char *col = k < 7 ? colours[k] : "#7f7f7f";
    xs__sb_printf(&b, "<circle cx=\"%.1f\" cy=\"%.1f\" r=\"4\" fill=\"%s\" "
                      "fill-opacity=\"0.8\"><title>",
                  X(r->measured_us), Y(r->predicted_us), col);
    xs__sb_escaped(&b, r->source);
    xs__sb_printf(&b, ", %s, %g tokens, ", r->gpu, r->tokens);
    xs__sb_escaped(&b, r->arm);
    xs__sb_printf(&b, ": measured %.1f us, predicted %.1f us (%+.0f%%)</title>"
                      "</circle>\n",
                  r->measured_us, r->predicted_us, 100 * r->error);
  }
  for (size_t k = 0; k < narms; k++) {
    double y = PT + 10 + 20 * (double)k;
    xs__sb_printf(&b, "<circle cx=\"%.1f\" cy=\"%.1f\" r=\"5\" fill=\"%s\"/>"
                      "<text x=\"%.1f\" y=\"%.1f\">",
                  PL + pw + 20, y, colours[k], PL + pw + 30, y + 4);
    xs__sb_escaped(&b, arms[k]);
    xs__sb_printf(&b, "</text>\n");
  }
  double y = PT + 10 + 20 * (double)narms;
  xs__sb_printf(&b, "<rect x=\"%.1f\" y=\"%.1f\" width=\"10\" height=\"10\" "
                    "fill=\"#eeeeee\" stroke=\"#999999\"/><text x=\"%.1f\" "
                    "y=\"%.1f\">within 20%%</text>\n",
                PL + pw + 15, y - 5, PL + pw + 30, y + 4);
  xs__sb_printf(&b, "<line x1=\"%.1f\" y1=\"%.1f\" x2=\"%.1f\" y2=\"%.1f\" "
                    "stroke=\"black\" stroke-dasharray=\"4 3\"/><text x=\"%.1f\" "
                    "y=\"%.1f\">y = x</text>\n",
                PL + pw + 12, y + 20, PL + pw + 26, y + 20, PL + pw + 30, y + 24);
  xs__sb_printf(&b, "</svg>\n");
#undef X
#undef Y
  if (b.oom) {
    free(b.s);
    return NULL;
  }
  return b.s;
}

/* numbers with a point whatever the host's locale */
char *xs_validate_svg(const xs_validate_set *set, const char *title) {
  void *loc = xs__numeric_c();
  char *s = validate_svg(set, title);
  xs__numeric_restore(loc);
  return s;
}

int xs_validate_same_arm(const xs_validate_row *r, void *arm) {
  return strcmp(r->arm, arm) == 0;
}

int xs_validate_same_source(const xs_validate_row *r, void *source) {
  return strcmp(r->source, source) == 0;
}

/* A row's value is new when no row before it has it: each search stops at
 * the value's first row, so this is quick when values repeat, and at most
 * n^2/2 comparisons (0.1 s for 10,000 distinct rows) when they do not. */
size_t xs_validate_distinct(const xs_validate_set *set, int source, const char **names,
                            size_t max) {
  /* the names seen, in a map: linear in rows (a scan of the rows before
   * each was quadratic: 100,000 one-row sources took minutes) */
  xs__strmap seen = {0};
  size_t n = 0;
  int scan = 0; /* out of memory for the map: the scan, slow but sure */
  for (size_t i = 0; i < set->nrows; i++) {
    const char *v = source ? set->rows[i].source : set->rows[i].arm;
    int put = scan ? -1 : xs__strmap_put(&seen, v, 0);
    if (put < 0) {
      scan = 1;
      size_t j = 0;
      while (j < i && strcmp(v, source ? set->rows[j].source : set->rows[j].arm))
        j++;
      put = j < i;
    }
    if (put)
      continue;
    if (n < max)
      names[n] = v;
    n++;
  }
  xs__strmap_free(&seen);
  return n;
}
