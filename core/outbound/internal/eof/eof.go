// Package eof says when the end of a stream is a fault. A reader of a
// wire protocol's message may meet io.EOF before the message starts,
// where it is the stream's clean end, or inside it, where the peer cut the
// message short; its callers should see io.ErrUnexpectedEOF then, as
// io.ReadFull reports a partial read.
package eof

import "io"

// Unexpected returns io.ErrUnexpectedEOF for io.EOF, and any other err as
// it is: for the reads inside a message.
func Unexpected(err error) error {
	if err == io.EOF {
		return io.ErrUnexpectedEOF
	}
	return err
}
