/*
 * sweep.c: the grids of `xstage sweep megamoe` and `xstage sweep
 * flashattn` (docs/plan-megamoe.md "Sweeps", docs/plan-flashattn.md) and
 * the JSON documents of their --json output, shared by the command and
 * the bindings.
 */
#include "formats/jsonutil.h"
#include "api/api.h"

#include <jansson.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* a MegaMoE grid: at most MOE_LIST values per list and MOE_CONFIGS configs
 * in all, whose plans build at most MOE_TILES GEMM tiles */
#define MOE_LIST 4096
#define MOE_CONFIGS 20000
#define MOE_TILES 1e8
/* an attention grid's plans: about 1.2 ms per rank here */
#define FA_RANKS 32768.0

/* Point the grid's messages at key, and key[index] when index >= 0, of
 * its root object, for xs__jfail: "grid.json:LINE:COL: key[index]: ..." */
static xs__jdoc *grid_at(xs__jdoc *g, const char *key, long index) {
  g->path.depth = 0;
  xs__jpath_key(&g->path, key);
  if (index >= 0)
    xs__jpath_index(&g->path, (size_t)index);
  return g;
}

/* Parse a grid's text: NULL with *st XS_OK for no text, else the root
 * object, or NULL with *st set after saying what was wrong. */
static json_t *grid_root(xs__jdoc *g, const char *what, xs_status *st) {
  json_t *root = NULL;
  *st = XS_OK;
  if (!g->text || (*st = xs__jparse(g, &root)))
    return NULL;
  if (!json_is_object(root)) {
    *st = xs__fail(g->err, XS_INVALID, "%s: a grid is an object of %s, not %s", g->filename,
                   what, json_is_array(root) ? "an array" : "a single value");
    json_decref(root);
    return NULL;
  }
  return root;
}

