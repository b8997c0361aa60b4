/*
 * ep.c: `xstage validate ep`. Reads published timings of EP
 * dispatch and combine kernels (ep.csv's columns), builds each row's
 * kernel as its library's program on the GPU's built-in profile with the
 * row's fabric, and puts the prediction beside the published figure in
 * that figure's own metric (a time, or GB/s as the library's benchmark
 * computes it). The value column is read only after the prediction. The
 * model's fitted constants are refitted here, all rows or all but one
 * source's (docs/validate.md "ep", docs/ep.md "Fitted constants").
 */
#include "plan/ep/ep.h"
#include "validate/validate.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static const char *const need[] = {
    "source", "gpu",  "fabric",  "library", "kernel", "phase",
    "scope",  "ep",   "nodes",   "tokens",  "hidden", "topk",
    "experts", "dtype", "metric", "value",  "timing", NULL};
enum { C_SOURCE, C_GPU, C_FABRIC, C_LIBRARY, C_KERNEL, C_PHASE, C_SCOPE, C_EP,
       C_NODES, C_TOKENS, C_HIDDEN, C_TOPK, C_EXPERTS, C_DTYPE, C_METRIC,
       C_VALUE, C_TIMING, C_N };
static const char *const maybe[] = {"knobs", NULL};
enum { C_KNOBS = C_N };

/* ---- the fitted constants ---- */

/* GPUs whose profiles share one fitted per-SM copy rate */
static const char *const sm90[] = {"h100-nvlink", "h200-nvlink", "h800-nvlink",
                                   "h20-nvlink", NULL};
static const char *const sm100[] = {"b200-nvlink", "gb200-nvl72", NULL};

static const struct {
  const char *name, *about;
  const char *const *profiles; /* a profile number, or NULL: the model's */
  double lo, hi;               /* the fit's search range               */
} constants[XS_EP_CONSTANTS] = {
    /* pair_s, api_s, nvl_eff: xs__ep_params; then the profiles' */
    {"pair_s", "an SM's time per (token, destination) it copies (s)", NULL,
     1e-9, 2e-6},
    {"api_s", "the host's time in one Python call of an EP library beyond "
              "its kernels (s)",
     NULL, 1e-6, 3e-4},
    {"nvl_eff", "the share of the NVLink drain an all-to-all of SM stores "
                "gets as payload", NULL, 0.5, 1},
    {"sm_copy_Bps.sm90", "bytes/s one Hopper SM copies to peers over NVLink "
                         "(compute.sm_copy_Bps of h100/h200/h800/h20-nvlink)",
     sm90, 5e9, 2e11},
    {"sm_copy_Bps.sm100", "bytes/s one Blackwell SM copies to peers over "
                          "NVLink (compute.sm_copy_Bps of b200-nvlink, "
                          "gb200-nvl72)",
     sm100, 5e9, 4e11}};

const char *xs_ep_constant_name(size_t i) {
  return i < XS_EP_CONSTANTS ? constants[i].name : NULL;
}
const char *xs_ep_constant_about(size_t i) {
  return i < XS_EP_CONSTANTS ? constants[i].about : NULL;
}

/* a profile's sm_copy_Bps as shipped */
static double profile_copy(const char *name) {
  xs_profile *p;
  xs_error e;
  if (xs_profile_load(name, &p, &e))
    return NAN;
  xs_kernel_costs k;
  xs_profile_kernel_costs(p, &k);
  xs_profile_free(p);
  return k.sm_copy_Bps;
}

double xs_ep_constant_value(size_t i) {
  if (i >= XS_EP_CONSTANTS)
    return NAN;
  if (constants[i].profiles)
    return profile_copy(constants[i].profiles[0]);
  xs__ep_params par;
  xs__ep_params_default(&par);
  return i == 0 ? par.pair_s : i == 1 ? par.api_s : par.nvl_eff;
}

/* ---- profiles: one per (gpu, fabric), with the constants applied ---- */

typedef struct {
  char gpu[48], fabric[24];
  xs_profile *prof;
  int group; /* which sm_copy constant it takes, -1 none */
} cached;

typedef struct {
  const char *file;
  cached profs[32];
  size_t nprofs;
} ep_job;

static int in_list(const char *const *l, const char *name) {
  for (; l && *l; l++)
    if (!strcmp(*l, name))
      return 1;
  return 0;
}

