package mssql

import (
	"context"
	"errors"
	"io"
	"net"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/sondehq/sonde/services/executor/internal/engine"
	"github.com/sondehq/sonde/services/executor/internal/rowset"
)

// TestMeteredConn: a response may not pass the limit between two writes of
// the client (or two rows taken); past it every read fails, for good.
func TestMeteredConn(t *testing.T) {
	client, server := net.Pipe()
	defer server.Close()
	mc := &meteredConn{Conn: client, limit: 10}
	closed := false
	mc.onClose = func() { closed = true }
	go func() {
		buf := make([]byte, 1)
		for _, chunk := range []string{"12345", "67890", "ab", "cdefghij", "k"} {
			if _, err := io.ReadFull(server, buf); err != nil { // one request per chunk
				return
			}
			server.Write([]byte(chunk))
		}
	}()
	read := func(n int) (string, error) {
		b := make([]byte, n)
		k, err := io.ReadFull(mc, b)
		return string(b[:k]), err
	}
	mc.Write([]byte{1})
	if got, err := read(5); err != nil || got != "12345" {
		t.Fatalf("first response: %q, %v", got, err)
	}
	mc.Write([]byte{1}) // a new request: a new count
	if got, err := read(5); err != nil || got != "67890" {
		t.Fatalf("second response: %q, %v", got, err)
	}
	mc.reset() // a row taken: a new count
	mc.Write([]byte{1})
	if _, err := read(2); err != nil {
		t.Fatal(err)
	}
	mc.reset()
	mc.Write([]byte{1})
	if _, err := read(8); err != nil {
		t.Fatalf("8 bytes after a reset: %v", err)
	}
	mc.Write([]byte{1}) // 1 more byte: still 1 in the new count, under 10
	if _, err := read(1); err != nil {
		t.Fatal(err)
	}
	// Now pass the limit within one response.
	c2, s2 := net.Pipe()
	defer s2.Close()
	go func() { s2.Write([]byte("0123456789AB")); s2.Close() }()
	mc2 := &meteredConn{Conn: c2, limit: 10}
	if _, err := io.ReadAll(mc2); !errors.Is(err, errResponseTooLarge) || !mc2.tripped.Load() {
		t.Fatalf("12 bytes under a limit of 10: %v, tripped %v", err, mc2.tripped.Load())
	}
	mc2.reset()
	if _, err := mc2.Read(make([]byte, 1)); !errors.Is(err, errResponseTooLarge) {
		t.Errorf("a tripped socket read again after a write: %v", err)
	}
	mc.Close()
	mc.Close()
	if !closed {
		t.Error("closing the socket did not forget it")
	}
}

// TestConnectorDialsMetered: go-mssqldb dials through the metered dialer
// with the context Connect was given, so each connection's socket is known.
func TestConnectorDialsMetered(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			c.Close() // no SQL Server here: the login fails after the dial
		}
	}()
	addr := ln.Addr().(*net.TCPAddr)
	c, err := newConnector("sqlserver://u:p@127.0.0.1:"+strconv.Itoa(addr.Port)+"?dial+timeout=2&connection+timeout=3&encrypt=disable", sessionInit(1<<20), 1<<20)
	if err != nil {
		t.Fatal(err)
	}
	inner := c.Connector.Dialer
	var sawSlot, sawMetered bool
	c.Connector.Dialer = dialFunc(func(ctx context.Context, network, addr string) (net.Conn, error) {
		conn, err := inner.DialContext(ctx, network, addr)
		_, sawSlot = ctx.Value(dialSlotKey{}).(*dialSlot)
		_, sawMetered = conn.(*meteredConn)
		return conn, err
	})
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	if _, err := c.Connect(ctx); err == nil {
		t.Fatal("a login to a socket that closes succeeded")
	}
	if !sawSlot || !sawMetered {
		t.Errorf("dial: slot in context %v, metered %v", sawSlot, sawMetered)
	}
	if len(c.sockets) != 0 {
		t.Errorf("a failed connection was remembered: %d", len(c.sockets))
	}
}

