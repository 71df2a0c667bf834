#!/bin/sh
# SPDX-License-Identifier: MIT
# The commands shown in the documentation run as printed.
#
# Extracted: every fenced block of README.md (```sh, ```console, ```c, and
# any other, which must be listed below), and every display (.Bd -literal
# and .Dl) of the man pages.  A block of shell is cut into commands (a
# command ends where the lines so far parse: sh -n); each command is either
# run or matched by exactly one line of SKIP below, with the reason;
# anything else fails the test, so a new example cannot escape it.
#
# How they run: each block in a fresh scratch directory, its commands in
# order in one shell, with build/, scripts/ and stub commands (make-report,
# alert, current-revision, my-daemon) first in PATH, TOKEN set to a new,
# larger token for each block (HIGHEST to the same), and these files made
# as a reader's setup would have them: report.txt and shared/report.txt,
# each committed under token 1, and new.txt.  /shared/ and /tmp/ in a
# command stand for the scratch directory's shared/ and tmp/.
#   - sh blocks, and console blocks that show no output: every command must
#     exit 0;
#   - console blocks that show output ("$ " lines and what follows them):
#     the output, standard error included, must be exactly as shown;
#   - crontab lines (five time fields): each line must be one line, as
#     cron reads it; the command is run as cron runs it: /bin/sh -c, with
#     HOME, LOGNAME, SHELL and PATH=/usr/bin:/bin, plus the environment
#     lines of the same document's crontab blocks;
#   - C: compiled with the build's warnings as errors against src/ (a
#     fragment without #include <fencedwrite.h> after that line); a
#     program with main() is linked against the built shared library, and
#     one whose first line names it (/* NAME.c ...) is kept in the scratch
#     directory of the blocks after it, where pkg-config finds fencedwrite
#     in the build directory.
# Commands that need etcd (etcd1:2379, etcdctl lock, fencedwrite-etcd, the
# crontab lines) run when this test runs as root: it then re-runs itself in
# a private network and mount namespace (unshare -mn) with etcd on
# 127.0.0.1:2379, etcd1 and etcd2 naming 127.0.0.1 in /etc/hosts, and
# /usr/local/bin holding fencedwrite, fencedwrite-etcd and the stubs, as
# after make install.  Otherwise they are skipped, and said to be.
#
# Then the demo: scripts/demo.sh runs, and the commands it printed are
# pasted, exactly as printed, into sh and into bash in an empty directory;
# they must end as the demo does (A turned away, count 42).
#
# usage: tests/docs_test.sh [BUILD_DIR]
# Prints "docs: N passed, N failed, N skipped"; exits 1 if anything failed.
# The commands and stubs written below expand their $ when they run.
# shellcheck disable=SC2016
set -u

top=$(cd "$(dirname "$0")/.." && pwd)
build=$(cd "${1:-$top/build}" && pwd) || exit 2
[ -x "$build/fencedwrite" ] || { echo "docs: $build/fencedwrite not built" >&2; exit 2; }

# One list of what is not run, and why.  Fields, separated by ~: document,
# extended regular
# expression matched against a command (or, for a display that is not a
# command, its first line), condition (always, or etcd: skipped only when
# etcd cannot be arranged), reason.
SKIP='README.md~^make check( |$)~always~runs every test, this one among them
README.md~^make deb( |$)~always~builds the packages: make check-deb (part of make check) runs it and installs what it builds
README.md~^make install ~always~installs into the system; scripts/test-install.sh runs the same target staged with DESTDIR and builds against it
fencedwrite-fence.5~^fencedwrite-fence 2 seq=S token=T~always~the record format, not a command
fencedwrite-fence.5~^fencedwrite-fence 2 seq=2 token=9~always~the output of the cut above, digest elided
README.md~^fencedwrite\[4711\]: stale ~always~a syslog line, not a command (tests/test_report.c checks real ones)
fencedwrite.1~^fencedwrite\[PID\]: stale ~always~a syslog line, not a command (tests/test_report.c checks real ones)
README.md~etcd~etcd~needs etcd and /usr/local/bin (root: private namespaces)
fencedwrite.1~etcd~etcd~needs etcd (root: private namespaces)
fencedwrite-etcd.1~etcd~etcd~needs etcd (root: private namespaces)'

# Before a command matching the expression, in its block's shell: what the
# situation the text describes needs.
ARRANGE='README.md~^make demo( |$)~cd "$FWDOCS_TOP"
fencedwrite.1~--init -t~rm report.txt.fence shared/report.txt.fence'

