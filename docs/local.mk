# docs/: the documentation pages, shipped in the distribution.

EXTRA_DIST += docs/architecture.md
EXTRA_DIST += docs/task-contract.md
EXTRA_DIST += docs/protocols.md
EXTRA_DIST += docs/admin.md
EXTRA_DIST += docs/security.md
EXTRA_DIST += docs/containers.md
EXTRA_DIST += docs/report.md
