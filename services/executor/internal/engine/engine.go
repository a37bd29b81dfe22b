// Package engine is the seam between the executor service and the database
// engines it serves. Each engine (sqlite, postgres, duckdb, mssql) lives in
// its own package under services/executor/internal and implements Engine for
// one open connection; the executor registers an Opener per engine.
package engine

import (
	"context"
	"fmt"
	"slices"
	"time"

	"github.com/sondehq/sonde/contracts"
	"github.com/sondehq/sonde/pkg/guard"
	"github.com/sondehq/sonde/services/executor/connections"
	"github.com/sondehq/sonde/services/executor/internal/rowset"
)

// Request is one operation on one connection, already resolved against its
// profile.
type Request struct {
	// SQL is the statement of a read, as the caller sent it.
	SQL string
	// Params are bound separately from the statement text, never spliced in.
	Params []any
	// Schema and Table narrow a schema read; the engine writes the SQL.
	// (Cataloger implementations list every relation; the executor narrows.)
	Schema, Table string
	// Profile is the execution profile (agent profiles use the connection's
	// least-privilege credential where it has one).
	Profile contracts.Profile
	// Limits bound the result: refuse or truncate, per the profile.
	Limits rowset.Limits
	// Timeout bounds the statement at the database; zero means none.
	Timeout time.Duration
	// Failed are fingerprints of statements that already failed at the
	// database in the caller's run.
	Failed []string
	// HypotheticalIndex is the CREATE INDEX statement a HypotheticalPlanner
	// plans SQL as if it had run; attacker text, like SQL.
	HypotheticalIndex string
}

// Repeated refuses a statement whose fingerprint already failed in the run:
// each engine asks it right after its guard read the statement.
func (r Request) Repeated(fingerprint string) *contracts.Refusal {
	if !slices.Contains(r.Failed, fingerprint) {
		return nil
	}
	return &contracts.Refusal{Code: contracts.RefuseAlreadyFailed,
		Message: "this statement (read canonically: layout, comments and keyword case aside) already failed at the database in this run",
		Fix:     "change what the statement does, not how it is written, or report what you have"}
}

// Result is what one operation sent to the database and what came back.
type Result struct {
	// SQL is the text the database ran: the guarded statement of a read, the
	// composed catalog query of a schema read.
	SQL string
	// Rows holds the collected result; nil when nothing ran.
	Rows *rowset.Set
	// Duration is the time spent at the database.
	Duration time.Duration
	// Statements counts the statements sent (0 when refused before).
	Statements int
	// Fingerprint is the guard's canonical fingerprint of a read's statement
	// (guard.Statement.Fingerprint); empty for a schema read.
	Fingerprint string
}

// Engine is one open connection of one database engine. It is safe for
// concurrent use. Read and Schema fail with a *contracts.Refusal (refused
// before execution), a *rowset.TooLargeError (the result passed a bound of a
// refusing profile) or a *contracts.DBError (the database failed it, engine
// text in Message); anything else is reported as class other.
type Engine interface {
	Read(ctx context.Context, req Request) (Result, error)
	Close() error
}

// Cataloger is implemented by engines that read a structured inventory of
// their relations (tables, views, materialized views, foreign and virtual
// tables): the executor's inventory and schema operations page, bound and
// render what it returns. Both methods send composed catalog statements
// only, under the same read-only envelope as a read, and fail as Read does.
type Cataloger interface {
	// Relations lists the relations outside the engine's own catalogs in
	// (schema, name) order, each with its Schema, Name, Kind and EngineKind
	// only. Relations the connection's readable patterns do not allow are
	// left out and counted in Catalog.Unreadable, never named.
	Relations(ctx context.Context, req Request) (Catalog, error)
	// Describe returns rels with their columns, primary key, unique
	// constraints, foreign keys, indexes and the engine's estimated
	// statistics filled in, in the order given. A relation that no longer
	// exists is dropped. rels holds at most contracts.DefaultInventoryObjects.
	Describe(ctx context.Context, req Request, rels []contracts.Relation) (Catalog, error)
}

// Definer is implemented by engines that keep each relation's definition as
// written, comments included (SQLite's sqlite_schema.sql): a schema read
// that describes a few relations in full shows it, since a comment is often
// where a column's meaning or format is written down.
type Definer interface {
	// Definitions sets Definition on each of rels the engine holds one for.
	Definitions(ctx context.Context, req Request, rels []contracts.Relation) (Catalog, error)
}