static void job_free(ep_job *j) {
  for (size_t i = 0; i < j->nprofs; i++)
    xs_profile_free(j->profs[i].prof);
  j->nprofs = 0;
}

static xs_status job_profile(ep_job *j, const char *gpu, const char *fabric,
                             xs_profile **out, xs_error *err) {
  for (size_t i = 0; i < j->nprofs; i++)
    if (!strcmp(j->profs[i].gpu, gpu) && !strcmp(j->profs[i].fabric, fabric)) {
      *out = j->profs[i].prof;
      return XS_OK;
    }
  if (j->nprofs == sizeof j->profs / sizeof j->profs[0])
    return xs__fail(err, XS_INVALID, "more than %zu pairs of gpu and fabric",
                    sizeof j->profs / sizeof j->profs[0]);
  xs_status st = xs_profile_load_fabric(gpu, strcmp(fabric, "none") ? fabric : NULL,
                                        out, err);
  if (st)
    return st;
  cached *c = &j->profs[j->nprofs++];
  snprintf(c->gpu, sizeof c->gpu, "%s", gpu);
  snprintf(c->fabric, sizeof c->fabric, "%s", fabric);
  c->prof = *out;
  c->group = in_list(sm90, gpu) ? 3 : in_list(sm100, gpu) ? 4 : -1;
  return XS_OK;
}

/* the constants into the cached profiles, and the model's into par */
static xs_status job_apply(ep_job *j, const double *v, xs__ep_params *par,
                           xs_error *err) {
  xs__ep_params_default(par);
  if (!v)
    return XS_OK;
  par->pair_s = v[0];
  par->api_s = v[1];
  par->nvl_eff = v[2];
  for (size_t i = 0; i < j->nprofs; i++) {
    if (j->profs[i].group < 0)
      continue;
    xs_kernel_costs k;
    xs_profile_kernel_costs(j->profs[i].prof, &k);
    k.sm_copy_Bps = v[j->profs[i].group];
    xs_status st = xs_profile_set_kernel_costs(j->profs[i].prof, &k, err);
    if (st)
      return st;
  }
  return XS_OK;
}

/* ---- a row ---- */

static void row_shape(const xs_validate_row *row, xs__ep_shape *s) {
  const xs_validate_ep_row *e = &row->ep;
  memset(s, 0, sizeof *s);
  s->tokens = row->tokens;
  s->hidden = e->hidden;
  s->topk = e->topk;
  s->experts = e->experts;
  s->ep = e->ep;
  s->elem_bytes = e->elem_bytes;
  s->sms = e->sms;
  s->topk_groups = e->topk_groups;
  s->api_time = e->api_time;
  s->ll_nic_only = !e->ll_nvlink;
}

/* a time in seconds in the row's metric */
static double in_metric(const xs_validate_ep_row *e, double t) {
  return e->bytes > 0 ? e->bytes / t / 1e9 : t * 1e6;
}

/* The row's phases under every model (the kernel's program evaluated
 * again for blocking, serial and ideal); times in seconds. */
static xs_status row_predict(const xs_validate_row *row, const xs_profile *prof,
                             const xs__ep_params *par, int models,
                             double *t_out, xs_error *err) {
  xs__ep_shape s;
  row_shape(row, &s);
  const xs_validate_ep_row *e = &row->ep;
  int both = !strcmp(e->phase, "dispatch+combine");
  double t[XS_MODEL_COUNT] = {0};
  for (int ph = 0; ph < 2; ph++) {
    if (!both && ph != (strcmp(e->phase, "combine") ? 0 : 1))
      continue;
    xs__ep_shape sp = s;
    if (ph == 1)
      sp.elem_bytes = 2; /* the combine sends BF16 results */
    xs_program *p = NULL;
    double ts;
    xs_status st = xs__ep_kernel(e->library, e->mode, (xs__ep_phase)ph, &sp,
                                 prof, par, models ? &p : NULL, &ts, err);
    if (st)
      return st;
    t[XS_MODEL_BURSTGAP] += ts;
    for (int m = 1; models && m < XS_MODEL_COUNT && !st; m++) {
      double tm;
      if (!(st = xs__makespan(p, prof, (xs_model)m, NULL, &tm, err)))
        t[m] += tm;
    }
    xs_program_free(p);
    if (st)
      return st;
  }
  for (int m = 0; m < XS_MODEL_COUNT; m++)
    t_out[m] = t[m];
  return XS_OK;
}

