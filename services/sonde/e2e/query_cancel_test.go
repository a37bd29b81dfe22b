package e2e

import (
	"context"
	"encoding/json"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/nats-io/nats.go"

	"github.com/sondehq/sonde/contracts"
	"github.com/sondehq/sonde/services/gateway/api"
	"github.com/sondehq/sonde/services/sonde/internal/stacktest"
)

// TestQueryHangUpStopsTheStatement: a client that hangs up on POST
// /api/query makes the gateway publish an ExecCancel for the read's request
// id, and the executor stops the statement at once instead of letting it run
// to its timeout.
func TestQueryHangUpStopsTheStatement(t *testing.T) {
	s := stacktest.Start(t, stacktest.Options{})
	const endless = "WITH RECURSIVE c(x) AS (SELECT 1 UNION ALL SELECT x + 1 FROM c) SELECT count(*) FROM c"

	// Watch the request, its reply and the cancel on the wire.
	monitor := s.NATS.Connect()
	replies := make(chan contracts.ExecReply, 1)
	steps := make(chan string, 1)
	_, err := monitor.Subscribe(contracts.ExecSubject(contracts.EngineSQLite, contracts.OpRead), func(m *nats.Msg) {
		var req contracts.ExecRequest
		if json.Unmarshal(m.Data, &req) != nil || req.SQL != endless {
			return
		}
		steps <- req.StepID
		// The reply goes to the gateway's inbox; hear it there too.
		if _, err := monitor.Subscribe(m.Reply, func(r *nats.Msg) {
			var reply contracts.ExecReply
			if json.Unmarshal(r.Data, &reply) == nil {
				replies <- reply
			}
		}); err != nil {
			t.Error(err)
		}
		_ = monitor.Flush()
	})
	if err != nil {
		t.Fatal(err)
	}
	cancels := make(chan contracts.ExecCancel, 1)
	if _, err := monitor.Subscribe(contracts.ExecCancelSubject(contracts.EngineSQLite), func(m *nats.Msg) {
		var c contracts.ExecCancel
		if json.Unmarshal(m.Data, &c) == nil {
			cancels <- c
		}
	}); err != nil {
		t.Fatal(err)
	}
	if err := monitor.Flush(); err != nil {
		t.Fatal(err)
	}

	ctx, hangUp := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() {
		_, err := s.Client("").Query(ctx, api.QueryRequest{ConnectionID: "demo", SQL: endless, TimeoutMs: api.QueryMaxTimeoutMs})
		done <- err
	}()
	var step string
	select {
	case step = <-steps:
	case <-time.After(10 * time.Second):
		t.Fatal("the read never reached the executor")
	}
	if !strings.HasPrefix(step, "q") {
		t.Fatalf("the direct read carries no request id: step %q", step)
	}
	time.Sleep(300 * time.Millisecond) // the statement is running
	hangUp()
	hungUp := time.Now()
	if err := <-done; !errors.Is(err, context.Canceled) {
		t.Fatalf("query after hang-up: %v", err)
	}

	select {
	case c := <-cancels:
		if c.StepID != step || c.RunID != "" {
			t.Fatalf("cancel %+v for step %q", c, step)
		}
	case <-time.After(5 * time.Second):
		t.Fatal("the gateway sent no cancel")
	}
	select {
	case reply := <-replies:
		if reply.Status != contracts.ExecError || reply.Error.Class != contracts.DBCancelled {
			t.Fatalf("the executor's reply: %+v", reply)
		}
		if took := time.Since(hungUp); took > 3*time.Second {
			t.Fatalf("the statement stopped %s after the hang-up", took)
		}
	case <-time.After(8 * time.Second):
		t.Fatal("the statement was still running 8s after the client hung up (its timeout is 10s)")
	}
}

// TestCancelPermissionsOnTheWire: under deploy/nats/nats-server.conf the
// gateway and the orchestrator may publish an executor cancel and the
// executor hears it; the gateway still cannot ask an executor to read.
func TestCancelPermissionsOnTheWire(t *testing.T) {
	url := startConfiguredNATS(t)
	subject := contracts.ExecCancelSubject(contracts.EngineSQLite)
	ex := connectAs(t, url, "executor-sqlite", nats.PermissionErrOnSubscribe(true))
	sub, err := ex.SubscribeSync(subject)
	if err != nil {
		t.Fatal(err)
	}
	if err := ex.Flush(); err != nil {
		t.Fatal(err)
	}
	for _, user := range []string{"gateway", "orchestrator"} {
		nc := connectAs(t, url, user)
		data, _ := json.Marshal(contracts.ExecCancel{StepID: "q-" + user})
		if err := nc.Publish(subject, data); err != nil {
			t.Fatal(err)
		}
		if err := nc.Flush(); err != nil {
			t.Fatal(err)
		}
		msg, err := sub.NextMsg(5 * time.Second)
		if err != nil {
			t.Fatalf("the executor did not hear %s's cancel: %v", user, err)
		}
		var c contracts.ExecCancel
		if err := json.Unmarshal(msg.Data, &c); err != nil || c.StepID != "q-"+user {
			t.Fatalf("cancel from %s: %s", user, msg.Data)
		}
	}
	// The gateway may ask for direct inspection (a read under the profile it
	// names) but not for a run's own operations.
	gw := connectAs(t, url, "gateway")
	refused(t, gw, "sonde.exec.sqlite.profile", func(ctx context.Context) error {
		_, err := gw.RequestWithContext(ctx, "sonde.exec.sqlite.profile", []byte(`{}`))
		return err
	})
}
