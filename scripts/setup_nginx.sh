#!/usr/bin/env bash
# Puts Debian's nginx binary under DIR (default build/nginx) without installing it: the
# package is fetched with `apt-get download` and unpacked with `dpkg -x`, so nothing is
# added to the system and no service starts. kiln_triton_nginx_test runs the nginx
# configuration of docs/guide/serving.md ("Scaling out") with it, in front of two Triton
# replicas. nginx's own dependencies (libc, libpcre2, libssl, zlib) are in every Debian 12.
#
# usage: scripts/setup_nginx.sh [DIR]
# Idempotent: does nothing when DIR/usr/sbin/nginx runs.
set -euo pipefail
cd "$(dirname "$0")/.."
dir=${1:-build/nginx}
binary=$dir/usr/sbin/nginx

if [ -x "$binary" ] && "$binary" -v > /dev/null 2>&1; then
  exit 0
fi
if ! command -v apt-get > /dev/null || ! command -v dpkg > /dev/null; then
  echo "setup_nginx: apt-get and dpkg are needed to fetch Debian's nginx package" >&2
  exit 1
fi

download=$(mktemp -d)
trap 'rm -rf "$download"' EXIT
# apt-get download runs as the user; as root it warns that the _apt user cannot write
# the folder, which is harmless here.
fetch() { (cd "$download" && apt-get download -qq nginx 2> apt.log); }
if ! fetch; then
  # A fresh machine may not have the package lists yet.
  SUDO=""
  if [ "$(id -u)" -ne 0 ]; then SUDO="sudo"; fi
  $SUDO apt-get update -qq > /dev/null
  if ! fetch; then
    echo "setup_nginx: apt-get download nginx failed:" >&2
    cat "$download/apt.log" >&2
    exit 1
  fi
fi
rm -rf "$dir"
mkdir -p "$dir"
dpkg -x "$download"/nginx_*.deb "$dir"
"$binary" -v 2>&1 | sed 's/^/setup_nginx: /'
