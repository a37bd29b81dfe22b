package orchestrator

// What the model is shown of one result is a share of its context window,
// so that a run that reads as often as its budget allows still fits.
//
// The arithmetic, for a window of W tokens:
//   - bytes per token: showBytesPerToken (3). Tables of figures, names and
//     " | " separators tokenize worse than prose (about 4 bytes a token), so
//     3 overestimates the tokens a text costs: what fits at 3 fits.
//   - the window in bytes is 3·W. Half of it is for the run's results,
//     shown over showReads (30) reads, an investigation's statement budget:
//     each result is shown at most 3·W / 2 / 30 = W/20 bytes.
//   - the other half holds the rules and tool specs (about 6.5 KB), the
//     schema snapshot (at most about 8 KB at the default packing), each
//     call's arguments and status line (a few hundred bytes a read) and the
//     model's own answer.
//
// So a 128k-token window shows 6,553 bytes of a result; 32k tokens (what
// Sonde asks of an Ollama model) would show 1,638, below the floor of
// showFloor (2 KiB): a window under 40,960 tokens gets the floor, and 30
// floor-sized results take 61,440 bytes, about 20,480 tokens — within a 32k
// window with 12k tokens to spare, but more than a window under about 24k
// tokens holds (such a model meets its context refusal instead, which says
// so). The ceiling is the run's MaxBytes: a result is never larger.
const (
	showBytesPerToken = 3
	showReads         = 30
	showFloor         = 2 << 10
	// defaultContextTokens is the window assumed when neither the model's
	// known window nor a configured num_ctx says one: the window Sonde asks
	// of a local model, and smaller than any hosted model's.
	defaultContextTokens = 32768
)

// contextTokens is the model's context window as this drive knows it: its
// known window, else the num_ctx it is run with, else the default.
func (d *drive) contextTokens() int {
	switch {
	case d.settings.ContextTokens > 0:
		return d.settings.ContextTokens
	case d.settings.NumCtx > 0:
		return d.settings.NumCtx
	}
	return defaultContextTokens
}

// showBytes is how much of one result's text the model is shown: a share
// of the model's context window (see above), between showFloor and the
// run's MaxBytes.
func (d *drive) showBytes() int {
	return showShare(d.contextTokens(), d.header.Budget.MaxBytes)
}

// showShare is the bytes of one result shown to a model with a window of
// tokens, at most maxBytes (when set).
func showShare(tokens, maxBytes int) int {
	n := max(tokens*showBytesPerToken/2/showReads, showFloor)
	if maxBytes > 0 {
		n = min(n, maxBytes)
	}
	return n
}
