/*
 * expr/expr_fastparse.c - filter text of the common simple forms, parsed
 * without libpg_query.
 *
 * Why: ex_parse_filter hands the text to libpg_query, whose parse tree comes
 * back as JSON text that jansson reads again before bind() walks it: ~40 us
 * for "sel < 5000", more than the filtered vector search it precedes
 * (issue 12: a filter text never seen before).  The filters applications
 * send are mostly a few comparisons of columns with literals, so those forms
 * are parsed here, by hand, into the very JSON tree libpg_query would have
 * produced, and bound by the same binder (ex_bind_json): one binder, one set
 * of type rules, and the bound expression is the one the slow path gives.
 *
 * The forms (PostgreSQL 15's grammar restricted; keywords in any case):
 *
 *   expr     := and { OR and }                   BoolExpr OR_EXPR  (flattened
 *   and      := not { AND not }                  BoolExpr AND_EXPR  as gram.y does)
 *   not      := NOT not | pred                   BoolExpr NOT_EXPR
 *   pred     := operand [ cmp operand            A_Expr AEXPR_OP
 *                       | IS [NOT] NULL          NullTest
 *                       | [NOT] IN ( operand {, operand} )       A_Expr AEXPR_IN
 *                       | [NOT] BETWEEN [[A]SYMMETRIC] operand AND operand ]
 *   operand  := column | literal | ( expr )
 *   cmp      := < > = <= >= <> !=
 *   column   := identifier naming a top-level, non-nested column exactly
 *               (an unreserved or col_name keyword too, as ColId)
 *   literal  := integer | decimal | real | [-] number | 'string' | TRUE | FALSE | NULL
 *
 * and after a pred only AND, OR, ')' or the end.  Anything else - another
 * keyword, an operator, a cast, a function, a comment, a dotted or
 * case-folded name, E'' and other prefixed strings, an adjacent string
 * (SQL concatenates 'a' 'b' across a newline), a number with trailing junk,
 * deeper nesting than FP_MAX_DEPTH, text over FP_MAX_TEXT bytes - declines
 * and the text goes to libpg_query, which accepts it or says what is wrong.
 * So do texts that parse here but fail to bind: the error comes from the
 * slow path, worded as always.
 *
 * Exactness: every node carries the location libpg_query gives it (an
 * operator's or keyword's position, a negative constant's '-'), integers
 * follow the lexer (int32 -> "ival", 0 and negative ones printed as {} as
 * libpg_query 15 does, larger -> "fval" text; '-' folds into a numeric
 * constant), identifiers fold ASCII to lower case, and a keyword of
 * PostgreSQL's list (FP_KEYWORDS) is a column name exactly when the
 * grammar's ColId takes it (unreserved and col_name keywords: "label",
 * "name", "value", "type", "time", even "between"; never reserved or
 * type_func_name ones such as "user", "window", "left").  Binding
 * goes through ex_bind_json with a scope that resolves only a single name
 * equal to a top-level column's name: for such a column, and for columns
 * that are not structs, lists or maps, the scope binder and the text binder
 * build the same COL node (expr_bind.c: bind_column, scope_col).
 * tests/c/test_expr_fastparse.c compares both paths node by node over a
 * generated corpus; fuzz_filter does the same on every input.
 */
#include "expr/expr_fastparse.h"

#include "expr/expr_int.h"

#include <jansson.h>
#include <stdlib.h>
#include <string.h>

#define FP_MAX_TEXT (64u << 10)   /* far below the slow path's token limit */
#define FP_MAX_DEPTH 48           /* parentheses and NOTs; far below EX_MAX_DEPTH */
#define FP_NAMEDATALEN 64         /* PostgreSQL truncates longer identifiers */

/* PostgreSQL 15's keywords with their category (parser/kwlist.h of the
 * PostgreSQL 15 that libpg_query 15 is built from), sorted for bsearch:
 *
 *   U unreserved, C col_name   a column name (ColId) wherever the fast forms
 *                              take a column: taken here (tests compare
 *                              every one against libpg_query)
 *   T type_func_name, R        never a column name: the text declines (and
 *     reserved                 libpg_query says what is wrong)
 */
typedef struct fp_keyword {
    const char *w;
    char cat;
} fp_keyword;

