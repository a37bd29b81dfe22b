package orchestrator

// showBytes is how much of one result's text the model is shown: a share
// of the model's context window. Zero: no bound beyond the result's own.
func (d *drive) showBytes() int { return 0 }
