#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
#
# Installs the Debian packages this project needs, from the lists below (the
# only lists of them):
#
#   scripts/setup-deps.sh --build   building the agent: compiler, autotools,
#                                   pkg-config and the -dev libraries
#   scripts/setup-deps.sh --demo    --build, and what scripts/demo.sh runs
#   scripts/setup-deps.sh [--all]   everything: --demo, and the test suite's,
#                                   CI's and the benchmarks' tools (default)
#   scripts/setup-deps.sh --cross ARCH
#                                   building for the Debian architecture ARCH
#                                   (arm64) and running its unit tests under
#                                   qemu-user (scripts/cross-build.sh); adds ARCH
#                                   to dpkg's architectures when it is missing
#
# Does nothing (quickly) when every package is already installed. Runs apt-get
# as root, through sudo when not root. Recommends are left out: they would add
# services (prometheus-node-exporter) and debug packages.
set -euo pipefail

usage() {
        sed -n '4,17s/^# \{0,1\}//p' "${BASH_SOURCE[0]}"
}

# The libraries the agent links, as -dev packages (also for --cross ARCH).
lib_packages=(
        libsystemd-dev libcurl4-openssl-dev libjansson-dev libmicrohttpd-dev libssl-dev
)
# Building the agent (./configure && make).
build_packages=(
        build-essential autoconf automake pkg-config
        "${lib_packages[@]}"
)
# scripts/demo.sh, beyond the build: it reads /metrics and /status.
demo_packages=(
        curl jq
)
# The test suite (scripts/test.sh, .ci/run), the benchmarks and CI.
test_packages=(
        libcmocka-dev bash valgrind cppcheck clang-format
        xz-utils                 # make dist(check)
        jq                       # integration tests check the JSON output
        curl util-linux openssl  # tests talk HTTP(S), unshare mount namespaces, make a test CA
        procps                   # kill(1): systemd-analyze verify checks the unit's ExecReload
        clang libclang-rt-14-dev # ASan/UBSan and libFuzzer runtimes
        llvm                     # llvm-symbolizer: sanitizer reports with file:line
        prometheus               # for promtool, which checks the metrics output
        nodejs                   # the offline checks of container/kubernetes/; the h2 fake API server
        systemd                  # systemd-analyze verify/security on the unit
        # benchmarks (make bench) and hardening tests: peers and measuring tools
        inotify-tools            # inotifywait, the detection-latency peer
        wrk hyperfine time       # load, start-up timing, peak memory (/usr/bin/time)
        prometheus-node-exporter # the scrape and footprint peer (its service is disabled below)
        # a real multi-node Slurm on this machine (tests/tools/slurm-cluster.sh)
        slurmctld slurmd slurm-client munge
)

set_name=all
cross_arch=
case ${1-} in
--build) set_name=build ;;
--demo) set_name=demo ;;
--cross)
        set_name=cross
        cross_arch=${2-}
        [[ $cross_arch =~ ^[a-z0-9]+$ ]] || { usage >&2; exit 2; }
        shift
        ;;
"" | --all) ;;
-h | --help)
        usage
        exit 0
        ;;
*)
        echo "setup-deps: unknown option '$1'" >&2
        usage >&2
        exit 2
        ;;
esac
(($# <= 1)) || { usage >&2; exit 2; }

native_arch=$(dpkg --print-architecture)
packages=("${build_packages[@]}")
case $set_name in
demo) packages+=("${demo_packages[@]}") ;;
all)
        packages+=("${demo_packages[@]}" "${test_packages[@]}")
        # npm installs the manifest checks' packages (scripts/setup-node-deps.sh). A
        # nodejs from outside Debian brings its own npm and conflicts with Debian's.
        command -v npm >/dev/null || packages+=(npm)
        # kubectl, for the documented commands (test-docs.sh): Debian's
        # kubernetes-client where no other kubectl is installed (another
        # package's /usr/bin/kubectl would conflict with it).
        command -v kubectl >/dev/null || packages+=(kubernetes-client)
        ;;
cross)
        # Debian's cross compiler, qemu-user for the unit tests, and the
        # libraries (and cmocka) of ARCH beside the native ones (multiarch);
        # pkgconf:ARCH brings TRIPLET-pkg-config, which reads ARCH's .pc files;
        # promtool (prometheus) checks the metrics the ARCH build renders.
        packages+=("crossbuild-essential-$cross_arch" qemu-user-static bash prometheus)
        for p in pkgconf "${lib_packages[@]}" libcmocka-dev; do
                packages+=("$p:$cross_arch")
        done
        ;;