static const fp_keyword FP_KEYWORDS[] = {
    {"abort", 'U'}, {"absolute", 'U'}, {"access", 'U'}, {"action", 'U'}, {"add", 'U'},
    {"admin", 'U'}, {"after", 'U'}, {"aggregate", 'U'}, {"all", 'R'}, {"also", 'U'},
    {"alter", 'U'}, {"always", 'U'}, {"analyse", 'R'}, {"analyze", 'R'}, {"and", 'R'},
    {"any", 'R'}, {"array", 'R'}, {"as", 'R'}, {"asc", 'R'}, {"asensitive", 'U'},
    {"assertion", 'U'}, {"assignment", 'U'}, {"asymmetric", 'R'}, {"at", 'U'}, {"atomic", 'U'},
    {"attach", 'U'}, {"attribute", 'U'}, {"authorization", 'T'}, {"backward", 'U'},
    {"before", 'U'}, {"begin", 'U'}, {"between", 'C'}, {"bigint", 'C'}, {"binary", 'T'},
    {"bit", 'C'}, {"boolean", 'C'}, {"both", 'R'}, {"breadth", 'U'}, {"by", 'U'},
    {"cache", 'U'}, {"call", 'U'}, {"called", 'U'}, {"cascade", 'U'}, {"cascaded", 'U'},
    {"case", 'R'}, {"cast", 'R'}, {"catalog", 'U'}, {"chain", 'U'}, {"char", 'C'},
    {"character", 'C'}, {"characteristics", 'U'}, {"check", 'R'}, {"checkpoint", 'U'},
    {"class", 'U'}, {"close", 'U'}, {"cluster", 'U'}, {"coalesce", 'C'}, {"collate", 'R'},
    {"collation", 'T'}, {"column", 'R'}, {"columns", 'U'}, {"comment", 'U'}, {"comments", 'U'},
    {"commit", 'U'}, {"committed", 'U'}, {"compression", 'U'}, {"concurrently", 'T'},
    {"configuration", 'U'}, {"conflict", 'U'}, {"connection", 'U'}, {"constraint", 'R'},
    {"constraints", 'U'}, {"content", 'U'}, {"continue", 'U'}, {"conversion", 'U'},
    {"copy", 'U'}, {"cost", 'U'}, {"create", 'R'}, {"cross", 'T'}, {"csv", 'U'}, {"cube", 'U'},
    {"current", 'U'}, {"current_catalog", 'R'}, {"current_date", 'R'}, {"current_role", 'R'},
    {"current_schema", 'T'}, {"current_time", 'R'}, {"current_timestamp", 'R'},
    {"current_user", 'R'}, {"cursor", 'U'}, {"cycle", 'U'}, {"data", 'U'}, {"database", 'U'},
    {"day", 'U'}, {"deallocate", 'U'}, {"dec", 'C'}, {"decimal", 'C'}, {"declare", 'U'},
    {"default", 'R'}, {"defaults", 'U'}, {"deferrable", 'R'}, {"deferred", 'U'},
    {"definer", 'U'}, {"delete", 'U'}, {"delimiter", 'U'}, {"delimiters", 'U'},
    {"depends", 'U'}, {"depth", 'U'}, {"desc", 'R'}, {"detach", 'U'}, {"dictionary", 'U'},
    {"disable", 'U'}, {"discard", 'U'}, {"distinct", 'R'}, {"do", 'R'}, {"document", 'U'},
    {"domain", 'U'}, {"double", 'U'}, {"drop", 'U'}, {"each", 'U'}, {"else", 'R'},
    {"enable", 'U'}, {"encoding", 'U'}, {"encrypted", 'U'}, {"end", 'R'}, {"enum", 'U'},
    {"escape", 'U'}, {"event", 'U'}, {"except", 'R'}, {"exclude", 'U'}, {"excluding", 'U'},
    {"exclusive", 'U'}, {"execute", 'U'}, {"exists", 'C'}, {"explain", 'U'},
    {"expression", 'U'}, {"extension", 'U'}, {"external", 'U'}, {"extract", 'C'},
    {"false", 'R'}, {"family", 'U'}, {"fetch", 'R'}, {"filter", 'U'}, {"finalize", 'U'},
    {"first", 'U'}, {"float", 'C'}, {"following", 'U'}, {"for", 'R'}, {"force", 'U'},
    {"foreign", 'R'}, {"forward", 'U'}, {"freeze", 'T'}, {"from", 'R'}, {"full", 'T'},
    {"function", 'U'}, {"functions", 'U'}, {"generated", 'U'}, {"global", 'U'}, {"grant", 'R'},
    {"granted", 'U'}, {"greatest", 'C'}, {"group", 'R'}, {"grouping", 'C'}, {"groups", 'U'},
    {"handler", 'U'}, {"having", 'R'}, {"header", 'U'}, {"hold", 'U'}, {"hour", 'U'},
    {"identity", 'U'}, {"if", 'U'}, {"ilike", 'T'}, {"immediate", 'U'}, {"immutable", 'U'},
    {"implicit", 'U'}, {"import", 'U'}, {"in", 'R'}, {"include", 'U'}, {"including", 'U'},
    {"increment", 'U'}, {"index", 'U'}, {"indexes", 'U'}, {"inherit", 'U'}, {"inherits", 'U'},
    {"initially", 'R'}, {"inline", 'U'}, {"inner", 'T'}, {"inout", 'C'}, {"input", 'U'},
    {"insensitive", 'U'}, {"insert", 'U'}, {"instead", 'U'}, {"int", 'C'}, {"integer", 'C'},
    {"intersect", 'R'}, {"interval", 'C'}, {"into", 'R'}, {"invoker", 'U'}, {"is", 'T'},
    {"isnull", 'T'}, {"isolation", 'U'}, {"join", 'T'}, {"key", 'U'}, {"label", 'U'},
    {"language", 'U'}, {"large", 'U'}, {"last", 'U'}, {"lateral", 'R'}, {"leading", 'R'},
    {"leakproof", 'U'}, {"least", 'C'}, {"left", 'T'}, {"level", 'U'}, {"like", 'T'},
    {"limit", 'R'}, {"listen", 'U'}, {"load", 'U'}, {"local", 'U'}, {"localtime", 'R'},
    {"localtimestamp", 'R'}, {"location", 'U'}, {"lock", 'U'}, {"locked", 'U'}, {"logged", 'U'},
    {"mapping", 'U'}, {"match", 'U'}, {"matched", 'U'}, {"materialized", 'U'},
    {"maxvalue", 'U'}, {"merge", 'U'}, {"method", 'U'}, {"minute", 'U'}, {"minvalue", 'U'},
    {"mode", 'U'}, {"month", 'U'}, {"move", 'U'}, {"name", 'U'}, {"names", 'U'},
    {"national", 'C'}, {"natural", 'T'}, {"nchar", 'C'}, {"new", 'U'}, {"next", 'U'},
    {"nfc", 'U'}, {"nfd", 'U'}, {"nfkc", 'U'}, {"nfkd", 'U'}, {"no", 'U'}, {"none", 'C'},
    {"normalize", 'C'}, {"normalized", 'U'}, {"not", 'R'}, {"nothing", 'U'}, {"notify", 'U'},
    {"notnull", 'T'}, {"nowait", 'U'}, {"null", 'R'}, {"nullif", 'C'}, {"nulls", 'U'},
    {"numeric", 'C'}, {"object", 'U'}, {"of", 'U'}, {"off", 'U'}, {"offset", 'R'},
    {"oids", 'U'}, {"old", 'U'}, {"on", 'R'}, {"only", 'R'}, {"operator", 'U'}, {"option", 'U'},
    {"options", 'U'}, {"or", 'R'}, {"order", 'R'}, {"ordinality", 'U'}, {"others", 'U'},
    {"out", 'C'}, {"outer", 'T'}, {"over", 'U'}, {"overlaps", 'T'}, {"overlay", 'C'},
    {"overriding", 'U'}, {"owned", 'U'}, {"owner", 'U'}, {"parallel", 'U'}, {"parameter", 'U'},
    {"parser", 'U'}, {"partial", 'U'}, {"partition", 'U'}, {"passing", 'U'}, {"password", 'U'},
    {"placing", 'R'}, {"plans", 'U'}, {"policy", 'U'}, {"position", 'C'}, {"preceding", 'U'},
    {"precision", 'C'}, {"prepare", 'U'}, {"prepared", 'U'}, {"preserve", 'U'},
    {"primary", 'R'}, {"prior", 'U'}, {"privileges", 'U'}, {"procedural", 'U'},
    {"procedure", 'U'}, {"procedures", 'U'}, {"program", 'U'}, {"publication", 'U'},
    {"quote", 'U'}, {"range", 'U'}, {"read", 'U'}, {"real", 'C'}, {"reassign", 'U'},
    {"recheck", 'U'}, {"recursive", 'U'}, {"ref", 'U'}, {"references", 'R'},
    {"referencing", 'U'}, {"refresh", 'U'}, {"reindex", 'U'}, {"relative", 'U'},
    {"release", 'U'}, {"rename", 'U'}, {"repeatable", 'U'}, {"replace", 'U'}, {"replica", 'U'},
    {"reset", 'U'}, {"restart", 'U'}, {"restrict", 'U'}, {"return", 'U'}, {"returning", 'R'},
    {"returns", 'U'}, {"revoke", 'U'}, {"right", 'T'}, {"role", 'U'}, {"rollback", 'U'},
    {"rollup", 'U'}, {"routine", 'U'}, {"routines", 'U'}, {"row", 'C'}, {"rows", 'U'},
    {"rule", 'U'}, {"savepoint", 'U'}, {"schema", 'U'}, {"schemas", 'U'}, {"scroll", 'U'},
    {"search", 'U'}, {"second", 'U'}, {"security", 'U'}, {"select", 'R'}, {"sequence", 'U'},
    {"sequences", 'U'}, {"serializable", 'U'}, {"server", 'U'}, {"session", 'U'},
    {"session_user", 'R'}, {"set", 'U'}, {"setof", 'C'}, {"sets", 'U'}, {"share", 'U'},
    {"show", 'U'}, {"similar", 'T'}, {"simple", 'U'}, {"skip", 'U'}, {"smallint", 'C'},
    {"snapshot", 'U'}, {"some", 'R'}, {"sql", 'U'}, {"stable", 'U'}, {"standalone", 'U'},
    {"start", 'U'}, {"statement", 'U'}, {"statistics", 'U'}, {"stdin", 'U'}, {"stdout", 'U'},
    {"storage", 'U'}, {"stored", 'U'}, {"strict", 'U'}, {"strip", 'U'}, {"subscription", 'U'},
    {"substring", 'C'}, {"support", 'U'}, {"symmetric", 'R'}, {"sysid", 'U'}, {"system", 'U'},
    {"table", 'R'}, {"tables", 'U'}, {"tablesample", 'T'}, {"tablespace", 'U'}, {"temp", 'U'},
    {"template", 'U'}, {"temporary", 'U'}, {"text", 'U'}, {"then", 'R'}, {"ties", 'U'},
    {"time", 'C'}, {"timestamp", 'C'}, {"to", 'R'}, {"trailing", 'R'}, {"transaction", 'U'},
    {"transform", 'U'}, {"treat", 'C'}, {"trigger", 'U'}, {"trim", 'C'}, {"true", 'R'},
    {"truncate", 'U'}, {"trusted", 'U'}, {"type", 'U'}, {"types", 'U'}, {"uescape", 'U'},
    {"unbounded", 'U'}, {"uncommitted", 'U'}, {"unencrypted", 'U'}, {"union", 'R'},
    {"unique", 'R'}, {"unknown", 'U'}, {"unlisten", 'U'}, {"unlogged", 'U'}, {"until", 'U'},
    {"update", 'U'}, {"user", 'R'}, {"using", 'R'}, {"vacuum", 'U'}, {"valid", 'U'},
    {"validate", 'U'}, {"validator", 'U'}, {"value", 'U'}, {"values", 'C'}, {"varchar", 'C'},
    {"variadic", 'R'}, {"varying", 'U'}, {"verbose", 'T'}, {"version", 'U'}, {"view", 'U'},
    {"views", 'U'}, {"volatile", 'U'}, {"when", 'R'}, {"where", 'R'}, {"whitespace", 'U'},
    {"window", 'R'}, {"with", 'R'}, {"within", 'U'}, {"without", 'U'}, {"work", 'U'},
    {"wrapper", 'U'}, {"write", 'U'}, {"xml", 'U'}, {"xmlattributes", 'C'}, {"xmlconcat", 'C'},
    {"xmlelement", 'C'}, {"xmlexists", 'C'}, {"xmlforest", 'C'}, {"xmlnamespaces", 'C'},
    {"xmlparse", 'C'}, {"xmlpi", 'C'}, {"xmlroot", 'C'}, {"xmlserialize", 'C'},
    {"xmltable", 'C'}, {"year", 'U'}, {"yes", 'U'}, {"zone", 'U'},
};

