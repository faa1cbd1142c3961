/* SPDX-License-Identifier: MIT */
/*
 * A fork while another thread is inside the window that
 * idr_fork_prepare() must keep forks out of: a batch of frees taken and
 * not yet handed to liburcu.  The library is built with -DIDR_TEST_HOOKS,
 * whose hook holds the thread in that window for a while; the main thread
 * forks meanwhile.  Had the fork landed in the window, the child would
 * inherit a batch marked queued that nothing queues, free nothing again,
 * and hang in idr_rcu_barrier() until the alarm.
 */
#include <idr.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

extern void (*idr_test_window_hook)(void);

static int obj;
static int hold_next, in_window, left_window;

/* The first batch taken after hold_next is set is held for 200 ms. */
static void hold_in_window(void)
{
	struct timespec d = { 0, 200 * 1000 * 1000 };

	if (!__atomic_exchange_n(&hold_next, 0, __ATOMIC_SEQ_CST))
		return;
	__atomic_store_n(&in_window, 1, __ATOMIC_SEQ_CST);
	nanosleep(&d, NULL);
	__atomic_store_n(&left_window, 1, __ATOMIC_SEQ_CST);
}

/* A leaf filled and emptied: the node retired starts a batch. */
static void retire_a_leaf(struct idr *idr)
{
	for (int i = 0; i < 64; i++)
		if (idr_alloc(idr, &obj, 4096, 0, IDR_GFP_KERNEL) < 0)
			abort();
	for (unsigned long i = 4096; i < 4096 + 64; i++)
		idr_remove(idr, i);
}

static struct idr theirs;

static void *retire_in_window(void *arg)
{
	(void)arg;
	__atomic_store_n(&hold_next, 1, __ATOMIC_SEQ_CST);
	retire_a_leaf(&theirs);
	return NULL;
}

static int child(void)
{
	struct idr mine;

	alarm(10);
	idr_fork_child();
	idr_init(&mine);
	retire_a_leaf(&mine);
	idr_rcu_barrier();
	return 0;
}

int main(void)
{
	pthread_t t;
	int status, pass = 0, fail = 0;

	idr_test_window_hook = hold_in_window;
	idr_init(&theirs);
	idr_rcu_barrier(); /* liburcu's worker exists, no batch is queued */
	if (pthread_create(&t, NULL, retire_in_window, NULL))
		abort();
	while (!__atomic_load_n(&in_window, __ATOMIC_SEQ_CST))
		sched_yield();
	idr_fork_prepare();
	/* The other thread has left the window: the fork waited for it. */
	int waited = __atomic_load_n(&left_window, __ATOMIC_SEQ_CST);
	pid_t pid = fork();
	if (pid == 0)
		_exit(child());
	idr_fork_parent();
	pthread_join(t, NULL);
	int ok = pid > 0 && waitpid(pid, &status, 0) == pid && WIFEXITED(status) &&
		 WEXITSTATUS(status) == 0;
	printf("%s fork-window/idr_fork_prepare_waits_for_a_batch_being_queued\n",
	       waited ? "PASS" : "FAIL");
	waited ? pass++ : fail++;
	printf("%s fork-window/the_child_frees_what_it_retires\n", ok ? "PASS" : "FAIL");
	ok ? pass++ : fail++;
	idr_destroy(&theirs);
	idr_rcu_barrier();
	printf("fork-window: %d passed, %d failed\n", pass, fail);
	return fail != 0;
}
