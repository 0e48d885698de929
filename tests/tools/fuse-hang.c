/* SPDX-License-Identifier: Apache-2.0 */
/*
 * fuse-hang: a FUSE file system that never answers, for tests of what the
 * agent does when a running file sits on a hung mount.
 *
 *   fuse-hang [--take] MOUNTPOINT READY-FILE
 *
 * Mounts a FUSE file system at MOUNTPOINT (a directory or a regular file:
 * the root takes the same type, as a subPath bind mount of a file does),
 * answers the kernel's INIT, and then answers nothing:
 *  - default: it stops reading /dev/fuse, as a server stuck in one request
 *    does. Requests stay queued in the kernel; a process waiting for one can
 *    still be killed (SIGKILL).
 *  - --take: it reads every request and drops it, as a server that took the
 *    request and hangs while serving it does. The kernel then waits for the
 *    answer uninterruptibly: a process waiting for one cannot even be killed.
 * Each request taken is counted: READY-FILE is written (atomically, by
 * rename) with "requests N" after the mount and after each request, so a test
 * can see how many reads reached the file system.
 *
 * The mount ends the way a crashed server's does: when this process dies,
 * /dev/fuse is closed, the kernel aborts the connection, every waiting request
 * fails with ECONNABORTED and later ones with ENOTCONN until the mount point
 * is unmounted (umount -l).
 *
 * Needs CAP_SYS_ADMIN in the mount namespace's owner (root, or root of a user
 * namespace on Linux >= 4.18) and /dev/fuse. Exits 77 with a reason on
 * stderr when mounting is not permitted here, 1 on other errors.
 *
 * Not covered: everything a real file system answers (LOOKUP, GETATTR, READ
 * ...): it only ever hangs.
 */
#include <errno.h>
#include <fcntl.h>
#include <linux/fuse.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mount.h>
#include <sys/stat.h>
#include <unistd.h>

/* At least FUSE_MIN_READ_BUFFER (8 KiB) and a page over the largest write. */
#define BUFFER_BYTES (FUSE_MIN_READ_BUFFER + 128 * 1024)

static const char *ready_path;

static void write_ready(unsigned long requests) {
        char tmp[4096];
        FILE *f;

        (void) snprintf(tmp, sizeof tmp, "%s.tmp", ready_path);
        f = fopen(tmp, "we");
        if (!f) {
                perror(tmp);
                exit(1);
        }
        (void) fprintf(f, "requests %lu\n", requests);
        if (fclose(f) != 0 || rename(tmp, ready_path) < 0) {
                perror(ready_path);
                exit(1);
        }
}

static void answer_init(int fd, const struct fuse_in_header *in, const struct fuse_init_in *init) {
        struct {
                struct fuse_out_header h;
                struct fuse_init_out o;
        } out = {};

        out.h.len = sizeof out;
        out.h.unique = in->unique;
        out.o.major = FUSE_KERNEL_VERSION;
        out.o.minor =
                init->minor < FUSE_KERNEL_MINOR_VERSION ? init->minor : FUSE_KERNEL_MINOR_VERSION;
        out.o.max_readahead = init->max_readahead;
        out.o.max_write = 4096;
        if (write(fd, &out, sizeof out) != (ssize_t) sizeof out) {
                perror("fuse-hang: answering INIT");
                exit(1);
        }
}

int main(int argc, char **argv) {
        static char buf[BUFFER_BYTES];
        unsigned long requests = 0;
        bool take = false;
        char opts[256];
        struct stat st;
        int fd;

        if (argc > 1 && strcmp(argv[1], "--take") == 0) {
                take = true;
                argc--;
                argv++;
        }
        if (argc != 3) {
                fprintf(stderr, "usage: fuse-hang [--take] MOUNTPOINT READY-FILE\n");
                return 2;
        }
        ready_path = argv[2];
        if (stat(argv[1], &st) < 0) {
                perror(argv[1]);
                return 1;
        }
        fd = open("/dev/fuse", O_RDWR | O_CLOEXEC);
        if (fd < 0) {
                fprintf(stderr, "fuse-hang: cannot open /dev/fuse: %s\n", strerror(errno));
                return errno == ENOENT || errno == EACCES || errno == EPERM ? 77 : 1;
        }
        (void) snprintf(opts, sizeof opts, "fd=%d,rootmode=%o,user_id=%u,group_id=%u", fd,
                        (unsigned) (st.st_mode & S_IFMT), (unsigned) getuid(), (unsigned) getgid());
        if (mount("fuse-hang", argv[1], "fuse.fuse-hang", MS_NOSUID | MS_NODEV, opts) < 0) {
                fprintf(stderr, "fuse-hang: cannot mount on %s: %s\n", argv[1], strerror(errno));
                return errno == EPERM || errno == EACCES || errno == ENODEV ? 77 : 1;
        }

        for (;;) {
                const struct fuse_in_header *in = (const void *) buf;
                ssize_t n = read(fd, buf, sizeof buf);

                if (n < 0 && (errno == EINTR || errno == EAGAIN || errno == ENOENT))
                        continue; /* ENOENT: a request was interrupted before we read it */
                if (n < 0) {
                        /* ENODEV: unmounted */
                        if (errno == ENODEV)
                                return 0;
                        perror("fuse-hang: reading /dev/fuse");
                        return 1;
                }
                if ((size_t) n < sizeof *in)
                        continue;
                if (in->opcode == FUSE_INIT) {
                        if ((size_t) n < sizeof *in + sizeof(struct fuse_init_in))
                                return 1;
                        answer_init(fd, in, (const void *) (buf + sizeof *in));
                        write_ready(requests);
                        if (!take)
                                break;
                        continue;
                }
                if (in->opcode == FUSE_INTERRUPT)
                        continue;
                write_ready(++requests); /* and never answer it */
        }
        /* Stuck for good: the requests stay queued until this process dies. */
        for (;;)
                pause();
}
