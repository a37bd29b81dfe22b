package cli

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"sync"
	"text/tabwriter"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"

	"github.com/sondehq/sonde/contracts"
	"github.com/sondehq/sonde/pkg/grounding"
	"github.com/sondehq/sonde/services/executor"
	"github.com/sondehq/sonde/services/executor/connections"
	"github.com/sondehq/sonde/services/gateway/api"
)

// inspectOptions are the flags the direct-inspection commands (query,
// sqlite) share.
type inspectOptions struct {
	jsonOut   bool
	limit     int
	timeoutMs int64
	params    string
	inProcess bool
}

func (o *inspectOptions) register(cmd *cobra.Command) {
	f := cmd.Flags()
	f.BoolVar(&o.jsonOut, "json", false, "print the result (or the refusal, or the error) as JSON")
	f.IntVar(&o.limit, "limit", 0, "rows to return, 1 to 1000 (default 200)")
	f.Int64Var(&o.timeoutMs, "timeout-ms", 0, "statement timeout in ms, 1 to 10000 (default 5000)")
	f.StringVar(&o.params, "params", "", `parameters bound to ?, ?NNN as a JSON array, e.g. '[100, "eu"]'`)
	f.BoolVar(&o.inProcess, "in-process", false, "run the statement in this process rather than in a child process")
	_ = f.MarkHidden("in-process")
}

const inspectExitStatus = `
The statement runs in a child process of this command, so that a crash in
native code (the SQL parser, the database driver) cannot pass for an answer.
The statement and its parameters reach that process on its standard input,
never in its argument list (which other local users can read).
` + exitTable + `
Here: 2 when the statement is refused (the refusal says why and how to write
it instead) or the command line is wrong; 1 for a database error, classified
(syntax, missing-object, permission, timeout, resource, …); 4 when the
process that ran the statement died without an answer.`

// sqlHelp says how a statement is given, a comment first included.
const sqlHelp = `
The statement is the argument, or - to read it from the standard input, or
--file FILE. A statement that begins with a comment (-- …) would read as a
flag: put -- before it to end the flags (sonde query … -- '-- why
select 1'), or pass it on the standard input or in a file.
`

// statementArg resolves the statement of a command: the argument, "-" for
// the standard input, or --file; exactly one of them.
func statementArg(cmd *cobra.Command, args []string, file string) (string, error) {
	var (
		b   []byte
		err error
	)
	switch {
	case file != "" && len(args) > 0:
		return "", usage("give the statement as an argument or with --file, not both")
	case file != "":
		b, err = os.ReadFile(file)
		if err != nil {
			return "", usage("--file: %w", err)
		}
	case len(args) == 0:
		return "", usage("no statement: give it as an argument, - to read the standard input, or --file FILE")
	case args[0] == "-":
		b, err = io.ReadAll(io.LimitReader(cmd.InOrStdin(), maxStatementBytes+1))
		if err != nil {
			return "", fmt.Errorf("read the statement from the standard input: %w", err)
		}
	default:
		return args[0], nil
	}
	if len(b) > maxStatementBytes {
		return "", usage("the statement is longer than %d bytes", maxStatementBytes)
	}
	if strings.TrimSpace(string(b)) == "" {
		return "", usage("the statement is empty")
	}
	return string(b), nil
}

// maxStatementBytes bounds a statement read from a file or the standard
// input.
const maxStatementBytes = 1 << 20

type queryOptions struct {
	inspectOptions
	connections string
	connection  string
	file        string
}

