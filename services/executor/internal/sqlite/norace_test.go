//go:build !race

package sqlite

// raceEnabled reports a test binary built with the race detector, which
// slows SQLite's transpiled code about twentyfold.
const raceEnabled = false
