package postgres

import (
	"context"
	"errors"
	"math"
	"strconv"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
	"github.com/jackc/pgx/v5/pgproto3"
	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/sondehq/sonde/contracts"
	"github.com/sondehq/sonde/services/executor/internal/engine"
	"github.com/sondehq/sonde/services/executor/internal/rowset"
)

// grace is the most the client waits past the statement timeout, so the
// server's own timeout (57014) fires first and is the one reported; a read
// waits stopGrace (a quarter of its timeout, up to grace).
const grace = 2 * time.Second

// run sends one statement on a connection of the engine's pool, inside a
// read-only transaction that is always rolled back, and collects its rows.
// It does not guard: callers pass guarded or composed SQL. Tests call it
// with hostile text to show what the database itself refuses.
func (e *Engine) run(ctx context.Context, sql string, params []any, req engine.Request) (engine.Result, error) {
	return e.runChecked(ctx, sql, params, req, nil)
}

// runChecked is run that first, inside the transaction, checks what the
// statement resolves to (checkObjects): the session's pinned settings, the
// user-defined code its names, its relations and their views, rules,
// policies and children would run, and the relations it would read.
func (e *Engine) runChecked(ctx context.Context, sql string, params []any, req engine.Request, chk *objects) (res engine.Result, err error) {
	return e.runPrepared(ctx, sql, params, req, chk, nil)
}

// prepareFunc runs inside runPrepared's transaction, after the uses check
// and before the statement. undo, when not nil, runs after the ROLLBACK (an
// idle session) whatever happened; when it fails the connection is closed,
// never reused. A *contracts.Refusal from prepare is returned as is.
type prepareFunc func(ctx context.Context, conn *pgx.Conn) (undo func(ctx context.Context, pc *pgconn.PgConn) error, err error)

// runPrepared is runChecked with prepare run first in the transaction:
// session state the statement needs that no ROLLBACK or DISCARD ALL would
// remove (a hypothetical index) is set there and removed by its undo.
func (e *Engine) runPrepared(ctx context.Context, sql string, params []any, req engine.Request, chk *objects, prepare prepareFunc) (res engine.Result, err error) {
	res.SQL = sql
	pool := e.pool
	callerCtx := ctx
	if req.Timeout > 0 {
		var cancel context.CancelFunc
		ctx, cancel = context.WithTimeout(ctx, req.Timeout+stopGrace(req.Timeout))
		defer cancel()
	}
	c, err := pool.Acquire(ctx)
	if err != nil {
		return res, classified(callerCtx, err)
	}
	healthy := false
	defer func() {
		if !healthy || !reset(c) {
			// A connection in doubt is never reused.
			conn := c.Hijack()
			closeCtx, cancel := context.WithTimeout(context.Background(), time.Second)
			_ = conn.Close(closeCtx)
			cancel()
			return
		}
		c.Release()
	}()

	pc := c.Conn().PgConn()
	if req.Timeout > 0 {
		defer setStopDelay(pc, stopGrace(req.Timeout))()
	}
	if ok, why := pinnedHeld(pc); !ok {
		return res, why
	}
	if err := control(ctx, pc, "BEGIN READ ONLY"); err != nil {
		return res, classifiedOn(callerCtx, ctx, pc, err)
	}
	// Always roll back; an error here leaves the connection unhealthy.
	var undo func(context.Context, *pgconn.PgConn) error
	defer func() {
		rbCtx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		if rbErr := control(rbCtx, pc, "ROLLBACK"); rbErr != nil || pc.TxStatus() != 'I' {
			healthy = false
			return
		}
		if undo != nil && (pc.IsClosed() || pc.IsBusy() || undo(rbCtx, pc) != nil || pc.TxStatus() != 'I') {
			healthy = false
		}
	}()
	ms := ""
	if req.Timeout > 0 {
		ms = strconv.FormatInt(max(req.Timeout.Milliseconds(), 1), 10)
	}
	if chk != nil {
		// One round trip: the check sets the statement's timeout too.
		if err := e.checkObjects(ctx, c.Conn(), chk, ms); err != nil {
			var ref *contracts.Refusal
			if errors.As(err, &ref) {
				return res, ref
			}
			return res, classifiedOn(callerCtx, ctx, pc, err)
		}
	} else if ms != "" {
		if err := pc.ExecParams(ctx, "SELECT pg_catalog.set_config('statement_timeout', $1, true)",
			[][]byte{[]byte(ms)}, nil, nil, nil).Read().Err; err != nil {
			return res, classifiedOn(callerCtx, ctx, pc, err)
		}
	}
	if prepare != nil {
		u, err := prepare(ctx, c.Conn())
		undo = u
		if err != nil {
			var ref *contracts.Refusal
			if errors.As(err, &ref) {
				return res, ref
			}
			return res, classifiedOn(callerCtx, ctx, pc, err)
		}
	}
	// No message of this result may be larger than what the result may hold
	// (or the operation's memory): a row over it ends the read from its
	// header, and the connection with it.
	pc.Frontend().SetMaxBodyLen(bodyLimit(e.opMem, req.Limits))

	start := time.Now()
	res.Statements = 1
	pid := pc.PID()
	set, err := query(ctx, c.Conn(), sql, params, req.Limits)
	res.Duration = time.Since(start)
	res.Rows = set
	healthy = !pc.IsClosed() && !pc.IsBusy()
	if err != nil {
		var tooLarge *rowset.TooLargeError
		if errors.As(err, &tooLarge) {
			return res, err
		}
		var pgErr *pgconn.PgError
		if ctx.Err() != nil && pc.IsClosed() && !errors.As(err, &pgErr) {
			// The deadline (or the caller) ended the statement, the server
			// did not answer the cancel request, and the socket was
			// closed: the server process may still be running it.
			return res, notStopped(errors.Is(callerCtx.Err(), context.Canceled), req.Timeout, e.terminate(pid))
		}
		return res, classifiedOn(callerCtx, ctx, pc, err)
	}
	return res, nil
}

