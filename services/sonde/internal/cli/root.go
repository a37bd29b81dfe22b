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

// Exit statuses.
const (
	ExitOK         = 0
	ExitError      = 1
	ExitUnanswered = 2
)

// exitError carries a chosen exit status.
type exitError struct {
	code int
	err  error
}

func (e *exitError) Error() string { return e.err.Error() }

// Main runs the command line and returns the process exit status.
func Main(args []string) int {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	root := &cobra.Command{
		Use:           "sonde",
		Short:         "Read-only database investigations driven by a language model",
		SilenceUsage:  true,
		SilenceErrors: true,
	}
	root.AddCommand(newServeCmd(), newAskCmd(), newProbeCmd())
	root.AddCommand(newQueryCmd(), newSQLiteCmd())
	root.AddCommand(newRunsCmd())
	root.SetArgs(args)
	err := root.ExecuteContext(ctx)
	if err == nil {
		return ExitOK
	}
	var ee *exitError
	if errors.As(err, &ee) {
		if ee.err != nil {
			fmt.Fprintln(os.Stderr, "sonde:", ee.err)
		}
		return ee.code
	}
	fmt.Fprintln(os.Stderr, "sonde:", err)
	return ExitError
}

// bindEnv gives every flag of cmd a SONDE_* environment variable default:
// --data-dir reads SONDE_DATA_DIR. A flag given on the command line wins over
// the variable, and the variable over the built-in default.
func bindEnv(cmd *cobra.Command) {
	cmd.PreRunE = func(cmd *cobra.Command, _ []string) error {
		var bad error
		cmd.Flags().VisitAll(func(f *pflag.Flag) {
			if f.Changed || bad != nil {
				return
			}
			name := "SONDE_" + strings.ToUpper(strings.ReplaceAll(f.Name, "-", "_"))
			if v, ok := os.LookupEnv(name); ok {
				if err := f.Value.Set(v); err != nil {
					bad = fmt.Errorf("%s=%q: %w", name, v, err)
				}
			}
		})
		return bad
	}
}
