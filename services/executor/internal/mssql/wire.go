package mssql

import (
	"context"
	"database/sql"
	"database/sql/driver"
	"errors"
	"fmt"
	"net"
	"sync"
	"sync/atomic"
	"time"

	mssqldb "github.com/microsoft/go-mssqldb"
	"github.com/microsoft/go-mssqldb/msdsn"
)

// go-mssqldb reads a whole row, every value of it, before the row reaches
// this package, and it has no setting that bounds a value's size. Two
// things bound the bytes one operation holds while it reads instead:
//
//   - SET TEXTSIZE in every session (sessionInit): SQL Server itself cuts
//     varchar(max), nvarchar(max), varbinary(max), text, ntext and image
//     values to the operation's memory before it sends them; a value that
//     reaches the cut is refused as too large (capValue), never passed on
//     cut short;
//   - the connection's socket is metered (meteredConn): the bytes of one
//     response read since the client last wrote or a row was delivered may
//     not pass the operation's memory. Past it every read fails, the driver
//     stops reading, the operation ends as *rowset.TooLargeError and the
//     session is closed. This covers what TEXTSIZE does not (xml, CLR types,
//     many wide columns in one row).
//
// What still escapes: go-mssqldb allocates a buffer of a large value's
// advertised length before reading it, up to the length SQL Server
// announces. For the types TEXTSIZE covers that length is at most the cut;
// for xml and CLR values it is not (docs/executor-mssql.md).

// errResponseTooLarge is what a metered socket returns once a response
// passed its limit.
var errResponseTooLarge = errors.New("mssql: the server's response passed the operation's memory")

// meteredConn counts the bytes read from the server since the client last
// wrote (a new request) or last took a row (reset). Once the count passes
// limit, every read fails for the rest of the connection's life.
type meteredConn struct {
	net.Conn
	limit   int64
	read    atomic.Int64
	tripped atomic.Bool
	onClose func()
	closed  sync.Once
}

func (c *meteredConn) Read(p []byte) (int, error) {
	if c.tripped.Load() {
		return 0, errResponseTooLarge
	}
	n, err := c.Conn.Read(p)
	if c.read.Add(int64(n)) > c.limit {
		c.tripped.Store(true)
		return 0, errResponseTooLarge
	}
	return n, err
}

func (c *meteredConn) Write(p []byte) (int, error) {
	c.read.Store(0)
	return c.Conn.Write(p)
}

// reset starts a new count: a row was taken off the response.
func (c *meteredConn) reset() { c.read.Store(0) }

func (c *meteredConn) Close() error {
	c.closed.Do(func() {
		if c.onClose != nil {
			c.onClose()
		}
	})
	return c.Conn.Close()
}

// meteredDialer dials TCP as go-mssqldb's own dialer does and meters the
// connection; other networks (the SQL Browser's UDP) pass through.
type meteredDialer struct {
	nd    *net.Dialer
	limit int64
}

// dialSlot is how Connect learns which socket go-mssqldb dialed for the
// connection it returns: the dialer puts the socket in the slot the
// context carries.
type dialSlot struct{ conn *meteredConn }

type dialSlotKey struct{}

func (d meteredDialer) DialContext(ctx context.Context, network, addr string) (net.Conn, error) {
	c, err := d.nd.DialContext(ctx, network, addr)
	if err != nil || network != "tcp" && network != "tcp4" && network != "tcp6" {
		return c, err
	}
	mc := &meteredConn{Conn: c, limit: d.limit}
	if slot, ok := ctx.Value(dialSlotKey{}).(*dialSlot); ok {
		slot.conn = mc
	}
	return mc, nil
}

// connector is go-mssqldb's connector with metered sockets, and the index
// from each connection it made to its socket.
type connector struct {
	*mssqldb.Connector
	mu      sync.Mutex
	sockets map[driver.Conn]*meteredConn
}

var _ driver.Connector = (*connector)(nil)

// newConnector parses dsn and builds a connector whose sessions begin with
// init and whose responses are metered to limit bytes.
func newConnector(dsn, init string, limit int64) (*connector, error) {
	cfg, err := msdsn.Parse(dsn)
	if err != nil {
		return nil, fmt.Errorf("mssql: %w", err)
	}
	mc, err := mssqldb.NewConnector(dsn)
	if err != nil {
		return nil, fmt.Errorf("mssql: %w", err)
	}
	ka := cfg.KeepAlive
	if ka == 0 {
		ka = 30 * time.Second // go-mssqldb's own default
	}
	mc.SessionInitSQL = init
	mc.Dialer = meteredDialer{nd: &net.Dialer{KeepAlive: ka}, limit: limit}
	return &connector{Connector: mc, sockets: map[driver.Conn]*meteredConn{}}, nil
}

// Connect opens one connection and remembers its socket.
func (c *connector) Connect(ctx context.Context) (driver.Conn, error) {
	slot := &dialSlot{}
	dc, err := c.Connector.Connect(context.WithValue(ctx, dialSlotKey{}, slot))
	if err == nil && dc != nil && slot.conn != nil {
		c.mu.Lock()
		c.sockets[dc] = slot.conn
		c.mu.Unlock()
		slot.conn.onClose = func() {
			c.mu.Lock()
			delete(c.sockets, dc)
			c.mu.Unlock()
		}
	}
	return dc, err
}

// socket returns the metered socket under conn, or nil.
func (c *connector) socket(conn *sql.Conn) *meteredConn {
	var mc *meteredConn
	_ = conn.Raw(func(dc any) error {
		if d, ok := dc.(driver.Conn); ok {
			c.mu.Lock()
			mc = c.sockets[d]
			c.mu.Unlock()
		}
		return nil
	})
	return mc
}
