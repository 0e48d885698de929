#!/bin/bash
# SPDX-License-Identifier: Apache-2.0
# The lint and diff commands as a user runs them: exit codes, golden output,
# JSON that parses, and a clear message for every kind of bad input.
. "$(dirname "$0")/lib.sh"

json_ok() {
        # jq is installed by the setup script; without it this check cannot run.
        command -v jq >/dev/null || skip no-jq "jq is not installed (scripts/setup-deps.sh installs it)"
        jq -e . "$1" >/dev/null 2>&1
}

# --- the program itself -----------------------------------------------------
expect_status 0 "$AGENT" --version
grep -q '^aicr-enroot-agent [0-9]' "$WORK/out" && pass || fail "--version prints no version"
expect_status 0 "$AGENT" --help
expect_status 2 "$AGENT"
expect_status 2 "$AGENT" frobnicate
grep -q 'unknown command or argument "frobnicate"' "$WORK/err" && pass || fail "unknown command not named"

# --- the front end: --check with libc alone, the rest in aicr-enroot-agentd ----
# kubelet execs the probe every period in every pod: it must not load the
# daemon's libraries (a sanitizer build adds its runtime, nothing else).
full=$(dirname "$AGENT")/aicr-enroot-agentd
[ -x "$full" ] && pass || fail "no aicr-enroot-agentd beside $AGENT"
needed=$(readelf -d "$AGENT" | sed -n 's/.*(NEEDED).*\[\(.*\)\]$/\1/p' |
        grep -vE '^(libc\.so\.6|lib(a|ub)san\.so\.[0-9]+|libm\.so\.6|libgcc_s\.so\.1|libstdc\+\+\.so\.6)$' || true)
[ -z "$needed" ] && pass || fail "aicr-enroot-agent (the probe) links more than libc: $needed"
# an installed layout: $prefix/bin and $prefix/libexec/aicr-enroot-agent
mkdir -p "$WORK/prefix/bin" "$WORK/prefix/libexec/aicr-enroot-agent"
cp "$AGENT" "$WORK/prefix/bin/aicr-enroot-agent"
expect_status 2 "$WORK/prefix/bin/aicr-enroot-agent" --version
grep -q 'Cannot find aicr-enroot-agentd, the program that runs every command but --check' "$WORK/err" &&
        pass || fail "a missing aicr-enroot-agentd is not named: $(cat "$WORK/err")"
expect_status 1 "$WORK/prefix/bin/aicr-enroot-agent" --check --listen 127.0.0.1:1
grep -q '^not ready: cannot connect to 127.0.0.1:1' "$WORK/out" && pass ||
        fail "--check without aicr-enroot-agentd: $(cat "$WORK/out" "$WORK/err")"
cp "$full" "$WORK/prefix/libexec/aicr-enroot-agent/aicr-enroot-agentd"
expect_status 0 "$WORK/prefix/bin/aicr-enroot-agent" --version
grep -q '^aicr-enroot-agent [0-9]' "$WORK/out" && pass || fail "--version through libexec printed: $(cat "$WORK/out")"
# rollout is aicr-enroot-rollout, found the same way; the daemon's program
# has none of it and says where it is.
rollout_prog=$(dirname "$AGENT")/aicr-enroot-rollout
[ -x "$rollout_prog" ] && pass || fail "no aicr-enroot-rollout beside $AGENT"
expect_status 2 "$WORK/prefix/bin/aicr-enroot-agent" rollout --help
grep -q 'Cannot find aicr-enroot-rollout, the program that runs rollout' "$WORK/err" && pass ||
        fail "a missing aicr-enroot-rollout is not named: $(cat "$WORK/err")"
expect_status 2 "$full" rollout --help
grep -q 'rollout is the program aicr-enroot-rollout: run "aicr-enroot-agent rollout"' "$WORK/err" &&
        pass || fail "aicr-enroot-agentd rollout does not say where rollout is: $(cat "$WORK/err")"
cp "$rollout_prog" "$WORK/prefix/libexec/aicr-enroot-agent/aicr-enroot-rollout"
expect_status 0 "$WORK/prefix/bin/aicr-enroot-agent" rollout --help
grep -q '^Usage: aicr-enroot-agent rollout' "$WORK/out" && pass ||
        fail "rollout --help through libexec printed: $(cat "$WORK/out")"
# the arguments from "rollout" on: getopt names the command as before
expect_status 2 "$WORK/prefix/bin/aicr-enroot-agent" rollout --frobnicate
grep -q "^rollout: unrecognized option '--frobnicate'" "$WORK/err" && pass ||
        fail "rollout --frobnicate through libexec: $(cat "$WORK/err")"
