package cli

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"strings"

	"github.com/spf13/cobra"

	"github.com/sondehq/sonde/contracts"
	"github.com/sondehq/sonde/services/gateway/client"
)

// The exit statuses of every sonde command: the one table, documented in
// docs/cli.md ("Exit status"). A script can tell a refusal (change the
// request) from an unanswered run (ask again, differently) from no answer at
// all (retry the same thing later).
const (
	// ExitOK: the command did what it was asked; a run answered.
	ExitOK = 0
	// ExitError: it failed: a database error, a server error, a run that
	// could not be started or followed, an interrupted command.
	ExitError = 1
	// ExitRefused: the request was refused or invalid: the guard refused
	// the statement, the server refused the request (4xx: an unknown
	// connection, run or table, a model the capability probe refused), or
	// the command line itself is wrong (an unknown flag, a missing
	// argument, an unknown workflow).
	ExitRefused = 2
	// ExitUnanswered: not answered: the run ended without answering its
	// objective (its verdict says why), or was cancelled.
	ExitUnanswered = 3
	// ExitNoAnswer: no answer came: the gateway could not be reached,
	// answered 503 or dropped the connection, or the process that ran a
	// statement (sonde query, sonde sqlite) died. It says nothing about the
	// statement or the run, which may be retried.
	ExitNoAnswer = 4
)

// exitTable is the exit-status table as the commands' help prints it.
const exitTable = `
Exit status: 0 ok; 1 error; 2 refused or invalid input; 3 not answered (the
run ended without answering); 4 no answer (the gateway or the statement's
process could not be reached or died; retry). docs/cli.md has the table.`

// exitError carries a chosen exit status.
type exitError struct {
	code int
	err  error
}

func (e *exitError) Error() string {
	if e.err == nil {
		return fmt.Sprintf("exit status %d", e.code)
	}
	return e.err.Error()
}

func (e *exitError) Unwrap() error { return e.err }

// usage is an invalid command line: exit status 2.
func usage(format string, args ...any) error {
	return &exitError{code: ExitRefused, err: fmt.Errorf(format, args...)}
}

// usageArgs gives cobra's argument checks exit status 2.
func usageArgs(check cobra.PositionalArgs) cobra.PositionalArgs {
	return func(cmd *cobra.Command, args []string) error {
		if err := check(cmd, args); err != nil {
			return &exitError{code: ExitRefused, err: fmt.Errorf("%w; see %s --help", err, cmd.CommandPath())}
		}
		return nil
	}
}

// usageFlags gives a flag that does not parse exit status 2. For a command
// that takes a statement it says how to pass one that begins with a
// comment, which would otherwise read as a flag.
func usageFlags(cmd *cobra.Command, err error) error {
	hint := ""
	switch cmd.Name() {
	case "query", "explain", "sqlite":
		hint = " (a statement that begins with a -- comment goes after --, which ends the flags, or on the standard input with -)"
	}
	return &exitError{code: ExitRefused, err: fmt.Errorf("%w; see %s --help%s", err, cmd.CommandPath(), hint)}
}

// remoteError gives an error of the gateway's client its exit status:
// ExitNoAnswer when no answer came (the gateway could not be reached,
// answered 503, or dropped the connection), ExitRefused for a 4xx answer,
// else ExitError.
func remoteError(server string, err error) error {
	var ae *client.APIError
	switch {
	case errors.As(err, &ae):
		switch {
		case ae.Status == http.StatusServiceUnavailable:
			return &exitError{code: ExitNoAnswer, err: err}
		case ae.Status >= 400 && ae.Status < 500:
			return &exitError{code: ExitRefused, err: err}
		}
		return &exitError{code: ExitError, err: err}
	case errors.Is(err, context.Canceled):
		return &exitError{code: ExitError, err: err}
	}
	return &exitError{code: ExitNoAnswer, err: fmt.Errorf("no answer from the gateway at %s: it cannot be reached or it dropped the connection: %w", server, err)}
}

// connectionError is remoteError, except that an unknown connection is
// answered with the ids the gateway serves.
func connectionError(ctx context.Context, c *client.Client, server, id string, err error) error {
	var ae *client.APIError
	if !errors.As(err, &ae) || ae.Code != contracts.CodeUnknownConnection {
		return remoteError(server, err)
	}
	conns, lerr := c.Connections(ctx)
	if lerr != nil {
		return remoteError(server, err)
	}
	return &exitError{code: ExitRefused, err: fmt.Errorf("%s: no connection %q on %s; %s", ae.Code, id, server, validConnections(conns))}
}

// validConnections names the connections one may use instead.
func validConnections(conns []contracts.ConnectionDescriptor) string {
	if len(conns) == 0 {
		return "this server serves no connection yet (no executor has published one)"
	}
	ids := make([]string, len(conns))
	for i, d := range conns {
		ids[i] = fmt.Sprintf("%s (%s)", d.ID, d.Engine)
	}
	return "use one of: " + strings.Join(ids, ", ")
}
