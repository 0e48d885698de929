/* SPDX-License-Identifier: Apache-2.0 */
#include <getopt.h>
#include <stdarg.h>
#include <syslog.h>

#include "condition-type.h"
#include "options.h"
#include "string-table.h"

const char options_help[] =
        "Usage: aicr-enroot-agent [OPTIONS]              run the agent\n"
        "       aicr-enroot-agent --check [OPTIONS]      ask the running agent (readiness probe)\n"
        "       aicr-enroot-agent lint|diff|rollout ...  one-shot commands (see COMMAND --help)\n"
        "\n"
        "Watches the whole-directory projection of the enroot ConfigMap and reports whether\n"
        "the files this container runs still match it, as enroot reads them.\n"
        "\n"
        "  --desired-dir DIR         the ConfigMap mounted as a whole directory (no subPath)\n"
        "  --file KEY=PATH[:FORMAT]  compare ConfigMap key KEY with the running file PATH\n"
        "                            (repeatable; default enroot.conf=/etc/enroot/enroot.conf\n"
        "                            and "
        "99-aicr-defaults.env=/etc/enroot/environ.d/99-aicr-defaults.env)\n"
        "                            FORMAT: enroot-conf, enroot-env or raw (bytes only);\n"
        "                            default enroot-env for *.env keys, enroot-conf for\n"
        "                            enroot.conf, raw for any other key\n"
        "  --running-root DIR        prefix for the running paths (default /)\n"
        "  --target-process NAME     read the running files through /proc/PID/root of the\n"
        "                            process NAME (a sidecar with shareProcessNamespace: true;\n"
        "                            needs the same uid or CAP_SYS_PTRACE)\n"
        "  --target-uid UID          with --target-process: the uid the process runs as,\n"
        "                            in the agent's user namespace (default 0, root)\n"
        "  --listen [ADDR]:PORT      serve /metrics, /healthz, /readyz, /status (default :9100)\n"
        "  --resync-interval SECONDS full re-verification period (default 60)\n"
        "  --poll-interval SECONDS   polling period when inotify is unavailable (default 5)\n"
        "  --watch auto|inotify|poll how to notice ConfigMap updates (default auto)\n"
        "  --log-level LEVEL         debug, info, notice, warning or err (default info)\n"
        "\n"
        "The pod condition (needs RBAC: get, watch pods; patch pods/status; create events):\n"
        "  --kube auto|on|off        keep the condition on this pod (default auto: on in a\n"
        "                            pod, where KUBERNETES_SERVICE_HOST is set)\n"
        "  --kube-api URL            the API server, https://HOST:PORT (default from\n"
        "                            KUBERNETES_SERVICE_HOST and KUBERNETES_SERVICE_PORT)\n"
        "  --serviceaccount-dir DIR  token, ca.crt and namespace (default\n"
        "                            " OPTIONS_DEFAULT_SERVICEACCOUNT_DIR ")\n"
        "  --condition-type TYPE     the condition's type (default " CONDITION_DEFAULT_TYPE ")\n"
        "  --condition-detail names|counts\n"
        "                            what the condition and its Events name: keys and\n"
        "                            settings (default), or only counts of files by state\n"
        "                            (for Secrets, whose key names may be sensitive)\n"
        "  --pod-name NAME           this pod (default $POD_NAME, from the downward API)\n"
        "  --pod-namespace NS        its namespace (default $POD_NAMESPACE, else the\n"
        "                            service account's namespace file)\n"
        "  --pod-uid UID             its UID (default $POD_UID): a replacement pod with the\n"
        "                            same name is never written to\n"
        "  --agent-container NAME    the agent's own container in the pod (default\n"
        "                            " OPTIONS_DEFAULT_AGENT_CONTAINER ")\n"
        "  --workload-container NAME the container whose files the agent's own subPath\n"
        "                            mounts stand for (repeatable; default: every other\n"
        "                            container with a subPath mount at a --file path)\n"
        "\n"
        "  --check-config            validate the options and exit\n"
        "  --check                   ask the running agent's /readyz: exit 0 ready, 1 not\n"
        "  --require-current         with --check: not ready unless every file is current\n"
        "  --timeout MILLISECONDS    with --check: give up after this long (default 1000)\n"
        "  -h, --help                show this help\n"
        "  --version                 show the version\n";

