/* SPDX-License-Identifier: Apache-2.0 */
#include "file-format.h"
#include "macro.h"
#include "string-table.h"

static const char *const file_format_table[_FILE_FORMAT_MAX] = {
        [FILE_FORMAT_ENROOT_CONF] = "enroot-conf",
        [FILE_FORMAT_ENROOT_ENV] = "enroot-env",
        [FILE_FORMAT_RAW] = "raw",
};

DEFINE_STRING_TABLE_LOOKUP(file_format, FileFormat, _FILE_FORMAT_INVALID);

FileFormat file_format_for_key(const char *key) {
        /* enroot reads only *.env in environ.d, and its one configuration
         * file is enroot.conf (docs/DESIGN.md §5): every other file is the
         * workload's own, whose syntax the agent does not know. */
        if (endswith(key, ".env"))
                return FILE_FORMAT_ENROOT_ENV;
        if (streq(key, "enroot.conf"))
                return FILE_FORMAT_ENROOT_CONF;
        return FILE_FORMAT_RAW;
}

bool file_format_is_enroot(FileFormat f) {
        return f == FILE_FORMAT_ENROOT_CONF || f == FILE_FORMAT_ENROOT_ENV;
}
