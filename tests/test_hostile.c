/* SPDX-License-Identifier: MIT */
/*
 * Hostile input and hostile neighbours, through the command:
 *
 *   - an unprivileged writer in a sticky, world-writable directory where
 *     another user planted links and files at FILE, at the fence and at
 *     names that look like temporary files;
 *   - a fence planted, or left writable, by someone the writer does not
 *     trust, and the team of accounts of one group that it must trust;
 *   - the bits and group that new fences and files are given;
 *   - permission denied on the directory, on FILE and on the fence;
 *   - a read-only filesystem and a full one (small tmpfs mounts);
 *   - a directory, a FIFO or a device where FILE should be.
 *
 * Needs root to switch users and mount; skips with a message otherwise.
 */
#define _GNU_SOURCE
#include <endian.h>
#include <errno.h>
#include <fcntl.h>
#include <grp.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mount.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>
#include <sys/wait.h>
#include <sys/xattr.h>
#include <unistd.h>

#include "helpers.h"

#define VICTIM 65534    /* nobody: the writer */
#define ATTACKER 65533  /* another local user */
#define MATE_A 65531    /* two service accounts of one team ... */
#define MATE_B 65532
#define TEAM 65530      /* ... and its group, neither's primary one */

static void need_root(void)
{
	if (geteuid() != 0) {
		print_message("skipped: needs root to switch users and mount\n");
		skip();
	}
}

static int vrun_as(uid_t uid, const gid_t *groups, size_t ngroups,
                   const char *stdin_data, char **out, char **err,
                   va_list ap)
{
	char *argv[16];
	int n = 0;

	argv[n++] = (char *)"fencedwrite";
	while ((argv[n] = va_arg(ap, char *)) != NULL)
		assert_true(++n < 15);
	return fwt_runv_as_groups(uid, (gid_t)uid, groups, ngroups,
	                          stdin_data, out, err, argv);
}

/* Run the command as UID with STDIN_DATA; stderr into *ERR. */
static int run_as(uid_t uid, const char *stdin_data, char **err, ...)
{
	va_list ap;
	int rc;

	va_start(ap, err);
	rc = vrun_as(uid, NULL, 0, stdin_data, NULL, err, ap);
	va_end(ap);
	return rc;
}

/* The same as UID with TEAM as a supplementary group; stdout into *OUT. */
static int run_as_mate(uid_t uid, const char *stdin_data, char **out,
                       char **err, ...)
{
	static const gid_t team[] = { TEAM };
	va_list ap;
	int rc;

	va_start(ap, err);
	rc = vrun_as(uid, team, 1, stdin_data, out, err, ap);
	va_end(ap);
	return rc;
}

/* A world-writable sticky directory "shared", as /tmp is. */
static void make_shared(void)
{
	assert_int_equal(chmod(".", 0755), 0);
	assert_int_equal(mkdir("shared", 0755), 0);
	assert_int_equal(chmod("shared", 01777), 0);
}

static void plant(const char *path, const char *data, uid_t owner)
{
	fwt_spit(path, data);
	assert_int_equal(chown(path, owner, owner), 0);
}

static void plant_link(const char *target, const char *path, uid_t owner)
{
	assert_int_equal(symlink(target, path), 0);
	assert_int_equal(lchown(path, owner, owner), 0);
}

static void assert_refused(int rc, int want, const char *err,
                           const char *needle)
{
	if (rc != want)
		fail_msg("exit %d, want %d: %s", rc, want, err);
	assert_true(strncmp(err, "fencedwrite: ", 13) == 0);
	if (!strstr(err, needle))
		fail_msg("message '%s' lacks '%s'", err, needle);
}

/* Run CALL (which fills err), then check its refusal. */
#define REFUSED(call, want, needle)                                       \
	do {                                                               \
		int rc_ = (call);                                          \
		assert_refused(rc_, want, err, needle);                    \
		free(err);                                                 \
	} while (0)

static void planted_links_never_redirect_a_write(void **state)
{
	char *err;

	(void)state;
	need_root();
	make_shared();
	fwt_spit("precious", "root's data\n");
	assert_int_equal(chmod("precious", 0666), 0);   /* even if writable */

	/* a link at FILE */
	plant_link("../precious", "shared/report", ATTACKER);
	REFUSED(run_as(VICTIM, "evil\n", &err, "-t", "5",
	                      "shared/report", (char *)NULL),
	        3, "symbolic link");

	/* a link at the fence, FILE absent */
	plant_link("../precious", "shared/out.fence", ATTACKER);
	REFUSED(run_as(VICTIM, "evil\n", &err, "-t", "5", "shared/out",
	                      (char *)NULL),
	        3, "symbolic link");
	REFUSED(run_as(VICTIM, NULL, &err, "--init", "shared/out",
	                      (char *)NULL),
	        3, "already exists");
	REFUSED(run_as(VICTIM, NULL, &err, "--show", "shared/out",
	                      (char *)NULL),
	        3, "symbolic link");

	fwt_assert_content("precious", "root's data\n");
	assert_null(fwt_slurp("shared/out", NULL));
	assert_int_equal(fwt_count_tmp("shared"), 0);
}

