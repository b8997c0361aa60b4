/*
 * common.c: exit codes, error messages and output files for the xstage
 * command's subcommands.
 */
#define _XOPEN_SOURCE 700 /* POSIX.1-2008 with realpath */
#include "common.h"

#include <errno.h>
#include <getopt.h>
#include <math.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

int cli_exit_code(xs_status st) {
  switch (st) {
  case XS_OK:
    return EXIT_OK;
  case XS_IO:
  case XS_NOMEM:
  case XS_INTERNAL:
  case XS_TIMEOUT:
    return EXIT_MACHINE;
  default:
    return EXIT_INPUT;
  }
}

/* "xstage CMD: MESSAGE TAIL\n" on standard error, the message's control
 * characters written as \xNN (it quotes arguments and file contents) */
static void vsay(const char *cmd, const char *tail, const char *fmt, va_list ap) {
  char raw[4096], safe[4096];
  vsnprintf(raw, sizeof raw, fmt, ap);
  fprintf(stderr, "xstage %s: %s%s\n", cmd, cli_text(raw, safe, sizeof safe), tail);
}

void cli_say(const char *cmd, const char *fmt, ...) {
  va_list ap;
  va_start(ap, fmt);
  vsay(cmd, "", fmt, ap);
  va_end(ap);
}

int cli_error(const char *cmd, const xs_error *err) {
  cli_say(cmd, "%s", err->message);
  return cli_exit_code(err->status);
}

int cli_usage_error(const char *cmd, const char *fmt, ...) {
  char tail[96];
  snprintf(tail, sizeof tail, " (see xstage %s --help)", cmd);
  va_list ap;
  va_start(ap, fmt);
  vsay(cmd, tail, fmt, ap);
  va_end(ap);
  return EXIT_INPUT;
}

const char *cli_profile_text(const xs_profile *profile) {
  static char buf[192];
  return cli_text(xs_profile_name(profile), buf, sizeof buf);
}

int cli_profile_builtin(const char *arg) {
  /* as xs_profile_load reads it: a built-in name, then a file, then
   * NAME+FABRIC (a built-in GPU on a built-in fabric) */
  struct stat sb;
  const char *plus = strchr(arg, '+');
  size_t n = plus && stat(arg, &sb) ? (size_t)(plus - arg) : strlen(arg);
  for (size_t i = 0; i < xs_builtin_profile_count(); i++)
    if (strlen(xs_builtin_profile_name(i)) == n && !strncmp(xs_builtin_profile_name(i), arg, n))
      return 1;
  return 0;
}

/* the profile the command loaded from a file, and that file (one command
 * a process: the CLI loads its --profile once) */
static const xs_profile *file_profile;
static const char *file_path;

void cli_profile_from(const char *arg, const xs_profile *profile) {
  int file = arg && profile && !cli_profile_builtin(arg);
  file_profile = file ? profile : NULL;
  file_path = file ? arg : NULL;
}

const char *cli_profile_given(const xs_profile *profile) {
  static char buf[512];
  if (!profile || profile != file_profile)
    return cli_profile_text(profile);
  char f[192];
  snprintf(buf, sizeof buf, "the profile file %s (named %s)",
           cli_text(file_path, f, sizeof f), cli_profile_text(profile));
  return buf;
}

void cli_profile_leads(const xs_profile *profile) {
  if (!profile || profile != file_profile) {
    printf("\n  %s's numbers are leads unless measured: `xstage profiles show %s`\n",
           cli_profile_text(profile), cli_profile_text(profile));
    return;
  }
  printf("\n  %s: its numbers are leads unless measured:\n"
         "  `xstage profiles show %s`\n", cli_profile_given(profile),
         cli_name_text(file_path));
}

const char *cli_name_text(const char *name) {
  static char buf[192];
  return cli_text(name, buf, sizeof buf);
}

int cli_out_of_memory(const char *cmd) {
  fprintf(stderr, "xstage %s: out of memory\n", cmd);
  return EXIT_MACHINE;
}

int cli_once(const char *cmd, const char *flag, const char **slot, const char *value) {
  if (*slot)
    return cli_usage_error(cmd, "%s given twice (\"%s\", \"%s\"): give it once", flag,
                           *slot, value);
  *slot = value;
  return 0;
}

int cli_bad_flag(const char *cmd, int argc, char **argv) {
  extern int optind;
  const char *arg = optind >= 1 && optind - 1 < argc ? argv[optind - 1] : "?";
  return cli_usage_error(cmd, "flag %s is unknown or needs a value", arg);
}

