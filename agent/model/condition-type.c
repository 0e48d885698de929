/* SPDX-License-Identifier: Apache-2.0 */
#include <string.h>

#include "condition-type.h"

static bool is_alnum(char c) {
        return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9');
}

/* A DNS-1123 label sequence: lowercase alphanumerics, '-' and '.', each label
 * starting and ending with an alphanumeric. */
static bool is_dns_subdomain(const char *s, size_t n) {
        if (n == 0 || n > 253)
                return false;
        for (size_t i = 0; i < n; i++) {
                char c = s[i];
                bool edge = i == 0 || i == n - 1 || s[i - 1] == '.' || s[i + 1] == '.';
                if ((c >= 'a' && c <= 'z') || (c >= '0' && c <= '9'))
                        continue;
                if ((c == '-' || c == '.') && !edge)
                        continue;
                return false;
        }
        return true;
}

bool condition_type_is_valid(const char *type) {
        const char *slash = strchr(type, '/'), *name = slash ? slash + 1 : type;
        size_t n = strlen(name);

        if (slash && (strchr(name, '/') || !is_dns_subdomain(type, (size_t) (slash - type))))
                return false;
        if (n == 0 || n > 63 || !is_alnum(name[0]) || !is_alnum(name[n - 1]))
                return false;
        for (const char *p = name; *p; p++)
                if (!is_alnum(*p) && *p != '-' && *p != '_' && *p != '.')
                        return false;
        return true;
}
