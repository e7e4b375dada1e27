#!/bin/bash
# The unit tests under valgrind's memcheck: no invalid access, no use of
# uninitialised memory, no definite or indirect leak (what dlopen()ed
# modules keep is suppressed: tests/memcheck/valgrind.supp). Check runs each
# test in the same process (CK_FORK=no) so that valgrind sees it whole.
# The programs: NOPFS_MEMCHECK_TESTS (tests/memcheck/local.mk).
# Exit: 0 pass, 1 fail, 77 skip (no valgrind, or a sanitizer build).
set -u
builddir=${top_builddir:-.}
srcdir=${top_srcdir:-.}

if [[ -n ${NOPFS_SANITIZER_RUNTIME:-} ]]; then
	echo "skipped: a sanitizer build (valgrind does not run ASan's programs)" >&2
	exit 77
fi
if ! command -v valgrind >/dev/null; then
	echo "skipped: no valgrind (Debian package valgrind)" >&2
	exit 77
fi
if [[ -z ${NOPFS_MEMCHECK_TESTS:-} ]]; then
	echo "NOPFS_MEMCHECK_TESTS is empty: nothing to check" >&2
	exit 99
fi

work=$(mktemp -d /tmp/nopfs-memcheck-XXXXXX) || exit 99
trap 'rm -rf "$work"' EXIT
failed=0
n=0
for test in $NOPFS_MEMCHECK_TESTS; do
	n=$((n + 1))
	log="$work/$n.log"
	start=$(date +%s)
	CK_FORK=no CK_DEFAULT_TIMEOUT=600 timeout -k 5 900 \
		"$builddir/libtool" --mode=execute valgrind -q --error-exitcode=9 \
		--leak-check=full --errors-for-leak-kinds=definite,indirect \
		--show-leak-kinds=definite,indirect \
		--suppressions="$srcdir/tests/memcheck/valgrind.supp" \
		"$builddir/$test" >"$log" 2>&1
	rc=$?
	if ((rc == 0)); then
		echo "ok $n - $test under memcheck in $(($(date +%s) - start)) s"
	else
		echo "not ok $n - $test under memcheck: exit $rc"
		grep -E '^==[0-9]+==' "$log" | head -60
		tail -5 "$log"
		failed=1
	fi
done
exit "$failed"