xs_status xs_moe_sweep_grid(const char *text, size_t length, const char *filename,
                            xs_moe_config **configs, size_t *n, xs_error *err) {
  const char *path = filename ? filename : "grid";
  xs__jdoc g = {path, text, length, {0}, err};
  *configs = NULL;
  *n = 0;
  xs_status st;
  json_t *root = grid_root(&g, "presets, tokens and ep", &st);
  if (st)
    return st;
  const char **pre = malloc(MOE_LIST * sizeof *pre);
  double *tok = malloc(MOE_LIST * sizeof *tok), *eps = malloc(MOE_LIST * sizeof *eps);
  size_t np = 0, nt = 0, ne = 0;
  if (!pre || !tok || !eps) {
    st = xs__fail(err, XS_NOMEM, "out of memory");
    goto done;
  }
  if (root) {
    const char *key;
    json_t *v;
    json_object_foreach(root, key, v) {
      if (!strcmp(key, "profile")) { /* xs_sweep_grid_profile's */
        if (!json_is_string(v)) {
          st = xs__jfail(grid_at(&g, key, -1), "expected a profile's name");
          goto done;
        }
        continue;
      }
      if (strcmp(key, "presets") && strcmp(key, "tokens") && strcmp(key, "ep")) {
        st = xs__jfail(grid_at(&g, key, -1), "unknown key \"%s\" (presets, tokens, ep, "
                       "profile)", key);
        goto done;
      }
      if (!json_is_array(v) || json_array_size(v) == 0 ||
          json_array_size(v) > MOE_LIST) {
        st = xs__jfail(grid_at(&g, key, -1), "expected an array of 1 to %d values", MOE_LIST);
        goto done;
      }
    }
  }
  json_t *a = root ? json_object_get(root, "presets") : NULL;
  if (a) {
    size_t i;
    json_t *v;
    json_array_foreach(a, i, v) {
      xs_moe_config c;
      if (!json_is_string(v) || xs_moe_preset(json_string_value(v), &c)) {
        st = xs__jfail(grid_at(&g, "presets", (long)i), "not a preset name");
        goto done;
      }
      pre[np++] = json_string_value(v);
    }
  } else {
    for (size_t i = 0; i < xs_moe_preset_count(); i++)
      pre[np++] = xs_moe_preset_name(i);
  }
  static const char *const nkeys[2] = {"tokens", "ep"};
  for (int k = 0; k < 2; k++) {
    a = root ? json_object_get(root, nkeys[k]) : NULL;
    double *dst = k ? eps : tok;
    size_t *cnt = k ? &ne : &nt;
    if (a) {
      size_t i;
      json_t *v;
      json_array_foreach(a, i, v) {
        double x = json_number_value(v);
        if (!json_is_number(v) || !(x >= 1) || x != floor(x)) {
          st = xs__jfail(grid_at(&g, nkeys[k], (long)i), "expected a whole number >= 1");
          goto done;
        }
        dst[(*cnt)++] = x;
      }
    } else if (k) {
      eps[ne++] = 8;
    } else {
      for (double t = 16; t <= 32768; t *= 2)
        tok[nt++] = t;
    }
  }
  size_t total = np * nt * ne;
  double tiles = 0;
  for (size_t i = 0; i < np; i++)
    for (size_t e = 0; e < ne; e++)
      for (size_t t = 0; t < nt; t++) {
        xs_moe_config c;
        xs_moe_preset(pre[i], &c);
        c.tokens = tok[t];
        c.ep = eps[e];
        tiles += xs_moe_tiles(&c);
      }
  if (tiles > MOE_TILES) {
    st = xs__fail(err, XS_INVALID, "%s: the grid's plans build %.3g GEMM tiles, more "
                  "than the limit of %g (about 40 s of planning)", path, tiles, MOE_TILES);
    goto done;
  }
  if (total > MOE_CONFIGS) {
    st = xs__fail(err, XS_INVALID, "%s: %zu presets x %zu token counts x %zu EP "
                  "values is %zu configs, more than the limit of %d",
                  path, np, nt, ne, total, MOE_CONFIGS);
    goto done;
  }
  xs_moe_config *c = calloc(total ? total : 1, sizeof *c);
  if (!c) {
    st = xs__fail(err, XS_NOMEM, "out of memory");
    goto done;
  }
  size_t k = 0;
  for (size_t i = 0; i < np; i++)
    for (size_t e = 0; e < ne; e++)
      for (size_t t = 0; t < nt; t++, k++) {
        xs_moe_preset(pre[i], &c[k]);
        c[k].tokens = tok[t];
        c[k].ep = eps[e];
      }
  *configs = c;
  *n = total;
done:
  free(pre);
  free(tok);
  free(eps);
  json_decref(root);
  return st;
}

xs_status xs_sweep_grid_profile(const char *text, size_t length, const char *filename,
                                char *buf, size_t size, xs_error *err) {
  xs__jdoc g = {filename ? filename : "grid", text, length, {0}, err};
  if (size)
    buf[0] = '\0';
  xs_status st;
  json_t *root = grid_root(&g, "presets and the rest", &st);
  if (st || !root)
    return st;
  json_t *v = json_object_get(root, "profile");
  if (v && (!json_is_string(v) || strlen(json_string_value(v)) >= size))
    st = xs__jfail(grid_at(&g, "profile", -1), "expected a profile's name");
  else if (v)
    snprintf(buf, size, "%s", json_string_value(v));
  json_decref(root);
  return st;
}

/* a grid list of numbers (its size checked already) */
static xs_status grid_numbers(xs__jdoc *g, const char *key, const char *what,
                              json_t *a, double *out, size_t *n) {
  size_t i;
  json_t *v;
  json_array_foreach(a, i, v) {
    if (!json_is_number(v))
      return xs__jfail(grid_at(g, key, (long)i), "expected a number of %s", what);
    out[(*n)++] = json_number_value(v);
  }
  return XS_OK;
}

