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
			if len(args) == 2 && args[1] == "-" && os.Getenv(inspectChildEnv) != "1" {
				sql, err := statementArg(cmd, args[1:], "")
				if err != nil {
					return err
				}
				args = []string{args[0], sql}
			}
			if done, err := inChild(cmd, args, o.inProcess); done {
				return err
			}
			path := args[0]
			if _, err := os.Stat(path); err != nil {
				return usage("sqlite: %w", err)
			}
			conn := connections.Connection{ID: "sqlite", Engine: contracts.EngineSQLite, Path: path}
			op, sql := contracts.OpInventory, ""
			if len(args) == 2 {
				op, sql = contracts.OpRead, args[1]
			}
			return inspect(cmd.Context(), cmd.OutOrStdout(), cmd.ErrOrStderr(), conn, op, sql, o)
		},
	}
	o.register(cmd)
	bindEnv(cmd)
	return cmd
}