static int kw_cmp(const void *a, const void *b)
{
    return strcmp((const char *)a, ((const fp_keyword *)b)->w);
}

const char *ex_keyword_at(int k)
{
    return k >= 0 && (size_t)k < sizeof FP_KEYWORDS / sizeof FP_KEYWORDS[0] ? FP_KEYWORDS[k].w
                                                                           : NULL;
}

char ex_keyword_category(const char *w)
{
    const fp_keyword *k = bsearch(w, FP_KEYWORDS, sizeof FP_KEYWORDS / sizeof FP_KEYWORDS[0],
                                  sizeof FP_KEYWORDS[0], kw_cmp);
    return k ? k->cat : 0;
}

/* ------------------------------------------------------------------ */
/* tokens                                                              */

typedef enum fp_tok {
    FP_END, FP_IDENT, FP_QIDENT, FP_INT, FP_NUM, FP_STR, FP_CMP, FP_MINUS, FP_LP, FP_RP, FP_COMMA,
    /* keywords the grammar knows */
    FP_AND, FP_OR, FP_NOT, FP_IS, FP_NULL, FP_IN, FP_BETWEEN, FP_SYM, FP_ASYM, FP_TRUE, FP_FALSE
} fp_tok;

typedef struct fp {
    const char *s;
    size_t n, i;          /* text, its length, the next byte to lex */
    const hs_field *schema;
    int depth;
    /* the current token */
    fp_tok tok;
    size_t at, len;       /* its first byte and length in s */
    char word[FP_NAMEDATALEN];   /* FP_IDENT, FP_QIDENT: the name; FP_CMP: the operator */
    size_t word_len;
    char *str;            /* FP_STR: the value (malloc'd, owned here) */
    size_t str_len;
    int64_t ival;         /* FP_INT */
    bool fits32;          /* FP_INT: fits int32, so the lexer's ICONST */
} fp;

