// Package refuse holds the refusal codes executors answer with and a
// constructor for contracts.Refusal.
//
// The statement codes are the one vocabulary every engine shares
// (ARCHITECTURE §5). The request codes (unknown_connection, bad_request) and
// the profile code result_too_large are this executor's additions; they
// belong in contracts beside the vocabulary once it is declared there.
package refuse

import "github.com/sondehq/sonde/contracts"

// Statement refusal codes, shared by every engine.
const (
	Empty           = "empty"
	Unparsable      = "unparsable"
	NotOneStatement = "not_one_statement"
	NotASelect      = "not_a_select"
	NotReadOnly     = "not_read_only"
	Unsupported     = "unsupported"
)

// Profile and request refusal codes.
const (
	// ResultTooLarge: the result passed the profile's row or byte bound, under
	// a profile that refuses rather than truncates.
	ResultTooLarge = "result_too_large"
	// UnknownConnection: no connection of this executor's engine has the id.
	UnknownConnection = "unknown_connection"
	// BadRequest: the request cannot be read or names an unknown profile.
	BadRequest = "bad_request"
)

// New returns a refusal.
func New(code, reason, fix string) *contracts.Refusal {
	return &contracts.Refusal{Code: code, Reason: reason, Fix: fix}
}
