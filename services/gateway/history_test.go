package gateway_test

import (
	"encoding/json"
	"net/http"
	"slices"
	"testing"

	"github.com/sondehq/sonde/contracts"
	"github.com/sondehq/sonde/services/gateway"
	"github.com/sondehq/sonde/services/gateway/api"
	"github.com/sondehq/sonde/services/gateway/client"
)

// point publishes a history pointer the way the orchestrator does, and waits
// for the stream to hold it.
func (e *env) point(actorID, runID string, status contracts.RunStatus) {
	e.t.Helper()
	b, _ := json.Marshal(contracts.HistoryPointer{RunID: runID, Status: status})
	if _, err := e.js.Publish(e.ctx, contracts.HistorySubject(actorID), b); err != nil {
		e.t.Fatal(err)
	}
}

func ids(runs []client.RunSummary) []string {
	out := make([]string, len(runs))
	for i, r := range runs {
		out[i] = r.RunID
	}
	return out
}

// historyFixture writes alice's runs, bob's and the pointers to them, and
// returns alice's runs in the order she must see them.
//
//	r1  alice, finished (queued pointer, then succeeded)
//	r2  alice, finished before start pointers existed (succeeded pointer only)
//	b1  bob's run; a pointer to it also lands on alice's subject
//	r3  alice, running (driver resolved)
//	rx  a pointer to a run with no ledger
//	r4  alice, queued (header only)
func historyFixture(e *env) []string {
	e.t.Helper()
	w := e.startedRun("r1", alice)
	e.point(alice.ID, "r1", contracts.StatusQueued)
	e.finishedRun("r2", alice)
	e.point(alice.ID, "r2", contracts.StatusSucceeded)
	e.finishedRun("b1", bob)
	e.point(bob.ID, "b1", contracts.StatusQueued)
	e.point(alice.ID, "b1", contracts.StatusQueued)
	e.startedRun("r3", alice)
	e.point(alice.ID, "r3", contracts.StatusQueued)
	e.append(w, contracts.KindRunFinished, contracts.RunFinished{Status: contracts.StatusSucceeded, StopReason: contracts.StopReportComposed,
		GoalVerdict: &contracts.GoalVerdict{Outcome: contracts.VerdictAnswered, Rule: "agent-investigation.2", Unmet: []string{}}})
	e.point(alice.ID, "r1", contracts.StatusSucceeded)
	e.point(alice.ID, "rx", contracts.StatusQueued)
	w4 := e.led.Writer("r4", 0, nil)
	e.append(w4, contracts.KindRunStarted, contracts.RunStarted{
		Mode: contracts.ModeAgent, WorkflowType: contracts.WorkflowInvestigation,
		Objective: "what is queued", ConnectionID: "shop", Actor: alice,
	})
	e.point(alice.ID, "r4", contracts.StatusQueued)
	return []string{"r4", "r3", "r2", "r1"}
}

