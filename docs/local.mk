# docs/: the documentation pages, shipped in the distribution and installed
# in DOCDIR with the README.

dist_doc_DATA = \
	README.md \
	docs/admin-guide.md \
	docs/user-guide.md \
	docs/architecture.md \
	docs/task-contract.md \
	docs/protocols.md \
	docs/security.md \
	docs/containers.md \
	docs/report.md
