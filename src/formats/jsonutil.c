/*
 * jsonutil.c: typed access to parsed JSON with messages that point at the
 * offending value (file:line:column and its path), for the parsers of
 * profiles and programs.
 */
#include "jsonutil.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

xs_status xs__jparse(xs__jdoc *d, json_t **root) {
  const char *fn = d->filename ? d->filename : "<input>";
  *root = NULL;
  /* what jansson would report as something else at the end of the text,
   * or as an unexpected character */
  if (d->length >= 3 && !memcmp(d->text, "\xEF\xBB\xBF", 3))
    return xs__fail(d->err, XS_PARSE, "%s:1:1: a UTF-8 byte order mark (EF BB BF) "
                    "starts the file; JSON has none (save it without)", fn);
  const char *nul = memchr(d->text, '\0', d->length);
  if (nul) {
    size_t line = 1, col = 1;
    for (const char *c = d->text; c < nul; c++)
      col = *c == '\n' ? (line++, 1) : col + 1;
    return xs__fail(d->err, XS_PARSE, "%s:%zu:%zu: a NUL byte", fn, line, col);
  }
  json_error_t je;
  *root = json_loadb(d->text, d->length, JSON_REJECT_DUPLICATES, &je);
  if (!*root) {
    /* jansson quotes the text it stopped at: no control character of it
     * reaches a terminal */
    for (char *c = je.text; *c; c++)
      if ((unsigned char)*c < 0x20 || *c == 0x7f)
        *c = '?';
    return xs__fail(d->err, XS_PARSE, "%s:%d:%d: %s", fn, je.line, je.column, je.text);
  }
  return XS_OK;
}

xs_status xs__jfail(xs__jdoc *d, const char *fmt, ...) {
  char msg[768];
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(msg, sizeof msg, fmt, ap);
  va_end(ap);
  xs__utf8_trim(msg); /* cut short: between characters */
  return xs__json_fail(d->err, XS_INVALID, d->filename, d->text, d->length,
                       &d->path, "%s", msg);
}

const char *xs__jtype(const json_t *v) {
  switch (json_typeof(v)) {
  case JSON_OBJECT:
    return "an object";
  case JSON_ARRAY:
    return "an array";
  case JSON_STRING:
    return "a string";
  case JSON_INTEGER:
  case JSON_REAL:
    return "a number";
  case JSON_TRUE:
  case JSON_FALSE:
    return "a boolean";
  case JSON_NULL:
    return "null";
  }
  return "a value";
}

xs_status xs__jkeys(xs__jdoc *d, json_t *obj, const char *const *allowed) {
  const char *key;
  json_t *v;
  json_object_foreach(obj, key, v) {
    int ok = 0;
    for (const char *const *a = allowed; *a; a++)
      if (strcmp(*a, key) == 0)
        ok = 1;
    if (!ok) {
      char list[512];
      size_t n = 0;
      list[0] = '\0';
      for (const char *const *a = allowed; *a && n < sizeof list; a++) {
        int w = snprintf(list + n, sizeof list - n, "%s%s", n ? ", " : "", *a);
        if (w < 0)
          break;
        n += (size_t)w;
      }
      xs__jpath_key(&d->path, key);
      xs_status st = xs__jfail(d, "unknown key \"%s\" (known: %s)", key, list);
      xs__jpath_pop(&d->path);
      return st;
    }
  }
  return XS_OK;
}