/* "sms=16;timing=api;nvlink=0;groups=4" over the row's defaults */
static int parse_knobs(const char *text, xs_validate_ep_row *e, char *bad,
                       size_t badn) {
  char buf[256];
  snprintf(buf, sizeof buf, "%s", text);
  for (char *tok = strtok(buf, ";"); tok; tok = strtok(NULL, ";")) {
    char *eq = strchr(tok, '=');
    while (*tok == ' ')
      tok++;
    if (!*tok)
      continue;
    if (!eq) {
      snprintf(bad, badn, "expected key=value, got \"%s\"", tok);
      return -1;
    }
    *eq = '\0';
    const char *v = eq + 1;
    double x;
    if (!strcmp(tok, "timing")) {
      if (strcmp(v, "api") && strcmp(v, "kernel")) {
        snprintf(bad, badn, "timing: expected api or kernel, got \"%s\"", v);
        return -1;
      }
      e->api_time = !strcmp(v, "api");
    } else if (xs__csv_number(v, &x) || x < 0 || x != floor(x)) {
      snprintf(bad, badn, "%s: expected a whole number, got \"%s\"", tok, v);
      return -1;
    } else if (!strcmp(tok, "sms")) {
      e->sms = x;
    } else if (!strcmp(tok, "groups")) {
      e->topk_groups = x;
    } else if (!strcmp(tok, "nvlink")) {
      if (x > 1) {
        snprintf(bad, badn, "nvlink: expected 0 or 1, got \"%s\"", v);
        return -1;
      }
      e->ll_nvlink = (int)x;
    } else {
      snprintf(bad, badn, "unknown knob \"%s\" (sms, timing, nvlink, groups)",
               tok);
      return -1;
    }
  }
  return 0;
}

/* copy a field into a fixed buffer, refusing one that does not fit */
static xs_status field_copy(ep_job *j, const xs__csv_field *f, size_t lineno,
                            const char *col, char *dst, size_t n, xs_error *err) {
  if (strlen(f->s) >= n)
    return xs__csv_fail(err, j->file, lineno, f->col, "%s: longer than %zu characters", col,
                        n - 1);
  snprintf(dst, n, "%s", f->s);
  return XS_OK;
}

