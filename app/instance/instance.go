// Package instance keeps one copy of a program per user: the first launch
// becomes the primary and listens on a per-user local socket (a Unix socket
// in a 0700 directory, or a named pipe whose DACL admits only the user);
// a later launch hands its arguments to the primary and exits, and the
// primary does with them what it likes (raise its window, start an
// import). Both ends check that the other is the same user; the message
// is bounded data (a list of strings), never a path to open or a command.
package instance

import (
	"context"
	"encoding/binary"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"strings"
	"sync"
	"time"
	"unicode/utf8"
)

// Bounds of a hand-over. A launch carries a few flags and perhaps a deep
// link; a subscription URL with its token is well under 4 KiB, and a
// Windows command line cannot pass 32 KiB.
const (
	MaxMessage = 64 << 10 // bytes of one message, framed
	MaxArgs    = 64
	MaxArg     = 16 << 10 // bytes of one argument
)

// ioTimeout bounds a whole exchange: a client that connects and then says
// nothing is dropped after it.
const ioTimeout = 2 * time.Second

// maxConns is how many hand-overs the primary reads at once; more wait in
// the listen backlog until a slot frees (each slot is held ioTimeout at
// most), so a launch storm or a hostile client costs no memory.
const maxConns = 4

// ErrRunning is returned by Acquire when another instance runs: it has
// been handed the arguments, and this process should exit.
var ErrRunning = errors.New("instance: another instance is running and has the arguments")

// Message is what a later launch hands the primary.
type Message struct {
	Args []string `json:"args"`
}

// Config names an instance.
type Config struct {
	// Name tells the programs apart ("window", "tray"): letters, digits
	// and '-' only.
	Name string
	// Dir is where the socket and its lock live on Unix; "": DefaultDir.
	// Windows ignores it (the pipe's name is per user).
	Dir string
}

func (c Config) check() error {
	if c.Name == "" || len(c.Name) > 32 {
		return fmt.Errorf("instance: bad name %q", c.Name)
	}
	for _, r := range c.Name {
		if !(r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r >= '0' && r <= '9' || r == '-') {
			return fmt.Errorf("instance: bad name %q", c.Name)
		}
	}
	return nil
}

// Primary is the running instance. Read hand-overs from Messages; Close
// stops listening and lets the next launch become the primary.
type Primary struct {
	ln      net.Listener
	release func() // lets go of the name (Unix: removes the socket, unlocks); may be nil
	msgs    chan Message
	ctx     context.Context
	stop    context.CancelFunc
	wg      sync.WaitGroup
	slots   chan struct{}
	once    sync.Once
}

// Acquire makes this process the instance cfg names, or hands args to the
// one that runs and returns ErrRunning.
func Acquire(ctx context.Context, cfg Config, args []string) (*Primary, error) {
	if err := cfg.check(); err != nil {
		return nil, err
	}
	frame, err := encode(Message{Args: args})
	if err != nil {
		return nil, err
	}
	ln, release, err := listen(cfg)
	if errors.Is(err, errTaken) {
		if err := send(ctx, cfg, frame); err != nil {
			return nil, fmt.Errorf("instance: handing over to the running %s: %w", cfg.Name, err)
		}
		return nil, ErrRunning
	}
	if err != nil {
		return nil, fmt.Errorf("instance: %w", err)
	}
	p := &Primary{ln: ln, release: release, msgs: make(chan Message, 8), slots: make(chan struct{}, maxConns)}
	p.ctx, p.stop = context.WithCancel(context.Background())
	p.wg.Add(1)
	go p.serve()
	return p, nil
}

// Messages delivers the hand-overs, in order; it is closed by Close.
func (p *Primary) Messages() <-chan Message { return p.msgs }

// Close stops listening and waits for the connections being read.
func (p *Primary) Close() error {
	var err error
	p.once.Do(func() {
		p.stop()
		err = p.ln.Close()
		p.wg.Wait()
		close(p.msgs)
		if p.release != nil {
			p.release()
		}
	})
	return err
}

func (p *Primary) serve() {
	defer p.wg.Done()
	for {
		c, err := p.ln.Accept()
		if err != nil {
			if p.ctx.Err() != nil {
				return
			}
			var ne net.Error
			if errors.As(err, &ne) && ne.Timeout() {
				continue
			}
			// A listener that fails for good: later launches will start
			// copies of their own, which beats spinning here.
			return
		}
		select {
		case p.slots <- struct{}{}:
		case <-p.ctx.Done():
			c.Close()
			return
		}
		p.wg.Add(1)
		go func() {
			defer p.wg.Done()
			defer func() { <-p.slots }()
			p.handle(c)
		}()
	}
}

