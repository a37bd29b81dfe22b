package cli

import (
	"context"
	"fmt"
	"io"
	"text/tabwriter"

	"github.com/spf13/cobra"

	"github.com/sondehq/sonde/contracts"
	"github.com/sondehq/sonde/services/gateway/api"
)

func newConnectionsCmd() *cobra.Command {
	var o runsOptions
	cmd := &cobra.Command{
		Use:   "connections",
		Short: "List the connections a gateway serves, with their status and warnings",
		Long: `connections lists the connections the executors behind a gateway have
published: id, engine, description, whether the database can be read now
(and why not), and what the operator should fix, such as a role that runs
reads but could also write (docs/security.md). sonde tables CONN lists a
connection's readable tables.
` + exitTable,
		Args: usageArgs(cobra.NoArgs),
		RunE: func(cmd *cobra.Command, _ []string) error {
			return connectionsList(cmd.Context(), cmd.OutOrStdout(), o)
		},
	}
	f := cmd.Flags()
	o.gatewayFlags(f)
	f.BoolVar(&o.jsonOut, "json", false, `print the list as JSON ({"connections":[…]})`)
	bindEnv(cmd)
	return cmd
}

func connectionsList(ctx context.Context, out io.Writer, o runsOptions) error {
	conns, err := o.client().Connections(ctx)
	if err != nil {
		return remoteError(o.server, err)
	}
	if o.jsonOut {
		return printJSON(out, api.Connections{Connections: conns})
	}
	return printConnections(out, conns)
}

func printConnections(out io.Writer, conns []contracts.ConnectionDescriptor) error {
	if len(conns) == 0 {
		fmt.Fprintln(out, "No connections: no executor has published one.")
		return nil
	}
	tw := tabwriter.NewWriter(out, 0, 0, 2, ' ', 0)
	fmt.Fprintln(tw, "ID\tENGINE\tSTATUS\tDESCRIPTION")
	for _, c := range conns {
		// Printed as served: the registry reader (pkg/registry) gives an
		// empty status its meaning, available.
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\n", c.ID, c.Engine, c.Status, oneLine(c.Description, 70))
	}
	if err := tw.Flush(); err != nil {
		return err
	}
	for _, c := range conns {
		if c.Status == contracts.ConnectionUnavailable {
			fmt.Fprintf(out, "\n%s is unavailable: %s (the executor keeps trying to open it)\n", c.ID, c.Reason)
		}
		for _, w := range c.Warnings {
			fmt.Fprintf(out, "\nwarning: %s: %s\n", c.ID, w)
		}
	}
	return nil
}
