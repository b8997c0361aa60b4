/*
 * probe.c: the measuring commands. `xstage probe` sweeps bursts over a real
 * channel and writes samples, `xstage fit` turns samples into a profile,
 * `xstage calibrate` does both, and `xstage replay` runs a program on the
 * real channel beside the models' predictions.
 */
#define _POSIX_C_SOURCE 200809L
#include "common.h"

#include <getopt.h>
#include <limits.h>
#include <jansson.h>
#include <math.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

/* the signal that stopped a probe, a calibration or a replay (0: none) */
static volatile int cancelled;
static void on_sigint(int sig) { cancelled = sig; }

static void catch_sigint(void) {
  struct sigaction sa;
  memset(&sa, 0, sizeof sa);
  sa.sa_handler = on_sigint;
  sigaction(SIGINT, &sa, NULL);
  sigaction(SIGTERM, &sa, NULL);
}

/* A failure's exit code: 128 + the signal when SIGINT or SIGTERM stopped
 * the command (130, 143), as a shell reports a process the signal killed. */
static int measure_error(const char *cmd, const xs_error *e) {
  int rc = cli_error(cmd, e);
  return cancelled ? 128 + cancelled : rc;
}

static int progress_bar(void *ctx, double done) {
  (void)ctx;
  fprintf(stderr, "\r[%-40.*s] %3.0f%%", (int)(40 * done),
          "########################################", 100 * done);
  return 0;
}

#define PROBE_FLAGS                                                          \
  "  --capacity B      pipe size or socket buffers (default 1MiB pipe, 256KiB tcp)\n" \
  "  --drain-rate R    the reader's rate, e.g. 200MB/s (default: as fast as it can)\n" \
  "  --max-bytes B     largest burst (default 4 x capacity)\n"              \
  "  --min-bytes B     smallest burst (default capacity / 16)\n"            \
  "  --sizes N         log-spaced burst sizes (default 14)\n"               \
  "  --repeats N       timed repetitions of each size (default 5)\n"        \
  "  --timeout T       bound on the whole probe (default 30s)\n"

/* Parse one probe option (by its long name) into o; 0 ok, else exit code. */
static int probe_option(const char *cmd, const char *name, const char *val,
                        xs_probe_options *o) {
  xs_error e;
  if (!strcmp(name, "capacity")) {
    if (xs_parse_size(val, &o->capacity_B, &e))
      return cli_usage_error(cmd, "--capacity: %s", e.message);
    if (o->capacity_B < 4096)
      return cli_usage_error(cmd, "--capacity: at least 4KiB, got \"%s\"", val);
    if (o->capacity_B > INT_MAX)
      return cli_usage_error(cmd, "--capacity: at most %d bytes (2GiB - 1, what the OS "
                                  "takes for a pipe's or a socket's size), got \"%s\"",
                             INT_MAX, val);
  } else if (!strcmp(name, "drain-rate") || !strcmp(name, "drain")) {
    if (!strcmp(val, "max"))
      o->drain_Bps = 0;
    else if (xs_parse_rate(val, &o->drain_Bps, &e))
      return cli_usage_error(cmd, "--drain-rate: %s", e.message);
  } else if (!strcmp(name, "max-bytes")) {
    if (xs_parse_size(val, &o->max_bytes, &e))
      return cli_usage_error(cmd, "--max-bytes: %s", e.message);
  } else if (!strcmp(name, "min-bytes")) {
    if (xs_parse_size(val, &o->min_bytes, &e))
      return cli_usage_error(cmd, "--min-bytes: %s", e.message);
  } else if (!strcmp(name, "sizes") || !strcmp(name, "repeats")) {
    double v;
    int prc = cli_parse_count(cmd, name[0] == 's' ? "--sizes" : "--repeats", val, 1, 1000, &v);
    if (prc)
      return prc;
    if (name[0] == 's')
      o->sizes = (unsigned)v;
    else
      o->repeats = (unsigned)v;
  } else if (!strcmp(name, "width")) {
    /* replay on cuda-*: WORKER:CTAS, repeatable; the library checks them */
    static char widths[1024];
    size_t len = strlen(widths);
    if (len + strlen(val) + 2 > sizeof widths)
      return cli_usage_error(cmd, "width: too many widths");
    snprintf(widths + len, sizeof widths - len, "%s%s", len ? " " : "", val);
    o->cuda_widths = widths;
  } else if (!strcmp(name, "threads")) {
    /* a count here; the library checks the rest (xs_replay_check) */
    double v;
    int prc = cli_parse_count(cmd, "threads", val, 1, 65536, &v);
    if (prc)
      return prc;
    o->cuda_threads = (unsigned)v;
  } else if (!strcmp(name, "timeout")) {
    if (xs_parse_time(val, &o->timeout_s, &e))
      return cli_usage_error(cmd, "--timeout: %s", e.message);
    if (!(o->timeout_s > 0))
      return cli_usage_error(cmd, "--timeout: must be more than 0, got \"%s\"", val);
  } else {
    return cli_usage_error(cmd, "unknown option \"%s\"", name);
  }
  return 0;
}

