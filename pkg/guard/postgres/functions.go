package postgres

import (
	"strings"

	"github.com/sondehq/sonde/contracts"
)

// allowed is the function allowlist: built-ins that only compute from their
// arguments. A function not named here is refused, whatever it does; a name
// qualified with a schema other than pg_catalog is refused too, so a user
// function of the same name is never reached by the guard's consent.
var allowed = setOf(
	// Aggregates.
	"count", "sum", "avg", "min", "max", "stddev", "stddev_pop", "stddev_samp", "variance",
	"var_pop", "var_samp", "bool_and", "bool_or", "every", "bit_and", "bit_or", "bit_xor",
	"string_agg", "array_agg", "json_agg", "jsonb_agg", "json_object_agg", "jsonb_object_agg",
	"json_agg_strict", "jsonb_agg_strict", "corr", "covar_pop", "covar_samp", "regr_avgx",
	"regr_avgy", "regr_count", "regr_intercept", "regr_r2", "regr_slope", "regr_sxx", "regr_sxy",
	"regr_syy", "any_value", "range_agg", "range_intersect_agg",
	// Ordered-set and hypothetical-set aggregates (WITHIN GROUP).
	"percentile_cont", "percentile_disc", "mode",
	// Window functions (rank, dense_rank, percent_rank and cume_dist are also
	// hypothetical-set aggregates).
	"row_number", "rank", "dense_rank", "percent_rank", "cume_dist", "ntile", "lag", "lead",
	"first_value", "last_value", "nth_value",
	// Mathematics.
	"abs", "cbrt", "ceil", "ceiling", "degrees", "div", "exp", "factorial", "floor", "gcd", "lcm",
	"ln", "log", "log10", "min_scale", "mod", "pi", "power", "pow", "radians", "round", "scale",
	"sign", "sqrt", "trim_scale", "trunc", "width_bucket", "random", "random_normal",
	"acos", "asin", "atan", "atan2", "cos", "cot", "sin", "tan", "acosd", "asind", "atand",
	"atan2d", "cosd", "cotd", "sind", "tand", "sinh", "cosh", "tanh", "asinh", "acosh", "atanh",
	"isnan",
	// Strings.
	"ascii", "bit_length", "btrim", "char_length", "character_length", "chr", "concat",
	"concat_ws", "format", "initcap", "left", "length", "lower", "lpad", "ltrim", "md5",
	"normalize", "is_normalized", "octet_length", "overlay", "position", "quote_ident",
	"quote_literal", "quote_nullable", "regexp_count", "regexp_instr", "regexp_like",
	"regexp_match", "regexp_matches", "regexp_replace", "regexp_split_to_array",
	"regexp_split_to_table", "regexp_substr", "repeat", "replace", "reverse", "right", "rpad",
	"rtrim", "split_part", "starts_with", "strpos", "substr", "substring", "to_hex", "translate",
	"upper", "unistr", "encode", "decode", "sha224", "sha256", "sha384", "sha512",
	"string_to_array", "string_to_table", "array_to_string", "to_ascii", "like_escape",
	"similar_escape", "similar_to_escape",
	// Dates and times.
	"age", "clock_timestamp", "date_add", "date_bin", "date_part", "date_subtract", "date_trunc",
	"extract", "isfinite", "justify_days", "justify_hours", "justify_interval", "make_date",
	"make_interval", "make_time", "make_timestamp", "make_timestamptz", "now",
	"statement_timestamp", "timeofday", "transaction_timestamp", "to_char", "to_date",
	"to_number", "to_timestamp", "timezone", "overlaps",
	// Arrays and ranges.
	"array_append", "array_cat", "array_dims", "array_fill", "array_length", "array_lower",
	"array_ndims", "array_position", "array_positions", "array_prepend", "array_remove",
	"array_replace", "array_upper", "array_sample", "array_shuffle", "cardinality", "trim_array",
	"unnest", "generate_series", "generate_subscripts", "lower_inc", "upper_inc", "lower_inf",
	"upper_inf", "isempty", "range_merge", "int4range", "int8range", "numrange", "tsrange",
	"tstzrange", "daterange",
	// JSON and JSONB accessors and builders.
	"to_json", "to_jsonb", "row_to_json", "array_to_json", "json_build_object",
	"json_build_array", "jsonb_build_object", "jsonb_build_array", "json_object", "jsonb_object",
	"json_array_length", "jsonb_array_length", "json_each", "jsonb_each", "json_each_text",
	"jsonb_each_text", "json_extract_path", "json_extract_path_text", "jsonb_extract_path",
	"jsonb_extract_path_text", "json_object_keys", "jsonb_object_keys", "json_array_elements",
	"json_array_elements_text", "jsonb_array_elements", "jsonb_array_elements_text",
	"json_typeof", "jsonb_typeof", "json_strip_nulls", "jsonb_strip_nulls", "jsonb_set",
	"jsonb_set_lax", "jsonb_insert", "jsonb_pretty", "jsonb_path_exists", "jsonb_path_match",
	"jsonb_path_query", "jsonb_path_query_array", "jsonb_path_query_first",
	// Text search over values (never a query named in a string).
	"to_tsvector", "to_tsquery", "plainto_tsquery", "phraseto_tsquery", "websearch_to_tsquery",
	"ts_rank", "ts_rank_cd", "ts_headline", "setweight", "strip", "numnode", "querytree",
	// Conversions spelled as functions, and small comparisons.
	"date", "text", "int2", "int4", "int8", "float4", "float8", "numeric", "bool", "time",
	"timestamp", "timestamptz", "interval", "varchar", "bpchar", "num_nulls", "num_nonnulls",
	"pg_typeof", "pg_size_pretty", "pg_column_size", "gen_random_uuid", "uuidv4",
	// Geometric, network and type conversions: pure computations whose
	// names are also common column names (name, path, host, width, …), so
	// that t.name reads the column without the guard mistaking it for a call
	// it must refuse.
	"abbrev", "area", "box", "broadcast", "center", "char", "cidr", "circle", "diagonal",
	"diameter", "family", "height", "host", "hostmask", "isclosed", "isopen", "ishorizontal",
	"isvertical", "lseg", "macaddr", "macaddr8", "masklen", "money", "name", "netmask",
	"network", "npoints", "oid", "path", "pclose", "point", "polygon", "popen", "radius",
	"timetz", "width", "xid",
)

