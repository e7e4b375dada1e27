/* A job's token: random, unguessable, hexadecimal. */
#include "config.h"

#include <errno.h>
#include <stdint.h>
#include <string.h>
#include <sys/random.h>

#include "token.h"

nopfs_status nopfs_token_make(char *token)
{
	static const char digits[] = "0123456789abcdef";
	uint8_t bytes[NOPFS_TOKEN_LENGTH / 2];
	size_t got = 0;

	while (got < sizeof(bytes)) {
		ssize_t n = getrandom(bytes + got, sizeof(bytes) - got, 0);

		if (n < 0 && errno != EINTR)
			return nopfs_status_from_errno(errno);
		if (n > 0)
			got += (size_t)n;
	}
	for (size_t i = 0; i < sizeof(bytes); i++) {
		token[2 * i] = digits[bytes[i] >> 4];
		token[2 * i + 1] = digits[bytes[i] & 15];
	}
	token[NOPFS_TOKEN_LENGTH] = '\0';
	return NOPFS_OK;
}

bool nopfs_token_is_valid(const char *text)
{
	if (!text || strlen(text) != NOPFS_TOKEN_LENGTH)
		return false;
	return strspn(text, "0123456789abcdef") == NOPFS_TOKEN_LENGTH;
}
