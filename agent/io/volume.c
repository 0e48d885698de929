/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The desired side: one consistent read of a kubelet-projected ConfigMap
 * directory. See volume.h for the layout and every error code.
 *
 * The top-level KEY links are ignored: just after a flip a new key has no
 * link yet and a removed key's link dangles, while the version directory is
 * already complete (kubernetes pkg/volume/util/atomic_writer.go). In a plain
 * directory top-level symlinks are not followed (O_NOFOLLOW), because a link
 * there may point anywhere on the node.
 */
#include <fcntl.h>
#include <stdint.h>
#include <sys/stat.h>

#include "fileio.h"
#include "log.h"
#include "volume.h"

/* A key names one file in the version directory, nothing else: the atomic
 * writer refuses keys that start with ".." (validatePath), and a '/' would
 * leave the directory we resolved. */
static bool key_is_usable(const char *key) {
        return key && key[0] && !strchr(key, '/') && !streq(key, ".") &&
               !startswith(key, VOLUME_RESERVED_PREFIX);
}

static int check_dir_alive(int dir_fd) {
        struct stat st;

        if (fstat(dir_fd, &st) < 0)
                return negative_errno();
        if (!S_ISDIR(st.st_mode))
                return -ENOTDIR;
        /* rmdir(2) drops a directory's link count to 0 while open fds keep the
         * inode: every lookup in it would say ENOENT, which reads as "every key
         * missing" when the truth is "this is not the directory any more". */
        if (st.st_nlink == 0)
                return -EIDRM;
        return 0;
}

/* 0 with *ret NULL when there is no ..data (a plain directory). */
static int read_data_link(int dir_fd, char **ret) {
        char buf[VOLUME_MAX_VERSION_LENGTH + 1];
        ssize_t n;
        char *v;

        n = readlinkat(dir_fd, VOLUME_DATA_LINK, buf, sizeof buf);
        if (n < 0) {
                if (errno == ENOENT) {
                        *ret = NULL;
                        return 0;
                }
                /* readlink(2): EINVAL when the file is not a symlink */
                if (errno == EINVAL)
                        return -ENOLINK;
                return negative_errno();
        }

        if ((size_t) n >= sizeof buf) {
                /* Truncated. Say "outside" when even the prefix shows it. */
                if (memchr(buf, '/', sizeof buf) || !startswith(buf, VOLUME_RESERVED_PREFIX))
                        return -EXDEV;
                return -ENAMETOOLONG;
        }
        buf[n] = '\0';
        if (memchr(buf, '\0', (size_t) n) || !volume_version_is_valid(buf))
                return -EXDEV;

        v = strdup(buf);
        if (!v)
                return -ENOMEM;
        *ret = v;
        return 0;
}

int volume_read_version(int dir_fd, char **ret_version) {
        char *v = NULL;
        int r;

        if (dir_fd < 0 || !ret_version)
                return -EINVAL;

        r = check_dir_alive(dir_fd);
        if (r < 0)
                return r;
        r = read_data_link(dir_fd, &v);
        if (r < 0)
                return r;
        *ret_version = v;
        return 0;
}

VolumeSnapshot *volume_snapshot_free(VolumeSnapshot *s) {
        if (!s)
                return NULL;
        for (size_t i = 0; i < s->n_files; i++) {
                free(s->files[i].key);
                free(s->files[i].data);
        }
        free(s->files);
        free(s->version);
        free(s);
        return NULL;
}

const VolumeFile *volume_snapshot_find(const VolumeSnapshot *s, const char *key) {
        if (!s || !key)
                return NULL;
        for (size_t i = 0; i < s->n_files; i++)
                if (streq(s->files[i].key, key))
                        return &s->files[i];
        return NULL;
}

/* Reads every key from fd (the version directory, or DIR when plain). */
static int read_keys(int fd, const char *const *keys, size_t n_keys, size_t max_bytes,
                     VolumeSnapshot **ret, bool *ret_any_missing) {
        _cleanup_(volume_snapshot_freep) VolumeSnapshot *s = NULL;
        bool any_missing = false;

        s = calloc(1, sizeof *s);
        if (!s)
                return -ENOMEM;
        if (n_keys > 0) {
                s->files = calloc(n_keys, sizeof *s->files);
                if (!s->files)
                        return -ENOMEM;
        }

        for (size_t i = 0; i < n_keys; i++) {
                VolumeFile *f = &s->files[i];

                f->key = strdup(keys[i] ? keys[i] : "");
                if (!f->key)
                        return -ENOMEM;
                s->n_files++;

                if (!key_is_usable(keys[i])) {
                        f->error = -EINVAL;
                        continue;
                }

                /* O_NOFOLLOW: the version directory holds regular files only;
                 * read_file_at() opens non-blocking and checks fstat() before
                 * reading, so a FIFO, a device or a sparse giant never costs
                 * more than an open. */
                f->error = read_file_at(fd, keys[i], O_NOFOLLOW, max_bytes, &f->data, &f->len);
                if (f->error == -ENOMEM)
                        return -ENOMEM;
                if (f->error == -ENOENT)
                        any_missing = true;
        }

        *ret = TAKE_PTR(s);
        *ret_any_missing = any_missing;
        return 0;
}

