/* Must warn (deprecated) normally, and fail to compile with IDR_NO_DEPRECATED. */
#include <idr.h>

int old_style(struct idr *idr, void *ptr);
int old_style(struct idr *idr, void *ptr)
{
	int id;

	if (!idr_pre_get(idr, IDR_GFP_KERNEL))
		return -ENOMEM;
	return idr_get_new(idr, ptr, &id) ? -1 : id;
}

int old_ida(struct ida *ida);
int old_ida(struct ida *ida)
{
	int id = ida_simple_get(ida, 0, 0, IDR_GFP_KERNEL);

	if (id >= 0)
		ida_simple_remove(ida, (unsigned)id);
	return id;
}
