// Package refuse gives the executor short names for the refusal codes of
// contracts and a constructor for contracts.Refusal.
package refuse

import "github.com/sondehq/sonde/contracts"

// Statement refusal codes, shared by every engine.
const (
	Empty           = contracts.RefuseEmpty
	Unparsable      = contracts.RefuseUnparsable
	NotOneStatement = contracts.RefuseNotOneStatement
	NotASelect      = contracts.RefuseNotASelect
	NotReadOnly     = contracts.RefuseNotReadOnly
	Unsupported     = contracts.RefuseUnsupported
)

// Profile and request refusal codes.
const (
	ResultTooLarge    = contracts.RefuseResultTooLarge
	UnknownConnection = contracts.RefuseUnknownConnection
	BadRequest        = contracts.RefuseBadRequest
)

// New returns a refusal.
func New(code contracts.Code, reason, fix string) *contracts.Refusal {
	return &contracts.Refusal{Code: code, Message: reason, Fix: fix}
}
