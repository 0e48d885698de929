/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Layer 1 (pure): renders lint findings and diffs as text or JSON into a
 * bounded buffer. Values appear only when the caller asks for them.
 */
#pragma once

#include <stdbool.h>

#include "diff.h"
#include "lint.h"
#include "strbuf.h"

typedef enum ReportFormat {
        REPORT_TEXT,
        REPORT_JSON,
        _REPORT_FORMAT_MAX,
        _REPORT_FORMAT_INVALID = -1,
} ReportFormat;

ReportFormat report_format_from_string(const char *s);

/* "FILE:LINE: error[ID]: message" lines, one per finding. */
int report_lint_text(StrBuf *out, const char *file, const Lint *l);

/* Appends the lines of a diff: "KEY: added|removed|changed (effective|cosmetic: why)",
 * with values when show_values. */
int report_diff_text(StrBuf *out, const char *desired_name, const char *running_name, const Diff *d,
                     bool show_values);
