package cli

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"strings"
	"text/tabwriter"

	"github.com/spf13/cobra"

	"github.com/sondehq/sonde/contracts"
	"github.com/sondehq/sonde/pkg/grounding"
	"github.com/sondehq/sonde/services/gateway/api"
	"github.com/sondehq/sonde/services/gateway/client"
	"github.com/sondehq/sonde/services/sonde/internal/render"
)

type tablesOptions struct {
	runsOptions
	after string
	all   bool
	file  string
}

func newTablesCmd() *cobra.Command {
	var o tablesOptions
	cmd := &cobra.Command{
		Use:   "tables CONN [PATTERN]",
		Short: "List a connection's readable tables and views on a gateway",
		Long: fmt.Sprintf(`tables lists the relations of connection CONN that its readable patterns
let Sonde read: schema, name, kind and the engine's row estimate, at most %d
a page. PATTERN narrows them by name ('*' any run of characters, '?' one;
case-insensitive; schema.name when it holds a dot). Relations outside the
readable patterns are counted, never named. --after continues a listing
(the command prints the next one); --all follows every page.

sonde describe CONN TABLE describes one in full.
`, api.TablesPageSize) + exitTable + `
Here: 2 for an unknown connection (the valid ones are listed).`,
		Args: usageArgs(cobra.RangeArgs(1, 2)),
		RunE: func(cmd *cobra.Command, args []string) error {
			pattern := ""
			if len(args) == 2 {
				pattern = args[1]
			}
			return tables(cmd.Context(), cmd.OutOrStdout(), o, args[0], pattern)
		},
	}
	f := cmd.Flags()
	o.gatewayFlags(f)
	f.StringVar(&o.after, "after", "", "continue the listing after this schema.name (printed under a page)")
	f.BoolVar(&o.all, "all", false, "follow every page")
	f.BoolVar(&o.jsonOut, "json", false, `print the page as JSON ({"connectionId","tables":[…],"total","unreadable","next"}); with --all, one page per line`)
	bindEnv(cmd)
	return cmd
}

func tables(ctx context.Context, out io.Writer, o tablesOptions, conn, pattern string) error {
	c := o.client()
	after := o.after
	for {
		page, err := c.Tables(ctx, conn, pattern, after)
		if err != nil {
			return connectionError(ctx, c, o.server, conn, err)
		}
		switch {
		case o.jsonOut && o.all:
			// One page a line, so that a reader can take them one by one.
			if err := json.NewEncoder(raw(out)).Encode(page); err != nil {
				return err
			}
		case o.jsonOut:
			if err := printJSON(out, page); err != nil {
				return err
			}
		default:
			printTables(out, page, pattern, !o.all || page.Next == "")
		}
		if !o.all || page.Next == "" {
			return nil
		}
		after = page.Next
	}
}

// printTables writes one page; last adds what was left out and how to go on.
func printTables(out io.Writer, page api.TablesResponse, pattern string, last bool) {
	tw := tabwriter.NewWriter(out, 0, 0, 2, ' ', 0)
	if len(page.Tables) > 0 {
		fmt.Fprintln(tw, "SCHEMA\tNAME\tKIND\tROWS (EST.)")
	}
	for _, t := range page.Tables {
		rows := "-"
		if t.Rows != nil {
			rows = render.Number(*t.Rows)
		}
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\n", cell(t.Schema), cell(t.Name), cell(t.Kind), rows)
	}
	_ = tw.Flush()
	if !last {
		return
	}
	what := "readable relations"
	if pattern != "" {
		what += " match " + fmt.Sprintf("%q", pattern)
	}
	line := fmt.Sprintf("(%d %s", page.Total, what)
	if page.Unreadable > 0 {
		line += fmt.Sprintf("; %d outside the readable patterns are not listed", page.Unreadable)
	}
	fmt.Fprintln(out, line+")")
	if page.Next != "" {
		args := page.ConnectionID
		if pattern != "" {
			args += " " + shellQuote(pattern)
		}
		fmt.Fprintf(out, "More: sonde tables %s --after %s (or --all)\n", args, shellQuote(page.Next))
	}
}

