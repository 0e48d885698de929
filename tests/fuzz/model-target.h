/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The body of the two model fuzz targets (fuzz-conf, fuzz-env): parse
 * arbitrary bytes as one file type, lint them, and diff the document against
 * itself, which must come out the same. Included by exactly one target each.
 */
#pragma once

#include <stddef.h>
#include <stdint.h>

#include "diff.h"
#include "document.h"
#include "lint.h"

static int fuzz_document(DocType type, const uint8_t *data, size_t size) {
        _cleanup_(document_freep) Document *doc = NULL;
        _cleanup_(lint_freep) Lint *lint = NULL;
        _cleanup_(diff_freep) Diff *diff = NULL;
        int r;

        r = document_parse(type, (const char *) data, size, &doc);
        if (r < 0) {
                /* Parsing never fails on content: only size and memory stop it. */
                if (r != -EFBIG && r != -ENOMEM)
                        abort();
                return 0;
        }

        r = lint_document(doc, NULL, &lint);
        if (r < 0 && r != -ENOMEM)
                abort();
        if (r >= 0 && lint->n_errors + lint->n_warnings != lint->n_findings)
                abort();

        /* diff.h: DIFF_SAME means byte for byte, and a document is its own bytes. */
        r = diff_documents(doc, doc, &diff);
        if (r < 0 && r != -ENOMEM)
                abort();
        if (r >= 0 && (diff->verdict != DIFF_SAME || diff->n_effective != 0))
                abort();

        return 0;
}
