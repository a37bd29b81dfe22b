package sqlite

import "strings"

// The functions a statement may call: SQLite's core scalar, aggregate,
// window, date and time, math and JSON functions, and the FTS5 auxiliary
// functions. Everything else is denied, so a function this list has not
// heard of — an extension's, one added by a later SQLite — is refused rather
// than trusted.
var functions = set(
	// core scalar
	"abs", "char", "coalesce", "concat", "concat_ws", "format", "glob", "hex", "if", "ifnull", "iif",
	"instr", "length", "like", "likelihood", "likely", "lower", "ltrim", "max", "min", "nullif",
	"octet_length", "printf", "quote", "random", "randomblob", "replace", "round", "rtrim", "sign",
	"soundex", "substr", "substring", "trim", "typeof", "unhex", "unicode", "unistr", "unistr_quote",
	"unlikely", "upper", "zeroblob", "sqlite_version",
	// operators SQLite compiles to functions
	"->", "->>", "match", "regexp",
	// aggregate
	"avg", "count", "group_concat", "string_agg", "sum", "total", "median", "percentile",
	"percentile_cont", "percentile_disc", "json_group_array", "json_group_object",
	"jsonb_group_array", "jsonb_group_object",
	// window
	"row_number", "rank", "dense_rank", "percent_rank", "cume_dist", "ntile", "lag", "lead",
	"first_value", "last_value", "nth_value",
	// date and time
	"date", "time", "datetime", "julianday", "unixepoch", "strftime", "timediff",
	"current_date", "current_time", "current_timestamp",
	// math
	"acos", "acosh", "asin", "asinh", "atan", "atan2", "atanh", "ceil", "ceiling", "cos", "cosh",
	"degrees", "exp", "floor", "ln", "log", "log10", "log2", "mod", "pi", "pow", "power", "radians",
	"sin", "sinh", "sqrt", "tan", "tanh", "trunc",
	// JSON
	"json", "jsonb", "json_array", "jsonb_array", "json_array_length", "json_error_position",
	"json_extract", "jsonb_extract", "json_insert", "jsonb_insert", "json_object", "jsonb_object",
	"json_patch", "jsonb_patch", "json_pretty", "json_quote", "json_remove", "jsonb_remove",
	"json_replace", "jsonb_replace", "json_set", "jsonb_set", "json_type", "json_valid",
	// FTS5 auxiliary functions over a readable full-text table
	"bm25", "highlight", "snippet",
)

// aggregates are the functions that are not a function of constants even
// when their arguments are.
var aggregates = set("avg", "count", "group_concat", "string_agg", "sum", "total", "median",
	"percentile", "percentile_cont", "percentile_disc", "json_group_array", "json_group_object",
	"jsonb_group_array", "jsonb_group_object", "row_number", "rank", "dense_rank", "percent_rank",
	"cume_dist", "ntile", "lag", "lead", "first_value", "last_value", "nth_value", "max", "min")

// allowedFunction reports whether a statement may call the function name.
func allowedFunction(name string) bool { return functions[strings.ToLower(name)] }

// deniedFamily names the family of a denied function, for the refusal.
func deniedFamily(name string) string {
	n := strings.ToLower(name)
	switch {
	case n == "load_extension":
		return "it loads native code into the database process"
	case n == "readfile" || n == "writefile" || n == "edit" || n == "fsdir" || strings.HasPrefix(n, "zipfile"):
		return "it reaches the file system"
	case n == "fts3_tokenizer":
		return "it registers native code"
	case strings.HasPrefix(n, "sqlite_"):
		return "it is one of SQLite's internal functions"
	}
	return "it is not on the SQLite allowlist (core, aggregate, window, date, math and JSON functions)"
}

// Table-valued functions: json_each and json_tree (and their jsonb forms)
// read only the JSON value they are given, so they are allowed; the
// read-only metadata pragmas are allowed in their table-valued form
// (pragma_table_info(…)), their argument checked when SQLite runs them; every
// other eponymous virtual table SQLite offers is refused.
var (
	jsonTableFunctions  = set("json_each", "json_tree", "jsonb_each", "jsonb_tree")
	otherTableFunctions = set("dbstat", "sqlite_dbpage", "sqlite_stmt", "generate_series", "carray",
		"completion", "fsdir", "zipfile", "fts3tokenize", "fts5vocab", "sqlite_dbdata", "sqlite_dbptr",
		"bytecode", "tables_used")
)

// metadataPragmas are the read-only metadata pragmas, as statements and in
// their table-valued form.
var metadataPragmas = set("table_info", "table_xinfo", "index_list", "index_info", "index_xinfo",
	"foreign_key_list", "table_list")

// tableFunction classifies a table name the authorizer reports a READ of:
// not a table function, an allowed one, or a refused one.
func tableFunction(name string) (isFunc, allowed bool) {
	n := strings.ToLower(name)
	switch {
	case jsonTableFunctions[n]:
		return true, true
	case strings.HasPrefix(n, "pragma_"):
		return true, metadataPragmas[strings.TrimPrefix(n, "pragma_")]
	case otherTableFunctions[n]:
		return true, false
	}
	return false, false
}
