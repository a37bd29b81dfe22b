package render

import (
	"fmt"
	"io"
	"strconv"

	"github.com/sondehq/sonde/contracts"
)

func printProfiles(out io.Writer, ps []contracts.TableProfiled) {
	if len(ps) == 0 {
		return
	}
	fmt.Fprintln(out, "Table profiles (counts and shapes, never a value)")
	for i, tp := range ps {
		p := tp.Profile
		if p == nil {
			fmt.Fprintf(out, "%2d. %s (%s): no profile recorded, artifact %s\n", i+1, Clip(tp.Table, 80), Clip(tp.Depth, 20), Clip(tp.CorrelationID, 80))
			continue
		}
		name := Clip(qualified(p.Table), 120)
		head := fmt.Sprintf("%2d. %s", i+1, name)
		if tp.Table != "" && Clip(tp.Table, 120) != name {
			head += fmt.Sprintf(" (asked as \"%s\")", Clip(tp.Table, 80))
		}
		head += fmt.Sprintf(", depth %s, %d rows", Clip(string(p.Depth), 20), p.Rows)
		if tp.CorrelationID != "" {
			head += ", artifact " + Clip(tp.CorrelationID, 80)
		}
		fmt.Fprintln(out, head)
		if p.Sampled {
			fmt.Fprintf(out, "    sampled: the counts are over the first %d rows of a large table\n", p.SampleRows)
		}
		writeProfileColumns(out, p)
		if len(p.Findings) == 0 {
			fmt.Fprintln(out, "    findings: none")
		} else {
			fmt.Fprintln(out, "    findings:")
			for j, f := range p.Findings {
				if j == maxTableRows {
					fmt.Fprintf(out, "      … %d more findings not shown\n", len(p.Findings)-j)
					break
				}
				line := "      " + Clip(string(f.Code), 30)
				if f.Column != "" {
					line += " " + Clip(f.Column, 40)
				}
				fmt.Fprintf(out, "%s: %s\n", line, Clip(f.Detail, maxTextRunes))
			}
		}
		if p.Uncovered > 0 {
			fmt.Fprintf(out, "    %d more columns not profiled; profile them with profile_table fromColumn \"%s\"\n", p.Uncovered, Clip(p.NextColumn, 80))
		}
	}
	fmt.Fprintln(out)
}

// writeProfileColumns prints a profile's per-column counts, with the
// distinct and pattern columns only where the profile measured them.
func writeProfileColumns(out io.Writer, p *contracts.TableProfile) {
	if len(p.Columns) == 0 {
		fmt.Fprintln(out, "    no columns profiled")
		return
	}
	var hasDistinct, hasPattern bool
	for _, c := range p.Columns {
		hasDistinct = hasDistinct || c.Distinct != nil || c.NoDistinct != ""
		hasPattern = hasPattern || c.EmailLike != nil || c.DigitRun != nil
	}
	header := []string{"column", "type", "present"}
	right := []bool{false, false, true}
	if hasDistinct {
		header, right = append(header, "distinct"), append(right, true)
	}
	if hasPattern {
		header, right = append(header, "email-like", "digit-run"), append(right, true, true)
	}
	var rows [][]string
	for i, c := range p.Columns {
		if i == contracts.MaxProfileColumns {
			break
		}
		row := []string{Clean(c.Name), Clean(c.Type), present(c.Present, p.Rows)}
		if hasDistinct {
			d := count(c.Distinct)
			if c.Distinct == nil && c.NoDistinct != "" {
				d = "n/a"
			}
			row = append(row, d)
		}
		if hasPattern {
			row = append(row, count(c.EmailLike), count(c.DigitRun))
		}
		rows = append(rows, row)
	}
	writeTable(out, "    ", header, rows, right)
	if len(p.Columns) > contracts.MaxProfileColumns {
		fmt.Fprintf(out, "    … %d more columns not shown\n", len(p.Columns)-contracts.MaxProfileColumns)
	}
	for _, c := range p.Columns {
		if c.Distinct == nil && c.NoDistinct != "" {
			fmt.Fprintf(out, "    distinct n/a for %s: %s\n", Clip(c.Name, 40), Clip(c.NoDistinct, 120))
		}
	}
}

// present is the share of rows holding a value.
func present(n, rows int64) string {
	if rows <= 0 {
		return strconv.FormatInt(n, 10)
	}
	return strconv.FormatFloat(100*float64(n)/float64(rows), 'f', 1, 64) + "%"
}

func count(n *int64) string {
	if n == nil {
		return "-"
	}
	return strconv.FormatInt(*n, 10)
}
