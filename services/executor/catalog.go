package executor

import (
	"context"
	"fmt"
	"strings"
	"time"

	"github.com/sondehq/sonde/contracts"
	enginespec "github.com/sondehq/sonde/pkg/engine"
	"github.com/sondehq/sonde/pkg/grounding"
	"github.com/sondehq/sonde/services/executor/internal/engine"
	"github.com/sondehq/sonde/services/executor/internal/refuse"
)

// describeAtOnce is the most relations a schema read describes in full;
// a listing of more comes back as a page of names.
const describeAtOnce = 20

// inlineInventoryBytes is the largest encoded inventory an inventory reply
// carries itself; a larger one travels in its artifact only (the object
// store chunks it), so a reply never passes a NATS message limit.
const inlineInventoryBytes = 256 << 10

// maxSelector bounds each name a schema or inventory request narrows by: a
// longer one names nothing a catalog holds, and a pattern is matched against
// every relation.
const maxSelector = 256

// selectionProblem refuses a request whose names cannot be a selection.
func selectionProblem(req *contracts.ExecRequest) *contracts.Refusal {
	for _, f := range []struct{ name, v string }{{"schema", req.Schema}, {"table", req.Table}, {"pattern", req.Pattern}, {"after", req.After}} {
		if len(f.v) > maxSelector {
			return refuse.New(refuse.BadRequest, fmt.Sprintf("the %s argument is %d bytes, more than %d", f.name, len(f.v), maxSelector),
				"name a table, a schema or a shorter pattern such as *word*")
		}
	}
	return nil
}

// selection is what a schema or inventory request narrows to.
type selection struct {
	schema, table, pattern, after string
}

func selectionOf(req *contracts.ExecRequest) selection {
	// A SQL LIKE wildcard is read as the glob's: models write both.
	return selection{schema: req.Schema, table: req.Table, pattern: strings.ReplaceAll(req.Pattern, "%", "*"), after: req.After}
}

// matches reports whether r is selected. Names compare case-insensitively:
// a lookup that finds "Genre" for "genre" shows more, never less, and the
// listing names each relation exactly as the catalog stores it.
func (sel selection) matches(r contracts.Relation) bool {
	if sel.schema != "" && !strings.EqualFold(sel.schema, r.Schema) {
		return false
	}
	// "sales.orders" names a table in a schema; a name that holds a dot
	// itself still matches as a name.
	if sel.table != "" && !strings.EqualFold(sel.table, r.Name) && !strings.EqualFold(sel.table, r.QualifiedName()) {
		return false
	}
	if sel.pattern != "" {
		subject := r.Name
		if strings.Contains(sel.pattern, ".") {
			subject = r.QualifiedName()
		}
		if !glob(strings.ToLower(sel.pattern), strings.ToLower(subject)) {
			return false
		}
	}
	return true
}

// glob matches s against a pattern of '*' (any run) and '?' (one character).
func glob(pattern, s string) bool {
	p, t := []rune(pattern), []rune(s)
	pi, ti, star, mark := 0, 0, -1, 0
	for ti < len(t) {
		switch {
		case pi < len(p) && (p[pi] == '?' || p[pi] == t[ti]):
			pi++
			ti++
		case pi < len(p) && p[pi] == '*':
			star, mark = pi, ti
			pi++
		case star >= 0:
			pi, mark = star+1, mark+1
			ti = mark
		default:
			return false
		}
	}
	for pi < len(p) && p[pi] == '*' {
		pi++
	}
	return pi == len(p)
}

// listing is the selected relations of one catalog read and what it cost.
type listing struct {
	matched    []contracts.Relation
	unreadable int
	cost       engine.Catalog
	// readable holds every readable relation's schema.name, selected or
	// not: a foreign key to anything else is dropped, so no description
	// names a relation the patterns hide. Folded where the engine folds
	// names (a SQLite REFERENCES clause may spell the parent otherwise).
	readable map[string]bool
	fold     bool
}

func (l *listing) key(schema, name string) string {
	if l.fold {
		return strings.ToLower(schema + "." + name)
	}
	return schema + "." + name
}

