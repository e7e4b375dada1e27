# tests/python: the Python package python/nopfs (nopfs.Dataset against a
# standalone agent, with and without one; nopfs.report), from the source
# tree with the build's libnopfs.

PYTHON_TESTS = \
	tests/python/test_dataset.py \
	tests/python/test_report.py
TESTS += $(PYTHON_TESTS)
EXTRA_DIST += \
	$(PYTHON_TESTS) \
	tests/python/pyenv.py
