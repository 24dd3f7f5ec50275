package block

import (
	"context"
	"errors"
	"strings"
	"testing"

	"github.com/skiffvpn/skiff/core/flow"
)

func TestBlock(t *testing.T) {
	dst := flow.NameAddr("ads.example", 443)
	c, err := New().DialContext(context.Background(), "tcp", dst)
	if c != nil || !errors.Is(err, ErrBlocked) || !strings.Contains(err.Error(), "ads.example:443") {
		t.Errorf("DialContext = %v, %v", c, err)
	}
	pc, err := New().ListenPacket(context.Background(), dst)
	if pc != nil || !errors.Is(err, ErrBlocked) {
		t.Errorf("ListenPacket = %v, %v", pc, err)
	}
}
