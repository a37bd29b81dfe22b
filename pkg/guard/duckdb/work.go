package duckdb

import (
	"fmt"
	"regexp/syntax"
	"strings"

	"github.com/sondehq/sonde/contracts"
	"github.com/sondehq/sonde/pkg/guard"
)

// Some built-ins do work that grows with the product of their inputs'
// lengths, and DuckDB cannot interrupt one while it runs: an interrupt is
// seen between vectors of up to 2048 rows, never inside a function's call.
// regexp_extract_all(repeat('a', 1000000), '(a?){500}a{500}') ran 134 s
// past a 1 s deadline, levenshtein over two string_agg results 43 s, and
// damerau_levenshtein of two 12,000-character values allocated a 1.2 GB
// matrix outside DuckDB's memory_limit. So the guard holds what these
// functions are given, before anything runs:
//
//   - no operand may be built from any number of rows (string_agg, list, a
//     subquery) or join several values read from the database (col || col,
//     repeat(col, 10)): nothing bounds its length;
//   - a value read from a table is taken as stored, and may meet only a
//     short built operand (maxBesideData) — unless the statement reads from
//     a derived table (a CTE, a subquery or VALUES in FROM, unnest, or a
//     lambda's parameter), where a "column" can be a value the statement
//     built, up to MaxBuiltValue: then a read value is refused outright;
//   - built operands of known length: the product of their lengths, or a
//     regular expression's compiled size times its subject's length, is at
//     most maxPairWork;
//   - a regular expression must be a constant the guard can compile (with
//     Go's regexp/syntax, which reads RE2's syntax), so its size is known.
const (
	// maxPairWork bounds the work of one call, in pairs of bytes (or
	// compiled instructions times bytes): about 10 ms here.
	maxPairWork = 1 << 20
	// maxBesideData bounds the bytes built beside a value read from a
	// table, or the compiled size of a regular expression over one.
	maxBesideData = 256
)

// pairFunctions compare or match their first two arguments with work that
// grows with the product of their lengths: edit distances and similarity,
// and the LIKE family as the parser names it (ILIKE and GLOB backtrack).
var pairFunctions = set("levenshtein", "damerau_levenshtein", "editdist3", "jaro_similarity",
	"jaro_winkler_similarity", "~~", "!~~", "~~*", "!~~*", "~~~", "like_escape", "not_like_escape",
	"ilike_escape", "not_ilike_escape")

// regexFunctions take a subject and a regular expression (SIMILAR TO and ~
// are regexp_full_match to the parser).
var regexFunctions = set("regexp_matches", "regexp_full_match", "regexp_extract", "regexp_extract_all",
	"regexp_replace", "regexp_split_to_array", "string_split_regex", "str_split_regex")

// checkWork holds every call of pairFunctions and regexFunctions in the tree
// v to the rules above; derives says the statement reads from a derived
// table.
func checkWork(v any, derives bool, depth int) *contracts.Refusal {
	if depth > 4*maxDepth { // a tree's levels: an expression is a node and its lists
		return unsupported("it is nested too deeply")
	}
	switch x := v.(type) {
	case []any:
		for _, c := range x {
			if ref := checkWork(c, derives, depth+1); ref != nil {
				return ref
			}
		}
	case node:
		switch class := str(x, "class"); class {
		case "FUNCTION", "WINDOW":
			name := strings.ToLower(str(x, "function_name"))
			if pairFunctions[name] || regexFunctions[name] {
				args, _ := x["children"].([]any)
				if ref := checkCall(name, args, derives); ref != nil {
					return ref
				}
			}
		}
		for k, c := range x {
			if k == "query_location" {
				continue
			}
			switch c.(type) {
			case node, []any:
				if ref := checkWork(c, derives, depth+1); ref != nil {
					return ref
				}
			}
		}
	}
	return nil
}

