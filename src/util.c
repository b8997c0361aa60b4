/*
 * util.c: status strings, error formatting, growable arrays, a string map
 * and whole-file I/O, shared by every part of libxstage.
 */
#define _POSIX_C_SOURCE 200809L
#include <stdarg.h>
#include "internal.h"

#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

const char *xs_strerror(xs_status status) {
  switch (status) {
#define XS_STATUS_TEXT(name, num, text)                                      \
  case XS_##name:                                                            \
    return text;
    XS_STATUS_MAP(XS_STATUS_TEXT)
#undef XS_STATUS_TEXT
  }
  return "unknown status";
}

xs_status xs__vfail(xs_error *err, xs_status status, const char *fmt,
                    va_list ap) {
  if (err) {
    err->status = status;
    vsnprintf(err->message, sizeof err->message, fmt, ap);
  }
  return status;
}

xs_status xs__fail(xs_error *err, xs_status status, const char *fmt, ...) {
  va_list ap;
  va_start(ap, fmt);
  xs__vfail(err, status, fmt, ap);
  va_end(ap);
  return status;
}

char *xs__strdup(const char *s) {
  size_t n = strlen(s) + 1;
  char *d = malloc(n);
  if (d)
    memcpy(d, s, n);
  return d;
}

int xs__grow(void *array_ptr, size_t *capacity, size_t need, size_t elem) {
  void **pp = (void **)array_ptr;
  if (need <= *capacity)
    return 0;
  size_t cap = *capacity ? *capacity : 8;
  while (cap < need) {
    if (cap > SIZE_MAX / 2 / elem)
      return -1;
    cap *= 2;
  }
  void *n = realloc(*pp, cap * elem);
  if (!n)
    return -1;
  *pp = n;
  *capacity = cap;
  return 0;
}

/* ---- string map ---- */

static uint64_t hash_str(const char *s) {
  uint64_t h = 1469598103934665603ULL; /* FNV-1a */
  for (; *s; s++) {
    h ^= (unsigned char)*s;
    h *= 1099511628211ULL;
  }
  return h;
}

void xs__strmap_free(xs__strmap *m) {
  if (!m)
    return;
  for (size_t i = 0; i < m->cap; i++)
    free(m->keys[i]);
  free(m->keys);
  free(m->values);
  memset(m, 0, sizeof *m);
}

static int strmap_rehash(xs__strmap *m, size_t cap) {
  char **keys = calloc(cap, sizeof *keys);
  uint32_t *values = calloc(cap, sizeof *values);
  if (!keys || !values) {
    free(keys);
    free(values);
    return -1;
  }
  for (size_t i = 0; i < m->cap; i++) {
    if (!m->keys[i])
      continue;
    size_t j = hash_str(m->keys[i]) & (cap - 1);
    while (keys[j])
      j = (j + 1) & (cap - 1);
    keys[j] = m->keys[i];
    values[j] = m->values[i];
  }
  free(m->keys);
  free(m->values);
  m->keys = keys;
  m->values = values;
  m->cap = cap;
  return 0;
}

int xs__strmap_put(xs__strmap *m, const char *key, uint32_t value) {
  if ((m->count + 1) * 2 > m->cap &&
      strmap_rehash(m, m->cap ? m->cap * 2 : 16) != 0)
    return -1;
  size_t j = hash_str(key) & (m->cap - 1);
  while (m->keys[j]) {
    if (strcmp(m->keys[j], key) == 0)
      return 1;
    j = (j + 1) & (m->cap - 1);
  }
  char *k = xs__strdup(key);
  if (!k)
    return -1;
  m->keys[j] = k;
  m->values[j] = value;
  m->count++;
  return 0;
}

int xs__strmap_get(const xs__strmap *m, const char *key, uint32_t *value) {
  if (!m->cap)
    return 0;
  size_t j = hash_str(key) & (m->cap - 1);
  while (m->keys[j]) {
    if (strcmp(m->keys[j], key) == 0) {
      *value = m->values[j];
      return 1;
    }
    j = (j + 1) & (m->cap - 1);
  }
  return 0;
}

/* ---- files ---- */

