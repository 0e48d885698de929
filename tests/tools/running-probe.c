/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Test tool: prints the running view (running.h) as "name=value" lines so
 * that a script can check it against real processes and real bind mounts.
 *
 *   running-probe [--proc DIR] [--root DIR] [--target NAME] [--target-uid UID]
 *                 [--last-pid PID] [--max-bytes N] [--wait-exit SECONDS] PATH...
 *
 * Lines: view.observable, view.error, view.detail, view.note, view.warning,
 * view.pid,
 * view.pidfd (1 when one was returned), view.resolve, view.mountinfo_error,
 * view.mountinfo_malformed, then for each PATH (index i): file[i].path,
 * .error, .content (C-escaped), .size, .nlink, .dev, .ino, .mount_known,
 * .mount_point, .mount_id, .mount_root, .mount_version, .mount_deleted.
 * Errors print as their names (ENOENT) or numbers. With --wait-exit, the
 * probe then waits up to SECONDS for the pidfd to report the exit and prints
 * view.exited=1 or 0.
 * Exits 0 when it printed a view, 1 on a usage error or failure.
 */
#include <getopt.h>
#include <poll.h>
#include <stdio.h>

#include "fileio.h"
#include "macro.h"
#include "root-open.h"
#include "running.h"

#define PROBE_DEFAULT_MAX_BYTES (1024u * 1024u)

static const char *errno_name(int error) {
        static char buf[32];

        switch (-error) {
        case 0:
                return "0";
        case ENOENT:
                return "ENOENT";
        case EACCES:
                return "EACCES";
        case EPERM:
                return "EPERM";
        case ESRCH:
                return "ESRCH";
        case EFBIG:
                return "EFBIG";
        case EISDIR:
                return "EISDIR";
        case EMEDIUMTYPE:
                return "EMEDIUMTYPE";
        case EBADFD:
                return "EBADFD";
        case ELOOP:
                return "ELOOP";
        case ENOTDIR:
                return "ENOTDIR";
        case ENAMETOOLONG:
                return "ENAMETOOLONG";
        default:
                (void) snprintf(buf, sizeof buf, "%d", error);
                return buf;
        }
}

static void print_escaped(const char *name, const char *s, size_t len) {
        printf("%s=", name);
        for (size_t i = 0; i < len; i++) {
                unsigned char c = (unsigned char) s[i];
                if (c == '\\')
                        fputs("\\\\", stdout);
                else if (c == '\n')
                        fputs("\\n", stdout);
                else if (c < 0x20 || c >= 0x7f)
                        printf("\\x%02x", c);
                else
                        putchar(c);
        }
        putchar('\n');
}

static void print_view(const RunningView *v) {
        printf("view.observable=%d\n", v->observable);
        printf("view.error=%s\n", errno_name(v->error));
        printf("view.detail=%s\n", v->detail ? v->detail : "");
        printf("view.note=%s\n", v->note ? v->note : "");
        printf("view.warning=%s\n", v->warning ? v->warning : "");
        printf("view.pid=%d\n", (int) v->pid);
        printf("view.pidfd=%d\n", v->pidfd >= 0);
        printf("view.resolve=%s\n", v->resolve == ROOT_RESOLVE_WALK ? "walk" : "openat2");
        printf("view.mountinfo_error=%s\n", errno_name(v->mountinfo_error));
        printf("view.mountinfo_malformed=%zu\n", v->mountinfo_malformed);
        for (size_t i = 0; i < v->n_files; i++) {
                const RunningFile *f = &v->files[i];
                char name[64];

                printf("file[%zu].path=%s\n", i, f->path);
                printf("file[%zu].error=%s\n", i, errno_name(f->error));
                (void) snprintf(name, sizeof name, "file[%zu].content", i);
                print_escaped(name, f->content ? f->content : "", f->size);
                printf("file[%zu].size=%zu\n", i, f->size);
                if (f->have_stat) {
                        printf("file[%zu].nlink=%lu\n", i, f->nlink);
                        printf("file[%zu].dev=%llu\n", i, (unsigned long long) f->dev);
                        printf("file[%zu].ino=%llu\n", i, (unsigned long long) f->ino);
                }
                printf("file[%zu].mount_known=%d\n", i, f->mount_known);
                printf("file[%zu].mount_point=%d\n", i, f->mount_point);
                printf("file[%zu].mount_id=%llu\n", i, (unsigned long long) f->mount_id);
                printf("file[%zu].mount_root=%s\n", i, f->mount_root ? f->mount_root : "");
                printf("file[%zu].mount_version=%s\n", i, f->mount_version ? f->mount_version : "");
                printf("file[%zu].mount_deleted=%d\n", i, f->mount_deleted);
        }
}

int main(int argc, char **argv) {
        static const struct option options[] = {
                {"proc", required_argument, NULL, 'p'},
                {"root", required_argument, NULL, 'r'},
                {"target", required_argument, NULL, 't'},
                {"target-uid", required_argument, NULL, 'u'},
                {"last-pid", required_argument, NULL, 'l'},
                {"max-bytes", required_argument, NULL, 'm'},
                {"wait-exit", required_argument, NULL, 'w'},
                {},
        };
        _cleanup_(running_view_freep) RunningView *v = NULL;
        RunningConfig cfg = {.max_bytes = PROBE_DEFAULT_MAX_BYTES};
        long last_pid = 0, wait_sec = -1;
        int c, r;

        while ((c = getopt_long(argc, argv, "", options, NULL)) >= 0)
                switch (c) {
                case 'p':
                        cfg.proc_dir = optarg;
                        break;
                case 'r':
                        cfg.running_root = optarg;
                        break;
                case 't':
                        cfg.target_process = optarg;
                        break;
                case 'u':
                        cfg.target_uid = (uid_t) strtoul(optarg, NULL, 10);
                        break;
                case 'l':
                        last_pid = strtol(optarg, NULL, 10);
                        break;
                case 'm':
                        cfg.max_bytes = strtoul(optarg, NULL, 10);
                        break;
                case 'w':
                        wait_sec = strtol(optarg, NULL, 10);
                        break;
                default:
                        return 1;
                }
        if (optind >= argc) {
                fprintf(stderr, "running-probe: no PATH given\n");
                return 1;
        }
        cfg.paths = (const char *const *) (argv + optind);
        cfg.n_paths = (size_t) (argc - optind);

        r = running_read(&cfg, (pid_t) last_pid, &v);
        if (r < 0) {
                fprintf(stderr, "running-probe: running_read() failed: %s\n", strerror(-r));
                return 1;
        }
        print_view(v);

        if (wait_sec >= 0) {
                struct pollfd p = {.fd = v->pidfd, .events = POLLIN};
                int n;

                if (v->pidfd < 0) {
                        fprintf(stderr, "running-probe: no pidfd to wait on\n");
                        return 1;
                }
                /* Tell the script we are waiting, then wait. */
                printf("view.waiting=1\n");
                fflush(stdout);
                n = poll(&p, 1, (int) (wait_sec * 1000));
                printf("view.exited=%d\n", n == 1 && (p.revents & POLLIN));
        }
        return 0;
}
