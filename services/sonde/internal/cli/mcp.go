package cli

import (
	"context"
	"errors"
	"io"
	"log/slog"
	"os"

	"github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/spf13/cobra"

	"github.com/sondehq/sonde/services/gateway/mcpserver"
)

func newMCPCmd() *cobra.Command {
	var o runsOptions
	cmd := &cobra.Command{
		Use:   "mcp",
		Short: "Serve Sonde's MCP tools on stdin and stdout, against a running gateway",
		Long: `mcp is a Model Context Protocol server on stdio for an MCP client (Claude
Desktop, VS Code, an agent SDK) to start as a subprocess. Its tools —
list_connections, list_tables, describe_table, run_query, explain_query,
start_investigation and get_run — call the gateway at --server with --token,
so every statement takes the gateway's path: the guard, the read-only
connection, the inspect profile. A refused statement is a tool error with a
code, a reason and a fix. Logs go to stderr; stdout carries only the protocol.
The gateway serves the same tools at /mcp over streamable HTTP (docs/mcp.md).`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			// The protocol owns the process's own stdin and stdout: never the
			// command's output writer, which may rewrite text for a terminal.
			return serveMCP(cmd.Context(), os.Stdin, os.Stdout, os.Stderr, o)
		},
	}
	o.gatewayFlags(cmd.Flags())
	bindEnv(cmd)
	return cmd
}

// serveMCP serves the MCP tools on in and out until the client closes in or
// ctx ends.
func serveMCP(ctx context.Context, in io.Reader, out io.Writer, stderr io.Writer, o runsOptions) error {
	log := slog.New(slog.NewTextHandler(stderr, &slog.HandlerOptions{Level: slog.LevelWarn}))
	srv := mcpserver.New(o.client(), mcpserver.Options{Logger: log, Version: Version})
	var t mcp.Transport = &mcp.StdioTransport{}
	if in != os.Stdin || out != os.Stdout {
		t = &mcp.IOTransport{Reader: io.NopCloser(in), Writer: nopWriteCloser{out}}
	}
	err := srv.Run(ctx, t)
	if err == nil || errors.Is(err, io.EOF) || errors.Is(err, context.Canceled) {
		return nil // the client hung up, or we were told to stop
	}
	return err
}

type nopWriteCloser struct{ io.Writer }

func (nopWriteCloser) Close() error { return nil }
