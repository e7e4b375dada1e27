/* The wire protocol over sockets: descriptors, short reads, timeouts, closed peers. */
#include <check.h>
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <signal.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/time.h>
#include <time.h>
#include <unistd.h>

#include "wire_fixture.h"
#include "common/clock.h"

static int open_fd_count(void)
{
	DIR *dir = opendir("/proc/self/fd");
	int count = 0;

	ck_assert_ptr_nonnull(dir);
	while (readdir(dir))
		count++;
	closedir(dir);
	return count;
}

static void make_pair(int pair[2])
{
	ck_assert_int_eq(socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, pair), 0);
}

START_TEST(descriptor_passing)
{
	struct nopfs_wire_message m = { .type = NOPFS_WIRE_SAMPLE, .request_id = 9 };
	struct nopfs_wire_message out;
	char path[] = "/tmp/nopfs-wire-XXXXXX";
	const char *why;
	char content[16] = { 0 };
	int pair[2];
	int file;
	int fd = -7;

	file = mkstemp(path);
	ck_assert_int_ge(file, 0);
	unlink(path);
	ck_assert_int_eq(write(file, "node-local copy", 15), 15);
	make_pair(pair);
	m.u.sample.index = 3;
	m.u.sample.size = 15;
	ck_assert_int_eq(nopfs_wire_send(pair[0], &m, file), NOPFS_OK);
	ck_assert_int_eq(nopfs_wire_receive(pair[1], received, &out, &fd, 1000, &why), NOPFS_OK);
	ck_assert_int_eq(out.type, NOPFS_WIRE_SAMPLE);
	ck_assert_uint_eq(out.u.sample.size, 15);
	ck_assert_int_ge(fd, 0);
	ck_assert_int_ne(fd, file);
	ck_assert_int_eq(fcntl(fd, F_GETFD) & FD_CLOEXEC, FD_CLOEXEC);
	ck_assert_int_eq(pread(fd, content, sizeof(content), 0), 15);
	ck_assert_str_eq(content, "node-local copy");
	close(fd);

	/* No descriptor: -1. */
	fd = -7;
	ck_assert_int_eq(nopfs_wire_send(pair[0], &m, -1), NOPFS_OK);
	ck_assert_int_eq(nopfs_wire_receive(pair[1], received, &out, &fd, 1000, &why), NOPFS_OK);
	ck_assert_int_eq(fd, -1);

	/* A descriptor nobody asked for (fd NULL) is closed. */
	{
		int before = open_fd_count();

		ck_assert_int_eq(nopfs_wire_send(pair[0], &m, file), NOPFS_OK);
		ck_assert_int_eq(nopfs_wire_receive(pair[1], received, &out, NULL, 1000, &why),
		                 NOPFS_OK);
		ck_assert_int_eq(open_fd_count(), before);
	}
	close(file);
	close(pair[0]);
	close(pair[1]);
}
END_TEST

/* Send raw @data with @count copies of @fd attached. */
static void send_raw(int socket, const void *data, size_t length, int fd, int count)
{
	char space[CMSG_SPACE(8 * sizeof(int))] = { 0 };
	struct iovec iov = { .iov_base = (void *)data, .iov_len = length };
	struct msghdr msg = { .msg_iov = &iov, .msg_iovlen = 1 };

	if (count > 0) {
		struct cmsghdr *cmsg;

		msg.msg_control = space;
		msg.msg_controllen = CMSG_SPACE((size_t)count * sizeof(int));
		cmsg = CMSG_FIRSTHDR(&msg);
		cmsg->cmsg_level = SOL_SOCKET;
		cmsg->cmsg_type = SCM_RIGHTS;
		cmsg->cmsg_len = CMSG_LEN((size_t)count * sizeof(int));
		for (int i = 0; i < count; i++)
			memcpy(CMSG_DATA(cmsg) + i * sizeof(int), &fd, sizeof(int));
	}
	ck_assert_int_eq(sendmsg(socket, &msg, 0), (ssize_t)length);
}