xs_status xs__read_file(const char *path, char **text, size_t *length,
                        xs_error *err) {
  FILE *f = fopen(path, "rb");
  if (!f) {
    /* a path that names nothing readable is bad input, not a failure */
    int bad = errno == ENOENT || errno == ENOTDIR || errno == EACCES ||
              errno == ENAMETOOLONG || errno == ELOOP;
    return xs__fail(err, bad ? XS_NOTFOUND : XS_IO, "%s: cannot open: %s",
                    path, strerror(errno));
  }
  size_t cap = 65536, n = 0;
  char *buf = malloc(cap);
  if (!buf) {
    fclose(f);
    return xs__fail(err, XS_NOMEM, "%s: out of memory", path);
  }
  for (;;) {
    if (n + 1 >= cap) {
      char *nb = cap < SIZE_MAX / 2 ? realloc(buf, cap * 2) : NULL;
      if (!nb) {
        free(buf);
        fclose(f);
        return xs__fail(err, XS_NOMEM, "%s: out of memory", path);
      }
      buf = nb;
      cap *= 2;
    }
    size_t got = fread(buf + n, 1, cap - 1 - n, f);
    n += got;
    if (got == 0)
      break;
  }
  int bad = ferror(f);
  int saved = errno;
  fclose(f);
  if (bad) {
    free(buf);
    return xs__fail(err, saved == EISDIR ? XS_INVALID : XS_IO,
                    "%s: cannot read: %s", path, strerror(saved));
  }
  buf[n] = '\0';
  *text = buf;
  *length = n;
  return XS_OK;
}

xs_status xs_write_file_atomic(const char *path, const char *data,
                               size_t length, xs_error *err) {
  size_t n = strlen(path);
  char *tmp = malloc(n + 16);
  if (!tmp)
    return xs__fail(err, XS_NOMEM, "%s: out of memory", path);
  snprintf(tmp, n + 16, "%s.tmpXXXXXX", path);
  int fd = mkstemp(tmp);
  if (fd < 0) {
    /* a folder that is not there or not ours is bad input, not a failure */
    int bad = errno == ENOENT || errno == ENOTDIR || errno == EACCES ||
              errno == EROFS || errno == ENAMETOOLONG;
    xs_status st = xs__fail(err, bad ? XS_NOTFOUND : XS_IO,
                            "%s: cannot create a file there: %s", path,
                            strerror(errno));
    free(tmp);
    return st;
  }
  size_t done = 0;
  while (done < length) {
    ssize_t w = write(fd, data + done, length - done);
    if (w < 0) {
      if (errno == EINTR)
        continue;
      int saved = errno;
      close(fd);
      unlink(tmp);
      free(tmp);
      return xs__fail(err, XS_IO, "%s: write error: %s", path,
                      strerror(saved));
    }
    done += (size_t)w;
  }
  /* mkstemp makes 0600; give the file the usual mode */
  mode_t mask = umask(0);
  umask(mask);
  fchmod(fd, 0666 & ~mask);
  if (close(fd) != 0 || rename(tmp, path) != 0) {
    int saved = errno;
    unlink(tmp);
    free(tmp);
    return xs__fail(err, XS_IO, "%s: cannot write: %s", path,
                    strerror(saved));
  }
  free(tmp);
  return XS_OK;
}

/* ---- growable strings, for the SVG and CSV writers ---- */

void xs__sb_printf(xs__sbuf *b, const char *fmt, ...) {
  if (b->oom)
    return;
  for (;;) {
    va_list ap;
    va_start(ap, fmt);
    size_t room = b->cap - b->n;
    int w = vsnprintf(b->s ? b->s + b->n : NULL, b->s ? room : 0, fmt, ap);
    va_end(ap);
    if (w < 0) {
      b->oom = 1;
      return;
    }
    if (b->s && (size_t)w < room) {
      b->n += (size_t)w;
      return;
    }
    if (xs__grow(&b->s, &b->cap, b->n + (size_t)w + 1, 1)) {
      b->oom = 1;
      return;
    }
  }
}

void xs__sb_escaped(xs__sbuf *b, const char *text) {
  for (; *text; text++) {
    switch (*text) {
    case '<': xs__sb_printf(b, "&lt;"); break;
    case '>': xs__sb_printf(b, "&gt;"); break;
    case '&': xs__sb_printf(b, "&amp;"); break;
    case '"': xs__sb_printf(b, "&quot;"); break;
    default:
      if ((unsigned char)*text >= 0x20)
        xs__sb_printf(b, "%c", *text);
    }
  }
}

