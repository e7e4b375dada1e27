/*
 * PMIx bootstrap probe, run as the tasks of a step (srun --mpi=pmix):
 * every task publishes "node N host H" and checks it gets every node's
 * record. With --late RANK SECONDS, that rank joins late and the others'
 * fence times out after --timeout seconds: they must report the timeout
 * (exit 3), not hang.
 */
#include "config.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "bootstrap.h"
#include "common/log.h"

int main(int argc, char **argv)
{
	struct bootstrap bootstrap;
	int late_rank = -1, late_seconds = 0, timeout = 10;
	char record[512], host[256] = "";
	void **records;
	size_t *lengths;
	time_t start;
	nopfs_status status;

	for (int i = 1; i < argc; i++) {
		if (strcmp(argv[i], "--late") == 0 && i + 2 < argc) {
			late_rank = atoi(argv[++i]);
			late_seconds = atoi(argv[++i]);
		} else if (strcmp(argv[i], "--timeout") == 0 && i + 1 < argc) {
			timeout = atoi(argv[++i]);
		} else {
			fprintf(stderr, "usage: %s [--timeout S] [--late RANK SECONDS]\n", argv[0]);
			return 2;
		}
	}
	if (!bootstrap_available()) {
		fprintf(stderr, "pmix_probe: no PMIx server (run it with srun --mpi=pmix)\n");
		return 2;
	}
	if (bootstrap_init(&bootstrap) != NOPFS_OK)
		return 1;
	if ((int)bootstrap.node == late_rank)
		sleep((unsigned int)late_seconds);
	gethostname(host, sizeof(host) - 1);
	snprintf(record, sizeof(record), "node %u host %s", bootstrap.node, host);
	start = time(NULL);
	status = bootstrap_exchange(&bootstrap, record, strlen(record) + 1, timeout, &records,
	                            &lengths);
	if (status == NOPFS_ERR_TIMEOUT || status == NOPFS_ERR_IO) {
		printf("node %u: exchange failed after %ld s: %s\n", bootstrap.node,
		       (long)(time(NULL) - start), nopfs_status_string(status));
		bootstrap_fini(&bootstrap);
		return 3;
	}
	if (status != NOPFS_OK) {
		bootstrap_fini(&bootstrap);
		return 1;
	}
	printf("node %u of %u (%s):", bootstrap.node, bootstrap.nodes, host);
	for (uint32_t n = 0; n < bootstrap.nodes; n++) {
		unsigned int got;

		if (lengths[n] == 0 || ((char *)records[n])[lengths[n] - 1] != '\0' ||
		    sscanf(records[n], "node %u", &got) != 1 || got != n) {
			printf(" bad record from node %u\n", n);
			return 1;
		}
		printf(" [%s]", (char *)records[n]);
		free(records[n]);
	}
	printf("\n");
	free(records);
	free(lengths);
	bootstrap_fini(&bootstrap);
	return 0;
}
