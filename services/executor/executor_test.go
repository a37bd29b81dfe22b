package executor

import (
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/micro"
	"github.com/sondehq/sonde/contracts"
	"github.com/sondehq/sonde/pkg/artifacts"
	"github.com/sondehq/sonde/pkg/fence"
	"github.com/sondehq/sonde/pkg/natstest"
	"github.com/sondehq/sonde/services/executor/connections"
	"github.com/sondehq/sonde/services/executor/demodb"
	"github.com/sondehq/sonde/services/executor/internal/refuse"
)

var update = flag.Bool("update", false, "rewrite the golden files under testdata/")

func demoPath(t testing.TB) string {
	t.Helper()
	path := filepath.Join(t.TempDir(), "demo.db")
	if err := demodb.Ensure(path); err != nil {
		t.Fatal(err)
	}
	return path
}

func demoConn(t testing.TB) connections.Connection {
	return connections.Connection{ID: "demo", Engine: contracts.EngineSQLite, Path: demoPath(t), Description: demodb.Description, Demo: true}
}

func newService(t testing.TB, cfg Config) *Service {
	t.Helper()
	if cfg.Connections == nil {
		cfg.Connections = []connections.Connection{demoConn(t)}
	}
	if cfg.Logger == nil && !testing.Verbose() {
		cfg.Logger = slog.New(slog.DiscardHandler)
	}
	s, err := New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s.Stop(context.Background()) })
	return s
}

// memStore is an in-process ArtifactStore for tests that do not need NATS.
type memStore map[string]contracts.Artifact

func (m memStore) Put(_ context.Context, a contracts.Artifact) error {
	m[contracts.ArtifactKey(a.RunID, a.CorrelationID)] = a
	return nil
}

func read(sql string) contracts.ExecRequest {
	return contracts.ExecRequest{RunID: "run-1", StepID: "s1", ConnectionID: "demo", Profile: contracts.ProfileAgentReadOnly, SQL: sql, TimeoutMs: 5000}
}

func TestExecReadStoresArtifact(t *testing.T) {
	store := memStore{}
	s := newService(t, Config{Artifacts: store})
	reply := s.shownExec(context.Background(), contracts.OpRead,
		read("select status, count(*) as orders from orders group by status order by status"))
	if reply.Status != contracts.ExecOK {
		t.Fatalf("reply %+v", reply)
	}
	sum := reply.Artifact
	if sum == nil || !strings.HasPrefix(sum.CorrelationID, "c_") || sum.Rows != 4 || len(sum.Columns) != 2 || sum.Bytes == 0 {
		t.Fatalf("summary %+v", sum)
	}
	if reply.Statements != 1 {
		t.Errorf("statements = %d", reply.Statements)
	}
	art, ok := store[contracts.ArtifactKey("run-1", sum.CorrelationID)]
	if !ok {
		t.Fatal("artifact not stored")
	}
	if art.SQL == "" || art.StepID != "s1" || art.ConnectionID != "demo" || len(art.Data) != 4 || art.Profile != contracts.ProfileAgentReadOnly {
		t.Errorf("artifact %+v", art)
	}
	if fence.CountClosers(reply.Text) != 1 || !strings.Contains(reply.Text, "status | orders\ncancelled | 96\n") {
		t.Errorf("text:\n%s", reply.Text)
	}
	if !strings.Contains(reply.Text, `{"source":"artifact","correlationId":"`+sum.CorrelationID+`"}`) {
		t.Errorf("text does not say how to cite the artifact:\n%s", reply.Text)
	}
}

func TestExecRefusals(t *testing.T) {
	path := demoPath(t)
	// The catalog is readable only when a pattern names it (it does here,
	// for the check at the end).
	s := newService(t, Config{Connections: []connections.Connection{{ID: "demo", Engine: contracts.EngineSQLite, Path: path,
		Readable: []string{"*", "sqlite_master"}}}})
	for sql, code := range map[string]string{
		"":                                  string(refuse.Empty),
		"select 1; create table x(a)":       string(refuse.NotOneStatement),
		"delete from orders":                string(refuse.NotASelect),
		"insert into orders(id) values (1)": string(refuse.NotASelect),
		"pragma writable_schema=1":          string(refuse.NotASelect),
		"attach database 'x.db' as x":       string(refuse.NotASelect),
		"select 'unterminated":              string(refuse.Unparsable),
	} {
		reply := s.shownExec(context.Background(), contracts.OpRead, read(sql))
		if reply.Status != contracts.ExecRefused || reply.Refusal == nil || string(reply.Refusal.Code) != code {
			t.Errorf("%q: reply %+v, want refused %s", sql, reply, code)
			continue
		}
		if reply.Statements != 0 || reply.Artifact != nil || !strings.Contains(reply.Text, "Fix:") {
			t.Errorf("%q: reply %+v", sql, reply)
		}
	}
	// Nothing ran: the demo file's catalog has no table x.
	reply := s.shownExec(context.Background(), contracts.OpRead, read("select count(*) from sqlite_master where name = 'x'"))
	if reply.Status != contracts.ExecOK || !strings.Contains(reply.Text, "\n0\n") {
		t.Fatalf("catalog check: %+v", reply)
	}
}

