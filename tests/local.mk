# tests/: mirrors the source tree (tests/lib, tests/agent, tests/spank,
# tests/tools, tests/benchmarks, tests/contrib, tests/python); tests/cluster runs the whole
# on the test cluster; tests/helpers holds what several tests share.

TEST_EXTENSIONS = .py .sh
PY_LOG_COMPILER = $(NOPFS_PYTHON)
UNIT_TEST_CPPFLAGS = $(AM_CPPFLAGS) -I$(top_srcdir)/tests/helpers
UNIT_TEST_FLAGS = $(AM_CFLAGS) $(CHECK_CFLAGS)
UNIT_TEST_LIBS = lib/libnopfs_core.la $(CHECK_LIBS)

AM_TESTS_ENVIRONMENT = \
	top_srcdir='$(top_srcdir)'; export top_srcdir; \
	top_builddir='$(top_builddir)'; export top_builddir; \
	NOPFS_PYTHON='$(NOPFS_PYTHON)'; export NOPFS_PYTHON; \
	CK_DEFAULT_TIMEOUT=120; export CK_DEFAULT_TIMEOUT;
