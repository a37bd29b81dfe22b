package executor

import (
	"context"
	"crypto/sha256"
	"database/sql"
	"encoding/hex"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/sondehq/sonde/contracts"
	"github.com/sondehq/sonde/pkg/fence/fencetest"
	"github.com/sondehq/sonde/pkg/guard/guardtest"
	"github.com/sondehq/sonde/services/executor/connections"
	"github.com/sondehq/sonde/services/executor/internal/engine"
	"github.com/sondehq/sonde/services/executor/internal/refuse"
	_ "modernc.org/sqlite"
)

// The hostile catalog names (pkg/guard/guardtest), as the tests here use them.
var (
	HostileTableNames = guardtest.HostileTableNames
	HostileSpellings  = guardtest.HostileSpellings
)

func profileReq(conn, table string, depth contracts.ProfileDepth, from string) contracts.ExecRequest {
	return contracts.ExecRequest{RunID: "run-p", StepID: "s1", ConnectionID: conn, Profile: contracts.ProfileAgentReadOnly,
		Table: table, Depth: depth, FromColumn: from, TimeoutMs: 10000}
}

// chinookCopy copies a Chinook dataset file into the test's directory,
// skipping the test when the shared datasets are not present.
func chinookCopy(t *testing.T, file string) string {
	t.Helper()
	src := filepath.Join("..", "..", "..", "shared", "datasets", "chinook", file)
	in, err := os.Open(src)
	if err != nil {
		t.Skipf("chinook not present: %v", err)
	}
	defer in.Close()
	dst := filepath.Join(t.TempDir(), file)
	out, err := os.Create(dst)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := io.Copy(out, in); err != nil {
		t.Fatal(err)
	}
	if err := out.Close(); err != nil {
		t.Fatal(err)
	}
	return dst
}

func fileDigest(t *testing.T, path string) string {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	sum := sha256.Sum256(b)
	return hex.EncodeToString(sum[:])
}

func column(tp *contracts.TableProfile, name string) *contracts.ColumnProfile {
	for i := range tp.Columns {
		if tp.Columns[i].Name == name {
			return &tp.Columns[i]
		}
	}
	return nil
}

func hasFinding(tp *contracts.TableProfile, code contracts.FindingCode, col string) bool {
	return slices.ContainsFunc(tp.Findings, func(f contracts.Finding) bool { return f.Code == code && f.Column == col })
}

func wantRefusal(t *testing.T, reply shownReply, code string) {
	t.Helper()
	if reply.Status != contracts.ExecRefused || reply.Refusal == nil || string(reply.Refusal.Code) != code {
		t.Fatalf("want refused %s, got %s %+v %+v\n%s", code, reply.Status, reply.Refusal, reply.Error, reply.Text)
	}
	if err := fencetest.Check(reply.Text, 0); err != nil {
		t.Errorf("refusal text: %v\n%s", err, reply.Text)
	}
}

func wantProfile(t *testing.T, reply shownReply) *contracts.TableProfile {
	t.Helper()
	if reply.Status != contracts.ExecOK || reply.Profile == nil || reply.Artifact == nil {
		t.Fatalf("want a profile, got %s %+v %+v\n%s", reply.Status, reply.Refusal, reply.Error, reply.Text)
	}
	if err := fencetest.Check(reply.Text, 1); err != nil {
		t.Errorf("profile text: %v\n%s", err, reply.Text)
	}
	if !strings.Contains(reply.Text, "Counts only") {
		t.Errorf("the text does not say it is counts only:\n%s", reply.Text)
	}
	if reply.Artifact.Rows != len(reply.Profile.Columns) || reply.Statements < 2 {
		t.Errorf("artifact %+v, %d statements", reply.Artifact, reply.Statements)
	}
	return reply.Profile
}

