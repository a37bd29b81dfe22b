package cli

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"strings"

	"github.com/spf13/cobra"

	"github.com/sondehq/sonde/contracts"
	"github.com/sondehq/sonde/services/modelturn"
)

// Exit statuses of sonde probe beyond ExitOK and ExitError.
const (
	// ExitIncapable: the probe established that the model cannot drive an
	// agent run.
	ExitIncapable = ExitRefused
)

func newProbeCmd() *cobra.Command {
	var jsonOut bool
	cmd := &cobra.Command{
		Use:   "probe",
		Short: "Probe the configured model: does it call tools, honour a schema, stream?",
		Long: `probe runs modelturn's capability probe in this process against the model the
LLM_* variables configure (LLM_PROVIDER, LLM_MODEL, LLM_API_KEY, LLM_API_URL;
AGENT_MODEL_TURN_TIMEOUT_MS and AGENT_MODEL_TUNING_PATH as the service reads
them) and prints the verdict: what it watched succeed, what it could not
establish (missing) and what it watched fail (disproved). It makes one model
call.

` + exitTable + `
Here: 0 when every capability was established, 2 when the probe established
that the model cannot drive an agent run (refused), 1 when it reached no
verdict (no model configured, a bad key, a quota, an unreachable server).`,
		Args: usageArgs(cobra.NoArgs),
		RunE: func(cmd *cobra.Command, _ []string) error {
			return probe(cmd.Context(), cmd.OutOrStdout(), cmd.ErrOrStderr(), jsonOut)
		},
	}
	cmd.Flags().BoolVar(&jsonOut, "json", false, "print the probe's reply as JSON")
	return cmd
}

func probe(ctx context.Context, out, logOut io.Writer, jsonOut bool) error {
	cfg := modelturn.ConfigFromEnv()
	cfg.Logger = slog.New(slog.NewTextHandler(logOut, &slog.HandlerOptions{Level: slog.LevelWarn}))
	s, err := modelturn.New(cfg)
	if err != nil {
		return &exitError{code: ExitError, err: err}
	}
	defer func() { _ = s.Stop(context.Background()) }()
	reply := s.Probe(ctx, contracts.ModelProbeRequest{Capabilities: true})
	if jsonOut {
		enc := json.NewEncoder(out)
		enc.SetIndent("", "  ")
		if err := enc.Encode(reply); err != nil {
			return err
		}
	} else {
		printProbe(out, reply)
	}
	switch {
	case reply.Failure != nil:
		return &exitError{code: ExitError, err: errors.New("the probe reached no verdict")}
	case len(reply.Missing) > 0:
		return &exitError{code: ExitIncapable}
	}
	return nil
}

func printProbe(out io.Writer, r contracts.ModelProbeReply) {
	model := r.Provider + " " + r.Model
	if r.Demo {
		model += " (DEMONSTRATION)"
	}
	fmt.Fprintf(out, "model:      %s\n", strings.TrimSpace(model))
	if r.Failure != nil {
		fmt.Fprintf(out, "verdict:    none (%s): %s\n", r.Failure.Reason, r.Failure.Message)
	} else {
		verdict := "can drive an agent run"
		if len(r.Missing) > 0 {
			verdict = "cannot drive an agent run"
		}
		fmt.Fprintf(out, "verdict:    %s\n", verdict)
		fmt.Fprintf(out, "verified:   %s\n", list(r.Verified))
		fmt.Fprintf(out, "missing:    %s\n", list(r.Missing))
		fmt.Fprintf(out, "disproved:  %s\n", list(r.Disproved))
	}
	if r.Message != "" {
		fmt.Fprintf(out, "            %s\n", r.Message)
	}
	if t := r.Tuning; t != nil {
		line := t.State + ", settings " + t.SettingsSource
		if t.Path != "" {
			line += " (" + t.Path + ")"
		}
		if t.Reason != "" {
			line += ": " + t.Reason
		}
		fmt.Fprintf(out, "tuning:     %s\n", line)
	}
}

func list(xs []string) string {
	if len(xs) == 0 {
		return "-"
	}
	return strings.Join(xs, ", ")
}
