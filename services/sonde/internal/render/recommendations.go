package render

import (
	"fmt"
	"io"
	"strings"

	"github.com/sondehq/sonde/contracts"
)

func printRecommendations(out io.Writer, rs []contracts.Recommendation) {
	if len(rs) == 0 {
		return
	}
	fmt.Fprintln(out, "Recommendations (recorded, never executed)")
	for i, r := range rs {
		fmt.Fprintf(out, "%2d. %s: recorded, never executed\n", i+1, Clip(r.Kind, 20))
		fmt.Fprintf(out, "    %s\n", Clip(r.Statement, maxTextRunes))
		if r.Rationale != "" {
			fmt.Fprintf(out, "    why: %s\n", Clip(r.Rationale, maxTextRunes))
		}
		diagnosed := map[string]bool{}
		for _, id := range r.Diagnosed {
			diagnosed[id] = true
		}
		var cites []string
		for _, ref := range r.Evidence {
			switch ref.Source {
			case contracts.EvidenceArtifact:
				c := "artifact " + Clip(ref.CorrelationID, 80)
				if diagnosed[ref.CorrelationID] {
					c += " (the plan it diagnosed)"
				}
				cites = append(cites, c)
			case contracts.EvidenceContextSnapshot:
				cites = append(cites, "schema snapshot "+Clip(ref.Fingerprint, 80))
			}
		}
		if len(cites) > 0 {
			fmt.Fprintf(out, "    cites %s\n", strings.Join(cites, ", "))
		}
	}
	fmt.Fprintln(out)
}
