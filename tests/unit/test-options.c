/* SPDX-License-Identifier: Apache-2.0 */
/* The daemon's command line: defaults, every option, every error naming its option. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <syslog.h>
#include <cmocka.h>

#include "options.h"

#define MAX_ARGS 24

typedef struct ErrorRow {
        const char *args[MAX_ARGS];
        const char *message; /* substring the error must contain */
} ErrorRow;

static const ErrorRow error_rows[] = {
        {{"--resync-interval", "abc"}, "--resync-interval: \"abc\" is not a number of seconds"},
        {{"--resync-interval", "0"}, "from 1 to 86400"},
        {{"--resync-interval", "86401"}, "--resync-interval"},
        {{"--resync-interval", "-5"}, "--resync-interval"},
        {{"--poll-interval", "1x"}, "--poll-interval"},
        {{"--watch", "fanotify"}, "--watch: \"fanotify\" is not auto, inotify or poll"},
        {{"--listen", "9100"}, "--listen: \"9100\" has no port"},
        {{"--listen", ":99999"}, "the port must be a number from 0 to 65535"},
        {{"--listen", "::1:9100"}, "write an IPv6 address as [ADDR]:PORT"},
        {{"--listen", "[::1]"}, "write an IPv6 address"},
        {{"--file", "enroot.conf"}, "--file: \"enroot.conf\" is not KEY=PATH"},
        {{"--file", "..data=/x"}, "is not a ConfigMap key"},
        {{"--file", "a b=/x"}, "is not a ConfigMap key"},
        {{"--file", "k=relative"}, "the path must be absolute"},
        {{"--file", "k=/a", "--file", "k=/b"}, "key \"k\" is given twice"},
        {{"--file", "k=/a:rwa"},
         "--file: \"rwa\" is not a format (enroot-conf, enroot-env or raw)"},
        {{"--file", "k=/a:raw:json"}, "\"json\" is not a format"},
        {{"--file", "k=relative:raw"}, "\"relative\": the path must be absolute"},
        {{"--file", "k=:raw"}, "the path must be absolute"},
        {{"--condition-detail", "keys"}, "--condition-detail: \"keys\" is not names or counts"},
        {{"--running-root", "rel"}, "--running-root: \"rel\" is not an absolute path"},
        {{"--target-process", "a/b"}, "--target-process"},
        {{"--target-process", "a-name-longer-than-15"}, "1 to 15 characters"},
        {{"--target-uid", "root"}, "--target-uid: \"root\" is not a number of uid"},
        {{"--target-uid", "-1"}, "--target-uid"},
        {{"--target-uid", "4294967295"}, "from 0 to 4294967294"},
        {{"--log-level", "loud"}, "--log-level: \"loud\""},
        {{"--timeout", "0"}, "--timeout: \"0\" is not a number of milliseconds"},
        {{"--bogus"}, "unknown option --bogus"},
        {{"--kube", "maybe"}, "--kube: \"maybe\" is not auto, on or off"},
        {{"--kube-api", "http://10.0.0.1"}, "is not an https:// URL"},
        {{"--kube-api", "https://"}, "is not https://HOST[:PORT]"},
        {{"--kube-api", "https://h/api"}, "is not https://HOST[:PORT]"},
        {{"--kube-api", "https://u@h"}, "is not https://HOST[:PORT]"},
        {{"--serviceaccount-dir", "sa"}, "--serviceaccount-dir: \"sa\" is not an absolute path"},
        {{"--condition-type", "Bad Type"}, "is not a qualified name"},
        {{"--condition-type", "example.com/"}, "is not a qualified name"},
        {{"--pod-name", "Worker"}, "--pod-name: \"Worker\" is not a valid pod name"},
        {{"--pod-name", "-a"}, "--pod-name"},
        {{"--pod-namespace", "a.b"}, "is not a valid namespace"},
        {{"--pod-uid", "a b"}, "is not a valid UID"},
        {{"--desired-dir"}, "--desired-dir needs a value"},
        {{"extra"}, "unknown command or argument \"extra\""},
        {{"--check", "--check-config"}, "exclude each other"},
        {{"--require-current"}, "--require-current only goes with --check"},
};

