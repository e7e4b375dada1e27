/*
 * The extension list of the imagefolder format: parsed from the option (or
 * the default) into lower-cased entries.
 */
#include "config.h"

#include <stdlib.h>
#include <string.h>

#include "catalog_internal.h"
#include "common/log.h"

void nopfs_catalog_extensions_free(char **extensions)
{
	char **extension;

	if (!extensions)
		return;
	for (extension = extensions; *extension; extension++)
		free(*extension);
	free(extensions);
}

static bool is_blank(char c)
{
	return c == ' ' || c == '\t';
}

nopfs_status nopfs_catalog_extensions_parse(const char *extensions, char ***out)
{
	const char *text = extensions ? extensions : NOPFS_IMAGE_EXTENSIONS;
	const char *item = text;
	size_t count = 1, n = 0, i;
	char **list;

	for (i = 0; text[i]; i++)
		count += text[i] == ',';
	list = calloc(count + 1, sizeof(*list));
	if (!list)
		goto out_nomem;
	for (;;) {
		const char *end = strchrnul(item, ',');
		const char *start = item, *stop = end;

		while (start < stop && is_blank(*start))
			start++;
		while (stop > start && is_blank(stop[-1]))
			stop--;
		if (start == stop) {
			nopfs_error("extension list '%s' has an empty entry", text);
			nopfs_catalog_extensions_free(list);
			return NOPFS_ERR_INVALID;
		}
		list[n] = strndup(start, (size_t)(stop - start));
		if (!list[n])
			goto out_free_list;
		for (i = 0; list[n][i]; i++) {
			unsigned char c = (unsigned char)list[n][i];

			if (c >= 0x80) {
				nopfs_error("extension '%s' in '%s' is not ASCII: unsupported",
				            list[n], text);
				nopfs_catalog_extensions_free(list);
				return NOPFS_ERR_UNSUPPORTED;
			}
			if (c >= 'A' && c <= 'Z')
				list[n][i] = (char)(c - 'A' + 'a');
		}
		n++;
		if (!*end)
			break;
		item = end + 1;
	}
	*out = list;
	return NOPFS_OK;

out_free_list:
	nopfs_catalog_extensions_free(list);
out_nomem:
	nopfs_error("out of memory parsing the extension list '%s'", text);
	return NOPFS_ERR_NOMEM;
}