func TestListRunsNewestFirstWithRunningRuns(t *testing.T) {
	e := newEnv(t)
	want := historyFixture(e)
	list, err := e.client(tokAlice).Runs(e.ctx, 0, "")
	if err != nil {
		t.Fatal(err)
	}
	if got := ids(list.Runs); !slices.Equal(got, want) || list.Next != "" {
		t.Fatalf("runs %v next %q, want %v and no next", got, list.Next, want)
	}
	byID := map[string]client.RunSummary{}
	for _, r := range list.Runs {
		byID[r.RunID] = r
	}
	if r := byID["r4"]; r.Status != contracts.StatusQueued || r.Objective != "what is queued" || r.FinishedAt != nil {
		t.Errorf("queued run %+v", r)
	}
	if r := byID["r3"]; r.Status != contracts.StatusRunning || r.FinishedAt != nil || r.GoalVerdict != nil ||
		r.ConnectionID != "shop" || r.WorkflowType != contracts.WorkflowInvestigation || r.Mode != contracts.ModeAgent || r.StartedAt.IsZero() {
		t.Errorf("running run %+v", r)
	}
	if r := byID["r1"]; r.Status != contracts.StatusSucceeded || r.FinishedAt == nil || r.FinishedAt.Before(r.StartedAt) ||
		r.GoalVerdict == nil || r.GoalVerdict.Outcome != contracts.VerdictAnswered || r.StopReason != contracts.StopReportComposed {
		t.Errorf("finished run %+v", r)
	}

	// The wire shape.
	status, _, body := e.call(http.MethodGet, api.PathRuns+"?limit=1", tokAlice, "")
	var raw struct {
		Runs []map[string]any `json:"runs"`
		Next string           `json:"next"`
	}
	if err := json.Unmarshal(body, &raw); status != http.StatusOK || err != nil || len(raw.Runs) != 1 || raw.Next == "" {
		t.Fatalf("%d %s", status, body)
	}
	for _, k := range []string{"runId", "status", "objective", "connectionId", "workflowType", "startedAt"} {
		if _, ok := raw.Runs[0][k]; !ok {
			t.Errorf("summary lacks %q: %s", k, body)
		}
	}
	if _, ok := raw.Runs[0]["finishedAt"]; ok {
		t.Errorf("a queued run has finishedAt: %s", body)
	}
}

func TestListRunsPages(t *testing.T) {
	e := newEnv(t)
	want := historyFixture(e)
	for _, limit := range []int{1, 2, 3, 4, 100} {
		var got []string
		cursor, pages := "", 0
		for {
			list, err := e.client(tokAlice).Runs(e.ctx, limit, cursor)
			if err != nil {
				t.Fatal(err)
			}
			if len(list.Runs) > limit {
				t.Fatalf("limit %d: a page of %d", limit, len(list.Runs))
			}
			got = append(got, ids(list.Runs)...)
			pages++
			if list.Next == "" {
				break
			}
			if pages > len(want) {
				t.Fatalf("limit %d: no end after %d pages", limit, pages)
			}
			cursor = list.Next
		}
		if !slices.Equal(got, want) {
			t.Fatalf("limit %d: paged through %v, want %v", limit, got, want)
		}
	}

	// A run that starts between pages goes on top, and the next page goes on
	// where the last one ended.
	first, err := e.client(tokAlice).Runs(e.ctx, 2, "")
	if err != nil {
		t.Fatal(err)
	}
	e.startedRun("r5", alice)
	e.point(alice.ID, "r5", contracts.StatusQueued)
	e.point(alice.ID, "r3", contracts.StatusSucceeded) // runs on the page finishing do not move them
	second, err := e.client(tokAlice).Runs(e.ctx, 2, first.Next)
	if err != nil {
		t.Fatal(err)
	}
	if got := append(ids(first.Runs), ids(second.Runs)...); !slices.Equal(got, want) || second.Next != "" {
		t.Fatalf("pages across a start: %v (next %q), want %v", got, second.Next, want)
	}
	if top, err := e.client(tokAlice).Runs(e.ctx, 1, ""); err != nil || len(top.Runs) != 1 || top.Runs[0].RunID != "r5" {
		t.Fatalf("new run not on top: %+v %v", top, err)
	}

	// Listing leaves no consumer behind.
	st, err := e.js.Stream(e.ctx, contracts.HistoryStream)
	if err != nil {
		t.Fatal(err)
	}
	if info, err := st.Info(e.ctx); err != nil || info.State.Consumers != 0 {
		t.Fatalf("history consumers left: %+v %v", info.State, err)
	}
}

