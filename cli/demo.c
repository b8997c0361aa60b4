/*
 * demo.c: `xstage demo`, the main job on built-in defaults. It builds the
 * bundled example through the public builder API (the same calls a planner
 * makes): the Linear-2 waves of a fused MoE kernel on every SM, each wave a
 * tile of compute whose epilogue stores the combine result to a peer, then
 * evaluates it on h200-nvlink under every model.
 */
#include "common.h"

#include <getopt.h>
#include <stdlib.h>
#include <string.h>

static void help(FILE *f) {
  fprintf(f,
          "usage: xstage demo [--profile P] [--sms N] [--waves N] [--tile-bytes B]\n"
          "                   [--compute T] [--json] [--emit-program FILE]\n"
          "\n"
          "A wave of combine bursts: N SMs each run W waves of (compute T, then\n"
          "a posted store of B bytes to a peer GPU). Prints every model's makespan\n"
          "side by side and where the time goes.\n"
          "\n"
          "  --profile P         default h200-nvlink\n"
          "  --sms N             workers (default 132)\n"
          "  --waves N           waves per SM (default 8)\n"
          "  --tile-bytes B      bytes each SM stores per wave (default 56KiB:\n"
          "                      4 tokens x 7168 hidden x BF16)\n"
          "  --compute T         compute per wave (default 15us)\n"
          "  --json              the JSON report of xstage predict --json\n"
          "  --emit-program F    also write the program as JSON to F (- = stdout)\n");
}

int cmd_demo(int argc, char **argv) {
  static const struct option opts[] = {
      {"profile", required_argument, 0, 'p'},
      {"sms", required_argument, 0, 'n'},
      {"waves", required_argument, 0, 'w'},
      {"tile-bytes", required_argument, 0, 'b'},
      {"compute", required_argument, 0, 'c'},
      {"json", no_argument, 0, 'j'},
      {"emit-program", required_argument, 0, 'e'},
      {"help", no_argument, 0, 'h'},
      {0, 0, 0, 0}};
  const char *profile = "h200-nvlink", *emit = NULL;
  long sms = 132, waves = 8;
  double tile = 57344, compute = 15e-6;
  int json = 0, c, prc;
  double v;
  xs_error err;
  opterr = 0;
  optind = 1;
  while ((c = getopt_long(argc, argv, ":p:n:w:b:c:je:h", opts, NULL)) != -1) {
    switch (c) {
    case 'p': profile = optarg; break;
    case 'n':
      if ((prc = cli_parse_count("demo", "--sms", optarg, 1, 100000, &v)))
        return prc;
      sms = (long)v;
      break;
    case 'w':
      if ((prc = cli_parse_count("demo", "--waves", optarg, 1, 100000, &v)))
        return prc;
      waves = (long)v;
      break;
    case 'b':
      if (xs_parse_size(optarg, &tile, &err))
        return cli_usage_error("demo", "--tile-bytes: %s", err.message);
      break;
    case 'c':
      if (xs_parse_time(optarg, &compute, &err))
        return cli_usage_error("demo", "--compute: %s", err.message);
      break;
    case 'j': json = 1; break;
    case 'e': emit = optarg; break;
    case 'h': help(stdout); return EXIT_OK;
    default: return cli_bad_flag("demo", argc, argv);
    }
  }
  if (optind < argc)
    return cli_usage_error("demo", "unexpected argument \"%s\"", argv[optind]);
  if ((double)sms * (double)waves > 1e6)
    return cli_usage_error("demo", "--sms %ld x --waves %ld is %.3g tiles, more than the "
                                   "demo's limit of 1e6 (about a second and 160 MB)",
                           sms, waves, (double)sms * (double)waves);
  xs_profile *prof = NULL;
  if (xs_profile_load(profile, &prof, &err))
    return cli_error("demo", &err);
  xs_program *prog = xs_program_new("combine waves");
  int rc = EXIT_OK;
  if (!prog) {
    rc = EXIT_MACHINE;
    goto done;
  }
  for (long s = 0; s < sms; s++) {
    char name[32];
    size_t w;
    snprintf(name, sizeof name, "sm%ld", s);
    if (xs_program_add_worker(prog, name, &w, &err))
      goto fail;
    for (long k = 0; k < waves; k++)
      if (xs_program_compute(prog, w, compute, &err) ||
          xs_program_send(prog, w, tile, NULL, NULL, NULL, &err))
        goto fail;
  }
  if (xs_program_finish(prog, &err))
    goto fail;
  if (emit && (rc = cli_program_outputs("demo", prog, prof, XS_MODEL_BURSTGAP,
                                         emit, NULL, NULL)))
    goto done;
  if (!json) {
    char a[32], b[32], d[32], e[32];
    const xs_channel *ch = xs_profile_channel(prof, xs_profile_default_channel(prof));
    printf("xstage demo: %ld SMs, each %ld waves of %s compute then a %s combine\n"
           "store to a peer GPU, on %s (drain %s, capacity %s; leads, see\n"
           "`xstage profiles show %s`).\n\n",
           sms, waves, xs_format_time(compute, a, sizeof a),
           xs_format_size(tile, b, sizeof b), xs_profile_name(prof),
           xs_format_rate(ch->drain_Bps, d, sizeof d),
           xs_format_size(ch->capacity_B, e, sizeof e), xs_profile_name(prof));
  }
  xs_model models[XS_MODEL_COUNT];
  for (int i = 0; i < XS_MODEL_COUNT; i++)
    models[i] = (xs_model)i;
  rc = cli_predict_report("demo", prog, prof, models, XS_MODEL_COUNT, json,
                          stdout);
  goto done;
fail:
  rc = cli_error("demo", &err);
done:
  xs_program_free(prog);
  xs_profile_free(prof);
  return rc;
}
