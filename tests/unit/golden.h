/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Golden files: the expected output that tests/unit compares a rendering
 * with, kept beside the tests in tests/data. UPDATE_EXPECTED=1 asks a test
 * to rewrite them from what the code renders now, for a developer to review
 * in the diff. Never in CI: a rewrite there would turn every difference into
 * a pass. Include after <cmocka.h>.
 */
#pragma once

#include <stdbool.h>
#include <stdlib.h>
#include <string.h>

/* True when the environment says CI: CI set to anything but "", "false" or
 * "0" (GitHub Actions, GitLab CI and most others set CI=true). */
static inline bool golden_in_ci(void) {
        const char *ci = getenv("CI");

        return ci && *ci && strcmp(ci, "false") != 0 && strcmp(ci, "0") != 0;
}

/* True when UPDATE_EXPECTED asks for the golden files to be rewritten.
 * Under CI the request fails the calling test, before anything is written. */
static inline bool golden_update_requested(void) {
        const char *update = getenv("UPDATE_EXPECTED");

        if (!update)
                return false;
        if (golden_in_ci())
                fail_msg("UPDATE_EXPECTED=%s under CI=%s: golden files are not rewritten in CI; "
                         "run the test without UPDATE_EXPECTED",
                         update, getenv("CI"));
        return true;
}