int cli_refuse_overwrite(const char *cmd, const char *const *inputs, size_t nin,
                         const char *const *outputs, size_t nout) {
  for (size_t o = 0; o < nout; o++) {
    struct stat so;
    xs_error err;
    if (!outputs[o] || !strcmp(outputs[o], "-"))
      continue;
    /* a directory, a read-only file, a missing folder: now, not after
     * the work */
    if (xs_check_output(outputs[o], &err))
      return cli_error(cmd, &err);
    int out_exists = stat(outputs[o], &so) == 0;
    for (size_t i = 0; i < nin; i++) {
      struct stat si;
      if (!inputs[i] || stat(inputs[i], &si) != 0)
        continue;
      if (!strcmp(inputs[i], outputs[o]) ||
          (out_exists && si.st_dev == so.st_dev && si.st_ino == so.st_ino)) {
        cli_say(cmd, "%s would overwrite the input %s: write elsewhere", outputs[o],
                inputs[i]);
        return EXIT_INPUT;
      }
    }
  }
  return EXIT_OK;
}

/* a C0 control or DEL (1), a C1 control, two bytes in UTF-8 (2), or 0 */
static size_t control_at(const unsigned char *u) {
  if (u[0] < 0x20 || u[0] == 0x7f)
    return 1;
  return u[0] == 0xc2 && u[1] >= 0x80 && u[1] <= 0x9f ? 2 : 0;
}

const char *cli_text_cut(const char *s, size_t max, char *buf, size_t size) {
  const unsigned char *u = (const unsigned char *)s;
  size_t i = 0, n = 0;
  while (u[i] && !control_at(u + i))
    i++;
  if (!u[i] && i <= max)
    return s;
  if (max > size - 1)
    max = size - 1;
  for (i = 0; u[i];) {
    size_t c = control_at(u + i), len = 1;
    if (c) {
      if (n + 4 > max)
        break;
      n += (size_t)snprintf(buf + n, size - n, "\\x%02x", u[i + c - 1]);
      i += c;
      continue;
    }
    /* a character's bytes go whole or not at all */
    while (u[i + len] && (u[i + len] & 0xC0) == 0x80 && len < 4)
      len++;
    if (n + len > max)
      break;
    memcpy(buf + n, u + i, len);
    n += len, i += len;
  }
  buf[n] = '\0';
  return buf;
}

const char *cli_text(const char *s, char *buf, size_t size) {
  return cli_text_cut(s, (size_t)-1, buf, size);
}

int cli_parse_count(const char *cmd, const char *flag, const char *text, double lo,
                    double hi, double *out) {
  double v;
  xs_error err;
  if (xs_parse_count(text, &v, &err) || !(v >= lo && v <= hi))
    return cli_usage_error(cmd, "%s: expected a whole number from %.0f to %.0f, with an "
                                "optional k, M, G (10^3, 10^6, 10^9) or Ki, Mi, Gi "
                                "(2^10, 2^20, 2^30), got \"%s\"",
                           flag, lo, hi, text);
  *out = v;
  return 0;
}

const char *cli_data_file(const char *name, char *buf, size_t size) {
  char exe[4096], dirs[3][4200];
  size_t nd = 0;
  const char *env = getenv("XSTAGE_DATA_DIR");
  if (env && *env)
    snprintf(dirs[nd++], sizeof dirs[0], "%s", env);
  ssize_t n = readlink("/proc/self/exe", exe, sizeof exe - 1);
  if (n > 0) {
    exe[n] = '\0';
    char *slash = strrchr(exe, '/');
    if (slash) {
      *slash = '\0';
      snprintf(dirs[nd++], sizeof dirs[0], "%s/%s", exe, XSTAGE_DATA_REL);
    }
  }
  /* the source tree keeps published/ under data/, examples/ at the top */
  snprintf(dirs[nd++], sizeof dirs[0], "%s%s", XSTAGE_SOURCE_DIR,
           strncmp(name, "published/", 10) ? "" : "/data");
  for (size_t i = 0; i < nd; i++) {
    size_t len = strlen(dirs[i]) + strlen(name) + 2;
    char *path = malloc(len), *real = NULL;
    if (path) {
      snprintf(path, len, "%s/%s", dirs[i], name);
      if (access(path, R_OK) == 0)
        real = realpath(path, NULL);
      free(path);
    }
    if (real) {
      snprintf(buf, size, "%s", real);
      free(real);
      return buf;
    }
  }
  size_t at = (size_t)snprintf(buf, size, "no %s in", name);
  for (size_t i = 0; i < nd && at < size; i++)
    at += (size_t)snprintf(buf + at, size - at, "%s %s", i ? "," : "", dirs[i]);
  return NULL;
}