/* getopt wants writable strings: hand it copies. */
static int parse(const char *const *args, Options *o, char **err) {
        char *argv[MAX_ARGS + 2] = {strdupa("aicr-enroot-agent")};
        int argc = 1;

        for (size_t i = 0; i < MAX_ARGS && args[i]; i++)
                argv[argc++] = strdupa(args[i]);
        return options_parse(argc, argv, o, err);
}

static void test_errors(void **state) {
        for (size_t i = 0; i < ELEMENTSOF(error_rows); i++) {
                Options o = {};
                _cleanup_free_ char *err = NULL;

                assert_int_equal(parse(error_rows[i].args, &o, &err), -EINVAL);
                assert_non_null(err);
                if (!strstr(err, error_rows[i].message))
                        fail_msg("row %zu: \"%s\" lacks \"%s\"", i, err, error_rows[i].message);
        }
}

static void test_defaults(void **state) {
        _cleanup_(options_done) Options o = {};
        _cleanup_free_ char *err = NULL;

        assert_int_equal(parse((const char *[]){NULL}, &o, &err), 0);
        assert_int_equal(o.action, ACTION_DAEMON);
        assert_int_equal(o.n_files, 2);
        assert_string_equal(o.files[0].key, "enroot.conf");
        assert_string_equal(o.files[0].path, "/etc/enroot/enroot.conf");
        assert_string_equal(o.files[1].key, "99-aicr-defaults.env");
        assert_string_equal(o.files[1].path, "/etc/enroot/environ.d/99-aicr-defaults.env");
        assert_string_equal(o.running_root, "/");
        assert_string_equal(o.listen, ":9100");
        assert_string_equal(o.watch, "auto");
        assert_null(o.target_process);
        assert_int_equal(o.resync_usec, 60 * 1000000ull);
        assert_int_equal(o.log_level, LOG_INFO);
        /* the daemon needs --desired-dir */
        assert_int_equal(options_validate_daemon(&o, &err), -EINVAL);
        assert_non_null(strstr(err, "--desired-dir is required"));
}

static void test_everything(void **state) {
        _cleanup_(options_done) Options o = {};
        _cleanup_free_ char *err = NULL;
        const char *args[] = {
                "--desired-dir=/cm",
                "--file",
                "a.conf=/etc/a.conf",
                "--file",
                "b.env=/etc/b.env",
                "--listen",
                "[::1]:9200",
                "--resync-interval",
                "30",
                "--poll-interval",
                "2",
                "--watch",
                "poll",
                "--target-process",
                "slurmd",
                "--target-uid",
                "4294967294",
                "--log-level",
                "debug",
                "--check-config",
                NULL,
        };

        assert_int_equal(parse(args, &o, &err), 0);
        assert_int_equal(o.action, ACTION_CHECK_CONFIG);
        assert_string_equal(o.desired_dir, "/cm");
        assert_int_equal(o.n_files, 2); /* --file replaces the defaults */
        assert_string_equal(o.files[1].key, "b.env");
        assert_string_equal(o.listen, "[::1]:9200");
        assert_int_equal(o.resync_usec, 30 * 1000000ull);
        assert_int_equal(o.poll_usec, 2 * 1000000ull);
        assert_string_equal(o.watch, "poll");
        assert_string_equal(o.target_process, "slurmd");
        assert_int_equal(o.target_uid, 4294967294u);
        assert_int_equal(o.log_level, LOG_DEBUG);
        assert_int_equal(options_validate_daemon(&o, &err), 0);
}