xs_status xs_fa_sweep_grid(const char *text, size_t length, const char *filename,
                           xs_fa_config **configs, size_t *n, xs_error *err) {
  const char *path = filename ? filename : "grid";
  xs__jdoc g = {path, text, length, {0}, err};
  *configs = NULL;
  *n = 0;
  const char *pre[8], *ker[3];
  double seqs[32], cps[16];
  int cz[2];
  size_t np = 0, ns = 0, nc = 0, nz = 0, nk = 0;
  xs_status st;
  json_t *root = grid_root(&g, "presets, seq, cp, causal and kernel", &st);
  if (st)
    return st;
  json_t *a, *v;
  size_t i;
  if (root) {
    const char *k;
    json_object_foreach(root, k, v) {
      if (!strcmp(k, "profile")) { /* xs_sweep_grid_profile's */
        if (!json_is_string(v)) {
          st = xs__jfail(grid_at(&g, k, -1), "expected a profile's name");
          goto done;
        }
        continue;
      }
      size_t lim = !strcmp(k, "presets") ? 8 : !strcmp(k, "seq") ? 32 : !strcmp(k, "cp") ? 16
                 : !strcmp(k, "causal") ? 2 : !strcmp(k, "kernel") ? 3 : 0;
      if (!lim || !json_is_array(v) || json_array_size(v) < 1 || json_array_size(v) > lim) {
        st = xs__jfail(grid_at(&g, k, -1), "expected presets, seq, cp, causal or kernel, "
                       "each a short non-empty array (and a profile's name)");
        goto done;
      }
    }
  }
  if (root && (a = json_object_get(root, "presets"))) {
    json_array_foreach(a, i, v) {
      xs_fa_config c;
      if (!json_is_string(v) || xs_fa_preset(json_string_value(v), &c)) {
        st = xs__jfail(grid_at(&g, "presets", (long)i), "not a preset name");
        goto done;
      }
      pre[np++] = json_string_value(v);
    }
  } else {
    for (i = 0; i < xs_fa_preset_count(); i++)
      pre[np++] = xs_fa_preset_name(i);
  }
  if (root && (a = json_object_get(root, "seq"))) {
    if ((st = grid_numbers(&g, "seq", "tokens", a, seqs, &ns)))
      goto done;
  } else {
    for (double s = 4096; s <= 65536; s *= 2)
      seqs[ns++] = s;
  }
  if (root && (a = json_object_get(root, "cp"))) {
    if ((st = grid_numbers(&g, "cp", "ranks", a, cps, &nc)))
      goto done;
  } else {
    cps[nc++] = 2, cps[nc++] = 4, cps[nc++] = 8;
  }
  if (root && (a = json_object_get(root, "causal"))) {
    json_array_foreach(a, i, v) {
      if (!json_is_boolean(v)) {
        st = xs__jfail(grid_at(&g, "causal", (long)i), "expected true or false");
        goto done;
      }
      cz[nz++] = json_is_true(v);
    }
  } else {
    cz[nz++] = 1, cz[nz++] = 0;
  }
  if (root && (a = json_object_get(root, "kernel"))) {
    json_array_foreach(a, i, v) {
      const char *kn = json_is_string(v) ? json_string_value(v) : "";
      if (strcmp(kn, "fa2") && strcmp(kn, "fa3") && strcmp(kn, "fa4")) {
        st = xs__jfail(grid_at(&g, "kernel", (long)i), "expected fa2, fa3 or fa4");
        goto done;
      }
      ker[nk++] = kn;
    }
  } else {
    ker[nk++] = NULL; /* the preset's */
  }
  size_t total = np * ns * nc * nz * nk;
  double ranks = 0;
  for (size_t c = 0; c < nc; c++)
    ranks += cps[c] > 0 ? cps[c] : 0;
  ranks *= (double)(np * ns * nz * nk);
  if (ranks > FA_RANKS) {
    st = xs__fail(err, XS_INVALID, "%s: the grid's configs add up to %.3g ranks, more "
                  "than the limit of %g (about 40 s of planning)", path, ranks, FA_RANKS);
    goto done;
  }
  xs_fa_config *cf = calloc(total ? total : 1, sizeof *cf);
  if (!cf) {
    st = xs__fail(err, XS_NOMEM, "out of memory");
    goto done;
  }
  size_t k = 0;
  for (size_t q = 0; q < nk; q++)
    for (size_t p = 0; p < np; p++)
      for (size_t z = 0; z < nz; z++)
        for (size_t c = 0; c < nc; c++)
          for (size_t s = 0; s < ns; s++, k++) {
            xs_fa_preset(pre[p], &cf[k]);
            cf[k].seq = seqs[s];
            cf[k].cp = cps[c];
            cf[k].causal = cz[z];
            if (ker[q])
              snprintf(cf[k].kernel, sizeof cf[k].kernel, "%s", ker[q]);
          }
  *configs = cf;
  *n = total;
done:
  json_decref(root);
  return st;
}

