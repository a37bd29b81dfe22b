package e2e

import (
	"context"
	"errors"
	"io"
	"net/http"
	"os"
	"os/exec"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/nats-io/nats-server/v2/server"
	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/sondehq/sonde/contracts"
	"github.com/sondehq/sonde/pkg/natsx"
	"github.com/sondehq/sonde/services/gateway/api"
	"github.com/sondehq/sonde/services/sonde/internal/stacktest"
)

// natsConfig is the per-service permissions file this test holds to account.
const natsConfig = "../../../deploy/nats/nats-server.conf"

// natsPasswords are the passwords the config reads from NATS_<USER>_PASSWORD.
var natsPasswords = map[string]string{
	"admin":           "pw-admin-0f3a",
	"orchestrator":    "pw-orchestrator-77c1",
	"gateway":         "pw-gateway-b2d9",
	"modelturn":       "pw-modelturn-4e8e",
	"executor-sqlite": "pw-executor-sqlite-19aa",
}

// startConfiguredNATS starts deploy/nats/nats-server.conf in this process, on
// a random loopback port with its store in a temporary directory, and returns
// its client URL.
func startConfiguredNATS(t *testing.T) string {
	t.Helper()
	for user, pw := range natsPasswords {
		t.Setenv("NATS_"+strings.ToUpper(strings.ReplaceAll(user, "-", "_"))+"_PASSWORD", pw)
	}
	opts, err := server.ProcessConfigFile(natsConfig)
	if err != nil {
		t.Fatalf("%s: %v", natsConfig, err)
	}
	opts.Host, opts.Port = "127.0.0.1", server.RANDOM_PORT
	opts.HTTPHost, opts.HTTPPort = "", 0 // no monitoring port
	opts.StoreDir = t.TempDir()
	opts.NoSigs, opts.NoLog = true, true
	srv, err := server.NewServer(opts)
	if err != nil {
		t.Fatal(err)
	}
	go srv.Start()
	if !srv.ReadyForConnections(15 * time.Second) {
		srv.Shutdown()
		t.Fatal("nats-server did not become ready")
	}
	t.Cleanup(func() { srv.Shutdown(); srv.WaitForShutdown() })
	return srv.ClientURL()
}

// connectAs connects to url as a user of the config, closed when t ends.
func connectAs(t testing.TB, url, user string, opts ...nats.Option) *nats.Conn {
	t.Helper()
	quiet := nats.ErrorHandler(func(*nats.Conn, *nats.Subscription, error) {}) // refusals are expected here
	nc, err := natsx.Connect(url, user, append([]nats.Option{nats.UserInfo(user, natsPasswords[user]), quiet}, opts...)...)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(nc.Close)
	return nc
}

func jsOf(t testing.TB, nc *nats.Conn) jetstream.JetStream {
	t.Helper()
	js, err := jetstream.New(nc)
	if err != nil {
		t.Fatal(err)
	}
	return js
}

// sondeOnce runs this binary as `sonde args…` to completion.
func sondeOnce(t *testing.T, env []string, args ...string) (string, time.Duration, error) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 90*time.Second)
	defer cancel()
	cmd := exec.CommandContext(ctx, os.Args[0], args...)
	cmd.Env = append(os.Environ(), append(env, childEnv+"=1")...)
	start := time.Now()
	out, err := cmd.CombinedOutput()
	return string(out), time.Since(start), err
}

// refused runs op as nc's user and requires the server to refuse it a
// subject starting with subject, with a permissions violation.
func refused(t *testing.T, nc *nats.Conn, subject string, op func(ctx context.Context) error) {
	t.Helper()
	before := nc.LastError()
	ctx, cancel := context.WithTimeout(context.Background(), time.Second)
	defer cancel()
	opErr := op(ctx)
	if err := nc.FlushTimeout(5 * time.Second); err != nil {
		t.Fatal(err)
	}
	err := nc.LastError()
	if err == nil || errors.Is(err, before) || !errors.Is(err, nats.ErrPermissionViolation) || !strings.Contains(err.Error(), `"`+subject) {
		t.Fatalf("%s on %s: want a permissions violation naming it, got %v (operation: %v)", nc.Opts.User, subject, err, opErr)
	}
}