func newDescribeCmd() *cobra.Command {
	var o runsOptions
	cmd := &cobra.Command{
		Use:   "describe CONN TABLE",
		Short: "Describe one readable table or view of a connection in full",
		Long: `describe prints one relation of connection CONN as the model reads it:
columns with types and nullability, primary and unique keys, foreign keys to
other readable relations, indexes and the engine's estimates. TABLE is name
or schema.name, case-insensitive. A relation outside the readable patterns
answers exactly as one that does not exist.
` + exitTable + `
Here: 2 for an unknown connection (the valid ones are listed), a table no
readable relation has, or a name found in several schemas.`,
		Args: usageArgs(cobra.ExactArgs(2)),
		RunE: func(cmd *cobra.Command, args []string) error {
			return describe(cmd.Context(), cmd.OutOrStdout(), o, args[0], args[1])
		},
	}
	f := cmd.Flags()
	o.gatewayFlags(f)
	f.BoolVar(&o.jsonOut, "json", false, `print {"connectionId","relation":{…}} as JSON`)
	bindEnv(cmd)
	return cmd
}

func describe(ctx context.Context, out io.Writer, o runsOptions, conn, table string) error {
	c := o.client()
	d, err := c.DescribeTable(ctx, conn, table)
	if err != nil {
		return connectionError(ctx, c, o.server, conn, err)
	}
	if o.jsonOut {
		return printJSON(out, d)
	}
	fmt.Fprint(out, grounding.Describe(d.Relation))
	return nil
}

func newExplainCmd() *cobra.Command {
	var o tablesOptions
	cmd := &cobra.Command{
		Use:   "explain CONN 'SQL'",
		Short: "Show a statement's estimating plan on a gateway (never executed)",
		Long: `explain asks the gateway for the estimating plan of one statement on
connection CONN (EXPLAIN without ANALYZE, or the engine's equivalent): the
statement is guarded exactly as a read is, and refused as sonde query refuses
it; it is never executed. It prints a one-line summary (each relation's
access, the estimated cost) and the plan as the engine printed it.
` + sqlHelp + exitTable + `
Here: 2 when the statement is refused or the connection is unknown (the
valid ones are listed); 1 for a database error.`,
		Args: usageArgs(cobra.RangeArgs(1, 2)),
		RunE: func(cmd *cobra.Command, args []string) error {
			sql, err := statementArg(cmd, args[1:], o.file)
			if err != nil {
				return err
			}
			return explainCmd(cmd.Context(), cmd.OutOrStdout(), cmd.ErrOrStderr(), o, args[0], sql)
		},
	}
	f := cmd.Flags()
	o.gatewayFlags(f)
	f.StringVar(&o.file, "file", "", "read the statement from this file")
	f.BoolVar(&o.jsonOut, "json", false, `print {"connectionId","sql","plan","columns","rows"} as JSON (a refusal as {"code","reason","fix"})`)
	bindEnv(cmd)
	return cmd
}

func explainCmd(ctx context.Context, out, errOut io.Writer, o tablesOptions, conn, sql string) error {
	c := o.client()
	res, err := c.Explain(ctx, api.ExplainRequest{ConnectionID: conn, SQL: sql})
	if r := refusalOf(err); r != nil {
		return r(out, errOut, o.jsonOut)
	}
	if err != nil {
		return connectionError(ctx, c, o.server, conn, err)
	}
	if o.jsonOut {
		return printJSON(out, res)
	}
	fmt.Fprintf(out, "Plan (estimates, not executed): %s\n", render.PlanLine(&res.Plan))
	if res.Plan.Note != "" {
		fmt.Fprintf(out, "Note: %s\n", oneLine(res.Plan.Note, 300))
	}
	fmt.Fprintln(out)
	printTable(out, api.QueryResponse{Columns: res.Columns, Rows: res.Rows, RowCount: len(res.Rows)})
	return nil
}

// refusalOf is the printer of a statement's refusal (422), or nil for any
// other answer.
func refusalOf(err error) func(out, errOut io.Writer, jsonOut bool) error {
	var ae *client.APIError
	if !errors.As(err, &ae) || ae.Status != http.StatusUnprocessableEntity {
		return nil
	}
	return func(out, errOut io.Writer, jsonOut bool) error {
		return printRefusal(out, errOut, jsonOut, &contracts.Refusal{Code: ae.Code, Message: ae.Message, Fix: ae.Fix})
	}
}

// shellQuote quotes s for a POSIX shell when it needs it.
func shellQuote(s string) string {
	if s != "" && !strings.ContainsFunc(s, func(r rune) bool {
		return !(r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r >= '0' && r <= '9' || strings.ContainsRune("._-/:@%+=,", r))
	}) {
		return s
	}
	return "'" + strings.ReplaceAll(s, "'", `'\''`) + "'"
}