/* Plan every config when the caller brought no results: all are checked
 * first, so that a bad one stops the sweep before any planning. */
static xs_status plan_all(const void *configs, size_t config_size, size_t n,
                          void *results, size_t result_size,
                          xs_status (*check)(const void *, xs_error *),
                          xs_status (*plan)(const void *, const xs_profile *, void *,
                                            xs_error *),
                          void (*describe)(const void *, char *, size_t),
                          const xs_profile *profile, xs_error *err) {
  const char *c = configs;
  char *r = results;
  xs_error e;
  xs_status st = XS_OK;
  size_t i;
  for (i = 0; i < n && !st; i++)
    st = check(c + i * config_size, &e);
  for (size_t k = 0; k < n && !st; k++, i = k)
    st = plan(c + k * config_size, profile, r + k * result_size, &e);
  if (st) {
    char what[160];
    describe(c + (i - 1) * config_size, what, sizeof what);
    return xs__fail(err, st, "%s: %s", what, e.message);
  }
  return XS_OK;
}

/* plan_all into results of its own (*own, free() it) */
static xs_status plan_own(const void *configs, size_t config_size, size_t n,
                          size_t result_size,
                          xs_status (*check)(const void *, xs_error *),
                          xs_status (*plan)(const void *, const xs_profile *, void *,
                                            xs_error *),
                          void (*describe)(const void *, char *, size_t),
                          const xs_profile *profile, void **own, xs_error *err) {
  if (!(*own = calloc(n ? n : 1, result_size)))
    return xs__fail(err, XS_NOMEM, "out of memory");
  xs_status st = plan_all(configs, config_size, n, *own, result_size, check, plan,
                          describe, profile, err);
  if (st) {
    free(*own);
    *own = NULL;
  }
  return st;
}

static xs_status moe_check(const void *c, xs_error *err) {
  return xs_moe_config_check(c, err);
}
static xs_status moe_plan(const void *c, const xs_profile *p, void *r, xs_error *err) {
  return xs_moe_plan(c, p, r, err);
}
void xs_moe_config_describe(const xs_moe_config *c, char *buf, size_t size) {
  void *loc = xs__numeric_c();
  snprintf(buf, size, "%s, %g tokens, EP %g", c->name, c->tokens, c->ep);
  xs__numeric_restore(loc);
}
void xs_fa_config_describe(const xs_fa_config *c, char *buf, size_t size) {
  void *loc = xs__numeric_c();
  snprintf(buf, size, "%s, seq %g, CP %g", c->name, c->seq, c->cp);
  xs__numeric_restore(loc);
}
static void moe_describe(const void *p, char *buf, size_t size) {
  xs_moe_config_describe(p, buf, size);
}
static void fa_describe(const void *p, char *buf, size_t size) {
  xs_fa_config_describe(p, buf, size);
}

/* The schedules' indices are those of xs_moe_result and xs_fa_result:
 * [schedule][model], the choice and ideal as documented there. */