static xs_status ep_row(void *user, const xs__csv_field **F, size_t lineno,
                        xs_validate_row *row, xs_error *err) {
  ep_job *j = user;
  xs_validate_ep_row *e = &row->ep;
  row->kind = 2;
  row->line = lineno;
  xs_status st;
  if ((st = field_copy(j, F[C_GPU], lineno, "gpu", row->gpu, sizeof row->gpu, err)) ||
      (st = field_copy(j, F[C_FABRIC], lineno, "fabric", e->fabric,
                       sizeof e->fabric, err)) ||
      (st = field_copy(j, F[C_LIBRARY], lineno, "library", e->library,
                       sizeof e->library, err)) ||
      (st = field_copy(j, F[C_KERNEL], lineno, "kernel", e->mode, sizeof e->mode,
                       err)) ||
      (st = field_copy(j, F[C_PHASE], lineno, "phase", e->phase, sizeof e->phase,
                       err)) ||
      (st = field_copy(j, F[C_METRIC], lineno, "metric", e->metric,
                       sizeof e->metric, err)))
    return st;
  /* the whole source: two of one repository differ past any length */
  if (!(row->source = xs__strdup(F[C_SOURCE]->s)))
    return xs__fail(err, XS_NOMEM, "out of memory");
  /* known names (checked below) fit: "deepep-hybrid/low-latency" at most */
  snprintf(row->arm, sizeof row->arm, "%.15s/%.15s", e->library, e->mode);
  const struct {
    int col;
    double *dst;
  } nums[] = {{C_EP, &e->ep},         {C_TOKENS, &row->tokens},
              {C_HIDDEN, &e->hidden}, {C_TOPK, &e->topk},
              {C_EXPERTS, &e->experts}};
  for (size_t i = 0; i < sizeof nums / sizeof nums[0]; i++)
    if (xs__csv_number(F[nums[i].col]->s, nums[i].dst) || !(*nums[i].dst >= 1))
      return xs__csv_fail(err, j->file, lineno, F[nums[i].col]->col,
                          "%s: expected a number >= 1, got \"%s\"", need[nums[i].col],
                          F[nums[i].col]->s);
  if (!xs__ep_known(e->library, e->mode))
    return xs__csv_fail(err, j->file, lineno, F[C_LIBRARY]->col,
                        "library and kernel: no model of \"%s\" \"%s\" (deepep-v1 normal "
                        "or low-latency, deepep-v2 normal, deepep-hybrid normal, "
                        "pplx-kernels low-latency, uccl-ep normal or low-latency)",
                        e->library, e->mode);
  if (strcmp(e->phase, "dispatch") && strcmp(e->phase, "combine") &&
      strcmp(e->phase, "dispatch+combine"))
    return xs__csv_fail(err, j->file, lineno, F[C_PHASE]->col,
                        "phase: expected dispatch, combine or dispatch+combine, got \"%s\"",
                        e->phase);
  if (!strcmp(F[C_DTYPE]->s, "fp8"))
    e->elem_bytes = 1;
  else if (!strcmp(F[C_DTYPE]->s, "bf16"))
    e->elem_bytes = 2;
  else
    return xs__csv_fail(err, j->file, lineno, F[C_DTYPE]->col,
                        "dtype: expected fp8 or bf16, got \"%s\"", F[C_DTYPE]->s);
  static const char *const metrics[] = {"time_us", "rdma_GBps", "nvl_GBps",
                                        "algbw_GBps", NULL};
  if (!in_list(metrics, e->metric))
    return xs__csv_fail(err, j->file, lineno, F[C_METRIC]->col,
                        "metric: expected time_us, rdma_GBps, nvl_GBps or algbw_GBps, got "
                        "\"%s\"", e->metric);
  xs_profile *prof;
  xs_error e2;
  if (job_profile(j, row->gpu, e->fabric, &prof, &e2))
    return xs__csv_fail(err, j->file, lineno, F[C_GPU]->col, "gpu and fabric: %s",
                        e2.message);
  /* the harness's settings: the library's own test, unless the knobs say
   * otherwise. DeepEP's (and UCCL-EP's) internode tests route each token
   * to at most 4 nodes; their intranode tests and pplx-kernels' time the
   * Python call; DeepEP's low-latency kernels copy to same-node peers
   * over NVLink */
  double node = xs_profile_node_gpus(prof);
  double nodes = ceil(e->ep / fmin(e->ep, node));
  int v1 = !strcmp(e->library, "deepep-v1") || !strcmp(e->library, "uccl-ep");
  int normal = !strcmp(e->mode, "normal");
  e->topk_groups = v1 && normal && nodes > 1 ? fmin(nodes, 4) : 0;
  e->api_time = (v1 && normal && nodes == 1) || !strcmp(e->library, "pplx-kernels");
  e->ll_nvlink = 1;
  e->sms = 0;
  if (F[C_KNOBS] && F[C_KNOBS]->s[0]) {
    char bad[256];
    if (parse_knobs(F[C_KNOBS]->s, e, bad, sizeof bad))
      return xs__csv_fail(err, j->file, lineno, F[C_KNOBS]->col, "knobs: %s", bad);
  }
  xs__ep_shape s;
  row_shape(row, &s);
  xs__ep_route rt;
  if (xs__ep_routing(&s, node, &rt, &e2))
    return xs__csv_fail(err, j->file, lineno, 1, "%s", e2.message);
  xs__ep_phase ph = strcmp(e->phase, "combine") ? XS__EP_DISPATCH : XS__EP_COMBINE;
  e->bytes = 0;
  if (strcmp(e->metric, "time_us")) {
    if (!strcmp(e->phase, "dispatch+combine"))
      return xs__csv_fail(err, j->file, lineno, F[C_METRIC]->col,
                          "metric: %s of dispatch+combine: no library prints one "
                          "(time_us only)", e->metric);
    e->bytes = xs__ep_metric_bytes(e->library, e->mode, ph, e->metric, &s, &rt);
    if (!(e->bytes > 0))
      return xs__csv_fail(err, j->file, lineno, F[C_METRIC]->col,
                          "metric: %s does not print %s", e->library, e->metric);
  }
  xs__ep_params par;
  xs__ep_params_default(&par);
  double t[XS_MODEL_COUNT];
  if (row_predict(row, prof, &par, 1, t, &e2))
    return xs__csv_fail(err, j->file, lineno, 1, "%s", e2.message);
  for (int m = 0; m < XS_MODEL_COUNT; m++) {
    e->model[m] = in_metric(e, t[m]);
    row->model_us[m] = t[m] * 1e6;
  }
  e->predicted = e->model[XS_MODEL_BURSTGAP];
  row->predicted_us = t[XS_MODEL_BURSTGAP] * 1e6;
  e->loso = e->loso_error = NAN;
  row->alt_us = NAN;
  /* only now the published figure */
  if (xs__csv_number(F[C_VALUE]->s, &e->measured) || !(e->measured > 0))
    return xs__csv_fail(err, j->file, lineno, F[C_VALUE]->col,
                        "value: expected a positive number, got \"%s\"", F[C_VALUE]->s);
  row->measured_us = e->bytes > 0 ? e->bytes / (e->measured * 1e9) * 1e6
                                  : e->measured;
  row->error = e->predicted / e->measured - 1;
  row->metric[0] = '\0';
  return XS_OK;
}

