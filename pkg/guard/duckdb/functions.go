package duckdb

import (
	"fmt"
	"sort"
	"strings"

	"github.com/sondehq/sonde/contracts"
	"github.com/sondehq/sonde/pkg/guard"
)

// allowedTableFunctions are the only table functions a statement may read
// from: they generate rows from their arguments and read nothing else.
var allowedTableFunctions = set("range", "generate_series", "unnest")

// aggregates are the allowed aggregate and window functions. They are also
// what keeps an expression from being a value in a bound.
var aggregates = set(
	// aggregates
	"any_value", "approx_count_distinct", "approx_quantile", "approx_top_k", "arbitrary",
	"arg_max", "arg_max_null", "arg_max_nulls_last", "arg_min", "arg_min_null", "arg_min_nulls_last",
	"argmax", "argmin", "array_agg", "avg", "bit_and", "bit_or", "bit_xor", "bitstring_agg",
	"bool_and", "bool_or", "corr", "count", "count_if", "count_star", "countif", "covar_pop", "covar_samp",
	"entropy", "favg", "first", "fsum", "geomean", "geometric_mean", "group_concat", "histogram",
	"histogram_exact", "kahan_sum", "kurtosis", "kurtosis_pop", "last", "list", "listagg", "mad", "max",
	"max_by", "mean", "median", "min", "min_by", "mode", "product", "quantile", "quantile_cont",
	"quantile_disc", "percentile_cont", "percentile_disc", "regr_avgx", "regr_avgy", "regr_count",
	"regr_intercept", "regr_r2", "regr_slope", "regr_sxx", "regr_sxy", "regr_syy", "reservoir_quantile",
	"sem", "skewness", "stddev", "stddev_pop", "stddev_samp", "string_agg", "sum", "sum_no_overflow",
	"sumkahan", "var_pop", "var_samp", "variance", "wavg", "weighted_avg", "every", "json_group_array",
	"json_group_object", "json_group_structure", "grouping", "grouping_id",
	// window functions
	"cume_dist", "dense_rank", "fill", "first_value", "lag", "last_value", "lead", "nth_value", "ntile",
	"percent_rank", "rank", "rank_dense", "row_number",
)

