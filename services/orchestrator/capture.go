package orchestrator

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"strings"
	"sync"
	"time"

	"github.com/sondehq/sonde/contracts"
	"github.com/sondehq/sonde/pkg/artifacts"
	"github.com/sondehq/sonde/pkg/grounding"
	"github.com/sondehq/sonde/pkg/policy"
)

// captureKey is what a held capture is valid for: the connection, the
// database it reached (its identity) and the readable patterns it was read
// under. A change to either makes the capture unusable.
type captureKey struct {
	connection, identity, policy string
}

// capture is one inventory read, held for later runs on the same database.
type capture struct {
	key   captureKey
	inv   *contracts.Inventory
	runID string // the run that read it
	corr  string // its artifact under that run
	at    time.Time
}

// captures holds the most recent inventory reads of this process, newest
// last, at most max of them and none older than maxAge.
type captures struct {
	mu     sync.Mutex
	max    int
	maxAge time.Duration
	held   []capture
}

// get returns the newest capture valid for k at now.
func (c *captures) get(k captureKey, now time.Time) (capture, bool) {
	if k.identity == "" || c.max <= 0 {
		return capture{}, false
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	for i := len(c.held) - 1; i >= 0; i-- {
		h := c.held[i]
		if h.key == k && now.Sub(h.at) < c.maxAge {
			return h, true
		}
	}
	return capture{}, false
}

// byArtifact returns the held capture a run recorded, if still held.
func (c *captures) byArtifact(runID, corr string) (*contracts.Inventory, bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	for _, h := range c.held {
		if h.runID == runID && h.corr == corr {
			return h.inv, true
		}
	}
	return nil, false
}

// put holds cp, replacing what it supersedes and dropping the oldest past max.
func (c *captures) put(cp capture) {
	if cp.key.identity == "" || c.max <= 0 {
		return
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	kept := c.held[:0]
	for _, h := range c.held {
		if h.key.connection != cp.key.connection {
			kept = append(kept, h)
		}
	}
	c.held = append(kept, cp)
	if len(c.held) > c.max {
		c.held = append(c.held[:0], c.held[len(c.held)-c.max:]...)
	}
}

// captureContext grounds the run before its first turn: the connection's
// inventory, read by its executor (one operation) or reused from a capture
// this process holds for the same database and policy, packed for the
// objective. A run that already recorded its capture keeps it: a resumed
// run reads exactly what it read before.
func (d *drive) captureContext(ctx context.Context) error {
	for _, e := range d.entries {
		if e.Kind == contracts.KindContextCaptured || e.Kind == contracts.KindContextUnavailable {
			return nil
		}
	}
	key := captureKey{connection: d.header.ConnectionID}
	if desc, err := d.s.connection(ctx, d.header.ConnectionID); err == nil {
		key.identity, key.policy = desc.Identity, desc.Policy
	}
	if held, ok := d.s.captures.get(key, d.s.cfg.Now()); ok {
		d.inv = held.inv
		cc := d.packed(held.inv, "the server for an earlier run on this database and reused, at no cost to this run's budget")
		cc.CorrelationID, cc.InventoryRunID = held.corr, held.runID
		return d.append(ctx, contracts.KindContextCaptured, cc)
	}

	rec := d.record()
	corr := snapshotID
	reply, err := d.execute(ctx, contracts.OpInventory, contracts.ExecRequest{
		RunID: d.runID, StepID: "context", ConnectionID: d.header.ConnectionID,
		Profile: contracts.ProfileAgentReadOnly, CorrelationID: corr,
		TimeoutMs: d.statementTimeout(rec), MaxObjects: contracts.DefaultInventoryObjects,
	})
	if ctx.Err() != nil {
		return ctx.Err()
	}
	if u := unavailable(reply, err); u != nil {
		return d.append(ctx, contracts.KindContextUnavailable, *u)
	}
	d.inv = reply.Inventory
	d.s.captures.put(capture{key: key, inv: reply.Inventory, runID: d.runID, corr: corr, at: d.s.cfg.Now()})
	cc := d.packed(reply.Inventory, fmt.Sprintf("the server through the connection's executor before the first turn (%s of this run's budget)",
		plural(max(1, reply.Statements), "catalog statement")))
	cc.CorrelationID = corr
	cc.Statements, cc.DurationMs = max(1, reply.Statements), reply.DurationMs
	return d.append(ctx, contracts.KindContextCaptured, cc)
}

// unavailable says why an inventory read gave no inventory, or nil.
func unavailable(reply contracts.ExecReply, err error) *contracts.ContextUnavailable {
	var ee *executorError
	switch {
	case errors.As(err, &ee):
		return &contracts.ContextUnavailable{Code: contracts.CodeExecutorUnavailable,
			Detail: "No executor serves this connection's engine, so its schema could not be read."}
	case err != nil:
		return &contracts.ContextUnavailable{Code: contracts.CodeExecutorNoReply,
			Detail: "The executor did not answer the schema read in time."}
	case reply.Status == contracts.ExecRefused && reply.Refusal != nil:
		return &contracts.ContextUnavailable{Code: reply.Refusal.Code, Detail: "The schema read was refused: " + reply.Refusal.Message + "."}
	case reply.Status == contracts.ExecError && reply.Error != nil:
		return &contracts.ContextUnavailable{Code: contracts.CodeSchemaReadFailed,
			Detail: fmt.Sprintf("The database failed the schema read (%s).", reply.Error.Class)}
	case reply.Status != contracts.ExecOK:
		return &contracts.ContextUnavailable{Code: contracts.CodeSchemaReadFailed, Detail: "The schema read did not succeed."}
	case reply.Inventory == nil:
		return &contracts.ContextUnavailable{Code: contracts.CodeInventoryMissing,
			Detail: "The executor answered without an inventory; it may be older than this orchestrator."}
	}
	return nil
}

// packed packs inv for this run's objective (and its conversation's) into
// the context-captured entry the model's context message carries; source
// says who read it and what it cost.
func (d *drive) packed(inv *contracts.Inventory, source string) contracts.ContextCaptured {
	text := d.header.Objective + "\n" + spineWords(&d.header)
	p := grounding.Pack(*inv, grounding.PackOptions{
		Words:    grounding.Words(text),
		MaxChars: d.s.cfg.ContextMaxChars, RelationsMaxChars: d.s.cfg.RelationsMaxChars,
		Planning:        d.header.Mode == contracts.ModePlanning,
		NamesAndIndexes: policy.Workflows[d.header.WorkflowType].NamesAndIndexes,
		Source:          source,
		Label:           d.header.ConnectionID,
	})
	sum := sha256.Sum256([]byte(p.Text))
	return contracts.ContextCaptured{
		Fingerprint: "ctx-" + hex.EncodeToString(sum[:8]),
		Tables:      len(inv.Relations), Total: max(inv.Total, len(inv.Relations)), Packed: p.Named,
		Unreadable: inv.Unreadable, Truncated: inv.Truncated,
		Text: p.Text,
	}
}

// inventory is the inventory this run captured: held by this drive, by this
// process, or read back from its artifact. Nil when the run captured none
// or it can no longer be read (the artifact's TTL passed).
func (d *drive) inventory(ctx context.Context) *contracts.Inventory {
	if d.inv != nil {
		return d.inv
	}
	var cc *contracts.ContextCaptured
	for _, e := range d.entries {
		if e.Kind != contracts.KindContextCaptured {
			continue
		}
		if p, err := e.Decode(); err == nil {
			cc = p.(*contracts.ContextCaptured)
		}
	}
	if cc == nil || cc.CorrelationID == "" {
		return nil
	}
	owner := cc.InventoryRunID
	if owner == "" {
		owner = d.runID
	}
	if inv, ok := d.s.captures.byArtifact(owner, cc.CorrelationID); ok {
		d.inv = inv
		return inv
	}
	inv, err := d.s.storedInventory(ctx, owner, cc.CorrelationID)
	if err != nil {
		d.s.log.Warn("inventory of the run's capture could not be read back", "run", d.runID, "err", err)
		return nil
	}
	d.inv = inv
	return inv
}

// storedInventory reads an inventory artifact from the object store.
func (s *Service) storedInventory(ctx context.Context, runID, corr string) (*contracts.Inventory, error) {
	if s.artifacts == nil {
		return nil, errors.New("no artifact store")
	}
	art, err := s.artifacts.Get(ctx, runID, corr)
	if err != nil {
		return nil, err
	}
	if art.Inventory == nil {
		return nil, fmt.Errorf("artifact %s holds no inventory", corr)
	}
	return art.Inventory, nil
}

// openArtifacts opens the artifact store inventories too large for a reply
// travel in; without it, those captures are reported unavailable.
func (s *Service) openArtifacts(ctx context.Context, open func(context.Context) (*artifacts.Store, error)) {
	st, err := open(ctx)
	if err != nil {
		s.log.Warn("artifact store unavailable: large inventories cannot be read", "err", err)
		return
	}
	s.artifacts = st
}

// snapshotID is the schema snapshot's citable id in every run, whichever
// run's capture it is: the model cites the structure it was shown as
// {"source":"artifact","correlationId":"schema"}.
const snapshotID = "schema"

// snapshotCitation is how the model cites the captured snapshot: the one
// evidence shape every tool result also uses.
func snapshotCitation(cc *contracts.ContextCaptured) string {
	return fmt.Sprintf(`{"source":"artifact","correlationId":%q}`, cc.CorrelationID)
}

// spineWords are the earlier objectives of a run's conversation.
func spineWords(h *contracts.RunStarted) string {
	if h.Thread == nil {
		return ""
	}
	var b strings.Builder
	for _, st := range h.Thread.Chain {
		b.WriteString(st.Objective)
		b.WriteByte('\n')
	}
	return b.String()
}
