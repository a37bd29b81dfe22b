// Package contracts holds every name and message that crosses a process
// boundary in Sonde: NATS subjects, JetStream stream and bucket names, the
// run commands, the model-turn and executor request/reply types, and the
// ledger event kinds with their payloads.
//
// Nothing outside this package spells a subject by hand. Each type here has a
// JSON Schema under schema/, generated from the Go type and checked by a test
// so the two cannot drift (see schema.go and `go test -update`).
//
// Wire compatibility: fields are only ever added. A reader must accept a
// payload with fields it does not know, and a missing optional field means
// what its comment says.
package contracts

// Version is the contract version carried by every ledger entry. It moves
// only when a change cannot be read by an older reader.
const Version = 1