static void test_check(void **state) {
        _cleanup_(options_done) Options o = {};
        _cleanup_free_ char *err = NULL;

        assert_int_equal(parse((const char *[]){"--check", "--require-current", "--listen",
                                                "127.0.0.1:9300", "--timeout", "250", NULL},
                               &o, &err),
                         0);
        assert_int_equal(o.action, ACTION_CHECK);
        assert_true(o.require_current);
        assert_int_equal(o.check_timeout_usec, 250000);
}

static void test_validate(void **state) {
        _cleanup_(options_done) Options o = {};
        _cleanup_free_ char *err = NULL, *err2 = NULL;

        assert_int_equal(parse((const char *[]){"--desired-dir", "rel", NULL}, &o, &err), 0);
        assert_int_equal(options_validate_daemon(&o, &err), -EINVAL);
        assert_non_null(strstr(err, "not an absolute path"));
        options_done(&o);
        assert_int_equal(parse((const char *[]){"--desired-dir", "/d", "--running-root", "/r",
                                                "--target-process", "slurmd", NULL},
                               &o, &err2),
                         0);
        free(err2);
        assert_int_equal(options_validate_daemon(&o, &err2), -EINVAL);
        assert_non_null(strstr(err2, "exclude each other"));
        options_done(&o);
        free(err2);
        err2 = NULL;
        assert_int_equal(parse((const char *[]){"--desired-dir", "/d", "--target-uid", "0", NULL},
                               &o, &err2),
                         0);
        assert_int_equal(options_validate_daemon(&o, &err2), -EINVAL);
        assert_non_null(strstr(err2, "--target-uid needs --target-process"));
}

static void test_keys(void **state) {
        char long_key[OPTIONS_MAX_KEY_LENGTH + 2];

        assert_true(configmap_key_is_valid("enroot.conf"));
        assert_true(configmap_key_is_valid("99-aicr-defaults.env"));
        assert_true(configmap_key_is_valid(".hidden"));
        assert_false(configmap_key_is_valid(""));
        assert_false(configmap_key_is_valid("."));
        assert_false(configmap_key_is_valid(".."));
        assert_false(configmap_key_is_valid("..data"));
        assert_false(configmap_key_is_valid("a/b"));
        memset(long_key, 'k', sizeof long_key - 1);
        long_key[sizeof long_key - 1] = '\0';
        assert_false(configmap_key_is_valid(long_key));
        long_key[OPTIONS_MAX_KEY_LENGTH] = '\0';
        assert_true(configmap_key_is_valid(long_key));
}

static void test_too_many_files(void **state) {
        char *argv[2 + 2 * (OPTIONS_MAX_FILES + 1)];
        char bufs[OPTIONS_MAX_FILES + 1][32];
        Options o = {};
        _cleanup_free_ char *err = NULL;
        int argc = 1;

        static char agent[] = "agent", file_opt[] = "--file";

        argv[0] = agent;
        for (unsigned i = 0; i <= OPTIONS_MAX_FILES; i++) {
                (void) snprintf(bufs[i], sizeof bufs[i], "k%u=/f%u", i, i);
                argv[argc++] = file_opt;
                argv[argc++] = bufs[i];
        }
        assert_int_equal(options_parse(argc, argv, &o, &err), -EINVAL);
        assert_non_null(strstr(err, "more than 32 files"));
}

/* KEY=PATH[:FORMAT]: the format after the last ':' when it names one,
 * else the key's default; a path may hold ':' itself. */
