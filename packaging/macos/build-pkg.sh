#!/bin/sh
# Builds Skiff's macOS installer on a Mac (Xcode command-line tools and Go;
# it cannot run on the Linux build machines, which have no macOS SDK):
#
#   packaging/macos/build-pkg.sh 0.1.0 [build]
#
# 1. builds skiff (the command line and the service, without cgo) and
#    skiff-window (the window, with cgo) for arm64 and amd64 and joins
#    each pair (lipo);
# 2. assembles Skiff.app (Info.plist, skiff-window as the bundle's
#    executable with skiff beside it in Contents/MacOS, an .icns made from
#    assets/icon.png);
# 3. signs the app with the hardened runtime (codesign, identity in
#    SKIFF_SIGN_APP, e.g. "Developer ID Application: … (TEAMID)");
# 4. makes the component package with the app in /Applications and the
#    preinstall/postinstall scripts (group skiff; `skiff service install`
#    writes and starts the service's launchd daemon, whose plist text lives
#    in app/service/install_darwin.go alone) (pkgbuild), and the
#    signed product archive (productbuild, identity in
#    SKIFF_SIGN_INSTALLER, "Developer ID Installer: …");
# 5. notarises it (xcrun notarytool, credentials stored beforehand with
#    `xcrun notarytool store-credentials` under the name in
#    SKIFF_NOTARY_PROFILE) and staples the ticket.
#
# Without SKIFF_SIGN_APP / SKIFF_SIGN_INSTALLER / SKIFF_NOTARY_PROFILE the
# steps that need them are skipped with a note: the result is an unsigned
# .pkg for testing, which Gatekeeper will refuse on other Macs.
set -eu

version=${1:?usage: build-pkg.sh VERSION [BUILD]}
build=${2:-1}
here=$(cd "$(dirname "$0")" && pwd)
repo=$(cd "$here/../.." && pwd)
out=$repo/dist/macos
id=io.github.skiffvpn.skiff
commit=$(git -C "$repo" rev-parse --short=12 HEAD 2>/dev/null || echo "")
ldflags="-s -w -X github.com/skiffvpn/skiff/internal/version.version=$version -X github.com/skiffvpn/skiff/internal/version.commit=$commit"

rm -rf "$out"
mkdir -p "$out/build" "$out/root/Applications"

# 1. the binaries, for both architectures; the service runs skiff, which
# must not link Fyne
for arch in arm64 amd64; do
	(cd "$repo" && CGO_ENABLED=0 GOOS=darwin GOARCH=$arch \
		go build -trimpath -ldflags "$ldflags" -o "$out/build/skiff-$arch" .)
	(cd "$repo" && CGO_ENABLED=1 GOOS=darwin GOARCH=$arch MACOSX_DEPLOYMENT_TARGET=11.0 \
		go build -trimpath -ldflags "$ldflags" -o "$out/build/skiff-window-$arch" ./app/skiff-window)
done
lipo -create -output "$out/build/skiff" "$out/build/skiff-arm64" "$out/build/skiff-amd64"
lipo -create -output "$out/build/skiff-window" "$out/build/skiff-window-arm64" "$out/build/skiff-window-amd64"

# 2. the bundle
app=$out/root/Applications/Skiff.app
mkdir -p "$app/Contents/MacOS" "$app/Contents/Resources"
sed -e "s/@VERSION@/$version/" -e "s/@BUILD@/$build/" "$here/Info.plist" >"$app/Contents/Info.plist"
plutil -lint "$app/Contents/Info.plist"
cp "$out/build/skiff" "$app/Contents/MacOS/skiff"
cp "$out/build/skiff-window" "$app/Contents/MacOS/skiff-window"
iconset=$out/build/skiff.iconset
mkdir -p "$iconset"
for s in 16 32 128 256; do
	sips -z $s $s "$repo/assets/icon.png" --out "$iconset/icon_${s}x${s}.png" >/dev/null
	d=$((s * 2))
	[ $d -le 256 ] && sips -z $d $d "$repo/assets/icon.png" --out "$iconset/icon_${s}x${s}@2x.png" >/dev/null
done
iconutil -c icns -o "$app/Contents/Resources/skiff.icns" "$iconset"

# 3. sign the app
if [ -n "${SKIFF_SIGN_APP:-}" ]; then
	# the helper executable first (nested code), then the bundle
	codesign --force --options runtime --timestamp --sign "$SKIFF_SIGN_APP" "$app/Contents/MacOS/skiff"
	codesign --force --options runtime --timestamp --sign "$SKIFF_SIGN_APP" "$app"
	codesign --verify --strict --verbose=2 "$app"
else
	echo "build-pkg: SKIFF_SIGN_APP not set: the app is not signed"
fi

# 4. the packages
chmod 0755 "$here/scripts/preinstall" "$here/scripts/postinstall"
pkgbuild --root "$out/root" --scripts "$here/scripts" --identifier "$id" --version "$version" \
	--install-location / --ownership recommended "$out/build/skiff-component.pkg"
pkg=$repo/dist/Skiff-$version.pkg
if [ -n "${SKIFF_SIGN_INSTALLER:-}" ]; then
	productbuild --package "$out/build/skiff-component.pkg" --identifier "$id.installer" --version "$version" \
		--sign "$SKIFF_SIGN_INSTALLER" "$pkg"
	pkgutil --check-signature "$pkg"
else
	echo "build-pkg: SKIFF_SIGN_INSTALLER not set: the installer is not signed"
	productbuild --package "$out/build/skiff-component.pkg" --identifier "$id.installer" --version "$version" "$pkg"
fi

# 5. notarise and staple
if [ -n "${SKIFF_NOTARY_PROFILE:-}" ] && [ -n "${SKIFF_SIGN_INSTALLER:-}" ]; then
	xcrun notarytool submit "$pkg" --keychain-profile "$SKIFF_NOTARY_PROFILE" --wait
	xcrun stapler staple "$pkg"
	xcrun stapler validate "$pkg"
	spctl --assess --type install --verbose "$pkg"
else
	echo "build-pkg: SKIFF_NOTARY_PROFILE (or the installer identity) not set: not notarised"
fi
echo "$pkg"