xs_status xs_validate_ep(const char *text, size_t length, const char *filename,
                         xs_validate_set *out, void (*progress)(size_t, void *),
                         void *ctx, xs_error *err) {
  ep_job j = {filename ? filename : "<data>", {{{0}, {0}, NULL, 0}}, 0};
  xs_status st = xs__validate_csv(
      j.file, need, maybe,
      "source, gpu, fabric, library, kernel, phase, scope, ep, nodes, tokens, "
      "hidden, topk, experts, dtype, metric, value, timing",
      text, length, out, progress, ctx, ep_row, &j, err);
  job_free(&j);
  return st;
}

/* ---- refitting ---- */

/* whether a row of source src is left out: leave_out names it, or ends in
 * '*' and begins it */
static int left_out(const char *src, const char *leave_out) {
  if (!leave_out)
    return 0;
  size_t n = strlen(leave_out);
  if (n && leave_out[n - 1] == '*')
    return !strncmp(src, leave_out, n - 1);
  return !strcmp(src, leave_out);
}

/* The fit's objective: the mean over (library, mode) of each one's mean
 * |log(predicted / measured)|, each row's capped at log 1.5 so that a row
 * the model cannot follow (a published figure that contradicts its
 * neighbours) does not pull the constants, over the rows kept; every
 * library weighs alike whatever its number of rows. A mean of capped
 * errors is smoother in the constants than the median the summaries
 * report, so the search below finds one optimum from any start. */
#define FIT_CAP 0.405465 /* log 1.5 */
static xs_status objective(ep_job *j, const xs_validate_set *set,
                           const char *leave_out, const double *v, double *out,
                           xs_error *err) {
  xs__ep_params par;
  xs_status st = job_apply(j, v, &par, err);
  if (st)
    return st;
  size_t n = set->nrows;
  double *err_of = malloc((n + 1) * sizeof *err_of);
  if (!err_of)
    return xs__fail(err, XS_NOMEM, "out of memory");
  for (size_t i = 0; i < n && !st; i++) {
    const xs_validate_row *r = &set->rows[i];
    err_of[i] = NAN;
    if (r->kind != 2 || left_out(r->source, leave_out))
      continue;
    xs_profile *prof;
    double t[XS_MODEL_COUNT];
    if ((st = job_profile(j, r->gpu, r->ep.fabric, &prof, err)) ||
        (st = row_predict(r, prof, &par, 0, t, err)))
      break;
    err_of[i] = fmin(FIT_CAP, fabs(log(in_metric(&r->ep, t[0]) / r->ep.measured)));
  }
  double sum = 0, groups = 0;
  int *done = calloc(n + 1, sizeof *done);
  if (!st && !done)
    st = xs__fail(err, XS_NOMEM, "out of memory");
  for (size_t i = 0; i < n && !st; i++) {
    if (done[i] || isnan(err_of[i]))
      continue;
    size_t k = 0;
    double gs = 0;
    for (size_t m = i; m < n; m++)
      if (!done[m] && !isnan(err_of[m]) &&
          !strcmp(set->rows[m].arm, set->rows[i].arm)) {
        done[m] = 1;
        gs += err_of[m];
        k++;
      }
    sum += gs / (double)k;
    groups++;
  }
  free(done);
  free(err_of);
  *out = groups ? sum / groups : 0;
  return st;
}

