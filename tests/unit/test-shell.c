/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The shell module: one row per rule of what `bash -n` accepts (with the line
 * bash reports) and of what `eval echo VALUE` prints. Every expectation here
 * was taken from bash 5.2; tests/integration/test-differential-shell.sh keeps
 * checking the same rules against the bash at hand.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include "macro.h"
#include "shell.h"

#ifndef TEST_DATA_DIR
#error "TEST_DATA_DIR must name tests/data"
#endif

/* Reports every mismatching row, not only the first. */
#define MISMATCH(...)                     \
        do {                              \
                print_error(__VA_ARGS__); \
                print_error("\n");        \
                failures++;               \
        } while (0)

#define TEXT(s)     s, sizeof(s) - 1

#define UNSUPPORTED "unsupported"

typedef struct SyntaxRow {
        const char *name;
        const char *text;
        size_t len;
        unsigned line;       /* 0: bash -n accepts the text */
        const char *message; /* what the message starts with, or NULL for any */
} SyntaxRow;

static const SyntaxRow syntax_rows[] = {
        /* what enroot.conf files hold */
        {"empty", TEXT(""), 0, NULL},
        {"K=V", TEXT("ENROOT_MOUNT_HOME=yes\n"), 0, NULL},
        {"K V, K = V, comments", TEXT("# c\nK V\nK = V # c\n\n  # c\n"), 0, NULL},
        {"no final newline", TEXT("K V\nK2 V"), 0, NULL},
        {"CRLF", TEXT("K V\r\nK2 \"V\"\r\n"), 0, NULL},
        {"expansions", TEXT("K ${XDG_DATA_HOME}/e\nK $HOME/$(id -u)\nK ${T:-/tmp}\n"), 0, NULL},
        {"arithmetic", TEXT("K $(( $(nproc) / 2 ))\n"), 0, NULL},
        {"backquotes", TEXT("K `id -u`\n"), 0, NULL},
        {"export", TEXT("export K=V\n"), 0, NULL},

        /* quotes */
        {"double quote spans lines", TEXT("K \"a\nb\"\n"), 0, NULL},
        {"single quote spans lines", TEXT("K 'a\nb'\n"), 0, NULL},
        {"unterminated double quote: its line", TEXT("K V\nK \"a\nK V\n"), 2,
         "unterminated double quote"},
        {"unterminated single quote", TEXT("K 'a\n"), 1, "unterminated single quote"},
        {"escaped double quote", TEXT("K \"a\\\"b\"\n"), 0, NULL},
        {"escaped quote outside", TEXT("K \\\"\n"), 0, NULL},
        {"no escape in single quotes", TEXT("K '\\'\n"), 0, NULL},
        {"$'...' escapes its quote", TEXT("K $'a\\'b'\n"), 0, NULL},
        {"$'...' unterminated", TEXT("K $'a\\'\n"), 1, "unterminated single quote"},
        {"$\"...\"", TEXT("K $\"a\"\n"), 0, NULL},
        {"single quote inside double", TEXT("K \"it's\"\n"), 0, NULL},
        {"single quote inside ${} counts", TEXT("K \"${a:-'}\"\n"), 1, "unterminated single quote"},

        /* backslashes */
        {"line continuation", TEXT("K a \\\n b\n"), 0, NULL},
        {"continuation joins a word", TEXT("f\\\ni\n"), 2,
         "syntax error near unexpected token `fi'"},
        {"escaped backslash is no continuation", TEXT("K a\\\\\nfi\n"), 2, NULL},
        {"continuation in double quotes", TEXT("K \"a\\\nb\"\n"), 0, NULL},
        {"continuation before end of file", TEXT("{ a\\\n"), 3,
         "unexpected end of file: missing `}'"},

        /* $(...), `...`, ${...}, $((...)) */
        {"nested $()", TEXT("K $(a \"$(b)\" $(c $(d)))\n"), 0, NULL},
        {"quotes in $()", TEXT("K \"$(echo \")\")\"\n"), 0, NULL},
        {"case in $()", TEXT("K $(case x in a) b;; esac)\n"), 0, NULL},
        {"comment in $()", TEXT("K $(a # )\n)\n"), 0, NULL},
        {"$() parses commands", TEXT("K $(fi)\n"), 1, "syntax error near unexpected token `fi'"},
        {"empty $()", TEXT("K $() $(\n)\n"), 0, NULL},
        {"unterminated $(: the end line", TEXT("K $(a\nb\n"), 3, "unterminated $(...)"},
        {"backquotes are not parsed", TEXT("K `fi`\n"), 0, NULL},
        {"unterminated backquote", TEXT("K `a\n\n"), 1, "unterminated backquote"},
        {"${} with operators", TEXT("K ${a#*/} ${a%%x} ${a/b/c} ${#a}\n"), 0, NULL},
        {"${} is not parsed", TEXT("K ${a b}\n"), 0, NULL},
        {"unterminated ${", TEXT("K\nK ${a\n"), 2, "unterminated ${...}"},
        {"$(( ))", TEXT("K $((1 + (2 * 3)))\n"), 0, NULL},
        {"$(( parses $()", TEXT("K $(( $(fi) ))\n"), 1, "syntax error near unexpected token `fi'"},
        {"unterminated $((", TEXT("K $((1 + 2)\n"), 1, "unterminated $((...))"},
        {"$[ ]", TEXT("K $[1 + 2]\n"), 0, NULL},
        {"process substitution", TEXT("K <(a) >(b)\n"), 0, NULL},

        /* comments */
        {"# mid-word is a character", TEXT("K a#b\"\n"), 1, "unterminated double quote"},
        {"# after a blank comments", TEXT("K a #b\"\n"), 0, NULL},
        {"# after an operator comments", TEXT("K a;#b\"\n"), 0, NULL},
        {"comment ignores continuation", TEXT("# a \\\nfi\n"), 2, NULL},

        /* operators */
        {"( after a word", TEXT("K (a)\n"), 1, NULL},
        {"stray )", TEXT("K a)\n"), 1, "syntax error near unexpected token `)'"},
        {"subshell", TEXT("(K a)\n"), 0, NULL},
        {"redirection", TEXT("K a 2>/dev/null >&2 <f <<<w\n"), 0, NULL},
        {"redirection without target", TEXT("K\n\nK >\n"), 3,
         "syntax error near unexpected token `newline'"},
        {"redirection before ;", TEXT("K > ;\n"), 1, "syntax error near unexpected token `;'"},
        {">& -", TEXT("K >&-\n"), 0, NULL},
        {";; outside case", TEXT("K a;;\n"), 1, "syntax error near unexpected token `;;'"},
        {"leading ;", TEXT(";\n"), 1, "syntax error near unexpected token `;'"},
        {"; ;", TEXT("a; ;\n"), 1, "syntax error near unexpected token `;'"},
        {"leading |", TEXT("| a\n"), 1, "syntax error near unexpected token `|'"},
        {"leading &&", TEXT("&& a\n"), 1, "syntax error near unexpected token `&&'"},
        {"leading ||", TEXT("\n|| a\n"), 2, "syntax error near unexpected token `||'"},
        {"dangling |", TEXT("a |\n"), 2, "syntax error: unexpected end of file"},
        {"dangling &&", TEXT("a &&"), 2, "syntax error: unexpected end of file"},
        {"| then newline", TEXT("a |\n\nb\n"), 0, NULL},
        {"&& then newline", TEXT("a &&\nb\n"), 0, NULL},
        {"background", TEXT("a & b &\n"), 0, NULL},
        {"! and time", TEXT("! a\ntime -p a | b\n!\n"), 0, NULL},

        /* reserved words */
        {"fi", TEXT("K\nfi\n"), 2, "syntax error near unexpected token `fi'"},
        {"then", TEXT("then\n"), 1, "syntax error near unexpected token `then'"},
        {"do", TEXT("do\n"), 1, "syntax error near unexpected token `do'"},
        {"done", TEXT("done\n"), 1, "syntax error near unexpected token `done'"},
        {"esac", TEXT("esac\n"), 1, "syntax error near unexpected token `esac'"},
        {"elif", TEXT("elif\n"), 1, "syntax error near unexpected token `elif'"},
        {"else", TEXT("else\n"), 1, "syntax error near unexpected token `else'"},
        {"}", TEXT("}\n"), 1, "syntax error near unexpected token `}'"},
        {"in", TEXT("in\n"), 1, "syntax error near unexpected token `in'"},
        {"reserved words as arguments", TEXT("K if then fi { } !\n"), 0, NULL},
        {"quoted reserved word", TEXT("\"fi\"\n"), 0, NULL},
        {"reserved word after assignment", TEXT("A=1 fi\n"), 0, NULL},

        /* compound commands must be closed */
        {"if", TEXT("if a; then b; elif c; then d; else e; fi\n"), 0, NULL},
        {"if unclosed", TEXT("if true\nthen\n"), 3, "unexpected end of file: missing `fi'"},
        {"if without then", TEXT("if a; fi\n"), 1, "syntax error near unexpected token `fi'"},
        {"while", TEXT("while a; do b; done\n"), 0, NULL},
        {"while unclosed", TEXT("while a; do b\n"), 2, "unexpected end of file: missing `done'"},
        {"until unclosed", TEXT("until a\n"), 2, "unexpected end of file: missing `do'"},
        {"for", TEXT("for i in a b; do c; done\nfor i; do c; done\nfor i do c; done\n"), 0, NULL},
        {"for unclosed", TEXT("for i in a\n"), 2, "unexpected end of file: missing `do'"},
        {"for ((", TEXT("for ((i = 0; i < 2; i++)); do :; done\n"), 0, NULL},
        {"for (( two parts", TEXT("for ((i = 0; i < 2)); do :; done\n"), 1, "syntax error"},
        {"select", TEXT("select i in a; do b; done\n"), 0, NULL},
        {"case", TEXT("case $x in a|b) c;; (d) e;& *) ;;& esac\n"), 0, NULL},
        {"case without clauses", TEXT("case x in esac\n"), 0, NULL},
        {"case unclosed", TEXT("case x in\na) b;;\n"), 3, "unexpected end of file: missing `esac'"},
        {"case reserved pattern", TEXT("case x in if) ;; esac\n"), 0, NULL},
        {"{ }", TEXT("{ a; }\n"), 0, NULL},
        {"{ unclosed", TEXT("{ a\n"), 2, "unexpected end of file: missing `}'"},
        {"} as an argument", TEXT("{ a }\n"), 2, "unexpected end of file: missing `}'"},
        {"empty { }", TEXT("{ }\n"), 1, "syntax error near unexpected token `}'"},
        {"( unclosed", TEXT("( a\n"), 2, "unexpected end of file: missing `)'"},
        {"function", TEXT("f() { a; }\nfunction g { a; }\nfunction h () ( a )\n"), 0, NULL},
        {"function without body", TEXT("f() a\n"), 1, NULL},
        {"(( ))", TEXT("((a = 1 + 2))\n"), 0, NULL},
        {"array assignment", TEXT("a=(b\nc # d\n)\ndeclare e=(f)\n"), 0, NULL},
        {"array after a word", TEXT("echo a=(b)\n"), 1, "syntax error near unexpected token `('"},
        {"array with an operator", TEXT("a=(b;)\n"), 1, "syntax error near unexpected token `;'"},
        {"array unclosed", TEXT("a=(b\n"), 1, "unterminated array assignment"},

        /* here-documents */
        {"here-document", TEXT("cat <<EOF\n\"\nEOF\nfi\n"), 4,
         "syntax error near unexpected token `fi'"},
        {"here-document unterminated: a warning", TEXT("cat <<EOF\n\"\n"), 0, NULL},
        {"here-document quoted delimiter", TEXT("cat <<'E F'\nx\nE F\n"), 0, NULL},
        {"here-document <<-", TEXT("cat <<-E\n\tx\n\tE\nfi\n"), 4, NULL},
        {"here-document continuation", TEXT("cat <<E\nE\\\n\nfi\n"), 4, NULL},
        {"here-document no continuation when quoted", TEXT("cat <<\\E\nE\\\n\nfi\n"), 0, NULL},
        {"two here-documents", TEXT("cat <<A <<B\na\nA\nb\nB\nfi\n"), 6, NULL},
        {"here-document read before the error", TEXT("cat <<E )\nx\nE\n"), 3, NULL},
        {"here-document in $()", TEXT("K \"$(cat <<E\nx\nE\n)\"\n"), 0, NULL},
        {"<<< is no here-document", TEXT("cat <<<E\nfi\n"), 2, NULL},
        {"here-document continued into the end", TEXT("{ cat <<E\nb\\\n"), 4,
         "unexpected end of file: missing `}'"},

        /* NUL bytes */
        {"NUL in the first line", TEXT("K V\0\nK V\n"), 1, "NUL byte in the first line"},
        {"NUL past 80 bytes",
         TEXT("K "
              "0123456789012345678901234567890123456789012345678901234567890123456789012345678\0"
              "\n"),
         0, NULL},
        {"NUL at byte 80",
         TEXT("K "
              "01234567890123456789012345678901234567890123456789012345678901234567890123456\0\n"),
         1, "NUL byte in the first line"},
        {"NUL skipped later", TEXT("K V\nf\0i\n"), 2, "syntax error near unexpected token `fi'"},

        /* outside the model, refused on purpose */
        {"[[ ]]", TEXT("[[ -n x ]]\n"), 1, UNSUPPORTED},
        {"coproc", TEXT("coproc a\n"), 1, UNSUPPORTED},
        {"${ cmd; }", TEXT("K ${ a; }\n"), 1, UNSUPPORTED},
        {"(( as a subshell", TEXT("((a) )\n"), 1, UNSUPPORTED},
};

