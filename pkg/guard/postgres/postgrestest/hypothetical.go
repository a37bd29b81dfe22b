package postgrestest

import "github.com/sondehq/sonde/contracts"

// HostileIndexes lists hypothetical index texts (the CREATE INDEX a plan
// is made as if it had run) that must be refused, written against Policy
// and Fixture: other statements, stacked statements, expressions that call
// functions, tables the policy hides, and the clauses a hypothetical index
// does not read.
var HostileIndexes = []Case{
	{"stacked drop", "CREATE INDEX ON public.orders (customer_id); DROP TABLE public.orders", contracts.RefuseNotOneStatement},
	{"stacked second index", "CREATE INDEX ON public.orders (customer_id); CREATE INDEX ON public.orders (amount)", contracts.RefuseNotOneStatement},
	{"stacked commit", "COMMIT; CREATE INDEX ON public.orders (customer_id)", contracts.RefuseNotOneStatement},
	{"drop index", "DROP INDEX public.orders_pkey", contracts.RefuseBadRequest},
	{"create table", "CREATE TABLE public.pwned (id int)", contracts.RefuseBadRequest},
	{"select", "SELECT * FROM public.orders", contracts.RefuseBadRequest},
	{"do block", "DO $$ BEGIN DROP TABLE public.orders; END $$", contracts.RefuseBadRequest},
	{"explain analyze", "EXPLAIN ANALYZE SELECT pg_sleep(1)", contracts.RefuseBadRequest},
	{"alter table", "ALTER TABLE public.orders ADD COLUMN x int", contracts.RefuseBadRequest},
	{"blank", "  ; -- nothing", contracts.RefuseEmpty},
	{"unparsable", "CREATE INDEX ON", contracts.RefuseUnparsable},
	{"expression calling a function", "CREATE INDEX ON public.orders (lower(customer_id::text))", contracts.RefuseUnsupported},
	{"expression sleeping", "CREATE INDEX ON public.orders ((pg_sleep(10) IS NULL))", contracts.RefuseUnsupported},
	{"parenthesised column", "CREATE INDEX ON public.orders ((customer_id))", contracts.RefuseUnsupported},
	{"include expression", "CREATE INDEX ON public.orders (customer_id) INCLUDE ((pg_sleep(1)))", contracts.RefuseUnsupported},
	{"unreadable schema", "CREATE INDEX ON secret.keys (k)", contracts.RefuseTableNotReadable},
	{"unreadable unqualified", "CREATE INDEX ON keys (k)", contracts.RefuseTableNotReadable},
	{"system catalog", "CREATE INDEX ON pg_catalog.pg_authid (rolname)", contracts.RefuseTableNotReadable},
	{"system catalog unqualified", "CREATE INDEX ON pg_authid (rolpassword)", contracts.RefuseTableNotReadable},
	{"other database", "CREATE INDEX ON otherdb.public.orders (customer_id)", contracts.RefuseTableNotReadable},
	{"predicate reads a hidden table", "CREATE INDEX ON public.orders (customer_id) WHERE customer_id IN (SELECT id FROM secret.keys)", contracts.RefuseUnsupported},
	{"predicate calls a denied function", "CREATE INDEX ON public.orders (customer_id) WHERE pg_sleep(1) IS NOT NULL", contracts.RefuseFunctionDenied},
	{"predicate reads a file", "CREATE INDEX ON public.orders (customer_id) WHERE pg_read_file('/etc/passwd') <> ''", contracts.RefuseFunctionDenied},
	{"predicate sets a setting", "CREATE INDEX ON public.orders (customer_id) WHERE set_config('hypopg.enabled', 'off', false) <> ''", contracts.RefuseQuerySettings},
	{"unique", "CREATE UNIQUE INDEX ON public.orders (customer_id)", contracts.RefuseUnsupported},
	{"concurrently", "CREATE INDEX CONCURRENTLY ON public.orders (customer_id)", contracts.RefuseUnsupported},
	{"tablespace", "CREATE INDEX ON public.orders (customer_id) TABLESPACE pg_default", contracts.RefuseUnsupported},
	{"storage parameters", "CREATE INDEX ON public.orders (customer_id) WITH (fillfactor = 10)", contracts.RefuseUnsupported},
	{"operator class", "CREATE INDEX ON public.orders (customer_id int4_ops)", contracts.RefuseUnsupported},
	{"collation", `CREATE INDEX ON public.customers (name COLLATE "C")`, contracts.RefuseUnsupported},
	{"gin", "CREATE INDEX ON public.events USING gin (data)", contracts.RefuseUnsupported},
	{"only", "CREATE INDEX ON ONLY public.orders (customer_id)", contracts.RefuseUnsupported},
}

// ValidIndexes lists hypothetical index texts a connection with Policy
// accepts (they are planned, never created).
var ValidIndexes = []string{
	"CREATE INDEX ON public.orders (customer_id)",
	"create index orders_by_customer on orders using btree (customer_id desc nulls last, created_at)",
	"CREATE INDEX IF NOT EXISTS x ON public.orders (customer_id) INCLUDE (amount)",
	"CREATE INDEX ON public.orders USING hash (customer_id)",
	"CREATE INDEX ON public.events USING brin (event_date)",
	"CREATE INDEX ON public.orders (created_at) WHERE amount > 100 AND customer_id <> 3",
}
