# Mutants of the fence's default-ignorable rules, the MCP server's fence and
# id checks, the console's bidi marks and sonde query's hand-off to its
# child (issue 17, items 8-11). Sourced by scripts/mutants.sh; see its header
# for the m NAME PACKAGE RUN-REGEX NEEDS FILE OLD NEW form.

ff=pkg/fence/fence.go
mcps=services/gateway/mcpserver/server.go
mcpt=services/gateway/mcpserver/tools.go
ctext=services/gateway/console/static/text.js
capp=services/gateway/console/static/app.js
cq=services/sonde/internal/cli/query.go

# The fence strips default-ignorable code points before it looks for markers.
m fence-ignorables-kept ./pkg/fence/ 'TestEveryDefaultIgnorableIsStripped|TestTagSpelledMarkersAreStripped|TestWrapHoldsAgainstTheHostileCorpus' - \
	"$ff" 'return spaceBrackets(removeKeywords(stripIgnorable(s)))' 'return spaceBrackets(removeKeywords(s))'
# ... the whole tag block among them ...
m fence-tag-block-kept ./pkg/fence/ 'TestTagSpelledMarkersAreStripped' - \
	"$ff" '{Lo: 0xe0000, Hi: 0xe0fff, Stride: 1},' '{Lo: 0xe0000, Hi: 0xe0001, Stride: 1},'
# ... every range of the property (here: zero-width space to RLM) ...
m fence-ignorable-range-cut ./pkg/fence/ 'TestEveryDefaultIgnorableIsStripped' - \
	"$ff" '{Lo: 0x200b, Hi: 0x200f, Stride: 1},' '{Lo: 0x200b, Hi: 0x200b, Stride: 1},'
# ... the Hangul fillers, letters drawn as nothing, which split the word ...
m fence-hangul-filler-kept ./pkg/fence/ 'TestIgnorablesAreUnicodesProperty|TestWrapHoldsAgainstTheHostileCorpus' - \
	"$ff" '{Lo: 0x3164, Hi: 0x3164, Stride: 1},' ''
# ... written raw or as JSON escapes;
m fence-escaped-ignorables-kept ./pkg/fence/ 'TestEveryDefaultIgnorableIsStripped' - \
	"$ff" $'\t\tr, n := runeAt(s, i, escapes)\n\t\tif isIgnorable(r) {' $'\t\tr, n := runeAt(s, i, false)\n\t\tif isIgnorable(r) {'
# and a bracket run written in escapes (json.Marshal writes < as \u003c) is spaced.
m fence-escaped-brackets-unspaced ./pkg/fence/ 'TestSplitBracketRunsAreSpaced' - \
	"$ff" $'\tescapes := strings.Contains(s, `\\u`)\n\tif !hasBracketRun(s, escapes) {' $'\tescapes := false\n\tif !hasBracketRun(s, escapes) {'

# MCP: what a host hands its model is fenced when it was read from a database ...
m mcp-fence-removed ./services/gateway/mcpserver/ 'TestTextContentIsFenced' - \
	"$mcps" 'fence.Wrap(f.source, string(b))' 'string(b)'
# ... and neutralised otherwise (an error may quote the engine);
m mcp-error-text-raw ./services/gateway/mcpserver/ 'TestTextContentIsFenced' - \
	"$mcps" 'Content:           []mcp.Content{&mcp.TextContent{Text: fence.Neutralise(e.Error())}},' 'Content:           []mcp.Content{&mcp.TextContent{Text: e.Error()}},'
# the tools' descriptions say so.
m mcp-fence-unsaid ./services/gateway/mcpserver/ 'TestFencedToolsSayTheyAreFenced' - \
	"$mcpt" 'finished says whether it has." + fencedNote +' 'finished says whether it has." +'
# Every id an MCP tool takes is checked by the one rule at the edge.
m mcp-connection-id-unchecked ./services/gateway/mcpserver/ 'TestIDsAreCheckedAtTheEdge' - \
	"$mcpt" 'return contracts.CheckID(contracts.IDConnection, c.ConnectionID)' 'return nil'
m mcp-run-id-unchecked ./services/gateway/mcpserver/ 'TestIDsAreCheckedAtTheEdge' - \
	"$mcpt" 'if err := contracts.CheckID(contracts.IDRun, in.RunID); err != nil {' 'if err := error(nil); err != nil {'
m mcp-previous-run-id-unchecked ./services/gateway/mcpserver/ 'TestIDsAreCheckedAtTheEdge' - \
	"$mcpt" 'if err := contracts.CheckID(contracts.IDRun, in.PreviousRunID); err != nil {' 'if err := error(nil); err != nil {'
m mcp-id-error-unclassified ./services/gateway/mcpserver/ 'TestIDsAreCheckedAtTheEdge' - \
	"$mcps" 'case errors.As(err, &ie):' 'case false && errors.As(err, &ie):'

# The console shows bidi controls as marks ...
m console-bidi-obeyed ./services/gateway/console/ 'TestVisibleMarksExactlyTheBidiControls' - \
	"$ctext" 'return t.replace(BIDI, mark);' 'return t;'
m console-alm-obeyed ./services/gateway/console/ 'TestVisibleMarksExactlyTheBidiControls' - \
	"$ctext" 'const BIDI = /[\u061C\u200E' 'const BIDI = /[\u200E'
# ... in every string it renders.
m console-text-bypasses-visible ./services/gateway/console/ 'TestEveryRenderedStringPassesThroughVisible' - \
	"$capp" "else if (k === 'text') setText(e, v);" "else if (k === 'text') e.textContent = v;"

# sonde query and sonde sqlite hand the statement and its parameters to
# their child on its standard input, never in its argv.
m query-statement-in-argv ./services/sonde/internal/cli/ 'TestTheStatementIsNotInTheChildsArguments' - \
	"$cq" 'childArgs = append(append(childArgs, "--"), args...)' 'childArgs = append(append(childArgs, "--"), append(args, h.sql)...)'
m query-params-in-argv ./services/sonde/internal/cli/ 'TestTheStatementIsNotInTheChildsArguments' - \
	"$cq" 'if f.Name != "file" && f.Name != "params" {' 'if f.Name != "file" {'
m query-stdin-unwired ./services/sonde/internal/cli/ 'TestANulByteIsRefusedClearly|TestTheStatementIsNotInTheChildsArguments' - \
	"$cq" $'\tc.Stdin = &in\n' $'\t_ = &in\n'
