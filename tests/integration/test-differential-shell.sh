#!/bin/bash
# SPDX-License-Identifier: Apache-2.0
# The shell module against real bash, on both of its questions.
#
# Files: shell_check_syntax() must give bash -n's verdict and line, on the
# corpus in tests/data/shell/files (files.expected says what bash says, and
# bash must still agree) and on a seeded random corpus. "unsupported" is the
# model refusing, on purpose, a construct it does not follow: bash may accept.
#
# Values: whenever shell_eval_echo() calls a value static, its output must be
# what `eval echo VALUE` prints in bash run with an empty environment in an
# empty directory (so no glob can match); when it reports a syntax error, that
# eval must fail. Values come from tests/data/shell/values.txt and a seeded
# random set.
# shellcheck source-path=SCRIPTDIR source=lib.sh
. "$(dirname "$0")/lib.sh"
command -v bash >/dev/null || skip no-bash "bash is not installed"
PROBE=${SHELL_PROBE:-$(dirname "$AGENT")/tests/tools/shell-probe}
[ -x "$PROBE" ] || skip no-shell-probe "tests/tools/shell-probe is not built (see Makefile.am)"

BASH_BIN=$(command -v bash)
# shellcheck disable=SC2016
bash_version=$(env -i "$BASH_BIN" -c 'echo "${BASH_VERSINFO[0]}.${BASH_VERSINFO[1]}"')
case $bash_version in
5.*) ;;
*) skip not-bash-5 "the model follows bash 5; this is bash $bash_version" ;;
esac

mkdir -p "$WORK/empty" "$WORK/gen"

# check_file FILE: sets bash_rc and bash_line (empty when bash names none).
check_file() {
        local err
        bash_rc=0
        env -i "$BASH_BIN" -n "$1" >/dev/null 2>"$WORK/err" || bash_rc=$?
        err=$(<"$WORK/err")
        bash_line=""
        while [[ $err =~ line\ ([0-9]+):\ (.*) ]]; do
                if [[ ${BASH_REMATCH[2]} != warning:* ]]; then
                        bash_line=${BASH_REMATCH[1]}
                        break
                fi
                err=${err#*line "${BASH_REMATCH[1]}": }
        done
}

# ---------------------------------------------------------------------------
# Files: the corpus

files=0
names=()
paths=()
while read -r name _; do
        case $name in '#'* | '') continue ;; esac
        names+=("$name")
        paths+=("$TEST_DATA_DIR/shell/files/$name.conf")
done <"$TEST_DATA_DIR/shell/files.expected"
for f in "${paths[@]}"; do
        [ -f "$f" ] || fail "files.expected names $(basename "$f" .conf), which is not in tests/data/shell/files"
done
"$PROBE" check "${paths[@]}" >"$WORK/probe" || fail "shell-probe check failed on the corpus"
mapfile -t probes <"$WORK/probe"

while read -r name status line; do
        case $name in '#'* | '') continue ;; esac
        f="$TEST_DATA_DIR/shell/files/$name.conf"
        probe=${probes[files]:-}
        files=$((files + 1))
        check_file "$f"
        case $status in
        ok)
                [ "$bash_rc" -eq 0 ] || fail "$name: bash -n now refuses it: $(head -c 300 "$WORK/err")"
                if [ "$probe" = ok ]; then
                        pass
                else
                        fail "$name: bash accepts it, the model says: $probe"
                fi
                ;;
        error)
                [ "$bash_rc" -ne 0 ] || fail "$name: bash -n now accepts it"
                if [ -n "$bash_line" ] && [ "$bash_line" != "$line" ]; then
                        fail "$name: bash -n now reports line $bash_line, files.expected says $line"
                fi
                case $probe in
                "error $line unsupported"*) fail "$name: the model only calls it unsupported" ;;
                "error $line "*) pass ;;
                *) fail "$name: bash refuses it at line $line, the model says: $probe" ;;
                esac
                ;;
        unsupported)
                [ "$bash_rc" -eq 0 ] ||
                        printf 'note: %s: this bash refuses it too: %s\n' "$name" "$(head -n 1 "$WORK/err")"
                case $probe in
                "error "*" unsupported"*) pass ;;
                *) fail "$name: the model should call it unsupported, says: $probe" ;;
                esac
                ;;
        *) fail "files.expected: $name: unknown status $status" ;;
        esac
