/*
 * jsonpos.c: JSON paths for error messages, and a locator that finds where
 * a path's value starts in the original text. jansson reports positions of
 * syntax errors only; this gives semantic errors ("a negative size") the
 * same file:line:column. The text is known to be valid JSON (jansson parsed
 * it), so the scanner only has to skip values, not check them.
 */
#include "internal.h"

#include <stdlib.h>
#include <string.h>

void xs__jpath_key(xs__jpath *p, const char *key) {
  if (p->depth < XS__JPATH_MAX) {
    p->seg[p->depth].key = key;
    p->seg[p->depth].index = 0;
  }
  p->depth++;
}

void xs__jpath_index(xs__jpath *p, size_t index) {
  if (p->depth < XS__JPATH_MAX) {
    p->seg[p->depth].key = NULL;
    p->seg[p->depth].index = index;
  }
  p->depth++;
}

void xs__jpath_pop(xs__jpath *p) {
  if (p->depth > 0)
    p->depth--;
}

void xs__jpath_format(const xs__jpath *p, char *buf, size_t size) {
  size_t n = 0;
  buf[0] = '\0';
  int depth = p->depth < XS__JPATH_MAX ? p->depth : XS__JPATH_MAX;
  for (int i = 0; i < depth && n < size; i++) {
    int w;
    if (p->seg[i].key)
      w = snprintf(buf + n, size - n, "%s%s", n ? "." : "", p->seg[i].key);
    else
      w = snprintf(buf + n, size - n, "[%zu]", p->seg[i].index);
    if (w < 0)
      break;
    n += (size_t)w;
  }
  if (n == 0 && size > 1)
    snprintf(buf, size, "(top level)");
}

typedef struct {
  const char *s;
  size_t n, i;
} scan;

static void ws(scan *c) {
  while (c->i < c->n && (c->s[c->i] == ' ' || c->s[c->i] == '\t' ||
                         c->s[c->i] == '\n' || c->s[c->i] == '\r'))
    c->i++;
}

/* At a '"': moves past the closing quote. */
static void skip_string(scan *c) {
  c->i++;
  while (c->i < c->n && c->s[c->i] != '"') {
    if (c->s[c->i] == '\\')
      c->i++;
    c->i++;
  }
  if (c->i < c->n)
    c->i++;
}

static void skip_value(scan *c) {
  ws(c);
  if (c->i >= c->n)
    return;
  char ch = c->s[c->i];
  if (ch == '"') {
    skip_string(c);
    return;
  }
  if (ch == '{' || ch == '[') {
    size_t depth = 0;
    while (c->i < c->n) {
      ch = c->s[c->i];
      if (ch == '"') {
        skip_string(c);
        continue;
      }
      if (ch == '{' || ch == '[')
        depth++;
      else if (ch == '}' || ch == ']') {
        depth--;
        if (depth == 0) {
          c->i++;
          return;
        }
      }
      c->i++;
    }
    return;
  }
  while (c->i < c->n && !strchr(",]} \t\r\n", c->s[c->i]))
    c->i++;
}

/* Compare the string at c (a '"') with key; moves past it. Escapes other
 * than \" and \\ compare as unequal, which only costs a position. */
static int key_equals(scan *c, const char *key) {
  size_t start = c->i + 1;
  skip_string(c);
  size_t end = c->i - 1;
  size_t k = 0;
  for (size_t j = start; j < end; j++, k++) {
    char ch = c->s[j];
    if (ch == '\\') {
      j++;
      ch = c->s[j];
      if (ch != '"' && ch != '\\' && ch != '/')
        return 0;
    }
    if (key[k] != ch)
      return 0;
  }
  return key[k] == '\0';
}

int xs__json_locate(const char *text, size_t length, const xs__jpath *path,
                    int *line, int *column) {
  scan c = {text, length, 0};
  int depth = path->depth < XS__JPATH_MAX ? path->depth : XS__JPATH_MAX;
  ws(&c);
  for (int d = 0; d < depth; d++) {
    ws(&c);
    if (c.i >= c.n)
      return -1;
    if (path->seg[d].key) {
      if (c.s[c.i] != '{')
        return -1;
      c.i++;
      int found = 0;
      for (;;) {
        ws(&c);
        if (c.i >= c.n || c.s[c.i] != '"')
          return -1;
        int eq = key_equals(&c, path->seg[d].key);
        ws(&c);
        if (c.i >= c.n || c.s[c.i] != ':')
          return -1;
        c.i++;
        ws(&c);
        if (eq) {
          found = 1;
          break;
        }
        skip_value(&c);
        ws(&c);
        if (c.i >= c.n || c.s[c.i] != ',')
          return -1;
        c.i++;
      }
      if (!found)
        return -1;
    } else {
      if (c.s[c.i] != '[')
        return -1;
      c.i++;
      for (size_t k = 0; k < path->seg[d].index; k++) {
        skip_value(&c);
        ws(&c);
        if (c.i >= c.n || c.s[c.i] != ',')
          return -1;
        c.i++;
      }
      ws(&c);
    }
  }
  int ln = 1, col = 1;
  for (size_t j = 0; j < c.i && j < c.n; j++) {
    if (text[j] == '\n') {
      ln++;
      col = 1;
    } else if (((unsigned char)text[j] & 0xC0) != 0x80) {
      col++;
    }
  }
  *line = ln;
  *column = col;
  return 0;
}

xs_status xs__json_fail(xs_error *err, xs_status status, const char *filename,
                        const char *text, size_t length,
                        const xs__jpath *path, const char *fmt, ...) {
  char msg[768], where[256];
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(msg, sizeof msg, fmt, ap);
  va_end(ap);
  xs__utf8_trim(msg); /* cut short: between characters */
  xs__jpath_format(path, where, sizeof where);
  const char *fn = filename ? filename : "<input>";
  int line, col;
  if (text && xs__json_locate(text, length, path, &line, &col) == 0)
    return xs__fail(err, status, "%s:%d:%d: %s: %s", fn, line, col, where,
                    msg);
  return xs__fail(err, status, "%s: %s: %s", fn, where, msg);
}