func newQueryCmd() *cobra.Command {
	var o queryOptions
	cmd := &cobra.Command{
		Use:   "query --connections FILE --connection ID 'SQL'",
		Short: "Run one guarded read on a connection, without a server, under the inspect profile",
		Long: `query runs one SELECT on a connection of the connections file, on this
machine, through the executor's own code: the same guard, read-only
connection and limits as a run's reads, under the inspect profile (200 rows by
default and at most 1,000; 5 s by default and at most 10 s; 1 MB of answer;
truncated rather than refused). No server is needed and no model is involved.
sonde explain reads a statement's plan over a gateway.
` + sqlHelp + inspectExitStatus,
		Args: usageArgs(cobra.MaximumNArgs(1)),
		RunE: func(cmd *cobra.Command, args []string) error {
			var h handoff
			if isInspectChild() {
				// The parent resolved the statement (argument, standard
				// input or file) and hands it over on the standard input.
				var err error
				if h, err = readHandoff(cmd.InOrStdin()); err != nil {
					return err
				}
			} else {
				sql, err := statementArg(cmd, args, o.file)
				if err != nil {
					return err
				}
				h = handoff{sql: sql, params: o.params}
			}
			if done, err := inChild(cmd, nil, h, o.inProcess); done {
				return err
			}
			o.params = h.params
			if o.connections == "" || o.connection == "" {
				return usage("query needs --connections FILE and --connection ID")
			}
			conns, err := connections.Load(o.connections)
			if err != nil {
				return err
			}
			var conn *connections.Connection
			for i := range conns {
				if conns[i].ID == o.connection {
					conn = &conns[i]
				}
			}
			if conn == nil {
				return printRefusal(cmd.OutOrStdout(), cmd.ErrOrStderr(), o.jsonOut, &contracts.Refusal{
					Code:    contracts.RefuseUnknownConnection,
					Message: fmt.Sprintf("%s has no connection %q", o.connections, o.connection),
					Fix:     "name one of the ids in the connections file: " + connectionIDs(conns)})
			}
			return inspect(cmd.Context(), cmd.OutOrStdout(), cmd.ErrOrStderr(), *conn, contracts.OpRead, h.sql, o.inspectOptions)
		},
	}
	f := cmd.Flags()
	f.StringVar(&o.connections, "connections", "", "connections file (YAML)")
	f.StringVar(&o.connection, "connection", "", "id of the connection to read")
	f.StringVar(&o.file, "file", "", "read the statement from this file")
	o.register(cmd)
	bindEnv(cmd)
	return cmd
}

// inspectChildEnv marks the child process that runs the statement of a
// query or sqlite command; it reports its exit status on descriptor 3, so
// that the parent tells a status the command chose from a crash (Go's
// runtime exits 2 after a fatal signal, the status of a refusal).
const inspectChildEnv = "SONDE_INSPECT_CHILD"

// isInspectChild reports whether this process is the child of inChild.
func isInspectChild() bool { return os.Getenv(inspectChildEnv) == "1" }

// handoff is what the parent gives its child on the child's standard input
// rather than in its argument list, which any local user can read
// (/proc/PID/cmdline) and which cannot carry a NUL byte: the statement and
// its parameters.
type handoff struct {
	sql, params string
}

// writeTo writes h as the child reads it: the parameters' length in bytes
// on a line, the parameters, then the statement's bytes to the end, so that
// any bytes at all (a NUL, invalid UTF-8) arrive as they were given.
func (h handoff) writeTo(w io.Writer) error {
	_, err := fmt.Fprintf(w, "%d\n%s%s", len(h.params), h.params, h.sql)
	return err
}

// maxHandoffBytes bounds what a child reads: a statement and parameters of
// at most maxStatementBytes each, and the length line.
const maxHandoffBytes = 2*maxStatementBytes + 32

// readHandoff reads what writeTo wrote.
func readHandoff(r io.Reader) (handoff, error) {
	b, err := io.ReadAll(io.LimitReader(r, maxHandoffBytes+1))
	if err != nil {
		return handoff{}, fmt.Errorf("read the statement from the parent process: %w", err)
	}
	head, rest, ok := bytes.Cut(b, []byte("\n"))
	n, convErr := strconv.Atoi(string(head))
	if !ok || convErr != nil || n < 0 || n > len(rest) || len(b) > maxHandoffBytes {
		return handoff{}, errors.New("the parent process handed over no readable statement")
	}
	return handoff{params: string(rest[:n]), sql: string(rest[n:])}, nil
}