static void test_formats(void **state) {
        static const struct {
                const char *arg, *key, *path;
                FileFormat format;
        } rows[] = {
                {"enroot.conf=/etc/enroot/enroot.conf", "enroot.conf", "/etc/enroot/enroot.conf",
                 FILE_FORMAT_ENROOT_CONF},
                {"a.env=/e/a.env", "a.env", "/e/a.env", FILE_FORMAT_ENROOT_ENV},
                {"nginx.conf=/etc/nginx/nginx.conf", "nginx.conf", "/etc/nginx/nginx.conf",
                 FILE_FORMAT_RAW},
                {"a.conf=/etc/a.conf", "a.conf", "/etc/a.conf", FILE_FORMAT_RAW},
                {"x=/x:enroot-conf", "x", "/x", FILE_FORMAT_ENROOT_CONF},
                {"x=/x:enroot-env", "x", "/x", FILE_FORMAT_ENROOT_ENV},
                {"enroot.conf=/e:raw", "enroot.conf", "/e", FILE_FORMAT_RAW},
                {"a.env=/e/a.env:raw", "a.env", "/e/a.env", FILE_FORMAT_RAW},
                /* ':' inside the path: only the last one can start a format */
                {"x=/a:b/c", "x", "/a:b/c", FILE_FORMAT_RAW},
                {"x=/a:b/c:enroot-env", "x", "/a:b/c", FILE_FORMAT_ENROOT_ENV},
                {"x=/a:1", "x", "/a:1", FILE_FORMAT_RAW},
                {"x=/a:B", "x", "/a:B", FILE_FORMAT_RAW},
                {"x=/a:", "x", "/a:", FILE_FORMAT_RAW},
                /* a path ending in a format's name is followed by its format */
                {"x=/p:raw:raw", "x", "/p:raw", FILE_FORMAT_RAW},
                {"x=/p:raw:enroot-conf", "x", "/p:raw", FILE_FORMAT_ENROOT_CONF},
        };

        for (size_t i = 0; i < ELEMENTSOF(rows); i++) {
                _cleanup_(options_done) Options o = {};
                _cleanup_free_ char *err = NULL;

                if (parse((const char *[]){"--file", rows[i].arg, NULL}, &o, &err) != 0)
                        fail_msg("%s: %s", rows[i].arg, strnull(err));
                assert_int_equal(o.n_files, 1);
                assert_string_equal(o.files[0].key, rows[i].key);
                assert_string_equal(o.files[0].path, rows[i].path);
                if (o.files[0].format != rows[i].format)
                        fail_msg("%s: format %s, want %s", rows[i].arg,
                                 file_format_to_string(o.files[0].format),
                                 file_format_to_string(rows[i].format));
        }

        /* the defaults keep their formats; the condition names keys by default */
        {
                _cleanup_(options_done) Options o = {};
                _cleanup_free_ char *err = NULL;

                assert_int_equal(parse((const char *[]){NULL}, &o, &err), 0);
                assert_int_equal(o.files[0].format, FILE_FORMAT_ENROOT_CONF);
                assert_int_equal(o.files[1].format, FILE_FORMAT_ENROOT_ENV);
                assert_false(o.condition_counts_only);
        }
        {
                _cleanup_(options_done) Options o = {};
                _cleanup_free_ char *err = NULL;

                assert_int_equal(
                        parse((const char *[]){"--condition-detail", "counts", NULL}, &o, &err), 0);
                assert_true(o.condition_counts_only);
        }
}

/* A stand-in environment for options_apply_environment(). */
static const char *const *fake_env;
static const char *lookup(const char *name) {
        for (size_t i = 0; fake_env && fake_env[i]; i += 2)
                if (streq(fake_env[i], name))
                        return fake_env[i + 1];
        return NULL;
}

typedef struct EnvRow {
        const char *name;
        const char *args[MAX_ARGS];
        const char *env[12];
        int ret;
        bool enabled;
        const char *api;     /* the resolved API URL, or NULL */
        const char *pod;     /* pod name after the environment */
        const char *message; /* the error, or the reason auto stays off */
} EnvRow;

