package sqlite

import (
	"bufio"
	"context"
	"crypto/sha256"
	"database/sql"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/sondehq/sonde/contracts"
	"github.com/sondehq/sonde/pkg/cputest"
	"github.com/sondehq/sonde/services/executor/internal/engine"
)

// digest is the SHA-256 of a file's bytes.
func digest(t *testing.T, path string) string {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	return fmt.Sprintf("%x", sha256.Sum256(b))
}

// hostileShape is one hostile statement and how it must end: refused by the
// guard with its code; or — written "db:<class>", for the few the guard
// cannot see because SQLite compiles them only while the statement runs
// (the pragma table functions) or resolves them only then — failed by the
// database with that class: the authorizer's denial, a missing table, a
// LIKE pattern past the limit; or — written "ran:<code>" — refused with
// that code once a limit SQLite holds while it runs stopped it (the heap
// limit). Any other outcome, an unrelated database error included, fails
// the test.
type hostileShape struct {
	sql  string
	want string
}

// hostileShapes run against a real file: each ends as it says, and the
// file's bytes stay what they were.
var hostileShapes = []hostileShape{
	{"delete from t", string(contracts.RefuseNotASelect)},
	{"insert into t(id) values (9)", string(contracts.RefuseNotASelect)},
	{"replace into t(id) values (1)", string(contracts.RefuseNotASelect)},
	{"update t set name = 'x'", string(contracts.RefuseNotASelect)},
	{"drop table t", string(contracts.RefuseNotASelect)},
	{"create table x(a)", string(contracts.RefuseNotASelect)},
	{"create index t_name on t(name)", string(contracts.RefuseNotASelect)},
	{"alter table t add column c", string(contracts.RefuseNotASelect)},
	{"vacuum", string(contracts.RefuseNotASelect)},
	{"vacuum into 'copy.db'", string(contracts.RefuseNotASelect)},
	{"reindex", string(contracts.RefuseNotASelect)},
	{"analyze", string(contracts.RefuseNotASelect)},
	{"attach database 'other.db' as o", string(contracts.RefuseNotASelect)},
	{"pragma writable_schema = 1", string(contracts.RefuseNotASelect)},
	{"pragma query_only = 0; delete from t", string(contracts.RefuseNotASelect)},
	{"pragma journal_mode = delete", string(contracts.RefuseNotASelect)},
	{"pragma user_version = 7", string(contracts.RefuseNotASelect)},
	{"begin immediate", string(contracts.RefuseNotASelect)},
	{"select 1; delete from t", string(contracts.RefuseNotOneStatement)},
	{"select 1 /* ; */ ; drop table t", string(contracts.RefuseNotOneStatement)},
	{"with d as (select 1) delete from t", string(contracts.RefuseNotASelect)},
	{"with d as (select 1) insert into t(id) select 9 from d", string(contracts.RefuseNotASelect)},
	{"with d as (select 1) update t set name = 'x'", string(contracts.RefuseNotASelect)},
	{"select load_extension('evil')", string(contracts.RefuseFunctionDenied)},
	{"select writefile('x', 'y')", string(contracts.RefuseFunctionDenied)},
	{"select * from sqlite_dbpage", string(contracts.RefuseTableFunction)},
	{"select * from dbstat", string(contracts.RefuseTableFunction)},
	{"select * from pragma_compile_options", string(contracts.RefuseTableFunction)},
	{"select $a(x; delete from t)", string(contracts.RefuseUnparsable)},
	{"create temp table x(a)", string(contracts.RefuseNotASelect)},
	{"create trigger tr after insert on t begin delete from t; end", string(contracts.RefuseNotASelect)},
	{"savepoint s", string(contracts.RefuseNotASelect)},
	{"select 'a'; vacuum", string(contracts.RefuseNotOneStatement)},
	// SQLite's own catalog is readable only when a pattern names it.
	{"select * from sqlite_master", string(contracts.RefuseTableNotReadable)},
	{"select * from SQLITE_SCHEMA", string(contracts.RefuseTableNotReadable)},
	{"select * from main.sqlite_temp_master", "db:" + string(contracts.DBMissingObject)},
	{"pragma table_list", string(contracts.RefuseTableNotReadable)},
	{"select name from pragma_table_list", "db:" + string(contracts.DBPermission)},
	{"select name from pragma_table_info('sqlite_master')", "db:" + string(contracts.DBPermission)},
	{"SELEC 1", string(contracts.RefuseUnparsable)},
	{"selec * from t; delete from t", string(contracts.RefuseUnparsable)},
	// A catalog read without a column, beside a CTE of its name.
	{"select count(*) from sqlite_master, (with sqlite_master as (select 1) select 1 from sqlite_master)", string(contracts.RefuseTableNotReadable)},
	{"with sqlite_master as (select 1) select count(*) from main.sqlite_master", string(contracts.RefuseTableNotReadable)},
	{"select (with sqlite_schema as (select 1) select count(*) from sqlite_schema) from sqlite_master", string(contracts.RefuseTableNotReadable)},
	// Work SQLite cannot interrupt inside one step, and aggregates that grow
	// past what a read may hold (issue 17, items 4 and 5).
	{"SELECT hex(zeroblob(400000)) LIKE '%' || hex(zeroblob(20000)) || '1%'", string(contracts.RefuseTooComplex)},
	{"select printf('%.*c', 500000, 'a') glob '*' || printf('%.*c', 20000, 'a') || 'b*'", string(contracts.RefuseTooComplex)},
	{"select instr(hex(zeroblob(500000)), hex(zeroblob(250000)) || '1')", string(contracts.RefuseTooComplex)},
	{"select replace(hex(zeroblob(500000)), hex(zeroblob(250000)) || '1', 'x')", string(contracts.RefuseTooComplex)},
	{"with b(s, n) as (select hex(zeroblob(500000)), hex(zeroblob(250000)) || '1') select instr(s, n) from b", string(contracts.RefuseTooComplex)},
	{"with recursive r(s) as (select hex(zeroblob(500000)) union all select s from r) select count(*) from r where s like '%" + strings.Repeat("0", 20000) + "1%'", "db:" + string(contracts.DBOther)},
	{"with recursive c(x) as (select 1 union all select x + 1 from c where x < 700) select length(json_group_array(hex(zeroblob(500000)))) from c", "ran:" + string(contracts.RefuseResultTooLarge)},
	{"with recursive c(x) as (select 1 union all select x + 1 from c where x < 700) select length(json_group_object(x, hex(zeroblob(500000)))) from c", "ran:" + string(contracts.RefuseResultTooLarge)},
	{"with recursive c(x) as (select 1 union all select x + 1 from c where x < 700) select length(jsonb_group_array(hex(zeroblob(500000)))) from c", "ran:" + string(contracts.RefuseResultTooLarge)},
}

