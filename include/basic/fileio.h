/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Bounded reads of files under foreign control. Never logs.
 */
#pragma once

#include <stddef.h>
#include <stdint.h>

/* Reads a whole regular file relative to dir_fd (AT_FDCWD for the working
 * directory), refusing anything larger than max_bytes.
 * open_flags are added to O_RDONLY|O_CLOEXEC|O_NOCTTY|O_NONBLOCK (pass O_NOFOLLOW
 * where a symlink would be wrong). The file is opened non-blocking and checked
 * with fstat() first, so a FIFO or device never blocks the caller.
 * On success *ret_data is a new NUL-terminated buffer (the file may itself
 * contain NUL bytes: use *ret_len) owned by the caller.
 * Returns 0, or -EFBIG (over max_bytes), -EISDIR, -EBADFD (not a regular file),
 * or the -errno of open/read (-ENOENT, -EACCES, -ELOOP, ...). */
int read_file_at(int dir_fd, const char *path, int open_flags, size_t max_bytes, char **ret_data,
                 size_t *ret_len);

/* Same, from an already open descriptor (not closed here). */
int read_fd_bounded(int fd, size_t max_bytes, char **ret_data, size_t *ret_len);

/* Same, from a descriptor the caller has already found to be a regular file
 * of this size (its statx() or fstat(), of the same inode): no fstat() here. */
int read_regular_bounded(int fd, size_t max_bytes, uint64_t size, char **ret_data, size_t *ret_len);

/* Reads all of stdin (or any stream-like fd, pipes included) up to max_bytes. */
int read_stream_bounded(int fd, size_t max_bytes, char **ret_data, size_t *ret_len);
