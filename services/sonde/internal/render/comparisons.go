package render

import (
	"fmt"
	"io"

	"github.com/sondehq/sonde/contracts"
)

func printComparisons(out io.Writer, cs []contracts.PlanComparison) {
	if len(cs) == 0 {
		return
	}
	fmt.Fprintln(out, "Plan comparisons")
	for i, c := range cs {
		fmt.Fprintf(out, "%2d. before %s → after %s\n", i+1, Clip(c.Before, 80), Clip(c.After, 80))
		for _, side := range []struct {
			name, sql string
			plan      *contracts.PlanSummary
		}{{"before", c.BeforeSQL, c.BeforePlan}, {"after", c.AfterSQL, c.AfterPlan}} {
			fmt.Fprintf(out, "    %-6s %s\n", side.name+":", Clip(side.sql, maxTextRunes))
			if side.plan != nil {
				fmt.Fprintf(out, "           %s\n", PlanLine(side.plan))
			}
		}
		if c.Summary != "" {
			fmt.Fprintf(out, "    server: %s\n", Clip(c.Summary, 2*maxTextRunes))
		}
		fmt.Fprintln(out, "    Estimates only: these plans were described, not executed.")
	}
	fmt.Fprintln(out)
}
