/*
 * main.c: the xstage command: one binary, subcommands, --help on each.
 * It links libxstage through xstage.h only, like any other user.
 */
#include "common.h"

#include <string.h>

static const struct {
  const char *name;
  int (*run)(int, char **);
  const char *summary;
} commands[] = {
    {"calibrate", cmd_calibrate, "probe a real channel, then fit a profile"},
    {"demo", cmd_demo, "the main job: a wave of combine bursts on h200-nvlink"},
    {"fit", cmd_fit, "fit a channel's parameters to probe samples"},
    {"plan", cmd_plan, "plan a fused kernel's schedule: megamoe, flashattn"},
    {"predict", cmd_predict, "evaluate a program on a profile under each model"},
    {"probe", cmd_probe, "measure a real channel (pipe, tcp, mpi, cuda-*) burst by burst"},
    {"profiles", cmd_profiles, "list the built-in profiles, or show one"},
    {"replay", cmd_replay, "run a program on a real channel beside the models"},
    {"simulate", cmd_simulate, "simulate a program at packet level"},
    {"sweep", cmd_sweep, "run a planner over a grid of configs: megamoe, flashattn"},
    {"validate", cmd_validate, "predict published kernel timings: megamoe"},
};

static void usage(FILE *f) {
  fprintf(f,
          "usage: xstage COMMAND [options]\n"
          "\n"
          "Models posted sends from fused GPU kernels (the X-stage: issued, not\n"
          "yet delivered) with the Burst-Gap model and its baselines.\n"
          "\n"
          "commands:\n");
  for (size_t i = 0; i < sizeof commands / sizeof commands[0]; i++)
    fprintf(f, "  %-10s %s\n", commands[i].name, commands[i].summary);
  fprintf(f, "\n"
             "  xstage COMMAND --help   options of one command\n"
             "  xstage --version        version and built-in backends\n");
}

int main(int argc, char **argv) {
  if (argc < 2) {
    usage(stderr);
    return EXIT_INPUT;
  }
  const char *cmd = argv[1];
  if (strcmp(cmd, "--help") == 0 || strcmp(cmd, "-h") == 0 ||
      strcmp(cmd, "help") == 0) {
    if (strcmp(cmd, "help") == 0 && argc > 2) {
      for (size_t i = 0; i < sizeof commands / sizeof commands[0]; i++)
        if (strcmp(commands[i].name, argv[2]) == 0) {
          char *hargv[] = {argv[2], "--help", NULL};
          return commands[i].run(2, hargv);
        }
      fprintf(stderr, "xstage help: unknown command \"%s\"\n", argv[2]);
      return EXIT_INPUT;
    }
    usage(stdout);
    return EXIT_OK;
  }
  if (strcmp(cmd, "--version") == 0 || strcmp(cmd, "-V") == 0) {
    printf("xstage %s\n", XSTAGE_VERSION);
    printf("models: burstgap blocking serial ideal; packet simulator\n");
    printf("probe backends:");
    for (size_t i = 0; i < xs_backend_count(); i++)
      printf(" %s", xs_backend_name(i));
    if (xs_mpi_built())
      printf(" mpi");
    if (xs_cuda_built())
      printf(" cuda-host cuda-tma cuda-ce");
    if (!xs_mpi_built() || !xs_cuda_built())
      printf(" (not built in:%s%s)", xs_mpi_built() ? "" : " mpi",
             xs_cuda_built() ? "" : " cuda");
    printf("\n");
    return EXIT_OK;
  }
  for (size_t i = 0; i < sizeof commands / sizeof commands[0]; i++)
    if (strcmp(commands[i].name, cmd) == 0)
      return commands[i].run(argc - 1, argv + 1);
  fprintf(stderr, "xstage: unknown command \"%s\" (commands:", cmd);
  for (size_t i = 0; i < sizeof commands / sizeof commands[0]; i++)
    fprintf(stderr, " %s", commands[i].name);
  fprintf(stderr, "; see xstage --help)\n");
  return EXIT_INPUT;
}
