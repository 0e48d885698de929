/* SPDX-License-Identifier: Apache-2.0 */
#include <fcntl.h>
#include <stdint.h>
#include <sys/stat.h>

#include "fileio.h"
#include "macro.h"

/* Reads to the end, or, when size is not SIZE_MAX (a regular file's st_size),
 * stops at a short read that brought the total to exactly that size: the end
 * then, and a read(2) that would only say 0 is saved. A file that grew since
 * returns more than its size, and one on procfs or sysfs says 0 or 4096, so
 * those are read to the end as any stream. */
static int read_sized(int fd, size_t max_bytes, size_t size, char **ret_data, size_t *ret_len) {
        _cleanup_free_ char *buf = NULL;
        size_t len = 0, alloc = 0;

        for (;;) {
                size_t ask;
                ssize_t n;

                if (alloc - len < 2) {
                        /* grow, but never past max_bytes + 2: one byte to notice
                         * the file is too big, one for the terminating NUL; a
                         * file of known size fits the first buffer */
                        size_t want = alloc                 ? alloc * 2
                                      : size < SIZE_MAX - 2 ? (size + 2 > 4096 ? size + 2 : 4096)
                                                            : 4096;
                        char *p;

                        if (want > max_bytes + 2)
                                want = max_bytes + 2;
                        if (want <= alloc)
                                return -EFBIG;
                        p = realloc(buf, want);
                        if (!p)
                                return -ENOMEM;
                        buf = p;
                        alloc = want;
                }

                ask = alloc - len - 1;
                n = read(fd, buf + len, ask);
                if (n < 0) {
                        if (errno == EINTR)
                                continue;
                        return negative_errno();
                }
                if (n == 0)
                        break;
                len += (size_t) n;
                if (len > max_bytes)
                        return -EFBIG;
                if ((size_t) n < ask && len == size)
                        break;
        }

        if (!buf) {
                buf = strdup("");
                if (!buf)
                        return -ENOMEM;
        }
        buf[len] = '\0';
        *ret_data = TAKE_PTR(buf);
        *ret_len = len;
        return 0;
}

int read_stream_bounded(int fd, size_t max_bytes, char **ret_data, size_t *ret_len) {
        return read_sized(fd, max_bytes, SIZE_MAX, ret_data, ret_len);
}

int read_regular_bounded(int fd, size_t max_bytes, uint64_t size, char **ret_data,
                         size_t *ret_len) {
        if (size > max_bytes)
                return -EFBIG;
        /* The size may change under us: read_sized() enforces the cap again. */
        return read_sized(fd, max_bytes, (size_t) size, ret_data, ret_len);
}

int read_fd_bounded(int fd, size_t max_bytes, char **ret_data, size_t *ret_len) {
        struct stat st;

        if (fstat(fd, &st) < 0)
                return negative_errno();
        if (S_ISDIR(st.st_mode))
                return -EISDIR;
        if (!S_ISREG(st.st_mode))
                return -EBADFD;
        return read_regular_bounded(fd, max_bytes, (uint64_t) st.st_size, ret_data, ret_len);
}

int read_file_at(int dir_fd, const char *path, int open_flags, size_t max_bytes, char **ret_data,
                 size_t *ret_len) {
        _cleanup_close_ int fd = -EBADF;
        int r;

        fd = openat(dir_fd, path, O_RDONLY | O_CLOEXEC | O_NOCTTY | O_NONBLOCK | open_flags);
        if (fd < 0)
                return negative_errno();

        r = read_fd_bounded(fd, max_bytes, ret_data, ret_len);
        return r;
}
