/*
 * fake_agent: the fake node agent as a program, for the interposer's tests.
 *
 *   fake_agent --socket PATH --copies DIR [--mode MODE] [--samples N]
 *              [--exit-after N]
 *
 * Logs one line per request on stdout ("HELLO pid rank", "OPEN path", ...);
 * stops on SIGTERM or SIGINT, or for good after --exit-after OPEN/GET
 * requests (as if it died), removing its socket.
 */
#include "config.h"

#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "fake_agent.h"

static struct fake_agent agent;

static void on_signal(int signal_number)
{
	fake_agent_wake(&agent);
}

static int usage(void)
{
	fprintf(stderr, "usage: fake_agent --socket PATH --copies DIR [--mode MODE] "
	                "[--samples N] [--exit-after N] [--ready-pid PID] [--listen-as UID]\n");
	return 2;
}

int main(int argc, char **argv)
{
	struct sigaction action = { .sa_handler = on_signal };

	agent.log = stdout;
	for (int i = 1; i + 1 < argc; i += 2) {
		const char *value = argv[i + 1];

		if (!strcmp(argv[i], "--socket"))
			snprintf(agent.socket_path, sizeof(agent.socket_path), "%s", value);
		else if (!strcmp(argv[i], "--copies"))
			snprintf(agent.copies, sizeof(agent.copies), "%s", value);
		else if (!strcmp(argv[i], "--mode") && fake_agent_mode_parse(value) >= 0)
			agent.mode = fake_agent_mode_parse(value);
		else if (!strcmp(argv[i], "--samples"))
			agent.samples = strtoull(value, NULL, 10);
		else if (!strcmp(argv[i], "--listen-as"))
			agent.listen_as = (uid_t)atoi(value);
		else if (!strcmp(argv[i], "--ready-pid"))
			agent.ready_pid = atoi(value);
		else if (!strcmp(argv[i], "--exit-after"))
			agent.exit_after = (unsigned)strtoul(value, NULL, 10);
		else
			return usage();
	}
	if (argc % 2 == 0 || !agent.socket_path[0] || !agent.copies[0])
		return usage();
	if (fake_agent_listen(&agent) != 0) {
		perror(agent.socket_path);
		return 1;
	}
	if (sigaction(SIGTERM, &action, NULL) != 0 || sigaction(SIGINT, &action, NULL) != 0) {
		perror("sigaction");
		return 1;
	}
	printf("LISTENING %s\n", agent.socket_path);
	fflush(stdout);
	fake_agent_run(&agent);
	printf("STOPPED hellos=%u opens=%u gets=%u\n", agent.hellos, agent.opens, agent.gets);
	return 0;
}
