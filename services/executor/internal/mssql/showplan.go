package mssql

import (
	"encoding/xml"
	"errors"
	"fmt"
	"io"
	"strings"

	"github.com/sondehq/sonde/contracts"
	"github.com/sondehq/sonde/pkg/guard"
	guardmssql "github.com/sondehq/sonde/pkg/guard/mssql"
)

// Plan is what SQL Server's estimated plan (SET SHOWPLAN_XML ON) says about
// a text without running it: the statements it holds and the objects they
// read.
type Plan struct {
	// Statements lists each statement's StatementType ("SELECT", "INSERT", …).
	Statements []string
	// Objects lists every object an operator of the plan reads.
	Objects []PlanObject
	// Remote names the linked servers a remote operator reaches.
	Remote []string
	// Docs are the showplan documents as the server returned them.
	Docs []string
}

// PlanObject is one <Object> of a plan, its names without brackets.
type PlanObject struct {
	Server, Database, Schema, Table string
}

// stmtElements are the showplan elements that each stand for one statement.
var stmtElements = map[string]bool{
	"StmtSimple": true, "StmtCond": true, "StmtCursor": true, "StmtReceive": true, "StmtUseDb": true,
	"ExternalDistributedComputation": true,
}

// remoteOps are the operators that reach another server.
var remoteOps = map[string]bool{
	"RemoteQuery": true, "RemoteFetch": true, "RemoteModify": true, "RemoteRange": true, "RemoteScan": true,
	"Remote": true,
}

// ParsePlan reads the showplan XML documents SQL Server returns, one row per
// statement, and adds them to one Plan.
func ParsePlan(docs ...string) (*Plan, error) {
	plan := &Plan{}
	for _, doc := range docs {
		if err := plan.add(doc); err != nil {
			return nil, err
		}
	}
	plan.Docs = docs
	return plan, nil
}

func (plan *Plan) add(doc string) error {
	d := xml.NewDecoder(strings.NewReader(doc))
	// The driver hands the document over as a Go string, already decoded,
	// whatever its declaration says (SQL Server declares utf-16).
	d.CharsetReader = func(_ string, r io.Reader) (io.Reader, error) { return r, nil }
	seenRoot := false
	for {
		tok, err := d.Token()
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			return fmt.Errorf("showplan: %w", err)
		}
		se, ok := tok.(xml.StartElement)
		if !ok {
			continue
		}
		name := se.Name.Local
		switch {
		case name == "ShowPlanXML":
			seenRoot = true
		case stmtElements[name]:
			typ := attr(se, "StatementType")
			if typ == "" {
				typ = name
			}
			plan.Statements = append(plan.Statements, typ)
		case name == "Object":
			plan.Objects = append(plan.Objects, PlanObject{
				Server:   unbracket(attr(se, "Server")),
				Database: unbracket(attr(se, "Database")),
				Schema:   unbracket(attr(se, "Schema")),
				Table:    unbracket(attr(se, "Table")),
			})
		case remoteOps[name]:
			plan.Remote = append(plan.Remote, attr(se, "RemoteSource"))
		}
	}
	if !seenRoot {
		return errors.New("showplan: the document holds no ShowPlanXML")
	}
	return nil
}

func attr(se xml.StartElement, name string) string {
	for _, a := range se.Attr {
		if a.Name.Local == name {
			return a.Value
		}
	}
	return ""
}

// unbracket turns the plan's [quoted] names into plain ones.
func unbracket(s string) string {
	if len(s) >= 2 && s[0] == '[' && s[len(s)-1] == ']' {
		return strings.ReplaceAll(s[1:len(s)-1], "]]", "]")
	}
	return s
}

// readTypes are the statement types a plan may hold for a read.
var readTypes = map[string]bool{"SELECT": true, "SELECT WITHOUT QUERY": true}

// CheckPlan holds what the server says the statement is to the guard's
// rules: one statement, a SELECT, reading only readable tables of this
// database and no other server. A large table the server reads that the
// guard's own reading did not see (through a view, say) is refused: the
// guard could not see its bound.
func CheckPlan(plan *Plan, st *guard.Statement, p guard.Policy) *contracts.Refusal {
	switch {
	case len(plan.Statements) == 0:
		return guard.Refuse(contracts.RefuseEngineParse, "SQL Server's plan of the text holds no statement",
			"send one SELECT")
	case len(plan.Statements) > 1:
		return guard.Refuse(contracts.RefuseEngineParse,
			fmt.Sprintf("SQL Server reads the text as %d statements (%s)", len(plan.Statements), strings.Join(plan.Statements, ", ")),
			"send one SELECT at a time")
	case !readTypes[strings.ToUpper(plan.Statements[0])]:
		return guard.Refuse(contracts.RefuseEngineParse,
			fmt.Sprintf("SQL Server reads the statement as %s, not as a SELECT", plan.Statements[0]),
			"send one plain SELECT")
	}
	if len(plan.Remote) > 0 {
		return guard.Refuse(contracts.RefuseTableNotReadable,
			fmt.Sprintf("SQL Server's plan reaches another server (%s)", strings.Join(plan.Remote, ", ")),
			"read only this connection's own database")
	}
	seen := map[string]bool{}
	for _, t := range tablesOf(st) {
		seen[strings.ToLower(t.Catalog)+"|"+t.QualifiedName(p.DefaultSchema)] = true
	}
	var tables []guard.Table
	for _, o := range plan.Objects {
		if o.Server != "" {
			return guard.Refuse(contracts.RefuseTableNotReadable,
				fmt.Sprintf("SQL Server's plan reads %s.%s.%s on the linked server %s", o.Database, o.Schema, o.Table, o.Server),
				"read only this connection's own database")
		}
		if o.Schema == "" && o.Database == "" && guardmssql.AllowedTableFunction(o.Table) {
			continue
		}
		if o.Table == "" {
			continue
		}
		t := guard.Table{Catalog: o.Database, Schema: o.Schema, Name: o.Table}
		t.Schema, t.System = guardmssql.SystemSchema(t.Schema, t.Name)
		if strings.EqualFold(t.Catalog, p.Catalog) {
			t.Catalog = "" // Apply compares a set catalog with the connection's
		}
		tables = append(tables, t)
	}
	// The guard's reading already checked the bounds of the tables it saw.
	large := map[string]string{}
	for k, v := range p.LargeTables {
		t := guard.Table{Name: k}
		if i := strings.LastIndexByte(k, '.'); i >= 0 {
			t = guard.Table{Schema: k[:i], Name: k[i+1:]}
		}
		if !seen["|"+t.QualifiedName(p.DefaultSchema)] && !seen[strings.ToLower(p.Catalog)+"|"+t.QualifiedName(p.DefaultSchema)] {
			large[k] = v
		}
	}
	p.LargeTables = large
	for _, t := range tables {
		// One scope per object: a large table the guard did not see has no
		// bound it could have checked.
		if ref := guard.Apply(&guard.Statement{Scopes: []guard.Scope{{Tables: []guard.Table{t}}}, Names: guard.NamesFold}, p); ref != nil {
			return ref
		}
	}
	return nil
}

func tablesOf(st *guard.Statement) []guard.Table {
	var out []guard.Table
	for _, sc := range st.Scopes {
		out = append(out, sc.Tables...)
	}
	return out
}