xs_status xs__jnumber(xs__jdoc *d, json_t *obj, const char *key, int flags,
                      const char *what, double *value, int *present) {
  json_t *v = json_object_get(obj, key);
  if (present)
    *present = v != NULL;
  if (!v) {
    if (present)
      return XS_OK;
    return xs__jfail(d, "missing \"%s\" (%s)", key, what);
  }
  xs_status st = XS_OK;
  xs__jpath_key(&d->path, key);
  if (json_is_null(v) && (flags & XS__J_NULLABLE)) {
    *value = INFINITY;
  } else if (!json_is_number(v)) {
    st = xs__jfail(d, "expected %s, got %s", what, xs__jtype(v));
  } else {
    double x = json_number_value(v);
    if (!isfinite(x))
      st = xs__jfail(d, "expected %s, got a non-finite number", what);
    else if ((flags & XS__J_POSITIVE) && !(x > 0))
      st = xs__jfail(d, "expected %s, got %g (must be > 0)", what, x);
    else if ((flags & XS__J_NONNEG) && !(x >= 0))
      st = xs__jfail(d, "expected %s, got %g (must be >= 0)", what, x);
    else if ((flags & XS__J_INTEGER) && x != floor(x))
      st = xs__jfail(d, "expected %s, got %g (must be a whole number)", what,
                     x);
    else if ((flags & XS__J_INTEGER) && x > 4294967295.0)
      st = xs__jfail(d, "expected %s, got %.17g (too large: at most 4294967295)", what, x);
    else
      *value = x;
  }
  xs__jpath_pop(&d->path);
  return st;
}

xs_status xs__jstring(xs__jdoc *d, json_t *obj, const char *key,
                      const char **value, int *present) {
  json_t *v = json_object_get(obj, key);
  if (present)
    *present = v != NULL;
  if (!v) {
    if (present)
      return XS_OK;
    return xs__jfail(d, "missing \"%s\" (a string)", key);
  }
  if (!json_is_string(v)) {
    xs__jpath_key(&d->path, key);
    xs_status st = xs__jfail(d, "expected a string, got %s", xs__jtype(v));
    xs__jpath_pop(&d->path);
    return st;
  }
  *value = json_string_value(v);
  return XS_OK;
}

xs_status xs__jstrcpy(xs__jdoc *d, json_t *obj, const char *key, char *buf,
                      size_t size) {
  const char *s = NULL;
  int have;
  xs_status st = xs__jstring(d, obj, key, &s, &have);
  if (!st && have) {
    snprintf(buf, size, "%s", s);
    xs__utf8_trim(buf); /* cut between characters */
  }
  return st;
}

xs_status xs__jbool(xs__jdoc *d, json_t *obj, const char *key, int *value) {
  json_t *v = json_object_get(obj, key);
  if (!v)
    return XS_OK;
  if (!json_is_boolean(v)) {
    xs__jpath_key(&d->path, key);
    return xs__jfail(d, "expected true or false, got %s", xs__jtype(v));
  }
  *value = json_is_true(v);
  return XS_OK;
}

xs_status xs__jnumbers(xs__jdoc *d, json_t *obj, const xs__jfield *fields,
                       size_t n) {
  for (size_t i = 0; i < n; i++) {
    int have;
    xs_status st = xs__jnumber(d, obj, fields[i].key, XS__J_NONNEG, "a number",
                               fields[i].value, &have);
    if (st)
      return st;
  }
  return XS_OK;
}

xs_status xs__jfail_checked(xs__jdoc *d, json_t *obj, const xs_error *check) {
  char key[32] = "";
  sscanf(check->message, "%31[a-z_]", key);
  if (key[0] && json_object_get(obj, key))
    xs__jpath_key(&d->path, key);
  return xs__jfail(d, "%s", check->message);
}

int xs__jput(json_t *o, const char *key, json_t *v) {
  if (!o || !v) {
    json_decref(v);
    return 1;
  }
  return json_object_set_new(o, key, v) != 0; /* takes v even when it fails */
}

int xs__jappend(json_t *a, json_t *v) {
  if (!a || !v) {
    json_decref(v);
    return 1;
  }
  return json_array_append_new(a, v) != 0;
}

static int reals_fit(json_t *v, int digits) {
  if (json_is_real(v)) {
    char buf[40];
    double x = json_real_value(v);
    snprintf(buf, sizeof buf, "%.*g", digits, x);
    return strtod(buf, NULL) == x;
  }
  const char *key;
  json_t *item;
  size_t i;
  if (json_is_object(v)) {
    json_object_foreach(v, key, item)
      if (!reals_fit(item, digits))
        return 0;
  } else if (json_is_array(v)) {
    json_array_foreach(v, i, item)
      if (!reals_fit(item, digits))
        return 0;
  }
  return 1;
}

int xs__jdigits(json_t *v) { return reals_fit(v, 15) ? 15 : 17; }