type dialFunc func(ctx context.Context, network, addr string) (net.Conn, error)

func (f dialFunc) DialContext(ctx context.Context, network, addr string) (net.Conn, error) {
	return f(ctx, network, addr)
}

func TestSessionInitTextSize(t *testing.T) {
	if got := sessionInit(textSize(64 << 20)); !strings.HasSuffix(got, "SET TEXTSIZE 67108864") || !strings.Contains(got, "SET XACT_ABORT ON") {
		t.Errorf("session init %q", got)
	}
	cases := map[int64]int64{0: minTextSize, 1: minTextSize, 64 << 20: 64 << 20, 1 << 40: 1<<31 - 1}
	for in, want := range cases {
		if got := textSize(in); got != want {
			t.Errorf("textSize(%d) = %d, want %d", in, got, want)
		}
	}
}

func TestCapValue(t *testing.T) {
	cases := []struct {
		v      any
		dbType string
		want   bool
	}{
		{strings.Repeat("x", 9), "VARCHAR", false},
		{strings.Repeat("x", 10), "VARCHAR", true},
		{make([]byte, 10), "VARBINARY", true},
		{make([]byte, 9), "IMAGE", false},
		{strings.Repeat("x", 5), "NVARCHAR", true}, // 10 bytes at the server
		{strings.Repeat("x", 4), "NVARCHAR", false},
		{"\U0001F600\U0001F600\U0001F600", "NTEXT", true}, // 12 bytes at the server
		{strings.Repeat("x", 5), "XML", true},
		{int64(1 << 40), "BIGINT", false},
		{nil, "NVARCHAR", false},
	}
	for _, c := range cases {
		if got := capValue(c.v, c.dbType, 10); got != c.want {
			t.Errorf("capValue(%v, %s) = %v, want %v", c.v, c.dbType, got, c.want)
		}
	}
}

func TestTruncated(t *testing.T) {
	tl := &rowset.TooLargeError{By: rowset.ByBytes, Limit: 10}
	res := engine.Result{Rows: rowset.New(nil, rowset.Limits{MaxRows: 1, MaxBytes: 1})}
	if _, err := truncated(res, rowset.Limits{MaxRows: 1, MaxBytes: 1}, tl); err != tl {
		t.Errorf("refusing profile: %v", err)
	}
	got, err := truncated(res, rowset.Limits{MaxRows: 1, MaxBytes: 1, Truncate: true}, tl)
	if err != nil || !got.Rows.Truncated || got.Rows.TruncatedBy[0] != rowset.ByBytes {
		t.Errorf("truncating profile: %+v, %v", got.Rows, err)
	}
}

func TestPrivilegeReasons(t *testing.T) {
	if r := (privileges{}).reasons(); r != nil {
		t.Errorf("a read-only login: %v", r)
	}
	if r := (privileges{sysadmin: true, dataWriter: true}).reasons(); len(r) != 1 || !strings.Contains(r[0], "sysadmin") {
		t.Errorf("sysadmin: %v", r)
	}
	if r := (privileges{dbOwner: true}).reasons(); len(r) != 1 || !strings.Contains(r[0], "db_owner") {
		t.Errorf("db_owner: %v", r)
	}
	r := (privileges{dataWriter: true, createTable: true, writableTables: 3, firstWritable: "[dbo].[orders]"}).reasons()
	if len(r) != 3 || !strings.Contains(r[0], "db_datawriter") || !strings.Contains(r[1], "CREATE TABLE") || !strings.Contains(r[2], "3 tables or views, [dbo].[orders]") {
		t.Errorf("writer: %q", r)
	}
	if r := (privileges{writableTables: 1, firstWritable: "[dbo].[t]"}).reasons(); len(r) != 1 || !strings.Contains(r[0], "in [dbo].[t]") {
		t.Errorf("one table: %q", r)
	}
}
