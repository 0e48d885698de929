/* SPDX-License-Identifier: Apache-2.0 */
/*
 * What bash makes of enroot.conf text, without running it.
 *
 * The syntax check mirrors bash 5.2's parse.y: the same character reader
 * (NUL bytes skipped, backslash-newline removed, a newline supplied at the end
 * of a file), the same context-dependent lexer (read_token, read_token_word,
 * parse_matched_pair, special_case_tokens, reserved words only where
 * reserved_word_acceptable says so) and a recursive-descent parser for the
 * same grammar. $(...) is parsed recursively as bash 5.2's parse_comsub does.
 * Line numbers follow bash's line_number: the line of the last character read
 * when the error is found, or the line a quote or ${ started on.
 *
 * shell_eval_echo() runs that lexer over "echo VALUE", does quote removal on
 * each word it found, and then what bash's echo builtin does with the words.
 */
#include <stdint.h>
#include <stdio.h>

#include "macro.h"
#include "shell.h"
#include "strbuf.h"

/* Tokens, named after bash's. */
typedef enum Tok {
        TOK_NONE, /* start of input: bash's token 0 */
        TOK_EOF,
        TOK_NEWLINE,
        TOK_WORD,
        TOK_ASSIGNMENT_WORD,
        TOK_NUMBER,
        TOK_REDIR_WORD,
        TOK_ARITH_CMD,
        TOK_ARITH_FOR_EXPRS,
        TOK_DOLPAREN, /* start of a $(...) body */
        TOK_SEMI,
        TOK_AMP,
        TOK_BAR,
        TOK_LPAREN,
        TOK_RPAREN,
        TOK_LESS,
        TOK_GREATER,
        TOK_DASH,
        TOK_AND_AND,
        TOK_OR_OR,
        TOK_GREATER_GREATER,
        TOK_LESS_LESS,
        TOK_LESS_LESS_MINUS,
        TOK_LESS_LESS_LESS,
        TOK_LESS_AND,
        TOK_GREATER_AND,
        TOK_LESS_GREATER,
        TOK_GREATER_BAR,
        TOK_AND_GREATER,
        TOK_AND_GREATER_GREATER,
        TOK_BAR_AND,
        TOK_SEMI_SEMI,
        TOK_SEMI_AND,
        TOK_SEMI_SEMI_AND,
        TOK_IF,
        TOK_THEN,
        TOK_ELSE,
        TOK_ELIF,
        TOK_FI,
        TOK_CASE,
        TOK_ESAC,
        TOK_FOR,
        TOK_SELECT,
        TOK_WHILE,
        TOK_UNTIL,
        TOK_DO,
        TOK_DONE,
        TOK_IN,
        TOK_FUNCTION,
        TOK_TIME,
        TOK_LBRACE,
        TOK_RBRACE,
        TOK_BANG,
        TOK_COND_START,
        TOK_COND_END,
        TOK_COPROC,
        TOK_TIMEOPT,
        TOK_TIMEIGN,
        _TOK_MAX,
} Tok;

static const struct {
        const char *word;
        Tok tok;
} reserved_words[] = {
        {"if", TOK_IF},         {"then", TOK_THEN},     {"else", TOK_ELSE},
        {"elif", TOK_ELIF},     {"fi", TOK_FI},         {"case", TOK_CASE},
        {"esac", TOK_ESAC},     {"for", TOK_FOR},       {"select", TOK_SELECT},
        {"while", TOK_WHILE},   {"until", TOK_UNTIL},   {"do", TOK_DO},
        {"done", TOK_DONE},     {"in", TOK_IN},         {"function", TOK_FUNCTION},
        {"time", TOK_TIME},     {"{", TOK_LBRACE},      {"}", TOK_RBRACE},
        {"!", TOK_BANG},        {"[[", TOK_COND_START}, {"]]", TOK_COND_END},
        {"coproc", TOK_COPROC},
};

/* "syntax error near unexpected token" messages, one per token. */
static const char *const unexpected_message[_TOK_MAX] = {
        [TOK_NONE] = "syntax error",
        [TOK_EOF] = "syntax error: unexpected end of file",
        [TOK_NEWLINE] = "syntax error near unexpected token `newline'",
        [TOK_WORD] = "syntax error near an unexpected word",
        [TOK_ASSIGNMENT_WORD] = "syntax error near an unexpected assignment",
        [TOK_NUMBER] = "syntax error near an unexpected file descriptor number",
        [TOK_REDIR_WORD] = "syntax error near an unexpected {variable} redirection",
        [TOK_ARITH_CMD] = "syntax error near unexpected token `((...))'",
        [TOK_ARITH_FOR_EXPRS] = "syntax error near unexpected token `((...))'",
        [TOK_DOLPAREN] = "syntax error",
        [TOK_SEMI] = "syntax error near unexpected token `;'",
        [TOK_AMP] = "syntax error near unexpected token `&'",
        [TOK_BAR] = "syntax error near unexpected token `|'",
        [TOK_LPAREN] = "syntax error near unexpected token `('",
        [TOK_RPAREN] = "syntax error near unexpected token `)'",
        [TOK_LESS] = "syntax error near unexpected token `<'",
        [TOK_GREATER] = "syntax error near unexpected token `>'",
        [TOK_DASH] = "syntax error near unexpected token `-'",
        [TOK_AND_AND] = "syntax error near unexpected token `&&'",
        [TOK_OR_OR] = "syntax error near unexpected token `||'",
        [TOK_GREATER_GREATER] = "syntax error near unexpected token `>>'",
        [TOK_LESS_LESS] = "syntax error near unexpected token `<<'",
        [TOK_LESS_LESS_MINUS] = "syntax error near unexpected token `<<-'",
        [TOK_LESS_LESS_LESS] = "syntax error near unexpected token `<<<'",
        [TOK_LESS_AND] = "syntax error near unexpected token `<&'",
        [TOK_GREATER_AND] = "syntax error near unexpected token `>&'",
        [TOK_LESS_GREATER] = "syntax error near unexpected token `<>'",
        [TOK_GREATER_BAR] = "syntax error near unexpected token `>|'",
        [TOK_AND_GREATER] = "syntax error near unexpected token `&>'",
        [TOK_AND_GREATER_GREATER] = "syntax error near unexpected token `&>>'",
        [TOK_BAR_AND] = "syntax error near unexpected token `|&'",
        [TOK_SEMI_SEMI] = "syntax error near unexpected token `;;'",
        [TOK_SEMI_AND] = "syntax error near unexpected token `;&'",
        [TOK_SEMI_SEMI_AND] = "syntax error near unexpected token `;;&'",
        [TOK_IF] = "syntax error near unexpected token `if'",
        [TOK_THEN] = "syntax error near unexpected token `then'",
        [TOK_ELSE] = "syntax error near unexpected token `else'",
        [TOK_ELIF] = "syntax error near unexpected token `elif'",
        [TOK_FI] = "syntax error near unexpected token `fi'",
        [TOK_CASE] = "syntax error near unexpected token `case'",
        [TOK_ESAC] = "syntax error near unexpected token `esac'",
        [TOK_FOR] = "syntax error near unexpected token `for'",
        [TOK_SELECT] = "syntax error near unexpected token `select'",
        [TOK_WHILE] = "syntax error near unexpected token `while'",
        [TOK_UNTIL] = "syntax error near unexpected token `until'",
        [TOK_DO] = "syntax error near unexpected token `do'",
        [TOK_DONE] = "syntax error near unexpected token `done'",
        [TOK_IN] = "syntax error near unexpected token `in'",
        [TOK_FUNCTION] = "syntax error near unexpected token `function'",
        [TOK_TIME] = "syntax error near unexpected token `time'",
        [TOK_LBRACE] = "syntax error near unexpected token `{'",
        [TOK_RBRACE] = "syntax error near unexpected token `}'",
        [TOK_BANG] = "syntax error near unexpected token `!'",
        [TOK_COND_START] = "syntax error near unexpected token `[['",
        [TOK_COND_END] = "syntax error near unexpected token `]]'",
        [TOK_COPROC] = "syntax error near unexpected token `coproc'",
        [TOK_TIMEOPT] = "syntax error near unexpected token `-p'",
        [TOK_TIMEIGN] = "syntax error near unexpected token `--'",
};

/* What a compound command missed when the file ended inside it. */
static const char *const missing_message[_TOK_MAX] = {
        [TOK_THEN] = "unexpected end of file: missing `then'",
        [TOK_FI] = "unexpected end of file: missing `fi'",
        [TOK_DO] = "unexpected end of file: missing `do'",
        [TOK_DONE] = "unexpected end of file: missing `done'",
        [TOK_ESAC] = "unexpected end of file: missing `esac'",
        [TOK_IN] = "unexpected end of file: missing `in'",
        [TOK_RPAREN] = "unexpected end of file: missing `)'",
        [TOK_RBRACE] = "unexpected end of file: missing `}'",
        [TOK_DOLPAREN] = "unterminated $(...)",
};

/* parse_matched_pair() flags, as in bash. */
#define P_FIRSTCLOSE        0x01u
#define P_ALLOWESC          0x02u
#define P_DQUOTE            0x04u
#define P_COMMAND           0x08u
#define P_ARRAYSUB          0x10u
#define P_DOLBRACE          0x20u
#define P_ARITH             0x40u

/* The parser_state bits this model needs, as in bash. */
#define PST_CASEPAT         0x01u
#define PST_CASESTMT        0x02u
#define PST_ALLOWOPNBRC     0x04u
#define PST_COMPASSIGN      0x08u
#define PST_ASSIGNOK        0x10u
#define PST_CMDSUBST        0x20u
#define PST_REDIRLIST       0x40u

/* bash's check_binary_file() looks at the first read(2) of this many bytes. */
#define BINARY_SAMPLE_BYTES 80u
/* Enough of a word to recognize reserved words, builtins, -p and --. */
#define WORD_PREFIX_BYTES   16u

typedef enum ErrorKind {
        ERROR_NONE,
        ERROR_SYNTAX,      /* bash would refuse the text */
        ERROR_UNSUPPORTED, /* outside the model: reported, to stay conservative */
} ErrorKind;

typedef struct Heredoc {
        size_t word_start, word_end; /* the delimiter word as written */
        bool quoted;                 /* no backslash-newline removal in the body */
        bool strip_tabs;             /* <<- */
} Heredoc;

typedef struct Shell {
        const char *text;
        size_t len;
        size_t end;          /* len, plus one for the newline bash supplies to a file */
        size_t pos;          /* next position to read */
        size_t hiwater;      /* furthest position read: bash's line_number */
        bool in_word;        /* inside read_word() */
        bool in_heredoc;     /* reading here-document bodies */
        bool eof_extra_line; /* a word or a here-document line ran into the end
                              * after a backslash-newline: bash counts one more line */
        unsigned depth;

        /* bash's lexer context */
        Tok cur, last, before;
        unsigned pst;
        unsigned esacs_needed, expecting_in, open_braces;
        Tok expecting_in_command;

        /* the current word token */
        size_t word_start, word_end;
        bool word_quoted;

        Heredoc heredocs[SHELL_MAX_HEREDOCS];
        unsigned n_heredocs;

        bool saw_comment;
        unsigned live; /* ShellLive bits seen by the lexer */

        /* the last for ((...)): bash checks it once the command is read */
        const char *arith_for_error;
        size_t arith_for_pos;

        ErrorKind error;
        const char *message;
        size_t error_pos;
} Shell;