done <"$TEST_DATA_DIR/shell/files.expected"

for f in "$TEST_DATA_DIR"/shell/files/*.conf; do
        name=$(basename "$f" .conf)
        grep -q "^$name " "$TEST_DATA_DIR/shell/files.expected" ||
                fail "$name.conf has no line in files.expected"
done

# ---------------------------------------------------------------------------
# Files: a seeded random corpus of the pieces shell files are made of

RANDOM=52
# shellcheck disable=SC1003,SC2016 # shell text, not shell code
pieces=(ENROOT_X V 'K=V' ' ' ' ' ' ' $'\t' $'\n' $'\n' $'\n' '"' "'" '`' '\' '$' '$(' ')' '('
        '${' '}' '{' '$((' '))' ';' '&' '|' '&&' '||' ';;' '<' '>' '>>' '<<E' $'\nE\n' '2>&1'
        '#' '# c' 'if' 'then' 'fi' 'else' 'while' 'do' 'done' 'for' 'in' 'case' 'esac' '!'
        'a=(' '$x' '${x}' '"$(id -u)"' "'q'" '"d"' $'\\\n' "\$'a'" '*' '~' 'f()' '{ a; }'
        'if a; then b; fi' 'case x in a) b;; esac' 'for i in a; do b; done' '(a)' 'a | b'
        'x=$(echo "$(id -u)")' 'cat <<E' '((1+2))' $'\r' 'time' 'function')
for ((n = 0; n < 300; n++)); do
        text=""
        for ((k = RANDOM % 12 + 1; k > 0; k--)); do
                text+=${pieces[RANDOM % ${#pieces[@]}]}
        done
        if [ $((RANDOM % 4)) -ne 0 ]; then
                text+=$'\n'
        fi
        printf '%s' "$text" >"$WORK/gen/$n.conf"
done
generated=300
for ((n = 0; n < generated; n++)); do
        printf '%s\n' "$WORK/gen/$n.conf"
done | xargs "$PROBE" check >"$WORK/probe" || fail "shell-probe check failed on the generated files"
mapfile -t probes <"$WORK/probe"

for ((n = 0; n < generated; n++)); do
        text=$(<"$WORK/gen/$n.conf")
        probe=${probes[n]:-}
        check_file "$WORK/gen/$n.conf"
        case $probe in
        ok)
                if [ "$bash_rc" -eq 0 ]; then
                        pass
                else
                        fail "generated $n: bash refuses it, the model accepts it: $(printf %q "$text")"
                fi
                ;;
        "error "*" unsupported"*) pass ;;
        "error "*)
                line=${probe#error }
                line=${line%% *}
                if [ "$bash_rc" -eq 0 ]; then
                        fail "generated $n: bash accepts it, the model says $probe: $(printf %q "$text")"
                elif [ -n "$bash_line" ] && [ "$bash_line" != "$line" ]; then
                        fail "generated $n: bash reports line $bash_line, the model $probe: $(printf %q "$text")"
                else
                        pass
                fi
                ;;
        *) fail "generated $n: unexpected probe output: $probe" ;;
        esac
done

# ---------------------------------------------------------------------------
# Values: the corpus, then a seeded random set

cp "$TEST_DATA_DIR/shell/values.txt" "$WORK/values"
RANDOM=2026
# shellcheck disable=SC1003,SC2016 # shell text, not shell code
bits=(a b x ' ' ' ' $'\t' '"' '"' "'" "'" '\' '\\' '$' '$a' '${a}' '$(a)' '`a`' '#' ' #c' '-n' '-e'
      '-E' '-ne' '-' '--' '\n' '\t' '\c' '\0101' '\x41' '\u41' '\e' '\q' '*' '?' '[' ']' '{' '}'
      '{a,b}' '{1..3}' ',' '..' '~' '=' ':' ';' '&' '|' '<' '>' '(' ')' "\$'a'" '$"a"' '!' '%'
      '$/' '$ ' '"$"' '"\$"' '"\a"' '"a b"' "'a b'" '""' "''" $'\x01' $'\x7f' $'\xc3\xa9' $'\r')
for ((n = 0; n < 300; n++)); do
        v=""
        for ((k = RANDOM % 6 + 1; k > 0; k--)); do
                v+=${bits[RANDOM % ${#bits[@]}]}
        done
        printf '%s\n' "$v" >>"$WORK/values"
done

"$PROBE" eval <"$WORK/values" >"$WORK/results"
mapfile -t vals <"$WORK/values"
mapfile -t results <"$WORK/results"
[ "${#vals[@]}" -eq "${#results[@]}" ] ||
        fail "shell-probe eval gave ${#results[@]} answers for ${#vals[@]} values"

# One bash evaluates every value the model calls static or broken, each eval
# in its own subshell, and prints "INDEX HEX STDERR-BYTES". Static values run
# nothing, so sharing the process is safe; $(...) drops NUL bytes, as enroot's.
static=0 syntax=0
: >"$WORK/todo"
for i in "${!vals[@]}"; do
        flags=$((16#${results[i]%% *}))
        if [ $((flags & 0x80)) -ne 0 ]; then
                syntax=$((syntax + 1))
        elif [ $((flags & 0xffff)) -eq 0 ]; then
                static=$((static + 1))
        else
                continue
        fi
        printf '%s\n%s\n' "$i" "${vals[i]}" >>"$WORK/todo"
done
# shellcheck disable=SC2016
(cd "$WORK/empty" && env -i LC_ALL=C "$BASH_BIN" -c '
        while IFS= read -r i && IFS= read -r v; do
                { out=$(eval echo "$v" 2>"$1"; printf x); } 2>/dev/null
                out=${out%x}
                hex=""
                for ((k = 0; k < ${#out}; k++)); do
                        printf -v b %02x "'\''${out:k:1}"
                        hex+=$b
                done
                printf "%s %s %s\n" "$i" "${hex:--}" "$(wc -c <"$1")"
        done' _ "$WORK/err" <"$WORK/todo" >"$WORK/bash") || fail "the bash evaluator failed"

while read -r i hex errbytes; do
        v=${vals[i]}
        read -r flags output <<<"${results[i]}"
        flags=$((16#$flags))
        [ "$hex" = - ] && hex=""
        if [ $((flags & 0x80)) -ne 0 ]; then
                if [ "$errbytes" -gt 0 ]; then
                        pass
                else
                        fail "value $(printf %q "$v"): the model says eval fails, bash printed $hex"
                fi
        elif [ "$errbytes" -gt 0 ]; then
                fail "value $(printf %q "$v"): static for the model, yet eval complains"
        elif [ "$hex" = "${output}0a" ] || { [ "$hex" = "$output" ] && [ $((flags & 0x10000)) -ne 0 ]; }; then
                # echo adds a newline, unless an echo option (-n, \c) said not to
                pass
        else
                fail "value $(printf %q "$v"): bash prints $hex, the model $output (flags $(printf %x "$flags"))"
        fi
done <"$WORK/bash"
[ "$(wc -l <"$WORK/bash")" -eq $((static + syntax)) ] ||
        fail "the bash evaluator answered $(wc -l <"$WORK/bash") of $((static + syntax)) values"

printf 'bash %s: %d corpus files, %d generated files, %d values (%d static, %d syntax errors)\n' \
        "$bash_version" "$files" "$generated" "${#vals[@]}" "$static" "$syntax"
finish
