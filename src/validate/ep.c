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

/* GPUs whose profiles share one fitted count of streams per SM */
static const char *const sm90[] = {"h100-nvlink", "h200-nvlink", "h800-nvlink",
                                   "h20-nvlink", NULL};
static const char *const sm100[] = {"b200-nvlink", "gb200-nvl72", NULL};

static const struct {
  const char *name, *about;
  const char *const *profiles; /* a profile number, or NULL: the model's */
  double lo, hi;               /* the fit's search range               */
  int whole;                   /* a count: searched over whole numbers */
} constants[XS_EP_CONSTANTS] = {
    /* pair_s, api_s, nvl_eff: xs__ep_params; then the profiles' */
    {"pair_s", "an SM's time per (token, destination) it copies (s)", NULL,
     1e-9, 2e-6, 0},
    {"api_s", "the host's time in one Python call of an EP library beyond "
              "its kernels (s)",
     NULL, 1e-6, 3e-4, 0},
    {"nvl_eff", "the share of the NVLink drain an all-to-all of SM stores "
                "gets as payload", NULL, 0.5, 1, 0},
    {"ep_sm_streams.sm90", "NVLink workers one Hopper SM of an EP copy kernel "
                           "stands for (compute.ep_sm_streams of "
                           "h100/h200/h800/h20-nvlink)",
     sm90, 1, 32, 1},
    {"ep_sm_streams.sm100", "NVLink workers one Blackwell SM of an EP copy "
                            "kernel stands for (compute.ep_sm_streams of "
                            "b200-nvlink, gb200-nvl72)",
     sm100, 1, 32, 1}};

const char *xs_ep_constant_name(size_t i) {
  return i < XS_EP_CONSTANTS ? constants[i].name : NULL;
}
const char *xs_ep_constant_about(size_t i) {
  return i < XS_EP_CONSTANTS ? constants[i].about : NULL;
}