func TestListRunsOnlyTheCallersOwn(t *testing.T) {
	e := newEnv(t, func(c *gateway.Config) {
		c.Tokens["tok-dotted"] = contracts.Actor{ID: "alice.b1", Role: contracts.RoleAdmin}
		c.Tokens["tok-wild"] = contracts.Actor{ID: "*", Role: contracts.RoleAdmin}
	})
	historyFixture(e)
	list, err := e.client(tokBob).Runs(e.ctx, 0, "")
	if err != nil {
		t.Fatal(err)
	}
	if got := ids(list.Runs); !slices.Equal(got, []string{"b1"}) {
		t.Fatalf("bob sees %v", got)
	}
	// An admin sees her own runs only: none.
	status, _, body := e.call(http.MethodGet, api.PathRuns, tokAdmin, "")
	if status != http.StatusOK || string(body) != "{\"runs\":[]}\n" {
		t.Fatalf("carol: %d %s", status, body)
	}
	// An actor id that is no subject token lists nothing, wildcards included.
	for _, tok := range []string{"tok-dotted", "tok-wild"} {
		list, err := e.client(tok).Runs(e.ctx, 0, "")
		if err != nil || len(list.Runs) != 0 {
			t.Fatalf("%s: %+v %v", tok, list, err)
		}
	}
	// No token, no list.
	status, _, body = e.call(http.MethodGet, api.PathRuns, "", "")
	wantError(t, status, body, http.StatusUnauthorized, contracts.CodeUnauthorized)
}

func TestListRunsRefusesBadParameters(t *testing.T) {
	e := newEnv(t)
	for _, q := range []string{"limit=0", "limit=101", "limit=-1", "limit=ten", "cursor=abc", "cursor=0", "cursor=-5"} {
		status, _, body := e.call(http.MethodGet, api.PathRuns+"?"+q, tokAlice, "")
		wantError(t, status, body, http.StatusBadRequest, contracts.CodeBadRequest)
	}
	for _, q := range []string{"limit=1", "limit=100", "cursor=99999"} {
		if status, _, body := e.call(http.MethodGet, api.PathRuns+"?"+q, tokAlice, ""); status != http.StatusOK {
			t.Fatalf("%s: %d %s", q, status, body)
		}
	}
}

// The listing and the record show the conversation a run belongs to: its
// root run and its place in it, and whether its thread was declined.
func TestListRunsShowsTheThread(t *testing.T) {
	e := newEnv(t)
	e.finishedRun("t1", alice)
	e.point(alice.ID, "t1", contracts.StatusQueued)
	for _, r := range []struct {
		id     string
		thread *contracts.Thread
	}{
		{"t2", &contracts.Thread{RootRunID: "t1", Position: 2, Chain: []contracts.ThreadStep{{RunID: "t1", Objective: "why are orders slow"}}}},
		{"t3", &contracts.Thread{RootRunID: "t3", Position: 1, Declined: contracts.ThreadUnavailable, DeclinedReason: "not yours"}},
	} {
		w := e.led.Writer(r.id, 0, nil)
		e.append(w, contracts.KindRunStarted, contracts.RunStarted{Mode: contracts.ModeAgent, WorkflowType: contracts.WorkflowInvestigation,
			Objective: "and which of those", ConnectionID: "shop", Actor: alice, PreviousRunID: "t1", Thread: r.thread})
		e.point(alice.ID, r.id, contracts.StatusQueued)
	}
	list, err := e.client(tokAlice).Runs(e.ctx, 0, "")
	if err != nil {
		t.Fatal(err)
	}
	byID := map[string]client.RunSummary{}
	for _, r := range list.Runs {
		byID[r.RunID] = r
	}
	if r := byID["t2"]; r.RootRunID != "t1" || r.Position != 2 || r.ThreadDeclined != "" {
		t.Errorf("continuing run %+v", r)
	}
	if r := byID["t3"]; r.RootRunID != "t3" || r.Position != 1 || r.ThreadDeclined != contracts.ThreadUnavailable {
		t.Errorf("declined run %+v", r)
	}
	if r := byID["t1"]; r.RootRunID != "" || r.Position != 0 {
		t.Errorf("a run recorded before conversations %+v", r)
	}
	rec, err := e.client(tokAlice).Run(e.ctx, "t2")
	if err != nil {
		t.Fatal(err)
	}
	if rec.Thread == nil || rec.Thread.RootRunID != "t1" || rec.Thread.Position != 2 || len(rec.Thread.Chain) != 1 {
		t.Fatalf("record thread %+v", rec.Thread)
	}
}