// inChild runs cmd again in a child process, unless this is that child or
// inProcess is set, and answers done with the child's exit status as the
// error. args are the positional arguments the child gets (never the
// statement); h goes to the child's standard input. The child writes to this
// command's output and error streams.
func inChild(cmd *cobra.Command, args []string, h handoff, inProcess bool) (done bool, err error) {
	if inProcess || isInspectChild() {
		return false, nil
	}
	exe, err := os.Executable()
	if err != nil {
		return false, nil // run in this process, as --in-process does
	}
	childArgs := []string{cmd.Name()}
	cmd.Flags().Visit(func(f *pflag.Flag) {
		// The parent read the file; the parameters travel with the
		// statement, on the standard input.
		if f.Name != "file" && f.Name != "params" {
			childArgs = append(childArgs, "--"+f.Name+"="+f.Value.String())
		}
	})
	childArgs = append(append(childArgs, "--"), args...)
	var in bytes.Buffer
	if err := h.writeTo(&in); err != nil {
		return true, err
	}
	statusR, statusW, err := os.Pipe()
	if err != nil {
		return true, err
	}
	defer statusR.Close()
	c := exec.CommandContext(cmd.Context(), exe, childArgs...)
	c.Env = append(os.Environ(), inspectChildEnv+"=1")
	c.Stdin = &in
	// The child's error stream is held back until it is known how the child
	// ended: after a crash only the runtime's first line is shown, not its
	// dump of every goroutine, which would bury the sentence below.
	var childErr cappedBuffer
	// The child spells its own output plainly when it is not a terminal.
	c.Stdout, c.Stderr = raw(cmd.OutOrStdout()), &childErr
	c.ExtraFiles = []*os.File{statusW}
	err = c.Start()
	statusW.Close()
	if err != nil {
		return true, fmt.Errorf("start the process that runs the statement: %w (--in-process runs it in this one)", err)
	}
	status, _ := io.ReadAll(statusR)
	_ = c.Wait()
	code, convErr := strconv.Atoi(strings.TrimSpace(string(status)))
	if convErr == nil {
		_, _ = cmd.ErrOrStderr().Write(childErr.Bytes())
	} else if first, _, _ := strings.Cut(childErr.String(), "\n"); first != "" {
		fmt.Fprintln(cmd.ErrOrStderr(), first)
	}
	if convErr == nil {
		if code == ExitOK {
			return true, nil
		}
		return true, &exitError{code: code}
	}
	if cmd.Context().Err() != nil {
		return true, &exitError{code: ExitError, err: errors.New("interrupted")}
	}
	return true, &exitError{code: ExitNoAnswer, err: fmt.Errorf(
		"no answer: the process that ran the statement died (%s), a crash in the SQL parser or the database driver; "+
			"the statement was not answered (the database is only ever read); please report the statement as a bug", c.ProcessState)}
}

// cappedBuffer keeps the first maxChildErr bytes written to it and drops
// the rest, so a child cannot make its parent hold an unbounded stream.
type cappedBuffer struct{ bytes.Buffer }

const maxChildErr = 1 << 20

func (b *cappedBuffer) Write(p []byte) (int, error) {
	if room := maxChildErr - b.Len(); room > 0 {
		b.Buffer.Write(p[:min(len(p), room)])
	}
	return len(p), nil
}

// reportInspectStatus is the child's side of inChild.
func reportInspectStatus(code int) {
	f := os.NewFile(3, "status")
	if f == nil {
		return
	}
	fmt.Fprintln(f, code)
	f.Close()
}

// inspect runs one operation on conn in process, under the inspect
// profile, and prints what came back. Its error carries the exit status.
func inspect(ctx context.Context, out, errOut io.Writer, conn connections.Connection, op contracts.ExecOp, sql string, o inspectOptions) error {
	switch {
	case o.limit < 0 || o.limit > api.QueryMaxLimit:
		return usage("--limit %d is outside 1 to %d", o.limit, api.QueryMaxLimit)
	case o.timeoutMs < 0 || o.timeoutMs > api.QueryMaxTimeoutMs:
		return usage("--timeout-ms %d is outside 1 to %d", o.timeoutMs, api.QueryMaxTimeoutMs)
	}
	var params []any
	if o.params != "" {
		dec := json.NewDecoder(strings.NewReader(o.params))
		dec.UseNumber()
		if err := dec.Decode(&params); err != nil {
			return usage("--params: want a JSON array of values: %w", err)
		}
	}
	store := &lastArtifact{}
	ex, err := executor.New(executor.Config{
		Engine:      conn.Engine,
		Connections: []connections.Connection{conn},
		Logger:      slog.New(slog.DiscardHandler),
		Artifacts:   store,
	})
	if err != nil {
		return err
	}
	reply := ex.Exec(ctx, op, contracts.ExecRequest{ConnectionID: conn.ID, Profile: contracts.ProfileInspect,
		SQL: sql, Params: params, MaxRows: o.limit, TimeoutMs: o.timeoutMs})
	switch reply.Status {
	case contracts.ExecRefused:
		return printRefusal(out, errOut, o.jsonOut, reply.Refusal)
	case contracts.ExecError:
		if o.jsonOut {
			writeJSON(out, api.ErrorBody{Error: contracts.Problem{Code: reply.Error.Class.Code(), Message: reply.Error.Message}})
		} else {
			fmt.Fprintf(errOut, "database error (%s): %s\n", reply.Error.Class, reply.Error.Message)
		}
		return &exitError{code: ExitError}
	}
	art := store.get()
	if art == nil {
		return errors.New("the executor answered without a result")
	}
	if op == contracts.OpInventory && art.Inventory != nil {
		if o.jsonOut {
			writeJSON(out, art.Inventory)
		} else {
			printInventory(out, art.Inventory)
		}
		return nil
	}
	res := api.QueryResponse{Columns: art.Columns, Rows: art.Data, RowCount: len(art.Data),
		Truncated: art.Truncated, TruncatedBy: art.TruncatedBy, DurationMs: reply.DurationMs}
	if res.Rows == nil {
		res.Rows = [][]any{}
	}
	switch {
	case o.jsonOut:
		writeJSON(out, res)
	default:
		printTable(out, res)
	}
	return nil
}