passed=0
failed=0
skipped=0
pass() { passed=$((passed + 1)); }
fail() { failed=$((failed + 1)); echo "docs: FAIL $*"; }

# As root, the test runs again in private namespaces, where etcd can be had.
if [ "${FWDOCS_NS:-}" != 1 ] && [ "$(id -u)" = 0 ] && command -v etcd >/dev/null &&
    command -v etcdctl >/dev/null && unshare -mn true 2>/dev/null; then
	FWDOCS_NS=1 exec unshare -mn "$0" "$build"
fi

work=$(mktemp -d "${TMPDIR:-/tmp}/fwdocs.XXXXXX") || exit 5
etcd_pid=
cleanup() {
	[ -z "$etcd_pid" ] || { kill "$etcd_pid" 2>/dev/null; wait "$etcd_pid" 2>/dev/null; }
	rm -rf "$work"
}
trap cleanup EXIT
trap 'exit 130' INT
trap 'exit 143' TERM

# ---- the environment -------------------------------------------------------

stub=$work/stub
mkdir "$stub" "$work/pkgconfig" "$work/blocks" "$work/kept"
printf '#!/bin/sh\necho "report of the day${1:+ ($*)}"\n' >"$stub/make-report"
printf '#!/bin/sh\necho "alert: $*" >&2\nexit 1\n' >"$stub/alert"
printf '#!/bin/sh\necho "$TOKEN"\n' >"$stub/current-revision"
printf '#!/bin/sh\nexit 0\n' >"$stub/my-daemon"
chmod +x "$stub"/*
ln -s "$build/fencedwrite" "$stub/fencedwrite"
ln -s "$top/scripts/fencedwrite-etcd" "$stub/fencedwrite-etcd"
cat >"$work/pkgconfig/fencedwrite.pc" <<EOF
Name: fencedwrite
Description: fenced writes, as built
Version: 0
Libs: -L$build -lfencedwrite
Cflags: -I$top/src
EOF
PATH=$stub:$top/scripts:$PATH
FWDOCS_TOP=$top
export FWDOCS_TOP
PKG_CONFIG_PATH=$work/pkgconfig
LD_LIBRARY_PATH=$build${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}
export PATH PKG_CONFIG_PATH LD_LIBRARY_PATH
unset ETCDCTL_ENDPOINTS

have_etcd=no
if [ "${FWDOCS_NS:-}" = 1 ]; then
	ip link set lo up || exit 5
	{ cat /etc/hosts; echo "127.0.0.1 etcd1 etcd2"; } >"$work/hosts"
	mount --bind "$work/hosts" /etc/hosts || exit 5
	mount --bind "$stub" /usr/local/bin || exit 5
	etcd --name docs --data-dir "$work/etcd" \
	    --listen-client-urls http://127.0.0.1:2379 \
	    --advertise-client-urls http://127.0.0.1:2379 \
	    --listen-peer-urls http://127.0.0.1:2380 \
	    --initial-advertise-peer-urls http://127.0.0.1:2380 \
	    --initial-cluster docs=http://127.0.0.1:2380 \
	    --log-level error >"$work/etcd.log" 2>&1 &
	etcd_pid=$!
	i=0
	until ETCDCTL_API=3 etcdctl --endpoints=127.0.0.1:2379 endpoint health >/dev/null 2>&1; do
		i=$((i + 1))
		[ "$i" -lt 100 ] || { echo "docs: etcd did not start" >&2; cat "$work/etcd.log" >&2; exit 5; }
		sleep 0.1
	done
	have_etcd=yes
fi

# ---- extraction ------------------------------------------------------------

# Blocks go to $work/blocks/N, and "N DOCUMENT LINE KIND" to the index.
index=$work/index
: >"$index"
awk -v out="$work/blocks" -v doc=README.md '
/^```/ {
	if (!inb) {
		n++; kind = substr($0, 4); if (kind == "") kind = "none"
		printf "R%03d %s %d %s\n", n, doc, FNR + 1, kind
		file = sprintf("%s/R%03d", out, n); printf "" > file; inb = 1
	} else { close(file); inb = 0 }
	next
}
inb { print > file }' "$top/README.md" >>"$index"

for page in "$top"/man/*.[135]; do
	name=$(basename "$page")
	awk -v out="$work/blocks" -v doc="$name" '
	function unescape(s) {
		gsub(/\\&/, "", s); gsub(/\\-/, "-", s); gsub(/\\\(dq/, "\"", s)
		gsub(/\\\(aq/, "'"'"'", s); gsub(/\\e/, "\\", s)
		return s
	}
	function open_block(line) {
		n++; file = sprintf("%s/M%s.%03d", out, doc, n); printf "" > file
		printf "M%s.%03d %s %d %s\n", doc, n, doc, line, (doc ~ /\.3$/ ? "c" : "man")
	}
	/^\.Bd -literal/ { open_block(FNR + 1); inb = 1; next }
	/^\.Ed/ && inb { close(file); inb = 0; next }
	inb { print unescape($0) > file; next }
	/^\.Dl / { open_block(FNR); print unescape(substr($0, 5)) > file; close(file) }
	' "$page" >>"$index"
done

# ---- running ---------------------------------------------------------------

token=100
cronenv=$work/cronenv
: >"$cronenv"
crondoc=

# The SKIP line matching DOCUMENT and TEXT, if any.
skip_entry() {
	printf '%s\n' "$SKIP" | while IFS='~' read -r d re cond reason; do
		[ "$d" = "$1" ] || continue
		[ "$cond" = etcd ] && [ "$have_etcd" = yes ] && continue
		if printf '%s\n' "$2" | grep -Eq -- "$re"; then
			printf '%s\n' "$reason"
			return
		fi
	done
}

arrangement() {
	printf '%s\n' "$ARRANGE" | while IFS='~' read -r d re what; do
		[ "$d" = "$1" ] || continue
		printf '%s\n' "$2" | grep -Eq -- "$re" && printf '%s\n' "$what"
	done
}

# A fresh scratch directory, as the text's reader has it; prints its path.
scratch() {
	s=$(mktemp -d "$work/run.XXXXXX")
	mkdir "$s/shared" "$s/tmp"
	cp "$work/kept/"* "$s/" 2>/dev/null
	(cd "$s" &&
	    echo "report 1" | fencedwrite -q -t 1 report.txt &&
	    echo "report 1" | fencedwrite -q -t 1 shared/report.txt &&
	    echo "new content" >new.txt) || { echo "docs: cannot set up $s" >&2; exit 5; }
	printf '%s\n' "$s"
}

# /shared/ and /tmp/ at the start of a word stand for the scratch's own.
localise() { sed -E -e "s#(^|[ \"'=<>])/(shared|tmp)/#\\1$1/\\2/#g"; }

is_cron() { printf '%s\n' "$1" | grep -Eq '^(@[a-z]+|[-0-9*/,]+( +[-0-9*/,]+){4})[ 	]'; }

