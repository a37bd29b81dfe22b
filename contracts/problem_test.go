package contracts

import (
	"bufio"
	"encoding/json"
	"go/ast"
	"go/parser"
	"go/token"
	"io/fs"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"
)

// snake is the one casing of a code.
var snake = regexp.MustCompile(`^[a-z][a-z0-9]*(_[a-z0-9]+)*$`)

// TestCodesAreOneListInOneCasing: every constant of type Code this package
// declares is in Codes, Codes holds nothing else, and each is snake_case
// (the casing the ledger records): HTTP answers once said BAD_REQUEST where
// the executor said bad_request.
func TestCodesAreOneListInOneCasing(t *testing.T) {
	// Every constant of type Code in this package's source, by value.
	values := map[string]string{}
	fset := token.NewFileSet()
	files, _ := filepath.Glob("*.go")
	for _, f := range files {
		if strings.HasSuffix(f, "_test.go") {
			continue
		}
		file, err := parser.ParseFile(fset, f, nil, 0)
		if err != nil {
			t.Fatal(err)
		}
		ast.Inspect(file, func(n ast.Node) bool {
			vs, ok := n.(*ast.ValueSpec)
			if !ok {
				return true
			}
			if id, ok := vs.Type.(*ast.Ident); !ok || id.Name != "Code" {
				return true
			}
			for i, name := range vs.Names {
				if lit, ok := vs.Values[i].(*ast.BasicLit); ok {
					values[name.Name], _ = strconv.Unquote(lit.Value)
				}
			}
			return true
		})
	}
	if len(values) < 50 {
		t.Fatalf("found %d declared codes; the scan reads no declarations", len(values))
	}
	distinct := map[string]string{}
	for name, v := range values {
		if other, dup := distinct[v]; dup {
			t.Errorf("%s and %s both declare %q", name, other, v)
		}
		distinct[v] = name
		if !Code(v).Declared() {
			t.Errorf("%s (%q) is declared but not in Codes", name, v)
		}
	}
	listed := map[Code]bool{}
	for _, c := range Codes {
		if listed[c] {
			t.Errorf("code %q is listed twice", c)
		}
		listed[c] = true
		if !snake.MatchString(string(c)) {
			t.Errorf("code %q is not snake_case", c)
		}
		if _, ok := distinct[string(c)]; !ok {
			t.Errorf("code %q is listed but declared by no constant", c)
		}
	}
}

// codeLiteral finds string literals written as codes outside contracts:
// Code: "x" in a composite literal, contracts.Code("x"), and a constant
// named like a code (refuse…, Refuse…, Code…) whose value is a literal.
var codeConst = regexp.MustCompile(`^(refuse|Refuse|Code)[A-Z]`)

