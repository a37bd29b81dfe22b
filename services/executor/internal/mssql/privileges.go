package mssql

import (
	"context"
	"fmt"
)

// writeSQL asks SQL Server what the login that runs reads may do beyond
// reading: server roles and permissions, database roles, database-wide
// grants, and the tables and views it may write to one by one (a grant on
// one table, or on its schema, shows there). It reads only metadata the
// login can see about itself.
const writeSQL = `SELECT
  ISNULL(IS_SRVROLEMEMBER('sysadmin'), 0),
  ISNULL(HAS_PERMS_BY_NAME(NULL, NULL, 'CONTROL SERVER'), 0),
  ISNULL(IS_ROLEMEMBER('db_owner'), 0),
  ISNULL(IS_ROLEMEMBER('db_datawriter'), 0),
  ISNULL(IS_ROLEMEMBER('db_ddladmin'), 0),
  ISNULL(HAS_PERMS_BY_NAME(DB_NAME(), 'DATABASE', 'CONTROL'), 0),
  ISNULL(HAS_PERMS_BY_NAME(DB_NAME(), 'DATABASE', 'INSERT'), 0),
  ISNULL(HAS_PERMS_BY_NAME(DB_NAME(), 'DATABASE', 'UPDATE'), 0),
  ISNULL(HAS_PERMS_BY_NAME(DB_NAME(), 'DATABASE', 'DELETE'), 0),
  ISNULL(HAS_PERMS_BY_NAME(DB_NAME(), 'DATABASE', 'ALTER'), 0),
  ISNULL(HAS_PERMS_BY_NAME(DB_NAME(), 'DATABASE', 'CREATE TABLE'), 0),
  w.n, w.first
FROM (SELECT COUNT(*) AS n, MIN(name) AS first
        FROM (SELECT QUOTENAME(SCHEMA_NAME(o.schema_id)) + N'.' + QUOTENAME(o.name) AS name
                FROM sys.objects AS o
               WHERE o.type IN ('U', 'V') AND o.is_ms_shipped = 0) AS t
       WHERE HAS_PERMS_BY_NAME(t.name, 'OBJECT', 'INSERT') = 1
          OR HAS_PERMS_BY_NAME(t.name, 'OBJECT', 'UPDATE') = 1
          OR HAS_PERMS_BY_NAME(t.name, 'OBJECT', 'DELETE') = 1) AS w`

// privileges is the answer to writeSQL.
type privileges struct {
	sysadmin, controlServer                bool
	dbOwner, dataWriter, ddlAdmin          bool
	control, insert, update, delete, alter bool
	createTable                            bool
	writableTables                         int64
	firstWritable                          string
}

// reasons says, in the operator's words, why a login with p could write;
// nil when it cannot.
func (p privileges) reasons() []string {
	if p.sysadmin {
		return []string{"the login is a member of the sysadmin server role (it can do anything on the server)"}
	}
	if p.controlServer {
		return []string{"the login holds CONTROL SERVER (it can do anything on the server)"}
	}
	if p.dbOwner {
		return []string{"the user is a member of db_owner (it can do anything in the database)"}
	}
	var out []string
	if p.control {
		out = append(out, "the user holds CONTROL on the database")
	}
	if p.dataWriter {
		out = append(out, "the user is a member of db_datawriter (INSERT, UPDATE and DELETE on every table)")
	}
	if p.ddlAdmin {
		out = append(out, "the user is a member of db_ddladmin (it can create, alter and drop objects)")
	}
	for _, g := range []struct {
		held bool
		perm string
	}{{p.insert, "INSERT"}, {p.update, "UPDATE"}, {p.delete, "DELETE"}, {p.alter, "ALTER"}, {p.createTable, "CREATE TABLE"}} {
		if g.held {
			out = append(out, fmt.Sprintf("the user holds %s on the database", g.perm))
		}
	}
	switch {
	case p.writableTables == 1:
		out = append(out, fmt.Sprintf("the user may INSERT, UPDATE or DELETE in %s", p.firstWritable))
	case p.writableTables > 1:
		out = append(out, fmt.Sprintf("the user may INSERT, UPDATE or DELETE in %d tables or views, %s among them", p.writableTables, p.firstWritable))
	}
	return out
}

// WriteCapable returns why the login that runs this connection's reads
// could write — sysadmin or CONTROL SERVER, db_owner, db_datawriter,
// db_ddladmin, a database-wide INSERT/UPDATE/DELETE/ALTER/CREATE TABLE
// grant, or a write grant on some table or view — or nil when it cannot.
// Reads stay read-only regardless (the guard, the server's plan, a snapshot
// transaction that is always rolled back); what such a login loses is the
// database's own last line: views and functions run with its rights.
func (e *Engine) WriteCapable(ctx context.Context) ([]string, error) {
	var p privileges
	var first *string
	err := e.l.db.QueryRowContext(ctx, writeSQL).Scan(&p.sysadmin, &p.controlServer, &p.dbOwner, &p.dataWriter, &p.ddlAdmin,
		&p.control, &p.insert, &p.update, &p.delete, &p.alter, &p.createTable, &p.writableTables, &first)
	if err != nil {
		return nil, fmt.Errorf("mssql: privileges of the read login: %w", classify(ctx, err, 0))
	}
	if first != nil {
		p.firstWritable = *first
	}
	return p.reasons(), nil
}
