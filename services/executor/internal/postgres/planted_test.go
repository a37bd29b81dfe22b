package postgres

import (
	"context"
	"errors"
	"os"
	"strings"
	"testing"

	"github.com/jackc/pgx/v5"
	"github.com/sondehq/sonde/contracts"
	"github.com/sondehq/sonde/pkg/guard"
	pgguard "github.com/sondehq/sonde/pkg/guard/postgres"
	"github.com/sondehq/sonde/services/executor/connections"
	"github.com/sondehq/sonde/services/executor/internal/engine"
)

// plantedMark is the user code every planted object runs: a SECURITY
// DEFINER function (a superuser's) that writes FILE on the database host.
const plantedMark = `
CREATE FUNCTION public.sonde_mark() RETURNS int LANGUAGE plpgsql SECURITY DEFINER AS $$
	BEGIN EXECUTE format('COPY (SELECT 1) TO %L', 'FILE'); RETURN 1; END $$;
CREATE FUNCTION public.sonde_markb(int) RETURNS bool LANGUAGE sql SECURITY DEFINER AS 'SELECT public.sonde_mark() > 0';
`

// plantedCase is one database object that runs user code (or reads what
// the patterns hide) through a plain read, planted with readable
// ["public.*"] (issue 17, item 3), and the reads that reach it.
type plantedCase struct {
	name  string
	plant string // FILE is the marker file's path
	reads []string
	code  contracts.Code
}

