#!/bin/sh
# Install the Debian packages libidr needs to build and test, if missing.
# Extra package names may be passed as arguments (CI adds its tools).
set -e
pkgs="gcc make pkg-config liburcu-dev $*"
# A package installed for several architectures (liburcu-dev, after
# scripts/cross-check.sh) is ambiguous to dpkg by its bare name: ask for
# the host's.
native=$(dpkg --print-architecture)
missing=""
for p in $pkgs; do
	dpkg -s "$p" >/dev/null 2>&1 || dpkg -s "$p:$native" >/dev/null 2>&1 ||
		missing="$missing $p"
done
[ -z "$missing" ] && exit 0
sudo=""
[ "$(id -u)" -eq 0 ] || sudo="sudo"
echo "installing:$missing"
$sudo apt-get update -qq
DEBIAN_FRONTEND=noninteractive $sudo apt-get install -y -qq $missing >/dev/null
