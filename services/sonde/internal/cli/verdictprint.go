package cli

import (
	"fmt"
	"io"
	"strings"

	"github.com/sondehq/sonde/contracts"
	"github.com/sondehq/sonde/pkg/verdict"
	"github.com/sondehq/sonde/services/gateway/api"
	"github.com/sondehq/sonde/services/sonde/internal/render"
)

// figuresLine is the verifier's check of one claim's figures on one line:
// each figure as the claim wrote it (model text, cleaned), what the
// verifier found of it and where. An unverified figure is written in
// capitals, so it reads without colour.
func figuresLine(c contracts.ClaimCheck) string {
	parts := make([]string, 0, len(c.Figures))
	for _, f := range c.Figures {
		text := render.Clip(f.Text, 60)
		src := render.Clip(f.Source, 80)
		switch f.Status {
		case contracts.FigureFound:
			parts = append(parts, fmt.Sprintf("%s found in %s", text, src))
		case contracts.FigureDerived:
			s := text + " derived"
			if src != "" {
				s += " from " + src
			}
			if f.How != "" {
				s += " (" + render.Clip(f.How, 120) + ")"
			}
			parts = append(parts, s)
		case contracts.FigureUnverified:
			parts = append(parts, fmt.Sprintf("%s NOT FOUND in the results it cites", text))
		default:
			parts = append(parts, fmt.Sprintf("%s %s", text, render.Clip(string(f.Status), 30)))
		}
	}
	return "figures: " + strings.Join(parts, "; ")
}

// claimChecks indexes a verdict's figure checks by claim position (from 1).
func claimChecks(v *contracts.GoalVerdict) map[int]contracts.ClaimCheck {
	out := map[int]contracts.ClaimCheck{}
	if v == nil {
		return out
	}
	for _, c := range v.Claims {
		if len(c.Figures) > 0 {
			out[c.Claim] = c
		}
	}
	return out
}

// unmetSentence says what a shortfall code means, in the verifier's words;
// "" when it has none for the code (the code is shown alone).
func unmetSentence(code string) string { return verdict.Explain(code) }

// printVerdict prints the verdict line and, under it, each unmet code with
// what it means.
func printVerdict(out io.Writer, v *contracts.GoalVerdict) {
	if v == nil {
		return
	}
	line := fmt.Sprintf("Verdict: %s (%s)", v.Outcome, v.Rule)
	if len(v.Unmet) > 0 {
		line += ", unmet: " + strings.Join(v.Unmet, ", ")
	}
	fmt.Fprintln(out, line)
	for _, code := range v.Unmet {
		if s := unmetSentence(code); s != "" {
			fmt.Fprintf(out, "  %s: %s\n", code, s)
		}
	}
}

// statusLine is the run's status and stop reason, the reason in words.
func statusLine(r contracts.Record) string {
	status := fmt.Sprintf("Status: %s (%s)", r.Status, r.StopReason)
	if r.Reason != "" {
		status += ", reason " + string(r.Reason)
	}
	if s := api.StopSentence(r.StopReason); s != "" && r.StopReason != contracts.StopReportComposed {
		status += ": " + s
	}
	return status
}

// printQuestion prints the question a run stopped on (model text, cleaned
// line by line) and the command that answers it: the same connection,
// workflow and mode, continuing this run's conversation.
func printQuestion(out io.Writer, r contracts.Record, server string) {
	if r.StopReason != contracts.StopQuestion && r.Question == "" {
		return
	}
	fmt.Fprintln(out, "Question")
	q := strings.TrimSpace(r.Question)
	if q == "" {
		fmt.Fprintln(out, "  (the model's question was not recorded)")
	} else {
		for _, l := range strings.Split(q, "\n") {
			fmt.Fprintf(out, "  > %s\n", render.Clean(l))
		}
	}
	fmt.Fprintln(out, "Answer it by continuing the conversation (your answer is the objective):")
	fmt.Fprintf(out, "  %s\n", continueCommand(r, server))
	fmt.Fprintln(out)
}

// continueCommand is the sonde ask command that continues r's conversation.
func continueCommand(r contracts.Record, server string) string {
	cmd := "sonde ask"
	if server != "" {
		cmd += " --server " + shellWord(server)
	}
	cmd += " --connection " + shellWord(r.ConnectionID)
	if r.WorkflowType != "" && r.WorkflowType != contracts.WorkflowInvestigation {
		cmd += " --workflow " + shellWord(string(r.WorkflowType))
	}
	if r.Mode != "" && r.Mode != contracts.ModeAgent {
		cmd += " --mode " + shellWord(string(r.Mode))
	}
	return cmd + " --continue " + shellWord(r.RunID) + ` "YOUR ANSWER"`
}

// shellWord quotes s for a POSIX shell when it holds anything but the
// characters an id or a URL is made of.
func shellWord(s string) string {
	plain := s != ""
	for _, c := range s {
		if !(c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || strings.ContainsRune("-_.:/@%+=,", c)) {
			plain = false
			break
		}
	}
	if plain {
		return s
	}
	return "'" + strings.ReplaceAll(render.Clean(s), "'", `'\''`) + "'"
}
