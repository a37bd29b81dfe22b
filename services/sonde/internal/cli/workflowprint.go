package cli

// Rendering what the specialist workflows record, for a terminal: plans
// read, plan comparisons, recommendations, table profiles, operational
// readings and the presented answer (a table, or a chart drawn as a small
// text table of its series).
//
// Everything printed here may hold database text (names, values, plan
// steps) or model text, both of which an attacker can shape. Every such
// string passes through clean, which escapes control characters so nothing
// can move the cursor, recolour the terminal or forge a line of output, and
// every string and table is bounded.

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"math"
	"strconv"
	"strings"
	"unicode/utf8"

	"github.com/sondehq/sonde/contracts"
	"github.com/sondehq/sonde/services/gateway/client"
)

// Tool names as the ledger records them.
const (
	toolInspectPlan       = "inspect_plan"
	toolInspectOperations = "inspect_operations"
)

// Bounds of what a workflow section prints.
const (
	// maxTextRunes bounds one line of prose or one statement.
	maxTextRunes = 300
	// maxCellRunes bounds one table cell before the table is fitted.
	maxCellRunes = 40
	// tableWidth is the widest a table's line may be (without its indent);
	// the widest columns are narrowed until it fits.
	tableWidth = 150
	// minColumnWidth is as narrow as fitting makes a column.
	minColumnWidth = 8
	// maxTableRows and maxTableColumns bound the rows and columns printed.
	maxTableRows    = 20
	maxTableColumns = 8
	// maxChartRows and maxChartSeries bound a chart's table.
	maxChartRows   = 30
	maxChartSeries = 4
	// chartBarWidth is the cells the bars of all series share.
	chartBarWidth = 32
	// maxListItems bounds a list such as uninterpreted plan steps.
	maxListItems = 8
)

// artifactSource fetches one stored result of the run being printed. A nil
// source prints what the record holds and says the rows were not fetched.
type artifactSource func(correlationID string) (contracts.Artifact, error)

// runArtifacts fetches a run's results from the gateway.
func runArtifacts(ctx context.Context, c *client.Client, runID string) artifactSource {
	return func(correlationID string) (contracts.Artifact, error) {
		return c.Artifact(ctx, runID, correlationID)
	}
}

// printWorkflow prints each section the record holds, in the order a
// reader follows a run: plans, comparisons, recommendations, profiles,
// readings, then the answer. It prints nothing for a run that recorded none
// of them (an investigation that read no plan).
func printWorkflow(out io.Writer, r contracts.Record, fetch artifactSource) {
	printPlansRead(out, r)
	printComparisons(out, r.Comparisons)
	printRecommendations(out, r.Recommendations)
	printProfiles(out, r.Profiles)
	printReadings(out, r, fetch)
	printAnswer(out, r, fetch)
}

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
			head += " " + clip(id, 80)
		}
		fmt.Fprintf(out, "%s (%s, turn %d)\n", head, engineName(s.Plan.Engine), s.Turn)
		if sql := stepArg(s, "sql"); sql != "" {
			fmt.Fprintf(out, "    %s\n", clip(sql, maxTextRunes))
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
		fmt.Fprintf(out, "%sas if this index existed (hypothetical, nothing was created): %s\n", indent, clip(p.HypotheticalIndex, maxTextRunes))
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
				how += " " + clean(a.Index)
			}
			est := ""
			if a.Rows != nil {
				est = "~" + number(*a.Rows) + " rows"
			}
			rows = append(rows, []string{clean(a.Relation), clean(how), est})
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
		parts = append(parts, "cost "+number(*p.Cost))
	}
	if p.Rows != nil {
		parts = append(parts, "~"+number(*p.Rows)+" rows")
	}
	line := "estimates: " + strings.Join(parts, ", ")
	if len(parts) == 0 {
		line = "no estimates (" + engineName(p.Engine) + ")"
	}
	if p.Note != "" {
		line += ": " + clip(p.Note, maxTextRunes)
	}
	return line
}