static const struct option probe_opts[] = {
    {"capacity", required_argument, 0, 1}, {"drain-rate", required_argument, 0, 1},
    {"max-bytes", required_argument, 0, 1}, {"min-bytes", required_argument, 0, 1},
    {"sizes", required_argument, 0, 1},    {"repeats", required_argument, 0, 1},
    {"timeout", required_argument, 0, 1},  {"output", required_argument, 0, 'o'},
    {"svg", required_argument, 0, 's'},    {"json", no_argument, 0, 'j'},
    {"mode", required_argument, 0, 'm'},
    {"help", no_argument, 0, 'h'},         {0, 0, 0, 0}};

static int check_backend(const char *cmd, const char *backend) {
  char why[512];
  if (xs_backend_available(backend, why, sizeof why))
    return 0;
  fprintf(stderr, "xstage %s: %s\n", cmd, why);
  return EXIT_INPUT;
}

/* "  NAME          text" with the text wrapped at 78 columns */
static void print_wrapped(const char *name, const char *text) {
  const int indent = 16, width = 78 - indent;
  printf("  %-13s ", name);
  while (*text) {
    int n = (int)strlen(text);
    if (n > width) {
      n = width;
      while (n > 0 && text[n] != ' ')
        n--;
      if (n == 0)
        n = width;
    }
    printf("%.*s\n", n, text);
    text += n;
    while (*text == ' ')
      text++;
    if (*text)
      printf("%*s", indent, "");
  }
}

static char *probe_header(const char *backend, const xs_probe_options *o,
                          const xs_samples *s) {
  char *h = malloc(2048), host[256] = "";
  char a[32], b[32];
  gethostname(host, sizeof host - 1);
  time_t now = time(NULL);
  char when[64];
  strftime(when, sizeof when, "%Y-%m-%dT%H:%M:%SZ", gmtime(&now));
  const char *what = "";
  for (size_t i = 0; i < xs_backend_count(); i++)
    if (strcmp(backend, xs_backend_name(i)) == 0)
      what = xs_backend_description(i);
  if (!h)
    return NULL;
  int at = snprintf(h, 2048, "xstage %s probe %s on %s, %s\n%s\n", xs_version(), backend,
                    host, when, what);
  if (s->capacity_B > 0) /* a channel of a set size: pipe, tcp */
    snprintf(h + at, 2048 - (size_t)at,
             "capacity set %s, reader %s, %zu bursts kept, %u repeated (reader starved)",
             xs_format_size(s->capacity_B, a, sizeof a),
             o->drain_Bps > 0 ? xs_format_rate(o->drain_Bps, b, sizeof b) : "as fast as it can",
             s->n, s->retried);
  else
    snprintf(h + at, 2048 - (size_t)at,
             "%zu bursts kept; GPU timers for issue, host round trips for delivery", s->n);
  return h;
}

static int run_probe(const char *cmd, const char *backend, xs_probe_options *o,
                     xs_samples **s) {
  xs_error e;
  catch_sigint();
  o->cancel = &cancelled;
  int tty = isatty(2);
  if (tty)
    o->progress = progress_bar;
  xs_status st = xs_probe(backend, o, s, &e);
  if (tty)
    fprintf(stderr, "\n");
  if (st)
    return measure_error(cmd, &e);
  return 0;
}

/* mpirun -n 2 xstage probe mpi: rank 0 writes the samples */
static int probe_mpi(const char *mode, xs_probe_options *o, const char *outp,
                     int argc, char **argv) {
  xs_error e;
  int rank, size;
  if (xs_mpi_init(&argc, &argv, &rank, &size, &e))
    return cli_error("probe", &e);
  xs_samples *s = NULL;
  int rc = EXIT_OK;
  if (rank == 0 && isatty(2))
    o->progress = progress_bar;
  o->mpi_mode = mode;
  if (xs_probe("mpi", o, &s, &e)) {
    if (rank == 0)
      rc = cli_error("probe", &e);
    else
      rc = cli_exit_code(e.status);
  } else if (rank == 0) {
    if (isatty(2))
      fprintf(stderr, "\n");
    char h[512], host[256] = "";
    gethostname(host, sizeof host - 1);
    snprintf(h, sizeof h,
             "xstage %s probe mpi (%s) between ranks 0 and 1 of %d, rank 0 on %s\n"
             "delivery timed by round trips from rank 0 (no clock sync)",
             XSTAGE_VERSION, mode, size, host);
    char *csv = xs_samples_to_csv(s, h);
    rc = csv ? cli_write_output("probe", outp, csv) : EXIT_MACHINE;
    free(csv);
  }
  xs_samples_free(s);
  xs_mpi_finalize();
  return rc;
}