// scalars are the allowed scalar functions and operators: arithmetic, text,
// date and time, lists, structs, maps and JSON values. None reads a file, the
// network, another statement or a setting.
var scalars = set(
	// operators, as the parser names them
	"+", "-", "*", "/", "//", "%", "**", "^", "&", "|", "~", "<<", ">>", "||", "&&", "@", "@>", "<@",
	"<->", "<=>", "^@", "~~", "!~~", "~~*", "!~~*", "~~~", "->", "->>", "!__postfix",
	"add", "subtract", "multiply", "divide", "mod", "fdiv", "fmod",
	// conditionals and types
	"coalesce", "ifnull", "nullif", "if", "iff", "greatest", "least", "typeof", "pg_typeof",
	"can_cast_implicitly", "try", "hash", "row", "alias", "error",
	// math
	"abs", "acos", "acosh", "asin", "asinh", "atan", "atan2", "atanh", "bit_count", "cbrt", "ceil",
	"ceiling", "cos", "cosh", "cot", "degrees", "even", "exp", "factorial", "floor", "gamma", "gcd",
	"greatest_common_divisor", "isfinite", "isinf", "isnan", "lcm", "least_common_multiple", "lgamma",
	"ln", "log", "log10", "log2", "nextafter", "pi", "pow", "power", "radians", "random", "round",
	"round_even", "roundbankers", "sign", "signbit", "sin", "sinh", "sqrt", "tan", "tanh", "trunc", "xor",
	"equi_width_bins", "uuid", "gen_random_uuid", "uuidv4", "uuidv7", "uuid_extract_timestamp",
	"uuid_extract_version",
	// text
	"ascii", "bar", "base64", "bin", "bit_length", "char_length", "character_length", "chr", "concat",
	"concat_ws", "contains", "damerau_levenshtein", "decode", "editdist3", "encode", "ends_with",
	"format", "format_bytes", "formatreadabledecimalsize", "formatreadablesize", "from_base64",
	"from_binary", "from_hex", "hamming", "hex", "ilike_escape", "instr", "jaccard", "jaro_similarity",
	"jaro_winkler_similarity", "lcase", "left", "left_grapheme", "len", "length", "length_grapheme",
	"levenshtein", "like_escape", "lower", "lpad", "ltrim", "md5", "md5_number", "md5_number_lower",
	"md5_number_upper", "mismatches", "nfc_normalize", "not_ilike_escape", "not_like_escape",
	"octet_length", "ord", "parse_formatted_bytes", "position", "prefix", "printf", "regexp_escape",
	"regexp_extract", "regexp_extract_all", "regexp_full_match", "regexp_matches", "regexp_replace",
	"regexp_split_to_array", "repeat", "replace", "reverse", "right", "right_grapheme", "rpad", "rtrim",
	"sha1", "sha256", "split", "split_part", "starts_with", "str_split", "str_split_regex", "strip_accents",
	"string_split", "string_split_regex", "string_to_array", "strlen", "strpos", "substr", "substring",
	"substring_grapheme", "suffix", "to_base", "to_base64", "to_binary", "to_hex", "translate", "trim",
	"ucase", "unbin", "unhex", "unicode", "upper", "url_decode", "url_encode", "get_bit", "bit_position",
	"bitstring", "set_bit", "collate",
	// date and time
	"age", "century", "current_date", "current_localtime", "current_localtimestamp", "date_add",
	"date_diff", "date_part", "date_sub", "date_trunc", "datediff", "datepart", "datesub", "datetrunc",
	"day", "dayname", "dayofmonth", "dayofweek", "dayofyear", "days_in_month", "decade", "epoch",
	"epoch_ms", "epoch_ns", "epoch_us", "era", "extract", "get_current_time", "get_current_timestamp",
	"hour", "isodow", "isoyear", "julian", "last_day", "make_date", "make_time", "make_timestamp",
	"make_timestamp_ms", "make_timestamp_ns", "make_timestamptz", "microsecond", "millennium",
	"millisecond", "minute", "month", "monthname", "nanosecond", "normalized_interval", "now", "quarter",
	"second", "strftime", "strptime", "time_bucket", "timezone", "timezone_hour", "timezone_minute",
	"to_centuries", "to_days", "to_decades", "to_hours", "to_microseconds", "to_millennia",
	"to_milliseconds", "to_minutes", "to_months", "to_quarters", "to_seconds", "to_timestamp", "to_weeks",
	"to_years", "today", "transaction_timestamp", "try_strptime", "week", "weekday", "weekofyear", "year",
	"yearweek", "current_timestamp", "localtime", "localtimestamp",
	// lists and arrays
	"aggregate", "apply", "array_aggr", "array_aggregate", "array_append", "array_apply", "array_cat",
	"array_concat", "array_contains", "array_cosine_distance", "array_cosine_similarity",
	"array_cross_product", "array_distance", "array_distinct", "array_dot_product", "array_extract",
	"array_filter", "array_grade_up", "array_has", "array_has_all", "array_has_any", "array_indexof",
	"array_inner_product", "array_intersect", "array_length", "array_negative_dot_product",
	"array_negative_inner_product", "array_pop_back", "array_pop_front", "array_position",
	"array_prepend", "array_push_back", "array_push_front", "array_reduce", "array_resize",
	"array_reverse", "array_reverse_sort", "array_select", "array_slice", "array_sort", "array_to_string",
	"array_transform", "array_unique", "array_value", "array_where", "array_zip", "cardinality",
	"element_at", "filter", "flatten", "generate_series", "generate_subscripts", "grade_up",
	"list_aggr", "list_aggregate", "list_any_value", "list_append", "list_apply",
	"list_approx_count_distinct", "list_avg", "list_bit_and", "list_bit_or", "list_bit_xor",
	"list_bool_and", "list_bool_or", "list_cat", "list_concat", "list_contains", "list_cosine_distance",
	"list_cosine_similarity", "list_count", "list_distance", "list_distinct", "list_dot_product",
	"list_element", "list_entropy", "list_extract", "list_filter", "list_first", "list_grade_up",
	"list_has", "list_has_all", "list_has_any", "list_histogram", "list_indexof", "list_inner_product",
	"list_intersect", "list_kurtosis", "list_kurtosis_pop", "list_last", "list_mad", "list_max",
	"list_median", "list_min", "list_mode", "list_negative_dot_product", "list_negative_inner_product",
	"list_pack", "list_position", "list_prepend", "list_product", "list_reduce", "list_resize",
	"list_reverse", "list_reverse_sort", "list_select", "list_sem", "list_skewness", "list_slice",
	"list_sort", "list_stddev_pop", "list_stddev_samp", "list_string_agg", "list_sum", "list_transform",
	"list_unique", "list_value", "list_var_pop", "list_var_samp", "list_where", "list_zip", "range",
	"reduce", "unnest", "unpivot_list",
	// structs, maps, unions, enums
	"map", "map_concat", "map_contains", "map_contains_entry", "map_contains_value", "map_entries",
	"map_extract", "map_extract_value", "map_from_entries", "map_keys", "map_values", "struct_concat",
	"struct_contains", "struct_extract", "struct_extract_at", "struct_has", "struct_indexof",
	"struct_insert", "struct_keys", "struct_pack", "struct_position", "struct_update", "struct_values",
	"remap_struct", "union_extract", "union_tag", "union_value", "enum_code", "enum_first", "enum_last",
	"enum_range", "enum_range_boundary",
	// JSON values (not json_*_sql, which read or run statements)
	"array_to_json", "from_json", "from_json_strict", "json", "json_array", "json_array_length",
	"json_contains", "json_exists", "json_extract", "json_extract_path", "json_extract_path_text",
	"json_extract_string", "json_keys", "json_merge_patch", "json_object", "json_pretty", "json_quote",
	"json_structure", "json_transform", "json_transform_strict", "json_type", "json_valid", "json_value",
	"row_to_json", "to_json",
	// harmless session facts
	"current_database", "current_catalog", "current_schema", "version",
)