# Cut a block of shell into commands, one per file $work/cmd.N (N from 1);
# prints the number of commands.  A crontab line with its continuation
# lines, if any, is one command (to be refused: cron reads one line).
cut_commands() {
	rm -f "$work"/cmd.*
	n=0
	acc=
	while IFS= read -r line || [ -n "$line" ]; do
		if [ -z "$acc" ]; then
			case $line in ''|'#'*) continue ;; esac
			acc=$line
		else
			acc=$acc'
'$line
		fi
		if is_cron "$acc"; then
			case $line in *\\) continue ;; esac
		else
			printf '%s\n' "$acc" | sh -n 2>/dev/null || continue
			case $acc in *\\) continue ;; esac
		fi
		n=$((n + 1)); printf '%s\n' "$acc" >"$work/cmd.$n"
		acc=
	done
	if [ -n "$acc" ]; then
		n=$((n + 1)); printf '%s\n' "$acc" >"$work/cmd.$n"
	fi
	echo "$n"
}

# Run the commands of a shell block; every one must exit 0.
run_sh_block() { # id doc line
	id=$1 doc=$2 line=$3
	count=$(cut_commands <"$work/blocks/$id")
	crontab=no
	for f in "$work"/cmd.*; do
		[ -f "$f" ] && is_cron "$(cat "$f")" && crontab=yes
	done
	s=$(scratch) || exit 5
	token=$((token + 1))
	script=$s/.block.sh
	: >"$script"
	: >"$s/.status"
	i=0
	ran=0
	while [ "$i" -lt "$count" ]; do
		i=$((i + 1))
		cmd=$(cat "$work/cmd.$i")
		why=$(skip_entry "$doc" "$cmd")
		if [ -n "$why" ]; then
			skipped=$((skipped + 1))
			echo "docs: skip $doc:$line: $(printf '%s' "$cmd" | head -n 1): $why"
			continue
		fi
		if is_cron "$cmd"; then
			case $cmd in *\\*) fail "$doc:$line: a crontab line continued with \\: cron reads one line: $cmd"; continue ;; esac
			case $cmd in *%*) fail "$doc:$line: % in a crontab line is a newline to cron: $cmd"; continue ;; esac
			[ "$crondoc" = "$doc" ] || { : >"$cronenv"; crondoc=$doc; }
			job=$(printf '%s\n' "$cmd" | sed -E 's/^(@[a-z]+|[-0-9*/,]+( +[-0-9*/,]+){4})[ 	]+//' | localise "$s")
			# shellcheck disable=SC2046 # one assignment per line, no spaces
			if (cd "$s" && env -i HOME="$s" LOGNAME=root USER=root SHELL=/bin/sh \
			    PATH=/usr/bin:/bin $(cat "$cronenv") timeout 60 /bin/sh -c "$job") \
			    </dev/null >"$s/.cron.out" 2>&1; then
				pass
			else
				fail "$doc:$line: crontab line failed: $cmd"
				sed 's/^/    /' "$s/.cron.out"
			fi
			continue
		fi
		# In a block of crontab lines, NAME=VALUE is an environment line
		# of the crontab, for the jobs after it.
		if [ "$crontab" = yes ] && printf '%s\n' "$cmd" | grep -Eq '^[A-Za-z_][A-Za-z0-9_]*=[^ ]*$'; then
			[ "$crondoc" = "$doc" ] || { : >"$cronenv"; crondoc=$doc; }
			printf '%s\n' "$cmd" >>"$cronenv"
			pass
			continue
		fi
		{
			arrangement "$doc" "$cmd"
			printf '%s\n' "$cmd" | localise "$s"
			printf '__rc=$?; echo "%s $__rc" >>"%s/.status"; (exit $__rc)\n' "$i" "$s"
		} >>"$script"
		ran=$((ran + 1))
	done
	[ "$ran" -gt 0 ] || return 0
	(cd "$s" && TOKEN=$token HIGHEST=$token timeout 120 sh "$script") </dev/null >"$s/.out" 2>&1
	while read -r k rc; do
		if [ "$rc" = 0 ]; then
			pass
		else
			fail "$doc:$line: exit $rc: $(cat "$work/cmd.$k")"
			sed 's/^/    /' "$s/.out"
		fi
	done <"$s/.status"
	got=$(wc -l <"$s/.status")
	[ "$got" -eq "$ran" ] || fail "$doc:$line: the block stopped after $got of its $ran commands"
}

