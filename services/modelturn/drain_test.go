package modelturn_test

import (
	"context"
	"encoding/json"
	"errors"
	"testing"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/sondehq/sonde/contracts"
	"github.com/sondehq/sonde/pkg/modeltest"
	"github.com/sondehq/sonde/services/modelturn"
)

// TestStopDrainsTurnsInFlight stops the service while a turn is with the
// model: the service takes no new request (no responders), the turn in
// flight beats while it waits, finishes and answers, and Stop returns after it.
func TestStopDrainsTurnsInFlight(t *testing.T) {
	release := make(chan struct{})
	asked := make(chan struct{}, 1)
	srv := replay(t, func(modeltest.ChatRequest) (modeltest.Reply, error) {
		asked <- struct{}{}
		<-release
		return modeltest.Reply{Text: "drained answer"}, nil
	})
	s, ns := serveOnNATS(t, modelturn.Config{Provider: modelturn.ProviderOpenAI, Model: "gpt-test", APIKey: "k", APIURL: srv.URL(),
		HeartbeatInterval: 20 * time.Millisecond, DrainTimeout: 20 * time.Second})
	client := ns.Connect()
	beats := make(chan contracts.ModelDelta, 64)
	sub, err := client.Subscribe(contracts.ModelDeltaSubject("run-drain"), func(m *nats.Msg) {
		var d contracts.ModelDelta
		if json.Unmarshal(m.Data, &d) == nil && d.Heartbeat {
			select {
			case beats <- d:
			default:
			}
		}
	})
	if err != nil {
		t.Fatal(err)
	}
	defer sub.Unsubscribe()
	_ = client.Flush()

	b, _ := json.Marshal(userTurn("run-drain"))
	inflight := make(chan *nats.Msg, 1)
	go func() {
		msg, err := client.Request(contracts.SubjectModelTurn, b, 20*time.Second)
		if err != nil {
			t.Errorf("turn in flight: %v", err)
		}
		inflight <- msg
	}()
	<-asked
	select {
	case d := <-beats:
		if d.Turn != 1 || d.Text != "" {
			t.Fatalf("heartbeat %+v", d)
		}
	case <-time.After(5 * time.Second):
		t.Fatal("no heartbeat while the turn waited on the model")
	}

	stopped := make(chan struct{})
	go func() { _ = s.Stop(context.Background()); close(stopped) }()
	// New requests find nobody once the endpoint is gone.
	deadline := time.Now().Add(5 * time.Second)
	for {
		_, err := client.Request(contracts.SubjectModelTurn, b, time.Second)
		if errors.Is(err, nats.ErrNoResponders) {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("a stopping service still takes turns: %v", err)
		}
		time.Sleep(10 * time.Millisecond)
	}
	select {
	case <-stopped:
		t.Fatal("Stop returned with a turn in flight")
	case <-time.After(100 * time.Millisecond):
	}
	close(release)
	msg := <-inflight
	var reply contracts.ModelTurnReply
	if msg == nil || json.Unmarshal(msg.Data, &reply) != nil || reply.Failure != nil || reply.Text != "drained answer" {
		t.Fatalf("the drained turn answered %+v", reply)
	}
	select {
	case <-stopped:
	case <-time.After(10 * time.Second):
		t.Fatal("Stop did not return after the drain")
	}
}

// TestStopCancelsWhatOutlivesTheDrain: a turn still with the model when the
// drain ends — its timeout passes, or the caller's context of Stop ends
// first — is cancelled and answers a retryable failure (not the model's late
// answer), so its run asks another replica.
func TestStopCancelsWhatOutlivesTheDrain(t *testing.T) {
	cancelled, cancel := context.WithCancel(context.Background())
	cancel()
	for name, c := range map[string]struct {
		drain time.Duration
		stop  context.Context
	}{
		"drain timeout": {100 * time.Millisecond, context.Background()},
		"stop context":  {time.Minute, cancelled},
	} {
		t.Run(name, func(t *testing.T) {
			asked := make(chan struct{}, 1)
			srv := replay(t, func(req modeltest.ChatRequest) (modeltest.Reply, error) {
				asked <- struct{}{}
				time.Sleep(5 * time.Second)
				return modeltest.Reply{Text: "too late"}, nil
			})
			s, ns := serveOnNATS(t, modelturn.Config{Provider: modelturn.ProviderOpenAI, Model: "gpt-test", APIKey: "k", APIURL: srv.URL(),
				DrainTimeout: c.drain})
			b, _ := json.Marshal(userTurn("run-cut"))
			inflight := make(chan *nats.Msg, 1)
			go func() {
				msg, _ := ns.Connect().Request(contracts.SubjectModelTurn, b, 20*time.Second)
				inflight <- msg
			}()
			<-asked
			if err := s.Stop(c.stop); err != nil {
				t.Fatal(err)
			}
			msg := <-inflight
			var reply contracts.ModelTurnReply
			if msg == nil || json.Unmarshal(msg.Data, &reply) != nil || reply.Failure == nil ||
				reply.Failure.Reason != contracts.ReasonModelUnavailable || !reply.Failure.Retryable {
				t.Fatalf("the cancelled turn answered %+v", reply)
			}
		})
	}
}

// TestStartNeedsNATS: Start without Config.NATS says so, and Stop after it
// is still safe.
func TestStartNeedsNATS(t *testing.T) {
	s := newService(t, modelturn.Config{})
	if err := s.Start(context.Background()); !errors.Is(err, modelturn.ErrNoConn) {
		t.Fatalf("Start without NATS: %v, want ErrNoConn", err)
	}
	if err := s.Stop(context.Background()); err != nil {
		t.Fatal(err)
	}
}