static void planted_temporary_names_are_neither_used_nor_removed(void **state)
{
	char name[64];
	struct stat st;

	(void)state;
	need_root();
	make_shared();
	/* links and files at names shaped like temporary files */
	for (int i = 0; i < 16; i++) {
		snprintf(name, sizeof(name), "shared/.data.fwtmp.%012x", i);
		if (i % 2)
			plant_link("../precious", name, ATTACKER);
		else
			plant(name, "planted\n", ATTACKER);
	}
	fwt_spit("precious", "root's data\n");
	assert_int_equal(run_as(VICTIM, "mine\n", NULL, "-t", "1",
	                        "shared/data", (char *)NULL), 0);
	fwt_assert_content("shared/data", "mine\n");
	assert_int_equal(stat("shared/data", &st), 0);
	assert_int_equal(st.st_uid, VICTIM);
	/* the victim's clean removes none of another user's files */
	assert_int_equal(run_as(VICTIM, NULL, NULL, "--clean", "shared/data",
	                        (char *)NULL), 0);
	assert_int_equal(fwt_count_tmp("shared"), 16);
	fwt_assert_content("precious", "root's data\n");
}

/* Another user's fence is not writable by us: refuse, change nothing. */
static void fence_owned_by_someone_else_is_refused(void **state)
{
	char *err;

	(void)state;
	need_root();
	make_shared();
	assert_int_equal(fwt_run("theirs\n", NULL, NULL, "-t", "9",
	                         "shared/r", (char *)NULL), 0);
	assert_int_equal(chown("shared/r", ATTACKER, ATTACKER), 0);
	assert_int_equal(chown("shared/r.fence", ATTACKER, ATTACKER), 0);
	REFUSED(run_as(VICTIM, "mine\n", &err, "-t", "10", "shared/r",
	                      (char *)NULL),
	        3, "belongs to uid 65533");
	fwt_assert_content("shared/r", "theirs\n");
	assert_int_equal(fwt_count_tmp("shared"), 0);
}

/*
 * Let UID write PATH through an access ACL (user::rw-, user:UID:rw-,
 * group::r--, mask::rw-, other::r--), as a planter would to have its fence
 * used by someone who could not otherwise write it.  0, or -1 (errno)
 * where the filesystem keeps no ACLs.
 */
static int acl_grant_write(const char *path, uid_t uid)
{
	static const uint16_t tags[5] = { 0x01, 0x02, 0x04, 0x10, 0x20 };
	static const uint16_t perms[5] = { 6, 6, 4, 6, 4 };
	unsigned char buf[4 + 5 * 8];
	uint32_t v = htole32(2);

	memcpy(buf, &v, 4);
	for (int i = 0; i < 5; i++) {
		uint16_t tag = htole16(tags[i]), perm = htole16(perms[i]);
		uint32_t id = htole32(tags[i] == 0x02 ? (uint32_t)uid
		                                      : UINT32_MAX);

		memcpy(buf + 4 + 8 * i, &tag, 2);
		memcpy(buf + 6 + 8 * i, &perm, 2);
		memcpy(buf + 8 + 8 * i, &id, 4);
	}
	return setxattr(path, "system.posix_acl_access", buf, sizeof(buf), 0);
}

/* ATTACKER runs --init on PATH (token 0) with umask 0, then lets VICTIM
   write the fence; false (after a message) where ACLs are not kept. */
static int plant_fence(const char *path)
{
	char fence[256];
	mode_t old = umask(0);
	int rc = run_as(ATTACKER, NULL, NULL, "--init", path, (char *)NULL);

	umask(old);
	assert_int_equal(rc, 0);
	snprintf(fence, sizeof(fence), "%s.fence", path);
	if (acl_grant_write(fence, VICTIM) != 0) {
		print_message("skipped: no ACLs here: %s\n", strerror(errno));
		return 0;
	}
	return 1;
}

/*
 * In a sticky directory another user runs --init before the victim's first
 * write.  Whatever token the victim then commits, the planter can take it
 * back: it owns the fence, so it may remove it and create another at 0,
 * and the victim's stale token would be accepted.  Nothing is committed
 * under such a fence.
 */