static bool is_space(unsigned char c) { return c == ' ' || c == '\t' || c == '\n' || c == '\r'; }
static bool is_digit(unsigned char c) { return c >= '0' && c <= '9'; }
static bool ident_start(unsigned char c)
{
    return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || c == '_' || c >= 0x80;
}
static bool ident_cont(unsigned char c) { return ident_start(c) || is_digit(c) || c == '$'; }
static bool op_char(unsigned char c) { return c && strchr("~!@#^&|`?+-*/%<>=", c) != NULL; }

static const struct { const char *w; fp_tok t; } KW[] = {
    {"and", FP_AND}, {"or", FP_OR}, {"not", FP_NOT}, {"is", FP_IS}, {"null", FP_NULL},
    {"in", FP_IN}, {"between", FP_BETWEEN}, {"symmetric", FP_SYM}, {"asymmetric", FP_ASYM},
    {"true", FP_TRUE}, {"false", FP_FALSE},
};

/* The next token into p->tok; false: the text is not one of the forms. */
static bool lex(fp *p)
{
    free(p->str);
    p->str = NULL;
    while (p->i < p->n && is_space((unsigned char)p->s[p->i]))
        p->i++;
    p->at = p->i;
    if (p->i >= p->n) {
        p->tok = FP_END;
        p->len = 0;
        return true;
    }
    const char *s = p->s;
    size_t i = p->i;
    unsigned char c = (unsigned char)s[i];
    if (ident_start(c)) {
        size_t j = i;
        while (j < p->n && ident_cont((unsigned char)s[j]))
            j++;
        if (j - i >= FP_NAMEDATALEN || (j < p->n && (s[j] == '\'' || s[j] == '"')) ||
            memchr(s + i, '$', j - i))
            return false;   /* truncated, prefixed string (E'', U&"", ...), '$' */
        for (size_t k = i; k < j; k++) {
            unsigned char d = (unsigned char)s[k];
            p->word[k - i] = (char)(d >= 'A' && d <= 'Z' ? d + 32 : d);
        }
        p->word_len = j - i;
        p->word[p->word_len] = '\0';
        p->i = j;
        p->len = j - i;
        for (size_t k = 0; k < sizeof KW / sizeof KW[0]; k++)
            if (!strcmp(p->word, KW[k].w)) {
                p->tok = KW[k].t;
                return true;
            }
        char cat = ex_keyword_category(p->word);
        if (cat == 'R' || cat == 'T')
            return false;   /* not a ColId */
        p->tok = FP_IDENT;
        return true;
    }
    if (c == '"') {
        size_t j = i + 1, k = 0;
        for (;;) {
            if (j >= p->n)
                return false;   /* unterminated */
            if (s[j] == '"') {
                if (j + 1 < p->n && s[j + 1] == '"') {
                    j++;
                } else {
                    break;
                }
            }
            if (k + 1 >= FP_NAMEDATALEN)
                return false;
            p->word[k++] = s[j++];
        }
        if (k == 0)
            return false;   /* zero-length delimited identifier */
        p->word[k] = '\0';
        p->word_len = k;
        p->i = j + 1;
        p->len = p->i - i;
        p->tok = FP_QIDENT;
        return true;
    }
    if (c == '\'') {
        size_t j = i + 1, k = 0;
        char *v = malloc(p->n - i);
        if (!v)
            return false;
        for (;;) {
            if (j >= p->n) {
                free(v);
                return false;
            }
            if (s[j] == '\'') {
                if (j + 1 < p->n && s[j + 1] == '\'') {
                    j++;
                } else {
                    break;
                }
            }
            v[k++] = s[j++];
        }
        p->str = v;
        p->str_len = k;
        p->i = j + 1;
        p->len = p->i - i;
        p->tok = FP_STR;
        return true;
    }
    if (is_digit(c) || (c == '.' && i + 1 < p->n && is_digit((unsigned char)s[i + 1]))) {
        size_t j = i;
        bool dec = false;
        while (j < p->n && is_digit((unsigned char)s[j]))
            j++;
        if (j < p->n && s[j] == '.') {
            dec = true;
            j++;
            while (j < p->n && is_digit((unsigned char)s[j]))
                j++;
        }
        if (j < p->n && (s[j] == 'e' || s[j] == 'E')) {
            size_t e = j + 1;
            if (e < p->n && (s[e] == '+' || s[e] == '-'))
                e++;
            if (e >= p->n || !is_digit((unsigned char)s[e]))
                return false;   /* "1e", "1e+": the lexer's realfail / junk */
            dec = true;
            j = e;
            while (j < p->n && is_digit((unsigned char)s[j]))
                j++;
        }
        if (j < p->n && (ident_cont((unsigned char)s[j]) || s[j] == '.'))
            return false;   /* trailing junk, "1..2" */
        p->i = j;
        p->len = j - i;
        if (!dec) {
            int64_t v = 0;
            bool big = false;
            for (size_t k = i; k < j; k++) {
                v = v * 10 + (s[k] - '0');
                if (v > INT32_MAX) {
                    big = true;
                    break;
                }
            }
            p->fits32 = !big;
            p->ival = v;
        }
        p->tok = dec ? FP_NUM : FP_INT;
        if (p->tok == FP_INT && !p->fits32)
            p->tok = FP_NUM;   /* beyond int32 the lexer makes FCONST, kept as text */
        return true;
    }
    if (op_char(c)) {
        size_t j = i;
        while (j < p->n && op_char((unsigned char)s[j]))
            j++;
        size_t run = j - i;
        const char *op = NULL;
        size_t used = run;
        static const char *const CMPS[] = {"<", ">", "=", "<=", ">=", "<>", "!="};
        /* the lexer drops a trailing '-' from an operator of SQL's characters
         * only ("<-1" is "<" then "-1"; "!=-" stays one operator) */
        if (run >= 2 && s[j - 1] == '-' && s[i] != '!' && s[j - 2] != '-')
            used = run - 1;
        for (size_t k = 0; k < sizeof CMPS / sizeof CMPS[0]; k++)
            if (strlen(CMPS[k]) == used && !memcmp(CMPS[k], s + i, used))
                op = CMPS[k];
        if (run == 1 && c == '-') {
            p->tok = FP_MINUS;
            p->i = i + 1;
            p->len = 1;
            return true;
        }
        if (!op)
            return false;
        if (!strcmp(op, "!="))
            op = "<>";
        strcpy(p->word, op);
        p->word_len = strlen(op);
        p->i = i + used;   /* a dropped '-' is lexed next, as FP_MINUS */
        p->len = used;
        p->tok = FP_CMP;
        return true;
    }
    p->i = i + 1;
    p->len = 1;
    if (c == '(')
        p->tok = FP_LP;
    else if (c == ')')
        p->tok = FP_RP;
    else if (c == ',')
        p->tok = FP_COMMA;
    else
        return false;
    return true;
}