int cmd_probe(int argc, char **argv) {
  xs_probe_options o;
  memset(&o, 0, sizeof o);
  const char *outp = "-", *mode = "isend";
  int c, idx;
  opterr = 0;
  optind = 1;
  while ((c = getopt_long(argc, argv, ":o:h", probe_opts, &idx)) != -1) {
    if (c == 'h') {
      printf("usage: xstage probe BACKEND [options] [-o SAMPLES.csv]\n\n"
             "Measures a real channel: bursts of log-spaced sizes from an empty channel,\n"
             "each row the time the writer was busy issuing (issue_s) and when the reader\n"
             "held the last byte (deliver_s). Backends:\n");
      for (size_t i = 0; i < xs_backend_count(); i++) {
        char why[512];
        const char *name = xs_backend_name(i);
        print_wrapped(name, xs_backend_description(i));
        if (!xs_backend_available(name, why, sizeof why)) {
          char line[600];
          snprintf(line, sizeof line, "(not usable here: %s)", why);
          print_wrapped("", line);
        }
      }
      printf("\n" PROBE_FLAGS "  --mode M          mpi: isend (default) or put\n"
             "  -o, --output FILE samples CSV (default standard output)\n");
      return EXIT_OK;
    }
    if (c == 'o')
      outp = optarg;
    else if (c == 'm')
      mode = optarg;
    else if (c == 1) {
      int rc = probe_option("probe", probe_opts[idx].name, optarg, &o);
      if (rc)
        return rc;
    } else if (c == 's' || c == 'j')
      return cli_usage_error("probe", "--%s is not a probe flag",
                             probe_opts[idx].name);
    else
      return cli_bad_flag("probe", argc, argv);
  }
  if (optind != argc - 1)
    return cli_usage_error("probe", "expected one backend (xstage probe --help lists them)");
  const char *backend = argv[optind];
  if (strcmp(backend, "mpi") == 0)
    return xs_mpi_built() ? probe_mpi(mode, &o, outp, argc, argv) : check_backend("probe", backend);
  int rc = check_backend("probe", backend);
  if (rc)
    return rc;
  xs_samples *s;
  if ((rc = run_probe("probe", backend, &o, &s)))
    return rc;
  char *h = probe_header(backend, &o, s);
  char *csv = xs_samples_to_csv(s, h);
  rc = csv ? cli_write_output("probe", outp, csv) : EXIT_MACHINE;
  free(h);
  free(csv);
  xs_samples_free(s);
  return rc;
}

static void print_fit(const xs_fit *f, const xs_samples *s) {
  char a[32], b[32], d[32];
  printf("fit of %zu samples (%s):\n", f->rows, s->backend[0] ? s->backend : "unknown backend");
  printf("  %-22s %12s  +- %s\n", "injection rate", xs_format_rate(f->inject_Bps, a, sizeof a),
         xs_format_rate(f->inject_sd, b, sizeof b));
  printf("  %-22s %12s  +- %s   (delivery slope: %s)\n", "drain rate",
         xs_format_rate(f->drain_Bps, a, sizeof a), xs_format_rate(f->drain_sd, b, sizeof b),
         xs_format_rate(f->drain_from_delivery_Bps, d, sizeof d));
  printf("  %-22s %12s  +- %s   (knee at %s)\n", "in-flight capacity",
         xs_format_size(f->capacity_B, a, sizeof a), xs_format_size(f->capacity_sd, b, sizeof b),
         xs_format_size(f->knee_B, d, sizeof d));
  printf("  %-22s %12s  +- %s\n", "latency", xs_format_time(f->latency_s, a, sizeof a),
         xs_format_time(f->latency_sd, b, sizeof b));
  printf("  %-22s %12s\n", "per-send overhead", xs_format_time(f->overhead_s, a, sizeof a));
  printf("  residuals (rms): issue %s, delivery %s\n", xs_format_time(f->rms_issue_s, a, sizeof a),
         xs_format_time(f->rms_deliver_s, b, sizeof b));
  if (s->capacity_B > 0 || s->drain_Bps > 0) {
    printf("  as set: capacity %s", xs_format_size(s->capacity_B, a, sizeof a));
    if (s->drain_Bps > 0)
      printf(", drain %s (fit %+.1f%%, capacity %+.1f%%)",
             xs_format_rate(s->drain_Bps, b, sizeof b), 100 * (f->drain_Bps / s->drain_Bps - 1),
             100 * (f->capacity_B / s->capacity_B - 1));
    printf("\n");
  }
  if (f->warning[0])
    printf("  warning: %s\n", f->warning);
}

