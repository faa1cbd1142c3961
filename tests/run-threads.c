/* SPDX-License-Identifier: MIT */
/*
 * Several writers sharing one idr through idr_lock(), and several threads
 * sharing one ida (which locks itself).  An ID must never be handed to two
 * holders at once, and the final contents must be exactly the union of what
 * each thread kept.  Runs under ThreadSanitizer too (no RCU readers here).
 */
#include <linux/filter.h>
#include <linux/membarrier.h>
#include <linux/seccomp.h>
#include <pthread.h>
#include <sched.h>
#include <signal.h>
#include <stddef.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "testutil.h"

/* add_by_old_api() uses the old API on purpose. */
#pragma GCC diagnostic ignored "-Wdeprecated-declarations"

#define THREADS 4
#define SPACE 4096 /* small, so IDs are reused all the time */

static int owner[SPACE * 2]; /* 0 = free, else thread + 1 */

struct writer {
	struct idr *idr;
	struct ida *ida;
	unsigned tag;
	long iters, dup, errors;
	int held[SPACE];
	int nheld;
};

static void take(struct writer *w, int id)
{
	if (__atomic_exchange_n(&owner[id], w->tag + 1, __ATOMIC_RELAXED))
		w->dup++;
	w->held[w->nheld++] = id;
}

static int give_back(struct writer *w, uint64_t *rng)
{
	int k = (int)(tu_rand(rng) % (uint64_t)w->nheld);
	int id = w->held[k];

	w->held[k] = w->held[--w->nheld];
	__atomic_store_n(&owner[id], 0, __ATOMIC_RELAXED);
	return id;
}

static bool time_to_remove(const struct writer *w, uint64_t *rng)
{
	return w->nheld && (w->nheld >= SPACE / THREADS || tu_rand(rng) % 2);
}

static void remove_one(struct writer *w, uint64_t *rng)
{
	int id = give_back(w, rng);

	idr_lock(w->idr);
	/* the owner is cleared first: the ID may be reissued as soon as the
	 * lock drops */
	if (idr_remove(w->idr, (unsigned)id) != tu_tag_ptr(w->tag, (unsigned)id))
		w->errors++;
	idr_unlock(w->idr);
}

/* Under the lock: a reserved ID @id (or an error) becomes this writer's. */
static void keep(struct writer *w, int id)
{
	if (id < 0) {
		w->errors++;
		return;
	}
	take(w, id);
	idr_replace(w->idr, tu_tag_ptr(w->tag, (unsigned)id), (unsigned)id);
}

/* Remove or add at random for @w->iters steps, adding with @add. */
static void churn(struct writer *w, uint64_t seed, void (*add)(struct writer *w))
{
	uint64_t rng = (uint64_t)w->tag * seed + 1;

	for (long i = 0; i < w->iters; i++) {
		if (time_to_remove(w, &rng))
			remove_one(w, &rng);
		else
			add(w);
	}
}

static void add_by_seed_pattern(struct writer *w)
{
	idr_preload(IDR_GFP_KERNEL);
	idr_lock(w->idr);
	keep(w, idr_alloc(w->idr, NULL, 0, SPACE, IDR_GFP_NOWAIT));
	idr_unlock(w->idr);
	idr_preload_end();
}

/* The old API: idr_pre_get() outside the lock, so that the threads fill and
 * drain the idr's one reserve at the same time, and idr_get_new() under it,
 * again after -EAGAIN (another thread took the nodes). */
static void add_by_old_api(struct writer *w)
{
	int id = -1, err = -EAGAIN;

	while (err == -EAGAIN && idr_pre_get(w->idr, IDR_GFP_KERNEL)) {
		idr_lock(w->idr);
		err = idr_get_new(w->idr, NULL, &id);
		if (err != -EAGAIN)
			keep(w, err ? err : id);
		idr_unlock(w->idr);
	}
	w->errors += err == -EAGAIN; /* idr_pre_get() failed */
}

static void *idr_writer(void *arg)
{
	churn(arg, 7777, add_by_seed_pattern);
	return NULL;
}

static void *compat_writer(void *arg)
{
	churn(arg, 4243, add_by_old_api);
	return NULL;
}

/* Run @fn on every writer in its own thread; false if a thread failed to
 * start or join, or handed out an ID twice or met an error. */
