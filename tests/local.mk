# tests/: mirrors the source tree (tests/lib, tests/agent, tests/spank,
# tests/tools, tests/benchmarks, tests/contrib, tests/python); tests/cluster runs the whole
# on the test cluster; tests/helpers holds what several tests share.

TEST_EXTENSIONS = .py .sh
if SANITIZERS
# Scripts run programs that are not instrumented (python, bash, srun) and load
# instrumented ones into them: the runtime first; leaks are the unit tests'.
SANITIZED_SCRIPT = env LD_PRELOAD='$(NOPFS_SANITIZER_RUNTIME)' \
	ASAN_OPTIONS=detect_leaks=0:verify_asan_link_order=0
PY_LOG_COMPILER = $(SANITIZED_SCRIPT) $(NOPFS_PYTHON)
SH_LOG_COMPILER = $(SANITIZED_SCRIPT) bash
else
PY_LOG_COMPILER = $(NOPFS_PYTHON)
endif
UNIT_TEST_CPPFLAGS = $(AM_CPPFLAGS) -I$(top_srcdir)/tests/helpers
UNIT_TEST_FLAGS = $(AM_CFLAGS) $(CHECK_CFLAGS)
UNIT_TEST_LIBS = lib/libnopfs_core.la $(CHECK_LIBS)

AM_TESTS_ENVIRONMENT = \
	top_srcdir='$(top_srcdir)'; export top_srcdir; \
	top_builddir='$(top_builddir)'; export top_builddir; \
	NOPFS_PYTHON='$(NOPFS_PYTHON)'; export NOPFS_PYTHON; \
	NOPFS_SANITIZER_RUNTIME='$(NOPFS_SANITIZER_RUNTIME)'; export NOPFS_SANITIZER_RUNTIME; \
	CK_DEFAULT_TIMEOUT=120; export CK_DEFAULT_TIMEOUT;
