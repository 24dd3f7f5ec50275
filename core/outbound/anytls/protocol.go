package anytls

import (
	"crypto/md5"
	"encoding/binary"
	"encoding/hex"
	"errors"
	"fmt"
	"math/rand/v2"
	"strconv"
	"strings"

	"github.com/skiffvpn/skiff/core/flow"
)

// Frame commands (anytls-go docs/protocol.md). A frame is cmd u8 | stream
// id u32 | length u16 | data.
const (
	cmdWaste               = 0 // padding, discarded
	cmdSYN                 = 1 // open a stream
	cmdPSH                 = 2 // stream data
	cmdFIN                 = 3 // close a stream
	cmdSettings            = 4 // client settings, first frame of a session
	cmdAlert               = 5 // server: a message to log, then the session ends
	cmdUpdatePaddingScheme = 6 // server: the padding scheme for later sessions
	// Version 2.
	cmdSYNACK         = 7  // server: the stream's outbound dial succeeded (no data) or failed (data: the error)
	cmdHeartRequest   = 8  // either side: answer with cmdHeartResponse
	cmdHeartResponse  = 9  //
	cmdServerSettings = 10 // server: its settings ("v=2")

	frameHeaderLen = 1 + 4 + 2
	maxFrameData   = 0xffff

	// protocolVersion is the version the client speaks.
	protocolVersion = 2
)

// socksTypes are SOCKS5's address types, a stream's destination's.
var socksTypes = flow.AddrTypes{IPv4: 1, Name: 3, IPv6: 4}

// appendFrameHeader appends a frame header.
func appendFrameHeader(b []byte, cmd byte, id uint32, n int) []byte {
	b = append(b, cmd)
	b = binary.BigEndian.AppendUint32(b, id)
	return binary.BigEndian.AppendUint16(b, uint16(n))
}

// frameHeader is a parsed frame header.
type frameHeader struct {
	cmd byte
	id  uint32
	n   int
}

func parseFrameHeader(b []byte) frameHeader {
	return frameHeader{cmd: b[0], id: binary.BigEndian.Uint32(b[1:]), n: int(binary.BigEndian.Uint16(b[5:]))}
}

// appendAddr appends dst with its port in the given address types.
func appendAddr(b []byte, dst flow.Addr, t flow.AddrTypes) ([]byte, error) {
	b, err := dst.AppendHost(b, t)
	if err != nil {
		return nil, err
	}
	return binary.BigEndian.AppendUint16(b, dst.Port), nil
}

// DefaultPaddingScheme is the protocol's default scheme.
const DefaultPaddingScheme = "stop=8\n0=30-30\n1=100-400\n2=400-500,c,500-1000,c,500-1000,c,500-1000,c,500-1000\n3=9-9,500-1000\n4=500-1000\n5=500-1000\n6=500-1000\n7=500-1000"

// checkMark in a padding plan means: stop here if no data is left.
const checkMark = -1

// paddingScheme says how the first writes of a session are cut and padded:
// for write n below stop, plan[n] lists record sizes (ranges drawn at
// random) and check marks.
type paddingScheme struct {
	raw  string
	md5  string // lower-case hex MD5 of raw, sent in the settings
	stop int
	plan map[int][]sizeRange
}

type sizeRange struct{ lo, hi int } // lo == checkMark: a check mark

var errBadScheme = errors.New("padding scheme")

// maxSchemeStop bounds stop and the packet numbers a scheme may name.
const maxSchemeStop = 1024

// parsePaddingScheme reads a scheme: lines "stop=N" and "n=lo-hi,c,…".
func parsePaddingScheme(raw string) (*paddingScheme, error) {
	sum := md5.Sum([]byte(raw))
	s := &paddingScheme{raw: raw, md5: hex.EncodeToString(sum[:]), plan: make(map[int][]sizeRange)}
	for _, line := range strings.Split(raw, "\n") {
		line = strings.TrimSpace(line)
		if line == "" {
			continue
		}
		k, v, ok := strings.Cut(line, "=")
		if !ok {
			return nil, fmt.Errorf("%w: line %q: no '='", errBadScheme, line)
		}
		n, err := strconv.Atoi(k)
		if k == "stop" {
			n, err = strconv.Atoi(v)
			if err != nil || n < 0 || n > maxSchemeStop {
				return nil, fmt.Errorf("%w: stop %q", errBadScheme, v)
			}
			s.stop = n
			continue
		}
		if err != nil || n < 0 || n >= maxSchemeStop {
			return nil, fmt.Errorf("%w: packet %q", errBadScheme, k)
		}
		var plan []sizeRange
		for _, item := range strings.Split(v, ",") {
			item = strings.TrimSpace(item)
			if item == "c" {
				plan = append(plan, sizeRange{checkMark, checkMark})
				continue
			}
			los, his, ok := strings.Cut(item, "-")
			if !ok {
				his = los
			}
			lo, err1 := strconv.Atoi(los)
			hi, err2 := strconv.Atoi(his)
			if err1 != nil || err2 != nil || lo <= 0 || hi < lo || hi > maxFrameData {
				return nil, fmt.Errorf("%w: packet %d: size %q", errBadScheme, n, item)
			}
			plan = append(plan, sizeRange{lo, hi})
		}
		if len(plan) > 64 {
			return nil, fmt.Errorf("%w: packet %d: over 64 sizes", errBadScheme, n)
		}
		s.plan[n] = plan
	}
	return s, nil
}

// sizes returns write n's record sizes, drawn from its ranges, with
// checkMark entries; nil when the write is not padded.
func (s *paddingScheme) sizes(n int) []int {
	if n >= s.stop {
		return nil
	}
	plan := s.plan[n]
	out := make([]int, 0, len(plan))
	for _, r := range plan {
		if r.lo == checkMark {
			out = append(out, checkMark)
			continue
		}
		out = append(out, r.lo+rand.IntN(r.hi-r.lo+1))
	}
	return out
}

var defaultScheme = func() *paddingScheme {
	s, err := parsePaddingScheme(DefaultPaddingScheme)
	if err != nil {
		panic(err)
	}
	return s
}()