/* The ConfigMap keys and the paths Slinky mounts them at (docs/DESIGN.md §1). */
static const struct {
        const char *key, *path;
} default_files[] = {
        {"enroot.conf", "/etc/enroot/enroot.conf"},
        {"99-aicr-defaults.env", "/etc/enroot/environ.d/99-aicr-defaults.env"},
};

static int fail(char **ret_error, const char *fmt, ...) _printf_(2, 3);
static int fail(char **ret_error, const char *fmt, ...) {
        va_list ap;
        int r;

        va_start(ap, fmt);
        r = vasprintf(ret_error, fmt, ap);
        va_end(ap);
        return r < 0 ? -ENOMEM : -EINVAL;
}

bool configmap_key_is_valid(const char *key) {
        size_t n = strlen(key);

        if (n == 0 || n > OPTIONS_MAX_KEY_LENGTH)
                return false;
        if (streq(key, ".") || streq(key, "..") || startswith(key, ".."))
                return false;
        for (const char *p = key; *p; p++)
                if (!((*p >= 'a' && *p <= 'z') || (*p >= 'A' && *p <= 'Z') ||
                      (*p >= '0' && *p <= '9') || *p == '-' || *p == '_' || *p == '.'))
                        return false;
        return true;
}

void options_done(Options *o) {
        free(o->desired_dir);
        for (size_t i = 0; i < o->n_files; i++) {
                free(o->files[i].key);
                free(o->files[i].path);
        }
        free(o->files);
        free(o->running_root);
        free(o->target_process);
        free(o->listen);
        free(o->watch);
        free(o->kube_api);
        free(o->serviceaccount_dir);
        free(o->condition_type);
        free(o->pod_name);
        free(o->pod_namespace);
        free(o->pod_uid);
        free(o->agent_container);
        for (size_t i = 0; i < o->n_workload_containers; i++)
                free(o->workload_containers[i]);
        free(o->workload_containers);
        *o = (Options){};
}

static int set_string(char **dst, const char *s) {
        char *c = strdup(s);
        if (!c)
                return -ENOMEM;
        free(*dst);
        *dst = c;
        return 0;
}

/* A whole number from min to max; the message names the option and the unit. */
static int parse_number(const char *opt, const char *s, unsigned min, unsigned max,
                        const char *unit, uint64_t *ret, char **ret_error) {
        char *end = NULL;
        unsigned long v;

        errno = 0;
        v = strtoul(s, &end, 10);
        if (errno || !end || *end || end == s || *s == '-' || v < min || v > max)
                return fail(ret_error, "%s: \"%s\" is not a number of %s from %u to %u", opt, s,
                            unit, min, max);
        *ret = v;
        return 0;
}

static int parse_seconds(const char *opt, const char *s, uint64_t *ret_usec, char **ret_error) {
        uint64_t v;
        int r = parse_number(opt, s, 1, OPTIONS_MAX_RESYNC_SECONDS, "seconds", &v, ret_error);
        if (r < 0)
                return r;
        *ret_usec = v * 1000000u;
        return 0;
}

static int parse_listen(const char *s, char **ret_error) {
        const char *colon = strrchr(s, ':');
        char *end = NULL;
        unsigned long port;

        /* [ADDR]:PORT: the address may be empty (all), IPv4, a name, or [IPv6]. */
        if (!colon)
                return fail(ret_error, "--listen: \"%s\" has no port: use [ADDR]:PORT, e.g. :9100",
                            s);
        if (s[0] == '[' && (colon == s || colon[-1] != ']'))
                return fail(ret_error, "--listen: \"%s\": write an IPv6 address as [ADDR]:PORT", s);
        if (s[0] != '[' && memchr(s, ':', (size_t) (colon - s)))
                return fail(ret_error, "--listen: \"%s\": write an IPv6 address as [ADDR]:PORT", s);
        errno = 0;
        port = strtoul(colon + 1, &end, 10);
        if (errno || !end || *end || end == colon + 1 || colon[1] == '-' || port > 65535)
                return fail(ret_error,
                            "--listen: \"%s\": the port must be a number from 0 to 65535", s);
        return 0;
}