func TestHostileCorpusLeavesFileUnchanged(t *testing.T) {
	path := fixture(t)
	before := digest(t, path)
	e := open(t, path)
	if len(hostileShapes) < 25 {
		t.Fatalf("%d shapes, want at least 25", len(hostileShapes))
	}
	for _, c := range hostileShapes {
		start := time.Now()
		res, err := read(t, e, c.sql)
		// Wall time: every line ends within twice its deadline, and leaves
		// no work running (cputest.WorkGone).
		if took := time.Since(start); took > 2*readTimeout {
			t.Errorf("%.100q: answered after %s, more than twice its %s deadline", c.sql, took, readTimeout)
		}
		var ref *contracts.Refusal
		var dbErr *contracts.DBError
		class, atRunTime := strings.CutPrefix(c.want, "db:")
		limit, ran := strings.CutPrefix(c.want, "ran:")
		switch {
		case ran:
			if raceEnabled && errors.As(err, &dbErr) && dbErr.Class == contracts.DBTimeout {
				break // the race detector slows SQLite's code past the deadline before the limit is reached
			}
			if !errors.As(err, &ref) || string(ref.Code) != limit {
				t.Errorf("%q: %v, want the refusal %s of a limit SQLite holds while it runs", c.sql, err, limit)
			}
		case !atRunTime:
			if !errors.As(err, &ref) || string(ref.Code) != c.want {
				t.Errorf("%q: %v, want the guard's refusal %s", c.sql, err, c.want)
			} else if res.Statements != 0 {
				t.Errorf("%q: refused after %d statements ran", c.sql, res.Statements)
			}
		case !errors.As(err, &dbErr) || string(dbErr.Class) != class:
			t.Errorf("%q: %v, want a database error of class %s", c.sql, err, class)
		case dbErr.Class == contracts.DBPermission && !strings.Contains(dbErr.Message, "authorizer denied"):
			t.Errorf("%q: %s, want the authorizer's denial", c.sql, dbErr.Message)
		}
	}
	cputest.WorkGone(t, "the hostile corpus")
	e.Close()
	if after := digest(t, path); after != before {
		t.Fatal("the database file changed")
	}
	for _, side := range []string{"-journal", "-wal", "copy.db", "other.db"} {
		if _, err := os.Stat(path + side); err == nil {
			t.Errorf("%s was created", path+side)
		}
	}
}

