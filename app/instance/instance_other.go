//go:build !(linux || darwin || windows)

package instance

import (
	"context"
	"errors"
	"net"
)

var errTaken = errors.New("taken")

var errUnsupported = errors.New("one instance per user is not implemented on this OS")

func listen(Config) (net.Listener, func(), error)    { return nil, nil, errUnsupported }
func dial(context.Context, Config) (net.Conn, error) { return nil, errUnsupported }
func checkPeer(net.Conn) error                       { return errUnsupported }
func checkServer(net.Conn) error                     { return errUnsupported }