// display names the parser's operators as they are written.
var display = map[string]string{
	"~~": "LIKE", "!~~": "NOT LIKE", "~~*": "ILIKE", "!~~*": "NOT ILIKE", "~~~": "GLOB",
	"like_escape": "LIKE … ESCAPE", "not_like_escape": "NOT LIKE … ESCAPE",
	"ilike_escape": "ILIKE … ESCAPE", "not_ilike_escape": "NOT ILIKE … ESCAPE",
	"regexp_full_match": "regexp_full_match (also ~ and SIMILAR TO)",
}

func displayName(name string) string {
	if d, ok := display[name]; ok {
		return d
	}
	return name
}

func tooMuchWork(name, why, fix string) *contracts.Refusal {
	return guard.Refuse(contracts.RefuseTooComplex,
		fmt.Sprintf("%s %s: its work grows with the product of its inputs' lengths, and DuckDB cannot stop a call at the deadline", displayName(name), why),
		fix)
}

// checkCall holds one call's first two arguments to the rules above.
func checkCall(name string, args []any, derives bool) *contracts.Refusal {
	if len(args) < 2 {
		return nil // DuckDB refuses the call itself
	}
	var ops [2]estimate
	for i := range ops {
		e, ref := builtSize(args[i], 0)
		if ref != nil {
			return ref
		}
		if e.grown {
			return tooMuchWork(name, "is given a value built from any number of rows (an aggregate such as string_agg or list, or a subquery)",
				"compare values of single rows (a column, or a short literal), not values aggregated from many rows")
		}
		if e.data && (e.units > 1 || derives) {
			what := "joins several values read from the database"
			if e.units <= 1 {
				what = "reads a value of a derived table (a CTE, a subquery, VALUES or unnest in FROM, or a lambda's parameter), which the statement may have built to any length"
			}
			return tooMuchWork(name, what, "call it on a table's own column and a short literal, in a SELECT that reads the table directly")
		}
		ops[i] = e
	}
	data := ops[0].data || ops[1].data
	if regexFunctions[name] {
		pattern, ok := constString(obj(args[1]))
		if !ok {
			return tooMuchWork(name, "takes a regular expression that is not a constant string, whose size the guard cannot know",
				"write the regular expression as a string literal")
		}
		insts, err := regexSize(pattern)
		if err != nil {
			return tooMuchWork(name, fmt.Sprintf("takes a regular expression the guard cannot size (%v)", err),
				"write a plainer regular expression (RE2 syntax, without \\C)")
		}
		switch {
		case data && insts > maxBesideData:
			return tooMuchWork(name, fmt.Sprintf("matches a value read from the database with a regular expression of %d instructions, more than %d", insts, maxBesideData),
				"use a shorter regular expression: fewer and smaller counted repetitions ({n})")
		case float64(insts)*max(ops[0].bytes, 1) > maxPairWork:
			return tooMuchWork(name, fmt.Sprintf("matches a built value of about %s with a regular expression of %d instructions, more than %d pairs of work", humanBytes(ops[0].bytes), insts, maxPairWork),
				"match a shorter value, or use a shorter regular expression")
		}
		return nil
	}
	switch {
	case data && ops[0].bytes+ops[1].bytes > maxBesideData:
		return tooMuchWork(name, fmt.Sprintf("compares a value read from the database with about %s built by the statement, more than %d bytes", humanBytes(ops[0].bytes+ops[1].bytes), maxBesideData),
			fmt.Sprintf("compare it with a literal of at most %d bytes", maxBesideData))
	case max(ops[0].bytes, 1)*max(ops[1].bytes, 1) > maxPairWork:
		return tooMuchWork(name, fmt.Sprintf("compares built values of about %s and %s, more than %d pairs of work", humanBytes(ops[0].bytes), humanBytes(ops[1].bytes), maxPairWork),
			"compare shorter values (substr() of each)")
	}
	return nil
}

// regexSize is the number of instructions pattern compiles to, as RE2
// compiles it near enough: counted repetitions are written out.
func regexSize(pattern string) (int, error) {
	re, err := syntax.Parse(pattern, syntax.Perl)
	if err != nil {
		return 0, err
	}
	prog, err := syntax.Compile(re.Simplify())
	if err != nil {
		return 0, err
	}
	return len(prog.Inst), nil
}