static void test_syntax_rows(void **state) {
        unsigned failures = 0;

        for (size_t i = 0; i < ELEMENTSOF(syntax_rows); i++) {
                const SyntaxRow *r = &syntax_rows[i];
                const char *message = "(untouched)";
                unsigned line = 0;
                int k;

                k = shell_check_syntax(r->text, r->len, &line, &message);
                if (r->line == 0) {
                        if (k != 0)
                                MISMATCH("%s: refused at line %u: %s", r->name, line, message);
                        else if (line != 0 || !streq(message, "(untouched)"))
                                MISMATCH("%s: accepted, yet the out-parameters changed", r->name);
                        continue;
                }
                if (k != -EINVAL)
                        MISMATCH("%s: accepted (%d), bash refuses it at line %u", r->name, k,
                                 r->line);
                else if (line != r->line)
                        MISMATCH("%s: line %u, bash says %u (%s)", r->name, line, r->line, message);
                else if (r->message && !startswith(message, r->message))
                        MISMATCH("%s: message \"%s\", want \"%s...\"", r->name, message,
                                 r->message);
                else if (!r->message && startswith(message, UNSUPPORTED))
                        MISMATCH("%s: only unsupported, bash refuses it: %s", r->name, message);
        }
        assert_int_equal(failures, 0);
}

