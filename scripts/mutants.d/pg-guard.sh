# PostgreSQL guard (issue 17, items 1, 3, 4 and 18): the exhaustive node
# rules, the server-version gate of SQL/JSON, XML and the uninterruptible
# searches refused, and what Uses reports for the executor's catalog check.
pgg=./pkg/guard/postgres/
pgnodes=pkg/guard/postgres/nodes.go
pgwalk=pkg/guard/postgres/walk.go
pgslow=pkg/guard/postgres/slow.go

m pg-unknown-node-kind-admitted "$pgg" 'TestUnknownNodeKindRefused' - \
	"$pgnodes" 'if !known {' 'if !known && false {'
m pg-statement-node-admitted "$pgg" 'TestEveryNodeKindHasARule' - \
	"$pgnodes" 'set(statement, `InsertStmt' 'set(admit, `InsertStmt'
m pg-sqljson-version-gate-removed "$pgg" 'TestGrammarNewerThanTheServer|TestHostileCorpus' - \
	"$pgnodes" 'if rule.since == 0 || w.version >= rule.since {' 'if true {'
m pg-sqljson-unknown-version-admitted "$pgg" 'TestGrammarNewerThanTheServer|TestHostileCorpus' - \
	"$pgnodes" 'if rule.since == 0 || w.version >= rule.since {' 'if rule.since == 0 || w.version == 0 || w.version >= rule.since {'
m pg-xml-nodes-admitted "$pgg" 'TestXMLRefusedAsUninterruptible|TestHostileCorpus' - \
	"$pgnodes" 'set(xmlRule, "XmlExpr XmlSerialize")' 'set(admit, "XmlExpr XmlSerialize")'
m pg-xpath-family-dropped "$pgg" 'TestXMLRefusedAsUninterruptible' - \
	pkg/guard/postgres/functions.go '[]string{"xpath", "xmlagg",' '[]string{"no-such-function", "xmlagg",'
m pg-xml-cast-admitted "$pgg" 'TestXMLRefusedAsUninterruptible|TestHostileCorpus' - \
	"$pgwalk" 'case strings.ToLower(name) == "xml":' 'case false:'
m pg-cte-cycle-clause-unwalked "$pgg" 'TestHostileCorpus' - \
	"$pgwalk" 'w.cteClauses(cte)' '_ = cte'
m pg-slow-built-operand-admitted "$pgg" 'TestHostileCorpus' - \
	"$pgslow" 'if !plain {' 'if !plain && false {'
m pg-slow-derived-column-admitted "$pgg" 'TestHostileCorpus' - \
	"$pgslow" 'if w.slowOnColumns == "" || !w.builds {' 'if true {'
m pg-uses-qualified-unreported "$pgg" 'TestUsesQualified' - \
	"$pgwalk" 'w.uses.addQualified(QualifiedFunction{Schema: ns[len(ns)-2], Name: name})' '_ = QualifiedFunction{}'
m pg-uses-case-eq-unreported "$pgg" 'TestUsesImplicitOperators' - \
	"$pgwalk" $'// CASE x WHEN v compares x = v, an operator found by name.\n\t\t\tw.uses.addOperator("=")' '// CASE x WHEN v compares x = v, an operator found by name.'
m pg-uses-using-eq-unreported "$pgg" 'TestUsesImplicitOperators' - \
	"$pgwalk" $'// The join columns are compared with =, found by name.\n\t\t\tw.uses.addOperator("=")' '// The join columns are compared with =, found by name.'
m pg-uses-in-subquery-eq-unreported "$pgg" 'TestUsesImplicitOperators' - \
	"$pgwalk" $'// x IN (SELECT …) is x = ANY (SELECT …).\n\t\t\t\tw.uses.addOperator("=")' '// x IN (SELECT …) is x = ANY (SELECT …).'
m pg-uses-not-between-as-between "$pgg" 'TestUsesImplicitOperators' - \
	"$pgwalk" $'w.uses.addOperator("<")\n\t\t\tw.uses.addOperator(">")' $'w.uses.addOperator(">=")\n\t\t\tw.uses.addOperator("<=")'
m pg-uses-comparison-not-ordering "$pgg" 'TestUsesOrdering' - \
	"$pgwalk" $'if comparing(x) {\n\t\t\t\tw.uses.Ordering = true' $'if false {\n\t\t\t\tw.uses.Ordering = true'
m pg-uses-sort-not-ordering "$pgg" 'TestUsesOrdering' - \
	"$pgwalk" $'w.operator(x.UseOp)\n\t\tw.uses.Ordering = true' 'w.operator(x.UseOp)'
m pg-uses-union-not-ordering "$pgg" 'TestUsesOrdering' - \
	"$pgwalk" 's.Op == pg_query.SetOperation_SETOP_UNION && !s.All ||' 'false ||'
