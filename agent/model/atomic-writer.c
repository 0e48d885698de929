/* SPDX-License-Identifier: Apache-2.0 */
#include <string.h>

#include "atomic-writer.h"
#include "macro.h"

bool volume_version_is_valid(const char *name) {
        size_t l;

        if (!name)
                return false;
        l = strlen(name);
        /* kubelet's ..data target is filepath.Base() of the directory it just
         * made with os.MkdirTemp(dir, "..2006_01_02_15_04_05."): one component
         * in DIR, starting with "..". Anything else would let a writer aim our
         * reads somewhere else on the node. */
        return l > 2 && l <= VOLUME_MAX_VERSION_LENGTH &&
               startswith(name, VOLUME_RESERVED_PREFIX) && !strchr(name, '/');
}
