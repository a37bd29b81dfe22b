// Package duckdb is the guard's DuckDB reader: it asks DuckDB's own parser,
// json_serialize_sql on a locked in-memory instance, what a statement is, and
// reduces the parse tree to the neutral guard.Statement.
//
// The parser instance reads no database, no file and no network: external
// access is off, extension autoloading and autoinstalling are off and its
// configuration is locked before the first statement is read. It is used only
// to parse (json_serialize_sql does not bind or run what it serializes) and,
// once a statement has passed, to print its canonical form
// (json_deserialize_sql).
//
// What the reader refuses, beyond what the parser itself refuses:
//   - table functions other than range, generate_series and unnest
//     (read_csv, read_parquet, query, query_table, glob, …): table_function;
//   - a table named like a file ('data.csv', "s3://…"), which DuckDB would
//     read through a replacement scan: table_function;
//   - any scalar, aggregate or window function not on the allowlist
//     (functions.go): function_denied; sequences and the random seed:
//     not_read_only;
//   - DESCRIBE, SHOW and SUMMARIZE, which DuckDB parses as SELECTs: not_a_select;
//   - time travel (AT (VERSION => …)): unsupported.
package duckdb

import (
	"context"
	"database/sql"
	"encoding/json"
	"fmt"
	"strings"
	"time"

	duckdb "github.com/duckdb/duckdb-go/v2"
	"github.com/sondehq/sonde/contracts"
	"github.com/sondehq/sonde/pkg/guard"
)

// MaxSQLBytes is the longest statement the reader reads.
const MaxSQLBytes = 256 << 10

// parseTimeout bounds one call to the parser instance.
const parseTimeout = 5 * time.Second

// parserSettings lock down the in-memory parser instance. Everything but
// lock_configuration is set when the instance opens; lock_configuration is
// set last, by statement, so no setting can be changed afterwards.
var parserSettings = []string{
	"enable_external_access=false",
	"autoload_known_extensions=false",
	"autoinstall_known_extensions=false",
	"allow_community_extensions=false",
	"threads=1",
	"memory_limit=64MB",
}

// Reader reads DuckDB statements with DuckDB's own parser. It implements
// guard.Reader and is safe for concurrent use. Close it when done.
type Reader struct {
	db        *sql.DB
	serialize *sql.Stmt // serializeSQL, prepared once per pooled connection
	raw       *sql.Stmt // json_serialize_sql alone
}

var _ guard.Reader = (*Reader)(nil)

// New opens the locked in-memory parser instance.
func New() (*Reader, error) {
	connector, err := duckdb.NewConnector(":memory:?"+strings.Join(parserSettings, "&"), nil)
	if err != nil {
		return nil, fmt.Errorf("duckdb guard: open parser: %w", err)
	}
	db := sql.OpenDB(connector)
	db.SetMaxIdleConns(4)
	ctx, cancel := context.WithTimeout(context.Background(), parseTimeout)
	defer cancel()
	if _, err := db.ExecContext(ctx, "SET lock_configuration = true"); err != nil {
		db.Close()
		return nil, fmt.Errorf("duckdb guard: lock parser configuration: %w", err)
	}
	r := &Reader{db: db}
	if r.serialize, err = db.PrepareContext(ctx, serializeSQL); err == nil {
		r.raw, err = db.PrepareContext(ctx, "SELECT json_serialize_sql(?::VARCHAR)::VARCHAR")
	}
	if err != nil {
		db.Close()
		return nil, fmt.Errorf("duckdb guard: prepare parser call: %w", err)
	}
	return r, nil
}

// Close closes the parser instance.
func (r *Reader) Close() error {
	r.serialize.Close()
	r.raw.Close()
	return r.db.Close()
}

// parsed is json_serialize_sql's answer.
type parsed struct {
	Error        bool              `json:"error"`
	ErrorType    string            `json:"error_type"`
	ErrorMessage string            `json:"error_message"`
	Position     string            `json:"position"`
	Statements   []json.RawMessage `json:"statements"`
}

// Serialize returns DuckDB's JSON serialization of sql, exactly as
// json_serialize_sql writes it. It is the raw parse the guard builds on.
func (r *Reader) Serialize(sql string) (string, error) {
	ctx, cancel := context.WithTimeout(context.Background(), parseTimeout)
	defer cancel()
	var out string
	err := r.raw.QueryRowContext(ctx, sql).Scan(&out)
	return out, err
}

// Read parses sql with DuckDB's parser and returns its neutral shape, or the
// refusal for what it is.
func (r *Reader) Read(sql string) (*guard.Statement, *contracts.Refusal) {
	if ref := guard.CheckShape(sql, guard.LexDuckDB); ref != nil { // before any native parser: docs/guard.md
		return nil, ref
	}
	text := trimStatement(sql)
	if text == "" {
		return nil, refuseEmpty()
	}
	if len(text) > MaxSQLBytes {
		return nil, guard.Refuse(contracts.RefuseUnsupported,
			fmt.Sprintf("the statement is %d bytes; the guard reads at most %d", len(text), MaxSQLBytes),
			"write a shorter statement")
	}
	raw, canonical, err := r.parse(text)
	if err != nil {
		return nil, parserUnavailable(err)
	}
	var p parsed
	if err := json.Unmarshal([]byte(raw), &p); err != nil {
		return nil, parserUnavailable(err)
	}
	if p.Error {
		return nil, refuseParseError(text, p)
	}
	switch len(p.Statements) {
	case 0:
		return nil, refuseEmpty()
	case 1:
	default:
		return nil, refuseNotOne(len(p.Statements))
	}
	var stmt struct {
		Node node `json:"node"`
	}
	dec := json.NewDecoder(strings.NewReader(string(p.Statements[0])))
	dec.UseNumber()
	if err := dec.Decode(&stmt); err != nil || stmt.Node == nil {
		return nil, parserUnavailable(fmt.Errorf("decode parse tree: %v", err))
	}
	w := &walker{}
	if ref := w.query(stmt.Node, nil); ref != nil {
		return nil, ref
	}
	if ref := checkWork(stmt.Node, w.derives, 0); ref != nil {
		return nil, ref
	}
	return &guard.Statement{
		Text:      text,
		Canonical: canonicalForm(canonical, p.Statements[0]),
		Scopes:    w.scopes,
		Names:     guard.NamesFold,
		// Column uses as the walker found them (Scope.Columns).
		ColumnsRead: true,
	}, nil
}

