package natsx

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/micro"
)

// A request made with Request ends in one of three outcomes, each told by
// the error it returns:
//
//   - not delivered (errors.Is(err, ErrNotDelivered)): no responder listens
//     on the subject, so nothing acted on the request; sending it again is
//     safe (SafeToRetry).
//   - unanswered (errors.Is(err, ErrUnanswered)): the request was sent and
//     no reply came before the wait ran out, the context ended or the
//     connection failed; the responder may have acted on it, and may still
//     be acting.
//   - replied (nil, or a *ServiceError or *ReplyError): a responder answered,
//     so it acted on the request.
var (
	// ErrNotDelivered matches a *RequestError whose request reached no
	// responder.
	ErrNotDelivered = errors.New("natsx: request not delivered: no responder")
	// ErrUnanswered matches a *RequestError whose request was sent and got
	// no reply.
	ErrUnanswered = errors.New("natsx: request unanswered")
)

// RequestError is a request that got no reply: Delivered false says it
// certainly reached no responder (it matches ErrNotDelivered), true that it
// may have (ErrUnanswered). Err is the cause nats.go or the context gave
// (nats.ErrNoResponders, context.DeadlineExceeded, context.Canceled,
// nats.ErrConnectionClosed, …).
type RequestError struct {
	Subject   string
	Delivered bool
	Err       error
}

func (e *RequestError) Error() string {
	if !e.Delivered {
		return fmt.Sprintf("natsx: request to %s reached no responder: %v", e.Subject, e.Err)
	}
	return fmt.Sprintf("natsx: request to %s got no reply: %v", e.Subject, e.Err)
}

// Is matches ErrNotDelivered or ErrUnanswered, whichever outcome e is.
func (e *RequestError) Is(target error) bool {
	return target == ErrNotDelivered && !e.Delivered || target == ErrUnanswered && e.Delivered
}

func (e *RequestError) Unwrap() error { return e.Err }

// ServiceError is a reply that carries a NATS micro service error (the
// Nats-Service-Error-Code and Nats-Service-Error headers, which
// micro.Request.Error sets) instead of a result. The responder ran.
type ServiceError struct {
	Subject     string
	Code        string
	Description string
}

func (e *ServiceError) Error() string {
	return fmt.Sprintf("natsx: %s answered error %s: %s", e.Subject, e.Code, e.Description)
}

// ReplyError is a reply whose body does not decode into the reply value
// asked for. The responder ran.
type ReplyError struct {
	Subject string
	Err     error
}

func (e *ReplyError) Error() string {
	return fmt.Sprintf("natsx: undecodable reply from %s: %v", e.Subject, e.Err)
}

func (e *ReplyError) Unwrap() error { return e.Err }

// requestHeader is the headers every request carries; none yet (an empty
// header puts nothing on the wire). What a request should carry from its
// context, such as a trace, is added here and nowhere else.
func requestHeader(context.Context) nats.Header { return nats.Header{} }

// SafeToRetry reports whether err says a request certainly reached no
// responder, so that sending it again cannot make anything happen twice.
func SafeToRetry(err error) bool { return errors.Is(err, ErrNotDelivered) }

// RequestOption sets an optional part of one Request.
type RequestOption func(*requestOptions)

type requestOptions struct {
	timeout time.Duration
}

// WithTimeout bounds the wait for the reply (on top of ctx's own deadline);
// a reply that does not come within d makes the request unanswered.
func WithTimeout(d time.Duration) RequestOption {
	return func(o *requestOptions) { o.timeout = d }
}

// Request sends one core NATS request to subject and waits for its reply.
// The body is req encoded as JSON (nil sends an empty body); the reply is
// decoded as JSON into reply, a pointer (nil leaves it unread). The error
// says which outcome it had (see ErrNotDelivered); an error encoding req is
// none of them, since nothing was sent.
//
// Request is the one place Sonde's requests get their headers.
func Request(ctx context.Context, nc *nats.Conn, subject string, req, reply any, opts ...RequestOption) error {
	var o requestOptions
	for _, opt := range opts {
		opt(&o)
	}
	msg := &nats.Msg{Subject: subject, Header: requestHeader(ctx)}
	if req != nil {
		b, err := json.Marshal(req)
		if err != nil {
			return fmt.Errorf("natsx: encode request to %s: %w", subject, err)
		}
		msg.Data = b
	}
	if o.timeout > 0 {
		var cancel context.CancelFunc
		ctx, cancel = context.WithTimeout(ctx, o.timeout)
		defer cancel()
	}
	resp, err := nc.RequestMsgWithContext(ctx, msg)
	if err != nil {
		// Only the server's no-responders status proves that nobody got
		// the request; any other failure may have come after delivery.
		return &RequestError{Subject: subject, Delivered: !errors.Is(err, nats.ErrNoResponders), Err: err}
	}
	if code := resp.Header.Get(micro.ErrorCodeHeader); code != "" {
		return &ServiceError{Subject: subject, Code: code, Description: resp.Header.Get(micro.ErrorHeader)}
	}
	if reply == nil {
		return nil
	}
	if err := json.Unmarshal(resp.Data, reply); err != nil {
		return &ReplyError{Subject: subject, Err: err}
	}
	return nil
}