func (l *listing) spend(c engine.Catalog) {
	l.cost.SQL = append(l.cost.SQL, c.SQL...)
	l.cost.Duration += c.Duration
	l.cost.Statements += c.Statements
	if c.StatisticsSource != "" {
		l.cost.StatisticsSource = c.StatisticsSource
	}
}

// list reads the relation names and keeps the selected ones.
func list(ctx context.Context, cat engine.Cataloger, ereq engine.Request, sel selection, fold bool) (*listing, error) {
	c, err := cat.Relations(ctx, ereq)
	l := &listing{unreadable: c.Unreadable, readable: make(map[string]bool, len(c.Relations)), fold: fold}
	l.spend(c)
	if err != nil {
		return l, err
	}
	for _, r := range c.Relations {
		l.readable[l.key(r.Schema, r.Name)] = true
		if sel.matches(r) {
			l.matched = append(l.matched, r)
		}
	}
	return l, nil
}

// from returns where a page that continues after the relation named after
// starts.
func from(rels []contracts.Relation, after string) int {
	if after == "" {
		return 0
	}
	for i, r := range rels {
		if r.QualifiedName() == after {
			return i + 1
		}
	}
	for i, r := range rels {
		if r.QualifiedName() > after {
			return i
		}
	}
	return len(rels)
}

// describe fills in the window's details.
func (l *listing) describe(ctx context.Context, cat engine.Cataloger, ereq engine.Request, window []contracts.Relation) ([]contracts.Relation, error) {
	if len(window) == 0 {
		return nil, nil
	}
	c, err := cat.Describe(ctx, ereq, window)
	l.spend(c)
	for i := range c.Relations {
		r := &c.Relations[i]
		kept := r.ForeignKeys[:0]
		for _, fk := range r.ForeignKeys {
			if l.readable[l.key(fk.RefSchema, fk.RefName)] {
				kept = append(kept, fk)
			}
		}
		r.ForeignKeys = kept
	}
	return c.Relations, err
}

// inventory answers OpInventory: the selected relations described, at most
// MaxObjects of them (DefaultInventoryObjects), the rest counted and
// continued by Next.
func (s *Service) inventory(ctx context.Context, cat engine.Cataloger, req *contracts.ExecRequest, ereq engine.Request) (contracts.Artifact, *contracts.Inventory, engine.Catalog, error) {
	limit := req.MaxObjects
	if limit <= 0 || limit > contracts.DefaultInventoryObjects {
		limit = contracts.DefaultInventoryObjects
	}
	l, err := list(ctx, cat, ereq, selectionOf(req), enginespec.FoldsCase(s.engine))
	if err != nil {
		return contracts.Artifact{}, nil, l.cost, err
	}
	start := from(l.matched, req.After)
	end := min(start+limit, len(l.matched))
	rels, err := l.describe(ctx, cat, ereq, l.matched[start:end])
	if err != nil {
		return contracts.Artifact{}, nil, l.cost, err
	}
	inv := &contracts.Inventory{
		Engine: s.engine, Relations: rels, Total: len(l.matched), Unreadable: l.unreadable,
		Limit: limit, StatisticsSource: l.cost.StatisticsSource,
	}
	if inv.Relations == nil {
		inv.Relations = []contracts.Relation{}
	}
	if end < len(l.matched) {
		inv.Truncated, inv.Next = true, l.matched[end-1].QualifiedName()
	}
	art := contracts.Artifact{
		ArtifactSummary: contracts.ArtifactSummary{CorrelationID: req.CorrelationID, Columns: inventoryColumns, Rows: len(rels)},
		Inventory:       inv,
	}
	for _, r := range rels {
		art.Data = append(art.Data, inventoryRow(r))
	}
	return art, inv, l.cost, nil
}

var inventoryColumns = []contracts.Column{{Name: "schema", Type: "text"}, {Name: "name", Type: "text"},
	{Name: "kind", Type: "text"}, {Name: "columns", Type: "text"}, {Name: "estimated_rows", Type: "float"}}

func inventoryRow(r contracts.Relation) []any {
	cols := make([]string, len(r.Columns))
	for i, c := range r.Columns {
		cols[i] = strings.TrimSpace(c.Name + " " + c.Type)
	}
	var rows any
	if r.Stats != nil {
		rows = r.Stats.Rows
	}
	return []any{r.Schema, r.Name, string(r.Kind), strings.Join(cols, ", "), rows}
}

