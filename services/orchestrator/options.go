package orchestrator

import "github.com/sondehq/sonde/contracts"

// Option is a seam New takes beside Config for tests in other packages (the
// end-to-end suite): what a deployment configures is in Config, never here.
type Option func(*Service)

// WithAfterInvoke calls fn after a tool-invoked entry is acknowledged and
// before the executor is asked: a test stops a process inside the window the
// indeterminate rule exists for.
func WithAfterInvoke(fn func(runID string, inv contracts.ToolInvoked)) Option {
	return func(s *Service) { s.afterInvoke = fn }
}
