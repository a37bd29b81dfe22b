//go:build !race

package executor

// raceEnabled reports a test binary built with the race detector, under
// which SQLite's transpiled C runs about twenty times slower.
const raceEnabled = false
