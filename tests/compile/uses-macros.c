/* Every public macro of include/idr.h expanded in C, for
 * tests/compile-strict.sh: macros are checked only where they are used,
 * so including the header is not enough.  Compiled, never run. */
#include "idr.h"

static DEFINE_IDR(plain);
static struct idr from_one = IDR_INIT_BASE(from_one, 1);
static struct idr handles = IDR_INIT_FLAGS(handles, 1, IDR_F_HANDLES | IDR_F_NO_RCU);
static DEFINE_IDA(minors);
static struct ida majors = IDA_INIT(majors);

#if IDR_VERSION_MAJOR < 0 || IDR_VERSION_MINOR < 0 || IDR_PRELOAD_NODES < 1
#error "version or preload depth out of range"
#endif

int uses_macros(void);
int uses_macros(void)
{
	void *p;
	int id = 0, n = 0;
	unsigned long uid = 0, tmp;

	idr_preload(IDR_GFP_KERNEL);
	n += idr_alloc(&plain, &n, 0, 0, IDR_GFP_NOWAIT) + idr_alloc(&plain, &n, 0, 0, IDR_GFP_ATOMIC);
	idr_preload_end();
	idr_for_each_entry(&plain, p, id)
		n++;
	idr_for_each_entry_continue(&from_one, p, id)
		n++;
	idr_for_each_entry_ul(&handles, p, tmp, uid)
		n++;
	idr_for_each_entry_continue_ul(&handles, p, tmp, uid)
		n++;
	if (idr_replace(&plain, &n, 0) == IDR_ERR_PTR(-ENOENT) ||
	    idr_ptr_err(IDR_ERR_PTR(-IDR_MAX_ERRNO)) == -IDR_MAX_ERRNO)
		n++;
	return n + ida_alloc(&minors, IDR_GFP_KERNEL) + ida_alloc(&majors, IDR_GFP_KERNEL);
}