// serializeSQL asks the parser for the tree and, for one statement, DuckDB's
// own printing of it back as SQL: the canonical form, which keeps literals
// and drops comments, keyword case and spacing. TRY leaves it NULL where the
// printer fails.
const serializeSQL = `SELECT s::VARCHAR,
  CASE WHEN json_array_length(s, '$.statements') = 1 THEN TRY(json_deserialize_sql(s)) END
FROM (SELECT json_serialize_sql(?::VARCHAR) AS s)`

func (r *Reader) parse(text string) (tree string, canonical sql.NullString, err error) {
	ctx, cancel := context.WithTimeout(context.Background(), parseTimeout)
	defer cancel()
	err = r.serialize.QueryRowContext(ctx, text).Scan(&tree, &canonical)
	return tree, canonical, err
}

// canonicalForm is DuckDB's printing of the statement or, where the printer
// failed, the compact tree without source positions.
func canonicalForm(printed sql.NullString, stmt json.RawMessage) string {
	if printed.Valid && printed.String != "" {
		return printed.String
	}
	var tree any
	if err := json.Unmarshal(stmt, &tree); err != nil {
		return string(stmt)
	}
	stripLocations(tree)
	b, _ := json.Marshal(tree)
	return string(b)
}

func stripLocations(v any) {
	switch x := v.(type) {
	case map[string]any:
		delete(x, "query_location")
		for _, c := range x {
			stripLocations(c)
		}
	case []any:
		for _, c := range x {
			stripLocations(c)
		}
	}
}

// trimStatement drops surrounding space and trailing terminators: what runs.
func trimStatement(s string) string {
	return strings.TrimRight(strings.TrimSpace(s), "; \t\r\n")
}

func refuseEmpty() *contracts.Refusal {
	return guard.Refuse(contracts.RefuseEmpty, "nothing to run: the query is blank, or only comments and semicolons",
		"send one SELECT")
}

func refuseNotOne(n int) *contracts.Refusal {
	return guard.Refuse(contracts.RefuseNotOneStatement,
		fmt.Sprintf("the query holds %d statements; only one runs at a time", n),
		"send one SELECT at a time, without other statements after a semicolon")
}

// parserUnavailable refuses a statement the parser instance could not be
// asked about (closed, interrupted, out of memory): never guessed at.
func parserUnavailable(err error) *contracts.Refusal {
	return guard.Refuse(contracts.RefuseEngineParse,
		"DuckDB's parser could not read the statement: "+err.Error(),
		"write it as one plain SELECT in DuckDB SQL")
}

// refuseParseError maps json_serialize_sql's error to a refusal. The parser
// names what it refused only in its message, so the message and the
// statement's leading keyword pick the code; every branch refuses.
func refuseParseError(text string, p parsed) *contracts.Refusal {
	msg := p.ErrorMessage
	lower := strings.ToLower(msg)
	switch {
	case strings.Contains(lower, "locking clause"):
		return guard.Refuse(contracts.RefuseNotReadOnly, "FOR UPDATE / FOR SHARE locks rows: "+msg,
			"drop the locking clause; reads need no locks")
	case strings.Contains(lower, "select into"):
		return guard.Refuse(contracts.RefuseNotReadOnly, "SELECT … INTO writes a table: "+msg,
			"drop INTO; the result comes back as the answer")
	case strings.Contains(lower, "cte needs a select"):
		return guard.Refuse(contracts.RefuseNotReadOnly, "a CTE that is not a SELECT writes (INSERT, UPDATE or DELETE inside WITH): "+msg,
			"write every CTE as a SELECT")
	}
	stmts := splitStatements(text)
	if len(stmts) > 1 {
		return refuseNotOne(len(stmts))
	}
	if p.ErrorType == "not implemented" && strings.Contains(lower, "only select") {
		kw := "the statement"
		if len(stmts) == 1 {
			kw = strings.ToUpper(leadingKeyword(stmts[0]))
		}
		return guard.Refuse(contracts.RefuseNotASelect,
			fmt.Sprintf("%s is not a SELECT; only reads run here", kw),
			"send one SELECT (WITH, UNION, joins and subqueries are fine); to see a table's columns use inspect_schema")
	}
	reason := "DuckDB cannot parse the query: " + msg
	if p.Position != "" {
		reason += " (at character " + p.Position + ")"
	}
	return guard.Refuse(contracts.RefuseUnparsable, reason,
		"write it in DuckDB SQL (a PostgreSQL-like dialect; FROM-first and QUALIFY are fine)")
}
