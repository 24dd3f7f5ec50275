#!/bin/sh
# Skiff's post-installation script, shared by the deb ("configure" with the
# old version on an upgrade) and the rpm (%post: $1 is 1 on install, 2 on
# upgrade). It creates the group whose members may use the service, adds the
# installing user to it, and enables and (re)starts the service where
# systemd runs.
set -e

case "$1" in
configure | 1 | 2) ;;
*) exit 0 ;;
esac

if ! getent group skiff >/dev/null; then
	groupadd --system skiff
fi

# The user who ran the installer: sudo sets SUDO_USER, pkexec PKEXEC_UID.
user=""
if [ -n "${SUDO_USER:-}" ]; then
	user="$SUDO_USER"
elif [ -n "${PKEXEC_UID:-}" ]; then
	user="$(getent passwd "$PKEXEC_UID" | cut -d: -f1)"
fi
if [ -n "$user" ] && [ "$user" != root ] && getent passwd "$user" >/dev/null; then
	if ! id -nG "$user" | tr ' ' '\n' | grep -qx skiff; then
		usermod -a -G skiff "$user"
		echo "skiff: added $user to the group skiff (log out and back in for the window to reach the service)"
	fi
fi

# The desktop file's MimeType makes skiff-window the handler of clash://
# and sing-box:// import links; the cache is what desktops read.
if command -v update-desktop-database >/dev/null 2>&1; then
	update-desktop-database -q /usr/share/applications || true
fi

unit=""
for d in /lib/systemd/system /usr/lib/systemd/system; do
	[ -e "$d/skiff.service" ] && unit="$d/skiff.service"
done
if [ -z "$unit" ]; then
	exit 0
fi
if [ -d /run/systemd/system ]; then
	systemctl daemon-reload || true
	systemctl enable skiff.service >/dev/null 2>&1 || echo "skiff: could not enable skiff.service" >&2
	if ! systemctl restart skiff.service; then
		echo "skiff: skiff.service did not start; see journalctl -u skiff.service" >&2
	fi
else
	echo "skiff: systemd is not running here; start the service as root with: skiff service"
fi
exit 0
