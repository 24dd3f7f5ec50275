package eof

import (
	"errors"
	"io"
	"testing"
)

func TestUnexpected(t *testing.T) {
	other := errors.New("reset")
	for _, tt := range []struct {
		in, want error
	}{
		{nil, nil},
		{io.EOF, io.ErrUnexpectedEOF},
		{io.ErrUnexpectedEOF, io.ErrUnexpectedEOF},
		{other, other},
	} {
		if got := Unexpected(tt.in); got != tt.want {
			t.Errorf("Unexpected(%v) = %v, want %v", tt.in, got, tt.want)
		}
	}
}
