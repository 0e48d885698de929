#!/bin/bash
# SPDX-License-Identifier: Apache-2.0
# Skips are visible and checked. tests/tools/skip-report.sh, on made-up logs
# in automake's layout (NAME.log beside NAME.trs): an allowed skip passes; a
# skip the allow-list does not name for the cell, a SKIP line without an ID,
# an exit 77 that says nothing and a cmocka skip in a program that exited 0
# fail; an allow-list line without a reason is refused. lib.sh's skip and
# skip_part print the one form it reads, and a real unit test that skips
# (test-metrics without promtool) exits 77 with a SKIP line per skip.
# tests/skips.allowed itself is read without error.
. "$(dirname "$0")/lib.sh"

REPORT=$TOP_SRCDIR/tests/tools/skip-report.sh
ALLOWED=$TOP_SRCDIR/tests/skips.allowed

# fake DIR NAME RESULT LOG-TEXT: one test's log and result
fake() {
        mkdir -p "$(dirname "$1/$2")"
        printf '%b' "$4" >"$1/$2.log"
        printf ':test-result: %s\n:global-test-result: %s\n' "$3" "$3" >"$1/$2.trs"
}
# report WANT-RC ARGS...: skip-report's output in $WORK/out
report() {
        local want=$1 rc=0
        shift
        bash "$REPORT" "$@" >"$WORK/out" 2>&1 || rc=$?
        if [ "$rc" = "$want" ]; then pass; else fail "skip-report $* exited $rc, expected $want: $(cat "$WORK/out")"; fi
}
has() { grep -qE -- "$1" "$WORK/out" && pass || fail "skip-report's output lacks /$1/: $(cat "$WORK/out")"; }

cat >"$WORK/allowed" <<'EOF'
# a comment, then a blank line

gcc   test-x/known  it cannot run on CI, and test-z covers it
as*   test-x/glob-*  only in the asan cell
EOF

# --- an allowed skip, in a passing test and in a skipped one -------------------
t=$WORK/ok
fake "$t" tests/integration/test-x PASS 'checks\nSKIP: test-x/known: no such device here\ntest-x: 3 checks, 0 failed, 1 parts skipped\n'
fake "$t" tests/unit/test-u SKIP '[ RUN      ] test_a\nSKIP: test-x/known: again\n[  SKIPPED ] test_a\n[  SKIPPED ] 1 test(s), listed below:\n[  SKIPPED ] test_a\n'
fake "$t" tests/unit/test-v PASS '[  PASSED  ] 3 test(s).\nSKIP tests/unit/test-v (exit status: 0)\n'
report 0 --cell gcc --allow "$WORK/allowed" "$t"
has '^skip-report: cell gcc: allowed \(.*allowed:3\): SKIP: test-x/known: no such device here$'
has '^skip-report: cell gcc: 2 skips, 2 allowed, 0 not allowed$'
# the same skips in another cell are not allowed: the list names the cell
report 1 --cell asan --allow "$WORK/allowed" "$t"
has '^skip-report: cell asan: NOT ALLOWED: SKIP: test-x/known: no such device here$'
has '^skip-report: cell asan: 2 skips, 0 allowed, 2 not allowed$'

# --- a skip the list does not name -----------------------------------------------
t=$WORK/denied
fake "$t" tests/integration/test-x PASS 'SKIP: test-x/known: fine\n'
fake "$t" tests/integration/test-y SKIP 'SKIP: test-y/no-jq: jq is not installed\n'
report 1 --cell gcc --allow "$WORK/allowed" "$t"
has '^skip-report: cell gcc: NOT ALLOWED: SKIP: test-y/no-jq: jq is not installed$'
has '^skip-report: cell gcc: 2 skips, 1 allowed, 1 not allowed$'
# a glob in the list
fake "$WORK/glob" tests/integration/test-x PASS 'SKIP: test-x/glob-one: a\nSKIP: test-x/glob-two: b\n'
report 0 --cell asan --allow "$WORK/allowed" "$WORK/glob"
has '2 skips, 2 allowed, 0 not allowed$'