/* a profile's ep_sm_streams as shipped */
static double profile_copy(const char *name) {
  xs_profile *p;
  xs_error e;
  if (xs_profile_load(name, &p, &e))
    return NAN;
  xs_kernel_costs k;
  xs_profile_kernel_costs(p, &k);
  xs_profile_free(p);
  return k.ep_sm_streams;
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
  int group; /* which ep_sm_streams constant it takes, -1 none */
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

/* The profile of a row's gpu and fabric, built-in names only (a row never
 * makes xstage open a file); *which says which was wrong: 0 the gpu, 1
 * the fabric, 2 the pair */
static xs_status job_profile(ep_job *j, const char *gpu, const char *fabric,
                             xs_profile **out, int *which, xs_error *err) {
  for (size_t i = 0; i < j->nprofs; i++)
    if (!strcmp(j->profs[i].gpu, gpu) && !strcmp(j->profs[i].fabric, fabric)) {
      *out = j->profs[i].prof;
      return XS_OK;
    }
  *which = 2;
  if (j->nprofs == sizeof j->profs / sizeof j->profs[0])
    return xs__fail(err, XS_INVALID, "more than %zu pairs of gpu and fabric",
                    sizeof j->profs / sizeof j->profs[0]);
  xs_profile *f = NULL;
  xs_status st;
  if ((*which = 0, st = xs__profile_builtin(gpu, 0, out, err)) ||
      (*which = 1, strcmp(fabric, "none") && (st = xs__profile_builtin(fabric, 1, &f, err))) ||
      (*which = 2, f && (st = xs_profile_add_fabric(*out, f, err)))) {
    xs_profile_free(f);
    xs_profile_free(*out);
    *out = NULL;
    return st;
  }
  xs_profile_free(f);
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
    k.ep_sm_streams = v[j->profs[i].group];
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
  static const char *const keys[] = {"sms", "timing", "nvlink", "groups", NULL};
  unsigned seen = 0;
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
    int which = xs__name_index(keys, 4, tok);
    if (which < 0) {
      snprintf(bad, badn, "unknown knob \"%s\" (sms, timing, nvlink, groups)", tok);
      return -1;
    }
    if (seen & (1u << which)) {
      snprintf(bad, badn, "%s is given twice", tok);
      return -1;
    }
    seen |= 1u << which;
    if (!strcmp(tok, "timing")) {
      if (strcmp(v, "api") && strcmp(v, "kernel")) {
        snprintf(bad, badn, "timing: expected api or kernel, got \"%s\"", v);
        return -1;
      }
      e->api_time = !strcmp(v, "api");
    } else if (xs__csv_number(v, &x) || x < 0 || x > 1e7 || x != floor(x)) {
      snprintf(bad, badn, "%s: expected a whole number from 0 to 1e7, got \"%s\"", tok, v);
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
  int which;
  if (job_profile(j, row->gpu, e->fabric, &prof, &which, &e2))
    return xs__csv_fail(err, j->file, lineno, F[which == 1 ? C_FABRIC : C_GPU]->col,
                        "%s: %s", which == 0 ? "gpu" : which == 1 ? "fabric"
                                                              : "gpu and fabric",
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
  /* a figure no kernel's time can be (1e300 printed as 300 digits) */
  if (!(row->measured_us >= XS__TIME_US_MIN && row->measured_us <= XS__TIME_US_MAX))
    return xs__csv_fail(err, j->file, lineno, F[C_VALUE]->col,
                        "value: %s %s is a time of %.3g us, outside %g to %g us",
                        F[C_VALUE]->s, e->metric, row->measured_us, XS__TIME_US_MIN,
                        XS__TIME_US_MAX);
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

/* What the refits share: each row's (library, mode) group and source as
 * indices (no name compared per evaluation), the log of each row's
 * measured time, and for the linearised refits each row's log time as a
 * linear function of the constants' logs about lin_v0. */
typedef struct {
  size_t n;
  int *group;       /* per row: its arm's index; -1 for a row of another kind */
  size_t ngroups;
  uint32_t *source; /* per row: its source's index (first appearance order) */
  size_t nsources;
  double *meas;     /* per row: log of the measured time, seconds */
  const double *lin_v0; /* NULL: each evaluation predicts the rows */
  double *lin_l0, *lin_g; /* per row: log time at lin_v0; d log t / d log v */
  double *err_of, *gsum;  /* scratch: n and ngroups */
  size_t *gn, *order;     /* scratch: ngroups each */
  unsigned char *out;     /* per source: 1 when a pattern leaves it out (NULL: none) */
} refit;

#define NONE UINT32_MAX /* no source left out */

/* whether row i is left out: its source is leave, or a pattern's */
static int skipped(const refit *rf, size_t i, uint32_t leave) {
  return rf->source[i] == leave || (rf->out && rf->out[rf->source[i]]);
}

/* a row's burstgap time (s) with the constants par and those applied to
 * the job's profiles */
static xs_status row_time(ep_job *j, const xs_validate_row *r, const xs__ep_params *par,
                          double *t_s, xs_error *err) {
  xs_profile *prof;
  double t[XS_MODEL_COUNT];
  int which;
  xs_status st = job_profile(j, r->gpu, r->ep.fabric, &prof, &which, err);
  if (!st)
    st = row_predict(r, prof, par, 0, t, err);
  *t_s = t[0];
  return st;
}

static void refit_free(refit *rf) {
  free(rf->group);
  free(rf->source);
  free(rf->meas);
  free(rf->lin_l0);
  free(rf->lin_g);
  free(rf->err_of);
  free(rf->gsum);
  free(rf->gn);
  free(rf->order);
  free(rf->out);
  memset(rf, 0, sizeof *rf);
}

/* index the set's arms and sources once (a map each: linear in rows) */
static xs_status refit_init(refit *rf, const xs_validate_set *set, xs_error *err) {
  memset(rf, 0, sizeof *rf);
  size_t n = rf->n = set->nrows;
  rf->group = malloc((n + 1) * sizeof *rf->group);
  rf->source = malloc((n + 1) * sizeof *rf->source);
  rf->meas = malloc((n + 1) * sizeof *rf->meas);
  rf->err_of = malloc((n + 1) * sizeof *rf->err_of);
  xs__strmap arms = {0}, srcs = {0};
  xs_status st = rf->group && rf->source && rf->meas && rf->err_of
                     ? XS_OK
                     : xs__fail(err, XS_NOMEM, "out of memory");
  for (size_t i = 0; i < n && !st; i++) {
    const xs_validate_row *r = &set->rows[i];
    uint32_t k;
    if (!xs__strmap_get(&srcs, r->source, &k)) {
      k = (uint32_t)rf->nsources++;
      if (xs__strmap_put(&srcs, r->source, k) < 0)
        st = xs__fail(err, XS_NOMEM, "out of memory");
    }
    rf->source[i] = k;
    rf->group[i] = -1;
    rf->meas[i] = log(r->measured_us * 1e-6);
    if (r->kind != 2)
      continue;
    if (!xs__strmap_get(&arms, r->arm, &k)) {
      k = (uint32_t)rf->ngroups++;
      if (xs__strmap_put(&arms, r->arm, k) < 0)
        st = xs__fail(err, XS_NOMEM, "out of memory");
    }
    rf->group[i] = (int)k;
  }
  xs__strmap_free(&arms);
  xs__strmap_free(&srcs);
  size_t g = rf->ngroups + 1;
  if (!st && (!(rf->gsum = malloc(g * sizeof *rf->gsum)) ||
              !(rf->gn = malloc(g * sizeof *rf->gn)) ||
              !(rf->order = malloc(g * sizeof *rf->order))))
    st = xs__fail(err, XS_NOMEM, "out of memory");
  if (st)
    refit_free(rf);
  return st;
}

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
 * report, so the search below finds one optimum from any start. The
 * groups' means are added in the order of their first row kept, each
 * group's errors in row order. */
#define FIT_CAP 0.405465 /* log 1.5 */
static xs_status objective(ep_job *j, const xs_validate_set *set, refit *rf,
                           uint32_t leave, const double *v, double *out,
                           xs_error *err) {
  xs__ep_params par;
  xs_status st = rf->lin_v0 ? XS_OK : job_apply(j, v, &par, err);
  if (st)
    return st;
  double dv[XS_EP_CONSTANTS];
  for (size_t c = 0; rf->lin_v0 && c < XS_EP_CONSTANTS; c++)
    dv[c] = log(v[c] / rf->lin_v0[c]);
  size_t ng = 0;
  for (size_t g = 0; g < rf->ngroups; g++)
    rf->gn[g] = 0;
  for (size_t i = 0; i < rf->n && !st; i++) {
    int g = rf->group[i];
    if (g < 0 || skipped(rf, i, leave))
      continue;
    double e;
    if (rf->lin_v0) {
      double lt = rf->lin_l0[i];
      for (size_t c = 0; c < XS_EP_CONSTANTS; c++)
        lt += rf->lin_g[i * XS_EP_CONSTANTS + c] * dv[c];
      e = fabs(lt - rf->meas[i]);
    } else {
      const xs_validate_row *r = &set->rows[i];
      double t;
      if ((st = row_time(j, r, &par, &t, err)))
        break;
      e = fabs(log(in_metric(&r->ep, t) / r->ep.measured));
    }
    e = fmin(FIT_CAP, e);
    if (!rf->gn[g]++) {
      rf->gsum[g] = 0;
      rf->order[ng++] = (size_t)g;
    }
    rf->gsum[g] += e;
  }
  double sum = 0;
  for (size_t k = 0; k < ng; k++)
    sum += rf->gsum[rf->order[k]] / (double)rf->gn[rf->order[k]];
  *out = ng ? sum / (double)ng : 0;
  return st;
}

/* whether some row kept has a GPU that takes constant i (the others do not
 * move the objective with it) */
static int constant_used(const xs_validate_set *set, const refit *rf, uint32_t leave,
                         size_t i) {
  for (size_t r = 0; r < set->nrows; r++) {
    const xs_validate_row *row = &set->rows[r];
    if (row->kind != 2 || skipped(rf, r, leave))
      continue;
    if (!constants[i].profiles ? i != 1 || row->ep.api_time
                               : in_list(constants[i].profiles, row->gpu))
      return 1;
  }
  return 0;
}

/* Coordinate descent: each constant in turn by golden-section search on
 * its logarithm (a count over the whole numbers of its range), the first
 * round over its whole range (near: within x2 of the start, as later
 * rounds are of the value found), until no constant moves by more than
 * 0.5% (at most 8 rounds), from start (NULL: the shipped values). */
static xs_status fit(ep_job *j, const xs_validate_set *set, refit *rf, uint32_t leave,
                     const double *start, int near, double *v, xs_error *err) {
  for (size_t i = 0; i < XS_EP_CONSTANTS; i++)
    v[i] = start ? start[i] : xs_ep_constant_value(i);
  const double phi = (sqrt(5) - 1) / 2;
  xs_status st = XS_OK;
  /* every profile loaded first: the constants go into each once per
   * evaluation of the objective */
  for (size_t r = 0; r < set->nrows && !st; r++) {
    xs_profile *prof;
    int which;
    if (set->rows[r].kind == 2)
      st = job_profile(j, set->rows[r].gpu, set->rows[r].ep.fabric, &prof, &which, err);
  }
  double moved = 1;
  for (int round = 0; round < 8 && moved > 0.005 && !st; round++) {
    moved = 0;
    for (size_t i = 0; i < XS_EP_CONSTANTS && !st; i++) {
      double was = v[i];
      if (!constant_used(set, rf, leave, i))
        continue;
      if (constants[i].whole) {
        /* a count: every whole number of the range in the first round,
         * its neighbours after */
        double lo = round || near ? fmax(constants[i].lo, was - 2) : constants[i].lo;
        double hi = round || near ? fmin(constants[i].hi, was + 2) : constants[i].hi;
        double best = was, fbest = INFINITY, f;
        for (double x = lo; x <= hi && !st; x++) {
          v[i] = x;
          if (!(st = objective(j, set, rf, leave, v, &f, err)) && f < fbest)
            fbest = f, best = x;
        }
        v[i] = best;
        moved = fmax(moved, fabs(v[i] / was - 1));
        continue;
      }
      double a = log(constants[i].lo), b = log(constants[i].hi);
      if (round || near) { /* later rounds search near the value found */
        a = fmax(a, log(v[i]) - 0.7);
        b = fmin(b, log(v[i]) + 0.7);
      }
      double x1 = b - phi * (b - a), x2 = a + phi * (b - a), f1, f2;
      v[i] = exp(x1);
      if ((st = objective(j, set, rf, leave, v, &f1, err)))
        break;
      v[i] = exp(x2);
      if ((st = objective(j, set, rf, leave, v, &f2, err)))
        break;
      for (int it = 0; it < 16 && !st; it++) {
        if (f1 <= f2) {
          b = x2, x2 = x1, f2 = f1;
          x1 = b - phi * (b - a);
          v[i] = exp(x1);
          st = objective(j, set, rf, leave, v, &f1, err);
        } else {
          a = x1, x1 = x2, f1 = f2;
          x2 = a + phi * (b - a);
          v[i] = exp(x2);
          st = objective(j, set, rf, leave, v, &f2, err);
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
  refit rf;
  xs_status st = refit_init(&rf, set, err);
  /* the sources leave_out names (one, or those a pattern begins) */
  if (!st && leave_out && !(rf.out = calloc(rf.nsources + 1, 1)))
    st = xs__fail(err, XS_NOMEM, "out of memory");
  for (size_t i = 0; !st && leave_out && i < set->nrows; i++)
    if (left_out(set->rows[i].source, leave_out))
      rf.out[rf.source[i]] = 1;
  if (!st)
    st = fit(&j, set, &rf, NONE, NULL, 0, values, err);
  refit_free(&rf);
  job_free(&j);
  return st;
}

/* The linear model about v0 of every EP row's log time in the constants'
 * logs: central differences at x1.05 and x1/1.05 of each constant (a
 * count: one up and one down) */
#define LIN_STEP 0.04879016416943205 /* log 1.05 */
static xs_status linearise(ep_job *j, const xs_validate_set *set, refit *rf,
                           const double *v0, xs_error *err) {
  size_t n = rf->n;
  rf->lin_l0 = malloc((n + 1) * sizeof *rf->lin_l0);
  rf->lin_g = calloc(n * XS_EP_CONSTANTS + 1, sizeof *rf->lin_g);
  double *up = malloc((n + 1) * sizeof *up);
  xs_status st = rf->lin_l0 && rf->lin_g && up ? XS_OK
                                               : xs__fail(err, XS_NOMEM, "out of memory");
  /* pass c: 0 the centre, 1 + 2c constant c up, 2 + 2c down */
  for (size_t pass = 0; pass < 1 + 2 * XS_EP_CONSTANTS && !st; pass++) {
    double v[XS_EP_CONSTANTS];
    memcpy(v, v0, sizeof v);
    size_t c = pass ? (pass - 1) / 2 : 0;
    /* a count steps by one (down to its least), the others by x1.05 */
    double up_v = constants[c].whole ? v0[c] + 1 : v0[c] * exp(LIN_STEP);
    double dn_v = constants[c].whole ? fmax(constants[c].lo, v0[c] - 1)
                                     : v0[c] * exp(-LIN_STEP);
    double span = log(up_v / dn_v);
    if (pass)
      v[c] = pass % 2 ? up_v : dn_v;
    xs__ep_params par;
    if ((st = job_apply(j, v, &par, err)))
      break;
    for (size_t i = 0; i < n && !st; i++) {
      double t;
      if (rf->group[i] < 0)
        continue;
      if ((st = row_time(j, &set->rows[i], &par, &t, err)))
        break;
      double lt = log(t);
      if (!pass)
        rf->lin_l0[i] = lt;
      else if (pass % 2)
        up[i] = lt;
      else
        rf->lin_g[i * XS_EP_CONSTANTS + c] = (up[i] - lt) / span;
    }
  }
  free(up);
  rf->lin_v0 = st ? NULL : v0;
  return st;
}

xs_status xs__validate_ep_by_source_within(xs_validate_set *set, double *values,
                                           double exact_work, xs_error *err) {
  ep_job j = {"<set>", {{{0}, {0}, NULL, 0}}, 0};
  refit rf;
  xs_status st = refit_init(&rf, set, err);
  if (st)
    return st;
  size_t ns = rf.nsources, nep = 0;
  for (size_t i = 0; i < rf.n; i++)
    nep += rf.group[i] >= 0;
  /* Each source's refit evaluates every other row hundreds of times:
   * exact while sources x rows stay small (the project's data: 8 x 325);
   * past that, one exact fit to all rows, and each source's refit on the
   * rows' linear model about it (docs/validate.md "ep"), but for a source
   * of a tenth of the rows or more (at most ten), whose absence moves the
   * constants past where the linear model holds; up to a bound on the rows
   * known before any fit. */
  int exact = (double)ns * (double)nep <= exact_work;
  size_t *rows_of = calloc(ns + 1, sizeof *rows_of);
  if (!rows_of) {
    refit_free(&rf);
    return xs__fail(err, XS_NOMEM, "out of memory");
  }
  for (size_t i = 0; i < rf.n; i++)
    rows_of[rf.source[i]] += rf.group[i] >= 0;
  if (!exact && nep > XS_EP_BY_SOURCE_MAX_ROWS)
    st = xs__fail(err, XS_INVALID,
                  "--by-source: %zu rows of %zu sources, more than %d: each source's "
                  "refit starts from a fit to all rows, about 7 ms a row here; split the "
                  "file or leave out --by-source", nep, ns, XS_EP_BY_SOURCE_MAX_ROWS);
  double all[XS_EP_CONSTANTS];
  if (!st && !exact && !(st = fit(&j, set, &rf, NONE, NULL, 0, all, err)))
    st = linearise(&j, set, &rf, all, err);
  double *vk = malloc((ns + 1) * XS_EP_CONSTANTS * sizeof *vk);
  if (!st && !vk)
    st = xs__fail(err, XS_NOMEM, "out of memory");
  for (uint32_t k = 0; k < ns && !st; k++) {
    if (exact || rows_of[k] * 10 >= nep) {
      const double *lin = rf.lin_v0;
      rf.lin_v0 = NULL; /* the exact objective */
      st = fit(&j, set, &rf, k, NULL, 0, vk + k * XS_EP_CONSTANTS, err);
      rf.lin_v0 = lin;
    } else {
      st = fit(&j, set, &rf, k, all, 1, vk + k * XS_EP_CONSTANTS, err);
    }
  }
  free(rows_of);
  /* each source's rows predicted with the constants fitted without it */
  for (size_t i = 0; i < set->nrows && !st; i++) {
    xs_validate_row *r = &set->rows[i];
    if (r->kind != 2)
      continue;
    xs__ep_params par;
    double t;
    if ((st = job_apply(&j, vk + rf.source[i] * XS_EP_CONSTANTS, &par, err)) ||
        (st = row_time(&j, r, &par, &t, err)))
      break;
    r->ep.loso = in_metric(&r->ep, t);
    r->ep.loso_error = r->ep.loso / r->ep.measured - 1;
  }
  if (!st && values)
    memcpy(values, vk, ns * XS_EP_CONSTANTS * sizeof *vk);
  free(vk);
  refit_free(&rf);
  job_free(&j);
  return st;
}

xs_status xs_validate_ep_by_source(xs_validate_set *set, double *values,
                                   xs_error *err) {
  return xs__validate_ep_by_source_within(set, values, XS_EP_EXACT_WORK, err);
}

double xs_validate_refit_median(const xs_validate_set *set, const char *source,
                                double *shipped, size_t *n) {
  double *a = malloc((set->nrows + 1) * sizeof *a), *b = malloc((set->nrows + 1) * sizeof *b);
  size_t m = 0;
  for (size_t i = 0; a && b && i < set->nrows; i++) {
    const xs_validate_row *r = &set->rows[i];
    if (r->refit_us > 0 && (!source || !strcmp(r->source, source))) {
      a[m] = fabs(r->refit_us / r->measured_us - 1);
      b[m++] = fabs(r->error);
    }
  }
  double med = a && b ? xs__median_of(a, m) : NAN;
  if (shipped)
    *shipped = a && b ? xs__median_of(b, m) : NAN;
  if (n)
    *n = m;
  free(a);
  free(b);
  return med;
}

double xs_validate_ep_band_bias(const xs_validate_set *set, const char *arm,
                                int i, const char **label, size_t *n) {
  static const double band[XS_VALIDATE_EP_BANDS][2] = {
      {0, 128}, {129, 1024}, {1025, INFINITY}};
  static const char *const names[XS_VALIDATE_EP_BANDS] = {"<=128", "129-1024",
                                                          ">1024"};
  i = i < 0 ? 0 : i >= XS_VALIDATE_EP_BANDS ? XS_VALIDATE_EP_BANDS - 1 : i;
  if (label)
    *label = names[i];
  double *v = malloc((set->nrows + 1) * sizeof *v);
  size_t k = 0;
  for (size_t r = 0; v && r < set->nrows; r++) {
    const xs_validate_row *row = &set->rows[r];
    if (row->kind == 2 && (!arm || !strcmp(row->arm, arm)) &&
        row->tokens >= band[i][0] && row->tokens <= band[i][1])
      v[k++] = row->predicted_us / row->measured_us - 1;
  }
  double m = k >= 3 ? xs__median_of(v, k) : NAN;
  free(v);
  if (n)
    *n = k;
  return m;
}

xs_status xs_validate_megamoe_refit(xs_validate_set *moe, const xs_validate_set *ep,
                                    const char *leave_out, xs_error *err) {
  if (leave_out && strlen(leave_out) >= sizeof moe->refit_without)
    return xs__fail(err, XS_INVALID, "the sources to leave out, \"%.40s...\", are %zu bytes; at most %zu",
                    leave_out, strlen(leave_out), sizeof moe->refit_without - 1);
  double v[XS_EP_CONSTANTS];
  ep_job j = {"<set>", {{{0}, {0}, NULL, 0}}, 0};
  xs_status st = xs_validate_ep_fit(ep, leave_out, v, err);
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
    int which;
    if ((st = job_profile(&j, r->gpu, "none", &prof, &which, err)) ||
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

xs_status xs_validate_ep_group(const xs_validate_set *set, int field,
                               xs_validate_ep_groups *g, xs_error *err) {
  if (!g)
    return xs__fail(err, XS_INVALID, "xs_validate_ep_group: out is NULL");
  memset(g, 0, sizeof *g);
  if (!set || field < 0 || field > 3)
    return xs__fail(err, XS_INVALID, "xs_validate_ep_group: %s",
                    set ? "field is 0 to 3" : "the set is NULL");
  return xs__validate_group_by(set, ep_field, field, g, err);
}

double xs_validate_ep_median(const xs_validate_set *set, const xs_validate_ep_groups *g,
                             size_t k_group, int model, size_t *count, double *max_abs) {
  const size_t *idx = g ? g->idx + g->first[k_group] : NULL;
  size_t n = g ? g->first[k_group + 1] - g->first[k_group] : set ? set->nrows : 0;
  double *v = malloc((n + 1) * sizeof *v), m = 0;
  size_t k = 0;
  for (size_t i = 0; v && i < n; i++) {
    const xs_validate_row *r = &set->rows[idx ? idx[i] : i];
    double e = model < 0 ? r->ep.loso_error : r->ep.model[model] / r->ep.measured - 1;
    if (isnan(e))
      continue;
    v[k++] = fabs(e);
    m = fmax(m, fabs(e));
  }
  double med = v && k ? xs__median_of(v, k) : NAN;
  free(v);
  if (count)
    *count = k;
  if (max_abs)
    *max_abs = k ? m : NAN;
  return med;
}
