#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
#
# assemble-rootfs.sh: unpacks the agent's run-time Debian packages into a
# directory, the way the image gets them, without a container engine.
#
# Usage: container/assemble-rootfs.sh [OPTIONS] ROOT
#   --without-base  leave out the packages container/runtime-packages.txt marks
#                   `base` and everything they depend on: the files the
#                   Containerfile copies onto its base image. Without this
#                   option ROOT gets them too and stands for the whole image.
#   --cache DIR     keep the downloaded .deb files in DIR and reuse them
#                   (default: a temporary directory, removed at exit)
#   --list FILE     the package list (default: runtime-packages.txt beside
#                   this script)
#
# The packages and their Depends/Pre-Depends closure (no Recommends) are
# resolved by apt as for an empty system, downloaded (hash-checked against the
# signed package lists) and unpacked with `dpkg-deb -x`: no maintainer script
# runs. Libraries end up under /usr (merged /usr); with the base packages, ROOT
# also gets the /lib, /lib64, /bin and /sbin links of a merged-/usr system.
# Documentation other than copyright files, manuals and translations are left
# out. Each package's control file goes to /var/lib/dpkg/status.d/PACKAGE, as
# in distroless images, so image scanners see what the image holds.
#
# Needs apt-get with current package lists (run `apt-get update` first) and
# dpkg-deb. Prints one line per unpacked package; exits 0, 1 on failure,
# 2 on a usage error.
set -euo pipefail
export LC_ALL=C

here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
prog=${0##*/}
list=$here/runtime-packages.txt
cache=
with_base=1

usage() {
        sed -n '4,29s/^# \{0,1\}//p' "${BASH_SOURCE[0]}" >&2
        exit 2
}
die() {
        printf '%s: %s\n' "$prog" "$*" >&2
        exit 1
}

while (($# > 0)); do
        case $1 in
        --without-base) with_base=0 ;;
        --cache)
                (($# >= 2)) || usage
                cache=$2
                shift
                ;;
        --list)
                (($# >= 2)) || usage
                list=$2
                shift
                ;;
        -h | --help) usage ;;
        -*) usage ;;
        *) break ;;
        esac
        shift
done
(($# == 1)) || usage
root=$1

command -v apt-get >/dev/null || die "apt-get is missing: this needs a Debian system"
command -v dpkg-deb >/dev/null || die "dpkg-deb is missing: this needs a Debian system"
[[ -r $list ]] || die "cannot read the package list '$list'"

tmp=$(mktemp -d "${TMPDIR:-/tmp}/$prog.XXXXXX")
trap 'rm -rf "$tmp"' EXIT
[[ -n $cache ]] || cache=$tmp/cache
mkdir -p "$cache/partial" "$root"

# PACKAGE ORIGIN lines; '#' starts a comment.
all=() base=()
while read -r pkg origin _; do
        [[ -n $pkg && $pkg != \#* ]] || continue
        case $origin in
        base) base+=("$pkg") ;;
        add) ;;
        *) die "$list: '$pkg' has origin '$origin', expected base or add" ;;
        esac
        all+=("$pkg")
done < <(sed 's/#.*//' "$list")
((${#all[@]} > 0)) || die "$list names no package"

# apt as on a system with nothing installed, touching none of the host's state:
# an empty dpkg status, no binary cache files, downloads only into $cache.
: >"$tmp/status"
apt_opts=(
        -o "Dir::State::status=$tmp/status"
        -o "Dir::Cache::archives=$cache"
        -o Dir::Cache::pkgcache= -o Dir::Cache::srcpkgcache=
        -o APT::Install-Recommends=false -o APT::Install-Suggests=false
        -o Debug::NoLocking=true
)

# closure PACKAGE...: "NAME VERSION ARCH" of everything apt would install.
closure() {
        # "Inst libgcc-s1 (12.2.0-14 Debian:12.11/stable [amd64]) []"
        apt-get -s -q "${apt_opts[@]}" install "$@" 2>"$tmp/apt.err" |
                sed -n 's/^Inst \([^ ]*\) (\([^ ]*\) [^[]*\[\([^]]*\)\]).*/\1 \2 \3/p' ||
                { cat "$tmp/apt.err" >&2 && return 1; }
}

closure "${all[@]}" >"$tmp/all" || die "apt cannot resolve ${all[*]} (run apt-get update?)"
[[ -s $tmp/all ]] || die "apt resolved nothing for ${all[*]}: $(cat "$tmp/apt.err") (run apt-get update?)"
: >"$tmp/base"
if ((with_base == 0 && ${#base[@]} > 0)); then
        closure "${base[@]}" >"$tmp/base" || die "apt cannot resolve ${base[*]}"
fi

# Download what the cache lacks; apt checks every file against the lists' hashes.
if ! apt-get -q -y "${apt_opts[@]}" --download-only install "${all[@]}" >"$tmp/download.log" 2>&1; then
        cat "$tmp/download.log" >&2
        die "downloading the packages failed (no network, or stale package lists: run apt-get update)"
fi

mkdir -p "$root/var/lib/dpkg/status.d"
count=0
while read -r name version arch; do
        if awk -v n="$name" '$1 == n { found = 1 } END { exit !found }' "$tmp/base"; then
                continue
        fi
        # apt names a cached file NAME_VERSION_ARCH.deb with ':' written as %3a.
        deb=$cache/${name}_${version//:/%3a}_${arch}.deb
        [[ -f $deb ]] || die "apt did not leave $deb"
        dpkg-deb -x "$deb" "$root"
        dpkg-deb -f "$deb" >"$root/var/lib/dpkg/status.d/$name"
        printf '%s: %s %s\n' "$prog" "$name" "$version"
        count=$((count + 1))
done <"$tmp/all"
((count > 0)) || die "nothing to unpack"

# Merged /usr: whatever the base image's layout, files under /usr reach the
# loader (Debian's ld.so searches /lib/<triplet> and /usr/lib/<triplet>).
for d in bin sbin lib lib64; do
        if [[ -d $root/$d && ! -L $root/$d ]]; then
                mkdir -p "$root/usr/$d"
                cp -a "$root/$d/." "$root/usr/$d/"
                rm -rf "${root:?}/$d"
        fi
        if ((with_base)); then
                mkdir -p "$root/usr/$d"
                ln -sfn "usr/$d" "$root/$d"
        fi
done

# Only the copyright files of the documentation: the image needs no more.
if [[ -d $root/usr/share/doc ]]; then
        find "$root/usr/share/doc" ! -type d ! -name copyright -delete
        find "$root/usr/share/doc" -depth -type d -empty -delete
fi
rm -rf "$root/usr/share/man" "$root/usr/share/info" "$root/usr/share/lintian" "$root/usr/share/locale"
printf '%s: %d packages unpacked into %s\n' "$prog" "$count" "$root"
