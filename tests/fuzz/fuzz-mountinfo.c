/* SPDX-License-Identifier: Apache-2.0 */
/*
 * libFuzzer target: the mountinfo parser on arbitrary bytes, then every lookup
 * on what it parsed. Invariants: every entry is found again by its mount
 * point and by its ID; a version found in a root is a name kubelet writes
 * (no control byte can follow it into a log line) and appears in the root;
 * the deleted flag matches the suffix.
 */
#include <stddef.h>
#include <stdint.h>

#include "mountinfo.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
        _cleanup_(mountinfo_freep) MountInfo *mi = NULL;
        int r;

        r = mountinfo_parse((const char *) data, size, &mi);
        if (r < 0) {
                /* Parsing never fails on content: only size, count and memory stop it. */
                if (r != -EFBIG && r != -ENOBUFS && r != -ENOMEM)
                        abort();
                return 0;
        }
        if (mi->n_entries > MOUNTINFO_MAX_ENTRIES)
                abort();

        for (size_t i = 0; i < mi->n_entries; i++) {
                const MountInfoEntry *e = &mi->entries[i], *top = NULL;
                char *version = NULL;
                bool deleted = false;

                if (e->mount_point[0] != '/' || !e->root[0] || !e->fstype[0] || !e->options[0] ||
                    !e->super_options[0] || !e->source || !e->optional)
                        abort();

                r = mountinfo_find_mount_point(mi, e->mount_point, &top);
                if (r == -ENOMEM)
                        continue;
                if (r < 0 || !top || !streq(top->mount_point, e->mount_point))
                        abort();
                if (!mountinfo_find_id(mi, e->mount_id))
                        abort();

                r = mountinfo_root_version(e->root, &version, &deleted);
                if (r == -ENOMEM)
                        continue;
                if (r < 0 && (r != -EBADMSG || version))
                        abort();
                if ((r == 1) != (version != NULL))
                        abort();
                if (version && (!mountinfo_version_is_valid(version, strlen(version)) ||
                                !strstr(e->root, version)))
                        abort();
                for (const char *p = version; p && *p; p++)
                        if ((unsigned char) *p < 0x20 || *p == 0x7f)
                                abort();
                if (deleted != endswith(e->root, MOUNTINFO_DELETED_SUFFIX))
                        abort();
                free(version);
        }
        return 0;
}
