/*
 * validate_residuals.c: `xstage validate residuals`: the three validations
 * on the project's published data (megamoe, flashattn, and ep with each
 * source left out), their residuals written as the table the prediction
 * intervals rest on (data/residuals.csv), or checked against it.
 */
#include "common.h"

#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static void help(FILE *f) {
  fputs("usage: xstage validate residuals [--out FILE | --check FILE]\n"
        "\n"
        "Runs validate megamoe, flashattn and ep (each EP row predicted with the\n"
        "constants refitted without its source) on the published data and writes\n"
        "their residuals: every kernel-time row (measured, predicted) and every\n"
        "ratio of two arms of one config, as CSV. The prediction intervals of\n"
        "validate, plan and sweep rest on this table, which xstage carries as\n"
        "data/residuals.csv (docs/validate.md \"Intervals\").\n"
        "\n"
        "  --out FILE    write it there (atomically; - for standard output, the\n"
        "                default)\n"
        "  --check FILE  compare it with FILE instead: exit 1, naming the first\n"
        "                line that differs, when FILE is not what the data and\n"
        "                the model give now\n",
        f);
}

int cli_validate_residuals(int argc, char **argv) {
  static const struct option opts[] = {{"out", required_argument, 0, 'o'},
                                       {"check", required_argument, 0, 'c'},
                                       {"help", no_argument, 0, 'h'},
                                       {0, 0, 0, 0}};
  const char *out = NULL, *check = NULL;
  int c;
  opterr = 0;
  optind = 2;
  while ((c = getopt_long(argc, argv, ":o:c:h", opts, NULL)) != -1) {
    switch (c) {
    case 'o': out = optarg; break;
    case 'c': check = optarg; break;
    case 'h': help(stdout); return EXIT_OK;
    default: return cli_bad_flag("validate", argc, argv);
    }
  }
  if (optind < argc)
    return cli_usage_error("validate", "unexpected argument \"%s\"", argv[optind]);
  if (out && check)
    return cli_usage_error("validate", "--out and --check: give one");
  static const char *const files[3] = {"published/megamoe.csv", "published/ring-attention.csv",
                                       "published/ep.csv"};
  cli_validate_fn fns[3] = {xs_validate_megamoe, xs_validate_flashattn, xs_validate_ep};
  xs_validate_set sets[3];
  memset(sets, 0, sizeof sets);
  int rc = EXIT_OK;
  xs_error err;
  for (int i = 0; i < 3 && !rc; i++) {
    char found[8192];
    const char *data = NULL;
    rc = cli_validate_load(&data, files[i], found, sizeof found, NULL, fns[i], &sets[i]);
  }
  if (!rc && xs_validate_ep_by_source(&sets[2], NULL, &err))
    rc = cli_error("validate", &err);
  char *csv = NULL;
  const xs_validate_set *const sp[3] = {&sets[0], &sets[1], &sets[2]};
  if (!rc && xs_validate_residuals_csv(sp, 3, &csv, &err))
    rc = cli_error("validate", &err);
  if (!rc && check) {
    char *have;
    size_t len;
    rc = cli_read_file("validate", check, CLI_INPUT_LIMIT, &have, &len);
    if (!rc) {
      size_t where = 0;
      if (xs_validate_residuals_same(have, len, csv, 1e-9, &where, &err) != XS_OK) {
        rc = cli_error("validate", &err);
      } else if (where) {
        fprintf(stderr, "xstage validate: %s: row %zu differs from what the data and the "
                        "model give now (numbers beyond 1e-9, or rows added or gone); write "
                        "it again with `xstage validate residuals --out %s`\n",
                check, where, check);
        rc = EXIT_MACHINE;
      }
      free(have);
    }
  } else if (!rc) {
    rc = cli_write_output("validate", out ? out : "-", csv);
  }
  free(csv);
  for (int i = 0; i < 3; i++)
    xs_validate_free(&sets[i]);
  return rc;
}