static void fence_planted_by_another_user_is_refused(void **state)
{
	char *err;

	(void)state;
	need_root();
	make_shared();
	if (!plant_fence("shared/report.txt"))
		skip();
	REFUSED(run_as(VICTIM, "token 100\n", &err, "-t", "100",
	               "shared/report.txt", (char *)NULL),
	        3, "shared/report.txt.fence");
	assert_null(fwt_slurp("shared/report.txt", NULL));
	/* the planter starts over (the sticky bit lets it: its own file) */
	assert_int_equal(unlink("shared/report.txt.fence"), 0);
	assert_true(plant_fence("shared/report.txt"));
	REFUSED(run_as(VICTIM, "token 50\n", &err, "-t", "50",
	               "shared/report.txt", (char *)NULL),
	        3, "owner uid 65533, mode 0664");
	assert_null(fwt_slurp("shared/report.txt", NULL));
	assert_int_equal(fwt_count_tmp("shared"), 0);
}

/* Every action that reads a fence believes it or refuses it alike. */
static void fence_planted_by_another_user_is_refused_by_every_action(
	void **state)
{
	char *err, *before, *after;

	(void)state;
	need_root();
	make_shared();
	/* readable by everybody, writable only by its owner */
	assert_int_equal(run_as(ATTACKER, NULL, NULL, "--init",
	                        "shared/r", (char *)NULL), 0);
	before = fwt_slurp("shared/r.fence", NULL);
	REFUSED(run_as(VICTIM, NULL, &err, "--show", "shared/r",
	               (char *)NULL),
	        3, "shared/r.fence belongs to uid 65533 (group gid 65533, "
	           "mode 0644)");
	REFUSED(run_as(VICTIM, NULL, &err, "--check", "-t", "1", "shared/r",
	               (char *)NULL),
	        3, "--init -t N");
	/* --init never replaces a fence, and does not vouch for this one */
	assert_int_equal(run_as(VICTIM, NULL, &err, "--init", "shared/r",
	                        (char *)NULL), 3);
	if (strstr(err, "holds"))
		fail_msg("--init reported the planted fence's token: %s", err);
	free(err);
	/* and once the victim may write it too */
	if (acl_grant_write("shared/r.fence", VICTIM) != 0) {
		print_message("skipped: no ACLs here: %s\n", strerror(errno));
		free(before);
		skip();
	}
	REFUSED(run_as(VICTIM, NULL, &err, "--delete", "-t", "5", "shared/r",
	               (char *)NULL),
	        3, "uid 65533");
	REFUSED(run_as(VICTIM, "x\n", &err, "-t", "5", "shared/r",
	               (char *)NULL),
	        3, "uid 65533");
	after = fwt_slurp("shared/r.fence", NULL);
	assert_non_null(after);
	assert_memory_equal(before, after, 512);
	assert_null(fwt_slurp("shared/r", NULL));
	free(before);
	free(after);
}

/* Any user could lower the token of a fence that everyone may write. */
static void world_writable_fence_is_refused_even_if_ours(void **state)
{
	char *err;

	(void)state;
	need_root();
	make_shared();
	assert_int_equal(run_as(VICTIM, "one\n", NULL, "-t", "1", "shared/w",
	                        (char *)NULL), 0);
	assert_int_equal(chmod("shared/w.fence", 0666), 0);
	REFUSED(run_as(VICTIM, "two\n", &err, "-t", "2", "shared/w",
	               (char *)NULL),
	        3, "shared/w.fence is writable by every user (owner uid 65534, "
	           "group gid 65534, mode 0666)");
	REFUSED(run_as(VICTIM, NULL, &err, "--show", "shared/w", (char *)NULL),
	        3, "writable by every user");
	REFUSED(run_as(VICTIM, NULL, &err, "--check", "-t", "2", "shared/w",
	               (char *)NULL),
	        3, "writable by every user");
	REFUSED(run_as(VICTIM, NULL, &err, "--delete", "-t", "2", "shared/w",
	               (char *)NULL),
	        3, "writable by every user");
	/* root as well: it is not the owner that is in doubt */
	REFUSED(fwt_run("two\n", NULL, &err, "-t", "2", "shared/w",
	                (char *)NULL),
	        3, "writable by every user");
	fwt_assert_content("shared/w", "one\n");
	assert_int_equal(fwt_count_tmp("shared"), 0);
}

/* The fence's token as UID (a member of TEAM) sees it. */
static uint64_t mate_token(uid_t uid, const char *path)
{
	char *out, *err;
	uint64_t token;
	int rc = run_as_mate(uid, NULL, &out, &err, "--show", path,
	                     (char *)NULL);

	if (rc != 0)
		fail_msg("--show %s as uid %u: exit %d: %s", path,
		         (unsigned)uid, rc, err);
	assert_int_equal(fw_parse_token(strtok(out, "\n"), &token), FW_OK);
	free(out);
	free(err);
	return token;
}

