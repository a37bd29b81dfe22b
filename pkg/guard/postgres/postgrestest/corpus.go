// Package postgrestest holds the PostgreSQL guard's test corpora — hostile
// statements with the refusal each must get, and valid analytics that must
// pass — together with the fixture schema and policy they are written
// against, so the guard's own tests and the executor's tests against a real
// server share one list.
package postgrestest

import (
	"strings"

	"github.com/sondehq/sonde/contracts"
	"github.com/sondehq/sonde/pkg/guard"
)

// Case is one hostile statement and the refusal code it must get.
type Case struct {
	Name string
	SQL  string
	Code contracts.Code
}

// GrammarSince holds, by Case name, the hostile shapes that are refused
// only for a server older than the server_version_num given, or of unknown
// version (the guard's zero Reader): from that version they are SQL/JSON
// grammar, which the server reads as the guard does, and they pass.
var GrammarSince = map[string]int{}

func init() {
	for _, c := range Hostile {
		if v, ok := since[c.Name]; ok {
			GrammarSince[c.Name] = v
		}
	}
}

// Policy is the connection policy the corpora are written against: the three
// fixture tables readable, events large and bounded on event_date.
func Policy() guard.Policy {
	return guard.Policy{
		Readable:      []string{"public.customers", "public.orders", "public.events"},
		LargeTables:   map[string]string{"public.events": "event_date"},
		DefaultSchema: "public",
		Catalog:       "sonde_test",
	}
}

// Fixture creates the schema the corpora read: customers, orders (with its
// sequence orders_id_seq) and events in public, and secret.keys, which the
// policy does not make readable. It drops what it creates first.
const Fixture = `
DROP SCHEMA IF EXISTS secret CASCADE;
DROP TABLE IF EXISTS public.events, public.orders, public.customers CASCADE;
CREATE SCHEMA secret;
CREATE TABLE secret.keys (id int PRIMARY KEY, k text NOT NULL);
CREATE TABLE public.customers (id int PRIMARY KEY, name text NOT NULL);
CREATE TABLE public.orders (
	id serial PRIMARY KEY,
	customer_id int NOT NULL REFERENCES public.customers (id),
	amount numeric(10,2) NOT NULL,
	created_at timestamptz NOT NULL
);
CREATE TABLE public.events (id int PRIMARY KEY, event_date date NOT NULL, kind text NOT NULL, data jsonb);
INSERT INTO secret.keys VALUES (1, 'the secret');
INSERT INTO public.customers SELECT i, 'customer ' || i FROM generate_series(1, 20) i;
INSERT INTO public.orders (customer_id, amount, created_at)
	SELECT 1 + i % 20, (i * 7 % 500) + 0.5, now() - (i || ' hours')::interval FROM generate_series(1, 500) i;
INSERT INTO public.events
	SELECT i, current_date - (i % 60), CASE WHEN i % 3 = 0 THEN 'view' ELSE 'click' END, jsonb_build_object('n', i)
	FROM generate_series(1, 1000) i;
`