START_TEST(extra_and_rejected_descriptors_are_closed)
{
	struct nopfs_wire_message out;
	const char *why;
	int before = open_fd_count();
	int pair[2];
	int fd = -7;
	size_t length;

	make_pair(pair);
	/* Three descriptors: one kept, two closed. */
	length = valid_message(NOPFS_WIRE_SAMPLE);
	send_raw(pair[0], buffer, length, STDIN_FILENO, 3);
	ck_assert_int_eq(nopfs_wire_receive(pair[1], received, &out, &fd, 1000, &why), NOPFS_OK);
	ck_assert_int_ge(fd, 0);
	close(fd);
	ck_assert_int_eq(open_fd_count(), before + 2);

	/* A malformed message with a descriptor: rejected, descriptor closed. */
	length = valid_message(NOPFS_WIRE_SAMPLE);
	buffer[0] = 'X';
	send_raw(pair[0], buffer, length, STDIN_FILENO, 1);
	fd = -7;
	ck_assert_int_eq(nopfs_wire_receive(pair[1], received, &out, &fd, 1000, &why),
	                 NOPFS_ERR_FORMAT);
	ck_assert_int_eq(fd, -7);
	ck_assert_int_eq(open_fd_count(), before + 2);

	/* A bad payload (unknown source) with a descriptor: the same. (The stream
	 * is out of step after a bad header: a new connection.) */
	close(pair[0]);
	close(pair[1]);
	make_pair(pair);
	length = valid_message(NOPFS_WIRE_SAMPLE);
	put32(16 + 24, 77);
	send_raw(pair[0], buffer, length, STDIN_FILENO, 1);
	ck_assert_int_eq(nopfs_wire_receive(pair[1], received, &out, &fd, 1000, &why),
	                 NOPFS_ERR_FORMAT);
	ck_assert_ptr_nonnull(strstr(why, "source"));
	ck_assert_int_eq(open_fd_count(), before + 2);
	close(pair[0]);
	close(pair[1]);
}
END_TEST

START_TEST(messages_back_to_back)
{
	struct nopfs_wire_message out;
	uint8_t two[64];
	const char *why;
	size_t first;
	size_t second;
	int pair[2];

	make_pair(pair);
	first = valid_message(NOPFS_WIRE_GET);
	memcpy(two, buffer, first);
	second = valid_message(NOPFS_WIRE_HELLO);
	memcpy(two + first, buffer, second);
	send_raw(pair[0], two, first + second, -1, 0);
	ck_assert_int_eq(nopfs_wire_receive(pair[1], received, &out, NULL, 1000, &why), NOPFS_OK);
	ck_assert_int_eq(out.type, NOPFS_WIRE_GET);
	ck_assert_int_eq(nopfs_wire_receive(pair[1], received, &out, NULL, 1000, &why), NOPFS_OK);
	ck_assert_int_eq(out.type, NOPFS_WIRE_HELLO);
	close(pair[0]);
	close(pair[1]);
}
END_TEST

/* A maximal message through a small socket buffer: short reads and writes. */
static void *send_big(void *arg)
{
	static char text[NOPFS_WIRE_MAX_PAYLOAD];
	struct nopfs_wire_message m = { .type = NOPFS_WIRE_STATS_TEXT, .request_id = 1 };

	memset(text, '{', sizeof(text));
	m.u.stats_text.text = text;
	m.u.stats_text.length = sizeof(text);
	return (void *)(intptr_t)nopfs_wire_send(*(int *)arg, &m, -1);
}

START_TEST(large_message_in_pieces)
{
	struct nopfs_wire_message out;
	int size = 4096;
	const char *why;
	pthread_t thread;
	void *result;
	int pair[2];

	make_pair(pair);
	setsockopt(pair[0], SOL_SOCKET, SO_SNDBUF, &size, sizeof(size));
	setsockopt(pair[1], SOL_SOCKET, SO_RCVBUF, &size, sizeof(size));
	ck_assert_int_eq(pthread_create(&thread, NULL, send_big, &pair[0]), 0);
	ck_assert_int_eq(nopfs_wire_receive(pair[1], received, &out, NULL, 5000, &why), NOPFS_OK);
	pthread_join(thread, &result);
	ck_assert_int_eq((int)(intptr_t)result, NOPFS_OK);
	ck_assert_uint_eq(out.u.stats_text.length, NOPFS_WIRE_MAX_PAYLOAD);
	ck_assert_int_eq(out.u.stats_text.text[NOPFS_WIRE_MAX_PAYLOAD - 1], '{');
	close(pair[0]);
	close(pair[1]);
}
END_TEST

static void on_alarm(int signal_number)
{
}