int cli_stdout_errno;

void cli_flush_stdout(void) {
  if (fflush(stdout) != 0 && !cli_stdout_errno)
    cli_stdout_errno = errno;
}

int cli_write_output(const char *cmd, const char *path, const char *text) {
  if (!*path) {
    fprintf(stderr, "xstage %s: an output path is empty (- is standard output)\n", cmd);
    return EXIT_INPUT;
  }
  if (strcmp(path, "-") == 0) {
    if (fputs(text, stdout) == EOF && !cli_stdout_errno)
      cli_stdout_errno = errno;
    return EXIT_OK;
  }
  /* what was printed goes first: the path may be /dev/stdout */
  cli_flush_stdout();
  fflush(stderr);
  xs_error err;
  if (xs_write_file_atomic(path, text, strlen(text), &err))
    return cli_error(cmd, &err);
  return EXIT_OK;
}

int cli_write_timelines(const char *cmd, const xs_program *program,
                        const xs_profile *profile, const xs_result *result,
                        const xs_timeline *timeline, const char *trace_path,
                        const char *svg_path) {
  int rc = EXIT_OK;
  if (trace_path) {
    char *t = xs_timeline_trace_json(program, profile, result, timeline);
    if (!t) {
      fprintf(stderr, "xstage %s: out of memory writing the trace\n", cmd);
      return EXIT_MACHINE;
    }
    rc = cli_write_output(cmd, trace_path, t);
    free(t);
    if (rc)
      return rc;
  }
  if (svg_path) {
    char *t = xs_timeline_svg(program, profile, result, timeline);
    if (!t) {
      fprintf(stderr, "xstage %s: out of memory drawing the SVG\n", cmd);
      return EXIT_MACHINE;
    }
    rc = cli_write_output(cmd, svg_path, t);
    free(t);
  }
  return rc;
}

int cli_write_document(const char *cmd, const char *path, char *text) {
  size_t n = text ? strlen(text) : 0;
  char *line = text ? malloc(n + 2) : NULL;
  int rc = EXIT_MACHINE;
  if (line) {
    memcpy(line, text, n);
    memcpy(line + n, "\n", 2);
    rc = cli_write_output(cmd, path, line);
  } else {
    fprintf(stderr, "xstage %s: out of memory\n", cmd);
  }
  free(text);
  free(line);
  return rc;
}

int cli_timeline_fits(const char *cmd, const xs_program *program,
                      const char *trace, const char *svg) {
  if (!trace && !svg)
    return EXIT_OK;
  double ops = 0;
  for (size_t w = 0; w < xs_program_worker_count(program); w++)
    ops += (double)xs_program_op_count(program, w);
  if (ops > CLI_TIMELINE_OPS)
    return cli_usage_error(cmd, "%s: the program has %.3g ops, more than the timeline's "
                                "limit of %g (a trace of about 200 MB)",
                           trace ? "--trace" : "--svg", ops, CLI_TIMELINE_OPS);
  return EXIT_OK;
}

int cli_program_outputs(const char *cmd, const xs_program *program,
                        const xs_profile *profile, xs_model model,
                        const char *emit, const char *trace, const char *svg) {
  int rc = EXIT_OK;
  if (emit && (rc = cli_write_document(cmd, emit, xs_program_to_json(program))))
    return rc;
  if (!trace && !svg)
    return EXIT_OK;
  int rc0 = cli_timeline_fits(cmd, program, trace, svg);
  if (rc0)
    return rc0;
  xs_timeline *tl = xs_timeline_new();
  xs_eval_options o = {0, 0, NULL, tl};
  xs_result *r = NULL;
  xs_error err;
  if (!tl)
    rc = EXIT_MACHINE;
  else if (xs_evaluate(program, profile, model, &o, &r, &err))
    rc = cli_error(cmd, &err);
  else
    rc = cli_write_timelines(cmd, program, profile, r, tl, trace, svg);
  xs_result_free(r);
  xs_timeline_free(tl);
  return rc;
}

/* Under mpirun: start MPI and say which rank this is (rank 0 of 1
 * otherwise). */
