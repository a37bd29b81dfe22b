package gateway

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"sort"
	"strconv"
	"sync"
	"time"

	"github.com/labstack/echo/v4"
	"github.com/nats-io/nats.go/jetstream"
	"github.com/sondehq/sonde/contracts"
	"github.com/sondehq/sonde/pkg/ledger"
	"github.com/sondehq/sonde/services/gateway/api"
)

// historyTimeout bounds the reading of one actor's history.
const historyTimeout = 10 * time.Second

// summaryWorkers is how many ledger outlines one listing reads at a time.
const summaryWorkers = 8

// listRuns answers GET /api/agent/runs: the caller's runs, the most recently
// started first, ?limit=N (default 20, at most 100) per page and ?cursor=
// the previous page's next.
//
// The source is the caller's history subject, sonde.history.<actorId>, where
// the orchestrator publishes a pointer when a run starts (queued) and another
// when it ends. A run takes its place in the list from its first pointer, so
// a page stays put while the runs on it finish, and its cursor is that
// pointer's stream sequence. Everything shown comes from the run's ledger,
// its outline (three direct gets per run, so a page reads limit outlines
// plus one per pointer it skips), and a run whose ledger names another actor
// is never listed.
func (g *Gateway) listRuns(c echo.Context) error {
	a, err := actor(c)
	if err != nil {
		return err
	}
	limit, before, err := listParams(c)
	if err != nil {
		return err
	}
	ctx := c.Request().Context()
	out := api.RunList{Runs: []api.RunSummary{}}
	if !contracts.ValidRunID(a.ID) {
		// An actor id that is no subject token has no history subject.
		return c.JSON(http.StatusOK, out)
	}
	hist, err := g.history(ctx, a.ID, before)
	if err != nil {
		g.log.Warn("history unavailable", "actor", a.ID, "err", err)
		return unavailable("the run history cannot be read", "retry shortly; check NATS")
	}
	l, err := g.openLedger(ctx)
	if err != nil {
		g.log.Warn("ledger unavailable", "err", err)
		return unavailable("the run ledger cannot be reached", "retry shortly; check NATS")
	}
	// Read a page's worth of outlines at a time; a run that is not the
	// caller's (or has no ledger) leaves its place to the next one.
	for len(hist) > 0 && len(out.Runs) < limit {
		batch := hist[:min(len(hist), limit-len(out.Runs))]
		hist = hist[len(batch):]
		sums, err := g.summaries(ctx, l, a, batch)
		if err != nil {
			return err
		}
		for _, s := range sums {
			if s != nil {
				out.Runs = append(out.Runs, *s)
			}
		}
		out.Next = strconv.FormatUint(batch[len(batch)-1].seq, 10)
	}
	if len(hist) == 0 {
		out.Next = ""
	}
	return c.JSON(http.StatusOK, out)
}

// listParams reads ?limit and ?cursor. The cursor is the stream sequence of
// the first pointer of the last run a page looked at; the next page lists
// runs whose first pointer comes before it (0: from the newest).
func listParams(c echo.Context) (limit int, before uint64, err error) {
	q := c.Request().URL.Query()
	limit = api.DefaultRunsLimit
	if v := q.Get("limit"); v != "" {
		n, err := strconv.Atoi(v)
		if err != nil || n < 1 || n > api.MaxRunsLimit {
			return 0, 0, badRequest(contracts.CodeBadRequest, fmt.Sprintf("limit %q is not a whole number from 1 to %d", v, api.MaxRunsLimit),
				fmt.Sprintf("pass a limit from 1 to %d, or omit it for %d", api.MaxRunsLimit, api.DefaultRunsLimit))
		}
		limit = n
	}
	if v := q.Get("cursor"); v != "" {
		n, err := strconv.ParseUint(v, 10, 64)
		if err != nil || n == 0 {
			return 0, 0, badRequest(contracts.CodeBadRequest, fmt.Sprintf("cursor %q is not a cursor of this list", v),
				"pass the next of the previous page, or omit cursor for the first page")
		}
		before = n
	}
	return limit, before, nil
}

// historyRun is a run of an actor's history: its id and the stream sequence
// of its first pointer, which places it in the list.
type historyRun struct {
	runID string
	seq   uint64
}

