#!/bin/sh
# Removes Skiff from a Mac (run with sudo): stops the service, restores the
# routes and the pf anchor a TUN run may have left, removes the app, the
# daemon and the group. The users' own settings stay.
set -e
label=io.github.skiffvpn.skiff.service
app=/Applications/Skiff.app
launchctl bootout "system/$label" 2>/dev/null || true
[ -x "$app/Contents/MacOS/skiff" ] && "$app/Contents/MacOS/skiff" cleanup || true
rm -f "/Library/LaunchDaemons/$label.plist"
rm -rf "$app" /Library/Logs/Skiff "/Library/Application Support/Skiff"
dseditgroup -o delete skiff 2>/dev/null || true
pkgutil --forget io.github.skiffvpn.skiff >/dev/null 2>&1 || true
echo "Skiff removed"
