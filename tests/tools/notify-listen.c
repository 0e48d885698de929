/* SPDX-License-Identifier: Apache-2.0 */
/*
 * notify-listen SOCKET SECONDS: stands in for systemd's notification socket.
 * Binds a datagram socket at SOCKET and prints every message received, one
 * assignment per line, until SECONDS pass or a message holds STOPPING=1.
 */
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <time.h>
#include <unistd.h>

int main(int argc, char **argv) {
        struct sockaddr_un sa = {.sun_family = AF_UNIX};
        struct timespec start, now;
        char buf[4096];
        int fd, seconds;

        if (argc != 3 || strlen(argv[1]) >= sizeof sa.sun_path || (seconds = atoi(argv[2])) <= 0) {
                fprintf(stderr, "usage: notify-listen SOCKET SECONDS\n");
                return 2;
        }
        strcpy(sa.sun_path, argv[1]);
        fd = socket(AF_UNIX, SOCK_DGRAM | SOCK_CLOEXEC, 0);
        if (fd < 0 || bind(fd, (struct sockaddr *) &sa, sizeof sa) < 0) {
                perror("notify-listen");
                return 2;
        }
        printf("listening\n");
        fflush(stdout);
        clock_gettime(CLOCK_MONOTONIC, &start);
        for (;;) {
                struct pollfd p = {.fd = fd, .events = POLLIN};
                ssize_t n;
                long left;

                clock_gettime(CLOCK_MONOTONIC, &now);
                left = seconds * 1000L - ((now.tv_sec - start.tv_sec) * 1000L +
                                          (now.tv_nsec - start.tv_nsec) / 1000000L);
                if (left <= 0 || poll(&p, 1, (int) left) <= 0)
                        break;
                n = recv(fd, buf, sizeof buf - 1, 0);
                if (n <= 0)
                        continue;
                buf[n] = '\0';
                printf("%s\n", buf);
                fflush(stdout);
                if (strstr(buf, "STOPPING=1"))
                        break;
        }
        close(fd);
        unlink(argv[1]);
        return 0;
}
