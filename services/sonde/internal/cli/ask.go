package cli

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"strings"
	"time"

	"github.com/spf13/cobra"

	"github.com/sondehq/sonde/contracts"
	"github.com/sondehq/sonde/pkg/ledger"
	"github.com/sondehq/sonde/pkg/policy"
	"github.com/sondehq/sonde/services/gateway/api"
	"github.com/sondehq/sonde/services/gateway/client"
	"github.com/sondehq/sonde/services/sonde/internal/render"
)

type askOptions struct {
	server     string
	token      string
	connection string
	workflow   string
	mode       string
	continues  string // --continue: the run whose conversation this one continues
	autoExec   bool   // --auto-execute: hand the presented answer to the editor
	jsonOut    bool
	wait       time.Duration
	// errOut receives the live progress; nil means the output itself.
	errOut io.Writer
}

func newAskCmd() *cobra.Command {
	var o askOptions
	cmd := &cobra.Command{
		Use:   `ask --connection ID "objective"`,
		Short: "Start a run, show it live, and print its report",
		Long: `ask starts a run over the gateway's HTTP API, shows each step as it happens
with the budget spent, and prints the report with its citations.

--workflow chooses what the run is for: ` + policy.List(func(w contracts.WorkflowType) string {
			if w == contracts.WorkflowInvestigation {
				return string(w) + " (the default)"
			}
			return string(w)
		}, " or ") + `. ask
then prints what the workflow recorded: each plan read and plan comparison
(estimates, never executed), each recommendation (recorded, never executed),
each table profile, each operational reading (a moment, not a history) and
the presented answer, a chart as a small text table of its series.
--auto-execute asks that a data-analysis answer be handed to the editor.

With --mode planning the model runs nothing: it drafts one statement from the
schema snapshot, and ask prints it with the guard's classification and the
check of the names it reads against the snapshot; run it yourself with
sonde query.

The steps are shown live on the error stream (with the time the model has
been silent, on a terminal); the report, or the run record with --json, is
written to the output, so that ask pipes.

With no model configured on the server, ask says how to configure one: the
server's LLM_PROVIDER (demo for the labelled demonstration replay), LLM_MODEL,
LLM_API_KEY and LLM_API_URL. A wrong --connection lists the valid ones.
` + exitTable + `
Here: 2 when the server refused the run (an unknown connection, a model the
capability probe refused, no model configured), 3 when the run ended without
answering; the run goes on after 4.`,
		Args: usageArgs(cobra.MinimumNArgs(1)),
		RunE: func(cmd *cobra.Command, args []string) error {
			o.errOut = cmd.ErrOrStderr()
			return ask(cmd.Context(), cmd.OutOrStdout(), o, strings.Join(args, " "))
		},
	}
	f := cmd.Flags()
	f.StringVar(&o.server, "server", "http://127.0.0.1:8080", "gateway base URL")
	f.StringVar(&o.token, "token", "", "bearer token (needed when the gateway has SONDE_API_TOKENS)")
	f.StringVar(&o.connection, "connection", "demo", "connection id to investigate")
	f.StringVar(&o.workflow, "workflow", string(contracts.WorkflowInvestigation), "workflow type: "+workflowList())
	f.StringVar(&o.mode, "mode", string(contracts.ModeAgent), `"agent" (the model reads the database) or "planning" (it drafts a statement you run)`)
	f.StringVar(&o.continues, "continue", "", "continue the conversation of this earlier run of yours (its objectives and newest report reach the model)")
	f.BoolVar(&o.autoExec, "auto-execute", false, "data-analysis: hand the presented answer to the editor when the gate passes (sent as autoExecute)")
	f.BoolVar(&o.jsonOut, "json", false, "print the final run record as JSON instead of the report")
	f.DurationVar(&o.wait, "wait", 0, "wait up to this long for the gateway to come up (e.g. 30s)")
	bindEnv(cmd)
	return cmd
}

// workflowList names the workflow types a run may be started with, from
// the workflow table.
func workflowList() string { return policy.List(nil, ", ") }

