package cli

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"text/tabwriter"
	"time"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"

	"github.com/sondehq/sonde/contracts"
	"github.com/sondehq/sonde/services/gateway/api"
	"github.com/sondehq/sonde/services/gateway/client"
	"github.com/sondehq/sonde/services/sonde/internal/render"
)

type runsOptions struct {
	server  string
	token   string
	jsonOut bool
	limit   int
	cursor  string
	// errOut receives live progress and notes; nil means the output itself.
	errOut io.Writer
}

func (o *runsOptions) client() *client.Client { return client.New(o.server, o.token) }

// gatewayFlags are the flags every command that talks to a gateway takes.
func (o *runsOptions) gatewayFlags(f *pflag.FlagSet) {
	f.StringVar(&o.server, "server", "http://127.0.0.1:8080", "gateway base URL")
	f.StringVar(&o.token, "token", "", "bearer token (needed when the gateway has SONDE_API_TOKENS)")
}

func newRunsCmd() *cobra.Command {
	cmd := &cobra.Command{
		Use:   "runs",
		Short: "List, show, follow and cancel your runs, and fetch their results",
		Long: `runs reads your runs over the gateway's HTTP API: only the runs your token
opened, the most recently started first, running ones included.` + "\n" + exitTable,
		Args: usageArgs(cobra.NoArgs),
		RunE: func(cmd *cobra.Command, _ []string) error { return cmd.Help() },
	}
	cmd.AddCommand(newRunsListCmd(), newRunsShowCmd(), newRunsTailCmd(), newRunsCancelCmd(), newRunsArtifactCmd())
	return cmd
}

func newRunsListCmd() *cobra.Command {
	var o runsOptions
	cmd := &cobra.Command{
		Use:   "list",
		Short: "List your runs, the most recently started first",
		Args:  usageArgs(cobra.NoArgs),
		RunE: func(cmd *cobra.Command, _ []string) error {
			return runsList(cmd.Context(), cmd.OutOrStdout(), o)
		},
	}
	f := cmd.Flags()
	o.gatewayFlags(f)
	f.IntVar(&o.limit, "limit", api.DefaultRunsLimit, fmt.Sprintf("runs per page (1 to %d)", api.MaxRunsLimit))
	f.StringVar(&o.cursor, "cursor", "", "the page after this cursor (printed under the previous page)")
	f.BoolVar(&o.jsonOut, "json", false, `print the page as JSON ({"runs":[…],"next":…})`)
	bindEnv(cmd)
	return cmd
}

func newRunsShowCmd() *cobra.Command {
	var o runsOptions
	cmd := &cobra.Command{
		Use:   "show RUN_ID",
		Short: "Show one run: status, verdict, steps and report",
		Args:  usageArgs(cobra.ExactArgs(1)),
		RunE: func(cmd *cobra.Command, args []string) error {
			return runsShow(cmd.Context(), cmd.OutOrStdout(), o, args[0])
		},
	}
	f := cmd.Flags()
	o.gatewayFlags(f)
	f.BoolVar(&o.jsonOut, "json", false, "print the run record as JSON")
	bindEnv(cmd)
	return cmd
}

func newRunsTailCmd() *cobra.Command {
	var o runsOptions
	cmd := &cobra.Command{
		Use:   "tail RUN_ID",
		Short: "Follow a run live, from its first entry, and print its report",
		Long: `tail shows a run's ledger from its first entry, then each entry as it is
appended, the way ask does (on the error stream), and prints the report to
the output when the run ends. A finished run is shown whole at once. When
the connection drops before the run ends, tail resumes after the last entry
it showed. With --json it writes each ledger entry to the output as one JSON
line as it arrives (NDJSON, the stream's own form), and nothing else.
` + exitTable + `
Here: 3 when the run ended without answering; 4 when the gateway stayed
unreachable (the run goes on).`,
		Args: usageArgs(cobra.ExactArgs(1)),
		RunE: func(cmd *cobra.Command, args []string) error {
			o.errOut = cmd.ErrOrStderr()
			return runsTail(cmd.Context(), cmd.OutOrStdout(), o, args[0])
		},
	}
	o.gatewayFlags(cmd.Flags())
	cmd.Flags().BoolVar(&o.jsonOut, "json", false, "write each ledger entry as one JSON line (NDJSON) as it arrives")
	bindEnv(cmd)
	return cmd
}

