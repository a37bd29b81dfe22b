// Package pgtest tells tests where the throwaway PostgreSQL server of
// `make test` is, and keeps the PostgreSQL tests from passing by skipping
// where a server was asked for.
//
// A server is asked for in CI (CI=true) and wherever SONDE_TEST_PG_REQUIRED
// is set, which `make test` does: there a missing SONDE_TEST_PG_URL fails the
// test instead of skipping it.
package pgtest

import (
	"os"
	"testing"
)

// Required reports whether the PostgreSQL tests must run here.
func Required() bool {
	return os.Getenv("CI") == "true" || os.Getenv("SONDE_TEST_PG_REQUIRED") != ""
}

// URL returns SONDE_TEST_PG_URL, skipping the test when it is not set and no
// server was asked for, and failing it when one was.
func URL(t testing.TB) string {
	t.Helper()
	u := Lookup(t)
	if u == "" {
		t.Skip("SONDE_TEST_PG_URL is not set: run `make test`, or start a server with `eval \"$(scripts/postgres.sh start)\"`")
	}
	return u
}

// Lookup returns SONDE_TEST_PG_URL, or "" when it is not set and no server
// was asked for; it fails the test when one was. It serves tests whose
// PostgreSQL case is one among others.
func Lookup(t testing.TB) string {
	t.Helper()
	u := os.Getenv("SONDE_TEST_PG_URL")
	if u == "" && Required() {
		t.Fatal("SONDE_TEST_PG_URL is not set, but the PostgreSQL tests were asked for (CI=true or SONDE_TEST_PG_REQUIRED); " +
			"`make test` starts PostgreSQL with scripts/postgres.sh — see why it could not")
	}
	return u
}
