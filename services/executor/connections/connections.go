// Package connections reads the connections file an executor serves: the
// databases Sonde may read, their engines and where they are, and the
// operator's per-connection rules.
//
// The file is YAML and only executors read it (it holds DSNs and paths):
//
//	connections:
//	  - id: shop                      # what runs and callers name
//	    engine: postgres              # postgres | sqlite | duckdb | mssql
//	    dsn: postgres://reader@db:5432/shop
//	    agent_dsn: postgres://sonde_agent@db:5432/shop
//	    readable: ["public.*"]
//	    large_tables:
//	      public.events: event_date
//	    description: Production shop replica
//	  - id: demo
//	    engine: sqlite
//	    path: ./demo.db               # sqlite and duckdb take path, not dsn
//
// What leaves an executor about a connection is its Descriptor: id, engine,
// description and a fingerprint of its identity, never a DSN or a path.
package connections

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"

	"github.com/sondehq/sonde/contracts"
	enginespec "github.com/sondehq/sonde/pkg/engine"
	"github.com/sondehq/sonde/pkg/guard"
	"go.yaml.in/yaml/v3"
)

// Connection is one entry of the connections file.
type Connection struct {
	// ID names the connection to runs and callers; it is a subject and KV key
	// token, so it passes the one id rule, contracts.CheckID (1 to
	// contracts.MaxIDLength letters, digits, '-' and '_').
	ID string
	// Engine is the database engine.
	Engine contracts.Engine
	// DSN locates a server database (postgres, mssql). It may hold a password
	// and never leaves the executor.
	DSN string
	// AgentDSN is an optional least-privilege credential for agent profiles
	// (postgres, mssql).
	AgentDSN string
	// Path is the database file of a file engine (sqlite, duckdb). Load makes
	// a relative path absolute against the connections file's directory.
	Path string
	// Readable lists the table patterns a statement may read; empty means
	// every table. Enforced by every engine's guard (pkg/guard).
	Readable []string
	// LargeTables maps a table to the column a statement must bound from
	// below. Enforced by every engine's guard (pkg/guard).
	LargeTables map[string]string
	// Description is shown to callers.
	Description string
	// Demo marks the built-in demonstration database. It is never read from
	// the file; the composition that creates the demo connection sets it.
	Demo bool
}

// Fields of a connection entry, as spelled in the file.
var knownFields = []string{"id", "engine", "dsn", "agent_dsn", "path", "readable", "large_tables", "description"}

// FileEngine reports whether e reads a local file (path) rather than a
// server (dsn), as its engine.Spec says; false for an undeclared engine.
func FileEngine(e contracts.Engine) bool {
	s, ok := enginespec.Lookup(e)
	return ok && s.FileBased
}

// Load reads and validates the connections file at path. Relative database
// paths are resolved against the file's directory.
func Load(path string) ([]Connection, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("connections: %w", err)
	}
	conns, err := Parse(data)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	abs, err := filepath.Abs(path)
	if err != nil {
		return nil, fmt.Errorf("connections: %w", err)
	}
	dir := filepath.Dir(abs)
	for i := range conns {
		if conns[i].Path != "" && !filepath.IsAbs(conns[i].Path) {
			conns[i].Path = filepath.Join(dir, conns[i].Path)
		}
	}
	return conns, nil
}

// Parse reads and validates a connections file. Every problem found is
// reported, each as an *Error naming its line and field, joined with
// errors.Join. Relative paths are left as written.
func Parse(data []byte) ([]Connection, error) {
	var doc yaml.Node
	if err := yaml.Unmarshal(data, &doc); err != nil {
		return nil, fmt.Errorf("connections: %w", err)
	}
	p := &parser{}
	conns := p.document(&doc)
	if err := p.err(); err != nil {
		return nil, err
	}
	return conns, nil
}

type parser struct {
	errs []error
}

func (p *parser) fail(line int, id, field, format string, args ...any) {
	p.errs = append(p.errs, &Error{Line: line, ID: id, Field: field, Msg: fmt.Sprintf(format, args...)})
}