static int sweep_ranks(const char *cmd, int *argc, char ***argv, int *rank,
                       int *ranks) {
  *rank = 0;
  *ranks = 1;
  if (!xs_mpi_launched())
    return EXIT_OK;
  xs_error err;
  if (!xs_mpi_built()) {
    /* every rank would print the whole sweep: say so once */
    const char *r = getenv("OMPI_COMM_WORLD_RANK");
    if (!r || strcmp(r, "0") == 0)
      fprintf(stderr, "xstage %s: started by mpirun, but this xstage was built "
                      "without MPI: install libopenmpi-dev and rebuild with "
                      "cmake -DXSTAGE_WITH_MPI=ON\n", cmd);
    return EXIT_INPUT;
  }
  if (xs_mpi_init(argc, argv, rank, ranks, &err))
    return cli_error(cmd, &err);
  return EXIT_OK;
}

int cli_sweep_run(const char *cmd, int *argc, char ***argv,
                  const cli_sweep_job *job) {
  int rank, ranks;
  int rc = sweep_ranks(cmd, argc, argv, &rank, &ranks);
  if (rc)
    return rc;
  xs_error err;
  char what[256];
  for (size_t i = 0; i < job->n && !rc; i++)
    if (job->check(job->ctx, i, &err)) {
      if (rank == 0) {
        job->describe(job->ctx, i, what, sizeof what);
        cli_say(cmd, "%s: %s", what, err.message);
      }
      rc = EXIT_INPUT;
    }
  int tty = isatty(2) && rank == 0;
  for (size_t i = (size_t)rank; i < job->n && !rc; i += (size_t)ranks) {
    if (job->plan(job->ctx, i, (char *)job->results + i * job->result_size, &err)) {
      job->describe(job->ctx, i, what, sizeof what);
      if (tty)
        fputc('\n', stderr);
      cli_say(cmd, "%s: %s", what, err.message);
      rc = cli_exit_code(err.status);
      break;
    }
    if (tty)
      fprintf(stderr, "\r[%-40.*s] %zu/%zu", (int)(40 * (i + 1) / job->n),
              "########################################", i + 1, job->n);
  }
  if (tty)
    fprintf(stderr, "\n");
  if (ranks > 1 && !rc &&
      xs_mpi_or_to_root(job->results, job->n * job->result_size, &err))
    rc = cli_error(cmd, &err);
  xs_mpi_finalize(); /* a no-op unless this sweep started MPI */
  return !rc && rank != 0 ? -1 : rc;
}

int cli_sweep_options(int argc, char **argv, void (*help)(FILE *),
                      cli_sweep_opts *o) {
  static const struct option opts[] = {
      {"profile", required_argument, 0, 'p'}, {"grid", required_argument, 0, 'g'},
      {"json", no_argument, 0, 'j'}, {"csv", no_argument, 0, 'c'},
      {"fabric", required_argument, 0, 'F'}, {"ep-library", required_argument, 0, 'l'},
      {"ep-kernel", required_argument, 0, 'k'},
      {"help", no_argument, 0, 'h'}, {0, 0, 0, 0}};
  const char *profile = NULL, *fabric = NULL;
  int c;
  memset(o, 0, sizeof *o);
  opterr = 0;
  optind = 2;
  while ((c = getopt_long(argc, argv, ":p:g:jcF:l:k:h", opts, NULL)) != -1) {
    switch (c) {
    case 'p':
      if (cli_once("sweep", "--profile", &profile, optarg))
        return EXIT_INPUT;
      break;
    case 'F':
      if (cli_once("sweep", "--fabric", &fabric, optarg))
        return EXIT_INPUT;
      break;
    case 'l':
      if (cli_once("sweep", "--ep-library", &o->ep_library, optarg))
        return EXIT_INPUT;
      break;
    case 'k':
      if (cli_once("sweep", "--ep-kernel", &o->ep_kernel, optarg))
        return EXIT_INPUT;
      break;
    case 'g': o->grid = optarg; break;
    case 'j': o->json = 1; break;
    case 'c': o->csv = 1; break;
    case 'h': help(stdout); return EXIT_OK;
    default: return cli_bad_flag("sweep", argc, argv);
    }
  }
  if (optind < argc)
    return cli_usage_error("sweep", "unexpected argument \"%s\"", argv[optind]);
  char named[256] = "";
  if (!profile && o->grid) {
    /* the grid may name its profile */
    char *text;
    size_t len;
    int rrc = cli_read_file("sweep", o->grid, CLI_INPUT_LIMIT, &text, &len);
    if (rrc)
      return rrc;
    xs_error gerr;
    xs_status gst = xs_sweep_grid_profile(text, len, o->grid, named, sizeof named, &gerr);
    free(text);
    if (gst)
      return cli_error("sweep", &gerr);
    if (named[0])
      profile = named;
  }
  if (!profile)
    return cli_usage_error("sweep", "--profile is required (or a grid's \"profile\")");
  if (o->json && o->csv)
    return cli_usage_error("sweep", "--json and --csv exclude each other");
  if ((o->ep_library || o->ep_kernel) && strcmp(argv[1], "megamoe"))
    return cli_usage_error("sweep", "--ep-library and --ep-kernel are for megamoe");
  xs_error err;
  if (xs_profile_load_fabric(profile, fabric, &o->profile, &err))
    return cli_error("sweep", &err);
  cli_profile_from(profile, o->profile);
  return -1;
}