func TestProfileChinookSQLite(t *testing.T) {
	path := chinookCopy(t, "chinook.sqlite")
	before := fileDigest(t, path)
	store := memStore{}
	s := newService(t, Config{Artifacts: store, Connections: []connections.Connection{{ID: "chinook", Engine: contracts.EngineSQLite, Path: path}}})
	ctx := context.Background()

	reply := s.shownExec(ctx, contracts.OpProfile, profileReq("chinook", "Customer", "", ""))
	tp := wantProfile(t, reply)
	if tp.Depth != contracts.DepthBasic || tp.Rows != 59 || len(tp.Columns) != 13 || tp.Table.Name != "Customer" || tp.Uncovered != 0 {
		t.Fatalf("profile %+v", tp)
	}
	if c := column(tp, "Company"); c == nil || c.Present != 10 || c.Distinct != nil || c.EmailLike != nil {
		t.Errorf("Company %+v", c)
	}
	if !hasFinding(tp, contracts.FindingHighNull, "Company") || !hasFinding(tp, contracts.FindingSuspectedPII, "Email") ||
		!hasFinding(tp, contracts.FindingSuspectedPII, "Phone") || !hasFinding(tp, contracts.FindingSuspectedPII, "FirstName") {
		t.Errorf("findings %+v", tp.Findings)
	}
	if hasFinding(tp, contracts.FindingSuspectedPII, "CustomerId") || hasFinding(tp, contracts.FindingFKUnindexed, "SupportRepId") {
		t.Errorf("findings %+v", tp.Findings)
	}
	art := store[contracts.ArtifactKey("run-p", reply.Artifact.CorrelationID)]
	if len(art.Data) != 13 || len(art.Columns) != 7 || art.Data[3][0] != "Company" || art.Data[3][2] != int64(10) || art.Data[3][3] != int64(49) ||
		!strings.Contains(art.SQL, `count("Company")`) {
		t.Errorf("artifact %+v", art)
	}

	// Pattern depth: the shapes are counted inside the database.
	tp = wantProfile(t, s.shownExec(ctx, contracts.OpProfile, profileReq("chinook", "main.customer", contracts.DepthPattern, "")))
	email := column(tp, "Email")
	if email == nil || email.EmailLike == nil || *email.EmailLike != 59 || email.Distinct == nil || *email.Distinct != 59 {
		t.Errorf("Email %+v", email)
	}
	if c := column(tp, "CustomerId"); c == nil || c.EmailLike != nil || c.DigitRun != nil {
		t.Errorf("an integer column got shape counts: %+v", c)
	}
	// Track.MediaTypeId: 5 values among 3503 rows.
	tp = wantProfile(t, s.shownExec(ctx, contracts.OpProfile, profileReq("chinook", "Track", contracts.DepthDistribution, "")))
	if !hasFinding(tp, contracts.FindingLowCardinality, "MediaTypeId") {
		t.Errorf("findings %+v", tp.Findings)
	}

	for spelling, code := range map[string]string{
		"Invoices":         string(contracts.RefuseTableNotInventoried),
		"other.Customer":   string(contracts.RefuseTableNotInventoried),
		"IFK_TrackAlbumId": string(contracts.RefuseObjectNotProfilable),
		"":                 string(refuse.BadRequest),
	} {
		wantRefusal(t, s.shownExec(ctx, contracts.OpProfile, profileReq("chinook", spelling, "", "")), code)
	}
	r := s.shownExec(ctx, contracts.OpProfile, profileReq("chinook", "Invoices", "", ""))
	if !strings.Contains(r.Refusal.Fix, `"main"."Invoice"`) {
		t.Errorf("the refusal does not offer the likely table: %+v", r.Refusal)
	}
	// What a refusal offers, it accepts, written as it was offered.
	if tp := wantProfile(t, s.shownExec(ctx, contracts.OpProfile, profileReq("chinook", `"main"."Invoice"`, "", ""))); tp.Table.Name != "Invoice" {
		t.Errorf("offered name: %+v", tp.Table)
	}
	r = s.shownExec(ctx, contracts.OpProfile, profileReq("chinook", "IFK_TrackAlbumId", "", ""))
	if !strings.Contains(r.Refusal.Message, "index") {
		t.Errorf("the refusal does not give the engine's kind: %+v", r.Refusal)
	}
	r = s.shownExec(ctx, contracts.OpProfile, profileReq("chinook", "Customer", "deep", ""))
	wantRefusal(t, r, string(refuse.BadRequest))
	if !strings.Contains(r.Refusal.Fix, "basic, distribution, pattern") {
		t.Errorf("fix %q", r.Refusal.Fix)
	}
	wantRefusal(t, s.shownExec(ctx, contracts.OpProfile, profileReq("chinook", "Customer", "", "NoSuchColumn")), string(contracts.RefuseColumnNotInTable))
	tp = wantProfile(t, s.shownExec(ctx, contracts.OpProfile, profileReq("chinook", "Customer", "", "email")))
	if len(tp.Columns) != 2 || tp.Columns[0].Name != "Email" {
		t.Errorf("from Email: %+v", tp.Columns)
	}

	if fileDigest(t, path) != before {
		t.Fatal("chinook changed")
	}
}