// inspect answers OpSchema, the model's inspect_schema: the selected
// relations described in full when they are few and fit the result bounds,
// else one page of their names (the orchestrator says how to ask for the
// next). A schema read of any size of database therefore answers; it is
// never result_too_large.
func (s *Service) inspect(ctx context.Context, cat engine.Cataloger, req *contracts.ExecRequest, ereq engine.Request) (contracts.Artifact, *contracts.SchemaPage, engine.Catalog, error) {
	sel := selectionOf(req)
	l, err := list(ctx, cat, ereq, sel, enginespec.FoldsCase(s.engine))
	if err != nil {
		return contracts.Artifact{}, nil, l.cost, err
	}
	art := contracts.Artifact{ArtifactSummary: contracts.ArtifactSummary{CorrelationID: req.CorrelationID}}
	page := &contracts.SchemaPage{Matched: len(l.matched), Unreadable: l.unreadable, Pattern: sel.pattern}
	if len(l.matched) == 0 {
		art.Columns = inventoryColumns[:3]
		return art, page, l.cost, nil
	}

	// {} asks what exists: a listing, never the whole schema again (the run's
	// snapshot already holds the relevant part). A selector that narrows to
	// a few relations describes them.
	narrowed := sel.schema != "" || sel.table != "" || sel.pattern != ""
	if narrowed && req.After == "" && len(l.matched) <= describeAtOnce {
		rels, err := l.describe(ctx, cat, ereq, l.matched)
		if err != nil {
			return contracts.Artifact{}, nil, l.cost, err
		}
		if def, ok := cat.(engine.Definer); ok && len(rels) > 0 {
			c, err := def.Definitions(ctx, ereq, rels)
			l.spend(c)
			if err != nil {
				return contracts.Artifact{}, nil, l.cost, err
			}
		}
		size := 0
		for _, r := range rels {
			size += len(grounding.Describe(r))
		}
		// Several relations are described together only within the model's
		// share of a result (ShowBytes); one asked for is always described.
		shown := req.ShowBytes <= 0 || len(rels) == 1 || size <= req.ShowBytes/2
		if size <= ereq.Limits.MaxBytes && len(rels) <= ereq.Limits.MaxRows && shown {
			art.Columns, art.Rows = inventoryColumns, len(rels)
			for _, r := range rels {
				art.Data = append(art.Data, inventoryRow(r))
			}
			page.Described, page.Relations = true, rels
			return art, page, l.cost, nil
		}
	}

	// A page of names: as many as the result bounds hold.
	start := from(l.matched, req.After)
	pageRows := min(ereq.Limits.MaxRows, 200)
	pageBytes := ereq.Limits.MaxBytes / 2
	if req.ShowBytes > 0 {
		// Half the model's share of a result; the server's lines take the rest.
		pageBytes = min(pageBytes, max(req.ShowBytes/2, 256))
	}
	size, end := 0, start
	for ; end < len(l.matched) && end-start < pageRows; end++ {
		r := l.matched[end]
		line := len(grounding.QualifiedName(r.Schema, r.Name)) + len(" (") + len(r.Kind) + len(")\n")
		if end > start && size+line > pageBytes {
			break
		}
		size += line
		art.Data = append(art.Data, []any{r.Schema, r.Name, string(r.Kind)})
		page.Relations = append(page.Relations, contracts.Relation{Schema: r.Schema, Name: r.Name, Kind: r.Kind})
	}
	art.Columns, art.Rows = inventoryColumns[:3], end-start
	page.From = start + 1
	return art, page, l.cost, nil
}

// check answers OpCheck: the guard's reading of a statement that will not
// run here (a planning run's draft). Nothing reaches the database.
func check(ctx context.Context, g engine.Guarded, sql string) (*contracts.StatementCheck, error) {
	reader, pol, err := g.Guard(ctx)
	if err != nil {
		return nil, err
	}
	return guardCheck(reader, pol, sql), nil
}

// catalogCost turns what a catalog read cost into the reply's figures.
func catalogCost(c engine.Catalog) (time.Duration, int, string) {
	return c.Duration, c.Statements, strings.Join(c.SQL, ";\n")
}