func TestExecResultBounds(t *testing.T) {
	store := memStore{}
	s := newService(t, Config{Artifacts: store})
	ctx := context.Background()

	reply := s.shownExec(ctx, contracts.OpRead, read("select id from orders where id <= 200"))
	if reply.Status != contracts.ExecOK || reply.Artifact.Rows != 200 || reply.Artifact.Truncated {
		t.Fatalf("200 rows: %+v", reply)
	}

	reply = s.shownExec(ctx, contracts.OpRead, read("select id from orders where id <= 201"))
	if reply.Status != contracts.ExecRefused || reply.Refusal.Code != refuse.ResultTooLarge || reply.Statements != 1 {
		t.Fatalf("201 rows, agent: %+v", reply)
	}
	if !strings.Contains(reply.Refusal.Fix, "LIMIT") || strings.Contains(reply.Text, fence.Open) {
		t.Errorf("refusal text shows rows or no fix:\n%s", reply.Text)
	}

	wide := read("select id, printf('%.2000c', 'x') from orders where id <= 150")
	reply = s.shownExec(ctx, contracts.OpRead, wide)
	if reply.Status != contracts.ExecRefused || reply.Refusal.Code != refuse.ResultTooLarge {
		t.Fatalf("300 KB, agent: %+v", reply)
	}

	// A request may lower the bound, not raise it.
	low := read("select id from orders where id <= 11")
	low.MaxRows = 10
	if reply = s.shownExec(ctx, contracts.OpRead, low); reply.Status != contracts.ExecRefused {
		t.Fatalf("11 rows under maxRows 10: %+v", reply)
	}
	high := read("select id from orders where id <= 201")
	high.MaxRows = 1000
	if reply = s.shownExec(ctx, contracts.OpRead, high); reply.Status != contracts.ExecRefused {
		t.Fatalf("201 rows under maxRows 1000, agent: %+v", reply)
	}

	inspect := read("select id from orders where id <= 201")
	inspect.Profile, inspect.MaxRows = contracts.ProfileInspect, 200
	reply = s.shownExec(ctx, contracts.OpRead, inspect)
	if reply.Status != contracts.ExecOK || reply.Artifact.Rows != 200 || !reply.Artifact.Truncated ||
		len(reply.Artifact.TruncatedBy) != 1 || reply.Artifact.TruncatedBy[0] != "rows" {
		t.Fatalf("201 rows, inspect: %+v", reply)
	}
	if art := store[contracts.ArtifactKey("run-1", reply.Artifact.CorrelationID)]; !art.Truncated || len(art.Data) != 200 {
		t.Errorf("stored artifact: truncated %v, %d rows", art.Truncated, len(art.Data))
	}
	if !strings.Contains(reply.Text, "truncated by rows") {
		t.Errorf("text does not say it is truncated:\n%s", reply.Text)
	}

	wide.Profile = contracts.ProfileInspect
	wide.MaxBytes = 256 << 10
	reply = s.shownExec(ctx, contracts.OpRead, wide)
	if reply.Status != contracts.ExecOK || reply.Artifact.TruncatedBy[0] != "answer_characters" || reply.Artifact.Bytes > 256<<10 {
		t.Fatalf("300 KB, inspect: %+v", reply.Artifact)
	}
}

