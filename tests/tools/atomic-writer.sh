#!/bin/bash
# SPDX-License-Identifier: Apache-2.0
#
# atomic-writer.sh: projects a ConfigMap payload into DIR exactly the way
# kubelet's atomic writer does (kubernetes pkg/volume/util/atomic_writer.go,
# AtomicWriter.Write), one step at a time, so tests and the demo produce the
# same files, links and inotify events a real pod sees.
#
# Usage: atomic-writer.sh DIR [OPTIONS] [KEY=SRCFILE...]
#   The KEY=SRCFILE list is the whole payload: keys left out are removed.
#   --pause-after STEP SECONDS  after STEP, print "paused STEP" on stdout and
#                               sleep SECONDS (SIGUSR1 ends the pause early);
#                               repeatable. Steps, in order:
#         read     the current version was read and compared (kubelet 2-4)
#         mkdir    the new version directory exists, empty (5)
#         write    every key is written into it (6)
#         symlink  ..data_tmp points to it (8)
#         rename   ..data_tmp was renamed over ..data: the atomic flip (9);
#                  a new key has no top-level link yet, a removed key's
#                  link dangles
#         links    top-level KEY -> ..data/KEY links exist for every key (10)
#         prune    links of removed keys are gone (11)
#         cleanup  the old version directory is gone (12)
#   --mode OCTAL                file mode of the keys (default 0644, the
#                               ConfigMap volume's defaultMode 420)
#   --trace                     print "step STEP SECONDS.MICROS" (CLOCK_REALTIME)
#                               after each step, and "step rename-start ..."
#                               just before the rename
# Prints "version NAME" after a write, "unchanged NAME" when the payload
# equals the current version (nothing is written then, but, like kubelet's
# periodic resync, every file of the current version is opened and read).
# Exits 0, 1 on a failed step, 2 on a usage error.
set -euo pipefail
export LC_ALL=C