// control sends one fixed statement over the extended protocol.
func control(ctx context.Context, pc *pgconn.PgConn, sql string) error {
	return pc.ExecParams(ctx, sql, nil, nil, nil, nil).Read().Err
}

// reset returns the session to its startup state before the connection goes
// back to the pool; false means it could not and the connection must go.
func reset(c *pgxpool.Conn) bool {
	pc := c.Conn().PgConn()
	if pc.IsClosed() || pc.IsBusy() || pc.TxStatus() != 'I' {
		return false
	}
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	return control(ctx, pc, "DISCARD ALL") == nil
}

// bodyLimit is the largest wire message a read with limits may receive: a
// row's text on the wire is at most about its JSON form, so twice the
// result's byte bound (and some room for many columns) is never a row the
// result could keep; never more than the operation's memory.
func bodyLimit(opMem int64, limits rowset.Limits) int {
	n := opMem
	if limits.MaxBytes > 0 {
		n = min(n, 2*int64(limits.MaxBytes)+64<<10)
	}
	return int(min(n, math.MaxInt32))
}

// query runs sql over the extended protocol with every result column in
// text format, and collects the rows under limits. When it stops before the
// last row (truncated, or too large for a refusing profile) it cancels the
// statement rather than read the rest off the wire; the connection is then
// closed by pgx and never reused. A row whose wire message passes the
// connection's limit ends the read the same way: too large, or truncated.
func query(ctx context.Context, conn *pgx.Conn, sql string, params []any, limits rowset.Limits) (set *rowset.Set, err error) {
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	defer func() {
		var exceeded *pgproto3.ExceededMaxBodyLenErr
		if !errors.As(err, &exceeded) {
			return
		}
		if set == nil {
			set = rowset.New([]contracts.Column{}, limits)
		}
		if limits.Truncate {
			set.Truncated, set.TruncatedBy, err = true, []string{rowset.ByBytes}, nil
			return
		}
		err = &rowset.TooLargeError{By: rowset.ByBytes, Limit: limits.MaxBytes, Rows: len(set.Rows)}
	}()
	args := append([]any{pgx.QueryExecModeDescribeExec, pgx.QueryResultFormats{pgx.TextFormatCode}}, params...)
	rows, err := conn.Query(ctx, sql, args...)
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	fields := rows.FieldDescriptions()
	tm := conn.TypeMap()
	columns := make([]contracts.Column, len(fields))
	for i, f := range fields {
		columns[i] = contracts.Column{Name: f.Name, Type: typeName(tm, f.DataTypeOID)}
	}
	set = rowset.New(columns, limits)
	stop := func(err error) (*rowset.Set, error) {
		cancel()
		rows.Close()
		return set, err
	}
	for rows.Next() {
		raw := rows.RawValues()
		row := make([]any, len(raw))
		for i, b := range raw {
			v, err := value(fields[i].DataTypeOID, b)
			if err != nil {
				return stop(&contracts.DBError{Class: contracts.DBOther,
					Message: "column " + fields[i].Name + ": " + err.Error()})
			}
			row[i] = v
		}
		more, err := set.Add(row)
		if err != nil {
			return stop(err)
		}
		if !more {
			return stop(nil)
		}
	}
	rows.Close()
	return set, rows.Err()
}
