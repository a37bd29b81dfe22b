package mssql

import (
	"strings"

	"github.com/sondehq/sonde/contracts"
)

// hostile is the T-SQL hostile corpus: every shape must be refused with its
// code. Each names the class of bypass it stands for.
var hostile = []struct {
	sql  string
	code contracts.Code
}{
	// Nothing to run.
	{"", contracts.RefuseEmpty},
	{"  -- only a comment\n ;; ", contracts.RefuseEmpty},
	{"/* outer /* nested ; */ still a comment */", contracts.RefuseEmpty},

	// Stacked statements: with ';', without it (T-SQL needs none), and GO.
	{"SELECT 1; SELECT 2", contracts.RefuseNotOneStatement},
	{"SELECT 1; DROP TABLE dbo.orders", contracts.RefuseNotOneStatement},
	{"SELECT 1 DELETE FROM dbo.orders", contracts.RefuseNotOneStatement},
	{"SELECT * FROM dbo.orders UPDATE dbo.orders SET total = 0", contracts.RefuseNotOneStatement},
	{"SELECT CHAR(65) EXEC('DROP TABLE dbo.orders')", contracts.RefuseNotOneStatement},
	{"SELECT 1 WAITFOR DELAY '00:00:10'", contracts.RefuseNotOneStatement},
	{"SELECT 1\nGO\nDELETE FROM dbo.orders", contracts.RefuseNotOneStatement},
	{"SELECT * FROM dbo.orders\ngo 2\n", contracts.RefuseNotOneStatement},
	{"SELECT 1 /* ; */ ; COMMIT", contracts.RefuseNotOneStatement},
	{"SELECT 'it''s'; INSERT INTO dbo.t VALUES (1)", contracts.RefuseNotOneStatement},
	{"SELECT 1\u2028DELETE FROM dbo.orders", contracts.RefuseNotOneStatement},
	{"SELECT 1 BEGIN TRAN", contracts.RefuseNotOneStatement},

	// Not a SELECT at all.
	{"DELETE FROM dbo.orders", contracts.RefuseNotASelect},
	{"insert into dbo.orders values (1)", contracts.RefuseNotASelect},
	{"UPDATE dbo.orders SET total = 0", contracts.RefuseNotASelect},
	{"MERGE dbo.orders AS t USING dbo.staging AS s ON t.id = s.id WHEN MATCHED THEN DELETE;", contracts.RefuseNotASelect},
	{"EXEC xp_cmdshell 'whoami'", contracts.RefuseNotASelect},
	{"EXECUTE sp_executesql N'DELETE FROM dbo.orders'", contracts.RefuseNotASelect},
	{"DECLARE @x int = 1", contracts.RefuseNotASelect},
	{"SET TRANSACTION ISOLATION LEVEL READ UNCOMMITTED", contracts.RefuseNotASelect},
	{"USE master", contracts.RefuseNotASelect},
	{"BEGIN TRAN", contracts.RefuseNotASelect},
	{"COMMIT", contracts.RefuseNotASelect},
	{"DBCC CHECKDB", contracts.RefuseNotASelect},
	{"BULK INSERT dbo.orders FROM 'c:\\x.csv'", contracts.RefuseNotASelect},
	{"CREATE TABLE dbo.x (a int)", contracts.RefuseNotASelect},
	{"ALTER LOGIN sa ENABLE", contracts.RefuseNotASelect},
	{"DROP DATABASE shop", contracts.RefuseNotASelect},
	{"TRUNCATE TABLE dbo.orders", contracts.RefuseNotASelect},
	{"GRANT CONTROL SERVER TO agent", contracts.RefuseNotASelect},
	{"BACKUP DATABASE shop TO DISK = 'c:\\x.bak'", contracts.RefuseNotASelect},
	{"RESTORE DATABASE shop FROM DISK = 'c:\\x.bak'", contracts.RefuseNotASelect},
	{"SHUTDOWN WITH NOWAIT", contracts.RefuseNotASelect},
	{"KILL 52", contracts.RefuseNotASelect},
	{"WAITFOR DELAY '00:01:00'", contracts.RefuseNotASelect},
	{"RECONFIGURE", contracts.RefuseNotASelect},
	{"/* SELECT */ DELETE FROM dbo.orders", contracts.RefuseNotASelect},
	{"-- SELECT\nDELETE FROM dbo.orders", contracts.RefuseNotASelect},
	{"WITH d AS (SELECT 1 AS x) DELETE FROM dbo.orders", contracts.RefuseNotASelect},
	{"WITH d AS (SELECT id FROM dbo.orders) UPDATE d SET id = 0", contracts.RefuseNotASelect},

	// A SELECT that writes, locks or advances something.
	{"WITH d AS (DELETE FROM dbo.orders OUTPUT deleted.*) SELECT * FROM d", contracts.RefuseNotReadOnly},
	{"SELECT * FROM (UPDATE dbo.orders SET total = 0 OUTPUT inserted.*) AS u", contracts.RefuseNotReadOnly},
	{"SELECT * INTO dbo.copy FROM dbo.orders", contracts.RefuseNotReadOnly},
	{"SELECT id INTO #stash FROM dbo.orders", contracts.RefuseNotReadOnly},
	{"SELECT * FROM dbo.orders WITH (UPDLOCK)", contracts.RefuseNotReadOnly},
	{"SELECT * FROM dbo.orders o WITH (XLOCK, ROWLOCK)", contracts.RefuseNotReadOnly},
	{"SELECT * FROM dbo.orders AS o WITH (HOLDLOCK)", contracts.RefuseNotReadOnly},
	{"SELECT * FROM dbo.orders (TABLOCKX)", contracts.RefuseNotReadOnly},
	{"SELECT (SELECT COUNT(*) FROM dbo.orders WITH (TABLOCKX)) AS n", contracts.RefuseNotReadOnly},
	{"SELECT * FROM dbo.orders FOR UPDATE", contracts.RefuseNotReadOnly},
	{"SELECT NEXT VALUE FOR dbo.order_seq", contracts.RefuseNotReadOnly},

	// Settings and output formats of the query's own.
	{"SELECT * FROM dbo.orders OPTION (MAXDOP 64)", contracts.RefuseQuerySettings},
	{"SELECT * FROM dbo.orders FOR XML AUTO", contracts.RefuseQuerySettings},
	{"SELECT id FROM dbo.orders FOR JSON PATH", contracts.RefuseQuerySettings},
	{"SELECT STUFF((SELECT ',' + name FROM dbo.customers FOR XML PATH('')), 1, 1, '')", contracts.RefuseQuerySettings},
	{"SELECT * FROM dbo.orders WITH (NOLOCK)", contracts.RefuseQuerySettings},
	{"SELECT * FROM dbo.orders o WITH (INDEX(ix_total))", contracts.RefuseQuerySettings},
	{"SELECT * FROM dbo.orders o INNER LOOP JOIN dbo.customers c ON c.id = o.customer_id", contracts.RefuseQuerySettings},
	{"SELECT * FROM dbo.orders o LEFT REMOTE JOIN dbo.customers c ON c.id = o.customer_id", contracts.RefuseQuerySettings},

	// Files, other servers, other statements: table functions.
	{"SELECT * FROM OPENROWSET(BULK 'c:\\secrets.txt', SINGLE_CLOB) AS x", contracts.RefuseTableFunction},
	{"SELECT * FROM OPENQUERY(lnk, 'DELETE FROM t')", contracts.RefuseTableFunction},
	{"SELECT * FROM OPENDATASOURCE('MSOLEDBSQL', 'Server=evil;').shop.dbo.orders", contracts.RefuseTableFunction},
	{"SELECT * FROM OPENXML(1, '/root', 2)", contracts.RefuseTableFunction},
	{"SELECT * FROM OPENJSON(N'[1,2]')", contracts.RefuseTableFunction},
	{"SELECT * FROM sys.fn_get_audit_file('c:\\audit\\*', DEFAULT, DEFAULT)", contracts.RefuseTableFunction},
	{"SELECT * FROM sys.fn_xe_file_target_read_file('c:\\x*.xel', NULL, NULL, NULL)", contracts.RefuseTableFunction},
	{"SELECT * FROM fn_dblog(NULL, NULL)", contracts.RefuseTableFunction},
	{"SELECT * FROM dbo.orders o CROSS APPLY dbo.expensive(o.id) x", contracts.RefuseTableFunction},
	{"SELECT 1 UNION ALL SELECT * FROM OPENROWSET('SQLNCLI', 'Server=evil;', 'SELECT 1')", contracts.RefuseTableFunction},
	{"SELECT OPENROWSET('a', 'b', 'c')", contracts.RefuseTableFunction},

	// Functions outside the allowlist.
	{"SELECT xp_cmdshell('whoami')", contracts.RefuseFunctionDenied},
	{"SELECT master.sys.xp_dirtree('c:\\')", contracts.RefuseFunctionDenied},
	{"SELECT sys.fn_varbintohexstr(0x01)", contracts.RefuseFunctionDenied},
	{"SELECT dbo.do_things(1)", contracts.RefuseFunctionDenied},
	{"SELECT [LEN]('x')", contracts.RefuseFunctionDenied},
	{"SELECT OBJECT_ID('otherdb.dbo.secret')", contracts.RefuseFunctionDenied},
	{"SELECT * FROM dbo.orders WHERE CONTAINS(note, 'x')", contracts.RefuseFunctionDenied},
	{"SELECT @@CONNECTIONS", contracts.RefuseFunctionDenied},
	{"SELECT SUSER_SNAME(), IS_SRVROLEMEMBER('sysadmin')", contracts.RefuseFunctionDenied},
	{"SELECT FILEPROPERTY('x', 'SpaceUsed')", contracts.RefuseFunctionDenied},

	// Other databases, linked servers, tempdb.
	{"SELECT * FROM lnk.shop.dbo.orders", contracts.RefuseTableNotReadable},
	{"SELECT * FROM [evil server].[shop].[dbo].[orders]", contracts.RefuseTableNotReadable},
	{"SELECT * FROM master.dbo.syslogins", contracts.RefuseTableNotReadable},
	{"SELECT name FROM master..sysdatabases", contracts.RefuseTableNotReadable},
	{"SELECT * FROM #stash", contracts.RefuseTableNotReadable},
	{"SELECT * FROM ##global", contracts.RefuseTableNotReadable},
	{"SELECT * FROM dbo.orders WHERE id IN (SELECT id FROM audit.secrets)", contracts.RefuseTableNotReadable},
	{"SELECT name FROM sys.sql_logins", contracts.RefuseTableNotReadable},
	{"WITH c AS (SELECT * FROM hr.salaries) SELECT * FROM c", contracts.RefuseTableNotReadable},

	// Large tables read without a lower bound in the query that reads them.
	{"SELECT * FROM dbo.events", contracts.RefuseLargeTableUnbounded},
	{"SELECT * FROM (SELECT * FROM dbo.events) e WHERE e.event_date >= '2026-01-01'", contracts.RefuseLargeTableUnbounded},
	{"SELECT * FROM dbo.events WHERE event_date >= '2026-01-01' OR 1 = 1", contracts.RefuseLargeTableUnbounded},
	{"SELECT * FROM dbo.events WHERE YEAR(event_date) >= 2026", contracts.RefuseLargeTableUnbounded},
	{"SELECT * FROM dbo.events WHERE event_date >= created_at", contracts.RefuseLargeTableUnbounded},
	{"SELECT * FROM dbo.events WHERE event_date <= '2026-01-01'", contracts.RefuseLargeTableUnbounded},
	{"SELECT * FROM dbo.events WHERE NOT (event_date >= '2026-01-01')", contracts.RefuseLargeTableUnbounded},
	{"SELECT * FROM dbo.events WHERE event_date NOT BETWEEN '2026-01-01' AND '2026-02-01'", contracts.RefuseLargeTableUnbounded},
	{"SELECT * FROM dbo.events WHERE event_date >= (SELECT MIN(d) FROM dbo.days)", contracts.RefuseLargeTableUnbounded},
	{"SELECT * FROM dbo.events e JOIN dbo.users u ON u.id = e.user_id WHERE event_date >= '2026-01-01'", contracts.RefuseLargeTableUnbounded},
	{"SELECT * FROM dbo.events e JOIN dbo.users u ON u.id = e.user_id WHERE u.event_date >= '2026-01-01'", contracts.RefuseLargeTableUnbounded},
	{"WITH x AS (SELECT * FROM dbo.events) SELECT * FROM x WHERE event_date >= '2026-01-01'", contracts.RefuseLargeTableUnbounded},
	{"SELECT * FROM dbo.events, (SELECT 1 AS event_date) d WHERE event_date >= '2026-01-01'", contracts.RefuseLargeTableUnbounded},

	// What the reader cannot follow.
	{"SELECT 'unterminated", contracts.RefuseUnparsable},
	{"SELECT [unterminated FROM t", contracts.RefuseUnparsable},
	{"SELECT 1 /* unterminated", contracts.RefuseUnparsable},
	{"SELECT * FROM dbo.orders WHERE id = $1", contracts.RefuseUnparsable},
	{"SELECT {fn NOW()}", contracts.RefuseUnparsable},
	{";SELECT 1", contracts.RefuseUnparsable},
	{"SELECT * FROM", contracts.RefuseUnparsable},
	{"SELECT 1\x00; DROP TABLE t", contracts.RefuseUnparsable},
	{"SELECT '\xff'", contracts.RefuseUnparsable},
	{"SELECT * FROM dbo.orders o, dbo.customers o", contracts.RefuseUnsupported},
	{"SELECT @x", contracts.RefuseUnsupported},
	{"SELECT @x = total FROM dbo.orders", contracts.RefuseUnsupported},
	{"SELECT * FROM @orders", contracts.RefuseUnsupported},
	{"SELECT * FROM dbo.orders FOR SYSTEM_TIME ALL", contracts.RefuseUnsupported},
	{"SELECT geography::Point(1, 2, 4326)", contracts.RefuseUnsupported},
	{"WITH a AS (SELECT 1 AS x), a AS (SELECT 2 AS x) SELECT * FROM a", contracts.RefuseUnsupported},

	// Too deep or too long for any reader: bounded before parsing.
	{"SELECT " + strings.Repeat("(", 5000) + "1" + strings.Repeat(")", 5000), contracts.RefuseTooComplex},
	{"SELECT 1" + strings.Repeat("+1", 30000), contracts.RefuseTooComplex},

	// Where the reader's lexer could disagree with SQL Server's (issue 7,
	// item 10): each shape hid a second statement, a table or a bound
	// before the reader lexed as SQL Server lexes.
	// A -- comment ends at a lone CR, as at LF.
	{"SELECT 1 --\rDELETE FROM dbo.InvoiceLine", contracts.RefuseNotOneStatement},
	{"SELECT 1 -- note\rCOMMIT", contracts.RefuseNotOneStatement},
	{"SELECT 1\rGO\rDELETE FROM dbo.orders", contracts.RefuseNotOneStatement},
	// A float's exponent digits are optional: 1e, 1.e, .5e, 1e+ are complete.
	{"SELECT 1eDELETE FROM dbo.InvoiceLine", contracts.RefuseNotOneStatement},
	{"SELECT 1eCOMMIT", contracts.RefuseNotOneStatement},
	{"SELECT 1eSHUTDOWN", contracts.RefuseNotOneStatement},
	{"SELECT 1.eDELETE FROM dbo.InvoiceLine", contracts.RefuseNotOneStatement},
	{"SELECT .5eDELETE FROM dbo.InvoiceLine", contracts.RefuseNotOneStatement},
	{"SELECT 1e+DELETE FROM dbo.InvoiceLine", contracts.RefuseNotOneStatement},
	{"SELECT 1E-WAITFOR DELAY '00:00:10'", contracts.RefuseNotOneStatement},
	{"SELECT 2.5E+3ROLLBACK", contracts.RefuseNotOneStatement},
	{"SELECT 1DELETE FROM dbo.InvoiceLine", contracts.RefuseNotOneStatement},
	{"SELECT 0x1FSHUTDOWN", contracts.RefuseNotOneStatement},
	// ODBC escapes: --(* is no comment; { } are escapes.
	{"SELECT 1 --(* vendor(Microsoft), product(ODBC) *)--\nDELETE FROM dbo.InvoiceLine", contracts.RefuseUnparsable},
	{"SELECT 1 --(*", contracts.RefuseUnparsable},
	{"SELECT {fn USER()}", contracts.RefuseUnparsable},
	{"SELECT * FROM dbo.orders WHERE ordered_at >= {d '2026-01-01'}", contracts.RefuseUnparsable},
	{"SELECT * FROM {oj dbo.orders o LEFT OUTER JOIN dbo.customers c ON c.id = o.customer_id}", contracts.RefuseUnparsable},
	// Money literals, pseudo-columns, sqlcmd variables, labels, continued hex.
	{"SELECT $12.5", contracts.RefuseUnparsable},
	{"SELECT * FROM dbo.orders WHERE total > $ -1", contracts.RefuseUnparsable},
	{"SELECT \u20ac12", contracts.RefuseUnparsable},
	{"SELECT \u00a312 DELETE FROM dbo.orders", contracts.RefuseUnparsable},
	{"SELECT $action", contracts.RefuseUnparsable},
	{"SELECT $(secret)", contracts.RefuseUnparsable},
	{"SELECT 1 x: DELETE FROM dbo.orders", contracts.RefuseUnparsable},
	{"SELECT 0x1\\\nDELETE FROM dbo.orders", contracts.RefuseUnparsable},
	// SQL Server's whitespace: U+200B, the C0 controls, U+00A0, U+3000.
	{"SELECT 1\u200bDELETE FROM dbo.InvoiceLine", contracts.RefuseNotOneStatement},
	{"SELECT 1\x1fDELETE FROM dbo.InvoiceLine", contracts.RefuseNotOneStatement},
	{"SELECT 1\x01DELETE FROM dbo.InvoiceLine", contracts.RefuseNotOneStatement},
	{"SELECT 1\u00a0DELETE FROM dbo.InvoiceLine", contracts.RefuseNotOneStatement},
	{"SELECT 1\u3000DELETE FROM dbo.InvoiceLine", contracts.RefuseNotOneStatement},
	{"SELECT 1\u202fDELETE FROM dbo.InvoiceLine", contracts.RefuseNotOneStatement},
	// U+2028 does not end a -- comment; nothing after it runs, so a bound
	// written there does not count.
	{"SELECT * FROM dbo.Invoice -- x\u2028WHERE invoice_date >= '2030-01-01'", contracts.RefuseLargeTableUnbounded},
	// Block comments nest, and -- inside one is plain text.
	{"SELECT 1 /* /* */ DELETE FROM dbo.InvoiceLine", contracts.RefuseUnparsable},
	{"SELECT 1 /* -- */ DELETE FROM dbo.InvoiceLine", contracts.RefuseNotOneStatement},
	{"SELECT * FROM dbo.Invoice /* /* */ WHERE invoice_date >= '2030-01-01' */", contracts.RefuseLargeTableUnbounded},
	// Names: trailing spaces in delimited names are ignored; look-alike
	// letters and invisible characters are refused; CTEs shadow a table only
	// when SQL Server certainly reads the same name.
	{"SELECT * FROM dbo.[Invoice ]", contracts.RefuseLargeTableUnbounded},
	{"SELECT * FROM [dbo ].[Invoice   ] AS i", contracts.RefuseLargeTableUnbounded},
	{"SELECT * FROM dbo.\"Invoice \"", contracts.RefuseLargeTableUnbounded},
	{"SELECT * FROM [Invoice ] i JOIN dbo.customer c ON c.id = i.customer_id WHERE c.invoice_date >= '2030-01-01'", contracts.RefuseLargeTableUnbounded},
	{"SELECT * FROM dbo.[Invoice\u200b]", contracts.RefuseUnparsable},
	{"SELECT * FROM dbo.[Invoice\t]", contracts.RefuseUnparsable},
	{"SELECT * FROM dbo.[Invoice\u00a0]", contracts.RefuseUnparsable},
	{"SELECT * FROM dbo.[]", contracts.RefuseUnparsable},
	{"SELECT * FROM dbo.[   ]", contracts.RefuseUnparsable},
	{"WITH \u017fysobjects AS (SELECT 1 AS id) SELECT * FROM sysobjects", contracts.RefuseUnparsable},
	{"SELECT * FROM [\u017fysobjects]", contracts.RefuseUnparsable},
	{"SELECT * FROM dbo.\u212Aeys", contracts.RefuseUnparsable},
	{"SELECT 1 \uff24\uff25\uff2c\uff25\uff34\uff25 FROM dbo.orders", contracts.RefuseUnparsable},
	{"SELECT 1 \U0001d403\U0001d404\U0001d40b\U0001d404\U0001d413\U0001d404 FROM dbo.orders", contracts.RefuseUnparsable},
	{"SELECT * FROM dbo.\u0130nvoice", contracts.RefuseUnparsable},
	{"WITH invoices AS (SELECT 1 AS id) SELECT * FROM INVOICES", contracts.RefuseUnsupported},
	{"WITH Recent AS (SELECT 1 AS id) SELECT * FROM recent r JOIN dbo.orders o ON o.id = r.id", contracts.RefuseUnsupported},
	// SQL Server's own catalogs, bare compatibility views included, are
	// readable only when a pattern names them (dbo.* does not).
	{"SELECT name FROM sysobjects", contracts.RefuseTableNotReadable},
	{"SELECT text FROM syscomments", contracts.RefuseTableNotReadable},
	{"SELECT name, password FROM syslogins", contracts.RefuseTableNotReadable},
	{"SELECT * FROM sysprocesses", contracts.RefuseTableNotReadable},
	{"SELECT * FROM SYSUSERS", contracts.RefuseTableNotReadable},
	{"SELECT * FROM [sysdatabases]", contracts.RefuseTableNotReadable},
	{"SELECT * FROM dbo.sysobjects", contracts.RefuseTableNotReadable},
	{"SELECT * FROM shop..syscolumns", contracts.RefuseTableNotReadable},
	{"SELECT * FROM dbo.orders o WHERE EXISTS (SELECT 1 FROM sysindexes i WHERE i.id = o.id)", contracts.RefuseTableNotReadable},
	{"SELECT * FROM sys.objects", contracts.RefuseTableNotReadable},
	{"SELECT * FROM [SYS].[sql_modules]", contracts.RefuseTableNotReadable},
	{"SELECT * FROM INFORMATION_SCHEMA.ROUTINES", contracts.RefuseTableNotReadable},
	// A condition in an outer join's ON bounds only the side the join does
	// not preserve (issue 7, item 9).
	{"SELECT COUNT(*) FROM dbo.Invoice i LEFT JOIN dbo.customer c ON c.customer_id = i.customer_id AND i.invoice_date >= '2030-01-01'", contracts.RefuseLargeTableUnbounded},
	{"SELECT COUNT(*) FROM dbo.Invoice i LEFT OUTER JOIN dbo.customer c ON i.invoice_date >= '2030-01-01'", contracts.RefuseLargeTableUnbounded},
	{"SELECT COUNT(*) FROM dbo.Invoice i FULL JOIN dbo.customer c ON c.customer_id = i.customer_id AND i.invoice_date >= '2030-01-01'", contracts.RefuseLargeTableUnbounded},
	{"SELECT COUNT(*) FROM dbo.customer c RIGHT JOIN dbo.Invoice i ON c.customer_id = i.customer_id AND i.invoice_date >= '2030-01-01'", contracts.RefuseLargeTableUnbounded},
	{"SELECT COUNT(*) FROM dbo.customer c LEFT JOIN dbo.x ON x.id = c.id RIGHT JOIN dbo.Invoice i ON i.invoice_date >= '2030-01-01'", contracts.RefuseLargeTableUnbounded},
	{"SELECT COUNT(*) FROM (dbo.Invoice i LEFT JOIN dbo.x ON x.id = i.id) LEFT JOIN dbo.customer c ON i.invoice_date >= '2030-01-01'", contracts.RefuseLargeTableUnbounded},
	{"SELECT COUNT(*) FROM dbo.Invoice i LEFT JOIN dbo.Invoice j ON j.id = i.id AND j.invoice_date >= '2030-01-01'", contracts.RefuseLargeTableUnbounded},

	// Past the statement shape limits, checked before any parser (issue 7,
	// item 1; docs/guard.md).
	{"SELECT 1" + strings.Repeat("+1", 25000), contracts.RefuseTooComplex},
	{"SELECT " + strings.Repeat("(SELECT ", 300) + "1" + strings.Repeat(")", 300), contracts.RefuseTooComplex},
	{"SELECT '" + strings.Repeat("x", 70000) + "'", contracts.RefuseTooComplex},

	// Casts to user types (issue 17, item 17): an alias or CLR type's
	// Parse is user .NET code the cast runs. Only SQL Server's own types.
	{"SELECT CAST('x' AS dbo.MyClrType)", contracts.RefuseFunctionDenied},
	{"SELECT CONVERT(dbo.MyAlias, 1)", contracts.RefuseFunctionDenied},
	{"SELECT TRY_CAST('x' AS dbo.MyClrType)", contracts.RefuseFunctionDenied},
	{"SELECT TRY_CONVERT(dbo.MyAlias, 1)", contracts.RefuseFunctionDenied},
	{"SELECT PARSE('1' AS dbo.MyClrType)", contracts.RefuseFunctionDenied},
	{"SELECT TRY_PARSE('1' AS dbo.MyClrType USING 'en-US')", contracts.RefuseFunctionDenied},
	{"SELECT CAST('x' AS MyClrType)", contracts.RefuseFunctionDenied},
	{"SELECT CAST('x' AS [MyClrType])", contracts.RefuseFunctionDenied},
	{"SELECT CAST('x' AS [dbo].[MyClrType])", contracts.RefuseFunctionDenied},
	{"SELECT CAST('x' AS shop.dbo.MyClrType)", contracts.RefuseFunctionDenied},
	{"SELECT CAST('x' AS sys.MyClrType)", contracts.RefuseFunctionDenied},
	{"SELECT * FROM dbo.orders WHERE CAST(note AS dbo.Email) IS NOT NULL", contracts.RefuseFunctionDenied},
	{"SELECT CONVERT([dbo].[Money2], total, 1) FROM dbo.orders", contracts.RefuseFunctionDenied},
	{"SELECT (SELECT TOP (1) CAST(name AS Evil) FROM dbo.customers) AS x", contracts.RefuseFunctionDenied},
	{"SELECT * FROM dbo.events WHERE event_date >= CAST('2026-01-01' AS dbo.EvilDate)", contracts.RefuseFunctionDenied},

	// Server-side bombs (issue 17, item 17): a max value built from a size
	// the statement states, expanded, or rows generated from constants
	// and crossed.
	{"SELECT REPLICATE(CAST('x' AS nvarchar(max)), 1000000000)", contracts.RefuseResultTooLarge},
	{"SELECT LEN(REPLICATE(CONVERT(varchar(max), 'x'), 1000 * 1000 * 1000))", contracts.RefuseResultTooLarge},
	{"SELECT REPLICATE(CAST('x' AS varbinary(max)), POWER(10, 9))", contracts.RefuseResultTooLarge},
	{"SELECT REPLICATE(CAST('x' AS nvarchar(max)) + 'y', 100000000)", contracts.RefuseResultTooLarge},
	{"SELECT REPLICATE(N'y' + CAST('' AS nvarchar(max)), 2147483647)", contracts.RefuseResultTooLarge},
	{"SELECT CAST(REPLICATE(CAST('x' AS varchar(max)), 100000000) AS varbinary(max))", contracts.RefuseResultTooLarge},
	{"SELECT DECOMPRESS(COMPRESS(REPLICATE(CAST('x' AS varchar(max)), 1000000000)))", contracts.RefuseResultTooLarge},
	{"SELECT DECOMPRESS(COMPRESS(REPLICATE(CAST('x' AS varchar(max)), 100000)))", contracts.RefuseResultTooLarge},
	{"SELECT DECOMPRESS(0x1F8B0800000000000400EDC1010D000000C2A0F74F6D0E37A00000000000000000)", contracts.RefuseResultTooLarge},
	{"SELECT DECOMPRESS(DECOMPRESS(payload)) FROM dbo.orders", contracts.RefuseResultTooLarge},
	{"SELECT CAST(DECOMPRESS(CAST(note AS varbinary(max)) + 0x00) AS varchar(max)) FROM dbo.orders", contracts.RefuseResultTooLarge},
	{"SELECT HASHBYTES('SHA2_256', REPLICATE(CAST('x' AS varchar(max)), 2000000000))", contracts.RefuseResultTooLarge},
	{"SELECT COUNT(*) FROM STRING_SPLIT(REPLICATE(CAST(',' AS varchar(max)), 500000000), ',')", contracts.RefuseResultTooLarge},
	{"SELECT REPLACE(REPLICATE(CAST('a' AS varchar(max)), 1000), 'a', REPLICATE('b', 8000))", contracts.RefuseResultTooLarge},
	{"SELECT REPLACE(CAST(note AS nvarchar(max)), 'a', REPLICATE('b', 8000)) FROM dbo.orders", contracts.RefuseResultTooLarge},
	{"SELECT STRING_ESCAPE(REPLICATE(CAST(CHAR(1) AS varchar(max)), 1000000), 'json')", contracts.RefuseResultTooLarge},
	{"SELECT CONCAT(REPLICATE(CAST('x' AS nvarchar(max)), 600000), REPLICATE(CAST('y' AS nvarchar(max)), 600000))", contracts.RefuseResultTooLarge},
	{"SELECT REPLICATE(CAST('x' AS nvarchar(max)), 600000) + REPLICATE(CAST('y' AS nvarchar(max)), 600000)", contracts.RefuseResultTooLarge},
	{"SELECT REPLICATE(CAST(note AS nvarchar(max)), 100000) FROM dbo.orders", contracts.RefuseResultTooLarge},
	{"SELECT REPLICATE(CAST(note AS nvarchar(max)), LEN(note)) FROM dbo.orders", contracts.RefuseResultTooLarge},
	{"SELECT REPLICATE(note, id) FROM dbo.orders", contracts.RefuseResultTooLarge},
	{"SELECT STRING_AGG(CAST(REPLICATE('x', 8000) AS varchar(max)), ',') FROM GENERATE_SERIES(1, 1000000)", contracts.RefuseResultTooLarge},
	{"SELECT STRING_AGG(CAST(REPLICATE('x', 8000) AS varchar(max)), ',') FROM dbo.orders", contracts.RefuseResultTooLarge},
	{"SELECT COUNT_BIG(*) FROM GENERATE_SERIES(1, 2147483647)", contracts.RefuseResultTooLarge},
	{"SELECT COUNT_BIG(*) FROM GENERATE_SERIES(-2147483648, 2147483647)", contracts.RefuseResultTooLarge},
	{"SELECT COUNT_BIG(*) FROM GENERATE_SERIES(1.0, 100000.0, 0.001)", contracts.RefuseResultTooLarge},
	{"SELECT COUNT_BIG(*) FROM GENERATE_SERIES(1, 100000) a CROSS JOIN GENERATE_SERIES(1, 100000) b", contracts.RefuseResultTooLarge},
	{"SELECT COUNT_BIG(*) FROM GENERATE_SERIES(1, 1000) a, GENERATE_SERIES(1, 1000) b, GENERATE_SERIES(1, 1000) c", contracts.RefuseResultTooLarge},
	{"SELECT COUNT_BIG(*) FROM GENERATE_SERIES(1, 10000) a JOIN GENERATE_SERIES(1, 10000) b ON 1 = 1", contracts.RefuseResultTooLarge},
	{"SELECT COUNT_BIG(*) FROM GENERATE_SERIES(1, 10000) a CROSS APPLY GENERATE_SERIES(1, 10000) b", contracts.RefuseResultTooLarge},
	{"WITH g AS (SELECT value FROM GENERATE_SERIES(1, 10000)) SELECT COUNT_BIG(*) FROM g a CROSS JOIN g b", contracts.RefuseResultTooLarge},
	{"SELECT COUNT_BIG(*) FROM (SELECT value FROM GENERATE_SERIES(1, 10000)) a, (SELECT value FROM GENERATE_SERIES(1, 10000) UNION ALL SELECT 1) b", contracts.RefuseResultTooLarge},
	{"SELECT COUNT_BIG(*) FROM (VALUES (1),(2),(3),(4),(5),(6),(7),(8),(9),(10)) a(n), (VALUES (1),(2),(3),(4),(5),(6),(7),(8),(9),(10)) b(n), (VALUES (1),(2),(3),(4),(5),(6),(7),(8),(9),(10)) c(n), (VALUES (1),(2),(3),(4),(5),(6),(7),(8),(9),(10)) d(n), (VALUES (1),(2),(3),(4),(5),(6),(7),(8),(9),(10)) e(n), (VALUES (1),(2),(3),(4),(5),(6),(7),(8),(9),(10)) f(n), (VALUES (1),(2),(3)) g(n)", contracts.RefuseResultTooLarge},
	{"SELECT COUNT_BIG(*) FROM STRING_SPLIT(REPLICATE(CAST(',' AS varchar(max)), 1000000), ',') a CROSS JOIN STRING_SPLIT(REPLICATE(CAST(',' AS varchar(max)), 1000000), ',') b", contracts.RefuseResultTooLarge},
	{"SELECT (SELECT COUNT_BIG(*) FROM GENERATE_SERIES(1, 100000) a, GENERATE_SERIES(1, 100000) b) AS n", contracts.RefuseResultTooLarge},
	{"SELECT COUNT_BIG(*) FROM dbo.orders o CROSS JOIN GENERATE_SERIES(1, 1000000) g", contracts.RefuseResultTooLarge},
	{"SELECT COUNT_BIG(*) FROM dbo.orders o CROSS APPLY GENERATE_SERIES(1, o.quantity) g", contracts.RefuseResultTooLarge},
	{"SELECT COUNT_BIG(*) FROM GENERATE_SERIES(1, (SELECT MAX(id) FROM dbo.orders))", contracts.RefuseResultTooLarge},
	{"WITH r AS (SELECT 1 AS n UNION ALL SELECT r.n FROM r CROSS JOIN GENERATE_SERIES(1, 10) g) SELECT COUNT_BIG(*) FROM r", contracts.RefuseResultTooLarge},
	{"WITH r AS (SELECT 1 AS n UNION ALL SELECT r.n FROM r, (VALUES (1), (2)) v(x)) SELECT COUNT_BIG(*) FROM r", contracts.RefuseResultTooLarge},

	// Bounds that bound nothing (issue 17, item 17): a sentinel at or
	// below the type's minimum, NULL, a reach far into the past, or a value
	// the reader cannot evaluate reads every row.
	{"SELECT COUNT(*) FROM dbo.Invoice WHERE invoice_date >= '1753-01-01'", contracts.RefuseLargeTableUnbounded},
	{"SELECT COUNT(*) FROM dbo.events WHERE event_date >= '0001-01-01'", contracts.RefuseLargeTableUnbounded},
	{"SELECT COUNT(*) FROM dbo.events WHERE event_date >= NULL", contracts.RefuseLargeTableUnbounded},
	{"SELECT COUNT(*) FROM dbo.events WHERE event_date > -1e308", contracts.RefuseLargeTableUnbounded},
	{"SELECT COUNT(*) FROM dbo.events WHERE event_date >= DATEADD(year, -100, GETDATE())", contracts.RefuseLargeTableUnbounded},
	{"SELECT COUNT(*) FROM dbo.events WHERE event_date >= COALESCE(NULL, '0001-01-01')", contracts.RefuseLargeTableUnbounded},
}

