/* SPDX-License-Identifier: MIT */
/*
 * idr_lock()'s bias and membarrier(2) (src/lock.c), with the library's
 * membarrier() calls answered by a hook that counts the barriers: a
 * process without the system call biases nothing, and one that has
 * revoked 64 biases stops biasing.  Whether membarrier(2) works is found
 * once per process, at its first idr_lock(), so each test runs in a child
 * forked from this process, which never locks an idr.  run-threads covers
 * the barrier refused after it worked, with seccomp filters.
 */
#include <errno.h>
#include <linux/membarrier.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#include "testutil.h"

extern long (*idr_test_membarrier_hook)(int cmd);

/* Whether the hook refuses every command, as a kernel without
 * membarrier(2) does; how many barriers were asked for either way. */
static int refuse_all;
static int barriers;

static long answer(int cmd)
{
	if (cmd == MEMBARRIER_CMD_PRIVATE_EXPEDITED || cmd == MEMBARRIER_CMD_GLOBAL)
		__atomic_add_fetch(&barriers, 1, __ATOMIC_SEQ_CST);
	if (refuse_all) {
		errno = ENOSYS;
		return -1;
	}
	return syscall(SYS_membarrier, cmd, 0, 0);
}

/* @body in a child of its own, with the hook in place; the test fails if
 * the child does. */
static void in_a_child(void (*body)(void))
{
	int status = -1;

	fflush(NULL);
	pid_t pid = fork();
	if (pid == 0) {
		alarm(20);
		idr_test_membarrier_hook = answer;
		body();
		tu_child_exit(tu_failed());
	}
	CHECK(pid > 0 && waitpid(pid, &status, 0) == pid);
	CHECK(WIFEXITED(status));
	CHECK_EQ(WEXITSTATUS(status), 0);
}

/* No membarrier(2) at all (an old kernel, a sandbox): no idr is biased, so
 * a second thread sleeps on the futex word at once, and no lock ever asks
 * for a barrier. */
static void unbiased_without_membarrier(void)
{
	struct idr idr;

	refuse_all = 1;
	idr_init(&idr);
	tu_hold_against_waiter(&idr, &idr.idr_lock_word, 2);
	CHECK_EQ(barriers, 0);
	idr_destroy(&idr);
}

TEST(without_membarrier_no_idr_is_biased)
{
	in_a_child(unbiased_without_membarrier);
}

/* A process that hands idrs between threads stops biasing new ones after
 * REVOKE_BUDGET (64) revocations: each would cost an IPI per CPU. */
static void unbiased_after_64_revocations(void)
{
	static struct idr idrs[65];

	for (int i = 0; i < 64; i++) {
		idr_init(&idrs[i]);
		/* Biased to this thread: the waiter revokes, then sleeps on
		 * busy. */
		tu_hold_against_waiter(&idrs[i], &idrs[i].idr_lock_busy, 1);
	}
	CHECK_EQ(barriers, 64);
	idr_init(&idrs[64]);
	tu_hold_against_waiter(&idrs[64], &idrs[64].idr_lock_word, 2);
	CHECK_EQ(barriers, 64); /* never biased: nothing to revoke */
	for (int i = 0; i < 65; i++)
		idr_destroy(&idrs[i]);
}

TEST(after_64_revocations_new_idrs_are_not_biased)
{
	in_a_child(unbiased_after_64_revocations);
}