// TestEveryWrittenCodeIsDeclared walks the production Go of the whole tree:
// a code is written from a contracts constant, never a literal of its own.
// A literal code that Codes lists is still reported (it is a second
// declaration); one Codes lacks is a code no client can know.
func TestEveryWrittenCodeIsDeclared(t *testing.T) {
	root, err := filepath.Abs("..")
	if err != nil {
		t.Fatal(err)
	}
	fset := token.NewFileSet()
	scanned := 0
	err = filepath.WalkDir(root, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() {
			switch d.Name() {
			case ".git", "node_modules", "testdata", "contracts":
				if path != root {
					return filepath.SkipDir
				}
			}
			return nil
		}
		if !strings.HasSuffix(path, ".go") || strings.HasSuffix(path, "_test.go") {
			return nil
		}
		file, err := parser.ParseFile(fset, path, nil, 0)
		if err != nil {
			return nil // another area's file mid-edit; the compiler reports it
		}
		scanned++
		rel, _ := filepath.Rel(root, path)
		report := func(pos token.Pos, what, lit string) {
			v, _ := strconv.Unquote(lit)
			t.Errorf("%s:%d: %s %q written as a literal; use the contracts constant (declared: %v)",
				rel, fset.Position(pos).Line, what, v, Code(v).Declared())
		}
		ast.Inspect(file, func(n ast.Node) bool {
			switch n := n.(type) {
			case *ast.KeyValueExpr:
				if k, ok := n.Key.(*ast.Ident); ok && k.Name == "Code" {
					if lit, ok := n.Value.(*ast.BasicLit); ok && lit.Kind == token.STRING {
						report(n.Pos(), "code", lit.Value)
					}
				}
			case *ast.CallExpr:
				if sel, ok := n.Fun.(*ast.SelectorExpr); ok && sel.Sel.Name == "Code" && len(n.Args) == 1 {
					if x, ok := sel.X.(*ast.Ident); ok && x.Name == "contracts" {
						if lit, ok := n.Args[0].(*ast.BasicLit); ok && lit.Kind == token.STRING {
							report(n.Pos(), "contracts.Code", lit.Value)
						}
					}
				}
			case *ast.ValueSpec:
				for i, name := range n.Names {
					if i >= len(n.Values) || !codeConst.MatchString(name.Name) {
						continue
					}
					if lit, ok := n.Values[i].(*ast.BasicLit); ok && lit.Kind == token.STRING {
						report(n.Pos(), "code constant "+name.Name, lit.Value)
					}
				}
			}
			return true
		})
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if scanned < 100 {
		t.Fatalf("scanned %d files; the walk does not reach the tree", scanned)
	}
}

// legacyCodes are codes recorded before codes had one casing (a context
// that could not be captured was executor-unavailable, …): recorded
// ledgers keep them and still fold; nothing writes them now.
var legacyCodes = map[string]Code{
	"executor-unavailable": CodeExecutorUnavailable,
	"executor-no-reply":    CodeExecutorNoReply,
	"schema-read-failed":   CodeSchemaReadFailed,
	"inventory-missing":    CodeInventoryMissing,
}

// TestRecordedLedgerCodesAreDeclared: every code in the recorded ledgers
// is declared, or is a legacy spelling of a declared one.
func TestRecordedLedgerCodesAreDeclared(t *testing.T) {
	files, _ := filepath.Glob("../pkg/ledger/testdata/ledgers/*/*.jsonl")
	if len(files) == 0 {
		t.Fatal("no recorded ledgers found")
	}
	seen := 0
	var walk func(v any)
	walk = func(v any) {
		switch v := v.(type) {
		case map[string]any:
			for k, x := range v {
				if s, ok := x.(string); ok && k == "code" {
					seen++
					if legacy, ok := legacyCodes[s]; ok {
						if !legacy.Declared() {
							t.Errorf("legacy code %q maps to %q, which is not declared", s, legacy)
						}
					} else if !Code(s).Declared() {
						t.Errorf("recorded code %q is not declared in contracts", s)
					}
				}
				walk(x)
			}
		case []any:
			for _, x := range v {
				walk(x)
			}
		}
	}
	for _, f := range files {
		fh, err := os.Open(f)
		if err != nil {
			t.Fatal(err)
		}
		sc := bufio.NewScanner(fh)
		sc.Buffer(make([]byte, 1<<20), 16<<20)
		for sc.Scan() {
			var v any
			if err := json.Unmarshal(sc.Bytes(), &v); err != nil {
				t.Fatalf("%s: %v", f, err)
			}
			walk(v)
		}
		fh.Close()
	}
	if seen == 0 {
		t.Fatal("the recorded ledgers hold no code")
	}
}

// TestProblemReadsARecordedRefusal: a refusal recorded as
// {code, reason, fix} reads as a Problem with that message; one written
// now carries message.
func TestProblemReadsARecordedRefusal(t *testing.T) {
	var p Problem
	if err := json.Unmarshal([]byte(`{"code":"not_a_select","reason":"DELETE writes","fix":"send a SELECT"}`), &p); err != nil ||
		p != (Problem{Code: RefuseNotASelect, Message: "DELETE writes", Fix: "send a SELECT"}) {
		t.Fatalf("%+v, %v", p, err)
	}
	b, _ := json.Marshal(p)
	if string(b) != `{"code":"not_a_select","message":"DELETE writes","fix":"send a SELECT"}` {
		t.Fatalf("encoded %s", b)
	}
	if err := json.Unmarshal(b, &p); err != nil || p.Message != "DELETE writes" {
		t.Fatalf("round trip %+v, %v", p, err)
	}
}