/* Two accounts of one team take turns at NAME in "team", COUNT times. */
static void take_turns(const char *name, int count, const char *mode)
{
	char tok[16], body[32];

	for (int i = 1; i <= count; i++) {
		uid_t who = i % 2 ? MATE_A : MATE_B;
		char *err;
		int rc;

		snprintf(tok, sizeof(tok), "%d", i);
		snprintf(body, sizeof(body), "turn %d\n", i);
		rc = mode ? run_as_mate(who, body, NULL, &err, "--mode", mode,
		                        "-t", tok, name, (char *)NULL)
		          : run_as_mate(who, body, NULL, &err, "-t", tok, name,
		                        (char *)NULL);
		if (rc != 0)
			fail_msg("turn %d (uid %u) on %s: exit %d: %s", i,
			         (unsigned)who, name, rc, err);
		free(err);
	}
}

static void assert_owner_group_mode(const char *path, uid_t uid, gid_t gid,
                                    mode_t mode)
{
	struct stat st;

	assert_int_equal(stat(path, &st), 0);
	if (st.st_uid != uid || st.st_gid != gid || (st.st_mode & 07777) != mode)
		fail_msg("%s is %u:%u %04o, want %u:%u %04o", path,
		         (unsigned)st.st_uid, (unsigned)st.st_gid,
		         (unsigned)(st.st_mode & 07777), (unsigned)uid,
		         (unsigned)gid, (unsigned)mode);
}

/*
 * A team of service accounts sharing a group directory (setgid, the usual
 * NFS set-up): each trusts a fence the other created, because both are
 * members of its group and it is writable by that group.
 */
static void team_mates_take_turns_in_a_setgid_directory(void **state)
{
	mode_t old;
	char *err;

	(void)state;
	need_root();
	assert_int_equal(chmod(".", 0755), 0);
	assert_int_equal(mkdir("team", 0770), 0);
	assert_int_equal(chown("team", 0, TEAM), 0);
	assert_int_equal(chmod("team", 02770), 0);

	old = umask(002);
	take_turns("team/state", 40, NULL);
	umask(old);
	fwt_assert_content("team/state", "turn 40\n");
	assert_true(mate_token(MATE_A, "team/state") == 40);
	assert_true(mate_token(MATE_B, "team/state") == 40);
	assert_owner_group_mode("team/state.fence", MATE_A, TEAM, 0664);
	assert_owner_group_mode("team/state", MATE_B, TEAM, 0664);
	/* and a stale mate is still stale */
	REFUSED(run_as_mate(MATE_A, "late\n", NULL, &err, "-t", "39",
	                    "team/state", (char *)NULL),
	        1, "stale token 39");
	fwt_assert_content("team/state", "turn 40\n");

	/* the other way to share: the default umask and --mode 0660 */
	old = umask(022);
	take_turns("team/conf", 10, "0660");
	umask(old);
	fwt_assert_content("team/conf", "turn 10\n");
	assert_true(mate_token(MATE_A, "team/conf") == 10);
	assert_owner_group_mode("team/conf.fence", MATE_A, TEAM, 0660);
	assert_owner_group_mode("team/conf", MATE_B, TEAM, 0660);
	assert_int_equal(fwt_count_tmp("team"), 0);
}

/*
 * Outside a setgid directory only fencedwrite's own fchown keeps FILE's
 * group when a member of it who is not FILE's owner commits: the owner
 * cannot be kept, the group can.
 */
static void group_member_commit_keeps_file_group(void **state)
{
	mode_t old;

	(void)state;
	need_root();
	assert_int_equal(chmod(".", 0755), 0);
	assert_int_equal(mkdir("plain", 0755), 0);
	assert_int_equal(chown("plain", 0, TEAM), 0);
	assert_int_equal(chmod("plain", 0775), 0);
	old = umask(002);
	assert_int_equal(run_as_mate(MATE_A, "a\n", NULL, NULL, "-t", "1",
	                             "plain/f", (char *)NULL), 0);
	/* handed to the team, as an administrator would (chgrp) */
	assert_int_equal(chown("plain/f", MATE_A, TEAM), 0);
	assert_int_equal(chown("plain/f.fence", MATE_A, TEAM), 0);
	assert_int_equal(run_as_mate(MATE_B, "b\n", NULL, NULL, "-t", "2",
	                             "plain/f", (char *)NULL), 0);
	umask(old);
	fwt_assert_content("plain/f", "b\n");
	assert_owner_group_mode("plain/f", MATE_B, TEAM, 0664);
	assert_int_equal(fwt_count_tmp("plain"), 0);
}

