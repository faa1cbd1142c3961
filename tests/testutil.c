/* SPDX-License-Identifier: MIT */
#define IDR_NO_INLINE /* the tu_library_*() below call the library's functions */
#include "testutil.h"

#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

struct test {
	const char *name;
	tu_test_fn fn;
};

static struct test tests[256];
static int ntests;
static bool current_failed;

void tu_register(const char *name, tu_test_fn fn)
{
	if (ntests == (int)(sizeof(tests) / sizeof(tests[0])))
		abort();
	tests[ntests].name = name;
	tests[ntests++].fn = fn;
}

void tu_fail(const char *file, int line, const char *what)
{
	if (!current_failed)
		fprintf(stderr, "    %s:%d: check failed: %s\n", file, line, what);
	current_failed = true;
}

bool tu_failed(void)
{
	return current_failed;
}

/* Is environment variable @name set to 1 (tests/run-all.sh, .ci/run)? */
static bool env_on(const char *name)
{
	const char *v = getenv(name);

	return v && *v == '1';
}

bool tu_tsan(void)
{
	return env_on("IDR_TEST_TSAN");
}

bool tu_valgrind(void)
{
	return env_on("IDR_TEST_VALGRIND");
}

bool tu_fork_cannot_thread(void)
{
	return tu_tsan() || env_on("IDR_TEST_EMULATED");
}

bool tu_asan(void)
{
#if defined(__SANITIZE_ADDRESS__)
	return true;
#elif defined(__has_feature)
#if __has_feature(address_sanitizer)
	return true;
#endif
#endif
	return false;
}

long tu_scale(long n)
{
	return env_on("IDR_TEST_QUICK") ? (n / 50 > 1 ? n / 50 : 1) : n;
}

void *tu_tag_ptr(unsigned tag, unsigned long id)
{
	return (void *)(uintptr_t)((id << 8) | (tag << 1) | 1);
}

unsigned long tu_tag_id(const void *p)
{
	return (unsigned long)((uintptr_t)p >> 8);
}

uint64_t tu_rand(uint64_t *s)
{
	*s ^= *s >> 12;
	*s ^= *s << 25;
	*s ^= *s >> 27;
	return *s * 2685821657736338717ULL;
}

/* ---------------------------------------------------------------------- */

static long calls, live, fail_at, fail_after;
static bool (*fail_size)(size_t size);
static _Thread_local bool fail_this_thread;
static _Thread_local long thread_calls;

static void *count_alloc(size_t size, void *ctx)
{
	(void)ctx;
	long n = __atomic_add_fetch(&calls, 1, __ATOMIC_RELAXED);

	thread_calls++;
	long at = __atomic_load_n(&fail_at, __ATOMIC_RELAXED);
	long after = __atomic_load_n(&fail_after, __ATOMIC_RELAXED);

	bool (*refuse)(size_t) = __atomic_load_n(&fail_size, __ATOMIC_RELAXED);

	if (fail_this_thread || n == at || (after && n >= after) ||
	    (refuse && refuse(size)))
		return NULL;
	void *p = malloc(size);
	if (p)
		__atomic_add_fetch(&live, 1, __ATOMIC_RELAXED);
	return p;
}

/* Blocks freed while tu_hold_freed(true), zeroed and kept. */
static pthread_mutex_t held_lock = PTHREAD_MUTEX_INITIALIZER;
static void **held;
static size_t nheld, held_cap;
static bool holding;

/* Keep @p, zeroed, if blocks are being held; false if it is not kept. */
static bool hold(void *p, size_t size)
{
	bool kept = false;

	if (!__atomic_load_n(&holding, __ATOMIC_RELAXED))
		return false;
	pthread_mutex_lock(&held_lock);
	if (holding && nheld == held_cap) {
		size_t cap = held_cap ? 2 * held_cap : 64;
		void **more = realloc(held, cap * sizeof(*held));
		if (more) {
			held = more;
			held_cap = cap;
		}
	}
	if (holding && nheld < held_cap) {
		memset(p, 0, size);
		held[nheld++] = p;
		kept = true;
	}
	pthread_mutex_unlock(&held_lock);
	return kept;
}

static void count_free(void *p, size_t size, void *ctx)
{
	(void)ctx;
	__atomic_sub_fetch(&live, 1, __ATOMIC_RELAXED);
	if (!hold(p, size))
		free(p);
}

void tu_hold_freed(bool on)
{
	pthread_mutex_lock(&held_lock);
	__atomic_store_n(&holding, on, __ATOMIC_RELAXED);
	if (!on) {
		while (nheld)
			free(held[--nheld]);
		free(held);
		held = NULL;
		held_cap = 0;
	}
	pthread_mutex_unlock(&held_lock);
}

long tu_live(void)
{
	return __atomic_load_n(&live, __ATOMIC_RELAXED);
}

long tu_calls(void)
{
	return __atomic_load_n(&calls, __ATOMIC_RELAXED);
}

long tu_thread_calls(void)
{
	return thread_calls;
}

void tu_fail_call(long k)
{
	__atomic_store_n(&fail_at, k ? tu_calls() + k : 0, __ATOMIC_RELAXED);
}

void tu_fail_from(long k)
{
	__atomic_store_n(&fail_after, k ? tu_calls() + k : 0, __ATOMIC_RELAXED);
}

void tu_fail_if(bool (*refuse)(size_t size))
{
	__atomic_store_n(&fail_size, refuse, __ATOMIC_RELAXED);
}

void tu_fail_thread(bool on)
{
	fail_this_thread = on;
}