func ask(ctx context.Context, out io.Writer, o askOptions, objective string) error {
	if o.workflow == "" {
		o.workflow = string(contracts.WorkflowInvestigation)
	}
	if !contracts.WorkflowType(o.workflow).Valid() {
		return usage("unknown workflow \"%s\": use --workflow with one of %s", oneLine(o.workflow, 60), workflowList())
	}
	c := client.New(o.server, o.token)
	cfg, err := waitForGateway(ctx, c, o.wait)
	if err != nil {
		return remoteError(o.server, err)
	}
	if !cfg.Enabled {
		return &exitError{code: ExitRefused, err: notEnabled(o.server, cfg)}
	}
	started, err := c.StartRun(ctx, api.StartRunRequest{
		Mode: contracts.Mode(o.mode), WorkflowType: contracts.WorkflowType(o.workflow),
		Objective: objective, ConnectionID: o.connection, PreviousRunID: o.continues,
		AutoExecute: o.autoExec,
	})
	if err != nil {
		return connectionError(ctx, c, o.server, o.connection, err)
	}
	p := &progress{out: progressOut(out, o.errOut), quiet: o.jsonOut && o.errOut == nil}
	p.printf("Run %s · %s %s on connection %q\n", started.RunID, started.Mode, started.WorkflowType, o.connection)
	if cfg.Demo {
		p.printf("DEMONSTRATION: the model is a recorded replay (LLM_PROVIDER=demo); the database, guard and ledger are real.\n")
	}
	return follow(ctx, out, c, o.server, started.RunID, p, o.jsonOut)
}

// follow renders a run's ledger through p as it is appended, until the run
// ends, then prints its record: as JSON with jsonOut, else the report. A
// stream cut before the run ended is resumed after the last entry seen.
// The error carries exit status 3 when the run did not answer.
func follow(ctx context.Context, out io.Writer, c *client.Client, server, runID string, p *progress, jsonOut bool) error {
	clock := newWaitClock(p.out)
	p.clock = clock
	err := streamResuming(ctx, c, runID, func(e contracts.Entry) error {
		p.entry(e)
		return nil
	})
	clock.close()
	if err != nil {
		if ctx.Err() != nil {
			fmt.Fprintf(p.out, "interrupted; the run goes on. Stop it with: sonde runs cancel --server %s %s\n", server, runID)
		}
		return remoteError(server, fmt.Errorf("following run %s: %w", runID, err))
	}
	rec, err := c.Run(ctx, runID)
	if err != nil {
		return remoteError(server, err)
	}
	if jsonOut {
		if err := printJSON(out, rec); err != nil {
			return err
		}
	} else {
		printReport(out, rec, runArtifacts(ctx, c, runID), server)
	}
	// Anything but an answered verdict exits 3: a run that stopped on a
	// question has not answered either (printReport says how to answer it).
	if rec.GoalVerdict == nil || rec.GoalVerdict.Outcome != contracts.VerdictAnswered {
		return &exitError{code: ExitUnanswered}
	}
	return nil
}

// Resuming a dropped stream: this many attempts in a row that bring no new
// entry, waiting resumeWait more before each.
const (
	resumeAttempts = 4
	resumeWait     = 250 * time.Millisecond
)

// streamResuming is client.Stream, resumed after the last entry seen
// (the stream's ?from=, as Last-Event-ID does for SSE) when the connection
// drops before the server ends the stream. An answer of the gateway (an
// *APIError) and the end of ctx are not retried.
func streamResuming(ctx context.Context, c *client.Client, runID string, fn func(contracts.Entry) error) error {
	var last uint64
	failures := 0
	for {
		seen := last
		err := c.Stream(ctx, runID, last, func(e contracts.Entry) error {
			if e.Seq > 0 && e.Seq <= last {
				return nil // already shown before the drop
			}
			if e.Seq > 0 {
				last = e.Seq
			}
			return fn(e)
		})
		var ae *client.APIError
		if err == nil || ctx.Err() != nil || errors.As(err, &ae) {
			return err
		}
		if last > seen {
			failures = 0
		}
		failures++
		if failures >= resumeAttempts {
			return err
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(time.Duration(failures) * resumeWait):
		}
	}
}