// Hostile lists statements the guard must refuse, one or more per class of
// bypass: stacked statements, comment-prefixed writes, writable CTEs, SELECT
// INTO and row locks, settings, functions with side effects or reaching
// files, the network, other sessions or tables named in strings, table
// functions, unreadable tables and unbounded large tables.
var Hostile = []Case{
	// Nothing to run, or nothing PostgreSQL can read.
	{"blank", "   ", contracts.RefuseEmpty},
	{"comments and semicolons", "-- nothing here\n ;; /* or here */ ;", contracts.RefuseEmpty},
	{"misspelt", "SELEC 1", contracts.RefuseUnparsable},
	{"question-mark placeholder", "SELECT * FROM orders WHERE id = ?", contracts.RefuseUnparsable},
	{"unterminated string", "SELECT 'open", contracts.RefuseUnparsable},
	{"NUL hides a second statement", "SELECT 1\x00; DELETE FROM orders", contracts.RefuseUnparsable},

	// Stacked statements: the simple-protocol bypass of BEGIN READ ONLY.
	{"commit then insert", "COMMIT; INSERT INTO orders (customer_id, amount, created_at) VALUES (1, 1, now())", contracts.RefuseNotOneStatement},
	{"select then delete", "SELECT 1; DELETE FROM orders", contracts.RefuseNotOneStatement},
	{"select then commit", "SELECT 1; COMMIT", contracts.RefuseNotOneStatement},
	{"rollback then read-write", "ROLLBACK; SET SESSION CHARACTERISTICS AS TRANSACTION READ WRITE; SELECT 1", contracts.RefuseNotOneStatement},
	{"comment then stacked update", "/* SELECT */ SELECT 1; UPDATE orders SET amount = 0", contracts.RefuseNotOneStatement},

	// Not a SELECT at all, however it is dressed.
	{"insert", "INSERT INTO orders (customer_id, amount, created_at) VALUES (1, 1, now())", contracts.RefuseNotASelect},
	{"update", "UPDATE orders SET amount = 0", contracts.RefuseNotASelect},
	{"delete behind a line comment", "-- SELECT * FROM orders\nDELETE FROM orders", contracts.RefuseNotASelect},
	{"truncate behind a block comment", "/* SELECT * FROM orders */ TRUNCATE orders", contracts.RefuseNotASelect},
	{"merge", "MERGE INTO orders o USING customers c ON o.customer_id = c.id WHEN MATCHED THEN DELETE", contracts.RefuseNotASelect},
	{"lone commit", "COMMIT", contracts.RefuseNotASelect},
	{"set", "SET statement_timeout = 0", contracts.RefuseNotASelect},
	{"set transaction read write", "SET TRANSACTION READ WRITE", contracts.RefuseNotASelect},
	{"copy to program", "COPY orders TO PROGRAM 'cat > /tmp/sonde-owned'", contracts.RefuseNotASelect},
	{"copy query to file", "COPY (SELECT * FROM orders) TO '/tmp/sonde-orders'", contracts.RefuseNotASelect},
	{"create table as", "CREATE TABLE stolen AS SELECT * FROM orders", contracts.RefuseNotASelect},
	{"do block", "DO $$ BEGIN DELETE FROM orders; END $$", contracts.RefuseNotASelect},
	{"explain analyze delete", "EXPLAIN ANALYZE DELETE FROM orders", contracts.RefuseNotASelect},
	{"call", "CALL wipe_orders()", contracts.RefuseNotASelect},
	{"lock table", "LOCK TABLE orders IN ACCESS EXCLUSIVE MODE", contracts.RefuseNotASelect},
	{"notify", "NOTIFY orders_changed, 'x'", contracts.RefuseNotASelect},
	{"prepare delete", "PREPARE p AS DELETE FROM orders", contracts.RefuseNotASelect},
	{"grant", "GRANT ALL ON orders TO PUBLIC", contracts.RefuseNotASelect},

	// A SELECT holding a write or a lock.
	{"writable cte delete", "WITH d AS (DELETE FROM orders RETURNING *) SELECT count(*) FROM d", contracts.RefuseNotReadOnly},
	{"writable cte update", "WITH u AS (UPDATE orders SET amount = 0 RETURNING id) SELECT count(*) FROM u", contracts.RefuseNotReadOnly},
	{"writable cte insert", "WITH i AS (INSERT INTO customers VALUES (999, 'x') RETURNING id) SELECT * FROM i", contracts.RefuseNotReadOnly},
	{"writable cte in a subquery", "SELECT * FROM (WITH d AS (DELETE FROM orders RETURNING id) SELECT id FROM d) s", contracts.RefuseNotReadOnly},
	{"select into", "SELECT * INTO stolen FROM orders", contracts.RefuseNotReadOnly},
	{"for update", "SELECT * FROM orders FOR UPDATE", contracts.RefuseNotReadOnly},
	{"for share", "SELECT * FROM orders FOR SHARE", contracts.RefuseNotReadOnly},
	{"for no key update", "SELECT * FROM orders FOR NO KEY UPDATE SKIP LOCKED", contracts.RefuseNotReadOnly},
	{"for key share", "SELECT * FROM orders FOR KEY SHARE NOWAIT", contracts.RefuseNotReadOnly},
	{"lock in a subquery", "SELECT id FROM orders WHERE customer_id IN (SELECT id FROM customers FOR UPDATE)", contracts.RefuseNotReadOnly},

	// Settings.
	{"set_config", "SELECT set_config('default_transaction_read_only', 'off', false)", contracts.RefuseQuerySettings},
	{"qualified set_config", "SELECT pg_catalog.set_config('statement_timeout', '0', true)", contracts.RefuseQuerySettings},
	{"current_setting", "SELECT current_setting('data_directory')", contracts.RefuseFunctionDenied},

	// Functions with effects, or reaching outside the database.
	{"dblink_exec", "SELECT dblink_exec('host=203.0.113.1', 'DROP TABLE orders')", contracts.RefuseFunctionDenied},
	{"pg_read_file", "SELECT pg_read_file('/etc/passwd')", contracts.RefuseFunctionDenied},
	{"pg_ls_dir in the select list", "SELECT pg_ls_dir('.')", contracts.RefuseFunctionDenied},
	{"lo_import", "SELECT lo_import('/etc/passwd')", contracts.RefuseFunctionDenied},
	{"lo_create", "SELECT lo_create(0)", contracts.RefuseFunctionDenied},
	{"pg_advisory_lock", "SELECT pg_advisory_lock(42)", contracts.RefuseFunctionDenied},
	{"pg_try_advisory_xact_lock", "SELECT pg_try_advisory_xact_lock(42)", contracts.RefuseFunctionDenied},
	{"pg_notify", "SELECT pg_notify('orders_changed', 'x')", contracts.RefuseFunctionDenied},
	{"pg_logical_emit_message", "SELECT pg_logical_emit_message(false, 'sonde', 'x')", contracts.RefuseFunctionDenied},
	{"pg_terminate_backend", "SELECT pg_terminate_backend(pg_backend_pid())", contracts.RefuseFunctionDenied},
	{"pg_cancel_backend", "SELECT pg_cancel_backend(1)", contracts.RefuseFunctionDenied},
	{"nextval", "SELECT nextval('orders_id_seq')", contracts.RefuseFunctionDenied},
	{"setval", "SELECT setval('orders_id_seq', 1)", contracts.RefuseFunctionDenied},
	{"query_to_xml runs a statement in a string", "SELECT query_to_xml('SELECT * FROM secret.keys', true, false, '')", contracts.RefuseFunctionDenied},
	{"table_to_xml reads a table in a string", "SELECT table_to_xml('secret.keys', true, false, '')", contracts.RefuseFunctionDenied},
	{"cursor_to_xml", "SELECT cursor_to_xml('c', 1, true, false, '')", contracts.RefuseFunctionDenied},
	{"ts_stat in the select list", "SELECT ts_stat('SELECT to_tsvector(k) FROM secret.keys')", contracts.RefuseFunctionDenied},
	{"txid_current", "SELECT txid_current()", contracts.RefuseFunctionDenied},
	{"pg_sleep", "SELECT pg_sleep(0.2)", contracts.RefuseFunctionDenied},
	{"pg_sleep in ORDER BY", "SELECT id FROM orders ORDER BY pg_sleep(0.01)", contracts.RefuseFunctionDenied},
	{"regclass cast", "SELECT 'secret.keys'::regclass", contracts.RefuseFunctionDenied},
	{"regclass CAST", "SELECT CAST('pg_authid' AS pg_catalog.regclass)", contracts.RefuseFunctionDenied},
	{"to_regclass", "SELECT to_regclass('secret.keys')", contracts.RefuseFunctionDenied},
	{"user function", "SELECT public.wipe_orders()", contracts.RefuseFunctionDenied},
	{"unknown function", "SELECT wipe_orders()", contracts.RefuseFunctionDenied},
	{"attribute notation", "SELECT o.pg_sleep FROM orders o", contracts.RefuseFunctionDenied},
	{"attribute of a row", "SELECT (o).nextval FROM orders o", contracts.RefuseFunctionDenied},
	{"user operator", "SELECT 1 OPERATOR(public.+) 1", contracts.RefuseFunctionDenied},
	{"cast to a user type", "SELECT '1'::public.evil_domain", contracts.RefuseFunctionDenied},
	{"tablesample extension", "SELECT * FROM orders TABLESAMPLE tsm_system_rows(10)", contracts.RefuseFunctionDenied},
	{"advisory lock in EXISTS", "SELECT id FROM orders WHERE EXISTS (SELECT pg_advisory_lock(id))", contracts.RefuseFunctionDenied},
	{"notify in a CTE", "WITH x AS (SELECT pg_notify('c', 'x')) SELECT * FROM x", contracts.RefuseFunctionDenied},

	// Attribute notation: x.f and (expr).f call f(x) when x has no column
	// or field f (issue 7: these read other sessions' SQL, file paths and
	// function sources, and wrote an index that survived the rollback).
	{"attribute call on a cast", "SELECT (NULL::int).pg_stat_get_activity", contracts.RefuseFunctionDenied},
	{"attribute call on a string", "SELECT ('orders').pg_relation_filepath", contracts.RefuseFunctionDenied},
	{"attribute call on a column", "SELECT (c.id).pg_get_functiondef FROM customers c", contracts.RefuseFunctionDenied},
	{"attribute call that writes an index", "SELECT ('orders_pkey').brin_summarize_new_values", contracts.RefuseFunctionDenied},
	{"attribute call on an unqualified column", "SELECT id.pg_stat_get_backend_pid FROM customers", contracts.RefuseFunctionDenied},
	{"attribute call after a column", "SELECT c.id.pg_stat_get_activity FROM customers c", contracts.RefuseFunctionDenied},
	{"attribute call after schema.table.column", "SELECT public.customers.id.pg_get_viewdef FROM public.customers", contracts.RefuseFunctionDenied},
	{"attribute call on a table's row", "SELECT o.pg_relation_size FROM orders o", contracts.RefuseFunctionDenied},
	{"attribute call on a subquery's column", "SELECT s.x.pg_relation_filepath FROM (SELECT 'orders'::text AS x) s", contracts.RefuseFunctionDenied},
	{"attribute call on a scalar subquery", "SELECT ((SELECT 'orders'::text)).pg_relation_filepath", contracts.RefuseFunctionDenied},
	{"attribute call in WHERE", "SELECT id FROM customers c WHERE (c.id).gin_clean_pending_list IS NOT NULL", contracts.RefuseFunctionDenied},
	{"attribute call of a sequence function", "SELECT (c).currval FROM customers c", contracts.RefuseFunctionDenied},
	{"attribute call of a stats reset", "SELECT (1::oid).pg_stat_reset_single_table_counters", contracts.RefuseFunctionDenied},
	{"attribute call of a comment reader", "SELECT (1259::oid).obj_description", contracts.RefuseFunctionDenied},
	{"attribute call of a file family", "SELECT ('.').pg_ls_dir", contracts.RefuseFunctionDenied},
	{"quoted attribute call", `SELECT (NULL::int)."pg_stat_get_activity"`, contracts.RefuseFunctionDenied},

	// Operators: only the built-in ones (a user-defined one runs whatever
	// function it wraps; issue 7's ### wrote a file on the database host).
	{"user operator symbol", "SELECT 1 ### 2", contracts.RefuseFunctionDenied},
	{"user operator symbol in pg_catalog", "SELECT 1 OPERATOR(pg_catalog.###) 2", contracts.RefuseFunctionDenied},
	{"user prefix operator", "SELECT ### 1", contracts.RefuseFunctionDenied},
	{"user operator in ORDER BY USING", "SELECT id FROM orders ORDER BY id USING ###", contracts.RefuseFunctionDenied},
	{"user operator in ANY", "SELECT id FROM orders WHERE id ### ANY (ARRAY[1])", contracts.RefuseFunctionDenied},
	{"user operator in a subquery comparison", "SELECT id FROM orders WHERE id ### ALL (SELECT id FROM customers)", contracts.RefuseFunctionDenied},

	// Table functions.
	{"dblink in FROM", "SELECT * FROM dblink('host=203.0.113.1', 'SELECT 1') AS t(x int)", contracts.RefuseTableFunction},
	{"pg_ls_dir in FROM", "SELECT * FROM pg_ls_dir('/')", contracts.RefuseTableFunction},
	{"ts_stat in FROM", "SELECT * FROM ts_stat('SELECT to_tsvector(k) FROM secret.keys')", contracts.RefuseTableFunction},
	{"jsonb_each in FROM", "SELECT * FROM jsonb_each('{}'::jsonb)", contracts.RefuseTableFunction},
	{"rows from with a file function", "SELECT * FROM ROWS FROM (generate_series(1, 2), pg_ls_dir('.')) AS t(a, b)", contracts.RefuseTableFunction},
	{"xmltable", "SELECT * FROM XMLTABLE('/r' PASSING CAST('<r/>' AS xml) COLUMNS a int)", contracts.RefuseTableFunction},

	// Tables outside the readable patterns.
	{"unreadable schema", "SELECT * FROM secret.keys", contracts.RefuseTableNotReadable},
	{"unqualified pg_ name is pg_catalog's", "SELECT * FROM pg_authid", contracts.RefuseTableNotReadable},
	{"catalog view", "SELECT * FROM pg_catalog.pg_shadow", contracts.RefuseTableNotReadable},
	{"information_schema", "SELECT * FROM information_schema.tables", contracts.RefuseTableNotReadable},
	{"another database", "SELECT * FROM otherdb.public.orders", contracts.RefuseTableNotReadable},
	{"unreadable in IN (SELECT)", "SELECT id FROM orders WHERE customer_id IN (SELECT id FROM secret.keys)", contracts.RefuseTableNotReadable},
	{"cte named like a readable table", "WITH orders AS (SELECT * FROM secret.keys) SELECT * FROM orders", contracts.RefuseTableNotReadable},
	{"cte name outside its WITH", "SELECT * FROM (WITH keys AS (SELECT 1) SELECT * FROM keys) s, keys", contracts.RefuseTableNotReadable},
	{"later sibling cte is a table", "WITH a AS (SELECT * FROM keys), keys AS (SELECT 1) SELECT * FROM a", contracts.RefuseTableNotReadable},
	// Names are exact: a quoted name keeps its case, and is another table.
	{"quoted upper-case name", `SELECT * FROM "ORDERS"`, contracts.RefuseTableNotReadable},
	{"quoted upper-case schema", `SELECT * FROM "Public".orders`, contracts.RefuseTableNotReadable},
	{"dot inside a quoted schema", `SELECT * FROM "public.orders".x`, contracts.RefuseTableNotReadable},
	{"dot inside a quoted name", `SELECT * FROM public."orders.x"`, contracts.RefuseTableNotReadable},
	// System catalogs resolve to pg_catalog, first on every search path.
	{"unqualified pg_settings", "SELECT name, setting FROM pg_settings", contracts.RefuseTableNotReadable},
	{"unqualified pg_stat_activity", "SELECT query FROM pg_stat_activity", contracts.RefuseTableNotReadable},
	{"quoted unqualified pg_class", `SELECT * FROM "pg_class"`, contracts.RefuseTableNotReadable},
	{"upper-case catalog", "SELECT * FROM PG_CATALOG.PG_PROC", contracts.RefuseTableNotReadable},
	{"information_schema columns", "SELECT * FROM information_schema.columns", contracts.RefuseTableNotReadable},
	{"toast table", "SELECT * FROM pg_toast.pg_toast_2619", contracts.RefuseTableNotReadable},
	{"catalog in a subquery", "SELECT id FROM orders WHERE customer_id IN (SELECT usesysid FROM pg_user)", contracts.RefuseTableNotReadable},

	// Large tables without a lower bound where they are read.
	{"unbounded", "SELECT count(*) FROM events", contracts.RefuseLargeTableUnbounded},
	{"upper bound only", "SELECT count(*) FROM events WHERE event_date < '2024-01-01'", contracts.RefuseLargeTableUnbounded},
	{"bound under OR", "SELECT count(*) FROM events WHERE event_date >= '2024-01-01' OR kind = 'view'", contracts.RefuseLargeTableUnbounded},
	{"bound in the outer query", "SELECT * FROM (SELECT * FROM events) e WHERE e.event_date >= '2024-01-01'", contracts.RefuseLargeTableUnbounded},
	{"bound on a function of the column", "SELECT count(*) FROM events WHERE date_trunc('day', event_date) >= '2024-01-01'", contracts.RefuseLargeTableUnbounded},
	{"unqualified bound beside another table", "SELECT count(*) FROM events e JOIN orders o ON o.id = e.id WHERE event_date >= '2024-01-01'", contracts.RefuseLargeTableUnbounded},
	{"bound against a subquery", "SELECT count(*) FROM events WHERE event_date >= (SELECT min(created_at) FROM orders)", contracts.RefuseLargeTableUnbounded},
	{"bound against a column", "SELECT count(*) FROM events e, orders o WHERE e.event_date >= o.created_at", contracts.RefuseLargeTableUnbounded},
	{"NOT of a lower bound", "SELECT count(*) FROM events WHERE NOT (event_date >= '2024-01-01')", contracts.RefuseLargeTableUnbounded},
	// A condition in an outer join's ON filters only the side that is not
	// preserved: the preserved large table is read whole.
	{"bound in LEFT JOIN ON on the preserved side", "SELECT count(*) FROM events e LEFT JOIN customers c ON c.id = e.id AND e.event_date >= '2030-01-01'", contracts.RefuseLargeTableUnbounded},
	{"bound in RIGHT JOIN ON on the preserved side", "SELECT count(*) FROM customers c RIGHT JOIN events e ON c.id = e.id AND e.event_date >= '2030-01-01'", contracts.RefuseLargeTableUnbounded},
	{"bound in FULL JOIN ON", "SELECT count(*) FROM events e FULL JOIN customers c ON c.id = e.id AND e.event_date >= '2030-01-01'", contracts.RefuseLargeTableUnbounded},
	{"bound in a nested LEFT JOIN ON", "SELECT count(*) FROM events e LEFT JOIN (customers c JOIN orders o ON o.customer_id = c.id) ON c.id = e.id AND e.event_date >= '2030-01-01'", contracts.RefuseLargeTableUnbounded},

	// Grammar newer than the server (issue 17, item 1): libpg_query parses
	// PostgreSQL 17's grammar, in which these are SQL/JSON nodes, never a
	// call; an older server reads them as calls of json_value, json_array,
	// … found through the search path, and a planted SECURITY DEFINER
	// public.json_value(text, text) wrote files on the database host.
	{"JSON_VALUE on an older server", `SELECT JSON_VALUE('{"a": 1}', '$.a')`, contracts.RefuseFunctionDenied},
	{"lower-case json_value on an older server", `SELECT json_value(name, '$') FROM customers`, contracts.RefuseFunctionDenied},
	{"JSON_QUERY on an older server", `SELECT JSON_QUERY('{"a": [1]}', '$.a')`, contracts.RefuseFunctionDenied},
	{"json_exists on an older server", `SELECT id FROM customers WHERE json_exists('{"a": 1}', '$.a')`, contracts.RefuseFunctionDenied},
	{"JSON_SCALAR on an older server", `SELECT JSON_SCALAR(1)`, contracts.RefuseFunctionDenied},
	{"JSON_SERIALIZE on an older server", `SELECT JSON_SERIALIZE('{}' RETURNING text)`, contracts.RefuseFunctionDenied},
	{"JSON() on an older server", `SELECT JSON('{"a": 1}')`, contracts.RefuseFunctionDenied},
	{"JSON_ARRAY on an older server", `SELECT JSON_ARRAY(1, 2)`, contracts.RefuseFunctionDenied},
	{"JSON_ARRAY of a query on an older server", `SELECT JSON_ARRAY(SELECT id FROM customers)`, contracts.RefuseFunctionDenied},
	{"JSON_OBJECT on an older server", `SELECT JSON_OBJECT('a': 1)`, contracts.RefuseFunctionDenied},
	{"empty JSON_OBJECT on an older server", `SELECT JSON_OBJECT()`, contracts.RefuseFunctionDenied},
	{"JSON_ARRAYAGG on an older server", `SELECT JSON_ARRAYAGG(id) FROM customers`, contracts.RefuseFunctionDenied},
	{"JSON_OBJECTAGG on an older server", `SELECT JSON_OBJECTAGG(name VALUE id) FROM customers`, contracts.RefuseFunctionDenied},
	{"IS JSON on an older server", `SELECT '{}' IS JSON`, contracts.RefuseFunctionDenied},
	{"JSON_VALUE in WHERE on an older server", `SELECT id FROM customers WHERE JSON_VALUE(name, '$') = 'x'`, contracts.RefuseFunctionDenied},
	// … and refused on every server.
	{"MERGE_ACTION in a SELECT", `SELECT MERGE_ACTION()`, contracts.RefuseFunctionDenied},
	{"JSON_TABLE", `SELECT * FROM JSON_TABLE('[1]', '$[*]' COLUMNS (a int PATH '$'))`, contracts.RefuseTableFunction},
	{"JSON_VALUE returning a user type", `SELECT JSON_VALUE('1', '$' RETURNING public.evil_domain)`, contracts.RefuseFunctionDenied},
	{"JSON_ARRAY of a denied call", `SELECT JSON_ARRAY(pg_sleep(1))`, contracts.RefuseFunctionDenied},
	{"JSON_VALUE with a denied default", `SELECT JSON_VALUE('x', '$' DEFAULT pg_sleep(1) ON ERROR)`, contracts.RefuseFunctionDenied},
	// A CYCLE clause's mark values are expressions: a typed literal casts.
	{"CYCLE mark of a user type", `WITH RECURSIVE t(n) AS (SELECT 1 UNION ALL SELECT n + 1 FROM t WHERE n < 3) CYCLE n SET c TO public.evil_domain 'a' DEFAULT public.evil_domain 'b' USING p SELECT n FROM t`, contracts.RefuseFunctionDenied},

	// XML runs in libxml2, which PostgreSQL cannot interrupt: xpath over
	// 20,000 nodes ran 20 s under a 1 s statement_timeout (issue 17, item 4).
	{"xpath", `SELECT xpath('count(//a[. = //b])', '<r><a>1</a><b>1</b></r>')`, contracts.RefuseFunctionDenied},
	{"xpath_exists", `SELECT xpath_exists('//a', '<r/>'::text::xml)`, contracts.RefuseFunctionDenied},
	{"XMLEXISTS", `SELECT XMLEXISTS('//a' PASSING BY VALUE '<r/>')`, contracts.RefuseFunctionDenied},
	{"XMLPARSE", `SELECT XMLPARSE(DOCUMENT '<r/>')`, contracts.RefuseFunctionDenied},
	{"XMLELEMENT", `SELECT XMLELEMENT(NAME a, name) FROM customers`, contracts.RefuseFunctionDenied},
	{"XMLSERIALIZE", `SELECT XMLSERIALIZE(CONTENT 'x' AS text)`, contracts.RefuseFunctionDenied},
	{"IS DOCUMENT", `SELECT '<r/>' IS DOCUMENT`, contracts.RefuseFunctionDenied},
	{"cast to xml", `SELECT '<r/>'::xml`, contracts.RefuseFunctionDenied},
	{"CAST to pg_catalog.xml", `SELECT CAST('<r/>' AS pg_catalog.xml)`, contracts.RefuseFunctionDenied},
	{"xml()", `SELECT xml('<r/>')`, contracts.RefuseFunctionDenied},
	{"xmlagg", `SELECT xmlagg(NULL)`, contracts.RefuseFunctionDenied},
	{"xml_is_well_formed", `SELECT xml_is_well_formed(name) FROM customers`, contracts.RefuseFunctionDenied},
	{"xpath as an attribute", `SELECT (c.name).xpath FROM customers c`, contracts.RefuseFunctionDenied},

	// LIKE and the substring searches compare without interrupt checks in
	// time that grows with the product of the lengths: LIKE over 300,000
	// characters ran 6.4 s under a 1 s timeout (issue 17, item 4).
	{"LIKE on built values", `SELECT repeat('a', 300000) LIKE '%' || repeat('a', 10000) || 'b%'`, contracts.RefuseFunctionDenied},
	{"ILIKE on an aggregate", `SELECT (SELECT string_agg(name, '') FROM customers) ILIKE '%x%'`, contracts.RefuseFunctionDenied},
	{"NOT LIKE on lpad", `SELECT name FROM customers WHERE name NOT LIKE lpad('%', 100000, '_')`, contracts.RefuseFunctionDenied},
	{"LIKE ANY of built patterns", `SELECT name LIKE ANY (ARRAY[repeat('_', 100000)]) FROM customers`, contracts.RefuseFunctionDenied},
	{"strpos on built values", `SELECT strpos(repeat('a', 1000000), 'b' || repeat('a', 5000))`, contracts.RefuseFunctionDenied},
	{"POSITION on built values", `SELECT position('b' || repeat('a', 5000) IN repeat('a', 1000000))`, contracts.RefuseFunctionDenied},
	{"replace on built values", `SELECT replace(repeat('a', 1000000), 'b' || repeat('a', 5000), 'x')`, contracts.RefuseFunctionDenied},
	{"split_part on built values", `SELECT split_part(repeat('a', 1000000), 'b' || repeat('a', 5000), 2)`, contracts.RefuseFunctionDenied},
	{"string_to_array on built values", `SELECT string_to_array(repeat('a', 1000000), 'b' || repeat('a', 5000))`, contracts.RefuseFunctionDenied},
	{"translate on built values", `SELECT translate(repeat('a', 1000000), repeat('b', 100000), '')`, contracts.RefuseFunctionDenied},
	{"array overlap of aggregates", `SELECT (SELECT array_agg(id) FROM orders) && (SELECT array_agg(-id) FROM orders)`, contracts.RefuseFunctionDenied},
	{"array containment of a series", `SELECT ARRAY(SELECT generate_series(1, 40000)) @> ARRAY(SELECT -generate_series(1, 40000))`, contracts.RefuseFunctionDenied},
	{"LIKE on a CTE's built column", `WITH x AS (SELECT repeat('a', 300000) AS a) SELECT a LIKE '%' || a || 'b' FROM x`, contracts.RefuseFunctionDenied},
	{"strpos on a subquery's aggregate column", `SELECT strpos(s.t, s.t || 'b') FROM (SELECT string_agg(name, '') AS t FROM customers) s`, contracts.RefuseFunctionDenied},
	{"LIKE on a recursively doubled value", `WITH RECURSIVE d(s) AS (SELECT 'a' UNION ALL SELECT s || s FROM d WHERE length(s) < 1000000) SELECT s LIKE '%b%' FROM d`, contracts.RefuseFunctionDenied},

	// Shapes the guard cannot follow.
	{"one alias for two tables", "SELECT * FROM orders o, customers o", contracts.RefuseUnsupported},

	// Shapes deeper than the native parser survives: libpg_query's deparse
	// killed the process near 4,450 operators and 1,480 nested sub-selects
	// (issue 7, item 1; docs/guard.md).
	{"25,000 operator terms", "SELECT 1" + strings.Repeat("+1", 25000), contracts.RefuseTooComplex},
	{"1,500 nested sub-selects", "SELECT " + strings.Repeat("(SELECT ", 1500) + "1" + strings.Repeat(")", 1500), contracts.RefuseTooComplex},
	{"nested comments", "SELECT 1 " + strings.Repeat("/*", 300) + strings.Repeat("*/", 300), contracts.RefuseTooComplex},
}