/* tests/data/shell: the files the differential test also runs through bash. */
static void test_syntax_corpus(void **state) {
        _cleanup_fclose_ FILE *list = NULL;
        unsigned failures = 0, files = 0;
        char entry[512];

        list = fopen(TEST_DATA_DIR "/shell/files.expected", "re");
        assert_non_null(list);

        while (fgets(entry, sizeof(entry), list)) {
                _cleanup_fclose_ FILE *f = NULL;
                _cleanup_free_ char *data = NULL;
                char name[256], status[32], path[1024];
                const char *message = NULL;
                unsigned want = 0, line = 0;
                size_t n;
                int k;

                if (entry[0] == '#' || entry[0] == '\n')
                        continue;
                k = sscanf(entry, "%255s %31s %u", name, status, &want);
                assert_true(k >= 2);

                assert_true(snprintf(path, sizeof(path), TEST_DATA_DIR "/shell/files/%s.conf",
                                     name) < (int) sizeof(path));
                f = fopen(path, "re");
                assert_non_null(f);
                data = malloc(64 * 1024);
                assert_non_null(data);
                n = fread(data, 1, 64 * 1024, f);
                assert_true(n < 64 * 1024);
                files++;

                k = shell_check_syntax(data, n, &line, &message);
                if (streq(status, "ok")) {
                        if (k != 0)
                                MISMATCH("%s: refused at line %u: %s", name, line, message);
                } else if (streq(status, "error")) {
                        if (k != -EINVAL || line != want || startswith(message, UNSUPPORTED))
                                MISMATCH("%s: %d at line %u (%s), bash refuses it at line %u", name,
                                         k, line, k < 0 ? message : "accepted", want);
                } else if (streq(status, "unsupported")) {
                        if (k != -EINVAL || !startswith(message, UNSUPPORTED))
                                MISMATCH("%s: should be refused as unsupported", name);
                } else
                        MISMATCH("%s: unknown status %s", name, status);
        }
        assert_true(files >= 50);
        assert_int_equal(failures, 0);
}

