package cli

import (
	"os"

	"github.com/spf13/cobra"

	"github.com/sondehq/sonde/contracts"
	"github.com/sondehq/sonde/services/executor/connections"
)

func newSQLiteCmd() *cobra.Command {
	var o inspectOptions
	cmd := &cobra.Command{
		Use:   "sqlite FILE ['SQL']",
		Short: "Inspect a SQLite file read-only: its tables, or one guarded read",
		Long: `sqlite opens a SQLite database file read-only (mode=ro, never immutable) on
this machine. With no SQL it prints the tables and their CREATE statements;
with SQL it runs one guarded SELECT under the inspect profile, its parameters
(--params) bound separately. The file must exist; it is never changed.
SQL - reads the statement from the standard input.
` + inspectExitStatus,
		Args: usageArgs(cobra.RangeArgs(1, 2)),
		RunE: func(cmd *cobra.Command, args []string) error {
			h := handoff{params: o.params}
			switch {
			case isInspectChild():
				// The statement, if any, comes on the standard input.
				var err error
				if h, err = readHandoff(cmd.InOrStdin()); err != nil {
					return err
				}
			case len(args) == 2:
				sql, err := statementArg(cmd, args[1:], "")
				if err != nil {
					return err
				}
				h.sql = sql
			}
			// The child's arguments say whether there is a statement ("-":
			// on the standard input), never what it is.
			childArgs := []string{args[0]}
			if len(args) == 2 {
				childArgs = append(childArgs, "-")
			}
			if done, err := inChild(cmd, childArgs, h, o.inProcess); done {
				return err
			}
			o.params = h.params
			path := args[0]
			if _, err := os.Stat(path); err != nil {
				return usage("sqlite: %w", err)
			}
			conn := connections.Connection{ID: "sqlite", Engine: contracts.EngineSQLite, Path: path}
			op := contracts.OpInventory
			if len(args) == 2 {
				op = contracts.OpRead
			}
			return inspect(cmd.Context(), cmd.OutOrStdout(), cmd.ErrOrStderr(), conn, op, h.sql, o)
		},
	}
	o.register(cmd)
	bindEnv(cmd)
	return cmd
}