// Replies: one byte.
const (
	replyOK      = 'k'
	replyRefused = 'x'
)

// handle reads one message from c, a peer that may be hostile.
func (p *Primary) handle(c net.Conn) {
	defer c.Close()
	c.SetDeadline(time.Now().Add(ioTimeout))
	if err := checkPeer(c); err != nil {
		return
	}
	m, err := readFrame(c)
	if err != nil {
		c.Write([]byte{replyRefused})
		return
	}
	t := time.NewTimer(ioTimeout) // nobody reads Messages: refuse
	defer t.Stop()
	select {
	case p.msgs <- m:
		c.Write([]byte{replyOK})
	case <-t.C:
		c.Write([]byte{replyRefused})
	case <-p.ctx.Done():
	}
}

// send hands frame to the primary, retrying while it starts to listen.
func send(ctx context.Context, cfg Config, frame []byte) error {
	ctx, cancel := context.WithTimeout(ctx, 5*time.Second)
	defer cancel()
	var c net.Conn
	var err error
	for {
		c, err = dial(ctx, cfg)
		if err == nil {
			break
		}
		// The primary holds its name before it listens: give it a moment.
		select {
		case <-ctx.Done():
			return err
		case <-time.After(20 * time.Millisecond):
		}
	}
	defer c.Close()
	if dl, ok := ctx.Deadline(); ok {
		c.SetDeadline(dl)
	}
	if err := checkServer(c); err != nil {
		return err
	}
	if _, err := c.Write(frame); err != nil {
		return err
	}
	var r [1]byte
	if _, err := io.ReadFull(c, r[:]); err != nil {
		return fmt.Errorf("no answer: %w", err)
	}
	if r[0] != replyOK {
		return errors.New("the running instance refused the arguments")
	}
	return nil
}

// encode frames m: a 4-byte big-endian length, then JSON.
func encode(m Message) ([]byte, error) {
	if err := validate(m); err != nil {
		return nil, err
	}
	b, err := json.Marshal(m)
	if err != nil {
		return nil, err
	}
	if 4+len(b) > MaxMessage {
		return nil, fmt.Errorf("instance: the arguments take %d bytes, more than %d", len(b), MaxMessage-4)
	}
	out := binary.BigEndian.AppendUint32(make([]byte, 0, 4+len(b)), uint32(len(b)))
	return append(out, b...), nil
}

// readFrame reads and checks one framed message; it never reads more than
// MaxMessage bytes.
func readFrame(r io.Reader) (Message, error) {
	var hdr [4]byte
	if _, err := io.ReadFull(r, hdr[:]); err != nil {
		return Message{}, err
	}
	n := binary.BigEndian.Uint32(hdr[:])
	if n == 0 || n > MaxMessage-4 {
		return Message{}, fmt.Errorf("instance: a message of %d bytes", n)
	}
	b := make([]byte, n)
	if _, err := io.ReadFull(r, b); err != nil {
		return Message{}, err
	}
	return decode(b)
}

// decode parses and checks a message body.
func decode(b []byte) (Message, error) {
	var m Message
	dec := json.NewDecoder(strings.NewReader(string(b)))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&m); err != nil {
		return Message{}, fmt.Errorf("instance: bad message: %w", err)
	}
	if dec.More() {
		return Message{}, errors.New("instance: bad message: data after it")
	}
	if err := validate(m); err != nil {
		return Message{}, err
	}
	return m, nil
}

// validate bounds m: at most MaxArgs arguments of at most MaxArg bytes of
// UTF-8 text without control characters.
func validate(m Message) error {
	if len(m.Args) > MaxArgs {
		return fmt.Errorf("instance: %d arguments, more than %d", len(m.Args), MaxArgs)
	}
	for i, a := range m.Args {
		if len(a) > MaxArg {
			return fmt.Errorf("instance: argument %d has %d bytes, more than %d", i, len(a), MaxArg)
		}
		if !utf8.ValidString(a) {
			return fmt.Errorf("instance: argument %d is not UTF-8", i)
		}
		for _, r := range a {
			if r < 0x20 || r == 0x7f {
				return fmt.Errorf("instance: argument %d has a control character", i)
			}
		}
	}
	return nil
}
