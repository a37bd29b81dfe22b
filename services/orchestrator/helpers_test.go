package orchestrator

import (
	"errors"
	"io"
	"log/slog"
)

func discard() *slog.Logger { return slog.New(slog.NewTextHandler(io.Discard, nil)) }

// driveHere drives runID in this goroutine under the reservation every
// drive of a process holds, as a launched drive does.
func (s *Service) driveHere(runID string) error {
	ctx, ok := s.take(runID)
	if !ok {
		return errors.New("test: the run is already being driven here")
	}
	defer s.untake(runID)
	return s.drive(ctx, runID, nil)
}
