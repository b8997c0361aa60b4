/*
 * main.c: the xstage command: one binary, subcommands, --help on each.
 * It links libxstage through xstage.h only, like any other user.
 */
#define _POSIX_C_SOURCE 200809L
#include "common.h"

#include <errno.h>
#include <signal.h>
#include <string.h>
#include <unistd.h>

/* plan and sweep: the attention planner's command, or the MegaMoE one's
 * (which names both in its messages) */
static int cmd_plan_any(int argc, char **argv) {
  return argc >= 2 && !strcmp(argv[1], "flashattn") ? cmd_plan_flashattn(argc, argv)
                                                     : cmd_plan(argc, argv);
}
static int cmd_sweep_any(int argc, char **argv) {
  return argc >= 2 && !strcmp(argv[1], "flashattn") ? cmd_sweep_flashattn(argc, argv)
                                                     : cmd_sweep(argc, argv);
}

static const struct {
  const char *name;
  int (*run)(int, char **);
  const char *summary;
} commands[] = {
    {"calibrate", cmd_calibrate, "probe a real channel, then fit a profile"},
    {"demo", cmd_demo, "the main job: a wave of combine bursts on h200-nvlink"},
    {"fit", cmd_fit, "fit a channel to probe samples, or megamoe to kernel timings"},
    {"plan", cmd_plan_any, "plan a fused kernel's schedule: megamoe, flashattn"},
    {"predict", cmd_predict, "evaluate a program on a profile under each model"},
    {"probe", cmd_probe, "measure a real channel (pipe, tcp, mpi, cuda-*) burst by burst"},
    {"profiles", cmd_profiles, "list the built-in profiles, or show one"},
    {"replay", cmd_replay, "run a program on a real channel beside the models"},
    {"simulate", cmd_simulate, "simulate a program at packet level"},
    {"sweep", cmd_sweep_any, "run a planner over a grid of configs: megamoe, flashattn"},
    {"validate", cmd_validate, "predict published kernel timings: megamoe, flashattn, ep"},
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

/* Every command's output is checked here, once it has returned: what it
 * printed is flushed, and a write that failed on the way (a full disk, a
 * closed pipe) turns success into exit 1. cmd NULL: xstage itself. */
static int check_stdout(const char *cmd, int rc) {
  errno = 0;
  if (fflush(stdout) == 0 && !ferror(stdout))
    return rc;
  int e = errno;
  /* an earlier write failed and nothing was left to flush: the reason is
   * the one a command kept, or the one an empty write gets now (a full
   * device says so again; a file on a full disk does not) */
  if (!e)
    e = cli_stdout_errno;
  if (!e && write(fileno(stdout), "", 0) < 0)
    e = errno;
  fprintf(stderr, "xstage%s%s: writing standard output: %s\n", cmd ? " " : "",
          cmd ? cmd : "", strerror(e ? e : EIO));
  return rc == EXIT_OK ? EXIT_MACHINE : rc;
}

static int run_main(int argc, char **argv, const char **cmd_name);

/* SIGINT, SIGTERM or SIGHUP while an output file is being written: its
 * temporary file is removed, then the signal kills the process as it
 * would have (probe, calibrate and replay catch SIGINT and SIGTERM
 * themselves while they measure). */
static void on_fatal_signal(int sig) {
  xs_remove_temp_files();
  raise(sig); /* SA_RESETHAND, SA_NODEFER: the default action, now */
}

static void catch_fatal_signals(void) {
  static const int sigs[] = {SIGINT, SIGTERM, SIGHUP};
  for (size_t i = 0; i < sizeof sigs / sizeof sigs[0]; i++) {
    struct sigaction sa, old;
    /* a signal the shell ignores for us (nohup, a background job) stays
     * ignored */
    if (sigaction(sigs[i], NULL, &old) != 0 || old.sa_handler == SIG_IGN)
      continue;
    memset(&sa, 0, sizeof sa);
    sa.sa_handler = on_fatal_signal;
    sa.sa_flags = SA_RESETHAND | SA_NODEFER;
    sigaction(sigs[i], &sa, NULL);
  }
}

int main(int argc, char **argv) {
  const char *cmd = NULL;
  catch_fatal_signals();
  int rc = run_main(argc, argv, &cmd);
  return check_stdout(cmd, rc);
}

static int run_main(int argc, char **argv, const char **cmd_name) {
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
          *cmd_name = commands[i].name;
          return commands[i].run(2, hargv);
        }
      cli_say("help", "unknown command \"%s\"", argv[2]);
      return EXIT_INPUT;
    }
    usage(stdout);
    return EXIT_OK;
  }
  if (strcmp(cmd, "--version") == 0 || strcmp(cmd, "-V") == 0) {
    printf("xstage %s\n", xs_version());
    printf("models: burstgap blocking serial ideal; packet simulator\n");
    printf("backends:");
    for (size_t i = 0; i < xs_backend_count(); i++)
      printf(" %s", xs_backend_name(i));
    printf("\nbuilt with: MPI %s, CUDA %s\n", xs_mpi_built() ? "yes" : "no",
           xs_cuda_built() ? "yes" : "no");
    return EXIT_OK;
  }
  for (size_t i = 0; i < sizeof commands / sizeof commands[0]; i++)
    if (strcmp(commands[i].name, cmd) == 0) {
      *cmd_name = commands[i].name;
      return commands[i].run(argc - 1, argv + 1);
    }
  fprintf(stderr, "xstage: unknown command \"%s\" (commands:", cli_name_text(cmd));
  for (size_t i = 0; i < sizeof commands / sizeof commands[0]; i++)
    fprintf(stderr, " %s", commands[i].name);
  fprintf(stderr, "; see xstage --help)\n");
  return EXIT_INPUT;
}