/* Every limit in the header, just under it and just past it. */
static void test_limits(void **state) {
        const size_t big = 64 * 1024;
        _cleanup_free_ char *text = malloc(big);
        const char *message = NULL;
        unsigned line = 0;
        size_t n;

        assert_non_null(text);

        /* SHELL_MAX_NESTING: $( inside $( */
        for (unsigned depth = SHELL_MAX_NESTING; depth <= SHELL_MAX_NESTING + 1; depth++) {
                n = 0;
                for (unsigned i = 0; i < depth; i++) {
                        memcpy(text + n, "$(", 2);
                        n += 2;
                }
                text[n++] = 'x';
                memset(text + n, ')', depth);
                n += depth;
                text[n++] = '\n';
                if (depth == SHELL_MAX_NESTING)
                        assert_int_equal(shell_check_syntax(text, n, &line, &message), 0);
                else {
                        assert_int_equal(shell_check_syntax(text, n, &line, &message), -EINVAL);
                        assert_true(startswith(message, UNSUPPORTED));
                }
        }

        /* deep ( ( ( and "$( "$( nesting stay bounded too */
        memset(text, '(', big / 2);
        assert_int_equal(shell_check_syntax(text, big / 2, &line, &message), -EINVAL);
        for (n = 0; n + 3 < big; n += 3)
                memcpy(text + n, "\"$(", 3);
        assert_int_equal(shell_check_syntax(text, n, &line, &message), -EINVAL);

        /* SHELL_MAX_HEREDOCS pending on one line, as bash counts them */
        for (unsigned count = SHELL_MAX_HEREDOCS; count <= SHELL_MAX_HEREDOCS + 1; count++) {
                n = 0;
                for (unsigned i = 0; i < count; i++)
                        n += (size_t) sprintf(text + n, " <<E%u", i);
                text[n++] = '\n';
                for (unsigned i = 0; i < count; i++)
                        n += (size_t) sprintf(text + n, "E%u\n", i);
                if (count == SHELL_MAX_HEREDOCS)
                        assert_int_equal(shell_check_syntax(text, n, &line, &message), 0);
                else {
                        assert_int_equal(shell_check_syntax(text, n, &line, &message), -EINVAL);
                        assert_string_equal(message, "maximum here-document count exceeded");
                }
        }

        /* SHELL_MAX_HEREDOC_DELIM */
        for (size_t len = SHELL_MAX_HEREDOC_DELIM; len <= SHELL_MAX_HEREDOC_DELIM + 1; len++) {
                memcpy(text, "cat <<", 6);
                memset(text + 6, 'E', len);
                n = 6 + len;
                text[n++] = '\n';
                memset(text + n, 'E', len);
                n += len;
                text[n++] = '\n';
                if (len == SHELL_MAX_HEREDOC_DELIM)
                        assert_int_equal(shell_check_syntax(text, n, &line, &message), 0);
                else {
                        assert_int_equal(shell_check_syntax(text, n, &line, &message), -EINVAL);
                        assert_true(startswith(message, UNSUPPORTED));
                }
        }

        /* a long file stays fine */
        for (n = 0; n + 32 < big; n += 32)
                memcpy(text + n, "ENROOT_X \"$(id -u) ${A}\" # c\n\n\n", 32);
        assert_int_equal(shell_check_syntax(text, n, &line, &message), 0);
}

