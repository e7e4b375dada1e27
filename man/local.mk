# man/: the manual pages (mdoc), checked by tests/man.

dist_man1_MANS = \
	man/nopfs-plan.1 \
	man/nopfs-report.1 \
	man/nopfs-sim.1 \
	man/nopfs-stage.1
dist_man3_MANS = \
	man/nopfs.3
dist_man8_MANS = \
	man/nopfs-agent.8 \
	man/spank_nopfs.8
