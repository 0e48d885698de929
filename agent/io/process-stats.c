/* SPDX-License-Identifier: Apache-2.0 */
#include <dirent.h>
#include <fcntl.h>
#include <inttypes.h>
#include <sys/resource.h>
#include <sys/stat.h>

#include "fileio.h"
#include "process-stats.h"
#include "root-open.h"

/* /proc/self/stat is one line; comm is at most 16 bytes (TASK_COMM_LEN). */
#define PROC_SELF_STAT_MAX_BYTES 4096u
/* /proc/stat grows with CPUs and interrupts: a few hundred KiB on the largest nodes. */
#define PROC_STAT_MAX_BYTES      (4u * 1024u * 1024u)

static int parse_u64(const char *s, uint64_t *ret) {
        char *end;
        unsigned long long v;

        if (!s || *s < '0' || *s > '9')
                return -EBADMSG;
        errno = 0;
        v = strtoull(s, &end, 10);
        if (errno != 0 || *end != '\0')
                return -EBADMSG;
        *ret = v;
        return 0;
}

/* Boot time (CLOCK_REALTIME, seconds) from /proc/stat's "btime" line. It is
 * constant for the machine's uptime, so it is read once. */
static int boot_time_seconds(uint64_t *ret) {
        static uint64_t cached;
        _cleanup_free_ char *data = NULL;
        const char *p;
        size_t len;
        int r;

        if (cached > 0) {
                *ret = cached;
                return 0;
        }
        r = read_file_at(AT_FDCWD, "/proc/stat", 0, PROC_STAT_MAX_BYTES, &data, &len);
        if (r < 0)
                return r;
        for (p = data; p && *p; p = strchr(p, '\n'), p = p ? p + 1 : NULL) {
                const char *v = startswith(p, "btime ");
                char num[32];
                size_t n;

                if (!v)
                        continue;
                n = strcspn(v, "\n");
                if (n == 0 || n >= sizeof num)
                        return -EBADMSG;
                memcpy(num, v, n);
                num[n] = '\0';
                r = parse_u64(num, &cached);
                if (r < 0)
                        return r;
                *ret = cached;
                return 0;
        }
        return -EBADMSG;
}

/* /proc/self/statm and /proc/self/fd stay open between scrapes: opening them
 * by path costs more than reading them (procfs builds a dentry for each
 * step). A read at offset 0 of the one, a look at the other, and procfs
 * produces them afresh. The process is single-threaded; children never
 * inherit them (close-on-exec). */
static int proc_statm_fd = -EBADF;
static DIR *proc_fd_dir;

static int read_proc_statm(char *buf, size_t size) {
        int r = -EIO;

        for (int attempt = 0; attempt < 2; attempt++) {
                ssize_t n;

                if (proc_statm_fd < 0) {
                        proc_statm_fd = open("/proc/self/statm", O_RDONLY | O_CLOEXEC);
                        if (proc_statm_fd < 0)
                                return negative_errno();
                }
                n = pread(proc_statm_fd, buf, size - 1, 0);
                if (n >= 0 && (size_t) n < size - 1) {
                        buf[n] = '\0';
                        return 0;
                }
                if (n >= 0)
                        return -EBADMSG;
                /* whatever went wrong, a fresh descriptor is worth one try */
                r = negative_errno();
                closep(&proc_statm_fd);
                proc_statm_fd = -EBADF;
        }
        return r;
}

static int count_open_fds(uint64_t *ret) {
        int kept = root_open_kept_fd();
        struct dirent *de;
        struct stat st;
        uint64_t n = 0;

        if (!proc_fd_dir) {
                proc_fd_dir = opendir("/proc/self/fd");
                if (!proc_fd_dir)
                        return negative_errno();
        }
        /* Since Linux 6.2 the directory's size is the number of open
         * descriptors, counted without listing them; before, it is 0. */
        if (fstat(dirfd(proc_fd_dir), &st) == 0 && st.st_size > 0) {
                n = (uint64_t) st.st_size - 1 - (proc_statm_fd >= 0) - (kept >= 0);
                *ret = n;
                return 0;
        }
        rewinddir(proc_fd_dir);
        errno = 0;
        while ((de = readdir(proc_fd_dir))) {
                int fd;

                if (de->d_name[0] == '.')
                        continue;
                /* the two descriptors kept for reading these statistics, and
                 * the one for reopening running files, are not the agent's own */
                fd = atoi(de->d_name);
                if (fd == dirfd(proc_fd_dir) || fd == proc_statm_fd || fd == kept)
                        continue;
                n++;
        }
        if (errno != 0) {
                int r = negative_errno();
                (void) closedir(proc_fd_dir);
                proc_fd_dir = NULL;
                return r;
        }
        *ret = n;
        return 0;
}

