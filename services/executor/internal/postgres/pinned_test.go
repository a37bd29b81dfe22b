package postgres

import (
	"context"
	"errors"
	"slices"
	"strings"
	"testing"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/sondehq/sonde/contracts"
	"github.com/sondehq/sonde/pkg/guard/postgres/postgrestest"
	"github.com/sondehq/sonde/services/executor/internal/engine"
)

// scsProbe is issue 17's probe: with standard_conforming_strings on (as the
// guard lexes) it is two string literals; off, the backslash escapes the
// quote and the server reads a subquery between two strings.
const scsProbe = `SELECT '\' , ' , (SELECT current_setting($$data_directory$$)) , ' --'`

// scsProbeValues are the probe's two strings as the guard reads them.
var scsProbeValues = []any{`\`, ` , (SELECT current_setting($$data_directory$$)) , `}

// probeRanAsGuardRead reads scsProbe through e.Read and fails unless the
// server read it as the guard did: two columns, the two strings.
func probeRanAsGuardRead(t *testing.T, e *Engine, what string) {
	t.Helper()
	res, err := e.Read(context.Background(), req(scsProbe, contracts.ProfileInspect))
	if err != nil {
		t.Fatalf("%s: the probe: %v", what, err)
	}
	if len(res.Rows.Columns) != 2 || len(res.Rows.Rows) != 1 ||
		res.Rows.Rows[0][0] != scsProbeValues[0] || res.Rows.Rows[0][1] != scsProbeValues[1] {
		t.Fatalf("%s: the server read the probe otherwise than the guard: %d columns %v", what, len(res.Rows.Columns), res.Rows.Rows)
	}
}

// pinnedCase is a pinned setting, the value the engine's sessions must
// show, and a value a database or role setting could give it that changes
// how a statement is read or run (as written after SET name =).
type pinnedCase struct{ name, want, bad string }

// pinnedCases lists every setting the engine must pin, independently of
// the engine's own list (which TestPinnedSettingsOverrideDatabaseAndRole
// holds to this one).
func (s *server) pinnedCases(t *testing.T) []pinnedCase {
	other := "sonde_other_" + suffix()
	mustExec(t, s.admin, "CREATE ROLE "+other+" NOLOGIN; GRANT "+other+" TO "+s.agentRole)
	t.Cleanup(func() {
		_, _ = s.admin.Exec(context.Background(), "DROP OWNED BY "+other+"; DROP ROLE IF EXISTS "+other)
	})
	return []pinnedCase{
		{"standard_conforming_strings", "on", "off"},
		{"backslash_quote", "safe_encoding", "off"},
		{"client_encoding", "UTF8", "SJIS"},
		{"search_path", "public", "secret, public"},
		{"role", "none", other},
		{"row_security", "off", "on"},
		{"transform_null_equals", "off", "on"},
		{"DateStyle", "ISO, MDY", "'SQL, DMY'"},
		{"IntervalStyle", "postgres", "sql_standard"},
		{"bytea_output", "hex", "escape"},
	}
}

// TestPinnedSettingsOverrideDatabaseAndRole sets each pinned setting alone,
// on the database and then on the agent role, to a value that changes how
// a statement is read or run. A plain session shows the bad value (the
// premise); the engine's sessions show the pinned one, as the agent role,
// and issue 17's probe is read as the guard reads it.
func TestPinnedSettingsOverrideDatabaseAndRole(t *testing.T) {
	s := testServer(t)
	ctx := context.Background()
	db := s.admin.Config().Database
	cases := s.pinnedCases(t)
	for _, p := range pinned {
		if !slices.ContainsFunc(cases, func(c pinnedCase) bool { return c.name == p.Name && c.want == p.Value }) {
			t.Errorf("the engine pins %s = %s, which this test does not hold", p.Name, p.Value)
		}
	}
	for _, p := range cases {
		for _, scope := range []string{"DATABASE " + db, "ROLE " + s.agentRole + " IN DATABASE " + db} {
			what := p.name + " = " + p.bad + " on " + strings.Fields(scope)[0]
			mustExec(t, s.admin, "ALTER "+scope+" SET "+p.name+" = "+p.bad)
			// The premise: a session that does not pin it has the bad value.
			plain, err := pgx.Connect(ctx, s.agentDSN)
			if err != nil {
				t.Fatalf("%s: plain session: %v", what, err)
			}
			var shown string
			err = plain.QueryRow(ctx, "SELECT current_setting($1)", p.name).Scan(&shown)
			plain.Close(ctx)
			if err != nil || shown == p.want {
				t.Fatalf("%s: a plain session shows %q (%v): the setting did not take, so the test proves nothing", what, shown, err)
			}
			e := s.engine(t)
			res, err := e.run(ctx, "SELECT current_setting('"+p.name+"'), current_user::text", nil, req("", contracts.ProfileInspect))
			if err != nil {
				t.Fatalf("%s: %v", what, err)
			}
			if got := res.Rows.Rows[0]; got[0] != p.want || got[1] != s.agentRole {
				t.Errorf("%s: the engine's session shows %v as %v, want %q as %s", what, got[0], got[1], p.want, s.agentRole)
			}
			probeRanAsGuardRead(t, e, what)
			e.Close()
			mustExec(t, s.admin, "ALTER "+scope+" RESET "+p.name)
		}
	}
}

// TestStandardConformingStringsOffCannotTurnTheGuardOff is issue 17's own
// case with a superuser dsn: the database's standard_conforming_strings is
// off, and the probe through Read returns two strings, not the data
// directory.
func TestStandardConformingStringsOffCannotTurnTheGuardOff(t *testing.T) {
	s := testServer(t)
	mustExec(t, s.admin, "ALTER DATABASE "+s.admin.Config().Database+" SET standard_conforming_strings = off")
	probeRanAsGuardRead(t, s.ownerEngine(t), "superuser dsn")
	probeRanAsGuardRead(t, s.engine(t), "agent role")
}

// unpinnedEngine opens an engine on dsn whose startup packet leaves name
// out (what a connection pooler that drops startup parameters does).
func unpinnedEngine(t *testing.T, dsn, name string) (*Engine, *pgxpool.Pool) {
	t.Helper()
	cfg, err := Config(dsn, engine.Options{})
	if err != nil {
		t.Fatal(err)
	}
	delete(cfg.ConnConfig.RuntimeParams, name)
	pool, err := pgxpool.NewWithConfig(context.Background(), cfg)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(pool.Close)
	return &Engine{pool: pool, policy: postgrestest.Policy(), opMem: DefaultOperationMemory}, pool
}

// TestUnpinnedSessionRunsNoRead takes the startup packet's pin away with
// the database set otherwise: standard_conforming_strings off (which the
// server reports on its own: caught before anything is sent) and
// search_path (which it does not: caught by the catalog check's own round
// trip). Every read is refused as a lost connection naming the setting, the
// probe's subquery never runs, and the check at open refuses the pool.
func TestUnpinnedSessionRunsNoRead(t *testing.T) {
	s := testServer(t)
	db := s.admin.Config().Database
	for _, c := range []struct{ name, bad, sql string }{
		{"standard_conforming_strings", "off", scsProbe},
		{"search_path", "secret, public", "SELECT count(*) FROM customers"},
	} {
		mustExec(t, s.admin, "ALTER DATABASE "+db+" SET "+c.name+" = "+c.bad)
		e, pool := unpinnedEngine(t, s.ownerDSN, c.name)
		runs := []func() error{
			func() error { _, err := e.Read(context.Background(), req(c.sql, contracts.ProfileInspect)); return err },
		}
		if c.name == "standard_conforming_strings" {
			runs = append(runs, func() error {
				_, err := e.run(context.Background(), c.sql, nil, req("", contracts.ProfileInspect))
				return err
			})
		}
		for _, run := range runs {
			err := run()
			if d := dbErr(t, err); d.Class != contracts.DBUnavailable || !strings.Contains(d.Message, c.name) {
				t.Fatalf("a session without %s: %+v, want unavailable naming it", c.name, d)
			}
			if !errors.Is(err, engine.ErrConnectionLost) {
				t.Fatalf("a session without %s: %v, want engine.ErrConnectionLost", c.name, err)
			}
		}
		if _, err := checkPinned(context.Background(), pool); err == nil {
			t.Fatalf("checkPinned on a pool without %s: no error", c.name)
		} else if d := dbErr(t, err); !strings.Contains(d.Message, c.name) {
			t.Fatalf("checkPinned on a pool without %s: %+v", c.name, d)
		}
		mustExec(t, s.admin, "ALTER DATABASE "+db+" RESET "+c.name)
	}
}

// TestReaderKnowsTheServerVersion: the engine's guard reads for the server
// it talks to (server_version_num), so grammar newer than the server is
// refused and grammar the server has is not.
func TestReaderKnowsTheServerVersion(t *testing.T) {
	s := testServer(t)
	var version int
	if err := s.admin.QueryRow(context.Background(), "SELECT current_setting('server_version_num')::int").Scan(&version); err != nil {
		t.Fatal(err)
	}
	e := s.engine(t)
	if e.reader.ServerVersion != version {
		t.Fatalf("the engine's reader reads for server %d, the server is %d", e.reader.ServerVersion, version)
	}
	r, _, err := e.Guard(context.Background())
	if err != nil || r != e.reader {
		t.Fatalf("Guard gives %v %v, want the engine's reader", r, err)
	}
}