/* the rows of the set whose GPU takes constant i (the others do not move
 * the objective with it) */
static int constant_used(const xs_validate_set *set, const char *leave_out,
                         size_t i) {
  for (size_t r = 0; r < set->nrows; r++) {
    const xs_validate_row *row = &set->rows[r];
    if (row->kind != 2 || left_out(row->source, leave_out))
      continue;
    if (!constants[i].profiles ? i != 1 || row->ep.api_time
                               : in_list(constants[i].profiles, row->gpu))
      return 1;
  }
  return 0;
}

/* Coordinate descent: each constant in turn by golden-section search on
 * its logarithm, the first round over its whole range, later ones near
 * the value found, until no constant moves by more than 0.5% (at most 8
 * rounds), from the shipped values. */
static xs_status fit(ep_job *j, const xs_validate_set *set,
                     const char *leave_out, double *v, xs_error *err) {
  for (size_t i = 0; i < XS_EP_CONSTANTS; i++)
    v[i] = xs_ep_constant_value(i);
  const double phi = (sqrt(5) - 1) / 2;
  xs_status st = XS_OK;
  /* every profile loaded first: the constants go into each once per
   * evaluation of the objective */
  for (size_t r = 0; r < set->nrows && !st; r++) {
    xs_profile *prof;
    if (set->rows[r].kind == 2)
      st = job_profile(j, set->rows[r].gpu, set->rows[r].ep.fabric, &prof, err);
  }
  double moved = 1;
  for (int round = 0; round < 8 && moved > 0.005 && !st; round++) {
    moved = 0;
    for (size_t i = 0; i < XS_EP_CONSTANTS && !st; i++) {
      double was = v[i];
      if (!constant_used(set, leave_out, i))
        continue;
      double a = log(constants[i].lo), b = log(constants[i].hi);
      if (round) { /* later rounds search near the value found */
        a = fmax(a, log(v[i]) - 0.7);
        b = fmin(b, log(v[i]) + 0.7);
      }
      double x1 = b - phi * (b - a), x2 = a + phi * (b - a), f1, f2;
      v[i] = exp(x1);
      if ((st = objective(j, set, leave_out, v, &f1, err)))
        break;
      v[i] = exp(x2);
      if ((st = objective(j, set, leave_out, v, &f2, err)))
        break;
      for (int it = 0; it < 16 && !st; it++) {
        if (f1 <= f2) {
          b = x2, x2 = x1, f2 = f1;
          x1 = b - phi * (b - a);
          v[i] = exp(x1);
          st = objective(j, set, leave_out, v, &f1, err);
        } else {
          a = x1, x1 = x2, f1 = f2;
          x2 = a + phi * (b - a);
          v[i] = exp(x2);
          st = objective(j, set, leave_out, v, &f2, err);
        }
      }
      v[i] = exp(f1 <= f2 ? x1 : x2);
      moved = fmax(moved, fabs(v[i] / was - 1));
    }
  }
  return st;
}

xs_status xs_validate_ep_fit(const xs_validate_set *set, const char *leave_out,
                             double *values, xs_error *err) {
  ep_job j = {"<set>", {{{0}, {0}, NULL, 0}}, 0};
  xs_status st = fit(&j, set, leave_out, values, err);
  job_free(&j);
  return st;
}

xs_status xs_validate_ep_by_source(xs_validate_set *set, double *values,
                                   xs_error *err) {
  size_t ns = xs_validate_distinct(set, 1, NULL, 0);
  const char **src = malloc((ns + 1) * sizeof *src);
  if (!src)
    return xs__fail(err, XS_NOMEM, "out of memory");
  xs_validate_distinct(set, 1, src, ns);
  ep_job j = {"<set>", {{{0}, {0}, NULL, 0}}, 0};
  xs_status st = XS_OK;
  for (size_t k = 0; k < ns && !st; k++) {
    double v[XS_EP_CONSTANTS];
    if ((st = fit(&j, set, src[k], v, err)))
      break;
    if (values)
      memcpy(values + k * XS_EP_CONSTANTS, v, sizeof v);
    xs__ep_params par;
    for (size_t i = 0; i < set->nrows && !st; i++) {
      xs_validate_row *r = &set->rows[i];
      if (r->kind != 2 || strcmp(r->source, src[k]))
        continue;
      xs_profile *prof;
      double t[XS_MODEL_COUNT];
      if ((st = job_profile(&j, r->gpu, r->ep.fabric, &prof, err)) ||
          (st = job_apply(&j, v, &par, err)) ||
          (st = row_predict(r, prof, &par, 0, t, err)))
        break;
      r->ep.loso = in_metric(&r->ep, t[0]);
      r->ep.loso_error = r->ep.loso / r->ep.measured - 1;
    }
  }
  job_free(&j);
  free(src);
  return st;
}