typedef struct EvalRow {
        const char *name;
        const char *value;
        const char *want; /* NULL: live */
        unsigned flags;
} EvalRow;

#define Q      SHELL_NOTE_QUOTES
#define OPT    SHELL_NOTE_ECHO_OPTION
#define COMM   SHELL_NOTE_COMMENT
#define CMD    SHELL_LIVE_COMMAND
#define VAR    SHELL_LIVE_VARIABLE
#define GLOB   SHELL_LIVE_GLOB
#define CTL    SHELL_LIVE_CONTROL
#define BRACE  SHELL_LIVE_BRACE
#define TILDE  SHELL_LIVE_TILDE
#define ANSI   SHELL_LIVE_ANSI_C
#define SYNTAX SHELL_LIVE_SYNTAX

static const EvalRow eval_rows[] = {
        /* plain words, word splitting and joining */
        {"word", "yes", "yes", 0},
        {"empty", "", "", 0},
        {"path", "/var/lib/enroot", "/var/lib/enroot", 0},
        {"blanks joined", "-comp   lzo\t-noD", "-comp lzo -noD", 0},
        {"punctuation", "http://p:3128/a,b.c=d%e@f+g^h]i}j{k!l",
         "http://p:3128/a,b.c=d%e@f+g^h]i}j{k!l", 0},
        {"control bytes stay", "a\x01\x7f\rb", "a\x01\x7f\rb", 0},
        {"UTF-8 stays", "\xc3\xa9t\xc3\xa9", "\xc3\xa9t\xc3\xa9", 0},

        /* quote removal */
        {"double quotes keep blanks", "\"a  b\"", "a  b", Q},
        {"single quotes keep blanks", "'a  b'", "a  b", Q},
        {"quotes join", "a\"b\"'c'", "abc", Q},
        {"backslash escapes", "a\\ \\b\\\\", "a b\\", Q},
        {"lone backslash at the end stays", "a\\", "a\\", 0},
        {"backslash in double quotes", "\"\\a\\$\\`\\\"\\\\\"", "\\a$`\"\\", Q},
        {"backslash in single quotes", "'\\n'", "\\n", Q},
        {"empty quotes are a word", "a \"\" b", "a  b", Q},
        {"empty quotes alone", "\"\" ''", " ", Q},

        /* comments */
        {"comment", "/d # where", "/d", COMM},
        {"comment right after a blank", "/d #where", "/d", COMM},
        {"hash inside a word", "a#b", "a#b", 0},
        {"quoted hash", "\"#\" a", "# a", Q},
        {"escaped hash", "\\#a", "#a", Q},
        {"comment hides a quote", "a # \"", "a", COMM},
        {"only a comment", "# all", "", COMM},

        /* echo options */
        {"-n", "-n", "", OPT},
        {"-n word", "-n a", "a", OPT},
        {"-e word", "-e a", "a", OPT},
        {"-E word", "-E a", "a", OPT},
        {"-ne word", "-ne a", "a", OPT},
        {"-nE word", "-nE a\\\\tb", "a\\tb", OPT | Q},
        {"options stop at a word", "a -n", "a -n", 0},
        {"invalid option is printed", "-nx a", "-nx a", 0},
        {"- is printed", "- a", "- a", 0},
        {"-- is printed", "-- a", "-- a", 0},
        {"quoted option still counts", "\"-n\" a", "a", OPT | Q},
        {"empty word stops options", "\"\" -n", " -n", Q},
        {"-e escapes", "-e 'a\\tb\\nc'", "a\tb\nc", OPT | Q},
        {"-E after -e", "-e -E 'a\\tb'", "a\\tb", OPT | Q},
        {"-e \\c stops", "-e 'a\\cb' c", "a", OPT | Q},
        {"-e \\0nnn", "-e '\\0101\\0102'", "AB", OPT | Q},
        {"-e \\nnn is not octal", "-e '\\101'", "\\101", OPT | Q},
        {"-e \\x", "-e '\\x41\\x4\\xg'", "A\x04\\xg", OPT | Q},
        {"-e \\u ASCII", "-e '\\u41\\U42'", "AB", OPT | Q},
        {"-e \\e and controls", "-e '\\e\\a\\b\\f\\r\\v'", "\033\a\b\f\r\v", OPT | Q},
        {"-e unknown escapes stay", "-e '\\q\\\"'", "\\q\\\"", OPT | Q},
        {"-e backslash pair", "-e 'a\\\\b'", "a\\b", OPT | Q},
        {"-e NUL dropped", "-e 'a\\0b'", "ab", OPT | Q},
        {"-e trailing backslash", "-e 'a\\'", "a\\", OPT | Q},
        {"-e \\u above ASCII depends on the locale", "-e '\\u00e9'", NULL, OPT | Q | ANSI},

        /* $ printed as is */
        {"lone $", "$", "$", 0},
        {"$ at the end", "a$", "a$", 0},
        {"$ blank", "$ a", "$ a", 0},
        {"$ punctuation", "$%$/$.$:$,$+$^$~$]$}$=", "$%$/$.$:$,$+$^$~$]$}$=", 0},
        {"$ in double quotes", "\"$\" \"a$ b\"", "$ a$ b", Q},
        {"$ in single quotes", "'$HOME'", "$HOME", Q},
        {"escaped $", "\\$HOME", "$HOME", Q},
        {"$' in double quotes", "\"$'a'\"", "$'a'", Q},

        /* live: expansions */
        {"$NAME", "$HOME", NULL, VAR},
        {"${NAME}", "${HOME}/x", NULL, VAR},
        {"${NAME:-default}", "${TMPDIR:-/tmp}", NULL, VAR},
        {"$1", "$1", NULL, VAR},
        {"$$", "$$", NULL, VAR},
        {"$?", "$?", NULL, VAR},
        {"$@", "$@", NULL, VAR},
        {"$_", "$_", NULL, VAR},
        {"$ before a non-ASCII byte", "$\xc3\xa9", NULL, VAR},
        {"$NAME in double quotes", "\"$HOME\"", NULL, VAR | Q},
        {"$((...))", "$((1 + 2))", NULL, VAR},
        {"$[...]", "$[1 + 2]", NULL, VAR},
        {"$(...)", "$(id -u)", NULL, CMD},
        {"$(...) in double quotes", "\"$(id -u)\"", NULL, CMD | Q},
        {"`...`", "`id -u`", NULL, CMD},
        {"$(( $(...) ))", "$(( $(nproc) / 2 ))", NULL, CMD | VAR},
        {"$'...'", "$'a\\tb'", NULL, ANSI},
        {"$\"...\"", "$\"a\"", NULL, ANSI},

        /* live: globs */
        {"*", "*.sqsh", NULL, GLOB},
        {"?", "a?b", NULL, GLOB},
        {"[...]", "[ab]", NULL, GLOB},
        {"[ without ]", "a[", "a[", 0},
        {"] alone", "a]", "a]", 0},
        {"quoted glob", "\"*\" '?' \\[a]", "* ? [a]", Q},

        /* live: control operators and redirections */
        {";", "a;b", NULL, CTL},
        {"&", "a & b", NULL, CTL},
        {"|", "a|b", NULL, CTL},
        {"<", "a<b", NULL, CTL},
        {">", "a >b", NULL, CTL},
        {"( )", "a (b)", NULL, CTL | SYNTAX},
        {"quoted operators", "\"a;b\" 'c|d' e\\&f", "a;b c|d e&f", Q},

        /* live: brace expansion */
        {"{a,b}", "{a,b}", NULL, BRACE},
        {"{1..3}", "x{1..3}", NULL, BRACE},
        {"lone braces", "{ } {} {a}", "{ } {} {a}", 0},
        {"unclosed brace", "{a,b", "{a,b", 0},
        {"quoted comma", "{a\\,b}", "{a,b}", Q},

        /* live: tilde */
        {"~", "~", NULL, TILDE},
        {"~/x", "~/x", NULL, TILDE},
        {"a=~", "a=~", NULL, TILDE},
        {"a=b:~", "a=b:~", NULL, TILDE},
        {"~ inside a word", "a~b", "a~b", 0},
        {"quoted ~", "\"~\" \\~", "~ ~", Q},

        /* eval itself fails */
        {"unbalanced double quote", "\"a", NULL, SYNTAX},
        {"unbalanced single quote", "'a", NULL, SYNTAX},
        {"unbalanced $(", "$(a", NULL, CMD | SYNTAX},
        {"unbalanced `", "`a", NULL, CMD | SYNTAX},
        {"unbalanced ${", "${a", NULL, VAR | SYNTAX},
        {"stray )", "a)", NULL, CTL | SYNTAX},
        {"escaped closing quote", "\"a\\\"", NULL, SYNTAX},
};