// progressOut is where live progress goes: errOut, or out when none is set.
func progressOut(out, errOut io.Writer) io.Writer {
	if errOut != nil {
		return errOut
	}
	return out
}

// notEnabled says why a server runs no agents and what to do about it.
func notEnabled(server string, cfg api.AgentConfig) error {
	switch cfg.Reason {
	case contracts.CodeNoModelConfigured:
		return fmt.Errorf("%s: the server at %s has no model configured. Restart it with one: "+
			"LLM_PROVIDER=demo sonde serve … for the labelled demonstration replay (the demo connection), "+
			"or LLM_PROVIDER=openai|anthropic|gemini|ollama with LLM_MODEL, LLM_API_KEY (and LLM_API_URL for a server of your own); "+
			"sonde probe checks a model first (docs/configuration.md)", cfg.Reason, server)
	case contracts.CodeOperatorDisabled:
		return fmt.Errorf("%s: the operator switched agent runs off on %s (SONDE_AGENT_ENABLED); sonde query and sonde explain still read", cfg.Reason, server)
	case contracts.CodeLedgerUnavailable:
		return fmt.Errorf("%s: the server at %s cannot reach its ledger (JetStream); retry when it is ready (GET /readyz)", cfg.Reason, server)
	}
	return fmt.Errorf("agent runs are not available on %s (%s)", server, cfg.Reason)
}

// printJSON writes v as indented JSON, never rewritten for a plain stream.
func printJSON(out io.Writer, v any) error {
	enc := json.NewEncoder(raw(out))
	enc.SetIndent("", "  ")
	return enc.Encode(v)
}

// waitForGateway asks the gateway for its agent configuration, retrying
// until wait has passed while it cannot be reached.
func waitForGateway(ctx context.Context, c *client.Client, wait time.Duration) (api.AgentConfig, error) {
	deadline := time.Now().Add(wait)
	for {
		cfg, err := c.Config(ctx)
		var apiErr *client.APIError
		if err == nil || errors.As(err, &apiErr) || time.Now().After(deadline) {
			return cfg, err
		}
		select {
		case <-ctx.Done():
			return cfg, ctx.Err()
		case <-time.After(200 * time.Millisecond):
		}
	}
}

// progress renders ledger entries as they arrive.
type progress struct {
	out     io.Writer
	quiet   bool
	entries []contracts.Entry
	clock   *waitClock // erased before each line; nil when none runs
}

func (p *progress) printf(format string, args ...any) {
	if p.quiet {
		return
	}
	if p.clock != nil {
		defer p.clock.clear()()
	}
	fmt.Fprintf(p.out, format, args...)
}