START_TEST(receive_timeout_survives_signals)
{
	struct sigaction action = { .sa_handler = on_alarm }; /* no SA_RESTART: EINTR */
	struct itimerval every_20ms = { { 0, 20000 }, { 0, 20000 } };
	struct itimerval off = { { 0, 0 }, { 0, 0 } };
	struct nopfs_wire_message out;
	const char *why = NULL;
	double start;
	int pair[2];

	make_pair(pair);
	ck_assert_int_eq(sigaction(SIGALRM, &action, NULL), 0);
	setitimer(ITIMER_REAL, &every_20ms, NULL);
	start = nopfs_clock_seconds();
	ck_assert_int_eq(nopfs_wire_receive(pair[1], received, &out, NULL, 200, &why),
	                 NOPFS_ERR_TIMEOUT);
	setitimer(ITIMER_REAL, &off, NULL);
	ck_assert_double_ge(nopfs_clock_seconds() - start, 0.19);
	ck_assert_double_lt(nopfs_clock_seconds() - start, 2.0);
	ck_assert_ptr_nonnull(why);

	/* Half a header, then nothing: the deadline covers the whole message. */
	valid_message(NOPFS_WIRE_GET);
	send_raw(pair[0], buffer, 8, -1, 0);
	start = nopfs_clock_seconds();
	ck_assert_int_eq(nopfs_wire_receive(pair[1], received, &out, NULL, 100, &why),
	                 NOPFS_ERR_TIMEOUT);
	ck_assert_double_ge(nopfs_clock_seconds() - start, 0.09);

	/* Zero: only what is there now. */
	ck_assert_int_eq(nopfs_wire_receive(pair[1], received, &out, NULL, 0, &why),
	                 NOPFS_ERR_TIMEOUT);
	close(pair[0]);
	close(pair[1]);
}
END_TEST

START_TEST(peer_closed)
{
	struct nopfs_wire_message out;
	struct nopfs_wire_message m = { .type = NOPFS_WIRE_STATS };
	const char *why = NULL;
	int pair[2];

	make_pair(pair);
	close(pair[0]);
	errno = 123;
	ck_assert_int_eq(nopfs_wire_receive(pair[1], received, &out, NULL, 1000, &why),
	                 NOPFS_ERR_IO);
	ck_assert_int_eq(errno, 0);
	ck_assert_ptr_nonnull(strstr(why, "closed"));
	/* Sending to a closed peer fails without SIGPIPE. */
	ck_assert_int_eq(nopfs_wire_send(pair[1], &m, -1), NOPFS_ERR_IO);
	ck_assert_int_eq(errno, EPIPE);
	close(pair[1]);

	/* Closed in the middle of a message. */
	make_pair(pair);
	valid_message(NOPFS_WIRE_SAMPLE);
	send_raw(pair[0], buffer, 20, -1, 0);
	close(pair[0]);
	ck_assert_int_eq(nopfs_wire_receive(pair[1], received, &out, NULL, 1000, &why),
	                 NOPFS_ERR_IO);
	ck_assert_ptr_nonnull(strstr(why, "middle"));
	close(pair[1]);
}
END_TEST

START_TEST(send_refuses_unencodable)
{
	struct nopfs_wire_message m = { .type = NOPFS_WIRE_OPEN };
	int pair[2];

	make_pair(pair);
	m.u.open.path = "";
	m.u.open.path_length = 0;
	ck_assert_int_eq(nopfs_wire_send(pair[0], &m, -1), NOPFS_ERR_INVALID);
	close(pair[0]);
	close(pair[1]);
}
END_TEST

int main(void)
{
	Suite *suite = suite_create("wire_io");
	TCase *tc = tcase_create("wire_io");
	SRunner *runner;
	int failed;

	signal(SIGPIPE, SIG_DFL);
	tcase_add_test(tc, descriptor_passing);
	tcase_add_test(tc, extra_and_rejected_descriptors_are_closed);
	tcase_add_test(tc, messages_back_to_back);
	tcase_add_test(tc, large_message_in_pieces);
	tcase_add_test(tc, receive_timeout_survives_signals);
	tcase_add_test(tc, peer_closed);
	tcase_add_test(tc, send_refuses_unencodable);
	suite_add_tcase(suite, tc);
	runner = srunner_create(suite);
	srunner_run_all(runner, CK_NORMAL);
	failed = srunner_ntests_failed(runner);
	srunner_free(runner);
	return failed ? EXIT_FAILURE : EXIT_SUCCESS;
}
