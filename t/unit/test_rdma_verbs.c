/* usage: [GOBLIN_RDMA_ADDR=addr] test_rdma_verbs
 * The RDMA protocol suite (rdma_suite.h) over verbs (storaged/
 * rdma_verbs.c), the server listening on GOBLIN_RDMA_ADDR, an address of
 * an RDMA device (a RoCE or IPoIB interface's).  Skips (77, with the
 * reason) without a device or without the address.
 * Exit 0 when every check passes, 1 otherwise (each failure printed). */
#include <stdlib.h>
#include <infiniband/verbs.h>

#include "rdma_suite.h"

int main(void)
{
	struct ibv_device **list;
	const char *addr;
	int n = 0;

	list = ibv_get_device_list(&n);
	if (list)
		ibv_free_device_list(list);
	if (!list || n == 0) {
		printf("skip: no RDMA device (ibv_get_device_list found none)\n");
		return 77;
	}
	addr = getenv("GOBLIN_RDMA_ADDR");
	if (!addr || !*addr) {
		printf("skip: %d RDMA device(s), but GOBLIN_RDMA_ADDR "
		       "(an address on one) is not set\n", n);
		return 77;
	}
	return rdma_suite_run(&rdma_verbs, addr);
}