/* When this process started (CLOCK_REALTIME, µs): /proc/self/stat's field
 * 22 (clock ticks after boot) plus the boot time. It never changes, so it is
 * read once. */
static int start_time_usec(uint64_t *ret) {
        static uint64_t cached;
        _cleanup_free_ char *stat = NULL;
        uint64_t start = 0, btime;
        char *s, *save = NULL;
        unsigned field;
        size_t len;
        long tck;
        int r;

        if (cached > 0) {
                *ret = cached;
                return 0;
        }
        tck = sysconf(_SC_CLK_TCK);
        if (tck <= 0)
                return -EINVAL;
        r = read_file_at(AT_FDCWD, "/proc/self/stat", 0, PROC_SELF_STAT_MAX_BYTES, &stat, &len);
        if (r < 0)
                return r;
        /* "pid (comm) state ppid ...": comm may hold spaces and parentheses,
         * so the fields start after the last ')', with field 3 (proc(5)
         * numbers them from 1). */
        s = strrchr(stat, ')');
        if (!s)
                return -EBADMSG;
        field = 3;
        for (char *tok = strtok_r(s + 1, " \n", &save); tok && field <= 22;
             tok = strtok_r(NULL, " \n", &save), field++)
                if (field == 22) {
                        r = parse_u64(tok, &start);
                        if (r < 0)
                                return r;
                }
        if (field <= 22)
                return -EBADMSG;
        r = boot_time_seconds(&btime);
        if (r < 0)
                return r;
        cached = btime * 1000000u + start * 1000000u / (uint64_t) tck;
        *ret = cached;
        return 0;
}

int process_stats_read(ProcessStats *ret) {
        char statm[256];
        ProcessStats p = {};
        uint64_t size, resident;
        struct rlimit rl;
        struct rusage ru;
        long page;
        int r;

        page = sysconf(_SC_PAGESIZE);
        if (page <= 0)
                return -EINVAL;

        /* user and system time of every thread, to the microsecond */
        if (getrusage(RUSAGE_SELF, &ru) < 0)
                return negative_errno();
        p.cpu_usec = (uint64_t) ru.ru_utime.tv_sec * 1000000u + (uint64_t) ru.ru_utime.tv_usec +
                     (uint64_t) ru.ru_stime.tv_sec * 1000000u + (uint64_t) ru.ru_stime.tv_usec;

        /* "size resident shared text lib data dt", in pages: far cheaper for
         * the kernel to produce than /proc/self/stat */
        r = read_proc_statm(statm, sizeof statm);
        if (r < 0)
                return r;
        if (sscanf(statm, "%" SCNu64 " %" SCNu64, &size, &resident) != 2)
                return -EBADMSG;
        p.virtual_bytes = size * (uint64_t) page;
        p.resident_bytes = resident * (uint64_t) page;

        r = start_time_usec(&p.start_time_usec);
        if (r < 0)
                return r;

        r = count_open_fds(&p.open_fds);
        if (r < 0)
                return r;
        if (getrlimit(RLIMIT_NOFILE, &rl) < 0)
                return negative_errno();
        p.max_fds = rl.rlim_cur == RLIM_INFINITY ? UINT64_MAX : (uint64_t) rl.rlim_cur;
        if (getrlimit(RLIMIT_AS, &rl) < 0)
                return negative_errno();
        p.virtual_max_bytes = rl.rlim_cur == RLIM_INFINITY ? UINT64_MAX : (uint64_t) rl.rlim_cur;

        *ret = p;
        return 0;
}
