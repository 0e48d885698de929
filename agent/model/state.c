/* SPDX-License-Identifier: Apache-2.0 */
#include "state.h"
#include "string-table.h"

static const char *const file_state_table[_FILE_STATE_MAX] = {
        [FILE_CURRENT] = "current",           [FILE_COSMETIC] = "cosmetic",
        [FILE_DRIFTED] = "drifted",           [FILE_MISSING] = "missing",
        [FILE_UNREADABLE] = "unreadable",     [FILE_INVALID] = "invalid",
        [FILE_UNVERIFIABLE] = "unverifiable", [FILE_UNKNOWN] = "unknown",
};

static const char *const pod_state_table[_POD_STATE_MAX] = {
        [POD_CURRENT] = "current",
        [POD_DRIFTED] = "drifted",
        [POD_UNKNOWN] = "unknown",
};

static const char *const side_table[_SIDE_MAX] = {
        [SIDE_DESIRED] = "desired",
        [SIDE_RUNNING] = "running",
};

DEFINE_STRING_TABLE_TO_STRING(file_state, FileState);
DEFINE_STRING_TABLE_TO_STRING(pod_state, PodState);
DEFINE_STRING_TABLE_TO_STRING(side, Side);

void file_report_done(FileReport *f) {
        free(f->key);
        free(f->running_path);
        free(f->detail);
        free(f->mount_version);
        for (int s = 0; s < _SIDE_MAX; s++)
                free(f->version[s]);
        for (size_t i = 0; i < f->n_changes; i++)
                free(f->changes[i].key);
        free(f->changes);
        *f = (FileReport){};
}

Report *report_free(Report *r) {
        if (!r)
                return NULL;
        for (size_t i = 0; i < r->n_files; i++)
                file_report_done(&r->files[i]);
        free(r->files);
        free(r->desired_version);
        workload_free(r->workload);
        free(r);
        return NULL;
}

PodState report_pod_state(const Report *r) {
        bool unknown = !r->evaluated;

        for (size_t i = 0; i < r->n_files; i++)
                switch (r->files[i].state) {
                case FILE_DRIFTED:
                        return POD_DRIFTED;
                case FILE_CURRENT:
                case FILE_COSMETIC:
                        break;
                default:
                        unknown = true;
                }
        return unknown ? POD_UNKNOWN : POD_CURRENT;
}