/*
 * A replaced FILE keeps its set-id bits also when an unprivileged owner
 * commits it: the kernel clears them on the first write by a process
 * without CAP_FSETID, so bits set before the content was written are lost.
 */
static void unprivileged_owner_keeps_set_id_bits(void **state)
{
	(void)state;
	need_root();
	assert_int_equal(chmod(".", 0755), 0);
	assert_int_equal(mkdir("own", 0755), 0);
	assert_int_equal(chown("own", VICTIM, VICTIM), 0);
	assert_int_equal(run_as(VICTIM, "one\n", NULL, "--mode", "6750",
	                        "-t", "1", "own/tool", (char *)NULL), 0);
	assert_owner_group_mode("own/tool", VICTIM, VICTIM, 06750);
	assert_int_equal(run_as(VICTIM, "two\n", NULL, "-t", "2", "own/tool",
	                        (char *)NULL), 0);
	fwt_assert_content("own/tool", "two\n");
	assert_owner_group_mode("own/tool", VICTIM, VICTIM, 06750);
	assert_int_equal(fwt_count_tmp("own"), 0);
}

/*
 * Whoever may rename or remove names in the fence's directory can take the
 * fence away (the next write creates a new one at 0) or put another in its
 * place.  Writes are refused in a directory that users not trusted may
 * change: writable by others without the sticky bit, writable by a group
 * the writer is not in, or owned by someone else.
 */
static void fence_directory_others_may_change_is_refused(void **state)
{
	char *err;

	(void)state;
	need_root();
	assert_int_equal(chmod(".", 0755), 0);
	/* writable by everyone, no sticky bit: the attacker would delete
	   FILE and fence and the next write would start again at 0 */
	assert_int_equal(mkdir("drop", 0777), 0);
	assert_int_equal(chown("drop", 0, VICTIM), 0);   /* the group is ours */
	assert_int_equal(chmod("drop", 0777), 0);
	REFUSED(run_as(VICTIM, "v10\n", &err, "-t", "10", "drop/report",
	               (char *)NULL), 3, "drop");
	assert_null(fwt_slurp("drop/report", NULL));
	assert_null(fwt_slurp("drop/report.fence", NULL));
	/* writable by a group the writer is not in */
	assert_int_equal(mkdir("theirs", 0775), 0);
	assert_int_equal(chown("theirs", VICTIM, ATTACKER), 0);
	assert_int_equal(chmod("theirs", 0775), 0);
	REFUSED(run_as(VICTIM, "v10\n", &err, "-t", "10", "theirs/report",
	               (char *)NULL), 3, "theirs");
	/* owned by another user, even sticky */
	assert_int_equal(mkdir("owned", 01777), 0);
	assert_int_equal(chmod("owned", 01777), 0);
	assert_int_equal(chown("owned", ATTACKER, ATTACKER), 0);
	REFUSED(run_as(VICTIM, "v10\n", &err, "-t", "10", "owned/report",
	               (char *)NULL), 3, "owned");
	/* a sticky directory of root's, as /tmp: fine */
	assert_int_equal(mkdir("tmp", 01777), 0);
	assert_int_equal(chmod("tmp", 01777), 0);
	assert_int_equal(run_as(VICTIM, "v10\n", NULL, "-t", "10", "tmp/report",
	                        (char *)NULL), 0);
}

/*
 * In a setgid directory anyone who may create files there makes them of
 * its group: a group-writable fence of the writer's group proves nothing
 * there when others may create files, and is believed only from its owner.
 */
static void setgid_directory_open_to_others_voids_the_group_rule(
	void **state)
{
	static const gid_t team[] = { TEAM };
	char *err;

	(void)state;
	need_root();
	assert_int_equal(chmod(".", 0755), 0);
	assert_int_equal(mkdir("sg", 03777), 0);
	assert_int_equal(chown("sg", 0, TEAM), 0);
	assert_int_equal(chmod("sg", 03777), 0);
	assert_int_equal(run_as(ATTACKER, NULL, NULL, "--init", "--mode",
	                        "0664", "sg/report", (char *)NULL), 0);
	/* its owner may make it group-writable whenever it likes */
	assert_int_equal(chmod("sg/report.fence", 0664), 0);
	assert_owner_group_mode("sg/report.fence", ATTACKER, TEAM, 0664);
	REFUSED(run_as_mate(MATE_A, "good\n", NULL, &err, "-t", "100",
	                    "sg/report", (char *)NULL), 3, "uid 65533");
	assert_null(fwt_slurp("sg/report", NULL));
	(void)team;
}

