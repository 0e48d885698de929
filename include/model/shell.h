/* SPDX-License-Identifier: Apache-2.0 */
/*
 * What bash makes of enroot.conf text, without running it.
 *
 * enroot loads enroot.conf with `bash -n FILE` (the whole file must parse),
 * then for each line `IFS=$' \t=' read -r key value` and
 * `export key="$(eval echo "${value}")"`. This module answers the two shell
 * questions in that: would `bash -n` accept the text, and what does
 * `eval echo VALUE` print when VALUE holds no live shell.
 */
#pragma once

#include <stdbool.h>
#include <stddef.h>

#include "macro.h"

/* Live shell found in a value: the output depends on the environment or runs code. */
typedef enum ShellLive {
        SHELL_LIVE_COMMAND = 1u << 0,  /* $(...) or `...`: runs a command */
        SHELL_LIVE_VARIABLE = 1u << 1, /* $NAME, ${...}, $1, $$, $((...)) */
        SHELL_LIVE_GLOB = 1u << 2,     /* unquoted * ? [...]: pathname expansion */
        SHELL_LIVE_CONTROL = 1u << 3, /* unquoted ; & | < > ( ): another command or a redirection */
        SHELL_LIVE_BRACE = 1u << 4,   /* unquoted {a,b} or {1..3}: brace expansion */
        SHELL_LIVE_TILDE = 1u << 5,   /* ~ at the start of a word: home directory */
        SHELL_LIVE_ANSI_C = 1u << 6,  /* $'...' or $"..." quoting */
        SHELL_LIVE_SYNTAX = 1u << 7,  /* eval itself would fail (unbalanced quote, ...) */
} ShellLive;

/* Not live, but worth a lint warning: the value's first word(s) are echo options
 * (-n, -e, -E and combinations such as -ne) that echo consumes instead of printing. */
#define SHELL_NOTE_ECHO_OPTION  (1u << 16)
/* Not live: an unquoted '#' starts a comment that removes the rest of the value. */
#define SHELL_NOTE_COMMENT      (1u << 17)
/* Not live: quotes or backslashes were removed. */
#define SHELL_NOTE_QUOTES       (1u << 18)

#define SHELL_LIVE_MASK         0xffffu

/* Limits. Input cannot grow anything past these; crossing one is reported,
 * never silently truncated.
 * SHELL_MAX_NESTING: nested constructs ($(...), quotes inside ${...}, if/while/
 *   case/{ }/( ) bodies, ...) deeper than this make shell_check_syntax() fail
 *   with an "unsupported" message, so arbitrary input cannot exhaust the stack.
 * SHELL_MAX_HEREDOCS: here-documents pending on one line; bash 5 itself stops
 *   with "maximum here-document count exceeded" past 16.
 * SHELL_MAX_HEREDOC_DELIM: bytes of a here-document delimiter after quote
 *   removal; a longer one is reported as unsupported. */
#define SHELL_MAX_NESTING       64u
#define SHELL_MAX_HEREDOCS      16u
#define SHELL_MAX_HEREDOC_DELIM 256u

/* Evaluates `eval echo VALUE` statically, as bash 5 does in the C locale.
 * value is one line (no newline) as `read -r` left it; any bytes are safe.
 * *ret_flags receives ShellLive bits and SHELL_NOTE_* bits found.
 * When (*ret_flags & SHELL_LIVE_MASK) == 0, *ret_output is a new string (the
 * caller frees it) holding exactly what echo would print, without the newline
 * echo adds (none is added under -n or after \c); otherwise *ret_output is NULL
 * (the value can only be compared as text).
 * enroot wraps the eval in `$(...)`, which strips every trailing newline: that
 * is left to the caller (`-e 'a\n'` gives "a\n" here, "a" in enroot). NUL
 * bytes that `echo -e` would print (\0, \x0, \u0000) are dropped here, as that
 * `$(...)` drops them.
 * Live beyond the list above, to stay exact: `$` before a byte >= 0x80
 * (a variable name in some locales) and `echo -e` escapes \u/\U above 0x7f
 * (locale-dependent output, reported as SHELL_LIVE_ANSI_C).
 * Conservative: brace sequences such as {a..} and tildes after any '=' or ':'
 * are reported live even where bash would print them literally.
 * Returns 0, or -ENOMEM (the outputs are then untouched). */
int shell_eval_echo(const char *value, char **ret_output, unsigned *ret_flags);

/* Would `bash -n` accept this text (len bytes, may lack a final newline)?
 * Models bash 5.2's parser: quotes, $'...', backslashes and line continuations,
 * $(...) parsed as commands, `...`, ${...}, $((...)), comments, operators and
 * redirections, reserved words, if/while/until/for/select/case/{ }/( ),
 * functions, ((...)), a=(...) and here-documents (an unterminated one is only
 * a warning in bash, so it is accepted here too).
 * Returns 0 when it would; -EINVAL when it would not, with *ret_line the
 * 1-based line bash would report and *ret_message a static English reason
 * (for example "unterminated double quote"). A NUL byte in the first line
 * (within its first 80 bytes) makes bash refuse the file as binary; any other
 * NUL byte is skipped as bash skips it. Conservative: when unsure, report an
 * error (never call a file that bash rejects valid); such messages start
 * with "unsupported": [[ ]], coproc, ${ cmd; } (bash 5.3 parses it), "((" not
 * closed by "))", for ((...)) with quotes or not closed by "))", a here-document
 * still open where its $(...) closes, nesting deeper than SHELL_MAX_NESTING.
 * ret_line and ret_message may be NULL, and are written only on -EINVAL. */
int shell_check_syntax(const char *text, size_t len, unsigned *ret_line, const char **ret_message);

/* Words a command prefix may hold (shell_split_words). */
#define SHELL_MAX_WORDS 256u

/* Splits text into words as a POSIX shell splits a simple command whose words
 * need no expansion: blanks (space, tab, newline) separate words; '...' keeps
 * everything literally; "..." keeps everything but a backslash before $ ` "
 * \ or a newline; an unquoted backslash keeps the next character (a
 * backslash-newline is removed). So `kubectl --kubeconfig "/a b/c" exec --`
 * gives what a shell would pass to kubectl. Nothing is expanded, so what a
 * shell would expand or treat as an operator is refused rather than passed on
 * literally: $ and ` outside '...', and unquoted ; & | < > ( ) { } * ? [, a ~
 * or # starting a word. Returns 0 with *ret_words a new NULL-terminated array
 * of at least one word (free it with shell_words_free()), or -EINVAL with
 * *ret_message a static English reason (no words, an unterminated quote, a
 * refused character, more than SHELL_MAX_WORDS words), or -ENOMEM.
 * ret_message may be NULL. */
int shell_split_words(const char *text, char ***ret_words, const char **ret_message);
char **shell_words_free(char **words);
DEFINE_TRIVIAL_CLEANUP_FUNC(char **, shell_words_free);