# A console block: "$ " lines are commands, the lines after them output.
run_console_block() { # id doc line
	id=$1 doc=$2 line=$3
	if ! grep -vq '^\$ ' "$work/blocks/$id"; then
		# Commands without output shown: run them as a shell block.
		sed 's/^\$ //' "$work/blocks/$id" >"$work/blocks/$id.sh"
		run_sh_block "$id.sh" "$doc" "$line"
		return
	fi
	s=$(scratch) || exit 5
	token=$((token + 1))
	script=$s/.block.sh
	echo 'exec 2>&1' >"$script"
	grep -v '^\$ ' "$work/blocks/$id" >"$s/.expected"
	sed -n 's/^\$ //p' "$work/blocks/$id" >"$s/.cmds"
	while IFS= read -r cmd; do
		if [ -n "$(skip_entry "$doc" "$cmd")" ]; then
			fail "$doc:$line: a command listed in SKIP in a block whose output is compared: $cmd"
			return
		fi
		arrangement "$doc" "$cmd"
		printf '%s\n' "$cmd" | localise "$s"
	done <"$s/.cmds" >>"$script"
	(cd "$s" && TOKEN=$token HIGHEST=$token timeout 60 sh "$script") </dev/null >"$s/.out" 2>&1
	if cmp -s "$s/.expected" "$s/.out"; then
		pass
	else
		fail "$doc:$line: output differs from the text (- shown, + got):"
		diff -u "$s/.expected" "$s/.out" | tail -n +3 | sed 's/^/    /'
	fi
}

CWARN="-std=gnu11 -Wall -Wextra -Werror -Wno-unused-function"
run_c_block() { # id doc line
	id=$1 doc=$2 line=$3
	src=$work/blocks/$id
	name=$(sed -n '1s|^/\* *\([A-Za-z0-9_-]*\.c\)[ :].*|\1|p' "$src")
	# A fragment that does not include the header is compiled after it.
	grep -q '#include <fencedwrite.h>' "$src" || echo '#include <fencedwrite.h>' >"$work/$id.c"
	cat "$src" >>"$work/$id.c"
	if grep -q 'main(' "$src"; then
		set -- -o "$work/$id.bin" "$work/$id.c" -L"$build" -lfencedwrite
	else
		set -- -c -o "$work/$id.o" "$work/$id.c"
	fi
	# shellcheck disable=SC2086 # the warning flags are words
	if cc $CWARN -I"$top/src" "$@" >"$work/$id.log" 2>&1; then
		pass
	else
		fail "$doc:$line: the C example does not compile:"
		sed 's/^/    /' "$work/$id.log"
	fi
	[ -z "$name" ] || cp "$src" "$work/kept/$name"
}