/* https://HOST[:PORT]: only TLS, and no path (the client adds /api/v1/...). */
static int check_api_url(const char *what, const char *url, char **ret_error) {
        const char *host = startswith(url, "https://");

        if (!host)
                return fail(ret_error,
                            "%s: \"%s\" is not an https:// URL (the API server is "
                            "always reached over verified TLS)",
                            what, url);
        if (!*host || strlen(url) > OPTIONS_MAX_URL_LENGTH || strpbrk(host, "/?#@ \t\r\n"))
                return fail(ret_error, "%s: \"%s\" is not https://HOST[:PORT]", what, url);
        return 0;
}

/* A pod name (DNS subdomain), namespace (DNS label) or UID, from an option
 * or the downward API. */
static bool pod_field_is_valid(const char *what, const char *s) {
        size_t n = strlen(s), max = streq(what, "--pod-name")        ? OPTIONS_MAX_POD_NAME_LENGTH
                                    : streq(what, "--pod-namespace") ? OPTIONS_MAX_NAMESPACE_LENGTH
                                                                     : OPTIONS_MAX_UID_LENGTH;

        if (n == 0 || n > max)
                return false;
        for (const char *p = s; *p; p++) {
                bool ok = (*p >= 'a' && *p <= 'z') || (*p >= '0' && *p <= '9') || *p == '-' ||
                          (*p == '.' && streq(what, "--pod-name"));
                if (!ok)
                        return false;
        }
        return s[0] != '-' && s[0] != '.' && s[n - 1] != '-' && s[n - 1] != '.';
}

static int set_pod_field(const char *what, const char *value, char **dst, char **ret_error) {
        if (!pod_field_is_valid(what, value))
                return fail(ret_error,
                            "%s: \"%s\" is not a valid %s (lowercase letters, digits and '-'%s, "
                            "at most %u characters)",
                            what, value,
                            streq(what, "--pod-name")        ? "pod name"
                            : streq(what, "--pod-namespace") ? "namespace"
                                                             : "UID",
                            streq(what, "--pod-name") ? " and '.'" : "",
                            streq(what, "--pod-name")        ? OPTIONS_MAX_POD_NAME_LENGTH
                            : streq(what, "--pod-namespace") ? OPTIONS_MAX_NAMESPACE_LENGTH
                                                             : OPTIONS_MAX_UID_LENGTH);
        return set_string(dst, value);
}

/* True for what could be meant as a format name: a word of lowercase
 * letters and '-' (a path's last component rarely is one after a ':'). */
static bool looks_like_format(const char *s) {
        if (!*s)
                return false;
        for (; *s; s++)
                if (!((*s >= 'a' && *s <= 'z') || *s == '-'))
                        return false;
        return true;
}

/* KEY=PATH[:FORMAT]. The text after the last ':' is the format when it is a
 * format's name; a word that looks like one but is not is refused rather
 * than taken as part of the path, so a typo cannot turn into a missing file.
 * A path that itself ends in ":raw" (or another format's name) is written
 * with its format after it: KEY=/p:raw:raw. */