xs_status xs_validate_megamoe_refit(xs_validate_set *moe, const xs_validate_set *ep,
                                    const char *leave_out, xs_error *err) {
  if (leave_out && strlen(leave_out) >= sizeof moe->refit_without)
    return xs__fail(err, XS_INVALID, "the sources to leave out, \"%.40s...\", are %zu bytes; at most %zu",
                    leave_out, strlen(leave_out), sizeof moe->refit_without - 1);
  double v[XS_EP_CONSTANTS];
  ep_job j = {"<set>", {{{0}, {0}, NULL, 0}}, 0};
  xs_status st = fit(&j, ep, leave_out, v, err);
  size_t out = 0;
  for (size_t i = 0; i < ep->nrows; i++)
    out += ep->rows[i].kind == 2 && left_out(ep->rows[i].source, leave_out);
  xs__ep_params par;
  for (size_t i = 0; i < moe->nrows && !st; i++) {
    xs_validate_row *r = &moe->rows[i];
    r->refit_us = NAN;
    if (r->kind || strcmp(r->arm, "sequential") || (r->metric[0] && strcmp(r->metric, "time")))
      continue;
    /* the row's GPU with the refitted per-SM copy rate, and the refitted
     * model constants, for its all-to-all */
    xs_profile *prof;
    double t;
    if ((st = job_profile(&j, r->gpu, "none", &prof, err)) ||
        (st = job_apply(&j, v, &par, err)) ||
        (st = xs__moe_time_ep(&r->config, prof, XS_MOE_SEQUENTIAL, &r->knobs, &par, &t, err)))
      break;
    r->refit_us = t * 1e6;
  }
  job_free(&j);
  if (!st) {
    moe->refitted = 1;
    memcpy(moe->refit, v, sizeof v);
    moe->refit_left_out = out;
    moe->refit_rows = ep->nrows;
    snprintf(moe->refit_without, sizeof moe->refit_without, "%s",
             leave_out ? leave_out : "");
  }
  return st;
}

/* ---- groups of rows ---- */

static const char *ep_field(const xs_validate_row *r, int field) {
  return field == 0 ? r->arm : field == 1 ? r->ep.library
                             : field == 2 ? r->ep.phase : r->source;
}

size_t xs_validate_ep_distinct(const xs_validate_set *set, int field, const char **names,
                               size_t max) {
  /* each row against the distinct values so far (n x distinct, as few as
   * an EP set's libraries, phases and sources are) */
  const char **seen = set ? malloc((set->nrows + 1) * sizeof *seen) : NULL;
  size_t n = 0;
  for (size_t i = 0; seen && i < set->nrows; i++) {
    const char *v = ep_field(&set->rows[i], field);
    size_t j = 0;
    while (j < n && strcmp(seen[j], v))
      j++;
    if (j < n)
      continue;
    if (names && n < max)
      names[n] = v;
    seen[n++] = v;
  }
  free(seen);
  return n;
}

double xs_validate_ep_median(const xs_validate_set *set, int field, const char *value,
                             int model, size_t *n, double *max_abs) {
  double *v = set ? malloc((set->nrows + 1) * sizeof *v) : NULL;
  size_t k = 0;
  double m = 0;
  for (size_t i = 0; v && i < set->nrows; i++) {
    const xs_validate_row *r = &set->rows[i];
    if (value && strcmp(ep_field(r, field), value))
      continue;
    double e = model < 0 ? r->ep.loso_error : r->ep.model[model] / r->ep.measured - 1;
    if (isnan(e))
      continue;
    v[k++] = fabs(e);
    m = fmax(m, fabs(e));
  }
  double med = v ? xs__median_of(v, k) : NAN;
  free(v);
  if (n)
    *n = k;
  if (max_abs)
    *max_abs = k ? m : NAN;
  return med;
}
