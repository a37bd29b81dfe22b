package gateway

import (
	"errors"
	"fmt"
	"net/http"
	"runtime/debug"
	"time"

	"github.com/labstack/echo/v4"
	"github.com/sondehq/sonde/contracts"
	"github.com/sondehq/sonde/services/gateway/api"
)

// handleError writes every error as {"error":{"code","message","fix"}}. An
// error that is not an *httpError is logged and answered 500 internal with no
// detail: no stack and no internal message reaches a caller.
func (g *Gateway) handleError(err error, c echo.Context) {
	if c.Response().Committed {
		// A stream already sent its header; all we can do is log.
		g.log.Warn("error after response started", "path", c.Request().URL.Path, "err", err)
		return
	}
	var refusal *capabilityRefusal
	if errors.As(err, &refusal) {
		if err := c.JSON(http.StatusUnprocessableEntity, refusal.body); err != nil {
			g.log.Warn("write error answer", "err", err)
		}
		return
	}
	he := asHTTPError(err)
	if he.status >= http.StatusInternalServerError && he.body.Code == contracts.CodeInternal {
		g.log.Error("request failed", "method", c.Request().Method, "path", c.Request().URL.Path, "err", err)
	}
	if c.Request().Method == http.MethodHead {
		err = c.NoContent(he.status)
	} else {
		err = c.JSON(he.status, api.ErrorBody{Error: he.body})
	}
	if err != nil {
		g.log.Warn("write error answer", "err", err)
	}
}

// asHTTPError maps any handler error onto the API's error shape.
func asHTTPError(err error) *httpError {
	var he *httpError
	if errors.As(err, &he) {
		return he
	}
	var ee *echo.HTTPError
	if errors.As(err, &ee) {
		switch ee.Code {
		case http.StatusNotFound:
			return &httpError{status: ee.Code, body: contracts.Error{
				Code: api.CodeNotFound, Message: "no such route", Fix: "see docs/api.md or GET /openapi.json for the routes"}}
		case http.StatusMethodNotAllowed:
			return &httpError{status: ee.Code, body: contracts.Error{
				Code: api.CodeMethodNotAllowed, Message: "this route does not accept that method", Fix: "see docs/api.md or GET /openapi.json for the routes"}}
		case http.StatusRequestEntityTooLarge:
			return &httpError{status: ee.Code, body: contracts.Error{
				Code: contracts.CodeBadRequest, Message: "the request body is too large", Fix: "send a body of at most 1 MiB"}}
		}
		if ee.Code >= 400 && ee.Code < 500 {
			return &httpError{status: ee.Code, body: contracts.Error{
				Code: contracts.CodeBadRequest, Message: http.StatusText(ee.Code), Fix: "see docs/api.md or GET /openapi.json for what the route takes"}}
		}
	}
	return &httpError{status: http.StatusInternalServerError, body: contracts.Error{
		Code: contracts.CodeInternal, Message: "the gateway failed to answer this request",
		Fix: "retry; if it persists, the gateway's log names the cause"}}
}

// recoverPanics turns a panic in a handler into 500 internal; the panic and
// its stack go to the log only.
func (g *Gateway) recoverPanics(next echo.HandlerFunc) echo.HandlerFunc {
	return func(c echo.Context) (err error) {
		defer func() {
			r := recover()
			if r == nil {
				return
			}
			if r == http.ErrAbortHandler {
				panic(r)
			}
			g.log.Error("handler panicked", "method", c.Request().Method, "path", c.Request().URL.Path,
				"panic", fmt.Sprint(r), "stack", string(debug.Stack()))
			err = fmt.Errorf("gateway: handler panicked: %v", r)
		}()
		return next(c)
	}
}

// logRequests logs one line per request, after the error handler has
// written its answer.
func (g *Gateway) logRequests(next echo.HandlerFunc) echo.HandlerFunc {
	return func(c echo.Context) error {
		start := time.Now()
		err := next(c)
		if err != nil {
			c.Error(err)
		}
		g.log.Info("http request", "method", c.Request().Method, "route", c.Path(),
			"path", c.Request().URL.Path, "status", c.Response().Status,
			"duration_ms", time.Since(start).Milliseconds())
		return nil
	}
}