/* The POSIX ACL in the extended attribute PATH NAME: one named entry
   TAG (0x02 user, 0x08 group) ID with PERM, and a mask of rw. */
static int set_acl(const char *path, const char *name, uint16_t named_tag,
                   uint32_t named_id)
{
	const uint16_t tags[6] = { 0x01, named_tag, 0x04, 0x10, 0x20 };
	const uint16_t perms[6] = { 7, 6, 5, 7, 5 };
	unsigned char buf[4 + 5 * 8];
	uint32_t v = htole32(2);

	memcpy(buf, &v, 4);
	for (int i = 0; i < 5; i++) {
		uint16_t tag = htole16(tags[i]), perm = htole16(perms[i]);
		uint32_t id = htole32(tags[i] == named_tag ? named_id
		                                           : UINT32_MAX);

		memcpy(buf + 4 + 8 * i, &tag, 2);
		memcpy(buf + 6 + 8 * i, &perm, 2);
		memcpy(buf + 8 + 8 * i, &id, 4);
	}
	return setxattr(path, name, buf, sizeof(buf), 0);
}

/*
 * An ACL can let a named user or group write the fence (or rename in its
 * directory) without the mode saying so beyond the group bits.  New fences
 * carry no ACL, whatever the directory's default ACL; a fence or directory
 * whose ACL lets someone untrusted write is refused.
 */
static void acl_writers_must_be_trusted(void **state)
{
	char *err;

	(void)state;
	need_root();
	assert_int_equal(chmod(".", 0755), 0);
	assert_int_equal(mkdir("acl", 0755), 0);
	assert_int_equal(chown("acl", VICTIM, VICTIM), 0);
	if (set_acl("acl", "system.posix_acl_default", 0x02, ATTACKER) != 0) {
		print_message("skipped: no ACLs here: %s\n", strerror(errno));
		skip();
	}
	/* the default ACL would give ATTACKER write on the new fence */
	assert_int_equal(run_as(VICTIM, "v100\n", NULL, "-t", "100",
	                        "acl/report", (char *)NULL), 0);
	assert_int_equal(getxattr("acl/report.fence", "system.posix_acl_access",
	                          NULL, 0), -1);
	assert_int_equal(run_as(VICTIM, "v101\n", NULL, "-t", "101",
	                        "acl/report", (char *)NULL), 0);
	/* an ACL added afterwards */
	assert_int_equal(set_acl("acl/report.fence", "system.posix_acl_access",
	                         0x02, ATTACKER), 0);
	REFUSED(run_as(VICTIM, "v102\n", &err, "-t", "102", "acl/report",
	               (char *)NULL), 3, "ACL");
	assert_int_equal(removexattr("acl/report.fence",
	                             "system.posix_acl_access"), 0);
	assert_int_equal(chmod("acl/report.fence", 0644), 0);
	/* the directory's own ACL letting ATTACKER rename in it */
	assert_int_equal(set_acl("acl", "system.posix_acl_access", 0x02,
	                         ATTACKER), 0);
	REFUSED(run_as(VICTIM, "v103\n", &err, "-t", "103", "acl/report",
	               (char *)NULL), 3, "ACL");
	fwt_assert_content("acl/report", "v101\n");
}

/* A first write in a setgid directory of a group the writer is not in
   must not make a fence that group may write, nor one it then refuses. */
static void new_fence_is_group_writable_only_for_the_writers_group(
	void **state)
{
	mode_t old;

	(void)state;
	need_root();
	assert_int_equal(chmod(".", 0755), 0);
	assert_int_equal(mkdir("foreign", 03777), 0);
	assert_int_equal(chown("foreign", 0, ATTACKER), 0);
	assert_int_equal(chmod("foreign", 03777), 0);
	old = umask(002);
	assert_int_equal(run_as(VICTIM, "one\n", NULL, "-t", "1", "foreign/f",
	                        (char *)NULL), 0);
	umask(old);
	assert_owner_group_mode("foreign/f.fence", VICTIM, ATTACKER, 0644);
	assert_int_equal(run_as(VICTIM, "two\n", NULL, "-t", "2", "foreign/f",
	                        (char *)NULL), 0);
}

/*
 * A set-id FILE's replacement is written while only its owner may write
 * it: a group member writing into a group-writable temporary file would
 * otherwise get its content made set-id (the kernel clears the bits on
 * its write, and the commit would set them again).
 */
