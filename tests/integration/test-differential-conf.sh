#!/bin/bash
# SPDX-License-Identifier: Apache-2.0
# The enroot.conf model against real bash: a loop written from docs/DESIGN.md §5
# (bash -n, IFS=$' \t=' read -r, eval echo, first non-empty definition wins,
# false values unset ENROOT_ keys) runs on a corpus, and the settings it
# exports must equal what model-dump says. Values with live shell are compared
# by key only. The loop takes exactly the keys of enroot's config::init
# (^ENROOT_[[:upper:]_]+$, ^SSL_CERT_(DIR|FILE)$, ^(all|no|http|https)_proxy$)
# and the reference prints every variable the loop left exported, whatever its
# name: a key the model takes and enroot skips (MELLANOX_*, NVIDIA_*, ...)
# shows up as a difference.
. "$(dirname "$0")/lib.sh"
: "${MODEL_DUMP:?run through make check}"
command -v bash >/dev/null || skip no-bash "bash is not installed"

# The reference: what enroot's loader leaves in the environment.
reference() {
        env -i PATH=/usr/bin:/bin bash --norc --noprofile -c '
                file=$1
                if [ -s "$file" ] && ! bash -n "$file" >/dev/null 2>&1; then
                        echo REFUSED
                        exit 0
                fi
                accepted() {
                        [[ $1 =~ ^ENROOT_[[:upper:]_]+$ ]] ||
                        [[ $1 =~ ^SSL_CERT_(DIR|FILE)$ ]] ||
                        [[ $1 =~ ^(all|no|http|https)_proxy$ ]]
                }
                before=" $(compgen -e | tr "\n" " ")"
                while IFS=$'"' \t='"' read -r k v; do
                        accepted "$k" || continue
                        v=$(cd "$2" && eval echo "$v" 2>/dev/null) || true
                        # an earlier non-empty definition stays
                        export "$k=${!k:-$v}"
                done <"$file"
                for name in $(compgen -e); do
                        [[ $name == ENROOT_* ]] || continue
                        [[ ${!name} =~ ^(n|no|N|NO|No|f|false|F|False|FALSE)$ ]] && unset "$name"
                done
                for name in $(compgen -e | LC_ALL=C sort); do
                        [[ $before == *" $name "* ]] && continue
                        val=${!name}
                        val=${val//\\/\\\\}
                        val=${val//$'"'\n'"'/\\n}
                        printf "%s=%s\n" "$name" "$val"
                done
        ' _ "$1" "$WORK/empty"
}

mkdir -p "$WORK/empty" "$WORK/gen"

# A seeded random corpus built from the pieces enroot.conf files are made of.
RANDOM=20261202
keys=(ENROOT_MOUNT_HOME ENROOT_REMAP_ROOT ENROOT_A_B ENROOT_ enroot_remap_root ENROOT_X1
      MELLANOX_VISIBLE_DEVICES NVIDIA_DRIVER_CAPABILITIES NVIDIA_VISIBLE_DEVICES
      SSL_CERT_FILE http_proxy HTTP_PROXY
      "export ENROOT_MOUNT_HOME" "#ENROOT_REMAP_ROOT" "# ENROOT_MOUNT_HOME" FOO "")
seps=("=" " " $'\t' " = " "==" " =" "= " $'\t=\t' "  ")
vals=(yes no y n "" '""' "''" '"a b"' "'x y'" 'a\ b' 'y # c' '-n' '-e' '-n x' 'a=' 'a =' 'a = ='
      '"x"y' N No NO nO f F False FALSE false 0 off '"no"' "'no'" 'a  b' '"a  b"' '/path/to'
      'a\\b' '"a\"b"' "'a\"b'" '-- x' '"-n"' 'x=y=' '\#x' '"#x"' 'on' '1')
pads=("" " " $'\t' "  ")
for n in $(seq 1 400); do
        f="$WORK/gen/$n.conf"
        : >"$f"
        lines=$((RANDOM % 6 + 1))
        for _ in $(seq 1 "$lines"); do
                k=${keys[RANDOM % ${#keys[@]}]}
                s=${seps[RANDOM % ${#seps[@]}]}
                v=${vals[RANDOM % ${#vals[@]}]}
                printf '%s%s%s%s%s\n' "${pads[RANDOM % 4]}" "$k" "$s" "$v" "${pads[RANDOM % 4]}" >>"$f"
        done
        # one file in eight ends without its final newline
        if [ $((RANDOM % 8)) -eq 0 ]; then
                truncate -s -1 "$f"
        fi
done

corpus=("$TEST_DATA_DIR"/differential/conf/*.conf "$WORK"/gen/*.conf)
for f in "${corpus[@]}"; do
        want=$(reference "$f")
        got=$("$MODEL_DUMP" conf "$f") || { fail "model-dump failed on $f"; continue; }
        if [ "$want" = REFUSED ] || [ "$got" = REFUSED ]; then
                if [ "$want" = "$got" ]; then pass; else
                        fail "$(basename "$f"): bash says '${want%%$'\n'*}', model says '${got%%$'\n'*}'"$'\n'"$(cat -A "$f")"
                fi
                continue
        fi
        expect_same_settings "$f" "$want" "$got"
done

finish