/* What read_token_word() learns about a word while reading it. */
typedef struct Word {
        char prefix[WORD_PREFIX_BYTES];
        size_t len;
        int last_char;
        bool quoted, dollar, all_digits, number_too_big;
        uint32_t number;
        enum {
                AS_START,
                AS_IDENT,
                AS_SUBSCRIPT,
                AS_SUBSCRIPT_DONE,
                AS_PLUS,
                AS_ASSIGN,
                AS_BAD,
        } assign; /* bash's assignment(): NAME=, NAME+=, NAME[...]= */
        unsigned sub_depth;
        enum {
                RB_START,
                RB_OPEN,
                RB_IDENT,
                RB_ARRAY,
                RB_CLOSED,
                RB_NO,
        } redir; /* {NAME} before a redirection */
} Word;

static inline size_t size_max(size_t a, size_t b) {
        return a > b ? a : b;
}

static inline bool is_blank(int c) {
        return c == ' ' || c == '\t';
}

static inline bool is_meta(int c) {
        return c == '(' || c == ')' || c == '<' || c == '>' || c == ';' || c == '&' || c == '|';
}

static inline bool is_break(int c) {
        return is_meta(c) || is_blank(c) || c == '\n';
}

static inline bool is_digit(int c) {
        return c >= '0' && c <= '9';
}

static inline bool is_alpha(int c) {
        return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z');
}

static inline bool is_name_start(int c) {
        return is_alpha(c) || c == '_';
}

static inline bool is_name_char(int c) {
        return is_name_start(c) || is_digit(c);
}

/* A character that makes "$c" a parameter expansion (bash's param_expand()). */
static inline bool is_param_char(int c) {
        return is_name_char(c) || c == '$' || c == '#' || c == '?' || c == '-' || c == '!' ||
               c == '*' || c == '@';
}

static inline bool is_quote(int c) {
        return c == '\'' || c == '"' || c == '`';
}

static inline bool is_xdigit(int c) {
        return is_digit(c) || (c >= 'a' && c <= 'f') || (c >= 'A' && c <= 'F');
}

static inline int xdigit_value(int c) {
        if (is_digit(c))
                return c - '0';
        if (c >= 'a' && c <= 'f')
                return c - 'a' + 10;
        return c - 'A' + 10;
}

/* ------------------------------------------------------------------------ */
/* Errors */

static int fail_at(Shell *s, ErrorKind kind, const char *message, size_t pos) {
        if (s->error == ERROR_NONE) {
                s->error = kind;
                s->message = message;
                s->error_pos = pos;
        }
        return -EINVAL;
}

static int fail(Shell *s, ErrorKind kind, const char *message) {
        return fail_at(s, kind, message, s->hiwater);
}

static int unsupported(Shell *s, const char *message) {
        return fail(s, ERROR_UNSUPPORTED, message);
}

static int unexpected(Shell *s) {
        return fail(s, ERROR_SYNTAX, unexpected_message[s->cur]);
}

/* bash's line_number at position pos: one more than the newlines before it,
 * counting the newline bash supplies at the end of a file. */
static unsigned line_of(const Shell *s, size_t pos) {
        unsigned line = 1;

        for (size_t i = 0; i < pos && i < s->len; i++)
                if (s->text[i] == '\n' && line < UINT32_MAX)
                        line++;
        if (pos > s->len && s->end > s->len && line < UINT32_MAX)
                line++;
        /* When a word is what first runs into the end of the input (after a
         * backslash-newline), bash's reader asks for one more line than
         * usual before it reports the end of the file. */
        if (pos >= s->end && s->eof_extra_line && s->cur == TOK_EOF && line < UINT32_MAX)
                line++;
        return line;
}

static int nest(Shell *s) {
        if (s->depth >= SHELL_MAX_NESTING)
                return unsupported(s, "unsupported: constructs nested too deeply");
        s->depth++;
        return 0;
}

/* ------------------------------------------------------------------------ */
/* Characters, as bash's shell_getc() hands them out */

static void shell_init(Shell *s, const char *text, size_t len, bool eval) {
        size_t last = len;

        *s = (Shell){
                .text = text,
                .len = len,
                .end = len,
                .cur = TOK_NONE,
                .last = TOK_NONE,
                .before = TOK_NONE,
        };

        /* Reading a file, bash ends an unterminated last line with a newline. */
        while (last > 0 && text[last - 1] == '\0')
                last--;
        if (!eval && last > 0 && text[last - 1] != '\n')
                s->end = len + 1;
}

static int raw_getc(Shell *s) {
        int c;

        while (s->pos < s->len && s->text[s->pos] == '\0')
                s->pos++; /* bash drops NUL bytes from its input */
        if (s->pos >= s->end) {
                /* Reading here-document lines, bash does not count the
                 * line it fails to read at the end. */
                if (!s->in_heredoc)
                        s->hiwater = size_max(s->hiwater, s->end);
                if (s->in_word)
                        s->eof_extra_line = true;
                return EOF;
        }
        c = s->pos < s->len ? (unsigned char) s->text[s->pos] : '\n';
        s->hiwater = size_max(s->hiwater, s->pos);
        s->pos++;
        return c;
}

/* With remove_newline, a backslash-newline pair disappears, as everywhere
 * but in single quotes and right after another backslash. */
static int sh_getc(Shell *s, bool remove_newline) {
        for (;;) {
                size_t save;
                int c = raw_getc(s);

                if (c != '\\' || !remove_newline)
                        return c;
                save = s->pos;
                if (raw_getc(s) == '\n')
                        continue;
                s->pos = save;
                return c;
        }
}

static int sh_peekc(Shell *s, bool remove_newline) {
        size_t save = s->pos;
        int c = sh_getc(s, remove_newline);

        s->pos = save;
        return c;
}

/* A look ahead bash itself does not take: it must not move the line. */
static int sh_peekc_quiet(Shell *s) {
        size_t save = s->hiwater;
        bool eof = s->eof_extra_line;
        int c = sh_peekc(s, true);

        s->hiwater = save;
        s->eof_extra_line = eof;
        return c;
}

/* ------------------------------------------------------------------------ */
/* Lexer */

static int read_token(Shell *s, Tok *ret);
static int next(Shell *s);
static int newline_list(Shell *s);
static int compound_list(Shell *s, Tok closer);

static bool reserved_word_acceptable(const Shell *s, Tok t) {
        switch (t) {
        case TOK_NEWLINE:
        case TOK_SEMI:
        case TOK_LPAREN:
        case TOK_RPAREN:
        case TOK_BAR:
        case TOK_AMP:
        case TOK_LBRACE:
        case TOK_RBRACE:
        case TOK_AND_AND:
        case TOK_ARITH_CMD:
        case TOK_BANG:
        case TOK_BAR_AND:
        case TOK_COND_END:
        case TOK_DO:
        case TOK_DONE:
        case TOK_ELIF:
        case TOK_ELSE:
        case TOK_ESAC:
        case TOK_FI:
        case TOK_IF:
        case TOK_OR_OR:
        case TOK_SEMI_SEMI:
        case TOK_SEMI_AND:
        case TOK_SEMI_SEMI_AND:
        case TOK_THEN:
        case TOK_TIME:
        case TOK_TIMEOPT:
        case TOK_TIMEIGN:
        case TOK_COPROC:
        case TOK_UNTIL:
        case TOK_WHILE:
        case TOK_NONE:
        case TOK_DOLPAREN:
                return true;
        default:
                return s->last == TOK_WORD &&
                       (s->before == TOK_FUNCTION || s->before == TOK_COPROC);
        }
}

/* bash's parsing_redirection(): about to read a redirection's target. */
static bool parsing_redirection(Tok t) {
        switch (t) {
        case TOK_LESS:
        case TOK_GREATER:
        case TOK_GREATER_GREATER:
        case TOK_GREATER_BAR:
        case TOK_LESS_GREATER:
        case TOK_LESS_LESS_MINUS:
        case TOK_LESS_LESS:
        case TOK_LESS_LESS_LESS:
        case TOK_LESS_AND:
        case TOK_GREATER_AND:
        case TOK_AND_GREATER:
                return true;
        default:
                return false;
        }
}

static bool command_token_position(const Shell *s, Tok t) {
        /* While a simple command is only redirections so far (bash's
         * PST_REDIRLIST), the next word may still be an assignment. */
        return t == TOK_ASSIGNMENT_WORD || ((s->pst & PST_REDIRLIST) && !parsing_redirection(t)) ||
               (t != TOK_SEMI_SEMI && t != TOK_SEMI_AND && t != TOK_SEMI_SEMI_AND &&
                reserved_word_acceptable(s, t));
}

static bool assignment_acceptable(const Shell *s, Tok t) {
        return command_token_position(s, t) && !(s->pst & PST_CASEPAT);
}

static bool time_command_acceptable(const Shell *s) {
        switch (s->last) {
        case TOK_NONE:
        case TOK_SEMI:
        case TOK_NEWLINE:
                if (s->before == TOK_BAR)
                        return false;
                return true;
        case TOK_AND_AND:
        case TOK_OR_OR:
        case TOK_AMP:
        case TOK_WHILE:
        case TOK_DO:
        case TOK_UNTIL:
        case TOK_IF:
        case TOK_THEN:
        case TOK_ELIF:
        case TOK_ELSE:
        case TOK_LBRACE:
        case TOK_LPAREN:
        case TOK_RPAREN:
        case TOK_BANG:
        case TOK_TIME:
        case TOK_TIMEOPT:
        case TOK_TIMEIGN:
                return true; /* not right after "$(": bash 5.2 reads a word there */
        default:
                return false;
        }
}

static const char *eof_message(int close) {
        switch (close) {
        case '\'':
                return "unterminated single quote";
        case '"':
                return "unterminated double quote";
        case '`':
                return "unterminated backquote";
        case '}':
                return "unterminated ${...}";
        case ']':
                return "unterminated [...] subscript or $[...]";
        default:
                return "unterminated $((...)) or ((...))";
        }
}

static int comsub(Shell *s);

/* bash's parse_matched_pair(): reads up to the close that matches an open
 * already read, with the nested quotes and expansions bash recognizes.
 * qc is the quote context ('\'' reads verbatim). */