static int write_profile(const char *cmd, const char *path, const xs_fit *f,
                         const xs_samples *s) {
  char src[1024], when[64];
  time_t now = time(NULL);
  strftime(when, sizeof when, "%Y-%m-%dT%H:%M:%SZ", gmtime(&now));
  snprintf(src, sizeof src,
           "measured by xstage %s on %s: %zu bursts, piecewise-linear fit of issue "
           "time (knee scanned) and a line through delivery time; bootstrap sd: "
           "inject %.3g B/s, drain %.3g B/s, capacity %.3g B%s%s",
           XSTAGE_VERSION, when, f->rows, f->inject_sd, f->drain_sd, f->capacity_sd,
           f->warning[0] ? "; warning: " : "", f->warning);
  char name[64];
  snprintf(name, sizeof name, "%s-measured", s->backend[0] ? s->backend : "channel");
  xs_profile *p = xs_fit_profile(f, name, s->backend[0] ? s->backend : "channel", src);
  char *t = p ? xs_profile_to_json(p) : NULL;
  xs_profile_free(p);
  return cli_write_document(cmd, path, t);
}

/* Issue and delivery time against burst size, the fit over them. */
static char *fit_svg(const xs_samples *s, const xs_fit *f) {
  double xmax = 0, ymax = 0;
  for (size_t i = 0; i < s->n; i++) {
    xmax = fmax(xmax, s->rows[i].bytes);
    ymax = fmax(ymax, fmax(s->rows[i].issue_s, s->rows[i].deliver_s));
  }
  xmax *= 1.05, ymax *= 1.1;
  size_t cap = 4096 + s->n * 256;
  char *o = malloc(cap);
  if (!o)
    return NULL;
  size_t n = 0;
  double W = 800, H = 480, L = 80, B = 420, PW = 690, PH = 380;
#define PX(b) (L + (b) / xmax * PW)
#define PY(t) (B - (t) / ymax * PH)
  n += (size_t)snprintf(o + n, cap - n,
      "<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n<svg xmlns=\"http://www.w3.org/2000/svg\" "
      "width=\"%.0f\" height=\"%.0f\" font-family=\"sans-serif\" font-size=\"12\">\n"
      "<rect width=\"100%%\" height=\"100%%\" fill=\"white\"/>\n"
      "<text x=\"%.0f\" y=\"22\" font-size=\"14\" font-weight=\"bold\">%s: issue and delivery "
      "time against burst size, and the fit</text>\n"
      "<rect x=\"%.0f\" y=\"%.0f\" width=\"%.0f\" height=\"%.0f\" fill=\"none\" stroke=\"#999\"/>\n",
      W, H, L, s->backend[0] ? s->backend : "samples", L, B - PH, PW, PH);
  for (size_t i = 0; i < s->n; i++) {
    const xs_sample *r = &s->rows[i];
    n += (size_t)snprintf(o + n, cap - n,
        "<circle cx=\"%.1f\" cy=\"%.1f\" r=\"2.5\" fill=\"#59a14f\"/>"
        "<circle cx=\"%.1f\" cy=\"%.1f\" r=\"2.5\" fill=\"#4e79a7\"/>\n",
        PX(r->bytes), PY(r->issue_s), PX(r->bytes), PY(r->deliver_s));
  }
  double knee = isfinite(f->knee_B) ? f->knee_B : xmax;
  n += (size_t)snprintf(o + n, cap - n,
      "<polyline fill=\"none\" stroke=\"#59a14f\" stroke-width=\"1.5\" points=\"%.1f,%.1f %.1f,%.1f %.1f,%.1f\"/>\n"
      "<line x1=\"%.1f\" y1=\"%.1f\" x2=\"%.1f\" y2=\"%.1f\" stroke=\"#4e79a7\" stroke-width=\"1.5\"/>\n",
      PX(0), PY(f->overhead_s), PX(knee), PY(f->overhead_s + knee / f->inject_Bps), PX(xmax),
      PY(f->overhead_s + knee / f->inject_Bps +
         (isfinite(f->knee_B) ? (xmax - knee) / f->drain_Bps : 0)),
      PX(0), PY(f->latency_s), PX(xmax), PY(f->latency_s + xmax / f->drain_from_delivery_Bps));
  char a[32], b[32], d[32], xa[32], ya[32];
  if (isfinite(f->knee_B))
    n += (size_t)snprintf(o + n, cap - n,
        "<line x1=\"%.1f\" y1=\"%.0f\" x2=\"%.1f\" y2=\"%.0f\" stroke=\"#e15759\" stroke-dasharray=\"5,4\"/>"
        "<text x=\"%.1f\" y=\"%.0f\" fill=\"#e15759\">knee %s (C = %s)</text>\n",
        PX(knee), B, PX(knee), B - PH, PX(knee) + 4, B - PH + 14,
        xs_format_size(knee, a, sizeof a), xs_format_size(f->capacity_B, b, sizeof b));
  n += (size_t)snprintf(o + n, cap - n,
      "<text x=\"%.0f\" y=\"%.0f\" fill=\"#59a14f\">issue time (fit: R_inj %s, R_drain %s)</text>\n"
      "<text x=\"%.0f\" y=\"%.0f\" fill=\"#4e79a7\">delivery time (fit: B / %s + L)</text>\n"
      "<text x=\"%.0f\" y=\"%.0f\">burst size, up to %s</text>"
      "<text x=\"10\" y=\"%.0f\">time, up to %s</text>\n</svg>\n",
      L + 10, B - PH + 34, xs_format_rate(f->inject_Bps, a, sizeof a),
      xs_format_rate(f->drain_Bps, b, sizeof b), L + 10, B - PH + 52,
      xs_format_rate(f->drain_from_delivery_Bps, d, sizeof d), L + PW / 2 - 60, B + 30,
      xs_format_size(xmax, xa, sizeof xa), B - PH - 8, xs_format_time(ymax, ya, sizeof ya));
#undef PX
#undef PY
  return o;
}