int cli_read_file(const char *cmd, const char *path, size_t limit, char **text,
                  size_t *len) {
  FILE *f = fopen(path, "rb");
  if (!f) {
    cli_say(cmd, "%s: cannot open: %s", path, strerror(errno));
    return EXIT_INPUT;
  }
  char *t = NULL;
  size_t n = 0, cap = 0;
  for (;;) {
    if (n > limit) {
      free(t);
      fclose(f);
      cli_say(cmd, "%s: larger than the limit of %zu MiB for this input", path,
              limit >> 20);
      return EXIT_INPUT;
    }
    if (n + 1 >= cap) {
      /* room for one byte past the limit, to see that it is past */
      cap = cap && 2 * cap < limit + 2 ? 2 * cap : cap ? limit + 2 : 65536;
      char *m = realloc(t, cap);
      if (!m) {
        free(t);
        fclose(f);
        fprintf(stderr, "xstage %s: out of memory\n", cmd);
        return EXIT_MACHINE;
      }
      t = m;
    }
    size_t got = fread(t + n, 1, cap - n - 1, f);
    n += got;
    if (!got)
      break;
  }
  int bad = ferror(f), e = errno;
  fclose(f);
  if (bad) {
    free(t);
    cli_say(cmd, "%s: cannot read: %s", path, strerror(e));
    return EXIT_INPUT;
  }
  t[n] = '\0';
  *text = t;
  *len = n;
  return 0;
}

/* a schedule's knobs in words: "64x256, experts/wave 8", "128x256, lag 16,
 * group 4" (the tile, then the schedule's own) */
const char *cli_moe_knobs(xs_moe_schedule s, const xs_moe_pattern *k, char *buf,
                          size_t n) {
  int w = snprintf(buf, n, "%ux%u", k->block_m, k->block_n);
  size_t at = w > 0 && (size_t)w < n ? (size_t)w : 0;
  switch (s) {
  case XS_MOE_FUSED_WAVE:
    snprintf(buf + at, n - at, ", experts/wave %u", k->experts_per_wave);
    break;
  case XS_MOE_FUSED_DYNAMIC:
    snprintf(buf + at, n - at, ", warm-up %u", k->warmup);
    break;
  case XS_MOE_L1_THEN_L2:
  case XS_MOE_INTERLEAVED:
  case XS_MOE_FUSED_LAG:
    if (k->lag >= XS_MOE_LAG_ALL)
      snprintf(buf + at, n - at, ", all L1 first");
    else
      snprintf(buf + at, n - at, ", lag %u, group %u", k->lag, k->group);
    break;
  default:
    break;
  }
  return buf;
}

int cli_sources_init(cli_sources *s, const xs_validate_set *set, int kind, size_t width) {
  memset(s, 0, sizeof *s);
  s->width = width;
  s->names = malloc((set->nrows + 1) * sizeof *s->names);
  if (!s->names)
    return -1;
  for (size_t i = 0; i < set->nrows; i++) {
    const char *src = set->rows[i].source ? set->rows[i].source : "";
    if (kind >= 0 && set->rows[i].kind != kind)
      continue;
    size_t k = 0;
    while (k < s->n && strcmp(s->names[k], src))
      k++;
    if (k == s->n)
      s->names[s->n++] = src;
    char buf[64];
    if (strcmp(cli_text_cut(src, width, buf, sizeof buf), src))
      s->numbered = 1;
  }
  return 0;
}

