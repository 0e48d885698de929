/* SPDX-License-Identifier: Apache-2.0 */
#include "commands.h"
int cmd_diff(int argc, char **argv) {
        return EXIT_TROUBLE;
}
