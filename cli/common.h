/*
 * common.h: what the subcommands of the xstage command share: exit codes,
 * messages, flag values with units.
 */
#ifndef XSTAGE_CLI_COMMON_H
#define XSTAGE_CLI_COMMON_H

#include "xstage_measure.h"

#include <jansson.h>
#include <stdio.h>

/* Exit codes: 0 success, 1 a failure of the machine (I/O, memory, a
 * timeout), 2 bad input (a flag, a file's contents); probe, calibrate and
 * replay stopped by SIGINT or SIGTERM exit 128 + the signal (130, 143). */
enum { EXIT_OK = 0, EXIT_MACHINE = 1, EXIT_INPUT = 2 };

int cli_exit_code(xs_status st);
/* "xstage CMD: message" on stderr, its control characters escaped (the
 * message may quote an argument or a file's text) */
void cli_say(const char *cmd, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
/* Print "xstage CMD: message" to stderr and return the exit code. */
int cli_error(const char *cmd, const xs_error *err);
int cli_usage_error(const char *cmd, const char *fmt, ...)
    __attribute__((format(printf, 2, 3)));
/* A flag that takes one value, given once: *slot = value, or 2 after
 * saying that flag was given twice (the last one silently won). */
int cli_once(const char *cmd, const char *flag, const char **slot, const char *value);
/* Unknown flag or missing argument, from getopt's optopt/argv. */
int cli_bad_flag(const char *cmd, int argc, char **argv);
/* "xstage CMD: out of memory", exit status 1 (the machine, not the input) */
int cli_out_of_memory(const char *cmd);
/* The largest JSON file (a sweep's grid) and CSV file (validate's data, a
 * planner's config) the commands read; programs, profiles and samples go
 * through the library, which reads up to XS_INPUT_LIMIT_BYTES. */
#define CLI_INPUT_LIMIT ((size_t)64 << 20)
/* Read a whole input file (at most limit bytes) into *text (NUL-terminated,
 * free() it): 0, or the exit code (2 for a file that cannot be opened or
 * read or is over the limit, naming it and the limit) after saying what
 * was wrong. */
int cli_read_file(const char *cmd, const char *path, size_t limit, char **text,
                  size_t *len);
/* 0, or 2 after saying so when one of the outputs (NULL or "-": none)
 * names one of the inputs (NULL: none; a built-in profile's name is no
 * file), by the same path or another: the input would be overwritten;
 * or when xs_check_output refuses it (a directory, a read-only file, a
 * missing folder), before any work. */
int cli_refuse_overwrite(const char *cmd, const char *const *inputs, size_t nin,
                         const char *const *outputs, size_t nout);
/* A name from an input, safe to print on a terminal: s itself, or a copy
 * in buf (cut to size) with control characters (C0, DEL, C1) written as
 * \xNN, so that a name cannot move the cursor or recolour the screen. */
const char *cli_text(const char *s, char *buf, size_t size);
/* The same cut to at most max bytes, never inside a character or an
 * escape (for a column of fixed width). */
const char *cli_text_cut(const char *s, size_t max, char *buf, size_t size);
/* cli_text of a profile's name and of a config's, each into its own
 * static buffer (one of each per printf) */
const char *cli_profile_text(const xs_profile *profile);
/* Whether a --profile argument names a built-in profile (or NAME+FABRIC)
 * rather than a file. */
int cli_profile_builtin(const char *arg);
/* The profile a command loaded from --profile arg (a file when arg names
 * no built-in), for cli_profile_given and cli_profile_leads. */
void cli_profile_from(const char *arg, const xs_profile *profile);
/* A profile as --profile gave it: its name when built in, else "the profile
 * file FILE (named NAME)", so that a file is never called by the name it
 * only carries (a static buffer, as cli_profile_text's). */
const char *cli_profile_given(const xs_profile *profile);
/* A plan's closing line: whose numbers are leads, and the command that
 * lists their sources, with the file for a file. */
void cli_profile_leads(const xs_profile *profile);
const char *cli_name_text(const char *name);
/* A count flag ("--tokens 4k", "--sms 132", "1Mi": xs_parse_count) from
 * lo to hi into *out: 0, or the exit code after naming the flag, what it
 * takes and what it got. */
int cli_parse_count(const char *cmd, const char *flag, const char *text, double lo,
                    double hi, double *out);
/* A file of xstage's data (share/xstage when installed): "published/
 * megamoe.csv", "examples/hol.json". Looked for in XSTAGE_DATA_DIR, then
 * beside this executable (BINDIR/../share/xstage), then in the source
 * tree it was built from. The path into buf, or NULL after writing where
 * it looked into buf. */
const char *cli_data_file(const char *name, char *buf, size_t size);
/* Write text to path atomically, or to stdout when path is "-". */
int cli_write_output(const char *cmd, const char *path, const char *text);
/* Standard output is checked once, by main() when the command returns
 * (exit 1 and "writing standard output: why" when a write failed). A
 * failed write's errno, kept for that message when glibc would lose it
 * (a large write goes past the buffer): cli_write_output and
 * cli_flush_stdout keep it. */
extern int cli_stdout_errno;
void cli_flush_stdout(void);

/* cli/csv.c: --csv of plan and validate. cli_csv_rows prints rows (a JSON
 * array of objects) as CSV: a header of every key in order of first
 * appearance, nested keys joined with "." (as the Python package's
 * records()), a list of calls as their Python joined by "; ", another list
 * as its length, numbers exactly, fields quoted as RFC 4180 wants.
 * cli_csv_document takes the rows from a JSON document's member (an array,
 * or an object of rows by name, the name first under name_key) and, when
 * chosen_path names an object of the document, adds "recommended": whether
 * the row's match keys equal that object's. 0 or the exit code. */
struct json_t;
int cli_csv_rows(const char *cmd, struct json_t *rows);
/* plan's --json and --csv: refused together, --csv refused with
 * --sensitivity (what: the lines it prints); else *json 2 for --csv (the
 * JSON document, printed as CSV). 0 or the exit code. */
int cli_plan_format(const char *what, int csv, int sensitivity, int *json);
int cli_csv_document(const char *cmd, const char *text, const char *member,
                     const char *name_key, const char *chosen_path,
                     const char *const *match);

/* A MegaMoE schedule's knobs in words: "experts/wave 8", "lag 16, group
 * 4", "warm-up 2", "2:1" or "split 33" (searched), "-" for none. */
const char *cli_moe_knobs(xs_moe_schedule s, const xs_moe_pattern *k, char *buf,
                          size_t n);

/* cli/plan_table.c: --tokens-grid ("64,128", "64:4096:64", "16:8Ki:x2",
 * mixed; counts take k, M, Ki, Mi...; ascending, at most
 * XS_MOE_TABLE_MAX), --tokens-range ("64:4096", "64:4Ki"), --tolerance
 * ("0.01", "1%"), --schedules ("fused-wave,fused-lag"): 0 or the exit
 * code after saying what was wrong. */
int cli_parse_tokens_grid(const char *cmd, const char *flag, const char *text,
                          double **out, size_t *n);
int cli_parse_tokens_range(const char *cmd, const char *text, double range[2]);
int cli_parse_tolerance(const char *cmd, const char *text, double *out);
int cli_parse_schedules(const char *cmd, const char *text, unsigned *mask);
/* --header-prefix: it needs --emit-header, is a C identifier of at most
 * 64 characters, dflt when not given; 0, or the exit code after saying
 * what was wrong */
int cli_header_prefix(const char *cmd, const char *header, const char *prefix,
                      const char *dflt, const char **out);
/* The sources of a validation set as its text names them: each whole
 * when every one fits width, else by number ("[2] DeepGEMM PR 4...")
 * after a numbered list of the whole sources (cli_sources_print). kind:
 * the rows of that kind only (-1: every row). */
typedef struct cli_sources {
  const char **names; /* distinct, in order of first appearance */
  size_t n;
  size_t width;
  int numbered;
} cli_sources;
int cli_sources_init(cli_sources *s, const xs_validate_set *set, int kind, size_t width);
void cli_sources_print(const cli_sources *s);
const char *cli_source_label(const cli_sources *s, const char *source, char *buf,
                             size_t size);
void cli_sources_free(cli_sources *s);
/* text wrapped at 96 columns, every line after indent (the first line's
 * starting at column col, the lines after at indent) */
void cli_wrap(const char *text, size_t indent, size_t col);
/* The call of a MegaMoE option (xs_moe_call_of; 0, or -1 with nothing
 * filled), its label with "proposal on" before it when it is one, and the
 * whole call: its Python lines, what the kernel picks, the change a
 * proposal needs, the sources and the validate row, each line at indent */
int cli_moe_call(const xs_moe_config *c, const xs_profile *prof, xs_moe_schedule s,
                 const xs_moe_pattern *k, xs_moe_call *out);
const char *cli_moe_call_label(const xs_moe_call *k, char *buf, size_t n);
/* "fused-lag default (128x256, lag 14, group 4)" */
const char *cli_moe_option_words(const xs_moe_option *o, char *buf, size_t n);
void cli_moe_call_print(const xs_moe_call *k, size_t indent);
void cli_moe_pick_print(const xs_moe_config *cfg, const xs_profile *prof,
                        const xs_moe_pick *p, double tol);
/* How sure the recommendation is: the runner-up's margin, the finer grid. */
void cli_moe_certainty_print(const xs_moe_pick *p, const xs_moe_certainty *c,
                             double tol);
/* The recommended option's 80% interval, and whether it is a clear win
 * over the runner-up or too close to call (with what would settle it, on
 * the profile named) */
void cli_moe_verdict_print(const xs_moe_pick *p, const char *profile);
/* plan megamoe --tokens-grid: the table as text or JSON, and the C header
 * into header (NULL: none; "-": standard output) */
int cli_moe_table(const char *cmd, const xs_moe_config *cfg,
                  const xs_profile *prof, const xs_moe_table_options *o,
                  int json, const char *header, const char *prefix);
int cli_moe_sensitivity_print(const xs_profile *prof, const xs_moe_pick *base,
                              const xs_moe_sensitivity *s, size_t n);
/* A sensitivity run's rows as text (xs_moe_sensitivity and
 * xs_fa_sensitivity share these fields; choice: the new choice in words
 * where changed), then the leads the answer hangs on and what to measure
 * first. */
typedef struct {
  const char *param, *kind, *settle;
  double value, lo, hi, score;
  const double *factor, *time_change, *replan_change;
  const int *changed;
  char choice[XS_MOE_SENS_FACTORS][128];
} cli_sens_row;
void cli_sensitivity_print(const xs_profile *prof, const char *base_words, double base_s,
                           const cli_sens_row *rows, size_t n);
/* Point row r at the shared fields of s (an xs_moe_sensitivity or an
 * xs_fa_sensitivity) */
#define CLI_SENS_ROW(r, s)                                                        \
  ((r)->param = (s)->param, (r)->kind = (s)->kind, (r)->settle = (s)->settle,     \
   (r)->value = (s)->value, (r)->lo = (s)->lo, (r)->hi = (s)->hi,                 \
   (r)->score = (s)->score, (r)->factor = (s)->factor,                            \
   (r)->time_change = (s)->time_change, (r)->replan_change = (s)->replan_change,  \
   (r)->changed = (s)->changed)

int cmd_predict(int argc, char **argv);
int cmd_profiles(int argc, char **argv);
/* cli/validate_ep.c: `xstage validate ep ...` (argv[1] is "ep") */
int cli_validate_ep(int argc, char **argv);
/* cli/validate_residuals.c: xstage validate residuals */
int cli_validate_residuals(int argc, char **argv);
/* The intervals' coverage by arm and band (xs_validate_intervals filled
 * the rows), as a section of validate's report. */
void cli_validate_intervals_print(const xs_validate_set *set);
/* cli/validate.c, for every validator: --fail-above's fraction (0, or the
 * exit code after saying what was wrong), and the data read and predicted
 * (progress on a terminal; 0, or the exit code after saying why not) */
typedef xs_status (*cli_validate_fn)(const char *text, size_t length,
                                     const char *filename, xs_validate_set *out,
                                     void (*progress)(size_t, void *), void *ctx,
                                     xs_error *err);
/* "\r  predicting row N" on standard error, for a validator's progress */
void cli_validate_progress(size_t done, void *ctx);
int cli_validate_fraction(const char *text, double *out);
/* read and predict *datap (NULL: the published file dflt, as
 * cli_data_file finds it into found, and *datap is set to it) */
int cli_validate_load(const char **datap, const char *dflt, char *found, size_t size,
                      const char *svg, cli_validate_fn fn, xs_validate_set *set);
int cmd_demo(int argc, char **argv);
int cmd_simulate(int argc, char **argv);
int cmd_plan(int argc, char **argv);
int cmd_sweep(int argc, char **argv);
int cmd_plan_flashattn(int argc, char **argv);
int cmd_probe(int argc, char **argv);
int cmd_fit(int argc, char **argv);
int cmd_fit_megamoe(int argc, char **argv);
int cmd_calibrate(int argc, char **argv);
int cmd_replay(int argc, char **argv);
int cmd_sweep_flashattn(int argc, char **argv);
int cmd_validate(int argc, char **argv);
/* cli/validate_fa.c: validate flashattn's rows (model: an xs_model, or -1
 * for every model) and its sections after the medians (0 or the exit
 * code) */
void cli_validate_fa_rows(const xs_validate_set *set, const char *data, int model,
                          const cli_sources *sources);
int cli_validate_fa_sections(const xs_validate_set *set, const xs_validate_group *arms,
                             size_t narms);
/* The signed median per name (rows, under head: names cut to width) and
 * band (columns) that bias gives, with its count of rows (count_width
 * digits), "-" where it gives NAN; cli_validate_bias_table: per arm. */
typedef double (*cli_bias_fn)(const xs_validate_set *set, const char *arm, int band,
                              const char **label, size_t *n);
void cli_validate_bias_rows(const xs_validate_set *set, const char *head, int width,
                            const char *const *names, size_t n, int count_width, int bands,
                            cli_bias_fn bias);
void cli_validate_bias_table(const xs_validate_set *set, const xs_validate_group *arms,
                             size_t narms, int bands, cli_bias_fn bias);

/* "sweep PLANNER --profile P [--grid FILE] [--json | --csv]": -1 to go on
 * (o->profile loaded, to free), else the exit code (help shown, or a bad
 * flag reported). */
typedef struct cli_sweep_opts {
  xs_profile *profile; /* with --fabric's */
  const char *grid;
  const char *ep_library, *ep_kernel; /* megamoe's --ep-library, --ep-kernel */
  int json, csv;
} cli_sweep_opts;
/* --ep-library and --ep-kernel (NULL: as the config has them) into c,
 * checked: 0, or the exit code (after saying what was wrong when say) */
int cli_moe_ep_library(const char *cmd, const char *library, const char *kernel,
                       xs_moe_config *c, int say);
int cli_sweep_options(int argc, char **argv, void (*help)(FILE *),
                      cli_sweep_opts *o);

/* A sweep's grid from the file path (NULL: the default grid): its configs
 * (xs_moe_config, or xs_fa_config when fa) into *configs, freed with
 * xs_free; 0, or the exit code after saying what was wrong. */
int cli_sweep_grid(const char *path, int fa, void **configs, size_t *n);

/* A sweep's configs, planned by whatever planner the callbacks call. */
typedef struct cli_sweep_job {
  size_t n;              /* configs */
  void *results;         /* n results of result_size bytes, zeroed */
  size_t result_size;
  void *ctx;
  /* check config i without planning it; plan it into result */
  xs_status (*check)(void *ctx, size_t i, xs_error *err);
  xs_status (*plan)(void *ctx, size_t i, void *result, xs_error *err);
  /* the config for messages: "glm, 16 tokens, EP 8" */
  void (*describe)(void *ctx, size_t i, char *buf, size_t size);
} cli_sweep_job;
/* Check every config, then plan them, with a progress bar on a terminal.
 * Under mpirun config i goes to rank i mod N (every rank checks all of
 * them first, so that all stop together or none does) and the results are
 * gathered on rank 0. EXIT_OK when this process holds every result, -1 on
 * ranks other than 0 (which print nothing), else the exit code. */
int cli_sweep_run(const char *cmd, int *argc, char ***argv,
                  const cli_sweep_job *job);

/* Shared by predict and demo: evaluate every model in models[0..n) and
 * print the text report, or the JSON report when json is set. */
int cli_predict_report(const char *cmd, const xs_program *program,
                       const xs_profile *profile, const xs_model *models,
                       size_t nmodels, int json, FILE *out);
/* Write a document the library made (JSON) and a final newline; takes and
 * frees text, NULL meaning the library ran out of memory. */
int cli_write_document(const char *cmd, const char *path, char *text);
/* --emit-program, --trace, --svg: the program as JSON into emit (- for
 * standard output), and its timeline under model into trace and svg; each
 * path may be NULL. */
#define CLI_TIMELINE_OPS 1e6 /* --trace and --svg take programs up to this */
/* 0 when a timeline of program fits, else the exit code after saying so */
int cli_timeline_fits(const char *cmd, const xs_program *program,
                      const char *trace, const char *svg);
int cli_program_outputs(const char *cmd, const xs_program *program,
                        const xs_profile *profile, xs_model model,
                        const char *emit, const char *trace, const char *svg);
/* --trace and --svg: the timeline of one evaluated result into files. */
int cli_write_timelines(const char *cmd, const xs_program *program,
                        const xs_profile *profile, const xs_result *result,
                        const xs_timeline *timeline, const char *trace_path,
                        const char *svg_path);

#endif
