/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The two files as enroot reads them (docs/DESIGN.md §5).
 *
 * A Document is one parsed file: every line with what enroot does with it,
 * and the effective settings (the definitions that win), sorted by key.
 * Parsing never fails on content: whatever enroot would ignore or refuse is
 * recorded on the lines and flags for lint to report.
 */
#pragma once

#include <stdbool.h>
#include <stddef.h>

#include "macro.h"

/* ConfigMaps hold at most 1 MiB in all; a larger file is refused (lint: E-SIZE). */
#define DOCUMENT_MAX_BYTES (1024u * 1024u)

typedef enum DocType {
        DOC_CONF, /* enroot.conf: read by enroot's config loader */
        DOC_ENV,  /* environ.d/NAME.env: read into the container environment */
        _DOC_TYPE_MAX,
        _DOC_TYPE_INVALID = -1,
} DocType;

typedef enum LineKind {
        LINE_BLANK,
        LINE_COMMENT,
        LINE_SETTING,      /* a definition enroot applies (it may still lose to another line) */
        LINE_IGNORED,      /* enroot reads past it: see LineWhy */
        LINE_UNTERMINATED, /* conf: last line without a newline, never read by enroot */
} LineKind;

typedef enum LineWhy {
        WHY_NONE,
        WHY_KEY_NOT_ACCEPTED, /* conf: key enroot's loader does not take (lowercase, NVIDIA_*, ...) */
        WHY_EXPORT,           /* conf: "export K=V": the key is "export" */
        WHY_NO_KEY,           /* conf: the line starts with a separator */
        WHY_MALFORMED,        /* env: not NAME=..., dropped */
        WHY_ENROOT_PREFIX,    /* env: ENROOT_ lines are dropped */
} LineWhy;

typedef struct Line {
        unsigned number; /* 1-based */
        LineKind kind;
        LineWhy why;
        char *key;      /* NULL for blank and comment lines */
        char *raw;      /* the value text as enroot's reader left it (NULL when no key) */
        char *value;    /* the value enroot ends up with; NULL when it cannot be known */
        unsigned flags; /* conf: shell.h SHELL_* bits; env: ENV_* bits */
        bool wins;      /* this line's definition is the effective one */
} Line;

/* env line flags */
#define ENV_SUBST           (1u << 0) /* ${NAME}: substituted from enroot's environment */
#define ENV_DOLLAR_NAME     (1u << 1) /* $NAME without braces: kept as text */
#define ENV_UNSUPPORTED_EXP (1u << 2) /* ${NAME:-x} and friends: kept as text */
#define ENV_INLINE_HASH     (1u << 3) /* " #..." stays part of the value */
#define ENV_QUOTES_STRIPPED (1u << 4)
#define ENV_SUBST_IN_KEY    (1u << 5) /* ${...} before the '=': the key itself is unknown */

typedef struct Setting {
        const char *key;   /* borrowed from the winning Line */
        const char *value; /* borrowed: the effective value, or the raw text when dynamic */
        unsigned line;     /* the winning line */
        unsigned n_lines;  /* how many lines define the key */
        bool dynamic;      /* depends on the environment or runs shell: compared as text */
        bool unset;        /* conf: a false value ("no", "false", ...) that unsets an ENROOT_ key */
        bool empty;        /* the value is empty: enroot treats it as not set */
        char *canon;       /* owned: what two settings must share to be equal for enroot */
} Setting;

typedef struct Document {
        DocType type;
        Line *lines;
        size_t n_lines;
        Setting *settings; /* sorted by key, one per key */
        size_t n_settings;

        size_t size;                /* bytes parsed */
        char sha256[65];            /* lowercase hex SHA-256 of those bytes: never published */
        unsigned nul_line;          /* first line holding a NUL byte, 0 when none */
        unsigned cr_line;           /* first line ending in a carriage return, 0 when none */
        bool missing_final_newline; /* non-empty file whose last line has no '\n' */
        unsigned syntax_line;       /* conf: line where bash -n fails, 0 when it passes */
        const char *syntax_message; /* static, NULL when it passes */
} Document;

/* What the agent publishes to tell contents apart (docs/OPERATIONS.md,
 * "Which file identity is published"). A plain SHA-256 of a known file that
 * holds one unknown low-entropy value (a proxy password) would let anyone who
 * reads /metrics test guesses offline; an HMAC under a random key that never
 * leaves the process is comparable within that process and useless outside
 * it. The caller draws the key once (getrandom(2)); ids change when it does. */
#define CONTENT_KEY_BYTES 32u
#define CONTENT_ID_HEX    16u /* hex digits published: 64 bits */

typedef struct ContentKey {
        unsigned char bytes[CONTENT_KEY_BYTES];
} ContentKey;

/* Writes CONTENT_ID_HEX lowercase hex digits of HMAC-SHA256(key, the
 * document's SHA-256) and a NUL to ret. Keying the digest rather than the
 * bytes again keeps a cached Document's id one small HMAC away.
 * Returns 0, -EIO when libcrypto fails. */
int document_content_id(const Document *d, const ContentKey *key,
                        char ret[static CONTENT_ID_HEX + 1]);

/* The same from a lowercase hex SHA-256 (a raw file's, content_sha256_hex()). */
int content_id_of_sha256(const char *sha256, const ContentKey *key,
                         char ret[static CONTENT_ID_HEX + 1]);

/* Writes the lowercase hex SHA-256 of len bytes and a NUL to ret: what a raw
 * file is compared by. Never published. Returns 0, -EIO when libcrypto fails. */
int content_sha256_hex(const char *data, size_t len, char ret[static 65]);

/* Parses len bytes of data as a file of the given type.
 * Returns 0 with *ret a new Document owned by the caller, -EFBIG when len
 * exceeds DOCUMENT_MAX_BYTES, -ENOMEM. */
int document_parse(DocType type, const char *data, size_t len, Document **ret);
Document *document_free(Document *d);
DEFINE_TRIVIAL_CLEANUP_FUNC(Document *, document_free);

/* Returns the setting for key, or NULL (borrowed). */
const Setting *document_get(const Document *d, const char *key);

/* True when enroot's loader would refuse the whole file ("Invalid configuration file"). */
bool document_is_refused(const Document *d);

/* From a file name: "*.env" is DOC_ENV, "*.conf" and "enroot.conf" DOC_CONF, else invalid. */
DocType doc_type_from_name(const char *name);
const char *doc_type_to_string(DocType t);
DocType doc_type_from_string(const char *s);

/* enroot.conf key rules (enroot's config loader). True only for
 * ^ENROOT_[[:upper:]_]+$, ^SSL_CERT_(DIR|FILE)$ and ^(all|no|http|https)_proxy$:
 * every other line, MELLANOX_* and NVIDIA_* included, is skipped. */
bool conf_key_is_accepted(const char *key);
/* True for the known ENROOT_* settings (docs/DESIGN.md §5). */
bool conf_key_is_known(const char *key);
/* True for known settings that enroot tests only for being set (yes/no). */
bool conf_key_is_boolean(const char *key);
/* True for values that unset an ENROOT_ key: n no N NO No f false F False FALSE. */
bool conf_value_is_false(const char *value);
/* The known key closest to key (edit distance), or NULL when none is close. */
const char *conf_key_suggest(const char *key);
/* NULL-terminated list of known ENROOT_ keys. */
extern const char *const conf_known_keys[];
