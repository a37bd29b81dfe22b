package cli

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"

	"github.com/spf13/cobra"

	"github.com/sondehq/sonde/contracts"
	"github.com/sondehq/sonde/services/gateway/client"
)

func newHandoverCmd() *cobra.Command {
	var o runsOptions
	cmd := &cobra.Command{
		Use:   "handover RUN_ID",
		Short: "Run the auto-executed answer of a data-analysis run again, as the editor does",
		Long: `handover asks the gateway to replay the answer a data-analysis run presented
and auto-executed: the statement the run's ledger recorded, on the run's own
connection, under the agent-handover profile (read-only at the database, at
most 500 rows, refused rather than truncated, no statement timeout). Nothing
but the run id is sent; the rows print as sonde query prints them.

` + exitTable + `
Here: 2 when the answer was not auto-executed (the gate's warning says why),
the run presented none, the statement was refused, or the run is unknown; 1
for a database error or another failure.`,
		Args: usageArgs(cobra.ExactArgs(1)),
		RunE: func(cmd *cobra.Command, args []string) error {
			return handover(cmd.Context(), cmd.OutOrStdout(), cmd.ErrOrStderr(), o, args[0])
		},
	}
	f := cmd.Flags()
	o.gatewayFlags(f)
	f.BoolVar(&o.jsonOut, "json", false, "print the rows (or the refusal) as JSON")
	bindEnv(cmd)
	return cmd
}

func handover(ctx context.Context, out, errOut io.Writer, o runsOptions, runID string) error {
	res, err := o.client().Handover(ctx, runID)
	var ae *client.APIError
	if errors.As(err, &ae) && (ae.Status == http.StatusConflict || ae.Status == http.StatusUnprocessableEntity) {
		// Nothing was replayed, and the answer says why: the gate's
		// warning, a run without an answer, or the guard's refusal.
		return printRefusal(out, errOut, o.jsonOut, &contracts.Refusal{Code: ae.Code, Message: ae.Message, Fix: ae.Fix})
	}
	if err != nil {
		return remoteError(o.server, err)
	}
	if o.jsonOut {
		return printJSON(out, res)
	}
	fmt.Fprintf(out, "Run %s's answer, replayed on %s under agent-handover (read-only, at most 500 rows):\n  %s\n\n",
		res.RunID, res.ConnectionID, oneLine(res.SQL, 2000))
	printTable(out, res.QueryResponse)
	return nil
}
