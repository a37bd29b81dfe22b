package postgres

import (
	"fmt"
	"strings"

	pg_query "github.com/pganalyze/pg_query_go/v6"
	"github.com/sondehq/sonde/contracts"
	"google.golang.org/protobuf/reflect/protoreflect"
)

// nodeRule is what the walker does with one kind of parse-tree node. The
// walker reads only the kinds named in nodeRules: a kind the parser gains
// in a later pg_query_go is refused until it is listed here (and
// TestEveryNodeKindHasARule fails until then).
type nodeRule struct {
	// code, reason and fix refuse the node wherever it is, when code is
	// set.
	code        contracts.Code
	reason, fix string
	// since, when set, is the server_version_num from which the node's
	// spelling is PostgreSQL grammar. The guard parses with PostgreSQL 17's
	// grammar; an older server reads the same text as a call of the
	// function spelled (JSON_VALUE(…) as json_value(…)), found through the
	// search path, perhaps a user-defined one. Below it, or when the
	// server's version is unknown, the node is refused.
	since int
	// spelled is how the statement writes the node, and called the
	// function an older server calls for it ("" when an older server cannot
	// read it at all).
	spelled, called string
}

// Rules shared by many kinds.
var (
	admit = nodeRule{}
	// analyzed nodes are what PostgreSQL's analyzer and planner make of a
	// statement; its parser never writes them into a raw parse tree.
	analyzed = nodeRule{code: contracts.RefuseUnsupported,
		reason: "a node of PostgreSQL's analyzed form, which its parser never produces",
		fix:    "write the query more plainly"}
	// otherStatement parts belong to statements other than SELECT.
	otherStatement = nodeRule{code: contracts.RefuseUnsupported,
		reason: "a part of a statement other than SELECT",
		fix:    "keep the query one plain SELECT"}
	statement = nodeRule{code: contracts.RefuseNotReadOnly,
		reason: "another statement inside the SELECT",
		fix:    "keep the query one plain SELECT"}
	// sqlJSON16 and sqlJSON17 are the parts of the SQL/JSON constructs
	// that are grammar from PostgreSQL 16 and 17.
	sqlJSON16 = nodeRule{since: 160000, spelled: "SQL/JSON syntax"}
	sqlJSON17 = nodeRule{since: 170000, spelled: "SQL/JSON syntax"}
	// xmlRule refuses XML evaluation: libxml2 parses, serialises and
	// evaluates XPath without PostgreSQL's interrupt checks, so neither a
	// statement timeout nor a cancel nor pg_terminate_backend stops it
	// (xpath('count(//a[. = //b])', …) over 20,000 nodes ran 20 s under a
	// 1 s statement_timeout on PostgreSQL 15; issue 17, item 4).
	xmlRule = nodeRule{code: contracts.RefuseFunctionDenied,
		reason: "XML is parsed and evaluated by libxml2, which PostgreSQL cannot interrupt: a statement timeout or cancel does not stop it",
		fix:    "read XML columns as they are stored, without XML functions, casts or XPath; or extract the values with string functions"}
)

func jsonNode(since int, spelled, called, fix string) nodeRule {
	return nodeRule{since: since, spelled: spelled, called: called, fix: fix}
}

const jsonbFix = "use the jsonb functions and operators instead (->, ->>, #>>, jsonb_path_query_first, jsonb_path_exists, to_jsonb, jsonb_build_object, jsonb_build_array, jsonb_agg, jsonb_object_agg, jsonb_typeof)"

