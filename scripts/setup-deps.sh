#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
#
# Installs the Debian packages that building, testing and CI need: the one list
# of them. Does nothing (quickly) when every package is already installed.
# Runs apt-get as root, through sudo when not root. Recommends are left out:
# they would add services (prometheus-node-exporter) and debug packages.
set -euo pipefail

packages=(
        # build
        build-essential autoconf automake pkg-config xz-utils # xz: make dist(check)
        libsystemd-dev libcurl4-openssl-dev libjansson-dev libmicrohttpd-dev libssl-dev
        # tests and CI cells
        libcmocka-dev bash valgrind cppcheck clang-format
        jq                       # integration tests check the JSON output
        curl util-linux openssl  # tests talk HTTP(S), unshare mount namespaces, make a test CA
        clang libclang-rt-14-dev # ASan/UBSan and libFuzzer runtimes
        llvm                     # llvm-symbolizer: sanitizer reports with file:line
        prometheus               # for promtool, which checks the metrics output
        nodejs                   # the offline checks of container/kubernetes/
        systemd                  # systemd-analyze verify/security on the unit
)
# npm installs the manifest checks' packages (scripts/setup-node-deps.sh). A
# nodejs from outside Debian brings its own npm and conflicts with Debian's.
command -v npm >/dev/null || packages+=(npm)

# dpkg-query prints the installed ones and complains about the unknown ones.
installed=$(dpkg-query -W -f='${Package} ${db:Status-Status}\n' "${packages[@]}" 2>/dev/null |
        awk '$2 == "installed" { print $1 }' || true)
missing=()
for p in "${packages[@]}"; do
        grep -qxF -- "$p" <<<"$installed" || missing+=("$p")
done

if ((${#missing[@]} == 0)); then
        echo "setup-deps: all ${#packages[@]} packages are installed"
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

echo "setup-deps: installing ${missing[*]}"
"${sudo[@]}" env DEBIAN_FRONTEND=noninteractive apt-get update -q </dev/null
"${sudo[@]}" env DEBIAN_FRONTEND=noninteractive \
        apt-get install -y -q --no-install-recommends "${missing[@]}" </dev/null

# Only promtool is wanted from the prometheus package: do not leave a Prometheus
# server running and enabled at boot because this script installed it.
if [[ " ${missing[*]} " == *" prometheus "* ]] && [[ -d /run/systemd/system ]]; then
        "${sudo[@]}" systemctl disable --now prometheus.service >/dev/null 2>&1 || true
        echo "setup-deps: disabled the prometheus service (only promtool is used)"
fi
