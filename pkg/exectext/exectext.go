// Package exectext renders an executor's reply as the text a model reads.
//
// The executor answers with data and a summary (contracts.ExecReply: the
// artifact's summary, the rows as one-line cells, a plan, a profile, a
// reading's or a schema page's figures); the orchestrator alone turns them
// into what the model sees, with this package. Everything the database wrote
// (values, names, plans, engine errors) is fenced (pkg/fence); the server's
// own lines around it say what was read, how to cite it and, within the
// request's ShowBytes, how much of it is shown.
package exectext

import (
	"encoding/json"
	"fmt"
	"strings"

	"github.com/sondehq/sonde/contracts"
	"github.com/sondehq/sonde/pkg/fence"
)

// Render is what the model reads of reply, the executor's answer to op
// asked with req: a result (within req.ShowBytes, zero: no bound), the
// failure of the statement or a refusal; "" for a reply that holds nothing
// to read (an inventory, a check). A run's refusals reach the model in the
// orchestrator's words (its tool-refused entry); Refusal is the same
// account for a reply read on its own.
func Render(op contracts.ExecOp, req contracts.ExecRequest, reply contracts.ExecReply) string {
	switch reply.Status {
	case contracts.ExecRefused:
		if reply.Refusal == nil {
			return ""
		}
		return Refusal(reply.Refusal)
	case contracts.ExecError:
		if reply.Error == nil {
			return ""
		}
		return Failure(req.ConnectionID, reply.Error)
	case contracts.ExecOK:
	default:
		return ""
	}
	sum := reply.Artifact
	if sum == nil {
		return ""
	}
	show := req.ShowBytes
	switch {
	case op == contracts.OpSchema && reply.Schema != nil:
		return schema(req, *sum, reply.Schema)
	case op == contracts.OpProfile && reply.Profile != nil:
		return profile(req, reply.Profile)
	case op == contracts.OpOperations && reply.Reading != nil:
		return reading(req, *sum, reply.Cells, reply.Reading)
	case op == contracts.OpExplain && reply.Plan != nil:
		return plan(req.ConnectionID, *sum, reply.Cells, reply.Plan, show)
	case op == contracts.OpRead:
		return rows(req.ConnectionID, *sum, reply.Cells, show)
	}
	return ""
}

// Failure is what the model reads of a statement that failed: the
// database's text fenced, or the executor's own account of a failure it
// raised itself (its words, none of the database's).
func Failure(connID string, e *contracts.DBError) string {
	if e.ByExecutor {
		return fmt.Sprintf("The executor could not run the statement (%s): %s.", e.Class, e.Message)
	}
	return fmt.Sprintf("The database failed the statement (%s):\n%s", e.Class,
		fence.Wrap("error from connection "+connID, e.Message))
}

// Refusal is a refusal in words. Its words are the executor's own, but a
// reason may quote the statement or the engine's parser (names, literals),
// so it is neutralised.
func Refusal(r *contracts.Refusal) string {
	return fence.Neutralise(fmt.Sprintf("Refused (%s): %s.\nFix: %s.", r.Code, r.Message, r.Fix))
}

// Line writes s on one line for a model to read: line breaks, tabs and
// other control characters escaped (\n, \r, \t, \uXXXX), the rest as is.
func Line(s string) string {
	if !strings.ContainsFunc(s, isControl) {
		return s
	}
	var b strings.Builder
	for _, r := range s {
		switch {
		case r == '\n':
			b.WriteString(`\n`)
		case r == '\r':
			b.WriteString(`\r`)
		case r == '\t':
			b.WriteString(`\t`)
		case isControl(r):
			fmt.Fprintf(&b, `\u%04x`, r)
		default:
			b.WriteRune(r)
		}
	}
	return b.String()
}

func isControl(r rune) bool {
	return r < 0x20 || r == 0x7f || (r >= 0x80 && r < 0xa0) || r == 0x2028 || r == 0x2029
}

// evidence is how the model cites an artifact, verbatim.
func evidence(cid string) string {
	b, _ := json.Marshal(struct {
		Source        string `json:"source"`
		CorrelationID string `json:"correlationId"`
	}{"artifact", cid})
	return string(b)
}

// plural counts n of word ("1 row", "3 rows").
func plural(n int, word string) string {
	if n == 1 {
		return "1 " + word
	}
	return fmt.Sprintf("%d %ss", n, word)
}