var plantedCases = []plantedCase{
	{"view calling a definer function", `
		CREATE VIEW public.sonde_v AS SELECT id, public.sonde_mark() AS m FROM public.customers;
		CREATE VIEW public.sonde_vv AS SELECT * FROM public.sonde_v;`,
		[]string{"SELECT * FROM sonde_v", "SELECT id FROM public.sonde_vv"}, contracts.RefuseFunctionDenied},
	{"user operator inside a view", `
		CREATE FUNCTION public.sonde_op(int, int) RETURNS bool LANGUAGE sql AS 'SELECT public.sonde_mark() > 0';
		CREATE OPERATOR public.=== (LEFTARG = int, RIGHTARG = int, FUNCTION = public.sonde_op);
		CREATE VIEW public.sonde_v AS SELECT id FROM public.customers WHERE id === 1;`,
		[]string{"SELECT * FROM sonde_v"}, contracts.RefuseFunctionDenied},
	{"user aggregate inside a view", `
		CREATE FUNCTION public.sonde_sfunc(int, int) RETURNS int LANGUAGE sql AS 'SELECT public.sonde_mark()';
		CREATE AGGREGATE public.sonde_agg(int) (SFUNC = public.sonde_sfunc, STYPE = int, INITCOND = '0');
		CREATE VIEW public.sonde_v AS SELECT public.sonde_agg(id) AS a FROM public.customers;`,
		[]string{"SELECT * FROM sonde_v"}, contracts.RefuseFunctionDenied},
	{"_RETURN select rule", `
		CREATE TABLE public.sonde_ruled (id int, m int);
		CREATE RULE "_RETURN" AS ON SELECT TO public.sonde_ruled DO INSTEAD SELECT 1 AS id, public.sonde_mark() AS m;`,
		[]string{"SELECT * FROM sonde_ruled"}, contracts.RefuseFunctionDenied},
	{"row-level security policy function", `
		CREATE TABLE public.sonde_rls (id int);
		INSERT INTO public.sonde_rls VALUES (1);
		ALTER TABLE public.sonde_rls ENABLE ROW LEVEL SECURITY;
		CREATE POLICY sonde_p ON public.sonde_rls USING (public.sonde_markb(id));`,
		[]string{"SELECT * FROM sonde_rls"}, contracts.RefuseFunctionDenied},
	{"implicit = of CASE, USING, NATURAL and IN", `
		CREATE FUNCTION public.sonde_eq(int, numeric) RETURNS bool LANGUAGE sql AS 'SELECT public.sonde_mark() > 0';
		CREATE OPERATOR public.= (LEFTARG = int, RIGHTARG = numeric, FUNCTION = public.sonde_eq);`,
		[]string{
			"SELECT CASE id WHEN 1.5 THEN 1 END FROM customers",
			"SELECT c.name FROM customers c JOIN (SELECT 1.5 AS id) x USING (id)",
			"SELECT * FROM customers NATURAL JOIN (SELECT 1.5 AS id) x",
			"SELECT id FROM customers WHERE id IN (1.5, 2.5)",
		}, contracts.RefuseFunctionDenied},
	{"user default operator class", `
		CREATE FUNCTION public.sonde_jeq(json, json) RETURNS bool LANGUAGE sql AS 'SELECT public.sonde_mark() > 0';
		CREATE FUNCTION public.sonde_jhash(json) RETURNS int LANGUAGE sql AS 'SELECT public.sonde_mark()';
		CREATE OPERATOR public.= (LEFTARG = json, RIGHTARG = json, FUNCTION = public.sonde_jeq, HASHES);
		CREATE OPERATOR CLASS public.sonde_json_ops DEFAULT FOR TYPE json USING hash AS
			OPERATOR 1 public.= (json, json), FUNCTION 1 public.sonde_jhash(json);`,
		[]string{"SELECT '{}'::json UNION SELECT '{}'::json", "SELECT DISTINCT v FROM (SELECT '{}'::json AS v) x"}, contracts.RefuseFunctionDenied},
	{"domain with a user constraint", `
		CREATE DOMAIN public.sonde_dom AS int CHECK (public.sonde_markb(VALUE));
		CREATE DOMAIN public.sonde_dom2 AS public.sonde_dom;
		CREATE VIEW public.sonde_v AS SELECT id::public.sonde_dom2 AS d FROM public.customers;`,
		[]string{"SELECT 1::sonde_dom", "SELECT CAST(id AS public.sonde_dom) FROM customers", "SELECT * FROM sonde_v"}, contracts.RefuseFunctionDenied},
	{"file_fdw foreign table running a program", `
		CREATE EXTENSION file_fdw;
		CREATE SERVER sonde_files FOREIGN DATA WRAPPER file_fdw;
		CREATE FOREIGN TABLE public.sonde_passwd (line text) SERVER sonde_files
			OPTIONS (program 'cat /etc/passwd && echo > FILE');
		CREATE VIEW public.sonde_v AS SELECT * FROM public.sonde_passwd;
		CREATE TABLE public.sonde_fparent (line text);
		CREATE FOREIGN TABLE public.sonde_fchild () INHERITS (public.sonde_fparent) SERVER sonde_files
			OPTIONS (program 'cat /etc/passwd && echo > FILE');`,
		[]string{"SELECT * FROM sonde_passwd", "SELECT * FROM public.sonde_v", "SELECT * FROM sonde_fparent"}, contracts.RefuseTableNotReadable},
	{"inheritance child in an unreadable schema", `
		CREATE TABLE public.sonde_parent (id int);
		CREATE TABLE secret.sonde_child () INHERITS (public.sonde_parent);
		INSERT INTO secret.sonde_child VALUES (42);
		CREATE TABLE public.sonde_parted (id int) PARTITION BY LIST (id);
		CREATE TABLE public.sonde_mid PARTITION OF public.sonde_parted FOR VALUES IN (7, 8) PARTITION BY LIST (id);
		CREATE TABLE secret.sonde_part PARTITION OF public.sonde_mid FOR VALUES IN (7);
		INSERT INTO public.sonde_parted VALUES (7);`,
		[]string{"SELECT * FROM sonde_parent", "SELECT id FROM public.sonde_parted"}, contracts.RefuseTableNotReadable},
}