static int matched_pair(Shell *s, int qc, int open, int close, unsigned flags) {
        unsigned rflags = qc == '"' ? P_DQUOTE : (flags & P_DQUOTE);
        size_t start = s->hiwater, count = 1;
        bool passnext = false, wasdol = false, gtlt = false;
        int r;

        r = nest(s);
        if (r < 0)
                return r;

        for (;;) {
                bool dollar_word = false;
                int ch = sh_getc(s, qc != '\'' && !passnext);

                if (ch == EOF)
                        return fail_at(s, ERROR_SYNTAX, eof_message(close), start);

                if (passnext) {
                        passnext = false;
                        continue;
                }

                if (ch == close)
                        count--;
                else if (open != close && wasdol && open == '{' && ch == '{')
                        count++;
                else if (!(flags & P_FIRSTCLOSE) && ch == open)
                        count++;
                if (count == 0)
                        break;

                if (open == '\'') {
                        if ((flags & P_ALLOWESC) && ch == '\\')
                                passnext = true;
                        continue;
                }
                if (ch == '\\')
                        passnext = true;

                if (open != close) {
                        if (is_quote(ch)) {
                                if (wasdol && ch == '\'')
                                        s->live |= SHELL_LIVE_ANSI_C;
                                if (ch == '`')
                                        s->live |= SHELL_LIVE_COMMAND;
                                r = matched_pair(s, ch, ch, ch,
                                                 wasdol && ch == '\'' ? P_ALLOWESC | rflags
                                                                      : rflags);
                                if (r < 0)
                                        return r;
                        } else if ((flags & (P_ARRAYSUB | P_DOLBRACE)) && wasdol &&
                                   (ch == '(' || ch == '{' || ch == '['))
                                dollar_word = true;
                        else if ((flags & P_ARITH) && wasdol && ch == '(')
                                dollar_word = true;
                        else if ((flags & (P_ARRAYSUB | P_DOLBRACE)) && gtlt && ch == '(')
                                dollar_word = true; /* <(...) inside ${...} */
                } else if (open == '"' && ch == '`') {
                        s->live |= SHELL_LIVE_COMMAND;
                        r = matched_pair(s, 0, '`', '`', rflags);
                        if (r < 0)
                                return r;
                } else if (open != '`' && wasdol && (ch == '(' || ch == '{' || ch == '['))
                        dollar_word = true;

                if (dollar_word) {
                        if (open == ch)
                                count--; /* undo the nested-open count above */
                        if (ch == '(')
                                r = comsub(s);
                        else if (ch == '{') {
                                int n = sh_peekc_quiet(s);
                                if (is_blank(n) || n == '\n' || n == '|')
                                        return unsupported(
                                                s, "unsupported: ${ command; } (bash 5.3 runs it)");
                                s->live |= SHELL_LIVE_VARIABLE;
                                r = matched_pair(s, 0, '{', '}',
                                                 P_FIRSTCLOSE | P_DOLBRACE | rflags);
                        } else {
                                s->live |= SHELL_LIVE_VARIABLE;
                                r = matched_pair(s, 0, '[', ']', rflags | P_ARITH);
                        }
                        if (r < 0)
                                return r;
                }

                if (wasdol && is_param_char(ch))
                        s->live |= SHELL_LIVE_VARIABLE;
                gtlt = (ch == '<' || ch == '>') && !gtlt;
                wasdol = ch == '$' && !wasdol;
        }

        s->depth--;
        return 0;
}

static int heredoc_delimiter(Shell *s, const Heredoc *h, char *buf, size_t *ret_len);

/* Reads the bodies of the pending here-documents, as bash does when it
 * reads the newline that ends their command. */
static int gather_heredocs_internal(Shell *s);

static int gather_heredocs(Shell *s) {
        int r;

        s->in_heredoc = true;
        r = gather_heredocs_internal(s);
        s->in_heredoc = false;
        return r;
}

static int gather_heredocs_internal(Shell *s) {
        for (unsigned i = 0; i < s->n_heredocs; i++) {
                const Heredoc *h = &s->heredocs[i];
                char delim[SHELL_MAX_HEREDOC_DELIM];
                size_t dlen;
                int r;

                r = heredoc_delimiter(s, h, delim, &dlen);
                if (r < 0)
                        return r;

                for (;;) {
                        /* bash's read_a_line(): an unquoted delimiter lets a
                         * backslash-newline join lines, and a backslash keep
                         * the next character. bash compares <<- lines before
                         * and after stripping their leading tabs. */
                        size_t raw = 0, stripped = 0, after_delim = 0;
                        bool raw_ok = true, stripped_ok = true, leading = true, passnext = false;
                        bool close_after = false, saw_close = false, continued = false;
                        int c;

                        for (;;) {
                                c = raw_getc(s);
                                if (c == EOF && continued)
                                        s->eof_extra_line = true;
                                if (c == EOF || c == '\n')
                                        break;
                                continued = false;
                                if (passnext)
                                        passnext = false;
                                else if (c == '\\' && !h->quoted) {
                                        size_t save = s->pos;
                                        /* not the newline supplied at the end */
                                        if (raw_getc(s) == '\n' && s->pos <= s->len) {
                                                continued = true;
                                                continue;
                                        }
                                        s->pos = save;
                                        passnext = true;
                                }
                                if (raw_ok && raw < dlen && delim[raw] == c)
                                        raw++;
                                else
                                        raw_ok = false;
                                if (leading && h->strip_tabs && c == '\t')
                                        continue;
                                leading = false;
                                if (c == ')')
                                        saw_close = true;
                                if (after_delim > 0 && c == ')')
                                        close_after = true;
                                if (stripped_ok && stripped < dlen && delim[stripped] == c)
                                        stripped++;
                                else
                                        stripped_ok = false;
                                if (stripped_ok && stripped == dlen && after_delim == 0)
                                        after_delim = s->pos;
                        }
                        if (c == '\n' && ((raw_ok && raw == dlen) ||
                                          (h->strip_tabs && stripped_ok && stripped == dlen)))
                                break;
                        /* bash 5.2 inside $(...): a line that starts with the
                         * delimiter and holds a ')' ends the document, and the
                         * rest of the line is read again as commands. */
                        if ((s->pst & PST_CMDSUBST) && (close_after || (dlen == 0 && saw_close))) {
                                if (i + 1 < s->n_heredocs || dlen == 0)
                                        return unsupported(
                                                s, "unsupported: here-document ended by `)'");
                                s->pos = after_delim;
                                break;
                        }
                        if (c == EOF) {
                                /* bash only warns: "here-document delimited by end-of-file" */
                                s->n_heredocs = 0;
                                return 0;
                        }
                }
        }
        s->n_heredocs = 0;
        return 0;
}

/* The delimiter after quote removal, as bash's string_quote_removal(). */
static int heredoc_delimiter(Shell *s, const Heredoc *h, char *buf, size_t *ret_len) {
        enum { NONE, SINGLE, DOUBLE } q = NONE;
        size_t n = 0;

        for (size_t i = h->word_start; i < h->word_end; i++) {
                int c = (unsigned char) s->text[i];
                int next;
                size_t j;

                if (c == '\0')
                        continue;

                for (j = i + 1; j < h->word_end && s->text[j] == '\0'; j++)
                        ;
                next = j < h->word_end ? (unsigned char) s->text[j] : EOF;

                if (q == SINGLE) {
                        if (c == '\'') {
                                q = NONE;
                                continue;
                        }
                } else if (c == '\\' && next == '\n') {
                        i = j; /* a line continuation, removed while reading */
                        continue;
                } else if (q == NONE && c == '\\' && next != EOF) {
                        c = next;
                        i = j;
                } else if (q == DOUBLE && c == '\\' && next != EOF && strchr("$`\"\\", next)) {
                        c = next;
                        i = j;
                } else if (q == NONE && c == '$' && (next == '\'' || next == '"'))
                        return unsupported(s, "unsupported: $'...' in a here-document delimiter");
                else if (q == NONE && c == '\'') {
                        q = SINGLE;
                        continue;
                } else if (c == '"' && q != SINGLE) {
                        q = q == DOUBLE ? NONE : DOUBLE;
                        continue;
                }

                if (n >= SHELL_MAX_HEREDOC_DELIM)
                        return unsupported(s, "unsupported: here-document delimiter too long");
                buf[n++] = (char) c;
        }
        *ret_len = n;
        return 0;
}

/* bash's parse_comsub(), after "$(": "$((" is arithmetic, anything else is
 * parsed as commands up to the matching ')'. */
static int comsub(Shell *s) {
        Tok saved_cur = s->cur, saved_last = s->last, saved_before = s->before;
        unsigned saved_pst = s->pst, saved_esacs = s->esacs_needed, saved_in = s->expecting_in;
        Tok saved_in_command = s->expecting_in_command;
        size_t saved_start = s->word_start, saved_end = s->word_end;
        bool saved_quoted = s->word_quoted, saved_comment = s->saw_comment;
        bool saved_in_word = s->in_word;
        Heredoc saved_heredocs[SHELL_MAX_HEREDOCS];
        unsigned saved_n_heredocs;
        int r;

        s->in_word = false;
        if (sh_peekc(s, true) == '(') {
                s->in_word = saved_in_word;
                s->live |= SHELL_LIVE_VARIABLE;
                return matched_pair(s, 0, '(', ')', P_ARITH);
        }

        s->live |= SHELL_LIVE_COMMAND;

        r = nest(s);
        if (r < 0)
                return r;

        /* bash keeps the here-documents of the enclosing line for the newline
         * that ends it; those in $(...) are read at its own newlines. */
        saved_n_heredocs = s->n_heredocs;
        memcpy(saved_heredocs, s->heredocs, sizeof(Heredoc) * saved_n_heredocs);
        s->n_heredocs = 0;

        /* A fresh parser state, as after the DOLPAREN token bash fakes. */
        s->pst = (s->pst & ~(PST_CASEPAT | PST_COMPASSIGN | PST_REDIRLIST)) | PST_CMDSUBST;
        s->esacs_needed = s->expecting_in = 0;
        s->expecting_in_command = TOK_NONE;
        s->last = TOK_NEWLINE;
        s->cur = TOK_DOLPAREN;

        r = next(s);
        if (r < 0)
                return r;
        r = newline_list(s);
        if (r < 0)
                return r;
        if (s->cur == TOK_EOF)
                return fail(s, ERROR_SYNTAX, "unterminated $(...)");
        if (s->cur != TOK_RPAREN) {
                r = compound_list(s, TOK_DOLPAREN);
                if (r < 0)
                        return r;
                if (s->cur == TOK_EOF)
                        return fail(s, ERROR_SYNTAX, "unterminated $(...)");
                if (s->cur != TOK_RPAREN)
                        return unexpected(s);
        }
        if (s->n_heredocs > 0)
                /* bash 5.2 reads it from the next line, then goes on with
                 * the rest of this one */
                return unsupported(s, "unsupported: here-document still open at the end of $(...)");

        memcpy(s->heredocs, saved_heredocs, sizeof(Heredoc) * saved_n_heredocs);
        s->n_heredocs = saved_n_heredocs;
        s->cur = saved_cur;
        s->last = saved_last;
        s->before = saved_before;
        s->pst = saved_pst;
        s->esacs_needed = saved_esacs;
        s->expecting_in = saved_in;
        s->expecting_in_command = saved_in_command;
        s->word_start = saved_start;
        s->word_end = saved_end;
        s->word_quoted = saved_quoted;
        s->saw_comment = saved_comment;
        s->in_word = saved_in_word;
        s->depth--;
        return 0;
}

