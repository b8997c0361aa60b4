/* testio.h: whole files and streams, and the command run from the source
 * tree (when the test defines XSTAGE_BIN and XSTAGE_SRC), for tests. */
#ifndef XSTAGE_TESTIO_H
#define XSTAGE_TESTIO_H

#include <stdio.h>
#include <stdlib.h>

/* All of a stream, NUL-terminated and malloc'd; its length in *len (may
 * be NULL). NULL when out of memory. */
static inline char *xs_test_read_stream(FILE *f, size_t *len) {
  size_t cap = 1 << 16, n = 0, got;
  char *buf = malloc(cap);
  while (buf && (got = fread(buf + n, 1, cap - n - 1, f)) > 0) {
    n += got;
    if (n + 1 == cap) {
      char *more = realloc(buf, cap *= 2);
      if (!more)
        free(buf);
      buf = more;
    }
  }
  if (buf)
    buf[n] = '\0';
  if (len)
    *len = n;
  return buf;
}

/* A whole file, as xs_test_read_stream; NULL when it cannot be read. */
static inline char *xs_test_read_file(const char *path, size_t *len) {
  if (len)
    *len = 0;
  FILE *f = fopen(path, "rb");
  if (!f)
    return NULL;
  char *text = xs_test_read_stream(f, len);
  fclose(f);
  return text;
}

#if defined(XSTAGE_BIN) && defined(XSTAGE_SRC)
#include <sys/wait.h>
#include <unistd.h>

/* "xstage ARGS" through the shell, from the source tree: the exit status
 * (-1 when it did not exit), all of its standard output in *out (malloc'd;
 * NULL when it could not start or memory ran out) and, when err is not
 * NULL, the first err_size - 1 bytes of its standard error in err (else
 * standard error passes through). */
static inline int xs_test_cli(const char *args, char **out, char *err, size_t err_size) {
  char cmd[8192], ep[64];
  snprintf(ep, sizeof ep, "/tmp/xstage-test-err.%d", (int)getpid());
  snprintf(cmd, sizeof cmd, "cd '%s' && '%s' %s%s%s", XSTAGE_SRC, XSTAGE_BIN, args,
           err ? " 2>" : "", err ? ep : "");
  FILE *f = popen(cmd, "r");
  *out = f ? xs_test_read_stream(f, NULL) : NULL;
  int st = f ? pclose(f) : -1;
  if (err) {
    FILE *e = fopen(ep, "r");
    size_t n = e ? fread(err, 1, err_size - 1, e) : 0;
    err[n] = '\0';
    if (e)
      fclose(e);
    remove(ep);
  }
  return st != -1 && WIFEXITED(st) ? WEXITSTATUS(st) : -1;
}

/* The same with standard output's first out_size - 1 bytes in out; -1
 * also when the output could not be read. */
static inline int xs_test_cli_buf(const char *args, char *out, size_t out_size, char *err,
                                  size_t err_size) {
  char *o;
  int rc = xs_test_cli(args, &o, err, err_size);
  snprintf(out, out_size, "%s", o ? o : "");
  if (!o)
    return -1;
  free(o);
  return rc;
}
#endif

#endif