static bool run_writers(struct writer *w, struct idr *idr, struct ida *ida,
			void *(*fn)(void *))
{
	pthread_t t[THREADS];
	bool ok = true;

	memset(owner, 0, sizeof(owner)); /* left over from an earlier test */
	for (int i = 0; i < THREADS; i++) {
		w[i] = (struct writer){ .idr = idr, .ida = ida, .tag = (unsigned)i,
					.iters = tu_scale(200000) };
		ok &= pthread_create(&t[i], NULL, fn, &w[i]) == 0;
	}
	for (int i = 0; i < THREADS; i++)
		ok &= pthread_join(t[i], NULL) == 0;
	for (int i = 0; i < THREADS; i++)
		ok &= w[i].dup == 0 && w[i].errors == 0;
	return ok;
}

/* Writers running @fn on one idr: no ID held twice at once, and at the end
 * the idr holds exactly what each writer kept. */
static void writers_share_one_idr(void *(*fn)(void *))
{
	static struct writer w[THREADS];
	struct idr idr;

	idr_init_flags(&idr, 0, tu_tsan() ? IDR_F_NO_RCU : 0);
	CHECK(run_writers(w, &idr, NULL, fn));
	long total = 0;
	for (int i = 0; i < THREADS; i++) {
		for (int k = 0; k < w[i].nheld; k++)
			CHECK(idr_find(&idr, (unsigned)w[i].held[k]) ==
			      tu_tag_ptr((unsigned)i, (unsigned)w[i].held[k]));
		total += w[i].nheld;
	}
	void *p;
	int id;
	long seen = 0;
	idr_for_each_entry(&idr, p, id)
		seen++;
	CHECK_EQ(seen, total);
	idr_destroy(&idr);
}

TEST(writers_with_idr_lock_never_share_an_id)
{
	writers_share_one_idr(idr_writer);
}

TEST(old_api_writers_share_the_reserve_and_never_share_an_id)
{
	writers_share_one_idr(compat_writer);
}

static void *ida_user(void *arg)
{
	struct writer *w = arg;
	uint64_t rng = (uint64_t)w->tag * 31 + 5;

	for (long i = 0; i < w->iters; i++) {
		if (i % 16 == 0 && w->nheld) {
			/* The queries take the lock too; what this thread holds
			 * exists, and nothing lower than all it holds is missed. */
			int low = w->held[0];
			for (int k = 1; k < w->nheld; k++)
				low = w->held[k] < low ? w->held[k] : low;
			int first = ida_find_first_range(w->ida, 0, SPACE * 2 - 1);
			if (!ida_exists(w->ida, (unsigned)low) || first < 0 || first > low)
				w->errors++;
		}
		if (w->nheld && (w->nheld >= SPACE / THREADS || tu_rand(&rng) % 2)) {
			ida_free(w->ida, (unsigned)give_back(w, &rng));
			continue;
		}
		int id = ida_alloc_range(w->ida, 0, SPACE * 2 - 1, IDR_GFP_KERNEL);
		if (id >= 0)
			take(w, id);
		else
			w->errors++;
	}
	return NULL;
}

TEST(ida_is_safe_without_caller_locking)
{
	static struct writer w[THREADS];
	struct ida ida;

	ida_init(&ida);
	CHECK(run_writers(w, NULL, &ida, ida_user));
	long total = 0;
	for (int i = 0; i < THREADS; i++) {
		for (int k = 0; k < w[i].nheld; k++)
			CHECK(ida_exists(&ida, (unsigned)w[i].held[k]));
		total += w[i].nheld;
	}
	long seen = 0;
	for (unsigned id = 0; id < SPACE * 2; id++)
		seen += ida_exists(&ida, id);
	CHECK_EQ(seen, total);
	CHECK_EQ(tu_diag_count(), 0);
	ida_destroy(&ida);
	CHECK(ida_is_empty(&ida));
}

/* The calls that return early (ida_free() of a free ID, which reports it)
 * and the one that only looks (ida_check()) let the ida's lock go: another
 * thread's allocation then goes through.  Its caller's own later calls
 * could not tell, since the thread that holds the lock's bias takes it
 * again. */
static struct ida lock_left_ida;
static int other_got;

static void *alloc_on_another_thread(void *arg)
{
	(void)arg;
	__atomic_store_n(&other_got, ida_alloc(&lock_left_ida, IDR_GFP_KERNEL) + 1,
			 __ATOMIC_SEQ_CST);
	return NULL;
}

/* What another thread's ida_alloc() returned, or -2 if it was still
 * waiting after 10 s (the thread is left behind, blocked). */