// TestWALWriterProcess is the writer of TestLiveWAL, run in a process of its
// own; it does nothing in a normal run. On each "commit" line it commits ten
// rows and answers "ok <rows>"; on "quit" it closes and exits. Checkpoints
// are off, so the commits stay in the -wal file.
func TestWALWriterProcess(t *testing.T) {
	path := os.Getenv("SONDE_SQLITE_WAL_WRITER")
	if path == "" {
		t.Skip("the writer process of TestLiveWAL")
	}
	db, err := sql.Open("sqlite", "file:"+path+"?_pragma=journal_mode(WAL)&_pragma=wal_autocheckpoint(0)&_pragma=busy_timeout(10000)")
	if err != nil {
		t.Fatal(err)
	}
	db.SetMaxOpenConns(1)
	in := bufio.NewScanner(os.Stdin)
	for in.Scan() {
		switch in.Text() {
		case "commit":
			tx, err := db.Begin()
			if err != nil {
				t.Fatal(err)
			}
			for range 10 {
				if _, err := tx.Exec("INSERT INTO e(v) VALUES (hex(randomblob(16)))"); err != nil {
					t.Fatal(err)
				}
			}
			if err := tx.Commit(); err != nil {
				t.Fatal(err)
			}
			var n int
			if err := db.QueryRow("SELECT count(*) FROM e").Scan(&n); err != nil {
				t.Fatal(err)
			}
			fmt.Printf("ok %d\n", n)
		case "quit":
			db.Close()
			return
		}
	}
}