// sqliteFixture writes a SQLite file with tables built to earn each
// finding, a wide table, a large one, an unreadable one, a victim and the
// hostile names.
func sqliteFixture(t *testing.T) string {
	t.Helper()
	path := filepath.Join(t.TempDir(), "profile.db")
	db, err := sql.Open("sqlite", path)
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	wide := make([]string, 30)
	for i := range wide {
		wide[i] = fmt.Sprintf("c%02d INTEGER", i)
	}
	stmts := []string{
		"CREATE TABLE parent (id INTEGER PRIMARY KEY)",
		"INSERT INTO parent (id) VALUES (1), (2), (3)",
		`CREATE TABLE earns (id INTEGER PRIMARY KEY, sparse TEXT, fixed TEXT, kind TEXT, contact TEXT, acct TEXT,
			parent_id INTEGER REFERENCES parent (id), indexed_parent INTEGER REFERENCES parent (id))`,
		"CREATE INDEX earns_indexed_parent ON earns (indexed_parent, kind)",
		`WITH RECURSIVE n(i) AS (SELECT 1 UNION ALL SELECT i + 1 FROM n WHERE i < 1000)
		 INSERT INTO earns SELECT i, CASE WHEN i % 10 = 0 THEN 'x' || i END, 'same', 'k' || (i % 3),
		   'user' || i || '@example.com', 'acct-' || (100000000000 + i), 1 + i % 3, 1 + i % 3 FROM n`,
		"CREATE TABLE wide (" + strings.Join(wide, ", ") + ")",
		"INSERT INTO wide (c00) VALUES (1)",
		"CREATE TABLE big (id INTEGER)",
		`WITH RECURSIVE n(i) AS (SELECT 1 UNION ALL SELECT i + 1 FROM n WHERE i < 100100) INSERT INTO big SELECT i FROM n`,
		"CREATE TABLE secret (token TEXT)",
		"INSERT INTO secret VALUES ('s3cr3t')",
		"CREATE TABLE victim (id INTEGER)",
		"INSERT INTO victim VALUES (1), (2), (3)",
	}
	for i, name := range HostileTableNames {
		q := `"` + strings.ReplaceAll(name, `"`, `""`) + `"`
		stmts = append(stmts, "CREATE TABLE "+q+" (v TEXT)", fmt.Sprintf("INSERT INTO %s VALUES ('%d')", q, i))
	}
	for _, s := range stmts {
		if _, err := db.Exec(s); err != nil {
			t.Fatalf("%s: %v", s, err)
		}
	}
	return path
}

