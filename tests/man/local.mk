# tests/man: the manual pages render cleanly and document what the code accepts.

TESTS += tests/man/check_man.py
EXTRA_DIST += tests/man/check_man.py
TESTS += tests/man/check_messages.py
EXTRA_DIST += tests/man/check_messages.py