// plantedEngine opens an engine on the fixture with readable ["public.*"]:
// as the agent role, or as the owner (a superuser) when owner is set.
func (s *server) plantedEngine(t *testing.T, owner bool, readable ...string) *Engine {
	t.Helper()
	c := connections.Connection{ID: "pg-planted", Engine: contracts.EnginePostgres, DSN: s.ownerDSN,
		Readable: append([]string{"public.*"}, readable...)}
	if !owner {
		c.AgentDSN = s.agentDSN
	}
	e, err := New(context.Background(), c, engine.Options{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { e.Close() })
	return e
}

// fileOnHost reports whether path exists on the database host, and
// removeOnHost removes it.
func (s *server) fileOnHost(t *testing.T, path string) bool {
	t.Helper()
	var missing bool
	if err := s.admin.QueryRow(context.Background(), "SELECT pg_stat_file($1, true) IS NULL", path).Scan(&missing); err != nil {
		t.Fatal(err)
	}
	return !missing
}

func (s *server) removeOnHost(t *testing.T, path string) {
	t.Helper()
	mustExec(t, s.admin, "COPY (SELECT 1) TO PROGRAM 'cat > /dev/null && rm -f "+path+"'")
}

// TestPlantedObjectsRefused plants, one case to a database, each object of
// issue 17 item 3 that ran user code (or read hidden rows) through a plain
// read, and sends the reads that reach it through Read, as the agent role
// and as a superuser dsn: each is refused with its code, the marker file is
// never written and the database is unchanged, while a plain read of the
// same database still runs. Then the premise: each read, sent on a plain
// session of the agent role (no guard, no catalog check, the database's
// own settings), does run the planted code or read the hidden rows.
func TestPlantedObjectsRefused(t *testing.T) {
	for _, c := range plantedCases {
		t.Run(strings.ReplaceAll(c.name, " ", "_"), func(t *testing.T) {
			s := testServer(t)
			ctx := context.Background()
			file := "/tmp/sonde-planted-" + suffix()
			t.Cleanup(func() { _ = os.Remove(file) })
			mustExec(t, s.admin, strings.ReplaceAll(plantedMark+c.plant, "FILE", file))
			// What the issue found: functions created after the role's
			// set-up callable by PUBLIC, the planted relations granted.
			mustExec(t, s.admin, "GRANT EXECUTE ON ALL FUNCTIONS IN SCHEMA public TO PUBLIC; GRANT SELECT ON ALL TABLES IN SCHEMA public TO "+s.agentRole)
			before := s.state(t)
			for _, owner := range []bool{false, true} {
				e := s.plantedEngine(t, owner)
				for _, q := range c.reads {
					_, err := e.Read(ctx, req(q, contracts.ProfileInspect))
					var ref *contracts.Refusal
					if !errors.As(err, &ref) || ref.Code != c.code {
						t.Errorf("%s (owner %v): %v, want refusal %s", q, owner, err, c.code)
					} else if ref.Message == "" || ref.Fix == "" || strings.Contains(ref.Message, "secret") {
						t.Errorf("%s: refusal %+v: want a reason and a fix that name no hidden relation", q, ref)
					}
				}
				if _, err := e.Read(ctx, req("SELECT count(*) FROM public.customers", contracts.ProfileInspect)); err != nil {
					t.Errorf("a plain read beside the planted objects (owner %v): %v", owner, err)
				}
			}
			if s.fileOnHost(t, file) {
				t.Fatalf("a refused read ran the planted code: %s was written", file)
			}
			if after := s.state(t); after != before {
				t.Fatalf("the database changed:\n before %s\n after  %s", before, after)
			}
			// The premise, read by read.
			plain, err := pgx.Connect(ctx, s.agentDSN)
			if err != nil {
				t.Fatal(err)
			}
			defer plain.Close(ctx)
			for _, q := range c.reads {
				rows, err := plain.Query(ctx, q, pgx.QueryExecModeSimpleProtocol)
				if err != nil {
					t.Fatalf("premise %s: %v", q, err)
				}
				var hidden bool
				for rows.Next() {
					v := rows.RawValues()
					hidden = hidden || len(v) > 0 && (string(v[0]) == "42" || string(v[0]) == "7")
				}
				rows.Close()
				if err := rows.Err(); err != nil {
					t.Fatalf("premise %s: %v", q, err)
				}
				switch {
				case c.code == contracts.RefuseTableNotReadable && strings.Contains(c.plant, "INHERITS (public.sonde_parent)"):
					if !hidden {
						t.Errorf("premise %s: the hidden child's row was not read", q)
					}
				case !s.fileOnHost(t, file):
					t.Errorf("premise %s: the planted code did not run (%s not written)", q, file)
				default:
					s.removeOnHost(t, file)
				}
			}
		})
	}
}

// TestRowSecurityOffRunsNoPolicy holds the pinned row_security alone: below
// the catalog check (run sends the statement with no check at all), a read
// of a table whose policy calls user code fails, and the policy never runs.
func TestRowSecurityOffRunsNoPolicy(t *testing.T) {
	s := testServer(t)
	file := "/tmp/sonde-rls-" + suffix()
	t.Cleanup(func() { _ = os.Remove(file) })
	mustExec(t, s.admin, strings.ReplaceAll(plantedMark+plantedCases[4].plant, "FILE", file))
	mustExec(t, s.admin, "GRANT EXECUTE ON ALL FUNCTIONS IN SCHEMA public TO PUBLIC; GRANT SELECT ON public.sonde_rls TO "+s.agentRole)
	_, err := s.plantedEngine(t, false).run(context.Background(), "SELECT * FROM public.sonde_rls", nil, req("", contracts.ProfileInspect))
	if d := dbErr(t, err); d.Class != contracts.DBPermission || !strings.Contains(d.Message, "42501") {
		t.Fatalf("a policy table under row_security off: %+v, want 42501", d)
	}
	if s.fileOnHost(t, file) {
		t.Fatalf("the policy ran: %s was written", file)
	}
}

// TestForeignTableNamedByAPatternIsRead: a foreign table a readable pattern
// names without a wildcard is the operator's choice, and is read.
func TestForeignTableNamedByAPatternIsRead(t *testing.T) {
	s := testServer(t)
	mustExec(t, s.admin, `CREATE EXTENSION file_fdw;
		CREATE SERVER sonde_files FOREIGN DATA WRAPPER file_fdw;
		CREATE FOREIGN TABLE public.sonde_hello (line text) SERVER sonde_files OPTIONS (program 'echo hello');`)
	mustExec(t, s.admin, "GRANT SELECT ON public.sonde_hello TO "+s.agentRole)
	res, err := s.plantedEngine(t, false, "public.sonde_hello").Read(context.Background(), req("SELECT line FROM sonde_hello", contracts.ProfileInspect))
	if err != nil || len(res.Rows.Rows) != 1 || res.Rows.Rows[0][0] != "hello" {
		t.Fatalf("a foreign table named by a pattern: %v %v", res.Rows, err)
	}
}

// TestQualifiedUserFunctionCaughtByTheCatalog is issue 17 item 18: a
// schema-qualified user function is refused by the catalog check on its
// own, with the guard's pg_catalog rule out of the way (the statement goes
// straight to the check with the uses the guard would report), and the
// function does not run.
func TestQualifiedUserFunctionCaughtByTheCatalog(t *testing.T) {
	s := testServer(t)
	file := "/tmp/sonde-qualified-" + suffix()
	t.Cleanup(func() { _ = os.Remove(file) })
	mustExec(t, s.admin, strings.ReplaceAll(plantedMark, "FILE", file)+`
		CREATE SCHEMA sonde_evil;
		CREATE FUNCTION sonde_evil.lower(int) RETURNS text LANGUAGE sql SECURITY DEFINER AS 'SELECT public.sonde_mark()::text';
		GRANT USAGE ON SCHEMA sonde_evil TO PUBLIC;
		GRANT EXECUTE ON ALL FUNCTIONS IN SCHEMA sonde_evil, public TO PUBLIC;`)
	uses := &pgguard.Uses{Functions: []string{"lower"}, Qualified: []pgguard.QualifiedFunction{{Schema: "sonde_evil", Name: "lower"}}}
	for _, e := range []*Engine{s.plantedEngine(t, false), s.plantedEngine(t, true)} {
		_, err := e.runChecked(context.Background(), "SELECT sonde_evil.lower(1)", nil, req("", contracts.ProfileInspect), &objects{uses: uses})
		var ref *contracts.Refusal
		if !errors.As(err, &ref) || ref.Code != contracts.RefuseFunctionDenied || !strings.Contains(ref.Message, "sonde_evil.lower") {
			t.Fatalf("sonde_evil.lower(1) past the guard: %v, want function_denied naming it", err)
		}
	}
	if s.fileOnHost(t, file) {
		t.Fatalf("the qualified user function ran: %s was written", file)
	}
	// The built-in of that name, qualified, is not refused.
	uses = &pgguard.Uses{Functions: []string{"lower"}, Qualified: []pgguard.QualifiedFunction{{Schema: "pg_catalog", Name: "lower"}}}
	if _, err := s.plantedEngine(t, false).runChecked(context.Background(), "SELECT pg_catalog.lower('A')", nil, req("", contracts.ProfileInspect), &objects{uses: uses}); err != nil {
		t.Fatalf("pg_catalog.lower: %v", err)
	}
	// The premise: the function runs when called.
	if _, err := s.admin.Exec(context.Background(), "SELECT sonde_evil.lower(1)"); err != nil || !s.fileOnHost(t, file) {
		t.Fatalf("the fixture function did not write %s: %v", file, err)
	}
}

// revokeByDefault is the line of the documented role set-up that keeps
// functions created later from being callable by every role: without IN
// SCHEMA, since a schema's default privileges only add to the global ones
// (ALTER DEFAULT PRIVILEGES IN SCHEMA … REVOKE revokes nothing PUBLIC has).
const revokeByDefault = "ALTER DEFAULT PRIVILEGES REVOKE EXECUTE ON FUNCTIONS FROM PUBLIC"

// TestDocumentedRoleRevokesExecuteByDefault: the role set-up of
// docs/executor-postgres.md (its one command and its script) and the
// fixture's copy of it revoke EXECUTE by default privileges, and with it a
// function the owner creates afterwards is not callable by the agent role —
// while the schema-scoped form the docs had before leaves it callable.
func TestDocumentedRoleRevokesExecuteByDefault(t *testing.T) {
	doc, err := os.ReadFile("../../../../docs/executor-postgres.md")
	if err != nil {
		t.Fatal(err)
	}
	role := string(doc)
	if i := strings.Index(role, "## The agent role"); i >= 0 {
		role = role[i:]
	}
	if n := strings.Count(role, revokeByDefault); n < 2 {
		t.Errorf("the docs' role set-up holds %q %d times, want it in the one command and in the script", revokeByDefault, n)
	}
	if strings.Contains(role, "ALTER DEFAULT PRIVILEGES IN SCHEMA public REVOKE EXECUTE") {
		t.Error("the docs still give the schema-scoped REVOKE, which revokes nothing")
	}
	if !strings.Contains(agentGrants, revokeByDefault+";") {
		t.Errorf("the fixture's role set-up (agentGrants) lacks %q", revokeByDefault)
	}

	s := testServer(t)
	ctx := context.Background()
	mustExec(t, s.admin, "CREATE FUNCTION public.sonde_later() RETURNS int LANGUAGE sql AS 'SELECT 1'")
	var can bool
	if err := s.admin.QueryRow(ctx, "SELECT has_function_privilege($1, 'public.sonde_later()', 'EXECUTE')", s.agentRole).Scan(&can); err != nil {
		t.Fatal(err)
	}
	if can {
		t.Fatal("the agent role may execute a function created after its set-up")
	}
	// The control: the schema-scoped form leaves a later function callable.
	mustExec(t, s.admin, "ALTER DEFAULT PRIVILEGES GRANT EXECUTE ON FUNCTIONS TO PUBLIC; ALTER DEFAULT PRIVILEGES IN SCHEMA public REVOKE EXECUTE ON FUNCTIONS FROM PUBLIC")
	mustExec(t, s.admin, "CREATE FUNCTION public.sonde_later2() RETURNS int LANGUAGE sql AS 'SELECT 1'")
	if err := s.admin.QueryRow(ctx, "SELECT has_function_privilege($1, 'public.sonde_later2()', 'EXECUTE')", s.agentRole).Scan(&can); err != nil {
		t.Fatal(err)
	}
	if !can {
		t.Fatal("the schema-scoped REVOKE did revoke: the control proves nothing")
	}
}

// TestReadBlockersNameAnImplicitCast (issue 17 item 10): an implicit user
// cast refuses every read, so the connection can say so up front —
// ReadBlockers names it (and a user operator class), and nothing on a
// clean database.
func TestReadBlockersNameAnImplicitCast(t *testing.T) {
	s := testServer(t)
	e := s.engine(t)
	ctx := context.Background()
	if got, err := e.ReadBlockers(ctx); err != nil || got != nil {
		t.Fatalf("a clean database: %q %v, want none", got, err)
	}
	mustExec(t, s.admin, `CREATE FUNCTION public.sonde_cast_text(public.customers) RETURNS text LANGUAGE sql AS 'SELECT ''x''';
		CREATE CAST (public.customers AS text) WITH FUNCTION public.sonde_cast_text(public.customers) AS IMPLICIT;`)
	got, err := e.ReadBlockers(ctx)
	if err != nil || len(got) != 1 || !strings.Contains(got[0], "implicit cast from customers to text") {
		t.Fatalf("with an implicit user cast: %q %v", got, err)
	}
	// What it warns of: every read is refused.
	if _, err := e.Read(ctx, req("SELECT 1", contracts.ProfileAgentReadOnly)); err == nil {
		t.Fatal("a read ran beside an implicit user cast")
	}
	mustExec(t, s.admin, plantedMark+plantedCases[6].plant)
	if got, err = e.ReadBlockers(ctx); err != nil || len(got) != 2 || !strings.Contains(got[1]+got[0], "sonde_json_ops") {
		t.Fatalf("with a user operator class too: %q %v", got, err)
	}
}

// TestResolvedNameHeldToPatterns holds the catalog check alone to the
// relation a name resolves to in the session, whatever schema the guard
// read it in: told that the unqualified pg_class is a table of public (a
// reader that missed the catalog), the check finds pg_catalog.pg_class and
// refuses it, a system catalog no pattern names.
func TestResolvedNameHeldToPatterns(t *testing.T) {
	s := testServer(t)
	e := s.plantedEngine(t, false)
	chk := &objects{uses: &pgguard.Uses{}, tables: []guard.Table{{Name: "pg_class"}}}
	_, err := e.runChecked(context.Background(), "SELECT count(*) FROM pg_class", nil, req("", contracts.ProfileInspect), chk)
	var ref *contracts.Refusal
	if !errors.As(err, &ref) || ref.Code != contracts.RefuseTableNotReadable {
		t.Fatalf("pg_class read as public's: %v, want table_not_readable", err)
	}
	chk.tables = []guard.Table{{Name: "customers"}}
	if _, err := e.runChecked(context.Background(), "SELECT count(*) FROM customers", nil, req("", contracts.ProfileInspect), chk); err != nil {
		t.Fatalf("customers: %v", err)
	}
}

// TestPartitionsInTheTablesSchemaAreRead: a partition in its table's own
// schema is part of the table — read through it under a pattern that names
// only the table — while one in another schema is held to the patterns.
func TestPartitionsInTheTablesSchemaAreRead(t *testing.T) {
	s := testServer(t)
	mustExec(t, s.admin, `CREATE TABLE public.sonde_sales (id int) PARTITION BY LIST (id);
		CREATE TABLE public.sonde_sales_1 PARTITION OF public.sonde_sales FOR VALUES IN (1);
		INSERT INTO public.sonde_sales VALUES (1);
		GRANT SELECT ON public.sonde_sales TO `+s.agentRole)
	e, err := New(context.Background(), connections.Connection{ID: "pg-exact", Engine: contracts.EnginePostgres,
		DSN: s.ownerDSN, AgentDSN: s.agentDSN, Readable: []string{"public.sonde_sales"}}, engine.Options{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { e.Close() })
	res, err := e.Read(context.Background(), req("SELECT count(*) FROM sonde_sales", contracts.ProfileInspect))
	if err != nil || res.Rows.Rows[0][0] != int64(1) {
		t.Fatalf("a partitioned table named by a pattern: %v %v", res.Rows, err)
	}
	mustExec(t, s.admin, "CREATE TABLE secret.sonde_sales_2 PARTITION OF public.sonde_sales FOR VALUES IN (2)")
	_, err = e.Read(context.Background(), req("SELECT count(*) FROM sonde_sales", contracts.ProfileInspect))
	var ref *contracts.Refusal
	if !errors.As(err, &ref) || ref.Code != contracts.RefuseTableNotReadable {
		t.Fatalf("with a partition in a hidden schema: %v, want table_not_readable", err)
	}
}

// TestDomainCastCaughtByTheCatalog: a cast to a domain whose constraint
// runs user code — over another domain, too — is refused by the catalog
// check on its own (the guard's own refusal of casts to user types out of
// the way), and the constraint does not run.
func TestDomainCastCaughtByTheCatalog(t *testing.T) {
	s := testServer(t)
	file := "/tmp/sonde-domain-" + suffix()
	t.Cleanup(func() { _ = os.Remove(file) })
	mustExec(t, s.admin, strings.ReplaceAll(plantedMark, "FILE", file)+`
		CREATE DOMAIN public.sonde_dom AS int CHECK (public.sonde_markb(VALUE));
		CREATE DOMAIN public.sonde_dom2 AS public.sonde_dom;
		GRANT EXECUTE ON ALL FUNCTIONS IN SCHEMA public TO PUBLIC;`)
	e := s.plantedEngine(t, false)
	for _, c := range []string{"sonde_dom", "sonde_dom2"} {
		chk := &objects{uses: &pgguard.Uses{Casts: []string{c}}}
		_, err := e.runChecked(context.Background(), "SELECT 1::public."+c, nil, req("", contracts.ProfileInspect), chk)
		var ref *contracts.Refusal
		if !errors.As(err, &ref) || ref.Code != contracts.RefuseFunctionDenied {
			t.Fatalf("a cast to %s past the guard: %v, want function_denied", c, err)
		}
	}
	if s.fileOnHost(t, file) {
		t.Fatalf("the domain's constraint ran: %s was written", file)
	}
	if _, err := s.admin.Exec(context.Background(), "SELECT 1::public.sonde_dom2"); err != nil || !s.fileOnHost(t, file) {
		t.Fatalf("the fixture domain did not write %s: %v", file, err)
	}
}
