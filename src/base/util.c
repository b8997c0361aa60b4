/*
 * util.c: status strings, error formatting, growable arrays, a string map
 * and whole-file I/O, shared by every part of libxstage.
 */
#define _XOPEN_SOURCE 700 /* POSIX.1-2008 with realpath */
#include <stdarg.h>
#include "internal.h"

#include <ctype.h>
#include <errno.h>
#include <locale.h>
#include <math.h>
#include <fcntl.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

const char *xs_version(void) { return XSTAGE_VERSION; }
int xs_version_number(void) { return XSTAGE_VERSION_NUMBER; }

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

/* Control characters of a message (C0, DEL, and C1 as UTF-8) written as
 * \xNN, so that a name from a data file or an argument quoted in it
 * cannot move a terminal's cursor or recolour it; a character goes whole
 * or not at all when the message is cut. */
static void escape_controls(const char *in, char *out, size_t size) {
  const unsigned char *u = (const unsigned char *)in;
  size_t n = 0;
  for (size_t i = 0; u[i];) {
    size_t c = u[i] < 0x20 || u[i] == 0x7f                      ? 1
               : u[i] == 0xc2 && u[i + 1] >= 0x80 && u[i + 1] <= 0x9f ? 2
                                                                  : 0;
    if (c) {
      if (n + 5 > size)
        break;
      n += (size_t)snprintf(out + n, size - n, "\\x%02x", u[i + c - 1]);
      i += c;
      continue;
    }
    size_t len = 1;
    while (u[i + len] && (u[i + len] & 0xC0) == 0x80 && len < 4)
      len++;
    if (n + len + 1 > size)
      break;
    memcpy(out + n, u + i, len);
    n += len, i += len;
  }
  out[n] = '\0';
}

/* ---- numbers whatever the locale ---- */

/* "C", made once and kept (newlocale; a race makes two and frees one) */
static _Atomic(locale_t) c_locale;

static locale_t the_c_locale(void) {
  locale_t l = atomic_load(&c_locale);
  if (l)
    return l;
  locale_t made = newlocale(LC_ALL_MASK, "C", (locale_t)0), none = (locale_t)0;
  if (!made)
    return (locale_t)0;
  if (!atomic_compare_exchange_strong(&c_locale, &none, made)) {
    freelocale(made);
    return none;
  }
  return made;
}

void *xs__numeric_c(void) {
  locale_t c = the_c_locale();
  return c ? (void *)uselocale(c) : NULL;
}

void xs__numeric_restore(void *old) {
  if (old)
    uselocale((locale_t)old);
}

int xs__decimal(const char *s, double *v, const char **end) {
  const char *p = s;
  while (*p == ' ' || *p == '\t')
    p++;
  const char *start = p;
  if (*p == '+' || *p == '-')
    p++;
  size_t digits = 0;
  while (isdigit((unsigned char)*p))
    p++, digits++;
  if (*p == '.')
    for (p++; isdigit((unsigned char)*p); p++)
      digits++;
  if (!digits)
    return -1;
  if (*p == 'e' || *p == 'E') {
    const char *q = p + 1;
    if (*q == '+' || *q == '-')
      q++;
    if (isdigit((unsigned char)*q)) {
      while (isdigit((unsigned char)*q))
        q++;
      p = q;
    }
  }
  /* strtod in the C locale on exactly that text (at most a line's worth:
   * longer numbers are no number a file of timings holds) */
  char buf[128];
  size_t n = (size_t)(p - start);
  if (n >= sizeof buf)
    return -1;
  memcpy(buf, start, n);
  buf[n] = '\0';
  void *old = xs__numeric_c();
  *v = strtod(buf, NULL);
  xs__numeric_restore(old);
  if (end)
    *end = p;
  return 0;
}