int volume_read(int dir_fd, const char *const *keys, size_t n_keys, size_t max_bytes,
                VolumeSnapshot **ret) {
        int r;

        if (dir_fd < 0 || (!keys && n_keys > 0) || max_bytes == 0 || max_bytes > SIZE_MAX / 2 ||
            !ret)
                return -EINVAL;
        if (n_keys > VOLUME_MAX_KEYS)
                return -E2BIG;

        r = check_dir_alive(dir_fd);
        if (r < 0)
                return r;

        for (unsigned attempt = 0; attempt <= VOLUME_MAX_RETRIES; attempt++) {
                _cleanup_(volume_snapshot_freep) VolumeSnapshot *s = NULL;
                _cleanup_free_ char *version = NULL, *again = NULL;
                _cleanup_close_ int vfd = -EBADF;
                struct stat st, link_before = {}, link_after = {};
                bool any_missing;

                /* The link's inode changes at every flip: the same one before
                 * and after the read is the one whose ctime dates version. */
                if (fstatat(dir_fd, VOLUME_DATA_LINK, &link_before, AT_SYMLINK_NOFOLLOW) < 0)
                        link_before = (struct stat){};
                r = read_data_link(dir_fd, &version);
                if (r < 0)
                        return r;

                if (!version) {
                        /* No ..data: a plain directory, read in place. */
                        r = read_keys(dir_fd, keys, n_keys, max_bytes, &s, &any_missing);
                        if (r < 0)
                                return r;
                        s->n_retries = attempt;
                        log_debug("Read %zu keys from a plain directory after %u retries.", n_keys,
                                  attempt);
                        *ret = TAKE_PTR(s);
                        return 0;
                }

                /* One resolution of ..data: everything below is read through
                 * this fd, so a flip during the read cannot mix versions. */
                vfd = openat(dir_fd, version, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
                if (vfd < 0) {
                        if (errno == ENOENT) {
                                /* kubelet removes the old version right after
                                 * flipping ..data away from it: look again. */
                                log_debug("Version \"%s\" vanished before it was opened.", version);
                                continue;
                        }
                        if (errno == ENOTDIR) {
                                /* O_DIRECTORY wins over O_NOFOLLOW: a symlink
                                 * (..data -> ..data, a loop) reads ENOTDIR.
                                 * Say what it is. */
                                struct stat lst;

                                if (fstatat(dir_fd, version, &lst, AT_SYMLINK_NOFOLLOW) == 0 &&
                                    S_ISLNK(lst.st_mode))
                                        return -ELOOP;
                                return -ENOTDIR;
                        }
                        return negative_errno();
                }

                r = read_keys(vfd, keys, n_keys, max_bytes, &s, &any_missing);
                if (r < 0)
                        return r;

                if (fstat(vfd, &st) < 0)
                        return negative_errno();
                if (st.st_nlink == 0) {
                        /* Deleted while we read: what we have is a complete
                         * old version at best. Get the one ..data names now. */
                        log_debug("Version \"%s\" was deleted during the read.", version);
                        continue;
                }

                if (any_missing) {
                        /* rm -r unlinks the files before the directory: a key
                         * gone from a version that is being removed is not a
                         * key the ConfigMap lacks. */
                        r = read_data_link(dir_fd, &again);
                        if (r < 0)
                                return r;
                        if (!streq_ptr(version, again)) {
                                log_debug("..data moved from \"%s\" during the read.", version);
                                continue;
                        }
                }

                if (fstatat(dir_fd, VOLUME_DATA_LINK, &link_after, AT_SYMLINK_NOFOLLOW) < 0 ||
                    link_after.st_ino != link_before.st_ino) {
                        log_debug("..data was replaced during the read of \"%s\".", version);
                        continue;
                }
                s->version_since_usec = (uint64_t) link_after.st_ctim.tv_sec * 1000000u +
                                        (uint64_t) link_after.st_ctim.tv_nsec / 1000u;
                s->version = TAKE_PTR(version);
                s->n_retries = attempt;
                log_debug("Read %zu keys from version \"%s\" after %u retries.", n_keys, s->version,
                          attempt);
                *ret = TAKE_PTR(s);
                return 0;
        }

        return -ESTALE;
}

const char *volume_error_to_string(int error) {
        switch (error < 0 ? -error : error) {
        case EIDRM:
                return "the directory was deleted (it is reopened on the next read)";
        case ENOLINK:
                return "..data is not a symbolic link";
        case EXDEV:
                return "..data points outside the directory";
        case ENAMETOOLONG:
                return "..data names something longer than a directory name";
        case ESTALE:
                return "the version directory that ..data names does not exist (dangling ..data)";
        case E2BIG:
                return "too many keys for one read";
        case EFBIG:
                return "larger than the size limit";
        case EBADFD:
                return "not a regular file (a FIFO, a device or a socket)";
        case EISDIR:
                return "a directory, not a file";
        case ELOOP:
                return "a symbolic link (never followed there)";
        case EINVAL:
                return "not a usable ConfigMap key";
        default:
                return NULL;
        }
}