static void test_eval_rows(void **state) {
        unsigned failures = 0;

        for (size_t i = 0; i < ELEMENTSOF(eval_rows); i++) {
                const EvalRow *r = &eval_rows[i];
                _cleanup_free_ char *out = NULL;
                unsigned flags = 0;

                assert_int_equal(shell_eval_echo(r->value, &out, &flags), 0);
                if (flags != r->flags)
                        MISMATCH("%s: flags 0x%x, want 0x%x", r->name, flags, r->flags);
                if (!r->want) {
                        if (out)
                                MISMATCH("%s: live, yet output \"%s\"", r->name, out);
                } else if (!out)
                        MISMATCH("%s: no output, want \"%s\"", r->name, r->want);
                else if (!streq(out, r->want))
                        MISMATCH("%s: \"%s\", want \"%s\"", r->name, out, r->want);
        }
        assert_int_equal(failures, 0);
}

/* A small deterministic generator: shell metacharacters, quotes, words. */
static size_t min_size(size_t a, size_t b) {
        return a < b ? a : b;
}

static uint32_t next_random(uint32_t *seed) {
        *seed = *seed * 1103515245u + 12345u;
        return *seed >> 8;
}

/* Arbitrary bytes, as the fuzz target feeds them: no crash, no leak, and
 * the contracts hold. */
