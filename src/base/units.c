/*
 * units.c: numbers with unit suffixes for command-line flags (64KiB, 2us,
 * 300MB/s, 1.6Gbit/s, 4k tokens) and the human formatting of times, sizes
 * and rates.
 * JSON never goes through here: it stays in SI units.
 */
#include "internal.h"

#include <ctype.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

typedef struct {
  const char *name;
  double scale;
} unit;

/* Split "12.5MiB" into 12.5 and "MiB"; returns 0 on success. Decimal
 * numbers only (not "inf", "nan" or hex, which strtod would take), with
 * a point whatever the locale. */
static int split_number(const char *text, double *value, const char **rest) {
  const char *end;
  while (isspace((unsigned char)*text))
    text++;
  if (xs__decimal(text, value, &end))
    return -1;
  while (isspace((unsigned char)*end))
    end++;
  *rest = end;
  return 0;
}

static int match_unit(const unit *units, const char *suffix, double *scale,
                      int case_sensitive) {
  size_t n = strlen(suffix);
  while (n > 0 && isspace((unsigned char)suffix[n - 1]))
    n--;
  for (const unit *u = units; u->name; u++) {
    if (strlen(u->name) != n)
      continue;
    if (case_sensitive ? strncmp(u->name, suffix, n) == 0
                       : strncasecmp(u->name, suffix, n) == 0) {
      *scale = u->scale;
      return 0;
    }
  }
  return -1;
}

/* "12.5MiB" against a table of units, into base units: a finite number
 * >= 0, or a message saying what is expected (a "what", e.g. "size") */
static xs_status parse_scaled(const char *text, const unit *units, int case_sensitive,
                              const char *what, const char *expected, double *value,
                              xs_error *err) {
  double v, scale;
  const char *rest;
  if (split_number(text, &v, &rest) != 0 ||
      match_unit(units, rest, &scale, case_sensitive) != 0 || !isfinite(v * scale))
    return xs__fail(err, XS_INVALID, "bad %s \"%s\": expected %s", what, text, expected);
  if (v < 0)
    return xs__fail(err, XS_INVALID, "bad %s \"%s\": must not be negative", what, text);
  *value = v * scale;
  return XS_OK;
}

static const unit size_units[] = {
    {"", 1},         {"B", 1},         {"k", 1e3},         {"kB", 1e3},
    {"M", 1e6},      {"MB", 1e6},      {"G", 1e9},         {"GB", 1e9},
    {"T", 1e12},     {"TB", 1e12},     {"Ki", 1024.0},     {"KiB", 1024.0},
    {"Mi", 1048576.0}, {"MiB", 1048576.0}, {"Gi", 1073741824.0},
    {"GiB", 1073741824.0}, {"Ti", 1099511627776.0},
    {"TiB", 1099511627776.0}, {NULL, 0}};

/* counts: the size prefixes without the B, decimal and binary */
static const unit count_units[] = {
    {"", 1},          {"k", 1e3},       {"M", 1e6},          {"G", 1e9},
    {"T", 1e12},      {"Ki", 1024.0},   {"Mi", 1048576.0},   {"Gi", 1073741824.0},
    {"Ti", 1099511627776.0}, {NULL, 0}};

static const unit time_units[] = {
    {"", 1},     {"s", 1},     {"ms", 1e-3}, {"us", 1e-6},
    {"\xc2\xb5s", 1e-6}, {"ns", 1e-9}, {"ps", 1e-12}, {NULL, 0}};

xs_status xs_parse_size(const char *text, double *bytes, xs_error *err) {
  return parse_scaled(text, size_units, 0, "size",
                      "a number of bytes with an optional unit B, kB, MB, GB, KiB, "
                      "MiB, GiB (e.g. 64KiB)",
                      bytes, err);
}

xs_status xs_parse_count(const char *text, double *count, xs_error *err) {
  double n = 0;
  xs_status st = parse_scaled(text, count_units, 0, "count",
                              "a whole number with an optional suffix k, M, G (10^3, "
                              "10^6, 10^9) or Ki, Mi, Gi (2^10, 2^20, 2^30), e.g. 4096, "
                              "4Ki or 32k",
                              &n, err);
  if (st)
    return st;
  if (n > 9007199254740992.0) /* 2^53: every whole number below is exact */
    return xs__fail(err, XS_INVALID, "bad count \"%s\": more than 2^53", text);
  if (n != floor(n))
    return xs__fail(err, XS_INVALID, "bad count \"%s\": %.17g is not a whole number",
                    text, n);
  *count = n;
  return XS_OK;
}

xs_status xs_parse_time(const char *text, double *seconds, xs_error *err) {
  return parse_scaled(text, time_units, 1, "time",
                      "a number of seconds with an optional unit s, ms, us, ns (e.g. "
                      "2us)",
                      seconds, err);
}