/* ------------------------------------------------------------------ */
/* the JSON libpg_query would print                                    */
/*
 * Every builder takes ownership of the values it is given and returns NULL
 * (having freed them) when out of memory; jansson's *_new functions free the
 * value they fail to store, so nothing is freed twice.
 */

/* o with o[key] = v */
static json_t *put(json_t *o, const char *key, json_t *v)
{
    if (!o || !v) {
        json_decref(o);
        json_decref(v);
        return NULL;
    }
    if (json_object_set_new(o, key, v) != 0) {
        json_decref(o);
        return NULL;
    }
    return o;
}

/* a with v appended */
static json_t *push(json_t *a, json_t *v)
{
    if (!a || !v) {
        json_decref(a);
        json_decref(v);
        return NULL;
    }
    if (json_array_append_new(a, v) != 0) {
        json_decref(a);
        return NULL;
    }
    return a;
}

/* {"kind": body + "location"} */
static json_t *node(const char *kind, json_t *body, size_t loc)
{
    return put(json_object(), kind, put(body, "location", json_integer((json_int_t)loc)));
}

/* [{"String": {"sval": s}}] */
static json_t *name_list(const char *s, size_t n)
{
    return push(json_array(), put(json_object(), "String", put(json_object(), "sval",
                                                                  json_stringn(s, n))));
}

