/*
 * chan.c: real posted channels on this machine, for the probes and the
 * replay: a pipe (write() returns once the bytes are in the pipe's buffer,
 * F_SETPIPE_SZ sets its size) or a loopback TCP connection (the send and
 * receive buffers), drained by a reader thread at a set rate or as fast as
 * it can. The writer stamps when its last write returns (issue); the reader
 * stamps when it holds the last byte of a send (delivery).
 *
 * The reader paces itself with a deadline that sleeps rather than spins
 * (nanosleep), so it holds up on a loaded two-core machine: after reading n
 * bytes the next read may start n/rate later. A reader that wakes late
 * catches up (the deadline stays where it was), so oversleeping costs no
 * rate; a reader that had to wait for data (the channel ran dry) restarts
 * the schedule when data comes, so idle time is not saved up as a burst.
 */
#define _GNU_SOURCE
#include "backend.h"

#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <math.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

double xs__now_s(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

static void sleep_s(double s) {
  if (s <= 0)
    return;
  struct timespec ts;
  ts.tv_sec = (time_t)s;
  ts.tv_nsec = (long)((s - (double)ts.tv_sec) * 1e9);
  while (nanosleep(&ts, &ts) != 0 && errno == EINTR)
    ;
}

static void *reader_main(void *arg) {
  xs__rchan *c = arg;
  char *buf = malloc(c->chunk);
  if (!buf) {
    atomic_store(&c->failed, 1);
    return NULL;
  }
  double next = xs__now_s();
  while (!atomic_load(&c->stop)) {
    if (c->rate > 0) {
      double now = xs__now_s();
      if (next > now) {
        /* short sleeps, so that stop is seen within 10 ms */
        sleep_s(fmin(next - now, 0.01));
        continue;
      }
    }
    struct pollfd pf = {c->rfd, POLLIN, 0};
    if (poll(&pf, 1, 0) <= 0) {
      /* dry: wait for data, and start the schedule afresh when it comes */
      if (poll(&pf, 1, 10) <= 0)
        continue;
      if (next < xs__now_s())
        next = xs__now_s();
    }
    ssize_t n = read(c->rfd, buf, c->chunk);
    if (n <= 0) {
      if (n == 0 || (errno != EAGAIN && errno != EINTR))
        break;
      continue;
    }
    if (c->rate > 0)
      next += (double)n / c->rate;
    uint64_t rx = atomic_fetch_add(&c->rx, (uint64_t)n) + (uint64_t)n;
    pthread_mutex_lock(&c->mu);
    /* stamped under the lock: no mark gets a time before it was made */
    double t = xs__now_s();
    while (c->next_mark < c->nmarks && c->mark_off[c->next_mark] <= rx)
      c->mark_t[c->next_mark++] = t;
    pthread_mutex_unlock(&c->mu);
  }
  free(buf);
  return NULL;
}

static xs_status open_pipe(xs__rchan *c, double cap, xs_error *err) {
  int fds[2];
  if (pipe2(fds, O_CLOEXEC) != 0)
    return xs__fail(err, XS_IO, "pipe: %s", strerror(errno));
  c->rfd = fds[0];
  c->wfd = fds[1];
  int want = (int)cap;
  int got = fcntl(c->wfd, F_SETPIPE_SZ, want);
  if (got < 0)
    return xs__fail(err, XS_INVALID,
                    "pipe: cannot set its size to %d bytes (%s); without "
                    "privileges the limit is /proc/sys/fs/pipe-max-size",
                    want, strerror(errno));
  c->capacity_B = got;
  return XS_OK;
}

static xs_status open_tcp(xs__rchan *c, double cap, xs_error *err) {
  int ls = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
  if (ls < 0)
    return xs__fail(err, XS_IO, "tcp: socket: %s", strerror(errno));
  struct sockaddr_in a;
  memset(&a, 0, sizeof a);
  a.sin_family = AF_INET;
  a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  socklen_t al = sizeof a;
  if (bind(ls, (struct sockaddr *)&a, sizeof a) != 0 || listen(ls, 1) != 0 ||
      getsockname(ls, (struct sockaddr *)&a, &al) != 0) {
    int e = errno;
    close(ls);
    return xs__fail(err, XS_IO, "tcp: listen on 127.0.0.1: %s", strerror(e));
  }
  int w = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
  int buf = (int)cap, one = 1;
  if (w >= 0) {
    setsockopt(w, SOL_SOCKET, SO_SNDBUF, &buf, sizeof buf);
    setsockopt(w, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
  }
  if (w < 0 || connect(w, (struct sockaddr *)&a, sizeof a) != 0) {
    int e = errno;
    if (w >= 0)
      close(w);
    close(ls);
    return xs__fail(err, XS_IO, "tcp: connect to 127.0.0.1: %s", strerror(e));
  }
  int r = accept4(ls, NULL, NULL, SOCK_CLOEXEC);
  int e = errno;
  close(ls);
  if (r < 0) {
    close(w);
    return xs__fail(err, XS_IO, "tcp: accept: %s", strerror(e));
  }
  setsockopt(r, SOL_SOCKET, SO_RCVBUF, &buf, sizeof buf);
  c->rfd = r;
  c->wfd = w;
  /* what the kernel set: it caps the size at net.core.wmem_max and
   * reports it doubled (the other half is its bookkeeping) */
  int got = 0;
  socklen_t gl = sizeof got;
  c->capacity_B = getsockopt(w, SOL_SOCKET, SO_SNDBUF, &got, &gl) == 0 && got > 0
                      ? fmin(cap, got / 2.0)
                      : cap;
  return XS_OK;
}

xs_status xs__rchan_open(xs__rchan *c, const char *backend, double capacity_B,
                         double drain_Bps, size_t max_marks, xs_error *err) {
  memset(c, 0, sizeof *c);
  c->rfd = c->wfd = -1;
  atomic_init(&c->rx, 0);
  atomic_init(&c->stop, 0);
  atomic_init(&c->failed, 0);
  c->rate = drain_Bps;
  if (!(capacity_B >= 1 && capacity_B <= INT_MAX))
    return xs__fail(err, XS_INVALID, "%s: capacity %.17g bytes: expected 1 to %d (what "
                    "F_SETPIPE_SZ and SO_SNDBUF take)", backend, capacity_B, INT_MAX);
  /* reads small next to what a burst takes to drain, large enough not to
   * wake up too often: 8 KiB */
  c->chunk = 8192;
  pthread_mutex_init(&c->mu, NULL);
  c->mark_off = malloc((max_marks + 1) * sizeof *c->mark_off);
  c->mark_t = malloc((max_marks + 1) * sizeof *c->mark_t);
  c->max_marks = max_marks;
  if (!c->mark_off || !c->mark_t)
    return xs__fail(err, XS_NOMEM, "out of memory");
  xs_status st = strcmp(backend, "pipe") == 0 ? open_pipe(c, capacity_B, err)
                 : strcmp(backend, "tcp") == 0 ? open_tcp(c, capacity_B, err)
                                               : xs__fail(err, XS_NOTBUILT,
                                                          "no backend \"%s\"",
                                                          backend);
  if (st)
    return st;
  fcntl(c->wfd, F_SETFL, fcntl(c->wfd, F_GETFL) | O_NONBLOCK);
  fcntl(c->rfd, F_SETFL, fcntl(c->rfd, F_GETFL) | O_NONBLOCK);
  if (pthread_create(&c->reader, NULL, reader_main, c) != 0)
    return xs__fail(err, XS_IO, "%s: cannot start the reader thread", backend);
  c->reader_started = 1;
  return XS_OK;
}

void xs__rchan_close(xs__rchan *c) {
  atomic_store(&c->stop, 1);
  if (c->reader_started)
    pthread_join(c->reader, NULL);
  if (c->wfd >= 0)
    close(c->wfd);
  if (c->rfd >= 0)
    close(c->rfd);
  pthread_mutex_destroy(&c->mu);
  free(c->mark_off);
  free(c->mark_t);
  memset(c, 0, sizeof *c);
  c->rfd = c->wfd = -1;
}

/* Write bytes; returns the time the last write returned, or a negative
 * value when stopped by the deadline or cancel. */
double xs__rchan_send(xs__rchan *c, const char *data, size_t bytes,
                      double deadline, volatile int *cancel, size_t *mark) {
  pthread_mutex_lock(&c->mu);
  c->tx += bytes;
  *mark = c->nmarks;
  if (c->nmarks < c->max_marks) {
    c->mark_off[c->nmarks] = c->tx;
    c->mark_t[c->nmarks] = NAN;
    c->nmarks++;
  }
  if (bytes == 0) {
    /* a signal: no byte for the reader to stamp it by, so it arrives when
     * it is issued if every send before it has, else with the last of them */
    double t = xs__now_s();
    while (c->next_mark < c->nmarks && c->mark_off[c->next_mark] <= atomic_load(&c->rx))
      c->mark_t[c->next_mark++] = t;
    pthread_mutex_unlock(&c->mu);
    return t;
  }
  pthread_mutex_unlock(&c->mu);
  size_t done = 0;
  while (done < bytes) {
    size_t n = bytes - done < XS__CHUNK_BUF ? bytes - done : XS__CHUNK_BUF;
    ssize_t w = write(c->wfd, data, n); /* data: XS__CHUNK_BUF bytes */
    if (w > 0) {
      done += (size_t)w;
      continue;
    }
    if (w < 0 && errno != EAGAIN && errno != EINTR)
      return -1;
    if ((cancel && *cancel) || xs__now_s() > deadline)
      return -1;
    struct pollfd pf = {c->wfd, POLLOUT, 0};
    poll(&pf, 1, 10);
  }
  return xs__now_s();
}

/* The time the mark's last byte arrived, waiting for it; negative when
 * stopped by the deadline or cancel. */
double xs__rchan_delivered(xs__rchan *c, size_t mark, double deadline,
                           volatile int *cancel) {
  for (;;) {
    pthread_mutex_lock(&c->mu);
    double t = mark < c->nmarks ? c->mark_t[mark] : NAN;
    pthread_mutex_unlock(&c->mu);
    if (!isnan(t))
      return t;
    if ((cancel && *cancel) || xs__now_s() > deadline || atomic_load(&c->failed))
      return -1;
    sleep_s(20e-6);
  }
}

/* Wait until the reader has everything written so far. */
int xs__rchan_drained(xs__rchan *c, double deadline, volatile int *cancel) {
  while (atomic_load(&c->rx) < c->tx) {
    if ((cancel && *cancel) || xs__now_s() > deadline)
      return -1;
    sleep_s(50e-6);
  }
  return 0;
}
