#!/bin/bash
# SPDX-License-Identifier: MIT
# The bash completion (scripts/fencedwrite.bash-completion), as bash calls
# it on TAB: once with the bash-completion package's helpers (where it is
# installed) and once without them.  Every option of --help must be
# offered.
# usage: tests/completion_test.sh BUILD_DIR
set -u
top=$(cd "$(dirname "$0")/.." && pwd)
bin=$(cd "${1:-build}" && pwd)/fencedwrite
script=$top/scripts/fencedwrite.bash-completion
helpers=/usr/share/bash-completion/bash_completion

# One pass, in a bash of its own: $1 is "with" or "without" the helpers.
run_pass()
{
	local mode=$1 failed=0 work
	work=$(mktemp -d "${TMPDIR:-/tmp}/fwcomp.XXXXXX") || exit 5
	cd "$work" || exit 5
	mkdir sub
	: > report.txt
	: > report.token
	: > other.fence
	if [ "$mode" = with ]; then
		# shellcheck source=/dev/null
		. "$helpers"
	fi
	# shellcheck source=/dev/null
	. "$script"

	# The words offered when TAB is pressed at the end of "$@" (the
	# last word may be empty), sorted, one a line.
	offered()
	{
		COMP_WORDS=("$@")
		COMP_CWORD=$(($# - 1))
		COMP_LINE="$*"
		COMP_POINT=${#COMP_LINE}
		COMPREPLY=()
		_fencedwrite fencedwrite "${COMP_WORDS[COMP_CWORD]}" \
		    "${COMP_WORDS[COMP_CWORD - 1]}" 2>/dev/null
		((${#COMPREPLY[@]})) && printf '%s\n' "${COMPREPLY[@]}" | sort
	}
	# expect WANT WORDS...: exactly WANT (lines) is offered.
	expect()
	{
		local want=$1 got
		shift
		got=$(offered "$@")
		if [ "$got" != "$want" ]; then
			echo "completion ($mode helpers): '$*<TAB>' offered" \
			    "'$got', want '$want'" >&2
			failed=1
		fi
	}
	# offers WORD WORDS...: WORD is among what is offered.
	offers()
	{
		local word=$1
		shift
		if ! offered "$@" | grep -qxF -e "$word"; then
			echo "completion ($mode helpers): '$*<TAB>' does not" \
			    "offer '$word'" >&2
			failed=1
		fi
	}
	# never WORD WORDS...: WORD is not offered.
	never()
	{
		local word=$1
		shift
		if offered "$@" | grep -qxF -e "$word"; then
			echo "completion ($mode helpers): '$*<TAB>' offers" \
			    "'$word'" >&2
			failed=1
		fi
	}

	[ "$(complete -p fencedwrite 2>/dev/null)" = \
	  "complete -F _fencedwrite fencedwrite" ] ||
	    { echo "completion: not registered for fencedwrite" >&2; failed=1; }
	expect $'--verify\n--version' fencedwrite --ve
	expect $'--no-claim\n--nonblock' fencedwrite --no
	expect $'--token\n--token-env\n--token-file' fencedwrite --tok
	expect '-V' fencedwrite -V
	# every option --help lists, actions included
	for opt in $("$bin" --help | grep -oE '^ +(-[a-zA-Z], )?--[a-z-]+' |
	             grep -oE -- '--[a-z-]+'); do
		offers "$opt" fencedwrite "${opt:0:3}"
	done
	# a number after -t and -w: nothing
	expect '' fencedwrite -t ''
	expect '' fencedwrite --timeout ''
	expect '' fencedwrite -t 5 -w ''
	# FILE and the paths options take
	expect 'report.txt' fencedwrite -t 5 report.tx
	offers 'sub' fencedwrite -t 5 ''
	expect 'other.fence' fencedwrite --fence oth
	expect 'report.token' fencedwrite --read --token-file report.to
	expect 'report.token' fencedwrite --metrics report.to
	# the variable --token-env names
	FWCOMP_REV=1 expect 'FWCOMP_REV' fencedwrite --token-env FWCOMP_R
	# options after FILE, and the "--" before CMD
	offers '--cmd-status' fencedwrite report.txt --cmd
	offers '--' fencedwrite -t 5 report.txt --
	expect '' fencedwrite -t 5 report.txt ''
	# after "-- FILE" only the "--" before CMD
	expect '--' fencedwrite -t 5 -- -odd -
	# CMD: a command name, then its own arguments, never our options
	offers 'printf' fencedwrite -t 5 report.txt -- printf
	offers 'printf' fencedwrite report.txt -t 5 --progress -- prin
	never '--verify' fencedwrite -t 5 report.txt -- printf --ve
	never '--verify' fencedwrite -t 5 -- report.txt -- printf --ve
	offers 'report.txt' fencedwrite -t 5 report.txt -- cat report
	cd / && rm -rf "$work"
	return "$failed"
}

passes=0
failed=0
if [ -r "$helpers" ]; then
	if bash --norc --noprofile -c "$(declare -f run_pass); \
	    bin='$bin' script='$script' helpers='$helpers' run_pass with"; then
		passes=$((passes + 1))
	else
		failed=$((failed + 1))
	fi
else
	echo "completion: bash-completion not installed; tested without it"
fi
if bash --norc --noprofile -c "$(declare -f run_pass); \
    bin='$bin' script='$script' helpers='$helpers' run_pass without"; then
	passes=$((passes + 1))
else
	failed=$((failed + 1))
fi
echo "completion: $passes passed, $failed failed"
[ "$failed" -eq 0 ]
