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
)

type runsOptions struct {
	server  string
	token   string
	jsonOut bool
	limit   int
	cursor  string
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
		Short: "List, show and follow your runs on a gateway",
		Long: `runs reads your runs over the gateway's HTTP API: only the runs your token
opened, the most recently started first, running ones included.`,
	}
	cmd.AddCommand(newRunsListCmd(), newRunsShowCmd(), newRunsTailCmd())
	return cmd
}

func newRunsListCmd() *cobra.Command {
	var o runsOptions
	cmd := &cobra.Command{
		Use:   "list",
		Short: "List your runs, the most recently started first",
		Args:  cobra.NoArgs,
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
		Args:  cobra.ExactArgs(1),
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
appended, the way ask does, and prints the report when the run ends. A
finished run is shown whole at once.

Exit status: 0 when the run answered, 2 when it ended without answering,
1 when the run could not be followed, 3 when the gateway could not be reached
or dropped the connection (the run goes on).`,
		Args: cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			return runsTail(cmd.Context(), cmd.OutOrStdout(), o, args[0])
		},
	}
	o.gatewayFlags(cmd.Flags())
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
	printRecord(out, rec, runArtifacts(ctx, o.client(), runID))
	return nil
}

func runsTail(ctx context.Context, out io.Writer, o runsOptions, runID string) error {
	c := o.client()
	rec, err := c.Run(ctx, runID)
	if err != nil {
		return remoteError(o.server, err)
	}
	p := &progress{out: out}
	p.printf("Run %s · %s %s on connection %q · %s\n", rec.RunID, rec.Mode, rec.WorkflowType, rec.ConnectionID, rec.Status)
	p.printf("Objective: %s\n", oneLine(rec.Objective, 200))
	return follow(ctx, out, c, o.server, runID, p, false)
}

// printRecord prints a run's record: what it was, what it spent, each step
// with its status and result, then the report with its citations, the status
// and the verdict.
func printRecord(out io.Writer, r contracts.Record, fetch artifactSource) {
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
			fmt.Fprintf(out, "    refused (%s): %s\n", s.Refusal.Code, oneLine(s.Refusal.Reason, 120))
		}
		if s.DBError != nil {
			fmt.Fprintf(out, "    database error (%s): %s\n", s.DBError.Class, oneLine(s.DBError.Message, 120))
		}
	}
	printReport(out, r, fetch)
}