func runsList(ctx context.Context, out io.Writer, o runsOptions) error {
	list, err := o.client().Runs(ctx, o.limit, o.cursor)
	if err != nil {
		return remoteError(o.server, err)
	}
	if o.jsonOut {
		return printJSON(out, list)
	}
	if len(list.Runs) == 0 {
		fmt.Fprintln(out, "No runs.")
		return nil
	}
	tw := tabwriter.NewWriter(out, 0, 0, 2, ' ', 0)
	fmt.Fprintln(tw, "RUN\tSTATUS\tVERDICT\tSTARTED\tWORKFLOW\tCONNECTION\tOBJECTIVE")
	for _, r := range list.Runs {
		verdict := "-"
		if r.GoalVerdict != nil {
			verdict = string(r.GoalVerdict.Outcome)
		}
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\t%s\t%s\n", r.RunID, r.Status, verdict,
			r.StartedAt.Local().Format(time.DateTime), r.WorkflowType, r.ConnectionID, oneLine(r.Objective, 60))
	}
	if err := tw.Flush(); err != nil {
		return err
	}
	if list.Next != "" {
		fmt.Fprintf(out, "\nMore: sonde runs list --limit %d --cursor %s\n", o.limit, list.Next)
	}
	return nil
}

func runsShow(ctx context.Context, out io.Writer, o runsOptions, runID string) error {
	rec, err := o.client().Run(ctx, runID)
	if err != nil {
		return remoteError(o.server, err)
	}
	if o.jsonOut {
		return printJSON(out, rec)
	}
	printRecord(out, rec, runArtifacts(ctx, o.client(), runID), o.server)
	return nil
}

func runsTail(ctx context.Context, out io.Writer, o runsOptions, runID string) error {
	c := o.client()
	rec, err := c.Run(ctx, runID)
	if err != nil {
		return remoteError(o.server, err)
	}
	if o.jsonOut {
		return tailJSON(ctx, out, c, o.server, runID)
	}
	p := &progress{out: progressOut(out, o.errOut)}
	p.printf("Run %s · %s %s on connection %q · %s\n", rec.RunID, rec.Mode, rec.WorkflowType, rec.ConnectionID, rec.Status)
	p.printf("Objective: %s\n", oneLine(rec.Objective, 200))
	return follow(ctx, out, c, o.server, runID, p, false)
}

// tailJSON writes each entry of a run's ledger as one JSON line, resuming
// after a drop, then answers the run's exit status.
func tailJSON(ctx context.Context, out io.Writer, c *client.Client, server, runID string) error {
	enc := json.NewEncoder(raw(out))
	err := streamResuming(ctx, c, runID, func(e contracts.Entry) error { return enc.Encode(e) })
	if err != nil {
		return remoteError(server, fmt.Errorf("following run %s: %w", runID, err))
	}
	rec, err := c.Run(ctx, runID)
	if err != nil {
		return remoteError(server, err)
	}
	if rec.GoalVerdict == nil || rec.GoalVerdict.Outcome != contracts.VerdictAnswered {
		return &exitError{code: ExitUnanswered}
	}
	return nil
}

func newRunsCancelCmd() *cobra.Command {
	var o runsOptions
	cmd := &cobra.Command{
		Use:   "cancel RUN_ID",
		Short: "Ask a run of yours to stop",
		Long: `cancel asks a running run to stop; it stops at its next checkpoint, and its
ledger records the cancellation. It prints the run's status once the request
is recorded.
` + exitTable + `
Here: 2 when the run is not yours or does not exist, or has already finished
(the message says which).`,
		Args: usageArgs(cobra.ExactArgs(1)),
		RunE: func(cmd *cobra.Command, args []string) error {
			return runsCancel(cmd.Context(), cmd.OutOrStdout(), o, args[0])
		},
	}
	f := cmd.Flags()
	o.gatewayFlags(f)
	f.BoolVar(&o.jsonOut, "json", false, `print {"runId","status"} as JSON`)
	bindEnv(cmd)
	return cmd
}

func runsCancel(ctx context.Context, out io.Writer, o runsOptions, runID string) error {
	status, err := o.client().Cancel(ctx, runID)
	if err != nil {
		return remoteError(o.server, err)
	}
	if o.jsonOut {
		return printJSON(out, struct {
			RunID  string              `json:"runId"`
			Status contracts.RunStatus `json:"status"`
		}{runID, status})
	}
	fmt.Fprintf(out, "Run %s: cancel recorded (%s); it stops at its next checkpoint.\n", runID, status)
	return nil
}