// TestLiveWAL reads a WAL database while another process commits to it: the
// reader sees each commit, and the database and -wal bytes are the same
// after the reads as before them. The writer commits only when told, so the
// files are hashed at points this test controls.
func TestLiveWAL(t *testing.T) {
	if os.Getenv("SONDE_SQLITE_WAL_WRITER") != "" {
		t.Skip("inside the writer process")
	}
	path := filepath.Join(t.TempDir(), "live.db")
	w, err := sql.Open("sqlite", path)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := w.Exec("PRAGMA journal_mode=WAL; CREATE TABLE e (id INTEGER PRIMARY KEY, v TEXT)"); err != nil {
		t.Fatal(err)
	}
	w.Close()

	cmd := exec.Command(os.Args[0], "-test.run=^TestWALWriterProcess$", "-test.v=false")
	cmd.Env = append(os.Environ(), "SONDE_SQLITE_WAL_WRITER="+path)
	stdin, err := cmd.StdinPipe()
	if err != nil {
		t.Fatal(err)
	}
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	cmd.Stderr = os.Stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	defer cmd.Wait()
	defer stdin.Close()
	replies := bufio.NewScanner(stdout)
	commit := func() int {
		t.Helper()
		if _, err := io.WriteString(stdin, "commit\n"); err != nil {
			t.Fatal(err)
		}
		for replies.Scan() {
			var n int
			if _, err := fmt.Sscanf(replies.Text(), "ok %d", &n); err == nil {
				return n
			}
		}
		t.Fatalf("the writer stopped: %v", replies.Err())
		return 0
	}

	e := open(t, path)
	for round := 1; round <= 3; round++ {
		want := commit()
		if fi, err := os.Stat(path + "-wal"); err != nil || fi.Size() == 0 {
			t.Fatalf("round %d: no WAL content (%v)", round, err)
		}
		db, wal := digest(t, path), digest(t, path+"-wal")
		for range 3 {
			res, err := read(t, e, "select count(*) from e")
			if err != nil {
				t.Fatal(err)
			}
			if got := res.Rows.Rows[0][0]; got != int64(want) {
				t.Fatalf("round %d: read %v rows, the writer committed %d", round, got, want)
			}
		}
		if digest(t, path) != db || digest(t, path+"-wal") != wal {
			t.Fatalf("round %d: the reader changed the database or its WAL", round)
		}
	}
	if _, err := io.WriteString(stdin, "quit\n"); err != nil {
		t.Fatal(err)
	}
}

// TestCancelReleasesLock: a reader cancelled in the middle of a statement
// gives its lock back, and a writer waiting for it proceeds.
func TestCancelReleasesLock(t *testing.T) {
	path := fixture(t) // rollback journal: a reader's shared lock holds a writer off
	e := open(t, path)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	readDone := make(chan error, 1)
	go func() {
		_, err := e.Read(ctx, engine.Request{
			SQL:    "with recursive c(x) as (select 1 union all select x + 1 from c) select count(*) from c, t",
			Limits: refuseLimits})
		readDone <- err
	}()

	// The reader holds its shared lock once no exclusive lock can be had.
	probe, err := sql.Open("sqlite", "file:"+path+"?_pragma=busy_timeout(0)")
	if err != nil {
		t.Fatal(err)
	}
	defer probe.Close()
	probe.SetMaxOpenConns(1)
	tick := time.NewTicker(5 * time.Millisecond)
	defer tick.Stop()
	deadline := time.After(20 * time.Second)
	for {
		if _, err := probe.Exec("BEGIN EXCLUSIVE"); err != nil {
			if !strings.Contains(err.Error(), "locked") && !strings.Contains(err.Error(), "busy") {
				t.Fatal(err)
			}
			break
		}
		if _, err := probe.Exec("ROLLBACK"); err != nil {
			t.Fatal(err)
		}
		select {
		case <-tick.C:
		case <-deadline:
			t.Fatal("the reader never took its lock")
		case err := <-readDone:
			t.Fatalf("the reader ended: %v", err)
		}
	}

	writer, err := sql.Open("sqlite", "file:"+path+"?_pragma=busy_timeout(30000)")
	if err != nil {
		t.Fatal(err)
	}
	defer writer.Close()
	wrote := make(chan error, 1)
	go func() {
		_, err := writer.Exec("INSERT INTO n VALUES (5000)")
		wrote <- err
	}()
	select {
	case err := <-wrote:
		t.Fatalf("the writer did not have to wait for the reader: %v", err)
	case <-time.After(200 * time.Millisecond):
	}
	cancel()
	wantClass(t, <-readDone, contracts.DBCancelled)
	select {
	case err := <-wrote:
		if err != nil {
			t.Fatalf("the writer failed after the reader was cancelled: %v", err)
		}
	case <-time.After(20 * time.Second):
		t.Fatal("the writer is still waiting after the reader was cancelled")
	}
}
