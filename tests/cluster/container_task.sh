#!/bin/bash
# container_task.sh ROOT CMD...: run CMD as a containerized nopfs task would
# run: in its own mount namespace with its own root filesystem ROOT (a
# directory with empty mount points and a marker file /nopfs-container-root),
# inside a user namespace that maps the task's user to root (as Apptainer's
# --fakeroot or enroot's --root do). Only what docs/containers.md lists is
# bound in from the node: the system (/usr, /etc), /proc, /sys, a few devices,
# and for nopfs the agent's runtime directory (NOPFS_SOCKET's), the stage
# directory (NOPFS_STAGE_DIR), the interposer (LD_PRELOAD) and the dataset
# (NOPFS_DATASET), each at its own path, plus the working directory; /tmp and
# /dev/shm are the container's own. The environment goes through unchanged.
# With CONTAINER_NOPFS_BINDS=no the nopfs paths are not bound (a container
# set up without them: its tasks read the PFS).
# Run as: unshare -Urm --propagation private bash container_task.sh ROOT CMD...
set -euo pipefail
root=$1
shift
[[ -e $root/nopfs-container-root ]] || { echo "container_task: $root is not a test root" >&2; exit 1; }

mount -t tmpfs -o mode=755 tmpfs "$root/tmp"
mount -t tmpfs -o mode=755 tmpfs "$root/dev"
mkdir -p "$root/dev/shm" && mount -t tmpfs -o mode=1777 tmpfs "$root/dev/shm"
for device in null zero random urandom; do
	touch "$root/dev/$device"
	mount --bind "/dev/$device" "$root/dev/$device"
done
mount --rbind /usr "$root/usr"
mount --rbind /etc "$root/etc"
mount --rbind /proc "$root/proc"
mount --rbind /sys "$root/sys"

# bind_same PATH: the node's PATH (a directory or file) at the same path in the root.
bind_same() {
	if [[ -d $1 ]]; then
		mkdir -p "$root$1"
	else
		mkdir -p "$root$(dirname "$1")"
		touch "$root$1"
	fi
	mount --rbind "$1" "$root$1"
}
# The working directory first: binds below it must stay visible.
work=$(pwd)
bind_same "$work"
if [[ ${CONTAINER_NOPFS_BINDS:-yes} != no ]]; then
	[[ -n ${NOPFS_SOCKET:-} ]] && bind_same "$(dirname "$NOPFS_SOCKET")"
	[[ -n ${NOPFS_STAGE_DIR:-} ]] && bind_same "$NOPFS_STAGE_DIR"
	[[ -n ${NOPFS_DATASET:-} ]] && bind_same "$NOPFS_DATASET"
	for library in ${LD_PRELOAD:-}; do
		bind_same "$library"
	done
fi
# shellcheck disable=SC2016 # expanded by the shell inside the root
exec chroot "$root" /bin/sh -c 'cd "$0" && test -e /nopfs-container-root && exec "$@"' "$work" "$@"