/* bash's parse_compound_assignment(), after "NAME=(": words and newlines up
 * to ')'. bash reads them with read_token() alone, so the token history stays
 * as if a word had just been read: no reserved words in there. */
static int compound_assignment(Shell *s) {
        Tok saved_cur = s->cur, saved_last = s->last, saved_before = s->before;
        unsigned saved_pst = s->pst;
        size_t start = s->hiwater;
        int r;

        r = nest(s);
        if (r < 0)
                return r;

        s->pst |= PST_COMPASSIGN;
        s->last = TOK_WORD;
        for (;;) {
                Tok t;

                r = read_token(s, &t);
                if (r < 0)
                        return r;
                s->cur = t;
                if (t == TOK_RPAREN)
                        break;
                if (t == TOK_NEWLINE || t == TOK_WORD || t == TOK_ASSIGNMENT_WORD)
                        continue;
                if (t == TOK_EOF)
                        return fail_at(s, ERROR_SYNTAX, "unterminated array assignment (...)",
                                       start);
                return unexpected(s);
        }

        s->cur = saved_cur;
        s->last = saved_last;
        s->before = saved_before;
        s->pst = saved_pst;
        s->depth--;
        return 0;
}

static void word_put(Word *w, int c) {
        if (w->len + 1 < sizeof(w->prefix))
                w->prefix[w->len] = (char) c;
        w->len++;
        w->last_char = c;

        if (w->all_digits && !is_digit(c))
                w->all_digits = false;
        if (w->all_digits) {
                if (w->number > (INT32_MAX - (uint32_t) (c - '0')) / 10)
                        w->number_too_big = true;
                else
                        w->number = w->number * 10 + (uint32_t) (c - '0');
        }
        w->dollar = w->dollar || c == '$';

        switch (w->assign) {
        case AS_START:
                w->assign = is_name_start(c) ? AS_IDENT : AS_BAD;
                break;
        case AS_IDENT:
                if (c == '=')
                        w->assign = AS_ASSIGN;
                else if (c == '+')
                        w->assign = AS_PLUS;
                else if (c == '[') {
                        w->assign = AS_SUBSCRIPT;
                        w->sub_depth = 1;
                } else if (!is_name_char(c))
                        w->assign = AS_BAD;
                break;
        case AS_SUBSCRIPT:
                if (c == '[')
                        w->sub_depth++;
                else if (c == ']' && --w->sub_depth == 0)
                        w->assign = AS_SUBSCRIPT_DONE;
                break;
        case AS_SUBSCRIPT_DONE:
                w->assign = c == '=' ? AS_ASSIGN : c == '+' ? AS_PLUS : AS_BAD;
                break;
        case AS_PLUS:
                w->assign = c == '=' ? AS_ASSIGN : AS_BAD;
                break;
        case AS_ASSIGN:
        case AS_BAD:
                break;
        }

        switch (w->redir) {
        case RB_START:
                w->redir = c == '{' ? RB_OPEN : RB_NO;
                break;
        case RB_OPEN:
                w->redir = is_name_start(c) ? RB_IDENT : RB_NO;
                break;
        case RB_IDENT:
                w->redir = c == '}'          ? RB_CLOSED
                           : c == '['        ? RB_ARRAY
                           : is_name_char(c) ? RB_IDENT
                                             : RB_NO;
                break;
        case RB_ARRAY:
                break;
        case RB_CLOSED:
        case RB_NO:
                w->redir = RB_NO;
                break;
        }
}

/* A quoted or expanded part was appended as a whole: its first character
 * stands for it in the prefix, so that no comparison matches. */
static void word_put_construct(Word *w, int first, bool subscript) {
        if (w->len + 1 < sizeof(w->prefix))
                w->prefix[w->len] = (char) first;
        w->len++;
        w->last_char = EOF;
        w->all_digits = false;
        if (subscript && w->assign == AS_IDENT)
                w->assign = AS_SUBSCRIPT_DONE;
        else if (w->assign != AS_ASSIGN && w->assign != AS_SUBSCRIPT)
                w->assign = AS_BAD;
        if (w->redir != RB_ARRAY)
                w->redir = RB_NO;
}

static bool word_is(const Word *w, const char *s) {
        return w->len < sizeof(w->prefix) && streq(w->prefix, s);
}

static Tok special_case_tokens(Shell *s, const Word *w) {
        if (s->last == TOK_WORD &&
            (s->before == TOK_FOR || s->before == TOK_CASE || s->before == TOK_SELECT) &&
            word_is(w, "in")) {
                if (s->expecting_in_command == TOK_CASE) {
                        s->pst |= PST_CASEPAT;
                        s->esacs_needed++;
                }
                if (s->expecting_in > 0)
                        s->expecting_in--;
                s->expecting_in_command = TOK_NONE;
                return TOK_IN;
        }
        if (s->expecting_in > 0 && (s->last == TOK_WORD || s->last == TOK_NEWLINE) &&
            word_is(w, "in")) {
                if (s->expecting_in_command == TOK_CASE && (s->pst & PST_CASESTMT)) {
                        s->pst |= PST_CASEPAT;
                        s->esacs_needed++;
                }
                s->expecting_in--;
                s->expecting_in_command = TOK_NONE;
                return TOK_IN;
        } else if (s->expecting_in > 0 && (s->last == TOK_NEWLINE || s->last == TOK_SEMI) &&
                   word_is(w, "do")) {
                s->expecting_in--;
                s->expecting_in_command = TOK_NONE;
                return TOK_DO;
        }
        if (s->last == TOK_WORD && (s->before == TOK_FOR || s->before == TOK_SELECT) &&
            word_is(w, "do")) {
                if (s->expecting_in > 0)
                        s->expecting_in--;
                s->expecting_in_command = TOK_NONE;
                return TOK_DO;
        }
        if (s->esacs_needed > 0 && s->last == TOK_IN && word_is(w, "esac")) {
                s->esacs_needed--;
                s->pst &= ~PST_CASEPAT;
                return TOK_ESAC;
        }
        if (s->pst & PST_ALLOWOPNBRC) {
                s->pst &= ~PST_ALLOWOPNBRC;
                if (word_is(w, "{")) {
                        s->open_braces++;
                        return TOK_LBRACE;
                }
        }
        if (s->last == TOK_ARITH_FOR_EXPRS && word_is(w, "do"))
                return TOK_DO;
        if (s->last == TOK_ARITH_FOR_EXPRS && word_is(w, "{")) {
                s->open_braces++;
                return TOK_LBRACE;
        }
        if (s->open_braces > 0 && reserved_word_acceptable(s, s->last) && word_is(w, "}")) {
                s->open_braces--;
                return TOK_RBRACE;
        }
        if (s->last == TOK_TIME && word_is(w, "-p"))
                return TOK_TIMEOPT;
        if ((s->last == TOK_TIME || s->last == TOK_TIMEOPT) && word_is(w, "--"))
                return TOK_TIMEIGN;
        return TOK_NONE;
}

static Tok reserved_word(Shell *s, const Word *w) {
        if (w->dollar || w->quoted || !reserved_word_acceptable(s, s->last))
                return TOK_NONE;

        for (size_t i = 0; i < ELEMENTSOF(reserved_words); i++) {
                Tok t = reserved_words[i].tok;

                if (!word_is(w, reserved_words[i].word))
                        continue;
                if ((s->pst & PST_CASEPAT) && t != TOK_ESAC)
                        return TOK_NONE;
                if (t == TOK_TIME && !time_command_acceptable(s))
                        return TOK_NONE;
                if ((s->pst & PST_CASEPAT) && (s->last == TOK_BAR || s->last == TOK_LPAREN))
                        return TOK_NONE; /* esac as a pattern */
                if (t == TOK_ESAC) {
                        s->pst &= ~(PST_CASEPAT | PST_CASESTMT);
                        if (s->esacs_needed > 0)
                                s->esacs_needed--;
                } else if (t == TOK_CASE) {
                        s->pst |= PST_CASESTMT;
                        s->expecting_in_command = TOK_CASE;
                } else if (t == TOK_FOR)
                        s->expecting_in_command = TOK_FOR;
                else if (t == TOK_LBRACE)
                        s->open_braces++;
                else if (t == TOK_RBRACE && s->open_braces > 0)
                        s->open_braces--;
                return t;
        }
        return TOK_NONE;
}

/* bash's read_token_word(). c is the word's first character. */
static int read_word_internal(Shell *s, int c, Tok *ret);

static int read_word(Shell *s, int c, Tok *ret) {
        bool saved = s->in_word;
        int r;

        s->in_word = true;
        r = read_word_internal(s, c, ret);
        s->in_word = saved;
        return r;
}

