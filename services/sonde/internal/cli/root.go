// Package cli holds the sonde command tree.
package cli

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"os"
	"os/signal"
	"strings"
	"syscall"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"

	"github.com/sondehq/sonde/services/gateway/client"
)

// Exit statuses.
const (
	ExitOK         = 0
	ExitError      = 1
	ExitUnanswered = 2
	// ExitNoAnswer: no answer came: the gateway could not be reached,
	// answered 503 or dropped the connection, or the process that ran a
	// statement (sonde query, sonde sqlite) died. Unlike 2, it says nothing
	// about the statement or the run, which may be retried.
	ExitNoAnswer = 3
)

// exitError carries a chosen exit status.
type exitError struct {
	code int
	err  error
}

func (e *exitError) Error() string { return e.err.Error() }

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
	root := &cobra.Command{
		Use:           "sonde",
		Short:         "Read-only database investigations driven by a language model",
		SilenceUsage:  true,
		SilenceErrors: true,
	}
	root.AddCommand(newServeCmd(), newAskCmd(), newProbeCmd())
	root.AddCommand(newQueryCmd(), newSQLiteCmd())
	root.AddCommand(newRunsCmd())
	root.AddCommand(newHandoverCmd())
	root.AddCommand(newConnectionsCmd())
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

// remoteError gives an error of the gateway's client its exit status:
// ExitNoAnswer when no answer came (the gateway could not be reached,
// answered 503, or dropped the connection), else ExitError.
func remoteError(server string, err error) error {
	var ae *client.APIError
	switch {
	case errors.As(err, &ae):
		if ae.Status == http.StatusServiceUnavailable {
			return &exitError{code: ExitNoAnswer, err: err}
		}
		return &exitError{code: ExitError, err: err}
	case errors.Is(err, context.Canceled):
		return &exitError{code: ExitError, err: err}
	}
	return &exitError{code: ExitNoAnswer, err: fmt.Errorf("no answer from the gateway at %s: it cannot be reached or it dropped the connection: %w", server, err)}
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