// writers change state even in a read: sequences and the random seed.
var writers = set("nextval", "setval", "currval", "setseed")

// families name what a denied function reaches, by prefix or name, so a
// refusal can say why a whole family is out.
var families = []struct{ match, why string }{
	{"read_", "reads files"},
	{"parquet_", "reads files"},
	{"glob", "lists files"},
	{"sniff_csv", "reads files"},
	{"query", "runs another statement given as a string"},
	{"json_execute_serialized_sql", "runs another statement given as JSON"},
	{"json_serialize", "serializes statements and plans"},
	{"json_deserialize_sql", "turns JSON into statements"},
	{"current_setting", "reads the engine's settings"},
	{"getenv", "reads the server's environment"},
	{"getvariable", "reads session variables"},
	{"duckdb_", "reads the engine's internals"},
	{"pragma_", "reads the engine's internals"},
	{"sqlite_", "reads other databases"},
	{"postgres_", "reads other servers"},
	{"mysql_", "reads other servers"},
	{"iceberg_", "reads files or remote tables"},
	{"delta_", "reads files or remote tables"},
	{"httpfs", "reaches the network"},
	{"http_", "reaches the network"},
	{"sleep", "holds the connection"},
	{"pg_sleep", "holds the connection"},
	{"write_log", "writes the engine's log"},
	{"enable_", "changes engine state"},
	{"disable_", "changes engine state"},
	{"checkpoint", "writes the database"},
	{"force_checkpoint", "writes the database"},
}

func set(names ...string) map[string]bool {
	m := make(map[string]bool, len(names))
	for _, n := range names {
		m[n] = true
	}
	return m
}

// checkFunction holds a function call to the allowlist. A function named
// with a catalog, or a schema other than main, is never a built-in.
func checkFunction(name, schema, catalog string) *contracts.Refusal {
	lower := strings.ToLower(name)
	if writers[lower] {
		return guard.Refuse(contracts.RefuseNotReadOnly,
			fmt.Sprintf("%s changes state (a sequence or the random seed) even inside a read", lower),
			"drop the call; read the values you need instead")
	}
	builtin := catalog == "" && (schema == "" || strings.EqualFold(schema, "main"))
	if builtin && (scalars[lower] || aggregates[lower]) {
		return nil
	}
	why := "is not on the DuckDB allowlist (aggregates, window, math, text, date/time, list, struct and JSON value functions)"
	for _, f := range families {
		if strings.HasPrefix(lower, f.match) {
			why = "is denied: it " + f.why
			break
		}
	}
	if !builtin {
		why = "is not a built-in function (named with a schema or catalog)"
	}
	qualified := lower
	if schema != "" {
		qualified = strings.ToLower(schema) + "." + qualified
	}
	if catalog != "" {
		qualified = strings.ToLower(catalog) + "." + qualified
	}
	return guard.Refuse(contracts.RefuseFunctionDenied,
		fmt.Sprintf("function %s %s", qualified, why),
		"compute it with allowed built-in functions; nothing may reach files, the network, settings or other statements")
}

func refuseTableFunction(name string) *contracts.Refusal {
	allowed := make([]string, 0, len(allowedTableFunctions))
	for n := range allowedTableFunctions {
		allowed = append(allowed, n)
	}
	sort.Strings(allowed)
	why := "is not allowed here"
	for _, f := range families {
		if strings.HasPrefix(name, f.match) {
			why = "is not allowed here: it " + f.why
			break
		}
	}
	return guard.Refuse(contracts.RefuseTableFunction,
		fmt.Sprintf("table function %s(…) %s", name, why),
		"read tables of this database instead; the table functions allowed are "+strings.Join(allowed, ", "))
}
