/*
 * samples.c: calibration samples, the CSV that probes write and the fit
 * reads (docs/formats.md "Calibration samples"): parsing with positions in
 * messages, loading, writing, freeing.
 */
#include "internal.h"

#include <ctype.h>
#include <limits.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

void xs_samples_free(xs_samples *s) {
  if (!s)
    return;
  free(s->rows);
  free(s);
}

static const char *const columns[] = {"backend", "bytes", "gap_s", "issue_s",
                                      "deliver_s", "repeat"};

xs_status xs_samples_parse_csv(const char *text, size_t len,
                               const char *filename, xs_samples **out,
                               xs_error *err) {
  const char *fn = filename ? filename : "<input>";
  *out = NULL;
  xs_samples *s = calloc(1, sizeof *s);
  if (!s)
    return xs__fail(err, XS_NOMEM, "out of memory");
  int col[6];
  int have_header = 0, line = 0;
  /* a byte order mark, as spreadsheets write: not part of the header */
  size_t i = len >= 3 && !memcmp(text, "\xEF\xBB\xBF", 3) ? 3 : 0;
  xs_status st = XS_OK;
  char buf[1024];
  while (i < len && !st) {
    size_t j = i;
    while (j < len && text[j] != '\n')
      j++;
    line++;
    size_t n = j - i;
    if (n && text[i + n - 1] == '\r')
      n--;
    const char *nul = memchr(text + i, '\0', n);
    if (nul) {
      st = xs__fail(err, XS_PARSE, "%s:%d:%zu: a NUL byte", fn, line,
                    (size_t)(nul - (text + i)) + 1);
      break;
    }
    if (n >= sizeof buf) {
      st = xs__fail(err, XS_PARSE, "%s:%d: line too long", fn, line);
      break;
    }
    memcpy(buf, text + i, n);
    buf[n] = '\0';
    i = j + 1;
    char *p = buf;
    while (isspace((unsigned char)*p))
      p++;
    if (!*p || *p == '#')
      continue;
    /* split on commas */
    char *field[32];
    int nf = 0;
    for (char *q = p;; q++) {
      if (nf < 32 && (q == p || q[-1] == '\0'))
        field[nf++] = q;
      if (*q == ',')
        *q = '\0';
      else if (!*q)
        break;
    }
    if (!have_header) {
      for (int k = 0; k < 6; k++) {
        col[k] = -1;
        for (int f = 0; f < nf; f++)
          if (strcmp(field[f], columns[k]) == 0)
            col[k] = f;
        if (col[k] < 0 && k != 0 && k != 5) {
          st = xs__fail(err, XS_PARSE,
                        "%s:%d: missing column \"%s\" in the header (expected "
                        "backend,bytes,gap_s,issue_s,deliver_s,repeat)",
                        fn, line, columns[k]);
          break;
        }
      }
      have_header = 1;
      continue;
    }
    double v[6] = {0};
    for (int k = 1; k < 6 && !st; k++) {
      if (col[k] < 0)
        continue;
      if (col[k] >= nf) {
        st = xs__fail(err, XS_PARSE, "%s:%d: missing %s (the row has %d fields)",
                      fn, line, columns[k], nf);
        break;
      }
      const char *end = field[col[k]];
      if (xs__decimal(field[col[k]], &v[k], &end) || *end || !isfinite(v[k]))
        st = xs__fail(err, XS_PARSE, "%s:%d: %s: \"%s\" is not a number", fn,
                      line, columns[k], field[col[k]]);
      else if (v[k] < 0)
        st = xs__fail(err, XS_INVALID, "%s:%d: %s: %g is negative", fn, line,
                      columns[k], v[k]);
    }
    if (st)
      break;
    if (col[0] >= 0 && col[0] < nf && !s->backend[0]) {
      const char *b = field[col[0]];
      if (!xs__utf8_ok(b)) {
        st = xs__fail(err, XS_PARSE, "%s:%d: backend: the name is not UTF-8", fn, line);
        break;
      }
      /* a long name is cut, at a character's start */
      size_t bl = xs__utf8_cut(b, sizeof s->backend - 1);
      memcpy(s->backend, b, bl);
      s->backend[bl] = '\0';
    }
    if (v[5] > UINT_MAX || v[5] != floor(v[5])) {
      st = xs__fail(err, XS_INVALID, "%s:%d: repeat: %g is not a whole number up to %u",
                    fn, line, v[5], UINT_MAX);
      break;
    }
    if (xs__grow(&s->rows, &s->cap, s->n + 1, sizeof *s->rows)) {
      st = xs__fail(err, XS_NOMEM, "out of memory");
      break;
    }
    s->rows[s->n++] = (xs_sample){v[1], v[2], v[3], v[4], (unsigned)v[5]};
  }
  if (!st && !have_header)
    st = xs__fail(err, XS_PARSE, "%s: no header line (expected "
                                 "backend,bytes,gap_s,issue_s,deliver_s,repeat)",
                  fn);
  if (!st && s->n < 4)
    st = xs__fail(err, XS_INVALID, "%s: %zu samples; a fit needs at least 4",
                  fn, s->n);
  if (st) {
    xs_samples_free(s);
    return st;
  }
  *out = s;
  return XS_OK;
}

xs_status xs_samples_load_csv(const char *path, xs_samples **out,
                              xs_error *err) {
  char *text;
  size_t len;
  *out = NULL;
  xs_status st = xs__read_file(path, &text, &len, err);
  if (st)
    return st;
  st = xs_samples_parse_csv(text, len, path, out, err);
  free(text);
  return st;
}

char *xs_samples_to_csv(const xs_samples *s, const char *header) {
  /* a backend the reader would take apart, or take as a comment */
  const char *be = s->backend;
  if (!xs__utf8_ok(be) || strpbrk(be, ",\r\n") || be[0] == '#' || isspace((unsigned char)be[0]))
    return NULL;
  xs__sbuf b = {0};
  if (header) {
    const char *h = header;
    while (*h) {
      const char *e = strchr(h, '\n');
      size_t l = e ? (size_t)(e - h) : strlen(h);
      xs__sb_printf(&b, "# %.*s\n", (int)l, h);
      h += l + (e ? 1 : 0);
    }
  }
  xs__sb_printf(&b, "backend,bytes,gap_s,issue_s,deliver_s,repeat\n");
  for (size_t i = 0; i < s->n; i++) {
    const xs_sample *r = &s->rows[i];
    /* every number exactly: the reader gives the same samples back */
    xs__sb_printf(&b, "%s,%.17g,%.17g,%.17g,%.17g,%u\n", be, r->bytes, r->gap_s,
                  r->issue_s, r->deliver_s, r->repeat);
  }
  if (b.oom) {
    free(b.s);
    return NULL;
  }
  return b.s;
}

