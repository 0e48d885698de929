#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
#
# The layers are enforced by the build (docs/DESIGN.md, "Layers"): each
# folder under agent/ is compiled seeing only its own and lower layers'
# include folders. Here a scratch copy of the source tree is configured, and
# one source file of each layer is given an include of a header from each
# layer it must not see: every such object must fail to compile, naming the
# header. The same objects, unmodified, must compile (so a failure is the
# include's, not the scratch build's).
source "$(dirname "$0")/lib.sh"

# What each layer may see, lowest first; the same rule as Makefile.am's
# LAYER_CPPFLAGS_* and the diagram in docs/DESIGN.md.
layers=(basic model io cli daemon rollout)
declare -A sees=(
        [basic]="basic"
        [model]="basic model"
        [io]="basic model io"
        [cli]="basic model io cli"
        [daemon]="basic model io cli daemon"
        [rollout]="basic model io rollout"
)

src=$WORK/src
mkdir -p "$src" "$WORK/build"
# cp -p: Makefile.in must stay newer than what it is made from, or make
# would try to run automake in the copy.
for f in configure configure.ac aclocal.m4 Makefile.am Makefile.in config.h.in build-aux agent include; do
        cp -pR "$TOP_SRCDIR/$f" "$src/"
done
chmod -R u+w "$src"
if ! (cd "$WORK/build" && "$src/configure" --quiet >"$WORK/configure.log" 2>&1); then
        fail "configure of a scratch copy failed: $(tail -5 "$WORK/configure.log")"
        finish
        exit
fi

# compile LAYER FILE: make the object of agent/LAYER/FILE; output in $WORK/cc.log
compile() {
        local obj="agent/$1/lib$1_a-${2%.c}.o"
        rm -f "$WORK/build/$obj"
        make -s -C "$WORK/build" "$obj" >"$WORK/cc.log" 2>&1
}

for layer in "${layers[@]}"; do
        # the first source file of the layer, in name order
        file=$(cd "$src/agent/$layer" && ls -- *.c | grep -v -e '^main\.c$' -e '^front\.c$' | head -1)
        orig=$WORK/orig.c
        cp -p "$src/agent/$layer/$file" "$orig"

        if compile "$layer" "$file"; then
                pass
        else
                fail "agent/$layer/$file does not compile unmodified in a scratch copy: $(head -c 600 "$WORK/cc.log")"
                continue
        fi

        for other in "${layers[@]}"; do
                [[ " ${sees[$layer]} " == *" $other "* ]] && continue
                header=$(cd "$src/include/$other" && ls -- *.h | head -1)
                { sed -n 1p "$orig"; printf '#include "%s"\n' "$header"; sed 1d "$orig"; } \
                        >"$src/agent/$layer/$file"
                if compile "$layer" "$file"; then
                        fail "agent/$layer/$file compiled with #include \"$header\" from include/$other/: $layer must not see $other"
                elif grep -q -e "$header: No such file" -e "'$header' file not found" "$WORK/cc.log"; then
                        pass
                else
                        fail "agent/$layer/$file with #include \"$header\" failed, but not for the header: $(head -c 600 "$WORK/cc.log")"
                fi
        done
        cp -p "$orig" "$src/agent/$layer/$file"
done

finish