# --- skips that do not say what they are ----------------------------------------
t=$WORK/noid
fake "$t" tests/integration/test-x PASS 'SKIP: mount namespaces are not permitted here\n'
report 1 --cell gcc --allow "$WORK/allowed" "$t"
has 'NOT ALLOWED: .*test-x.log: a skip without TEST/ID: SKIP: mount namespaces are not permitted here$'
t=$WORK/noline
fake "$t" tests/integration/test-x SKIP 'nothing to say\n'
report 1 --cell gcc --allow "$WORK/allowed" "$t"
has 'NOT ALLOWED: .*test-x.log: exited 77 \(SKIP\) and printed no SKIP line$'
# cmocka's skip() alone: the program exits 0, automake says PASS
t=$WORK/cmocka
fake "$t" tests/unit/test-u PASS '[ RUN      ] test_a\n[  SKIPPED ] test_a\n[==========] 1 test(s) run.\n[  SKIPPED ] 1 test(s), listed below:\n[  SKIPPED ] test_a\n'
report 1 --cell gcc --allow "$WORK/allowed" "$t"
has 'NOT ALLOWED: .*test-u.log: cmocka skipped 1 test\(s\), but the program exited 0 \(PASS\), not 77 \(SKIP\)$'
# two cmocka skips, one SKIP line
t=$WORK/cmocka2
fake "$t" tests/unit/test-u SKIP '[  SKIPPED ] test_a\n[  SKIPPED ] test_b\nSKIP: test-x/known: a\n'
report 1 --cell gcc --allow "$WORK/allowed" "$t"
has 'cmocka skipped 2 test\(s\), but only 1 SKIP line\(s\) say why$'

# --- the list and the logs themselves ---------------------------------------------
printf 'gcc test-x/known\n' >"$WORK/noreason"
report 2 --cell gcc --allow "$WORK/noreason" "$WORK/ok"
has 'noreason:1: .gcc test-x/known. has no justification'
mkdir -p "$WORK/empty"
report 1 --cell gcc --allow "$WORK/allowed" "$WORK/empty"
has 'no test logs'
# the repository's list: every line has a reason, and a tree without skips passes
fake "$WORK/clean" tests/integration/test-x PASS 'all ran\n'
report 0 --cell gcc --allow "$ALLOWED" "$WORK/clean"
has '0 skips, 0 allowed, 0 not allowed$'

# --- lib.sh's skip and skip_part --------------------------------------------------
cat >"$WORK/test-parts.sh" <<EOF
. "$TOP_SRCDIR/tests/integration/lib.sh"
pass
skip_part no-thing "a part did not run"
pass
finish
EOF
expect_status 0 bash "$WORK/test-parts.sh"
grep -qx 'SKIP: test-parts/no-thing: a part did not run' "$WORK/err" && pass || fail "skip_part printed: $(cat "$WORK/err")"
grep -qx 'test-parts: 2 checks, 0 failed, 1 parts skipped' "$WORK/out" && pass || fail "finish printed: $(cat "$WORK/out")"
printf '. "%s"\nskip no-root "needs root"\necho not reached\n' "$TOP_SRCDIR/tests/integration/lib.sh" >"$WORK/test-whole.sh"
expect_status 77 bash "$WORK/test-whole.sh"
grep -qx 'SKIP: test-whole/no-root: needs root' "$WORK/err" && [ ! -s "$WORK/out" ] && pass ||
        fail "skip printed: $(cat "$WORK/out" "$WORK/err")"
printf '. "%s"\nskip "no id, only a reason"\n' "$TOP_SRCDIR/tests/integration/lib.sh" >"$WORK/test-noid.sh"
expect_status 1 bash "$WORK/test-noid.sh"

# --- a real unit test that skips (tests/unit/unit-skip.h) -------------------------
unit=$(dirname "$AGENT")/tests/unit/test-metrics
if [ -x "$unit" ]; then
        # no promtool on PATH: its three promtool tests skip
        mkdir -p "$WORK/u/tests/unit"
        rc=0
        (cd "$WORK" && PROMTOOL='' PATH=/nonexistent "$unit") >"$WORK/u/tests/unit/test-metrics.log" 2>&1 || rc=$?
        [ "$rc" = 77 ] && pass || fail "test-metrics without promtool exited $rc, expected 77: $(tail -5 "$WORK/u/tests/unit/test-metrics.log")"
        [ "$(grep -c '^SKIP: test-metrics/promtool' "$WORK/u/tests/unit/test-metrics.log")" = 3 ] && pass ||
                fail "test-metrics did not print a SKIP line per skipped test: $(grep SKIP "$WORK/u/tests/unit/test-metrics.log")"
        printf ':test-result: SKIP\n' >"$WORK/u/tests/unit/test-metrics.trs"
        report 1 --cell gcc --allow "$WORK/allowed" "$WORK/u"
        has '3 skips, 0 allowed, 3 not allowed$'
else
        fail "$unit is not built"
fi

finish