xs_status xs__vfail(xs_error *err, xs_status status, const char *fmt,
                    va_list ap) {
  if (err) {
    char raw[sizeof err->message];
    err->status = status;
    /* numbers in messages with a point, whatever the host's locale */
    void *old = xs__numeric_c();
    vsnprintf(raw, sizeof raw, fmt, ap);
    xs__numeric_restore(old);
    xs__utf8_trim(raw); /* a message cut short: between characters */
    escape_controls(raw, err->message, sizeof err->message);
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

void xs__first_reason(int *set, char *buf, size_t n, const char *fmt, ...) {
  if (*set)
    return;
  *set = 1;
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(buf, n, fmt, ap);
  va_end(ap);
}

size_t xs__utf8_prefix(const char *s, size_t n) {
  const unsigned char *u = (const unsigned char *)s;
  size_t i = 0;
  while (i < n) {
    unsigned c = u[i], k, cp;
    if (c < 0x80) {
      i++;
      continue;
    }
    if (c >= 0xC2 && c <= 0xDF)
      k = 1, cp = c & 0x1F;
    else if (c >= 0xE0 && c <= 0xEF)
      k = 2, cp = c & 0x0F;
    else if (c >= 0xF0 && c <= 0xF4)
      k = 3, cp = c & 0x07;
    else
      return i;
    if (i + k >= n)
      return i; /* cut short */
    for (unsigned j = 1; j <= k; j++) {
      if ((u[i + j] & 0xC0) != 0x80)
        return i;
      cp = cp << 6 | (u[i + j] & 0x3F);
    }
    if ((k == 2 && cp < 0x800) || (k == 3 && cp < 0x10000) || cp > 0x10FFFF ||
        (cp >= 0xD800 && cp <= 0xDFFF))
      return i;
    i += k + 1;
  }
  return n;
}

int xs__utf8_ok(const char *s) {
  size_t n = strlen(s);
  return xs__utf8_prefix(s, n) == n;
}

void xs__utf8_trim(char *s) {
  size_t n = strlen(s), start = n;
  /* back to the first byte of the last character */
  while (start > 0 && n - start < 4 && ((unsigned char)s[start - 1] & 0xC0) == 0x80)
    start--;
  if (start == 0)
    return;
  start--;
  if (xs__utf8_prefix(s + start, n - start) < n - start &&
      ((unsigned char)s[start] & 0xC0) == 0xC0)
    s[start] = '\0'; /* a lead byte whose character was cut */
}

size_t xs__utf8_cut(const char *s, size_t max) {
  size_t n = strnlen(s, max + 1);
  if (n <= max)
    return n;
  /* back to the first byte of the character at max */
  while (max > 0 && ((unsigned char)s[max] & 0xC0) == 0x80)
    max--;
  return max;
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
    if (n > XS_INPUT_LIMIT_BYTES) {
      free(buf);
      fclose(f);
      return xs__fail(err, XS_INVALID, "%s: larger than the limit of %zu MiB for an input file",
                      path, XS_INPUT_LIMIT_BYTES >> 20);
    }
    if (n + 1 >= cap) {
      /* room for one byte past the limit, to see that it is past */
      size_t want = cap * 2 < XS_INPUT_LIMIT_BYTES + 2 ? cap * 2 : XS_INPUT_LIMIT_BYTES + 2;
      char *nb = realloc(buf, want);
      if (!nb) {
        free(buf);
        fclose(f);
        return xs__fail(err, XS_NOMEM, "%s: out of memory", path);
      }
      buf = nb;
      cap = want;
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

/* ---- temporary files of writes in progress ----
 * A process killed while it writes would leave NAME.tmpPID-N beside its
 * target. Each write through a temporary file holds one slot here while
 * its file exists, and xs_remove_temp_files (from a signal handler)
 * unlinks the live ones. The slots are static storage, filled with atomic
 * stores and read with atomic loads only, so the handler neither
 * allocates nor locks: the one mutable state of the library, and it only
 * ever names files this process created. A write that finds every slot
 * taken (more than TEMP_SLOTS at once, from as many threads) is refused
 * rather than left unprotected. */
#define TEMP_SLOTS 64
#define TEMP_NAME_MAX 4096 /* PATH_MAX on Linux: open() refuses longer */
static char temp_names[TEMP_SLOTS][TEMP_NAME_MAX];
static atomic_int temp_state[TEMP_SLOTS]; /* 0 free, 1 being named, 2 live */

void xs_remove_temp_files(void) {
  for (int i = 0; i < TEMP_SLOTS; i++)
    if (atomic_load(&temp_state[i]) == 2)
      unlink(temp_names[i]);
}

static int temp_claim(void) {
  for (int i = 0; i < TEMP_SLOTS; i++) {
    int expect = 0;
    if (atomic_compare_exchange_strong(&temp_state[i], &expect, 1))
      return i;
  }
  return -1;
}

/* Write all of data to fd; 0, or -1 with errno set. */
static int write_all(int fd, const char *data, size_t length) {
  size_t done = 0;
  while (done < length) {
    ssize_t w = write(fd, data + done, length - done);
    if (w < 0) {
      if (errno == EINTR)
        continue;
      return -1;
    }
    done += (size_t)w;
  }
  return 0;
}

/* Write data into path itself: a device, a FIFO, or the file a dangling
 * symbolic link names (created through the link). */
static xs_status write_in_place(const char *path, const char *data,
                                size_t length, xs_error *err) {
  int fd = open(path, O_WRONLY | O_CREAT | O_TRUNC, 0666);
  if (fd < 0) {
    int bad = errno == ENOENT || errno == ENOTDIR || errno == EACCES ||
              errno == EROFS || errno == ENAMETOOLONG || errno == ELOOP ||
              errno == ENXIO;
    return xs__fail(err, bad ? XS_NOTFOUND : XS_IO, "%s: cannot open: %s",
                    path, strerror(errno));
  }
  if (write_all(fd, data, length) != 0) {
    int saved = errno;
    close(fd);
    return xs__fail(err, XS_IO, "%s: write error: %s", path, strerror(saved));
  }
  if (close(fd) != 0)
    return xs__fail(err, XS_IO, "%s: cannot write: %s", path, strerror(errno));
  return XS_OK;
}

/* Write data through descriptor fd, which this process holds open (its
 * standard output, say): from the descriptor's offset on, or at the end
 * when it was opened for append; nothing before is touched. */
static xs_status write_through(const char *path, int fd, const char *data,
                               size_t length, xs_error *err) {
  int flags = fcntl(fd, F_GETFL);
  if (flags < 0)
    return xs__fail(err, XS_NOTFOUND, "%s: descriptor %d is not open", path, fd);
  if ((flags & O_ACCMODE) == O_RDONLY)
    return xs__fail(err, XS_NOTFOUND, "%s: descriptor %d is open for reading only",
                    path, fd);
  if (write_all(fd, data, length) != 0)
    return xs__fail(err, XS_IO, "%s: write error: %s", path, strerror(errno));
  return XS_OK;
}

/* The descriptor a path names by number: /dev/stdin, /dev/stdout,
 * /dev/stderr, /dev/fd/N, /proc/self/fd/N and /proc/PID/fd/N of this
 * process; -1 for any other path. */
static int named_fd(const char *path) {
  static const char *const std[] = {"/dev/stdin", "/dev/stdout", "/dev/stderr"};
  for (int i = 0; i < 3; i++)
    if (!strcmp(path, std[i]))
      return i;
  char self[48];
  snprintf(self, sizeof self, "/proc/%ld/fd/", (long)getpid());
  const char *const dirs[] = {"/dev/fd/", "/proc/self/fd/", self};
  for (int i = 0; i < 3; i++) {
    size_t n = strlen(dirs[i]);
    if (strncmp(path, dirs[i], n) || !path[n])
      continue;
    long fd = 0;
    for (const char *d = path + n; *d; d++) {
      if (*d < '0' || *d > '9' || fd > 1000000)
        return -1;
      fd = fd * 10 + (*d - '0');
    }
    return (int)fd;
  }
  return -1;
}

/* The standard stream (0 to 2) open for writing on the file sb describes
 * (`--svg out.svg >> out.svg`, or a link to /dev/stdout); -1 for none. */
static int std_fd_on(const struct stat *sb) {
  for (int fd = 0; fd <= 2; fd++) {
    struct stat fb;
    int flags = fcntl(fd, F_GETFL);
    if (flags >= 0 && (flags & O_ACCMODE) != O_RDONLY && fstat(fd, &fb) == 0 &&
        fb.st_dev == sb->st_dev && fb.st_ino == sb->st_ino)
      return fd;
  }
  return -1;
}

/* Write data to a new file beside path, then rename it over path. A file
 * it replaces (old, NULL for none) gives the new one its mode, and its
 * owner and group where this process may set them. Signals are held
 * while the temporary file is created and its slot marked live, so that
 * a handler sees every temporary file that exists; on every error the
 * file is removed. */
static xs_status write_renamed(const char *path, const struct stat *old,
                               const char *data, size_t length, xs_error *err) {
  static atomic_uint seq;
  if (strlen(path) + 40 > TEMP_NAME_MAX)
    return xs__fail(err, XS_NOTFOUND, "%s: cannot create a file there: %s",
                    path, strerror(ENAMETOOLONG));
  int slot = temp_claim();
  if (slot < 0)
    return xs__fail(err, XS_IO, "%s: more than %d files being written at once",
                    path, TEMP_SLOTS);
  char *tmp = temp_names[slot];
  sigset_t all, before;
  sigfillset(&all);
  pthread_sigmask(SIG_BLOCK, &all, &before);
  /* O_EXCL with mode 0666: the kernel applies the umask (and a default
   * ACL), as for any new file; a name left by an earlier process of the
   * same id is skipped */
  int fd = -1;
  for (int tries = 0; fd < 0 && tries < 100; tries++) {
    snprintf(tmp, TEMP_NAME_MAX, "%s.tmp%ld-%u", path, (long)getpid(),
             atomic_fetch_add(&seq, 1u));
    fd = open(tmp, O_WRONLY | O_CREAT | O_EXCL, 0666);
    if (fd < 0 && errno != EEXIST)
      break;
  }
  int saved = errno;
  if (fd >= 0)
    atomic_store(&temp_state[slot], 2);
  pthread_sigmask(SIG_SETMASK, &before, NULL);
  if (fd < 0) {
    atomic_store(&temp_state[slot], 0);
    /* a folder that is not there or not ours is bad input, not a failure */
    int bad = saved == ENOENT || saved == ENOTDIR || saved == EACCES ||
              saved == EROFS || saved == ENAMETOOLONG;
    return xs__fail(err, bad ? XS_NOTFOUND : XS_IO,
                    "%s: cannot create a file there: %s", path, strerror(saved));
  }
  if (old) {
    /* the owner first: a change of owner clears set-id bits */
    if ((old->st_uid != geteuid() || old->st_gid != getegid()) &&
        fchown(fd, old->st_uid, old->st_gid) != 0 && old->st_gid != getegid())
      (void)!fchown(fd, (uid_t)-1, old->st_gid); /* a group we are in */
    (void)!fchmod(fd, old->st_mode & 07777);
  }
  const char *what = "write error";
  int bad = write_all(fd, data, length) != 0;
  saved = errno;
  if (close(fd) != 0 && !bad) {
    bad = 1, saved = errno, what = "cannot write";
  }
  if (!bad && rename(tmp, path) != 0)
    bad = 1, saved = errno, what = "cannot write";
  if (bad)
    unlink(tmp);
  atomic_store(&temp_state[slot], 0);
  if (bad)
    return xs__fail(err, saved == EISDIR ? XS_INVALID : XS_IO, "%s: %s: %s", path,
                    what, strerror(saved));
  return XS_OK;
}

/* a regular file that is read-only: for this process (access), or for
 * everyone (no write bit: root may write it, and a rename would replace
 * it, but whoever made it so meant it to stay) */
static xs_status refuse_read_only(const char *path, const struct stat *sb, xs_error *err) {
  if ((sb->st_mode & 0222) && access(path, W_OK) == 0)
    return XS_OK;
  return xs__fail(err, XS_INVALID,
                  "%s: read-only (mode %03o): not replaced (make it writable, or write "
                  "elsewhere)", path, (unsigned)(sb->st_mode & 0777));
}

xs_status xs_check_output(const char *path, xs_error *err) {
  if (!path || !*path)
    return xs__fail(err, XS_NOTFOUND, "an output path is empty");
  if (named_fd(path) >= 0)
    return XS_OK;
  struct stat sb;
  if (stat(path, &sb) == 0) {
    if (S_ISDIR(sb.st_mode))
      return xs__fail(err, XS_INVALID, "%s: is a directory", path);
    return S_ISREG(sb.st_mode) && std_fd_on(&sb) < 0 ? refuse_read_only(path, &sb, err)
                                                      : XS_OK;
  }
  struct stat lb;
  if (lstat(path, &lb) == 0) /* a dangling link: its target is created */
    return XS_OK;
  /* a new file: its folder must be there, and writable */
  const char *slash = strrchr(path, '/');
  size_t n = slash ? (size_t)(slash - path) : 0;
  char *dir = malloc(n + 2);
  if (!dir)
    return xs__fail(err, XS_NOMEM, "out of memory");
  if (!slash)
    strcpy(dir, ".");
  else if (!n)
    strcpy(dir, "/");
  else {
    memcpy(dir, path, n);
    dir[n] = '\0';
  }
  xs_status st = XS_OK;
  if (stat(dir, &sb) != 0 || !S_ISDIR(sb.st_mode))
    st = xs__fail(err, XS_NOTFOUND, "%s: cannot create: no folder %s", path, dir);
  else if (access(dir, W_OK | X_OK) != 0)
    st = xs__fail(err, XS_NOTFOUND, "%s: cannot create: folder %s: %s", path, dir,
                  strerror(errno));
  free(dir);
  return st;
}

xs_status xs_write_file_atomic(const char *path, const char *data,
                               size_t length, xs_error *err) {
  if (!*path)
    return xs__fail(err, XS_NOTFOUND, "an output path is empty");
  int fd = named_fd(path);
  if (fd >= 0) /* /dev/stdout, /proc/self/fd/3: the descriptor, as it is */
    return write_through(path, fd, data, length, err);
  struct stat sb, lb;
  if (stat(path, &sb) != 0) {
    /* nothing there yet: a new file, or one created through a dangling
     * symbolic link, in place */
    if (lstat(path, &lb) == 0 && S_ISLNK(lb.st_mode))
      return write_in_place(path, data, length, err);
    return write_renamed(path, NULL, data, length, err);
  }
  if (S_ISDIR(sb.st_mode))
    return xs__fail(err, XS_INVALID, "%s: is a directory", path);
  if (!S_ISREG(sb.st_mode)) /* /dev/null, a terminal, a FIFO, a link to one */
    return write_in_place(path, data, length, err);
  /* a file this process writes to already (standard output redirected
   * to it, or a link to /dev/stdout): through that descriptor */
  if ((fd = std_fd_on(&sb)) >= 0)
    return write_through(path, fd, data, length, err);
  xs_status ro = refuse_read_only(path, &sb, err);
  if (ro)
    return ro;
  if (lstat(path, &lb) != 0 || !S_ISLNK(lb.st_mode))
    return write_renamed(path, &sb, data, length, err);
  /* A symbolic link stays a link: the file it resolves to is replaced. */
  char *target = realpath(path, NULL);
  if (!target)
    return xs__fail(err, XS_NOTFOUND, "%s: cannot resolve the link: %s", path,
                    strerror(errno));
  xs_status st = write_renamed(target, &sb, data, length, err);
  free(target);
  return st;
}

/* ---- growable strings, for the SVG and CSV writers ---- */

int xs__name_index(const char *const *names, size_t n, const char *name) {
  for (size_t i = 0; i < n; i++)
    if (strcmp(names[i], name) == 0)
      return (int)i;
  return -1;
}

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

void xs__sb_put(xs__sbuf *b, const char *text, size_t n) {
  if (b->oom)
    return;
  if (xs__grow(&b->s, &b->cap, b->n + n + 1, 1)) {
    b->oom = 1;
    return;
  }
  memcpy(b->s + b->n, text, n);
  b->n += n;
  b->s[b->n] = 0;
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

static int by_value(const void *a, const void *b) {
  double x = *(const double *)a, y = *(const double *)b;
  return (x > y) - (x < y);
}

/* the median of v[0..k), which it sorts; NAN when k is 0 */
double xs__median_of(double *v, size_t k) {
  if (!k)
    return NAN;
  qsort(v, k, sizeof *v, by_value);
  return k % 2 ? v[k / 2] : (v[k / 2 - 1] + v[k / 2]) / 2;
}

/* ---- CSV lines ---- */

int xs__csv_split(char *line, xs__csv_field *f, int max, size_t *bad_col) {
  int n = 0, ended = 0;
  char *r = line, *w;
  while (n < max) {
    f[n].col = (size_t)(r - line) + 1;
    w = r;
    f[n].s = w;
    if (*r == '"') {
      r++;
      for (;;) {
        if (!*r)
          return -1;
        if (*r == '"' && r[1] == '"') {
          *w++ = '"';
          r += 2;
        } else if (*r == '"') {
          r++;
          break;
        } else {
          *w++ = *r++;
        }
      }
      if (*r && *r != ',') {
        *bad_col = (size_t)(r - line) + 1;
        return -3;
      }
    } else {
      while (*r && *r != ',') {
        if (*r == '"') {
          *bad_col = (size_t)(r - line) + 1;
          return -3;
        }
        *w++ = *r++;
      }
    }
    int last = *r != ',';
    *w = '\0';
    n++;
    if (last) {
      ended = 1;
      break;
    }
    r++;
  }
  return ended ? n : -2;
}

const char *xs__csv_split_why(int code) {
  return code == -1   ? "a quoted field is not closed"
         : code == -3 ? "a stray quote (a quoted field ends at its closing quote; a "
                        "quote inside a field is written \"\" within quotes)"
                      : "more fields than the line may have";
}
