#!/bin/bash
# SPDX-License-Identifier: Apache-2.0
# The sidecar daemon, aicr-enroot-agentd, links no Slurm and no rollout code:
# that is the operator's tool, aicr-enroot-rollout. The forbidden symbols are
# not a list kept here but derived, so that the check stays true as code
# moves between files and layers:
#   - every function the rollout and Slurm headers declare (include/rollout/,
#     and include/*/slurm*.h and include/*/rollout*.h in any layer);
#   - every global symbol the rollout layer's library defines;
#   - every global symbol defined by an object whose file name starts with
#     slurm or rollout, in any layer's library (agent/*/lib*.a);
#   - any symbol named with the prefix of one of those headers (slurm_,
#     rollout_).
# The same derivation run on aicr-enroot-rollout must find them there: a
# derivation that finds nothing cannot pass.
. "$(dirname "$0")/lib.sh"

build=$(dirname "$AGENT")
daemon=$build/aicr-enroot-agentd
rollout=$build/aicr-enroot-rollout
command -v nm >/dev/null || { fail "nm is missing (binutils, which the compiler needs)"; finish; }
[ -x "$daemon" ] && pass || { fail "no $daemon"; finish; }
[ -x "$rollout" ] && pass || { fail "no $rollout"; finish; }

# --- the forbidden names --------------------------------------------------------
shopt -s nullglob
headers=("$TOP_SRCDIR"/include/rollout/*.h "$TOP_SRCDIR"/include/*/slurm*.h "$TOP_SRCDIR"/include/*/rollout*.h)
shopt -u nullglob
((${#headers[@]} > 0)) && pass || fail "no rollout or Slurm header under $TOP_SRCDIR/include"
# A declaration starts a line with its type; the first lower-case name
# followed by "(" is the function's (macros are upper case, bodies indented).
for h in "${headers[@]}"; do
        sed -n 's/^[A-Za-z_][^#(]*[^A-Za-z0-9_(]\([a-z_][a-z0-9_]*\)(.*/\1/p' "$h"
done | sort -u >"$WORK/declared"
# The headers' prefixes: slurm.h gives slurm_, rollout-cmd.h gives rollout_.
for h in "${headers[@]}"; do
        b=$(basename "$h" .h)
        printf '%s_\n' "${b%%-*}"
done | sort -u >"$WORK/prefixes"

# defined global symbols of an archive's members: "MEMBER SYMBOL", MEMBER
# without the prefix automake gives an object built with its library's own
# flags (libmodel_a-slurm.o is slurm.o)
archive_defs() {
        nm -A -P --defined-only -g "$1" |
                sed -n 's/^.*\[\(lib[a-z0-9]*_a-\)\{0,1\}\([^]]*\)\]: \([^ ]*\) .*$/\2 \3/p'
}
librollout=$build/agent/rollout/librollout.a
[ -f "$librollout" ] && pass || fail "no $librollout"
archive_defs "$librollout" | awk '{ print $2 }' >"$WORK/library"
[ -s "$WORK/library" ] && pass || fail "nm finds no symbol in $librollout"
: >"$WORK/objects"
for a in "$build"/agent/*/lib*.a; do
        archive_defs "$a" | awk '$1 ~ /^(slurm|rollout)/ { print $2 }' >>"$WORK/objects"
done
[ -s "$WORK/objects" ] && pass || fail "no object named slurm* or rollout* in $build/agent/*/lib*.a"
sort -u "$WORK/declared" "$WORK/library" "$WORK/objects" >"$WORK/forbidden"

# forbidden_in BINARY: the forbidden symbols BINARY defines, one a line
forbidden_in() {
        nm --defined-only "$1" | awk '{ print $NF }' | sed 's/@.*//' | sort -u >"$WORK/defined"
        {
                comm -12 "$WORK/forbidden" "$WORK/defined"
                awk 'NR == FNR { p[$0] = 1; next }
                     { for (x in p) if (index($0, x) == 1) { print; next } }' "$WORK/prefixes" "$WORK/defined"
        } | sort -u
}

# --- the control: the rollout program has them ------------------------------------
forbidden_in "$rollout" >"$WORK/in-rollout"
for want in cmd_rollout rollout_run slurm_client_new; do
        grep -qx "$want" "$WORK/in-rollout" && pass ||
                fail "the derived list misses $want, which aicr-enroot-rollout defines: the check would see nothing"
done

# --- the daemon has none ------------------------------------------------------------
forbidden_in "$daemon" >"$WORK/in-daemon"
[ ! -s "$WORK/in-daemon" ] && pass ||
        fail "aicr-enroot-agentd links Slurm or rollout code: $(head -n 20 "$WORK/in-daemon" | tr '\n' ' ')"
finish
