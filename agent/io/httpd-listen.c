/* SPDX-License-Identifier: Apache-2.0 */
#include <arpa/inet.h>
#include <stdarg.h>
#include <stdio.h>
#include <strings.h>

#include "httpd-listen.h"

static int listen_error(char **ret_error, const char *fmt, ...) _printf_(2, 3);
static int listen_error(char **ret_error, const char *fmt, ...) {
        va_list ap;
        char *s;
        int n;

        if (!ret_error)
                return -EINVAL;
        va_start(ap, fmt);
        n = vasprintf(&s, fmt, ap);
        va_end(ap);
        if (n < 0)
                return -ENOMEM;
        *ret_error = s;
        return -EINVAL;
}

static int parse_port(const char *s, uint16_t *ret) {
        unsigned v = 0;

        if (*s == '\0' || strlen(s) > 5)
                return -EINVAL;
        for (; *s; s++) {
                if (*s < '0' || *s > '9')
                        return -EINVAL;
                v = v * 10 + (unsigned) (*s - '0');
        }
        if (v > 65535)
                return -EINVAL;
        *ret = (uint16_t) v;
        return 0;
}

int httpd_parse_listen(const char *s, HttpdListen *ret, char **ret_error) {
        static const char usage[] = "expected [ADDR]:PORT, e.g. \":9100\", \"127.0.0.1:9100\" "
                                    "or \"[::1]:9100\"";
        char host[HTTPD_MAX_LISTEN_LENGTH + 1];
        const char *colon, *port;
        HttpdListen l = {};
        size_t host_len;

        if (!s || *s == '\0')
                return listen_error(ret_error, "--listen: empty: %s", usage);
        if (strlen(s) > HTTPD_MAX_LISTEN_LENGTH)
                return listen_error(ret_error, "--listen: longer than %u characters: %s",
                                    HTTPD_MAX_LISTEN_LENGTH, usage);

        if (s[0] == '[') {
                const char *close = strchr(s, ']');

                if (!close || close[1] != ':')
                        return listen_error(ret_error, "--listen: \"%s\": %s", s, usage);
                host_len = (size_t) (close - s - 1);
                memcpy(host, s + 1, host_len);
                host[host_len] = '\0';
                port = close + 2;
                if (strchr(host, '%'))
                        return listen_error(ret_error,
                                            "--listen: \"%s\": IPv6 zone ids are not supported", s);
                if (inet_pton(AF_INET6, host, &l.addr.in6.sin6_addr) != 1)
                        return listen_error(ret_error,
                                            "--listen: \"%s\": \"%s\" is not an IPv6 address", s,
                                            host);
                l.family = AF_INET6;
        } else {
                colon = strrchr(s, ':');
                if (!colon)
                        return listen_error(ret_error, "--listen: \"%s\": no port: %s", s, usage);
                host_len = (size_t) (colon - s);
                memcpy(host, s, host_len);
                host[host_len] = '\0';
                port = colon + 1;
                if (strchr(host, ':'))
                        return listen_error(ret_error,
                                            "--listen: \"%s\": put an IPv6 address in brackets, "
                                            "e.g. \"[::1]:9100\"",
                                            s);
                if (host_len == 0) {
                        l.any = true;
                        l.family = AF_INET6;
                        l.addr.in6.sin6_addr = in6addr_any;
                } else if (strcasecmp(host, "localhost") == 0) {
                        l.family = AF_INET;
                        l.addr.in.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
                } else if (inet_pton(AF_INET, host, &l.addr.in.sin_addr) == 1)
                        l.family = AF_INET;
                else
                        return listen_error(ret_error,
                                            "--listen: \"%s\": ADDR must be an IPv4 address, an "
                                            "IPv6 address in brackets or localhost (names are "
                                            "not resolved)",
                                            s);
        }

        if (parse_port(port, &l.port) < 0)
                return listen_error(ret_error,
                                    "--listen: \"%s\": the port must be a number from 0 to 65535",
                                    s);
        if (l.family == AF_INET6) {
                l.addr.in6.sin6_family = AF_INET6;
                l.addr.in6.sin6_port = htons(l.port);
        } else {
                l.addr.in.sin_family = AF_INET;
                l.addr.in.sin_port = htons(l.port);
        }
        *ret = l;
        return 0;
}

void httpd_listen_format(const HttpdListen *l, char buf[static HTTPD_LISTEN_STRLEN]) {
        char a[INET6_ADDRSTRLEN] = "?";

        if (l->any) {
                (void) snprintf(buf, HTTPD_LISTEN_STRLEN, ":%u", (unsigned) l->port);
                return;
        }
        if (l->family == AF_INET6) {
                (void) inet_ntop(AF_INET6, &l->addr.in6.sin6_addr, a, sizeof a);
                (void) snprintf(buf, HTTPD_LISTEN_STRLEN, "[%s]:%u", a, (unsigned) l->port);
        } else {
                (void) inet_ntop(AF_INET, &l->addr.in.sin_addr, a, sizeof a);
                (void) snprintf(buf, HTTPD_LISTEN_STRLEN, "%s:%u", a, (unsigned) l->port);
        }
}
