#!/bin/sh
# Skiff's pre-removal script, shared by the deb ("remove", or "upgrade" when
# a new version replaces this one) and the rpm (%preun: $1 is 0 on erase, 1
# on upgrade). On removal it stops the service, then restores the routes and
# rules a TUN run may have left (skiff cleanup). An upgrade leaves the
# service running; the new version's postinst restarts it.
set -e

case "$1" in
remove | deconfigure | 0) ;;
*) exit 0 ;;
esac

if [ -d /run/systemd/system ]; then
	systemctl disable --now skiff.service >/dev/null 2>&1 || true
fi

# A service started by hand where systemd does not run: stop the processes
# of this package's binary running "skiff service", and no other.
pids=""
for p in /proc/[0-9]*; do
	[ "$(readlink "$p/exe" 2>/dev/null)" = /usr/bin/skiff ] || continue
	[ "$(tr '\000' ' ' <"$p/cmdline" 2>/dev/null | cut -d' ' -f2)" = service ] || continue
	pids="$pids ${p#/proc/}"
done
if [ -n "$pids" ]; then
	kill -TERM $pids 2>/dev/null || true
	i=0
	while [ $i -lt 50 ]; do
		alive=""
		for pid in $pids; do
			[ -d "/proc/$pid" ] && alive="$alive $pid"
		done
		[ -z "$alive" ] && break
		sleep 0.2
		i=$((i + 1))
	done
	[ -n "$alive" ] && kill -KILL $alive 2>/dev/null || true
fi

skiff cleanup || echo "skiff: skiff cleanup failed; routes may need restoring by hand" >&2
exit 0
