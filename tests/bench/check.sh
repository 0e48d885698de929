#!/bin/bash
# SPDX-License-Identifier: Apache-2.0
#
# The cost of one `aicr-enroot-agent --check` (kubelet's exec readiness probe,
# paid every period in every pod) against a running agent: wall time and CPU
# (hyperfine), peak memory (/usr/bin/time), beside a ladder of floors compiled
# here, so the difference is accounted for step by step:
#   nothing (static)   a C program that links nothing and returns 0: exec alone
#   nothing (libc)     the same, dynamically linked: + the loader and libc
#   + daemon libraries the same, linked with every library the daemon
#                      (aicr-enroot-agentd) links: what every probe paid while
#                      --check was the daemon's binary
#   probe (libc)       a C program doing what --check does (connect, GET
#                      /readyz, print the line), libc only
#   --check            the agent's probe
# Usage: check.sh (through run.sh or make bench)
. "$(dirname "$0")/lib.sh"
need hyperfine hyperfine
need jq jq
[ -x /usr/bin/time ] || { say "SKIP: /usr/bin/time is not installed (Debian package time)" >&2; exit 77; }
CC=${CC:-cc}
runs=$(count 500 100)

make_payload "$WORK/src"
make_volume "$WORK" "$WORK/src"
start_agent "$WORK/agent.log" --desired-dir "$WORK/cm" --running-root "$WORK/root" \
        --resync-interval 3600

printf 'int main(void) { return 0; }\n' >"$WORK/nothing.c"
cat >"$WORK/probe.c" <<'EOF'
/* What --check does, with libc alone: GET /readyz, print the body's line. */
#include <arpa/inet.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>
int main(int argc, char **argv) {
        struct sockaddr_in sa = {.sin_family = AF_INET};
        char buf[4096], req[] = "GET /readyz HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n", *body;
        size_t got = 0;
        ssize_t n;
        int fd;

        if (argc < 2)
                return 2;
        sa.sin_port = htons((unsigned short) atoi(argv[1]));
        sa.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
        fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
        if (fd < 0 || connect(fd, (struct sockaddr *) &sa, sizeof sa) < 0 ||
            write(fd, req, sizeof req - 1) != (ssize_t) sizeof req - 1)
                return 1;
        while (got < sizeof buf - 1 && (n = read(fd, buf + got, sizeof buf - 1 - got)) > 0)
                got += (size_t) n;
        buf[got] = '\0';
        body = strstr(buf, "\r\n\r\n");
        fputs(body ? body + 4 : "not ready\n", stdout);
        return strncmp(buf, "HTTP/1.1 200", 12) != 0;
}
EOF
"$CC" -O2 -o "$WORK/nothing-dynamic" "$WORK/nothing.c"
"$CC" -O2 -static -o "$WORK/nothing-static" "$WORK/nothing.c" 2>/dev/null ||
        cp "$WORK/nothing-dynamic" "$WORK/nothing-static"
"$CC" -O2 -o "$WORK/probe" "$WORK/probe.c"
# the daemon, whose libraries aicr-enroot-agent (the front end) no longer loads
full=${AGENT_FULL:-$(dirname "$AGENT")/aicr-enroot-agentd}
[ -x "$full" ] || full=$AGENT
mapfile -t libs < <(readelf -d "$full" | sed -n 's/.*(NEEDED).*\[\(.*\)\]/\1/p' | grep -v '^libc\.so')
lflags=()
for lib in "${libs[@]}"; do lflags+=("-l:$lib"); done
"$CC" -O2 -o "$WORK/with-libs" "$WORK/nothing.c" -Wl,--no-as-needed "${lflags[@]}"

# cost NAME CMD...: sets WALL (ms, mean), CPU (ms, user+system mean), RSS (KiB, median peak)
cost() {
        local name=$1
        shift
        hyperfine -N --warmup 20 --runs "$runs" --export-json "$WORK/h.json" "$*" >/dev/null 2>&1
        WALL=$(jq '.results[0].mean * 1000' "$WORK/h.json")
        CPU=$(jq '(.results[0].user + .results[0].system) * 1000' "$WORK/h.json")
        RSS=$(for _ in 1 2 3 4 5 6 7 8 9; do
                /usr/bin/time -f %M "$@" 2>&1 >/dev/null | tail -1
        done | sort -n | sed -n 5p)
        result "check $name wall" "$(printf %.3f "$WALL")" ms \
                "CPU $(printf %.3f "$CPU") ms, peak RSS $RSS KiB"
}

cost "nothing (static)" "$WORK/nothing-static"
f_wall=$WALL f_rss=$RSS
cost "nothing (libc)" "$WORK/nothing-dynamic"
d_wall=$WALL
cost "nothing + daemon libraries" "$WORK/with-libs"
l_wall=$WALL l_rss=$RSS
cost "probe in C (libc)" "$WORK/probe" "$PORT"
p_wall=$WALL
cost "--check" "$AGENT" --check --listen "127.0.0.1:$PORT"
c_wall=$WALL c_rss=$RSS

result "check --check - floor" "$(awk -v a="$c_wall" -v b="$f_wall" 'BEGIN { printf "%.3f", a - b }')" ms \
        "$((c_rss - f_rss)) KiB more peak RSS"
result "check of which libc and loader" "$(awk -v a="$d_wall" -v b="$f_wall" 'BEGIN { printf "%.3f", a - b }')" ms
result "check of which the request" "$(awk -v a="$p_wall" -v b="$d_wall" 'BEGIN { printf "%.3f", a - b }')" ms \
        "connect, the agent's answer, print"
result "check rest (option parsing, the front end's own start)" \
        "$(awk -v c="$c_wall" -v p="$p_wall" 'BEGIN { printf "%.3f", c - p }')" ms
result "check saved by not loading the daemon libraries" \
        "$(awk -v a="$l_wall" -v b="$d_wall" 'BEGIN { printf "%.3f", a - b }')" ms \
        "$((l_rss - f_rss)) KiB peak RSS with the loader"
if le "$c_wall" "$(awk -v f="$f_wall" 'BEGIN { print f + 3 }')"; then
        target "--check within a few ms (3) of the floor" MET "$(awk -v a="$c_wall" -v b="$f_wall" 'BEGIN { printf "+%.2f ms", a - b }')"
else
        target "--check within a few ms (3) of the floor" MISSED "$(awk -v a="$c_wall" -v b="$f_wall" 'BEGIN { printf "+%.2f ms", a - b }')"
fi
