package tun

import (
	"errors"
	"fmt"
	"math"
	"net/netip"
	"os"
	"runtime"
	"slices"
	"unsafe"

	"golang.org/x/sys/windows"
)

// The Base Filtering Engine's management API (fwpuclnt.dll). Each function
// returns a Win32 error code rather than setting the last error.
var (
	modfwpuclnt                   = windows.NewLazySystemDLL("fwpuclnt.dll")
	procFwpmEngineOpen0           = modfwpuclnt.NewProc("FwpmEngineOpen0")
	procFwpmEngineClose0          = modfwpuclnt.NewProc("FwpmEngineClose0")
	procFwpmTransactionBegin0     = modfwpuclnt.NewProc("FwpmTransactionBegin0")
	procFwpmTransactionCommit0    = modfwpuclnt.NewProc("FwpmTransactionCommit0")
	procFwpmTransactionAbort0     = modfwpuclnt.NewProc("FwpmTransactionAbort0")
	procFwpmSubLayerAdd0          = modfwpuclnt.NewProc("FwpmSubLayerAdd0")
	procFwpmFilterAdd0            = modfwpuclnt.NewProc("FwpmFilterAdd0")
	procFwpmGetAppIdFromFileName0 = modfwpuclnt.NewProc("FwpmGetAppIdFromFileName0")
	procFwpmFreeMemory0           = modfwpuclnt.NewProc("FwpmFreeMemory0")
)

// fwpmCall calls an Fwpm function and turns its result into an error.
// Pointers converted to uintptr in its arguments stay alive and in place
// until it returns.
//
//go:uintptrescapes
func fwpmCall(p *windows.LazyProc, args ...uintptr) error {
	if err := p.Find(); err != nil {
		return err
	}
	r, _, _ := p.Call(args...)
	if r != 0 {
		return windows.Errno(r)
	}
	return nil
}

// wfpSession is strict route's dynamic WFP session: the sublayer and the
// filters of planWFP live as long as it is open. Because the session is
// opened with FWPM_SESSION_FLAG_DYNAMIC, the Base Filtering Engine deletes
// them when the session's handle closes, and Windows closes it when the
// process ends, however it ends: nothing is recorded in the state file,
// because after a crash there is nothing left to undo.
type wfpSession struct {
	engine windows.Handle
}

// wfpArena keeps the values that filter conditions point to alive, on the
// heap, until the engine has copied them: the conditions hold them as
// uintptr, which the garbage collector neither follows nor updates.
type wfpArena struct{ keep []any }

// pin copies v to the heap, keeps it in a and returns its address.
func pin[T any](a *wfpArena, v T) uintptr {
	p := new(T)
	*p = v
	a.keep = append(a.keep, p)
	return uintptr(unsafe.Pointer(p))
}

// openStrictWFP opens a dynamic session and adds, in one transaction, a
// sublayer of the highest weight with rules in it. tunnelLUID is the
// tunnel's interface, for the rules with Tunnel set; Skiff's executable is
// the application of the rules with App set.
func openStrictWFP(rules []wfpRule, tunnelLUID uint64) (*wfpSession, error) {
	name, err := windows.UTF16PtrFromString("Skiff strict route")
	if err != nil {
		return nil, err
	}
	session := fwpmSession0{
		displayData: fwpmDisplayData0{name: name},
		flags:       fwpmSessionFlagDynamic,
	}
	var engine windows.Handle
	if err := fwpmCall(procFwpmEngineOpen0, 0, rpcCAuthnWinNT, 0, uintptr(unsafe.Pointer(&session)), uintptr(unsafe.Pointer(&engine))); err != nil {
		if errors.Is(err, windows.ERROR_ACCESS_DENIED) {
			return nil, fmt.Errorf("tun: strict route: open the filtering engine: %w", ErrPermission)
		}
		return nil, fmt.Errorf("tun: strict route: open the filtering engine: %w", err)
	}
	s := &wfpSession{engine: engine}
	if err := s.add(rules, tunnelLUID, name); err != nil {
		s.Close()
		return nil, err
	}
	return s, nil
}

// add adds the sublayer and the filters in one transaction: either all of
// them are in place or none.
func (s *wfpSession) add(rules []wfpRule, tunnelLUID uint64, name *uint16) (err error) {
	if err := fwpmCall(procFwpmTransactionBegin0, uintptr(s.engine), 0); err != nil {
		return fmt.Errorf("tun: strict route: begin a transaction: %w", err)
	}
	defer func() {
		if err != nil {
			fwpmCall(procFwpmTransactionAbort0, uintptr(s.engine))
		}
	}()

	key, err := windows.GenerateGUID()
	if err != nil {
		return fmt.Errorf("tun: strict route: sublayer key: %w", err)
	}
	sublayer := fwpmSublayer0{
		subLayerKey: wfpGUID(key),
		displayData: fwpmDisplayData0{name: name},
		weight:      math.MaxUint16,
	}
	if err := fwpmCall(procFwpmSubLayerAdd0, uintptr(s.engine), uintptr(unsafe.Pointer(&sublayer)), 0); err != nil {
		return fmt.Errorf("tun: strict route: add the sublayer: %w", err)
	}

	var appID *fwpByteBlob
	if slices.ContainsFunc(rules, func(r wfpRule) bool { return r.App }) {
		id, free, err := wfpAppID()
		if err != nil {
			return fmt.Errorf("tun: strict route: %w", err)
		}
		defer free()
		appID = id
	}
	if err := addWFPFilters(s.engine, &sublayer, name, rules, tunnelLUID, appID, nil); err != nil {
		return fmt.Errorf("tun: strict route: %w", err)
	}

	if err := fwpmCall(procFwpmTransactionCommit0, uintptr(s.engine)); err != nil {
		return fmt.Errorf("tun: strict route: commit the filters: %w", err)
	}
	return nil
}