static const EnvRow env_rows[] = {
        {"auto outside a pod", {}, {}, 0, false, NULL, NULL, "not in a pod"},
        {"auto in a pod",
         {},
         {"KUBERNETES_SERVICE_HOST", "10.96.0.1", "KUBERNETES_SERVICE_PORT", "443", "POD_NAME",
          "w-0", "POD_NAMESPACE", "slurm", "POD_UID", "0b8c-11"},
         0,
         true,
         "https://10.96.0.1:443",
         "w-0",
         NULL},
        {"IPv6 service, default port",
         {},
         {"KUBERNETES_SERVICE_HOST", "fd00::1", "POD_NAME", "w-0"},
         0,
         true,
         "https://[fd00::1]:443",
         "w-0",
         NULL},
        {"auto in a pod without POD_NAME",
         {},
         {"KUBERNETES_SERVICE_HOST", "10.96.0.1"},
         0,
         false,
         "https://10.96.0.1:443",
         NULL,
         "POD_NAME is not set"},
        {"options win over the environment",
         {"--pod-name", "opt", "--kube-api", "https://api:6443"},
         {"KUBERNETES_SERVICE_HOST", "10.96.0.1", "POD_NAME", "env"},
         0,
         true,
         "https://api:6443",
         "opt",
         NULL},
        {"off ignores everything",
         {"--kube", "off"},
         {"KUBERNETES_SERVICE_HOST", "10.96.0.1", "POD_NAME", "BAD NAME"},
         0,
         false,
         NULL,
         NULL,
         NULL},
        {"on without an API",
         {"--kube", "on", "--pod-name", "p"},
         {},
         -EINVAL,
         false,
         NULL,
         NULL,
         "--kube on: the API server is unknown"},
        {"on without a pod name",
         {"--kube", "on"},
         {"KUBERNETES_SERVICE_HOST", "10.96.0.1"},
         -EINVAL,
         false,
         NULL,
         NULL,
         "set POD_NAME"},
        {"a bad POD_NAME is an error, not silence",
         {},
         {"KUBERNETES_SERVICE_HOST", "10.96.0.1", "POD_NAME", "Worker_0"},
         -EINVAL,
         false,
         NULL,
         NULL,
         "(from $POD_NAME)"},
        {"a bad service host",
         {},
         {"KUBERNETES_SERVICE_HOST", "a/b", "POD_NAME", "p"},
         -EINVAL,
         false,
         NULL,
         NULL,
         "KUBERNETES_SERVICE_HOST/_PORT"},
        {"empty values count as unset",
         {},
         {"KUBERNETES_SERVICE_HOST", "", "POD_NAME", ""},
         0,
         false,
         NULL,
         NULL,
         "not in a pod"},
};

static void test_environment(void **state) {
        for (size_t i = 0; i < ELEMENTSOF(env_rows); i++) {
                const EnvRow *row = &env_rows[i];
                Options o = {};
                char *err = NULL;
                int r;

                print_message("%s\n", row->name);
                assert_int_equal(parse(row->args, &o, &err), 0);
                fake_env = row->env;
                r = options_apply_environment(&o, lookup, &err);
                assert_int_equal(r, row->ret);
                if (r < 0) {
                        assert_non_null(err);
                        assert_non_null(strstr(err, row->message));
                        free(err);
                        options_done(&o);
                        continue;
                }
                assert_null(err);
                assert_int_equal(o.kube_enabled, row->enabled);
                if (row->api)
                        assert_string_equal(o.kube_api, row->api);
                else
                        assert_null(o.kube_api);
                if (row->pod)
                        assert_string_equal(o.pod_name, row->pod);
                if (row->message)
                        assert_non_null(strstr(o.kube_disabled_reason, row->message));
                else if (!row->enabled)
                        assert_null(o.kube_disabled_reason);
                options_done(&o);
        }
        fake_env = NULL;
}

int main(void) {
        const struct CMUnitTest tests[] = {
                cmocka_unit_test(test_errors),         cmocka_unit_test(test_defaults),
                cmocka_unit_test(test_everything),     cmocka_unit_test(test_check),
                cmocka_unit_test(test_validate),       cmocka_unit_test(test_keys),
                cmocka_unit_test(test_too_many_files), cmocka_unit_test(test_environment),
                cmocka_unit_test(test_formats),
        };
        return cmocka_run_group_tests(tests, NULL, NULL);
}
