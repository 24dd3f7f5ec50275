package tun

import (
	"net/netip"
	"unsafe"
)

// The Windows Filtering Platform structures strict_windows.go passes to
// fwpuclnt.dll, laid out as fwpmtypes.h and fwptypes.h declare them. They
// are built on every system, not only Windows, so that their sizes and
// offsets are checked by the tests wherever the tests run (wfp_types_test.go
// holds the SDK's numbers for 64- and 32-bit Windows): a wrong layout would
// not fail on Windows, it would hand the engine garbage.
//
// Where C aligns a field more strictly than Go would (a union holding a
// UINT64 after a 4-byte-aligned member; a UINT64 on 32-bit x86), an
// explicit padding field puts the next field where C has it.

// wfpGUID is a GUID; convertible to and from windows.GUID.
type wfpGUID struct {
	Data1 uint32
	Data2 uint16
	Data3 uint16
	Data4 [8]byte
}

// fwpByteBlob is FWP_BYTE_BLOB.
type fwpByteBlob struct {
	size uint32
	data *byte
}

// fwpValue0 is FWP_VALUE0 and FWP_CONDITION_VALUE0: a type tag and a union
// that is either a value of up to 32 bits or a pointer.
type fwpValue0 struct {
	typ   uint32 // FWP_DATA_TYPE
	value uintptr
}

// fwpmDisplayData0 is FWPM_DISPLAY_DATA0.
type fwpmDisplayData0 struct {
	name        *uint16
	description *uint16
}

// fwpmSession0 is FWPM_SESSION0.
type fwpmSession0 struct {
	sessionKey           wfpGUID
	displayData          fwpmDisplayData0
	flags                uint32
	txnWaitTimeoutInMSec uint32
	processID            uint32
	sid                  uintptr // SID*
	username             *uint16
	kernelMode           int32 // BOOL
}

// fwpmSublayer0 is FWPM_SUBLAYER0.
type fwpmSublayer0 struct {
	subLayerKey  wfpGUID
	displayData  fwpmDisplayData0
	flags        uint32
	providerKey  *wfpGUID
	providerData fwpByteBlob
	weight       uint16
}

// fwpmFilterCondition0 is FWPM_FILTER_CONDITION0.
type fwpmFilterCondition0 struct {
	fieldKey       wfpGUID
	matchType      uint32 // FWP_MATCH_TYPE
	conditionValue fwpValue0
}

// fwpmAction0 is FWPM_ACTION0: the action type and a union of GUIDs
// (filter type, callout key) that strict route leaves zero.
type fwpmAction0 struct {
	typ        uint32 // FWP_ACTION_TYPE
	filterType wfpGUID
}

// fwpmFilter0 is FWPM_FILTER0.
type fwpmFilter0 struct {
	filterKey           wfpGUID
	displayData         fwpmDisplayData0
	flags               uint32
	providerKey         *wfpGUID
	providerData        fwpByteBlob
	layerKey            wfpGUID
	subLayerKey         wfpGUID
	weight              fwpValue0
	numFilterConditions uint32
	filterCondition     *fwpmFilterCondition0
	action              fwpmAction0
	_                   [4]byte // the union below holds a UINT64: 8-byte aligned in C
	providerContextKey  wfpGUID // union with UINT64 rawContext
	reserved            *wfpGUID
	_                   [8 - unsafe.Sizeof(uintptr(0))]byte // filterId is 8-byte aligned in C, also on 32-bit x86
	filterID            uint64
	effectiveWeight     fwpValue0
}

// fwpV4AddrAndMask is FWP_V4_ADDR_AND_MASK (address and mask in host byte
// order).
type fwpV4AddrAndMask struct {
	addr uint32
	mask uint32
}

// fwpV6AddrAndMask is FWP_V6_ADDR_AND_MASK.
type fwpV6AddrAndMask struct {
	addr         [16]byte
	prefixLength uint8
}

// newFwpV4AddrAndMask returns the IPv4 prefix p for a remote address
// condition.
func newFwpV4AddrAndMask(p netip.Prefix) fwpV4AddrAndMask {
	p = p.Masked()
	a := p.Addr().As4()
	m := fwpV4AddrAndMask{addr: uint32(a[0])<<24 | uint32(a[1])<<16 | uint32(a[2])<<8 | uint32(a[3])}
	if p.Bits() > 0 {
		m.mask = ^uint32(0) << (32 - p.Bits())
	}
	return m
}