// nodeRules names every kind of node pg_query's protobuf can carry (the
// oneof of pg_query.Node) and the Node wrapper itself. Admitted kinds are
// walked, their children too; the walker's switch reads some of them
// itself (tables, calls, casts, operators).
var nodeRules = func() map[protoreflect.Name]nodeRule {
	r := map[protoreflect.Name]nodeRule{}
	set := func(rule nodeRule, names string) {
		for _, n := range strings.Fields(names) {
			if _, dup := r[protoreflect.Name(n)]; dup {
				panic("postgres: node kind listed twice: " + n)
			}
			r[protoreflect.Name(n)] = rule
		}
	}
	// What a SELECT's raw parse tree holds.
	set(admit, `Node List Integer Float Boolean String BitString A_Const
		SelectStmt WithClause CommonTableExpr CTESearchClause CTECycleClause
		ResTarget ColumnRef ParamRef A_Star A_Indices A_Indirection A_ArrayExpr A_Expr
		TypeCast TypeName CollateClause FuncCall NamedArgExpr SortBy WindowDef GroupingSet GroupingFunc
		RangeVar Alias RangeSubselect RangeFunction RangeTableSample JoinExpr ColumnDef
		BoolExpr NullTest BooleanTest CaseExpr CaseWhen CoalesceExpr MinMaxExpr SQLValueFunction RowExpr SubLink`)
	set(nodeRule{code: contracts.RefuseNotReadOnly, reason: "SELECT … INTO creates a table", fix: "drop the INTO clause"}, "IntoClause")
	set(nodeRule{code: contracts.RefuseNotReadOnly, reason: "the query locks rows (FOR UPDATE/SHARE)", fix: "drop the FOR UPDATE/FOR SHARE clause"}, "LockingClause")
	set(nodeRule{code: contracts.RefuseUnsupported, reason: "DEFAULT stands for a column's default only in INSERT and UPDATE", fix: "write the value itself"}, "SetToDefault")
	set(nodeRule{code: contracts.RefuseUnsupported, reason: "WHERE CURRENT OF names a cursor", fix: "keep the query one plain SELECT"}, "CurrentOfExpr")
	set(nodeRule{code: contracts.RefuseUnsupported, reason: "a multiple-column assignment belongs to UPDATE", fix: "keep the query one plain SELECT"}, "MultiAssignRef")
	set(nodeRule{code: contracts.RefuseFunctionDenied, spelled: "MERGE_ACTION()", called: "merge_action",
		reason: "MERGE_ACTION() belongs to MERGE's RETURNING list; in a SELECT a server older than PostgreSQL 17 reads it as a call of a function named merge_action, perhaps a user-defined one",
		fix:    "drop MERGE_ACTION()"}, "MergeSupportFunc")
	set(nodeRule{code: contracts.RefuseTableFunction, reason: "the query reads from XMLTABLE, a table function not allowed here",
		fix: "read from tables; the only table functions allowed in FROM are generate_series and unnest"}, "RangeTableFunc RangeTableFuncCol")
	set(nodeRule{code: contracts.RefuseTableFunction, reason: "the query reads from JSON_TABLE, a table function not allowed here (a server older than PostgreSQL 17 calls a function named json_table for it)",
		fix: "read from tables; the only table functions allowed in FROM are generate_series and unnest"}, "JsonTable JsonTableColumn JsonTablePathSpec")
	set(xmlRule, "XmlExpr XmlSerialize")

	// SQL/JSON (issue 17, item 1): grammar from PostgreSQL 16 …
	set(jsonNode(160000, "JSON_OBJECT(…)", "json_object", jsonbFix), "JsonObjectConstructor")
	set(jsonNode(160000, "JSON_ARRAY(…)", "json_array", jsonbFix), "JsonArrayConstructor JsonArrayQueryConstructor")
	set(jsonNode(160000, "JSON_OBJECTAGG(…)", "json_objectagg", jsonbFix), "JsonObjectAgg")
	set(jsonNode(160000, "JSON_ARRAYAGG(…)", "json_arrayagg", jsonbFix), "JsonArrayAgg")
	set(jsonNode(160000, "IS JSON", "", "test with jsonb_typeof, or cast to jsonb"), "JsonIsPredicate")
	set(sqlJSON16, "JsonFormat JsonReturning JsonValueExpr JsonOutput JsonKeyValue JsonAggConstructor")
	// … and from PostgreSQL 17.
	set(jsonNode(170000, "JSON_QUERY, JSON_VALUE or JSON_EXISTS", "", jsonbFix), "JsonFuncExpr")
	set(jsonNode(170000, "JSON_SCALAR(…)", "json_scalar", jsonbFix), "JsonScalarExpr")
	set(jsonNode(170000, "JSON_SERIALIZE(…)", "json_serialize", jsonbFix), "JsonSerializeExpr")
	set(jsonNode(170000, "JSON(…)", "json", "cast to jsonb instead ('…'::jsonb)"), "JsonParseExpr")
	set(sqlJSON17, "JsonArgument JsonBehavior")

	set(analyzed, `Var Param Aggref WindowFunc WindowFuncRunCondition SubscriptingRef FuncExpr OpExpr
		DistinctExpr NullIfExpr ScalarArrayOpExpr SubPlan AlternativeSubPlan FieldSelect FieldStore
		RelabelType CoerceViaIO ArrayCoerceExpr ConvertRowtypeExpr CollateExpr CaseTestExpr ArrayExpr
		RowCompareExpr JsonConstructorExpr JsonExpr JsonTablePath JsonTablePathScan JsonTableSiblingJoin
		MergeAction CoerceToDomain CoerceToDomainValue NextValueExpr InferenceElem TargetEntry RangeTblRef
		FromExpr OnConflictExpr Query TableFunc RangeTblEntry RTEPermissionInfo RangeTblFunction
		TableSampleClause SortGroupClause WindowClause RowMarkClause SetOperationStmt IntList OidList`)
	set(otherStatement, `RawStmt RoleSpec ObjectWithArgs AccessPriv DefElem Constraint TableLikeClause IndexElem
		PartitionElem PartitionSpec PartitionBoundSpec PartitionRangeDatum SinglePartitionSpec PartitionCmd
		WithCheckOption InferClause OnConflictClause MergeWhenClause TriggerTransition AlterTableCmd
		CreateOpClassItem StatsElem FunctionParameter InlineCodeBlock CallContext VacuumRelation
		PublicationTable PublicationObjSpec`)
	set(statement, `InsertStmt DeleteStmt UpdateStmt MergeStmt ReturnStmt PLAssignStmt CreateSchemaStmt
		AlterTableStmt ReplicaIdentityStmt AlterCollationStmt AlterDomainStmt GrantStmt GrantRoleStmt
		AlterDefaultPrivilegesStmt CopyStmt VariableSetStmt VariableShowStmt CreateStmt CreateTableSpaceStmt
		DropTableSpaceStmt AlterTableSpaceOptionsStmt AlterTableMoveAllStmt CreateExtensionStmt
		AlterExtensionStmt AlterExtensionContentsStmt CreateFdwStmt AlterFdwStmt CreateForeignServerStmt
		AlterForeignServerStmt CreateForeignTableStmt CreateUserMappingStmt AlterUserMappingStmt
		DropUserMappingStmt ImportForeignSchemaStmt CreatePolicyStmt AlterPolicyStmt CreateAmStmt
		CreateTrigStmt CreateEventTrigStmt AlterEventTrigStmt CreatePLangStmt CreateRoleStmt AlterRoleStmt
		AlterRoleSetStmt DropRoleStmt CreateSeqStmt AlterSeqStmt DefineStmt CreateDomainStmt
		CreateOpClassStmt CreateOpFamilyStmt AlterOpFamilyStmt DropStmt TruncateStmt CommentStmt
		SecLabelStmt DeclareCursorStmt ClosePortalStmt FetchStmt IndexStmt CreateStatsStmt AlterStatsStmt
		CreateFunctionStmt AlterFunctionStmt DoStmt CallStmt RenameStmt AlterObjectDependsStmt
		AlterObjectSchemaStmt AlterOwnerStmt AlterOperatorStmt AlterTypeStmt RuleStmt NotifyStmt
		ListenStmt UnlistenStmt TransactionStmt CompositeTypeStmt CreateEnumStmt CreateRangeStmt
		AlterEnumStmt ViewStmt LoadStmt CreatedbStmt AlterDatabaseStmt AlterDatabaseRefreshCollStmt
		AlterDatabaseSetStmt DropdbStmt AlterSystemStmt ClusterStmt VacuumStmt ExplainStmt
		CreateTableAsStmt RefreshMatViewStmt CheckPointStmt DiscardStmt LockStmt ConstraintsSetStmt
		ReindexStmt CreateConversionStmt CreateCastStmt CreateTransformStmt PrepareStmt ExecuteStmt
		DeallocateStmt DropOwnedStmt ReassignOwnedStmt AlterTSDictionaryStmt AlterTSConfigurationStmt
		CreatePublicationStmt AlterPublicationStmt CreateSubscriptionStmt AlterSubscriptionStmt
		DropSubscriptionStmt`)
	return r
}()