func (p *parser) err() error {
	if len(p.errs) == 1 {
		return p.errs[0]
	}
	return errors.Join(p.errs...)
}

func (p *parser) document(doc *yaml.Node) []Connection {
	if doc.Kind == 0 || len(doc.Content) == 0 {
		p.fail(0, "", "", "the file is empty; it needs a connections: list")
		return nil
	}
	root := doc.Content[0]
	if root.Kind != yaml.MappingNode {
		p.fail(root.Line, "", "", "the file must be a mapping with a connections: list")
		return nil
	}
	var list *yaml.Node
	for i := 0; i+1 < len(root.Content); i += 2 {
		k, v := root.Content[i], root.Content[i+1]
		if k.Value != "connections" {
			p.fail(k.Line, "", k.Value, "unknown top-level key (the file holds only connections:)")
			continue
		}
		list = v
	}
	if list == nil {
		if len(p.errs) == 0 {
			p.fail(root.Line, "", "connections", "missing")
		}
		return nil
	}
	if list.Kind != yaml.SequenceNode {
		p.fail(list.Line, "", "connections", "must be a list of connections")
		return nil
	}
	if len(list.Content) == 0 {
		p.fail(list.Line, "", "connections", "the list is empty")
		return nil
	}
	conns := make([]Connection, 0, len(list.Content))
	seen := map[string]int{}
	for _, item := range list.Content {
		c, ok := p.connection(item)
		if !ok {
			continue
		}
		if line, dup := seen[c.ID]; dup {
			p.fail(item.Line, c.ID, "id", "duplicate id (first declared on line %d)", line)
			continue
		}
		seen[c.ID] = item.Line
		conns = append(conns, c)
	}
	return conns
}

func (p *parser) connection(n *yaml.Node) (Connection, bool) {
	var c Connection
	if n.Kind != yaml.MappingNode {
		p.fail(n.Line, "", "", "a connection must be a mapping of fields (id, engine, …)")
		return c, false
	}
	before := len(p.errs)
	fields := map[string]*yaml.Node{}
	lines := map[string]int{}
	// The id first, so every later error can name its connection; one that
	// breaks the id rule is named by its line only, never repeated whole.
	var idErr *contracts.IDError
	for i := 0; i+1 < len(n.Content); i += 2 {
		if k := n.Content[i]; k.Value == "id" {
			c.ID, _ = p.scalar("", k.Value, n.Content[i+1])
		}
	}
	named := c.ID
	if err := contracts.CheckID(contracts.IDConnection, c.ID); err != nil && c.ID != "" {
		errors.As(err, &idErr)
		named = ""
	}
	for i := 0; i+1 < len(n.Content); i += 2 {
		k, v := n.Content[i], n.Content[i+1]
		if !slices.Contains(knownFields, k.Value) {
			p.fail(k.Line, named, k.Value, "unknown field (known: %s)", strings.Join(knownFields, ", "))
			continue
		}
		if first, dup := lines[k.Value]; dup {
			p.fail(k.Line, named, k.Value, "given twice (first on line %d)", first)
			continue
		}
		fields[k.Value], lines[k.Value] = v, k.Line
	}
	get := func(name string) string {
		v, ok := fields[name]
		if !ok || name == "id" {
			return ""
		}
		s, _ := p.scalar(named, name, v)
		return s
	}
	c.DSN, c.AgentDSN, c.Path, c.Description = get("dsn"), get("agent_dsn"), get("path"), get("description")
	c.Engine = contracts.Engine(get("engine"))

	switch {
	case fields["id"] == nil:
		p.fail(n.Line, "", "id", "missing")
	case c.ID == "":
		p.fail(lines["id"], "", "id", "empty")
	case idErr != nil:
		p.fail(lines["id"], "", "id", "%s; %s (the id is a NATS subject and key token)", idErr.Error(), idErr.Fix())
	}
	spec, known := enginespec.Lookup(c.Engine)
	switch {
	case fields["engine"] == nil:
		p.fail(n.Line, named, "engine", "missing (one of %s)", engineList())
	case !known:
		p.fail(lines["engine"], named, "engine", "unknown engine %q (one of %s)", c.Engine, engineList())
	case spec.FileBased:
		if c.Path == "" {
			p.fail(lineOr(lines, "path", n.Line), named, "path", "%s needs the path of its database file", c.Engine)
		}
		for _, f := range []string{"dsn", "agent_dsn"} {
			if fields[f] != nil {
				p.fail(lines[f], named, f, "%s takes path:, not %s:", c.Engine, f)
			}
		}
	default:
		if c.DSN == "" {
			p.fail(lineOr(lines, "dsn", n.Line), named, "dsn", "%s needs a dsn", c.Engine)
		}
		if fields["path"] != nil {
			p.fail(lines["path"], named, "path", "%s takes dsn:, not path:", c.Engine)
		}
	}
	if v := fields["readable"]; v != nil {
		c.Readable = p.patterns(named, v)
	}
	if v := fields["large_tables"]; v != nil {
		c.LargeTables = p.largeTables(named, v)
	}
	// A pattern the engine's name rules cannot read would match nothing,
	// silently: name it instead.
	if known {
		rule := spec.Names
		for i, pat := range c.Readable {
			if err := guard.ValidatePattern(pat, rule); err != nil {
				p.fail(lines["readable"], named, "readable", "entry %d: %v", i+1, err)
			}
		}
		for table := range c.LargeTables {
			if err := guard.ValidatePattern(table, rule); err != nil {
				p.fail(lines["large_tables"], named, "large_tables", "%v", err)
			}
		}
	}
	return c, len(p.errs) == before
}