static void test_arbitrary_bytes(void **state) {
        static const char alphabet[] = "\"'`\\$(){}[];&|<>#!*?~=,.:- \t\n\r\0\x01\xc3"
                                       "aK0-pneE";
        static const char *const pieces[] = {
                "$(",   "${",         "$((",  "<<E\n", "\nE\n",  "if ", "then ",
                "fi",   "case x in ", "esac", ";;",    "for ((", "))",  "a=(",
                "\\\n", "$'",         "<(",   "`",     "((",     "do ", "done",
        };
        uint32_t seed = 20261202;
        char text[512];

        for (unsigned round = 0; round < 20000; round++) {
                _cleanup_free_ char *out = NULL;
                size_t n = next_random(&seed) % sizeof(text), i = 0;
                const char *message = NULL;
                unsigned line = 0, flags = 0;
                int k;

                while (i < n) {
                        if (next_random(&seed) % 4 == 0) {
                                const char *p = pieces[next_random(&seed) % ELEMENTSOF(pieces)];
                                size_t l = min_size(strlen(p), n - i);
                                memcpy(text + i, p, l);
                                i += l;
                        } else
                                text[i++] = alphabet[next_random(&seed) % (sizeof(alphabet) - 1)];
                }

                k = shell_check_syntax(text, n, &line, &message);
                assert_true(k == 0 || k == -EINVAL);
                if (k < 0) {
                        assert_non_null(message);
                        assert_true(line >= 1);
                }

                text[n] = '\0';
                assert_int_equal(shell_eval_echo(text, &out, &flags), 0);
                assert_true((flags & SHELL_LIVE_MASK) ? out == NULL : out != NULL);
                if (out)
                        assert_true(strlen(out) <= strlen(text));
        }
}