// wfpAppID returns the WFP application ID of Skiff's executable and the
// function that frees it (a closure, so that the ID stays alive until the
// engine frees it).
func wfpAppID() (appID *fwpByteBlob, free func(), err error) {
	exe, err := os.Executable()
	if err != nil {
		return nil, nil, fmt.Errorf("find Skiff's executable: %w", err)
	}
	p, err := windows.UTF16PtrFromString(exe)
	if err != nil {
		return nil, nil, err
	}
	if err := fwpmCall(procFwpmGetAppIdFromFileName0, uintptr(unsafe.Pointer(p)), uintptr(unsafe.Pointer(&appID))); err != nil {
		return nil, nil, fmt.Errorf("application id of %s: %w", exe, err)
	}
	return appID, func() { fwpmCall(procFwpmFreeMemory0, uintptr(unsafe.Pointer(&appID))) }, nil
}

// addWFPFilters adds one filter per rule to sublayer, named name. keys,
// when not nil, gives filter i the key keys[i] and makes every filter
// persistent (the kill switch's, which outlive Skiff); otherwise the
// engine picks the keys and the filters end with the session.
func addWFPFilters(engine windows.Handle, sublayer *fwpmSublayer0, name *uint16, rules []wfpRule, tunnelLUID uint64, appID *fwpByteBlob, keys []windows.GUID) error {
	var arena wfpArena
	for i, r := range rules {
		desc, err := windows.UTF16PtrFromString(r.String())
		if err != nil {
			return err
		}
		conds := wfpConditions(&arena, r, tunnelLUID, appID)
		f := fwpmFilter0{
			displayData: fwpmDisplayData0{name: name, description: desc},
			layerKey:    fwpmLayerALEAuthConnectV4,
			subLayerKey: sublayer.subLayerKey,
			weight:      fwpValue0{typ: fwpUint8, value: uintptr(r.Weight)},
			action:      fwpmAction0{typ: fwpActionBlock},
		}
		if keys != nil {
			f.filterKey = wfpGUID(keys[i])
			f.flags = fwpmFilterFlagPersistent
		}
		if r.V6 {
			f.layerKey = fwpmLayerALEAuthConnectV6
		}
		if r.Permit {
			f.action.typ = fwpActionPermit
		}
		if len(conds) > 0 {
			f.numFilterConditions = uint32(len(conds))
			f.filterCondition = &conds[0]
		}
		var id uint64
		if err := fwpmCall(procFwpmFilterAdd0, uintptr(engine), uintptr(unsafe.Pointer(&f)), 0, uintptr(unsafe.Pointer(&id))); err != nil {
			return fmt.Errorf("add filter %s: %w", r, err)
		}
		runtime.KeepAlive(conds)
	}
	runtime.KeepAlive(&arena)
	return nil
}

// wfpConditions translates r's conditions; values that do not fit the
// union of FWP_CONDITION_VALUE0 are pinned in arena.
func wfpConditions(arena *wfpArena, r wfpRule, tunnelLUID uint64, appID *fwpByteBlob) []fwpmFilterCondition0 {
	var c []fwpmFilterCondition0
	add := func(field wfpGUID, match uint32, typ uint32, value uintptr) {
		c = append(c, fwpmFilterCondition0{fieldKey: field, matchType: match, conditionValue: fwpValue0{typ: typ, value: value}})
	}
	if r.Loopback {
		add(fwpmConditionFlags, fwpMatchFlagsAllSet, fwpUint32, fwpConditionFlagIsLoopback)
	}
	if r.App {
		add(fwpmConditionALEAppID, fwpMatchEqual, fwpByteBlobType, uintptr(unsafe.Pointer(appID)))
	}
	if r.Tunnel {
		add(fwpmConditionIPLocalInterface, fwpMatchEqual, fwpUint64, pin(arena, tunnelLUID))
	}
	for _, p := range r.Protocols {
		add(fwpmConditionIPProtocol, fwpMatchEqual, fwpUint8, uintptr(p))
	}
	if r.RemotePort != 0 {
		add(fwpmConditionIPRemotePort, fwpMatchEqual, fwpUint16, uintptr(r.RemotePort))
	}
	for _, p := range r.Remote {
		typ, v := pinAddrMask(arena, p)
		add(fwpmConditionIPRemoteAddress, fwpMatchEqual, typ, v)
	}
	for _, p := range r.Local {
		typ, v := pinAddrMask(arena, p)
		add(fwpmConditionIPLocalAddress, fwpMatchEqual, typ, v)
	}
	return c
}

// pinAddrMask pins p as an FWP_V4_ADDR_AND_MASK or FWP_V6_ADDR_AND_MASK
// and returns its data type and address.
func pinAddrMask(arena *wfpArena, p netip.Prefix) (uint32, uintptr) {
	if p.Addr().Is4() {
		return fwpV4AddrMask, pin(arena, newFwpV4AddrAndMask(p))
	}
	return fwpV6AddrMask, pin(arena, newFwpV6AddrAndMask(p))
}

// Close closes the session, which deletes its sublayer and filters.
func (s *wfpSession) Close() error {
	if s.engine == 0 {
		return nil
	}
	err := fwpmCall(procFwpmEngineClose0, uintptr(s.engine))
	s.engine = 0
	if err != nil {
		return fmt.Errorf("tun: strict route: close the filtering engine: %w", err)
	}
	return nil
}