static int alloc_elsewhere(void)
{
	pthread_t t;

	__atomic_store_n(&other_got, 0, __ATOMIC_SEQ_CST);
	if (pthread_create(&t, NULL, alloc_on_another_thread, NULL))
		return -3;
	for (int i = 0; i < 1000 && !__atomic_load_n(&other_got, __ATOMIC_SEQ_CST); i++)
		usleep(10 * 1000);
	int got = __atomic_load_n(&other_got, __ATOMIC_SEQ_CST);
	if (!got) {
		pthread_detach(t);
		return -2;
	}
	pthread_join(t, NULL);
	return got - 1;
}

TEST(ida_calls_that_return_early_or_only_look_let_the_lock_go)
{
	ida_init(&lock_left_ida);
	CHECK_EQ(ida_alloc(&lock_left_ida, IDR_GFP_KERNEL), 0);
	ida_free(&lock_left_ida, 5); /* not allocated */
	CHECK_EQ(tu_diag_count(), 1);
	tu_diag_reset();
	CHECK_EQ(alloc_elsewhere(), 1);
	CHECK_EQ(ida_alloc(&lock_left_ida, IDR_GFP_KERNEL), 2);
	CHECK_EQ(ida_check(&lock_left_ida), 0);
	CHECK_EQ(alloc_elsewhere(), 3);
	ida_destroy(&lock_left_ida);
}

/* ---- idr_lock() itself: mutual exclusion, and sleepers are woken ---- */

struct counter {
	struct idr *idr;
	long iters;
	long value; /* plain, not atomic: only the lock guards it */
	int inside; /* how many threads are inside at once (should be 1) */
	int overlap;
};

/* Programs built against idr.h lock inline, older ones and those built
 * with IDR_NO_INLINE through the library: one lock, whichever takes it. */
static void lock_either(struct idr *idr, long i)
{
	if (i % 3 == 1)
		tu_library_lock(idr);
	else
		idr_lock(idr);
}

static void unlock_either(struct idr *idr, long i)
{
	if (i % 5 == 2)
		tu_library_unlock(idr);
	else
		idr_unlock(idr);
}

static void *count_under_lock(void *arg)
{
	struct counter *c = arg;

	for (long i = 0; i < c->iters; i++) {
		lock_either(c->idr, i);
		if (__atomic_add_fetch(&c->inside, 1, __ATOMIC_RELAXED) != 1)
			__atomic_store_n(&c->overlap, 1, __ATOMIC_RELAXED);
		c->value++;
		/* Now and then hold the lock long enough that the others give up
		 * spinning and sleep in the kernel. */
		if (i % 1024 == 0)
			sched_yield();
		__atomic_sub_fetch(&c->inside, 1, __ATOMIC_RELAXED);
		unlock_either(c->idr, i);
	}
	return NULL;
}

/* All threads start together: the first to lock becomes the owner and the
 * others revoke its bias while it may be inside. */
static void count_with_threads(struct idr *idr, long iters)
{
	struct counter c = { idr, iters, 0, 0, 0 };
	pthread_t t[THREADS];

	for (int i = 0; i < THREADS; i++)
		CHECK_EQ(pthread_create(&t[i], NULL, count_under_lock, &c), 0);
	for (int i = 0; i < THREADS; i++)
		pthread_join(t[i], NULL);
	CHECK_EQ(c.overlap, 0);
	CHECK_EQ(c.value, THREADS * c.iters);
	CHECK_EQ(idr->idr_lock_word, 0); /* released, no waiter left marked */
	CHECK_EQ(idr->idr_lock_busy, 0);
}

TEST(idr_lock_excludes_and_loses_no_update)
{
	DEFINE_IDR(idr);

	count_with_threads(&idr, tu_scale(200000));
	/* Fresh idrs, so that the revocation races with the owner again and
	 * again (fewer than the 64 after which new idrs stay unbiased). */
	for (int k = 0; k < 16; k++) {
		struct idr fresh;
		idr_init(&fresh);
		count_with_threads(&fresh, tu_scale(5000));
	}
}

TEST(idr_lock_waiter_sleeps_until_unlock)
{
	DEFINE_IDR(idr);

	/* We are the owner: the waiter revokes the bias, then sleeps until
	 * we leave it (on busy, which reads 1 while we are inside). */
	tu_hold_against_waiter(&idr, &idr.idr_lock_busy, 1);
	CHECK_EQ(idr.idr_lock_revoke, 1);
	/* Revoked: now we hold the futex word and the waiter sleeps on it. */
	tu_hold_against_waiter(&idr, &idr.idr_lock_word, 2);
}

static void *lock_and_leave(void *arg)
{
	idr_lock(arg);
	idr_unlock(arg);
	return NULL;
}