func (p *progress) entry(e contracts.Entry) {
	p.entries = append(p.entries, e)
	v, err := e.Decode()
	if err != nil {
		return
	}
	switch v := v.(type) {
	case *contracts.RunStarted:
		switch th := v.Thread; {
		case th == nil:
		case th.Declined != "":
			p.printf("  · conversation not continued (%s): %s\n", th.Declined, th.DeclinedReason)
		case th.Position > 1:
			p.printf("  · continues conversation %s, step %d\n", th.RootRunID, th.Position)
		}
	case *contracts.DriverResolved:
		demo := ""
		if v.Demo {
			demo = " [demonstration replay]"
		}
		p.printf("  drive %d · model %s/%s%s\n", v.Drive, v.Provider, v.Model, demo)
	case *contracts.ContextCaptured:
		how := fmt.Sprintf("%d statements", v.Statements)
		if v.InventoryRunID != "" {
			how = "reused from run " + v.InventoryRunID
		}
		p.printf("  · schema snapshot captured (%s): %d of %d relations named, %s\n", v.Fingerprint, v.Packed, max(v.Total, v.Tables), how)
	case *contracts.ContextUnavailable:
		p.printf("  · no schema snapshot (%s) %s\n", v.Code, v.Detail)
	case *contracts.PlanStatementDrafted:
		p.printf("  ✓ statement drafted (%s)\n", v.Dialect)
	case *contracts.ToolInvoked:
		p.printf("  → turn %d %s %s\n", v.Turn, v.Tool, oneLine(string(v.Arguments), 100))
	case *contracts.ToolCompleted:
		switch {
		case v.Outcome == contracts.OutcomeOK && v.Artifact != nil:
			p.printf("    ✓ %s: %d rows, %d columns, %d ms\n", v.Artifact.CorrelationID, v.Artifact.Rows, len(v.Artifact.Columns), v.DurationMs)
			if v.Plan != nil {
				p.printf("      plan: %s\n", render.PlanLine(v.Plan))
			}
		case v.Outcome == contracts.OutcomeError && v.DBError != nil:
			p.printf("    ✗ database error (%s)\n", v.DBError.Class)
		default:
			p.printf("    ? %s\n", v.Outcome)
		}
		p.budget()
	case *contracts.ToolRefused:
		p.printf("  ✗ turn %d %s refused (%s): %s\n", v.Turn, v.Tool, v.Code, oneLine(v.Reason, 120))
	case *contracts.ClosingStatement:
		p.printf("  … turn %d: %s\n", v.Turn, oneLine(v.Text, 120))
	case *contracts.PlanComparison:
		p.printf("  ✓ plans compared: %s → %s (estimates, not executed)\n", render.Clip(v.Before, 80), render.Clip(v.After, 80))
	case *contracts.Recommendation:
		p.printf("  ✓ %s recommendation recorded, never executed\n", render.Clip(v.Kind, 20))
	case *contracts.TableProfiled:
		line := fmt.Sprintf("  ✓ table profiled: %s (%s)", render.Clip(v.Table, 80), render.Clip(v.Depth, 20))
		if v.Profile != nil {
			line += fmt.Sprintf(": %d rows, %d columns, %d findings", v.Profile.Rows, len(v.Profile.Columns), len(v.Profile.Findings))
		}
		p.printf("%s\n", line)
	case *contracts.AnswerComposed:
		how := "table"
		if c := v.Presentation.Chart; v.Presentation.Kind == contracts.PresentChart && c != nil {
			how = render.Clip(c.Type, 20) + " chart"
		}
		line := fmt.Sprintf("  ✓ answer presented: %s of %s", how, render.Clip(v.CorrelationID, 80))
		if v.Handover != "" {
			line += ", handover " + render.Clip(string(v.Handover), 20)
		}
		p.printf("%s\n", line)
	case *contracts.ReportComposed:
		p.printf("  ✓ report composed: %d claims\n", len(v.Claims))
	case *contracts.RunFinished:
		p.budget()
		p.printf("  ■ %s (%s)\n", v.Status, v.StopReason)
	}
}

func (p *progress) budget() {
	p.printf("    budget: %s\n", budgetLine(ledger.Fold("", p.entries)))
}

// budgetLine is what a run has spent of its budget.
func budgetLine(r contracts.Record) string {
	b := r.Budget
	return fmt.Sprintf("turns %d/%d · statements %d/%d · db time %s/%s",
		r.Spent.Turns, b.MaxTurns, r.Spent.Statements, b.MaxStatements,
		time.Duration(r.Spent.DBTimeMs)*time.Millisecond, time.Duration(b.DBTimeMs)*time.Millisecond)
}