chmod a-x "$WORK/prefix/libexec/aicr-enroot-agent/aicr-enroot-agentd"
if [ "$(id -u)" -ne 0 ] || ! "$WORK/prefix/libexec/aicr-enroot-agent/aicr-enroot-agentd" --version >/dev/null 2>&1; then
        expect_status 2 "$WORK/prefix/bin/aicr-enroot-agent" lint /dev/null
        grep -q 'Cannot run .*/aicr-enroot-agentd: Permission denied' "$WORK/err" && pass ||
                fail "an unrunnable aicr-enroot-agentd is not named: $(cat "$WORK/err")"
fi

# --- lint: golden output for every rule --------------------------------------
cd "$TEST_DATA_DIR/lint"
for f in *.conf *.env; do
        want=0
        grep -q ': error\[' "$f.expected" && want=1
        expect_status "$want" "$AGENT" lint --job-scoped UCX_TLS "$f"
        expect_file_eq "$f.expected" "$WORK/out" "lint $f"
done

# A line enroot skips inside a value quoted across lines starts with part of
# the value (here a stand-in for a password): never named; and no control
# byte of a file reaches the terminal, in text or JSON.
for fmt in text json; do
        expect_status 0 "$AGENT" lint --format "$fmt" not-a-key.conf
        if grep -q 'hunter2' "$WORK/out" || LC_ALL=C grep -q '[[:cntrl:]]' <(tr -d '\n' <"$WORK/out"); then
                fail "lint --format $fmt quotes a value or prints a control byte: $(cat -v "$WORK/out")"
        else pass; fi
done

# --strict turns warnings into a failure
expect_status 0 "$AGENT" lint export.conf
expect_status 1 "$AGENT" lint --strict export.conf
expect_status 0 "$AGENT" lint --strict clean.conf clean.env

# several files at once, errors from any of them
expect_status 1 "$AGENT" lint clean.conf crlf.conf clean.env
grep -q '^crlf.conf:1: error\[carriage-return\]' "$WORK/out" && pass || fail "multi-file lint"

# JSON
expect_status 1 "$AGENT" lint --format json clean.conf syntax-quote.conf dropped-line.env
json_ok "$WORK/out" && pass || fail "lint --format json is not JSON: $(head -c 300 "$WORK/out")"
[ "$(jq '.errors' "$WORK/out")" = 1 ] && [ "$(jq '.files | length' "$WORK/out")" = 3 ] &&
        [ "$(jq -r '.files[1].findings[0].id' "$WORK/out")" = syntax ] && pass ||
        fail "lint JSON content: $(cat "$WORK/out")"

# standard input needs a type
expect_status 1 "$AGENT" lint --type conf - <syntax-quote.conf
grep -q '^-:2: error\[syntax\]' "$WORK/out" && pass || fail "lint - (stdin)"
expect_status 2 "$AGENT" lint - <clean.conf
grep -q 'use --type' "$WORK/err" && pass || fail "lint - without --type gives no hint"

# --- lint: bad input gets a clear message and exit 2 -------------------------
expect_status 2 "$AGENT" lint "$WORK/missing.conf"
grep -q "Cannot read \"$WORK/missing.conf\": No such file" "$WORK/err" && pass ||
        fail "missing file message: $(cat "$WORK/err")"
cp clean.conf "$WORK/notype.txt"
expect_status 2 "$AGENT" lint "$WORK/notype.txt"
grep -q -- '--type conf or --type env' "$WORK/err" && pass || fail "unknown type message"
expect_status 0 "$AGENT" lint --type conf "$WORK/notype.txt"
expect_status 2 "$AGENT" lint --type yaml clean.conf
grep -q -- '--type: "yaml" is not conf or env' "$WORK/err" && pass || fail "bad --type message"
expect_status 2 "$AGENT" lint --format xml clean.conf
grep -q -- '--format: "xml"' "$WORK/err" && pass || fail "bad --format message"
expect_status 2 "$AGENT" lint --no-such-option clean.conf
expect_status 2 "$AGENT" lint
mkdir "$WORK/dir.conf"
expect_status 2 "$AGENT" lint "$WORK/dir.conf"
grep -q 'Is a directory' "$WORK/err" && pass || fail "directory message: $(cat "$WORK/err")"
mkfifo "$WORK/fifo.conf"
expect_status 2 timeout 5 "$AGENT" lint "$WORK/fifo.conf"
chmod 000 "$WORK/notype.txt"
if [ "$(id -u)" -ne 0 ]; then
        expect_status 2 "$AGENT" lint --type conf "$WORK/notype.txt"
        grep -q 'Permission denied' "$WORK/err" && pass || fail "permission message"