/* A_Expr kind, name [String], lexpr l, rexpr r */
static json_t *mk_aexpr(const char *kind, const char *name, json_t *l, json_t *r, size_t loc)
{
    json_t *b = put(json_object(), "kind", json_string(kind));
    b = put(b, "name", name_list(name, strlen(name)));
    b = put(b, "lexpr", l);
    b = put(b, "rexpr", r);
    return node("A_Expr", b, loc);
}

/* {"List": {"items": items}} */
static json_t *mk_list(json_t *items)
{
    return put(json_object(), "List", put(json_object(), "items", items));
}

/* A_Const {"kind": inner} */
static json_t *mk_const(const char *kind, json_t *inner, size_t loc)
{
    return node("A_Const", put(json_object(), kind, inner), loc);
}

static json_t *mk_ival(int64_t v, size_t loc)
{
    json_t *in = json_object();
    if (v > 0)   /* 0 and negatives print as {} (libpg_query 15) */
        in = put(in, "ival", json_integer((json_int_t)v));
    return mk_const("ival", in, loc);
}

static json_t *mk_sconst(const char *kind, const char *s, size_t n, size_t loc)
{
    return mk_const(kind, put(json_object(), kind, json_stringn(s, n)), loc);
}

static json_t *mk_bool_const(bool v, size_t loc)
{
    json_t *in = json_object();
    if (v)   /* false prints as {} */
        in = put(in, "boolval", json_true());
    return mk_const("boolval", in, loc);
}

static json_t *mk_null_const(size_t loc)
{
    return node("A_Const", put(json_object(), "isnull", json_true()), loc);
}

/* BoolExpr op with args */
static json_t *mk_bool(const char *op, json_t *args, size_t loc)
{
    return node("BoolExpr", put(put(json_object(), "boolop", json_string(op)), "args", args), loc);
}

static json_t *mk_column(const char *name, size_t n, size_t loc)
{
    return node("ColumnRef", put(json_object(), "fields", name_list(name, n)), loc);
}

static json_t *mk_nulltest(json_t *arg, bool neg, size_t loc)
{
    json_t *b = put(json_object(), "arg", arg);
    return node("NullTest", put(b, "nulltesttype", json_string(neg ? "IS_NOT_NULL" : "IS_NULL")),
                loc);
}

/* ------------------------------------------------------------------ */
/* the grammar (see the top); NULL: declined (or out of memory)        */

