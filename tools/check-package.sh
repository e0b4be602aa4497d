#!/usr/bin/env bash
# Unpacks a package from tools/package-deb.sh into a temporary root and checks its layout:
# every file in its place, the binaries run with no Swift toolchain on the library path,
# the units pass systemd-analyze verify, the man pages and completions are there.
#   tools/check-package.sh replay_<version>_<arch>.deb
set -euo pipefail
deb=$1
root=$(mktemp -d)
trap 'rm -rf "$root"' EXIT
dpkg-deb -x "$deb" "$root"
dpkg-deb -e "$deb" "$root/DEBIAN"
fail() { echo "package check: $*" >&2; exit 1; }
for file in usr/bin/replayd usr/bin/replayctl lib/systemd/system/replayd.service lib/systemd/system/replayd.socket \
  etc/default/replayd usr/share/doc/replay/README.md usr/share/doc/replay/changelog.gz \
  usr/share/bash-completion/completions/replayctl usr/share/zsh/vendor-completions/_replayctl \
  usr/share/fish/vendor_completions.d/replayctl.fish usr/share/bash-completion/completions/replayd \
  usr/share/man/man1/replayd.1.gz usr/share/man/man1/replayctl.1.gz usr/share/man/man1/replayctl.send.1.gz \
  DEBIAN/control DEBIAN/postinst DEBIAN/conffiles; do
  [ -s "$root/$file" ] || fail "missing or empty: /$file"
done
version=$(awk '/^Version:/{print $2}' "$root/DEBIAN/control")
# The Swift runtime is linked in: nothing is loaded from the toolchain.
for tool in replayd replayctl; do
  ! ldd "$root/usr/bin/$tool" | grep -q swift || fail "$tool loads a Swift library: $(ldd "$root/usr/bin/$tool" | grep swift)"
  [ "$("$root/usr/bin/$tool" --version)" = "$version" ] || fail "$tool --version is not the package's $version"
done
grep -q "^Depends:.*libsqlite3" "$root/DEBIAN/control" || fail "Depends does not name SQLite: $(grep Depends "$root/DEBIAN/control")"
grep -q "^Depends:.*libjq" "$root/DEBIAN/control" || fail "Depends does not name jq"
# The units as installed, the binary they name being the package's.
sed -i "s#/usr/bin/replayd#$root/usr/bin/replayd#" "$root/lib/systemd/system/replayd.service"
systemd-analyze verify "$root/lib/systemd/system/replayd.socket" "$root/lib/systemd/system/replayd.service"
grep -q "^complete" "$root/usr/share/bash-completion/completions/replayctl" || fail "the bash completion is not one"
# argument-parser writes mdoc(7): a title, and a NAME section naming the command.
for page in replayd replayctl replayctl.send; do
  zcat "$root/usr/share/man/man1/$page.1.gz" | grep -q '^\.Dt ' || fail "$page.1 has no title"
  zcat "$root/usr/share/man/man1/$page.1.gz" | grep -A1 '^\.Sh NAME' | grep -q "^\.Nm \"*${page/./ }" || fail "$page.1 does not name $page"
done
sh -n "$root/DEBIAN/postinst" || fail "postinst is not a shell script"
echo "package check: $(basename "$deb"): $(find "$root" -type f -not -path "$root/DEBIAN/*" | wc -l) files in place; binaries run without the toolchain; units verified"
