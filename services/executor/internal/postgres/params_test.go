package postgres

import (
	"context"
	"errors"
	"testing"

	"github.com/sondehq/sonde/contracts"
)

// TestParameterCountMismatchIsTheCallersMistake: a read or a plan bound with
// too few or too many values is refused as bad_request (a 400 at the
// gateway) before anything is sent, never answered as a database failure;
// the right count reads.
func TestParameterCountMismatchIsTheCallersMistake(t *testing.T) {
	s := testServer(t)
	e := s.engine(t)
	ctx := context.Background()
	for _, c := range []struct {
		sql    string
		params []any
	}{
		{"SELECT amount FROM public.orders WHERE id = $1", nil},
		{"SELECT amount FROM public.orders WHERE id = $1", []any{1, 2}},
		{"SELECT amount FROM public.orders WHERE id = $2", []any{1}},
		{"SELECT amount FROM public.orders", []any{1}},
	} {
		r := req(c.sql, contracts.ProfileInspect)
		r.Params = c.params
		_, err := e.Read(ctx, r)
		var ref *contracts.Refusal
		if !errors.As(err, &ref) || ref.Code != contracts.RefuseBadRequest {
			t.Errorf("read %s with %v: %v, want bad_request", c.sql, c.params, err)
		}
		if _, _, err := e.Plan(ctx, r); !errors.As(err, &ref) || ref.Code != contracts.RefuseBadRequest {
			t.Errorf("plan %s with %v: %v, want bad_request", c.sql, c.params, err)
		}
	}
	r := req("SELECT amount FROM public.orders WHERE id = $1 OR id = $1 + 1", contracts.ProfileInspect)
	r.Params = []any{1}
	if _, err := e.Read(ctx, r); err != nil {
		t.Fatalf("one parameter used twice, one value: %v", err)
	}
}