while read -r id doc line kind; do
	case $kind in
	sh) run_sh_block "$id" "$doc" "$line" ;;
	console) run_console_block "$id" "$doc" "$line" ;;
	c) if grep -q '^\$ ' "$work/blocks/$id"; then
		run_console_block "$id" "$doc" "$line"
	   else
		run_c_block "$id" "$doc" "$line"
	   fi ;;
	man)
		if grep -q '^\$ ' "$work/blocks/$id"; then
			run_console_block "$id" "$doc" "$line"
		else
			why=$(skip_entry "$doc" "$(head -n 1 "$work/blocks/$id")")
			case $why in
			'') run_sh_block "$id" "$doc" "$line" ;;
			*) skipped=$((skipped + 1))
			   echo "docs: skip $doc:$line: $(head -n 1 "$work/blocks/$id" | cut -c1-60): $why" ;;
			esac
		fi ;;
	*)
		why=$(skip_entry "$doc" "$(head -n 1 "$work/blocks/$id")")
		if [ -n "$why" ]; then
			skipped=$((skipped + 1))
		else
			fail "$doc:$line: a \`\`\`$kind block, neither run nor listed in SKIP"
		fi ;;
	esac
done <"$index"

# ---- a page for every function -------------------------------------------

# man fw_NAME finds libfencedwrite(3): every function the header declares is
# named in the page's NAME and SYNOPSIS and listed in man/libfencedwrite.links,
# which make install reads, and nothing else is.
sed -nE 's/^(const )?[a-z_]+ \**(fw_[a-z_]+)\(.*/\2/p' "$top/src/fencedwrite.h" | sort >"$work/fn.header"
sed -n 's/^\.Nm \(fw_[a-z_]*\).*/\1/p' "$top/man/libfencedwrite.3" | sort >"$work/fn.name"
sed -n 's/^\.F[no] \(fw_[a-z_]*\).*/\1/p' "$top/man/libfencedwrite.3" | sort -u >"$work/fn.fn"
sed -n 's/^\.Sh SYNOPSIS/&/;/^\.Sh SYNOPSIS/,/^\.Sh DESCRIPTION/s/^\.F[no] \(fw_[a-z_]*\).*/\1/p' \
    "$top/man/libfencedwrite.3" | sort -u >"$work/fn.synopsis"
grep -v '^#' "$top/man/libfencedwrite.links" | sort >"$work/fn.links"
for list in name synopsis links; do
	if cmp -s "$work/fn.header" "$work/fn.$list"; then
		pass
	else
		fail "the functions of src/fencedwrite.h (-) and those of libfencedwrite(3)'s $list (+) differ:"
		diff "$work/fn.header" "$work/fn.$list" | sed -n 's/^[<>]/    &/p' | sed 's/    </    -/; s/    >/    +/'
	fi
done

# ---- the demo, pasted ------------------------------------------------------

demo_out=$work/demo.out
if timeout 60 "$top/scripts/demo.sh" "$build/fencedwrite" >"$demo_out" 2>&1; then
	pass
else
	fail "scripts/demo.sh failed:"
	sed 's/^/    /' "$demo_out"
fi
sed -n 's/^  \$ //p' "$demo_out" >"$work/demo.cmds"
[ -s "$work/demo.cmds" ] || fail "the demo printed no commands"
for sh in sh bash; do
	command -v "$sh" >/dev/null || continue
	d=$(mktemp -d "$work/paste.XXXXXX")
	(cd "$d" && timeout 60 "$sh" "$work/demo.cmds") >"$d/.out" 2>&1
	if [ "$(cat "$d/count" 2>/dev/null)" = 42 ] &&
	    [ "$(cat "$d/report.txt" 2>/dev/null)" = "report by C" ] &&
	    grep -q 'stale token 7 for report.txt: the fence holds 8' "$d/.out" &&
	    grep -q 'stale token 10 for count: the fence holds 11' "$d/.out"; then
		pass
	else
		fail "the demo's commands, pasted into $sh, do not end as the demo does:"
		sed 's/^/    /' "$d/.out"
	fi
done

echo "docs: $passed passed, $failed failed, $skipped skipped"
[ "$failed" -eq 0 ]