// family is a denied group of functions named by a prefix or a name. A
// prefix ending in $ is a whole name ("xml$" is xml, not xmlagg).
type family struct {
	code   contracts.Code
	prefix []string
	reason string
	fix    string
}

// families explain the refusal of the functions that matter most; the
// allowlist already refuses every one of them. A call of one of these names
// is refused even under a schema qualification, and as an attribute (t.f).
var families = []family{
	{contracts.RefuseQuerySettings, []string{"set_config"},
		"changes a server setting from inside the query",
		"drop the set_config call: the connection's limits and settings are the server's"},
	{contracts.RefuseFunctionDenied, []string{"current_setting", "pg_settings_"},
		"reads the server's configuration, which is not part of an investigation",
		"drop the call; read the data, not the server's settings"},
	{contracts.RefuseFunctionDenied, []string{"dblink", "postgres_fdw"},
		"reaches another server (dblink and foreign data wrappers are denied as a family)",
		"read only this connection's own tables"},
	{contracts.RefuseFunctionDenied, []string{"pg_read_file", "pg_read_binary_file", "pg_ls_", "pg_stat_file", "lo_", "pg_file_", "pg_logdir_"},
		"reaches files on the server (file and large-object functions are denied as a family)",
		"read only tables"},
	{contracts.RefuseFunctionDenied, []string{"pg_advisory", "pg_try_advisory"},
		"takes an advisory lock, which outlives a rolled-back transaction",
		"drop the lock call"},
	{contracts.RefuseFunctionDenied, []string{"pg_notify", "pg_logical_", "pg_replication_", "pg_create_", "pg_drop_", "pg_copy_"},
		"sends a message or changes replication state outside the transaction",
		"drop the call"},
	{contracts.RefuseFunctionDenied, []string{"pg_terminate_backend", "pg_cancel_backend", "pg_reload_conf", "pg_rotate_logfile", "pg_promote", "pg_switch_wal", "pg_backup_", "pg_wal_", "pg_log_backend"},
		"controls the server or other sessions",
		"drop the call"},
	{contracts.RefuseFunctionDenied, []string{"nextval", "setval", "currval", "lastval"},
		"uses a sequence, which changes it outside the transaction",
		"read the table's own columns instead of a sequence"},
	{contracts.RefuseFunctionDenied, []string{"query_to_xml", "table_to_xml", "cursor_to_xml", "schema_to_xml", "database_to_xml", "ts_stat", "ts_rewrite"},
		"runs a query or reads a table named in a string, out of the guard's sight",
		"write the query itself as a SELECT over the tables"},
	{contracts.RefuseFunctionDenied, []string{"txid_", "pg_current_xact_id", "pg_snapshot_", "pg_export_snapshot", "pg_xact_"},
		"reads or assigns transaction ids",
		"drop the call"},
	{contracts.RefuseFunctionDenied, []string{"pg_sleep"},
		"holds the connection without reading anything",
		"drop the call"},
	{contracts.RefuseFunctionDenied, []string{"to_reg", "regclass", "regproc", "regtype", "regnamespace", "regrole", "regoper", "regconfig", "regdictionary", "regcollation"},
		"looks up a database object named in a string",
		"name the table in FROM; inspect_schema shows what is readable"},
	{contracts.RefuseFunctionDenied, []string{"setseed", "set_", "pg_stat_reset", "pg_stat_clear_", "pg_import_system_collations", "pg_prewarm"},
		"changes session or server state",
		"drop the call"},
	// Issue 17, item 4: libxml2 parses XML and evaluates XPath without
	// PostgreSQL's interrupt checks; a statement timeout does not stop it
	// (see xmlRule in nodes.go, which refuses XMLPARSE, XMLELEMENT, … and
	// XMLSERIALIZE, and typeName, which refuses casts to xml).
	{contracts.RefuseFunctionDenied, []string{"xpath", "xmlagg", "xmlcomment", "xmlconcat", "xmlexists", "xml_is_well_formed", "xmltext", "xmlvalidate", "texttoxml", "xmltotext", "xml$"},
		"evaluates XML in libxml2, which PostgreSQL cannot interrupt: a statement timeout or cancel does not stop it",
		"read XML columns as they are stored, without XML functions, casts or XPath; or extract the values with string functions"},
}

// familyOf returns the denied family of a function name, if any.
func familyOf(name string) (family, bool) {
	for _, f := range families {
		for _, p := range f.prefix {
			if whole, ok := strings.CutSuffix(p, "$"); ok && name == whole || !ok && strings.HasPrefix(name, p) {
				return f, true
			}
		}
	}
	return family{}, false
}

// tableFunctions are the only functions a FROM may read from.
var tableFunctions = setOf("generate_series", "unnest")

// regTypes are the object-identifier types whose input function looks an
// object up by a name given in a string ('pg_authid'::regclass).
var regTypes = setOf("regclass", "regproc", "regprocedure", "regoper", "regoperator", "regtype",
	"regconfig", "regdictionary", "regnamespace", "regrole", "regcollation")

// FunctionAllowed reports whether the guard lets a statement call the
// built-in function name (unqualified or pg_catalog-qualified).
func FunctionAllowed(name string) bool {
	name = strings.ToLower(name)
	if _, denied := familyOf(name); denied {
		return false
	}
	return allowed[name]
}

func setOf(names ...string) map[string]bool {
	m := make(map[string]bool, len(names))
	for _, n := range names {
		m[n] = true
	}
	return m
}
