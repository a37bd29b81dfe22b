package mssql

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	mssqldb "github.com/microsoft/go-mssqldb"
	"github.com/sondehq/sonde/contracts"
	"github.com/sondehq/sonde/services/executor/internal/rowset"
)

func TestClassify(t *testing.T) {
	ctx := context.Background()
	cases := []struct {
		err  error
		want contracts.DBErrorClass
	}{
		{mssqldb.Error{Number: 102, Message: "Incorrect syntax near 'x'."}, contracts.DBSyntax},
		{mssqldb.Error{Number: 156}, contracts.DBSyntax},
		{mssqldb.Error{Number: 208, Message: "Invalid object name 'dbo.nope'."}, contracts.DBMissingObject},
		{mssqldb.Error{Number: 207}, contracts.DBMissingObject},
		{mssqldb.Error{Number: 229, Message: "The SELECT permission was denied"}, contracts.DBPermission},
		{mssqldb.Error{Number: 230}, contracts.DBPermission},
		{mssqldb.Error{Number: 262}, contracts.DBPermission},
		{mssqldb.Error{Number: 297}, contracts.DBPermission},
		{mssqldb.Error{Number: 1205}, contracts.DBResource},
		{mssqldb.Error{Number: 701}, contracts.DBResource},
		{mssqldb.Error{Number: 8645}, contracts.DBResource},
		{mssqldb.Error{Number: 50000}, contracts.DBOther},
		{fmt.Errorf("wrapped: %w", mssqldb.Error{Number: 208}), contracts.DBMissingObject},
		{&mssqldb.Error{Number: 229}, contracts.DBPermission},
		{context.DeadlineExceeded, contracts.DBTimeout},
		{context.Canceled, contracts.DBCancelled},
		{errors.New("driver: bad connection"), contracts.DBOther},
	}
	for _, c := range cases {
		if got := classify(ctx, c.err, time.Second); got.Class != c.want || got.Message == "" {
			t.Errorf("%v: %+v, want %s", c.err, got, c.want)
		}
	}
	// A statement the server ended because our context did is a timeout,
	// whatever error the driver returned for it.
	dctx, cancel := context.WithTimeout(ctx, time.Nanosecond)
	defer cancel()
	<-dctx.Done()
	if got := classify(dctx, errors.New("mssql: canceled"), time.Second); got.Class != contracts.DBTimeout {
		t.Errorf("ended context: %+v", got)
	}
	if got := classify(ctx, mssqldb.Error{Number: snapshotOff}, 0); !strings.Contains(got.Message, "ALLOW_SNAPSHOT_ISOLATION") {
		t.Errorf("snapshot isolation off: %+v", got)
	}
}

func TestValue(t *testing.T) {
	id := []byte{0x33, 0x22, 0x11, 0x00, 0x55, 0x44, 0x77, 0x66, 0x88, 0x99, 0xAA, 0xBB, 0xCC, 0xDD, 0xEE, 0xFF}
	cases := []struct {
		in     any
		dbType string
		want   any
	}{
		{[]byte("12.50"), "DECIMAL", "12.50"},
		{[]byte("-3.1400"), "MONEY", "-3.1400"},
		{id, "UNIQUEIDENTIFIER", "00112233-4455-6677-8899-AABBCCDDEEFF"},
		{[]byte{1, 2}, "VARBINARY", rowset.NewBlob([]byte{1, 2})},
		{int64(7), "BIGINT", int64(7)},
		{int32(7), "INT", int64(7)},
		{uint8(7), "TINYINT", int64(7)},
		{float32(1.5), "REAL", float64(1.5)},
		{true, "BIT", true},
		{nil, "INT", nil},
		{"x", "NVARCHAR", "x"},
	}
	for _, c := range cases {
		got, err := value(c.in, c.dbType)
		if err != nil || fmt.Sprint(got) != fmt.Sprint(c.want) {
			t.Errorf("%v (%s): %v, %v; want %v", c.in, c.dbType, got, err, c.want)
		}
	}
	if _, err := value("\xff", "VARCHAR"); !errors.Is(err, rowset.ErrInvalidUTF8) {
		t.Errorf("invalid UTF-8: %v", err)
	}
}

func TestBatch(t *testing.T) {
	// go-mssqldb sends a text that looks like a procedure name as an RPC.
	if got := batch("SELECT*FROM\"t\""); got != "SELECT*FROM\"t\"\n" {
		t.Errorf("batch: %q", got)
	}
	if got := batch("SELECT 1"); got != "SELECT 1\n" {
		t.Errorf("batch: %q", got)
	}
	// A space inside brackets does not stop go-mssqldb's procedure test.
	if got := batch(`SELECT*FROM"t".[a b]`); got != "SELECT*FROM\"t\".[a b]\n" {
		t.Errorf("batch: %q", got)
	}
}