void cli_sources_print(const cli_sources *s) {
  if (!s->numbered)
    return;
  printf("  sources (the rows name a source by its number):\n");
  for (size_t k = 0; k < s->n; k++) {
    char *buf = malloc(4 * strlen(s->names[k]) + 1);
    printf("    [%zu] %s\n", k + 1,
           buf ? cli_text(s->names[k], buf, 4 * strlen(s->names[k]) + 1) : "?");
    free(buf);
  }
  printf("\n");
}

const char *cli_source_label(const cli_sources *s, const char *source, char *buf,
                             size_t size) {
  if (!source)
    source = "";
  if (!s->numbered)
    return cli_text_cut(source, s->width, buf, size);
  size_t k = 0;
  while (k < s->n && strcmp(s->names[k], source))
    k++;
  char cut[64];
  snprintf(buf, size, "[%zu] %s", k + 1,
           cli_text_cut(source, s->width > 6 ? s->width - 5 : 1, cut, sizeof cut));
  return buf;
}

void cli_sources_free(cli_sources *s) {
  free(s->names);
  s->names = NULL;
}

void cli_wrap(const char *text, size_t indent, size_t col) {
  const size_t width = 96;
  const char *p = text;
  while (*p) {
    size_t room = width > col ? width - col : 20, n = strlen(p);
    if (n > room) {
      /* break at the last space that fits, else the first after it */
      size_t b = room;
      while (b > 0 && p[b] != ' ')
        b--;
      if (!b)
        while (p[b] && p[b] != ' ')
          b++;
      n = b;
    }
    printf("%.*s\n", (int)n, p);
    p += n;
    while (*p == ' ')
      p++;
    if (*p)
      printf("%*s", (int)indent, "");
    col = indent;
  }
}

int cli_moe_call(const xs_moe_config *c, const xs_profile *prof, xs_moe_schedule s,
                 const xs_moe_pattern *k, xs_moe_call *out) {
  xs_error err;
  return xs_moe_call_of(c, prof, s, k, out, &err) ? -1 : 0;
}

const char *cli_moe_call_label(const xs_moe_call *k, char *buf, size_t n) {
  snprintf(buf, n, "%s%s", k->proposal ? "proposal on " : "", k->label ? k->label : "");
  return buf;
}

void cli_moe_call_print(const xs_moe_call *k, size_t indent) {
  char line[640];
  printf("%*s", (int)indent, "");
  snprintf(line, sizeof line, "%s%s: %s", k->proposal ? "a proposal on " : "",
           k->version, k->kernel);
  cli_wrap(line, indent + 2, indent);
  for (size_t i = 0; i < k->nsteps; i++) {
    printf("%*s", (int)indent + 2, "");
    cli_wrap(xs_moe_call_step_text(&k->steps[i], line, sizeof line), indent + 6,
             indent + 2);
  }
  char kb[64] = "";
  if (k->picks_mask & XS_MOE_KNOB_BLOCK_M)
    snprintf(kb, sizeof kb, "BLOCK_M %u, BLOCK_N %u; ", k->picks.block_m,
             k->picks.block_n);
  printf("%*s", (int)indent, "");
  snprintf(line, sizeof line, "the kernel picks: %s%s", kb, k->order);
  cli_wrap(line, indent + 2, indent);
  if (k->proposal) {
    printf("%*s", (int)indent, "");
    snprintf(line, sizeof line, "the change it needs: %s", k->change);
    cli_wrap(line, indent + 2, indent);
  }
  printf("%*s", (int)indent, "");
  if (k->arm[0])
    snprintf(line, sizeof line, "read from %s; to check it against a measurement, "
                                "a validate row with arm %s%s%s%s (docs/validate.md)",
             k->source, k->arm, k->knobs[0] ? " and knobs \"" : "", k->knobs,
             k->knobs[0] ? "\"" : "");
  else
    snprintf(line, sizeof line, "read from %s", k->source);
  cli_wrap(line, indent + 2, indent);
}

/* a sweep's grid file (NULL: the default grid), its configs into *configs
 * (xs_free them): 0, or the exit code after saying what was wrong */