// valid is analytics the guard must let through.
var valid = []string{
	"SELECT 1",
	"select top 5 * from orders;",
	"SELECT TOP (10) WITH TIES id, total FROM dbo.orders ORDER BY total DESC;;",
	"SELECT 'a'';DELETE FROM dbo.orders --' AS s, N'ünï' AS n, 0x1F AS b, 1.5e3 AS f, .5 AS h",
	"SELECT 1 /* ; DELETE FROM dbo.orders */ -- ; DROP\n",
	"SELECT [order id], \"total\", [we]]ird] FROM [dbo].[order items]",
	"SELECT o.* FROM dbo.orders AS o",
	"SELECT DISTINCT customer_id FROM dbo.orders",
	`SELECT customer_id, ordered_at,
	        SUM(total) OVER (PARTITION BY customer_id ORDER BY ordered_at ROWS BETWEEN UNBOUNDED PRECEDING AND CURRENT ROW) AS running,
	        LAG(total, 1, 0) OVER (PARTITION BY customer_id ORDER BY ordered_at) AS prev,
	        ROW_NUMBER() OVER (ORDER BY total DESC) AS rn,
	        NTILE(4) OVER (ORDER BY total) AS quartile,
	        AVG(total) OVER (ORDER BY ordered_at RANGE BETWEEN 3 PRECEDING AND 1 FOLLOWING) AS smooth
	   FROM dbo.orders`,
	`SELECT DISTINCT region,
	        PERCENTILE_CONT(0.5) WITHIN GROUP (ORDER BY total) OVER (PARTITION BY region) AS median,
	        PERCENTILE_DISC(0.9) WITHIN GROUP (ORDER BY total DESC) OVER (PARTITION BY region) AS p90
	   FROM sales.orders`,
	"SELECT region, STRING_AGG(name, ', ') WITHIN GROUP (ORDER BY name) AS names FROM sales.reps GROUP BY region",
	`WITH monthly AS (
	     SELECT DATEFROMPARTS(YEAR(ordered_at), MONTH(ordered_at), 1) AS month, SUM(total) AS revenue
	       FROM dbo.orders GROUP BY DATEFROMPARTS(YEAR(ordered_at), MONTH(ordered_at), 1)),
	 ranked AS (
	     SELECT month, revenue, revenue - LAG(revenue) OVER (ORDER BY month) AS change FROM monthly)
	 SELECT * FROM ranked r JOIN monthly m ON m.month = r.month ORDER BY r.month OFFSET 0 ROWS FETCH NEXT 12 ROWS ONLY`,
	`WITH tree (id, parent_id, depth) AS (
	     SELECT id, parent_id, 0 FROM dbo.categories WHERE parent_id IS NULL
	     UNION ALL
	     SELECT c.id, c.parent_id, t.depth + 1 FROM dbo.categories AS c INNER JOIN tree AS t ON c.parent_id = t.id)
	 SELECT * FROM tree`,
	`SELECT c.name, x.total
	   FROM dbo.customers c
	  CROSS APPLY (SELECT TOP (3) o.total FROM dbo.orders o WHERE o.customer_id = c.id ORDER BY o.total DESC) AS x`,
	"SELECT c.name, s.value FROM dbo.customers c OUTER APPLY STRING_SPLIT(c.tags, ',') AS s",
	"SELECT value FROM GENERATE_SERIES(1, 10)",
	"SELECT id FROM dbo.orders UNION SELECT id FROM dbo.refunds EXCEPT SELECT id FROM dbo.fraud INTERSECT SELECT id FROM dbo.checked ORDER BY id",
	"(SELECT id FROM dbo.orders) UNION ALL (SELECT id FROM dbo.refunds)",
	`SELECT CASE WHEN total > 100 THEN 'big' WHEN total > 10 THEN 'mid' ELSE 'small' END AS size,
	        CASE status WHEN 1 THEN 'open' ELSE 'closed' END,
	        CONVERT(varchar(10), ordered_at, 120), TRY_CAST(note AS int), CAST(total AS decimal(12, 2)),
	        CAST(note AS nvarchar(max)), IIF(total > 0, 1, 0), COALESCE(note, N''), ISNULL(note, ''),
	        DATEADD(day, -7, GETDATE()), DATEDIFF(month, ordered_at, SYSDATETIME()), DATEPART(weekday, ordered_at),
	        TRIM(note), LEFT(note, 3), RIGHT(note, 2), JSON_VALUE(payload, '$.kind'), ISJSON(payload),
	        ordered_at AT TIME ZONE 'UTC', note COLLATE Latin1_General_CI_AS, CURRENT_TIMESTAMP, -total, ~flags
	   FROM dbo.orders`,
	"SELECT * FROM dbo.orders o WHERE EXISTS (SELECT 1 FROM dbo.refunds r WHERE r.order_id = o.id) AND NOT EXISTS (SELECT 1 FROM dbo.fraud f WHERE f.order_id = o.id)",
	"SELECT * FROM dbo.orders WHERE customer_id IN (SELECT id FROM dbo.customers WHERE country = 'NL') AND total > ALL (SELECT total FROM dbo.refunds)",
	"SELECT * FROM dbo.orders WHERE total BETWEEN 10 AND 20 AND note LIKE 'x%' ESCAPE '\\' AND note NOT LIKE '%y' AND status NOT IN (1, 2) AND note IS NOT NULL",
	"SELECT region, product, SUM(total) FROM sales.orders GROUP BY ROLLUP (region, product)",
	"SELECT region, product, SUM(total), GROUPING_ID(region, product) FROM sales.orders GROUP BY GROUPING SETS ((region, product), (region), ())",
	"SELECT region, SUM(total) FROM sales.orders GROUP BY region WITH CUBE HAVING SUM(total) > 100",
	"SELECT * FROM (SELECT region, month, total FROM sales.orders) AS s PIVOT (SUM(total) FOR month IN ([1], [2], [3])) AS p",
	"SELECT * FROM sales.wide UNPIVOT (total FOR month IN (m1, m2, m3)) AS u",
	"SELECT * FROM (VALUES (1, 'a'), (2, 'b')) AS v (id, name)",
	"SELECT o.id FROM dbo.orders o LEFT OUTER JOIN dbo.customers c ON c.id = o.customer_id RIGHT JOIN dbo.regions g ON g.id = c.region_id FULL OUTER JOIN dbo.x ON 1 = 1 CROSS JOIN dbo.y",
	"SELECT * FROM dbo.a JOIN dbo.b JOIN dbo.c ON c.id = b.id ON b.id = a.id",
	"SELECT * FROM (dbo.a JOIN dbo.b ON b.id = a.id) LEFT JOIN dbo.c ON c.id = a.id",
	"SELECT COUNT(*), COUNT(DISTINCT customer_id), COUNT_BIG(*), MAX(total) FROM dbo.orders",
	"SELECT shop.dbo.orders.id FROM shop.dbo.orders",
	"SELECT id FROM shop..orders",
	"SELECT total_per_customer = SUM(total), 'label' = 1 FROM dbo.orders",
	"SELECT 1 'label'",
	"SELECT @@VERSION, @@SERVERNAME",
	"SELECT FIRST_VALUE(total) IGNORE NULLS OVER (ORDER BY id) FROM dbo.orders",
	"SELECT SUM(total) OVER w FROM dbo.orders WINDOW w AS (PARTITION BY customer_id)",
	"SELECT COUNT(*) FROM dbo.events WHERE event_date >= DATEADD(day, -7, CAST(GETDATE() AS date))",
	"SELECT COUNT(*) FROM dbo.events e JOIN dbo.users u ON u.id = e.user_id AND e.event_date >= '2026-03-01'",
	"SELECT COUNT(*) FROM dbo.events WHERE NOT (event_date < '2026-01-01') AND kind = 'x'",
	"SELECT COUNT(*) FROM dbo.events WHERE '2026-01-01' <= event_date",
	"SELECT COUNT(*) FROM dbo.events AS e WHERE (e.event_date BETWEEN '2026-01-01' AND '2026-02-01' AND e.kind = 'x')",
	"SELECT COUNT(*) FROM dbo.events WHERE event_date IN ('2026-01-01', '2026-01-02')",
	"SELECT COUNT(*) FROM dbo.events WHERE event_date !< '2026-01-01'",
	"SELECT * FROM dbo.orders o WHERE o.total > (SELECT AVG(e.value) FROM dbo.events e WHERE e.event_date >= EOMONTH(GETDATE(), -1))",
	// Lexed as SQL Server lexes: complete floats without exponent digits, a
	// comment ended by a lone CR, SQL Server's whitespace, trailing spaces.
	"SELECT 1e AS a, 1.e AS b, .5e AS c, 1e+ AS d, 2E-3 AS e",
	"SELECT 1 --\rAS one",
	"SELECT * FROM dbo.Invoice --\rWHERE invoice_date >= '2030-01-01'",
	"SELECT 0x1FDELETE FROM dbo.InvoiceLine", // 0x1FDE AS LETE: hex digits run on
	"SELECT\u00a01\u3000AS\u200bone\x1f",
	"SELECT [total ] FROM [dbo].[orders   ] AS [o ] WHERE [o].[total] > 0",
	"SELECT * FROM [ leading space]",
	"WITH recent AS (SELECT 1 AS id) SELECT * FROM recent",
	"WITH recent AS (SELECT 1 AS id) SELECT * FROM [recent ]",
	"SELECT N'caf\u00e9' AS caf\u00e9, [na\u00efve] FROM dbo.orders",
	"SELECT '--(*' AS odbc, '{fn x}' AS escape, '$12' AS money /* --(* */",
	// Outer joins bounded on the side they do not preserve.
	"SELECT COUNT(*) FROM dbo.customer c LEFT JOIN dbo.Invoice i ON i.customer_id = c.id AND i.invoice_date >= '2030-01-01'",
	"SELECT COUNT(*) FROM dbo.Invoice i RIGHT JOIN dbo.customer c ON i.customer_id = c.id AND i.invoice_date >= '2030-01-01'",
	"SELECT COUNT(*) FROM dbo.Invoice i JOIN dbo.customer c ON c.id = i.customer_id AND i.invoice_date >= '2030-01-01'",
	"SELECT COUNT(*) FROM dbo.Invoice i LEFT JOIN dbo.customer c ON c.id = i.customer_id WHERE i.invoice_date >= '2030-01-01'",
	"SELECT COUNT(*) FROM dbo.Invoice i FULL JOIN dbo.customer c ON c.id = i.customer_id WHERE i.invoice_date >= '2030-01-01'",
	"SELECT COUNT(*) FROM dbo.customer c LEFT JOIN (dbo.x JOIN dbo.Invoice i ON i.invoice_date >= '2030-01-01') ON x.id = c.id",
	// Built-in types, values within the size bounds, generated rows within
	// the row bounds (issue 17, item 17).
	"SELECT CAST(1 AS sys.int), CAST(1 AS [int]), CONVERT(national character varying(10), 'x'), CAST(1 AS double precision), TRY_CONVERT(uniqueidentifier, note) FROM dbo.orders",
	"SELECT PARSE('2026-01-01' AS date USING 'en-US'), TRY_PARSE('1' AS int), CAST(note AS nvarchar(max)), CAST(payload AS varbinary(max)) FROM dbo.orders",
	"SELECT REPLICATE('x', 1000000000)", // not a max value: SQL Server stops it at 8,000 bytes
	"SELECT REPLICATE('0', 5 - LEN(code)) + code FROM dbo.orders",
	"SELECT REPLICATE(CAST('-' AS varchar(max)), 100000), REPLICATE(CAST(note AS nvarchar(max)), 3) FROM dbo.orders",
	"SELECT DECOMPRESS(payload), CAST(DECOMPRESS(o.payload) AS nvarchar(max)), HASHBYTES('SHA2_256', note), COMPRESS(note) FROM dbo.orders o",
	"SELECT STRING_AGG(CAST(name AS nvarchar(max)), ', ') FROM dbo.customers",
	"SELECT COUNT(*) FROM GENERATE_SERIES(1, 1000000)",
	"SELECT a.value, v.n FROM GENERATE_SERIES(1, 1000) a CROSS JOIN (VALUES (1), (2)) v (n)",
	"SELECT d.value, COUNT(o.id) FROM GENERATE_SERIES(0, 365) d LEFT JOIN dbo.orders o ON DATEDIFF(day, o.ordered_at, GETDATE()) = d.value GROUP BY d.value",
	"SELECT s.value FROM dbo.customers c CROSS APPLY STRING_SPLIT(c.tags, ',') s",
	"SELECT COUNT(*) FROM dbo.events WHERE event_date >= GETDATE() - 7",
	"SELECT COUNT(*) FROM dbo.events WHERE event_date >= DATETRUNC(month, SYSDATETIME())",
	"SELECT COUNT(*) FROM dbo.events WHERE event_date BETWEEN DATEFROMPARTS(2026, 1, 1) AND DATEFROMPARTS(2026, 12, 31)",
}