// newFwpV6AddrAndMask returns the IPv6 prefix p for a remote address
// condition.
func newFwpV6AddrAndMask(p netip.Prefix) fwpV6AddrAndMask {
	p = p.Masked()
	return fwpV6AddrAndMask{addr: p.Addr().As16(), prefixLength: uint8(p.Bits())}
}

// Constants of fwptypes.h and fwpmtypes.h that strict route uses.
const (
	fwpmSessionFlagDynamic = 0x00000001 // FWPM_SESSION_FLAG_DYNAMIC

	fwpmSublayerFlagPersistent = 0x00000001 // FWPM_SUBLAYER_FLAG_PERSISTENT
	fwpmFilterFlagPersistent   = 0x00000001 // FWPM_FILTER_FLAG_PERSISTENT

	fwpActionBlock  = 0x00001001 // FWP_ACTION_BLOCK
	fwpActionPermit = 0x00001002 // FWP_ACTION_PERMIT

	fwpMatchEqual       = 0 // FWP_MATCH_EQUAL
	fwpMatchFlagsAllSet = 6 // FWP_MATCH_FLAGS_ALL_SET

	fwpUint8        = 1   // FWP_UINT8
	fwpUint16       = 2   // FWP_UINT16
	fwpUint32       = 3   // FWP_UINT32
	fwpUint64       = 4   // FWP_UINT64
	fwpByteBlobType = 12  // FWP_BYTE_BLOB_TYPE
	fwpV4AddrMask   = 256 // FWP_V4_ADDR_MASK
	fwpV6AddrMask   = 257 // FWP_V6_ADDR_MASK

	fwpConditionFlagIsLoopback = 0x00000001 // FWP_CONDITION_FLAG_IS_LOOPBACK

	rpcCAuthnWinNT = 10 // RPC_C_AUTHN_WINNT
)

// Layer and condition keys of fwpmu.h.
var (
	fwpmLayerALEAuthConnectV4 = wfpGUID{0xc38d57d1, 0x05a7, 0x4c33, [8]byte{0x90, 0x4f, 0x7f, 0xbc, 0xee, 0xe6, 0x0e, 0x82}}
	fwpmLayerALEAuthConnectV6 = wfpGUID{0x4a72393b, 0x319f, 0x44bc, [8]byte{0x84, 0xc3, 0xba, 0x54, 0xdc, 0xb3, 0xb6, 0xb4}}

	fwpmConditionALEAppID         = wfpGUID{0xd78e1e87, 0x8644, 0x4ea5, [8]byte{0x94, 0x37, 0xd8, 0x09, 0xec, 0xef, 0xc9, 0x71}}
	fwpmConditionFlags            = wfpGUID{0x632ce23b, 0x5167, 0x435c, [8]byte{0x86, 0xd7, 0xe9, 0x03, 0x68, 0x4a, 0xa8, 0x0c}}
	fwpmConditionIPLocalInterface = wfpGUID{0x4cd62a49, 0x59c3, 0x4969, [8]byte{0xb7, 0xf3, 0xbd, 0xa5, 0xd3, 0x28, 0x90, 0xa4}}
	fwpmConditionIPProtocol       = wfpGUID{0x3971ef2b, 0x623e, 0x4f9a, [8]byte{0x8c, 0xb1, 0x6e, 0x79, 0xb8, 0x06, 0xb9, 0xa7}}
	fwpmConditionIPRemoteAddress  = wfpGUID{0xb235ae9a, 0x1d64, 0x49b8, [8]byte{0xa4, 0x4c, 0x5f, 0xf3, 0xd9, 0x09, 0x50, 0x45}}
	fwpmConditionIPLocalAddress   = wfpGUID{0xd9ee00de, 0xc1ef, 0x4617, [8]byte{0xbf, 0xe3, 0xff, 0xd8, 0xf5, 0xa0, 0x89, 0x57}}
	fwpmConditionIPRemotePort     = wfpGUID{0xc35a604d, 0xd22b, 0x4e1a, [8]byte{0x91, 0xb4, 0x68, 0xf6, 0x74, 0xee, 0x67, 0x4b}}
)
