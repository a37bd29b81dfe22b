// Package engine declares the database engines Sonde serves: one Spec per
// engine, in its own file, and one list. Everything outside an engine's own
// packages (executor/internal/<engine>, pkg/guard/<engine>) that needs a
// fact about an engine — its label, how it compares names, its dialect's
// hints and fence tags, its default schema and port, whether it reads a
// file, its executor's NATS service name — reads it here, so adding an
// engine is its packages plus one entry in the list.
//
// The package has no cgo and imports only contracts and pkg/guard, so every
// module can import it.
package engine

import (
	"slices"

	"github.com/sondehq/sonde/contracts"
	"github.com/sondehq/sonde/pkg/guard"
)

// Spec is what Sonde knows about one engine outside the engine's own code.
type Spec struct {
	// Name is the engine's token: in connection files, subjects and ledgers.
	Name contracts.Engine
	// Label is the engine's name as people write it ("SQL Server").
	Label string
	// Dialect names the SQL the model is asked to write ("SQL Server
	// (T-SQL)"); it is the Label where the two are one.
	Dialect string
	// Names is how the engine compares identifiers once read: the rule its
	// guard reader reports and readable patterns are checked under.
	Names guard.NameRule
	// DialectHints are what models most often get wrong in the dialect,
	// given to the model with the rules of a run on this engine.
	DialectHints []string
	// DialectAliases are the fenced-block info strings that name the
	// dialect (case aside), the engine's own Name among them: a block
	// tagged with one outranks other SQL in a handed-over answer.
	DialectAliases []string
	// Placeholders is how a statement writes the parameters a read binds,
	// as the engine's executor counts them; empty when the executor binds
	// none.
	Placeholders string
	// DefaultSchema is where an unqualified name is looked up first.
	DefaultSchema string
	// FileBased says a connection names a local database file (path:)
	// rather than a server (dsn:).
	FileBased bool
	// DefaultPort is the server's port when a DSN names none; empty for a
	// file-based engine.
	DefaultPort string
	// Capabilities are what the engine's plans and catalog allow.
	Capabilities Capabilities
	// Safety says what holds a read to read-only on this engine, as the
	// console shows it beside a connection (docs/security.md, "Per
	// engine").
	Safety Safety
}

// Safety is what holds a read to read-only on an engine, in three short
// phrases a person reads.
type Safety struct {
	// Guard is what the guard reads a statement with.
	Guard string
	// ReadOnly is what holds a read to read-only below the guard.
	ReadOnly string
	// LastLine is what stops a write when everything above it fails.
	LastLine string
}

// Capabilities are engine facts that change what Sonde concludes from a
// reading, beyond the optional interfaces an executor engine implements.
type Capabilities struct {
	// WeighedReplay: the engine's plans are weighed for an unattended
	// replay of a handed-over statement (pkg/handover); other engines'
	// statements are always placed unrun.
	WeighedReplay bool
	// IndexesForeignKeys: the engine builds an index for every foreign key
	// itself, so no foreign key is reported as unindexed.
	IndexesForeignKeys bool
}

// ServiceName is the name of the engine's executor in the NATS micro
// framework, in `sonde serve --services` and deploy files, and its queue
// group: "executor-sqlite".
func (s Spec) ServiceName() string { return contracts.QueueExecutorPrefix + string(s.Name) }

// FoldsCase reports whether the engine compares names case-insensitively
// (under any folding rule).
func (s Spec) FoldsCase() bool { return s.Names != guard.NamesExact }

// list is every engine Sonde serves, in the order they are offered.
var list = []Spec{postgres, sqlite, duckdb, mssql}

// All returns every engine's Spec, in the order they are offered.
func All() []Spec {
	out := make([]Spec, len(list))
	for i, s := range list {
		out[i] = s.clone()
	}
	return out
}

// Names returns every engine's token, in the order they are offered.
func Names() []contracts.Engine {
	out := make([]contracts.Engine, len(list))
	for i, s := range list {
		out[i] = s.Name
	}
	return out
}

// Lookup returns the Spec of engine e; ok is false for an engine the list
// does not hold. A caller must then refuse, never assume a rule: an
// undeclared engine is not case-folded, given a default schema or a port.
func Lookup(e contracts.Engine) (Spec, bool) {
	for _, s := range list {
		if s.Name == e {
			return s.clone(), true
		}
	}
	return Spec{}, false
}

// FoldsCase reports whether engine e compares names case-insensitively;
// false for an undeclared engine, whose names are then compared exactly
// (the comparison that admits least).
func FoldsCase(e contracts.Engine) bool {
	s, ok := Lookup(e)
	return ok && s.FoldsCase()
}

// Label is engine e's Label, or its token when the list does not hold it.
func Label(e contracts.Engine) string {
	if s, ok := Lookup(e); ok {
		return s.Label
	}
	return string(e)
}

func (s Spec) clone() Spec {
	s.DialectHints = slices.Clone(s.DialectHints)
	s.DialectAliases = slices.Clone(s.DialectAliases)
	return s
}