func TestProfileFindingsAndHostileSQLite(t *testing.T) {
	path := sqliteFixture(t)
	before := fileDigest(t, path)
	readable := []string{"parent", "earns", "wide", "big", "victim"}
	for _, n := range HostileTableNames {
		readable = append(readable, `"`+strings.ReplaceAll(n, `"`, `""`)+`"`)
	}
	s := newService(t, Config{Connections: []connections.Connection{{ID: "fx", Engine: contracts.EngineSQLite, Path: path,
		Readable: readable, LargeTables: map[string]string{"big": "id"}}}})
	ctx := context.Background()

	tp := wantProfile(t, s.shownExec(ctx, contracts.OpProfile, profileReq("fx", "earns", contracts.DepthPattern, "")))
	if tp.Rows != 1000 {
		t.Fatalf("rows %d", tp.Rows)
	}
	for _, f := range []struct {
		code contracts.FindingCode
		col  string
	}{
		{contracts.FindingHighNull, "sparse"}, {contracts.FindingConstant, "fixed"}, {contracts.FindingLowCardinality, "kind"},
		{contracts.FindingSuspectedPII, "contact"}, {contracts.FindingSuspectedPII, "acct"}, {contracts.FindingFKUnindexed, "parent_id"},
	} {
		if !hasFinding(tp, f.code, f.col) {
			t.Errorf("no %s on %s: %+v", f.code, f.col, tp.Findings)
		}
	}
	for _, f := range tp.Findings {
		if f.Code == contracts.FindingFKUnindexed && f.Column == "indexed_parent" || f.Column == "id" || f.Detail == "" {
			t.Errorf("finding %+v", f)
		}
	}
	if c := column(tp, "contact"); c.EmailLike == nil || *c.EmailLike != 1000 || *c.DigitRun != 0 {
		t.Errorf("contact %+v", c)
	}
	if c := column(tp, "acct"); c.DigitRun == nil || *c.DigitRun != 1000 {
		t.Errorf("acct %+v", c)
	}

	// A wide table: the bound, what is left and how to continue.
	tp = wantProfile(t, s.shownExec(ctx, contracts.OpProfile, profileReq("fx", "wide", "", "")))
	if len(tp.Columns) != contracts.MaxProfileColumns || tp.Uncovered != 30-contracts.MaxProfileColumns || tp.NextColumn != "c24" {
		t.Fatalf("wide: %d columns, %d uncovered, next %q", len(tp.Columns), tp.Uncovered, tp.NextColumn)
	}
	reply := s.shownExec(ctx, contracts.OpProfile, profileReq("fx", "wide", "", ""))
	if !strings.Contains(reply.Text, `"fromColumn":"c24"`) {
		t.Errorf("the text does not give the next fromColumn:\n%s", reply.Text)
	}
	tp = wantProfile(t, s.shownExec(ctx, contracts.OpProfile, profileReq("fx", "wide", "", "c24")))
	if len(tp.Columns) != 6 || tp.Uncovered != 0 || tp.NextColumn != "" || tp.Columns[0].Name != "c24" {
		t.Fatalf("wide from c24: %+v", tp)
	}

	// A large table is counted over a sample.
	tp = wantProfile(t, s.shownExec(ctx, contracts.OpProfile, profileReq("fx", "big", contracts.DepthDistribution, "")))
	if !tp.Sampled || tp.SampleRows != engine.ProfileSampleRows || tp.Rows != engine.ProfileSampleRows {
		t.Fatalf("big: %+v", tp)
	}
	reply = s.shownExec(ctx, contracts.OpProfile, profileReq("fx", "big", "", ""))
	if !strings.Contains(reply.Text, "a sample, not the whole table") {
		t.Errorf("text:\n%s", reply.Text)
	}

	// An unreadable table is answered exactly as an absent one, and never
	// offered.
	hidden := s.shownExec(ctx, contracts.OpProfile, profileReq("fx", "secret", "", ""))
	absent := s.shownExec(ctx, contracts.OpProfile, profileReq("fx", "secreu", "", ""))
	wantRefusal(t, hidden, string(contracts.RefuseTableNotInventoried))
	wantRefusal(t, absent, string(contracts.RefuseTableNotInventoried))
	if strings.ReplaceAll(hidden.Refusal.Message, "secret", "secreu") != absent.Refusal.Message || hidden.Refusal.Fix != absent.Refusal.Fix ||
		strings.Contains(hidden.Refusal.Fix, "secret") {
		t.Errorf("unreadable %+v\nabsent %+v", hidden.Refusal, absent.Refusal)
	}

	// Hostile names: each profiled by its own name, quoted in the fence.
	for i, name := range HostileTableNames {
		reply := s.shownExec(ctx, contracts.OpProfile, profileReq("fx", name, contracts.DepthPattern, ""))
		tp := wantProfile(t, reply)
		if tp.Table.Name != name || tp.Rows != 1 || len(tp.Columns) != 1 || tp.Columns[0].Present != 1 {
			t.Errorf("%d %q: %+v", i, name, tp)
		}
		if strings.Contains(name, "\n") && strings.Contains(reply.Text, name) {
			t.Errorf("%q: a raw line break reached the text", name)
		}
	}
	for _, spelling := range HostileSpellings {
		reply := s.shownExec(ctx, contracts.OpProfile, profileReq("fx", spelling, "", ""))
		if reply.Status != contracts.ExecRefused || reply.Refusal == nil ||
			reply.Refusal.Code != contracts.RefuseTableNotInventoried && reply.Refusal.Code != refuse.BadRequest {
			t.Errorf("%q: %s %+v", spelling, reply.Status, reply.Refusal)
			continue
		}
		if err := fencetest.Check(reply.Text, 0); err != nil {
			t.Errorf("%q: %v", spelling, err)
		}
	}
	// fromColumn is attacker text too.
	wantRefusal(t, s.shownExec(ctx, contracts.OpProfile, profileReq("fx", "victim", "", `id"; DROP TABLE victim; --`)), string(contracts.RefuseColumnNotInTable))

	var n int
	db, err := sql.Open("sqlite", "file:"+path+"?mode=ro")
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	if err := db.QueryRow("SELECT count(*) FROM victim").Scan(&n); err != nil || n != 3 {
		t.Fatalf("victim: %d rows, %v", n, err)
	}
	if fileDigest(t, path) != before {
		t.Fatal("the database changed")
	}
}

func TestProfileUnsupportedEngine(t *testing.T) {
	// Every engine this build serves profiles; the refusal for one that
	// does not is exercised through an engine without the capability.
	var e engine.Engine = struct{ engine.Engine }{}
	if _, ok := e.(engine.Profiler); ok {
		t.Fatal("a bare engine profiles")
	}
	s := newService(t, Config{})
	reply := s.profileOp(context.Background(), e, &contracts.ExecRequest{Table: "orders"}, engine.Request{})
	wantRefusal(t, shown(contracts.OpProfile, contracts.ExecRequest{Table: "orders"}, reply), string(refuse.Unsupported))
}