int cmd_fit(int argc, char **argv) {
  if (argc >= 2 && !strcmp(argv[1], "megamoe"))
    return cmd_fit_megamoe(argc - 1, argv + 1);
  static const struct option opts[] = {{"output", required_argument, 0, 'o'},
                                       {"help", no_argument, 0, 'h'},
                                       {0, 0, 0, 0}};
  const char *outp = NULL;
  int c;
  opterr = 0;
  optind = 1;
  while ((c = getopt_long(argc, argv, ":o:h", opts, NULL)) != -1) {
    if (c == 'h') {
      printf("usage: xstage fit SAMPLES.csv [-o PROFILE.json]\n"
             "       xstage fit megamoe ... (see xstage fit megamoe --help)\n\n"
             "Estimates injection rate, drain rate, in-flight capacity, latency and the\n"
             "per-send overhead from samples (backend,bytes,gap_s,issue_s,deliver_s,repeat),\n"
             "with bootstrap uncertainties and residuals (docs/probe.md). fit megamoe fits\n"
             "the MegaMoE kernel model to kernel timings instead (docs/tune.md).\n\n"
             "  -o, --output FILE write the fitted profile (JSON) to FILE\n");
      return EXIT_OK;
    }
    if (c == 'o')
      outp = optarg;
    else
      return cli_bad_flag("fit", argc, argv);
  }
  if (optind != argc - 1)
    return cli_usage_error("fit", "expected one samples file");
  if (cli_refuse_overwrite("fit", (const char *const *)&argv[optind], 1, &outp, 1))
    return EXIT_INPUT;
  xs_samples *s;
  xs_error e;
  if (xs_samples_load_csv(argv[optind], &s, &e))
    return cli_error("fit", &e);
  xs_fit f;
  int rc = EXIT_OK;
  if (xs_fit_samples(s, &f, &e))
    rc = cli_error("fit", &e);
  else {
    print_fit(&f, s);
    if (outp)
      rc = write_profile("fit", outp, &f, s);
  }
  xs_samples_free(s);
  return rc;
}

