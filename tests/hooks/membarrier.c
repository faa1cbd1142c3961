/* SPDX-License-Identifier: MIT */
/*
 * idr_lock()'s bias and membarrier(2) (src/lock.c), with the library's
 * membarrier() calls answered by a hook that counts the barriers: a
 * process without the system call biases nothing, and one that has
 * revoked 64 biases stops biasing.  Whether membarrier(2) works is found
 * once per process, at its first idr_lock(), so each test runs in a child
 * forked before this process ever locks an idr.  run-threads covers the
 * barrier refused after it worked, with seccomp filters.
 */
#include <errno.h>
#include <idr.h>
#include <linux/membarrier.h>
#include <pthread.h>
#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

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

#define EXPECT(cond)                                                          \
	do {                                                                  \
		if (!(cond)) {                                                \
			fprintf(stderr, "%s:%d: expected %s\n", __FILE__,     \
				__LINE__, #cond);                             \
			return 1;                                             \
		}                                                             \
	} while (0)

/* Another thread takes @idr's lock while this one holds it, and must wait
 * for the unlock: it records whether it found the holder gone. */
struct contender {
	struct idr *idr;
	int holder_done;  /* set by the holder just before it unlocks */
	int saw_holder_done;
	int started;
};

static void *contend(void *arg)
{
	struct contender *c = arg;

	__atomic_store_n(&c->started, 1, __ATOMIC_SEQ_CST);
	idr_lock(c->idr);
	c->saw_holder_done = __atomic_load_n(&c->holder_done, __ATOMIC_SEQ_CST);
	idr_unlock(c->idr);
	return NULL;
}

/* This thread locks @idr first (it becomes the owner if the bias is
 * allowed), then holds it for 20 ms while another thread asks for it:
 * 1 if that thread got the lock only after the unlock. */
static int exclusive_against_a_second_thread(struct idr *idr)
{
	struct contender c = { .idr = idr };
	struct timespec d = { 0, 20 * 1000 * 1000 };
	pthread_t t;

	idr_lock(idr); /* the first lock: the bias, if allowed, is ours */
	idr_unlock(idr);
	idr_lock(idr);
	if (pthread_create(&t, NULL, contend, &c))
		return 0;
	while (!__atomic_load_n(&c.started, __ATOMIC_SEQ_CST))
		sched_yield();
	nanosleep(&d, NULL);
	__atomic_store_n(&c.holder_done, 1, __ATOMIC_SEQ_CST);
	idr_unlock(idr);
	pthread_join(t, NULL);
	return c.saw_holder_done;
}

/* No membarrier(2) at all (an old kernel, a sandbox): no idr is biased,
 * so no lock ever needs a barrier, and the lock still excludes. */
static int without_membarrier_no_idr_is_biased(void)
{
	struct idr idr;

	idr_init(&idr);
	refuse_all = 1;
	idr_test_membarrier_hook = answer;
	EXPECT(exclusive_against_a_second_thread(&idr));
	EXPECT(barriers == 0);
	idr_destroy(&idr);
	return 0;
}

/* A process that hands idrs between threads stops biasing new ones after
 * REVOKE_BUDGET (64) revocations: each would cost an IPI per CPU. */
static int after_64_revocations_new_idrs_are_not_biased(void)
{
	static struct idr idrs[65];

	idr_test_membarrier_hook = answer;
	for (int i = 0; i < 64; i++) {
		idr_init(&idrs[i]);
		EXPECT(exclusive_against_a_second_thread(&idrs[i]));
	}
	EXPECT(barriers == 64);
	idr_init(&idrs[64]);
	EXPECT(exclusive_against_a_second_thread(&idrs[64]));
	EXPECT(barriers == 64); /* never biased: nothing to revoke */
	for (int i = 0; i < 65; i++)
		idr_destroy(&idrs[i]);
	return 0;
}

static int pass, fail;

static void report(const char *name, int ok)
{
	printf("%s membarrier/%s\n", ok ? "PASS" : "FAIL", name);
	ok ? pass++ : fail++;
}

/* Runs @fn in a child of its own, which must exit with 0. */
static void expect_exit_0(const char *name, int (*fn)(void))
{
	int status = -1;

	fflush(NULL);
	pid_t pid = fork();
	if (pid == 0) {
		alarm(20);
		_exit(fn());
	}
	int ok = pid > 0 && waitpid(pid, &status, 0) == pid && WIFEXITED(status) &&
		 WEXITSTATUS(status) == 0;
	if (!ok)
		fprintf(stderr, "%s: child status %d\n", name, status);
	report(name, ok);
}

int main(void)
{
	expect_exit_0("without_membarrier_no_idr_is_biased",
		      without_membarrier_no_idr_is_biased);
	expect_exit_0("after_64_revocations_new_idrs_are_not_biased",
		      after_64_revocations_new_idrs_are_not_biased);

	printf("membarrier: %d passed, %d failed\n", pass, fail);
	return fail != 0;
}
