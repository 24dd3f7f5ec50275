#!/bin/sh
# Skiff's post-removal script, shared by the deb ("remove", "purge") and the
# rpm (%postun: $1 is 0 on erase, 1 on upgrade). Purge removes what the
# package and its service made: the service's state, its socket directory
# and the group. Users' own settings (~/.config/skiff) stay theirs.
set -e

case "$1" in
purge)
	rm -rf /var/lib/skiff
	rm -rf /run/skiff 2>/dev/null || true
	if getent group skiff >/dev/null; then
		groupdel skiff || echo "skiff: could not remove the group skiff" >&2
	fi
	;;
remove | 0)
	rm -rf /run/skiff 2>/dev/null || true
	;;
esac
if [ -d /run/systemd/system ]; then
	systemctl daemon-reload || true
fi
exit 0