esac
# One entry per package, in the order first listed.
mapfile -t packages < <(printf '%s\n' "${packages[@]}" | awk '!seen[$0]++')

# dpkg-query prints the installed ones as NAME:ARCH and complains about the
# unknown ones. A name without :ARCH means the native architecture (or all).
installed=$(dpkg-query -W -f='${Package}:${Architecture} ${db:Status-Status}\n' "${packages[@]}" \
        2>/dev/null | awk '$2 == "installed" { print $1 }' || true)
missing=()
for p in "${packages[@]}"; do
        if [[ $p == *:* ]]; then
                grep -qxF -- "$p" <<<"$installed" || missing+=("$p")
        else
                grep -qxF -e "$p:$native_arch" -e "$p:all" <<<"$installed" || missing+=("$p")
        fi
done

if ((${#missing[@]} == 0)); then
        echo "setup-deps: all ${#packages[@]} packages ($set_name) are installed"
        exit 0
fi

sudo=()
if ((EUID != 0)); then
        if ! command -v sudo >/dev/null; then
                echo "setup-deps: missing packages: ${missing[*]}" >&2
                echo "setup-deps: run this script as root (or install sudo)" >&2
                exit 1
        fi
        sudo=(sudo)
fi

echo "setup-deps: installing ($set_name) ${missing[*]}"
if [[ -n $cross_arch && $cross_arch != "$native_arch" ]] &&
        ! dpkg --print-foreign-architectures | grep -qxF "$cross_arch"; then
        echo "setup-deps: adding the $cross_arch architecture to dpkg (multiarch)"
        "${sudo[@]}" dpkg --add-architecture "$cross_arch"
fi
"${sudo[@]}" env DEBIAN_FRONTEND=noninteractive apt-get update -q </dev/null
"${sudo[@]}" env DEBIAN_FRONTEND=noninteractive \
        apt-get install -y -q --no-install-recommends "${missing[@]}" </dev/null

# Only promtool is wanted from the prometheus package: do not leave a Prometheus
# server running and enabled at boot because this script installed it.
if [[ " ${missing[*]} " == *" prometheus "* ]] && [[ -d /run/systemd/system ]]; then
        "${sudo[@]}" systemctl disable --now prometheus.service >/dev/null 2>&1 || true
        echo "setup-deps: disabled the prometheus service (only promtool is used)"
fi
# node_exporter is only a benchmark peer, started by the benchmarks on a port of
# their own: its packaged service must not hold :9100 (the agent's default
# port) nor run at boot, under systemd or a SysV init alike.
if [[ " ${missing[*]} " == *" prometheus-node-exporter "* ]]; then
        if [[ -d /run/systemd/system ]]; then
                "${sudo[@]}" systemctl disable --now prometheus-node-exporter.service >/dev/null 2>&1 || true
        elif [[ -x /etc/init.d/prometheus-node-exporter ]]; then
                "${sudo[@]}" /etc/init.d/prometheus-node-exporter stop >/dev/null 2>&1 || true
                "${sudo[@]}" update-rc.d prometheus-node-exporter disable >/dev/null 2>&1 || true
        fi
        echo "setup-deps: disabled the prometheus-node-exporter service (only the benchmarks run it)"
fi
# tests/tools/slurm-cluster.sh runs its own munged and Slurm daemons under a
# test directory: leave none of the packaged ones enabled or running. slurmd
# and slurmctld do not start without /etc/slurm/slurm.conf; munge does.
slurm_units=()
for unit in munge slurmd slurmctld; do
        [[ " ${missing[*]} " == *" $unit "* ]] && slurm_units+=("$unit")
done
if ((${#slurm_units[@]})); then
        if [[ -d /run/systemd/system ]]; then
                "${sudo[@]}" systemctl disable --now "${slurm_units[@]}" >/dev/null 2>&1 || true
        else
                for unit in "${slurm_units[@]}"; do
                        "${sudo[@]}" update-rc.d "$unit" disable >/dev/null 2>&1 || true
                done
                # by its pid file: the test clusters' munged have their own
                if [[ " ${slurm_units[*]} " == *" munge "* && -x /etc/init.d/munge ]]; then
                        "${sudo[@]}" /etc/init.d/munge stop >/dev/null 2>&1 || true
                fi
        fi
        echo "setup-deps: disabled the ${slurm_units[*]} services (the Slurm tests run their own)"
fi