/* Rates: [prefix](B|bit|b)(/s|ps); B is bytes, bit and b are bits. */
xs_status xs_parse_rate(const char *text, double *bytes_per_s,
                        xs_error *err) {
  double v;
  const char *rest;
  if (split_number(text, &v, &rest) != 0)
    goto bad;
  char suf[32];
  size_t n = strlen(rest);
  while (n > 0 && isspace((unsigned char)rest[n - 1]))
    n--;
  if (n >= sizeof suf)
    goto bad;
  memcpy(suf, rest, n);
  suf[n] = '\0';
  double scale = 1;
  if (n > 0) {
    /* strip the per-second part */
    if (n >= 2 && strcmp(suf + n - 2, "/s") == 0)
      suf[n -= 2] = '\0';
    else if (n >= 2 && strcmp(suf + n - 2, "ps") == 0)
      suf[n -= 2] = '\0';
    else
      goto bad;
    double per = 1;
    if (n >= 3 && strcmp(suf + n - 3, "bit") == 0) {
      per = 0.125;
      suf[n -= 3] = '\0';
    } else if (n >= 1 && suf[n - 1] == 'b') {
      per = 0.125;
      suf[n -= 1] = '\0';
    } else if (n >= 1 && suf[n - 1] == 'B') {
      suf[n -= 1] = '\0';
    } else {
      goto bad;
    }
    if (n > 0) {
      char withB[36];
      snprintf(withB, sizeof withB, "%sB", suf);
      if (match_unit(size_units, withB, &scale, 0) != 0)
        goto bad;
    }
    scale *= per;
  }
  if (!isfinite(v * scale))
    goto bad;
  if (!(v > 0))
    return xs__fail(err, XS_INVALID, "bad rate \"%s\": must be positive",
                    text);
  *bytes_per_s = v * scale;
  return XS_OK;
bad:
  return xs__fail(err, XS_INVALID,
                  "bad rate \"%s\": expected bytes per second with an optional "
                  "unit such as B/s, MB/s, GB/s, GiB/s, Gbit/s (e.g. 300MB/s)",
                  text);
}

static char *scaled_text(double v, const unit *units, size_t nunits,
                           char *buf, size_t size) {
  /* units ordered from largest to smallest scale */
  if (!isfinite(v)) {
    snprintf(buf, size, "%s", v > 0 ? "unbounded" : "n/a");
    return buf;
  }
  /* zero, and anything that rounds to 0.00 of the smallest unit: a
   * residue of subtractions (1e-17 s), printed as the 0 it stands for
   * rather than "1.22e-08 ns" */
  if (fabs(v) < 0.005 * units[nunits - 1].scale) {
    snprintf(buf, size, "0 %s", units[nunits - 1].name);
    return buf;
  }
  size_t k = nunits - 1;
  for (size_t i = 0; i < nunits; i++) {
    if (fabs(v) >= units[i].scale * 0.9995) {
      k = i;
      break;
    }
  }
  double s = v / units[k].scale;
  /* beyond the largest unit: a mantissa and an exponent, still with the
   * unit, rather than 30 digits */
  if (fabs(s) >= 999999.5)
    snprintf(buf, size, "%.3g %s", s, units[k].name);
  else if (fabs(s) >= 99.95)
    snprintf(buf, size, "%.0f %s", s, units[k].name);
  else if (fabs(s) >= 9.995)
    snprintf(buf, size, "%.1f %s", s, units[k].name);
  else
    snprintf(buf, size, "%.2f %s", s, units[k].name);
  return buf;
}

/* numbers with a point whatever the host's locale */
static char *format_scaled(double v, const unit *units, size_t nunits,
                           char *buf, size_t size) {
  void *loc = xs__numeric_c();
  scaled_text(v, units, nunits, buf, size);
  xs__numeric_restore(loc);
  return buf;
}

char *xs_format_time(double seconds, char *buf, size_t size) {
  static const unit u[] = {{"s", 1}, {"ms", 1e-3}, {"us", 1e-6}, {"ns", 1e-9}};
  return format_scaled(seconds, u, 4, buf, size);
}

char *xs_format_size(double bytes, char *buf, size_t size) {
  static const unit u[] = {{"GiB", 1073741824.0},
                           {"MiB", 1048576.0},
                           {"KiB", 1024.0},
                           {"B", 1}};
  return format_scaled(bytes, u, 4, buf, size);
}

char *xs_format_rate(double bytes_per_s, char *buf, size_t size) {
  static const unit u[] = {
      {"TB/s", 1e12}, {"GB/s", 1e9}, {"MB/s", 1e6}, {"kB/s", 1e3}, {"B/s", 1}};
  return format_scaled(bytes_per_s, u, 5, buf, size);
}

