package mssql

import (
	"context"
	"strconv"
	"strings"

	"github.com/sondehq/sonde/contracts"
	"github.com/sondehq/sonde/pkg/guard"
	guardmssql "github.com/sondehq/sonde/pkg/guard/mssql"
	"github.com/sondehq/sonde/services/executor/internal/engine"
)

var _ engine.Profiler = (*Engine)(nil)

// noDistinct lists the types COUNT(DISTINCT …) refuses: the large-object
// types that cannot be compared or sorted, and the spatial and XML types.
var noDistinct = map[string]bool{"text": true, "ntext": true, "image": true, "xml": true,
	"geography": true, "geometry": true}

// textTypes are the character types the shape tests apply to.
var textTypes = map[string]bool{"char": true, "varchar": true, "nchar": true, "nvarchar": true,
	"text": true, "ntext": true}

// baseType is a declared type without its length ("nvarchar(40)" →
// "nvarchar").
func baseType(typ string) string {
	if i := strings.IndexByte(typ, '('); i >= 0 {
		typ = typ[:i]
	}
	return strings.ToLower(strings.TrimSpace(typ))
}

// QuoteIdent writes an identifier in brackets, doubling any ] inside.
func QuoteIdent(s string) string { return "[" + strings.ReplaceAll(s, "]", "]]") + "]" }

// Dialect is how SQL Server writes a profile: COUNT_BIG (a count past
// 2^31 does not overflow), identifiers in brackets, both shapes with LIKE
// (whose [0-9] class says "a digit").
var Dialect = engine.Dialect{
	Quote: QuoteIdent,
	Count: "COUNT_BIG",
	NoDistinct: func(typ string) string {
		if noDistinct[baseType(typ)] {
			return "type " + typ + " cannot be compared, so its distinct values cannot be counted"
		}
		return ""
	},
	Text:      func(typ string) bool { return textTypes[baseType(typ)] },
	EmailLike: func(col string) string { return col + " LIKE N'" + engine.EmailPattern + "'" },
	DigitRun: func(col string) string {
		return col + " LIKE N'%" + strings.Repeat("[0-9]", engine.DigitRunLength) + "%'"
	},
	Sample: func(cols []string, from string, n int64) string {
		list := "1 AS one"
		if len(cols) > 0 {
			list = strings.Join(cols, ", ")
		}
		return "SELECT TOP (" + strconv.FormatInt(n, 10) + ") " + list + " FROM " + from
	},
}

// Profile runs the composed profile statement as a catalog read is run
// (one batch in a snapshot transaction, always rolled back, under the
// request's timeout, on the metered socket).
func (e *Engine) Profile(ctx context.Context, req engine.Request, p engine.ProfileRequest) (engine.ProfileResult, error) {
	var sample int64
	s, system := guardmssql.SystemSchema(p.Relation.Schema, p.Relation.Name)
	if _, large := e.policy(e.l).LargeColumn(guard.NamesFold, guard.Table{Schema: s, Name: p.Relation.Name, System: system}); large {
		sample = engine.ProfileSampleRows
	}
	plan := engine.ComposeProfile(Dialect, p, sample)
	res, err := e.run(ctx, e.l, e.catalogRequest(req), plan.SQL, nil)
	return plan.Read(res, err)
}

// UnprofilableSQL lists the database's sequences and synonyms, the named
// objects beside its relations that hold no rows of their own.
const UnprofilableSQL = `SELECT s.name AS schema_name, o.name AS name, RTRIM(o.type) AS type
  FROM sys.objects AS o
  JOIN sys.schemas AS s ON s.schema_id = o.schema_id
 WHERE o.type IN ('SO', 'SN') AND o.is_ms_shipped = 0
 ORDER BY s.name, o.name`

// Unprofilable lists the readable sequences and synonyms (one statement).
func (e *Engine) Unprofilable(ctx context.Context, req engine.Request) (engine.Catalog, error) {
	var cat engine.Catalog
	rows, err := e.catalogRead(ctx, req, UnprofilableSQL, &cat)
	if err != nil {
		return cat, err
	}
	readable := canRead(e.policy(e.l))
	for _, row := range rows {
		schema, name, typ := text(row[0]), text(row[1]), text(row[2])
		if !readable(schema, name) {
			cat.Unreadable++
			continue
		}
		word := map[string]string{"SO": "sequence object (SO)", "SN": "synonym (SN)"}[typ]
		cat.Relations = append(cat.Relations, contracts.Relation{Schema: schema, Name: name, EngineKind: word})
	}
	return cat, nil
}
