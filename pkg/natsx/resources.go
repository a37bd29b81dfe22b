package natsx

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"regexp"
	"slices"
	"strings"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
	"github.com/sondehq/sonde/contracts"
)

// DefaultArtifactTTL is how long a stored result is kept.
const DefaultArtifactTTL = 24 * time.Hour

// Resources declares every stream, bucket and object store Sonde uses.
// Ensure is idempotent and every service calls it at start, so any subset can
// start first.
//
// The rule under per-service NATS users: every process looks each resource
// up and creates only what is missing; an existing resource is left as it is
// unless Admin is set, and only an Admin process updates it to this
// declaration. A refusal to update a resource that exists is not fatal; a
// resource that is missing and may not be created by this connection is a
// *MissingError.
type Resources struct {
	// Memory keeps everything in memory (tests); the default is the file store.
	Memory bool
	// ArtifactTTL overrides DefaultArtifactTTL.
	ArtifactTTL time.Duration
	// Replicas is the replica count of every stream, bucket and object store
	// (1 when zero). It is applied when a resource is created, and to an
	// existing one only by an Admin process.
	Replicas int
	// Admin applies the declaration to resources that already exist too
	// (create or update): the provisioning user, and the embedded server,
	// whose process owns it.
	Admin bool
	// Only limits Ensure to the named resources (contracts.LedgerStream,
	// contracts.ConnectionsBucket, …; see Needs). Nil means every resource;
	// an empty, non-nil slice means none.
	Only []string
	// Logger receives what Ensure created and what it left as it is; nil
	// discards it.
	Logger *slog.Logger
}

// Needs lists the resources a Sonde service uses, for Resources.Only:
// the orchestrator its own ledger, history and leases plus the connections
// and artifacts it reads; the gateway everything it reads; an executor
// ("executor-<engine>") the connections and artifacts it writes; modelturn,
// or a name Needs does not know, none (an empty, non-nil slice).
func Needs(service string) []string {
	switch {
	case service == "orchestrator":
		return []string{contracts.LedgerStream, contracts.HistoryStream, contracts.LeasesBucket, contracts.ConnectionsBucket, contracts.ArtifactsBucket}
	case service == "gateway":
		return []string{contracts.LedgerStream, contracts.HistoryStream, contracts.ConnectionsBucket, contracts.ArtifactsBucket}
	case strings.HasPrefix(service, "executor-"):
		return []string{contracts.ConnectionsBucket, contracts.ArtifactsBucket}
	}
	return []string{}
}

// MissingError reports a resource that does not exist and that this
// connection is not permitted to create.
type MissingError struct {
	Kind    string // "stream", "bucket" or "object store"
	Name    string
	Subject string // the JetStream API subject the server refused
}

func (e *MissingError) Error() string {
	return fmt.Sprintf("natsx: %s %s does not exist and this NATS user may not create it (permission denied for %s)", e.Kind, e.Name, e.Subject)
}

// PermissionError reports a JetStream API request the server refused for
// this connection's user. Such a request gets no reply; Ensure notices the
// server's error instead of waiting for its context to expire.
type PermissionError struct {
	Subject string
}

func (e *PermissionError) Error() string {
	return fmt.Sprintf("natsx: permission denied for %s", e.Subject)
}

// resource is one declared stream, bucket or object store.
type resource struct {
	kind, name string
	stream     string // the backing stream
	create     func(ctx context.Context, js jetstream.JetStream) error
	apply      func(ctx context.Context, js jetstream.JetStream) error // create or update
}