// history reads the actor's history subject with a short-lived consumer and
// returns its runs, each once, the most recently started first; with before
// > 0 only those whose first pointer comes before it.
func (g *Gateway) history(ctx context.Context, actorID string, before uint64) ([]historyRun, error) {
	ctx, cancel := context.WithTimeout(ctx, historyTimeout)
	defer cancel()
	st, err := g.historyStream(ctx)
	if err != nil {
		return nil, err
	}
	// An ephemeral consumer that acknowledges nothing: its creation says how
	// many pointers there are, and it is deleted when the read ends.
	cons, err := st.CreateConsumer(ctx, jetstream.ConsumerConfig{
		FilterSubject:     contracts.HistorySubject(actorID),
		DeliverPolicy:     jetstream.DeliverAllPolicy,
		AckPolicy:         jetstream.AckNonePolicy,
		MemoryStorage:     true,
		InactiveThreshold: 10 * time.Second,
	})
	if err != nil {
		return nil, fmt.Errorf("gateway: read history: %w", err)
	}
	info := cons.CachedInfo()
	defer func() {
		dctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), time.Second)
		_ = st.DeleteConsumer(dctx, info.Name)
		cancel()
	}()
	var runs []historyRun
	seen := map[string]bool{}
	for pending := info.NumPending; pending > 0; {
		batch, err := cons.Fetch(int(min(pending, 1024)), jetstream.FetchMaxWait(historyTimeout))
		if err != nil {
			return nil, fmt.Errorf("gateway: read history: %w", err)
		}
		n := 0
		for msg := range batch.Messages() {
			n++
			meta, err := msg.Metadata()
			if err != nil {
				return nil, fmt.Errorf("gateway: history metadata: %w", err)
			}
			pending = meta.NumPending
			var p contracts.HistoryPointer
			if json.Unmarshal(msg.Data(), &p) != nil || !contracts.ValidRunID(p.RunID) || seen[p.RunID] {
				continue
			}
			seen[p.RunID] = true
			if before == 0 || meta.Sequence.Stream < before {
				runs = append(runs, historyRun{runID: p.RunID, seq: meta.Sequence.Stream})
			}
		}
		if err := batch.Error(); err != nil {
			return nil, fmt.Errorf("gateway: read history: %w", err)
		}
		if n == 0 {
			return nil, errors.New("gateway: read history: no pointers arrived")
		}
	}
	sort.Slice(runs, func(i, j int) bool { return runs[i].seq > runs[j].seq })
	return runs, nil
}

// summaries reads the outline of each run, a few at a time, and folds it
// into its summary; a run with no ledger, or whose ledger names another
// actor, is nil.
func (g *Gateway) summaries(ctx context.Context, l *ledger.Ledger, a contracts.Actor, runs []historyRun) ([]*api.RunSummary, error) {
	out := make([]*api.RunSummary, len(runs))
	errs := make([]error, len(runs))
	sem := make(chan struct{}, summaryWorkers)
	var wg sync.WaitGroup
	for i, r := range runs {
		wg.Add(1)
		sem <- struct{}{}
		go func() {
			defer func() { <-sem; wg.Done() }()
			entries, err := l.Outline(ctx, r.runID)
			if errors.Is(err, ledger.ErrNotFound) {
				return
			}
			if err != nil {
				errs[i] = err
				return
			}
			rec := ledger.Fold(r.runID, entries)
			if rec.Actor.ID == "" || rec.Actor.ID != a.ID {
				return
			}
			out[i] = &api.RunSummary{
				RunID: rec.RunID, Status: rec.Status, Mode: rec.Mode, WorkflowType: rec.WorkflowType,
				Objective: rec.Objective, ConnectionID: rec.ConnectionID, StartedAt: rec.StartedAt,
				FinishedAt: rec.FinishedAt, StopReason: rec.StopReason, GoalVerdict: rec.GoalVerdict,
			}
			if th := rec.Thread; th != nil {
				out[i].RootRunID, out[i].Position, out[i].ThreadDeclined = th.RootRunID, th.Position, th.Declined
			}
		}()
	}
	wg.Wait()
	for i, err := range errs {
		if err != nil {
			g.log.Warn("ledger read failed", "run", runs[i].runID, "err", err)
			return nil, unavailable("the run ledger cannot be read", "retry shortly; check NATS")
		}
	}
	return out, nil
}

// historyStream binds the history stream once.
func (g *Gateway) historyStream(ctx context.Context) (jetstream.Stream, error) {
	g.res.Lock()
	defer g.res.Unlock()
	if g.hist != nil {
		return g.hist, nil
	}
	st, err := g.js.Stream(ctx, contracts.HistoryStream)
	if err != nil {
		return nil, fmt.Errorf("gateway: stream %s: %w", contracts.HistoryStream, err)
	}
	g.hist = st
	return st, nil
}