int cmd_calibrate(int argc, char **argv) {
  xs_probe_options o;
  memset(&o, 0, sizeof o);
  const char *outp = NULL, *svg = NULL;
  int c, idx;
  opterr = 0;
  optind = 1;
  while ((c = getopt_long(argc, argv, ":o:h", probe_opts, &idx)) != -1) {
    if (c == 'h') {
      printf("usage: xstage calibrate BACKEND [options] [-o PROFILE.json] [--svg FILE]\n\n"
             "Probe, then fit, in one step. BACKEND: pipe, tcp, or a CUDA probe\n"
             "(cuda-host, cuda-tma, cuda-ce, cuda-p2p, cuda-p2p-tma); see xstage\n"
             "probe --help. For mpi, run xstage probe under mpirun, then xstage fit.\n\n"
             PROBE_FLAGS "  -o, --output FILE the fitted profile\n"
             "  --svg FILE        the samples with the fitted curves and the knee\n");
      return EXIT_OK;
    }
    if (c == 'o')
      outp = optarg;
    else if (c == 's')
      svg = optarg;
    else if (c == 1) {
      int rc = probe_option("calibrate", probe_opts[idx].name, optarg, &o);
      if (rc)
        return rc;
    } else if (c == 'm' || c == 'j')
      return cli_usage_error("calibrate", "--%s is not a calibrate flag", probe_opts[idx].name);
    else
      return cli_bad_flag("calibrate", argc, argv);
  }
  if (optind != argc - 1)
    return cli_usage_error("calibrate", "expected one backend (xstage probe --help lists "
                                        "them; mpi: probe under mpirun, then fit)");
  const char *backend = argv[optind];
  int rc = check_backend("calibrate", backend);
  if (rc)
    return rc;
  struct timespec w0, w1;
  clock_gettime(CLOCK_MONOTONIC, &w0);
  xs_samples *s;
  if ((rc = run_probe("calibrate", backend, &o, &s)))
    return rc;
  xs_fit f;
  xs_error e;
  if (xs_fit_samples(s, &f, &e)) {
    xs_samples_free(s);
    return cli_error("calibrate", &e);
  }
  clock_gettime(CLOCK_MONOTONIC, &w1);
  /* --timeout bounds the probe and the fit together, and a signal during
   * the fit stops it too: in either case nothing is written */
  double took = (double)(w1.tv_sec - w0.tv_sec) + 1e-9 * (double)(w1.tv_nsec - w0.tv_nsec);
  double limit = o.timeout_s > 0 ? o.timeout_s : 30;
  if (cancelled || took > limit) {
    xs_samples_free(s);
    if (cancelled) {
      fprintf(stderr, "xstage calibrate: %s calibration interrupted\n", backend);
      return 128 + cancelled;
    }
    fprintf(stderr, "xstage calibrate: %s calibration: probe and fit not done within "
                    "--timeout %g s\n", backend, limit);
    return EXIT_MACHINE;
  }
  print_fit(&f, s);
  printf("  calibration took %.2f s, %u bursts repeated because the reader starved\n", took,
         s->retried);
  if (outp)
    rc = write_profile("calibrate", outp, &f, s);
  if (!rc && svg) {
    char *t = fit_svg(s, &f);
    rc = t ? cli_write_output("calibrate", svg, t) : EXIT_MACHINE;
    free(t);
  }
  xs_samples_free(s);
  return rc;
}

/* "pipe:capacity=1MiB,drain=200MB/s" */
static int parse_channel(const char *spec, char *backend, size_t bsize,
                         xs_probe_options *o) {
  const char *colon = strchr(spec, ':');
  size_t n = colon ? (size_t)(colon - spec) : strlen(spec);
  if (n == 0 || n >= bsize)
    return cli_usage_error("replay", "--channel: expected BACKEND[:opt=value,...]");
  memcpy(backend, spec, n);
  backend[n] = '\0';
  if (!colon)
    return 0;
  char opts[512];
  if (strlen(colon + 1) >= sizeof opts)
    return cli_usage_error("replay", "--channel: the options are longer than %zu characters",
                           sizeof opts - 1);
  snprintf(opts, sizeof opts, "%s", colon + 1);
  for (char *tok = strtok(opts, ","); tok; tok = strtok(NULL, ",")) {
    char *eq = strchr(tok, '=');
    if (!eq)
      return cli_usage_error("replay", "--channel: \"%s\" is not opt=value", tok);
    *eq = '\0';
    int rc = probe_option("replay", tok, eq + 1, o);
    if (rc)
      return rc;
  }
  return 0;
}

