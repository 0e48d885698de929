/* SPDX-License-Identifier: Apache-2.0 */
#include "configmap.h"

int configmap_parse(const char *json, size_t len, ConfigMapSet **ret, char **ret_error) {
        return -ENOSYS;
}

ConfigMapSet *configmap_set_free(ConfigMapSet *s) {
        return NULL;
}