// Planner is implemented by engines that read the estimating plan of a
// statement without running it (EXPLAIN without ANALYZE, EXPLAIN QUERY
// PLAN, a showplan). Plan guards req.SQL exactly as Read does — the same
// reader, policy, refusals and read-only envelope — then asks the engine
// for its plan: Result.Rows holds the plan as the engine wrote it (one row
// per line or node; columns the engine's), and the summary says how each
// relation is read and what the engine estimates. Errors as for Read.
type Planner interface {
	Plan(ctx context.Context, req Request) (Result, contracts.PlanSummary, error)
}

// HypotheticalPlanner is implemented by engines that can plan a statement
// as if an index existed without creating anything (PostgreSQL with the
// hypopg extension). PlanHypothetical reads req.HypotheticalIndex with the
// engine's parser and refuses anything but one CREATE INDEX on plain
// columns of a readable table, then plans req.SQL exactly as Plan does with
// that index visible to the planner only, inside the same read-only
// envelope; nothing outlives the call. The summary's HypotheticalIndex is
// the index as the engine was given it. An engine that can do this only
// when the database has what it needs refuses with
// contracts.RefuseHypotheticalUnavailable when it has not. Errors as for
// Read.
type HypotheticalPlanner interface {
	PlanHypothetical(ctx context.Context, req Request) (Result, contracts.PlanSummary, error)
}

// Catalog is what one Cataloger call read and what it cost.
type Catalog struct {
	Relations []contracts.Relation
	// Unreadable counts relations left out by the readable patterns.
	Unreadable int
	// StatisticsSource names where Describe's estimates came from; empty
	// when the engine keeps none.
	StatisticsSource string
	// SQL is the catalog statements sent, for the record.
	SQL []string
	// Duration is the time spent at the database; Statements counts the
	// statements sent.
	Duration   time.Duration
	Statements int
}

// Guarded is implemented by engines whose guard can be asked about a
// statement without running it (a planning run's drafted statement): the
// reader that parses the engine's dialect and the connection's policy.
type Guarded interface {
	Guard(ctx context.Context) (guard.Reader, guard.Policy, error)
}

// Options are what the executor tells an engine when it opens a connection.
type Options struct {
	// OperationMemory is the most bytes one operation may hold while it
	// reads a result: the executor's memory budget divided by its
	// concurrency and by the copies a value passes through on its way to an
	// artifact (wire buffer, scanned value, JSON-ready form, encoding), so
	// that every operation reading at once stays within the budget. Engines
	// apply it while reading (wire message size, value length, engine memory
	// limit), so a value over it ends as a *rowset.TooLargeError rather than
	// an exhausted process. Zero means the engine's own default.
	OperationMemory int64
}

// Opener opens an engine for one connection of its kind and proves it can
// reach the database.
type Opener func(ctx context.Context, c connections.Connection, o Options) (Engine, error)

// PrivilegeChecker is implemented by engines that can tell whether the role
// that runs reads could also write. The executor asks once the connection is
// open and surfaces the answer (start-up warning, connection descriptor).
type PrivilegeChecker interface {
	// WriteCapable returns why the read role could write (superuser,
	// INSERT/UPDATE/DELETE/CREATE somewhere, ...); nil when it cannot.
	WriteCapable(ctx context.Context) ([]string, error)
}

// AddAccess adds one step of a plan to sum, for the planners' summaries: a
// relation read again stays one entry, mixed when the steps read it
// differently, its estimated rows summed (unknown when a step gives none).
// at maps a relation to its entry.
func AddAccess(sum *contracts.PlanSummary, at map[string]int, a contracts.RelationAccess) {
	i, ok := at[a.Relation]
	if !ok {
		at[a.Relation] = len(sum.Access)
		sum.Access = append(sum.Access, a)
		return
	}
	prev := &sum.Access[i]
	if prev.Access != a.Access {
		prev.Access = contracts.AccessMixed
	}
	if prev.Index == "" {
		prev.Index = a.Index
	}
	if prev.Rows == nil || a.Rows == nil {
		prev.Rows = nil
		return
	}
	r := *prev.Rows + *a.Rows
	prev.Rows = &r
}

// DescribeBound refuses a Describe of more relations than one capture
// holds (contracts.DefaultInventoryObjects): the executor pages before it
// asks, and an engine that composes the relations into its catalog
// statements holds that bound itself.
func DescribeBound(rels []contracts.Relation) *contracts.Refusal {
	if len(rels) <= contracts.DefaultInventoryObjects {
		return nil
	}
	return &contracts.Refusal{Code: contracts.RefuseBadRequest,
		Message: fmt.Sprintf("%d relations asked to be described at once; at most %d are", len(rels), contracts.DefaultInventoryObjects),
		Fix:     "describe the relations in pages"}
}
