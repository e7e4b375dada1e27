/*
 * File names as Python 3 sees them: os.fsdecode() decodes the bytes as
 * strict UTF-8 and turns each byte it cannot decode into a surrogate
 * U+DC80..U+DCFF (surrogateescape). sorted() then orders names by code point
 * and str.lower() folds case. torchvision's dataset order depends on both.
 */
#ifndef NOPFS_PYNAME_H
#define NOPFS_PYNAME_H

#include <stddef.h>

/*
 * Compare two NUL-terminated names (or paths) in Python's str order: <0, 0 or
 * >0. For valid UTF-8 this is strcmp() order.
 */
int nopfs_pyname_compare(const char *a, const char *b);

/*
 * Python's @name.lower(), reduced to what can match ASCII text: the result,
 * written to @out (at least strlen(@name) + 1 bytes, never longer than @name),
 * has ASCII where the lower-cased name has ASCII and the byte 0x80 for each
 * other code point. Returns its length.
 */
size_t nopfs_pyname_fold(const char *name, char *out);

#endif
