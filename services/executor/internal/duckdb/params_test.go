package duckdb

import (
	"context"
	"errors"
	"testing"

	"github.com/sondehq/sonde/contracts"
)

// TestParameterCountMismatchIsTheCallersMistake: a read or a plan bound with
// too few or too many values is refused as bad_request (a 400 at the
// gateway), as DuckDB's own prepare counts the parameters, never answered as
// a database failure; the right count reads.
func TestParameterCountMismatchIsTheCallersMistake(t *testing.T) {
	e := open(t, fixture(t), nil, nil)
	ctx := context.Background()
	for _, c := range []struct {
		sql    string
		params []any
	}{
		{"SELECT name FROM customers WHERE id = ?", nil},
		{"SELECT name FROM customers WHERE id = ?", []any{1.0, 2.0}},
		{"SELECT name FROM customers", []any{1.0}},
	} {
		r := read(c.sql)
		r.Params = c.params
		var ref *contracts.Refusal
		if _, err := e.Read(ctx, r); !errors.As(err, &ref) || ref.Code != contracts.RefuseBadRequest {
			t.Errorf("read %s with %v: %v, want bad_request", c.sql, c.params, err)
		}
		if _, _, err := e.Plan(ctx, r); !errors.As(err, &ref) || ref.Code != contracts.RefuseBadRequest {
			t.Errorf("plan %s with %v: %v, want bad_request", c.sql, c.params, err)
		}
	}
	r := read("SELECT name FROM customers WHERE id = $1 OR id = $1 + 1")
	r.Params = []any{1.0}
	if _, err := e.Read(ctx, r); err != nil {
		t.Fatalf("one parameter used twice, one value: %v", err)
	}
}
