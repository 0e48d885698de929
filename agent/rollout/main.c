/* SPDX-License-Identifier: Apache-2.0 */
/*
 * aicr-enroot-rollout, the program behind `aicr-enroot-agent rollout`: the
 * front door (agent/cli/front.c) execs it with the arguments from "rollout"
 * on, so argv[0] is "rollout" and getopt's messages read as before. It links
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
        return cmd_rollout(argc, argv);
}
