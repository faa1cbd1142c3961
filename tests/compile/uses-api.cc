// The public header used from C++: every macro and inline function of
// include/idr.h expands, compiles warning-free and behaves as in C.  Built
// and run by tests/compile-cxx.sh against libidr.a.
#include <idr.h>

#include <atomic>
#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <vector>

static int passed, failed;

#define EXPECT(name, cond)                                                   \
	do {                                                                 \
		if (cond) {                                                  \
			std::printf("PASS compile-cxx/%s\n", name);          \
			passed++;                                            \
		} else {                                                     \
			std::printf("FAIL compile-cxx/%s: %s\n", name, #cond); \
			failed++;                                            \
		}                                                            \
	} while (0)

static DEFINE_IDR(from_zero);
static struct idr from_one = IDR_INIT_BASE(from_one, 1);
static struct idr no_rcu = IDR_INIT_FLAGS(no_rcu, 0, IDR_F_NO_RCU);
static struct idr handles = IDR_INIT_FLAGS(handles, 1, IDR_F_HANDLES);
static DEFINE_IDA(minors);
static struct ida minors2 = IDA_INIT(minors2);

static int obj[4];

/* Blocks the library holds, through a C++ allocator hook. */
static std::atomic<long> blocks_held;

extern "C" void *counting_alloc(size_t size, void *ctx)
{
	(void)ctx;
	void *p = std::malloc(size);
	if (p)
		blocks_held++;
	return p;
}

extern "C" void counting_free(void *ptr, size_t size, void *ctx)
{
	(void)size;
	(void)ctx;
	blocks_held--;
	std::free(ptr);
}

static const struct idr_allocator counting = { counting_alloc, counting_free, nullptr };

static void static_initializers_hand_out_their_first_ids()
{
	EXPECT("idr_init_macros_start_at_their_base",
	       idr_alloc(&from_zero, &obj[0], 0, 0, IDR_GFP_KERNEL) == 0 &&
		       idr_alloc(&from_one, &obj[0], 0, 0, IDR_GFP_KERNEL) == 1 &&
		       idr_alloc(&no_rcu, &obj[0], 0, 0, IDR_GFP_KERNEL) == 0);
	EXPECT("ida_init_macros_start_at_0",
	       ida_alloc(&minors, IDR_GFP_KERNEL) == 0 &&
		       ida_alloc_range(&minors2, 5, 9, IDR_GFP_KERNEL) == 5 &&
		       ida_exists(&minors2, 5) && !ida_exists(&minors2, 6));
}

static void the_seed_pattern_allocates_and_readers_find()
{
	idr_preload(IDR_GFP_KERNEL);
	idr_lock(&from_zero);
	int id = idr_alloc(&from_zero, &obj[1], 0, 0, IDR_GFP_NOWAIT);
	idr_unlock(&from_zero);
	idr_preload_end();

	idr_rcu_read_lock();
	void *p = idr_find(&from_zero, static_cast<unsigned long>(id));
	idr_rcu_read_unlock();
	EXPECT("seed_pattern_gives_the_next_id_and_it_is_found", id == 1 && p == &obj[1]);
}

static void idr_for_each_entry_walks_in_id_order()
{
	idr_alloc(&from_zero, &obj[2], 5, 6, IDR_GFP_KERNEL);
	std::vector<int> ids;
	void *entry;
	int id;

	idr_for_each_entry(&from_zero, entry, id)
		ids.push_back(id);
	EXPECT("idr_for_each_entry_visits_0_1_5", ids == std::vector<int>({ 0, 1, 5 }));

	id = 1;
	ids.clear();
	idr_for_each_entry_continue(&from_zero, entry, id)
		ids.push_back(id);
	EXPECT("idr_for_each_entry_continue_from_1_visits_1_5", ids == std::vector<int>({ 1, 5 }));

	uint32_t high = UINT32_MAX;
	idr_alloc_u32(&from_zero, &obj[3], &high, UINT32_MAX, IDR_GFP_KERNEL);
	std::vector<unsigned long> uids;
	unsigned long uid, tmp;
	idr_for_each_entry_ul(&from_zero, entry, tmp, uid)
		uids.push_back(uid);
	EXPECT("idr_for_each_entry_ul_reaches_uint32_max",
	       uids == std::vector<unsigned long>({ 0, 1, 5, UINT32_MAX }));
	uid = 2;
	uids.clear();
	idr_for_each_entry_continue_ul(&from_zero, entry, tmp, uid)
		uids.push_back(uid);
	EXPECT("idr_for_each_entry_continue_ul_from_2_visits_5_and_uint32_max",
	       uids == std::vector<unsigned long>({ 5, UINT32_MAX }));
	idr_remove(&from_zero, UINT32_MAX);
}

extern "C" int count_entry(int id, void *p, void *data)
{
	(void)id;
	(void)p;
	++*static_cast<int *>(data);
	return 0;
}

static void idr_for_each_takes_a_c_callback()
{
	int n = 0;

	EXPECT("idr_for_each_counts_3", idr_for_each(&from_zero, count_entry, &n) == 0 && n == 3);
}

static void error_pointers_decode()
{
	void *old = idr_replace(&from_zero, &obj[3], 4);

	EXPECT("idr_replace_of_a_free_id_is_an_enoent_pointer",
	       idr_is_err(old) && idr_ptr_err(old) == -ENOENT);
	EXPECT("idr_err_ptr_round_trips",
	       idr_ptr_err(IDR_ERR_PTR(-ENOSPC)) == -ENOSPC && !idr_is_err(&obj[0]));
}

static void handles_carry_their_id_and_generation()
{
	idr_handle_t h;
	int id = idr_alloc_handle(&handles, &obj[0], 1, 0, IDR_GFP_KERNEL, &h);

	EXPECT("a_handle_names_its_id_and_finds_its_object",
	       id == 1 && idr_handle_id(h) == 1 && idr_find_handle(&handles, h) == &obj[0]);
	EXPECT("idr_handle_make_round_trips",
	       idr_handle_make(idr_handle_id(h), idr_handle_gen(h)) == h);
	EXPECT("a_removed_handle_goes_stale",
	       idr_remove_handle(&handles, h) == &obj[0] && idr_find_handle(&handles, h) == nullptr);
}

struct conn {
	int id;
	struct idr_rcu_head rcu;
};

static std::atomic<int> conns_freed;

extern "C" void free_conn(struct idr_rcu_head *head)
{
	delete reinterpret_cast<conn *>(reinterpret_cast<char *>(head) - offsetof(conn, rcu));
	conns_freed++;
}

static void removed_objects_are_freed_after_a_grace_period()
{
	conn *c = new conn();
	int cid = c->id = idr_alloc(&from_zero, c, 10, 11, IDR_GFP_KERNEL);
	conn *d = new conn();
	int did = d->id = idr_alloc(&from_zero, d, 11, 12, IDR_GFP_KERNEL);

	conn *gone = static_cast<conn *>(idr_remove(&from_zero, 10));
	idr_call_rcu(&gone->rcu, free_conn);
	gone = static_cast<conn *>(idr_remove(&from_zero, 11));
	idr_synchronize_rcu();
	delete gone;
	idr_rcu_barrier();
	EXPECT("idr_call_rcu_and_idr_synchronize_rcu_free_removed_objects",
	       cid == 10 && did == 11 && conns_freed == 1 && idr_find(&from_zero, 10) == nullptr);
}

#ifndef IDR_NO_DEPRECATED
static void the_old_api_still_links()
{
	int id = -1;

	EXPECT("idr_pre_get_then_idr_get_new_above_gives_7",
	       idr_pre_get(&no_rcu, IDR_GFP_KERNEL) == 1 &&
		       idr_get_new_above(&no_rcu, &obj[1], 7, &id) == 0 && id == 7 &&
		       idr_find(&no_rcu, 7) == &obj[1]);
}
#endif

static void everything_is_released()
{
	idr_destroy(&from_zero);
	idr_destroy(&from_one);
	idr_destroy(&no_rcu);
	idr_destroy(&handles);
	ida_destroy(&minors);
	ida_destroy(&minors2);
	idr_preload_drain();
	idr_rcu_barrier();
	EXPECT("destroyed_idrs_and_idas_hold_no_block",
	       blocks_held == 0 && idr_is_empty(&from_zero) && ida_is_empty(&minors));
	idr_set_allocator(nullptr);
}

int main()
{
	idr_set_allocator(&counting);
	static_initializers_hand_out_their_first_ids();
	the_seed_pattern_allocates_and_readers_find();
	idr_for_each_entry_walks_in_id_order();
	idr_for_each_takes_a_c_callback();
	error_pointers_decode();
	handles_carry_their_id_and_generation();
	removed_objects_are_freed_after_a_grace_period();
#ifndef IDR_NO_DEPRECATED
	the_old_api_still_links();
#endif
	everything_is_released();
	std::printf("compile-cxx: %d passed, %d failed\n", passed, failed);
	return failed != 0;
}
