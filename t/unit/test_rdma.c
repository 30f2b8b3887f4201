/* usage: test_rdma
 * The RDMA protocol suite (rdma_suite.h) over the emulated transport,
 * libfabric's tcp provider (storaged/rdma/rdma_fabric.c), on loopback.
 * Exit 0 when every check passes, 1 otherwise (each failure printed). */
#include "rdma_suite.h"

int main(void)
{
	return rdma_suite_run(&rdma_fabric, "127.0.0.1");
}