fi
# over the size cap: a lint error that names the cap, and the file is not read
head -c 1048577 /dev/zero | tr '\0' '\n' >"$WORK/big.conf"
expect_status 1 "$AGENT" lint "$WORK/big.conf"
grep -q 'error\[too-large\].*1048576 bytes' "$WORK/out" && pass || fail "too-large: $(cat "$WORK/out")"
head -c 1048576 /dev/zero | tr '\0' '\n' >"$WORK/cap.conf"
expect_status 0 "$AGENT" lint "$WORK/cap.conf"

# --- lint --configmap ---------------------------------------------------------
cm="$TEST_DATA_DIR/configmap-cli/enroot-config.json"
expect_status 0 "$AGENT" lint --configmap "$cm"
grep -q '^slinky-slurm-enroot-config/enroot.conf:3: warning\[unknown-key\]' "$WORK/out" && pass ||
        fail "configmap lint: $(cat "$WORK/out")"
grep -q '^slinky-slurm-enroot-config/99-aicr-defaults.env:2: warning\[job-scoped\]' "$WORK/out" &&
        pass || fail "configmap env key not linted"
grep -q 'Skipping "slinky-slurm-enroot-config/README"' "$WORK/err" && pass ||
        fail "non-enroot key not reported: $(cat "$WORK/err")"
expect_status 1 "$AGENT" lint --strict --configmap - <"$cm"
printf '{"kind": "ConfigMap", "data": {"enroot.conf": 3' >"$WORK/broken.json"
expect_status 2 "$AGENT" lint --configmap "$WORK/broken.json"
grep -q "\"$WORK/broken.json\" is not a usable ConfigMap: .*line 1" "$WORK/err" && pass ||
        fail "broken ConfigMap message: $(cat "$WORK/err")"

# --- diff: golden output -----------------------------------------------------
cd "$TEST_DATA_DIR/diff"
for dir in */; do
        dir=${dir%/}
        set -- "$dir"/desired.* "$dir"/running.*
        want=$(cat "$dir/expected-status")
        expect_status "$want" "$AGENT" diff "$1" "$2"
        expect_file_eq "$dir/expected.txt" "$WORK/out" "diff $dir"
        expect_status "$want" "$AGENT" diff --show-values "$1" "$2"
        expect_file_eq "$dir/expected-values.txt" "$WORK/out" "diff --show-values $dir"
        expect_status "$want" "$AGENT" diff --format json "$1" "$2"
        json_ok "$WORK/out" && pass || fail "diff --format json $dir is not JSON"
done

# values only with --show-values
printf 'https_proxy=http://u:s3cr3t@p\n' >"$WORK/a.conf"
printf 'https_proxy=http://u:other@p\n' >"$WORK/b.conf"
expect_status 1 "$AGENT" diff "$WORK/a.conf" "$WORK/b.conf"
expect_status 1 "$AGENT" diff --format json "$WORK/a.conf" "$WORK/b.conf"
! grep -q s3cr3t "$WORK/out" && pass || fail "diff printed a value without --show-values"
expect_status 1 "$AGENT" diff --format json --show-values "$WORK/a.conf" "$WORK/b.conf"
[ "$(jq -r '.keys[0].desired.value' "$WORK/out")" = "http://u:s3cr3t@p" ] && pass ||
        fail "diff --show-values JSON lacks the value"

# bad input
expect_status 2 "$AGENT" diff conf-drift/desired.conf
expect_status 2 "$AGENT" diff conf-drift/desired.conf "$WORK/missing.conf"
grep -q "Cannot read \"$WORK/missing.conf\"" "$WORK/err" && pass || fail "diff missing file"
expect_status 2 "$AGENT" diff conf-drift/desired.conf env-drift/running.env
grep -q -- '--type' "$WORK/err" && pass || fail "diff of mixed types gives no hint"
expect_status 2 "$AGENT" diff "$WORK/big.conf" conf-drift/desired.conf
grep -q '1048576 bytes' "$WORK/err" && pass || fail "diff over the cap: $(cat "$WORK/err")"
expect_status 1 "$AGENT" diff --type conf - conf-drift/running.conf <conf-drift/desired.conf

# --- rollout --kube-api: http only to this machine, the host compared whole --
# (kubectl proxy adds the credentials; anything else must be verified TLS).
# 192.0.2.1 is TEST-NET-1: a command that tried it would hang, not exit 2.
for url in http://127.0.0.1@192.0.2.1:8001 http://127.0.0.1:8001@192.0.2.1 \
        http://127.0.0.1.nip.io:8001 http://localhost.evil.example:8001 http://192.0.2.1:8001 \
        'https://192.0.2.1:6443/?x=1'; do
        expect_status 2 timeout 20 "$AGENT" rollout plan --kube-api "$url"
        grep -q -- '--kube-api: ".*" is n' "$WORK/err" && pass ||
                fail "rollout --kube-api $url: $(cat "$WORK/err")"
done

finish