// Valid lists analytics the guard must pass under Policy, each of which
// runs on the Fixture schema.
var Valid = []string{
	`SELECT customer_id, amount,
	        sum(amount) OVER (PARTITION BY customer_id ORDER BY created_at ROWS BETWEEN UNBOUNDED PRECEDING AND CURRENT ROW) AS running,
	        row_number() OVER w, rank() OVER w, lag(amount) OVER w, ntile(4) OVER w
	   FROM orders WINDOW w AS (ORDER BY id)`,
	`SELECT percentile_cont(0.5) WITHIN GROUP (ORDER BY amount) AS median,
	        percentile_disc(0.9) WITHIN GROUP (ORDER BY amount) AS p90,
	        mode() WITHIN GROUP (ORDER BY customer_id) AS busiest
	   FROM orders`,
	`WITH a AS (
	   WITH b AS (SELECT customer_id, sum(amount) AS s FROM orders GROUP BY 1)
	   SELECT * FROM b WHERE s > 10)
	 SELECT c.name, a.s FROM a JOIN customers c ON c.id = a.customer_id ORDER BY a.s DESC LIMIT 5`,
	`WITH RECURSIVE n(i) AS (SELECT 1 UNION ALL SELECT i + 1 FROM n WHERE i < 10) SELECT sum(i) FROM n`,
	`SELECT c.name, l.amount FROM customers c
	   CROSS JOIN LATERAL (SELECT o.amount FROM orders o WHERE o.customer_id = c.id ORDER BY o.created_at DESC LIMIT 3) l`,
	`SELECT id FROM orders UNION SELECT id FROM customers INTERSECT SELECT customer_id FROM orders EXCEPT SELECT 0`,
	`SELECT count(*) FILTER (WHERE amount > 100) AS big, avg(amount) FILTER (WHERE customer_id = 1) AS first_avg FROM orders`,
	`SELECT customer_id, string_agg(id::text, ',' ORDER BY id) AS ids, array_agg(DISTINCT amount) AS amounts,
	        json_agg(o.amount) AS j, jsonb_agg(o.created_at) AS jb
	   FROM orders o GROUP BY customer_id`,
	`SELECT date_trunc('month', created_at) AS m, extract(year FROM created_at) AS y, to_char(created_at, 'YYYY-MM') AS ym, count(*)
	   FROM orders WHERE created_at >= now() - interval '30 days' GROUP BY 1, 2, 3 ORDER BY 1`,
	`SELECT e.kind, count(*) FROM events e WHERE e.event_date >= current_date - 7 GROUP BY e.kind`,
	`SELECT o.id, e.kind FROM orders o JOIN events e ON e.id = o.id AND e.event_date >= '2024-01-01'`,
	`SELECT count(*) FROM events WHERE event_date BETWEEN '2024-01-01'::date AND current_date`,
	`SELECT count(*) FROM events WHERE kind = 'view' AND event_date IN (current_date, current_date - 1)`,
	`SELECT count(*) FROM events WHERE NOT (event_date < date '2024-01-01')`,
	`SELECT count(*) FROM events WHERE current_date - 30 <= event_date`,
	`SELECT count(*) FROM events WHERE event_date > make_date(2024, 1, 1) AND event_date < current_date`,
	`SELECT d::date AS day, count(o.id) FROM generate_series('2024-01-01'::date, '2024-01-31'::date, interval '1 day') d
	   LEFT JOIN orders o ON o.created_at::date = d::date GROUP BY 1 ORDER BY 1`,
	`SELECT x FROM unnest(ARRAY[1, 2, 3]) WITH ORDINALITY AS t(x, n)`,
	`SELECT data->>'n' AS n, data #> '{n}' AS p, jsonb_extract_path_text(data, 'n'), jsonb_typeof(data)
	   FROM events WHERE event_date >= current_date - 1`,
	`SELECT CASE WHEN amount > 10 THEN 'big' ELSE 'small' END, coalesce(amount, 0), greatest(amount, 1), nullif(amount, 0),
	        round(amount::numeric, 1), abs(amount - 100), lower(upper('x')), length(' a '), amount::float8 / 3
	   FROM orders`,
	`WITH events AS (SELECT 1 AS id) SELECT * FROM events`,
	`SELECT customer_id, date_trunc('year', created_at), sum(amount) FROM orders GROUP BY ROLLUP (1, 2)`,
	`SELECT name FROM customers c WHERE EXISTS (SELECT 1 FROM orders o WHERE o.customer_id = c.id) AND c.id IN (SELECT customer_id FROM orders)`,
	`VALUES (1, 'a'), (2, 'b')`,
	`SELECT 1; -- done`,
	`SELECT DISTINCT ON (customer_id) customer_id, amount FROM orders ORDER BY customer_id, created_at DESC`,
	`SELECT pg_catalog.lower(name), count(*) OVER () FROM public.customers`,
	`SELECT stddev(amount), variance(amount), corr(amount, customer_id), regr_slope(amount, customer_id),
	        bool_and(amount > 0), percentile_cont(ARRAY[0.25, 0.75]) WITHIN GROUP (ORDER BY amount)
	   FROM orders`,
	`SELECT o.customer_id, o.count FROM (SELECT customer_id, count(*) FROM orders GROUP BY 1) o`,
	// Columns in attribute position whose names are also harmless built-ins.
	`SELECT c.name, public.customers.id FROM public.customers JOIN customers c ON c.id = public.customers.id`,
	`SELECT (c).name, (c).id FROM customers c`,
	`SELECT e.kind, e.data ? 'n' AS has_n, e.data @> '{"n": 1}' FROM events e WHERE e.event_date >= current_date - 7`,
	// A bound in the ON of an outer join bounds the side it filters.
	`SELECT c.name, count(e.id) FROM customers c LEFT JOIN events e ON e.id = c.id AND e.event_date >= current_date - 7 GROUP BY c.name`,
	`SELECT count(*) FROM events e RIGHT JOIN customers c ON e.id = c.id AND e.event_date >= current_date - 7`,
	`SELECT id FROM orders ORDER BY amount USING >, id`,
	// LIKE and substring searches on stored values, constants and parameters.
	`SELECT name, strpos(name, 'er'), replace(name, 'customer', 'c'), split_part(name, ' ', 2) FROM customers
	  WHERE lower(name) LIKE '%' || lower('Cust') || '%' AND name NOT ILIKE 'x%' ESCAPE '!'`,
	`SELECT s.name FROM (SELECT name FROM customers) s WHERE s.name LIKE 'customer 1%'`,
	`SELECT count(*) FROM events WHERE event_date >= current_date - 7 AND data @> '{"n": 1}' AND kind LIKE ANY (ARRAY['v%', 'c%'])`,
}

// since is GrammarSince before it is checked against Hostile.
var since = map[string]int{
	"JSON_VALUE on an older server":            170000,
	"lower-case json_value on an older server": 170000,
	"JSON_QUERY on an older server":            170000,
	"json_exists on an older server":           170000,
	"JSON_SCALAR on an older server":           170000,
	"JSON_SERIALIZE on an older server":        170000,
	"JSON() on an older server":                170000,
	"JSON_ARRAY on an older server":            160000,
	"JSON_ARRAY of a query on an older server": 160000,
	"JSON_OBJECT on an older server":           160000,
	"empty JSON_OBJECT on an older server":     160000,
	"JSON_ARRAYAGG on an older server":         160000,
	"JSON_OBJECTAGG on an older server":        160000,
	"IS JSON on an older server":               160000,
	"JSON_VALUE in WHERE on an older server":   170000,
}
