/* SPDX-License-Identifier: Apache-2.0 */
/*
 * aicr-enroot-rollout, the program behind `aicr-enroot-agent rollout`: the
 * front door (agent/cli/front.c) execs it with the command line the operator
 * typed (`aicr-enroot-agent rollout ...`, which ps shows), and the command
 * reads its arguments from "rollout" on, so getopt's messages read
 * "rollout: ..." as they always did. It links
 * the rollout, io, model and basic layers only; the sidecar daemon links none
 * of it.
 */
#include <sys/prctl.h>

#include "log.h"
#include "rollout-cmd.h"

int main(int argc, char **argv) {
        log_setup();

        /* It holds a service-account token: no core dump of it, and no
         * /proc/PID/mem, environ or fd for another process of the same uid
         * (the kernel makes /proc/PID root's). The process still reads its
         * own /proc/self. */
        if (prctl(PR_SET_DUMPABLE, 0, 0, 0, 0) < 0) {
                log_error_errno(errno, "Cannot make the process non-dumpable: %m");
                return EXIT_ROLLOUT_USAGE;
        }
        /* Run by the front door: "PROGRAM rollout ARGS"; run directly: "PROGRAM ARGS". */
        if (argc > 1 && streq(argv[1], "rollout"))
                return cmd_rollout(argc - 1, argv + 1);
        return cmd_rollout(argc, argv);
}