long tu_live_after_grace(void)
{
	if (!tu_tsan())
		idr_rcu_barrier();
	return tu_live();
}

long tu_settled_live(void)
{
	idr_preload_drain();
	return tu_live_after_grace();
}

/* ---------------------------------------------------------------------- */

static int diag_count;
static char diag_last[512];

static void capture_diag(const char *func, const char *msg, void *ctx)
{
	(void)ctx;
	__atomic_add_fetch(&diag_count, 1, __ATOMIC_RELAXED);
	snprintf(diag_last, sizeof(diag_last), "%s: %s", func, msg);
}

int tu_diag_count(void)
{
	return __atomic_load_n(&diag_count, __ATOMIC_RELAXED);
}

const char *tu_diag_last(void)
{
	return diag_last;
}

void tu_diag_reset(void)
{
	diag_count = 0;
	diag_last[0] = 0;
}

void tu_restore_hooks(void)
{
	static const struct idr_allocator counting = { count_alloc, count_free,
						       NULL };

	idr_set_allocator(&counting);
	idr_set_diagnostic(capture_diag, NULL);
}

/* Under IDR_TEST_TAGGED_HEAP=1 (arm64's memory tagging, scripts/
 * cross-check.sh) malloc()'s pointers must carry a tag in their top byte:
 * else the run would prove nothing about tagged pointers.  A block may
 * draw tag 0, so eight are looked at. */
static bool heap_is_tagged(void)
{
	void *p[8];
	uint64_t tags = 0;

	for (int i = 0; i < 8; i++) {
		p[i] = malloc(32);
		tags |= (uint64_t)(uintptr_t)p[i] >> 56;
	}
	for (int i = 0; i < 8; i++)
		free(p[i]);
	return tags != 0;
}

int main(int argc, char **argv)
{
	const char *prog = strrchr(argv[0], '/') ? strrchr(argv[0], '/') + 1
						 : argv[0];
	int passed = 0, failed = 0;

	if (env_on("IDR_TEST_TAGGED_HEAP")) {
		bool tagged = heap_is_tagged();
		printf("%s %s/heap_pointers_carry_tags\n", tagged ? "PASS" : "FAIL", prog);
		if (tagged)
			passed++;
		else
			failed++;
	}
	tu_restore_hooks();
	for (int i = 0; i < ntests; i++) {
		if (argc > 1 && strcmp(argv[1], tests[i].name))
			continue;
		current_failed = false;
		tu_fail_call(0);
		tu_fail_from(0);
		tu_diag_reset();
		long before = tu_settled_live();
		tests[i].fn();
		tu_hold_freed(false);
		tu_fail_call(0);
		tu_fail_from(0);
		tu_fail_if(NULL);
		long leaked = tu_settled_live() - before;
		if (!current_failed && leaked) {
			fprintf(stderr, "    %ld block(s) still allocated after the test\n",
				leaked);
			current_failed = true;
		}
		printf("%s %s/%s\n", current_failed ? "FAIL" : "PASS", prog,
		       tests[i].name);
		if (current_failed)
			failed++;
		else
			passed++;
	}
	printf("%s: %d passed, %d failed\n", prog, passed, failed);
	return failed ? 1 : 0;
}

int tu_seed_alloc_handle(struct idr *idr, void *ptr, int start,
			 idr_handle_t *h, long *made)
{
	idr_preload(IDR_GFP_KERNEL);
	long before = tu_calls();
	tu_fail_thread(true);
	idr_lock(idr);
	int id = idr_alloc_handle(idr, ptr, start, 0, IDR_GFP_NOWAIT, h);
	idr_unlock(idr);
	tu_fail_thread(false);
	*made = tu_calls() - before;
	idr_preload_end();
	return id;
}

#ifdef TU_COVERAGE /* make coverage: libgcov is linked in */
void __gcov_dump(void);
#endif

_Noreturn void tu_child_exit(int status)
{
#ifdef TU_COVERAGE
	__gcov_dump();
#endif
	_exit(status);
}

struct sleeper {
	struct idr *idr;
	int got; /* set once the sleeper holds the lock */
};

static void *take_once(void *arg)
{
	struct sleeper *s = arg;

	idr_lock(s->idr);
	__atomic_store_n(&s->got, 1, __ATOMIC_RELEASE);
	idr_unlock(s->idr);
	return NULL;
}

void tu_hold_against_waiter(struct idr *idr, int *watch, int asleep)
{
	struct sleeper s = { idr, 0 };
	pthread_t t;

	idr_lock(idr);
	CHECK_EQ(pthread_create(&t, NULL, take_once, &s), 0);
	struct timespec pause = { 0, 50 * 1000 * 1000 };
	nanosleep(&pause, NULL);
	CHECK_EQ(__atomic_load_n(&s.got, __ATOMIC_ACQUIRE), 0);
	CHECK_EQ(__atomic_load_n(watch, __ATOMIC_RELAXED), asleep);
	idr_unlock(idr);
	pthread_join(t, NULL);
	CHECK_EQ(s.got, 1);
	CHECK_EQ(idr->idr_lock_word, 0);
	CHECK_EQ(idr->idr_lock_busy, 0);
}

void *tu_library_find(const struct idr *idr, unsigned long id)
{
	return idr_find(idr, id);
}

void tu_library_preload(idr_gfp_t gfp)
{
	idr_preload(gfp);
}

void tu_library_preload_end(void)
{
	idr_preload_end();
}

void tu_library_lock(struct idr *idr)
{
	idr_lock(idr);
}

void tu_library_unlock(struct idr *idr)
{
	idr_unlock(idr);
}
