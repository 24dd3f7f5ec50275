#!/bin/sh
# Removes Skiff from a Mac (run with sudo): stops the service, restores the
# routes and the pf anchor a TUN run may have left, removes the app, the
# daemon and the group. The users' own settings stay.
set -e
app=/Applications/Skiff.app
if [ -x "$app/Contents/MacOS/skiff" ]; then
	"$app/Contents/MacOS/skiff" service uninstall || true
	"$app/Contents/MacOS/skiff" cleanup || true
fi
rm -rf "$app" /var/log/skiff.log "/Library/Application Support/Skiff" /var/run/skiff
dseditgroup -o delete skiff 2>/dev/null || true
pkgutil --forget io.github.skiffvpn.skiff >/dev/null 2>&1 || true
echo "Skiff removed"