int cli_sweep_grid(const char *path, int fa, void **configs, size_t *n) {
  char *text = NULL;
  size_t len = 0;
  xs_error err;
  if (path) {
    int rrc = cli_read_file("sweep", path, CLI_INPUT_LIMIT, &text, &len);
    if (rrc)
      return rrc;
  }
  xs_status st = fa ? xs_fa_sweep_grid(text, len, path, (xs_fa_config **)configs, n, &err)
                    : xs_moe_sweep_grid(text, len, path, (xs_moe_config **)configs, n, &err);
  free(text);
  return st ? cli_error("sweep", &err) : EXIT_OK;
}

/* ---- validate's commands (megamoe, flashattn, ep) ---- */

void cli_validate_progress(size_t done, void *ctx) {
  (void)ctx;
  fprintf(stderr, "\r  predicting row %zu", done);
}

int cli_validate_fraction(const char *text, double *out) {
  char *end;
  *out = strtod(text, &end);
  if (end == text || *end || !(*out >= 0) || !isfinite(*out))
    return cli_usage_error("validate", "--fail-above: expected a fraction >= 0, "
                                       "got \"%s\"", text);
  return 0;
}

int cli_validate_load(const char **datap, const char *dflt, char *found, size_t size,
                      const char *svg, cli_validate_fn fn, xs_validate_set *set) {
  const char *data = *datap;
  if (!data && !(data = *datap = cli_data_file(dflt, found, size)))
    return cli_usage_error("validate", "--data FILE: %s (set XSTAGE_DATA_DIR to the "
                                       "folder of published/, or give --data)", found);
  if (cli_refuse_overwrite("validate", &data, 1, &svg, 1))
    return EXIT_INPUT;
  char *text;
  size_t len;
  int rrc = cli_read_file("validate", data, CLI_INPUT_LIMIT, &text, &len);
  if (rrc)
    return rrc;
  xs_error err;
  int tty = isatty(2);
  xs_status st = fn(text, len, data, set, tty ? cli_validate_progress : NULL, NULL, &err);
  free(text);
  if (tty)
    fprintf(stderr, "\r%40s\r", "");
  return st ? cli_error("validate", &err) : 0;
}

void cli_validate_bias_rows(const xs_validate_set *set, const char *head, int width,
                            const char *const *names, size_t n, int count_width, int bands,
                            cli_bias_fn bias) {
  printf("    %-*s", width, head);
  for (int b = 0; b < bands; b++) {
    const char *label;
    bias(set, NULL, b, &label, NULL);
    printf(" %14s", label);
  }
  printf("\n");
  for (size_t k = 0; k < n; k++) {
    char cut[64];
    printf("    %-*s", width, cli_text_cut(names[k], (size_t)width, cut, sizeof cut));
    for (int b = 0; b < bands; b++) {
      const char *label;
      size_t rows;
      double v = bias(set, names[k], b, &label, &rows);
      if (!isnan(v))
        printf(" %+8.1f%% (%*zu)", 100 * v, count_width, rows);
      else
        printf(" %14s", "-");
    }
    printf("\n");
  }
}

void cli_validate_bias_table(const xs_validate_set *set, const xs_validate_group *arms,
                             size_t narms, int bands, cli_bias_fn bias) {
  const char **names = malloc((narms + 1) * sizeof *names);
  if (!names)
    return;
  for (size_t k = 0; k < narms; k++)
    names[k] = arms[k].name;
  cli_validate_bias_rows(set, "arm", 20, names, narms, 2, bands, bias);
  free(names);
}

void cli_validate_intervals_print(const xs_validate_set *set) {
  xs_validate_cover *c = NULL;
  size_t n = 0, rows = 0, inside = 0;
  xs_error err;
  if (xs_validate_coverage(set, &c, &n, &err) || !n) {
    free(c);
    return;
  }
  printf("\n  80%% intervals (docs/validate.md \"Intervals\"): each row's from the residuals\n"
         "  of the other sources in its arm and band, so as a kernel never seen would\n"
         "  get it; how many rows they hold, and their median half-width:\n"
         "    %-28s %-9s %5s %8s %11s\n", "arm", "band", "rows", "inside", "half-width");
  for (size_t i = 0; i < n; i++) {
    char nm[40];
    rows += c[i].rows;
    inside += c[i].inside;
    printf("    %-28s %-9s %5zu %7.0f%% %10.1f%%%s\n", cli_text(c[i].arm, nm, sizeof nm),
           c[i].band_name, c[i].rows, 100.0 * (double)c[i].inside / (double)c[i].rows,
           100 * c[i].median_half_width,
           c[i].pooled == c[i].rows ? "  (pooled)" : c[i].pooled ? "  (some pooled)" : "");
  }
  printf("    %-28s %-9s %5zu %7.0f%%\n", "all", "", rows, 100.0 * (double)inside / (double)rows);
  free(c);
}