static int read_word_internal(Shell *s, int c, Tok *ret) {
        Word w = {
                .all_digits = is_digit(c),
                .assign = AS_START,
                .redir = RB_START,
        };
        size_t start = s->pos - 1, before_c = start;
        bool passnext = false;
        Tok t;
        int r;

        for (;;) {
                if (c == EOF)
                        break;

                if (passnext) {
                        passnext = false;
                        word_put(&w, c);
                        goto next;
                }

                if (c == '\\') {
                        if (sh_peekc(s, false) == '\n') {
                                (void) sh_getc(s, false);
                                goto next;
                        }
                        passnext = true;
                        w.quoted = true;
                        word_put(&w, c);
                        goto next;
                }

                if (is_quote(c)) {
                        if (c == '`')
                                s->live |= SHELL_LIVE_COMMAND;
                        r = matched_pair(s, c, c, c, c == '`' ? P_COMMAND : 0);
                        if (r < 0)
                                return r;
                        if (c != '`')
                                w.quoted = true;
                        word_put_construct(&w, c, false);
                        goto next;
                }

                if (c == '$' || c == '<' || c == '>') {
                        size_t p0 = s->pos;
                        int peek = sh_getc(s, true);

                        if (peek == '(' || (c == '$' && (peek == '{' || peek == '['))) {
                                if (peek == '{') {
                                        int n = sh_peekc_quiet(s);

                                        s->live |= SHELL_LIVE_VARIABLE;
                                        if (is_blank(n) || n == '\n' || n == '|')
                                                return unsupported(s, "unsupported: ${ command; } "
                                                                      "(bash 5.3 runs it)");
                                        r = matched_pair(s, 0, '{', '}', P_FIRSTCLOSE | P_DOLBRACE);
                                } else if (peek == '(') {
                                        if (c != '$')
                                                s->live |= SHELL_LIVE_COMMAND;
                                        r = comsub(s);
                                } else {
                                        s->live |= SHELL_LIVE_VARIABLE;
                                        r = matched_pair(s, 0, '[', ']', P_ARITH);
                                }
                                if (r < 0)
                                        return r;
                                w.dollar = true;
                                word_put_construct(&w, c, false);
                                goto next;
                        }
                        if (c == '$' && (peek == '\'' || peek == '"')) {
                                s->live |= SHELL_LIVE_ANSI_C;
                                r = matched_pair(s, peek, peek, peek,
                                                 peek == '\'' ? P_ALLOWESC : 0);
                                if (r < 0)
                                        return r;
                                w.quoted = true;
                                word_put_construct(&w, c, false);
                                goto next;
                        }
                        if (c == '$' && peek == '$') {
                                s->live |= SHELL_LIVE_VARIABLE;
                                word_put(&w, '$');
                                word_put(&w, '$');
                                goto next;
                        }
                        if (c == '$' && is_param_char(peek))
                                s->live |= SHELL_LIVE_VARIABLE;
                        s->pos = p0;
                } else if (c == '[' && ((w.len > 0 && assignment_acceptable(s, s->last) &&
                                         w.assign == AS_IDENT) ||
                                        (w.len == 0 && (s->pst & PST_COMPASSIGN)))) {
                        /* NAME[subscript]=: the subscript is one piece */
                        r = matched_pair(s, 0, '[', ']', P_ARRAYSUB);
                        if (r < 0)
                                return r;
                        word_put_construct(&w, c, true);
                        goto next;
                } else if (c == '=' && w.len > 0 &&
                           (assignment_acceptable(s, s->last) || (s->pst & PST_ASSIGNOK)) &&
                           (w.assign == AS_IDENT || w.assign == AS_SUBSCRIPT_DONE ||
                            w.assign == AS_PLUS)) {
                        size_t p0 = s->pos;

                        if (sh_getc(s, true) == '(') {
                                word_put(&w, '=');
                                r = compound_assignment(s);
                                if (r < 0)
                                        return r;
                                word_put_construct(&w, '(', false);
                                goto next;
                        }
                        s->pos = p0;
                }

                if (is_break(c)) {
                        s->pos = before_c;
                        break;
                }

                word_put(&w, c);
        next:
                before_c = s->pos;
                c = sh_getc(s, !passnext);
        }

        s->word_start = start;
        s->word_end = c == EOF ? s->len : s->pos;
        s->word_quoted = w.quoted;
        w.prefix[w.len < sizeof(w.prefix) ? w.len : sizeof(w.prefix) - 1] = '\0';

        if (w.all_digits && !w.number_too_big &&
            (c == '<' || c == '>' || s->last == TOK_LESS_AND || s->last == TOK_GREATER_AND)) {
                *ret = TOK_NUMBER;
                return 0;
        }

        if (!w.quoted && !w.dollar) {
                t = special_case_tokens(s, &w);
                if (t == TOK_NONE)
                        t = reserved_word(s, &w);
                if (t != TOK_NONE) {
                        *ret = t;
                        return 0;
                }
        }

        if (command_token_position(s, s->last)) {
                /* declaration builtins take NAME=(...) arguments */
                static const char *const assignment_builtins[] = {
                        "alias", "declare", "export", "local", "readonly", "typeset", "eval", "let",
                };

                for (size_t i = 0; i < ELEMENTSOF(assignment_builtins); i++)
                        if (word_is(&w, assignment_builtins[i]))
                                s->pst |= PST_ASSIGNOK;
        }

        if ((c == '<' || c == '>') &&
            (w.redir == RB_CLOSED || (w.redir == RB_ARRAY && w.last_char == '}'))) {
                *ret = TOK_REDIR_WORD;
                return 0;
        }

        if (w.assign == AS_ASSIGN &&
            (assignment_acceptable(s, s->last) || (s->pst & PST_COMPASSIGN)))
                t = TOK_ASSIGNMENT_WORD;
        else
                t = TOK_WORD;

        switch (s->last) {
        case TOK_FUNCTION:
                s->pst |= PST_ALLOWOPNBRC;
                break;
        case TOK_CASE:
        case TOK_FOR:
                s->expecting_in_command = s->last;
                s->expecting_in++;
                break;
        case TOK_SELECT:
                s->expecting_in++;
                break;
        default:
                break;
        }

        *ret = t;
        return 0;
}

/* bash's parse_dparen() for "((": an arithmetic for, an arithmetic command,
 * or (when no "))" closes it) a subshell inside a subshell. Returns 1 when
 * "((" is neither, and the first '(' stands alone. */
static int dparen(Shell *s, size_t second, Tok *ret) {
        int r;

        if (s->last == TOK_FOR) {
                size_t start = s->pos, semicolons = 0;
                bool quoting = false;

                r = matched_pair(s, 0, '(', ')', P_ARITH);
                if (r < 0)
                        return r;
                if (sh_getc(s, false) != ')')
                        /* bash 5.2 then stops parsing and calls the file
                         * valid; other versions may not. */
                        return unsupported(s, "unsupported: for (( not closed by ))");

                /* make_arith_for_command() wants exactly three expressions,
                 * and says so once the whole for command is read. */
                for (size_t i = start; i < s->pos && i < s->len; i++) {
                        char c = s->text[i];

                        /* bash splits with skip_to_delim(), which skips
                         * quotes and expansions: only a plain text counts */
                        if (c == ';')
                                semicolons++;
                        else if (c == '\'' || c == '"' || c == '`' || c == '\\' ||
                                 (c == '$' && i + 1 < s->len && strchr("{([\'\"", s->text[i + 1])))
                                quoting = true;
                }
                if (quoting)
                        s->arith_for_error = "unsupported: quotes or expansions in for ((...))";
                else if (semicolons < 2)
                        s->arith_for_error =
                                "syntax error: arithmetic expression required in for ((...))";
                else if (semicolons > 2)
                        s->arith_for_error = "syntax error: `;' unexpected in for ((...))";
                else
                        s->arith_for_error = NULL;
                s->arith_for_pos = start;
                *ret = TOK_ARITH_FOR_EXPRS;
                return 0;
        }
        if (reserved_word_acceptable(s, s->last)) {
                r = matched_pair(s, 0, '(', ')', P_ARITH);
                if (r < 0)
                        return r;
                if (sh_getc(s, false) == ')') {
                        *ret = TOK_ARITH_CMD;
                        return 0;
                }
                /* bash pushes the text back and reads "( (" instead, with
                 * quirks of its own in what follows. */
                (void) second;
                return unsupported(
                        s, "unsupported: (( not closed by )): write ( ( for nested subshells");
        }
        return 1;
}

/* bash's read_token(). */
static int read_token(Shell *s, Tok *ret) {
        int c, peek;
        size_t save;

        do
                c = sh_getc(s, true);
        while (is_blank(c));

        if (c == EOF) {
                *ret = TOK_EOF;
                return 0;
        }

        if (c == '#') {
                s->saw_comment = true;
                do
                        c = sh_getc(s, false);
                while (c != EOF && c != '\n');
                if (c == EOF) {
                        *ret = TOK_EOF;
                        return 0;
                }
        }

        if (c == '\n') {
                s->pst &= ~PST_ASSIGNOK;
                if (s->n_heredocs > 0) {
                        int r = gather_heredocs(s);
                        if (r < 0)
                                return r;
                }
                *ret = TOK_NEWLINE;
                return 0;
        }

        if (is_meta(c)) {
                s->pst &= ~PST_ASSIGNOK;
                save = s->pos;
                peek = sh_getc(s, true);

                if (c == peek) {
                        switch (c) {
                        case '<': {
                                size_t save2 = s->pos;
                                int p2 = sh_getc(s, true);
                                if (p2 == '-')
                                        *ret = TOK_LESS_LESS_MINUS;
                                else if (p2 == '<')
                                        *ret = TOK_LESS_LESS_LESS;
                                else {
                                        s->pos = save2;
                                        *ret = TOK_LESS_LESS;
                                }
                                return 0;
                        }
                        case '>':
                                *ret = TOK_GREATER_GREATER;
                                return 0;
                        case ';': {
                                size_t save2 = s->pos;
                                s->pst |= PST_CASEPAT;
                                if (sh_getc(s, true) == '&')
                                        *ret = TOK_SEMI_SEMI_AND;
                                else {
                                        s->pos = save2;
                                        *ret = TOK_SEMI_SEMI;
                                }
                                return 0;
                        }
                        case '&':
                                *ret = TOK_AND_AND;
                                return 0;
                        case '|':
                                *ret = TOK_OR_OR;
                                return 0;
                        case '(': {
                                int r = dparen(s, save, ret);
                                if (r <= 0)
                                        return r;
                                break;
                        }
                        default:
                                break;
                        }
                } else if (c == '<' && peek == '&') {
                        *ret = TOK_LESS_AND;
                        return 0;
                } else if (c == '>' && peek == '&') {
                        *ret = TOK_GREATER_AND;
                        return 0;
                } else if (c == '<' && peek == '>') {
                        *ret = TOK_LESS_GREATER;
                        return 0;
                } else if (c == '>' && peek == '|') {
                        *ret = TOK_GREATER_BAR;
                        return 0;
                } else if (c == '&' && peek == '>') {
                        size_t save2 = s->pos;
                        if (sh_getc(s, true) == '>')
                                *ret = TOK_AND_GREATER_GREATER;
                        else {
                                s->pos = save2;
                                *ret = TOK_AND_GREATER;
                        }
                        return 0;
                } else if (c == '|' && peek == '&') {
                        *ret = TOK_BAR_AND;
                        return 0;
                } else if (c == ';' && peek == '&') {
                        s->pst |= PST_CASEPAT;
                        *ret = TOK_SEMI_AND;
                        return 0;
                }

                s->pos = save;

                if (c == ')' && s->last == TOK_LPAREN && s->before == TOK_WORD)
                        s->pst |= PST_ALLOWOPNBRC;
                if ((s->pst & PST_CASEPAT) && c == ')')
                        s->pst &= ~PST_CASEPAT;

                if ((c == '<' || c == '>') && peek == '(')
                        return read_word(s, c, ret); /* process substitution */

                switch (c) {
                case ';':
                        *ret = TOK_SEMI;
                        break;
                case '&':
                        *ret = TOK_AMP;
                        break;
                case '|':
                        *ret = TOK_BAR;
                        break;
                case '(':
                        *ret = TOK_LPAREN;
                        break;
                case ')':
                        *ret = TOK_RPAREN;
                        break;
                case '<':
                        *ret = TOK_LESS;
                        break;
                default:
                        *ret = TOK_GREATER;
                        break;
                }
                return 0;
        }

        if (c == '-' && (s->last == TOK_LESS_AND || s->last == TOK_GREATER_AND)) {
                *ret = TOK_DASH;
                return 0;
        }

        return read_word(s, c, ret);
}

/* ------------------------------------------------------------------------ */
/* Parser: bash's grammar, by recursive descent with one token of lookahead */

static int next(Shell *s) {
        Tok t;
        int r;

        s->before = s->last;
        s->last = s->cur;
        r = read_token(s, &t);
        if (r < 0)
                return r;
        s->cur = t;
        return 0;
}

