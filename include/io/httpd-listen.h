/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The --listen address, shared by the HTTP server (httpd.h) and the
 * readiness probe (check.h), which must not pull in the server's libraries:
 * no I/O, libc only.
 */
#pragma once

#include <netinet/in.h>
#include <stdbool.h>
#include <stdint.h>
#include <sys/socket.h>

#include "macro.h"

/* Longest --listen argument accepted. */
#define HTTPD_MAX_LISTEN_LENGTH 128u
/* Room for httpd_listen_format(): "[" IPv6 "]:" port, NUL. */
#define HTTPD_LISTEN_STRLEN     (INET6_ADDRSTRLEN + 16)

/* A parsed --listen [ADDR]:PORT. Accepted forms:
 *   ":9100"            all addresses: IPv6 dual-stack ([::] with IPV6_V6ONLY
 *                      off), or IPv4 0.0.0.0 where the kernel has no IPv6
 *   "0.0.0.0:9100"     all IPv4 addresses only
 *   "127.0.0.1:9100"   one IPv4 address
 *   "[::1]:9100"       one IPv6 address; "[::]:9100" is all IPv6 addresses
 *                      only (IPV6_V6ONLY on): an explicit address means that family
 *   "localhost:9100"   127.0.0.1. No other name is accepted: names are never
 *                      resolved (no DNS, no NSS in the daemon's start-up path)
 * PORT is decimal 0-65535; 0 lets the kernel choose (tests), see httpd_get_port(). */
typedef struct HttpdListen {
        bool any;   /* ":PORT" */
        int family; /* AF_INET or AF_INET6; AF_INET6 for any (the first choice) */
        union {
                struct sockaddr sa;
                struct sockaddr_in in;
                struct sockaddr_in6 in6;
        } addr; /* with the port, network byte order */
        uint16_t port;
} HttpdListen;

/* Parses s. On success fills *ret. On -EINVAL, when ret_error is not NULL,
 * *ret_error is a new sentence naming the option:
 * "--listen: \"x\": expected [ADDR]:PORT, e.g. \":9100\" or \"127.0.0.1:9100\"".
 * Returns 0, -EINVAL, -ENOMEM. Pure: no I/O, no name resolution. */
int httpd_parse_listen(const char *s, HttpdListen *ret, char **ret_error);

/* Writes "127.0.0.1:9100", "[::1]:9100" or ":9100" (any) into buf. */
void httpd_listen_format(const HttpdListen *l, char buf[static HTTPD_LISTEN_STRLEN]);
