/* SPDX-License-Identifier: Apache-2.0 */
/*
 * aicr-enroot-agent: tells which pods run an enroot configuration that no
 * longer matches the ConfigMap, and why. main() only dispatches.
 */
#include "commands.h"
#include "log.h"

static void usage(FILE *f) {
        fprintf(f, "Usage: aicr-enroot-agent COMMAND [OPTIONS] [ARGS]\n\n"
                   "Commands:\n"
                   "  lint FILE...             report what enroot would refuse, ignore or misread\n"
                   "  diff DESIRED RUNNING     compare two files as enroot reads them\n\n"
                   "Options:\n"
                   "  -h, --help               show this help\n"
                   "  --version                show the version\n\n"
                   "Run \"aicr-enroot-agent COMMAND --help\" for a command's options.\n");
}

int main(int argc, char **argv) {
        const char *cmd = argc > 1 ? argv[1] : NULL;

        log_setup();

        if (!cmd) {
                usage(stderr);
                return EXIT_TROUBLE;
        }
        if (streq(cmd, "-h") || streq(cmd, "--help")) {
                usage(stdout);
                return EXIT_CLEAN;
        }
        if (streq(cmd, "--version")) {
                printf("%s %s\n", PACKAGE_NAME, PACKAGE_VERSION);
                return EXIT_CLEAN;
        }
        if (streq(cmd, "lint"))
                return cmd_lint(argc - 1, argv + 1);
        if (streq(cmd, "diff"))
                return cmd_diff(argc - 1, argv + 1);

        log_error("Unknown command \"%s\". Try \"aicr-enroot-agent --help\".", cmd);
        return EXIT_TROUBLE;
}