func newRunsArtifactCmd() *cobra.Command {
	var o runsOptions
	cmd := &cobra.Command{
		Use:   "artifact RUN_ID CORRELATION_ID",
		Short: "Print one stored result of a run (a cited artifact)",
		Long: `artifact prints one result a run stored, as a report cites it ("cites
artifact c_…"): its statement, then its rows as sonde query prints them. With
--json, the whole artifact as the API returns it.
` + exitTable + `
Here: 2 when the run or the artifact does not exist or is not yours (results
expire with the artifact store's TTL).`,
		Args: usageArgs(cobra.ExactArgs(2)),
		RunE: func(cmd *cobra.Command, args []string) error {
			return runsArtifact(cmd.Context(), cmd.OutOrStdout(), o, args[0], args[1])
		},
	}
	f := cmd.Flags()
	o.gatewayFlags(f)
	f.BoolVar(&o.jsonOut, "json", false, "print the artifact as JSON")
	bindEnv(cmd)
	return cmd
}

func runsArtifact(ctx context.Context, out io.Writer, o runsOptions, runID, correlationID string) error {
	art, err := o.client().Artifact(ctx, runID, correlationID)
	if err != nil {
		return remoteError(o.server, err)
	}
	if o.jsonOut {
		return printJSON(out, art)
	}
	fmt.Fprintf(out, "Artifact %s of run %s on connection %s (%s):\n", art.CorrelationID, runID, art.ConnectionID, art.Profile)
	if art.SQL != "" {
		fmt.Fprintf(out, "  %s\n", oneLine(art.SQL, 2000))
	}
	fmt.Fprintln(out)
	rows := art.Data
	if rows == nil {
		rows = [][]any{}
	}
	printTable(out, api.QueryResponse{Columns: art.Columns, Rows: rows, RowCount: len(rows), Truncated: art.Truncated, TruncatedBy: art.TruncatedBy})
	return nil
}

// printRecord prints a run's record: what it was, what it spent, each step
// with its status and result, then the report with its citations, the status
// and the verdict (printReport: server is where a question is answered).
func printRecord(out io.Writer, r contracts.Record, fetch render.Source, server string) {
	fmt.Fprintf(out, "Run %s · %s %s on connection %q\n", r.RunID, r.Mode, r.WorkflowType, r.ConnectionID)
	fmt.Fprintf(out, "Objective: %s\n", r.Objective)
	when := "Started " + r.StartedAt.Local().Format(time.DateTime)
	if r.FinishedAt != nil {
		when += fmt.Sprintf(", finished after %s", r.FinishedAt.Sub(r.StartedAt).Round(time.Millisecond))
	} else {
		when += ", " + string(r.Status)
	}
	if r.Model != "" {
		when += fmt.Sprintf(" · model %s/%s", r.Provider, r.Model)
		if r.Demo {
			when += " [demonstration replay]"
		}
	}
	fmt.Fprintln(out, when)
	fmt.Fprintf(out, "Budget: %s\n", budgetLine(r))

	fmt.Fprintln(out)
	if len(r.Steps) == 0 {
		fmt.Fprintln(out, "No steps.")
	} else {
		fmt.Fprintln(out, "Steps")
	}
	for i, s := range r.Steps {
		line := fmt.Sprintf("%2d. turn %d %s: %s", i+1, s.Turn, s.Tool, s.Status)
		switch {
		case s.Artifact != nil:
			line += fmt.Sprintf(", artifact %s: %d rows, %d columns", s.Artifact.CorrelationID, s.Artifact.Rows, len(s.Artifact.Columns))
		case s.CorrelationID != "":
			line += ", artifact " + s.CorrelationID
		}
		if s.DurationMs > 0 {
			line += fmt.Sprintf(", %d ms", s.DurationMs)
		}
		fmt.Fprintln(out, line)
		if s.Tool != "compose_report" && len(s.Arguments) > 0 {
			var args struct {
				SQL string `json:"sql"`
			}
			if json.Unmarshal(s.Arguments, &args) == nil && args.SQL != "" {
				fmt.Fprintf(out, "    %s\n", oneLine(args.SQL, 400))
			} else {
				fmt.Fprintf(out, "    %s\n", oneLine(string(s.Arguments), 120))
			}
		}
		if s.Refusal != nil {
			fmt.Fprintf(out, "    refused (%s): %s\n", s.Refusal.Code, oneLine(s.Refusal.Message, 120))
		}
		if s.DBError != nil {
			fmt.Fprintf(out, "    database error (%s): %s\n", s.DBError.Class, oneLine(s.DBError.Message, 120))
		}
	}
	printReport(out, r, fetch, server)
}
