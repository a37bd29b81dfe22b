package sqlite

import (
	"context"
	"database/sql"
	"strings"

	"github.com/sondehq/sonde/contracts"
	"github.com/sondehq/sonde/pkg/guard"
	"github.com/sondehq/sonde/services/executor/internal/engine"
	"github.com/sondehq/sonde/services/executor/internal/rowset"
)

var _ engine.Profiler = (*Engine)(nil)

// Dialect is how SQLite writes a profile. Every value compares equal to
// itself, so every column gets a distinct count; the shape tests apply to
// the columns of TEXT affinity (a declared type holding CHAR, CLOB or TEXT)
// and to those declared with no type, which hold whatever was stored. A
// digit run is a GLOB of nine [0-9] classes: LIKE can say "any character"
// but not "any digit".
var Dialect = engine.Dialect{
	Quote:      engine.QuoteDouble,
	Count:      "count",
	NoDistinct: func(string) string { return "" },
	Text: func(typ string) bool {
		t := strings.ToUpper(typ)
		return t == "" || strings.Contains(t, "CHAR") || strings.Contains(t, "CLOB") || strings.Contains(t, "TEXT")
	},
	EmailLike: func(col string) string { return col + " LIKE '" + engine.EmailPattern + "'" },
	DigitRun: func(col string) string {
		return col + " GLOB '*" + strings.Repeat("[0-9]", engine.DigitRunLength) + "*'"
	},
	Sample: engine.SampleLimit,
}

// profileLimits bound the profile's result: one row of counts, refused
// (never truncated) past a bound no row of counts comes near.
var profileLimits = rowset.Limits{MaxRows: 1, MaxBytes: 1 << 20}

// Profile runs the composed profile statement on a connection of the
// engine's pool, as a read runs — under the connection's own authorizer
// (readable tables, allowlisted functions), with its limits and the
// request's timeout, on a file opened read-only — but without the guard's
// large-table rule, which the profile keeps by counting a sample.
func (e *Engine) Profile(ctx context.Context, req engine.Request, p engine.ProfileRequest) (engine.ProfileResult, error) {
	var sample int64
	if _, large := e.policy.LargeColumn(guard.NamesASCIIFold, guard.Table{Schema: DefaultSchema, Name: p.Relation.Name}); large {
		sample = engine.ProfileSampleRows
	}
	plan := engine.ComposeProfile(Dialect, p, sample)
	db, dbErr := e.current(ctx)
	if dbErr != nil {
		return plan.Read(Result{}, dbErr)
	}
	conn, err := db.Conn(ctx)
	if err != nil {
		return plan.Read(Result{}, classify(err, req.Timeout, ""))
	}
	defer conn.Close()
	if err := setLimits(conn, e.valueLimit); err != nil {
		return plan.Read(Result{}, classify(err, req.Timeout, ""))
	}
	res, err := e.run(ctx, conn, plan.SQL, nil, nil, profileLimits, req.Timeout)
	return plan.Read(res, err)
}

// UnprofilableSQL lists the indexes and triggers of main, the objects
// sqlite_schema names beside its relations that hold no rows to profile
// (SQLite's own sqlite_ ones left out), with the table each belongs to.
const UnprofilableSQL = `SELECT name, type, tbl_name FROM sqlite_schema ` +
	`WHERE type IN ('index', 'trigger') AND name NOT LIKE 'sqlite\_%' ESCAPE '\' ORDER BY name`

// Unprofilable lists the indexes and triggers of the readable tables (one
// statement): one of an unreadable table is counted, never named.
func (e *Engine) Unprofilable(ctx context.Context, req engine.Request) (engine.Catalog, error) {
	var out engine.Catalog
	err := e.catalog(ctx, req, &out, func(c *catalogRun) error {
		return c.query(UnprofilableSQL, nil, func(rows *sql.Rows) error {
			var name, typ, table string
			if err := rows.Scan(&name, &typ, &table); err != nil {
				return err
			}
			if !e.policy.CanRead(guard.NamesASCIIFold, guard.Table{Schema: DefaultSchema, Name: table}) {
				out.Unreadable++
				return nil
			}
			out.Relations = append(out.Relations, contracts.Relation{Schema: DefaultSchema, Name: name, EngineKind: typ})
			return nil
		})
	})
	return out, err
}