int cmd_replay(int argc, char **argv) {
  static const struct option opts[] = {{"program", required_argument, 0, 'f'},
                                       {"channel", required_argument, 0, 'c'},
                                       {"profile", required_argument, 0, 'p'},
                                       {"json", no_argument, 0, 'j'},
                                       {"help", no_argument, 0, 'h'},
                                       {0, 0, 0, 0}};
  const char *program = NULL, *chan = NULL, *profile = NULL;
  int json = 0, c;
  opterr = 0;
  optind = 1;
  while ((c = getopt_long(argc, argv, ":f:c:p:jh", opts, NULL)) != -1) {
    switch (c) {
    case 'f': program = optarg; break;
    case 'c': chan = optarg; break;
    case 'p': profile = optarg; break;
    case 'j': json = 1; break;
    case 'h':
      printf("usage: xstage replay --program F --channel BACKEND[:opt=value,...] [--profile P]\n"
             "                     [--json]\n\n"
             "Runs a program on a real channel (compute ops as timed spin waits or FMA\n"
             "loops, sends as real writes, waits and fences on real delivery) and prints\n"
             "the measured times beside burstgap's and blocking's predictions, from P or,\n"
             "without it, from a calibration of the same channel first.\n"
             "  pipe, tcp: one-worker programs; options capacity=B, drain=R (or max)\n"
             "  cuda-host, cuda-p2p: any program, in a persistent kernel; options\n"
             "    width=WORKER:CTAS (repeatable; other workers get one CTA), threads=N\n"
             "    (issuing threads per CTA, default 256)\n"
             "  all: timeout=T, and for the calibration max-bytes, min-bytes, sizes,\n"
             "  repeats; e.g. pipe:capacity=1MiB,drain=200MB/s or\n"
             "  cuda-host:width=sms:132,width=dispatch:16\n");
      return EXIT_OK;
    default: return cli_bad_flag("replay", argc, argv);
    }
  }
  if (optind < argc)
    return cli_usage_error("replay", "unexpected argument \"%s\"", argv[optind]);
  if (!program || !chan)
    return cli_usage_error("replay", "--program and --channel are required");
  char backend[32];
  xs_probe_options o;
  memset(&o, 0, sizeof o);
  int rc = parse_channel(chan, backend, sizeof backend, &o);
  if (rc)
    return rc;
  xs_error e;
  xs_program *prog;
  if (xs_program_load(program, &prog, &e))
    return cli_error("replay", &e);
  /* refuse bad options now, not after a calibration of seconds */
  if (xs_replay_check(prog, backend, &o, &e)) {
    cli_say("replay", "%s on --channel %s: %s", program, chan, e.message);
    xs_program_free(prog);
    return EXIT_INPUT;
  }
  if ((rc = check_backend("replay", backend))) {
    xs_program_free(prog);
    return rc;
  }
  xs_profile *base = NULL;
  if (profile) {
    if (xs_profile_load(profile, &base, &e)) {
      xs_program_free(prog);
      return cli_error("replay", &e);
    }
  } else {
    xs_samples *s;
    if ((rc = run_probe("replay", backend, &o, &s))) {
      xs_program_free(prog);
      return rc;
    }
    xs_fit f;
    if (xs_fit_samples(s, &f, &e)) {
      xs_samples_free(s);
      xs_program_free(prog);
      return cli_error("replay", &e);
    }
    base = xs_fit_profile(&f, "calibrated", backend, "calibrated by xstage replay");
    xs_samples_free(s);
  }
  /* one real channel carries every send: give each channel name the
   * program uses the profile's default channel */
  xs_profile *pred = xs_profile_new(xs_profile_name(base), xs_profile_source(base));
  size_t dc = xs_profile_default_channel(base);
  xs_profile_add_channel(pred, xs_profile_channel_name(base, dc), xs_profile_channel(base, dc), NULL);
  for (size_t s = 0; s < xs_program_send_count(prog); s++) {
    const char *cn = xs_program_send_channel(prog, s);
    if (cn && xs_profile_find_channel(pred, cn) < 0)
      xs_profile_add_channel(pred, cn, xs_profile_channel(base, dc), NULL);
  }
  xs_result *meas = NULL, *bg = NULL, *bl = NULL;
  xs_replay_info info;
  memset(&info, 0, sizeof info);
  o.info = &info; /* filled by the backends that run a kernel */
  catch_sigint();
  o.cancel = &cancelled;
  if (xs_evaluate(prog, pred, XS_MODEL_BURSTGAP, NULL, &bg, &e) ||
      xs_evaluate(prog, pred, XS_MODEL_BLOCKING, NULL, &bl, &e) ||
      xs_replay(prog, backend, &o, &meas, &e)) {
    rc = measure_error("replay", &e);
    goto done;
  }
  double ebg = bg->makespan_s / meas->makespan_s - 1, ebl = bl->makespan_s / meas->makespan_s - 1;
  if (json) {
    json_t *root = json_pack("{s:s,s:s,s:{s:f,s:f,s:f},s:{s:f,s:f}}", "program",
                             xs_program_name(prog), "channel", chan, "makespan_s",
                             "measured", meas->makespan_s, "burstgap", bg->makespan_s,
                             "blocking", bl->makespan_s, "error", "burstgap", ebg,
                             "blocking", ebl);
    json_t *ss = json_array();
    for (size_t s = 0; s < meas->nsends; s++) {
      /* the whole id, however long its worker's name */
      size_t idn = strlen(xs_program_worker_name(prog, xs_program_send_worker(prog, s))) + 24;
      char *idb = malloc(idn);
      json_array_append_new(ss, !idb ? NULL : json_pack("{s:s,s:f,s:f,s:f,s:f,s:f,s:f}", "id",
          xs_program_send_id(prog, s, idb, idn), "issue_end_s", meas->sends[s].issue_end_s,
          "deliver_s", meas->sends[s].deliver_s, "burstgap_issue_end_s", bg->sends[s].issue_end_s,
          "burstgap_deliver_s", bg->sends[s].deliver_s, "blocking_issue_end_s",
          bl->sends[s].issue_end_s, "blocking_deliver_s", bl->sends[s].deliver_s));
      free(idb);
    }
    json_object_set_new(root, "sends", ss);
    if (info.ctas)
      json_object_set_new(root, "cuda", json_pack(
          "{s:i,s:i,s:f,s:f,s:f,s:f,s:f,s:f,s:I,s:I}", "ctas", (int)info.ctas, "threads",
          (int)info.threads, "timer_tick_s", info.timer_tick_s, "fma_per_ns", info.fma_per_ns,
          "one_way_s", info.one_way_s, "start_skew_s", info.start_skew_s,
          "host_minus_fence_median_s", info.host_minus_fence_median_s,
          "host_minus_fence_max_s", info.host_minus_fence_max_s, "tags_checked",
          (json_int_t)info.tags_checked, "tags_missing", (json_int_t)info.tags_missing));
    char *t = json_dumps(root, JSON_INDENT(2) | JSON_REAL_PRECISION(12));
    printf("%s\n", t);
    free(t);
    json_decref(root);
  } else {
    char a[32], b[32], d[32], f1[32], f2[32], f3[32], t1[256];
    printf("replay of \"%s\" on %s (predictions from %s)\n\n",
           cli_text(xs_program_name(prog), t1, sizeof t1), chan,
           profile ? profile : "a calibration just run");
    printf("  %-14s %11s %11s %11s   %11s %11s %11s\n", "send", "issued", "burstgap",
           "blocking", "delivered", "burstgap", "blocking");
    for (size_t s = 0; s < meas->nsends && s < 40; s++) {
      char idb[256];
      printf("  %-14s %11s %11s %11s   %11s %11s %11s\n",
             cli_text(xs_program_send_id(prog, s, idb, sizeof idb), t1, sizeof t1),
             xs_format_time(meas->sends[s].issue_end_s, a, sizeof a),
             xs_format_time(bg->sends[s].issue_end_s, b, sizeof b),
             xs_format_time(bl->sends[s].issue_end_s, d, sizeof d),
             xs_format_time(meas->sends[s].deliver_s, f1, sizeof f1),
             xs_format_time(bg->sends[s].deliver_s, f2, sizeof f2),
             xs_format_time(bl->sends[s].deliver_s, f3, sizeof f3));
    }
    printf("\n  makespan: measured %s, burstgap %s (%+.1f%%), blocking %s (%+.1f%%)\n",
           xs_format_time(meas->makespan_s, a, sizeof a), xs_format_time(bg->makespan_s, b, sizeof b),
           100 * ebg, xs_format_time(bl->makespan_s, d, sizeof d), 100 * ebl);
    if (info.ctas) {
      printf("  kernel: %u CTAs x %u threads (+1 tracker warp); timer step %s; compute loop "
             "%.3g iterations/ns\n", info.ctas, info.threads,
             xs_format_time(info.timer_tick_s, a, sizeof a), info.fma_per_ns);
      printf("  start: flag one-way %s, CTAs saw it within %s of each other\n",
             xs_format_time(info.one_way_s, a, sizeof a),
             xs_format_time(info.start_skew_s, b, sizeof b));
      printf("  delivery seen by the host minus the GPU's fence stamp: median %s, max %s\n",
             xs_format_time(info.host_minus_fence_median_s, a, sizeof a),
             xs_format_time(info.host_minus_fence_max_s, b, sizeof b));
      if (info.tags_checked)
        printf("  data check: %zu parts read when their flag was seen, %zu not yet written%s\n",
               info.tags_checked, info.tags_missing,
               info.tags_missing ? " (the flag overtook the data: delivery times are early)" : "");
      else
        printf("  data check: not made (%s)\n", strcmp(backend, "cuda-p2p") ? "the sends "
               "reuse the destination buffer" : "the host cannot read the peer's memory");
    }
  }
done:
  xs_result_free(meas);
  xs_result_free(bg);
  xs_result_free(bl);
  xs_profile_free(pred);
  xs_profile_free(base);
  xs_program_free(prog);
  return rc;
}
