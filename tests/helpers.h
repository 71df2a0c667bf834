/* SPDX-License-Identifier: MIT */
/*
 * helpers.h - what the suites share: a fresh directory per test, files in
 * and out, running the command, and a lock held by another process.
 */
#ifndef FW_TEST_HELPERS_H
#define FW_TEST_HELPERS_H

#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <setjmp.h>
#include <sys/types.h>
#include <cmocka.h>

#include "fencedwrite.h"

/* cmocka setup/teardown: a new empty directory, made current. */
int fwt_setup(void **state);
int fwt_teardown(void **state);

/* Whole file, NUL-terminated, malloc'ed; NULL if it does not exist. */
char *fwt_slurp(const char *path, size_t *len);
void fwt_spit(const char *path, const char *data);
/* PATH exists and holds exactly WANT. */
void fwt_assert_content(const char *path, const char *want);
/* The fence's token through the library; fails the test if unreadable. */
uint64_t fwt_fence_token(const char *path);
/* Entries of DIR whose names mark them as fencedwrite temporary files. */
int fwt_count_tmp(const char *dir);

/*
 * Run the command (FW_BIN) with the NULL-terminated arguments, STDIN_DATA
 * on its standard input (NULL: /dev/null).  *OUT and *ERR (if not NULL)
 * receive its output, malloc'ed.  Returns the exit code, or 128 + signal.
 */
int fwt_run(const char *stdin_data, char **out, char **err, ...);
int fwt_runv(const char *stdin_data, char **out, char **err,
             char *const argv[]);
/* The same as user and group UID (supplementary groups dropped). */
int fwt_runv_as(uid_t uid, const char *stdin_data, char **out, char **err,
                char *const argv[]);
/* The same as user UID, group GID and the NGROUPS supplementary GROUPS. */
int fwt_runv_as_groups(uid_t uid, gid_t gid, const gid_t *groups,
                       size_t ngroups, const char *stdin_data, char **out,
                       char **err, char *const argv[]);
/* Start the command without waiting; stdin from STDIN_DATA. */
pid_t fwt_spawn(const char *stdin_data, char *const argv[]);
/* Start the command with the test's own standard input. */
pid_t fwt_spawn_inherit(char *const argv[]);
/* Exit code or 128 + signal of a spawned process. */
int fwt_wait(pid_t pid);

/* A lock on PATH held by a child process until fwt_unlock. */
struct fwt_holder {
	pid_t pid;
	int release_fd;
};
void fwt_lock_in_child(const char *path, int classic, struct fwt_holder *h);
void fwt_unlock(struct fwt_holder *h);
/* Block until some process waits for a lock on PATH's inode. */
void fwt_wait_for_waiter(const char *path);

/*
 * Write to F a mountinfo line for the mount that DIR is on (its real mount
 * id and device), as mounted on POINT with FSTYPE, SOURCE and SUPER
 * options: the library consults a table it is given (--mountinfo), so a
 * test can make the test directory look like NFS.
 */
#include <stdio.h>
void fwt_fit_mount_line(FILE *f, const char *dir, const char *point,
                        const char *fstype, const char *source,
                        const char *super);

/*
 * A fence of format version 1 as fencedwrite 1.0 left it after writing
 * record CUR (seq > 0): CUR in its slot, the record before it (token one
 * less) in the other.  IMAGE holds 512 bytes.
 */
struct fw_record;
void fwt_v1_image(const struct fw_record *cur, char *image);
/*
 * Write into the fence FENCE, by hand, the record after its newest one:
 * a copy of the newest with the next sequence number, changed by EDIT
 * (with ARG).  For states a crash or another host leaves behind.
 */
void fwt_write_next_record(const char *fence,
                           void (*edit)(struct fw_record *, void *),
                           void *arg);

#endif