static json_t *p_expr(fp *p);

/* A column the scope binder resolves as the text binder would: a name equal
 * to a top-level column's (the first such, as find_child), not nested. */
static int column_index(const hs_field *schema, const char *name)
{
    for (int k = 0; k < schema->n_children; k++) {
        const hs_field *f = &schema->children[k];
        if (f->name && !strcmp(f->name, name)) {
            if (f->type == HS_TYPE_STRUCT || f->type == HS_TYPE_LIST ||
                f->type == HS_TYPE_FIXED_LIST || f->type == HS_TYPE_MAP)
                return -1;
            return k;
        }
    }
    return -1;
}

static json_t *p_operand(fp *p)
{
    size_t at = p->at;
    json_t *r = NULL;
    switch (p->tok) {
    case FP_BETWEEN:   /* a col_name keyword: a column where an operand is */
    case FP_IDENT:
    case FP_QIDENT:
        if (column_index(p->schema, p->word) < 0)
            return NULL;
        r = mk_column(p->word, p->word_len, at);
        break;
    case FP_INT:
        r = mk_ival(p->ival, at);
        break;
    case FP_NUM:
        r = mk_sconst("fval", p->s + p->at, p->len, at);
        break;
    case FP_STR:
        r = mk_sconst("sval", p->str, p->str_len, at);
        break;
    case FP_TRUE:
    case FP_FALSE:
        r = mk_bool_const(p->tok == FP_TRUE, at);
        break;
    case FP_NULL:
        r = mk_null_const(at);
        break;
    case FP_MINUS:   /* '-' folds into the number that follows (gram.y doNegate) */
        if (!lex(p))
            return NULL;
        if (p->tok == FP_INT) {
            r = mk_ival(-p->ival, at);
        } else if (p->tok == FP_NUM) {
            char buf[128];
            if (p->len + 2 > sizeof buf)
                return NULL;
            buf[0] = '-';
            memcpy(buf + 1, p->s + p->at, p->len);
            r = mk_sconst("fval", buf, p->len + 1, at);
        } else {
            return NULL;
        }
        break;
    case FP_LP:
        if (++p->depth > FP_MAX_DEPTH || !lex(p))
            return NULL;
        r = p_expr(p);
        p->depth--;
        if (r && p->tok != FP_RP) {
            json_decref(r);
            return NULL;
        }
        break;
    default:
        return NULL;
    }
    if (r && !lex(p)) {
        json_decref(r);
        return NULL;
    }
    return r;
}

/* IN's list: '(' operand {',' operand} ')', the current token '(' */
static json_t *p_in_list(fp *p)
{
    if (p->tok != FP_LP || !lex(p))
        return NULL;
    json_t *items = json_array();
    for (;;) {
        json_t *x = p_operand(p);
        if (!x) {
            json_decref(items);
            return NULL;
        }
        if (!(items = push(items, x)))
            return NULL;
        if (p->tok == FP_RP)
            break;
        if (p->tok != FP_COMMA || !lex(p)) {
            json_decref(items);
            return NULL;
        }
    }
    if (!lex(p)) {
        json_decref(items);
        return NULL;
    }
    return mk_list(items);
}

/* BETWEEN's [[A]SYMMETRIC] lo AND hi, the current token after BETWEEN */
static json_t *p_between(fp *p, bool *sym)
{
    *sym = false;
    if (p->tok == FP_SYM || p->tok == FP_ASYM) {
        *sym = p->tok == FP_SYM;
        if (!lex(p))
            return NULL;
    }
    json_t *lo = p_operand(p);
    if (!lo)
        return NULL;
    if (p->tok != FP_AND || !lex(p)) {
        json_decref(lo);
        return NULL;
    }
    json_t *hi = p_operand(p);
    if (!hi) {
        json_decref(lo);
        return NULL;
    }
    return mk_list(push(push(json_array(), lo), hi));
}