static int add_file(Options *o, const char *arg, bool *defaults, char **ret_error) {
        const char *eq = strchr(arg, '='), *colon;
        _cleanup_free_ char *key = NULL, *path = NULL;
        FileFormat format;
        FileSpec *n;

        if (*defaults) {
                /* The first --file replaces the default pair. */
                for (size_t i = 0; i < o->n_files; i++) {
                        free(o->files[i].key);
                        free(o->files[i].path);
                }
                o->n_files = 0;
                *defaults = false;
        }
        if (!eq)
                return fail(ret_error, "--file: \"%s\" is not KEY=PATH[:FORMAT]", arg);
        key = strndup(arg, (size_t) (eq - arg));
        if (!key)
                return -ENOMEM;
        if (!configmap_key_is_valid(key))
                return fail(ret_error,
                            "--file: \"%s\" is not a ConfigMap key (letters, digits, '-', '_' and "
                            "'.', at most %u, not starting with \"..\")",
                            key, OPTIONS_MAX_KEY_LENGTH);
        format = file_format_for_key(key);
        colon = strrchr(eq + 1, ':');
        if (colon && file_format_from_string(colon + 1) >= 0) {
                format = file_format_from_string(colon + 1);
                path = strndup(eq + 1, (size_t) (colon - (eq + 1)));
        } else if (colon && looks_like_format(colon + 1))
                return fail(ret_error,
                            "--file: \"%s\" is not a format (enroot-conf, enroot-env or raw); "
                            "a path ending in \":%s\" is written with its format after it, "
                            "e.g. %s=%s:raw",
                            colon + 1, colon + 1, key, eq + 1);
        else
                path = strdup(eq + 1);
        if (!path)
                return -ENOMEM;
        if (path[0] != '/')
                return fail(ret_error, "--file: \"%s\": the path must be absolute", path);
        if (strlen(path) > OPTIONS_MAX_PATH_LENGTH)
                return fail(ret_error, "--file: the path for \"%s\" is longer than %u bytes", key,
                            OPTIONS_MAX_PATH_LENGTH);
        for (size_t i = 0; i < o->n_files; i++)
                if (streq(o->files[i].key, key))
                        return fail(ret_error, "--file: key \"%s\" is given twice", key);
        if (o->n_files >= OPTIONS_MAX_FILES)
                return fail(ret_error, "--file: more than %u files", OPTIONS_MAX_FILES);

        n = reallocarray(o->files, o->n_files + 1, sizeof(FileSpec));
        if (!n)
                return -ENOMEM;
        o->files = n;
        n[o->n_files] = (FileSpec){
                .key = TAKE_PTR(key),
                .path = TAKE_PTR(path),
                .format = format,
        };
        o->n_files++;
        return 0;
}

static const char *const kube_mode_table[_KUBE_MODE_MAX] = {
        [KUBE_AUTO] = "auto",
        [KUBE_ON] = "on",
        [KUBE_OFF] = "off",
};

DEFINE_PRIVATE_STRING_TABLE_FROM_STRING(kube_mode, KubeMode, _KUBE_MODE_INVALID);

static int parse_log_level(const char *s, int *ret, char **ret_error) {
        static const struct {
                const char *name;
                int level;
        } levels[] = {
                {"debug", LOG_DEBUG},     {"info", LOG_INFO}, {"notice", LOG_NOTICE},
                {"warning", LOG_WARNING}, {"err", LOG_ERR},   {"error", LOG_ERR},
        };
        for (size_t i = 0; i < ELEMENTSOF(levels); i++)
                if (streq(s, levels[i].name)) {
                        *ret = levels[i].level;
                        return 0;
                }
        return fail(ret_error, "--log-level: \"%s\" is not debug, info, notice, warning or err", s);
}

static int set_defaults(Options *o) {
        o->files = calloc(ELEMENTSOF(default_files), sizeof(FileSpec));
        if (!o->files)
                return -ENOMEM;
        for (size_t i = 0; i < ELEMENTSOF(default_files); i++) {
                o->files[i].key = strdup(default_files[i].key);
                o->files[i].path = strdup(default_files[i].path);
                o->files[i].format = file_format_for_key(default_files[i].key);
                o->n_files++;
                if (!o->files[i].key || !o->files[i].path)
                        return -ENOMEM;
        }
        o->resync_usec = OPTIONS_DEFAULT_RESYNC_SECONDS * 1000000ull;
        o->poll_usec = OPTIONS_DEFAULT_POLL_SECONDS * 1000000ull;
        o->check_timeout_usec = OPTIONS_DEFAULT_CHECK_TIMEOUT_MS * 1000ull;
        o->log_level = LOG_INFO;
        if (set_string(&o->running_root, "/") < 0 ||
            set_string(&o->listen, OPTIONS_DEFAULT_LISTEN) < 0 ||
            set_string(&o->watch, "auto") < 0 ||
            set_string(&o->serviceaccount_dir, OPTIONS_DEFAULT_SERVICEACCOUNT_DIR) < 0 ||
            set_string(&o->condition_type, CONDITION_DEFAULT_TYPE) < 0 ||
            set_string(&o->agent_container, OPTIONS_DEFAULT_AGENT_CONTAINER) < 0)
                return -ENOMEM;
        return 0;
}

/* A container name: an RFC 1123 label, as the API server checks it. */
static bool container_name_is_valid(const char *s) {
        size_t l = strlen(s);

        if (l == 0 || l > 63 || s[0] == '-' || s[l - 1] == '-')
                return false;
        for (size_t i = 0; i < l; i++)
                if (!((s[i] >= 'a' && s[i] <= 'z') || (s[i] >= '0' && s[i] <= '9') || s[i] == '-'))
                        return false;
        return true;
}

