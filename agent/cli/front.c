/* SPDX-License-Identifier: Apache-2.0 */
/*
 * aicr-enroot-agent, the command that people, systemd and kubelet run.
 *
 * The readiness probe (--check) runs here, linked with libc alone: kubelet
 * execs it every few seconds in every pod, and loading the daemon's
 * libraries (libsystemd, libcurl, libmicrohttpd, libcrypto and the forty or
 * so objects they bring) would cost every probe tens of milliseconds of CPU
 * and megabytes of memory for code it never calls. The build enforces it:
 * this program links the io, model and basic layer libraries (libio.a,
 * libmodel.a, libbasic.a) without the daemon's libraries ($(DEP_LIBS)), so a
 * probe path that reached for one would not link.
 *
 * `rollout` is the operator's tool, aicr-enroot-rollout, executed with the
 * arguments from "rollout" on. Everything else (the daemon, --check-config,
 * --help, --version, lint, diff) is the full program, aicr-enroot-agentd,
 * executed with the same arguments. Either runs in the same process:
 * systemd's Type=notify, kubelet, signals and exit statuses see no
 * difference. Both are found the same way, from a build tree or an
 * installation.
 */
#include <limits.h>
#include <unistd.h>

#include "check.h"
#include "commands.h"
#include "log.h"
#include "options.h"

#define FULL_PROGRAM        "aicr-enroot-agentd"
#define ROLLOUT_PROGRAM     "aicr-enroot-rollout"
/* From bindir to pkglibexecdir in the default layout ($prefix/bin, $prefix/libexec). */
#define LIBEXEC_FROM_BINDIR "/../libexec/" PACKAGE "/"

/* Only the probe is answered here; a command, an error or anything else is
 * for the full program, which says the same things the same way. */
static bool is_probe(int argc, char **argv, Options *o) {
        _cleanup_free_ char *error = NULL;
        bool check = false;

        /* Only a command line naming --check is parsed here (the full
         * program parses every other one itself, once). */
        for (int i = 1; i < argc && !check; i++)
                check = streq(argv[i], "--check");
        if (!check || argv[1][0] != '-')
                return false;
        return options_parse(argc, argv, o, &error) >= 0 && o->action == ACTION_CHECK;
}

/* execv()s path; returns only on failure: 0 when nothing is there, else
 * -errno after saying why. */
static int try_exec(const char *path, char **argv) {
        int r;

        (void) execv(path, argv);
        if (errno == ENOENT || errno == ENOTDIR)
                return 0;
        r = negative_errno();
        return log_error_errno(r, "Cannot run %s: %m.", path);
}

/* Execs the program name with argv; what is a few words on what it runs,
 * for the message when it is missing. Returns only on failure, with the exit
 * status. */
static int exec_program(const char *name, const char *what, char **argv) {
        char self[PATH_MAX], path[PATH_MAX + sizeof LIBEXEC_FROM_BINDIR + NAME_MAX];
        ssize_t n;
        int r;

        /* Beside this program (a build tree), then where an installation with
         * this one in its bindir keeps it (so a relocated tree, or an image
         * that copied both, works), then where this build was configured to
         * install it. */
        n = readlink("/proc/self/exe", self, sizeof self - 1);
        if (n > 0) {
                char *slash;

                self[n] = '\0';
                slash = strrchr(self, '/');
                if (slash) {
                        *slash = '\0';
                        (void) snprintf(path, sizeof path, "%s/%s", self, name);
                        r = try_exec(path, argv);
                        if (r < 0)
                                return EXIT_TROUBLE;
                        (void) snprintf(path, sizeof path, "%s%s%s", self, LIBEXEC_FROM_BINDIR,
                                        name);
                        r = try_exec(path, argv);
                        if (r < 0)
                                return EXIT_TROUBLE;
                }
        }
        (void) snprintf(path, sizeof path, "%s/%s", PKGLIBEXECDIR, name);
        r = try_exec(path, argv);
        if (r == 0)
                log_error("Cannot find %s, the program that runs %s: "
                          "install it in %s or beside this program.",
                          name, what, PKGLIBEXECDIR);
        return EXIT_TROUBLE;
}

int main(int argc, char **argv) {
        _cleanup_(options_done) Options o = {};

        log_setup();
        /* The rollout tool gets the whole command line, so that ps shows the
         * command the operator typed; it reads its arguments from "rollout" on. */
        if (argc > 1 && streq(argv[1], "rollout"))
                return exec_program(ROLLOUT_PROGRAM, "rollout", argv);
        if (!is_probe(argc, argv, &o))
                return exec_program(FULL_PROGRAM, "every command but --check and rollout", argv);
        log_set_max_level(o.log_level);
        return check_run(o.listen, o.require_current, o.check_timeout_usec);
}