TEST(idr_lock_bias_of_an_exited_thread_is_revoked)
{
	DEFINE_IDR(idr);
	pthread_t t;

	CHECK_EQ(pthread_create(&t, NULL, lock_and_leave, &idr), 0);
	pthread_join(t, NULL);
	CHECK(idr.idr_lock_owner != NULL);
	count_with_threads(&idr, tu_scale(20000));
}

/* Make membarrier(2) fail with EPERM in this process, through a seccomp
 * filter: only its private expedited commands (registration included) if
 * @private_only, so that MEMBARRIER_CMD_GLOBAL still works, else all. */
static bool refuse_membarrier(bool private_only)
{
	struct sock_filter code[] = {
		BPF_STMT(BPF_LD | BPF_W | BPF_ABS, offsetof(struct seccomp_data, nr)),
		BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, __NR_membarrier, 0, 5),
		BPF_STMT(BPF_LD | BPF_W | BPF_ABS, offsetof(struct seccomp_data, args[0])),
		BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, MEMBARRIER_CMD_PRIVATE_EXPEDITED, 2, 0),
		BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, MEMBARRIER_CMD_REGISTER_PRIVATE_EXPEDITED, 1, 0),
		BPF_STMT(BPF_RET | BPF_K, private_only ? SECCOMP_RET_ALLOW : SECCOMP_RET_ERRNO | EPERM),
		BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_ERRNO | EPERM),
		BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_ALLOW),
	};
	struct sock_fprog prog = { sizeof(code) / sizeof(code[0]), code };

	return prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) == 0 &&
	       prctl(PR_SET_SECCOMP, SECCOMP_MODE_FILTER, &prog) == 0;
}

enum refusal { REFUSE_NONE, REFUSE_PRIVATE, REFUSE_ALL };

/* In a forked child: another thread takes @idr's bias (this thread's)
 * away, with membarrier() refused as @how says.  0 if it was revoked and
 * the lock works. */
static int revoke_in_child(struct idr *idr, enum refusal how)
{
	pthread_t t;

	if (how != REFUSE_NONE && !refuse_membarrier(how == REFUSE_PRIVATE))
		return 3;
	if (pthread_create(&t, NULL, lock_and_leave, idr))
		return 2;
	pthread_join(t, NULL);
	idr_lock(idr);
	idr_unlock(idr);
	return idr->idr_lock_revoke == 1 && idr->idr_lock_word == 0 ? 0 : 1;
}

/* Bias @idr to this thread, fork, and revoke in the child; its status. */
static int fork_and_revoke(struct idr *idr, enum refusal how)
{
	int status = -1;

	idr_lock(idr); /* biased to this thread, in the parent and the child */
	idr_unlock(idr);
	pid_t pid = fork();
	if (pid == 0)
		tu_child_exit(revoke_in_child(idr, how));
	if (pid < 0 || waitpid(pid, &status, 0) != pid)
		return -1;
	return status;
}

/* The bias is revoked in a forked child too: Linux carries the
 * membarrier() registration over to the child. */
TEST(idr_lock_revokes_in_a_forked_child)
{
	DEFINE_IDR(idr);

	if (tu_fork_cannot_thread())
		return;
	int status = fork_and_revoke(&idr, REFUSE_NONE);
	CHECK(WIFEXITED(status));
	CHECK_EQ(WEXITSTATUS(status), 0);
}

/* Without the private expedited barrier (refused, say, by a seccomp
 * filter), a revoker falls back on MEMBARRIER_CMD_GLOBAL. */
TEST(idr_lock_revokes_through_the_global_barrier)
{
	DEFINE_IDR(idr);
	long cmds = syscall(__NR_membarrier, MEMBARRIER_CMD_QUERY, 0, 0);

	if (tu_fork_cannot_thread() || cmds < 0 || !(cmds & MEMBARRIER_CMD_GLOBAL))
		return;
	int status = fork_and_revoke(&idr, REFUSE_PRIVATE);
	CHECK(WIFEXITED(status));
	CHECK_EQ(WEXITSTATUS(status), 0);
}

/* With no barrier at all after the bias was given, a revoker can neither
 * take the lock safely nor wait: it reports and aborts (idr.h). */
TEST(idr_lock_aborts_when_membarrier_stops_working)
{
	DEFINE_IDR(idr);

	if (tu_fork_cannot_thread())
		return;
	int status = fork_and_revoke(&idr, REFUSE_ALL);
	CHECK(WIFSIGNALED(status));
	CHECK_EQ(WTERMSIG(status), SIGABRT);
}