static int add_workload_container(Options *o, const char *arg, char **ret_error) {
        char **list;

        if (!container_name_is_valid(arg))
                return fail(ret_error,
                            "--workload-container: \"%s\" is not a container name (1 to 63 "
                            "lowercase letters, digits or '-')",
                            arg);
        for (size_t i = 0; i < o->n_workload_containers; i++)
                if (streq(o->workload_containers[i], arg))
                        return fail(ret_error, "--workload-container: \"%s\" is named twice", arg);
        if (o->n_workload_containers >= OPTIONS_MAX_WORKLOAD_CONTAINERS)
                return fail(ret_error, "--workload-container: at most %u containers",
                            OPTIONS_MAX_WORKLOAD_CONTAINERS);
        list = reallocarray(o->workload_containers, o->n_workload_containers + 2, sizeof(char *));
        if (!list)
                return -ENOMEM;
        o->workload_containers = list;
        list[o->n_workload_containers] = strdup(arg);
        if (!list[o->n_workload_containers])
                return -ENOMEM;
        list[++o->n_workload_containers] = NULL;
        return 0;
}

static int parse_one(Options *o, int c, const char *arg, bool *default_files_left,
                     char **ret_error) {
        uint64_t ms;

        switch (c) {
        case 'd':
                if (!*arg)
                        return fail(ret_error, "--desired-dir: the directory is empty");
                return set_string(&o->desired_dir, arg);
        case 'f':
                return add_file(o, arg, default_files_left, ret_error);
        case 'r':
                if (arg[0] != '/')
                        return fail(ret_error, "--running-root: \"%s\" is not an absolute path",
                                    arg);
                return set_string(&o->running_root, arg);
        case 'p':
                /* /proc/PID/comm holds at most 15 characters. */
                if (!*arg || strlen(arg) > 15 || strchr(arg, '/'))
                        return fail(ret_error,
                                    "--target-process: \"%s\" is not a process name (1 to 15 "
                                    "characters without '/', as in /proc/PID/comm)",
                                    arg);
                return set_string(&o->target_process, arg);
        case 'U': {
                uint64_t uid;

                /* (uid_t) -1 is no uid: setresuid(2) reads it as "unchanged" */
                if (parse_number("--target-uid", arg, 0, UINT32_MAX - 1, "uid", &uid, ret_error) <
                    0)
                        return -EINVAL;
                o->target_uid = (uid_t) uid;
                o->target_uid_set = true;
                return 0;
        }
        case 'l':
                if (parse_listen(arg, ret_error) < 0)
                        return -EINVAL;
                return set_string(&o->listen, arg);
        case 'R':
                return parse_seconds("--resync-interval", arg, &o->resync_usec, ret_error);
        case 'P':
                return parse_seconds("--poll-interval", arg, &o->poll_usec, ret_error);
        case 'w':
                if (!streq(arg, "auto") && !streq(arg, "inotify") && !streq(arg, "poll"))
                        return fail(ret_error, "--watch: \"%s\" is not auto, inotify or poll", arg);
                return set_string(&o->watch, arg);
        case 'L':
                return parse_log_level(arg, &o->log_level, ret_error);
        case 'k': {
                KubeMode k = kube_mode_from_string(arg);

                if (k < 0)
                        return fail(ret_error, "--kube: \"%s\" is not auto, on or off", arg);
                o->kube = k;
                return 0;
        }
        case 'A':
                if (check_api_url("--kube-api", arg, ret_error) < 0)
                        return -EINVAL;
                return set_string(&o->kube_api, arg);
        case 'S':
                if (arg[0] != '/')
                        return fail(ret_error,
                                    "--serviceaccount-dir: \"%s\" is not an absolute path", arg);
                return set_string(&o->serviceaccount_dir, arg);
        case 't':
                if (strlen(arg) > CONDITION_MAX_TYPE_BYTES || !condition_type_is_valid(arg))
                        return fail(ret_error,
                                    "--condition-type: \"%s\" is not a qualified name "
                                    "([DNS-subdomain/]name, the name at most 63 letters, digits, "
                                    "'-', '_' or '.', starting and ending with a letter or digit)",
                                    arg);
                return set_string(&o->condition_type, arg);
        case 'D':
                if (!streq(arg, "names") && !streq(arg, "counts"))
                        return fail(ret_error, "--condition-detail: \"%s\" is not names or counts",
                                    arg);
                o->condition_counts_only = streq(arg, "counts");
                return 0;
        case 'N':
                return set_pod_field("--pod-name", arg, &o->pod_name, ret_error);
        case 'n':
                return set_pod_field("--pod-namespace", arg, &o->pod_namespace, ret_error);
        case 'u':
                return set_pod_field("--pod-uid", arg, &o->pod_uid, ret_error);
        case 'a':
                if (!container_name_is_valid(arg))
                        return fail(ret_error,
                                    "--agent-container: \"%s\" is not a container name "
                                    "(1 to 63 lowercase letters, digits or '-')",
                                    arg);
                return set_string(&o->agent_container, arg);
        case 'W':
                return add_workload_container(o, arg, ret_error);
        case 'T':
                if (parse_number("--timeout", arg, 1, 60000, "milliseconds", &ms, ret_error) < 0)
                        return -EINVAL;
                o->check_timeout_usec = ms * 1000u;
                return 0;
        default:
                return -EINVAL;
        }
}

