// Package e2e holds Sonde's end-to-end tests: whole runs over HTTP through
// every service on a real NATS server, a real SQLite database and the real
// model SDK against a replay of the provider's wire format.
package e2e