func (r Resources) declare() []resource {
	storage := jetstream.FileStorage
	if r.Memory {
		storage = jetstream.MemoryStorage
	}
	ttl := r.ArtifactTTL
	if ttl == 0 {
		ttl = DefaultArtifactTTL
	}
	replicas := max(r.Replicas, 1)
	stream := func(cfg jetstream.StreamConfig) resource {
		return resource{
			kind: "stream", name: cfg.Name, stream: cfg.Name,
			create: func(ctx context.Context, js jetstream.JetStream) error {
				_, err := js.CreateStream(ctx, cfg)
				return err
			},
			apply: func(ctx context.Context, js jetstream.JetStream) error {
				_, err := js.CreateOrUpdateStream(ctx, cfg)
				return err
			},
		}
	}
	bucket := func(cfg jetstream.KeyValueConfig) resource {
		return resource{
			kind: "bucket", name: cfg.Bucket, stream: "KV_" + cfg.Bucket,
			create: func(ctx context.Context, js jetstream.JetStream) error {
				_, err := js.CreateKeyValue(ctx, cfg)
				return err
			},
			apply: func(ctx context.Context, js jetstream.JetStream) error {
				_, err := js.CreateOrUpdateKeyValue(ctx, cfg)
				return err
			},
		}
	}
	objects := func(cfg jetstream.ObjectStoreConfig) resource {
		return resource{
			kind: "object store", name: cfg.Bucket, stream: "OBJ_" + cfg.Bucket,
			create: func(ctx context.Context, js jetstream.JetStream) error {
				_, err := js.CreateObjectStore(ctx, cfg)
				return err
			},
			apply: func(ctx context.Context, js jetstream.JetStream) error {
				_, err := js.CreateOrUpdateObjectStore(ctx, cfg)
				if errors.Is(err, jetstream.ErrBucketExists) {
					return nil
				}
				return err
			},
		}
	}
	return []resource{
		stream(jetstream.StreamConfig{
			Name:        contracts.LedgerStream,
			Description: "Sonde run ledgers: one subject per run",
			Subjects:    []string{contracts.LedgerSubjects},
			Storage:     storage,
			Replicas:    replicas,
			Retention:   jetstream.LimitsPolicy,
			// Ledgers are append-only audit records: never discard new entries
			// silently, and allow direct get for cheap reads.
			Discard:     jetstream.DiscardNew,
			AllowDirect: true,
			Duplicates:  2 * time.Minute,
		}),
		stream(jetstream.StreamConfig{
			Name:        contracts.HistoryStream,
			Description: "Sonde per-actor run history: a pointer when a run starts and when it finishes",
			Subjects:    []string{contracts.HistorySubjects},
			Storage:     storage,
			Replicas:    replicas,
			AllowDirect: true,
		}),
		bucket(jetstream.KeyValueConfig{
			Bucket:      contracts.ConnectionsBucket,
			Description: "Connection descriptors (no secrets), written by executors",
			Storage:     storage,
			Replicas:    replicas,
		}),
		bucket(jetstream.KeyValueConfig{
			Bucket:      contracts.LeasesBucket,
			Description: "Drive claims of running runs",
			Storage:     storage,
			Replicas:    replicas,
		}),
		objects(jetstream.ObjectStoreConfig{
			Bucket:      contracts.ArtifactsBucket,
			Description: "Full results of executor reads",
			Storage:     storage,
			Replicas:    replicas,
			TTL:         ttl,
		}),
	}
}

// Ensure makes every resource of r (or of r.Only) exist; see Resources for
// the rule.
func (r Resources) Ensure(ctx context.Context, js jetstream.JetStream) error {
	log := r.Logger
	if log == nil {
		log = slog.New(slog.NewTextHandler(io.Discard, nil))
	}
	for _, res := range r.declare() {
		if r.Only != nil && !slices.Contains(r.Only, res.name) {
			continue
		}
		if err := r.ensure(ctx, js, log, res); err != nil {
			return err
		}
	}
	return nil
}

