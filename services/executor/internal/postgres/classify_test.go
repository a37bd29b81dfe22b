package postgres

import (
	"context"
	"errors"
	"testing"

	"github.com/sondehq/sonde/contracts"
)

// The SQLSTATE of a server error travels on the engine's typed error, so
// the engine branches on the code and never on the message: a real 55000
// from the server is recognised, still a *contracts.DBError for the
// executor, and a message that merely reads like one is not.
func TestSQLStateCarriedByType(t *testing.T) {
	s := testServer(t)
	mustExec(t, s.admin, "CREATE SEQUENCE public.sonde_sqlstate_seq")
	e := s.ownerEngine(t)
	ctx := context.Background()
	// currval before nextval in this session: object_not_in_prerequisite_state.
	_, err := e.run(ctx, "SELECT pg_catalog.currval('public.sonde_sqlstate_seq')", nil, req("", contracts.ProfileInspect))
	if got := sqlState(err); got != "55000" {
		t.Fatalf("currval before nextval: SQLSTATE %q (%v), want 55000", got, err)
	}
	if !notLoaded(err) {
		t.Errorf("notLoaded(%v) = false for a 55000", err)
	}
	if d := dbErr(t, err); d.Class != contracts.DBOther {
		t.Errorf("55000 classified %s, want %s", d.Class, contracts.DBOther)
	}
	// Another code is not 55000, whatever its text says.
	_, err = e.run(ctx, "SELECT 1 / 0", nil, req("", contracts.ProfileInspect))
	if got := sqlState(err); got != "22012" || notLoaded(err) {
		t.Errorf("division by zero: SQLSTATE %q, notLoaded %v", got, notLoaded(err))
	}

	// Text is not a type: an error that only reads like a 55000 is not one.
	spoof := &contracts.DBError{Class: contracts.DBOther, Message: "SQLSTATE 55000: pg_stat_statements must be loaded via shared_preload_libraries"}
	if notLoaded(spoof) || notLoaded(errors.New("SQLSTATE 55000: x")) {
		t.Error("notLoaded matched a message, want the code carried by type")
	}
	if sqlState(nil) != "" {
		t.Error("sqlState(nil) is not empty")
	}
}