/* shell_split_words: each row's words joined by '|', or NULL and a piece of the reason. */
static void test_split_rows(void **state) {
        static const struct {
                const char *text, *words, *reason;
        } rows[] = {
                {"kubectl exec -i -n slurm slurm-controller-0 -c slurmctld --",
                 "kubectl|exec|-i|-n|slurm|slurm-controller-0|-c|slurmctld|--", NULL},
                {"  a\t b \n c  ", "a|b|c", NULL},
                {"kubectl --kubeconfig '/a b/c' x", "kubectl|--kubeconfig|/a b/c|x", NULL},
                {"a \"b c\" d", "a|b c|d", NULL},
                {"a \"q\\\"x\\\\y\\z\"", "a|q\"x\\y\\z", NULL},
                {"a 'it'\\''s'", "a|it's", NULL},
                {"a b\\ c", "a|b c", NULL},
                {"a \\\nb", "a|b", NULL},
                {"a '' b", "a||b", NULL},
                {"a '$HOME' '*' 'x;y' '~' '#'", "a|$HOME|*|x;y|~|#", NULL},
                {"a b#c d~e --x=f", "a|b#c|d~e|--x=f", NULL},
                {"", NULL, "no words"},
                {" \t\n", NULL, "no words"},
                {"a 'b", NULL, "unterminated single quote"},
                {"a \"b", NULL, "unterminated double quote"},
                {"a b\\", NULL, "a backslash at the end"},
                {"a $HOME", NULL, "$ or `"},
                {"a \"$HOME\"", NULL, "$ or `"},
                {"a `id`", NULL, "$ or `"},
                {"a ; b", NULL, "unquoted ;"},
                {"a|b", NULL, "unquoted ;"},
                {"a >f", NULL, "unquoted ;"},
                {"a *", NULL, "unquoted ;"},
                {"a {b,c}", NULL, "unquoted ;"},
                {"ssh h&", NULL, "unquoted ;"},
                {"~/relay", NULL, "unquoted ~"},
                {"a #comment", NULL, "unquoted #"},
        };
        unsigned failures = 0;

        (void) state;
        for (size_t i = 0; i < ELEMENTSOF(rows); i++) {
                _cleanup_(shell_words_freep) char **words = NULL;
                const char *message = NULL;
                char joined[512] = "";
                int r = shell_split_words(rows[i].text, &words, &message);

                if (!rows[i].words) {
                        if (r != -EINVAL || words || !message || !strstr(message, rows[i].reason))
                                MISMATCH("split row %zu: r=%d message=%s", i, r,
                                         message ? message : "(null)");
                        continue;
                }
                if (r < 0) {
                        MISMATCH("split row %zu: r=%d message=%s", i, r,
                                 message ? message : "(null)");
                        continue;
                }
                for (size_t k = 0; words[k]; k++) {
                        if (k > 0)
                                strcat(joined, "|");
                        strcat(joined, words[k]);
                }
                if (strcmp(joined, rows[i].words) != 0)
                        MISMATCH("split row %zu: got \"%s\", expected \"%s\"", i, joined,
                                 rows[i].words);
        }
        assert_int_equal(failures, 0);
}

/* SHELL_MAX_WORDS words are split; one more is refused. */
static void test_split_limit(void **state) {
        char text[SHELL_MAX_WORDS * 2 + 3];
        _cleanup_(shell_words_freep) char **words = NULL;
        const char *message = NULL;
        size_t n = 0;

        (void) state;
        for (size_t i = 0; i < SHELL_MAX_WORDS; i++) {
                text[n++] = 'w';
                text[n++] = ' ';
        }
        text[n] = '\0';
        assert_int_equal(shell_split_words(text, &words, &message), 0);
        assert_non_null(words[SHELL_MAX_WORDS - 1]);
        assert_null(words[SHELL_MAX_WORDS]);
        words = shell_words_free(words);
        text[n++] = 'x';
        text[n] = '\0';
        assert_int_equal(shell_split_words(text, &words, &message), -EINVAL);
        assert_null(words);
        assert_string_equal(message, "too many words");
}

int main(void) {
        const struct CMUnitTest tests[] = {
                cmocka_unit_test(test_syntax_rows),     cmocka_unit_test(test_syntax_corpus),
                cmocka_unit_test(test_limits),          cmocka_unit_test(test_eval_rows),
                cmocka_unit_test(test_arbitrary_bytes), cmocka_unit_test(test_split_rows),
                cmocka_unit_test(test_split_limit),
        };
        return cmocka_run_group_tests(tests, NULL, NULL);
}