static void set_id_content_is_filled_behind_closed_doors(void **state)
{
	struct stat st;
	char *out;

	(void)state;
	need_root();
	assert_int_equal(chmod(".", 0755), 0);
	assert_int_equal(mkdir("bin", 0755), 0);
	assert_int_equal(fwt_run("v1\n", NULL, NULL, "-t", "1", "bin/tool",
	                         (char *)NULL), 0);
	/* a group-writable set-uid tool, as the attack needs */
	assert_int_equal(chown("bin/tool", 0, TEAM), 0);
	assert_int_equal(chmod("bin/tool", 04775), 0);
	/* CMD prints the temporary file's mode while it is being filled */
	assert_int_equal(fwt_run(NULL, NULL, NULL, "-t", "3", "bin/tool", "--",
	                         "sh", "-c", "stat -c %a bin/.tool.fwtmp.*;"
	                         " echo v3", (char *)NULL), 0);
	out = fwt_slurp("bin/tool", NULL);
	assert_non_null(out);
	assert_string_equal(out, "600\nv3\n");
	free(out);
	assert_int_equal(stat("bin/tool", &st), 0);
	assert_int_equal(st.st_mode & 07777, 04775);
}

/* A fence holds data: read and write bits only, never write for others. */
static void new_fences_get_read_and_write_bits_only(void **state)
{
	struct stat st;
	mode_t old;

	(void)state;
	assert_int_equal(fwt_run("x", NULL, NULL, "--mode", "6777", "-t", "1",
	                         "m1", (char *)NULL), 0);
	assert_int_equal(stat("m1.fence", &st), 0);
	assert_int_equal(st.st_mode & 07777, 0664);

	old = umask(0);
	assert_int_equal(fwt_run("x", NULL, NULL, "-t", "1", "m2",
	                         (char *)NULL), 0);
	umask(old);
	assert_int_equal(stat("m2.fence", &st), 0);
	assert_int_equal(st.st_mode & 07777, 0664);

	fwt_spit("m3", "existing\n");
	assert_int_equal(chmod("m3", 0777), 0);
	assert_int_equal(fwt_run(NULL, NULL, NULL, "--init", "m3",
	                         (char *)NULL), 0);
	assert_int_equal(stat("m3.fence", &st), 0);
	assert_int_equal(st.st_mode & 07777, 0664);
	/* FILE keeps its own bits */
	assert_int_equal(stat("m3", &st), 0);
	assert_int_equal(st.st_mode & 07777, 0777);
}

static void permission_denied_at_each_level(void **state)
{
	char *err;

	(void)state;
	need_root();
	assert_int_equal(chmod(".", 0755), 0);
	assert_int_equal(mkdir("d", 0755), 0);       /* not writable by us */
	assert_int_equal(fwt_run("root\n", NULL, NULL, "-t", "1", "d/f",
	                         (char *)NULL), 0);
	assert_int_equal(chmod("d/f.fence", 0666), 0);
	REFUSED(run_as(VICTIM, "x\n", &err, "-t", "2", "d/f", (char *)NULL),
	        5, "open(d/.f.fwtmp.XXXXXXXXXXXX): Permission denied");
	/* directory writable (sticky, as a shared one must be), fence not */
	assert_int_equal(chmod("d", 01777), 0);
	assert_int_equal(chmod("d/f.fence", 0644), 0);
	REFUSED(run_as(VICTIM, "x\n", &err, "-t", "2", "d/f", (char *)NULL),
	        5, "Permission denied");
	/* fence not even readable */
	assert_int_equal(chmod("d/f.fence", 0600), 0);
	REFUSED(run_as(VICTIM, NULL, &err, "--show", "d/f", (char *)NULL),
	        5, "open(d/f.fence): Permission denied");
	fwt_assert_content("d/f", "root\n");
	/* FILE itself read-only: a rename replaces it, as an editor would
	   (the fence is the writer's own: a world-writable one is refused) */
	assert_int_equal(chown("d/f.fence", VICTIM, VICTIM), 0);
	assert_int_equal(chmod("d/f.fence", 0644), 0);
	assert_int_equal(chown("d/f", VICTIM, VICTIM), 0);   /* sticky dir */
	assert_int_equal(chmod("d/f", 0444), 0);
	assert_int_equal(run_as(VICTIM, "x\n", NULL, "-t", "2", "d/f", (char *)NULL), 0);
	fwt_assert_content("d/f", "x\n");
	assert_int_equal(fwt_count_tmp("d"), 0);
}

static int mount_tmpfs(const char *dir, const char *opts)
{
	if (mkdir(dir, 0755) != 0 && errno != EEXIST)
		return -1;
	return mount("tmpfs", dir, "tmpfs", 0, opts);
}

