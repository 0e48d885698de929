#!/bin/bash
# SPDX-License-Identifier: Apache-2.0
#
# The kubelet atomic writer the watch tests, the daemon tests and the demo
# rely on (tests/tools/atomic-writer.sh), checked as a program: the layout it
# leaves, kubelet's file modes whatever the umask, unique version names, the
# no-op sync that changes nothing, key removal, pauses ended by SIGUSR1, and
# its usage errors. The watcher and the reader themselves are exercised on
# real inotify by the unit tests test-watcher and test-volume, which run this
# writer between every step.
. "$(dirname "$0")/lib.sh"

WRITER=$TOP_SRCDIR/tests/tools/atomic-writer.sh
V1=$TEST_DATA_DIR/volume/v1
V2=$TEST_DATA_DIR/volume/v2
D=$WORK/vol
mkdir "$D"

writer() { bash "$WRITER" "$@"; }

# check MESSAGE CMD...: passes when CMD succeeds, fails with MESSAGE otherwise
check() {
        local msg=$1
        shift
        if "$@"; then pass; else fail "$msg"; fi
}

entries() { find "$1" -mindepth 1 -maxdepth 1 -printf '%f\n' | sort | tr '\n' ' '; }

# identity of a path without following it: inode and ctime
ident() { stat -c '%i %Z.%z' -- "$1"; }

# --- first write, under a hostile umask --------------------------------------
out=$( (umask 077 && writer "$D" enroot.conf="$V1/enroot.conf" 99-aicr-defaults.env="$V1/99-aicr-defaults.env"))
v1=${out#version }
if [[ $out == version* && $v1 =~ ^\.\.[0-9]{4}_[0-9]{2}_[0-9]{2}_[0-9]{2}_[0-9]{2}_[0-9]{2}\.[0-9]{9}$ ]]; then
        pass
else
        fail "first write printed \"$out\", not \"version ..YYYY_MM_DD_hh_mm_ss.NNNNNNNNN\""
fi
check "..data does not point to $v1" [ "$(readlink "$D/..data")" = "$v1" ]
for key in enroot.conf 99-aicr-defaults.env; do
        check "$key is not a link to ..data/$key" [ "$(readlink "$D/$key")" = "..data/$key" ]
        expect_file_eq "$V1/$key" "$D/$key" "$key through its link"
        check "$key mode is not 0644 under umask 077" [ "$(stat -c %a "$D/$v1/$key")" = 644 ]
done
check "version directory mode is not 0755 under umask 077" [ "$(stat -c %a "$D/$v1")" = 755 ]
check "..data_tmp left behind" [ ! -e "$D/..data_tmp" ]
check "..data_tmp left behind (dangling)" [ ! -L "$D/..data_tmp" ]

# --- no-op sync: nothing written, nothing touched ----------------------------
before_data=$(ident "$D/..data")
before_dir=$(stat -c '%Y.%y' "$D")
sleep 0.01
out=$(writer "$D" enroot.conf="$V1/enroot.conf" 99-aicr-defaults.env="$V1/99-aicr-defaults.env")
check "no-op sync printed \"$out\"" [ "$out" = "unchanged $v1" ]
check "no-op sync replaced ..data" [ "$(ident "$D/..data")" = "$before_data" ]
check "no-op sync changed the directory" [ "$(stat -c '%Y.%y' "$D")" = "$before_dir" ]
check "no-op sync made a version" [ "$(find "$D" -maxdepth 1 -name '..2*' | wc -l)" -eq 1 ]

# --- update: a key changed, one added, one removed ---------------------------
out=$(writer "$D" --mode 0600 enroot.conf="$V2/enroot.conf" extra.conf="$V2/extra.conf")
v2=${out#version }
check "update printed the old version" [ "$v2" != "$v1" ]
check "update did not flip ..data" [ "$(readlink "$D/..data")" = "$v2" ]
check "old version $v1 not removed" [ ! -e "$D/$v1" ]
check "removed key's link still there" [ ! -L "$D/99-aicr-defaults.env" ]
expect_file_eq "$V2/enroot.conf" "$D/enroot.conf" "updated enroot.conf"
expect_file_eq "$V2/extra.conf" "$D/extra.conf" "added extra.conf"
check "--mode 0600 not applied" [ "$(stat -c %a "$D/$v2/extra.conf")" = 600 ]
expected=$(printf '%s\n' ..data "$v2" enroot.conf extra.conf | sort | tr '\n' ' ')
check "unexpected entries: $(entries "$D")" [ "$(entries "$D")" = "$expected" ]

# --- two writes within one second get two names -----------------------------
a=$(writer "$D" enroot.conf="$V1/enroot.conf")
b=$(writer "$D" enroot.conf="$V2/enroot.conf")
check "two versions share a name: $a" [ "$a" != "$b" ]

# --- a pause, ended early by SIGUSR1 ------------------------------------------
fifo=$WORK/writer-stdout
mkfifo "$fifo"
start=$SECONDS
# bash itself in the background (not a function, which would run in a
# subshell): $! must be the writer, the process SIGUSR1 is for
bash "$WRITER" "$D" --pause-after rename 60 enroot.conf="$V1/enroot.conf" >"$fifo" &
pid=$!
exec 3<"$fifo"
read -r line <&3 || line=
check "expected \"paused rename\", got \"$line\"" [ "$line" = "paused rename" ]
expect_file_eq "$V1/enroot.conf" "$D/..data/enroot.conf" "..data during the pause"
kill -USR1 "$pid"
read -r line <&3 || line=
exec 3<&-
st=0
wait "$pid" || st=$?
check "after SIGUSR1: exit $st" [ "$st" -eq 0 ]
check "after SIGUSR1: \"$line\"" [ "${line%% *}" = version ]
check "SIGUSR1 did not end the pause" [ $((SECONDS - start)) -lt 30 ]

# --- usage errors --------------------------------------------------------------
expect_status 2 writer "$D" ..data="$V1/enroot.conf"
expect_status 2 writer "$D" a/b="$V1/enroot.conf"
expect_status 2 writer "$D" .="$V1/enroot.conf"
expect_status 2 writer "$D" k="$WORK/missing"
expect_status 2 writer "$D" k="$V1/enroot.conf" k="$V1/enroot.conf"
expect_status 2 writer "$D" --pause-after nosuchstep 1 k="$V1/enroot.conf"
expect_status 2 writer "$D" --pause-after rename soon k="$V1/enroot.conf"
expect_status 2 writer "$D" --mode 999 k="$V1/enroot.conf"
expect_status 2 writer "$D" notapair
expect_status 2 writer
expect_status 1 writer "$WORK/missing-dir" k="$V1/enroot.conf"
check "missing DIR not named: $(cat "$WORK/err")" grep -q 'missing-dir.*is not a directory' "$WORK/err"

finish