void xs_moe_sweep_summary(const xs_moe_result *results, size_t n, xs_sweep_summary *out) {
  double lg = 0, lb = 0, li = 0, lo = 0, mx = 0, mo = 0, dn = (double)n;
  for (size_t i = 0; i < n; i++) {
    const xs_moe_result *r = &results[i];
    const double *il = r->time_s[r->best_interleaved], *pl = r->time_s[r->best_plain];
    double s = pl[XS_MODEL_BURSTGAP] / il[XS_MODEL_BURSTGAP];
    double o = r->time_s[XS_MOE_L1_THEN_L2][0] / r->time_s[XS_MOE_INTERLEAVED][0];
    lg += log(s);
    lb += log(pl[XS_MODEL_BLOCKING] / il[XS_MODEL_BLOCKING]);
    li += log(il[XS_MODEL_BURSTGAP] / il[XS_MODEL_IDEAL]);
    lo += log(o);
    mx = fmax(mx, s);
    mo = fmax(mo, o);
  }
  *out = (xs_sweep_summary){exp(lg / dn), mx, exp(lb / dn), exp(li / dn), NAN,
                            exp(lo / dn), mo};
}

void xs_fa_sweep_summary(const xs_fa_result *results, size_t n, xs_sweep_summary *out) {
  double lg = 0, ld = 0, lb = 0, li = 0, mx = 0, dn = (double)n;
  for (size_t i = 0; i < n; i++) {
    const xs_fa_result *r = &results[i];
    double s, d, b;
    xs__api_fa_speedups(r, &s, &d, &b);
    lg += log(s);
    ld += log(d);
    lb += log(b);
    li += log(r->time_s[XS_FA_PATH_PIGGYBACK][XS_MODEL_BURSTGAP] /
              r->time_s[XS_FA_PATH_PIGGYBACK][XS_MODEL_IDEAL]);
    mx = fmax(mx, s);
  }
  *out = (xs_sweep_summary){exp(lg / dn), mx, exp(lb / dn), exp(li / dn), exp(ld / dn),
                            NAN, NAN};
}
static xs_status fa_check(const void *c, xs_error *err) {
  return xs_fa_config_check(c, err);
}
static xs_status fa_plan(const void *c, const xs_profile *p, void *r, xs_error *err) {
  return xs_fa_plan(c, p, r, err);
}

xs_status xs_moe_sweep_json(const xs_profile *prof, const xs_moe_config *configs,
                            size_t n, const xs_moe_result *results, char **out,
                            xs_error *err) {
  *out = NULL;
  xs_moe_result *own = NULL;
  if (!results) {
    xs_status st = plan_own(configs, sizeof *configs, n, sizeof *own, moe_check, moe_plan,
                            moe_describe, prof, (void **)&own, err);
    if (st)
      return st;
    results = own;
  }
  xs_sweep_summary sum;
  xs_moe_sweep_summary(results, n, &sum);
  json_t *root = json_object(), *cs = json_array();
  json_object_set_new(root, "profile", json_string(xs_profile_name(prof)));
  for (size_t i = 0; i < n; i++) {
    const xs_moe_result *r = &results[i];
    const xs_moe_config *c = &configs[i];
    const double *il = r->time_s[r->best_interleaved], *pl = r->time_s[r->best_plain];
    double speedup = pl[XS_MODEL_BURSTGAP] / il[XS_MODEL_BURSTGAP];
    /* the speedup's 80% interval, from the residuals of measured pairs */
    xs_interval ri;
    xs_error e2;
    json_t *sp_iv = xs_ratio_interval("megamoe", c->tokens, &ri, &e2)
                        ? json_null()
                        : json_pack("[f,f]", speedup * ri.low, speedup * ri.high);
    json_array_append_new(cs, json_pack(
        "{s:s,s:f,s:f,s:s,s:s,s:f,s:o,s:f,s:f,s:f,s:o,s:s}", "preset", c->name,
        "tokens", c->tokens, "ep", c->ep,
        "best_interleaved", xs_moe_schedule_name(r->best_interleaved),
        "best_plain", xs_moe_schedule_name(r->best_plain),
        "speedup", speedup, "speedup_interval", sp_iv,
        "blocking_speedup", pl[XS_MODEL_BLOCKING] / il[XS_MODEL_BLOCKING],
        "order_gain", r->time_s[XS_MOE_L1_THEN_L2][0] / r->time_s[XS_MOE_INTERLEAVED][0],
        "ideal_ratio", il[XS_MODEL_BURSTGAP] / il[XS_MODEL_IDEAL],
        "schedules", xs__api_moe_schedules(c, prof, r), "best_fused",
        xs_moe_schedule_name(r->best_fused)));
  }
  json_object_set_new(root, "configs", cs);
  json_object_set_new(root, "summary", json_pack("{s:I,s:f,s:f,s:f,s:f,s:f,s:f}",
      "configs", (json_int_t)n, "geomean_speedup", sum.geomean_speedup, "max_speedup",
      sum.max_speedup, "geomean_blocking_speedup", sum.geomean_blocking_speedup,
      "geomean_ideal_ratio", sum.geomean_ideal_ratio, "geomean_order_gain",
      sum.geomean_order_gain, "max_order_gain", sum.max_order_gain));
  free(own);
  return xs__api_dump(root, 12, out, err);
}

