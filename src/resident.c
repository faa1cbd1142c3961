/* SPDX-License-Identifier: MIT */
/*
 * libidr stays loaded once loaded, whichever object carries it.
 *
 * Code of libidr runs after its caller is done with it: each thread that
 * preloaded frees its stash from a key destructor at its exit, and
 * liburcu's call_rcu worker runs libidr's batch callbacks a grace period
 * after the last idr_remove().  Were the object holding that code unmapped
 * in between (a plugin dlclose()d while its threads go on), either would
 * jump into nothing.  libidr.so is linked -z nodelete for this; a copy
 * linked from libidr.a into a shared object (a plugin) makes that object
 * undeletable itself, at load, by opening it again with RTLD_NODELETE,
 * which glibc honours for an object already loaded (RTLD_NOLOAD).  The
 * object's own dependencies, liburcu-bp.so among them, stay with it.
 *
 * A program's main executable is never unloaded, and its link map has no
 * name: nothing to do.  A static program has none of this, and the calls
 * are weak references, so libidr.a adds nothing to its link.  dlopen() is
 * looked up, not called by name: a reference to it makes every static link
 * of libidr.a print glibc's warning about dlopen() in static programs, for
 * a call that a static program never makes.
 */
#include <dlfcn.h>
#include <link.h>
#include <stddef.h>

#pragma weak dladdr1
#pragma weak dlsym

typedef void *open_fn(const char *file, int mode);

__attribute__((constructor)) static void stay_resident(void)
{
	Dl_info info;
	struct link_map *self = NULL;

	if (!dladdr1 || !dlsym ||
	    !dladdr1((void *)stay_resident, &info, (void **)&self, RTLD_DL_LINKMAP) ||
	    !self || !self->l_name || !self->l_name[0])
		return;

	open_fn *reopen;
	*(void **)&reopen = dlsym(RTLD_DEFAULT, "dlopen");
	if (reopen)
		(void)reopen(self->l_name, RTLD_LAZY | RTLD_NOLOAD | RTLD_NODELETE);
}