func (p *parser) scalar(id, field string, v *yaml.Node) (string, bool) {
	if v.Kind != yaml.ScalarNode || v.Tag == "!!null" {
		p.fail(v.Line, id, field, "must be a string")
		return "", false
	}
	return strings.TrimSpace(v.Value), true
}

func (p *parser) patterns(id string, v *yaml.Node) []string {
	if v.Kind != yaml.SequenceNode {
		p.fail(v.Line, id, "readable", "must be a list of table patterns, e.g. [\"public.*\"]")
		return nil
	}
	out := make([]string, 0, len(v.Content))
	for _, item := range v.Content {
		s, ok := p.scalar(id, "readable", item)
		if !ok {
			continue
		}
		if s == "" {
			p.fail(item.Line, id, "readable", "empty table pattern")
			continue
		}
		out = append(out, s)
	}
	return out
}

func (p *parser) largeTables(id string, v *yaml.Node) map[string]string {
	if v.Kind != yaml.MappingNode {
		p.fail(v.Line, id, "large_tables", "must map a table to the column bounded from below, e.g. public.events: event_date")
		return nil
	}
	out := make(map[string]string, len(v.Content)/2)
	for i := 0; i+1 < len(v.Content); i += 2 {
		k, col := v.Content[i], v.Content[i+1]
		table, ok1 := p.scalar(id, "large_tables", k)
		column, ok2 := p.scalar(id, "large_tables", col)
		if !ok1 || !ok2 {
			continue
		}
		switch {
		case table == "":
			p.fail(k.Line, id, "large_tables", "empty table name")
		case column == "":
			p.fail(col.Line, id, "large_tables", "table %s needs the column that must be bounded from below", table)
		case out[table] != "":
			p.fail(k.Line, id, "large_tables", "table %s given twice", table)
		default:
			out[table] = column
		}
	}
	return out
}

func engineList() string {
	engines := enginespec.Names()
	names := make([]string, len(engines))
	for i, e := range engines {
		names[i] = string(e)
	}
	return strings.Join(names, ", ")
}

func lineOr(lines map[string]int, field string, def int) int {
	if l, ok := lines[field]; ok {
		return l
	}
	return def
}