readonly steps="read mkdir write symlink rename links prune cleanup"
prog=${0##*/}

usage() {
        sed -n '4,32s/^# \{0,1\}//p' "$0" >&2
        exit 2
}
die() {
        printf '%s: %s\n' "$prog" "$*" >&2
        exit 1
}
usage_error() {
        printf '%s: %s\n' "$prog" "$*" >&2
        exit 2
}

# bash >= 5 has the time in EPOCHREALTIME, without a fork; older ones ask date(1)
now() {
        date +%s.%6N
}

[ $# -ge 1 ] || usage
case $1 in -h | --help) usage ;; esac
dir=$1
shift

declare -A pause=()
declare -A payload=()
keys=()
mode=0644
trace=0
while [ $# -gt 0 ]; do
        case $1 in
        --pause-after)
                [ $# -ge 3 ] || usage_error "--pause-after needs STEP and SECONDS"
                case " $steps " in
                *" $2 "*) ;;
                *) usage_error "--pause-after: unknown step \"$2\" (one of: $steps)" ;;
                esac
                [[ $3 =~ ^[0-9]+(\.[0-9]+)?$ ]] ||
                        usage_error "--pause-after $2: \"$3\" is not a number of seconds"
                pause[$2]=$3
                shift 3
                ;;
        --mode)
                if [ $# -lt 2 ] || ! [[ $2 =~ ^0?[0-7]{3}$ ]]; then
                        usage_error "--mode needs an octal file mode such as 0644"
                fi
                mode=$2
                shift 2
                ;;
        --trace)
                trace=1
                shift
                ;;
        -h | --help) usage ;;
        -*) usage_error "unknown option \"$1\"" ;;
        *=*)
                key=${1%%=*}
                src=${1#*=}
                # kubelet's validatePath(): relative, no "..", not starting
                # with ".." (reserved for ..data and the versions); a ConfigMap
                # key is a single name, so no '/' either.
                case $key in
                "" | . | .. | ..* | */*) usage_error "\"$key\" is not a usable ConfigMap key" ;;
                esac
                [ -z "${payload[$key]+x}" ] || usage_error "key \"$key\" given twice"
                if [ ! -f "$src" ] || [ ! -r "$src" ]; then
                        usage_error "$key: cannot read \"$src\""
                fi
                payload[$key]=$src
                keys+=("$key")
                shift
                ;;
        *) usage_error "\"$1\" is not KEY=SRCFILE" ;;
        esac
done

# NewAtomicWriter(): the target directory must exist.
[ -d "$dir" ] || die "\"$dir\" is not a directory"

sleeper=
# The sleeper starts before "paused" is printed, so a SIGUSR1 sent by whoever
# read that line always finds it.
trap '[ -z "$sleeper" ] || kill "$sleeper" 2>/dev/null || true' USR1

step_done() {
        local step=$1 secs
        [ "$trace" -eq 0 ] || printf 'step %s %s\n' "$step" "${EPOCHREALTIME:-$(now)}"
        secs=${pause[$step]:-}
        [ -n "$secs" ] || return 0
        sleep "$secs" &
        sleeper=$!
        printf 'paused %s\n' "$step"
        wait "$sleeper" 2>/dev/null || true
        kill "$sleeper" 2>/dev/null || true
        wait "$sleeper" 2>/dev/null || true
        sleeper=
}

in_payload() {
        [ -n "${payload[$1]+x}" ]
}

shopt -s nullglob dotglob

# (2) the current version, from the ..data link
old=
if [ -L "$dir/..data" ]; then
        old=$(readlink -- "$dir/..data")
fi

should_write=1
to_remove=()
if [ -n "$old" ]; then
        # (3) walk the current version: what it has and the payload lacks
        for path in "$dir/$old"/*; do
                name=${path##*/}
                in_payload "$name" || to_remove+=("$name")
        done
        # (4) shouldWritePayload(): lstat then read every key of the current
        # version, until one differs. This is the read kubelet repeats on every
        # sync, about once a minute, even when nothing changed.
        should_write=0
        for key in "${keys[@]}"; do
                if [ ! -e "$dir/$old/$key" ] && [ ! -L "$dir/$old/$key" ]; then
                        should_write=1
                        break
                fi
                if ! cmp -s -- "${payload[$key]}" "$dir/$old/$key"; then
                        should_write=1
                        break
                fi
        done
        [ ${#to_remove[@]} -eq 0 ] || should_write=1
fi
step_done read

new=
if [ "$should_write" -eq 1 ]; then
        # (5) os.MkdirTemp(dir, "..2006_01_02_15_04_05."): a unique name
        # from the UTC time and random digits; mkdir fails when it exists.
        for _ in 1 2 3 4 5 6 7 8 9 10; do
                candidate=..$(date -u +%Y_%m_%d_%H_%M_%S).$(printf '%09d' $(((RANDOM * 32768 + RANDOM) % 1000000000)))
                if mkdir -- "$dir/$candidate" 2>/dev/null; then
                        new=$candidate
                        break
                fi
        done
        [ -n "$new" ] || die "cannot create a version directory in \"$dir\""
        # 0755 whatever the umask: group and other must be able to traverse it
        chmod 0755 -- "$dir/$new"
        step_done mkdir

        # (6) writePayloadToDir(): each key with its mode, umask ignored
        for key in "${keys[@]}"; do
                cat -- "${payload[$key]}" >"$dir/$new/$key"
                chmod "$mode" -- "$dir/$new/$key"
        done
        step_done write

        # (8) a symlink to the new version, beside ..data
        ln -s -- "$new" "$dir/..data_tmp" || {
                rm -rf -- "${dir:?}/$new"
                die "cannot create \"$dir/..data_tmp\""
        }
        step_done symlink

        # (9) the atomic flip: rename(2) of ..data_tmp over ..data. -T makes mv
        # replace the link itself instead of moving into the directory it names.
        [ "$trace" -eq 0 ] || printf 'step rename-start %s\n' "${EPOCHREALTIME:-$(now)}"
        mv -T -- "$dir/..data_tmp" "$dir/..data" || {
                rm -f -- "$dir/..data_tmp"
                rm -rf -- "${dir:?}/$new"
                die "cannot rename \"$dir/..data_tmp\" to \"$dir/..data\""
        }
        step_done rename
fi

# (10) createUserVisibleFiles(): KEY -> ..data/KEY where no link exists yet
# (kubelet checks with readlink: ENOENT creates, anything else is left alone).
# Runs on a no-op sync too (kubernetes issue 121472).
for key in "${keys[@]}"; do
        if [ ! -L "$dir/$key" ] && [ ! -e "$dir/$key" ]; then
                ln -s -- "..data/$key" "$dir/$key"
        fi
done
step_done links

# (11) removeUserVisiblePaths(): the links of keys the payload lost
for key in "${to_remove[@]}"; do
        rm -f -- "${dir:?}/$key"
done
step_done prune

# (12) the previous version goes last
if [ -n "$new" ] && [ -n "$old" ]; then
        rm -rf -- "${dir:?}/$old"
fi
step_done cleanup

if [ -n "$new" ]; then
        printf 'version %s\n' "$new"
else
        printf 'unchanged %s\n' "$old"
fi