xs_status xs_fa_sweep_json(const xs_profile *prof, const xs_fa_config *configs,
                           size_t n, const xs_fa_result *results, char **out,
                           xs_error *err) {
  *out = NULL;
  xs_fa_result *own = NULL;
  if (!results) {
    xs_status st = plan_own(configs, sizeof *configs, n, sizeof *own, fa_check, fa_plan,
                            fa_describe, prof, (void **)&own, err);
    if (st)
      return st;
    results = own;
  }
  xs_sweep_summary sum;
  xs_fa_sweep_summary(results, n, &sum);
  json_t *root = json_object(), *cs = json_array();
  json_object_set_new(root, "profile", json_string(xs_profile_name(prof)));
  for (size_t i = 0; i < n; i++) {
    const xs_fa_result *r = &results[i];
    xs_fa_config c[1];
    xs_fa_call best;
    xs_error e;
    /* the kernel the GPU runs, and what to call for the fastest way */
    int named = !xs_fa_kernel_resolve(&configs[i], prof, c, &e) &&
                !xs_fa_call_of(c, prof, r->best, -1, &best, &e);
    double sp, sd, sb;
    xs__api_fa_speedups(r, &sp, &sd, &sb);
    const double(*t)[XS_MODEL_COUNT] = r->time_s;
    json_t *o = json_pack(
        "{s:s,s:f,s:f,s:b,s:s,s:f,s:f,s:f,s:f,s:f,s:f,s:f,s:f,s:f,s:s,s:f}", "preset",
        c->name, "seq", c->seq, "cp", c->cp, "causal", c->causal, "kernel", c->kernel,
        "local_s", t[XS_FA_LOCAL][0], "sequential_s", t[XS_FA_PATH_SEQUENTIAL][0],
        "stream_s", t[XS_FA_PATH_STREAM][0], "sms_s", t[XS_FA_PATH_SMS][0],
        "piggyback_s", t[XS_FA_PATH_PIGGYBACK][0], "ideal_s",
        t[XS_FA_PATH_PIGGYBACK][XS_MODEL_IDEAL], "speedup", sp, "speedup_vs_dedicated",
        sd, "blocking_speedup", sb, "best", xs_fa_path_name(r->best), "free_s",
        r->breakdown[XS_FA_PATH_PIGGYBACK].free_s);
    json_object_set_new(o, "best_kernel", named ? xs__api_fa_call(&best) : json_null());
    json_array_append_new(cs, o);
  }
  json_object_set_new(root, "configs", cs);
  json_object_set_new(root, "summary", json_pack("{s:I,s:f,s:f,s:f,s:f,s:f}", "configs",
      (json_int_t)n, "geomean_speedup", sum.geomean_speedup, "max_speedup", sum.max_speedup,
      "geomean_speedup_vs_dedicated", sum.geomean_speedup_vs_dedicated,
      "geomean_blocking_speedup", sum.geomean_blocking_speedup, "geomean_ideal_ratio",
      sum.geomean_ideal_ratio));
  free(own);
  return xs__api_dump(root, 12, out, err);
}