int options_parse(int argc, char **argv, Options *ret, char **ret_error) {
        static const struct option longopts[] = {
                {"desired-dir", required_argument, NULL, 'd'},
                {"file", required_argument, NULL, 'f'},
                {"running-root", required_argument, NULL, 'r'},
                {"target-process", required_argument, NULL, 'p'},
                {"target-uid", required_argument, NULL, 'U'},
                {"listen", required_argument, NULL, 'l'},
                {"resync-interval", required_argument, NULL, 'R'},
                {"poll-interval", required_argument, NULL, 'P'},
                {"watch", required_argument, NULL, 'w'},
                {"log-level", required_argument, NULL, 'L'},
                {"timeout", required_argument, NULL, 'T'},
                {"kube", required_argument, NULL, 'k'},
                {"kube-api", required_argument, NULL, 'A'},
                {"serviceaccount-dir", required_argument, NULL, 'S'},
                {"condition-type", required_argument, NULL, 't'},
                {"condition-detail", required_argument, NULL, 'D'},
                {"agent-container", required_argument, NULL, 'a'},
                {"workload-container", required_argument, NULL, 'W'},
                {"pod-name", required_argument, NULL, 'N'},
                {"pod-namespace", required_argument, NULL, 'n'},
                {"pod-uid", required_argument, NULL, 'u'},
                {"check", no_argument, NULL, 'c'},
                {"check-config", no_argument, NULL, 'C'},
                {"require-current", no_argument, NULL, 'q'},
                {"help", no_argument, NULL, 'h'},
                {"version", no_argument, NULL, 'V'},
                {},
        };
        _cleanup_(options_done) Options o = {};
        bool default_files_left = true, check = false, check_config = false;
        int c, r;

        *ret_error = NULL;
        r = set_defaults(&o);
        if (r < 0)
                return r;

        optind = 0;
        opterr = 0; /* we say it ourselves, naming the option */
        while ((c = getopt_long(argc, argv, ":h", longopts, NULL)) >= 0) {
                switch (c) {
                case 'h':
                        o.action = ACTION_HELP;
                        break;
                case 'V':
                        o.action = ACTION_VERSION;
                        break;
                case 'c':
                        check = true;
                        break;
                case 'C':
                        check_config = true;
                        break;
                case 'q':
                        o.require_current = true;
                        break;
                case ':':
                        return fail(ret_error, "%s needs a value", argv[optind - 1]);
                case '?':
                        if (optopt)
                                return fail(ret_error, "unknown option -%c", optopt);
                        return fail(ret_error, "unknown option %s", argv[optind - 1]);
                default:
                        r = parse_one(&o, c, optarg, &default_files_left, ret_error);
                        if (r < 0)
                                return r;
                }
        }
        if (optind < argc)
                return fail(ret_error,
                            "unknown command or argument \"%s\" (the commands are lint, diff and "
                            "rollout)",
                            argv[optind]);
        if (check && check_config)
                return fail(ret_error, "--check and --check-config exclude each other");
        if (o.require_current && !check)
                return fail(ret_error, "--require-current only goes with --check");

        if (o.action != ACTION_HELP && o.action != ACTION_VERSION)
                o.action = check          ? ACTION_CHECK
                           : check_config ? ACTION_CHECK_CONFIG
                                          : ACTION_DAEMON;

        *ret = o;
        o = (Options){};
        return 0;
}

