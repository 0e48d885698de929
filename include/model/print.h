/* SPDX-License-Identifier: Apache-2.0 */
/*
 * What the lint and diff commands print: lint findings and
 * diffs as text or JSON. Values appear only when the caller asks for them
 * (they may be secrets). The agent's state (Report) lives in state.h.
 */
#pragma once

#include <jansson.h>
#include <stdbool.h>

#include "diff.h"
#include "lint.h"
#include "strbuf.h"

typedef enum PrintFormat {
        PRINT_TEXT,
        PRINT_JSON,
        _PRINT_FORMAT_MAX,
        _PRINT_FORMAT_INVALID = -1,
} PrintFormat;

PrintFormat print_format_from_string(const char *s);

/* Appends "FILE:LINE: error|warning[ID]: message" lines, one per finding
 * ("FILE: ..." for findings about the whole file). */
int print_lint_text(StrBuf *out, const char *file, const Lint *l);

/* Returns a new JSON object {"file", "type", "errors", "warnings", "findings": [...]},
 * or NULL on -ENOMEM. type may be NULL. */
json_t *print_lint_json(const char *file, const char *type, const Lint *l);

/* Appends a verdict line for the pair, then one indented line per key:
 * "  KEY: added|removed|changed[, cosmetic] (why)", with the values and their
 * lines when show_values. */
int print_diff_text(StrBuf *out, const char *desired_name, const char *running_name, const Diff *d,
                    bool show_values);

/* Prints o (steals the reference; NULL means it could not be built) to f,
 * indented, with a final newline. Returns 0, -ENOMEM (o is NULL) or -EIO. */
int print_json(json_t *o, FILE *f);

/* Returns a new JSON object describing the diff, or NULL on -ENOMEM. */
json_t *print_diff_json(const char *desired_name, const char *running_name, const Diff *d,
                        bool show_values);