func (r Resources) ensure(ctx context.Context, js jetstream.JetStream, log *slog.Logger, res resource) error {
	nc := js.Conn()
	lookup := func() (*jetstream.StreamInfo, error) {
		var info *jetstream.StreamInfo
		err := jsCall(ctx, nc, func(ctx context.Context) error {
			s, err := js.Stream(ctx, res.stream)
			if err == nil {
				info = s.CachedInfo()
			}
			return err
		})
		return info, err
	}
	var perm *PermissionError
	updateRefused := ""
	if r.Admin {
		err := jsCall(ctx, nc, func(ctx context.Context) error { return res.apply(ctx, js) })
		if err == nil {
			return nil
		}
		if !errors.As(err, &perm) {
			return fmt.Errorf("natsx: ensure %s %s: %w", res.kind, res.name, err)
		}
		// Not permitted to update it: fall back to creating it if missing.
		updateRefused = perm.Subject
	}

	info, err := lookup()
	switch {
	case err == nil && updateRefused != "":
		log.Warn("JetStream resource left as it is: this NATS user may not update it",
			"kind", res.kind, "name", res.name, "refused", updateRefused)
		return nil
	case err == nil:
		if want := max(r.Replicas, 1); info.Config.Replicas != want {
			log.Warn("JetStream resource left as it is: it differs from this process's declaration, and only an admin process updates it",
				"kind", res.kind, "name", res.name, "replicas", info.Config.Replicas, "declared_replicas", want)
		}
		return nil
	case errors.As(err, &perm):
		// This user may not even look it up: it is not one this process's
		// services use, or the server's permissions are narrower than Needs
		// says. Its own calls will fail clearly if it is really missing.
		log.Warn("JetStream resource cannot be looked up by this NATS user; assuming it exists",
			"kind", res.kind, "name", res.name, "refused", perm.Subject)
		return nil
	case !errors.Is(err, jetstream.ErrStreamNotFound):
		return fmt.Errorf("natsx: look up %s %s: %w", res.kind, res.name, err)
	}

	err = jsCall(ctx, nc, func(ctx context.Context) error { return res.create(ctx, js) })
	switch {
	case err == nil:
		log.Info("JetStream resource created", "kind", res.kind, "name", res.name, "replicas", max(r.Replicas, 1))
		return nil
	case errors.Is(err, jetstream.ErrStreamNameAlreadyInUse), errors.Is(err, jetstream.ErrBucketExists):
		// Another process created it meanwhile, with another configuration.
		return nil
	case errors.As(err, &perm):
		return &MissingError{Kind: res.kind, Name: res.name, Subject: perm.Subject}
	}
	return fmt.Errorf("natsx: create %s %s: %w", res.kind, res.name, err)
}

// permissionSubject extracts the subject of a publish permissions violation.
var permissionSubject = regexp.MustCompile(`Publish to "(\S+)"`)

// jsCall runs call and returns a *PermissionError as soon as the server
// refuses one of nc's publishes to a JetStream API subject ($JS.…) while it
// runs. A refused request is dropped by the server with an asynchronous error
// and would otherwise only be seen as the context expiring. Ensure runs
// before the services share the connection, so a refusal seen meanwhile is
// this call's.
func jsCall(ctx context.Context, nc *nats.Conn, call func(context.Context) error) error {
	if nc == nil {
		return call(ctx)
	}
	before := nc.LastError()
	refused := func() *PermissionError {
		err := nc.LastError()
		// errors.Is, not ==: it never panics on an incomparable error.
		if err == nil || errors.Is(err, before) || !errors.Is(err, nats.ErrPermissionViolation) {
			return nil
		}
		m := permissionSubject.FindStringSubmatch(err.Error())
		// Any JetStream API subject: creating a bucket also asks for the
		// account's info ($JS.API.INFO), and a domain changes the prefix.
		if m == nil || !strings.HasPrefix(m[1], "$JS.") {
			return nil
		}
		return &PermissionError{Subject: m[1]}
	}
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	done := make(chan error, 1)
	go func() { done <- call(ctx) }()
	tick := time.NewTicker(10 * time.Millisecond)
	defer tick.Stop()
	for {
		select {
		case err := <-done:
			if pe := refused(); err != nil && pe != nil {
				return pe
			}
			return err
		case <-tick.C:
			if pe := refused(); pe != nil {
				cancel()
				<-done
				return pe
			}
		}
	}
}