static int expect(Shell *s, Tok t) {
        if (s->cur == t)
                return 0;
        if (s->cur == TOK_EOF && missing_message[t])
                return fail(s, ERROR_SYNTAX, missing_message[t]);
        return unexpected(s);
}

static int expect_next(Shell *s, Tok t) {
        int r = expect(s, t);
        if (r < 0)
                return r;
        return next(s);
}

static int newline_list(Shell *s) {
        while (s->cur == TOK_NEWLINE) {
                int r = next(s);
                if (r < 0)
                        return r;
        }
        return 0;
}

static bool is_redirection_operator(Tok t) {
        switch (t) {
        case TOK_LESS:
        case TOK_GREATER:
        case TOK_GREATER_GREATER:
        case TOK_LESS_LESS:
        case TOK_LESS_LESS_MINUS:
        case TOK_LESS_LESS_LESS:
        case TOK_LESS_AND:
        case TOK_GREATER_AND:
        case TOK_LESS_GREATER:
        case TOK_GREATER_BAR:
        case TOK_AND_GREATER:
        case TOK_AND_GREATER_GREATER:
                return true;
        default:
                return false;
        }
}

static bool starts_redirection(Tok t) {
        return t == TOK_NUMBER || t == TOK_REDIR_WORD || is_redirection_operator(t);
}

static bool starts_command(Tok t) {
        switch (t) {
        case TOK_WORD:
        case TOK_ASSIGNMENT_WORD:
        case TOK_LPAREN:
        case TOK_LBRACE:
        case TOK_ARITH_CMD:
        case TOK_IF:
        case TOK_WHILE:
        case TOK_UNTIL:
        case TOK_FOR:
        case TOK_SELECT:
        case TOK_CASE:
        case TOK_FUNCTION:
        case TOK_COPROC:
        case TOK_COND_START:
                return true;
        default:
                return starts_redirection(t);
        }
}

static bool starts_pipeline(Tok t) {
        return starts_command(t) || t == TOK_BANG || t == TOK_TIME;
}

static int redirection(Shell *s) {
        Tok op;
        int r;

        if (s->cur == TOK_NUMBER || s->cur == TOK_REDIR_WORD) {
                r = next(s);
                if (r < 0)
                        return r;
                if (!is_redirection_operator(s->cur) || s->cur == TOK_AND_GREATER ||
                    s->cur == TOK_AND_GREATER_GREATER)
                        return unexpected(s);
        }

        op = s->cur;

        r = next(s);
        if (r < 0)
                return r;

        if (op == TOK_LESS_AND || op == TOK_GREATER_AND) {
                if (s->cur != TOK_WORD && s->cur != TOK_NUMBER && s->cur != TOK_DASH)
                        return unexpected(s);
        } else if (s->cur != TOK_WORD)
                return unexpected(s);

        if (op == TOK_LESS_LESS || op == TOK_LESS_LESS_MINUS) {
                if (s->n_heredocs >= SHELL_MAX_HEREDOCS)
                        return fail(s, ERROR_SYNTAX, "maximum here-document count exceeded");
                s->heredocs[s->n_heredocs++] = (Heredoc){
                        .word_start = s->word_start,
                        .word_end = s->word_end,
                        .quoted = s->word_quoted,
                        .strip_tabs = op == TOK_LESS_LESS_MINUS,
                };
        }
        return next(s);
}

static int redirection_list(Shell *s) {
        while (starts_redirection(s->cur)) {
                int r = redirection(s);
                if (r < 0)
                        return r;
        }
        return 0;
}

/* words: the command has a word (or assignment) already. */
static int simple_command(Shell *s, bool words) {
        for (;;) {
                int r;

                if (s->cur == TOK_WORD || s->cur == TOK_ASSIGNMENT_WORD) {
                        s->pst &= ~PST_REDIRLIST;
                        words = true;
                        r = next(s);
                } else if (starts_redirection(s->cur)) {
                        if (!words)
                                s->pst |= PST_REDIRLIST;
                        r = redirection(s);
                } else {
                        s->pst &= ~PST_REDIRLIST;
                        return 0;
                }
                if (r < 0)
                        return r;
        }
}

static int body(Shell *s, Tok open, Tok close) {
        int r = expect_next(s, open);
        if (r < 0)
                return r;
        r = compound_list(s, close);
        if (r < 0)
                return r;
        return expect_next(s, close);
}

static int for_command(Shell *s) {
        bool arith_ok = s->cur == TOK_FOR;
        int r;

        r = next(s);
        if (r < 0)
                return r;

        if (arith_ok && s->cur == TOK_ARITH_FOR_EXPRS) {
                const char *error = s->arith_for_error;
                size_t error_pos = s->arith_for_pos;
                Tok close;

                r = next(s);
                if (r < 0)
                        return r;
                if (s->cur == TOK_SEMI || s->cur == TOK_NEWLINE) {
                        r = next(s);
                        if (r < 0)
                                return r;
                        r = newline_list(s);
                        if (r < 0)
                                return r;
                }
                close = s->cur == TOK_LBRACE ? TOK_RBRACE : TOK_DONE;
                r = expect_next(s, close == TOK_RBRACE ? TOK_LBRACE : TOK_DO);
                if (r < 0)
                        return r;
                r = compound_list(s, close);
                if (r < 0)
                        return r;
                r = expect(s, close);
                if (r < 0)
                        return r;
                if (error)
                        return fail_at(s,
                                       startswith(error, "unsupported") ? ERROR_UNSUPPORTED
                                                                        : ERROR_SYNTAX,
                                       error, error_pos);
                return next(s);
        } else {
                r = expect_next(s, TOK_WORD);
                if (r < 0)
                        return r;
                if (s->cur == TOK_SEMI) {
                        r = next(s);
                        if (r < 0)
                                return r;
                        r = newline_list(s);
                } else {
                        r = newline_list(s);
                        if (r < 0)
                                return r;
                        if (s->cur == TOK_IN) {
                                r = next(s);
                                while (r >= 0 && s->cur == TOK_WORD)
                                        r = next(s);
                                if (r < 0)
                                        return r;
                                if (s->cur != TOK_SEMI && s->cur != TOK_NEWLINE)
                                        return expect(s, TOK_DO);
                                r = next(s);
                                if (r < 0)
                                        return r;
                                r = newline_list(s);
                        }
                }
                if (r < 0)
                        return r;
        }

        if (s->cur == TOK_LBRACE)
                return body(s, TOK_LBRACE, TOK_RBRACE);
        return body(s, TOK_DO, TOK_DONE);
}

static int case_command(Shell *s) {
        int r;

        r = next(s);
        if (r < 0)
                return r;
        r = expect_next(s, TOK_WORD);
        if (r < 0)
                return r;
        r = newline_list(s);
        if (r < 0)
                return r;
        r = expect_next(s, TOK_IN);
        if (r < 0)
                return r;

        for (;;) {
                r = newline_list(s);
                if (r < 0)
                        return r;
                if (s->cur == TOK_ESAC)
                        return next(s);
                if (s->cur == TOK_EOF)
                        return fail(s, ERROR_SYNTAX, missing_message[TOK_ESAC]);

                if (s->cur == TOK_LPAREN) {
                        r = next(s);
                        if (r < 0)
                                return r;
                }
                r = expect_next(s, TOK_WORD);
                while (r >= 0 && s->cur == TOK_BAR) {
                        r = next(s);
                        if (r >= 0)
                                r = expect_next(s, TOK_WORD);
                }
                if (r < 0)
                        return r;
                r = expect_next(s, TOK_RPAREN);
                if (r < 0)
                        return r;

                r = newline_list(s);
                if (r < 0)
                        return r;
                if (s->cur == TOK_EOF)
                        return fail(s, ERROR_SYNTAX, missing_message[TOK_ESAC]);
                if (starts_pipeline(s->cur)) {
                        r = compound_list(s, TOK_ESAC);
                        if (r < 0)
                                return r;
                }

                if (s->cur == TOK_SEMI_SEMI || s->cur == TOK_SEMI_AND ||
                    s->cur == TOK_SEMI_SEMI_AND) {
                        r = next(s);
                        if (r < 0)
                                return r;
                        continue;
                }
                r = expect(s, TOK_ESAC);
                if (r < 0)
                        return r;
                return next(s);
        }
}

static int if_command(Shell *s) {
        int r;

        r = next(s);
        if (r < 0)
                return r;
        for (;;) {
                r = compound_list(s, TOK_THEN);
                if (r < 0)
                        return r;
                r = expect_next(s, TOK_THEN);
                if (r < 0)
                        return r;
                r = compound_list(s, TOK_FI);
                if (r < 0)
                        return r;
                if (s->cur == TOK_ELIF) {
                        r = next(s);
                        if (r < 0)
                                return r;
                        continue;
                }
                if (s->cur == TOK_ELSE) {
                        r = next(s);
                        if (r < 0)
                                return r;
                        r = compound_list(s, TOK_FI);
                        if (r < 0)
                                return r;
                }
                return expect_next(s, TOK_FI);
        }
}

static int shell_command(Shell *s) {
        int r;

        r = nest(s);
        if (r < 0)
                return r;

        switch (s->cur) {
        case TOK_IF:
                r = if_command(s);
                break;
        case TOK_WHILE:
        case TOK_UNTIL:
                r = next(s);
                if (r >= 0)
                        r = compound_list(s, TOK_DO);
                if (r >= 0)
                        r = body(s, TOK_DO, TOK_DONE);
                break;
        case TOK_FOR:
        case TOK_SELECT:
                r = for_command(s);
                break;
        case TOK_CASE:
                r = case_command(s);
                break;
        case TOK_LPAREN:
                r = body(s, TOK_LPAREN, TOK_RPAREN);
                break;
        case TOK_LBRACE:
                r = body(s, TOK_LBRACE, TOK_RBRACE);
                break;
        case TOK_ARITH_CMD:
                r = next(s);
                break;
        case TOK_COND_START:
                r = unsupported(s, "unsupported: [[ ... ]] conditional command");
                break;
        default:
                r = unexpected(s);
                break;
        }
        if (r < 0)
                return r;

        s->depth--;
        return redirection_list(s);
}

static int function_body(Shell *s) {
        switch (s->cur) {
        case TOK_IF:
        case TOK_WHILE:
        case TOK_UNTIL:
        case TOK_FOR:
        case TOK_SELECT:
        case TOK_CASE:
        case TOK_LPAREN:
        case TOK_LBRACE:
        case TOK_ARITH_CMD:
        case TOK_COND_START:
                return shell_command(s);
        default:
                return unexpected(s);
        }
}

