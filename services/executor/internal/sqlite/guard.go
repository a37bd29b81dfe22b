package sqlite

import (
	"context"

	"github.com/sondehq/sonde/pkg/guard"
	guardsqlite "github.com/sondehq/sonde/pkg/guard/sqlite"
	"modernc.org/sqlite"
)

// Guard returns the reader that reads a statement as Read does — SQLite's
// own compiler on a connection of this engine, under the connection's
// authorizer — without running it, and the connection's policy. Each Read
// of the reader takes a connection from the pool for the time it compiles.
func (e *Engine) Guard(ctx context.Context) (guard.Reader, guard.Policy, error) {
	if _, dbErr := e.current(ctx); dbErr != nil {
		return nil, guard.Policy{}, dbErr
	}
	return guardsqlite.Reader{Compiler: poolCompiler{ctx: ctx, e: e}, Policy: e.policy}, e.policy, nil
}

// poolCompiler compiles on a pooled connection of its engine, with the
// connection's limits, and puts it back under the connection's own
// authorizer.
type poolCompiler struct {
	ctx context.Context
	e   *Engine
}

func (p poolCompiler) Compile(q string, auth sqlite.AuthorizerFn) ([]string, error) {
	db, dbErr := p.e.current(p.ctx)
	if dbErr != nil {
		return nil, dbErr
	}
	conn, err := db.Conn(p.ctx)
	if err != nil {
		return nil, err
	}
	defer conn.Close()
	if err := setLimits(conn, p.e.valueLimit); err != nil {
		return nil, err
	}
	defer setAuthorizer(conn, guardsqlite.Authorizer(p.e.policy, nil))
	return guardsqlite.ConnCompiler(p.ctx, conn).Compile(q, auth)
}
