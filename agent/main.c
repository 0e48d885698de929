/* SPDX-License-Identifier: Apache-2.0 */
#include "commands.h"
#include "log.h"

int main(int argc, char **argv) {
        log_setup();
        if (argc > 1 && streq(argv[1], "lint"))
                return cmd_lint(argc - 1, argv + 1);
        if (argc > 1 && streq(argv[1], "diff"))
                return cmd_diff(argc - 1, argv + 1);
        return EXIT_TROUBLE;
}
