# Mutants of the surfaces that show a verdict (issue 18, item 2's marking on
# every surface and item 10's question): the MCP get_run answer, the CLI
# report and the console's answer card. Sourced by scripts/mutants.sh; see
# its header for the m NAME PACKAGE RUN-REGEX NEEDS FILE OLD NEW form.

smt=services/gateway/mcpserver/tools.go
scv=services/sonde/internal/cli/verdictprint.go
sca=services/sonde/internal/cli/ask.go
sapp=services/gateway/console/static/app.js

# get_run puts each claim's figure checks beside the claim ...
m surf-mcp-figures-dropped ./services/gateway/mcpserver/ 'TestGetRunCarriesFiguresUnmetAndTheQuestion' - \
	"$smt" 'Figures: figures[i+1]}' 'Figures: figures[-i-1]}'
# ... by its position in the report, counted from 1 ...
m surf-mcp-figures-off-by-one ./services/gateway/mcpserver/ 'TestGetRunCarriesFiguresUnmetAndTheQuestion' - \
	"$smt" 'Figures: figures[i+1]}' 'Figures: figures[i]}'
# ... carries the question and the call that answers it ...
m surf-mcp-no-answer-call ./services/gateway/mcpserver/ 'TestGetRunCarriesFiguresUnmetAndTheQuestion' - \
	"$smt" $'\tif rec.StopReason == contracts.StopQuestion {\n\t\tout.AnswerWith = answerWith(rec)' $'\tif rec.StopReason == "never" {\n\t\tout.AnswerWith = answerWith(rec)'
# ... and keeps the question, model text, out of the line before the fence.
m surf-mcp-question-in-lead ./services/gateway/mcpserver/ 'TestGetRunCarriesFiguresUnmetAndTheQuestion' - \
	"$smt" 'lead += fmt.Sprintf(" The run stopped on a question to the user (field question):' 'lead += out.Question + fmt.Sprintf(" The run stopped on a question to the user (field question):'

# The CLI report marks a figure found nowhere in words, not colour ...
m surf-cli-unverified-unmarked ./services/sonde/internal/cli/ 'TestReportShowsEachClaimsFigureChecks' - \
	"$scv" '"%s NOT FOUND in the results it cites"' '"%s"'
# ... prints the model's figure cleaned, so it cannot forge a line ...
m surf-cli-figure-raw ./services/sonde/internal/cli/ 'TestReportShowsEachClaimsFigureChecks' - \
	"$scv" 'text := render.Clip(f.Text, 60)' 'text := f.Text'
# ... and prints the question with the command that answers it.
m surf-cli-question-hidden ./services/sonde/internal/cli/ 'TestReportShowsTheQuestionAndHowToAnswerIt' - \
	"$sca" $'\tprintQuestion(out, r, server)\n' ''

# The console shows the question a run stopped on.
m surf-console-question-hidden ./services/sonde/e2e/ 'TestConsoleShowsFigureChecksAndTheQuestion' - \
	"$sapp" "if (run.finished.stopReason === 'question-asked' || run.finished.question) parts.push(questionBlock(run));" ''
# The console lists each claim's figure checks.
m surf-console-figures-hidden ./services/sonde/e2e/ 'TestConsoleShowsFigureChecksAndTheQuestion' - \
	"$sapp" $'        if (fc) {\n          li.appendChild(figureList(fc));' $'        if (fc) {\n          void figureList;'
