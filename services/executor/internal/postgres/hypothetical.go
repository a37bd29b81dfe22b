package postgres

import (
	"context"
	"errors"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
	"github.com/sondehq/sonde/contracts"
	"github.com/sondehq/sonde/pkg/guard"
	pgguard "github.com/sondehq/sonde/pkg/guard/postgres"
	"github.com/sondehq/sonde/services/executor/internal/engine"
)

var _ engine.HypotheticalPlanner = (*Engine)(nil)

// hypopgSQL finds the hypopg extension: the schema its functions live in
// (they are called qualified, so no function of the same name elsewhere on
// the path is the one that runs) and whether this role may execute the two
// it needs.
const hypopgSQL = `SELECT n.nspname,
  coalesce((SELECT bool_and(pg_catalog.has_function_privilege(p.oid, 'EXECUTE'))
    FROM pg_catalog.pg_proc p
    WHERE p.pronamespace = e.extnamespace AND p.proname IN ('hypopg_create_index', 'hypopg_reset')), false)
FROM pg_catalog.pg_extension e JOIN pg_catalog.pg_namespace n ON n.oid = e.extnamespace
WHERE e.extname = 'hypopg'`

// unavailableFix is what the operator can do when hypopg is missing.
const unavailableFix = "compare plans of rewrites instead, or recommend the index citing the plan you diagnosed; " +
	"an operator can install hypopg (the package postgresql-<major>-hypopg, then CREATE EXTENSION hypopg as a superuser) " +
	"and grant the agent role EXECUTE on hypopg_create_index(text) and hypopg_reset() (docs/executor-postgres.md)"

// PlanHypothetical plans req.SQL as Plan does, as if req.HypotheticalIndex
// had been created, with the hypopg extension: nothing is written. The index
// text is read by the guard (pgguard.Reader.ReadIndex: one CREATE INDEX on
// plain columns), its table and predicate held to the connection's readable
// patterns and the catalog check of a read; what hypopg receives is the
// index as the guard wrote it back. Inside the plan's read-only transaction
// hypopg_create_index adds the index to this session's planner only, the
// EXPLAIN follows, and hypopg_reset removes it after the ROLLBACK — a
// hypothetical index survives both ROLLBACK and DISCARD ALL, so a
// connection whose reset fails is closed rather than pooled.
func (e *Engine) PlanHypothetical(ctx context.Context, req engine.Request) (engine.Result, contracts.PlanSummary, error) {
	sum := contracts.PlanSummary{Engine: contracts.EnginePostgres, Access: []contracts.RelationAccess{}}
	ix, ref := e.reader.ReadIndex(req.HypotheticalIndex)
	if ref == nil {
		// The index's table need only be readable: the large-table bound is
		// the planned statement's, which is guarded whole below.
		p := e.policy
		p.LargeTables = nil
		ref = guard.Apply(ix.Probe, p)
	}
	if ref != nil {
		ref.Message = "the hypothetical index: " + ref.Message
		return engine.Result{}, sum, ref
	}
	st, uses, ref := e.guarded(req)
	if ref != nil {
		return engine.Result{}, sum, ref
	}
	sum.HypotheticalIndex = ix.Text
	var name string // hypopg's name for the index: <oid>btree_table_column
	prepare := func(ctx context.Context, conn *pgx.Conn) (func(context.Context, *pgconn.PgConn) error, error) {
		return e.createHypothetical(ctx, conn, ix, &name)
	}
	res, err := e.runPrepared(ctx, explainPrefix+st.Text, req.Params, req, statementObjects(st, &uses), prepare)
	res.Fingerprint = st.Fingerprint()
	if err != nil {
		return res, sum, err
	}
	if err := summarizeResult(res, &sum); err != nil {
		return res, sum, err
	}
	sum.Note = joinNote(sum.Note, usedNote(sum, name))
	return res, sum, nil
}

// usedNote says whether the plan reads the hypothetical index, by the name
// hypopg gave it.
func usedNote(sum contracts.PlanSummary, name string) string {
	for _, a := range sum.Access {
		if a.Index == name {
			return "the plan uses the hypothetical index " + name + " (hypopg's name for it; nothing was created)"
		}
	}
	return "the plan does not use the hypothetical index " + name + ": PostgreSQL estimates it would not make this statement cheaper"
}

func joinNote(a, b string) string {
	if a == "" {
		return b
	}
	return a + "; " + b
}

// createHypothetical checks hypopg is there and usable, checks the index
// predicate's uses as a read's, and creates the hypothetical index; its
// undo resets hypopg on the session.
func (e *Engine) createHypothetical(ctx context.Context, conn *pgx.Conn, ix *pgguard.Index, name *string) (func(context.Context, *pgconn.PgConn) error, error) {
	var schema string
	var executable bool
	err := conn.QueryRow(ctx, hypopgSQL, pgx.QueryExecModeDescribeExec).Scan(&schema, &executable)
	switch {
	case errors.Is(err, pgx.ErrNoRows):
		return nil, &contracts.Refusal{Code: contracts.RefuseHypotheticalUnavailable,
			Message: "this PostgreSQL database has no hypopg extension, so a plan cannot be made with a hypothetical index",
			Fix:     unavailableFix}
	case err != nil:
		return nil, err
	case !executable:
		return nil, &contracts.Refusal{Code: contracts.RefuseHypotheticalUnavailable,
			Message: "hypopg is installed in this database, but the connection's role may not execute hypopg_create_index and hypopg_reset",
			Fix:     unavailableFix}
	}
	if err := e.checkUses(ctx, conn, &ix.Uses); err != nil {
		return nil, err
	}
	ns := pgx.Identifier{schema}.Sanitize()
	undo := func(ctx context.Context, pc *pgconn.PgConn) error {
		return control(ctx, pc, "SELECT "+ns+".hypopg_reset()")
	}
	var oid uint32
	if err := conn.QueryRow(ctx, "SELECT indexrelid, indexname FROM "+ns+".hypopg_create_index($1)",
		pgx.QueryExecModeDescribeExec, ix.Text).Scan(&oid, name); err != nil {
		return undo, err
	}
	return undo, nil
}