// printRefusal prints a refusal and answers exit status 2 (ExitRefused).
// --json prints it as the HTTP API answers an error:
// {"error":{"code","message","fix"}}.
func printRefusal(out, errOut io.Writer, jsonOut bool, r *contracts.Refusal) error {
	if jsonOut {
		writeJSON(out, api.ErrorBody{Error: *r})
	} else {
		fmt.Fprintf(errOut, "refused (%s): %s\nfix: %s\n", r.Code, r.Message, r.Fix)
	}
	return &exitError{code: ExitRefused}
}

func writeJSON(out io.Writer, v any) {
	enc := json.NewEncoder(raw(out))
	enc.SetIndent("", "  ")
	_ = enc.Encode(v)
}

// printTable writes a result as aligned columns, then one line saying how
// many rows there are and whether some were left out.
func printTable(out io.Writer, res api.QueryResponse) {
	tw := tabwriter.NewWriter(out, 0, 0, 2, ' ', 0)
	names := make([]string, len(res.Columns))
	for i, c := range res.Columns {
		names[i] = cell(c.Name)
	}
	fmt.Fprintln(tw, strings.Join(names, "\t"))
	for _, row := range res.Rows {
		vals := make([]string, len(row))
		for i, v := range row {
			vals[i] = cellValue(v)
		}
		fmt.Fprintln(tw, strings.Join(vals, "\t"))
	}
	tw.Flush()
	fmt.Fprintf(out, "(%d %s", res.RowCount, plural(res.RowCount, "row"))
	if res.Truncated {
		fmt.Fprintf(out, "; truncated by %s: more rows were not read", strings.Join(res.TruncatedBy, ", "))
	}
	fmt.Fprintln(out, ")")
}

// printInventory writes each relation as the model reads it in full, then
// what was left out.
func printInventory(out io.Writer, inv *contracts.Inventory) {
	for _, r := range inv.Relations {
		fmt.Fprintln(out, grounding.Describe(r))
	}
	fmt.Fprintf(out, "(%d of %d readable %s", len(inv.Relations), inv.Total, plural(inv.Total, "relation"))
	if inv.Truncated {
		fmt.Fprintf(out, "; stopped at %d", inv.Limit)
	}
	if inv.Unreadable > 0 {
		fmt.Fprintf(out, "; %d outside the readable patterns", inv.Unreadable)
	}
	if inv.StatisticsSource != "" {
		fmt.Fprintf(out, "; estimates from %s", inv.StatisticsSource)
	}
	fmt.Fprintln(out, ")")
}

// cellValue writes one value on one line: NULL, numbers as they are, text
// with control characters escaped, a BLOB as its JSON form.
func cellValue(v any) string {
	switch x := v.(type) {
	case nil:
		return "NULL"
	case string:
		return cell(x)
	case int64:
		return strconv.FormatInt(x, 10)
	case float64:
		return strconv.FormatFloat(x, 'g', -1, 64)
	}
	var b bytes.Buffer
	enc := json.NewEncoder(&b)
	enc.SetEscapeHTML(false)
	_ = enc.Encode(v)
	return strings.TrimSpace(b.String())
}

// cell keeps a text on one line of one cell: control characters (tabs and
// line breaks included) are escaped.
func cell(s string) string {
	if !strings.ContainsFunc(s, func(r rune) bool { return r < 0x20 || r == 0x7f }) {
		return s
	}
	q := strconv.Quote(s)
	return q[1 : len(q)-1]
}

func plural(n int, s string) string {
	if n == 1 {
		return s
	}
	return s + "s"
}

// lastArtifact keeps the one result an in-process executor stores.
type lastArtifact struct {
	mu  sync.Mutex
	art *contracts.Artifact
}

func (l *lastArtifact) Put(_ context.Context, a contracts.Artifact) error {
	l.mu.Lock()
	l.art = &a
	l.mu.Unlock()
	return nil
}

func (l *lastArtifact) get() *contracts.Artifact {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.art
}

// connectionIDs lists the ids of a connections file, for a refusal's fix.
func connectionIDs(conns []connections.Connection) string {
	ids := make([]string, len(conns))
	for i, c := range conns {
		ids[i] = fmt.Sprintf("%s (%s)", c.ID, c.Engine)
	}
	return strings.Join(ids, ", ")
}
