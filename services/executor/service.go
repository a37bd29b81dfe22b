package executor

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
	"github.com/nats-io/nats.go/micro"
	"github.com/sondehq/sonde/contracts"
	"github.com/sondehq/sonde/pkg/artifacts"
	"github.com/sondehq/sonde/services/executor/internal/refuse"
)

// ErrNoConn is returned by Start when Config.NATS is nil.
var ErrNoConn = errors.New("executor: Config.NATS is nil: Start needs a NATS connection")

// Start publishes the descriptor of every connection served to the KV
// bucket contracts.ConnectionsBucket (key: the connection id), opens the
// artifact store unless Config gave one, and serves Ops on
// contracts.ExecSubject(engine, op) in the queue group ServiceName(engine),
// registered with the NATS micro framework under that name. Requests are handled concurrently;
// a malformed one is answered with a refusal. It also hears
// contracts.ExecCancelSubject(engine) outside any queue group, so the
// replica running a cancelled operation stops it. It serves on Config.NATS.
func (s *Service) Start(ctx context.Context) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	nc := s.nc
	if nc == nil {
		return ErrNoConn
	}
	if s.stopped {
		return errors.New("executor: start after stop")
	}
	if s.svc != nil {
		return errors.New("executor: already started")
	}
	js, err := jetstream.New(nc)
	if err != nil {
		return fmt.Errorf("executor: jetstream: %w", err)
	}
	if s.resources != nil {
		if err := s.resources.Ensure(ctx, js); err != nil {
			return fmt.Errorf("executor: %w", err)
		}
	}
	if s.artifacts == nil {
		store, err := artifacts.New(ctx, js)
		if err != nil {
			return fmt.Errorf("executor: %w", err)
		}
		s.artifacts = store
	}
	kv, err := js.KeyValue(ctx, contracts.ConnectionsBucket)
	if err != nil {
		return fmt.Errorf("executor: open bucket %s: %w", contracts.ConnectionsBucket, err)
	}
	if err := s.publishAll(ctx, kv); err != nil {
		return err
	}
	// Every replica hears every cancel: whichever runs the operation stops it.
	cancelSub, err := nc.Subscribe(contracts.ExecCancelSubject(s.engine), s.onCancel)
	if err != nil {
		return fmt.Errorf("executor: subscribe %s: %w", contracts.ExecCancelSubject(s.engine), err)
	}

	svc, err := micro.AddService(nc, micro.Config{
		Name:        s.name,
		Version:     Version,
		Description: "Sonde " + string(s.engine) + " executor: guarded read-only reads and schema reads",
		QueueGroup:  s.name,
		Metadata:    map[string]string{"engine": string(s.engine)},
	})
	if err != nil {
		return fmt.Errorf("executor: register %s: %w", s.name, err)
	}
	// The group is the subject prefix every op shares: sonde.exec.<engine>.
	group := svc.AddGroup(strings.TrimSuffix(contracts.ExecSubjects(s.engine), ".*"),
		micro.WithGroupQueueGroup(s.name))
	for _, op := range Ops() {
		if err := group.AddEndpoint(string(op), s.handler(op)); err != nil {
			_ = svc.Stop()
			_ = cancelSub.Unsubscribe()
			return fmt.Errorf("executor: serve %s: %w", contracts.ExecSubject(s.engine, op), err)
		}
	}
	// The server must know the subscriptions before anyone is told we are up.
	if err := nc.FlushTimeout(10 * time.Second); err != nil {
		_ = svc.Stop()
		_ = cancelSub.Unsubscribe()
		return fmt.Errorf("executor: flush subscriptions: %w", err)
	}
	s.svc, s.cancelSub = svc, cancelSub
	s.log.Info("serving", "connections", len(s.order), "queue", s.name)
	return nil
}