static json_t *p_pred(fp *p)
{
    json_t *l = p_operand(p);
    if (!l)
        return NULL;
    size_t at = p->at;
    json_t *r = NULL;
    if (p->tok == FP_CMP) {
        char op[4];
        memcpy(op, p->word, p->word_len + 1);
        json_t *x = lex(p) ? p_operand(p) : NULL;
        if (!x)
            goto no;
        r = mk_aexpr("AEXPR_OP", op, l, x, at);
    } else if (p->tok == FP_IS) {
        bool neg = false;
        if (!lex(p))
            goto no;
        if (p->tok == FP_NOT) {
            neg = true;
            if (!lex(p))
                goto no;
        }
        if (p->tok != FP_NULL || !lex(p))
            goto no;
        r = mk_nulltest(l, neg, at);
    } else if (p->tok == FP_NOT || p->tok == FP_IN || p->tok == FP_BETWEEN) {
        bool neg = p->tok == FP_NOT;
        if (neg && !lex(p))
            goto no;
        if (p->tok == FP_IN) {
            json_t *list = lex(p) ? p_in_list(p) : NULL;
            if (!list)
                goto no;
            r = mk_aexpr("AEXPR_IN", neg ? "<>" : "=", l, list, at);
        } else if (p->tok == FP_BETWEEN) {
            static const char *const KIND[2][2] = {{"AEXPR_BETWEEN", "AEXPR_BETWEEN_SYM"},
                                                   {"AEXPR_NOT_BETWEEN", "AEXPR_NOT_BETWEEN_SYM"}};
            static const char *const NAME[2][2] = {{"BETWEEN", "BETWEEN SYMMETRIC"},
                                                   {"NOT BETWEEN", "NOT BETWEEN SYMMETRIC"}};
            bool sym;
            json_t *list = lex(p) ? p_between(p, &sym) : NULL;
            if (!list)
                goto no;
            r = mk_aexpr(KIND[neg][sym], NAME[neg][sym], l, list, at);
        } else {
            goto no;   /* NOT LIKE, NOT SIMILAR, ... */
        }
    } else {
        r = l;
    }
    if (r && p->tok != FP_AND && p->tok != FP_OR && p->tok != FP_RP && p->tok != FP_END) {
        json_decref(r);   /* "a = 1 = 2", "a IS NULL IS NULL", ... */
        return NULL;
    }
    return r;
no:
    json_decref(l);
    return NULL;
}

static json_t *p_not(fp *p)
{
    if (p->tok != FP_NOT)
        return p_pred(p);
    size_t at = p->at;
    if (++p->depth > FP_MAX_DEPTH || !lex(p))
        return NULL;
    json_t *x = p_not(p);
    p->depth--;
    return x ? mk_bool("NOT_EXPR", push(json_array(), x), at) : NULL;
}

/* x's args when x is a BoolExpr of op: gram.y's makeAndExpr / makeOrExpr
 * append to them rather than nest (also when x came in parentheses). */
static json_t *bool_args(json_t *x, const char *op)
{
    json_t *b = json_object_get(x, "BoolExpr");
    json_t *o = b ? json_object_get(b, "boolop") : NULL;
    return o && json_is_string(o) && !strcmp(json_string_value(o), op) ? json_object_get(b, "args")
                                                                       : NULL;
}

static json_t *p_chain(fp *p, fp_tok kw, const char *op, json_t *(*sub)(fp *))
{
    json_t *l = sub(p);
    while (l && p->tok == kw) {
        size_t at = p->at;
        json_t *r = lex(p) ? sub(p) : NULL;
        if (!r) {
            json_decref(l);
            return NULL;
        }
        json_t *args = bool_args(l, op);
        if (args) {
            if (json_array_append_new(args, r) != 0) {
                json_decref(l);
                return NULL;
            }
        } else {
            l = mk_bool(op, push(push(json_array(), l), r), at);
        }
    }
    return l;
}

static json_t *p_and(fp *p) { return p_chain(p, FP_AND, "AND_EXPR", p_not); }
static json_t *p_expr(fp *p) { return p_chain(p, FP_OR, "OR_EXPR", p_and); }

/* ------------------------------------------------------------------ */
/* binding                                                             */

static int scope_column(void *ctx, const char *const *names, int n)
{
    return n == 1 ? column_index(ctx, names[0]) : -1;
}

hs_status ex_fastparse_filter(const char *text, const hs_field *schema, ex_expr **out,
                              hs_error *err)
{
    (void)err;
    *out = NULL;
    if (!text || !schema || schema->type != HS_TYPE_STRUCT)
        return HS_UNSUPPORTED;
    size_t n = strlen(text);
    if (n == 0 || n > FP_MAX_TEXT)
        return HS_UNSUPPORTED;
    fp p = {.s = text, .n = n, .schema = schema};
    json_t *root = NULL;
    if (lex(&p) && p.tok != FP_END) {
        root = p_expr(&p);
        if (root && p.tok != FP_END) {   /* a stray ')' */
            json_decref(root);
            root = NULL;
        }
    }
    free(p.str);
    if (!root)
        return HS_UNSUPPORTED;
    ex_scope scope = {.schema = schema, .column = scope_column, .ctx = (void *)schema};
    hs_error e2 = {0};
    hs_status st = ex_bind_json(root, text, &scope, true, out, &e2);
    json_decref(root);
    return st == HS_OK ? HS_OK : HS_UNSUPPORTED;
}

static bool fast_enabled(void)
{
    static int on = -1;
    int v = __atomic_load_n(&on, __ATOMIC_RELAXED);
    if (v < 0) {
        const char *e = getenv("HS_FILTER_FASTPARSE");
        v = !(e && strcmp(e, "0") == 0);
        __atomic_store_n(&on, v, __ATOMIC_RELAXED);
    }
    return v;
}

hs_status ex_parse_filter_fast(const char *text, const hs_field *schema, ex_expr **out,
                               hs_error *err)
{
    if (fast_enabled() && ex_fastparse_filter(text, schema, out, err) == HS_OK)
        return HS_OK;
    return ex_parse_filter(text, schema, out, err);
}