// planLine is a plan in one line: each relation's access and the cost.
func planLine(p *contracts.PlanSummary) string {
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
		parts = append(parts, clip(a.Relation, 40)+" "+clip(how, 60))
	}
	line := strings.Join(parts, "; ")
	if line == "" {
		line = "no relation read"
	}
	if p.Cost != nil {
		line += " · cost " + number(*p.Cost)
	} else if p.Rows == nil {
		line += " · no estimates (" + engineName(p.Engine) + ")"
	}
	if p.HypotheticalIndex != "" {
		line += " · with hypothetical index"
	}
	return line
}

func printComparisons(out io.Writer, cs []contracts.PlanComparison) {
	if len(cs) == 0 {
		return
	}
	fmt.Fprintln(out, "Plan comparisons")
	for i, c := range cs {
		fmt.Fprintf(out, "%2d. before %s → after %s\n", i+1, clip(c.Before, 80), clip(c.After, 80))
		for _, side := range []struct {
			name, sql string
			plan      *contracts.PlanSummary
		}{{"before", c.BeforeSQL, c.BeforePlan}, {"after", c.AfterSQL, c.AfterPlan}} {
			fmt.Fprintf(out, "    %-6s %s\n", side.name+":", clip(side.sql, maxTextRunes))
			if side.plan != nil {
				fmt.Fprintf(out, "           %s\n", planLine(side.plan))
			}
		}
		if c.Summary != "" {
			fmt.Fprintf(out, "    server: %s\n", clip(c.Summary, 2*maxTextRunes))
		}
		fmt.Fprintln(out, "    Estimates only: these plans were described, not executed.")
	}
	fmt.Fprintln(out)
}

func printRecommendations(out io.Writer, rs []contracts.Recommendation) {
	if len(rs) == 0 {
		return
	}
	fmt.Fprintln(out, "Recommendations (recorded, never executed)")
	for i, r := range rs {
		fmt.Fprintf(out, "%2d. %s: recorded, never executed\n", i+1, clip(r.Kind, 20))
		fmt.Fprintf(out, "    %s\n", clip(r.Statement, maxTextRunes))
		if r.Rationale != "" {
			fmt.Fprintf(out, "    why: %s\n", clip(r.Rationale, maxTextRunes))
		}
		diagnosed := map[string]bool{}
		for _, id := range r.Diagnosed {
			diagnosed[id] = true
		}
		var cites []string
		for _, ref := range r.Evidence {
			switch ref.Source {
			case contracts.EvidenceArtifact:
				c := "artifact " + clip(ref.CorrelationID, 80)
				if diagnosed[ref.CorrelationID] {
					c += " (the plan it diagnosed)"
				}
				cites = append(cites, c)
			case contracts.EvidenceContextSnapshot:
				cites = append(cites, "schema snapshot "+clip(ref.Fingerprint, 80))
			}
		}
		if len(cites) > 0 {
			fmt.Fprintf(out, "    cites %s\n", strings.Join(cites, ", "))
		}
	}
	fmt.Fprintln(out)
}