static void read_only_filesystem_fails_with_5_and_changes_nothing(void **state)
{
	char *err;

	(void)state;
	need_root();
	if (mount_tmpfs("ro", "size=1m") != 0) {
		print_message("skipped: cannot mount tmpfs: %s\n",
		              strerror(errno));
		skip();
	}
	assert_int_equal(fwt_run("before\n", NULL, NULL, "-t", "1", "ro/f",
	                         (char *)NULL), 0);
	assert_int_equal(mount("tmpfs", "ro", "tmpfs",
	                       MS_REMOUNT | MS_RDONLY, NULL), 0);
	REFUSED(fwt_run("after\n", NULL, &err, "-t", "2", "ro/f",
	                       (char *)NULL),
	        5, "Read-only file system");
	REFUSED(fwt_run(NULL, NULL, &err, "--delete", "-t", "2", "ro/f",
	                       (char *)NULL),
	        5, "Read-only file system");
	assert_int_equal(fwt_run(NULL, NULL, NULL, "--check", "-t", "2", "ro/f",
	                         (char *)NULL), 0);
	fwt_assert_content("ro/f", "before\n");
	assert_true(fwt_fence_token("ro/f") == 1);
	assert_int_equal(umount("ro"), 0);
}

static void full_disk_fails_with_5_and_leaves_no_trace(void **state)
{
	size_t big = 256 * 1024;
	char *data = malloc(big + 1), *err;

	(void)state;
	need_root();
	if (mount_tmpfs("full", "size=64k") != 0) {
		print_message("skipped: cannot mount tmpfs: %s\n",
		              strerror(errno));
		skip();
	}
	assert_int_equal(fwt_run("small\n", NULL, NULL, "-t", "1", "full/f",
	                         (char *)NULL), 0);
	memset(data, 'x', big);
	data[big] = '\0';
	REFUSED(fwt_run(data, NULL, &err, "-t", "2", "full/f",
	                       (char *)NULL),
	        5, "No space left on device");
	fwt_assert_content("full/f", "small\n");
	assert_true(fwt_fence_token("full/f") == 1);
	assert_int_equal(fwt_count_tmp("full"), 0);
	/* and the space is given back: a small write still fits */
	assert_int_equal(fwt_run("next\n", NULL, NULL, "-t", "2", "full/f",
	                         (char *)NULL), 0);
	assert_int_equal(umount("full"), 0);
	free(data);
}

static void directory_fifo_or_device_at_file_is_refused(void **state)
{
	char *err;

	(void)state;
	assert_int_equal(mkdir("adir", 0755), 0);
	assert_int_equal(mkfifo("afifo", 0644), 0);
	REFUSED(fwt_run("x", NULL, &err, "-t", "1", "adir",
	                       (char *)NULL),
	        3, "not a regular file");
	REFUSED(fwt_run("x", NULL, &err, "-t", "1", "afifo",
	                       (char *)NULL),
	        3, "not a regular file");
	REFUSED(fwt_run(NULL, NULL, &err, "--init", "afifo",
	                       (char *)NULL),
	        3, "not a regular file");
	if (geteuid() == 0) {
		assert_int_equal(mknod("anull", S_IFCHR | 0666,
		                       makedev(1, 3)), 0);
		REFUSED(fwt_run("x", NULL, &err, "-t", "1", "anull",
		                       (char *)NULL),
	        3, "not a regular file");
		assert_int_equal(mknod("anull2.fence", S_IFCHR | 0666,
		                       makedev(1, 3)), 0);
		REFUSED(fwt_run("x", NULL, &err, "-t", "1", "anull2",
		                       (char *)NULL),
	        3, "not a regular file");
	}
	assert_int_equal(fwt_count_tmp("."), 0);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
#define T(f) cmocka_unit_test_setup_teardown(f, fwt_setup, fwt_teardown)
		T(planted_links_never_redirect_a_write),
		T(planted_temporary_names_are_neither_used_nor_removed),
		T(fence_owned_by_someone_else_is_refused),
		T(fence_planted_by_another_user_is_refused),
		T(fence_planted_by_another_user_is_refused_by_every_action),
		T(world_writable_fence_is_refused_even_if_ours),
		T(team_mates_take_turns_in_a_setgid_directory),
		T(group_member_commit_keeps_file_group),
		T(unprivileged_owner_keeps_set_id_bits),
		T(fence_directory_others_may_change_is_refused),
		T(setgid_directory_open_to_others_voids_the_group_rule),
		T(acl_writers_must_be_trusted),
		T(new_fence_is_group_writable_only_for_the_writers_group),
		T(set_id_content_is_filled_behind_closed_doors),
		T(new_fences_get_read_and_write_bits_only),
		T(permission_denied_at_each_level),
		T(read_only_filesystem_fails_with_5_and_changes_nothing),
		T(full_disk_fails_with_5_and_leaves_no_trace),
		T(directory_fifo_or_device_at_file_is_refused),
	};
	return cmocka_run_group_tests_name("hostile", tests, NULL, NULL);
}