// printReport prints what a finished run answered: a planning run's plan,
// or an agent run's workflow sections (through fetch, which may be nil) and
// report, each claim with the verifier's check of its figures; then the
// question the run stopped on, with the command that answers it through
// server; then its status and verdict, each unmet code in words.
func printReport(out io.Writer, r contracts.Record, fetch render.Source, server string) {
	fmt.Fprintln(out)
	if r.Mode != contracts.ModePlanning {
		render.Workflow(out, r, fetch)
	}
	switch {
	case r.Mode == contracts.ModePlanning:
		printPlan(out, r)
	case len(r.Report) == 0:
		fmt.Fprintln(out, "No report was composed.")
	default:
		fmt.Fprintln(out, "Report")
		arts := map[string]*contracts.ArtifactSummary{}
		for _, s := range r.Steps {
			if s.Artifact != nil {
				arts[s.Artifact.CorrelationID] = s.Artifact
			}
		}
		checks := claimChecks(r.GoalVerdict)
		for i, c := range r.Report {
			fmt.Fprintf(out, "%2d. %s\n", i+1, render.CleanLines(c.Text))
			for _, ref := range c.Evidence {
				switch ref.Source {
				case contracts.EvidenceArtifact:
					detail := ""
					if a := arts[ref.CorrelationID]; a != nil {
						detail = fmt.Sprintf(" (%d rows)", a.Rows)
					}
					fmt.Fprintf(out, "    cites artifact %s%s\n", ref.CorrelationID, detail)
				case contracts.EvidenceContextSnapshot:
					fmt.Fprintf(out, "    cites schema snapshot %s\n", ref.Fingerprint)
				}
			}
			if ch, ok := checks[i+1]; ok {
				fmt.Fprintf(out, "    %s\n", figuresLine(ch))
			}
		}
	}
	fmt.Fprintln(out)
	printQuestion(out, r, server)
	fmt.Fprintln(out, statusLine(r))
	printVerdict(out, r.GoalVerdict)
	if r.Detail != "" {
		fmt.Fprintln(out, r.Detail)
	}
}

// printPlan prints a planning run's answer: the drafted statement with the
// guard's classification and the identifier check, or the model's prose.
func printPlan(out io.Writer, r contracts.Record) {
	p := r.Plan
	if p == nil {
		if r.Closing == "" {
			fmt.Fprintln(out, "No plan was written.")
			return
		}
		fmt.Fprintln(out, "Plan")
		fmt.Fprintln(out, render.CleanLines(strings.TrimSpace(r.Closing)))
		return
	}
	fmt.Fprintf(out, "Drafted statement (%s, not run)\n\n%s\n\n", p.Dialect, render.CleanLines(p.SQL))
	if p.ReadOnly {
		fmt.Fprintln(out, "Guard: read-only; Sonde would run it as written.")
	} else if p.Refusal != nil {
		fmt.Fprintf(out, "Guard: refused (%s): %s\n  fix: %s\n", p.Refusal.Code, p.Refusal.Message, p.Refusal.Fix)
	} else {
		fmt.Fprintln(out, "Guard: not classified (the guard could not be asked).")
	}
	id := p.Identifiers
	switch {
	case id.Status == contracts.IdentifiersNoInventory:
		fmt.Fprintln(out, "Names: not checked, the run captured no schema snapshot.")
	case id.Status != contracts.IdentifiersChecked:
		fmt.Fprintln(out, "Names: not checked, the guard could not read the statement's names.")
	case len(id.UnknownRelations)+len(id.UnknownColumns) == 0:
		what := "table"
		if id.ColumnsChecked {
			what = "table and column"
		}
		fmt.Fprintf(out, "Names: every %s it names that could be checked is in the snapshot.\n", what)
	default:
		for _, n := range id.UnknownRelations {
			fmt.Fprintf(out, "Names: table %s is not in the snapshot\n", n)
		}
		for _, n := range id.UnknownColumns {
			fmt.Fprintf(out, "Names: column %s is not in the snapshot\n", n)
		}
	}
	if p.ReadOnly {
		fmt.Fprintf(out, "Run it with: sonde query --connections FILE --connection %s %s\n", r.ConnectionID,
			"'"+strings.ReplaceAll(oneLine(p.SQL, 1<<20), "'", `'\''`)+"'")
	}
}

// oneLine is s on one line, its control characters escaped (clean), cut
// after n runes with a marker.
func oneLine(s string, n int) string {
	s = render.Clean(strings.Join(strings.Fields(s), " "))
	if r := []rune(s); len(r) > n {
		return string(r[:n]) + "…"
	}
	return s
}