static int command(Shell *s) {
        int r;

        switch (s->cur) {
        case TOK_WORD:
                s->pst &= ~PST_REDIRLIST;
                r = next(s);
                if (r < 0)
                        return r;
                if (s->cur != TOK_LPAREN)
                        return simple_command(s, true);
                /* NAME () function-body */
                r = next(s);
                if (r < 0)
                        return r;
                r = expect_next(s, TOK_RPAREN);
                if (r < 0)
                        return r;
                r = newline_list(s);
                if (r < 0)
                        return r;
                return function_body(s);

        case TOK_FUNCTION:
                r = next(s);
                if (r < 0)
                        return r;
                r = expect_next(s, TOK_WORD);
                if (r < 0)
                        return r;
                if (s->cur == TOK_LPAREN) {
                        r = next(s);
                        if (r < 0)
                                return r;
                        r = expect_next(s, TOK_RPAREN);
                        if (r < 0)
                                return r;
                }
                r = newline_list(s);
                if (r < 0)
                        return r;
                return function_body(s);

        case TOK_COPROC:
                return unsupported(s, "unsupported: coproc");

        case TOK_ASSIGNMENT_WORD:
                return simple_command(s, false);

        default:
                if (starts_redirection(s->cur))
                        return simple_command(s, false);
                return shell_command(s);
        }
}

static int pipeline(Shell *s) {
        for (;;) {
                int r = command(s);
                if (r < 0)
                        return r;
                if (s->cur != TOK_BAR && s->cur != TOK_BAR_AND)
                        return 0;
                r = next(s);
                if (r < 0)
                        return r;
                r = newline_list(s);
                if (r < 0)
                        return r;
                if (!starts_command(s->cur))
                        return unexpected(s);
        }
}

static int pipeline_command(Shell *s) {
        bool prefix = false;
        int r;

        /* ! and time (with -p and --) prefix a pipeline, or stand alone */
        while (s->cur == TOK_BANG || s->cur == TOK_TIME) {
                bool time = s->cur == TOK_TIME;

                prefix = true;
                r = next(s);
                if (r < 0)
                        return r;
                if (time && s->cur == TOK_TIMEOPT) {
                        r = next(s);
                        if (r < 0)
                                return r;
                }
                if (time && s->cur == TOK_TIMEIGN) {
                        r = next(s);
                        if (r < 0)
                                return r;
                }
        }
        if (prefix && !starts_command(s->cur)) {
                if (s->cur == TOK_SEMI || s->cur == TOK_NEWLINE || s->cur == TOK_EOF)
                        return 0;
                return unexpected(s);
        }
        return pipeline(s);
}

/* The file ended where a command had to come: say what was left open. */
static int unexpected_in(Shell *s, Tok closer) {
        if (s->cur == TOK_EOF && missing_message[closer])
                return fail(s, ERROR_SYNTAX, missing_message[closer]);
        return unexpected(s);
}

/* bash's list1 (compound) and simple_list1 (not compound): pipelines joined
 * by && and ||, which newlines may follow, and by ; and &, ending at the
 * first token that cannot start another pipeline. In a compound list a
 * newline also joins two pipelines and newlines may follow ; and &; outside
 * one a newline ends the list. s->cur starts the first pipeline. closer is
 * the token the enclosing construct wants after the list, for messages. */
static int pipeline_list(Shell *s, bool compound, Tok closer) {
        int r;

        for (;;) {
                r = pipeline_command(s);
                if (r < 0)
                        return r;

                switch (s->cur) {
                case TOK_AND_AND:
                case TOK_OR_OR:
                        r = next(s);
                        if (r >= 0)
                                r = newline_list(s);
                        if (r < 0)
                                return r;
                        if (!starts_pipeline(s->cur))
                                return unexpected_in(s, closer);
                        break;
                case TOK_NEWLINE:
                        if (!compound)
                                return 0;
                        _fallthrough_;
                case TOK_SEMI:
                case TOK_AMP:
                        r = next(s);
                        if (r >= 0 && compound)
                                r = newline_list(s);
                        if (r < 0)
                                return r;
                        if (!starts_pipeline(s->cur))
                                return 0;
                        break;
                default:
                        return 0;
                }
        }
}

/* compound_list: newlines, then pipelines joined by && || ; & or newlines,
 * ending at the first token that cannot start another one. closer is the
 * token the enclosing construct wants after it, for messages. */
static int compound_list(Shell *s, Tok closer) {
        int r;

        r = newline_list(s);
        if (r < 0)
                return r;
        if (!starts_pipeline(s->cur))
                return unexpected_in(s, closer);
        return pipeline_list(s, true, closer);
}

/* The whole input: simple lists, each ended by a newline or the end. */
static int program(Shell *s) {
        int r;

        r = next(s);
        if (r < 0)
                return r;

        for (;;) {
                if (s->cur == TOK_EOF)
                        return 0;
                if (s->cur == TOK_NEWLINE) {
                        r = next(s);
                        if (r < 0)
                                return r;
                        continue;
                }
                if (!starts_pipeline(s->cur))
                        return unexpected(s);

                /* No missing_message for TOK_EOF: an error here is plain "unexpected". */
                r = pipeline_list(s, false, TOK_EOF);
                if (r < 0)
                        return r;

                /* bash's simple_list rule reads pending here-documents before
                 * it looks at what ends the list: an error is reported past
                 * them. They start on the next line. */
                if (s->n_heredocs > 0) {
                        while (s->pos < s->end && raw_getc(s) != '\n')
                                ;
                        r = gather_heredocs(s);
                        if (r < 0)
                                return r;
                }
                if (s->cur != TOK_NEWLINE && s->cur != TOK_EOF)
                        return unexpected(s);
        }
}

int shell_check_syntax(const char *text, size_t len, unsigned *ret_line, const char **ret_message) {
        Shell s;
        int r;

        if (!text)
                len = 0;

        /* bash refuses a script whose first line, within the first read of
         * 80 bytes, holds a NUL byte (shell.c: check_binary_file()). */
        for (size_t i = 0; i < len && i < BINARY_SAMPLE_BYTES; i++) {
                if (text[i] == '\n')
                        break;
                if (text[i] == '\0') {
                        if (ret_line)
                                *ret_line = 1;
                        if (ret_message)
                                *ret_message =
                                        "NUL byte in the first line: bash refuses a binary file";
                        return -EINVAL;
                }
        }

        shell_init(&s, text ?: "", len, false);
        r = program(&s);
        if (r >= 0)
                return 0;

        if (ret_line)
                *ret_line = line_of(&s, s.error_pos);
        if (ret_message)
                *ret_message = s.message ?: "syntax error";
        return -EINVAL;
}

/* ------------------------------------------------------------------------ */
/* eval echo */

/* The end of a $(...), ${...}, $[...], `...`, $'...' or $"..." whose opening
 * ends just before pos, found with the lexer. live gets what it saw. */
static size_t construct_end(const char *text, size_t len, size_t pos, int open, int quote,
                            unsigned *live) {
        Shell s;
        int r;

        shell_init(&s, text, len, true);
        s.pos = pos;
        switch (open) {
        case '(':
                r = comsub(&s);
                break;
        case '{':
                s.live |= SHELL_LIVE_VARIABLE;
                r = matched_pair(&s, quote, '{', '}', P_FIRSTCLOSE | P_DOLBRACE);
                break;
        case '[':
                s.live |= SHELL_LIVE_VARIABLE;
                r = matched_pair(&s, quote, '[', ']', P_ARITH);
                break;
        case '`':
                s.live |= SHELL_LIVE_COMMAND;
                r = matched_pair(&s, '`', '`', '`', P_COMMAND);
                break;
        case '\'':
                r = matched_pair(&s, '\'', '\'', '\'', P_ALLOWESC);
                break;
        default:
                r = matched_pair(&s, '"', '"', '"', 0);
                break;
        }
        *live |= s.live;
        if (r < 0) {
                /* the lexer already went through this word: only a construct
                 * outside the model can fail here, and it is live anyway */
                if (s.error == ERROR_SYNTAX)
                        *live |= SHELL_LIVE_SYNTAX;
                return len;
        }
        return s.pos;
}

/* Which byte after '$' starts a parameter expansion (bash's param_expand()). */
static bool dollar_is_live(int c) {
        return is_param_char(c) || c >= 0x80;
}

/* Quote removal on one word [start, end) of text; live gets any expansion
 * found, notes the SHELL_NOTE_* bits. */
static int expand_word(const char *text, size_t start, size_t end, StrBuf *out, unsigned *live,
                       unsigned *notes) {
        bool dq = false, bracket = false, brace_sep = false;
        size_t braces = 0;
        int prev = EOF; /* previous unquoted character, for ~ after = or : */
        int r;

        for (size_t i = start; i < end;) {
                int c = (unsigned char) text[i];
                int n = i + 1 < end ? (unsigned char) text[i + 1] : EOF;

                if (c == '\\' && n == '\n') {
                        i += 2;
                        continue;
                }

                if (c == '$') {
                        if (n == '(' || n == '{' || n == '[') {
                                i = construct_end(text, end, i + 2, n, dq ? '"' : 0, live);
                                continue;
                        }
                        if (!dq && (n == '\'' || n == '"')) {
                                *live |= SHELL_LIVE_ANSI_C;
                                i = construct_end(text, end, i + 2, n, 0, live);
                                continue;
                        }
                        if (n != EOF && dollar_is_live(n)) {
                                *live |= SHELL_LIVE_VARIABLE;
                                i += 2;
                                if (is_name_start(n))
                                        while (i < end && is_name_char((unsigned char) text[i]))
                                                i++;
                                continue;
                        }
                        r = strbuf_putc(out, '$');
                        if (r < 0)
                                return r;
                        prev = dq ? EOF : '$';
                        i++;
                        continue;
                }
                if (c == '`') {
                        i = construct_end(text, end, i + 1, '`', 0, live);
                        continue;
                }

                if (dq) {
                        if (c == '"') {
                                dq = false;
                                i++;
                                continue;
                        }
                        if (c == '\\' && n != EOF && strchr("$`\"\\", n)) {
                                c = n;
                                i++;
                        }
                        r = strbuf_putc(out, (char) c);
                        if (r < 0)
                                return r;
                        i++;
                        continue;
                }

                switch (c) {
                case '\'': {
                        const char *q = memchr(text + i + 1, '\'', end - i - 1);
                        size_t e = q ? (size_t) (q - text) : end;

                        *notes |= SHELL_NOTE_QUOTES;
                        r = strbuf_append(out, text + i + 1, e - i - 1);
                        if (r < 0)
                                return r;
                        i = e + 1;
                        prev = EOF;
                        continue;
                }
                case '"':
                        *notes |= SHELL_NOTE_QUOTES;
                        dq = true;
                        prev = EOF;
                        i++;
                        continue;
                case '\\':
                        if (n == EOF)
                                break; /* a lone backslash at the end stays */
                        *notes |= SHELL_NOTE_QUOTES;
                        r = strbuf_putc(out, (char) n);
                        if (r < 0)
                                return r;
                        prev = EOF;
                        i += 2;
                        continue;
                case '<':
                case '>':
                        if (n == '(') { /* process substitution */
                                i = construct_end(text, end, i + 2, '(', 0, live);
                                *live |= SHELL_LIVE_COMMAND;
                                continue;
                        }
                        *live |= SHELL_LIVE_CONTROL;
                        break;
                case '*':
                case '?':
                        *live |= SHELL_LIVE_GLOB;
                        break;
                case '[':
                        bracket = true;
                        break;
                case ']':
                        /* bash globs a word only when a '[' has its ']' */
                        if (bracket)
                                *live |= SHELL_LIVE_GLOB;
                        break;
                case '~':
                        if (i == start || prev == '=' || prev == ':')
                                *live |= SHELL_LIVE_TILDE;
                        break;
                case '{':
                        braces++;
                        break;
                case ',':
                        if (braces > 0)
                                brace_sep = true;
                        break;
                case '.':
                        if (braces > 0 && n == '.')
                                brace_sep = true;
                        break;
                case '}':
                        if (braces > 0) {
                                if (brace_sep)
                                        *live |= SHELL_LIVE_BRACE;
                                braces--;
                        }
                        break;
                default:
                        if (is_meta(c))
                                *live |= SHELL_LIVE_CONTROL;
                        break;
                }
                r = strbuf_putc(out, (char) c);
                if (r < 0)
                        return r;
                prev = c;
                i++;
        }
        return 0;
}