// nodeRefusal is the refusal of node m under its kind's rule, or nil when
// the walker may read it.
func (w *walker) nodeRefusal(m protoreflect.Message) (code contracts.Code, reason, fix string, refused bool) {
	name := m.Descriptor().Name()
	rule, known := nodeRules[name]
	if !known {
		return contracts.RefuseUnsupported,
			fmt.Sprintf("the query holds a %s, a kind of PostgreSQL syntax the guard does not know", name),
			"write the query more plainly", true
	}
	if rule.code != "" {
		reason := rule.reason
		if rule.code == statement.code && rule.reason == statement.reason {
			reason = "the SELECT holds another statement: a " + strings.TrimSuffix(string(name), "Stmt")
		} else if rule.reason == analyzed.reason || rule.reason == otherStatement.reason {
			reason = fmt.Sprintf("the query holds a %s, %s", name, rule.reason)
		}
		return rule.code, reason, rule.fix, true
	}
	if rule.since == 0 || w.version >= rule.since {
		return "", "", "", false
	}
	spelled, called := rule.spelled, rule.called
	if x, ok := m.Interface().(*pg_query.JsonFuncExpr); ok {
		called = strings.ToLower(strings.TrimSuffix(strings.TrimPrefix(x.Op.String(), "JSON_"), "_OP"))
		called = "json_" + called
		spelled = strings.ToUpper(called) + "(…)"
	}
	fix = rule.fix
	if fix == "" {
		fix = jsonbFix
	}
	server := "this server (PostgreSQL " + versionText(w.version) + ")"
	if w.version == 0 {
		server = "the server's version is unknown, and a server older than that"
	}
	reads := "does not read it as PostgreSQL 17's parser does"
	if called != "" {
		reads = "reads it as a call of a function named " + called + ", found through the search path and perhaps a user-defined one"
	}
	return contracts.RefuseFunctionDenied,
		fmt.Sprintf("%s is SQL/JSON syntax only from PostgreSQL %d; %s %s", spelled, rule.since/10000, server, reads),
		fix, true
}

// versionText writes a server_version_num as PostgreSQL names the
// version: 150018 is 15.18.
func versionText(v int) string {
	if v >= 100000 {
		return fmt.Sprintf("%d.%d", v/10000, v%10000)
	}
	return fmt.Sprintf("%d.%d.%d", v/10000, v/100%100, v%100)
}