int options_service_api_url(const char *host, const char *port, char **ret_url) {
        char *url;

        if (!host || !*host)
                return -ENOENT;
        /* kubelet sets an IPv6 service address without brackets. */
        if (asprintf(&url, strchr(host, ':') ? "https://[%s]:%s" : "https://%s:%s", host,
                     port && *port ? port : "443") < 0)
                return -ENOMEM;
        *ret_url = url;
        return 0;
}

int options_apply_environment(Options *o, const char *(*lookup)(const char *name),
                              char **ret_error) {
        static const struct {
                const char *env, *option;
                size_t field;
        } pod_env[] = {
                {"POD_NAME", "--pod-name", offsetof(Options, pod_name)},
                {"POD_NAMESPACE", "--pod-namespace", offsetof(Options, pod_namespace)},
                {"POD_UID", "--pod-uid", offsetof(Options, pod_uid)},
        };
        const char *host = lookup("KUBERNETES_SERVICE_HOST"),
                   *port = lookup("KUBERNETES_SERVICE_PORT");
        int r;

        *ret_error = NULL;
        o->kube_enabled = false;
        o->kube_disabled_reason = NULL;
        if (o->kube == KUBE_OFF)
                return 0;

        /* The downward API's values are as binding as options: a typo in the
         * pod spec must show, not silently disable the condition. */
        for (size_t i = 0; i < ELEMENTSOF(pod_env); i++) {
                char **dst = (char **) ((char *) o + pod_env[i].field);
                const char *v = lookup(pod_env[i].env);
                _cleanup_free_ char *error = NULL;

                if (*dst || !v || !*v)
                        continue;
                r = set_pod_field(pod_env[i].option, v, dst, &error);
                if (r < 0)
                        return r == -ENOMEM ? r
                                            : fail(ret_error, "%s (from $%s)",
                                                   error ? error : "invalid", pod_env[i].env);
        }

        if (!o->kube_api && host && *host) {
                _cleanup_free_ char *url = NULL;

                if (options_service_api_url(host, port, &url) < 0)
                        return -ENOMEM;
                if (check_api_url("KUBERNETES_SERVICE_HOST/_PORT", url, ret_error) < 0)
                        return -EINVAL;
                o->kube_api = TAKE_PTR(url);
        }

        if (o->kube == KUBE_ON && !o->kube_api)
                return fail(ret_error, "--kube on: the API server is unknown: give --kube-api or "
                                       "run in a pod (KUBERNETES_SERVICE_HOST is not set)");
        if (o->kube == KUBE_ON && !o->pod_name)
                return fail(ret_error, "--kube on: the pod name is unknown: set POD_NAME from the "
                                       "downward API (fieldRef metadata.name) or give --pod-name");
        if (!o->kube_api) {
                o->kube_disabled_reason = "not in a pod (KUBERNETES_SERVICE_HOST is not set)";
                return 0;
        }
        if (!o->pod_name) {
                o->kube_disabled_reason = "POD_NAME is not set (add it from the downward API, "
                                          "fieldRef metadata.name) and --pod-name is not given";
                return 0;
        }
        o->kube_enabled = true;
        return 0;
}

int options_validate_daemon(const Options *o, char **ret_error) {
        *ret_error = NULL;
        if (!o->desired_dir)
                return fail(ret_error, "--desired-dir is required: the directory where the enroot "
                                       "ConfigMap is mounted whole (without subPath)");
        if (o->desired_dir[0] != '/')
                return fail(ret_error, "--desired-dir: \"%s\" is not an absolute path",
                            o->desired_dir);
        if (o->target_process && !streq(o->running_root, "/"))
                return fail(ret_error, "--running-root and --target-process exclude each other: "
                                       "the process's root is the running root");
        if (o->target_uid_set && !o->target_process)
                return fail(ret_error, "--target-uid needs --target-process: it names the uid "
                                       "of that process");
        return 0;
}
