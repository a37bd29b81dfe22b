// Package cli holds the sonde command tree.
package cli

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/signal"
	"strings"
	"syscall"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"
)

// Main runs the command line and returns the process exit status.
func Main(args []string) int {
	code := mainStatus(args)
	if os.Getenv(inspectChildEnv) == "1" {
		reportInspectStatus(code)
	}
	return code
}

func mainStatus(args []string) int {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	root := newRootCmd()
	root.SetOut(plainUnlessTerminal(os.Stdout))
	root.SetErr(plainUnlessTerminal(os.Stderr))
	root.SetArgs(args)
	err := root.ExecuteContext(ctx)
	if err == nil {
		return ExitOK
	}
	var ee *exitError
	if errors.As(err, &ee) {
		if ee.err != nil {
			fmt.Fprintln(root.ErrOrStderr(), "sonde:", ee.err)
		}
		return ee.code
	}
	fmt.Fprintln(root.ErrOrStderr(), "sonde:", err)
	return ExitError
}

// newRootCmd builds the whole command tree.
func newRootCmd() *cobra.Command {
	root := &cobra.Command{
		Use:           "sonde",
		Short:         "Read-only database investigations driven by a language model",
		Long:          "Sonde lets a language model investigate a production database, read-only.\n" + exitTable,
		Version:       Version,
		SilenceUsage:  true,
		SilenceErrors: true,
		Args:          usageArgs(cobra.NoArgs),
		RunE:          func(cmd *cobra.Command, _ []string) error { return cmd.Help() },
	}
	root.SetVersionTemplate("sonde {{.Version}}\n")
	root.SetFlagErrorFunc(usageFlags)
	root.AddCommand(newServeCmd(), newAskCmd(), newProbeCmd())
	root.AddCommand(newQueryCmd(), newSQLiteCmd(), newExplainCmd())
	root.AddCommand(newRunsCmd())
	root.AddCommand(newHandoverCmd())
	root.AddCommand(newConnectionsCmd(), newTablesCmd(), newDescribeCmd())
	root.AddCommand(newVersionCmd())
	root.AddCommand(newMCPCmd())
	return root
}

// sharedEnv are the flags whose variable is the same for every command,
// because they mean the same thing everywhere: the gateway, the token, the
// connections file.
var sharedEnv = map[string]bool{"server": true, "token": true, "connections": true}

// envName is the variable a flag of cmd reads: SONDE_<FLAG> for the shared
// flags and for serve (the server's own configuration), else
// SONDE_<COMMAND>_<FLAG>, the command path below sonde included
// (SONDE_QUERY_LIMIT, SONDE_RUNS_LIST_LIMIT), so that a variable meant for
// one command never reaches another.
func envName(cmd *cobra.Command, flag string) string {
	upper := func(s string) string { return strings.ToUpper(strings.ReplaceAll(s, "-", "_")) }
	if sharedEnv[flag] || cmd.Name() == "serve" {
		return "SONDE_" + upper(flag)
	}
	path := strings.Fields(cmd.CommandPath())
	if len(path) > 0 {
		path = path[1:] // "sonde"
	}
	return "SONDE_" + upper(strings.Join(path, "_")) + "_" + upper(flag)
}

// bindEnv gives every flag of cmd an environment variable default (envName).
// A flag given on the command line wins over the variable, and the variable
// over the built-in default. A variable of the old unscoped form
// (SONDE_LIMIT) is not read: a warning names the one that is.
func bindEnv(cmd *cobra.Command) {
	cmd.PreRunE = func(cmd *cobra.Command, _ []string) error {
		var bad error
		cmd.Flags().VisitAll(func(f *pflag.Flag) {
			if f.Changed || bad != nil {
				return
			}
			name := envName(cmd, f.Name)
			if v, ok := os.LookupEnv(name); ok {
				if err := f.Value.Set(v); err != nil {
					bad = usage("%s=%q: %w", name, v, err)
				}
				return
			}
			old := "SONDE_" + strings.ToUpper(strings.ReplaceAll(f.Name, "-", "_"))
			if _, ok := os.LookupEnv(old); ok && old != name && os.Getenv(inspectChildEnv) != "1" {
				fmt.Fprintf(cmd.ErrOrStderr(), "sonde: warning: %s is not read by %s; its variable is %s (each command's variables are its own, docs/cli.md#environment)\n",
					old, cmd.CommandPath(), name)
			}
		})
		return bad
	}
}
