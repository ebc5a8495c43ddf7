package postgres

import "github.com/jackc/pgx/v5"

// QuoteIdent quotes an identifier as PostgreSQL's quote_ident does: only
// when PostgreSQL needs it, so the statements in error messages read like
// what a person would type. A name is left bare when it is lower-case
// letters, digits and underscores, does not start with a digit, and is not
// a keyword that quote_ident quotes (quotedKeywords); anything else is
// double-quoted, an inner quote doubled.
func QuoteIdent(s string) string {
	plain := s != ""
	for i, r := range s {
		if !(r >= 'a' && r <= 'z' || r == '_' || (i > 0 && r >= '0' && r <= '9')) {
			plain = false
			break
		}
	}
	if plain && !quotedKeyword(s) {
		return s
	}
	return pgx.Identifier{s}.Sanitize()
}

// quotedKeyword reports whether quote_ident quotes the keyword s: every
// entry of PostgreSQL's src/include/parser/kwlist.h but the
// UNRESERVED_KEYWORD ones (RESERVED_KEYWORD, TYPE_FUNC_NAME_KEYWORD and
// COL_NAME_KEYWORD), as PostgreSQL 18.1 lists them: SELECT word FROM
// pg_get_keywords() WHERE catcode <> 'U'. TestQuoteIdentAgreesWithServer
// compares them with the bed's server. A keyword a later release adds is
// left bare here: the statement it appears in fails with a syntax error
// naming it, it does not mean something else.
func quotedKeyword(s string) bool {
	switch s {
	case "all", "analyse", "analyze", "and", "any", "array", "as", "asc", "asymmetric", "authorization",
		"between", "bigint", "binary", "bit", "boolean", "both", "case", "cast", "char", "character",
		"check", "coalesce", "collate", "collation", "column", "concurrently", "constraint", "create",
		"cross", "current_catalog", "current_date", "current_role", "current_schema", "current_time",
		"current_timestamp", "current_user", "dec", "decimal", "default", "deferrable", "desc",
		"distinct", "do", "else", "end", "except", "exists", "extract", "false", "fetch", "float", "for",
		"foreign", "freeze", "from", "full", "grant", "greatest", "group", "grouping", "having", "ilike",
		"in", "initially", "inner", "inout", "int", "integer", "intersect", "interval", "into", "is",
		"isnull", "join", "json", "json_array", "json_arrayagg", "json_exists", "json_object",
		"json_objectagg", "json_query", "json_scalar", "json_serialize", "json_table", "json_value",
		"lateral", "leading", "least", "left", "like", "limit", "localtime", "localtimestamp",
		"merge_action", "national", "natural", "nchar", "none", "normalize", "not", "notnull", "null",
		"nullif", "numeric", "offset", "on", "only", "or", "order", "out", "outer", "overlaps",
		"overlay", "placing", "position", "precision", "primary", "real", "references", "returning",
		"right", "row", "select", "session_user", "setof", "similar", "smallint", "some", "substring",
		"symmetric", "system_user", "table", "tablesample", "then", "time", "timestamp", "to",
		"trailing", "treat", "trim", "true", "union", "unique", "user", "using", "values", "varchar",
		"variadic", "verbose", "when", "where", "window", "with", "xmlattributes", "xmlconcat",
		"xmlelement", "xmlexists", "xmlforest", "xmlnamespaces", "xmlparse", "xmlpi", "xmlroot",
		"xmlserialize", "xmltable":
		return true
	}
	return false
}
