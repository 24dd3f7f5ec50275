package tun

import (
	"testing"
	"unsafe"
)

// TestWFPLayout checks the WFP structures against the sizes and offsets of
// the Windows SDK's headers for 64-bit (amd64, arm64) and 32-bit (386)
// Windows. It runs on any system: the layout depends on the pointer size
// and alignment rules, which Go applies the same way on each OS; run it
// with GOARCH=386 too for the 32-bit numbers.
func TestWFPLayout(t *testing.T) {
	is64 := unsafe.Sizeof(uintptr(0)) == 8
	pick := func(n64, n32 uintptr) uintptr {
		if is64 {
			return n64
		}
		return n32
	}
	var f fwpmFilter0
	var s fwpmSession0
	var sl fwpmSublayer0
	var c fwpmFilterCondition0
	var v fwpValue0
	var b fwpByteBlob
	var a6 fwpV6AddrAndMask
	tests := []struct {
		name      string
		got, want uintptr
	}{
		{"sizeof GUID", unsafe.Sizeof(wfpGUID{}), 16},
		{"sizeof FWP_BYTE_BLOB", unsafe.Sizeof(b), pick(16, 8)},
		{"FWP_BYTE_BLOB.data", unsafe.Offsetof(b.data), pick(8, 4)},
		{"sizeof FWP_VALUE0", unsafe.Sizeof(v), pick(16, 8)},
		{"FWP_VALUE0.value", unsafe.Offsetof(v.value), pick(8, 4)},
		{"sizeof FWPM_DISPLAY_DATA0", unsafe.Sizeof(fwpmDisplayData0{}), pick(16, 8)},
		{"sizeof FWPM_ACTION0", unsafe.Sizeof(fwpmAction0{}), 20},
		{"sizeof FWP_V4_ADDR_AND_MASK", unsafe.Sizeof(fwpV4AddrAndMask{}), 8},
		{"sizeof FWP_V6_ADDR_AND_MASK", unsafe.Sizeof(a6), 17},
		{"FWP_V6_ADDR_AND_MASK.prefixLength", unsafe.Offsetof(a6.prefixLength), 16},

		{"sizeof FWPM_SESSION0", unsafe.Sizeof(s), pick(72, 48)},
		{"FWPM_SESSION0.displayData", unsafe.Offsetof(s.displayData), 16},
		{"FWPM_SESSION0.flags", unsafe.Offsetof(s.flags), pick(32, 24)},
		{"FWPM_SESSION0.txnWaitTimeoutInMSec", unsafe.Offsetof(s.txnWaitTimeoutInMSec), pick(36, 28)},
		{"FWPM_SESSION0.processId", unsafe.Offsetof(s.processID), pick(40, 32)},
		{"FWPM_SESSION0.sid", unsafe.Offsetof(s.sid), pick(48, 36)},
		{"FWPM_SESSION0.username", unsafe.Offsetof(s.username), pick(56, 40)},
		{"FWPM_SESSION0.kernelMode", unsafe.Offsetof(s.kernelMode), pick(64, 44)},

		{"sizeof FWPM_SUBLAYER0", unsafe.Sizeof(sl), pick(72, 44)},
		{"FWPM_SUBLAYER0.displayData", unsafe.Offsetof(sl.displayData), 16},
		{"FWPM_SUBLAYER0.flags", unsafe.Offsetof(sl.flags), pick(32, 24)},
		{"FWPM_SUBLAYER0.providerKey", unsafe.Offsetof(sl.providerKey), pick(40, 28)},
		{"FWPM_SUBLAYER0.providerData", unsafe.Offsetof(sl.providerData), pick(48, 32)},
		{"FWPM_SUBLAYER0.weight", unsafe.Offsetof(sl.weight), pick(64, 40)},

		{"sizeof FWPM_FILTER_CONDITION0", unsafe.Sizeof(c), pick(40, 28)},
		{"FWPM_FILTER_CONDITION0.matchType", unsafe.Offsetof(c.matchType), 16},
		{"FWPM_FILTER_CONDITION0.conditionValue", unsafe.Offsetof(c.conditionValue), pick(24, 20)},

		{"sizeof FWPM_FILTER0", unsafe.Sizeof(f), pick(200, 152)},
		{"FWPM_FILTER0.displayData", unsafe.Offsetof(f.displayData), 16},
		{"FWPM_FILTER0.flags", unsafe.Offsetof(f.flags), pick(32, 24)},
		{"FWPM_FILTER0.providerKey", unsafe.Offsetof(f.providerKey), pick(40, 28)},
		{"FWPM_FILTER0.providerData", unsafe.Offsetof(f.providerData), pick(48, 32)},
		{"FWPM_FILTER0.layerKey", unsafe.Offsetof(f.layerKey), pick(64, 40)},
		{"FWPM_FILTER0.subLayerKey", unsafe.Offsetof(f.subLayerKey), pick(80, 56)},
		{"FWPM_FILTER0.weight", unsafe.Offsetof(f.weight), pick(96, 72)},
		{"FWPM_FILTER0.numFilterConditions", unsafe.Offsetof(f.numFilterConditions), pick(112, 80)},
		{"FWPM_FILTER0.filterCondition", unsafe.Offsetof(f.filterCondition), pick(120, 84)},
		{"FWPM_FILTER0.action", unsafe.Offsetof(f.action), pick(128, 88)},
		{"FWPM_FILTER0.providerContextKey", unsafe.Offsetof(f.providerContextKey), pick(152, 112)},
		{"FWPM_FILTER0.reserved", unsafe.Offsetof(f.reserved), pick(168, 128)},
		{"FWPM_FILTER0.filterId", unsafe.Offsetof(f.filterID), pick(176, 136)},
		{"FWPM_FILTER0.effectiveWeight", unsafe.Offsetof(f.effectiveWeight), pick(184, 144)},
	}
	for _, tt := range tests {
		if tt.got != tt.want {
			t.Errorf("%s = %d, want %d", tt.name, tt.got, tt.want)
		}
	}
}