func TestExecErrors(t *testing.T) {
	s := newService(t, Config{})
	ctx := context.Background()

	slow := read("with recursive c(x) as (select 1 union all select x+1 from c) select count(*) from c")
	slow.TimeoutMs = 50
	reply := s.shownExec(ctx, contracts.OpRead, slow)
	if reply.Status != contracts.ExecError || reply.Error.Class != contracts.DBTimeout || reply.Statements != 1 {
		t.Fatalf("timeout: %+v", reply)
	}

	reply = s.shownExec(ctx, contracts.OpRead, read("select * from invoices"))
	if reply.Status != contracts.ExecError || reply.Error.Class != contracts.DBMissingObject {
		t.Fatalf("missing table: %+v", reply)
	}
	if !strings.Contains(reply.Text, "no such table: invoices") || fence.CountClosers(reply.Text) != 1 ||
		strings.Index(reply.Text, fence.Open) > strings.Index(reply.Text, "no such table") {
		t.Errorf("engine text not fenced:\n%s", reply.Text)
	}

	reply = s.shownExec(ctx, contracts.OpRead, read("with x as (select 1) delete from orders"))
	if reply.Status != contracts.ExecRefused || reply.Refusal.Code != refuse.NotASelect {
		t.Fatalf("WITH … DELETE: %+v", reply)
	}
}

func TestExecBlob(t *testing.T) {
	store := memStore{}
	s := newService(t, Config{Artifacts: store})
	reply := s.shownExec(context.Background(), contracts.OpRead, read("select x'00ff10' as b, cast(null as blob) as n"))
	if reply.Status != contracts.ExecOK {
		t.Fatalf("reply %+v", reply)
	}
	if !strings.Contains(reply.Text, "b | n\n"+`{"type":"blob","hex":"00ff10","bytes":3} | NULL`) {
		t.Errorf("text:\n%s", reply.Text)
	}
	data, _ := json.Marshal(store[contracts.ArtifactKey("run-1", reply.Artifact.CorrelationID)].Data)
	if string(data) != `[[{"type":"blob","hex":"00ff10","bytes":3},null]]` {
		t.Errorf("stored data %s", data)
	}
}

func TestExecRequestProblems(t *testing.T) {
	s := newService(t, Config{Connections: []connections.Connection{
		demoConn(t),
		// Another engine's connection is not this executor's to serve.
		{ID: "pg", Engine: contracts.EnginePostgres, DSN: "postgres://x@db/shop"},
	}})
	ctx := context.Background()
	for name, tc := range map[string]struct {
		op   contracts.ExecOp
		req  func(*contracts.ExecRequest)
		code string
	}{
		"unknown op":         {contracts.ExecOp("tables"), nil, string(refuse.Unsupported)},
		"made-up op":         {"drop", nil, string(refuse.Unsupported)},
		"no connection":      {contracts.OpRead, func(r *contracts.ExecRequest) { r.ConnectionID = "" }, string(refuse.BadRequest)},
		"unknown connection": {contracts.OpRead, func(r *contracts.ExecRequest) { r.ConnectionID = "nope" }, string(refuse.UnknownConnection)},
		"other engine":       {contracts.OpRead, func(r *contracts.ExecRequest) { r.ConnectionID = "pg" }, string(refuse.UnknownConnection)},
		"unknown profile":    {contracts.OpRead, func(r *contracts.ExecRequest) { r.Profile = "root" }, string(refuse.BadRequest)},
		"operations profile": {contracts.OpRead, func(r *contracts.ExecRequest) { r.Profile = contracts.ProfileAgentOperations }, string(refuse.Unsupported)},
		"bad run id":         {contracts.OpRead, func(r *contracts.ExecRequest) { r.RunID = "a.b" }, string(refuse.BadRequest)},
		"bad correlation id": {contracts.OpRead, func(r *contracts.ExecRequest) { r.CorrelationID = "../x" }, string(refuse.BadRequest)},
	} {
		req := read("select 1")
		if tc.req != nil {
			tc.req(&req)
		}
		reply := s.shownExec(ctx, tc.op, req)
		if reply.Status != contracts.ExecRefused || string(reply.Refusal.Code) != tc.code {
			t.Errorf("%s: reply %+v, want refused %s", name, reply, tc.code)
		}
	}
	// An empty profile is the strictest.
	req := read("select id from orders where id <= 201")
	req.Profile = ""
	if reply := s.shownExec(ctx, contracts.OpRead, req); reply.Status != contracts.ExecRefused || reply.Refusal.Code != refuse.ResultTooLarge {
		t.Errorf("empty profile: %+v", reply)
	}
}

