/* Python's view of file names: ordering and lower-casing (see pyname.h). */
#include "config.h"

#include <stdint.h>

#include "pyname.h"

/*
 * The next code point of a name as Python decodes it (strict UTF-8, invalid
 * bytes as surrogates), advancing *p.
 */
static uint32_t next_code_point(const unsigned char **p)
{
	const unsigned char *s = *p;
	unsigned char lo = 0x80, hi = 0xbf;
	int length, i;
	uint32_t cp;

	if (s[0] < 0x80) {
		*p = s + 1;
		return s[0];
	}
	if (s[0] >= 0xc2 && s[0] <= 0xdf) {
		length = 2;
		cp = s[0] & 0x1f;
	} else if (s[0] >= 0xe0 && s[0] <= 0xef) {
		length = 3;
		cp = s[0] & 0x0f;
		lo = s[0] == 0xe0 ? 0xa0 : 0x80;
		hi = s[0] == 0xed ? 0x9f : 0xbf;
	} else if (s[0] >= 0xf0 && s[0] <= 0xf4) {
		length = 4;
		cp = s[0] & 0x07;
		lo = s[0] == 0xf0 ? 0x90 : 0x80;
		hi = s[0] == 0xf4 ? 0x8f : 0xbf;
	} else {
		goto out_invalid;
	}
	for (i = 1; i < length; i++) {
		if (s[i] < lo || s[i] > hi)
			goto out_invalid;
		cp = (cp << 6) | (s[i] & 0x3f);
		lo = 0x80;
		hi = 0xbf;
	}
	*p = s + length;
	return cp;

out_invalid:
	*p = s + 1;
	return 0xdc00 + s[0];
}

int nopfs_pyname_compare(const char *a, const char *b)
{
	const unsigned char *x = (const unsigned char *)a, *y = (const unsigned char *)b;

	while (*x && *y) {
		uint32_t cx, cy;

		if (*x < 0x80 && *y < 0x80) {
			if (*x != *y)
				return *x < *y ? -1 : 1;
			x++;
			y++;
			continue;
		}
		cx = next_code_point(&x);
		cy = next_code_point(&y);
		if (cx != cy)
			return cx < cy ? -1 : 1;
	}
	return (*x != 0) - (*y != 0);
}

/*
 * Only two non-ASCII characters lower-case to something containing ASCII in
 * Python 3.11 (Unicode 14): KELVIN SIGN -> "k" and LATIN CAPITAL LETTER I
 * WITH DOT ABOVE -> "i" U+0307.
 */
size_t nopfs_pyname_fold(const char *name, char *out)
{
	const unsigned char *p = (const unsigned char *)name;
	size_t n = 0;

	while (*p) {
		uint32_t cp = next_code_point(&p);

		if (cp >= 'A' && cp <= 'Z')
			out[n++] = (char)(cp - 'A' + 'a');
		else if (cp < 0x80)
			out[n++] = (char)cp;
		else if (cp == 0x212a)
			out[n++] = 'k';
		else if (cp == 0x130) {
			out[n++] = 'i';
			out[n++] = (char)0x80;
		} else {
			out[n++] = (char)0x80;
		}
	}
	out[n] = '\0';
	return n;
}