func printProfiles(out io.Writer, ps []contracts.TableProfiled) {
	if len(ps) == 0 {
		return
	}
	fmt.Fprintln(out, "Table profiles (counts and shapes, never a value)")
	for i, tp := range ps {
		p := tp.Profile
		if p == nil {
			fmt.Fprintf(out, "%2d. %s (%s): no profile recorded, artifact %s\n", i+1, clip(tp.Table, 80), clip(tp.Depth, 20), clip(tp.CorrelationID, 80))
			continue
		}
		name := clip(qualified(p.Table), 120)
		head := fmt.Sprintf("%2d. %s", i+1, name)
		if tp.Table != "" && clip(tp.Table, 120) != name {
			head += fmt.Sprintf(" (asked as \"%s\")", clip(tp.Table, 80))
		}
		head += fmt.Sprintf(", depth %s, %d rows", clip(string(p.Depth), 20), p.Rows)
		if tp.CorrelationID != "" {
			head += ", artifact " + clip(tp.CorrelationID, 80)
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
				line := "      " + clip(string(f.Code), 30)
				if f.Column != "" {
					line += " " + clip(f.Column, 40)
				}
				fmt.Fprintf(out, "%s: %s\n", line, clip(f.Detail, maxTextRunes))
			}
		}
		if p.Uncovered > 0 {
			fmt.Fprintf(out, "    %d more columns not profiled; profile them with profile_table fromColumn \"%s\"\n", p.Uncovered, clip(p.NextColumn, 80))
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
		row := []string{clean(c.Name), clean(c.Type), present(c.Present, p.Rows)}
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
			fmt.Fprintf(out, "    distinct n/a for %s: %s\n", clip(c.Name, 40), clip(c.NoDistinct, 120))
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

func printReadings(out io.Writer, r contracts.Record, fetch artifactSource) {
	n := 0
	for _, s := range r.Steps {
		if s.Tool != toolInspectOperations || s.Artifact == nil {
			continue
		}
		if n == 0 {
			fmt.Fprintln(out, "Operational readings (each a moment, not a history)")
		}
		n++
		kind := stepArg(s, "kind")
		if kind == "" {
			kind = "reading"
		}
		head := fmt.Sprintf("%2d. %s", n, clip(kind, 40))
		if schema := stepArg(s, "schema"); schema != "" {
			head += " in schema " + clip(schema, 60)
		}
		head += fmt.Sprintf(", artifact %s, %d rows", clip(s.Artifact.CorrelationID, 80), s.Artifact.Rows)
		fmt.Fprintf(out, "%s: a moment, not a history\n", head)
		columns := s.Artifact.Columns
		if len(columns) == 0 {
			columns = contracts.OperationsColumns[contracts.OperationsKind(kind)]
		}
		if s.Artifact.Rows == 0 {
			fmt.Fprintf(out, "    no rows: nothing to report of this kind (columns %s)\n", columnNames(columns))
			continue
		}
		writeArtifactRows(out, "    ", s.Artifact.CorrelationID, columns, fetch)
	}
	if n > 0 {
		fmt.Fprintln(out)
	}
}

func printAnswer(out io.Writer, r contracts.Record, fetch artifactSource) {
	a := r.Answer
	if a == nil {
		return
	}
	var summary *contracts.ArtifactSummary
	for _, s := range r.Steps {
		if s.Artifact != nil && s.Artifact.CorrelationID == a.CorrelationID {
			summary = s.Artifact
		}
	}
	id := clip(a.CorrelationID, 80)
	chart := a.Presentation.Chart
	if a.Presentation.Kind == contracts.PresentChart && chart != nil {
		fmt.Fprintf(out, "Answer: a %s chart of artifact %s\n", clip(chart.Type, 20), id)
		fmt.Fprintf(out, "    \"%s\"\n", clip(chart.Caption, maxTextRunes))
		ys := make([]string, len(chart.Y))
		for i, y := range chart.Y {
			ys[i] = clip(y, 40)
		}
		fmt.Fprintf(out, "    x: %s · y: %s\n", clip(chart.X, 40), strings.Join(ys, ", "))
	} else {
		fmt.Fprintf(out, "Answer: a table, artifact %s\n", id)
	}
	if a.SQL != "" {
		fmt.Fprintf(out, "    %s\n", clip(a.SQL, maxTextRunes))
	}
	switch {
	case fetch == nil:
		fmt.Fprintf(out, "    rows not fetched: read them with GET /api/agent/runs/%s/artifacts/%s\n", clip(r.RunID, 80), id)
	case chart != nil && a.Presentation.Kind == contracts.PresentChart:
		art, err := fetch(a.CorrelationID)
		if err != nil {
			fmt.Fprintf(out, "    rows not available: %s\n", clip(err.Error(), maxTextRunes))
			break
		}
		writeChart(out, "    ", chart, art)
	default:
		var columns []contracts.Column
		if summary != nil {
			columns = summary.Columns
		}
		writeArtifactRows(out, "    ", a.CorrelationID, columns, fetch)
	}
	switch a.Handover {
	case contracts.HandoverAutoExecuted:
		fmt.Fprintf(out, "Handover: auto-executed: replay it as the editor does with: sonde handover %s\n", clip(r.RunID, 80))
	case contracts.HandoverApplied:
		fmt.Fprintln(out, "Handover: applied: the statement is offered to the editor, not run")
	case contracts.HandoverNone, "":
		fmt.Fprintln(out, "Handover: none (the run was not started with --auto-execute)")
	default:
		fmt.Fprintf(out, "Handover: %s\n", clip(string(a.Handover), 40))
	}
	if a.HandoverWarning != "" {
		fmt.Fprintf(out, "    warning: %s\n", clip(a.HandoverWarning, maxTextRunes))
	}
	fmt.Fprintln(out)
}

// writeArtifactRows fetches a result and prints its rows as a table,
// bounded; without a source it says where the rows are.
func writeArtifactRows(out io.Writer, indent, correlationID string, columns []contracts.Column, fetch artifactSource) {
	if fetch == nil {
		fmt.Fprintf(out, "%srows not fetched (columns %s)\n", indent, columnNames(columns))
		return
	}
	art, err := fetch(correlationID)
	if err != nil {
		fmt.Fprintf(out, "%srows not available: %s\n", indent, clip(err.Error(), maxTextRunes))
		return
	}
	if len(art.Columns) > 0 {
		columns = art.Columns
	}
	ncol := min(len(columns), maxTableColumns)
	header := make([]string, ncol)
	for i := range header {
		header[i] = clean(columns[i].Name)
	}
	var rows [][]string
	for i, row := range art.Data {
		if i == maxTableRows {
			break
		}
		cells := make([]string, ncol)
		for j := range cells {
			if j < len(row) {
				cells[j] = valueCell(row[j])
			}
		}
		rows = append(rows, cells)
	}
	right := make([]bool, ncol)
	for j := range right {
		right[j] = !textType(columns[j].Type) && numericColumn(art.Data, j)
	}
	writeTable(out, indent, header, rows, right)
	if len(art.Data) == 0 {
		fmt.Fprintf(out, "%sno rows\n", indent)
	}
	if len(art.Data) > maxTableRows {
		fmt.Fprintf(out, "%s… %d more rows not shown\n", indent, len(art.Data)-maxTableRows)
	}
	if len(columns) > maxTableColumns {
		fmt.Fprintf(out, "%s… %d more columns not shown\n", indent, len(columns)-maxTableColumns)
	}
	if art.Truncated {
		fmt.Fprintf(out, "%sthe result was truncated when it was read (%s)\n", indent, boundedList(art.TruncatedBy))
	}
}

// writeChart prints a chart as a text table: the x value, then each
// series' value with a bar scaled to that series' largest magnitude.
func writeChart(out io.Writer, indent string, spec *contracts.ChartSpec, art contracts.Artifact) {
	index := map[string]int{}
	for i, c := range art.Columns {
		index[c.Name] = i
	}
	xi, ok := index[spec.X]
	if !ok {
		fmt.Fprintf(out, "%sthe result has no column \"%s\"\n", indent, clip(spec.X, 40))
		return
	}
	series := spec.Y
	if len(series) > maxChartSeries {
		series = series[:maxChartSeries]
	}
	width := max(6, chartBarWidth/max(1, len(series)))
	data := art.Data
	if len(data) > maxChartRows {
		data = data[:maxChartRows]
	}
	header := []string{clean(spec.X)}
	right := []bool{numericColumn(data, xi)}
	type col struct {
		i    int
		peak float64
		sum  float64
	}
	var cols []col
	for _, y := range series {
		yi, ok := index[y]
		if !ok {
			fmt.Fprintf(out, "%sthe result has no column \"%s\"\n", indent, clip(y, 40))
			return
		}
		c := col{i: yi}
		for _, row := range data {
			if v, ok := numeric(at(row, yi)); ok {
				c.peak = math.Max(c.peak, math.Abs(v))
				c.sum += v
			}
		}
		cols = append(cols, c)
		header = append(header, clean(y), "")
		right = append(right, true, false)
	}
	pie := spec.Type == "pie"
	var rows [][]string
	for _, row := range data {
		cells := []string{valueCell(at(row, xi))}
		for _, c := range cols {
			v, ok := numeric(at(row, c.i))
			text := valueCell(at(row, c.i))
			if ok && pie && c.sum > 0 {
				text += fmt.Sprintf(" (%.1f%%)", 100*v/c.sum)
			}
			b := ""
			if ok {
				b = bar(v, c.peak, width)
			}
			cells = append(cells, text, b)
		}
		rows = append(rows, cells)
	}
	writeTable(out, indent, header, rows, right)
	if len(art.Data) > maxChartRows {
		fmt.Fprintf(out, "%s… %d more rows not shown\n", indent, len(art.Data)-maxChartRows)
	}
	if len(spec.Y) > maxChartSeries {
		fmt.Fprintf(out, "%s… %d more series not shown\n", indent, len(spec.Y)-maxChartSeries)
	}
}

// bar draws v against peak in at most width cells, with eighths for the
// remainder; a negative value is drawn shaded.
func bar(v, peak float64, width int) string {
	if peak <= 0 || math.IsNaN(v) || math.IsInf(v, 0) {
		return ""
	}
	eighths := int(math.Round(math.Abs(v) / peak * float64(width*8)))
	eighths = min(eighths, width*8)
	if v < 0 {
		return strings.Repeat("▒", (eighths+7)/8)
	}
	s := strings.Repeat("█", eighths/8)
	if r := eighths % 8; r > 0 {
		s += string([]rune("▏▎▍▌▋▊▉")[r-1])
	}
	return s
}

// writeTable prints rows under an optional header as aligned columns. Cells
// must already be clean; the widest columns are narrowed (their cells
// clipped with a marker) until a line fits tableWidth.
func writeTable(out io.Writer, indent string, header []string, rows [][]string, right []bool) {
	ncol := len(header)
	for _, r := range rows {
		ncol = max(ncol, len(r))
	}
	if ncol == 0 {
		return
	}
	widths := make([]int, ncol)
	measure := func(r []string) {
		for i, c := range r {
			widths[i] = max(widths[i], min(utf8.RuneCountInString(c), maxCellRunes))
		}
	}
	measure(header)
	for _, r := range rows {
		measure(r)
	}
	for {
		total := 2 * (ncol - 1)
		widest := 0
		for i, w := range widths {
			total += w
			if w > widths[widest] {
				widest = i
			}
		}
		if total <= tableWidth || widths[widest] <= minColumnWidth {
			break
		}
		widths[widest]--
	}
	line := func(r []string) {
		var b strings.Builder
		b.WriteString(indent)
		for i := 0; i < ncol; i++ {
			c := ""
			if i < len(r) {
				c = cut(r[i], widths[i])
			}
			pad := strings.Repeat(" ", widths[i]-utf8.RuneCountInString(c))
			if i < len(right) && right[i] {
				b.WriteString(pad + c)
			} else {
				b.WriteString(c + pad)
			}
			if i < ncol-1 {
				b.WriteString("  ")
			}
		}
		fmt.Fprintln(out, strings.TrimRight(b.String(), " "))
	}
	if len(header) > 0 {
		line(header)
	}
	for _, r := range rows {
		line(r)
	}
}

// valueCell renders one value of a stored result, clean and bounded.
func valueCell(v any) string {
	switch v := v.(type) {
	case nil:
		return "NULL"
	case string:
		return clip(v, maxCellRunes)
	case float64:
		return number(v)
	case json.Number:
		return clip(v.String(), maxCellRunes)
	case bool:
		return strconv.FormatBool(v)
	case map[string]any:
		if v["type"] == "blob" {
			if n, ok := v["bytes"].(float64); ok {
				return fmt.Sprintf("<blob %s bytes>", number(n))
			}
			return "<blob>"
		}
	}
	b, err := json.Marshal(v)
	if err != nil {
		return "?"
	}
	return clip(string(b), maxCellRunes)
}

// numeric reads a value as a number: a JSON number or a string that parses
// as one (exact numerics arrive as text).
func numeric(v any) (float64, bool) {
	switch v := v.(type) {
	case float64:
		return v, true
	case json.Number:
		f, err := v.Float64()
		return f, err == nil
	case string:
		f, err := strconv.ParseFloat(strings.TrimSpace(v), 64)
		return f, err == nil && !math.IsNaN(f) && !math.IsInf(f, 0)
	}
	return 0, false
}

// numericColumn reports whether every non-null value of column j is a
// number, so the column is right-aligned.
func numericColumn(data [][]any, j int) bool {
	seen := false
	for _, row := range data {
		v := at(row, j)
		if v == nil {
			continue
		}
		if _, ok := numeric(v); !ok {
			return false
		}
		seen = true
	}
	return seen
}

// textType reports whether a declared column type holds text, so digits in
// it (a session id) stay left-aligned.
func textType(t string) bool {
	t = strings.ToLower(t)
	for _, k := range []string{"char", "text", "string", "clob", "uuid", "name"} {
		if strings.Contains(t, k) {
			return true
		}
	}
	return false
}

func at(row []any, i int) any {
	if i < len(row) {
		return row[i]
	}
	return nil
}

// number prints a figure without exponent where it is of a sensible size.
func number(f float64) string {
	if math.Abs(f) < 1e15 {
		return strconv.FormatFloat(f, 'f', -1, 64)
	}
	return strconv.FormatFloat(f, 'g', 6, 64)
}

func columnNames(cs []contracts.Column) string {
	names := make([]string, len(cs))
	for i, c := range cs {
		names[i] = c.Name
	}
	if len(names) == 0 {
		return "unknown"
	}
	return boundedList(names)
}

// boundedList joins at most maxListItems strings, each clean and bounded.
func boundedList(ss []string) string {
	var parts []string
	for i, s := range ss {
		if i == maxListItems {
			parts = append(parts, fmt.Sprintf("… %d more", len(ss)-i))
			break
		}
		parts = append(parts, clip(s, 60))
	}
	return strings.Join(parts, ", ")
}

func qualified(n contracts.NameRef) string {
	if n.Schema == "" {
		return n.Name
	}
	return n.Schema + "." + n.Name
}

func engineName(e contracts.Engine) string {
	switch e {
	case contracts.EnginePostgres:
		return "PostgreSQL"
	case contracts.EngineSQLite:
		return "SQLite"
	case contracts.EngineDuckDB:
		return "DuckDB"
	case contracts.EngineMSSQL:
		return "SQL Server"
	case "":
		return "engine unknown"
	}
	return clip(string(e), 20)
}

// stepArg is one string argument of a step as the model sent it.
func stepArg(s contracts.Step, name string) string {
	var args map[string]any
	if json.Unmarshal(s.Arguments, &args) != nil {
		return ""
	}
	v, _ := args[name].(string)
	return v
}

func stepCorrelation(s contracts.Step) string {
	if s.Artifact != nil {
		return s.Artifact.CorrelationID
	}
	return s.CorrelationID
}

// clip is s on one line, clean, and at most n runes long (the cut marked
// with an ellipsis).
func clip(s string, n int) string {
	return cut(clean(strings.Join(strings.Fields(s), " ")), n)
}

// cut shortens s to at most n runes, marking the cut with an ellipsis.
func cut(s string, n int) string {
	if n <= 0 || utf8.RuneCountInString(s) <= n {
		return s
	}
	r := []rune(s)
	return string(r[:n-1]) + "…"
}

// clean escapes what a terminal would act on rather than show: C0 and C1
// control characters (escape sequences, carriage returns, newlines), DEL,
// the Unicode line and paragraph separators, the bidirectional overrides
// that reorder what is shown, and bytes that are not UTF-8. What is left
// prints as itself.
func clean(s string) string {
	var b strings.Builder
	for i := 0; i < len(s); {
		r, size := utf8.DecodeRuneInString(s[i:])
		switch {
		case r == utf8.RuneError && size == 1:
			fmt.Fprintf(&b, `\x%02x`, s[i])
		case r == '\n':
			b.WriteString(`\n`)
		case r == '\r':
			b.WriteString(`\r`)
		case r == '\t':
			b.WriteString(`\t`)
		case r < 0x20 || r == 0x7f || (r >= 0x80 && r < 0xa0):
			fmt.Fprintf(&b, `\x%02x`, r)
		case r == 0x061c, r == 0x200e, r == 0x200f, r == 0x2028, r == 0x2029,
			r >= 0x202a && r <= 0x202e, r >= 0x2066 && r <= 0x2069:
			fmt.Fprintf(&b, `\u%04x`, r)
		default:
			b.WriteRune(r)
		}
		i += size
	}
	return b.String()
}

// cleanLines is clean for text whose line breaks and tabs are its layout (a
// drafted statement, a claim): they stay, everything else clean escapes is
// escaped.
func cleanLines(s string) string {
	lines := strings.Split(s, "\n")
	for i, l := range lines {
		parts := strings.Split(l, "\t")
		for j, p := range parts {
			parts[j] = clean(p)
		}
		lines[i] = strings.Join(parts, "\t")
	}
	return strings.Join(lines, "\n")
}
