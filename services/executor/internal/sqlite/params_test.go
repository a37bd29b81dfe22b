package sqlite

import (
	"context"
	"testing"

	"github.com/sondehq/sonde/contracts"
	"github.com/sondehq/sonde/services/executor/internal/engine"
)

// TestParameterCountMismatchIsTheCallersMistake: a statement bound with too
// few or too many values is refused as bad_request (the caller's mistake, a
// 400 at the gateway), never run and never answered as a database failure;
// a named parameter, which a list cannot bind, is refused the same way;
// the right count reads.
func TestParameterCountMismatchIsTheCallersMistake(t *testing.T) {
	e := open(t, fixture(t))
	for _, c := range []struct {
		sql    string
		params []any
	}{
		{"SELECT id FROM t WHERE id = ?", nil},
		{"SELECT id FROM t WHERE id = ?", []any{1.0, 2.0}},
		{"SELECT id FROM t WHERE id = ?2", []any{1.0}},
		{"SELECT id FROM t WHERE id = :a OR id = :b", []any{1.0, 2.0}},
		{"SELECT id FROM t WHERE id = :a", []any{1.0}},
		{"SELECT id FROM t", []any{1.0}},
	} {
		_, err := e.Read(context.Background(), engine.Request{SQL: c.sql, Params: c.params, Limits: refuseLimits, Timeout: readTimeout})
		wantRefusal(t, err, contracts.RefuseBadRequest)
	}
	for _, c := range []struct {
		sql    string
		params []any
	}{
		{"SELECT id FROM t WHERE id = ?", []any{1.0}},
		{"SELECT id FROM t WHERE id = ?1 OR id = ?1", []any{1.0}},
		{"SELECT id FROM t WHERE id = ?2 OR id = ?", []any{1.0, 2.0, 3.0}},
	} {
		if _, err := e.Read(context.Background(), engine.Request{SQL: c.sql, Params: c.params, Limits: refuseLimits, Timeout: readTimeout}); err != nil {
			t.Errorf("%s with %v: %v", c.sql, c.params, err)
		}
	}
}
