package api

import (
	"errors"
	"syscall"

	"github.com/skiffvpn/skiff/core"
	"github.com/skiffvpn/skiff/core/outbound"
)

// Code says what kind of error crossed the API. Front ends branch on it
// (and on the sentinels below, with errors.Is), never on the text.
type Code string

// Codes of Error.
const (
	CodeBadRequest         Code = "bad_request"         // the request was malformed or a field invalid
	CodeTooLarge           Code = "too_large"           // the request body is over the limit
	CodeForbidden          Code = "forbidden"           // the caller may not operate Skiff
	CodeUnsupportedVersion Code = "unsupported_version" // the API version in the path is not served
	CodeNotFound           Code = "not_found"           // no such path, node, group, subscription or connection
	CodeConflict           Code = "conflict"            // the profile changed since it was read
	CodeRunning            Code = "already_running"     // connect while connected
	CodeNoServer           Code = "no_server"           // nothing to connect through
	CodeServerAuth         Code = "server_auth"         // a server rejected the credentials
	CodeTUNPermission      Code = "tun_permission"      // the core lacks the rights TUN mode needs
	CodePortInUse          Code = "port_in_use"         // the local proxy's port is taken
	CodeSubscriptionFetch  Code = "subscription_fetch"  // a subscription could not be fetched or read
	CodeUnavailable        Code = "service_unavailable" // the client cannot reach the service
	CodeNotConnected       Code = "not_connected"       // the request needs a running connection
	CodeExitLookup         Code = "exit_lookup"         // no trace service told where traffic leaves from
	CodeInternal           Code = "internal"            // anything else
)

// Error is an error as it crosses the API: a code and words for the user.
// The words never carry a secret (the core's errors do not).
type Error struct {
	Code    Code   `json:"code"`
	Message string `json:"message"`
}

func (e *Error) Error() string {
	if e.Message == "" {
		return string(e.Code)
	}
	return e.Message
}

// Is reports whether target is an *Error of the same code, so that
// errors.Is(err, api.ErrNoServer) works on errors from either backend.
func (e *Error) Is(target error) bool {
	t, ok := target.(*Error)
	return ok && t.Code == e.Code
}

// Sentinels, one per code, for errors.Is.
var (
	ErrBadRequest         = &Error{Code: CodeBadRequest}
	ErrTooLarge           = &Error{Code: CodeTooLarge}
	ErrForbidden          = &Error{Code: CodeForbidden}
	ErrUnsupportedVersion = &Error{Code: CodeUnsupportedVersion}
	ErrNotFound           = &Error{Code: CodeNotFound}
	ErrConflict           = &Error{Code: CodeConflict}
	ErrRunning            = &Error{Code: CodeRunning}
	ErrNoServer           = &Error{Code: CodeNoServer}
	ErrServerAuth         = &Error{Code: CodeServerAuth}
	ErrTUNPermission      = &Error{Code: CodeTUNPermission}
	ErrPortInUse          = &Error{Code: CodePortInUse}
	ErrSubscriptionFetch  = &Error{Code: CodeSubscriptionFetch}
	ErrUnavailable        = &Error{Code: CodeUnavailable}
	ErrNotConnected       = &Error{Code: CodeNotConnected}
	ErrExitLookup         = &Error{Code: CodeExitLookup}
	ErrInternal           = &Error{Code: CodeInternal}
)

// CodeOf classifies err: an *Error keeps its code; the core's sentinels map
// to theirs; anything else is CodeInternal. nil is "".
func CodeOf(err error) Code {
	var e *Error
	switch {
	case err == nil:
		return ""
	case errors.As(err, &e):
		return e.Code
	case errors.Is(err, core.ErrNoServer):
		return CodeNoServer
	case errors.Is(err, core.ErrTUNPermission):
		return CodeTUNPermission
	case errors.Is(err, core.ErrTUNConfig), errors.Is(err, core.ErrTUNDeviceExists):
		return CodeBadRequest
	case errors.Is(err, core.ErrRunning):
		return CodeRunning
	case errors.Is(err, core.ErrNoRuleSet):
		return CodeNotFound
	case errors.Is(err, core.ErrRuleSetNoURL):
		return CodeBadRequest
	case errors.Is(err, outbound.ErrAuthRejected):
		return CodeServerAuth
	case errors.Is(err, syscall.EADDRINUSE):
		return CodePortInUse
	case exitCode(err) != "":
		return exitCode(err)
	}
	return CodeInternal
}

// Wrap returns err as an *Error with its code (CodeOf) and its text; nil
// stays nil.
func Wrap(err error) *Error {
	if err == nil {
		return nil
	}
	var e *Error
	if errors.As(err, &e) {
		return e
	}
	return &Error{Code: CodeOf(err), Message: err.Error()}
}

// errorf returns an *Error of code c.
func errorf(c Code, msg string) *Error { return &Error{Code: c, Message: msg} }
