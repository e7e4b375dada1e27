# tests/tools: the nopfs-plan and nopfs-report commands as a user runs them.

TESTS += \
	tests/tools/check_plan_cli.sh \
	tests/tools/check_report_cli.sh \
	tests/tools/check_report_compare.sh
EXTRA_DIST += \
	tests/tools/check_plan_cli.sh \
	tests/tools/check_report_cli.sh \
	tests/tools/check_report_compare.sh