// TestNATSPermissionsOnTheWire holds deploy/nats/nats-server.conf and the
// services to account on a real server started from that file: `sonde serve`
// authenticates (and a bad password names the user, never the password); a
// service user meets a missing resource with a clear error; the admin user
// provisions; every service user's own Ensure then passes; a demo
// investigation runs through the four services, each on its own user, with no
// permission violation; and the users are refused what the ownership table
// says they may not do.
func TestNATSPermissionsOnTheWire(t *testing.T) {
	if testing.Short() {
		t.Skip("starts processes")
	}
	url := startConfiguredNATS(t)
	admin := jsOf(t, connectAs(t, url, "admin"))
	ctx := context.Background()

	// A wrong password: refused, naming the user and not the password.
	out, _, err := sondeOnce(t, []string{"SONDE_NATS_PASSWORD=wrong-pw-5150"},
		"serve", "--nats", url, "--nats-user", "gateway", "--services", "gateway", "--http", "127.0.0.1:0")
	if err == nil || !strings.Contains(out, `user "gateway"`) || !strings.Contains(out, "refused the credentials") || strings.Contains(out, "wrong-pw-5150") {
		t.Fatalf("bad password: err %v, output:\n%s", err, out)
	}

	// Nothing is provisioned yet: the gateway may look the ledger up but not
	// create it, and says so at once (not after the start timeout).
	out, took, err := sondeOnce(t, []string{"SONDE_NATS_PASSWORD=" + natsPasswords["gateway"]},
		"serve", "--nats", url, "--nats-user", "gateway", "--services", "gateway", "--http", "127.0.0.1:0")
	if err == nil || !strings.Contains(out, "stream SONDE_LEDGER does not exist") ||
		!strings.Contains(out, "$JS.API.STREAM.CREATE.SONDE_LEDGER") || !strings.Contains(out, "--nats-admin") {
		t.Fatalf("gateway on an unprovisioned server: err %v, output:\n%s", err, out)
	}
	if took > 15*time.Second {
		t.Fatalf("the refused create took %s to report", took)
	}

	// The admin user provisions every resource and exits.
	out, _, err = sondeOnce(t, []string{"SONDE_NATS_PASSWORD=" + natsPasswords["admin"]},
		"serve", "--nats", url, "--nats-user", "admin", "--nats-admin", "--services", "none")
	if err != nil {
		t.Fatalf("admin provisioning: %v\n%s", err, out)
	}
	for _, stream := range []string{contracts.LedgerStream, contracts.HistoryStream,
		"KV_" + contracts.ConnectionsBucket, "KV_" + contracts.LeasesBucket, "OBJ_" + contracts.ArtifactsBucket} {
		if _, err := admin.Stream(ctx, stream); err != nil {
			t.Fatalf("after provisioning, stream %s: %v", stream, err)
		}
	}

	// Each service's own Ensure, as `sonde serve --services <it>` runs it,
	// passes on its own user; so does an executor that believes it is the
	// admin (its update is refused, and that is not fatal for a resource
	// that exists).
	for _, svc := range []string{"orchestrator", "gateway", "modelturn", "executor-sqlite"} {
		ectx, cancel := context.WithTimeout(ctx, 10*time.Second)
		err := (natsx.Resources{Only: natsx.Needs(svc), Logger: stacktest.Logger(t)}).Ensure(ectx, jsOf(t, connectAs(t, url, svc)))
		cancel()
		if err != nil {
			t.Fatalf("Ensure as %s: %v", svc, err)
		}
	}
	ectx, cancel := context.WithTimeout(ctx, 10*time.Second)
	err = (natsx.Resources{Admin: true, Only: natsx.Needs("executor-sqlite"), Logger: stacktest.Logger(t)}).Ensure(ectx, jsOf(t, connectAs(t, url, "executor-sqlite")))
	cancel()
	if err != nil {
		t.Fatalf("admin Ensure as executor-sqlite: %v", err)
	}

	// A demo investigation through the four services, each on its own user.
	var mu sync.Mutex
	var violations []string
	s := stacktest.Start(t, stacktest.Options{Connect: func(t testing.TB, svc string) *nats.Conn {
		return connectAs(t, url, svc, nats.ErrorHandler(func(_ *nats.Conn, _ *nats.Subscription, err error) {
			mu.Lock()
			defer mu.Unlock()
			violations = append(violations, svc+": "+err.Error())
		}))
	}})
	c := s.Client("")
	started := startRun(t, c, "Why did orders fall in March 2025?")
	es := stacktest.Follow(t, c, started.RunID)
	if k := kinds(es); len(k) < 7 || k[len(k)-1] != "run-finished" {
		t.Fatalf("ledger: %v", k)
	}
	rec, err := c.Run(ctx, started.RunID)
	if err != nil {
		t.Fatal(err)
	}
	if rec.Status != contracts.StatusSucceeded || rec.GoalVerdict == nil || rec.GoalVerdict.Outcome != contracts.VerdictAnswered {
		t.Fatalf("record: status %s verdict %+v", rec.Status, rec.GoalVerdict)
	}
	cited := 0
	for _, claim := range rec.Report {
		for _, ref := range claim.Evidence {
			if ref.Source == contracts.EvidenceArtifact {
				if _, err := c.Artifact(ctx, started.RunID, ref.CorrelationID); err != nil {
					t.Fatalf("artifact %s: %v", ref.CorrelationID, err)
				}
				cited++
			}
		}
	}
	if cited == 0 {
		t.Fatal("the report cites no artifact")
	}
	conns, err := c.Connections(ctx)
	if err != nil || !slices.ContainsFunc(conns, func(d contracts.ConnectionDescriptor) bool { return d.ID == "demo" }) {
		t.Fatalf("connections: %v %+v", err, conns)
	}
	// A direct query (the inspect profile) runs on the gateway's user.
	if q, err := c.Query(ctx, api.QueryRequest{ConnectionID: "demo", SQL: "SELECT count(*) AS n FROM orders"}); err != nil || len(q.Rows) != 1 {
		t.Fatalf("direct query on the gateway's user: %v %+v", err, q)
	}
	// Readiness pings the demo connection's executor ($SRV.PING) on the
	// gateway's user.
	resp, err := http.Get(s.URL + "/readyz")
	if err != nil {
		t.Fatal(err)
	}
	body, _ := io.ReadAll(resp.Body)
	_ = resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		t.Fatalf("readyz on the gateway's user: %d %s", resp.StatusCode, body)
	}
	mu.Lock()
	if len(violations) > 0 {
		t.Fatalf("the services met NATS errors during the run:\n%s", strings.Join(violations, "\n"))
	}
	mu.Unlock()

	ledgerInfo := func() jetstream.StreamState {
		st, err := admin.Stream(ctx, contracts.LedgerStream)
		if err != nil {
			t.Fatal(err)
		}
		info, err := st.Info(ctx)
		if err != nil {
			t.Fatal(err)
		}
		return info.State
	}
	before := ledgerInfo()
	runSubject := "sonde.ledger." + started.RunID

	// The executor cannot publish to ledger subjects.
	ex := connectAs(t, url, "executor-sqlite")
	refused(t, ex, "sonde.ledger.x", func(context.Context) error { return ex.Publish("sonde.ledger.x", []byte(`{}`)) })
	exJS := jsOf(t, ex)
	refused(t, ex, runSubject, func(ctx context.Context) error {
		_, err := exJS.Publish(ctx, runSubject, []byte(`{}`))
		return err
	})

	// The gateway cannot append to the ledger nor ask an executor for a
	// run's own operations.
	gw := connectAs(t, url, "gateway")
	gwJS := jsOf(t, gw)
	refused(t, gw, runSubject, func(ctx context.Context) error {
		_, err := gwJS.Publish(ctx, runSubject, []byte(`{}`))
		return err
	})
	for _, subj := range []string{"sonde.exec.sqlite.profile", "sonde.exec.sqlite.operations", "sonde.exec.sqlite.check"} {
		refused(t, gw, subj, func(ctx context.Context) error {
			_, err := gw.RequestWithContext(ctx, subj, []byte(`{}`))
			if err == nil {
				t.Fatalf("gateway got a reply on %s", subj)
			}
			return err
		})
	}

	// modelturn cannot read the ledger: no stream info, no direct get, no
	// consumer, no subscription.
	mt := connectAs(t, url, "modelturn", nats.PermissionErrOnSubscribe(true))
	mtJS := jsOf(t, mt)
	refused(t, mt, "$JS.API.STREAM.INFO."+contracts.LedgerStream, func(ctx context.Context) error {
		_, err := mtJS.Stream(ctx, contracts.LedgerStream)
		return err
	})
	refused(t, mt, "$JS.API.DIRECT.GET."+contracts.LedgerStream+"."+runSubject, func(ctx context.Context) error {
		_, err := mt.RequestWithContext(ctx, "$JS.API.DIRECT.GET."+contracts.LedgerStream+"."+runSubject, nil)
		return err
	})
	refused(t, mt, "$JS.API.CONSUMER.CREATE."+contracts.LedgerStream, func(ctx context.Context) error {
		_, err := mtJS.CreateConsumer(ctx, contracts.LedgerStream, jetstream.ConsumerConfig{FilterSubject: runSubject})
		return err
	})
	sub, err := mt.SubscribeSync(contracts.LedgerSubjects)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := sub.NextMsg(5 * time.Second); !errors.Is(err, nats.ErrPermissionViolation) {
		t.Fatalf("modelturn subscribed to %s: %v", contracts.LedgerSubjects, err)
	}

	// Even the ledger's writer cannot rewrite the stream's limits (which
	// would drop entries) nor purge it: the ledger is append-only.
	orch := connectAs(t, url, "orchestrator")
	orchJS := jsOf(t, orch)
	refused(t, orch, "$JS.API.STREAM.UPDATE."+contracts.LedgerStream, func(ctx context.Context) error {
		_, err := orchJS.UpdateStream(ctx, jetstream.StreamConfig{
			Name: contracts.LedgerStream, Subjects: []string{contracts.LedgerSubjects},
			Storage: jetstream.FileStorage, Discard: jetstream.DiscardOld, MaxMsgsPerSubject: 1, AllowDirect: true,
		})
		return err
	})
	refused(t, orch, "$JS.API.STREAM.PURGE."+contracts.LedgerStream, func(ctx context.Context) error {
		st, err := orchJS.Stream(ctx, contracts.LedgerStream)
		if err != nil {
			return err
		}
		return st.Purge(ctx)
	})

	// Nothing above reached the ledger.
	if after := ledgerInfo(); after.Msgs != before.Msgs || after.LastSeq != before.LastSeq {
		t.Fatalf("the ledger changed: %+v -> %+v", before, after)
	}
	st, err := admin.Stream(ctx, contracts.LedgerStream)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := st.GetLastMsgForSubject(ctx, "sonde.ledger.x"); !errors.Is(err, jetstream.ErrMsgNotFound) {
		t.Fatalf("sonde.ledger.x holds a message: %v", err)
	}
	if info, _ := st.Info(ctx); info.Config.MaxMsgsPerSubject == 1 || info.Config.Discard != jetstream.DiscardNew {
		t.Fatalf("the ledger's configuration changed: %+v", info.Config)
	}
}

// TestNATSOwnersCreateTheirResources starts from an empty server with the
// same config and no admin: each owner's Ensure creates what it owns when it
// is missing (the executor its bucket and object store, the orchestrator the
// ledger, history and leases), and the readers then start.
func TestNATSOwnersCreateTheirResources(t *testing.T) {
	url := startConfiguredNATS(t)
	for _, svc := range []string{"executor-sqlite", "orchestrator", "gateway", "modelturn"} {
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		err := (natsx.Resources{Only: natsx.Needs(svc), Logger: stacktest.Logger(t)}).Ensure(ctx, jsOf(t, connectAs(t, url, svc)))
		cancel()
		if err != nil {
			t.Fatalf("Ensure as %s: %v", svc, err)
		}
	}
	admin := jsOf(t, connectAs(t, url, "admin"))
	for _, stream := range []string{contracts.LedgerStream, contracts.HistoryStream,
		"KV_" + contracts.ConnectionsBucket, "KV_" + contracts.LeasesBucket, "OBJ_" + contracts.ArtifactsBucket} {
		if _, err := admin.Stream(context.Background(), stream); err != nil {
			t.Fatalf("stream %s: %v", stream, err)
		}
	}
}