/* ---- sensitivity (plan megamoe and plan flashattn --sensitivity) ---- */

static const char *value_words(const char *key, double v, char *buf, size_t n) {
  size_t len = strlen(key);
  if (len > 4 && strcmp(key + len - 4, "_Bps") == 0)
    return xs_format_rate(v, buf, n);
  if (len > 2 && strcmp(key + len - 2, "_B") == 0)
    return xs_format_size(v, buf, n);
  if ((len > 2 && strcmp(key + len - 2, "_s") == 0) || strstr(key, "_cta_s."))
    return xs_format_time(v, buf, n);
  if (strstr(key, "flops_per_s"))
    snprintf(buf, n, "%.4g TFLOP/s", v / 1e12);
  else
    snprintf(buf, n, "%.4g", v);
  return buf;
}

void cli_sensitivity_print(const xs_profile *prof, const char *base_words, double base_s,
                           const cli_sens_row *s, size_t n) {
  char a[32];
  printf("\n  sensitivity of %s (%s) to each number of %s:\n"
         "  its time at four points of the number's range (from its kind of source:\n"
         "  a measurement its spread, a datasheet peak what kernels reach of it, a\n"
         "  lead its plausible range), and the choice a new plan makes where it\n"
         "  differs; the first row is what to measure first\n",
         base_words, xs_format_time(base_s, a, sizeof a), cli_profile_text(prof));
  int pw = 34; /* the parameter column: as wide as the longest key */
  for (size_t i = 0; i < n; i++)
    if ((int)strlen(s[i].param) > pw)
      pw = (int)strlen(s[i].param);
  printf("  %-*s %13s %-11s %-15s %31s  %s\n", pw, "parameter", "value", "kind", "range",
         "time at the four points", "new choice");
  for (size_t i = 0; i < n; i++) {
    char v[32], pc[4][16], nc[600] = "", rg[40];
    for (int f = 0; f < XS_MOE_SENS_FACTORS; f++) {
      if (isnan(s[i].time_change[f]))
        snprintf(pc[f], sizeof pc[f], "n/a");
      else
        snprintf(pc[f], sizeof pc[f], "%+.1f%%", s[i].time_change[f] * 100);
      if (s[i].changed[f]) {
        size_t used = strlen(nc);
        snprintf(nc + used, sizeof nc - used, "%sx%.3g: %s, %+.1f%%", used ? "; " : "",
                 s[i].factor[f], s[i].choice[f], s[i].replan_change[f] * 100);
      }
    }
    snprintf(rg, sizeof rg, "x%.3g-x%.3g", s[i].lo, s[i].hi);
    char pn[96], kn[64];
    printf("  %-*s %13s %-11s %-15s %7s %7s %7s %7s  %s\n", pw,
           cli_text(s[i].param, pn, sizeof pn),
           value_words(s[i].param, s[i].value, v, sizeof v),
           s[i].kind[0] ? cli_text(s[i].kind, kn, sizeof kn) : "-", rg, pc[0], pc[1], pc[2],
           pc[3], *nc ? nc : "-");
  }
  /* the leads the answer hangs on, and what would settle each */
  int header = 0;
  for (size_t i = 0; i < n; i++) {
    /* a new choice that beats keeping the old by more than 1% */
    int changed = 0;
    for (int f = 0; f < XS_MOE_SENS_FACTORS; f++)
      changed |= s[i].changed[f] && s[i].time_change[f] - s[i].replan_change[f] > 0.01;
    if (strcmp(s[i].kind, "lead") || (s[i].score < 0.01 && !changed))
      continue;
    if (!header++)
      printf("\n  leads (unmeasured numbers) the answer depends on:\n");
    char pn[96], st[512];
    printf("    %s: moves the time up to %.1f%%%s; to settle it: %s\n",
           cli_text(s[i].param, pn, sizeof pn), 100 * s[i].score,
           changed ? ", and another choice would win by over 1%" : "",
           cli_text(s[i].settle, st, sizeof st));
  }
  if (!header)
    printf("\n  no lead moves the answer by 1%% over its range\n");
  if (n) {
    char pn[96], st[512];
    printf("  to measure first: %s (%s)\n", cli_text(s[0].param, pn, sizeof pn),
           cli_text(s[0].settle, st, sizeof st));
  }
}