// TestExecBusy: past the concurrency limit an operation waits a bounded
// time for a slot, then is refused executor_busy, never a database error.
func TestExecBusy(t *testing.T) {
	s := newService(t, Config{BusyWait: 300 * time.Millisecond})
	for range MaxConcurrentReads {
		s.sem <- struct{}{} // eight reads in flight
	}
	start := time.Now()
	reply := s.shownExec(context.Background(), contracts.OpRead, read("select 1"))
	waited := time.Since(start)
	if reply.Status != contracts.ExecRefused || reply.Refusal.Code != contracts.RefuseExecutorBusy || !strings.Contains(reply.Refusal.Fix, "retry") {
		t.Fatalf("ninth read: %+v", reply)
	}
	if waited < 250*time.Millisecond || waited > 3*time.Second {
		t.Errorf("ninth read waited %s for a slot, want about 300ms", waited)
	}
	// A slot that frees during the wait is taken.
	time.AfterFunc(100*time.Millisecond, func() { <-s.sem })
	if reply := s.shownExec(context.Background(), contracts.OpRead, read("select 1")); reply.Status != contracts.ExecOK {
		t.Fatalf("a slot freed during the wait: %+v", reply)
	}
}

func TestExecConcurrent(t *testing.T) {
	s := newService(t, Config{Artifacts: &syncStore{m: memStore{}}})
	var wg sync.WaitGroup
	errs := make(chan string, MaxConcurrentReads)
	for g := range MaxConcurrentReads {
		wg.Go(func() {
			for i := range 10 {
				req := read(fmt.Sprintf("select count(*) from orders where customer_id %% 8 = %d and id > %d", g, i))
				if reply := s.shownExec(context.Background(), contracts.OpRead, req); reply.Status != contracts.ExecOK {
					errs <- fmt.Sprintf("goroutine %d: %+v", g, reply)
					return
				}
			}
		})
	}
	wg.Wait()
	close(errs)
	for e := range errs {
		t.Error(e)
	}
}

type syncStore struct {
	mu sync.Mutex
	m  memStore
}

func (s *syncStore) Put(ctx context.Context, a contracts.Artifact) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.m.Put(ctx, a)
}

func TestExecAfterStop(t *testing.T) {
	s := newService(t, Config{})
	if err := s.Stop(context.Background()); err != nil {
		t.Fatal(err)
	}
	reply := s.shownExec(context.Background(), contracts.OpRead, read("select 1"))
	if reply.Status != contracts.ExecError || reply.Error.Class != contracts.DBUnavailable {
		t.Fatalf("after stop: %+v", reply)
	}
	if err := s.Stop(context.Background()); err != nil {
		t.Fatalf("second stop: %v", err)
	}
}

// TestNewStartsWithUnopenableFiles: a database that cannot be opened does
// not stop the executor; its connection is served as unavailable, with why.
func TestNewStartsWithUnopenableFiles(t *testing.T) {
	bad := filepath.Join(t.TempDir(), "not.db")
	if err := os.WriteFile(bad, []byte("this is not a database, just text long enough to have a header......"), 0o600); err != nil {
		t.Fatal(err)
	}
	s := newService(t, Config{RetryOpen: time.Hour, Connections: []connections.Connection{
		demoConn(t),
		{ID: "missing", Engine: contracts.EngineSQLite, Path: filepath.Join(t.TempDir(), "missing.db")},
		{ID: "text", Engine: contracts.EngineSQLite, Path: bad},
	}})
	ds := s.Descriptors()
	if len(ds) != 3 || ds[0].Status != contracts.ConnectionAvailable {
		t.Fatalf("descriptors: %+v", ds)
	}
	for _, d := range ds[1:] {
		if d.Status != contracts.ConnectionUnavailable || d.Reason == "" || strings.Contains(d.Reason, t.TempDir()) || strings.Contains(d.Reason, "/") {
			t.Errorf("%s: %+v", d.ID, d)
		}
		req := read("select 1")
		req.ConnectionID = d.ID
		reply := s.shownExec(context.Background(), contracts.OpRead, req)
		if reply.Status != contracts.ExecRefused || reply.Refusal.Code != contracts.RefuseConnectionUnavailable ||
			!strings.Contains(reply.Refusal.Message, d.Reason) {
			t.Errorf("%s: %+v", d.ID, reply)
		}
	}
	if ds[1].Reason != "the database file does not exist" {
		t.Errorf("missing file: %q", ds[1].Reason)
	}
	if reply := s.shownExec(context.Background(), contracts.OpRead, read("select 1")); reply.Status != contracts.ExecOK {
		t.Errorf("the available connection: %+v", reply)
	}
}

