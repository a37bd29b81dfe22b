package orchestrator

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"strings"

	"github.com/sondehq/sonde/contracts"
)

// tool is one agent tool, declared whole in its own file (tool_<name>.go):
// what the model is told (its spec, the parameters generated from its
// arguments' struct), the rules' one line about it, the executor operation
// it needs, whether spent repairs refuse it, how its call makes a step, and
// its handler. Adding a tool is a file, an entry of toolList, and its name
// in a workflow row (pkg/policy).
type tool struct {
	spec contracts.ToolSpec
	// brief is the rules' one-line account of the tool.
	brief string
	// op is the executor operation the tool asks for ("" for none).
	op contracts.ExecOp
	// repairBound: the tool reaches the database with a statement of the
	// model's (or a reading the model chose), so once the run's repairs
	// are spent it is refused. The server's own schema read is not.
	repairBound bool
	// step reads a call's arguments as the step they make, for a tool that
	// reaches the database (nil for one that reaches none): the loop check
	// knows two calls that differ only in spelling for the same step.
	step func(raw string) (stepArgs, error)
	// call handles one call with the model's arguments as sent and the
	// entry's operation; done reports that the run ended.
	call func(d *drive, ctx context.Context, op contracts.ExecOp, tc contracts.ToolCall, raw string) (done bool, err error)
}

// toolList is every tool, in the order they are declared to the model when
// a workflow row names them (a test holds each to being whole and the
// workflow table to naming only these).
var toolList []tool

// toolTable and toolSpecs are toolList by name.
var (
	toolTable map[string]tool
	toolSpecs map[string]contracts.ToolSpec
)

// The list is assigned at init rather than by its declaration: the handlers
// it holds consult the table (a spent repair refuses by the entry's rule),
// and a package variable may not depend on itself.
func init() {
	toolList = []tool{
		inspectSchemaTool,
		runReadQueryTool,
		inspectPlanTool,
		composeReportTool,
		comparePlansTool,
		recommendChangeTool,
		profileTableTool,
		inspectOperationsTool,
		presentAnswerTool,
	}
	toolTable = map[string]tool{}
	toolSpecs = map[string]contracts.ToolSpec{}
	for _, t := range toolList {
		toolTable[t.spec.Name] = t
		toolSpecs[t.spec.Name] = t.spec
	}
}

// argError is a tool call whose arguments do not fit the declared schema.
type argError struct{ msg string }

func (e *argError) Error() string { return e.msg }

// stepArgs are the arguments of a tool that reaches the database: each
// writes what of it reaches the database, the step's identity.
type stepArgs interface {
	writeStep(b *bytes.Buffer)
}

// asStep adapts a tool's decoder to its entry's step.
func asStep[A stepArgs](decode func(string) (A, []string, error)) func(string) (stepArgs, error) {
	return func(raw string) (stepArgs, error) {
		a, _, err := decode(raw)
		return a, err
	}
}

// stepKey is what reaches the database for a call: the step's identity.
// The model's prose reason and its call id are not part of it, so the same
// statement asked twice is the same step.
func stepKey(tool string, args stepArgs) string {
	var b bytes.Buffer
	b.WriteString(tool)
	b.WriteByte(0)
	args.writeStep(&b)
	sum := sha256.Sum256(b.Bytes())
	return hex.EncodeToString(sum[:10])
}

// canonicalSQL trims what cannot change a statement's effect: surrounding
// whitespace and trailing terminators. Literals are kept exactly.
func canonicalSQL(sql string) string {
	return strings.TrimRight(strings.TrimSpace(sql), "; \t\r\n")
}
