/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The one-shot commands. Each parses its own arguments (argv[0] is the
 * command name), reads its files, prints to stdout, logs problems to stderr,
 * and returns the process exit status documented in README.md.
 */
#pragma once

/* Exit statuses shared by lint and diff. */
#define EXIT_CLEAN    0 /* lint: no errors; diff: same or cosmetic only */
#define EXIT_FINDINGS 1 /* lint: errors (or warnings with --strict); diff: drift */
#define EXIT_TROUBLE  2 /* could not run: bad option, unreadable file, ... */

int cmd_lint(int argc, char **argv);
int cmd_diff(int argc, char **argv);