// goldenCase is one executor answer TestGolden pins: the operation, the
// request and the reply (its timing zeroed), as data. The orchestrator
// renders these same replies for the model (its testdata/visible/replies.*).
type goldenCase struct {
	Op    contracts.ExecOp      `json:"op"`
	Req   contracts.ExecRequest `json:"req"`
	Reply contracts.ExecReply   `json:"reply"`
}

// TestGolden pins what the executor answers, as data: a read, a schema
// read, a database error and a refusal on the demo database.
func TestGolden(t *testing.T) {
	s := newService(t, Config{})
	ctx := context.Background()
	r := read("select id, name, country, signup_date from customers where id in (1, 2, 3) order by id")
	r.CorrelationID = "c_golden_read"
	schema := read("")
	schema.Table, schema.CorrelationID = "orders", "c_golden_schema"
	errReq := read("select nope from customers")
	errReq.CorrelationID = "c_golden_error"
	refusal := read("select 1; delete from orders")
	refusal.CorrelationID = "c_golden_refused"
	var cases []goldenCase
	for _, tc := range []struct {
		op  contracts.ExecOp
		req contracts.ExecRequest
	}{{contracts.OpRead, r}, {contracts.OpSchema, schema}, {contracts.OpRead, errReq}, {contracts.OpRead, refusal}} {
		reply := s.Exec(ctx, tc.op, tc.req)
		reply.DurationMs = 0
		cases = append(cases, goldenCase{tc.op, tc.req, reply})
	}
	got, err := json.MarshalIndent(cases, "", "  ")
	if err != nil {
		t.Fatal(err)
	}
	got = append(got, '\n')
	golden := filepath.Join("testdata", "replies.json")
	if *update {
		if err := os.WriteFile(golden, got, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	want, err := os.ReadFile(golden)
	if err != nil {
		t.Fatalf("%v (run go test -update)", err)
	}
	if string(got) != string(want) {
		t.Errorf("replies differ from %s (go test -update to accept):\n%s", golden, got)
	}
}

func TestNATS(t *testing.T) {
	srv := natstest.Start(t)
	nc := srv.Connect()
	conn := demoConn(t)
	s := newService(t, Config{Connections: []connections.Connection{conn}, NATS: nc})
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	if err := s.Start(ctx); err != nil {
		t.Fatal(err)
	}
	client := srv.Connect()

	request := func(op contracts.ExecOp, payload []byte) contracts.ExecReply {
		t.Helper()
		msg, err := client.RequestWithContext(ctx, contracts.ExecSubject(contracts.EngineSQLite, op), payload)
		if err != nil {
			t.Fatalf("%s: %v", op, err)
		}
		var reply contracts.ExecReply
		if err := json.Unmarshal(msg.Data, &reply); err != nil {
			t.Fatalf("%s: %v in %s", op, err, msg.Data)
		}
		return reply
	}

	req := read("select country, count(*) as n from customers group by country order by n desc limit 3")
	payload, _ := json.Marshal(req)
	reply := request(contracts.OpRead, payload)
	if reply.Status != contracts.ExecOK || reply.Artifact.Rows != 3 {
		t.Fatalf("read: %+v", reply)
	}

	// The artifact is in the object store, readable as the gateway reads it.
	store, err := artifacts.New(ctx, srv.JetStream())
	if err != nil {
		t.Fatal(err)
	}
	art, err := store.Get(ctx, "run-1", reply.Artifact.CorrelationID)
	if err != nil {
		t.Fatal(err)
	}
	if len(art.Data) != 3 || art.Data[0][0] != "DE" || art.SQL != req.SQL || art.StepID != "s1" {
		t.Errorf("artifact %+v", art)
	}

	// Schema reads store the composed SQL.
	schemaReq := read("")
	schemaReq.Table, schemaReq.CorrelationID = "payments", "c_schema_1"
	payload, _ = json.Marshal(schemaReq)
	reply = request(contracts.OpSchema, payload)
	if reply.Status != contracts.ExecOK || !strings.Contains(shown(contracts.OpSchema, schemaReq, reply).Text, `"main"."payments" — table`) || reply.Artifact.CorrelationID != "c_schema_1" {
		t.Fatalf("schema: %+v", reply)
	}
	art, err = store.Get(ctx, "run-1", "c_schema_1")
	if err != nil || !strings.Contains(art.SQL, "sqlite_") || art.Rows != 1 || art.Data[0][1] != "payments" {
		t.Fatalf("schema artifact: %v, %+v", err, art)
	}

	// Malformed requests get a reply, not silence.
	reply = request(contracts.OpRead, []byte("{not json"))
	if reply.Status != contracts.ExecRefused || reply.Refusal.Code != refuse.BadRequest {
		t.Fatalf("malformed: %+v", reply)
	}

	// Descriptors are published without the path.
	js := srv.JetStream()
	kv, err := js.KeyValue(ctx, contracts.ConnectionsBucket)
	if err != nil {
		t.Fatal(err)
	}
	entry, err := kv.Get(ctx, "demo")
	if err != nil {
		t.Fatal(err)
	}
	var d contracts.ConnectionDescriptor
	if err := json.Unmarshal(entry.Value(), &d); err != nil {
		t.Fatal(err)
	}
	if d.ID != "demo" || d.Engine != contracts.EngineSQLite || !d.Demo || d.Identity != conn.Identity() || len(d.Identity) != 64 {
		t.Errorf("descriptor %+v", d)
	}
	if raw := string(entry.Value()); strings.Contains(raw, "demo.db") || strings.Contains(raw, filepath.Dir(conn.Path)) {
		t.Errorf("descriptor leaks the path: %s", raw)
	}

	// Discoverable through the micro framework.
	subj, err := micro.ControlSubject(micro.InfoVerb, ServiceName(contracts.EngineSQLite), "")
	if err != nil {
		t.Fatal(err)
	}
	msg, err := client.RequestWithContext(ctx, subj, nil)
	if err != nil {
		t.Fatal(err)
	}
	var info micro.Info
	if err := json.Unmarshal(msg.Data, &info); err != nil {
		t.Fatal(err)
	}
	subjects := map[string]string{}
	for _, ep := range info.Endpoints {
		subjects[ep.Subject] = ep.QueueGroup
	}
	for _, op := range Ops() {
		if q, ok := subjects[contracts.ExecSubject(contracts.EngineSQLite, op)]; !ok || q != "executor-sqlite" {
			t.Errorf("endpoint for %s: %v (have %v)", op, ok, subjects)
		}
	}

	// After Stop nobody answers.
	if err := s.Stop(context.Background()); err != nil {
		t.Fatal(err)
	}
	payload, _ = json.Marshal(read("select 1"))
	_, err = client.RequestWithContext(ctx, contracts.ExecSubject(contracts.EngineSQLite, contracts.OpRead), payload)
	if !errors.Is(err, nats.ErrNoResponders) {
		t.Fatalf("request to a stopped executor: err = %v, want no responders", err)
	}
}

type failingStore struct{}

func (failingStore) Put(context.Context, contracts.Artifact) error { return errors.New("store down") }

func TestExecStoreFailure(t *testing.T) {
	s := newService(t, Config{Artifacts: failingStore{}})
	reply := s.shownExec(context.Background(), contracts.OpRead, read("select 1"))
	if reply.Status != contracts.ExecError || reply.Error.Class != contracts.DBUnavailable || reply.Artifact != nil || reply.Statements != 1 {
		t.Fatalf("reply %+v", reply)
	}
}

// TestHandoverProfile: the editor replay reads up to 500 rows and 64 MiB,
// refuses beyond, and sets no statement timeout of its own.
func TestHandoverProfile(t *testing.T) {
	s := newService(t, Config{Artifacts: memStore{}})
	ctx := context.Background()
	ok := read("select id from orders where id <= 500")
	ok.Profile = contracts.ProfileAgentHandover
	if reply := s.shownExec(ctx, contracts.OpRead, ok); reply.Status != contracts.ExecOK || reply.Artifact.Rows != 500 || reply.Artifact.Truncated {
		t.Fatalf("500 rows, handover: %+v", reply)
	}
	over := read("select id from orders where id <= 501")
	over.Profile = contracts.ProfileAgentHandover
	if reply := s.shownExec(ctx, contracts.OpRead, over); reply.Status != contracts.ExecRefused || reply.Refusal.Code != refuse.ResultTooLarge {
		t.Fatalf("501 rows, handover: %+v", reply)
	}
	p := profiles[contracts.ProfileAgentHandover]
	if d := p.deadline(contracts.ExecRequest{TimeoutMs: 1000}); d != 0 {
		t.Fatalf("handover deadline %s, want none", d)
	}
	if l := p.limits(contracts.ExecRequest{}); l.MaxBytes != 64<<20 || l.Truncate {
		t.Fatalf("handover limits %+v", l)
	}
}