/* ---- token grids and fractions (plan's --tokens-grid, --tolerance) ---- */

/* One count of a grid: the text up to the next ',' or ':' (or the end),
 * through xs_parse_count, from 1 to 1e9; *p moves past it. */
static xs_status grid_count(const char *text, const char **p, double *v, xs_error *err) {
  size_t len = strcspn(*p, ",:");
  char buf[64];
  if (len >= sizeof buf || (memcpy(buf, *p, len), buf[len] = '\0',
                            xs_parse_count(buf, v, err)) || !(*v >= 1 && *v <= 1e9))
    return xs__fail(err, XS_INVALID,
                    "at character %zu of \"%s\": expected a whole number from 1 to 1e9, "
                    "with an optional k, M, G or Ki, Mi, Gi (a list like 64,128, a range "
                    "FIRST:LAST:STEP or FIRST:LAST:xFACTOR)",
                    (size_t)(*p - text) + 1, text);
  *p += len;
  return XS_OK;
}

/* Append t to the grid (ascending, at most max points). */
static xs_status grid_add(double t, size_t max, double **g, size_t *n, size_t *cap,
                          xs_error *err) {
  if (*n && t <= (*g)[*n - 1])
    return xs__fail(err, XS_INVALID, "%g after %g: expected ascending token counts", t,
                    (*g)[*n - 1]);
  if (*n == max)
    return xs__fail(err, XS_INVALID, "more than %zu grid points", max);
  if (*n == *cap) {
    double *ng = realloc(*g, 2 * *cap * sizeof **g);
    if (!ng)
      return xs__fail(err, XS_NOMEM, "out of memory");
    *g = ng;
    *cap *= 2;
  }
  (*g)[(*n)++] = t;
  return XS_OK;
}

xs_status xs_parse_token_grid(const char *text, size_t max, double **out, size_t *n,
                              xs_error *err) {
  size_t cap = 64;
  double *g = malloc(cap * sizeof *g);
  *out = NULL;
  *n = 0;
  if (!g)
    return xs__fail(err, XS_NOMEM, "out of memory");
  const char *p = text;
  xs_status st = XS_OK;
  while (!st) {
    double first, last, step = 1, factor = 0;
    if ((st = grid_count(text, &p, &first, err)))
      break;
    last = first;
    if (*p == ':') {
      p++;
      if ((st = grid_count(text, &p, &last, err)))
        break;
      if (last < first) {
        st = xs__fail(err, XS_INVALID, "range %g:%g runs backwards", first, last);
        break;
      }
    }
    if (*p == ':' && p[1] == 'x') {
      /* FIRST:LAST:xF, a geometric step: FIRST*F^k rounded to whole numbers */
      const char *at = p + 2, *end = at;
      if (xs__decimal(at, &factor, &end) || at[0] == ' ' || !(factor >= 1.0001 && factor <= 1e6) ||
          (*end && *end != ',')) {
        st = xs__fail(err, XS_INVALID, "at character %zu of \"%s\": expected a factor "
                                       "from 1.0001 to 1e6 after x (16:8192:x2)",
                      (size_t)(at - text) + 1, text);
        break;
      }
      p = end;
    } else if (*p == ':') {
      p++;
      if ((st = grid_count(text, &p, &step, err)))
        break;
    }
    if (factor) {
      /* each point from FIRST (no drift); rounding can repeat a point at
       * small factors, and a repeat is one point */
      for (int k = 0; !st; k++) {
        double t = round(first * pow(factor, k));
        if (t > last)
          break;
        if (!*n || t > g[*n - 1] || k == 0)
          st = grid_add(t, max, &g, n, &cap, err);
      }
    } else {
      for (double t = first; t <= last && !st; t += step)
        st = grid_add(t, max, &g, n, &cap, err);
    }
    if (st || !*p)
      break;
    if (*p != ',') {
      st = xs__fail(err, XS_INVALID, "at character %zu of \"%s\": expected ',' or ':'",
                    (size_t)(p - text) + 1, text);
      break;
    }
    p++;
  }
  if (st) {
    free(g);
    *n = 0;
    return st;
  }
  *out = g;
  return XS_OK;
}

xs_status xs_parse_fraction(const char *text, double *out, xs_error *err) {
  const char *end;
  double v;
  int bad = xs__decimal(text, &v, &end);
  if (!bad && *end == '%') {
    v /= 100;
    end++;
  }
  if (bad || *end || !(v >= 0 && v <= 1))
    return xs__fail(err, XS_INVALID, "expected a fraction from 0 to 1 or a percentage "
                                     "(0.01, 1%%), got \"%s\"", text);
  *out = v;
  return XS_OK;
}
