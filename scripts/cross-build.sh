#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
#
# Builds the agent for another Debian architecture with Debian's cross
# toolchain, and runs the unit tests under qemu-user:
#
#   scripts/cross-build.sh arm64            (GB200 nodes are arm64)
#
# 1. scripts/setup-deps.sh --cross ARCH: crossbuild-essential-ARCH,
#    qemu-user-static and the -dev libraries of ARCH (multiarch);
# 2. ./configure --host=TRIPLET --enable-werror in build-cross/ARCH/, make;
# 3. checks that the programs are ARCH executables;
# 4. make check with the unit tests only, each run by qemu-ARCH-static
#    (automake's LOG_COMPILER). The integration tests are left out: they run
#    the agent and its helper programs directly, which needs binfmt_misc.
#
# Prints the time of each step. Exits 1 when a step or a test fails.
set -euo pipefail

usage() {
        sed -n '4,17s/^# \{0,1\}//p' "${BASH_SOURCE[0]}"
}

case ${1-} in
arm64)
        arch=arm64
        triplet=aarch64-linux-gnu
        qemu="qemu-aarch64-static"
        machine=AArch64 # readelf -h's Machine: line
        ;;
-h | --help)
        usage
        exit 0
        ;;
*)
        echo "cross-build: usage: cross-build.sh arm64 (the only architecture it knows)" >&2
        exit 2
        ;;
esac

top=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
cd "$top"
started=$SECONDS
step() {
        printf '+ [%4ss] %s\n' "$((SECONDS - started))" "$*"
}

step "scripts/setup-deps.sh --cross $arch"
bash scripts/setup-deps.sh --cross "$arch" </dev/null

if [[ ! -x configure || configure.ac -nt configure || Makefile.am -nt configure ]]; then
        step "autoreconf -fi"
        autoreconf -fi
fi

dir=$top/build-cross/$arch
mkdir -p "$dir"
cd "$dir"
if [[ ! -f Makefile ]]; then
        step "configure --host=$triplet --enable-werror"
        "$top/configure" --quiet --host="$triplet" --enable-werror
fi

step "make"
make -j"$(nproc)" --quiet

step "make check TESTS= (builds the test programs, runs none)"
make -j"$(nproc)" --quiet check TESTS= >/dev/null

# What was built is for ARCH, not for this machine.
for p in aicr-enroot-agent aicr-enroot-agentd aicr-enroot-rollout tests/unit/test-document; do
        got=$("$triplet-readelf" -h "$p" | sed -n 's/^ *Machine: *//p')
        if [[ $got != "$machine" ]]; then
                echo "cross-build: $p is built for '$got', not $machine" >&2
                exit 1
        fi
done
echo "cross-build: aicr-enroot-agent, aicr-enroot-agentd, aicr-enroot-rollout and the tests are $machine executables"

# The unit tests find ARCH's dynamic loader and libraries where multiarch put
# them (/lib/ld-linux-aarch64.so.1, /usr/lib/aarch64-linux-gnu). Not through
# QEMU_LD_PREFIX (qemu -L): with it, qemu 7.2's fork() children hang.
unset QEMU_LD_PREFIX
step "make check TESTS='\$(unit_tests)' LOG_COMPILER=$qemu"
# make expands $(unit_tests), the list in Makefile.am.
# shellcheck disable=SC2016
if ! make -j"$(nproc)" check TESTS='$(unit_tests)' LOG_COMPILER="$qemu"; then
        find tests/unit -name '*.log' -newer Makefile -exec grep -l -E '^(FAIL|ERROR)' {} + |
                while read -r log; do
                        echo "======== $log"
                        cat "$log"
                done
        step "FAILED"
        exit 1
fi
step "done: the $arch build and its unit tests under $qemu passed"
