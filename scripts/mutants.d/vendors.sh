# Issue 18 items 6 and 12, vendor side: a context refusal from any vendor
# is model-context-exceeded, and Gemini's thoughtSignature travels from the
# call Gemini signed, through the ledger, back onto that call's part.
mt=./services/modelturn/
st=./services/sonde/internal/stacktest/
oac=services/modelturn/internal/openaichat/classify.go
amc=services/modelturn/internal/anthropicmsg/client.go
gmc=services/modelturn/internal/geminichat/client.go
gmp=services/modelturn/internal/geminichat/params.go
olc=services/modelturn/internal/ollamachat/client.go
fl=services/modelturn/internal/failure/failure.go
mtg=pkg/modeltest/gemini.go

# Item 6: each vendor's context refusal, by its structured field where it
# has one, by its one sentence where it has only prose.
m context-openai-code-ignored "$mt" 'TestContextRefusalIsItsOwnClass' - \
	"$oac" 'case code == "context_length_exceeded" || typ == "exceed_context_size_error" || status == http.StatusRequestEntityTooLarge:' 'case false:'
m context-anthropic-prompt-too-long-ignored "$mt" 'TestContextRefusalIsItsOwnClass' - \
	"$amc" 'if tooLong(apiErr) {' 'if false {'
m context-gemini-token-limit-ignored "$mt" 'TestContextRefusalIsItsOwnClass' - \
	"$gmc" 'if tooLong(e) || e.Code == http.StatusRequestEntityTooLarge {' 'if false {'
m context-ollama-input-too-long-ignored "$mt" 'TestContextRefusalIsItsOwnClass' - \
	"$olc" 'if tooLong(statusErr) {' 'if false {'
m context-413-not-context "$mt" 'TestContextRefusalIsItsOwnClass' - \
	"$fl" 'case status == http.StatusRequestEntityTooLarge:' 'case false:'

# Item 12: the signature is read from the call's part, sent back on it,
# recorded in the ledger and rebuilt into every later transcript; the
# Gemini replay refuses a signed call without it.
m signature-not-read "$mt" 'TestGeminiSignatureTravelsBackWithItsCall' - \
	"$gmc" 'if len(p.ThoughtSignature) > 0 {' 'if false {'
m signature-not-sent-back "$mt" 'TestGeminiSignatureTravelsBackWithItsCall' - \
	"$gmp" 'part.ThoughtSignature = sig' '_ = sig'
m signature-unsigned-call-accepted "$mt" 'TestGeminiSignatureTravelsBackWithItsCall' - \
	"$mtg" 'if msg := s.unsigned(gr); msg != "" {' 'if msg := ""; msg != "" {'
m signature-not-recorded "$st" 'TestGeminiSignatureRoundTripsThroughTheLedger' - \
	"$call" 'ModelMs: head.modelMs, Signature: mc.Signature}' 'ModelMs: head.modelMs}'
m signature-not-in-transcript "$st" 'TestGeminiSignatureRoundTripsThroughTheLedger' - \
	services/orchestrator/transcript.go 'neutraliseArguments(c.Arguments), Signature: c.Signature})' 'neutraliseArguments(c.Arguments)})'

# Item 8, vendor side: Gemini's MALFORMED_FUNCTION_CALL is named, not prose.
m malformed-call-not-named "$mt" 'TestCutAndMalformedTurnsAreNamed' - \
	"$gmc" 'r.FinishReason = contracts.FinishMalformedCall' 'r.FinishReason = "stop"'
