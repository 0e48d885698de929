#!/bin/bash
# SPDX-License-Identifier: Apache-2.0
# systemd/aicr-enroot-agent.service.in as `make install` writes it (ExecStart
# pointing at the binary under test): `systemd-analyze verify` finds nothing
# to complain about, `systemd-analyze security --offline=yes` rates its
# exposure at 2.0 or lower and README.md states that same level, the service
# is Type=notify with a watchdog and a restart policy, and the options of
# systemd/aicr-enroot-agent.default are options the agent accepts.
. "$(dirname "$0")/lib.sh"

command -v systemd-analyze >/dev/null ||
        skip no-systemd-analyze "systemd-analyze is missing (scripts/setup-deps.sh installs systemd)"
# verify refuses a unit whose ExecReload= command is missing
[ -x /bin/kill ] || skip no-kill "/bin/kill is missing (scripts/setup-deps.sh installs procps): the unit's ExecReload= cannot be verified"
in=$TOP_SRCDIR/systemd/aicr-enroot-agent.service.in
defaults=$TOP_SRCDIR/systemd/aicr-enroot-agent.default
unit=$WORK/aicr-enroot-agent.service
sed -e "s|@bindir@|$(dirname "$AGENT")|g" -e 's|@sysconfdir@|/etc|g' "$in" >"$unit"
grep -q '@[a-z]*@' "$unit" && fail "unsubstituted @variables@ left: $(grep -o '@[a-z]*@' "$unit" | sort -u)" || pass

# verify: exit 0 and not a word of warning
out=$(cd "$WORK" && systemd-analyze verify "$unit" 2>&1) && rc=0 || rc=$?
[ "$rc" -eq 0 ] && [ -z "$out" ] && pass || fail "systemd-analyze verify (exit $rc): $out"

# the properties the issue asks for
for want in 'Type=notify' 'WatchdogSec=' 'Restart=on-failure' 'ExecReload=/bin/kill -HUP \$MAINPID' 'NoNewPrivileges=yes' 'ProtectSystem=strict' \
        'CapabilityBoundingSet=$' 'SystemCallFilter=@system-service' 'MemoryDenyWriteExecute=yes' 'LimitCORE=0'; do
        grep -q "^$want" "$unit" && pass || fail "the unit lacks $want"
done

# exposure: at most 2.0, and README.md says what it is
out=$(cd "$WORK" && systemd-analyze security --offline=yes --no-pager "$unit" 2>&1) || true
level=$(sed -n 's/.*Overall exposure level for aicr-enroot-agent\.service: \([0-9.]*\).*/\1/p' <<<"$out")
if [ -z "$level" ]; then
        fail "systemd-analyze security printed no exposure level: $(tail -n 3 <<<"$out")"
else
        printf '%s: exposure level %s\n' "$TEST_NAME" "$level"
        awk -v l="$level" 'BEGIN { exit !(l <= 2.0) }' && pass ||
                fail "exposure level $level is above 2.0: $(grep '✗' <<<"$out")"
        grep -q "exposure level $level\b" "$TOP_SRCDIR/README.md" && pass ||
                fail "README.md does not state the exposure level $level"
fi

# the default options: accepted by the agent, in EnvironmentFile syntax
# (comments and NAME=VALUE lines only)
bad=$(grep -vE '^(#.*|[A-Za-z_][A-Za-z0-9_]*=.*|)$' "$defaults" || true)
[ -z "$bad" ] && pass || fail "aicr-enroot-agent.default has lines systemd would not read: $bad"
opts=$(
        # shellcheck disable=SC1090
        . "$defaults"
        printf '%s' "${AICR_ENROOT_AGENT_OPTS:-}"
)
[ -n "$opts" ] && pass || fail "aicr-enroot-agent.default sets no AICR_ENROOT_AGENT_OPTS"
# shellcheck disable=SC2086 # split like systemd splits $VAR in ExecStart=
expect_status 0 "$AGENT" $opts --check-config

finish