static bool is_echo_option(const char *w, size_t n) {
        if (n < 2 || w[0] != '-')
                return false;
        for (size_t i = 1; i < n; i++)
                if (w[i] != 'n' && w[i] != 'e' && w[i] != 'E')
                        return false;
        return true;
}

/* What bash's echo -e makes of one argument (builtins/echo.def with
 * lib/sh/strtrans.c): *stop is set at \c. */
static int echo_escapes(StrBuf *out, const char *w, size_t n, bool *stop, unsigned *live) {
        for (size_t i = 0; i < n;) {
                unsigned v;
                size_t k;
                int c = (unsigned char) w[i++], r;

                if (c != '\\' || i >= n) {
                        r = strbuf_putc(out, (char) c);
                        if (r < 0)
                                return r;
                        continue;
                }

                c = (unsigned char) w[i++];
                switch (c) {
                case 'a':
                        c = '\a';
                        break;
                case 'b':
                        c = '\b';
                        break;
                case 'c':
                        *stop = true;
                        return 0;
                case 'e':
                case 'E':
                        c = '\033';
                        break;
                case 'f':
                        c = '\f';
                        break;
                case 'n':
                        c = '\n';
                        break;
                case 'r':
                        c = '\r';
                        break;
                case 't':
                        c = '\t';
                        break;
                case 'v':
                        c = '\v';
                        break;
                case '\\':
                        break;
                case '0':
                        for (v = 0, k = 0; k < 3 && i < n && w[i] >= '0' && w[i] <= '7'; k++, i++)
                                v = v * 8 + (unsigned) (w[i] - '0');
                        c = (int) (v & 0xffu);
                        break;
                case 'x':
                        for (v = 0, k = 0; k < 2 && i < n && is_xdigit((unsigned char) w[i]);
                             k++, i++)
                                v = v * 16 + (unsigned) xdigit_value((unsigned char) w[i]);
                        if (k == 0) {
                                r = strbuf_putc(out, '\\');
                                if (r < 0)
                                        return r;
                                break;
                        }
                        c = (int) v;
                        break;
                case 'u':
                case 'U': {
                        size_t max = c == 'u' ? 4 : 8;

                        for (v = 0, k = 0; k < max && i < n && is_xdigit((unsigned char) w[i]);
                             k++, i++)
                                v = v * 16 + (unsigned) xdigit_value((unsigned char) w[i]);
                        if (k == 0) {
                                r = strbuf_putc(out, '\\');
                                if (r < 0)
                                        return r;
                                break;
                        }
                        if (v > 0x7f) {
                                /* encoded for the locale: not static */
                                *live |= SHELL_LIVE_ANSI_C;
                                continue;
                        }
                        c = (int) v;
                        break;
                }
                default:
                        r = strbuf_putc(out, '\\');
                        if (r < 0)
                                return r;
                        break;
                }
                if (c == '\0')
                        continue; /* enroot's $(...) drops NUL bytes */
                r = strbuf_putc(out, (char) c);
                if (r < 0)
                        return r;
        }
        return 0;
}

int shell_eval_echo(const char *value, char **ret_output, unsigned *ret_flags) {
        _cleanup_free_ char *buf = NULL;
        _cleanup_(strbuf_done) StrBuf out = STRBUF_INIT(SIZE_MAX / 2);
        _cleanup_(strbuf_done) StrBuf word = STRBUF_INIT(SIZE_MAX / 2);
        bool options = true, escapes = false, stop = false, first = true;
        unsigned live = 0, notes = 0;
        size_t vlen, len;
        Shell s;
        int r;

        if (!value)
                value = "";

        /* eval joins its arguments with a space and parses the result. */
        vlen = strlen(value);
        len = vlen + 5;
        buf = malloc(len + 1);
        if (!buf)
                return -ENOMEM;
        memcpy(buf, "echo ", 5);
        memcpy(buf + 5, value, vlen + 1);

        /* Would eval's parse fail? */
        shell_init(&s, buf, len, true);
        if (program(&s) < 0 && s.error == ERROR_SYNTAX)
                live |= SHELL_LIVE_SYNTAX;

        /* The words echo gets, as the lexer finds them. */
        shell_init(&s, buf, len, true);
        r = next(&s); /* echo */
        while (r >= 0) {
                r = next(&s);
                if (r < 0) {
                        /* Before any operator the first pass read the same
                         * tokens and saw this too; past one, only the first
                         * pass knows the grammar. Either way the value stays
                         * live. */
                        if ((live | s.live) == 0)
                                live |= SHELL_LIVE_SYNTAX;
                        break;
                }
                if (s.cur == TOK_EOF)
                        break;
                if (s.cur != TOK_WORD && s.cur != TOK_ASSIGNMENT_WORD) {
                        live |= SHELL_LIVE_CONTROL;
                        continue;
                }

                strbuf_reset(&word);
                r = expand_word(buf, s.word_start, s.word_end, &word, &live, &notes);
                if (r < 0)
                        return r;
                if (live)
                        continue;

                if (options && is_echo_option(strbuf_str(&word), word.len)) {
                        notes |= SHELL_NOTE_ECHO_OPTION;
                        for (size_t i = 1; i < word.len; i++)
                                if (word.data[i] != 'n')
                                        escapes = word.data[i] == 'e';
                        continue;
                }
                options = false;
                if (stop)
                        continue;

                if (!first) {
                        r = strbuf_putc(&out, ' ');
                        if (r < 0)
                                return r;
                }
                first = false;
                if (escapes)
                        r = echo_escapes(&out, strbuf_str(&word), word.len, &stop, &live);
                else
                        r = strbuf_append(&out, strbuf_str(&word), word.len);
                if (r < 0)
                        return r;
        }
        if (s.saw_comment)
                notes |= SHELL_NOTE_COMMENT;

        live |= s.live & (SHELL_LIVE_COMMAND | SHELL_LIVE_VARIABLE | SHELL_LIVE_ANSI_C);
        live &= SHELL_LIVE_MASK;
        if (live) {
                *ret_output = NULL;
                *ret_flags = live | notes;
                return 0;
        }

        /* the words may have held NUL bytes only through \0 and friends,
         * which echo_escapes() already dropped */
        *ret_output = strbuf_steal(&out);
        if (!*ret_output)
                return -ENOMEM;
        *ret_flags = notes;
        return 0;
}

/* ------------------------------------------------------------------------ */
/* Splitting a command prefix into words */

char **shell_words_free(char **words) {
        if (!words)
                return NULL;
        for (char **w = words; *w; w++)
                free(*w);
        free(words);
        return NULL;
}

static int split_refuse(const char **ret_message, const char *message) {
        if (ret_message)
                *ret_message = message;
        return -EINVAL;
}

int shell_split_words(const char *text, char ***ret_words, const char **ret_message) {
        _cleanup_(shell_words_freep) char **words = NULL;
        _cleanup_(strbuf_done) StrBuf w = STRBUF_INIT(SIZE_MAX - 1);
        size_t n = 0;
        const char *p = text;

        words = calloc(SHELL_MAX_WORDS + 1, sizeof(char *));
        if (!words)
                return -ENOMEM;
        for (;;) {
                bool in_word = false;

                while (is_blank(*p) || *p == '\n')
                        p++;
                if (!*p)
                        break;
                if (*p == '~')
                        return split_refuse(ret_message, "unquoted ~ (a shell would expand it)");
                if (*p == '#')
                        return split_refuse(ret_message, "unquoted # (a shell would start a "
                                                         "comment)");
                w.len = 0;
                while (*p && !is_blank(*p) && *p != '\n') {
                        in_word = true;
                        if (*p == '\'') {
                                const char *end = strchr(p + 1, '\'');
                                if (!end)
                                        return split_refuse(ret_message,
                                                            "unterminated single quote");
                                if (strbuf_append(&w, p + 1, (size_t) (end - p - 1)) < 0)
                                        return -ENOMEM;
                                p = end + 1;
                        } else if (*p == '"') {
                                for (p++; *p != '"'; p++) {
                                        if (!*p)
                                                return split_refuse(ret_message,
                                                                    "unterminated double quote");
                                        if (*p == '$' || *p == '`')
                                                return split_refuse(ret_message,
                                                                    "$ or ` outside single quotes "
                                                                    "(a shell would expand it)");
                                        if (*p == '\\' && strchr("$`\"\\\n", p[1]) && p[1]) {
                                                p++;
                                                if (*p == '\n')
                                                        continue;
                                        }
                                        if (strbuf_putc(&w, *p) < 0)
                                                return -ENOMEM;
                                }
                                p++;
                        } else if (*p == '\\') {
                                if (!p[1])
                                        return split_refuse(ret_message, "a backslash at the end");
                                if (p[1] != '\n' && strbuf_putc(&w, p[1]) < 0)
                                        return -ENOMEM;
                                p += 2;
                        } else if (*p == '$' || *p == '`') {
                                return split_refuse(ret_message, "$ or ` outside single quotes "
                                                                 "(a shell would expand it)");
                        } else if (strchr(";&|<>(){}*?[", *p)) {
                                return split_refuse(ret_message,
                                                    "unquoted ; & | < > ( ) { } * ? or [ (a shell "
                                                    "would treat it specially)");
                        } else {
                                if (strbuf_putc(&w, *p) < 0)
                                        return -ENOMEM;
                                p++;
                        }
                }
                if (!in_word)
                        continue;
                if (n >= SHELL_MAX_WORDS)
                        return split_refuse(ret_message, "too many words");
                words[n] = strndup(w.data ? w.data : "", w.len);
                if (!words[n])
                        return -ENOMEM;
                n++;
        }
        if (n == 0)
                return split_refuse(ret_message, "no words");
        *ret_words = TAKE_PTR(words);
        return 0;
}
