package render

import (
	"fmt"
	"io"
	"strings"

	"github.com/sondehq/sonde/contracts"
	"github.com/sondehq/sonde/pkg/engine"
)

func printPlansRead(out io.Writer, r contracts.Record) {
	n := 0
	for _, s := range r.Steps {
		if s.Plan == nil {
			continue
		}
		if n == 0 {
			fmt.Fprintln(out, "Plans read (estimates only: described, never executed)")
		}
		n++
		head := fmt.Sprintf("%2d. plan", n)
		if id := stepCorrelation(s); id != "" {
			head += " " + Clip(id, 80)
		}
		fmt.Fprintf(out, "%s (%s, turn %d)\n", head, engineName(s.Plan.Engine), s.Turn)
		if sql := stepArg(s, "sql"); sql != "" {
			fmt.Fprintf(out, "    %s\n", Clip(sql, maxTextRunes))
		}
		writePlan(out, "    ", s.Plan)
	}
	if n > 0 {
		fmt.Fprintln(out)
	}
}

// writePlan prints a plan summary: the hypothetical index it assumed, each
// relation's access, the estimates (or that the engine gives none) and the
// steps the summary did not interpret.
func writePlan(out io.Writer, indent string, p *contracts.PlanSummary) {
	if p.HypotheticalIndex != "" {
		fmt.Fprintf(out, "%sas if this index existed (hypothetical, nothing was created): %s\n", indent, Clip(p.HypotheticalIndex, maxTextRunes))
	}
	if len(p.Access) == 0 {
		fmt.Fprintf(out, "%sno relation read\n", indent)
	} else {
		rows := make([][]string, 0, len(p.Access))
		for _, a := range p.Access {
			how := string(a.Access)
			if how == "" {
				how = string(contracts.AccessUnknown)
			}
			if a.Index != "" {
				how += " " + Clean(a.Index)
			}
			est := ""
			if a.Rows != nil {
				est = "~" + Number(*a.Rows) + " rows"
			}
			rows = append(rows, []string{Clean(a.Relation), Clean(how), est})
		}
		writeTable(out, indent, nil, rows, []bool{false, false, true})
	}
	fmt.Fprintf(out, "%s%s\n", indent, estimates(p))
	if len(p.Uninterpreted) > 0 {
		fmt.Fprintf(out, "%snot interpreted by the summary: %s\n", indent, boundedList(p.Uninterpreted))
	}
}

// estimates says what the engine estimated for the whole plan, or that it
// estimates nothing.
func estimates(p *contracts.PlanSummary) string {
	var parts []string
	if p.Cost != nil {
		parts = append(parts, "cost "+Number(*p.Cost))
	}
	if p.Rows != nil {
		parts = append(parts, "~"+Number(*p.Rows)+" rows")
	}
	line := "estimates: " + strings.Join(parts, ", ")
	if len(parts) == 0 {
		line = "no estimates (" + engineName(p.Engine) + ")"
	}
	if p.Note != "" {
		line += ": " + Clip(p.Note, maxTextRunes)
	}
	return line
}

// PlanLine is a plan in one line: each relation's access and the cost.
func PlanLine(p *contracts.PlanSummary) string {
	var parts []string
	for i, a := range p.Access {
		if i == 4 {
			parts = append(parts, fmt.Sprintf("… %d more", len(p.Access)-i))
			break
		}
		how := string(a.Access)
		if a.Index != "" {
			how += " " + a.Index
		}
		parts = append(parts, Clip(a.Relation, 40)+" "+Clip(how, 60))
	}
	line := strings.Join(parts, "; ")
	if line == "" {
		line = "no relation read"
	}
	if p.Cost != nil {
		line += " · cost " + Number(*p.Cost)
	} else if p.Rows == nil {
		line += " · no estimates (" + engineName(p.Engine) + ")"
	}
	if p.HypotheticalIndex != "" {
		line += " · with hypothetical index"
	}
	return line
}

// engineName is the engine's label (pkg/engine), "engine unknown" for a
// record that names none, or the token, bounded, for one the list lacks.
func engineName(e contracts.Engine) string {
	if e == "" {
		return "engine unknown"
	}
	if spec, ok := engine.Lookup(e); ok {
		return spec.Label
	}
	return Clip(string(e), 20)
}
