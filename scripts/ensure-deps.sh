#!/bin/sh
# Make sure what the build or the tests need is installed.  As root, a
# missing Debian package is installed with apt-get; otherwise the script
# names the package and fails.
# usage: scripts/ensure-deps.sh NEED...
#   NEED: cmocka, mandoc, cppcheck, clang-tidy, shellcheck, valgrind, clang,
#         etcd
set -eu

have() {
	case $1 in
	cmocka) pkg-config --exists cmocka 2>/dev/null ||
	        [ -f /usr/include/cmocka.h ] ;;
	mandoc|cppcheck|clang-tidy|shellcheck|valgrind|clang)
		command -v "$1" >/dev/null 2>&1 ;;
	etcd) command -v etcd >/dev/null 2>&1 &&
	      command -v etcdctl >/dev/null 2>&1 ;;
	*) echo "ensure-deps: unknown need '$1'" >&2; exit 2 ;;
	esac
}

package() {
	case $1 in
	cmocka) echo "libcmocka-dev pkg-config" ;;
	clang) echo clang ;;
	etcd) echo etcd-server etcd-client ;;
	*) echo "$1" ;;
	esac
}

missing=""
for need in "$@"; do
	have "$need" || missing="$missing $(package "$need")"
done
[ -n "$missing" ] || exit 0

if [ "$(id -u)" -ne 0 ] || ! command -v apt-get >/dev/null 2>&1; then
	echo "ensure-deps: missing packages:$missing" >&2
	echo "ensure-deps: install them (e.g. sudo apt-get install$missing) and run again" >&2
	exit 1
fi
echo "ensure-deps: installing$missing" >&2
export DEBIAN_FRONTEND=noninteractive
# shellcheck disable=SC2086 # word splitting of the package list is wanted
apt-get install -y -q $missing >/dev/null 2>&1 || {
	apt-get update -q >/dev/null 2>&1
	apt-get install -y -q $missing
}