// handler answers one op's requests, each on its own goroutine so that
// reads run concurrently (the semaphore in Exec bounds them).
func (s *Service) handler(op contracts.ExecOp) micro.HandlerFunc {
	return func(r micro.Request) {
		// A request delivered while the endpoints drain is still served;
		// one that comes after the drain grace is told it did not run
		// rather than left waiting.
		if !s.enter(true) {
			s.respond(r, op, stopping())
			return
		}
		go func() {
			defer s.leave()
			var reply contracts.ExecReply
			var req contracts.ExecRequest
			if err := json.Unmarshal(r.Data(), &req); err != nil {
				reply = refused(refuse.New(refuse.BadRequest, "the request is not a valid ExecRequest: "+err.Error(),
					"send an ExecRequest as JSON"))
			} else {
				reply = s.run(context.Background(), op, req)
			}
			s.respond(r, op, reply)
		}()
	}
}

func (s *Service) respond(r micro.Request, op contracts.ExecOp, reply contracts.ExecReply) {
	data, err := json.Marshal(reply)
	if err != nil {
		s.log.Error("encode reply", "op", op, "err", err)
		return
	}
	if err := r.Respond(data); err != nil {
		s.log.Warn("respond", "op", op, "err", err)
	}
}

// publishAll writes the descriptor of every connection served to kv and
// keeps kv for the changes to come (a connection that becomes available).
func (s *Service) publishAll(ctx context.Context, kv jetstream.KeyValue) error {
	s.pubMu.Lock()
	defer s.pubMu.Unlock()
	for _, id := range s.order {
		d := s.conns[id].descriptor()
		data, err := json.Marshal(d)
		if err != nil {
			return fmt.Errorf("executor: encode descriptor %s: %w", d.ID, err)
		}
		if _, err := kv.Put(ctx, d.ID, data); err != nil {
			return fmt.Errorf("executor: publish descriptor %s: %w", d.ID, err)
		}
	}
	s.kv = kv
	return nil
}

// publish writes srv's current descriptor, once Start has published them all.
func (s *Service) publish(srv *served) {
	s.pubMu.Lock()
	defer s.pubMu.Unlock()
	if s.kv == nil {
		return
	}
	data, err := json.Marshal(srv.descriptor())
	if err == nil {
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		_, err = s.kv.Put(ctx, srv.conn.ID, data)
	}
	if err != nil {
		s.log.Warn("publish descriptor", "connection", srv.conn.ID, "err", err)
	}
}

// Stop drains the executor: it stops taking requests (the endpoints'
// interest ends), lets the operations in flight finish for the drain grace
// (Config.DrainGrace) or until ctx ends, whichever comes first, then cancels
// what is still running, waits for its replies and closes the database
// connections. Cancels are heard until the end. It is safe to call more
// than once, and without Start; the service cannot be started again.
func (s *Service) Stop(ctx context.Context) error {
	s.mu.Lock()
	if s.stopped {
		s.mu.Unlock()
		return nil
	}
	s.stopped = true
	svc, nc, cancelSub := s.svc, s.nc, s.cancelSub
	s.mu.Unlock()
	s.stopReopen()

	var err error
	if svc != nil {
		err = svc.Stop()
		// The endpoints drain asynchronously; a round trip to the server
		// makes sure it has dropped their interest before we wait.
		if ferr := nc.FlushTimeout(5 * time.Second); ferr != nil && !errors.Is(ferr, nats.ErrConnectionClosed) {
			s.log.Warn("flush on stop", "err", ferr)
		}
	}
	if !s.inflight.Drain(ctx, s.grace) {
		s.log.Warn("drain grace over; cancelling the operations still running", "grace", s.grace, "stopCtx", ctx.Err())
	}
	s.mu.Lock()
	s.closed = true
	s.mu.Unlock()
	s.cancel()
	s.inflight.Wait(-1)
	if cancelSub != nil {
		_ = cancelSub.Unsubscribe()
	}
	s.retries.Wait()
	s.closeEngines()
	if err != nil {
		return fmt.Errorf("executor: stop: %w", err)
	}
	return nil
}
